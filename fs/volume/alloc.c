// SPDX-License-Identifier: MIT
/* alloc.c -- the allocation bitmap: a txn's allocations and frees */
#include <stdlib.h>
#include <string.h>

#include "bmap.h"

/* The in-core bitmap is bmap.c's table of pages; alloc_lock held. */
static bool bit_get(const struct dg_vol *vol, uint64_t i)
{
	return dg_bm_get(vol, i);
}

/* Free counts after n pages from start were taken (or given back). */
static void account(struct dg_vol *vol, uint64_t start, uint64_t n,
		    bool given_back)
{
	uint64_t z = 0;

	if (start < vol->zone_vpns)
		z = (vol->zone_vpns - start < n ? vol->zone_vpns - start : n);
	if (given_back) {
		vol->free_vpns += n;
		vol->zone_free += z;
	} else {
		vol->free_vpns -= n;
		vol->zone_free -= z;
	}
}

static bool has_zone(const struct dg_vol *vol)
{
	return vol->sb.incompat & DG_FEAT_INCOMPAT_META_ZONE;
}

int dg_alloc_load(struct dg_vol *vol)
{
	struct dg_droot *root = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint64_t want_pages = dg_div_up(vol->vpns, 8ull * DG_PAGE_SIZE);
	int ret;

	if (!root)
		return -ENOMEM;
	ret = dg_read(vol, 0, 1, root);
	if (ret)
		goto out;
	if (root->magic != DG_ROOT_MAGIC || root->vpns != vol->vpns ||
	    root->bitmap_vpn != 1 || root->bitmap_pages != want_pages ||
	    root->meta_vpns != 1 + want_pages) {
		ret = DG_CORRUPT(vol, "volume root: bad magic or geometry");
		goto out;
	}
	/* The zone is the superblock's ditto range; the root repeats it so
	 * that the filesystem layer's view and the copies' never differ. */
	if (root->zone_vpns != (has_zone(vol) ? vol->sb.ditto_pages : 0) ||
	    (root->zone_vpns && (root->zone_vpns <= root->meta_vpns ||
				 root->zone_vpns >= vol->vpns))) {
		ret = DG_CORRUPT(vol, "volume root: metadata zone of %" PRIu64
				 " pages, the superblock says %u",
				 root->zone_vpns, vol->sb.ditto_pages);
		goto out;
	}
	vol->bitmap_vpn = root->bitmap_vpn;
	vol->bitmap_pages = root->bitmap_pages;
	vol->meta_vpns = root->meta_vpns;
	vol->zone_vpns = root->zone_vpns ? root->zone_vpns : root->meta_vpns;
	/* Only the pages that may have been written are read (bmap.c). */
	ret = dg_bm_load(vol);
	if (ret) {
		dg_bm_fini(vol);
		goto out;
	}
	vol->alloc_cursor = vol->zone_vpns;
	vol->meta_cursor = vol->meta_vpns;
	vol->meta_spill = 0;
out:
	free(root);
	return ret;
}

/* dg_format() creates the root before the allocator can be loaded. */
int dg_alloc_format(struct dg_vol *vol)
{
	uint8_t *page = aligned_alloc(DG_PAGE_SIZE, 2 * DG_PAGE_SIZE);
	struct dg_droot *root = (struct dg_droot *)page;
	uint8_t *bm = page + DG_PAGE_SIZE;
	uint64_t pages = dg_div_up(vol->vpns, 8ull * DG_PAGE_SIZE);
	struct dg_range r[2];
	int ret;

	if (!page)
		return -ENOMEM;
	memset(page, 0, 2 * DG_PAGE_SIZE);
	root->magic = DG_ROOT_MAGIC;
	root->vpns = vol->vpns;
	root->bitmap_vpn = 1;
	root->bitmap_pages = pages;
	root->meta_vpns = 1 + pages;
	root->zone_vpns = has_zone(vol) ? vol->sb.ditto_pages : 0;
	if (root->meta_vpns > 8ull * DG_PAGE_SIZE ||
	    root->meta_vpns >= vol->vpns ||
	    (root->zone_vpns && root->zone_vpns <= root->meta_vpns)) {
		free(page);
		return -ENOSPC;
	}
	/* Only the first bitmap page has bits set; the rest were never
	 * written and read as zeros (free). */
	for (uint64_t i = 0; i < root->meta_vpns; i++)
		bm[i / 8] |= (uint8_t)(1u << (i % 8));
	r[0] = (struct dg_range){ 0, 0, DG_PAGE_SIZE, root };
	r[1] = (struct dg_range){ 1, 0, DG_PAGE_SIZE, bm };
	ret = dg_apply(vol, r, 2);
	free(page);
	return ret;
}

