// SPDX-License-Identifier: MIT
/* recorder.c -- record media writes and persists, rebuild crash states */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "media.h"
#include "recorder.h"
#include "volume_i.h"

#define NO_PIECE   UINT32_MAX
#define NEVER	   UINT64_MAX

/* The part of one recorded write that falls in one page. */
struct piece {
	uint32_t dev;
	uint32_t len;		/* 1..DG_PAGE_SIZE */
	uint64_t off;		/* byte offset in the image */
	uint64_t data;		/* offset of the bytes in the arena */
	uint64_t issued;	/* persists recorded before this piece */
	uint64_t durable;	/* number of the persist that made it
				 * durable; NEVER if none did */
	uint32_t next;		/* next piece pending on the same page */
};

struct cimage {
	char *path;
	uint64_t size;		/* bytes, a multiple of the page size */
	uint64_t pages;
	uint8_t *snap;		/* contents at crec_start() */
	uint8_t *cur;		/* snapshot + pieces durable at r->cur_k */
	uint8_t *live;		/* page bitmap: nonzero in the snapshot or
				 * written by some piece */
	uint32_t *pend_head;	/* per page: pieces not yet durable, */
	uint32_t *pend_tail;	/* in program order */
};

struct crec {
	pthread_mutex_t lock;	/* the observer may be called by any thread */
	struct dg_media_observer obs;
	bool recording;
	unsigned n;
	struct cimage img[DG_MAX_DEVS];
	unsigned last_dev;	/* path lookup cache */

	struct piece *p;
	uint32_t np, capp;
	uint8_t *arena;
	uint64_t arena_len, arena_cap;
	uint64_t npersists, nwrites, foreign;

	struct crec_marker *m;
	unsigned nm, capm;

	/* Rebuild state: cur images hold the pieces order[0..applied). */
	uint32_t *order;	/* pieces sorted by (durable, index) */
	uint64_t (*order_id)[2]; /* state id of order[0..i) applied whole */
	uint32_t norder;
	uint32_t applied;
	uint64_t cur_k;		/* NEVER: cur not valid */
};

static struct crec *active;

static uint64_t xrand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static int find_dev(struct crec *r, const char *path)
{
	if (r->last_dev < r->n && !strcmp(r->img[r->last_dev].path, path))
		return (int)r->last_dev;
	for (unsigned i = 0; i < r->n; i++)
		if (!strcmp(r->img[i].path, path)) {
			r->last_dev = i;
			return (int)i;
		}
	return -1;
}

static int add_piece(struct crec *r, unsigned dev, uint64_t off,
		     const void *src, uint32_t len)
{
	struct cimage *c = &r->img[dev];
	uint64_t page = off / DG_PAGE_SIZE;
	struct piece *pc;

	if (r->np == r->capp) {
		uint32_t cap = r->capp ? r->capp * 2 : 4096;
		void *n = realloc(r->p, cap * sizeof(*r->p));

		if (!n)
			return -ENOMEM;
		r->p = n;
		r->capp = cap;
	}
	if (r->arena_len + len > r->arena_cap) {
		uint64_t cap = r->arena_cap ? r->arena_cap * 2 : 1u << 20;
		void *n;

		while (cap < r->arena_len + len)
			cap *= 2;
		n = realloc(r->arena, cap);
		if (!n)
			return -ENOMEM;
		r->arena = n;
		r->arena_cap = cap;
	}
	memcpy(r->arena + r->arena_len, src, len);
	pc = &r->p[r->np];
	*pc = (struct piece){ .dev = dev, .len = len, .off = off,
			      .data = r->arena_len, .issued = r->npersists,
			      .durable = NEVER, .next = NO_PIECE };
	r->arena_len += len;
	if (c->pend_tail[page] == NO_PIECE)
		c->pend_head[page] = r->np;
	else
		r->p[c->pend_tail[page]].next = r->np;
	c->pend_tail[page] = r->np;
	c->live[page / 8] |= (uint8_t)(1u << (page % 8));
	r->np++;
	return 0;
}

