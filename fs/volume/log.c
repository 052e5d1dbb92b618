// SPDX-License-Identifier: MIT
/* log.c -- where engine messages go: a volume's own sink when it has one
 * (dg_vol_set_log), else the process's (dg_log_set_func) */
#include <stdio.h>

#include "volume_i.h"

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

/* True if a message at level would be emitted. */
static bool dg_log_enabled(enum dg_log_level level)
{
	return level <= log_level;
}

static void vlog(dg_log_func func, enum dg_log_level level, const char *fmt,
		 va_list ap) __attribute__((format(printf, 3, 0)));

static void vlog(dg_log_func func, enum dg_log_level level, const char *fmt,
		 va_list ap)
{
	static const char *const names[] = {
		[DG_LOG_ERR] = "error",	    [DG_LOG_WARNING] = "warning",
		[DG_LOG_NOTICE] = "notice", [DG_LOG_INFO] = "info",
		[DG_LOG_DEBUG] = "debug",
	};

	if (func) {
		func(level, fmt, ap);
	} else {
		fprintf(stderr, "daxguard: %s: ", names[level]);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

void dg_log(enum dg_log_level level, const char *fmt, ...)
{
	va_list ap;

	/* Check the level before formatting anything (Redis serverLog). */
	if (!dg_log_enabled(level))
		return;
	va_start(ap, fmt);
	vlog(log_func, level, fmt, ap);
	va_end(ap);
}

void dg_vol_set_log(struct dg_vol *vol, dg_log_func func,
		    enum dg_log_level level)
{
	vol->log_func = func;
	vol->log_level = level;
	vol->log_own = true;
}

void dg_vol_log(const struct dg_vol *vol, enum dg_log_level level,
		const char *fmt, ...)
{
	bool own = vol && vol->log_own;
	va_list ap;

	if (own ? level > vol->log_level : !dg_log_enabled(level))
		return;
	va_start(ap, fmt);
	vlog(own ? vol->log_func : log_func, level, fmt, ap);
	va_end(ap);
}
