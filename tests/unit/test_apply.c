// SPDX-License-Identifier: MIT
/* test_apply.c -- the update path against an in-memory model */
#include <pthread.h>
#include <unistd.h>

#include "harness.h"

/*
 * Thousands of random updates (1 B to 1 MiB at random offsets, some
 * spanning many pages): the volume must read back exactly what a plain
 * memory model holds, and delta-updated parity must equal parity
 * recomputed from scratch (scrub finds no mismatch).
 */
static void random_updates(unsigned ndev, unsigned parity, unsigned rounds,
			   bool cached)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info info;
	struct dg_scrub_report rep;
	uint64_t seed = 0x1234567 + ndev * 31 + parity, span, base = 64;
	uint8_t *model, *buf, *rd;
	size_t max_len;

	tvol_make(&tv, "apply", ndev, parity, 64ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	/* Through the checksum page cache, as the daemon runs. */
	if (cached)
		REQUIRE(dg_vol_cache_csum_pages(vol, 256 << 10) == 0);
	dg_vol_get_info(vol, &info);
	max_len = dg_apply_max_bytes(vol) < (1u << 20) ? dg_apply_max_bytes(vol)
						     : 1u << 20;
	span = info.vpns - base < 2048 ? info.vpns - base : 2048;
	model = calloc(span, DG_PAGE_SIZE);
	buf = malloc(max_len);
	rd = malloc(span * DG_PAGE_SIZE);
	REQUIRE(model && buf && rd);

	for (unsigned i = 0; i < rounds; i++) {
		uint64_t r = trand(&seed);
		size_t len = (r % 8 == 0) ? 1 + trand(&seed) % max_len
					  : 1 + trand(&seed) % 8192;
		uint64_t off = trand(&seed) % (span * DG_PAGE_SIZE - len);
		struct dg_range rg[300];
		unsigned n = 0;
		size_t done = 0;

		trand_fill(&seed, buf, len);
		while (done < len) {
			uint64_t o = off + done;
			uint32_t po = (uint32_t)(o % DG_PAGE_SIZE);
			uint32_t l = DG_PAGE_SIZE - po;

			if (l > len - done)
				l = (uint32_t)(len - done);
			rg[n++] = (struct dg_range){ base + o / DG_PAGE_SIZE,
						     po, l, buf + done };
			done += l;
		}
		REQUIRE(dg_apply(vol, rg, n) == 0);
		memcpy(model + off, buf, len);
	}
	REQUIRE(dg_read(vol, base, span, rd) == 0);
	CHECK(memcmp(rd, model, span * DG_PAGE_SIZE) == 0);
	REQUIRE(dg_vol_scrub(vol, false, &rep, NULL, NULL) == 0);
	CHECK_EQ(rep.parity_mismatch, 0);
	CHECK_EQ(rep.detected, 0);
	CHECK(rep.rows_checked > 0);
	dg_vol_close(vol);

	/* And after close and reopen. */
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	memset(rd, 0, span * DG_PAGE_SIZE);
	REQUIRE(dg_read(vol, base, span, rd) == 0);
	CHECK(memcmp(rd, model, span * DG_PAGE_SIZE) == 0);
	dg_vol_close(vol);
	free(model);
	free(buf);
	free(rd);
	tvol_cleanup(&tv);
}

static void test_random_p1(void)
{
	random_updates(4, 1, 2000, false);
}

static void test_random_p2(void)
{
	random_updates(5, 2, 2000, false);
}

static void test_random_p0(void)
{
	random_updates(2, 0, 500, false);
}

static void test_random_one_dev(void)
{
	random_updates(1, 0, 500, false);
}

static void test_random_two_dev_mirror(void)
{
	random_updates(2, 1, 500, false);
}

static void test_random_p1_cached(void)
{
	random_updates(4, 1, 2000, true);
}

static void test_random_p2_cached(void)
{
	random_updates(5, 2, 2000, true);
}

/* Pages [vpn, vpn + span) read back as model (rd: room for them), and
 * a scrub finds every page and row of the volume consistent. */
