// SPDX-License-Identifier: MIT
/* log.c -- dg_log(): one place where every engine message goes */
#include <stdio.h>

#include "volume.h"

static dg_log_func log_func;
static enum dg_log_level log_level = DG_LOG_NOTICE;

void dg_log_set_func(dg_log_func func)
{
	log_func = func;
}

void dg_log_set_level(enum dg_log_level level)
{
	log_level = level;
}

bool dg_log_enabled(enum dg_log_level level)
{
	return level <= log_level;
}

void dg_log(enum dg_log_level level, const char *fmt, ...)
{
	static const char *const names[] = {
		[DG_LOG_ERR] = "error",	    [DG_LOG_WARNING] = "warning",
		[DG_LOG_NOTICE] = "notice", [DG_LOG_INFO] = "info",
		[DG_LOG_DEBUG] = "debug",
	};
	va_list ap;

	/* Check the level before formatting anything (Redis serverLog). */
	if (!dg_log_enabled(level))
		return;
	va_start(ap, fmt);
	if (log_func) {
		log_func(level, fmt, ap);
	} else {
		fprintf(stderr, "daxguard: %s: ", names[level]);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}
