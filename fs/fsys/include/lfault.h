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
 * target picks the structure, seed % 2 its sub-kind (lf->kind; seed % 4
 * for inodes and directories):
 *   DG_LF_INODE       0 "nlink+1"        1 "nlink-1"    (a regular file)
 *                     2 "parent": a nested directory names the root as
 *                       its parent (before, after: old and new parent)
 *                     3 "mode": a file's type bits all set (no type)
 *   DG_LF_DIRECTORY   0 "orphan": the only entry naming a file removed
 *                     1 "dangling": an entry naming a free inode slot
 *                     2 "type": a file's entry says it is a symlink
 *                     3 "record": a file's record length 3 (malformed)
 *   DG_LF_ALLOCATION  0 "bitmap-missing": a used data page marked free
 *                     1 "bitmap-leak": a free page marked in use
 *   DG_LF_EXTENT      0 "extent-dup": a file's last extent remapped onto
 *                       the first pages of a file with a lower inode
 *                     1 "blocks": a file's block count one too high
 *   DG_LF_XATTR       "xattr-garbage": a file's xattr page claims more
 *                       bytes than a page (fsck does not parse xattr
 *                       pages: only the daemon meets it, as EIO)
 * ino (0: chosen by seed) is the file to damage; for "dangling" a
 * directory (or a file: its directory). -ENOENT: no fitting structure.
 */
enum dg_lf_target { DG_LF_INODE, DG_LF_DIRECTORY, DG_LF_ALLOCATION,
		    DG_LF_EXTENT, DG_LF_XATTR };
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
	uint64_t before, after;	/* nlink-*, blocks, parent, type, mode:
				 * old and new value; record: after */
	unsigned nw;
	struct dg_lf_write w[DG_LF_MAX_WRITES];
	char detail[160];
};
int dg_check_lfault(struct dg_vol *vol, enum dg_lf_target target,
		    uint64_t ino, uint64_t seed, struct dg_lfault *lf);

#endif /* DG_LFAULT_H */
