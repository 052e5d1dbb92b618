// SPDX-License-Identifier: MIT
/* test_rebuild.c -- a device rebuilt whole from parity: blank or
 * truncated images, every page and checksum back, too many lost refused,
 * a fault on top of the loss */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"

#define PG DG_PAGE_SIZE
#define SIZE (16ull << 20)

struct seen {
	unsigned rebuilt, missing, bad;
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
	if (ev->kind == DG_CHK_PAGE_BAD)
		s->bad++;
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
	struct seen s = { 0, 0, 0, -1 };
	char err[256] = "";

	tvol_make(&tv, "rebuildblank", 3, 1, SIZE, false);
	tvol_fill_spread(&tv, want, 40);
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
	struct seen s = { 0, 0, 0, -1 };
	char err[256] = "";

	tvol_make(&tv, "rebuildtwo", 4, 2, SIZE, false);
	tvol_fill_spread(&tv, want, 40);
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
	struct seen s = { 0, 0, 0, -1 };
	char err[256] = "";

	tvol_make(&tv, "rebuildmany", 3, 1, SIZE, false);
	tvol_fill_spread(&tv, want, 4);
	REQUIRE(truncate(tv.paths[0], 0) == 0 && truncate(tv.paths[0], SIZE) == 0);
	REQUIRE(truncate(tv.paths[2], 0) == 0 && truncate(tv.paths[2], SIZE) == 0);
	CHECK(dg_vol_rebuild((const char *const *)tv.paths, 3, on_event, &s,
			     NULL, NULL, err, sizeof(err)) < 0);
	CHECK(err[0] != 0);
	CHECK_EQ(s.rebuilt, 0);
	tvol_cleanup(&tv);
}

/*
 * A device lost and, in a row it held a page of, a page of another
 * device flipped: a fault on top of the loss (rebuild.c, rebuild_row()).
 * Every data page of one row written (want[i]: the page of its i-th data
 * device in device order), the first data device blanked, a byte of the
 * second one's page flipped. Under parity 2 both are rebuilt, the flipped page written
 * back; under parity 1 the row has two unknowns: the lost page is named
 * and left, and both read EIO -- never other bytes.
 */
static void fault_on_top(unsigned ndev, unsigned parity)
{
	static uint8_t want[DG_MAX_DEVS][PG];
	uint8_t got[PG];
	struct tvol tv;
	struct seen s = { 0, 0, 0, -1 };
	struct dg_vol *vol;
	char err[256] = "";
	uint64_t row, vpn[DG_MAX_DEVS], seed = 77, off, word;
	unsigned k = 0, dev[DG_MAX_DEVS], lost, flipped;

	tvol_make(&tv, "rebuildtop", ndev, parity, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row = tdata_row(vol);
	for (unsigned d = 0; d < ndev; d++) {
		if (dg_vol_row_is_parity(vol, row, d))
			continue;
		dev[k] = d;
		vpn[k] = dg_loc_vpn(vol, d, row);
		trand_fill(&seed, want[k], PG);
		REQUIRE(dg_apply(vol, &(struct dg_range){ vpn[k], 0, PG,
							  want[k] },
				 1) == 0);
		k++;
	}
	REQUIRE(k == ndev - parity);
	lost = dev[0];
	flipped = dev[1];
	off = (dg_row_page(vol, row) << DG_PAGE_SHIFT) + 808;
	REQUIRE(dg_vol_close(vol) == 0);
	REQUIRE(truncate(tv.paths[lost], 0) == 0 &&
		truncate(tv.paths[lost], SIZE) == 0);
	tvol_peek(&tv, flipped, off, &word, 8);
	word ^= 1ull << 17;
	tvol_poke(&tv, flipped, off, &word, 8);
	/* -EIO: pages lost, each named by an event (fsck's pass says so). */
	CHECK_EQ(dg_vol_rebuild((const char *const *)tv.paths, ndev, on_event,
				&s, NULL, NULL, err, sizeof(err)),
		 parity == 1 ? -EIO : 0);
	CHECK_EQ(s.rebuilt, 1);
	CHECK_EQ(s.bad, parity == 1 ? 1 : 0);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	for (unsigned i = 0; i < k; i++) {
		int ret = dg_read(vol, vpn[i], 1, got);

		if (parity > 1 || i > 1) {
			CHECK_EQ(ret, 0);
			CHECK(memcmp(got, want[i], PG) == 0);
		} else {
			CHECK_EQ(ret, -EIO);
		}
	}
	if (parity > 1)
		SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_fault_on_top_p2(void)
{
	fault_on_top(4, 2);
}

static void test_fault_on_top_p1(void)
{
	fault_on_top(4, 1);
}

/*
 * A device rebuilt whole is persisted a round a batch of pages, not a
 * persist a page (rebuild.c, RB_BATCH): its persists (fences) grow with
 * pages / batch, ditto copies on it included (rb_dittos()). Thousands
 * of pages of one device rebuilt; the persists on it, all told
 * (checksum page copies, init map, journal, the rounds), stay under one
 * for 32 pages: 32 for 4391 pages stored, where a persist a page made
 * 3366 (and the ditto copies one each, 297 with the rounds).
 */
static void test_fences_per_batch(void)
{
	enum { NP = 8960, RUN = 64 };
	struct tvol tv;
	struct seen s = { 0, 0, 0, -1 };
	struct dg_media_counts c;
	struct dg_vol *vol;
	uint8_t *buf = malloc((size_t)RUN * PG), got[PG];
	uint64_t seed = 77, pages;
	char err[256] = "";

	REQUIRE(buf);
	tvol_make(&tv, "rebuildfences", 4, 1, 64ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	for (unsigned i = 0; i < NP; i += RUN) {
		struct dg_range r[RUN];

		trand_fill(&seed, buf, (size_t)RUN * PG);
		for (unsigned j = 0; j < RUN; j++)
			r[j] = (struct dg_range){ 500 + i + j, 0, PG,
						  buf + (size_t)j * PG };
		REQUIRE(dg_apply(vol, r, RUN) == 0);
	}
	dg_vol_close(vol);
	REQUIRE(truncate(tv.paths[2], 0) == 0 &&
		truncate(tv.paths[2], 64ull << 20) == 0);
	REQUIRE(dg_vol_rebuild_observed((const char *const *)tv.paths, 4,
					NULL, &c, on_event, &s, NULL, NULL,
					err, sizeof(err)) == 0);
	CHECK_EQ(s.rebuilt, 1);
	/* About a quarter of the pages written: data or parity of device 2
	 * in every row. */
	pages = c.bytes_stored / PG;
	printf("# rebuild of one device: %llu pages stored, %llu persists\n",
	       (unsigned long long)pages, (unsigned long long)c.fences);
	CHECK(pages >= NP / 4);
	CHECK(c.fences * 32 < pages);	/* a persist a page: 3366 */
	/* The last page of the run reads back whole. */
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_read(vol, 500 + NP - 1, 1, got) == 0);
	CHECK(memcmp(got, buf + (size_t)(RUN - 1) * PG, PG) == 0);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(buf);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "blank_device", test_blank_device },
		{ "two_devices", test_two_devices },
		{ "too_many", test_too_many },
		{ "fault_on_top_p2", test_fault_on_top_p2 },
		{ "fault_on_top_p1", test_fault_on_top_p1 },
		{ "fences_per_batch", test_fences_per_batch },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