static void check_model_clean(struct dg_vol *vol, uint64_t vpn, uint64_t span,
			      const uint8_t *model, uint8_t *rd)
{
	REQUIRE(dg_read(vol, vpn, span, rd) == 0);
	CHECK(memcmp(rd, model, span * DG_PAGE_SIZE) == 0);
	SCRUB_CLEAN(vol, false);
}

/*
 * An update that overwrites every data page of some rows whole takes
 * their parity from the new data alone (a full-stripe write): the old
 * parity is not even read, so damage to it is not detected, just
 * replaced, and the result is the parity a scrub recomputes.
 */
static void full_rows(unsigned ndev, unsigned parity)
{
	enum { ROWS = 12, ROW0 = 40 };
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info info;
	uint64_t seed = 77 + ndev, base[DG_FAULT_NR], now[DG_FAULT_NR];
	uint64_t cp, span, first;
	uint8_t *model, *rd, junk[64];
	struct dg_range rg[64];
	unsigned n = 0, k;

	tvol_make_chunked(&tv, "fullrow", ndev, parity, 64ull << 20, 64);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_cache_csum_pages(vol, 256 << 10) == 0);
	dg_vol_get_info(vol, &info);
	k = ndev - parity;
	cp = info.chunk_pages;
	/* k chunks side by side: the same rows on every data device. */
	first = 8 * k * cp;
	span = k * cp;
	REQUIRE(first + span <= info.vpns && k * ROWS + 1 <= 64);
	model = malloc(span * DG_PAGE_SIZE);
	rd = malloc(span * DG_PAGE_SIZE);
	REQUIRE(model && rd);
	trand_fill(&seed, model, span * DG_PAGE_SIZE);
	for (uint64_t v = 0; v < span; v += 64) {
		struct dg_range w[64];

		for (unsigned i = 0; i < 64; i++)
			w[i] = (struct dg_range){ first + v + i, 0, DG_PAGE_SIZE,
						  model + (v + i) * DG_PAGE_SIZE };
		REQUIRE(dg_apply(vol, w, 64) == 0);
	}
	/* Damage the parity of the rows about to be overwritten. */
	memset(junk, 0x5a, sizeof(junk));
	for (unsigned r = 0; r < ROWS; r++) {
		struct dg_loc l = dg_vpn_loc(vol, first + ROW0 + r);
		unsigned pdev = dg_row_parity_dev(vol, l.row, 0);

		tvol_poke(&tv, pdev, dg_row_page(vol, l.row) * DG_PAGE_SIZE,
			  junk, sizeof(junk));
	}
	/* Whole pages of ROWS rows on every data device, and one partial
	 * page of another row in the same update. */
	for (unsigned d = 0; d < k; d++)
		for (unsigned r = 0; r < ROWS; r++) {
			uint64_t v = d * cp + ROW0 + r;

			trand_fill(&seed, model + v * DG_PAGE_SIZE,
				   DG_PAGE_SIZE);
			rg[n++] = (struct dg_range){ first + v, 0, DG_PAGE_SIZE,
						     model + v * DG_PAGE_SIZE };
		}
	trand_fill(&seed, model + 3 * DG_PAGE_SIZE + 10, 100);
	rg[n++] = (struct dg_range){ first + 3, 10, 100,
				     model + 3 * DG_PAGE_SIZE + 10 };
	dg_vol_fault_counts(vol, base);
	REQUIRE(dg_apply(vol, rg, n) == 0);
	dg_vol_fault_counts(vol, now);
	CHECK_EQ(now[DG_FAULT_DETECTED] - base[DG_FAULT_DETECTED], 0);
	check_model_clean(vol, first, span, model, rd);
	dg_vol_close(vol);
	free(model);
	free(rd);
	tvol_cleanup(&tv);
}

static void test_full_rows_p1(void)
{
	full_rows(4, 1);
}

static void test_full_rows_p2(void)
{
	full_rows(6, 2);
}

/*
 * A scattered update of many pages (a libcommit sync of thousands of
 * dirty pages) is read and verified on two threads (apply.c, prepare()),
 * some rows patched by one page of it, some by two. With data pages and
 * parity pages damaged among them, each thread repairs its own rows on
 * the way: the update lands, reads back as the model, and the scrub
 * finds every row consistent.
 */
