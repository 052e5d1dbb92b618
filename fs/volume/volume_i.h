/* SPDX-License-Identifier: MIT */
/* volume_i.h -- private to the volume layer: the in-core volume */
#ifndef DG_ENGINE_I_H
#define DG_ENGINE_I_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "volume.h"
#include "media.h"

/* Lock classes, in the order they are taken (docs/design.md,
 * "Parallel commits"):
 *   row locks (sorted by index)  ->  journal lock  ->  cmap init lock
 *   ->  csum page locks  ->  cmap lock
 * alloc_lock is a leaf: taken alone (allocation) or inside row locks
 * (a commit's bitmap fill and frees, the reset of a lost free page,
 * trim), never around a row, journal or checksum lock.
 * Row locks serialise everything that touches one row: a page's
 * read-modify-write, its parity delta, and reconstruction from the row,
 * so a reconstruction never sees a row whose data and parity disagree.
 * Rows that hash to different locks update concurrently; there is no
 * volume-wide lock on the data path. */
#define DG_ROW_LOCKS  1024u
#define DG_CSUM_LOCKS 256u

struct dg_jpending;
struct dg_bmpage;

struct dg_journal {
	pthread_mutex_t lock;
	uint64_t log_off;	/* first byte of the log in the area */
	uint64_t log_bytes;	/* circular log size */
	uint64_t head_off;	/* protected by lock: next entry goes here */
	uint64_t head_seq;	/* protected by lock */
	uint64_t tail_off;	/* protected by lock: oldest live entry */
	uint64_t tail_seq;	/* protected by lock */
	uint64_t disk_tail_off;	/* protected by lock: as in the header */
	uint64_t disk_tail_seq;	/* protected by lock */
	uint64_t hseq;		/* protected by lock: header write counter */
	struct dg_jpending *pend; /* protected by lock: ring of in-flight */
	unsigned npend, pend_cap, pend_first;
	pthread_cond_t cond;	/* signalled when an entry completes */
	uint64_t written_seq;	/* protected by lock: every entry below it
				 * is durable (appends write side by side) */
	pthread_cond_t wcond;	/* signalled when written_seq moves */
	unsigned wwaiters;	/* protected by lock: waiting on wcond */
	uint64_t appends_waited; /* status; atomic */
	bool committing;	/* protected by lock: a leader is making a
				 * round of entries durable (group commit) */
	uint64_t appends_grouped; /* entries made durable in another's
				   * round; atomic */
	unsigned ncopies;
	unsigned nbytes;	/* copies 0 .. nbytes - 1 hold entry bytes;
				 * the others the metadata only (JOURNAL_V2),
				 * unless a bytes copy's device is missing
				 * (journal.c, copy_gets_bytes()) */
	unsigned dev[DG_MAX_JCOPIES];	/* device of each copy */
	uint64_t start[DG_MAX_JCOPIES];	/* first page of each copy */
	bool replayed;		/* false: opened without recovery with live
				 * entries left unreplayed (a rebuild, a
				 * read-only open); its tail and header never
				 * move, and nothing is appended after them,
				 * so the next open that recovers redoes them
				 * (journal.c, dg_journal_open()) */
	/* Rows the entries found at the open name (sorted, distinct):
	 * those whose checksum slots a crash may have left torn or stale,
	 * on every copy where they go together (csum.c, crash_debris(),
	 * cpage_salvage()). Kept until the replay is done; an open that
	 * does not replay keeps them to the close. */
	uint64_t *cover;
	size_t ncover;
};

struct dg_chk_event;

/*
 * Runs of data pages freed by committed updates, whose rows the blanker
 * gives back blank when every data page of a row is free (blank.c):
 * then a small write into such a row goes alone, unjournaled (apply.c,
 * mark_lone_rows()). Filled by the allocator as frees become durable
 * (alloc.c), under alloc_lock and then lock (in that order); the thread
 * takes runs under lock alone.
 */
#define DG_BLANK_RUNS 256u
struct dg_blank {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct dg_blank_run {
		uint64_t start, n;
	} run[DG_BLANK_RUNS];		/* a ring, by lock */
	unsigned head, len;		/* by lock */
	uint64_t pending;		/* pages queued or being looked at */
	bool on, stop, thread_live;	/* by lock */
	pthread_t thread;
	/* blank.c's stop, set with the thread: what the close calls (the
	 * close stays below the blanker, which trims). */
	void (*halt)(struct dg_vol *vol);
	_Atomic uint64_t rows, dropped;	/* rows blanked; runs not queued */
};

