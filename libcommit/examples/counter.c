/* SPDX-License-Identifier: MIT */
/*
 * counter.c -- a complete libcommit program: a persistent counter kept in
 * the first page of a file on a daxguard mount.
 *
 *   counter FILE [N]
 *
 * maps FILE (creating it), adds 1 to the counter N times (default 1) with
 * plain stores, commits after each increment and prints the final value.
 * Each commit_sync() is a sync point: after a crash at any instant the
 * file holds the value of the last completed sync, never a torn one.
 *
 * Build outside the tree: cc counter.c $(pkg-config --cflags --libs libcommit)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libcommit.h>

/* What the file holds. The magic tells a fresh (zero-filled) file from
 * one this program has written. */
struct counter {
	char magic[8];
	uint64_t count;
};

static const char counter_magic[8] = "dgcount1";

static int fail(const char *what, int err)
{
	fprintf(stderr, "counter: %s: %s (%s)\n", what, strerror(-err),
		commit_errormsg());
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: counter FILE [N]\n");
		return 2;
	}
	long n = argc == 3 ? strtol(argv[2], NULL, 10) : 1;
	if (n < 0) {
		fprintf(stderr, "counter: N must be 0 or more\n");
		return 2;
	}

	/* libcommit maps existing files; the descriptor only names the file
	 * (the map keeps its own), so it is closed right after. */
	int fd = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	struct commit_map *m;
	/* A read-write map past the end of the file extends it with zeros. */
	int rc = commit_map_new_fd(fd, 0, sizeof(struct counter),
				   COMMIT_MAP_RDWR, &m);
	close(fd);
	if (rc < 0)
		return fail("map", rc);

	struct counter *c = commit_map_addr(m);
	if (memcmp(c->magic, counter_magic, sizeof(c->magic)) != 0) {
		/* A new file: the magic and the zero count go in together, at
		 * the first sync below. */
		memcpy(c->magic, counter_magic, sizeof(c->magic));
		c->count = 0;
	}
	for (long i = 0; i < n; i++) {
		c->count++;	/* a plain store, private until the sync */
		rc = commit_sync(m);
		if (rc < 0) {
			/* Nothing of this sync was applied; the file keeps
			 * the previous value. */
			commit_map_delete(&m);
			return fail("sync", rc);
		}
	}
	printf("%" PRIu64 "\n", c->count);
	/* Unmapping discards stores made since the last sync (with N 0, the
	 * magic of a new file): the file keeps its last synced state. */
	rc = commit_map_delete(&m);
	if (rc < 0)
		return fail("unmap", rc);
	return 0;
}
