// SPDX-License-Identifier: MIT
/* reclaim.c -- give unreadable free pages of a row fresh contents */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "volume_i.h"

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
