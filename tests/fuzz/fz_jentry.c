// SPDX-License-Identifier: MIT
/* fz_jentry.c -- a journal entry through the decoder recovery uses
 * (dg_jentry_decode, then dg_jrange_check on every range as replay
 * does, the bound on the pages its runs of rows name as replay's first
 * pass takes it, and with JOURNAL_V2 dg_jentry_bytes_ok), as the bytes come and
 * with its checksum made to match; and the same bytes in a journal area
 * scanned by dg_journal_marks(). Each input goes through both layouts:
 * with the volume's JOURNAL_V2 off (every copy whole, one checksum) and
 * on (metadata and bytes checksummed apart). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_vol.h"

#define MAX_ENTRY (64u << 10)

/* What the replay's first pass asks of the entry's runs of rows
 * (dg_jentry_pages_take()): taken, they are valid, ascending and apart,
 * and name no more pages than the bound, which drops by them. */
static void runs_check(struct dg_vol *vol, const struct dg_djentry *e)
{
	const struct dg_djrange *r = (const void *)(e + 1);
	uint64_t budget = dg_jrange_budget(vol), left = budget, pages = 0;
	uint64_t next = 0;

	/* a wrap entry names nothing: the replay skips it */
	if (dg_jentry_pages_take(vol, e, &left) ||
	    (e->flags & DG_JENTRY_WRAP))
		return;
	for (uint32_t i = 0; i < e->nranges; i++) {
		if (!(r[i].flags & DG_JRANGE_ROWS))
			continue;
		FUZZ_ASSERT(dg_jrange_check(vol, &r[i]) == 0);
		FUZZ_ASSERT(r[i].row >= next);
		next = r[i].row + r[i].page_csum;
		FUZZ_ASSERT(next <= vol->sb.rows);
		pages += r[i].page_csum * vol->k;
	}
	FUZZ_ASSERT(pages <= budget && left == budget - pages);
}

static void replay_checks(struct dg_vol *vol, const struct dg_djentry *e,
			  size_t avail)
{
	const struct dg_djrange *r = (const void *)(e + 1);
	const uint8_t *bytes = (const uint8_t *)e +
			       dg_jentry_meta_len(vol, e->nranges);

	/* What a committed entry promises replay: every range's bytes lie
	 * inside the entry. */
	FUZZ_ASSERT(e->len <= avail);
	for (uint32_t i = 0; i < e->nranges; i++) {
		if (dg_jrange_check(vol, &r[i]) == 0)
			FUZZ_ASSERT(r[i].off + r[i].len <= DG_PAGE_SIZE);
		bytes += dg_jrange_bytes(&r[i]);
	}
	FUZZ_ASSERT(bytes <= (const uint8_t *)e + e->len);
	/* A lean entry is one sealed whole page outside the zone (format.h
	 * DG_JENTRY_LEAN), on a volume that has them. */
	if (e->flags & DG_JENTRY_LEAN)
		FUZZ_ASSERT(vol->lean_journal && e->nranges == 1 &&
			    r[0].flags == DG_JRANGE_SEALED &&
			    r[0].len == DG_PAGE_SIZE && r[0].off == 0);
	runs_check(vol, e);
}

static void one_layout(struct dg_vol *vol, uint8_t *area, const uint8_t *data,
		       size_t size)
{
	struct dg_djentry *e;
	int ret;

	memset(area, 0, 2 * DG_PAGE_SIZE);
	memcpy(area + 2 * DG_PAGE_SIZE, data, size);
	e = (void *)(area + 2 * DG_PAGE_SIZE);
	dg_journal_marks(vol, area, 2 * DG_PAGE_SIZE + size);
	ret = dg_jentry_decode(vol, e, size);
	if (ret == 0) {
		replay_checks(vol, e, size);
		(void)dg_jentry_bytes_ok(vol, e, e);
	}
	if (ret == -EBADMSG) {
		e->csum = dg_jentry_csum(vol, e);
		ret = dg_jentry_decode(vol, e, size);
		FUZZ_ASSERT(ret != -EUCLEAN); /* only the checksum changed */
		if (ret == 0) {
			replay_checks(vol, e, size);
			FUZZ_ASSERT(dg_journal_marks(vol, area,
						     2 * DG_PAGE_SIZE + size));
			(void)dg_jentry_bytes_ok(vol, e, e);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dg_vol *vol = dg_fuzz_vol();
	/* Two header slots, then the log, as on the media. */
	uint8_t *area;
	bool v2 = vol->journal_v2, lean = vol->lean_journal;

	if (size > MAX_ENTRY)
		size = MAX_ENTRY;
	area = aligned_alloc(DG_PAGE_SIZE, 2 * DG_PAGE_SIZE + MAX_ENTRY);
	if (!area)
		return 0;
	/* Lean entries exist only with JOURNAL_V2 (vol.c). */
	for (unsigned l = 0; l < 2; l++) {
		vol->journal_v2 = l;
		vol->lean_journal = l && lean;
		one_layout(vol, area, data, size);
	}
	vol->journal_v2 = v2;
	vol->lean_journal = lean;
	free(area);
	return 0;
}
