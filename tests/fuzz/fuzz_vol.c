// SPDX-License-Identifier: MIT
/* fuzz_vol.c -- the harnesses' volume (fuzz_vol.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_vol.h"

const uint8_t dg_fuzz_uuid[16] = { 0xd9, 0x0a, 0x9e, 0x1c, 0x5f, 0x22,
				   0x4b, 0x37, 0x8a, 0x01, 0xf0, 0x0d,
				   0xfa, 0x22, 0x5e, 0xed };

static void quiet(enum dg_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

struct dg_vol *dg_fuzz_vol_make(const char *tag, char paths[][64])
{
	const char *devs[DG_FUZZ_NDEV];
	struct dg_format_opts o = { .parity = DG_FUZZ_PARITY,
				    .size = DG_FUZZ_SIZE, .force = true,
				    .uuid = dg_fuzz_uuid };
	struct dg_vol *vol;
	char err[256];

	for (unsigned i = 0; i < DG_FUZZ_NDEV; i++) {
		snprintf(paths[i], 64, "/dev/shm/dg-%s-%d-%u.img", tag,
			 (int)getpid(), i);
		devs[i] = paths[i];
	}
	if (dg_format(devs, DG_FUZZ_NDEV, &o, NULL) ||
	    dg_vol_open(devs, DG_FUZZ_NDEV, 0, &vol, err, sizeof(err))) {
		fprintf(stderr, "fuzz: cannot make a volume in /dev/shm\n");
		for (unsigned i = 0; i < DG_FUZZ_NDEV; i++)
			unlink(paths[i]);
		exit(1);
	}
	return vol;
}

struct dg_vol *dg_fuzz_vol(void)
{
	static struct dg_vol *vol;
	char paths[DG_FUZZ_NDEV][64];

	if (vol)
		return vol;
	dg_log_set_func(quiet);
	vol = dg_fuzz_vol_make("fuzz", paths);
	for (unsigned i = 0; i < DG_FUZZ_NDEV; i++)
		unlink(paths[i]);
	return vol;
}

#define TRY(x)                                                             \
	do {                                                               \
		if ((ret = (int)(x)) < 0)                                  \
			goto out;                                          \
	} while (0)

/* The filesystem the seeds come from: names, a directory of several
 * pages with deleted records, xattrs, a symlink, a fragmented file
 * whose extent map needs a chain of extent pages. */
int dg_fuzz_fill(struct dg_vol *vol, uint64_t ino[4])
{
	static uint8_t buf[DG_PAGE_SIZE];
	struct dg_fs *fs;
	struct dg_attr a, d, f, many;
	char name[64];
	int ret = dg_fs_open(vol, &fs);

	if (ret)
		return ret;
	TRY(dg_fs_mknod(fs, 1, "notes.txt", 0100644, 0, 1000, 1000, &a));
	TRY(dg_fs_write(fs, a.ino, 0, "hello, daxguard\n", 16));
	TRY(dg_fs_setxattr(fs, a.ino, "user.mime", "text/plain", 10, 0));
	TRY(dg_fs_setxattr(fs, a.ino, "user.empty", "", 0, 0));
	TRY(dg_fs_setxattr(fs, a.ino, "trusted.long-name-of-an-attribute",
			    buf, 300, 0));
	TRY(dg_fs_mknod(fs, 1, "docs", 040755, 0, 0, 0, &d));
	TRY(dg_fs_symlink(fs, d.ino, "link", "../notes.txt",
			  &(struct dg_cred){ .umask = -1 }, &a));
	TRY(dg_fs_mknod(fs, 1, "many", 040700, 0, 0, 0, &many));
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "entry-%d%s", i,
			 i % 7 ? "" : "-with-a-longer-name-for-reclen");
		TRY(dg_fs_mknod(fs, many.ino, name, 0100600, 0, 0, 0, &a));
	}
	for (int i = 0; i < 300; i += 5) {
		snprintf(name, sizeof(name), "entry-%d%s", i,
			 i % 7 ? "" : "-with-a-longer-name-for-reclen");
		TRY(dg_fs_unlink(fs, many.ino, name));
	}
	TRY(dg_fs_mknod(fs, 1, "frag", 0100644, 0, 0, 0, &f));
	for (uint64_t p = 0; p < 800; p += 2) {
		memset(buf, (int)p, sizeof(buf));
		if (dg_fs_write(fs, f.ino, p * DG_PAGE_SIZE, buf,
				DG_PAGE_SIZE) != DG_PAGE_SIZE)
			TRY(-EIO);
	}
	ino[0] = 1;
	ino[1] = many.ino;
	ino[2] = f.ino;
	TRY(dg_fs_lookup(fs, 1, "notes.txt", &a));
	ino[3] = a.ino;
	dg_fs_close(fs);
	return 0;
out:
	dg_fs_close(fs);
	return ret;
}


int dg_fuzz_dinode(struct dg_vol *vol, uint64_t ino, struct dg_dinode *d,
		   uint64_t *vpn)
{
	static uint8_t root[DG_PAGE_SIZE], pg[DG_PAGE_SIZE];
	const struct dg_dfsroot *fr =
		(const void *)((struct dg_droot *)root)->fs;
	uint64_t slot = ino % DG_INODES_PER_CHUNK;
	uint64_t at;
	int ret = dg_read(vol, 0, 1, root);

	if (ret)
		return ret;
	at = fr->chunks[ino / DG_INODES_PER_CHUNK] + slot / DG_INODES_PER_PAGE;
	ret = dg_read(vol, at, 1, pg);
	if (ret)
		return ret;
	memcpy(d, pg + slot % DG_INODES_PER_PAGE * DG_INODE_SIZE, sizeof(*d));
	if (vpn)
		*vpn = at;
	return 0;
}

size_t dg_fuzz_file_pages(struct dg_vol *vol, const struct dg_dinode *d,
			  uint8_t *out, size_t max)
{
	size_t n = 0;

	for (unsigned i = 0; i < DG_INLINE_EXTENTS && d->inl[i].len; i++)
		for (uint32_t k = 0; k < d->inl[i].len && n < max; k++, n++)
			if (dg_read(vol, d->inl[i].vpn + k, 1,
				    out + n * DG_PAGE_SIZE))
				return n;
	return n;
}
