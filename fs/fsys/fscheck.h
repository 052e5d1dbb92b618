/* SPDX-License-Identifier: MIT */
/* fscheck.h -- the filesystem layer's checks for fsck.daxguard, page
 * classes, and logical faults for daxguard-inject */
#ifndef DG_FSCHECK_H
#define DG_FSCHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "fsys.h"

/*
 * Filesystem structures: inodes, extent maps, directories, link counts,
 * reachability, allocation bitmap against actual use. fix(arg, ev)
 * decides per finding whether to repair (NULL: never). Unreachable
 * inodes go to /lost+found when fixed.
 */
typedef bool (*dg_chk_ask_fn)(void *arg, const struct dg_chk_event *ev);
int dg_check_fs(struct dg_vol *vol, dg_chk_fn fn, dg_chk_ask_fn ask, void *arg);

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

#endif /* DG_FSCHECK_H */
