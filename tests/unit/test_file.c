// SPDX-License-Identifier: MIT
/* test_file.c -- file contents: writes across pages, holes, truncation,
 * hole punching and preallocation, read back after a remount */
#include <pthread.h>
#include <stdio.h>
#include <linux/falloc.h>
#include <unistd.h>

#include "tfs.h"

#define PG DG_PAGE_SIZE

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
	CHECK_EQ(tfs_read_at(&t, f, 1000, len, got), (ssize_t)len);
	CHECK(memcmp(got, want, len) == 0);
	CHECK_EQ(tfs_read_at(&t, f, 0, 1000, got), 1000);
	CHECK(got[0] == 0 && got[999] == 0);
	CHECK_EQ(tfs_read_at(&t, f, 20 * PG, PG, got), PG);
	for (unsigned i = 0; i < PG; i++)
		if (got[i]) {
			CHECK(!"a hole reads as zeros");
			break;
		}
	CHECK_EQ(tfs_read_at(&t, f, 64 * PG, 100, got), 3);
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
	CHECK_EQ(tfs_read_at(&t, f, PG, 2 * PG, buf), 2 * PG);
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
	uint64_t f, free0, pos;

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
	CHECK_EQ(tfs_read_at(&t, f, 0, sizeof(buf), buf), sizeof(buf));
	CHECK(buf[0] == 0x5a && buf[PG] == 0 && buf[3 * PG - 1] == 0 &&
	      buf[3 * PG] == 0x5a);
	CHECK_EQ(dg_fs_fallocate(t.fs, f, 0x40 /* COLLAPSE */, 0, PG),
		 -EOPNOTSUPP);
	/* Bad arguments, as fallocate(2) answers them, whoever calls. */
	CHECK_EQ(dg_fs_fallocate(t.fs, f, 0, -(int64_t)PG, 2 * PG), -EINVAL);
	CHECK_EQ(dg_fs_fallocate(t.fs, f, 0, 0, -1), -EINVAL);
	CHECK_EQ(dg_fs_fallocate(t.fs, f, 0, PG, 0), -EINVAL);
	CHECK_EQ(dg_fs_fallocate(t.fs, f, 0, INT64_MAX - PG, 2 * PG), -EFBIG);
	/* The punched hole, and a negative offset as lseek(2) answers. */
	CHECK_EQ(dg_fs_lseek(t.fs, f, PG, SEEK_DATA, &pos), 0);
	CHECK_EQ(pos, 3 * PG);
	CHECK_EQ(dg_fs_lseek(t.fs, f, -1, SEEK_DATA, &pos), -ENXIO);
	CHECK_EQ(dg_fs_lseek(t.fs, f, -(int64_t)PG, SEEK_HOLE, &pos), -ENXIO);
	tfs_done(&t);
}

/* Rows written whole, patched, and new (bytes not journaled). */
struct rows {
	uint64_t full, patched, fresh;
};

static struct rows rows_since(struct tfs *t, const struct rows *before)
{
	struct dg_vol_info in;
	struct rows z = { 0 };

	if (!before)
		before = &z;
	dg_vol_get_info(t->vol, &in);
	return (struct rows){ in.rows_full - before->full,
			      in.rows_patched - before->patched,
			      in.rows_new - before->fresh };
}

/*
 * A large write to a new file lands on whole rows (dg_alloc_rows()), so
 * it reads no old data or parity, and writes its rows before its journal
 * entry instead of copying them into it; an overwrite of the same range
 * moves it to new rows and does the same (file.c, relocate()). A small
 * overwrite stays in place. Each reads back after a remount, and the
 * scrub finds every row whole. (3 devices, parity 1: two data pages a
 * row; the inode, extent and bitmap pages are the rows patched.)
 */
