/* SPDX-License-Identifier: MIT */
/* check_kinds.h -- every kind of finding the checks report, in one list:
 * the engine's enum dg_chk_kind (check.h) and fsck.daxguard's problem
 * codes and table (fsck/problem.h, problem.c) are both made from it, so
 * a kind added here has a problem code and a message, or fsck does not
 * compile. */
#ifndef DG_CHECK_KINDS_H
#define DG_CHECK_KINDS_H

/*
 * X(KIND, PASS, MESSAGE, FLAGS), in the order of enum dg_chk_kind (the
 * values are stable: a new kind goes at the end).
 *   KIND    DG_CHK_<KIND> in the engine, PR_<PASS>_<KIND> in fsck
 *   PASS    the fsck pass that reports it: 0 devices and superblocks,
 *           1 journal, 2 redundancy (pages, checksums, parity),
 *           3 filesystem
 *   MESSAGE fsck's short description of the problem
 *   FLAGS   fsck's PR_* flags (fsck/problem.h); the engine never
 *           expands them
 */
#define DG_CHK_KINDS(X) \
	X(SUPER_BAD, 0, "superblock copy fails validation", PR_PREEN_OK) \
	X(SUPER_DIFFERS, 0, "superblock copy disagrees with the volume", \
	  PR_PREEN_OK) \
	X(DEV_MISSING, 0, "device missing, blank or stale", 0) \
	X(DEV_REBUILT, 0, "device rebuilt from parity", 0) \
	X(JHEAD_BAD, 1, "journal header slot damaged", PR_PREEN_OK) \
	X(JHEAD_STALE, 1, "journal header slot stale", PR_PREEN_OK) \
	X(JOURNAL_PENDING, 1, "journal needs replay", PR_PREEN_OK) \
	X(JENTRY_COPY, 1, "journal entry bad in one copy", PR_PREEN_OK) \
	X(PAGE_BAD, 2, "page fails its checksum", PR_PREEN_OK) \
	X(CSUM_BAD, 2, "checksum page damaged", PR_PREEN_OK) \
	X(CSUM_STALE, 2, "checksum page stale", PR_PREEN_OK) \
	X(PARITY_STALE, 2, "parity stale", PR_PREEN_OK) \
	X(FS_ROOT, 3, "filesystem root invalid", PR_FATAL | PR_NOFIX) \
	X(ITABLE, 3, "inode table chunk invalid", PR_NOFIX) \
	X(INODE_BAD, 3, "inode invalid", 0) \
	X(EXTENT_BAD, 3, "extent map invalid", PR_LOSS) \
	X(EXTENT_DUP, 3, "page used twice", PR_LOSS) \
	X(DIRENT_BAD, 3, "directory record malformed", 0) \
	X(DIRENT_DANGLING, 3, "directory entry names a free inode", \
	  PR_PREEN_OK) \
	X(DIRENT_TYPE, 3, "directory entry type wrong", PR_PREEN_OK) \
	X(DIR_PARENT, 3, "directory parent wrong", PR_PREEN_OK) \
	X(DIR_MULTI, 3, "directory has several names", 0) \
	X(NLINK, 3, "link count wrong", PR_PREEN_OK) \
	X(BLOCKS, 3, "block count wrong", PR_PREEN_OK) \
	X(UNREACHABLE, 3, "inode unreachable", 0) \
	X(BITMAP_LEAK, 3, "page allocated but unused", PR_PREEN_OK) \
	X(BITMAP_MISSING, 3, "page used but free in the bitmap", \
	  PR_PREEN_OK) \
	X(UNREADABLE, 3, "metadata page unreadable", PR_NOFIX) \
	X(INODES_LOST, 3, "inode table page unreadable", PR_LOSS) \
	X(FILE_LOST, 3, "file lost with its inode", PR_LOSS) \
	X(DIR_LOST, 3, "directory page unreadable", PR_LOSS) \
	X(EXTENTS_LOST, 3, "extent page unreadable", PR_LOSS) \
	X(DEV_STALE, 0, "device behind the volume, used page by page", \
	  PR_PREEN_OK) \
	X(XATTRS_LOST, 3, "extended attribute page unreadable", PR_LOSS) \
	/* Given up now (fixed): data lost, exit 4; found given up by an \
	 * earlier run: a warning, exit 0. -p never gives data up. */ \
	X(PAGE_GIVEN_UP, 2, "page given up: reads of it give EIO", \
	  PR_LOSS | PR_WARNING) \
	X(MOVED_WITH_DIR, 3, "file moved with its directory to " \
	  "/lost+found", 0) \
	/* An inode nothing can make valid again (no entry says its \
	 * file type, or an extent count out of range): cleared, its \
	 * file and data lost. INODE_BAD's repairs lose nothing. */ \
	X(INODE_UNUSABLE, 3, "inode invalid beyond repair", PR_LOSS) \
	/* A remap page that is unreadable, malformed, or whose records \
	 * name pages the file does not map or others use: dropped, the \
	 * file reads its pages as before the overwrites it redirected \
	 * (those are lost). */ \
	X(REMAP_BAD, 3, "remap page invalid", PR_LOSS)

#endif /* DG_CHECK_KINDS_H */
