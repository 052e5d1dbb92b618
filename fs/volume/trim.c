// SPDX-License-Identifier: MIT
/* trim.c -- give the space of free rows back to sparse device images */
#include <stdlib.h>
#include <string.h>

#include "csum.h"
#include "volume_i.h"

/*
 * FITRIM (fstrim(8)) for a mounted volume. A row whose every data page
 * is free holds nothing anyone will read: its pages are given back to
 * the device files (punched: they read as zeros after, and take no
 * space in a sparse image).
 *
 * Crash safety, in two steps under the row's lock (the locks of up to
 * DG_TRIM_BATCH rows, given back together: dg_trim_rows()):
 *  1. the data pages are written as zeros through the update path, as
 *     a new row (apply.c, new_rows_first()): nothing live is in the
 *     row, so its pages count as new to the update. An entry reserves
 *     the row, the zeros, the parity computed from them (zeros) and
 *     their checksums are written and made durable, and the update's
 *     entry then carries the checksums and no bytes -- where journaling
 *     the zeros stored them on parity + 1 journal copies besides. Every
 *     page of the row, parity included, is then a page of zeros with
 *     its checksum; a crash before the update's entry leaves the row as
 *     the replay of the reservation finds it, consistent and free;
 *  2. the pages are punched (dg_dev_punch()): they read as the zeros
 *     their checksums say, so a crash before, during or after the
 *     punch leaves a consistent row, and the punch needs no ordering
 *     or durability of its own.
 * Why not "never written" (DG_CSUM_NONE checksums, format.h), which
 * would say the same with no checksum to keep: the checksum pages of
 * a row's devices are separate pages with several copies each, and
 * dg_csum_set_batch() writes them one after another outside the
 * journal. A crash between two copies leaves the older one stale, which
 * is exactly what a lost write looks like, and fsck -n reports it
 * until a repair rewrites it. Step 1's checksums ride on a journal
 * entry, which replay completes. A row already in that state (every
 * checksum that of a page of zeros, or NONE) is skipped: nothing to
 * give back.
 *
 * The race is with an allocation, as for a lost page reset
 * (lost_page.c): the bitmap is looked at under the row's lock, and a
 * page allocated after the look gets its write after the trim.
 * Metadata-zone rows (and the root and bitmap rows of a volume without
 * a zone) are never trimmed: their ditto copies live outside the rows.
 */

/* vpns below this are never trimmed: the metadata zone, or the root and
 * bitmap with their ditto copies. */
static uint64_t guard_vpns(const struct dg_vol *vol)
{
	uint64_t g = vol->zone_vpns;

	if (vol->sb.ditto_pages > g)
		g = vol->sb.ditto_pages;
	return vol->meta_vpns > g ? vol->meta_vpns : g;
}

/* Whether every data page of row is free and within [lo, hi). */
static bool row_free(struct dg_vol *vol, uint64_t row, uint64_t lo,
		     uint64_t hi)
{
	uint64_t guard = guard_vpns(vol);

	for (unsigned dev = 0; dev < vol->ndev; dev++) {
		uint64_t v;

		if (dg_vol_row_is_parity(vol, row, dev))
			continue;
		v = dg_loc_vpn(vol, dev, row);
		if (v < guard || v < lo || v >= hi || v >= vol->vpns ||
		    dg_vpn_allocated(vol, v))
			return false;
	}
	return true;
}

/* Whether row is given back already: every checksum that of a page of
 * zeros (step 1, trimmed before), or NONE (never written). Undecidable
 * (a checksum page that cannot be read, which the read path reports)
 * counts as given back: nothing is done to it. Row lock held. */
static bool row_blank(struct dg_vol *vol, uint64_t row)
{
	bool blank = true;

	for (unsigned dev = 0; dev < vol->ndev && blank; dev++) {
		struct dg_csum_cursor cur;
		uint64_t cs;

		dg_csum_cursor_init(&cur);
		if (dg_csum_lookup(vol, &cur, dev, row, &cs) == 0)
			blank = dg_csum_blank(vol, dev, row, cs);
		dg_csum_cursor_fini(&cur);
	}
	return blank;
}

static int lock_cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/*
 * Steps 1 and 2 for rows [row0, row0 + n), n <= DG_TRIM_BATCH, under their
 * locks (taken in ascending order, as apply.c takes them): each row
 * whose data pages are all free and within [lo, hi), and not given back
 * already, is written as zeros -- all of them in one update -- and then
 * punched. *done gets the rows given back; 0, or a negative errno (the
 * volume refused a write).
 */