static void scattered(unsigned ndev, unsigned parity)
{
	enum { NPG = 1500, SPAN = 4000, BASE = 64, DAMAGE = 8 };
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info in0, in1;
	uint64_t seed = 4242 + ndev, f0[DG_FAULT_NR], f1[DG_FAULT_NR];
	uint8_t *model, *rd, junk[64];
	struct dg_range *rg = calloc(NPG, sizeof(*rg));
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	REQUIRE(rg);
	tvol_make(&tv, "scatter", ndev, parity, 64ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_cache_csum_pages(vol, 256 << 10) == 0);
	model = malloc((size_t)SPAN * DG_PAGE_SIZE);
	rd = malloc((size_t)SPAN * DG_PAGE_SIZE);
	REQUIRE(model && rd);
	trand_fill(&seed, model, (size_t)SPAN * DG_PAGE_SIZE);
	for (unsigned v = 0; v < SPAN; v += 50) {
		struct dg_range w[50];

		for (unsigned i = 0; i < 50; i++)
			w[i] = (struct dg_range){ BASE + v + i, 0, DG_PAGE_SIZE,
						  model + (size_t)(v + i) *
								  DG_PAGE_SIZE };
		REQUIRE(dg_apply(vol, w, 50) == 0);
	}
	/* Pages 0, 2, 4, ...: with 1 MiB chunks many rows get two. */
	for (unsigned i = 0; i < NPG; i++) {
		uint64_t v = 2 * (uint64_t)i;
		uint32_t len = 1 + (uint32_t)(trand(&seed) % 200);
		uint32_t off = (uint32_t)(trand(&seed) % (DG_PAGE_SIZE - len));
		uint8_t *at = model + v * DG_PAGE_SIZE + off;

		trand_fill(&seed, at, len);
		rg[i] = (struct dg_range){ BASE + v, off, len, at };
	}
	/* Damage data pages of some rows and parity of others. */
	memset(junk, 0xa5, sizeof(junk));
	for (unsigned d = 0; d < 2 * DAMAGE; d++) {
		struct dg_loc l = dg_vpn_loc(vol, BASE + 2 * (97 * d + 5));
		unsigned dev = d < DAMAGE ? l.dev
					  : dg_row_parity_dev(vol, l.row, 0);

		tvol_poke(&tv, dev, dg_row_page(vol, l.row) * DG_PAGE_SIZE + 512,
			  junk, sizeof(junk));
	}
	dg_vol_get_info(vol, &in0);
	dg_vol_fault_counts(vol, f0);
	REQUIRE(dg_apply(vol, rg, NPG) == 0);
	dg_vol_fault_counts(vol, f1);
	dg_vol_get_info(vol, &in1);
	CHECK_EQ(in1.updates_split - in0.updates_split, cpus > 1 ? 1 : 0);
	CHECK(f1[DG_FAULT_DETECTED] - f0[DG_FAULT_DETECTED] >= 2 * DAMAGE);
	CHECK(f1[DG_FAULT_REPAIRED] - f0[DG_FAULT_REPAIRED] >= 2 * DAMAGE);
	CHECK_EQ(f1[DG_FAULT_UNRECOVERABLE], f0[DG_FAULT_UNRECOVERABLE]);
	check_model_clean(vol, BASE, SPAN, model, rd);
	dg_vol_close(vol);
	free(model);
	free(rd);
	free(rg);
	tvol_cleanup(&tv);
}

static void test_scattered_p1(void)
{
	scattered(4, 1);
}

static void test_scattered_p2(void)
{
	scattered(6, 2);
}

