// SPDX-License-Identifier: MIT
/* test_crash.c -- recovery from every persist point of recorded updates */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bmap.h"
#include "volume_i.h"
#include "harness.h"
#include "recorder.h"

/*
 * DESIGN §3 G2/G4, §7; STYLE §8 "Crash states". A run of dg_apply()
 * updates (64 B to 256 KiB, overlapping, several ranges per call) is
 * recorded once; then for every crash point k and every policy for the
 * writes not durable at k, the images are rebuilt, opened (which
 * replays the journal) and checked:
 *   (a) scrub finds no parity mismatch, no bad page, nothing lost;
 *   (b) every update that returned before k is there;
 *   (c) the update in flight at k is all or nothing, later ones absent;
 *   (d) a second open after the first recovery finds nothing wrong and
 *       reads the same bytes.
 * recover_*: the recovery of a crashed image set is recorded and
 * crashed at each of its persist points in turn; the next recovery must
 * satisfy (a)-(d) and end where the uninterrupted recovery ended.
 *
 * Identical crash states (same images, same expectations) are checked
 * once. Crash points are spread over worker processes (CRASH_JOBS,
 * default: the CPUs, at most MAX_JOBS). CRASH_K=k and CRASH_POL=name
 * (CRASH_RK for the crash point inside a recovery) narrow a run to one
 * state; CRASH_FULL=1 checks every crash point where the default run
 * samples; DG_TEST_VERBOSE=1 shows the engine's log.
 */

#define SPAN	     256u /* pages updated: all data columns of some rows */
/* The first page of the region: 768, clear of the root, bitmap and
 * inode table; or, with COMPOUND_FRESH, in a checksum index no one has
 * written (fresh_base()). The journal's prefill goes after 768's. */
static uint64_t base_vpn = 768u;
#define BASE_VPN    base_vpn
#define PREFILL_VPN (768u + SPAN)
#define MAX_FAILS    12u  /* detailed reports per worker */
#define MAX_JOBS     8u
#define SCRUB2_EVERY 8u	  /* full scrub on every n-th second open */

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

static char *img_paths[512];
static unsigned img_n;
static pid_t img_owner;

static void img_cleanup(void)
{
	if (getpid() != img_owner)
		return;
	for (unsigned i = 0; i < img_n; i++) {
		unlink(img_paths[i]);
		free(img_paths[i]);
	}
	img_n = 0;
}

static void img_set(char **paths, const char *tag, unsigned ndev)
{
	if (!img_owner) {
		img_owner = getpid();
		atexit(img_cleanup);
	}
	for (unsigned i = 0; i < ndev; i++) {
		if (img_n == sizeof(img_paths) / sizeof(img_paths[0]) ||
		    asprintf(&paths[i], "/dev/shm/dgcrash-%d-%s-%u.img",
			     getpid(), tag, i) < 0)
			abort();
		img_paths[img_n++] = strdup(paths[i]);
		unlink(paths[i]);
	}
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
	bool alloc;		/* some vpns allocated before recording, so
				 * the bitmap has bits to get wrong */
	bool lean;		/* made with --lean-journal (COMPOUND_LEAN) */
	bool fresh;		/* the region in a new index (COMPOUND_FRESH) */
};

struct run {
	const struct cfg *cfg;
	char *src[DG_MAX_DEVS];	/* the recorded images */
	char *mid[DG_MAX_DEVS];	/* a crashed set whose recovery is recorded */
	char *dst[MAX_JOBS][DG_MAX_DEVS]; /* crash states, per worker */
	uint64_t span;		/* pages of the updated region */
	uint8_t **model;	/* model[i]: the region after i updates */
	uint64_t *begin, *end;	/* persists before update i began/ended */
	struct crec *rec;
	uint8_t *rd, *rd2;	/* readback buffers */
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
 * page, later wins, some rewriting bytes the page holds) and rewrites
 * of earlier updates' pages.
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
			/* One part in three rewrites what the page holds
			 * with at most two bytes changed (none: a third of
			 * those): the update journals and writes only the
			 * bytes that change (apply.c, trim_ranges()). */
			if (trand(rs) % 3 == 0) {
				unsigned flips = (unsigned)(trand(rs) % 3);

				memcpy(d, ru->model[i] + pg * DG_PAGE_SIZE + po,
				       l);
				while (flips--)
					d[trand(rs) % l] ^= 0x5a;
			}
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
				    .force = true, .chunk_pages = c->chunk,
				    .lean_journal = c->lean };

	return dg_format((const char *const *)paths, c->ndev, &o, NULL);
}

static struct dg_vol *open_images(char **paths, unsigned n, char *err,
				  size_t errlen, int *retp)
{
	struct dg_vol *vol = NULL;

	*retp = dg_vol_open_observed((const char *const *)paths, n, 0,
				     crec_observer(), &vol, err, errlen);
	/* As the daemon runs: updates through the checksum page cache. */
	if (!*retp)
		*retp = dg_vol_cache_csum_pages(vol, (size_t)1 << 20);
	return *retp ? NULL : vol;
}

/*
 * COMPOUND_FRESH: the region's rows at the start of a chunk, all in one
 * checksum index that no one has written, so that its first update sets
 * the index up in its own rounds (csum.c, fresh_add()) -- and the crash
 * and the fault meet that (docs/design.md, "A new index in the update's
 * rounds"). false if the volume has no such index.
 */
static bool fresh_base(struct dg_vol *vol)
{
	const uint64_t cp = vol->sb.chunk_pages, per = DG_CSUMS_PER_PAGE;
	const uint64_t rows = (SPAN + vol->k * cp - 1) / (vol->k * cp) * cp;

	for (uint64_t m = 2; m + 1 < vol->sb.csum_pages; m++) {
		uint64_t r0 = (m * per + cp - 1) / cp * cp;

		if (dg_cmap_test(vol, m) || r0 + rows > (m + 1) * per)
			continue;
		base_vpn = r0 / cp * vol->k * cp;
		if (base_vpn + 4 * SPAN < vol->vpns) {
			printf("# the region at vpn %" PRIu64 ", rows %" PRIu64
			       "-%" PRIu64 " of checksum index %" PRIu64
			       ", never written\n", base_vpn, r0,
			       r0 + rows - 1, m);
			return true;
		}
	}
	return false;
}

/* A few runs of vpns allocated (nothing written to them), far from the
 * region and spread over the volume: the compound campaign checks that
 * every open loads the bitmap as recorded (issue 34). */
static int alloc_some(struct dg_vol *vol)
{
	struct dg_txn *t = dg_txn_new(vol);
	uint64_t nv = vol->vpns, s, got;
	const uint64_t hint[3][2] = { { BASE_VPN + 4 * SPAN, 20 },
				      { nv / 2, 50 }, { nv - 300, 10 } };
	int ret = t ? 0 : -ENOMEM;

	for (unsigned i = 0; i < 3 && !ret; i++)
		ret = dg_alloc(t, hint[i][0], hint[i][1], &s, &got);
	if (!ret)
		ret = dg_txn_commit(t);
	dg_txn_free(t);
	return ret;
}

/* Apply entries of whole pages past the checked region until the
 * journal head is less than room_to_end bytes from the end of the log
 * or, with wrap, until it has wrapped. */
