// SPDX-License-Identifier: MIT
/* fz_cmap.c -- a copy of the checksum-page init map as the open reads it
 * (dg_cmap_page_check), as the bytes come and resealed */
#include <stdio.h>
#include <string.h>

#include "fuzz_vol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dg_vol *vol = dg_fuzz_vol();
	static struct dg_dcmap m;
	uint64_t p = 0;

	memset(&m, 0, sizeof(m));
	memcpy(&m, data, size < sizeof(m) ? size : sizeof(m));
	if (size > sizeof(m))
		p = data[sizeof(m)] % (vol->sb.cmap_pages + 1);
	dg_cmap_page_check(vol, p, &m);
	dg_cmap_page_seal(vol, p, &m);
	/* A just-sealed page verifies unless its seal came out 0, and
	 * never as another page of the map. */
	FUZZ_ASSERT(dg_cmap_page_check(vol, p, &m) == 1 || m.seal == 0);
	FUZZ_ASSERT(dg_cmap_page_check(vol, p + 1, &m) != 1);
	return 0;
}
