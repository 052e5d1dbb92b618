// SPDX-License-Identifier: MIT
/* inode.c -- the inode table: allocate, store, destroy */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

int64_t dg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec ns_ts(int64_t ns)
{
	/* Floor division: times before 1970 keep tv_nsec in [0, 1e9). */
	int64_t sec = ns / 1000000000, nsec = ns % 1000000000;

	if (nsec < 0) {
		sec--;
		nsec += 1000000000;
	}
	return (struct timespec){ sec, nsec };
}

void dg_inode_attr(const struct dg_inode *ip, struct dg_attr *a)
{
	a->ino = ip->ino;
	a->mode = ip->d.mode;
	a->nlink = ip->d.nlink;
	a->uid = ip->d.uid;
	a->gid = ip->d.gid;
	a->size = ip->d.size;
	a->blocks = ip->d.blocks + dg_remap_blocks(ip);
	a->rdev = ip->d.rdev;
	a->atime = ns_ts(ip->d.atime_ns);
	a->mtime = ns_ts(ip->d.mtime_ns);
	a->ctime = ns_ts(ip->d.ctime_ns);
	a->generation = ip->d.generation;
}

void dg_inode_touch(struct dg_inode *ip, bool mtime, bool ctime)
{
	int64_t now = dg_now_ns();

	if (mtime)
		ip->d.mtime_ns = now;
	if (ctime)
		ip->d.ctime_ns = now;
}

int dg_inode_store(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip)
{
	uint64_t vpn;
	uint32_t off;

	dg_ino_where(fs, ip->ino, &vpn, &off);
	ip->times_dirty = false;
	return dg_txn_write(txn, vpn, off, &ip->d, sizeof(ip->d));
}

int dg_inode_flush_times(struct dg_fs *fs, struct dg_inode *ip)
{
	struct dg_txn *txn;
	int ret;

	if (!ip->times_dirty || ip->reaped || fs->broken ||
	    dg_vol_read_only(fs->vol))
		return 0;
	txn = dg_txn_new(fs->vol);
	if (!txn)
		return -ENOMEM;
	ret = dg_inode_store(fs, txn, ip);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	dg_txn_free(txn);
	return ret;
}

int dg_fs_commit(struct dg_fs *fs, struct dg_txn *txn)
{
	int ret = dg_txn_commit(txn);

	if (ret && !fs->broken) {
		/* In-core state ran ahead of the media: stop changing it. */
		fs->broken = true;
		dg_vol_log(fs->vol, DG_LOG_ERR,
			   "filesystem update failed (%s): refusing "
			   "further changes until remount", strerror(-ret));
	}
	return ret;
}

/* A new inode table chunk: contiguous zeroed pages recorded in the root. */
static int add_chunk(struct dg_fs *fs, struct dg_txn *txn)
{
	static const uint8_t zero[DG_PAGE_SIZE];
	uint64_t start, got;
	int ret;

	ret = dg_alloc_exact(txn, DG_ITABLE_CHUNK_PAGES, true, &start);
	if (ret)
		return ret;
	got = DG_ITABLE_CHUNK_PAGES;
	/* Reused pages may hold old bytes; slots must read as free. */
	for (uint64_t i = 0; i < got; i++) {
		ret = dg_txn_write(txn, start + i, 0, zero, sizeof(zero));
		if (ret)
			return ret;
	}
	return dg_itable_add(fs, txn, start);
}

/*
 * The order new inodes are handed out in: position pos of a chunk is
 * slot pos / 64 of its page pos % 64, so that files created one after
 * another have their inodes on different pages of the table. Each
 * allocating write of a file rewrites its inode (size, block count),
 * under the lock of the inode's row; with the sixteen inodes of a page
 * handed out in turn, four writers of four new files queued on one row
 * (fio, four jobs writing into new sparse files: 37k-39k writes/s, 43k-47k
 * with the inodes spread). Only the choice of a free slot: an inode's
 * place is its number, as ever (format.h).
 */
static uint64_t ino_at(uint64_t pos)
{
	uint64_t j = pos % DG_INODES_PER_CHUNK;

	return pos - j + j % DG_ITABLE_CHUNK_PAGES * DG_INODES_PER_PAGE +
	       j / DG_ITABLE_CHUNK_PAGES;
}

static uint64_t pos_of(uint64_t ino)
{
	uint64_t j = ino % DG_INODES_PER_CHUNK;

	return ino - j + j % DG_INODES_PER_PAGE * DG_ITABLE_CHUNK_PAGES +
	       j / DG_INODES_PER_PAGE;
}

static bool ino_free(const struct dg_fs *fs, uint64_t ino)
{
	return ino > 0 && !dg_ino_used(fs, ino) && !dg_ino_lost(fs, ino);
}

/* Every slot of chunk c is in use (ino 0, never used, counts as taken). */
static bool chunk_full(const struct dg_fs *fs, uint64_t c)
{
	return fs->chunk_used[c] >= DG_INODES_PER_CHUNK - (c == 0);
}

/*
 * The first free slot in [pos, end) in ino_at() order, its inode in
 * *ino; end if none. A full chunk is stepped over whole: freeing an old
 * inode moves the hint back to it, and the create after the one that
 * takes it would otherwise walk every live inode up to the next hole.
 */
static uint64_t find_free(struct dg_fs *fs, uint64_t pos, uint64_t end,
			  uint64_t *ino)
{
	while (pos < end) {
		uint64_t c = pos / DG_INODES_PER_CHUNK;

		fs->ino_scanned++;
		if (chunk_full(fs, c)) {
			pos = (c + 1) * DG_INODES_PER_CHUNK;
			continue;
		}
		if (ino_free(fs, *ino = ino_at(pos)))
			return pos;
		pos++;
	}
	return end;
}

