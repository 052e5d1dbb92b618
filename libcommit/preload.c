// SPDX-License-Identifier: MIT
/* preload.c -- libcommit-preload.so: mmap/msync/munmap of daxguard files */
/* Define mmap and mmap64 under their own names (off_t is 64-bit here
 * either way): without this, glibc renames mmap to mmap64. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "commit_i.h"

/*
 * With LD_PRELOAD, a MAP_SHARED mmap() of a file on a daxguard mount goes
 * through libcommit; every other mapping goes to the C library as is.
 *   msync()  is the sync point (commit_sync_range over the given range);
 *   munmap() commits what is pending, then unmaps -- as the kernel writes
 *            back a shared mapping -- and so does process exit;
 *   MAP_SYNC is refused (EOPNOTSUPP): this is not DAX, so callers such
 *            as libpmem fall back to plain MAP_SHARED.
 * MAP_FIXED and PROT_EXEC mappings are left to the C library.
 */

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);
typedef int (*msync_fn)(void *, size_t, int);

static mmap_fn real_mmap;
static munmap_fn real_munmap;
static msync_fn real_msync;

/* One libcommit map per file range, shared by every mmap() of the same
 * file that it covers: shared maps of one file in one process are
 * coherent, as the kernel's are (fio maps a file again for its verify
 * phase without unmapping it first). */
#define MAX_SHIM 256
static struct shim_map {
	struct commit_map *m;
	dev_t dev;
	ino_t ino;
	uint64_t foff;
	size_t len;		/* whole pages */
	bool rw;
	unsigned refs;		/* views */
} maps[MAX_SHIM];		/* by lock */
static struct view {
	uint8_t *addr;
	size_t len;		/* whole pages */
	struct shim_map *sm;	/* NULL: free slot */
} views[MAX_SHIM];		/* by lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif

static void resolve(void)
{
	if (!real_mmap)
		real_mmap = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
	if (!real_munmap)
		real_munmap = (munmap_fn)dlsym(RTLD_NEXT, "munmap");
	if (!real_msync)
		real_msync = (msync_fn)dlsym(RTLD_NEXT, "msync");
}

static bool is_daxguard(int fd)
{
	int saved = errno;
	bool yes = fgetxattr(fd, COMMIT_XATTR, NULL, 0) > 0;

	errno = saved;
	return yes;
}

/* Commit [off, off + len) of a map: one atomic sync, whatever its size.
 * Only a volume made before staged syncs refuses one larger than an
 * update (-E2BIG); there the range is committed in parts, as the kernel
 * writes back a shared map page by page. */
static int shim_sync(struct commit_map *m, size_t off, size_t len)
{
	int ret = commit_sync_range(m, off, len);

	if (ret == -E2BIG && len > CM_PAGE) {
		size_t half = (len / 2 + CM_PAGE - 1) & ~(size_t)(CM_PAGE - 1);

		ret = shim_sync(m, off, half);
		if (!ret)
			ret = shim_sync(m, off + half, len - half);
	}
	return ret;
}

static size_t page_up(size_t n)
{
	return (n + CM_PAGE - 1) & ~(size_t)(CM_PAGE - 1);
}

/* A view of sm at file offset off; NULL when the table is full. Caller
 * holds lock. */
static void *add_view(struct shim_map *sm, uint64_t off, size_t len)
{
	for (unsigned i = 0; i < MAX_SHIM; i++) {
		if (views[i].sm)
			continue;
		views[i] = (struct view){ (uint8_t *)commit_map_addr(sm->m) +
						  (off - sm->foff),
					  page_up(len), sm };
		sm->refs++;
		return views[i].addr;
	}
	return NULL;
}

