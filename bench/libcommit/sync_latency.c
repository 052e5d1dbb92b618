// SPDX-License-Identifier: MIT
/* sync_latency.c -- commit_sync latency for N dirty pages in a large map */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "libcommit.h"

/*
 * usage: sync_latency [--mmap] FILE SIZE_MIB REPS NDIRTY...
 * Maps SIZE_MIB of FILE (libcommit, or plain mmap(MAP_SHARED) + msync
 * with --mmap), then REPS times: store 8 bytes into NDIRTY random pages
 * and time the sync. Prints median, p90 and p99 in microseconds, and
 * the median of the whole round (the stores, whose first touch of each
 * page is the write tracking's cost, and the sync).
 */

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int plain = argc > 1 && !strcmp(argv[1], "--mmap");
	struct commit_map *m = NULL;
	size_t size, npages;
	unsigned reps;
	uint8_t *base;
	uint64_t nonce;
	double t0;
	int fd = -1;

	if (argc - plain < 5) {
		fprintf(stderr, "usage: sync_latency [--mmap] FILE SIZE_MIB "
			"REPS NDIRTY...\n");
		return 2;
	}
	argv += plain;
	argc -= plain;
	size = strtoull(argv[2], NULL, 0) << 20;
	reps = (unsigned)strtoul(argv[3], NULL, 0);
	npages = size / 4096;
	t0 = now_us();
	if (plain) {
		fd = open(argv[1], O_RDWR | O_CREAT, 0644);
		if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
			perror(argv[1]);
			return 1;
		}
		base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (base == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	} else {
		int r = commit_map_new(argv[1], 0, size, COMMIT_MAP_RDWR, &m);

		if (r < 0) {
			fprintf(stderr, "sync_latency: %s\n", commit_errormsg());
			return 1;
		}
		base = commit_map_addr(m);
	}
	printf("map %zu MiB: %.1f ms (%s)\n", size >> 20, (now_us() - t0) / 1e3,
	       plain ? "mmap" : "libcommit");
	/* The same pages every run (seed 6), new values every run: a
	 * store of what the media holds already ships nothing. */
	srandom(6);
	nonce = (uint64_t)getpid() << 40 ^ (uint64_t)now_us() << 20;
	for (int a = 4; a < argc; a++) {
		size_t nd = strtoull(argv[a], NULL, 0);
		double *lat = malloc(reps * sizeof(*lat));
		double *round = malloc(reps * sizeof(*round));

		for (unsigned r = 0; r < reps; r++) {
			double ts = now_us();

			for (size_t i = 0; i < nd; i++) {
				size_t pg = (size_t)random() % npages;

				*(volatile uint64_t *)(base + pg * 4096 +
						       (random() % 64) * 64) = nonce + r * nd + i;
			}
			t0 = now_us();
			if (plain ? msync(base, size, MS_SYNC)
				  : commit_sync(m)) {
				fprintf(stderr, "sync: %s\n", plain ? strerror(errno)
								    : commit_errormsg());
				return 1;
			}
			lat[r] = now_us() - t0;
			round[r] = now_us() - ts;
		}
		qsort(lat, reps, sizeof(*lat), dcmp);
		qsort(round, reps, sizeof(*round), dcmp);
		printf("dirty=%zu reps=%u median_us=%.1f p90_us=%.1f p99_us=%.1f "
		       "round_median_us=%.1f\n", nd, reps, lat[reps / 2],
		       lat[reps * 9 / 10], lat[reps * 99 / 100], round[reps / 2]);
		free(lat);
		free(round);
	}
	if (m)
		commit_map_delete(&m);
	return 0;
}
