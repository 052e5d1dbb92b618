// SPDX-License-Identifier: MIT
/* test_ditto.c -- ditto copies of the metadata zone: the volume root, the
 * allocation bitmap and every page of filesystem metadata */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "volume_i.h"
#include "check.h"
#include "fscheck.h"
#include "csum.h"

#define PG DG_PAGE_SIZE

/* Where (dev, page) the row of vpn's page and its parity live. */
static uint64_t row_page(struct dg_vol *vol, uint64_t vpn)
{
	return dg_row_page(vol, dg_vpn_loc(vol, vpn).row);
}

/* Garbage over the page of vpn and over the parity of its row: two
 * faults in one row, beyond single parity. */
static void kill_row_of(struct tvol *tv, struct dg_vol *vol, uint64_t vpn,
			uint64_t *seed)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);
	uint8_t junk[PG];
	uint64_t off = row_page(vol, vpn) * PG;

	trand_fill(seed, junk, PG);
	tvol_poke(tv, l.dev, off, junk, PG);
	trand_fill(seed, junk, PG);
	tvol_poke(tv, dg_row_parity_dev(vol, l.row, 0), off, junk, PG);
}

/* Two faults in the root's row used to lose the volume (issue 15): the
 * ditto copy, proven by the root's own checksum, brings it back. */
