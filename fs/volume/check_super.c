// SPDX-License-Identifier: MIT
/* check_super.c -- fsck of the superblocks: both copies of every present
 * device against the volume; and where things are, for fsck's reports */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csum.h"
#include "super.h"

uint64_t dg_super_page(struct dg_vol *vol, unsigned copy)
{
	return copy ? vol->sb.dev_pages - 1 : 0;
}

int dg_check_csum(struct dg_vol *vol, unsigned dev, uint64_t row,
		  uint64_t *csum)
{
	int ret;

	if (dev >= vol->ndev || row >= vol->sb.rows)
		return -EINVAL;
	if (!vol->redundancy) {
		*csum = 1;
		return 0;
	}
	pthread_rwlock_rdlock(dg_row_lock(vol, row));
	ret = dg_csum_get(vol, dev, row, csum);
	pthread_rwlock_unlock(dg_row_lock(vol, row));
	return ret;
}

int dg_check_supers(struct dg_vol *vol, bool repair, dg_chk_fn fn, void *arg)
{
	struct dg_dsuper *want = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	int bad = 0;

	if (!want)
		return -ENOMEM;
	repair = repair && !vol->read_only;
	for (unsigned d = 0; d < vol->ndev; d++) {
		struct dg_dev *dv = &vol->devs[d];

		if (!dv->present)
			continue;
		*want = vol->sb;
		want->dev_index = d;
		memcpy(want->dev_uuid, vol->dev_uuid[d], 16);
		dg_dsuper_seal(want);
		for (unsigned c = 0; c < 2; c++) {
			uint64_t off = dg_super_page(vol, c) << DG_PAGE_SHIFT;
			const void *img = dg_dev_ptr(dv, off);
			struct dg_dsuper tmp;
			struct dg_chk_event ev;
			int r;

			if (!memcmp(img, want, DG_PAGE_SIZE))
				continue;
			r = dg_dsuper_decode(img, &tmp);
			dg_chk_event_init(&ev, r ? DG_CHK_SUPER_BAD
						   : DG_CHK_SUPER_DIFFERS,
					  "superblock");
			ev.dev = (int)d;
			ev.page = (int64_t)dg_super_page(vol, c);
			ev.fixable = true;
			if (r)
				snprintf(ev.detail, sizeof(ev.detail),
					 "%s superblock copy fails validation "
					 "(%s)", c ? "backup" : "primary",
					 strerror(-r));
			else if (tmp.dev_index != d ||
				 memcmp(tmp.dev_uuid, vol->dev_uuid[d], 16))
				snprintf(ev.detail, sizeof(ev.detail),
					 "%s superblock copy is device %u's, "
					 "not this device's (a misdirected "
					 "write)", c ? "backup" : "primary",
					 tmp.dev_index);
			else
				snprintf(ev.detail, sizeof(ev.detail),
					 "%s superblock copy disagrees with the "
					 "volume (generation %llu, volume %llu)",
					 c ? "backup" : "primary",
					 (unsigned long long)tmp.generation,
					 (unsigned long long)vol->sb.generation);
			snprintf(ev.action, sizeof(ev.action),
				 "rewrite from the good copies");
			if (repair) {
				ev.fixed = dg_repair_write(vol, d, off, want,
							   DG_PAGE_SIZE) == 0;
			}
			bad++;
			dg_chk_emit(fn, arg, &ev);
		}
	}
	free(want);
	return bad;
}
