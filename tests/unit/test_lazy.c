// SPDX-License-Identifier: MIT
/* test_lazy.c -- what is in core follows what is in use (issue 34): a
 * mount reads no directory, a lookup reads the one it searches, a
 * forget lets it go, and what needs a directory's names reads them;
 * a lost page of one is found at that read, not at mount */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fsys_i.h"
#include "tfs.h"

#define NDIRS 40

static struct dg_fs_cache counts(struct tfs *t)
{
	struct dg_fs_cache c;

	dg_fs_cache_counts(t->fs, &c);
	return c;
}

static void make_tree(struct tfs *t, uint64_t *dirs)
{
	char name[32];

	for (unsigned i = 0; i < NDIRS; i++) {
		snprintf(name, sizeof(name), "d%u", i);
		dirs[i] = tfs_dir(t, 1, name);
		REQUIRE(dirs[i]);
		REQUIRE(tfs_file(t, dirs[i], "a"));
		REQUIRE(tfs_file(t, dirs[i], "b"));
	}
}

/* The mount reads no directory; each lookup reads only the directory it
 * searches; the kernel's forget lets it go, and it reads back whole. */
static void test_loaded_on_use(void)
{
	struct tfs t;
	uint64_t dirs[NDIRS];
	struct dg_attr a, b;

	REQUIRE(tfs_make(&t, "lazy1"));
	make_tree(&t, dirs);
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(counts(&t).dirs_cached, 0);
	CHECK_EQ(counts(&t).dirs_loaded, 0);
	/* A lookup in the root reads the root, not the directory found. */
	REQUIRE(dg_fs_lookup(t.fs, 1, "d7", &a) == 0);
	CHECK_EQ(a.ino, dirs[7]);
	CHECK_EQ(counts(&t).dirs_cached, 1);
	/* A lookup in d7 reads d7, and only it. */
	REQUIRE(dg_fs_lookup(t.fs, a.ino, "b", &b) == 0);
	CHECK_EQ(counts(&t).dirs_cached, 2);
	CHECK_EQ(counts(&t).dirs_loaded, 2);
	dg_fs_forget(t.fs, b.ino, 1);
	/* The kernel forgets d7: its index goes; the root's stays. */
	dg_fs_forget(t.fs, a.ino, 1);
	CHECK_EQ(counts(&t).dirs_cached, 1);
	/* Used again, it is read again, with the same names. */
	CHECK_EQ(tfs_lookup(&t, dirs[7], "b"), (int64_t)b.ino);
	CHECK_EQ(tfs_lookup(&t, dirs[7], "c"), -ENOENT);
	CHECK_EQ(counts(&t).dirs_loaded, 3);
	tfs_done(&t);
}

/* What judges a directory it does not search reads it first: rmdir and
 * rename over a directory not in core see it is not empty; a path for
 * a log message reads the parent and keeps nothing. */
static void test_judged_after_load(void)
{
	struct tfs t;
	uint64_t dirs[NDIRS], f;
	char path[256];

	REQUIRE(tfs_make(&t, "lazy2"));
	make_tree(&t, dirs);
	f = (uint64_t)tfs_lookup(&t, dirs[3], "a");
	REQUIRE(tfs_dir(&t, 1, "empty"));
	REQUIRE(tfs_remount(&t));
	CHECK_EQ(dg_fs_rmdir(t.fs, 1, "d1"), -ENOTEMPTY);
	CHECK_EQ(dg_fs_rename(t.fs, 1, "empty", 1, "d2", 0), -ENOTEMPTY);
	CHECK_EQ(dg_fs_rename(t.fs, 1, "d4", 1, "empty", 0), 0);
	CHECK_EQ(tfs_lookup(&t, 1, "empty"), (int64_t)dirs[4]);
	CHECK_EQ(tfs_lookup(&t, dirs[4], "a") > 0, true);
	REQUIRE(tfs_remount(&t));
	dg_fs_path(t.fs, f, path, sizeof(path));
	CHECK(strcmp(path, "/d3/a") == 0);
	CHECK_EQ(counts(&t).dirs_cached, 0);
	tfs_done(&t);
}

static void fill_name(char *name, size_t len, unsigned i)
{
	snprintf(name, len, "a-rather-long-name-to-fill-pages-%04u", i);
}

