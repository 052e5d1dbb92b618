// SPDX-License-Identifier: MIT
/* test_setid.c -- the set-ID rules of setid.c against the kernel's
 * (fs/attr.c, fs/inode.c), case by case */
#include <sys/stat.h>

#include "harness.h"
#include "fsys_i.h"

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

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "write", test_write },
		{ "chown", test_chown },
		{ "chmod", test_chmod },
		{ "init_owner", test_init_owner },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
