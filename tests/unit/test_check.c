// SPDX-License-Identifier: MIT
/* test_check.c -- fsck's passes in the engine: superblocks, journal,
 * redundancy and filesystem, each finding reported, repaired when asked,
 * and gone from the next pass */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fscheck.h"
#include "fsys_i.h"
#include "volume_i.h"
#include "harness.h"
#include "tfs.h"

#define PG DG_PAGE_SIZE

struct seen {
	unsigned n, fixed;
	unsigned kinds[DG_CHK_NR];
};

static void on_event(void *arg, const struct dg_chk_event *ev)
{
	struct seen *s = arg;

	s->n++;
	s->fixed += ev->fixed;
	if (ev->kind < DG_CHK_NR)
		s->kinds[ev->kind]++;
}

static bool yes(void *arg, const struct dg_chk_event *ev)
{
	(void)arg;
	(void)ev;
	return true;
}

static struct dg_vol *volume(struct tvol *tv, const char *tag)
{
	tvol_make(tv, tag, 3, 1, 16ull << 20, false);
	return tvol_open(tv, 0);
}

static void test_clean_volume(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checkclean");
	struct dg_chk_stats st = { 0 };
	struct seen s = { 0 };
	struct dg_fs *fs;
	struct dg_attr a;

	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(dg_fs_mknod(fs, 1, "f", 0100644, 0, 0, 0, &a) == 0);
	REQUIRE(dg_fs_write(fs, a.ino, 0, "data", 4) == 4);
	dg_fs_close(fs);
	CHECK_EQ(dg_check_supers(vol, false, on_event, &s), 0);
	CHECK_EQ(dg_check_journal(vol, false, on_event, &s), 0);
	CHECK_EQ(dg_check_redundancy(vol, false, on_event, &s, NULL, NULL,
				     &st), 0);
	CHECK_EQ(dg_check_fs(vol, on_event, NULL, &s), 0);
	CHECK_EQ(s.n, 0);
	CHECK(st.pages_checked > 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_superblock(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checksuper");
	struct seen s = { 0 }, again = { 0 };
	uint8_t junk[PG];
	uint64_t seed = 41;

	REQUIRE(vol);
	/* The primary of device 1, while open (an open rewrites it). */
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, 1, 0, junk, PG);
	dg_check_supers(vol, false, on_event, &s);
	CHECK_EQ(s.kinds[DG_CHK_SUPER_BAD], 1);
	CHECK_EQ(s.fixed, 0);
	memset(&s, 0, sizeof(s));
	dg_check_supers(vol, true, on_event, &s);
	CHECK_EQ(s.kinds[DG_CHK_SUPER_BAD], 1);
	CHECK_EQ(s.fixed, 1);
	dg_check_supers(vol, false, on_event, &again);
	CHECK_EQ(again.n, 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_redundancy(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checkredund");
	struct dg_chk_stats st = { 0 };
	struct seen s = { 0 }, again = { 0 };
	uint8_t page[PG], junk[PG];
	uint64_t seed = 42;
	struct dg_range r = { 900, 0, PG, page };
	struct dg_loc l;

	REQUIRE(vol);
	trand_fill(&seed, page, PG);
	REQUIRE(dg_apply(vol, &r, 1) == 0);
	l = dg_vpn_loc(vol, 900);
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, l.dev, dg_row_page(vol, l.row) * PG, junk, PG);
	dg_check_redundancy(vol, false, on_event, &s, NULL, NULL, &st);
	CHECK_EQ(s.kinds[DG_CHK_PAGE_BAD], 1);
	CHECK_EQ(s.fixed, 0);
	memset(&s, 0, sizeof(s));
	dg_check_redundancy(vol, true, on_event, &s, NULL, NULL, &st);
	CHECK_EQ(s.kinds[DG_CHK_PAGE_BAD], 1);
	CHECK_EQ(s.fixed, 1);
	/* A pass reports the faults its open met too (fsck opens afresh
	 * for each run): the next run is on a new open. */
	dg_vol_close(vol);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	dg_check_redundancy(vol, false, on_event, &again, NULL, NULL, &st);
	CHECK_EQ(again.n, 0);
	REQUIRE(dg_read(vol, 900, 1, junk) == 0);
	CHECK(memcmp(junk, page, PG) == 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A page allocated and used by nothing: a leak, freed when asked. */
static void test_fs_leak(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checkleak");
	struct seen s = { 0 }, again = { 0 };
	struct dg_txn *txn;
	uint64_t got, start, free0;

	REQUIRE(vol);
	free0 = dg_free_vpns(vol);
	txn = dg_txn_new(vol);
	REQUIRE(txn);
	REQUIRE(dg_alloc(txn, 0, 1, &start, &got) == 0);
	REQUIRE(dg_txn_commit(txn) == 0);
	dg_txn_free(txn);
	CHECK_EQ(dg_free_vpns(vol), free0 - 1);
	dg_check_fs(vol, on_event, NULL, &s);
	CHECK_EQ(s.kinds[DG_CHK_BITMAP_LEAK], 1);
	CHECK_EQ(s.fixed, 0);
	memset(&s, 0, sizeof(s));
	dg_check_fs(vol, on_event, yes, &s);
	CHECK_EQ(s.kinds[DG_CHK_BITMAP_LEAK], 1);
	CHECK_EQ(s.fixed, 1);
	dg_check_fs(vol, on_event, NULL, &again);
	CHECK_EQ(again.n, 0);
	dg_vol_close(vol);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(dg_free_vpns(vol), free0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A page lost beyond parity, given up (given_up.c): it reads EIO, the
 * next check reports it given up (a warning), and its row protects its
 * other pages again. */
static void test_give_up(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checkgiveup");
	struct dg_chk_stats st = { 0 };
	struct seen s = { 0 };
	uint8_t a[PG], b[PG], junk[PG], got[PG];
	uint64_t seed = 43, va, vb = 0, prow;
	struct dg_loc l;
	unsigned pdev = 0;

	REQUIRE(vol);
	va = tdata_vpn(vol);
	l = dg_vpn_loc(vol, va);
	for (unsigned d = 0; d < 3; d++) {
		if (dg_vol_row_is_parity(vol, l.row, d))
			pdev = d;
		else if (d != l.dev)
			vb = dg_loc_vpn(vol, d, l.row);
	}
	REQUIRE(vb);
	trand_fill(&seed, a, PG);
	trand_fill(&seed, b, PG);
	{
		struct dg_range r[2] = { { va, 0, PG, a }, { vb, 0, PG, b } };

		REQUIRE(dg_apply(vol, r, 2) == 0);
	}
	/* Readable: not this repair's to give up. */
	CHECK_EQ(dg_row_give_up_page(vol, va), -EAGAIN);
	prow = dg_row_page(vol, l.row) * PG;
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, l.dev, prow, junk, PG);
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, pdev, prow, junk, PG);
	CHECK_EQ(dg_read(vol, va, 1, got), -EIO);
	CHECK(!dg_page_given_up(vol, l.dev, l.row));
	CHECK_EQ(dg_row_give_up_page(vol, va), 0);
	CHECK(dg_page_given_up(vol, l.dev, l.row));
	CHECK_EQ(dg_row_give_up_page(vol, va), 0);	/* idempotent */
	CHECK_EQ(dg_read(vol, va, 1, got), -EIO);
	dg_vol_close(vol);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	dg_check_redundancy(vol, false, on_event, &s, NULL, NULL, &st);
	CHECK_EQ(s.kinds[DG_CHK_PAGE_GIVEN_UP], 1);
	CHECK_EQ(s.kinds[DG_CHK_PAGE_BAD], 0);
	CHECK_EQ(st.unrecoverable, 0);
	/* The other page of the row, damaged now, comes back from parity
	 * and the given-up page's pinned bytes. */
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, dg_vpn_loc(vol, vb).dev, prow, junk, PG);
	REQUIRE(dg_read(vol, vb, 1, got) == 0);
	CHECK(memcmp(got, b, PG) == 0);
	CHECK_EQ(dg_read(vol, va, 1, got), -EIO);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A scratch open (DG_OPEN_SCRATCH) writes into memory only: what it
 * stores, superblocks included, is gone at the next open. */
static void test_scratch_writes_nothing(void)
{
	struct tvol tv;
	struct dg_vol *vol = volume(&tv, "checkscratch");
	struct dg_vol_info before, after;
	uint8_t a[PG], b[PG], got[PG], s0[PG], s1[PG];
	uint64_t seed = 44, v;

	REQUIRE(vol);
	v = tdata_vpn(vol);
	trand_fill(&seed, a, PG);
	trand_fill(&seed, b, PG);
	{
		struct dg_range r = { v, 0, PG, a };

		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	dg_vol_get_info(vol, &before);
	dg_vol_close(vol);
	tvol_peek(&tv, 0, 0, s0, PG);
	vol = tvol_open(&tv, DG_OPEN_SCRATCH);
	REQUIRE(vol);
	{
		struct dg_range r = { v, 0, PG, b };

		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	REQUIRE(dg_read(vol, v, 1, got) == 0);
	CHECK(memcmp(got, b, PG) == 0);
	dg_vol_close(vol);
	tvol_peek(&tv, 0, 0, s1, PG);
	CHECK(memcmp(s0, s1, PG) == 0);		/* the superblock too */
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	dg_vol_get_info(vol, &after);
	CHECK_EQ(after.generation, before.generation);
	REQUIRE(dg_read(vol, v, 1, got) == 0);
	CHECK(memcmp(got, a, PG) == 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* Inode ino's record as the media holds it (white box: its place). */
static void inode_at(struct tfs *t, uint64_t ino, uint64_t *vpn,
		     uint32_t *off, struct dg_dinode *d)
{
	uint8_t pg[PG];

	dg_ino_where(t->fs, ino, vpn, off);
	REQUIRE(dg_read(t->vol, *vpn, 1, pg) == 0);
	memcpy(d, pg + *off, sizeof(*d));
}

/* A record written through an update, its checksums and parity valid:
 * what a bug in daxguard would leave, not a media fault. */
static void inode_put(struct tfs *t, uint64_t vpn, uint32_t off,
		      const struct dg_dinode *d)
{
	struct dg_txn *txn = dg_txn_new(t->vol);

	REQUIRE(txn);
	REQUIRE(dg_txn_write(txn, vpn, off, d, sizeof(*d)) == 0);
	REQUIRE(dg_txn_commit(txn) == 0);
	dg_txn_free(txn);
}

/* Inode ino's record on the media without its file type bits. */
static void drop_type(struct tfs *t, uint64_t ino)
{
	struct dg_dinode d;
	uint64_t vpn;
	uint32_t off;

	inode_at(t, ino, &vpn, &off, &d);
	d.mode &= ~(uint32_t)S_IFMT;
	inode_put(t, vpn, off, &d);
}

/*
 * A file whose inode lost its type bits, in a directory that lost its
 * own and holds it under a lower inode number (so the file's entry is
 * read only once the directory has its type back): each gets the type
 * its entry records, the file keeps its name and its bytes, and nothing
 * else is found (no entry dangling, no page leaked).
 */
static void test_typeless_inode_retyped(void)
{
	struct tfs t;
	struct seen s = { 0 }, fixed = { 0 }, again = { 0 };
	static uint8_t data[3 * PG + 100], got[sizeof(data)];
	uint64_t seed = 45, f, d;
	struct dg_attr a;

	REQUIRE(tfs_make(&t, "checktype"));
	trand_fill(&seed, data, sizeof(data));
	f = tfs_file(&t, DG_ROOT_INO, "f");
	d = tfs_dir(&t, DG_ROOT_INO, "d");
	REQUIRE(f && d > f);
	REQUIRE(dg_fs_write(t.fs, f, 0, data, sizeof(data)) ==
		(ssize_t)sizeof(data));
	REQUIRE(dg_fs_rename(t.fs, DG_ROOT_INO, "f", d, "f", 0) == 0);
	drop_type(&t, f);
	drop_type(&t, d);
	dg_fs_close(t.fs);
	t.fs = NULL;
	dg_check_fs(t.vol, on_event, NULL, &s);
	CHECK_EQ(s.kinds[DG_CHK_INODE_BAD], 2);
	CHECK_EQ(s.n, 2);
	CHECK_EQ(s.fixed, 0);
	dg_check_fs(t.vol, on_event, yes, &fixed);
	CHECK_EQ(fixed.kinds[DG_CHK_INODE_BAD], 2);
	CHECK_EQ(fixed.n, 2);
	CHECK_EQ(fixed.fixed, 2);
	dg_check_fs(t.vol, on_event, NULL, &again);
	CHECK_EQ(again.n, 0);
	REQUIRE(tfs_remount(&t));
	REQUIRE(dg_fs_lookup(t.fs, DG_ROOT_INO, "d", &a) == 0);
	CHECK(a.ino == d && S_ISDIR(a.mode));
	REQUIRE(dg_fs_lookup(t.fs, d, "f", &a) == 0);
	CHECK(a.ino == f && a.mode == 0100644 && a.size == sizeof(data));
	CHECK_EQ(tfs_read_at(&t, f, 0, sizeof(got), got),
		 (ssize_t)sizeof(got));
	CHECK(memcmp(got, data, sizeof(data)) == 0);
	tfs_done(&t);
}

struct cleared {
	unsigned n, fixed;
	uint64_t ino, dir;
	bool cleared;
	char name[256];
};

static void on_cleared(void *arg, const struct dg_chk_event *ev)
{
	struct cleared *c = arg;

	if (ev->kind != DG_CHK_INODE_UNUSABLE)
		return;
	c->n++;
	c->fixed += ev->fixed;
	c->ino = ev->ino;
	c->dir = ev->dir;
	c->cleared = ev->cleared;
	snprintf(c->name, sizeof(c->name), "%s", ev->name);
}

/*
 * Inodes nothing can mend are cleared (PR_3_INODE_UNUSABLE: data lost),
 * each named as it can be once it is gone: one with no type that no
 * entry names, by its number alone (dir 0); one whose extent count is
 * out of range, by the entry that named it, which is then dropped as
 * dangling. The next check finds nothing.
 */
static void test_inode_cleared(void)
{
	struct tfs t;
	struct cleared c = { 0 };
	struct seen s = { 0 }, again = { 0 };
	struct dg_dinode d;
	uint64_t f, g, vpn;
	uint32_t off;
	uint8_t data[PG];
	uint64_t seed = 46;

	REQUIRE(tfs_make(&t, "checkclear"));
	trand_fill(&seed, data, PG);
	f = tfs_file(&t, DG_ROOT_INO, "f");
	REQUIRE(f);
	REQUIRE(dg_fs_write(t.fs, f, 0, data, PG) == PG);
	/* A slot no entry names gets a record without a type. */
	g = f + 1;
	inode_at(&t, g, &vpn, &off, &d);
	REQUIRE(d.mode == 0);
	d = (struct dg_dinode){ .mode = 0644, .nlink = 1, .parent = 1 };
	inode_put(&t, vpn, off, &d);
	dg_fs_close(t.fs);
	t.fs = NULL;
	dg_check_fs(t.vol, on_cleared, yes, &c);
	CHECK(c.n == 1 && c.fixed == 1 && c.ino == g && c.cleared);
	CHECK(c.dir == 0 && !c.name[0]);
	dg_check_fs(t.vol, on_event, NULL, &again);
	CHECK_EQ(again.n, 0);
	/* An extent count out of range, under a type its entry agrees
	 * with: cleared too, named by that entry. */
	REQUIRE(dg_fs_open(t.vol, &t.fs) == 0);
	inode_at(&t, f, &vpn, &off, &d);
	dg_fs_close(t.fs);
	t.fs = NULL;
	d.nextents = (1u << 26) + 1;
	inode_put(&t, vpn, off, &d);
	c = (struct cleared){ 0 };
	dg_check_fs(t.vol, on_cleared, NULL, &c);
	CHECK(c.n == 1 && !c.fixed && c.ino == f && c.cleared);
	CHECK(c.dir == DG_ROOT_INO && !strcmp(c.name, "f"));
	dg_check_fs(t.vol, on_event, yes, &s);
	CHECK_EQ(s.kinds[DG_CHK_INODE_UNUSABLE], 1);
	CHECK_EQ(s.kinds[DG_CHK_DIRENT_DANGLING], 1);
	CHECK_EQ(s.kinds[DG_CHK_BITMAP_LEAK], 1);
	CHECK_EQ(s.fixed, s.n);
	memset(&again, 0, sizeof(again));
	dg_check_fs(t.vol, on_event, NULL, &again);
	CHECK_EQ(again.n, 0);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(tfs_lookup(&t, DG_ROOT_INO, "f"), -ENOENT);
	tfs_done(&t);
}

/*
 * A type the entries say is taken only where it fits the inode: a FIFO
 * without pages gets its type back; a record with a file's extents
 * under a FIFO's entry does not (a FIFO holds no pages), and is cleared,
 * its data given up, rather than made a FIFO that owns pages.
 */
static void test_entry_type_must_fit(void)
{
	struct tfs t;
	struct seen s = { 0 }, again = { 0 };
	struct dg_dinode d, fd;
	struct dg_attr a;
	uint64_t f, p, q, vpn, fvpn;
	uint32_t off, foff;
	uint8_t data[PG];
	uint64_t seed = 47;

	REQUIRE(tfs_make(&t, "checkfits"));
	trand_fill(&seed, data, PG);
	f = tfs_file(&t, DG_ROOT_INO, "f");
	REQUIRE(f);
	REQUIRE(dg_fs_write(t.fs, f, 0, data, PG) == PG);
	REQUIRE(dg_fs_mknod(t.fs, DG_ROOT_INO, "p", S_IFIFO | 0644, 0, 0, 0,
			    &a) == 0);
	p = a.ino;
	REQUIRE(dg_fs_mknod(t.fs, DG_ROOT_INO, "q", S_IFIFO | 0644, 0, 0, 0,
			    &a) == 0);
	q = a.ino;
	drop_type(&t, p);
	/* q's record becomes f's, extents and all, with no type. */
	inode_at(&t, f, &fvpn, &foff, &fd);
	inode_at(&t, q, &vpn, &off, &d);
	fd.mode &= ~(uint32_t)S_IFMT;
	inode_put(&t, vpn, off, &fd);
	dg_fs_close(t.fs);
	t.fs = NULL;
	dg_check_fs(t.vol, on_event, yes, &s);
	CHECK_EQ(s.kinds[DG_CHK_INODE_BAD], 1);		/* p */
	CHECK_EQ(s.kinds[DG_CHK_INODE_UNUSABLE], 1);	/* q */
	CHECK_EQ(s.fixed, s.n);
	dg_check_fs(t.vol, on_event, NULL, &again);
	CHECK_EQ(again.n, 0);
	REQUIRE(tfs_remount(&t));
	REQUIRE(dg_fs_lookup(t.fs, DG_ROOT_INO, "p", &a) == 0);
	CHECK(a.ino == p && S_ISFIFO(a.mode));
	CHECK_EQ(tfs_lookup(&t, DG_ROOT_INO, "q"), -ENOENT);
	CHECK_EQ(tfs_read_at(&t, f, 0, PG, data + 0), PG);
	tfs_done(&t);
}

/* Bytes at off of page vpn written through an update (as inode_put()). */
static void bytes_put(struct tfs *t, uint64_t vpn, uint32_t off,
		      const void *p, uint32_t len)
{
	struct dg_txn *txn = dg_txn_new(t->vol);

	REQUIRE(txn);
	REQUIRE(dg_txn_write(txn, vpn, off, p, len) == 0);
	REQUIRE(dg_txn_commit(txn) == 0);
	dg_txn_free(txn);
}

/* f's page 1 overwritten whole: redirected (a volume made with
 * tfs_make_remap()); *rvpn its remap page (0: none), the fs
 * closed. */
static void remapped(struct tfs *t, uint64_t f, uint8_t fill, uint64_t *rvpn)
{
	uint8_t data[PG];
	struct dg_inode *ip;

	*rvpn = 0;
	REQUIRE(tfs_remount(t));
	memset(data, fill, PG);
	REQUIRE(dg_fs_write(t->fs, f, PG, data, PG) == PG);
	ip = dg_inode_get(t->fs, f);
	REQUIRE(ip && ip->remap && ip->remap->n == 1);
	*rvpn = ip->d.remap_vpn;
	dg_fs_close(t->fs);
	t->fs = NULL;
}

/* Whether file f reads fill at its page fpage, remounted first (its
 * home page, once the remap page is dropped). */
static bool page_is(struct tfs *t, uint64_t f, uint64_t fpage, uint8_t fill)
{
	static _Alignas(PG) uint8_t pages[3 * PG];
	uint8_t want[PG];
	const void *got;

	memset(want, fill, PG);
	return (t->fs || tfs_remount(t)) &&
	       dg_fs_read(t->fs, f, fpage * PG, PG, pages, &got) == PG &&
	       !memcmp(got, want, PG);
}

/*
 * A remap page whose record names a page another file maps, then one
 * whose record is for a hole (checksums valid: a bug in daxguard): the
 * remap page is dropped whole (PR_3_REMAP_BAD), never the other file's
 * extent, the file reads its home page again, and the pages the remap
 * held go back to the bitmap as leaks. A remap page and its records are
 * no part of dinode.blocks, so no block count changes. The next check
 * finds nothing.
 */
static void test_remap_dropped(void)
{
	struct tfs t;
	struct seen s = { 0 }, again = { 0 };
	uint8_t data[2 * PG];
	struct dg_dremap_rec rec;
	uint64_t f, g, rvpn, gvpn, run;

	REQUIRE(tfs_make_remap(&t, "checkremap"));
	f = tfs_file(&t, DG_ROOT_INO, "f");
	g = tfs_file(&t, DG_ROOT_INO, "g");
	REQUIRE(f && g);
	memset(data, 'a', sizeof(data));
	REQUIRE(dg_fs_write(t.fs, f, 0, data, sizeof(data)) == 2 * PG);
	REQUIRE(dg_fs_write(t.fs, g, 0, data, sizeof(data)) == 2 * PG);
	dg_ext_lookup(dg_inode_get(t.fs, g), 0, &gvpn, &run);
	REQUIRE(gvpn);
	remapped(&t, f, 'b', &rvpn);
	REQUIRE(rvpn);
	dg_check_fs(t.vol, on_event, NULL, &again);
	CHECK_EQ(again.n, 0);		/* clean as written */
	rec = (struct dg_dremap_rec){ 1, gvpn };
	bytes_put(&t, rvpn, offsetof(struct dg_dremap, rec), &rec,
		  sizeof(rec));
	dg_check_fs(t.vol, on_event, yes, &s);
	CHECK_EQ(s.kinds[DG_CHK_REMAP_BAD], 1);
	CHECK_EQ(s.kinds[DG_CHK_EXTENT_DUP], 0);
	CHECK_EQ(s.kinds[DG_CHK_BLOCKS], 0);
	CHECK_EQ(s.kinds[DG_CHK_BITMAP_LEAK], 2); /* remap page, record's */
	CHECK_EQ(s.fixed, s.n);
	memset(&again, 0, sizeof(again));
	dg_check_fs(t.vol, on_event, NULL, &again);
	CHECK_EQ(again.n, 0);
	CHECK(page_is(&t, f, 1, 'a'));
	CHECK(page_is(&t, g, 0, 'a'));
	/* A record for a page no extent maps. */
	remapped(&t, f, 'c', &rvpn);
	REQUIRE(rvpn);
	rec.fpage = 100;
	bytes_put(&t, rvpn, offsetof(struct dg_dremap, rec) +
		  offsetof(struct dg_dremap_rec, fpage), &rec.fpage,
		  sizeof(rec.fpage));
	memset(&s, 0, sizeof(s));
	dg_check_fs(t.vol, on_event, yes, &s);
	CHECK_EQ(s.kinds[DG_CHK_REMAP_BAD], 1);
	CHECK_EQ(s.kinds[DG_CHK_BITMAP_LEAK], 2);
	CHECK_EQ(s.fixed, s.n);
	memset(&again, 0, sizeof(again));
	dg_check_fs(t.vol, on_event, NULL, &again);
	CHECK_EQ(again.n, 0);
	CHECK(page_is(&t, f, 1, 'a'));
	tfs_done(&t);
}

/*
 * File data never over the volume root or the allocation bitmap: an
 * extent or a remap record naming one of their pages is refused where
 * it is read, so a hostile image cannot turn a file's reads into the
 * bitmap's bytes, nor its writes into the bitmap's; fsck drops the
 * record, and the file reads its own page again.
 */
static void test_data_over_meta(void)
{
	static struct dg_demap pg __attribute__((aligned(4096)));
	struct dg_dinode d = { .mode = 0100644, .nextents = 1 };
	struct dg_emap_reader r;
	const struct dg_dextent *e;
	struct seen s = { 0 }, again = { 0 };
	static _Alignas(PG) uint8_t buf[PG];
	const void *got;
	uint8_t data[2 * PG];
	uint64_t f, rvpn, meta;
	struct tfs t;

	REQUIRE(tfs_make_remap(&t, "overmeta"));
	meta = dg_alloc_meta_vpns(t.vol);
	REQUIRE(meta >= 2);
	for (uint64_t vpn = meta - 1; vpn <= meta; vpn++) {
		d.inl[0] = (struct dg_dextent){ .fpage = 0, .vpn = vpn,
						.len = 1 };
		dg_emap_begin(&r, t.vol, &d, &pg);
		CHECK_EQ(dg_emap_next(&r, &e),
			 vpn < meta ? -EUCLEAN : DG_EMAP_EXTENT);
	}

	f = tfs_file(&t, DG_ROOT_INO, "f");
	REQUIRE(f);
	memset(data, 'a', sizeof(data));
	REQUIRE(dg_fs_write(t.fs, f, 0, data, sizeof(data)) == 2 * PG);
	remapped(&t, f, 'b', &rvpn);
	REQUIRE(rvpn);
	bytes_put(&t, rvpn, offsetof(struct dg_dremap, rec) +
		  offsetof(struct dg_dremap_rec, vpn), &(uint64_t){ meta - 1 },
		  sizeof(uint64_t));
	REQUIRE(tfs_remount(&t));
	CHECK(dg_fs_read(t.fs, f, PG, PG, buf, &got) < 0);
	dg_fs_close(t.fs);
	t.fs = NULL;
	dg_check_fs(t.vol, on_event, yes, &s);
	CHECK_EQ(s.kinds[DG_CHK_REMAP_BAD], 1);
	CHECK_EQ(s.fixed, s.n);
	dg_check_fs(t.vol, on_event, NULL, &again);
	CHECK_EQ(again.n, 0);
	CHECK(page_is(&t, f, 1, 'a'));
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "clean_volume", test_clean_volume },
		{ "superblock", test_superblock },
		{ "redundancy", test_redundancy },
		{ "fs_leak", test_fs_leak },
		{ "give_up", test_give_up },
		{ "scratch_writes_nothing", test_scratch_writes_nothing },
		{ "typeless_inode_retyped", test_typeless_inode_retyped },
		{ "inode_cleared", test_inode_cleared },
		{ "entry_type_must_fit", test_entry_type_must_fit },
		{ "remap_dropped", test_remap_dropped },
		{ "data_over_meta", test_data_over_meta },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
