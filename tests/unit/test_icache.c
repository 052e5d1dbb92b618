// SPDX-License-Identifier: MIT
/* test_icache.c -- inodes in core follow what is in use (issue 34): a
 * mount reads the root alone, a stat reads the one it asks for, the
 * kernel's forget lets inodes go down to the bound, and one that is
 * held (looked up, open, mapped) never goes; a create after evictions
 * never takes a live slot; an orphan of a crash is freed at the next
 * mount with nothing else in core. Counts, not timings. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "fscheck.h"
#include "fsys_i.h"
#include "tfs.h"

#define NFILES 600
#define BOUND 64
#define NPAGEFILES 1100	/* more than a chunk of the inode table */

static struct dg_fs_cache counts(struct tfs *t)
{
	struct dg_fs_cache c;

	dg_fs_cache_counts(t->fs, &c);
	return c;
}

static bool in_core(struct tfs *t, uint64_t ino)
{
	struct dg_inode *ip;

	pthread_mutex_lock(&t->fs->ino_lock);
	ip = dg_icache_peek(t->fs, ino);
	pthread_mutex_unlock(&t->fs->ino_lock);
	return ip != NULL;
}

/* n files f<from>.. in the root, each holding its own index; the
 * kernel's lookup of each forgotten at once. */
static void make_files(struct tfs *t, unsigned from, unsigned n,
		       uint64_t *inos)
{
	char name[32];

	for (unsigned i = from; i < from + n; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		inos[i] = tfs_file(t, DG_ROOT_INO, name);
		REQUIRE(inos[i]);
		REQUIRE(dg_fs_write(t->fs, inos[i], 0, &i, sizeof(i)) ==
			(ssize_t)sizeof(i));
		dg_fs_forget(t->fs, inos[i], 1);
	}
}

/* fsck's findings on the volume with the filesystem closed (-1: the
 * check failed); the filesystem opened again (-2: it did not open). */
static int fsck_findings(struct tfs *t)
{
	int n = 0;

	dg_fs_close(t->fs);
	t->fs = NULL;
	if (dg_check_fs(t->vol, tcheck_count_event, NULL, &n) < 0)
		n = -1;
	if (dg_fs_open(t->vol, &t->fs))
		return -2;
	return n;
}

/* The index file ino holds (make_files); ~0u if it cannot be read. */
static unsigned file_value(struct tfs *t, uint64_t ino)
{
	uint8_t *pg = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	const void *got;
	unsigned v = ~0u;

	if (pg && dg_fs_read(t->fs, ino, 0, sizeof(v), pg, &got) ==
			  (ssize_t)sizeof(v))
		memcpy(&v, got, sizeof(v));
	free(pg);
	return v;
}

/* Every name f<i> names a file holding i: no two names share an inode. */
static void check_files(struct tfs *t, unsigned n)
{
	char name[32];

	for (unsigned i = 0; i < n; i++) {
		struct dg_attr a;

		snprintf(name, sizeof(name), "f%u", i);
		REQUIRE(dg_fs_lookup(t->fs, DG_ROOT_INO, name, &a) == 0);
		CHECK_EQ(file_value(t, a.ino), i);
		dg_fs_forget(t->fs, a.ino, 1);
	}
}

/* The distinct inode table pages of n inodes (a page read each). */
static unsigned pages_of(const uint64_t *inos, unsigned n)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned j = 0;

		while (j < i && inos[j] / DG_INODES_PER_PAGE !=
					inos[i] / DG_INODES_PER_PAGE)
			j++;
		k += j == i;
	}
	return k;
}

/* The mount keeps the root's table page alone; k stats of inodes on k
 * pages read k pages (and take their neighbours). */
