// SPDX-License-Identifier: MIT
/* test_itable.c -- the inode table past the root record's 470 chunks
 * (DG_FEAT_INCOMPAT_BIG_ITABLE, format.h "Inode table"): the chunk map
 * is made on first use, with the flag on every superblock; the files
 * live through a remount; fsck finds the volume clean; unlink and
 * reuse work past the root's chunks; a bad map page stops the mount
 * and fsck says so. The test knob (dg_fs_test_itable_direct) starts the
 * map after 2 chunks, so that a few thousand creates cross into it;
 * map_of_two_pages makes a map of two pages (one inode a chunk);
 * DG_ITABLE_FULL=1 also runs the real crossing (482,000 creates). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <time.h>

#include "fscheck.h"
#include "fsys_i.h"
#include "tfs.h"

/* Findings of fsck's filesystem check, read only; -1 if it failed. */
static int fsck_findings(struct dg_vol *vol)
{
	int n = 0;

	if (dg_check_fs(vol, tcheck_count_event, NULL, &n) < 0)
		return -1;
	return n;
}

static bool make_files(struct tfs *t, unsigned from, unsigned to,
		       uint64_t *inos)
{
	char name[32];

	for (unsigned i = from; i < to; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		inos[i] = tfs_file(t, DG_ROOT_INO, name);
		if (!inos[i])
			return false;
		dg_fs_forget(t->fs, inos[i], 1);
	}
	return true;
}

static unsigned names_right(struct tfs *t, unsigned n, const uint64_t *inos)
{
	char name[32];
	unsigned ok = 0;

	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		ok += inos[i] && tfs_lookup(t, DG_ROOT_INO, name) ==
					 (int64_t)inos[i];
	}
	return ok;
}

#define DIRECT 2u
#define NFILES (5u * DG_INODES_PER_CHUNK) /* 2 chunks direct, 4 mapped */

static void grows_past_root(void)
{
	struct tfs t;
	struct statvfs sv;
	struct dg_itable_info info;
	uint64_t *inos = calloc(NFILES, sizeof(*inos));
	unsigned before;

	REQUIRE(inos);
	REQUIRE(tfs_make_size(&t, "itgrow", 32ull << 20));
	CHECK_EQ(dg_fs_test_itable_direct(t.fs, DIRECT), 0);
	/* The root's chunks fill first; no flag yet. */
	before = DIRECT * DG_INODES_PER_CHUNK - 2; /* ino 0, the root */
	REQUIRE(make_files(&t, 0, before, inos));
	CHECK_EQ(t.fs->root.nchunks, DIRECT);
	CHECK(!dg_vol_has_incompat(t.vol, DG_FEAT_INCOMPAT_BIG_ITABLE));
	CHECK_EQ(t.fs->root.icmap_vpn, 0);
	REQUIRE(make_files(&t, before, NFILES, inos));
	CHECK(dg_vol_has_incompat(t.vol, DG_FEAT_INCOMPAT_BIG_ITABLE));
	CHECK(t.fs->root.nchunks > DIRECT + 1);
	CHECK_EQ(t.fs->root.direct, DIRECT);
	CHECK(t.fs->root.icmap_vpn != 0);
	CHECK(inos[NFILES - 1] >= DIRECT * DG_INODES_PER_CHUNK);
	CHECK_EQ(dg_fs_statfs(t.fs, &sv), 0);
	CHECK(sv.f_files >= NFILES + 1 && sv.f_ffree <= sv.f_files);
	CHECK_EQ(sv.f_files - sv.f_ffree, NFILES + 1);
	/* The map is on the media: a remount finds every file. */
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(t.fs->root.direct, DIRECT);
	CHECK_EQ(names_right(&t, NFILES, inos), NFILES);
	/* dumpfs's view: the directory and one map page. */
	CHECK_EQ(dg_itable_inspect(t.vol, &info), 0);
	CHECK_EQ(info.chunks, NFILES / DG_INODES_PER_CHUNK + 1);
	CHECK_EQ(info.direct, DIRECT);
	CHECK_EQ(info.map_pages, 2);
	CHECK_EQ(fsck_findings(t.vol), 0);
	/* Unlink every other file; the freed mapped slots are reused. */
	for (unsigned i = 0; i < NFILES; i += 2) {
		char name[32];

		snprintf(name, sizeof(name), "f%u", i);
		REQUIRE(dg_fs_unlink(t.fs, DG_ROOT_INO, name) == 0);
		inos[i] = 0;
	}
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(fsck_findings(t.vol), 0);
	for (unsigned i = 0; i < NFILES; i += 2)
		REQUIRE(make_files(&t, i, i + 1, inos));
	CHECK_EQ(t.fs->root.nchunks, NFILES / DG_INODES_PER_CHUNK + 1);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(names_right(&t, NFILES, inos), NFILES);
	CHECK_EQ(fsck_findings(t.vol), 0);
	/* Once the map exists the knob is refused. */
	CHECK_EQ(dg_fs_test_itable_direct(t.fs, DIRECT), -EINVAL);
	tfs_done(&t);
	free(inos);
}

