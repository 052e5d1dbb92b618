// SPDX-License-Identifier: MIT
/* events.c -- the daemon's ring of events: faults, scrubs, devices */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "json.h"

static const char *const type_names[DG_EV_NR] = {
	[DG_EV_FAULT_DETECTED] = "fault-detected",
	[DG_EV_FAULT_REPAIRED] = "fault-repaired",
	[DG_EV_FAULT_UNRECOVERABLE] = "fault-unrecoverable",
	[DG_EV_FAULT_RECOVERED] = "fault-recovered",
	[DG_EV_PAGE_RESET] = "free-page-reset",
	[DG_EV_SCRUB_STARTED] = "scrub-started",
	[DG_EV_SCRUB_PAUSED] = "scrub-paused",
	[DG_EV_SCRUB_RESUMED] = "scrub-resumed",
	[DG_EV_SCRUB_CANCELLED] = "scrub-cancelled",
	[DG_EV_SCRUB_FINISHED] = "scrub-finished",
	[DG_EV_DEVICE_MISSING] = "device-missing",
	[DG_EV_DEVICE_STALE] = "device-stale",
	[DG_EV_COUNTERS_CLEARED] = "counters-cleared",
	[DG_EV_REPLACE_STARTED] = "replace-started",
	[DG_EV_REPLACE_RESUMED] = "replace-resumed",
	[DG_EV_DEVICE_REPLACED] = "device-replaced",
	[DG_EV_REPLACE_FAILED] = "replace-failed",
};

const char *dg_ev_type_name(enum dg_ev_type t)
{
	return (unsigned)t < DG_EV_NR ? type_names[t] : "?";
}

void dg_event_init(struct dg_event *ev, enum dg_ev_type type)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->dev = -1;
	ev->page = ev->vpn = ev->offset = -1;
}

/* Unrecoverable faults and lost devices are errors, faults found or
 * repaired warnings (a device is failing), the rest notices. */
static enum dg_log_level level_of(enum dg_ev_type t)
{
	switch (t) {
	case DG_EV_FAULT_UNRECOVERABLE:
	case DG_EV_DEVICE_MISSING:
	case DG_EV_DEVICE_STALE:
	case DG_EV_REPLACE_FAILED:
		return DG_LOG_ERR;
	case DG_EV_FAULT_DETECTED:
	case DG_EV_FAULT_REPAIRED:
	case DG_EV_FAULT_RECOVERED:
		return DG_LOG_WARNING;
	default:
		return DG_LOG_NOTICE;
	}
}

struct json_object *dg_event_json(const struct dg_event *ev)
{
	struct json_object *r = json_object_new_object();
	char t[40];
	struct tm tm;

	gmtime_r(&ev->time.tv_sec, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(t + strlen(t), sizeof(t) - strlen(t), ".%03ldZ",
		 ev->time.tv_nsec / 1000000);
	json_add_u64(r, "seq", ev->seq);
	json_add_str(r, "time", t);
	json_add_str(r, "type", dg_ev_type_name(ev->type));
	if (ev->dev >= 0)
		json_add_u64(r, "device", (uint64_t)ev->dev);
	if (ev->page >= 0)
		json_add_u64(r, "page", (uint64_t)ev->page);
	if (ev->type <= DG_EV_FAULT_RECOVERED)	/* the fault events */
		json_add_str(r, "what", dg_fault_what_name(ev->what));
	if (ev->vpn >= 0)
		json_add_u64(r, "vpn", (uint64_t)ev->vpn);
	/* A file's name may hold quotes, newlines or bytes that are not
	 * UTF-8: json-c escapes them, path_hex keeps them exact. */
	if (ev->path[0])
		json_add_bytes(r, "path", ev->path);
	if (ev->offset >= 0)
		json_add_u64(r, "offset", (uint64_t)ev->offset);
	if (ev->detail[0])
		json_add_bytes(r, "detail", ev->detail);
	return r;
}

void dg_event_post(struct dg_events *e, struct dg_event *ev)
{
	struct json_object *r;

	clock_gettime(CLOCK_REALTIME, &ev->time);
	pthread_mutex_lock(&e->lock);
	ev->seq = ++e->seq;
	e->ring[(ev->seq - 1) % DG_EVENT_RING] = *ev;
	pthread_mutex_unlock(&e->lock);
	/* "event " and the record `daxguard-ctl events --json` gives, on
	 * one line: one grep finds it in syslog, the log file or the ring,
	 * and no name a file holds can split a record or forge another. */
	r = dg_event_json(ev);
	if (!r)
		return;
	dg_log(level_of(ev->type), "event %s", json_line(r));
	json_object_put(r);
}

unsigned dg_events_since(struct dg_events *e, uint64_t since,
			 struct dg_event *out, unsigned max, uint64_t *dropped)
{
	unsigned n = 0;

	pthread_mutex_lock(&e->lock);
	*dropped = 0;
	if (e->seq > since + DG_EVENT_RING) {
		*dropped = e->seq - DG_EVENT_RING - since;
		since = e->seq - DG_EVENT_RING;
	}
	for (uint64_t s = since + 1; s <= e->seq && n < max; s++)
		out[n++] = e->ring[(s - 1) % DG_EVENT_RING];
	pthread_mutex_unlock(&e->lock);
	return n;
}
