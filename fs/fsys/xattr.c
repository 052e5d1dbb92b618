// SPDX-License-Identifier: MIT
/* xattr.c -- extended attributes: one page of records per inode */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fsys_i.h"

static uint32_t rec_size(size_t namelen, size_t vallen)
{
	return (uint32_t)((sizeof(struct dg_dxattr) + namelen + vallen + 3) &
			  ~3u);
}

int dg_xattr_page_check(const uint8_t *buf)
{
	const struct dg_dxattr_hdr *h = (const void *)buf;
	uint32_t off = sizeof(*h);

	if (h->used < sizeof(*h) || h->used > DG_PAGE_SIZE)
		return -EUCLEAN;
	for (uint32_t i = 0; i < h->count; i++) {
		const struct dg_dxattr *x = (const void *)(buf + off);

		if (off + sizeof(*x) > h->used || x->namelen == 0 ||
		    off + rec_size(x->namelen, x->vallen) > h->used)
			return -EUCLEAN;
		/* listxattr hands names out NUL-terminated: one with a NUL
		 * inside would list as names that do not exist. */
		if (memchr(x + 1, 0, x->namelen))
			return -EUCLEAN;
		off += rec_size(x->namelen, x->vallen);
	}
	return off == h->used ? 0 : -EUCLEAN;
}

/* Load the inode's xattr page (or an empty one) into buf, checked. */
static int load(struct dg_fs *fs, struct dg_inode *ip, uint8_t *buf)
{
	struct dg_dxattr_hdr *h = (void *)buf;
	int ret;

	if (!ip->d.xattr_vpn) {
		memset(buf, 0, DG_PAGE_SIZE);
		h->used = sizeof(*h);
		return 0;
	}
	ret = dg_read(fs->vol, ip->d.xattr_vpn, 1, buf);
	if (ret)
		return ret;
	if (dg_xattr_page_check(buf))
		return DG_CORRUPT(fs->vol, "inode %" PRIu64 ": xattr page",
				  ip->ino);
	return 0;
}

/* Offset of the record called name, or 0. */
static uint32_t find(const uint8_t *buf, const char *name)
{
	const struct dg_dxattr_hdr *h = (const void *)buf;
	size_t n = strlen(name);
	uint32_t off = sizeof(*h);

	for (uint32_t i = 0; i < h->count; i++) {
		const struct dg_dxattr *x = (const void *)(buf + off);

		if (x->namelen == n && !memcmp(x + 1, name, n))
			return off;
		off += rec_size(x->namelen, x->vallen);
	}
	return 0;
}

static int store(struct dg_txn *txn, struct dg_inode *ip, const uint8_t *buf)
{
	const struct dg_dxattr_hdr *h = (const void *)buf;
	int ret;

	if (h->count == 0) {
		if (ip->d.xattr_vpn) {
			ret = dg_free(txn, ip->d.xattr_vpn, 1);
			if (ret)
				return ret;
			ip->d.xattr_vpn = 0;
			ip->d.blocks--;
		}
		return 0;
	}
	if (!ip->d.xattr_vpn) {
		uint64_t got;

		ret = dg_alloc_meta(txn, 0, 1, &ip->d.xattr_vpn, &got);
		if (ret)
			return ret;
		ip->d.blocks++;
	}
	return dg_txn_write(txn, ip->d.xattr_vpn, 0, buf, DG_PAGE_SIZE);
}

