// SPDX-License-Identifier: MIT
/* test_mapped.c -- libcommit's file maps in the engine: pinning, the
 * single writer, atomic commits of changed lines, line verification and
 * repair of a damaged line before it is overwritten */
#include <stdio.h>

#include "tfs.h"

#define PG DG_PAGE_SIZE

static void test_map_commit_remount(void)
{
	struct tfs t;
	struct dg_fmap *m, *m2;
	const struct dg_fmap_ext *ext;
	struct dg_attr a;
	uint8_t line[128], got[PG];
	unsigned n;
	uint64_t f, pages = 0;

	REQUIRE(tfs_make(&t, "mapcommit"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	REQUIRE(dg_fmap_new(t.fs, f, 0, 4 * PG, DG_FMAP_RW, &m) == 0);
	CHECK_EQ(dg_fmap_ino(m), f);
	/* A read-write map past the end grows the file, holes filled. */
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	CHECK_EQ(a.size, 4 * PG);
	dg_fmap_extents(m, &ext, &n);
	for (unsigned i = 0; i < n; i++) {
		CHECK(ext[i].devoff % PG == 0);
		pages += ext[i].pages;
	}
	CHECK_EQ(pages, 4);
	/* One writer: the file refuses writes and a second writable map. */
	CHECK_EQ(dg_fs_write(t.fs, f, 0, "x", 1), -ETXTBSY);
	CHECK_EQ(dg_fmap_new(t.fs, f, 0, PG, DG_FMAP_RW, &m2), -EBUSY);
	memset(line, 0x3c, sizeof(line));
	{
		struct dg_fmap_run r[2] = { { PG + 64, 128, line },
					    { 3 * PG, 64, line } };
		struct dg_fmap_run bad = { 10, 64, line };

		REQUIRE(dg_fmap_commit(m, r, 2) == 0);
		CHECK_EQ(dg_fmap_commit(m, &bad, 1), -EINVAL);
	}
	CHECK_EQ(dg_fmap_verify(m, 0, 4 * PG, NULL), 0);
	dg_fmap_delete(m);
	CHECK_EQ(dg_fs_write(t.fs, f, 0, "x", 1), 1);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(tfs_read_at(&t, f, PG, PG, got), PG);
	CHECK(got[63] == 0 && got[64] == 0x3c && got[191] == 0x3c &&
	      got[192] == 0);
	CHECK_EQ(tfs_read_at(&t, f, 3 * PG, 64, got), 64);
	CHECK(got[0] == 0x3c && got[63] == 0x3c);
	tfs_done(&t);
}

/* A line damaged behind the engine is found by verify and repaired
 * through the read path before a commit overwrites part of its page. */
static void test_verify_and_repair(void)
{
	struct tfs t;
	struct dg_fmap *m;
	const struct dg_fmap_ext *ext;
	uint8_t junk[64], line[64], want[PG], got[PG];
	uint64_t f, bad = 0, seed = 3;
	unsigned n;

	REQUIRE(tfs_make(&t, "mapverify"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	trand_fill(&seed, want, PG);
	REQUIRE(dg_fs_write(t.fs, f, 0, want, PG) == PG);
	REQUIRE(dg_fmap_new(t.fs, f, 0, PG, DG_FMAP_RW, &m) == 0);
	dg_fmap_extents(m, &ext, &n);
	REQUIRE(n == 1);
	memset(junk, 0xee, sizeof(junk));
	tvol_poke(&t.tv, ext[0].dev, ext[0].devoff + 1024, junk, 64);
	CHECK_EQ(dg_fmap_verify(m, 0, PG, &bad), 1);
	CHECK_EQ(bad, 1024);
	memset(line, 0x11, sizeof(line));
	{
		struct dg_fmap_run r = { 0, 64, line };

		REQUIRE(dg_fmap_commit(m, &r, 1) == 0);
	}
	CHECK_EQ(dg_fmap_verify(m, 0, PG, &bad), 0);
	dg_fmap_delete(m);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(tfs_read_at(&t, f, 0, PG, got), PG);
	memset(want, 0x11, 64);
	CHECK(memcmp(got, want, PG) == 0);
	tfs_done(&t);
}

/* A read-only map may not reach past the last page; many read-only
 * maps may share a file. */
static void test_read_only(void)
{
	struct tfs t;
	struct dg_fmap *a, *b;
	uint64_t f;

	REQUIRE(tfs_make(&t, "mapro"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	REQUIRE(dg_fs_write(t.fs, f, 0, "abc", 3) == 3);
	CHECK(dg_fmap_new(t.fs, f, 0, 2 * PG, 0, &a) < 0);
	REQUIRE(dg_fmap_new(t.fs, f, 0, PG, 0, &a) == 0);
	REQUIRE(dg_fmap_new(t.fs, f, 0, PG, 0, &b) == 0);
	CHECK_EQ(dg_fs_write(t.fs, f, 0, "x", 1), 1);
	dg_fmap_delete(a);
	dg_fmap_delete(b);
	tfs_done(&t);
}

/* A read-only map of a sparse file allocates nothing: its holes are
 * extents of DG_FMAP_HOLE, the file's blocks stay as they were, and a
 * verify passes over them. */
static void test_read_only_holes(void)
{
	struct tfs t;
	struct dg_fmap *m;
	const struct dg_fmap_ext *ext;
	struct dg_attr before, after;
	unsigned n;
	uint64_t f, pages = 0, holes = 0, bad = 0;

	REQUIRE(tfs_make(&t, "maproholes"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	/* Data in page 2 of 8, the rest holes. */
	REQUIRE(dg_fs_write(t.fs, f, 2 * PG, "data", 4) == 4);
	{
		struct dg_setattr sa = { .valid = DG_SET_SIZE, .size = 8 * PG };

		REQUIRE(dg_fs_setattr(t.fs, f, &sa, &before) == 0);
	}
	REQUIRE(dg_fs_getattr(t.fs, f, &before) == 0);
	REQUIRE(dg_fmap_new(t.fs, f, 0, 8 * PG, 0, &m) == 0);
	dg_fmap_extents(m, &ext, &n);
	CHECK_EQ(n, 3);
	for (unsigned i = 0; i < n; i++) {
		pages += ext[i].pages;
		if (ext[i].dev == DG_FMAP_HOLE) {
			holes += ext[i].pages;
			CHECK_EQ(ext[i].devoff, 0);
		}
	}
	CHECK_EQ(pages, 8);
	CHECK_EQ(holes, 7);
	REQUIRE(dg_fs_getattr(t.fs, f, &after) == 0);
	CHECK_EQ(after.blocks, before.blocks);
	CHECK(dg_fmap_verify(m, 0, 8 * PG, &bad) <= 0);
	dg_fmap_delete(m);
	REQUIRE(dg_fs_getattr(t.fs, f, &after) == 0);
	CHECK_EQ(after.blocks, before.blocks);
	/* A read-write map fills them, as before. */
	REQUIRE(dg_fmap_new(t.fs, f, 0, 8 * PG, DG_FMAP_RW, &m) == 0);
	dg_fmap_extents(m, &ext, &n);
	for (unsigned i = 0; i < n; i++)
		CHECK(ext[i].dev != DG_FMAP_HOLE);
	dg_fmap_delete(m);
	REQUIRE(dg_fs_getattr(t.fs, f, &after) == 0);
	CHECK(after.blocks > before.blocks);
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "map_commit_remount", test_map_commit_remount },
		{ "verify_and_repair", test_verify_and_repair },
		{ "read_only", test_read_only },
		{ "read_only_holes", test_read_only_holes },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