static int fill_journal(struct dg_vol *vol, uint64_t room_to_end, bool wrap,
			uint8_t *buf)
{
	const struct dg_journal *j = &vol->jrnl;
	uint64_t per_page = DG_PAGE_SIZE + sizeof(struct dg_djrange);
	uint64_t hdr = sizeof(struct dg_djentry) + DG_JALIGN;
	uint64_t cap = dg_apply_max_bytes(vol) / DG_PAGE_SIZE;
	struct dg_range rg[256];

	if (cap > 256)
		cap = 256;
	for (;;) {
		uint64_t head = j->head_off, room, n;
		int ret;

		room = j->log_bytes - head > room_to_end
			       ? j->log_bytes - head - room_to_end
			       : 0;
		n = room > hdr ? (room - hdr) / per_page : 0;
		if (n > cap)
			n = cap;
		if (!n && !wrap)
			return 0;
		if (!n)
			n = 1; /* does not fit: this one wraps */
		for (unsigned i = 0; i < n; i++)
			rg[i] = (struct dg_range){ PREFILL_VPN + i, 0,
						   DG_PAGE_SIZE,
						   buf + i * DG_PAGE_SIZE };
		buf[0]++;
		ret = dg_apply(vol, rg, (unsigned)n);
		if (ret || (wrap && j->head_off < head))
			return ret;
	}
}

/*
 * Leave the journal full of completed, unretired entries, its tail near
 * the start of the log and its head slack bytes short of the end: the
 * first recorded updates then have to retire them, rewrite the journal
 * header and wrap, and recoveries before that replay a full log. The
 * head is read from the in-core journal (volume_i.h, as other engine
 * unit tests do): mkfs's own entries moved it.
 */
static int prefill_journal(struct dg_vol *vol, uint64_t slack)
{
	uint8_t *buf = malloc(256 * DG_PAGE_SIZE);
	uint64_t seed = 77;
	int ret;

	if (!buf)
		return -ENOMEM;
	trand_fill(&seed, buf, 256 * DG_PAGE_SIZE);
	ret = fill_journal(vol, 0, true, buf);
	if (!ret)
		ret = dg_vol_sync(vol); /* tail: just past the wrap */
	if (!ret)
		ret = fill_journal(vol, slack, false, buf);
	free(buf);
	return ret;
}

/* Format, open, then record nupd updates and the close. */
static bool record_run(struct run *ru, const struct cfg *c)
{
	uint64_t rs = c->seed, last_off = 0, last_len = 2 * DG_PAGE_SIZE;
	struct dg_range *rg;
	struct dg_vol *vol;
	struct dg_vol_info info;
	char err[256], tag[32];
	uint8_t *buf;
	size_t max_big;
	int ret;

	memset(ru, 0, sizeof(*ru));
	ru->cfg = c;
	img_set(ru->src, c->tag, c->ndev);
	snprintf(tag, sizeof(tag), "%s-mid", c->tag);
	img_set(ru->mid, tag, c->ndev);
	for (unsigned w = 0; w < MAX_JOBS; w++) {
		snprintf(tag, sizeof(tag), "%s-w%u", c->tag, w);
		img_set(ru->dst[w], tag, c->ndev);
	}
	ret = format_images(c, ru->src);
	if (ret) {
		fprintf(stderr, "%s: dg_format: %s\n", c->tag, strerror(-ret));
		return false;
	}
	/* Recording starts with the volume open; crashes inside open()
	 * are what recover_* is about. */
	vol = open_images(ru->src, c->ndev, err, sizeof(err), &ret);
	if (!vol) {
		fprintf(stderr, "%s: open: %s\n", c->tag, err);
		return false;
	}
	dg_vol_get_info(vol, &info);
	ru->span = SPAN;
	if (vol->lean_journal != c->lean) {
		fprintf(stderr, "%s: lean entries %s\n", c->tag,
			c->lean ? "asked for, not on" : "on, not asked for");
		dg_vol_close(vol);
		return false;
	}
	base_vpn = 768u;
	if (c->fresh && !fresh_base(vol)) {
		fprintf(stderr, "%s: no unwritten checksum index to put the "
			"region in\n", c->tag);
		dg_vol_close(vol);
		return false;
	}
	if (info.vpns < BASE_VPN + 4 * SPAN) {
		fprintf(stderr, "%s: volume too small\n", c->tag);
		dg_vol_close(vol);
		return false;
	}
	if (c->alloc && (ret = alloc_some(vol))) {
		fprintf(stderr, "%s: allocate: %s\n", c->tag, strerror(-ret));
		dg_vol_close(vol);
		return false;
	}
	ret = prefill_journal(vol, 2048);
	if (ret) {
		fprintf(stderr, "%s: prefill: %s\n", c->tag, strerror(-ret));
		dg_vol_close(vol);
		return false;
	}
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
	dg_vol_set_observer(vol, crec_observer());
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
			dg_vol_close(vol);
			crec_stop(ru->rec);
			free(buf);
			free(rg);
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
		unlink(ru->mid[i]);
		free(ru->src[i]);
		free(ru->mid[i]);
		for (unsigned w = 0; w < MAX_JOBS; w++) {
			unlink(ru->dst[w][i]);
			free(ru->dst[w][i]);
		}
	}
}

/* ---- checking one crash state --------------------------------------- */

/* What a recovery from a crash state must produce. */
struct expect {
	unsigned done;		/* updates that returned before the crash */
	bool inflight;		/* update done had begun */
	int outcome;		/* -1 either; 0/1 the in-flight update must
				 * be absent/present */
};

static struct expect expect_at(const struct run *ru, uint64_t k)
{
	struct expect e = { 0, false, -1 };

	while (e.done < ru->cfg->nupd && ru->end[e.done] <= k)
		e.done++;
	e.inflight = e.done < ru->cfg->nupd && ru->begin[e.done] <= k;
	return e;
}

/* Compound faults (below): what a fault is, and where. */
enum { FK_FLIP, FK_ZERO, FK_LOST, FK_MISDIRECT, FK_NR };
enum { TG_DATA, TG_PARITY, TG_CSUM, TG_BITMAP, TG_CMAP, TG_FREE, TG_JRNL,
       TG_NR };
/* How a compound state ended: every page exact; the faulted page
 * given up (EIO), the rest exact; against the rules. */
enum { CO_EXACT, CO_EIO, CO_FAILED, CO_NR };

struct tally {
	uint64_t states;	/* (crash point, policy) pairs */
	uint64_t distinct;	/* of those, distinct and checked */
	uint64_t absent, present; /* the in-flight update after recovery */
	uint64_t torn_fixed;	/* recoveries that repaired torn redundancy */
	uint64_t failures;
	uint64_t compound[FK_NR][TG_NR][CO_NR];
};

/* A set of crash-state ids (open addressing, grows). */
struct idset {
	uint64_t (*v)[2];
	size_t cap, n;
};

/* Add id; false if it was there already. */
static bool idset_add(struct idset *s, const uint64_t id[2])
{
	uint64_t a = id[0] | !(id[0] | id[1]), b = id[1]; /* (0,0): empty */
	size_t i;

	if (2 * (s->n + 1) > s->cap) {
		struct idset g = { NULL, s->cap ? 2 * s->cap : 1024, 0 };

		g.v = calloc(g.cap, sizeof(*g.v));
		if (!g.v)
			abort();
		for (i = 0; i < s->cap; i++)
			if (s->v[i][0] || s->v[i][1])
				idset_add(&g, s->v[i]);
		free(s->v);
		*s = g;
	}
	for (i = a % s->cap; s->v[i][0] || s->v[i][1]; i = (i + 1) % s->cap)
		if (s->v[i][0] == a && s->v[i][1] == b)
			return false;
	s->v[i][0] = a;
	s->v[i][1] = b;
	s->n++;
	return true;
}