void dg_alloc_fini(struct dg_vol *vol)
{
	dg_bm_fini(vol);
}

uint64_t dg_vpn_next_allocated(struct dg_vol *vol, uint64_t vpn,
			       uint64_t end)
{
	if (end > vol->vpns)
		end = vol->vpns;
	if (!vol->bm || vpn >= end)
		return end;
	pthread_mutex_lock(&vol->alloc_lock);
	vpn = dg_bm_next_used(vol, vpn, end);
	pthread_mutex_unlock(&vol->alloc_lock);
	return vpn;
}

uint64_t dg_alloc_meta_vpns(struct dg_vol *vol)
{
	return vol->bm ? vol->meta_vpns : 0;
}

void dg_alloc_bit(struct dg_vol *vol, uint64_t vpn, uint64_t *bvpn,
		  uint32_t *off, uint8_t *byte)
{
	*bvpn = vol->bitmap_vpn + vpn / 8 / DG_PAGE_SIZE;
	*off = (uint32_t)(vpn / 8 % DG_PAGE_SIZE);
	pthread_mutex_lock(&vol->alloc_lock);
	dg_bm_bytes(vol, vpn / 8, 1, byte);
	pthread_mutex_unlock(&vol->alloc_lock);
}

int dg_alloc_mark(struct dg_vol *vol, uint64_t vpn, bool used)
{
	struct dg_range r;
	uint64_t bvpn;
	uint32_t off;
	uint8_t byte;
	int ret;

	if (vpn >= vol->vpns || !vol->bm)
		return -EINVAL;
	pthread_mutex_lock(&vol->alloc_lock);
	ret = dg_bm_prepare(vol, vpn, 1);
	if (!ret && bit_get(vol, vpn) != used) {
		dg_bm_set(vol, vpn, 1, used);
		account(vol, vpn, 1, !used);
	}
	pthread_mutex_unlock(&vol->alloc_lock);
	if (ret)
		return ret;
	dg_alloc_bit(vol, vpn, &bvpn, &off, &byte);
	/* One byte of one bitmap page, no allocation: the update path
	 * itself, as a txn of one write would call it. */
	r = (struct dg_range){ bvpn, off, 1, &byte };
	return dg_apply(vol, &r, 1);
}

uint64_t dg_free_vpns(struct dg_vol *vol)
{
	uint64_t n;

	pthread_mutex_lock(&vol->alloc_lock);
	n = vol->free_vpns;
	pthread_mutex_unlock(&vol->alloc_lock);
	return n;
}

/* t on or off vol->alloc_pending; alloc_lock held. */
static void pending_set(struct dg_txn *t, bool on)
{
	struct dg_vol *vol = t->vol;

	if (t->pending == on)
		return;
	if (on) {
		t->pend_prev = NULL;
		t->pend_next = vol->alloc_pending;
		if (t->pend_next)
			t->pend_next->pend_prev = t;
		vol->alloc_pending = t;
	} else {
		if (t->pend_prev)
			t->pend_prev->pend_next = t->pend_next;
		else
			vol->alloc_pending = t->pend_next;
		if (t->pend_next)
			t->pend_next->pend_prev = t->pend_prev;
	}
	t->pending = on;
}

