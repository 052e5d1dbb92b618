/* SPDX-License-Identifier: MIT */
/* daemon.h -- state shared by the daxguard daemon's files */
#ifndef DG_DAEMON_H
#define DG_DAEMON_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>

#include "fsys.h"

struct dg_daemon {
	struct dg_vol *vol;
	struct dg_fs *fs;
	struct fuse_session *se;
	char *devs;		/* canonical paths, ':' (or ',') separated */
	char *mountpoint;	/* absolute */
	double timeout;		/* entry and attribute cache, seconds */
	int writeback;		/* kernel writeback cache */
	bool acl;		/* POSIX ACLs negotiated (ops.c op_init) */
	int debug;
	/* control socket, ctl_server.c */
	char sock_path[108];
	int sock_fd;
	pthread_t ctl_thread;
	volatile int stop;
	uint64_t fault_seq;	/* last fault event logged */
	/* Data pages found unrecoverable, with the file page they held
	 * then; dropped once the page is no longer that file's (deleted,
	 * truncated) or at "clear". Counters as of the last "clear". All
	 * protected by dmg_lock. */
	pthread_mutex_t dmg_lock;
	struct dg_lost_page {
		uint64_t vpn, ino, fpage;
	} *lost;
	unsigned nlost, caplost;
	uint64_t fault_base[DG_FAULT_NR];
	/* libcommit server, commit_server.c */
	char commit_path[108];
	int commit_fd;
	pthread_t commit_thread;
};

extern const struct fuse_lowlevel_ops dg_ll_ops;

int dg_ctl_start(struct dg_daemon *dd);
void dg_ctl_stop(struct dg_daemon *dd);
/* Log fault events the engine recorded since the last call, with the
 * file each page belongs to. */
void dg_ctl_log_faults(struct dg_daemon *dd);

/* The libcommit socket (path in xattr "user.daxguard.commit"). Stop
 * waits until every client's map is released. */
int dg_commit_start(struct dg_daemon *dd);
void dg_commit_stop(struct dg_daemon *dd);

/* Offer FUSE_HANDLE_KILLPRIV_V2 in the INIT reply written to fuse_fd
 * when libfuse cannot (killpriv_v2.c). Call before the session loop. */
void dg_killpriv_v2_arm(int fuse_fd);

/* After an O_DIRECT write of [off, off + len) of ino: drop the
 * kernel's cached pages of it before the reply (dio_inval.c). 0, or
 * -ETIMEDOUT when the kernel held the pages past a bounded wait. */
int dg_dio_inval(struct fuse_session *se, fuse_ino_t ino, off_t off,
		 off_t len);

#endif /* DG_DAEMON_H */
