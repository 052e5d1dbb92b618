/* SPDX-License-Identifier: MIT */
/* owner_memo.h -- how often a fault batch may stream the inode table to
 * name the files of its pages, and what the last streams found */
#ifndef DG_OWNER_MEMO_H
#define DG_OWNER_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "volume.h"

#define DG_OWNER_MEMO_PAGES 256
/* Streams of the table: a burst of DG_OWNER_SCAN_BURST (a scrub meeting
 * a few bad rows names every file), then one each interval: a failing
 * device with cold files would otherwise stream it every 32 events,
 * under fs->lock read and the faults lock. */
#define DG_OWNER_SCAN_BURST 8
#define DG_OWNER_SCAN_INTERVAL_NS (10ll * 1000000000)

/* Used under one lock (the daemon's faults_lock); zeroed to start. */
struct dg_owner_memo {
	bool started;
	unsigned tokens;	/* streams allowed now */
	int64_t refill_ns;	/* when the last token was earned */
	uint64_t scans;		/* streams allowed since the start */
	struct dg_lost_page seen[DG_OWNER_MEMO_PAGES]; /* ring */
	unsigned nseen, next;
};

/* True (and a token spent) when a stream may run at now; the pages a
 * refused batch leaves are "not known yet", named later by the
 * registry's resolve or a scrub. */
bool dg_owner_memo_may_scan(struct dg_owner_memo *m, int64_t now_ns);
/* What a stream found for the pages of lp (ino 0: no file). */
void dg_owner_memo_keep(struct dg_owner_memo *m,
			const struct dg_lost_page *lp, unsigned n);
/* The file a stream found for vpn: true and *lp filled, else false.
 * Nothing here hears of the page being freed or taken by another file
 * since: the caller checks that file still maps it (lost_pages.c). */
bool dg_owner_memo_recall(const struct dg_owner_memo *m, uint64_t vpn,
			  struct dg_lost_page *lp);

#endif
