// SPDX-License-Identifier: MIT
/* media.c -- device layer over libpmem2 (and libpmem's non-temporal copy) */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <libpmem.h>

#include "media.h"
#include "volume.h"

/* Linux 5.14; a libc older than that lacks the name. The call is only a
 * hint: an older kernel refuses it (EINVAL) and the pages fault in. */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif


static int map_fail(struct dg_dev *d, char *err, size_t errlen,
		    const char *what)
{
	snprintf(err, errlen, "cannot map '%s': %s: %s", d->path, what,
		 pmem2_errormsg());
	return -EIO;
}

/*
 * libpmem2 maps regular files and device DAX but not block devices
 * (pmem, loop, NVMe): those get a shared mapping of their own, stores by
 * memcpy and persistence by msync(), which is what libpmem2 does for
 * any non-DAX mapping too.
 */
static void *blk_memcpy(void *dst, const void *src, size_t len,
			unsigned flags)
{
	(void)flags;
	return memcpy(dst, src, len);
}

static void *blk_memset(void *dst, int c, size_t len, unsigned flags)
{
	(void)flags;
	return memset(dst, c, len);
}

static long page_size;

/* Persist of a page-cache mapping (a file not on tmpfs, a block
 * device): msync, whose failure the caller must see. libpmem2's own
 * persist for such maps drops it. */
static int sync_pages(const void *addr, size_t len)
{
	uintptr_t p = (uintptr_t)addr & ~(uintptr_t)(page_size - 1);

	if (msync((void *)p, len + ((uintptr_t)addr - p), MS_SYNC))
		return -errno;
	return 0;
}

static int blk_map(struct dg_dev *d, char *err, size_t errlen)
{
	uint64_t size;
	void *p;

	if (ioctl(d->fd, BLKGETSIZE64, &size) < 0 || size == 0) {
		snprintf(err, errlen, "cannot size block device '%s': %s",
			 d->path, size ? strerror(errno) : "empty");
		return -EIO;
	}
	p = mmap(NULL, size, PROT_READ | (d->rdonly ? 0 : PROT_WRITE),
		 MAP_SHARED, d->fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "cannot map '%s': %s", d->path,
			 strerror(errno));
		return -EIO;
	}
	d->base = p;
	d->size = size;
	d->memcpy_fn = blk_memcpy;
	d->memset_fn = blk_memset;
	d->coarse = true;
	return 0;
}

/*
 * A file on tmpfs (the /dev/shm images that stand in for pmem here) has
 * no medium behind its page cache: msync makes nothing more durable and
 * only costs a system call per persist, eight per random 4 KiB write
 * with parity. Stores through the shared map are in the page cache at
 * once, which is all a crash of the daemon can observe, and a power loss
 * takes the whole tmpfs with it, msync or not. So a persist there is a
 * fence, as on pmem whose caches are persistent (eADR).
 */
