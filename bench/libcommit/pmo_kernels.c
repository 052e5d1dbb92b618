// SPDX-License-Identifier: MIT
/* pmo_kernels.c -- PMO kernels (LU, 2D convolution, tiled matmul) with a sync every D ms */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "libcommit.h"

/*
 * usage: pmo_kernels lib|mmap lu|conv|mm N SYNCS_PER_S THREADS FILE [PASSES]
 * The kernel's arrays live in FILE, mapped with libcommit (lib) or with
 * mmap(MAP_SHARED) + msync (mmap: tmpfs, the daxguard FUSE mount, btrfs).
 * At safe points (a barrier between steps) thread 0 syncs when 1/SYNCS
 * seconds have passed since the last sync (PMO psync every delta ms).
 * PASSES (default 1) repeats the kernel so that a run lasts seconds:
 * lu restores A from B (a pristine copy) before each further pass, conv
 * runs 40 * PASSES smoothing steps, mm accumulates C += A B PASSES times.
 * Prints the run time, the number of syncs and a checksum. Initialisation
 * (and its first sync) is not timed; the final sync is.
 */

static int lib;
static struct commit_map *cm;
static uint8_t *base;
static size_t maplen;
static int n, nthr, passes = 1;
static double period, last;
static unsigned long nsyncs;
static pthread_barrier_t bar;
static double *A, *B, *C;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * One timed sync. commit_sync() is atomic only if the stores since the last
 * sync fit in one journal entry (dg_apply_max_bytes(): about half the
 * journal, which is 1/64 of a device, 4..64 MiB). This benchmark never
 * splits a sync: -E2BIG is an error ("make the volume bigger"), so every
 * sync it reports is one atomic update. run_kernels.py formats 4 GiB
 * devices (64 MiB journal, ~32 MiB per sync) so that even the whole map
 * (3 n^2 doubles = 24 MiB at n = 1024) fits in one sync.
 */
static int lib_sync(void)
{
	return commit_sync(cm);
}

/* All threads call this at a safe point. */
static void safe_point(int id)
{
	if (period <= 0)
		return;
	pthread_barrier_wait(&bar);
	if (id == 0 && now() - last >= period) {
		int r = lib ? lib_sync() : msync(base, maplen, MS_SYNC);

		if (r) {
			fprintf(stderr, "pmo_kernels: sync failed: %s\n",
				lib ? commit_errormsg() : strerror(errno));
			exit(1);
		}
		nsyncs++;
		last = now();
	}
	pthread_barrier_wait(&bar);
}

/* One elimination step k of LU (no pivoting; A is diagonally dominant). */
static void lu_step(int id, int k)
{
	for (int i = k + 1 + id; i < n; i += nthr) {
		double f = A[(size_t)i * n + k] / A[(size_t)k * n + k];

		A[(size_t)i * n + k] = f;
		for (int j = k + 1; j < n; j++)
			A[(size_t)i * n + j] -= f * A[(size_t)k * n + j];
	}
	pthread_barrier_wait(&bar);
	if (k % 8 == 7)
		safe_point(id);
}

static void *lu(void *arg)
{
	int id = (int)(long)arg;

	for (int p = 0; p < passes; p++) {
		if (p > 0) {
			for (int i = id; i < n; i += nthr)
				memcpy(&A[(size_t)i * n], &B[(size_t)i * n],
				       (size_t)n * sizeof(double));
			pthread_barrier_wait(&bar);
		}
		for (int k = 0; k < n; k++)
			lu_step(id, k);
	}
	return NULL;
}

static void *conv(void *arg)
{
	int id = (int)(long)arg, iters = 40 * passes;
	double *in = A, *out = B;

	for (int t = 0; t < iters; t++) {
		for (int i = 1 + id; i < n - 1; i += nthr)
			for (int j = 1; j < n - 1; j++) {
				double s = 0;

				for (int di = -1; di <= 1; di++)
					for (int dj = -1; dj <= 1; dj++)
						s += in[(size_t)(i + di) * n + j + dj] *
						     (di || dj ? 0.1 : 0.2);
				out[(size_t)i * n + j] = s;
			}
		pthread_barrier_wait(&bar);
		safe_point(id);
		double *x = in;
		in = out;
		out = x;
	}
	return NULL;
}

