// SPDX-License-Identifier: MIT
/* csum.c -- address-seeded XXH3 page checksums, checksum pages, replicas */
#include <stdlib.h>
#include <string.h>
#include "xxh.h"

#include "csum.h"

#define K_DEV	0x9e3779b97f4a7c15ull
#define K_ROW	0xc2b2ae3d27d4eb4full
#define K_CPAGE 0x165667b19e3779f9ull

enum copy_state { COPY_ABSENT, COPY_VALID, COPY_ZERO, COPY_BAD };

uint64_t dg_seed_from_uuid(const uint8_t uuid[16])
{
	return XXH3_64bits(uuid, 16);
}

/* DESIGN §6: checksum seed = volume identity + page address. */
uint64_t dg_csum_page(const struct dg_vol *vol, unsigned dev, uint64_t row,
		      const void *page)
{
	uint64_t seed = vol->seed ^ ((dev + 1) * K_DEV) ^ ((row + 1) * K_ROW);
	uint64_t h = XXH3_64bits_withSeed(page, DG_PAGE_SIZE, seed);

	return h == DG_CSUM_NONE ? 1 : h;
}

static uint64_t cpage_csum(const struct dg_vol *vol, unsigned owner,
			   uint64_t index, const void *page)
{
	uint64_t seed = vol->seed ^ ((owner + 1) * K_DEV) ^
			((index + 1) * K_CPAGE);
	uint64_t h = XXH3_64bits_withSeed(page, DG_PAGE_SIZE - 8, seed);

	return h ? h : 1;
}

static bool page_is_zero(const void *p)
{
	const uint64_t *w = p;

	return w[0] == 0 && !memcmp(w, w + 1, DG_PAGE_SIZE - 8);
}

int dg_csum_page_check(const struct dg_vol *vol, unsigned owner,
		       uint64_t index, const void *page)
{
	const uint64_t *w = page;

	if (page_is_zero(page))
		return 0;
	if (w[DG_CSUMS_PER_PAGE] == cpage_csum(vol, owner, index, page))
		return 1;
	return -EUCLEAN;
}

void dg_csum_page_seal(const struct dg_vol *vol, unsigned owner,
		       uint64_t index, void *page)
{
	uint64_t *w = page;

	w[DG_CSUMS_PER_PAGE] = cpage_csum(vol, owner, index, page);
}

