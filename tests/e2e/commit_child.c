// SPDX-License-Identifier: MIT
/* commit_child.c -- drives libcommit for the e2e tests, one command a line */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commit_i.h"

/*
 * usage: commit_child PATH [CMD...]   (commands from argv, then stdin)
 *   map rw|ro OFF LEN     fill OFF LEN BYTE     store OFF HEX
 *   read OFF LEN          sync     syncrange OFF LEN     verify OFF LEN
 *   open rw|ro  setuid UID  mapfd rw|ro OFF LEN (map the opened fd)
 *   locate OFF            unmap    segv OFF (store to OFF in a child
 *   process; prints the signal it died of)   sleep MS   exit
 *   loop NPAGES [BASE]    atomicity driver: generation g = BASE+1, ...
 *                         fills every word of NPAGES pages with
 *                         (g << 32 | word index), syncs, prints "synced g"
 *   scatter NPAGES K ROUNDS  round r = 1..ROUNDS stores the byte r at
 *                         offset 64 * (i % 64) of page (r * 7919 + i *
 *                         104729) % NPAGES for i < K, then syncs
 *   vmas                  prints how many areas /proc/self/maps lists
 *                         within the map
 *   race NPAGES MS        two threads store counters to random words of
 *                         the first NPAGES (zeros) while the main thread
 *                         syncs for MS ms; a last sync, then prints
 *                         whether the file (read through the mount)
 *                         holds every word's last store
 * Each command prints "ok ..." or "err ERRNO message" on one line.
 */

static const char *path;
static struct commit_map *m;
static int ofd = -1;

static void fail(int ret)
{
	printf("err %d %s\n", -ret, commit_errormsg());
}

static void fill_gen(uint64_t *w, size_t words, uint64_t g)
{
	for (size_t i = 0; i < words; i++)
		w[i] = g << 32 | i;
}

/* Areas /proc/self/maps lists within the map's pages. */
static unsigned count_vmas(void)
{
	uintptr_t lo = (uintptr_t)commit_map_addr(m);
	uintptr_t hi = lo + commit_map_len(m);
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long start, end;
	unsigned n = 0;
	char line[512];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &start, &end) == 2 && start < hi &&
		    end > lo)
			n++;
	fclose(f);
	return n;
}

struct racer {
	uint8_t *base;
	size_t npages;
	unsigned id;		/* stores to words id, id + 2, ... only */
	unsigned seed;
	uint64_t *want;		/* the last value stored to each word */
	atomic_bool *stop;
};

static void *race_stores(void *arg)
{
	struct racer *r = arg;
	size_t words = r->npages * COMMIT_PAGE_SIZE / 8;
	uint64_t n = 0;

	while (!atomic_load(r->stop)) {
		size_t w = (size_t)rand_r(&r->seed) % (words / 2) * 2 + r->id;

		((volatile uint64_t *)r->base)[w] = ++n;
		r->want[w] = n;
	}
	return NULL;
}

/* The race command: returns 0 or a negative errno. The file must be
 * all zeros to begin with. */
