// SPDX-License-Identifier: MIT
/* test_xattr_64k.c -- a value of the kernel's largest size (65,536
 * bytes): stored, read back exact, listed, replaced and removed; the
 * volume says DG_FEAT_INCOMPAT_XATTR_64K only once one is stored, on
 * every superblock, before the transaction that uses it; fsck finds the
 * volume clean; an open that finds devices apart on the flag alone (a
 * crash while it was written) takes the volume, with the flag */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fscheck.h"
#include "fsys_i.h"
#include "super.h"
#include "tfs.h"
#include "volume_i.h"

#define BIG DG_XATTR_VALUE_MAX

/* Findings of fsck's filesystem and superblock checks, read only. */
static int fsck_findings(struct tfs *t)
{
	int n = 0;

	if (dg_check_fs(t->vol, tcheck_count_event, NULL, &n) < 0)
		return -1;
	if (dg_check_supers(t->vol, false, tcheck_count_event, &n) < 0)
		return -1;
	return n;
}

/* Whether copy c (0 primary, 1 backup) of device d's superblock has
 * bit; with clear, write it back without it. */
static bool super_has(struct tfs *t, unsigned d, unsigned c, uint64_t bit,
		      bool clear)
{
	static struct dg_dsuper s __attribute__((aligned(4096)));
	struct stat st;
	int fd = open(t->tv.paths[d], O_RDWR);
	off_t off;
	bool has = false;

	if (fd < 0 || fstat(fd, &st))
		goto out;
	off = c ? st.st_size - DG_PAGE_SIZE : 0;
	if (pread(fd, &s, sizeof(s), off) != sizeof(s) ||
	    dg_dsuper_decode(&s, &s))
		goto out;
	has = (s.incompat & bit) == bit;
	if (clear) {
		s.incompat &= ~bit;
		dg_dsuper_seal(&s);
		if (pwrite(fd, &s, sizeof(s), off) != sizeof(s))
			has = true;
	}
out:
	if (fd >= 0)
		close(fd);
	return has;
}

static unsigned supers_with(struct tfs *t, uint64_t bit)
{
	unsigned n = 0;

	for (unsigned d = 0; d < t->tv.ndev; d++)
		for (unsigned c = 0; c < 2; c++)
			n += super_has(t, d, c, bit, false);
	return n;
}

static uint8_t *pattern(void)
{
	uint8_t *v = malloc(BIG);

	for (uint32_t i = 0; v && i < BIG; i++)
		v[i] = (uint8_t)(i * 7 + i / 251);
	return v;
}

static void store_and_read_back(void)
{
	struct tfs t;
	uint8_t *v = pattern(), *got = malloc(BIG + 1);
	static char list[256];
	uint64_t f;

	REQUIRE(v && got);
	REQUIRE(tfs_make_size(&t, "x64k", 64ull << 20));
	f = tfs_file(&t, DG_ROOT_INO, "f");
	REQUIRE(f);
	/* Small ones and a full 16-page area leave the volume as it was. */
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.small", "s", 1, 0) == 0);
	CHECK_EQ(dg_fs_setxattr(t.fs, f, "user.max16", v, 65000, 0), 0);
	CHECK(!dg_vol_has_incompat(t.vol, DG_FEAT_INCOMPAT_XATTR_64K));
	CHECK_EQ(dg_xattr_run_pages(&dg_inode_get(t.fs, f)->d), DG_XATTR_MAX_PAGES);
	REQUIRE(dg_fs_removexattr(t.fs, f, "user.max16") == 0);
	CHECK_EQ(supers_with(&t, DG_FEAT_INCOMPAT_XATTR_64K), 0);
	CHECK_EQ(fsck_findings(&t), 0);

	CHECK_EQ(dg_fs_setxattr(t.fs, f, "user.big", v, BIG + 1, 0), -E2BIG);
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.big", v, BIG, 0) == 0);
	CHECK(dg_vol_has_incompat(t.vol, DG_FEAT_INCOMPAT_XATTR_64K));
	CHECK_EQ(supers_with(&t, DG_FEAT_INCOMPAT_XATTR_64K), 2 * t.tv.ndev);
	CHECK_EQ(dg_xattr_run_pages(&dg_inode_get(t.fs, f)->d), DG_XATTR_64K_PAGES);
	/* 17 pages and no more. */
	CHECK_EQ(dg_fs_setxattr(t.fs, f, "user.more", v, 5000, 0), -ENOSPC);
	/* Every length up to the largest fits (65,535 had never fit). */
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.big", v, UINT16_MAX, 0) == 0);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.big", NULL, 0), UINT16_MAX);
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.big", v, BIG, 0) == 0);

	REQUIRE(tfs_remount(&t));
	CHECK(dg_vol_has_incompat(t.vol, DG_FEAT_INCOMPAT_XATTR_64K));
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.big", NULL, 0), BIG);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.big", got, BIG - 1), -ERANGE);
	memset(got, 0, BIG + 1);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.big", got, BIG + 1), BIG);
	CHECK(!memcmp(got, v, BIG));
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.small", got, 8), 1);
	CHECK_EQ(dg_fs_listxattr(t.fs, f, list, sizeof(list)),
		 (int)sizeof("user.small") + (int)sizeof("user.big"));
	CHECK_EQ(fsck_findings(&t), 0);

	/* Replaced by a smaller value, then back, then gone: the run
	 * shrinks and grows; the flag stays (it says what may be there). */
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.big", "tiny", 4,
			       XATTR_REPLACE) == 0);
	CHECK_EQ(dg_xattr_run_pages(&dg_inode_get(t.fs, f)->d), 1);
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.big", v, BIG, 0) == 0);
	REQUIRE(dg_fs_removexattr(t.fs, f, "user.big") == 0);
	CHECK_EQ(dg_xattr_run_pages(&dg_inode_get(t.fs, f)->d), 1);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.big", NULL, 0), -ENODATA);
	CHECK(dg_vol_has_incompat(t.vol, DG_FEAT_INCOMPAT_XATTR_64K));
	CHECK_EQ(fsck_findings(&t), 0);
	tfs_done(&t);
	free(v);
	free(got);
}