static void test_root_double_fault(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 5, base[DG_FAULT_NR], after[DG_FAULT_NR];
	uint8_t *want = aligned_alloc(PG, 2 * PG), *got = want + PG;
	struct dg_scrub_report sr;

	REQUIRE(want);
	tvol_make(&tv, "dittoroot", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(dg_ditto_has(vol, 0));
	CHECK(dg_ditto_has(vol, 1));
	REQUIRE(dg_read(vol, 0, 1, want) == 0);
	kill_row_of(&tv, vol, 0, &seed);
	dg_vol_close(vol);

	vol = tvol_open(&tv, 0); /* loads the root: must not fail */
	REQUIRE(vol);
	dg_vol_fault_counts(vol, base);
	REQUIRE(dg_read(vol, 0, 1, got) == 0);
	CHECK(memcmp(want, got, PG) == 0);
	/* The open already put the root back in place; the parity of the
	 * row is the scrub's to recompute from verified data. */
	REQUIRE(dg_vol_scrub(vol, true, &sr, NULL, NULL) == 0);
	dg_vol_fault_counts(vol, after);
	CHECK_EQ(after[DG_FAULT_UNRECOVERABLE] - base[DG_FAULT_UNRECOVERABLE],
		 0);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(want);
}

/* A ditto copy that missed the last write of the root is never used in
 * its place: with the root's row dead too, the read is EIO, not the old
 * root; and the scrub rewrites a stale copy from the page. */
static void test_stale_copy_never_used(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 9, stale;
	uint8_t *old = aligned_alloc(PG, 3 * PG), *now = old + PG;
	uint8_t *buf = old + 2 * PG;
	unsigned cdev;
	uint64_t coff;

	REQUIRE(old);
	tvol_make(&tv, "dittostale", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	dg_ditto_loc(vol, 1, 1, &cdev, &coff); /* the first bitmap page */
	coff *= PG;
	tvol_peek(&tv, cdev, coff, old, PG);
	REQUIRE(dg_read(vol, 1, 1, buf) == 0);
	CHECK(memcmp(old, buf, PG) == 0);	/* the copy is the page */
	{
		/* change the bitmap page: allocate and commit */
		struct dg_txn *txn = dg_txn_new(vol);
		uint64_t start, got;

		REQUIRE(txn);
		REQUIRE(dg_alloc(txn, 0, 8, &start, &got) == 0);
		REQUIRE(dg_txn_commit(txn) == 0);
		dg_txn_free(txn);
	}
	REQUIRE(dg_read(vol, 1, 1, now) == 0);
	CHECK(memcmp(old, now, PG) != 0);
	dg_vol_close(vol);
	/* The copy's device lost that write. */
	tvol_poke(&tv, cdev, coff, old, PG);

	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	REQUIRE(dg_ditto_check(vol, false, &stale) == 0);
	CHECK_EQ(stale, 1);
	kill_row_of(&tv, vol, 1, &seed);
	dg_vol_close(vol);
	vol = tvol_open(&tv, DG_OPEN_RDONLY | DG_OPEN_FORMAT);
	REQUIRE(vol);
	memset(buf, 0xa5, PG);
	CHECK_EQ(dg_read(vol, 1, 1, buf), -EIO);
	CHECK(memcmp(buf, old, PG) != 0);	/* never the old bitmap */
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(old);
}

/* An update writes a copy only the bytes that changed when the copy
 * was current, so one stale elsewhere in the page must still get the
 * whole page: after the update it equals the page (fsck converges). */
static void test_update_mends_stale_copy(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t stale, coff;
	uint8_t *page = aligned_alloc(PG, 2 * PG), *copy = page + PG;
	const uint8_t junk[8] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4 };
	unsigned cdev;

	REQUIRE(page);
	tvol_make(&tv, "dittomend", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	dg_ditto_loc(vol, 1, 1, &cdev, &coff); /* the first bitmap page */
	coff *= PG;
	dg_vol_close(vol);
	/* Stale in its last bytes, far from what an allocation changes. */
	tvol_poke(&tv, cdev, coff + PG - sizeof(junk), junk, sizeof(junk));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_ditto_check(vol, false, &stale) == 0);
	CHECK_EQ(stale, 1);
	{
		struct dg_txn *txn = dg_txn_new(vol);
		uint64_t start, got;

		REQUIRE(txn);
		REQUIRE(dg_alloc(txn, 0, 8, &start, &got) == 0);
		REQUIRE(dg_txn_commit(txn) == 0);
		dg_txn_free(txn);
	}
	REQUIRE(dg_read(vol, 1, 1, page) == 0);
	tvol_peek(&tv, cdev, coff, copy, PG);
	CHECK(memcmp(page, copy, PG) == 0);
	REQUIRE(dg_ditto_check(vol, false, &stale) == 0);
	CHECK_EQ(stale, 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(page);
}

/* The scrub puts a stale copy right while the page is readable. */
static void test_scrub_refreshes_copy(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t stale;
	uint8_t *page = aligned_alloc(PG, 2 * PG), *copy = page + PG;
	struct dg_scrub_report sr;
	unsigned cdev;
	uint64_t cpage;

	REQUIRE(page);
	tvol_make(&tv, "dittoscrub", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	dg_ditto_loc(vol, 0, 1, &cdev, &cpage);
	memset(copy, 0, PG);
	tvol_poke(&tv, cdev, cpage * PG, copy, PG);
	REQUIRE(dg_vol_scrub(vol, true, &sr, NULL, NULL) == 0);
	CHECK_EQ(sr.detected, 1);
	CHECK_EQ(sr.repaired, 1);
	REQUIRE(dg_read(vol, 0, 1, page) == 0);
	tvol_peek(&tv, cdev, cpage * PG, copy, PG);
	CHECK(memcmp(page, copy, PG) == 0);
	REQUIRE(dg_ditto_check(vol, false, &stale) == 0);
	CHECK_EQ(stale, 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(page);
}

/* ---- the whole metadata zone, through the filesystem layer ---------- */

#define NFILES	   200	/* directory entries: two directory pages */
#define SPARSE_PG  40	/* pages written, every other one: an extent page */
#define XATTR_LEN  1000
static const char link_target[] = "a/target/that/is/not/short/at/all";

static void pattern(void *buf, size_t len, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	trand_fill(&s, buf, len);
}

/* A small tree with every kind of metadata page: inode table, a
 * directory of two pages, a fragmented file (an extent page), an xattr
 * page and a symlink page. */
static bool populate(struct dg_fs *fs)
{
	uint8_t buf[PG];
	struct dg_attr d, a;
	char name[32];

	if (dg_fs_mknod(fs, DG_ROOT_INO, "d", S_IFDIR | 0755, 0, 0, 0, &d))
		return false;
	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "file-with-a-longer-name-%03u", i);
		if (dg_fs_mknod(fs, d.ino, name, S_IFREG | 0644, 0, 0, 0, &a))
			return false;
		pattern(buf, 100 + i, i);
		if (dg_fs_write(fs, a.ino, 0, buf, 100 + i) != 100 + (int)i)
			return false;
	}
	if (dg_fs_mknod(fs, DG_ROOT_INO, "sparse", S_IFREG | 0644, 0, 0, 0,
			&a))
		return false;
	for (unsigned p = 0; p < SPARSE_PG; p++) {
		pattern(buf, PG, 1000 + p);
		if (dg_fs_write(fs, a.ino, 2ull * p * PG, buf, PG) != PG)
			return false;
	}
	pattern(buf, XATTR_LEN, 77);
	if (dg_fs_setxattr(fs, a.ino, "user.big", buf, XATTR_LEN, 0))
		return false;
	return dg_fs_symlink(fs, DG_ROOT_INO, "l", link_target,
				    &(struct dg_cred){ .umask = -1 }, &a) == 0;
}

/* Everything populate() wrote reads back bit-exact. */
static bool tree_ok(struct dg_fs *fs)
{
	uint8_t *pages = aligned_alloc(PG, 4 * PG), want[PG];
	const void *data;
	struct dg_attr d, a;
	char name[32], link[128];
	bool ok = pages != NULL;

	ok = ok && dg_fs_lookup(fs, DG_ROOT_INO, "d", &d) == 0;
	for (unsigned i = 0; ok && i < NFILES; i++) {
		snprintf(name, sizeof(name), "file-with-a-longer-name-%03u", i);
		pattern(want, 100 + i, i);
		ok = dg_fs_lookup(fs, d.ino, name, &a) == 0 &&
		     a.size == 100 + i &&
		     dg_fs_read(fs, a.ino, 0, 100 + i, pages, &data) ==
			     100 + (int)i &&
		     !memcmp(data, want, 100 + i);
	}
	ok = ok && dg_fs_lookup(fs, DG_ROOT_INO, "sparse", &a) == 0;
	for (unsigned p = 0; ok && p < 2 * SPARSE_PG - 1; p++) {
		if (p % 2)
			memset(want, 0, PG);
		else
			pattern(want, PG, 1000 + p / 2);
		ok = dg_fs_read(fs, a.ino, (uint64_t)p * PG, PG, pages,
				&data) == PG &&
		     !memcmp(data, want, PG);
	}
	pattern(want, XATTR_LEN, 77);
	ok = ok && dg_fs_getxattr(fs, a.ino, "user.big", pages, PG) ==
			   XATTR_LEN &&
	     !memcmp(pages, want, XATTR_LEN);
	ok = ok && dg_fs_lookup(fs, DG_ROOT_INO, "l", &a) == 0 &&
	     dg_fs_readlink(fs, a.ino, link, sizeof(link)) ==
		     (int)strlen(link_target) &&
	     !memcmp(link, link_target, strlen(link_target));
	free(pages);
	return ok;
}

static bool read_tree(struct tvol *tv)
{
	struct dg_vol *vol = tvol_open(tv, 0);
	struct dg_fs *fs = NULL;
	bool ok = vol && dg_fs_open(vol, &fs) == 0 && tree_ok(fs);

	if (fs)
		dg_fs_close(fs);
	if (vol)
		dg_vol_close(vol);
	return ok;
}

static bool say_yes(void *arg, const struct dg_chk_event *ev)
{
	(void)arg;
	(void)ev;
	return true;
}

/* fsck's engine passes (redundancy, then structures): the number of
 * findings, each repaired with repair; -1 if a pass failed. */
static int fsck(struct tvol *tv, bool repair)
{
	struct dg_vol *vol = tvol_open(tv, repair ? 0 : DG_OPEN_RDONLY);
	struct dg_chk_stats st;
	int n = 0;

	if (!vol)
		return -1;
	if (dg_check_redundancy(vol, repair, tcheck_count_event, &n, NULL, NULL,
				&st) < 0 ||
	    dg_check_fs(vol, tcheck_count_event, repair ? say_yes : NULL, &n) < 0)
		n = -1;
	else if (st.unrecoverable)
		n = -1;
	dg_vol_close(vol);
	return n;
}

/* The first vpn of each metadata class of the tree; every metadata page
 * lies in the zone. */
static const enum dg_pclass meta_cls[] = { DG_PC_ITABLE, DG_PC_DIR,
					   DG_PC_EMAP, DG_PC_XATTR,
					   DG_PC_SYMLINK };
#define NCLS (sizeof(meta_cls) / sizeof(meta_cls[0]))

static bool find_meta(struct dg_vol *vol, uint64_t vpn[NCLS])
{
	struct dg_vol_info in;
	struct dg_vpnmap *map;
	uint64_t outside = 0;

	dg_vol_get_info(vol, &in);
	if (dg_check_classify(vol, &map))
		return false;
	for (unsigned c = 0; c < NCLS; c++) {
		vpn[c] = 0;
		for (uint64_t v = 0; v < in.vpns && !vpn[c]; v++)
			if (dg_vpnmap_cls(map, v) == meta_cls[c])
				vpn[c] = v;
	}
	for (uint64_t v = in.zone_vpns; v < in.vpns; v++)
		outside += dg_vpnmap_cls(map, v) != DG_PC_FREE &&
			   dg_vpnmap_cls(map, v) != DG_PC_FILE;
	dg_vpnmap_free(map);
	CHECK_EQ(outside, 0);
	for (unsigned c = 0; c < NCLS; c++) {
		if (!vpn[c] || vpn[c] >= in.zone_vpns)
			fprintf(stderr, "  %s page at vpn %llu, zone %llu\n",
				dg_pclass_name(meta_cls[c]),
				(unsigned long long)vpn[c],
				(unsigned long long)in.zone_vpns);
		if (!vpn[c] || vpn[c] >= in.zone_vpns)
			return false;
	}
	return outside == 0;
}

/* Garbage over the page of vpn and over the parity pages of its row:
 * parity + 1 faults, beyond what parity covers. (Parity, not the other
 * data pages: those may never have been written, and a never-written
 * page's media is ignored, so garbage there would be no fault.) The
 * ditto copies, outside the rows, stay. */
static void kill_row(struct tvol *tv, struct dg_vol *vol, uint64_t vpn,
		     uint64_t *seed)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);
	uint8_t junk[PG];

	for (unsigned i = 0; i <= vol->parity; i++) {
		unsigned dev = i ? dg_row_parity_dev(vol, l.row, i - 1) : l.dev;

		trand_fill(seed, junk, PG);
		tvol_poke(tv, dev, dg_row_page(vol, l.row) * PG, junk, PG);
	}
}

