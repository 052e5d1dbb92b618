/* SPDX-License-Identifier: MIT */
/* util.h -- helpers shared by the command-line tools (never the engine) */
#ifndef DG_TOOLS_UTIL_H
#define DG_TOOLS_UTIL_H

#include <stdbool.h>
#include <stdint.h>

/* Name messages with prog ("prog: ..."); usage_error() prints usage
 * after its message and exits with usage_exit. Call first in main(). */
void tool_init(const char *prog, const char *usage, int usage_exit);
/* From now on die() and usage_error() also print {"error": message,
 * "exit": code} on stdout, for tools given --json. */
void tool_json_errors(void);
/* True if argv (before a "--") holds longopt ("--json") or the short
 * option letter short_opt alone or in a cluster ("-vj"); 0 for none.
 * Lets a tool honour --json for errors found before getopt reaches it. */
bool tool_argv_has(int argc, char *const *argv, const char *longopt,
		   char short_opt);
/* For getopt's '?' (opterr = 0 first): "prog: bad option ..." naming the
 * argument, then as usage_error(). */
void usage_bad_option(char *const *argv, int optind_now, int optopt_now)
	__attribute__((noreturn));
/* fn runs before die() and usage_error() exit, and on SIGINT, SIGTERM
 * and SIGHUP (then the tool exits 128 + signal): to remove scratch
 * files. It must be async-signal-safe (unlink, nothing more). */
void tool_cleanup(void (*fn)(void));
/* "prog: message" on stderr, exit 1 (see tool_json_errors()). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* "prog: message" (and the --json error object naming code, the exit
 * status the caller is about to return), without exiting. */
void tool_error(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* As die(), with exit status code. */
void die_code(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
/* "prog: message" and the usage text on stderr, exit usage_exit. */
void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* Parse "64M", "1G", "4096", "2T" into bytes; -1 on bad input. */
int parse_size(const char *s, uint64_t *out);
/* "1.50 GiB" style. */
const char *human_bytes(uint64_t bytes, char *buf, unsigned len);

#endif /* DG_TOOLS_UTIL_H */
