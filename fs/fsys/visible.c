// SPDX-License-Identifier: MIT
/*
 * visible.c -- who could stat a path: the kernel's permission rules
 * (fs/namei.c generic_permission, fs/posix_acl.c posix_acl_permission)
 * applied to a caller who is not the one asking, so the daemon names to
 * a user only the files that user could reach through the mount.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

static bool in_group(const struct dg_who *w, uint32_t gid)
{
	if (w->gid == gid)
		return true;
	for (unsigned i = 0; i < w->ngroups; i++)
		if (w->groups[i] == gid)
			return true;
	return false;
}

/* posix_acl_permission() on the xattr form (acl.c: version word, then
 * tag/perm/id entries); the owner was handled by the caller. */
static bool acl_permits(const struct dg_who *w, uint32_t fgid,
			const uint8_t *acl, size_t size, unsigned want)
{
	size_t n = size >= 4 ? (size - 4) / 8 : 0;
	bool found = false;
	int match = -1;

	for (size_t i = 0; i < n && match < 0; i++) {
		uint16_t tag, perm;
		uint32_t id;

		memcpy(&tag, acl + 4 + i * 8, 2);
		memcpy(&perm, acl + 4 + i * 8 + 2, 2);
		memcpy(&id, acl + 4 + i * 8 + 4, 4);
		switch (tag) {
		case DG_ACL_USER:
			if (id == w->uid)
				match = (int)i; /* checked with the mask */
			break;
		case DG_ACL_GROUP_OBJ:
		case DG_ACL_GROUP:
			if (in_group(w, tag == DG_ACL_GROUP ? id : fgid)) {
				found = true;
				if ((perm & want) == want)
					match = (int)i;
			}
			break;
		case DG_ACL_OTHER:
			if (found)
				return false;
			return (perm & want) == want;
		default:
			break;
		}
	}
	if (match < 0)
		return false;
	{
		uint16_t perm;

		memcpy(&perm, acl + 4 + (size_t)match * 8 + 2, 2);
		for (size_t i = 0; i < n; i++) {
			uint16_t tag, mperm;

			memcpy(&tag, acl + 4 + i * 8, 2);
			memcpy(&mperm, acl + 4 + i * 8 + 2, 2);
			if (tag == DG_ACL_MASK)
				return (perm & mperm & want) == want;
		}
		return (perm & want) == want;
	}
}

bool dg_who_may(const struct dg_who *w, uint32_t mode, uint32_t uid,
		uint32_t gid, const void *acl, size_t acl_size, unsigned want)
{
	if (w->uid == 0)
		return true; /* CAP_DAC_OVERRIDE; the daemon asks for root's
			      * callers only as such */
	if (w->uid == uid)
		return ((mode >> 6) & want) == want;
	if (acl && acl_size > 4 && (mode & S_IRWXG))
		return acl_permits(w, gid, acl, acl_size, want);
	if (in_group(w, gid))
		return ((mode >> 3) & want) == want;
	return (mode & want) == want;
}

/* Whether w may search directory dp. Caller holds fs->lock. */
static bool may_search(struct dg_fs *fs, struct dg_inode *dp,
		       const struct dg_who *w, bool acl)
{
	uint8_t raw[DG_ACL_MAX];
	int n = -ENODATA;

	if (w->uid != 0 && w->uid != dp->d.uid && acl)
		n = dg_xattr_get_locked(fs, dp, "system.posix_acl_access", raw,
					sizeof(raw));
	if (n < 0 && n != -ENODATA)
		return false; /* unreadable: say no */
	return dg_who_may(w, dp->d.mode, dp->d.uid, dp->d.gid,
			  n > 0 ? raw : NULL, n > 0 ? (size_t)n : 0,
			  DG_MAY_EXEC);
}

bool dg_fs_may_stat(struct dg_fs *fs, const char *path,
		    const struct dg_who *w, bool acl)
{
	struct dg_inode *ip;
	char name[DG_NAME_MAX + 1];
	bool ok = false;

	if (path[0] != '/')
		return false; /* "?ino": no path to reach it by */
	pthread_rwlock_rdlock(&fs->lock);
	ip = dg_inode_get(fs, DG_ROOT_INO);
	for (const char *p = path;;) {
		const char *end;
		struct dg_dent *de;
		struct dg_dir *dir;
		bool own;
		size_t len;

		while (*p == '/')
			p++;
		if (!*p) {
			ok = ip != NULL;
			break;
		}
		if (!ip || !S_ISDIR(ip->d.mode) || !may_search(fs, ip, w, acl))
			break;
		end = strchr(p, '/');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len > DG_NAME_MAX)
			break;
		memcpy(name, p, len);
		name[len] = 0;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			break; /* dg_fs_path() makes none */
		/* Read for the walk only: no forget comes for it. */
		if (dg_dir_borrow(fs, ip, &dir, &own))
			break;
		de = dg_dir_find(dir, name);
		ip = de ? dg_inode_get(fs, de->ino) : NULL;
		dg_dir_unborrow(dir, own);
		p += len;
	}
	pthread_rwlock_unlock(&fs->lock);
	return ok;
}
