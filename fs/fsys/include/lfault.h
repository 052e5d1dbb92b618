/* SPDX-License-Identifier: MIT */
/* lfault.h -- logical faults, for daxguard-inject alone (lfault.c) */
#ifndef DG_LFAULT_H
#define DG_LFAULT_H

#include "fscheck.h"

/*
 * Plan a corruption of the filesystem structures that every checksum
 * passes, as a bug in daxguard itself would leave: the new bytes of a
 * few ranges, for the caller to write through the engine (dg_txn_write
 * + dg_txn_commit) on a writable volume. Nothing is written here.
 * target picks the structure, kind its sub-kind (lf->kind), or, kind
 * NULL, seed % N picks among the target's first N (N = 4 for inodes and
 * directories, 2 for allocation and extents, 1 for xattrs); the ones
 * after them (named "by name only") are planned only when named, so
 * that adding one changes what no seed plans:
 *   DG_LF_INODE       0 "nlink+1"        1 "nlink-1"    (a regular file)
 *                     2 "parent": a nested directory names the root as
 *                       its parent (before, after: old and new parent)
 *                     3 "mode": a file's type bits all set (no type)
 *   DG_LF_DIRECTORY   0 "orphan": the only entry naming a file removed
 *                     1 "dangling": an entry naming a free inode slot
 *                     2 "type": a file's entry says it is a symlink
 *                     3 "record": a file's record length 3 (malformed)
 *                     by name only: "multi": a directory gets a second
 *                       name, link-INO, beside its first (dir, name)
 *   DG_LF_ALLOCATION  0 "bitmap-missing": a used data page marked free
 *                     1 "bitmap-leak": a free page marked in use
 *   DG_LF_EXTENT      0 "extent-dup": a file's last extent remapped onto
 *                       the first pages of a file with a lower inode
 *                     1 "blocks": a file's block count one too high
 *                     by name only: "extent-bad": a file's last extent
 *                       starts past the end of the volume (before,
 *                       after: old and new vpn)
 *                     by name only: "remap-bad": a file's remap page
 *                       names another file as its owner (vpn: the
 *                       page; before, after: old and new owner)
 *   DG_LF_XATTR       "xattr-garbage": a file's xattr page claims more
 *                       bytes than a page (fsck does not parse xattr
 *                       pages: only the daemon meets it, as EIO)
 * ino (0: chosen by seed) is the file to damage; for "dangling" a
 * directory (or a file: its directory), for "multi" a directory.
 * -ENOENT: no fitting structure; -EINVAL: kind is not one of target's,
 * or ino does not go with the sub-kind.
 */
enum dg_lf_target { DG_LF_INODE, DG_LF_DIRECTORY, DG_LF_ALLOCATION,
		    DG_LF_EXTENT, DG_LF_XATTR };
#define DG_LF_MAX_WRITES 2u
struct dg_lf_write {
	uint64_t vpn;
	uint32_t off, len;
	const char *structure;	/* "inode", "directory", "allocation",
				 * "remap" */
	uint8_t data[DG_INODE_SIZE];
};
struct dg_lfault {
	const char *kind;	/* sub-kind, see above */
	uint64_t ino;		/* file damaged or orphaned, 0: none */
	uint64_t other;		/* extent-dup: owner of the shared pages;
				 * dangling: the free inode named */
	uint64_t dir;		/* orphan, dangling, multi: directory of the
				 * entry */
	char name[DG_NAME_MAX + 1]; /* orphan, dangling, multi: the entry's
				     * name */
	int64_t vpn;		/* bitmap-*: page whose bit flips;
				 * remap-bad: the remap page; -1 */
	uint64_t fpage, pages;	/* extent-dup, extent-bad: file pages
				 * remapped */
	uint64_t before, after;	/* nlink-*, blocks, parent, type, mode,
				 * extent-bad: old and new value; record:
				 * after */
	unsigned nw;
	struct dg_lf_write w[DG_LF_MAX_WRITES];
	char detail[160];
};
int dg_check_lfault(struct dg_vol *vol, enum dg_lf_target target,
		    uint64_t ino, uint64_t seed, const char *kind,
		    struct dg_lfault *lf);
/* The i-th sub-kind of target (the order above), NULL past the last. */
const char *dg_lfault_kind(enum dg_lf_target target, unsigned i);

#endif /* DG_LFAULT_H */
