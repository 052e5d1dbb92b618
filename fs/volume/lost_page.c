// SPDX-License-Identifier: MIT
/* lost_page.c -- give a lost data page no one holds fresh contents, live */
#include <stdlib.h>
#include <string.h>

#include "bmap.h"

/*
 * A page that no copy verifies stays bad after its file is deleted: the
 * checksum still says what it should hold, parity still covers it, and
 * every scrub and fsck reports it, for ever. Once nothing uses it, what
 * it holds does not matter. This rewrites the row whole with one
 * update: the free data pages as zeros, the pages in use as they read
 * (verified, repaired from parity where they can be), so parity is
 * computed from the new data alone and no unreadable old page or old
 * parity is read (apply.c, full-row writes).
 *
 * The registry of lost pages (lost_reg.c, for the daemon) calls it for a
 * data page seen to fail beyond parity once no file holds it (the file
 * was deleted or truncated, or the scrub met it free), so the error goes
 * away without waiting for an offline fsck;
 * fsck calls it offline (fs/fsys/reclaim.c, with what its walk found in
 * use). In the volume layer because everything it decides on is the
 * volume's: the allocation bitmap, the row locks, the update path.
 *
 * The race is with an allocation: a page zeroed here must not be one a
 * writer has just been given. Everything is decided and written under
 * the row's lock, the bitmap read under alloc_lock inside it (the order
 * dg_txn_commit()'s updates take them in):
 *  - dg_alloc() marks pages in use under alloc_lock before any update
 *    writes them, and every write of a page takes its row's lock: a
 *    page seen free here has no writer yet, and one allocated after the
 *    look gets its write after the zeros;
 *  - a free clears the bits only once the update that stops using the
 *    page is durable (dg_txn_commit()), so a page seen free here is one
 *    no committed structure points at;
 *  - libcommit's commits and file writes change pages only through
 *    dg_apply(), which takes the row lock: the pages in use that this
 *    rewrites as they read cannot change between the read and the
 *    write. No filesystem lock is needed for any of it.
 * Returns 0 (the row rewritten), -EBUSY when vpn is in use, -EIO when a
 * page in use in its row cannot be read (lost data: not this repair's
 * to hide), -EROFS read-only or degraded, -EINVAL out of range.
 */
int dg_vol_reset_free_page(struct dg_vol *vol, uint64_t vpn,
			   dg_vpn_used_fn is_used, const void *arg)
{
	struct dg_range r[DG_MAX_DEVS];
	bool used[DG_MAX_DEVS];
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
	pthread_rwlock_wrlock(lk);
	pthread_mutex_lock(&vol->alloc_lock);
	for (unsigned dev = 0; dev < vol->ndev; dev++) {
		uint64_t v = dg_loc_vpn(vol, dev, l.row);

		used[dev] = !dg_vol_row_is_parity(vol, l.row, dev) &&
			    (v < vol->meta_vpns || dg_bm_get(vol, v));
	}
	pthread_mutex_unlock(&vol->alloc_lock);
	/* The caller's knowledge: not under alloc_lock (it may take its
	 * own locks); it only ever adds pages in use. */
	for (unsigned dev = 0; dev < vol->ndev && is_used; dev++)
		if (!used[dev] && !dg_vol_row_is_parity(vol, l.row, dev))
			used[dev] = is_used(arg, dg_loc_vpn(vol, dev, l.row));
	for (unsigned dev = 0; dev < vol->ndev && !ret; dev++) {
		uint8_t *pg = buf + (size_t)n * DG_PAGE_SIZE;
		uint64_t v, cs;

		if (dg_vol_row_is_parity(vol, l.row, dev))
			continue;
		v = dg_loc_vpn(vol, dev, l.row);
		if (used[dev]) {
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
		ret = dg_apply_locked(vol, r, n, NULL);
	pthread_rwlock_unlock(lk);
	free(buf);
	return ret;
}

int dg_vol_reset_lost_page(struct dg_vol *vol, uint64_t vpn)
{
	int ret = dg_vol_reset_free_page(vol, vpn, NULL, NULL);

	if (!ret) {
		struct dg_loc l = dg_vpn_loc(vol, vpn);

		dg_vol_log(vol, DG_LOG_NOTICE, "free page vpn=%" PRIu64
			   " dev=%u row=%" PRIu64 " reset: no file held it",
			   vpn, l.dev, l.row);
	}
	return ret;
}
