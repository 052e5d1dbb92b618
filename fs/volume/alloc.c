// SPDX-License-Identifier: MIT
/* alloc.c -- the allocation bitmap and transactions that carry it */
#include <stdlib.h>
#include <string.h>

#include "volume_i.h"

struct txn_write {
	uint64_t vpn;
	uint32_t off, len;
	const uint8_t *data;
	bool owned;		/* data was copied and is freed with the txn */
};

struct txn_op {
	uint64_t start, n;
	bool is_free;
};

struct dg_txn {
	struct dg_vol *vol;
	struct txn_write *w;
	unsigned nw, capw;
	struct txn_op *op;
	unsigned nop, capop;
};

static bool bit_get(const uint8_t *bm, uint64_t i)
{
	return bm[i / 8] & (1u << (i % 8));
}

static void bits_set(uint8_t *bm, uint64_t start, uint64_t n, bool on)
{
	for (uint64_t i = start; i < start + n; i++) {
		if (on)
			bm[i / 8] |= (uint8_t)(1u << (i % 8));
		else
			bm[i / 8] &= (uint8_t)~(1u << (i % 8));
	}
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
	vol->bitmap_vpn = root->bitmap_vpn;
	vol->bitmap_pages = root->bitmap_pages;
	vol->meta_vpns = root->meta_vpns;
	vol->bitmap = aligned_alloc(DG_PAGE_SIZE,
				    vol->bitmap_pages * DG_PAGE_SIZE);
	if (!vol->bitmap) {
		ret = -ENOMEM;
		goto out;
	}
	ret = dg_read(vol, vol->bitmap_vpn, vol->bitmap_pages, vol->bitmap);
	if (ret)
		goto out;
	vol->free_vpns = 0;
	for (uint64_t i = 0; i < vol->vpns; i++)
		if (!bit_get(vol->bitmap, i))
			vol->free_vpns++;
	vol->alloc_cursor = vol->meta_vpns;
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
	if (root->meta_vpns > 8ull * DG_PAGE_SIZE || root->meta_vpns >= vol->vpns) {
		free(page);
		return -ENOSPC;
	}
	/* Only the first bitmap page has bits set; the rest were never
	 * written and read as zeros (free). */
	bits_set(bm, 0, root->meta_vpns, true);
	r[0] = (struct dg_range){ 0, 0, DG_PAGE_SIZE, root };
	r[1] = (struct dg_range){ 1, 0, DG_PAGE_SIZE, bm };
	ret = dg_apply(vol, r, 2);
	free(page);
	return ret;
}

void dg_alloc_fini(struct dg_vol *vol)
{
	free(vol->bitmap);
	vol->bitmap = NULL;
}

bool dg_vpn_allocated(struct dg_vol *vol, uint64_t vpn)
{
	bool on;

	if (vpn >= vol->vpns || !vol->bitmap)
		return false;
	pthread_mutex_lock(&vol->alloc_lock);
	on = bit_get(vol->bitmap, vpn);
	pthread_mutex_unlock(&vol->alloc_lock);
	return on;
}

uint64_t dg_free_vpns(struct dg_vol *vol)
{
	uint64_t n;

	pthread_mutex_lock(&vol->alloc_lock);
	n = vol->free_vpns;
	pthread_mutex_unlock(&vol->alloc_lock);
	return n;
}

struct dg_txn *dg_txn_new(struct dg_vol *vol)
{
	struct dg_txn *t = calloc(1, sizeof(*t));

	if (t)
		t->vol = vol;
	return t;
}

/* Forget the buffered writes; allocations not committed go back. */
static void txn_reset(struct dg_txn *t, bool committed)
{
	struct dg_vol *vol = t->vol;

	if (!committed && t->nop) {
		pthread_mutex_lock(&vol->alloc_lock);
		for (unsigned i = 0; i < t->nop; i++)
			if (!t->op[i].is_free) {
				bits_set(vol->bitmap, t->op[i].start,
					 t->op[i].n, false);
				vol->free_vpns += t->op[i].n;
			}
		pthread_mutex_unlock(&vol->alloc_lock);
	}
	for (unsigned i = 0; i < t->nw; i++)
		if (t->w[i].owned)
			free((void *)t->w[i].data);
	t->nw = 0;
	t->nop = 0;
}

void dg_txn_free(struct dg_txn *t)
{
	if (!t)
		return;
	txn_reset(t, false);
	free(t->w);
	free(t->op);
	free(t);
}