/*
 * parity + 1 faults in the row of an inode table page, a directory
 * page, an extent page, an xattr page and a symlink page: every file
 * reads back bit-exact, through the read path (the ditto copy, proven
 * by the page's checksum) and after fsck -y, and fsck -n is then clean.
 * Both orders: read first (read-repair, then fsck puts parity right),
 * and fsck -y first.
 */
static void zone_faults(unsigned ndev, unsigned parity)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_fs *fs;
	uint64_t vpn[NCLS], seed = 40 + parity;
	char tag[32];

	snprintf(tag, sizeof(tag), "zonep%u", parity);
	tvol_make(&tv, tag, ndev, parity, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(populate(fs));
	REQUIRE(tree_ok(fs));
	dg_fs_close(fs);
	REQUIRE(find_meta(vol, vpn));
	dg_vol_close(vol);
	CHECK_EQ(fsck(&tv, false), 0);

	for (unsigned c = 0; c < NCLS; c++)
		for (unsigned order = 0; order < 2; order++) {
			int n;

			vol = tvol_open(&tv, DG_OPEN_RDONLY);
			REQUIRE(vol);
			kill_row(&tv, vol, vpn[c], &seed);
			dg_vol_close(vol);
			if (order == 0) {
				CHECK(read_tree(&tv));
			} else {
				n = fsck(&tv, false);
				CHECK(n > 0);
			}
			/* After the reads, read-repair may have left
			 * nothing to do. */
			n = fsck(&tv, true);
			if (n < 0 || (order == 1 && n == 0))
				fprintf(stderr, "  %s, order %u: fsck -y "
					"found %d\n",
					dg_pclass_name(meta_cls[c]), order, n);
			CHECK(order == 0 ? n >= 0 : n > 0);
			n = fsck(&tv, false);
			if (n)
				fprintf(stderr, "  %s, order %u: fsck -n "
					"after -y found %d\n",
					dg_pclass_name(meta_cls[c]), order, n);
			CHECK_EQ(n, 0);
			CHECK(read_tree(&tv));
		}
	tvol_cleanup(&tv);
}

