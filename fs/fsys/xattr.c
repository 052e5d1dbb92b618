// SPDX-License-Identifier: MIT
/* xattr.c -- extended attributes: a run of record pages per inode */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fsys_i.h"

/* Bytes of the record's value: 17 bits (format.h, XATTR_64K). */
static uint32_t val_len(const struct dg_dxattr *x)
{
	return x->vallen | (uint32_t)x->vallen_hi << 16;
}

static uint32_t rec_size(size_t namelen, size_t vallen)
{
	return (uint32_t)((sizeof(struct dg_dxattr) + namelen + vallen + 3) &
			  ~3u);
}

static uint32_t rec_bytes(const struct dg_dxattr *x)
{
	return rec_size(x->namelen, val_len(x));
}

/* Pages the inode's attributes may take on this volume: one more than
 * DG_XATTR_MAX_PAGES, which only an area with a value of HUGE_VALUE
 * bytes or more may use (do_set()); store() sets XATTR_64K before a run
 * grows past DG_XATTR_MAX_PAGES. */
static uint32_t cap_pages(const struct dg_fs *fs)
{
	return dg_vol_has_incompat(fs->vol, DG_FEAT_INCOMPAT_XATTR_RUN)
		       ? DG_XATTR_64K_PAGES
		       : 1;
}

/* Pages a run may have on the media of this volume, as it is. */
static uint32_t media_pages(const struct dg_fs *fs)
{
	return !dg_vol_has_incompat(fs->vol, DG_FEAT_INCOMPAT_XATTR_RUN)
		       ? 1
	       : dg_vol_has_incompat(fs->vol, DG_FEAT_INCOMPAT_XATTR_64K)
		       ? DG_XATTR_64K_PAGES
		       : DG_XATTR_MAX_PAGES;
}

#define AREA_BYTES ((size_t)DG_XATTR_64K_PAGES * DG_PAGE_SIZE)

int dg_xattr_page_check(const uint8_t *buf, uint32_t pages, bool big)
{
	const struct dg_dxattr_hdr *h = (const void *)buf;
	uint32_t off = sizeof(*h);

	/* The run is the fewest pages that hold the records. */
	if (h->used < sizeof(*h) || h->used > pages * DG_PAGE_SIZE ||
	    (h->used + DG_PAGE_SIZE - 1) / DG_PAGE_SIZE != pages)
		return -EUCLEAN;
	for (uint32_t i = 0; i < h->count; i++) {
		const struct dg_dxattr *x = (const void *)(buf + off);

		/* Without XATTR_64K the byte is a pad, zero. */
		if (off + sizeof(*x) > h->used || x->namelen == 0 ||
		    x->vallen_hi > (big ? 1 : 0) ||
		    val_len(x) > DG_XATTR_VALUE_MAX ||
		    off + rec_bytes(x) > h->used)
			return -EUCLEAN;
		/* listxattr hands names out NUL-terminated: one with a NUL
		 * inside would list as names that do not exist. */
		if (memchr(x + 1, 0, x->namelen))
			return -EUCLEAN;
		off += rec_bytes(x);
	}
	return off == h->used ? 0 : -EUCLEAN;
}

/* Load the inode's xattr run (or an empty area) into buf, which holds
 * AREA_BYTES, checked. */
static int load(struct dg_fs *fs, struct dg_inode *ip, uint8_t *buf)
{
	struct dg_dxattr_hdr *h = (void *)buf;
	uint32_t n = dg_xattr_run_pages(&ip->d);
	int ret;

	/* Bytes past used are zero on the media and in core: a record
	 * that grows into a new page leaves zeros after it. */
	memset(buf, 0, AREA_BYTES);
	if (!n) {
		h->used = sizeof(*h);
		return 0;
	}
	if (n <= media_pages(fs)) {
		ret = dg_read(fs->vol, ip->d.xattr_vpn, n, buf);
		if (ret)
			return ret;
		if (!dg_xattr_page_check(buf, n, dg_vol_has_incompat(
				fs->vol, DG_FEAT_INCOMPAT_XATTR_64K)))
			return 0;
	}
	return DG_CORRUPT(fs->vol, "inode %" PRIu64 ": xattr pages", ip->ino);
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
		off += rec_bytes(x);
	}
	return 0;
}

