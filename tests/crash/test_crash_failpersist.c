// SPDX-License-Identifier: MIT
/* test_crash_failpersist.c -- a persist that fails: SQLite's crash VFS
 * for the media layer (issue 29, "one failure rule for the media") */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "media.h"
#include "recorder.h"
#include "volume_i.h"

/*
 * A failing persist is a crash the process survives (media.h). This
 * harness makes persist k of a recorded run fail, for every k, and with
 * it drops every store that was not yet durable -- each piece of a
 * write not followed by a good persist of its page on its device gets
 * its bytes back as they were before it (in reverse program order), as
 * a write-back that failed may have left the medium. Then:
 *   (a) the open or the update reports the error;
 *   (b) no store and no persist reaches the media after the failure
 *       (the volume is latched: media.h);
 *   (c) a clean open afterwards finds every committed update, the
 *       update that failed all there or not at all, every byte of the
 *       checked pages right, and a scrub with nothing to say.
 * Two runs: an open that replays two committed updates left in the
 * journal (the journal must not be retired by an open whose replay
 * failed), and two updates on a clean volume (a checksum copy's persist
 * failing among them).
 */

#define PG DG_PAGE_SIZE
#define NREG 3
#define MAX_PIECES 65536u
#define UPD_PAGES 16u	/* buffer pages of one update (make_update()) */

/* ---- the failing media -------------------------------------------- */

struct piece {
	unsigned dev;
	uint64_t off;
	uint32_t len;
	uint8_t *old;		/* the bytes before the store */
};

struct failer {
	pthread_mutex_t lock;
	unsigned n;
	char *path[DG_MAX_DEVS];
	uint8_t *map[DG_MAX_DEVS];	/* our own view of each image */
	uint64_t size[DG_MAX_DEVS];
	struct piece *p;	/* stores not yet durable, program order */
	unsigned np;
	uint64_t persists, fail_at;	/* fail persist number fail_at */
	bool failed;
	uint64_t dropped;		/* pieces given their old bytes */
	uint64_t writes_after, persists_after;
};

static int fdev(struct failer *f, const char *path)
{
	for (unsigned i = 0; i < f->n; i++)
		if (!strcmp(f->path[i], path))
			return (int)i;
	return -1;
}

static void f_write(void *arg, const char *path, uint64_t off,
		    const void *src, size_t len)
{
	struct failer *f = arg;
	int dev;

	(void)src;
	pthread_mutex_lock(&f->lock);
	dev = fdev(f, path);
	if (dev < 0)
		goto out;
	if (f->failed) {
		f->writes_after++;
		goto out;
	}
	/* Called before the store: the map still holds the old bytes. */
	while (len) {
		uint32_t n = PG - (uint32_t)(off % PG);
		struct piece *pc;

		if (n > len)
			n = (uint32_t)len;
		if (f->np == MAX_PIECES)
			abort(); /* a run this test does not make */
		pc = &f->p[f->np++];
		*pc = (struct piece){ (unsigned)dev, off, n, malloc(n) };
		if (!pc->old)
			abort();
		memcpy(pc->old, f->map[dev] + off, n);
		off += n;
		len -= n;
	}
out:
	pthread_mutex_unlock(&f->lock);
}

/* Pieces on the pages of [off, off + len) of dev are durable now: page
 * granular, as msync. Caller holds the lock. */
static void f_durable(struct failer *f, int dev, uint64_t off, size_t len)
{
	uint64_t first, last;
	unsigned m = 0;

	if (!len)
		return;
	first = off / PG;
	last = (off + len - 1) / PG;
	for (unsigned i = 0; i < f->np; i++) {
		struct piece *pc = &f->p[i];

		if (pc->dev == (unsigned)dev && pc->off / PG >= first &&
		    pc->off / PG <= last) {
			free(pc->old);
			continue;
		}
		f->p[m++] = *pc;
	}
	f->np = m;
}

/* The next persist: the one armed to fail drops every store not yet
 * durable. Caller holds the lock. Nonzero when it failed. */
static int f_next(struct failer *f)
{
	if (++f->persists != f->fail_at)
		return 0;
	/* Every store not yet durable is lost. */
	for (unsigned i = f->np; i-- > 0;) {
		struct piece *pc = &f->p[i];

		memcpy(f->map[pc->dev] + pc->off, pc->old, pc->len);
		free(pc->old);
		f->dropped++;
	}
	f->np = 0;
	f->failed = true;
	return -EIO;
}

