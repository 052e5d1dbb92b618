// SPDX-License-Identifier: MIT
/* test_dir.c -- directory pages: records that span pages, deleted slots
 * reused, the page parser's checks, listing cookies */
#include <stdio.h>
#include <sys/stat.h>

#include "fsys_i.h"
#include "tfs.h"

struct listing {
	unsigned n;
	uint64_t last_cookie;
	bool seen[600];
};

static int fill(void *arg, const char *name, const struct dg_attr *attr,
		uint64_t next)
{
	struct listing *l = arg;
	unsigned i;

	(void)attr;
	l->n++;
	l->last_cookie = next;
	if (sscanf(name, "name-%u", &i) == 1 && i < 600)
		l->seen[i] = true;
	return 0;
}

/* Stops after the first entry past "." and "..": a full reply buffer. */
static int fill_three(void *arg, const char *name, const struct dg_attr *attr,
		      uint64_t next)
{
	struct listing *l = arg;

	if (l->n == 3)
		return 1; /* refused: not handed out */
	return fill(arg, name, attr, next);
}

/* Enough names for several pages; a third removed; the directory read
 * back from the media lists exactly the rest. */
static void test_many_pages(void)
{
	struct tfs t;
	struct listing l = { 0 };
	struct dg_attr a;
	char name[64];
	uint64_t d;

	REQUIRE(tfs_make(&t, "dirmany"));
	d = tfs_dir(&t, 1, "d");
	REQUIRE(d);
	for (unsigned i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "name-%u%s", i,
			 i % 5 ? "" : "-and-some-more-bytes-to-vary-reclen");
		REQUIRE(tfs_file(&t, d, name));
	}
	for (unsigned i = 0; i < 600; i += 3) {
		snprintf(name, sizeof(name), "name-%u%s", i,
			 i % 5 ? "" : "-and-some-more-bytes-to-vary-reclen");
		REQUIRE(dg_fs_unlink(t.fs, d, name) == 0);
	}
	REQUIRE(dg_fs_getattr(t.fs, d, &a) == 0);
	CHECK(a.size > 2 * DG_PAGE_SIZE);
	REQUIRE(tfs_remount(&t));
	REQUIRE(dg_fs_readdir(t.fs, d, 0, false, fill, &l) == 0);
	CHECK_EQ(l.n, 2 + 400);
	for (unsigned i = 0; i < 600; i++)
		CHECK(l.seen[i] == (i % 3 != 0));
	tfs_done(&t);
}

/* A deleted record's slot takes a new name of no greater length: the
 * directory does not grow. */
static void test_slot_reuse(void)
{
	struct tfs t;
	struct dg_attr a0, a1;
	char name[32];
	uint64_t d;

	REQUIRE(tfs_make(&t, "dirreuse"));
	d = tfs_dir(&t, 1, "d");
	REQUIRE(d);
	for (unsigned i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "n%03u", i);
		REQUIRE(tfs_file(&t, d, name));
	}
	REQUIRE(dg_fs_getattr(t.fs, d, &a0) == 0);
	for (unsigned i = 0; i < 200; i += 2) {
		snprintf(name, sizeof(name), "n%03u", i);
		REQUIRE(dg_fs_unlink(t.fs, d, name) == 0);
	}
	for (unsigned i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "m%03u", i);
		REQUIRE(tfs_file(&t, d, name));
	}
	REQUIRE(dg_fs_getattr(t.fs, d, &a1) == 0);
	CHECK_EQ(a1.size, a0.size);
	REQUIRE(tfs_remount(&t));
	CHECK(tfs_lookup(&t, d, "m099") > 0);
	CHECK(tfs_lookup(&t, d, "n001") > 0);
	CHECK_EQ(tfs_lookup(&t, d, "n000"), -ENOENT);
	tfs_done(&t);
}

