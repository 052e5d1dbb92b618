// SPDX-License-Identifier: MIT
/* test_read.c -- the read path: verify, repair from parity, EIO, degraded */
#include <stdio.h>

#include "check.h"
#include "volume_i.h"
#include "harness.h"

#define PG DG_PAGE_SIZE

static void fault_delta(struct dg_vol *vol, const uint64_t base[DG_FAULT_NR],
			uint64_t out[DG_FAULT_NR])
{
	dg_vol_fault_counts(vol, out);
	for (int i = 0; i < DG_FAULT_NR; i++)
		out[i] -= base[i];
}

/* Device byte offset of a data row's page. */
static uint64_t row_off(struct dg_vol *vol, uint64_t row)
{
	return dg_row_page(vol, row) * PG;
}

static bool is_parity_dev(struct dg_vol *vol, unsigned parity, uint64_t row,
			  unsigned dev)
{
	for (unsigned j = 0; j < parity; j++)
		if (dg_row_parity_dev(vol, row, j) == dev)
			return true;
	return false;
}

/* Flip a few bits spread over a page of the image (a media error). */
static void corrupt(struct tvol *tv, unsigned dev, uint64_t off)
{
	uint8_t b[3];
	static const unsigned at[3] = { 17, 2048, 4095 };

	for (int i = 0; i < 3; i++) {
		tvol_peek(tv, dev, off + at[i], &b[i], 1);
		b[i] ^= (uint8_t)(0x81 >> i);
		tvol_poke(tv, dev, off + at[i], &b[i], 1);
	}
}

/* Whole pages of random data at vpn0.., in applies of up to 64 pages. */
static bool fill(struct dg_vol *vol, uint64_t vpn0, uint64_t n,
		 uint8_t *model, uint64_t *seed)
{
	struct dg_range r[64];

	trand_fill(seed, model, n * PG);
	for (uint64_t i = 0; i < n; i += 64) {
		unsigned m = n - i < 64 ? (unsigned)(n - i) : 64;

		for (unsigned j = 0; j < m; j++)
			r[j] = (struct dg_range){ vpn0 + i + j, 0, PG,
						  model + (i + j) * PG };
		if (dg_apply(vol, r, m))
			return false;
	}
	return true;
}

/* A page region after a failed read: untouched or zeroed, never bytes
 * that did not verify. */
static bool untouched_or_zero(const uint8_t *p, uint8_t fill_byte)
{
	bool all_fill = true, all_zero = true;

	for (unsigned i = 0; i < PG; i++) {
		all_fill &= p[i] == fill_byte;
		all_zero &= p[i] == 0;
	}
	return all_fill || all_zero;
}

/*
 * A bit-rotten data page: read returns the right bytes, one fault is
 * detected and repaired, the media is fixed, and a second read sees a
 * clean page.
 */
static void test_repair_data(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 1, base[DG_FAULT_NR], got[DG_FAULT_NR];
	uint8_t *model = malloc(16 * PG), *buf = malloc(16 * PG);
	struct dg_loc l;

	REQUIRE(model && buf);
	tvol_make(&tv, "rdrep", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(fill(vol, 200, 16, model, &seed));
	l = dg_vpn_loc(vol, 205);
	corrupt(&tv, l.dev, row_off(vol, l.row));

	dg_vol_fault_counts(vol, base);
	REQUIRE(dg_read(vol, 200, 16, buf) == 0);
	CHECK(memcmp(buf, model, 16 * PG) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 1);
	CHECK_EQ(got[DG_FAULT_REPAIRED], 1);
	CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 0);
	tvol_peek(&tv, l.dev, row_off(vol, l.row), buf, PG);
	CHECK(memcmp(buf, model + 5 * PG, PG) == 0);

	dg_vol_fault_counts(vol, base);
	memset(buf, 0, 16 * PG);
	REQUIRE(dg_read(vol, 200, 16, buf) == 0);
	CHECK(memcmp(buf, model, 16 * PG) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 0);

	/* dg_read_bytes goes through the same checks. */
	corrupt(&tv, l.dev, row_off(vol, l.row));
	dg_vol_fault_counts(vol, base);
	REQUIRE(dg_read_bytes(vol, 205, 2000, 100, buf) == 0);
	CHECK(memcmp(buf, model + 5 * PG + 2000, 100) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_REPAIRED], 1);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(model);
	free(buf);
}

