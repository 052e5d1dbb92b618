/* SPDX-License-Identifier: MIT */
/* replay_prove.h -- the rows a journal replay rewrites, as it found them */
#ifndef DG_REPLAY_PROVE_H
#define DG_REPLAY_PROVE_H

#include "volume_i.h"

/*
 * A crash can leave a committed entry half applied, and a fault may hit
 * another page of the same row. The replay then holds two versions of
 * the row: as it found it (the parity and the old bytes of the pages the
 * entries rewrite, still on the media when the crash came before the
 * in-place writes) and as redone. Either may be the one its parity was
 * computed from. dg_rproof keeps the first (each page the replay is
 * about to rewrite, copied before its first write) so that a page of the
 * row that fails its checksum can be rebuilt from the version that
 * proves it (docs/integrity.md, "Replay under faults").
 */
struct dg_rproof;

struct dg_rproof *dg_rproof_new(void);
void dg_rproof_free(struct dg_rproof *p);

/*
 * The replay is about to write bytes [off, off + len) of data page
 * (dev, row), dev present: keep the page as found (the first time) and,
 * at the first page of the row, its parity pages as found; note the
 * bytes as redone. 0 or -ENOMEM.
 */
int dg_rproof_keep(struct dg_rproof *p, struct dg_vol *vol, unsigned dev,
		   uint64_t row, uint32_t off, uint32_t len);

/* Keep row's parity pages as found (the first time) without a page of
 * its own: a page of a missing device is then proven from the row as
 * found (journal.c, a lean entry's page). 0 or -ENOMEM. */
int dg_rproof_row(struct dg_rproof *p, struct dg_vol *vol, uint64_t row);

/*
 * Rebuild data page (dev, row) of a row the replay rewrote into buf, from
 * the row as found, as redone, or (a parity write torn by the crash)
 * redone up to an 8-byte boundary and as found after it; with parity 2
 * also from one parity alone, or with one more page of the row taken as
 * unknown. Only bytes that hash to csum, the page's verified checksum,
 * count: 0 with buf filled, -EIO when no rebuild matches (or the row was
 * not rewritten), -ENOMEM. Writes nothing. Caller holds the row lock.
 */
int dg_rproof_page(struct dg_rproof *p, struct dg_vol *vol, unsigned dev,
		   uint64_t row, uint64_t csum, void *buf);

#endif /* DG_REPLAY_PROVE_H */
