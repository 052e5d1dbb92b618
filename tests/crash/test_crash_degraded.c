// SPDX-License-Identifier: MIT
/* test_crash_degraded.c -- crash states of degraded updates and of an
 * online replace */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"
#include "recorder.h"

/*
 * The degraded write hole (apply.c, add_companions()): a volume with
 * device 2 missing takes updates of every kind -- a present page beside
 * a missing one, a missing page in part and whole, a row written whole,
 * a row whose parity is missing, a never-written row, a metadata zone
 * page -- recorded; at every persist point, under every policy, the
 * images must (a) open degraded and writable (the journal replayed with
 * the missing device still missing), (b) read every page as of the
 * updates done or of one more (each update whole or not at all), and
 * (c) after the missing device is rebuilt from parity onto a blank file,
 * read the same and scrub clean: the redundancy the replay left is
 * exact. Without the companions the replay cannot reconstruct a missing
 * page whose row was torn, and (a) fails.
 *
 * The online replace (replace.c) of a present device, recorded with
 * updates between its row batches: at every crash state the volume opens
 * with the old device (or, once the new one took the slot, with the
 * new), reads every page as of the updates done or one more, and scrubs
 * clean.
 */

#define NDEV	4u
#define MISSING 2u
#define MAXPG	64u
#define NUPD	8u
#define SIZE	(16ull << 20)

static const enum crec_policy pols[] = { CREC_NONE, CREC_ALL, CREC_RANDOM,
					 CREC_TORN };
static const char *const pol_names[] = { "none", "all", "random", "torn" };

/* The pages a run looks at and their contents after each update. */
struct model {
	uint64_t vpn[MAXPG];
	unsigned n;
	uint8_t (*after)[MAXPG][DG_PAGE_SIZE]; /* [update count][page] */
	unsigned nupd;
};

static unsigned page_index(struct model *m, uint64_t vpn)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->vpn[i] == vpn)
			return i;
	m->vpn[m->n] = vpn;
	return m->n++;
}

/* Every data page of row, into the model. */
static void add_row(struct model *m, struct dg_vol *vol, uint64_t row)
{
	for (unsigned d = 0; d < NDEV; d++)
		if (!dg_vol_row_is_parity(vol, row, d))
			page_index(m, dg_loc_vpn(vol, d, row));
}

/* The first row at or after from where device MISSING is parity (want)
 * or data (!want). */
static uint64_t row_where(struct dg_vol *vol, uint64_t from, bool want)
{
	while (dg_vol_row_is_parity(vol, from, MISSING) != want)
		from++;
	return from;
}

/* Apply r[0..n) to the volume and the model: after[u + 1] = after[u]
 * with them. */
static int step(struct dg_vol *vol, struct model *m,
		const struct dg_range *r, unsigned n)
{
	unsigned u = m->nupd++;

	memcpy(m->after[u + 1], m->after[u], sizeof(m->after[u]));
	for (unsigned i = 0; i < n; i++)
		memcpy(m->after[u + 1][page_index(m, r[i].vpn)] + r[i].off,
		       r[i].data, r[i].len);
	return dg_apply(vol, r, n);
}

/* Which update count the volume's pages match: done or done + 1, or -1. */
static int matches(struct dg_vol *vol, const struct model *m, unsigned done,
		   uint8_t *buf)
{
	for (unsigned c = done; c <= done + 1 && c <= m->nupd; c++) {
		bool all = true;

		for (unsigned i = 0; i < m->n && all; i++)
			all = dg_read(vol, m->vpn[i], 1, buf) == 0 &&
			      !memcmp(buf, m->after[c][i], DG_PAGE_SIZE);
		if (all)
			return (int)c;
	}
	return -1;
}

static bool scrub_clean(struct dg_vol *vol)
{
	struct dg_scrub_report sr;

	memset(&sr, 0, sizeof(sr));
	return dg_vol_scrub(vol, false, &sr, NULL, NULL) == 0 &&
	       !sr.detected && !sr.parity_mismatch && !sr.unrecoverable;
}

