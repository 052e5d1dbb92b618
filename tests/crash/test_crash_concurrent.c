// SPDX-License-Identifier: MIT
/* test_crash_concurrent.c -- crash states of updates whose journal
 * entries are written side by side */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "recorder.h"
#include "volume_i.h"

/*
 * Concurrent appends reserve their place in the journal under its lock
 * and write their entries without it (journal.c), and the entries
 * stored meanwhile are persisted in one round (group commit), so entry
 * N + 1 may be whole while entry N is still being written, or torn by
 * a crash in their shared round; an update writes in place only once
 * every entry before its own is durable. The
 * run, on 4 devices with parity 1: NTHR threads, each NUPD updates one
 * after another, each update a whole page and a few bytes of another
 * (a parity patch) of the thread's own. The observer the volume writes
 * through hands each write to the recorder and now and then sleeps, so
 * that entries overtake each other. At every persist point, under every
 * policy for the writes not yet durable, the images are rebuilt and
 * opened (journal replay), and for each thread:
 *   (a) its updates that hold are a prefix of its sequence (an update
 *       starts when the one before returned, so its entry comes later),
 *       both pages of each all or nothing, at least as many as had
 *       returned;
 *   (b) nothing met by the replay or the reads is a data or parity
 *       fault, a second open reads the same, and every 4th state a
 *       scrub finds nothing.
 * Why the entries appended after such a replay are numbered afresh:
 * test_journal.c, whole_entry_after_torn_one.
 */

#define NDEV	4u
#define NTHR	4u
#define NUPD	10u
#define BASE	64u
#define STRIDE	64u	/* pages per thread */
#define PART_OFF 1000u
#define PART_LEN 48u

/* CRASH_STRIDE=n: check every n-th crash point only, and the last
 * (scripts/test.sh under ThreadSanitizer: what it watches is the
 * recorded run's threads, not the replays of the states). */
static uint64_t crash_stride(void)
{
	const char *v = getenv("CRASH_STRIDE");
	long n = v ? strtol(v, NULL, 0) : 1;

	return n < 1 ? 1 : (uint64_t)n;
}

static const enum crec_policy pols[] = { CREC_NONE, CREC_ALL, CREC_RANDOM,
					 CREC_TORN };
static const char *const pol_names[] = { "none", "all", "random", "torn" };

static __thread unsigned writes_here;

static void slow_write(void *arg, const char *path, uint64_t off,
		       const void *src, size_t len)
{
	const struct dg_media_observer *o = crec_observer();

	(void)arg;
	if (o)
		o->write(o->arg, path, off, src, len);
	/* Let another thread's entry get ahead of this one's. */
	if (++writes_here % 3 == 0)
		usleep(50);
}

static int slow_persist(void *arg, const char *path, uint64_t off,
			size_t len)
{
	const struct dg_media_observer *o = crec_observer();

	(void)arg;
	return o ? o->persist(o->arg, path, off, len) : 0;
}

static int slow_round(void *arg, const struct dg_obs_span *s, unsigned n)
{
	const struct dg_media_observer *o = crec_observer();

	(void)arg;
	return o ? o->persist_round(o->arg, s, n) : 0;
}

static const struct dg_media_observer slow = { slow_write, slow_persist,
					       NULL, slow_round };

/* Update i of thread t: page 2i whole, PART_LEN bytes of page 2i + 1. */
static uint64_t vpn_of(unsigned t, unsigned i, unsigned which)
{
	return BASE + t * STRIDE + 2 * i + which;
}

static uint8_t byte_of(unsigned t, unsigned i)
{
	return (uint8_t)(0x10 + t * NUPD + i);
}

struct worker {
	struct dg_vol *vol;
	struct crec *rec;
	unsigned t;
	unsigned marks[NUPD];
	int err;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint8_t page[DG_PAGE_SIZE], part[PART_LEN];

