// SPDX-License-Identifier: MIT
/* ctl_server.c -- the daemon's control socket: status and scrub */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "json.h"

/* A growing reply buffer. */
struct out {
	char *buf;
	size_t len, cap;
};

__attribute__((format(printf, 2, 3)))
static void outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf ? o->buf + o->len : NULL,
			      o->buf ? o->cap - o->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (o->buf && o->len + (size_t)n < o->cap) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = o->cap ? o->cap * 2 : 4096;

		while (cap < o->len + (size_t)n + 1)
			cap *= 2;
		char *b = realloc(o->buf, cap);

		if (!b)
			return;
		o->buf = b;
		o->cap = cap;
	}
}

static const char *fault_kind(enum dg_fault k)
{
	return k == DG_FAULT_DETECTED	? "detected"
	       : k == DG_FAULT_REPAIRED ? "repaired"
					: "unrecoverable";
}

/* The file a fault event hit, when it hit file data. */
static void event_path(struct dg_daemon *dd, const struct dg_fault_event *ev,
		       char *path, size_t len, uint64_t *offset)
{
	uint64_t ino, fpage;

	snprintf(path, len, "-");
	*offset = 0;
	if (strcmp(ev->what, "data") || ev->row >= dg_vol_rows(dd->vol) ||
	    dg_vol_row_is_parity(dd->vol, ev->row, ev->dev))
		return;
	if (dg_fs_owner(dd->fs, dg_loc_vpn(dd->vol, ev->dev, ev->row), &ino,
			&fpage) == 0) {
		dg_fs_path(dd->fs, ino, path, len);
		*offset = fpage * DG_PAGE_SIZE;
	}
}

/* Remember a data page that could not be recovered, and whose page of
 * which file it was, so status can name the file for as long as the
 * page is still that file's. */
static void note_lost(struct dg_daemon *dd, const struct dg_fault_event *ev)
{
	struct dg_lost_page lp;

	if (ev->kind != DG_FAULT_UNRECOVERABLE || strcmp(ev->what, "data") ||
	    ev->row >= dg_vol_rows(dd->vol) ||
	    dg_vol_row_is_parity(dd->vol, ev->row, ev->dev))
		return;
	lp.vpn = dg_loc_vpn(dd->vol, ev->dev, ev->row);
	if (dg_fs_owner(dd->fs, lp.vpn, &lp.ino, &lp.fpage))
		return; /* a free page: no file lost anything */
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
}

/* Drop lost pages that are no longer the file page they were: the file
 * was deleted or truncated, so what the error named is gone. */
static void prune_lost(struct dg_daemon *dd)
{
	pthread_mutex_lock(&dd->dmg_lock);
	for (unsigned i = 0; i < dd->nlost;) {
		uint64_t ino, fpage;

		if (dg_fs_owner(dd->fs, dd->lost[i].vpn, &ino, &fpage) == 0 &&
		    ino == dd->lost[i].ino && fpage == dd->lost[i].fpage)
			i++;
		else
			dd->lost[i] = dd->lost[--dd->nlost];
	}
	pthread_mutex_unlock(&dd->dmg_lock);
}

/*
 * One log line per fault event: "event " and a JSON object built with
 * json-c, so that a file name with spaces, quotes, newlines or bytes
 * that are not UTF-8 (json_add_bytes: path_hex) can neither break the
 * record nor forge another.
 */
static void log_event(const struct dg_fault_event *ev, const char *path,
		      uint64_t off)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return;
	json_add_str(o, "fault", fault_kind(ev->kind));
	json_add_u64(o, "dev", ev->dev);
	json_add_u64(o, "row", ev->row);
	json_add_str(o, "what", ev->what);
	if (strcmp(path, "-")) {
		json_add_bytes(o, "path", path);
		json_add_u64(o, "offset", off);
	}
	json_add_str(o, "action", ev->action);
	dg_log(ev->kind == DG_FAULT_UNRECOVERABLE ? DG_LOG_ERR
						  : DG_LOG_WARNING,
	       "event %s", json_line(o));
	json_object_put(o);
}