/*
 * Store buf (the area as changed; old: as loaded) in txn. The run keeps
 * its place while it keeps its length or shrinks (the tail is freed);
 * a run that must grow moves to a new run of the length it needs, the
 * old one freed in the same transaction. In place, only the pages that
 * changed are written.
 */
static int store(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		 const uint8_t *buf, const uint8_t *old)
{
	const struct dg_dxattr_hdr *h = (const void *)buf;
	uint32_t have = dg_xattr_run_pages(&ip->d);
	uint32_t need = h->count ? (h->used + DG_PAGE_SIZE - 1) / DG_PAGE_SIZE
				 : 0;
	bool moved = false;
	int ret;

	/* A run past 16 pages is the new form, and every record with a
	 * 17-bit length is in one (with the two headers it does not fit
	 * 16 pages): the run's length alone says whether the volume must
	 * say XATTR_64K before this transaction uses it. */
	if (need > DG_XATTR_MAX_PAGES) {
		ret = dg_vol_set_incompat(fs->vol, DG_FEAT_INCOMPAT_XATTR_64K);
		if (ret)
			return ret;
	}
	if (need < have) {
		ret = dg_free(txn, ip->d.xattr_vpn + need, have - need);
		if (ret)
			return ret;
		ip->d.blocks -= have - need;
		if (!need)
			ip->d.xattr_vpn = 0;
	} else if (need > have) {
		uint64_t start;

		/* In the metadata zone, with ditto copies, as every metadata page. */
		ret = dg_alloc_exact(txn, need, true, &start);
		if (ret)
			return ret;
		if (have) {
			ret = dg_free(txn, ip->d.xattr_vpn, have);
			if (ret)
				return ret;
		}
		ip->d.blocks += need - have;
		ip->d.xattr_vpn = start;
		moved = true;
	}
	ip->d.xattr_pages = need > 1 ? need : 0;
	for (uint32_t p = 0; p < need; p++) {
		const uint8_t *pg = buf + (size_t)p * DG_PAGE_SIZE;

		if (!moved && !memcmp(pg, old + (size_t)p * DG_PAGE_SIZE,
				      DG_PAGE_SIZE))
			continue;
		ret = dg_txn_write(txn, ip->d.xattr_vpn + p, 0, pg,
				   DG_PAGE_SIZE);
		if (ret)
			return ret;
	}
	return 0;
}

static uint8_t *area_new(void)
{
	return aligned_alloc(DG_PAGE_SIZE, 2 * AREA_BYTES);
}

/* Common frame: look up ino, load its attributes, run op, commit if
 * dirty. */