int dg_trim_rows(struct dg_vol *vol, uint64_t row0, unsigned n, uint64_t lo,
		 uint64_t hi, unsigned *done)
{
	struct dg_range r[DG_TRIM_BATCH * DG_MAX_DEVS];
	bool fresh[DG_TRIM_BATCH * DG_MAX_DEVS];
	uint64_t rows[DG_TRIM_BATCH];
	unsigned locks[DG_TRIM_BATCH], nl = 0, nr = 0, nrows = 0;
	int ret = 0;

	*done = 0;
	if (n > DG_TRIM_BATCH)
		n = DG_TRIM_BATCH;
	for (unsigned i = 0; i < n; i++)
		locks[nl++] = (unsigned)((row0 + i) % DG_ROW_LOCKS);
	qsort(locks, nl, sizeof(*locks), lock_cmp);
	for (unsigned i = 0; i < nl; i++)
		if (!i || locks[i] != locks[i - 1])
			pthread_rwlock_wrlock(&vol->row_locks[locks[i]]);
	if (vol->repl)
		ret = -EBUSY;
	for (unsigned i = 0; i < n && !ret; i++) {
		uint64_t row = row0 + i;

		if (!row_free(vol, row, lo, hi) || row_blank(vol, row))
			continue;
		rows[nrows++] = row;
		for (unsigned dev = 0; dev < vol->ndev; dev++)
			if (!dg_vol_row_is_parity(vol, row, dev)) {
				fresh[nr] = true;
				r[nr++] = (struct dg_range){
					dg_loc_vpn(vol, dev, row), 0,
					DG_PAGE_SIZE, dg_zero_page };
			}
	}
	if (!ret && nr)
		ret = dg_apply_locked(vol, r, nr, fresh);
	for (unsigned i = 0; i < nrows && !ret; i++)
		for (unsigned dev = 0; dev < vol->ndev && !ret; dev++) {
			ret = dg_dev_punch(&vol->devs[dev],
					   dg_row_page(vol, rows[i]) *
						   DG_PAGE_SIZE,
					   DG_PAGE_SIZE);
			/* A block device keeps its zeros. */
			if (ret == -EOPNOTSUPP)
				ret = 0;
		}
	for (unsigned i = 0; i < nl; i++)
		if (!i || locks[i] != locks[i - 1])
			pthread_rwlock_unlock(&vol->row_locks[locks[i]]);
	if (!ret)
		*done = nrows;
	return ret;
}

int dg_vol_trim(struct dg_vol *vol, uint64_t start, uint64_t len,
		uint64_t minlen, uint64_t *trimmed)
{
	uint64_t lo, hi, row_bytes, rows = dg_vol_rows(vol);
	int ret = 0;

	*trimmed = 0;
	if (!vol->redundancy)
		return -EOPNOTSUPP; /* no checksum says a row was given back */
	if (vol->read_only)
		return -EROFS;
	/* Without the allocation state every page would look free
	 * (dg_vpn_allocated() answers false): trim nothing rather than
	 * take a live page for a free one. */
	if (!vol->bm)
		return -EIO;
	if (vol->degraded || dg_vol_replacing(vol) >= 0)
		return -EBUSY;
	lo = (start + DG_PAGE_SIZE - 1) / DG_PAGE_SIZE;
	hi = len > UINT64_MAX - start ? UINT64_MAX
				       : (start + len) / DG_PAGE_SIZE;
	row_bytes = (uint64_t)vol->k * DG_PAGE_SIZE;
	for (uint64_t row = 0; row < rows && !ret;) {
		uint64_t end = dg_cmap_next_row(vol, row, rows);

		/* Rows of a checksum page index never written were never
		 * written either (a big new volume is mostly such rows):
		 * nothing to give back, and passed over a block at a time,
		 * so that the work is what the volume holds. */
		if (end > row) {
			row = end;
			continue;
		}
		/* A run of free written rows, looked at unlocked: minlen is
		 * about runs, the locked look below decides each row. */
		while (end < rows && dg_cmap_test(vol, end / DG_CSUMS_PER_PAGE) &&
		       row_free(vol, end, lo, hi))
			end++;
		if (end == row) {
			row++;
			continue;
		}
		if ((end - row) * row_bytes < minlen) {
			row = end;
			continue;
		}
		while (row < end && !ret) {
			unsigned n = end - row < DG_TRIM_BATCH
					     ? (unsigned)(end - row)
					     : DG_TRIM_BATCH;
			unsigned done;

			ret = dg_trim_rows(vol, row, n, lo, hi, &done);
			*trimmed += done * row_bytes;
			row += n;
		}
	}
	if (*trimmed)
		dg_vol_log(vol, DG_LOG_NOTICE, "trim: %" PRIu64 " bytes of free "
			   "rows given back to the devices", *trimmed);
	return ret;
}
