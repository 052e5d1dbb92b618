// SPDX-License-Identifier: MIT
/*
 * bmap.c -- the in-core allocation bitmap, page by page
 *
 * The bitmap has one bit per vpn: 100 MB for four 1 TiB devices. Read
 * whole at the open it made the mount, mkfs and the daemon's memory grow
 * with the size of the devices, not with what they hold. In core it is a
 * table of its pages (struct dg_bmpage, 16 bytes each): a page that is
 * uniform -- nothing in use, or everything -- is held as a count, and
 * only a page with both free and used bits keeps its 4 KiB image. The
 * free count of every page is known, so statfs stays exact.
 *
 * What the open reads. A page whose checksum is DG_CSUM_NONE was never
 * written and reads as zeros (format.h), and the checksum-page init map
 * says, per index of DG_CSUMS_PER_PAGE rows, whether any page of those
 * rows was ever written: a bit never set means every page of those rows
 * reads as zeros. So the open reads only the bitmap pages whose rows'
 * index is set -- through dg_read(), verified and repaired like any
 * page, those never written among them costing a checksum-page lookup
 * -- and takes every other page as all free without reading it. That
 * needs nothing new on the media (no summary to keep in step with the
 * bitmap, no format change), and the work is the bitmap pages written
 * so far: what the volume holds, not its size. The loop over the
 * bitmap's pages that asks the map is a few nanoseconds a page (25,000
 * pages at 4 x 1 TiB). A volume without redundancy has no checksums and
 * no map: every page is read, as before, but kept compact all the same.
 *
 * The allocator's state on the media is written as before: every change
 * goes into a transaction's bitmap bytes (alloc.c, bitmap_fill()),
 * which dg_bm_bytes() produces from the table exactly as the page image
 * would be.
 */
#include <stdlib.h>
#include <string.h>

#include "bmap.h"

/* Bitmap pages read per dg_read() at the open. */
#define LOAD_BATCH 64u

static uint64_t page_cap(const struct dg_vol *vol, uint64_t p)
{
	uint64_t left = vol->vpns - p * DG_BM_BITS;

	return left < DG_BM_BITS ? left : DG_BM_BITS;
}

/* Set bits of img among its first lim. */
static uint64_t count_below(const uint8_t *img, uint64_t lim)
{
	const uint64_t *w = (const uint64_t *)img;
	uint64_t n = 0, i;

	for (i = 0; i + 64 <= lim; i += 64)
		n += (uint64_t)__builtin_popcountll(w[i / 64]);
	if (i < lim)
		n += (uint64_t)__builtin_popcountll(w[i / 64] &
						    ((1ull << (lim - i)) - 1));
	return n;
}

static bool all_bytes(const uint8_t *img, uint8_t b)
{
	for (unsigned i = 0; i < DG_PAGE_SIZE; i++)
		if (img[i] != b)
			return false;
	return true;
}

/* Page p as read from the media: counted, and kept when not uniform. */
static int take_page(struct dg_vol *vol, uint64_t p, const uint8_t *img,
		     uint64_t *used, uint64_t *zused)
{
	struct dg_bmpage *e = &vol->bm[p];
	uint64_t start = p * DG_BM_BITS, cap = page_cap(vol, p);
	uint64_t zlim = vol->zone_vpns > start ? vol->zone_vpns - start : 0;

	if (zlim > cap)
		zlim = cap;
	if (all_bytes(img, 0))
		return 0; /* all free: the entry as calloc left it */
	if (all_bytes(img, 0xff)) {
		e->used = (uint32_t)cap; /* all in use: a count says it all */
		*used += cap;
		*zused += zlim;
		return 0;
	}
	e->used = (uint32_t)count_below(img, cap);
	*used += e->used;
	*zused += count_below(img, zlim);
	e->bits = malloc(DG_PAGE_SIZE);
	if (!e->bits)
		return -ENOMEM;
	memcpy(e->bits, img, DG_PAGE_SIZE);
	vol->bm_images++;
	return 0;
}

/* Bitmap page p may have been written: the init map has its rows'
 * index (the last answer is kept: neighbouring pages share rows). */
static bool maybe_written(struct dg_vol *vol, uint64_t p, uint64_t *idx,
			  bool *set)
{
	struct dg_loc l;
	uint64_t i;

	if (!vol->redundancy)
		return true;
	l = dg_vpn_loc(vol, vol->bitmap_vpn + p);
	i = l.row / DG_CSUMS_PER_PAGE;
	if (i != *idx) {
		*idx = i;
		/* A bit lost from the map (beyond parity) must not make a
		 * written bitmap page read as all free: its checksum page
		 * says whether it was ever written (dg_cmap_recover()). */
		*set = dg_cmap_test(vol, i) || dg_cmap_recover(vol, l.dev, i);
	}
	return *set;
}

