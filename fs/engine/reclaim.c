// SPDX-License-Identifier: MIT
/* reclaim.c -- give unreadable free pages of a row fresh contents */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine_i.h"

/*
 * A page that no copy verifies stays bad after its file is deleted: the
 * checksum still says what it should hold, parity still covers it, and
 * every scrub and fsck reports it, for ever. Once nothing uses it, what
 * it holds does not matter. This rewrites the row whole with one
 * dg_apply(): the free data pages as zeros, the pages in use as they
 * read (verified, repaired from parity where they can be), so parity is
 * computed from the new data alone and no unreadable old page or old
 * parity is read (apply.c, full-row writes). Returns 0, -EIO when a page
 * in use cannot be read (that is data lost, not this repair's to hide),
 * -EROFS on a read-only or degraded volume, -EINVAL for a row out of
 * range. A page counts as in use when the allocation bitmap says so or,
 * given cls (dg_check_classify()), when a structure uses it: a page a
 * file still maps is never zeroed, whatever the bitmap says. The caller
 * must be the volume's only writer (fsck): a page in
 * use is read and written back, and a change in between would be lost.
 */
int dg_vol_reset_free_pages(struct dg_vol *vol, uint64_t row,
			    const uint8_t *cls)
{
	struct dg_range r[DG_MAX_DEVS];
	uint8_t *buf;
	unsigned n = 0;
	int ret = 0;

	if (row >= vol->sb.rows)
		return -EINVAL;
	if (vol->read_only || vol->degraded || !vol->redundancy)
		return -EROFS;
	buf = aligned_alloc(DG_PAGE_SIZE, (size_t)vol->ndev * DG_PAGE_SIZE);
	if (!buf)
		return -ENOMEM;
	for (unsigned dev = 0; dev < vol->ndev; dev++) {
		uint64_t vpn;
		uint8_t *pg = buf + (size_t)n * DG_PAGE_SIZE;

		if (dg_vol_row_is_parity(vol, row, dev))
			continue;
		vpn = dg_loc_vpn(vol, dev, row);
		if (dg_vpn_allocated(vol, vpn) ||
		    (cls && cls[vpn] != DG_PC_FREE)) {
			ret = dg_read(vol, vpn, 1, pg);
			if (ret)
				goto out;
		} else {
			memset(pg, 0, DG_PAGE_SIZE);
		}
		r[n++] = (struct dg_range){ vpn, 0, DG_PAGE_SIZE, pg };
	}
	ret = dg_apply(vol, r, n);
out:
	free(buf);
	return ret;
}

/*
 * The same for a mounted volume, one page: the daemon calls it for a
 * data page it saw fail beyond parity once no file holds it (the file
 * was deleted or truncated, or the scrub met it free), so the error
 * goes away without waiting for an offline fsck.
 *
 * The race is with an allocation: a page zeroed here must not be one a
 * writer has just been given. Everything is decided and written under
 * alloc_lock and then the row's lock, in that order (dg_txn_commit()
 * applies under alloc_lock too, so the order is the same):
 *  - dg_alloc() marks pages in use under alloc_lock before any update
 *    writes them, so a page seen free here has no writer yet, and one
 *    allocated after this returns gets its write after the zeros;
 *  - a free clears the bits in dg_txn_commit() under alloc_lock, in the
 *    same critical section as the update that stops using the page, so
 *    a page seen free here is one no committed structure points at;
 *  - libcommit's commits and file writes change pages only through
 *    dg_apply(), which takes the row lock: the pages in use that this
 *    rewrites as they read cannot change between the read and the
 *    write. No filesystem lock is needed for any of it.
 * Returns 0 (the row rewritten), -EBUSY when vpn is in use, -EIO when a
 * page in use in its row cannot be read (lost data: not this repair's
 * to hide), -EROFS read-only or degraded, -EINVAL out of range.
 */
int dg_vol_reset_lost_page(struct dg_vol *vol, uint64_t vpn)
{
	struct dg_range r[DG_MAX_DEVS];
	struct dg_loc l;
	pthread_rwlock_t *lk;
	uint8_t *buf;
	unsigned n = 0;
	int ret = 0;

	if (vpn < vol->meta_vpns || vpn >= vol->vpns)
		return -EINVAL;
	if (vol->read_only || vol->degraded || !vol->redundancy)
		return -EROFS;
	buf = aligned_alloc(DG_PAGE_SIZE, (size_t)vol->ndev * DG_PAGE_SIZE);
	if (!buf)
		return -ENOMEM;
	l = dg_vpn_loc(vol, vpn);
	lk = dg_row_lock(vol, l.row);
	pthread_mutex_lock(&vol->alloc_lock);
	pthread_rwlock_wrlock(lk);
	for (unsigned dev = 0; dev < vol->ndev && !ret; dev++) {
		uint8_t *pg = buf + (size_t)n * DG_PAGE_SIZE;
		uint64_t v, cs;

		if (dg_vol_row_is_parity(vol, l.row, dev))
			continue;
		v = dg_loc_vpn(vol, dev, l.row);
		if (v < vol->meta_vpns ||
		    (vol->bitmap[v / 8] & (1u << (v % 8)))) {
			if (v == vpn)
				ret = -EBUSY;
			else if (dg_page_read_locked(vol, dev, l.row, pg, &cs))
				ret = -EIO;
		} else {
			memset(pg, 0, DG_PAGE_SIZE);
		}
		r[n++] = (struct dg_range){ v, 0, DG_PAGE_SIZE, pg };
	}
	/* Whole row: parity from the new pages alone, nothing unreadable
	 * is read (apply.c). */
	if (!ret)
		ret = dg_apply_locked(vol, r, n);
	pthread_rwlock_unlock(lk);
	pthread_mutex_unlock(&vol->alloc_lock);
	free(buf);
	if (!ret)
		dg_log(DG_LOG_NOTICE, "free page vpn=%" PRIu64 " dev=%u row=%"
		       PRIu64 " reset: no file held it", vpn, l.dev, l.row);
	return ret;
}
