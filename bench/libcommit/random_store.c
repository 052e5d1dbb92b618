// SPDX-License-Identifier: MIT
/* random_store.c -- 64-byte random stores, a commit_sync every N stores */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcommit.h"

/* usage: random_store FILE SIZE_MIB N SECONDS
 * Prints commits/s and stores/s: run it on a volume with redundancy and
 * on one made with --redundancy none to see what redundancy costs. */
int main(int argc, char **argv)
{
	struct commit_map *m;
	struct timespec a, b;
	unsigned long n, commits = 0;
	size_t size, lines;
	double secs, el = 0;
	uint8_t *p;

	if (argc != 5) {
		fprintf(stderr, "usage: random_store FILE SIZE_MIB N SECONDS\n");
		return 2;
	}
	size = strtoull(argv[2], NULL, 0) << 20;
	n = strtoul(argv[3], NULL, 0);
	secs = atof(argv[4]);
	if (commit_map_new(argv[1], 0, size, COMMIT_MAP_RDWR, &m)) {
		fprintf(stderr, "random_store: %s\n", commit_errormsg());
		return 1;
	}
	p = commit_map_addr(m);
	lines = size / 64;
	srandom(6);
	clock_gettime(CLOCK_MONOTONIC, &a);
	while (el < secs) {
		for (unsigned long i = 0; i < n; i++) {
			uint64_t *l = (uint64_t *)(p + (random() % lines) * 64);

			for (int w = 0; w < 8; w++)
				l[w] = commits * n + i + w;
		}
		if (commit_sync(m)) {
			fprintf(stderr, "random_store: %s\n", commit_errormsg());
			return 1;
		}
		commits++;
		clock_gettime(CLOCK_MONOTONIC, &b);
		el = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	}
	printf("stores_per_sync=%lu commits_per_s=%.0f stores_per_s=%.0f "
	       "MB_per_s=%.1f\n", n, commits / el, commits * n / el,
	       commits * n * 64 / el / 1e6);
	commit_map_delete(&m);
	return 0;
}