	for (unsigned i = 0; i < NUPD && !w->err; i++) {
		struct dg_range r[2] = {
			{ vpn_of(w->t, i, 0), 0, DG_PAGE_SIZE, page },
			{ vpn_of(w->t, i, 1), PART_OFF, PART_LEN, part },
		};

		memset(page, byte_of(w->t, i), sizeof(page));
		memset(part, byte_of(w->t, i), sizeof(part));
		w->err = dg_apply(w->vol, r, 2);
		w->marks[i] = crec_mark(w->rec, "update returned");
	}
	return NULL;
}

/* How many of thread t's updates the volume holds: -1 when they are
 * not a prefix or an update is there in part. */
static int updates_held(struct dg_vol *vol, unsigned t, const uint8_t *old)
{
	uint8_t buf[2 * DG_PAGE_SIZE];
	int held = 0;

	for (unsigned i = 0; i < NUPD; i++) {
		const uint8_t *o = old + (size_t)(t * STRIDE + 2 * i) *
						 DG_PAGE_SIZE;
		uint8_t want[DG_PAGE_SIZE];
		bool whole_new, part_new;

		if (dg_read(vol, vpn_of(t, i, 0), 2, buf))
			return -1;
		memset(want, byte_of(t, i), sizeof(want));
		whole_new = !memcmp(buf, want, DG_PAGE_SIZE);
		part_new = !memcmp(buf + DG_PAGE_SIZE + PART_OFF, want,
				   PART_LEN);
		if (!whole_new && memcmp(buf, o, DG_PAGE_SIZE))
			return -1;	/* neither old nor new */
		if (!part_new && memcmp(buf + DG_PAGE_SIZE, o + DG_PAGE_SIZE,
					DG_PAGE_SIZE))
			return -1;
		if (whole_new != part_new || (whole_new && held != (int)i))
			return -1;
		held += whole_new;
	}
	return held;
}

/* The updates each thread's pages hold; false when (a) or (b) fails. */
static bool look(char **paths, const uint8_t *old, int *held, bool scrub)
{
	static struct dg_fault_event ev[DG_FAULT_RING];
	struct dg_vol *vol = crec_open(paths, NDEV, 0);
	bool ok = true;
	unsigned n;

	if (!vol)
		return false;
	for (unsigned t = 0; t < NTHR; t++)
		ok &= (held[t] = updates_held(vol, t, old)) >= 0;
	n = dg_vol_fault_events(vol, 0, ev, DG_FAULT_RING);
	for (unsigned i = 0; i < n; i++)
		if (ev[i].what == DG_WHAT_DATA || ev[i].what == DG_WHAT_PARITY)
			ok = false;
	if (scrub) {
		struct dg_scrub_report sr;

		if (dg_vol_scrub(vol, false, &sr, NULL, NULL) || sr.detected ||
		    sr.parity_mismatch || sr.unrecoverable)
			ok = false;
	}
	dg_vol_close(vol);
	return ok;
}

/*
 * Fill tv's pages with old, then record NTHR threads updating them side
 * by side; the recording in *recp, the workers' marks in w, and in
 * *waited how many journal appends waited for an earlier entry (entries
 * that overtook each other); -1 when the run could not be made.
 */
static void record_run(struct tvol *tv, const uint8_t *old,
		       struct worker *w, struct crec **recp, int64_t *waited)
{
	struct dg_vol *vol;
	struct dg_vol_info in0, in1;
	pthread_t th[NTHR];
	char err[256];

	*waited = -1;
	vol = tvol_open(tv, 0);
	REQUIRE(vol);
	for (unsigned v = 0; v < NTHR * STRIDE; v += 32) {
		struct dg_range r[32];

		for (unsigned i = 0; i < 32; i++)
			r[i] = (struct dg_range){
				BASE + v + i, 0, DG_PAGE_SIZE,
				old + (size_t)(v + i) * DG_PAGE_SIZE };
		REQUIRE(dg_apply(vol, r, 32) == 0);
	}
	dg_vol_close(vol);

