/* SPDX-License-Identifier: MIT */
/* csum_cache.h -- verified checksum pages kept in memory, and their keys */
#ifndef DG_CSUM_CACHE_H
#define DG_CSUM_CACHE_H

#include "volume_i.h"

/* Checksum page (owner, index) as a key of its lock and cache slot. */
static inline uint64_t dg_cpage_key(unsigned owner, uint64_t index)
{
	return index * DG_MAX_DEVS + owner;
}

/* Spreads keys over locks and cache slots (Fibonacci hashing). */
static inline uint64_t dg_cpage_hash(uint64_t key)
{
	return key * 0x9e3779b97f4a7c15ull;
}

/* The lock of a checksum page: the top bits of its hash. */
static inline unsigned dg_cpage_lock_idx(uint64_t key)
{
	return (unsigned)(dg_cpage_hash(key) >> 56) % DG_CSUM_LOCKS;
}

/* csum_cache.c: the verified image of a checksum page, or NULL; "all"
 * when it equals every copy on media. Caller holds the page's lock. */
uint8_t *dg_cpcache_get(struct dg_vol *vol, unsigned owner, uint64_t index,
			bool *all);
void dg_cpcache_put(struct dg_vol *vol, unsigned owner, uint64_t index,
		    const void *img, bool all);
void dg_cpcache_drop(struct dg_vol *vol, unsigned owner, uint64_t index);
void dg_cpcache_free(struct dg_vol *vol);

#endif /* DG_CSUM_CACHE_H */