static void obs_write(void *arg, const char *path, uint64_t off,
		      const void *src, size_t len)
{
	struct crec *r = arg;
	const uint8_t *s = src;
	int dev;

	pthread_mutex_lock(&r->lock);
	dev = r->recording ? find_dev(r, path) : -1;
	if (dev < 0) {
		r->foreign++;
		goto out;
	}
	r->nwrites++;
	if (off >= r->img[dev].size)
		goto out;
	if (len > r->img[dev].size - off)
		len = r->img[dev].size - off;
	while (len) {
		uint32_t n = DG_PAGE_SIZE - (uint32_t)(off % DG_PAGE_SIZE);

		if (n > len)
			n = (uint32_t)len;
		if (add_piece(r, (unsigned)dev, off, s, n))
			abort(); /* a recording with holes is worthless */
		off += n;
		s += n;
		len -= n;
	}
out:
	pthread_mutex_unlock(&r->lock);
}

/* Every pending piece on the pages [off, off + len) of image dev touches
 * becomes durable at the current persist: non-DAX persists (msync) work
 * on whole pages. Caller holds the lock. */
static void make_durable(struct crec *r, unsigned dev, uint64_t off,
			 uint64_t len)
{
	struct cimage *c = &r->img[dev];
	uint64_t first, last;

	if (!len || off >= c->size)
		return;
	first = off / DG_PAGE_SIZE;
	last = (off + len - 1) / DG_PAGE_SIZE;
	if (last >= c->pages)
		last = c->pages - 1;
	for (uint64_t pg = first; pg <= last; pg++) {
		for (uint32_t i = c->pend_head[pg]; i != NO_PIECE;
		     i = r->p[i].next)
			r->p[i].durable = r->npersists;
		c->pend_head[pg] = c->pend_tail[pg] = NO_PIECE;
	}
}

static int obs_persist(void *arg, const char *path, uint64_t off,
		       size_t len)
{
	struct crec *r = arg;
	int dev;

	pthread_mutex_lock(&r->lock);
	dev = r->recording ? find_dev(r, path) : -1;
	if (dev < 0) {
		r->foreign++;
		goto out;
	}
	r->npersists++;
	make_durable(r, (unsigned)dev, off, len);
out:
	pthread_mutex_unlock(&r->lock);
	return 0; /* recorded, never failed */
}

/*
 * A round (media.h): ranges of several images flushed apart and drained
 * by one fence. One persist: nothing of it is durable before, so every
 * crash point before it may keep any subset of its pieces (crec_build()'s
 * policies over the pieces not durable), and all of it after.
 */
static int obs_persist_round(void *arg, const struct dg_obs_span *s,
			     unsigned n)
{
	struct crec *r = arg;
	bool any = false;

	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < n && r->recording; i++) {
		int dev = find_dev(r, s[i].path);

		if (dev < 0) {
			r->foreign++;
			continue;
		}
		if (!any)
			r->npersists++;
		any = true;
		make_durable(r, (unsigned)dev, s[i].off, s[i].len);
	}
	if (!r->recording)
		r->foreign++;
	pthread_mutex_unlock(&r->lock);
	return 0; /* recorded, never failed */
}

static int snapshot(struct cimage *c, const char *path)
{
	struct stat st;
	int fd, ret = 0;

	c->path = strdup(path);
	if (!c->path)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    st.st_size % DG_PAGE_SIZE) {
		ret = -EINVAL;
		goto out;
	}
	c->size = (uint64_t)st.st_size;
	c->pages = c->size / DG_PAGE_SIZE;
	c->snap = malloc(c->size);
	c->cur = malloc(c->size);
	c->live = calloc((c->pages + 7) / 8, 1);
	c->pend_head = malloc(c->pages * sizeof(uint32_t));
	c->pend_tail = malloc(c->pages * sizeof(uint32_t));
	if (!c->snap || !c->cur || !c->live || !c->pend_head ||
	    !c->pend_tail) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint64_t done = 0; done < c->size;) {
		ssize_t n = pread(fd, c->snap + done, c->size - done,
				  (off_t)done);

		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			goto out;
		}
		done += (uint64_t)n;
	}
	for (uint64_t pg = 0; pg < c->pages; pg++) {
		const uint8_t *b = c->snap + pg * DG_PAGE_SIZE;

		c->pend_head[pg] = c->pend_tail[pg] = NO_PIECE;
		if (b[0] || memcmp(b, b + 1, DG_PAGE_SIZE - 1))
			c->live[pg / 8] |= (uint8_t)(1u << (pg % 8));
	}
