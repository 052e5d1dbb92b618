// SPDX-License-Identifier: MIT
/* test_crash_repair.c -- crash states of repair runs (repair.c) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "volume_i.h"
#include "csum.h"
#include "harness.h"
#include "recorder.h"

/*
 * repair.c's crash argument: a repair writes only bytes proven elsewhere
 * and is idempotent, so a crash at any instant of a repairing scrub
 * leaves a volume that (a) reads every page as it was written, never an
 * old or wrong byte, and (b) a second scrub brings back to clean. The
 * run: a populated volume on 4 devices (parity 1), then faults within
 * parity -- data pages garbled, a checksum page copy rolled back (a lost
 * write), a ditto copy and a parity page garbled -- then a repairing
 * scrub, recorded; every persist point of it, under every policy, is
 * rebuilt and checked.
 */

#define NDEV  4u
#define NPAGE 96u
#define BASE  512u

static const enum crec_policy pols[] = { CREC_NONE, CREC_ALL, CREC_RANDOM,
					 CREC_TORN };

static struct dg_vol *open_paths(char **paths, unsigned flags)
{
	return crec_open(paths, NDEV, flags);
}

/* Every model page reads back exactly; then a repairing scrub, and a
 * checking scrub that finds nothing. */
static bool check_state(char **paths, const uint8_t *model, uint8_t *buf,
			uint64_t k, const char *pol)
{
	struct dg_vol *vol = open_paths(paths, 0);
	struct dg_scrub_report sr;
	bool ok = true;

	if (!vol) {
		fprintf(stderr, "k=%" PRIu64 " %s: does not open\n", k, pol);
		return false;
	}
	for (unsigned i = 0; i < NPAGE && ok; i++) {
		if (dg_read(vol, BASE + i, 1, buf) ||
		    memcmp(buf, model + (size_t)i * DG_PAGE_SIZE,
			   DG_PAGE_SIZE)) {
			fprintf(stderr, "k=%" PRIu64 " %s: page %u wrong or "
				"unreadable\n", k, pol, BASE + i);
			ok = false;
		}
	}
	if (ok && (dg_vol_scrub(vol, true, &sr, NULL, NULL) ||
		   sr.unrecoverable)) {
		fprintf(stderr, "k=%" PRIu64 " %s: scrub left %" PRIu64
			" unrecoverable\n", k, pol, sr.unrecoverable);
		ok = false;
	}
	if (ok && (dg_vol_scrub(vol, false, &sr, NULL, NULL) || sr.detected ||
		   sr.parity_mismatch)) {
		fprintf(stderr, "k=%" PRIu64 " %s: second scrub found %" PRIu64
			" bad pages, %" PRIu64 " parity mismatches\n", k, pol,
			sr.detected, sr.parity_mismatch);
		ok = false;
	}
	dg_vol_close(vol);
	return ok;
}

static void test_scrub_repairs(void)
{
	struct tvol tv, out;
	struct dg_vol *vol;
	uint8_t *model = malloc((size_t)NPAGE * DG_PAGE_SIZE);
	uint8_t *buf = aligned_alloc(DG_PAGE_SIZE, 2 * DG_PAGE_SIZE);
	uint8_t *old = buf + DG_PAGE_SIZE;
	uint64_t seed = 42, cpage, checked = 0, k, K;
	struct dg_scrub_report sr;
	struct crec *rec;
	unsigned cdev;
	uint32_t cbyte;
	struct dg_loc l;

	REQUIRE(model && buf);
	tvol_make(&tv, "crrep", NDEV, 1, 16ull << 20, false);
	tvol_make(&out, "crrepout", NDEV, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	trand_fill(&seed, model, (size_t)NPAGE * DG_PAGE_SIZE);
	for (unsigned i = 0; i < NPAGE; i++) {
		struct dg_range r = { BASE + i, 0, DG_PAGE_SIZE,
				      model + (size_t)i * DG_PAGE_SIZE };

		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	/* A lost write of one checksum page copy: keep its image, update
	 * the page once more, put the old copy back. */
	l = dg_vpn_loc(vol, BASE + 7);
	dg_csum_loc(vol, l.dev, l.row, 1, &cdev, &cpage, &cbyte);
	tvol_peek(&tv, cdev, cpage * DG_PAGE_SIZE, old, DG_PAGE_SIZE);
	{
		struct dg_range r = { BASE + 7, 100, 50, buf };

		trand_fill(&seed, buf, 50);
		memcpy(model + 7 * DG_PAGE_SIZE + 100, buf, 50);
		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	tvol_poke(&tv, cdev, cpage * DG_PAGE_SIZE, old, DG_PAGE_SIZE);
	/* Garbled data pages (one per row), a garbled parity page in
	 * another row, a garbled ditto copy of the root. */
	for (unsigned i = 0; i < NPAGE; i += 13) {
		struct dg_loc li = dg_vpn_loc(vol, BASE + i);

		trand_fill(&seed, buf, 64);
		tvol_poke(&tv, li.dev, dg_row_page(vol, li.row) * DG_PAGE_SIZE +
			  512, buf, 64);
	}
	l = dg_vpn_loc(vol, BASE + 40);
	trand_fill(&seed, buf, 64);
	tvol_poke(&tv, dg_row_parity_dev(vol, l.row, 0),
		  dg_row_page(vol, l.row) * DG_PAGE_SIZE, buf, 64);
	l = dg_vpn_loc(vol, 0);
	trand_fill(&seed, buf, 64);
	tvol_poke(&tv, (l.dev + 1) % NDEV, vol->sb.ditto_start * DG_PAGE_SIZE,
		  buf, 64);
	dg_vol_close(vol);

	/* The repairing scrub, recorded. */
	rec = crec_start((const char *const *)tv.paths, NDEV);
	REQUIRE(rec);
	vol = open_paths(tv.paths, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_scrub(vol, true, &sr, NULL, NULL) == 0);
	CHECK(sr.detected >= 8);
	CHECK_EQ(sr.unrecoverable, 0);
	dg_vol_close(vol);
	crec_stop(rec);
	K = crec_npersists(rec);
	CHECK(K > 20);
	for (k = 0; k <= K; k++)
		for (unsigned p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			REQUIRE(crec_build(rec, k, pols[p], k * 7 + p,
					   (const char *const *)out.paths) == 0);
			CHECK(check_state(out.paths, model, buf, k,
					  p == 0 ? "none" : p == 1 ? "all"
					  : p == 2 ? "random" : "torn"));
			checked++;
		}
	printf("# scrub repairs: %" PRIu64 " persists, %" PRIu64
	       " crash states checked\n", K, checked);
	crec_free(rec);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	free(model);
	free(buf);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "scrub_repairs", test_scrub_repairs },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