static void test_mount_reads_root(void)
{
	struct tfs t;
	uint64_t inos[NFILES], asked[11] = { DG_ROOT_INO };
	struct dg_attr a;

	REQUIRE(tfs_make(&t, "icache1"));
	make_files(&t, 0, NFILES, inos);
	REQUIRE(tfs_remount(&t));
	CHECK(counts(&t).inodes_cached <= DG_INODES_PER_PAGE);
	CHECK_EQ(counts(&t).inode_loads, 1);
	for (unsigned i = 0; i < 10; i++) {
		asked[i + 1] = inos[i * 7];
		REQUIRE(dg_fs_getattr(t.fs, inos[i * 7], &a) == 0);
	}
	CHECK(counts(&t).inodes_cached <= 11 * DG_INODES_PER_PAGE);
	CHECK_EQ(counts(&t).inode_loads, pages_of(asked, 11));
	CHECK(counts(&t).inode_loads > 5); /* the files are spread */
	/* Read once: a second stat finds them in core. */
	for (unsigned i = 0; i < 10; i++)
		REQUIRE(dg_fs_getattr(t.fs, inos[i * 7], &a) == 0);
	CHECK_EQ(counts(&t).inode_loads, pages_of(asked, 11));
	/* A free slot is no inode, and reads nothing. */
	CHECK_EQ(dg_fs_getattr(t.fs, inos[NFILES - 1] + 1, &a), -ENOENT);
	CHECK_EQ(dg_fs_getattr(t.fs, 1ull << 40, &a), -ENOENT);
	CHECK_EQ(counts(&t).inode_loads, pages_of(asked, 11));
	tfs_done(&t);
}

/* What the kernel forgets goes, down to the bound; what it holds
 * stays, whatever the bound. */
static void test_forget_evicts(void)
{
	struct tfs t;
	uint64_t inos[NFILES];
	struct dg_attr a;
	char name[32];

	REQUIRE(tfs_make(&t, "icache2"));
	make_files(&t, 0, NFILES, inos);
	REQUIRE(tfs_remount(&t));
	dg_fs_set_inode_cache(t.fs, BOUND);
	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		REQUIRE(dg_fs_lookup(t.fs, DG_ROOT_INO, name, &a) == 0);
		CHECK_EQ(a.ino, inos[i]);
	}
	/* All held by the kernel: all in core. */
	CHECK_EQ(counts(&t).inodes_cached, NFILES + 1);
	for (unsigned i = 0; i < NFILES; i++)
		dg_fs_forget(t.fs, inos[i], 1);
	CHECK(counts(&t).inodes_cached <= BOUND + 1);
	/* Stats read them back; the next change under the write lock
	 * sweeps the idle ones out again. */
	for (unsigned i = 0; i < NFILES; i++)
		REQUIRE(dg_fs_getattr(t.fs, inos[i], &a) == 0);
	CHECK(counts(&t).inodes_cached > BOUND + 1);
	REQUIRE(tfs_file(&t, DG_ROOT_INO, "new"));
	CHECK(counts(&t).inodes_cached <= BOUND + 2);
	check_files(&t, NFILES);
	tfs_done(&t);
}

/* Looked up, open, mapped: never let go by a sweep; each keeps its
 * count, and goes once let go. */
static void test_held_stay(void)
{
	struct tfs t;
	uint64_t inos[NFILES];
	struct dg_fmap *m;
	struct dg_attr a;
	struct dg_inode *ip;
	uint8_t buf[DG_PAGE_SIZE];

	REQUIRE(tfs_make(&t, "icache3"));
	make_files(&t, 0, NFILES, inos);
	REQUIRE(tfs_remount(&t));
	dg_fs_set_inode_cache(t.fs, BOUND);
	REQUIRE(dg_fs_lookup(t.fs, DG_ROOT_INO, "f1", &a) == 0);
	REQUIRE(dg_fs_lookup(t.fs, DG_ROOT_INO, "f1", &a) == 0);
	REQUIRE(dg_fs_open_ino(t.fs, inos[2], false, NULL) == 0);
	memset(buf, 'm', sizeof(buf));
	REQUIRE(dg_fs_write(t.fs, inos[3], 0, buf, sizeof(buf)) ==
		(ssize_t)sizeof(buf));
	REQUIRE(dg_fmap_new(t.fs, inos[3], 0, DG_PAGE_SIZE, DG_FMAP_RW,
			    &m) == 0);
	for (unsigned round = 0; round < 3; round++) {
		for (unsigned i = 4; i < NFILES; i++)
			REQUIRE(dg_fs_getattr(t.fs, inos[i], &a) == 0);
		dg_fs_forget(t.fs, inos[4], 1); /* a sweep */
		CHECK(counts(&t).inodes_cached <= BOUND + 4);
		CHECK(in_core(&t, inos[1]));
		CHECK(in_core(&t, inos[2]));
		CHECK(in_core(&t, inos[3]));
	}
	pthread_mutex_lock(&t.fs->ino_lock);
	ip = dg_icache_peek(t.fs, inos[1]);
	pthread_mutex_unlock(&t.fs->ino_lock);
	REQUIRE(ip);
	CHECK_EQ(ip->nlookup, 2);
	/* The mapped file refuses a second writer, as before. */
	CHECK_EQ(dg_fs_write(t.fs, inos[3], 0, buf, 1), -ETXTBSY);
	dg_fmap_delete(m);
	dg_fs_release(t.fs, inos[2]);
	dg_fs_forget(t.fs, inos[1], 2);
	for (unsigned i = 4; i < NFILES; i++)
		REQUIRE(dg_fs_getattr(t.fs, inos[i], &a) == 0);
	dg_fs_forget(t.fs, inos[4], 1);
	CHECK(counts(&t).inodes_cached <= BOUND + 1);
	check_files(&t, 3);
	tfs_done(&t);
}

