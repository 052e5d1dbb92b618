// SPDX-License-Identifier: MIT
/* namei.c -- names: lookup, create, link, unlink, rename, attributes */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#define RENAME_EXCHANGE	 (1 << 1)
#endif

static int check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0)
		return -ENOENT;
	if (n > DG_NAME_MAX)
		return -ENAMETOOLONG;
	if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	return 0;
}

/* The directory parent, checked, its names in core (dir_load.c).
 * Caller holds fs->lock. */
static int get_dir(struct dg_fs *fs, uint64_t ino, struct dg_inode **dpp)
{
	struct dg_inode *dp;
	struct dg_dir *dir;
	int ret = dg_inode_find(fs, ino, false, &dp);

	if (ret)
		return ret;
	if (!S_ISDIR(dp->d.mode))
		return -ENOTDIR;
	ret = dg_dir_get(fs, dp, &dir);
	if (ret)
		return ret;
	*dpp = dp;
	return 0;
}

/* A directory about to be removed or replaced: its names in core, so
 * that a lost page of it is known (damaged) before it is judged. */
static int load_if_dir(struct dg_fs *fs, struct dg_inode *ip)
{
	struct dg_dir *dir;

	return S_ISDIR(ip->d.mode) ? dg_dir_get(fs, ip, &dir) : 0;
}

/* get_dir() for a change of its names: a directory with a lost page
 * might hold the name already, or the record to change. */
static int get_dir_to_change(struct dg_fs *fs, uint64_t ino,
			     struct dg_inode **dpp)
{
	int ret = get_dir(fs, ino, dpp);

	return ret ? ret : dg_inode_intact(*dpp);
}

int dg_fs_lookup(struct dg_fs *fs, uint64_t parent, const char *name,
		 struct dg_attr *attr)
{
	struct dg_inode *dp, *ip = NULL;
	struct dg_dent *de;
	int ret;

