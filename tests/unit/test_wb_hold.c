// SPDX-License-Identifier: MIT
/* test_wb_hold.c -- the write-back hold (fs/daemon/wb_hold.c) against a
 * stand-in for the engine: a byte array per file */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wb_hold.h"

#define FILES 4
#define FSIZE (1u << 20)

static int fails;
#define CHECK(c)                                                          \
	do {                                                              \
		if (!(c)) {                                               \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, \
				#c);                                      \
			fails++;                                          \
		}                                                         \
	} while (0)

/* What the "engine" holds, and what it was asked to do. */
struct media {
	pthread_mutex_t lock;
	uint8_t file[FILES][FSIZE];
	unsigned calls, runs;
	int fail_next;		/* error for the next commit */
	bool bad_order;		/* runs not sorted or overlapping */
};

static int commit(void *arg, uint64_t ino, const struct dg_wseg *seg,
		  unsigned n, unsigned requests)
{
	struct media *m = arg;
	int ret;

	(void)requests;
	pthread_mutex_lock(&m->lock);
	m->calls++;
	m->runs += n;
	ret = m->fail_next;
	m->fail_next = 0;
	for (unsigned i = 0; !ret && i < n; i++) {
		if (i && seg[i].off <= seg[i - 1].off + seg[i - 1].len)
			m->bad_order = true;
		memcpy(m->file[ino] + seg[i].off, seg[i].buf, seg[i].len);
	}
	pthread_mutex_unlock(&m->lock);
	return ret;
}

static struct media m = { .lock = PTHREAD_MUTEX_INITIALIZER };
static uint8_t want[FILES][FSIZE];

/* Random writes of random sizes, every byte kept in want too: after a
 * drain the media must equal want, whatever the overlaps were. */
static void test_merge(void)
{
	struct dg_wb wb;
	uint8_t buf[70000];
	unsigned seed = 7;

	dg_wb_init(&wb, 64u << 20, 1000, commit, &m);
	for (int i = 0; i < 5000; i++) {
		uint64_t ino = (unsigned)rand_r(&seed) % FILES;
		size_t len = 1 + (unsigned)rand_r(&seed) % (i % 10 ? 9000 : 70000);
		uint64_t off = (unsigned)rand_r(&seed) % (FSIZE - len);

		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)rand_r(&seed);
		CHECK(dg_wb_put(&wb, ino, off, buf, len) == 0);
		memcpy(want[ino] + off, buf, len);
		CHECK(dg_wb_end(&wb, ino) >= off + len);
	}
	for (uint64_t ino = 0; ino < FILES; ino++) {
		unsigned calls = m.calls;

		CHECK(dg_wb_holds(&wb, ino));
		CHECK(dg_wb_drain(&wb, ino, true) == 0);
		CHECK(m.calls == calls + 1); /* one engine call a file */
		CHECK(!dg_wb_holds(&wb, ino));
		CHECK(memcmp(m.file[ino], want[ino], FSIZE) == 0);
	}
	CHECK(!m.bad_order);
	CHECK(dg_wb_stop(&wb) == 0);
	dg_wb_destroy(&wb);
}

/* Never more than max held; a write larger than max is refused. */
static void test_bound(void)
{
	struct dg_wb wb;
	static uint8_t buf[256 << 10];
	struct dg_wb_counts c;

	dg_wb_init(&wb, 1u << 20, 1000, commit, &m);
	for (int i = 0; i < 64; i++) {
		memset(buf, i, sizeof(buf));
		CHECK(dg_wb_put(&wb, (unsigned)i % FILES,
				(uint64_t)(i / FILES) * sizeof(buf) % FSIZE,
				buf, sizeof(buf)) == 0);
		dg_wb_get_counts(&wb, &c);
		CHECK(c.held <= c.max);
	}
	CHECK(dg_wb_put(&wb, 0, 0, buf, 0) == 0);
	{
		uint8_t *big = calloc(1, (1u << 20) + 1);

		CHECK(dg_wb_put(&wb, 0, 0, big, (1u << 20) + 1) == -E2BIG);
		free(big);
	}
	dg_wb_get_counts(&wb, &c);
	CHECK(c.held_peak <= c.max);
	CHECK(c.batches > 0);
	CHECK(dg_wb_stop(&wb) == 0);
	dg_wb_destroy(&wb);
}

