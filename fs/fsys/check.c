// SPDX-License-Identifier: MIT
/* check.c -- fsck services: superblocks, journal, redundancy, fs walk */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "xxh.h"

#include "check.h"
#include "csum.h"
#include "fsys_i.h"
#include "super.h"

static void ev_init(struct dg_chk_event *ev, enum dg_chk_kind kind,
		    const char *structure)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->dev = -1;
	ev->page = -1;
	ev->vpn = -1;
	ev->structure = structure;
}

static void emit(dg_chk_fn fn, void *arg, struct dg_chk_event *ev)
{
	if (fn)
		fn(arg, ev);
}

const char *dg_vol_dev_path(struct dg_vol *vol, unsigned dev)
{
	if (dev >= vol->ndev || !vol->devs[dev].present)
		return NULL;
	return vol->devs[dev].path;
}

uint64_t dg_super_page(struct dg_vol *vol, unsigned copy)
{
	return copy ? vol->sb.dev_pages - 1 : 0;
}

int dg_check_csum(struct dg_vol *vol, unsigned dev, uint64_t row,
		  uint64_t *csum)
{
	int ret;

	if (dev >= vol->ndev || row >= vol->sb.rows)
		return -EINVAL;
	if (!vol->redundancy) {
		*csum = 1;
		return 0;
	}
	pthread_rwlock_rdlock(dg_row_lock(vol, row));
	ret = dg_csum_get(vol, dev, row, csum);
	pthread_rwlock_unlock(dg_row_lock(vol, row));
	return ret;
}

/* ---- superblocks ------------------------------------------------------ */

int dg_check_supers(struct dg_vol *vol, bool repair, dg_chk_fn fn, void *arg)
{
	struct dg_dsuper *want = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	int bad = 0;

	if (!want)
		return -ENOMEM;
	repair = repair && !vol->read_only;
	for (unsigned d = 0; d < vol->ndev; d++) {
		struct dg_dev *dv = &vol->devs[d];

		if (!dv->present)
			continue;
		*want = vol->sb;
		want->dev_index = d;
		memcpy(want->dev_uuid, vol->dev_uuid[d], 16);
		dg_dsuper_seal(want);
		for (unsigned c = 0; c < 2; c++) {
			uint64_t off = dg_super_page(vol, c) << DG_PAGE_SHIFT;
			const void *img = dg_dev_ptr(dv, off);
			struct dg_dsuper tmp;
			struct dg_chk_event ev;
			int r;

			if (!memcmp(img, want, DG_PAGE_SIZE))
				continue;
			r = dg_dsuper_decode(img, &tmp);
			ev_init(&ev, r ? DG_CHK_SUPER_BAD : DG_CHK_SUPER_DIFFERS,
				"superblock");
			ev.dev = (int)d;
			ev.page = (int64_t)dg_super_page(vol, c);
			ev.fixable = true;
			if (r)
				snprintf(ev.detail, sizeof(ev.detail),
					 "%s superblock copy fails validation "
					 "(%s)", c ? "backup" : "primary",
					 strerror(-r));
			else
				snprintf(ev.detail, sizeof(ev.detail),
					 "%s superblock copy disagrees with the "
					 "volume (generation %llu, volume %llu)",
					 c ? "backup" : "primary",
					 (unsigned long long)tmp.generation,
					 (unsigned long long)vol->sb.generation);
			snprintf(ev.action, sizeof(ev.action),
				 "rewrite from the good copies");
			if (repair) {
				dg_repair_write(vol, d, off, want, DG_PAGE_SIZE);
				ev.fixed = true;
			}
			bad++;
			emit(fn, arg, &ev);
		}
	}
	free(want);
	return bad;
}

/* ---- journal ---------------------------------------------------------- */

static uint64_t jhead_csum(const struct dg_vol *vol, const struct dg_djhead *h)
{
	return XXH3_64bits_withSeed(h, offsetof(struct dg_djhead, csum),
				    vol->seed);
}

void dg_jhead_loc(struct dg_vol *vol, unsigned c, unsigned s, unsigned *dev,
		  uint64_t *page, bool *newest)
{
	uint64_t start, pages;

	dg_jrnl_loc(vol, c, dev, &start, &pages);
	*page = start + s;
	*newest = vol->jrnl.hseq % 2 == s;
}

enum { JH_ZERO, JH_VALID, JH_BAD, JH_ABSENT };

static int jhead_state(struct dg_vol *vol, unsigned c, unsigned s,
		       struct dg_djhead *h, unsigned *devp, uint64_t *offp)
{
	uint64_t page;
	bool newest;
	unsigned dev;
	static const struct dg_djhead zero;

	dg_jhead_loc(vol, c, s, &dev, &page, &newest);
	*devp = dev;
	*offp = page << DG_PAGE_SHIFT;
	if (!vol->devs[dev].present)
		return JH_ABSENT;
	memcpy(h, dg_dev_ptr(&vol->devs[dev], *offp), sizeof(*h));
	if (!memcmp(h, &zero, sizeof(*h)))
		return JH_ZERO;
	if (h->magic != DG_JHEAD_MAGIC ||
	    memcmp(h->vol_uuid, vol->sb.vol_uuid, 16) ||
	    h->csum != jhead_csum(vol, h) || h->hseq % 2 != s ||
	    h->tail_off >= vol->jrnl.log_bytes || h->tail_off % DG_JALIGN)
		return JH_BAD;
	return JH_VALID;
}

int dg_check_journal(struct dg_vol *vol, bool repair, dg_chk_fn fn, void *arg)
{
	struct dg_chk_event ev;
	int bad = 0;
	bool any_valid = false;

	repair = repair && !vol->read_only;
	for (unsigned s = 0; s < 2; s++) {
		const unsigned n = dg_jrnl_ncopies(vol);
		struct dg_djhead h[DG_MAX_PARITY + 1];
		unsigned dev[DG_MAX_PARITY + 1];
		uint64_t off[DG_MAX_PARITY + 1];
		int st[DG_MAX_PARITY + 1], best = -1;

		/* The copy of this slot with the highest hseq that verifies
		 * is the slot; the others are stale, missing or damaged. */
		for (unsigned c = 0; c < n; c++) {
			st[c] = jhead_state(vol, c, s, &h[c], &dev[c], &off[c]);
			if (st[c] == JH_VALID &&
			    (best < 0 || h[c].hseq > h[best].hseq))
				best = (int)c;
		}
		if (best >= 0)
			any_valid = true;
		for (unsigned c = 0; c < n; c++) {
			if (st[c] == JH_ABSENT || (st[c] == JH_ZERO && best < 0))
				continue;
			if (st[c] == JH_VALID &&
			    !memcmp(&h[c], &h[best], sizeof(h[c])))
				continue;
			ev_init(&ev, st[c] == JH_VALID ? DG_CHK_JHEAD_STALE
						       : DG_CHK_JHEAD_BAD,
				"journal");
			ev.dev = (int)dev[c];
			ev.page = (int64_t)(off[c] >> DG_PAGE_SHIFT);
			if (best >= 0)
				snprintf(ev.action, sizeof(ev.action),
					 "copy from journal copy %d", best);
			else
				snprintf(ev.action, sizeof(ev.action),
					 "clear the slot");
			snprintf(ev.detail, sizeof(ev.detail),
				 "journal copy %u header slot %u is %s", c, s,
				 st[c] == JH_VALID ? "stale"
				 : st[c] == JH_ZERO ? "missing" : "damaged");
			ev.fixable = true;
			if (repair) {
				struct dg_djhead z = { 0 };

				dg_repair_write(vol, dev[c], off[c],
						best >= 0 ? &h[best] : &z,
						sizeof(z));
				ev.fixed = true;
			}
			bad++;
			emit(fn, arg, &ev);
		}
	}
	if (!any_valid) {
		ev_init(&ev, DG_CHK_JHEAD_BAD, "journal");
		snprintf(ev.detail, sizeof(ev.detail),
			 "no journal header verifies on any copy");
		snprintf(ev.action, sizeof(ev.action), "write a fresh header");
		ev.fixable = true;
		if (repair && !dg_journal_dirty(vol)) {
			/* The open started an empty journal; make it durable. */
			struct dg_djhead nh = { 0 };

			nh.magic = DG_JHEAD_MAGIC;
			memcpy(nh.vol_uuid, vol->sb.vol_uuid, 16);
			nh.hseq = vol->jrnl.hseq + 2;
			nh.tail_off = vol->jrnl.tail_off;
			nh.tail_seq = vol->jrnl.tail_seq;
			nh.csum = jhead_csum(vol, &nh);
			for (unsigned c = 0; c < dg_jrnl_ncopies(vol); c++) {
				unsigned dev;
				uint64_t page;
				bool newest;

				dg_jhead_loc(vol, c, (unsigned)(nh.hseq % 2),
					     &dev, &page, &newest);
				dg_repair_write(vol, dev, page << DG_PAGE_SHIFT,
						&nh, sizeof(nh));
			}
			vol->jrnl.hseq = nh.hseq;
			ev.fixed = true;
		}
		bad++;
		emit(fn, arg, &ev);
	}
	if (dg_journal_dirty(vol)) {
		ev_init(&ev, DG_CHK_JOURNAL_PENDING, "journal");
		snprintf(ev.detail, sizeof(ev.detail),
			 "journal holds %llu committed updates not yet "
			 "replayed",
			 (unsigned long long)(vol->jrnl.head_seq -
					      vol->jrnl.tail_seq));
		snprintf(ev.action, sizeof(ev.action), "replay the journal");
		ev.fixable = true;
		bad++;
		emit(fn, arg, &ev);
	}
	return bad;
}