/* One sweep over the crash points of a recording (one worker's share). */
struct sweep {
	struct run *ru;
	struct crec *rec;	/* the recording crashed */
	char what[96];		/* for messages */
	const char *env_k;	/* variable that narrows k */
	const struct expect *fixed; /* NULL: expectations from k itself */
	char **dst;		/* this worker's images */
	struct idset seen;
	struct tally t;
	/* The check of one worker's crash points; NULL: sweep_range(). */
	void (*range)(struct sweep *sw, uint64_t lo, uint64_t hi,
		      unsigned stride);
};

static void fail(struct sweep *sw, uint64_t k, unsigned pol,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void fail(struct sweep *sw, uint64_t k, unsigned pol,
		 const char *fmt, ...)
{
	va_list ap;

	test_failures++;
	if (sw->t.failures++ >= MAX_FAILS)
		return;
	fprintf(stderr, "%s: %s k=%" PRIu64 " policy=%s: ", sw->ru->cfg->tag,
		sw->what, k, pol_names[pol]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " [reproduce: %s=%" PRIu64 " CRASH_POL=%s]\n",
		sw->env_k, k, pol_names[pol]);
}

/*
 * Open the images at paths (the first open recovers), check that
 * recovery met nothing it could not repair, scrub (a), and read the
 * region into buf. A second open must find nothing at all; it scrubs
 * on a sample only, as the first scrub already proved the media
 * consistent and close rewrites only the superblocks.
 */
static bool open_check(struct sweep *sw, char **paths, uint8_t *buf,
		       uint64_t k, unsigned pol, bool second)
{
	const char *nth = second ? "second " : "";
	uint64_t cnt[DG_FAULT_NR];
	struct dg_scrub_report rep;
	struct dg_vol *vol;
	char err[256];
	int ret;

	vol = open_images(paths, sw->ru->cfg->ndev, err, sizeof(err), &ret);
	if (!vol) {
		fail(sw, k, pol, "%sopen: %s (%s)", nth, err, strerror(-ret));
		return false;
	}
	dg_vol_fault_counts(vol, cnt);
	if (cnt[DG_FAULT_UNRECOVERABLE] || (second && cnt[DG_FAULT_DETECTED])) {
		fail(sw, k, pol, "%srecovery: detected=%" PRIu64
		     " unrecoverable=%" PRIu64, nth, cnt[DG_FAULT_DETECTED],
		     cnt[DG_FAULT_UNRECOVERABLE]);
		dg_vol_close(vol);
		return false;
	}
	if (cnt[DG_FAULT_DETECTED])
		sw->t.torn_fixed++;
	if (!second || sw->t.distinct % SCRUB2_EVERY == 0) {
		ret = dg_vol_scrub(vol, false, &rep, NULL, NULL);
		if (ret || rep.parity_mismatch || rep.detected ||
		    rep.unrecoverable) {
			fail(sw, k, pol, "%sscrub: ret=%d parity_mismatch=%"
			     PRIu64 " detected=%" PRIu64 " unrecoverable=%"
			     PRIu64, nth, ret, rep.parity_mismatch,
			     rep.detected, rep.unrecoverable);
			dg_vol_close(vol);
			return false;
		}
	}
	ret = dg_read(vol, BASE_VPN, sw->ru->span, buf);
	dg_vol_close(vol);
	if (ret) {
		fail(sw, k, pol, "%sdg_read: %s", nth, strerror(-ret));
		return false;
	}
	return true;
}

/* First differing vpn of two region images. */
static uint64_t first_diff(const struct run *ru, const uint8_t *a,
			   const uint8_t *b)
{
	uint64_t pg = 0;

	while (pg < ru->span && !memcmp(a + pg * DG_PAGE_SIZE,
					b + pg * DG_PAGE_SIZE, DG_PAGE_SIZE))
		pg++;
	return BASE_VPN + pg;
}

/*
 * Check the images at paths against e: (a)-(d). *outcome gets 0 (the
 * in-flight update is absent) or 1 (present). false on a failed check.
 */
static bool check_state(struct sweep *sw, char **paths,
			const struct expect *e, uint64_t k, unsigned pol,
			int *outcome)
{
	struct run *ru = sw->ru;
	size_t bytes = ru->span * DG_PAGE_SIZE;

	if (!open_check(sw, paths, ru->rd, k, pol, false))
		return false;
	if (!memcmp(ru->rd, ru->model[e->done], bytes)) {
		*outcome = 0;
	} else if (e->inflight &&
		   !memcmp(ru->rd, ru->model[e->done + 1], bytes)) {
		*outcome = 1;
	} else {
		fail(sw, k, pol, "readback is neither updates 0..%u%s "
		     "(first difference at vpn %" PRIu64 ")", e->done,
		     e->inflight ? " without nor with the one in flight" : "",
		     first_diff(ru, ru->rd, ru->model[e->done]));
		return false;
	}
	if (e->outcome >= 0 && *outcome != e->outcome) {
		fail(sw, k, pol, "in-flight update %s, but the uninterrupted "
		     "recovery left it %s", *outcome ? "present" : "absent",
		     e->outcome ? "present" : "absent");
		return false;
	}
	if (!open_check(sw, paths, ru->rd2, k, pol, true))
		return false;
	if (memcmp(ru->rd, ru->rd2, bytes)) {
		fail(sw, k, pol, "second open reads other bytes (vpn %" PRIu64
		     ")", first_diff(ru, ru->rd, ru->rd2));
		return false;
	}
	return true;
}

static bool wanted(const char *var, uint64_t k)
{
	const char *v = getenv(var);

	return !v || strtoull(v, NULL, 0) == k;
}

static bool pol_wanted(unsigned pol)
{
	const char *v = getenv("CRASH_POL");

	return !v || !strcmp(v, pol_names[pol]);
}

static uint64_t pol_seed(const struct run *ru, uint64_t k, unsigned pol)
{
	return ru->cfg->seed * 0x9e3779b97f4a7c15ull + k * 1000003u + pol;
}

/* Every policy at crash points [lo, hi] of sw->rec (every stride-th,
 * and hi; every one with CRASH_FULL=1). */
static void sweep_range(struct sweep *sw, uint64_t lo, uint64_t hi,
			unsigned stride)
{
	if (getenv("CRASH_FULL"))
		stride = 1;
	for (uint64_t k = lo; k <= hi; k++) {
		if ((k % stride && k != hi) || !wanted(sw->env_k, k))
			continue;
		for (unsigned p = 0; p < POL_NR; p++) {
			struct expect e = sw->fixed ? *sw->fixed
						    : expect_at(sw->ru, k);
			uint64_t seed = pol_seed(sw->ru, k, p), id[2];
			int ret, outcome;

			if (!pol_wanted(p))
				continue;
			sw->t.states++;
			/* Same images, same expectations: checked already
			 * (e.g. nothing in flight, so every policy agrees). */
			crec_state_id(sw->rec, k, pol_kind(p), seed, id);
			id[1] ^= (uint64_t)e.done << 2 | e.inflight << 1 |
				 (e.outcome > 0);
			if (!idset_add(&sw->seen, id))
				continue;
			sw->t.distinct++;
			ret = crec_build(sw->rec, k, pol_kind(p), seed,
					 (const char *const *)sw->dst);
			if (ret) {
				fail(sw, k, p, "rebuild: %s", strerror(-ret));
				continue;
			}
			/* The images are reused by the next rebuild. */
			if (check_state(sw, sw->dst, &e, k, p, &outcome))
				*(outcome ? &sw->t.present : &sw->t.absent) +=
					1;
		}
	}
	free(sw->seen.v);
	sw->seen = (struct idset){ 0 };
}

static unsigned njobs(void)
{
	const char *v = getenv("CRASH_JOBS");
	long n = v ? strtol(v, NULL, 0) : sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > (long)MAX_JOBS ? MAX_JOBS : (unsigned)n;
}

static void tally_add(struct tally *a, const struct tally *b)
{
	a->states += b->states;
	a->distinct += b->distinct;
	a->absent += b->absent;
	a->present += b->present;
	a->torn_fixed += b->torn_fixed;
	a->failures += b->failures;
	for (unsigned f = 0; f < FK_NR; f++)
		for (unsigned g = 0; g < TG_NR; g++)
			for (unsigned o = 0; o < CO_NR; o++)
				a->compound[f][g][o] += b->compound[f][g][o];
}

/*
 * sweep_range() over [lo, hi], split into contiguous blocks (which keeps
 * rebuilds incremental and duplicates within one worker) run by forked
 * workers. Adds the workers' tallies to sw->t.
 */
static void sweep_parallel(struct sweep *sw, uint64_t lo, uint64_t hi,
			   unsigned stride)
{
	unsigned jobs = njobs();
	uint64_t n = hi - lo + 1;
	pid_t pid[MAX_JOBS];
	int fd[MAX_JOBS];

	if (jobs > n / 16 + 1)
		jobs = (unsigned)(n / 16 + 1);
	fflush(NULL);
	for (unsigned w = 0; w < jobs; w++) {
		uint64_t a = lo + n * w / jobs, b = lo + n * (w + 1) / jobs - 1;
		int p[2];

		if (jobs == 1) {
			sw->dst = sw->ru->dst[0];
			(sw->range ? sw->range : sweep_range)(sw, a, b, stride);
			return;
		}
		if (pipe(p) < 0)
			abort();
		pid[w] = fork();
		if (pid[w] < 0)
			abort();
		if (pid[w] == 0) {
			close(p[0]);
			sw->dst = sw->ru->dst[w];
			memset(&sw->t, 0, sizeof(sw->t));
			(sw->range ? sw->range : sweep_range)(sw, a, b, stride);
			fflush(NULL);
			if (write(p[1], &sw->t, sizeof(sw->t)) !=
			    (ssize_t)sizeof(sw->t))
				_exit(2);
			_exit(0);
		}
		close(p[1]);
		fd[w] = p[0];
	}
	for (unsigned w = 0; w < jobs; w++) {
		struct tally t;
		int status;

		if (read(fd[w], &t, sizeof(t)) != (ssize_t)sizeof(t)) {
			memset(&t, 0, sizeof(t));
			t.failures = 1;
			fprintf(stderr, "%s: %s: worker %u died\n",
				sw->ru->cfg->tag, sw->what, w);
		}
		close(fd[w]);
		waitpid(pid[w], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			t.failures++;
			fprintf(stderr, "%s: %s: worker %u exited badly "
				"(status %#x)\n", sw->ru->cfg->tag, sw->what, w,
				status);
		}
		test_failures += (int)t.failures;
		tally_add(&sw->t, &t);
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void report(const char *tag, const char *what, uint64_t points,
		   const struct tally *t, double secs)
{
	printf("# %s %s: %" PRIu64 " of %" PRIu64 " crash points x %u "
	       "policies = %" PRIu64 " crash states, %" PRIu64 " distinct "
	       "checked (in-flight update absent %" PRIu64 ", present %" PRIu64
	       "; recovery repaired torn redundancy %" PRIu64 "x), %" PRIu64
	       " failed, %.1f s\n", tag, what, t->states / POL_NR, points,
	       POL_NR, t->states, t->distinct, t->absent, t->present,
	       t->torn_fixed, t->failures, secs);
	fflush(stdout);
}

/* ---- compound faults: a crash plus one fault within parity ---------- */

/*
 * Issue 29 (docs/integrity.md, "Replay under faults"). At every
 * stride-th crash point of a recorded run, under every policy, a state
 * adds ONE fault to one page of one device of the crash images before
 * they are opened: a flipped byte, a zeroed page, a lost write (the page
 * as it was when the recording began: an older content of it) or a
 * misdirected write (another such page of the same device written over
 * it). The pages: the data pages of the updated region, the parity of
 * their rows, and the checksum page copies that cover them; and (one
 * state in eight, issue 34) the allocation bitmap's pages, every copy
 * of the init map and never-written pages far from the region, the
 * parity of their rows among them (compound_alloc_targets()), after
 * which the bitmap must load exactly as recorded and the map cover
 * every page in use (compound_alloc_ok()). The open
 * must never be refused; every page of the region must read back as
 * the updates before the crash left it (the one in flight all or
 * nothing, never old bytes), except the faulted page, which may read
 * EIO (given up: the crash left nothing that proves it); a second open
 * reads the same. COMPOUND_STRIDE (crash points), COMPOUND_FAULTS
 * (states per crash point and policy, each another fault) and
 * COMPOUND_SEED (another workload) set the density: bench/campaign.py
 * compound runs it at 50,000 states and more. COMPOUND_F=i narrows a
 * run to fault i of each state (with CRASH_K and CRASH_POL: one state).
 * COMPOUND_LEAN=1 makes the volume with --lean-journal (docs/design.md,
 * "Lean entries"; campaign.py compound --lean). COMPOUND_FRESH=1 puts
 * the region in a checksum index no one has written (fresh_base();
 * campaign.py compound --fresh).
 */
static const char *const fk_names[FK_NR] = { "flip", "zero", "lost",
					     "misdirect" };
static const char *const tg_names[TG_NR] = { "data", "parity", "csum",
					     "bitmap", "cmap", "free",
					     "journal" };

struct ctarget {
	unsigned dev, kind;
	uint64_t page;		/* device page */
	uint64_t vpn;		/* a data page's; else UINT64_MAX */
	uint64_t row;		/* of a data or parity page */
};

/* Pages compound faults go to; hot[u * n + i]: target i is a data or
 * parity page of a row update u changes (a fault there meets the replay
 * of u when the crash comes while u is in flight). bm: the allocation
 * bitmap as the recording left it (the updates allocate nothing), which
 * every open must load exactly, whatever page of it or of the init map
 * a fault hit (issue 34: a page wrongly skipped reads as all free). */
struct ctargets {
	struct ctarget *t;
	unsigned n, cap;
	bool *hot;
	uint8_t *bm;
	uint64_t bm_len, free_vpns;
};

static void ct_add(struct ctargets *c, unsigned dev, uint64_t page,
		   unsigned kind, uint64_t vpn, uint64_t row)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->t[i].dev == dev && c->t[i].page == page)
			return;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->t = realloc(c->t, c->cap * sizeof(*c->t));
		if (!c->t)
			abort();
	}
	c->t[c->n++] = (struct ctarget){ dev, kind, page, vpn, row };
}

