// SPDX-License-Identifier: MIT
/* check_redundancy.c -- fsck of the redundancy: every checksum page copy,
 * every written page against its checksum, every row's parity, the
 * ditto copies; findings from the fault events the read path records */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "csum.h"

/* Findings are reported once per (kind, dev, page). */
struct seen {
	uint64_t *keys;
	size_t cap, n;
};

static bool seen_add(struct seen *s, uint64_t key)
{
	size_t j;

	key = key * 0x9e3779b97f4a7c15ull + 1;
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *k = calloc(cap, sizeof(*k));

		if (!k)
			return true;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->keys[i])
				continue;
			j = (s->keys[i] >> 7) & (cap - 1);
			while (k[j])
				j = (j + 1) & (cap - 1);
			k[j] = s->keys[i];
		}
		free(s->keys);
		s->keys = k;
		s->cap = cap;
	}
	j = (key >> 7) & (s->cap - 1);
	while (s->keys[j]) {
		if (s->keys[j] == key)
			return false;
		j = (j + 1) & (s->cap - 1);
	}
	s->keys[j] = key;
	s->n++;
	return true;
}

struct rctx {
	struct dg_vol *vol;
	bool repair;
	dg_chk_fn fn;
	void *arg;
	uint64_t since;
	struct seen seen;
	/* Detections waiting for their outcome; a repair can detect
	 * neighbours before the first detection is resolved. */
	struct dg_chk_event pend[16];
	int pres[16];		/* -1 open, or its enum dg_fault outcome */
	unsigned np;
	uint64_t unrecoverable;
	struct dg_chk_stats *st;
};

/* An unrecoverable page that an earlier fsck -y gave up (given_up.c):
 * found as that repair left it, a warning, not a new loss. */
static void note_given_up(struct rctx *c, struct dg_chk_event *ev)
{
	struct dg_vol *vol = c->vol;

	if (ev->kind != DG_CHK_PAGE_BAD || ev->dev < 0 ||
	    ev->page < (int64_t)vol->sb.data_start ||
	    !dg_page_given_up(vol, (unsigned)ev->dev,
			      (uint64_t)ev->page - vol->sb.data_start))
		return;
	ev->kind = DG_CHK_PAGE_GIVEN_UP;
	snprintf(ev->detail, sizeof(ev->detail), "%s page given up by an "
		 "earlier repair: its bytes are lost", ev->structure);
	snprintf(ev->action, sizeof(ev->action),
		 "none: reads of it give EIO");
	c->unrecoverable--;
}

static void rflush_one(struct rctx *c, struct dg_chk_event *ev, int res)
{
	uint64_t key;

	if (res == DG_FAULT_REPAIRED || res == DG_FAULT_RECOVERED) {
		/* Recovered: the bytes are proven, the media was left as
		 * it was (read-only, or the repair declined). */
		ev->fixable = true;
		ev->fixed = res == DG_FAULT_REPAIRED && c->repair;
	} else {
		ev->fixable = false;
		ev->fixed = false;
		c->unrecoverable++;
		if (!ev->action[0] || res < 0)
			snprintf(ev->action, sizeof(ev->action),
				 "none: cannot be verified or rebuilt");
		note_given_up(c, ev);
	}
	key = ((uint64_t)ev->kind << 56) ^ ((uint64_t)(ev->dev + 1) << 48) ^
	      (uint64_t)ev->page;
	if (seen_add(&c->seen, key))
		dg_chk_emit(c->fn, c->arg, ev);
}

static void rflush(struct rctx *c)
{
	for (unsigned i = 0; i < c->np; i++)
		rflush_one(c, &c->pend[i], c->pres[i]);
	c->np = 0;
}