void dg_alloc_settled(struct dg_txn *t)
{
	pthread_mutex_lock(&t->vol->alloc_lock);
	pending_set(t, false);
	pthread_mutex_unlock(&t->vol->alloc_lock);
}

/* An allocation (alloc_lock held) or a free (not) of t. */
static int add_op(struct dg_txn *t, uint64_t start, uint64_t n, bool is_free)
{
	if (dg_grow((void **)&t->op, &t->capop, t->nop, sizeof(*t->op)))
		return -ENOMEM;
	t->op[t->nop++] = (struct txn_op){ start, n, is_free };
	if (!is_free)
		pending_set(t, true);
	return 0;
}

/* First free vpn in [lo, hi) at or after from, wrapping once to lo; hi
 * if none. */
static uint64_t find_free(struct dg_vol *vol, uint64_t lo, uint64_t hi,
			  uint64_t from)
{
	uint64_t i;

	if (from < lo || from >= hi)
		from = lo;
	i = dg_bm_next_free(vol, from, hi);
	if (i < hi)
		return i;
	i = dg_bm_next_free(vol, lo, from);
	return i < from ? i : hi;
}

/* How many free pages dg_alloc_blank_hint() looks at a call, at most:
 * checksum lookups, most of them in one cached page, and usually the
 * first is blank. A run of freed pages (they hold bytes) is passed 64
 * at a time. A call that finds none has the next BLANK_SKIP answer none
 * without a look: a volume written over at random runs out of blank
 * pages, and its writes then go in place without paying for the search
 * each time (4 lookups a write). */
#define BLANK_LOOK 64u
#define BLANK_SKIP 15u

uint64_t dg_alloc_blank_hint(struct dg_vol *vol)
{
	uint64_t cand[BLANK_LOOK], from, found = 0;
	unsigned n = 0, i;

	pthread_mutex_lock(&vol->alloc_lock);
	if (vol->blank_skip) {
		vol->blank_skip--;
		pthread_mutex_unlock(&vol->alloc_lock);
		return 0;
	}
	from = vol->blank_cursor;
	while (n < BLANK_LOOK) {
		uint64_t v = find_free(vol, vol->zone_vpns, vol->vpns, from);

		if (v >= vol->vpns || (n && v == cand[0]))
			break;	/* none, or round to the first again */
		cand[n++] = v;
		from = v + 1;
	}
	pthread_mutex_unlock(&vol->alloc_lock);
	/* Looked up unlocked: a page taken meanwhile is not blank to its
	 * taker's write either way, and the checksum says what it holds. */
	for (i = 0; i < n && !found; i++) {
		struct dg_loc l = dg_vpn_loc(vol, cand[i]);

		if (dg_page_blank(vol, l.dev, l.row))
			found = cand[i];
	}
	pthread_mutex_lock(&vol->alloc_lock);
	if (n)
		vol->blank_cursor = cand[i - 1] + 1;
	if (!found)
		vol->blank_skip = BLANK_SKIP;
	pthread_mutex_unlock(&vol->alloc_lock);
	return found;
}

/* Take up to want free vpns from the first free one in [lo, hi) at or
 * after from (wrapping); -ENOSPC if [lo, hi) has none. */
static int take_run(struct dg_txn *t, uint64_t lo, uint64_t hi,
		    uint64_t from, uint64_t want, uint64_t *start,
		    uint64_t *got)
{
	struct dg_vol *vol = t->vol;
	uint64_t s = find_free(vol, lo, hi, from), n = 0;
	int ret;

	if (s >= hi)
		return -ENOSPC;
	/* A run may cross chunks: extents are runs of vpns, and whoever
	 * needs device addresses (libcommit maps) splits them per page. */
	while (n < want && s + n < hi && !bit_get(vol, s + n))
		n++;
	ret = dg_bm_prepare(vol, s, n);
	if (!ret)
		ret = add_op(t, s, n, false);
	if (ret)
		return ret;
	dg_bm_set(vol, s, n, true);
	account(vol, s, n, false);
	*start = s;
	*got = n;
	return 0;
}

