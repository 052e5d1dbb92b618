// SPDX-License-Identifier: MIT
/* test_crash.c -- recovery from every persist point of recorded updates */
#include <inttypes.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "recorder.h"

/*
 * DESIGN §3 G2/G4, §7. A run of dg_apply() updates (64 B to 256 KiB,
 * overlapping, several ranges per call) is recorded once; then for
 * every crash point k and every policy for the writes not durable at k
 * the images are rebuilt, opened (which replays the journal) and
 * checked:
 *   (a) scrub finds no parity mismatch, no bad page, nothing lost;
 *   (b) every update that returned before k is there;
 *   (c) the update in flight at k is all or nothing, later ones absent;
 *   (d) a second open after the first recovery is clean and reads the
 *       same bytes.
 * A crash during recovery itself is recorded and crashed the same way.
 */

#define BASE_VPN  768u	 /* clear of the root, bitmap and inode table */
#define SPAN	  256u	 /* pages updated: every data column of a few rows */
#define MAX_FAILS 12	 /* detailed reports per case */

enum { POL_NONE, POL_ALL, POL_RAND1, POL_RAND2, POL_RAND3, POL_TORN,
       POL_NR };
static const char *const pol_names[POL_NR] = { "none", "all", "random1",
					       "random2", "random3", "torn" };

static enum crec_policy pol_kind(unsigned p)
{
	return p == POL_NONE ? CREC_NONE
	       : p == POL_ALL ? CREC_ALL
	       : p == POL_TORN ? CREC_TORN
			       : CREC_RANDOM;
}

/* ---- image paths, removed at exit ---------------------------------- */

static char *img_paths[256];
static unsigned img_n;

static void img_cleanup(void)
{
	for (unsigned i = 0; i < img_n; i++) {
		unlink(img_paths[i]);
		free(img_paths[i]);
	}
	img_n = 0;
}

static void img_set(char **paths, const char *tag, unsigned ndev)
{
	if (img_n == 0)
		atexit(img_cleanup);
	for (unsigned i = 0; i < ndev; i++) {
		if (img_n == sizeof(img_paths) / sizeof(img_paths[0]) ||
		    asprintf(&paths[i], "/dev/shm/dgcrash-%d-%s-%u.img",
			     getpid(), tag, i) < 0)
			abort();
		img_paths[img_n++] = strdup(paths[i]);
		unlink(paths[i]);
	}
}

static void img_unlink(char **paths, unsigned ndev)
{
	for (unsigned i = 0; i < ndev; i++)
		unlink(paths[i]);
}

/* ---- the recorded workload ----------------------------------------- */

struct cfg {
	const char *tag;
	unsigned ndev, parity;
	uint32_t chunk;		/* rows per parity chunk */
	uint64_t size;		/* bytes per image */
	unsigned nupd;		/* updates recorded */
	unsigned stride;	/* check every stride-th crash point */
	uint64_t seed;
};

struct run {
	const struct cfg *cfg;
	char *src[DG_MAX_DEVS];	/* the recorded images */
	char *dst[DG_MAX_DEVS];	/* rebuilt crash states */
	char *dst2[DG_MAX_DEVS]; /* crash states of a recorded recovery */
	uint64_t span;		/* pages of the updated region */
	uint8_t **model;	/* model[i]: the region after i updates */
	uint64_t *begin, *end;	/* persists before update i began/ended */
	struct crec *rec;
	uint8_t *rd, *rd2;	/* readback buffers */
	/* tallies */
	uint64_t states, distinct, before, after, recov_faults, failures;
};

/* Split region bytes [off, off + len) into per-page ranges. */
static unsigned add_ranges(struct dg_range *rg, unsigned n, uint64_t off,
			   uint64_t len, const uint8_t *data)
{
	while (len) {
		uint32_t po = (uint32_t)(off % DG_PAGE_SIZE);
		uint32_t l = DG_PAGE_SIZE - po;

		if (l > len)
			l = (uint32_t)len;
		rg[n++] = (struct dg_range){ BASE_VPN + off / DG_PAGE_SIZE, po,
					     l, data };
		off += l;
		data += l;
		len -= l;
	}
	return n;
}

/*
 * Update i of the workload: a mix of 64 B, whole pages, unaligned
 * pages, large multi-page runs, several ranges in one call (some in one
 * page, later wins) and rewrites of earlier updates' pages.
 */
