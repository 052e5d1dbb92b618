// SPDX-License-Identifier: MIT
/* test_acl.c -- the ACL rules of acl.c against fs/posix_acl.c's */
#include <sys/stat.h>

#include "harness.h"
#include "fsys_i.h"

struct ent {
	uint16_t tag, perm;
	uint32_t id;
};

/* An ACL in xattr form: version 2, then the entries. */
struct acl {
	uint32_t version;
	struct ent e[6];
};

#define UO 0x01
#define U  0x02
#define GO 0x04
#define G  0x08
#define M  0x10
#define O  0x20

static size_t sz(unsigned n)
{
	return 4 + n * sizeof(struct ent);
}

static void test_check(void)
{
	struct acl a = { 2, { { UO, 6, 0 }, { U, 7, 5 }, { U, 4, 9 },
			      { GO, 4, 0 }, { M, 7, 0 }, { O, 4, 0 } } };

	CHECK_EQ(dg_acl_check(&a, sz(6)), 0);
	a.e[2].id = 5;			/* same user twice */
	CHECK_EQ(dg_acl_check(&a, sz(6)), -EINVAL);
	a.e[2].id = 9;
	a.e[4].tag = GO;		/* no mask with named entries */
	CHECK_EQ(dg_acl_check(&a, sz(6)), -EINVAL);
	a.e[4].tag = M;
	a.e[0].perm = 8;
	CHECK_EQ(dg_acl_check(&a, sz(6)), -EINVAL);
	a.e[0].perm = 6;
	CHECK_EQ(dg_acl_check(&a, sz(6) - 1), -EINVAL);
	CHECK_EQ(dg_acl_check(&a, 4), -EINVAL);
	a.version = 1;
	CHECK_EQ(dg_acl_check(&a, sz(6)), -EOPNOTSUPP);
}

static void test_equiv_and_chmod(void)
{
	struct acl base = { 2, { { UO, 7, 0 }, { GO, 5, 0 }, { O, 0, 0 } } };
	struct acl a = { 2, { { UO, 6, 0 }, { U, 7, 5 }, { GO, 4, 0 },
			      { M, 7, 0 }, { O, 4, 0 } } };
	uint32_t mode = S_IFREG | S_ISGID | 0777;

	CHECK_EQ(dg_acl_equiv_mode(&base, sz(3), &mode), 0);
	CHECK_EQ(mode, S_IFREG | S_ISGID | 0750u);
	/* The mask is the group class: -rw-rwxr-- */
	CHECK_EQ(dg_acl_equiv_mode(&a, sz(5), &mode), 1);
	CHECK_EQ(mode, S_IFREG | S_ISGID | 0674u);
	/* chmod 0641: owner, mask and other follow; named and group stay */
	dg_acl_chmod(&a, sz(5), 0641);
	CHECK_EQ(a.e[0].perm, 6);
	CHECK_EQ(a.e[1].perm, 7);
	CHECK_EQ(a.e[2].perm, 4);
	CHECK_EQ(a.e[3].perm, 4);
	CHECK_EQ(a.e[4].perm, 1);
	/* Without a mask, the group entry follows. */
	dg_acl_chmod(&base, sz(3), 0123);
	CHECK_EQ(base.e[0].perm, 1);
	CHECK_EQ(base.e[1].perm, 2);
	CHECK_EQ(base.e[2].perm, 3);
}

static void test_create_masq(void)
{
	struct acl d = { 2, { { UO, 7, 0 }, { U, 7, 5 }, { GO, 5, 0 },
			      { M, 7, 0 }, { O, 0, 0 } } };
	struct acl b = { 2, { { UO, 7, 0 }, { GO, 7, 0 }, { O, 5, 0 } } };
	uint32_t mode = S_IFREG | 0666;

	/* open(O_CREAT, 0666) under that default ACL: -rw-rw----+ */
	CHECK_EQ(dg_acl_create_masq(&d, sz(5), &mode), 1);
	CHECK_EQ(mode, S_IFREG | 0660u);
	CHECK_EQ(d.e[0].perm, 6);
	CHECK_EQ(d.e[1].perm, 7);
	CHECK_EQ(d.e[3].perm, 6);
	CHECK_EQ(d.e[4].perm, 0);
	/* Base entries only: the mode says it all (no ACL kept). */
	mode = S_IFDIR | 0755;
	CHECK_EQ(dg_acl_create_masq(&b, sz(3), &mode), 0);
	CHECK_EQ(mode, S_IFDIR | 0755u);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "check", test_check },
		{ "equiv_and_chmod", test_equiv_and_chmod },
		{ "create_masq", test_create_masq },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
