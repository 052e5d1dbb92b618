// SPDX-License-Identifier: MIT
/*
 * verify_par.c -- the row pass's fast path: a row verified where it is
 * mapped, and blocks of rows verified ahead by threads (fsck's offline,
 * the daemon's scrub's online)
 *
 * Checking a written row costs the hashing of its pages and the parity
 * computed from them; the read path also copied every page into a
 * buffer first, and one thread did it all. A row that verifies -- the
 * rows of a healthy volume, all but a handful of a damaged one -- needs
 * none of the read path's care: dg_row_clean() hashes the pages in the
 * device mapping and computes parity from there. Only a row that fails
 * it goes the read path's way (verify.c, pass_row()), from the start,
 * so every fault is found, reported and repaired exactly as before.
 *
 * The rows ahead of the pass can be verified by other threads (fsck
 * offline, the daemon's scrub online): the walk's thread hands out a
 * batch of blocks of rows (DG_PAR_BATCH_BLOCKS a thread), every
 * thread, it too, takes whole blocks until none is left, and records
 * for each row whether it verified and against which checksums (read
 * from the newest copy of its checksum page that verifies, examined
 * quietly: nothing noted, nothing rewritten). The walk's thread then goes over the rows
 * in order as before, each under its lock; a row verified ahead with
 * the very checksums its own look-up gives is done, any other row takes
 * the read path there and then. A thread maps a block's written pages
 * in at once before it reads them (dg_rows_map_in()), instead of a
 * page fault every 16 pages. Only the pages written, those it reads:
 * on tmpfs a hole mapped in would be allocated. So the findings, their
 * order and the repairs are the same as one thread's, whatever the
 * number of threads:
 * the workers only read, and only while the walk's thread waits for
 * them. A repair of one row writes that row's pages and checksums, its
 * ditto copies (outside the rows) or copies of a checksum page: never
 * another row's bytes, and a checksum that changed makes the row's
 * verdict void.
 *
 * Online (the daemon's scrub) reads and updates go on while the workers
 * run, and the workers' state lives from one of the scrub's batches to
 * the next (the walk only runs them for a row no batch covers). A worker
 * verifies each row under that row's lock, for reading: every update of
 * a row's pages, checksums and parity holds it for writing (apply.c,
 * the read path's repairs, the scrub's own), so a row is never seen half
 * written, and readers go on beside. Its checksums come from before that
 * lock: a row updated since fails against them (not verified), or was
 * updated in full before the lock (its data, parity and checksum pages
 * all stored under the locks), and then matches the checksums only if
 * they are the new ones. Either way the walk's thread takes the verdict
 * only if the checksums it looks up itself, under the row's lock for
 * writing, are those very ones: one checksum a page, data and parity, so
 * the row is the bytes the worker verified (a verdict is at most one
 * batch of the threads old, as a one-thread scrub's check of a row is
 * older by the time the pass ends). Any other row takes the read path.
 * A halt (dg_par_halt(): the scrub paused, cancelled or unmounted) stops
 * the workers taking blocks; the rows they leave have no verdict.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "csum.h"

bool dg_row_clean(struct dg_vol *vol, uint64_t row, const uint64_t *cs,
		  uint8_t *calc_mem)
{
	unsigned k = vol->k, m = k + vol->parity;
	uint64_t off = dg_row_page(vol, row) << DG_PAGE_SHIFT;
	uint8_t *pages[DG_MAX_DEVS], *calc[DG_MAX_PARITY];

	for (unsigned p = 0; p < m; p++) {
		unsigned dev = dg_row_pos_dev(vol, row, p);
		struct dg_dev *d = &vol->devs[dev];

		if (cs[dev] == DG_CSUM_NONE) {
			/* Never written: zeros whatever the media holds. */
			pages[p] = (uint8_t *)dg_zero_page;
			continue;
		}
		if (!dg_dev_has_row(d, row))
			return false;
		/* Read only: the parity code takes no const. */
		pages[p] = (uint8_t *)dg_dev_ptr(d, off);
		if (dg_csum_page(vol, dev, row, pages[p]) != cs[dev])
			return false;
	}
	for (unsigned j = 0; j < vol->parity; j++)
		calc[j] = calc_mem + (size_t)j * DG_PAGE_SIZE;
	if (vol->parity)
		dg_parity_compute(vol, pages, calc, DG_PAGE_SIZE);
	for (unsigned j = 0; j < vol->parity; j++)
		if (memcmp(calc[j], pages[k + j], DG_PAGE_SIZE))
			return false;
	return true;
}

