// SPDX-License-Identifier: MIT
/* test_log.c -- each volume's messages go to its own sink, at its own
 * level; a volume without one, and code outside any, use the process's */
#include <stdarg.h>

#include "harness.h"

struct sink {
	unsigned n;
	char last[256];
};
static struct sink sinks[3];	/* a log func has no argument: one each */

static void put(struct sink *s, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void put(struct sink *s, const char *fmt, va_list ap)
{
	s->n++;
	vsnprintf(s->last, sizeof(s->last), fmt, ap);
}

static void sink_a(enum dg_log_level l, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void sink_a(enum dg_log_level l, const char *fmt, va_list ap)
{
	(void)l;
	put(&sinks[0], fmt, ap);
}

static void sink_b(enum dg_log_level l, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void sink_b(enum dg_log_level l, const char *fmt, va_list ap)
{
	(void)l;
	put(&sinks[1], fmt, ap);
}

static void sink_process(enum dg_log_level l, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void sink_process(enum dg_log_level l, const char *fmt, va_list ap)
{
	(void)l;
	put(&sinks[2], fmt, ap);
}

static void each_volume_its_own_sink(void)
{
	struct tvol ta, tb, tc;
	struct dg_vol *a, *b, *c;

	tvol_make(&ta, "log-a", 3, 1, 16ull << 20, false);
	tvol_make(&tb, "log-b", 3, 1, 16ull << 20, false);
	tvol_make(&tc, "log-c", 3, 1, 16ull << 20, false);
	a = tvol_open(&ta, 0);
	b = tvol_open(&tb, 0);
	c = tvol_open(&tc, 0);
	REQUIRE(a && b && c);
	memset(sinks, 0, sizeof(sinks));
	dg_log_set_func(sink_process);
	dg_vol_set_log(a, sink_a, DG_LOG_DEBUG);
	dg_vol_set_log(b, sink_b, DG_LOG_ERR);

	dg_vpn_fault(a, 5, DG_FAULT_DETECTED, DG_WHAT_DATA, "test");
	CHECK_EQ(sinks[0].n, 1);
	CHECK(strstr(sinks[0].last, "action=test") != NULL);
	CHECK_EQ(sinks[1].n + sinks[2].n, 0);
	/* b takes errors only: a warning is dropped, an error is not */
	dg_vpn_fault(b, 5, DG_FAULT_DETECTED, DG_WHAT_DATA, "test");
	CHECK_EQ(sinks[1].n, 0);
	dg_vpn_fault(b, 5, DG_FAULT_UNRECOVERABLE, DG_WHAT_DATA, "test");
	CHECK_EQ(sinks[1].n, 1);
	/* c has none of its own; nor has code outside any volume */
	dg_vpn_fault(c, 5, DG_FAULT_UNRECOVERABLE, DG_WHAT_DATA, "test");
	dg_log(DG_LOG_ERR, "outside");
	CHECK_EQ(sinks[2].n, 2);
	CHECK_EQ(sinks[0].n, 1);
	CHECK(!strcmp(sinks[2].last, "outside"));

	dg_log_set_func(NULL);
	dg_vol_close(a);
	dg_vol_close(b);
	dg_vol_close(c);
	tvol_cleanup(&ta);
	tvol_cleanup(&tb);
	tvol_cleanup(&tc);
}

static const struct test_case cases[] = {
	{ "each_volume_its_own_sink", each_volume_its_own_sink },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return test_main(argc, argv, cases);
}
