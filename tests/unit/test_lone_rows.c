// SPDX-License-Identifier: MIT
/* test_lone_rows.c -- small writes into rows that hold nothing else, or
 * into blank holes beside pages in use (apply.c, mark_lone_rows()) */
#include <pthread.h>

#include "csum.h"
#include "harness.h"
#include "volume_i.h"

/*
 * A whole page new to its update, in a row whose other data pages are
 * free and blank, is written with the row's parity before the journal
 * entry, as a new row is: the entry that reserves it names the page (a
 * DG_JRANGE_RESERVED range), the update's entry carries its checksum
 * and no bytes, and neither the old page nor the old parity is read.
 * With another page of the row in use or holding bytes, the same goes
 * for a page that was blank itself (a hole filled): the old parity is
 * read and the page added to it, stored after the page. A page that
 * holds bytes, free or not, sends the update the journaled way. 4
 * devices, parity 1: three data pages a row.
 */

#define NDEV 4u

static uint8_t pages[4][DG_PAGE_SIZE] __attribute__((aligned(64)));

/* The counters and the journal bytes an update moved. */
struct moved {
	uint64_t lone, holes, full, patched, jbytes;
};

static struct moved counters(struct dg_vol *vol)
{
	struct dg_vol_info in;

	dg_vol_get_info(vol, &in);
	return (struct moved){ in.rows_lone, in.holes_filled, in.rows_full,
			       in.rows_patched, vol->jrnl.head_off };
}

/* Ranges r[0, n), fresh[i] new to the update: what the update moved. */
static struct moved put(struct dg_vol *vol, const struct dg_range *r,
			unsigned n, const bool *fresh)
{
	struct moved a = counters(vol), b;

	CHECK_EQ(dg_apply_new(vol, r, n, fresh, NULL), 0);
	b = counters(vol);
	return (struct moved){ b.lone - a.lone, b.holes - a.holes,
			       b.full - a.full, b.patched - a.patched,
			       b.jbytes - a.jbytes };
}

static uint64_t vpn_at(struct dg_vol *vol, uint64_t row, unsigned rank)
{
	return dg_loc_vpn(vol, dg_row_data_dev(vol, row, rank), row);
}

static struct dg_range whole(struct dg_vol *vol, uint64_t row, unsigned rank,
			     const uint8_t *data)
{
	return (struct dg_range){ .vpn = vpn_at(vol, row, rank),
				  .len = DG_PAGE_SIZE, .data = data };
}

/* The row's parity on the media is the XOR of want[0, n). */
static bool parity_is(struct dg_vol *vol, uint64_t row,
		      const uint8_t *const *want, unsigned n)
{
	const struct dg_dev *d = &vol->devs[dg_row_parity_dev(vol, row, 0)];
	const uint8_t *par = dg_dev_ptr(d, dg_row_page(vol, row)
						   << DG_PAGE_SHIFT);

	for (unsigned i = 0; i < DG_PAGE_SIZE; i++) {
		uint8_t x = 0;

		for (unsigned j = 0; j < n; j++)
			x ^= want[j][i];
		if (par[i] != x)
			return false;
	}
	return true;
}

static bool reads(struct dg_vol *vol, uint64_t vpn, const uint8_t *want)
{
	static uint8_t got[DG_PAGE_SIZE] __attribute__((aligned(64)));

	return dg_read(vol, vpn, 1, got) == 0 &&
	       !memcmp(got, want, DG_PAGE_SIZE);
}

static void scrub_clean(struct dg_vol *vol)
{
	struct dg_scrub_report sr;

	CHECK_EQ(dg_vol_scrub(vol, false, &sr, NULL, NULL), 0);
	CHECK_EQ(sr.detected, 0);
	CHECK_EQ(sr.parity_mismatch, 0);
	CHECK_EQ(sr.unrecoverable, 0);
}

