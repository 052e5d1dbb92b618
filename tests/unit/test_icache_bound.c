// SPDX-License-Identifier: MIT
/* test_icache_bound.c -- what keeps inodes in core past -o inode_cache
 * (issue 34, review of lazy inodes): a plain readdir reads no inode;
 * an inode with only its times to store still goes once let go.
 * Counts, not timings. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"
#include "tfs.h"

#define NFILES 600
#define BOUND 64

static struct dg_fs_cache counts(struct tfs *t)
{
	struct dg_fs_cache c;

	dg_fs_cache_counts(t->fs, &c);
	return c;
}

/* n files f<i> in the root, the kernel's lookup of each forgotten. */
static void make_files(struct tfs *t, unsigned n, uint64_t *inos)
{
	char name[32];

	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		inos[i] = tfs_file(t, DG_ROOT_INO, name);
		REQUIRE(inos[i]);
		dg_fs_forget(t->fs, inos[i], 1);
	}
}

struct listing {
	unsigned names, regular, bad_ino;
};

static int count_fill(void *arg, const char *name, const struct dg_attr *a,
		      uint64_t next)
{
	struct listing *l = arg;

	(void)next;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	l->names++;
	l->regular += S_ISREG(a->mode);
	l->bad_ino += !a->ino;
	return 0;
}

/* ls -f, find: a plain readdir lists every name with its type, and
 * reads no inode to do so (nothing sweeps on a read path). */
static void test_plain_readdir_loads_none(void)
{
	struct tfs t;
	uint64_t inos[NFILES];
	struct listing l = { 0 };

	REQUIRE(tfs_make(&t, "ibound1"));
	make_files(&t, NFILES, inos);
	REQUIRE(tfs_remount(&t));
	dg_fs_set_inode_cache(t.fs, BOUND);
	uint64_t loads = counts(&t).inode_loads;

	REQUIRE(dg_fs_readdir(t.fs, DG_ROOT_INO, 0, false, count_fill,
			      &l) == 0);
	CHECK_EQ(l.names, NFILES);
	CHECK_EQ(l.regular, NFILES);
	CHECK_EQ(l.bad_ino, 0);
	CHECK_EQ(counts(&t).inode_loads, loads);
	CHECK(counts(&t).inodes_cached <= BOUND + 1);
	tfs_done(&t);
}

/* Written, then overwritten in place after the last close (the
 * writeback hold commits after the release): the overwrite leaves only
 * times to store, and the forget must still let the inode go. */
static void test_dirty_times_let_go(void)
{
	struct tfs t;
	uint64_t ino, inos[NFILES];
	char name[32];

	REQUIRE(tfs_make(&t, "ibound2"));
	dg_fs_set_inode_cache(t.fs, BOUND);
	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		ino = inos[i] = tfs_file(&t, DG_ROOT_INO, name);
		REQUIRE(ino);
		REQUIRE(dg_fs_write(t.fs, ino, 0, &i, sizeof(i)) ==
			(ssize_t)sizeof(i));
		REQUIRE(dg_fs_write(t.fs, ino, 0, &i, sizeof(i)) ==
			(ssize_t)sizeof(i));
		dg_fs_forget(t.fs, ino, 1);
	}
	CHECK(counts(&t).inodes_cached <= BOUND + 1);
	/* Overwritten after the forget (a commit of the hold that comes
	 * last): the next sweep stores their times and lets them go. */
	for (unsigned i = 0; i < NFILES; i++)
		REQUIRE(dg_fs_write(t.fs, inos[i], 0, &i, sizeof(i)) ==
			(ssize_t)sizeof(i));
	CHECK(counts(&t).inodes_cached > BOUND + 1);
	REQUIRE(tfs_file(&t, DG_ROOT_INO, "new"));
	CHECK(counts(&t).inodes_cached <= BOUND + 2);
	/* The times reached the media: a remount reads what was written. */
	REQUIRE(tfs_remount(&t));
	for (unsigned i = 0; i < NFILES; i += 97) {
		struct dg_attr a;

		snprintf(name, sizeof(name), "f%u", i);
		REQUIRE(dg_fs_lookup(t.fs, DG_ROOT_INO, name, &a) == 0);
		CHECK_EQ(a.size, sizeof(i));
		dg_fs_forget(t.fs, a.ino, 1);
	}
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "plain_readdir_loads_none", test_plain_readdir_loads_none },
		{ "dirty_times_let_go", test_dirty_times_let_go },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