static void rdrain(struct rctx *c)
{
	struct dg_fault_event evs[64];
	unsigned n;

	while ((n = dg_vol_fault_events(c->vol, c->since, evs, 64)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			struct dg_fault_event *f = &evs[i];
			bool csum = f->what == DG_WHAT_CSUM_PAGE ||
				    f->what == DG_WHAT_CSUM_COPY ||
				    f->what == DG_WHAT_CMAP;
			/* located by device page, not by data row */
			bool byloc = csum || f->what == DG_WHAT_DITTO;
			struct dg_chk_event *ev = NULL;
			int j;

			c->since = f->seq;
			if (f->kind != DG_FAULT_DETECTED) {
				/* the newest open detection of this page */
				for (j = (int)c->np - 1; j >= 0; j--)
					if (c->pres[j] < 0 &&
					    c->pend[j].dev == (int)f->dev &&
					    (byloc || c->pend[j].page ==
					     (int64_t)dg_row_page(c->vol, f->row) ||
					     c->pend[j].kind == DG_CHK_CSUM_BAD ||
					     c->pend[j].kind == DG_CHK_CSUM_STALE))
						break;
				if (j < 0 && c->np)
					for (j = (int)c->np - 1; j >= 0; j--)
						if (c->pres[j] < 0)
							break;
				if (j >= 0)
					ev = &c->pend[j];
			}
			if (!ev) {
				if (c->np == 16)
					rflush(c);
				j = (int)c->np++;
				ev = &c->pend[j];
				/* A stale copy is no damage: the copy
				 * lost writes (csum.c, repair_copy()). */
				dg_chk_event_init(ev, f->stale ? DG_CHK_CSUM_STALE
						      : csum   ? DG_CHK_CSUM_BAD
							       : DG_CHK_PAGE_BAD,
						  "data");
				dg_chk_locate(c->vol, ev, f->dev, f->row, f->what);
				if (f->stale)
					snprintf(ev->detail, sizeof(ev->detail),
						 "%s page %s", ev->structure,
						 f->action);
				else
					snprintf(ev->detail, sizeof(ev->detail),
						 "%s page fails verification "
						 "(%s)", ev->structure,
						 f->action);
				c->pres[j] = -1;
				if (f->kind == DG_FAULT_DETECTED)
					continue;
			}
			if (c->pres[j] == DG_FAULT_UNRECOVERABLE)
				continue;
			c->pres[j] = (int)f->kind;
			snprintf(ev->action, sizeof(ev->action), "%s",
				 f->kind == DG_FAULT_UNRECOVERABLE ? "none"
								   : f->action);
		}
	}
	rflush(c);
}

/* A written row, verified and its parity judged (dg_vol_pass_rows). */
static void check_row(void *arg, uint64_t row, const uint64_t *cs, bool ok,
		      unsigned stale, bool fixed)
{
	struct rctx *c = arg;
	struct dg_vol *vol = c->vol;
	unsigned m = vol->k + vol->parity;

	(void)ok;
	c->st->rows_checked++;
	for (unsigned p = 0; p < m; p++) {
		if (cs[dg_row_pos_dev(vol, row, p)] != DG_CSUM_NONE) {
			c->st->pages_checked++;
			c->st->bytes_checked += DG_PAGE_SIZE;
		}
	}
	for (unsigned j = 0; j < vol->parity; j++) {
		unsigned dev = dg_row_parity_dev(vol, row, j);
		struct dg_chk_event ev;

		if (!(stale & (1u << j)))
			continue;
		dg_chk_event_init(&ev, DG_CHK_PARITY_STALE, "parity");
		ev.dev = (int)dev;
		ev.page = (int64_t)dg_row_page(vol, row);
		ev.fixable = true;
		snprintf(ev.detail, sizeof(ev.detail),
			 "parity of row %llu disagrees with its verified data",
			 (unsigned long long)row);
		snprintf(ev.action, sizeof(ev.action),
			 "recompute parity from the data");
		ev.fixed = fixed && vol->devs[dev].present;
		dg_chk_emit(c->fn, c->arg, &ev);
	}
}

static void drain(void *arg)
{
	rdrain(arg);
}

/*
 * Every checksum page, before any data is judged by it: the newest copy
 * that verifies wins, and every stale (older generation) or damaged copy
 * is a finding, rewritten from the winner when repairing (G6: a copy is
 * replaced only when a newer verified copy proves it wrong; data never
 * decides). A page of which no copy verifies, while the init map says it
 * was written, leaves the pages it covers unverifiable.
 *
 * Only the indexes the init map says were written: no entry of the
 * others was ever set (a bit is set before any entry of its pages), so
 * every page they cover is "never written" whatever their copies hold;
 * a copy left by an initialisation a crash cut short is made equal to
 * the others by the next one (cmap_init_index()). The map's own copies were verified at open
 * (dg_cmap_load(): the union of the copies that verify, the stale and
 * damaged ones noted, and rewritten when repairing); those findings are
 * drained before this pass. docs/design.md, "What the passes visit".
 */
