// SPDX-License-Identifier: MIT
/* inode.c -- the inode table: load, allocate, store, destroy; fs open */
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
	a->blocks = ip->d.blocks;
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

struct dg_inode *dg_inode_slot(struct dg_fs *fs, uint64_t ino)
{
	struct dg_inode *ip = NULL;

	pthread_mutex_lock(&fs->ino_lock);
	if (ino < fs->icap)
		ip = fs->itab[ino];
	pthread_mutex_unlock(&fs->ino_lock);
	return ip;
}

struct dg_inode *dg_inode_get(struct dg_fs *fs, uint64_t ino)
{
	struct dg_inode *ip = dg_inode_slot(fs, ino);

	return ip && !ip->reaped ? ip : NULL;
}

static void ino_where(const struct dg_fs *fs, uint64_t ino, uint64_t *vpn,
		      uint32_t *off)
{
	uint64_t slot = ino % DG_INODES_PER_CHUNK;

	*vpn = fs->root.chunks[ino / DG_INODES_PER_CHUNK] +
	       slot / DG_INODES_PER_PAGE;
	*off = (uint32_t)(slot % DG_INODES_PER_PAGE) * DG_INODE_SIZE;
}

int dg_inode_store(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip)
{
	uint64_t vpn;
	uint32_t off;

	ino_where(fs, ip->ino, &vpn, &off);
	ip->times_dirty = false;
	return dg_txn_write(txn, vpn, off, &ip->d, sizeof(ip->d));
}

int dg_inode_flush_times(struct dg_fs *fs, struct dg_inode *ip)
{
	struct dg_txn *txn;
	int ret;

	if (!ip->times_dirty || ip->reaped || fs->broken ||
	    fs->vol->read_only)
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
		dg_log(DG_LOG_ERR, "filesystem update failed (%s): refusing "
		       "further changes until remount", strerror(-ret));
	}
	return ret;
}

static struct dg_inode *inode_alloc_core(uint64_t ino)
{
	struct dg_inode *ip = calloc(1, sizeof(*ip));

	if (!ip)
		return NULL;
	ip->ino = ino;
	pthread_rwlock_init(&ip->lock, NULL);
	return ip;
}

static void inode_free_core(struct dg_inode *ip)
{
	if (!ip)
		return;
	if (ip->dir)
		dg_dir_free(ip->dir);
	dg_ext_free(ip);
	pthread_rwlock_destroy(&ip->lock);
	free(ip);
}

static int itab_grow(struct dg_fs *fs, uint64_t cap)
{
	struct dg_inode **n;

	if (cap <= fs->icap)
		return 0;
	n = realloc(fs->itab, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + fs->icap, 0, (cap - fs->icap) * sizeof(*n));
	fs->itab = n;
	fs->icap = cap;
	return 0;
}

/* A new inode table chunk: contiguous zeroed pages recorded in the root. */
static int add_chunk(struct dg_fs *fs, struct dg_txn *txn)
{
	static const uint8_t zero[DG_PAGE_SIZE];
	uint64_t start, got, n = fs->root.nchunks;
	int ret;

	if (n == DG_MAX_ICHUNKS)
		return -ENOSPC;
	ret = dg_alloc_exact(txn, DG_ITABLE_CHUNK_PAGES, &start);
	if (ret)
		return ret;
	got = DG_ITABLE_CHUNK_PAGES;
	/* Reused pages may hold old bytes; slots must read as free. */
	for (uint64_t i = 0; i < got; i++) {
		ret = dg_txn_write(txn, start + i, 0, zero, sizeof(zero));
		if (ret)
			return ret;
	}
	ret = itab_grow(fs, (n + 1) * DG_INODES_PER_CHUNK);
	if (ret)
		return ret;
	fs->root.chunks[n] = start;
	fs->root.nchunks++;
	return dg_txn_write(txn, 0, offsetof(struct dg_droot, fs), &fs->root,
			    sizeof(fs->root));
}

