// SPDX-License-Identifier: MIT
/* blank.c -- rows freed whole, given back blank in the background */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "volume_i.h"

/*
 * A small write into a hole goes alone -- its page and the row's parity
 * written before its journal entry, its bytes never journaled -- only
 * where every other data page of the row is free and blank (apply.c,
 * mark_lone_rows()). A new volume is all such rows; a volume in use is
 * not: a deleted file's rows are free but hold its old bytes, and the
 * allocator reuses freed space first (alloc.c), so without this every
 * small write after a delete went the journaled way, its bytes stored
 * on two journal copies besides (4.36x a 4 KiB append under parity 1
 * against 2.40x).
 *
 * So the allocator queues frees as they become durable (alloc.c,
 * dg_freed_note(); the queue is struct dg_blank, volume_i.h), and a
 * thread takes them and gives each row whose data pages are then all
 * free back as zeros: dg_trim_rows(), what fstrim does (trim.c: written
 * as new rows, 64 an update, zeros and their checksums durable under a
 * reservation, then punched out of image files). Only then does the
 * allocation cursor move back to the freed pages, so that what is
 * written next lands in rows already blank rather than racing the
 * thread for them. A page allocated before the thread locks its row
 * keeps the row as it is (the look is under the row's lock, trim.c),
 * and its write goes the journaled way as before.
 *
 * The queue is bounded (DG_BLANK_RUNS runs of pages, adjacent frees
 * merged); a run that finds it full is dropped and counted, and moves
 * the cursor back at once as without the thread. Nothing is lost by a
 * dropped or unfinished run but the lone writes its rows would have
 * had: fstrim gives them back later.
 */

/* Pages taken from the queue at once: the thread answers a stop within
 * one such batch. */
#define BATCH 1024u

/* Up to BATCH pages from the front of the queue; lock held. */
static struct dg_blank_run take(struct dg_blank *b)
{
	struct dg_blank_run *h = &b->run[b->head], r = *h;

	if (r.n > BATCH)
		r.n = BATCH;
	h->start += r.n;
	h->n -= r.n;
	if (!h->n) {
		b->head = (b->head + 1) % DG_BLANK_RUNS;
		b->len--;
	}
	return r;
}

struct rows {
	uint64_t lo, hi;	/* rows [lo, hi) */
};

static int rows_cmp(const void *a, const void *b)
{
	const struct rows *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Whether blanking can go on: not while a device is missing or being
 * replaced (dg_trim_rows() refuses those too), nor on a volume that
 * takes no more writes. */
static bool may_blank(struct dg_vol *vol)
{
	return !vol->degraded && !vol->read_only &&
	       !dg_latch_on(&vol->latch) && dg_vol_replacing(vol) < 0 &&
	       !__atomic_load_n(&vol->blank.stop, __ATOMIC_RELAXED);
}

/*
 * The rows of pages [start, start + n), each given back once if all its
 * data pages are free. A chunk's pages are consecutive rows of one
 * device (geom.c), so the run is a few intervals of rows, the same rows
 * once a device for a run that spans a band: sorted and merged, each
 * row is looked at once.
 */
static void blank_pages(struct dg_vol *vol, uint64_t start, uint64_t n)
{
	struct rows iv[BATCH];
	uint64_t cp = vol->sb.chunk_pages, e = start + n;
	unsigned niv = 0, m = 0;

	for (uint64_t v = start; v < e && niv < BATCH;) {
		uint64_t end = (v / cp + 1) * cp, row = dg_vpn_loc(vol, v).row;

		if (end > e)
			end = e;
		iv[niv++] = (struct rows){ row, row + (end - v) };
		v = end;
	}
	qsort(iv, niv, sizeof(*iv), rows_cmp);
	for (unsigned i = 0; i < niv; i++) {
		if (m && iv[i].lo <= iv[m - 1].hi) {
			if (iv[i].hi > iv[m - 1].hi)
				iv[m - 1].hi = iv[i].hi;
			continue;
		}
		iv[m++] = iv[i];
	}
	for (unsigned i = 0; i < m; i++)
		for (uint64_t row = iv[i].lo; row < iv[i].hi;) {
			uint64_t left = iv[i].hi - row;
			unsigned nb = left < DG_TRIM_BATCH ? (unsigned)left
							   : DG_TRIM_BATCH;
			unsigned done;
			int ret;

			if (!may_blank(vol))
				return;
			ret = dg_trim_rows(vol, row, nb, 0, UINT64_MAX, &done);
			/* A replace begun meanwhile (EBUSY) says so itself,
			 * as a failed write latches and logs the volume. */
			if (ret < 0) {
				if (ret != -EBUSY && !dg_latch_on(&vol->latch))
					dg_vol_log(vol, DG_LOG_WARNING,
						   "blanking freed rows from %"
						   PRIu64 " failed: %s", row,
						   strerror(-ret));
				return;
			}
			vol->blank.rows += done;
			row += nb;
		}
}

static void *blank_main(void *arg)
{
	struct dg_vol *vol = arg;
	struct dg_blank *b = &vol->blank;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		struct dg_blank_run r;

		while (!b->stop && !b->len)
			pthread_cond_wait(&b->cond, &b->lock);
		if (b->stop)
			break;
		r = take(b);
		pthread_mutex_unlock(&b->lock);
		blank_pages(vol, r.start, r.n);
		/* Blank or not, the pages may be taken again from the
		 * front now (alloc.c, frees_durable()). */
		pthread_mutex_lock(&vol->alloc_lock);
		if (r.start < vol->alloc_cursor)
			vol->alloc_cursor = r.start;
		pthread_mutex_unlock(&vol->alloc_lock);
		pthread_mutex_lock(&b->lock);
		b->pending -= r.n;
		pthread_cond_broadcast(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* The thread stopped and joined (dg_vol_close()); idempotent. */
static void halt(struct dg_vol *vol)
{
	struct dg_blank *b = &vol->blank;
	bool live;

	pthread_mutex_lock(&b->lock);
	__atomic_store_n(&b->stop, true, __ATOMIC_RELAXED);
	b->on = false;
	live = b->thread_live;
	b->thread_live = false;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	if (live)
		pthread_join(b->thread, NULL);
}

int dg_vol_blank_start(struct dg_vol *vol)
{
	struct dg_blank *b = &vol->blank;
	int ret = 0;

	if (!vol->new_rows || !vol->parity || vol->read_only || !vol->bm)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&b->lock);
	if (!b->thread_live && !b->stop) {
		b->on = true;
		if (pthread_create(&b->thread, NULL, blank_main, vol)) {
			b->on = false;
			ret = -EAGAIN;
		} else {
			b->thread_live = true;
			b->halt = halt;
		}
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

bool dg_vol_blank_idle(struct dg_vol *vol, unsigned timeout_ms)
{
	struct dg_blank *b = &vol->blank;
	struct timespec until;
	bool idle;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&b->lock);
	while (b->pending && b->thread_live && !b->stop &&
	       pthread_cond_timedwait(&b->cond, &b->lock, &until) == 0)
		;
	idle = !b->pending;
	pthread_mutex_unlock(&b->lock);
	return idle;
}
