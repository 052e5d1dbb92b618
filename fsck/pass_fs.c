// SPDX-License-Identifier: MIT
/* pass_fs.c -- pass 3: inodes, extents, directories, links, bitmap */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

int pass_fs(struct fsck_ctx *c)
{
	c->phase = "filesystem";
	return dg_check_fs(c->vol, ctx_event, ctx_ask, c);
}

static void append_name(char *path, size_t size, const char *name)
{
	size_t n = strlen(path);

	snprintf(path + n, size - n, "%s%s",
		 n && path[n - 1] == '/' ? "" : "/", name);
}

/* Name the file each page finding belongs to (G6: the report says
 * which file a page that stays bad belongs to). */
void annotate(struct fsck_ctx *c)
{
	uint8_t *cls = NULL;
	uint64_t *owner = NULL;
	struct dg_fs *fs = NULL;
	struct dg_vol_info info;

	if (!c->nf)
		return;
	dg_vol_get_info(c->vol, &info);
	if (dg_check_classify(c->vol, &cls, &owner))
		return;
	if (dg_fs_open(c->vol, &fs))
		fs = NULL;
	for (size_t i = 0; i < c->nf; i++) {
		struct finding *f = &c->f[i];

		if (f->vpn >= 0 && (uint64_t)f->vpn < info.vpns) {
			if (!f->ino)
				f->ino = owner[f->vpn];
			if (!strcmp(f->structure, "data"))
				snprintf(f->structure, sizeof(f->structure),
					 "%s", dg_pclass_name(cls[f->vpn]));
		}
		if (f->ino && !f->file[0]) {
			if (fs)
				dg_fs_path(fs, f->ino, f->file,
					   sizeof(f->file));
			else
				snprintf(f->file, sizeof(f->file),
					 "?ino%llu",
					 (unsigned long long)f->ino);
			if (f->name[0])	/* an entry of that directory */
				append_name(f->file, sizeof(f->file),
					    f->name);
		}
	}
	dg_fs_close(fs);
	free(cls);
	free(owner);
}
