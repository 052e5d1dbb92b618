// SPDX-License-Identifier: MIT
/* commit_child.c -- drives libcommit for the e2e tests, one command a line */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
