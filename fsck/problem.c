// SPDX-License-Identifier: MIT
/* problem.c -- the problem table: code, message, flags */
#include <stddef.h>

#include "problem.h"

#define P(code, msg, fl) [code] = { #code, msg, fl }

static const struct pr_entry table[PR_NR] = {
	P(PR_0_SUPER_BAD, "superblock copy fails validation", PR_PREEN_OK),
	P(PR_0_SUPER_DIFFERS, "superblock copy disagrees with the volume",
	  PR_PREEN_OK),
	P(PR_0_DEV_MISSING, "device missing, blank or stale", 0),
	P(PR_0_DEV_REBUILT, "device rebuilt from parity", 0),
	P(PR_1_JHEAD_BAD, "journal header slot damaged", PR_PREEN_OK),
	P(PR_1_JHEAD_STALE, "journal header slot stale", PR_PREEN_OK),
	P(PR_1_JOURNAL_PENDING, "journal needs replay", PR_PREEN_OK),
	P(PR_1_JENTRY_COPY, "journal entry bad in one copy", PR_PREEN_OK),
	P(PR_2_PAGE_BAD, "page fails its checksum", PR_PREEN_OK),
	P(PR_2_CSUM_BAD, "checksum page damaged", PR_PREEN_OK),
	P(PR_2_CSUM_STALE, "checksum page stale", PR_PREEN_OK),
	P(PR_2_PARITY_STALE, "parity stale", PR_PREEN_OK),
	P(PR_3_FS_ROOT, "filesystem root invalid", PR_FATAL | PR_NOFIX),
	P(PR_3_ITABLE, "inode table chunk invalid", PR_NOFIX),
	P(PR_3_INODE_BAD, "inode invalid", 0),
	P(PR_3_EXTENT_BAD, "extent map invalid", PR_LOSS),
	P(PR_3_EXTENT_DUP, "page used twice", PR_LOSS),
	P(PR_3_DIRENT_BAD, "directory record malformed", 0),
	P(PR_3_DIRENT_DANGLING, "directory entry names a free inode",
	  PR_PREEN_OK),
	P(PR_3_DIRENT_TYPE, "directory entry type wrong", PR_PREEN_OK),
	P(PR_3_DIR_PARENT, "directory parent wrong", PR_PREEN_OK),
	P(PR_3_DIR_MULTI, "directory has several names", 0),
	P(PR_3_NLINK, "link count wrong", PR_PREEN_OK),
	P(PR_3_BLOCKS, "block count wrong", PR_PREEN_OK),
	P(PR_3_UNREACHABLE, "inode unreachable", 0),
	P(PR_3_BITMAP_LEAK, "page allocated but unused", PR_PREEN_OK),
	P(PR_3_BITMAP_MISSING, "page used but free in the bitmap",
	  PR_PREEN_OK),
	P(PR_3_UNREADABLE, "metadata page unreadable", PR_NOFIX),
	P(PR_3_INODES_LOST, "inode table page unreadable", PR_LOSS),
	P(PR_3_FILE_LOST, "file lost with its inode", PR_LOSS),
	P(PR_3_DIR_LOST, "directory page unreadable", PR_LOSS),
	P(PR_3_EXTENTS_LOST, "extent page unreadable", PR_LOSS),
	P(PR_0_DEV_STALE, "device behind the volume, used page by page",
	  PR_PREEN_OK),
	P(PR_3_XATTRS_LOST, "extended attribute page unreadable", PR_LOSS),
	/* Given up now (fixed): data lost, exit 4; found given up by an
	 * earlier run: a warning, exit 0. -p never gives data up. */
	P(PR_2_PAGE_GIVEN_UP, "page given up: reads of it give EIO",
	  PR_LOSS | PR_WARNING),
	P(PR_3_MOVED_WITH_DIR, "file moved with its directory to "
	  "/lost+found", 0),
};

const struct pr_entry *pr_get(int code)
{
	static const struct pr_entry unknown = { "PR_UNKNOWN", "?", 0 };

	if (code < 0 || code >= PR_NR || !table[code].name)
		return &unknown;
	return &table[code];
}

bool pr_mode_allows(enum fsck_mode mode, int code)
{
	const struct pr_entry *p = pr_get(code);

	if (p->flags & PR_NOFIX)
		return false;
	switch (mode) {
	case MODE_Y:
		return true;
	case MODE_P:
		return p->flags & PR_PREEN_OK;
	default:
		return false;
	}
}