static bool never_written(struct dg_vol *vol, unsigned dev, uint64_t row)
{
	uint64_t cs;

	return dg_csum_get(vol, dev, row, &cs) == 0 && cs == DG_CSUM_NONE;
}

/*
 * Issue 34: the allocation state and rows it calls empty. The bitmap's
 * pages; every copy of the init map (each device, both slots);
 * and a few never-written vpns far past what the run writes, with the
 * parity of their rows where never written either: garbage put there
 * must stay unread (a read gives zeros; compound_alloc_ok()).
 */
static void compound_alloc_targets(struct dg_vol *vol, struct ctargets *c)
{
	uint64_t nv = vol->vpns;

	/* Written or not: a page never written must stay all free. */
	for (uint64_t p = 0; p < vol->bitmap_pages && p < 64; p++) {
		struct dg_loc l = dg_vpn_loc(vol, vol->bitmap_vpn + p);

		ct_add(c, l.dev, dg_row_page(vol, l.row), TG_BITMAP,
		       UINT64_MAX, UINT64_MAX);
	}
	for (unsigned d = 0; d < vol->ndev; d++)
		for (uint64_t p = 0; p < 2ull * vol->sb.cmap_pages; p++)
			ct_add(c, d, vol->sb.cmap_start + p, TG_CMAP,
			       UINT64_MAX, UINT64_MAX);
	for (unsigned j = 1; j <= 8; j++) {
		uint64_t v = nv - 1 - (nv - BASE_VPN - 4 * SPAN) * (j - 1) / 8;
		struct dg_loc l = dg_vpn_loc(vol, v);
		uint64_t page = dg_row_page(vol, l.row);

		if (v < BASE_VPN + 4 * SPAN || dg_vpn_allocated(vol, v) ||
		    !never_written(vol, l.dev, l.row))
			continue;
		/* vpn: read back as zeros, whatever the media holds */
		ct_add(c, l.dev, page, TG_FREE, v, UINT64_MAX);
		for (unsigned k = 0; k < vol->parity; k++) {
			unsigned pd = dg_row_parity_dev(vol, l.row, k);

			if (never_written(vol, pd, l.row))
				ct_add(c, pd, page, TG_FREE, UINT64_MAX,
				       UINT64_MAX);
		}
	}
	c->bm_len = vol->bitmap_pages * DG_PAGE_SIZE;
	c->bm = malloc(c->bm_len);
	if (!c->bm)
		abort();
	dg_bm_bytes(vol, 0, (uint32_t)c->bm_len, c->bm);
	c->free_vpns = vol->free_vpns;
}

