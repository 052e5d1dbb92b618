// SPDX-License-Identifier: MIT
/* test_stage.c -- staged syncs (fs/fsys/stage.c) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fscheck.h"
#include "fsys_i.h"
#include "volume_i.h"
#include "harness.h"

/*
 * The stage API on a real volume: a staged sync lands whole and leaves
 * no page behind; an aborted one changes nothing; a volume without the
 * feature bit refuses (-E2BIG, as before); a publish record that names
 * no stage is served as damaged by the mount and cleared by fsck.
 * Crash states are tests/crash/test_crash_stage.c's.
 */

#define NDEV  4u
#define PAGES 40u

struct env {
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_fs *fs;
	uint64_t ino;
	uint8_t *old, *nw, *buf;
	struct dg_fmap_run runs[PAGES];
};

static void setup(struct env *e, const char *tag)
{
	struct dg_attr a;
	uint64_t seed = 19;

	tvol_make(&e->tv, tag, NDEV, 1, 16ull << 20, false);
	e->vol = tvol_open(&e->tv, 0);
	REQUIRE(e->vol);
	REQUIRE(dg_fs_open(e->vol, &e->fs) == 0);
	REQUIRE(dg_fs_mknod(e->fs, DG_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0,
			    &a) == 0);
	e->ino = a.ino;
	e->old = malloc(PAGES * DG_PAGE_SIZE);
	e->nw = malloc(PAGES * DG_PAGE_SIZE);
	e->buf = aligned_alloc(DG_PAGE_SIZE, (PAGES + 2) * DG_PAGE_SIZE);
	REQUIRE(e->old && e->nw && e->buf);
	trand_fill(&seed, e->old, PAGES * DG_PAGE_SIZE);
	memcpy(e->nw, e->old, PAGES * DG_PAGE_SIZE);
	REQUIRE(dg_fs_write(e->fs, e->ino, 0, e->old, PAGES * DG_PAGE_SIZE) ==
		(ssize_t)(PAGES * DG_PAGE_SIZE));
	/* One changed line per page, at a different place in each. */
	for (unsigned p = 0; p < PAGES; p++) {
		uint64_t off = p * DG_PAGE_SIZE + (p % 64) * DG_LINE_SIZE;

		memset(e->nw + off, 0x5a, DG_LINE_SIZE);
		e->runs[p] = (struct dg_fmap_run){ off, DG_LINE_SIZE,
						   e->nw + off };
	}
}

static void teardown(struct env *e)
{
	if (e->fs)
		dg_fs_close(e->fs);
	if (e->vol)
		dg_vol_close(e->vol);
	tvol_cleanup(&e->tv);
	free(e->old);
	free(e->nw);
	free(e->buf);
}

static bool file_is(struct env *e, const uint8_t *want)
{
	const void *data;

	return dg_fs_read(e->fs, e->ino, 0, PAGES * DG_PAGE_SIZE, e->buf,
			  &data) == (ssize_t)(PAGES * DG_PAGE_SIZE) &&
	       !memcmp(data, want, PAGES * DG_PAGE_SIZE);
}

static void test_publish_and_abort(void)
{
	struct env e = { 0 };
	struct dg_fmap *m;
	struct dg_fstage *s;
	uint64_t free0;

	setup(&e, "stpub");
	REQUIRE(dg_fmap_new(e.fs, e.ino, 0, PAGES * DG_PAGE_SIZE, DG_FMAP_RW,
			    &m) == 0);
	free0 = dg_free_vpns(e.vol);
	/* Aborted: nothing changes, the stage's pages come back. */
	REQUIRE(dg_fstage_new(m, &s) == 0);
	REQUIRE(dg_fstage_add(s, e.runs, PAGES) == 0);
	CHECK(dg_free_vpns(e.vol) < free0);
	dg_fstage_abort(s);
	CHECK_EQ(dg_free_vpns(e.vol), free0);
	CHECK(file_is(&e, e.old));
	/* Bad runs are refused, nothing staged. */
	REQUIRE(dg_fstage_new(m, &s) == 0);
	{
		struct dg_fmap_run bad = { PAGES * DG_PAGE_SIZE, DG_LINE_SIZE,
					   e.nw };

		CHECK_EQ(dg_fstage_add(s, &bad, 1), -EINVAL);
	}
	dg_fstage_abort(s);
	/* Published in three pieces: all of it, and no page left over. */
	REQUIRE(dg_fstage_new(m, &s) == 0);
	REQUIRE(dg_fstage_add(s, e.runs, 10) == 0);
	REQUIRE(dg_fstage_add(s, e.runs + 10, 20) == 0);
	REQUIRE(dg_fstage_add(s, e.runs + 30, PAGES - 30) == 0);
	REQUIRE(dg_fstage_publish(s) == 0);
	CHECK(file_is(&e, e.nw));
	CHECK_EQ(dg_free_vpns(e.vol), free0);
	{
		uint64_t bad = 0;

		/* The line checksums followed the staged chunks. */
		CHECK_EQ(dg_fmap_verify(m, 0, PAGES * DG_PAGE_SIZE, &bad), 0);
	}
	dg_fmap_delete(m);
	teardown(&e);
}