static int f_persist(void *arg, const char *path, uint64_t off, size_t len)
{
	struct failer *f = arg;
	int dev, ret = 0;

	pthread_mutex_lock(&f->lock);
	dev = fdev(f, path);
	if (dev < 0)
		goto out;
	if (f->failed) {
		f->persists_after++;
		goto out;
	}
	ret = f_next(f);
	if (!ret)
		f_durable(f, dev, off, len);
out:
	pthread_mutex_unlock(&f->lock);
	return ret;
}

/* A round (media.h): one persist of every range, failing whole. */
static int f_round(void *arg, const struct dg_obs_span *s, unsigned n)
{
	struct failer *f = arg;
	bool ours = false;
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	for (unsigned i = 0; i < n; i++)
		ours = ours || fdev(f, s[i].path) >= 0;
	if (!ours)
		goto out;
	if (f->failed) {
		f->persists_after++;
		goto out;
	}
	ret = f_next(f);
	for (unsigned i = 0; i < n && !ret; i++) {
		int dev = fdev(f, s[i].path);

		if (dev >= 0)
			f_durable(f, dev, s[i].off, s[i].len);
	}
out:
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static void failer_init(struct failer *f, struct tvol *tv)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->n = tv->ndev;
	f->p = malloc(MAX_PIECES * sizeof(*f->p));
	if (!f->p)
		abort();
	for (unsigned i = 0; i < tv->ndev; i++) {
		struct stat st;
		int fd = open(tv->paths[i], O_RDWR | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st) < 0)
			abort();
		f->path[i] = tv->paths[i];
		f->size[i] = (uint64_t)st.st_size;
		f->map[i] = mmap(NULL, f->size[i], PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, 0);
		close(fd);
		if (f->map[i] == MAP_FAILED)
			abort();
	}
}

/* Arm: fail persist number k from now (UINT64_MAX: none). */
static void failer_arm(struct failer *f, uint64_t k)
{
	pthread_mutex_lock(&f->lock);
	for (unsigned i = 0; i < f->np; i++)
		free(f->p[i].old);
	f->np = 0;
	f->persists = 0;
	f->fail_at = k;
	f->failed = false;
	f->dropped = f->writes_after = f->persists_after = 0;
	pthread_mutex_unlock(&f->lock);
}

static void failer_fini(struct failer *f)
{
	failer_arm(f, UINT64_MAX);
	for (unsigned i = 0; i < f->n; i++)
		munmap(f->map[i], f->size[i]);
	free(f->p);
	pthread_mutex_destroy(&f->lock);
}

/* ---- the pages the updates touch, and what they must hold ---------- */

struct model {
	uint64_t vpn[NREG];
	unsigned npg[NREG];
	uint8_t *b[NREG];
};

static uint8_t *model_at(struct model *m, uint64_t vpn)
{
	for (unsigned i = 0; i < NREG; i++)
		if (vpn >= m->vpn[i] && vpn < m->vpn[i] + m->npg[i])
			return m->b[i] + (vpn - m->vpn[i]) * PG;
	abort();
}

static void model_apply(struct model *m, const struct dg_range *r,
			unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		memcpy(model_at(m, r[i].vpn) + r[i].off, r[i].data, r[i].len);
}

static void model_copy(struct model *to, const struct model *from)
{
	for (unsigned i = 0; i < NREG; i++)
		memcpy(to->b[i], from->b[i], (size_t)from->npg[i] * PG);
}

static bool model_init(struct model *m, struct dg_vol *vol)
{
	struct dg_vol_info in;

	dg_vol_get_info(vol, &in);
	/* Pages of the metadata zone, with ditto copies (clear of the
	 * volume root and bitmap, vpns 0 and 1), file data, and data far
	 * off (other checksum pages). */
	m->vpn[0] = 100;
	m->npg[0] = 8;
	m->vpn[1] = tdata_vpn(vol);
	m->npg[1] = 24;
	m->vpn[2] = in.vpns - 16;
	m->npg[2] = 4;
	for (unsigned i = 0; i < NREG; i++) {
		m->b[i] = calloc(m->npg[i], PG);
		if (!m->b[i])
			return false;
	}
	return dg_ditto_has(vol, m->vpn[0]) && m->vpn[1] >= m->vpn[0] + 8 &&
	       m->vpn[2] > m->vpn[1] + 24;
}

