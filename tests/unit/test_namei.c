// SPDX-License-Identifier: MIT
/* test_namei.c -- names: create, link, unlink, rename (plain, over,
 * exchange, noreplace), rmdir, and that all of it is on the media */
#include <stdio.h>
#include <sys/stat.h>
#include <linux/fs.h>

#include "tfs.h"

static void test_create_lookup_remount(void)
{
	struct tfs t;
	struct dg_attr a;
	uint64_t d, f;

	REQUIRE(tfs_make(&t, "nameicreate"));
	d = tfs_dir(&t, 1, "dir");
	REQUIRE(d);
	f = tfs_file(&t, d, "file");
	REQUIRE(f);
	CHECK_EQ(dg_fs_mknod(t.fs, d, "file", 0100644, 0, 0, 0, &a), -EEXIST);
	CHECK_EQ(tfs_lookup(&t, 1, "nothere"), -ENOENT);
	CHECK_EQ(tfs_lookup(&t, f, "x"), -ENOTDIR);
	REQUIRE(dg_fs_symlink(t.fs, 1, "ln", "dir/file",
			      &(struct dg_cred){ .umask = -1 }, &a) == 0);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(tfs_lookup(&t, 1, "dir"), d);
	CHECK_EQ(tfs_lookup(&t, d, "file"), f);
	REQUIRE(dg_fs_getattr(t.fs, d, &a) == 0);
	CHECK(S_ISDIR(a.mode));
	CHECK_EQ(a.nlink, 2);
	{
		char buf[64];
		int64_t ln = tfs_lookup(&t, 1, "ln");

		REQUIRE(ln > 0);
		CHECK_EQ(dg_fs_readlink(t.fs, (uint64_t)ln, buf, sizeof(buf)), 8);
		CHECK(memcmp(buf, "dir/file", 8) == 0);
	}
	tfs_done(&t);
}

static void test_links_and_unlink(void)
{
	struct tfs t;
	struct dg_attr a;
	uint64_t f;

	REQUIRE(tfs_make(&t, "nameilink"));
	f = tfs_file(&t, 1, "a");
	REQUIRE(f);
	REQUIRE(dg_fs_link(t.fs, f, 1, "b", &a) == 0);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(dg_fs_link(t.fs, f, 1, "b", &a), -EEXIST);
	REQUIRE(dg_fs_unlink(t.fs, 1, "a") == 0);
	CHECK_EQ(dg_fs_unlink(t.fs, 1, "a"), -ENOENT);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(tfs_lookup(&t, 1, "a"), -ENOENT);
	CHECK_EQ(tfs_lookup(&t, 1, "b"), f);
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	CHECK_EQ(a.nlink, 1);
	REQUIRE(dg_fs_unlink(t.fs, 1, "b") == 0);
	REQUIRE(tfs_remount(&t));
	/* The last name gone and nothing open: the inode is free. */
	CHECK_EQ(dg_fs_getattr(t.fs, f, &a), -ENOENT);
	tfs_done(&t);
}