out:
	close(fd);
	return ret;
}

struct crec *crec_start(const char *const *paths, unsigned n)
{
	struct crec *r;
	int ret;

	if (active || n == 0 || n > DG_MAX_DEVS) {
		errno = active ? EBUSY : EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	r->n = n;
	r->cur_k = NEVER;
	for (unsigned i = 0; i < n; i++) {
		ret = snapshot(&r->img[i], paths[i]);
		if (ret) {
			crec_free(r);
			errno = -ret;
			return NULL;
		}
	}
	r->obs = (struct dg_media_observer){ obs_write, obs_persist, r,
					    obs_persist_round };
	r->recording = true;
	active = r;
	return r;
}

const struct dg_media_observer *crec_observer(void)
{
	return active ? &active->obs : NULL;
}

struct dg_vol *crec_open_quiet(char **paths, unsigned n, unsigned flags,
			       const int *quiet)
{
	char err[256];
	struct dg_vol *vol = NULL;
	int ret = dg_vol_open_observed((const char *const *)paths, n, flags,
				       crec_observer(), &vol, err, sizeof(err));

	if (ret) {
		while (quiet && *quiet && *quiet != ret)
			quiet++;
		if (!quiet || !*quiet)
			fprintf(stderr, "open: %s\n", err);
		return NULL;
	}
	return vol;
}

struct dg_vol *crec_open(char **paths, unsigned n, unsigned flags)
{
	return crec_open_quiet(paths, n, flags, NULL);
}

void crec_stop(struct crec *r)
{
	if (active != r)
		return;
	pthread_mutex_lock(&r->lock);
	r->recording = false;
	pthread_mutex_unlock(&r->lock);
	active = NULL;
}

void crec_free(struct crec *r)
{
	if (!r)
		return;
	crec_stop(r);
	for (unsigned i = 0; i < r->n; i++) {
		struct cimage *c = &r->img[i];

		free(c->path);
		free(c->snap);
		free(c->cur);
		free(c->live);
		free(c->pend_head);
		free(c->pend_tail);
	}
	for (unsigned i = 0; i < r->nm; i++)
		free((char *)r->m[i].name);
	free(r->m);
	free(r->p);
	free(r->arena);
	free(r->order);
	free(r->order_id);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

unsigned crec_mark(struct crec *r, const char *name)
{
	unsigned idx;

	pthread_mutex_lock(&r->lock);
	if (r->nm == r->capm) {
		unsigned cap = r->capm ? r->capm * 2 : 64;
		void *n = realloc(r->m, cap * sizeof(*r->m));

		if (!n)
			abort();
		r->m = n;
		r->capm = cap;
	}
	idx = r->nm++;
	r->m[idx] = (struct crec_marker){ strdup(name ? name : ""),
					  r->npersists, r->np };
	if (!r->m[idx].name)
		abort();
	pthread_mutex_unlock(&r->lock);
	return idx;
}

unsigned crec_nmarkers(const struct crec *r)
{
	return r->nm;
}

const struct crec_marker *crec_marker(const struct crec *r, unsigned i)
{
	return i < r->nm ? &r->m[i] : NULL;
}

uint64_t crec_npersists(const struct crec *r)
{
	return r->npersists;
}

void crec_counts(const struct crec *r, uint64_t *writes, uint64_t *pieces,
		 uint64_t *foreign)
{
	if (writes)
		*writes = r->nwrites;
	if (pieces)
		*pieces = r->np;
	if (foreign)
		*foreign = r->foreign;
}

const uint8_t *crec_snapshot(const struct crec *r, unsigned dev,
			     uint64_t *size)
{
	if (dev >= r->n)
		return NULL;
	*size = r->img[dev].size;
	return r->img[dev].snap;
}

/* Pieces issued before crash point k are a prefix of the recording. */
static uint32_t issued_before(const struct crec *r, uint64_t k)
{
	uint32_t lo = 0, hi = r->np;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->p[mid].issued <= k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t crec_inflight(struct crec *r, uint64_t k)
{
	uint32_t end = issued_before(r, k);
	uint64_t n = 0;

	for (uint32_t i = 0; i < end; i++)
		if (r->p[i].durable > k)
			n++;
	return n;
}

/* Hash of one applied (piece, bytes): summed, so order-free. */
static void piece_id(uint32_t i, uint32_t len, uint64_t id[2])
{
	uint64_t x = ((uint64_t)i << 16 | len) + 0x9e3779b97f4a7c15ull;

	/* splitmix64 finaliser, twice with different keys */
	for (int h = 0; h < 2; h++) {
		uint64_t z = x ^ (h ? 0xd6e8feb86659fd93ull : 0);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		id[h] += z ^ (z >> 31);
	}
}

static const struct crec *sort_ctx;

static int order_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t dx = sort_ctx->p[x].durable, dy = sort_ctx->p[y].durable;

	if (dx != dy)
		return dx < dy ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * Sorting pieces by the persist that made them durable keeps program
 * order among pieces on one page: a later piece on a page can only
 * become durable at or after an earlier one.
 */
static int make_order(struct crec *r)
{
	if (r->order && r->norder == r->np)
		return 0;
	free(r->order);
	free(r->order_id);
	r->order = malloc((r->np ? r->np : 1) * sizeof(*r->order));
	r->order_id = calloc(r->np + 1, sizeof(*r->order_id));
	if (!r->order || !r->order_id)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->np; i++)
		r->order[i] = i;
	sort_ctx = r;
	qsort(r->order, r->np, sizeof(*r->order), order_cmp);
	for (uint32_t i = 0; i < r->np; i++) {
		r->order_id[i + 1][0] = r->order_id[i][0];
		r->order_id[i + 1][1] = r->order_id[i][1];
		piece_id(r->order[i], r->p[r->order[i]].len,
			 r->order_id[i + 1]);
	}
	r->norder = r->np;
	r->cur_k = NEVER;
	return 0;
}

static void advance(struct crec *r, uint64_t k)
{
	if (r->cur_k == NEVER || k < r->cur_k) {
		for (unsigned i = 0; i < r->n; i++)
			memcpy(r->img[i].cur, r->img[i].snap, r->img[i].size);
		r->applied = 0;
	}
	while (r->applied < r->norder) {
		const struct piece *pc = &r->p[r->order[r->applied]];

		if (pc->durable > k)
			break;
		memcpy(r->img[pc->dev].cur + pc->off, r->arena + pc->data,
		       pc->len);
		r->applied++;
	}
	r->cur_k = k;
}

static bool is_live(const struct cimage *c, uint64_t pg)
{
	return c->live[pg / 8] & (1u << (pg % 8));
}

/* Punch out pages [a, b) of the file that are not live. */
static int punch_dead(const struct cimage *c, int fd, uint64_t a, uint64_t b)
{
	for (uint64_t pg = a; pg < b;) {
		uint64_t end;

		if (is_live(c, pg)) {
			pg++;
			continue;
		}
		for (end = pg + 1; end < b && !is_live(c, end); end++)
			;
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)(pg * DG_PAGE_SIZE),
			      (off_t)((end - pg) * DG_PAGE_SIZE)) < 0)
			return -errno;
		pg = end;
	}
	return 0;
}

