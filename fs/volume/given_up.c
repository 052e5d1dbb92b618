// SPDX-License-Identifier: MIT
/*
 * given_up.c -- a page fsck -y gave up, and the mark that says so
 *
 * A data page of a file no copy of which verifies (more faults in its
 * row than parity covers) is lost: its file reads EIO there, for ever.
 * Left as it is, every later fsck finds it again and exits 4, and its
 * row's parity may be damaged too, so the row's other pages have no
 * protection left. fsck -y gives such a page up:
 *
 *  - its bytes stay as the media holds them (wrong, but pinned);
 *  - the row's parity is recomputed from the row as it is, the page's
 *    bytes included, so every other page of the row is covered again;
 *  - its checksum entry becomes the "given up" checksum of those bytes:
 *    the page checksum XOR DG_CSUM_GIVEN_UP_TAG.
 *
 * The mark uses only what the format has (a checksum entry): to every
 * reader the page still fails its checksum, so it reads as EIO exactly
 * as before (G1: never wrong bytes), in this binary and in older ones.
 * Only fsck asks whether a failing page carries the mark: one that does
 * was given up by an earlier repair and is reported as a warning (the
 * loss was reported and counted when it was given up). A page whose
 * bytes hash to its checksum XOR the tag by chance is a 2^-64 event.
 *
 * Order, for a crash (repair.c's argument): parity first (pages, then
 * their checksums: dg_repair_parity), the mark last. A crash before the
 * mark leaves a page that fails its checksum, unmarked, which the next
 * fsck -y gives up again the same way.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csum.h"

static uint64_t dg_csum_given_up(const struct dg_vol *vol, unsigned dev,
				 uint64_t row, const void *page)
{
	uint64_t h = dg_csum_page(vol, dev, row, page) ^ DG_CSUM_GIVEN_UP_TAG;

	/* Never "never written"; 1 is no page's checksum of these bytes
	 * (that one differs from it by the tag). */
	return h == DG_CSUM_NONE ? 1 : h;
}

bool dg_csum_is_given_up(const struct dg_vol *vol, unsigned dev,
			 uint64_t row, uint64_t csum, const void *page)
{
	return csum != DG_CSUM_NONE &&
	       csum == dg_csum_given_up(vol, dev, row, page);
}

bool dg_page_given_up(struct dg_vol *vol, unsigned dev, uint64_t row)
{
	struct dg_dev *d = &vol->devs[dev];
	uint64_t csum;

	if (!vol->redundancy || dev >= vol->ndev || row >= vol->sb.rows ||
	    !dg_dev_has_row(d, row) ||
	    dg_csum_get(vol, dev, row, &csum) < 0 || csum == DG_CSUM_NONE)
		return false;
	return dg_csum_is_given_up(vol, dev, row, csum,
				   dg_dev_ptr(d, dg_row_page(vol, row)
							 << DG_PAGE_SHIFT));
}

int dg_row_give_up_page(struct dg_vol *vol, uint64_t vpn)
{
	struct dg_loc l;
	unsigned k = vol->k, m = k + vol->parity;
	uint64_t off, cs;
	uint8_t *mem, *pages[DG_MAX_DEVS];
	pthread_rwlock_t *lk;
	struct dg_flushset fs;
	int ret;

	if (vpn >= vol->vpns)
		return -EINVAL;
	if (vol->read_only)
		return -EROFS;
	if (!vol->redundancy)
		return -EOPNOTSUPP;	/* nothing fails verification */
	l = dg_vpn_loc(vol, vpn);
	off = dg_row_page(vol, l.row) << DG_PAGE_SHIFT;
	for (unsigned p = 0; p < m; p++)
		if (!vol->devs[dg_row_pos_dev(vol, l.row, p)].present)
			return -ENXIO;	/* degraded: rebuild the device first */
	mem = aligned_alloc(DG_PAGE_SIZE, (size_t)(m + 1) * DG_PAGE_SIZE);
	if (!mem)
		return -ENOMEM;
	lk = dg_row_lock(vol, l.row);
	pthread_rwlock_wrlock(lk);
	/* Only a page that is lost: one the read path can still bring
	 * back (parity, a ditto copy) is not this repair's to give up. */
	ret = dg_page_read_locked(vol, l.dev, l.row,
				  mem + (size_t)m * DG_PAGE_SIZE, &cs);
	if (ret == 0) {
		ret = -EAGAIN;
		goto out;
	}
	if (ret != -EIO)
		goto out;
	if (dg_page_given_up(vol, l.dev, l.row)) {
		ret = 0;		/* given up already */
		goto out;
	}
	/* Parity of the row as it is, the lost page's bytes included (as
	 * dg_row_replace_page() does): the other pages are covered again. */
	for (unsigned p = 0; p < m; p++) {
		pages[p] = mem + (size_t)p * DG_PAGE_SIZE;
		if (p < k)
			memcpy(pages[p],
			       dg_dev_ptr(&vol->devs[dg_row_pos_dev(vol, l.row,
								    p)],
					  off),
			       DG_PAGE_SIZE);
	}
	ret = 0;
	if (vol->parity) {
		dg_parity_compute(vol, pages, pages + k, DG_PAGE_SIZE);
		ret = dg_repair_parity(vol, l.row, pages + k);
	}
	if (!ret) {
		dg_flushset_init(&fs);
		ret = dg_csum_set(vol, l.dev, l.row,
				  dg_csum_given_up(vol, l.dev, l.row,
						   dg_dev_ptr(&vol->devs[l.dev],
							      off)),
				  &fs);
		dg_flushset_fini(&fs);
	}
	if (!ret && dg_latch_on(&vol->latch))
		ret = -EIO;	/* a persist failed: nothing was marked */
out:
	pthread_rwlock_unlock(lk);
	free(mem);
	if (!ret)
		dg_vol_log(vol, DG_LOG_NOTICE, "page vpn=%" PRIu64 " dev=%u row=%"
			   PRIu64 " given up: its bytes are lost (EIO)", vpn,
			   l.dev, l.row);
	return ret;
}