/* Cookies resume a listing where a full buffer stopped it. */
static void test_cookies(void)
{
	struct tfs t;
	struct listing l = { 0 }, rest = { 0 };
	char name[32];
	uint64_t d;

	REQUIRE(tfs_make(&t, "dircookie"));
	d = tfs_dir(&t, 1, "d");
	for (unsigned i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "name-%u", i);
		REQUIRE(tfs_file(&t, d, name));
	}
	REQUIRE(dg_fs_readdir(t.fs, d, 0, false, fill_three, &l) == 0);
	/* The fourth call was refused: the cookie of the third (".",
	 * "..", one name) resumes with the other nine, none twice. */
	CHECK_EQ(l.last_cookie, 3);
	REQUIRE(dg_fs_readdir(t.fs, d, 3, false, fill, &rest) == 0);
	CHECK_EQ(rest.n, 9);
	for (unsigned i = 0; i < 10; i++)
		CHECK(rest.seen[i] != l.seen[i]);
	tfs_done(&t);
}

/*
 * Work per change does not grow with what the directory once held:
 * 5,000 names, all but ten removed, then 30,000 creates each followed
 * by its unlink. The records that index rebuilds and free-slot searches
 * visit stay a small constant per change. Sized for the live names
 * alone, the index was rebuilt every twenty creates over all 5,000
 * records once the tombstones filled it: some 70 per change here, and
 * 200 per change for a directory of a million names once.
 */
static void test_work_after_shrink(void)
{
	enum { BIG = 5000, KEEP = 10, CHURN = 30000 };
	struct tfs t;
	struct dg_dir *dir;
	uint64_t d, w0;
	char name[32];
	double per;

	REQUIRE(tfs_make_size(&t, "dirwork", 32ull << 20));
	d = tfs_dir(&t, 1, "d");
	REQUIRE(d);
	for (unsigned i = 0; i < BIG; i++) {
		snprintf(name, sizeof(name), "big-%05u", i);
		REQUIRE(tfs_file(&t, d, name));
	}
	for (unsigned i = KEEP; i < BIG; i++) {
		snprintf(name, sizeof(name), "big-%05u", i);
		REQUIRE(dg_fs_unlink(t.fs, d, name) == 0);
	}
	dir = dg_inode_get(t.fs, d)->dir;
	CHECK_EQ(dir->nlive, KEEP);
	w0 = dir->work;
	for (unsigned i = 0; i < CHURN; i++) {
		snprintf(name, sizeof(name), "churn-%05u", i);
		REQUIRE(tfs_file(&t, d, name));
		if (i < CHURN - 3)	/* the last three stay */
			REQUIRE(dg_fs_unlink(t.fs, d, name) == 0);
	}
	dir = dg_inode_get(t.fs, d)->dir;
	per = (double)(dir->work - w0) / (2.0 * CHURN);
	fprintf(stderr, "records visited per change: %.1f\n", per);
	CHECK(per < 10);
	REQUIRE(tfs_remount(&t));
	CHECK(tfs_lookup(&t, d, "big-00009") > 0);
	CHECK_EQ(tfs_lookup(&t, d, "big-00010"), -ENOENT);
	CHECK(tfs_lookup(&t, d, "churn-29997") > 0);
	CHECK_EQ(tfs_lookup(&t, d, "churn-29996"), -ENOENT);
	CHECK_EQ(dg_inode_get(t.fs, d)->dir->nlive, KEEP + 3);
	tfs_done(&t);
}

/* The parser the mount uses refuses every malformed record. */
static void test_parser_refuses(void)
{
	static uint8_t pg[DG_PAGE_SIZE] __attribute__((aligned(4096)));
	struct dg_ddirent *r = (void *)pg;
	struct dg_dir *dir;
	struct {
		uint16_t reclen;
		uint8_t namelen;
		const char *name;
		int want;
	} cases[] = {
		{ 24, 3, "abc", 0 },
		{ 20, 3, "abc", -EUCLEAN },	/* reclen not a multiple of 8 */
		{ 16, 3, "abc", -EUCLEAN },	/* shorter than its name */
		{ 24, 0, "", -EUCLEAN },	/* no name */
		{ 24, 3, "a/c", -EUCLEAN },	/* a slash */
		{ 24, 3, "a\0c", -EUCLEAN },	/* a NUL */
		{ 8192, 3, "abc", -EUCLEAN },	/* past the page */
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(pg, 0, sizeof(pg));
		r->ino = 5;
		r->reclen = cases[i].reclen;
		r->namelen = cases[i].namelen;
		r->type = 8;
		memcpy(r + 1, cases[i].name, cases[i].namelen);
		REQUIRE(dg_dir_new(&dir) == 0);
		CHECK_EQ(dg_dir_parse_page(NULL, dir, 1, 0, pg), cases[i].want);
		if (cases[i].want == 0) {
			struct dg_dent *de = dg_dir_find(dir, "abc");

			CHECK(de && de->ino == 5);
			CHECK_EQ(dir->tail_off, 24);
		}
		dg_dir_free(dir);
	}
}