static void page_io(char **paths, unsigned dev, uint64_t page, void *buf,
		    bool wr);

/*
 * The journal pages the run wrote (headers and log), on every copy:
 * with JOURNAL_V2 an entry's bytes are on parity + 1 copies and its
 * metadata on one more, so a lost, misdirected, zeroed or flipped page
 * of one copy must leave the replay what it needs (issue 31). Any EIO
 * after such a fault is a failure: the target names no data page.
 */
static void compound_jrnl_targets(struct run *ru, struct dg_vol *vol,
				  struct ctargets *c)
{
	uint8_t pg[DG_PAGE_SIZE];

	for (unsigned cp = 0; cp < dg_jrnl_ncopies(vol); cp++) {
		unsigned jd;
		uint64_t js, jp, size;
		const uint8_t *snap;

		dg_jrnl_loc(vol, cp, &jd, &js, &jp);
		snap = crec_snapshot(ru->rec, jd, &size);
		for (uint64_t p = js; snap && p < js + jp &&
		     (p + 1) * DG_PAGE_SIZE <= size; p++) {
			page_io(ru->src, jd, p, pg, false);
			if (memcmp(pg, snap + p * DG_PAGE_SIZE, DG_PAGE_SIZE))
				ct_add(c, jd, p, TG_JRNL, UINT64_MAX,
				       UINT64_MAX);
		}
	}
}

/* The targets of the recorded volume (opened read-only, closed clean). */
static bool compound_targets(struct run *ru, struct ctargets *c)
{
	struct dg_vol *vol = NULL;
	char err[256];

	if (dg_vol_open((const char *const *)ru->src, ru->cfg->ndev,
			DG_OPEN_RDONLY, &vol, err, sizeof(err))) {
		fprintf(stderr, "%s: targets: %s\n", ru->cfg->tag, err);
		return false;
	}
	for (uint64_t i = 0; i < ru->span; i++) {
		struct dg_loc l = dg_vpn_loc(vol, BASE_VPN + i);
		uint64_t page = dg_row_page(vol, l.row);

		ct_add(c, l.dev, page, TG_DATA, BASE_VPN + i, l.row);
		for (unsigned j = 0; j < vol->parity; j++)
			ct_add(c, dg_row_parity_dev(vol, l.row, j), page,
			       TG_PARITY, UINT64_MAX, l.row);
		for (unsigned cp = 0; cp < dg_vol_csum_copies(vol); cp++) {
			unsigned cdev;
			uint64_t cpage;
			uint32_t byte;

			dg_csum_loc(vol, l.dev, l.row, cp, &cdev, &cpage,
				    &byte);
			ct_add(c, cdev, cpage, TG_CSUM, UINT64_MAX,
			       UINT64_MAX);
		}
	}
	compound_alloc_targets(vol, c);
	compound_jrnl_targets(ru, vol, c);
	c->hot = calloc((size_t)ru->cfg->nupd * c->n, sizeof(bool));
	if (!c->hot)
		abort();
	for (unsigned u = 0; u < ru->cfg->nupd; u++)
		for (uint64_t i = 0; i < ru->span; i++) {
			uint64_t row;

			if (!memcmp(ru->model[u] + i * DG_PAGE_SIZE,
				    ru->model[u + 1] + i * DG_PAGE_SIZE,
				    DG_PAGE_SIZE))
				continue;
			row = dg_vpn_loc(vol, BASE_VPN + i).row;
			for (unsigned t = 0; t < c->n; t++)
				if (c->t[t].row == row)
					c->hot[(size_t)u * c->n + t] = true;
		}
	dg_vol_close(vol);
	return true;
}

/* A target: while an update is in flight, mostly one in a row it
 * changes. */
