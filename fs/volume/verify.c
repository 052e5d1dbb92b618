// SPDX-License-Identifier: MIT
/* verify.c -- scrub: every page against its checksum, every row's parity */
#include <stdlib.h>
#include <string.h>

#include "csum.h"

/* True when no page of the row was ever written (all checksums NONE). */
static int row_unwritten(struct dg_vol *vol, struct dg_csum_cursor *cur,
			 uint64_t row, uint64_t *cs, bool *known)
{
	bool all_none = true;

	for (unsigned d = 0; d < vol->ndev; d++) {
		known[d] = dg_csum_lookup(vol, &cur[d], d, row, &cs[d]) == 0;
		if (!known[d] || cs[d] != DG_CSUM_NONE)
			all_none = false;
	}
	return all_none;
}

bool dg_row_recompute(struct dg_vol *vol, uint64_t row, uint8_t *mem,
		      uint8_t **pages, uint8_t **calc,
		      struct dg_csum_cursor *cur)
{
	unsigned m = vol->k + vol->parity;
	bool ok = true;

	for (unsigned p = 0; p < m; p++)
		pages[p] = mem + (size_t)p * DG_PAGE_SIZE;
	for (unsigned j = 0; j < vol->parity; j++)
		calc[j] = mem + (size_t)(m + j) * DG_PAGE_SIZE;
	for (unsigned p = 0; p < m; p++) {
		unsigned dev = dg_row_pos_dev(vol, row, p);
		uint64_t cs;

		if (dg_page_read_cur(vol, cur ? &cur[dev] : NULL, dev, row,
				     pages[p], &cs) < 0)
			ok = false;	/* counted by the read path */
	}
	if (ok && vol->parity)
		dg_parity_compute(vol, pages, calc, DG_PAGE_SIZE);
	return ok;
}

/*
 * Pages of the row that fail their checksums keep them and go on failing
 * (G6: nothing is blessed), but parity agrees with the row again, and the
 * page written verifies. Not journaled: fsck runs offline, and a crash
 * midway leaves the page failing its checksum, which the next run finds
 * again. The data and parity are durable before the checksums say so.
 */
int dg_row_replace_page(struct dg_vol *vol, uint64_t vpn, const void *data)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);
	unsigned k = vol->k, m = k + vol->parity;
	uint64_t off = dg_row_page(vol, l.row) << DG_PAGE_SHIFT;
	uint8_t *mem, *pages[DG_MAX_DEVS];
	pthread_rwlock_t *lk;
	struct dg_flushset fs;
	int ret;

	if (vol->read_only)
		return -EROFS;
	if (!vol->redundancy)
		return -EOPNOTSUPP;	/* nothing fails verification */
	for (unsigned p = 0; p < m; p++)
		if (!vol->devs[dg_row_pos_dev(vol, l.row, p)].present)
			return -ENXIO;	/* degraded: rebuild the device first */
	mem = aligned_alloc(DG_PAGE_SIZE, (size_t)m * DG_PAGE_SIZE);
	if (!mem)
		return -ENOMEM;
	lk = dg_row_lock(vol, l.row);
	pthread_rwlock_wrlock(lk);
	dg_repair_page(vol, l.dev, l.row, data);
	for (unsigned p = 0; p < m; p++) {
		pages[p] = mem + (size_t)p * DG_PAGE_SIZE;
		if (p < k)
			memcpy(pages[p],
			       dg_dev_ptr(&vol->devs[dg_row_pos_dev(vol, l.row,
								    p)],
					  off),
			       DG_PAGE_SIZE);
	}
	/* Parity of the row as it is, bad pages and all (they keep failing
	 * their own checksums): the one repair whose input is not proven,
	 * because what it replaces has been given up (repair.c). */
	if (vol->parity)
		dg_parity_compute(vol, pages, pages + k, DG_PAGE_SIZE);
	dg_flushset_init(&fs);
	ret = dg_csum_set(vol, l.dev, l.row,
			  dg_csum_page(vol, l.dev, l.row, data), &fs);
	dg_flushset_fini(&fs);
	if (!ret && vol->parity)
		ret = dg_repair_parity(vol, l.row, pages + k);
	pthread_rwlock_unlock(lk);
	free(mem);
	return ret;
}

