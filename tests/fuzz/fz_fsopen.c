// SPDX-License-Identifier: MIT
/* fz_fsopen.c -- the whole mount path over metadata that verifies: one
 * metadata page of a real filesystem (an inode table page, a directory
 * page, an extent page, an xattr page, the volume root) replaced through
 * the update path by the input, then the filesystem opened read-only as
 * the daemon opens it and every name walked as lookup, readdir, getattr,
 * read, readlink and getxattr serve it, then fsck's filesystem pass.
 * Input: one byte choosing the page, then bytes laid over its original
 * contents (the rest of the page stays as it was). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fscheck.h"
#include "fuzz_vol.h"

enum { T_ITABLE, T_ITABLE2, T_ROOTDIR, T_BIGDIR, T_EMAP, T_XATTR, T_ROOT,
       T_NR };

static struct dg_vol *vol;
static uint64_t target[T_NR];
static uint8_t orig[T_NR][DG_PAGE_SIZE];
static char ro_paths[DG_FUZZ_NDEV][64];

static void setup(void)
{
	struct dg_dinode d;
	uint64_t ino[4];

	vol = dg_fuzz_vol();
	if (dg_fuzz_fill(vol, ino) || dg_vol_sync(vol)) {
		fprintf(stderr, "fz_fsopen: cannot fill the volume\n");
		exit(1);
	}
	FUZZ_ASSERT(dg_fuzz_dinode(vol, ino[0], &d, &target[T_ITABLE]) == 0);
	target[T_ROOTDIR] = d.inl[0].vpn;
	FUZZ_ASSERT(dg_fuzz_dinode(vol, ino[1], &d, NULL) == 0);
	target[T_BIGDIR] = d.inl[0].vpn + (d.inl[0].len > 1);
	FUZZ_ASSERT(dg_fuzz_dinode(vol, ino[2], &d, &target[T_ITABLE2]) == 0);
	target[T_EMAP] = d.emap_vpn;
	FUZZ_ASSERT(dg_fuzz_dinode(vol, ino[3], &d, NULL) == 0);
	target[T_XATTR] = d.xattr_vpn;
	target[T_ROOT] = 0;
	for (unsigned t = 0; t < T_NR; t++)
		FUZZ_ASSERT(dg_read(vol, target[t], 1, orig[t]) == 0);
	/* The images are unlinked: a second, read-only handle reaches them
	 * through this process's descriptors. */
	for (unsigned i = 0; i < DG_FUZZ_NDEV; i++)
		snprintf(ro_paths[i], sizeof(ro_paths[i]), "/proc/self/fd/%d",
			 vol->devs[i].fd);
}

static int put(unsigned t, const void *page)
{
	struct dg_range r = { target[t], 0, DG_PAGE_SIZE, page };
	int ret = dg_apply(vol, &r, 1);

	return ret ? ret : dg_vol_sync(vol);
}

struct names {
	unsigned n;
	char name[64][DG_NAME_MAX + 1];
};

static int collect(void *arg, const char *name, const struct dg_attr *attr,
		   uint64_t next)
{
	struct names *l = arg;

	(void)attr;
	(void)next;
	if (l->n == 64)
		return 1;
	snprintf(l->name[l->n++], DG_NAME_MAX + 1, "%s", name);
	return 0;
}

static void visit(struct dg_fs *fs, uint64_t ino, const struct dg_attr *a,
		  unsigned depth);

static void walk_dir(struct dg_fs *fs, uint64_t dir, unsigned depth)
{
	struct names *l = calloc(1, sizeof(*l));

	if (!l || dg_fs_opendir(fs, dir) ||
	    dg_fs_readdir(fs, dir, 0, false, collect, l) < 0) {
		free(l);
		return;
	}
	for (unsigned i = 0; i < l->n; i++) {
		struct dg_attr a;

		if (!strcmp(l->name[i], ".") || !strcmp(l->name[i], ".."))
			continue;
		if (dg_fs_lookup(fs, dir, l->name[i], &a))
			continue;
		visit(fs, a.ino, &a, depth);
		dg_fs_forget(fs, a.ino, 1);
	}
	free(l);
}

static void visit(struct dg_fs *fs, uint64_t ino, const struct dg_attr *a,
		  unsigned depth)
{
	static uint8_t pages[18 * DG_PAGE_SIZE] __attribute__((aligned(4096)));
	static char buf[DG_PAGE_SIZE];
	const void *data;
	struct dg_attr b;

	FUZZ_ASSERT(dg_fs_getattr(fs, ino, &b) != 0 || b.ino == a->ino);
	if (S_ISDIR(a->mode) && depth < 4)
		walk_dir(fs, ino, depth + 1);
	if (S_ISREG(a->mode) && dg_fs_open_ino(fs, ino, false, NULL) == 0) {
		ssize_t n = dg_fs_read(fs, ino, 0, 16 * DG_PAGE_SIZE, pages,
				       &data);

		FUZZ_ASSERT(n < 0 || (size_t)n <= 16 * DG_PAGE_SIZE);
		dg_fs_release(fs, ino);
	}
	if (S_ISLNK(a->mode)) {
		int n = dg_fs_readlink(fs, ino, buf, sizeof(buf));

		FUZZ_ASSERT(n < 0 || (size_t)n <= sizeof(buf));
	}
	{
		int n = dg_fs_listxattr(fs, ino, buf, sizeof(buf));

		for (int off = 0; n > 0 && off < n;
		     off += (int)strlen(buf + off) + 1) {
			static char val[DG_PAGE_SIZE];

			dg_fs_getxattr(fs, ino, buf + off, val, sizeof(val));
		}
	}
}

static void no_event(void *arg, const struct dg_chk_event *ev)
{
	(void)arg;
	(void)ev;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t page[DG_PAGE_SIZE] __attribute__((aligned(4096)));
	const char *paths[DG_FUZZ_NDEV];
	struct dg_vol *ro;
	struct dg_fs *fs;
	char err[256];
	unsigned t;

	if (!vol)
		setup();
	if (size < 1)
		return 0;
	t = data[0] % T_NR;
	memcpy(page, orig[t], DG_PAGE_SIZE);
	memcpy(page, data + 1, size - 1 < DG_PAGE_SIZE ? size - 1 : DG_PAGE_SIZE);
	if (put(t, page))
		return 0;
	for (unsigned i = 0; i < DG_FUZZ_NDEV; i++)
		paths[i] = ro_paths[i];
	if (dg_vol_open(paths, DG_FUZZ_NDEV, DG_OPEN_RDONLY | DG_OPEN_NOLOCK,
			&ro, err, sizeof(err)) == 0) {
		if (dg_fs_open(ro, &fs) == 0) {
			struct dg_attr a;

			if (dg_fs_getattr(fs, DG_ROOT_INO, &a) == 0)
				visit(fs, DG_ROOT_INO, &a, 0);
			dg_fs_close(fs);
		}
		dg_check_fs(ro, no_event, NULL, NULL);
		dg_vol_close(ro);
	}
	FUZZ_ASSERT(put(t, orig[t]) == 0);
	return 0;
}
