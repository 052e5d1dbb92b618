/* SPDX-License-Identifier: MIT */
/* volume.h -- the daxguard volume layer: what its clients call */
#ifndef DG_ENGINE_H
#define DG_ENGINE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "format.h"

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
/* True if a message at level would be emitted. */
bool dg_log_enabled(enum dg_log_level level);

/* ---- formatting (format.c) ------------------------------------------ */

struct dg_format_opts {
	unsigned parity;	 /* 0..2 */
	bool no_redundancy;	 /* --redundancy none */
	uint32_t chunk_pages;	 /* 0: default */
	uint64_t size;		 /* bytes to create/extend files to; 0: as is */
	bool force;		 /* overwrite an existing volume */
	const char *label;	 /* may be NULL */
};

/* Summary returned by dg_format() and dg_vol_info(). */
struct dg_vol_info {
	uint8_t uuid[16];
	char label[64];
	unsigned ndev;		/* devices in the volume */
	unsigned present;	/* devices that opened */
	unsigned parity;
	bool no_redundancy;
	bool degraded;		/* a device is missing or stale */
	bool read_only;
	uint32_t missing_mask;	/* bit d: device d missing/stale/unusable */
	uint32_t chunk_pages;
	uint64_t dev_pages;
	uint64_t rows;
	uint64_t vpns;		/* data pages */
	uint64_t free_vpns;	/* unallocated data pages */
	uint64_t generation;
	uint64_t csum_pages;	/* per device, each of checksum and replica */
	uint64_t jrnl_pages;
};

/* Format devs as one volume. Regular files are created or extended to
 * opts->size. Refuses (-EEXIST) to overwrite a daxguard volume unless
 * opts->force. Work is proportional to the metadata, not the size. */
int dg_format(const char *const *devs, unsigned ndev,
	      const struct dg_format_opts *opts, struct dg_vol_info *info);

/* ---- open / close (super.c) ----------------------------------------- */

#define DG_OPEN_RDONLY	 (1u << 0) /* no writes at all, shared lock */
#define DG_OPEN_NORECOVER (1u << 1) /* do not replay the journal */
#define DG_OPEN_DEGRADED (1u << 2) /* allow missing devices parity covers */
#define DG_OPEN_NOLOCK	 (1u << 4) /* read-only, even while mounted elsewhere */
#define DG_OPEN_FORMAT	 (1u << 3) /* internal to dg_format(): no root yet */

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
/* Persist, mark clean (if writable) and release. NULL is fine. */
int dg_vol_close(struct dg_vol *vol);
void dg_vol_get_info(struct dg_vol *vol, struct dg_vol_info *info);

/* ---- data access (read.c, apply.c) ----------------------------------- */

/* A change to one data page: len bytes at off within page vpn. */
struct dg_range {
	uint64_t vpn;
	uint32_t off;
	uint32_t len;
	const void *data;
};

/*
 * The one update path. Applies all ranges atomically: journal, data,
 * page checksums, parity, persist (DESIGN §5). Old contents are verified
 * (and repaired) before they are folded into parity. Ranges may not
 * cross a page boundary; several may hit the same page (later wins).
 * Returns 0, -EIO when an old page cannot be verified or repaired,
 * -EROFS after a fatal persist failure or on a read-only volume,
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

/* Make everything applied so far durable and retire the journal. */
int dg_vol_sync(struct dg_vol *vol);

/*
 * Keep verified checksum pages in memory (up to max_bytes of them), so
 * reads and updates stop re-reading and re-hashing them (csum_cache.c
 * says what stays verified). For a long-lived owner of the volume, the
 * daemon; call before other threads use vol. Tools that write checksum
 * pages directly (fsck) must not turn it on.
 */
int dg_vol_cache_csum_pages(struct dg_vol *vol, size_t max_bytes);

/* ---- allocation (alloc.c) ------------------------------------------- */

/*
 * Allocation changes ride on the caller's update: dg_alloc() picks free
 * vpns and marks them in core, appending the bitmap change to *txn so the
 * caller commits it in the same dg_apply() as the metadata that uses
 * them. dg_alloc_abort() undoes the in-core marking if the caller does
 * not commit. Extents stay within one device's chunk where they can.
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
/* Allocate up to want contiguous vpns near hint; *got >= 1 on success. */
int dg_alloc(struct dg_txn *txn, uint64_t hint, uint64_t want,
	     uint64_t *start, uint64_t *got);
/* Where a new file of pages pages should start: the allocation cursor,
 * which then moves past that span, so a file filled out of order (a
 * sparse file written at random) finds its pages' places still free
 * and ends up contiguous. Only a hint for dg_alloc(). */
uint64_t dg_alloc_home(struct dg_vol *vol, uint64_t pages);
/* Exactly want contiguous vpns, or -ENOSPC. */
int dg_alloc_exact(struct dg_txn *txn, uint64_t want, uint64_t *start);
int dg_free(struct dg_txn *txn, uint64_t start, uint64_t n);
bool dg_vpn_allocated(struct dg_vol *vol, uint64_t vpn);
uint64_t dg_free_vpns(struct dg_vol *vol);

/* ---- redundancy checks (verify.c) ----------------------------------- */

enum dg_fault {
	DG_FAULT_DETECTED,	/* a page failed verification */
	DG_FAULT_REPAIRED,	/* ... and was repaired */
	DG_FAULT_UNRECOVERABLE, /* ... and could not be */
	DG_FAULT_NR,
};
void dg_vol_fault_counts(struct dg_vol *vol, uint64_t counts[DG_FAULT_NR]);

/* The most recent fault events (a ring of DG_FAULT_RING), so a daemon
 * can report each one with the file it hit, outside the engine's locks. */
#define DG_FAULT_RING 256u
struct dg_fault_event {
	uint64_t seq;		/* 1, 2, ... */
	enum dg_fault kind;
	unsigned dev;
	uint64_t row;		/* data row, or checksum page index */
	char what[16];		/* data, parity, csum-page, csum-replica */
	char action[48];
};
/* Copy events newer than since, oldest first; returns how many. */
unsigned dg_vol_fault_events(struct dg_vol *vol, uint64_t since,
			     struct dg_fault_event *out, unsigned max);

struct dg_scrub_report {
	uint64_t rows_checked;	/* rows with at least one written page */
	uint64_t detected;	/* pages (or checksum pages) that failed */
	uint64_t repaired;	/* ... and were repaired */
	uint64_t unrecoverable; /* ... and could not be */
	uint64_t parity_mismatch; /* rows whose parity disagreed with data */
	uint64_t parity_fixed;	/* ... and were recomputed */
};
typedef void (*dg_progress_fn)(void *arg, uint64_t done, uint64_t total);
/*
 * Check every written row: each page against its checksum (repairing
 * from parity through the read path when writable) and the parity
 * against the verified data (recomputed when repair is set). Never
 * writes on a read-only volume.
 */
int dg_vol_scrub(struct dg_vol *vol, bool repair, struct dg_scrub_report *rep,
		 dg_progress_fn progress, void *arg);

/* ---- geometry, for fsck and inject (geom.c) ------------------------- */

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
/* Device-relative pages of the journal copy i (0 or 1). */
/* Copies of the journal (parity + 1, at least 2). */
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
	char str[72];
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
 * extents and the largest one. O(vpns). -ENODATA when the volume was
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
	uint64_t bytes;		/* payload bytes of its ranges */
	uint32_t sealed;	/* ranges vouched for by their page checksum */
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

#endif /* DG_ENGINE_H */
