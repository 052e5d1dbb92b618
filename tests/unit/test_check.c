// SPDX-License-Identifier: MIT
/* test_check.c -- fsck's passes in the engine: superblocks, journal,
 * redundancy and filesystem, each finding reported, repaired when asked,
 * and gone from the next pass */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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

/* A page lost beyond parity, given up (given_up.c): it reads EIO, the
 * next check reports it given up (a warning), and its row protects its
 * other pages again. */
static void test_give_up(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checkgiveup");
	struct dg_chk_stats st = { 0 };
	struct seen s = { 0 };
	uint8_t a[PG], b[PG], junk[PG], got[PG];
	uint64_t seed = 43, va, vb = 0, prow;
	struct dg_loc l;
	unsigned pdev = 0;

	REQUIRE(vol);
	va = tdata_vpn(vol);
	l = dg_vpn_loc(vol, va);
	for (unsigned d = 0; d < 3; d++) {
		if (dg_vol_row_is_parity(vol, l.row, d))
			pdev = d;
		else if (d != l.dev)
			vb = dg_loc_vpn(vol, d, l.row);
	}
	REQUIRE(vb);
	trand_fill(&seed, a, PG);
	trand_fill(&seed, b, PG);
	{
		struct dg_range r[2] = { { va, 0, PG, a }, { vb, 0, PG, b } };

		REQUIRE(dg_apply(vol, r, 2) == 0);
	}
	/* Readable: not this repair's to give up. */
	CHECK_EQ(dg_row_give_up_page(vol, va), -EAGAIN);
	prow = dg_row_page(vol, l.row) * PG;
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, l.dev, prow, junk, PG);
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, pdev, prow, junk, PG);
	CHECK_EQ(dg_read(vol, va, 1, got), -EIO);
	CHECK(!dg_page_given_up(vol, l.dev, l.row));
	CHECK_EQ(dg_row_give_up_page(vol, va), 0);
	CHECK(dg_page_given_up(vol, l.dev, l.row));
	CHECK_EQ(dg_row_give_up_page(vol, va), 0);	/* idempotent */
	CHECK_EQ(dg_read(vol, va, 1, got), -EIO);
	dg_vol_close(vol);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	dg_check_redundancy(vol, false, on_event, &s, NULL, NULL, &st);
	CHECK_EQ(s.kinds[DG_CHK_PAGE_GIVEN_UP], 1);
	CHECK_EQ(s.kinds[DG_CHK_PAGE_BAD], 0);
	CHECK_EQ(st.unrecoverable, 0);
	/* The other page of the row, damaged now, comes back from parity
	 * and the given-up page's pinned bytes. */
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, dg_vpn_loc(vol, vb).dev, prow, junk, PG);
	REQUIRE(dg_read(vol, vb, 1, got) == 0);
	CHECK(memcmp(got, b, PG) == 0);
	CHECK_EQ(dg_read(vol, va, 1, got), -EIO);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A scratch open (DG_OPEN_SCRATCH) writes into memory only: what it
 * stores, superblocks included, is gone at the next open. */
static void test_scratch_writes_nothing(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checkscratch");
	struct dg_vol_info before, after;
	uint8_t a[PG], b[PG], got[PG], s0[PG], s1[PG];
	uint64_t seed = 44, v;

	REQUIRE(vol);
	v = tdata_vpn(vol);
	trand_fill(&seed, a, PG);
	trand_fill(&seed, b, PG);
	{
		struct dg_range r = { v, 0, PG, a };

		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	dg_vol_get_info(vol, &before);
	dg_vol_close(vol);
	tvol_peek(&tv, 0, 0, s0, PG);
	vol = tvol_open(&tv, DG_OPEN_SCRATCH);
	REQUIRE(vol);
	{
		struct dg_range r = { v, 0, PG, b };

		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	REQUIRE(dg_read(vol, v, 1, got) == 0);
	CHECK(memcmp(got, b, PG) == 0);
	dg_vol_close(vol);
	tvol_peek(&tv, 0, 0, s1, PG);
	CHECK(memcmp(s0, s1, PG) == 0);		/* the superblock too */
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	dg_vol_get_info(vol, &after);
	CHECK_EQ(after.generation, before.generation);
	REQUIRE(dg_read(vol, v, 1, got) == 0);
	CHECK(memcmp(got, a, PG) == 0);
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
		{ "give_up", test_give_up },
		{ "scratch_writes_nothing", test_scratch_writes_nothing },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
