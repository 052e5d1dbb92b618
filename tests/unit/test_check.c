// SPDX-License-Identifier: MIT
/* test_check.c -- fsck's passes in the engine: superblocks, journal,
 * redundancy and filesystem, each finding reported, repaired when asked,
 * and gone from the next pass */
#include <stdio.h>

#include "check.h"
#include "fscheck.h"
#include "volume_i.h"
#include "harness.h"

#define PG DG_PAGE_SIZE

struct seen {
	unsigned n, fixed;
	unsigned kinds[DG_CHK_NR];
};

static void on_event(void *arg, const struct dg_chk_event *ev)
{
	struct seen *s = arg;

	s->n++;
	s->fixed += ev->fixed;
	if (ev->kind < DG_CHK_NR)
		s->kinds[ev->kind]++;
}

static bool yes(void *arg, const struct dg_chk_event *ev)
{
	(void)arg;
	(void)ev;
	return true;
}

static struct dg_vol *volume(struct tvol *tv, const char *tag)
{
	tvol_make(tv, tag, 3, 1, 16ull << 20, false);
	return tvol_open(tv, 0);
}

static void test_clean_volume(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checkclean");
	struct dg_chk_stats st = { 0 };
	struct seen s = { 0 };
	struct dg_fs *fs;
	struct dg_attr a;

	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(dg_fs_mknod(fs, 1, "f", 0100644, 0, 0, 0, &a) == 0);
	REQUIRE(dg_fs_write(fs, a.ino, 0, "data", 4) == 4);
	dg_fs_close(fs);
	CHECK_EQ(dg_check_supers(vol, false, on_event, &s), 0);
	CHECK_EQ(dg_check_journal(vol, false, on_event, &s), 0);
	CHECK_EQ(dg_check_redundancy(vol, false, on_event, &s, NULL, NULL,
				     &st), 0);
	CHECK_EQ(dg_check_fs(vol, on_event, NULL, &s), 0);
	CHECK_EQ(s.n, 0);
	CHECK(st.pages_checked > 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_superblock(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checksuper");
	struct seen s = { 0 }, again = { 0 };
	uint8_t junk[PG];
	uint64_t seed = 41;

	REQUIRE(vol);
	/* The primary of device 1, while open (an open rewrites it). */
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, 1, 0, junk, PG);
	dg_check_supers(vol, false, on_event, &s);
	CHECK_EQ(s.kinds[DG_CHK_SUPER_BAD], 1);
	CHECK_EQ(s.fixed, 0);
	memset(&s, 0, sizeof(s));
	dg_check_supers(vol, true, on_event, &s);
	CHECK_EQ(s.kinds[DG_CHK_SUPER_BAD], 1);
	CHECK_EQ(s.fixed, 1);
	dg_check_supers(vol, false, on_event, &again);
	CHECK_EQ(again.n, 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_redundancy(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checkredund");
	struct dg_chk_stats st = { 0 };
	struct seen s = { 0 }, again = { 0 };
	uint8_t page[PG], junk[PG];
	uint64_t seed = 42;
	struct dg_range r = { 900, 0, PG, page };
	struct dg_loc l;

	REQUIRE(vol);
	trand_fill(&seed, page, PG);
	REQUIRE(dg_apply(vol, &r, 1) == 0);
	l = dg_vpn_loc(vol, 900);
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, l.dev, dg_row_page(vol, l.row) * PG, junk, PG);
	dg_check_redundancy(vol, false, on_event, &s, NULL, NULL, &st);
	CHECK_EQ(s.kinds[DG_CHK_PAGE_BAD], 1);
	CHECK_EQ(s.fixed, 0);
	memset(&s, 0, sizeof(s));
	dg_check_redundancy(vol, true, on_event, &s, NULL, NULL, &st);
	CHECK_EQ(s.kinds[DG_CHK_PAGE_BAD], 1);
	CHECK_EQ(s.fixed, 1);
	/* A pass reports the faults its open met too (fsck opens afresh
	 * for each run): the next run is on a new open. */
	dg_vol_close(vol);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	dg_check_redundancy(vol, false, on_event, &again, NULL, NULL, &st);
	CHECK_EQ(again.n, 0);
	REQUIRE(dg_read(vol, 900, 1, junk) == 0);
	CHECK(memcmp(junk, page, PG) == 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A page allocated and used by nothing: a leak, freed when asked. */
static void test_fs_leak(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checkleak");
	struct seen s = { 0 }, again = { 0 };
	struct dg_txn *txn;
	uint64_t got, start, free0;

	REQUIRE(vol);
	free0 = dg_free_vpns(vol);
	txn = dg_txn_new(vol);
	REQUIRE(txn);
	REQUIRE(dg_alloc(txn, 0, 1, &start, &got) == 0);
	REQUIRE(dg_txn_commit(txn) == 0);
	dg_txn_free(txn);
	CHECK_EQ(dg_free_vpns(vol), free0 - 1);
	dg_check_fs(vol, on_event, NULL, &s);
	CHECK_EQ(s.kinds[DG_CHK_BITMAP_LEAK], 1);
	CHECK_EQ(s.fixed, 0);
	memset(&s, 0, sizeof(s));
	dg_check_fs(vol, on_event, yes, &s);
	CHECK_EQ(s.kinds[DG_CHK_BITMAP_LEAK], 1);
	CHECK_EQ(s.fixed, 1);
	dg_check_fs(vol, on_event, NULL, &again);
	CHECK_EQ(again.n, 0);
	dg_vol_close(vol);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(dg_free_vpns(vol), free0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "clean_volume", test_clean_volume },
		{ "superblock", test_superblock },
		{ "redundancy", test_redundancy },
		{ "fs_leak", test_fs_leak },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