struct dg_vol {
	struct dg_dev devs[DG_MAX_DEVS];	/* indexed by device index */
	unsigned ndev, parity, k;		/* k = data pages per row */
	/* By a row's first parity device (its chunk's rotation):
	 * the device of each data rank, and the data rank of each device
	 * (DG_NO_RANK for a parity device). dg_geom_init(). */
	uint8_t rank_dev[DG_MAX_DEVS][DG_MAX_DEVS];
	uint8_t dev_rank[DG_MAX_DEVS][DG_MAX_DEVS];
	struct dg_dsuper sb;			/* in-core copy, common fields */
	uint8_t dev_uuid[DG_MAX_DEVS][16];
	char *spare[DG_MAX_DEVS];		/* paths left out: rebuild targets */
	/* Devices being rebuilt (rebuild.c, while it rewrites their
	 * checksum copies): a copy on one of them never decides which copy
	 * of a checksum page is newest while a copy elsewhere verifies
	 * (dg_cpage_examine()). A device that comes back may have been
	 * written in a history of its own. */
	uint32_t cpx_rebuilding;
	/* The slot + 1 a spare is to be rebuilt as, 0: rebuild.c picks.
	 * A byte copy of another device stands for the slot that the
	 * open found it in place of (ident.c). */
	int8_t spare_slot[DG_MAX_DEVS];
	unsigned nspare;
	/* Why a missing slot is missing, when the open knows better than
	 * "absent" (a copy of another device stood in its place). */
	char *missing_why[DG_MAX_DEVS];
	uint64_t seed;				/* checksum seed from the uuid */
	uint64_t vpns;
	bool redundancy;			/* checksums and parity on */
	bool sealed_journal;		/* journal may seal whole pages */
	bool new_rows;			/* ... and hold in-place ranges */
	bool journal_v2;		/* entry bytes on nbytes copies */
	bool reserved_rows;		/* reservations by row runs */
	bool lean_journal;		/* lean entries (DG_JENTRY_LEAN) */
	bool copies_together;		/* journaled copies in one round */
	bool read_only, degraded;
	/* The volume was found not closed cleanly (a crash, or mounted
	 * still): what rounds in flight tear is no fault of a device. */
	bool found_dirty;
	uint32_t missing_mask;
	struct dg_latch latch;			/* a persist failed: refuse writes */
	const struct dg_media_observer *obs;	/* tests: media.h */
	/* log.c: this volume's sink, when log_own; else the process's. */
	dg_log_func log_func;
	enum dg_log_level log_level;
	bool log_own;

	uint8_t *ec_matrix;			/* (k+parity) x k, ISA-L */
	uint8_t *ec_tables;			/* encode tables, parity rows */

	pthread_rwlock_t row_locks[DG_ROW_LOCKS];
	pthread_mutex_t csum_locks[DG_CSUM_LOCKS];
	struct dg_cpcache *cpcache;		/* csum_cache.c; NULL: off */
	_Atomic uint64_t gen;			/* last generation handed out */
	pthread_mutex_t epoch_lock;		/* a new epoch is being begun */
	uint8_t *cmap;				/* init map, by cmap_lock */
	/* Indexes set in core whose bit the media may not hold yet (set
	 * up by a journaled batch, csum.c "pending"), as cmap, and how
	 * many: by cmap_lock (the count also read without it, a hint). */
	uint8_t *cmap_pending;
	_Atomic uint64_t cmap_npending;
	/* Per map page, the slot its next one-slot write goes to (the one
	 * not written last): by cmap_init_lock. */
	uint8_t *cmap_next_slot;
	pthread_mutex_t cmap_lock;
	/* walk.c: where the last walk ends, and the rows below which it
	 * read ahead: a walk that begins there (the daemon's next batch)
	 * goes on from them. Hints only: relaxed. */
	_Atomic uint64_t walk_end, walk_ahead;
	/* Threads fsck's row pass verifies with (verify_par.c); 0: one a
	 * CPU this process may run on (its affinity), at most
	 * DG_PAR_MAX_THREADS. */
	unsigned check_threads;
	/* The map's writes, one at a time (no crash tears both slots of a
	 * page); an index set up outside a journaled batch. */
	pthread_mutex_t cmap_init_lock;
	struct dg_journal jrnl;

	/* allocator, alloc.c */
	pthread_mutex_t alloc_lock;
	/* The bitmap by page, compact (bmap.h); NULL until loaded. */
	struct dg_bmpage *bm;			/* protected by alloc_lock */
	uint64_t bm_images;			/* pages of it held whole */
	uint64_t bitmap_vpn, bitmap_pages, meta_vpns;
	/* [meta_vpns, zone_vpns): the metadata zone's allocatable pages;
	 * zone_vpns == meta_vpns without a zone (format.h) */
	uint64_t zone_vpns;
	uint64_t free_vpns;			/* protected by alloc_lock */
	uint64_t zone_free;			/* protected by alloc_lock */
	uint64_t alloc_cursor;			/* data, by alloc_lock */
	/* Transactions whose allocations are set in the in-core bitmap and
	 * not durable (alloc.c, bitmap_fill()). By alloc_lock. */
	struct dg_txn *alloc_pending;
	/* Where dg_alloc_blank_hint() looks next: past the last blank page
	 * it gave or the pages it found not blank, so the frees the
	 * allocation cursor goes back to (they hold bytes) are passed once,
	 * not looked at by every write; and how many calls are still to
	 * pass without a look after one found none. By alloc_lock. */
	uint64_t blank_cursor;
	unsigned blank_skip;
	uint64_t meta_cursor;			/* zone, by alloc_lock */
	/* Metadata pages allocated outside a full zone since the open (no
	 * ditto copies); fsck counts those on the media. */
	uint64_t meta_spill;			/* by alloc_lock */

	/* Rows whose parity updates computed from new data alone, and rows
	 * they patched with deltas (old data and parity read), since the
	 * open (apply.c); of the first, those new to their update, written
	 * before its journal entry (DG_JRANGE_IN_PLACE); and the lone rows,
	 * written so with one update's pages and blank pages beside; and
	 * the holes filled so beside pages in use. */
	_Atomic uint64_t rows_full, rows_patched, rows_new, rows_lone,
		holes_filled, updates_split;

	/* Rows freed whole, blanked in the background (blank.c). */
	struct dg_blank blank;

	/* Online replace (replace.c); NULL when none runs. Set and
	 * cleared with every row lock and the journal lock held. */
	struct dg_repl *repl;
	/* replace.c's dg_vol_replace_abort(), set with repl: what the
	 * close calls to let a replace's new device go (the close stays
	 * below the replace that opens volumes). */
	void (*repl_abort)(struct dg_vol *vol);

