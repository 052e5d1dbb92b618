/* SPDX-License-Identifier: MIT */
/* util.h -- helpers shared by the command-line tools (never the engine) */
#ifndef DG_TOOLS_UTIL_H
#define DG_TOOLS_UTIL_H

#include <stdbool.h>
#include <stdint.h>

/* Parse "64M", "1G", "4096", "2T" into bytes; -1 on bad input. */
int parse_size(const char *s, uint64_t *out);
/* Split "a,b,c" into at most max paths (strdup'd); returns the count or
 * -1 when there are more. */
int split_devs(const char *list, char **out, int max);
/* "1.50 GiB" style. */
const char *human_bytes(uint64_t bytes, char *buf, unsigned len);

#endif /* DG_TOOLS_UTIL_H */
