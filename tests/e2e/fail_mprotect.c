// SPDX-License-Identifier: MIT
/* fail_mprotect.c -- LD_PRELOAD for tests: fail chosen write-protects */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>

/*
 * fail_mprotect_arm(n): the next n mprotect(PROT_READ) calls fail with
 * ENOMEM, as they do when a process runs into vm.max_map_count. Other
 * mprotect calls pass through.
 */
void fail_mprotect_arm(int n);
int mprotect(void *addr, size_t len, int prot);

static atomic_int armed;

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