	if (strlen(name) > DG_NAME_MAX)
		return -ENAMETOOLONG;
	pthread_rwlock_rdlock(&fs->lock);
	/* "." of any node id: how the kernel turns a file handle (node id
	 * and generation, FUSE export support) back into an inode it has
	 * forgotten. The caller checks the generation. */
	if (!strcmp(name, ".")) {
		ret = dg_inode_find(fs, parent, false, &ip);
		if (!ret)
			goto found;
		if (ret == -ENOENT)
			ret = -ESTALE;
		goto out;
	}
	ret = get_dir(fs, parent, &dp);
	if (ret)
		goto out;
	ret = -ENOENT;
	if (!strcmp(name, ".."))
		ret = dg_inode_find(fs, dp->d.parent, false, &ip);
	else if ((de = dg_dir_find(dp->dir, name)))
		ret = dg_inode_find(fs, de->ino, false, &ip);
	if (ret == -ENOENT && dp->damaged)
		ret = -EIO; /* a miss proves nothing when names were lost */
	if (ret)
		goto out;
found:
	__atomic_add_fetch(&ip->nlookup, 1, __ATOMIC_RELAXED);
	pthread_rwlock_rdlock(&ip->lock);
	dg_inode_attr(ip, attr);
	pthread_rwlock_unlock(&ip->lock);
out:
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

void dg_fs_forget(struct dg_fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct dg_inode *ip;

	pthread_rwlock_wrlock(&fs->lock);
	/* What the kernel knows is in core: a forget reads nothing. */
	pthread_mutex_lock(&fs->ino_lock);
	ip = dg_icache_peek(fs, ino);
	pthread_mutex_unlock(&fs->ino_lock);
	if (ip) {
		ip->nlookup = ip->nlookup > nlookup ? ip->nlookup - nlookup : 0;
		/* Nothing the kernel holds names into it any more. */
		if (!ip->nlookup)
			dg_dir_evict(fs, ip);
		dg_inode_maybe_destroy(fs, ip);
		dg_icache_settle(fs, ino);
	}
	pthread_rwlock_unlock(&fs->lock);
}

bool dg_fs_ino_in_use(struct dg_fs *fs, uint64_t ino)
{
	bool used;

	pthread_rwlock_rdlock(&fs->lock);
	pthread_mutex_lock(&fs->ino_lock);
	used = ino && ino < (uint64_t)fs->root.nchunks * DG_INODES_PER_CHUNK &&
	       dg_ino_used(fs, ino);
	pthread_mutex_unlock(&fs->ino_lock);
	pthread_rwlock_unlock(&fs->lock);
	return used;
}

int dg_fs_getattr(struct dg_fs *fs, uint64_t ino, struct dg_attr *attr)
{
	struct dg_inode *ip;
	int ret;

	pthread_rwlock_rdlock(&fs->lock);
	ret = dg_inode_find(fs, ino, true, &ip);
	if (!ret) {
		pthread_rwlock_rdlock(&ip->lock);
		dg_inode_attr(ip, attr);
		pthread_rwlock_unlock(&ip->lock);
	}
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

static int64_t ts_ns(struct timespec t)
{
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int dg_fs_setattr(struct dg_fs *fs, uint64_t ino, const struct dg_setattr *sa,
		  struct dg_attr *attr)
{
	struct dg_inode *ip;
	struct dg_txn *txn = NULL;
	struct dg_dinode saved;
	int64_t now = dg_now_ns();
	int ret;

	pthread_rwlock_wrlock(&fs->lock);
	ret = dg_inode_find(fs, ino, false, &ip);
	if (!ret && fs->broken)
		ret = -EROFS;
	if (!ret && (sa->valid & DG_SET_SIZE) && !S_ISREG(ip->d.mode))
		ret = S_ISDIR(ip->d.mode) ? -EISDIR : -EINVAL;
	if (!ret && (sa->valid & DG_SET_SIZE))
		ret = dg_inode_intact(ip);
	/* libcommit: no size change under a read-write map, no shrink
	 * under any map (its pages are pinned). */
	if (!ret && (sa->valid & DG_SET_SIZE) && sa->size != ip->d.size)
		ret = dg_inode_map_check(ip, sa->size < ip->d.size);
	if (!ret && !(txn = dg_txn_new(fs->vol)))
		ret = -ENOMEM;
	if (ret)
		goto out;
	saved = ip->d;
	/* KILLPRIV: a chown or a truncate drops setuid/setgid/capabilities
	 * first, from the mode and group before the change (setid.c). */
	if (sa->cr && (sa->valid & (DG_SET_UID | DG_SET_GID | DG_SET_SIZE))) {
		bool changed;

		ret = dg_inode_kill_priv(fs, txn, ip, sa->cr,
					 (sa->valid & (DG_SET_UID | DG_SET_GID))
						 ? DG_KILL_CHOWN
						 : DG_KILL_WRITE,
					 &changed);
		/* A mode change rewrites the access ACL in the xattr run,
		 * which reads the run from the media: one edit of the run a
		 * transaction, so a kill that changed it is committed first
		 * (as a kill on its own would be). */
		if (!ret && changed && (sa->valid & DG_SET_MODE)) {
			ret = dg_inode_store(fs, txn, ip);
			if (!ret)
				ret = dg_fs_commit(fs, txn);
			if (!ret) {
				dg_txn_free(txn);
				saved = ip->d;
				txn = dg_txn_new(fs->vol);
				if (!txn)
					ret = -ENOMEM;
			}
		}
	}
	if (!ret && (sa->valid & DG_SET_MODE)) {
		ip->d.mode = (ip->d.mode & S_IFMT) | (sa->mode & 07777);
		/* Mode and access ACL stay one truth (acl.c). */
		ret = dg_acl_chmod_inode(fs, txn, ip);
	}
	if (sa->valid & DG_SET_UID)
		ip->d.uid = sa->uid;
	if (sa->valid & DG_SET_GID)
		ip->d.gid = sa->gid;
	if (sa->valid & DG_SET_ATIME)
		ip->d.atime_ns = ts_ns(sa->atime);
	if (sa->valid & DG_SET_ATIME_NOW)
		ip->d.atime_ns = now;
	if (sa->valid & DG_SET_MTIME)
		ip->d.mtime_ns = ts_ns(sa->mtime);
	if (sa->valid & DG_SET_MTIME_NOW)
		ip->d.mtime_ns = now;
	if (!ret && (sa->valid & DG_SET_SIZE)) {
		ret = dg_file_truncate(fs, txn, ip, sa->size);
		if (!(sa->valid & (DG_SET_MTIME | DG_SET_MTIME_NOW)))
			ip->d.mtime_ns = now;
	}
	ip->d.ctime_ns = (sa->valid & DG_SET_CTIME) ? ts_ns(sa->ctime) : now;
	if (!ret)
		ret = dg_inode_store(fs, txn, ip);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	if (ret) {
		ip->d = saved;
		dg_ext_load(fs, ip);
		goto out;
	}
	dg_inode_attr(ip, attr);
out:
	dg_txn_free(txn);
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

/* Create an inode named name in parent: the one path for every type. */
static int create(struct dg_fs *fs, uint64_t parent, const char *name,
		  uint32_t mode, uint64_t rdev, const char *target,
		  uint32_t uid, uint32_t gid, int32_t umask, bool open,
		  struct dg_attr *attr)
{
	struct dg_inode *dp, *ip = NULL;
	struct dg_dinode dsaved;
	struct dg_txn *txn = NULL;
	struct dg_acl_new an = { 0 };
	uint32_t nchunks = 0;
	int ret = check_name(name);

	if (ret)
		return ret;
	pthread_rwlock_wrlock(&fs->lock);
	ret = get_dir_to_change(fs, parent, &dp);
	if (!ret && fs->broken)
		ret = -EROFS;
	if (!ret && dg_dir_find(dp->dir, name))
		ret = -EEXIST;
	if (!ret && S_ISDIR(mode) && dp->d.nlink >= UINT32_MAX - 1)
		ret = -EMLINK;
	if (!ret && !(txn = dg_txn_new(fs->vol)))
		ret = -ENOMEM;
	if (ret)
		goto out;
	dsaved = dp->d;
	nchunks = fs->root.nchunks;
	dg_setid_init_owner(&dp->d, &mode, &gid);
	ret = dg_acl_prepare(fs, dp, &mode, umask, &an);
	if (ret)
		goto out;
	ret = dg_inode_new(fs, txn, mode, uid, gid, &ip);
	if (ret) {
		fs->root.nchunks = nchunks; /* a new chunk was not committed */
		goto out;
	}
	ip->d.rdev = rdev;
	if (S_ISDIR(mode)) {
		ip->d.parent = parent;
		ip->dir = calloc(1, sizeof(*ip->dir));
		if (!ip->dir) {
			ret = -ENOMEM;
			goto undo;
		}
		ip->dir->tail_off = DG_PAGE_SIZE;
		fs->dirs_cached++;
		dp->d.nlink++;
	}
	if (target) {
		ret = dg_file_write_txn(fs, txn, ip, 0, target, strlen(target),
					 NULL);
		ip->d.size = strlen(target);
	}
	if (!ret)
		ret = dg_acl_apply(fs, txn, ip, &an);
	if (!ret)
		ret = dg_inode_store(fs, txn, ip);
	if (!ret)
		ret = dg_dir_add(fs, txn, dp, name, ip->ino, dg_mode_dtype(mode));
	if (ret)
		goto undo;
	dg_inode_touch(dp, true, true);
	ret = dg_inode_store(fs, txn, dp);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	if (ret)
		goto out; /* broken: in-core state is kept as it is */
	ip->nlookup++;
	if (open)
		ip->nopen++;
	dg_inode_attr(ip, attr);
	goto out;
undo:
	/* Nothing reached the media: put the parent back as it was. */
	if (dg_dir_find(dp->dir, name))
		dg_vol_log(fs->vol, DG_LOG_ERR,
			   "create '%s' half-done in core", name);
	dp->d = dsaved;
	dg_ext_load(fs, dp);
	dg_inode_discard(fs, ip);
	fs->root.nchunks = nchunks;
out:
	dg_icache_sweep(fs);
	dg_acl_new_free(&an);
	dg_txn_free(txn);
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

int dg_fs_mknod(struct dg_fs *fs, uint64_t parent, const char *name,
		uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid,
		struct dg_attr *attr)
{
	uint32_t t = mode & S_IFMT;

	if (t != S_IFREG && t != S_IFDIR && t != S_IFIFO && t != S_IFSOCK &&
	    t != S_IFCHR && t != S_IFBLK)
		return -EINVAL;
	return create(fs, parent, name, mode, rdev, NULL, uid, gid, -1, false,
		      attr);
}

int dg_fs_create(struct dg_fs *fs, uint64_t parent, const char *name,
		 uint32_t mode, uint64_t rdev, const struct dg_cred *cr,
		 struct dg_attr *attr)
{
	uint32_t t = mode & S_IFMT;

	if (t != S_IFREG && t != S_IFDIR && t != S_IFIFO && t != S_IFSOCK &&
	    t != S_IFCHR && t != S_IFBLK)
		return -EINVAL;
	return create(fs, parent, name, mode, rdev, NULL, cr->uid, cr->gid,
		      cr->umask, false, attr);
}

int dg_fs_create_open(struct dg_fs *fs, uint64_t parent, const char *name,
		      uint32_t mode, const struct dg_cred *cr,
		      struct dg_attr *attr)
{
	if ((mode & S_IFMT) != S_IFREG)
		return -EINVAL;
	return create(fs, parent, name, mode, 0, NULL, cr->uid, cr->gid,
		      cr->umask, true, attr);
}

int dg_fs_symlink(struct dg_fs *fs, uint64_t parent, const char *name,
		  const char *target, const struct dg_cred *cr,
		  struct dg_attr *attr)
{
	size_t n = strlen(target);

	if (n == 0)
		return -ENOENT;
	if (n >= DG_PAGE_SIZE)
		return -ENAMETOOLONG;
	return create(fs, parent, name, S_IFLNK | 0777, 0, target, cr->uid,
		      cr->gid, -1, false, attr);
}

int dg_fs_readlink(struct dg_fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct dg_inode *ip;
	uint8_t *page = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint64_t vpn, run;
	int ret;

	if (!page)
		return -ENOMEM;
	pthread_rwlock_rdlock(&fs->lock);
	ret = dg_inode_find(fs, ino, false, &ip);
	if (!ret)
		ret = !S_ISLNK(ip->d.mode) ? -EINVAL : dg_inode_intact(ip);
	if (!ret) {
		dg_ext_lookup(ip, 0, &vpn, &run);
		ret = vpn ? dg_read(fs->vol, vpn, 1, page) : -EUCLEAN;
	}
	if (!ret) {
		size_t n = ip->d.size < size ? ip->d.size : size;

		memcpy(buf, page, n);
		ret = (int)n;
	}
	pthread_rwlock_unlock(&fs->lock);
	free(page);
	return ret;
}

int dg_fs_link(struct dg_fs *fs, uint64_t ino, uint64_t parent,
	       const char *name, struct dg_attr *attr)
{
	struct dg_inode *dp, *ip;
	struct dg_txn *txn = NULL;
	int ret = check_name(name);

	if (ret)
		return ret;
	pthread_rwlock_wrlock(&fs->lock);
	ret = get_dir_to_change(fs, parent, &dp);
	if (!ret)
		ret = dg_inode_find(fs, ino, false, &ip);
	if (!ret && S_ISDIR(ip->d.mode))
		ret = -EPERM;
	if (!ret && ip->d.nlink >= UINT32_MAX - 1)
		ret = -EMLINK;
	if (!ret && fs->broken)
		ret = -EROFS;
	if (!ret && dg_dir_find(dp->dir, name))
		ret = -EEXIST;
	if (!ret && !(txn = dg_txn_new(fs->vol)))
		ret = -ENOMEM;
	if (ret)
		goto out;
	ret = dg_dir_add(fs, txn, dp, name, ino, dg_mode_dtype(ip->d.mode));
	if (ret)
		goto out;
	ip->d.nlink++;
	dg_inode_touch(ip, false, true);
	dg_inode_touch(dp, true, true);
	ret = dg_inode_store(fs, txn, ip);
	if (!ret)
		ret = dg_inode_store(fs, txn, dp);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	if (!ret) {
		ip->nlookup++;
		dg_inode_attr(ip, attr);
	}
out:
	dg_txn_free(txn);
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

/* Drop one name of ip (in dp) in txn, updating link counts. */
static int drop_name(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *dp,
		     struct dg_dent *de, struct dg_inode *ip)
{
	int ret = dg_dir_remove(fs, txn, dp, de);

	if (ret)
		return ret;
	if (S_ISDIR(ip->d.mode)) {
		ip->d.nlink = 0;
		dp->d.nlink--;
	} else {
		ip->d.nlink--;
	}
	dg_inode_touch(ip, false, true);
	dg_inode_touch(dp, true, true);
	ret = dg_inode_drop_last(fs, txn, ip);
	return ret ? ret : dg_inode_store(fs, txn, dp);
}

static int remove_name(struct dg_fs *fs, uint64_t parent, const char *name,
		       bool want_dir)
{
	struct dg_inode *dp, *ip = NULL;
	struct dg_dent *de = NULL;
	struct dg_txn *txn = NULL;
	int ret;

	if (strlen(name) > DG_NAME_MAX)
		return -ENAMETOOLONG;
	pthread_rwlock_wrlock(&fs->lock);
	ret = get_dir_to_change(fs, parent, &dp);
	if (!ret && !(de = dg_dir_find(dp->dir, name)))
		ret = !strcmp(name, ".") ? -EINVAL
		      : !strcmp(name, "..") ? -ENOTEMPTY : -ENOENT;
	if (!ret) {
		ret = dg_inode_find(fs, de->ino, false, &ip);
		if (ret == -ENOENT) /* a name of a free slot: fsck's */
			ret = -EUCLEAN;
	}
	if (!ret && want_dir)
		ret = load_if_dir(fs, ip);
	/* Its lost pages cannot be freed, nor a directory proven empty. */
	if (!ret)
		ret = dg_inode_intact(ip);
	if (!ret && want_dir && !S_ISDIR(ip->d.mode))
		ret = -ENOTDIR;
	if (!ret && !want_dir && S_ISDIR(ip->d.mode))
		ret = -EISDIR;
	if (!ret && want_dir && !dg_dir_empty(ip->dir))
		ret = -ENOTEMPTY;
	if (!ret && fs->broken)
		ret = -EROFS;
	if (!ret && !(txn = dg_txn_new(fs->vol)))
		ret = -ENOMEM;
	if (!ret)
		ret = drop_name(fs, txn, dp, de, ip);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	if (!ret)
		dg_inode_maybe_destroy(fs, ip);
	dg_icache_sweep(fs); /* it may have read the inode */
	dg_txn_free(txn);
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

int dg_fs_unlink(struct dg_fs *fs, uint64_t parent, const char *name)
{
	return remove_name(fs, parent, name, false);
}

int dg_fs_rmdir(struct dg_fs *fs, uint64_t parent, const char *name)
{
	return remove_name(fs, parent, name, true);
}

/* True if dir a is b or lies below b. */
static bool is_under(struct dg_fs *fs, uint64_t a, uint64_t b)
{
	for (unsigned depth = 0; depth < 100000; depth++) {
		struct dg_inode *ip = dg_inode_get(fs, a);

		if (a == b)
			return true;
		if (!ip || a == DG_ROOT_INO)
			return false;
		a = ip->d.parent;
	}
	return true; /* a loop: refuse */
}

int dg_fs_rename(struct dg_fs *fs, uint64_t parent, const char *name,
		 uint64_t newparent, const char *newname, unsigned flags)
{
	struct dg_inode *sp, *dp, *ip, *tp = NULL;
	struct dg_dent *se, *te;
	struct dg_txn *txn = NULL;
	int ret;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	ret = check_name(newname);
	if (ret)
		return ret;
	if (strlen(name) > DG_NAME_MAX)
		return -ENAMETOOLONG;
	pthread_rwlock_wrlock(&fs->lock);
	ret = get_dir_to_change(fs, parent, &sp);
	if (!ret)
		ret = get_dir_to_change(fs, newparent, &dp);
	if (ret)
		goto out;
	se = dg_dir_find(sp->dir, name);
	te = dg_dir_find(dp->dir, newname);
	ret = se ? dg_inode_find(fs, se->ino, false, &ip) : -ENOENT;
	if (ret)
		goto out;
	if (te && (ret = dg_inode_find(fs, te->ino, false, &tp))) {
		if (ret == -ENOENT)
			ret = -EUCLEAN;
		goto out;
	}
	if (tp && te != se && (ret = load_if_dir(fs, tp)))
		goto out;
	if (tp && !(flags & RENAME_EXCHANGE) && (ret = dg_inode_intact(tp)))
		goto out;	/* replacing it would free it */
	if (se == te)
		goto out; /* same name: nothing to do */
	if (tp == ip && !(flags & RENAME_EXCHANGE)) {
		/* Two names of one file: POSIX says do nothing. */
		goto out;
	}
	if ((flags & RENAME_EXCHANGE) && !tp) {
		ret = -ENOENT;
		goto out;
	}
	if ((flags & RENAME_NOREPLACE) && tp) {
		ret = -EEXIST;
		goto out;
	}
	if (S_ISDIR(ip->d.mode) && newparent != parent &&
	    is_under(fs, newparent, ip->ino)) {
		ret = -EINVAL;
		goto out;
	}
	if ((flags & RENAME_EXCHANGE) && S_ISDIR(tp->d.mode) &&
	    newparent != parent && is_under(fs, parent, tp->ino)) {
		ret = -EINVAL;
		goto out;
	}
	if (tp && !(flags & RENAME_EXCHANGE)) {
		if (S_ISDIR(ip->d.mode) && !S_ISDIR(tp->d.mode)) {
			ret = -ENOTDIR;
			goto out;
		}
		if (!S_ISDIR(ip->d.mode) && S_ISDIR(tp->d.mode)) {
			ret = -EISDIR;
			goto out;
		}
		if (S_ISDIR(tp->d.mode) && !dg_dir_empty(tp->dir)) {
			ret = -ENOTEMPTY;
			goto out;
		}
	}
	if (fs->broken) {
		ret = -EROFS;
		goto out;
	}
	txn = dg_txn_new(fs->vol);
	if (!txn) {
		ret = -ENOMEM;
		goto out;
	}
	if (flags & RENAME_EXCHANGE) {
		ret = dg_dir_retarget(fs, txn, se, sp, tp->ino,
				      dg_mode_dtype(tp->d.mode));
		if (!ret)
			ret = dg_dir_retarget(fs, txn, te, dp, ip->ino,
					      dg_mode_dtype(ip->d.mode));
		if (!ret && S_ISDIR(ip->d.mode) != S_ISDIR(tp->d.mode) &&
		    sp != dp) {
			/* A directory moved each way changes link counts. */
			if (S_ISDIR(ip->d.mode)) {
				sp->d.nlink--;
				dp->d.nlink++;
			} else {
				sp->d.nlink++;
				dp->d.nlink--;
			}
		}
		if (S_ISDIR(tp->d.mode))
			tp->d.parent = parent;
		dg_inode_touch(tp, false, true);
		if (!ret)
			ret = dg_inode_store(fs, txn, tp);
	} else {
		if (tp)
			ret = drop_name(fs, txn, dp, te, tp);
		if (!ret)
			ret = dg_dir_remove(fs, txn, sp, se);
		if (!ret)
			ret = dg_dir_add(fs, txn, dp, newname, ip->ino,
					 dg_mode_dtype(ip->d.mode));
		if (!ret && S_ISDIR(ip->d.mode) && sp != dp) {
			sp->d.nlink--;
			dp->d.nlink++;
		}
	}
	if (S_ISDIR(ip->d.mode))
		ip->d.parent = newparent;
	dg_inode_touch(ip, false, true);
	dg_inode_touch(sp, true, true);
	dg_inode_touch(dp, true, true);
	if (!ret)
		ret = dg_inode_store(fs, txn, ip);
	if (!ret)
		ret = dg_inode_store(fs, txn, sp);
	if (!ret && dp != sp)
		ret = dg_inode_store(fs, txn, dp);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	if (!ret && tp && !(flags & RENAME_EXCHANGE))
		dg_inode_maybe_destroy(fs, tp);
out:
	dg_icache_sweep(fs); /* it may have read both inodes */
	dg_txn_free(txn);
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

int dg_fs_open_ino(struct dg_fs *fs, uint64_t ino, bool truncate,
		   const struct dg_cred *cr)
{
	struct dg_inode *ip;
	int ret = 0;

	pthread_rwlock_wrlock(&fs->lock);
	ret = dg_inode_find(fs, ino, false, &ip);
	if (ret) {
		ip = NULL;
	} else if (truncate && S_ISREG(ip->d.mode) && (ip->d.size || cr)) {
		/* The drop and the truncate in one transaction, as
		 * truncate(2) (setattr) and a write do: no crash keeps
		 * the one without the other. */
		struct dg_txn *txn = dg_txn_new(fs->vol);
		struct dg_dinode saved = ip->d;
		bool changed = false;

		ret = !txn ? -ENOMEM : fs->broken ? -EROFS : 0;
		if (!ret && ip->d.size) {
			ret = dg_inode_intact(ip);
			if (!ret)
				ret = dg_inode_map_check(ip, true);
		}
		if (!ret && cr)
			ret = dg_inode_kill_priv(fs, txn, ip, cr,
						 DG_KILL_WRITE, &changed);
		if (!ret && ip->d.size) {
			ret = dg_file_truncate(fs, txn, ip, 0);
			dg_inode_touch(ip, true, true);
			changed = true;
		}
		if (!ret && changed)
			ret = dg_inode_store(fs, txn, ip);
		if (!ret && changed)
			ret = dg_fs_commit(fs, txn);
		if (ret) {
			ip->d = saved;
			dg_ext_load(fs, ip);
		}
		dg_txn_free(txn);
	}
	if (!ret)
		ip->nopen++;
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

void dg_fs_release(struct dg_fs *fs, uint64_t ino)
{
	struct dg_inode *ip;

	pthread_rwlock_wrlock(&fs->lock);
	ip = dg_inode_get(fs, ino);
	if (ip)
		dg_inode_flush_times(fs, ip);
	if (ip && ip->nopen) {
		ip->nopen--;
		dg_inode_maybe_destroy(fs, ip);
		dg_icache_settle(fs, ino);
	}
	pthread_rwlock_unlock(&fs->lock);
}

int dg_fs_fsync(struct dg_fs *fs, uint64_t ino)
{
	struct dg_inode *ip;
	int ret = 0;

	pthread_rwlock_rdlock(&fs->lock);
	ip = dg_inode_get(fs, ino);
	if (ip) {
		pthread_rwlock_wrlock(&ip->lock);
		ret = dg_inode_flush_times(fs, ip);
		pthread_rwlock_unlock(&ip->lock);
	}
	pthread_rwlock_unlock(&fs->lock);
	return ret ? ret : dg_vol_sync(fs->vol);
}

int dg_fs_opendir(struct dg_fs *fs, uint64_t ino)
{
	struct dg_inode *ip;
	int ret;

	pthread_rwlock_rdlock(&fs->lock);
	ret = dg_inode_find(fs, ino, false, &ip);
	if (!ret && !S_ISDIR(ip->d.mode))
		ret = -ENOTDIR;
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

/* What a plain readdir tells of an entry: its ino and type (DT_*,
 * which is S_IFMT >> 12), read off the dirent alone. */
static void dent_attr(uint64_t ino, uint8_t type, struct dg_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->mode = (uint32_t)type << 12;
}

/* Cookies: 1 ".", 2 "..", then 3 + the entry's index in the directory. */
int dg_fs_readdir(struct dg_fs *fs, uint64_t ino, uint64_t off, bool plus,
		  dg_fill_fn fill, void *arg)
{
	struct dg_inode *dp, *ip;
	struct dg_attr attr;
	unsigned given = 0;	/* entries this call handed out */
	bool more = false;	/* the buffer filled before the end */
	int ret;

	pthread_rwlock_rdlock(&fs->lock);
	ret = get_dir(fs, ino, &dp);
	if (ret)
		goto out;
	for (; off < 2; off++) {
		if (!plus && off == 1) {
			dent_attr(dp->d.parent, S_IFDIR >> 12, &attr);
		} else {
			ip = off == 0 ? dp : dg_inode_get(fs, dp->d.parent);
			if (!ip)
				ip = dp;
			dg_inode_attr(ip, &attr);
		}
		/* "." and ".." never take a lookup count (FUSE rule). */
		if (fill(arg, off == 0 ? "." : "..", &attr, off + 1))
			goto out;
		given++;
	}
	for (uint64_t i = off - 2; i < dp->dir->nents; i++) {
		struct dg_dent *de = &dp->dir->ents[i];
		int found;

		if (!de->ino)
			continue;
		/* A plain readdir (ls -f, find) gives the name, ino and
		 * type, and the dirent holds them: loading each inode would
		 * fill the cache with inodes no lookup holds, and nothing
		 * sweeps on a read path (issue 34). An inode whose record is
		 * lost is listed so too, with no attributes and no lookup
		 * taken (nlink 0), so a stat of it asks, and gets EIO. */
		found = plus ? dg_inode_find(fs, de->ino, false, &ip) : -EIO;
		if (found == -EIO) {
			dent_attr(de->ino, de->type, &attr);
			if (fill(arg, de->name, &attr, i + 3)) {
				more = true;
				break;
			}
			given++;
			continue;
		}
		if (found)
			continue;
		/* READDIRPLUS: the entry is a lookup the kernel counts. */
		dg_inode_attr(ip, &attr);
		__atomic_add_fetch(&ip->nlookup, 1, __ATOMIC_RELAXED);
		if (fill(arg, de->name, &attr, i + 3)) {
			/* not handed out after all */
			__atomic_sub_fetch(&ip->nlookup, 1, __ATOMIC_RELAXED);
			more = true;
			break;
		}
		given++;
	}
	/* A directory with a lost page ends its listing in EIO rather than
	 * look complete: the call that has nothing more to give says so. */
	if (!more && !given && dp->damaged)
		ret = -EIO;
out:
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

int dg_fs_statfs(struct dg_fs *fs, struct statvfs *st)
{
	struct dg_vol_info info;

	dg_vol_get_info(fs->vol, &info);
	memset(st, 0, sizeof(*st));
	st->f_bsize = DG_PAGE_SIZE;
	st->f_frsize = DG_PAGE_SIZE;
	st->f_blocks = info.vpns;
	st->f_bfree = info.free_vpns;
	st->f_bavail = info.free_vpns;
	pthread_mutex_lock(&fs->ino_lock);
	dg_itable_counts(fs, info.vpns, &st->f_files, &st->f_ffree);
	pthread_mutex_unlock(&fs->ino_lock);
	st->f_favail = st->f_ffree;
	st->f_namemax = DG_NAME_MAX;
	return 0;
}

/* Any directory entry naming ino (linear: only for fault reports). */
