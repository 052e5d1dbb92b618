// SPDX-License-Identifier: MIT
/*
 * walk.c -- the row iterator of the whole-volume walks: the rows of
 * written blocks only, in order, the next blocks read ahead
 *
 * fsck's verify pass and the scrub (verify.c), the ditto check, the
 * device rebuild (rebuild.c) and the online replace (replace.c) visit
 * rows in order and skip the blocks the init map calls never written
 * (format.h: a block is the DG_CSUMS_PER_PAGE rows of one checksum page
 * index; dg_vol_pass_rows() says why the map can be trusted). Row r is
 * page data_start + r of every device, so a block is one contiguous
 * range on each device. Each time the walk enters a block it asks the
 * devices to read the next DG_WALK_AHEAD written blocks
 * (dg_dev_will_need()): on a page-cache device (an image file on a
 * disk, a block device) the reads of the blocks ahead overlap the
 * checking of this one, instead of one fault at a time waiting for the
 * disk. On pmem and tmpfs the hint does nothing: a load is the read.
 *
 * The daemon's scrub and replace walk a few rows at a time, each batch a
 * walk of its own, so the blocks ahead are those past the batch, and a
 * walk that begins where the last one ended goes on from what that one
 * asked for (vol->walk_end, walk_ahead) instead of asking again.
 */
#include <stdatomic.h>

#include "volume_i.h"

void dg_walk_init(struct dg_row_walk *w, struct dg_vol *vol, uint64_t first,
		  uint64_t end)
{
	uint64_t ahead = first;

	if (end > vol->sb.rows)
		end = vol->sb.rows;
	if (first == atomic_load_explicit(&vol->walk_end,
					  memory_order_relaxed)) {
		uint64_t a = atomic_load_explicit(&vol->walk_ahead,
						  memory_order_relaxed);

		if (a > ahead)
			ahead = a;
	}
	*w = (struct dg_row_walk){
		.vol = vol, .row = first, .gap = first, .end = end,
		.ahead = ahead, .devs = (1u << vol->ndev) - 1,
	};
	atomic_store_explicit(&vol->walk_end, end, memory_order_relaxed);
	atomic_store_explicit(&vol->walk_ahead, ahead, memory_order_relaxed);
}

/* The first row at or past row (below lim) of a written block the
 * walk keeps, else lim. */
static uint64_t next_kept(struct dg_row_walk *w, uint64_t row, uint64_t lim)
{
	for (;;) {
		row = dg_cmap_next_row(w->vol, row, lim);
		if (row >= lim || !w->keep ||
		    w->keep(w->arg, row / DG_CSUMS_PER_PAGE))
			return row;
		row = (row / DG_CSUMS_PER_PAGE + 1) * DG_CSUMS_PER_PAGE;
	}
}

/* Rows [row, end) of one block asked for on each device the walk reads
 * (and on the extra one). A device filling in (replace.c) is read only
 * below its fill row: not asked past it. */
static void hint_block(struct dg_row_walk *w, uint64_t row, uint64_t end)
{
	struct dg_vol *vol = w->vol;
	uint64_t off = dg_row_page(vol, row) << DG_PAGE_SHIFT;
	uint64_t len = (end - row) << DG_PAGE_SHIFT;

	for (unsigned d = 0; d < vol->ndev; d++)
		if ((w->devs & (1u << d)) && dg_dev_has_row(&vol->devs[d], row))
			dg_dev_will_need(&vol->devs[d], off, len);
	if (w->extra)
		dg_dev_will_need(w->extra, off, len);
}

/* The walk is at row: the written blocks up to DG_WALK_AHEAD past its
 * block (within the volume, past the walk's end) are asked for, each
 * once. */
static void read_ahead(struct dg_row_walk *w, uint64_t row)
{
	dg_walk_ahead(w, row, (row / DG_CSUMS_PER_PAGE + 1 + DG_WALK_AHEAD) *
				      DG_CSUMS_PER_PAGE);
}

void dg_walk_ahead(struct dg_row_walk *w, uint64_t row, uint64_t lim)
{
	uint64_t rows = w->vol->sb.rows;
	uint64_t r = w->ahead > row ? w->ahead : row;

	if (lim > rows)
		lim = rows;
	while (r < lim) {
		uint64_t b = next_kept(w, r, lim), e;

		if (b >= lim)
			break;
		e = (b / DG_CSUMS_PER_PAGE + 1) * DG_CSUMS_PER_PAGE;
		if (e > rows)
			e = rows;
		hint_block(w, b, e);
		r = e;
	}
	if (lim > w->ahead) {
		w->ahead = lim;
		atomic_store_explicit(&w->vol->walk_ahead, lim,
				      memory_order_relaxed);
	}
}

bool dg_walk_next(struct dg_row_walk *w, uint64_t *row)
{
	uint64_t r = w->row;

	w->gap = r;
	if (r >= w->end)
		return false;
	/* The first row, and each block's first: is its block written? */
	if (!w->started || r % DG_CSUMS_PER_PAGE == 0) {
		w->started = true;
		r = next_kept(w, r, w->end);
		if (r >= w->end) {
			w->row = w->end;
			return false;
		}
		read_ahead(w, r);
	}
	w->row = r + 1;
	*row = r;
	return true;
}

uint64_t dg_vol_used_rows(struct dg_vol *vol, uint64_t first, uint64_t end)
{
	uint64_t n = 0;

	if (end > vol->sb.rows)
		end = vol->sb.rows;
	if (!vol->redundancy)
		return first < end ? end - first : 0;
	for (uint64_t r = dg_cmap_next_row(vol, first, end); r < end;
	     r = dg_cmap_next_row(vol, r, end)) {
		uint64_t e = (r / DG_CSUMS_PER_PAGE + 1) * DG_CSUMS_PER_PAGE;

		if (e > end)
			e = end;
		n += e - r;
		r = e;
	}
	return n;
}

uint64_t dg_vol_read_hints(struct dg_vol *vol)
{
	uint64_t n = 0;

	for (unsigned d = 0; d < vol->ndev; d++)
		n += dg_dev_hints(&vol->devs[d]);
	return n;
}
