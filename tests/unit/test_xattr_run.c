// SPDX-License-Identifier: MIT
/* test_xattr_run.c -- extended attributes in runs of pages: thousands of
 * small ones, runs that grow, move and shrink, space given back, the
 * one-page limit of volumes without the feature, several changes in one
 * transaction, and a damaged run found, never trusted */
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fsys_i.h"
#include "tfs.h"
#include "volume_i.h"

#define PG DG_PAGE_SIZE

struct fx {
	struct tfs t;
	uint64_t ino;		/* "f", made by fx_make() */
};

static bool fx_make(struct fx *x, const char *tag)
{
	memset(x, 0, sizeof(*x));
	if (!tfs_make_size(&x->t, tag, 64ull << 20))
		return false;
	x->ino = tfs_file(&x->t, DG_ROOT_INO, "f");
	return x->ino != 0;
}

static struct dg_inode *ip_of(struct fx *x)
{
	return dg_inode_get(x->t.fs, x->ino);
}

static uint64_t free_pages(struct fx *x)
{
	struct statvfs st;

	dg_fs_statfs(x->t.fs, &st);
	return st.f_bfree;
}

static void name_of(char *n, size_t len, unsigned i)
{
	snprintf(n, len, "user.k%05u", i);
}

static void thousands(void)
{
	struct fx x;
	char n[32], v[32];
	static char list[64 * 1024];
	uint64_t free0;
	int len;

	REQUIRE(fx_make(&x, "xmany"));
	free0 = free_pages(&x);
	for (unsigned i = 0; i < 2000; i++) {
		name_of(n, sizeof(n), i);
		snprintf(v, sizeof(v), "v%u", i);
		REQUIRE(dg_fs_setxattr(x.t.fs, x.ino, n, v, strlen(v), 0) == 0);
	}
	/* 2000 records of 4 + 12 + 2..5 bytes, padded to 4: 7 pages. */
	CHECK(dg_xattr_run_pages(&ip_of(&x)->d) >= 7);
	CHECK_EQ(ip_of(&x)->d.blocks, dg_xattr_run_pages(&ip_of(&x)->d));
	len = dg_fs_listxattr(x.t.fs, x.ino, list, sizeof(list));
	CHECK_EQ(len, 2000 * 12); /* "user.k00000" and its NUL */
	/* Everything is on the media: a fresh open reads it back. */
	REQUIRE(tfs_remount(&x.t));
	for (unsigned i = 0; i < 2000; i += 37) {
		char got[32];
		int r;

		name_of(n, sizeof(n), i);
		snprintf(v, sizeof(v), "v%u", i);
		r = dg_fs_getxattr(x.t.fs, x.ino, n, got, sizeof(got));
		CHECK(r == (int)strlen(v) && !memcmp(got, v, (size_t)r));
	}
	/* Removing them all gives every page back. */
	for (unsigned i = 0; i < 2000; i++) {
		name_of(n, sizeof(n), i);
		REQUIRE(dg_fs_removexattr(x.t.fs, x.ino, n) == 0);
	}
	CHECK_EQ(ip_of(&x)->d.xattr_vpn, 0);
	CHECK_EQ(ip_of(&x)->d.blocks, 0);
	CHECK_EQ(free_pages(&x), free0);
	tfs_done(&x.t);
}

static void grow_move_shrink(void)
{
	static uint8_t big[60000], got[60000];
	uint64_t s = 7, vpn1;
	struct fx x;

	REQUIRE(fx_make(&x, "xgrow"));
	trand_fill(&s, big, sizeof(big));
	REQUIRE(dg_fs_setxattr(x.t.fs, x.ino, "user.a", "1", 1, 0) == 0);
	vpn1 = ip_of(&x)->d.xattr_vpn;
	CHECK_EQ(dg_xattr_run_pages(&ip_of(&x)->d), 1);
	CHECK_EQ(ip_of(&x)->d.xattr_pages, 0); /* one page: as format 3 */
	REQUIRE(dg_fs_setxattr(x.t.fs, x.ino, "user.big", big, 5000, 0) == 0);
	CHECK_EQ(dg_xattr_run_pages(&ip_of(&x)->d), 2);
	CHECK(ip_of(&x)->d.xattr_vpn != vpn1); /* grew: moved */
	REQUIRE(dg_fs_setxattr(x.t.fs, x.ino, "user.big", big, sizeof(big),
			       0) == 0);
	CHECK_EQ(dg_xattr_run_pages(&ip_of(&x)->d), 15);
	CHECK_EQ(dg_fs_getxattr(x.t.fs, x.ino, "user.big", got, sizeof(got)),
		 (int)sizeof(big));
	CHECK(!memcmp(got, big, sizeof(big)));
	/* Over 64 KiB in all: ENOSPC, nothing changed. */
	CHECK_EQ(dg_fs_setxattr(x.t.fs, x.ino, "user.more", big, 6000, 0),
		 -ENOSPC);
	CHECK_EQ(dg_fs_setxattr(x.t.fs, x.ino, "user.huge", big, 70000, 0),
		 -E2BIG);
	CHECK_EQ(dg_xattr_run_pages(&ip_of(&x)->d), 15);
	/* Shrinking keeps the run's place and frees its tail. */
	vpn1 = ip_of(&x)->d.xattr_vpn;
	REQUIRE(dg_fs_setxattr(x.t.fs, x.ino, "user.big", big, 100, 0) == 0);
	CHECK_EQ(dg_xattr_run_pages(&ip_of(&x)->d), 1);
	CHECK_EQ(ip_of(&x)->d.xattr_vpn, vpn1);
	CHECK_EQ(ip_of(&x)->d.blocks, 1);
	REQUIRE(tfs_remount(&x.t));
	CHECK_EQ(dg_fs_getxattr(x.t.fs, x.ino, "user.big", got, sizeof(got)),
		 100);
	CHECK(!memcmp(got, big, 100));
	CHECK_EQ(dg_fs_getxattr(x.t.fs, x.ino, "user.a", got, 1), 1);
	tfs_done(&x.t);
}

