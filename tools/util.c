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

#include "json.h"
#include "util.h"

static const char *tool_prog = "daxguard";
static const char *tool_usage = "";
static int tool_usage_exit = 1;
static void (*tool_cleanup_fn)(void);
static bool tool_json;

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

void tool_json_errors(void)
{
	tool_json = true;
}

bool tool_argv_has(int argc, char *const *argv, const char *longopt,
		   char short_opt)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			break;
		if (longopt && !strcmp(a, longopt))
			return true;
		if (short_opt && a[0] == '-' && a[1] != '-' &&
		    strchr(a + 1, short_opt))
			return true;
	}
	return false;
}

/* "prog: message" on stderr; with --json also the error object on
 * stdout, so that a script reading stdout learns why and how it ended. */
static void vmessage(int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void vmessage(int code, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "%s: %s\n", tool_prog, msg);
	if (tool_json) {
		struct json_object *o = json_object_new_object();

		json_add_bytes(o, "error", msg);
		json_add_int(o, "exit", code);
		printf("%s\n", json_object_to_json_string_ext(
					o, JSON_C_TO_STRING_PRETTY));
		json_object_put(o);
		fflush(stdout);
	}
}

void usage_bad_option(char *const *argv, int optind_now, int optopt_now)
{
	const char *arg = optind_now > 0 ? argv[optind_now - 1] : "?";

	/* A short option in a cluster ("-qz") is named by its letter. */
	if (optopt_now > 0 && optopt_now < 128 && arg[0] == '-' &&
	    arg[1] != '-' && strlen(arg) > 2)
		usage_error("bad option '-%c' (unknown, or its value is "
			    "missing)", optopt_now);
	usage_error("bad option '%s' (unknown, or its value is missing)",
		    arg);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(1, fmt, ap);
	va_end(ap);
	if (tool_cleanup_fn)
		tool_cleanup_fn();
	exit(1);
}

void tool_error(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(code, fmt, ap);
	va_end(ap);
}

void die_code(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(code, fmt, ap);
	va_end(ap);
	if (tool_cleanup_fn)
		tool_cleanup_fn();
	exit(code);
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(tool_usage_exit, fmt, ap);
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