static void model_free(struct model *m)
{
	for (unsigned i = 0; i < NREG; i++)
		free(m->b[i]);
}

/* Whether the volume holds what m says; false with a message. */
static bool model_holds(struct model *m, struct dg_vol *vol, const char *what,
			bool loud)
{
	uint8_t *buf = malloc(24 * PG);
	bool ok = buf != NULL;

	for (unsigned i = 0; i < NREG && ok; i++) {
		int ret = dg_read(vol, m->vpn[i], m->npg[i], buf);

		if (ret || memcmp(buf, m->b[i], (size_t)m->npg[i] * PG)) {
			if (loud)
				fprintf(stderr, "%s: pages %" PRIu64 "..%" PRIu64
				" %s\n", what, m->vpn[i],
				m->vpn[i] + m->npg[i] - 1,
				ret ? strerror(-ret) : "differ");
			ok = false;
		}
	}
	free(buf);
	return ok;
}

/* The updates: B and C are left in the journal; D and E run on a clean
 * volume. Ranges whole and partial, pages with ditto copies, several
 * checksum pages. */
static unsigned make_update(struct model *m, char which, uint8_t *buf,
			    struct dg_range *r)
{
	uint64_t seed = (uint64_t)which * 7919;
	unsigned n = 0;

	trand_fill(&seed, buf, UPD_PAGES * PG);
	switch (which) {
	case 'A':
		for (unsigned i = 0; i < NREG; i++)
			for (unsigned p = 0; p < m->npg[i] && p < 4; p++, n++)
				r[n] = (struct dg_range){ m->vpn[i] + p, 0, PG,
							  buf + n * PG };
		break;
	case 'B':
		r[n++] = (struct dg_range){ m->vpn[0] + 1, 100, 2000, buf };
		r[n++] = (struct dg_range){ m->vpn[1] + 3, 0, PG, buf + PG };
		r[n++] = (struct dg_range){ m->vpn[1] + 4, 0, PG,
					    buf + 2 * PG };
		r[n++] = (struct dg_range){ m->vpn[2] + 1, 8, 64,
					    buf + 3 * PG };
		break;
	case 'C':
		r[n++] = (struct dg_range){ m->vpn[1] + 4, 512, 3000, buf };
		r[n++] = (struct dg_range){ m->vpn[1] + 10, 0, PG, buf + PG };
		r[n++] = (struct dg_range){ m->vpn[0] + 5, 0, PG,
					    buf + 2 * PG };
		r[n++] = (struct dg_range){ m->vpn[2] + 3, 0, PG,
					    buf + 3 * PG };
		break;
	case 'D':
		r[n++] = (struct dg_range){ m->vpn[0] + 1, 64, 64, buf };
		r[n++] = (struct dg_range){ m->vpn[1] + 12, 0, PG, buf + PG };
		r[n++] = (struct dg_range){ m->vpn[1] + 13, 0, PG,
					    buf + 2 * PG };
		r[n++] = (struct dg_range){ m->vpn[2] + 0, 1000, 1000,
					    buf + 3 * PG };
		break;
	default: /* 'E' */
		for (unsigned p = 0; p < 3; p++)
			r[n++] = (struct dg_range){ m->vpn[1] + 18 + p, 16,
						    PG - 16, buf + p * PG };
		r[n++] = (struct dg_range){ m->vpn[0] + 6, 0, 128,
					    buf + 4 * PG };
		break;
	}
	return n;
}

/* ---- images -------------------------------------------------------- */

/* A snapshot of the images (the recorder's, recording nothing), to put
 * them back cheaply: only pages that differ are rewritten. */
static struct crec *snap_take(struct tvol *tv)
{
	struct crec *s = crec_start((const char *const *)tv->paths, tv->ndev);

	if (s)
		crec_stop(s);
	return s;
}

static bool snap_put(struct crec *s, struct tvol *tv)
{
	return crec_build(s, 0, CREC_NONE, 0,
			  (const char *const *)tv->paths) == 0;
}

