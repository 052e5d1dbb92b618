// SPDX-License-Identifier: MIT
/* fuzz_super.c -- random and mutated bytes into the superblock decoder
 * and the metadata parsers (xxHash fuzz/fuzzer.c style, deterministic):
 * nothing may crash, hang or leak under ASan/UBSan. Metadata pages are
 * also mutated through the engine (so their checksums are valid) and
 * the filesystem is opened and checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "fscheck.h"
#include "fsys_i.h"
#include "super.h"

static uint64_t st = 0x5eed;

static uint64_t rnd(void)
{
	uint64_t z = (st += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void mutate(uint8_t *p, size_t len)
{
	unsigned n = 1 + (unsigned)(rnd() % 16);

	for (unsigned i = 0; i < n; i++) {
		switch (rnd() % 4) {
		case 0:
			p[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1:
			p[rnd() % len] = (uint8_t)rnd();
			break;
		case 2: {
			size_t o = rnd() % (len - 8);
			uint64_t v = rnd() % 3 == 0 ? UINT64_MAX : rnd() % 4096;

			memcpy(p + o, &v, 8);
			break;
		}
		default: {
			size_t o = rnd() % len, l = rnd() % 64;

			if (o + l > len)
				l = len - o;
			memset(p + o, 0, l);
		}
		}
	}
}

static void quiet(enum dg_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

static void ev_sink(void *arg, const struct dg_chk_event *ev)
{
	(*(unsigned *)arg)++;
	(void)ev;
}

/* A file of single-page extents (every other page), so its map needs
 * a chain of extent pages; their vpns are added to target. */
#define MAX_EMAP 16
static int fragmented_file(struct dg_vol *vol, uint64_t *target,
			   unsigned *n)
{
	static uint8_t buf[4096];
	struct dg_fs *fs;
	struct dg_attr a;
	struct dg_vpnmap *map;
	struct dg_vol_info info;
	int ret = dg_fs_open(vol, &fs);

	if (ret)
		return ret;
	ret = dg_fs_mknod(fs, 1, "f", 0100644, 0, 0, 0, &a);
	for (uint64_t p = 0; !ret && p < 1200; p += 2)
		ret = dg_fs_write(fs, a.ino, p * 4096, buf, 4096) == 4096
			      ? 0 : -EIO;
	dg_fs_close(fs);
	if (ret || (ret = dg_check_classify(vol, &map)))
		return ret;
	dg_vol_get_info(vol, &info);
	for (uint64_t v = 0; v < info.vpns && *n < 5 + MAX_EMAP; v++)
		if (dg_vpnmap_cls(map, v) == DG_PC_EMAP)
			target[(*n)++] = v;
	dg_vpnmap_free(map);
	return *n > 5 ? 0 : -ENOENT;
}

int main(int argc, char **argv)
{
	unsigned iters = argc > 1 ? (unsigned)atoi(argv[1]) : 3000;
	char path[64];
	const char *devs[1] = { path };
	struct dg_format_opts o = { .size = 16 << 20, .force = true };
	struct dg_vol *vol;
	struct dg_dsuper sb;
	uint8_t *page = aligned_alloc(4096, 4096), *orig =
					aligned_alloc(4096, 4096);
	char err[256];
	unsigned events = 0, accepted = 0, ntarget;
	uint64_t target[5 + MAX_EMAP];
	int ret;

	dg_log_set_func(quiet);
	snprintf(path, sizeof(path), "/dev/shm/dg-fuzz-%d.img", (int)getpid());
	if (dg_format(devs, 1, &o, NULL)) {
		fprintf(stderr, "fuzz_super: cannot format '%s'\n", path);
		return 1;
	}
	ret = dg_vol_open(devs, 1, 0, &vol, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "fuzz_super: cannot open: %s\n", err);
		return 1;
	}
	/* 1. the superblock decoder: random pages, mutated valid ones */
	{
		int fd = open(path, 0);

		if (fd < 0 || pread(fd, orig, 4096, 0) != 4096)
			return 1;
		close(fd);
	}
	for (unsigned i = 0; i < iters * 4; i++) {
		if (i % 2)
			for (unsigned j = 0; j < 4096; j += 8) {
				uint64_t v = rnd();

				memcpy(page + j, &v, 8);
			}
		else {
			memcpy(page, orig, 4096);
			mutate(page, 4096);
			if (i % 4 == 0) /* keep the checksum valid */
				dg_dsuper_seal((struct dg_dsuper *)page);
		}
		if (dg_dsuper_decode(page, &sb) == 0)
			accepted++;
		/* The same bytes as a directory page and an inode record,
		 * through the parsers the mount uses. */
		{
			struct dg_dir *dir;

			if (dg_dir_new(&dir) == 0) {
				dg_dir_parse_page(vol, dir, 1, 0, page);
				dg_dir_free(dir);
			}
			dg_dinode_check(vol, 2, (const struct dg_dinode *)page);
		}
	}
	/* 2. metadata with valid checksums: mutate the root, an inode table
	 * page, the bitmap or a page of a file's extent map through the
	 * engine, then open and check. */
	ntarget = 5;
	for (uint64_t v = 0; v < 5; v++)
		target[v] = v;
	if (fragmented_file(vol, target, &ntarget)) {
		fprintf(stderr, "fuzz_super: cannot build the test file\n");
		return 1;
	}
	for (unsigned i = 0; i < iters / 10; i++) {
		uint64_t vpn = target[rnd() % ntarget];
		struct dg_range r = { vpn, 0, 4096, page };
		struct dg_fs *fs = NULL;
		struct dg_vpnmap *map;

		if (dg_read(vol, vpn, 1, orig))
			continue;
		memcpy(page, orig, 4096);
		mutate(page, 4096);
		if (dg_apply(vol, &r, 1))
			continue;
		if (dg_fs_open(vol, &fs) == 0)
			dg_fs_close(fs);
		dg_check_fs(vol, ev_sink, NULL, &events);
		if (dg_check_classify(vol, &map) == 0)
			dg_vpnmap_free(map);
		r.data = orig;
		dg_apply(vol, &r, 1);
	}
	dg_vol_close(vol);
	unlink(path);
	free(page);
	free(orig);
	printf("fuzz_super: %u iterations, %u superblocks accepted, %u fs "
	       "findings, no crash\n", iters, accepted, events);
	return 0;
}