void dg_ctl_log_faults(struct dg_daemon *dd)
{
	struct dg_fault_event ev[32];
	unsigned n;

	while ((n = dg_vol_fault_events(dd->vol, dd->fault_seq, ev, 32))) {
		for (unsigned i = 0; i < n; i++) {
			char path[1024];
			uint64_t off;

			event_path(dd, &ev[i], path, sizeof(path), &off);
			note_lost(dd, &ev[i]);
			log_event(&ev[i], path, off);
			dd->fault_seq = ev[i].seq;
		}
	}
}

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
	struct damaged *d;
	uint64_t *inos;
	unsigned n = 0, nm;

	prune_lost(dd);
	dg_fs_get_damage(dd->fs, &dmg);
	pthread_mutex_lock(&dd->dmg_lock);
	d = calloc(dd->nlost + dmg.inodes + 1, sizeof(*d));
	inos = calloc(dmg.inodes + 1, sizeof(*inos));
	if (!d || !inos) {
		pthread_mutex_unlock(&dd->dmg_lock);
		free(d);
		free(inos);
		*out = NULL;
		return 0;
	}
	for (unsigned i = 0; i < dd->nlost; i++)
		d[n++] = (struct damaged){ dd->lost[i].ino, false, 1,
					   dd->lost[i].fpage * DG_PAGE_SIZE };
	pthread_mutex_unlock(&dd->dmg_lock);
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

/* DESIGN §4: status --json, one line, through json-c (tools/json.h says
 * how a path or label that is not UTF-8 is written). */
static void status_json(struct dg_daemon *dd, struct out *o,
			const struct dg_vol_info *in,
			const struct dg_fs_damage *dmg, const uint64_t *f,
			const struct damaged *d, unsigned nd,
			unsigned nlost_files, const char *uuid)
{
	struct json_object *r = json_object_new_object();
	struct json_object *fo = json_object_new_object();
	struct json_object *files = json_object_new_array();
	bool needs_fsck = dmg->inodes || dmg->inode_pages;
	char path[1024];

	json_add_str(r, "uuid", uuid);
	json_add_bytes(r, "label", in->label);
	json_add_bytes(r, "mountpoint", dd->mountpoint);
	json_add_str(r, "health", needs_fsck	 ? "needs_fsck"
				  : nlost_files ? "data_lost"
				  : in->degraded ? "degraded"
						 : "ok");
	json_add_u64(r, "devices", in->ndev);
	json_add_u64(r, "present", in->present);
	json_add_u64(r, "missing_mask", in->missing_mask);
	json_add_u64(r, "parity", in->parity);
	json_add_str(r, "redundancy", in->no_redundancy ? "none" : "full");
	json_add_bool(r, "degraded", in->degraded);
	json_add_bool(r, "read_only", in->read_only);
	json_add_u64(r, "capacity_bytes", in->vpns * DG_PAGE_SIZE);
	json_add_u64(r, "free_bytes", in->free_vpns * DG_PAGE_SIZE);
	json_add_u64(r, "generation", in->generation);
	json_add_u64(fo, "detected", f[DG_FAULT_DETECTED]);
	json_add_u64(fo, "repaired", f[DG_FAULT_REPAIRED]);
	json_add_u64(fo, "unrecoverable", f[DG_FAULT_UNRECOVERABLE]);
	json_object_object_add(r, "faults", fo);
	json_add_u64(r, "damaged_inodes", nd);
	json_add_u64(r, "lost_inode_pages", dmg->inode_pages);
	json_add_bool(r, "data_lost", nlost_files > 0);
	json_add_bool(r, "needs_fsck", needs_fsck);
	json_add_bytes(r, "device_paths", dd->devs);
	for (unsigned i = 0; i < nd; i++) {
		struct json_object *x = json_object_new_object();

		dg_fs_path(dd->fs, d[i].ino, path, sizeof(path));
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
	outf(o, "%s\n", json_line(r));
	json_object_put(r);
}

/*
 * Health, worst first: "needs fsck" (metadata lost: only fsck gives it
 * up), "errors: data lost" (a file has pages nothing can recover; they
 * stay reported until the file no longer holds them), "DEGRADED" (a
 * device missing), else "ok" (zpool status, btrfs device stats).
 */
static void status(struct dg_daemon *dd, struct out *o, bool json,
		   bool verbose)
{
	struct dg_vol_info in;
	struct dg_fs_damage dmg;
	struct damaged *d;
	uint64_t f[DG_FAULT_NR];
	char uuid[37], health[96] = "", path[1024];
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
	if (needs_fsck)
		snprintf(health, sizeof(health), "needs fsck");
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
		status_json(dd, o, &in, &dmg, f, d, nd, nlost_files, uuid);
		free(d);
		return;
	}
	outf(o, "volume %s%s%s\n", uuid, in.label[0] ? " label " : "", in.label);
	outf(o, "mountpoint %s\ndevices %s\n", dd->mountpoint, dd->devs);
	outf(o, "health %s (%u of %u devices present)%s\n", health,
	     in.present, in.ndev, in.read_only ? ", read-only" : "");
	outf(o, "redundancy %s, parity %u\n", in.no_redundancy ? "none" : "full",
	     in.parity);
	outf(o, "capacity %" PRIu64 " MiB, free %" PRIu64 " MiB\n",
	     in.vpns * DG_PAGE_SIZE >> 20, in.free_vpns * DG_PAGE_SIZE >> 20);
	outf(o, "faults detected %" PRIu64 ", repaired %" PRIu64
	     ", unrecoverable %" PRIu64 "\n", f[DG_FAULT_DETECTED],
	     f[DG_FAULT_REPAIRED], f[DG_FAULT_UNRECOVERABLE]);
	if (needs_fsck)
		outf(o, "metadata lost: %" PRIu64 " files or directories "
		     "damaged, %" PRIu64 " inode table pages: unmount and run "
		     "fsck.daxguard -y\n", dmg.inodes, dmg.inode_pages);
	if (nlost_files)
		outf(o, "data lost: %u %s pages that cannot be read: "
		     "restore or delete %s%s\n", nlost_files,
		     nlost_files == 1 ? "file has" : "files have",
		     nlost_files == 1 ? "it" : "them",
		     verbose ? "" : " (status -v lists them)");
	if (verbose && nd) {
		outf(o, "damaged files:\n");
		for (unsigned i = 0; i < nd; i++) {
			dg_fs_path(dd->fs, d[i].ino, path, sizeof(path));
			outf(o, "  %s:", path);
			if (d[i].pages)
				outf(o, " %" PRIu64 " %s lost, the first at "
				     "offset %" PRIu64, d[i].pages,
				     d[i].pages == 1 ? "page" : "pages",
				     d[i].first_off);
			if (d[i].metadata)
				outf(o, "%s metadata lost", d[i].pages ? ";" : "");
			outf(o, "\n");
		}
	}
	free(d);
}