static int grow(void **p, unsigned *cap, unsigned n, size_t size)
{
	if (n < *cap)
		return 0;
	unsigned c = *cap ? *cap * 2 : 16;
	void *np = realloc(*p, c * size);

	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

static int add_write(struct dg_txn *t, uint64_t vpn, uint32_t off,
		     const void *data, uint32_t len, bool copy)
{
	uint8_t *c = NULL;

	if (grow((void **)&t->w, &t->capw, t->nw, sizeof(*t->w)))
		return -ENOMEM;
	if (copy) {
		c = malloc(len);
		if (!c)
			return -ENOMEM;
		memcpy(c, data, len);
	}
	t->w[t->nw++] = (struct txn_write){ vpn, off, len, copy ? c : data,
					    copy };
	return 0;
}

static int txn_write(struct dg_txn *t, uint64_t vpn, uint32_t off,
		     const void *data, uint32_t len, bool copy)
{
	const uint8_t *p = data;

	/* Split at page boundaries: a dg_range lies within one page. */
	while (len) {
		uint32_t n = DG_PAGE_SIZE - off < len ? DG_PAGE_SIZE - off : len;
		int ret;

		if (vpn >= t->vol->vpns)
			return -EINVAL;
		ret = add_write(t, vpn, off, p, n, copy);
		if (ret)
			return ret;
		p += n;
		len -= n;
		vpn++;
		off = 0;
	}
	return 0;
}

int dg_txn_write(struct dg_txn *t, uint64_t vpn, uint32_t off,
		 const void *data, uint32_t len)
{
	return txn_write(t, vpn, off, data, len, true);
}

int dg_txn_write_ref(struct dg_txn *t, uint64_t vpn, uint32_t off,
		     const void *data, uint32_t len)
{
	return txn_write(t, vpn, off, data, len, false);
}

static int add_op(struct dg_txn *t, uint64_t start, uint64_t n, bool is_free)
{
	if (grow((void **)&t->op, &t->capop, t->nop, sizeof(*t->op)))
		return -ENOMEM;
	t->op[t->nop++] = (struct txn_op){ start, n, is_free };
	return 0;
}

/* First free vpn at or after from, wrapping once; vol->vpns if none. */
static uint64_t find_free(struct dg_vol *vol, uint64_t from)
{
	const uint64_t *w = (const uint64_t *)vol->bitmap;
	uint64_t nw = dg_div_up(vol->vpns, 64);

	for (int pass = 0; pass < 2; pass++) {
		uint64_t i = pass ? vol->meta_vpns : from;
		uint64_t end = pass ? from : vol->vpns;

		while (i < end) {
			if (i % 64 == 0 && i / 64 < nw && w[i / 64] == ~0ull) {
				i += 64;
				continue;
			}
			if (!bit_get(vol->bitmap, i))
				return i;
			i++;
		}
	}
	return vol->vpns;
}

int dg_alloc(struct dg_txn *t, uint64_t hint, uint64_t want, uint64_t *start,
	     uint64_t *got)
{
	struct dg_vol *vol = t->vol;
	uint64_t s, n = 0;
	bool from_cursor = hint < vol->meta_vpns || hint >= vol->vpns;
	int ret;

	if (want == 0)
		return -EINVAL;
	pthread_mutex_lock(&vol->alloc_lock);
	if (!vol->free_vpns) {
		ret = -ENOSPC;
		goto out;
	}
	if (from_cursor)
		hint = vol->alloc_cursor;
	s = find_free(vol, hint);
	if (s >= vol->vpns) {
		ret = -ENOSPC;
		goto out;
	}
	/* A run may cross chunks: extents are runs of vpns, and whoever
	 * needs device addresses (libcommit maps) splits them per page. */
	while (n < want && s + n < vol->vpns && !bit_get(vol->bitmap, s + n))
		n++;
	ret = add_op(t, s, n, false);
	if (ret)
		goto out;
	bits_set(vol->bitmap, s, n, true);
	vol->free_vpns -= n;
	/* A hinted allocation within a file's home (dg_alloc_home) leaves
	 * the cursor past that home; one beyond the cursor pushes it on. */
	if (from_cursor || s >= vol->alloc_cursor)
		vol->alloc_cursor = s + n < vol->vpns ? s + n : vol->meta_vpns;
	*start = s;
	*got = n;
out:
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
		vol->alloc_cursor = vol->meta_vpns;
	pthread_mutex_unlock(&vol->alloc_lock);
	return home;
}

/* A run of exactly want free vpns. It may span chunks (and devices):
 * its readers go through dg_read(), which takes any vpn range. */
int dg_alloc_exact(struct dg_txn *t, uint64_t want, uint64_t *start)
{
	struct dg_vol *vol = t->vol;
	uint64_t run = 0, s = 0;
	int ret = -ENOSPC;

	if (want == 0)
		return -EINVAL;
	pthread_mutex_lock(&vol->alloc_lock);
	for (uint64_t i = vol->meta_vpns; i < vol->vpns; i++) {
		if (bit_get(vol->bitmap, i)) {
			run = 0;
			continue;
		}
		if (run++ == 0)
			s = i;
		if (run == want) {
			ret = add_op(t, s, want, false);
			if (ret)
				break;
			bits_set(vol->bitmap, s, want, true);
			vol->free_vpns -= want;
			*start = s;
			break;
		}
	}
	pthread_mutex_unlock(&vol->alloc_lock);
	return ret;
}

int dg_free(struct dg_txn *t, uint64_t start, uint64_t n)
{
	struct dg_vol *vol = t->vol;
	bool ok = true;

	if (start < vol->meta_vpns || start >= vol->vpns ||
	    n > vol->vpns - start)
		return -EINVAL;
	pthread_mutex_lock(&vol->alloc_lock);
	for (uint64_t i = start; i < start + n && ok; i++)
		ok = bit_get(vol->bitmap, i);
	pthread_mutex_unlock(&vol->alloc_lock);
	if (!ok)
		return DG_CORRUPT(vol, "freeing unallocated vpns %" PRIu64
				  "+%" PRIu64, start, n);
	/* The bits clear at commit: freed space must not be reused before
	 * the metadata that stops using it is durable. */
	return add_op(t, start, n, true);
}

/* Append writes of the bitmap bytes covering [start, start + n). */
static int bitmap_writes(struct dg_txn *t, uint64_t start, uint64_t n)
{
	struct dg_vol *vol = t->vol;
	uint64_t b0 = start / 8, b1 = (start + n - 1) / 8 + 1;

	while (b0 < b1) {
		uint64_t page = b0 / DG_PAGE_SIZE;
		uint32_t off = (uint32_t)(b0 % DG_PAGE_SIZE);
		uint64_t len = DG_PAGE_SIZE - off;
		int ret;

		if (len > b1 - b0)
			len = b1 - b0;
		ret = add_write(t, vol->bitmap_vpn + page, off,
				vol->bitmap + b0, (uint32_t)len, true);
		if (ret)
			return ret;
		b0 += len;
	}
	return 0;
}

int dg_txn_commit(struct dg_txn *t)
{
	struct dg_vol *vol = t->vol;
	struct dg_range *r = NULL;
	uint64_t freed = 0;
	int ret = 0;

	if (!t->nw && !t->nop)
		return 0;
	/* Commits that change the bitmap are serialised, so the bitmap
	 * bytes each one writes include every earlier commit's bits. */
	if (t->nop)
		pthread_mutex_lock(&vol->alloc_lock);
	for (unsigned i = 0; i < t->nop && !ret; i++) {
		if (!t->op[i].is_free)
			continue;
		/* Another commit may have freed it since dg_free() looked. */
		for (uint64_t b = t->op[i].start;
		     b < t->op[i].start + t->op[i].n; b++)
			if (!bit_get(vol->bitmap, b)) {
				ret = DG_CORRUPT(vol, "double free of vpn %"
						 PRIu64, b);
				break;
			}
		if (ret) {
			/* Undo the frees applied so far. */
			for (unsigned k = 0; k < i; k++)
				if (t->op[k].is_free)
					bits_set(vol->bitmap, t->op[k].start,
						 t->op[k].n, true);
			freed = 0;
			break;
		}
		bits_set(vol->bitmap, t->op[i].start, t->op[i].n, false);
		freed += t->op[i].n;
	}
	for (unsigned i = 0; i < t->nop && !ret; i++)
		ret = bitmap_writes(t, t->op[i].start, t->op[i].n);
	if (ret && freed) {
		for (unsigned i = 0; i < t->nop; i++)
			if (t->op[i].is_free)
				bits_set(vol->bitmap, t->op[i].start,
					 t->op[i].n, true);
		freed = 0;
	}
	r = ret ? NULL : malloc(t->nw * sizeof(*r));
	if (!ret && !r)
		ret = -ENOMEM;
	for (unsigned i = 0; !ret && i < t->nw; i++)
		r[i] = (struct dg_range){ t->w[i].vpn, t->w[i].off,
					  t->w[i].len, t->w[i].data };
	if (!ret)
		ret = dg_apply(vol, r, t->nw);
	for (unsigned i = 0; i < t->nop; i++)
		if (t->op[i].is_free && ret && freed)
			bits_set(vol->bitmap, t->op[i].start, t->op[i].n,
				 true);
	if (!ret && freed) {
		vol->free_vpns += freed;
		/* Reuse freed space before untouched space: on file-backed
		 * devices (images on tmpfs) untouched pages cost no memory,
		 * and a roving cursor would touch every page of the volume
		 * before reusing any. */
		for (unsigned i = 0; i < t->nop; i++)
			if (t->op[i].is_free &&
			    t->op[i].start < vol->alloc_cursor)
				vol->alloc_cursor = t->op[i].start;
	}
	if (t->nop)
		pthread_mutex_unlock(&vol->alloc_lock);
	free(r);
	txn_reset(t, ret == 0);
	return ret;
}