/* Creates and unlinks among evictions: every live name keeps its own
 * inode, and fsck finds the volume clean. */
static void test_create_after_evict(void)
{
	struct tfs t;
	uint64_t *inos = calloc(3 * NFILES, sizeof(*inos));
	char name[32];

	REQUIRE(inos);
	REQUIRE(tfs_make(&t, "icache4"));
	make_files(&t, 0, NFILES, inos);
	REQUIRE(tfs_remount(&t));
	dg_fs_set_inode_cache(t.fs, BOUND);
	/* Every other file goes, its slot free for the creates below. */
	for (unsigned i = 0; i < NFILES; i += 2) {
		snprintf(name, sizeof(name), "f%u", i);
		REQUIRE(dg_fs_unlink(t.fs, DG_ROOT_INO, name) == 0);
		snprintf(name, sizeof(name), "f%u", i + 2 * NFILES);
		REQUIRE(dg_fs_rename(t.fs, DG_ROOT_INO, "f1", DG_ROOT_INO,
				     name, 0) == 0);
		REQUIRE(dg_fs_rename(t.fs, DG_ROOT_INO, name, DG_ROOT_INO,
				     "f1", 0) == 0);
	}
	make_files(&t, NFILES, NFILES, inos);
	/* The files left and the new ones: NFILES / 2 + NFILES names. */
	for (unsigned i = 1; i < 2 * NFILES; i++) {
		if (i < NFILES && i % 2 == 0)
			continue;
		for (unsigned j = i + 1; j < 2 * NFILES; j++)
			if (j >= NFILES || j % 2)
				CHECK(inos[i] != inos[j]);
	}
	CHECK(counts(&t).inodes_cached <= BOUND + 2);
	REQUIRE(tfs_remount(&t));
	for (unsigned i = 1; i < 2 * NFILES; i++) {
		struct dg_attr a;

		if (i < NFILES && i % 2 == 0)
			continue;
		snprintf(name, sizeof(name), "f%u", i);
		REQUIRE(dg_fs_lookup(t.fs, DG_ROOT_INO, name, &a) == 0);
		CHECK_EQ(a.ino, inos[i]);
		CHECK_EQ(file_value(&t, a.ino), i);
		dg_fs_forget(t.fs, a.ino, 1);
	}
	CHECK_EQ(fsck_findings(&t), 0);
	free(inos);
	tfs_done(&t);
}

/* Unlinked while open, then a crash (no release): the next mount frees
 * it from its scan, with no other table page read. */
static void test_orphan_freed(void)
{
	struct tfs t;
	uint64_t inos[NFILES];
	struct statvfs before, after;
	struct dg_attr a;

	REQUIRE(tfs_make(&t, "icache5"));
	make_files(&t, 0, NFILES, inos);
	REQUIRE(dg_fs_statfs(t.fs, &before) == 0);
	REQUIRE(dg_fs_open_ino(t.fs, inos[5], false, NULL) == 0);
	REQUIRE(dg_fs_open_ino(t.fs, inos[9], false, NULL) == 0);
	REQUIRE(dg_fs_unlink(t.fs, DG_ROOT_INO, "f5") == 0);
	REQUIRE(dg_fs_unlink(t.fs, DG_ROOT_INO, "f9") == 0);
	/* Still there while open: the crash comes now. */
	REQUIRE(dg_fs_getattr(t.fs, inos[5], &a) == 0);
	CHECK_EQ(a.nlink, 0);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(dg_fs_getattr(t.fs, inos[5], &a), -ENOENT);
	CHECK_EQ(dg_fs_getattr(t.fs, inos[9], &a), -ENOENT);
	/* The root's and the orphans' table pages read, nothing else. */
	CHECK(!in_core(&t, inos[5]) && !in_core(&t, inos[9]));
	CHECK(counts(&t).inodes_cached <= 3 * DG_INODES_PER_PAGE);
	CHECK(counts(&t).inode_loads <= 3);
	REQUIRE(dg_fs_statfs(t.fs, &after) == 0);
	CHECK_EQ(after.f_ffree, before.f_ffree + 2);
	CHECK_EQ(fsck_findings(&t), 0);
	tfs_done(&t);
}