/* The buffers, not only the bytes in them, stay within max (plus a
 * page): appends that grow a run by doubling once took up to twice max.
 * Nothing is left counted once all is committed. */
static void test_alloc_bound(void)
{
	const size_t max = (768u << 10) + 4096;
	static uint8_t buf[4096];
	struct dg_wb_counts c;
	struct dg_wb wb;
	unsigned seed = 7;

	dg_wb_init(&wb, max, 1000, commit, &m);
	/* Appends to one file, then to several at once. */
	for (unsigned i = 0; i < 4 * FSIZE / sizeof(buf); i++) {
		unsigned ino = i < FSIZE / sizeof(buf) ? 0 : i % FILES;
		uint64_t off = (uint64_t)(i / (ino ? FILES : 1)) * sizeof(buf);

		memset(buf, (int)i, sizeof(buf));
		CHECK(dg_wb_put(&wb, ino, off % FSIZE, buf, sizeof(buf)) == 0);
		dg_wb_get_counts(&wb, &c);
		CHECK(c.alloc >= c.held && c.alloc <= max + 4096);
	}
	/* Scattered writes that merge runs. */
	for (unsigned i = 0; i < 2000; i++) {
		size_t len = 1 + rand_r(&seed) % sizeof(buf);
		uint64_t off = rand_r(&seed) % (FSIZE - len);

		CHECK(dg_wb_put(&wb, rand_r(&seed) % FILES, off, buf, len) == 0);
		dg_wb_get_counts(&wb, &c);
		CHECK(c.alloc >= c.held && c.alloc <= max + 4096);
	}
	CHECK(dg_wb_drain_all(&wb) == 0);
	dg_wb_get_counts(&wb, &c);
	CHECK(c.alloc_peak <= max + 4096);
	CHECK(c.alloc_peak >= max / 2);	/* the hold was used */
	CHECK(c.alloc == 0 && c.held == 0);
	CHECK(dg_wb_stop(&wb) == 0);
	dg_wb_destroy(&wb);
}

/* A failed batch is told once: at the next fsync (drain with take_err)
 * or flush, not lost and not repeated. */
static void test_error(void)
{
	struct dg_wb wb;
	uint8_t b[100] = { 1 };

	dg_wb_init(&wb, 1u << 20, 1000, commit, &m);
	CHECK(dg_wb_put(&wb, 1, 0, b, sizeof(b)) == 0);
	m.fail_next = -ENOSPC;
	/* A read's drain: the error is kept. */
	CHECK(dg_wb_drain(&wb, 1, false) == -ENOSPC);
	CHECK(dg_wb_take_err(&wb, 2) == 0);
	CHECK(dg_wb_drain(&wb, 1, true) == -ENOSPC);
	CHECK(dg_wb_drain(&wb, 1, true) == 0);
	CHECK(dg_wb_put(&wb, 1, 0, b, sizeof(b)) == 0);
	m.fail_next = -EIO;
	CHECK(dg_wb_drain_all(&wb) == -EIO);
	/* A close tells it and keeps it for the writer's fsync. */
	CHECK(dg_wb_peek_err(&wb, 1) == -EIO);
	CHECK(dg_wb_peek_err(&wb, 1) == -EIO);
	CHECK(dg_wb_take_err(&wb, 1) == -EIO);
	CHECK(dg_wb_take_err(&wb, 1) == 0);
	CHECK(dg_wb_peek_err(&wb, 1) == 0);
	/* daxguard-ctl sync: what each file held, committed. */
	CHECK(dg_wb_put(&wb, 1, 0, b, sizeof(b)) == 0);
	CHECK(dg_wb_put(&wb, 3, 0, b, sizeof(b)) == 0);
	CHECK(dg_wb_sync(&wb) == 0);
	CHECK(!dg_wb_holds(&wb, 1) && !dg_wb_holds(&wb, 3));
	CHECK(dg_wb_stop(&wb) == 0);
	dg_wb_destroy(&wb);
}

