// SPDX-License-Identifier: MIT
/*
 * dir_load.c -- a directory's in-core index, built at its first use and
 * let go when the kernel forgets the directory (issue 34).
 *
 * Why not at mount: the index costs about 100 bytes a name (record,
 * name, hash slot), and a volume's names are what it stores, not what
 * is in use; loading them all made the daemon's memory, and its mount
 * time, grow with every file ever created. Now a directory costs
 * nothing until a lookup, readdir or change needs its names, and
 * nothing again once the kernel has forgotten it.
 *
 * Locking: readers of dp->dir hold fs->lock (read or write). The first
 * use may come under the read lock from several threads at once, so
 * the load runs under fs->dir_lock and the finished index is published
 * with a release store; an index is let go only under fs->lock held for
 * writing (dg_dir_evict), when no reader can be looking at it.
 */
#include <stdlib.h>
#include <string.h>

#include "fsys_i.h"

/* A directory naming an inode of a lost table page cannot tell what
 * that name is: it is served like one with a lost page (fsys_i.h). */
static void mark_naming_lost(struct dg_fs *fs, struct dg_inode *dp,
			     const struct dg_dir *dir)
{
	for (size_t i = 0; i < dir->nents && !dp->damaged; i++)
		if (dir->ents[i].ino && dg_ino_lost(fs, dir->ents[i].ino))
			dp->damaged = true;
}

/* Read dp's dirent pages into a new index (*dirp). A page that cannot
 * be read marks dp damaged: the directory serves what it still has. */
static int dir_read(struct dg_fs *fs, struct dg_inode *dp,
		    struct dg_dir **dirp)
{
	uint64_t npages = dp->d.size / DG_PAGE_SIZE;
	struct dg_dir *dir = NULL;
	uint8_t *p;
	int ret;

	p = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!p)
		return -ENOMEM;
	ret = dg_dir_new(&dir);
	for (uint64_t pg = 0; !ret && pg < npages; pg++) {
		uint64_t vpn, run;

		dg_ext_lookup(dp, pg, &vpn, &run);
		if (!vpn && dp->damaged) {
			/* Mapped by the lost extent page: the whole hole is
			 * skipped at once, as a damaged size can be huge. */
			if (run >= npages - pg)
				break;
			pg += run - 1;
			continue;
		}
		if (!vpn) {
			ret = DG_CORRUPT(fs->vol, "directory %" PRIu64
					 ": hole at page %" PRIu64, dp->ino, pg);
			break;
		}
		ret = dg_read(fs->vol, vpn, 1, p);
		if (ret == -EIO) {
			dg_vol_log(fs->vol, DG_LOG_ERR,
				   "directory %" PRIu64 ": page %" PRIu64
				   " is unreadable: lookups that miss and "
				   "changes give EIO until fsck", dp->ino, pg);
			dp->damaged = true;
			ret = 0;
			continue;
		}
		if (!ret)
			ret = dg_dir_parse_page(fs->vol, dir, dp->ino, pg, p);
	}
	free(p);
	if (!ret && fs->nlost)
		mark_naming_lost(fs, dp, dir);
	if (ret) {
		if (dir)
			dg_dir_free(dir);
		return ret;
	}
	*dirp = dir;
	return 0;
}

int dg_dir_get(struct dg_fs *fs, struct dg_inode *dp, struct dg_dir **dirp)
{
	struct dg_dir *dir = __atomic_load_n(&dp->dir, __ATOMIC_ACQUIRE);
	int ret = 0;

	if (dir) {
		*dirp = dir;
		return 0;
	}
	pthread_mutex_lock(&fs->dir_lock);
	dir = dp->dir;
	if (!dir) {
		ret = dir_read(fs, dp, &dir);
		if (!ret) {
			__atomic_store_n(&dp->dir, dir, __ATOMIC_RELEASE);
			fs->dirs_cached++;
			fs->dirs_loaded++;
		}
	}
	pthread_mutex_unlock(&fs->dir_lock);
	/* A bad record is the volume's to mend (fsck), not this caller's:
	 * the directory cannot be served. */
	if (ret == -EUCLEAN)
		ret = -EIO;
	if (!ret)
		*dirp = dir;
	return ret;
}

int dg_dir_borrow(struct dg_fs *fs, struct dg_inode *dp,
		  struct dg_dir **dirp, bool *own)
{
	struct dg_dir *dir = __atomic_load_n(&dp->dir, __ATOMIC_ACQUIRE);
	int ret;

	*own = false;
	if (dir) {
		*dirp = dir;
		return 0;
	}
	pthread_mutex_lock(&fs->dir_lock);
	ret = dir_read(fs, dp, dirp);
	pthread_mutex_unlock(&fs->dir_lock);
	*own = !ret;
	return ret == -EUCLEAN ? -EIO : ret;
}

void dg_dir_unborrow(struct dg_dir *dir, bool own)
{
	if (own)
		dg_dir_free(dir);
}

void dg_dir_evict(struct dg_fs *fs, struct dg_inode *dp)
{
	if (!dp->dir || dp->ino == DG_ROOT_INO)
		return;
	pthread_mutex_lock(&fs->dir_lock);
	dg_dir_free(dp->dir);
	dp->dir = NULL;
	fs->dirs_cached--;
	pthread_mutex_unlock(&fs->dir_lock);
}

void dg_fs_cache_counts(struct dg_fs *fs, struct dg_fs_cache *c)
{
	pthread_rwlock_rdlock(&fs->lock);
	pthread_mutex_lock(&fs->dir_lock);
	c->dirs_cached = fs->dirs_cached;
	c->dirs_loaded = fs->dirs_loaded;
	pthread_mutex_unlock(&fs->dir_lock);
	pthread_mutex_lock(&fs->ino_lock);
	c->inodes_cached = fs->icached;
	c->inode_loads = fs->iloads;
	pthread_mutex_unlock(&fs->ino_lock);
	pthread_rwlock_unlock(&fs->lock);
}
