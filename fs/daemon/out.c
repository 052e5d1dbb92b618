// SPDX-License-Identifier: MIT
/* out.c -- a growing reply buffer: what a ctl command answers */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon.h"

__attribute__((format(printf, 2, 3)))
void dg_outf(struct dg_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf ? o->buf + o->len : NULL,
			      o->buf ? o->cap - o->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (o->buf && o->len + (size_t)n < o->cap) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = o->cap ? o->cap * 2 : 4096;

		while (cap < o->len + (size_t)n + 1)
			cap *= 2;
		char *b = realloc(o->buf, cap);

		if (!b)
			return;
		o->buf = b;
		o->cap = cap;
	}
}
