// SPDX-License-Identifier: MIT
/* path.c -- whose is it: the path of an inode and the file that owns a
 * vpn, for log messages and fault reports */
#include <stdio.h>
#include <stdlib.h>
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

/* A directory off the media for one search, not kept in core. */
static bool name_in_record(struct dg_fs *fs, uint64_t dino,
			   const struct dg_dinode *d, uint64_t ino, char *name)
{
	struct dg_inode *dp;
	bool found = false;

	if (!S_ISDIR(d->mode) || !(dp = dg_inode_alloc_core(dino)))
		return false;
	dp->d = *d;
	if (dg_ext_load(fs, dp) == 0)
		found = name_in(fs, dp, ino, name);
	dg_inode_free_core(dp);
	return found;
}

/* Every directory, in core or on the media (the table streamed a page
 * at a time; nothing it reads stays in core). */
static bool find_name_anywhere(struct dg_fs *fs, uint64_t ino,
			       uint64_t *parent, char *name)
{
	uint8_t *pg = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint64_t end = (uint64_t)fs->root.nchunks * DG_INODES_PER_CHUNK;
	bool found = false;

	if (!pg)
		return false;
	for (uint64_t first = 0; first < end && !found;
	     first += DG_INODES_PER_PAGE) {
		uint64_t vpn;
		uint32_t off;
		bool read = false;

		for (uint64_t d = first; d < first + DG_INODES_PER_PAGE &&
					 !found; d++) {
			struct dg_inode *dp;

			if (!d || !dg_ino_used(fs, d))
				continue;
			pthread_mutex_lock(&fs->ino_lock);
			dp = dg_icache_peek(fs, d);
			pthread_mutex_unlock(&fs->ino_lock);
			if (dp) {
				found = !dp->reaped && name_in(fs, dp, ino, name);
			} else {
				dg_ino_where(fs, d, &vpn, &off);
				if (!read && dg_read(fs->vol, vpn, 1, pg))
					break;
				read = true;
				found = name_in_record(fs, d,
						       (const void *)(pg + off),
						       ino, name);
			}
			if (found)
				*parent = d;
		}
	}
	free(pg);
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
	return find_name_anywhere(fs, ino, parent, name);
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
	/* Not waited for either: a create holds it across its writes. */
	if (pthread_mutex_trylock(&fs->ino_lock)) {
		pthread_rwlock_unlock(&fs->lock);
		return -EAGAIN;
	}
	for (uint64_t b = 0; b < fs->nibucket && ret; b++) {
		for (struct dg_inode *ip = fs->ibucket[b]; ip && ret;
		     ip = ip->hnext) {
			if (pthread_rwlock_tryrdlock(&ip->lock)) {
				ret = -EAGAIN;
				continue;
			}
			if (dg_ext_owns(ip, vpn, fpage)) {
				*ino = ip->ino;
				ret = 0;
			}
			pthread_rwlock_unlock(&ip->lock);
		}
	}
	pthread_mutex_unlock(&fs->ino_lock);
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}