	dg_page_hook page_hook;
	void *page_hook_arg;
	/* repair.c: asked before each repair; NULL, every one (check.h) */
	bool (*consent)(void *arg, const struct dg_chk_event *ev);
	void *consent_arg;

	_Atomic uint64_t faults[DG_FAULT_NR];
	_Atomic uint64_t dev_faults[DG_MAX_DEVS][DG_FAULT_NR];
	_Atomic uint64_t dev_read_errors[DG_MAX_DEVS];
	pthread_mutex_t fault_lock;
	struct dg_fault_event fault_ring[DG_FAULT_RING]; /* by fault_lock */
	uint64_t fault_seq;				 /* by fault_lock */
	/* Pages found lost (fault.c), by fault_lock: met again, they are
	 * not counted or logged again (issue 32, item 3). */
	struct dg_known_loss {
		unsigned dev;
		uint64_t row, csum;
	} *losses;
	unsigned nlosses, caplosses;
	/* A filter of the (dev, row) ever known lost since the last
	 * forget-all, for the read path to look without the lock: a clear
	 * bit means not known (dg_fault_loss_verified()). */
	_Atomic uint64_t loss_filter[64];
	/* The registry of lost data pages (lost_reg.c), by lost_lock:
	 * listed with the file page they were, and kept free ones (their
	 * file deleted before the fault was seen) for the scrub or the
	 * unmount to reset. owner says who holds a page. Pages in use
	 * whose owner the quick answer could not tell wait in pending for
	 * dg_vol_lost_resolve(): never reset meanwhile. */
	pthread_mutex_t lost_lock;
	struct dg_lost_page *lost;
	unsigned nlost, caplost;
	uint64_t *gone;
	unsigned ngone, capgone;
	uint64_t *pending;
	unsigned npending, cappending;
	dg_vpn_owner_fn owner;
	void *owner_arg;
};

/* The lock of a row (row locks hash rows onto DG_ROW_LOCKS locks). */
static inline pthread_rwlock_t *dg_row_lock(struct dg_vol *vol, uint64_t row)
{
	return &vol->row_locks[row % DG_ROW_LOCKS];
}

/* ---- vol.c: the media hook, for tests (media.h) ---------------------- */
/* dg_vol_open() with every write and persist of the volume's devices,
 * from the open's first on, reported to obs (tests/crash records the
 * journal replay an open does). */
int dg_vol_open_observed(const char *const *paths, unsigned n,
			 unsigned flags, const struct dg_media_observer *obs,
			 struct dg_vol **volp, char *errbuf, size_t errlen);
/* From now on (NULL: no more). */
void dg_vol_set_observer(struct dg_vol *vol,
			 const struct dg_media_observer *obs);

/* ---- geom.c ---------------------------------------------------------- */
unsigned dg_row_parity_first(const struct dg_vol *vol, uint64_t row);
bool dg_row_dev_is_parity(const struct dg_vol *vol, uint64_t row,
			  unsigned dev);
/* Data rank (0..k-1) of dev in row; dev must not be a parity device. */
unsigned dg_row_data_rank(const struct dg_vol *vol, uint64_t row,
			  unsigned dev);
unsigned dg_row_data_dev(const struct dg_vol *vol, uint64_t row,
			 unsigned rank);
unsigned dg_row_pos_dev(struct dg_vol *vol, uint64_t row, unsigned pos);
/* Device and device page of copy c of checksum page (owner, index). */
unsigned dg_cpage_copy_dev(const struct dg_vol *vol, unsigned owner,
			   unsigned copy);
uint64_t dg_cpage_copy_page(const struct dg_vol *vol, uint64_t index,
			    unsigned copy);
/* zone_chunks 0: the layout without a metadata zone (format.h). */
#define DG_NO_RANK 0xff
/* The rotation tables of vol, once ndev and parity are set. */
void dg_geom_init(struct dg_vol *vol);
uint32_t dg_geom_jrnl_devs(uint32_t ndev, uint32_t parity, uint64_t incompat);
void dg_geom_layout(struct dg_dsuper *sb, uint64_t dev_pages,
		    uint32_t chunk_pages, uint32_t ndev, uint32_t parity,
		    uint64_t zone_chunks);
/* The metadata zone mkfs gives: zone_bytes rounded up to whole chunks of
 * rows, or by default DG_ZONE_DEFAULT_PCT percent of the data pages; at
 * least DG_ZONE_MIN_PAGES (the root, the bitmap, inode table chunks and
 * directories of a small volume) and one chunk, at most half the
 * chunks. */
#define DG_ZONE_DEFAULT_PCT 3u
#define DG_ZONE_MIN_PAGES   512u
uint64_t dg_geom_zone_chunks(uint64_t dev_pages, uint32_t chunk_pages,
			     uint32_t ndev, uint32_t parity,
			     uint64_t zone_bytes);
/* Chunks of rows in the metadata zone; 0 without META_ZONE. */
uint64_t dg_sb_zone_chunks(const struct dg_dsuper *sb);

/* ---- csum.c ---------------------------------------------------------- */
uint64_t dg_seed_from_uuid(const uint8_t uuid[16]);
/* Address-seeded checksum of a data-row page; never DG_CSUM_NONE. */
uint64_t dg_csum_page(const struct dg_vol *vol, unsigned dev, uint64_t row,
		      const void *page);
/* A page of zeros, never written to. */
extern const uint8_t dg_zero_page[DG_PAGE_SIZE];
/* Whether checksum cs says (dev, row) is blank: NONE (never written,
 * zeros whatever the media holds) or that of a page of zeros -- what a
 * trimmed page holds, which the checksum alone proves. */
/* Whether (dev, row) is blank (dg_csum_blank()). A checksum that cannot
 * be looked up says no. */
