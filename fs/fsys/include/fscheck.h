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
int dg_check_fs(struct dg_vol *vol, dg_chk_fn fn, dg_chk_ask_fn ask, void *arg);

/* Give the free data page vpn, unreadable, fresh contents (zeros) and
 * rewrite its row and parity so it verifies again: reclaim.c, through
 * the volume layer's dg_vol_reset_free_page(). map from
 * dg_check_classify() (or NULL: the allocation bitmap alone says what
 * is in use). 0, -EBUSY (vpn in use), -EIO (a page in use in its row
 * cannot be read), -EROFS, -EINVAL. */
struct dg_vpnmap;
int dg_check_reset_free_page(struct dg_vol *vol, uint64_t vpn,
			     const struct dg_vpnmap *map);

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
	DG_PC_REMAP,	/* a file's remap page (its records' pages: FILE) */
	DG_PC_NR,
};
const char *dg_pclass_name(enum dg_pclass c);
/*
 * The class (enum dg_pclass) and owning inode of each vpn, stored
 * sparsely (vpnmap.c): leaves of DG_VPNMAP_LEAF vpns allocated on the
 * first used vpn, a missing leaf reads as DG_PC_FREE, owner 0. Memory:
 * 8 bytes per leaf of the volume plus 36 KiB per leaf holding a used
 * vpn -- what is in use, not the volume's size.
 */
#define DG_VPNMAP_LEAF 4096u
struct dg_vpnmap;
struct dg_vpnmap *dg_vpnmap_new(uint64_t vpns);
void dg_vpnmap_free(struct dg_vpnmap *m);
uint8_t dg_vpnmap_cls(const struct dg_vpnmap *m, uint64_t v);
uint64_t dg_vpnmap_owner(const struct dg_vpnmap *m, uint64_t v);
/* 0, -ENOMEM (no leaf), -EINVAL (v beyond the volume). Storing free
 * with owner 0 where no leaf is allocates nothing. */
int dg_vpnmap_set(struct dg_vpnmap *m, uint64_t v, uint8_t cls,
		  uint64_t owner);
/* The first vpn at or after v in an allocated leaf (vpns: none): the
 * vpns before it are free. */
uint64_t dg_vpnmap_next(const struct dg_vpnmap *m, uint64_t v);
/* How many leaves are allocated (tests: the cost is what is used). */
uint64_t dg_vpnmap_leaves(const struct dg_vpnmap *m);
/*
 * Class and owning inode of every vpn from a tolerant walk of the
 * structures (pages that cannot be read are skipped), in a map the
 * caller frees with dg_vpnmap_free().
 */
int dg_check_classify(struct dg_vol *vol, struct dg_vpnmap **map);
/*
 * Paths of inodes from the same walk, for naming findings when the
 * filesystem cannot be opened (check_names.c): dg_check_names_path()
 * spells them as dg_fs_path() does ("?inoN/rest" for an inode no entry
 * leads to from the root). 0, -ENOMEM, -EUCLEAN (no root to walk).
 */
struct dg_check_names;
int dg_check_names_load(struct dg_vol *vol, struct dg_check_names **n);
void dg_check_names_path(const struct dg_check_names *n, uint64_t ino,
			 char *buf, size_t len);
void dg_check_names_free(struct dg_check_names *n);
/* Metadata pages (any class but file data) that lie outside the
 * metadata zone, so without ditto copies: where a full zone put them. */
int dg_check_meta_outside(struct dg_vol *vol, uint64_t *pages);
/* dumpfs: the inode table's chunks, how many the root record lists
 * and the chunk map's pages (format.h "Inode table"); -EUCLEAN when the
 * root record or a map page is bad, -EIO when one is unreadable. */
struct dg_itable_info {
	uint32_t chunks, direct, map_pages;
};
int dg_itable_inspect(struct dg_vol *vol, struct dg_itable_info *info);

#endif /* DG_FSCHECK_H */