static struct dg_vol *open_with(struct tvol *tv,
				const struct dg_media_observer *obs,
				char *err, size_t errlen, int *retp)
{
	struct dg_vol *vol = NULL;

	*retp = dg_vol_open_observed((const char *const *)tv->paths, tv->ndev,
				     0, obs, &vol, err, errlen);
	return *retp ? NULL : vol;
}

/* (c): a clean open finds m (or, where alt is given, alt) whole, and
 * nothing wrong. */
static void clean_open_holds(struct tvol *tv, struct model *m,
			     struct model *alt, const char *what)
{
	uint64_t cnt[DG_FAULT_NR];
	struct dg_vol *vol;
	char err[512];
	int ret;

	vol = open_with(tv, NULL, err, sizeof(err), &ret);
	if (!vol) {
		fprintf(stderr, "%s: clean open: %s (%s)\n", what, err,
			strerror(-ret));
		test_failures++;
		return;
	}
	dg_vol_fault_counts(vol, cnt);
	if (cnt[DG_FAULT_UNRECOVERABLE]) {
		fprintf(stderr, "%s: clean open: %" PRIu64 " unrecoverable\n",
			what, cnt[DG_FAULT_UNRECOVERABLE]);
		test_failures++;
	}
	/* All or nothing of the update that failed: one of the two. */
	if (!model_holds(m, vol, what, !alt) &&
	    (!alt || !model_holds(alt, vol, what, true)))
		test_failures++;
	SCRUB_CLEAN(vol, false);
	CHECK_EQ(dg_vol_close(vol), 0);
}

/* (b), and that the failure was seen. */
static void check_after(struct failer *f, const char *what, uint64_t k)
{
	if (!f->failed) {
		fprintf(stderr, "%s k=%" PRIu64 ": the persist was never "
			"made\n", what, k);
		test_failures++;
	}
	if (f->writes_after || f->persists_after) {
		fprintf(stderr, "%s k=%" PRIu64 ": %" PRIu64 " stores and %"
			PRIu64 " persists after the failed persist\n", what, k,
			f->writes_after, f->persists_after);
		test_failures++;
	}
}

/* ---- the cases ------------------------------------------------------ */

struct mark_arg {
	struct crec *rec;
	const char *name;
};

static void journaled(void *arg)
{
	struct mark_arg *a = arg;

	crec_mark(a->rec, a->name);
}

/*
 * A volume with A applied and retired, B applied but its entry still in
 * the journal, C only in the journal (a crash right after C's entry was
 * durable, nothing of it in place): the recorder's crash state at the
 * persist that made C's entry durable, no other store kept.
 */
static bool make_dirty(struct tvol *tv, struct model *abc, struct model *ab)
{
	struct dg_range r[16];
	uint8_t *buf = aligned_alloc(PG, UPD_PAGES * PG);
	struct mark_arg ma = { NULL, "C journaled" };
	struct dg_apply_hooks hooks = { NULL, journaled, &ma };
	struct dg_vol *vol;
	unsigned n;
	uint64_t k = 0;
	bool ok = false;

	vol = tvol_open(tv, 0);
	if (!buf || !vol || !model_init(abc, vol) || !model_init(ab, vol))
		goto out;
	n = make_update(abc, 'A', buf, r);
	if (dg_apply(vol, r, n) || dg_vol_sync(vol))
		goto out;
	model_apply(abc, r, n);
	ma.rec = crec_start((const char *const *)tv->paths, tv->ndev);
	if (!ma.rec)
		goto out;
	dg_vol_set_observer(vol, crec_observer());
	n = make_update(abc, 'B', buf, r);
	if (dg_apply(vol, r, n))
		goto out;
	model_apply(abc, r, n);
	model_copy(ab, abc);
	n = make_update(abc, 'C', buf, r);
	if (dg_apply_new(vol, r, n, NULL, &hooks))
		goto out;
	model_apply(abc, r, n);
	dg_vol_set_observer(vol, NULL);
	crec_stop(ma.rec);
	if (crec_nmarkers(ma.rec) != 1)
		goto out;
	k = crec_marker(ma.rec, 0)->persists;
	dg_vol_close(vol);
	vol = NULL;
	ok = crec_build(ma.rec, k, CREC_NONE, 0,
			(const char *const *)tv->paths) == 0;
out:
	if (vol) {
		dg_vol_set_observer(vol, NULL);
		dg_vol_close(vol);
	}
	crec_free(ma.rec);
	free(buf);
	return ok;
}