bool dg_page_blank(struct dg_vol *vol, unsigned dev, uint64_t row);
bool dg_csum_blank(const struct dg_vol *vol, unsigned dev, uint64_t row,
		   uint64_t cs);
/* The verified checksum of (dev, row), from the newest copy of its
 * checksum page (stale and damaged copies are rewritten when writable).
 * -EIO when no copy verifies and the init map says it was written.
 * Caller holds the row lock. */
int dg_csum_get(struct dg_vol *vol, unsigned dev, uint64_t row,
		uint64_t *csum);
/* Store the checksum entry of (dev, row) in every copy, durably, with a
 * new generation. Caller holds the row lock. */
int dg_csum_set(struct dg_vol *vol, unsigned dev, uint64_t row,
		uint64_t csum, struct dg_flushset *fs);
/* Validate a checksum page copy: 1 its seal holds, -EUCLEAN otherwise
 * (an all-zero page included). */
int dg_csum_page_check(const struct dg_vol *vol, unsigned owner,
		       uint64_t index, const void *page);
void dg_csum_page_seal(const struct dg_vol *vol, unsigned owner,
		       uint64_t index, void *page);
/* Generations (format.h): set from the superblock at open (csum.c draws
 * the next ones, beginning a new epoch when the low bits run out). */
void dg_gen_init(struct dg_vol *vol);
/* The checksum-page init map: written empty by mkfs, loaded at open
 * (the union of the verified copies; stale copies rewritten when
 * writable). dg_cmap_test(): the checksum pages of index were written. */
int dg_cmap_format(struct dg_vol *vol);
int dg_cmap_load(struct dg_vol *vol);
void dg_cmap_free(struct dg_vol *vol);
/* Write the whole map to the devices in the mask (a rebuilt device):
 * 0 or the first failure. */
int dg_cmap_store(struct dg_vol *vol, uint32_t devs);
/*
 * Put the map pages holding pending bits (a new index's, csum.c) into the
 * round fs, which must touch no pending index's checksum pages: the
 * round after the one that set an index up -- its update's journal
 * entry (journal.c, append()) -- takes its bit along, at no round of its
 * own. Only when the map's lock is free (a trylock: the rider holds
 * locks that a writer of the map may wait for). *nr riders filled (at
 * most max); if any, the map's lock is held until dg_cmap_ride_end(),
 * called once the round is durable (ok) or failed. 0 (out of memory
 * included: a page not taken waits for a later round), or a store's
 * failure (the volume latched, media.h).
 */
struct dg_cmap_rider {
	uint64_t p;
	struct dg_dcmap *m;
	uint8_t *took;
};
#define DG_CMAP_RIDERS 4
int dg_cmap_ride(struct dg_vol *vol, struct dg_flushset *fs,
		 struct dg_cmap_rider *r, unsigned max, unsigned *nr);
void dg_cmap_ride_end(struct dg_vol *vol, struct dg_cmap_rider *r,
		      unsigned nr, bool ok);
/* As dg_cmap_flush(), but only if the map's lock is free (false: it was
 * not, nothing written): a caller that holds the journal's lock, which a
 * rider waits for while it holds the map's. */
bool dg_cmap_flush_try(struct dg_vol *vol, int *ret);
/* Write every map page that holds a pending bit (a journaled batch's
 * new index, csum.c) in a round of its own, so the media holds it:
 * before the journal's tail moves (journal.c, write_head()) and at a
 * checkpoint. 0 or the first failure. */
int dg_cmap_flush(struct dg_vol *vol);
bool dg_cmap_test(struct dg_vol *vol, uint64_t index);
/* Index is clear, but owner's checksum page of it verifies: the bit
 * was lost from the map; set it again (written when writable): true. */
bool dg_cmap_recover(struct dg_vol *vol, unsigned owner, uint64_t index);
/* The first index in [index, end) whose bit is set, else end: a scan of
 * the map in core, 8 clear indexes per byte. */
uint64_t dg_cmap_next_set(struct dg_vol *vol, uint64_t index, uint64_t end);
/* The first row in [row, end) whose checksum page index is set, else
 * end: rows of a clear index were never written (format.h), nothing of
 * them is live, so the passes over rows skip them (docs/design.md,
 * "What the passes visit"). */
uint64_t dg_cmap_next_row(struct dg_vol *vol, uint64_t row, uint64_t end);
/* Byte offset of slot (0, 1) of the map's first page on a device. */
uint64_t dg_cmap_slot_off(const struct dg_vol *vol, unsigned slot);
/* A copy of init map page p: 1 its seal holds, -EUCLEAN otherwise. */
int dg_cmap_page_check(const struct dg_vol *vol, uint64_t p, const void *page);
void dg_cmap_page_seal(const struct dg_vol *vol, uint64_t p, void *page);

/* ---- ident.c: a new identity (format, rebuild, replace) -------------- */
/* A random (version 4) device or volume uuid. */
void dg_uuid_new(uint8_t u[16]);

/* ---- rebuild.c, replace.c: a device made anew ----------------------- */
/* Open path for writing as a new device of vol: created when absent and
 * grown to the device size (a regular file), refused when smaller (a
 * block device). The caller has proven it blank or this volume's. */
int dg_spare_open(struct dg_vol *vol, const char *path, struct dg_dev *d,
		  char *err, size_t errlen);

/* ---- repair.c: the one repair path (its crash argument is there) ---- */
/* Write len bytes at off of d, durably: bytes proven elsewhere (also
 * onto a device not yet in the volume: the target of a replace). 0, or
 * the error of the store or persist (the volume is latched then). A
 * caller whose own result does not depend on the repair (a read that
 * has its bytes) may drop it, saying so. */