/*
 * File data goes outside the metadata zone, so that a fault beyond
 * parity in its rows never reaches metadata; only when that space is
 * full does it go into the zone (an operation that has free space does
 * not fail; the pages it takes there just get ditto copies too).
 */
int dg_alloc(struct dg_txn *t, uint64_t hint, uint64_t want, uint64_t *start,
	     uint64_t *got)
{
	struct dg_vol *vol = t->vol;
	uint64_t lo = vol->zone_vpns;
	bool from_cursor = hint < lo || hint >= vol->vpns;
	int ret;

	if (want == 0)
		return -EINVAL;
	pthread_mutex_lock(&vol->alloc_lock);
	if (from_cursor)
		hint = vol->alloc_cursor;
	ret = take_run(t, lo, vol->vpns, hint, want, start, got);
	if (ret == -ENOSPC)
		ret = take_run(t, vol->meta_vpns, lo, vol->meta_cursor, want,
			       start, got);
	if (ret)
		goto out;
	/* A hinted allocation within a file's home (dg_alloc_home) leaves
	 * the cursor past that home; one beyond the cursor pushes it on. */
	if (*start >= lo && (from_cursor || *start >= vol->alloc_cursor))
		vol->alloc_cursor = *start + *got < vol->vpns ? *start + *got
							      : lo;
out:
	pthread_mutex_unlock(&vol->alloc_lock);
	return ret;
}

/*
 * Whole rows for file data. A chunk group is chunk_pages rows; rank r's
 * pages of it are the vpns (g * k + r) * chunk_pages + o. A band is rows
 * [o, o + n) of one group free on every rank; its k runs, used in rank
 * order, put a write of k * n pages on whole rows. The rows of one group
 * share one parity device (geom.c), so a band's parity is n pages of one
 * device.
 */

/* Chunk groups searched for a band before giving one plain run. */
#define BAND_GROUPS 16
/* Fewer rows than this (and than the write needs) are not worth k
 * extents instead of one. */
#define BAND_MIN_ROWS 8

uint64_t dg_alloc_band_pages(const struct dg_vol *vol)
{
	/* A band costs k extents where one run costs one: worth it from
	 * 64 rows on (768 KiB with 3 data devices, so a file written in
	 * 1 MiB pieces keeps about 3 extents a piece), and from 1 MiB on
	 * wide volumes (a FUSE write is at most 1 MiB). */
	uint64_t n = 64ull * vol->k;

	return n < 256 ? n : 256;
}

uint64_t dg_vol_new_row_min(struct dg_vol *vol)
{
	return dg_new_row_allowed(vol) ? dg_alloc_band_pages(vol) : 0;
}

uint64_t dg_vol_scatter_min(struct dg_vol *vol)
{
	return dg_new_row_allowed(vol) && vol->parity && vol->redundancy
		       ? BAND_MIN_ROWS * vol->k
		       : 0;
}

static bool band_row_free(const struct dg_vol *vol, uint64_t g, uint64_t o)
{
	uint64_t cp = vol->sb.chunk_pages;

	for (unsigned r = 0; r < vol->k; r++)
		if (bit_get(vol, (g * vol->k + r) * cp + o))
			return false;
	return true;
}

/* The longest band of at most want rows in group g starting at row from
 * or later (the first such when several are as long): its length, and
 * its first row in *o. */
static uint64_t band_find(const struct dg_vol *vol, uint64_t g,
			  uint64_t from, uint64_t want, uint64_t *o)
{
	uint64_t cp = vol->sb.chunk_pages, base = g * vol->k * cp, best = 0;

	for (uint64_t i = from; i < cp && best < want;) {
		uint64_t n = 0;

		/* Rank 0's pages 64 at a time where they are all in use. */
		if ((base + i) % 64 == 0 && i + 64 <= cp &&
		    dg_bm_word_full(vol, base + i)) {
			i += 64;
			continue;
		}
		while (n < want && i + n < cp && band_row_free(vol, g, i + n))
			n++;
		if (n > best) {
			best = n;
			*o = i;
		}
		i += n ? n : 1;
	}
	return best;
}