/* Updates done before crash point k: those whose marker came at or
 * before it. */
static unsigned done_at(struct crec *rec, uint64_t k)
{
	unsigned done = 0;

	for (unsigned i = 0; i < crec_nmarkers(rec); i++)
		if (crec_marker(rec, i)->persists <= k)
			done = i + 1;
	return done;
}

/* ---- the degraded write ---------------------------------------------- */

/* The updates: each kind the degraded rules name (design.md). */
static void degraded_updates(struct dg_vol *vol, struct model *m,
			     struct crec *rec, const uint64_t *rows,
			     uint64_t *seed)
{
	static uint8_t b[NDEV][DG_PAGE_SIZE];
	uint64_t mv = dg_loc_vpn(vol, MISSING, rows[0]);
	uint64_t pv = dg_loc_vpn(vol, (MISSING + 1) % NDEV, rows[0]);
	struct dg_range r[NDEV];
	unsigned n = 0;

	for (unsigned i = 0; i < NDEV; i++)
		trand_fill(seed, b[i], DG_PAGE_SIZE);
	/* a present page beside the missing one */
	r[0] = (struct dg_range){ pv, 100, 300, b[0] };
	CHECK(step(vol, m, r, 1) == 0);
	crec_mark(rec, "present beside missing");
	/* the missing page in part, and whole */
	r[0] = (struct dg_range){ mv, 2000, 1000, b[1] };
	CHECK(step(vol, m, r, 1) == 0);
	crec_mark(rec, "missing in part");
	r[0] = (struct dg_range){ dg_loc_vpn(vol, MISSING, rows[1]), 0,
				  DG_PAGE_SIZE, b[2] };
	r[1] = (struct dg_range){ dg_loc_vpn(vol, 0, rows[1]), 64, 64, b[3] };
	CHECK(step(vol, m, r, 2) == 0);
	crec_mark(rec, "missing whole and present");
	/* a row whole */
	for (unsigned d = 0; d < NDEV; d++)
		if (!dg_vol_row_is_parity(vol, rows[2], d)) {
			r[n] = (struct dg_range){ dg_loc_vpn(vol, d, rows[2]),
						  0, DG_PAGE_SIZE, b[n] };
			n++;
		}
	CHECK(step(vol, m, r, n) == 0);
	crec_mark(rec, "full row");
	/* a row whose parity is missing */
	r[0] = (struct dg_range){ dg_loc_vpn(vol, 0, rows[3]), 8, 4000, b[1] };
	CHECK(step(vol, m, r, 1) == 0);
	crec_mark(rec, "parity missing");
	/* a row never written */
	r[0] = (struct dg_range){ dg_loc_vpn(vol, (MISSING + 1) % NDEV,
					     rows[4]), 0, 512, b[2] };
	CHECK(step(vol, m, r, 1) == 0);
	crec_mark(rec, "fresh row");
	/* a metadata zone page (ditto copies) on the missing device */
	r[0] = (struct dg_range){ m->vpn[m->n - 1], 300, 700, b[3] };
	CHECK(step(vol, m, r, 1) == 0);
	crec_mark(rec, "zone page");
}

