// SPDX-License-Identifier: MIT
/* fz_remap.c -- a file's remap page as the load and fsck read it
 * (dg_dremap_check(), format.h "Remap page"): what it promises them
 * when it passes, a reason when it does not. Input: the page (short
 * input is zero-padded), owned by inode 2. */
#include <stdio.h>
#include <string.h>

#include "fuzz_vol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dg_vol *vol = dg_fuzz_vol();
	static struct dg_dremap pg;
	const char *why;
	uint32_t n;

	memset(&pg, 0, sizeof(pg));
	memcpy(&pg, data, size < sizeof(pg) ? size : sizeof(pg));
	if (dg_dremap_check(&pg, 2, vol, &n, &why)) {
		FUZZ_ASSERT(why != NULL && n == 0);
		return 0;
	}
	FUZZ_ASSERT(pg.ino == 2 && n <= DG_REMAP_PER_PAGE);
	for (uint32_t i = 0; i < n; i++) {
		FUZZ_ASSERT(pg.rec[i].vpn >= 1 && pg.rec[i].vpn < vol->vpns);
		FUZZ_ASSERT(pg.rec[i].vpn >= dg_alloc_meta_vpns(vol));
		FUZZ_ASSERT(pg.rec[i].fpage < DG_MAX_FILE_SIZE / DG_PAGE_SIZE);
		for (uint32_t j = 0; j < i; j++)
			FUZZ_ASSERT(pg.rec[j].fpage != pg.rec[i].fpage &&
				    pg.rec[j].vpn != pg.rec[i].vpn);
	}
	for (uint32_t i = n; i < DG_REMAP_PER_PAGE; i++)
		FUZZ_ASSERT(!pg.rec[i].fpage && !pg.rec[i].vpn);
	return 0;
}
