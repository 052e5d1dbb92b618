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
 * the volume layer's dg_vol_reset_free_page(). cls from
 * dg_check_classify() (or NULL: the allocation bitmap alone says what
 * is in use). 0, -EBUSY (vpn in use), -EIO (a page in use in its row
 * cannot be read), -EROFS, -EINVAL. */
int dg_check_reset_free_page(struct dg_vol *vol, uint64_t vpn,
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
