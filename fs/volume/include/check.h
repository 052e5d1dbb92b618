/* SPDX-License-Identifier: MIT */
/* check.h -- the volume layer's checks, for fsck.daxguard and the rebuild:
 * what a finding is, and the checks of superblocks, journal and
 * redundancy (the filesystem layer's are in fsys/include/fscheck.h) */
#ifndef DG_CHECK_H
#define DG_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check_kinds.h"
#include "volume.h"

/*
 * The checks walk the media through the engine (only the engine decodes
 * on-media bytes) and report each finding through a callback. A check
 * given repair = false never writes. Repairs are only the proven ones
 * (G6): pages rebuilt from parity and verified against their checksum,
 * parity recomputed from verified data, a copy replaced by a copy that
 * its own protection proves good, and counts and maps recomputed from
 * the structures that reference them.
 */
enum dg_chk_kind {
	/* DG_CHK_SUPER_BAD, ...: one per line of check_kinds.h, which
	 * says what each means (fsck's problem table comes from it too) */
#define DG_CHK_ENUM(kind, pass, message, flags) DG_CHK_##kind,
	DG_CHK_KINDS(DG_CHK_ENUM)
#undef DG_CHK_ENUM
	DG_CHK_NR,
};

struct dg_chk_event {
	enum dg_chk_kind kind;
	int dev;		/* device, -1 when none */
	int64_t page;		/* device page, -1 when none */
	int64_t vpn;		/* volume page, -1 when none */
	uint64_t ino;		/* inode, 0 when none */
	const char *structure;	/* "data", "parity", "checksum", "superblock",
				 * "journal", "inode", "extent", "directory",
				 * "allocation", "device" */
	bool fixed;		/* the repair was made */
	bool fixable;		/* a repair exists (made when repairing) */
	char detail[160];	/* human readable specifics */
	char action[64];	/* what was or would be done */
	char name[256];		/* an entry of directory ino, "" if none */
	/* ino goes with the repair (INODE_UNUSABLE): no path reaches it
	 * afterwards, so the report names it by the entry that named it,
	 * name in directory dir, or, with none (dir 0), as "#INO". */
	bool cleared;
	uint64_t dir;
};
typedef void (*dg_chk_fn)(void *arg, const struct dg_chk_event *ev);
/* Whether to make the repair a finding offers (fsck asks per finding). */
typedef bool (*dg_chk_ask_fn)(void *arg, const struct dg_chk_event *ev);

/* A finding of kind about structure, nothing located yet. */
static inline void dg_chk_event_init(struct dg_chk_event *ev,
				     enum dg_chk_kind kind,
				     const char *structure)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->dev = -1;
	ev->page = -1;
	ev->vpn = -1;
	ev->structure = structure;
}

static inline void dg_chk_emit(dg_chk_fn fn, void *arg,
			       const struct dg_chk_event *ev)
{
	if (fn)
		fn(arg, ev);
}

/*
 * The repairs the engine makes on its own way -- read-repair of a page
 * that failed its checksum, a stale or damaged checksum copy rewritten,
 * parity recomputed, a ditto copy rewritten -- ask ask first, with the
 * finding each would answer (kind, device, page, what would be done);
 * false leaves the media as it is and the read goes on from the proven
 * bytes in memory. fsck sets it for its whole run so that a repair the
 * user declined is not made by a later pass either. NULL (the default,
 * and the daemon's): every repair is made.
 */
void dg_vol_set_consent(struct dg_vol *vol, dg_chk_ask_fn ask, void *arg);
/* dg_vol_open() with ask in place before the open reads anything, so
 * that the open's own repairs (of the pages of the volume root and
 * bitmap, and their checksum pages) are asked about too. */
int dg_vol_open_asking(const char *const *paths, unsigned n, unsigned flags,
		       dg_chk_ask_fn ask, void *arg, struct dg_vol **volp,
		       char *errbuf, size_t errlen);
/* Where the fault event (dev, row, what) lies, as a finding's dev, page,
 * vpn and structure (the fault ring's row is a device page for checksum
 * copies, the init map and ditto copies). */
void dg_chk_locate(struct dg_vol *vol, struct dg_chk_event *ev, unsigned dev,
		   uint64_t row, enum dg_fault_what what);

/* Both superblock copies of every present device against the volume's.
 * repair rewrites the bad copies (a writable volume). */
int dg_check_supers(struct dg_vol *vol, bool repair, dg_chk_fn fn, void *arg);
/* Journal header slots of both copies, and live entries in each copy. */
int dg_check_journal(struct dg_vol *vol, bool repair, dg_chk_fn fn, void *arg);

