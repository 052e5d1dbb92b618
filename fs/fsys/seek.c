// SPDX-License-Identifier: MIT
/*
 * seek.c -- SEEK_DATA and SEEK_HOLE from the extent map.
 *
 * A page is data when the extent map maps it (written or fallocated, as
 * ext4 reports preallocated space), a hole otherwise; the end of the
 * file is a hole too (POSIX: there is an implicit hole at EOF). Only
 * what is on the media is known here: pages dirty in the kernel's cache
 * (writeback mode, shared mmap) are not, which is why ops.c answers
 * this only without the writeback cache.
 */
#include <errno.h>
#include <unistd.h>

#include "fsys_i.h"

/* First page >= p that is mapped (want_data) or not, or UINT64_MAX. */
static uint64_t next_page(const struct dg_inode *ip, uint64_t p,
			  uint64_t end, bool want_data)
{
	while (p < end) {
		uint64_t vpn, run;

		dg_ext_lookup(ip, p, &vpn, &run);
		if ((vpn != 0) == want_data)
			return p;
		if (run >= end - p)
			break;
		p += run;
	}
	return UINT64_MAX;
}

int dg_fs_lseek(struct dg_fs *fs, uint64_t ino, int64_t soff, int whence,
		uint64_t *out)
{
	struct dg_inode *ip;
	uint64_t off = (uint64_t)soff, size, end, p;
	int ret = 0;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (soff < 0)
		return -ENXIO;	/* as lseek(2) for SEEK_DATA/SEEK_HOLE */
	pthread_rwlock_rdlock(&fs->lock);
	ret = dg_inode_find(fs, ino, false, &ip);
	if (ret) {
		pthread_rwlock_unlock(&fs->lock);
		return ret;
	}
	pthread_rwlock_rdlock(&ip->lock);
	size = ip->d.size;
	end = (size + DG_PAGE_SIZE - 1) / DG_PAGE_SIZE;
	if (off >= size) {
		ret = -ENXIO;	/* no data, and no hole, at or past EOF */
		goto out;
	}
	p = next_page(ip, off / DG_PAGE_SIZE, end, whence == SEEK_DATA);
	if (whence == SEEK_DATA) {
		if (p == UINT64_MAX)
			ret = -ENXIO;	/* only a hole up to EOF */
		else
			*out = p * DG_PAGE_SIZE > off ? p * DG_PAGE_SIZE : off;
	} else {
		*out = p == UINT64_MAX		? size
		       : p * DG_PAGE_SIZE > off ? p * DG_PAGE_SIZE
						: off;
		if (*out > size)
			*out = size;
	}
out:
	pthread_rwlock_unlock(&ip->lock);
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}
