// SPDX-License-Identifier: MIT
/* test_crash_rebuild.c -- crash states of an offline rebuild of a blank
 * device (rebuild.c, its rounds) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"
#include "recorder.h"

/*
 * A device rebuilt whole is persisted a round a batch (rebuild.c,
 * RB_BATCH), not a persist a page: it is trusted by nothing until the
 * superblocks at the end take it in. The run: a volume on 4 devices
 * (parity 1) holding enough pages that the blanked device's share takes
 * more than one round, then the rebuild, recorded. At every persist
 * point, under every policy, the images must (a) open read-only (a read
 * repairs nothing then; degraded while the rebuilt device is not taken
 * in yet) and read every page as written, (b) rebuild again, as fsck
 * would (nothing to do once it was taken in), and (c) open whole, scrub
 * clean before anything is read (a read repairs what fails its
 * checksum) and read every page as written. A round whose pages counted
 * before the superblocks, or superblocks written before the last round,
 * fail (c); superblocks written in one pass (not a new epoch) fail (a).
 */

#define NDEV	4u
#define BLANK	1u
#define NPAGE	3600u	/* about 1200 rows: two rounds of the device */
#define BASE	500u
#define SIZE	(16ull << 20)

static const enum crec_policy pols[] = { CREC_NONE, CREC_ALL, CREC_RANDOM,
					 CREC_TORN };
static const char *const pol_names[] = { "none", "all", "random", "torn" };

static bool reads_all(struct dg_vol *vol, const uint8_t *model, uint8_t *buf,
		      const char *what, const char *when)
{
	for (unsigned i = 0; i < NPAGE; i++)
		if (dg_read(vol, BASE + i, 1, buf) ||
		    memcmp(buf, model + (size_t)i * DG_PAGE_SIZE,
			   DG_PAGE_SIZE)) {
			fprintf(stderr, "%s: page %u wrong or unreadable %s\n",
				what, BASE + i, when);
			return false;
		}
	return true;
}

static bool check_state(char **paths, const uint8_t *model, uint8_t *buf,
			const char *what)
{
	struct dg_scrub_report sr;
	struct dg_vol *vol = crec_open(paths, NDEV, DG_OPEN_DEGRADED |
						      DG_OPEN_RDONLY);
	char err[256] = "";
	bool ok;

	if (!vol) {
		fprintf(stderr, "%s: does not open\n", what);
		return false;
	}
	ok = reads_all(vol, model, buf, what, "before the rebuild");
	dg_vol_close(vol);
	if (!ok)
		return false;
	if (dg_vol_rebuild((const char *const *)paths, NDEV, NULL, NULL, NULL,
			   NULL, err, sizeof(err))) {
		fprintf(stderr, "%s: rebuild failed: %s\n", what, err);
		return false;
	}
	vol = crec_open(paths, NDEV, 0);
	if (!vol) {
		fprintf(stderr, "%s: not whole after the rebuild\n", what);
		return false;
	}
	/* Checked before anything is read: a read repairs what fails its
	 * checksum, and every byte rebuilt must be right as it lies. */
	memset(&sr, 0, sizeof(sr));
	ok = true;
	if (dg_vol_scrub(vol, false, &sr, NULL, NULL) || sr.detected ||
	    sr.parity_mismatch || sr.unrecoverable) {
		fprintf(stderr, "%s: scrub found %" PRIu64 " bad pages, %"
			PRIu64 " parity mismatches\n", what, sr.detected,
			sr.parity_mismatch);
		ok = false;
	}
	ok = ok && reads_all(vol, model, buf, what, "after the rebuild");
	dg_vol_close(vol);
	return ok;
}

static void test_blank_rebuild(void)
{
	enum { RUN = 60 };
	struct tvol tv, out;
	struct dg_vol *vol;
	struct dg_media_counts c;
	uint8_t *model = malloc((size_t)NPAGE * DG_PAGE_SIZE);
	uint8_t *buf = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint64_t seed = 34, K, checked = 0;
	char err[256] = "";
	struct crec *rec;

	REQUIRE(model && buf);
	tvol_make(&tv, "crrb", NDEV, 1, SIZE, false);
	tvol_make(&out, "crrbout", NDEV, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	trand_fill(&seed, model, (size_t)NPAGE * DG_PAGE_SIZE);
	for (unsigned i = 0; i < NPAGE; i += RUN) {
		struct dg_range r[RUN];

		for (unsigned j = 0; j < RUN; j++)
			r[j] = (struct dg_range){
				BASE + i + j, 0, DG_PAGE_SIZE,
				model + (size_t)(i + j) * DG_PAGE_SIZE };
		REQUIRE(dg_apply(vol, r, RUN) == 0);
	}
	dg_vol_close(vol);
	REQUIRE(truncate(tv.paths[BLANK], 0) == 0 &&
		truncate(tv.paths[BLANK], SIZE) == 0);

	rec = crec_start((const char *const *)tv.paths, NDEV);
	REQUIRE(rec);
	REQUIRE(dg_vol_rebuild_observed((const char *const *)tv.paths, NDEV,
					crec_observer(), &c, NULL, NULL, NULL,
					NULL, err, sizeof(err)) == 0);
	crec_stop(rec);
	/* More than one round of the blank device's pages. */
	CHECK(c.bytes_stored / DG_PAGE_SIZE > 1100);
	K = crec_npersists(rec);
	for (uint64_t k = 0; k <= K; k++)
		for (unsigned p = 0; p < 4; p++) {
			char what[64];

			REQUIRE(crec_build(rec, k, pols[p], k * 7 + p,
					   (const char *const *)out.paths) == 0);
			snprintf(what, sizeof(what), "k=%" PRIu64 " %s", k,
				 pol_names[p]);
			CHECK(check_state(out.paths, model, buf, what));
			checked++;
		}
	printf("# rebuild of a blank device: %" PRIu64 " persists, %" PRIu64
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
		{ "blank_rebuild", test_blank_rebuild },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
