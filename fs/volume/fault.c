// SPDX-License-Identifier: MIT
/* fault.c -- count, keep and log the faults the read and repair paths meet */
#include <stdio.h>
#include <string.h>

#include "volume_i.h"

static const char *const fault_names[DG_FAULT_NR] = {
	[DG_FAULT_DETECTED] = "detected",
	[DG_FAULT_REPAIRED] = "repaired",
	[DG_FAULT_UNRECOVERABLE] = "unrecoverable",
};

/* STYLE §5: every fault is logged and counted exactly once per kind. */
void dg_fault_note(struct dg_vol *vol, enum dg_fault kind, unsigned dev,
		   uint64_t row, const char *what, const char *action)
{
	struct dg_fault_event *ev;

	atomic_fetch_add(&vol->faults[kind], 1);
	pthread_mutex_lock(&vol->fault_lock);
	ev = &vol->fault_ring[vol->fault_seq % DG_FAULT_RING];
	memset(ev, 0, sizeof(*ev));
	ev->seq = ++vol->fault_seq;
	ev->kind = kind;
	ev->dev = dev;
	ev->row = row;
	snprintf(ev->what, sizeof(ev->what), "%s", what);
	snprintf(ev->action, sizeof(ev->action), "%s", action);
	pthread_mutex_unlock(&vol->fault_lock);
	dg_vol_log(vol, kind == DG_FAULT_UNRECOVERABLE ? DG_LOG_ERR
						       : DG_LOG_WARNING,
		   "fault %s dev=%u row=%" PRIu64 " what=%s action=%s",
		   fault_names[kind], dev, row, what, action);
}

void dg_vol_fault_counts(struct dg_vol *vol, uint64_t counts[DG_FAULT_NR])
{
	for (int i = 0; i < DG_FAULT_NR; i++)
		counts[i] = atomic_load(&vol->faults[i]);
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
