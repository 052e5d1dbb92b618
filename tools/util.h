/* SPDX-License-Identifier: MIT */
/* util.h -- helpers shared by the command-line tools (never the engine) */
#ifndef DG_TOOLS_UTIL_H
#define DG_TOOLS_UTIL_H

#include <stdbool.h>
#include <stdint.h>

/* Name messages with prog ("prog: ..."); usage_error() prints usage
 * after its message and exits with usage_exit. Call first in main(). */
void tool_init(const char *prog, const char *usage, int usage_exit);
/* fn runs before die() and usage_error() exit, and on SIGINT, SIGTERM
 * and SIGHUP (then the tool exits 128 + signal): to remove scratch
 * files. It must be async-signal-safe (unlink, nothing more). */
void tool_cleanup(void (*fn)(void));
/* "prog: message" on stderr, exit 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* "prog: message" and the usage text on stderr, exit usage_exit. */
void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* Parse "64M", "1G", "4096", "2T" into bytes; -1 on bad input. */
int parse_size(const char *s, uint64_t *out);
/* "1.50 GiB" style. */
const char *human_bytes(uint64_t bytes, char *buf, unsigned len);

#endif /* DG_TOOLS_UTIL_H */
