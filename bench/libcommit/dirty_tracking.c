// SPDX-License-Identifier: MIT
/* dirty_tracking.c -- the two ways libcommit finds dirty pages, timed */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * usage: dirty_tracking mprotect|uffd FILE SIZE_MIB NDIRTY...
 *
 * Maps SIZE_MIB of FILE (created sparse; use /dev/shm) MAP_PRIVATE, as
 * libcommit maps a device, reads every page, then 20 times: stores to
 * NDIRTY random even pages, finds them and re-protects them, drops the
 * private copies. No daemon, no diff, no commit: only what the tracking
 * itself costs.
 *   mprotect: PROT_READ + SIGSEGV handler + mprotect per page; at sync
 *             mprotect(PROT_READ) and a fresh mmap per page.
 *   uffd:     userfaultfd async write-protect over the map; at sync one
 *             PAGEMAP_SCAN (written pages, re-protected in the same call)
 *             and MADV_DONTNEED per run.
 * Prints the mean microseconds per round of each phase.
 */

#define PG 4096ul
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef PAGEMAP_SCAN
struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask;
	uint64_t return_mask;
};
#define PAGEMAP_SCAN	      _IOWR('f', 16, struct pm_scan_arg)
#define PM_SCAN_WP_MATCHING   (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#define PAGE_IS_WRITTEN	      (1 << 1)
#endif

static uint8_t *base;
static uint32_t *list;
static size_t nlist;

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	size_t pg = ((uintptr_t)si->si_addr - (uintptr_t)base) / PG;

	(void)sig;
	(void)uc;
	if (mprotect(base + pg * PG, PG, PROT_READ | PROT_WRITE))
		abort();
	list[nlist++] = (uint32_t)pg;
}

static int uffd_arm(size_t size)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED,
	};
	struct uffdio_register reg = { .range = { (uintptr_t)base, size },
				       .mode = UFFDIO_REGISTER_MODE_WP };
	struct uffdio_writeprotect wp = { .range = { (uintptr_t)base, size },
					  .mode = UFFDIO_WRITEPROTECT_MODE_WP };
	int uffd = (int)syscall(SYS_userfaultfd,
				O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg) ||
	    mprotect(base, size, PROT_READ | PROT_WRITE) ||
	    ioctl(uffd, UFFDIO_WRITEPROTECT, &wp)) {
		perror("userfaultfd");
		return -1;
	}
	return uffd;
}

/* One sync's worth of tracking work after the stores; returns pages. */
static size_t sync_uffd(int pm, size_t size, struct page_region *vec,
			size_t veclen, double *t_scan, double *t_drop)
{
	struct pm_scan_arg a = {
		.size = sizeof(a),
		.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
		.start = (uintptr_t)base,
		.end = (uintptr_t)base + size,
		.vec = (uintptr_t)vec,
		.vec_len = veclen,
		.category_mask = PAGE_IS_WRITTEN,
		.return_mask = PAGE_IS_WRITTEN,
	};
	double t0 = now_us(), t1;
	long k = ioctl(pm, PAGEMAP_SCAN, &a);
	size_t n = 0;

	if (k < 0) {
		perror("PAGEMAP_SCAN");
		exit(1);
	}
	t1 = now_us();
	for (long j = 0; j < k; j++) {
		n += (vec[j].end - vec[j].start) / PG;
		madvise((void *)vec[j].start, vec[j].end - vec[j].start,
			MADV_DONTNEED);
	}
	*t_scan += t1 - t0;
	*t_drop += now_us() - t1;
	return n;
}

static size_t sync_mprotect(int fd, double *t_scan, double *t_drop)
{
	double t0 = now_us(), t1;
	size_t n = nlist;

	for (size_t j = 0; j < nlist; j++)
		mprotect(base + list[j] * PG, PG, PROT_READ);
	t1 = now_us();
	for (size_t j = 0; j < nlist; j++)
		if (mmap(base + list[j] * PG, PG, PROT_READ,
			 MAP_PRIVATE | MAP_FIXED, fd,
			 (off_t)(list[j] * PG)) == MAP_FAILED) {
			perror("mmap");
			exit(1);
		}
	nlist = 0;
	*t_scan += t1 - t0;
	*t_drop += now_us() - t1;
	return n;
}

int main(int argc, char **argv)
{
	const unsigned reps = 20;
	struct page_region *vec;
	size_t size, np, veclen;
	int uffd_mode, fd, pm = -1;
	volatile uint8_t sum = 0;

	if (argc < 5) {
		fprintf(stderr, "usage: dirty_tracking mprotect|uffd FILE "
			"SIZE_MIB NDIRTY...\n");
		return 2;
	}
	uffd_mode = !strcmp(argv[1], "uffd");
	size = strtoull(argv[3], NULL, 0) << 20;
	np = size / PG;
	fd = open(argv[2], O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		perror(argv[2]);
		return 1;
	}
	base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (base == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	/* Fault every page in first (the sum keeps the reads). */
	for (size_t i = 0; i < np; i++)
		sum += base[i * PG];
	(void)sum;
	list = malloc(np * sizeof(*list));
	veclen = np / 2 + 1;
	vec = malloc(veclen * sizeof(*vec));
	if (!list || !vec)
		return 1;
	if (uffd_mode) {
		if (uffd_arm(size) < 0)
			return 1;
		pm = open("/proc/self/pagemap", O_RDONLY);
		if (pm < 0)
			return 1;
	} else {
		struct sigaction sa = { .sa_sigaction = on_segv,
					.sa_flags = SA_SIGINFO | SA_NODEFER };

		sigaction(SIGSEGV, &sa, NULL);
	}
	for (int a = 4; a < argc; a++) {
		size_t nd = strtoull(argv[a], NULL, 0), found = 0;
		double t_store = 0, t_scan = 0, t_drop = 0;

		srandom(6);
		for (unsigned r = 0; r < reps; r++) {
			double t0 = now_us();

			for (size_t i = 0; i < nd; i++) {
				size_t pg = (size_t)random() % (np / 2) * 2;

				base[pg * PG + 8] = (uint8_t)(r + 1);
			}
			t_store += now_us() - t0;
			found += uffd_mode ? sync_uffd(pm, size, vec, veclen,
						       &t_scan, &t_drop)
					   : sync_mprotect(fd, &t_scan, &t_drop);
		}
		printf("tracking=%s map_mib=%zu dirty=%zu found=%zu "
		       "store_us=%.0f reprotect_us=%.0f drop_us=%.0f "
		       "total_us=%.0f\n", argv[1], size >> 20, nd, found / reps,
		       t_store / reps, t_scan / reps, t_drop / reps,
		       (t_store + t_scan + t_drop) / reps);
	}
	return 0;
}