void dg_rows_map_in(struct dg_vol *vol, unsigned dev, const uint64_t *e,
		    uint64_t r0, uint64_t r1)
{
	struct dg_dev *d = &vol->devs[dev];

	if (!dg_dev_has_row(d, r0))
		return;
	/* A device filling in (an online replace) holds only the rows
	 * below its fill row; those past it are holes its checksum page
	 * may well call written, and a hole mapped in is allocated. The
	 * fill row only grows: what is below it now stays below. */
	if (d->filling) {
		uint64_t fill = __atomic_load_n(&d->fill_row, __ATOMIC_ACQUIRE);

		if (r1 > fill)
			r1 = fill;
	}
	for (uint64_t r = r0; r < r1;) {
		uint64_t s;

		while (r < r1 && e[r % DG_CSUMS_PER_PAGE] == DG_CSUM_NONE)
			r++;
		for (s = r; r < r1 && e[r % DG_CSUMS_PER_PAGE] != DG_CSUM_NONE;)
			r++;
		if (r > s)
			dg_dev_map_in(d, dg_row_page(vol, s) << DG_PAGE_SHIFT,
				      (r - s) << DG_PAGE_SHIFT);
	}
}

void dg_vol_set_check_threads(struct dg_vol *vol, unsigned n)
{
	vol->check_threads = n;
}

/* One thread's buffers: the checksum page of each device for the block
 * it is on, and the parity it computes. */
struct worker {
	struct dg_par *par;
	pthread_t tid;
	uint8_t *img;		/* ndev pages */
	uint8_t *calc;		/* DG_MAX_PARITY pages */
};

struct dg_par {
	struct dg_vol *vol;
	pthread_mutex_t lock;
	pthread_cond_t go, done;
	uint64_t gen;		/* batches handed out */
	unsigned busy;		/* workers still on this batch */
	bool quit;
	/* Stop taking blocks (dg_par_halt()): the blocks left read as not
	 * verified, so a pause waits for one block a thread at most. */
	atomic_bool halt;
	unsigned nthreads;	/* this one included */
	uint64_t b0, b1;	/* the batch: rows [b0, b1) */
	_Atomic uint64_t next;	/* the next block to take */
	/* Row b0 + i: verified clean with the checksums cs[i * ndev ..]. */
	uint8_t *clean;
	uint64_t *cs;
	struct worker w[DG_PAR_MAX_THREADS];
};

static uint64_t batch_rows(const struct dg_par *par)
{
	return (uint64_t)par->nthreads * DG_PAR_BATCH_BLOCKS *
	       DG_CSUMS_PER_PAGE;
}