struct consent {
	bool answer;
	unsigned asked;
	struct dg_chk_event last;
};

static bool consent_cb(void *arg, const struct dg_chk_event *ev)
{
	struct consent *c = arg;

	c->asked++;
	c->last = *ev;
	return c->answer;
}

/*
 * The consent hook (fsck's per-finding decision): read-repair asks with
 * the finding it would answer; a no leaves the media as it was while the
 * read still returns the proven bytes, a yes repairs.
 */
static void test_repair_consent(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct consent c = { 0 };
	uint64_t seed = 2;
	unsigned asked;
	uint8_t *model = malloc(4 * PG), *buf = malloc(4 * PG),
		*bad = malloc(PG);
	struct dg_loc l;

	REQUIRE(model && buf && bad);
	tvol_make(&tv, "consent", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(fill(vol, 300, 4, model, &seed));
	l = dg_vpn_loc(vol, 301);
	corrupt(&tv, l.dev, row_off(vol, l.row));
	tvol_peek(&tv, l.dev, row_off(vol, l.row), bad, PG);

	dg_vol_set_consent(vol, consent_cb, &c);
	REQUIRE(dg_read(vol, 300, 4, buf) == 0);
	CHECK(memcmp(buf, model, 4 * PG) == 0);
	CHECK(c.asked >= 1);	/* (fsck keeps the answer per page) */
	asked = c.asked;
	CHECK_EQ(c.last.kind, DG_CHK_PAGE_BAD);
	CHECK_EQ(c.last.dev, (int)l.dev);
	CHECK_EQ(c.last.page, (int64_t)dg_row_page(vol, l.row));
	CHECK_EQ(c.last.vpn, 301);
	tvol_peek(&tv, l.dev, row_off(vol, l.row), buf, PG);
	CHECK(memcmp(buf, bad, PG) == 0);	/* declined: untouched */

	c.answer = true;
	REQUIRE(dg_read(vol, 301, 1, buf) == 0);
	CHECK(c.asked > asked);
	asked = c.asked;
	tvol_peek(&tv, l.dev, row_off(vol, l.row), buf, PG);
	CHECK(memcmp(buf, model + PG, PG) == 0);	/* repaired */

	/* No hook: every repair, as the daemon has it. */
	corrupt(&tv, l.dev, row_off(vol, l.row));
	dg_vol_set_consent(vol, NULL, NULL);
	REQUIRE(dg_read(vol, 301, 1, buf) == 0);
	CHECK_EQ(c.asked, asked);
	tvol_peek(&tv, l.dev, row_off(vol, l.row), buf, PG);
	CHECK(memcmp(buf, model + PG, PG) == 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(model);
	free(buf);
	free(bad);
}

/*
 * Data page and parity page of one row both bad with single parity:
 * -EIO, counted unrecoverable, and the caller's buffer never holds the
 * bad bytes. Pages before the bad one in the same call may be returned;
 * pages of other rows stay readable.
 */
static void test_double_fault_p1(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 2, base[DG_FAULT_NR], got[DG_FAULT_NR];
	uint8_t *model = malloc(8 * PG), *buf = malloc(8 * PG);
	struct dg_range r = { 0, 0, 8, NULL };
	uint64_t z;
	struct dg_loc l;
	unsigned pdev;

	REQUIRE(model && buf);
	r.data = model;
	tvol_make(&tv, "rddbl", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	/* file data: the zone's pages would come back from ditto copies */
	z = tdata_vpn(vol);
	r.vpn = z + 403;
	REQUIRE(fill(vol, z + 400, 8, model, &seed));
	l = dg_vpn_loc(vol, z + 403);
	pdev = dg_row_parity_dev(vol, l.row, 0);
	REQUIRE(pdev != l.dev);
	corrupt(&tv, l.dev, row_off(vol, l.row));
	corrupt(&tv, pdev, row_off(vol, l.row));

	dg_vol_fault_counts(vol, base);
	memset(buf, 0xa5, 8 * PG);
	CHECK_EQ(dg_read(vol, z + 400, 8, buf), -EIO);
	fault_delta(vol, base, got);
	CHECK(got[DG_FAULT_DETECTED] >= 1);
	CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 1);
	CHECK_EQ(got[DG_FAULT_REPAIRED], 0);
	CHECK(untouched_or_zero(buf + 3 * PG, 0xa5));
	for (unsigned i = 4; i < 8; i++)
		CHECK(untouched_or_zero(buf + i * PG, 0xa5));

	/* The single page, and the byte interface. */
	memset(buf, 0x5a, PG);
	CHECK_EQ(dg_read(vol, z + 403, 1, buf), -EIO);
	CHECK(untouched_or_zero(buf, 0x5a));
	memset(buf, 0x5a, PG);
	CHECK_EQ(dg_read_bytes(vol, z + 403, 0, 64, buf), -EIO);
	CHECK(untouched_or_zero(buf, 0x5a));

	/* An update of the page cannot fold unverifiable bytes into parity. */
	CHECK_EQ(dg_apply(vol, &r, 1), -EIO);

	/* The other pages are fine. */
	CHECK_EQ(dg_read(vol, z + 400, 3, buf), 0);
	CHECK(memcmp(buf, model, 3 * PG) == 0);
	CHECK_EQ(dg_read(vol, z + 404, 4, buf), 0);
	CHECK(memcmp(buf, model + 4 * PG, 4 * PG) == 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(model);
	free(buf);
}

/*
 * fsck gives up a page no copy of which verifies (dg_row_replace_page):
 * the page then reads as what was written, the row's other bad page still
 * fails (its checksum is kept, nothing is blessed), and parity is right
 * again: once that page is given up too, a fresh fault on the third data
 * page of the row is rebuilt to its old bytes.
 */
static void test_replace_page(void)
{
	static const uint8_t zero[PG];
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 12, row, vpn[3];
	uint8_t *model = malloc(3 * PG), *buf = malloc(PG);
	unsigned dev[3];

	REQUIRE(model && buf);
	tvol_make(&tv, "rdrepl", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row = dg_vpn_loc(vol, tdata_vpn(vol) + 403).row;
	trand_fill(&seed, model, 3 * PG);
	for (unsigned r = 0; r < 3; r++) {
		struct dg_range w;

		dev[r] = dg_row_data_dev(vol, row, r);
		vpn[r] = dg_loc_vpn(vol, dev[r], row);
		w = (struct dg_range){ vpn[r], 0, PG, model + r * PG };
		REQUIRE(dg_apply(vol, &w, 1) == 0);
	}
	corrupt(&tv, dev[0], row_off(vol, row));
	corrupt(&tv, dev[1], row_off(vol, row));
	CHECK_EQ(dg_read(vol, vpn[0], 1, buf), -EIO);

	CHECK_EQ(dg_row_replace_page(vol, vpn[0], zero), 0);
	CHECK_EQ(dg_read(vol, vpn[0], 1, buf), 0);
	CHECK(memcmp(buf, zero, PG) == 0);
	CHECK_EQ(dg_read(vol, vpn[1], 1, buf), -EIO);
	CHECK_EQ(dg_read(vol, vpn[2], 1, buf), 0);
	CHECK(memcmp(buf, model + 2 * PG, PG) == 0);

	CHECK_EQ(dg_row_replace_page(vol, vpn[1], zero), 0);
	corrupt(&tv, dev[2], row_off(vol, row));
	CHECK_EQ(dg_read(vol, vpn[2], 1, buf), 0);
	CHECK(memcmp(buf, model + 2 * PG, PG) == 0);
	dg_vol_close(vol);

	/* A read-only volume is not written. */
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	CHECK_EQ(dg_row_replace_page(vol, vpn[0], model), -EROFS);
	CHECK_EQ(dg_read(vol, vpn[0], 1, buf), 0);
	CHECK(memcmp(buf, zero, PG) == 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(model);
	free(buf);
}

/*
 * Double parity, 5 devices: any two bad pages in a row are repaired
 * (both of them), three give -EIO.
 */
static void test_faults_p2(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 3, base[DG_FAULT_NR], got[DG_FAULT_NR];
	uint64_t row;
	uint64_t vpn[5];
	uint8_t *model = malloc(5 * PG), *buf = malloc(PG);
	unsigned ndata = 0, dev[5];

	REQUIRE(model && buf);
	tvol_make(&tv, "rdp2", 5, 2, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row = tdata_row(vol) + 50;
	/* The k = 3 data pages of the row, then its two parity devices. */
	for (unsigned d = 0; d < 5; d++)
		if (!is_parity_dev(vol, 2, row, d)) {
			dev[ndata] = d;
			vpn[ndata] = dg_loc_vpn(vol, d, row);
			ndata++;
		}
	REQUIRE(ndata == 3);
	dev[3] = dg_row_parity_dev(vol, row, 0);
	dev[4] = dg_row_parity_dev(vol, row, 1);

	/*
	 * Every pair of positions. Reads find the bad data pages (and a
	 * bad neighbour while rebuilding), scrub finds bad parity; in the
	 * end both are counted detected and repaired exactly once.
	 */
	for (unsigned a = 0; a < 5; a++)
		for (unsigned b = a + 1; b < 5; b++) {
			unsigned t = a < 3 ? a : 0;
			struct dg_scrub_report rep;

			for (unsigned i = 0; i < 3; i++)
				REQUIRE(fill(vol, vpn[i], 1, model + i * PG,
					     &seed));
			corrupt(&tv, dev[a], row_off(vol, row));
			corrupt(&tv, dev[b], row_off(vol, row));
			dg_vol_fault_counts(vol, base);
			CHECK_EQ(dg_read(vol, vpn[t], 1, buf), 0);
			CHECK(memcmp(buf, model + t * PG, PG) == 0);
			for (unsigned i = 0; i < 3; i++) {
				CHECK_EQ(dg_read(vol, vpn[i], 1, buf), 0);
				CHECK(memcmp(buf, model + i * PG, PG) == 0);
			}
			CHECK_EQ(dg_vol_scrub(vol, true, &rep, NULL, NULL), 0);
			CHECK_EQ(rep.parity_mismatch, 0);
			fault_delta(vol, base, got);
			CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 0);
			CHECK_EQ(got[DG_FAULT_DETECTED], 2);
			CHECK_EQ(got[DG_FAULT_REPAIRED], 2);
		}

	/* Both bad pages found in one rebuild are counted and fixed. */
	REQUIRE(fill(vol, vpn[0], 1, model, &seed));
	corrupt(&tv, dev[0], row_off(vol, row));
	corrupt(&tv, dev[1], row_off(vol, row));
	dg_vol_fault_counts(vol, base);
	CHECK_EQ(dg_read(vol, vpn[0], 1, buf), 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 2);
	CHECK_EQ(got[DG_FAULT_REPAIRED], 2);
	tvol_peek(&tv, dev[1], row_off(vol, row), buf, PG);
	CHECK(memcmp(buf, model + PG, PG) == 0);

	/* Three: beyond double parity. */
	corrupt(&tv, dev[0], row_off(vol, row));
	corrupt(&tv, dev[1], row_off(vol, row));
	corrupt(&tv, dev[3], row_off(vol, row));
	dg_vol_fault_counts(vol, base);
	memset(buf, 0xa5, PG);
	CHECK_EQ(dg_read(vol, vpn[0], 1, buf), -EIO);
	CHECK(untouched_or_zero(buf, 0xa5));
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 1);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(model);
	free(buf);
}

/* A bad parity page is invisible to data reads; scrub finds and fixes
 * it, and a second scrub is clean. */
static void test_scrub_parity(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_scrub_report rep;
	uint64_t seed = 4, base[DG_FAULT_NR], got[DG_FAULT_NR];
	uint8_t *model = malloc(4 * PG), *orig = malloc(PG), *buf = malloc(PG);
	struct dg_loc l;
	unsigned pdev;

	REQUIRE(model && orig && buf);
	tvol_make(&tv, "rdscr", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(fill(vol, 600, 4, model, &seed));
	l = dg_vpn_loc(vol, 601);
	pdev = dg_row_parity_dev(vol, l.row, 0);
	tvol_peek(&tv, pdev, row_off(vol, l.row), orig, PG);
	corrupt(&tv, pdev, row_off(vol, l.row));

	dg_vol_fault_counts(vol, base);
	REQUIRE(dg_read(vol, 600, 1, buf) == 0);
	REQUIRE(dg_read(vol, 601, 1, buf) == 0);
	CHECK(memcmp(buf, model + PG, PG) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 0);

	REQUIRE(dg_vol_scrub(vol, true, &rep, NULL, NULL) == 0);
	CHECK_EQ(rep.detected, 1);
	CHECK_EQ(rep.repaired, 1);
	CHECK_EQ(rep.unrecoverable, 0);
	CHECK_EQ(rep.parity_mismatch, 0);
	CHECK(rep.rows_checked > 0);
	tvol_peek(&tv, pdev, row_off(vol, l.row), buf, PG);
	CHECK(memcmp(buf, orig, PG) == 0);

	SCRUB_CLEAN(vol, true);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(model);
	free(orig);
	free(buf);
}

/*
 * Lost writes: the device acknowledged an update but kept the old page.
 * The checksum lives elsewhere and moved on, so the old bytes fail and
 * the new ones are rebuilt. Same for a lost parity write, found by scrub.
 */
static void test_lost_write(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_scrub_report rep;
	uint64_t seed = 5, base[DG_FAULT_NR], got[DG_FAULT_NR];
	uint8_t *model = malloc(PG), *old = malloc(PG), *buf = malloc(PG);
	uint8_t patch[300];
	struct dg_range r = { 700, 1234, sizeof(patch), patch };
	struct dg_loc l;
	unsigned pdev;

	REQUIRE(model && old && buf);
	tvol_make(&tv, "rdlost", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(fill(vol, 700, 1, model, &seed));
	l = dg_vpn_loc(vol, 700);
	pdev = dg_row_parity_dev(vol, l.row, 0);

	tvol_peek(&tv, l.dev, row_off(vol, l.row), old, PG);
	trand_fill(&seed, patch, sizeof(patch));
	REQUIRE(dg_apply(vol, &r, 1) == 0);
	memcpy(model + 1234, patch, sizeof(patch));
	tvol_poke(&tv, l.dev, row_off(vol, l.row), old, PG);

	dg_vol_fault_counts(vol, base);
	REQUIRE(dg_read(vol, 700, 1, buf) == 0);
	CHECK(memcmp(buf, model, PG) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 1);
	CHECK_EQ(got[DG_FAULT_REPAIRED], 1);
	tvol_peek(&tv, l.dev, row_off(vol, l.row), buf, PG);
	CHECK(memcmp(buf, model, PG) == 0);

	/* The parity page misses an update. */
	tvol_peek(&tv, pdev, row_off(vol, l.row), old, PG);
	trand_fill(&seed, patch, sizeof(patch));
	REQUIRE(dg_apply(vol, &r, 1) == 0);
	memcpy(model + 1234, patch, sizeof(patch));
	tvol_poke(&tv, pdev, row_off(vol, l.row), old, PG);
	REQUIRE(dg_vol_scrub(vol, true, &rep, NULL, NULL) == 0);
	CHECK_EQ(rep.detected, 1);
	CHECK_EQ(rep.repaired, 1);
	SCRUB_CLEAN(vol, false);
	/* And a data page rebuilt from that parity is right. */
	corrupt(&tv, l.dev, row_off(vol, l.row));
	REQUIRE(dg_read(vol, 700, 1, buf) == 0);
	CHECK(memcmp(buf, model, PG) == 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(model);
	free(old);
	free(buf);
}

/*
 * A device image gone: the volume opens only with DG_OPEN_DEGRADED,
 * then read-only, and every page reads back right, the missing device's
 * pages rebuilt from parity. Each of the four devices in turn.
 */
static void test_degraded(void)
{
	/* Four chunks of 256 rows x 3 data devices, less the root and
	 * bitmap: every device holds parity in one of them. */
	const uint64_t v0 = 2, n = 4 * 256 * 3 - 2;
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info info;
	uint64_t seed = 6, base[DG_FAULT_NR], got[DG_FAULT_NR];
	uint8_t *model = malloc(n * PG), *buf = malloc(n * PG);
	char *away = tfile_path("rddeg-away");

	REQUIRE(model && buf);
	tvol_make(&tv, "rddeg", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(fill(vol, v0, n, model, &seed));
	dg_vol_close(vol);

	for (unsigned d = 0; d < 4; d++) {
		struct dg_range r = { v0, 0, 8, model };
		char err[256];

		REQUIRE(rename(tv.paths[d], away) == 0);
		vol = NULL;
		CHECK_EQ(dg_vol_open((const char *const *)tv.paths, 4, 0, &vol,
				     err, sizeof(err)),
			 -ENXIO);
		CHECK(vol == NULL);
		vol = tvol_open(&tv, DG_OPEN_DEGRADED);
		if (!vol) {
			CHECK(0);
			rename(away, tv.paths[d]);
			continue;
		}
		dg_vol_get_info(vol, &info);
		CHECK(info.degraded);
		CHECK(info.read_only);
		CHECK_EQ(info.present, 3);
		CHECK_EQ(info.missing_mask, 1u << d);
		dg_vol_fault_counts(vol, base);
		memset(buf, 0, n * PG);
		CHECK_EQ(dg_read(vol, v0, n, buf), 0);
		CHECK(memcmp(buf, model, n * PG) == 0);
		fault_delta(vol, base, got);
		CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 0);
		CHECK_EQ(dg_apply(vol, &r, 1), -EROFS);
		dg_vol_close(vol);
		REQUIRE(rename(away, tv.paths[d]) == 0);
	}

	/* Nothing was written while degraded: whole again, and clean. */
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	dg_vol_get_info(vol, &info);
	CHECK(!info.degraded);
	dg_vol_fault_counts(vol, base);
	CHECK_EQ(dg_read(vol, v0, n, buf), 0);
	CHECK(memcmp(buf, model, n * PG) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(away);
	free(model);
	free(buf);
}

/* Degraded and a second fault in the same row: -EIO, not wrong data. */
static void test_degraded_plus_fault(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 7;
	uint8_t *model = malloc(3 * PG), *buf = malloc(PG);
	uint64_t row;
	uint64_t vpn[3];
	unsigned dev[3], nd = 0;
	char *away = tfile_path("rddeg2-away");

	REQUIRE(model && buf);
	tvol_make(&tv, "rddeg2", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row = tdata_row(vol) + 30;
	for (unsigned d = 0; d < 4; d++)
		if (!is_parity_dev(vol, 1, row, d)) {
			dev[nd] = d;
			vpn[nd] = dg_loc_vpn(vol, d, row);
			REQUIRE(fill(vol, vpn[nd], 1, model + nd * PG, &seed));
			nd++;
		}
	REQUIRE(nd == 3);
	corrupt(&tv, dev[1], row_off(vol, row));
	dg_vol_close(vol);

	REQUIRE(rename(tv.paths[dev[0]], away) == 0);
	vol = tvol_open(&tv, DG_OPEN_DEGRADED);
	if (vol) {
		uint64_t base[DG_FAULT_NR], got[DG_FAULT_NR];

		dg_vol_fault_counts(vol, base);
		memset(buf, 0xa5, PG);
		CHECK_EQ(dg_read(vol, vpn[0], 1, buf), -EIO);
		CHECK(untouched_or_zero(buf, 0xa5));
		fault_delta(vol, base, got);
		CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 1);
		CHECK_EQ(got[DG_FAULT_REPAIRED], 0);
		dg_vol_fault_counts(vol, base);
		memset(buf, 0xa5, PG);
		CHECK_EQ(dg_read(vol, vpn[1], 1, buf), -EIO);
		CHECK(untouched_or_zero(buf, 0xa5));
		fault_delta(vol, base, got);
		CHECK_EQ(got[DG_FAULT_DETECTED], 1);
		CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 1);
		CHECK_EQ(dg_read(vol, vpn[2], 1, buf), 0);
		CHECK(memcmp(buf, model + 2 * PG, PG) == 0);
		dg_vol_close(vol);
	} else {
		CHECK(0);
	}
	rename(away, tv.paths[dev[0]]);
	tvol_cleanup(&tv);
	free(away);
	free(model);
	free(buf);
}

/* Never-written pages read as zeros whatever the media holds. */
static void test_unwritten_zero(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint8_t junk[PG], buf[PG], zero[PG] = { 0 };
	uint64_t seed = 8, base[DG_FAULT_NR], got[DG_FAULT_NR];
	struct dg_vol_info info;
	struct dg_loc l;

	tvol_make(&tv, "rdzero", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	l = dg_vpn_loc(vol, 900);
	trand_fill(&seed, junk, PG);
	tvol_poke(&tv, l.dev, row_off(vol, l.row), junk, PG);
	dg_vol_fault_counts(vol, base);
	REQUIRE(dg_read(vol, 900, 1, buf) == 0);
	CHECK(memcmp(buf, zero, PG) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 0);
	CHECK_EQ(dg_read(vol, 0, 0, buf), 0);
	dg_vol_get_info(vol, &info);
	CHECK_EQ(dg_read(vol, info.vpns, 1, buf), -EINVAL);
	CHECK_EQ(dg_read(vol, info.vpns - 1, 2, buf), -EINVAL);
	CHECK_EQ(dg_read_bytes(vol, 900, 4000, 100, buf), -EINVAL);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/*
 * A page lost beyond parity counts once however often it is met; once it
 * verifies again (here its bytes are put back, as a rewrite of the same
 * bytes would), its next loss is a new fault, counted again -- not
 * hidden as the old one met again.
 */
static void test_loss_again_after_recovery(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 3, base[DG_FAULT_NR], got[DG_FAULT_NR];
	uint8_t *model = malloc(8 * PG), *buf = malloc(PG);
	uint64_t z;
	struct dg_loc l;
	unsigned pdev;

	REQUIRE(model && buf);
	tvol_make(&tv, "rdagain", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	z = tdata_vpn(vol);
	REQUIRE(fill(vol, z + 400, 8, model, &seed));
	l = dg_vpn_loc(vol, z + 403);
	pdev = dg_row_parity_dev(vol, l.row, 0);
	REQUIRE(pdev != l.dev);
	dg_vol_fault_counts(vol, base);

	corrupt(&tv, l.dev, row_off(vol, l.row));
	corrupt(&tv, pdev, row_off(vol, l.row));
	CHECK_EQ(dg_read(vol, z + 403, 1, buf), -EIO);
	CHECK_EQ(dg_read(vol, z + 403, 1, buf), -EIO);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 1);

	/* The flips undone: the page verifies, with its old checksum. */
	corrupt(&tv, l.dev, row_off(vol, l.row));
	corrupt(&tv, pdev, row_off(vol, l.row));
	REQUIRE(dg_read(vol, z + 403, 1, buf) == 0);
	CHECK(memcmp(buf, model + 3 * PG, PG) == 0);

	/* Lost again: a second fault. */
	corrupt(&tv, l.dev, row_off(vol, l.row));
	corrupt(&tv, pdev, row_off(vol, l.row));
	CHECK_EQ(dg_read(vol, z + 403, 1, buf), -EIO);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 2);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(model);
	free(buf);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "repair_data", test_repair_data },
		{ "repair_consent", test_repair_consent },
		{ "double_fault_p1", test_double_fault_p1 },
		{ "replace_page", test_replace_page },
		{ "faults_p2", test_faults_p2 },
		{ "scrub_parity", test_scrub_parity },
		{ "lost_write", test_lost_write },
		{ "degraded", test_degraded },
		{ "degraded_plus_fault", test_degraded_plus_fault },
		{ "unwritten_zero", test_unwritten_zero },
		{ "loss_again_after_recovery", test_loss_again_after_recovery },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
