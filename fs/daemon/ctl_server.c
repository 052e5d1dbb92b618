// SPDX-License-Identifier: MIT
/* ctl_server.c -- the daemon's control socket: status and scrub */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <poll.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_proto.h"
#include "daemon.h"
#include "devlist.h"
#include "json.h"
#include "probe.h"

/* A file with something lost: data pages, or its metadata. */
struct damaged {
	uint64_t ino;
	bool metadata;
	uint64_t pages, first_off;
};

static int damaged_cmp(const void *a, const void *b)
{
	const struct damaged *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The damaged files, by inode: data pages lost (still the file's) and
 * metadata served as damaged. Caller frees *out. */
static unsigned damaged_files(struct dg_daemon *dd, struct damaged **out)
{
	struct dg_fs_damage dmg;
	struct dg_lost_page *lost;
	struct damaged *d;
	uint64_t *inos;
	unsigned n = 0, nm, nlost;

	dg_ctl_prune_lost(dd);
	dg_fs_get_damage(dd->fs, &dmg);
	lost = dg_vol_lost_list(dd->vol, &nlost);
	d = calloc(nlost + dmg.inodes + 1, sizeof(*d));
	inos = calloc(dmg.inodes + 1, sizeof(*inos));
	if (!d || !inos) {
		free(lost);
		free(d);
		free(inos);
		*out = NULL;
		return 0;
	}
	for (unsigned i = 0; i < nlost; i++)
		d[n++] = (struct damaged){ lost[i].ino, false, 1,
					   lost[i].fpage * DG_PAGE_SIZE };
	free(lost);
	nm = dg_fs_damaged_inodes(dd->fs, inos, (unsigned)dmg.inodes);
	for (unsigned i = 0; i < nm; i++)
		d[n++] = (struct damaged){ inos[i], true, 0, 0 };
	free(inos);
	qsort(d, n, sizeof(*d), damaged_cmp);
	/* One entry per file. */
	unsigned m = 0;

	for (unsigned i = 0; i < n; i++) {
		if (m && d[m - 1].ino == d[i].ino) {
			d[m - 1].metadata |= d[i].metadata;
			if (d[i].pages && (!d[m - 1].pages ||
					   d[i].first_off < d[m - 1].first_off))
				d[m - 1].first_off = d[i].first_off;
			d[m - 1].pages += d[i].pages;
			continue;
		}
		d[m++] = d[i];
	}
	*out = d;
	return m;
}

/* Device d's counters since the last "clear". */
static void dev_counts(struct dg_daemon *dd, unsigned d,
		       struct dg_dev_counts *c)
{
	const struct dg_dev_counts *b = &dd->dev_base[d];

	dg_vol_dev_counts(dd->vol, d, c);
	pthread_mutex_lock(&dd->dmg_lock);
	c->read_errors -= b->read_errors;
	c->csum_errors -= b->csum_errors;
	c->repaired -= b->repaired;
	c->unrecoverable -= b->unrecoverable;
	pthread_mutex_unlock(&dd->dmg_lock);
}

static struct json_object *device_table_json(struct dg_daemon *dd,
					     const struct dg_vol_info *in)
{
	struct json_object *a = json_object_new_array();

	for (unsigned d = 0; d < in->ndev; d++) {
		struct json_object *x = json_object_new_object();
		struct dg_dev_counts c;
		char path[PATH_MAX];

		dev_counts(dd, d, &c);
		json_add_u64(x, "index", d);
		json_add_bytes(x, "path", dg_replace_slot_path(dd, d, path,
								  sizeof(path)));
		json_add_str(x, "state", dg_replace_slot_state(dd, d));
		json_add_u64(x, "read_errors", c.read_errors);
		json_add_u64(x, "checksum_errors", c.csum_errors);
		json_add_u64(x, "repaired", c.repaired);
		json_add_u64(x, "unrecoverable", c.unrecoverable);
		json_object_array_add(a, x);
	}
	return a;
}

/* zpool status's config table: one line a device, its state and its
 * counters. */
static void device_table(struct dg_daemon *dd, struct dg_out *o,
			 const struct dg_vol_info *in)
{
	char esc[4 * 4096 + 1];

	dg_outf(o, "%5s  %-9s %8s %8s %8s %8s  %s\n", "INDEX", "STATE",
		"READ", "CKSUM", "REPAIRED", "UNRECOV", "PATH");
	for (unsigned d = 0; d < in->ndev; d++) {
		struct dg_dev_counts c;
		char path[PATH_MAX];

		dev_counts(dd, d, &c);
		dg_outf(o, "%5u  %-9s %8" PRIu64 " %8" PRIu64 " %8" PRIu64
			" %8" PRIu64 "  %s\n", d, dg_replace_slot_state(dd, d),
			c.read_errors, c.csum_errors, c.repaired,
			c.unrecoverable,
			ctl_escape(esc, sizeof(esc),
				   dg_replace_slot_path(dd, d, path,
							sizeof(path))));
	}
}

/* What status lists of the damaged files at most: files, and bytes of
 * reply (a JSON entry costs at most 8 bytes a byte of its path and some
 * numbers), so a reply stays bounded (docs/local-users.md). */
#define STATUS_FILES_MAX 4096
#define STATUS_LIST_BYTES (512u << 10)

static bool list_full(unsigned listed, size_t bytes)
{
	return listed >= STATUS_FILES_MAX || bytes >= STATUS_LIST_BYTES;
}

/* status --json, one line, through json-c (tools/json.h says
 * how a path or label that is not UTF-8 is written). */
static void status_json(struct dg_daemon *dd, struct dg_out *o,
			const struct dg_vol_info *in,
			const struct dg_fs_damage *dmg, const uint64_t *f,
			const struct damaged *d, unsigned nd,
			unsigned nlost_files, const char *uuid,
			const struct dg_peer *peer)
{
	uint64_t hidden = 0;
	unsigned listed = 0;
	size_t bytes = 0;
	struct json_object *r = json_object_new_object();
	struct json_object *fo = json_object_new_object();
	struct json_object *files = json_object_new_array();
	bool needs_fsck = dmg->inodes || dmg->inode_pages;
	char path[1024];

	json_add_str(r, "uuid", uuid);
	json_add_bytes(r, "label", in->label);
	json_add_bytes(r, "mountpoint", dd->mountpoint);
	json_add_str(r, "health", in->failed[0] ? "failed"
				  : needs_fsck	 ? "needs_fsck"
				  : nlost_files ? "data_lost"
				  : in->degraded ? "degraded"
						 : "ok");
	json_add_u64(r, "devices", in->ndev);
	{
		char *now = dg_devlist_now(dd);

		json_add_bytes(r, "device_list", now ? now : dd->devs);
		json_add_bytes(r, "mount_source", dd->devs);
		free(now);
	}
	json_add_u64(r, "present", in->present);
	json_add_u64(r, "missing_mask", in->missing_mask);
	json_add_u64(r, "parity", in->parity);
	json_add_str(r, "redundancy", in->no_redundancy ? "none" : "full");
	json_add_bool(r, "degraded", in->degraded);
	json_add_bool(r, "read_only", in->read_only);
	/* Degraded and still taking writes (-o degraded): the missing
	 * devices' pages are kept in parity until they are rebuilt. */
	json_add_bool(r, "writable", !in->read_only);
	json_add_bytes(r, "failed", in->failed[0] ? in->failed : NULL);
	json_add_u64(r, "capacity_bytes", in->vpns * DG_PAGE_SIZE);
	json_add_u64(r, "free_bytes", in->free_vpns * DG_PAGE_SIZE);
	json_add_u64(r, "meta_zone_bytes", in->zone_vpns * DG_PAGE_SIZE);
	json_add_u64(r, "meta_zone_free_bytes", in->zone_free * DG_PAGE_SIZE);
	json_add_u64(r, "meta_outside_zone_pages", in->meta_spill);
	/* How often writes filled whole rows (parity from the new data
	 * alone) rather than patching parity: what the layout earned. */
	json_add_u64(r, "rows_written_whole", in->rows_full);
	json_add_u64(r, "rows_patched", in->rows_patched);
	json_add_u64(r, "rows_written_before_journal", in->rows_new);
	json_add_u64(r, "rows_written_alone_before_journal", in->rows_lone);
	json_add_u64(r, "holes_filled_before_journal", in->holes_filled);
	json_add_u64(r, "freed_rows_blanked", in->rows_blanked);
	json_add_u64(r, "freed_pages_to_blank", in->blank_pending);
	json_add_u64(r, "freed_runs_not_blanked", in->blank_dropped);
	json_add_u64(r, "updates_verified_in_two_threads", in->updates_split);
	json_add_u64(r, "journal_appends_waited", in->appends_waited);
	json_add_u64(r, "generation", in->generation);
	{
		/* What is in core follows what is in use (issue 34). */
		struct dg_fs_cache c;

		dg_fs_cache_counts(dd->fs, &c);
		json_add_u64(r, "dirs_cached", c.dirs_cached);
		json_add_u64(r, "dir_loads", c.dirs_loaded);
		json_add_u64(r, "inodes_cached", c.inodes_cached);
		json_add_u64(r, "inode_loads", c.inode_loads);
	}
	{
		/* Whole-page overwrites sent to blank pages (remap.c). */
		uint64_t remapped, folded;

		dg_fs_remap_counts(dd->fs, &remapped, &folded);
		json_add_u64(r, "pages_remapped", remapped);
		json_add_u64(r, "remap_records_folded", folded);
	}
	json_object_object_add(r, "media", dg_media_status_json(dd));
	json_object_object_add(r, "writeback", dg_wbd_status_json(dd));
	json_add_u64(fo, "detected", f[DG_FAULT_DETECTED]);
	json_add_u64(fo, "repaired", f[DG_FAULT_REPAIRED]);
	json_add_u64(fo, "unrecoverable", f[DG_FAULT_UNRECOVERABLE]);
	json_add_u64(fo, "recovered", f[DG_FAULT_RECOVERED]);
	json_object_object_add(r, "faults", fo);
	json_add_u64(r, "damaged_inodes", nd);
	json_add_u64(r, "lost_inode_pages", dmg->inode_pages);
	json_add_bool(r, "data_lost", nlost_files > 0);
	json_add_bool(r, "needs_fsck", needs_fsck);
	json_add_bytes(r, "device_paths", dd->devs);
	json_object_object_add(r, "device_table", device_table_json(dd, in));
	{
		struct json_object *x = dg_replace_status_json(dd);

		if (x)
			json_object_object_add(r, "replace", x);
	}
	for (unsigned i = 0; i < nd; i++) {
		struct json_object *x;

		dg_fs_path(dd->fs, d[i].ino, path, sizeof(path));
		if (!dg_peer_sees(dd, peer, path) || list_full(listed, bytes)) {
			hidden++; /* counted, not named */
			continue;
		}
		listed++;
		bytes += 8 * strlen(path) + 160;
		x = json_object_new_object();
		json_add_bytes(x, "path", path);
		json_add_u64(x, "ino", d[i].ino);
		json_add_u64(x, "lost_pages", d[i].pages);
		json_object_object_add(x, "first_lost_offset",
				       json_object_new_int64(
					       d[i].pages ? (int64_t)d[i].first_off
							  : -1));
		json_add_bool(x, "metadata", d[i].metadata);
		json_object_array_add(files, x);
	}
	json_object_object_add(r, "damaged_files", files);
	/* Damaged files left out: ones the caller could not stat, and
	 * past STATUS_FILES_MAX. */
	json_add_u64(r, "damaged_files_not_listed", hidden);
	dg_outf(o, "%s\n", json_line(r));
	json_object_put(r);
}

/*
 * Health, worst first: "FAILED" (a persist failed: the volume turned
 * read-only, with the reason), "needs fsck" (metadata lost: only fsck gives it
 * up), "errors: data lost" (a file has pages nothing can recover; they
 * stay reported until the file no longer holds them), "DEGRADED" (a
 * device missing), else "ok" (zpool status, btrfs device stats).
 */
static void status(struct dg_daemon *dd, struct dg_out *o, bool json,
		   bool verbose, const struct dg_peer *peer)
{
	char esc[4 * 4096 + 1];
	unsigned hidden = 0, listed = 0;
	struct dg_vol_info in;
	struct dg_fs_damage dmg;
	struct damaged *d;
	uint64_t f[DG_FAULT_NR];
	char uuid[37], health[256] = "", path[1024];
	unsigned nd, nlost_files = 0;
	bool needs_fsck;

	dg_vol_get_info(dd->vol, &in);
	nd = damaged_files(dd, &d);
	dg_fs_get_damage(dd->fs, &dmg);
	dg_vol_fault_counts(dd->vol, f);
	pthread_mutex_lock(&dd->dmg_lock);
	for (unsigned k = 0; k < DG_FAULT_NR; k++)
		f[k] -= dd->fault_base[k];
	pthread_mutex_unlock(&dd->dmg_lock);
	for (unsigned i = 0; i < nd; i++)
		nlost_files += d[i].pages > 0;
	needs_fsck = dmg.inodes || dmg.inode_pages;
	dg_uuid_format(in.uuid, uuid);
	if (in.failed[0])
		snprintf(health, sizeof(health), "FAILED (%s)", in.failed);
	if (needs_fsck)
		snprintf(health + strlen(health), sizeof(health) -
			 strlen(health), "%sneeds fsck", health[0] ? ", " : "");
	if (nlost_files)
		snprintf(health + strlen(health), sizeof(health) -
			 strlen(health), "%serrors: data lost",
			 health[0] ? ", " : "");
	if (in.degraded)
		snprintf(health + strlen(health), sizeof(health) -
			 strlen(health), "%sDEGRADED", health[0] ? ", " : "");
	if (!health[0])
		snprintf(health, sizeof(health), "ok");
	if (json) {
		status_json(dd, o, &in, &dmg, f, d, nd, nlost_files, uuid,
			    peer);
		free(d);
		return;
	}
	/* Every name escaped (ctl_escape): one line, one record. */
	dg_outf(o, "volume %s%s%s\n", uuid, in.label[0] ? " label " : "",
		ctl_escape(esc, sizeof(esc), in.label));
	dg_outf(o, "mountpoint %s\n", ctl_escape(esc, sizeof(esc),
						 dd->mountpoint));
	{
		/* The devices as they are; the mount's source (findmnt)
		 * is the list at mount time, for the mount's life
		 * (device_list.c). */
		char *now = dg_devlist_now(dd);

		dg_outf(o, "devices %s\n", ctl_escape(esc, sizeof(esc),
						       now ? now : dd->devs));
		if (now && strcmp(now, dd->devs))
			dg_outf(o, "mounted as %s (the mount's source, as "
				"findmnt shows it, until the next mount; "
				"fstab needs the devices line)\n",
				ctl_escape(esc, sizeof(esc), dd->devs));
		free(now);
	}
	dg_outf(o, "health %s (%u of %u devices present)%s\n", health,
	     in.present, in.ndev, in.read_only ? ", read-only"
				  : in.degraded ? ", read-write" : "");
	dg_outf(o, "redundancy %s, parity %u\n", in.no_redundancy ? "none" : "full",
	     in.parity);
	dg_outf(o, "capacity %" PRIu64 " MiB, free %" PRIu64 " MiB\n",
	     in.vpns * DG_PAGE_SIZE >> 20, in.free_vpns * DG_PAGE_SIZE >> 20);
	dg_outf(o, "metadata zone %" PRIu64 " MiB, free %" PRIu64 " MiB",
	     in.zone_vpns * DG_PAGE_SIZE >> 20, in.zone_free * DG_PAGE_SIZE >> 20);
	if (in.meta_spill)
		dg_outf(o, "; full: %" PRIu64 " metadata pages put outside it "
		     "since the mount, without copies", in.meta_spill);
	dg_outf(o, "\n");
	dg_outf(o, "faults detected %" PRIu64 ", repaired %" PRIu64
	     ", unrecoverable %" PRIu64, f[DG_FAULT_DETECTED],
	     f[DG_FAULT_REPAIRED], f[DG_FAULT_UNRECOVERABLE]);
	/* Read-only: found and served from parity, not written back. */
	if (f[DG_FAULT_RECOVERED])
		dg_outf(o, ", recovered but not repaired %" PRIu64,
			f[DG_FAULT_RECOVERED]);
	dg_outf(o, "\n");
	dg_media_status_text(dd, o);
	device_table(dd, o, &in);
	dg_replace_status_text(dd, o);
	if (needs_fsck)
		dg_outf(o, "metadata lost: %" PRIu64 " files or directories "
		     "damaged, %" PRIu64 " inode table pages: unmount and run "
		     "fsck.daxguard -y\n", dmg.inodes, dmg.inode_pages);
	if (nlost_files)
		dg_outf(o, "data lost: %u %s pages that cannot be read: "
		     "restore or delete %s%s\n", nlost_files,
		     nlost_files == 1 ? "file has" : "files have",
		     nlost_files == 1 ? "it" : "them",
		     verbose ? "" : " (status -v lists them)");
	if (verbose && nd) {
		size_t start = o->len;

		dg_outf(o, "damaged files:\n");
		for (unsigned i = 0; i < nd; i++) {
			dg_fs_path(dd->fs, d[i].ino, path, sizeof(path));
			if (!dg_peer_sees(dd, peer, path) ||
			    list_full(listed, o->len - start)) {
				hidden++;
				continue;
			}
			listed++;
			dg_outf(o, "  %s:", ctl_escape(esc, sizeof(esc), path));
			if (d[i].pages)
				dg_outf(o, " %" PRIu64 " %s lost, the first at "
				     "offset %" PRIu64, d[i].pages,
				     d[i].pages == 1 ? "page" : "pages",
				     d[i].first_off);
			if (d[i].metadata)
				dg_outf(o, "%s metadata lost", d[i].pages ? ";" : "");
			dg_outf(o, "\n");
		}
		if (hidden)
			dg_outf(o, "  and %u more not listed (%s)\n", hidden,
				list_full(listed, o->len - start) ? "too many"
				: "files you could not stat");
	}
	free(d);
}

/* zpool clear: counters start again from zero, and lost pages are
 * forgotten until a read or a scrub finds them again. */
static void clear(struct dg_daemon *dd, struct dg_out *o)
{
	struct dg_event e;
	struct dg_vol_info in;

	dg_vol_get_info(dd->vol, &in);
	pthread_mutex_lock(&dd->dmg_lock);
	dg_vol_fault_counts(dd->vol, dd->fault_base);
	for (unsigned d = 0; d < in.ndev; d++)
		dg_vol_dev_counts(dd->vol, d, &dd->dev_base[d]);
	pthread_mutex_unlock(&dd->dmg_lock);
	dg_vol_lost_forget(dd->vol);
	dg_vol_fault_forget(dd->vol);
	dg_event_init(&e, DG_EV_COUNTERS_CLEARED);
	dg_event_post(&dd->events, &e);
	dg_outf(o, "cleared\n");
}

static void event_json(struct dg_out *o, const struct dg_event *ev)
{
	struct json_object *r = dg_event_json(ev);

	dg_outf(o, "%s\n", json_line(r));
	json_object_put(r);
}

/* Events whose path is a file of the volume (the others name devices,
 * which status shows anyone). */
static bool event_names_file(const struct dg_event *ev)
{
	return ev->type <= DG_EV_FAULT_RECOVERED ||
	       ev->type == DG_EV_PAGE_RESET;
}

/* zpool events: one line an event, oldest first, "#SEQ"; names escaped
 * (ctl_escape), so no name can make a line of its own. */
static void event_text(struct dg_out *o, const struct dg_event *ev)
{
	char t[40], esc[4 * sizeof(ev->detail) + 4 * sizeof(ev->path)];
	struct tm tm;

	localtime_r(&ev->time.tv_sec, &tm);
	strftime(t, sizeof(t), "%Y-%m-%d %H:%M:%S", &tm);
	dg_outf(o, "%s.%03ld #%" PRIu64 " %s", t, ev->time.tv_nsec / 1000000,
		ev->seq, dg_ev_type_name(ev->type));
	if (ev->dev >= 0)
		dg_outf(o, " device %d", ev->dev);
	if (ev->page >= 0)
		dg_outf(o, " page %" PRId64, ev->page);
	if (ev->type <= DG_EV_FAULT_RECOVERED)	/* the fault events */
		dg_outf(o, " (%s)", dg_fault_what_name(ev->what));
	if (ev->path[0])
		dg_outf(o, " %s", ctl_escape(esc, sizeof(esc), ev->path));
	if (ev->offset >= 0)
		dg_outf(o, " offset %" PRId64, ev->offset);
	if (ev->detail[0])
		dg_outf(o, ": %s", ctl_escape(esc, sizeof(esc), ev->detail));
	dg_outf(o, "\n");
}

/* The events after rq->since, up to CTL_EVENTS_PAGE bytes of them, and
 * the "next M" line a follower asks from (ctl_proto.h). A file's path
 * is left out of an event for a peer who could not stat it. */
static void events(struct dg_daemon *dd, const struct ctl_request *rq,
		   const struct dg_peer *peer, struct dg_out *o)
{
	uint64_t since = rq->since, dropped, last;
	struct dg_event *ev = malloc(64 * sizeof(*ev));
	unsigned n;
	bool first = true, more = false;

	if (!ev)
		return;
	while (!more &&
	       (n = dg_events_since(&dd->events, since, ev, 64, &dropped))) {
		if (first && dropped) {
			if (rq->json)
				dg_outf(o, "{\"dropped\":%" PRIu64 "}\n",
					dropped);
			else
				dg_outf(o, "(%" PRIu64 " older events dropped "
					"from the ring)\n", dropped);
		}
		first = false;
		for (unsigned i = 0; i < n; i++) {
			if (o->len >= CTL_EVENTS_PAGE) {
				more = true;
				break;
			}
			if (event_names_file(&ev[i]) && ev[i].path[0] &&
			    !dg_peer_sees(dd, peer, ev[i].path)) {
				ev[i].path[0] = 0;
				ev[i].offset = -1;
			}
			if (rq->json)
				event_json(o, &ev[i]);
			else
				event_text(o, &ev[i]);
			since = ev[i].seq;
		}
	}
	free(ev);
	/* A number from before a restart (the ring starts at 1 again):
	 * the follower goes on from now. */
	pthread_mutex_lock(&dd->events.lock);
	last = dd->events.seq;
	pthread_mutex_unlock(&dd->events.lock);
	if (since > last)
		since = last;
	dg_outf(o, "next %" PRIu64 "%s\n", since, more ? " more" : "");
}

/* An error reply: {"error": msg} with --json (through json-c, as every
 * JSON reply), else a line of text. */
static void reply_error(struct dg_out *o, bool json, const char *msg)
{
	struct json_object *r;

	if (!json) {
		dg_outf(o, "error: %s\n", msg);
		return;
	}
	r = json_object_new_object();
	json_add_str(r, "error", msg);
	dg_outf(o, "%s\n", json_line(r));
	json_object_put(r);
}

/*
 * The connections. One thread serves them all, none blocking it: every
 * request is answered at once (the scrub runs in its own thread, a
 * follower of events polls), and replies go out as each client reads
 * them. A client that sends no request within REQ_WAIT, or does not
 * read its reply within SEND_WAIT, is dropped; unprivileged users each
 * hold at most CONNS_UID connections and together CONNS, so none can
 * lock the others (or root) out. Memory: at most CONNS_HARD requests
 * and replies, each bounded (ctl_proto.h, docs/local-users.md).
 */
#define CONNS	   64
#define CONNS_UID  8
#define CONNS_HARD (CONNS + 32)
#define REQ_WAIT   5000		/* ms from accept to a whole request */
#define SEND_WAIT  10000	/* ms for the client to read its reply */

struct ctl_conn {
	int fd;			/* -1: free slot */
	uid_t uid;
	bool priv;
	uint64_t deadline;	/* dg_now_ms() */
	size_t reqlen;
	char req[CTL_REQ_MAX + 1];
	struct dg_out out;	/* the reply, once the request is whole */
	size_t sent;
	bool replying;
};

static struct ctl_conn ctl_conns[CONNS_HARD];

static void conn_close(struct ctl_conn *c)
{
	close(c->fd);
	c->fd = -1;
	free(c->out.buf);
	c->out = (struct dg_out){ 0 };
}

/* Answer the request line of c into c->out. */
/* sync(1) for the write-back hold: the kernel passes neither sync(2) nor
 * syncfs(2) on to a FUSE daemon, so what -o wb_max holds is committed
 * here when asked (anyone may: sync(2) needs no privilege either). Only
 * what was held when it came, each file once (dg_wb_sync()): the wait is
 * bounded by the hold (wb_max), however fast writers add to it. */
static void sync_held(struct dg_daemon *dd, struct dg_out *o, bool json)
{
	int ret = dd->wb_on ? dg_wb_sync(&dd->wb) : 0;
	struct json_object *r;

	if (ret) {
		reply_error(o, json, strerror(-ret));
		return;
	}
	if (!json) {
		dg_outf(o, "synced\n");
		return;
	}
	r = json_object_new_object();
	json_add_bool(r, "synced", true);
	dg_outf(o, "%s\n", json_line(r));
	json_object_put(r);
}

static void answer(struct dg_daemon *dd, struct ctl_conn *c)
{
	struct ctl_request rq;
	struct dg_peer peer;
	struct dg_out *o = &c->out;

	ctl_request_parse(c->req, &rq);
	if (dg_peer_get(dd, c->fd, &peer)) {
		reply_error(o, rq.json, "who is asking?");
		return;
	}
	/* A read that just failed counts, and a file just deleted no
	 * longer has lost pages. */
	dg_ctl_log_faults(dd);
	dg_ctl_prune_lost(dd);
	if (ctl_request_privileged(&rq) && !peer.privileged) {
		reply_error(o, rq.json, "permission denied");
	} else {
		switch (rq.cmd) {
		case CTL_STATUS:
			status(dd, o, rq.json, rq.verbose, &peer);
			break;
		case CTL_EVENTS:
			events(dd, &rq, &peer, o);
			break;
		case CTL_SCRUB_STATUS:
		case CTL_SCRUB:
			dg_scrub_cmd(dd, rq.args, rq.json, o);
			break;
		case CTL_REPLACE_STATUS:
		case CTL_REPLACE:
			dg_replace_cmd(dd, rq.args, rq.json, o);
			break;
		case CTL_CLEAR:
			clear(dd, o);
			break;
		case CTL_SYNC:
			sync_held(dd, o, rq.json);
			break;
		default:
			reply_error(o, rq.json, "unknown request");
		}
	}
	dg_peer_free(&peer);
}

/* Take what the client sent; once the request is whole, answer it. */
static void conn_read(struct dg_daemon *dd, struct ctl_conn *c)
{
	ssize_t n = read(c->fd, c->req + c->reqlen, CTL_REQ_MAX - c->reqlen);
	long end;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		conn_close(c);
		return;
	}
	c->reqlen += (size_t)n;
	end = ctl_request_end(c->req, c->reqlen, n == 0);
	if (end < 0) {
		conn_close(c);
		return;
	}
	if (end == 0)
		return;
	c->req[end] = 0;
	answer(dd, c);
	c->replying = true;
	c->sent = 0;
	c->deadline = dg_now_ms() + SEND_WAIT;
	if (!c->out.buf)
		conn_close(c); /* nothing to say (no memory) */
}

static void conn_write(struct ctl_conn *c)
{
	ssize_t n = send(c->fd, c->out.buf + c->sent, c->out.len - c->sent,
			 MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		dg_log(DG_LOG_DEBUG, "ctl reply: %s", strerror(errno));
		conn_close(c);
		return;
	}
	c->sent += (size_t)n;
	if (c->sent == c->out.len)
		conn_close(c);
}

/* Take the waiting connections, each within the caps or closed. */
static void accept_all(struct dg_daemon *dd)
{
	static unsigned refused;

	for (int k = 0; k < 64; k++) {
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		unsigned all = 0, unpriv = 0, mine = 0;
		struct ctl_conn *slot = NULL;
		bool priv;
		int fd = accept4(dd->sock_fd, NULL, NULL,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			/* Out of descriptors or memory: the socket stays
			 * readable, so wait a little instead of spinning. */
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				usleep(100 * 1000);
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			close(fd);
			continue;
		}
		priv = dg_peer_is_privileged(cred.uid);
		for (unsigned i = 0; i < CONNS_HARD; i++) {
			struct ctl_conn *c = &ctl_conns[i];

			if (c->fd < 0) {
				if (!slot)
					slot = c;
				continue;
			}
			all++;
			unpriv += !c->priv;
			mine += c->uid == cred.uid;
		}
		if (!slot || (!priv && (unpriv >= CONNS || mine >= CONNS_UID))) {
			if (refused++ % 1000 == 0)
				dg_log(DG_LOG_WARNING, "control socket: "
				       "refusing clients of uid %u (%u "
				       "connections, %u refused)",
				       (unsigned)cred.uid, all, refused);
			close(fd);
			continue;
		}
		*slot = (struct ctl_conn){ .fd = fd, .uid = cred.uid,
					   .priv = priv,
					   .deadline = dg_now_ms() + REQ_WAIT };
	}
}

static void *ctl_main(void *arg)
{
	struct dg_daemon *dd = arg;
	struct pollfd p[CONNS_HARD + 1];
	struct ctl_conn *of[CONNS_HARD + 1];

	for (unsigned i = 0; i < CONNS_HARD; i++)
		ctl_conns[i].fd = -1;
	uint64_t swept = 0;

	while (!dd->stop) {
		uint64_t now = dg_now_ms();
		unsigned np = 1;

		/* Every 200 ms, however busy the socket. */
		if (now - swept >= 200) {
			dg_ctl_log_faults(dd);
			dg_ctl_prune_lost(dd);
			swept = now;
		}
		p[0] = (struct pollfd){ dd->sock_fd, POLLIN, 0 };
		for (unsigned i = 0; i < CONNS_HARD; i++) {
			struct ctl_conn *c = &ctl_conns[i];

			if (c->fd < 0)
				continue;
			if (now >= c->deadline) {
				conn_close(c); /* too slow: dropped */
				continue;
			}
			of[np] = c;
			p[np++] = (struct pollfd){ c->fd, c->replying ? POLLOUT
							       : POLLIN, 0 };
		}
		if (poll(p, np, 200) <= 0)
			continue;
		for (unsigned i = 1; i < np; i++) {
			struct ctl_conn *c = of[i];

			if (!p[i].revents)
				continue;
			if (c->replying)
				conn_write(c);
			else
				conn_read(dd, c);
		}
		if (p[0].revents & POLLIN)
			accept_all(dd);
	}
	for (unsigned i = 0; i < CONNS_HARD; i++)
		if (ctl_conns[i].fd >= 0)
			conn_close(&ctl_conns[i]);
	dg_ctl_log_faults(dd);
	return NULL;
}

/* Sockets "<uuid>-<pid>.sock|.commit" of daemons that are gone (killed
 * before they could remove them): removed, so the directory does not
 * fill up now that each daemon has its own. */
static void remove_dead_sockets(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *dash = strrchr(de->d_name, '-');
		char *end, path[300];
		long pid;

		/* 36 characters of UUID, '-', the pid, the suffix */
		if (!dash || dash - de->d_name != 36)
			continue;
		pid = strtol(dash + 1, &end, 10);
		if (end == dash + 1 || pid <= 0 ||
		    (strcmp(end, ".sock") && strcmp(end, ".commit")))
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
}

/*
 * The path the one missing slot was last known by: the path of the
 * device list (which names every slot) that no device was opened by.
 * NULL when the list does not say: it does not name every slot, or more
 * than one slot is missing.
 */
static char *last_known_path(struct dg_daemon *dd,
			     const struct dg_vol_info *in, char **given,
			     int ng)
{
	const char *left = NULL;
	unsigned missing = 0;

	if (ng != (int)in->ndev)
		return NULL;
	for (unsigned o = 0; o < in->ndev; o++)
		missing += !dg_vol_dev_path(dd->vol, o);
	/* One slot missing: the one path of the list that no device was
	 * opened by is its, whatever the list's order. With more, which
	 * path was which slot's cannot be told from the list. */
	if (missing != 1)
		return NULL;
	for (int i = 0; i < ng; i++) {
		bool opened = false;

		for (unsigned o = 0; o < in->ndev; o++) {
			const char *p = dg_vol_dev_path(dd->vol, o);

			if (p && !strcmp(p, given[i]))
				opened = true;
		}
		if (!opened) {
			if (left)
				return NULL;
			left = given[i];
		}
	}
	return left ? strdup(left) : NULL;
}

/*
 * Each device index's path and state, as status shows them: a present
 * device by the path it was opened by; a slot left out by the path
 * given for it when that path carries this volume's superblock for the
 * slot (stale), else by the path it was given as, if any (missing: the
 * path it was last known by). Each slot left out is an event.
 */
static void slots_init(struct dg_daemon *dd, const struct dg_vol_info *in)
{
	char *given[DG_MAX_DEVS];
	int ng = devlist_split(dd->devs, given, DG_MAX_DEVS);

	for (unsigned d = 0; d < in->ndev; d++) {
		const char *p = dg_vol_dev_path(dd->vol, d);
		struct dg_event e;

		dd->slot_state[d] = "online";
		if (p) {
			dd->slot_path[d] = strdup(p);
			continue;
		}
		dd->slot_state[d] = "missing";
		for (int i = 0; i < ng; i++) {
			struct dg_probe pr;
			char err[256];

			if (dg_dev_probe(given[i], &pr, err, sizeof(err)) ||
			    pr.kind != DG_PROBE_DAXGUARD ||
			    memcmp(pr.uuid, in->uuid, 16) || pr.dev_index != d)
				continue;
			dd->slot_state[d] = "stale";
			free(dd->slot_path[d]);
			dd->slot_path[d] = strdup(given[i]);
		}
		if (!dd->slot_path[d])
			dd->slot_path[d] = last_known_path(dd, in, given, ng);
		dg_event_init(&e, dd->slot_state[d][0] == 's'
					  ? DG_EV_DEVICE_STALE
					  : DG_EV_DEVICE_MISSING);
		e.dev = (int)d;
		if (dd->slot_path[d])
			snprintf(e.path, sizeof(e.path), "%s",
				 dd->slot_path[d]);
		snprintf(e.detail, sizeof(e.detail), "left out at mount: its "
			 "pages are read from parity");
		dg_event_post(&dd->events, &e);
	}
	if (ng > 0)
		devlist_free(given, (unsigned)ng);
}

int dg_ctl_start(struct dg_daemon *dd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dg_vol_info in;
	char uuid[37];
	const char *dir = "/run/daxguard";
	int ret;

	pthread_mutex_init(&dd->dmg_lock, NULL);
	pthread_mutex_init(&dd->events.lock, NULL);
	pthread_mutex_init(&dd->faults_lock, NULL);
	dg_vol_get_info(dd->vol, &in);
	slots_init(dd, &in);
	dg_uuid_format(in.uuid, uuid);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		dir = "/tmp";
	remove_dead_sockets(dir);
	/* Keyed by the daemon too: two copies of one volume (a clone, a
	 * backup being checked) mounted at once each get their own. */
	snprintf(dd->sock_path, sizeof(dd->sock_path), "%s/%s-%d.sock", dir,
		 uuid, (int)getpid());
	unlink(dd->sock_path);
	dd->sock_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (dd->sock_fd < 0)
		goto fail;
	memcpy(sa.sun_path, dd->sock_path, sizeof(dd->sock_path));
	/* Non-blocking: the loop accepts until none is left. */
	if (bind(dd->sock_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(dd->sock_path, 0666) < 0 || listen(dd->sock_fd, 64) < 0 ||
	    fcntl(dd->sock_fd, F_SETFL, O_NONBLOCK) < 0)
		goto fail;
	/* A scrub or a replace running at the last unmount or crash goes
	 * on. Their jobs set up before the thread that answers commands
	 * about them starts (ThreadSanitizer saw it lock the replace's
	 * mutex while this thread initialised it). */
	dg_scrub_init(dd);
	dg_replace_init(dd);
	ret = pthread_create(&dd->ctl_thread, NULL, ctl_main, dd);
	if (ret) {
		dg_scrub_stop(dd);
		dg_replace_stop(dd);
		/* pthread_create() returns its error, errno is not set:
		 * what fail: logs. */
		errno = ret;
		goto fail;
	}
	return 0;
fail:
	dg_log(DG_LOG_ERR, "control socket '%s': %s", dd->sock_path,
	       strerror(errno));
	if (dd->sock_fd >= 0)
		close(dd->sock_fd);
	dd->sock_fd = -1;
	return -1;
}

void dg_ctl_stop(struct dg_daemon *dd)
{
	if (dd->sock_fd < 0)
		return;
	dd->stop = 1;
	pthread_join(dd->ctl_thread, NULL);
	/* No command can start it again now; it reports through the
	 * registry and dmg_lock. */
	dg_scrub_stop(dd);
	dg_replace_stop(dd);
	dg_ctl_log_faults(dd);
	dg_ctl_reset_gone(dd);
	close(dd->sock_fd);
	unlink(dd->sock_path);
	for (unsigned d = 0; d < DG_MAX_DEVS; d++) {
		free(dd->slot_path[d]);
		dd->slot_path[d] = NULL;
	}
	pthread_mutex_destroy(&dd->dmg_lock);
	pthread_mutex_destroy(&dd->events.lock);
	pthread_mutex_destroy(&dd->faults_lock);
}