int dg_inode_new(struct dg_fs *fs, struct dg_txn *txn, uint32_t mode,
		 uint32_t uid, uint32_t gid, struct dg_inode **ipp)
{
	struct dg_inode *ip;
	uint64_t ino = 0, pos, end;
	int ret;

	pthread_mutex_lock(&fs->ino_lock);
	/* The chunks the root record has, not the room in core: a create
	 * whose new chunk was not committed gives the chunk back
	 * (root.nchunks) but leaves the arrays grown, and a slot there has
	 * no page on the media. */
	end = (uint64_t)fs->root.nchunks * DG_INODES_PER_CHUNK;
	pos = find_free(fs, fs->next_free_pos, end, &ino);
	if (pos >= end) {
		pos = find_free(fs, 0, fs->next_free_pos, &ino);
		if (pos >= fs->next_free_pos) {
			ret = add_chunk(fs, txn);
			if (ret)
				goto out;
			/* ino 0 is never used; the root is the first. */
			pos = (fs->root.nchunks - 1) * DG_INODES_PER_CHUNK;
			ino = ino_at(pos) ? ino_at(pos) : DG_ROOT_INO;
			pos = pos_of(ino);
		}
	}
	ip = dg_inode_alloc_core(ino);
	if (!ip) {
		ret = -ENOMEM;
		goto out;
	}
	ip->d.mode = mode;
	ip->d.nlink = S_ISDIR(mode) ? 2 : 1;
	ip->d.uid = uid;
	ip->d.gid = gid;
	ip->d.atime_ns = ip->d.mtime_ns = ip->d.ctime_ns = ip->d.btime_ns =
		dg_now_ns();
	ret = dg_icache_add(fs, ip);
	if (ret) {
		dg_inode_free_core(ip);
		goto out;
	}
	ip->d.generation = ++fs->gen_counter;
	dg_ino_mark(fs, ino, true);
	fs->inodes_used++;
	fs->chunk_used[ino / DG_INODES_PER_CHUNK]++;
	fs->next_free_pos = pos + 1;
	*ipp = ip;
	ret = 0;
out:
	pthread_mutex_unlock(&fs->ino_lock);
	return ret;
}

void dg_inode_discard(struct dg_fs *fs, struct dg_inode *ip)
{
	if (ip->dir)
		fs->dirs_cached--;	/* under fs->lock (write) */
	pthread_mutex_lock(&fs->ino_lock);
	dg_icache_del(fs, ip);
	dg_ino_mark(fs, ip->ino, false);
	fs->inodes_used--;
	fs->chunk_used[ip->ino / DG_INODES_PER_CHUNK]--;
	if (pos_of(ip->ino) < fs->next_free_pos)
		fs->next_free_pos = pos_of(ip->ino);
	pthread_mutex_unlock(&fs->ino_lock);
	dg_inode_free_core(ip);
}

int dg_inode_destroy(struct dg_fs *fs, struct dg_txn *txn,
		     struct dg_inode *ip)
{
	uint64_t vpn;
	uint32_t off;
	int ret;

	ret = dg_ext_punch(fs, txn, ip, 0, UINT64_MAX / 2);
	/* The xattr run (xattr.c) goes with the inode. */
	if (!ret)
		ret = dg_xattr_drop(fs, txn, ip);
	if (ret)
		return ret;
	dg_ino_where(fs, ip->ino, &vpn, &off);
	memset(&ip->d, 0, sizeof(ip->d));
	return dg_txn_write(txn, vpn, off, &ip->d, sizeof(ip->d));
}

/*
 * Why wait for the kernel's forget to free an unlinked inode that no
 * one has open? Freeing it in the unlink's own transaction saves a
 * commit per deleted file, and a crash can leave no orphan behind. The
 * kernel may still name the inode until it forgets it: it stays in
 * core, reaped, answering getattr (nlink 0) and nothing else. Open
 * files and maps keep the old path (destroy at release or forget), and
 * so do directories, which a process may still sit in.
 */
int dg_inode_drop_last(struct dg_fs *fs, struct dg_txn *txn,
		       struct dg_inode *ip)
{
	struct dg_dinode keep = ip->d;
	int ret;

	if (ip->d.nlink || ip->nopen || ip->map_rw || ip->map_ro ||
	    S_ISDIR(ip->d.mode))
		return dg_inode_store(fs, txn, ip);
	ret = dg_inode_destroy(fs, txn, ip);
	if (ret)
		return ret;
	keep.blocks = 0;	/* what getattr shows until the forget */
	ip->d = keep;
	ip->reaped = true;
	return 0;
}

void dg_inode_maybe_destroy(struct dg_fs *fs, struct dg_inode *ip)
{
	struct dg_txn *txn;

	if (ip->reaped) {
		if (!ip->nlookup)
			dg_inode_discard(fs, ip);
		return;
	}
	/* A damaged inode's lost pages are not known to free: fsck's. */
	if (ip->d.nlink || ip->nlookup || ip->nopen || fs->broken ||
	    ip->damaged || dg_vol_read_only(fs->vol))
		return;
	txn = dg_txn_new(fs->vol);
	if (!txn)
		return;
	if (dg_inode_destroy(fs, txn, ip) == 0 && dg_fs_commit(fs, txn) == 0)
		dg_inode_discard(fs, ip);
	dg_txn_free(txn);
}