int dg_csum_upd_cmp(const void *a, const void *b)
{
	const struct dg_csum_upd *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/* Copy c of checksum page index of owner: 0 primary, 1 replica. */
static struct dg_dev *copy_dev(struct dg_vol *vol, unsigned owner,
			       uint64_t index, int c, uint64_t *off)
{
	unsigned dev = c ? (owner + 1) % vol->ndev : owner;
	uint64_t page = (c ? vol->sb.rep_start : vol->sb.csum_start) + index;

	*off = page << DG_PAGE_SHIFT;
	return vol->devs[dev].present ? &vol->devs[dev] : NULL;
}

static pthread_mutex_t *cpage_lock(struct dg_vol *vol, unsigned owner,
				   uint64_t index)
{
	return &vol->csum_locks[dg_cpage_lock_idx(dg_cpage_key(owner, index))];
}

static enum copy_state load_copy(struct dg_vol *vol, unsigned owner,
				 uint64_t index, int c, void *img)
{
	uint64_t off;
	struct dg_dev *d = copy_dev(vol, owner, index, c, &off);
	int ret;

	if (!d)
		return COPY_ABSENT;
	memcpy(img, dg_dev_ptr(d, off), DG_PAGE_SIZE);
	ret = dg_csum_page_check(vol, owner, index, img);
	return ret == 1 ? COPY_VALID : ret == 0 ? COPY_ZERO : COPY_BAD;
}

static void write_copy(struct dg_vol *vol, unsigned owner, uint64_t index,
		       int c, const void *img, uint32_t from, uint32_t to,
		       struct dg_flushset *fs)
{
	uint64_t off;
	struct dg_dev *d = copy_dev(vol, owner, index, c, &off);

	if (!d)
		return;
	dg_dev_write(d, off + from, (const uint8_t *)img + from, to - from);
	if (to < DG_PAGE_SIZE)
		dg_dev_write(d, off + DG_PAGE_SIZE - 8,
			     (const uint8_t *)img + DG_PAGE_SIZE - 8, 8);
	dg_flushset_add(fs, d->idx, off, DG_PAGE_SIZE);
}

/* Write the changed entries [from, to) and the seal of the image to
 * copy c, durably. */
static void write_copy_durably(struct dg_vol *vol, unsigned owner,
			       uint64_t index, int c, const void *img,
			       uint32_t from, uint32_t to)
{
	struct dg_flushset fs;

	dg_flushset_init(&fs);
	write_copy(vol, owner, index, c, img, from, to, &fs);
	dg_flushset_persist(vol, &fs);
	dg_flushset_fini(&fs);
}

/*
 * Bring both copies of a checksum page to agreement where one is
 * proven bad: a copy that fails its own checksum, or a zeroed copy
 * whose partner is valid (a page once written is never all zero, so
 * the zeroed one lost its contents). Leaves the trusted image in img[0]
 * and returns 1 (valid), 0 (nothing ever written) or -EIO. Caller holds
 * the page's csum lock. G6: a copy is only replaced when its own
 * protection proves it bad.
 */
static int reconcile(struct dg_vol *vol, unsigned owner, uint64_t index,
		     uint8_t *img0, uint8_t *img1, bool *rewrote)
{
	enum copy_state s0 = load_copy(vol, owner, index, 0, img0);
	enum copy_state s1 = load_copy(vol, owner, index, 1, img1);
	int src = -1, dst = -1;

	rewrote[0] = rewrote[1] = false;
	if (s0 == COPY_VALID && (s1 == COPY_BAD || s1 == COPY_ZERO))
		src = 0, dst = 1;
	else if (s1 == COPY_VALID && (s0 == COPY_BAD || s0 == COPY_ZERO))
		src = 1, dst = 0;
	else if (s0 == COPY_BAD && s1 == COPY_ZERO)
		src = 1, dst = 0; /* never written; the primary took a hit */
	else if (s1 == COPY_BAD && s0 == COPY_ZERO)
		src = 0, dst = 1;

	if (src >= 0) {
		uint8_t *from = src ? img1 : img0, *to = src ? img0 : img1;

		dg_fault_note(vol, DG_FAULT_DETECTED, (owner + dst) % vol->ndev,
			      index, dst ? "csum-replica" : "csum-page",
			      "repaired from other copy");
		memcpy(to, from, DG_PAGE_SIZE);
		if (!vol->read_only) {
			write_copy_durably(vol, owner, index, dst, to, 0,
					   DG_PAGE_SIZE);
			rewrote[dst] = true;
		}
		dg_fault_note(vol, DG_FAULT_REPAIRED, (owner + dst) % vol->ndev,
			      index, dst ? "csum-replica" : "csum-page",
			      "rewritten");
		if (dst == 0)
			s0 = s1;
		else
			s1 = s0;
	}
	if (s0 == COPY_VALID)
		return 1;
	if (s1 == COPY_VALID) {
		memcpy(img0, img1, DG_PAGE_SIZE);
		return 1;
	}
	if (s0 == COPY_ZERO || s1 == COPY_ZERO) {
		memset(img0, 0, DG_PAGE_SIZE);
		return 0;
	}
	dg_fault_note(vol, DG_FAULT_DETECTED, owner, index, "csum-page",
		      "both copies bad");
	dg_fault_note(vol, DG_FAULT_UNRECOVERABLE, owner, index, "csum-page",
		      "none");
	return -EIO;
}

void dg_csum_cursor_init(struct dg_csum_cursor *cur)
{
	cur->owner = -1;
	cur->peek_owner = -1;
	cur->uncached = false;
	cur->entries = NULL;	/* allocated by the first page copied */
}

void dg_csum_cursor_fini(struct dg_csum_cursor *cur)
{
	free(cur->entries);
	cur->entries = NULL;
}

int dg_csum_lookup(struct dg_vol *vol, struct dg_csum_cursor *cur,
		   unsigned dev, uint64_t row, uint64_t *csum)
{
	uint64_t index = row / DG_CSUMS_PER_PAGE;

	if (cur->owner != (int)dev || cur->index != index) {
		pthread_mutex_t *lock = cpage_lock(vol, dev, index);
		uint8_t *img;
		bool rewrote[2];
		int ret;

		const uint8_t *cached;
		bool both;

		pthread_mutex_lock(lock);
		cached = cur->uncached ? NULL
				       : dg_cpcache_get(vol, dev, index, &both);
		if (cached && (cur->peek_owner != (int)dev ||
			       cur->peek_index != index)) {
			*csum = ((const uint64_t *)cached)[row %
							   DG_CSUMS_PER_PAGE];
			cur->peek_owner = (int)dev;
			cur->peek_index = index;
			pthread_mutex_unlock(lock);
			return 0;
		}
		if (!cur->entries && !(cur->entries = aligned_alloc(
					       DG_PAGE_SIZE, 2 * DG_PAGE_SIZE))) {
			pthread_mutex_unlock(lock);
			return -ENOMEM;
		}
		img = (uint8_t *)cur->entries;
		if (cached) {
			memcpy(img, cached, DG_PAGE_SIZE);
			ret = 1;
		} else if (load_copy(vol, dev, index, 0, img) == COPY_VALID) {
			/* The common case: a valid primary is all a
			 * lookup needs. */
			ret = 1;
		} else {
			ret = reconcile(vol, dev, index, img,
					img + DG_PAGE_SIZE, rewrote);
		}
		if (ret == 1 && !cached && !cur->uncached)
			dg_cpcache_put(vol, dev, index, img, false);
		pthread_mutex_unlock(lock);
		if (ret < 0) {
			cur->owner = -1;
			return ret;
		}
		cur->owner = (int)dev;
		cur->index = index;
	}
	*csum = cur->entries[row % DG_CSUMS_PER_PAGE];
	return 0;
}

int dg_csum_get(struct dg_vol *vol, unsigned dev, uint64_t row,
		uint64_t *csum)
{
	struct dg_csum_cursor cur;
	int ret;

	dg_csum_cursor_init(&cur);
	ret = dg_csum_lookup(vol, &cur, dev, row, csum);
	dg_csum_cursor_fini(&cur);
	return ret;
}

int dg_csum_get_replica(struct dg_vol *vol, unsigned dev, uint64_t row,
			uint64_t *csum)
{
	uint64_t index = row / DG_CSUMS_PER_PAGE, off;
	struct dg_dev *d = copy_dev(vol, dev, index, 1, &off);
	uint64_t img[DG_PAGE_SIZE / 8];
	int ret;

	if (!d)
		return -ENOENT;
	pthread_mutex_lock(cpage_lock(vol, dev, index));
	memcpy(img, dg_dev_ptr(d, off), DG_PAGE_SIZE);
	pthread_mutex_unlock(cpage_lock(vol, dev, index));
	ret = dg_csum_page_check(vol, dev, index, img);
	if (ret < 0)
		return -EIO;
	*csum = img[row % DG_CSUMS_PER_PAGE];
	return 0;
}

int dg_csum_repair_primary(struct dg_vol *vol, unsigned dev, uint64_t row)
{
	uint64_t index = row / DG_CSUMS_PER_PAGE, off;
	struct dg_dev *d = copy_dev(vol, dev, index, 1, &off);
	uint8_t img[DG_PAGE_SIZE];

	if (!d || vol->read_only)
		return -EROFS;
	pthread_mutex_lock(cpage_lock(vol, dev, index));
	dg_cpcache_drop(vol, dev, index);
	memcpy(img, dg_dev_ptr(d, off), DG_PAGE_SIZE);
	if (dg_csum_page_check(vol, dev, index, img) == 1)
		write_copy_durably(vol, dev, index, 0, img, 0, DG_PAGE_SIZE);
	pthread_mutex_unlock(cpage_lock(vol, dev, index));
	return 0;
}

/* set_one_page() when the cache holds the image both copies have: patch
 * it, and write each copy from it (primary durable first, as below). */
static int set_cached(struct dg_vol *vol, const struct dg_csum_upd *u,
		      unsigned n, uint8_t *img, uint32_t from, uint32_t to)
{
	unsigned owner = u[0].dev;
	uint64_t index = u[0].row / DG_CSUMS_PER_PAGE;
	uint64_t *w = (uint64_t *)img;

	for (unsigned i = 0; i < n; i++)
		w[u[i].row % DG_CSUMS_PER_PAGE] = u[i].csum;
	dg_csum_page_seal(vol, owner, index, w);
	for (int c = 0; c < 2; c++)
		write_copy_durably(vol, owner, index, c, img, from, to);
	return 0;
}

/* After an uncached update: cache the page when both copies agree. */
static void cache_both(struct dg_vol *vol, unsigned owner, uint64_t index)
{
	uint64_t off0, off1;
	struct dg_dev *d0 = copy_dev(vol, owner, index, 0, &off0);
	struct dg_dev *d1 = copy_dev(vol, owner, index, 1, &off1);

	if (!vol->cpcache || !d0 || !d1)
		return;
	if (!memcmp(dg_dev_ptr(d0, off0), dg_dev_ptr(d1, off1), DG_PAGE_SIZE))
		dg_cpcache_put(vol, owner, index, dg_dev_ptr(d0, off0), true);
	else
		dg_cpcache_drop(vol, owner, index);
}

/* Apply the updates u[0..n) that share one checksum page to both
 * copies. Each copy keeps its own other entries: a stale entry in one
 * copy must not overwrite the good entry in the other. */
static int set_one_page(struct dg_vol *vol, const struct dg_csum_upd *u,
			unsigned n, uint8_t *img)
{
	unsigned owner = u[0].dev;
	uint64_t index = u[0].row / DG_CSUMS_PER_PAGE;
	uint32_t from = (uint32_t)(u[0].row % DG_CSUMS_PER_PAGE) * 8;
	uint32_t to = (uint32_t)(u[n - 1].row % DG_CSUMS_PER_PAGE) * 8 + 8;
	pthread_mutex_t *lock = cpage_lock(vol, owner, index);
	bool rewrote[2], both;
	uint8_t *cached;
	int ret;

	pthread_mutex_lock(lock);
	cached = dg_cpcache_get(vol, owner, index, &both);
	if (cached && both) {
		ret = set_cached(vol, u, n, cached, from, to);
		goto out;
	}
	ret = reconcile(vol, owner, index, img, img + DG_PAGE_SIZE, rewrote);
	if (ret < 0)
		goto out;
	for (int c = 0; c < 2; c++) {
		uint64_t off;
		struct dg_dev *d = copy_dev(vol, owner, index, c, &off);
		uint64_t *w = (uint64_t *)(img + DG_PAGE_SIZE);

		if (!d)
			continue;
		/* Start from this copy's own bytes unless it was just
		 * replaced, or is zero (then the trusted image is zero
		 * too, or reconcile rewrote it). */
		memcpy(w, dg_dev_ptr(d, off), DG_PAGE_SIZE);
		for (unsigned i = 0; i < n; i++)
			w[u[i].row % DG_CSUMS_PER_PAGE] = u[i].csum;
		dg_csum_page_seal(vol, owner, index, w);
		/* G4: each copy is durable before the other is touched, and
		 * under the page lock, so no crash can tear both copies (one
		 * always verifies and reconcile() restores the other). */
		write_copy_durably(vol, owner, index, c, w, from, to);
	}
	cache_both(vol, owner, index);
	ret = 0;
out:
	pthread_mutex_unlock(lock);
	return ret;
}

int dg_csum_set_batch(struct dg_vol *vol, const struct dg_csum_upd *u,
		      unsigned n, struct dg_flushset *fs)
{
	uint8_t *img = aligned_alloc(DG_PAGE_SIZE, 2 * DG_PAGE_SIZE);
	int ret = 0;

	(void)fs; /* checksum pages are persisted here, copy by copy */
	if (!img)
		return -ENOMEM;
	for (unsigned i = 0, j; i < n && !ret; i = j) {
		for (j = i + 1; j < n && u[j].dev == u[i].dev &&
				u[j].row / DG_CSUMS_PER_PAGE ==
					u[i].row / DG_CSUMS_PER_PAGE;
		     j++)
			;
		ret = set_one_page(vol, u + i, j - i, img);
	}
	free(img);
	return ret;
}

int dg_csum_set(struct dg_vol *vol, unsigned dev, uint64_t row,
		uint64_t csum, struct dg_flushset *fs)
{
	struct dg_csum_upd u = { dev, row, csum };

	return dg_csum_set_batch(vol, &u, 1, fs);
}
