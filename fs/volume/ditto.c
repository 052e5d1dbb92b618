// SPDX-License-Identifier: MIT
/*
 * ditto.c -- extra copies of the volume's own metadata (root, allocation
 * bitmap) on other devices, beside parity (format.h, docs/integrity.md).
 *
 * Parity survives `parity` faults in a row; two faults in the row of the
 * volume root used to lose the whole volume. A ditto copy is a plain copy
 * of the page, never trusted for itself: it is used only when it matches
 * the page's own checksum, read from the newest verified checksum copy,
 * so a copy that missed a write (stale) can never stand in for the page.
 * Stale or damaged copies are rewritten from the page by the scrub and
 * fsck (dg_ditto_check()).
 */
#include <stdlib.h>
#include <string.h>

#include "csum.h"

bool dg_ditto_has(const struct dg_vol *vol, uint64_t vpn)
{
	return vol->redundancy && vpn < vol->sb.ditto_pages;
}

/* Device and byte offset of copy j (1..ditto_copies) of vpn. */
static struct dg_dev *copy_at(struct dg_vol *vol, uint64_t vpn, unsigned j,
			      uint64_t *off)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);
	unsigned dev = (l.dev + j) % vol->ndev;

	*off = (vol->sb.ditto_start + vpn) << DG_PAGE_SHIFT;
	return vol->devs[dev].present ? &vol->devs[dev] : NULL;
}

void dg_ditto_write(struct dg_vol *vol, uint64_t vpn, const void *page,
		    struct dg_flushset *fs)
{
	for (unsigned j = 1; j <= vol->sb.ditto_copies; j++) {
		uint64_t off;
		struct dg_dev *d = copy_at(vol, vpn, j, &off);

		if (!d)
			continue;
		dg_dev_write(d, off, page, DG_PAGE_SIZE);
		dg_flushset_add(fs, d->idx, off, DG_PAGE_SIZE);
	}
}

int dg_ditto_read(struct dg_vol *vol, unsigned dev, uint64_t row,
		  uint64_t csum, void *buf)
{
	uint64_t vpn;

	if (dg_row_dev_is_parity(vol, row, dev))
		return -EIO;
	vpn = dg_loc_vpn(vol, dev, row);
	if (!dg_ditto_has(vol, vpn) || csum == DG_CSUM_NONE)
		return -EIO;
	for (unsigned j = 1; j <= vol->sb.ditto_copies; j++) {
		uint64_t off;
		struct dg_dev *d = copy_at(vol, vpn, j, &off);

		if (!d)
			continue;
		memcpy(buf, dg_dev_ptr(d, off), DG_PAGE_SIZE);
		/* The page's own address-seeded checksum, not the copy's:
		 * only the current bytes of this very page match it. */
		if (dg_csum_page(vol, dev, row, buf) == csum)
			return 0;
	}
	return -EIO;
}

int dg_ditto_check(struct dg_vol *vol, bool repair, uint64_t *stale)
{
	uint8_t *page = aligned_alloc(DG_PAGE_SIZE, 2 * DG_PAGE_SIZE);
	uint8_t *copy = page + DG_PAGE_SIZE;
	int ret = 0;

	*stale = 0;
	if (!page)
		return -ENOMEM;
	for (uint64_t vpn = 0; vol->redundancy && vpn < vol->sb.ditto_pages &&
			       vpn < vol->vpns; vpn++) {
		struct dg_loc l = dg_vpn_loc(vol, vpn);
		pthread_rwlock_t *lk = dg_row_lock(vol, l.row);
		uint64_t csum;

		pthread_rwlock_wrlock(lk);
		if (dg_page_read_locked(vol, l.dev, l.row, page, &csum) < 0 ||
		    csum == DG_CSUM_NONE) {
			/* unreadable: counted by the read path; never
			 * written: the copies are never read */
			pthread_rwlock_unlock(lk);
			continue;
		}
		for (unsigned j = 1; j <= vol->sb.ditto_copies; j++) {
			uint64_t off;
			struct dg_dev *d = copy_at(vol, vpn, j, &off);

			if (!d)
				continue;
			memcpy(copy, dg_dev_ptr(d, off), DG_PAGE_SIZE);
			if (!memcmp(copy, page, DG_PAGE_SIZE))
				continue;
			(*stale)++;
			dg_fault_note(vol, DG_FAULT_DETECTED, d->idx,
				      off >> DG_PAGE_SHIFT, "ditto",
				      "copy differs from the page");
			if (!repair || vol->read_only)
				continue;
			dg_repair_write(vol, d->idx, off, page, DG_PAGE_SIZE);
			dg_fault_note(vol, DG_FAULT_REPAIRED, d->idx,
				      off >> DG_PAGE_SHIFT, "ditto",
				      "rewritten from the page");
		}
		pthread_rwlock_unlock(lk);
	}
	free(page);
	return ret;
}
