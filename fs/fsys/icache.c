// SPDX-License-Identifier: MIT
/*
 * icache.c -- the inodes in core: read at their first use, let go when
 * nothing holds them (issue 34).
 *
 * Why not all at mount: an inode in core with its extent map costs
 * some 500 bytes, and the table holds every file the volume stores,
 * not the ones in use; loading them all made the daemon's memory grow
 * with every file ever created (1,000,000 files: ~500 MiB). Now the
 * mount streams the table for what it must know (mount.c: the slots in
 * use, the orphans, the stages and maps to finish), and an inode costs
 * memory from its first use until it is idle again and the cache is
 * past its bound (-o inode_cache).
 *
 * Locking: every user of a struct dg_inode holds fs->lock. A load may
 * come under the read lock from several threads at once: loads run
 * under iload_lock, so an inode is read once, and the buckets change
 * under ino_lock. An inode is let go only under fs->lock held for
 * writing, when no one can hold a pointer to it; one the kernel still
 * knows (nlookup), has open, maps or stages is never let go, so the
 * bound is inode_cache plus what the kernel and open files hold.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

#define MAX_EXTENTS (1u << 26)

static bool mode_ok(uint32_t mode)
{
	uint32_t t = mode & S_IFMT;

	return t == S_IFREG || t == S_IFDIR || t == S_IFLNK || t == S_IFIFO ||
	       t == S_IFSOCK || t == S_IFCHR || t == S_IFBLK;
}

int dg_dinode_check(const struct dg_vol *vol, uint64_t ino,
		    const struct dg_dinode *d)
{
	if (!mode_ok(d->mode))
		return DG_CORRUPT(vol, "inode %" PRIu64 ": bad mode %#o",
				  ino, d->mode);
	if (d->nextents > MAX_EXTENTS)
		return DG_CORRUPT(vol, "inode %" PRIu64 ": %u extents",
				  ino, d->nextents);
	return 0;
}

/* In-core inode only (icache.c loads them too). */
struct dg_inode *dg_inode_alloc_core(uint64_t ino)
{
	struct dg_inode *ip = calloc(1, sizeof(*ip));

	if (!ip)
		return NULL;
	ip->ino = ino;
	pthread_rwlock_init(&ip->lock, NULL);
	return ip;
}

void dg_inode_free_core(struct dg_inode *ip)
{
	if (!ip)
		return;
	if (ip->dir)
		dg_dir_free(ip->dir);
	dg_ext_free(ip);
	pthread_rwlock_destroy(&ip->lock);
	free(ip);
}

static uint64_t bucket_of(const struct dg_fs *fs, uint64_t ino)
{
	/* Fibonacci hashing: consecutive inos spread over the buckets. */
	return (ino * 0x9E3779B97F4A7C15ull) >> 32 & (fs->nibucket - 1);
}

struct dg_inode *dg_icache_peek(const struct dg_fs *fs, uint64_t ino)
{
	if (!fs->nibucket)
		return NULL;
	for (struct dg_inode *ip = fs->ibucket[bucket_of(fs, ino)]; ip;
	     ip = ip->hnext)
		if (ip->ino == ino)
			return ip;
	return NULL;
}

/* Twice the buckets, the chains moved over. */
static int grow(struct dg_fs *fs)
{
	uint64_t n = fs->nibucket ? fs->nibucket * 2 : 64, old = fs->nibucket;
	struct dg_inode **b = calloc(n, sizeof(*b)), **ob = fs->ibucket;

	if (!b)
		return -ENOMEM;
	fs->ibucket = b;
	fs->nibucket = n;
	for (uint64_t i = 0; i < old; i++) {
		struct dg_inode *ip = ob[i], *next;

		for (; ip; ip = next) {
			uint64_t k = bucket_of(fs, ip->ino);

			next = ip->hnext;
			ip->hnext = b[k];
			b[k] = ip;
		}
	}
	free(ob);
	return 0;
}

int dg_icache_add(struct dg_fs *fs, struct dg_inode *ip)
{
	uint64_t k;

	if (fs->icached >= fs->nibucket) {
		int ret = grow(fs);

		/* Longer chains, not a failure, once some exist. */
		if (ret && !fs->nibucket)
			return ret;
	}
	k = bucket_of(fs, ip->ino);
	ip->hnext = fs->ibucket[k];
	fs->ibucket[k] = ip;
	fs->icached++;
	return 0;
}

