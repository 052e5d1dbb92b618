// SPDX-License-Identifier: MIT
/* test_inode.c -- inode records: attributes on the media, slot reuse
 * with a new generation, orphans freed at the next open, the record
 * check the mount applies */
#include <stdio.h>
#include <sys/stat.h>

#include "fsys_i.h"
#include "tfs.h"

static void test_attributes_persist(void)
{
	struct tfs t;
	struct dg_attr a, b;
	struct dg_setattr sa = { 0 };
	uint64_t f;

	REQUIRE(tfs_make(&t, "inodeattr"));
	REQUIRE(dg_fs_mknod(t.fs, 1, "dev", 020640, 0x0405, 7, 8, &a) == 0);
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	sa.valid = DG_SET_MODE | DG_SET_UID | DG_SET_GID | DG_SET_MTIME;
	sa.mode = 0600;
	sa.uid = 1234;
	sa.gid = 5678;
	sa.mtime.tv_sec = 1000000000;
	sa.mtime.tv_nsec = 123456789;
	REQUIRE(dg_fs_setattr(t.fs, f, &sa, &b) == 0);
	REQUIRE(tfs_remount(&t));
	REQUIRE(dg_fs_getattr(t.fs, a.ino, &a) == 0);
	CHECK_EQ(a.mode, 020640);
	CHECK_EQ(a.rdev, 0x0405);
	CHECK_EQ(a.uid, 7);
	CHECK_EQ(a.gid, 8);
	REQUIRE(dg_fs_getattr(t.fs, f, &b) == 0);
	CHECK_EQ(b.mode, 0100600);
	CHECK_EQ(b.uid, 1234);
	CHECK_EQ(b.gid, 5678);
	CHECK_EQ(b.mtime.tv_sec, 1000000000);
	CHECK_EQ(b.mtime.tv_nsec, 123456789);
	tfs_done(&t);
}

/* A freed slot is handed out again with a new generation, so an old
 * file handle cannot reach the new file. */
static void test_generation_on_reuse(void)
{
	struct tfs t;
	struct dg_attr a, b;

	REQUIRE(tfs_make(&t, "inodegen"));
	REQUIRE(dg_fs_mknod(t.fs, 1, "a", 0100644, 0, 0, 0, &a) == 0);
	dg_fs_forget(t.fs, a.ino, 1);
	REQUIRE(dg_fs_unlink(t.fs, 1, "a") == 0);
	REQUIRE(dg_fs_mknod(t.fs, 1, "b", 0100644, 0, 0, 0, &b) == 0);
	CHECK_EQ(b.ino, a.ino);
	CHECK(b.generation != a.generation);
	REQUIRE(tfs_remount(&t));
	REQUIRE(dg_fs_getattr(t.fs, b.ino, &a) == 0);
	CHECK_EQ(a.generation, b.generation);
	tfs_done(&t);
}

/* Files created one after another get inodes on different pages of the
 * table (each allocating write of a file rewrites its inode's page,
 * under its row's lock), every slot of a chunk is handed out once
 * before a new chunk is added, and a freed slot is taken again first. */
static void test_spread_over_pages(void)
{
	enum { N = DG_INODES_PER_CHUNK - 2 };	/* ino 0 and the root */
	static bool used[DG_INODES_PER_CHUNK];
	struct tfs t;
	struct dg_attr a, b;
	uint64_t prev = DG_ROOT_INO, freed = 0;
	unsigned same_page = 0, dup = 0, outside = 0;

	REQUIRE(tfs_make_size(&t, "inodespread", 32ull << 20));
	used[DG_ROOT_INO] = true;
	for (unsigned i = 0; i < N; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", i);
		REQUIRE(dg_fs_mknod(t.fs, 1, name, 0100644, 0, 0, 0, &a) == 0);
		dg_fs_forget(t.fs, a.ino, 1);
		if (a.ino >= DG_INODES_PER_CHUNK) {
			outside++;
			continue;
		}
		dup += used[a.ino];
		used[a.ino] = true;
		same_page += a.ino / DG_INODES_PER_PAGE ==
			     prev / DG_INODES_PER_PAGE;
		prev = a.ino;
		if (i == 100)
			freed = a.ino;
	}
	CHECK_EQ(outside, 0);	/* one chunk holds them all */
	CHECK_EQ(dup, 0);
	/* A page's slots come round once every 64 inodes. */
	CHECK(same_page <= N / DG_ITABLE_CHUNK_PAGES);
	REQUIRE(dg_fs_unlink(t.fs, 1, "f100") == 0);
	REQUIRE(dg_fs_mknod(t.fs, 1, "again", 0100644, 0, 0, 0, &b) == 0);
	CHECK_EQ(b.ino, freed);
	/* The chunk is full: the next one starts a second chunk. */
	REQUIRE(dg_fs_mknod(t.fs, 1, "next", 0100644, 0, 0, 0, &b) == 0);
	CHECK(b.ino >= DG_INODES_PER_CHUNK);
	tfs_done(&t);
}

