// SPDX-License-Identifier: MIT
/* test_crash_split.c -- crash states of updates prepared and written in
 * place by two threads */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "recorder.h"

/*
 * apply.c splits an update that reads or patches 256 pages or more
 * between two threads, by row: each reads and verifies its rows' old
 * pages and parity, builds the new ones in its own buffers, and writes
 * its pages and parity in place; the caller then writes the checksum
 * pages and persists what both wrote. The run, on 4 devices with parity
 * 1: pages of generation 0 written whole; then, recorded, two scattered
 * updates of SCATTER partial pages each (every other page, so many rows
 * get two of them; the second at other offsets), as a libcommit sync of
 * many dirty pages makes. At every persist point, under every policy for
 * the writes not yet durable, the images are rebuilt and opened
 * (journal replay) and:
 *   (a) the pages read back as before both updates, after the first or
 *       after both -- never a mix -- and at least as far as the updates
 *       that had returned;
 *   (b) neither the replay nor the reads meet a data or parity fault; a
 *       second open reads the same, and every 4th state a scrub finds no
 *       bad page and no parity mismatch.
 * The replay redoes the updates' entries, so the crash states cannot
 * see what the threads wrote in place: the running volume is read and
 * scrubbed too, before it is closed.
 */

#define NDEV	4u
#define BASE	64u
#define SPAN	800u	/* pages */
#define SCATTER 300u	/* pages per update: above apply.c's SPLIT_MIN */

/* CRASH_STRIDE=n: check every n-th crash point only, and the last
 * (scripts/test.sh under ThreadSanitizer: what it watches is the
 * recorded run's threads, not the replays of the states). */
static uint64_t crash_stride(void)
{
	const char *v = getenv("CRASH_STRIDE");
	long n = v ? strtol(v, NULL, 0) : 1;

	return n < 1 ? 1 : (uint64_t)n;
}

static const enum crec_policy pols[] = { CREC_NONE, CREC_ALL, CREC_RANDOM,
					 CREC_TORN };
static const char *const pol_names[] = { "none", "all", "random", "torn" };

/* Update u (1 or 2) of image img: a few bytes of every other page. */
static void scatter(uint8_t *img, unsigned u, struct dg_range *rg)
{
	for (unsigned i = 0; i < SCATTER; i++) {
		uint32_t off = (i * 97u + u * 1031u) % (DG_PAGE_SIZE - 64);
		uint8_t *at = img + (size_t)2 * i * DG_PAGE_SIZE + off;

		for (unsigned b = 0; b < 40; b++)
			at[b] = (uint8_t)(u * 16 + i + b);
		rg[i] = (struct dg_range){ BASE + 2 * i, off, 40, at };
	}
}

/* Which generation the images hold (0-2), -1 mixed or unreadable; faults
 * met by the replay, the reads or (scrub) a scrub make it -2. */
static int look(char **paths, uint8_t *rd, uint8_t *const *gen, bool scrub)
{
	static struct dg_fault_event ev[DG_FAULT_RING];
	struct dg_vol *vol = crec_open(paths, NDEV, 0);
	int got = -1;
	unsigned n;

	if (!vol)
		return -1;
	if (dg_read(vol, BASE, SPAN, rd) == 0)
		for (int g = 0; g < 3 && got < 0; g++)
			if (!memcmp(rd, gen[g], (size_t)SPAN * DG_PAGE_SIZE))
				got = g;
	n = dg_vol_fault_events(vol, 0, ev, DG_FAULT_RING);
	for (unsigned i = 0; i < n; i++)
		if (ev[i].what == DG_WHAT_DATA || ev[i].what == DG_WHAT_PARITY)
			got = -2;
	if (scrub) {
		struct dg_scrub_report sr;

		if (dg_vol_scrub(vol, false, &sr, NULL, NULL) || sr.detected ||
		    sr.parity_mismatch || sr.unrecoverable)
			got = -2;
	}
	dg_vol_close(vol);
	return got;
}