void dg_icache_del(struct dg_fs *fs, struct dg_inode *ip)
{
	struct dg_inode **pp = &fs->ibucket[bucket_of(fs, ip->ino)];

	for (; *pp; pp = &(*pp)->hnext)
		if (*pp == ip) {
			*pp = ip->hnext;
			ip->hnext = NULL;
			fs->icached--;
			return;
		}
}

int dg_icache_list(struct dg_fs *fs, struct dg_inode ***ips, uint64_t *n)
{
	struct dg_inode **a = malloc((fs->icached + 1) * sizeof(*a));

	*n = 0;
	if (!a)
		return -ENOMEM;
	for (uint64_t i = 0; i < fs->nibucket; i++)
		for (struct dg_inode *ip = fs->ibucket[i]; ip; ip = ip->hnext)
			a[(*n)++] = ip;
	*ips = a;
	return 0;
}

/* Whether d's inline extent map walks clean, asked quietly: a
 * neighbour's malformed map is its own load's to report (once). */
static bool inline_map_ok(struct dg_vol *vol, const struct dg_dinode *d)
{
	struct dg_emap_reader r;
	const struct dg_dextent *e;
	int k;

	/* A remap page would be a read of its own (remap.c): not here. */
	if (d->remap_vpn)
		return false;
	/* No page buffer: a map that goes on past the record fails. */
	dg_emap_begin(&r, vol, d, NULL);
	while ((k = dg_emap_next(&r, &e)) > 0)
		;
	return k == DG_EMAP_END;
}

/*
 * The other inodes on the table page pg just read for one: a listing or
 * a walk asks for them soon, and the read verified them already, so
 * each would otherwise cost a page read and its check for 256 bytes
 * (`ls -l` of 200,000 files: 5.5 times slower than with every inode in
 * core). Taken: slots in use, not in core (that copy is newer), not on
 * a lost page, whose record checks and whose extents are in the record
 * (an extent chain would be more reads, and its faults reported for a
 * file no one asked for) -- and only while the cache is under its
 * bound, since a load may run under fs->lock held for reading, where
 * nothing may be let go. What fails here is skipped, not reported: its
 * own load reads it again and says why. iload_lock held.
 */
static void take_neighbours(struct dg_fs *fs, uint64_t ino, const uint8_t *pg)
{
	uint64_t first = ino - ino % DG_INODES_PER_PAGE;

	for (uint32_t k = 0; k < DG_INODES_PER_PAGE; k++) {
		const struct dg_dinode *d = (const void *)(pg +
							   k * DG_INODE_SIZE);
		uint64_t n = first + k;
		struct dg_inode *ip;
		bool want;

		if (n == ino || !n || !mode_ok(d->mode) || d->emap_vpn ||
		    d->nextents > MAX_EXTENTS || !inline_map_ok(fs->vol, d))
			continue;
		pthread_mutex_lock(&fs->ino_lock);
		want = fs->icached < dg_icache_limit(fs) && dg_ino_used(fs, n) &&
		       !dg_icache_peek(fs, n) && !dg_ino_lost(fs, n);
		pthread_mutex_unlock(&fs->ino_lock);
		if (!want)
			continue;
		ip = dg_inode_alloc_core(n);
		if (!ip)
			return;
		ip->d = *d;
		if (dg_ext_load(fs, ip)) {
			dg_inode_free_core(ip);
			continue;
		}
		pthread_mutex_lock(&fs->ino_lock);
		if (dg_icache_add(fs, ip)) {
			pthread_mutex_unlock(&fs->ino_lock);
			dg_inode_free_core(ip);
			return;
		}
		pthread_mutex_unlock(&fs->ino_lock);
	}
}

/* Inode ino's record is unreadable or malformed, or its extent map
 * is malformed: a damaged stub kept in core, so the status counts it
 * and the next use neither reads nor logs it again; finds of it give
 * EIO (look()). Never idle: it stays until fsck. */
static int unreadable(uint64_t ino, struct dg_inode **ipp)
{
	struct dg_inode *ip = dg_inode_alloc_core(ino);

	if (!ip)
		return -EIO;
	ip->damaged = true;
	ip->unreadable = true;
	*ipp = ip;
	return 0;
}