int dg_repair_write_dev(struct dg_vol *vol, struct dg_dev *d, uint64_t off,
			const void *img, size_t len);
/* The same, its persist left to the caller, who makes one over many
 * such stores (dg_dev_persist()) before anything depends on them: only
 * for a device nothing reads back after a crash (a replace's new device,
 * generation 0 until its end: replace.c). */
int dg_repair_store_dev(struct dg_vol *vol, struct dg_dev *d, uint64_t off,
			const void *img, size_t len);
/* Write len bytes at off of dev, durably: bytes proven elsewhere. */
int dg_repair_write(struct dg_vol *vol, unsigned dev, uint64_t off,
		    const void *img, size_t len);
/* The data or parity page (dev, row), proven by its verified checksum. */
int dg_repair_page(struct dg_vol *vol, unsigned dev, uint64_t row,
		   const void *img);
/* May the repair of the fault (dev, row, what), a finding of kind (enum
 * dg_chk_kind), be made? Not on a read-only volume; else as the
 * consent hook says (dg_vol_set_consent). why: what is wrong; action:
 * what the repair would do. */
bool dg_repair_ok(struct dg_vol *vol, int kind, unsigned dev, uint64_t row,
		  enum dg_fault_what what, const char *why,
		  const char *action);

/* ---- ditto.c ---------------------------------------------------------- */
/* vpn has ditto copies (it lies in the metadata zone; without a zone,
 * it is the volume root or allocation bitmap). */
bool dg_ditto_has(const struct dg_vol *vol, uint64_t vpn);
/* Device and device page of copy j (1..ditto_copies) of vpn. */
void dg_ditto_loc(struct dg_vol *vol, uint64_t vpn, unsigned j,
		  unsigned *dev, uint64_t *page);
/* The same through the repair path (repair.c), for a page a repair
 * replaced outside an update; nothing when vpn has no copies. */
int dg_ditto_repair(struct dg_vol *vol, uint64_t vpn, const void *page);
/* Write page as every ditto copy of vpn, adding the ranges to fs: 0, or
 * the first store's error (media.h). */
int dg_ditto_write(struct dg_vol *vol, uint64_t vpn, const void *page,
		   struct dg_flushset *fs);
/* The same where only [lo, hi) of page changed: each copy that holds
 * page's bytes outside it gets only those bytes, any other the whole
 * page; every copy ends equal to page. */
int dg_ditto_write_span(struct dg_vol *vol, uint64_t vpn, const void *page,
			uint32_t lo, uint32_t hi, struct dg_flushset *fs);
/* The data page (dev, row) from a ditto copy that matches csum, its
 * verified checksum; -EIO when none does or it has no copies. */
int dg_ditto_read(struct dg_vol *vol, unsigned dev, uint64_t row,
		  uint64_t csum, void *buf);
/* Device and byte offset (*off) of ditto copy j (1..ditto_copies) of
 * vpn; NULL when that device is missing. */
struct dg_dev *dg_ditto_copy_at(struct dg_vol *vol, uint64_t vpn, unsigned j,
				uint64_t *off);

/* ---- parity.c -------------------------------------------------------- */
int dg_parity_init(struct dg_vol *vol);
void dg_parity_fini(struct dg_vol *vol);
/* parity[j] ^= coef(j, rank) * (old ^ new) over len bytes (len % 32
 * == 0); delta: len bytes of scratch (parity 2 builds old ^ new in it). */
void dg_parity_patch(const struct dg_vol *vol, unsigned rank,
		     const uint8_t *old, const uint8_t *new, uint8_t *delta,
		     size_t len, uint8_t **parity);
/* Compute all parity pages of a row from its k data pages. */
void dg_parity_compute(const struct dg_vol *vol, uint8_t **data,
		       uint8_t **parity, size_t len);
/*
 * Rebuild the pages of a row that are marked lost. pages[] holds k+P
 * page pointers indexed by position (0..k-1 data rank, k+j parity j);
 * lost[] marks those to rebuild; at most P may be lost. -EIO otherwise.
 */
int dg_parity_rebuild(const struct dg_vol *vol, uint8_t **pages,
		      const bool *lost, size_t len);

/* ---- apply.c --------------------------------------------------------- */
/* dg_apply_new() for a caller that already holds the lock of every row
 * the ranges touch, for writing: a check and the update it decides on
 * then see the same row (lost_page.c, trim.c). No hooks; fresh may be
 * NULL (no page new to the update). */
int dg_apply_locked(struct dg_vol *vol, const struct dg_range *r, unsigned n,
		    const bool *fresh);
/* New rows (below) are written in place: not on a degraded volume, nor
 * during a replace. */
bool dg_new_row_allowed(const struct dg_vol *vol);
/* What dg_apply_new() calls, with arg, while it holds the rows' locks:
 * locked() before any range's bytes are read (it may set them: the
 * bitmap's, alloc.c), journaled() once the update's entry is durable. */
struct dg_apply_hooks {
	void (*locked)(void *arg);
	void (*journaled)(void *arg);
	void *arg;
};
/* dg_apply() where fresh[i] says range i's page was allocated by this
 * update, so nothing live is in it (dg_txn_commit(): its own
 * allocations). Whole rows of such pages are written before the journal
 * entry and not copied into it (apply.c, "new rows"). */
int dg_apply_new(struct dg_vol *vol, const struct dg_range *r, unsigned n,
		 const bool *fresh, const struct dg_apply_hooks *hooks);

/* ---- trim.c, blank.c ------------------------------------------------- */
/* Rows given back in one update at most (trim.c): one reservation, one
 * round of zeros and one entry for them all, 3 fences, where journaling
 * the zeros a row at a time took 2 a row. */
