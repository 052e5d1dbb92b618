// SPDX-License-Identifier: MIT
/* test_setid.c -- the set-ID rules of setid.c against the kernel's
 * (fs/attr.c, fs/inode.c), case by case */
#include <sys/stat.h>

#include "harness.h"
#include "fsys_i.h"
#include "tfs.h"

static bool member_of_7(const struct dg_cred *cr, uint32_t gid)
{
	(void)cr;
	return gid == 7;
}

/* uid 1000, primary group 100, supplementary group 7. */
static const struct dg_cred user = { .uid = 1000, .gid = 100,
				     .in_group = member_of_7, .umask = -1 };
static const struct dg_cred root = { .fsetid = true, .umask = -1 };

static void test_write(void)
{
	/* -rwSr-Sr-- in the caller's group: S_ISUID goes, the locking
	 * mark stays. */
	CHECK_EQ(dg_setid_kill(S_IFREG | 06644, 100, &user, DG_KILL_WRITE),
		 S_IFREG | 0644 | S_ISGID);
	CHECK_EQ(dg_setid_kill(S_IFREG | 06644, 7, &user, DG_KILL_WRITE),
		 S_IFREG | 0644 | S_ISGID);
	/* ... outside it, both go. */
	CHECK_EQ(dg_setid_kill(S_IFREG | 06644, 5, &user, DG_KILL_WRITE),
		 S_IFREG | 0644);
	/* -rwsr-sr--: both go. */
	CHECK_EQ(dg_setid_kill(S_IFREG | 06754, 100, &user, DG_KILL_WRITE),
		 S_IFREG | 0754);
	/* CAP_FSETID keeps them; other types are not touched. */
	CHECK_EQ(dg_setid_kill(S_IFREG | 06754, 5, &root, DG_KILL_WRITE),
		 S_IFREG | 06754);
	CHECK_EQ(dg_setid_kill(S_IFIFO | 06754, 5, &user, DG_KILL_WRITE),
		 S_IFIFO | 06754);
}

static void test_chown(void)
{
	/* Every non-directory, whoever asks: S_ISUID always. */
	CHECK_EQ(dg_setid_kill(S_IFIFO | 06754, 100, &user, DG_KILL_CHOWN),
		 S_IFIFO | 0754);
	CHECK_EQ(dg_setid_kill(S_IFSOCK | 04644, 100, &root, DG_KILL_CHOWN),
		 S_IFSOCK | 0644);
	CHECK_EQ(dg_setid_kill(S_IFCHR | 06744, 100, &user, DG_KILL_CHOWN),
		 S_IFCHR | 02744);
	CHECK_EQ(dg_setid_kill(S_IFBLK | 06744, 5, &user, DG_KILL_CHOWN),
		 S_IFBLK | 0744);
	CHECK_EQ(dg_setid_kill(S_IFREG | 02744, 5, &root, DG_KILL_CHOWN),
		 S_IFREG | 02744);
	CHECK_EQ(dg_setid_kill(S_IFDIR | 06775, 5, &user, DG_KILL_CHOWN),
		 S_IFDIR | 06775);
}

static void test_chmod(void)
{
	CHECK_EQ(dg_setid_chmod(02775, 5, &user), 0775u);
	CHECK_EQ(dg_setid_chmod(02775, 7, &user), 02775u);
	CHECK_EQ(dg_setid_chmod(02775, 5, &root), 02775u);
	CHECK_EQ(dg_setid_chmod(02775, 5, NULL), 02775u);
}

static void test_init_owner(void)
{
	struct dg_dinode dir = { .mode = S_IFDIR | 02775, .gid = 5 };
	uint32_t mode = S_IFREG | 0644, gid = 100;

	dg_setid_init_owner(&dir, &mode, &gid);
	CHECK_EQ(mode, S_IFREG | 0644u);
	CHECK_EQ(gid, 5u);
	mode = S_IFDIR | 0755, gid = 100;
	dg_setid_init_owner(&dir, &mode, &gid);
	CHECK_EQ(mode, S_IFDIR | 02755u);
	CHECK_EQ(gid, 5u);
	dir.mode = S_IFDIR | 0775;
	mode = S_IFDIR | 0755, gid = 100;
	dg_setid_init_owner(&dir, &mode, &gid);
	CHECK_EQ(mode, S_IFDIR | 0755u);
	CHECK_EQ(gid, 100u);
}

/* A setuid/setgid file of uid 1000, group 1000 (not the user's). */
static uint64_t setid_file(struct tfs *t, const char *name, bool data)
{
	struct dg_attr a;

	if (dg_fs_mknod(t->fs, 1, name, S_IFREG | 06755, 0, 1000, 1000, &a))
		return 0;
	if (data && dg_fs_write(t->fs, a.ino, 0, "data", 4) != 4)
		return 0;
	return a.ino;
}

static uint32_t mode_of(struct tfs *t, uint64_t ino)
{
	struct dg_attr a;

	return dg_fs_getattr(t->fs, ino, &a) ? 0 : a.mode;
}

/* The engine drops the bits itself, in the change's own transaction:
 * truncate(2), chown(2) and an O_TRUNC open (of an empty file too, as
 * the kernel's do_truncate() does). What the media holds says so. */