/* Beyond parity, found by the next open: the page and its row's parity
 * page junk on their devices (the filesystem closed first, so nothing
 * of it is written after). */
static void lose_page(struct tfs *t, uint64_t vpn)
{
	dg_fs_close(t->fs);
	t->fs = NULL;
	tvol_lose_page(&t->tv, t->vol, vpn);
	dg_vol_close(t->vol);
	t->vol = tvol_open(&t->tv, 0);
}

/* A directory page lost beyond parity: the mount, which reads no
 * directory, serves on and knows nothing yet; the first lookup in the
 * directory reads it, finds the page lost and serves the directory as
 * damaged (what it still has, EIO for the rest), as the mount did. */
static void test_lost_page_found_at_use(void)
{
	struct tfs t;
	struct dg_fs_damage dmg;
	struct dg_attr a;
	char name[64];
	uint64_t d, vpn = 0, run;

	REQUIRE(tfs_make_no_zone(&t, "lazy3"));
	d = tfs_dir(&t, 1, "d");
	REQUIRE(d);
	for (unsigned i = 0; i < 300; i++) {
		fill_name(name, sizeof(name), i);
		REQUIRE(tfs_file(&t, d, name));
	}
	REQUIRE(dg_inode_get(t.fs, d)->d.size >= 3 * DG_PAGE_SIZE);
	dg_ext_lookup(dg_inode_get(t.fs, d), 1, &vpn, &run);
	REQUIRE(vpn);
	lose_page(&t, vpn);
	REQUIRE(t.vol && dg_fs_open(t.vol, &t.fs) == 0);
	dg_fs_get_damage(t.fs, &dmg);
	CHECK_EQ(dmg.inodes, 0);
	fill_name(name, sizeof(name), 0);	/* on page 0 */
	CHECK(tfs_lookup(&t, d, name) > 0);
	CHECK_EQ(tfs_lookup(&t, d, "not-there"), -EIO);
	CHECK_EQ(dg_fs_mknod(t.fs, d, "new", 0100644, 0, 0, 0, &a), -EIO);
	dg_fs_get_damage(t.fs, &dmg);
	CHECK_EQ(dmg.inodes, 1);
	tfs_done(&t);
}

static void count_reset(void *arg, uint64_t vpn)
{
	(void)vpn;
	++*(unsigned *)arg;
}

static int resolve_fs(void *fs, struct dg_lost_page *lp, unsigned n)
{
	return dg_fs_resolve_owners(fs, lp, n);
}

/* The event the engine posts for a data page found lost. */
static struct dg_fault_event lost_event(struct dg_vol *vol, uint64_t vpn)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);

	return (struct dg_fault_event){ .kind = DG_FAULT_UNRECOVERABLE,
					.what = DG_WHAT_DATA, .dev = l.dev,
					.row = l.row };
}

/*
 * A lost data page of a file whose inode is not in core: the registry
 * of lost pages (lost_reg.c) is told "not known", never "no file", so
 * the page is never reset as free (the file reads EIO, never zeros);
 * the thorough look (owner_scan.c) streams the inode table off the
 * media and names the file. A metadata page in use is not known either,
 * and the look drops it unnamed, still not reset.
 */