/* ---- redundancy ------------------------------------------------------- */

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
	int pres[16];		/* -1 open, DG_FAULT_REPAIRED, UNRECOVERABLE */
	unsigned np;
	uint64_t unrecoverable;
};

static void rflush_one(struct rctx *c, struct dg_chk_event *ev, int res)
{
	uint64_t key;

	if (res == DG_FAULT_REPAIRED) {
		ev->fixable = true;
		ev->fixed = c->repair;
	} else {
		ev->fixable = false;
		ev->fixed = false;
		c->unrecoverable++;
		if (!ev->action[0] || res < 0)
			snprintf(ev->action, sizeof(ev->action),
				 "none: cannot be verified or rebuilt");
	}
	key = ((uint64_t)ev->kind << 56) ^ ((uint64_t)(ev->dev + 1) << 48) ^
	      (uint64_t)ev->page;
	if (seen_add(&c->seen, key))
		emit(c->fn, c->arg, ev);
}

static void rflush(struct rctx *c)
{
	for (unsigned i = 0; i < c->np; i++)
		rflush_one(c, &c->pend[i], c->pres[i]);
	c->np = 0;
}

static void fill_loc(struct rctx *c, struct dg_chk_event *ev, unsigned dev,
		     uint64_t row, const char *what)
{
	struct dg_vol *vol = c->vol;

	ev->dev = (int)dev;
	if (!strcmp(what, "csum-page")) {
		/* row is the checksum page index, dev its owner */
		ev->page = (int64_t)dg_cpage_copy_page(vol, row, 0);
		ev->structure = "checksum";
	} else if (!strcmp(what, "csum-copy") || !strcmp(what, "cmap")) {
		/* row is the device page of the copy */
		ev->page = (int64_t)row;
		ev->structure = "checksum";
	} else if (!strcmp(what, "ditto")) {
		/* row is the device page of the ditto copy */
		ev->page = (int64_t)row;
		ev->structure = "ditto copy";
	} else {
		ev->page = (int64_t)dg_row_page(vol, row);
		if (dg_row_dev_is_parity(vol, row, dev)) {
			ev->structure = "parity";
		} else {
			ev->structure = "data";
			ev->vpn = (int64_t)dg_loc_vpn(vol, dev, row);
		}
	}
}

static void rdrain(struct rctx *c)
{
	struct dg_fault_event evs[64];
	unsigned n;

	while ((n = dg_vol_fault_events(c->vol, c->since, evs, 64)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			struct dg_fault_event *f = &evs[i];
			bool csum = !strncmp(f->what, "csum", 4) ||
				    !strcmp(f->what, "cmap");
			/* located by device page, not by data row */
			bool byloc = csum || !strcmp(f->what, "ditto");
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
					     c->pend[j].kind == DG_CHK_CSUM_BAD))
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
				ev_init(ev, csum ? DG_CHK_CSUM_BAD
						 : DG_CHK_PAGE_BAD, "data");
				fill_loc(c, ev, f->dev, f->row, f->what);
				snprintf(ev->detail, sizeof(ev->detail),
					 "%s page fails verification (%s)",
					 ev->structure, f->action);
				c->pres[j] = -1;
				if (f->kind == DG_FAULT_DETECTED)
					continue;
			}
			if (c->pres[j] == DG_FAULT_UNRECOVERABLE)
				continue;
			c->pres[j] = (int)f->kind;
			snprintf(ev->action, sizeof(ev->action), "%s",
				 f->kind == DG_FAULT_REPAIRED ? f->action
							      : "none");
		}
	}
	rflush(c);
}

static bool row_written(struct dg_vol *vol, struct dg_csum_cursor *cur,
			uint64_t row, uint64_t *cs)
{
	bool any = false;

	for (unsigned d = 0; d < vol->ndev; d++) {
		int r = dg_csum_lookup(vol, &cur[d], d, row, &cs[d]);

		if (r < 0 || cs[d] != DG_CSUM_NONE)
			any = true;
		if (r < 0)
			cs[d] = 1;
	}
	return any;
}

static void check_row(struct rctx *c, uint64_t row, uint8_t *mem,
		      const uint64_t *cs, struct dg_chk_stats *st,
		      struct dg_csum_cursor *cur)
{
	struct dg_vol *vol = c->vol;
	unsigned k = vol->k, m = k + vol->parity;
	uint8_t *pages[DG_MAX_DEVS], *calc[DG_MAX_PARITY];
	bool any = false, fixed = false;

	for (unsigned p = 0; p < m; p++) {
		if (cs[dg_row_pos_dev(vol, row, p)] != DG_CSUM_NONE) {
			st->pages_checked++;
			st->bytes_checked += DG_PAGE_SIZE;
		}
	}
	if (!dg_row_recompute(vol, row, mem, pages, calc, cur) || !vol->parity)
		return;
	for (unsigned j = 0; j < vol->parity; j++)
		if (memcmp(calc[j], pages[k + j], DG_PAGE_SIZE))
			any = true;
	/* parity last, and only from verified data */
	if (any && c->repair)
		fixed = dg_repair_parity(vol, row, calc) == 0;
	for (unsigned j = 0; any && j < vol->parity; j++) {
		unsigned dev = dg_row_parity_dev(vol, row, j);
		struct dg_chk_event ev;

		if (!memcmp(calc[j], pages[k + j], DG_PAGE_SIZE))
			continue;
		ev_init(&ev, DG_CHK_PARITY_STALE, "parity");
		ev.dev = (int)dev;
		ev.page = (int64_t)dg_row_page(vol, row);
		ev.fixable = true;
		snprintf(ev.detail, sizeof(ev.detail),
			 "parity of row %llu disagrees with its verified data",
			 (unsigned long long)row);
		snprintf(ev.action, sizeof(ev.action),
			 "recompute parity from the data");
		ev.fixed = fixed && vol->devs[dev].present;
		emit(c->fn, c->arg, &ev);
	}
}

/*
 * Every checksum page, before any data is judged by it: the newest copy
 * that verifies wins, and every stale (older generation) or damaged copy
 * is a finding, rewritten from the winner when repairing (G6: a copy is
 * replaced only when a newer verified copy proves it wrong; data never
 * decides). A page of which no copy verifies, while the init map says it
 * was written, leaves the pages it covers unverifiable.
 */
static void check_csum_pages(struct rctx *c, uint8_t *img)
{
	struct dg_vol *vol = c->vol;
	unsigned flags = DG_CPX_QUIET | (c->repair ? DG_CPX_REPAIR : 0);

	for (unsigned d = 0; d < vol->ndev; d++) {
		for (uint64_t i = 0; i < vol->sb.csum_pages; i++) {
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
				ev_init(&ev, DG_CHK_CSUM_BAD, "checksum");
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
					emit(c->fn, c->arg, &ev);
				continue;
			}
			for (unsigned k = 0; r > 0 && k < v.ncopies; k++) {
				bool stale = v.state[k] == DG_COPY_STALE;

				if (!stale && v.state[k] != DG_COPY_BAD)
					continue;
				ev_init(&ev, stale ? DG_CHK_CSUM_STALE
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
				emit(c->fn, c->arg, &ev);
			}
		}
	}
}

int dg_check_redundancy(struct dg_vol *vol, bool repair, dg_chk_fn fn,
			void *arg, dg_progress_fn progress, void *parg,
			struct dg_chk_stats *st)
{
	struct dg_csum_cursor cur[DG_MAX_DEVS];
	uint64_t cs[DG_MAX_DEVS], before[DG_FAULT_NR], after[DG_FAULT_NR];
	struct rctx c = { 0 };
	uint8_t *mem;
	int ret = 0;

