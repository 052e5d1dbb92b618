// SPDX-License-Identifier: MIT
/* test_geom.c -- rows, ranks and vpns against the rules they encode */
#include "harness.h"
#include "volume_i.h"

/* A bare volume with the geometry alone: ndev devices, parity, chunks
 * of cp pages. */
static void gvol_init(struct dg_vol *vol, unsigned ndev, unsigned parity,
		      uint32_t cp)
{
	memset(vol, 0, sizeof(*vol));
	vol->ndev = ndev;
	vol->parity = parity;
	vol->k = ndev - parity;
	vol->sb.chunk_pages = cp;
	dg_geom_init(vol);
}

/* The rule (DESIGN §6): parity starts at device ndev - 1 - chunk % ndev
 * and takes the next devices round the ring; data ranks follow device
 * order among the rest. */
static bool ref_is_parity(const struct dg_vol *vol, uint64_t row,
			  unsigned dev)
{
	unsigned p0 = vol->ndev - 1 -
		      (unsigned)(row / vol->sb.chunk_pages % vol->ndev);

	return (dev + vol->ndev - p0) % vol->ndev < vol->parity;
}

static unsigned ref_rank(const struct dg_vol *vol, uint64_t row,
			 unsigned dev)
{
	unsigned rank = 0;

	for (unsigned d = 0; d < dev; d++)
		rank += !ref_is_parity(vol, row, d);
	return rank;
}

/* Every layout of 1 to DG_MAX_DEVS devices: ranks, data devices and
 * vpns agree with the rule, and vpns map to locations one to one. */
static void test_every_layout(void)
{
	struct dg_vol *vol = malloc(sizeof(*vol));
	unsigned bad = 0;

	REQUIRE(vol);
	for (unsigned ndev = 1; ndev <= DG_MAX_DEVS; ndev++)
		for (unsigned parity = 0;
		     parity <= DG_MAX_PARITY && parity < ndev; parity++) {
			gvol_init(vol, ndev, parity, 3);
			for (uint64_t row = 0; row < 3 * 2 * ndev; row++) {
				unsigned seen = 0;

				for (unsigned d = 0; d < ndev; d++) {
					bool par = ref_is_parity(vol, row, d);
					unsigned rank = ref_rank(vol, row, d);
					struct dg_loc l;

					bad += dg_row_dev_is_parity(vol, row, d)
					       != par;
					bad += dg_row_data_rank(vol, row, d) !=
					       rank;
					if (par)
						continue;
					seen++;
					bad += dg_row_data_dev(vol, row, rank)
					       != d;
					l = dg_vpn_loc(vol,
						       dg_loc_vpn(vol, d, row));
					bad += l.dev != d || l.row != row;
				}
				bad += seen != vol->k;
				bad += dg_row_data_dev(vol, row, vol->k) !=
				       ndev;
			}
		}
	CHECK_EQ(bad, 0);
	free(vol);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "every_layout", test_every_layout },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
