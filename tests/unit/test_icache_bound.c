// SPDX-License-Identifier: MIT
/* test_icache_bound.c -- what keeps inodes in core past -o inode_cache
 * (issue 34, review of lazy inodes): a plain readdir reads no inode;
 * an inode with only its times to store still goes once let go; an
 * inode whose record is lost, or whose extent map is malformed, stays
 * in core as damaged.
 * Counts, not timings. */
#include <errno.h>
#include <stdarg.h>
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

static unsigned nlogged;

static void count_log(enum dg_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	__atomic_add_fetch(&nlogged, 1, __ATOMIC_RELAXED);
}

/* An inode table page lost after the mount: its inodes give EIO to a
 * stat, a lookup and an unlink, are counted in the damage and logged
 * once (a stub stays in core), and readdir still lists their names. */
static void test_lost_table_page(void)
{
	struct tfs t;
	uint64_t inos[NFILES], vpn;
	uint32_t off;
	unsigned victim = NFILES / 2, logged, lost = 0;
	struct dg_attr a;
	struct dg_fs_damage dmg;
	struct listing l = { 0 }, lp = { 0 };
	char name[32];

	REQUIRE(tfs_make_no_zone(&t, "ibound3"));
	make_files(&t, NFILES, inos);
	REQUIRE(tfs_remount(&t));
	dg_fs_set_inode_cache(t.fs, BOUND);
	dg_ino_where(t.fs, inos[victim], &vpn, &off);
	for (unsigned i = 0; i < NFILES; i++) {
		uint64_t v;

		dg_ino_where(t.fs, inos[i], &v, &off);
		lost += v == vpn;
	}
	REQUIRE(lost > 0 && lost < NFILES);
	tvol_lose_page(&t.tv, t.vol, vpn);
	dg_vol_set_log(t.vol, count_log, DG_LOG_DEBUG);
	CHECK_EQ(dg_fs_getattr(t.fs, inos[victim], &a), -EIO);
	logged = nlogged;
	CHECK(logged > 0);
	CHECK_EQ(dg_fs_getattr(t.fs, inos[victim], &a), -EIO);
	snprintf(name, sizeof(name), "f%u", victim);
	CHECK_EQ(dg_fs_lookup(t.fs, DG_ROOT_INO, name, &a), -EIO);
	CHECK_EQ(dg_fs_unlink(t.fs, DG_ROOT_INO, name), -EIO);
	CHECK_EQ(nlogged, logged);
	dg_fs_get_damage(t.fs, &dmg);
	CHECK_EQ(dmg.inodes, 1);
	/* Listed, with their type, plain or plus. */
	REQUIRE(dg_fs_readdir(t.fs, DG_ROOT_INO, 0, false, count_fill,
			      &l) == 0);
	CHECK_EQ(l.names, NFILES);
	CHECK_EQ(l.regular, NFILES);
	REQUIRE(dg_fs_readdir(t.fs, DG_ROOT_INO, 0, true, count_fill,
			      &lp) == 0);
	CHECK_EQ(lp.names, NFILES);
	CHECK_EQ(lp.regular, NFILES);
	dg_fs_get_damage(t.fs, &dmg);
	CHECK_EQ(dmg.inodes, lost);
	dg_vol_set_log(t.vol, NULL, DG_LOG_WARNING);
	tfs_done(&t);
}

/* Whether a forget freed the inode is told by its slot alone: asking
 * reads nothing back into core (ops.c forget_one()). */
static void test_in_use_reads_nothing(void)
{
	struct tfs t;
	uint64_t inos[NFILES];

	REQUIRE(tfs_make(&t, "ibound4"));
	make_files(&t, NFILES, inos);
	REQUIRE(tfs_remount(&t));
	uint64_t loads = counts(&t).inode_loads;

	for (unsigned i = 0; i < NFILES; i++)
		CHECK(dg_fs_ino_in_use(t.fs, inos[i]));
	CHECK(!dg_fs_ino_in_use(t.fs, inos[NFILES - 1] + 1));
	CHECK(!dg_fs_ino_in_use(t.fs, 0));
	CHECK(!dg_fs_ino_in_use(t.fs, 1ull << 40));
	CHECK_EQ(counts(&t).inode_loads, loads);
	REQUIRE(dg_fs_unlink(t.fs, DG_ROOT_INO, "f0") == 0);
	CHECK(!dg_fs_ino_in_use(t.fs, inos[0]));
	tfs_done(&t);
}