/* One crash state: open degraded, read, rebuild, read, scrub. */
static bool degraded_state(char **out, struct model *m, unsigned done,
			   uint8_t *buf, const char *what)
{
	char err[256] = "";
	struct dg_vol *vol;
	int c;

	vol = crec_open(out, NDEV, DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW);
	if (!vol) {
		fprintf(stderr, "%s: does not open degraded\n", what);
		return false;
	}
	c = matches(vol, m, done, buf);
	dg_vol_close(vol);
	if (c < 0) {
		fprintf(stderr, "%s: pages match neither %u nor %u updates\n",
			what, done, done + 1);
		return false;
	}
	/* The missing device onto a blank file where it was. */
	FILE *f = fopen(out[MISSING], "w");

	if (!f || fclose(f) || truncate(out[MISSING], SIZE) ||
	    dg_vol_rebuild((const char *const *)out, NDEV, NULL, NULL, NULL,
			   NULL, err, sizeof(err))) {
		fprintf(stderr, "%s: rebuild failed: %s\n", what, err);
		return false;
	}
	vol = crec_open(out, NDEV, 0);
	if (!vol || matches(vol, m, (unsigned)c, buf) != c ||
	    !scrub_clean(vol)) {
		fprintf(stderr, "%s: wrong after the rebuild\n", what);
		dg_vol_close(vol);
		return false;
	}
	dg_vol_close(vol);
	/* Missing again for the next state. */
	unlink(out[MISSING]);
	return true;
}