static int with_xattrs(struct dg_fs *fs, uint64_t ino, bool write,
		       int (*op)(uint8_t *buf, uint32_t cap, void *arg),
		       void *arg)
{
	uint8_t *buf = area_new(), *old;
	struct dg_txn *txn = NULL;
	struct dg_inode *ip;
	struct dg_dinode saved;
	int ret, r;

	if (!buf)
		return -ENOMEM;
	old = buf + AREA_BYTES;
	if (write)
		pthread_rwlock_wrlock(&fs->lock);
	else
		pthread_rwlock_rdlock(&fs->lock);
	ret = dg_inode_find(fs, ino, false, &ip);
	if (!ret && write && fs->broken)
		ret = -EROFS;
	if (!ret)
		ret = load(fs, ip, buf);
	if (ret)
		goto out;
	if (write)
		memcpy(old, buf, AREA_BYTES);
	ret = op(buf, cap_pages(fs) * DG_PAGE_SIZE, arg);
	if (ret < 0 || !write)
		goto out;
	txn = dg_txn_new(fs->vol);
	if (!txn) {
		ret = -ENOMEM;
		goto out;
	}
	saved = ip->d;
	ip->xabsent = 0;
	r = store(fs, txn, ip, buf, old);
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

/* A value this long or longer may take the page past DG_XATTR_MAX_PAGES:
 * every length up to XATTR_SIZE_MAX then fits, with its headers and
 * some small attributes beside it. */
#define HUGE_VALUE ((DG_XATTR_MAX_PAGES - 1) * DG_PAGE_SIZE)

/* Whether a record other than the one at skip has a value of at least
 * HUGE_VALUE bytes. */
static bool holds_huge(const uint8_t *buf, uint32_t skip)
{
	const struct dg_dxattr_hdr *h = (const void *)buf;
	uint32_t off = sizeof(*h);

	for (uint32_t i = 0; i < h->count; i++) {
		const struct dg_dxattr *x = (const void *)(buf + off);

		if (off != skip && val_len(x) >= HUGE_VALUE)
			return true;
		off += rec_bytes(x);
	}
	return false;
}

static int do_set(uint8_t *buf, uint32_t cap, void *a)
{
	struct xarg *x = a;
	struct dg_dxattr_hdr *h = (void *)buf;
	size_t n = strlen(x->name);
	uint32_t off = find(buf, x->name), need = rec_size(n, x->size);
	struct dg_dxattr *r;

	/* The limit stays DG_XATTR_MAX_PAGES (64 KiB) of attributes; the
	 * page more is for the headers around a value of up to 64 KiB, so
	 * only an area that holds one may use it (and the volume says
	 * XATTR_64K only where one has been stored). */
	if (cap > DG_XATTR_MAX_PAGES * DG_PAGE_SIZE && x->size < HUGE_VALUE &&
	    !holds_huge(buf, off))
		cap = DG_XATTR_MAX_PAGES * DG_PAGE_SIZE;

	if (off && (x->flags & XATTR_CREATE))
		return -EEXIST;
	if (!off && (x->flags & XATTR_REPLACE))
		return -ENODATA;
	if (off) {
		r = (void *)(buf + off);
		uint32_t old = rec_bytes(r);

		if (h->used - old + need > cap)
			return -ENOSPC;
		memmove(buf + off, buf + off + old, h->used - off - old);
		h->used -= old;
		h->count--;
	}
	if (h->used + need > cap)
		return -ENOSPC;
	r = (void *)(buf + h->used);
	memset(r, 0, need);
	r->namelen = (uint8_t)n;
	r->vallen = (uint16_t)x->size;
	r->vallen_hi = (uint8_t)(x->size >> 16);
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
		return (int)val_len(r);
	if (size < val_len(r))
		return -ERANGE;
	memcpy(out, (const uint8_t *)(r + 1) + r->namelen, val_len(r));
	return (int)val_len(r);
}

static int do_get(uint8_t *buf, uint32_t cap, void *a)
{
	struct xarg *x = a;

	(void)cap;
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
		off += rec_bytes(r);
	}
	return (int)total;
}

static int do_list(uint8_t *buf, uint32_t cap, void *a)
{
	struct xarg *x = a;

	(void)cap;
	return dg_xattr_page_list(buf, x->out, x->size);
}

static int do_remove(uint8_t *buf, uint32_t cap, void *a)
{
	struct xarg *x = a;
	struct dg_dxattr_hdr *h = (void *)buf;
	uint32_t off = find(buf, x->name), old;
	const struct dg_dxattr *r = (const void *)(buf + off);

	(void)cap;
	if (!off)
		return -ENODATA;
	old = rec_bytes(r);
	memmove(buf + off, buf + off + old, h->used - off - old);
	memset(buf + h->used - old, 0, old);
	h->used -= old;
	h->count--;
	return 0;
}

