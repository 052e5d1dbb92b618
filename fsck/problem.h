/* SPDX-License-Identifier: MIT */
/* problem.h -- fsck.daxguard's problem table (e2fsck problem.c style) */
#ifndef DG_FSCK_PROBLEM_H
#define DG_FSCK_PROBLEM_H

#include <stdbool.h>
#include <stdint.h>

#include "check.h"

/* Problem codes: PR_<pass>_<WHAT>. Pass 0 devices and superblocks,
 * 1 journal, 2 redundancy (pages, checksums, parity), 3 filesystem.
 * The names are stable IDs in the --json report. Indexed like
 * enum dg_chk_kind, which the engine reports. */
enum pr_code {
	PR_0_SUPER_BAD = DG_CHK_SUPER_BAD,
	PR_0_SUPER_DIFFERS = DG_CHK_SUPER_DIFFERS,
	PR_0_DEV_MISSING = DG_CHK_DEV_MISSING,
	PR_0_DEV_REBUILT = DG_CHK_DEV_REBUILT,
	PR_1_JHEAD_BAD = DG_CHK_JHEAD_BAD,
	PR_1_JHEAD_STALE = DG_CHK_JHEAD_STALE,
	PR_1_JOURNAL_PENDING = DG_CHK_JOURNAL_PENDING,
	PR_1_JENTRY_COPY = DG_CHK_JENTRY_COPY,
	PR_2_PAGE_BAD = DG_CHK_PAGE_BAD,
	PR_2_CSUM_BAD = DG_CHK_CSUM_BAD,
	PR_2_CSUM_STALE = DG_CHK_CSUM_STALE,
	PR_2_PARITY_STALE = DG_CHK_PARITY_STALE,
	PR_3_FS_ROOT = DG_CHK_FS_ROOT,
	PR_3_ITABLE = DG_CHK_ITABLE,
	PR_3_INODE_BAD = DG_CHK_INODE_BAD,
	PR_3_EXTENT_BAD = DG_CHK_EXTENT_BAD,
	PR_3_EXTENT_DUP = DG_CHK_EXTENT_DUP,
	PR_3_DIRENT_BAD = DG_CHK_DIRENT_BAD,
	PR_3_DIRENT_DANGLING = DG_CHK_DIRENT_DANGLING,
	PR_3_DIRENT_TYPE = DG_CHK_DIRENT_TYPE,
	PR_3_DIR_PARENT = DG_CHK_DIR_PARENT,
	PR_3_DIR_MULTI = DG_CHK_DIR_MULTI,
	PR_3_NLINK = DG_CHK_NLINK,
	PR_3_BLOCKS = DG_CHK_BLOCKS,
	PR_3_UNREACHABLE = DG_CHK_UNREACHABLE,
	PR_3_BITMAP_LEAK = DG_CHK_BITMAP_LEAK,
	PR_3_BITMAP_MISSING = DG_CHK_BITMAP_MISSING,
	PR_3_UNREADABLE = DG_CHK_UNREADABLE,
	PR_3_INODES_LOST = DG_CHK_INODES_LOST,
	PR_3_FILE_LOST = DG_CHK_FILE_LOST,
	PR_3_DIR_LOST = DG_CHK_DIR_LOST,
	PR_3_EXTENTS_LOST = DG_CHK_EXTENTS_LOST,
	PR_0_DEV_STALE = DG_CHK_DEV_STALE,
	PR_3_XATTRS_LOST = DG_CHK_XATTRS_LOST,
	PR_2_PAGE_GIVEN_UP = DG_CHK_PAGE_GIVEN_UP,
	PR_3_MOVED_WITH_DIR = DG_CHK_MOVED_WITH_DIR,
	PR_NR = DG_CHK_NR,
};

#define PR_PREEN_OK (1u << 0) /* -p may repair it without asking */
#define PR_FATAL    (1u << 1) /* the check cannot go on past it */
#define PR_NOFIX    (1u << 2) /* no repair exists (G6: report only) */
#define PR_LOSS	    (1u << 3) /* its repair gives data up: exit 4 even so */
/* Found again as it was left (not repaired): a warning, exit 0 -- what
 * an earlier repair gave up and reported then (fsck converges). */
#define PR_WARNING  (1u << 4)

struct pr_entry {
	const char *name;	/* "PR_2_PAGE_BAD" */
	const char *message;	/* short description */
	unsigned flags;
};
const struct pr_entry *pr_get(int code);

/* -n, -y, -p; ASK: none of them, on a terminal (ask.c) */
enum fsck_mode { MODE_N, MODE_Y, MODE_P, MODE_ASK };
/* Whether a mode repairs a problem without asking: -n never, -y always,
 * -p when PR_PREEN_OK; never one that has no repair (PR_NOFIX). */
bool pr_mode_allows(enum fsck_mode mode, int code);

#endif /* DG_FSCK_PROBLEM_H */
