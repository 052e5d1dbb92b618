// SPDX-License-Identifier: MIT
/*
 * csum_cache.c -- verified checksum pages kept in memory
 *
 * Every page read and every update looks up checksums, and verifying the
 * checksum page that holds them (its own XXH3 over 4 KiB, both copies
 * before an update) cost as much as verifying the data itself. A cached
 * image is what this process last verified or wrote; a slot marked
 * "both" is known to equal both copies on media, so an update can patch
 * it and write each copy's changed entries and seal without reading
 * either copy again.
 *
 * Trust: the cache only saves re-reading media this process wrote or
 * verified. Loads through it still verify every data page against the
 * cached checksum, so data is never returned unverified. A checksum
 * page damaged on media after it was cached is found by the scrub (its
 * cursors bypass the cache) or the next uncached lookup, and an update
 * through the cache seals the copy as it should be, so the damage fails
 * that copy's self-check instead of being blessed.
 *
 * Slots are direct-mapped, and a page may only take a slot of its own
 * lock (slot_of()): the lock of a page guards its slot. Off unless dg_vol_cache_csum_pages() turns it on
 * (offline tools write checksum pages directly and never use it).
 */
#include <stdlib.h>
#include <string.h>

#include "csum.h"

struct dg_cpcache {
	unsigned n;		/* slots, a multiple of DG_CSUM_LOCKS */
	uint64_t *key;		/* dg_cpage_key() + 1; 0: empty */
	bool *both;		/* image equals both copies on media */
	uint8_t *img;		/* n pages */
};

int dg_vol_cache_csum_pages(struct dg_vol *vol, size_t max_bytes)
{
	struct dg_cpcache *c;
	uint64_t pages = (uint64_t)vol->ndev * vol->sb.csum_pages;
	uint64_t n = max_bytes / DG_PAGE_SIZE;

	if (vol->cpcache || !vol->redundancy)
		return 0;
	if (n > pages)
		n = pages;
	n = (n + DG_CSUM_LOCKS - 1) / DG_CSUM_LOCKS * DG_CSUM_LOCKS;
	if (n == 0)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->n = (unsigned)n;
	c->key = calloc(n, sizeof(*c->key));
	c->both = calloc(n, sizeof(*c->both));
	/* calloc: slots never used are never faulted in. */
	c->img = calloc(n, DG_PAGE_SIZE);
	if (!c->key || !c->both || !c->img) {
		vol->cpcache = c;
		dg_cpcache_free(vol);
		return -ENOMEM;
	}
	vol->cpcache = c;
	return 0;
}

void dg_cpcache_free(struct dg_vol *vol)
{
	struct dg_cpcache *c = vol->cpcache;

	if (!c)
		return;
	free(c->key);
	free(c->both);
	free(c->img);
	free(c);
	vol->cpcache = NULL;
}

/* A slot among the n / DG_CSUM_LOCKS that share the key's lock. */
static unsigned slot_of(const struct dg_cpcache *c, uint64_t key)
{
	unsigned groups = c->n / DG_CSUM_LOCKS;

	return dg_cpage_lock_idx(key) +
	       DG_CSUM_LOCKS * (unsigned)((dg_cpage_hash(key) >> 8) % groups);
}

uint8_t *dg_cpcache_get(struct dg_vol *vol, unsigned owner, uint64_t index,
			bool *both)
{
	struct dg_cpcache *c = vol->cpcache;
	uint64_t key = dg_cpage_key(owner, index);
	unsigned s;

	if (!c)
		return NULL;
	s = slot_of(c, key);
	if (c->key[s] != key + 1)
		return NULL;
	*both = c->both[s];
	return c->img + (size_t)s * DG_PAGE_SIZE;
}

void dg_cpcache_put(struct dg_vol *vol, unsigned owner, uint64_t index,
		    const void *img, bool both)
{
	struct dg_cpcache *c = vol->cpcache;
	uint64_t key = dg_cpage_key(owner, index);
	unsigned s;

	if (!c)
		return;
	s = slot_of(c, key);
	memcpy(c->img + (size_t)s * DG_PAGE_SIZE, img, DG_PAGE_SIZE);
	c->key[s] = key + 1;
	c->both[s] = both;
}

void dg_cpcache_drop(struct dg_vol *vol, unsigned owner, uint64_t index)
{
	struct dg_cpcache *c = vol->cpcache;
	uint64_t key = dg_cpage_key(owner, index);

	if (c && c->key[slot_of(c, key)] == key + 1)
		c->key[slot_of(c, key)] = 0;
}
