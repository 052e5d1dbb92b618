// SPDX-License-Identifier: MIT
/* fuzz_ctl.c -- fuzz the control socket's protocol (fs/daemon/ctl_proto.h):
 * request lines, escaped names, the events reply's last line */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_proto.h"

/*
 * LLVMFuzzerTestOneInput() gives one input to every function of
 * ctl_proto.h and checks what each promises: a request's end is within
 * what was received and at its first newline, a parsed request points
 * into its line, an escaped name holds no control byte, fits its buffer
 * and unescapes to the name, and a reply's "next N" line is its last.
 * Built plainly (meson test) a main() runs it on seeds and seeded
 * random mutations of them; with clang -fsanitize=fuzzer,address,
 * undefined -DDG_LIBFUZZER it is a libFuzzer target (scripts/fuzz.sh).
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_end(const char *b, size_t n)
{
	for (int eof = 0; eof < 2; eof++) {
		long e = ctl_request_end(b, n, eof);
		const char *nl = memchr(b, '\n', n);

		if (e > (long)n || e < -1 || (e > 0 && memchr(b, '\n', (size_t)e)))
			abort();
		if (nl && nl > b && nl - b < CTL_REQ_MAX && e != nl - b)
			abort();
		if (nl == b && e != -1)
			abort();
		if (!nl && !eof && n < CTL_REQ_MAX && e != 0)
			abort();
		if (e >= CTL_REQ_MAX)
			abort();
	}
}

static void check_parse(const char *line, size_t n)
{
	struct ctl_request r;

	ctl_request_parse(line, &r);
	if (r.args && (r.args < line || r.args > line + n))
		abort();
	if (ctl_request_privileged(&r) && r.cmd != CTL_SCRUB &&
	    r.cmd != CTL_REPLACE && r.cmd != CTL_CLEAR)
		abort();
	if (r.cmd == CTL_STATUS && strncmp(line, "status", 6))
		abort();
}

/* The inverse of ctl_escape(), for the round trip. */
static size_t unescape(const char *s, char *out)
{
	size_t o = 0;

	while (*s) {
		if (*s != '\\') {
			out[o++] = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case '\\': out[o++] = '\\'; s++; break;
		case 'a': out[o++] = '\a'; s++; break;
		case 'b': out[o++] = '\b'; s++; break;
		case 't': out[o++] = '\t'; s++; break;
		case 'n': out[o++] = '\n'; s++; break;
		case 'v': out[o++] = '\v'; s++; break;
		case 'f': out[o++] = '\f'; s++; break;
		case 'r': out[o++] = '\r'; s++; break;
		default:
			if (s[0] < '0' || s[0] > '3' || s[1] < '0' ||
			    s[1] > '7' || s[2] < '0' || s[2] > '7')
				abort(); /* not an escape ctl_escape makes */
			out[o++] = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 +
					  (s[2] - '0'));
			s += 3;
		}
	}
	out[o] = 0;
	return o;
}

static void check_escape(const char *name, size_t n)
{
	size_t cap = 4 * n + 1, caps[3] = { cap, 1, 1 + n / 3 };
	char *out = malloc(cap), *back = malloc(cap);

	if (!out || !back)
		abort();
	for (unsigned k = 0; k < 3; k++) {
		ctl_escape(out, caps[k], name);
		if (strlen(out) >= caps[k])
			abort();
		for (const unsigned char *p = (const unsigned char *)out; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				abort(); /* no line can end inside a name */
		/* C1 controls never get through (CSI is U+009B). */
		for (const unsigned char *p = (const unsigned char *)out; *p; p++)
			if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
				abort();
		if (k == 0 && (unescape(out, back) != strlen(name) ||
			       strcmp(back, name)))
			abort(); /* with room enough, nothing is lost */
	}
	free(out);
	free(back);
}

static void check_trailer(const char *b, size_t n)
{
	uint64_t next;
	size_t body;
	bool more;

	if (ctl_events_trailer(b, n, &next, &more, &body))
		return;
	if (body >= n || (body && b[body - 1] != '\n') ||
	    memcmp(b + body, "next ", 5) || memchr(b + body, '\n', n - body - 1))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy ending where the input does (ASan sees any over-read),
	 * and a NUL-terminated one for the string functions. */
	char *raw = malloc(size ? size : 1), *str = malloc(size + 1);

	if (!raw || !str)
		abort();
	memcpy(raw, data, size);
	memcpy(str, data, size);
	str[size] = 0;
	check_end(raw, size);
	check_parse(str, strlen(str));
	check_escape(str, strlen(str));
	check_trailer(raw, size);
	free(raw);
	free(str);
	return 0;
}

#ifndef DG_LIBFUZZER
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	static const char *const seeds[] = {
		"status json verbose\n",
		"events since=12 json\n",
		"scrub start rate=1000000 json\n",
		"replace start text 2 0 /tmp/new img\n",
		"clear\n",
		"x\n\t\\\x01\xc2\x9b\xe2\x80\xae\xe2\x82\xac\xff\xf0\x9f\x98\x80",
		"2026-01-01 00:00:00.000 #1 counters-cleared\nnext 1\n",
		"next 18446744073709551615 more\n",
	};
	unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 0) : 300000;
	const unsigned ns = sizeof(seeds) / sizeof(seeds[0]);
	char buf[512];
	char big[CTL_REQ_MAX + 16];

	for (unsigned s = 0; s < ns; s++)
		LLVMFuzzerTestOneInput((const uint8_t *)seeds[s],
				       strlen(seeds[s]));
	/* A request line at the limit, and one past it. */
	memset(big, 'a', sizeof(big));
	LLVMFuzzerTestOneInput((const uint8_t *)big, sizeof(big));
	big[CTL_REQ_MAX - 1] = '\n';
	LLVMFuzzerTestOneInput((const uint8_t *)big, sizeof(big));
	for (unsigned long i = 0; i < iters; i++) {
		const char *s = seeds[next() % ns];
		size_t n = strlen(s);
		unsigned flips = 1 + (unsigned)(next() % 6);

		memcpy(buf, s, n);
		for (unsigned f = 0; f < flips && n; f++) {
			size_t at = next() % n;

			switch (next() % 4) {
			case 0: buf[at] ^= (char)(1u << (next() % 8)); break;
			case 1: buf[at] = (char)next(); break;
			case 2:
				if (n < sizeof(buf) - 1)
					buf[n++] = (char)next();
				break;
			default: n = at; break; /* truncate */
			}
		}
		if (next() % 16 == 0) { /* pure noise */
			n = next() % sizeof(buf);
			for (size_t k = 0; k < n; k++)
				buf[k] = (char)next();
		}
		LLVMFuzzerTestOneInput((const uint8_t *)buf, n);
	}
	printf("fuzz_ctl: %lu inputs, no violation\n", iters);
	return 0;
}
#endif
