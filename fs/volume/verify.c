// SPDX-License-Identifier: MIT
/* verify.c -- scrub: every page against its checksum, every row's parity */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csum.h"

/* Parity from verified data, a repair with two steps: repair.c states why
 * parity pages first, then their checksums, is crash safe. */
int dg_repair_parity(struct dg_vol *vol, uint64_t row, uint8_t *const *calc)
{
	struct dg_flushset fs;
	int ret = 0;

	for (unsigned j = 0; j < vol->parity && !ret; j++)
		ret = dg_repair_page(vol, dg_row_parity_dev(vol, row, j), row,
				     calc[j]);
	if (ret)
		return ret; /* no checksum for parity not written */
	dg_flushset_init(&fs);
	for (unsigned j = 0; j < vol->parity && !ret; j++) {
		unsigned dev = dg_row_parity_dev(vol, row, j);

		if (vol->devs[dev].present)
			ret = dg_csum_set(vol, dev, row,
					  dg_csum_page(vol, dev, row, calc[j]),
					  &fs);
	}
	dg_flushset_fini(&fs);
	return ret;
}

/* Compare each ditto copy of vpn with its page, rewriting a stale one
 * from the page when repairing. */
static void ditto_check_page(struct dg_vol *vol, uint64_t vpn, bool repair,
			     uint8_t *page, uint8_t *copy, uint64_t *stale)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);
	pthread_rwlock_t *lk = dg_row_lock(vol, l.row);
	uint64_t csum;

	/* Free pages too: the bitmap may be what fsck is about to
	 * repair, and a page it then marks in use must not keep a
	 * stale copy. Never-written pages are skipped below. */
	pthread_rwlock_wrlock(lk);
	if (dg_page_read_locked(vol, l.dev, l.row, page, &csum) < 0 ||
	    csum == DG_CSUM_NONE) {
		/* unreadable: counted by the read path; never
		 * written: the copies are never read */
		pthread_rwlock_unlock(lk);
		return;
	}
	for (unsigned j = 1; j <= vol->sb.ditto_copies; j++) {
		uint64_t off;
		struct dg_dev *d = dg_ditto_copy_at(vol, vpn, j, &off);

		if (!d)
			continue;
		memcpy(copy, dg_dev_ptr(d, off), DG_PAGE_SIZE);
		if (!memcmp(copy, page, DG_PAGE_SIZE))
			continue;
		(*stale)++;
		dg_fault_note(vol, DG_FAULT_DETECTED, d->idx,
			      off >> DG_PAGE_SHIFT, DG_WHAT_DITTO,
			      "copy differs from the page");
		if (!repair ||
		    !dg_repair_ok(vol, DG_CHK_PAGE_BAD, d->idx,
				  off >> DG_PAGE_SHIFT, DG_WHAT_DITTO,
				  "copy differs from the page",
				  "rewrite it from the page")) {
			/* The page itself is right; the copy stays
			 * as it is, repairable. */
			dg_fault_note(vol, DG_FAULT_RECOVERED, d->idx,
				      off >> DG_PAGE_SHIFT,
				      DG_WHAT_DITTO, "left as it is");
			continue;
		}
		/* A failure latched the volume (media.h): the
		 * copy stays as it is. */
		if (dg_repair_write(vol, d->idx, off, page,
				    DG_PAGE_SIZE))
			continue;
		dg_fault_note(vol, DG_FAULT_REPAIRED, d->idx,
			      off >> DG_PAGE_SHIFT, DG_WHAT_DITTO,
			      "rewritten from the page");
	}
	pthread_rwlock_unlock(lk);
}

/* Compare each ditto copy with its page: a stale copy is never read
 * (ditto.c), so the scrub and fsck rewrite it from the page here. By
 * rows, those of the vpns with copies, skipping blocks of rows never
 * written (their pages are never written: their copies are never read;
 * dg_vol_pass_rows() says why the map can be trusted). */
