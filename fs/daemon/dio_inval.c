// SPDX-License-Identifier: MIT
/*
 * dio_inval.c -- drop the kernel's cached pages of a file an O_DIRECT
 * write just changed, before the write is answered, when the kernel
 * may hold any.
 *
 * For an asynchronous (io_submit) direct write the kernel does not
 * invalidate the page cache after the write completes, as it does for a
 * synchronous one; a buffered read that raced the write could leave the
 * old bytes cached, and keep_cache would serve them after the write had
 * completed (tests/e2e/test_stale_reads.py). So a direct write, once
 * applied, has the daemon invalidate the file (FUSE_NOTIFY_INVAL_INODE)
 * and only then replies.
 *
 * Most direct writes go to files nobody reads through the cache, and
 * the invalidation (a thread, a notification, and the attributes the
 * kernel drops with the pages) cost them two thirds of their speed. So
 * the daemon notes every request that can put a file's pages in the
 * cache -- a read or a write that does not carry O_DIRECT, and pages
 * written back -- before serving it, and a direct write invalidates
 * only a file noted since its last invalidation began. Why that is
 * enough: a read notes before it reads the media and the direct write
 * looks after it changed the media; if the write does not see the
 * note, the read came later and got the new bytes. A read that carries
 * O_DIRECT is taken for a direct read; the page faults of a mapping of
 * an O_DIRECT descriptor carry it too and are not noted, which is the
 * mix of O_DIRECT and cached access to one range that open(2) tells
 * applications to avoid.
 *
 * Notes live in a fixed table hashed by inode number; a slot two files
 * share is marked shared and its files invalidate on every direct
 * write, as before the notes.
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
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "daemon.h"

#define WAIT_MS 500
#define SHARED  UINT64_MAX	/* owner of a slot two files noted */

struct job {
	struct fuse_session *se;
	fuse_ino_t ino;
	off_t off, len;
	struct dg_dio_slot *slot;	/* to mark clean, or NULL */
	uint64_t noted;			/* slot->noted when it began */
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

	int ret;

	/* -ENOENT: the kernel has no such inode cached, nothing to drop. */
	ret = fuse_lowlevel_notify_inval_inode(j->se, j->ino, j->off, j->len);
	if (j->slot && (ret == 0 || ret == -ENOENT)) {
		/* Every page cached before j->noted is gone now. */
		uint64_t c = atomic_load(&j->slot->clean);

		while (c < j->noted &&
		       !atomic_compare_exchange_weak(&j->slot->clean, &c,
						     j->noted))
			;
	}
	pthread_mutex_lock(&j->lock);
	j->done = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	job_put(j);
	return NULL;
}

static struct dg_dio_slot *slot_of(struct dg_dio *d, fuse_ino_t ino)
{
	return &d->slot[(ino * 0x9E3779B97F4A7C15ull) >> 54 &
			(DG_DIO_SLOTS - 1)];
}

void dg_dio_note(struct dg_dio *d, fuse_ino_t ino)
{
	struct dg_dio_slot *s = slot_of(d, ino);
	uint64_t o = atomic_load(&s->owner);

	while (o != ino && o != SHARED &&
	       !atomic_compare_exchange_weak(&s->owner, &o,
					     o == 0 ? ino : SHARED))
		;
	/* seq_cst, before the request reads the media: see the top. */
	atomic_fetch_add(&s->noted, 1);
}

int dg_dio_inval(struct dg_dio *d, struct fuse_session *se, fuse_ino_t ino,
		 off_t off, off_t len)
{
	struct dg_dio_slot *s = slot_of(d, ino);
	struct job *j;
	uint64_t owner, noted = 0;
	pthread_condattr_t ca;
	pthread_attr_t ta;
	struct timespec until;
	pthread_t th;
	int ret = 0;

	/* The write changed the media before this: see the top. */
	atomic_thread_fence(memory_order_seq_cst);
	owner = atomic_load(&s->owner);
	if (owner == 0)
		return 0;		/* no file of this slot was noted */
	if (owner == ino) {
		noted = atomic_load(&s->noted);
		if (noted == atomic_load(&s->clean))
			return 0;	/* not noted since it was dropped */
		/* All of it, so that the slot can be marked clean. */
		off = 0;
		len = 0;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->se = se;
	j->ino = ino;
	j->off = off;
	j->len = len;
	j->slot = owner == ino ? s : NULL;
	j->noted = noted;
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