static void check_csum_pages(struct rctx *c, uint8_t *img)
{
	struct dg_vol *vol = c->vol;
	unsigned flags = DG_CPX_QUIET | (c->repair ? DG_CPX_REPAIR : 0);
	const uint64_t np = vol->sb.csum_pages;

	for (unsigned d = 0; d < vol->ndev; d++) {
		for (uint64_t i = dg_cmap_next_set(vol, 0, np); i < np;
		     i = dg_cmap_next_set(vol, i + 1, np)) {
			pthread_mutex_t *lk = &vol->csum_locks[dg_cpage_lock_idx(
				dg_cpage_key(d, i))];
			struct dg_cpage_view v;
			struct dg_chk_event ev;
			int r;

			pthread_mutex_lock(lk);
			dg_cpcache_drop(vol, d, i);
			r = dg_cpage_examine(vol, d, i, img, &v, flags);
			pthread_mutex_unlock(lk);
			if (r < 0) {
				dg_chk_event_init(&ev, DG_CHK_CSUM_BAD,
						  "checksum");
				ev.dev = (int)d;
				ev.page = (int64_t)dg_cpage_copy_page(vol, i, 0);
				snprintf(ev.detail, sizeof(ev.detail),
					 "no copy of checksum page %llu of device "
					 "%u verifies: the pages it covers "
					 "cannot be verified",
					 (unsigned long long)i, d);
				snprintf(ev.action, sizeof(ev.action),
					 "none: cannot be verified or rebuilt");
				c->unrecoverable++;
				if (seen_add(&c->seen, ((uint64_t)ev.kind << 56) ^
						       ((uint64_t)(ev.dev + 1) << 48) ^
						       (uint64_t)ev.page))
					dg_chk_emit(c->fn, c->arg, &ev);
				continue;
			}
			for (unsigned k = 0; r > 0 && k < v.ncopies; k++) {
				bool stale = v.state[k] == DG_COPY_STALE;

				if (!stale && v.state[k] != DG_COPY_BAD)
					continue;
				dg_chk_event_init(&ev, stale
							  ? DG_CHK_CSUM_STALE
							  : DG_CHK_CSUM_BAD,
						  "checksum");
				ev.dev = (int)dg_cpage_copy_dev(vol, d, k);
				ev.page = (int64_t)dg_cpage_copy_page(vol, i, k);
				if (stale)
					snprintf(ev.detail, sizeof(ev.detail),
						 "copy %u of checksum page %llu "
						 "of device %u is stale "
						 "(generation %#llx, newest "
						 "%#llx: lost writes)", k,
						 (unsigned long long)i, d,
						 (unsigned long long)v.copy_gen[k],
						 (unsigned long long)v.gen);
				else
					snprintf(ev.detail, sizeof(ev.detail),
						 "copy %u of checksum page %llu "
						 "of device %u fails its seal",
						 k, (unsigned long long)i, d);
				snprintf(ev.action, sizeof(ev.action),
					 "rewrite from copy %u (newest)",
					 v.source);
				ev.fixable = true;
				ev.fixed = c->repair;
				dg_chk_emit(c->fn, c->arg, &ev);
			}
		}
	}
}

int dg_check_redundancy(struct dg_vol *vol, bool repair, dg_chk_fn fn,
			void *arg, dg_progress_fn progress, void *parg,
			struct dg_chk_stats *st)
{
	struct rctx c = { 0 };
	struct dg_row_pass p = {
		.repair = repair && !vol->read_only, .offline = true,
		.progress = progress, .parg = parg,
		.row = check_row, .after = drain, .arg = &c,
		.rows_ahead = &st->rows_ahead,
		.rows_in_place = &st->rows_in_place,
	};
	uint8_t *img;
	int ret;

	memset(st, 0, sizeof(*st));
	if (!vol->redundancy)
		return 0;
	c.vol = vol;
	c.repair = p.repair;
	c.fn = fn;
	c.arg = arg;
	c.st = st;
	/* Faults the open itself met (and, writable, repaired while
	 * loading the root and bitmap) are findings of this pass too. */
	c.since = 0;
	img = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!img)
		return -ENOMEM;
	/* Repair order: checksums first, then data from parity, parity
	 * last and only from verified data (dg_vol_pass_rows). */
	rdrain(&c);
	check_csum_pages(&c, img);
	free(img);
	ret = dg_vol_pass_rows(vol, &p);
	st->unrecoverable = c.unrecoverable;
	free(c.seen.keys);
	return ret;
}