static void test_degraded_write(void)
{
	static uint8_t after[NUPD + 1][MAXPG][DG_PAGE_SIZE];
	struct model m = { .after = after };
	struct tvol tv, out;
	struct dg_vol *vol;
	char *present[NDEV], *outp[NDEV], *saved;
	uint8_t *buf = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint64_t seed = 3, rows[5], checked = 0, K, row0;
	struct crec *rec;
	unsigned np = 0;

	REQUIRE(buf);
	tvol_make(&tv, "crdeg", NDEV, 1, SIZE, false);
	tvol_make(&out, "crdegout", NDEV, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row0 = tdata_row(vol);
	rows[0] = row_where(vol, row0, false);
	rows[1] = rows[0] + 1;
	rows[2] = rows[0] + 2;
	rows[3] = row_where(vol, row0, true);
	rows[4] = rows[0] + 9;
	for (unsigned i = 0; i < 4; i++)
		add_row(&m, vol, rows[i]);
	add_row(&m, vol, rows[4]);
	/* A free page of the metadata zone on the missing device. */
	for (uint64_t v = dg_alloc_meta_vpns(vol) + 40;; v++)
		if (dg_vpn_loc(vol, v).dev == MISSING) {
			page_index(&m, v);
			break;
		}
	/* The rows written whole first (row 4 stays never written). */
	for (unsigned i = 0; i < m.n; i++) {
		struct dg_range r = { m.vpn[i], 0, DG_PAGE_SIZE, after[0][i] };
		struct dg_loc l = dg_vpn_loc(vol, m.vpn[i]);

		if (l.row == rows[4]) {
			memset(after[0][i], 0, DG_PAGE_SIZE);
			continue;
		}
		trand_fill(&seed, after[0][i], DG_PAGE_SIZE);
		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	dg_vol_close(vol);

	/* Device MISSING gone; the other three recorded. */
	saved = tv.paths[MISSING];
	REQUIRE(unlink(saved) == 0);
	tv.paths[MISSING] = strdup("");
	for (unsigned d = 0; d < NDEV; d++) {
		outp[d] = out.paths[d];
		if (d != MISSING)
			present[np++] = tv.paths[d];
	}
	unlink(out.paths[MISSING]);
	rec = crec_start((const char *const *)present, np);
	REQUIRE(rec);
	vol = crec_open(tv.paths, NDEV, DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW);
	REQUIRE(vol);
	crec_mark(rec, "open");
	m.nupd = 0;
	{
		/* The open's marker is update "0": shift so that marker i
		 * + 1 ends update i. */
		degraded_updates(vol, &m, rec, rows, &seed);
	}
	dg_vol_close(vol);
	crec_stop(rec);
	K = crec_npersists(rec);
	CHECK(K > 20);
	for (uint64_t k = 0; k <= K; k++)
		for (unsigned p = 0; p < 4; p++) {
			char *built[NDEV - 1], what[64];
			unsigned nb = 0, done = done_at(rec, k);

			for (unsigned d = 0; d < NDEV; d++)
				if (d != MISSING)
					built[nb++] = outp[d];
			REQUIRE(crec_build(rec, k, pols[p], k * 5 + p,
					   (const char *const *)built) == 0);
			snprintf(what, sizeof(what), "k=%" PRIu64 " %s", k,
				 pol_names[p]);
			/* Marker 0 is the open: updates done = done - 1. */
			CHECK(degraded_state(outp, &m, done ? done - 1 : 0, buf,
					     what));
			checked++;
		}
	printf("# degraded updates: %" PRIu64 " persists, %" PRIu64
	       " crash states checked\n", K, checked);
	crec_free(rec);
	free(tv.paths[MISSING]);
	tv.paths[MISSING] = saved;
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	free(buf);
}

/* ---- the online replace ------------------------------------------------ */

#define REPL_DEV 1u

static bool replace_state(char **oldp, char **newp, struct model *m,
			  unsigned done, uint8_t *buf, const char *what)
{
	static const int stale[] = { -ESTALE, 0 };
	/* Once the new device took the slot, the old is stale. */
	struct dg_vol *vol = crec_open_quiet(oldp, NDEV, 0, stale);
	bool ok;

	if (!vol)
		vol = crec_open(newp, NDEV, 0);
	if (!vol) {
		fprintf(stderr, "%s: opens with neither device\n", what);
		return false;
	}
	ok = matches(vol, m, done, buf) >= 0;
	if (!ok)
		fprintf(stderr, "%s: pages match neither %u nor %u updates\n",
			what, done, done + 1);
	if (ok && !scrub_clean(vol)) {
		fprintf(stderr, "%s: scrub not clean\n", what);
		ok = false;
	}
	dg_vol_close(vol);
	return ok;
}

/* Checks one crash state of a replace: the device set as of the old
 * devices and as of the new one, updates done by then (or one more). */
typedef bool (*replace_state_fn)(char **oldp, char **newp, struct model *m,
				 unsigned done, uint8_t *buf,
				 const char *what);

/*
 * Every crash state of a replace's recording under every policy, built
 * onto outrec (the recorded devices' copies, in the recorded order;
 * seed_mul keeps each case's states its own) and checked by state().
 */
static void replace_states(struct crec *rec, char **outrec,
			   uint64_t seed_mul, replace_state_fn state,
			   char **oldp, char **newp, struct model *m,
			   uint8_t *buf, const char *title)
{
	uint64_t K = crec_npersists(rec), checked = 0;

	for (uint64_t k = 0; k <= K; k++)
		for (unsigned p = 0; p < 4; p++) {
			char what[64];
			unsigned done = done_at(rec, k);

			REQUIRE(crec_build(rec, k, pols[p], k * seed_mul + p,
					   (const char *const *)outrec) == 0);
			snprintf(what, sizeof(what), "k=%" PRIu64 " %s", k,
				 pol_names[p]);
			/* Marker 0 is the open: updates done = done - 1. */
			CHECK(state(oldp, newp, m, done ? done - 1 : 0, buf,
				    what));
			checked++;
		}
	printf("# %s: %" PRIu64 " persists, %" PRIu64
	       " crash states checked\n", title, K, checked);
}

/* An empty file of the devices' size for a replace to fill, 0600
 * before it holds volume data. */
static void make_target(const char *path)
{
	FILE *f = fopen(path, "w");

	REQUIRE(f != NULL);
	fclose(f);
	REQUIRE(chmod(path, 0600) == 0);
	REQUIRE(truncate(path, SIZE) == 0);
}

static void test_replace_present(void)
{
	static uint8_t after[NUPD + 1][MAXPG][DG_PAGE_SIZE];
	struct model m = { .after = after };
	struct tvol tv, out;
	struct dg_vol *vol;
	char *all[NDEV + 1], *outall[NDEV + 1], *outnew[NDEV], err[256];
	char *tgt = tfile_path("crrepltgt"), *outtgt = tfile_path("crreplout");
	uint8_t *buf = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint64_t seed = 8, rows, pages = 0, lost = 0, row0;
	struct crec *rec;

	REQUIRE(buf);
	tvol_make(&tv, "crrepl", NDEV, 1, SIZE, false);
	tvol_make(&out, "crreplo", NDEV, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row0 = tdata_row(vol);
	rows = dg_vol_rows(vol);
	for (unsigned i = 0; i < 6; i++)
		add_row(&m, vol, row0 + 40 * i);
	for (unsigned i = 0; i < m.n; i++) {
		struct dg_range r = { m.vpn[i], 0, DG_PAGE_SIZE, after[0][i] };

		trand_fill(&seed, after[0][i], DG_PAGE_SIZE);
		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	dg_vol_close(vol);
	make_target(tgt);
	for (unsigned d = 0; d < NDEV; d++) {
		all[d] = tv.paths[d];
		outall[d] = out.paths[d];
		outnew[d] = d == REPL_DEV ? outtgt : out.paths[d];
	}
	all[NDEV] = tgt;
	outall[NDEV] = outtgt;
	rec = crec_start((const char *const *)all, NDEV + 1);
	REQUIRE(rec);
	vol = crec_open(tv.paths, NDEV, 0);
	REQUIRE(vol);
	crec_mark(rec, "open");
	REQUIRE(dg_vol_replace_begin(vol, REPL_DEV, tgt, false, err,
				     sizeof(err)) == 0);
	for (uint64_t r = 0; r < rows; r += rows / 4) {
		struct dg_range rg = { m.vpn[(r / (rows / 4)) * 3 % m.n],
				       (uint32_t)(r % 3000), 500, buf };

		trand_fill(&seed, buf, 500);
		CHECK(step(vol, &m, &rg, 1) == 0);
		crec_mark(rec, "update");
		CHECK(dg_vol_replace_rows(vol, r, r + rows / 4, &pages,
					  &lost) == 0);
	}
	CHECK(dg_vol_replace_finish(vol, err, sizeof(err)) == 0);
	dg_vol_close(vol);
	crec_stop(rec);
	CHECK_EQ(lost, 0);
	replace_states(rec, outall, 3, replace_state, outall, outnew, &m, buf,
		       "online replace");
	crec_free(rec);
	unlink(tgt);
	unlink(outtgt);
	free(tgt);
	free(outtgt);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	free(buf);
}

/*
 * The online replace of a missing device: the new one is filled in
 * (media.h, filling) while updates go on, among them updates of pages on
 * the slot being filled, whose checksum pages that slot owns. The copy
 * of those checksum pages made durable alone must be one that counts
 * after a crash (csum.c, first_copy()): the filling device is left out
 * until it is whole, so a crash may leave nothing of it. At every crash
 * state the volume opens degraded without the new device (or, once it
 * took the slot, with it), reads every page as of the updates done or
 * one more, and (opened degraded) rebuilds onto a blank file and scrubs
 * clean.
 */
static bool replace_missing_state(char **oldp, char **newp, struct model *m,
				  unsigned done, uint8_t *buf,
				  const char *what)
{
	/* Until the new device takes the slot, it is stale, or blank
	 * (no superblock yet): the old set opens degraded. */
	static const int not_yet[] = { -ESTALE, -ENODEV, 0 };
	struct dg_vol *vol = crec_open_quiet(newp, NDEV, 0, not_yet);
	bool ok;

	if (vol) {	/* the new device took the slot */
		ok = matches(vol, m, done, buf) >= 0 && scrub_clean(vol);
		dg_vol_close(vol);
		if (!ok)
			fprintf(stderr, "%s: wrong with the new device\n",
				what);
		return ok;
	}
	return degraded_state(oldp, m, done, buf, what);
}

static void test_replace_missing(void)
{
	static uint8_t after[NUPD + 1][MAXPG][DG_PAGE_SIZE];
	struct model m = { .after = after };
	struct tvol tv, out;
	struct dg_vol *vol;
	char *present[NDEV + 1], *outrec[NDEV + 1], *outp[NDEV], *outnew[NDEV];
	char *saved, err[256];
	char *tgt = tfile_path("crrepmtgt"), *outtgt = tfile_path("crrepmout");
	uint8_t *buf = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint64_t seed = 9, rows, pages = 0, lost = 0, row0;
	uint64_t own[NUPD];
	unsigned np = 0, nown = 0;
	struct crec *rec;

	REQUIRE(buf);
	tvol_make(&tv, "crrepm", NDEV, 1, SIZE, false);
	tvol_make(&out, "crrepmo", NDEV, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row0 = tdata_row(vol);
	rows = dg_vol_rows(vol);
	for (unsigned i = 0; i < 6; i++) {
		uint64_t row = row_where(vol, row0 + 40 * i, false);

		add_row(&m, vol, row);
		if (nown < NUPD)	/* MISSING's page of the row */
			own[nown++] = dg_loc_vpn(vol, MISSING, row);
	}
	for (unsigned i = 0; i < m.n; i++) {
		struct dg_range r = { m.vpn[i], 0, DG_PAGE_SIZE, after[0][i] };

		trand_fill(&seed, after[0][i], DG_PAGE_SIZE);
		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	dg_vol_close(vol);
	/* Device MISSING gone; the other three and the new one recorded. */
	saved = tv.paths[MISSING];
	REQUIRE(unlink(saved) == 0);
	tv.paths[MISSING] = strdup("");
	for (unsigned d = 0; d < NDEV; d++) {
		outp[d] = out.paths[d];
		outnew[d] = d == MISSING ? outtgt : out.paths[d];
		if (d != MISSING) {
			outrec[np] = out.paths[d];
			present[np++] = tv.paths[d];
		}
	}
	unlink(out.paths[MISSING]);
	present[np] = tgt;
	outrec[np] = outtgt;
	make_target(tgt);
	rec = crec_start((const char *const *)present, np + 1);
	REQUIRE(rec);
	vol = crec_open(tv.paths, NDEV,
			DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW);
	REQUIRE(vol);
	crec_mark(rec, "open");
	m.nupd = 0;
	REQUIRE(dg_vol_replace_begin(vol, MISSING, tgt, false, err,
				     sizeof(err)) == 0);
	for (uint64_t r = 0, u = 0; r < rows; r += rows / 4, u++) {
		/* A page of the filling slot, then another one. */
		struct dg_range rg[2] = {
			{ own[u % nown], (uint32_t)(r % 3000), 500, buf },
			{ m.vpn[u * 5 % m.n], 100, 300, buf + 1000 },
		};

		trand_fill(&seed, buf, 1300);
		CHECK(step(vol, &m, rg, rg[1].vpn == rg[0].vpn ? 1 : 2) == 0);
		crec_mark(rec, "update");
		CHECK(dg_vol_replace_rows(vol, r, r + rows / 4, &pages,
					  &lost) == 0);
	}
	CHECK(dg_vol_replace_finish(vol, err, sizeof(err)) == 0);
	dg_vol_close(vol);
	crec_stop(rec);
	CHECK_EQ(lost, 0);
	replace_states(rec, outrec, 7, replace_missing_state, outp, outnew,
		       &m, buf, "replace of a missing device");
	crec_free(rec);
	unlink(tgt);
	unlink(outtgt);
	free(tgt);
	free(outtgt);
	free(tv.paths[MISSING]);
	tv.paths[MISSING] = saved;
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	free(buf);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "degraded_write", test_degraded_write },
		{ "replace_present", test_replace_present },
		{ "replace_missing", test_replace_missing },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