/*
 * Every index with a page in use must be set in the map: the passes
 * skip the rows of a clear one (docs/design.md, "What the passes
 * visit"), so a bit lost from every copy of the map would leave live
 * pages never verified, rebuilt or replaced. Such an index whose
 * checksum pages verify gets its bit back (dg_cmap_recover()); one
 * whose pages do not was never written (pages allocated, none written
 * yet), and reads as zeros. The vpns of a chunk lie on consecutive rows
 * of one device, so each step passes the rest of an index within a
 * chunk: O(chunks in use), no media read unless an index is clear. At
 * the open, before anything else uses the map: read without its lock.
 */
static void map_covers_used(struct dg_vol *vol)
{
	uint64_t cp = vol->sb.chunk_pages, end = vol->vpns, v;

	if (!vol->redundancy || !vol->cmap)
		return;
	for (v = dg_bm_next_used(vol, 0, end); v < end;
	     v = dg_bm_next_used(vol, v, end)) {
		struct dg_loc l = dg_vpn_loc(vol, v);
		uint64_t i = l.row / DG_CSUMS_PER_PAGE;
		uint64_t cend = (v / cp + 1) * cp;
		uint64_t iend = v + (i + 1) * DG_CSUMS_PER_PAGE - l.row;

		if (!(vol->cmap[i / 8] & (1u << (i % 8))))
			dg_cmap_recover(vol, l.dev, i);
		v = cend < iend ? cend : iend;
	}
}

int dg_bm_load(struct dg_vol *vol)
{
	uint64_t np = vol->bitmap_pages, used = 0, zused = 0;
	uint64_t idx = UINT64_MAX;
	bool set = false;
	uint8_t *buf;
	int ret = 0;

	/* calloc: entries of pages never written stay untouched zeros. */
	vol->bm = calloc(np, sizeof(*vol->bm));
	buf = aligned_alloc(DG_PAGE_SIZE, LOAD_BATCH * DG_PAGE_SIZE);
	if (!vol->bm || !buf) {
		free(buf);
		return -ENOMEM;
	}
	vol->bm_images = 0;
	for (uint64_t p = 0; p < np && !ret;) {
		uint64_t n = 0;

		while (p + n < np && n < LOAD_BATCH &&
		       maybe_written(vol, p + n, &idx, &set))
			n++;
		if (!n) {
			p++;
			continue;
		}
		ret = dg_read(vol, vol->bitmap_vpn + p, n, buf);
		for (uint64_t i = 0; i < n && !ret; i++)
			ret = take_page(vol, p + i, buf + i * DG_PAGE_SIZE,
					&used, &zused);
		p += n;
	}
	free(buf);
	vol->free_vpns = vol->vpns - used;
	vol->zone_free = vol->zone_vpns - zused;
	if (!ret)
		map_covers_used(vol);
	return ret;
}

void dg_bm_fini(struct dg_vol *vol)
{
	if (!vol->bm)
		return;
	/* Only pages with an image need a visit; the loop is the close's. */
	for (uint64_t p = 0; p < vol->bitmap_pages && vol->bm_images; p++)
		if (vol->bm[p].bits) {
			free(vol->bm[p].bits);
			vol->bm_images--;
		}
	free(vol->bm);
	vol->bm = NULL;
}

bool dg_bm_get(const struct dg_vol *vol, uint64_t vpn)
{
	const struct dg_bmpage *e = &vol->bm[vpn / DG_BM_BITS];
	uint64_t i = vpn % DG_BM_BITS;

	if (!e->bits)
		return e->used != 0;
	return e->bits[i / 8] & (1u << (i % 8));
}

/* The locked look, for callers outside the allocator (the trim, the
 * lone rows of apply.c): here, beside the table, so that they need not
 * call into alloc.c, which calls them. */
bool dg_vpn_allocated(struct dg_vol *vol, uint64_t vpn)
{
	bool on;

	if (vpn >= vol->vpns || !vol->bm)
		return false;
	pthread_mutex_lock(&vol->alloc_lock);
	on = dg_bm_get(vol, vpn);
	pthread_mutex_unlock(&vol->alloc_lock);
	return on;
}

static int give_image(struct dg_vol *vol, struct dg_bmpage *e)
{
	if (e->bits)
		return 0;
	e->bits = malloc(DG_PAGE_SIZE);
	if (!e->bits)
		return -ENOMEM;
	memset(e->bits, e->used ? 0xff : 0, DG_PAGE_SIZE);
	vol->bm_images++;
	return 0;
}

int dg_bm_prepare(struct dg_vol *vol, uint64_t start, uint64_t n)
{
	if (!n)
		return 0;
	for (uint64_t p = start / DG_BM_BITS; p <= (start + n - 1) / DG_BM_BITS;
	     p++) {
		int ret = give_image(vol, &vol->bm[p]);

		if (ret)
			return ret;
	}
	return 0;
}