int dg_ditto_check(struct dg_vol *vol, bool repair, uint64_t *stale)
{
	uint8_t *page = aligned_alloc(DG_PAGE_SIZE, 2 * DG_PAGE_SIZE);
	uint64_t zone = vol->sb.ditto_pages < vol->vpns ? vol->sb.ditto_pages
							: vol->vpns;
	uint64_t run = (uint64_t)vol->k * vol->sb.chunk_pages;
	uint64_t end = run ? (zone + run - 1) / run * vol->sb.chunk_pages : 0;
	struct dg_row_walk w;
	uint64_t row;

	*stale = 0;
	if (!page)
		return -ENOMEM;
	if (end > vol->sb.rows)
		end = vol->sb.rows;
	dg_walk_init(&w, vol, 0, end);
	while (vol->redundancy && dg_walk_next(&w, &row)) {
		for (unsigned d = 0; d < vol->ndev; d++) {
			uint64_t vpn;

			if (dg_row_dev_is_parity(vol, row, d))
				continue;
			vpn = dg_loc_vpn(vol, d, row);
			if (vpn < zone)
				ditto_check_page(vol, vpn, repair, page,
						 page + DG_PAGE_SIZE, stale);
		}
	}
	free(page);
	return 0;
}

/* True when a page of the row was written: its checksum is not NONE, or
 * cannot be looked up (then cs says 1, "unknown", and the read path
 * decides). */
