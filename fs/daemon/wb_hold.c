// SPDX-License-Identifier: MIT
/*
 * wb_hold.c -- -o writeback: the pages the kernel writes back are held
 * here, merged per file, and committed in batches: one engine call a
 * file (dg_fs_write_batch()), so that writes share journal entries and
 * persists and contiguous runs reach whole rows. Nothing in the default
 * mode comes here: there every write() is committed before its reply.
 *
 * Bounded: at most max bytes are allocated for held data, a batch in
 * flight included (the buffers' capacity, not only the bytes in them:
 * a run grown by doubling could otherwise take twice max); a writer that
 * finds the hold full commits a file itself (its own first) or waits
 * for one. A batch's error is kept for the file's next fsync
 * or flush (as the page cache's errseq), never dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wb_hold.h"

static struct dg_wb_file **slot_of(struct dg_wb *wb, uint64_t ino)
{
	return &wb->bucket[(ino * 0x9e3779b97f4a7c15ull) >> 56];
}

static struct dg_wb_file *find(struct dg_wb *wb, uint64_t ino)
{
	struct dg_wb_file *f = *slot_of(wb, ino);

	while (f && f->ino != ino)
		f = f->next;
	return f;
}

static struct dg_wb_file *find_or_add(struct dg_wb *wb, uint64_t ino)
{
	struct dg_wb_file *f = find(wb, ino);
	struct dg_wb_file **s;

	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	s = slot_of(wb, ino);
	f->ino = ino;
	f->next = *s;
	*s = f;
	return f;
}

/* Forget f when nothing of it is left: no runs, no batch, no error. */
static void maybe_free(struct dg_wb *wb, struct dg_wb_file *f)
{
	struct dg_wb_file **s;

	if (f->nrun || f->busy || f->err)
		return;
	for (s = slot_of(wb, f->ino); *s != f; s = &(*s)->next)
		;
	*s = f->next;
	free(f->run);
	free(f);
}

/* Room in a run's buffer for need bytes. Doubling makes appends cheap;
 * the step is capped so that a long run wastes at most 16 MiB, and so
 * that the hold's buffers stay within max (dg_wb_put() made room for
 * need, never for the spare). */
static int run_room(struct dg_wb *wb, struct dg_wb_run *r, size_t need)
{
	size_t cap = r->cap * 2;
	uint8_t *b;

	if (need <= r->cap)
		return 0;
	if (cap < need)
		cap = need;
	if (cap > need + (16u << 20))
		cap = need + (16u << 20);
	if (wb->alloc - r->cap + cap > wb->max)
		cap = wb->max - wb->alloc + r->cap > need
			      ? wb->max - wb->alloc + r->cap
			      : need;
	b = realloc(r->buf, cap);
	if (!b)
		return -ENOMEM;
	wb->alloc += cap - r->cap;
	r->buf = b;
	r->cap = cap;
	return 0;
}

/* Put [off, off + len) into f's runs, over what they held there; runs it
 * touches become one. *added: how many more bytes f holds. */