void dg_bm_set(struct dg_vol *vol, uint64_t start, uint64_t n, bool on)
{
	uint64_t v = start, end = start + n;

	while (v < end) {
		uint64_t p = v / DG_BM_BITS;
		uint64_t pend = (p + 1) * DG_BM_BITS < end ? (p + 1) * DG_BM_BITS
							   : end;
		struct dg_bmpage *e = &vol->bm[p];

		/* Nothing to change in a uniform page already so; else
		 * dg_bm_prepare() gave it an image (this is the fallback). */
		if (!e->bits && (on ? e->used == page_cap(vol, p) : !e->used)) {
			v = pend;
			continue;
		}
		if (give_image(vol, e)) {
			dg_vol_log(vol, DG_LOG_ERR, "allocation bitmap page "
				   "%" PRIu64 ": out of memory", p);
			v = pend;
			continue;
		}
		for (; v < pend; v++) {
			uint64_t i = v % DG_BM_BITS;
			uint8_t m = (uint8_t)(1u << (i % 8));
			bool was = e->bits[i / 8] & m;

			if (was == on)
				continue;
			if (on) {
				e->bits[i / 8] |= m;
				e->used++;
			} else {
				e->bits[i / 8] &= (uint8_t)~m;
				e->used--;
			}
		}
		if (!e->used) {
			/* All free again: as a page never written. */
			free(e->bits);
			e->bits = NULL;
			vol->bm_images--;
		}
	}
}

/* The first bit in [from, end) that is set (want) or clear (!want), or
 * end: a page held as a count is passed over whole, an image a word at
 * a time. */
static uint64_t next_bit(const struct dg_vol *vol, uint64_t from,
			 uint64_t end, bool want)
{
	uint64_t i = from;

	while (i < end) {
		uint64_t p = i / DG_BM_BITS;
		uint64_t pend = (p + 1) * DG_BM_BITS < end ? (p + 1) * DG_BM_BITS
							   : end;
		const struct dg_bmpage *e = &vol->bm[p];
		const uint64_t *w = (const uint64_t *)e->bits;

		if (!e->bits) {
			if ((e->used != 0) == want)
				return i;
			i = pend;
			continue;
		}
		while (i < pend) {
			uint64_t o = i % DG_BM_BITS;
			uint64_t hit = (want ? w[o / 64] : ~w[o / 64]) >>
				       (o % 64);

			if (hit) {
				uint64_t f = i + (uint64_t)__builtin_ctzll(hit);

				if (f < pend)
					return f;
				break;
			}
			i += 64 - o % 64;
		}
		i = pend;
	}
	return end;
}

uint64_t dg_bm_next_free(const struct dg_vol *vol, uint64_t from,
			 uint64_t end)
{
	return next_bit(vol, from, end, false);
}

uint64_t dg_bm_next_used(const struct dg_vol *vol, uint64_t from,
			 uint64_t end)
{
	return next_bit(vol, from, end, true);
}

bool dg_bm_word_full(const struct dg_vol *vol, uint64_t vpn)
{
	const struct dg_bmpage *e = &vol->bm[vpn / DG_BM_BITS];

	if (!e->bits)
		return e->used != 0;
	return ((const uint64_t *)e->bits)[vpn % DG_BM_BITS / 64] == ~0ull;
}

void dg_bm_bytes(const struct dg_vol *vol, uint64_t b0, uint32_t len,
		 uint8_t *out)
{
	while (len) {
		const struct dg_bmpage *e = &vol->bm[b0 / DG_PAGE_SIZE];
		uint32_t off = (uint32_t)(b0 % DG_PAGE_SIZE);
		uint32_t n = DG_PAGE_SIZE - off < len ? DG_PAGE_SIZE - off : len;

		if (e->bits)
			memcpy(out, e->bits + off, n);
		else
			memset(out, e->used ? 0xff : 0, n);
		out += n;
		b0 += n;
		len -= n;
	}
}

uint64_t dg_bm_images(const struct dg_vol *vol)
{
	return vol->bm_images;
}

void dg_bm_free_stats(const struct dg_vol *vol, struct dg_bm_stats *st)
{
	uint64_t run = 0;

	memset(st, 0, sizeof(*st));
	for (uint64_t p = 0; p < vol->bitmap_pages; p++) {
		const struct dg_bmpage *e = &vol->bm[p];
		uint64_t start = p * DG_BM_BITS, cap = page_cap(vol, p);

		if (!e->bits && e->used) {
			run = 0;
			continue;
		}
		if (!e->bits) {
			uint64_t z = vol->zone_vpns > start ? vol->zone_vpns - start
							    : 0;

			st->free += cap;
			st->zone_free += z < cap ? z : cap;
			st->extents += run == 0;
			run += cap;
			if (run > st->largest)
				st->largest = run;
			continue;
		}
		for (uint64_t i = 0; i < cap; i++) {
			if (e->bits[i / 8] & (1u << (i % 8))) {
				run = 0;
				continue;
			}
			st->free++;
			st->zone_free += start + i < vol->zone_vpns;
			st->extents += run == 0;
			if (++run > st->largest)
				st->largest = run;
		}
	}
}