#define DG_TRIM_BATCH 64u
/* Rows [row0, row0 + n) given back as zeros, in one update, where every
 * data page of a row is free and in [lo, hi) and the row is not blank
 * already (trim.c): *done of them (n is cut to DG_TRIM_BATCH). 0 or a
 * negative errno. Takes the rows' locks. */
int dg_trim_rows(struct dg_vol *vol, uint64_t row0, unsigned n, uint64_t lo,
		 uint64_t hi, unsigned *done);
/* Pages [start, start + n) were freed by a durable commit, alloc_lock
 * held (alloc.c): true when the blanker's queue took them, to give their
 * rows back blank and then move the allocation cursor back to them;
 * false (blanker off, metadata zone, queue full) and the caller moves
 * it. In alloc.c, so that nothing below the close calls blank.c. */
bool dg_freed_note(struct dg_vol *vol, uint64_t start, uint64_t n);

/* ---- read.c ---------------------------------------------------------- */
/* Read row's pages, verified (repaired where parity allows), into the
 * first k + parity page slots of mem and compute its parity into the
 * next parity slots: pages[] and calc[] point at them. False when a
 * page could not be read (the read path counts it); caller holds the
 * row lock. cur (one per device, or NULL) holds checksum pages looked
 * up under this row's lock. In verify.c; the scrub and fsck share it. */
struct dg_csum_cursor;
bool dg_row_recompute(struct dg_vol *vol, uint64_t row, uint8_t *mem,
		      uint8_t **pages, uint8_t **calc,
		      struct dg_csum_cursor *cur);
/*
 * The row loop the scrub and fsck share (verify.c): every written row
 * under its lock, its pages verified through the read path (repaired
 * when writable) and its parity compared with parity computed from them
 * (recomputed when repair); then the ditto copies. row() reports each
 * written row under its lock: cs the checksums of its pages by device
 * (DG_CSUM_NONE never written, 1 unknown), ok false when a page could
 * not be read (parity not judged), stale the parity pages (bit j) that
 * disagreed, fixed whether they were rewritten. after() runs after
 * each row, outside its lock. 0, or a negative errno.
 */
/* ---- walk.c ---------------------------------------------------------- */
/*
 * The rows of [first, end) in written blocks, in order, for a walk over
 * the whole volume (walk.c); the next DG_WALK_AHEAD written blocks (past
 * end too: the walks by rows go on where they stopped) are asked of the
 * devices (dg_dev_will_need()) as the walk enters each block. After
 * dg_walk_next(), rows [gap, the row returned) were skipped (never
 * written); once it returns false, rows [gap, end).
 */
#define DG_WALK_AHEAD 4u	/* blocks: 8 MiB a device */
struct dg_row_walk {
	struct dg_vol *vol;
	uint64_t row, end;	/* the next row to look at; the end */
	uint64_t gap;		/* first row of the skip just made */
	uint64_t ahead;		/* rows below were asked for */
	uint32_t devs;		/* devices read ahead (default all) */
	struct dg_dev *extra;	/* one more (a replace's new device) */
	/* NULL: every written block; else only those it keeps. */
	bool (*keep)(void *arg, uint64_t index);
	void *arg;
	bool started;
};
void dg_walk_init(struct dg_row_walk *w, struct dg_vol *vol, uint64_t first,
		  uint64_t end);
bool dg_walk_next(struct dg_row_walk *w, uint64_t *row);
/* Ask for the written blocks of rows [row, lim) not asked for yet (the
 * row pass's workers verify a batch of blocks before the walk is
 * there: verify_par.c). */
void dg_walk_ahead(struct dg_row_walk *w, uint64_t row, uint64_t lim);
/* dg_dev_will_need() calls of every device since they were opened. */
uint64_t dg_vol_read_hints(struct dg_vol *vol);

/* ---- verify_par.c ---------------------------------------------------- */
/*
 * True when row verifies as it lies on the media: every written page
 * against cs (its checksums by device, all looked up), hashed where it
 * is mapped, no copy, and the parity computed from the data (into
 * calc_mem, vol->parity pages) equal to the row's parity pages. Nothing
 * noted, nothing repaired: a row that does not verify here goes the
 * whole way of the read path (pass_row()), which finds, reports and
 * repairs exactly as it always did. Reads only: under the row lock, or
 * offline.
 */
bool dg_row_clean(struct dg_vol *vol, uint64_t row, const uint64_t *cs,
		  uint8_t *calc_mem);
/* The pages of rows [r0, r1) of one block on dev that its checksum
 * page e says were written, mapped in at once (dg_dev_map_in()), for a
 * pass about to read them all. */
void dg_rows_map_in(struct dg_vol *vol, unsigned dev, const uint64_t *e,
		    uint64_t r0, uint64_t r1);
#define DG_PAR_BATCH_BLOCKS 4u	/* blocks of rows a worker's share */
struct dg_par;
/* Workers for a row pass, threads of them with this one (0: one a CPU
 * this process may run on, at most DG_PAR_MAX_THREADS); NULL: one
 * thread is enough, or no other could be had. dg_par_verdict() then
 * says whether row was verified clean ahead with the checksums cs. */
struct dg_par *dg_par_start(struct dg_vol *vol, unsigned threads);
void dg_par_stop(struct dg_par *par);
/* From any thread: the workers take no more blocks, this batch's or a
 * later one's (its rows then read as not verified); the one each is on
 * is finished. For a pause, cancel or unmount that waits on the walk.
 * NULL: nothing. */
void dg_par_halt(struct dg_par *par);
/* How many threads verify (this one included); 1 for NULL. */
unsigned dg_par_threads(const struct dg_par *par);
/* The batch of blocks from row's verified by all threads, this one
 * too; the devices asked for them (w) first. */