/*
 * Make the file at fd (mapped at map) hold c->cur: pages outside the
 * live set must read as zero, so any data there (the engine may have
 * written anything while a previous state was checked) is punched out;
 * live pages are rewritten where they differ. Reusing the file this way
 * costs a compare of the live pages instead of writing them all.
 */
static int sync_image(const struct cimage *c, int fd, uint8_t *map)
{
	off_t off = lseek(fd, 0, SEEK_DATA);
	int ret;

	while (off >= 0 && (uint64_t)off < c->size) {
		off_t end = lseek(fd, off, SEEK_HOLE);

		if (end < 0)
			return -errno;
		ret = punch_dead(c, fd, (uint64_t)off / DG_PAGE_SIZE,
				 ((uint64_t)end + DG_PAGE_SIZE - 1) /
					 DG_PAGE_SIZE);
		if (ret)
			return ret;
		off = lseek(fd, end, SEEK_DATA);
	}
	if (off < 0 && errno != ENXIO)
		return -errno;
	for (uint64_t pg = 0; pg < c->pages; pg++) {
		uint64_t o = pg * DG_PAGE_SIZE;

		if (is_live(c, pg) && memcmp(map + o, c->cur + o, DG_PAGE_SIZE))
			memcpy(map + o, c->cur + o, DG_PAGE_SIZE);
	}
	return 0;
}