/* Read inode ino off its table page (iload_lock held). */
static int inode_read(struct dg_fs *fs, uint64_t ino, struct dg_inode **ipp)
{
	uint8_t *pg = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	const struct dg_dinode *d;
	struct dg_inode *ip;
	uint64_t vpn;
	uint32_t off;
	int ret;

	if (!pg)
		return -ENOMEM;
	pthread_mutex_lock(&fs->ino_lock);
	dg_ino_where(fs, ino, &vpn, &off);
	pthread_mutex_unlock(&fs->ino_lock);
	ret = dg_read(fs->vol, vpn, 1, pg);
	d = (const void *)(pg + off);
	if (!ret && !d->mode)
		ret = DG_CORRUPT(fs->vol, "inode %" PRIu64 ": in use at "
				 "mount, free on the media now", ino);
	if (!ret)
		ret = dg_dinode_check(fs->vol, ino, d);
	if (ret) {
		free(pg);
		return ret == -EUCLEAN || ret == -EIO ? unreadable(ino, ipp)
						      : ret;
	}
	ip = dg_inode_alloc_core(ino);
	if (!ip) {
		free(pg);
		return -ENOMEM;
	}
	ip->d = *d;
	take_neighbours(fs, ino, pg);
	free(pg);
	ret = dg_ext_load(fs, ip);
	if (ret == -EIO) {
		dg_vol_log(fs->vol, DG_LOG_ERR,
			   "inode %" PRIu64 ": an extent page is unreadable: "
			   "its data gives EIO until fsck", ino);
		ip->damaged = true;
		ret = 0;
	}
	if (ret) {
		dg_inode_free_core(ip);
		/* A map whose checksums hold but whose structure does not
		 * (a software bug; dg_ext_load() said why, once) is served
		 * as a lost record is: a stub, counted, EIO on every find,
		 * never read nor logged again until fsck. Its extents are
		 * not trusted even in part: nothing frees by them. */
		return ret == -EUCLEAN ? unreadable(ino, ipp) : ret;
	}
	*ipp = ip;
	return 0;
}

/* The inode in core or free (ENOENT), under ino_lock; 1: to be read. */
static int look(struct dg_fs *fs, uint64_t ino, bool reaped,
		struct dg_inode **ipp)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&fs->ino_lock);
	if (ino && ino < (uint64_t)fs->root.nchunks * DG_INODES_PER_CHUNK) {
		*ipp = dg_icache_peek(fs, ino);
		if (*ipp && (*ipp)->unreadable)
			ret = -EIO;
		else if (*ipp)
			ret = !(*ipp)->reaped || reaped ? 0 : -ENOENT;
		else if (dg_ino_used(fs, ino))
			ret = 1;
	}
	pthread_mutex_unlock(&fs->ino_lock);
	return ret;
}

int dg_inode_find(struct dg_fs *fs, uint64_t ino, bool reaped,
		  struct dg_inode **ipp)
{
	struct dg_inode *ip = NULL;
	int ret = look(fs, ino, reaped, ipp);

	if (ret <= 0)
		return ret;
	pthread_mutex_lock(&fs->iload_lock);
	ret = look(fs, ino, reaped, ipp); /* another reader's load? */
	if (ret == 1)
		ret = inode_read(fs, ino, &ip);
	if (ret == 0 && ip) {
		pthread_mutex_lock(&fs->ino_lock);
		ret = dg_icache_add(fs, ip);
		fs->iloads += !ret;
		pthread_mutex_unlock(&fs->ino_lock);
		if (ret)
			dg_inode_free_core(ip);
		else
			*ipp = ip;
		if (!ret && ip->unreadable)
			ret = -EIO;
	}
	pthread_mutex_unlock(&fs->iload_lock);
	return ret;
}

struct dg_inode *dg_inode_get(struct dg_fs *fs, uint64_t ino)
{
	struct dg_inode *ip;

	return dg_inode_find(fs, ino, false, &ip) ? NULL : ip;
}

struct dg_inode *dg_inode_slot(struct dg_fs *fs, uint64_t ino)
{
	struct dg_inode *ip;

	return dg_inode_find(fs, ino, true, &ip) ? NULL : ip;
}

void dg_icache_free(struct dg_fs *fs)
{
	for (uint64_t i = 0; i < fs->nibucket; i++) {
		struct dg_inode *ip = fs->ibucket[i], *next;

		for (; ip; ip = next) {
			next = ip->hnext;
			dg_inode_free_core(ip);
		}
	}
	free(fs->ibucket);
	fs->ibucket = NULL;
	fs->nibucket = fs->icached = 0;
}
