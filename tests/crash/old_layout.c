// SPDX-License-Identifier: MIT
/* old_layout.c -- a test volume as made before an incompat feature */
#include <stdlib.h>
#include "harness.h"
#include "old_layout.h"
#include "super.h"
#include "volume_i.h"

void tvol_clear_incompat(struct tvol *tv, uint64_t bits)
{
	struct dg_dsuper *sb = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);

	REQUIRE(sb);
	for (unsigned d = 0; d < tv->ndev; d++) {
		uint64_t last;

		tvol_peek(tv, d, 0, sb, DG_PAGE_SIZE);
		last = (sb->dev_pages - 1) * DG_PAGE_SIZE;
		for (unsigned c = 0; c < 2; c++) {
			uint64_t off = c ? last : 0;

			tvol_peek(tv, d, off, sb, DG_PAGE_SIZE);
			REQUIRE((sb->incompat & bits) == bits);
			sb->incompat &= ~bits;
			dg_dsuper_seal(sb);
			tvol_poke(tv, d, off, sb, DG_PAGE_SIZE);
		}
	}
	free(sb);
}
