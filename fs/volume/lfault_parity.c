// SPDX-License-Identifier: MIT
/* lfault_parity.c -- parity that verifies but is wrong, on purpose
 *
 * The one fault of the redundancy checks that no media fault makes
 * alone: a lost write of a parity page leaves old bytes under a newer
 * checksum, which fails verification. Parity whose checksum was computed
 * from wrong bytes needs wrong software, so it is made here, through the
 * engine's own repair writer (dg_repair_parity()), for daxguard-inject.
 */
#include <stdlib.h>

#include "lfault_parity.h"
#include "volume_i.h"

/* Whether row holds a page of file data (outside the metadata zone). */
static bool row_has_file_data(struct dg_vol *vol, uint64_t row)
{
	for (unsigned r = 0; r < vol->k; r++) {
		uint64_t v = dg_loc_vpn(vol, dg_row_data_dev(vol, row, r), row);

		if (v >= vol->zone_vpns && v < vol->vpns &&
		    dg_vpn_allocated(vol, v))
			return true;
	}
	return false;
}

int dg_check_parity_lfault(struct dg_vol *vol, uint64_t seed,
			   struct dg_parity_lfault *out)
{
	uint64_t rows = dg_vol_rows(vol);
	uint8_t *mem, *pages[DG_MAX_DEVS], *calc[DG_MAX_PARITY];
	int ret = -ENOENT;

	if (!vol->redundancy || !vol->parity)
		return -EINVAL;
	for (unsigned d = 0; d < vol->ndev; d++)
		if (!vol->devs[d].present)
			return -ENXIO;
	mem = aligned_alloc(DG_PAGE_SIZE, (size_t)(vol->k + 2 * vol->parity) *
						  DG_PAGE_SIZE);
	if (!mem)
		return -ENOMEM;
	for (uint64_t i = 0; i < rows && ret == -ENOENT; i++) {
		uint64_t row = (seed + i) % rows;
		pthread_rwlock_t *lk;

		if (!row_has_file_data(vol, row))
			continue;
		lk = dg_row_lock(vol, row);
		pthread_rwlock_wrlock(lk);
		if (dg_row_recompute(vol, row, mem, pages, calc, NULL)) {
			uint32_t bit = (uint32_t)(seed % (8u * DG_PAGE_SIZE));

			calc[0][bit / 8] ^= (uint8_t)(1u << (bit % 8));
			*out = (struct dg_parity_lfault){
				row, dg_row_parity_dev(vol, row, 0),
				dg_row_page(vol, row), bit };
			ret = dg_repair_parity(vol, row, calc);
		}
		pthread_rwlock_unlock(lk);
	}
	free(mem);
	return ret;
}
