// SPDX-License-Identifier: MIT
/* test_scrub_par.c -- the daemon's scrub with threads verifying ahead
 * (dg_vol_scrub_threads(), verify_par.c) finds, reports and repairs
 * what one thread does, in the same order, going as the daemon goes
 * (batches of 32 rows, the threads kept across them): faults at the
 * edges of the blocks and of the threads' batches, in the first and
 * last rows, parity 1 and 2 and parity 1 degraded; a row updated after the threads verified it is checked
 * again, not taken on their word; and with a writer updating rows all
 * along, a healthy volume scrubs clean and reads back what was
 * written. Run by the ThreadSanitizer build too. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"
#include "damaged_rows.h"
#include "volume_i.h"

#define PG DG_PAGE_SIZE
#define C DG_CSUMS_PER_PAGE
#define BATCH 32	/* the daemon's batch of rows (fs/daemon/scrub.c) */

/* What a scrub met, in order, one line a fault event; and its counts. */
struct log {
	char *text;
	size_t len, cap;
	unsigned n;
	struct dg_scrub_report rep;
};

static void add_line(struct log *l, const char *line, size_t n)
{
	if (l->len + n + 1 > l->cap) {
		size_t cap = (l->cap + n + 1) * 2;
		char *t = realloc(l->text, cap);

		if (!t)
			return;
		l->text = t;
		l->cap = cap;
	}
	memcpy(l->text + l->len, line, n + 1);
	l->len += n;
	l->n++;
}

/* The fault events after *seq into l. */
static void take_events(struct dg_vol *vol, uint64_t *seq, struct log *l)
{
	struct dg_fault_event ev[16];
	unsigned n;

	while ((n = dg_vol_fault_events(vol, *seq, ev, 16))) {
		for (unsigned i = 0; i < n; i++) {
			char line[200];
			int len = snprintf(line, sizeof(line),
					   "%d %u %llu %d %s %d %d\n",
					   (int)ev[i].kind, ev[i].dev,
					   (unsigned long long)ev[i].row,
					   (int)ev[i].what, ev[i].action,
					   ev[i].repeat, ev[i].by_scrub);

			*seq = ev[i].seq;
			if (len > 0)
				add_line(l, line, (size_t)len);
		}
	}
}

/* daemon_scrub() halts its threads before the batch from this row on
 * (dg_vol_scrub_threads_halt(), as a pause does); UINT64_MAX: never. */
static uint64_t halt_row = UINT64_MAX;

/* Called between two batches, as the daemon looks at its commands. */
typedef void (*between_fn)(void *arg, uint64_t next_row);

/*
 * A scrub of the whole volume as the daemon's (scrub_main()): batches
 * of BATCH rows, a stretch never written one batch, the threads kept
 * from the first to the last, verifying at most ahead rows past each
 * batch (UINT64_MAX: as far as their batch goes). Every batch's fault
 * events after it. 0, or the first error.
 */
static int daemon_scrub(struct dg_vol *vol, bool repair, unsigned threads,
			uint64_t ahead, struct log *l, between_fn between,
			void *arg)
{
	uint64_t rows = dg_vol_rows(vol), seq = 0;
	struct dg_par *par = dg_vol_scrub_threads(vol, threads);
	struct log opened = { 0 };
	int ret = 0;

	CHECK_EQ(dg_vol_scrub_threads_n(par), threads);
	take_events(vol, &seq, &opened); /* the open's, not the scrub's */
	free(opened.text);
	memset(&l->rep, 0, sizeof(l->rep));
	for (uint64_t row = 0; row < rows && !ret;) {
		uint64_t end = row + BATCH < rows ? row + BATCH : rows;
		uint64_t used = dg_vol_next_used_row(vol, row, rows);
		uint64_t ahead_end = end + ahead < end ? rows : end + ahead;

		if (used > end)
			end = used;
		if (row >= halt_row)
			dg_vol_scrub_threads_halt(par);
		ret = dg_vol_scrub_rows_par(vol, repair, row, end, par,
					    ahead_end, &l->rep);
		take_events(vol, &seq, l);
		row = end;
		if (between)
			between(arg, row);
	}
	dg_vol_scrub_threads_stop(par);
	return ret;
}

