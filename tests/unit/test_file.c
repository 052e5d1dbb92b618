// SPDX-License-Identifier: MIT
/* test_file.c -- file contents: writes across pages, holes, truncation,
 * hole punching and preallocation, read back after a remount */
#include <stdio.h>
#include <linux/falloc.h>

#include "tfs.h"

#define PG DG_PAGE_SIZE

/* Read size bytes at off of ino into out; the byte count or -errno. */
static ssize_t fread_at(struct tfs *t, uint64_t ino, uint64_t off,
			size_t size, void *out)
{
	uint8_t *pages = aligned_alloc(PG, (size + 3 * PG - 1) / PG * PG);
	const void *data;
	ssize_t n;

	if (!pages)
		return -ENOMEM;
	n = dg_fs_read(t->fs, ino, off, size, pages, &data);
	if (n > 0)
		memcpy(out, data, (size_t)n);
	free(pages);
	return n;
}

static void test_write_read_holes(void)
{
	struct tfs t;
	uint64_t seed = 77, f;
	size_t len = 5 * PG + 123;
	uint8_t *want = malloc(len), *got = malloc(len + PG);
	struct dg_attr a;

	REQUIRE(want && got);
	REQUIRE(tfs_make(&t, "filewrite"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	trand_fill(&seed, want, len);
	/* Unaligned, across pages; then a write far out leaves a hole. */
	REQUIRE(dg_fs_write(t.fs, f, 1000, want, len) == (ssize_t)len);
	REQUIRE(dg_fs_write(t.fs, f, 64 * PG, "end", 3) == 3);
	REQUIRE(tfs_remount(&t));
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	CHECK_EQ(a.size, 64 * PG + 3);
	CHECK_EQ(fread_at(&t, f, 1000, len, got), (ssize_t)len);
	CHECK(memcmp(got, want, len) == 0);
	CHECK_EQ(fread_at(&t, f, 0, 1000, got), 1000);
	CHECK(got[0] == 0 && got[999] == 0);
	CHECK_EQ(fread_at(&t, f, 20 * PG, PG, got), PG);
	for (unsigned i = 0; i < PG; i++)
		if (got[i]) {
			CHECK(!"a hole reads as zeros");
			break;
		}
	CHECK_EQ(fread_at(&t, f, 64 * PG, 100, got), 3);
	CHECK(memcmp(got, "end", 3) == 0);
	/* Only written pages are allocated. */
	CHECK(a.blocks * 512 <= 8 * PG + PG);
	tfs_done(&t);
	free(want);
	free(got);
}

static void test_truncate(void)
{
	struct tfs t;
	struct dg_setattr sa = { .valid = DG_SET_SIZE };
	struct dg_attr a;
	uint8_t buf[2 * PG];
	uint64_t f, free0;

	REQUIRE(tfs_make(&t, "filetrunc"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	free0 = dg_free_vpns(t.vol);
	memset(buf, 0xab, sizeof(buf));
	for (unsigned i = 0; i < 10; i++)
		REQUIRE(dg_fs_write(t.fs, f, i * sizeof(buf), buf,
				    sizeof(buf)) == sizeof(buf));
	sa.size = PG + 10; /* mid-page: the rest of the page reads zero */
	REQUIRE(dg_fs_setattr(t.fs, f, &sa, &a) == 0);
	sa.size = 3 * PG; /* grow again: no stale bytes come back */
	REQUIRE(dg_fs_setattr(t.fs, f, &sa, &a) == 0);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(fread_at(&t, f, PG, 2 * PG, buf), 2 * PG);
	CHECK(buf[9] == 0xab && buf[10] == 0 && buf[PG - 1] == 0 &&
	      buf[PG] == 0);
	sa.size = 0;
	REQUIRE(dg_fs_setattr(t.fs, f, &sa, &a) == 0);
	CHECK_EQ(dg_free_vpns(t.vol), free0);
	tfs_done(&t);
}

static void test_fallocate(void)
{
	struct tfs t;
	struct dg_attr a;
	uint8_t buf[4 * PG];
	uint64_t f, free0;

	REQUIRE(tfs_make(&t, "filefalloc"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	free0 = dg_free_vpns(t.vol);
	REQUIRE(dg_fs_fallocate(t.fs, f, 0, 0, 4 * PG) == 0);
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	CHECK_EQ(a.size, 4 * PG);
	CHECK(dg_free_vpns(t.vol) <= free0 - 4);
	memset(buf, 0x5a, sizeof(buf));
	REQUIRE(dg_fs_write(t.fs, f, 0, buf, sizeof(buf)) == sizeof(buf));
	REQUIRE(dg_fs_fallocate(t.fs, f, FALLOC_FL_PUNCH_HOLE |
				FALLOC_FL_KEEP_SIZE, PG, 2 * PG) == 0);
	REQUIRE(tfs_remount(&t));
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	CHECK_EQ(a.size, 4 * PG);
	CHECK_EQ(fread_at(&t, f, 0, sizeof(buf), buf), sizeof(buf));
	CHECK(buf[0] == 0x5a && buf[PG] == 0 && buf[3 * PG - 1] == 0 &&
	      buf[3 * PG] == 0x5a);
	CHECK_EQ(dg_fs_fallocate(t.fs, f, 0x40 /* COLLAPSE */, 0, PG),
		 -EOPNOTSUPP);
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "write_read_holes", test_write_read_holes },
		{ "truncate", test_truncate },
		{ "fallocate", test_fallocate },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