static void test_rename(void)
{
	struct tfs t;
	uint64_t d1, d2, x, y;

	REQUIRE(tfs_make(&t, "nameirename"));
	d1 = tfs_dir(&t, 1, "d1");
	d2 = tfs_dir(&t, 1, "d2");
	x = tfs_file(&t, d1, "x");
	y = tfs_file(&t, d2, "y");
	REQUIRE(d1 && d2 && x && y);
	/* Across directories. */
	REQUIRE(dg_fs_rename(t.fs, d1, "x", d2, "x2", 0) == 0);
	CHECK_EQ(tfs_lookup(&t, d1, "x"), -ENOENT);
	CHECK_EQ(tfs_lookup(&t, d2, "x2"), x);
	/* NOREPLACE refuses an existing target; a plain rename replaces. */
	CHECK_EQ(dg_fs_rename(t.fs, d2, "x2", d2, "y", RENAME_NOREPLACE),
		 -EEXIST);
	REQUIRE(dg_fs_rename(t.fs, d2, "x2", d2, "y", 0) == 0);
	CHECK_EQ(tfs_lookup(&t, d2, "y"), x);
	/* EXCHANGE swaps two names. */
	y = tfs_file(&t, d1, "z");
	REQUIRE(y);
	REQUIRE(dg_fs_rename(t.fs, d1, "z", d2, "y", RENAME_EXCHANGE) == 0);
	/* A directory cannot move under itself. */
	CHECK_EQ(dg_fs_rename(t.fs, 1, "d1", d1, "sub", 0), -EINVAL);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(tfs_lookup(&t, d2, "y"), y);
	CHECK_EQ(tfs_lookup(&t, d1, "z"), x);
	/* A directory moved keeps a right parent. */
	REQUIRE(dg_fs_rename(t.fs, 1, "d2", d1, "d2", 0) == 0);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(tfs_lookup(&t, d1, "d2"), d2);
	{
		struct dg_attr a;

		REQUIRE(dg_fs_getattr(t.fs, d1, &a) == 0);
		CHECK_EQ(a.nlink, 3); /* ".", its name, d2's ".." */
	}
	tfs_done(&t);
}

static void test_rmdir(void)
{
	struct tfs t;
	uint64_t d;

	REQUIRE(tfs_make(&t, "nameirmdir"));
	d = tfs_dir(&t, 1, "d");
	REQUIRE(d && tfs_file(&t, d, "f"));
	CHECK_EQ(dg_fs_rmdir(t.fs, 1, "d"), -ENOTEMPTY);
	CHECK_EQ(dg_fs_unlink(t.fs, 1, "d"), -EISDIR);
	CHECK_EQ(dg_fs_rmdir(t.fs, d, "f"), -ENOTDIR);
	REQUIRE(dg_fs_unlink(t.fs, d, "f") == 0);
	REQUIRE(dg_fs_rmdir(t.fs, 1, "d") == 0);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(tfs_lookup(&t, 1, "d"), -ENOENT);
	tfs_done(&t);
}

/* open(O_CREAT)'s one call: the new file is open when it returns, so
 * an unlink right after leaves it (an orphan) until the release. */
static void test_create_open(void)
{
	const struct dg_cred cr = { .uid = 1000, .gid = 100, .umask = 022 };
	struct tfs t;
	struct dg_attr a;
	static const char data[] = "still here";

	REQUIRE(tfs_make(&t, "nameicreateopen"));
	REQUIRE(dg_fs_create_open(t.fs, 1, "f", S_IFREG | 0666, &cr, &a) == 0);
	CHECK_EQ(a.mode, S_IFREG | 0644);
	CHECK_EQ(a.uid, 1000);
	CHECK_EQ(dg_fs_create_open(t.fs, 1, "f", S_IFREG | 0644, &cr, &a),
		 -EEXIST);
	CHECK_EQ(dg_fs_create_open(t.fs, 1, "d", S_IFDIR | 0755, &cr, &a),
		 -EINVAL);
	REQUIRE(dg_fs_unlink(t.fs, 1, "f") == 0);
	CHECK(dg_fs_write(t.fs, a.ino, 0, data, sizeof(data)) ==
	      (ssize_t)sizeof(data));
	CHECK(dg_fs_getattr(t.fs, a.ino, &a) == 0); /* open: kept */
	dg_fs_release(t.fs, a.ino);
	dg_fs_forget(t.fs, a.ino, 1);
	CHECK_EQ(dg_fs_getattr(t.fs, a.ino, &a), -ENOENT);
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "create_lookup_remount", test_create_lookup_remount },
		{ "links_and_unlink", test_links_and_unlink },
		{ "rename", test_rename },
		{ "rmdir", test_rmdir },
		{ "create_open", test_create_open },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
