/* SPDX-License-Identifier: MIT */
/* check.h -- engine services for fsck.daxguard and daxguard-inject */
#ifndef DG_CHECK_H
#define DG_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "volume.h"
#include "fsys.h"

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
	DG_CHK_SUPER_BAD,	   /* a superblock copy fails validation */
	DG_CHK_SUPER_DIFFERS,	   /* a valid copy disagrees with the volume */
	DG_CHK_DEV_MISSING,	   /* a device is missing, blank or stale */
	DG_CHK_DEV_REBUILT,	   /* ... and was rebuilt from parity */
	DG_CHK_JHEAD_BAD,	   /* a journal header slot is damaged */
	DG_CHK_JHEAD_STALE,	   /* a header slot lags its other copy */
	DG_CHK_JOURNAL_PENDING,	   /* committed entries not yet replayed */
	DG_CHK_JENTRY_COPY,	   /* a live entry is bad in one copy */
	DG_CHK_PAGE_BAD,	   /* a data or parity page fails its checksum */
	DG_CHK_CSUM_BAD,	   /* a checksum page copy is damaged */
	DG_CHK_CSUM_STALE,	   /* a checksum page copy is stale */
	DG_CHK_PARITY_STALE,	   /* parity disagrees with verified data */
	DG_CHK_FS_ROOT,		   /* volume or filesystem root record bad */
	DG_CHK_ITABLE,		   /* inode table chunk out of range */
	DG_CHK_INODE_BAD,	   /* an inode record is invalid */
	DG_CHK_EXTENT_BAD,	   /* an extent is out of range or unsorted */
	DG_CHK_EXTENT_DUP,	   /* a page is used twice */
	DG_CHK_DIRENT_BAD,	   /* a directory record is malformed */
	DG_CHK_DIRENT_DANGLING,	   /* an entry names a free inode */
	DG_CHK_DIRENT_TYPE,	   /* an entry's type differs from the inode */
	DG_CHK_DIR_PARENT,	   /* a directory's parent field is wrong */
	DG_CHK_DIR_MULTI,	   /* a directory has more than one name */
	DG_CHK_NLINK,		   /* link count wrong */
	DG_CHK_BLOCKS,		   /* block count wrong */
	DG_CHK_UNREACHABLE,	   /* an inode is not reachable from the root */
	DG_CHK_BITMAP_LEAK,	   /* allocated but used by nothing */
	DG_CHK_BITMAP_MISSING,	   /* used but marked free */
	DG_CHK_UNREADABLE,	   /* metadata page unreadable (-EIO) */
	DG_CHK_INODES_LOST,	   /* an inode table page is unreadable */
	DG_CHK_FILE_LOST,	   /* an entry names an inode lost with it */
	DG_CHK_DIR_LOST,	   /* a directory page is unreadable */
	DG_CHK_EXTENTS_LOST,	   /* an extent page is unreadable */
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
};
typedef void (*dg_chk_fn)(void *arg, const struct dg_chk_event *ev);

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
};
/* Every written page against its checksum, both copies of every
 * checksum page, the parity of every written row. */
int dg_check_redundancy(struct dg_vol *vol, bool repair, dg_chk_fn fn,
			void *arg, dg_progress_fn progress, void *parg,
			struct dg_chk_stats *st);

/*
 * Filesystem structures: inodes, extent maps, directories, link counts,
 * reachability, allocation bitmap against actual use. fix(arg, ev)
 * decides per finding whether to repair (NULL: never). Unreachable
 * inodes go to /lost+found when fixed.
 */
typedef bool (*dg_chk_ask_fn)(void *arg, const struct dg_chk_event *ev);
int dg_check_fs(struct dg_vol *vol, dg_chk_fn fn, dg_chk_ask_fn ask, void *arg);

/* Rebuild the devices left out of a degraded volume (vol->spare paths)
 * completely from parity. Opens paths itself; on success every device
 * is whole and the volume opens normally. */
int dg_vol_rebuild(const char *const *paths, unsigned n, dg_chk_fn fn,
		   void *arg, dg_progress_fn progress, void *parg,
		   char *errbuf, size_t errlen);