/* The rows [r0, r1) of block b, verified. */
static void verify_block(struct worker *wk, uint64_t b, uint64_t r0,
			 uint64_t r1)
{
	struct dg_par *par = wk->par;
	struct dg_vol *vol = par->vol;
	unsigned n = vol->ndev;
	bool known[DG_MAX_DEVS];
	pthread_rwlock_t *lk0;

	/*
	 * Each checksum page examined quietly under its lock, as the walk's
	 * own look-up does (load_page()) but nothing noted or rewritten:
	 * online too, every store of a copy (an update, a repair of a copy
	 * by a reader or the walk) is made under that lock, all copies of
	 * the page before it is let go (write_pages_copies()), so the newest
	 * copy that verifies is the page as it stands, the one the walk's
	 * uncached look-up takes. The cache (csum_cache.c) is never read
	 * here: it is written through, under the same lock, after the
	 * copies, so media are never behind it once the lock is free.
	 *
	 * The reads of the copies and the map-in under the read lock of
	 * the block's first row: a device is swapped (an online replace,
	 * replace.c: closed, unmapped) only under every row lock, so not
	 * while a worker reads it. Row locks come before checksum page
	 * locks (volume_i.h). Let go before the rows, each verified under
	 * its own.
	 */
	lk0 = dg_row_lock(vol, r0);
	pthread_rwlock_rdlock(lk0);
	for (unsigned d = 0; d < n; d++) {
		pthread_mutex_t *lk = &vol->csum_locks[dg_cpage_lock_idx(
			dg_cpage_key(d, b))];
		uint8_t *img = wk->img + (size_t)d * DG_PAGE_SIZE;
		struct dg_cpage_view v;

		pthread_mutex_lock(lk);
		known[d] = dg_cpage_examine(vol, d, b, img, &v,
					    DG_CPX_QUIET) >= 0;
		pthread_mutex_unlock(lk);
	}
	for (unsigned d = 0; d < n; d++)
		if (known[d])
			dg_rows_map_in(vol, d, (const void *)(wk->img +
				       (size_t)d * DG_PAGE_SIZE), r0, r1);
	pthread_rwlock_unlock(lk0);
	for (uint64_t r = r0; r < r1; r++) {
		uint64_t *cs = par->cs + (r - par->b0) * n;
		pthread_rwlock_t *lk;
		bool ok = true, any = false;

		for (unsigned d = 0; d < n; d++) {
			const uint64_t *e = (const void *)(wk->img +
				(size_t)d * DG_PAGE_SIZE);

			cs[d] = e[r % DG_CSUMS_PER_PAGE];
			ok &= known[d];
			any |= cs[d] != DG_CSUM_NONE;
		}
		if (!ok || !any) {
			par->clean[r - par->b0] = false;
			continue;
		}
		/* Under the row's lock, for reading (see the top): offline
		 * nobody else holds it, online updates of the row wait. */
		lk = dg_row_lock(vol, r);
		pthread_rwlock_rdlock(lk);
		par->clean[r - par->b0] = dg_row_clean(vol, r, cs, wk->calc);
		pthread_rwlock_unlock(lk);
	}
}

/* Take blocks of the batch until none is left. */
static void work(struct worker *wk)
{
	struct dg_par *par = wk->par;
	uint64_t last = (par->b1 - 1) / DG_CSUMS_PER_PAGE;

	for (;;) {
		uint64_t b, r0, r1;

		/* Halted: no verdict for the rest (dg_par_run() cleared
		 * them), which the walk checks itself, if it goes on. */
		if (atomic_load_explicit(&par->halt, memory_order_relaxed))
			return;
		b = atomic_fetch_add(&par->next, 1);
		if (b > last)
			return;
		r0 = b * DG_CSUMS_PER_PAGE;
		r1 = r0 + DG_CSUMS_PER_PAGE;
		if (r0 < par->b0)
			r0 = par->b0;
		if (r1 > par->b1)
			r1 = par->b1;
		/* A block never written: no row of it is visited. */
		if (dg_cmap_next_row(par->vol, r0, r1) >= r1)
			continue;
		verify_block(wk, b, r0, r1);
	}
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct dg_par *par = wk->par;
	uint64_t seen = 0;

	pthread_mutex_lock(&par->lock);
	for (;;) {
		while (!par->quit && par->gen == seen)
			pthread_cond_wait(&par->go, &par->lock);
		if (par->quit)
			break;
		seen = par->gen;
		pthread_mutex_unlock(&par->lock);
		work(wk);
		pthread_mutex_lock(&par->lock);
		if (--par->busy == 0)
			pthread_cond_signal(&par->done);
	}
	pthread_mutex_unlock(&par->lock);
	return NULL;
}

static unsigned threads_wanted(unsigned threads)
{
	long n = threads;
	cpu_set_t set;

	/* The CPUs this process may run on (a container's, taskset's),
	 * else those online. */
	if (!n && !sched_getaffinity(0, sizeof(set), &set))
		n = CPU_COUNT(&set);
	if (!n)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return n > (long)DG_PAR_MAX_THREADS ? DG_PAR_MAX_THREADS : (unsigned)n;
}

static void free_par(struct dg_par *par)
{
	for (unsigned i = 0; i < DG_PAR_MAX_THREADS; i++) {
		free(par->w[i].img);
		free(par->w[i].calc);
	}
	free(par->clean);
	free(par->cs);
	pthread_cond_destroy(&par->go);
	pthread_cond_destroy(&par->done);
	pthread_mutex_destroy(&par->lock);
	free(par);
}

