// SPDX-License-Identifier: MIT
/* trim_op.c -- FITRIM (fstrim) through FUSE's ioctl request */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <linux/fs.h>

#include "daemon.h"

/*
 * The kernel passes an ioctl on a file or directory of a FUSE mount to
 * the daemon in restricted mode: the argument's size comes from the
 * command (FITRIM is _IOWR('X', 121, struct fstrim_range)), in_buf holds
 * it, and the reply's buffer goes back to the caller. fstrim(8) opens
 * the mount point and asks on it; any file of the volume does as well.
 * Who may trim is the engine's rule (dg_fs_trim(): root, as ext4 asks
 * CAP_SYS_ADMIN). The request blocks one FUSE worker while the volume's
 * free rows are given back (trim.c), as the ioctl blocks its caller on
 * ext4.
 */
void dg_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		 size_t in_bufsz, size_t out_bufsz)
{
	struct dg_daemon *dd = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	/* Who asks: the engine decides who may (dg_fs_trim()). */
	struct dg_cred cr = { .uid = ctx->uid, .gid = ctx->gid,
			      .fsetid = ctx->uid == 0, .umask = -1 };
	struct fstrim_range range;
	uint64_t trimmed;
	int ret;

	(void)ino;
	(void)arg;
	(void)fi;
	if (cmd != FITRIM) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (flags & FUSE_IOCTL_COMPAT) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (in_bufsz < sizeof(range) || out_bufsz < sizeof(range)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&range, in_buf, sizeof(range));
	ret = dg_fs_trim(dd->fs, range.start, range.len, range.minlen, &cr,
			 &trimmed);
	if (ret) {
		/* A refused caller is no news (and not theirs to log). */
		if (ret != -EPERM)
			dg_log(DG_LOG_WARNING, "fstrim: %s", strerror(-ret));
		fuse_reply_err(req, -ret);
		return;
	}
	range.len = trimmed;
	fuse_reply_ioctl(req, 0, &range, sizeof(range));
}
