/* SPDX-License-Identifier: MIT */
/* volume_i.h -- private to the volume layer: the in-core volume */
#ifndef DG_ENGINE_I_H
#define DG_ENGINE_I_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

#include "volume.h"
#include "media.h"

/* Lock classes, in the order they are taken (DESIGN §5):
 *   row locks (sorted by index)  ->  journal lock  ->  cmap init lock
 *   ->  csum page locks  ->  cmap lock
 * Row locks serialise everything that touches one row: a page's
 * read-modify-write, its parity delta, and reconstruction from the row,
 * so a reconstruction never sees a row whose data and parity disagree.
 * Rows that hash to different locks update concurrently; there is no
 * volume-wide lock on the data path. */
#define DG_ROW_LOCKS  1024u
#define DG_CSUM_LOCKS 256u

struct dg_jpending;

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
	unsigned ncopies;
	unsigned dev[DG_MAX_PARITY + 1];	/* device of each copy */
	uint64_t start[DG_MAX_PARITY + 1];	/* first page of each copy */
};

struct dg_vol {
	struct dg_dev devs[DG_MAX_DEVS];	/* indexed by device index */
	unsigned ndev, parity, k;		/* k = data pages per row */
	struct dg_dsuper sb;			/* in-core copy, common fields */
	uint8_t dev_uuid[DG_MAX_DEVS][16];
	char *spare[DG_MAX_DEVS];		/* paths left out: rebuild targets */
	unsigned nspare;
	uint64_t seed;				/* checksum seed from the uuid */
	uint64_t vpns;
	bool redundancy;			/* checksums and parity on */
	bool sealed_journal;		/* journal may seal whole pages */
	bool read_only, degraded;
	uint32_t missing_mask;
	atomic_bool fatal;			/* a persist failed: refuse writes */

	uint8_t *ec_matrix;			/* (k+parity) x k, ISA-L */
	uint8_t *ec_tables;			/* encode tables, parity rows */

	pthread_rwlock_t row_locks[DG_ROW_LOCKS];
	pthread_mutex_t csum_locks[DG_CSUM_LOCKS];
	struct dg_cpcache *cpcache;		/* csum_cache.c; NULL: off */
	_Atomic uint64_t gen;			/* last generation handed out */
	pthread_mutex_t epoch_lock;		/* a new epoch is being begun */
	uint8_t *cmap;				/* init map, by cmap_lock */
	pthread_mutex_t cmap_lock;
	pthread_mutex_t cmap_init_lock;		/* one index set up at a time */
	struct dg_journal jrnl;

	/* allocator, alloc.c */
	pthread_mutex_t alloc_lock;
	uint8_t *bitmap;			/* protected by alloc_lock */
	uint64_t bitmap_vpn, bitmap_pages, meta_vpns;
	uint64_t free_vpns;			/* protected by alloc_lock */
	uint64_t alloc_cursor;			/* protected by alloc_lock */

	dg_page_hook page_hook;
	void *page_hook_arg;

	_Atomic uint64_t faults[DG_FAULT_NR];
	pthread_mutex_t fault_lock;
	struct dg_fault_event fault_ring[DG_FAULT_RING]; /* by fault_lock */
	uint64_t fault_seq;				 /* by fault_lock */
};

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
void dg_geom_layout(struct dg_dsuper *sb, uint64_t dev_pages,
		    uint32_t chunk_pages, uint32_t ndev, uint32_t parity);

/* ---- csum.c ---------------------------------------------------------- */
uint64_t dg_seed_from_uuid(const uint8_t uuid[16]);
/* Address-seeded checksum of a data-row page; never DG_CSUM_NONE. */
uint64_t dg_csum_page(const struct dg_vol *vol, unsigned dev, uint64_t row,
		      const void *page);
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
/* Generations (format.h): set from the superblock at open; the next one,
 * beginning a new epoch (dg_super_new_epoch) when the low bits run out. */
void dg_gen_init(struct dg_vol *vol);
uint64_t dg_gen_next(struct dg_vol *vol);
/* The checksum-page init map: written empty by mkfs, loaded at open
 * (the union of the verified copies; stale copies rewritten when
 * writable). dg_cmap_test(): the checksum pages of index were written. */
int dg_cmap_format(struct dg_vol *vol);
int dg_cmap_load(struct dg_vol *vol);
void dg_cmap_free(struct dg_vol *vol);
/* Write the whole map to the devices in the mask (a rebuilt device). */
void dg_cmap_store(struct dg_vol *vol, uint32_t devs);
bool dg_cmap_test(struct dg_vol *vol, uint64_t index);

/* ---- repair.c: the one repair path (its crash argument is there) ---- */
/* Write len bytes at off of dev, durably: bytes proven elsewhere. */
void dg_repair_write(struct dg_vol *vol, unsigned dev, uint64_t off,
		     const void *img, size_t len);