/* One plain run as dg_alloc() gives: *nruns 1, or 0 on failure. */
static int one_run(struct dg_txn *t, uint64_t hint, uint64_t want,
		   struct dg_vrun *runs, unsigned *nruns)
{
	int ret = dg_alloc(t, hint, want, &runs[0].vpn, &runs[0].n);

	*nruns = ret ? 0 : 1;
	return ret;
}

/*
 * A band for want pages (dg_alloc_rows()), or, when there is none of at
 * least BAND_MIN_ROWS rows (or of the rows want needs, if fewer): one
 * plain run when plain, else -ENOSPC. *nruns: the runs allocated, also
 * on failure (0 when none: the caller then knows nothing changed).
 */
static int alloc_band(struct dg_txn *t, uint64_t hint, uint64_t want,
		      bool plain, struct dg_vrun *runs, unsigned *nruns)
{
	struct dg_vol *vol = t->vol;
	uint64_t k = vol->k, cp = vol->sb.chunk_pages, gsize = k * cp;
	uint64_t first = dg_div_up(vol->zone_vpns, gsize), last = vol->vpns / gsize;
	uint64_t rows = dg_div_up(want, k), best = 0, bg = 0, bo = 0, left = want;
	unsigned n = 0;
	int ret = 0;

	*nruns = 0;
	if (want == 0)
		return -EINVAL;
	if (!vol->parity || !vol->redundancy || first >= last)
		return plain ? one_run(t, hint, want, runs, nruns) : -ENOSPC;
	if (rows > cp)
		rows = cp;
	pthread_mutex_lock(&vol->alloc_lock);
	if (hint < first * gsize || hint >= last * gsize)
		hint = vol->alloc_cursor;
	if (hint < first * gsize || hint >= last * gsize)
		hint = first * gsize;
	for (uint64_t i = 0; i < BAND_GROUPS && i < last - first && best < rows;
	     i++) {
		uint64_t g = first + (hint / gsize - first + i) % (last - first);
		uint64_t o = 0, got = band_find(vol, g, i ? 0 : hint % cp,
						 rows, &o);

		if (got > best) {
			best = got;
			bg = g;
			bo = o;
		}
	}
	if (best < rows && best < BAND_MIN_ROWS) {
		pthread_mutex_unlock(&vol->alloc_lock);
		return plain ? one_run(t, hint, want, runs, nruns) : -ENOSPC;
	}
	for (uint64_t r = 0; r < k && left && !ret; r++) {
		/* The pages left spread evenly over the ranks left: n = q k + m
		 * pages give m ranks of q + 1 and the rest q, so one row alone
		 * is partial, and holds m pages (86 + 85 + 85 for 256 pages on
		 * 3, not 86 + 86 + 84, whose two partial rows journal 4 pages,
		 * each on parity + 1 copies, and patch two parity pages). */
		uint64_t even = dg_div_up(left, k - r);
		uint64_t take = even < best ? even : best;
		uint64_t s = (bg * k + r) * cp + bo;

		ret = dg_bm_prepare(vol, s, take);
		if (!ret)
			ret = add_op(t, s, take, false);
		if (ret)
			break;
		dg_bm_set(vol, s, take, true);
		account(vol, s, take, false);
		runs[n++] = (struct dg_vrun){ s, take };
		left -= take;
	}
	/* Like dg_alloc(): a band past the cursor pushes it on. */
	if (n && runs[n - 1].vpn + runs[n - 1].n > vol->alloc_cursor)
		vol->alloc_cursor = runs[n - 1].vpn + runs[n - 1].n < vol->vpns
					    ? runs[n - 1].vpn + runs[n - 1].n
					    : vol->zone_vpns;
	pthread_mutex_unlock(&vol->alloc_lock);
	*nruns = n;
	return ret;
}

