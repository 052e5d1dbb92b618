// SPDX-License-Identifier: MIT
/*
 * killpriv_v2.c -- ask the kernel for FUSE_HANDLE_KILLPRIV_V2 when libfuse
 * cannot.
 *
 * Without KILLPRIV_V2 the kernel clears the superblock's SB_NOSEC, so
 * before every write(2) it asks the filesystem for "security.capability"
 * (a GETXATTR round trip, as long as the write's own on this machine): a
 * file system that stores xattrs pays a second request per write. With
 * KILLPRIV_V2 the kernel trusts the filesystem to drop setuid, setgid and
 * capabilities on write, truncate and chown -- which the daemon already
 * does (ops.c) -- and lets inodes go S_NOSEC after one check.
 *
 * libfuse 3.14 (Debian 12) knows the flag but never offers it. The INIT
 * reply is the first message the session writes to /dev/fuse, through
 * writev(2); this definition of writev() in the executable takes the
 * place of libc's for libfuse, adds the flag to that one reply and hands
 * every write to the kernel unchanged otherwise. With a libfuse that has
 * FUSE_CAP_HANDLE_KILLPRIV_V2, ops.c asks for it the normal way and this
 * file is empty.
 */
#include "daemon.h"

#ifndef FUSE_CAP_HANDLE_KILLPRIV_V2
#include <linux/fuse.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static atomic_int session_fd = -1;

void dg_killpriv_v2_arm(int fuse_fd)
{
	atomic_store(&session_fd, fuse_fd);
}

/* The INIT reply: a header with no error and a whole fuse_init_out. */
static bool is_init_reply(const struct iovec *iov, int cnt,
			  struct fuse_out_header *h, struct fuse_init_out *o)
{
	uint8_t buf[sizeof(*h) + sizeof(*o)];
	size_t len = 0;

	for (int i = 0; i < cnt; i++) {
		if (len + iov[i].iov_len > sizeof(buf))
			return false;
		memcpy(buf + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	if (len != sizeof(buf))
		return false;
	memcpy(h, buf, sizeof(*h));
	memcpy(o, buf + sizeof(*h), sizeof(*o));
	return h->len == len && h->error == 0 && o->major == FUSE_KERNEL_VERSION;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	struct fuse_out_header h;
	struct fuse_init_out o;
	int armed = atomic_load_explicit(&session_fd, memory_order_relaxed);

	if (armed >= 0 && fd == armed && is_init_reply(iov, cnt, &h, &o)) {
		struct iovec v[2] = { { &h, sizeof(h) }, { &o, sizeof(o) } };

		atomic_store(&session_fd, -1);
		o.flags |= FUSE_HANDLE_KILLPRIV_V2;
		return syscall(SYS_writev, fd, v, 2);
	}
	return syscall(SYS_writev, fd, iov, cnt);
}
#else
void dg_killpriv_v2_arm(int fuse_fd)
{
	(void)fuse_fd;
}
#endif
