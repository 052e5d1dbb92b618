// SPDX-License-Identifier: MIT
/*
 * wb_daemon.c -- -o writeback in the daemon: the hold (wb_hold.c) wired
 * to the engine, its status, and the kernel's dirty limit for this
 * connection (the bdi in /sys/class/bdi).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "json.h"

static int commit_batch(void *arg, uint64_t ino, const struct dg_wseg *seg,
			unsigned n, unsigned requests)
{
	struct dg_daemon *dd = arg;
	int ret = dg_fs_write_batch(dd->fs, ino, seg, n, requests);

	/* Unlinked and closed since (dg_inode_drop_last()): its bytes go
	 * with it, as a page cache's would. */
	if (ret == -ENOENT)
		return 0;
	if (ret)
		dg_log(DG_LOG_ERR, "ino %" PRIu64 ": writing back held data "
		       "failed (%s); the next fsync or close of it says so",
		       ino, strerror(-ret));
	return ret;
}

int dg_wbd_start(struct dg_daemon *dd)
{
	int ret;

	/* Only when asked for (-o wb_max): the kernel does not pass
	 * sync(2) or syncfs(2) on to a FUSE daemon, so what is held is not
	 * made durable by them, where without the hold every page the
	 * kernel writes back is on the media when its write returns. */
	if (!dd->writeback || !dd->wb_max)
		return 0;
	dg_wb_init(&dd->wb, dd->wb_max, dd->wb_commit_ms, commit_batch, dd);
	ret = dg_wb_start(&dd->wb);
	if (ret) {
		dg_wb_stop(&dd->wb);
		dg_wb_destroy(&dd->wb);
		return ret;
	}
	dd->wb_on = true;
	return 0;
}

void dg_wbd_stop(struct dg_daemon *dd)
{
	int ret;

	if (!dd->wb_on)
		return;
	ret = dg_wb_stop(&dd->wb);
	if (ret)
		dg_log(DG_LOG_ERR, "held data not written at unmount: %s",
		       strerror(-ret));
}

void dg_wbd_free(struct dg_daemon *dd)
{
	if (!dd->wb_on)
		return;
	dd->wb_on = false;
	dg_wb_destroy(&dd->wb);
}

struct json_object *dg_wbd_status_json(struct dg_daemon *dd)
{
	struct json_object *x = json_object_new_object();
	struct dg_wb_counts c = { 0 };

	if (dd->wb_on)
		dg_wb_get_counts(&dd->wb, &c);
	json_add_bool(x, "enabled", dd->wb_on);
	json_add_u64(x, "held_bytes", c.held);
	json_add_u64(x, "held_peak_bytes", c.held_peak);
	json_add_u64(x, "held_max_bytes", dd->wb_on ? c.max : 0);
	json_add_u64(x, "buffer_bytes", c.alloc);
	json_add_u64(x, "buffer_peak_bytes", c.alloc_peak);
	json_add_u64(x, "commit_interval_ms", dd->wb_on ? c.interval_ms : 0);
	json_add_u64(x, "writes_held", c.requests_held);
	json_add_u64(x, "batches_committed", c.batches);
	json_add_u64(x, "bytes_committed", c.bytes_committed);
	json_add_u64(x, "batches_failed", c.errors);
	return x;
}

/* The "major:minor" of the mount at mnt, from /proc/self/mountinfo: not
 * a stat(), which would ask this daemon before it serves. */
static int mount_devno(const char *mnt, char *out, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char dev[32], point[4096];

		/* id parent major:minor root mountpoint ...; the last
		 * match is the newest mount there (ours). Mount points
		 * with spaces are escaped (\040): compared as written. */
		if (sscanf(line, "%*u %*u %31s %*s %4095s", dev, point) == 2 &&
		    !strcmp(point, mnt)) {
			snprintf(out, size, "%s", dev);
			ret = 0;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

static int write_attr(const char *dir, const char *name, unsigned v)
{
	char path[128], s[16];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(s, sizeof(s), "%u", v);
	if (write(fd, s, (size_t)n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * The kernel lets a FUSE connection dirty 1% of the dirty limit, and
 * strictly (strict_limit): a sequential writer is throttled to what the
 * daemon takes back at once. -o bdi_ratio=N raises max_ratio to N and
 * lifts strict_limit, so that the connection shares the global dirty
 * limit as a disk does. Root only; failures are noted, not fatal (the
 * mount works as before).
 */
void dg_wbd_tune_bdi(struct dg_daemon *dd)
{
	char dev[32], dir[80];
	int ret;

	if (!dd->writeback || dd->bdi_ratio <= 0)
		return;
	ret = mount_devno(dd->mountpoint, dev, sizeof(dev));
	if (!ret) {
		snprintf(dir, sizeof(dir), "/sys/class/bdi/%s", dev);
		ret = write_attr(dir, "max_ratio", (unsigned)dd->bdi_ratio);
		if (!ret && dd->bdi_ratio > 1)
			ret = write_attr(dir, "strict_limit", 0);
	}
	if (ret)
		dg_log(DG_LOG_NOTICE, "bdi_ratio=%d not applied: %s "
		       "(the kernel's dirty limit for FUSE stays)",
		       dd->bdi_ratio, strerror(-ret));
	else
		dg_log(DG_LOG_INFO, "bdi %s: max_ratio=%d%s", dev,
		       dd->bdi_ratio, dd->bdi_ratio > 1 ? ", strict_limit=0"
							: "");
}