void dg_par_run(struct dg_par *par, struct dg_row_walk *w, uint64_t row,
		uint64_t end);
bool dg_par_covers(const struct dg_par *par, uint64_t row);
bool dg_par_verdict(const struct dg_par *par, uint64_t row,
		    const uint64_t *cs);

struct dg_row_pass {
	bool repair;
	bool offline;		/* the only writer (fsck) */
	dg_progress_fn progress;
	void *parg;
	void (*row)(void *arg, uint64_t row, const uint64_t *cs, bool ok,
		    unsigned stale, bool fixed);
	void (*after)(void *arg);
	void *arg;
	uint64_t first, end;	/* rows [first, end); end 0: to the last */
	bool rows_only;		/* no ditto pass after the rows */
	/* Out, when set: rows taken from a worker's verdict, rows that
	 * verified in place on the walk's thread (dg_row_clean()). */
	uint64_t *rows_ahead, *rows_in_place;
	/* The caller's workers, kept from one pass to the next (the
	 * daemon's scrub: a pass of a few rows each): they may verify
	 * ahead past end, up to ahead_end (at least end). NULL: offline,
	 * the pass starts its own (vol->check_threads); online, none. */
	struct dg_par *par;
	uint64_t ahead_end;
};
int dg_vol_pass_rows(struct dg_vol *vol, const struct dg_row_pass *p);
/* The parity pages of row, computed from its verified data, then their
 * checksums (a repair: repair.c). Caller holds the row lock. */
int dg_repair_parity(struct dg_vol *vol, uint64_t row, uint8_t *const *calc);
/* Compare every ditto copy with its page (verified); rewrite those that
 * differ when repair. *stale counts them. Takes the row locks. */
int dg_ditto_check(struct dg_vol *vol, bool repair, uint64_t *stale);
/* Read and verify (dev, row) into buf, repairing from the row when the
 * page is bad. Caller holds the row lock for writing (a repair writes).
 * *csum_out gets the page's checksum. */
int dg_page_read_locked(struct dg_vol *vol, unsigned dev, uint64_t row,
			void *buf, uint64_t *csum_out);
/* ---- fault.c --------------------------------------------------------- */
/* Count a fault, keep it in the event ring and log it. */
void dg_fault_note(struct dg_vol *vol, enum dg_fault kind, unsigned dev,
		   uint64_t row, enum dg_fault_what what, const char *action);
/* The same of a checksum page copy at device page page, the event
 * saying whether it is stale (an older generation) or damaged: fsck
 * reports the two as different problems (CSUM_STALE, CSUM_BAD). */
void dg_fault_note_copy(struct dg_vol *vol, enum dg_fault kind, unsigned dev,
			uint64_t page, bool stale, const char *action);
/* Count this thread's faults in rep too (NULL: stop). */
void dg_fault_attribute(struct dg_scrub_report *rep);
/* Whether the page (dev, row) with checksum csum was found lost before
 * (and not forgotten since): it is then met again, not found again. */
bool dg_fault_loss_known(struct dg_vol *vol, unsigned dev, uint64_t row,
			 uint64_t csum);
/* The page was found lost: noted unrecoverable, and remembered. */
void dg_fault_note_loss(struct dg_vol *vol, unsigned dev, uint64_t row,
			enum dg_fault_what what, uint64_t csum,
			const char *action);
/* A known lost page met again: in the ring (marked repeat) and in this
 * thread's scrub report, neither counted nor logged again. */
void dg_fault_note_repeat(struct dg_vol *vol, unsigned dev, uint64_t row,
			  enum dg_fault_what what, const char *action);
/* A known lost page that read back after all: forgotten. */
void dg_fault_loss_forget(struct dg_vol *vol, unsigned dev, uint64_t row);
/* A page that verified: if it was known lost (it has been written
 * since, perhaps with the same bytes), it is forgotten, so that its
 * next loss is a new fault. Costs an atomic load when nothing is lost. */
void dg_fault_loss_verified(struct dg_vol *vol, unsigned dev, uint64_t row);

/* ---- journal.c ------------------------------------------------------- */
int dg_journal_open(struct dg_vol *vol, bool recover);
void dg_journal_close(struct dg_vol *vol);
/* Append an entry to every journal copy and persist it; *seq gets its
 * sequence number. entry holds the header (len, nranges and flags set;
 * magic, seq and csum are filled in here) and the range descriptors; the
 * bytes of range i are read from data[i], not copied first. */
int dg_journal_append(struct dg_vol *vol, struct dg_djentry *entry,
		      const void *const *data, uint64_t *seq);
/* A lean entry's page (format.h, DG_JENTRY_LEAN): its checksum before
 * the entry, and the journal copies that take its bytes. */
struct dg_jlean {
	uint64_t prior;
	uint32_t copies;	/* dg_journal_lean_copies() */
};
/* Copies for the bytes of a lean entry of page (dev, row), a bit each;
 * 0 when the volume takes no lean entry for it. */
uint32_t dg_journal_lean_copies(const struct dg_vol *vol, unsigned dev,
				uint64_t row);
/* dg_journal_append() of a lean entry: one sealed range of a data page
 * outside the metadata zone that held data (lean->prior its checksum). */
int dg_journal_append_lean(struct dg_vol *vol, struct dg_djentry *entry,
			   const void *const *data,
			   const struct dg_jlean *lean, uint64_t *seq);
/* The entry's effects are durable in place: it may be retired. */
void dg_journal_done(struct dg_vol *vol, uint64_t seq);
/* Retire everything completed, writing the header: 0, or its failure
 * (media.h: the volume is latched, the entries stay). */