static int run_insert(struct dg_wb *wb, struct dg_wb_file *f, uint64_t off,
		      const void *buf, size_t len, size_t *added)
{
	uint64_t e = off + len;
	unsigned lo = 0, hi = f->nrun, a, b;
	struct dg_wb_run *r = f->run;

	/* a: the first run that reaches off; b: past the last starting
	 * at or before e. Runs a..b-1 touch the write. */
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (r[mid].off + r[mid].len < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	a = b = lo;
	while (b < f->nrun && r[b].off <= e)
		b++;
	if (a == b) {
		uint8_t *nb;

		if (f->nrun == f->caprun) {
			unsigned cap = f->caprun ? f->caprun * 2 : 8;
			void *p = realloc(f->run, cap * sizeof(*f->run));

			if (!p)
				return -ENOMEM;
			f->run = r = p;
			f->caprun = cap;
		}
		nb = malloc(len);
		if (!nb)
			return -ENOMEM;
		memcpy(nb, buf, len);
		memmove(&r[a + 1], &r[a], (f->nrun - a) * sizeof(*r));
		r[a] = (struct dg_wb_run){ off, len, len, nb };
		f->nrun++;
		wb->alloc += len;
		*added = len;
		return 0;
	}
	if (b == a + 1 && r[a].off <= off) {
		/* Within one run or past its end: the sequential case. */
		uint64_t ne = e > r[a].off + r[a].len ? e : r[a].off + r[a].len;
		size_t need = (size_t)(ne - r[a].off);

		if (run_room(wb, &r[a], need))
			return -ENOMEM;
		memcpy(r[a].buf + (off - r[a].off), buf, len);
		*added = need - r[a].len;
		r[a].len = need;
		return 0;
	}
	{
		/* Several runs, or one starting after off: one new buffer.
		 * The gaps between them lie inside the write. */
		uint64_t lo_off = r[a].off < off ? r[a].off : off;
		uint64_t last = r[b - 1].off + r[b - 1].len;
		uint64_t ne = last > e ? last : e;
		size_t old = 0, oldcap = 0, n = (size_t)(ne - lo_off);
		uint8_t *nb = malloc(n);

		if (!nb)
			return -ENOMEM;
		for (unsigned k = a; k < b; k++) {
			memcpy(nb + (r[k].off - lo_off), r[k].buf, r[k].len);
			old += r[k].len;
			oldcap += r[k].cap;
			free(r[k].buf);
		}
		memcpy(nb + (off - lo_off), buf, len);
		r[a] = (struct dg_wb_run){ lo_off, n, n, nb };
		memmove(&r[a + 1], &r[b], (f->nrun - b) * sizeof(*r));
		f->nrun -= b - a - 1;
		wb->alloc = wb->alloc - oldcap + n;
		*added = n - old;
		return 0;
	}
}

/*
 * Commit f's runs as one batch: lock held, f not busy, with runs. The
 * lock is dropped around the engine call; f stays (busy), and may be
 * gone after. Returns the batch's error, also kept in f->err.
 */
static int commit_file(struct dg_wb *wb, struct dg_wb_file *f)
{
	struct dg_wb_run *run = f->run;
	unsigned n = f->nrun, req = f->requests;
	size_t bytes = f->bytes, cap = 0;
	struct dg_wseg *seg = malloc(n * sizeof(*seg));
	int ret;

	f->run = NULL;
	f->nrun = f->caprun = 0;
	f->requests = 0;
	f->bytes = 0;
	f->busy = true;
	f->busy_end = f->end;
	f->end = 0;
	pthread_mutex_unlock(&wb->lock);
	if (seg) {
		for (unsigned i = 0; i < n; i++)
			seg[i] = (struct dg_wseg){ run[i].off, run[i].buf,
						   run[i].len };
		ret = wb->commit(wb->arg, f->ino, seg, n, req);
	} else {
		ret = -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++) {
		cap += run[i].cap;
		free(run[i].buf);
	}
	free(run);
	free(seg);
	pthread_mutex_lock(&wb->lock);
	f->busy = false;
	wb->held -= bytes;
	wb->alloc -= cap;
	wb->batches++;
	if (ret) {
		wb->errors++;
		if (!f->err) {
			f->err = ret;
			f->err_at = wb->batches;
		}
	} else {
		wb->bytes_committed += bytes;
	}
	pthread_cond_broadcast(&wb->done);
	maybe_free(wb, f);
	return ret;
}

/* A file with runs and no batch in flight, own first when it has. */
static struct dg_wb_file *pick(struct dg_wb *wb, uint64_t own)
{
	struct dg_wb_file *f = find(wb, own);

	if (f && f->nrun && !f->busy)
		return f;
	for (unsigned i = 0; i < DG_WB_BUCKETS; i++)
		for (f = wb->bucket[i]; f; f = f->next)
			if (f->nrun && !f->busy)
				return f;
	return NULL;
}

static bool any_busy(struct dg_wb *wb)
{
	for (unsigned i = 0; i < DG_WB_BUCKETS; i++)
		for (struct dg_wb_file *f = wb->bucket[i]; f; f = f->next)
			if (f->busy)
				return true;
	return false;
}

/* Commit everything held, and wait for the batches in flight: lock held.
 * The first error of these batches, or 0. */
static int drain_all_locked(struct dg_wb *wb)
{
	int first = 0;

	for (;;) {
		struct dg_wb_file *f = pick(wb, 0);
		int ret;

		if (f) {
			ret = commit_file(wb, f);
			if (ret && !first)
				first = ret;
		} else if (any_busy(wb)) {
			pthread_cond_wait(&wb->done, &wb->lock);
		} else {
			return first;
		}
	}
}

static void *flusher(void *arg)
{
	struct dg_wb *wb = arg;

	pthread_mutex_lock(&wb->lock);
	while (!wb->stop) {
		struct timespec at;

		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += wb->interval_ms / 1000;
		at.tv_nsec += (long)(wb->interval_ms % 1000) * 1000000;
		if (at.tv_nsec >= 1000000000) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000;
		}
		while (!wb->stop && !wb->kick &&
		       pthread_cond_timedwait(&wb->alarm, &wb->lock, &at) !=
			       ETIMEDOUT)
			;
		if (wb->stop)
			break;
		wb->kick = false;
		/* Errors stay with their files, for their fsync. */
		drain_all_locked(wb);
	}
	pthread_mutex_unlock(&wb->lock);
	return NULL;
}

