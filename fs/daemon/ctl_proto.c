// SPDX-License-Identifier: MIT
/* ctl_proto.c -- the control socket's protocol: request lines, escaped
 * names, the events reply's last line (fuzzed: tests/fuzz/fuzz_ctl.c) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_proto.h"

long ctl_request_end(const char *buf, size_t n, bool eof)
{
	const char *nl = memchr(buf, '\n', n);

	if (nl)	/* an empty line asks nothing: close */
		return nl > buf && nl - buf < CTL_REQ_MAX ? (long)(nl - buf)
							  : -1;
	if (n >= CTL_REQ_MAX)
		return -1;
	if (eof)
		return n ? (long)n : -1; /* nothing asked: close */
	return 0;
}

static bool starts(const char *s, const char *word)
{
	return !strncmp(s, word, strlen(word));
}

void ctl_request_parse(const char *line, struct ctl_request *r)
{
	const char *p;

	memset(r, 0, sizeof(*r));
	r->json = strstr(line, " json") != NULL;
	if (starts(line, "status")) {
		r->cmd = CTL_STATUS;
		r->verbose = strstr(line, " verbose") != NULL;
	} else if (starts(line, "events")) {
		r->cmd = CTL_EVENTS;
		p = strstr(line, " since=");
		r->since = p ? strtoull(p + 7, NULL, 10) : 0;
	} else if (starts(line, "scrub status")) {
		r->cmd = CTL_SCRUB_STATUS;
		r->args = line + 6;
	} else if (starts(line, "replace status")) {
		r->cmd = CTL_REPLACE_STATUS;
		r->args = line + 8;
	} else if (starts(line, "replace ")) {
		/* "replace start json|text DEV RATE PATH" */
		r->cmd = CTL_REPLACE;
		r->args = line + 8;
	} else if (starts(line, "scrub ")) {
		r->cmd = CTL_SCRUB;
		r->args = line + 6;
	} else if (starts(line, "clear")) {
		r->cmd = CTL_CLEAR;
	} else if (starts(line, "sync")) {
		r->cmd = CTL_SYNC;
	}
}

bool ctl_request_privileged(const struct ctl_request *r)
{
	return r->cmd == CTL_SCRUB || r->cmd == CTL_REPLACE ||
	       r->cmd == CTL_CLEAR;
}

/* The length of the valid UTF-8 sequence at s (1..4), its code point in
 * *cp; 0 when it is not one (overlong, surrogate, past U+10FFFF, cut). */
static unsigned utf8_seq(const unsigned char *s, uint32_t *cp)
{
	unsigned n, i;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0; /* also stops at the NUL */
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* Printable, and does not move the text around: C1 controls, the line
 * and paragraph separators and the bidirectional controls are not. */
static bool cp_shown(uint32_t c)
{
	return !(c < 0xa0 || c == 0x2028 || c == 0x2029 || c == 0x061c ||
		 (c >= 0x200e && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
		 (c >= 0x2066 && c <= 0x2069) || c == 0xfeff);
}

char *ctl_escape(char *dst, size_t cap, const char *s)
{
	static const char named[] = "\a\b\t\n\v\f\r";
	static const char letter[] = "abtnvfr";
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	while (*p) {
		char e[4 * 4 + 1];
		unsigned n = 1, k = 0;
		uint32_t cp = 0;
		const char *at;

		if (*p == '\\') {
			k = (unsigned)snprintf(e, sizeof(e), "\\\\");
		} else if (*p < 0x20 || *p == 0x7f) {
			at = *p ? strchr(named, *p) : NULL;
			if (at)
				k = (unsigned)snprintf(e, sizeof(e), "\\%c",
						       letter[at - named]);
			else
				k = (unsigned)snprintf(e, sizeof(e), "\\%03o",
						       *p);
		} else if (*p < 0x80) {
			e[0] = (char)*p, k = 1;
		} else if ((n = utf8_seq(p, &cp)) && cp_shown(cp)) {
			memcpy(e, p, n), k = n;
		} else {
			/* Each byte as \ooo: not UTF-8, or a code point
			 * that must not reach a terminal as it is. */
			n = n ? n : 1;
			for (unsigned i = 0; i < n; i++)
				k += (unsigned)snprintf(e + k, sizeof(e) - k,
							"\\%03o", p[i]);
		}
		if (o + k + 1 > cap)
			break;
		memcpy(dst + o, e, k);
		o += k;
		p += n;
	}
	dst[o] = 0;
	return dst;
}

int ctl_events_trailer(const char *reply, size_t len, uint64_t *next,
		       bool *more, size_t *body)
{
	size_t start;
	const char *p, *end;
	char *stop;
	unsigned long long v;

	if (len < 2 || reply[len - 1] != '\n')
		return -1;
	start = len - 1;
	while (start > 0 && reply[start - 1] != '\n')
		start--;
	p = reply + start;
	end = reply + len - 1;
	if ((size_t)(end - p) < 6 || memcmp(p, "next ", 5) || p[5] < '0' ||
	    p[5] > '9')
		return -1;
	v = strtoull(p + 5, &stop, 10);
	if (stop == end) {
		*more = false;
	} else if ((size_t)(end - stop) == 5 && !memcmp(stop, " more", 5)) {
		*more = true;
	} else {
		return -1;
	}
	*next = v;
	*body = start;
	return 0;
}
