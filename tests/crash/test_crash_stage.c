// SPDX-License-Identifier: MIT
/* test_crash_stage.c -- crash states of a staged (multi-chunk) sync */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"
#include "harness.h"
#include "recorder.h"

/*
 * stage.c's crash argument: a libcommit sync larger than one update is
 * staged (orphan file), published by one transaction and applied in
 * chunks that the mount re-runs idempotently. The run: a file of
 * generation 1 on 4 devices (parity 1); then, recorded, a read-write
 * map, a staged sync of generation 2 over every page (several staging
 * batches, several applied chunks), the unmap and the close. At every
 * persist point, under every policy for the writes not yet durable,
 * the images are rebuilt and opened (journal replay, then the mount's
 * stage recovery) and:
 *   (a) the file is wholly generation 1 or wholly generation 2;
 *   (b) once the sync returned, generation 2;
 *   (c) no orphan or published record is left, nothing is leaked:
 *       a second open finds the same bytes and the free count the
 *       same, and a scrub finds no bad page or parity mismatch;
 *   (d) a read-only open before it (no journal replay) finds one
 *       generation, or EIO while a published sync is unfinished (it
 *       cannot finish it), never a mix.
 * Both generations must be seen (the crash points span the publish).
 */

#define NDEV 4u

static const enum crec_policy pols[] = { CREC_NONE, CREC_ALL, CREC_RANDOM,
					 CREC_TORN };
static const char *const pol_names[] = { "none", "all", "random", "torn" };

static void fill_gen(uint8_t *b, uint64_t pages, uint64_t g)
{
	uint64_t *w = (uint64_t *)b;

	for (uint64_t i = 0; i < pages * DG_PAGE_SIZE / 8; i++)
		w[i] = g << 32 | i;
}

static struct dg_vol *open_paths(char **paths, unsigned flags)
{
	return crec_open(paths, NDEV, flags);
}

/* The generation the file holds (0: neither wholly 1 nor wholly 2,
 * reported; 3: EIO, read-only with a published sync unfinished; 4:
 * read-only and the filesystem does not open), and
 * the volume's free pages after the open. */
static uint64_t file_gen(char **paths, uint64_t pages, const uint8_t *g1,
			 const uint8_t *g2, uint8_t *buf, uint64_t *nfree,
			 bool scrub, bool ro)
{
	struct dg_vol *vol = open_paths(paths, ro ? DG_OPEN_RDONLY : 0);
	struct dg_fs *fs = NULL;
	struct dg_attr a;
	const void *data;
	uint64_t g = 0;
	ssize_t n;

	if (!vol)
		return ro ? 4 : 0;
	if (dg_fs_open(vol, &fs)) {
		/* Read-only, the journal is not replayed: a crash image
		 * whose metadata rows the journal would fix may not open
		 * (the engine's, not the stage's), or (below) may not name
		 * the file, its inode's page torn. */
		if (!ro)
			fprintf(stderr, "fs open failed\n");
		dg_vol_close(vol);
		return ro ? 4 : 0;
	}
	n = dg_fs_lookup(fs, DG_ROOT_INO, "f", &a);
	if (ro && n == -EIO) {
		g = 4;
	} else if (n != 0) {
		fprintf(stderr, "no file\n");
	} else {
		n = dg_fs_read(fs, a.ino, 0, pages * DG_PAGE_SIZE, buf, &data);
		if (n == (ssize_t)(pages * DG_PAGE_SIZE))
			g = !memcmp(data, g1, (size_t)n)   ? 1
			    : !memcmp(data, g2, (size_t)n) ? 2
							   : 0;
		else if (ro && n == -EIO)
			g = 3;
		else
			fprintf(stderr, "read%s: %zd\n", ro ? " (ro)" : "", n);
		if (n == (ssize_t)(pages * DG_PAGE_SIZE) && !g)
			fprintf(stderr, "mixed%s\n", ro ? " (ro)" : "");
	}
	for (uint64_t ino = 2; ino < (uint64_t)fs->root.nchunks *
				     DG_INODES_PER_CHUNK && g && !ro; ino++) {
		struct dg_inode *ip = dg_inode_slot(fs, ino);

		if (ip && (ip->d.stage_ino || ip->d.nlink == 0)) {
			fprintf(stderr, "ino %" PRIu64 " left: stage_ino %"
				PRIu64 " nlink %u\n", ino, ip->d.stage_ino,
				ip->d.nlink);
			g = 0;
		}
	}
	*nfree = dg_free_vpns(vol);
	if (scrub && g) {
		struct dg_scrub_report sr;

		if (dg_vol_scrub(vol, false, &sr, NULL, NULL) || sr.detected ||
		    sr.parity_mismatch || sr.unrecoverable) {
			fprintf(stderr, "scrub: %" PRIu64 " bad, %" PRIu64
				" parity mismatches\n", sr.detected,
				sr.parity_mismatch);
			g = 0;
		}
	}
	dg_fs_close(fs);
	dg_vol_close(vol);
	return g;
}