/* One page into a blank row, then a second page into the same row: the
 * first alone, reserved by its page; the second a hole filled beside it,
 * reserved by its page too, since the first now holds bytes (in use or
 * not: this test allocates nothing, so the bitmap calls both free); then
 * the first again as new to its update, which holds bytes: journaled,
 * its row's parity patched. */
static void test_one_page_then_its_neighbour(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_djentry e;
	struct dg_djrange jr;
	uint64_t seed = 5, row, head;
	unsigned jdev, dev;
	const bool fresh[1] = { true };
	const uint8_t *both[2] = { pages[0], pages[1] };
	struct dg_range r;
	struct moved m;

	tvol_make(&tv, "lone1", NDEV, 1, 32u << 20, false);
	trand_fill(&seed, pages, sizeof(pages));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(vol->k == 3);
	row = vol->sb.rows / 2;
	jdev = vol->jrnl.dev[0];
	head = (vol->jrnl.start[0] << DG_PAGE_SHIFT) + vol->jrnl.log_off +
	       vol->jrnl.head_off;
	r = whole(vol, row, 1, pages[0]);
	m = put(vol, &r, 1, fresh);
	CHECK_EQ(m.lone, 1);
	CHECK_EQ(m.full, 0);
	/* Two entries of metadata alone: no page of bytes. */
	CHECK(m.jbytes < 512);
	CHECK(parity_is(vol, row, both, 1));
	CHECK(reads(vol, r.vpn, pages[0]));
	dev = dg_vpn_loc(vol, r.vpn).dev;
	dg_vol_close(vol);
	/* The entry that reserved it: the page, a range. */
	tvol_peek(&tv, jdev, head, &e, sizeof(e));
	tvol_peek(&tv, jdev, head + sizeof(e), &jr, sizeof(jr));
	CHECK_EQ(e.nranges, 1);
	CHECK_EQ(jr.flags, DG_JRANGE_RESERVED);
	CHECK_EQ(jr.row, row);
	CHECK_EQ(jr.dev, dev);

	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(reads(vol, r.vpn, pages[0]));
	head = (vol->jrnl.start[0] << DG_PAGE_SHIFT) + vol->jrnl.log_off +
	       vol->jrnl.head_off;
	r = whole(vol, row, 0, pages[1]);
	m = put(vol, &r, 1, fresh);
	CHECK_EQ(m.lone, 0);
	CHECK_EQ(m.holes, 1);
	CHECK_EQ(m.patched, 0);
	CHECK(m.jbytes < 512);
	CHECK(parity_is(vol, row, both, 2));
	CHECK(reads(vol, r.vpn, pages[1]));
	tvol_peek(&tv, jdev, head, &e, sizeof(e));
	tvol_peek(&tv, jdev, head + sizeof(e), &jr, sizeof(jr));
	CHECK_EQ(e.nranges, 1);
	CHECK_EQ(jr.flags, DG_JRANGE_RESERVED);
	CHECK_EQ(jr.dev, dg_vpn_loc(vol, r.vpn).dev);
	scrub_clean(vol);
	dg_vol_close(vol);

	/* Reopened: the replay has nothing to redo. */
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(reads(vol, r.vpn, pages[1]));
	r = whole(vol, row, 1, pages[2]);
	m = put(vol, &r, 1, fresh);
	CHECK_EQ(m.lone + m.holes, 0);
	CHECK_EQ(m.patched, 1);
	CHECK(m.jbytes > DG_PAGE_SIZE);
	both[0] = pages[2];
	CHECK(parity_is(vol, row, both, 2));
	scrub_clean(vol);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A page in use blocks a lone row even when it holds nothing yet (its
 * checksum NONE): an update that allocated it writes it later. A blank
 * page beside it is a hole filled, its parity patched from the old. */
static void test_page_in_use_blocks(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *txn;
	struct dg_loc l;
	uint64_t v, seed = 6;
	unsigned rank;
	const bool fresh[1] = { true };
	const uint8_t *one[1] = { pages[0] };
	struct dg_range r;
	struct moved m;

	tvol_make(&tv, "lone2", NDEV, 1, 32u << 20, false);
	trand_fill(&seed, pages, sizeof(pages));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	txn = dg_txn_new(vol);
	REQUIRE(txn);
	REQUIRE(dg_alloc_exact(txn, 1, false, &v) == 0);
	REQUIRE(dg_txn_commit(txn) == 0);
	dg_txn_free(txn);
	l = dg_vpn_loc(vol, v);
	rank = dg_row_data_rank(vol, l.row, l.dev) ? 0 : 1;
	r = whole(vol, l.row, rank, pages[0]);
	m = put(vol, &r, 1, fresh);
	CHECK_EQ(m.lone, 0);
	CHECK_EQ(m.holes, 1);
	CHECK_EQ(m.patched, 0);
	CHECK(m.jbytes < 512);
	CHECK(parity_is(vol, l.row, one, 1));
	scrub_clean(vol);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* Two pages of one update in one blank row: one lone row, its parity
 * from both. A whole new page beside a page the update changes in part
 * (not new to it) goes the journaled way, the row's bytes and all. */
static void test_rows_of_one_update(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 7, row;
	const bool fresh[2] = { true, true }, mixed[2] = { true, false };
	const uint8_t *two[2] = { pages[0], pages[2] };
	struct dg_range r[2];
	struct moved m;
	uint8_t want[DG_PAGE_SIZE];

	tvol_make(&tv, "lone3", NDEV, 1, 32u << 20, false);
	trand_fill(&seed, pages, sizeof(pages));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row = vol->sb.rows / 2 + 3;
	r[0] = whole(vol, row, 0, pages[0]);
	r[1] = whole(vol, row, 2, pages[2]);
	m = put(vol, r, 2, fresh);
	CHECK_EQ(m.lone, 1);
	CHECK(m.jbytes < 512);
	CHECK(parity_is(vol, row, two, 2));
	CHECK(reads(vol, r[0].vpn, pages[0]) && reads(vol, r[1].vpn, pages[2]));

	row += 5;
	r[0] = whole(vol, row, 0, pages[1]);
	r[1] = (struct dg_range){ .vpn = vpn_at(vol, row, 1), .off = 100,
				  .len = 200, .data = pages[3] };
	m = put(vol, r, 2, mixed);
	CHECK_EQ(m.lone, 0);
	CHECK(m.jbytes > DG_PAGE_SIZE);
	memset(want, 0, sizeof(want));
	memcpy(want + 100, pages[3], 200);
	CHECK(reads(vol, r[0].vpn, pages[1]) && reads(vol, r[1].vpn, want));
	scrub_clean(vol);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A row given back as zeros (the trim's state: every page zeros with
 * the checksum of zeros) is as blank as one never written. */
static void test_zeros_are_blank(void)
{
	static const uint8_t zeros[DG_PAGE_SIZE];
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 8, row;
	const bool fresh[1] = { true }, old[3] = { false, false, false };
	const uint8_t *one[1] = { pages[1] };
	struct dg_range r[3];
	struct moved m;

	tvol_make(&tv, "lone4", NDEV, 1, 32u << 20, false);
	trand_fill(&seed, pages, sizeof(pages));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row = vol->sb.rows / 2 + 9;
	for (unsigned x = 0; x < 3; x++)
		r[x] = whole(vol, row, x, zeros);
	put(vol, r, 3, old);
	r[0] = whole(vol, row, 1, pages[1]);
	m = put(vol, r, 1, fresh);
	CHECK_EQ(m.lone, 1);
	CHECK(parity_is(vol, row, one, 1));
	scrub_clean(vol);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* Writers racing for the same rows: each writes its own data device
 * of rows [row0, row0 + NROWS), one page an update. */
#define NROWS 64u
#define CHURN_KEPT 64u

struct racer {
	struct dg_vol *vol;
	uint64_t row0;
	unsigned rank;
	int ret;
	/* churn(): the runs it left in use */
	uint64_t kept[CHURN_KEPT][2];
	unsigned nkept;
};

static uint8_t race_page(unsigned rank, uint64_t row, unsigned i)
{
	return (uint8_t)(rank * 77 + row * 13 + i);
}

static void *race(void *arg)
{
	struct racer *rc = arg;
	static __thread uint8_t b[DG_PAGE_SIZE] __attribute__((aligned(64)));
	const bool fresh[1] = { true };

	for (uint64_t row = rc->row0; row < rc->row0 + NROWS && !rc->ret;
	     row++) {
		struct dg_range r = whole(rc->vol, row, rc->rank, b);

		for (unsigned i = 0; i < DG_PAGE_SIZE; i++)
			b[i] = race_page(rc->rank, row, i);
		rc->ret = dg_apply_new(rc->vol, &r, 1, fresh, NULL);
	}
	return NULL;
}

/* Three writers, each into the same rows on its own device: the first
 * into a row takes it alone, the others find it taken and journal, and
 * every row's parity covers all three pages (what the row's lock and
 * the look under it are for; the ThreadSanitizer build runs it too). */
static void test_writers_race_for_rows(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info a, b;
	struct racer rc[3];
	pthread_t th[3];
	static uint8_t want[3][DG_PAGE_SIZE];

	tvol_make(&tv, "lone5", NDEV, 1, 32u << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	dg_vol_get_info(vol, &a);
	for (unsigned t = 0; t < 3; t++) {
		rc[t] = (struct racer){ .vol = vol,
					.row0 = vol->sb.rows / 2 + 64,
					.rank = t };
		REQUIRE(pthread_create(&th[t], NULL, race, &rc[t]) == 0);
	}
	for (unsigned t = 0; t < 3; t++) {
		pthread_join(th[t], NULL);
		CHECK_EQ(rc[t].ret, 0);
	}
	dg_vol_get_info(vol, &b);
	/* One lone row a row: its first writer's. */
	CHECK_EQ(b.rows_lone - a.rows_lone, NROWS);
	for (uint64_t row = rc[0].row0; row < rc[0].row0 + NROWS; row++) {
		const uint8_t *w[3] = { want[0], want[1], want[2] };

		for (unsigned t = 0; t < 3; t++) {
			for (unsigned i = 0; i < DG_PAGE_SIZE; i++)
				want[t][i] = race_page(t, row, i);
			CHECK(reads(vol, vpn_at(vol, row, t), want[t]));
		}
		CHECK(parity_is(vol, row, w, 3));
	}
	scrub_clean(vol);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* The checksum of a page of zeros at (dev, row), or NONE: blank. */
static bool page_blank(struct dg_vol *vol, unsigned dev, uint64_t row)
{
	static const uint8_t zeros[DG_PAGE_SIZE];
	const uint8_t *p = dg_dev_ptr(&vol->devs[dev], dg_row_page(vol, row)
						       << DG_PAGE_SHIFT);
	uint64_t cs;

	return dg_csum_get(vol, dev, row, &cs) == 0 &&
	       (cs == DG_CSUM_NONE || cs == dg_csum_page(vol, dev, row, zeros)) &&
	       !memcmp(p, zeros, DG_PAGE_SIZE);
}

static bool row_blank(struct dg_vol *vol, uint64_t row)
{
	for (unsigned dev = 0; dev < vol->ndev; dev++)
		if (!page_blank(vol, dev, row))
			return false;
	return true;
}

/* Pages [v, v + n) of one chunk, allocated at v and written with
 * pages[x], or freed. */
static void take_pages(struct dg_vol *vol, uint64_t v, uint64_t n,
		       unsigned x)
{
	struct dg_txn *t = dg_txn_new(vol);
	uint64_t s, got;

	REQUIRE(t);
	REQUIRE(dg_alloc(t, v, n, &s, &got) == 0);
	REQUIRE(s == v && got == n);
	for (uint64_t i = 0; i < n; i++)
		REQUIRE(dg_txn_write(t, v + i, 0, pages[x], DG_PAGE_SIZE) ==
			0);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
}

static void free_pages(struct dg_vol *vol, uint64_t v, uint64_t n)
{
	struct dg_txn *t = dg_txn_new(vol);

	REQUIRE(t);
	REQUIRE(dg_free(t, v, n) == 0);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
}

/* A hole filled reads the row's old parity: a parity page that fails its
 * checksum is rebuilt from the row first (the hole counted as the zeros
 * it is), and the filled row's parity is right; one the row cannot
 * rebuild -- its page in use flipped too -- fails the write with EIO
 * before anything is reserved or stored, the hole still a hole. */
static void test_hole_over_bad_parity(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 10, row, head;
	unsigned pdev, adev;
	const bool fresh[1] = { true };
	const uint8_t *both[2] = { pages[0], pages[1] };
	uint8_t junk[64], zeros[DG_PAGE_SIZE] = { 0 };
	struct dg_range r;
	struct moved m;

	tvol_make(&tv, "lone9", NDEV, 1, 32u << 20, false);
	trand_fill(&seed, pages, sizeof(pages));
	trand_fill(&seed, junk, sizeof(junk));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row = vol->sb.rows / 2 + 7;
	pdev = dg_row_parity_dev(vol, row, 0);
	r = whole(vol, row, 0, pages[0]);
	adev = dg_vpn_loc(vol, r.vpn).dev;
	CHECK_EQ(put(vol, &r, 1, fresh).lone, 1);
	/* The parity flipped: rebuilt, then the hole added to it. */
	tvol_poke(&tv, pdev, dg_row_page(vol, row) * DG_PAGE_SIZE + 512, junk,
		  sizeof(junk));
	r = whole(vol, row, 1, pages[1]);
	m = put(vol, &r, 1, fresh);
	CHECK_EQ(m.holes, 1);
	CHECK(parity_is(vol, row, both, 2));
	CHECK(reads(vol, r.vpn, pages[1]));
	scrub_clean(vol);
	/* Parity and the first page both flipped: nothing to rebuild from. */
	tvol_poke(&tv, pdev, dg_row_page(vol, row) * DG_PAGE_SIZE + 512, junk,
		  sizeof(junk));
	tvol_poke(&tv, adev, dg_row_page(vol, row) * DG_PAGE_SIZE + 1024,
		  junk, sizeof(junk));
	head = vol->jrnl.head_off;
	r = whole(vol, row, 2, pages[2]);
	CHECK_EQ(dg_apply_new(vol, &r, 1, fresh, NULL), -EIO);
	CHECK_EQ(vol->jrnl.head_off, head);
	CHECK(page_blank(vol, dg_row_data_dev(vol, row, 2), row));
	CHECK(reads(vol, r.vpn, zeros));
	CHECK(!dg_latch_on(&vol->latch));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/*
 * The blanker (blank.c): rows whose data pages are all freed are given
 * back as zeros once the frees are durable, and then the allocation
 * cursor comes back to them; a row with a page still in use keeps its
 * bytes. A small write into a row given back goes alone again, where
 * the freed bytes had sent it the journaled way.
 */
static void test_blanker_gives_freed_rows_back(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info a, b;
	uint64_t seed = 9, r0, cp, v[3];
	const bool fresh[1] = { true };
	const uint8_t *one[1] = { pages[3] };
	struct dg_range r;
	struct moved m;

	tvol_make(&tv, "lone6", NDEV, 1, 32u << 20, false);
	trand_fill(&seed, pages, sizeof(pages));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_blank_start(vol) == 0);
	cp = vol->sb.chunk_pages;
	/* Rows [r0, r0 + 8) whole, and row r0 + 8 on two devices. */
	r0 = (vol->zone_vpns / (vol->k * cp) + 2) * cp;
	for (unsigned rank = 0; rank < vol->k; rank++) {
		v[rank] = vpn_at(vol, r0, rank);
		take_pages(vol, v[rank], 8 + (rank < 2), rank);
	}
	dg_vol_get_info(vol, &a);
	for (unsigned rank = 0; rank < vol->k; rank++)
		free_pages(vol, v[rank], 8 + (rank == 0));
	REQUIRE(dg_vol_blank_idle(vol, 60000));
	dg_vol_get_info(vol, &b);
	CHECK_EQ(b.rows_blanked - a.rows_blanked, 8);
	CHECK_EQ(b.blank_pending, 0);
	CHECK(vol->alloc_cursor <= v[0]);
	for (uint64_t row = r0; row < r0 + 8; row++)
		CHECK(row_blank(vol, row));
	/* Row r0 + 8: rank 1's page in use, rank 0's freed beside it. */
	CHECK(!row_blank(vol, r0 + 8));
	CHECK(reads(vol, v[1] + 8, pages[1]));
	CHECK(!page_blank(vol, dg_row_data_dev(vol, r0 + 8, 0), r0 + 8));
	/* A write into a row given back: alone. */
	r = whole(vol, r0 + 3, 2, pages[3]);
	m = put(vol, &r, 1, fresh);
	CHECK_EQ(m.lone, 1);
	CHECK(parity_is(vol, r0 + 3, one, 1));
	/* Into the kept row's blank page: a hole filled beside the page in
	 * use; into its freed page, which holds bytes: journaled. */
	r = whole(vol, r0 + 8, 2, pages[3]);
	m = put(vol, &r, 1, fresh);
	CHECK_EQ(m.lone, 0);
	CHECK_EQ(m.holes, 1);
	CHECK(m.jbytes < 512);
	r = whole(vol, r0 + 8, 0, pages[2]);
	m = put(vol, &r, 1, fresh);
	CHECK_EQ(m.lone + m.holes, 0);
	CHECK(m.jbytes > DG_PAGE_SIZE);
	CHECK(reads(vol, v[1] + 8, pages[1]));
	scrub_clean(vol);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* The queue: adjacent frees merge into one run; a run that finds it full
 * is dropped, counted, and left to the caller (the cursor moves back at
 * once, alloc.c); nothing is taken while the blanker is off. */
static void test_blank_queue(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info in;
	uint64_t v;

	tvol_make(&tv, "lone7", NDEV, 1, 32u << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	v = vol->zone_vpns + 64;
	CHECK(!dg_freed_note(vol, v, 1));
	/* On, with no thread to take runs: the queue as it fills. */
	vol->blank.on = true;
	CHECK(!dg_freed_note(vol, vol->zone_vpns - 1, 1));
	CHECK(dg_freed_note(vol, v, 1));
	CHECK(dg_freed_note(vol, v + 1, 3));
	CHECK_EQ(vol->blank.len, 1);
	for (unsigned i = 1; i < DG_BLANK_RUNS; i++)
		CHECK(dg_freed_note(vol, v + 10 * i, 1));
	CHECK(!dg_freed_note(vol, v + 10 * DG_BLANK_RUNS, 1));
	/* Adjacent to the last run: still taken. */
	CHECK(dg_freed_note(vol, v + 10 * (DG_BLANK_RUNS - 1) + 1, 2));
	dg_vol_get_info(vol, &in);
	CHECK_EQ(in.blank_dropped, 1);
	CHECK_EQ(in.blank_pending, 4 + DG_BLANK_RUNS - 1 + 2);
	vol->blank.on = false;
	vol->blank.len = 0;
	vol->blank.pending = 0;
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* Writers allocating, writing and freeing pages while the blanker gives
 * their freed rows back: a page allocated before the blanker locks its
 * row keeps the row as it is, one allocated after it is written after
 * it. Every page in use reads its bytes and the scrub finds every row's
 * parity whole (the ThreadSanitizer build runs it too). */
#define CHURN 150u

static void *churn(void *arg)
{
	struct racer *rc = arg;
	static __thread uint8_t b[DG_PAGE_SIZE] __attribute__((aligned(64)));
	static __thread uint8_t got[DG_PAGE_SIZE] __attribute__((aligned(64)));

	for (unsigned i = 0; i < CHURN && !rc->ret; i++) {
		struct dg_txn *t = dg_txn_new(rc->vol);
		uint64_t s, n;
		bool keep = i % 5 == 0;

		if (!t) {
			rc->ret = -ENOMEM;
			break;
		}
		rc->ret = dg_alloc(t, UINT64_MAX, 1 + i % 4, &s, &n);
		for (uint64_t x = 0; x < n && !rc->ret; x++) {
			memset(b, (int)(s + x + rc->rank), sizeof(b));
			rc->ret = dg_txn_write(t, s + x, 0, b, DG_PAGE_SIZE);
		}
		if (!rc->ret)
			rc->ret = dg_txn_commit(t);
		for (uint64_t x = 0; x < n && !rc->ret; x++) {
			memset(b, (int)(s + x + rc->rank), sizeof(b));
			if (dg_read(rc->vol, s + x, 1, got) ||
			    memcmp(got, b, DG_PAGE_SIZE))
				rc->ret = -EIO;
		}
		if (!rc->ret && !keep) {
			rc->ret = dg_free(t, s, n);
			if (!rc->ret)
				rc->ret = dg_txn_commit(t);
		}
		dg_txn_free(t);
		if (keep && !rc->ret) {
			rc->kept[rc->nkept][0] = s;
			rc->kept[rc->nkept++][1] = n;
		}
	}
	return NULL;
}

static void test_blanker_races_writers(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info a, b;
	struct racer rc[2];
	pthread_t th[2];
	uint8_t want[DG_PAGE_SIZE];

	tvol_make(&tv, "lone8", NDEV, 1, 32u << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_blank_start(vol) == 0);
	dg_vol_get_info(vol, &a);
	for (unsigned t = 0; t < 2; t++) {
		rc[t] = (struct racer){ .vol = vol, .rank = t };
		REQUIRE(pthread_create(&th[t], NULL, churn, &rc[t]) == 0);
	}
	for (unsigned t = 0; t < 2; t++) {
		pthread_join(th[t], NULL);
		CHECK_EQ(rc[t].ret, 0);
	}
	REQUIRE(dg_vol_blank_idle(vol, 60000));
	dg_vol_get_info(vol, &b);
	CHECK(b.rows_blanked > a.rows_blanked);
	CHECK(b.rows_lone > a.rows_lone);
	for (unsigned t = 0; t < 2; t++)
		for (unsigned i = 0; i < rc[t].nkept; i++)
			for (uint64_t x = 0; x < rc[t].kept[i][1]; x++) {
				uint64_t v = rc[t].kept[i][0] + x;

				memset(want, (int)(v + t), sizeof(want));
				CHECK(reads(vol, v, want));
			}
	scrub_clean(vol);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "one_page_then_its_neighbour",
		  test_one_page_then_its_neighbour },
		{ "page_in_use_blocks", test_page_in_use_blocks },
		{ "hole_over_bad_parity", test_hole_over_bad_parity },
		{ "rows_of_one_update", test_rows_of_one_update },
		{ "zeros_are_blank", test_zeros_are_blank },
		{ "writers_race_for_rows", test_writers_race_for_rows },
		{ "blanker_gives_freed_rows_back",
		  test_blanker_gives_freed_rows_back },
		{ "blank_queue", test_blank_queue },
		{ "blanker_races_writers", test_blanker_races_writers },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