static void test_bad_ranges(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint8_t b[16] = { 0 };
	struct dg_range r = { 100, 4090, 16, b };

	tvol_make(&tv, "badr", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(dg_apply(vol, &r, 1), -EINVAL); /* crosses the page */
	r = (struct dg_range){ ~0ull, 0, 16, b };
	CHECK_EQ(dg_apply(vol, &r, 1), -EINVAL);
	r = (struct dg_range){ 100, 0, 0, b };
	CHECK_EQ(dg_apply(vol, &r, 1), -EINVAL);
	dg_vol_close(vol);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	r = (struct dg_range){ 100, 0, 16, b };
	CHECK_EQ(dg_apply(vol, &r, 1), -EROFS);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* The bytes stored by one update (0 when it failed). */
static uint64_t stored_by(struct dg_vol *vol, const struct dg_range *r,
			  unsigned n)
{
	struct dg_media_counts a, b;

	dg_vol_media_counts(vol, &a, NULL);
	if (dg_apply(vol, r, n)) {
		CHECK(!"the update failed");
		return 0;
	}
	dg_vol_media_counts(vol, &b, NULL);
	return b.bytes_stored - a.bytes_stored;
}

/*
 * Ranges that rewrite bytes the page holds store only the bytes that
 * change (apply.c, trim_ranges()): a 256-byte range with 8 bytes new
 * saves at least its 248 others on the P + 1 journal copies and in
 * place; one with none new stores less still. What the volume reads,
 * what scrub finds and what a copy of the metadata zone holds stay
 * those of the whole ranges, for ranges that overlap too.
 */
static void test_trim_unchanged(void)
{
	enum { P = 1, OFF = 512, LEN = 256 };
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 77, data, zone = 64, full, trimmed, none;
	uint8_t (*model)[DG_PAGE_SIZE], buf[LEN], rd[DG_PAGE_SIZE];
	uint64_t vpn[3];

	tvol_make(&tv, "trim", 4, P, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	data = tdata_vpn(vol);
	vpn[0] = data;
	vpn[1] = data + 8;
	vpn[2] = zone;	/* has a ditto copy */
	model = malloc(3 * sizeof(*model));
	REQUIRE(model);
	for (unsigned i = 0; i < 3; i++) {
		struct dg_range r = { vpn[i], 0, DG_PAGE_SIZE, model[i] };

		trand_fill(&seed, model[i], DG_PAGE_SIZE);
		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	/* Every byte new, then 8 of 256, then none. */
	trand_fill(&seed, buf, LEN);
	{
		struct dg_range r = { vpn[0], OFF, LEN, buf };

		full = stored_by(vol, &r, 1);
		memcpy(model[0] + OFF, buf, LEN);
	}
	memcpy(buf, model[1] + OFF, LEN);
	memset(buf + 88, 0xa5, 8);
	{
		struct dg_range r = { vpn[1], OFF, LEN, buf };

		trimmed = stored_by(vol, &r, 1);
		memcpy(model[1] + OFF, buf, LEN);
		none = stored_by(vol, &r, 1);
	}
	CHECK(full >= trimmed + (P + 2) * (LEN - 8));
	CHECK(none < trimmed);
	/* Overlapping, later wins: the second range puts back old bytes
	 * inside the first; and a zone page, whose copy follows. */
	{
		uint8_t a[300], old[100], z[64];
		struct dg_range r[3] = { { vpn[0], 100, sizeof(a), a },
					 { vpn[0], 200, sizeof(old), old },
					 { vpn[2], 1000, sizeof(z), z } };

		trand_fill(&seed, a, sizeof(a));
		memcpy(old, model[0] + 200, sizeof(old));
		memcpy(z, model[2] + 1000, sizeof(z));
		z[17] ^= 1;
		REQUIRE(dg_apply(vol, r, 3) == 0);
		memcpy(model[0] + 100, a, sizeof(a));
		memcpy(model[0] + 200, old, sizeof(old));
		memcpy(model[2] + 1000, z, sizeof(z));
	}
	for (unsigned i = 0; i < 3; i++) {
		REQUIRE(dg_read(vol, vpn[i], 1, rd) == 0);
		CHECK(!memcmp(rd, model[i], DG_PAGE_SIZE));
	}
	SCRUB_CLEAN(vol, false);
	/* The zone page lost beyond parity reads from its ditto copy. */
	tvol_lose_page(&tv, vol, zone);
	dg_vol_close(vol);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	for (unsigned i = 0; i < 3; i++) {
		REQUIRE(dg_read(vol, vpn[i], 1, rd) == 0);
		CHECK(!memcmp(rd, model[i], DG_PAGE_SIZE));
	}
	dg_vol_close(vol);
	free(model);
	tvol_cleanup(&tv);
}


/* Threads that each own one data device of the same rows: every update
 * patches parity pages the others patch too. */
struct conc_arg {
	struct dg_vol *vol;
	uint64_t *vpns;		/* this thread's pages, one per row */
	unsigned npages, rounds;
	uint64_t seed;
	uint8_t *model;		/* npages pages */
	int ret;
};

static void *conc_worker(void *p)
{
	struct conc_arg *a = p;
	uint8_t buf[256];

	for (unsigned i = 0; i < a->rounds && !a->ret; i++) {
		unsigned pg = (unsigned)(trand(&a->seed) % a->npages);
		uint32_t len = 1 + (uint32_t)(trand(&a->seed) % sizeof(buf));
		uint32_t off = (uint32_t)(trand(&a->seed) % (DG_PAGE_SIZE - len));
		struct dg_range r = { a->vpns[pg], off, len, buf };

		trand_fill(&a->seed, buf, len);
		a->ret = dg_apply(a->vol, &r, 1);
		memcpy(a->model + (size_t)pg * DG_PAGE_SIZE + off, buf, len);
	}
	return NULL;
}

static void test_concurrent_same_rows(void)
{
	enum { NT = 3, NP = 64 };
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_scrub_report rep;
	struct conc_arg a[NT];
	pthread_t th[NT];
	uint64_t vpns[NT][NP];
	uint8_t *rd = malloc(DG_PAGE_SIZE);
	unsigned cp;

	REQUIRE(rd);
	tvol_make_chunked(&tv, "conc", NT + 1, 1, 32ull << 20, NP);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	{
		struct dg_vol_info in;

		dg_vol_get_info(vol, &in);
		cp = in.chunk_pages;
	}
	/* vpn (c * k + t) * cp + i is row c * cp + i on data rank t. */
	for (unsigned t = 0; t < NT; t++) {
		for (unsigned i = 0; i < NP; i++)
			vpns[t][i] = (uint64_t)(1 * NT + t) * cp + i;
		a[t] = (struct conc_arg){ vol, vpns[t], NP, 3000,
					  0x9e37 + t, calloc(NP, DG_PAGE_SIZE),
					  0 };
		REQUIRE(a[t].model);
		for (unsigned i = 0; i < NP; i++)
			CHECK_EQ(dg_vpn_loc(vol, vpns[t][i]).row,
				 dg_vpn_loc(vol, vpns[0][i]).row);
	}
	for (unsigned t = 0; t < NT; t++)
		pthread_create(&th[t], NULL, conc_worker, &a[t]);
	for (unsigned t = 0; t < NT; t++)
		pthread_join(th[t], NULL);
	for (unsigned t = 0; t < NT; t++) {
		CHECK_EQ(a[t].ret, 0);
		for (unsigned i = 0; i < NP; i++) {
			REQUIRE(dg_read(vol, vpns[t][i], 1, rd) == 0);
			CHECK(memcmp(rd, a[t].model + (size_t)i * DG_PAGE_SIZE,
				     DG_PAGE_SIZE) == 0);
		}
		free(a[t].model);
	}
	REQUIRE(dg_vol_scrub(vol, false, &rep, NULL, NULL) == 0);
	CHECK_EQ(rep.parity_mismatch, 0);
	CHECK_EQ(rep.detected, 0);
	CHECK(rep.rows_checked >= NP);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(rd);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "random_p1", test_random_p1 },
		{ "random_p2", test_random_p2 },
		{ "random_p0", test_random_p0 },
		{ "random_one_dev", test_random_one_dev },
		{ "random_two_dev_mirror", test_random_two_dev_mirror },
		{ "random_p1_cached", test_random_p1_cached },
		{ "random_p2_cached", test_random_p2_cached },
		{ "full_rows_p1", test_full_rows_p1 },
		{ "full_rows_p2", test_full_rows_p2 },
		{ "scattered_p1", test_scattered_p1 },
		{ "scattered_p2", test_scattered_p2 },
		{ "bad_ranges", test_bad_ranges },
		{ "trim_unchanged", test_trim_unchanged },
		{ "concurrent_same_rows", test_concurrent_same_rows },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