static unsigned make_update(struct run *ru, unsigned i, uint64_t *rs,
			    size_t max_big, uint8_t *buf,
			    struct dg_range *rg, uint64_t *last_off,
			    uint64_t *last_len)
{
	uint64_t bytes = ru->span * DG_PAGE_SIZE, off, len;
	unsigned n = 0, parts;

	switch (i % 6) {
	case 0: /* a cache line's worth inside one page */
		len = 64;
		off = trand(rs) % ru->span * DG_PAGE_SIZE +
		      trand(rs) % (DG_PAGE_SIZE - 64);
		break;
	case 1: /* one whole page */
		len = DG_PAGE_SIZE;
		off = trand(rs) % ru->span * DG_PAGE_SIZE;
		break;
	case 2: /* a page's worth straddling two pages */
		len = DG_PAGE_SIZE;
		off = trand(rs) % (bytes - 2 * DG_PAGE_SIZE) + 1;
		break;
	case 3: /* a large run, up to ~256 KiB */
		len = 8192 + trand(rs) % (max_big - 8192);
		if (i % 4 == 3)
			len &= ~(uint64_t)(DG_PAGE_SIZE - 1);
		off = trand(rs) % (bytes - len);
		if (i % 4 == 3)
			off &= ~(uint64_t)(DG_PAGE_SIZE - 1);
		break;
	case 4: /* several ranges in one call, some sharing a page */
		parts = 2 + (unsigned)(trand(rs) % 5);
		for (unsigned p = 0; p < parts; p++) {
			uint64_t pg = p && trand(rs) % 3 == 0
					      ? rg[n - 1].vpn - BASE_VPN
					      : trand(rs) % ru->span;
			uint32_t l = 1 + (uint32_t)(trand(rs) % 3000);
			uint32_t po = (uint32_t)(trand(rs) %
						 (DG_PAGE_SIZE - l + 1));
			uint8_t *d = buf + (size_t)p * DG_PAGE_SIZE;

			trand_fill(rs, d, l);
			rg[n++] = (struct dg_range){ BASE_VPN + pg, po, l, d };
		}
		return n;
	default: /* rewrite part of the last large run */
		len = *last_len / 2 + 1 + trand(rs) % (*last_len / 2);
		off = *last_off + trand(rs) % (*last_len - len + 1);
		break;
	}
	if (i % 6 == 3) {
		*last_off = off;
		*last_len = len;
	}
	trand_fill(rs, buf, len);
	return add_ranges(rg, 0, off, len, buf);
}

static void model_apply(uint8_t *m, const struct dg_range *rg, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		memcpy(m + (rg[i].vpn - BASE_VPN) * DG_PAGE_SIZE + rg[i].off,
		       rg[i].data, rg[i].len);
}

static int format_images(const struct cfg *c, char **paths)
{
	struct dg_format_opts o = { .parity = c->parity, .size = c->size,
				    .force = true, .chunk_pages = c->chunk };

	return dg_format((const char *const *)paths, c->ndev, &o, NULL);
}

static struct dg_vol *open_images(char **paths, unsigned n, char *err,
				  size_t errlen, int *retp)
{
	struct dg_vol *vol = NULL;

	*retp = dg_vol_open((const char *const *)paths, n, 0, &vol, err,
			    errlen);
	return *retp ? NULL : vol;
}

