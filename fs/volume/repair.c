// SPDX-License-Identifier: MIT
/*
 * repair.c -- the one repair path: every write outside an update
 *
 * An update (dg_apply) changes what the volume holds, so it is journaled.
 * A repair changes nothing the volume holds: it puts back bytes that are
 * already proven elsewhere -- a page rebuilt from parity or read from a
 * ditto copy that matches the page's verified checksum, a checksum page
 * copy from a newer verified copy, a superblock or journal header from
 * its other copies, parity from data that verified. Read-repair, the
 * scrub, fsck and the device rebuild all write through here.
 *
 * The crash argument, once for all of them. A repair writes whole pages
 * (or a whole superblock or header) whose contents are proven without
 * them, and is idempotent. A crash before it is durable leaves the page as
 * it was, or torn: either way it fails its own verification as before, and
 * the next read, scrub or fsck finds it again and repeats the repair.
 * Nothing else is derived from a repair having happened, so no journal
 * entry is needed. The one repair with two steps, parity from verified
 * data (dg_repair_parity), writes the parity pages durably, then their
 * checksums: a crash in between leaves parity that fails its checksum
 * (old bytes under a new checksum or new bytes under the old one, in
 * whatever order), never parity that verifies and disagrees with the
 * data (G2); the next scrub recomputes it the same way.
 *
 * docs/integrity.md has the rules that decide what is proven.
 */
#include <string.h>

#include "csum.h"

void dg_repair_write(struct dg_vol *vol, unsigned dev, uint64_t off,
		     const void *img, size_t len)
{
	struct dg_dev *d = &vol->devs[dev];

	if (!d->present)
		return;
	dg_dev_write(d, off, img, len);
	dg_dev_persist(d, off, len);
}

void dg_repair_page(struct dg_vol *vol, unsigned dev, uint64_t row,
		    const void *img)
{
	dg_repair_write(vol, dev, dg_row_page(vol, row) << DG_PAGE_SHIFT, img,
			DG_PAGE_SIZE);
}

int dg_repair_parity(struct dg_vol *vol, uint64_t row, uint8_t *const *calc)
{
	struct dg_flushset fs;
	int ret = 0;

	for (unsigned j = 0; j < vol->parity; j++)
		dg_repair_page(vol, dg_row_parity_dev(vol, row, j), row,
			       calc[j]);
	dg_flushset_init(&fs);
	for (unsigned j = 0; j < vol->parity && !ret; j++) {
		unsigned dev = dg_row_parity_dev(vol, row, j);

		if (vol->devs[dev].present)
			ret = dg_csum_set(vol, dev, row,
					  dg_csum_page(vol, dev, row, calc[j]),
					  &fs);
	}
	dg_flushset_fini(&fs);
	return ret;
}
