// SPDX-License-Identifier: MIT
/* fault.c -- count, keep and log the faults the read and repair paths meet */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "volume_i.h"

static const char *const fault_names[DG_FAULT_NR] = {
	[DG_FAULT_DETECTED] = "detected",
	[DG_FAULT_RECOVERED] = "recovered",
	[DG_FAULT_REPAIRED] = "repaired",
	[DG_FAULT_UNRECOVERABLE] = "unrecoverable",
};

static const char *const what_names[DG_WHAT_NR] = {
	[DG_WHAT_DATA] = "data",	   [DG_WHAT_PARITY] = "parity",
	[DG_WHAT_CSUM_PAGE] = "csum-page", [DG_WHAT_CSUM_COPY] = "csum-copy",
	[DG_WHAT_CMAP] = "cmap",	   [DG_WHAT_DITTO] = "ditto",
};

const char *dg_fault_name(enum dg_fault kind)
{
	return (unsigned)kind < DG_FAULT_NR ? fault_names[kind] : "?";
}

const char *dg_fault_what_name(enum dg_fault_what what)
{
	return (unsigned)what < DG_WHAT_NR ? what_names[what] : "?";
}

/* The scrub of this thread, if one is running: its faults are counted
 * in its report, a concurrent reader's are not (dg_vol_scrub_rows). */
static _Thread_local struct dg_scrub_report *scrub_rep;

void dg_fault_attribute(struct dg_scrub_report *rep)
{
	scrub_rep = rep;
}

/* Keep the event in the ring; fault_lock held. */
static struct dg_fault_event *ring_put(struct dg_vol *vol,
				       enum dg_fault kind, unsigned dev,
				       uint64_t row, enum dg_fault_what what,
				       const char *action, bool repeat)
{
	struct dg_fault_event *ev;

	ev = &vol->fault_ring[vol->fault_seq % DG_FAULT_RING];
	memset(ev, 0, sizeof(*ev));
	ev->seq = ++vol->fault_seq;
	ev->kind = kind;
	ev->dev = dev;
	ev->row = row;
	ev->what = what;
	ev->repeat = repeat;
	ev->by_scrub = scrub_rep != NULL;
	snprintf(ev->action, sizeof(ev->action), "%s", action);
	return ev;
}

static void scrub_count(enum dg_fault kind)
{
	/* A read-only scrub's recovered pages count as found only: it
	 * repaired nothing. */
	if (scrub_rep && kind != DG_FAULT_RECOVERED)
		*(kind == DG_FAULT_DETECTED   ? &scrub_rep->detected
		  : kind == DG_FAULT_REPAIRED ? &scrub_rep->repaired
					      : &scrub_rep->unrecoverable) += 1;
}

/* Every fault is logged and counted exactly once per kind. */
static void note(struct dg_vol *vol, enum dg_fault kind, unsigned dev,
		 uint64_t row, enum dg_fault_what what, const char *action,
		 bool stale)
{
	atomic_fetch_add(&vol->faults[kind], 1);
	if (dev < DG_MAX_DEVS)
		atomic_fetch_add(&vol->dev_faults[dev][kind], 1);
	scrub_count(kind);
	pthread_mutex_lock(&vol->fault_lock);
	ring_put(vol, kind, dev, row, what, action, false)->stale = stale;
	pthread_mutex_unlock(&vol->fault_lock);
	dg_vol_log(vol, kind == DG_FAULT_UNRECOVERABLE ? DG_LOG_ERR
						       : DG_LOG_WARNING,
		   "fault %s dev=%u row=%" PRIu64 " what=%s action=%s",
		   fault_names[kind], dev, row, dg_fault_what_name(what),
		   action);
}

void dg_fault_note(struct dg_vol *vol, enum dg_fault kind, unsigned dev,
		   uint64_t row, enum dg_fault_what what, const char *action)
{
	note(vol, kind, dev, row, what, action, false);
}

void dg_fault_note_copy(struct dg_vol *vol, enum dg_fault kind, unsigned dev,
			uint64_t page, bool stale, const char *action)
{
	note(vol, kind, dev, page, DG_WHAT_CSUM_COPY, action, stale);
}

/*
 * Lost pages (issue 32, item 3). A page beyond parity fails every time
 * it is read: by the reader, again by the kernel's retry, by the next
 * scrub. It is one fault, so it is counted, logged and made an event
 * once, when first found; later meetings are repeats. The key holds
 * the checksum the page failed against, so a page written since (a
 * new checksum) that fails again is a new fault. Bounded: past
 * DG_KNOWN_LOSSES pages, new ones are counted every time they are met,
 * as before, rather than forgotten.
 */
#define DG_KNOWN_LOSSES 4096u

static unsigned loss_bit(unsigned dev, uint64_t row)
{
	return (unsigned)(((row * 0x9e3779b97f4a7c15ull) ^ dev) >> 52) & 4095u;
}

static int loss_find(struct dg_vol *vol, unsigned dev, uint64_t row)
{
	for (unsigned i = 0; i < vol->nlosses; i++)
		if (vol->losses[i].dev == dev && vol->losses[i].row == row)
			return (int)i;
	return -1;
}

bool dg_fault_loss_known(struct dg_vol *vol, unsigned dev, uint64_t row,
			 uint64_t csum)
{
	bool known;
	int i;

	pthread_mutex_lock(&vol->fault_lock);
	i = loss_find(vol, dev, row);
	known = i >= 0 && vol->losses[i].csum == csum;
	pthread_mutex_unlock(&vol->fault_lock);
	return known;
}

