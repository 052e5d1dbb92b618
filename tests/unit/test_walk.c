// SPDX-License-Identifier: MIT
/* test_walk.c -- the row iterator of the whole-volume walks (walk.c):
 * the rows of written blocks only, in order, the skips it reports, and
 * one read-ahead hint per written block and device read (counted by
 * the device layer, whatever the media does with it) */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "volume_i.h"

#define PG DG_PAGE_SIZE
#define C DG_CSUMS_PER_PAGE

/* A page written in row (on its first data device). */
static void write_in_row(struct dg_vol *vol, uint64_t row, uint64_t *seed)
{
	unsigned dev = dg_row_data_dev(vol, row, 0);
	uint8_t buf[PG];
	struct dg_range r = { dg_loc_vpn(vol, dev, row), 0, PG, buf };

	trand_fill(seed, buf, PG);
	REQUIRE(dg_apply(vol, &r, 1) == 0);
}

/* The written blocks of [0, rows): how many, and their rows. */
static uint64_t written_blocks(struct dg_vol *vol, uint64_t rows,
			       uint64_t *nrows)
{
	uint64_t n = 0;

	*nrows = 0;
	for (uint64_t i = 0; i * C < rows; i++)
		if (dg_cmap_test(vol, i)) {
			n++;
			*nrows += (i + 1) * C < rows ? C : rows - i * C;
		}
	return n;
}

static struct dg_vol *volume(struct tvol *tv, const char *tag)
{
	struct dg_vol *vol;
	uint64_t seed = 3, rows;

	tvol_make(tv, tag, 4, 1, 32ull << 20, false);
	vol = tvol_open(tv, 0);
	if (!vol)
		return NULL;
	rows = dg_vol_rows(vol);
	CHECK(rows > 8 * C);
	/* Blocks 3 and 6 written (and the metadata zone's, at the start);
	 * 4, 5 and 7 blank. */
	write_in_row(vol, 3 * C + 17, &seed);
	write_in_row(vol, 6 * C, &seed);
	write_in_row(vol, 6 * C + C - 1, &seed);
	CHECK(dg_cmap_test(vol, 3) && dg_cmap_test(vol, 6));
	CHECK(!dg_cmap_test(vol, 4) && !dg_cmap_test(vol, 5) &&
	      !dg_cmap_test(vol, 7));
	return vol;
}

/* Every row of a written block, none other, in order; each skip said. */
static void test_rows_of_written_blocks(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "walkrows");
	uint64_t rows, nrows, seen = 0, row, last = 0;
	struct dg_row_walk w;
	bool any = false;

	REQUIRE(vol);
	rows = dg_vol_rows(vol);
	written_blocks(vol, rows, &nrows);
	CHECK_EQ(dg_vol_used_rows(vol, 0, rows), nrows);
	CHECK_EQ(dg_vol_used_rows(vol, 3 * C + 10, 6 * C + 5), C - 10 + 5);
	dg_walk_init(&w, vol, 0, rows);
	while (dg_walk_next(&w, &row)) {
		CHECK(dg_cmap_test(vol, row / C));
		CHECK(!any || row > last);
		/* Rows skipped: all of blank blocks. */
		for (uint64_t r = w.gap; r < row; r += C)
			CHECK(!dg_cmap_test(vol, r / C));
		CHECK(w.gap == row || w.gap % C == 0);
		if (row == 6 * C)
			CHECK_EQ(w.gap, 4 * C); /* 4 and 5 in one skip */
		last = row;
		any = true;
		seen++;
	}
	CHECK_EQ(seen, nrows);
	/* The blank rows after the last written one, said at the end. */
	if (last + 1 < rows)
		CHECK(w.gap == last + 1 || w.gap % C == 0);
	CHECK_EQ(w.row, rows);

	/* From the middle of a written block to the middle of the next
	 * written one. */
	dg_walk_init(&w, vol, 3 * C + 10, 6 * C + 5);
	seen = 0;
	while (dg_walk_next(&w, &row)) {
		CHECK(row >= 3 * C + 10 && row < 6 * C + 5);
		seen++;
	}
	CHECK_EQ(seen, C - 10 + 5);

	/* A range in blank blocks alone: nothing, the whole range a skip. */
	dg_walk_init(&w, vol, 4 * C + 1, 6 * C);
	CHECK(!dg_walk_next(&w, &row));
	CHECK_EQ(w.gap, 4 * C + 1);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static bool only_block_6(void *arg, uint64_t index)
{
	(void)arg;
	return index == 6;
}

/* One hint per written block per device read, each block once however
 * far ahead the walk reads; none for blocks a filter drops. */
static void test_one_hint_per_block(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "walkhints");
	uint64_t rows, nrows, row, h, n, blocks;
	struct dg_scrub_report r = { 0 };
	struct dg_row_walk w;

	REQUIRE(vol);
	rows = dg_vol_rows(vol);
	blocks = written_blocks(vol, rows, &nrows);
	h = dg_vol_read_hints(vol);
	dg_walk_init(&w, vol, 0, rows);
	for (n = 0; dg_walk_next(&w, &row);)
		n++;
	CHECK_EQ(n, nrows);
	CHECK_EQ(dg_vol_read_hints(vol) - h, blocks * 4);

	/* Only the devices asked for. */
	h = dg_vol_read_hints(vol);
	dg_walk_init(&w, vol, 0, rows);
	w.devs = 1u << 2;
	while (dg_walk_next(&w, &row))
		;
	CHECK_EQ(dg_vol_read_hints(vol) - h, blocks);
	CHECK_EQ(dg_dev_hints(&vol->devs[2]) > 0, 1);

	/* A filter (a resync's changed blocks): its blocks alone. */
	h = dg_vol_read_hints(vol);
	dg_walk_init(&w, vol, 0, rows);
	w.keep = only_block_6;
	for (n = 0; dg_walk_next(&w, &row); n++)
		CHECK_EQ(row / C, 6);
	CHECK_EQ(n, C);
	CHECK_EQ(dg_vol_read_hints(vol) - h, 4);

	/* The scrub's rows go through the walk: the same hints. */
	h = dg_vol_read_hints(vol);
	REQUIRE(dg_vol_scrub_rows(vol, false, 0, rows, &r) == 0);
	CHECK_EQ(dg_vol_read_hints(vol) - h, blocks * 4);
	CHECK(r.rows_checked > 0 && r.rows_checked <= nrows);
	/* The same rows in pieces (the daemon's batches): each piece goes
	 * on from what the one before asked for, past its own end, so each
	 * block is asked for once. */
	h = dg_vol_read_hints(vol);
	for (uint64_t f = 0; f < rows; f += 7)
		REQUIRE(dg_vol_scrub_rows(vol, false, f, f + 7, &r) == 0);
	CHECK_EQ(dg_vol_read_hints(vol) - h, blocks * 4);
	/* A walk that does not begin where the last one ended asks
	 * afresh. */
	h = dg_vol_read_hints(vol);
	REQUIRE(dg_vol_scrub_rows(vol, false, 6 * C, 6 * C + 7, &r) == 0);
	CHECK_EQ(dg_vol_read_hints(vol) - h, 4);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "rows_of_written_blocks", test_rows_of_written_blocks },
		{ "one_hint_per_block", test_one_hint_per_block },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
