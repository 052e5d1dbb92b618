/* SPDX-License-Identifier: MIT */
/* json.h -- --json output through json-c, with bytes that are not UTF-8 */
#ifndef DG_TOOLS_JSON_H
#define DG_TOOLS_JSON_H

#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

/*
 * Add key: s to obj as a JSON string, or null when s is NULL.
 *
 * JSON text is UTF-8, but file names, labels and paths are bytes. A
 * string that is valid UTF-8 is written as it is (json-c escapes '"',
 * '\\' and control characters). Otherwise each byte that is not part of
 * a valid UTF-8 sequence becomes U+FFFD, so the value stays readable,
 * and a second key, key + "_hex", holds every byte of s in lowercase
 * hex, so the exact name can be recovered. Readers that need exact
 * bytes use key_hex when it is there and key otherwise. (Writing a bad
 * byte as \u00XX instead would be valid JSON but ambiguous: it reads
 * back as the character U+00XX, which a valid name may hold itself.)
 */
void json_add_bytes(struct json_object *obj, const char *key, const char *s);
/* True if s is valid UTF-8 (no overlong forms, surrogates or > U+10FFFF). */
int json_utf8_valid(const char *s);

/* Shorthands for the common json_object_object_add() calls. */
static inline void json_add_u64(struct json_object *o, const char *key,
				uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static inline void json_add_int(struct json_object *o, const char *key, int v)
{
	json_object_object_add(o, key, json_object_new_int(v));
}

static inline void json_add_bool(struct json_object *o, const char *key,
				 int v)
{
	json_object_object_add(o, key, json_object_new_boolean(v));
}

/* s must be ASCII or valid UTF-8 (names the program chose itself). */
static inline void json_add_str(struct json_object *o, const char *key,
				const char *s)
{
	json_object_object_add(o, key, json_object_new_string(s));
}

/* Write obj and a newline to f and drop the reference. pretty: indented
 * (tools); otherwise one line (the control socket). Returns 0 or -EIO. */
int json_print(struct json_object *obj, FILE *f, int pretty);
/* One-line text of obj, owned by obj (valid until it is put). */
const char *json_line(struct json_object *obj);

#endif /* DG_TOOLS_JSON_H */
