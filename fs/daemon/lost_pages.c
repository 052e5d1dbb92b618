// SPDX-License-Identifier: MIT
/* lost_pages.c -- the engine's fault events turned into the daemon's
 * events, and the reports of what the volume's registry of lost pages
 * (fs/volume/lost_reg.c) listed and reset */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "daemon.h"

/* The file and offset a data page holds, when a file holds it: the
 * inodes in core first; lp (the batch's owners off the media, ino 0
 * where none) for a page of a file not in core. */
static void vpn_path(struct dg_daemon *dd, uint64_t vpn,
		     const struct dg_lost_page *lp, unsigned nlp, char *path,
		     size_t len, int64_t *offset)
{
	uint64_t ino = 0, fpage = 0;

	if (dg_fs_owner(dd->fs, vpn, &ino, &fpage))
		ino = 0;
	for (unsigned i = 0; i < nlp && !ino; i++)
		if (lp[i].vpn == vpn && lp[i].ino) {
			ino = lp[i].ino;
			fpage = lp[i].fpage;
		}
	if (ino) {
		dg_fs_path(dd->fs, ino, path, len);
		*offset = (int64_t)(fpage * DG_PAGE_SIZE);
	}
}

/*
 * Inodes are read on use (fs/fsys/icache.c), so the file of a faulty
 * page may not be in core: the pages of a batch of events that no inode
 * in core maps but the allocator has in use are placed off the media
 * at once (one stream of the inode table a batch, not an event), so
 * the events name their files as before. A stream reads the whole table
 * and every extent map under the filesystem's lock: at most one each
 * DG_OWNER_SCAN_INTERVAL_NS (owner_memo.c), and a page placed once is
 * recalled, once its file is seen to map it still (dg_fs_owner_holds(),
 * which loads the file: its record and map read once, then its pages
 * are found in core by dg_fs_owner(), with no recall, until the file
 * is let go), not streamed for again. Pages a batch could not stream
 * for go unnamed in their events; the registry's resolve or a scrub
 * names them later (faults_lock held).
 */
static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static unsigned owners_of_batch(struct dg_daemon *dd,
				const struct dg_fault_event *ev, unsigned n,
				struct dg_lost_page *lp)
{
	unsigned nlp = 0, nknown = 0;
	struct dg_lost_page known[32];

	for (unsigned i = 0; i < n; i++) {
		uint64_t vpn, ino, fpage;

		if (ev[i].repeat || ev[i].what != DG_WHAT_DATA ||
		    !dg_vol_fault_vpn(dd->vol, &ev[i], &vpn) ||
		    !dg_vpn_allocated(dd->vol, vpn) ||
		    dg_fs_owner(dd->fs, vpn, &ino, &fpage) == 0)
			continue;
		/* A file recalled is checked first: since the stream, the
		 * page may have been freed and taken by another file not in
		 * core (the memo hears of no delete, truncate or move). A
		 * stale one is streamed for again, else left unnamed, never
		 * reported as the old file's. "No file" is kept as found. */
		if (nknown < 32 &&
		    dg_owner_memo_recall(&dd->owners, vpn, &known[nknown]) &&
		    (!known[nknown].ino ||
		     dg_fs_owner_holds(dd->fs, known[nknown].ino, vpn,
				       known[nknown].fpage))) {
			nknown++;
			continue;
		}
		lp[nlp++] = (struct dg_lost_page){ .vpn = vpn };
	}
	if (nlp && (!dg_owner_memo_may_scan(&dd->owners, mono_ns()) ||
		    dg_fs_resolve_owners(dd->fs, lp, nlp)))
		nlp = 0;
	dg_owner_memo_keep(&dd->owners, lp, nlp);
	for (unsigned i = 0; i < nknown; i++)
		lp[nlp++] = known[i];
	return nlp;
}

/* A page the registry reset once its file gave it up. */
static void post_reset(void *arg, uint64_t vpn)
{
	struct dg_daemon *dd = arg;
	struct dg_event e;

	dg_event_init(&e, DG_EV_PAGE_RESET);
	e.vpn = (int64_t)vpn;
	snprintf(e.detail, sizeof(e.detail), "its file gave it up: "
		 "rewritten as zeros with its row");
	dg_event_post(&dd->events, &e);
}