static const struct ctarget *pick_target(const struct ctargets *c,
					 const struct expect *e,
					 uint64_t *rs)
{
	const bool *hot = e->inflight ? c->hot + (size_t)e->done * c->n
				      : NULL;
	unsigned nhot = 0, nk[TG_NR] = { 0 }, i;

	/* One in eight: the allocation state or a never-written page, a
	 * kind of them drawn first (few pages among many, and the bitmap
	 * fewer than the rest: drawn apart to be hit at all). */
	for (i = 0; i < c->n; i++)
		nk[c->t[i].kind]++;
	/* One in eight: a page of a journal copy the run wrote. */
	if (nk[TG_JRNL] && trand(rs) % 8 == 0)
		for (unsigned x = (unsigned)(trand(rs) % nk[TG_JRNL]), j = 0;;
		     j++)
			if (c->t[j].kind == TG_JRNL && !x--)
				return &c->t[j];
	/* One in eight: a copy of a checksum page that covers the region
	 * -- a handful of pages, each shared by hundreds of rows, which
	 * the draw below (by page, mostly in changed rows) almost never
	 * met: 1 to 4 states in 12,000. */
	if (nk[TG_CSUM] && trand(rs) % 8 == 0)
		for (unsigned x = (unsigned)(trand(rs) % nk[TG_CSUM]), j = 0;;
		     j++)
			if (c->t[j].kind == TG_CSUM && !x--)
				return &c->t[j];
	if (nk[TG_BITMAP] + nk[TG_CMAP] + nk[TG_FREE] &&
	    trand(rs) % 8 == 0) {
		unsigned g;

		do
			g = TG_BITMAP + (unsigned)(trand(rs) % 3);
		while (!nk[g]);
		for (unsigned x = (unsigned)(trand(rs) % nk[g]), j = 0;; j++)
			if (c->t[j].kind == g && !x--)
				return &c->t[j];
	}
	for (i = 0; hot && i < c->n; i++)
		nhot += hot[i];
	if (!nhot || trand(rs) % 4 == 0)
		return &c->t[trand(rs) % c->n];
	for (unsigned x = (unsigned)(trand(rs) % nhot), j = 0;; j++)
		if (hot[j] && !x--)
			return &c->t[j];
}

/* One compound state's fault, drawn from its seed. */
struct cfault {
	unsigned kind;
	const struct ctarget *at;
};