static int race(size_t npages, unsigned ms)
{
	atomic_bool stop = false;
	struct racer r[2];
	pthread_t t[2];
	struct timespec t0, now;
	size_t len = npages * COMMIT_PAGE_SIZE;
	uint64_t *want = calloc(1, len), *file = malloc(len);
	unsigned started = 0;
	int ret = 0, fd;

	if (!want || !file) {
		free(want);
		free(file);
		return -ENOMEM;
	}
	for (; started < 2; started++) {
		r[started] = (struct racer){ commit_map_addr(m), npages,
					     started, started + 1, want, &stop };
		if (pthread_create(&t[started], NULL, race_stores,
				   &r[started])) {
			ret = -EAGAIN;
			break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!ret) {
		ret = commit_sync(m);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 +
		    (now.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
			break;
	}
	atomic_store(&stop, true);
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	if (!ret)
		ret = commit_sync(m);
	fd = ret ? -1 : open(path, O_RDONLY);
	if (!ret && (fd < 0 || pread(fd, file, len, 0) != (ssize_t)len))
		ret = -EIO;
	if (!ret)
		printf("ok %s\n", memcmp(file, want, len) ? "differ" : "same");
	if (fd >= 0)
		close(fd);
	free(want);
	free(file);
	return ret;
}

/* Arm fail_syscalls.so (preloaded) to fail the next n calls its
 * function sym is about; -ENOSYS when it is not preloaded. */
static int arm_failures(const char *sym, int n)
{
	void (*arm)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, sym);

	if (!arm)
		return -ENOSYS;
	arm(n);
	printf("ok\n");
	return 0;
}

static int run(char *line)
{
	char *argv[8], *save = NULL;

	int argc = 0, ret = 0;

	for (char *t = strtok_r(line, " \t\n", &save); t && argc < 8;
	     t = strtok_r(NULL, " \t\n", &save))
		argv[argc++] = t;
	if (argc == 0)
		return 0;
#define ARG(i) strtoull(argc > (i) ? argv[i] : "0", NULL, 0)
	if (!strcmp(argv[0], "map")) {
		unsigned fl = argc > 1 && !strcmp(argv[1], "rw")
				      ? COMMIT_MAP_RDWR : COMMIT_MAP_RDONLY;

		ret = commit_map_new(path, ARG(2), ARG(3), fl, &m);
		if (!ret)
			printf("ok %zu\n", commit_map_len(m));
	} else if (!strcmp(argv[0], "open")) {
		ofd = open(path, argc > 1 && !strcmp(argv[1], "rw") ? O_RDWR
								   : O_RDONLY);
		ret = ofd < 0 ? -errno : 0;
		if (!ret)
			printf("ok\n");
	} else if (!strcmp(argv[0], "setuid")) {
		ret = setgid((gid_t)ARG(1)) || setuid((uid_t)ARG(1)) ? -errno : 0;
		if (!ret)
			printf("ok\n");
	} else if (!strcmp(argv[0], "mapfd")) {
		unsigned fl = argc > 1 && !strcmp(argv[1], "rw")
				      ? COMMIT_MAP_RDWR : COMMIT_MAP_RDONLY;

		ret = commit_map_new_fd(ofd, ARG(2), ARG(3), fl, &m);
		if (!ret)
			printf("ok %zu\n", commit_map_len(m));
	} else if (!strcmp(argv[0], "stride")) {
		/* stride N STEP VAL: one byte VAL into every STEP-th page,
		 * N pages (no two neighbours when STEP > 1). */
		uint8_t *base = commit_map_addr(m);

		for (size_t i = 0; i < ARG(1); i++)
			base[i * ARG(2) * COMMIT_PAGE_SIZE + (i % 64) * 64] =
				(uint8_t)ARG(3);
		printf("ok\n");
	} else if (!strcmp(argv[0], "failmprotect")) {
		/* failmprotect N: the next N write-protects fail. */
		ret = arm_failures("fail_mprotect_arm", (int)ARG(1));
	} else if (!strcmp(argv[0], "failmprotectrw")) {
		/* failmprotectrw N: the next N mprotect(PROT_READ |
		 * PROT_WRITE) calls fail. */
		ret = arm_failures("fail_mprotect_rw_arm", (int)ARG(1));
	} else if (!strcmp(argv[0], "failmmapshared")) {
		/* failmmapshared N: the next N mmap(MAP_SHARED) calls fail. */
		ret = arm_failures("fail_mmap_shared_arm", (int)ARG(1));
	} else if (!strcmp(argv[0], "overflows")) {
		printf("ok %u\n", commit__overflows(m));
	} else if (!strcmp(argv[0], "taken")) {
		printf("ok %zu\n", commit__taken(m));
	} else if (!strcmp(argv[0], "direct")) {
		printf("ok %d\n", commit_map_is_direct(m));
	} else if (!strcmp(argv[0], "fill")) {
		memset((char *)commit_map_addr(m) + ARG(1), (int)ARG(3), ARG(2));
		printf("ok\n");
	} else if (!strcmp(argv[0], "store")) {
		char *p = (char *)commit_map_addr(m) + ARG(1);
		const char *h = argc > 2 ? argv[2] : "";

		for (size_t i = 0; h[2 * i] && h[2 * i + 1]; i++) {
			char b[3] = { h[2 * i], h[2 * i + 1], 0 };

			p[i] = (char)strtoul(b, NULL, 16);
		}
		printf("ok\n");
	} else if (!strcmp(argv[0], "read")) {
		const unsigned char *p =
			(const unsigned char *)commit_map_addr(m) + ARG(1);

		printf("ok ");
		for (size_t i = 0; i < ARG(2); i++)
			printf("%02x", p[i]);
		printf("\n");
	} else if (!strcmp(argv[0], "sync")) {
		ret = commit_sync(m);
		if (!ret)
			printf("ok\n");
	} else if (!strcmp(argv[0], "syncrange")) {
		ret = commit_sync_range(m, ARG(1), ARG(2));
		if (!ret)
			printf("ok\n");
	} else if (!strcmp(argv[0], "verify")) {
		size_t bad = 0;

		ret = commit_verify(m, ARG(1), ARG(2), &bad);
		if (ret >= 0) {
			printf("ok %d %zu\n", ret, bad);
			ret = 0;
		}
	} else if (!strcmp(argv[0], "locate")) {
		unsigned dev;
		uint64_t devoff;
		int fd;
		char lp[64], target[4096];
		ssize_t n;

		ret = commit__locate(m, ARG(1), &dev, &devoff, &fd);
		if (!ret) {
			snprintf(lp, sizeof(lp), "/proc/self/fd/%d", fd);
			n = readlink(lp, target, sizeof(target) - 1);
			target[n > 0 ? n : 0] = 0;
			printf("ok %u %" PRIu64 " %s\n", dev, devoff, target);
		}
	} else if (!strcmp(argv[0], "unmap")) {
		ret = commit_map_delete(&m);
		if (!ret)
			printf("ok\n");
	} else if (!strcmp(argv[0], "segv")) {
		pid_t pid;
		int st;

		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			((volatile char *)commit_map_addr(m))[(long)ARG(1)] = 1;
			_exit(0);
		}
		waitpid(pid, &st, 0);
		printf("ok %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	} else if (!strcmp(argv[0], "sleep")) {
		usleep((useconds_t)ARG(1) * 1000);
		printf("ok\n");
	} else if (!strcmp(argv[0], "loop")) {
		size_t np = ARG(1);

		for (uint64_t g = ARG(2) + 1;; g++) {
			fill_gen(commit_map_addr(m), np * 512, g);
			ret = commit_sync(m);
			if (ret)
				break;
			printf("synced %" PRIu64 "\n", g);
			fflush(stdout);
		}
	} else if (!strcmp(argv[0], "gen")) {
		/* gen NPAGES G: the first NPAGES pages hold generation G,
		 * synced once (one sync, however large). */
		fill_gen(commit_map_addr(m), ARG(1) * 512, ARG(2));
		ret = commit_sync(m);
		if (!ret)
			printf("ok\n");
	} else if (!strcmp(argv[0], "scatter")) {
		uint8_t *base = commit_map_addr(m);
		size_t np = ARG(1), k = ARG(2);

		for (uint64_t rd = 1; rd <= ARG(3) && !ret; rd++) {
			for (size_t i = 0; i < k; i++)
				base[(rd * 7919 + i * 104729) % np *
					     COMMIT_PAGE_SIZE +
				     64 * (i % 64)] = (uint8_t)rd;
			ret = commit_sync(m);
		}
		if (!ret)
			printf("ok\n");
	} else if (!strcmp(argv[0], "vmas")) {
		printf("ok %u\n", count_vmas());
	} else if (!strcmp(argv[0], "race")) {
		ret = race(ARG(1), (unsigned)ARG(2));
	} else if (!strcmp(argv[0], "exit")) {
		exit(0);
	} else {
		printf("err %d unknown command\n", EINVAL);
	}
	if (ret)
		fail(ret);
	fflush(stdout);
	return ret;
}

int main(int argc, char **argv)
{
	char *line = NULL;
	size_t cap = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: commit_child PATH [CMD...]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	path = argv[1];
	for (int i = 2; i < argc; i++) {
		char *l = strdup(argv[i]);

		run(l);
		free(l);
	}
	while (getline(&line, &cap, stdin) > 0)
		run(line);
	free(line);
	return 0;
}
