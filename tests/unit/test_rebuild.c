// SPDX-License-Identifier: MIT
/* test_rebuild.c -- a device rebuilt whole from parity: blank or
 * truncated images, every page and checksum back, too many lost refused */
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"

#define PG DG_PAGE_SIZE
#define SIZE (16ull << 20)

struct seen {
	unsigned rebuilt, missing;
	int dev;
};

static void on_event(void *arg, const struct dg_chk_event *ev)
{
	struct seen *s = arg;

	if (ev->kind == DG_CHK_DEV_REBUILT) {
		s->rebuilt++;
		s->dev = ev->dev;
	}
	if (ev->kind == DG_CHK_DEV_MISSING)
		s->missing++;
}

static void fill(struct tvol *tv, uint8_t want[][PG], unsigned n)
{
	struct dg_vol *vol = tvol_open(tv, 0);
	uint64_t seed = 31;

	REQUIRE(vol);
	for (unsigned i = 0; i < n; i++) {
		struct dg_range r = { 500 + 7 * i, 0, PG, want[i] };

		trand_fill(&seed, want[i], PG);
		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	dg_vol_close(vol);
}

static void check_all(struct tvol *tv, uint8_t want[][PG], unsigned n)
{
	struct dg_vol *vol = tvol_open(tv, 0); /* not degraded: whole */
	uint8_t got[PG];

	REQUIRE(vol);
	for (unsigned i = 0; i < n; i++) {
		REQUIRE(dg_read(vol, 500 + 7 * i, 1, got) == 0);
		CHECK(memcmp(got, want[i], PG) == 0);
	}
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
}

static void test_blank_device(void)
{
	static uint8_t want[40][PG];
	struct tvol tv;
	struct seen s = { 0, 0, -1 };
	char err[256] = "";

	tvol_make(&tv, "rebuildblank", 3, 1, SIZE, false);
	fill(&tv, want, 40);
	REQUIRE(truncate(tv.paths[1], 0) == 0 && truncate(tv.paths[1], SIZE) == 0);
	CHECK(tvol_open(&tv, 0) == NULL); /* missing: not without a rebuild */
	REQUIRE(dg_vol_rebuild((const char *const *)tv.paths, 3, on_event, &s,
			       NULL, NULL, err, sizeof(err)) == 0);
	CHECK_EQ(s.rebuilt, 1);
	CHECK_EQ(s.dev, 1);
	check_all(&tv, want, 40);
	tvol_cleanup(&tv);
}

/* With parity 2, two devices at once: one blank, one cut short. */
static void test_two_devices(void)
{
	static uint8_t want[40][PG];
	struct tvol tv;
	struct seen s = { 0, 0, -1 };
	char err[256] = "";

	tvol_make(&tv, "rebuildtwo", 4, 2, SIZE, false);
	fill(&tv, want, 40);
	REQUIRE(truncate(tv.paths[0], 0) == 0 && truncate(tv.paths[0], SIZE) == 0);
	REQUIRE(truncate(tv.paths[3], SIZE / 2) == 0); /* cut short */
	REQUIRE(dg_vol_rebuild((const char *const *)tv.paths, 4, on_event, &s,
			       NULL, NULL, err, sizeof(err)) == 0);
	CHECK_EQ(s.rebuilt, 2);
	check_all(&tv, want, 40);
	tvol_cleanup(&tv);
}

/* More lost than parity covers: refused with a reason, nothing written. */
static void test_too_many(void)
{
	static uint8_t want[4][PG];
	struct tvol tv;
	struct seen s = { 0, 0, -1 };
	char err[256] = "";

	tvol_make(&tv, "rebuildmany", 3, 1, SIZE, false);
	fill(&tv, want, 4);
	REQUIRE(truncate(tv.paths[0], 0) == 0 && truncate(tv.paths[0], SIZE) == 0);
	REQUIRE(truncate(tv.paths[2], 0) == 0 && truncate(tv.paths[2], SIZE) == 0);
	CHECK(dg_vol_rebuild((const char *const *)tv.paths, 3, on_event, &s,
			     NULL, NULL, err, sizeof(err)) < 0);
	CHECK(err[0] != 0);
	CHECK_EQ(s.rebuilt, 0);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "blank_device", test_blank_device },
		{ "two_devices", test_two_devices },
		{ "too_many", test_too_many },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