static bool row_written(struct dg_vol *vol, struct dg_csum_cursor *cur,
			uint64_t row, uint64_t *cs, bool *known)
{
	bool any = false;

	*known = true;
	for (unsigned d = 0; d < vol->ndev; d++) {
		int r = dg_csum_lookup(vol, &cur[d], d, row, &cs[d]);

		if (r < 0 || cs[d] != DG_CSUM_NONE)
			any = true;
		if (r < 0) {
			cs[d] = 1;
			*known = false;
		}
	}
	return any;
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
	ret = dg_repair_page(vol, l.dev, l.row, data);
	/* Its copies too, or the next check finds them differing. A copy
	 * trusted only when it matches the checksum, so the order against
	 * the checksum below does not matter for a crash. */
	if (!ret)
		ret = dg_ditto_repair(vol, vpn, data);
	if (ret) {
		pthread_rwlock_unlock(lk);
		free(mem);
		return ret;
	}
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

/* Every parity page of the row that is stale may be rewritten. */
static bool parity_repair_ok(struct dg_vol *vol, uint64_t row,
			     unsigned stale)
{
	for (unsigned j = 0; j < vol->parity; j++)
		if ((stale & (1u << j)) &&
		    !dg_repair_ok(vol, DG_CHK_PARITY_STALE,
				  dg_row_parity_dev(vol, row, j), row,
				  DG_WHAT_PARITY, "disagrees with the data",
				  "recompute parity from the data"))
			return false;
	return true;
}

/* A row that verified as it lies (dg_row_clean(), here or ahead): what
 * the read path does for each page that verifies, and the report. */
static void row_clean_done(struct dg_vol *vol, const struct dg_row_pass *p,
			   uint64_t row, const uint64_t *cs)
{
	for (unsigned q = 0; q < vol->k + vol->parity; q++) {
		unsigned d = dg_row_pos_dev(vol, row, q);

		if (cs[d] != DG_CSUM_NONE)
			dg_fault_loss_verified(vol, d, row);
	}
	if (p->row)
		p->row(p->arg, row, cs, true, 0, false);
}

/* Verify the row's pages and compare its parity with parity computed
 * from them; recompute it when repairing. Parity last, and only from
 * verified data. A row that verifies where it lies (known: every
 * checksum in cs looked up) is done without a copy; any other goes
 * the read path's way. Caller holds the row lock. */
static void pass_row(struct dg_vol *vol, const struct dg_row_pass *p,
		     uint64_t row, uint8_t *mem, const uint64_t *cs,
		     bool known, struct dg_csum_cursor *cur)
{
	unsigned k = vol->k;
	uint8_t *pages[DG_MAX_DEVS], *calc[DG_MAX_PARITY];
	unsigned stale = 0;
	bool ok, fixed = false;

	if (known && dg_row_clean(vol, row, cs, mem)) {
		if (p->rows_in_place)
			(*p->rows_in_place)++;
		row_clean_done(vol, p, row, cs);
		return;
	}
	ok = dg_row_recompute(vol, row, mem, pages, calc, cur);
	for (unsigned j = 0; ok && j < vol->parity; j++)
		if (memcmp(calc[j], pages[k + j], DG_PAGE_SIZE))
			stale |= 1u << j;
	if (stale && p->repair && parity_repair_ok(vol, row, stale))
		fixed = dg_repair_parity(vol, row, calc) == 0;
	if (p->row)
		p->row(p->arg, row, cs, ok, stale, fixed);
}

/* One thread: the written pages of row's block, from row to the end of
 * the block or the pass (from the checksum pages the look-ups of the
 * row before it just read: dg_rows_map_in()). Returns the row they go
 * up to. */
static uint64_t map_in(struct dg_vol *vol, const struct dg_csum_cursor *cur,
		       uint64_t row, uint64_t end)
{
	uint64_t index = row / DG_CSUMS_PER_PAGE;
	uint64_t e = (index + 1) * DG_CSUMS_PER_PAGE;

	if (e > end)
		e = end;
	for (unsigned d = 0; d < vol->ndev; d++)
		if (cur[d].owner == (int)d && cur[d].index == index &&
		    cur[d].entries)
			dg_rows_map_in(vol, d, cur[d].entries, row, e);
	return e;
}

int dg_vol_pass_rows(struct dg_vol *vol, const struct dg_row_pass *p)
{
	struct dg_csum_cursor cur[DG_MAX_DEVS];
	uint64_t before[DG_FAULT_NR], after[DG_FAULT_NR];
	uint64_t cs[DG_MAX_DEVS], stale;
	uint64_t end = p->end && p->end < vol->sb.rows ? p->end : vol->sb.rows;
	struct dg_row_walk w;
	struct dg_par *par = p->par, *own = NULL;
	uint64_t ahead_end = end;
	uint8_t *mem;
	int ret = 0;

	mem = aligned_alloc(DG_PAGE_SIZE,
			    (DG_MAX_DEVS + DG_MAX_PARITY) * DG_PAGE_SIZE);
	if (!mem)
		return -ENOMEM;
	/* The rows ahead verified by threads (verify_par.c): offline the
	 * pass's own, online (the scrub) the caller's, which live across
	 * its passes of a few rows and may run ahead of them. */
	if (!par && p->offline)
		par = own = dg_par_start(vol, vol->check_threads);
	if (p->par && p->ahead_end > end)
		ahead_end = p->ahead_end < vol->sb.rows ? p->ahead_end
							: vol->sb.rows;
	/* Every checksum page from media, never the cache. */
	for (unsigned d = 0; d < vol->ndev; d++) {
		dg_csum_cursor_init(&cur[d]);
		cur[d].uncached = true;
	}
	/*
	 * Whole blocks of rows whose checksum page index is clear in the
	 * init map were never written (format.h): no live page, no parity
	 * obligation, nothing to verify; the walk (walk.c) skips them. The
	 * map in core is the union of its verified copies (dg_cmap_load();
	 * none verifying sets every bit), and bits are never cleared, so a
	 * block skipped here holds nothing written before the pass began.
	 * Online, a block may be initialised after its test: what lands
	 * there is new data, written with its checksums and parity by the
	 * update path (G2), and the next pass sees it; a scrub is for what
	 * decays at rest.
	 */
	dg_walk_init(&w, vol, p->first, end);
	for (uint64_t row, report = p->first, mapped = 0;
	     dg_walk_next(&w, &row);) {
		pthread_rwlock_t *lk;
		bool known, written;

		if (par && !dg_par_covers(par, row))
			dg_par_run(par, &w, row, ahead_end);
		/* every 1024 rows visited, and once after each skip */
		if (p->progress && row >= report) {
			p->progress(p->parg, row, vol->sb.rows);
			report = (row / 1024 + 1) * 1024;
		}
		lk = dg_row_lock(vol, row);
		/* One row's lock at a time, only while that row is checked:
		 * reads and updates of every other row go on. */
		pthread_rwlock_wrlock(lk);
		/* Online, updates change checksum pages between rows: look
		 * them up again, unless every copy is still at the
		 * generation looked up (dg_csum_cursor_current()). Offline
		 * (fsck, the only writer), a page looked up for one row
		 * stays right for the next, except what this pass
		 * repaired. */
		dg_vol_fault_counts(vol, before);
		if (!p->offline)
			for (unsigned d = 0; d < vol->ndev; d++)
				if (!dg_csum_cursor_current(vol, &cur[d]))
					cur[d].owner = -1;
		written = row_written(vol, cur, row, cs, &known);
		if (written && par && known && dg_par_verdict(par, row, cs)) {
			if (p->rows_ahead)
				(*p->rows_ahead)++;
			row_clean_done(vol, p, row, cs);
		} else if (written)
			pass_row(vol, p, row, mem, cs, known, cur);
		dg_vol_fault_counts(vol, after);
		if (memcmp(before, after, sizeof(before)))
			for (unsigned d = 0; d < vol->ndev; d++)
				cur[d].owner = -1;
		pthread_rwlock_unlock(lk);
		/* One thread: the rest of the block mapped in as the pass
		 * enters it, outside the row's lock (on a disk that may wait
		 * for reads). */
		if (!par && written && row + 1 >= mapped && row + 1 < end &&
		    (row + 1) % DG_CSUMS_PER_PAGE)
			mapped = map_in(vol, cur, row + 1, end);
		if (p->after)
			p->after(p->arg);
	}
	dg_par_stop(own);
	if (!p->rows_only) {
		ret = dg_ditto_check(vol, p->repair && !vol->read_only, &stale);
		if (p->after)
			p->after(p->arg);
		if (p->progress)
			p->progress(p->parg, vol->sb.rows, vol->sb.rows);
	}
	for (unsigned d = 0; d < vol->ndev; d++)
		dg_csum_cursor_fini(&cur[d]);
	free(mem);
	return ret;
}

struct scrub {
	struct dg_vol *vol;
	struct dg_scrub_report *rep;
};

static void scrub_row(void *arg, uint64_t row, const uint64_t *cs, bool ok,
		      unsigned stale, bool fixed)
{
	struct scrub *s = arg;

	(void)cs, (void)ok;
	s->rep->rows_checked++;
	if (!stale)
		return;
	s->rep->parity_mismatch++;
	s->rep->parity_fixed += fixed;
	dg_vol_log(s->vol, DG_LOG_WARNING,
		   "parity mismatch row=%" PRIu64 "%s", row,
		   fixed ? " action=recomputed" : "");
}

/* The scrub's pass over p's rows, its faults counted in rep: the ones
 * this thread met, never a concurrent reader's (dg_fault_attribute()). */
static int scrub_pass(struct dg_vol *vol, struct dg_row_pass *p,
		      struct dg_scrub_report *rep)
{
	struct scrub s = { vol, rep };
	int ret;

	if (!vol->redundancy)
		return 0;
	p->row = scrub_row;
	p->arg = &s;
	p->rows_ahead = &rep->rows_ahead;
	dg_fault_attribute(rep);
	ret = dg_vol_pass_rows(vol, p);
	dg_fault_attribute(NULL);
	return ret;
}

int dg_vol_scrub(struct dg_vol *vol, bool repair, struct dg_scrub_report *rep,
		 dg_progress_fn progress, void *arg)
{
	struct dg_row_pass p = {
		.repair = repair, .progress = progress, .parg = arg,
	};

	memset(rep, 0, sizeof(*rep));
	return scrub_pass(vol, &p, rep);
}

int dg_vol_scrub_rows(struct dg_vol *vol, bool repair, uint64_t first,
		      uint64_t end, struct dg_scrub_report *rep)
{
	return dg_vol_scrub_rows_par(vol, repair, first, end, NULL, end, rep);
}

int dg_vol_scrub_rows_par(struct dg_vol *vol, bool repair, uint64_t first,
			  uint64_t end, struct dg_par *par, uint64_t ahead_end,
			  struct dg_scrub_report *rep)
{
	struct dg_row_pass p = {
		.repair = repair, .first = first, .end = end,
		.rows_only = true, .par = par, .ahead_end = ahead_end,
	};

	if (first >= end)
		return 0;
	return scrub_pass(vol, &p, rep);
}

struct dg_par *dg_vol_scrub_threads(struct dg_vol *vol, unsigned threads)
{
	if (!vol->redundancy)	/* nothing to verify */
		return NULL;
	return dg_par_start(vol, threads);
}

void dg_vol_scrub_threads_stop(struct dg_par *par)
{
	dg_par_stop(par);
}

void dg_vol_scrub_threads_halt(struct dg_par *par)
{
	dg_par_halt(par);
}

unsigned dg_vol_scrub_threads_n(const struct dg_par *par)
{
	return dg_par_threads(par);
}

uint64_t dg_vol_next_used_row(struct dg_vol *vol, uint64_t row,
			      uint64_t end)
{
	if (end > vol->sb.rows)
		end = vol->sb.rows;
	return vol->redundancy ? dg_cmap_next_row(vol, row, end) : row;
}

int dg_vol_scrub_ditto(struct dg_vol *vol, bool repair,
		       struct dg_scrub_report *rep)
{
	uint64_t stale;
	int ret;

	if (!vol->redundancy)
		return 0;
	dg_fault_attribute(rep);
	ret = dg_ditto_check(vol, repair && !vol->read_only, &stale);
	dg_fault_attribute(NULL);
	return ret;
}
