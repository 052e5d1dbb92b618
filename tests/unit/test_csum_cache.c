// SPDX-License-Identifier: MIT
/* test_csum_cache.c -- the cache of verified checksum pages: off until
 * asked for, filled by reads and updates, and never a way for damaged
 * data or a damaged checksum page to pass */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "csum.h"
#include "volume_i.h"
#include "harness.h"

#define PG DG_PAGE_SIZE

static void test_off_until_asked(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint8_t img[PG];
	bool both;

	tvol_make(&tv, "cpcoff", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	dg_cpcache_put(vol, 0, 0, img, true); /* no cache: a no-op */
	CHECK(dg_cpcache_get(vol, 0, 0, &both) == NULL);
	REQUIRE(dg_vol_cache_csum_pages(vol, 1 << 20) == 0);
	CHECK(dg_cpcache_get(vol, 0, 0, &both) == NULL);
	memset(img, 0x42, sizeof(img));
	dg_cpcache_put(vol, 1, 2, img, true);
	{
		uint8_t *c = dg_cpcache_get(vol, 1, 2, &both);

		CHECK(c && both && c[0] == 0x42 && c[PG - 1] == 0x42);
	}
	dg_cpcache_put(vol, 1, 2, img, false);
	CHECK(dg_cpcache_get(vol, 1, 2, &both) && !both);
	CHECK(dg_cpcache_get(vol, 2, 1, &both) == NULL);
	dg_cpcache_drop(vol, 1, 2);
	CHECK(dg_cpcache_get(vol, 1, 2, &both) == NULL);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* With the cache on, an update's checksum page is cached and a read
 * still verifies the data against it: damage behind the engine is
 * detected and repaired from parity, never returned. */
static void test_reads_still_verify(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 11, before[DG_FAULT_NR], after[DG_FAULT_NR];
	uint8_t want[PG], got[PG], junk[PG];
	const uint64_t vpn = 700;
	struct dg_range r = { vpn, 0, PG, want };
	struct dg_loc l;
	bool both;

	tvol_make(&tv, "cpcread", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_cache_csum_pages(vol, 4 << 20) == 0);
	trand_fill(&seed, want, PG);
	REQUIRE(dg_apply(vol, &r, 1) == 0);
	l = dg_vpn_loc(vol, vpn);
	CHECK(dg_cpcache_get(vol, l.dev, l.row / DG_CSUMS_PER_PAGE, &both) !=
	      NULL);
	dg_vol_fault_counts(vol, before);
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, l.dev, dg_row_page(vol, l.row) * PG, junk, PG);
	REQUIRE(dg_read(vol, vpn, 1, got) == 0);
	CHECK(memcmp(got, want, PG) == 0);
	dg_vol_fault_counts(vol, after);
	CHECK_EQ(after[DG_FAULT_DETECTED] - before[DG_FAULT_DETECTED], 1);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A checksum page damaged on media after it was cached: the scrub,
 * whose cursors bypass the cache, finds and rewrites the copy. */
static void test_scrub_bypasses(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_scrub_report sr;
	uint8_t page[PG], junk[PG];
	uint64_t seed = 12;
	struct dg_range r = { 800, 0, PG, page };
	struct dg_loc l;
	unsigned dev;
	uint64_t cpage;

	tvol_make(&tv, "cpcscrub", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_cache_csum_pages(vol, 4 << 20) == 0);
	trand_fill(&seed, page, PG);
	REQUIRE(dg_apply(vol, &r, 1) == 0);
	REQUIRE(dg_read(vol, 800, 1, page) == 0);
	l = dg_vpn_loc(vol, 800);
	dev = dg_cpage_copy_dev(vol, l.dev, 0);
	cpage = dg_cpage_copy_page(vol, l.row / DG_CSUMS_PER_PAGE, 0);
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, dev, cpage * PG, junk, PG);
	REQUIRE(dg_vol_scrub(vol, true, &sr, NULL, NULL) == 0);
	CHECK(sr.detected >= 1);
	CHECK_EQ(sr.unrecoverable, 0);
	REQUIRE(dg_vol_scrub(vol, false, &sr, NULL, NULL) == 0);
	CHECK_EQ(sr.detected, 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* *stored: the bytes stored to set one checksum in an index never
 * written (4 devices, parity 1), with the cache on or off; the copies
 * then all verify, at one generation, and hold it. */
static void stored_new_index(bool cache, uint64_t *stored)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_media_counts a, b;
	struct dg_flushset fs;
	struct dg_cpage_view v;
	uint8_t *img = aligned_alloc(PG, PG);
	uint64_t index, cs = 0;
	struct dg_csum_upd u;

	REQUIRE(img);
	tvol_make(&tv, cache ? "cpcnix1" : "cpcnix0", 4, 1, 16ull << 20,
		  false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	if (cache)
		REQUIRE(dg_vol_cache_csum_pages(vol, 1 << 20) == 0);
	REQUIRE(vol->sb.csum_copies == 3); /* parity + 2 */
	index = vol->sb.csum_pages - 1;
	REQUIRE(!dg_cmap_test(vol, index));
	u = (struct dg_csum_upd){ 1, index * DG_CSUMS_PER_PAGE, 0x1234 };
	dg_vol_media_counts(vol, &a, NULL);
	dg_flushset_init(&fs);
	REQUIRE(dg_csum_set_batch(vol, &u, 1, &fs) == 0);
	dg_flushset_fini(&fs);
	dg_vol_media_counts(vol, &b, NULL);
	CHECK(dg_cmap_test(vol, index));
	dg_vol_close(vol);

	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	CHECK_EQ(dg_cpage_examine(vol, 1, index, img, &v, DG_CPX_QUIET), 1);
	CHECK_EQ(v.bad, 0);
	CHECK_EQ(dg_csum_get(vol, 1, u.row, &cs), 0);
	CHECK_EQ(cs, 0x1234);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(img);
	*stored = b.bytes_stored - a.bytes_stored;
}

/*
 * The pages an index's initialisation writes whole are cached as equal
 * to their copies (csum.c, cmap_init_index()): the update that set it
 * off then stores its entry and the generation and seal into each copy,
 * not the page whole a second time.
 */
static void test_new_index_written_once(void)
{
	uint64_t off = 0, on = 0;
	/* each copy: the 8-byte entry and the 16-byte generation and seal,
	 * where uncached it is the page whole */
	uint64_t saved = 3 * (PG - 8 - (PG - offsetof(struct dg_dcpage, gen)));

	stored_new_index(false, &off);
	stored_new_index(true, &on);
	printf("# stored %" PRIu64 " bytes uncached, %" PRIu64 " cached\n",
	       off, on);
	CHECK_EQ(off - on, saved);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "off_until_asked", test_off_until_asked },
		{ "reads_still_verify", test_reads_still_verify },
		{ "scrub_bypasses", test_scrub_bypasses },
		{ "new_index_written_once", test_new_index_written_once },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