/* ndev devices, parity parity. */
static void replay_fails(unsigned ndev, unsigned parity)
{
	struct model abc = { 0 }, ab = { 0 };
	struct failer f;
	struct dg_media_observer obs = { f_write, f_persist, &f, f_round };
	struct dg_vol *vol;
	struct crec *dirty = NULL;
	struct tvol tv;
	uint64_t n;
	char err[512];
	int ret;

	tvol_make(&tv, "fpreplay", ndev, parity, 16ull << 20, false);
	if (!make_dirty(&tv, &abc, &ab)) {
		CHECK(!"setting up a journal with two updates");
		goto out;
	}
	dirty = snap_take(&tv);
	REQUIRE(dirty);
	failer_init(&f, &tv);

	/* None fails: count the persists; the replay finds B and C. */
	failer_arm(&f, UINT64_MAX);
	vol = open_with(&tv, &obs, err, sizeof(err), &ret);
	n = f.persists;
	if (!vol) {
		fprintf(stderr, "open: %s\n", err);
		CHECK(vol);
		goto out_f;
	}
	CHECK(model_holds(&abc, vol, "replay without failure", true));
	dg_vol_set_observer(vol, NULL);
	dg_vol_close(vol);
	printf("# an open replaying 2 updates makes %" PRIu64 " persists\n",
	       n);
	CHECK(n >= 20); /* superblocks, replay, checksums, header */

	for (uint64_t k = 1; k <= n; k++) {
		char what[64];

		snprintf(what, sizeof(what), "open with persist %" PRIu64
			 " failing", k);
		REQUIRE(snap_put(dirty, &tv));
		failer_arm(&f, k);
		vol = open_with(&tv, &obs, err, sizeof(err), &ret);
		if (vol) {
			fprintf(stderr, "%s: the open succeeded\n", what);
			test_failures++;
			dg_vol_close(vol); /* with the observer: counted */
		} else {
			CHECK(ret < 0);
			if (!strstr(err, "persist of"))
				fprintf(stderr, "%s: %s\n", what, err);
			CHECK(strstr(err, "persist of") != NULL);
		}
		check_after(&f, what, k);
		/* B and C were committed: the journal must still have
		 * them, whatever the failed open did. */
		clean_open_holds(&tv, &abc, NULL, what);
	}
out_f:
	failer_fini(&f);
out:
	crec_free(dirty);
	model_free(&abc);
	model_free(&ab);
	tvol_cleanup(&tv);
}

/* A copy of from (its pages and what they hold). */
static bool model_dup(struct model *to, const struct model *from)
{
	*to = *from;
	for (unsigned i = 0; i < NREG; i++) {
		to->b[i] = malloc((size_t)from->npg[i] * PG);
		if (!to->b[i])
			return false;
		memcpy(to->b[i], from->b[i], (size_t)from->npg[i] * PG);
	}
	return true;
}

/* Open cleanly, as the daemon runs (through the checksum page cache). */
static struct dg_vol *open_daemon(struct tvol *tv)
{
	struct dg_vol *vol = tvol_open(tv, 0);

	if (vol && dg_vol_cache_csum_pages(vol, (size_t)1 << 20)) {
		dg_vol_close(vol);
		return NULL;
	}
	return vol;
}

/*
 * Two updates, D and E, on a clean volume, persist k failing: the update
 * it fails reports EIO, the next one is refused, nothing is stored after
 * the failure, and the next open finds D (if it returned) and the failed
 * update all there or not at all.
 */
