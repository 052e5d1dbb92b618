// SPDX-License-Identifier: MIT
/* reclaim.c -- fsck's reset of an unreadable free page */
#include "fscheck.h"

/* map (dg_check_classify()): a page some structure uses is in use,
 * whatever the allocation bitmap says. */
static bool structure_uses(const void *arg, uint64_t vpn)
{
	return dg_vpnmap_cls(arg, vpn) != DG_PC_FREE;
}

/*
 * The volume layer's reset (dg_vol_reset_free_page(), lost_page.c:
 * the row rewritten whole, its free data pages as zeros), told what the
 * filesystem uses besides the bitmap.
 */
int dg_check_reset_free_page(struct dg_vol *vol, uint64_t vpn,
			     const struct dg_vpnmap *map)
{
	return dg_vol_reset_free_page(vol, vpn, map ? structure_uses : NULL,
				      map);
}
