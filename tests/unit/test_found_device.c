// SPDX-License-Identifier: MIT
/* test_found_device.c -- devices whose superblocks are both lost, taken
 * back by what their pages say (vol.c, identify_by_pages()) */
#include <unistd.h>

#include "harness.h"

#define PG DG_PAGE_SIZE
#define SIZE (16ull << 20)
#define NPAGES 60

/* Both superblock copies of device d zeroed (the primary at page 0, the
 * backup at the device's last page), as firmware that zeroes a range of
 * each end would leave them. */
static void lose_supers(struct tvol *tv, unsigned d)
{
	static const uint8_t zero[PG];

	tvol_poke(tv, d, 0, zero, PG);
	tvol_poke(tv, d, SIZE - PG, zero, PG);
}

static struct dg_vol *open_flags(struct tvol *tv, unsigned flags)
{
	struct dg_vol *vol = NULL;
	char err[512] = "";

	if (dg_vol_open((const char *const *)tv->paths, tv->ndev, flags, &vol,
			err, sizeof(err)))
		return NULL;
	return vol;
}

static void reads_all(struct dg_vol *vol, uint8_t want[][PG])
{
	uint8_t got[PG];

	for (unsigned i = 0; i < NPAGES; i++) {
		CHECK_EQ(dg_read(vol, 500 + 7 * i, 1, got), 0);
		CHECK(!memcmp(got, want[i], PG));
	}
}

/* Opened as fsck looks first (read-only, degraded, with suspects): the
 * devices found by their pages and those missing are as said, and every
 * page reads back. */
static void opens_as(struct tvol *tv, uint8_t want[][PG], uint32_t found,
		     uint32_t missing)
{
	struct dg_vol_info info;
	struct dg_vol *vol = open_flags(tv, DG_OPEN_RDONLY | DG_OPEN_DEGRADED |
						    DG_OPEN_SUSPECT);

	REQUIRE(vol);
	dg_vol_get_info(vol, &info);
	CHECK_EQ(info.found_mask, found);
	CHECK_EQ(info.suspect_mask, found);
	CHECK_EQ(info.missing_mask, missing);
	CHECK(info.read_only);
	reads_all(vol, want);
	dg_vol_close(vol);
}

/*
 * Parity 1, two of four devices without a superblock: more slots
 * missing than parity covers, so the open used to refuse the volume.
 * Their pages name them: taken back as suspects (read-only, every page
 * read where it verifies), every page right; a repairing open that
 * accepts them writes their superblocks, and a plain open then finds a
 * whole volume.
 */
static void test_two_found(void)
{
	static uint8_t want[NPAGES][PG];
	struct dg_vol_info info;
	struct tvol tv;
	struct dg_vol *vol;

	tvol_make(&tv, "found2", 4, 1, SIZE, false);
	tvol_fill_spread(&tv, want, NPAGES);
	lose_supers(&tv, 1);
	lose_supers(&tv, 2);
	CHECK(open_flags(&tv, 0) == NULL);
	CHECK(open_flags(&tv, DG_OPEN_RDONLY | DG_OPEN_DEGRADED) == NULL);

	opens_as(&tv, want, 0x6u, 0u);

	vol = open_flags(&tv, DG_OPEN_DEGRADED | DG_OPEN_SUSPECT |
				      DG_OPEN_REPAIR);
	REQUIRE(vol);
	CHECK_EQ(dg_vol_accept_suspects(vol), 2);
	CHECK_EQ(dg_vol_close(vol), 0);

	vol = open_flags(&tv, 0);
	REQUIRE(vol);
	dg_vol_get_info(vol, &info);
	CHECK_EQ(info.suspect_mask, 0u);
	reads_all(vol, want);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/*
 * One device alone without a superblock, within parity: left out and
 * rebuilt whole, as before (a rebuild cut short leaves its target so).
 * With a second device blank, beyond parity: the first is found, the
 * blank one names no slot and is left out -- every page reads, the
 * blank device's from parity. Both blank: the open is refused.
 */
static void test_found_and_blank(void)
{
	static uint8_t want[NPAGES][PG];
	struct tvol tv;

	tvol_make(&tv, "found-blank", 4, 1, SIZE, false);
	tvol_fill_spread(&tv, want, NPAGES);
	lose_supers(&tv, 3);
	opens_as(&tv, want, 0u, 0x8u);
	REQUIRE(truncate(tv.paths[0], 0) == 0 &&
		truncate(tv.paths[0], SIZE) == 0);
	opens_as(&tv, want, 0x8u, 0x1u);
	REQUIRE(truncate(tv.paths[3], 0) == 0 &&
		truncate(tv.paths[3], SIZE) == 0);
	CHECK(open_flags(&tv, DG_OPEN_RDONLY | DG_OPEN_DEGRADED |
				      DG_OPEN_SUSPECT) == NULL);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "two_found", test_two_found },
		{ "found_and_blank", test_found_and_blank },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
