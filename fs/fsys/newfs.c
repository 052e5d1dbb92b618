// SPDX-License-Identifier: MIT
/* newfs.c -- dg_format(): a new volume with an empty filesystem on it */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsys_i.h"

/* Create the root directory of a new volume (dg_format calls it). */
static int dg_fs_format(struct dg_vol *vol, uint32_t uid, uint32_t gid)
{
	struct dg_fs fs = { .vol = vol };
	struct dg_inode *root;
	struct dg_txn *txn = dg_txn_new(vol);
	int ret;

	if (!txn)
		return -ENOMEM;
	pthread_mutex_init(&fs.ino_lock, NULL);
	fs.root.magic = DG_FS_MAGIC;
	ret = dg_inode_new(&fs, txn, S_IFDIR | 0755, uid, gid, &root);
	if (ret)
		goto out;
	root->d.parent = DG_ROOT_INO;
	ret = dg_inode_store(&fs, txn, root);
	if (!ret)
		ret = dg_txn_commit(txn);
	dg_inode_discard(&fs, root);
out:
	dg_icache_free(&fs);
	free(fs.ino_used);
	free(fs.chunk_vpn);
	free(fs.chunk_used);
	dg_txn_free(txn);
	pthread_mutex_destroy(&fs.ino_lock);
	return ret;
}

int dg_format(const char *const *devs, unsigned ndev,
	      const struct dg_format_opts *opts, struct dg_vol_info *info)
{
	struct dg_vol *vol;
	int ret = dg_vol_format(devs, ndev, opts, &vol), closed;

	if (ret)
		return ret;
	ret = dg_fs_format(vol, getuid(), getgid());
	if (!ret && info)
		dg_vol_get_info(vol, info);
	closed = dg_vol_close(vol); /* the last checkpoint, superblocks */
	return ret ? ret : closed;
}