static void page_io(char **paths, unsigned dev, uint64_t page, void *buf,
		    bool wr)
{
	int fd = open(paths[dev], O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		abort();
	n = wr ? pwrite(fd, buf, DG_PAGE_SIZE, (off_t)page * DG_PAGE_SIZE)
	       : pread(fd, buf, DG_PAGE_SIZE, (off_t)page * DG_PAGE_SIZE);
	if (n != DG_PAGE_SIZE)
		abort();
	close(fd);
}

/*
 * Put a fault of a kind drawn from seed into the images at paths; *f
 * gets what it was. A lost or misdirected write that would change
 * nothing (the page as it was, or another page with the same bytes)
 * tries other pages, then becomes a flip.
 */
static void compound_fault(struct sweep *sw, const struct ctargets *c,
			   const struct expect *e, char **paths,
			   uint64_t seed, struct cfault *f)
{
	uint8_t cur[DG_PAGE_SIZE], want[DG_PAGE_SIZE];
	uint64_t rs = seed | 1, size;

	f->kind = (unsigned)(trand(&rs) % FK_NR);
	for (unsigned tries = 0; tries < 16; tries++) {
		f->at = pick_target(c, e, &rs);
		page_io(paths, f->at->dev, f->at->page, cur, false);
		if (f->kind == FK_ZERO) {
			memset(want, 0, sizeof(want));
		} else if (f->kind == FK_LOST) {
			const uint8_t *snap = crec_snapshot(sw->rec,
							    f->at->dev, &size);

			memcpy(want, snap + f->at->page * DG_PAGE_SIZE,
			       DG_PAGE_SIZE);
		} else if (f->kind == FK_MISDIRECT) {
			const struct ctarget *from = &c->t[trand(&rs) % c->n];

			if (from->dev != f->at->dev || from == f->at)
				continue;
			page_io(paths, from->dev, from->page, want, false);
		} else {
			memcpy(want, cur, sizeof(want));
			want[trand(&rs) % DG_PAGE_SIZE] ^=
				(uint8_t)(1u << trand(&rs) % 8);
		}
		if (memcmp(cur, want, sizeof(want))) {
			page_io(paths, f->at->dev, f->at->page, want, true);
			return;
		}
	}
	f->kind = FK_FLIP;
	page_io(paths, f->at->dev, f->at->page, cur, false);
	cur[trand(&rs) % DG_PAGE_SIZE] ^= 0x20;
	page_io(paths, f->at->dev, f->at->page, cur, true);
}

static const struct ctargets *compound_tg;	/* of the run being swept */

/*
 * The allocation state after an open (issue 34), whatever fault the
 * state holds: the bitmap exactly as recorded (a bitmap page skipped or
 * taken from a bad copy would differ), the init map set for every index
 * with a page of the region that reads non-zero and for the bitmap's
 * rows (else the passes would skip live pages), and every never-written
 * page among the targets reading zeros, garbage or not.
 */
static bool compound_alloc_ok(struct sweep *sw, struct dg_vol *vol,
			      const uint8_t *buf, const bool *eio,
			      uint64_t k, unsigned pol, const char *what)
{
	const struct ctargets *c = compound_tg;
	static const uint8_t zero[DG_PAGE_SIZE];
	uint8_t *bm, pg[DG_PAGE_SIZE];
	bool ok = true;

	if (!c || !c->bm)
		return true;
	bm = malloc(c->bm_len);
	if (!bm)
		abort();
	dg_bm_bytes(vol, 0, (uint32_t)c->bm_len, bm);
	if (memcmp(bm, c->bm, c->bm_len) || vol->free_vpns != c->free_vpns) {
		fail(sw, k, pol, "%s open: allocation bitmap not as recorded "
		     "(%" PRIu64 " free, recorded %" PRIu64 ")", what,
		     vol->free_vpns, c->free_vpns);
		ok = false;
	}
	free(bm);
	for (uint64_t i = 0; ok && i < sw->ru->span; i++) {
		struct dg_loc l = dg_vpn_loc(vol, BASE_VPN + i);

		if (eio[i] || !memcmp(buf + i * DG_PAGE_SIZE, zero,
				      DG_PAGE_SIZE) ||
		    dg_cmap_test(vol, l.row / DG_CSUMS_PER_PAGE))
			continue;
		fail(sw, k, pol, "%s open: vpn %" PRIu64 " holds data but "
		     "the init map has its rows' index clear", what,
		     BASE_VPN + i);
		ok = false;
	}
	for (uint64_t p = 0; ok && p < vol->bitmap_pages; p++) {
		struct dg_loc l = dg_vpn_loc(vol, vol->bitmap_vpn + p);

		if (c->bm_len && !dg_cmap_test(vol, l.row / DG_CSUMS_PER_PAGE)
		    && memcmp(c->bm + p * DG_PAGE_SIZE, zero, DG_PAGE_SIZE)) {
			fail(sw, k, pol, "%s open: bitmap page %" PRIu64
			     " is in use but its index is clear", what, p);
			ok = false;
		}
	}
	for (unsigned t = 0; ok && t < c->n; t++) {
		int ret;

		if (c->t[t].kind != TG_FREE || c->t[t].vpn == UINT64_MAX)
			continue;
		ret = dg_read(vol, c->t[t].vpn, 1, pg);
		if (ret || memcmp(pg, zero, DG_PAGE_SIZE)) {
			fail(sw, k, pol, "%s open: never-written vpn %" PRIu64
			     " reads %s", what, c->t[t].vpn,
			     ret ? strerror(-ret) : "other than zeros");
			ok = false;
		}
	}
	return ok;
}

/*
 * Open the images (the open recovers), read the region page by page
 * into buf, eio[i] set where page i read EIO; false (reported) when the
 * open was refused or a read failed otherwise.
 */
static bool compound_read(struct sweep *sw, char **paths, uint8_t *buf,
			  bool *eio, uint64_t k, unsigned pol,
			  const char *what)
{
	struct dg_vol *vol;
	char err[256];
	int ret;

	vol = open_images(paths, sw->ru->cfg->ndev, err, sizeof(err), &ret);
	if (!vol) {
		fail(sw, k, pol, "%s open refused: %s (%s)", what, err,
		     strerror(-ret));
		return false;
	}
	for (uint64_t i = 0; i < sw->ru->span; i++) {
		ret = dg_read(vol, BASE_VPN + i, 1, buf + i * DG_PAGE_SIZE);
		eio[i] = ret == -EIO;
		if (ret && !eio[i]) {
			fail(sw, k, pol, "%s dg_read vpn %" PRIu64 ": %s", what,
			     BASE_VPN + i, strerror(-ret));
			dg_vol_close(vol);
			return false;
		}
	}
	if (!compound_alloc_ok(sw, vol, buf, eio, k, pol, what)) {
		dg_vol_close(vol);
		return false;
	}
	dg_vol_close(vol);
	return true;
}

/* Check one compound state: CO_EXACT, CO_EIO or CO_FAILED (reported). */
static unsigned compound_check(struct sweep *sw, const struct expect *e,
			       const struct cfault *f, uint64_t k,
			       unsigned pol, unsigned fi)
{
	struct run *ru = sw->ru;
	bool eio[SPAN], eio2[SPAN], any = false;
	int outcome = -1;

	if (!compound_read(sw, sw->dst, ru->rd, eio, k, pol, "first"))
		return CO_FAILED;
	for (int o = 0; o <= (int)e->inflight && outcome < 0; o++) {
		const uint8_t *m = ru->model[e->done + o];
		bool same = true;

		for (uint64_t i = 0; i < ru->span && same; i++)
			same = eio[i] || !memcmp(ru->rd + i * DG_PAGE_SIZE,
						 m + i * DG_PAGE_SIZE,
						 DG_PAGE_SIZE);
		if (same)
			outcome = o;
	}
	for (uint64_t i = 0; i < ru->span; i++) {
		if (!eio[i])
			continue;
		any = true;
		if (BASE_VPN + i != f->at->vpn) {
			fail(sw, k, pol, "fault %u (%s of %s dev %u page %"
			     PRIu64 "): vpn %" PRIu64 " reads EIO, not the "
			     "faulted page [COMPOUND_F=%u]", fi,
			     fk_names[f->kind], tg_names[f->at->kind],
			     f->at->dev, f->at->page, BASE_VPN + i, fi);
			return CO_FAILED;
		}
	}
	if (outcome < 0) {
		fail(sw, k, pol, "fault %u (%s of %s dev %u page %" PRIu64
		     "): readback is neither updates 0..%u%s (first "
		     "difference at vpn %" PRIu64 ") [COMPOUND_F=%u]", fi,
		     fk_names[f->kind], tg_names[f->at->kind], f->at->dev,
		     f->at->page, e->done, e->inflight ? " nor one more" : "",
		     first_diff(ru, ru->rd, ru->model[e->done]), fi);
		return CO_FAILED;
	}
	if (!compound_read(sw, sw->dst, ru->rd2, eio2, k, pol, "second"))
		return CO_FAILED;
	if (memcmp(eio, eio2, sizeof(bool) * ru->span) ||
	    memcmp(ru->rd, ru->rd2, ru->span * DG_PAGE_SIZE)) {
		fail(sw, k, pol, "fault %u (%s of %s dev %u page %" PRIu64
		     "): second open reads otherwise [COMPOUND_F=%u]", fi,
		     fk_names[f->kind], tg_names[f->at->kind], f->at->dev,
		     f->at->page, fi);
		return CO_FAILED;
	}
	return any ? CO_EIO : CO_EXACT;
}

static unsigned env_uint(const char *var, unsigned dflt)
{
	const char *v = getenv(var);

	return v && *v ? (unsigned)strtoul(v, NULL, 0) : dflt;
}

static void compound_range(struct sweep *sw, uint64_t lo, uint64_t hi,
			   unsigned stride)
{
	unsigned nf = env_uint("COMPOUND_FAULTS", 1);

	for (uint64_t k = lo; k <= hi; k++) {
		if ((k % stride && k != hi) || !wanted(sw->env_k, k))
			continue;
		for (unsigned p = 0; p < POL_NR; p++) {
			struct expect e = expect_at(sw->ru, k);
			uint64_t seed = pol_seed(sw->ru, k, p);

			if (!pol_wanted(p))
				continue;
			for (unsigned fi = 0; fi < nf; fi++) {
				struct cfault f;
				unsigned o;
				int ret;

				if (!wanted("COMPOUND_F", fi))
					continue;
				sw->t.states++;
				ret = crec_build(sw->rec, k, pol_kind(p), seed,
						 (const char *const *)sw->dst);
				if (ret) {
					fail(sw, k, p, "rebuild: %s",
					     strerror(-ret));
					continue;
				}
				compound_fault(sw, compound_tg, &e, sw->dst,
					       seed * 31 + fi * 0x9e3779b9u +
						       7, &f);
				o = compound_check(sw, &e, &f, k, p, fi);
				sw->t.compound[f.kind][f.at->kind][o]++;
			}
		}
	}
}

static void compound_run(const struct cfg *c0, unsigned stride)
{
	struct cfg c = *c0;
	struct run ru;
	struct ctargets tg = { 0 };
	struct sweep sw = { .ru = &ru, .env_k = "CRASH_K",
			    .range = compound_range };
	uint64_t npers, sum[CO_NR] = { 0 };
	double t0 = now();

	c.seed = env_uint("COMPOUND_SEED", (unsigned)c.seed);
	c.alloc = true;
	c.lean = env_uint("COMPOUND_LEAN", 0) != 0;
	c.fresh = env_uint("COMPOUND_FRESH", 0) != 0;
	stride = env_uint("COMPOUND_STRIDE", stride);
	if (!stride)
		stride = 1;
	if (!record_run(&ru, &c) || !compound_targets(&ru, &tg)) {
		test_failures++;
		run_free(&ru);
		free(tg.t);
		free(tg.hot);
		free(tg.bm);
		return;
	}
	compound_tg = &tg;
	npers = crec_npersists(ru.rec);
	sw.rec = ru.rec;
	snprintf(sw.what, sizeof(sw.what), "compound");
	sweep_parallel(&sw, 0, npers, stride);
	/* One line per fault kind and target: bench/campaign.py reads
	 * them. */
	for (unsigned f = 0; f < FK_NR; f++)
		for (unsigned g = 0; g < TG_NR; g++) {
			const uint64_t *n = sw.t.compound[f][g];

			printf("# compound %s seed=%" PRIu64 " kind=%s "
			       "target=%s states=%" PRIu64 " exact=%" PRIu64
			       " eio=%" PRIu64 " failed=%" PRIu64 "\n", c.tag,
			       c.seed, fk_names[f], tg_names[g],
			       n[CO_EXACT] + n[CO_EIO] + n[CO_FAILED],
			       n[CO_EXACT], n[CO_EIO], n[CO_FAILED]);
			for (unsigned o = 0; o < CO_NR; o++)
				sum[o] += n[o];
		}
	printf("# %s compound: %" PRIu64 " crash points (every %u), %"
	       PRIu64 " states, %u targets: %" PRIu64 " exact, %" PRIu64
	       " faulted page given up (EIO), %" PRIu64 " failed, %.1f s\n",
	       c.tag, npers + 1, stride, sw.t.states, tg.n, sum[CO_EXACT],
	       sum[CO_EIO], sw.t.failures, now() - t0);
	fflush(stdout);
	compound_tg = NULL;
	free(tg.t);
	free(tg.hot);
	free(tg.bm);
	run_free(&ru);
}

/* ---- the cases -------------------------------------------------------- */

/* Every (stride-th) crash point of the recorded run, every policy. */
static void crash_run(const struct cfg *c)
{
	struct run ru;
	struct sweep sw = { .ru = &ru, .env_k = "CRASH_K" };
	uint64_t npers, writes, pieces, foreign;
	double t0 = now();

	if (!record_run(&ru, c)) {
		test_failures++;
		run_free(&ru);
		return;
	}
	npers = crec_npersists(ru.rec);
	crec_counts(ru.rec, &writes, &pieces, &foreign);
	CHECK_EQ(foreign, 0);
	sw.rec = ru.rec;
	snprintf(sw.what, sizeof(sw.what), "crash");
	printf("# %s: %u devices, parity %u: %u updates recorded as %" PRIu64
	       " writes (%" PRIu64 " page pieces) and %" PRIu64 " persists\n",
	       c->tag, c->ndev, c->parity, c->nupd, writes, pieces, npers);
	sweep_parallel(&sw, 0, npers, c->stride);
	report(c->tag, "updates", npers + 1, &sw.t, now() - t0);
	run_free(&ru);
}

/*
 * Crash the recovery itself. Crash states of the recorded run (at the
 * start of an update, where a torn journal entry is dropped, and in the
 * middle of one, where it is redone) are each recovered once under the
 * recorder; that recovery (the open, then the close) is crashed at each
 * (stride-th) of its persist points and recovered again. The result
 * must satisfy (a)-(d) and leave the in-flight update as the
 * uninterrupted recovery did.
 *
 * dg_vol_open() first bumps the generation in every device's
 * superblock, one device after another (dg_write_supers(): primary,
 * persist, backup, persist), first as OPENING, then as DIRTY. A crash
 * before the last device's primary is durable (crash points
 * 0 .. 2 * ndev - 2 of the recovery) leaves generations that differ by
 * one behind an OPENING reference, which the next open must accept.
 * Those points are checked by recover_open_supers (supers set) and
 * left out of the other recover_* cases.
 */
static void recover_run(const struct cfg *c, unsigned nstates,
			unsigned stride, bool supers)
{
	static const unsigned pols[] = { POL_TORN, POL_ALL, POL_RAND1 };
	struct run ru;
	struct tally total = { 0 };
	uint64_t points = 0;
	uint64_t nskip = c->ndev > 1 ? 2ull * c->ndev - 1 : 0;
	double t0 = now();

	if (!record_run(&ru, c)) {
		test_failures++;
		run_free(&ru);
		return;
	}
	for (unsigned s = 0; s < nstates; s++) {
		unsigned u = (s + 1) * c->nupd / (nstates + 1);
		uint64_t k0 = s % 2 ? (ru.begin[u] + ru.end[u]) / 2
				    : ru.begin[u];
		unsigned p0 = pols[s % 3];
		struct sweep sw = { .ru = &ru, .env_k = "CRASH_RK" };
		struct sweep first = { .ru = &ru, .env_k = "CRASH_K" };
		struct expect e = expect_at(&ru, k0);
		struct dg_vol *vol;
		struct crec *rec;
		uint64_t k2;
		char err[256];
		int ret;

		if (!wanted("CRASH_K", k0) || !pol_wanted(p0))
			continue;
		snprintf(first.what, sizeof(first.what), "crash");
		ret = crec_build(ru.rec, k0, pol_kind(p0),
				 pol_seed(&ru, k0, p0),
				 (const char *const *)ru.mid);
		if (ret) {
			fail(&first, k0, p0, "rebuild: %s", strerror(-ret));
			continue;
		}
		rec = crec_start((const char *const *)ru.mid, c->ndev);
		if (!rec)
			abort();
		vol = open_images(ru.mid, c->ndev, err, sizeof(err), &ret);
		crec_mark(rec, "recovered");
		dg_vol_close(vol);
		crec_stop(rec);
		if (!vol) {
			fail(&first, k0, p0, "open: %s", err);
			crec_free(rec);
			continue;
		}
		/* Where the uninterrupted recovery left the update. */
		if (!check_state(&first, ru.mid, &e, k0, p0, &e.outcome)) {
			crec_free(rec);
			continue;
		}
		k2 = crec_npersists(rec);
		sw.rec = rec;
		sw.fixed = &e;
		snprintf(sw.what, sizeof(sw.what), "recovery from crash k=%"
			 PRIu64 " policy=%s, crashed at", k0, pol_names[p0]);
		if (supers && nskip) {
			sweep_parallel(&sw, 0, nskip - 1, 1);
			points += nskip;
		} else if (!supers) {
			sweep_parallel(&sw, nskip, k2, stride);
			points += k2 + 1 - nskip;
		}
		tally_add(&total, &sw.t);
		crec_free(rec);
	}
	report(c->tag, supers ? "recovery crashed in its superblock update"
			      : "recovery crashed", points, &total,
	       now() - t0);
	run_free(&ru);
}

/* 4 devices, single parity; 64-page chunks (the smallest the inode
 * table allows) so the region spans every data column of its rows. */
static const struct cfg cfg_p1 = { "p1", 4, 1, 64, 16u << 20, 30, 1, 11, false, false, false };
/* 5 devices, double parity: sampled, every 3rd crash point. */
static const struct cfg cfg_p2 = { "p2", 5, 2, 64, 16u << 20, 30, 3, 22, false, false, false };
/* One device, no parity: both journal copies share it. */
static const struct cfg cfg_p0 = { "p0", 1, 0, 64, 16u << 20, 30, 1, 33, false, false, false };

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

static void test_recover_p1(void)
{
	recover_run(&cfg_p1, 4, 1, false);
}

static void test_recover_p2(void)
{
	recover_run(&cfg_p2, 2, 2, false);
}

static void test_recover_p0(void)
{
	recover_run(&cfg_p0, 4, 1, false);
}

/* A crash plus one fault within parity (see compound_run): about 1250
 * and 1500 states, some 20 s of CPU together. */
static void test_compound_p1(void)
{
	compound_run(&cfg_p1, 2);
}

static void test_compound_p2(void)
{
	compound_run(&cfg_p2, 5);
}

/* A crash while the generation is bumped (see recover_run). */
static void test_recover_open_supers(void)
{
	recover_run(&cfg_p1, 4, 1, true);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "crash_p1", test_crash_p1 },
		{ "crash_p2", test_crash_p2 },
		{ "crash_p0", test_crash_p0 },
		{ "recover_p1", test_recover_p1 },
		{ "recover_p2", test_recover_p2 },
		{ "recover_p0", test_recover_p0 },
		{ "recover_open_supers", test_recover_open_supers },
		{ NULL, NULL },
		/* Run only when named (meson: crash-compound). */
		{ "compound_p1", test_compound_p1 },
		{ "compound_p2", test_compound_p2 },
		{ NULL, NULL },
	};
	static struct test_case named[sizeof(cases) / sizeof(cases[0])];
	unsigned n = 0;

	if (argc < 2)
		return test_main(argc, argv, cases);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (cases[i].name)
			named[n++] = cases[i];
	return test_main(argc, argv, named);
}