	memset(st, 0, sizeof(*st));
	if (!vol->redundancy)
		return 0;
	c.vol = vol;
	c.repair = repair && !vol->read_only;
	c.fn = fn;
	c.arg = arg;
	/* Faults the open itself met (and, writable, repaired while
	 * loading the root and bitmap) are findings of this pass too. */
	c.since = 0;
	mem = aligned_alloc(DG_PAGE_SIZE,
			    (DG_MAX_DEVS + DG_MAX_PARITY) * DG_PAGE_SIZE);
	if (!mem)
		return -ENOMEM;
	for (unsigned d = 0; d < vol->ndev; d++)
		dg_csum_cursor_init(&cur[d]);
	/* Repair order: checksums first, then data from parity, parity
	 * last and only from verified data (check_row). */
	rdrain(&c);
	check_csum_pages(&c, mem);
	for (uint64_t row = 0; row < vol->sb.rows && !ret; row++) {
		pthread_rwlock_t *lk = dg_row_lock(vol, row);

		if (progress && row % 1024 == 0)
			progress(parg, row, vol->sb.rows);
		pthread_rwlock_wrlock(lk);
		/* fsck is the volume's only writer: a checksum page looked
		 * up for one row stays right for the next, except for what
		 * this pass repaired (then look again). */
		dg_vol_fault_counts(vol, before);
		if (row_written(vol, cur, row, cs)) {
			st->rows_checked++;
			check_row(&c, row, mem, cs, st, cur);
		}
		dg_vol_fault_counts(vol, after);
		if (memcmp(before, after, sizeof(before)))
			for (unsigned d = 0; d < vol->ndev; d++)
				cur[d].owner = -1;
		pthread_rwlock_unlock(lk);
		rdrain(&c);
	}
	rdrain(&c);
	if (!ret) {
		uint64_t stale;

		ret = dg_ditto_check(vol, c.repair, &stale);
		rdrain(&c);
	}
	if (progress)
		progress(parg, vol->sb.rows, vol->sb.rows);
	st->unrecoverable = c.unrecoverable;
	for (unsigned d = 0; d < vol->ndev; d++)
		dg_csum_cursor_fini(&cur[d]);
	free(c.seen.keys);
	free(mem);
	return ret;
}

/* ---- filesystem walk ------------------------------------------------- */

const char *dg_pclass_name(enum dg_pclass c)
{
	static const char *const n[DG_PC_NR] = {
		"free", "root", "allocation", "inode", "extent", "xattr",
		"directory", "data", "symlink",
	};

	return c < DG_PC_NR ? n[c] : "?";
}

struct went {			/* a directory entry as found */
	uint64_t dir, ino;
	uint64_t fpage;		/* dirent page (file page of the dir) */
	uint32_t off;
	uint8_t type;
	bool dead;		/* removed by a repair */
	char *name;
};

struct wino {
	bool used, bad;
	bool lost;		/* its inode table page was given up */
	struct dg_dinode d;
	struct dg_dextent *ext;
	uint32_t next;
	uint64_t *emap;
	uint32_t nemap;
	uint32_t refs, subdirs;
	uint64_t first_parent;	/* dir of the first entry naming it */
	bool reached;
};

struct walk {
	struct dg_vol *vol;
	dg_chk_fn fn;
	dg_chk_ask_fn ask;
	void *arg;
	bool classify_only;
	uint64_t vpns;
	uint8_t *cls;
	uint64_t *owner;
	struct dg_droot *root;
	struct dg_dfsroot fsr;
	uint64_t icap;
	struct wino *in;
	struct went *ents;
	size_t nents, capents;
	uint8_t *page;
	unsigned fixes, problems;
};

static bool wask(struct walk *w, struct dg_chk_event *ev)
{
	bool fix;

	w->problems++;
	ev->fixable = ev->fixable || ev->action[0];
	fix = !w->classify_only && ev->fixable && w->ask &&
	      !w->vol->read_only && w->ask(w->arg, ev);
	return fix;
}

static void wreport(struct walk *w, struct dg_chk_event *ev, bool fixed)
{
	ev->fixed = fixed;
	if (fixed)
		w->fixes++;
	if (!w->classify_only)
		emit(w->fn, w->arg, ev);
}

static void ino_loc(const struct walk *w, uint64_t ino, uint64_t *vpn,
		    uint32_t *off)
{
	uint64_t slot = ino % DG_INODES_PER_CHUNK;

	*vpn = w->fsr.chunks[ino / DG_INODES_PER_CHUNK] +
	       slot / DG_INODES_PER_PAGE;
	*off = (uint32_t)(slot % DG_INODES_PER_PAGE) * DG_INODE_SIZE;
}

/* One small update through the engine (G4: each repair is atomic). */
static int wwrite(struct walk *w, uint64_t vpn, uint32_t off, const void *p,
		  uint32_t len)
{
	struct dg_txn *t = dg_txn_new(w->vol);
	int ret;

	if (!t)
		return -ENOMEM;
	ret = dg_txn_write(t, vpn, off, p, len);
	if (!ret)
		ret = dg_txn_commit(t);
	dg_txn_free(t);
	return ret;
}

static int store_inode(struct walk *w, uint64_t ino)
{
	uint64_t vpn;
	uint32_t off;

	ino_loc(w, ino, &vpn, &off);
	return wwrite(w, vpn, off, &w->in[ino].d, sizeof(w->in[ino].d));
}

static void ev_ino(struct walk *w, struct dg_chk_event *ev, uint64_t ino)
{
	uint64_t vpn;
	uint32_t off;

	ev->ino = ino;
	if (ino / DG_INODES_PER_CHUNK < w->fsr.nchunks) {
		ino_loc(w, ino, &vpn, &off);
		ev->vpn = (int64_t)vpn;
		if (vpn < w->vpns) {
			struct dg_loc l = dg_vpn_loc(w->vol, vpn);

			ev->dev = (int)l.dev;
			ev->page = (int64_t)dg_row_page(w->vol, l.row);
		}
	}
}

static void ev_vpn(struct walk *w, struct dg_chk_event *ev, uint64_t vpn)
{
	ev->vpn = (int64_t)vpn;
	if (vpn < w->vpns) {
		struct dg_loc l = dg_vpn_loc(w->vol, vpn);

		ev->dev = (int)l.dev;
		ev->page = (int64_t)dg_row_page(w->vol, l.row);
	}
}

static void unreadable(struct walk *w, uint64_t vpn, uint64_t ino,
		       const char *what, int err)
{
	struct dg_chk_event ev;

	ev_init(&ev, DG_CHK_UNREADABLE, what);
	ev_vpn(w, &ev, vpn);
	ev.ino = ino;
	snprintf(ev.detail, sizeof(ev.detail), "%s page unreadable: %s",
		 what, strerror(-err));
	snprintf(ev.action, sizeof(ev.action), "none: left as is (G6)");
	w->problems++;
	wreport(w, &ev, false);
}

/* Mark [vpn, vpn+n) used by ino; false if any page is used already. */
static bool mark(struct walk *w, uint64_t vpn, uint64_t n, uint8_t cls,
		 uint64_t ino)
{
	bool ok = true;

	for (uint64_t i = vpn; i < vpn + n && i < w->vpns; i++)
		if (w->cls[i])
			ok = false;
	if (!ok)
		return false;
	for (uint64_t i = vpn; i < vpn + n && i < w->vpns; i++) {
		w->cls[i] = cls;
		w->owner[i] = ino;
	}
	return true;
}

static uint8_t data_class(uint32_t mode)
{
	return S_ISDIR(mode) ? DG_PC_DIR
	       : S_ISLNK(mode) ? DG_PC_SYMLINK : DG_PC_FILE;
}

static bool mode_ok(uint32_t mode)
{
	uint32_t t = mode & S_IFMT;

	return t == S_IFREG || t == S_IFDIR || t == S_IFLNK || t == S_IFIFO ||
	       t == S_IFSOCK || t == S_IFCHR || t == S_IFBLK;
}

/* Forget the chain pages of wi from index keep on: they become leaks
 * the walk frees (only those this inode claimed). */
static void drop_emap(struct walk *w, uint64_t ino, uint32_t keep)
{
	struct wino *wi = &w->in[ino];

	for (uint32_t e = keep; e < wi->nemap; e++)
		if (w->owner[wi->emap[e]] == ino)
			w->cls[wi->emap[e]] = DG_PC_FREE;
	if (wi->nemap > keep)
		wi->nemap = keep;
}

/* End ino's extent map before slot of leaf (format.h), keeping the
 * wi->next extents before it: shorten that leaf, or end the chain at
 * the leaf before. The caller stores the inode. */
static int cut_extents(struct walk *w, uint64_t ino, uint32_t leaf,
		       uint32_t slot)
{
	struct wino *wi = &w->in[ino];
	struct dg_demap hdr = { 0 };

	wi->d.nextents = wi->next;
	if (leaf == 0) {
		for (uint32_t i = slot; i < DG_INLINE_EXTENTS; i++)
			memset(&wi->d.inl[i], 0, sizeof(wi->d.inl[i]));
		wi->d.emap_vpn = 0;
		drop_emap(w, ino, 0);
		return 0;
	}
	if (slot) {			/* the leaf keeps slot extents */
		hdr.count = slot;
		drop_emap(w, ino, leaf);
		return wwrite(w, wi->emap[leaf - 1], 0, &hdr,
			      offsetof(struct dg_demap, e));
	}
	drop_emap(w, ino, leaf - 1);	/* the leaf goes */
	if (leaf == 1) {
		wi->d.emap_vpn = 0;
		return 0;
	}
	return wwrite(w, wi->emap[leaf - 2], 0, &hdr.next_vpn,
		      sizeof(hdr.next_vpn));
}

/* Load an inode's extents, marking its pages; truncates the map at the
 * first bad extent when told to. */
