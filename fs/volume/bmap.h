/* SPDX-License-Identifier: MIT */
/* bmap.h -- the in-core allocation bitmap, kept page by page (bmap.c) */
#ifndef DG_BMAP_H
#define DG_BMAP_H

#include "volume_i.h"

/* Bits (vpns) per bitmap page. */
#define DG_BM_BITS (8ull * DG_PAGE_SIZE)

/*
 * One page of the allocation bitmap in core. bits NULL: the page is
 * uniform and held as a count: used == 0, every bit clear (as a page
 * never written reads); used > 0, every byte 0xff (a full page read so
 * at the open). Otherwise bits is its 4 KiB image. used counts its set
 * bits below vol->vpns. All of it under alloc_lock.
 */
struct dg_bmpage {
	uint8_t *bits;
	uint32_t used;
};

/* Build the table at the open: only the bitmap pages that may have
 * been written are read (see bmap.c). Sets free_vpns and zone_free. */
int dg_bm_load(struct dg_vol *vol);
void dg_bm_fini(struct dg_vol *vol);
bool dg_bm_get(const struct dg_vol *vol, uint64_t vpn);
/* Give every page that [start, start + n) touches its own image, so
 * that dg_bm_set() on it cannot fail: 0 or -ENOMEM. */
int dg_bm_prepare(struct dg_vol *vol, uint64_t start, uint64_t n);
/* Set or clear [start, start + n) (pages prepared). A page that ends up
 * with nothing in use lets its image go. */
void dg_bm_set(struct dg_vol *vol, uint64_t start, uint64_t n, bool on);
/* The first clear bit in [from, end), or end. */
uint64_t dg_bm_next_free(const struct dg_vol *vol, uint64_t from,
			 uint64_t end);
/* The first set bit in [from, end), or end. */
uint64_t dg_bm_next_used(const struct dg_vol *vol, uint64_t from,
			 uint64_t end);
/* The 64-bit word that holds vpn (vpn % 64 == 0) is all in use. */
bool dg_bm_word_full(const struct dg_vol *vol, uint64_t vpn);
/* len bytes of the bitmap from byte b0 on, as they stand in core. */
void dg_bm_bytes(const struct dg_vol *vol, uint64_t b0, uint32_t len,
		 uint8_t *out);
/* Free space as the bitmap has it: a walk over the table, page by page
 * where a page is a count (dumpfs). */
struct dg_bm_stats {
	uint64_t free, zone_free, extents, largest;
};
void dg_bm_free_stats(const struct dg_vol *vol, struct dg_bm_stats *st);
/* Bitmap pages holding their own image (the rest are counts). */
uint64_t dg_bm_images(const struct dg_vol *vol);

#endif /* DG_BMAP_H */
