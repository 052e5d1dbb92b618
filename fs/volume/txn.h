// SPDX-License-Identifier: MIT
/* txn.h -- a transaction's record: its writes (txn.c) and the allocator's
 * allocations and frees in it (alloc.c) */
#ifndef DG_TXN_H
#define DG_TXN_H

#include <stdlib.h>

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
	unsigned bm_first;	/* w[bm_first..]: the bitmap's bytes */
};

static inline int grow(void **p, unsigned *cap, unsigned n, size_t size)
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

/* ---- alloc.c: the allocator's side of a commit ------------------------ */
/* The allocations of a txn that was not committed go back. */
void dg_alloc_undo(struct dg_txn *t);
/* 0, or corrupt when a page t frees is free already. */
int dg_alloc_check_frees(struct dg_txn *t);
/* The hooks dg_apply_new() calls: the bitmap bytes t writes, filled
 * under their rows' locks, and t's frees once its entry is durable. */
struct dg_apply_hooks dg_alloc_hooks(struct dg_txn *t);

#endif /* DG_TXN_H */
