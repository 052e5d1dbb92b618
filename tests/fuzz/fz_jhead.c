// SPDX-License-Identifier: MIT
/* fz_jhead.c -- the journal header slot decoder recovery uses
 * (dg_jhead_decode), as the bytes come and resealed */
#include <stdio.h>
#include <string.h>

#include "fuzz_vol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dg_vol *vol = dg_fuzz_vol();
	const uint64_t log_bytes = vol->jrnl.log_bytes;
	struct dg_djhead h = { 0 }, out;
	int ret;

	memcpy(&h, data, size < sizeof(h) ? size : sizeof(h));
	ret = dg_jhead_decode(vol, &h, log_bytes, &out);
	if (ret == 0)
		FUZZ_ASSERT(out.tail_off < log_bytes &&
			    out.tail_off % DG_JALIGN == 0);
	dg_jhead_seal(vol, &h);
	ret = dg_jhead_decode(vol, &h, log_bytes, &out);
	FUZZ_ASSERT(ret != -EBADMSG); /* just sealed */
	if (ret == 0)
		FUZZ_ASSERT(out.tail_off < log_bytes &&
			    out.tail_off % DG_JALIGN == 0 &&
			    !memcmp(out.vol_uuid, dg_fuzz_uuid, 16));
	return 0;
}