struct racer {
	struct tfs *t;
	const uint64_t *inos;
	unsigned bad;
};

static void *race_stats(void *arg)
{
	struct racer *r = arg;
	struct dg_attr a;

	for (unsigned i = 0; i < NFILES; i++)
		if (dg_fs_getattr(r->t->fs, r->inos[i], &a) ||
		    a.ino != r->inos[i])
			r->bad++;
	return NULL;
}

/* Readers under the shared lock load at once: each inode is read once,
 * whoever asks first (iload_lock), and every reader gets it. */
static void test_concurrent_loads(void)
{
	struct tfs t;
	uint64_t inos[NFILES], all[NFILES + 1];
	pthread_t th[4];
	struct racer r[4];

	REQUIRE(tfs_make(&t, "icache6"));
	make_files(&t, 0, NFILES, inos);
	REQUIRE(tfs_remount(&t));
	for (unsigned k = 0; k < 4; k++) {
		r[k] = (struct racer){ &t, inos, 0 };
		REQUIRE(pthread_create(&th[k], NULL, race_stats, &r[k]) == 0);
	}
	for (unsigned k = 0; k < 4; k++) {
		pthread_join(th[k], NULL);
		CHECK_EQ(r[k].bad, 0);
	}
	/* The root's page at the mount, then each other page once. */
	all[0] = DG_ROOT_INO;
	memcpy(all + 1, inos, sizeof(inos));
	CHECK_EQ(counts(&t).inode_loads, pages_of(all, NFILES + 1));
	CHECK_EQ(counts(&t).inodes_cached, NFILES + 1);
	tfs_done(&t);
}

/* The inodes on the table page of the one asked for: verified by the
 * same read, taken with it, so a page of 16 in use costs one read
 * (`ls -l` of a big directory); not while the cache is at its bound,
 * since a load under the shared lock lets nothing go. */
static void test_page_neighbours(void)
{
	struct tfs t;
	uint64_t *inos = calloc(NPAGEFILES, sizeof(*inos)), first;
	struct dg_attr a;
	uint64_t loads;

	REQUIRE(inos);
	REQUIRE(tfs_make(&t, "icache7"));
	make_files(&t, 0, NPAGEFILES, inos);	/* chunk 0 full */
	REQUIRE(tfs_remount(&t));
	first = inos[NPAGEFILES / 2] - inos[NPAGEFILES / 2] %
					  DG_INODES_PER_PAGE;
	REQUIRE(first / DG_INODES_PER_PAGE != DG_ROOT_INO / DG_INODES_PER_PAGE);
	loads = counts(&t).inode_loads;
	for (unsigned k = 0; k < DG_INODES_PER_PAGE; k++)
		REQUIRE(dg_fs_getattr(t.fs, first + k, &a) == 0);
	CHECK_EQ(counts(&t).inode_loads, loads + 1);
	for (unsigned k = 0; k < DG_INODES_PER_PAGE; k++)
		CHECK(in_core(&t, first + k));

	/* At the bound: the one asked for alone, a read each. */
	REQUIRE(tfs_remount(&t));
	dg_fs_set_inode_cache(t.fs, 2);
	REQUIRE(counts(&t).inodes_cached == 2);
	loads = counts(&t).inode_loads;
	for (unsigned k = 0; k < DG_INODES_PER_PAGE; k++) {
		REQUIRE(dg_fs_getattr(t.fs, first + k, &a) == 0);
		CHECK_EQ(counts(&t).inodes_cached, 2 + k + 1);
	}
	CHECK_EQ(counts(&t).inode_loads, loads + DG_INODES_PER_PAGE);
	check_files(&t, NPAGEFILES);
	tfs_done(&t);
	free(inos);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "mount_reads_root", test_mount_reads_root },
		{ "forget_evicts", test_forget_evicts },
		{ "held_stay", test_held_stay },
		{ "create_after_evict", test_create_after_evict },
		{ "orphan_freed", test_orphan_freed },
		{ "concurrent_loads", test_concurrent_loads },
		{ "page_neighbours", test_page_neighbours },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