/* A freed file's error is dropped with it (the daemon's forget), but
 * not a later one: that is of a new file reusing the number, which may
 * fail a batch between the free and the drop. */
static void test_error_of_a_freed_file(void)
{
	struct dg_wb wb;
	uint8_t b[100] = { 1 };
	uint64_t epoch;

	dg_wb_init(&wb, 1u << 20, 1000, commit, &m);
	CHECK(dg_wb_put(&wb, 1, 0, b, sizeof(b)) == 0);
	m.fail_next = -ENOSPC;
	CHECK(dg_wb_drain(&wb, 1, false) == -ENOSPC);
	epoch = dg_wb_epoch(&wb);	/* the old file's last batch ended */
	dg_wb_forget_err(&wb, 1, epoch);
	CHECK(!dg_wb_knows(&wb, 1));
	CHECK(dg_wb_take_err(&wb, 1) == 0);
	/* Freed (the stamp taken), then the number reused by a new file
	 * whose batch fails before the drop: its error stays. */
	epoch = dg_wb_epoch(&wb);
	CHECK(dg_wb_put(&wb, 1, 0, b, sizeof(b)) == 0);
	m.fail_next = -EIO;
	CHECK(dg_wb_drain(&wb, 1, false) == -EIO);
	dg_wb_forget_err(&wb, 1, epoch);
	CHECK(dg_wb_take_err(&wb, 1) == -EIO);
	CHECK(dg_wb_stop(&wb) == 0);
	dg_wb_destroy(&wb);
}

/* Writers, drains and the flusher at once (for ThreadSanitizer); each
 * writer owns its file, so the end state is known. */
struct writer {
	struct dg_wb *wb;
	uint64_t ino;
};

static void *write_main(void *arg)
{
	struct writer *w = arg;
	uint8_t buf[4096];

	for (unsigned i = 0; i < 2000; i++) {
		uint64_t off = (uint64_t)(i * 7919u % 256u) * sizeof(buf);

		memset(buf, (int)(i & 0xff), sizeof(buf));
		CHECK(dg_wb_put(w->wb, w->ino, off, buf, sizeof(buf)) == 0);
		memcpy(want[w->ino] + off, buf, sizeof(buf));
		if (i % 300 == 0)
			CHECK(dg_wb_drain(w->wb, w->ino, true) == 0);
	}
	return NULL;
}

static void test_threads(void)
{
	struct dg_wb wb;
	pthread_t t[FILES];
	struct writer w[FILES];
	struct dg_wb_counts c;

	dg_wb_init(&wb, 256u << 10, 1, commit, &m);
	CHECK(dg_wb_start(&wb) == 0);
	for (unsigned i = 0; i < FILES; i++) {
		w[i] = (struct writer){ &wb, i };
		pthread_create(&t[i], NULL, write_main, &w[i]);
	}
	for (unsigned i = 0; i < FILES; i++)
		pthread_join(t[i], NULL);
	dg_wb_get_counts(&wb, &c);
	CHECK(c.held_peak <= c.max);
	CHECK(dg_wb_stop(&wb) == 0);
	dg_wb_destroy(&wb);
	for (unsigned i = 0; i < FILES; i++)
		CHECK(memcmp(m.file[i], want[i], FSIZE) == 0);
}

int main(void)
{
	test_merge();
	test_bound();
	test_alloc_bound();
	test_error();
	test_error_of_a_freed_file();
	test_threads();
	if (fails)
		fprintf(stderr, "%d checks failed\n", fails);
	return fails ? 1 : 0;
}