static void *shim_mmap(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	int type = flags & MAP_TYPE;
	bool rw = prot & PROT_WRITE;
	struct commit_map *m;
	struct stat st;
	void *p = NULL;
	int ret;

	resolve();
	if (fd < 0 || (type != MAP_SHARED && type != MAP_SHARED_VALIDATE) ||
	    (flags & (MAP_FIXED | MAP_ANONYMOUS)) || (prot & PROT_EXEC) ||
	    len == 0 || off < 0 || !is_daxguard(fd) || fstat(fd, &st) < 0)
		return real_mmap(addr, len, prot, flags, fd, off);
	if (type == MAP_SHARED_VALIDATE && (flags & MAP_SYNC)) {
		errno = EOPNOTSUPP;
		return MAP_FAILED;
	}
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < MAX_SHIM && !p; i++) {
		struct shim_map *sm = &maps[i];

		if (sm->m && sm->dev == st.st_dev && sm->ino == st.st_ino &&
		    (sm->rw || !rw) && (uint64_t)off >= sm->foff &&
		    (uint64_t)off + len <= sm->foff + sm->len) {
			p = add_view(sm, (uint64_t)off, len);
			if (!p)
				break;
		}
	}
	pthread_mutex_unlock(&lock);
	if (p)
		return p;
	ret = commit_map_new_fd(fd, (uint64_t)off, len,
				rw ? COMMIT_MAP_RDWR : COMMIT_MAP_RDONLY, &m);
	if (ret) {
		/* As mmap(2): a writable shared map of a read-only
		 * descriptor is EACCES. */
		errno = ret == -ENOTSUP ? ENODEV : ret == -EBADF ? EACCES : -ret;
		return MAP_FAILED;
	}
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < MAX_SHIM && !p; i++) {
		if (maps[i].m)
			continue;
		maps[i] = (struct shim_map){ m, st.st_dev, st.st_ino,
					     (uint64_t)off, page_up(len), rw, 0 };
		p = add_view(&maps[i], (uint64_t)off, len);
		if (!p)
			maps[i].m = NULL;
	}
	pthread_mutex_unlock(&lock);
	if (!p) {
		commit_map_delete(&m);
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return p;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return shim_mmap(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return shim_mmap(addr, len, prot, flags, fd, off);
}

/* The view holding addr, or -1. Caller holds lock. */
static int find(const void *addr)
{
	const uint8_t *a = addr;

	for (unsigned i = 0; i < MAX_SHIM; i++)
		if (views[i].sm && a >= views[i].addr &&
		    a < views[i].addr + views[i].len)
			return (int)i;
	return -1;
}

static size_t map_off(const struct view *v, const void *addr)
{
	return (size_t)((const uint8_t *)addr -
			(const uint8_t *)commit_map_addr(v->sm->m));
}

int msync(void *addr, size_t len, int flags)
{
	int i, ret = 0;

	resolve();
	pthread_mutex_lock(&lock);
	i = find(addr);
	if (i < 0) {
		pthread_mutex_unlock(&lock);
		return real_msync(addr, len, flags);
	}
	{
		struct view *v = &views[i];
		size_t end = (size_t)((uint8_t *)addr - v->addr) + len;

		if (end > v->len)
			len -= end - v->len;
		if (v->sm->rw)
			ret = shim_sync(v->sm->m, map_off(v, addr), len);
	}
	pthread_mutex_unlock(&lock);
	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}

int munmap(void *addr, size_t len)
{
	struct commit_map *m = NULL;
	struct view *v;
	int i, ret = 0;

	resolve();
	pthread_mutex_lock(&lock);
	i = find(addr);
	if (i < 0) {
		pthread_mutex_unlock(&lock);
		return real_munmap(addr, len);
	}
	v = &views[i];
	if ((uint8_t *)addr != v->addr || len < v->len) {
		/* Part of a view: commit it; the pages stay mapped until
		 * the whole view is unmapped. */
		size_t n = (size_t)((uint8_t *)addr - v->addr);

		if (v->sm->rw)
			ret = shim_sync(v->sm->m, map_off(v, addr),
					len < v->len - n ? len : v->len - n);
		pthread_mutex_unlock(&lock);
		if (ret) {
			errno = EIO;
			return -1;
		}
		return 0;
	}
	/* Kernel rule for shared maps: what was stored gets written. */
	if (v->sm->rw)
		ret = shim_sync(v->sm->m, map_off(v, addr), v->len);
	if (--v->sm->refs == 0) {
		m = v->sm->m;
		v->sm->m = NULL;
	}
	v->sm = NULL;
	pthread_mutex_unlock(&lock);
	commit_map_delete(&m); /* calls munmap: lock free */
	if (ret) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/* Process exit commits what is pending, as the kernel writes back a
 * shared map after the process is gone: at exit() (destructor) and at
 * _exit(), which fio's job processes use. */
static void shim_exit(void)
{
	for (unsigned i = 0; i < MAX_SHIM; i++) {
		struct commit_map *m;
		bool rw;

		pthread_mutex_lock(&lock);
		m = maps[i].m;
		rw = maps[i].rw;
		maps[i].m = NULL;
		pthread_mutex_unlock(&lock);
		if (m) {
			if (rw)
				shim_sync(m, 0, commit_map_len(m));
			commit_map_delete(&m); /* calls munmap: lock free */
		}
	}
}

__attribute__((destructor)) static void shim_fini(void)
{
	shim_exit();
}

typedef void (*exit_fn)(int) __attribute__((noreturn));

void _exit(int status)
{
	exit_fn real = (exit_fn)dlsym(RTLD_NEXT, "_exit");

	shim_exit();
	real(status);
}
