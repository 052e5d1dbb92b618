/* SPDX-License-Identifier: MIT */
/* csum.h -- page checksums and the checksum pages that hold them */
#ifndef DG_CSUM_H
#define DG_CSUM_H

#include "csum_cache.h"
#include "volume_i.h"

/* A checksum page image and where it came from; reused across lookups
 * of neighbouring rows within one locked operation. */
struct dg_csum_cursor {
	int owner;		/* device whose rows it covers; -1: empty */
	uint64_t index;		/* checksum page index */
	uint64_t *entries;	/* a struct dg_dcpage image, 4 KiB aligned;
				 * allocated by the first page copied */
	/* The page of the last single-entry lookup: a first lookup in a
	 * cached page reads its one entry, a second copies the page. Most
	 * updates touch one row per checksum page, and the copy (with its
	 * allocation) was a visible share of a 4 KiB write. */
	int peek_owner;
	uint64_t peek_index;
	bool uncached;		/* read media, not csum_cache.c (scrub) */
};
void dg_csum_cursor_init(struct dg_csum_cursor *cur);
void dg_csum_cursor_fini(struct dg_csum_cursor *cur);

/*
 * Checksum of (dev, row), verified: from the newest copy of its checksum
 * page that verifies (dg_cpage_examine()). Caller holds the row lock of
 * row, which keeps that entry stable in the cursor. -EIO when no copy
 * verifies.
 */
int dg_csum_lookup(struct dg_vol *vol, struct dg_csum_cursor *cur,
		   unsigned dev, uint64_t row, uint64_t *csum);

/*
 * True when the checksum page in cur is still the newest: every copy of
 * it on a present device is still at its generation (every update of a
 * checksum page stores a new generation in every copy, under the page's
 * lock, which this takes). Reads each copy's generation only: for the
 * online scrub, which looked a page up again for every row, each time
 * reading and verifying every copy (half of its work). A copy that
 * lost a write, or decayed where its generation lies, differs: false,
 * and the look-up that follows finds it. Caller holds the row lock of
 * the row it looks up next.
 */
bool dg_csum_cursor_current(struct dg_vol *vol, struct dg_csum_cursor *cur);

/* dg_page_read_locked() with a cursor over the checksum pages; the
 * caller holds the row locks of every row it reads through cur. */
int dg_page_read_cur(struct dg_vol *vol, struct dg_csum_cursor *cur,
		     unsigned dev, uint64_t row, void *buf, uint64_t *csum_out);

/* What examining the copies of one checksum page found. */
enum dg_copy_state {
	DG_COPY_ABSENT,		/* its device is missing */
	DG_COPY_CURRENT,	/* verifies, newest generation */
	DG_COPY_STALE,		/* verifies, older generation: lost writes */
	DG_COPY_BAD,		/* fails its seal (zeroed included) */
};
#define DG_MAX_CSUM_COPIES (DG_MAX_PARITY + 2)
struct dg_cpage_view {
	int result;		/* 1 found, 0 never written, -EIO */
	unsigned ncopies, bad;	/* copies; how many stale or bad */
	unsigned source;	/* the copy that won */
	uint64_t gen;		/* its generation */
	enum dg_copy_state state[DG_MAX_CSUM_COPIES];
	uint64_t copy_gen[DG_MAX_CSUM_COPIES];
};
/*
 * Read every copy of checksum page (owner, index) and put the newest one
 * that verifies in img (the freshness rule, format.h). Returns 1, 0 when
 * no copy verifies and the init map says the index was never written
 * (img zero), or -EIO (counted as unrecoverable). With DG_CPX_REPAIR,
 * every stale or damaged copy is rewritten from the winner, unless
 * read-only; each is a fault event ("csum-copy", the copy's device and
 * page) unless DG_CPX_QUIET (the caller reports from the view).
 * Caller holds the page's lock.
 */
#define DG_CPX_REPAIR 1u
#define DG_CPX_QUIET  2u
int dg_cpage_examine(struct dg_vol *vol, unsigned owner, uint64_t index,
		     void *img, struct dg_cpage_view *v, unsigned flags);
/* dg_cpage_examine() with DG_CPX_REPAIR under the page's lock: its
 * copies made whole and equal where they can be (the rest is noted).
 * 0, or -ENOMEM. */
int dg_cpage_settle(struct dg_vol *vol, unsigned owner, uint64_t index);

struct dg_csum_upd {
	unsigned dev;
	uint64_t row;
	uint64_t csum;
};
/* Store checksums in every copy, with a new generation. u must be sorted
 * by (dev, row); the caller holds every row lock. The pages are durable
 * on return, in two rounds (media.h): the first present copy of every
 * page, then the other copies, so no crash tears every copy of a page
 * (csum.c, write_pages_copies()). fs: stores of the caller's that may
 * become durable in any order with the first copies (an update's
 * pages in place, its entry durable): made durable in the first round,
 * and emptied. */
int dg_csum_set_batch(struct dg_vol *vol, const struct dg_csum_upd *u,
		      unsigned n, struct dg_flushset *fs);
/* Stores that must wait for the first round's fence: called once, after
 * it, to store into the round that follows (the second copies', or one
 * of their own where there is none). A lean update's parity (apply.c). */
struct dg_csum_then {
	int (*store)(void *arg, struct dg_flushset *fs);
	void *arg;
};
/*
 * dg_csum_set_batch() for checksums a live journal entry names -- an
 * update's (its entry, or the reservation of its new rows) or the
 * replay's -- which the replay sets again after a crash: on volumes with
 * DG_FEAT_INCOMPAT_COPIES_TOGETHER every copy goes in the first round,
 * one fence for all (csum.c, write_pages_copies()); else as
 * dg_csum_set_batch(). then (NULL: none): stores that wait for the first
 * round's fence, in the round after it, with every copy but the first
 * on such volumes, else with the second copies.
 */
int dg_csum_set_journaled(struct dg_vol *vol, const struct dg_csum_upd *u,
			  unsigned n, struct dg_flushset *fs,
			  const struct dg_csum_then *then);
int dg_csum_upd_cmp(const void *a, const void *b);

#endif /* DG_CSUM_H */
