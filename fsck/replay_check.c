// SPDX-License-Identifier: MIT
/*
 * replay_check.c -- fsck -n on a volume whose journal needs recovery
 *
 * A volume left by a crash holds committed updates in its journal that
 * are not (all) in place: the mount replays them first, and only the
 * volume after that replay is the one anybody will ever see. Checked as
 * it lies, half-applied updates look like damage (an invalid root
 * record, pages that fail their checksums) that the replay makes whole.
 * e2fsck -n says "needs journal recovery", checks what it can and exits
 * 4. fsck.daxguard -n does better without writing either: it opens the
 * volume again on copy-on-write views of its devices (DG_OPEN_SCRATCH,
 * fs/volume/scratch.c), lets that open replay the journal into memory,
 * and checks the result. The journal finding stays (the devices still
 * need the replay: exit 4, as e2fsck), and every other finding is one
 * the mount would meet too. Nothing is written: the views are private
 * mappings of devices opened read-only.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fsck.h"

void replay_in_memory(struct fsck_ctx *c)
{
	struct dg_vol_info info;
	struct dg_vol *v = NULL;
	char err[512] = "";
	bool pend = false;
	int ret;

	for (size_t i = 0; i < c->nf; i++)
		pend |= c->f[i].code == PR_1_JOURNAL_PENDING;
	if (!pend || !c->vol)
		return;
	dg_vol_get_info(c->vol, &info);
	/* A degraded or suspect volume is not replayed by a plain open
	 * either; it stays checked as it lies. */
	if (info.degraded || info.suspect_mask) {
		ret = -EROFS;
		snprintf(err, sizeof(err), "%s", info.degraded
			 ? "a device is missing" : "devices are behind the volume");
	} else
		ret = dg_vol_open(c->paths, c->n, DG_OPEN_SCRATCH, &v, err,
				  sizeof(err));
	if (ret) {
		if (!c->json)
			printf("%s: journal needs recovery; it could not be "
			       "replayed in memory (%s): the checks below see "
			       "the volume as it lies, before the replay\n",
			       c->uuid, err[0] ? err : strerror(-ret));
		return;
	}
	/* The replay made, the view is read-only like the one it
	 * replaces: no repair is made or offered, even in memory, and
	 * each finding says what -y would do. */
	dg_vol_make_read_only(v);
	dg_vol_close(c->vol);
	c->vol = v;
	c->replayed_in_memory = true;
	if (!c->json)
		printf("%s: journal needs recovery: replayed in memory, "
		       "nothing written; checking the volume as the replay "
		       "leaves it\n", c->uuid);
}