/* A file unlinked while open survives until its release; if the volume
 * closes first (a crash), the next open frees it. */
static void test_orphan(void)
{
	struct tfs t;
	struct dg_attr a;
	uint64_t f, free0, free1;
	static uint8_t buf[8 * DG_PAGE_SIZE];

	REQUIRE(tfs_make(&t, "inodeorphan"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	REQUIRE(dg_fs_write(t.fs, f, 0, buf, sizeof(buf)) == sizeof(buf));
	free0 = dg_free_vpns(t.vol);
	REQUIRE(dg_fs_open_ino(t.fs, f, false, NULL) == 0);
	REQUIRE(dg_fs_unlink(t.fs, 1, "f") == 0);
	CHECK(dg_fs_getattr(t.fs, f, &a) == 0); /* still open */
	CHECK_EQ(dg_free_vpns(t.vol), free0);
	REQUIRE(tfs_remount(&t)); /* no release: as after a crash */
	CHECK_EQ(dg_fs_getattr(t.fs, f, &a), -ENOENT);
	free1 = dg_free_vpns(t.vol);
	CHECK(free1 >= free0 + 8);
	tfs_done(&t);
}

/* The record check the mount applies to every slot in use. */
static void test_record_check(void)
{
	struct dg_dinode d = { 0 };
	const uint32_t ok[] = { S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO, S_IFSOCK,
				S_IFCHR, S_IFBLK };

	for (unsigned i = 0; i < 7; i++) {
		d.mode = ok[i] | 0644;
		CHECK_EQ(dg_dinode_check(NULL, 2, &d), 0);
	}
	d.mode = 0170644; /* no such type */
	CHECK_EQ(dg_dinode_check(NULL, 2, &d), -EUCLEAN);
	d.mode = 0644;
	CHECK_EQ(dg_dinode_check(NULL, 2, &d), -EUCLEAN);
	d.mode = S_IFREG | 0644;
	d.nextents = (1u << 26) + 1;
	CHECK_EQ(dg_dinode_check(NULL, 2, &d), -EUCLEAN);
}

/*
 * The search for a free inode slot does not walk the live inodes. With
 * 8 chunks of files, each round frees an old inode (the search hint moves
 * back to it) and creates two: the first takes the freed slot, the
 * second must find one past every live inode. Slots looked at per create
 * stay bounded by the chunks plus one chunk (full chunks are stepped over
 * whole); walking slot by slot it was some 4,000 per create here, and up
 * to 480,000 on a full inode table.
 */
/* A new file the kernel has forgotten, as after its close: an unlink
 * frees its slot at once. */
static bool file_forgotten(struct tfs *t, uint64_t dir, const char *name)
{
	uint64_t ino = tfs_file(t, dir, name);

	if (ino)
		dg_fs_forget(t->fs, ino, 1);
	return ino != 0;
}

static void test_free_slot_search(void)
{
	enum { FILES = 8 * DG_INODES_PER_CHUNK, ROUNDS = 300 };
	struct tfs t;
	char name[32];
	uint64_t d, s0;
	double per;

	REQUIRE(tfs_make_size(&t, "inosearch", 32ull << 20));
	d = tfs_dir(&t, 1, "d");
	REQUIRE(d);
	for (unsigned i = 0; i < FILES; i++) {
		snprintf(name, sizeof(name), "f%05u", i);
		REQUIRE(file_forgotten(&t, d, name));
	}
	s0 = t.fs->ino_scanned;
	for (unsigned r = 0; r < ROUNDS; r++) {
		snprintf(name, sizeof(name), "f%05u", r);
		REQUIRE(dg_fs_unlink(t.fs, d, name) == 0);
		snprintf(name, sizeof(name), "a%05u", r);
		REQUIRE(file_forgotten(&t, d, name));
		snprintf(name, sizeof(name), "b%05u", r);
		REQUIRE(file_forgotten(&t, d, name));
	}
	per = (double)(t.fs->ino_scanned - s0) / (2.0 * ROUNDS);
	fprintf(stderr, "slots looked at per create: %.1f\n", per);
	/* At most the chunks plus one chunk's slots; 81 here. */
	CHECK(per < DG_INODES_PER_CHUNK / 2);
	/* Every inode is where the table says, after a remount too. */
	REQUIRE(tfs_remount(&t));
	CHECK(tfs_lookup(&t, d, "a00299") > 0);
	CHECK(tfs_lookup(&t, d, "b00299") > 0);
	CHECK(tfs_lookup(&t, d, "f00300") > 0);
	CHECK_EQ(tfs_lookup(&t, d, "f00299"), -ENOENT);
	CHECK(tfs_file(&t, d, "after-remount") > 0);
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "attributes_persist", test_attributes_persist },
		{ "generation_on_reuse", test_generation_on_reuse },
		{ "spread_over_pages", test_spread_over_pages },
		{ "orphan", test_orphan },
		{ "record_check", test_record_check },
		{ "free_slot_search", test_free_slot_search },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
