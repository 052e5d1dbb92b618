// SPDX-License-Identifier: MIT
/*
 * setid.c -- the set-user-ID and set-group-ID rules of the Linux VFS.
 *
 * With FUSE_HANDLE_KILLPRIV_V2 the kernel leaves the clearing of set-ID
 * bits to the filesystem, and a FUSE filesystem always decides the owner
 * and mode of a new inode. These follow the kernel (fs/attr.c, fs/inode.c
 * as of Linux 6.x) rule for rule, so that programs see what they see on
 * ext4:
 *
 *   inode_init_owner()          a new inode in a set-group-ID directory
 *                               takes the directory's group; a new
 *                               directory also takes S_ISGID. (The VFS
 *                               has already applied mode_strip_sgid() to
 *                               the mode it passes down.)
 *   setattr_should_drop_sgid()  S_ISGID goes when the group may execute,
 *                               or when the caller is neither in the
 *                               file's group nor privileged.
 *   setattr_should_drop_suidgid()  before a write or truncate by a caller
 *                               without CAP_FSETID: S_ISUID always, and
 *                               S_ISGID as above; regular files only.
 *   chown_common()              every chown of a non-directory drops
 *                               S_ISUID (whoever asks) and S_ISGID as
 *                               above, and the file capabilities.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

static bool in_group_or_capable(const struct dg_cred *cr, uint32_t gid)
{
	if (!cr || cr->fsetid || cr->gid == gid)
		return true;
	return cr->in_group && cr->in_group(cr, gid);
}

/* setattr_should_drop_sgid() */
static bool drop_sgid(uint32_t mode, uint32_t gid, const struct dg_cred *cr)
{
	if (!(mode & S_ISGID))
		return false;
	if (mode & S_IXGRP)
		return true;
	return !in_group_or_capable(cr, gid);
}

uint32_t dg_setid_kill(uint32_t mode, uint32_t gid, const struct dg_cred *cr,
		       enum dg_kill why)
{
	uint32_t kill = 0;

	if (why == DG_KILL_CHOWN) {
		if (S_ISDIR(mode))
			return mode;
		kill = S_ISUID;
		if (drop_sgid(mode, gid, cr))
			kill |= S_ISGID;
		return mode & ~kill;
	}
	/* A write or truncate: setattr_should_drop_suidgid(). */
	if (!S_ISREG(mode) || (cr && cr->fsetid))
		return mode;
	if (mode & S_ISUID)
		kill = S_ISUID;
	if (drop_sgid(mode, gid, cr))
		kill |= S_ISGID;
	return mode & ~kill;
}

void dg_setid_init_owner(const struct dg_dinode *dir, uint32_t *mode,
			 uint32_t *gid)
{
	if (!(dir->mode & S_ISGID))
		return;
	*gid = dir->gid;
	if (S_ISDIR(*mode))
		*mode |= S_ISGID;
}

uint32_t dg_setid_chmod(uint32_t mode, uint32_t gid, const struct dg_cred *cr)
{
	/* setattr_prepare(): "Also check the setgid bit!" */
	if ((mode & S_ISGID) && !in_group_or_capable(cr, gid))
		mode &= ~(uint32_t)S_ISGID;
	return mode;
}

/*
 * Before a write, truncate or chown: the new mode and the file
 * capabilities, as the kernel's file_remove_privs() and chown would
 * leave them, in the caller's transaction, so that no crash keeps the
 * write without the drop. Cheap when there is nothing to do. The
 * capability goes whoever writes (cap_inode_need_killpriv() does not
 * ask who).
 */
int dg_inode_kill_priv(struct dg_fs *fs, struct dg_txn *txn,
		       struct dg_inode *ip, const struct dg_cred *cr,
		       enum dg_kill why, bool *changed)
{
	uint32_t mode = ip->d.mode;
	bool maybe_caps = !S_ISDIR(mode) &&
			  (S_ISREG(mode) || why == DG_KILL_CHOWN);
	int ret;

	*changed = false;
	if (mode & (S_ISUID | S_ISGID)) {
		uint32_t newmode = dg_setid_kill(mode, ip->d.gid, cr, why);

		if (newmode != mode) {
			ip->d.mode = newmode;
			*changed = true;
		}
	}
	if (maybe_caps) {
		/* Cheap once known absent (fsys_i.h: xabsent). */
		ret = dg_xattr_get_locked(fs, ip, "security.capability",
					  NULL, 0);
		if (ret < 0 && ret != -ENODATA)
			return ret;
		if (ret >= 0) {
			static const struct dg_xset drop = {
				"security.capability", NULL, 0 };

			ret = dg_xattr_set_txn(fs, txn, ip, &drop, 1);
			if (ret)
				return ret;
			*changed = true;
		}
	}
	if (*changed)
		dg_inode_touch(ip, false, true);
	return 0;
}
