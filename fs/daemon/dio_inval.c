// SPDX-License-Identifier: MIT
/*
 * dio_inval.c -- drop the kernel's cached pages of a range an O_DIRECT
 * write just changed, before the write is answered.
 *
 * For an asynchronous (io_submit) direct write the kernel does not
 * invalidate the page cache after the write completes, as it does for a
 * synchronous one; a buffered read that raced the write could leave the
 * old bytes cached, and keep_cache would serve them after the write had
 * completed (tests/e2e/test_stale_reads.py). So every direct write, once
 * applied, has the daemon invalidate its range (FUSE_NOTIFY_INVAL_INODE)
 * and only then replies.
 *
 * The notification runs on a thread of its own and the reply waits for
 * it a bounded time, because it can block on a page lock: a buffered
 * write that falls back from O_DIRECT (generic_file_direct_write() when
 * the cache cannot be invalidated) holds the locks of its own pages
 * until this very reply. In that case the cache holds the new bytes
 * already, the wait times out and the notification finishes after the
 * reply. Reads that hold page locks are served by libfuse's other
 * workers meanwhile.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "daemon.h"

#define WAIT_MS 500

struct job {
	struct fuse_session *se;
	fuse_ino_t ino;
	off_t off, len;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int refs;		/* the waiter and the thread */
};

static void job_put(struct job *j)
{
	bool last;

	pthread_mutex_lock(&j->lock);
	last = --j->refs == 0;
	pthread_mutex_unlock(&j->lock);
	if (last) {
		pthread_cond_destroy(&j->cond);
		pthread_mutex_destroy(&j->lock);
		free(j);
	}
}

static void *job_main(void *arg)
{
	struct job *j = arg;

	/* -ENOENT: the kernel has no such inode cached, nothing to drop. */
	fuse_lowlevel_notify_inval_inode(j->se, j->ino, j->off, j->len);
	pthread_mutex_lock(&j->lock);
	j->done = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	job_put(j);
	return NULL;
}

int dg_dio_inval(struct fuse_session *se, fuse_ino_t ino, off_t off,
		 off_t len)
{
	struct job *j = calloc(1, sizeof(*j));
	pthread_condattr_t ca;
	pthread_attr_t ta;
	struct timespec until;
	pthread_t th;
	int ret = 0;

	if (!j)
		return -ENOMEM;
	j->se = se;
	j->ino = ino;
	j->off = off;
	j->len = len;
	j->refs = 2;
	pthread_mutex_init(&j->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &ta, job_main, j)) {
		/* No thread: invalidate here. The write went through
		 * fuse_direct_IO (no page locks of ours held) in all but the
		 * fallback case, which is also the rare one. */
		pthread_attr_destroy(&ta);
		j->refs = 1;
		job_put(j);
		return fuse_lowlevel_notify_inval_inode(se, ino, off, len);
	}
	pthread_attr_destroy(&ta);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += WAIT_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&j->lock);
	while (!j->done && ret == 0)
		ret = pthread_cond_timedwait(&j->cond, &j->lock, &until);
	pthread_mutex_unlock(&j->lock);
	job_put(j);
	return ret ? -ETIMEDOUT : 0;
}