static void test_whole_rows(void)
{
	struct tfs t;
	struct dg_scrub_report sr;
	struct rows r0, d;
	uint64_t seed = 3, f, free0;
	size_t len = 256 * PG;
	uint8_t *want = malloc(len), *got = malloc(len);

	REQUIRE(want && got);
	REQUIRE(tfs_make(&t, "filerows"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	for (int pass = 0; pass < 2; pass++) {
		trand_fill(&seed, want, len);
		r0 = rows_since(&t, NULL);
		REQUIRE(dg_fs_write(t.fs, f, 0, want, len) == (ssize_t)len);
		d = rows_since(&t, &r0);
		CHECK_EQ(d.full, 128);
		CHECK_EQ(d.fresh, 128);
		CHECK(d.patched <= 4);
		if (pass == 0)
			free0 = dg_free_vpns(t.vol);
	}
	/* The old pages were given back. */
	CHECK_EQ(dg_free_vpns(t.vol), free0);
	/* A page and a bit: in place, journaled. */
	trand_fill(&seed, want + 10 * PG, PG + 100);
	r0 = rows_since(&t, NULL);
	REQUIRE(dg_fs_write(t.fs, f, 10 * PG, want + 10 * PG, PG + 100) ==
		PG + 100);
	d = rows_since(&t, &r0);
	CHECK_EQ(d.fresh, 0);
	CHECK(d.patched >= 2);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(tfs_read_at(&t, f, 0, len, got), (ssize_t)len);
	CHECK(memcmp(got, want, len) == 0);
	REQUIRE(dg_vol_scrub(t.vol, false, &sr, NULL, NULL) == 0);
	CHECK(sr.detected == 0 && sr.parity_mismatch == 0);
	tfs_done(&t);
	free(want);
	free(got);
}

/*
 * Moving an overwrite to new rows needs room for both copies until the
 * commit: on a full volume the overwrite goes in place instead, and
 * succeeds as it always did.
 */
static void test_whole_rows_full_volume(void)
{
	struct tfs t;
	struct rows r0, d;
	uint64_t seed = 9, f, g;
	size_t len = 256 * PG, off = 0;
	uint8_t *want = malloc(len), *got = malloc(len);
	ssize_t n;

	REQUIRE(want && got);
	REQUIRE(tfs_make(&t, "filerowsfull"));
	f = tfs_file(&t, 1, "f");
	g = tfs_file(&t, 1, "fill");
	REQUIRE(f && g);
	trand_fill(&seed, want, len);
	REQUIRE(dg_fs_write(t.fs, f, 0, want, len) == (ssize_t)len);
	while ((n = dg_fs_write(t.fs, g, off, want, len)) > 0)
		off += (size_t)n;
	CHECK_EQ(n, -ENOSPC);
	CHECK(dg_free_vpns(t.vol) < 256);
	trand_fill(&seed, want, len);
	r0 = rows_since(&t, NULL);
	CHECK_EQ(dg_fs_write(t.fs, f, 0, want, len), (ssize_t)len);
	d = rows_since(&t, &r0);
	CHECK_EQ(d.fresh, 0);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(tfs_read_at(&t, f, 0, len, got), (ssize_t)len);
	CHECK(memcmp(got, want, len) == 0);
	tfs_done(&t);
	free(want);
	free(got);
}

/* One of the writers below: its own file, written whole in pieces of a
 * band and more, overwritten, shrunk and grown, ROUNDS times; its last
 * contents in want. */
#define WRITERS 4
#define ROUNDS 12
struct writer {
	struct tfs *t;
	uint64_t ino, seed;
	size_t len;
	uint8_t *want;
	int err;
};

static void *writer_run(void *arg)
{
	struct writer *w = arg;

	for (int r = 0; r < ROUNDS && !w->err; r++) {
		size_t piece = (r % 3 + 1) * 96 * PG;

		trand_fill(&w->seed, w->want, w->len);
		for (size_t off = 0; off < w->len && !w->err; off += piece) {
			size_t n = w->len - off < piece ? w->len - off : piece;

			if (dg_fs_write(w->t->fs, w->ino, off, w->want + off,
					n) != (ssize_t)n)
				w->err = -EIO;
		}
		/* a small overwrite too: in place, its row patched */
		if (!w->err && dg_fs_write(w->t->fs, w->ino, 7 * PG + 5,
					   w->want + 7 * PG + 5, 100) != 100)
			w->err = -EIO;
	}
	return NULL;
}

/*
 * Writers in parallel, each moving its file to new rows over and over
 * while the others do: their commits share the bitmap's and the inode
 * table's rows (alloc.c, bitmap_fill(); apply.c, new_rows_first()). Each
 * file reads back after a remount, the scrub finds every row whole, and
 * the free count is what it was once the files are gone (no page lost
 * or freed twice between two bitmaps written out of order).
 */
static void test_parallel_writers(void)
{
	struct tfs t;
	struct writer w[WRITERS];
	pthread_t th[WRITERS];
	struct dg_scrub_report sr;
	uint8_t *got;
	uint64_t free0, held = 0;
	size_t len = 600 * PG;
	char name[16];

	REQUIRE(tfs_make_size(&t, "filepar", 32ull << 20));
	got = malloc(len);
	REQUIRE(got);
	for (int i = 0; i < WRITERS; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		w[i] = (struct writer){ &t, tfs_file(&t, 1, name), 100 + i,
					len, malloc(len), 0 };
		REQUIRE(w[i].ino && w[i].want);
	}
	/* (the inode table and the directory keep what the names took) */
	free0 = dg_free_vpns(t.vol);
	for (int i = 0; i < WRITERS; i++)
		REQUIRE(pthread_create(&th[i], NULL, writer_run, &w[i]) == 0);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(th[i], NULL);
	REQUIRE(tfs_remount(&t));
	for (int i = 0; i < WRITERS; i++) {
		struct dg_attr a;

		CHECK_EQ(w[i].err, 0);
		CHECK_EQ(tfs_read_at(&t, w[i].ino, 0, len, got), (ssize_t)len);
		CHECK(memcmp(got, w[i].want, len) == 0);
		REQUIRE(dg_fs_getattr(t.fs, w[i].ino, &a) == 0);
		held += a.blocks;	/* pages, data and extent */
	}
	/* The bitmap on the media: every page the files hold, no other. */
	CHECK_EQ(dg_free_vpns(t.vol), free0 - held);
	REQUIRE(dg_vol_scrub(t.vol, false, &sr, NULL, NULL) == 0);
	CHECK(sr.detected == 0 && sr.parity_mismatch == 0);
	for (int i = 0; i < WRITERS; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		CHECK_EQ(dg_fs_unlink(t.fs, 1, name), 0);
		free(w[i].want);
	}
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(dg_free_vpns(t.vol), free0);
	tfs_done(&t);
	free(got);
}

/* dg_fs_write_batch() (the -o writeback hold's commit): runs that share
 * a page, a run larger than a transaction, counted as the requests they
 * stand for; read back after a remount as a reference says. */
static void test_write_batch(void)
{
	struct tfs t;
	uint64_t seed = 31, f, w0, b0, w1, b1;
	size_t span = 200 * PG + (3u << 20);
	uint8_t *want = calloc(1, span), *got = malloc(span + PG);
	struct dg_wseg seg[4] = {
		{ 1000, NULL, 5 * PG + 123 },
		{ 7 * PG + 10, NULL, 20 },
		{ 7 * PG + 100, NULL, 50 },	/* the page of the one before */
		{ 100 * PG, NULL, 3u << 20 },	/* more than one transaction */
	};
	struct dg_attr a;
	size_t bytes = 0;

	REQUIRE(want && got);
	REQUIRE(tfs_make_size(&t, "filebatch", 32ull << 20));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	for (unsigned i = 0; i < 4; i++) {
		trand_fill(&seed, want + seg[i].off, seg[i].len);
		seg[i].buf = want + seg[i].off;
		bytes += seg[i].len;
	}
	dg_fs_write_counts(t.fs, &w0, &b0);
	CHECK_EQ(dg_fs_write_batch(t.fs, f, seg, 4, 9), 0);
	dg_fs_write_counts(t.fs, &w1, &b1);
	CHECK_EQ(w1 - w0, 9);
	CHECK_EQ(b1 - b0, bytes);
	CHECK_EQ(dg_fs_write_batch(t.fs, f, seg, 0, 1), 0);
	REQUIRE(tfs_remount(&t));
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	CHECK_EQ(a.size, 100 * PG + (3u << 20));
	CHECK_EQ(tfs_read_at(&t, f, 0, (size_t)a.size, got), (ssize_t)a.size);
	CHECK(memcmp(got, want, (size_t)a.size) == 0);
	CHECK_EQ(dg_fs_write_batch(t.fs, 999999, seg, 1, 1), -ENOENT);
	tfs_done(&t);
	free(want);
	free(got);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "write_read_holes", test_write_read_holes },
		{ "truncate", test_truncate },
		{ "fallocate", test_fallocate },
		{ "whole_rows", test_whole_rows },
		{ "whole_rows_full_volume", test_whole_rows_full_volume },
		{ "parallel_writers", test_parallel_writers },
		{ "write_batch", test_write_batch },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