/* zpool clear: counters start again from zero, and lost pages are
 * forgotten until a read or a scrub finds them again. */
static void clear(struct dg_daemon *dd, struct out *o)
{
	pthread_mutex_lock(&dd->dmg_lock);
	dg_vol_fault_counts(dd->vol, dd->fault_base);
	dd->nlost = 0;
	pthread_mutex_unlock(&dd->dmg_lock);
	outf(o, "cleared\n");
}

/* Of the unrecoverable events after seq: how many hit data pages in use
 * (data lost) and how many only free pages, parity or checksums (no data
 * lost, but no redundancy for their rows until fsck resets them). Only
 * the last DG_FAULT_RING events are kept: a scrub that finds more counts
 * the rest as in use. */
static void classify_lost(struct dg_daemon *dd, uint64_t seq,
			  uint64_t total, uint64_t *in_use, uint64_t *other)
{
	struct dg_fault_event ev[32];
	unsigned n;

	*in_use = *other = 0;
	while ((n = dg_vol_fault_events(dd->vol, seq, ev, 32))) {
		for (unsigned i = 0; i < n; i++) {
			seq = ev[i].seq;
			if (ev[i].kind != DG_FAULT_UNRECOVERABLE)
				continue;
			if (!strcmp(ev[i].what, "data") &&
			    ev[i].row < dg_vol_rows(dd->vol) &&
			    !dg_vol_row_is_parity(dd->vol, ev[i].row,
						  ev[i].dev) &&
			    dg_vpn_allocated(dd->vol,
					     dg_loc_vpn(dd->vol, ev[i].dev,
							ev[i].row)))
				++*in_use;
			else
				++*other;
		}
	}
	if (*in_use + *other < total)
		*in_use = total - *other;
	else if (*in_use + *other > total)
		*other = total > *in_use ? total - *in_use : 0;
}

