// SPDX-License-Identifier: MIT
/* check_names.c -- paths of inodes from the tolerant walk, for fsck's
 * report when the filesystem cannot be opened */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walk.h"

/*
 * fsck names the file of each finding by its path (pass_names.c). The
 * filesystem's own namer (dg_fs_path()) needs the filesystem open, which
 * one invalid inode refuses (a mode with no file type): fsck -n of such
 * a volume named every file /lost+found/#N. The walk that fsck's checks
 * run on reads every entry whatever the inodes hold, so the paths come
 * from it instead: each inode by the first entry naming it, as the walk
 * meets them (the name the check keeps where a directory has two).
 */
struct dg_check_names {
	struct walk w;
	size_t *first;		/* per inode: its first live entry + 1 */
};

int dg_check_names_load(struct dg_vol *vol, struct dg_check_names **np)
{
	struct dg_check_names *n = calloc(1, sizeof(*n));
	int ret;

	*np = NULL;
	if (!n)
		return -ENOMEM;
	n->w = (struct walk){ .vol = vol, .classify_only = true };
	ret = dg_walk_load(&n->w);
	if (ret == -EUCLEAN && !n->w.nomem)
		ret = 0;	/* what the walk could read */
	n->first = ret ? NULL : calloc(n->w.icap, sizeof(*n->first));
	if (!ret && !n->first)
		ret = -ENOMEM;
	if (ret) {
		dg_check_names_free(n);
		return ret;
	}
	for (size_t i = n->w.nents; i-- > 0;) {
		const struct went *e = &n->w.ents[i];

		if (!e->dead && e->ino < n->w.icap)
			n->first[e->ino] = i + 1;
	}
	*np = n;
	return 0;
}

/* As dg_fs_path() spells it: "/a/b", or "?inoN/b" where no entry
 * leads from N towards the root (or the way loops). */
void dg_check_names_path(const struct dg_check_names *n, uint64_t ino,
			 char *buf, size_t len)
{
	char tmp[4096] = "", part[4096];
	unsigned depth = 0;

	while (ino != DG_ROOT_INO) {
		const struct went *e = ino < n->w.icap && n->first[ino]
					       ? &n->w.ents[n->first[ino] - 1]
					       : NULL;

		if (!e || depth++ >= 64) {
			snprintf(part, sizeof(part), "?ino%" PRIu64 "%s", ino,
				 tmp);
			snprintf(tmp, sizeof(tmp), "%s", part);
			break;
		}
		snprintf(part, sizeof(part), "/%s%s", e->name, tmp);
		snprintf(tmp, sizeof(tmp), "%s", part);
		ino = e->dir;
	}
	snprintf(buf, len, "%s", tmp[0] ? tmp : "/");
}

void dg_check_names_free(struct dg_check_names *n)
{
	if (!n)
		return;
	free(n->first);
	dg_walk_free(&n->w);
	free(n);
}
