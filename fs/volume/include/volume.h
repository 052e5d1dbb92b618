/* SPDX-License-Identifier: MIT */
/* volume.h -- the daxguard volume layer: what its clients call */
#ifndef DG_ENGINE_H
#define DG_ENGINE_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "format.h"
#include "media_counts.h"

struct dg_vol;

/* ---- logging (log.c) ------------------------------------------------ */

enum dg_log_level {
	DG_LOG_ERR = 3,
	DG_LOG_WARNING = 4,
	DG_LOG_NOTICE = 5,
	DG_LOG_INFO = 6,
	DG_LOG_DEBUG = 7,
};
typedef void (*dg_log_func)(enum dg_log_level level, const char *fmt,
			    va_list ap);
/* Route all engine messages to func (NULL: stderr). */
void dg_log_set_func(dg_log_func func);
/* Messages above this level are dropped before formatting. */
void dg_log_set_level(enum dg_log_level level);
void dg_log(enum dg_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A volume's messages go to its own sink once set here (func NULL:
 * stderr), at up to level; until then, and for what is said outside any
 * volume, to the process's above. Call before other threads use vol. */
void dg_vol_set_log(struct dg_vol *vol, dg_log_func func,
		    enum dg_log_level level);
/* Say something about vol (NULL: the process's sink). */
void dg_vol_log(const struct dg_vol *vol, enum dg_log_level level,
		const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- formatting (newvol.c) ------------------------------------------ */

struct dg_format_opts {
	unsigned parity;	 /* 0..2 */
	bool no_redundancy;	 /* --redundancy none */
	uint32_t chunk_pages;	 /* 0: default */
	uint64_t size;		 /* bytes to create/extend files to; 0: as is */
	bool force;		 /* overwrite an existing volume */
	const char *label;	 /* may be NULL */
	uint64_t meta_size;	 /* bytes of the metadata zone, rounded up
				    to whole chunks of rows; 0: default */
	bool no_meta_zone;	 /* the layout without a zone (format.h):
				    readable by daxguard before META_ZONE */
	bool lean_journal;	 /* --lean-journal: whole-page overwrites
				    journal their bytes on parity copies
				    (format.h DG_JENTRY_LEAN); needs parity */
	bool remap;		 /* --remap: whole-page overwrites go to
				    blank pages, with remap pages (format.h
				    DG_FEAT_INCOMPAT_REMAP); parity 1 on three
				    devices or more only */
	bool whole_seal;	 /* checksum pages sealed whole, the form
				    before DG_FEAT_INCOMPAT_LINE_SEAL: a
				    volume daxguard before it reads (tests
				    of that form) */
	/* The volume's uuid (and so its checksum seed); NULL: a random one.
	 * Two volumes made with one uuid seal their pages alike: the fuzz
	 * harnesses' seed pages verify in a volume made afresh. */
	const uint8_t *uuid;
};

/* Summary returned by dg_format() (fsys.h) and dg_vol_get_info(). */
struct dg_vol_info {
	uint8_t uuid[16];
	char label[64];
	unsigned ndev;		/* devices in the volume */
	unsigned present;	/* devices that opened */
	unsigned parity;
	bool no_redundancy;
	bool degraded;		/* a device is missing or stale */
	bool read_only;		/* opened so, or latched by a failure: */
	char failed[160];	/* why it was latched read-only ("": not) */
	uint32_t missing_mask;	/* bit d: device d missing/stale/unusable */
	uint32_t suspect_mask;	/* bit d: device d stale but used page by
				 * page (DG_OPEN_SUSPECT) */
	uint32_t found_mask;	/* bit d: ... because no superblock of it
				 * verified and its pages named it */
	uint32_t chunk_pages;
	uint64_t dev_pages;
	uint64_t rows;
	uint64_t vpns;		/* data pages */
	uint64_t free_vpns;	/* unallocated data pages */
	uint64_t generation;
	uint64_t csum_pages;	/* per device, each of checksum and replica */
	uint64_t jrnl_pages;
	uint64_t cmap_start;	/* device page of init map slot 0's first */
	uint32_t cmap_pages;	/* pages of one slot (slot 1 follows) */
	uint64_t zone_vpns;	/* metadata zone: vpns [0, zone_vpns) */
	uint64_t zone_free;	/* unallocated pages in the zone */
	unsigned ditto_copies;	/* copies of each zone page beside it */
	uint64_t meta_spill;	/* metadata pages put outside a full zone
				   since the open (no copies) */
	uint64_t rows_full;	/* rows updates wrote whole (parity from
				   the new data alone) since the open */
	uint64_t rows_patched;	/* rows they patched (old data and parity
				   read) since the open */
	uint64_t rows_new;	/* of rows_full, rows new to their update:
				   their bytes not in the journal */
	uint64_t rows_lone;	/* rows written so with an update's pages
				   and free blank pages beside (a small
				   write into a row that holds nothing) */
	uint64_t holes_filled;	/* rows written so with an update's pages
				   into blank holes beside pages in use,
				   their parity patched (apply.c) */
	uint64_t rows_blanked;	/* rows the blanker gave back as zeros
				   since the open (dg_vol_blank_start()) */
	uint64_t blank_pending;	/* freed pages whose rows it has still to
				   look at */
	uint64_t blank_dropped;	/* runs of freed pages it had no room for
				   (left to fstrim) */
	uint64_t updates_split;	/* updates whose old pages two threads
				   read and verified, since the open */
	uint64_t appends_waited; /* journal appends that waited for an
				    earlier entry still being written */
	uint64_t appends_grouped; /* journal entries made durable in a
				     round another append led (group
				     commit), since the open */
};

/* Format devs as one volume: superblocks, checksum areas, journal, the
 * volume root and an empty allocation bitmap. Regular files are created
 * or extended to opts->size. Refuses (-EEXIST) to overwrite a daxguard
 * volume unless opts->force. Work is proportional to the metadata, not
 * the size. On success *volp is the new volume, open for writing, for
 * the layer above to add its own root (dg_format(), fsys.h, does both). */
int dg_vol_format(const char *const *devs, unsigned ndev,
		  const struct dg_format_opts *opts, struct dg_vol **volp);

/* ---- open / close (vol.c, marks.c, scratch.c) --------------------------- */

#define DG_OPEN_RDONLY	 (1u << 0) /* no writes at all, shared lock */
#define DG_OPEN_NORECOVER (1u << 1) /* do not replay the journal */
#define DG_OPEN_DEGRADED (1u << 2) /* allow missing devices parity covers */
#define DG_OPEN_NOLOCK	 (1u << 4) /* read-only, even while mounted elsewhere */
#define DG_OPEN_FORMAT	 (1u << 3) /* internal to dg_vol_format(): no root yet */
/* Devices whose superblocks are behind the volume's generation (they
 * lost writes, their superblock updates among them) are used page by
 * page, when leaving them out would leave more devices missing than
 * parity covers: a page of theirs counts only where it verifies against
 * the newest checksum copy, as any page of any device (integrity.md).
 * The volume is read-only and their superblocks stay as found, unless
 * DG_OPEN_REPAIR is given too (fsck -y, which checks every page of
 * theirs and then takes them back: dg_vol_accept_suspects()). */
#define DG_OPEN_SUSPECT	 (1u << 5)
#define DG_OPEN_REPAIR	 (1u << 6)
/* With DG_OPEN_DEGRADED: a volume with devices missing (within parity)
 * opens for writing. Every update then keeps the missing devices'
 * pages recoverable from parity and their checksums current on the
 * copies that remain (apply.c, "degraded rows"), so a later rebuild
 * (fsck -y, daxguard-ctl replace) restores them exactly. The missing
 * devices' superblocks fall behind the generation: they come back only
 * through a rebuild. Without it a degraded volume is read-only. */
#define DG_OPEN_DEGRADED_RW (1u << 7)
/* Every device mapped copy-on-write (scratch.c): the open replays the
 * journal and makes its repairs as a writable one does, into this
 * process's memory only; nothing is ever written to the devices. For
 * fsck -n on a volume whose journal needs recovery. */
#define DG_OPEN_SCRATCH (1u << 8)
/* From now on the volume takes no updates and makes no repairs, as a
 * read-only open (a scratch view once its journal is replayed). */
void dg_vol_make_read_only(struct dg_vol *vol);

/*
 * Open a volume from its device paths, in any order (the superblocks
 * say which is which). A path may be NULL or "" for a missing device.
 * On success *volp is set; on failure a negative errno and, when errbuf
 * is not NULL, a one-line reason in errbuf. Specific errors:
 *   -ENODEV   a device carries no daxguard superblock (foreign/blank)
 *   -EXDEV    devices from different volumes
 *   -ENXIO    devices missing beyond what parity covers
 *   -ESTALE   a device is stale and cannot be left out
 *   -EFBIG/-ENOSPC  a device is truncated
 *   -EOPNOTSUPP  unknown incompatible feature or version
 *   -EBUSY    the volume is open elsewhere (images are locked)
 *   -EUCLEAN  a superblock fails validation
 * A volume opens degraded only with DG_OPEN_DEGRADED.
 */
int dg_vol_open(const char *const *devs, unsigned ndev, unsigned flags,
		struct dg_vol **volp, char *errbuf, size_t errlen);
/* True when path, whatever its superblocks hold, carries structures
 * sealed with this volume's identity (an init map slot, a checksum page
 * copy, a journal header or entry, or a page matching its verified,
 * address-seeded checksum): one of its devices whose superblocks were
 * lost. */
bool dg_vol_marks_on(struct dg_vol *vol, const char *path);
/* After every page of the suspect devices (DG_OPEN_SUSPECT) was checked
 * and repaired where it could be: they are devices like the others from
 * now on, their superblocks rewritten. Returns how many were taken back,
 * -EROFS on a read-only volume. */
int dg_vol_accept_suspects(struct dg_vol *vol);
/* Persist, mark clean (if writable) and release. NULL is fine. */
int dg_vol_close(struct dg_vol *vol);
void dg_vol_get_info(struct dg_vol *vol, struct dg_vol_info *info);
/* What the media was asked to do since the open (media_counts.h): the
 * volume's total, and when per_dev is not NULL each device index's
 * (per_dev[0, ndev); zero for a missing device). A device rebuilt or
 * replaced in brings its own counts, from its own open. */
void dg_vol_media_counts(struct dg_vol *vol, struct dg_media_counts *total,
			 struct dg_media_counts *per_dev);

/* ---- data access (read.c, apply.c, vol.c, csum_cache.c) ----------------- */

/* A change to one data page: len bytes at off within page vpn. */
struct dg_range {
	uint64_t vpn;
	uint32_t off;
	uint32_t len;
	const void *data;
};

/*
 * The one update path. Applies all ranges atomically: journal, data,
 * page checksums, parity, persist (docs/design.md "The update path"). Old contents are verified
 * (and repaired) before they are folded into parity. Ranges may not
 * cross a page boundary; several may hit the same page (later wins).
 * Returns 0, -EIO when an old page cannot be verified or repaired,
 * -EROFS after a persist failed (the volume is latched read-only; why:
 * dg_vol_info.failed) or on a read-only volume, -EIO when this update's
 * own persist failed (it stays in the journal: the next open redoes it),
 * -EINVAL for bad ranges, -E2BIG when the set does not fit the journal.
 */
int dg_apply(struct dg_vol *vol, const struct dg_range *ranges, unsigned n);
/* Largest payload one dg_apply() can carry. */
size_t dg_apply_max_bytes(struct dg_vol *vol);

/* Hook for mapped files (libcommit): called under the page lock for each
 * page an update changes, with the old and new page images and the
 * line-aligned span [lo, hi) outside which the page did not change;
 * oldpg holds the old bytes of that span only, and is NULL when the
 * update overwrote the page whole without reading it. */
typedef void (*dg_page_hook)(void *arg, uint64_t vpn, const void *oldpg,
			     const void *newpg, uint32_t lo, uint32_t hi);
void dg_vol_set_page_hook(struct dg_vol *vol, dg_page_hook hook, void *arg);

/*
 * The one read path. Reads npages whole pages from vpn on into buf,
 * verifying every page; a mismatch is repaired from parity (and the
 * repair written back) before data is returned. -EIO when a page cannot
 * be verified or repaired: never unverified bytes.
 */
int dg_read(struct dg_vol *vol, uint64_t vpn, uint64_t npages, void *buf);
/* Bytes within one page. */
int dg_read_bytes(struct dg_vol *vol, uint64_t vpn, uint32_t off,
		  uint32_t len, void *buf);

/* Make everything applied so far durable and retire the journal; -EIO
 * once a persist has failed (as fsync after a write-back error). */
int dg_vol_sync(struct dg_vol *vol);

/*
 * Keep verified checksum pages in memory (up to max_bytes of them), so
 * reads and updates stop re-reading and re-hashing them (csum_cache.c
 * says what stays verified). For a long-lived owner of the volume, the
 * daemon; call before other threads use vol. Tools that write checksum
 * pages directly (fsck) must not turn it on.
 */
int dg_vol_cache_csum_pages(struct dg_vol *vol, size_t max_bytes);

/* ---- allocation (alloc.c, apply.c) -------------------------------------- */

/*
 * Allocation changes ride on the caller's update: dg_alloc() picks free
 * vpns and marks them in core, appending the bitmap change to *txn so the
 * caller commits it in the same dg_apply() as the metadata that uses
 * them. dg_txn_free() of a transaction never committed undoes the
 * in-core marking. Extents stay within one device's chunk where they can.
 */
struct dg_txn;
struct dg_txn *dg_txn_new(struct dg_vol *vol);
void dg_txn_free(struct dg_txn *txn);
/* Buffer a write; data is copied. */
int dg_txn_write(struct dg_txn *txn, uint64_t vpn, uint32_t off,
		 const void *data, uint32_t len);
/* Buffer a write without copying: data must stay valid until commit. */
int dg_txn_write_ref(struct dg_txn *txn, uint64_t vpn, uint32_t off,
		     const void *data, uint32_t len);
/* Commit every buffered write with one dg_apply(); the txn is reset. */
int dg_txn_commit(struct dg_txn *txn);
/* The pages txn frees are rewritten by it into new rows (a large
 * overwrite moved, file.c relocate()): under -o discard they are not
 * given back as zeros (blank.c) -- the large writes that take such
 * space again write whole rows and need none -- and the allocation
 * cursor comes back to them at once. Until the txn is reset. */
void dg_txn_frees_rewritten(struct dg_txn *txn);
/* Allocate up to want contiguous vpns of file data near hint, outside
 * the metadata zone while there is room there; *got >= 1 on success. */
int dg_alloc(struct dg_txn *txn, uint64_t hint, uint64_t want,
	     uint64_t *start, uint64_t *got);
/*
 * The fewest pages a write needs to get whole rows (dg_alloc_rows())
 * while an update that fills whole rows of pages it allocated writes
 * them without copying their bytes into the journal (apply.c, "new
 * rows"); else 0 (no such feature, no parity, a degraded volume, a
 * replace under way). The filesystem then moves the pages a large
 * overwrite covers to new rows (file.c). A hint: the update decides
 * again.
 */
uint64_t dg_vol_new_row_min(struct dg_vol *vol);
/* Whether a whole page written into a blank page now goes without a
 * journal copy (apply.c: lone rows, holes filled): parity 1 with its
 * checksum copies together, not degraded, no replace under way. A hint:
 * the update decides again, page by page. */
bool dg_vol_blank_page_alone(struct dg_vol *vol);
/* The fewest pages, scattered over a file, that are moved to a band of
 * their own (dg_alloc_band(), the writeback hold: file.c): 8 rows'
 * worth; 0 when new rows are not written (as above). */
uint64_t dg_vol_scatter_min(struct dg_vol *vol);
/* A run of vpns. */
struct dg_vrun {
	uint64_t vpn, n;
};
/*
 * File data for want pages, laid out so that a write of them fills
 * whole rows: up to k runs, to be used in this order, on the same rows of
 * the k data devices of one chunk group. Such a write computes parity
 * from its new data alone (apply.c: nothing old is read or verified), and
 * so does every later write of the same range. With no parity, fewer
 * pages than a band is worth (alloc.c), or no free rows near hint, one
 * run as dg_alloc() gives. *nruns >= 1 runs (room for DG_MAX_DEVS) with
 * 1 to want pages; on failure the runs it did allocate (0: none).
 */
int dg_alloc_rows(struct dg_txn *txn, uint64_t hint, uint64_t want,
		  struct dg_vrun *runs, unsigned *nruns);
/*
 * The same for pages that are not worth k extents for their own sake
 * but are worth whole rows (the writeback hold's scattered pages,
 * file.c): a band however few pages want, of every row they need or of
 * at least 8 rows, else -ENOSPC with *nruns 0 and nothing allocated
 * (no plain run: pages on partial rows would gain nothing from moving).
 */
int dg_alloc_band(struct dg_txn *txn, uint64_t hint, uint64_t want,
		  struct dg_vrun *runs, unsigned *nruns);
/* The same for metadata (inode table, directories, extent pages, xattr
 * and symlink pages): in the metadata zone, whose pages have ditto
 * copies; outside it only when the zone is full (counted). */
int dg_alloc_meta(struct dg_txn *txn, uint64_t hint, uint64_t want,
		  uint64_t *start, uint64_t *got);
/* Where a new file of pages pages should start: the allocation cursor,
 * which then moves past that span, so a file filled out of order (a
 * sparse file written at random) finds its pages' places still free
 * and ends up contiguous. Only a hint for dg_alloc(). */
uint64_t dg_alloc_home(struct dg_vol *vol, uint64_t pages);
/* Exactly want contiguous vpns, or -ENOSPC; meta: from the zone first. */
int dg_alloc_exact(struct dg_txn *txn, uint64_t want, bool meta,
		   uint64_t *start);
int dg_free(struct dg_txn *txn, uint64_t start, uint64_t n);
/* A free data page near the allocation cursor that is blank (zeros under
 * the checksum of zeros, or never written), as a hint for dg_alloc(): a
 * whole page written into it needs no journal copy; 0 when none is
 * near. */
uint64_t dg_alloc_blank_hint(struct dg_vol *vol);
/* Whether txn allocated vpn (a page that holds nothing of the file's
 * before the commit). */
bool dg_txn_allocated(const struct dg_txn *txn, uint64_t vpn);
bool dg_vpn_allocated(struct dg_vol *vol, uint64_t vpn);
/* The first vpn in [vpn, end) marked in use, else end (fsck walks the
 * bitmap by words with it rather than vpn by vpn). */
uint64_t dg_vpn_next_allocated(struct dg_vol *vol, uint64_t vpn,
			       uint64_t end);
uint64_t dg_free_vpns(struct dg_vol *vol);
/* vpns [0, this) hold the volume root and the allocation bitmap; 0
 * when the bitmap is not loaded (DG_OPEN_FORMAT). */
uint64_t dg_alloc_meta_vpns(struct dg_vol *vol);
/* Where vpn's bit lives: bitmap page bvpn, byte off, which now holds
 * byte (for daxguard-inject's logical faults). */
void dg_alloc_bit(struct dg_vol *vol, uint64_t vpn, uint64_t *bvpn,
		  uint32_t *off, uint8_t *byte);
/* fsck: mark vpn used or free, in core and on the media (one update),
 * whatever the bitmap said. */
int dg_alloc_mark(struct dg_vol *vol, uint64_t vpn, bool used);

/* ---- redundancy checks (verify.c, fault.c, scrub_rec.c, replace.c,
 * lost_page.c, trim.c) ----- */

enum dg_fault {
	DG_FAULT_DETECTED,	/* a page failed verification */
	DG_FAULT_REPAIRED,	/* ... and was repaired */
	DG_FAULT_UNRECOVERABLE, /* ... and could not be */
	DG_FAULT_RECOVERED,	/* ... was rebuilt for the reader, but the
				 * media left as it was: a read-only volume,
				 * or a repair fsck's user declined */
	DG_FAULT_NR,
};
/* "detected", "repaired", "unrecoverable", "recovered". */
const char *dg_fault_name(enum dg_fault kind);
/* What a fault hit. Where `row` of an event points depends on it: a data
 * row (DATA, PARITY), a checksum page index with dev its owner
 * (CSUM_PAGE), or a device page (CSUM_COPY, CMAP, DITTO). */
enum dg_fault_what {
	DG_WHAT_DATA,		/* a data page of a row */
	DG_WHAT_PARITY,		/* a parity page of a row */
	DG_WHAT_CSUM_PAGE,	/* a checksum page: no copy verifies */
	DG_WHAT_CSUM_COPY,	/* one copy of a checksum page */
	DG_WHAT_CMAP,		/* a copy of the checksum-page init map */
	DG_WHAT_DITTO,		/* a ditto copy of a metadata zone page */
	DG_WHAT_NR,
};
/* "data", "parity", "csum-page", "csum-copy", "cmap", "ditto". */
const char *dg_fault_what_name(enum dg_fault_what what);
void dg_vol_fault_counts(struct dg_vol *vol, uint64_t counts[DG_FAULT_NR]);
/* Counters of one device, as zpool status shows them: pages its media
 * could not serve (read_errors; the pages of a missing or stale device
 * come from the rest of their rows and are not counted: absence is not
 * a read error, the device's state says it), pages of it that failed their
 * checksum (csum_errors; a checksum page that no copy verifies counts
 * on its owner), and of those, repaired and unrecoverable. */
struct dg_dev_counts {
	uint64_t read_errors, csum_errors, repaired, unrecoverable;
};
void dg_vol_dev_counts(struct dg_vol *vol, unsigned dev,
		       struct dg_dev_counts *c);
/* Path of a device of the volume (NULL when missing). */
const char *dg_vol_dev_path(struct dg_vol *vol, unsigned dev);
/* Why device dev is missing when the open knows more than "absent": a
 * sentence naming the path that stood in its place ("'x' is a copy of
 * device 3 ('y'): ..."); NULL otherwise. */
const char *dg_vol_missing_why(struct dg_vol *vol, unsigned dev);

/* The most recent fault events (a ring of DG_FAULT_RING), so a daemon
 * can report each one with the file it hit, outside the engine's locks. */
#define DG_FAULT_RING 256u
struct dg_fault_event {
	uint64_t seq;		/* 1, 2, ... */
	enum dg_fault kind;
	unsigned dev;
	uint64_t row;		/* data row, or as enum dg_fault_what says */
	enum dg_fault_what what;
	char action[48];
	/* A lost page met again (the same page, the same checksum): it
	 * was counted and logged when first found; not again. */
	bool repeat;
	/* Met by a scrub (dg_fault_attribute), not by a reader. */
	bool by_scrub;
	/* A checksum page copy of an older generation (lost writes),
	 * not a damaged one (CSUM_COPY only). */
	bool stale;
};
/* Copy events newer than since, oldest first; returns how many. */
unsigned dg_vol_fault_events(struct dg_vol *vol, uint64_t since,
			     struct dg_fault_event *out, unsigned max);
/* Forget the lost pages found so far (zpool clear): the next read or
 * scrub that meets one finds, counts and logs it again. */
void dg_vol_fault_forget(struct dg_vol *vol);

struct dg_scrub_report {
	uint64_t rows_checked;	/* rows with at least one written page */
	uint64_t detected;	/* pages (or checksum pages) that failed */
	uint64_t repaired;	/* ... and were repaired */
	uint64_t unrecoverable; /* ... and could not be */
	uint64_t parity_mismatch; /* rows whose parity disagreed with data */
	uint64_t parity_fixed;	/* ... and were recomputed */
	/* Of rows_checked: verified clean ahead by the threads of a
	 * scrub with more than one (dg_vol_scrub_threads()). */
	uint64_t rows_ahead;
};
typedef void (*dg_progress_fn)(void *arg, uint64_t done, uint64_t total);
/*
 * Check every written row: each page against its checksum (repairing
 * from parity through the read path when writable) and the parity
 * against the verified data (recomputed when repair is set), then the
 * ditto copies. Never writes on a read-only volume.
 */
int dg_vol_scrub(struct dg_vol *vol, bool repair, struct dg_scrub_report *rep,
		 dg_progress_fn progress, void *arg);
/*
 * The same, of rows [first, end) only, adding to *rep (zero it first):
 * a background scrub goes a few rows at a time, taking each row's lock
 * only while it checks that row, so reads and writes go on beside it.
 * The faults counted are the ones this thread met, not a concurrent
 * reader's. dg_vol_scrub_ditto() is the ditto pass that ends a scrub.
 */
int dg_vol_scrub_rows(struct dg_vol *vol, bool repair, uint64_t first,
		      uint64_t end, struct dg_scrub_report *rep);
/*
 * Threads that verify the rows ahead of a background scrub, kept from
 * one batch of rows to the next (starting them for a few rows would
 * cost more than they save): threads of them with the scrub's own (0:
 * one a CPU this process may run on, at most DG_PAR_MAX_THREADS,
 * check.h). NULL: one thread (threads 1, or no other could be had).
 * Each row is verified under its lock; what the scrub finds, repairs
 * and reports, and in which order, is the same with any number of them
 * (verify_par.c says why).
 */
struct dg_par;
struct dg_par *dg_vol_scrub_threads(struct dg_vol *vol, unsigned threads);
void dg_vol_scrub_threads_stop(struct dg_par *par);
/* From any thread, par still started: its threads take no more blocks
 * of rows (the one each is on, at most DG_CSUMS_PER_PAGE rows, is
 * finished), so a scrub asked to pause or stop is not held up by a
 * batch of theirs; the rows they leave the scrub checks itself, one
 * thread. For good: a halted par verifies nothing more ahead. NULL:
 * nothing. */
void dg_vol_scrub_threads_halt(struct dg_par *par);
/* How many threads verify (the scrub's included); 1 for NULL. */
unsigned dg_vol_scrub_threads_n(const struct dg_par *par);
/* dg_vol_scrub_rows() with par's threads (NULL: none), which may verify
 * rows ahead up to ahead_end (past end: the batches that follow). */
int dg_vol_scrub_rows_par(struct dg_vol *vol, bool repair, uint64_t first,
			  uint64_t end, struct dg_par *par, uint64_t ahead_end,
			  struct dg_scrub_report *rep);
/* The first row in [row, end) of a block the checksum-page init map
 * says was written, else end: the rows before it were never written,
 * and the row passes skip them (docs/design.md, "What the passes
 * visit"). The daemon's scrub and replace stretch a batch over them. */
uint64_t dg_vol_next_used_row(struct dg_vol *vol, uint64_t row,
			      uint64_t end);
int dg_vol_scrub_ditto(struct dg_vol *vol, bool repair,
		       struct dg_scrub_report *rep);
/* How many rows of [first, end) lie in blocks the init map says were
 * written: the rows a pass over them visits (walk.c). The progress of
 * the daemon's replace counts these, not blank rows. */
uint64_t dg_vol_used_rows(struct dg_vol *vol, uint64_t first, uint64_t end);

/*
 * Where a background scrub stands, kept in the volume root (struct
 * dg_dscrub, format.h) so a scrub paused, unmounted or cut short by a
 * crash resumes where it was. Saved through the update path.
 */
enum dg_scrub_state {
	DG_SCRUB_NONE,		/* never ran, or the record was lost */
	DG_SCRUB_RUNNING,	/* at a crash or unmount: resume it */
	DG_SCRUB_PAUSED,
	DG_SCRUB_CANCELLED,
	DG_SCRUB_FINISHED,
};
struct dg_scrub_rec {
	enum dg_scrub_state state;
	uint64_t next_row;	/* first row not yet checked */
	uint64_t started;	/* seconds since the epoch */
	uint64_t ended;		/* finished or cancelled at; 0 otherwise */
	uint64_t run_ms;	/* time spent running, pauses excluded */
	uint64_t rate;		/* bytes per second asked for; 0 unlimited */
	struct dg_scrub_report rep;
};
/* 0 and the record (state NONE when none was ever saved); -EIO when the
 * root cannot be read. */
int dg_vol_scrub_load(struct dg_vol *vol, struct dg_scrub_rec *rec);
/* Through dg_apply(): -EROFS on a read-only volume. */
int dg_vol_scrub_save(struct dg_vol *vol, const struct dg_scrub_rec *rec);

/*
 * Online replace (replace.c): rebuild device dev of a mounted volume onto
 * a new path while reads and updates go on, row by row under each row's
 * lock. A missing device's new one is filled in place of it (its rows
 * read as missing until rebuilt); a present device's new one gets every
 * write of the old one besides the rebuild (a mirror). At the end the new
 * device takes the slot: its superblocks are written with a new
 * generation, so the old device, if any, is stale from then on.
 */
enum dg_replace_state {
	DG_REPLACE_NONE,	/* never ran, or the record was lost */
	DG_REPLACE_RUNNING,	/* at a crash or unmount: resume it */
	DG_REPLACE_FINISHED,
	DG_REPLACE_FAILED,	/* stopped by an error (see the log) */
};
struct dg_replace_rec {
	enum dg_replace_state state;
	unsigned dev;
	uint64_t next_row;	/* rows [0, next_row) done */
	uint64_t started, ended; /* seconds since the epoch */
	uint64_t rate;		/* bytes per second asked for; 0 unlimited */
	uint64_t pages;		/* pages written to the new device */
	uint64_t lost;		/* pages that could not be rebuilt */
	uint64_t stale;		/* stale copies not copied but rebuilt */
	char path[1024];	/* the new device ("" when none) */
};
/* 0 and the record (state NONE when none was saved); -EIO when the root
 * cannot be read. A RUNNING record whose path the superblocks no longer
 * name was finished (the crash came between the two): FINISHED. */
int dg_vol_replace_load(struct dg_vol *vol, struct dg_replace_rec *rec);
/* Through dg_apply(), like the scrub's; -EROFS read-only. */
int dg_vol_replace_save(struct dg_vol *vol, const struct dg_replace_rec *rec);
/*
 * Start (or, resume, go on with) replacing device dev by path: refuses
 * a path that holds anything but nothing, zeros, or this volume's own
 * device dev (a replace cut short), with the reason in err, writing
 * nothing; creates or grows a file to the device size; puts the new
 * device's superblocks (stale until the end), the superblocks' path,
 * and every checksum copy, init map and journal copy of the slot on it.
 * -EBUSY a replace runs; -EROFS read-only; -ENXIO no parity to rebuild
 * a missing device from; -EINVAL bad dev or path; -EEXIST refused path.
 */
int dg_vol_replace_begin(struct dg_vol *vol, unsigned dev, const char *path,
			 bool resume, char *err, size_t errlen);
/* The rows [first, end): each page of the device made exact on the new
 * one, under its row's lock. Adds to *pages (written) and *lost (pages
 * that could not be rebuilt, left as they are). */
int dg_vol_replace_rows(struct dg_vol *vol, uint64_t first, uint64_t end,
			uint64_t *pages, uint64_t *lost);
/* Copies of the old device that were stale and were written to the new
 * one from the newest verified copy instead (checksum-page copies at the
 * begin, ditto copies with their rows), since the last call. */
uint64_t dg_vol_replace_take_stale(struct dg_vol *vol);
/* After every row: the ditto copies, then the new device takes the slot
 * and every superblock is written. */
int dg_vol_replace_finish(struct dg_vol *vol, char *err, size_t errlen);
/* Stop without finishing (unmount, error): the new device is let go;
 * the record stays as saved, so a RUNNING one resumes. */
void dg_vol_replace_abort(struct dg_vol *vol);
/* The device being replaced, or -1. */
int dg_vol_replacing(struct dg_vol *vol);

/*
 * Give a data page that failed beyond parity fresh contents (zeros) once
 * no file holds it, on a mounted volume, without stopping its readers
 * or writers (lost_page.c says why that is safe). 0 done; -EBUSY the page
 * is in use; -EIO another page in use in its row cannot be read;
 * -EROFS read-only or degraded; -EINVAL not a data page.
 */
int dg_vol_reset_lost_page(struct dg_vol *vol, uint64_t vpn);
/* The same, the one function both use, with used (NULL: none) naming
 * pages in use beyond what the allocation bitmap says: fsck passes what
 * a structure points at, so that a page a file still maps is never
 * zeroed. Logs nothing (the caller reports). */
typedef bool (*dg_vpn_used_fn)(const void *arg, uint64_t vpn);
int dg_vol_reset_free_page(struct dg_vol *vol, uint64_t vpn,
			   dg_vpn_used_fn used, const void *arg);

/*
 * The registry of lost data pages (lost_reg.c): each data page a fault
 * found beyond parity, with the file page it was then (what status
 * names), and the one decision when such a page is reset: once no file
 * holds it. The daemon schedules the calls and reports what they did.
 * Which file holds a page is the filesystem's answer, given by it
 * (dg_fs_open() sets it, dg_fs_close() takes it back): 0 and the file
 * page, -EAGAIN when it cannot tell yet (the page is in use but no file
 * at hand maps it: the filesystem keeps only some inodes in core), or
 * another nonzero when no file maps vpn. A page not known is never
 * reset: it waits for dg_vol_lost_resolve(). Without one nothing is
 * listed or reset.
 */
struct dg_lost_page {
	uint64_t vpn, ino, fpage;
};
typedef int (*dg_vpn_owner_fn)(void *arg, uint64_t vpn, uint64_t *ino,
			       uint64_t *fpage);
void dg_vol_lost_owner(struct dg_vol *vol, dg_vpn_owner_fn owner, void *arg);
/* The data page a fault event names (not parity, not a checksum page). */
bool dg_vol_fault_vpn(struct dg_vol *vol, const struct dg_fault_event *ev,
		      uint64_t *vpn);
/* An event of a data page lost: listed with its file page when a file
 * holds it (1); in use but its owner not known yet, waiting for
 * dg_vol_lost_resolve() (2); when none does, reset when reset is set
 * (0), else kept for a later reset (-1, as for an event of anything
 * else, or a reset that failed). Reports nothing: the caller does,
 * for 0. */
int dg_vol_lost_found(struct dg_vol *vol, const struct dg_fault_event *ev,
		      bool reset);
/* The thorough answer for pages the quick one could not place: fills
 * each lp[i].ino and .fpage (ino 0: no file maps lp[i].vpn); 0, or an
 * error when it could not look. Called without the registry's lock. */
typedef int (*dg_vpn_resolve_fn)(void *arg, struct dg_lost_page *lp,
				 unsigned n);
/* The pages waiting (found 2): those a file maps are listed with it,
 * the rest kept for the unmount's dg_vol_lost_reset_gone() (reset there
 * only if free by then; never here). Returns how many it named. */
unsigned dg_vol_lost_resolve(struct dg_vol *vol, dg_vpn_resolve_fn resolve,
			     void *arg);
/* Called with each page reset, outside the registry's lock. */
typedef void (*dg_lost_reset_fn)(void *arg, uint64_t vpn);
/* Drop listed pages that are no longer the file page they were (deleted,
 * truncated), resetting those now free: at most 64 a call, the rest
 * left for the next. Returns how many it reset or tried. */
unsigned dg_vol_lost_prune(struct dg_vol *vol, dg_lost_reset_fn done,
			   void *arg);
/* The unmount's last look, once nothing else allocates or resets: every
 * lost page no file holds is reset, the listed and the kept. */
void dg_vol_lost_reset_gone(struct dg_vol *vol, dg_lost_reset_fn done,
			    void *arg);
/* A copy of the listed pages (caller frees; NULL and *n 0 when none or
 * out of memory). */
struct dg_lost_page *dg_vol_lost_list(struct dg_vol *vol, unsigned *n);
/* Forget the listed pages and those waiting to be named (zpool clear);
 * the kept free ones stay. */
void dg_vol_lost_forget(struct dg_vol *vol);

/*
 * FITRIM: rewrite every row whose data pages are all free (and within
 * the volume byte range [start, start + len) of data pages, vpn * page
 * size) as zeros, and punch its pages out of the device files (trim.c).
 * Runs of free rows shorter than minlen bytes of data are left alone.
 * *trimmed gets the bytes of data pages given back. -EOPNOTSUPP without
 * redundancy, -EROFS read-only, -EBUSY degraded or while a device is
 * being replaced.
 */
int dg_vol_trim(struct dg_vol *vol, uint64_t start, uint64_t len,
		uint64_t minlen, uint64_t *trimmed);

/*
 * The blanker (blank.c): a thread that gives back as zeros, as
 * dg_vol_trim() does, each row whose data pages updates free, once the
 * frees are durable -- so that a small write into such a row later goes
 * alone, its bytes not journaled (docs/design.md, "Blank rows kept in
 * supply"). Runs until dg_vol_close(). 0, -EOPNOTSUPP on a volume
 * without new rows or redundancy, or read-only, -EAGAIN.
 */
int dg_vol_blank_start(struct dg_vol *vol);
/* Wait up to timeout_ms for the blanker to have looked at every freed
 * page noted so far: whether it has. */
bool dg_vol_blank_idle(struct dg_vol *vol, unsigned timeout_ms);

/* ---- for the layers above (access.c) -------------------------------- */

/* Data pages (vpns), as dg_vol_get_info() says, without its copying. */
uint64_t dg_vol_vpns(const struct dg_vol *vol);
bool dg_vol_read_only(const struct dg_vol *vol);
/* Checksums and parity are kept (not --redundancy none). */
bool dg_vol_redundant(const struct dg_vol *vol);
/* The volume was made with incompatible feature bit (format.h
 * DG_FEAT_INCOMPAT_*): how the layer above reads what it stores. */
bool dg_vol_has_incompat(const struct dg_vol *vol, uint64_t bit);
/* Set an incompat feature of DG_FEAT_INCOMPAT_ON_USE on every present
 * device's superblocks, durably, before the caller's transaction writes
 * the form it names (format.h, "Features set on first use"). 0 when it
 * is set already; -EROFS on a read-only volume. */
int dg_vol_set_incompat(struct dg_vol *vol, uint64_t bit);
/* The volume's checksum seed (from its uuid), for checksums a layer
 * above keeps of its own, so they differ between volumes. */
uint64_t dg_vol_seed(const struct dg_vol *vol);

/*
 * Direct access, for mapped files (libcommit): the media bytes of data
 * page vpn, in place and NOT verified; the caller checks them against
 * checksums of its own and repairs through dg_read(). Between hold and
 * release no update or repair changes the page (its row lock, shared).
 */
const void *dg_vpn_media(struct dg_vol *vol, uint64_t vpn);
void dg_vpn_hold(struct dg_vol *vol, uint64_t vpn);
void dg_vpn_release(struct dg_vol *vol, uint64_t vpn);
/* Count, keep and log a fault a layer above found at vpn. */
void dg_vpn_fault(struct dg_vol *vol, uint64_t vpn, enum dg_fault kind,
		  enum dg_fault_what what, const char *action);
/* A new read-only descriptor of device dev (O_CLOEXEC), or -errno. */
int dg_vol_dev_open_ro(struct dg_vol *vol, unsigned dev);

/* ---- geometry, for fsck and inject (geom.c, super.c) -------------------- */

struct dg_loc {
	unsigned dev;
	uint64_t row;
};
struct dg_loc dg_vpn_loc(struct dg_vol *vol, uint64_t vpn);
uint64_t dg_loc_vpn(struct dg_vol *vol, unsigned dev, uint64_t row);
uint64_t dg_vol_rows(struct dg_vol *vol);
bool dg_vol_row_is_parity(struct dg_vol *vol, uint64_t row, unsigned dev);
void dg_uuid_format(const uint8_t u[16], char out[37]);
/* Device page number of a data row. */
uint64_t dg_row_page(struct dg_vol *vol, uint64_t row);
/* Parity device j (0..parity-1) of a row. */
unsigned dg_row_parity_dev(struct dg_vol *vol, uint64_t row, unsigned j);
/* Where copy `copy` (0..dg_vol_csum_copies() - 1) of the checksum of
 * (dev, row) lives: its device, device page and byte offset. */
void dg_csum_loc(struct dg_vol *vol, unsigned dev, uint64_t row,
		 unsigned copy, unsigned *cdev, uint64_t *page, uint32_t *byte);
unsigned dg_vol_csum_copies(struct dg_vol *vol);
/* Copies of the journal: jrnl_devs (min(parity + 2, ndev) on a volume
 * with DG_FEAT_INCOMPAT_JOURNAL_COPIES, else parity + 1; at least 2), two
 * halves of the one device on a one-device volume. dg_jrnl_loc(): the
 * device and device-relative pages of copy i. */
unsigned dg_jrnl_ncopies(const struct dg_vol *vol);
void dg_jrnl_loc(struct dg_vol *vol, unsigned copy, unsigned *dev,
		 uint64_t *start, uint64_t *pages);

/* ---- inspection, for dumpfs.daxguard (inspect.c) ---------------------- */

/*
 * A named value of an on-media structure or of the volume's geometry.
 * The inspectors report fields in order through a callback, so a tool
 * prints whatever the engine lists and never parses a struct itself; a
 * field added to format.h needs a line in inspect.c only. Names are
 * stable keys (--json).
 */
enum dg_field_kind {
	DG_FIELD_UINT,		/* u; str may name the value ("clean") */
	DG_FIELD_HEX,		/* u (magics, checksums, masks); str may
				 * name the bits ("sealed_journal") */
	DG_FIELD_TIME,		/* u, seconds since the epoch */
	DG_FIELD_UUID,		/* str, formatted */
	DG_FIELD_STR,		/* str, bytes as stored, NUL terminated */
};
struct dg_field {
	const char *name;	/* static: valid for the program's life */
	enum dg_field_kind kind;
	uint64_t u;
	char str[160];	/* the longest feature list fits */
};
typedef void (*dg_field_fn)(void *arg, const struct dg_field *f);

/*
 * Superblock copy (0: primary, 1: backup) of device dev as it is on the
 * media; *page gets where it lives. Every field is reported when the
 * copy carries the magic, also when it fails validation. Returns 0 for
 * a valid copy, -EUCLEAN (checksum or layout) or -EOPNOTSUPP (version,
 * features) for one that is not, -ENODEV no superblock there, -ENXIO the
 * device is missing, -EFBIG it is too short.
 */
int dg_inspect_super(struct dg_vol *vol, unsigned dev, unsigned copy,
		     uint64_t *page, dg_field_fn fn, void *arg);
/* Name of a feature bit (which: 0 compat, 1 ro_compat, 2 incompat), or
 * NULL if unknown. */
const char *dg_feature_name(unsigned which, uint64_t bit);
/* The volume as opened: devices, parity, rows, vpns, metadata area. */
void dg_inspect_geometry(struct dg_vol *vol, dg_field_fn fn, void *arg);
/* Free space from the allocation bitmap: free and used vpns, free
 * extents and the largest one. O(bitmap pages), and a pass over the
 * bits of each page partly in use. -ENODATA when the volume was
 * opened without its root (DG_OPEN_FORMAT). */
int dg_inspect_free(struct dg_vol *vol, dg_field_fn fn, void *arg);
/* Journal state: copies, header sequence, tail and head, live entries. */
void dg_inspect_journal(struct dg_vol *vol, dg_field_fn fn, void *arg);
/* Header slot (0, 1) of journal copy; 0 valid, -ENODEV no magic,
 * -EUCLEAN fails validation, -ENXIO device missing. Fields reported
 * unless -ENXIO. */
int dg_inspect_jhead(struct dg_vol *vol, unsigned copy, unsigned slot,
		     dg_field_fn fn, void *arg);
struct dg_jentry_info {
	uint64_t seq, off;	/* sequence number, byte offset in the log */
	uint32_t len, nranges, flags;
	bool wrap;		/* the log continues at offset 0 */
	bool lean;		/* its page's bytes on parity copies only
				 * (format.h DG_JENTRY_LEAN) */
	uint64_t bytes;		/* payload bytes of its ranges */
	uint32_t sealed;	/* ranges vouched for by their page checksum */
	uint32_t in_place;	/* pages written before it, no bytes here */
	uint32_t reserved;	/* pages of new rows it reserves, no bytes */
};
typedef void (*dg_jentry_fn)(void *arg, const struct dg_jentry_info *e);
/* The live journal entries, oldest first, of a read-only open (one that
 * did not replay them). -EUCLEAN if one changed since the open. */
int dg_inspect_jentries(struct dg_vol *vol, dg_jentry_fn fn, void *arg);

/* The checksum pages the init map says were written and the state of
 * their copies (current, stale, bad, absent), with the newest
 * generation; read only. -EOPNOTSUPP without redundancy. */
int dg_inspect_csum(struct dg_vol *vol, dg_field_fn fn, void *arg);

/* Set the label (< 64 bytes; -EINVAL) of a volume open for writing
 * (-EROFS otherwise) and write every superblock. */
int dg_vol_set_label(struct dg_vol *vol, const char *label);

/* ---- helpers for the layers that parse media structures ----------- */

/* Little-endian helpers: x86-64 is little endian; keep the intent
 * visible where media integers are read and written. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "daxguard's on-media format is little endian");

#define DG_CORRUPT(vol, fmt, ...)                                          \
	(dg_vol_log((vol), DG_LOG_ERR, "corrupt %s:%d " fmt, __FILE__,     \
		    __LINE__, ##__VA_ARGS__),                              \
	 -EUCLEAN)

static inline uint64_t dg_div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

#endif /* DG_ENGINE_H */