int dg_wb_init(struct dg_wb *wb, size_t max, unsigned interval_ms,
	       dg_wb_commit_fn commit, void *arg)
{
	pthread_condattr_t ca;

	memset(wb, 0, sizeof(*wb));
	wb->max = max;
	wb->interval_ms = interval_ms ? interval_ms : 1;
	wb->commit = commit;
	wb->arg = arg;
	pthread_mutex_init(&wb->lock, NULL);
	pthread_cond_init(&wb->done, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wb->alarm, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

int dg_wb_start(struct dg_wb *wb)
{
	int ret = pthread_create(&wb->thread, NULL, flusher, wb);

	if (ret)
		return -ret;
	wb->thread_live = true;
	return 0;
}

int dg_wb_stop(struct dg_wb *wb)
{
	int ret;

	pthread_mutex_lock(&wb->lock);
	wb->stop = true;
	pthread_cond_signal(&wb->alarm);
	pthread_mutex_unlock(&wb->lock);
	if (wb->thread_live)
		pthread_join(wb->thread, NULL);
	wb->thread_live = false;
	pthread_mutex_lock(&wb->lock);
	ret = drain_all_locked(wb);
	for (unsigned i = 0; i < DG_WB_BUCKETS; i++) {
		while (wb->bucket[i]) {
			struct dg_wb_file *f = wb->bucket[i];

			if (!ret)
				ret = f->err;
			wb->bucket[i] = f->next;
			free(f->run);
			free(f);
		}
	}
	pthread_mutex_unlock(&wb->lock);
	return ret;
}

void dg_wb_destroy(struct dg_wb *wb)
{
	pthread_cond_destroy(&wb->alarm);
	pthread_cond_destroy(&wb->done);
	pthread_mutex_destroy(&wb->lock);
}

int dg_wb_put(struct dg_wb *wb, uint64_t ino, uint64_t off, const void *buf,
	      size_t len)
{
	struct dg_wb_file *f;
	size_t added = 0;
	int ret;

	if (len == 0)
		return 0;
	if (len > wb->max)
		return -E2BIG;
	pthread_mutex_lock(&wb->lock);
	/* Full: make room before taking more, so that the buffers never
	 * pass max (a write adds at most len to them). */
	while (wb->alloc + len > wb->max) {
		f = pick(wb, ino);
		wb->kick = true;
		pthread_cond_signal(&wb->alarm);
		if (f)
			commit_file(wb, f); /* the error stays with f */
		else
			pthread_cond_wait(&wb->done, &wb->lock);
	}
	f = find_or_add(wb, ino);
	ret = f ? run_insert(wb, f, off, buf, len, &added) : -ENOMEM;
	if (ret) {
		if (f)
			maybe_free(wb, f);
		pthread_mutex_unlock(&wb->lock);
		return ret;
	}
	f->bytes += added;
	f->requests++;
	if (off + len > f->end)
		f->end = off + len;
	wb->held += added;
	wb->requests_held++;
	if (wb->held > wb->held_peak)
		wb->held_peak = wb->held;
	if (wb->alloc > wb->alloc_peak)
		wb->alloc_peak = wb->alloc;
	if (wb->alloc >= wb->max / 2 && !wb->kick) {
		wb->kick = true;
		pthread_cond_signal(&wb->alarm);
	}
	pthread_mutex_unlock(&wb->lock);
	return 0;
}

int dg_wb_drain(struct dg_wb *wb, uint64_t ino, bool take_err)
{
	struct dg_wb_file *f;
	int ret = 0;

	pthread_mutex_lock(&wb->lock);
	while ((f = find(wb, ino)) && f->busy)
		pthread_cond_wait(&wb->done, &wb->lock);
	if (f && f->nrun)
		ret = commit_file(wb, f);
	if (take_err && (f = find(wb, ino)) && !f->busy) {
		if (!ret)
			ret = f->err;
		f->err = 0;
		maybe_free(wb, f);
	}
	pthread_mutex_unlock(&wb->lock);
	return ret;
}

int dg_wb_drain_all(struct dg_wb *wb)
{
	int ret;

	pthread_mutex_lock(&wb->lock);
	ret = drain_all_locked(wb);
	pthread_mutex_unlock(&wb->lock);
	return ret;
}

int dg_wb_sync(struct dg_wb *wb)
{
	uint64_t *inos = NULL;
	size_t n = 0, cap = 0;
	int first = 0;

	pthread_mutex_lock(&wb->lock);
	for (unsigned i = 0; i < DG_WB_BUCKETS && !first; i++)
		for (struct dg_wb_file *f = wb->bucket[i]; f && !first;
		     f = f->next) {
			if (!f->nrun && !f->busy)
				continue;
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 64;
				uint64_t *ni = realloc(inos, nc * sizeof(*ni));

				if (!ni) {
					first = -ENOMEM;
					break;
				}
				inos = ni;
				cap = nc;
			}
			inos[n++] = f->ino;
		}
	pthread_mutex_unlock(&wb->lock);
	for (size_t i = 0; i < n && !first; i++)
		first = dg_wb_drain(wb, inos[i], false);
	free(inos);
	return first;
}

/* ino's untold batch error, forgotten with forget. */
static int file_err(struct dg_wb *wb, uint64_t ino, bool forget)
{
	struct dg_wb_file *f;
	int ret = 0;

	pthread_mutex_lock(&wb->lock);
	f = find(wb, ino);
	if (f) {
		ret = f->err;
		if (forget) {
			f->err = 0;
			maybe_free(wb, f);
		}
	}
	pthread_mutex_unlock(&wb->lock);
	return ret;
}

uint64_t dg_wb_epoch(struct dg_wb *wb)
{
	uint64_t n;

	pthread_mutex_lock(&wb->lock);
	n = wb->batches;
	pthread_mutex_unlock(&wb->lock);
	return n;
}

void dg_wb_forget_err(struct dg_wb *wb, uint64_t ino, uint64_t epoch)
{
	struct dg_wb_file *f;

	pthread_mutex_lock(&wb->lock);
	f = find(wb, ino);
	if (f && f->err && f->err_at <= epoch) {
		f->err = 0;
		maybe_free(wb, f);
	}
	pthread_mutex_unlock(&wb->lock);
}

int dg_wb_peek_err(struct dg_wb *wb, uint64_t ino)
{
	return file_err(wb, ino, false);
}

int dg_wb_take_err(struct dg_wb *wb, uint64_t ino)
{
	return file_err(wb, ino, true);
}

uint64_t dg_wb_end(struct dg_wb *wb, uint64_t ino)
{
	struct dg_wb_file *f;
	uint64_t end = 0;

	pthread_mutex_lock(&wb->lock);
	f = find(wb, ino);
	if (f) {
		end = f->end;
		if (f->busy && f->busy_end > end)
			end = f->busy_end;
	}
	pthread_mutex_unlock(&wb->lock);
	return end;
}

bool dg_wb_holds(struct dg_wb *wb, uint64_t ino)
{
	struct dg_wb_file *f;
	bool ret;

	pthread_mutex_lock(&wb->lock);
	f = find(wb, ino);
	ret = f && (f->nrun || f->busy);
	pthread_mutex_unlock(&wb->lock);
	return ret;
}

bool dg_wb_knows(struct dg_wb *wb, uint64_t ino)
{
	bool ret;

	pthread_mutex_lock(&wb->lock);
	ret = find(wb, ino) != NULL;
	pthread_mutex_unlock(&wb->lock);
	return ret;
}

void dg_wb_get_counts(struct dg_wb *wb, struct dg_wb_counts *c)
{
	pthread_mutex_lock(&wb->lock);
	*c = (struct dg_wb_counts){
		.held = wb->held, .held_peak = wb->held_peak, .max = wb->max,
		.alloc = wb->alloc, .alloc_peak = wb->alloc_peak,
		.batches = wb->batches, .bytes_committed = wb->bytes_committed,
		.requests_held = wb->requests_held, .errors = wb->errors,
		.interval_ms = wb->interval_ms,
	};
	pthread_mutex_unlock(&wb->lock);
}
