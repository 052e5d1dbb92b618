// SPDX-License-Identifier: MIT
/* fz_cpage.c -- checksum page copies: the seal check (dg_csum_page_check)
 * as the bytes come and resealed, and dg_cpage_examine choosing among
 * copies that hold the input, as a device would return them. Input: up
 * to csum_copies pages, one a copy. */
#include <stdio.h>
#include <string.h>

#include "csum.h"
#include "fuzz_vol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dg_vol *vol = dg_fuzz_vol();
	static struct dg_dcpage copy, img;
	/* Index 0 of device 0, as the seeds were cut: this process's
	 * volume serves nothing else. */
	const uint64_t index = 0;
	const unsigned owner = 0;
	struct dg_cpage_view v;
	uint64_t best = 0;
	bool any = false;
	int ret;

	for (unsigned c = 0; c < vol->sb.csum_copies; c++) {
		size_t n = size < DG_PAGE_SIZE ? size : DG_PAGE_SIZE;
		unsigned dev = dg_cpage_copy_dev(vol, owner, c);
		uint64_t at = dg_cpage_copy_page(vol, index, c);

		memset(&copy, 0, sizeof(copy));
		memcpy(&copy, data, n);
		data += n;
		size -= n;
		dg_csum_page_check(vol, owner, index, &copy);
		/* Every other copy is resealed: the choice among verified
		 * copies of different generations is what is fuzzed. */
		if (c % 2)
			dg_csum_page_seal(vol, owner, index, &copy);
		if (dg_csum_page_check(vol, owner, index, &copy) == 1) {
			if (!any || copy.gen > best)
				best = copy.gen;
			any = true;
		}
		/* The device returns these bytes (a faulty one may). No
		 * persist fails here, so no store is refused. */
		(void)dg_dev_write(&vol->devs[dev], at << DG_PAGE_SHIFT,
				   &copy, DG_PAGE_SIZE);
	}
	ret = dg_cpage_examine(vol, owner, index, &img, &v, DG_CPX_QUIET);
	FUZZ_ASSERT(ret == (any ? 1 : dg_cmap_test(vol, index) ? -EIO : 0));
	if (ret == 1) {
		FUZZ_ASSERT(img.gen == best && v.gen == best);
		FUZZ_ASSERT(dg_csum_page_check(vol, owner, index, &img) == 1);
	}
	return 0;
}