static void load_extents(struct walk *w, uint64_t ino)
{
	struct wino *wi = &w->in[ino];
	struct dg_emap_reader r;
	const struct dg_dextent *d;
	struct dg_chk_event ev;
	uint32_t cut_leaf, cut_slot;
	uint64_t kept;			/* file pages the kept extents cover */
	const char *why = NULL;
	int k;

	wi->next = 0;
	wi->ext = calloc(wi->d.nextents ? wi->d.nextents : 1,
			 sizeof(*wi->ext));
	if (!wi->ext)
		return;
	dg_emap_begin(&r, w->vol, &wi->d, (struct dg_demap *)w->page);
	while ((k = dg_emap_next(&r, &d)) > 0) {
		if (k == DG_EMAP_PAGE) {
			uint64_t *m;

			if (!mark(w, r.page_vpn, 1, DG_PC_EMAP, ino)) {
				why = "extent page used twice";
				break;
			}
			m = realloc(wi->emap, (wi->nemap + 1) * sizeof(*m));
			if (!m)
				return;
			wi->emap = m;
			wi->emap[wi->nemap++] = r.page_vpn;
			continue;
		}
		if (!mark(w, d->vpn, d->len, data_class(wi->d.mode), ino)) {
			why = "extent maps pages another structure uses";
			ev_init(&ev, DG_CHK_EXTENT_DUP, "extent");
			cut_leaf = r.leaf;
			cut_slot = r.slot - 1;
			kept = d->fpage;
			goto bad;
		}
		wi->ext[wi->next++] = *d;
	}
	if (k < 0 && !r.why && k != -EIO) {
		unreadable(w, r.page_vpn, ino, "extent", k);
		return;
	}
	cut_leaf = r.leaf;
	cut_slot = r.slot;
	kept = r.prev_end;
	if (k == -EIO && !r.why) {
		/* No copy of an extent page verifies: the file ends where
		 * the extents that could be read end (what followed hung
		 * off that page). Left alone, the volume does not mount. */
		if (w->classify_only)
			return;
		ev_init(&ev, DG_CHK_EXTENTS_LOST, "extent");
		why = "extent page unreadable";
		goto bad;
	}
	if (k < 0)
		why = r.why;
	if (!why || w->classify_only)
		return;
	ev_init(&ev, DG_CHK_EXTENT_BAD, "extent");
bad:
	ev_ino(w, &ev, ino);
	snprintf(ev.detail, sizeof(ev.detail), "inode %llu extent %u: %s",
		 (unsigned long long)ino, wi->next, why);
	snprintf(ev.action, sizeof(ev.action),
		 "drop extents from %u on (data lost)", wi->next);
	if (wask(w, &ev)) {
		/* The size goes where the kept extents end, so the loss
		 * reads as a short file, not as zeros (G1: never silently
		 * wrong data). */
		if (wi->d.size > kept << DG_PAGE_SHIFT)
			wi->d.size = kept << DG_PAGE_SHIFT;
		wreport(w, &ev, cut_extents(w, ino, cut_leaf, cut_slot) == 0 &&
				store_inode(w, ino) == 0);
	} else {
		wreport(w, &ev, false);
	}
}

/* An empty root directory in place of one given up with its table
 * page: the names it held are lost, and the reconnect pass moves the
 * files they named to /lost+found. */
static int new_root(struct walk *w)
{
	struct wino *wi = &w->in[DG_ROOT_INO];
	struct timespec now;
	int64_t ns;

	clock_gettime(CLOCK_REALTIME, &now);
	ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	wi->d = (struct dg_dinode){
		.mode = S_IFDIR | 0755, .nlink = 2, .parent = DG_ROOT_INO,
		.atime_ns = ns, .mtime_ns = ns, .ctime_ns = ns, .btime_ns = ns,
	};
	wi->used = true;
	wi->lost = false;
	return store_inode(w, DG_ROOT_INO);
}

/*
 * An inode table page no copy of which verifies (more faults in its row
 * than parity covers): its inodes are lost. Left alone, the volume does
 * not mount. Repair clears the page so the rest of it does; the entry
 * pass then names and drops the entries of the lost inodes, and the
 * allocation pass frees their pages. When the page held the root, an
 * empty root takes its place (as e2fsck recreates a lost root).
 */
static void lose_inode_page(struct walk *w, uint32_t c, uint32_t p,
			    uint64_t vpn, int err)
{
	static const uint8_t zero[DG_PAGE_SIZE];
	uint64_t first = (uint64_t)c * DG_INODES_PER_CHUNK +
			 (uint64_t)p * DG_INODES_PER_PAGE;
	bool root = first <= DG_ROOT_INO;
	struct dg_chk_event ev;

	if (err != -EIO) {
		unreadable(w, vpn, 0, "inode", err);
		return;
	}
	ev_init(&ev, DG_CHK_INODES_LOST, "inode");
	ev_vpn(w, &ev, vpn);
	snprintf(ev.detail, sizeof(ev.detail),
		 "inode table page unreadable: inodes %llu-%llu are lost%s",
		 (unsigned long long)first,
		 (unsigned long long)(first + DG_INODES_PER_PAGE - 1),
		 root ? ", the root with them" : "");
	snprintf(ev.action, sizeof(ev.action),
		 root ? "clear the page (the files it held are lost) and make "
			"an empty root (the files under it go to /lost+found)"
		      : "clear the page (the files it held are lost)");
	for (uint32_t s = 0; s < DG_INODES_PER_PAGE; s++)
		w->in[first + s].lost = first + s != DG_ROOT_INO;
	if (wask(w, &ev)) {
		bool ok = dg_row_replace_page(w->vol, vpn, zero) == 0;

		wreport(w, &ev, ok && (!root || new_root(w) == 0));
	} else {
		wreport(w, &ev, false);
	}
}

static void load_itable(struct walk *w)
{
	for (uint32_t c = 0; c < w->fsr.nchunks; c++) {
		uint64_t v0 = w->fsr.chunks[c];
		struct dg_chk_event ev;

		if (v0 < 1 || v0 + DG_ITABLE_CHUNK_PAGES > w->vpns ||
		    !mark(w, v0, DG_ITABLE_CHUNK_PAGES, DG_PC_ITABLE, 0)) {
			ev_init(&ev, DG_CHK_ITABLE, "inode");
			ev.vpn = (int64_t)v0;
			snprintf(ev.detail, sizeof(ev.detail),
				 "inode table chunk %u at vpn %llu is out of "
				 "range or overlaps", c,
				 (unsigned long long)v0);
			snprintf(ev.action, sizeof(ev.action), "none");
			ev.fixable = false;
			w->problems++;
			wreport(w, &ev, false);
			continue;
		}
		for (uint32_t p = 0; p < DG_ITABLE_CHUNK_PAGES; p++) {
			int r = dg_read(w->vol, v0 + p, 1, w->page);

			if (r) {
				lose_inode_page(w, c, p, v0 + p, r);
				continue;
			}
			for (uint32_t s = 0; s < DG_INODES_PER_PAGE; s++) {
				uint64_t ino = (uint64_t)c * DG_INODES_PER_CHUNK +
					       p * DG_INODES_PER_PAGE + s;
				struct wino *wi = &w->in[ino];

				memcpy(&wi->d, w->page + s * DG_INODE_SIZE,
				       sizeof(wi->d));
				if (!wi->d.mode || ino == 0)
					continue;
				if (!mode_ok(wi->d.mode) ||
				    wi->d.nextents > (1u << 26)) {
					ev_init(&ev, DG_CHK_INODE_BAD, "inode");
					ev_ino(w, &ev, ino);
					snprintf(ev.detail, sizeof(ev.detail),
						 "inode %llu: bad mode %#o or "
						 "extent count %u",
						 (unsigned long long)ino,
						 wi->d.mode, wi->d.nextents);
					snprintf(ev.action, sizeof(ev.action),
						 "clear the inode");
					if (wask(w, &ev)) {
						memset(&wi->d, 0, sizeof(wi->d));
						wreport(w, &ev,
							store_inode(w, ino) == 0);
					} else {
						wreport(w, &ev, false);
						wi->bad = true;
					}
					continue;
				}
				wi->used = true;
			}
		}
	}
	for (uint64_t ino = 1; ino < w->icap; ino++) {
		struct wino *wi = &w->in[ino];

		if (!wi->used)
			continue;
		load_extents(w, ino);
		if (wi->d.xattr_vpn &&
		    (wi->d.xattr_vpn >= w->vpns ||
		     !mark(w, wi->d.xattr_vpn, 1, DG_PC_XATTR, ino))) {
			struct dg_chk_event ev;

			ev_init(&ev, DG_CHK_EXTENT_BAD, "inode");
			ev_ino(w, &ev, ino);
			snprintf(ev.detail, sizeof(ev.detail),
				 "inode %llu: xattr page %llu out of range or "
				 "used twice", (unsigned long long)ino,
				 (unsigned long long)wi->d.xattr_vpn);
			snprintf(ev.action, sizeof(ev.action),
				 "drop the extended attributes");
			if (wask(w, &ev)) {
				wi->d.xattr_vpn = 0;
				wreport(w, &ev, store_inode(w, ino) == 0);
			} else {
				wreport(w, &ev, false);
			}
		}
	}
}

static void ext_lookup(const struct wino *wi, uint64_t fpage, uint64_t *vpn)
{
	*vpn = 0;
	for (uint32_t i = 0; i < wi->next; i++)
		if (fpage >= wi->ext[i].fpage &&
		    fpage < wi->ext[i].fpage + wi->ext[i].len) {
			*vpn = wi->ext[i].vpn + fpage - wi->ext[i].fpage;
			return;
		}
}

