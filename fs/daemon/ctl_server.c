// SPDX-License-Identifier: MIT
/* ctl_server.c -- the daemon's control socket: status and scrub */
#include <errno.h>
#include <inttypes.h>
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

void dg_ctl_log_faults(struct dg_daemon *dd)
{
	struct dg_fault_event ev[32];
	unsigned n;

	while ((n = dg_vol_fault_events(dd->vol, dd->fault_seq, ev, 32))) {
		for (unsigned i = 0; i < n; i++) {
			char path[1024];
			uint64_t off;

			event_path(dd, &ev[i], path, sizeof(path), &off);
			dg_log(ev[i].kind == DG_FAULT_UNRECOVERABLE
				       ? DG_LOG_ERR : DG_LOG_WARNING,
			       "event fault=%s dev=%u row=%" PRIu64 " what=%s "
			       "path=%s offset=%" PRIu64 " action=%s",
			       fault_kind(ev[i].kind), ev[i].dev, ev[i].row,
			       ev[i].what, path, off, ev[i].action);
			dd->fault_seq = ev[i].seq;
		}
	}
}

static void status(struct dg_daemon *dd, struct out *o, bool json)
{
	struct dg_vol_info in;
	struct dg_fs_damage dmg;
	uint64_t f[DG_FAULT_NR];
	char uuid[37];

	dg_vol_get_info(dd->vol, &in);
	dg_fs_get_damage(dd->fs, &dmg);
	dg_vol_fault_counts(dd->vol, f);
	dg_uuid_format(in.uuid, uuid);
	if (json) {
		outf(o, "{\"uuid\":\"%s\",\"label\":\"%s\",\"mountpoint\":\"%s\","
		     "\"devices\":%u,\"present\":%u,\"missing_mask\":%u,"
		     "\"parity\":%u,\"redundancy\":\"%s\",\"degraded\":%s,"
		     "\"read_only\":%s,\"capacity_bytes\":%" PRIu64 ","
		     "\"free_bytes\":%" PRIu64 ",\"generation\":%" PRIu64 ","
		     "\"faults\":{\"detected\":%" PRIu64 ",\"repaired\":%" PRIu64
		     ",\"unrecoverable\":%" PRIu64 "},\"damaged_inodes\":%" PRIu64
		     ",\"lost_inode_pages\":%" PRIu64 ",\"needs_fsck\":%s,"
		     "\"device_paths\":\"%s\"}\n",
		     uuid, in.label, dd->mountpoint, in.ndev, in.present,
		     in.missing_mask, in.parity,
		     in.no_redundancy ? "none" : "full",
		     in.degraded ? "true" : "false",
		     in.read_only ? "true" : "false",
		     in.vpns * DG_PAGE_SIZE, in.free_vpns * DG_PAGE_SIZE,
		     in.generation, f[DG_FAULT_DETECTED], f[DG_FAULT_REPAIRED],
		     f[DG_FAULT_UNRECOVERABLE], dmg.inodes, dmg.inode_pages,
		     dmg.inodes || dmg.inode_pages ? "true" : "false", dd->devs);
		return;
	}
	outf(o, "volume %s%s%s\n", uuid, in.label[0] ? " label " : "", in.label);
	outf(o, "mountpoint %s\ndevices %s\n", dd->mountpoint, dd->devs);
	outf(o, "health %s (%u of %u devices present)%s\n",
	     in.degraded ? "DEGRADED" : "ok", in.present, in.ndev,
	     in.read_only ? ", read-only" : "");
	outf(o, "redundancy %s, parity %u\n", in.no_redundancy ? "none" : "full",
	     in.parity);
	outf(o, "capacity %" PRIu64 " MiB, free %" PRIu64 " MiB\n",
	     in.vpns * DG_PAGE_SIZE >> 20, in.free_vpns * DG_PAGE_SIZE >> 20);
	outf(o, "faults detected %" PRIu64 ", repaired %" PRIu64
	     ", unrecoverable %" PRIu64 "\n", f[DG_FAULT_DETECTED],
	     f[DG_FAULT_REPAIRED], f[DG_FAULT_UNRECOVERABLE]);
	if (dmg.inodes || dmg.inode_pages)
		outf(o, "metadata lost: %" PRIu64 " files or directories "
		     "damaged, %" PRIu64 " inode table pages: unmount and run "
		     "fsck.daxguard -y\n", dmg.inodes, dmg.inode_pages);
}

static void scrub(struct dg_daemon *dd, struct out *o, bool json)
{
	struct dg_scrub_report r;
	int ret = dg_vol_scrub(dd->vol, true, &r, NULL, NULL);

	dg_ctl_log_faults(dd);
	if (ret) {
		outf(o, json ? "{\"error\":\"%s\"}\n" : "error: %s\n",
		     strerror(-ret));
		return;
	}
	outf(o, json ? "{\"rows_checked\":%" PRIu64 ",\"detected\":%" PRIu64
		       ",\"repaired\":%" PRIu64 ",\"unrecoverable\":%" PRIu64
		       ",\"parity_mismatch\":%" PRIu64 ",\"parity_fixed\":%"
		       PRIu64 "}\n"
		     : "rows checked %" PRIu64 ", detected %" PRIu64
		       ", repaired %" PRIu64 ", unrecoverable %" PRIu64
		       ", parity mismatches %" PRIu64 " (fixed %" PRIu64 ")\n",
	     r.rows_checked, r.detected, r.repaired, r.unrecoverable,
	     r.parity_mismatch, r.parity_fixed);
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
		status(dd, &o, json);
	} else if (!strncmp(req, "scrub", 5)) {
		if (cred.uid != 0 && cred.uid != getuid())
			outf(&o, "error: permission denied\n");
		else
			scrub(dd, &o, json);
	} else {
		outf(&o, "error: unknown request\n");
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

int dg_ctl_start(struct dg_daemon *dd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dg_vol_info in;
	char uuid[37];
	const char *dir = "/run/daxguard";

	dg_vol_get_info(dd->vol, &in);
	dg_uuid_format(in.uuid, uuid);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		dir = "/tmp";
	snprintf(dd->sock_path, sizeof(dd->sock_path), "%s/%s.sock", dir, uuid);
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
}