int dg_alloc_rows(struct dg_txn *t, uint64_t hint, uint64_t want,
		  struct dg_vrun *runs, unsigned *nruns)
{
	if (want < dg_alloc_band_pages(t->vol))
		return one_run(t, hint, want, runs, nruns);
	return alloc_band(t, hint, want, true, runs, nruns);
}

int dg_alloc_band(struct dg_txn *t, uint64_t hint, uint64_t want,
		  struct dg_vrun *runs, unsigned *nruns)
{
	return alloc_band(t, hint, want, false, runs, nruns);
}

/*
 * Metadata goes into the zone, near hint when hint lies there. A full
 * zone does not fail the operation: the page goes among the data rows,
 * without ditto copies, and is counted (meta_spill; fsck and dumpfs
 * count them on the media).
 */
int dg_alloc_meta(struct dg_txn *t, uint64_t hint, uint64_t want,
		  uint64_t *start, uint64_t *got)
{
	struct dg_vol *vol = t->vol;
	uint64_t lo = vol->meta_vpns, hi = vol->zone_vpns;
	int ret;

	if (want == 0)
		return -EINVAL;
	pthread_mutex_lock(&vol->alloc_lock);
	if (hint < lo || hint >= hi)
		hint = vol->meta_cursor;
	ret = take_run(t, lo, hi, hint, want, start, got);
	if (!ret) {
		vol->meta_cursor = *start + *got < hi ? *start + *got : lo;
	} else if (ret == -ENOSPC) {
		ret = take_run(t, hi, vol->vpns, vol->alloc_cursor, want,
			       start, got);
		if (!ret)
			vol->meta_spill += *got;
	}
	pthread_mutex_unlock(&vol->alloc_lock);
	return ret;
}

uint64_t dg_alloc_home(struct dg_vol *vol, uint64_t pages)
{
	uint64_t home;

	pthread_mutex_lock(&vol->alloc_lock);
	home = vol->alloc_cursor;
	/* Past the end, wrap: find_free() goes on from the cursor anyway. */
	if (pages < vol->vpns - home)
		vol->alloc_cursor = home + pages;
	else
		vol->alloc_cursor = vol->zone_vpns;
	pthread_mutex_unlock(&vol->alloc_lock);
	return home;
}

/* The first run of exactly want free vpns in [lo, hi). */
static int take_exact(struct dg_txn *t, uint64_t lo, uint64_t hi,
		      uint64_t want, uint64_t *start)
{
	struct dg_vol *vol = t->vol;
	uint64_t run = 0, s = 0;

	for (uint64_t i = lo; i < hi; i++) {
		int ret;

		if (bit_get(vol, i)) {
			run = 0;
			continue;
		}
		if (run++ == 0)
			s = i;
		if (run < want)
			continue;
		ret = dg_bm_prepare(vol, s, want);
		if (!ret)
			ret = add_op(t, s, want, false);
		if (ret)
			return ret;
		dg_bm_set(vol, s, want, true);
		account(vol, s, want, false);
		*start = s;
		return 0;
	}
	return -ENOSPC;
}

/* A run of exactly want free vpns. It may span chunks (and devices):
 * its readers go through dg_read(), which takes any vpn range. Metadata
 * runs come from the zone first, data runs from outside it first. */
int dg_alloc_exact(struct dg_txn *t, uint64_t want, bool meta,
		   uint64_t *start)
{
	struct dg_vol *vol = t->vol;
	uint64_t z = vol->zone_vpns;
	int ret;

	if (want == 0)
		return -EINVAL;
	pthread_mutex_lock(&vol->alloc_lock);
	ret = meta ? take_exact(t, vol->meta_vpns, z, want, start)
		   : take_exact(t, z, vol->vpns, want, start);
	if (ret == -ENOSPC) {
		ret = meta ? take_exact(t, z, vol->vpns, want, start)
			   : take_exact(t, vol->meta_vpns, z, want, start);
		if (!ret && meta)
			vol->meta_spill += want;
	}
	pthread_mutex_unlock(&vol->alloc_lock);
	return ret;
}