	*recp = crec_start((const char *const *)tv->paths, NDEV);
	REQUIRE(*recp);
	REQUIRE(dg_vol_open_observed((const char *const *)tv->paths, NDEV, 0,
				     &slow, &vol, err, sizeof(err)) == 0);
	dg_vol_get_info(vol, &in0);
	for (unsigned t = 0; t < NTHR; t++) {
		w[t] = (struct worker){ .vol = vol, .rec = *recp, .t = t };
		REQUIRE(pthread_create(&th[t], NULL, work, &w[t]) == 0);
	}
	for (unsigned t = 0; t < NTHR; t++) {
		pthread_join(th[t], NULL);
		CHECK_EQ(w[t].err, 0);
	}
	dg_vol_get_info(vol, &in1);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	crec_stop(*recp);
	/* Overtaking: an entry durable before an earlier one (an append
	 * waited), or entries of several threads in one round (group
	 * commit), where a crash may keep a later one whole and tear an
	 * earlier one. */
	*waited = (int64_t)(in1.appends_waited - in0.appends_waited +
			    in1.appends_grouped - in0.appends_grouped);
}

static void test_concurrent_states(void)
{
	struct tvol tv, out;
	struct worker w[NTHR];
	struct crec *rec = NULL;
	size_t span = (size_t)NTHR * STRIDE * DG_PAGE_SIZE;
	uint8_t *old = malloc(span);
	uint64_t seed = 7, K, seen_mixed = 0;
	int64_t waited = 0;
	unsigned checked = 0, runs;

	REQUIRE(old);
	trand_fill(&seed, old, span);
	tvol_make(&out, "crconcout", NDEV, 1, 16ull << 20, false);
	/* Entries must overtake each other, or the run proves nothing. The
	 * threads' interleaving is the scheduler's: on a loaded machine (or
	 * under a sanitizer) a run may go by without it, so record again,
	 * a few times at most. */
	for (runs = 1; runs <= 8; runs++) {
		tvol_make(&tv, "crconc", NDEV, 1, 16ull << 20, false);
		record_run(&tv, old, w, &rec, &waited);
		if (waited != 0)
			break;
		crec_free(rec);
		rec = NULL;
		tvol_cleanup(&tv);
	}
	if (!rec || waited <= 0) {
		fprintf(stderr, "no recording in %u had entries overtake each "
			"other\n", runs - 1);
		CHECK(false);
		if (rec) {
			crec_free(rec);
			tvol_cleanup(&tv);
		}
		tvol_cleanup(&out);
		free(old);
		return;
	}
	K = crec_npersists(rec);
	printf("# %" PRIu64 " persists; %" PRId64 " appends waited for an "
	       "earlier entry or shared another's round (recording %u)\n",
	       K, waited, runs);

	for (uint64_t k = 0; k <= K; k++)
		for (unsigned p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			int held[NTHR], again[NTHR];
			bool ok;

			if (k % crash_stride() && k != K)
				continue;
			REQUIRE(crec_build(rec, k, pols[p], k * 5 + p,
					   (const char *const *)out.paths) == 0);
			ok = look(out.paths, old, held, false);
			/* A second open (nothing left to replay) agrees. */
			ok &= look(out.paths, old, again, k % 4 == p % 4);
			for (unsigned t = 0; t < NTHR; t++) {
				unsigned returned = 0;

				for (unsigned i = 0; i < NUPD; i++)
					returned += crec_marker(
						rec, w[t].marks[i])->persists <= k;
				if (held[t] < (int)returned ||
				    again[t] != held[t])
					ok = false;
			}
			if (!ok) {
				fprintf(stderr, "k=%" PRIu64 " %s: held", k,
					pol_names[p]);
				for (unsigned t = 0; t < NTHR; t++)
					fprintf(stderr, " %d/%d", held[t],
						again[t]);
				fprintf(stderr, "\n");
				CHECK(false);
			}
			for (unsigned t = 1; t < NTHR; t++)
				seen_mixed += held[t] != held[0];
			checked++;
		}
	printf("# %u crash states, %" PRIu64 " with threads at different "
	       "updates\n", checked, seen_mixed);
	CHECK(seen_mixed > 0);
	crec_free(rec);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	free(old);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "concurrent_states", test_concurrent_states },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