int dg_inode_new(struct dg_fs *fs, struct dg_txn *txn, uint32_t mode,
		 uint32_t uid, uint32_t gid, struct dg_inode **ipp)
{
	struct dg_inode *ip;
	uint64_t ino;
	int ret;

	pthread_mutex_lock(&fs->ino_lock);
	for (ino = fs->next_free_ino; ino < fs->icap; ino++)
		if (ino > 0 && !fs->itab[ino] && !dg_ino_lost(fs, ino))
			break;
	if (ino >= fs->icap) {
		for (ino = DG_ROOT_INO + 1; ino < fs->next_free_ino; ino++)
			if (!fs->itab[ino] && !dg_ino_lost(fs, ino))
				break;
		if (ino >= fs->next_free_ino) {
			ret = add_chunk(fs, txn);
			if (ret)
				goto out;
			ino = (fs->root.nchunks - 1) * DG_INODES_PER_CHUNK;
			if (ino == 0)
				ino = DG_ROOT_INO;
		}
	}
	ip = inode_alloc_core(ino);
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
	ip->d.generation = ++fs->gen_counter;
	fs->itab[ino] = ip;
	fs->inodes_used++;
	fs->next_free_ino = ino + 1;
	*ipp = ip;
	ret = 0;
out:
	pthread_mutex_unlock(&fs->ino_lock);
	return ret;
}

void dg_inode_discard(struct dg_fs *fs, struct dg_inode *ip)
{
	pthread_mutex_lock(&fs->ino_lock);
	fs->itab[ip->ino] = NULL;
	fs->inodes_used--;
	if (ip->ino < fs->next_free_ino)
		fs->next_free_ino = ip->ino;
	pthread_mutex_unlock(&fs->ino_lock);
	inode_free_core(ip);
}

int dg_inode_destroy(struct dg_fs *fs, struct dg_txn *txn,
		     struct dg_inode *ip)
{
	uint64_t vpn;
	uint32_t off;
	int ret;

	ret = dg_ext_punch(fs, txn, ip, 0, UINT64_MAX / 2);
	if (!ret)
		ret = dg_xattr_drop(fs, txn, ip);
	if (ret)
		return ret;
	ino_where(fs, ip->ino, &vpn, &off);
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
	    ip->damaged || dg_fs_vol(fs)->read_only)
		return;
	txn = dg_txn_new(fs->vol);
	if (!txn)
		return;
	if (dg_inode_destroy(fs, txn, ip) == 0 && dg_fs_commit(fs, txn) == 0)
		dg_inode_discard(fs, ip);
	dg_txn_free(txn);
}

struct dg_vol *dg_fs_vol(struct dg_fs *fs)
{
	return fs->vol;
}

/* ---- format and open --------------------------------------------------- */

int dg_fs_format(struct dg_vol *vol, uint32_t uid, uint32_t gid)
{
	struct dg_fs fs = { .vol = vol };
	struct dg_inode *root;
	struct dg_txn *txn = dg_txn_new(vol);
	int ret;

	if (!txn)
		return -ENOMEM;
	pthread_mutex_init(&fs.ino_lock, NULL);
	fs.root.magic = DG_FS_MAGIC;
	fs.next_free_ino = DG_ROOT_INO;
	ret = dg_inode_new(&fs, txn, S_IFDIR | 0755, uid, gid, &root);
	if (ret)
		goto out;
	root->d.parent = DG_ROOT_INO;
	ret = dg_inode_store(&fs, txn, root);
	if (!ret)
		ret = dg_txn_commit(txn);
	dg_inode_discard(&fs, root);
out:
	free(fs.itab);
	dg_txn_free(txn);
	pthread_mutex_destroy(&fs.ino_lock);
	return ret;
}

static int check_dinode(struct dg_fs *fs, uint64_t ino,
			const struct dg_dinode *d)
{
	uint32_t t = d->mode & S_IFMT;

	if (t != S_IFREG && t != S_IFDIR && t != S_IFLNK && t != S_IFIFO &&
	    t != S_IFSOCK && t != S_IFCHR && t != S_IFBLK)
		return DG_CORRUPT(fs->vol, "inode %" PRIu64 ": bad mode %#o",
				  ino, d->mode);
	if (d->nextents > (1u << 26))
		return DG_CORRUPT(fs->vol, "inode %" PRIu64 ": %u extents",
				  ino, d->nextents);
	return 0;
}

