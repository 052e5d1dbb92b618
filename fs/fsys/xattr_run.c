// SPDX-License-Identifier: MIT
/* xattr_run.c -- an inode's run of xattr pages as the allocator and the
 * inode see it: how many pages, and their free when the inode goes (the
 * records in them are xattr.c's) */
#include "fsys_i.h"

uint32_t dg_xattr_run_pages(const struct dg_dinode *d)
{
	return !d->xattr_vpn ? 0 : d->xattr_pages ? d->xattr_pages : 1;
}

int dg_xattr_drop(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip)
{
	uint32_t n = dg_xattr_run_pages(&ip->d);

	(void)fs;
	if (!n)
		return 0;
	ip->d.blocks -= n;
	ip->xabsent = 0;
	return dg_free(txn, ip->d.xattr_vpn, n);
}