static int add_ent(struct walk *w, uint64_t dir, uint64_t ino, uint64_t pg,
		   uint32_t off, uint8_t type, const char *name, size_t len)
{
	struct went *e;

	if (w->nents == w->capents) {
		size_t cap = w->capents ? w->capents * 2 : 256;

		e = realloc(w->ents, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		w->ents = e;
		w->capents = cap;
	}
	e = &w->ents[w->nents];
	e->name = strndup(name, len);
	if (!e->name)
		return -ENOMEM;
	e->dir = dir;
	e->ino = ino;
	e->fpage = pg;
	e->off = off;
	e->type = type;
	e->dead = false;
	w->nents++;
	return 0;
}

/* Parse one dirent page; a malformed record ends the page (repair:
 * an end marker is written there, later entries are lost and their
 * inodes go to lost+found). */
static void parse_dir_page(struct walk *w, uint64_t dir, uint64_t pg,
			   uint64_t vpn, const uint8_t *p)
{
	uint32_t off = 0;

	while (off + sizeof(struct dg_ddirent) <= DG_PAGE_SIZE) {
		const struct dg_ddirent *r = (const void *)(p + off);
		const char *name = (const char *)(r + 1);
		uint32_t need = (uint32_t)((sizeof(*r) + r->namelen + 7) & ~7u);
		struct dg_chk_event ev;

		if (r->reclen == 0)
			break;
		if (r->reclen % 8 || r->reclen < need ||
		    r->reclen > DG_PAGE_SIZE - off || r->namelen == 0 ||
		    memchr(name, '/', r->namelen) ||
		    memchr(name, 0, r->namelen)) {
			struct dg_ddirent end = { 0 };

			if (w->classify_only)
				return;
			ev_init(&ev, DG_CHK_DIRENT_BAD, "directory");
			ev_vpn(w, &ev, vpn);
			ev.ino = dir;
			snprintf(ev.detail, sizeof(ev.detail),
				 "directory %llu page %llu offset %u: bad "
				 "record", (unsigned long long)dir,
				 (unsigned long long)pg, off);
			snprintf(ev.action, sizeof(ev.action),
				 "end the page there");
			if (wask(w, &ev))
				wreport(w, &ev, wwrite(w, vpn, off, &end,
						       sizeof(end)) == 0);
			else
				wreport(w, &ev, false);
			return;
		}
		if (r->ino)
			add_ent(w, dir, r->ino, pg, off, r->type, name,
				r->namelen);
		off += r->reclen;
	}
}

/*
 * A directory page no copy of which verifies (more faults in its row
 * than parity covers): the names it held are lost. Left alone, the
 * volume does not mount. Repair writes an empty page in its place; the
 * inodes those names pointed to are then unreachable, and the
 * reconnect pass moves them, data intact, to /lost+found.
 */
static void lose_dir_page(struct walk *w, uint64_t dir, uint64_t vpn,
			  int err)
{
	static const uint8_t empty[DG_PAGE_SIZE];	/* no records */
	struct dg_chk_event ev;

	if (err != -EIO) {
		unreadable(w, vpn, dir, "directory", err);
		return;
	}
	ev_init(&ev, DG_CHK_DIR_LOST, "directory");
	ev_vpn(w, &ev, vpn);
	ev.ino = dir;
	snprintf(ev.detail, sizeof(ev.detail),
		 "directory %llu: page unreadable, the names on it are lost",
		 (unsigned long long)dir);
	snprintf(ev.action, sizeof(ev.action),
		 "write an empty page (its files go to /lost+found)");
	if (wask(w, &ev))
		wreport(w, &ev, dg_row_replace_page(w->vol, vpn, empty) == 0);
	else
		wreport(w, &ev, false);
}

static void load_dirs(struct walk *w)
{
	for (uint64_t ino = 1; ino < w->icap; ino++) {
		struct wino *wi = &w->in[ino];

		if (!wi->used || !S_ISDIR(wi->d.mode))
			continue;
		/* By extent, not by size: a damaged size can be huge. */
		for (uint32_t e = 0; e < wi->next; e++)
		for (uint64_t i = 0; i < wi->ext[e].len; i++) {
			uint64_t pg = wi->ext[e].fpage + i;
			uint64_t vpn = wi->ext[e].vpn + i;
			int r;

			if (pg >= wi->d.size / DG_PAGE_SIZE)
				break;
			r = dg_read(w->vol, vpn, 1, w->page);
			if (r) {
				lose_dir_page(w, ino, vpn, r);
				continue;
			}
			parse_dir_page(w, ino, pg, vpn, w->page);
		}
	}
}

/* Mark the record deleted: only its ino changes. Its reclen stays as
 * found (a reused record can be longer than its name needs), so the
 * records after it still parse. */
static int kill_entry(struct walk *w, struct went *e)
{
	struct wino *dp = &w->in[e->dir];
	uint64_t vpn, zero = 0;

	ext_lookup(dp, e->fpage, &vpn);
	if (!vpn)
		return -EIO;
	e->dead = true;
	return wwrite(w, vpn, e->off + (uint32_t)offsetof(struct dg_ddirent,
							  ino),
		      &zero, sizeof(zero));
}

/* Report a bad entry and, if the repair is allowed, remove it; either
 * way the rest of the walk treats it as gone. */
static void drop_entry(struct walk *w, struct dg_chk_event *ev,
		       struct went *e)
{
	if (wask(w, ev))
		wreport(w, ev, kill_entry(w, e) == 0);
	else
		wreport(w, ev, false);
	e->dead = true;
}

static void check_entries(struct walk *w)
{
	for (size_t i = 0; i < w->nents; i++) {
		struct went *e = &w->ents[i];
		struct wino *t = e->ino < w->icap ? &w->in[e->ino] : NULL;
		struct dg_chk_event ev;

		if (t && t->lost) {
			ev_init(&ev, DG_CHK_FILE_LOST, "directory");
			ev_ino(w, &ev, e->dir);
			snprintf(ev.name, sizeof(ev.name), "%s", e->name);
			snprintf(ev.detail, sizeof(ev.detail),
				 "entry '%s' names inode %llu, lost with its "
				 "inode table page", e->name,
				 (unsigned long long)e->ino);
			snprintf(ev.action, sizeof(ev.action),
				 "remove the entry");
			drop_entry(w, &ev, e);
			continue;
		}
		if (!t || !t->used || e->ino == DG_ROOT_INO) {
			ev_init(&ev, DG_CHK_DIRENT_DANGLING, "directory");
			ev_ino(w, &ev, e->dir);
			snprintf(ev.detail, sizeof(ev.detail),
				 "entry '%s' in directory %llu names %s inode "
				 "%llu", e->name, (unsigned long long)e->dir,
				 e->ino == DG_ROOT_INO ? "the root" : "free",
				 (unsigned long long)e->ino);
			snprintf(ev.action, sizeof(ev.action),
				 "remove the entry");
			drop_entry(w, &ev, e);
			continue;
		}
		if (S_ISDIR(t->d.mode) && t->refs) {
			ev_init(&ev, DG_CHK_DIR_MULTI, "directory");
			ev_ino(w, &ev, e->dir);
			snprintf(ev.detail, sizeof(ev.detail),
				 "directory %llu has a second name '%s'",
				 (unsigned long long)e->ino, e->name);
			snprintf(ev.action, sizeof(ev.action),
				 "remove the entry");
			drop_entry(w, &ev, e);
			continue;
		}
		if (e->type != dg_mode_dtype(t->d.mode)) {
			ev_init(&ev, DG_CHK_DIRENT_TYPE, "directory");
			ev_ino(w, &ev, e->dir);
			snprintf(ev.detail, sizeof(ev.detail),
				 "entry '%s' has type %u, inode %llu is type "
				 "%u", e->name, e->type,
				 (unsigned long long)e->ino,
				 dg_mode_dtype(t->d.mode));
			snprintf(ev.action, sizeof(ev.action), "fix the type");
			if (wask(w, &ev)) {
				struct wino *dp = &w->in[e->dir];
				uint8_t ty = dg_mode_dtype(t->d.mode);
				uint64_t vpn;

				ext_lookup(dp, e->fpage, &vpn);
				e->type = ty;
				wreport(w, &ev, vpn && wwrite(w, vpn, e->off +
					offsetof(struct dg_ddirent, type), &ty,
					1) == 0);
			} else {
				wreport(w, &ev, false);
			}
		}
		if (!t->refs)
			t->first_parent = e->dir;
		t->refs++;
		if (S_ISDIR(t->d.mode))
			w->in[e->dir].subdirs++;
	}
}

static void reach(struct walk *w)
{
	uint64_t *q = calloc(w->icap + 1, sizeof(*q));
	size_t h = 0, t = 0;

	if (!q)
		return;
	for (uint64_t i = 0; i < w->icap; i++)
		w->in[i].reached = false;
	w->in[DG_ROOT_INO].reached = true;
	q[t++] = DG_ROOT_INO;
	/* Entries are grouped by directory in load order; scan all. */
	while (h < t) {
		uint64_t d = q[h++];

		for (size_t i = 0; i < w->nents; i++) {
			struct went *e = &w->ents[i];

			if (e->dead || e->dir != d || w->in[e->ino].reached)
				continue;
			w->in[e->ino].reached = true;
			if (S_ISDIR(w->in[e->ino].d.mode))
				q[t++] = e->ino;
		}
	}
	free(q);
}

static void check_counts(struct walk *w)
{
	for (uint64_t ino = 1; ino < w->icap; ino++) {
		struct wino *wi = &w->in[ino];
		struct dg_chk_event ev;
		uint32_t want;
		uint64_t blocks = wi->nemap + (wi->d.xattr_vpn ? 1 : 0);

		if (!wi->used)
			continue;
		for (uint32_t i = 0; i < wi->next; i++)
			blocks += wi->ext[i].len;
		if (S_ISDIR(wi->d.mode)) {
			uint64_t par = ino == DG_ROOT_INO ? DG_ROOT_INO
							  : wi->first_parent;

			want = 2 + wi->subdirs;
			if (par && wi->d.parent != par) {
				ev_init(&ev, DG_CHK_DIR_PARENT, "inode");
				ev_ino(w, &ev, ino);
				snprintf(ev.detail, sizeof(ev.detail),
					 "directory %llu: parent %llu, should "
					 "be %llu", (unsigned long long)ino,
					 (unsigned long long)wi->d.parent,
					 (unsigned long long)par);
				snprintf(ev.action, sizeof(ev.action),
					 "set the parent");
				if (wask(w, &ev)) {
					wi->d.parent = par;
					wreport(w, &ev,
						store_inode(w, ino) == 0);
				} else {
					wreport(w, &ev, false);
				}
			}
		} else {
			want = wi->refs;
		}
		if (!wi->reached)
			continue; /* orphans: lost+found sets the count */
		if (wi->d.nlink != want) {
			ev_init(&ev, DG_CHK_NLINK, "inode");
			ev_ino(w, &ev, ino);
			snprintf(ev.detail, sizeof(ev.detail),
				 "inode %llu: link count %u, should be %u",
				 (unsigned long long)ino, wi->d.nlink, want);
			snprintf(ev.action, sizeof(ev.action),
				 "set the link count");
			if (wask(w, &ev)) {
				wi->d.nlink = want;
				wreport(w, &ev, store_inode(w, ino) == 0);
			} else {
				wreport(w, &ev, false);
			}
		}
		if (wi->d.blocks != blocks) {
			ev_init(&ev, DG_CHK_BLOCKS, "inode");
			ev_ino(w, &ev, ino);
			snprintf(ev.detail, sizeof(ev.detail),
				 "inode %llu: %llu blocks, should be %llu",
				 (unsigned long long)ino,
				 (unsigned long long)wi->d.blocks,
				 (unsigned long long)blocks);
			snprintf(ev.action, sizeof(ev.action),
				 "set the block count");
			if (wask(w, &ev)) {
				wi->d.blocks = blocks;
				wreport(w, &ev, store_inode(w, ino) == 0);
			} else {
				wreport(w, &ev, false);
			}
		}
	}
}

/*
 * A published libcommit sync (dinode.stage_ino, stage.c) must name its
 * stage: an unlinked regular file whose parent field is the file. Its
 * pages are an orphan's, counted like any inode's; the next mount
 * finishes it, so a valid one is no fault. One that names anything else
 * cannot be finished: the record is cleared, and the file may hold part
 * of that sync (its stage, if any, is then an ordinary orphan).
 */
static void check_stages(struct walk *w)
{
	for (uint64_t ino = 1; ino < w->icap; ino++) {
		struct wino *wi = &w->in[ino];
		uint64_t s = wi->d.stage_ino;
		const struct wino *si = s && s < w->icap ? &w->in[s] : NULL;
		struct dg_chk_event ev;

		if (!wi->used || !s)
			continue;
		if (S_ISREG(wi->d.mode) && si && si->used && !si->bad &&
		    S_ISREG(si->d.mode) && !si->d.nlink && si->d.parent == ino)
			continue;
		ev_init(&ev, DG_CHK_INODE_BAD, "inode");
		ev_ino(w, &ev, ino);
		snprintf(ev.detail, sizeof(ev.detail),
			 "inode %llu: its published libcommit sync names "
			 "inode %llu, which is not its stage",
			 (unsigned long long)ino, (unsigned long long)s);
		snprintf(ev.action, sizeof(ev.action),
			 "clear the record (the file may hold part of that "
			 "sync)");
		if (wask(w, &ev)) {
			wi->d.stage_ino = 0;
			wreport(w, &ev, store_inode(w, ino) == 0);
		} else {
			wreport(w, &ev, false);
		}
	}
}

static void check_bitmap(struct walk *w)
{
	struct dg_vol *vol = w->vol;

	for (uint64_t v = 0; v < w->vpns; v++) {
		bool used = w->cls[v] != DG_PC_FREE, on;
		struct dg_chk_event ev;

		pthread_mutex_lock(&vol->alloc_lock);
		on = vol->bitmap[v / 8] & (1u << (v % 8));
		pthread_mutex_unlock(&vol->alloc_lock);
		if (used == on)
			continue;
		ev_init(&ev, used ? DG_CHK_BITMAP_MISSING : DG_CHK_BITMAP_LEAK,
			"allocation");
		ev_vpn(w, &ev, v);
		ev.ino = w->owner[v];
		snprintf(ev.detail, sizeof(ev.detail),
			 used ? "vpn %llu is used (%s) but marked free"
			      : "vpn %llu is marked in use but nothing uses it",
			 (unsigned long long)v, dg_pclass_name(w->cls[v]));
		snprintf(ev.action, sizeof(ev.action), used ? "mark it used"
							    : "mark it free");
		if (wask(w, &ev)) {
			uint8_t byte;
			int r;

			pthread_mutex_lock(&vol->alloc_lock);
			if (used) {
				vol->bitmap[v / 8] |= (uint8_t)(1u << (v % 8));
				vol->free_vpns--;
			} else {
				vol->bitmap[v / 8] &= (uint8_t)~(1u << (v % 8));
				vol->free_vpns++;
			}
			byte = vol->bitmap[v / 8];
			pthread_mutex_unlock(&vol->alloc_lock);
			r = wwrite(w, vol->bitmap_vpn + v / 8 / DG_PAGE_SIZE,
				   (uint32_t)(v / 8 % DG_PAGE_SIZE), &byte, 1);
			wreport(w, &ev, r == 0);
		} else {
			wreport(w, &ev, false);
		}
	}
}

static void walk_free(struct walk *w)
{
	if (w->in)
		for (uint64_t i = 0; i < w->icap; i++) {
			free(w->in[i].ext);
			free(w->in[i].emap);
		}
	for (size_t i = 0; i < w->nents; i++)
		free(w->ents[i].name);
	free(w->ents);
	free(w->in);
	free(w->root);
	free(w->page);
}

/* Load the root records and every structure, tolerantly. */
static int walk_load(struct walk *w)
{
	struct dg_vol *vol = w->vol;
	struct dg_chk_event ev;
	int r;

	w->vpns = vol->vpns;
	w->root = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	w->page = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!w->root || !w->page || !w->cls || !w->owner)
		return -ENOMEM;
	r = dg_read(vol, 0, 1, w->root);
	if (r) {
		unreadable(w, 0, 0, "root", r);
		return -EUCLEAN;
	}
	memcpy(&w->fsr, w->root->fs, sizeof(w->fsr));
	if (w->fsr.magic != DG_FS_MAGIC || w->fsr.nchunks == 0 ||
	    w->fsr.nchunks > DG_MAX_ICHUNKS || !vol->bitmap) {
		ev_init(&ev, DG_CHK_FS_ROOT, "root");
		ev_vpn(w, &ev, 0);
		snprintf(ev.detail, sizeof(ev.detail),
			 "filesystem root record is invalid");
		snprintf(ev.action, sizeof(ev.action), "none");
		w->problems++;
		wreport(w, &ev, false);
		return -EUCLEAN;
	}
	mark(w, 0, 1, DG_PC_ROOT, 0);
	mark(w, 1, vol->meta_vpns - 1, DG_PC_BITMAP, 0);
	w->icap = (uint64_t)w->fsr.nchunks * DG_INODES_PER_CHUNK;
	w->in = calloc(w->icap, sizeof(*w->in));
	if (!w->in)
		return -ENOMEM;
	load_itable(w);
	if (!w->in[DG_ROOT_INO].used || !S_ISDIR(w->in[DG_ROOT_INO].d.mode)) {
		ev_init(&ev, DG_CHK_FS_ROOT, "inode");
		ev_ino(w, &ev, DG_ROOT_INO);
		snprintf(ev.detail, sizeof(ev.detail),
			 "root directory inode missing or not a directory");
		snprintf(ev.action, sizeof(ev.action), "none");
		w->problems++;
		wreport(w, &ev, false);
		return -EUCLEAN;
	}
	load_dirs(w);
	return 0;
}

