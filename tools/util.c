// SPDX-License-Identifier: MIT
/* util.c -- helpers shared by the command-line tools */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static const char *tool_prog = "daxguard";
static const char *tool_usage = "";
static int tool_usage_exit = 1;
static void (*tool_cleanup_fn)(void);

void tool_init(const char *prog, const char *usage, int usage_exit)
{
	tool_prog = prog;
	tool_usage = usage;
	tool_usage_exit = usage_exit;
}

static void on_fatal_signal(int sig)
{
	tool_cleanup_fn();
	_exit(128 + sig);
}

void tool_cleanup(void (*fn)(void))
{
	tool_cleanup_fn = fn;
	signal(SIGINT, on_fatal_signal);
	signal(SIGTERM, on_fatal_signal);
	signal(SIGHUP, on_fatal_signal);
}

static void vmessage(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));

static void vmessage(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", tool_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap);
	va_end(ap);
	if (tool_cleanup_fn)
		tool_cleanup_fn();
	exit(1);
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap);
	va_end(ap);
	fputs(tool_usage, stderr);
	if (tool_cleanup_fn)
		tool_cleanup_fn();
	exit(tool_usage_exit);
}

int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'T': shift = 40; break;
	case '\0': break;
	default: return -1;
	}
	if (*end) {
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return -1;
	}
	if (shift && v > (~0ull >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

const char *human_bytes(uint64_t bytes, char *buf, unsigned len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB",
					     "TiB", "PiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", v, units[u]);
	return buf;
}