static void test_lost_page_of_file_not_in_core(void)
{
	struct tfs t;
	struct dg_fault_event ev;
	struct dg_lost_page *l, lp[2];
	uint8_t data[3 * DG_PAGE_SIZE];
	uint8_t *pages = aligned_alloc(DG_PAGE_SIZE, 4 * DG_PAGE_SIZE);
	const void *got;
	uint64_t f[20], vpn = 0, run, meta;
	char name[32];
	unsigned n;

	REQUIRE(pages);
	REQUIRE(tfs_make_no_zone(&t, "lazy4"));
	for (unsigned i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		f[i] = tfs_file(&t, 1, name);
		REQUIRE(f[i]);
		memset(data, 'a' + (int)i, sizeof(data));
		REQUIRE(dg_fs_write(t.fs, f[i], 0, data, sizeof(data)) ==
			(ssize_t)sizeof(data));
	}
	dg_ext_lookup(dg_inode_get(t.fs, f[13]), 2, &vpn, &run);
	REQUIRE(vpn);
	meta = dg_itable_chunk(t.fs, 0);
	lose_page(&t, vpn);
	REQUIRE(t.vol && dg_fs_open(t.vol, &t.fs) == 0);
	/* Not in core after the mount: inodes are read at first use. */
	CHECK(dg_icache_peek(t.fs, f[13]) == NULL);
	ev = lost_event(t.vol, vpn);
	CHECK_EQ(dg_vol_lost_found(t.vol, &ev, true), 2);
	l = dg_vol_lost_list(t.vol, &n);
	CHECK(n == 0 && !l);
	CHECK_EQ(dg_vol_lost_resolve(t.vol, resolve_fs, t.fs), 1);
	l = dg_vol_lost_list(t.vol, &n);
	REQUIRE(n == 1 && l);
	CHECK_EQ(l[0].vpn, vpn);
	CHECK_EQ(l[0].ino, f[13]);
	CHECK_EQ(l[0].fpage, 2);
	free(l);
	/* Never reset: the page reads EIO, its neighbours their bytes. */
	CHECK_EQ(dg_fs_read(t.fs, f[13], 2 * DG_PAGE_SIZE, DG_PAGE_SIZE,
			    pages, &got), -EIO);
	REQUIRE(dg_fs_read(t.fs, f[13], 0, DG_PAGE_SIZE, pages, &got) ==
		DG_PAGE_SIZE);
	CHECK(((const uint8_t *)got)[0] == 'a' + 13);
	/* The media half alone places every file's page. */
	lp[0] = (struct dg_lost_page){ .vpn = vpn };
	lp[1] = (struct dg_lost_page){ .vpn = meta };
	pthread_rwlock_rdlock(&t.fs->lock);
	CHECK_EQ(dg_fs_owners_on_media(t.fs, lp, 2, false), 0);
	pthread_rwlock_unlock(&t.fs->lock);
	CHECK_EQ(lp[0].ino, f[13]);
	CHECK_EQ(lp[0].fpage, 2);
	CHECK_EQ(lp[1].ino, 0);
	/* An inode table page in use: not known, then dropped unnamed. */
	ev = lost_event(t.vol, meta);
	CHECK_EQ(dg_vol_lost_found(t.vol, &ev, true), 2);
	CHECK_EQ(dg_vol_lost_resolve(t.vol, resolve_fs, t.fs), 0);
	l = dg_vol_lost_list(t.vol, &n);
	CHECK(n == 1 && l);
	free(l);
	/* The unmount's last look resets neither: both are in use. */
	n = 0;
	dg_vol_lost_reset_gone(t.vol, count_reset, &n);
	CHECK_EQ(n, 0);
	CHECK_EQ(dg_fs_read(t.fs, f[13], 2 * DG_PAGE_SIZE, DG_PAGE_SIZE,
			    pages, &got), -EIO);
	free(pages);
	tfs_done(&t);
}

/* A writer growing a file's extent map, page by page (every other
 * page: each write a new extent, the leaf reallocated now and then). */
struct grower {
	struct dg_fs *fs;
	uint64_t ino;
	_Atomic bool done;
};

static void *grow(void *arg)
{
	struct grower *g = arg;
	uint8_t page[DG_PAGE_SIZE];

	memset(page, 'g', sizeof(page));
	for (uint64_t i = 0; i < 600; i++)
		if (dg_fs_write(g->fs, g->ino, 2 * i * DG_PAGE_SIZE, page,
				sizeof(page)) != (ssize_t)sizeof(page))
			break;
	g->done = true;
	return NULL;
}

/*
 * The owner lookups (dg_fs_owner() for the registry, under its lock;
 * dg_fs_resolve_owners() outside it) read every file's extents while
 * files are being written: under each file's own lock, or the leaf a
 * write reallocates is read after it is freed (ThreadSanitizer names
 * the race, MALLOC_PERTURB_ the bytes). Each answers for a page of a
 * file not being written, every time.
 */