static void test_split_states(void)
{
	struct tvol tv, out;
	struct dg_vol *vol;
	struct dg_vol_info in0, in1;
	struct dg_range *rg = calloc(SCATTER, sizeof(*rg));
	struct crec *rec;
	uint8_t *gen[3], *rd;
	uint64_t seed = 99, K, m1, m2, seen[3] = { 0 };
	unsigned checked = 0;

	REQUIRE(rg);
	tvol_make(&tv, "crsplit", NDEV, 1, 16ull << 20, false);
	tvol_make(&out, "crsplitout", NDEV, 1, 16ull << 20, false);
	for (unsigned g = 0; g < 3; g++) {
		gen[g] = malloc((size_t)SPAN * DG_PAGE_SIZE);
		REQUIRE(gen[g]);
	}
	rd = aligned_alloc(DG_PAGE_SIZE, (size_t)SPAN * DG_PAGE_SIZE);
	REQUIRE(rd);
	trand_fill(&seed, gen[0], (size_t)SPAN * DG_PAGE_SIZE);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	for (unsigned v = 0; v < SPAN; v += 50) {
		struct dg_range w[50];

		for (unsigned i = 0; i < 50; i++)
			w[i] = (struct dg_range){
				BASE + v + i, 0, DG_PAGE_SIZE,
				gen[0] + (size_t)(v + i) * DG_PAGE_SIZE };
		REQUIRE(dg_apply(vol, w, 50) == 0);
	}
	dg_vol_close(vol);

	rec = crec_start((const char *const *)tv.paths, NDEV);
	REQUIRE(rec);
	vol = crec_open(tv.paths, NDEV, 0);
	REQUIRE(vol);
	dg_vol_get_info(vol, &in0);
	memcpy(gen[1], gen[0], (size_t)SPAN * DG_PAGE_SIZE);
	scatter(gen[1], 1, rg);
	REQUIRE(dg_apply(vol, rg, SCATTER) == 0);
	m1 = crec_mark(rec, "first update");
	memcpy(gen[2], gen[1], (size_t)SPAN * DG_PAGE_SIZE);
	scatter(gen[2], 2, rg);
	REQUIRE(dg_apply(vol, rg, SCATTER) == 0);
	m2 = crec_mark(rec, "second update");
	dg_vol_get_info(vol, &in1);
	/* The running volume itself, before any replay could mend it. */
	REQUIRE(dg_read(vol, BASE, SPAN, rd) == 0);
	CHECK(!memcmp(rd, gen[2], (size_t)SPAN * DG_PAGE_SIZE));
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	crec_stop(rec);
	/* Both updates took the two-thread path where there are two CPUs. */
	CHECK_EQ(in1.updates_split - in0.updates_split,
		 sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 2 : 0);
	K = crec_npersists(rec);
	m1 = crec_marker(rec, (unsigned)m1)->persists;
	m2 = crec_marker(rec, (unsigned)m2)->persists;
	printf("# %" PRIu64 " persists; first update returned after %" PRIu64
	       ", second after %" PRIu64 "\n", K, m1, m2);

	for (uint64_t k = 0; k <= K; k++)
		for (unsigned p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			int f, f2, least = k >= m2 ? 2 : k >= m1 ? 1 : 0;

			if (k % crash_stride() && k != K && k != m1)
				continue;

			REQUIRE(crec_build(rec, k, pols[p], k * 7 + p,
					   (const char *const *)out.paths) == 0);
			f = look(out.paths, rd, gen, false);
			f2 = look(out.paths, rd, gen, k % 4 == p % 4);
			if (f < least || f2 != f) {
				fprintf(stderr, "k=%" PRIu64 " %s: generation "
					"%d, again %d, at least %d\n", k,
					pol_names[p], f, f2, least);
				CHECK(false);
			}
			seen[f >= 0 ? f : 0]++;
			checked++;
		}
	printf("# %u crash states: before both updates in %" PRIu64 ", after "
	       "the first in %" PRIu64 ", after both in %" PRIu64 "\n",
	       checked, seen[0], seen[1], seen[2]);
	CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
	crec_free(rec);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	for (unsigned g = 0; g < 3; g++)
		free(gen[g]);
	free(rd);
	free(rg);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "split_states", test_split_states },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
