// SPDX-License-Identifier: MIT
/* test_check_par.c -- fsck's page pass with threads (verify_par.c)
 * finds, reports and repairs exactly what one thread does, in the same
 * order: faults in different blocks and batches of rows, at the edges
 * of the ranges the threads share out (a batch's first and last row, a
 * block's), in the first row of the pass and the volume's last row;
 * and the online pass sees a checksum page change under it; parity 1
 * and 2, and parity 1 with a device gone (opened degraded) */
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

/* What a pass reported, in order, one line a finding. */
struct log {
	char *text;
	size_t len, cap;
	unsigned n;
};

static void on_event(void *arg, const struct dg_chk_event *ev)
{
	struct log *l = arg;
	char line[512];
	int n = snprintf(line, sizeof(line), "%d %d %lld %lld %d %d %s|%s\n",
			 (int)ev->kind, ev->dev, (long long)ev->page,
			 (long long)ev->vpn, ev->fixed, ev->fixable,
			 ev->detail, ev->action);

	if (n < 0)
		return;
	if (l->len + (size_t)n + 1 > l->cap) {
		size_t cap = (l->cap + (size_t)n + 1) * 2;
		char *t = realloc(l->text, cap);

		if (!t)
			return;
		l->text = t;
		l->cap = cap;
	}
	memcpy(l->text + l->len, line, (size_t)n + 1);
	l->len += (size_t)n;
	l->n++;
}

/* One pass with threads threads on a fresh open (a pass reports what
 * its open met too). */
static struct dg_chk_stats last_st;	/* the last pass()'s */

static int pass(struct tvol *tv, struct dg_vol **vol, unsigned flags,
		bool repair, unsigned threads, struct log *l)
{
	struct dg_chk_stats st = { 0 };
	int ret;

	dg_vol_close(*vol);
	*vol = tvol_open(tv, flags);
	if (!*vol)
		return -1;
	dg_vol_set_check_threads(*vol, threads);
	ret = dg_check_redundancy(*vol, repair, on_event, l, NULL, NULL, &st);
	last_st = st;
	return ret ? ret : (int)st.unrecoverable;
}

static bool has_page(const struct log *l, unsigned dev, uint64_t page)
{
	char key[64];

	snprintf(key, sizeof(key), " %u %llu ", dev,
		 (unsigned long long)page);
	return l->text && strstr(l->text, key);
}

static void same_findings(const struct tshape *s)
{
	struct tvol tv;
	struct dg_vol *vol = tvol_damaged(&tv, "parn", s, tshape_ro_flags(s));
	struct log one = { 0 }, l;
	uint64_t rows, first, in_place;
	int u1, dev;

	REQUIRE(vol);
	rows = dg_vol_rows(vol);
	first = dg_cmap_next_row(vol, 0, rows);
	u1 = pass(&tv, &vol, tshape_ro_flags(s), false, 1, &one);
	REQUIRE(vol);
	if (s->parity == 1)	/* two pages of a row are beyond it */
		CHECK(u1 > 0);
	CHECK(one.n > 8);
	/* One thread: none verified ahead, the clean rows in place. */
	CHECK_EQ(last_st.rows_ahead, 0);
	in_place = last_st.rows_in_place;
	CHECK(in_place > 0);
	if (getenv("DG_TEST_SHOW"))
		fprintf(stderr, "%u devices, parity %u, lost %d: %u findings, "
			"%d unrecoverable, %llu rows in place:\n%s", s->ndev,
			s->parity, s->lost, one.n, u1,
			(unsigned long long)last_st.rows_in_place, one.text);
	/* The range's edges: the first row of the pass, the last row. */
	/* (A page of the device removed is not read, nor reported.) */
	dev = dg_row_parity_dev(vol, first, 0);
	CHECK(dev == s->lost || has_page(&one, dev, dg_row_page(vol, first)));
	dev = dg_row_data_dev(vol, rows - 1, 0);
	CHECK(dev == s->lost ||
	      has_page(&one, dev, dg_row_page(vol, rows - 1)));
	for (unsigned t = 2; t <= 4; t++) {
		memset(&l, 0, sizeof(l));
		CHECK_EQ(pass(&tv, &vol, tshape_ro_flags(s), false, t, &l), u1);
		REQUIRE(vol);
		/* The workers' verdicts were used: the same rows clean. */
		CHECK_EQ(last_st.rows_ahead, in_place);
		CHECK_EQ(l.n, one.n);
		CHECK(l.text && one.text && !strcmp(l.text, one.text));
		if (!l.text || !one.text || strcmp(l.text, one.text))
			fprintf(stderr, "threads 1:\n%s\nthreads %u:\n%s\n",
				one.text, t, l.text);
		free(l.text);
	}
	free(one.text);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_same_findings(void)
{
	for (size_t i = 0; i < TSHAPES; i++)
		same_findings(&tshapes[i]);
}

/* Repairing (fsck -y) too: the same repairs, reported the same, and
 * the next pass finds the same left (the pages beyond parity). */
static void same_repairs(const struct tshape *s)
{
	struct tvol ta, tb;
	struct dg_vol *a = tvol_damaged(&ta, "parya", s, tshape_ro_flags(s));
	struct dg_vol *b = tvol_damaged(&tb, "paryb", s, tshape_ro_flags(s));
	struct log la = { 0 }, lb = { 0 }, aa = { 0 }, ab = { 0 };

	REQUIRE(a && b);
	CHECK_EQ(pass(&ta, &a, 0, true, 1, &la),
		 pass(&tb, &b, 0, true, 4, &lb));
	REQUIRE(a && b);
	CHECK(la.n > 8);
	CHECK(la.text && lb.text && !strcmp(la.text, lb.text));
	CHECK_EQ(pass(&ta, &a, tshape_ro_flags(s), false, 4, &aa),
		 pass(&tb, &b, tshape_ro_flags(s), false, 1, &ab));
	REQUIRE(a && b);
	CHECK(aa.n < la.n);
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

/* The online pass (the scrub) keeps a checksum page while every copy
 * is at its generation (dg_csum_cursor_current()): an update of a
 * later row of the block between two rows of the pass must be seen,
 * not judged by the checksum looked up before it. */
struct upd {
	struct dg_vol *vol;
	uint64_t row, seed;
	unsigned calls;
};

static void update_later_row(void *arg)
{
	struct upd *u = arg;

	if (u->calls++ == 1) /* after the pass's second row */
		trow_write(u->vol, u->row, 0, &u->seed);
}

static void test_online_pass_sees_updates(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t seed = 9, z, before[DG_FAULT_NR], after[DG_FAULT_NR];
	struct upd u = { 0 };
	struct dg_row_pass p = { .after = update_later_row, .arg = &u,
				 .rows_only = true };

	tvol_make(&tv, "paronl", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	z = tdata_row(vol);
	z += C - z % C;		/* a block of its own */
	REQUIRE(z + 40 < dg_vol_rows(vol));
	for (uint64_t r = z; r < z + 40; r++)
		trow_write(vol, r, 0, &seed);
	u = (struct upd){ vol, z + 30, 77, 0 };
	p.first = z;
	p.end = z + 40;
	dg_vol_fault_counts(vol, before);
	CHECK_EQ(dg_vol_pass_rows(vol, &p), 0);
	dg_vol_fault_counts(vol, after);
	CHECK(u.calls >= 40);
	CHECK(!memcmp(before, after, sizeof(before)));
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "same_findings", test_same_findings },
		{ "same_repairs", test_same_repairs },
		{ "online_pass_sees_updates", test_online_pass_sees_updates },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
