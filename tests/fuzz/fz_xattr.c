// SPDX-License-Identifier: MIT
/* fz_xattr.c -- an inode's xattr run as getxattr and listxattr read it:
 * dg_xattr_page_check, then every listed name got back. The input is
 * the run, 1..DG_XATTR_64K_PAGES pages (as many as it spans), read as
 * a volume with DG_FEAT_INCOMPAT_XATTR_64K would (17-bit lengths); a
 * run that passes without the feature must pass with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_vol.h"

#define RUN_BYTES ((size_t)DG_XATTR_64K_PAGES * DG_PAGE_SIZE)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t run[RUN_BYTES] __attribute__((aligned(4096)));
	static char list[RUN_BYTES + DG_PAGE_SIZE], val[RUN_BYTES];
	size_t take = size < RUN_BYTES ? size : RUN_BYTES;
	uint32_t pages = take ? (uint32_t)((take + DG_PAGE_SIZE - 1) /
					   DG_PAGE_SIZE)
			      : 1;
	int n;

	memset(run, 0, sizeof(run));
	memcpy(run, data, take);
	if (dg_xattr_page_check(run, pages, false) == 0)
		FUZZ_ASSERT(dg_xattr_page_check(run, pages, true) == 0);
	if (dg_xattr_page_check(run, pages, true))
		return 0;
	n = dg_xattr_page_list(run, NULL, 0);
	FUZZ_ASSERT(n >= 0 && (size_t)n <= sizeof(list));
	FUZZ_ASSERT(dg_xattr_page_list(run, list, sizeof(list)) == n);
	for (int off = 0; off < n; off += (int)strlen(list + off) + 1) {
		int len = dg_xattr_page_get(run, list + off, NULL, 0);

		FUZZ_ASSERT(len >= 0 && len <= (int)DG_XATTR_VALUE_MAX &&
			    (size_t)len < pages * (size_t)DG_PAGE_SIZE);
		FUZZ_ASSERT(dg_xattr_page_get(run, list + off, val,
					      sizeof(val)) == len);
		if (len > 1) /* size 0 asks for the length */
			FUZZ_ASSERT(dg_xattr_page_get(run, list + off, val,
						      (size_t)len - 1) ==
				    -ERANGE);
	}
	return 0;
}
