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

/*
 * The price of writing a new index's pages whole once (cmap_init_index()):
 * the write of one copy's initialisation lost by its device (over old
 * bytes, not zeros, which an init page mostly is), nothing
 * after it in the session heals that copy -- the cache says the copy
 * holds the page, so the next writes of the index store into it only
 * their entries, generation and seal. The copy fails its seal: found
 * bad by dg_cpage_examine(), never used (the other copies win), and
 * rewritten by a scrub (docs/design.md, "What a write costs the media").
 */
static void test_new_index_lost_init(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_cpage_view v;
	struct dg_scrub_report sr = { 0 };
	uint8_t *mem = aligned_alloc(PG, 5 * PG);
	uint8_t *img = mem, *before = mem + PG, *after = mem + 2 * PG;
	uint8_t *data = mem + 3 * PG, *back = mem + 4 * PG;
	const size_t gen_off = offsetof(struct dg_dcpage, gen);
	const unsigned lost = 1;	/* the copy whose init is lost */
	uint64_t vpn, index, cpage;
	unsigned cdev;
	uint32_t cbyte[2];
	struct dg_loc l[2];

	REQUIRE(mem);
	tvol_make(&tv, "cpclost", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_cache_csum_pages(vol, 1 << 20) == 0);
	/* two pages of one owner and index, in no index written yet */
	vpn = vol->vpns - 2;
	l[0] = dg_vpn_loc(vol, vpn);
	l[1] = dg_vpn_loc(vol, vpn + 1);
	index = l[0].row / DG_CSUMS_PER_PAGE;
	REQUIRE(l[1].dev == l[0].dev &&
		l[1].row / DG_CSUMS_PER_PAGE == index);
	REQUIRE(!dg_cmap_test(vol, index));
	dg_csum_loc(vol, l[0].dev, l[0].row, lost, &cdev, &cpage, &cbyte[0]);
	dg_csum_loc(vol, l[1].dev, l[1].row, lost, &cdev, &cpage, &cbyte[1]);
	REQUIRE(cdev != l[0].dev);
	/* What the copy's place held before: old bytes, no page of this
	 * volume (the init map says the index was never written, so
	 * nothing reads them). */
	memset(before, 0xc7, PG);
	tvol_poke(&tv, cdev, cpage * PG, before, PG);

	memset(data, 0x31, PG);
	{
		struct dg_range r = { vpn, 0, PG, data };

		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	REQUIRE(dg_cmap_test(vol, index));
	/* The init's write of that copy lost: the page as it was, with
	 * what the write stored into it after the init (its entry, the
	 * generation and seal). */
	tvol_peek(&tv, cdev, cpage * PG, after, PG);
	memcpy(img, before, PG);
	memcpy(img + cbyte[0], after + cbyte[0], 8);
	memcpy(img + gen_off, after + gen_off, PG - gen_off);
	REQUIRE(memcmp(img, after, PG) != 0);
	tvol_poke(&tv, cdev, cpage * PG, img, PG);
	/* the next write of the index: cached, it does not heal the copy */
	memset(data + PG / 2, 0x32, PG / 2);
	{
		struct dg_range r = { vpn + 1, 0, PG, data };

		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	dg_vol_close(vol);

	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(dg_cpage_examine(vol, l[0].dev, index, img, &v,
				  DG_CPX_QUIET), 1);
	CHECK_EQ(v.bad, 1);
	CHECK_EQ(v.state[lost], DG_COPY_BAD);
	CHECK(v.source != lost);
	/* a scrub finds the copy and rewrites it */
	CHECK_EQ(dg_vol_scrub(vol, true, &sr, NULL, NULL), 0);
	CHECK(sr.detected >= 1);
	CHECK_EQ(sr.repaired, sr.detected);
	CHECK_EQ(sr.unrecoverable, 0);
	CHECK_EQ(dg_cpage_examine(vol, l[0].dev, index, img, &v,
				  DG_CPX_QUIET), 1);
	CHECK_EQ(v.bad, 0);
	SCRUB_CLEAN(vol, false);
	CHECK_EQ(dg_read(vol, vpn + 1, 1, back), 0);
	CHECK(!memcmp(back, data, PG));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(mem);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "off_until_asked", test_off_until_asked },
		{ "reads_still_verify", test_reads_still_verify },
		{ "scrub_bypasses", test_scrub_bypasses },
		{ "new_index_written_once", test_new_index_written_once },
		{ "new_index_lost_init", test_new_index_lost_init },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