/* Unlinking the file frees its whole run, not only the first page (the
 * bitmap then agrees with fsck: nothing leaks). */
static void unlink_frees_run(void)
{
	static uint8_t big[20000];
	uint64_t s = 11, before;
	struct fx x;

	REQUIRE(fx_make(&x, "xunlink"));
	REQUIRE(dg_fs_unlink(x.t.fs, DG_ROOT_INO, "f") == 0);
	before = free_pages(&x);
	{
		struct dg_attr a;

		REQUIRE(dg_fs_mknod(x.t.fs, DG_ROOT_INO, "g", S_IFREG | 0644,
				    0, 0, 0, &a) == 0);
		x.ino = a.ino;
	}
	trand_fill(&s, big, sizeof(big));
	REQUIRE(dg_fs_setxattr(x.t.fs, x.ino, "user.big", big, sizeof(big),
			       0) == 0);
	CHECK_EQ(dg_xattr_run_pages(&ip_of(&x)->d), 5);
	REQUIRE(dg_fs_unlink(x.t.fs, DG_ROOT_INO, "g") == 0);
	CHECK_EQ(free_pages(&x), before);
	REQUIRE(tfs_remount(&x.t));
	CHECK_EQ(free_pages(&x), before);
	tfs_done(&x.t);
}

/* A volume made before DG_FEAT_INCOMPAT_XATTR_RUN keeps one page. */
static void old_volume_one_page(void)
{
	static uint8_t big[5000];
	struct fx x;

	REQUIRE(fx_make(&x, "xold"));
	x.t.vol->sb.incompat &= ~DG_FEAT_INCOMPAT_XATTR_RUN;
	CHECK_EQ(dg_fs_setxattr(x.t.fs, x.ino, "user.big", big, sizeof(big),
				0), -ENOSPC);
	CHECK_EQ(dg_fs_setxattr(x.t.fs, x.ino, "user.big", big, 4000, 0), 0);
	CHECK_EQ(dg_xattr_run_pages(&ip_of(&x)->d), 1);
	tfs_done(&x.t);
}

/* Several changes in one transaction with one load and one store (the
 * ACL paths): a removal of a name that is not there is no error; what
 * a lookup learnt is absent is forgotten at the change. */
static void several_in_one_txn(void)
{
	struct fx x;
	struct dg_inode *ip;
	struct dg_txn *txn;
	char got[8];
	const struct dg_xset sets[] = {
		{ "system.posix_acl_default", "dflt", 4 },
		{ "user.gone", NULL, 0 },
		{ "security.capability", "caps", 4 },
	};

	REQUIRE(fx_make(&x, "xtxn"));
	REQUIRE(dg_fs_setxattr(x.t.fs, x.ino, "user.x", "x", 1, 0) == 0);
	ip = ip_of(&x);
	CHECK_EQ(dg_xattr_get_locked(x.t.fs, ip, "security.capability", NULL,
				     0), -ENODATA);
	CHECK(ip->xabsent & DG_XABSENT_CAPS);
	txn = dg_txn_new(x.t.vol);
	REQUIRE(txn);
	REQUIRE(dg_xattr_set_txn(x.t.fs, txn, ip, sets, 3) == 0);
	CHECK_EQ(ip->xabsent, 0);
	REQUIRE(dg_inode_store(x.t.fs, txn, ip) == 0);
	REQUIRE(dg_fs_commit(x.t.fs, txn) == 0);
	dg_txn_free(txn);
	REQUIRE(tfs_remount(&x.t));
	CHECK_EQ(dg_fs_getxattr(x.t.fs, x.ino, "security.capability", got,
				sizeof(got)), 4);
	CHECK_EQ(dg_fs_getxattr(x.t.fs, x.ino, "system.posix_acl_default", got,
				sizeof(got)), 4);
	CHECK_EQ(dg_fs_getxattr(x.t.fs, x.ino, "user.x", got, sizeof(got)), 1);
	tfs_done(&x.t);
}

/* A run whose length disagrees with its records (a software bug behind
 * valid checksums) is damage: EUCLEAN, never a guess. */
static void damaged_run(void)
{
	static uint8_t big[5000];
	struct dg_setattr sa = { .valid = DG_SET_ATIME_NOW };
	struct dg_attr a;
	struct fx x;
	char got[8];

	REQUIRE(fx_make(&x, "xbad"));
	REQUIRE(dg_fs_setxattr(x.t.fs, x.ino, "user.big", big, sizeof(big),
			       0) == 0);
	ip_of(&x)->d.xattr_pages = 3;
	REQUIRE(dg_fs_setattr(x.t.fs, x.ino, &sa, &a) == 0);
	REQUIRE(tfs_remount(&x.t));
	CHECK_EQ(dg_fs_getxattr(x.t.fs, x.ino, "user.big", got, sizeof(got)),
		 -EUCLEAN);
	tfs_done(&x.t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "thousands", thousands },
		{ "grow_move_shrink", grow_move_shrink },
		{ "unlink_frees_run", unlink_frees_run },
		{ "old_volume_one_page", old_volume_one_page },
		{ "several_in_one_txn", several_in_one_txn },
		{ "damaged_run", damaged_run },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