static void test_owner_while_writing(void)
{
	struct tfs t;
	struct grower g = { 0 };
	struct dg_lost_page lp;
	uint8_t data[DG_PAGE_SIZE];
	uint64_t still, vpn = 0, run, ino, fpage;
	pthread_t th;
	unsigned asked = 0;

	REQUIRE(tfs_make(&t, "lazy5"));
	/* The file being written first, so every lookup reads its map. */
	g.ino = tfs_file(&t, 1, "grows");
	still = tfs_file(&t, 1, "still");
	REQUIRE(still && g.ino);
	memset(data, 's', sizeof(data));
	REQUIRE(dg_fs_write(t.fs, still, 0, data, sizeof(data)) ==
		(ssize_t)sizeof(data));
	dg_ext_lookup(dg_inode_get(t.fs, still), 0, &vpn, &run);
	REQUIRE(vpn);
	g.fs = t.fs;
	REQUIRE(pthread_create(&th, NULL, grow, &g) == 0);
	while (!g.done || asked < 50) {
		int r = dg_fs_owner(t.fs, vpn, &ino, &fpage);

		/* Found, or the writer's file busy: never "no file". */
		CHECK(r == 0 || r == -EAGAIN);
		if (!r)
			CHECK(ino == still && fpage == 0);
		lp = (struct dg_lost_page){ .vpn = vpn };
		CHECK_EQ(dg_fs_resolve_owners(t.fs, &lp, 1), 0);
		CHECK(lp.ino == still && lp.fpage == 0);
		asked++;
	}
	pthread_join(th, NULL);
	tfs_done(&t);
}

/* The vpn of file page fpage of ino (loaded for it), 0 for a hole. */
static uint64_t vpn_of(struct tfs *t, uint64_t ino, uint64_t fpage)
{
	struct dg_inode *ip;
	uint64_t vpn = 0, run;

	pthread_rwlock_rdlock(&t->fs->lock);
	ip = dg_inode_get(t->fs, ino);
	if (ip)
		dg_ext_lookup(ip, fpage, &vpn, &run);
	pthread_rwlock_unlock(&t->fs->lock);
	return vpn;
}

static bool in_core(struct tfs *t, uint64_t ino)
{
	bool in;

	pthread_mutex_lock(&t->fs->ino_lock);
	in = dg_icache_peek(t->fs, ino) != NULL;
	pthread_mutex_unlock(&t->fs->ino_lock);
	return in;
}

/* What a fault report recalled is checked against the file now
 * (dg_fs_owner_holds(), lost_pages.c): true only for the inode that
 * maps that vpn at that file page, asked of the inode in core, loaded
 * when it is not; false once the file gave the page up (truncated,
 * deleted). */
static void test_owner_holds(void)
{
	struct dg_setattr sa = { .valid = DG_SET_SIZE, .size = DG_PAGE_SIZE };
	uint8_t data[3 * DG_PAGE_SIZE];
	struct dg_attr a;
	uint64_t f[20], v19, v18;
	struct tfs t;
	char name[32];

	REQUIRE(tfs_make(&t, "lazy6"));
	for (unsigned i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		f[i] = tfs_file(&t, 1, name);
		REQUIRE(f[i]);
		memset(data, 'a' + (int)i, sizeof(data));
		REQUIRE(dg_fs_write(t.fs, f[i], 0, data, sizeof(data)) ==
			(ssize_t)sizeof(data));
	}
	v19 = vpn_of(&t, f[19], 2);
	v18 = vpn_of(&t, f[18], 2);
	REQUIRE(v19 && v18);
	REQUIRE(tfs_remount(&t));
	REQUIRE(!in_core(&t, f[19]) && !in_core(&t, f[18]));
	/* Out of core: loaded for the answer. */
	CHECK(dg_fs_owner_holds(t.fs, f[19], v19, 2));
	CHECK(!dg_fs_owner_holds(t.fs, f[19], v19, 1));
	CHECK(!dg_fs_owner_holds(t.fs, f[18], v19, 2));
	CHECK(!dg_fs_owner_holds(t.fs, 0, v19, 2));
	CHECK(!dg_fs_owner_holds(t.fs, UINT64_MAX / 2, v19, 2));
	CHECK(in_core(&t, f[19]) && in_core(&t, f[18]));
	/* Truncated: in core, then off the media. */
	REQUIRE(dg_fs_setattr(t.fs, f[19], &sa, &a) == 0);
	CHECK(in_core(&t, f[19]));
	CHECK(!dg_fs_owner_holds(t.fs, f[19], v19, 2));
	REQUIRE(tfs_remount(&t));
	CHECK(!dg_fs_owner_holds(t.fs, f[19], v19, 2));
	/* Deleted. */
	CHECK(dg_fs_owner_holds(t.fs, f[18], v18, 2));
	REQUIRE(dg_fs_unlink(t.fs, 1, "f18") == 0);
	CHECK(!dg_fs_owner_holds(t.fs, f[18], v18, 2));
	REQUIRE(tfs_remount(&t));
	CHECK(!dg_fs_owner_holds(t.fs, f[18], v18, 2));
	tfs_done(&t);
}

