// SPDX-License-Identifier: MIT
/*
 * icache_sweep.c -- which inodes in core may go, and letting them go
 * (issue 34): at a forget or release past the bound, and in sweeps down
 * to 7/8 of it. Apart from icache.c (the hash and the loads) for a
 * sweep stores times (inode.c), and inode.c calls into the hash.
 * fs->lock held for writing throughout.
 */
#include <stdlib.h>

#include "fsys_i.h"

/* Idle once its times are on the media (dg_inode_idle()). */
static bool idle_but_times(const struct dg_fs *fs, const struct dg_inode *ip)
{
	/* A damaged inode keeps its mark (and its count in the status);
	 * one with unlinked names, a stage or a map to recover is the
	 * mount's or the release's business. */
	return ip->ino != DG_ROOT_INO && !ip->nlookup && !ip->nopen &&
	       !ip->map_rw && !ip->map_ro &&
	       !ip->reaped && !ip->damaged && ip->d.nlink &&
	       !ip->d.stage_ino && !ip->d.map_flags && !fs->broken;
}

bool dg_inode_idle(const struct dg_fs *fs, const struct dg_inode *ip)
{
	return !ip->times_dirty && idle_but_times(fs, ip);
}

/* Let ip go (fs->lock held for writing). */
static void evict(struct dg_fs *fs, struct dg_inode *ip)
{
	dg_dir_evict(fs, ip);
	pthread_mutex_lock(&fs->ino_lock);
	dg_icache_del(fs, ip);
	pthread_mutex_unlock(&fs->ino_lock);
	dg_inode_free_core(ip);
	/* Back under the bound: the next one over it sweeps. */
	if (fs->icached <= dg_icache_limit(fs))
		fs->icache_sweep_at = 0;
}

/* Inodes a sweep stores the times of in one transaction. */
#define TIMES_BATCH 32

/*
 * The times of ips[0..n) (idle but for them) onto the media in one
 * transaction, so they can go: a write the writeback hold commits
 * after the file's release and forget leaves its times in core, with
 * no store or fsync to come, and would pin it for the mount's life.
 * On failure they stay dirty (and in core).
 */
static void store_times(struct dg_fs *fs, struct dg_inode **ips, unsigned n)
{
	struct dg_txn *txn;
	unsigned i;
	int ret = 0;

	if (!n || dg_vol_read_only(fs->vol))
		return;
	txn = dg_txn_new(fs->vol);
	if (!txn)
		return;
	for (i = 0; i < n && !ret; i++)
		ret = dg_inode_store(fs, txn, ips[i]);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	if (ret)
		for (i = 0; i < n; i++)
			ips[i]->times_dirty = true;
	dg_txn_free(txn);
}

/* Idle ones among ips[0..n) with times to store, stored a batch at a
 * time, until enough could go to bring the cache down to low. */
static void sweep_times(struct dg_fs *fs, struct dg_inode **ips, uint64_t n,
			uint64_t low)
{
	struct dg_inode *batch[TIMES_BATCH];
	uint64_t could_go = 0;
	unsigned nb = 0;

	for (uint64_t i = 0; i < n; i++)
		could_go += dg_inode_idle(fs, ips[i]);
	for (uint64_t i = 0; i < n && fs->icached - could_go > low; i++) {
		if (!ips[i]->times_dirty || !idle_but_times(fs, ips[i]))
			continue;
		batch[nb++] = ips[i];
		could_go++;
		if (nb == TIMES_BATCH) {
			store_times(fs, batch, nb);
			nb = 0;
		}
	}
	store_times(fs, batch, nb);
}

/*
 * Down to 7/8 of the bound, so the next sweep is an eighth of the bound
 * of loads away: a sweep visits every inode in core, and so costs O(1)
 * a load over time. When inodes that are held keep the cache above the
 * bound, the next sweep waits for as many loads again.
 */
void dg_icache_sweep(struct dg_fs *fs)
{
	uint64_t limit = dg_icache_limit(fs), low = limit - limit / 8, at;
	struct dg_inode **ips;
	uint64_t n;

	if (fs->icached <= limit || fs->icached <= fs->icache_sweep_at)
		return;
	pthread_mutex_lock(&fs->ino_lock);
	n = 0;
	ips = NULL;
	if (dg_icache_list(fs, &ips, &n))
		n = 0;
	pthread_mutex_unlock(&fs->ino_lock);
	sweep_times(fs, ips, n, low);
	for (uint64_t i = 0; i < n && fs->icached > low; i++)
		if (dg_inode_idle(fs, ips[i]))
			evict(fs, ips[i]);
	free(ips);
	at = fs->icached + limit / 8;
	fs->icache_sweep_at = at > limit ? at : limit;
}

/* ino just became idle (a forget, a release): past 7/8 of the bound,
 * it goes at once (its times stored first if they are all it holds), so
 * what the kernel forgets is let go whoever holds the cache above it --
 * and a burst of forgets (the kernel dropping its caches) leaves the last
 * eighth free for the next loads to take their pages' neighbours into
 * (icache.c, take_neighbours(): a load under the shared lock cannot make
 * room). fs->lock held for writing. */
void dg_icache_settle(struct dg_fs *fs, uint64_t ino)
{
	uint64_t limit = dg_icache_limit(fs), high = limit - limit / 8;
	struct dg_inode *ip;

	pthread_mutex_lock(&fs->ino_lock);
	ip = dg_icache_peek(fs, ino);
	pthread_mutex_unlock(&fs->ino_lock);
	if (ip && fs->icached > high && ip->times_dirty &&
	    idle_but_times(fs, ip))
		dg_inode_flush_times(fs, ip);
	if (ip && fs->icached > high && dg_inode_idle(fs, ip))
		evict(fs, ip);
	dg_icache_sweep(fs);
}

void dg_fs_set_inode_cache(struct dg_fs *fs, uint64_t n)
{
	pthread_rwlock_wrlock(&fs->lock);
	fs->icache_limit = n;
	fs->icache_sweep_at = 0;
	dg_icache_sweep(fs);
	pthread_rwlock_unlock(&fs->lock);
}