/* Common frame: look up ino, load its page, run op, commit if dirty. */
static int with_xattrs(struct dg_fs *fs, uint64_t ino, bool write,
		       int (*op)(uint8_t *buf, void *arg), void *arg)
{
	uint8_t *buf = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	struct dg_txn *txn = NULL;
	struct dg_inode *ip;
	struct dg_dinode saved;
	int ret, r;

	if (!buf)
		return -ENOMEM;
	if (write)
		pthread_rwlock_wrlock(&fs->lock);
	else
		pthread_rwlock_rdlock(&fs->lock);
	ip = dg_inode_get(fs, ino);
	ret = !ip ? -ENOENT : (write && fs->broken) ? -EROFS : 0;
	if (!ret)
		ret = load(fs, ip, buf);
	if (ret)
		goto out;
	ret = op(buf, arg);
	if (ret < 0 || !write)
		goto out;
	txn = dg_txn_new(fs->vol);
	if (!txn) {
		ret = -ENOMEM;
		goto out;
	}
	saved = ip->d;
	r = store(txn, ip, buf);
	if (!r) {
		dg_inode_touch(ip, false, true);
		r = dg_inode_store(fs, txn, ip);
	}
	if (!r)
		r = dg_fs_commit(fs, txn);
	if (r) {
		ip->d = saved;
		ret = r;
	}
out:
	dg_txn_free(txn);
	pthread_rwlock_unlock(&fs->lock);
	free(buf);
	return ret;
}

struct xarg {
	const char *name;
	const void *value;
	void *out;
	size_t size;
	int flags;
};

static int do_set(uint8_t *buf, void *a)
{
	struct xarg *x = a;
	struct dg_dxattr_hdr *h = (void *)buf;
	size_t n = strlen(x->name);
	uint32_t off = find(buf, x->name), need = rec_size(n, x->size);
	struct dg_dxattr *r;

	if (off && (x->flags & XATTR_CREATE))
		return -EEXIST;
	if (!off && (x->flags & XATTR_REPLACE))
		return -ENODATA;
	if (off) {
		r = (void *)(buf + off);
		uint32_t old = rec_size(r->namelen, r->vallen);

		if (h->used - old + need > DG_PAGE_SIZE)
			return -ENOSPC;
		memmove(buf + off, buf + off + old, h->used - off - old);
		h->used -= old;
		h->count--;
	}
	if (h->used + need > DG_PAGE_SIZE)
		return -ENOSPC;
	r = (void *)(buf + h->used);
	memset(r, 0, need);
	r->namelen = (uint8_t)n;
	r->vallen = (uint16_t)x->size;
	memcpy(r + 1, x->name, n);
	memcpy((uint8_t *)(r + 1) + n, x->value, x->size);
	h->used += need;
	h->count++;
	return 0;
}

int dg_xattr_page_get(const uint8_t *buf, const char *name, void *out,
		      size_t size)
{
	uint32_t off = find(buf, name);
	const struct dg_dxattr *r = (const void *)(buf + off);

	if (!off)
		return -ENODATA;
	if (size == 0)
		return r->vallen;
	if (size < r->vallen)
		return -ERANGE;
	memcpy(out, (const uint8_t *)(r + 1) + r->namelen, r->vallen);
	return r->vallen;
}

static int do_get(uint8_t *buf, void *a)
{
	struct xarg *x = a;

	return dg_xattr_page_get(buf, x->name, x->out, x->size);
}

int dg_xattr_page_list(const uint8_t *buf, char *out, size_t size)
{
	const struct dg_dxattr_hdr *h = (const void *)buf;
	uint32_t off = sizeof(*h);
	size_t total = 0;

	for (uint32_t i = 0; i < h->count; i++) {
		const struct dg_dxattr *r = (const void *)(buf + off);

		if (size) {
			if (total + r->namelen + 1 > size)
				return -ERANGE;
			memcpy(out + total, r + 1, r->namelen);
			out[total + r->namelen] = 0;
		}
		total += r->namelen + 1u;
		off += rec_size(r->namelen, r->vallen);
	}
	return (int)total;
}

static int do_list(uint8_t *buf, void *a)
{
	struct xarg *x = a;

	return dg_xattr_page_list(buf, x->out, x->size);
}

static int do_remove(uint8_t *buf, void *a)
{
	struct xarg *x = a;
	struct dg_dxattr_hdr *h = (void *)buf;
	uint32_t off = find(buf, x->name), old;
	const struct dg_dxattr *r = (const void *)(buf + off);

	if (!off)
		return -ENODATA;
	old = rec_size(r->namelen, r->vallen);
	memmove(buf + off, buf + off + old, h->used - off - old);
	memset(buf + h->used - old, 0, old);
	h->used -= old;
	h->count--;
	return 0;
}

