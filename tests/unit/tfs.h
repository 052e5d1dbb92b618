/* SPDX-License-Identifier: MIT */
/* tfs.h -- the filesystem-layer unit tests' shared steps: a formatted
 * volume on /dev/shm with its filesystem open, and a remount of it */
#ifndef DG_TEST_TFS_H
#define DG_TEST_TFS_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "fsys.h"
#include "harness.h"

struct tfs {
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_fs *fs;
};

/* 3 devices with parity 1, bytes each; REQUIREs in the caller. */
static inline bool tfs_make_size(struct tfs *t, const char *tag,
				 uint64_t bytes)
{
	tvol_make(&t->tv, tag, 3, 1, bytes, false);
	t->vol = tvol_open(&t->tv, 0);
	return t->vol && dg_fs_open(t->vol, &t->fs) == 0;
}

/* The same made --remap, 16 MiB each: whole-page overwrites go to
 * blank pages (fs/fsys/remap.c). */
static inline bool tfs_make_remap(struct tfs *t, const char *tag)
{
	tvol_make_remap(&t->tv, tag, 3, 16ull << 20);
	t->vol = tvol_open(&t->tv, 0);
	return t->vol && dg_fs_open(t->vol, &t->fs) == 0;
}

/* The same, 16 MiB each. */
static inline bool tfs_make(struct tfs *t, const char *tag)
{
	return tfs_make_size(t, tag, 16ull << 20);
}

/* The same without a metadata zone (the layout before META_ZONE): its
 * metadata pages have no ditto copies, so a page lost beyond parity
 * stays lost, which the cases about damaged metadata need. */
static inline bool tfs_make_no_zone(struct tfs *t, const char *tag)
{
	struct dg_format_opts o = { .parity = 1, .size = 16ull << 20,
				    .no_meta_zone = true, .force = true };

	tvol_make_opts(&t->tv, tag, 3, &o);
	t->fs = NULL;
	t->vol = tvol_open(&t->tv, 0);
	return t->vol && dg_fs_open(t->vol, &t->fs) == 0;
}

/* Close and open again: what follows reads only what the media holds. */
static inline bool tfs_remount(struct tfs *t)
{
	dg_fs_close(t->fs);
	dg_vol_close(t->vol);
	t->fs = NULL;
	t->vol = tvol_open(&t->tv, 0);
	return t->vol && dg_fs_open(t->vol, &t->fs) == 0;
}

static inline void tfs_done(struct tfs *t)
{
	if (t->fs)
		dg_fs_close(t->fs);
	if (t->vol)
		dg_vol_close(t->vol);
	tvol_cleanup(&t->tv);
}

/* Create a regular file (mode 0644) under parent; its inode or 0. */
static inline uint64_t tfs_file(struct tfs *t, uint64_t parent,
				const char *name)
{
	struct dg_attr a;

	return dg_fs_mknod(t->fs, parent, name, 0100644, 0, 0, 0, &a) ? 0
								       : a.ino;
}

static inline uint64_t tfs_dir(struct tfs *t, uint64_t parent,
			       const char *name)
{
	struct dg_attr a;

	return dg_fs_mknod(t->fs, parent, name, 040755, 0, 0, 0, &a) ? 0
								      : a.ino;
}

/* -errno, or the inode parent/name names. */
static inline int64_t tfs_lookup(struct tfs *t, uint64_t parent,
				 const char *name)
{
	struct dg_attr a;
	int ret = dg_fs_lookup(t->fs, parent, name, &a);

	if (ret)
		return ret;
	dg_fs_forget(t->fs, a.ino, 1);
	return (int64_t)a.ino;
}

/* Read size bytes at off of ino into out: the byte count or -errno. */
static inline ssize_t tfs_read_at(struct tfs *t, uint64_t ino, uint64_t off,
				  size_t size, void *out)
{
	size_t room = (size + 3 * DG_PAGE_SIZE - 1) / DG_PAGE_SIZE *
		      DG_PAGE_SIZE;
	uint8_t *pages = aligned_alloc(DG_PAGE_SIZE, room);
	const void *data;
	ssize_t n = pages ? dg_fs_read(t->fs, ino, off, size, pages, &data)
			  : -ENOMEM;

	if (n > 0)
		memcpy(out, data, (size_t)n);
	free(pages);
	return n;
}

#endif /* DG_TEST_TFS_H */
