// SPDX-License-Identifier: MIT
/* test_degraded.c -- writes to a volume opened degraded and writable
 * (DG_OPEN_DEGRADED_RW): every page, the missing devices' included, reads
 * back while degraded, and after the devices are rebuilt from parity the
 * volume is exact (every page as written, no checksum or parity fault). */
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"

#define PG DG_PAGE_SIZE
#define SIZE (16ull << 20)
#define ROWS 24u
#define MAXP (ROWS * DG_MAX_DEVS + 16)

/* The pages a case writes and what each should hold. */
struct model {
	uint64_t vpn[MAXP];
	uint8_t (*want)[PG];
	unsigned n;
	uint64_t seed;
};

static unsigned dg_vol_get_ndev(struct dg_vol *vol)
{
	struct dg_vol_info in;

	dg_vol_get_info(vol, &in);
	return in.ndev;
}

static unsigned find(struct model *m, uint64_t vpn)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->vpn[i] == vpn)
			return i;
	m->vpn[m->n] = vpn;
	memset(m->want[m->n], 0, PG);
	return m->n++;
}

/* One range, applied to the volume and to the model. */
static int put(struct dg_vol *vol, struct model *m, uint64_t vpn,
	       uint32_t off, uint32_t len)
{
	unsigned i = find(m, vpn);
	uint8_t buf[PG];
	struct dg_range r = { vpn, off, len, buf };

	trand_fill(&m->seed, buf, len);
	memcpy(m->want[i] + off, buf, len);
	return dg_apply(vol, &r, 1);
}

/* Every data page of rows [row0, row0 + ROWS), whole. */
static void fill(struct dg_vol *vol, struct model *m, uint64_t row0)
{
	for (uint64_t row = row0; row < row0 + ROWS; row++)
		for (unsigned d = 0; d < dg_vol_get_ndev(vol); d++)
			if (!dg_vol_row_is_parity(vol, row, d))
				CHECK(put(vol, m, dg_loc_vpn(vol, d, row), 0,
					  PG) == 0);
}

static void check_pages(struct dg_vol *vol, struct model *m)
{
	uint8_t got[PG];

	for (unsigned i = 0; i < m->n; i++) {
		CHECK(dg_read(vol, m->vpn[i], 1, got) == 0);
		CHECK(memcmp(got, m->want[i], PG) == 0);
	}
}

/*
 * Degraded updates of every kind: a missing device's page whole, in part
 * (reconstruct-write), and untouched beside a present page its row
 * changes; rows whose parity is missing; a row written whole (parity from
 * the new data alone); never-written rows; pages of the metadata zone
 * (ditto copies).
 */
static void degraded_updates(struct dg_vol *vol, struct model *m,
			     uint64_t row0)
{
	unsigned ndev = dg_vol_get_ndev(vol);

	for (uint64_t row = row0; row < row0 + ROWS; row++) {
		unsigned kind = (unsigned)(row - row0) % 4;

		for (unsigned d = 0; d < ndev; d++) {
			uint64_t vpn = dg_loc_vpn(vol, d, row);

			if (dg_vol_row_is_parity(vol, row, d))
				continue;
			if (kind == 0)
				CHECK(put(vol, m, vpn, 0, PG) == 0);
			else if (kind == 1)
				CHECK(put(vol, m, vpn, 64 * d + 8, 300) == 0);
			else if (kind == 2 && d == (row % ndev))
				CHECK(put(vol, m, vpn, 4000, 96) == 0);
		}
		if (kind == 3) {	/* the row whole in one update */
			struct dg_range r[DG_MAX_DEVS];
			static uint8_t buf[DG_MAX_DEVS][PG];
			unsigned n = 0;

			for (unsigned d = 0; d < ndev; d++) {
				uint64_t vpn = dg_loc_vpn(vol, d, row);

				if (dg_vol_row_is_parity(vol, row, d))
					continue;
				trand_fill(&m->seed, buf[n], PG);
				memcpy(m->want[find(m, vpn)], buf[n], PG);
				r[n] = (struct dg_range){ vpn, 0, PG, buf[n] };
				n++;
			}
			CHECK(dg_apply(vol, r, n) == 0);
		}
	}
	/* Rows never written before: one page in part. */
	for (uint64_t row = row0 + ROWS; row < row0 + ROWS + 4; row++) {
		unsigned d = (unsigned)(row % ndev);

		if (dg_vol_row_is_parity(vol, row, d))
			d = (d + 1) % ndev;
		CHECK(put(vol, m, dg_loc_vpn(vol, d, row), 128, 1000) == 0);
	}
	/* The metadata zone, past the root and bitmap. */
	for (unsigned i = 0; i < 8; i++)
		CHECK(put(vol, m, dg_alloc_meta_vpns(vol) + 40 + i, 512,
			  1024) == 0);
}