int dg_journal_checkpoint(struct dg_vol *vol);
size_t dg_journal_max_entry(const struct dg_vol *vol);
bool dg_journal_dirty(struct dg_vol *vol);
/* Whether an entry found in the log at the open names row (its page or
 * its run of rows): its checksum slots may be torn on every copy by the
 * crash (struct dg_journal, cover; journal.c builds it). Inline: the
 * checksum layer asks, below the journal. */
static inline size_t dg_journal_cover_at(const struct dg_vol *vol,
					 uint64_t row)
{
	const struct dg_journal *j = &vol->jrnl;
	size_t lo = 0, hi = j->ncover;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (j->cover[mid] < row)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;	/* the first covered row >= row */
}

static inline bool dg_journal_covers(const struct dg_vol *vol, uint64_t row)
{
	size_t at = dg_journal_cover_at(vol, row);

	return at < vol->jrnl.ncover && vol->jrnl.cover[at] == row;
}

/* Whether the cover names a row in [lo, hi). */
static inline bool dg_journal_covers_any(const struct dg_vol *vol,
					 uint64_t lo, uint64_t hi)
{
	size_t at = dg_journal_cover_at(vol, lo);

	return at < vol->jrnl.ncover && vol->jrnl.cover[at] < hi;
}
/* A journal header slot or entry in area (a copy's journal area read
 * from a device) that verifies with this volume's seed. */
bool dg_journal_marks(const struct dg_vol *vol, const uint8_t *area,
		      uint64_t bytes);
/* The decoders recovery uses, pure over bytes (and fuzzed so):
 * a header slot that belongs to this volume and points inside a log of
 * log_bytes (0; -EBADMSG: checksum; -EUCLEAN otherwise); an entry
 * within avail bytes that is committed (0; -EBADMSG: checksum or a seal
 * fails; -EUCLEAN: its structure does not fit); a range of a committed
 * entry that names a page of this volume (0 or -EUCLEAN). */
int dg_jhead_decode(const struct dg_vol *vol, const void *slot,
		    uint64_t log_bytes, struct dg_djhead *out);
void dg_jhead_seal(const struct dg_vol *vol, struct dg_djhead *h);
int dg_jentry_decode(const struct dg_vol *vol, const void *p, uint64_t avail);
/* JOURNAL_V2: the bytes of entry e (whose metadata decoded) as the copy
 * of it at copy holds them verify (bytes_csum, seals); without it, true
 * (dg_jentry_decode() checked them). */
bool dg_jentry_bytes_ok(const struct dg_vol *vol, const struct dg_djentry *e,
			const void *copy);
/* Bytes of an entry before its range bytes: header, descriptors and,
 * with JOURNAL_V2, bytes_csum. */
size_t dg_jentry_meta_len(const struct dg_vol *vol, uint32_t nranges);
/* The checksum a committed entry carries; only for an entry whose
 * structure fits (dg_jentry_decode() says -EBADMSG, not -EUCLEAN). */
uint64_t dg_jentry_csum(const struct dg_vol *vol, const struct dg_djentry *e);
int dg_jrange_check(const struct dg_vol *vol, const struct dg_djrange *r);
/* Pages a replay may expand from runs of rows (DG_JRANGE_ROWS), all its
 * entries together: twice as many as the log could name a range a page
 * (why twice: journal.c). */
uint64_t dg_jrange_budget(const struct dg_vol *vol);
/* The pages e's runs of rows name, taken from *left (what the entries
 * before it in the log left of dg_jrange_budget()); -EUCLEAN past it,
 * or for a run that is invalid or not after the entry's previous one. */
int dg_jentry_pages_take(const struct dg_vol *vol, const struct dg_djentry *e,
			 uint64_t *left);
/* Write a fresh, empty journal header to every copy (mkfs): 0 or the
 * first failure. */
int dg_journal_format(struct dg_vol *vol);
/* The checksum that seals a journal header (fsck checks and writes
 * headers too). */
uint64_t dg_jhead_csum(const struct dg_vol *vol, const struct dg_djhead *h);

/* ---- alloc.c --------------------------------------------------------- */
int dg_alloc_load(struct dg_vol *vol);
/* Write the volume root and first bitmap page (mkfs). */
int dg_alloc_format(struct dg_vol *vol);
void dg_alloc_fini(struct dg_vol *vol);
/* The fewest pages dg_alloc_rows() gives a band for. */
uint64_t dg_alloc_band_pages(const struct dg_vol *vol);

/* ---- txn.c, alloc.c: a transaction's record -------------------------- */
/* Its writes (txn.c) and the allocator's allocations and frees in it
 * (alloc.c). */
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
	bool frees_rewritten;	/* dg_txn_frees_rewritten() */
	/* On vol->alloc_pending while it holds allocations its commit has
	 * not made durable (alloc.c, bitmap_fill()). By alloc_lock. */
	bool pending;
	struct dg_txn *pend_prev, *pend_next;
};

/* t's allocations are durable or undone: off vol->alloc_pending. */
void dg_alloc_settled(struct dg_txn *t);

static inline int dg_grow(void **p, unsigned *cap, unsigned n, size_t size)
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

/* The allocator's side of a commit (alloc.c): the allocations of a txn that was not committed go back. */
void dg_alloc_undo(struct dg_txn *t);
/* 0, or corrupt when a page t frees is free already. */
int dg_alloc_check_frees(struct dg_txn *t);
/* The hooks dg_apply_new() calls: the bitmap bytes t writes, filled
 * under their rows' locks, and t's frees once its entry is durable. */
struct dg_apply_hooks dg_alloc_hooks(struct dg_txn *t);

#endif /* DG_ENGINE_I_H */