int dg_check_classify(struct dg_vol *vol, uint8_t **cls, uint64_t **owner)
{
	struct walk w = { .vol = vol, .classify_only = true };
	int ret;

	w.cls = calloc(vol->vpns, 1);
	w.owner = calloc(vol->vpns, sizeof(*w.owner));
	ret = walk_load(&w);
	walk_free(&w);
	if (ret && ret != -EUCLEAN) {
		free(w.cls);
		free(w.owner);
		return ret;
	}
	*cls = w.cls;
	*owner = w.owner;
	return 0;
}

/* Reconnect inodes no directory names to /lost+found. */
static void reconnect(struct walk *w)
{
	struct dg_fs *fs = NULL;
	struct dg_inode *lf = NULL;
	struct dg_attr at;
	int r;

	for (uint64_t ino = 2; ino < w->icap; ino++) {
		struct wino *wi = &w->in[ino];
		struct dg_chk_event ev;
		char name[32];

		if (!wi->used || wi->reached || wi->refs ||
		    (!wi->d.nlink && !S_ISDIR(wi->d.mode)))
			continue; /* nlink 0: an orphan the mount frees */
		ev_init(&ev, DG_CHK_UNREACHABLE, "inode");
		ev_ino(w, &ev, ino);
		snprintf(ev.detail, sizeof(ev.detail),
			 "inode %llu (%s, %llu bytes) is not reachable from "
			 "the root", (unsigned long long)ino,
			 S_ISDIR(wi->d.mode) ? "directory" : "file",
			 (unsigned long long)wi->d.size);
		snprintf(ev.action, sizeof(ev.action),
			 "move to /lost+found/#%llu", (unsigned long long)ino);
		if (!wask(w, &ev)) {
			wreport(w, &ev, false);
			continue;
		}
		if (!fs) {
			r = dg_fs_open(w->vol, &fs);
			if (r) {
				wreport(w, &ev, false);
				fs = NULL;
				break;
			}
			r = dg_fs_lookup(fs, DG_ROOT_INO, "lost+found", &at);
			if (r == -ENOENT)
				r = dg_fs_mknod(fs, DG_ROOT_INO, "lost+found",
						S_IFDIR | 0700, 0, 0, 0, &at);
			if (r) {
				wreport(w, &ev, false);
				break;
			}
			lf = dg_inode_get(fs, at.ino);
		}
		snprintf(name, sizeof(name), "#%llu", (unsigned long long)ino);
		{
			struct dg_inode *ip = dg_inode_get(fs, ino);
			struct dg_txn *t = dg_txn_new(w->vol);

			r = -ENOMEM;
			if (ip && t && lf && ip->ino != lf->ino) {
				r = dg_dir_add(fs, t, lf, name, ino,
					       dg_mode_dtype(ip->d.mode));
				if (!r && S_ISDIR(ip->d.mode)) {
					ip->d.parent = lf->ino;
					lf->d.nlink++;
				} else if (!r) {
					ip->d.nlink = 1;
				}
				if (!r)
					r = dg_inode_store(fs, t, ip);
				if (!r)
					r = dg_inode_store(fs, t, lf);
				if (!r)
					r = dg_fs_commit(fs, t);
			}
			dg_txn_free(t);
			wreport(w, &ev, r == 0);
		}
	}
	dg_fs_close(fs);
}

