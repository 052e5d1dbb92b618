// SPDX-License-Identifier: MIT
/* fz_inode.c -- an inode record as the mount reads it: dg_dinode_check,
 * its inline extents through the extent walk, and its attributes as
 * getattr reports them */
#include <stdio.h>
#include <string.h>

#include "fuzz_vol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dg_vol *vol = dg_fuzz_vol();
	struct dg_inode ip = { .ino = 2 };
	struct dg_emap_reader r;
	const struct dg_dextent *e;
	struct dg_attr a;
	uint64_t prev_end = 0;
	int ret;

	memcpy(&ip.d, data, size < sizeof(ip.d) ? size : sizeof(ip.d));
	if (!ip.d.mode || dg_dinode_check(vol, ip.ino, &ip.d))
		return 0;
	dg_inode_attr(&ip, &a);
	FUZZ_ASSERT(a.ino == ip.ino && a.mode == ip.d.mode);
	/* No chain page buffer: a chain must end the walk with a reason. */
	dg_emap_begin(&r, vol, &ip.d, NULL);
	while ((ret = dg_emap_next(&r, &e)) == DG_EMAP_EXTENT) {
		FUZZ_ASSERT(e->len && e->vpn >= 1 && e->vpn + e->len <= vol->vpns);
		FUZZ_ASSERT(e->fpage >= prev_end);
		prev_end = e->fpage + e->len;
	}
	FUZZ_ASSERT(ret == DG_EMAP_END || ret == DG_EMAP_PAGE || ret < 0);
	if (ret < 0)
		FUZZ_ASSERT(r.why != NULL || ret != -EUCLEAN);
	return 0;
}
