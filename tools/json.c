// SPDX-License-Identifier: MIT
/* json.c -- --json output through json-c, with bytes that are not UTF-8 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Length of the valid UTF-8 sequence at p, or 0 (RFC 3629 table 3-7). */
static size_t utf8_seq(const unsigned char *p)
{
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		return (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (p[0] >= 0xe0 && p[0] <= 0xef) {
		unsigned char lo = p[0] == 0xe0 ? 0xa0 : 0x80;
		unsigned char hi = p[0] == 0xed ? 0x9f : 0xbf;

		return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3
									  : 0;
	}
	if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		unsigned char lo = p[0] == 0xf0 ? 0x90 : 0x80;
		unsigned char hi = p[0] == 0xf4 ? 0x8f : 0xbf;

		return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 &&
				       (p[3] & 0xc0) == 0x80
			       ? 4
			       : 0;
	}
	return 0;
}

int json_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq(p);

		if (!n)
			return 0;
		p += n;
	}
	return 1;
}

static struct json_object *lossy_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	/* U+FFFD is 3 bytes for each bad one. */
	char *out = malloc(3 * strlen(s) + 1), *o = out;
	struct json_object *js;

	if (!out)
		return NULL;
	while (*p) {
		size_t n = utf8_seq(p);

		if (n) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		}
	}
	*o = 0;
	js = json_object_new_string(out);
	free(out);
	return js;
}

static struct json_object *hex_string(const char *s)
{
	static const char digits[] = "0123456789abcdef";
	size_t len = strlen(s);
	char *out = malloc(2 * len + 1);
	struct json_object *js;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[(unsigned char)s[i] >> 4];
		out[2 * i + 1] = digits[(unsigned char)s[i] & 15];
	}
	out[2 * len] = 0;
	js = json_object_new_string(out);
	free(out);
	return js;
}

void json_add_bytes(struct json_object *obj, const char *key, const char *s)
{
	char hkey[64];

	if (!s) {
		json_object_object_add(obj, key, NULL);
		return;
	}
	if (json_utf8_valid(s)) {
		json_object_object_add(obj, key, json_object_new_string(s));
		return;
	}
	json_object_object_add(obj, key, lossy_string(s));
	snprintf(hkey, sizeof(hkey), "%s_hex", key);
	json_object_object_add(obj, hkey, hex_string(s));
}

static int flags(int pretty)
{
	return (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
		       : JSON_C_TO_STRING_PLAIN) |
	       JSON_C_TO_STRING_NOSLASHESCAPE;
}

const char *json_line(struct json_object *obj)
{
	return json_object_to_json_string_ext(obj, flags(0));
}

int json_print(struct json_object *obj, FILE *f, int pretty)
{
	const char *s = json_object_to_json_string_ext(obj, flags(pretty));
	int ret = s && fprintf(f, "%s\n", s) >= 0 ? 0 : -EIO;

	json_object_put(obj);
	return ret;
}
