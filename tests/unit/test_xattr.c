// SPDX-License-Identifier: MIT
/* test_xattr.c -- extended attributes: set, get, list, remove, the
 * create/replace flags, sizes, the run filling up, the page check */
#include <stdio.h>
#include <sys/xattr.h>

#include "fsys_i.h"
#include "tfs.h"

static void test_set_get_list_remove(void)
{
	struct tfs t;
	char buf[256];
	uint64_t f;

	REQUIRE(tfs_make(&t, "xattrbasic"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.a", buf, sizeof(buf)), -ENODATA);
	CHECK_EQ(dg_fs_listxattr(t.fs, f, buf, sizeof(buf)), 0);
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.a", "alpha", 5, 0) == 0);
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.empty", "", 0, 0) == 0);
	REQUIRE(dg_fs_setxattr(t.fs, f, "trusted.b", "beta!", 5, 0) == 0);
	/* Replace with a longer value: the records after it move. */
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.a", "alphabet", 8, 0) == 0);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.a", NULL, 0), 8);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.a", buf, 4), -ERANGE);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.a", buf, sizeof(buf)), 8);
	CHECK(memcmp(buf, "alphabet", 8) == 0);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.empty", buf, sizeof(buf)), 0);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "trusted.b", buf, sizeof(buf)), 5);
	CHECK(memcmp(buf, "beta!", 5) == 0);
	{
		const char want[] = "trusted.b\0user.a\0user.empty";
		int n = dg_fs_listxattr(t.fs, f, buf, sizeof(buf));
		unsigned found = 0;

		CHECK_EQ(n, sizeof(want));
		CHECK_EQ(dg_fs_listxattr(t.fs, f, NULL, 0), n);
		CHECK_EQ(dg_fs_listxattr(t.fs, f, buf, 5), -ERANGE);
		for (int off = 0; n > 0 && off < n; off += (int)strlen(buf + off) + 1)
			found += !strcmp(buf + off, "user.a") +
				 !strcmp(buf + off, "user.empty") +
				 !strcmp(buf + off, "trusted.b");
		CHECK_EQ(found, 3);
	}
	REQUIRE(dg_fs_removexattr(t.fs, f, "user.a") == 0);
	CHECK_EQ(dg_fs_removexattr(t.fs, f, "user.a"), -ENODATA);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.a", buf, sizeof(buf)), -ENODATA);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "trusted.b", buf, sizeof(buf)), 5);
	tfs_done(&t);
}