static void test_drop_with_the_change(void)
{
	struct tfs t;
	struct dg_setattr sz = { .valid = DG_SET_SIZE, .size = 1,
				 .cr = &user };
	struct dg_setattr own = { .valid = DG_SET_UID, .uid = 1000,
				  .cr = &user };
	struct dg_setattr keep = { .valid = DG_SET_SIZE, .size = 2 };
	struct dg_attr a;
	uint64_t f1, f2, f3, f4;

	REQUIRE(tfs_make(&t, "setid_txn"));
	f1 = setid_file(&t, "trunc", true);
	f2 = setid_file(&t, "chown", false);
	f3 = setid_file(&t, "otrunc", true);
	f4 = setid_file(&t, "otrunc_empty", false);
	REQUIRE(f1 && f2 && f3 && f4);
	CHECK_EQ(dg_fs_setattr(t.fs, f1, &sz, &a), 0);
	CHECK_EQ(a.mode, S_IFREG | 0755u);
	CHECK_EQ(a.size, 1u);
	CHECK_EQ(dg_fs_setattr(t.fs, f2, &own, &a), 0);
	CHECK_EQ(a.mode, S_IFREG | 0755u);
	CHECK_EQ(dg_fs_open_ino(t.fs, f3, true, &user), 0);
	dg_fs_release(t.fs, f3);
	CHECK_EQ(dg_fs_open_ino(t.fs, f4, true, &user), 0);
	dg_fs_release(t.fs, f4);
	/* No cred: no drop (fsck, tools). */
	REQUIRE(dg_fs_mknod(t.fs, 1, "nocred", S_IFREG | 06755, 0, 1000,
			    1000, &a) == 0);
	CHECK_EQ(dg_fs_setattr(t.fs, a.ino, &keep, &a), 0);
	CHECK_EQ(a.mode, S_IFREG | 06755u);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(mode_of(&t, f1), S_IFREG | 0755u);
	CHECK_EQ(mode_of(&t, f2), S_IFREG | 0755u);
	CHECK_EQ(mode_of(&t, f3), S_IFREG | 0755u);
	CHECK_EQ(mode_of(&t, f4), S_IFREG | 0755u);
	CHECK_EQ(mode_of(&t, a.ino), S_IFREG | 06755u);
	tfs_done(&t);
}

/* A chown that drops a file capability together with a mode change
 * that rewrites the access ACL: both edit the xattr run; after a
 * remount the capability is gone, the ACL follows the new mode, and
 * the run reads back whole. */
static void test_drop_with_acl_chmod(void)
{
	struct tfs t;
	/* version 2: user::rw-, user 5 rwx, group::r--, mask rwx, other r-- */
	static const struct {
		uint32_t version;
		struct { uint16_t tag, perm; uint32_t id; } e[5];
	} acl = { 2, { { 0x01, 6, 0 }, { 0x02, 7, 5 }, { 0x04, 4, 0 },
		       { 0x10, 7, 0 }, { 0x20, 4, 0 } } };
	static const uint8_t cap[20] = { 0, 0, 0, 2 }; /* VFS_CAP v2 */
	struct dg_setattr sa = { .valid = DG_SET_UID | DG_SET_MODE,
				 .uid = 1000, .mode = 0750, .cr = &user };
	uint8_t buf[64];
	struct dg_attr a;
	uint64_t f;

	REQUIRE(tfs_make(&t, "setid_acl"));
	f = setid_file(&t, "capacl", true);
	REQUIRE(f);
	REQUIRE(dg_fs_setxattr(t.fs, f, "system.posix_acl_access", &acl,
			       sizeof(acl), 0) == 0);
	REQUIRE(dg_fs_setxattr(t.fs, f, "security.capability", cap,
			       sizeof(cap), 0) == 0);
	CHECK_EQ(dg_fs_setattr(t.fs, f, &sa, &a), 0);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(mode_of(&t, f), S_IFREG | 0750u);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "security.capability", buf,
				sizeof(buf)), -ENODATA);
	CHECK(dg_fs_getxattr(t.fs, f, "system.posix_acl_access", buf,
			     sizeof(buf)) > 0);
	tfs_done(&t);
}

/* FITRIM is root's (dg_fs_trim()): refused to anyone else before the
 * volume is touched. */
static void test_trim_is_roots(void)
{
	uint64_t trimmed = 77;
	struct tfs t;

	REQUIRE(tfs_make(&t, "setidtrim"));
	CHECK_EQ(dg_fs_trim(t.fs, 0, UINT64_MAX, 0, &user, &trimmed), -EPERM);
	CHECK_EQ(trimmed, 77);
	CHECK_EQ(dg_fs_trim(t.fs, 0, UINT64_MAX, 0, &root, &trimmed), 0);
	CHECK_EQ(dg_fs_trim(t.fs, 0, UINT64_MAX, 0, NULL, &trimmed), 0);
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "write", test_write },
		{ "chown", test_chown },
		{ "chmod", test_chmod },
		{ "init_owner", test_init_owner },
		{ "drop_with_the_change", test_drop_with_the_change },
		{ "drop_with_acl_chmod", test_drop_with_acl_chmod },
		{ "trim_is_roots", test_trim_is_roots },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
