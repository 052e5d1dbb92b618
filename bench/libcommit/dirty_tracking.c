// SPDX-License-Identifier: MIT
/* dirty_tracking.c -- the two ways libcommit finds dirty pages, timed */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "commit_i.h"

/*
 * usage: dirty_tracking mprotect|uffd FILE SIZE_MIB NDIRTY...
 *
 * Maps SIZE_MIB of FILE (created sparse; use /dev/shm) MAP_PRIVATE, as
 * libcommit maps a device, reads every page, then 20 times: stores to
 * NDIRTY random even pages, finds them and re-protects them, drops the
 * private copies. No daemon, no diff, no commit: only what the tracking
 * itself costs, with libcommit's own tracking code (dirty.c):
 *   mprotect: its SIGSEGV handler lists each page (cm_region_take());
 *             at sync mprotect(PROT_READ) and a fresh mmap per page.
 *   uffd:     the region in overflow (cm_region_overflow() arms the
 *             userfaultfd write-protect); at sync cm_uffd_scan() (one
 *             PAGEMAP_SCAN: written pages, re-protected in the same
 *             call) and MADV_DONTNEED per run.
 * Even pages only: the handler's fault-around never claims neighbours.
 * Prints the mean microseconds per round of each phase.
 */

#define PG CM_PAGE

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* One sync's worth of tracking work after the stores; returns pages. */
static size_t sync_uffd(struct cm_region *r, uint32_t *pg, double *t_scan,
			double *t_drop)
{
	double t0 = now_us(), t1;
	ssize_t n = cm_uffd_scan(r, 0, r->npages, pg);

	if (n < 0) {
		fprintf(stderr, "PAGEMAP_SCAN: %s\n", strerror((int)-n));
		exit(1);
	}
	t1 = now_us();
	for (ssize_t j = 0; j < n;) {
		ssize_t k = j + 1;

		while (k < n && pg[k] == pg[k - 1] + 1)
			k++;
		madvise((void *)(r->base + pg[j] * PG), (size_t)(k - j) * PG,
			MADV_DONTNEED);
		j = k;
	}
	*t_scan += t1 - t0;
	*t_drop += now_us() - t1;
	return (size_t)n;
}

static size_t sync_mprotect(struct cm_region *r, int fd, uint32_t *pg,
			    double *t_scan, double *t_drop)
{
	double t0 = now_us(), t1;
	size_t n = cm_region_take(r, 0, r->npages, pg);

	for (size_t j = 0; j < n; j++)
		mprotect((void *)(r->base + pg[j] * PG), PG, PROT_READ);
	t1 = now_us();
	for (size_t j = 0; j < n; j++)
		if (mmap((void *)(r->base + pg[j] * PG), PG, PROT_READ,
			 MAP_PRIVATE | MAP_FIXED, fd,
			 (off_t)pg[j] * PG) == MAP_FAILED) {
			perror("mmap");
			exit(1);
		}
	cm_region_clean(r, pg, n);
	*t_scan += t1 - t0;
	*t_drop += now_us() - t1;
	return n;
}

int main(int argc, char **argv)
{
	const unsigned reps = 20;
	static struct cm_region reg;
	uint32_t *pg;
	uint8_t *base;
	size_t size, np;
	int uffd_mode, fd, err;
	volatile uint8_t sum = 0;

	if (argc < 5 || (strcmp(argv[1], "uffd") && strcmp(argv[1], "mprotect"))) {
		fprintf(stderr, "usage: dirty_tracking mprotect|uffd FILE "
			"SIZE_MIB NDIRTY...\n");
		return 2;
	}
	uffd_mode = !strcmp(argv[1], "uffd");
	size = strtoull(argv[3], NULL, 0) << 20;
	np = size / PG;
	if (np < 2) {
		fprintf(stderr, "dirty_tracking: SIZE_MIB must be > 0\n");
		return 2;
	}
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
	reg.base = (uintptr_t)base;
	reg.npages = np;
	reg.writable = true;
	reg.uffd = reg.pagemap = -1;
	reg.bits = calloc((np + 63) / 64, sizeof(*reg.bits));
	reg.list = malloc(np * sizeof(*reg.list));
	pg = malloc(np * sizeof(*pg));
	if (!reg.bits || !reg.list || !pg)
		return 1;
	if (uffd_mode) {
		/* Registered, then armed and made writable as an
		 * escalation does; the handler is never called. */
		if (cm_uffd_setup(&reg) || reg.uffd < 0 ||
		    cm_region_overflow(&reg)) {
			fprintf(stderr, "dirty_tracking: no userfaultfd "
				"write-protect with PAGEMAP_SCAN\n");
			return 1;
		}
	}
	/* mprotect mode: uffd stays -1, so the handler never escalates. */
	err = cm_region_add(&reg);
	if (err) {
		fprintf(stderr, "cm_region_add: %s\n", strerror(-err));
		return 1;
	}
	for (int a = 4; a < argc; a++) {
		size_t nd = strtoull(argv[a], NULL, 0), found = 0;
		double t_store = 0, t_scan = 0, t_drop = 0;

		srandom(6);
		for (unsigned r = 0; r < reps; r++) {
			double t0 = now_us();

			for (size_t i = 0; i < nd; i++) {
				size_t p = (size_t)random() % (np / 2) * 2;

				base[p * PG + 8] = (uint8_t)(r + 1);
			}
			t_store += now_us() - t0;
			found += uffd_mode ? sync_uffd(&reg, pg, &t_scan, &t_drop)
					   : sync_mprotect(&reg, fd, pg, &t_scan,
							   &t_drop);
		}
		printf("tracking=%s map_mib=%zu dirty=%zu found=%zu "
		       "store_us=%.0f reprotect_us=%.0f drop_us=%.0f "
		       "total_us=%.0f\n", argv[1], size >> 20, nd, found / reps,
		       t_store / reps, t_scan / reps, t_drop / reps,
		       (t_store + t_scan + t_drop) / reps);
	}
	cm_region_del(&reg);
	cm_uffd_close(&reg);
	return 0;
}