/* A fresh open of tv: a lost page met again is a repeat (noted once,
 * fault.c) in the open that met it first, so each scrub compared gets
 * an open of its own. */
static void reopen(struct tvol *tv, struct dg_vol **vol, unsigned flags)
{
	dg_vol_close(*vol);
	*vol = tvol_open(tv, flags);
	REQUIRE(*vol);
}

/* The counts that must not depend on the threads: all but rows_ahead. */
static void same_counts(const struct dg_scrub_report *a,
			const struct dg_scrub_report *b)
{
	CHECK_EQ(a->rows_checked, b->rows_checked);
	CHECK_EQ(a->detected, b->detected);
	CHECK_EQ(a->repaired, b->repaired);
	CHECK_EQ(a->unrecoverable, b->unrecoverable);
	CHECK_EQ(a->parity_mismatch, b->parity_mismatch);
	CHECK_EQ(a->parity_fixed, b->parity_fixed);
}

static void same_text(const struct log *a, const struct log *b,
		      const char *what)
{
	CHECK_EQ(a->n, b->n);
	CHECK(a->text && b->text && !strcmp(a->text, b->text));
	if (!a->text || !b->text || strcmp(a->text, b->text))
		fprintf(stderr, "%s: one thread:\n%s\nthreads:\n%s\n", what,
			a->text, b->text);
}

