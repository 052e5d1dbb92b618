// SPDX-License-Identifier: MIT
/* fz_emap.c -- a file's extent map as the mount and fsck walk it
 * (dg_emap_begin/next): the inode's record, then the extent pages
 * (struct dg_demap) of its chain, each put through the update path at the
 * vpn the walk asks for and read back through the read path, as the
 * media would hold them. Input: a 256-byte inode, then up to MAX_PAGES
 * pages. */
#include <stdio.h>
#include <string.h>

#include "fuzz_vol.h"

#define MAX_PAGES 4u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dg_vol *vol = dg_fuzz_vol();
	static struct dg_demap pg __attribute__((aligned(4096)));
	static uint8_t img[DG_PAGE_SIZE] __attribute__((aligned(4096)));
	struct dg_dinode d = { 0 };
	struct dg_emap_reader r;
	const struct dg_dextent *e;
	uint64_t prev_end = 0, seen = 0;
	unsigned k = 0;
	int ret;

	memcpy(&d, data, size < sizeof(d) ? size : sizeof(d));
	data += size < sizeof(d) ? size : sizeof(d);
	size -= size < sizeof(d) ? size : sizeof(d);
	if (dg_dinode_check(vol, 2, &d))
		d.mode = 0100644, d.nextents &= 0xffff;
	dg_emap_begin(&r, vol, &d, &pg);
	while ((ret = dg_emap_next(&r, &e)) > 0) {
		if (ret == DG_EMAP_PAGE) {
			size_t n = size < DG_PAGE_SIZE ? size : DG_PAGE_SIZE;
			struct dg_range w = { r.page_vpn, 0, DG_PAGE_SIZE, img };

			if (k++ == MAX_PAGES || n == 0)
				break;
			memset(img, 0, sizeof(img));
			memcpy(img, data, n);
			data += n;
			size -= n;
			FUZZ_ASSERT(r.page_vpn >= 1 && r.page_vpn < vol->vpns);
			if (dg_apply(vol, &w, 1))
				break;
			continue;
		}
		/* What the walk promises extent.c and fsck. */
		FUZZ_ASSERT(e->len && e->vpn >= 1 && e->vpn + e->len <= vol->vpns);
		FUZZ_ASSERT(e->vpn >= dg_alloc_meta_vpns(vol));
		FUZZ_ASSERT(e->fpage >= prev_end);
		FUZZ_ASSERT(++seen <= d.nextents);
		prev_end = e->fpage + e->len;
	}
	if (ret == DG_EMAP_END)
		FUZZ_ASSERT(seen == d.nextents);
	return 0;
}