/* A volume that never needs the map keeps the old form, and its flag. */
static void small_volume_unchanged(void)
{
	struct tfs t;
	uint64_t inos[300];

	REQUIRE(tfs_make(&t, "itsmall"));
	REQUIRE(make_files(&t, 0, 300, inos));
	REQUIRE(tfs_remount(&t));
	CHECK(!dg_vol_has_incompat(t.vol, DG_FEAT_INCOMPAT_BIG_ITABLE));
	CHECK_EQ(t.fs->root.icmap_vpn, 0);
	CHECK_EQ(t.fs->root.direct, 0);
	CHECK_EQ(names_right(&t, 300, inos), 300);
	tfs_done(&t);
}

/* A map page that names a page out of range: the mount refuses the
 * volume and fsck reports it. (One no copy of which verifies reads as
 * -EIO, reported the same way.) */
static void bad_map_page(void)
{
	struct tfs t;
	struct dg_txn *txn;
	uint64_t *inos = calloc(NFILES, sizeof(*inos)), map, bad;
	struct dg_fs *fs = NULL;
	int n = 0;

	REQUIRE(inos);
	REQUIRE(tfs_make_size(&t, "itbad", 32ull << 20));
	CHECK_EQ(dg_fs_test_itable_direct(t.fs, DIRECT), 0);
	REQUIRE(make_files(&t, 0, DIRECT * DG_INODES_PER_CHUNK + 10, inos));
	map = t.fs->icmap_vpn[1];
	REQUIRE(map);
	dg_fs_close(t.fs);
	t.fs = NULL;
	txn = dg_txn_new(t.vol);
	REQUIRE(txn);
	bad = dg_vol_vpns(t.vol) + 5;
	REQUIRE(dg_txn_write(txn, map, 0, &bad, sizeof(bad)) == 0);
	REQUIRE(dg_txn_commit(txn) == 0);
	dg_txn_free(txn);
	CHECK_EQ(dg_fs_open(t.vol, &fs), -EUCLEAN);
	CHECK(dg_check_fs(t.vol, tcheck_count_event, NULL, &n) != 0 || n > 0);
	CHECK(n > 0);
	tfs_done(&t);
	free(inos);
}

/*
 * A map of more than one page (more than DG_ICMAP_PER_PAGE chunks past
 * the root's): 513 mapped chunks would take 525,000 creates, so every
 * chunk there gets one inode. Before each create the chunks in core
 * are made to look full (chunk_used), so that the allocator makes the
 * next chunk, by its own path, and puts the new inode first in it; the
 * true counts are put back after. Then a few thousand files fill the
 * free slots as usual, a remount finds them all through both map pages,
 * some are freed, and the filesystem check finds the volume clean.
 */
#define MP_DIRECT 1u
#define MP_CHUNKS (MP_DIRECT + DG_ICMAP_PER_PAGE + 2) /* 2 map pages */
#define MP_MORE	  3000u

/* One create in a new chunk: its inode, or 0. */
static uint64_t file_in_new_chunk(struct tfs *t, unsigned i, uint16_t *used)
{
	uint32_t n = t->fs->root.nchunks;
	char name[32];
	uint64_t ino;

	pthread_mutex_lock(&t->fs->ino_lock);
	for (uint32_t c = 0; c < n; c++) {
		used[c] = t->fs->chunk_used[c];
		t->fs->chunk_used[c] = DG_INODES_PER_CHUNK;
	}
	pthread_mutex_unlock(&t->fs->ino_lock);
	snprintf(name, sizeof(name), "f%u", i);
	ino = tfs_file(t, DG_ROOT_INO, name);
	pthread_mutex_lock(&t->fs->ino_lock);
	for (uint32_t c = 0; c < n; c++)
		t->fs->chunk_used[c] = used[c];
	pthread_mutex_unlock(&t->fs->ino_lock);
	if (ino)
		dg_fs_forget(t->fs, ino, 1);
	return ino && t->fs->root.nchunks == n + 1 &&
			       ino / DG_INODES_PER_CHUNK == n
		       ? ino
		       : 0;
}