/* The volume's registry (lost_reg.c) decides: listed for status (1),
 * waiting for dg_ctl_resolve_lost() (2), reset (0, reported here with
 * where the scrub met it), or neither. */
int dg_ctl_lost_page(struct dg_daemon *dd, const struct dg_fault_event *ev,
		     bool reset)
{
	struct dg_event e;
	int ret = dg_vol_lost_found(dd->vol, ev, reset);

	if (ret == 0) {
		dg_event_init(&e, DG_EV_PAGE_RESET);
		e.dev = (int)ev->dev;
		e.page = (int64_t)dg_row_page(dd->vol, ev->row);
		e.vpn = (int64_t)dg_loc_vpn(dd->vol, ev->dev, ev->row);
		snprintf(e.detail, sizeof(e.detail), "unreadable, and no "
			 "file holds it: rewritten as zeros with its row");
		dg_event_post(&dd->events, &e);
	}
	return ret;
}

static int resolve(void *arg, struct dg_lost_page *lp, unsigned n)
{
	struct dg_daemon *dd = arg;

	return dg_fs_resolve_owners(dd->fs, lp, n);
}

unsigned dg_ctl_resolve_lost(struct dg_daemon *dd)
{
	return dg_vol_lost_resolve(dd->vol, resolve, dd);
}

unsigned dg_ctl_prune_lost(struct dg_daemon *dd)
{
	/* Pages in use whose file was not at hand are named first. */
	dg_ctl_resolve_lost(dd);
	return dg_vol_lost_prune(dd->vol, post_reset, dd);
}

void dg_ctl_reset_gone(struct dg_daemon *dd)
{
	dg_vol_lost_reset_gone(dd->vol, post_reset, dd);
}

static enum dg_ev_type fault_event_type(enum dg_fault kind)
{
	switch (kind) {
	case DG_FAULT_REPAIRED:
		return DG_EV_FAULT_REPAIRED;
	case DG_FAULT_UNRECOVERABLE:
		return DG_EV_FAULT_UNRECOVERABLE;
	case DG_FAULT_RECOVERED:
		return DG_EV_FAULT_RECOVERED;
	default:
		return DG_EV_FAULT_DETECTED;
	}
}

void dg_ctl_log_faults(struct dg_daemon *dd)
{
	struct dg_fault_event ev[32];
	struct dg_lost_page lp[32];
	unsigned n, nlp;

	/* The control and the scrub thread both turn faults into events,
	 * each one once. */
	pthread_mutex_lock(&dd->faults_lock);
	while ((n = dg_vol_fault_events(dd->vol, dd->fault_seq, ev, 32))) {
		nlp = owners_of_batch(dd, ev, n, lp);
		for (unsigned i = 0; i < n; i++) {
			struct dg_event e;
			uint64_t vpn;

			dd->fault_seq = ev[i].seq;
			/* A lost page met again was posted when found. */
			if (ev[i].repeat) {
				dg_ctl_lost_page(dd, &ev[i], false);
				continue;
			}
			dg_event_init(&e, fault_event_type(ev[i].kind));
			e.dev = (int)ev[i].dev;
			e.what = ev[i].what;
			switch (ev[i].what) {
			case DG_WHAT_DATA:
			case DG_WHAT_PARITY:
				if (ev[i].row < dg_vol_rows(dd->vol))
					e.page = (int64_t)dg_row_page(dd->vol,
								      ev[i].row);
				break;
			case DG_WHAT_CSUM_PAGE:
				break;	/* row is the index, in detail */
			default:
				e.page = (int64_t)ev[i].row;
			}
			if (dg_vol_fault_vpn(dd->vol, &ev[i], &vpn)) {
				e.vpn = (int64_t)vpn;
				vpn_path(dd, vpn, lp, nlp, e.path,
					 sizeof(e.path), &e.offset);
			}
			if (ev[i].what == DG_WHAT_CSUM_PAGE)
				snprintf(e.detail, sizeof(e.detail),
					 "checksum page index %" PRIu64 ": %s",
					 ev[i].row, ev[i].action);
			else
				snprintf(e.detail, sizeof(e.detail), "%s",
					 ev[i].action);
			dg_event_post(&dd->events, &e);
			/* A read that failed: status names the file. Free
			 * pages are the scrub's to reset (scrub.c). */
			dg_ctl_lost_page(dd, &ev[i], false);
		}
	}
	pthread_mutex_unlock(&dd->faults_lock);
}
