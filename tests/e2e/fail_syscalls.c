// SPDX-License-Identifier: MIT
/* fail_syscalls.c -- LD_PRELOAD for tests: fail chosen mprotect, mmap and
 * msync calls */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>

/*
 * fail_mprotect_arm(n): the next n mprotect(PROT_READ) calls fail with
 * ENOMEM, as they do when a process runs into vm.max_map_count.
 * fail_mprotect_rw_arm(n): the same for mprotect(PROT_READ | PROT_WRITE).
 * fail_mmap_shared_arm(n): the next n mmap(MAP_SHARED) calls fail with
 * ENOMEM. Every other call passes through.
 */
void fail_mprotect_arm(int n);
void fail_mprotect_rw_arm(int n);
void fail_mmap_shared_arm(int n);
int mprotect(void *addr, size_t len, int prot);
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int fstatfs(int fd, struct statfs *buf);
int msync(void *addr, size_t len, int flags);

static atomic_int armed, armed_rw, armed_mmap;

void fail_mmap_shared_arm(int n)
{
	atomic_store(&armed_mmap, n);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);

	if ((flags & MAP_TYPE) == MAP_SHARED && atomic_load(&armed_mmap) > 0) {
		atomic_fetch_sub(&armed_mmap, 1);
		errno = ENOMEM;
		return MAP_FAILED;
	}
	if (!real)
		real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(
			RTLD_NEXT, "mmap");
	return real(addr, len, prot, flags, fd, off);
}

void fail_mprotect_arm(int n)
{
	atomic_store(&armed, n);
}

void fail_mprotect_rw_arm(int n)
{
	atomic_store(&armed_rw, n);
}

int mprotect(void *addr, size_t len, int prot)
{
	static int (*real)(void *, size_t, int);
	atomic_int *a = prot == PROT_READ		  ? &armed
			: prot == (PROT_READ | PROT_WRITE) ? &armed_rw
							   : NULL;

	if (a && atomic_load(a) > 0) {
		atomic_fetch_sub(a, 1);
		errno = ENOMEM;
		return -1;
	}
	if (!real)
		real = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT,
							   "mprotect");
	return real(addr, len, prot);
}

/*
 * For a daemon, armed from its environment (it cannot be called):
 * DG_FAIL_NOT_TMPFS=1 makes tmpfs look like a disk file system, so the
 * /dev/shm images are persisted with msync() as files on a disk are;
 * while the file DG_FAIL_MSYNC_FLAG names exists, every msync() fails
 * with EIO, as write-back to a failing disk does.
 */
int fstatfs(int fd, struct statfs *buf)
{
	static int (*real)(int, struct statfs *);
	const char *e = getenv("DG_FAIL_NOT_TMPFS");
	int ret;

	if (!real)
		real = (int (*)(int, struct statfs *))dlsym(RTLD_NEXT,
							    "fstatfs");
	ret = real(fd, buf);
	if (ret == 0 && e && *e == '1' && buf->f_type == TMPFS_MAGIC)
		buf->f_type = EXT4_SUPER_MAGIC;
	return ret;
}

int msync(void *addr, size_t len, int flags)
{
	static int (*real)(void *, size_t, int);
	const char *flag = getenv("DG_FAIL_MSYNC_FLAG");

	if (flag && access(flag, F_OK) == 0) {
		errno = EIO;
		return -1;
	}
	if (!real)
		real = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "msync");
	return real(addr, len, flags);
}
