// SPDX-License-Identifier: MIT
/* jcopy.c -- a journal copy's area in rebuilt crash images, and the
 * faults the crash tests put there */
#include <string.h>

#include "harness.h"
#include "jcopy.h"
#include "recorder.h"

void jcopy_locate(struct dg_vol *vol, struct jcopy *jc, unsigned n)
{
	for (unsigned c = 0; c < n; c++) {
		uint64_t start, pages;

		dg_jrnl_loc(vol, c, &jc[c].dev, &start, &pages);
		jc[c].off = start << DG_PAGE_SHIFT;
		jc[c].bytes = pages << DG_PAGE_SHIFT;
	}
}

/* rec's snapshot of j's area, NULL (the case failed) without one. */
static const uint8_t *snap_of(struct crec *rec, const struct jcopy *j)
{
	uint64_t size;
	const uint8_t *snap = crec_snapshot(rec, j->dev, &size);

	CHECK(snap && j->off + j->bytes <= size);
	return snap && j->off + j->bytes <= size ? snap + j->off : NULL;
}

void jcopy_lose(struct tvol *out, struct crec *rec, const struct jcopy *j)
{
	const uint8_t *snap = snap_of(rec, j);

	if (snap)
		tvol_poke(out, j->dev, j->off, snap, j->bytes);
}

void jcopy_flip(struct tvol *out, struct crec *rec, const struct jcopy *j,
		uint8_t *area)
{
	const uint8_t *snap = snap_of(rec, j);

	if (!snap)
		return;
	tvol_peek(out, j->dev, j->off, area, j->bytes);
	for (uint64_t l = 2 * DG_PAGE_SIZE; l < j->bytes; l += 64) {
		uint8_t b = area[l + 17] ^ 0x5a;

		if (memcmp(area + l, snap + l, 64))
			tvol_poke(out, j->dev, j->off + l + 17, &b, 1);
	}
}