void dg_fault_note_loss(struct dg_vol *vol, unsigned dev, uint64_t row,
			enum dg_fault_what what, uint64_t csum,
			const char *action)
{
	int i;

	dg_fault_note(vol, DG_FAULT_UNRECOVERABLE, dev, row, what, action);
	pthread_mutex_lock(&vol->fault_lock);
	i = loss_find(vol, dev, row);
	if (i >= 0) {
		vol->losses[i].csum = csum;
	} else if (vol->nlosses < DG_KNOWN_LOSSES) {
		if (vol->nlosses == vol->caplosses) {
			unsigned cap = vol->caplosses ? 2 * vol->caplosses : 16;
			void *p = realloc(vol->losses,
					  cap * sizeof(*vol->losses));

			if (p) {
				vol->losses = p;
				vol->caplosses = cap;
			}
		}
		if (vol->nlosses < vol->caplosses) {
			unsigned b = loss_bit(dev, row);

			vol->losses[vol->nlosses++] =
				(struct dg_known_loss){ dev, row, csum };
			atomic_fetch_or(&vol->loss_filter[b / 64],
					1ull << (b % 64));
		}
	}
	pthread_mutex_unlock(&vol->fault_lock);
}

void dg_fault_note_repeat(struct dg_vol *vol, unsigned dev, uint64_t row,
			  enum dg_fault_what what, const char *action)
{
	/* The scrub met it: its own report says what it met. */
	scrub_count(DG_FAULT_DETECTED);
	scrub_count(DG_FAULT_UNRECOVERABLE);
	pthread_mutex_lock(&vol->fault_lock);
	ring_put(vol, DG_FAULT_UNRECOVERABLE, dev, row, what, action, true);
	pthread_mutex_unlock(&vol->fault_lock);
}

void dg_fault_loss_forget(struct dg_vol *vol, unsigned dev, uint64_t row)
{
	int i;

	pthread_mutex_lock(&vol->fault_lock);
	i = loss_find(vol, dev, row);
	if (i >= 0)
		vol->losses[i] = vol->losses[--vol->nlosses];
	pthread_mutex_unlock(&vol->fault_lock);
}

void dg_fault_loss_verified(struct dg_vol *vol, unsigned dev, uint64_t row)
{
	unsigned b = loss_bit(dev, row);

	/* Every verified page passes here: the lock and the list only for
	 * a page that may be known lost. */
	if (atomic_load_explicit(&vol->loss_filter[b / 64],
				 memory_order_relaxed) & (1ull << (b % 64)))
		dg_fault_loss_forget(vol, dev, row);
}

void dg_vol_fault_forget(struct dg_vol *vol)
{
	pthread_mutex_lock(&vol->fault_lock);
	vol->nlosses = 0;
	for (unsigned i = 0; i < 64; i++)
		atomic_store(&vol->loss_filter[i], 0);
	pthread_mutex_unlock(&vol->fault_lock);
}

void dg_vol_fault_counts(struct dg_vol *vol, uint64_t counts[DG_FAULT_NR])
{
	for (int i = 0; i < DG_FAULT_NR; i++)
		counts[i] = atomic_load(&vol->faults[i]);
}

void dg_vol_dev_counts(struct dg_vol *vol, unsigned dev,
		       struct dg_dev_counts *c)
{
	memset(c, 0, sizeof(*c));
	if (dev >= vol->ndev)
		return;
	c->read_errors = atomic_load(&vol->dev_read_errors[dev]);
	c->csum_errors = atomic_load(&vol->dev_faults[dev][DG_FAULT_DETECTED]);
	c->repaired = atomic_load(&vol->dev_faults[dev][DG_FAULT_REPAIRED]);
	c->unrecoverable =
		atomic_load(&vol->dev_faults[dev][DG_FAULT_UNRECOVERABLE]);
}

const char *dg_vol_dev_path(struct dg_vol *vol, unsigned dev)
{
	if (dev >= vol->ndev || !vol->devs[dev].present)
		return NULL;
	return vol->devs[dev].path;
}

const char *dg_vol_missing_why(struct dg_vol *vol, unsigned dev)
{
	if (dev >= vol->ndev || vol->devs[dev].present)
		return NULL;
	return vol->missing_why[dev];
}

unsigned dg_vol_fault_events(struct dg_vol *vol, uint64_t since,
			     struct dg_fault_event *out, unsigned max)
{
	unsigned n = 0;

	pthread_mutex_lock(&vol->fault_lock);
	if (vol->fault_seq > since + DG_FAULT_RING)
		since = vol->fault_seq - DG_FAULT_RING; /* overwritten */
	for (uint64_t s = since + 1; s <= vol->fault_seq && n < max; s++)
		out[n++] = vol->fault_ring[(s - 1) % DG_FAULT_RING];
	pthread_mutex_unlock(&vol->fault_lock);
	return n;
}

void dg_chk_locate(struct dg_vol *vol, struct dg_chk_event *ev, unsigned dev,
		   uint64_t row, enum dg_fault_what what)
{
	ev->dev = (int)dev;
	if (what == DG_WHAT_CSUM_PAGE) {
		/* row is the checksum page index, dev its owner */
		ev->page = (int64_t)dg_cpage_copy_page(vol, row, 0);
		ev->structure = "checksum";
	} else if (what == DG_WHAT_CSUM_COPY || what == DG_WHAT_CMAP) {
		/* row is the device page of the copy */
		ev->page = (int64_t)row;
		ev->structure = "checksum";
	} else if (what == DG_WHAT_DITTO) {
		/* row is the device page of the ditto copy */
		ev->page = (int64_t)row;
		ev->structure = "ditto copy";
	} else {
		ev->page = (int64_t)dg_row_page(vol, row);
		if (dg_row_dev_is_parity(vol, row, dev)) {
			ev->structure = "parity";
		} else {
			ev->structure = "data";
			ev->vpn = (int64_t)dg_loc_vpn(vol, dev, row);
		}
	}
}
