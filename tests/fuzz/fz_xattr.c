// SPDX-License-Identifier: MIT
/* fz_xattr.c -- an inode's xattr page as getxattr and listxattr read it:
 * dg_xattr_page_check, then every listed name got back */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_vol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t page[DG_PAGE_SIZE] __attribute__((aligned(4096)));
	static char list[DG_PAGE_SIZE * 2], val[DG_PAGE_SIZE];
	int n;

	memset(page, 0, sizeof(page));
	memcpy(page, data, size < sizeof(page) ? size : sizeof(page));
	if (dg_xattr_page_check(page, 1))
		return 0;
	n = dg_xattr_page_list(page, NULL, 0);
	FUZZ_ASSERT(n >= 0 && (size_t)n <= sizeof(list));
	FUZZ_ASSERT(dg_xattr_page_list(page, list, sizeof(list)) == n);
	for (int off = 0; off < n; off += (int)strlen(list + off) + 1) {
		int len = dg_xattr_page_get(page, list + off, NULL, 0);

		FUZZ_ASSERT(len >= 0 && len < (int)DG_PAGE_SIZE);
		FUZZ_ASSERT(dg_xattr_page_get(page, list + off, val,
					      sizeof(val)) == len);
		if (len > 1) /* size 0 asks for the length */
			FUZZ_ASSERT(dg_xattr_page_get(page, list + off, val,
						      (size_t)len - 1) ==
				    -ERANGE);
	}
	return 0;
}
