// SPDX-License-Identifier: MIT
/* fz_dir.c -- directory pages through the parser the daemon's lookup and
 * readdir are served from (dg_dir_parse_page, as dg_dir_load calls it),
 * then every name it indexed looked up again. Input: up to MAX_PAGES
 * pages of a directory. */
#include <stdio.h>
#include <string.h>

#include "fuzz_vol.h"

#define MAX_PAGES 4u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dg_vol *vol = dg_fuzz_vol();
	static uint8_t page[DG_PAGE_SIZE] __attribute__((aligned(4096)));
	struct dg_dir *dir;
	int ret = 0;

	if (dg_dir_new(&dir))
		return 0;
	for (uint64_t pg = 0; !ret && pg < MAX_PAGES && size; pg++) {
		size_t n = size < DG_PAGE_SIZE ? size : DG_PAGE_SIZE;

		memset(page, 0, sizeof(page));
		memcpy(page, data, n);
		data += n;
		size -= n;
		ret = dg_dir_parse_page(vol, dir, 1, pg, page);
	}
	if (ret == 0) {
		size_t live = 0;

		for (size_t i = 0; i < dir->nents; i++) {
			struct dg_dent *de = &dir->ents[i], *f;

			FUZZ_ASSERT(de->off + de->reclen <= DG_PAGE_SIZE);
			if (!de->ino)
				continue;
			live++;
			FUZZ_ASSERT(!strchr(de->name, '/') && de->name[0]);
			f = dg_dir_find(dir, de->name);
			FUZZ_ASSERT(f && f->ino && !strcmp(f->name, de->name));
		}
		FUZZ_ASSERT(live >= dir->nlive);
	}
	dg_dir_free(dir);
	return 0;
}