static void update_fails(unsigned ndev, unsigned parity)
{
	struct model m0 = { 0 }, mb = { 0 }, md = { 0 }, me = { 0 };
	struct failer f;
	struct dg_media_observer obs = { f_write, f_persist, &f, f_round };
	uint8_t *bd = aligned_alloc(PG, UPD_PAGES * PG), *be = aligned_alloc(PG, UPD_PAGES * PG);
	struct dg_range rd[16], re[16];
	struct dg_vol_info in;
	unsigned nd, ne;
	struct dg_vol *vol;
	struct crec *base = NULL;
	struct tvol tv;
	uint64_t n, nd_pers;
	bool have_f = false;
	int retd, rete;

	tvol_make(&tv, "fpupdate", ndev, parity, 16ull << 20, false);
	if (!bd || !be || !make_dirty(&tv, &m0, &mb)) {
		CHECK(!"setting up the volume");
		goto out;
	}
	/* Replayed once, cleanly: the base D and E start from. */
	vol = open_daemon(&tv);
	if (!vol) {
		CHECK(vol);
		goto out;
	}
	CHECK(model_holds(&m0, vol, "base", true));
	dg_vol_close(vol);
	base = snap_take(&tv);
	nd = make_update(&m0, 'D', bd, rd);
	ne = make_update(&m0, 'E', be, re);
	if (!base || !model_dup(&md, &m0) || !model_dup(&me, &m0)) {
		CHECK(!"out of memory");
		goto out;
	}
	model_apply(&md, rd, nd);
	model_apply(&me, rd, nd);
	model_apply(&me, re, ne);
	failer_init(&f, &tv);
	have_f = true;

	/* None fails: count the persists. */
	vol = open_daemon(&tv);
	if (!vol) {
		CHECK(vol);
		goto out;
	}
	failer_arm(&f, UINT64_MAX);
	dg_vol_set_observer(vol, &obs);
	CHECK_EQ(dg_apply(vol, rd, nd), 0);
	nd_pers = f.persists;
	CHECK_EQ(dg_apply(vol, re, ne), 0);
	n = f.persists;
	dg_vol_set_observer(vol, NULL);
	CHECK(model_holds(&me, vol, "updates without failure", true));
	dg_vol_close(vol);
	printf("# updates D and E make %" PRIu64 " and %" PRIu64
	       " persists\n", nd_pers, n - nd_pers);
	/* Rounds (media.h): the entry's copies; data, parity and the
	 * first copy of each checksum page (parity 1: every copy,
	 * DG_FEAT_INCOMPAT_COPIES_TOGETHER); the other copies. */
	CHECK(nd_pers >= (parity == 1 ? 2u : 3u));

	for (uint64_t k = 1; k <= n; k++) {
		bool in_d = k <= nd_pers;
		char what[64];

		snprintf(what, sizeof(what), "update %c with persist %" PRIu64
			 " failing", in_d ? 'D' : 'E', k);
		if (!snap_put(base, &tv) || !(vol = open_daemon(&tv))) {
			CHECK(!"reopening the base");
			break;
		}
		failer_arm(&f, k);
		dg_vol_set_observer(vol, &obs);
		retd = dg_apply(vol, rd, nd);
		rete = dg_apply(vol, re, ne);
		dg_vol_get_info(vol, &in);
		/* Closed with the observer: whatever close writes counts. */
		dg_vol_close(vol);
		if (in_d) {
			CHECK_EQ(retd, -EIO);
			CHECK(rete != 0);
		} else {
			CHECK_EQ(retd, 0);
			CHECK_EQ(rete, -EIO);
		}
		CHECK(in.read_only && strstr(in.failed, "persist of"));
		check_after(&f, what, k);
		if (in_d)
			clean_open_holds(&tv, &m0, &md, what);
		else
			clean_open_holds(&tv, &md, &me, what);
	}
out:
	if (have_f)
		failer_fini(&f);
	crec_free(base);
	free(bd);
	free(be);
	model_free(&m0);
	model_free(&mb);
	model_free(&md);
	model_free(&me);
	tvol_cleanup(&tv);
}

static void replay_fails_p1(void)
{
	replay_fails(4, 1);
}

static void update_fails_p1(void)
{
	update_fails(4, 1);
}

static void replay_fails_p2(void)
{
	replay_fails(5, 2);
}

static void update_fails_p2(void)
{
	update_fails(5, 2);
}

static const struct test_case cases[] = {
	{ "replay_fails_p1", replay_fails_p1 },
	{ "update_fails_p1", update_fails_p1 },
	{ "replay_fails_p2", replay_fails_p2 },
	{ "update_fails_p2", update_fails_p2 },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return test_main(argc, argv, cases);
}
