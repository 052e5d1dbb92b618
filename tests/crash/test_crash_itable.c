// SPDX-License-Identifier: MIT
/* test_crash_itable.c -- crash states of the create that first needs the
 * inode table's chunk map (DG_FEAT_INCOMPAT_BIG_ITABLE) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fscheck.h"
#include "fsys_i.h"
#include "harness.h"
#include "recorder.h"

/*
 * A volume whose table fills the root record's chunks (the test knob
 * puts that limit at 2 chunks: 2,046 files and the root); then,
 * recorded, one create, which sets the flag on every superblock and
 * in one transaction makes the map directory, the first map page and
 * the new chunk. At every persist point, under every policy for the
 * writes not yet durable, the images are rebuilt and opened (journal
 * replay) and:
 *   (a) every old file is there, with its inode number;
 *   (b) the new file is absent, or present once its create returned;
 *   (c) fsck's filesystem check finds nothing, and the table has the
 *       map (flag on the volume) exactly when it has 3 chunks.
 */

#define NDEV   3u
#define DIRECT 2u
#define NOLD   (DIRECT * DG_INODES_PER_CHUNK - 2)

static const enum crec_policy pols[] = { CREC_NONE, CREC_ALL, CREC_RANDOM,
					 CREC_TORN };
static const char *const pol_names[] = { "none", "all", "random", "torn" };

static void count_event(void *arg, const struct dg_chk_event *ev)
{
	if ((*(int *)arg)++ < 3)
		fprintf(stderr, "  fsck: %s: %s (%s)\n", ev->structure,
			ev->detail, ev->action);
}

struct found {
	bool ok;		/* opened, old files right, fsck clean */
	bool has_new;
};

static struct found look(char **paths, const uint64_t *inos)
{
	struct found f = { false, false };
	struct dg_vol *vol = crec_open(paths, NDEV, 0);
	struct dg_fs *fs = NULL;
	struct dg_attr at;
	unsigned right = 0;
	int findings = 0;

	if (!vol)
		return f;
	if (dg_fs_open(vol, &fs)) {
		fprintf(stderr, "fs open failed\n");
		dg_vol_close(vol);
		return f;
	}
	for (unsigned i = 0; i < NOLD; i++) {
		char name[32];

		snprintf(name, sizeof(name), "f%u", i);
		if (dg_fs_lookup(fs, DG_ROOT_INO, name, &at) == 0) {
			right += at.ino == inos[i];
			dg_fs_forget(fs, at.ino, 1);
		}
	}
	if (dg_fs_lookup(fs, DG_ROOT_INO, "new", &at) == 0) {
		f.has_new = at.ino >= DIRECT * DG_INODES_PER_CHUNK;
		dg_fs_forget(fs, at.ino, 1);
		if (!f.has_new)
			fprintf(stderr, "new file at ino %" PRIu64 "\n", at.ino);
	}
	if (fs->root.nchunks != (f.has_new ? DIRECT + 1 : DIRECT) ||
	    (f.has_new &&
	     !dg_vol_has_incompat(vol, DG_FEAT_INCOMPAT_BIG_ITABLE)))
		fprintf(stderr, "%u chunks, new file %d\n", fs->root.nchunks,
			f.has_new);
	else
		f.ok = right == NOLD;
	dg_fs_close(fs);
	if (dg_check_fs(vol, count_event, NULL, &findings) < 0 || findings)
		f.ok = false;
	dg_vol_close(vol);
	return f;
}

static void test_first_map_states(void)
{
	struct tvol tv, out;
	struct dg_vol *vol;
	struct dg_fs *fs;
	struct dg_attr at;
	struct crec *rec;
	uint64_t *inos = calloc(NOLD, sizeof(*inos)), K, m_new;
	unsigned checked = 0, seen[2] = { 0 };

	REQUIRE(inos);
	tvol_make(&tv, "critab", NDEV, 1, 16ull << 20, false);
	tvol_make(&out, "critabout", NDEV, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(dg_fs_test_itable_direct(fs, DIRECT) == 0);
	for (unsigned i = 0; i < NOLD; i++) {
		char name[32];

		snprintf(name, sizeof(name), "f%u", i);
		REQUIRE(dg_fs_mknod(fs, DG_ROOT_INO, name, S_IFREG | 0644, 0,
				    0, 0, &at) == 0);
		dg_fs_forget(fs, at.ino, 1);
		inos[i] = at.ino;
	}
	REQUIRE(fs->root.nchunks == DIRECT);
	dg_fs_close(fs);
	dg_vol_close(vol);

	rec = crec_start((const char *const *)tv.paths, NDEV);
	REQUIRE(rec);
	vol = crec_open(tv.paths, NDEV, 0);
	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(dg_fs_test_itable_direct(fs, DIRECT) == 0);
	REQUIRE(dg_fs_mknod(fs, DG_ROOT_INO, "new", S_IFREG | 0644, 0, 0, 0,
			    &at) == 0);
	dg_fs_forget(fs, at.ino, 1);
	m_new = crec_mark(rec, "new created");
	CHECK(dg_vol_has_incompat(vol, DG_FEAT_INCOMPAT_BIG_ITABLE));
	CHECK_EQ(fs->root.nchunks, DIRECT + 1);
	dg_fs_close(fs);
	dg_vol_close(vol);
	crec_stop(rec);
	K = crec_npersists(rec);
	m_new = crec_marker(rec, (unsigned)m_new)->persists;
	printf("# %" PRIu64 " persists; new file created after %" PRIu64 "\n",
	       K, m_new);

	for (uint64_t k = 0; k <= K; k++)
		for (unsigned p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			struct found f;

			REQUIRE(crec_build(rec, k, pols[p], k * 7 + p,
					   (const char *const *)out.paths) == 0);
			f = look(out.paths, inos);
			if (!f.ok || (k >= m_new && !f.has_new)) {
				fprintf(stderr, "k=%" PRIu64 " %s: ok %d new %d\n",
					k, pol_names[p], f.ok, f.has_new);
				CHECK(false);
			}
			seen[f.has_new]++;
			checked++;
		}
	printf("# %u crash states: without the new file %u, with it %u\n",
	       checked, seen[0], seen[1]);
	CHECK(seen[0] > 0 && seen[1] > 0);
	crec_free(rec);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	free(inos);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "first_map_states", test_first_map_states },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