/* Rewrite a row whose unreadable pages are free (and its parity) so it
 * verifies again: reclaim.c. Offline only; cls from dg_check_classify()
 * (or NULL: the allocation bitmap alone says what is in use). */
int dg_vol_reset_free_pages(struct dg_vol *vol, uint64_t row,
			    const uint8_t *cls);

/* ---- page classes, for inject and reports -------------------------- */
enum dg_pclass {
	DG_PC_FREE,
	DG_PC_ROOT,	/* vpn 0 */
	DG_PC_BITMAP,
	DG_PC_ITABLE,
	DG_PC_EMAP,
	DG_PC_XATTR,
	DG_PC_DIR,
	DG_PC_FILE,	/* regular file data */
	DG_PC_SYMLINK,
	DG_PC_NR,
};
const char *dg_pclass_name(enum dg_pclass c);
/*
 * Class and owning inode of every vpn from a tolerant walk of the
 * structures (pages that cannot be read are skipped). The arrays get
 * dg_vol_info.vpns entries; free them with free().
 */
int dg_check_classify(struct dg_vol *vol, uint8_t **cls, uint64_t **owner);
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
/* Path of a device of the volume (NULL when missing). */
const char *dg_vol_dev_path(struct dg_vol *vol, unsigned dev);

/* ---- logical faults, for daxguard-inject --fault logical ------------ */
/*
 * Plan a corruption of the filesystem structures that every checksum
 * passes, as a bug in daxguard itself would leave: the new bytes of a
 * few ranges, for the caller to write through the engine (dg_txn_write
 * + dg_txn_commit) on a writable volume. Nothing is written here.
 * target picks the structure, seed % 2 its sub-kind (lf->kind):
 *   DG_LF_INODE       0 "nlink+1"        1 "nlink-1"    (a regular file)
 *   DG_LF_DIRECTORY   0 "orphan": the only entry naming a file removed
 *                     1 "dangling": an entry naming a free inode slot
 *   DG_LF_ALLOCATION  0 "bitmap-missing": a used data page marked free
 *                     1 "bitmap-leak": a free page marked in use
 *   DG_LF_EXTENT      0 "extent-dup": a file's last extent remapped onto
 *                       the first pages of a file with a lower inode
 *                     1 "blocks": a file's block count one too high
 * ino (0: chosen by seed) is the file to damage; for "dangling" a
 * directory (or a file: its directory). -ENOENT: no fitting structure.
 */
enum dg_lf_target { DG_LF_INODE, DG_LF_DIRECTORY, DG_LF_ALLOCATION,
		    DG_LF_EXTENT };
#define DG_LF_MAX_WRITES 2u
struct dg_lf_write {
	uint64_t vpn;
	uint32_t off, len;
	const char *structure;	/* "inode", "directory", "allocation" */
	uint8_t data[DG_INODE_SIZE];
};
struct dg_lfault {
	const char *kind;	/* sub-kind, see above */
	uint64_t ino;		/* file damaged or orphaned, 0: none */
	uint64_t other;		/* extent-dup: owner of the shared pages;
				 * dangling: the free inode named */
	uint64_t dir;		/* orphan, dangling: directory of the entry */
	char name[DG_NAME_MAX + 1]; /* orphan, dangling: the entry's name */
	int64_t vpn;		/* bitmap-*: page whose bit flips; -1 */
	uint64_t fpage, pages;	/* extent-dup: file pages remapped */
	uint64_t before, after;	/* nlink-*, blocks: old and new value */
	unsigned nw;
	struct dg_lf_write w[DG_LF_MAX_WRITES];
	char detail[160];
};
int dg_check_lfault(struct dg_vol *vol, enum dg_lf_target target,
		    uint64_t ino, uint64_t seed, struct dg_lfault *lf);

/* Fuzzing entry points: parse one page image as each metadata kind
 * against a throwaway volume; return 0 or a negative errno, never
 * crash. */
int dg_check_fuzz_page(struct dg_vol *vol, unsigned kind, const void *page);

#endif /* DG_CHECK_H */