/* Bytes of piece pc that reach the media under pol. */
static uint32_t chosen_len(const struct piece *pc, enum crec_policy pol,
			   uint64_t *rs)
{
	uint64_t first, nb, pick;

	switch (pol) {
	case CREC_NONE:
		return 0;
	case CREC_ALL:
		return pc->len;
	case CREC_RANDOM:
		return (xrand(rs) >> 33) & 1 ? pc->len : 0;
	case CREC_TORN:
		/* Boundaries: the start, each 8-byte aligned address
		 * inside, the end. */
		first = (pc->off + 8) & ~7ull;
		nb = first < pc->off + pc->len
			     ? (pc->off + pc->len - 1 - first) / 8 + 1
			     : 0;
		pick = xrand(rs) % (nb + 2);
		if (pick == 0)
			return 0;
		if (pick == nb + 1)
			return pc->len;
		return (uint32_t)(first + (pick - 1) * 8 - pc->off);
	}
	return 0;
}

/* Pieces durable at k: a prefix of order[]. */
static uint32_t durable_count(const struct crec *r, uint64_t k)
{
	uint32_t lo = 0, hi = r->norder;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->p[r->order[mid]].durable <= k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void crec_state_id(struct crec *r, uint64_t k, enum crec_policy pol,
		   uint64_t seed, uint64_t id[2])
{
	uint64_t rs = seed ? seed : 0x9e3779b97f4a7c15ull;
	uint32_t end, nd;

	id[0] = id[1] = 0;
	if (r->recording || k > r->npersists || make_order(r))
		return;
	nd = durable_count(r, k);
	id[0] = r->order_id[nd][0];
	id[1] = r->order_id[nd][1];
	/* The same choices crec_build() makes, in the same order. */
	end = issued_before(r, k);
	for (uint32_t i = 0; i < end; i++) {
		uint32_t len;

		if (r->p[i].durable <= k)
			continue;
		len = chosen_len(&r->p[i], pol, &rs);
		if (len)
			piece_id(i, len, id);
	}
}

int crec_build(struct crec *r, uint64_t k, enum crec_policy pol,
	       uint64_t seed, const char *const *out)
{
	int fds[DG_MAX_DEVS];
	uint8_t *maps[DG_MAX_DEVS];
	uint64_t rs = seed ? seed : 0x9e3779b97f4a7c15ull;
	uint32_t end;
	int ret;

	if (r->recording || k > r->npersists)
		return -EINVAL;
	ret = make_order(r);
	if (ret)
		return ret;
	advance(r, k);
	for (unsigned i = 0; i < r->n; i++) {
		fds[i] = -1;
		maps[i] = MAP_FAILED;
	}
	for (unsigned i = 0; i < r->n; i++) {
		const struct cimage *c = &r->img[i];
		struct stat st;

		fds[i] = open(out[i], O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fds[i] < 0 || fstat(fds[i], &st) < 0) {
			ret = -errno;
			goto out;
		}
		/* A file of another size is started afresh. */
		if ((uint64_t)st.st_size != c->size &&
		    (ftruncate(fds[i], 0) < 0 ||
		     ftruncate(fds[i], (off_t)c->size) < 0)) {
			ret = -errno;
			goto out;
		}
		maps[i] = mmap(NULL, c->size, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fds[i], 0);
		if (maps[i] == MAP_FAILED) {
			ret = -errno;
			goto out;
		}
		ret = sync_image(c, fds[i], maps[i]);
		if (ret)
			goto out;
	}
	/* Non-durable pieces, in program order: a later one over the same
	 * bytes wins when both reached the media. */
	end = issued_before(r, k);
	for (uint32_t i = 0; i < end; i++) {
		const struct piece *pc = &r->p[i];
		uint32_t len;

		if (pc->durable <= k)
			continue;
		len = chosen_len(pc, pol, &rs);
		if (len)
			memcpy(maps[pc->dev] + pc->off, r->arena + pc->data,
			       len);
	}
out:
	for (unsigned i = 0; i < r->n; i++) {
		if (maps[i] != MAP_FAILED)
			munmap(maps[i], r->img[i].size);
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return ret;
}