static void scrub(struct dg_daemon *dd, struct out *o, bool json)
{
	struct dg_scrub_report r;
	uint64_t seq, in_use, other;
	int ret;

	dg_ctl_log_faults(dd);
	seq = dd->fault_seq;
	ret = dg_vol_scrub(dd->vol, true, &r, NULL, NULL);
	if (!ret)
		classify_lost(dd, seq, r.unrecoverable, &in_use, &other);
	dg_ctl_log_faults(dd);
	if (json) {
		struct json_object *js = json_object_new_object();

		if (ret) {
			json_add_str(js, "error", strerror(-ret));
		} else {
			json_add_u64(js, "rows_checked", r.rows_checked);
			json_add_u64(js, "detected", r.detected);
			json_add_u64(js, "repaired", r.repaired);
			json_add_u64(js, "unrecoverable", r.unrecoverable);
			json_add_u64(js, "parity_mismatch", r.parity_mismatch);
			json_add_u64(js, "parity_fixed", r.parity_fixed);
			json_add_u64(js, "unrecoverable_in_use", in_use);
			json_add_u64(js, "unrecoverable_free", other);
		}
		outf(o, "%s\n", json_line(js));
		json_object_put(js);
		return;
	}
	if (ret) {
		outf(o, "error: %s\n", strerror(-ret));
		return;
	}
	outf(o, "rows checked %" PRIu64 ", detected %" PRIu64 ", repaired %"
	     PRIu64 ", unrecoverable %" PRIu64 ", parity mismatches %" PRIu64
	     " (fixed %" PRIu64 ")\n", r.rows_checked, r.detected, r.repaired,
	     r.unrecoverable, r.parity_mismatch, r.parity_fixed);
	if (in_use)
		outf(o, "data lost: %" PRIu64 " %s in use cannot be read: "
		     "'daxguard-ctl %s status -v' names the files\n", in_use,
		     in_use == 1 ? "page" : "pages", dd->mountpoint);
	if (other)
		outf(o, "redundancy lost: %" PRIu64 " free, parity or checksum "
		     "%s cannot be read (no file data in them): unmount and "
		     "run fsck.daxguard -y to reset them\n", other,
		     other == 1 ? "page" : "pages");
}

/* An error reply: {"error": msg} with --json (through json-c, as every
 * JSON reply), else a line of text. */
static void reply_error(struct out *o, bool json, const char *msg)
{
	struct json_object *r;

	if (!json) {
		outf(o, "error: %s\n", msg);
		return;
	}
	r = json_object_new_object();
	json_add_str(r, "error", msg);
	outf(o, "%s\n", json_line(r));
	json_object_put(r);
}

/* One request line, one reply, close. Status is open to anyone who can
 * reach the socket; scrub writes and is for root or the mount's owner. */
static void serve(struct dg_daemon *dd, int fd)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct pollfd p = { fd, POLLIN, 0 };
	struct out o = { 0 };
	char req[128];
	ssize_t n = 0;
	bool json;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
		return;
	if (poll(&p, 1, 2000) == 1)
		n = read(fd, req, sizeof(req) - 1);
	if (n <= 0)
		return;
	req[n] = 0;
	req[strcspn(req, "\r\n")] = 0;
	json = strstr(req, " json") != NULL;
	if (!strncmp(req, "status", 6)) {
		dg_ctl_log_faults(dd); /* a read that just failed counts */
		status(dd, &o, json, strstr(req, " verbose") != NULL);
	} else if (!strncmp(req, "scrub", 5) || !strncmp(req, "clear", 5)) {
		if (cred.uid != 0 && cred.uid != getuid())
			reply_error(&o, json, "permission denied");
		else if (req[1] == 'c')
			scrub(dd, &o, json);
		else
			clear(dd, &o);
	} else {
		reply_error(&o, json, "unknown request");
	}
	if (o.buf && write(fd, o.buf, o.len) < 0)
		dg_log(DG_LOG_DEBUG, "ctl reply: %s", strerror(errno));
	free(o.buf);
}

static void *ctl_main(void *arg)
{
	struct dg_daemon *dd = arg;

	while (!dd->stop) {
		struct pollfd p = { dd->sock_fd, POLLIN, 0 };

		dg_ctl_log_faults(dd);
		if (poll(&p, 1, 200) == 1) {
			int fd = accept4(dd->sock_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				serve(dd, fd);
				close(fd);
			}
		}
	}
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

int dg_ctl_start(struct dg_daemon *dd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dg_vol_info in;
	char uuid[37];
	const char *dir = "/run/daxguard";

	pthread_mutex_init(&dd->dmg_lock, NULL);
	dg_vol_get_info(dd->vol, &in);
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
	if (bind(dd->sock_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(dd->sock_path, 0666) < 0 || listen(dd->sock_fd, 16) < 0)
		goto fail;
	if (pthread_create(&dd->ctl_thread, NULL, ctl_main, dd))
		goto fail;
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
	close(dd->sock_fd);
	unlink(dd->sock_path);
	free(dd->lost);
	dd->lost = NULL;
	pthread_mutex_destroy(&dd->dmg_lock);
}