static void test_staged_sync_states(void)
{
	struct tvol tv, out;
	struct dg_vol *vol;
	struct dg_fs *fs;
	struct dg_fmap *m;
	struct dg_fstage *st;
	struct dg_fmap_run *runs;
	struct dg_attr a;
	struct crec *rec;
	uint64_t pages, chunk, K, k, ret_at, nfree0 = 0, seen[3] = { 0 };
	uint8_t *g1, *g2, *buf;
	unsigned checked = 0, seen_eio = 0, ro_fail = 0;

	tvol_make(&tv, "crstage", NDEV, 1, 16ull << 20, false);
	tvol_make(&out, "crstageout", NDEV, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	/* Three chunks and a bit (stage.c: half an update per chunk). */
	chunk = dg_apply_max_bytes(vol) / 2 /
		(DG_PAGE_SIZE + DG_PAGE_SIZE / DG_LINE_SIZE / 2 *
				sizeof(struct dg_djrange));
	if (chunk > 256)
		chunk = 256;
	pages = 3 * chunk + 7;
	g1 = malloc(pages * DG_PAGE_SIZE);
	g2 = malloc(pages * DG_PAGE_SIZE);
	buf = aligned_alloc(DG_PAGE_SIZE, (pages + 2) * DG_PAGE_SIZE);
	runs = malloc(pages * sizeof(*runs));
	REQUIRE(g1 && g2 && buf && runs);
	fill_gen(g1, pages, 1);
	fill_gen(g2, pages, 2);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(dg_fs_mknod(fs, DG_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0,
			    &a) == 0);
	REQUIRE(dg_fs_write(fs, a.ino, 0, g1, pages * DG_PAGE_SIZE) ==
		(ssize_t)(pages * DG_PAGE_SIZE));
	dg_fs_close(fs);
	dg_vol_close(vol);

	/* The sync, recorded: map, stage in two pieces, publish, unmap. */
	rec = crec_start((const char *const *)tv.paths, NDEV);
	REQUIRE(rec);
	vol = open_paths(tv.paths, 0);
	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(dg_fmap_new(fs, a.ino, 0, pages * DG_PAGE_SIZE, DG_FMAP_RW,
			    &m) == 0);
	for (uint64_t p = 0; p < pages; p++)
		runs[p] = (struct dg_fmap_run){ p * DG_PAGE_SIZE, DG_PAGE_SIZE,
						g2 + p * DG_PAGE_SIZE };
	REQUIRE(dg_fstage_new(m, &st) == 0);
	REQUIRE(dg_fstage_add(st, runs, (unsigned)(pages / 2)) == 0);
	REQUIRE(dg_fstage_add(st, runs + pages / 2,
			      (unsigned)(pages - pages / 2)) == 0);
	REQUIRE(dg_fstage_publish(st) == 0);
	ret_at = crec_mark(rec, "sync returned");
	dg_fmap_delete(m);
	dg_fs_close(fs);
	dg_vol_close(vol);
	crec_stop(rec);
	K = crec_npersists(rec);
	ret_at = crec_marker(rec, (unsigned)ret_at)->persists;
	printf("# %" PRIu64 " pages, chunks of %" PRIu64 ", %" PRIu64
	       " persists, sync returned after %" PRIu64 "\n", pages, chunk,
	       K, ret_at);
	CHECK(K > 20);

	/* The end state, for the free count every recovery must reach. */
	REQUIRE(crec_build(rec, K, CREC_NONE, 0,
			   (const char *const *)out.paths) == 0);
	REQUIRE(file_gen(out.paths, pages, g1, g2, buf, &nfree0, false,
			 false) == 2);

	for (k = 0; k <= K; k++)
		for (unsigned p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			uint64_t g, g2nd, gro, nf = 0, nf2 = 0;

			REQUIRE(crec_build(rec, k, pols[p], k * 7 + p,
					   (const char *const *)out.paths) == 0);
			/* Read-only first (changes nothing): the state as
			 * found, or EIO while a published sync is
			 * unfinished; then the recovering open. */
			gro = file_gen(out.paths, pages, g1, g2, buf, &nf,
				       false, true);
			g = file_gen(out.paths, pages, g1, g2, buf, &nf,
				     false, false);
			g2nd = file_gen(out.paths, pages, g1, g2, buf, &nf2,
					k % 8 == 0, false);
			seen_eio += gro == 3;
			ro_fail += gro == 4;
			/* Without the journal's replay it may see an older
			 * whole state (the publish still in the journal),
			 * never a mix. */
			if (gro == 0) {
				fprintf(stderr, "k=%" PRIu64 " %s: read-only "
					"open saw %" PRIu64 ", recovery %"
					PRIu64 "\n", k, pol_names[p], gro, g);
				CHECK(false);
			}
			if (!g || g2nd != g || nf2 != nf || nf != nfree0 ||
			    (k >= ret_at && g != 2)) {
				fprintf(stderr, "k=%" PRIu64 " %s: generation "
					"%" PRIu64 " then %" PRIu64 ", free %"
					PRIu64 " then %" PRIu64 " (want %"
					PRIu64 ")\n", k, pol_names[p], g,
					g2nd, nf, nf2, nfree0);
				CHECK(false);
			}
			seen[g < 3 ? g : 0]++;
			checked++;
		}
	printf("# %u crash states: %" PRIu64 " old, %" PRIu64 " new; %u "
	       "read-only opens found a published sync unfinished (EIO)\n",
	       checked, seen[1], seen[2], seen_eio);
	printf("# %u read-only opens failed (journal not replayed)\n",
	       ro_fail);
	CHECK(seen[1] > 0 && seen[2] > 0 && seen_eio > 0);
	crec_free(rec);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	free(g1);
	free(g2);
	free(buf);
	free(runs);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "staged_sync_states", test_staged_sync_states },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