static void test_flags(void)
{
	struct tfs t;
	char buf[16];
	uint64_t f;

	REQUIRE(tfs_make(&t, "xattrflags"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	CHECK_EQ(dg_fs_setxattr(t.fs, f, "user.x", "1", 1, XATTR_REPLACE),
		 -ENODATA);
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.x", "1", 1, XATTR_CREATE) == 0);
	CHECK_EQ(dg_fs_setxattr(t.fs, f, "user.x", "2", 1, XATTR_CREATE),
		 -EEXIST);
	REQUIRE(dg_fs_setxattr(t.fs, f, "user.x", "3", 1, XATTR_REPLACE) == 0);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.x", buf, sizeof(buf)), 1);
	CHECK_EQ(buf[0], '3');
	tfs_done(&t);
}

/* One page holds them all: past it, ENOSPC, and nothing is lost; once
 * all are removed the page is freed. */
static void test_page_full(void)
{
	struct tfs t;
	static char val[1000];
	char name[32], buf[1000];
	uint64_t f, free0;
	unsigned n = 0;
	int ret = 0;

	REQUIRE(tfs_make(&t, "xattrfull"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	free0 = dg_free_vpns(t.vol);
	memset(val, 'v', sizeof(val));
	while (n < 1000 && ret == 0) {
		snprintf(name, sizeof(name), "user.n%u", n);
		ret = dg_fs_setxattr(t.fs, f, name, val, sizeof(val), 0);
		n += ret == 0;
	}
	/* A run of up to DG_XATTR_MAX_PAGES pages (test_xattr_run.c). */
	CHECK_EQ(ret, -ENOSPC);
	CHECK(n * sizeof(val) > (DG_XATTR_MAX_PAGES - 1) * DG_PAGE_SIZE);
	CHECK(n * sizeof(val) < DG_XATTR_MAX_PAGES * DG_PAGE_SIZE);
	CHECK_EQ(dg_free_vpns(t.vol), free0 - DG_XATTR_MAX_PAGES);
	REQUIRE(tfs_remount(&t));
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "user.n%u", i);
		CHECK_EQ(dg_fs_getxattr(t.fs, f, name, buf, sizeof(buf)),
			 sizeof(val));
		REQUIRE(dg_fs_removexattr(t.fs, f, name) == 0);
	}
	CHECK_EQ(dg_free_vpns(t.vol), free0);
	tfs_done(&t);
}

/* The page check getxattr applies to what it reads. */
static void test_page_check(void)
{
	static uint8_t pg[DG_PAGE_SIZE];
	struct dg_dxattr_hdr *h = (void *)pg;
	struct dg_dxattr *x = (void *)(h + 1);

	memset(pg, 0, sizeof(pg));
	h->count = 1;
	x->namelen = 6;
	x->vallen = 2;
	memcpy(x + 1, "user.aOK", 8);
	h->used = sizeof(*h) + 12;
	CHECK_EQ(dg_xattr_page_check(pg, 1, false), 0);
	CHECK_EQ(dg_xattr_page_get(pg, "user.a", NULL, 0), 2);
	h->used = sizeof(*h) + 16; /* a record short of the bytes used */
	CHECK_EQ(dg_xattr_page_check(pg, 1, false), -EUCLEAN);
	h->used = sizeof(*h) + 12;
	x->vallen = 100; /* past the bytes used */
	CHECK_EQ(dg_xattr_page_check(pg, 1, false), -EUCLEAN);
	x->vallen = 2;
	((char *)(x + 1))[2] = 0; /* a NUL inside the name */
	CHECK_EQ(dg_xattr_page_check(pg, 1, false), -EUCLEAN);
	((char *)(x + 1))[2] = 'e';
	h->used = DG_PAGE_SIZE + 8;
	CHECK_EQ(dg_xattr_page_check(pg, 1, false), -EUCLEAN);
}

/* system.* is the kernel's: only the POSIX ACL names are stored, the
 * rest get EOPNOTSUPP as on ext4 (one stored by an older daxguard can
 * still be removed). */
static void test_system_names(void)
{
	static const uint8_t acl[] = { 2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff,
				       0xff, 0xff, 4, 0, 4, 0, 0xff, 0xff,
				       0xff, 0xff, 0x20, 0, 4, 0, 0xff, 0xff,
				       0xff, 0xff };
	struct tfs t;
	char buf[64];
	uint64_t f;

	REQUIRE(tfs_make(&t, "xattrsys"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	CHECK_EQ(dg_fs_setxattr(t.fs, f, "system.x", "1", 1, 0), -EOPNOTSUPP);
	CHECK_EQ(dg_fs_setxattr(t.fs, f, "system.", "1", 1, 0), -EOPNOTSUPP);
	CHECK_EQ(dg_fs_setxattr(t.fs, f, "system.posix_acl_accessX", "1", 1,
				0), -EOPNOTSUPP);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "system.x", buf, sizeof(buf)),
		 -EOPNOTSUPP);
	CHECK_EQ(dg_fs_removexattr(t.fs, f, "system.x"), -EOPNOTSUPP);
	CHECK_EQ(dg_fs_listxattr(t.fs, f, buf, sizeof(buf)), 0);
	/* The ACL names are stored as before. */
	REQUIRE(dg_fs_setxattr(t.fs, f, "system.posix_acl_access", acl,
			       sizeof(acl), 0) == 0);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "system.posix_acl_access", buf,
				sizeof(buf)), (int)sizeof(acl));
	REQUIRE(dg_fs_setxattr(t.fs, f, "system.posix_acl_default", acl,
			       sizeof(acl), 0) == 0);
	CHECK_EQ(dg_fs_removexattr(t.fs, f, "system.posix_acl_default"), 0);
	/* "systemx" and "user.system.x" are not the namespace. */
	CHECK_EQ(dg_fs_setxattr(t.fs, f, "user.system.x", "1", 1, 0), 0);
	tfs_done(&t);
}

