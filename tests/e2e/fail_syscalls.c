// SPDX-License-Identifier: MIT
/* fail_syscalls.c -- LD_PRELOAD for tests: fail chosen mprotect/mmap calls */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>

/*
 * fail_mprotect_arm(n): the next n mprotect(PROT_READ) calls fail with
 * ENOMEM, as they do when a process runs into vm.max_map_count.
 * fail_mmap_shared_arm(n): the next n mmap(MAP_SHARED) calls fail with
 * ENOMEM. Every other call passes through.
 */
void fail_mprotect_arm(int n);
void fail_mmap_shared_arm(int n);
int mprotect(void *addr, size_t len, int prot);
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

static atomic_int armed, armed_mmap;

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

int mprotect(void *addr, size_t len, int prot)
{
	static int (*real)(void *, size_t, int);

	if (prot == PROT_READ && atomic_load(&armed) > 0) {
		atomic_fetch_sub(&armed, 1);
		errno = ENOMEM;
		return -1;
	}
	if (!real)
		real = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT,
							   "mprotect");
	return real(addr, len, prot);
}