bool dg_ino_lost(const struct dg_fs *fs, uint64_t ino)
{
	for (unsigned i = 0; i < fs->nlost; i++)
		if (ino >= fs->lost_ino[i] &&
		    ino < fs->lost_ino[i] + DG_INODES_PER_PAGE)
			return true;
	return false;
}

/*
 * Read an inode table chunk page by page after a whole read failed: a
 * page no copy of which verifies is noted lost and reads as free slots,
 * which dg_ino_lost() keeps from being handed out. The root's page is
 * not given up here: without a root there is nothing to serve.
 */
static int load_chunk_pages(struct dg_fs *fs, uint32_t c, uint8_t *buf)
{
	uint64_t vpn = fs->root.chunks[c];

	for (uint32_t p = 0; p < DG_ITABLE_CHUNK_PAGES; p++) {
		uint64_t first = (uint64_t)c * DG_INODES_PER_CHUNK +
				 (uint64_t)p * DG_INODES_PER_PAGE;
		uint8_t *pg = buf + (size_t)p * DG_PAGE_SIZE;
		uint64_t *n;
		int ret = dg_read(fs->vol, vpn + p, 1, pg);

		if (ret != -EIO || first <= DG_ROOT_INO) {
			if (ret)
				return ret;
			continue;
		}
		n = realloc(fs->lost_ino, (fs->nlost + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		fs->lost_ino = n;
		fs->lost_ino[fs->nlost++] = first;
		memset(pg, 0, DG_PAGE_SIZE);
		dg_log(DG_LOG_ERR, "inode table page of inodes %" PRIu64
		       "-%" PRIu64 " is unreadable: their names give EIO "
		       "until fsck", first, first + DG_INODES_PER_PAGE - 1);
	}
	return 0;
}

static int load_chunk(struct dg_fs *fs, uint32_t c, uint8_t *buf)
{
	uint64_t vpn = fs->root.chunks[c];
	int ret;

	if (vpn < 1 || vpn + DG_ITABLE_CHUNK_PAGES > fs->vol->vpns)
		return DG_CORRUPT(fs->vol, "inode chunk %u at vpn %" PRIu64,
				  c, vpn);
	ret = dg_read(fs->vol, vpn, DG_ITABLE_CHUNK_PAGES, buf);
	if (ret == -EIO)
		ret = load_chunk_pages(fs, c, buf);
	if (ret)
		return ret;
	for (uint32_t s = 0; s < DG_INODES_PER_CHUNK; s++) {
		const struct dg_dinode *d =
			(const void *)(buf + (size_t)s * DG_INODE_SIZE);
		uint64_t ino = (uint64_t)c * DG_INODES_PER_CHUNK + s;
		struct dg_inode *ip;

		if (!d->mode || ino == 0)
			continue;
		ret = check_dinode(fs, ino, d);
		if (ret)
			return ret;
		ip = inode_alloc_core(ino);
		if (!ip)
			return -ENOMEM;
		ip->d = *d;
		fs->itab[ino] = ip;
		fs->inodes_used++;
		if (d->generation > fs->gen_counter)
			fs->gen_counter = d->generation;
		ret = dg_ext_load(fs, ip);
		if (ret == -EIO) {
			dg_log(DG_LOG_ERR, "inode %" PRIu64 ": an extent page "
			       "is unreadable: its data gives EIO until fsck",
			       ino);
			ip->damaged = true;
			ret = 0;
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* Unlinked inodes still open at a crash are freed at the next open. */
static void free_orphans(struct dg_fs *fs)
{
	for (uint64_t ino = 1; ino < fs->icap; ino++) {
		struct dg_inode *ip = fs->itab[ino];

		if (ip && ip->d.nlink == 0 && ip->damaged) {
			dg_log(DG_LOG_WARNING, "orphan inode %" PRIu64 " is "
			       "damaged: left for fsck", ino);
		} else if (ip && ip->d.nlink == 0) {
			dg_log(DG_LOG_NOTICE, "freeing orphan inode %" PRIu64,
			       ino);
			dg_inode_maybe_destroy(fs, ip);
		}
	}
}

/* A directory that names an inode of a lost table page cannot tell
 * what that name is: it is served like one with a lost page (fsys_i.h). */
static void mark_dirs_naming_lost(struct dg_fs *fs)
{
	for (uint64_t ino = 1; ino < fs->icap; ino++) {
		struct dg_inode *dp = fs->itab[ino];

		if (!dp || !dp->dir)
			continue;
		for (size_t i = 0; i < dp->dir->nents && !dp->damaged; i++)
			if (dp->dir->ents[i].ino &&
			    dg_ino_lost(fs, dp->dir->ents[i].ino))
				dp->damaged = true;
	}
}

void dg_fs_get_damage(struct dg_fs *fs, struct dg_fs_damage *d)
{
	*d = (struct dg_fs_damage){ .inode_pages = fs->nlost };
	pthread_rwlock_rdlock(&fs->lock);
	for (uint64_t ino = 1; ino < fs->icap; ino++)
		d->inodes += fs->itab[ino] && fs->itab[ino]->damaged;
	pthread_rwlock_unlock(&fs->lock);
}

unsigned dg_fs_damaged_inodes(struct dg_fs *fs, uint64_t *inos, unsigned max)
{
	unsigned n = 0;

	pthread_rwlock_rdlock(&fs->lock);
	for (uint64_t ino = 1; ino < fs->icap && n < max; ino++)
		if (fs->itab[ino] && fs->itab[ino]->damaged)
			inos[n++] = ino;
	pthread_rwlock_unlock(&fs->lock);
	return n;
}

int dg_fs_open(struct dg_vol *vol, struct dg_fs **fsp)
{
	struct dg_droot *droot = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint8_t *buf = aligned_alloc(DG_PAGE_SIZE,
				     DG_ITABLE_CHUNK_PAGES * DG_PAGE_SIZE);
	struct dg_fs *fs = calloc(1, sizeof(*fs));
	int ret;

	if (!droot || !buf || !fs) {
		ret = -ENOMEM;
		goto fail;
	}
	fs->vol = vol;
	pthread_rwlock_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->ino_lock, NULL);
	ret = dg_read(vol, 0, 1, droot);
	if (ret)
		goto fail;
	memcpy(&fs->root, droot->fs, sizeof(fs->root));
	if (fs->root.magic != DG_FS_MAGIC || fs->root.nchunks == 0 ||
	    fs->root.nchunks > DG_MAX_ICHUNKS) {
		ret = DG_CORRUPT(vol, "filesystem root record");
		goto fail;
	}
	ret = itab_grow(fs, (uint64_t)fs->root.nchunks * DG_INODES_PER_CHUNK);
	for (uint32_t c = 0; !ret && c < fs->root.nchunks; c++)
		ret = load_chunk(fs, c, buf);
	if (ret)
		goto fail;
	if (!fs->itab[DG_ROOT_INO] || !S_ISDIR(fs->itab[DG_ROOT_INO]->d.mode)) {
		ret = DG_CORRUPT(vol, "root directory missing");
		goto fail;
	}
	for (uint64_t ino = 1; ino < fs->icap && !ret; ino++)
		if (fs->itab[ino] && S_ISDIR(fs->itab[ino]->d.mode))
			ret = dg_dir_load(fs, fs->itab[ino]);
	if (ret)
		goto fail;
	if (fs->nlost)
		mark_dirs_naming_lost(fs);
	fs->next_free_ino = DG_ROOT_INO + 1;
	/* A published stage is an orphan too: finish it before the
	 * orphans are freed. */
	dg_fstage_recover(fs);
	if (!vol->read_only) {
		free_orphans(fs);
		dg_fmap_recover(fs);
	}
	free(droot);
	free(buf);
	*fsp = fs;
	return 0;
fail:
	free(droot);
	free(buf);
	if (fs)
		dg_fs_close(fs);
	return ret;
}

void dg_fs_close(struct dg_fs *fs)
{
	if (!fs)
		return;
	for (uint64_t i = 0; i < fs->icap; i++) {
		if (fs->itab[i])
			dg_inode_flush_times(fs, fs->itab[i]);
		inode_free_core(fs->itab[i]);
	}
	free(fs->itab);
	free(fs->lost_ino);
	pthread_rwlock_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->ino_lock);
	free(fs);
}
