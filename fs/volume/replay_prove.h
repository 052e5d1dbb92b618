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

/*
 * The replay is about to write bytes [off, off + len) of data page
 * (dev, row) of a missing device into the page's shadow (journal.c,
 * which keeps it until the replay ends): keep the row's parity pages as
 * found (the first time), note the bytes as redone and the shadow as
 * where they are, so that the page is proven from the row as found with
 * them put back over its rebuilt old image, as a present page is. 0 or
 * -ENOMEM.
 */
int dg_rproof_shadow(struct dg_rproof *p, struct dg_vol *vol, unsigned dev,
		     uint64_t row, uint32_t off, uint32_t len,
		     const uint8_t *shadow);

/* Keep row's parity pages as found (the first time) without a page of
 * its own: a page of a missing device is then proven from the row as
 * found (journal.c, a lean entry's page). 0 or -ENOMEM. */
int dg_rproof_row(struct dg_rproof *p, struct dg_vol *vol, uint64_t row);

/*
 * Data page (dev, row), dev present, was reserved alone by an update
 * that writes it before its entry and never committed it
 * (DG_JRANGE_RESERVED). Where that was a hole filled beside pages in use
 * (apply.c, check_lone_rows()), its image before the write was zeros as
 * the row's parity counts them, and the page was durable before the
 * parity was written. So keep the row's parity as found and zeros as
 * the page's image as found: another page of the row then proves from
 * the row with this page as zeros or as written -- or, the parity torn,
 * a splice of the two. (Beside a page of a lone row or a new row nothing
 * is live to prove, and an image that is wrong proves nothing: the
 * checksum.) Nothing when the page is kept already. 0 or -ENOMEM.
 */
int dg_rproof_blank(struct dg_rproof *p, struct dg_vol *vol, unsigned dev,
		    uint64_t row);

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
