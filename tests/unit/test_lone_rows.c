// SPDX-License-Identifier: MIT
/* test_lone_rows.c -- small writes into rows that hold nothing else
 * (apply.c, mark_lone_rows()) */
#include <pthread.h>

#include "csum.h"
#include "harness.h"

/*
 * A whole page new to its update, in a row whose other data pages are
 * free and blank, is written with the row's parity before the journal
 * entry, as a new row is: the entry that reserves it names the page (a
 * DG_JRANGE_RESERVED range), the update's entry carries its checksum
 * and no bytes, and neither the old page nor the old parity is read.
 * Any other page of the row in use, or holding bytes, sends the update
 * the journaled way. 4 devices, parity 1: three data pages a row.
 */

#define NDEV 4u

static uint8_t pages[4][DG_PAGE_SIZE] __attribute__((aligned(64)));

/* The counters and the journal bytes an update moved. */
struct moved {
	uint64_t lone, full, patched, jbytes;
};

static struct moved counters(struct dg_vol *vol)
{
	struct dg_vol_info in;

	dg_vol_get_info(vol, &in);
	return (struct moved){ in.rows_lone, in.rows_full, in.rows_patched,
			       vol->jrnl.head_off };
}

/* Ranges r[0, n), fresh[i] new to the update: what the update moved. */
static struct moved put(struct dg_vol *vol, const struct dg_range *r,
			unsigned n, const bool *fresh)
{
	struct moved a = counters(vol), b;

	CHECK_EQ(dg_apply_new(vol, r, n, fresh, NULL), 0);
	b = counters(vol);
	return (struct moved){ b.lone - a.lone, b.full - a.full,
			       b.patched - a.patched, b.jbytes - a.jbytes };
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
 * first alone, reserved by its page; the second journaled, its row's
 * parity patched, since the first page now holds bytes (in use or not:
 * this test allocates nothing, so the bitmap calls both free). */
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
	r = whole(vol, row, 0, pages[1]);
	m = put(vol, &r, 1, fresh);
	CHECK_EQ(m.lone, 0);
	CHECK_EQ(m.patched, 1);
	CHECK(m.jbytes > DG_PAGE_SIZE);
	CHECK(parity_is(vol, row, both, 2));
	scrub_clean(vol);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A page in use blocks a lone row even when it holds nothing yet (its
 * checksum NONE): an update that allocated it writes it later. */
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
	CHECK_EQ(m.patched, 1);
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

struct racer {
	struct dg_vol *vol;
	uint64_t row0;
	unsigned rank;
	int ret;
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
		rc[t] = (struct racer){ vol, vol->sb.rows / 2 + 64, t, 0 };
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

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "one_page_then_its_neighbour",
		  test_one_page_then_its_neighbour },
		{ "page_in_use_blocks", test_page_in_use_blocks },
		{ "rows_of_one_update", test_rows_of_one_update },
		{ "zeros_are_blank", test_zeros_are_blank },
		{ "writers_race_for_rows", test_writers_race_for_rows },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
