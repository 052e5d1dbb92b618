// SPDX-License-Identifier: MIT
/* path.c -- whose is it: the path of an inode and the file that owns a
 * vpn, for log messages and fault reports */
#include <stdio.h>
#include <string.h>

#include "fsys_i.h"

static bool find_name(struct dg_fs *fs, uint64_t ino, uint64_t *parent,
		      const char **name)
{
	for (uint64_t d = 1; d < fs->icap; d++) {
		struct dg_inode *dp = fs->itab[d];

		if (!dp || !dp->dir)
			continue;
		for (size_t i = 0; i < dp->dir->nents; i++)
			if (dp->dir->ents[i].ino == ino) {
				*parent = d;
				*name = dp->dir->ents[i].name;
				return true;
			}
	}
	return false;
}

void dg_fs_path(struct dg_fs *fs, uint64_t ino, char *buf, size_t len)
{
	char tmp[4096] = "";
	unsigned depth = 0;

	/* Readers may nest: the default rwlock prefers readers. */
	pthread_rwlock_rdlock(&fs->lock);
	while (ino != DG_ROOT_INO && depth++ < 64) {
		uint64_t parent;
		const char *name;
		char part[4096];

		if (!find_name(fs, ino, &parent, &name)) {
			snprintf(part, sizeof(part), "?ino%" PRIu64 "%s", ino,
				 tmp);
			snprintf(tmp, sizeof(tmp), "%s", part);
			break;
		}
		snprintf(part, sizeof(part), "/%s%s", name, tmp);
		snprintf(tmp, sizeof(tmp), "%s", part);
		ino = parent;
	}
	pthread_rwlock_unlock(&fs->lock);
	snprintf(buf, len, "%s", tmp[0] ? tmp : "/");
}

int dg_fs_owner(struct dg_fs *fs, uint64_t vpn, uint64_t *ino, uint64_t *fpage)
{
	int ret = -ENOENT;

	pthread_rwlock_rdlock(&fs->lock);
	for (uint64_t i = 1; i < fs->icap && ret; i++) {
		struct dg_inode *ip = fs->itab[i];

		if (ip && dg_ext_owns(ip, vpn, fpage)) {
			*ino = i;
			ret = 0;
		}
	}
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}
