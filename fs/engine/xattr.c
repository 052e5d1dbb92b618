// SPDX-License-Identifier: MIT
/* xattr.c -- extended attributes: one page of records per inode */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fs_i.h"

static uint32_t rec_size(size_t namelen, size_t vallen)
{
	return (uint32_t)((sizeof(struct dg_dxattr) + namelen + vallen + 3) &
			  ~3u);
}

/* Load the inode's xattr page (or an empty one) into buf, checked. */
static int load(struct dg_fs *fs, struct dg_inode *ip, uint8_t *buf)
{
	struct dg_dxattr_hdr *h = (void *)buf;
	uint32_t off = sizeof(*h);
	int ret;

	if (!ip->d.xattr_vpn) {
		memset(buf, 0, DG_PAGE_SIZE);
		h->used = sizeof(*h);
		return 0;
	}
	ret = dg_read(fs->vol, ip->d.xattr_vpn, 1, buf);
	if (ret)
		return ret;
	if (h->used < sizeof(*h) || h->used > DG_PAGE_SIZE)
		goto bad;
	for (uint32_t i = 0; i < h->count; i++) {
		const struct dg_dxattr *x = (const void *)(buf + off);

		if (off + sizeof(*x) > h->used || x->namelen == 0 ||
		    off + rec_size(x->namelen, x->vallen) > h->used)
			goto bad;
		off += rec_size(x->namelen, x->vallen);
	}
	if (off != h->used)
		goto bad;
	return 0;
bad:
	return DG_CORRUPT(fs->vol, "inode %" PRIu64 ": xattr page", ip->ino);
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

		ret = dg_alloc(txn, 0, 1, &ip->d.xattr_vpn, &got);
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

static int do_get(uint8_t *buf, void *a)
{
	struct xarg *x = a;
	uint32_t off = find(buf, x->name);
	const struct dg_dxattr *r = (const void *)(buf + off);

	if (!off)
		return -ENODATA;
	if (x->size == 0)
		return r->vallen;
	if (x->size < r->vallen)
		return -ERANGE;
	memcpy(x->out, (const uint8_t *)(r + 1) + r->namelen, r->vallen);
	return r->vallen;
}

static int do_list(uint8_t *buf, void *a)
{
	struct xarg *x = a;
	const struct dg_dxattr_hdr *h = (const void *)buf;
	uint32_t off = sizeof(*h);
	size_t total = 0;

	for (uint32_t i = 0; i < h->count; i++) {
		const struct dg_dxattr *r = (const void *)(buf + off);

		if (x->size) {
			if (total + r->namelen + 1 > x->size)
				return -ERANGE;
			memcpy((char *)x->out + total, r + 1, r->namelen);
			((char *)x->out)[total + r->namelen] = 0;
		}
		total += r->namelen + 1u;
		off += rec_size(r->namelen, r->vallen);
	}
	return (int)total;
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

int dg_xattr_drop(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip)
{
	(void)fs;
	if (!ip->d.xattr_vpn)
		return 0;
	ip->d.blocks--;
	return dg_free(txn, ip->d.xattr_vpn, 1);
}
