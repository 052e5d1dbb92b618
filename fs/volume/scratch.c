// SPDX-License-Identifier: MIT
/*
 * scratch.c -- a device seen through a private, copy-on-write mapping
 *
 * fsck -n must not write, yet a volume whose journal holds committed
 * updates is only consistent after they are replayed: checked as it
 * lies, it shows the half-applied updates as damage the mount would
 * never see. A scratch device is the device's bytes mapped MAP_PRIVATE:
 * every store lands in anonymous memory of this process, copied from
 * the device page by page as it is first written, and nothing ever
 * reaches the file or block device (the kernel never writes a private
 * mapping back). A volume opened on scratch devices (DG_OPEN_SCRATCH)
 * replays its journal and makes its repairs as a writable open would,
 * through the same media layer, into memory only; closing it drops
 * them all. The device is opened read-only with a shared lock, as a
 * read-only open is: a mounted volume stays refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpmem.h>

#include "volume_i.h"

static void *scratch_memcpy(void *dst, const void *src, size_t len,
			    unsigned flags)
{
	(void)flags;
	return memcpy(dst, src, len);
}

static void *scratch_memset(void *dst, int c, size_t len, unsigned flags)
{
	(void)flags;
	return memset(dst, c, len);
}

/* Memory of this process: nothing to make durable, nothing can fail.
 * Still a fence, for the non-temporal stores of dg_dev_stream(). */
static void scratch_persist(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
	pmem_drain();
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

int dg_dev_open_scratch(struct dg_dev *d, const char *path, char *err,
			size_t errlen)
{
	struct stat st;
	off_t size;
	void *p;
	int ret;

	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->path = strdup(path);
	if (!d->path)
		return -ENOMEM;
	d->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", path,
			 strerror(errno));
		goto fail;
	}
	if (fstat(d->fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat '%s': %s", path,
			 strerror(errno));
		goto fail;
	}
	/* Device DAX cannot be mapped privately. */
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		ret = -EOPNOTSUPP;
		snprintf(err, errlen, "'%s' cannot be mapped copy-on-write "
			 "(not a regular file or block device)", path);
		goto fail;
	}
	if (flock(d->fd, LOCK_SH | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		snprintf(err, errlen, "'%s' is in use by another process "
			 "(mounted or being checked)", path);
		goto fail;
	}
	size = lseek(d->fd, 0, SEEK_END);
	if (size <= 0) {
		ret = size < 0 ? -errno : -ENOSPC;
		snprintf(err, errlen, "'%s' is empty", path);
		goto fail;
	}
	/* NORESERVE: only the pages the replay writes are copied; a
	 * device larger than memory must not fail the overcommit check. */
	p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_NORESERVE, d->fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "cannot map '%s' copy-on-write: %s",
			 path, strerror(errno));
		goto fail;
	}
	d->base = p;
	d->size = (uint64_t)size;
	d->memcpy_fn = scratch_memcpy;
	d->memset_fn = scratch_memset;
	d->persist_fn = scratch_persist;
	d->fence_only = true;
	d->coarse = false;
	/* A page not yet copied is still read from the file: cut short
	 * under us, it faults as a shared mapping does. */
	ret = dg_dev_watch(d, PROT_READ | PROT_WRITE, err, errlen);
	if (ret)
		goto fail;
	d->present = true;
	return 0;
fail:
	dg_dev_close(d);
	return ret;
}

/*
 * After the scratch open's replay, the view takes nothing more: the
 * checks that follow see the replayed volume as a read-only open sees
 * a volume, so no repair is made or offered (even in memory) and each
 * finding says what a repair would do. The close writes nothing either.
 */
void dg_vol_make_read_only(struct dg_vol *vol)
{
	vol->read_only = true;
}
