// SPDX-License-Identifier: MIT
/* test_visible.c -- who could stat a path (visible.c): the kernel's
 * permission rules for another user, modes and ACLs, and the walk */
#include <sys/stat.h>

#include "tfs.h"

struct ent {
	uint16_t tag, perm;
	uint32_t id;
};

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
#define X  DG_MAY_EXEC

static size_t sz(unsigned n)
{
	return 4 + n * sizeof(struct ent);
}

static void test_modes(void)
{
	uint32_t g[] = { 50 };
	struct dg_who owner = { 10, 20, NULL, 0 }, grp = { 11, 21, g, 1 };
	struct dg_who other = { 12, 22, NULL, 0 }, root = { 0, 0, NULL, 0 };

	CHECK(dg_who_may(&owner, 040700, 10, 50, NULL, 0, X));
	CHECK(!dg_who_may(&grp, 040700, 10, 50, NULL, 0, X));
	CHECK(!dg_who_may(&other, 040700, 10, 50, NULL, 0, X));
	CHECK(dg_who_may(&root, 040700, 10, 50, NULL, 0, X));
	/* The owner class decides for the owner, even when others may. */
	CHECK(!dg_who_may(&owner, 040077, 10, 50, NULL, 0, X));
	/* A supplementary group counts; the group class decides. */
	CHECK(dg_who_may(&grp, 040710, 10, 50, NULL, 0, X));
	CHECK(!dg_who_may(&grp, 040701, 10, 50, NULL, 0, X));
	CHECK(dg_who_may(&other, 040701, 10, 50, NULL, 0, X));
	CHECK(dg_who_may(&other, 040755, 10, 50, NULL, 0,
			 DG_MAY_READ | DG_MAY_EXEC));
	CHECK(!dg_who_may(&other, 040755, 10, 50, NULL, 0, DG_MAY_WRITE));
}

static void test_acls(void)
{
	uint32_t g[] = { 50 };
	struct dg_who named = { 12, 22, NULL, 0 }, grp = { 11, 21, g, 1 };
	struct dg_who other = { 13, 23, NULL, 0 };
	/* user::rwx user:12:r-x group::--- mask::r-x other::--- */
	struct acl a = { 2, { { UO, 7, 0 }, { U, 5, 12 }, { GO, 0, 0 },
			      { M, 5, 0 }, { O, 0, 0 } } };
	/* user::rwx user:12:--- group::r-x mask::r-x other::r-x */
	struct acl b = { 2, { { UO, 7, 0 }, { U, 0, 12 }, { GO, 5, 0 },
			      { M, 5, 0 }, { O, 5, 0 } } };
	/* user::rwx user:12:rwx group::r-x mask::r-- other::--- */
	struct acl c = { 2, { { UO, 7, 0 }, { U, 7, 12 }, { GO, 5, 0 },
			      { M, 4, 0 }, { O, 0, 0 } } };

	/* Mode 0750 (the group class is the mask): a named user gets in
	 * through the ACL where the mode alone would say "other". */
	CHECK(dg_who_may(&named, 040750, 10, 50, &a, sz(5), X));
	CHECK(!dg_who_may(&grp, 040750, 10, 50, &a, sz(5), X));
	CHECK(!dg_who_may(&other, 040750, 10, 50, &a, sz(5), X));
	/* A named entry with no rights keeps its user out though others
	 * may: the mode's other bits would let it in. */
	CHECK(!dg_who_may(&named, 040755, 10, 50, &b, sz(5), X));
	CHECK(dg_who_may(&other, 040755, 10, 50, &b, sz(5), X));
	CHECK(dg_who_may(&grp, 040755, 10, 50, &b, sz(5), X));
	/* The mask limits a named user. */
	CHECK(!dg_who_may(&named, 040740, 10, 50, &c, sz(5), X));
	CHECK(dg_who_may(&named, 040740, 10, 50, &c, sz(5), DG_MAY_READ));
	/* A group member the group entries refuse is not "other". */
	b.e[2].perm = 0;
	b.e[3].perm = 0;
	CHECK(!dg_who_may(&grp, 040705, 10, 50, &b, sz(5), X));
}

static void test_walk(void)
{
	struct tfs t;
	struct dg_setattr sa = { .valid = DG_SET_MODE | DG_SET_UID };
	struct dg_attr at;
	struct dg_who other = { 12, 22, NULL, 0 }, owner = { 10, 20, NULL, 0 };
	uint64_t priv, pub;

	REQUIRE(tfs_make(&t, "visible"));
	priv = tfs_dir(&t, 1, "private");
	pub = tfs_dir(&t, 1, "pub");
	REQUIRE(priv && pub);
	REQUIRE(tfs_file(&t, priv, "offer-letter.pdf"));
	REQUIRE(tfs_file(&t, pub, "open.bin"));
	REQUIRE(tfs_file(&t, pub, "a\nb"));
	sa.mode = 040700;
	sa.uid = 10;
	REQUIRE(dg_fs_setattr(t.fs, priv, &sa, &at) == 0);
	CHECK(dg_fs_may_stat(t.fs, "/pub/open.bin", &other, false));
	CHECK(dg_fs_may_stat(t.fs, "/pub/a\nb", &other, false));
	CHECK(dg_fs_may_stat(t.fs, "/private", &other, false));
	CHECK(!dg_fs_may_stat(t.fs, "/private/offer-letter.pdf", &other,
			      false));
	CHECK(dg_fs_may_stat(t.fs, "/private/offer-letter.pdf", &owner,
			     false));
	/* Only what is there now, by a path from the root. */
	CHECK(!dg_fs_may_stat(t.fs, "/pub/gone", &other, false));
	CHECK(!dg_fs_may_stat(t.fs, "?ino7/x", &other, false));
	CHECK(!dg_fs_may_stat(t.fs, "/pub/../private/offer-letter.pdf",
			      &other, false));
	CHECK(!dg_fs_may_stat(t.fs, "/pub/open.bin/x", &other, false));
	/* The volume's root itself must let the caller pass. */
	sa.valid = DG_SET_MODE;
	sa.mode = 040700;
	REQUIRE(dg_fs_setattr(t.fs, 1, &sa, &at) == 0);
	CHECK(!dg_fs_may_stat(t.fs, "/pub/open.bin", &other, false));
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "modes", test_modes },
		{ "acls", test_acls },
		{ "walk", test_walk },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