/* Format, open, and record nupd updates and the close. */
static bool record_run(struct run *ru, const struct cfg *c)
{
	uint64_t rs = c->seed, last_off = 0, last_len = 2 * DG_PAGE_SIZE;
	struct dg_range *rg;
	struct dg_vol *vol;
	struct dg_vol_info info;
	char err[256];
	uint8_t *buf;
	size_t max_big;
	int ret;

	memset(ru, 0, sizeof(*ru));
	ru->cfg = c;
	img_set(ru->src, c->tag, c->ndev);
	img_set(ru->dst, "state", c->ndev);
	img_set(ru->dst2, "state2", c->ndev);
	ret = format_images(c, ru->src);
	if (ret) {
		fprintf(stderr, "%s: dg_format: %s\n", c->tag, strerror(-ret));
		return false;
	}
	/*
	 * Recording starts with the volume open: a crash while open()
	 * rewrites the superblocks is covered by recover_* below.
	 */
	vol = open_images(ru->src, c->ndev, err, sizeof(err), &ret);
	if (!vol) {
		fprintf(stderr, "%s: open: %s\n", c->tag, err);
		return false;
	}
	dg_vol_get_info(vol, &info);
	ru->span = SPAN;
	if (ru->span > info.vpns - BASE_VPN)
		ru->span = info.vpns - BASE_VPN;
	max_big = dg_apply_max_bytes(vol) - 2 * DG_PAGE_SIZE;
	if (max_big > 256u << 10)
		max_big = 256u << 10;
	ru->model = calloc(c->nupd + 1, sizeof(*ru->model));
	ru->begin = calloc(c->nupd, sizeof(uint64_t));
	ru->end = calloc(c->nupd, sizeof(uint64_t));
	ru->rd = malloc(ru->span * DG_PAGE_SIZE);
	ru->rd2 = malloc(ru->span * DG_PAGE_SIZE);
	buf = malloc(max_big + DG_PAGE_SIZE * 8);
	rg = malloc((max_big / DG_PAGE_SIZE + 8) * sizeof(*rg));
	if (!ru->model || !ru->begin || !ru->end || !ru->rd || !ru->rd2 ||
	    !buf || !rg)
		abort();
	ru->model[0] = calloc(ru->span, DG_PAGE_SIZE);
	if (!ru->model[0])
		abort();

	ru->rec = crec_start((const char *const *)ru->src, c->ndev);
	if (!ru->rec)
		abort();
	for (unsigned i = 0; i < c->nupd; i++) {
		unsigned n = make_update(ru, i, &rs, max_big, buf, rg,
					 &last_off, &last_len);
		char name[32];

		snprintf(name, sizeof(name), "begin %u", i);
		ru->begin[i] = crec_marker(ru->rec, crec_mark(ru->rec, name))
				       ->persists;
		ret = dg_apply(vol, rg, n);
		snprintf(name, sizeof(name), "end %u", i);
		ru->end[i] = crec_marker(ru->rec, crec_mark(ru->rec, name))
				     ->persists;
		if (ret) {
			fprintf(stderr, "%s: update %u: %s\n", c->tag, i,
				strerror(-ret));
			return false;
		}
		ru->model[i + 1] = malloc(ru->span * DG_PAGE_SIZE);
		if (!ru->model[i + 1])
			abort();
		memcpy(ru->model[i + 1], ru->model[i],
		       ru->span * DG_PAGE_SIZE);
		model_apply(ru->model[i + 1], rg, n);
	}
	dg_vol_close(vol);
	crec_mark(ru->rec, "closed");
	crec_stop(ru->rec);
	free(buf);
	free(rg);
	return true;
}

static void run_free(struct run *ru)
{
	crec_free(ru->rec);
	for (unsigned i = 0; ru->model && i <= ru->cfg->nupd; i++)
		free(ru->model[i]);
	free(ru->model);
	free(ru->begin);
	free(ru->end);
	free(ru->rd);
	free(ru->rd2);
	for (unsigned i = 0; i < ru->cfg->ndev; i++) {
		unlink(ru->src[i]);
		unlink(ru->dst[i]);
		unlink(ru->dst2[i]);
		free(ru->src[i]);
		free(ru->dst[i]);
		free(ru->dst2[i]);
	}
}

/* Updates completed at crash point k, and whether the next one had
 * begun. */
static unsigned completed_at(const struct run *ru, uint64_t k,
			     bool *inflight)
{
	unsigned done = 0;

	while (done < ru->cfg->nupd && ru->end[done] <= k)
		done++;
	*inflight = done < ru->cfg->nupd && ru->begin[done] <= k;
	return done;
}

