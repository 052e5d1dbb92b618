// SPDX-License-Identifier: MIT
/*
 * txn.c -- the transaction: the writes of one update, buffered, and its
 * commit. The allocator (alloc.c) records the txn's allocations and
 * frees and gives the bitmap's bytes; the update path (apply.c) applies
 * the whole as one journaled update.
 */
#include <stdlib.h>
#include <string.h>

#include "volume_i.h"

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
	if (!committed)
		dg_alloc_undo(t);
	else if (t->nop)	/* as its hooks did, if it called them */
		dg_alloc_settled(t);
	for (unsigned i = 0; i < t->nw; i++)
		if (t->w[i].owned)
			free((void *)t->w[i].data);
	t->nw = 0;
	t->nop = 0;
	t->frees_rewritten = false;
}

void dg_txn_frees_rewritten(struct dg_txn *t)
{
	t->frees_rewritten = true;
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

static int add_write(struct dg_txn *t, uint64_t vpn, uint32_t off,
		     const void *data, uint32_t len, bool copy)
{
	uint8_t *c = NULL;

	if (dg_grow((void **)&t->w, &t->capw, t->nw, sizeof(*t->w)))
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

/* Append writes of the bitmap bytes covering [start, start + n), their
 * content left to bitmap_fill(). */
static int bitmap_writes(struct dg_txn *t, uint64_t start, uint64_t n)
{
	static const uint8_t zero[DG_PAGE_SIZE];
	struct dg_vol *vol = t->vol;
	uint64_t b0 = start / 8, b1 = (start + n - 1) / 8 + 1;

	while (b0 < b1) {
		uint64_t page = b0 / DG_PAGE_SIZE;
		uint32_t off = (uint32_t)(b0 % DG_PAGE_SIZE);
		uint64_t len = DG_PAGE_SIZE - off;
		int ret;

		if (len > b1 - b0)
			len = b1 - b0;
		ret = add_write(t, vol->bitmap_vpn + page, off, zero,
				(uint32_t)len, true);
		if (ret)
			return ret;
		b0 += len;
	}
	return 0;
}

bool dg_txn_allocated(const struct dg_txn *t, uint64_t vpn)
{
	for (unsigned i = 0; i < t->nop; i++)
		if (!t->op[i].is_free && vpn >= t->op[i].start &&
		    vpn - t->op[i].start < t->op[i].n)
			return true;
	return false;
}

/* Writes of a txn whose ranges and fresh flags dg_txn_commit() keeps on
 * the stack: a small write's page or two, and its bitmap bytes. */
#define TXN_SMALL 8

int dg_txn_commit(struct dg_txn *t)
{
	const struct dg_apply_hooks hooks = dg_alloc_hooks(t);
	struct dg_vol *vol = t->vol;
	/* Two allocations and their frees were 300 instructions of a
	 * 4 KiB write's commit. */
	struct dg_range small_r[TXN_SMALL], *r = NULL;
	bool small_fresh[TXN_SMALL], *fresh = NULL;
	bool small;
	int ret = 0;

	if (!t->nw && !t->nop)
		return 0;
	/* Another commit may have freed a page since dg_free() looked. */
	ret = dg_alloc_check_frees(t);
	/* Room for the bitmap bytes; bitmap_fill() gives them content. */
	t->bm_first = t->nw;
	for (unsigned i = 0; i < t->nop && !ret; i++)
		ret = bitmap_writes(t, t->op[i].start, t->op[i].n);
	small = t->nw <= TXN_SMALL;
	r = ret ? NULL : small ? small_r : malloc(t->nw * sizeof(*r));
	if (!ret && !r)
		ret = -ENOMEM;
	fresh = ret ? NULL : small ? small_fresh
				   : malloc(t->nw * sizeof(*fresh));
	if (!ret && !fresh)
		ret = -ENOMEM;
	for (unsigned i = 0; !ret && i < t->nw; i++) {
		r[i] = (struct dg_range){ t->w[i].vpn, t->w[i].off,
					  t->w[i].len, t->w[i].data };
		fresh[i] = dg_txn_allocated(t, t->w[i].vpn);
	}
	if (!ret)
		ret = dg_apply_new(vol, r, t->nw, fresh, t->nop ? &hooks : NULL);
	if (!small) {
		free(fresh);
		free(r);
	}
	txn_reset(t, ret == 0);
	return ret;
}
