// SPDX-License-Identifier: MIT
/* test_write_undo.c -- a write, a batch or a hole punch that fails after
 * it changed the file's in-core extents (moved pages, punched ones)
 * leaves the file reading its old bytes, in core and after a remount.
 * The failures are injected at file.c's calls into the transaction and
 * commit layers (linked with --wrap, see meson.build): ENOMEM, which
 * latches nothing and leaves the volume writable. */
#include <linux/falloc.h>

#include "tfs.h"

#define PG DG_PAGE_SIZE

int __real_dg_txn_write_ref(struct dg_txn *txn, uint64_t vpn, uint32_t off,
			    const void *buf, uint32_t len);
int __wrap_dg_txn_write_ref(struct dg_txn *txn, uint64_t vpn, uint32_t off,
			    const void *buf, uint32_t len);
int __real_dg_fs_commit(struct dg_fs *fs, struct dg_txn *txn);
int __wrap_dg_fs_commit(struct dg_fs *fs, struct dg_txn *txn);

/* Calls to let through before the one that fails; -1: none fails. */
static int write_ref_left = -1, commit_left = -1;

static bool fail_now(int *left)
{
	if (*left < 0)
		return false;
	return (*left)-- == 0;
}

int __wrap_dg_txn_write_ref(struct dg_txn *txn, uint64_t vpn, uint32_t off,
			    const void *buf, uint32_t len)
{
	if (fail_now(&write_ref_left))
		return -ENOMEM;
	return __real_dg_txn_write_ref(txn, vpn, off, buf, len);
}

int __wrap_dg_fs_commit(struct dg_fs *fs, struct dg_txn *txn)
{
	if (fail_now(&commit_left))
		return -ENOMEM;
	return __real_dg_fs_commit(fs, txn);
}

/* The file reads want (len bytes) now, after a write that stores its
 * inode (the map made durable), and after a remount. */
static void check_old_bytes(struct tfs *t, uint64_t f, const uint8_t *want,
			    size_t len)
{
	uint8_t *got = malloc(len);

	REQUIRE(got);
	CHECK_EQ(tfs_read_at(t, f, 0, len, got), (ssize_t)len);
	CHECK(memcmp(got, want, len) == 0);
	/* Extending the file stores the inode and its map. */
	CHECK_EQ(dg_fs_write(t->fs, f, len, "x", 1), 1);
	REQUIRE(tfs_remount(t));
	memset(got, 0, len);
	CHECK_EQ(tfs_read_at(t, f, 0, len, got), (ssize_t)len);
	CHECK(memcmp(got, want, len) == 0);
	free(got);
}

/* A 1 MiB overwrite moves its pages to new rows (relocate()), then a
 * page's write into the transaction fails. */
static void test_relocated_write(void)
{
	struct tfs t;
	uint64_t seed = 11, f, blocks;
	size_t len = 256 * PG;
	uint8_t *want = malloc(len), *other = malloc(len);
	struct dg_attr a;

	REQUIRE(want && other);
	REQUIRE(tfs_make(&t, "undoreloc"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	trand_fill(&seed, want, len);
	trand_fill(&seed, other, len);
	REQUIRE(dg_fs_write(t.fs, f, 0, want, len) == (ssize_t)len);
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	blocks = a.blocks;
	write_ref_left = 5;
	CHECK_EQ(dg_fs_write(t.fs, f, 0, other, len), -ENOMEM);
	write_ref_left = -1;
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	CHECK_EQ(a.blocks, blocks);
	check_old_bytes(&t, f, want, len);
	tfs_done(&t);
	free(want);
	free(other);
}

/* A batch of short runs whose whole pages move together to a band
 * (scatter_move()), then the commit fails. */
static void test_scattered_batch(void)
{
	struct tfs t;
	uint64_t seed = 12, f;
	size_t len = 256 * PG;
	uint8_t *want = malloc(len), *other = malloc(len);
	struct dg_wseg seg[16];

	REQUIRE(want && other);
	REQUIRE(tfs_make(&t, "undoscat"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	trand_fill(&seed, want, len);
	trand_fill(&seed, other, len);
	REQUIRE(dg_fs_write(t.fs, f, 0, want, len) == (ssize_t)len);
	/* 16 runs of 4 whole pages, 16 pages apart: 64 pages to move. */
	for (unsigned i = 0; i < 16; i++)
		seg[i] = (struct dg_wseg){ i * 16 * PG, other + i * 16 * PG,
					   4 * PG };
	commit_left = 0;
	CHECK_EQ(dg_fs_write_batch(t.fs, f, seg, 16, 16), -ENOMEM);
	commit_left = -1;
	check_old_bytes(&t, f, want, len);
	tfs_done(&t);
	free(want);
	free(other);
}

/* A hole punched in core whose commit fails. */
static void test_punch(void)
{
	struct tfs t;
	uint64_t seed = 13, f, blocks;
	size_t len = 64 * PG;
	uint8_t *want = malloc(len);
	struct dg_attr a;

	REQUIRE(want);
	REQUIRE(tfs_make(&t, "undopunch"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	trand_fill(&seed, want, len);
	REQUIRE(dg_fs_write(t.fs, f, 0, want, len) == (ssize_t)len);
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	blocks = a.blocks;
	commit_left = 0;
	CHECK_EQ(dg_fs_fallocate(t.fs, f,
				 FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				 8 * PG, 16 * PG),
		 -ENOMEM);
	commit_left = -1;
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	CHECK_EQ(a.blocks, blocks);
	check_old_bytes(&t, f, want, len);
	tfs_done(&t);
	free(want);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "relocated_write", test_relocated_write },
		{ "scattered_batch", test_scattered_batch },
		{ "punch", test_punch },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
