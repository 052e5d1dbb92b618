// SPDX-License-Identifier: MIT
/* path.c -- whose is it: the path of an inode and the file that owns a
 * vpn, for log messages and fault reports */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

/* The name of ino in directory dp (copied to name), if it has one
 * there; a directory not in core is read for the search only. */
static bool name_in(struct dg_fs *fs, struct dg_inode *dp, uint64_t ino,
		    char *name)
{
	struct dg_dir *dir;
	bool found = false, own;

	if (!dp || !S_ISDIR(dp->d.mode) || dg_dir_borrow(fs, dp, &dir, &own))
		return false;
	for (size_t i = 0; i < dir->nents && !found; i++)
		if (dir->ents[i].ino == ino) {
			snprintf(name, DG_NAME_MAX + 1, "%s",
				 dir->ents[i].name);
			found = true;
		}
	dg_dir_unborrow(dir, own);
	return found;
}

/*
 * A name of ino and the directory that holds it. The inode says where
 * it was made or last moved to (d.parent), and that directory is the
 * one to read; only a file whose first name went while another stayed
 * (a hard link) sends the search through every directory: log messages
 * and fault reports, not a hot path.
 */
static bool find_name(struct dg_fs *fs, uint64_t ino, uint64_t *parent,
		      char *name)
{
	struct dg_inode *ip = dg_inode_slot(fs, ino);

	if (ip && name_in(fs, dg_inode_get(fs, ip->d.parent), ino, name)) {
		*parent = ip->d.parent;
		return true;
	}
	for (uint64_t d = 1; d < fs->icap; d++) {
		if (name_in(fs, dg_inode_get(fs, d), ino, name)) {
			*parent = d;
			return true;
		}
	}
	return false;
}

void dg_fs_path(struct dg_fs *fs, uint64_t ino, char *buf, size_t len)
{
	char tmp[4096] = "";
	unsigned depth = 0;

	/* Readers may nest: the default rwlock prefers readers. */
	pthread_rwlock_rdlock(&fs->lock);
	while (ino != DG_ROOT_INO && depth++ < 64) {
		uint64_t parent;
		char name[DG_NAME_MAX + 1];
		char part[4096];

		if (!find_name(fs, ino, &parent, name)) {
			snprintf(part, sizeof(part), "?ino%" PRIu64 "%s", ino,
				 tmp);
			snprintf(tmp, sizeof(tmp), "%s", part);
			break;
		}
		snprintf(part, sizeof(part), "/%s%s", name, tmp);
		snprintf(tmp, sizeof(tmp), "%s", part);
		ino = parent;
	}
	pthread_rwlock_unlock(&fs->lock);
	snprintf(buf, len, "%s", tmp[0] ? tmp : "/");
}

/*
 * The extents of a file being written change under its own lock (a
 * leaf may be reallocated), so they are read under it. Not waited for:
 * this runs under the lost-page registry's lock, from the fault path
 * too, whose caller may hold that very inode's lock for writing. A
 * file busy now is "not known" (-EAGAIN) when no other file owns the
 * page; the registry's resolution pass (owner_scan.c) asks again.
 */
int dg_fs_owner(struct dg_fs *fs, uint64_t vpn, uint64_t *ino, uint64_t *fpage)
{
	int ret = -ENOENT;

	pthread_rwlock_rdlock(&fs->lock);
	for (uint64_t i = 1; i < fs->icap && ret; i++) {
		struct dg_inode *ip = fs->itab[i];

		if (!ip)
			continue;
		if (pthread_rwlock_tryrdlock(&ip->lock)) {
			ret = -EAGAIN;
			continue;
		}
		if (dg_ext_owns(ip, vpn, fpage)) {
			*ino = i;
			ret = 0;
		}
		pthread_rwlock_unlock(&ip->lock);
	}
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}