static int check(const char *name, size_t size)
{
	size_t n = strlen(name);

	if (n == 0 || n > DG_NAME_MAX)
		return -ERANGE;
	if (size > DG_PAGE_SIZE - sizeof(struct dg_dxattr_hdr) -
			   sizeof(struct dg_dxattr) - n)
		return -E2BIG;
	return 0;
}

int dg_fs_setxattr(struct dg_fs *fs, uint64_t ino, const char *name,
		   const void *value, size_t size, int flags)
{
	struct xarg x = { name, value, NULL, size, flags };
	int ret = check(name, size);

	return ret ? ret : with_xattrs(fs, ino, true, do_set, &x);
}

int dg_fs_getxattr(struct dg_fs *fs, uint64_t ino, const char *name,
		   void *value, size_t size)
{
	struct xarg x = { name, NULL, value, size, 0 };
	int ret = check(name, 0);

	return ret ? ret : with_xattrs(fs, ino, false, do_get, &x);
}

int dg_fs_listxattr(struct dg_fs *fs, uint64_t ino, char *list, size_t size)
{
	struct xarg x = { NULL, NULL, list, size, 0 };

	return with_xattrs(fs, ino, false, do_list, &x);
}

int dg_fs_removexattr(struct dg_fs *fs, uint64_t ino, const char *name)
{
	struct xarg x = { name, NULL, NULL, 0, 0 };
	int ret = check(name, 0);

	return ret ? ret : with_xattrs(fs, ino, true, do_remove, &x);
}

/*
 * What the kernel's file_remove_privs() does before a write, truncate or
 * chown, done here because the daemon asks for FUSE_HANDLE_KILLPRIV_V2
 * (which spares a GETXATTR round trip on every write): drop setuid,
 * setgid on group executables, and file capabilities of a regular file,
 * in txn; the caller stores the inode when *changed and commits. Caller
 * holds fs->lock and ip->lock for writing (or fs->lock for writing).
 * Cheap when there is nothing to do.
 */
int dg_inode_kill_priv(struct dg_fs *fs, struct dg_txn *txn,
		       struct dg_inode *ip, bool *changed)
{
	uint32_t mode = ip->d.mode;
	uint8_t *buf;
	int ret;

	*changed = false;
	if (!S_ISREG(mode))
		return 0;
	if ((mode & S_ISUID) || (mode & (S_ISGID | S_IXGRP)) ==
					(S_ISGID | S_IXGRP)) {
		mode &= ~(uint32_t)S_ISUID;
		if (mode & S_IXGRP)
			mode &= ~(uint32_t)S_ISGID;
		ip->d.mode = mode;
		dg_inode_touch(ip, false, true);
		*changed = true;
	}
	if (!ip->d.xattr_vpn)
		return 0;
	buf = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!buf)
		return -ENOMEM;
	ret = load(fs, ip, buf);
	if (!ret) {
		struct xarg xa = { .name = "security.capability" };

		ret = do_remove(buf, &xa);
		if (ret == -ENODATA) {
			ret = 0;
		} else if (!ret) {
			ret = store(txn, ip, buf);
			dg_inode_touch(ip, false, true);
			*changed = true;
		}
	}
	free(buf);
	return ret;
}

int dg_fs_kill_priv(struct dg_fs *fs, uint64_t ino)
{
	struct dg_txn *txn = dg_txn_new(fs->vol);
	struct dg_inode *ip;
	struct dg_dinode saved;
	bool changed = false;
	int ret;

	if (!txn)
		return -ENOMEM;
	pthread_rwlock_wrlock(&fs->lock);
	ip = dg_inode_get(fs, ino);
	ret = !ip ? -ENOENT : fs->broken ? -EROFS : 0;
	if (!ret) {
		saved = ip->d;
		ret = dg_inode_kill_priv(fs, txn, ip, &changed);
		if (!ret && changed)
			ret = dg_inode_store(fs, txn, ip);
		if (!ret && changed)
			ret = dg_fs_commit(fs, txn);
		if (ret)
			ip->d = saved;
	}
	pthread_rwlock_unlock(&fs->lock);
	dg_txn_free(txn);
	return ret;
}