#define MANY 600	/* extents: an inline map and 4 chain pages */

/*
 * A fault storm recalls the same file for event after event: each
 * check of a file out of core used to read its record and walk its
 * whole extent chain again (milliseconds for a million extents, under
 * the faults lock). The first check loads the file, its table page
 * once (inode_loads); every later one, for any page, reads nothing
 * more and answers from core, right for every page.
 */
static void test_owner_holds_many_extents(void)
{
	static uint64_t v[MANY];
	uint8_t page[DG_PAGE_SIZE];
	uint64_t f, loads;
	struct tfs t;

	REQUIRE(tfs_make(&t, "lazy7"));
	f = tfs_file(&t, 1, "many");
	REQUIRE(f);
	memset(page, 'm', sizeof(page));
	/* Every other page: each write its own extent. */
	for (uint64_t i = 0; i < MANY; i++)
		REQUIRE(dg_fs_write(t.fs, f, 2 * i * DG_PAGE_SIZE, page,
				    sizeof(page)) == (ssize_t)sizeof(page));
	for (uint64_t i = 0; i < MANY; i++) {
		v[i] = vpn_of(&t, f, 2 * i);
		REQUIRE(v[i]);
	}
	pthread_rwlock_rdlock(&t.fs->lock);
	REQUIRE(dg_inode_get(t.fs, f)->d.nextents == MANY);
	pthread_rwlock_unlock(&t.fs->lock);
	REQUIRE(tfs_remount(&t));
	REQUIRE(!in_core(&t, f));
	loads = counts(&t).inode_loads;
	for (uint64_t i = 0; i < MANY; i++) {
		CHECK(dg_fs_owner_holds(t.fs, f, v[i], 2 * i));
		CHECK(!dg_fs_owner_holds(t.fs, f, v[i], 2 * i + 1));
		CHECK(!dg_fs_owner_holds(t.fs, f, v[i], 2 * ((i + 1) % MANY)));
	}
	CHECK(in_core(&t, f));
	CHECK_EQ(counts(&t).inode_loads - loads, 1);
	tfs_done(&t);
}