static void tmpfs_persist(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
	/* sfence: it also orders the non-temporal stores of
	 * dg_dev_stream(), which a locked instruction does not. */
	pmem_drain();
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static bool on_tmpfs(int fd)
{
	struct statfs sf;

	return fstatfs(fd, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

/*
 * Map the whole device shared. Page store granularity is what plain
 * files on tmpfs give (no pmem here); on real pmem libpmem2
 * picks cache-line flushing by itself.
 */
static int dev_map(struct dg_dev *d, char *err, size_t errlen)
{
	struct pmem2_config *cfg = NULL;
	int ret;

	if (pmem2_source_from_fd(&d->src, d->fd))
		return map_fail(d, err, errlen, "source");
	if (pmem2_config_new(&cfg)) {
		ret = map_fail(d, err, errlen, "config");
		goto out;
	}
	pmem2_config_set_required_store_granularity(cfg,
						    PMEM2_GRANULARITY_PAGE);
	if (d->rdonly)
		pmem2_config_set_protection(cfg, PMEM2_PROT_READ);
	if (pmem2_map_new(&d->map, cfg, d->src)) {
		ret = map_fail(d, err, errlen, "map");
		goto out;
	}
	d->base = pmem2_map_get_address(d->map);
	d->size = pmem2_map_get_size(d->map);
	d->memcpy_fn = pmem2_get_memcpy_fn(d->map);
	d->memset_fn = pmem2_get_memset_fn(d->map);
	d->persist_fn = pmem2_get_persist_fn(d->map);
	d->coarse = pmem2_map_get_store_granularity(d->map) ==
		    PMEM2_GRANULARITY_PAGE;
	if (!d->coarse) {
		d->flush_fn = pmem2_get_flush_fn(d->map);
		d->drain_fn = pmem2_get_drain_fn(d->map);
	}
	if (d->coarse && on_tmpfs(d->fd)) {
		d->persist_fn = tmpfs_persist;
		d->fence_only = true;
		d->coarse = false;
	}
	ret = 0;
out:
	pmem2_config_delete(&cfg);
	return ret;
}

int dg_dev_open(struct dg_dev *d, const char *path, bool rdonly, bool nolock,
		char *err, size_t errlen)
{
	struct stat st;
	int ret;

	memset(d, 0, sizeof(*d));
	if (!page_size)
		page_size = sysconf(_SC_PAGESIZE);
	d->fd = -1;
	d->rdonly = rdonly;
	d->path = strdup(path);
	if (!d->path)
		return -ENOMEM;
	d->fd = open(path, (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
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
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode) &&
	    !S_ISCHR(st.st_mode)) {
		ret = -EINVAL;
		snprintf(err, errlen,
			 "'%s' is not a regular file, block or DAX device",
			 path);
		goto fail;
	}
	/* One writer per volume: the lock lives as long as the fd. */
	if (!(nolock && rdonly) &&
	    flock(d->fd, (rdonly ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		snprintf(err, errlen, "'%s' is in use by another process "
			 "(mounted or being checked)", path);
		goto fail;
	}
	if (S_ISREG(st.st_mode) && st.st_size == 0) {
		ret = -ENOSPC;
		snprintf(err, errlen, "'%s' is empty", path);
		goto fail;
	}
	ret = S_ISBLK(st.st_mode) ? blk_map(d, err, errlen)
				  : dev_map(d, err, errlen);
	if (!ret)
		ret = dg_dev_watch(d, PROT_READ | (rdonly ? 0 : PROT_WRITE),
				   err, errlen);
	if (ret)
		goto fail;
	d->present = true;
	return 0;
fail:
	dg_dev_close(d);
	return ret;
}

void dg_dev_close(struct dg_dev *d)
{
	/* A fault nobody looked at (a source read by a bare memcpy, a
	 * device closed right after) still latches the volume, or is at
	 * least said: its reader may have taken zeros for its bytes. */
	if (dg_dev_fault_check(d) && !d->latch)
		dg_log(DG_LOG_ERR, "device %s: SIGBUS at byte %llu (image "
		       "truncated, file system full, or media poisoned) "
		       "while it was open", d->path ? d->path : "?",
		       (unsigned long long)atomic_load(&d->fault->first));
	/* Before the unmap: the range may be mapped again by anyone. */
	dg_sigbus_unwatch(d->fault);
	if (d->map)
		pmem2_map_delete(&d->map);
	else if (d->base)
		munmap(d->base, d->size);
	if (d->src)
		pmem2_source_delete(&d->src);
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	memset(d, 0, sizeof(*d));
	d->fd = -1;
}

int dg_dev_watch(struct dg_dev *d, int prot, char *err, size_t errlen)
{
	int ret = dg_sigbus_watch(d->base, d->size, prot, &d->fault);

	if (ret)
		snprintf(err, errlen, "cannot watch the mapping of '%s' for "
			 "faults: %s", d->path, strerror(-ret));
	return ret;
}

int dg_dev_fault_check(const struct dg_dev *d)
{
	if (!dg_dev_faulted(d))
		return 0;
	if (d->latch)
		dg_latch_set(d->latch, -EIO, "device %s: SIGBUS at byte %llu "
			     "(image truncated, file system full, or media "
			     "poisoned)", d->path,
			     (unsigned long long)atomic_load(&d->fault->first));
	return -EIO;
}

/* The latched error of d's volume, 0 while no persist has failed and
 * d's mapping has not faulted (which latches it). */
static int dg_dev_refused(const struct dg_dev *d)
{
	/* on is set after err (dg_latch_set()), both by the latch's lock:
	 * whoever sees it set sees the error. */
	if (!d->latch || !dg_latch_on(d->latch))
		return dg_dev_fault_check(d);
	return d->latch->err ? d->latch->err : -EIO;
}

/* The counts (media_counts.h): relaxed, each its own word; a reader
 * sums them without stopping anyone. */
static inline void count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* The 64-byte lines [off, off + len) touches: what a flush loop over
 * the range flushes (pmem2's persist, line by line). A device persisted
 * by msync is counted the same, so counts do not depend on the media. */
static uint64_t lines_of(uint64_t off, uint64_t len)
{
	uint64_t lo = off & ~(uint64_t)(DG_LINE_SIZE - 1);
	uint64_t hi = (off + len + DG_LINE_SIZE - 1) &
		      ~(uint64_t)(DG_LINE_SIZE - 1);

	return len ? (hi - lo) / DG_LINE_SIZE : 0;
}

void dg_dev_counts(const struct dg_dev *d, struct dg_media_counts *c)
{
	c->bytes_stored = atomic_load_explicit(&d->tally.stored,
					       memory_order_relaxed);
	c->streamed_bytes = atomic_load_explicit(&d->tally.streamed,
						 memory_order_relaxed);
	c->lines_flushed = atomic_load_explicit(&d->tally.lines,
						memory_order_relaxed);
	c->fences = atomic_load_explicit(&d->tally.fences,
					 memory_order_relaxed);
}

/*
 * POSIX_FADV_WILLNEED on the file the map is of: the kernel starts the
 * page cache reads and returns (madvise(MADV_WILLNEED) on a shared file
 * map ends in the same call, vfs_fadvise()). It reads at most the
 * device's readahead window (read_ahead_kb, 128 KiB by default) a call,
 * so a range goes in pieces of that default.
 */
#define WILLNEED_PIECE (128u << 10)

void dg_dev_will_need(struct dg_dev *d, uint64_t off, uint64_t len)
{
	if (!d->present || off >= d->size)
		return;
	count(&d->tally.hints, 1);
	/* Fine-grained maps (pmem, tmpfs) have no page cache to fill. */
	if (!d->coarse || d->fd < 0)
		return;
	if (len > d->size - off)
		len = d->size - off;
	for (uint64_t done = 0; done < len; done += WILLNEED_PIECE) {
		uint64_t n = len - done < WILLNEED_PIECE ? len - done
							 : WILLNEED_PIECE;

		/* Only a hint: a failure costs the overlap, nothing else. */
		(void)posix_fadvise(d->fd, (off_t)(off + done), (off_t)n,
				    POSIX_FADV_WILLNEED);
	}
}

void dg_dev_map_in(struct dg_dev *d, uint64_t off, uint64_t len)
{
	uintptr_t a, e;

	if (!d->present || off >= d->size)
		return;
	if (len > d->size - off)
		len = d->size - off;
	a = (uintptr_t)dg_dev_ptr(d, off) & ~(uintptr_t)(DG_PAGE_SIZE - 1);
	e = (uintptr_t)dg_dev_ptr(d, off + len);
	/* Only a hint: a failure (an older kernel) costs the faults. */
	(void)madvise((void *)a, e - a, MADV_POPULATE_READ);
}

uint64_t dg_dev_hints(const struct dg_dev *d)
{
	return atomic_load_explicit(&d->tally.hints, memory_order_relaxed);
}

int dg_dev_next_data(struct dg_dev *d, uint64_t off, uint64_t end,
		     uint64_t *lo, uint64_t *hi)
{
	struct stat st;
	off_t a, b;

	if (off >= end)
		return 0;
	if (d->fd < 0 || fstat(d->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -EOPNOTSUPP;
	a = lseek(d->fd, (off_t)off, SEEK_DATA);
	if (a < 0)
		return errno == ENXIO ? 0 : -EOPNOTSUPP;
	if ((uint64_t)a >= end)
		return 0;
	b = lseek(d->fd, a, SEEK_HOLE);
	if (b < 0)
		return -EOPNOTSUPP;
	*lo = (uint64_t)a;
	*hi = (uint64_t)b < end ? (uint64_t)b : end;
	return 1;
}

static bool mirrored(const struct dg_dev *d, uint64_t off, size_t len)
{
	return d->mirror && off >= d->mirror_lo && off + len <= d->mirror_hi;
}

/*
 * Stores go through the caches: most of what an update writes is read
 * again soon (the journal ring, parity and checksum pages of rows that
 * are updated again) or is too small for anything else to pay.
 */
int dg_dev_write(struct dg_dev *d, uint64_t off, const void *src,
		 size_t len)
{
	int ret = dg_dev_refused(d);

	if (ret)
		return ret;
	if (d->obs)
		d->obs->write(d->obs->arg, d->path, off, src, len);
	/* A store of at most a line (a checksum, a seal, a journal entry's
	 * header) by memcpy(): libpmem2's copy without a flush is a plain
	 * temporal copy through the caches as well (memmove_mov_*_noflush;
	 * the other maps' copies are memcpy()), but its choice of how costs
	 * some 100 instructions a call, most of a small store's cost, and a
	 * 4 KiB write makes 15 such stores. */
	if (len <= DG_LINE_SIZE)
		memcpy(d->base + off, src, len);
	else
		d->memcpy_fn(d->base + off, src, len, PMEM2_F_MEM_NOFLUSH);
	count(&d->tally.stored, len);
	/* The store may have been the one that faulted (media.h). */
	ret = dg_dev_fault_check(d);
	if (ret)
		return ret;
	return mirrored(d, off, len) ? dg_dev_write(d->mirror, off, src, len)
				     : 0;
}

/*
 * Megabytes of new rows are not read back soon: a store through the
 * caches would first read each line it fills, as much traffic again as
 * the write, and push out the request the hashes and parity still read.
 * Non-temporal, by libpmem's copy (the one libpmem2 uses on pmem;
 * libpmem2's own on a page-granular map would msync each), drained by
 * the persist that follows every write. A device persisted by msync
 * keeps cached stores: msync writes back the page cache, which is where
 * they are.
 */
int dg_dev_stream(struct dg_dev *d, uint64_t off, const void *src,
		  size_t len)
{
	int ret;

	if (d->coarse || len < DG_LINE_SIZE)
		return dg_dev_write(d, off, src, len);
	ret = dg_dev_refused(d);
	if (ret)
		return ret;
	if (d->obs)
		d->obs->write(d->obs->arg, d->path, off, src, len);
	pmem_memcpy(d->base + off, src, len,
		    PMEM_F_MEM_NONTEMPORAL | PMEM_F_MEM_NODRAIN);
	count(&d->tally.stored, len);
	count(&d->tally.streamed, len);
	ret = dg_dev_fault_check(d);
	if (ret)
		return ret;
	return mirrored(d, off, len) ? dg_dev_stream(d->mirror, off, src, len)
				     : 0;
}

/* Zeros over [off, off + len), as the observer (tests) sees them. */
static void observe_zeros(struct dg_dev *d, uint64_t off, size_t len)
{
	static const uint8_t zeros[4096];

	if (!d->obs)
		return;
	for (size_t done = 0; done < len; done += sizeof(zeros)) {
		size_t n = len - done < sizeof(zeros) ? len - done
						      : sizeof(zeros);

		d->obs->write(d->obs->arg, d->path, off + done, zeros, n);
	}
}

int dg_dev_zero(struct dg_dev *d, uint64_t off, size_t len)
{
	int ret = dg_dev_refused(d);

	if (ret)
		return ret;
	observe_zeros(d, off, len);
	d->memset_fn(d->base + off, 0, len, PMEM2_F_MEM_NOFLUSH);
	count(&d->tally.stored, len);
	ret = dg_dev_fault_check(d);
	if (ret)
		return ret;
	return mirrored(d, off, len) ? dg_dev_zero(d->mirror, off, len) : 0;
}

/*
 * Give [off, off + len) of a device file back to its file system
 * (FITRIM, trim.c): the range then reads as zeros. Only where the
 * range holds zeros already, durably (trim.c's step 1), so a punch need
 * not be durable: whether it happened or not, the bytes read the same.
 * Regular files only: -EOPNOTSUPP for
 * a block or DAX device (no discard here) or a file system that cannot
 * punch holes.
 */
int dg_dev_punch(struct dg_dev *d, uint64_t off, size_t len)
{
	struct stat st;
	int ret = dg_dev_refused(d);

	if (ret)
		return ret;
	if (d->fd < 0 || fstat(d->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -EOPNOTSUPP;
	observe_zeros(d, off, len);
	if (fallocate(d->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len) < 0)
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return mirrored(d, off, len) ? dg_dev_punch(d->mirror, off, len) : 0;
}

int dg_dev_persist(struct dg_dev *d, uint64_t off, size_t len)
{
	int ret = dg_dev_refused(d);

	/* After a failure nothing is made durable either: what was
	 * written since the last good persist stays as uncertain as the
	 * failure left it, for the journal to redo at the next open. */
	if (ret)
		return ret;
	if (d->obs)
		ret = d->obs->persist(d->obs->arg, d->path, off, len);
	if (!ret) {
		/* pmem2's persist flushes the lines and drains: one fence
		 * (tmpfs_persist: the fence alone); msync counts as one. */
		count(&d->tally.lines, lines_of(off, len));
		count(&d->tally.fences, 1);
	}
	if (!ret && d->coarse)
		ret = sync_pages(d->base + off, len);
	else if (!ret)
		d->persist_fn(d->base + off, len);
	/* Looked at after the fence too: a store of another thread that
	 * went to a page of zeros is made "durable" here, and must not
	 * count as such (media.h). */
	if (!ret && dg_dev_faulted(d))
		return dg_dev_fault_check(d);
	if (ret && d->latch)
		dg_latch_set(d->latch, ret, "persist of %s at byte %llu failed: "
			     "%s", d->path, (unsigned long long)off,
			     strerror(-ret));
	/* The new device of a replace is as durable as the old one. */
	if (!ret && d->mirror && off < d->mirror_hi && off + len > d->mirror_lo) {
		uint64_t lo = off > d->mirror_lo ? off : d->mirror_lo;
		uint64_t hi = off + len < d->mirror_hi ? off + len : d->mirror_hi;

		ret = dg_dev_persist(d->mirror, lo, hi - lo);
	}
	return ret;
}

void dg_latch_init(struct dg_latch *l)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
}

int dg_latch_set(struct dg_latch *l, int err, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&l->lock);
	if (!atomic_load(&l->on)) {
		va_start(ap, fmt);
		vsnprintf(l->why, sizeof(l->why), fmt, ap);
		va_end(ap);
		l->err = err;
		atomic_store(&l->on, true);
		dg_log(DG_LOG_ERR, "%s: volume read-only until remount",
		       l->why);
	}
	pthread_mutex_unlock(&l->lock);
	return err;
}

void dg_latch_why(struct dg_latch *l, char *buf, size_t len)
{
	pthread_mutex_lock(&l->lock);
	snprintf(buf, len, "%s", atomic_load(&l->on) ? l->why : "");
	pthread_mutex_unlock(&l->lock);
}

void dg_flushset_init(struct dg_flushset *fs)
{
	fs->r = fs->inline_r;
	fs->n = 0;
	fs->cap = sizeof(fs->inline_r) / sizeof(fs->inline_r[0]);
	fs->oom = false;
}

void dg_flushset_add(struct dg_flushset *fs, unsigned dev, uint64_t off,
		     uint64_t len)
{
	struct dg_flushrange *last = fs->n ? &fs->r[fs->n - 1] : NULL;

	/* Most adds extend the previous range (pages of one extent). */
	if (last && last->dev == dev && off >= last->off &&
	    off <= last->off + last->len) {
		if (off + len > last->off + last->len)
			last->len = off + len - last->off;
		return;
	}
	if (fs->n == fs->cap) {
		unsigned cap = fs->cap ? fs->cap * 2 : 16;
		bool in = fs->r == fs->inline_r;
		struct dg_flushrange *r = in ? malloc(cap * sizeof(*r))
					     : realloc(fs->r, cap * sizeof(*r));

		if (r && in)
			memcpy(r, fs->inline_r, fs->n * sizeof(*r));
		if (!r) {
			fs->oom = true;
			return;
		}
		fs->r = r;
		fs->cap = cap;
	}
	fs->r[fs->n++] = (struct dg_flushrange){ dev, off, len };
}

void dg_flushset_merge(struct dg_flushset *to, const struct dg_flushset *from)
{
	for (unsigned i = 0; i < from->n; i++)
		dg_flushset_add(to, from->r[i].dev, from->r[i].off,
				from->r[i].len);
	to->oom = to->oom || from->oom;
}

void dg_flushset_fini(struct dg_flushset *fs)
{
	if (fs->r != fs->inline_r)
		free(fs->r);
	dg_flushset_init(fs);	/* empty, and fit for use again */
}

/* One range of a round, on a device flushed by the line. */
struct rspan {
	struct dg_dev *d;
	uint64_t off, len;
};

/* Add [off, off + len) of d to a round, and its mirror's part (a
 * replace: the new device is as durable as the old one). A device
 * persisted by msync is persisted here and now, apart: its call drains
 * nothing else. */
static int round_add(struct rspan *s, unsigned *n, struct dg_dev *d,
		     uint64_t off, uint64_t len)
{
	int ret = 0;

	if (!d->coarse)
		s[(*n)++] = (struct rspan){ d, off, len };
	else
		ret = dg_dev_persist(d, off, len);
	if (d->mirror && d->coarse)
		return ret; /* dg_dev_persist() did the mirror */
	if (d->mirror && off < d->mirror_hi && off + len > d->mirror_lo) {
		uint64_t lo = off > d->mirror_lo ? off : d->mirror_lo;
		uint64_t hi = off + len < d->mirror_hi ? off + len
						       : d->mirror_hi;
		int r = round_add(s, n, d->mirror, lo, hi - lo);

		ret = ret ? ret : r;
	}
	return ret;
}

/*
 * The fine-grained part of a round: every range flushed (pmem), then
 * one drain. The observer sees one persist of every range; the counts
 * one fence.
 */
static int round_drain(struct rspan *s, unsigned n)
{
	pmem2_drain_fn drain = NULL;
	bool fence = false;
	const struct dg_media_observer *obs = NULL;
	int ret = 0;

	for (unsigned i = 0; i < n && !ret; i++) {
		ret = dg_dev_refused(s[i].d);
		if (s[i].d->obs)
			obs = s[i].d->obs;
	}
	if (ret || !n)
		return ret;
	if (obs && obs->persist_round) {
		struct dg_obs_span *o = malloc(n * sizeof(*o));

		if (!o)
			return -ENOMEM;
		for (unsigned i = 0; i < n; i++)
			o[i] = (struct dg_obs_span){ s[i].d->path, s[i].off,
						     s[i].len };
		ret = obs->persist_round(obs->arg, o, n);
		free(o);
	} else if (obs) {
		for (unsigned i = 0; i < n && !ret; i++)
			if (s[i].d->obs)
				ret = obs->persist(obs->arg, s[i].d->path,
						   s[i].off, s[i].len);
	}
	if (ret) {
		if (s[0].d->latch)
			dg_latch_set(s[0].d->latch, ret,
				     "persist of %u ranges (%s at byte %llu) "
				     "failed: %s", n, s[0].d->path,
				     (unsigned long long)s[0].off,
				     strerror(-ret));
		return ret;
	}
	for (unsigned i = 0; i < n; i++) {
		struct dg_dev *d = s[i].d;

		count(&d->tally.lines, lines_of(s[i].off, s[i].len));
		if (d->flush_fn && d->drain_fn) {
			d->flush_fn(d->base + s[i].off, s[i].len);
			drain = d->drain_fn;
		} else if (d->fence_only) {
			fence = true;
		} else {
			d->persist_fn(d->base + s[i].off, s[i].len);
		}
	}
	/* One fence for the round, whatever the devices. */
	count(&s[0].d->tally.fences, 1);
	if (drain)
		drain();
	else if (fence)
		tmpfs_persist(NULL, 0);
	/* A store to a device of the round faulted (media.h). */
	for (unsigned i = 0; i < n && !ret; i++)
		ret = dg_dev_fault_check(s[i].d);
	return ret;
}

/*
 * Start the write-back of [off, off + len) of a device persisted by
 * msync, and of its mirror's part, without waiting: only a head start
 * for the msync that follows, which still writes, waits and reports.
 * A round's msyncs, one device after the other, each wrote its pages
 * and then waited for them: on a file system that allocates at
 * write-back (sparse images on ext4, delayed allocation) each msync
 * then also committed the file system's journal for the blocks it had
 * just allocated, one commit and one cache flush per device per round.
 * Started on every device first, the pages go to the disk together and
 * their blocks are allocated in one journal transaction, which the
 * first msync commits; the others find it committed. A failure here
 * is not the persist's to report (nothing waited on): the msync meets
 * it (the file's error state is consumed only by a wait).
 */
static void start_writeback(struct dg_dev *d, uint64_t off, uint64_t len)
{
	/* A length of 0 would mean "to the end of the file". */
	if (!len || !d->present || !d->coarse || d->fd < 0 ||
	    dg_dev_refused(d))
		return;
	(void)sync_file_range(d->fd, (off64_t)off, (off64_t)len,
			      SYNC_FILE_RANGE_WRITE);
	if (d->mirror && off < d->mirror_hi && off + len > d->mirror_lo) {
		uint64_t lo = off > d->mirror_lo ? off : d->mirror_lo;
		uint64_t hi = off + len < d->mirror_hi ? off + len
						       : d->mirror_hi;

		start_writeback(d->mirror, lo, hi - lo);
	}
}

/* One device's msync of a round, on a thread of its own. */
struct sync_job {
	struct dg_dev *d;
	uint64_t off, len;
	int ret;
	pthread_t th;
	bool started;
};

static void *sync_job_run(void *arg)
{
	struct sync_job *j = arg;

	j->ret = dg_dev_persist(j->d, j->off, j->len);
	return NULL;
}

/*
 * The msync part of a round: [lo[d], hi[d]) of every device d with
 * any[d]. Each msync is a wait for the disk (its pages written, the
 * file system's journal committed, the disk's cache flushed), and one
 * after the other a round paid one such wait per device. The devices'
 * write-back is started first (start_writeback()), then every msync
 * runs at once, one thread a device: the kernel joins what they wait
 * for (one journal commit, flushes issued while one is in flight go as
 * one), so a round costs about one wait. Each msync is still the
 * device's own and complete: a round returns only when every device's
 * range is durable, with the first failure (each latches the volume,
 * as before). With an observer (tests) or without a thread, one after
 * the other as before.
 */
static int persist_coarse(struct dg_dev *devs, unsigned ndev,
			  const bool *any, const uint64_t *lo,
			  const uint64_t *hi)
{
	struct sync_job job[DG_MAX_DEVS];
	unsigned n = 0;
	bool observed = false;
	int ret = 0;

	for (unsigned d = 0; d < ndev; d++)
		if (any[d]) {
			job[n++] = (struct sync_job){ &devs[d], lo[d],
						      hi[d] - lo[d], 0, 0,
						      false };
			observed = observed || devs[d].obs ||
				   (devs[d].mirror && devs[d].mirror->obs);
		}
	for (unsigned i = 0; i < n; i++)
		start_writeback(job[i].d, job[i].off, job[i].len);
	/* The first device's msync runs here, the others beside it. */
	for (unsigned i = 1; i < n && !observed; i++)
		job[i].started = pthread_create(&job[i].th, NULL, sync_job_run,
						&job[i]) == 0;
	for (unsigned i = 0; i < n; i++) {
		if (job[i].started)
			pthread_join(job[i].th, NULL);
		else
			sync_job_run(&job[i]);
		ret = ret ? ret : job[i].ret;
	}
	return ret;
}

int dg_flushset_persist(struct dg_dev *devs, unsigned ndev,
			struct dg_flushset *fs)
{
	uint64_t lo[DG_MAX_DEVS], hi[DG_MAX_DEVS];
	bool any[DG_MAX_DEVS] = { false };
	struct rspan small[32], *s = small;
	unsigned n = 0, cap = 2 * (fs->n + ndev) + 1;
	int ret = 0, r;

	/* Room for each range and its mirror's part; an update's rounds
	 * fit the stack. */
	if (cap > sizeof(small) / sizeof(small[0]))
		s = malloc(cap * sizeof(*s));
	if (!s) {
		/* Without room for the round: range by range, as before. */
		for (unsigned i = 0; i < fs->n; i++)
			if (devs[fs->r[i].dev].present) {
				r = dg_dev_persist(&devs[fs->r[i].dev],
						   fs->r[i].off, fs->r[i].len);
				ret = ret ? ret : r;
			}
		fs->oom = true;
	}
	for (unsigned i = 0; s && i < fs->n; i++) {
		struct dg_flushrange *f = &fs->r[i];

		/* A missing device's pages (a degraded journal replay
		 * touches them) have nothing to persist. */
		if (!devs[f->dev].present)
			continue;
		if (!devs[f->dev].coarse) {
			r = round_add(s, &n, &devs[f->dev], f->off, f->len);
			ret = ret ? ret : r;
			continue;
		}
		/* msync costs a call, not bytes: one per device. */
		if (!any[f->dev] || f->off < lo[f->dev])
			lo[f->dev] = f->off;
		if (!any[f->dev] || f->off + f->len > hi[f->dev])
			hi[f->dev] = f->off + f->len;
		any[f->dev] = true;
	}
	if (s) {
		r = persist_coarse(devs, ndev, any, lo, hi);
		ret = ret ? ret : r;
	}
	if (s) {
		r = round_drain(s, n);
		ret = ret ? ret : r;
		if (s != small)
			free(s);
	}
	/* A range the set could not record: persist every device whole. */
	if (fs->oom)
		for (unsigned d = 0; d < ndev; d++)
			if (devs[d].present) {
				r = dg_dev_persist(&devs[d], 0, devs[d].size);
				ret = ret ? ret : r;
			}
	fs->n = 0;
	fs->oom = false;
	return ret;
}