static void fail(struct run *ru, const char *what, uint64_t k, unsigned pol,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void fail(struct run *ru, const char *what, uint64_t k, unsigned pol,
		 const char *fmt, ...)
{
	va_list ap;

	test_failures++;
	if (ru->failures++ >= MAX_FAILS)
		return;
	fprintf(stderr, "%s: %s k=%" PRIu64 " policy=%s: ", ru->cfg->tag,
		what, k, pol_names[pol]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * Open the images at paths (recovering), check (a) and read the region
 * into buf. want_faults: whether recovery may meet (and repair) torn
 * redundancy. false on a failed check (reported).
 */
static bool open_check(struct run *ru, char **paths, uint8_t *buf,
		       const char *what, uint64_t k, unsigned pol,
		       bool second)
{
	uint64_t cnt[DG_FAULT_NR];
	struct dg_scrub_report rep;
	struct dg_vol *vol;
	char err[256];
	int ret;

	vol = open_images(paths, ru->cfg->ndev, err, sizeof(err), &ret);
	if (!vol) {
		fail(ru, what, k, pol, "%sopen: %s (%s)", second ? "second " : "",
		     err, strerror(-ret));
		return false;
	}
	dg_vol_fault_counts(vol, cnt);
	if (cnt[DG_FAULT_UNRECOVERABLE] || (second && cnt[DG_FAULT_DETECTED])) {
		fail(ru, what, k, pol, "%srecovery: detected=%" PRIu64
		     " unrecoverable=%" PRIu64, second ? "second " : "",
		     cnt[DG_FAULT_DETECTED], cnt[DG_FAULT_UNRECOVERABLE]);
		dg_vol_close(vol);
		return false;
	}
	if (cnt[DG_FAULT_DETECTED])
		ru->recov_faults++;
	ret = dg_vol_scrub(vol, false, &rep, NULL, NULL);
	if (ret || rep.parity_mismatch || rep.detected || rep.unrecoverable) {
		fail(ru, what, k, pol, "%sscrub: ret=%d parity_mismatch=%" PRIu64
		     " detected=%" PRIu64 " unrecoverable=%" PRIu64,
		     second ? "second " : "", ret, rep.parity_mismatch,
		     rep.detected, rep.unrecoverable);
		dg_vol_close(vol);
		return false;
	}
	ret = dg_read(vol, BASE_VPN, ru->span, buf);
	dg_vol_close(vol);
	if (ret) {
		fail(ru, what, k, pol, "%sdg_read: %s", second ? "second " : "",
		     strerror(-ret));
		return false;
	}
	return true;
}

/* First differing page of a and b, or -1. */
static long first_diff(const struct run *ru, const uint8_t *a,
		       const uint8_t *b)
{
	for (uint64_t pg = 0; pg < ru->span; pg++)
		if (memcmp(a + pg * DG_PAGE_SIZE, b + pg * DG_PAGE_SIZE,
			   DG_PAGE_SIZE))
			return (long)pg;
	return -1;
}

/*
 * Check the volume at paths as a recovery from crash point k of the
 * recorded run: (a)-(d). *outcome gets 0 (in-flight update absent) or
 * 1 (present). false on a failed check.
 */
static bool check_state(struct run *ru, char **paths, const char *what,
			uint64_t k, unsigned pol, int *outcome)
{
	bool inflight;
	unsigned done = completed_at(ru, k, &inflight);
	long pg;

	if (!open_check(ru, paths, ru->rd, what, k, pol, false))
		return false;
	if (!memcmp(ru->rd, ru->model[done], ru->span * DG_PAGE_SIZE)) {
		*outcome = 0;
	} else if (inflight && !memcmp(ru->rd, ru->model[done + 1],
				       ru->span * DG_PAGE_SIZE)) {
		*outcome = 1;
	} else {
		pg = first_diff(ru, ru->rd, ru->model[done]);
		fail(ru, what, k, pol, "readback matches neither update %u "
		     "done%s (first differing vpn %" PRIu64 ")", done,
		     inflight ? " nor the one in flight" : "",
		     BASE_VPN + (uint64_t)pg);
		return false;
	}
	/* (d): a second open finds nothing to do and the same bytes. */
	if (!open_check(ru, paths, ru->rd2, what, k, pol, true))
		return false;
	if (memcmp(ru->rd, ru->rd2, ru->span * DG_PAGE_SIZE)) {
		fail(ru, what, k, pol, "second open reads different bytes "
		     "(vpn %" PRIu64 ")",
		     BASE_VPN + (uint64_t)first_diff(ru, ru->rd, ru->rd2));
		return false;
	}
	return true;
}

static uint64_t pol_seed(const struct run *ru, uint64_t k, unsigned pol)
{
	return ru->cfg->seed * 0x9e3779b97f4a7c15ull + k * 1000003u + pol;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A set of crash-state ids (open addressing, never shrinks). */
struct idset {
	uint64_t (*v)[2];
	size_t cap, n;
};

/* Add id; false if it was there already. */
static bool idset_add(struct idset *s, const uint64_t id[2])
{
	size_t i;

	if (2 * (s->n + 1) > s->cap) {
		struct idset g = { calloc(s->cap ? 2 * s->cap : 1024,
					  sizeof(*s->v)),
				   s->cap ? 2 * s->cap : 1024, 0 };

		if (!g.v)
			abort();
		for (i = 0; i < s->cap; i++)
			if (s->v[i][0] || s->v[i][1])
				idset_add(&g, s->v[i]);
		free(s->v);
		*s = g;
	}
	for (i = id[0] % s->cap;; i = (i + 1) % s->cap) {
		if (!s->v[i][0] && !s->v[i][1])
			break;
		if (s->v[i][0] == id[0] && s->v[i][1] == id[1])
			return false;
	}
	s->v[i][0] = id[0] | !(id[0] | id[1]); /* (0, 0) marks empty */
	s->v[i][1] = id[1];
	s->n++;
	return true;
}

/* CRASH_K=k and CRASH_POL=name narrow a run to one crash state (to
 * reproduce a failure with DG_TEST_VERBOSE=1). */
static bool wanted(uint64_t k, unsigned pol)
{
	const char *ek = getenv("CRASH_K"), *ep = getenv("CRASH_POL");

	if (ek && strtoull(ek, NULL, 0) != k)
		return false;
	return !ep || !strcmp(ep, pol_names[pol]);
}

/* Every (stride-th) crash point of the recorded run, every policy. */
static void crash_run(const struct cfg *c)
{
	struct run ru;
	uint64_t npers, writes, pieces, foreign;
	double t0 = now();
	struct idset seen = { 0 };
	int outcome;

	if (!record_run(&ru, c)) {
		test_failures++;
		run_free(&ru);
		return;
	}
	npers = crec_npersists(ru.rec);
	crec_counts(ru.rec, &writes, &pieces, &foreign);
	CHECK_EQ(foreign, 0);
	for (uint64_t k = 0; k <= npers; k++) {
		if (k % c->stride && k != npers)
			continue;
		for (unsigned p = 0; p < POL_NR; p++) {
			uint64_t id[2];
			bool inflight;
			unsigned done = completed_at(&ru, k, &inflight);
			int ret;

			if (!wanted(k, p))
				continue;
			ru.states++;
			/* The same images with the same expectations were
			 * checked already (e.g. nothing in flight at k). */
			crec_state_id(ru.rec, k, pol_kind(p),
				      pol_seed(&ru, k, p), id);
			id[1] ^= (uint64_t)done << 1 | inflight;
			if (!idset_add(&seen, id))
				continue;
			ru.distinct++;
			ret = crec_build(ru.rec, k, pol_kind(p),
					     pol_seed(&ru, k, p),
					     (const char *const *)ru.dst);

			if (ret) {
				fail(&ru, "build", k, p, "%s", strerror(-ret));
				continue;
			}
			if (check_state(&ru, ru.dst, "crash", k, p, &outcome))
				*(outcome ? &ru.after : &ru.before) += 1;
			img_unlink(ru.dst, c->ndev);
		}
	}
	printf("# %s: %u updates, %" PRIu64 " writes (%" PRIu64 " pieces), "
	       "%" PRIu64 " crash points%s x %u policies: %" PRIu64
	       " crash states, %" PRIu64 " distinct checked (in-flight "
	       "update absent %" PRIu64 ", present %" PRIu64 "; recovery "
	       "repaired torn redundancy in %" PRIu64 ") in %.1f s\n",
	       c->tag, c->nupd, writes, pieces, npers + 1,
	       c->stride > 1 ? " (sampled)" : "", POL_NR, ru.states,
	       ru.distinct, ru.before, ru.after, ru.recov_faults,
	       now() - t0);
	free(seen.v);
	run_free(&ru);
}

/* 4 devices, single parity; 64-page chunks (the smallest the inode
 * table allows), so the region holds all data columns of its rows. */
static const struct cfg cfg_p1 = { "p1", 4, 1, 64, 16u << 20, 30, 1, 11 };
/* 5 devices, double parity. */
static const struct cfg cfg_p2 = { "p2", 5, 2, 64, 16u << 20, 30, 1, 22 };
/* One device, no parity: the two journal copies share it. */
static const struct cfg cfg_p0 = { "p0", 1, 0, 64, 16u << 20, 30, 1, 33 };

static void test_crash_p1(void)
{
	crash_run(&cfg_p1);
}

static void test_crash_p2(void)
{
	crash_run(&cfg_p2);
}

static void test_crash_p0(void)
{
	crash_run(&cfg_p0);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "crash_p1", test_crash_p1 },
		{ "crash_p2", test_crash_p2 },
		{ "crash_p0", test_crash_p0 },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