/* A crash while the flag was written: some superblocks have it, the
 * rest do not (nothing uses it yet). The open takes the volume, with
 * the flag; the next open for writing writes it everywhere. */
static void torn_flag_write(void)
{
	struct tfs t;
	uint8_t *v = pattern();
	uint64_t f;

	REQUIRE(v);
	REQUIRE(tfs_make(&t, "x64ktorn"));
	f = tfs_file(&t, DG_ROOT_INO, "f");
	REQUIRE(f);
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.big", v, BIG, 0) == 0);
	dg_fs_close(t.fs);
	dg_vol_close(t.vol);
	t.fs = NULL;
	t.vol = NULL;
	/* Device 0 has it on its primary only; the others not at all. */
	super_has(&t, 0, 1, DG_FEAT_INCOMPAT_XATTR_64K, true);
	for (unsigned d = 1; d < t.tv.ndev; d++)
		for (unsigned c = 0; c < 2; c++)
			super_has(&t, d, c, DG_FEAT_INCOMPAT_XATTR_64K, true);
	CHECK_EQ(supers_with(&t, DG_FEAT_INCOMPAT_XATTR_64K), 1);
	t.vol = tvol_open(&t.tv, 0);
	REQUIRE(t.vol && dg_fs_open(t.vol, &t.fs) == 0);
	CHECK(dg_vol_has_incompat(t.vol, DG_FEAT_INCOMPAT_XATTR_64K));
	CHECK_EQ(supers_with(&t, DG_FEAT_INCOMPAT_XATTR_64K), 2 * t.tv.ndev);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.big", NULL, 0), BIG);
	CHECK_EQ(fsck_findings(&t), 0);
	tfs_done(&t);
	free(v);
}

/* A volume without XATTR_RUN keeps its one page: no 64 KiB value, no
 * flag. */
static void old_volume(void)
{
	struct tfs t;
	uint8_t *v = pattern();
	uint64_t f;

	REQUIRE(v);
	REQUIRE(tfs_make(&t, "x64kold"));
	f = tfs_file(&t, DG_ROOT_INO, "f");
	REQUIRE(f);
	t.vol->sb.incompat &= ~DG_FEAT_INCOMPAT_XATTR_RUN;
	CHECK_EQ(dg_fs_setxattr(t.fs, f, "user.big", v, BIG, 0), -ENOSPC);
	CHECK(!dg_vol_has_incompat(t.vol, DG_FEAT_INCOMPAT_XATTR_64K));
	t.vol->sb.incompat |= DG_FEAT_INCOMPAT_XATTR_RUN;
	tfs_done(&t);
	free(v);
}

/* The record check: bit 16 of a length only with the feature. */
static void page_check(void)
{
	static uint8_t run[DG_XATTR_64K_PAGES * DG_PAGE_SIZE];
	struct dg_dxattr_hdr *h = (void *)run;
	struct dg_dxattr *x = (void *)(h + 1);

	memset(run, 0, sizeof(run));
	h->count = 1;
	x->namelen = 6;
	x->vallen_hi = 1;
	x->vallen = 0;
	memcpy(x + 1, "user.a", 6);
	h->used = sizeof(*h) + ((sizeof(*x) + 6 + BIG + 3) & ~3u);
	CHECK_EQ(dg_xattr_page_check(run, DG_XATTR_64K_PAGES, true), 0);
	CHECK_EQ(dg_xattr_page_check(run, DG_XATTR_64K_PAGES, false),
		 -EUCLEAN);
	CHECK_EQ(dg_xattr_page_get(run, "user.a", NULL, 0), BIG);
	x->vallen = 4; /* past XATTR_SIZE_MAX */
	h->used += 4;
	CHECK_EQ(dg_xattr_page_check(run, DG_XATTR_64K_PAGES, true),
		 -EUCLEAN);
	x->vallen = 0;
	x->vallen_hi = 2;
	CHECK_EQ(dg_xattr_page_check(run, DG_XATTR_64K_PAGES, true),
		 -EUCLEAN);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "store_and_read_back", store_and_read_back },
		{ "torn_flag_write", torn_flag_write },
		{ "old_volume", old_volume },
		{ "page_check", page_check },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