int dg_check_fs(struct dg_vol *vol, dg_chk_fn fn, dg_chk_ask_fn ask, void *arg)
{
	struct walk w = { .vol = vol, .fn = fn, .ask = ask, .arg = arg };
	int ret;

	w.cls = calloc(vol->vpns, 1);
	w.owner = calloc(vol->vpns, sizeof(*w.owner));
	ret = walk_load(&w);
	if (ret == 0) {
		check_entries(&w);
		reach(&w);
		check_counts(&w);
		check_stages(&w);
		check_bitmap(&w);
		reconnect(&w);
	}
	walk_free(&w);
	free(w.cls);
	free(w.owner);
	if (ret == -EUCLEAN)
		ret = 0; /* reported */
	return ret < 0 ? ret : (int)w.problems;
}

/* ---- logical faults ------------------------------------------------- */

static uint64_t lf_rnd(uint64_t *st)
{
	uint64_t z = (*st += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A regular file whose structures are all consistent: one name, every
 * extent good and inline (maxext: at most that many). */
static bool lf_plain_file(const struct walk *w, uint64_t ino,
			  uint32_t maxext)
{
	const struct wino *wi = &w->in[ino];

	return ino > DG_ROOT_INO && ino < w->icap && wi->used && !wi->bad &&
	       S_ISREG(wi->d.mode) && wi->reached && wi->refs == 1 &&
	       wi->d.nlink == 1 && !wi->d.map_flags && wi->next >= 1 &&
	       wi->next == wi->d.nextents && wi->next <= maxext;
}

/* ino when given and fitting, else a fitting file chosen by rng. */
static uint64_t lf_pick_file(const struct walk *w, uint64_t ino,
			     uint32_t maxext, uint64_t below, uint64_t *rng)
{
	uint64_t n = 0, k;

	if (ino)
		return lf_plain_file(w, ino, maxext) && ino < below ? ino : 0;
	for (uint64_t i = 2; i < w->icap && i < below; i++)
		n += lf_plain_file(w, i, maxext);
	if (!n)
		return 0;
	k = lf_rnd(rng) % n;
	for (uint64_t i = 2; i < w->icap && i < below; i++)
		if (lf_plain_file(w, i, maxext) && k-- == 0)
			return i;
	return 0;
}

static struct dg_lf_write *lf_add(struct dg_lfault *lf, uint64_t vpn,
				  uint32_t off, uint32_t len,
				  const char *structure)
{
	struct dg_lf_write *x = &lf->w[lf->nw++];

	x->vpn = vpn;
	x->off = off;
	x->len = len;
	x->structure = structure;
	return x;
}

static void lf_inode(struct walk *w, struct dg_lfault *lf, uint64_t ino,
		     const struct dg_dinode *d)
{
	struct dg_lf_write *x;
	uint64_t vpn;
	uint32_t off;

	ino_loc(w, ino, &vpn, &off);
	x = lf_add(lf, vpn, off, sizeof(*d), "inode");
	memcpy(x->data, d, sizeof(*d));
}

static const struct went *lf_entry_of(const struct walk *w, uint64_t ino)
{
	for (size_t i = 0; i < w->nents; i++)
		if (!w->ents[i].dead && w->ents[i].ino == ino)
			return &w->ents[i];
	return NULL;
}

/* A record naming a free inode slot, placed as dg_dir_add() would: in
 * a deleted record big enough (keeping its reclen), else at the tail of
 * the last page; -ENOSPC when neither has room. */
static int lf_dangling(struct walk *w, struct dg_lfault *lf, uint64_t dir,
		       uint64_t *rng)
{
	struct wino *dp = &w->in[dir];
	uint64_t pages = dp->d.size / DG_PAGE_SIZE, vpn = 0, start, ino = 0;
	struct dg_ddirent *r;
	struct dg_lf_write *x;
	uint32_t off = 0, need, wlen = 0, reclen = 0;
	bool reused = false;
	size_t nlen;
	int ret;

	if (!pages)
		return -ENOSPC;
	start = 2 + lf_rnd(rng) % (w->icap - 2);
	for (uint64_t i = 0; i < w->icap - 2; i++) {
		uint64_t c = 2 + (start - 2 + i) % (w->icap - 2);

		if (!w->in[c].used && !w->in[c].bad && !w->in[c].d.mode) {
			ino = c;
			break;
		}
	}
	if (!ino)
		return -ENOENT;
	snprintf(lf->name, sizeof(lf->name), "dangling-%llu",
		 (unsigned long long)ino);
	for (size_t i = 0; i < w->nents; i++)
		if (w->ents[i].dir == dir && !strcmp(w->ents[i].name, lf->name))
			return -EEXIST;
	nlen = strlen(lf->name);
	need = (uint32_t)((sizeof(*r) + nlen + 7) & ~7u);
	for (uint64_t pg = 0; pg < pages && !wlen; pg++) {
		ext_lookup(dp, pg, &vpn);
		if (!vpn)
			return -ENOSPC;
		ret = dg_read(w->vol, vpn, 1, w->page);
		if (ret)
			return ret;
		for (off = 0; off + sizeof(*r) <= DG_PAGE_SIZE;
		     off += r->reclen) {
			r = (struct dg_ddirent *)(w->page + off);
			if (r->reclen == 0)
				break;
			if (!r->ino && r->reclen >= need) {
				/* reuse: the record keeps its length */
				reclen = r->reclen;
				wlen = (uint32_t)(sizeof(*r) + nlen);
				reused = true;
				break;
			}
		}
	}
	if (!wlen) {
		/* off: the tail of the last page, read last */
		if (off + need > DG_PAGE_SIZE)
			return -ENOSPC;
		reclen = need;
		/* the record and, when there is room, the end marker */
		wlen = need + (off + need + sizeof(*r) <= DG_PAGE_SIZE
				       ? (uint32_t)sizeof(*r) : 0);
	}
	x = lf_add(lf, vpn, off, wlen, "directory");
	memset(x->data, 0, sizeof(x->data));
	r = (struct dg_ddirent *)x->data;
	r->ino = ino;
	r->reclen = (uint16_t)reclen;
	r->namelen = (uint8_t)nlen;
	r->type = DT_REG;
	memcpy(r + 1, lf->name, nlen);
	lf->dir = dir;
	lf->other = ino;
	snprintf(lf->detail, sizeof(lf->detail),
		 "entry '%s' (%s record) added to directory %llu naming free "
		 "inode %llu", lf->name, reused ? "reused" : "new",
		 (unsigned long long)dir, (unsigned long long)ino);
	return 0;
}

/* A data page (of ino when given) or a free page, by rng. */
static int lf_bitmap(struct walk *w, struct dg_lfault *lf, uint64_t ino,
		     bool missing, uint64_t *rng)
{
	struct dg_vol *vol = w->vol;
	uint64_t lo = vol->meta_vpns, n = w->vpns - lo, start, v = 0;
	struct dg_lf_write *x;
	bool found = false;
	uint8_t byte;

	if (!missing && ino)
		return -EINVAL;
	start = lf_rnd(rng) % n;
	for (uint64_t i = 0; i < n && !found; i++) {
		bool on;

		v = lo + (start + i) % n;
		pthread_mutex_lock(&vol->alloc_lock);
		on = vol->bitmap[v / 8] & (1u << (v % 8));
		pthread_mutex_unlock(&vol->alloc_lock);
		if (missing)
			found = on && w->cls[v] == DG_PC_FILE &&
				(ino ? w->owner[v] == ino
				     : lf_plain_file(w, w->owner[v], UINT32_MAX));
		else
			found = !on && w->cls[v] == DG_PC_FREE;
	}
	if (!found)
		return -ENOENT;
	pthread_mutex_lock(&vol->alloc_lock);
	byte = vol->bitmap[v / 8] ^ (uint8_t)(1u << (v % 8));
	pthread_mutex_unlock(&vol->alloc_lock);
	x = lf_add(lf, vol->bitmap_vpn + v / 8 / DG_PAGE_SIZE,
		   (uint32_t)(v / 8 % DG_PAGE_SIZE), 1, "allocation");
	x->data[0] = byte;
	lf->vpn = (int64_t)v;
	lf->ino = missing ? w->owner[v] : 0;
	if (missing)
		snprintf(lf->detail, sizeof(lf->detail),
			 "bit of vpn %llu (used by inode %llu) cleared",
			 (unsigned long long)v, (unsigned long long)lf->ino);
	else
		snprintf(lf->detail, sizeof(lf->detail),
			 "bit of free vpn %llu set", (unsigned long long)v);
	return 0;
}

int dg_check_lfault(struct dg_vol *vol, enum dg_lf_target target,
		    uint64_t ino, uint64_t seed, struct dg_lfault *lf)
{
	struct walk w = { .vol = vol, .classify_only = true };
	uint64_t rng = seed, f;
	unsigned sub = (unsigned)(seed % 2);
	struct dg_dinode d;
	int ret;

	memset(lf, 0, sizeof(*lf));
	lf->vpn = -1;
	if (vol->read_only)
		return -EROFS;
	w.cls = calloc(vol->vpns, 1);
	w.owner = calloc(vol->vpns, sizeof(*w.owner));
	ret = walk_load(&w);
	if (ret)
		goto out;
	check_entries(&w);
	reach(&w);
	if (w.problems) {
		ret = -EUCLEAN; /* damaged already: plan nothing on it */
		goto out;
	}
	ret = -ENOENT;
	switch (target) {
	case DG_LF_INODE:
		f = lf_pick_file(&w, ino, UINT32_MAX, UINT64_MAX, &rng);
		if (!f)
			break;
		d = w.in[f].d;
		lf->kind = sub ? "nlink-1" : "nlink+1";
		lf->ino = f;
		lf->before = d.nlink;
		d.nlink = sub ? d.nlink - 1 : d.nlink + 1;
		lf->after = d.nlink;
		lf_inode(&w, lf, f, &d);
		snprintf(lf->detail, sizeof(lf->detail),
			 "inode %llu: link count %llu -> %llu",
			 (unsigned long long)f,
			 (unsigned long long)lf->before,
			 (unsigned long long)lf->after);
		ret = 0;
		break;
	case DG_LF_DIRECTORY:
		if (sub == 0) {
			const struct went *e;
			struct dg_lf_write *x;
			uint64_t vpn, zero = 0;

			lf->kind = "orphan";
			f = lf_pick_file(&w, ino, UINT32_MAX, UINT64_MAX, &rng);
			e = f ? lf_entry_of(&w, f) : NULL;
			if (!e)
				break;
			ext_lookup(&w.in[e->dir], e->fpage, &vpn);
			if (!vpn)
				break;
			x = lf_add(lf, vpn, e->off +
				   (uint32_t)offsetof(struct dg_ddirent, ino),
				   sizeof(zero), "directory");
			memcpy(x->data, &zero, sizeof(zero));
			lf->ino = f;
			lf->dir = e->dir;
			snprintf(lf->name, sizeof(lf->name), "%s", e->name);
			snprintf(lf->detail, sizeof(lf->detail),
				 "entry '%s' of directory %llu, the only name "
				 "of inode %llu, removed", e->name,
				 (unsigned long long)e->dir,
				 (unsigned long long)f);
			ret = 0;
			break;
		}
		lf->kind = "dangling";
		if (ino) {
			const struct went *e;

			if (ino >= w.icap || !w.in[ino].used)
				break;
			if (!S_ISDIR(w.in[ino].d.mode)) {
				e = lf_entry_of(&w, ino);
				if (!e)
					break;
				ino = e->dir;
			}
			ret = lf_dangling(&w, lf, ino, &rng);
			break;
		}
		/* The root first, then any directory with room. */
		for (uint64_t i = DG_ROOT_INO; i < w.icap && ret; i++)
			if (w.in[i].used && w.in[i].reached &&
			    S_ISDIR(w.in[i].d.mode))
				ret = lf_dangling(&w, lf, i, &rng);
		break;
	case DG_LF_ALLOCATION:
		lf->kind = sub ? "bitmap-leak" : "bitmap-missing";
		ret = lf_bitmap(&w, lf, ino, !sub, &rng);
		break;
	case DG_LF_EXTENT:
		if (sub == 1) {
			lf->kind = "blocks";
			f = lf_pick_file(&w, ino, UINT32_MAX, UINT64_MAX, &rng);
			if (!f)
				break;
			d = w.in[f].d;
			lf->ino = f;
			lf->before = d.blocks;
			lf->after = ++d.blocks;
			lf_inode(&w, lf, f, &d);
			snprintf(lf->detail, sizeof(lf->detail),
				 "inode %llu: block count %llu -> %llu",
				 (unsigned long long)f,
				 (unsigned long long)lf->before,
				 (unsigned long long)lf->after);
			ret = 0;
			break;
		}
		lf->kind = "extent-dup";
		{
			uint64_t b = 0;
			uint32_t k;
			struct dg_dextent *e;

			/* A (higher inode, so the walk meets it second and
			 * it is the one repaired) takes B's first pages. */
			f = lf_pick_file(&w, ino, DG_INLINE_EXTENTS,
					 UINT64_MAX, &rng);
			if (f)
				b = lf_pick_file(&w, 0, UINT32_MAX, f, &rng);
			if (!f || !b)
				break;
			d = w.in[f].d;
			k = d.nextents - 1;
			e = &d.inl[k];
			lf->ino = f;
			lf->other = b;
			lf->fpage = e->fpage;
			lf->pages = e->len;
			e->vpn = w.in[b].ext[0].vpn;
			if (e->len > w.in[b].ext[0].len)
				e->len = w.in[b].ext[0].len;
			lf_inode(&w, lf, f, &d);
			snprintf(lf->detail, sizeof(lf->detail),
				 "inode %llu extent %u (file pages %llu+%llu) "
				 "remapped onto vpn %llu+%u of inode %llu",
				 (unsigned long long)f, k,
				 (unsigned long long)lf->fpage,
				 (unsigned long long)lf->pages,
				 (unsigned long long)e->vpn, e->len,
				 (unsigned long long)b);
			ret = 0;
		}
		break;
	default:
		ret = -EINVAL;
	}
out:
	walk_free(&w);
	free(w.cls);
	free(w.owner);
	return ret;
}

/* ---- fuzzing --------------------------------------------------------- */

int dg_check_fuzz_page(struct dg_vol *vol, unsigned kind, const void *page)
{
	struct walk w = { .vol = vol, .classify_only = true };
	struct dg_dsuper sb;
	int ret = 0;

	switch (kind % 4) {
	case 0:
		return dg_dsuper_decode(page, &sb);
	case 1: /* a directory page */
		w.vpns = vol->vpns;
		parse_dir_page(&w, 1, 0, 0, page);
		ret = (int)w.nents;
		walk_free(&w);
		return ret;
	case 2: { /* an inode record */
		const struct dg_dinode *d = page;

		return mode_ok(d->mode) ? 0 : -EUCLEAN;
	}
	default: { /* journal header */
		struct dg_djhead h;

		memcpy(&h, page, sizeof(h));
		return h.csum == jhead_csum(vol, &h) ? 0 : -EUCLEAN;
	}
	}
}