/*
 * system.* names are the kernel's own namespace: it checks the POSIX
 * ACL names and leaves the rest to the filesystem, unchecked. Any user
 * could store them on any file they can reach (root's 0600 files too)
 * and fill its xattr space until root's setfacl gets ENOSPC; ext4 knows
 * no other system.* name and answers EOPNOTSUPP, as this does.
 */
static bool foreign_system_name(const char *name)
{
	return !strncmp(name, "system.", 7) &&
	       strcmp(name, "system.posix_acl_access") &&
	       strcmp(name, "system.posix_acl_default");
}

static int check(const char *name, size_t size)
{
	size_t n = strlen(name);

	if (n == 0 || n > DG_NAME_MAX)
		return -ERANGE;
	if (foreign_system_name(name))
		return -EOPNOTSUPP;
	/* The record's own limit (the kernel's too); whether it fits is
	 * do_set()'s question. */
	if (size > DG_XATTR_VALUE_MAX)
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

	/* One stored before such names were refused can still go, so a
	 * file whose space was filled with them gets it back. */
	if (ret == -EOPNOTSUPP) {
		ret = with_xattrs(fs, ino, true, do_remove, &x);
		return ret == -ENODATA ? -EOPNOTSUPP : ret;
	}
	return ret ? ret : with_xattrs(fs, ino, true, do_remove, &x);
}

/* The DG_XABSENT_* bit of name, or 0 for names not kept track of. */
static uint8_t absent_bit(const char *name)
{
	return !strcmp(name, "security.capability")	   ? DG_XABSENT_CAPS
	       : !strcmp(name, "system.posix_acl_access")  ? DG_XABSENT_ACL
	       : !strcmp(name, "system.posix_acl_default") ? DG_XABSENT_DEFACL
							   : 0;
}

int dg_xattr_get_locked(struct dg_fs *fs, struct dg_inode *ip,
			const char *name, void *value, size_t size)
{
	struct xarg x = { name, NULL, value, size, 0 };
	uint8_t bit = absent_bit(name);
	uint8_t *buf;
	int ret;

	if (!ip->d.xattr_vpn || (ip->xabsent & bit))
		return -ENODATA;
	buf = area_new();
	if (!buf)
		return -ENOMEM;
	ret = load(fs, ip, buf);
	if (!ret)
		ret = do_get(buf, cap_pages(fs) * DG_PAGE_SIZE, &x);
	if (ret == -ENODATA)
		ip->xabsent |= bit;
	free(buf);
	return ret;
}

int dg_xattr_set_txn(struct dg_fs *fs, struct dg_txn *txn,
		     struct dg_inode *ip, const struct dg_xset *sets,
		     unsigned n)
{
	uint8_t *buf, *old;
	bool any = false;
	int ret = 0;

	for (unsigned i = 0; i < n && !ret; i++) {
		ret = check(sets[i].name, sets[i].size);
		any |= sets[i].value || ip->d.xattr_vpn;
	}
	if (ret || !any)
		return ret;
	buf = area_new();
	if (!buf)
		return -ENOMEM;
	old = buf + AREA_BYTES;
	ret = load(fs, ip, buf);
	if (!ret)
		memcpy(old, buf, AREA_BYTES);
	for (unsigned i = 0; i < n && !ret; i++) {
		struct xarg x = { sets[i].name, sets[i].value, NULL,
				  sets[i].size, 0 };

		ret = x.value ? do_set(buf, cap_pages(fs) * DG_PAGE_SIZE, &x)
			      : do_remove(buf, cap_pages(fs) * DG_PAGE_SIZE, &x);
		if (ret == -ENODATA) /* nothing to remove */
			ret = 0;
	}
	/* One load and one store: the run may move, and a second load
	 * would read the media, not this transaction. */
	ip->xabsent = 0;
	if (!ret)
		ret = store(fs, txn, ip, buf, old);
	free(buf);
	return ret;
}
