// SPDX-License-Identifier: MIT
/* lost_pages.c -- the engine's fault events turned into the daemon's
 * events, and the registry of lost pages status names (by file) and
 * the resets of lost pages no file holds */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon.h"

/* A data page of a row (not parity, not a checksum page): its vpn. */
static bool fault_vpn(struct dg_daemon *dd, const struct dg_fault_event *ev,
		      uint64_t *vpn)
{
	if (ev->what != DG_WHAT_DATA || ev->row >= dg_vol_rows(dd->vol) ||
	    dg_vol_row_is_parity(dd->vol, ev->row, ev->dev))
		return false;
	*vpn = dg_loc_vpn(dd->vol, ev->dev, ev->row);
	return true;
}

/* The file and offset a data page holds, when a file holds it. */
static void vpn_path(struct dg_daemon *dd, uint64_t vpn, char *path,
		     size_t len, int64_t *offset)
{
	uint64_t ino, fpage;

	if (dg_fs_owner(dd->fs, vpn, &ino, &fpage) == 0) {
		dg_fs_path(dd->fs, ino, path, len);
		*offset = (int64_t)(fpage * DG_PAGE_SIZE);
	}
}

/* Note vpn as free and lost (add) or reset (!add); dmg_lock not held. */
static void note_gone(struct dg_daemon *dd, uint64_t vpn, bool add)
{
	unsigned i;

	pthread_mutex_lock(&dd->dmg_lock);
	for (i = 0; i < dd->ngone && dd->gone[i] != vpn; i++)
		;
	if (!add && i < dd->ngone) {
		dd->gone[i] = dd->gone[--dd->ngone];
	} else if (add && i == dd->ngone) {
		if (dd->ngone == dd->capgone) {
			unsigned cap = dd->capgone ? 2 * dd->capgone : 16;
			void *p = realloc(dd->gone, cap * sizeof(*dd->gone));

			if (!p)
				goto out; /* left to the scrub */
			dd->gone = p;
			dd->capgone = cap;
		}
		dd->gone[dd->ngone++] = vpn;
	}
out:
	pthread_mutex_unlock(&dd->dmg_lock);
}

/* Remember a data page that could not be recovered, and which page of
 * which file it was, so status can name the file for as long as the
 * page is still that file's. A page no file holds is reset instead. */
int dg_ctl_lost_page(struct dg_daemon *dd, const struct dg_fault_event *ev,
		     bool reset)
{
	struct dg_lost_page lp;
	struct dg_event e;
	int ret;

	if (ev->kind != DG_FAULT_UNRECOVERABLE || !fault_vpn(dd, ev, &lp.vpn))
		return -1;
	if (dg_fs_owner(dd->fs, lp.vpn, &lp.ino, &lp.fpage)) {
		/* A free page: no file lost anything. */
		if (!reset) {
			note_gone(dd, lp.vpn, true);
			return -1;
		}
		ret = dg_vol_reset_lost_page(dd->vol, lp.vpn);
		if (ret)
			return -1;
		note_gone(dd, lp.vpn, false);
		dg_event_init(&e, DG_EV_PAGE_RESET);
		e.dev = (int)ev->dev;
		e.page = (int64_t)dg_row_page(dd->vol, ev->row);
		e.vpn = (int64_t)lp.vpn;
		snprintf(e.detail, sizeof(e.detail), "unreadable, and no "
			 "file holds it: rewritten as zeros with its row");
		dg_event_post(&dd->events, &e);
		return 0;
	}
	pthread_mutex_lock(&dd->dmg_lock);
	for (unsigned i = 0; i < dd->nlost; i++)
		if (dd->lost[i].vpn == lp.vpn) {
			dd->lost[i] = lp;
			goto out;
		}
	if (dd->nlost == dd->caplost) {
		unsigned cap = dd->caplost ? 2 * dd->caplost : 16;
		void *p = realloc(dd->lost, cap * sizeof(*dd->lost));

		if (!p)
			goto out;
		dd->lost = p;
		dd->caplost = cap;
	}
	dd->lost[dd->nlost++] = lp;
out:
	pthread_mutex_unlock(&dd->dmg_lock);
	return 1;
}

/* Drop lost pages that are no longer the file page they were: the file
 * was deleted or truncated, so what the error named is gone. A page
 * that is now free is reset, so no scrub reports it again. Returns how
 * many were reset or tried; those past the first 64 freed stay listed
 * for the next call. */
unsigned dg_ctl_prune_lost(struct dg_daemon *dd)
{
	uint64_t freed[64];
	unsigned nfreed = 0;

	pthread_mutex_lock(&dd->dmg_lock);
	for (unsigned i = 0; i < dd->nlost;) {
		uint64_t ino, fpage;
		int r = dg_fs_owner(dd->fs, dd->lost[i].vpn, &ino, &fpage);

		if (r == 0 && ino == dd->lost[i].ino &&
		    fpage == dd->lost[i].fpage) {
			i++;
			continue;
		}
		if (r && nfreed == 64) {
			i++;	/* reset by the next call */
			continue;
		}
		if (r)
			freed[nfreed++] = dd->lost[i].vpn;
		dd->lost[i] = dd->lost[--dd->nlost];
	}
	pthread_mutex_unlock(&dd->dmg_lock);
	/* Outside dmg_lock: the reset takes the allocator's and a row's. */
	for (unsigned i = 0; i < nfreed; i++) {
		struct dg_event e;

		if (dg_vol_reset_lost_page(dd->vol, freed[i]))
			continue;
		dg_event_init(&e, DG_EV_PAGE_RESET);
		e.vpn = (int64_t)freed[i];
		snprintf(e.detail, sizeof(e.detail), "its file gave it up: "
			 "rewritten as zeros with its row");
		dg_event_post(&dd->events, &e);
	}
	return nfreed;
}

/*
 * The unmount's last look: lost pages whose file was deleted before any
 * sweep or scrub could reset them (a file deleted and the volume
 * unmounted at once). Left as they are, the clean close would leave
 * unreadable free pages for fsck to report. The FUSE loop has ended
 * and the scrub has stopped: nothing allocates or resets beside this.
 * Bounded by the pages listed, a row write each.
 */
void dg_ctl_reset_gone(struct dg_daemon *dd)
{
	while (dd->nlost && dg_ctl_prune_lost(dd))
		;
	for (unsigned i = 0; i < dd->ngone; i++) {
		struct dg_event e;

		if (dg_vol_reset_lost_page(dd->vol, dd->gone[i]))
			continue;
		dg_event_init(&e, DG_EV_PAGE_RESET);
		e.vpn = (int64_t)dd->gone[i];
		snprintf(e.detail, sizeof(e.detail), "its file gave it up: "
			 "rewritten as zeros with its row");
		dg_event_post(&dd->events, &e);
	}
	dd->ngone = 0;
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
	unsigned n;

	/* The control and the scrub thread both turn faults into events,
	 * each one once. */
	pthread_mutex_lock(&dd->faults_lock);
	while ((n = dg_vol_fault_events(dd->vol, dd->fault_seq, ev, 32))) {
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
			if (fault_vpn(dd, &ev[i], &vpn)) {
				e.vpn = (int64_t)vpn;
				vpn_path(dd, vpn, e.path, sizeof(e.path),
					 &e.offset);
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
