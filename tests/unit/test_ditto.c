// SPDX-License-Identifier: MIT
/* test_ditto.c -- ditto copies of the volume root and allocation bitmap */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "volume_i.h"
#include "csum.h"

#define PG DG_PAGE_SIZE

/* Where (dev, page) the row of vpn's page and its parity live. */
static uint64_t row_page(struct dg_vol *vol, uint64_t vpn)
{
	return dg_row_page(vol, dg_vpn_loc(vol, vpn).row);
}

/* Garbage over the page of vpn and over the parity of its row: two
 * faults in one row, beyond single parity. */
static void kill_row_of(struct tvol *tv, struct dg_vol *vol, uint64_t vpn,
			uint64_t *seed)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);
	uint8_t junk[PG];
	uint64_t off = row_page(vol, vpn) * PG;

	trand_fill(seed, junk, PG);
	tvol_poke(tv, l.dev, off, junk, PG);
	trand_fill(seed, junk, PG);
	tvol_poke(tv, dg_row_parity_dev(vol, l.row, 0), off, junk, PG);
}

/* Two faults in the root's row used to lose the volume (issue 15): the
 * ditto copy, proven by the root's own checksum, brings it back. */
static void test_root_double_fault(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 5, base[DG_FAULT_NR], after[DG_FAULT_NR];
	uint8_t *want = aligned_alloc(PG, 2 * PG), *got = want + PG;
	struct dg_scrub_report sr;

	REQUIRE(want);
	tvol_make(&tv, "dittoroot", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(dg_ditto_has(vol, 0));
	CHECK(dg_ditto_has(vol, 1));
	REQUIRE(dg_read(vol, 0, 1, want) == 0);
	kill_row_of(&tv, vol, 0, &seed);
	dg_vol_close(vol);

	vol = tvol_open(&tv, 0); /* loads the root: must not fail */
	REQUIRE(vol);
	dg_vol_fault_counts(vol, base);
	REQUIRE(dg_read(vol, 0, 1, got) == 0);
	CHECK(memcmp(want, got, PG) == 0);
	/* The open already put the root back in place; the parity of the
	 * row is the scrub's to recompute from verified data. */
	REQUIRE(dg_vol_scrub(vol, true, &sr, NULL, NULL) == 0);
	dg_vol_fault_counts(vol, after);
	CHECK_EQ(after[DG_FAULT_UNRECOVERABLE] - base[DG_FAULT_UNRECOVERABLE],
		 0);
	REQUIRE(dg_vol_scrub(vol, false, &sr, NULL, NULL) == 0);
	CHECK_EQ(sr.detected, 0);
	CHECK_EQ(sr.parity_mismatch, 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(want);
}

/* A ditto copy that missed the last write of the root is never used in
 * its place: with the root's row dead too, the read is EIO, not the old
 * root; and the scrub rewrites a stale copy from the page. */
static void test_stale_copy_never_used(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 9, stale;
	uint8_t *old = aligned_alloc(PG, 3 * PG), *now = old + PG;
	uint8_t *buf = old + 2 * PG;
	struct dg_loc l;
	unsigned cdev;
	uint64_t coff;

	REQUIRE(old);
	tvol_make(&tv, "dittostale", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	l = dg_vpn_loc(vol, 1); /* the first bitmap page */
	cdev = (l.dev + 1) % 4;
	coff = (vol->sb.ditto_start + 1) * PG;
	tvol_peek(&tv, cdev, coff, old, PG);
	REQUIRE(dg_read(vol, 1, 1, buf) == 0);
	CHECK(memcmp(old, buf, PG) == 0);	/* the copy is the page */
	{
		/* change the bitmap page: allocate and commit */
		struct dg_txn *txn = dg_txn_new(vol);
		uint64_t start, got;

		REQUIRE(txn);
		REQUIRE(dg_alloc(txn, 0, 8, &start, &got) == 0);
		REQUIRE(dg_txn_commit(txn) == 0);
		dg_txn_free(txn);
	}
	REQUIRE(dg_read(vol, 1, 1, now) == 0);
	CHECK(memcmp(old, now, PG) != 0);
	dg_vol_close(vol);
	/* The copy's device lost that write. */
	tvol_poke(&tv, cdev, coff, old, PG);

	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	REQUIRE(dg_ditto_check(vol, false, &stale) == 0);
	CHECK_EQ(stale, 1);
	kill_row_of(&tv, vol, 1, &seed);
	dg_vol_close(vol);
	vol = tvol_open(&tv, DG_OPEN_RDONLY | DG_OPEN_FORMAT);
	REQUIRE(vol);
	memset(buf, 0xa5, PG);
	CHECK_EQ(dg_read(vol, 1, 1, buf), -EIO);
	CHECK(memcmp(buf, old, PG) != 0);	/* never the old bitmap */
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(old);
}

/* The scrub puts a stale copy right while the page is readable. */
static void test_scrub_refreshes_copy(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t stale;
	uint8_t *page = aligned_alloc(PG, 2 * PG), *copy = page + PG;
	struct dg_scrub_report sr;
	struct dg_loc l;

	REQUIRE(page);
	tvol_make(&tv, "dittoscrub", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	l = dg_vpn_loc(vol, 0);
	memset(copy, 0, PG);
	tvol_poke(&tv, (l.dev + 1) % 3, (vol->sb.ditto_start + 0) * PG, copy,
		  PG);
	REQUIRE(dg_vol_scrub(vol, true, &sr, NULL, NULL) == 0);
	CHECK_EQ(sr.detected, 1);
	CHECK_EQ(sr.repaired, 1);
	REQUIRE(dg_read(vol, 0, 1, page) == 0);
	tvol_peek(&tv, (l.dev + 1) % 3, (vol->sb.ditto_start + 0) * PG, copy,
		  PG);
	CHECK(memcmp(page, copy, PG) == 0);
	REQUIRE(dg_ditto_check(vol, false, &stale) == 0);
	CHECK_EQ(stale, 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(page);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "root_double_fault", test_root_double_fault },
		{ "stale_copy_never_used", test_stale_copy_never_used },
		{ "scrub_refreshes_copy", test_scrub_refreshes_copy },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