static void test_zone_faults_p1(void)
{
	zone_faults(4, 1);
}

static void test_zone_faults_p2(void)
{
	zone_faults(5, 2);
}

/*
 * A full zone does not fail an operation that has free space: the
 * metadata goes among the data rows (counted), still readable and
 * checked; no metadata page lies outside the zone before it is full.
 */
static void test_zone_full_spills(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_fs *fs;
	struct dg_vol_info in;
	struct dg_attr a, f;
	struct dg_vpnmap *map;
	uint64_t outside = 0, spill;
	unsigned made = 0;
	char name[32];

	tvol_make(&tv, "zonefull", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	/* A directory with an entry is a page: more of them than the zone
	 * has pages. */
	dg_vol_get_info(vol, &in);
	for (; made < in.zone_vpns + 64; made++) {
		snprintf(name, sizeof(name), "dir%05u", made);
		REQUIRE(dg_fs_mknod(fs, DG_ROOT_INO, name, S_IFDIR | 0755, 0,
				    0, 0, &a) == 0);
		REQUIRE(dg_fs_mknod(fs, a.ino, "f", S_IFREG | 0644, 0, 0, 0,
				    &f) == 0);
	}
	dg_vol_get_info(vol, &in);
	CHECK_EQ(in.zone_free, 0);
	pthread_mutex_lock(&vol->alloc_lock);
	spill = vol->meta_spill;
	pthread_mutex_unlock(&vol->alloc_lock);
	CHECK(spill >= 64);
	dg_fs_close(fs);
	REQUIRE(dg_check_classify(vol, &map) == 0);
	for (uint64_t v = in.zone_vpns; v < in.vpns; v++)
		outside += dg_vpnmap_cls(map, v) != DG_PC_FREE &&
			   dg_vpnmap_cls(map, v) != DG_PC_FILE;
	CHECK_EQ(outside, spill);
	dg_vpnmap_free(map);
	dg_vol_close(vol);
	CHECK_EQ(fsck(&tv, false), 0);

	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	for (unsigned i = 0; i < made; i++) {
		snprintf(name, sizeof(name), "dir%05u", i);
		REQUIRE(dg_fs_lookup(fs, DG_ROOT_INO, name, &a) == 0);
		CHECK_EQ(dg_fs_lookup(fs, a.ino, "f", &f), 0);
	}
	dg_fs_close(fs);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/*
 * A volume without a zone (mkfs --meta-size none; format 3 before the
 * zone): only the root and the bitmap have copies, addressed by vpn,
 * and the volume opens and works as before; metadata goes anywhere.
 */
static void test_no_zone_layout(void)
{
	struct dg_format_opts o = { .parity = 1, .size = 16ull << 20,
				    .force = true, .no_meta_zone = true };
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_fs *fs;
	struct dg_vol_info in;
	unsigned dev;
	uint64_t page;

	tvol_make_opts(&tv, "nozone", 4, &o);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(!(vol->sb.incompat & DG_FEAT_INCOMPAT_META_ZONE));
	dg_vol_get_info(vol, &in);
	CHECK_EQ(in.zone_vpns, 0);
	CHECK_EQ(vol->sb.ditto_pages, vol->meta_vpns);
	CHECK(dg_ditto_has(vol, 0) && dg_ditto_has(vol, 1));
	CHECK(!dg_ditto_has(vol, vol->meta_vpns));
	dg_ditto_loc(vol, 1, 1, &dev, &page);
	CHECK_EQ(page, vol->sb.ditto_start + 1);
	CHECK_EQ(dev, (dg_vpn_loc(vol, 1).dev + 1) % 4);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(populate(fs));
	REQUIRE(tree_ok(fs));
	dg_fs_close(fs);
	dg_vol_close(vol);
	CHECK(read_tree(&tv));
	CHECK_EQ(fsck(&tv, false), 0);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "root_double_fault", test_root_double_fault },
		{ "stale_copy_never_used", test_stale_copy_never_used },
		{ "scrub_refreshes_copy", test_scrub_refreshes_copy },
		{ "update_mends_stale_copy", test_update_mends_stale_copy },
		{ "zone_faults_p1", test_zone_faults_p1 },
		{ "zone_faults_p2", test_zone_faults_p2 },
		{ "zone_full_spills", test_zone_full_spills },
		{ "no_zone_layout", test_no_zone_layout },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