static void *mm(void *arg)
{
	int id = (int)(long)arg, T = 64, nt = n / T;

	for (int p = 0; p < passes; p++)
	for (int ti = 0; ti < nt; ti++) {
		if (ti % nthr == id)
			for (int tk = 0; tk < nt; tk++)
				for (int tj = 0; tj < nt; tj++)
					for (int i = ti * T; i < ti * T + T; i++)
						for (int k = tk * T; k < tk * T + T; k++) {
							double a = A[(size_t)i * n + k];

							for (int j = tj * T; j < tj * T + T; j++)
								C[(size_t)i * n + j] += a * B[(size_t)k * n + j];
						}
		if (ti % nthr == nthr - 1 || ti == nt - 1)
			safe_point(id);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*fn)(void *);
	pthread_t th[64];
	double t0, sum = 0;
	double sps;

	if (argc != 7 && argc != 8) {
		fprintf(stderr, "usage: pmo_kernels lib|mmap lu|conv|mm N "
			"SYNCS_PER_S THREADS FILE [PASSES]\n");
		return 2;
	}
	lib = !strcmp(argv[1], "lib");
	fn = !strcmp(argv[2], "lu") ? lu : !strcmp(argv[2], "conv") ? conv : mm;
	n = atoi(argv[3]);
	sps = atof(argv[4]);
	nthr = atoi(argv[5]);
	if (argc == 8)
		passes = atoi(argv[7]);
	if (passes < 1 || nthr < 1 || nthr > 64 || n < 64 || n % 64)
		return 2;
	period = sps > 0 ? 1.0 / sps : 0;
	maplen = 3 * (size_t)n * n * sizeof(double);
	if (lib) {
		if (commit_map_new(argv[6], 0, maplen, COMMIT_MAP_RDWR, &cm)) {
			fprintf(stderr, "pmo_kernels: %s\n", commit_errormsg());
			return 1;
		}
		base = commit_map_addr(cm);
	} else {
		int fd = open(argv[6], O_RDWR | O_CREAT, 0644);

		if (fd < 0 || ftruncate(fd, (off_t)maplen) < 0)
			return 1;
		base = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (base == MAP_FAILED)
			return 1;
	}
	A = (double *)base;
	B = A + (size_t)n * n;
	C = B + (size_t)n * n;
	for (size_t i = 0; i < (size_t)n * n; i++) {
		A[i] = (i % n == i / n) ? n : (double)((i * 7919) % 13) / 13.0;
		B[i] = fn == lu ? A[i] : (double)((i * 104729) % 17) / 17.0;
		C[i] = 0;
	}
	if (lib ? lib_sync() : msync(base, maplen, MS_SYNC)) {
		fprintf(stderr, "pmo_kernels: initial sync failed: %s\n",
			lib ? commit_errormsg() : strerror(errno));
		return 1;
	}
	pthread_barrier_init(&bar, NULL, (unsigned)nthr);
	t0 = last = now();
	for (long i = 0; i < nthr; i++)
		pthread_create(&th[i], NULL, fn, (void *)i);
	for (int i = 0; i < nthr; i++)
		pthread_join(th[i], NULL);
	if (lib ? lib_sync() : msync(base, maplen, MS_SYNC)) {
		fprintf(stderr, "pmo_kernels: final sync failed: %s\n",
			lib ? commit_errormsg() : strerror(errno));
		return 1;
	}
	nsyncs++;
	t0 = now() - t0;
	/* The map must hold what was computed (loads now read the media). */
	for (size_t i = 0; i < (size_t)n * n; i += 97)
		sum += A[i] + B[i] + C[i];
	printf("mode=%s kernel=%s n=%d syncs_per_s=%g threads=%d passes=%d "
	       "seconds=%.3f syncs=%lu checksum=%.6e\n", argv[1], argv[2], n,
	       sps, nthr, passes, t0, nsyncs, sum);
	if (cm)
		commit_map_delete(&cm);
	return 0;
}