/* A malformed extent map whose checksums hold (a software bug: an
 * inline extent past the volume, stored with the record whole): like a
 * lost record, the file gives EIO to a stat, a read, a lookup and an
 * unlink, is counted in the damage and logged once (a stub stays in
 * core); a neighbour's load of its table page neither takes nor logs
 * it, and the neighbour serves on. */
static void test_malformed_map(void)
{
	struct dg_setattr sa = { .valid = DG_SET_MODE, .mode = 0600 };
	static uint8_t buf[DG_PAGE_SIZE], pages[DG_PAGE_SIZE];
	struct tfs t;
	uint64_t inos[NFILES], vpn, v, bad = 0;
	uint32_t off;
	unsigned victim = NFILES / 2, other = NFILES, logged;
	struct dg_inode *ip;
	struct dg_fs_damage dmg;
	struct dg_attr a;
	const void *data;
	char name[32];

	REQUIRE(tfs_make(&t, "ibound4"));
	make_files(&t, NFILES, inos);
	memset(buf, 0x5a, sizeof(buf));
	REQUIRE(dg_fs_write(t.fs, inos[victim], 0, buf, sizeof(buf)) ==
		(ssize_t)sizeof(buf));
	pthread_rwlock_rdlock(&t.fs->lock);
	ip = dg_inode_get(t.fs, inos[victim]);
	pthread_rwlock_unlock(&t.fs->lock);
	REQUIRE(ip && ip->d.nextents == 1 && ip->d.inl[0].len == 1);
	ip->d.inl[0].vpn = UINT64_MAX / 2;
	REQUIRE(dg_fs_setattr(t.fs, inos[victim], &sa, &a) == 0);
	REQUIRE(tfs_remount(&t));
	dg_ino_where(t.fs, inos[victim], &vpn, &off);
	for (unsigned i = 0; i < NFILES && other == NFILES; i++) {
		dg_ino_where(t.fs, inos[i], &v, &off);
		if (i != victim && v == vpn)
			other = i;
	}
	REQUIRE(other < NFILES);
	nlogged = 0;
	dg_vol_set_log(t.vol, count_log, DG_LOG_WARNING);
	/* The neighbour first: its load reads the victim's record too. */
	CHECK_EQ(dg_fs_getattr(t.fs, inos[other], &a), 0);
	CHECK_EQ(nlogged, 0);
	CHECK_EQ(dg_fs_getattr(t.fs, inos[victim], &a), -EIO);
	logged = nlogged;
	CHECK_EQ(logged, 1);
	CHECK_EQ(dg_fs_getattr(t.fs, inos[victim], &a), -EIO);
	CHECK_EQ(dg_fs_read(t.fs, inos[victim], 0, DG_PAGE_SIZE, pages, &data),
		 -EIO);
	snprintf(name, sizeof(name), "f%u", victim);
	CHECK_EQ(dg_fs_lookup(t.fs, DG_ROOT_INO, name, &a), -EIO);
	CHECK_EQ(dg_fs_unlink(t.fs, DG_ROOT_INO, name), -EIO);
	CHECK_EQ(nlogged, logged);
	dg_fs_get_damage(t.fs, &dmg);
	CHECK_EQ(dmg.inodes, 1);
	CHECK_EQ(dg_fs_damaged_inodes(t.fs, &bad, 1), 1);
	CHECK_EQ(bad, inos[victim]);
	snprintf(name, sizeof(name), "f%u", other);
	CHECK_EQ(tfs_lookup(&t, DG_ROOT_INO, name), (int64_t)inos[other]);
	dg_vol_set_log(t.vol, NULL, DG_LOG_WARNING);
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "plain_readdir_loads_none", test_plain_readdir_loads_none },
		{ "dirty_times_let_go", test_dirty_times_let_go },
		{ "lost_table_page", test_lost_table_page },
		{ "malformed_map", test_malformed_map },
		{ "in_use_reads_nothing", test_in_use_reads_nothing },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
