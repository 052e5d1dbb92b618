// SPDX-License-Identifier: MIT
/*
 * ditto.c -- extra copies of the metadata zone (the volume root, the
 * allocation bitmap and the filesystem's metadata) on other devices,
 * beside parity (format.h, docs/integrity.md).
 *
 * Parity survives `parity` faults in a row; two faults in the row of the
 * volume root used to lose the whole volume, and two in the row of an
 * inode table or directory page the files it described. A ditto copy is a plain copy
 * of the page, never trusted for itself: it is used only when it matches
 * the page's own checksum, read from the newest verified checksum copy,
 * so a copy that missed a write (stale) can never stand in for the page.
 * Stale or damaged copies are rewritten from the page by the scrub and
 * fsck (dg_ditto_check(), verify.c).
 */
#include <stdlib.h>
#include <string.h>

#include "csum.h"

bool dg_ditto_has(const struct dg_vol *vol, uint64_t vpn)
{
	return vol->redundancy && vpn < vol->sb.ditto_pages;
}

void dg_ditto_loc(struct dg_vol *vol, uint64_t vpn, unsigned j,
		  unsigned *dev, uint64_t *page)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);

	*dev = (l.dev + j) % vol->ndev;
	/* With a zone, by row: K pages a row, each copy on another device,
	 * so ditto_copies slots a row per device hold them all. */
	if (vol->sb.incompat & DG_FEAT_INCOMPAT_META_ZONE)
		*page = vol->sb.ditto_start + l.row * vol->sb.ditto_copies +
			(j - 1);
	else
		*page = vol->sb.ditto_start + vpn;
}

/* Device and byte offset of copy j (1..ditto_copies) of vpn. */
struct dg_dev *dg_ditto_copy_at(struct dg_vol *vol, uint64_t vpn, unsigned j,
				uint64_t *off)
{
	unsigned dev;
	uint64_t page;

	dg_ditto_loc(vol, vpn, j, &dev, &page);
	*off = page << DG_PAGE_SHIFT;
	return vol->devs[dev].present ? &vol->devs[dev] : NULL;
}

int dg_ditto_write(struct dg_vol *vol, uint64_t vpn, const void *page,
		   struct dg_flushset *fs)
{
	return dg_ditto_write_span(vol, vpn, page, 0, DG_PAGE_SIZE, fs);
}

/* Whether the copy at p holds page's bytes outside [lo, hi). */
static bool current_outside(const uint8_t *p, const uint8_t *page,
			    uint32_t lo, uint32_t hi)
{
	return !memcmp(p, page, lo) &&
	       !memcmp(p + hi, page + hi, DG_PAGE_SIZE - hi);
}

int dg_ditto_write_span(struct dg_vol *vol, uint64_t vpn, const void *page,
			uint32_t lo, uint32_t hi, struct dg_flushset *fs)
{
	for (unsigned j = 1; j <= vol->sb.ditto_copies; j++) {
		uint64_t off, at = 0, len = DG_PAGE_SIZE;
		struct dg_dev *d = dg_ditto_copy_at(vol, vpn, j, &off);
		int ret;

		if (!d)
			continue;
		/* Only [lo, hi) where the copy holds the new page's bytes
		 * everywhere else; else the whole page: a copy that was
		 * stale or damaged before (missed by a check while its
		 * page was free, say) is then right again after any
		 * update, so fsck converges. Either way the copy ends
		 * equal to the page, and a torn store leaves it failing
		 * the page's checksum, which it must match to be used
		 * (dg_ditto_read()). */
		if (lo < hi && hi <= DG_PAGE_SIZE &&
		    (lo > 0 || hi < DG_PAGE_SIZE) &&
		    current_outside(dg_dev_ptr(d, off), page, lo, hi)) {
			at = lo;
			len = hi - lo;
		}
		ret = dg_dev_write(d, off + at, (const uint8_t *)page + at,
				   len);
		if (ret)
			return ret;
		dg_flushset_add(fs, d->idx, off + at, len);
	}
	return 0;
}

int dg_ditto_repair(struct dg_vol *vol, uint64_t vpn, const void *page)
{
	int ret = 0;

	for (unsigned j = 1; dg_ditto_has(vol, vpn) &&
			     j <= vol->sb.ditto_copies && !ret; j++) {
		uint64_t off;
		struct dg_dev *d = dg_ditto_copy_at(vol, vpn, j, &off);

		if (d)
			ret = dg_repair_write(vol, d->idx, off, page,
					      DG_PAGE_SIZE);
	}
	return ret;
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
		struct dg_dev *d = dg_ditto_copy_at(vol, vpn, j, &off);

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