/* The vpn of page fpage of inode ino, off its record's inline extents;
 * 0 when they do not map it. *rec_vpn, *rec_off: where the record is. */
static uint64_t inline_vpn(struct tfs *t, uint64_t ino, uint64_t fpage,
			   uint64_t *rec_vpn, uint32_t *rec_off)
{
	uint8_t pg[DG_PAGE_SIZE];
	const struct dg_dinode *d;

	dg_ino_where(t->fs, ino, rec_vpn, rec_off);
	if (dg_read(t->vol, *rec_vpn, 1, pg))
		return 0;
	d = (const void *)(pg + *rec_off);
	for (unsigned i = 0; i < DG_INLINE_EXTENTS && d->inl[i].len; i++)
		if (fpage >= d->inl[i].fpage &&
		    fpage - d->inl[i].fpage < d->inl[i].len)
			return d->inl[i].vpn + fpage - d->inl[i].fpage;
	return 0;
}

/* A directory with a page lost beyond parity serves the names on its
 * other pages, whatever its size says: a damaged size of 2^52 bytes is
 * a hole skipped at once, not 2^40 pages looked up one by one. */
static void test_damaged_huge_size(void)
{
	struct tfs t;
	struct listing l = { 0 };
	struct dg_attr a;
	uint8_t pg[DG_PAGE_SIZE];
	uint64_t d, lost, rec;
	uint32_t off;
	char name[64];

	REQUIRE(tfs_make_no_zone(&t, "dirhuge"));
	d = tfs_dir(&t, 1, "d");
	REQUIRE(d);
	for (unsigned i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "name-%u", i);
		REQUIRE(tfs_file(&t, d, name));
	}
	REQUIRE(dg_fs_getattr(t.fs, d, &a) == 0);
	REQUIRE(a.size >= 3 * DG_PAGE_SIZE);
	lost = inline_vpn(&t, d, 1, &rec, &off);
	REQUIRE(lost);
	dg_fs_close(t.fs);
	t.fs = NULL;
	/* The record's size made huge through the update path (its
	 * checksum holds), then page 1 lost behind the engine. */
	REQUIRE(dg_read(t.vol, rec, 1, pg) == 0);
	((struct dg_dinode *)(void *)(pg + off))->size = 1ull << 52;
	{
		struct dg_range r = { rec, 0, DG_PAGE_SIZE, pg };

		REQUIRE(dg_apply(t.vol, &r, 1) == 0);
	}
	REQUIRE(dg_vol_sync(t.vol) == 0);
	tvol_lose_page(&t.tv, t.vol, lost);
	dg_vol_close(t.vol);
	t.vol = tvol_open(&t.tv, 0);
	REQUIRE(t.vol && dg_fs_open(t.vol, &t.fs) == 0);
	REQUIRE(dg_fs_readdir(t.fs, d, 0, false, fill, &l) == 0);
	CHECK(l.n > 2 + 100 && l.n < 2 + 600);
	CHECK(l.seen[0] && l.seen[599]);
	CHECK_EQ(dg_fs_lookup(t.fs, d, "never-there", &a), -EIO);
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "many_pages", test_many_pages },
		{ "slot_reuse", test_slot_reuse },
		{ "cookies", test_cookies },
		{ "parser_refuses", test_parser_refuses },
		{ "work_after_shrink", test_work_after_shrink },
		{ "damaged_huge_size", test_damaged_huge_size },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