static void run_case(const char *tag, unsigned ndev, unsigned parity,
		     uint32_t lost)
{
	static uint8_t want[MAXP][PG];
	char *saved[DG_MAX_DEVS] = { NULL };
	struct model m = { .want = want, .seed = 77 };
	struct dg_scrub_report sr;
	struct dg_vol_info in;
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t row0;
	char err[512] = "";

	tvol_make(&tv, tag, ndev, parity, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	row0 = tdata_row(vol);
	fill(vol, &m, row0);
	for (unsigned i = 0; i < 8; i++)
		CHECK(put(vol, &m, dg_alloc_meta_vpns(vol) + 40 + i, 0, PG) == 0);
	dg_vol_close(vol);

	for (unsigned d = 0; d < ndev; d++)
		if (lost & (1u << d)) {
			REQUIRE(unlink(tv.paths[d]) == 0);
			saved[d] = tv.paths[d];
			tv.paths[d] = strdup("");
		}
	/* Without DG_OPEN_DEGRADED_RW: read-only, as before. */
	vol = tvol_open(&tv, DG_OPEN_DEGRADED);
	REQUIRE(vol);
	CHECK(dg_vol_read_only(vol));
	dg_vol_close(vol);

	vol = tvol_open(&tv, DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW);
	REQUIRE(vol);
	dg_vol_get_info(vol, &in);
	CHECK(in.degraded && !in.read_only);
	CHECK_EQ(in.missing_mask, lost);
	degraded_updates(vol, &m, row0);
	check_pages(vol, &m);
	dg_vol_close(vol);

	/* Still right after a reopen, still degraded. */
	vol = tvol_open(&tv, DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW);
	REQUIRE(vol);
	check_pages(vol, &m);
	dg_vol_close(vol);

	/* Rebuilt onto blank files where the devices were. */
	for (unsigned d = 0; d < ndev; d++)
		if (saved[d]) {
			FILE *f = fopen(saved[d], "w");

			REQUIRE(f);
			fclose(f);
			free(tv.paths[d]);
			tv.paths[d] = saved[d];
		}
	REQUIRE(dg_vol_rebuild((const char *const *)tv.paths, ndev, NULL,
			       NULL, NULL, NULL, err, sizeof(err)) == 0);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	check_pages(vol, &m);
	memset(&sr, 0, sizeof(sr));
	SCRUB_CLEAN(vol, false);
	CHECK_EQ(sr.unrecoverable, 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_parity1_each_device(void)
{
	for (unsigned d = 0; d < 4; d++)
		run_case("degr1", 4, 1, 1u << d);
}

static void test_parity2_two_devices(void)
{
	run_case("degr2a", 4, 2, 0x3);
	run_case("degr2b", 5, 2, 0x12);
}

static void test_parity2_one_device(void)
{
	run_case("degr2c", 4, 2, 0x4);
}

/* Beyond parity, or without -o degraded's flag, nothing opens for
 * writing. */
static void test_refusals(void)
{
	struct tvol tv;
	char *p;

	tvol_make(&tv, "degrno", 4, 1, SIZE, false);
	p = tv.paths[2];
	REQUIRE(unlink(p) == 0);
	tv.paths[2] = strdup("");
	CHECK(tvol_open(&tv, 0) == NULL);
	free(tv.paths[2]);
	tv.paths[2] = p;
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "parity1_each_device", test_parity1_each_device },
		{ "parity2_two_devices", test_parity2_two_devices },
		{ "parity2_one_device", test_parity2_one_device },
		{ "refusals", test_refusals },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