int dg_free(struct dg_txn *t, uint64_t start, uint64_t n)
{
	struct dg_vol *vol = t->vol;
	bool ok = true;
	int ret = 0;

	if (start < vol->meta_vpns || start >= vol->vpns ||
	    n > vol->vpns - start)
		return -EINVAL;
	pthread_mutex_lock(&vol->alloc_lock);
	for (uint64_t i = start; i < start + n && ok; i++)
		ok = bit_get(vol, i);
	/* frees_durable() clears them and cannot fail: each page gets its
	 * image now (a page full at the open was held as a count). */
	if (ok)
		ret = dg_bm_prepare(vol, start, n);
	pthread_mutex_unlock(&vol->alloc_lock);
	if (!ok)
		return DG_CORRUPT(vol, "freeing unallocated vpns %" PRIu64
				  "+%" PRIu64, start, n);
	if (ret)
		return ret;
	/* The bits clear at commit: freed space must not be reused before
	 * the metadata that stops using it is durable. */
	return add_op(t, start, n, true);
}

/*
 * The bitmap bytes a commit writes, taken afresh once the update holds
 * the locks of their rows (dg_apply_new() calls this): the in-core bitmap
 * as it is then, with this txn's frees cleared (in core they clear once
 * its entry is durable: frees_durable()). Two commits that write one
 * bitmap page hold its row's lock in turn from here to their in-place
 * writes, so the later one's bytes hold the earlier one's bits, frees
 * included, in the journal and on the media alike; commits that touch
 * other pages need no order.
 */
/* The bits of u's frees (frees) or allocations (!frees) cleared in b,
 * the bitmap's bytes [b0, b0 + len). */
static void ops_clear(const struct dg_txn *u, bool frees, uint8_t *b,
		      uint64_t b0, uint32_t len)
{
	for (unsigned k = 0; k < u->nop; k++) {
		uint64_t s = u->op[k].start, e = s + u->op[k].n;

		if (u->op[k].is_free != frees)
			continue;
		if (s < b0 * 8)
			s = b0 * 8;
		if (e > (b0 + len) * 8)
			e = (b0 + len) * 8;
		for (uint64_t v = s; v < e; v++)
			b[v / 8 - b0] &= (uint8_t)~(1u << (v % 8));
	}
}

/*
 * Nor the allocations of other commits that are not durable: they are
 * set in core from dg_alloc() on, and a commit whose bytes held them
 * would leave them set on the media if those commits never were (a
 * crash): pages marked in use that nothing uses, for fsck to find. The
 * commit that made them durable writes them, under the same row lock.
 */
static void bitmap_fill(void *arg)
{
	struct dg_txn *t = arg;
	struct dg_vol *vol = t->vol;

	pthread_mutex_lock(&vol->alloc_lock);
	for (unsigned i = t->bm_first; i < t->nw; i++) {
		uint8_t *b = (uint8_t *)t->w[i].data;
		uint64_t b0 = (t->w[i].vpn - vol->bitmap_vpn) * DG_PAGE_SIZE +
			      t->w[i].off;

		dg_bm_bytes(vol, b0, t->w[i].len, b);
		ops_clear(t, true, b, b0, t->w[i].len);
		for (const struct dg_txn *u = vol->alloc_pending; u;
		     u = u->pend_next)
			if (u != t)
				ops_clear(u, false, b, b0, t->w[i].len);
	}
	pthread_mutex_unlock(&vol->alloc_lock);
}

/* Freed pages [start, start + n) for -o discard's queue (volume_i.h,
 * struct dg_blank; blank.c takes them). alloc_lock held. */