/* Compare stored parity with parity computed from the verified data;
 * recompute and rewrite it when repairing. */
static void check_parity(struct dg_vol *vol, uint64_t row, uint8_t *mem,
			 bool repair, struct dg_scrub_report *rep,
			 struct dg_csum_cursor *cur)
{
	unsigned k = vol->k;
	uint8_t *pages[DG_MAX_DEVS], *calc[DG_MAX_PARITY];
	bool mismatch = false;

	if (!dg_row_recompute(vol, row, mem, pages, calc, cur))
		return;
	for (unsigned j = 0; j < vol->parity; j++)
		if (memcmp(calc[j], pages[k + j], DG_PAGE_SIZE))
			mismatch = true;
	if (!mismatch)
		return;
	rep->parity_mismatch++;
	dg_log(DG_LOG_WARNING, "parity mismatch row=%" PRIu64 "%s", row,
	       repair && !vol->read_only ? " action=recomputed" : "");
	if (!repair || vol->read_only)
		return;
	dg_repair_parity(vol, row, calc);
	rep->parity_fixed++;
}

int dg_vol_scrub(struct dg_vol *vol, bool repair, struct dg_scrub_report *rep,
		 dg_progress_fn progress, void *arg)
{
	struct dg_csum_cursor cur[DG_MAX_DEVS];
	uint64_t before[DG_FAULT_NR], after[DG_FAULT_NR];
	uint64_t cs[DG_MAX_DEVS];
	bool known[DG_MAX_DEVS];
	uint8_t *mem;
	int ret = 0;

	memset(rep, 0, sizeof(*rep));
	if (!vol->redundancy)
		return 0;
	mem = aligned_alloc(DG_PAGE_SIZE,
			    (DG_MAX_DEVS + DG_MAX_PARITY) * DG_PAGE_SIZE);
	if (!mem)
		return -ENOMEM;
	/* A scrub reads every checksum page from media, never the cache. */
	for (unsigned d = 0; d < vol->ndev; d++) {
		dg_csum_cursor_init(&cur[d]);
		cur[d].uncached = true;
	}
	dg_vol_fault_counts(vol, before);
	for (uint64_t row = 0; row < vol->sb.rows && !ret; row++) {
		pthread_rwlock_t *lk = dg_row_lock(vol, row);

		if (progress && row % 4096 == 0)
			progress(arg, row, vol->sb.rows);
		pthread_rwlock_wrlock(lk);
		for (unsigned d = 0; d < vol->ndev; d++)
			cur[d].owner = -1;
		if (!row_unwritten(vol, cur, row, cs, known)) {
			rep->rows_checked++;
			if (vol->parity) {
				check_parity(vol, row, mem, repair, rep, cur);
			} else {
				for (unsigned d = 0; d < vol->ndev; d++) {
					uint64_t c;

					dg_page_read_locked(vol, d, row, mem, &c);
				}
			}
		}
		pthread_rwlock_unlock(lk);
	}
	if (!ret) {
		uint64_t stale;

		ret = dg_ditto_check(vol, repair, &stale);
	}
	if (progress)
		progress(arg, vol->sb.rows, vol->sb.rows);
	dg_vol_fault_counts(vol, after);
	rep->detected = after[DG_FAULT_DETECTED] - before[DG_FAULT_DETECTED];
	rep->repaired = after[DG_FAULT_REPAIRED] - before[DG_FAULT_REPAIRED];
	rep->unrecoverable = after[DG_FAULT_UNRECOVERABLE] -
			     before[DG_FAULT_UNRECOVERABLE];
	for (unsigned d = 0; d < vol->ndev; d++)
		dg_csum_cursor_fini(&cur[d]);
	free(mem);
	return ret;
}