static void quiet_log(enum dg_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

/* A file whose record is lost beyond parity, and one whose map is
 * malformed (checksums whole: a software bug), hold no page: each
 * loads as a damaged stub, and the report leaves the page unnamed. */
static void test_owner_holds_damaged(void)
{
	struct tfs t;
	struct dg_setattr sa = { .valid = DG_SET_MODE, .mode = 0600 };
	uint8_t data[DG_PAGE_SIZE];
	uint64_t f[2], v[2], tvpn[2], root_page;
	struct dg_inode *ip;
	struct dg_attr a;
	uint32_t off;

	REQUIRE(tfs_make_no_zone(&t, "lazy8"));
	memset(data, 'd', sizeof(data));
	/* f[1] the first file; f[0] the first on a table page neither
	 * the root nor f[1] is on: lost, with theirs left whole. */
	dg_ino_where(t.fs, DG_ROOT_INO, &root_page, &off);
	f[0] = 0;
	for (unsigned i = 0; i < 4 * DG_INODES_PER_PAGE && !f[0]; i++) {
		char name[32];
		uint64_t ino;

		snprintf(name, sizeof(name), "g%u", i);
		ino = tfs_file(&t, 1, name);
		REQUIRE(ino);
		dg_ino_where(t.fs, ino, &tvpn[0], &off);
		if (i == 0) {
			f[1] = ino;
			tvpn[1] = tvpn[0];
		} else if (tvpn[0] != root_page && tvpn[0] != tvpn[1]) {
			f[0] = ino;
		}
	}
	REQUIRE(f[0]);
	for (unsigned i = 0; i < 2; i++) {
		REQUIRE(dg_fs_write(t.fs, f[i], 0, data, sizeof(data)) ==
			(ssize_t)sizeof(data));
		v[i] = vpn_of(&t, f[i], 0);
		REQUIRE(v[i]);
	}
	/* f[1]'s one inline extent pointed past the volume, stored whole. */
	pthread_rwlock_rdlock(&t.fs->lock);
	ip = dg_inode_get(t.fs, f[1]);
	pthread_rwlock_unlock(&t.fs->lock);
	REQUIRE(ip && ip->d.nextents == 1 && ip->d.inl[0].len == 1);
	ip->d.inl[0].vpn = UINT64_MAX / 2;
	REQUIRE(dg_fs_setattr(t.fs, f[1], &sa, &a) == 0);
	lose_page(&t, tvpn[0]);
	REQUIRE(t.vol && dg_fs_open(t.vol, &t.fs) == 0);
	dg_vol_set_log(t.vol, quiet_log, DG_LOG_ERR);
	CHECK(!dg_fs_owner_holds(t.fs, f[0], v[0], 0));
	CHECK(!dg_fs_owner_holds(t.fs, f[1], v[1], 0));
	/* Asked again: the stubs, in core, answer the same. */
	CHECK(!dg_fs_owner_holds(t.fs, f[0], v[0], 0));
	CHECK(!dg_fs_owner_holds(t.fs, f[1], v[1], 0));
	dg_vol_set_log(t.vol, NULL, DG_LOG_ERR);
	tfs_done(&t);
}

/* The media half of the owner lookup reads a file's remap page: a
 * record's page is the file's at the record's file page, and the home
 * page it stands in for (still mapped and allocated until a fold) is
 * no file's data (format.h "Remap page"), as dg_ext_owns() answers in
 * core. */
static void test_owner_on_media_remapped(void)
{
	struct tfs t;
	uint8_t data[2 * DG_PAGE_SIZE];
	struct dg_lost_page lp[3];
	uint64_t f, home, rec, other;
	struct dg_inode *ip;

	REQUIRE(tfs_make_remap(&t, "lazy9"));
	f = tfs_file(&t, 1, "f");
	REQUIRE(f);
	memset(data, 'a', sizeof(data));
	REQUIRE(dg_fs_write(t.fs, f, 0, data, sizeof(data)) ==
		(ssize_t)sizeof(data));
	REQUIRE(tfs_remount(&t));
	home = vpn_of(&t, f, 1);
	other = vpn_of(&t, f, 0);
	memset(data, 'b', DG_PAGE_SIZE);
	REQUIRE(dg_fs_write(t.fs, f, DG_PAGE_SIZE, data, DG_PAGE_SIZE) ==
		DG_PAGE_SIZE);
	rec = vpn_of(&t, f, 1);
	pthread_rwlock_rdlock(&t.fs->lock);
	ip = dg_inode_get(t.fs, f);
	pthread_rwlock_unlock(&t.fs->lock);
	/* Redirected: tfs_make_remap(). */
	REQUIRE(ip && ip->remap && rec && rec != home);
	REQUIRE(tfs_remount(&t));
	lp[0] = (struct dg_lost_page){ .vpn = rec };
	lp[1] = (struct dg_lost_page){ .vpn = home };
	lp[2] = (struct dg_lost_page){ .vpn = other };
	pthread_rwlock_rdlock(&t.fs->lock);
	CHECK_EQ(dg_fs_owners_on_media(t.fs, lp, 3, false), 0);
	pthread_rwlock_unlock(&t.fs->lock);
	CHECK_EQ(lp[0].ino, f);
	CHECK_EQ(lp[0].fpage, 1);
	CHECK_EQ(lp[1].ino, 0);
	CHECK_EQ(lp[2].ino, f);
	CHECK_EQ(lp[2].fpage, 0);
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "loaded_on_use", test_loaded_on_use },
		{ "judged_after_load", test_judged_after_load },
		{ "lost_page_found_at_use", test_lost_page_found_at_use },
		{ "lost_page_of_file_not_in_core",
		  test_lost_page_of_file_not_in_core },
		{ "owner_while_writing", test_owner_while_writing },
		{ "owner_holds", test_owner_holds },
		{ "owner_holds_many_extents", test_owner_holds_many_extents },
		{ "owner_holds_damaged", test_owner_holds_damaged },
		{ "owner_on_media_remapped", test_owner_on_media_remapped },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