static void test_old_volume_refuses(void)
{
	struct env e = { 0 };
	struct dg_fmap *m;
	struct dg_fstage *s = NULL;

	setup(&e, "stold");
	REQUIRE(dg_fmap_new(e.fs, e.ino, 0, PAGES * DG_PAGE_SIZE, DG_FMAP_RW,
			    &m) == 0);
	/* As a volume made before the feature bit opens. */
	e.vol->sb.incompat &= ~DG_FEAT_INCOMPAT_STAGED_SYNC;
	CHECK(!dg_fstage_supported(e.fs));
	CHECK_EQ(dg_fstage_new(m, &s), -E2BIG);
	e.vol->sb.incompat |= DG_FEAT_INCOMPAT_STAGED_SYNC;
	dg_fmap_delete(m);
	teardown(&e);
}

struct found {
	unsigned n;
	uint64_t ino;
	bool fixed;
};

static void note(void *arg, const struct dg_chk_event *ev)
{
	struct found *f = arg;

	if (ev->kind == DG_CHK_INODE_BAD && strstr(ev->detail, "stage")) {
		f->n++;
		f->ino = ev->ino;
		f->fixed |= ev->fixed;
	}
}

static bool ask_yes(void *arg, const struct dg_chk_event *ev)
{
	(void)arg;
	(void)ev;
	return true;
}

static void test_bad_record(void)
{
	struct env e = { 0 };
	struct dg_inode *ip;
	struct dg_txn *txn;
	struct found f = { 0 };
	uint64_t inos[8];
	unsigned nd;

	setup(&e, "stbad");
	/* A publish record naming a directory (the root), not a stage. */
	ip = dg_inode_get(e.fs, e.ino);
	REQUIRE(ip);
	txn = dg_txn_new(e.vol);
	REQUIRE(txn);
	ip->d.stage_ino = DG_ROOT_INO;
	REQUIRE(dg_inode_store(e.fs, txn, ip) == 0);
	REQUIRE(dg_fs_commit(e.fs, txn) == 0);
	dg_txn_free(txn);
	dg_fs_close(e.fs);
	e.fs = NULL;
	/* The mount cannot finish it: the file is served as damaged. */
	REQUIRE(dg_fs_open(e.vol, &e.fs) == 0);
	nd = dg_fs_damaged_inodes(e.fs, inos, 8);
	CHECK(nd == 1 && inos[0] == e.ino);
	dg_fs_close(e.fs);
	e.fs = NULL;
	/* fsck -n reports it; fsck clears it; then nothing is left. */
	REQUIRE(dg_check_fs(e.vol, note, NULL, &f) >= 0);
	CHECK(f.n == 1 && f.ino == e.ino && !f.fixed);
	f = (struct found){ 0 };
	REQUIRE(dg_check_fs(e.vol, note, ask_yes, &f) >= 0);
	CHECK(f.n == 1 && f.fixed);
	f = (struct found){ 0 };
	REQUIRE(dg_check_fs(e.vol, note, NULL, &f) >= 0);
	CHECK_EQ(f.n, 0);
	REQUIRE(dg_fs_open(e.vol, &e.fs) == 0);
	CHECK_EQ(dg_fs_damaged_inodes(e.fs, inos, 8), 0);
	CHECK(file_is(&e, e.old));
	teardown(&e);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "publish_and_abort", test_publish_and_abort },
		{ "old_volume_refuses", test_old_volume_refuses },
		{ "bad_record", test_bad_record },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