bool dg_freed_note(struct dg_vol *vol, uint64_t start, uint64_t n)
{
	struct dg_blank *b = &vol->blank;
	bool took = false;

	if (start < vol->zone_vpns)
		return false;
	pthread_mutex_lock(&b->lock);
	if (b->on && !b->stop) {
		struct dg_blank_run *last =
			b->len ? &b->run[(b->head + b->len - 1) % DG_BLANK_RUNS]
			       : NULL;

		if (last && last->start + last->n == start) {
			last->n += n;
			took = true;
		} else if (b->len < DG_BLANK_RUNS) {
			b->run[(b->head + b->len++) % DG_BLANK_RUNS] =
				(struct dg_blank_run){ start, n };
			took = true;
		} else {
			b->dropped++;
		}
	}
	if (took) {
		b->pending += n;
		pthread_cond_broadcast(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	return took;
}

/* The commit's entry is durable, under the locks of its bitmap rows:
 * its freed pages may be taken again, and the next commit's bytes of
 * those rows must show them free. */
static void frees_durable(void *arg)
{
	struct dg_txn *t = arg;
	struct dg_vol *vol = t->vol;

	pthread_mutex_lock(&vol->alloc_lock);
	pending_set(t, false);	/* its allocations are durable */
	for (unsigned i = 0; i < t->nop; i++) {
		if (!t->op[i].is_free)
			continue;
		dg_bm_set(vol, t->op[i].start, t->op[i].n, false);
		account(vol, t->op[i].start, t->op[i].n, true);
		/* Reuse freed space before untouched space: on file-backed
		 * devices (images on tmpfs) untouched pages cost no memory,
		 * and a roving cursor would touch every page of the volume
		 * before reusing any. Where the blanker takes them, it moves
		 * the cursor once their rows are blank (blank.c). */
		if (!t->frees_rewritten &&
		    dg_freed_note(vol, t->op[i].start, t->op[i].n))
			;
		else if (t->op[i].start >= vol->zone_vpns &&
			 t->op[i].start < vol->alloc_cursor)
			vol->alloc_cursor = t->op[i].start;
		else if (t->op[i].start < vol->zone_vpns &&
			 t->op[i].start < vol->meta_cursor)
			vol->meta_cursor = t->op[i].start;
	}
	pthread_mutex_unlock(&vol->alloc_lock);
}


/* The allocations of a txn that was not committed go back. */
void dg_alloc_undo(struct dg_txn *t)
{
	struct dg_vol *vol = t->vol;

	if (t->nop) {
		pthread_mutex_lock(&vol->alloc_lock);
		pending_set(t, false);
		for (unsigned i = 0; i < t->nop; i++)
			if (!t->op[i].is_free) {
				dg_bm_set(vol, t->op[i].start, t->op[i].n,
					  false);
				account(vol, t->op[i].start, t->op[i].n, true);
			}
		pthread_mutex_unlock(&vol->alloc_lock);
	}
}

/* 0, or corrupt: another commit may have freed a page since dg_free()
 * looked. */
int dg_alloc_check_frees(struct dg_txn *t)
{
	struct dg_vol *vol = t->vol;
	int ret = 0;

	pthread_mutex_lock(&vol->alloc_lock);
	for (unsigned i = 0; i < t->nop && !ret; i++)
		for (uint64_t b = t->op[i].start;
		     t->op[i].is_free && b < t->op[i].start + t->op[i].n; b++)
			if (!bit_get(vol, b)) {
				ret = DG_CORRUPT(vol, "double free of vpn %"
						 PRIu64, b);
				break;
			}
	pthread_mutex_unlock(&vol->alloc_lock);
	return ret;
}

/* The hooks dg_apply_new() calls for t's bitmap bytes and frees. */
struct dg_apply_hooks dg_alloc_hooks(struct dg_txn *t)
{
	const struct dg_apply_hooks hooks = { bitmap_fill, frees_durable, t };

	return hooks;
}
