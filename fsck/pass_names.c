// SPDX-License-Identifier: MIT
/* pass_names.c -- the last pass: name the file each finding belongs to
 * and count the metadata pages outside the zone, for the report */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

static void append_name(char *path, size_t size, const char *name)
{
	size_t n = strlen(path);

	snprintf(path + n, size - n, "%s%s",
		 n && path[n - 1] == '/' ? "" : "/", name);
}

/*
 * An inode no directory entry reaches (its name was on a page given up,
 * or went with its directory) has no path of its own: it is named where
 * fsck -y puts it, /lost+found/#INO (reconnect() in fs/fsys/check_fs.c),
 * with the rest of the path below it, as e2fsck names what it
 * reconnects.
 * dg_fs_path() marks such an inode "?inoN".
 */
static void name_unattached(char *path, size_t size)
{
	unsigned long long ino;
	char rest[sizeof(((struct finding *)0)->file)];
	int n = 0;

	if (sscanf(path, "?ino%llu%n", &ino, &n) != 1 || n <= 0)
		return;
	snprintf(rest, sizeof(rest), "%s", path + n);
	/* (a path too long for the report is cut short) */
	if (snprintf(path, size, "/lost+found/#%llu%s", ino, rest) < 0)
		path[0] = 0;
}

/* Who names the files: the filesystem, or where it cannot be opened
 * (an inode fsck -n leaves invalid), the walk the checks ran on. */
struct namer {
	struct dg_fs *fs;
	struct dg_check_names *walk;
};

/* The path of ino on the volume as the run left it, an unattached
 * inode named where -y puts it. */
static void path_of(const struct namer *nm, uint64_t ino, char *path,
		    size_t size)
{
	if (nm->fs)
		dg_fs_path(nm->fs, ino, path, size);
	else if (nm->walk)
		dg_check_names_path(nm->walk, ino, path, size);
	else
		snprintf(path, size, "?ino%llu", (unsigned long long)ino);
	name_unattached(path, size);
}

/*
 * The file a finding is about. An inode the repair clears
 * (PR_3_INODE_UNUSABLE) is on no path afterwards and never goes to
 * /lost+found: it is named by the entry that named it (which the same
 * run drops as dangling), or, none naming it, by its number alone.
 */
static void name_finding(const struct namer *nm, struct finding *f)
{
	if (f->cleared && !f->dir) {
		snprintf(f->file, sizeof(f->file), "#%llu",
			 (unsigned long long)f->ino);
		return;
	}
	path_of(nm, f->cleared ? f->dir : f->ino, f->file, sizeof(f->file));
	if (f->name[0])	/* an entry of that directory */
		append_name(f->file, sizeof(f->file), f->name);
}

/* Name the file each page finding belongs to (G6: the report says
 * which file a page that stays bad belongs to). */
static void annotate(struct fsck_ctx *c)
{
	struct dg_vpnmap *map = NULL;
	struct namer nm = { 0 };
	struct dg_vol_info info;

	if (!c->nf)
		return;
	dg_vol_get_info(c->vol, &info);
	if (dg_check_classify(c->vol, &map))
		return;
	if (dg_fs_open(c->vol, &nm.fs)) {
		nm.fs = NULL;
		if (dg_check_names_load(c->vol, &nm.walk))
			nm.walk = NULL;
	}
	for (size_t i = 0; i < c->nf; i++) {
		struct finding *f = &c->f[i];

		if (f->vpn >= 0 && (uint64_t)f->vpn < info.vpns) {
			if (!f->ino)
				f->ino = dg_vpnmap_owner(map,
							 (uint64_t)f->vpn);
			if (!strcmp(f->structure, "data"))
				snprintf(f->structure, sizeof(f->structure),
					 "%s", dg_pclass_name(dg_vpnmap_cls(
						 map, (uint64_t)f->vpn)));
		}
		if (f->ino && !f->file[0])
			name_finding(&nm, f);
	}
	dg_fs_close(nm.fs);
	dg_check_names_free(nm.walk);
	dg_vpnmap_free(map);
}

int pass_names(struct fsck_ctx *c)
{
	uint64_t outside;

	if (dg_check_meta_outside(c->vol, &outside) == 0)
		c->meta_outside = (int64_t)outside;
	else
		c->meta_outside = -1;
	annotate(c);
	return PASS_NEXT;
}