struct dg_par *dg_par_start(struct dg_vol *vol, unsigned threads)
{
	unsigned want = threads_wanted(threads);
	struct dg_par *par;

	if (want < 2)
		return NULL;
	par = calloc(1, sizeof(*par));
	if (!par)
		return NULL;
	par->vol = vol;
	par->nthreads = want;
	pthread_mutex_init(&par->lock, NULL);
	pthread_cond_init(&par->go, NULL);
	pthread_cond_init(&par->done, NULL);
	par->clean = malloc(batch_rows(par));
	par->cs = malloc(batch_rows(par) * vol->ndev * sizeof(uint64_t));
	for (unsigned i = 0; i < want && par->clean && par->cs; i++) {
		par->w[i].par = par;
		par->w[i].img = aligned_alloc(DG_PAGE_SIZE,
					      (size_t)vol->ndev * DG_PAGE_SIZE);
		par->w[i].calc = aligned_alloc(DG_PAGE_SIZE,
					       DG_MAX_PARITY * DG_PAGE_SIZE);
		if (!par->w[i].img || !par->w[i].calc)
			goto fail;
	}
	if (!par->clean || !par->cs)
		goto fail;
	/* w[0] is the walk's own thread; fewer workers if no more start. */
	for (unsigned i = 1; i < want; i++) {
		if (pthread_create(&par->w[i].tid, NULL, worker_main,
				   &par->w[i])) {
			par->nthreads = i;
			break;
		}
	}
	if (par->nthreads < 2) {
		par->nthreads = 1;
		dg_par_stop(par);
		return NULL;
	}
	return par;
fail:
	free_par(par);
	return NULL;
}

void dg_par_stop(struct dg_par *par)
{
	if (!par)
		return;
	pthread_mutex_lock(&par->lock);
	par->quit = true;
	pthread_cond_broadcast(&par->go);
	pthread_mutex_unlock(&par->lock);
	for (unsigned i = 1; i < par->nthreads; i++)
		pthread_join(par->w[i].tid, NULL);
	free_par(par);
}

void dg_par_halt(struct dg_par *par)
{
	if (par)
		atomic_store_explicit(&par->halt, true, memory_order_relaxed);
}

void dg_par_run(struct dg_par *par, struct dg_row_walk *w, uint64_t row,
		uint64_t end)
{
	uint64_t b1 = (row / DG_CSUMS_PER_PAGE) * DG_CSUMS_PER_PAGE +
		      batch_rows(par);

	if (b1 > end)
		b1 = end;
	/* The blocks of the batch asked for at once, and those past it as
	 * the walk would: the workers read them all before the walk is
	 * there (on a disk, the reads overlap; in memory it is nothing). */
	dg_walk_ahead(w, row, b1 + DG_WALK_AHEAD * DG_CSUMS_PER_PAGE);
	/* No verdict left from the batch before: a block no thread takes
	 * (never written, work()) must read as not verified, not as the
	 * rows of another batch at the same index. */
	memset(par->clean, 0, b1 - row);
	memset(par->cs, 0, (b1 - row) * par->vol->ndev * sizeof(*par->cs));
	pthread_mutex_lock(&par->lock);
	par->b0 = row;
	par->b1 = b1;
	atomic_store(&par->next, row / DG_CSUMS_PER_PAGE);
	par->busy = par->nthreads - 1;
	par->gen++;
	pthread_cond_broadcast(&par->go);
	pthread_mutex_unlock(&par->lock);
	work(&par->w[0]);
	pthread_mutex_lock(&par->lock);
	while (par->busy)
		pthread_cond_wait(&par->done, &par->lock);
	pthread_mutex_unlock(&par->lock);
}

bool dg_par_covers(const struct dg_par *par, uint64_t row)
{
	return par->b1 > par->b0 && row >= par->b0 && row < par->b1;
}

bool dg_par_verdict(const struct dg_par *par, uint64_t row,
		    const uint64_t *cs)
{
	uint64_t i = row - par->b0;

	return dg_par_covers(par, row) && par->clean[i] &&
	       !memcmp(par->cs + i * par->vol->ndev, cs,
		       par->vol->ndev * sizeof(*cs));
}

unsigned dg_par_threads(const struct dg_par *par)
{
	return par ? par->nthreads : 1;
}
