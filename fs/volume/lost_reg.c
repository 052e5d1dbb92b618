// SPDX-License-Identifier: MIT
/* lost_reg.c -- the registry of lost data pages: which file page each
 * was when found (status names the file for as long as the page is
 * still that file's), and the one decision when one is reset: once no
 * file holds it (the reset itself is lost_page.c's) */
#include <stdlib.h>
#include <string.h>

#include "volume_i.h"

void dg_vol_lost_owner(struct dg_vol *vol, dg_vpn_owner_fn owner, void *arg)
{
	pthread_mutex_lock(&vol->lost_lock);
	vol->owner = owner;
	vol->owner_arg = arg;
	pthread_mutex_unlock(&vol->lost_lock);
}

bool dg_vol_fault_vpn(struct dg_vol *vol, const struct dg_fault_event *ev,
		      uint64_t *vpn)
{
	if (ev->what != DG_WHAT_DATA || ev->row >= dg_vol_rows(vol) ||
	    dg_vol_row_is_parity(vol, ev->row, ev->dev))
		return false;
	*vpn = dg_loc_vpn(vol, ev->dev, ev->row);
	return true;
}

/* Who holds vpn: 0, -EAGAIN not known yet (in use, its owner not at
 * hand), else no file (or no one to ask). lost_lock held. */
static int owner_of(struct dg_vol *vol, uint64_t vpn, uint64_t *ino,
		    uint64_t *fpage)
{
	return vol->owner ? vol->owner(vol->owner_arg, vpn, ino, fpage)
			  : -ENOENT;
}

/* Add vpn to the set (a, n, cap) or drop it from it. lost_lock held. */
static void vpn_set(uint64_t **a, unsigned *n, unsigned *cap, uint64_t vpn,
		    bool add)
{
	unsigned i;

	for (i = 0; i < *n && (*a)[i] != vpn; i++)
		;
	if (!add && i < *n) {
		(*a)[i] = (*a)[--*n];
	} else if (add && i == *n) {
		if (*n == *cap) {
			unsigned c = *cap ? 2 * *cap : 16;
			void *p = realloc(*a, c * sizeof(**a));

			if (!p)
				return; /* left to the scrub */
			*a = p;
			*cap = c;
		}
		(*a)[(*n)++] = vpn;
	}
}

/* Keep vpn as free and lost (add), or drop it (!add). lost_lock held. */
static void keep_gone(struct dg_vol *vol, uint64_t vpn, bool add)
{
	vpn_set(&vol->gone, &vol->ngone, &vol->capgone, vpn, add);
}

/*
 * The one reset of a lost page no file holds, whoever asks: the row
 * rewritten (lost_page.c), the page no longer kept, the caller told.
 * lost_lock not held: the reset takes the allocator's and a row's.
 */
static int reset(struct dg_vol *vol, uint64_t vpn, dg_lost_reset_fn done,
		 void *arg)
{
	int ret = dg_vol_reset_lost_page(vol, vpn);

	if (ret)
		return ret;
	pthread_mutex_lock(&vol->lost_lock);
	keep_gone(vol, vpn, false);
	pthread_mutex_unlock(&vol->lost_lock);
	if (done)
		done(arg, vpn);
	return 0;
}

/* List lp, or update its entry. lost_lock held. */
static void list_page(struct dg_vol *vol, const struct dg_lost_page *lp)
{
	for (unsigned i = 0; i < vol->nlost; i++)
		if (vol->lost[i].vpn == lp->vpn) {
			vol->lost[i] = *lp;
			return;
		}
	if (vol->nlost == vol->caplost) {
		unsigned cap = vol->caplost ? 2 * vol->caplost : 16;
		void *p = realloc(vol->lost, cap * sizeof(*vol->lost));

		if (!p)
			return;
		vol->lost = p;
		vol->caplost = cap;
	}
	vol->lost[vol->nlost++] = *lp;
}

int dg_vol_lost_found(struct dg_vol *vol, const struct dg_fault_event *ev,
		      bool reset_free)
{
	struct dg_lost_page lp;
	bool asked, held, unknown;
	int r = -ENOENT;

	if (ev->kind != DG_FAULT_UNRECOVERABLE ||
	    !dg_vol_fault_vpn(vol, ev, &lp.vpn))
		return -1;
	pthread_mutex_lock(&vol->lost_lock);
	asked = vol->owner != NULL;
	if (asked)
		r = owner_of(vol, lp.vpn, &lp.ino, &lp.fpage);
	held = asked && r == 0;
	unknown = asked && r == -EAGAIN;
	if (held)
		list_page(vol, &lp);
	else if (unknown)
		vpn_set(&vol->pending, &vol->npending, &vol->cappending,
			lp.vpn, true);
	else if (asked && !reset_free)
		keep_gone(vol, lp.vpn, true);
	pthread_mutex_unlock(&vol->lost_lock);
	if (held)
		return 1;
	/* In use, whose not known yet: never reset (G1), named once
	 * dg_vol_lost_resolve() finds the file. */
	if (unknown)
		return 2;
	/* A free page: no file lost anything. */
	if (!asked || !reset_free)
		return -1;
	return reset(vol, lp.vpn, NULL, NULL) ? -1 : 0;
}