/* The request's routing (xattr_ops.c): a fixed name reads as its value
 * and refuses a change; with POSIX ACLs on, an access ACL sets the mode
 * (and is not stored when the mode says it all); with them off it is a
 * record like any other; user.* names go to the records. */
static void test_routed(void)
{
	/* version 2; user::rw- group::r-- other::--- */
	const uint8_t acl[] = { 2, 0, 0, 0, 0x01, 0, 6, 0, 0, 0, 0, 0,
				0x04, 0, 4, 0, 0, 0, 0, 0, 0x20, 0, 0, 0,
				0, 0, 0, 0 };
	struct dg_cred cr = { .uid = 0, .gid = 0, .fsetid = true,
			      .umask = -1 };
	char where[108] = "", buf[128];
	struct dg_attr a;
	struct tfs t;
	uint64_t f;

	REQUIRE(tfs_make(&t, "xattrrouted"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	REQUIRE(dg_fs_xattr_fix(t.fs, "user.daxguard.socket", where) == 0);
	/* Filled in after: read at each get. */
	strcpy(where, "/run/dg.sock");
	CHECK_EQ(dg_fs_xattr_get(t.fs, f, "user.daxguard.socket", NULL, 0), 12);
	CHECK_EQ(dg_fs_xattr_get(t.fs, f, "user.daxguard.socket", buf, 4),
		 -ERANGE);
	CHECK_EQ(dg_fs_xattr_get(t.fs, f, "user.daxguard.socket", buf,
				 sizeof(buf)), 12);
	CHECK(memcmp(buf, "/run/dg.sock", 12) == 0);
	CHECK_EQ(dg_fs_xattr_set(t.fs, f, "user.daxguard.socket", "x", 1, 0,
				 &cr), -EPERM);
	CHECK_EQ(dg_fs_getxattr(t.fs, f, "user.daxguard.socket", buf,
				sizeof(buf)), -ENODATA);
	for (unsigned i = 1; i < DG_XATTR_FIXED_MAX; i++)
		CHECK_EQ(dg_fs_xattr_fix(t.fs, "user.daxguard.x", where), 0);
	CHECK_EQ(dg_fs_xattr_fix(t.fs, "user.daxguard.y", where), -ENOSPC);

	/* user.*: the records. */
	CHECK_EQ(dg_fs_xattr_set(t.fs, f, "user.a", "v", 1, 0, &cr), 0);
	CHECK_EQ(dg_fs_xattr_get(t.fs, f, "user.a", buf, sizeof(buf)), 1);
	CHECK_EQ(dg_fs_xattr_set(t.fs, f, "system.foo", "v", 1, 0, &cr),
		 -EOPNOTSUPP);

	/* ACLs off: stored as given, the mode untouched. */
	CHECK_EQ(dg_fs_xattr_set(t.fs, f, "system.posix_acl_access", acl,
				 sizeof(acl), 0, &cr), 0);
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	CHECK_EQ(a.mode, 0100644u);
	CHECK_EQ(dg_fs_xattr_get(t.fs, f, "system.posix_acl_access", NULL, 0),
		 (int)sizeof(acl));
	REQUIRE(dg_fs_removexattr(t.fs, f, "system.posix_acl_access") == 0);

	/* ACLs on: the mode follows, the ACL the mode says is not kept. */
	dg_fs_xattr_acl(t.fs, true);
	CHECK_EQ(dg_fs_xattr_set(t.fs, f, "system.posix_acl_access", acl,
				 sizeof(acl), 0, &cr), 0);
	REQUIRE(dg_fs_getattr(t.fs, f, &a) == 0);
	CHECK_EQ(a.mode, 0100640u);
	CHECK_EQ(dg_fs_xattr_get(t.fs, f, "system.posix_acl_access", NULL, 0),
		 -ENODATA);
	/* A default ACL is a directory's only. */
	CHECK_EQ(dg_fs_xattr_set(t.fs, f, "system.posix_acl_default", acl,
				 sizeof(acl), 0, &cr), -EACCES);
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "set_get_list_remove", test_set_get_list_remove },
		{ "flags", test_flags },
		{ "page_full", test_page_full },
		{ "page_check", test_page_check },
		{ "system_names", test_system_names },
		{ "routed", test_routed },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
