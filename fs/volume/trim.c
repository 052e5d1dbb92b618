// SPDX-License-Identifier: MIT
/* trim.c -- give the space of free rows back to sparse device images */
#include <stdlib.h>
#include <string.h>

#include "csum.h"
#include "volume_i.h"

/*
 * FITRIM (fstrim(8)) for a mounted volume. A row whose every data page
 * is free holds nothing anyone will read: it is made blank, as a row
 * never written is (format.h: every checksum DG_CSUM_NONE, so its pages
 * read as zeros and their media contents are ignored, in parity as
 * everywhere else), and its pages are punched out of the device files.
 *
 * Crash safety, in three steps under the row's lock, each leaving a row
 * every reader and fsck finds consistent:
 *  1. the data pages are rewritten as zeros through the update path
 *     (journaled, parity recomputed from the new pages: zeros);
 *  2. every checksum of the row, parity included, becomes NONE
 *     (dg_csum_set_batch(): durable on return). The checksum pages of
 *     different devices are written one after another, so a crash may
 *     leave some NONE and some "a page of zeros": both read as zeros,
 *     and zero parity covers either;
 *  3. the pages are punched (dg_dev_punch()). Punched bytes read as
 *     zeros, which match the step 1 checksums too, so the punch needs
 *     no ordering of its own.
 * A row already blank is skipped: nothing to give back (a crash between
 * 2 and 3 leaves such a row unpunched until it is written and freed
 * again; its space is lost to the image, never its data).
 *
 * The race is with an allocation, as for a lost page reset
 * (lost_page.c): the bitmap is looked at under the row's lock, and a
 * page allocated after the look gets its write after the trim.
 * Metadata-zone rows (and the root and bitmap rows of a volume without
 * a zone) are never trimmed: their ditto copies live outside the rows
 * and would not be blank with them.
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

/* Whether every checksum of row is NONE already; -EIO when one cannot
 * be looked up. Row lock held. */
static int row_blank(struct dg_vol *vol, uint64_t row)
{
	int ret = 1;

	for (unsigned dev = 0; dev < vol->ndev && ret == 1; dev++) {
		struct dg_csum_cursor cur;
		uint64_t cs;

		dg_csum_cursor_init(&cur);
		if (dg_csum_lookup(vol, &cur, dev, row, &cs) < 0)
			ret = -EIO;
		else if (cs != DG_CSUM_NONE)
			ret = 0;
		dg_csum_cursor_fini(&cur);
	}
	return ret;
}

/* Steps 1 to 3 for one row, its lock held: 1 trimmed, 0 nothing to do,
 * or a negative errno (the volume refused a write). */
static int trim_row_locked(struct dg_vol *vol, uint64_t row, uint64_t lo,
			   uint64_t hi, const uint8_t *zeros)
{
	struct dg_range r[DG_MAX_DEVS];
	struct dg_csum_upd u[DG_MAX_DEVS];
	unsigned n = 0;
	int ret;

	if (vol->repl)
		return -EBUSY;
	if (!row_free(vol, row, lo, hi))
		return 0;
	/* Blank already, or a checksum page that cannot be read (the
	 * read path reports it): nothing to do here either way. */
	if (row_blank(vol, row))
		return 0;
	for (unsigned dev = 0; dev < vol->ndev; dev++)
		if (!dg_vol_row_is_parity(vol, row, dev))
			r[n++] = (struct dg_range){ dg_loc_vpn(vol, dev, row),
						    0, DG_PAGE_SIZE, zeros };
	ret = dg_apply_locked(vol, r, n);
	if (ret)
		return ret;
	for (unsigned dev = 0; dev < vol->ndev; dev++)
		u[dev] = (struct dg_csum_upd){ dev, row, DG_CSUM_NONE };
	ret = dg_csum_set_batch(vol, u, vol->ndev, NULL);
	if (ret)
		return ret;
	for (unsigned dev = 0; dev < vol->ndev; dev++) {
		ret = dg_dev_punch(&vol->devs[dev],
				   dg_row_page(vol, row) * DG_PAGE_SIZE,
				   DG_PAGE_SIZE);
		/* A block device keeps its bytes; they are ignored. */
		if (ret && ret != -EOPNOTSUPP)
			return ret;
	}
	return 1;
}

int dg_vol_trim(struct dg_vol *vol, uint64_t start, uint64_t len,
		uint64_t minlen, uint64_t *trimmed)
{
	uint64_t lo, hi, row_bytes, rows = dg_vol_rows(vol);
	uint8_t *zeros;
	int ret = 0;

	*trimmed = 0;
	if (!vol->redundancy)
		return -EOPNOTSUPP; /* nothing says "never written" */
	if (vol->read_only)
		return -EROFS;
	if (vol->degraded || dg_vol_replacing(vol) >= 0)
		return -EBUSY;
	lo = (start + DG_PAGE_SIZE - 1) / DG_PAGE_SIZE;
	hi = len > UINT64_MAX - start ? UINT64_MAX
				       : (start + len) / DG_PAGE_SIZE;
	row_bytes = (uint64_t)vol->k * DG_PAGE_SIZE;
	zeros = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!zeros)
		return -ENOMEM;
	memset(zeros, 0, DG_PAGE_SIZE);
	for (uint64_t row = 0; row < rows && !ret;) {
		uint64_t end = row;

		/* A run of free rows, looked at unlocked: minlen is about
		 * runs, the locked look below decides each row. */
		while (end < rows && row_free(vol, end, lo, hi))
			end++;
		if (end == row) {
			row++;
			continue;
		}
		if ((end - row) * row_bytes < minlen) {
			row = end;
			continue;
		}
		for (; row < end && !ret; row++) {
			pthread_rwlock_t *lk = dg_row_lock(vol, row);
			int r;

			pthread_rwlock_wrlock(lk);
			r = trim_row_locked(vol, row, lo, hi, zeros);
			pthread_rwlock_unlock(lk);
			if (r < 0)
				ret = r;
			else if (r)
				*trimmed += row_bytes;
		}
	}
	free(zeros);
	if (*trimmed)
		dg_vol_log(vol, DG_LOG_NOTICE, "trim: %" PRIu64 " bytes of free "
			   "rows given back to the devices", *trimmed);
	return ret;
}
