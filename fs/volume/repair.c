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
 * data (dg_repair_parity, verify.c), writes the parity pages durably,
 * then their checksums: a crash in between leaves parity that fails its
 * checksum (old bytes under a new checksum or new bytes under the old
 * one, in whatever order), never parity that verifies and disagrees
 * with the data (G2); the next scrub recomputes it the same way. After a
 * persist failed (media.h) nothing more is repaired.
 *
 * docs/integrity.md has the rules that decide what is proven.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "csum.h"

void dg_vol_set_consent(struct dg_vol *vol, dg_chk_ask_fn ask, void *arg)
{
	vol->consent = ask;
	vol->consent_arg = arg;
}

bool dg_repair_ok(struct dg_vol *vol, int kind, unsigned dev, uint64_t row,
		  enum dg_fault_what what, const char *why,
		  const char *action)
{
	struct dg_chk_event ev;

	if (vol->read_only)
		return false;
	if (!vol->consent)
		return true;
	dg_chk_event_init(&ev, (enum dg_chk_kind)kind, NULL);
	dg_chk_locate(vol, &ev, dev, row, what);
	ev.fixable = true;
	if (kind == DG_CHK_PARITY_STALE)
		snprintf(ev.detail, sizeof(ev.detail), "parity of row %llu "
			 "disagrees with its verified data",
			 (unsigned long long)row);
	else
		snprintf(ev.detail, sizeof(ev.detail), "%s page fails "
			 "verification (%s)", ev.structure, why);
	snprintf(ev.action, sizeof(ev.action), "%s", action);
	return vol->consent(vol->consent_arg, &ev);
}

int dg_repair_write_dev(struct dg_vol *vol, struct dg_dev *d, uint64_t off,
			const void *img, size_t len)
{
	int ret;

	/* After a failed persist nothing more is written: the media layer
	 * refuses (media.h); the volume's latch stands for a target of a
	 * replace too, which may have none of its own. */
	if (dg_latch_on(&vol->latch))
		return vol->latch.err ? vol->latch.err : -EIO;
	ret = dg_dev_write(d, off, img, len);
	return ret ? ret : dg_dev_persist(d, off, len);
}

int dg_repair_store_dev(struct dg_vol *vol, struct dg_dev *d, uint64_t off,
			const void *img, size_t len)
{
	if (dg_latch_on(&vol->latch))
		return vol->latch.err ? vol->latch.err : -EIO;
	return dg_dev_write(d, off, img, len);
}

int dg_repair_write(struct dg_vol *vol, unsigned dev, uint64_t off,
		    const void *img, size_t len)
{
	if (!vol->devs[dev].present)
		return 0; /* nothing to repair on a missing device */
	return dg_repair_write_dev(vol, &vol->devs[dev], off, img, len);
}

int dg_repair_page(struct dg_vol *vol, unsigned dev, uint64_t row,
		   const void *img)
{
	return dg_repair_write(vol, dev, dg_row_page(vol, row) << DG_PAGE_SHIFT,
			       img, DG_PAGE_SIZE);
}