static void same_findings(const struct tshape *s)
{
	struct tvol tv;
	struct dg_vol *vol = tvol_damaged(&tv, "spar", s, tshape_ro_flags(s));
	struct log one = { 0 }, l;
	uint64_t ahead0 = 0;

	REQUIRE(vol);
	CHECK_EQ(daemon_scrub(vol, false, 1, UINT64_MAX, &one, NULL, NULL),
		 0);
	CHECK(one.n > 8);
	CHECK(one.rep.detected > 4);
	if (s->parity == 1)	/* two pages of a row are beyond it */
		CHECK(one.rep.unrecoverable > 0);
	CHECK_EQ(one.rep.rows_ahead, 0);
	if (getenv("DG_TEST_SHOW"))
		fprintf(stderr, "%u devices, parity %u: %u events, %llu "
			"rows:\n%s", s->ndev, s->parity, one.n,
			(unsigned long long)one.rep.rows_checked, one.text);
	for (unsigned t = 2; t <= 4; t++) {
		memset(&l, 0, sizeof(l));
		reopen(&tv, &vol, tshape_ro_flags(s));
		CHECK_EQ(daemon_scrub(vol, false, t, UINT64_MAX, &l, NULL,
				      NULL), 0);
		same_counts(&one.rep, &l.rep);
		same_text(&one, &l, "ahead unbounded");
		/* The threads' verdicts were taken: every clean row. */
		CHECK(l.rep.rows_ahead > 0);
		if (t == 2)
			ahead0 = l.rep.rows_ahead;
		CHECK_EQ(l.rep.rows_ahead, ahead0);
		free(l.text);
	}
	/* Ahead of a batch by a few rows only (the daemon with a rate):
	 * the same, and the threads' verdicts still taken. */
	memset(&l, 0, sizeof(l));
	reopen(&tv, &vol, tshape_ro_flags(s));
	CHECK_EQ(daemon_scrub(vol, false, 3, 100, &l, NULL, NULL), 0);
	same_counts(&one.rep, &l.rep);
	same_text(&one, &l, "ahead 100 rows");
	CHECK_EQ(l.rep.rows_ahead, ahead0);
	free(l.text);
	/* Halted before the first batch (a pause asked at once): no
	 * verdict of theirs, the same findings from the scrub alone. */
	memset(&l, 0, sizeof(l));
	reopen(&tv, &vol, tshape_ro_flags(s));
	halt_row = 0;
	CHECK_EQ(daemon_scrub(vol, false, 4, UINT64_MAX, &l, NULL, NULL), 0);
	halt_row = UINT64_MAX;
	same_counts(&one.rep, &l.rep);
	same_text(&one, &l, "halted");
	CHECK_EQ(l.rep.rows_ahead, 0);
	free(l.text);
	free(one.text);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_same_findings(void)
{
	for (size_t i = 0; i < TSHAPES; i++)
		same_findings(&tshapes[i]);
}

/* Repairing (a writable mount) too: the same repairs, reported the same,
 * and the next scrub finds the same left (the rows beyond parity). */
static void same_repairs(const struct tshape *s)
{
	struct tvol ta, tb;
	struct dg_vol *a = tvol_damaged(&ta, "spara", s, 0);
	struct dg_vol *b = tvol_damaged(&tb, "sparb", s, 0);
	struct log la = { 0 }, lb = { 0 }, aa = { 0 }, ab = { 0 };

	REQUIRE(a && b);
	CHECK_EQ(daemon_scrub(a, true, 1, UINT64_MAX, &la, NULL, NULL), 0);
	CHECK_EQ(daemon_scrub(b, true, 4, UINT64_MAX, &lb, NULL, NULL), 0);
	CHECK(la.rep.repaired > 8);
	same_counts(&la.rep, &lb.rep);
	same_text(&la, &lb, "repairing");
	reopen(&ta, &a, DG_OPEN_RDONLY);
	reopen(&tb, &b, DG_OPEN_RDONLY);
	CHECK_EQ(daemon_scrub(a, false, 4, UINT64_MAX, &aa, NULL, NULL), 0);
	CHECK_EQ(daemon_scrub(b, false, 1, UINT64_MAX, &ab, NULL, NULL), 0);
	CHECK(aa.rep.detected < la.rep.detected);
	CHECK_EQ(aa.rep.repaired, 0);
	same_counts(&aa.rep, &ab.rep);
	CHECK_EQ(aa.n, ab.n);
	CHECK(!aa.text || (ab.text && !strcmp(aa.text, ab.text)));
	free(la.text);
	free(lb.text);
	free(aa.text);
	free(ab.text);
	dg_vol_close(a);
	dg_vol_close(b);
	tvol_cleanup(&ta);
	tvol_cleanup(&tb);
}

/* The shapes with every device: a degraded volume opens read-only,
 * nothing is repaired. */
static void test_same_repairs(void)
{
	for (size_t i = 0; i < TSHAPES; i++)
		if (tshapes[i].lost < 0)
			same_repairs(&tshapes[i]);
}

/* ---- updates beside the scrub ------------------------------------------ */

/* The rows [z, z + n) of a block boundary, rank 0 of each written, with
 * the seed each page was last written from. */
struct area {
	struct dg_vol *vol;
	uint64_t z, n;
	unsigned k;
	uint64_t *seed;		/* [row - z][rank]: 0 never written */
};

static void area_write(struct area *a, uint64_t row, unsigned rank,
		       uint64_t seed)
{
	uint64_t s = seed;

	a->seed[(row - a->z) * a->k + rank] = seed;
	trow_write(a->vol, row, rank, &s);
}

/* Every page written reads back as it was last written. */
static void area_reads_back(struct area *a)
{
	uint8_t got[PG], want[PG];
	unsigned bad = 0;

	for (uint64_t r = a->z; r < a->z + a->n; r++)
		for (unsigned q = 0; q < a->k; q++) {
			uint64_t s = a->seed[(r - a->z) * a->k + q];
			uint64_t vpn = dg_loc_vpn(a->vol,
				dg_row_data_dev(a->vol, r, q), r);

			if (!s)
				continue;
			trand_fill(&s, want, PG);
			if (dg_read(a->vol, vpn, 1, got) != 0 ||
			    memcmp(got, want, PG))
				bad++;
		}
	CHECK_EQ(bad, 0);
}

static void area_make(struct tvol *tv, struct area *a, const char *tag,
		      uint64_t n)
{
	tvol_make(tv, tag, 4, 1, 24ull << 20, false);
	a->vol = tvol_open(tv, 0);
	REQUIRE(a->vol);
	a->k = 3;
	a->z = tdata_row(a->vol);
	a->z += C - a->z % C;	/* blocks of its own */
	a->n = n;
	REQUIRE(a->z + n <= dg_vol_rows(a->vol));
	a->seed = calloc(n * a->k, sizeof(*a->seed));
	REQUIRE(a->seed);
	for (uint64_t r = a->z; r < a->z + n; r++)
		area_write(a, r, 0, 1000 + r);
}

static void area_free(struct tvol *tv, struct area *a)
{
	free(a->seed);
	dg_vol_close(a->vol);
	tvol_cleanup(tv);
}

/* Between two batches: a row the threads verified ahead, not yet
 * scrubbed, is updated (once). */
struct later {
	struct area *a;
	uint64_t row;
	bool done;
};

static void update_ahead(void *arg, uint64_t next_row)
{
	struct later *u = arg;

	if (u->done || next_row <= u->a->z)
		return;
	u->done = true;
	u->row = next_row + 100;
	area_write(u->a, u->row, 0, 77);
}

static void test_updated_ahead_checked_again(void)
{
	struct tvol tv;
	struct area a;
	struct later u = { &a, 0, false };
	struct log l = { 0 };
	uint64_t rows;

	area_make(&tv, &a, "sparupd", 3 * C);
	/* Without an update, every row written (the area's, the metadata
	 * zone's) from the threads. */
	CHECK_EQ(daemon_scrub(a.vol, true, 3, UINT64_MAX, &l, NULL, NULL),
		 0);
	rows = l.rep.rows_checked;
	CHECK(rows > a.n);
	CHECK_EQ(l.rep.rows_ahead, rows);
	CHECK_EQ(l.n, 0);
	free(l.text);
	memset(&l, 0, sizeof(l));
	/* One updated after they verified it: checksums other than
	 * theirs, so the scrub checks it itself and finds it right. */
	CHECK_EQ(daemon_scrub(a.vol, true, 3, UINT64_MAX, &l, update_ahead,
			      &u), 0);
	CHECK(u.done);
	CHECK(u.row < a.z + a.n);
	CHECK_EQ(l.rep.rows_checked, rows);
	CHECK_EQ(l.rep.rows_ahead, rows - 1);
	CHECK_EQ(l.rep.detected, 0);
	CHECK_EQ(l.rep.parity_mismatch, 0);
	CHECK_EQ(l.n, 0);
	free(l.text);
	area_reads_back(&a);
	SCRUB_CLEAN(a.vol, false);
	area_free(&tv, &a);
}

/* A halt (pause, cancel, unmount) stops the threads at once: no row is
 * verified ahead past it, each row then checked by the scrub itself, and
 * nothing is found that is not there. */
static void test_halt_stops_the_threads(void)
{
	struct tvol tv;
	struct area a;
	struct log l = { 0 };
	uint64_t rows, h, past;

	area_make(&tv, &a, "sparhalt", 3 * C);
	/* Ahead by 100 rows (the daemon with a rate): every written row
	 * from the threads. */
	CHECK_EQ(daemon_scrub(a.vol, true, 4, 100, &l, NULL, NULL), 0);
	rows = l.rep.rows_checked;
	CHECK(rows > a.n);
	CHECK_EQ(l.rep.rows_ahead, rows);
	free(l.text);
	/* Halted a block into the area: the threads went at most 100 rows
	 * past the batch before the halt, so the area's rows from h + BATCH
	 * + 100 on were all the scrub's own. */
	h = a.z + C;
	past = a.z + a.n - (h + BATCH + 100);
	memset(&l, 0, sizeof(l));
	halt_row = h;
	CHECK_EQ(daemon_scrub(a.vol, true, 4, 100, &l, NULL, NULL), 0);
	halt_row = UINT64_MAX;
	CHECK_EQ(l.rep.rows_checked, rows);
	CHECK(l.rep.rows_ahead > 0);
	CHECK(l.rep.rows_ahead <= rows - past);
	CHECK_EQ(l.rep.detected, 0);
	CHECK_EQ(l.rep.parity_mismatch, 0);
	CHECK_EQ(l.n, 0);
	free(l.text);
	/* Unbounded ahead (one batch of theirs covers the volume) and
	 * halted before it: none at all. */
	memset(&l, 0, sizeof(l));
	halt_row = 0;
	CHECK_EQ(daemon_scrub(a.vol, true, 4, UINT64_MAX, &l, NULL, NULL),
		 0);
	halt_row = UINT64_MAX;
	CHECK_EQ(l.rep.rows_checked, rows);
	CHECK_EQ(l.rep.rows_ahead, 0);
	CHECK_EQ(l.n, 0);
	free(l.text);
	area_reads_back(&a);
	SCRUB_CLEAN(a.vol, false);
	area_free(&tv, &a);
}

/* A writer updating pages of the area, at random, until told to stop. */
struct writer {
	struct area *a;
	atomic_bool stop;
	_Atomic uint64_t writes;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t rnd = 12345;

	while (!atomic_load(&w->stop)) {
		uint64_t row = w->a->z + trand(&rnd) % w->a->n;
		unsigned rank = (unsigned)(trand(&rnd) % w->a->k);

		area_write(w->a, row, rank, (trand(&rnd) | 1));
		w->writes++;
	}
	return NULL;
}

static void test_writer_beside_threads(void)
{
	struct tvol tv;
	struct area a;
	struct writer w;
	pthread_t tid;
	uint64_t before[DG_FAULT_NR], after[DG_FAULT_NR], ahead = 0;

	area_make(&tv, &a, "sparwr", 4 * C);
	w.a = &a;
	atomic_init(&w.writes, 0);
	atomic_init(&w.stop, false);
	dg_vol_fault_counts(a.vol, before);
	REQUIRE(pthread_create(&tid, NULL, writer_main, &w) == 0);
	/* Scrubs, repairing as the daemon's do, until the writer has
	 * written a good many pages beside them (at least three). */
	for (unsigned pass = 0; pass < 3 || (w.writes < 2000 && pass < 40);
	     pass++) {
		struct log l = { 0 };

		CHECK_EQ(daemon_scrub(a.vol, true, 3, UINT64_MAX, &l, NULL,
				      NULL), 0);
		CHECK_EQ(l.rep.detected, 0);
		CHECK_EQ(l.rep.unrecoverable, 0);
		CHECK_EQ(l.rep.parity_mismatch, 0);
		CHECK(l.rep.rows_checked >= a.n);
		CHECK_EQ(l.n, 0);
		if (l.n)
			fprintf(stderr, "pass %u met:\n%s", pass, l.text);
		ahead += l.rep.rows_ahead;
		free(l.text);
	}
	atomic_store(&w.stop, true);
	pthread_join(tid, NULL);
	if (getenv("DG_TEST_SHOW"))
		fprintf(stderr, "%llu pages written beside the scrubs, %llu "
			"rows verified ahead\n",
			(unsigned long long)atomic_load(&w.writes),
			(unsigned long long)ahead);
	dg_vol_fault_counts(a.vol, after);
	CHECK(!memcmp(before, after, sizeof(before)));
	CHECK(w.writes > 0);
	CHECK(ahead > 0);
	area_reads_back(&a);
	SCRUB_CLEAN(a.vol, false);
	area_free(&tv, &a);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "same_findings", test_same_findings },
		{ "same_repairs", test_same_repairs },
		{ "updated_ahead_checked_again",
		  test_updated_ahead_checked_again },
		{ "halt_stops_the_threads", test_halt_stops_the_threads },
		{ "writer_beside_threads", test_writer_beside_threads },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