struct dg_chk_stats {
	uint64_t rows_checked;	/* rows with a written page */
	uint64_t pages_checked;	/* written pages verified */
	uint64_t bytes_checked;
	uint64_t unrecoverable;
	/* How rows verified (the tests see the fast paths are taken):
	 * from a worker's verdict ahead, or in place on the walk's thread
	 * (dg_row_clean()); every other written row took the read path. */
	uint64_t rows_ahead;
	uint64_t rows_in_place;
};
#define DG_PAR_MAX_THREADS 16u	/* fsck --threads' bound */
/* Threads dg_check_redundancy() verifies rows with (fsck --threads): 0,
 * the default, one a CPU this process may run on (its affinity: a
 * container's, taskset's; at most 16); 1, this thread alone.
 * What it finds, and the order it reports it in, is the same. */
void dg_vol_set_check_threads(struct dg_vol *vol, unsigned n);
/* Every written page against its checksum, both copies of every
 * checksum page, the parity of every written row. */
int dg_check_redundancy(struct dg_vol *vol, bool repair, dg_chk_fn fn,
			void *arg, dg_progress_fn progress, void *parg,
			struct dg_chk_stats *st);

/* Rebuild the devices left out of a degraded volume (vol->spare paths)
 * completely from parity. Opens paths itself; on success every device
 * is whole and the volume opens normally. */
int dg_vol_rebuild(const char *const *paths, unsigned n, dg_chk_fn fn,
		   void *arg, dg_progress_fn progress, void *parg,
		   char *errbuf, size_t errlen);
struct dg_media_observer;
/* dg_vol_rebuild() with an observer on the media of the
 * volume it opens (tests of its crash states: NULL for none) and, when
 * counts is not NULL and it succeeds, what the rebuilt devices' media
 * was asked to do (media_counts.h). */
int dg_vol_rebuild_observed(const char *const *paths, unsigned n,
			    const struct dg_media_observer *obs,
			    struct dg_media_counts *counts, dg_chk_fn fn,
			    void *arg, dg_progress_fn progress, void *parg,
			    char *errbuf, size_t errlen);

/* Checksum of (dev, row) as stored (verified copy): DG_CSUM_NONE means
 * never written. */
int dg_check_csum(struct dg_vol *vol, unsigned dev, uint64_t row,
		  uint64_t *csum);
/* Device page of superblock copy c (0 primary, 1 backup). */
uint64_t dg_super_page(struct dg_vol *vol, unsigned copy);
/* Journal header slot s of copy c: device and page; *live says whether
 * it holds the newest header. */
void dg_jhead_loc(struct dg_vol *vol, unsigned c, unsigned s, unsigned *dev,
		  uint64_t *page, bool *newest);

/* Give up the data page at vpn, no copy of which verifies: write data in
 * its place and recompute the row's parity from the pages as they are.
 * Takes the row lock. In verify.c; fsck gives up
 * unreadable metadata pages with it. */
int dg_row_replace_page(struct dg_vol *vol, uint64_t vpn, const void *data);

/*
 * Give up the lost page at vpn (given_up.c): its bytes stay, the row's
 * parity is recomputed from the row as it is, and its checksum entry is
 * marked "given up" (it still fails verification: reads give EIO).
 * 0 (also when it was given up already), -EAGAIN when the page can be
 * read (not lost), -EROFS, -ENXIO degraded, -EIO when a persist failed.
 * Takes the row lock. Offline (fsck) only.
 */
int dg_row_give_up_page(struct dg_vol *vol, uint64_t vpn);
/* Whether (dev, row) carries the "given up" mark (its checksum entry is
 * that of its bytes as they are, XOR the tag). */
bool dg_page_given_up(struct dg_vol *vol, unsigned dev, uint64_t row);
/* The "given up" checksum of page at (dev, row). */
uint64_t dg_csum_given_up(const struct dg_vol *vol, unsigned dev,
			  uint64_t row, const void *page);
/* Whether csum (a written page's) is the "given up" one of page. */
bool dg_csum_is_given_up(const struct dg_vol *vol, unsigned dev,
			 uint64_t row, uint64_t csum, const void *page);
/*
 * The bytes of a page fsck gave up, into buf, for a copy to a new device
 * (replace, rebuild): as its device holds them, or, that device missing
 * or not yet rebuilt, rebuilt raw from the rest of its row (what parity
 * pins). 0, or -EIO when (dev, row) does not carry the mark (or cannot
 * be rebuilt). Never for a reader. Caller holds the row lock for writing.
 */
int dg_page_read_given_up(struct dg_vol *vol, unsigned dev, uint64_t row,
			  void *buf);

#endif /* DG_CHECK_H */