/* The data or parity page (dev, row), proven by its verified checksum. */
void dg_repair_page(struct dg_vol *vol, unsigned dev, uint64_t row,
		    const void *img);
/* The parity pages of row, computed from its verified data, then their
 * checksums. Caller holds the row lock. */
int dg_repair_parity(struct dg_vol *vol, uint64_t row, uint8_t *const *calc);

/* ---- ditto.c ---------------------------------------------------------- */
/* vpn has ditto copies (the volume root and allocation bitmap). */
bool dg_ditto_has(const struct dg_vol *vol, uint64_t vpn);
/* Write page as every ditto copy of vpn, adding the ranges to fs. */
void dg_ditto_write(struct dg_vol *vol, uint64_t vpn, const void *page,
		    struct dg_flushset *fs);
/* The data page (dev, row) from a ditto copy that matches csum, its
 * verified checksum; -EIO when none does or it has no copies. */
int dg_ditto_read(struct dg_vol *vol, unsigned dev, uint64_t row,
		  uint64_t csum, void *buf);
/* Compare every ditto copy with its page (verified); rewrite those that
 * differ when repair. *stale counts them. Takes the row locks. */
int dg_ditto_check(struct dg_vol *vol, bool repair, uint64_t *stale);

/* ---- parity.c -------------------------------------------------------- */
int dg_parity_init(struct dg_vol *vol);
void dg_parity_fini(struct dg_vol *vol);
/* parity[j] ^= coef(j, rank) * delta over len bytes (len % 32 == 0). */
void dg_parity_delta(const struct dg_vol *vol, unsigned rank,
		     const uint8_t *delta, size_t len, uint8_t **parity);
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
/* Persist every range of fs (each device region once) and empty it. */
void dg_flushset_persist(struct dg_vol *vol, struct dg_flushset *fs);

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
/* Give up the data page at vpn, no copy of which verifies: write data in
 * its place and recompute the row's parity from the pages as they are.
 * Takes the row lock. In verify.c; fsck uses it. */
int dg_row_replace_page(struct dg_vol *vol, uint64_t vpn, const void *data);
/* Read and verify (dev, row) into buf, repairing from the row when the
 * page is bad. Caller holds the row lock for writing (a repair writes).
 * *csum_out gets the page's checksum. */
int dg_page_read_locked(struct dg_vol *vol, unsigned dev, uint64_t row,
			void *buf, uint64_t *csum_out);
/* Row-lock helpers. */
pthread_rwlock_t *dg_row_lock(struct dg_vol *vol, uint64_t row);
void dg_fault_note(struct dg_vol *vol, enum dg_fault kind, unsigned dev,
		   uint64_t row, const char *what, const char *action);

/* ---- journal.c ------------------------------------------------------- */
int dg_journal_open(struct dg_vol *vol, bool recover);
void dg_journal_close(struct dg_vol *vol);
/* Append an entry to every journal copy and persist it; *seq gets its
 * sequence number. entry holds the header (len, nranges and flags set;
 * magic, seq and csum are filled in here) and the range descriptors; the
 * bytes of range i are read from data[i], not copied first. */
int dg_journal_append(struct dg_vol *vol, struct dg_djentry *entry,
		      const void *const *data, uint64_t *seq);
/* The entry's effects are durable in place: it may be retired. */
void dg_journal_done(struct dg_vol *vol, uint64_t seq);
/* Retire everything completed, writing the header. */
int dg_journal_checkpoint(struct dg_vol *vol);
size_t dg_journal_max_entry(const struct dg_vol *vol);
bool dg_journal_dirty(struct dg_vol *vol);
/* A journal header slot or entry in area (a copy's journal area read
 * from a device) that verifies with this volume's seed. */
bool dg_journal_marks(const struct dg_vol *vol, const uint8_t *area,
		      uint64_t bytes);
/* Write a fresh, empty journal header to every copy (mkfs). */
void dg_journal_format(struct dg_vol *vol);

/* ---- alloc.c --------------------------------------------------------- */
int dg_alloc_load(struct dg_vol *vol);
/* Write the volume root and first bitmap page (mkfs). */
int dg_alloc_format(struct dg_vol *vol);
void dg_alloc_fini(struct dg_vol *vol);

/* Little-endian helpers: x86-64 is little endian; keep the intent
 * visible where media integers are read and written. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "daxguard's on-media format is little endian");

#define DG_CORRUPT(vol, fmt, ...)                                          \
	((void)(vol), dg_log(DG_LOG_ERR, "corrupt %s:%d " fmt, __FILE__, __LINE__, \
		##__VA_ARGS__),                                            \
	 -EUCLEAN)

static inline uint64_t dg_div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

#endif /* DG_ENGINE_I_H */
