// SPDX-License-Identifier: MIT
/* fstrim.c -- FITRIM as a request reaches the filesystem: who may ask,
 * then the volume's trim of its free rows (fs/volume/trim.c) */
#include "fsys_i.h"

/* As ext4 asks CAP_SYS_ADMIN. The caller's capabilities are uid 0: the
 * FUSE protocol carries none (as for CAP_FSETID, setid.c). */
int dg_fs_trim(struct dg_fs *fs, uint64_t start, uint64_t len,
	       uint64_t minlen, const struct dg_cred *cr, uint64_t *trimmed)
{
	if (cr && cr->uid != 0)
		return -EPERM;
	return dg_vol_trim(fs->vol, start, len, minlen, trimmed);
}
