// SPDX-License-Identifier: MIT
/*
 * acl.c -- POSIX ACLs in their xattr form, kept one truth with the mode.
 *
 * With FUSE_CAP_POSIX_ACL the kernel enforces ACLs but leaves to the
 * filesystem what fs/posix_acl.c does for a local one: a chmod rewrites
 * the access ACL (__posix_acl_chmod), setting an access ACL rewrites the
 * mode (posix_acl_update_mode) and stores none when the mode says it
 * all (posix_acl_equiv_mode), and a new inode takes its directory's
 * default ACL (posix_acl_create_masq). These follow the kernel's rules
 * one by one. The xattr form ("system.posix_acl_access" and
 * "..._default") is a little-endian version word (2) and entries of
 * tag, perm and id, sorted by tag and then id (posix_acl_valid()).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

struct acl_ent {
	uint16_t tag;
	uint16_t perm;
	uint32_t id;
};

static size_t nents(size_t size)
{
	return (size - 4) / sizeof(struct acl_ent);
}

static struct acl_ent *ents(void *v)
{
	return (struct acl_ent *)((uint8_t *)v + 4);
}

/* posix_acl_from_xattr() and posix_acl_valid(). Like every function
 * here, it takes the xattr value in a 4-byte aligned buffer. */
int dg_acl_check(const void *v, size_t size)
{
	const struct acl_ent *e = ents((void *)v);
	unsigned seen = 0, prev = 0, named = 0;
	uint32_t version, prev_id = 0;

	if (size < 4 || (size - 4) % sizeof(struct acl_ent) ||
	    nents(size) == 0)
		return -EINVAL;
	memcpy(&version, v, 4);
	if (version != DG_ACL_VERSION)
		return -EOPNOTSUPP;
	for (size_t i = 0; i < nents(size); i++) {
		if (e[i].perm & ~7u || e[i].tag < prev)
			return -EINVAL;
		switch (e[i].tag) {
		case DG_ACL_USER:
		case DG_ACL_GROUP:
			if (e[i].tag == prev && e[i].id <= prev_id)
				return -EINVAL;
			named++;
			break;
		case DG_ACL_USER_OBJ:
		case DG_ACL_GROUP_OBJ:
		case DG_ACL_MASK:
		case DG_ACL_OTHER:
			if (seen & e[i].tag)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
		seen |= e[i].tag;
		prev = e[i].tag;
		prev_id = e[i].id;
	}
	if (!(seen & DG_ACL_USER_OBJ) || !(seen & DG_ACL_GROUP_OBJ) ||
	    !(seen & DG_ACL_OTHER) || (named && !(seen & DG_ACL_MASK)))
		return -EINVAL;
	return 0;
}

/* posix_acl_equiv_mode(): the permission bits the ACL gives (the mask,
 * if any, as the group bits) into *mode; 1 when an ACL must be kept,
 * 0 when the mode says it all. */
int dg_acl_equiv_mode(const void *v, size_t size, uint32_t *mode)
{
	const struct acl_ent *e = ents((void *)v);
	uint32_t m = 0;
	int not_equiv = 0;

	for (size_t i = 0; i < nents(size); i++) {
		switch (e[i].tag) {
		case DG_ACL_USER_OBJ:
			m |= (e[i].perm & 7u) << 6;
			break;
		case DG_ACL_GROUP_OBJ:
			m |= (e[i].perm & 7u) << 3;
			break;
		case DG_ACL_OTHER:
			m |= e[i].perm & 7u;
			break;
		case DG_ACL_MASK:
			m = (m & ~(uint32_t)S_IRWXG) | (e[i].perm & 7u) << 3;
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
			break;
		}
	}
	*mode = (*mode & ~(uint32_t)(S_IRWXU | S_IRWXG | S_IRWXO)) | m;
	return not_equiv;
}

/* __posix_acl_chmod(): the owner, other, and mask (or group) entries
 * take the new permission bits. */
void dg_acl_chmod(void *v, size_t size, uint32_t mode)
{
	struct acl_ent *e = ents(v), *group = NULL, *mask = NULL;

	for (size_t i = 0; i < nents(size); i++) {
		if (e[i].tag == DG_ACL_USER_OBJ)
			e[i].perm = (uint16_t)((mode & S_IRWXU) >> 6);
		else if (e[i].tag == DG_ACL_OTHER)
			e[i].perm = (uint16_t)(mode & S_IRWXO);
		else if (e[i].tag == DG_ACL_GROUP_OBJ)
			group = &e[i];
		else if (e[i].tag == DG_ACL_MASK)
			mask = &e[i];
	}
	if (mask)
		mask->perm = (uint16_t)((mode & S_IRWXG) >> 3);
	else if (group)
		group->perm = (uint16_t)((mode & S_IRWXG) >> 3);
}

/* posix_acl_create_masq(): a default ACL turned into a new inode's
 * access ACL, both limited by the mode it was created with. Returns 1
 * when the ACL must be kept, 0 when the mode says it all. */
int dg_acl_create_masq(void *v, size_t size, uint32_t *mode_p)
{
	struct acl_ent *e = ents(v), *group = NULL, *mask = NULL;
	uint32_t mode = *mode_p;
	int not_equiv = 0;

	for (size_t i = 0; i < nents(size); i++) {
		switch (e[i].tag) {
		case DG_ACL_USER_OBJ:
			e[i].perm &= (uint16_t)((mode >> 6) | ~7u);
			mode &= ((uint32_t)e[i].perm << 6) | ~(uint32_t)S_IRWXU;
			break;
		case DG_ACL_USER:
		case DG_ACL_GROUP:
			not_equiv = 1;
			break;
		case DG_ACL_GROUP_OBJ:
			group = &e[i];
			break;
		case DG_ACL_OTHER:
			e[i].perm &= (uint16_t)(mode | ~7u);
			mode &= e[i].perm | ~(uint32_t)S_IRWXO;
			break;
		case DG_ACL_MASK:
			mask = &e[i];
			not_equiv = 1;
			break;
		}
	}
	if (!mask)
		mask = group;
	mask->perm &= (uint16_t)((mode >> 3) | ~7u);
	mode &= ((uint32_t)mask->perm << 3) | ~(uint32_t)S_IRWXG;
	*mode_p = (*mode_p & ~(uint32_t)(S_IRWXU | S_IRWXG | S_IRWXO)) | mode;
	return not_equiv;
}

/* A 4-byte aligned copy of an ACL value, or NULL. */
static void *acl_dup(const void *v, size_t size)
{
	void *p = aligned_alloc(8, (size + 7) & ~(size_t)7);

	if (p)
		memcpy(p, v, size);
	return p;
}

/* The inode's ACL called name into *vp (malloc'd, aligned): its size,
 * 0 when it has none, or -errno. Caller holds fs->lock. */
static int acl_get(struct dg_fs *fs, struct dg_inode *ip, const char *name,
		   void **vp)
{
	uint8_t raw[DG_ACL_MAX];
	int n = dg_xattr_get_locked(fs, ip, name, raw, sizeof(raw));

	*vp = NULL;
	if (n == -ENODATA)
		return 0;
	if (n < 0)
		return n == -ERANGE ? -EUCLEAN : n;
	if (dg_acl_check(raw, (size_t)n))
		return DG_CORRUPT(fs->vol, "inode %" PRIu64 ": %s", ip->ino,
				  name);
	*vp = acl_dup(raw, (size_t)n);
	return *vp ? n : -ENOMEM;
}

int dg_acl_chmod_inode(struct dg_fs *fs, struct dg_txn *txn,
		       struct dg_inode *ip)
{
	void *v;
	int n = acl_get(fs, ip, DG_ACL_ACCESS, &v);

	if (n <= 0)
		return n;
	dg_acl_chmod(v, (size_t)n, ip->d.mode);
	n = dg_xattr_set_txn(fs, txn, ip,
			     &(struct dg_xset){ DG_ACL_ACCESS, v, (size_t)n },
			     1);
	free(v);
	return n;
}

int dg_acl_prepare(struct dg_fs *fs, struct dg_inode *dp, uint32_t *mode,
		   int32_t umask, struct dg_acl_new *an)
{
	void *v;
	int n;

	memset(an, 0, sizeof(*an));
	if (S_ISLNK(*mode))
		return 0;
	n = acl_get(fs, dp, DG_ACL_DEFAULT, &v);
	if (n < 0)
		return n;
	if (n == 0) {
		if (umask >= 0)
			*mode &= ~(uint32_t)umask;
		return 0;
	}
	if (S_ISDIR(*mode)) {
		an->dflt = acl_dup(v, (size_t)n);
		if (!an->dflt) {
			free(v);
			return -ENOMEM;
		}
		an->dflt_len = (size_t)n;
	}
	if (dg_acl_create_masq(v, (size_t)n, mode)) {
		an->access = v;
		an->access_len = (size_t)n;
	} else {
		free(v);
	}
	return 0;
}

int dg_acl_apply(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		 const struct dg_acl_new *an)
{
	struct dg_xset x[2];
	unsigned n = 0;

	if (an->access)
		x[n++] = (struct dg_xset){ DG_ACL_ACCESS, an->access,
					   an->access_len };
	if (an->dflt)
		x[n++] = (struct dg_xset){ DG_ACL_DEFAULT, an->dflt,
					   an->dflt_len };
	return n ? dg_xattr_set_txn(fs, txn, ip, x, n) : 0;
}

void dg_acl_new_free(struct dg_acl_new *an)
{
	free(an->access);
	free(an->dflt);
	memset(an, 0, sizeof(*an));
}

/*
 * setxattr of an ACL (the kernel has checked permission): a default ACL
 * is stored as given (directories only); an access ACL sets the mode's
 * permission bits (the mask as the group's), is stored only when the
 * mode cannot say it all, and drops S_ISGID for a caller outside the
 * file's group (posix_acl_update_mode()). One transaction.
 */
int dg_fs_set_acl(struct dg_fs *fs, uint64_t ino, const char *name,
		  const void *value, size_t size, const struct dg_cred *cr)
{
	bool access = !strcmp(name, DG_ACL_ACCESS);
	struct dg_txn *txn = NULL;
	struct dg_inode *ip;
	struct dg_dinode saved;
	void *v;
	int ret;

	if (!access && strcmp(name, DG_ACL_DEFAULT))
		return -EINVAL;
	if (size > DG_ACL_MAX)
		return -E2BIG;
	v = acl_dup(value, size);
	if (!v)
		return -ENOMEM;
	ret = dg_acl_check(v, size);
	pthread_rwlock_wrlock(&fs->lock);
	if (!ret)
		ret = dg_inode_find(fs, ino, false, &ip);
	if (!ret && fs->broken)
		ret = -EROFS;
	if (!ret && !access && !S_ISDIR(ip->d.mode))
		ret = -EACCES;
	if (!ret && !(txn = dg_txn_new(fs->vol)))
		ret = -ENOMEM;
	if (ret)
		goto out;
	saved = ip->d;
	if (access) {
		uint32_t mode = ip->d.mode;
		bool keep = dg_acl_equiv_mode(v, size, &mode);

		ip->d.mode = dg_setid_chmod(mode, ip->d.gid, cr);
		ret = dg_xattr_set_txn(fs, txn, ip,
				       &(struct dg_xset){ name, keep ? v : NULL,
							  size }, 1);
	} else {
		ret = dg_xattr_set_txn(fs, txn, ip,
				       &(struct dg_xset){ name, v, size }, 1);
	}
	dg_inode_touch(ip, false, true);
	if (!ret)
		ret = dg_inode_store(fs, txn, ip);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	if (ret)
		ip->d = saved;
out:
	dg_txn_free(txn);
	pthread_rwlock_unlock(&fs->lock);
	free(v);
	return ret;
}