unsigned dg_vol_lost_resolve(struct dg_vol *vol, dg_vpn_resolve_fn resolve,
			     void *arg)
{
	struct dg_lost_page *lp;
	uint64_t *vpns;
	unsigned n, named = 0;

	pthread_mutex_lock(&vol->lost_lock);
	vpns = vol->pending;
	n = vol->npending;
	vol->pending = NULL;
	vol->npending = vol->cappending = 0;
	pthread_mutex_unlock(&vol->lost_lock);
	if (!n) {
		free(vpns);
		return 0;
	}
	/* The long look without the registry's lock: it may read the
	 * whole inode table. A page it cannot place is kept as a lost page
	 * no file holds: reset at the unmount only if the allocator has it
	 * free by then (reset() refuses one in use), as a reader's fault on
	 * a page no file held always was. */
	lp = calloc(n, sizeof(*lp));
	if (lp) {
		for (unsigned i = 0; i < n; i++)
			lp[i].vpn = vpns[i];
		if (resolve(arg, lp, n))
			for (unsigned i = 0; i < n; i++)
				lp[i].ino = 0;
	}
	pthread_mutex_lock(&vol->lost_lock);
	for (unsigned i = 0; i < n; i++) {
		if (lp && lp[i].ino) {
			list_page(vol, &lp[i]);
			named++;
		} else {
			keep_gone(vol, vpns[i], true);
		}
	}
	pthread_mutex_unlock(&vol->lost_lock);
	free(lp);
	free(vpns);
	return named;
}

unsigned dg_vol_lost_prune(struct dg_vol *vol, dg_lost_reset_fn done,
			   void *arg)
{
	uint64_t freed[64];
	unsigned nfreed = 0;

	pthread_mutex_lock(&vol->lost_lock);
	for (unsigned i = 0; i < vol->nlost;) {
		uint64_t ino, fpage;
		int r = owner_of(vol, vol->lost[i].vpn, &ino, &fpage);

		/* Not known (its file out of core): still in use, kept as
		 * listed; a deleted file's page is free, so known. */
		if (!vol->owner || r == -EAGAIN ||
		    (r == 0 && ino == vol->lost[i].ino &&
		     fpage == vol->lost[i].fpage)) {
			i++;
			continue;
		}
		if (r && nfreed == 64) {
			i++;	/* reset by the next call */
			continue;
		}
		if (r)
			freed[nfreed++] = vol->lost[i].vpn;
		vol->lost[i] = vol->lost[--vol->nlost];
	}
	pthread_mutex_unlock(&vol->lost_lock);
	for (unsigned i = 0; i < nfreed; i++)
		reset(vol, freed[i], done, arg);
	return nfreed;
}

/*
 * Lost pages whose file was deleted before any prune or scrub could
 * reset them (a file deleted and the volume unmounted at once): left as
 * they are, the clean close would leave unreadable free pages for fsck
 * to report. The caller has stopped everything else that allocates or
 * resets. Bounded by the pages listed and kept, a row write each.
 */
void dg_vol_lost_reset_gone(struct dg_vol *vol, dg_lost_reset_fn done,
			    void *arg)
{
	uint64_t *gone;
	unsigned n;

	while (dg_vol_lost_prune(vol, done, arg))
		;
	pthread_mutex_lock(&vol->lost_lock);
	gone = vol->gone;
	n = vol->ngone;
	vol->gone = NULL;
	vol->ngone = vol->capgone = 0;
	pthread_mutex_unlock(&vol->lost_lock);
	for (unsigned i = 0; i < n; i++)
		reset(vol, gone[i], done, arg);
	free(gone);
}

struct dg_lost_page *dg_vol_lost_list(struct dg_vol *vol, unsigned *n)
{
	struct dg_lost_page *l = NULL;

	pthread_mutex_lock(&vol->lost_lock);
	*n = 0;
	if (vol->nlost && (l = malloc(vol->nlost * sizeof(*l)))) {
		memcpy(l, vol->lost, vol->nlost * sizeof(*l));
		*n = vol->nlost;
	}
	pthread_mutex_unlock(&vol->lost_lock);
	return l;
}

void dg_vol_lost_forget(struct dg_vol *vol)
{
	pthread_mutex_lock(&vol->lost_lock);
	vol->nlost = 0;
	/* Those waiting to be named too: else a clear would be followed
	 * by their names. Met again, they wait again. */
	vol->npending = 0;
	pthread_mutex_unlock(&vol->lost_lock);
}