static void map_of_two_pages(void)
{
	const unsigned nnew = MP_CHUNKS - MP_DIRECT, n = nnew + MP_MORE;
	uint64_t *inos = calloc(n, sizeof(*inos));
	uint16_t *used = calloc(MP_CHUNKS, sizeof(*used));
	struct dg_itable_info info;
	struct timespec a, b;
	unsigned freed = 0;
	struct tfs t;

	REQUIRE(inos && used);
	clock_gettime(CLOCK_MONOTONIC, &a);
	REQUIRE(tfs_make_size(&t, "itmap2", 128ull << 20));
	CHECK_EQ(dg_fs_test_itable_direct(t.fs, MP_DIRECT), 0);
	/* Chunk 0 has the root; every later chunk is made by a create. */
	for (unsigned i = 0; i < nnew; i++) {
		inos[i] = file_in_new_chunk(&t, i, used);
		REQUIRE(inos[i]);
	}
	CHECK_EQ(t.fs->root.nchunks, MP_CHUNKS);
	CHECK_EQ(t.fs->root.direct, MP_DIRECT);
	CHECK(t.fs->icmap_vpn[1] && t.fs->icmap_vpn[2] &&
	      t.fs->icmap_vpn[1] != t.fs->icmap_vpn[2]);
	/* The free slots fill as they always do, lowest position first. */
	REQUIRE(make_files(&t, nnew, n, inos));
	CHECK_EQ(t.fs->root.nchunks, MP_CHUNKS);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(names_right(&t, n, inos), n);
	for (unsigned i = 0; i < n; i++)
		CHECK(inos[i] / DG_INODES_PER_CHUNK < MP_CHUNKS);
	CHECK_EQ(dg_itable_inspect(t.vol, &info), 0);
	CHECK_EQ(info.chunks, MP_CHUNKS);
	CHECK_EQ(info.direct, MP_DIRECT);
	CHECK_EQ(info.map_pages, 3);	/* the directory and two pages */
	CHECK_EQ(fsck_findings(t.vol), 0);
	/* Free the files of the second map page's chunks and every third
	 * other one; a remount and the check see the holes. */
	for (unsigned i = 0; i < n; i++) {
		char name[32];

		if (i % 3 && inos[i] / DG_INODES_PER_CHUNK <
				     MP_DIRECT + DG_ICMAP_PER_PAGE)
			continue;
		snprintf(name, sizeof(name), "f%u", i);
		REQUIRE(dg_fs_unlink(t.fs, DG_ROOT_INO, name) == 0);
		inos[i] = 0;
		freed++;
	}
	CHECK(freed > n / 3);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(names_right(&t, n, inos), n - freed);
	CHECK_EQ(t.fs->root.nchunks, MP_CHUNKS);
	CHECK_EQ(fsck_findings(t.vol), 0);
	/* The freed slots are taken again; no chunk is added. */
	for (unsigned i = 0; i < n; i++)
		if (!inos[i])
			REQUIRE(make_files(&t, i, i + 1, inos));
	CHECK_EQ(t.fs->root.nchunks, MP_CHUNKS);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(names_right(&t, n, inos), n);
	CHECK_EQ(fsck_findings(t.vol), 0);
	tfs_done(&t);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("# %u chunks, %u files: %.1f s\n", MP_CHUNKS, n,
	       (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	free(used);
	free(inos);
}

/* The real limit: DG_MAX_ICHUNKS chunks hold 481,279 files (ino 0 and
 * the root take two slots); one more takes the map. */
static void full_scale(void)
{
	const unsigned n = DG_MAX_ICHUNKS * DG_INODES_PER_CHUNK - 2 + 700;
	uint64_t *inos = calloc(n, sizeof(*inos));
	struct timespec a, b;
	struct tfs t;

	if (!getenv("DG_ITABLE_FULL") || strcmp(getenv("DG_ITABLE_FULL"), "1")) {
		printf("# skipped: set DG_ITABLE_FULL=1\n");
		free(inos);
		return;
	}
	REQUIRE(inos);
	REQUIRE(tfs_make_size(&t, "itfull", 160ull << 20));
	clock_gettime(CLOCK_MONOTONIC, &a);
	REQUIRE(make_files(&t, 0, n, inos));
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("# %u creates in %.1f s\n", n,
	       (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	CHECK_EQ(t.fs->root.nchunks, DG_MAX_ICHUNKS + 1);
	CHECK(dg_vol_has_incompat(t.vol, DG_FEAT_INCOMPAT_BIG_ITABLE));
	CHECK_EQ(t.fs->root.direct, 0);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(names_right(&t, n, inos), n);
	CHECK_EQ(fsck_findings(t.vol), 0);
	tfs_done(&t);
	free(inos);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "grows_past_root", grows_past_root },
		{ "small_volume_unchanged", small_volume_unchanged },
		{ "bad_map_page", bad_map_page },
		{ "map_of_two_pages", map_of_two_pages },
		{ "full_scale", full_scale },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
