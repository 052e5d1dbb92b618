// SPDX-License-Identifier: MIT
/* test_icache_bound.c -- what keeps inodes in core past -o inode_cache
 * (issue 34, review of lazy inodes): a plain readdir reads no inode.
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

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "plain_readdir_loads_none", test_plain_readdir_loads_none },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
