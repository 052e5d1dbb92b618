// SPDX-License-Identifier: MIT
/* xattr_ops.c -- which store an xattr name of a request goes to: a
 * mount's fixed names, the POSIX ACLs (acl.c), the record pages
 * (xattr.c). The daemon decodes, calls one of these and replies. */
#include <string.h>

#include "fsys_i.h"

void dg_fs_xattr_acl(struct dg_fs *fs, bool on)
{
	fs->posix_acl = on;
}

int dg_fs_xattr_fix(struct dg_fs *fs, const char *name, const char *value)
{
	if (fs->nxfixed == DG_XATTR_FIXED_MAX)
		return -ENOSPC;
	fs->xfixed[fs->nxfixed++] = (struct dg_xattr_fixed){ name, value };
	return 0;
}

/* The value of a fixed name, or NULL. */
static const char *fixed_value(const struct dg_fs *fs, const char *name)
{
	for (unsigned i = 0; i < fs->nxfixed; i++)
		if (!strcmp(name, fs->xfixed[i].name))
			return fs->xfixed[i].value;
	return NULL;
}

static bool acl_name(const char *name)
{
	return !strcmp(name, DG_ACL_ACCESS) || !strcmp(name, DG_ACL_DEFAULT);
}

int dg_fs_xattr_set(struct dg_fs *fs, uint64_t ino, const char *name,
		    const void *value, size_t size, int flags,
		    const struct dg_cred *cr)
{
	/* How tools find the daemon: nobody may point them elsewhere. */
	if (fixed_value(fs, name))
		return -EPERM;
	/* The kernel checked the ACL; the mode must follow it. Without
	 * ACL support the kernel does not read them: stored as given. */
	if (fs->posix_acl && acl_name(name))
		return dg_fs_set_acl(fs, ino, name, value, size, cr);
	return dg_fs_setxattr(fs, ino, name, value, size, flags);
}

int dg_fs_xattr_get(struct dg_fs *fs, uint64_t ino, const char *name,
		    void *value, size_t size)
{
	const char *v = fixed_value(fs, name);
	size_t n;

	if (!v)
		return dg_fs_getxattr(fs, ino, name, value, size);
	n = strlen(v);
	if (size && size < n)
		return -ERANGE;
	if (size)
		memcpy(value, v, n);
	return (int)n;
}
