// SPDX-License-Identifier: MIT
/* fz_super.c -- the superblock decoder (dg_dsuper_decode), as the bytes
 * come and resealed, so the checks behind the checksum are reached */
#include <stdio.h>
#include <string.h>

#include "fuzz_vol.h"
#include "super.h"

static void decode(const struct dg_dsuper *s)
{
	struct dg_dsuper out;
	int ret = dg_dsuper_decode(s, &out);

	if (ret)
		return;
	/* What a decoded superblock promises the open path. */
	FUZZ_ASSERT(out.dev_count >= 1 && out.dev_count <= DG_MAX_DEVS);
	FUZZ_ASSERT(out.dev_index < out.dev_count);
	FUZZ_ASSERT(out.parity <= DG_MAX_PARITY && out.parity < out.dev_count);
	FUZZ_ASSERT(out.chunk_pages && out.rows % out.chunk_pages == 0);
	FUZZ_ASSERT(out.data_start + out.rows < out.dev_pages);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dg_dsuper s;

	memset(&s, 0, sizeof(s));
	memcpy(&s, data, size < sizeof(s) ? size : sizeof(s));
	decode(&s);
	dg_dsuper_seal(&s);
	decode(&s);
	return 0;
}
