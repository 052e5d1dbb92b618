// SPDX-License-Identifier: MIT
/* test_crash_jbytes.c -- crash states of JOURNAL_V2 updates with a fault
 * in one journal copy */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "jcopy.h"
#include "old_layout.h"
#include "recorder.h"
#include "super.h"
#include "volume_i.h"

/*
 * JOURNAL_V2 (format.h; docs/design.md, "What a write costs the media")
 * keeps an entry's bytes on parity + 1 journal copies and its metadata
 * on parity + 2. One copy of the bytes must then carry a crash plus one
 * fault of a journal copy. A run of dg_apply() updates (partial and
 * whole pages, one to four a time, over pages each update may share
 * with the last) is recorded; at every persist point, under every
 * policy for the writes not yet durable, the images are rebuilt, ONE
 * journal copy gets a fault, and the volume is opened (journal replay)
 * and read:
 *   lost       every write to the copy's journal area since the run
 *              began is lost (the area as it was, headers too);
 *   flipped    a byte flipped in every 64-byte line of the copy's log
 *              the run wrote;
 *   misdirect  every log page of the copy the run wrote landed one page
 *              further on (its own place keeps what it held).
 * Every page must read exactly as after the updates that returned, or
 * as after the one in flight too (atomically: all its pages or none),
 * never EIO, and a second open reads the same. Beyond the faults the
 * journal covers -- every bytes copy lost at once -- a page may read
 * EIO and an update need not show on all its pages, but no page reads
 * bytes of neither state (case jbytes_all_lost_p1). A volume
 * made before JOURNAL_V2 (the bit cleared) keeps every byte on every
 * copy and passes the same (jbytes_old_layout_p1). A rewrite that
 * leaves a page unchanged, its bytes lost and one fault in that page,
 * must not pass for an update in place (jbytes_noop_fault_p1). With the
 * device of a bytes copy missing the bytes stay on parity + 1 present
 * copies (jbytes_degraded_p1).
 */

#define PAGES	 24u
#define UPDATES	 10u
#define MAXR	 4u

enum fkind { FK_LOST, FK_FLIP, FK_MISDIRECT, FK_NR };
static const char *const fk_names[] = { "lost", "flipped", "misdirect" };
static const enum crec_policy pols[] = { CREC_NONE, CREC_ALL, CREC_RANDOM,
					 CREC_TORN };
static const char *const pol_names[] = { "none", "all", "random", "torn" };


struct run {
	unsigned ndev, parity, ncopies, nbytes;
	bool old_layout;		/* JOURNAL_V2 cleared after mkfs */
	struct jcopy jc[DG_MAX_JCOPIES];
	uint64_t base;			/* first vpn of the pages */
	uint8_t *state[UPDATES + 1];	/* the pages after u updates */
	uint64_t mark[UPDATES];		/* persists before update u returned */
	struct crec *rec;
	struct tvol tv, out;
	uint8_t *buf, *area;
};

/* Record the run: PAGES pages of state 0 made durable, then UPDATES
 * updates, each marked once it returned. */
static void record(struct run *ru, const char *tag)
{
	struct dg_vol *vol;
	uint64_t rs = 0x5eed + ru->parity;
	size_t sz = (size_t)PAGES * DG_PAGE_SIZE;
	char otag[32];

	tvol_make(&ru->tv, tag, ru->ndev, ru->parity, 16ull << 20, false);
	snprintf(otag, sizeof(otag), "%so", tag);
	tvol_make(&ru->out, otag, ru->ndev, ru->parity, 16ull << 20, false);
	for (unsigned u = 0; u <= UPDATES; u++) {
		ru->state[u] = malloc(sz);
		REQUIRE(ru->state[u]);
	}
	ru->buf = aligned_alloc(DG_PAGE_SIZE, sz);
	REQUIRE(ru->buf);
	trand_fill(&rs, ru->state[0], sz);
	if (ru->old_layout) {
		tvol_clear_incompat(&ru->tv, DG_FEAT_INCOMPAT_JOURNAL_V2);
		tvol_clear_incompat(&ru->out, DG_FEAT_INCOMPAT_JOURNAL_V2);
	}

	vol = tvol_open(&ru->tv, 0);
	REQUIRE(vol);
	REQUIRE(vol->journal_v2 == !ru->old_layout);
	ru->ncopies = vol->jrnl.ncopies;
	ru->nbytes = vol->jrnl.nbytes;
	jcopy_locate(vol, ru->jc, ru->ncopies);
	ru->base = tdata_vpn(vol);
	{
		struct dg_range r[PAGES];

		for (unsigned p = 0; p < PAGES; p++)
			r[p] = (struct dg_range){ ru->base + p, 0,
						  DG_PAGE_SIZE,
						  ru->state[0] +
							  p * DG_PAGE_SIZE };
		REQUIRE(dg_apply(vol, r, PAGES) == 0);
	}
	REQUIRE(dg_vol_close(vol) == 0);
	ru->area = malloc(ru->jc[0].bytes);
	REQUIRE(ru->area);

	ru->rec = crec_start((const char *const *)ru->tv.paths, ru->ndev);
	REQUIRE(ru->rec);
	vol = crec_open(ru->tv.paths, ru->ndev, 0);
	REQUIRE(vol);
	for (unsigned u = 0; u < UPDATES; u++) {
		struct dg_range r[MAXR];
		unsigned n = 1 + (unsigned)(trand(&rs) % MAXR);
		uint8_t *data = malloc(MAXR * DG_PAGE_SIZE);

		REQUIRE(data);
		memcpy(ru->state[u + 1], ru->state[u], sz);
		for (unsigned i = 0; i < n; i++) {
			/* distinct pages; a whole page one time in three */
			unsigned p = (unsigned)((u * 5 + i * 7) % PAGES);
			uint32_t off = 0, len = DG_PAGE_SIZE;

			if (trand(&rs) % 3) {
				off = (uint32_t)(trand(&rs) % DG_PAGE_SIZE);
				len = 1 + (uint32_t)(trand(&rs) %
						     (DG_PAGE_SIZE - off));
			}
			trand_fill(&rs, data + i * DG_PAGE_SIZE, len);
			memcpy(ru->state[u + 1] + p * DG_PAGE_SIZE + off,
			       data + i * DG_PAGE_SIZE, len);
			r[i] = (struct dg_range){ ru->base + p, off, len,
						  data + i * DG_PAGE_SIZE };
		}
		REQUIRE(dg_apply(vol, r, n) == 0);
		ru->mark[u] = crec_marker(ru->rec, crec_mark(ru->rec,
							     "update"))
				      ->persists;
		free(data);
	}
	REQUIRE(dg_vol_close(vol) == 0);
	crec_stop(ru->rec);
}

/* Put fault kind into journal copy c of the rebuilt images. */
static void put_fault(struct run *ru, unsigned c, enum fkind kind)
{
	const struct jcopy *j = &ru->jc[c];
	const uint64_t log = 2 * DG_PAGE_SIZE;
	uint64_t size;
	const uint8_t *snap;

	if (kind == FK_LOST) {
		jcopy_lose(&ru->out, ru->rec, j);
		return;
	}
	if (kind == FK_FLIP) {
		jcopy_flip(&ru->out, ru->rec, j, ru->area);
		return;
	}
	/* misdirect: each log page the run wrote to the next page, none at
	 * its own */
	snap = crec_snapshot(ru->rec, j->dev, &size);
	REQUIRE(snap && j->off + j->bytes <= size);
	snap += j->off;
	tvol_peek(&ru->out, j->dev, j->off, ru->area, j->bytes);
	for (uint64_t pg = log; pg < j->bytes; pg += DG_PAGE_SIZE) {
		if (!memcmp(ru->area + pg, snap + pg, DG_PAGE_SIZE))
			continue;
		tvol_poke(&ru->out, j->dev, j->off + pg, snap + pg,
			  DG_PAGE_SIZE);
		if (pg + DG_PAGE_SIZE < j->bytes)
			tvol_poke(&ru->out, j->dev, j->off + pg + DG_PAGE_SIZE,
				  ru->area + pg, DG_PAGE_SIZE);
	}
}

/* Open the rebuilt images and read every page: which state they hold
 * (done or done + 1), -1 for pages of both or neither, -2 a refused
 * open; *eio counts pages that read EIO (they match no state). */
static int look(struct run *ru, unsigned done, unsigned *eio)
{
	struct dg_vol *vol = crec_open(ru->out.paths, ru->ndev, 0);
	bool is[2] = { true, true };

	*eio = 0;
	if (!vol)
		return -2;
	for (unsigned p = 0; p < PAGES; p++) {
		uint8_t *pg = ru->buf + p * DG_PAGE_SIZE;

		if (dg_read(vol, ru->base + p, 1, pg)) {
			(*eio)++;
			continue;
		}
		for (unsigned s = 0; s < 2; s++) {
			unsigned st = done + s > UPDATES ? UPDATES : done + s;

			is[s] = is[s] && !memcmp(pg, ru->state[st] +
							 p * DG_PAGE_SIZE,
						 DG_PAGE_SIZE);
		}
	}
	dg_vol_close(vol);
	if (*eio)
		return is[0] ? 0 : is[1] ? 1 : -1;
	return is[0] ? 0 : is[1] ? 1 : -1;
}

/* Pages that read neither as in state done nor as in done + 1 (EIO
 * aside): wrong bytes. */
static unsigned wrong_pages(struct run *ru, unsigned done)
{
	struct dg_vol *vol = crec_open(ru->out.paths, ru->ndev, 0);
	unsigned wrong = 0;

	if (!vol)
		return 0;
	for (unsigned p = 0; p < PAGES; p++) {
		uint8_t *pg = ru->buf + p * DG_PAGE_SIZE;
		unsigned nx = done + 1 > UPDATES ? UPDATES : done + 1;

		if (dg_read(vol, ru->base + p, 1, pg))
			continue;
		wrong += memcmp(pg, ru->state[done] + p * DG_PAGE_SIZE,
				DG_PAGE_SIZE) &&
			 memcmp(pg, ru->state[nx] + p * DG_PAGE_SIZE,
				DG_PAGE_SIZE);
	}
	dg_vol_close(vol);
	return wrong;
}

static void run_free(struct run *ru)
{
	crec_free(ru->rec);
	tvol_cleanup(&ru->out);
	tvol_cleanup(&ru->tv);
	for (unsigned u = 0; u <= UPDATES; u++)
		free(ru->state[u]);
	free(ru->buf);
	free(ru->area);
}

static unsigned updates_done(const struct run *ru, uint64_t k)
{
	unsigned done = 0;

	while (done < UPDATES && k >= ru->mark[done])
		done++;
	return done;
}

static void one_copy(unsigned ndev, unsigned parity, const char *tag,
		     bool old_layout)
{
	struct run ru = { .ndev = ndev, .parity = parity,
			  .old_layout = old_layout };
	uint64_t K, states = 0, newer = 0;

	record(&ru, tag);
	/* The layout under test: one copy of the metadata alone (every
	 * copy whole on the old layout). */
	CHECK_EQ(ru.ncopies, parity + 2);
	CHECK_EQ(ru.nbytes, old_layout ? parity + 2 : parity + 1);
	K = crec_npersists(ru.rec);
	for (uint64_t k = 0; k <= K; k++) {
		unsigned done = updates_done(&ru, k);

		for (unsigned p = 0; p < 4; p++)
			for (unsigned c = 0; c < ru.ncopies; c++)
				for (unsigned f = 0; f < FK_NR; f++) {
					unsigned eio, eio2;
					int s, s2;

					/* parity 2: two policies of four a
					 * (k, copy, fault), in turn (time) */
					if (parity > 1 &&
					    (p + k + c + f) % 2)
						continue;

					REQUIRE(crec_build(ru.rec, k, pols[p],
						k * 131 + p * 17 + c * 5 + f,
						(const char *const *)
							ru.out.paths) == 0);
					put_fault(&ru, c, (enum fkind)f);
					s = look(&ru, done, &eio);
					s2 = (k + c + f) % 4 ? s
							      : look(&ru, done,
								     &eio2);
					if (s < 0 || eio || s2 != s ||
					    (done == UPDATES && s != 0)) {
						fprintf(stderr, "k=%" PRIu64
							" (%u done) %s, copy "
							"%u %s: state %d, %u "
							"EIO, again %d\n", k,
							done, pol_names[p], c,
							fk_names[f], s, eio,
							s2);
						CHECK(false);
					}
					newer += s == 1;
					states++;
				}
	}
	printf("# %ud p%u%s: %" PRIu64 " persists, %" PRIu64 " crash states "
	       "with a journal copy faulted, %" PRIu64 " with the update in "
	       "flight redone\n", ndev, parity,
	       old_layout ? " (old layout)" : "", K, states, newer);
	CHECK(newer > 0);
	run_free(&ru);
}

static void test_one_copy_p1(void)
{
	one_copy(3, 1, "jb1", false);
}

static void test_one_copy_p2(void)
{
	one_copy(4, 2, "jb2", false);
}

static void test_old_layout_p1(void)
{
	one_copy(3, 1, "jbo", true);
}

/* Whether opening the rebuilt images with flags (then closing them)
 * says, on stderr, that an entry without bytes went in place. */
static bool open_says_beyond(struct run *ru, unsigned flags)
{
	char path[] = "/dev/shm/dgtest-jbytes-errXXXXXX", buf[8192];
	int fd = mkstemp(path), saved = dup(2);
	struct dg_vol *vol;
	ssize_t n;

	/* REQUIRE returns no value: a failed capture is a failed check. */
	CHECK(fd >= 0 && saved >= 0);
	if (fd < 0 || saved < 0)
		return false;
	unlink(path);
	fflush(stderr);
	CHECK(dup2(fd, 2) == 2);
	vol = crec_open(ru->out.paths, ru->ndev, flags);
	if (vol)
		dg_vol_close(vol);
	fflush(stderr);
	CHECK(dup2(saved, 2) == 2);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, "yet its update is in place") != NULL;
}

/*
 * Every bytes copy lost at once (beyond the faults covered): every write
 * the run made to the journal areas of the bytes copies is lost, the
 * in-place writes stand as the crash left them. The volume opens, and
 * each page on its own reads EIO or as after the updates that returned
 * or with the one in flight -- never older bytes, nor bytes of no state.
 * Not checked: that an update shows on all its pages or none (the log
 * may end before an entry half in place: docs/design.md, "Journal bytes
 * on parity + 1 copies"), nor any count of EIO. A read-only open
 * (replaying nothing) logs no finding of faults where a replaying one
 * does.
 */
static void test_all_lost_p1(void)
{
	struct run ru = { .ndev = 3, .parity = 1 };
	uint64_t K, eios = 0, said = 0;

	record(&ru, "jba");
	K = crec_npersists(ru.rec);
	for (uint64_t k = 0; k <= K; k++) {
		unsigned done = updates_done(&ru, k);

		/* Each policy, and the random one three times more: a
		 * page landed beside its checksum copies not is what the
		 * open must tell from a fault, and one draw a state may
		 * miss it (the counts at the end). */
		for (unsigned p = 0; p < 7; p++) {
			unsigned pi = p < 4 ? p : 2, eio;

			REQUIRE(crec_build(ru.rec, k, pols[pi], k * 7 + p,
					   (const char *const *)ru.out.paths) ==
				0);
			for (unsigned c = 0; c < ru.nbytes; c++)
				put_fault(&ru, c, FK_LOST);
			/* An open that replays nothing (fsck -n) only finds
			 * the head: no finding of faults in what it skips. */
			if (open_says_beyond(&ru, DG_OPEN_RDONLY)) {
				fprintf(stderr, "k=%" PRIu64 " %s: read-only "
					"open says faults\n", k, pol_names[pi]);
				CHECK(false);
			}
			said += open_says_beyond(&ru, 0);
			REQUIRE(crec_build(ru.rec, k, pols[pi], k * 7 + p,
					   (const char *const *)ru.out.paths) ==
				0);
			for (unsigned c = 0; c < ru.nbytes; c++)
				put_fault(&ru, c, FK_LOST);
			if (look(&ru, done, &eio) == -2) {
				fprintf(stderr, "k=%" PRIu64 " %s: refused\n",
					k, pol_names[pi]);
				CHECK(false);
				continue;
			}
			eios += eio;
			if (wrong_pages(&ru, done)) {
				fprintf(stderr, "k=%" PRIu64 " %s: wrong "
					"bytes\n", k, pol_names[pi]);
				CHECK(false);
			}
		}
	}
	printf("# every bytes copy lost: %" PRIu64 " persists, %" PRIu64
	       " pages read EIO, %" PRIu64 " replays of an entry without "
	       "bytes\n", K, eios, said);
	CHECK(said > 0);
	run_free(&ru);
}

/*
 * A rewrite that leaves a page as it was (its range equal to the bytes
 * the page holds) carries the checksum the page already has. An update
 * N of such a rewrite of page P and new bytes for page Q is recorded;
 * at every persist point (durable writes only) N's bytes may be lost
 * from every bytes copy while its metadata survives on the copy without
 * bytes -- a crash that tore N's bytes copies, N never acknowledged --
 * and ONE fault hits P: a flipped byte in its data page, its checksum
 * (first copy) or its row's parity page. P's bytes no longer match the
 * checksum N carries for it, which must not pass for N having gone in
 * place: replayed without bytes, N would give Q its checksum over Q's
 * old bytes, and Q, acknowledged, would read EIO. Every page must read
 * as before N or (its bytes on a copy) after it, never EIO.
 */
enum pfault { PF_DATA, PF_CSUM, PF_PARITY, PF_NR };
static const char *const pf_names[] = { "data", "checksum", "parity" };

struct noop_run {
	struct tvol tv, out;
	struct jcopy jc[DG_MAX_JCOPIES];
	unsigned ncopies, nbytes;
	uint64_t at[PF_NR];	/* byte flipped by each fault */
	unsigned at_dev[PF_NR];
	uint64_t qdata, qcs[2];	/* Q's data page, P's and Q's csum pages */
	unsigned qdev, qcdev[2];
	uint8_t *old, *now;	/* pages 0 (P) and 1 (Q) before and after */
};

/* Whether any write of N reached the media in place: Q's data page, or
 * the checksum page (first two copies) of P and Q. */
static bool noop_in_place(struct noop_run *nr, struct crec *rec,
			  uint8_t *pg)
{
	uint64_t size;
	const uint8_t *snap;

	tvol_peek(&nr->out, nr->qdev, nr->qdata, pg, DG_PAGE_SIZE);
	snap = crec_snapshot(rec, nr->qdev, &size);
	if (memcmp(pg, snap + nr->qdata, DG_PAGE_SIZE))
		return true;
	for (unsigned c = 0; c < 2; c++) {
		snap = crec_snapshot(rec, nr->qcdev[c], &size);
		tvol_peek(&nr->out, nr->qcdev[c], nr->qcs[c], pg,
			  DG_PAGE_SIZE);
		if (memcmp(pg, snap + nr->qcs[c], DG_PAGE_SIZE))
			return true;
	}
	return false;
}

static void test_noop_fault_p1(void)
{
	struct noop_run nr = { 0 };
	uint64_t rs = 0x9a9e, K, tested = 0, entry_only = 0;
	uint8_t *pg = aligned_alloc(DG_PAGE_SIZE, 2 * DG_PAGE_SIZE);
	struct dg_vol *vol;
	struct crec *rec;
	uint64_t base;

	REQUIRE(pg);
	nr.old = malloc(2 * DG_PAGE_SIZE);
	nr.now = malloc(2 * DG_PAGE_SIZE);
	REQUIRE(nr.old && nr.now);
	tvol_make(&nr.tv, "jbn", 3, 1, 16ull << 20, false);
	tvol_make(&nr.out, "jbno", 3, 1, 16ull << 20, false);
	trand_fill(&rs, nr.old, 2 * DG_PAGE_SIZE);
	memcpy(nr.now, nr.old, 2 * DG_PAGE_SIZE);
	trand_fill(&rs, nr.now + DG_PAGE_SIZE, DG_PAGE_SIZE);

	vol = tvol_open(&nr.tv, 0);
	REQUIRE(vol && vol->journal_v2);
	nr.ncopies = vol->jrnl.ncopies;
	nr.nbytes = vol->jrnl.nbytes;
	CHECK_EQ(nr.nbytes, 2u);
	jcopy_locate(vol, nr.jc, nr.ncopies);
	base = tdata_vpn(vol);
	{
		struct dg_range r[2] = {
			{ base, 0, DG_PAGE_SIZE, nr.old },
			{ base + 1, 0, DG_PAGE_SIZE, nr.old + DG_PAGE_SIZE },
		};
		struct dg_loc p = dg_vpn_loc(vol, base);
		struct dg_loc q = dg_vpn_loc(vol, base + 1);
		uint64_t cpage;
		uint32_t cbyte;

		REQUIRE(dg_apply(vol, r, 2) == 0);
		nr.at_dev[PF_DATA] = p.dev;
		nr.at[PF_DATA] = dg_row_page(vol, p.row) * DG_PAGE_SIZE + 2000;
		dg_csum_loc(vol, p.dev, p.row, 0, &nr.at_dev[PF_CSUM], &cpage,
			    &cbyte);
		nr.at[PF_CSUM] = cpage * DG_PAGE_SIZE + cbyte;
		nr.at_dev[PF_PARITY] = dg_row_parity_dev(vol, p.row, 0);
		nr.at[PF_PARITY] = dg_row_page(vol, p.row) * DG_PAGE_SIZE +
				   2000;
		nr.qdev = q.dev;
		nr.qdata = dg_row_page(vol, q.row) * DG_PAGE_SIZE;
		for (unsigned c = 0; c < 2; c++) {
			struct dg_loc l = c ? q : p;

			dg_csum_loc(vol, l.dev, l.row, c, &nr.qcdev[c], &cpage,
				    &cbyte);
			nr.qcs[c] = cpage * DG_PAGE_SIZE;
		}
	}
	REQUIRE(dg_vol_close(vol) == 0);

	rec = crec_start((const char *const *)nr.tv.paths, 3);
	REQUIRE(rec);
	vol = crec_open(nr.tv.paths, 3, 0);
	REQUIRE(vol);
	{
		/* P: bytes it holds (no change); Q: new bytes. */
		struct dg_range r[2] = {
			{ base, 100, 300, nr.old + 100 },
			{ base + 1, 0, DG_PAGE_SIZE, nr.now + DG_PAGE_SIZE },
		};

		REQUIRE(dg_apply(vol, r, 2) == 0);
	}
	REQUIRE(dg_vol_close(vol) == 0);
	crec_stop(rec);
	K = crec_npersists(rec);
	for (uint64_t k = 0; k <= K; k++)
		for (unsigned lost = 0; lost < 2; lost++)
			for (unsigned f = 0; f < PF_NR; f++) {
				struct dg_vol *v;
				unsigned eio = 0;
				int st[2] = { -1, -1 };
				uint8_t b;

				REQUIRE(crec_build(rec, k, CREC_NONE, k,
						   (const char *const *)
							   nr.out.paths) == 0);
				/* Bytes lost from every bytes copy once
				 * N went in place: faults beyond parity
				 * (EIO may follow): not this case. */
				if (lost && noop_in_place(&nr, rec, pg))
					continue;
				if (lost) {
					uint64_t size;
					const struct jcopy *m =
						&nr.jc[nr.ncopies - 1];
					const uint8_t *snap = crec_snapshot(
						rec, m->dev, &size);

					for (unsigned c = 0; c < nr.nbytes;
					     c++)
						jcopy_lose(&nr.out, rec, &nr.jc[c]);
					for (uint64_t o = 2 * DG_PAGE_SIZE;
					     o < m->bytes; o += DG_PAGE_SIZE) {
						tvol_peek(&nr.out, m->dev,
							  m->off + o, pg,
							  DG_PAGE_SIZE);
						if (memcmp(pg, snap + m->off + o,
							   DG_PAGE_SIZE)) {
							entry_only++;
							break;
						}
					}
				}
				tvol_peek(&nr.out, nr.at_dev[f], nr.at[f], &b,
					  1);
				b ^= 0x5a;
				tvol_poke(&nr.out, nr.at_dev[f], nr.at[f], &b,
					  1);
				v = crec_open(nr.out.paths, 3, 0);
				REQUIRE(v);
				for (unsigned i = 0; i < 2; i++) {
					if (dg_read(v, base + i, 1, pg)) {
						eio++;
						continue;
					}
					st[i] = !memcmp(pg, nr.old +
								   i * DG_PAGE_SIZE,
							DG_PAGE_SIZE)
							? 0
						: !memcmp(pg,
							  nr.now + i * DG_PAGE_SIZE,
							  DG_PAGE_SIZE)
							? 1
							: -1;
				}
				dg_vol_close(v);
				tested++;
				/* P reads the same in both states. */
				if (eio || st[0] < 0 || st[1] < 0) {
					fprintf(stderr, "k=%" PRIu64 " bytes %s, "
						"fault in P's %s: %u EIO, P %d, "
						"Q %d\n", k,
						lost ? "lost" : "kept",
						pf_names[f], eio, st[0], st[1]);
					CHECK(false);
				}
			}
	printf("# no-op rewrite + one fault: %" PRIu64 " persists, %" PRIu64
	       " states, %" PRIu64 " with N's metadata alone\n", K, tested,
	       entry_only);
	CHECK(entry_only > 0);
	crec_free(rec);
	tvol_cleanup(&nr.out);
	tvol_cleanup(&nr.tv);
	free(nr.old);
	free(nr.now);
	free(pg);
}

/*
 * A degraded volume (3 devices, parity 1, the device of bytes copy 0
 * missing): entry bytes must still be on parity + 1 present copies, the
 * copy otherwise without bytes taking them. Updates are recorded; at
 * every persist point, under every policy, bytes copy 1 gets a fault
 * (flipped bytes in every log line the run wrote, or every write to it
 * lost) and the volume is opened degraded: every page reads as after
 * the updates that returned, or with the one in flight too, never EIO.
 * With the bytes on copy 1 alone, the fault left an entry whose update
 * was half in place without bytes on any copy.
 */
#define DG_PAGES 6u
#define DG_UPD	 4u

static void test_degraded_p1(void)
{
	struct tvol tv, out;
	struct jcopy jc[DG_MAX_JCOPIES];
	uint8_t *state[DG_UPD + 1], *pg, *area;
	uint64_t rs = 0xde9, mark[DG_UPD], K, states = 0, newer = 0;
	size_t sz = (size_t)DG_PAGES * DG_PAGE_SIZE;
	char *saved, *present[2], *built[2];
	struct dg_vol *vol;
	struct crec *rec;
	uint64_t base;
	unsigned ncopies;

	tvol_make(&tv, "jbd", 3, 1, 16ull << 20, false);
	tvol_make(&out, "jbdo", 3, 1, 16ull << 20, false);
	for (unsigned u = 0; u <= DG_UPD; u++) {
		state[u] = malloc(sz);
		REQUIRE(state[u]);
	}
	pg = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	REQUIRE(pg);
	trand_fill(&rs, state[0], sz);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol && vol->journal_v2);
	ncopies = vol->jrnl.ncopies;
	CHECK_EQ(ncopies, 3u);
	CHECK_EQ(vol->jrnl.nbytes, 2u);
	jcopy_locate(vol, jc, ncopies);
	REQUIRE(jc[0].dev == 0 && jc[1].dev == 1);
	base = tdata_vpn(vol);
	for (unsigned p = 0; p < DG_PAGES; p++) {
		struct dg_range r = { base + p, 0, DG_PAGE_SIZE,
				      state[0] + p * DG_PAGE_SIZE };

		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	REQUIRE(dg_vol_close(vol) == 0);
	area = malloc(jc[1].bytes);
	REQUIRE(area);

	/* Device 0 (bytes copy 0) gone; devices 1 and 2 recorded. */
	saved = tv.paths[0];
	REQUIRE(unlink(saved) == 0);
	tv.paths[0] = strdup("");
	REQUIRE(tv.paths[0]);
	unlink(out.paths[0]);
	present[0] = tv.paths[1];
	present[1] = tv.paths[2];
	built[0] = out.paths[1];
	built[1] = out.paths[2];
	rec = crec_start((const char *const *)present, 2);
	REQUIRE(rec);
	vol = crec_open(tv.paths, 3, DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW);
	REQUIRE(vol);
	for (unsigned u = 0; u < DG_UPD; u++) {
		struct dg_range r[3];
		uint8_t *data = malloc(3 * DG_PAGE_SIZE);

		REQUIRE(data);
		memcpy(state[u + 1], state[u], sz);
		for (unsigned i = 0; i < 3; i++) {
			unsigned p = (u + i * 2) % DG_PAGES;
			uint32_t off = i ? 64u * (u + 1) : 0;
			uint32_t len = i ? 1000 : DG_PAGE_SIZE;

			trand_fill(&rs, data + i * DG_PAGE_SIZE, len);
			memcpy(state[u + 1] + p * DG_PAGE_SIZE + off,
			       data + i * DG_PAGE_SIZE, len);
			r[i] = (struct dg_range){ base + p, off, len,
						  data + i * DG_PAGE_SIZE };
		}
		REQUIRE(dg_apply(vol, r, 3) == 0);
		mark[u] = crec_marker(rec, crec_mark(rec, "update"))->persists;
		free(data);
	}
	REQUIRE(dg_vol_close(vol) == 0);
	crec_stop(rec);
	K = crec_npersists(rec);
	for (uint64_t k = 0; k <= K; k++) {
		unsigned done = 0;

		while (done < DG_UPD && k >= mark[done])
			done++;
		for (unsigned p = 0; p < 4; p++)
			for (unsigned f = 0; f < 2; f++) {
				const struct jcopy *j = &jc[1];
				uint64_t size;
				const uint8_t *snap;
				struct dg_vol *v;
				bool is[2] = { true, true };
				unsigned eio = 0, nx = done < DG_UPD ? done + 1
								     : done;

				REQUIRE(crec_build(rec, k, pols[p], k * 7 + p,
						   (const char *const *)built) ==
					0);
				/* Copy 1 is recorded image 0. */
				snap = crec_snapshot(rec, 0, &size);
				REQUIRE(snap && j->off + j->bytes <= size);
				snap += j->off;
				tvol_peek(&out, j->dev, j->off, area, j->bytes);
				if (f)
					tvol_poke(&out, j->dev, j->off, snap,
						  j->bytes);
				for (uint64_t l = 2 * DG_PAGE_SIZE;
				     !f && l < j->bytes; l += 64) {
					uint8_t b = area[l + 17] ^ 0x5a;

					if (memcmp(area + l, snap + l, 64))
						tvol_poke(&out, j->dev,
							  j->off + l + 17, &b,
							  1);
				}
				v = crec_open(out.paths, 3,
					      DG_OPEN_DEGRADED |
						      DG_OPEN_DEGRADED_RW);
				REQUIRE(v);
				for (unsigned q = 0; q < DG_PAGES; q++) {
					if (dg_read(v, base + q, 1, pg)) {
						eio++;
						continue;
					}
					is[0] = is[0] &&
						!memcmp(pg, state[done] +
							    q * DG_PAGE_SIZE,
							DG_PAGE_SIZE);
					is[1] = is[1] &&
						!memcmp(pg, state[nx] +
							    q * DG_PAGE_SIZE,
							DG_PAGE_SIZE);
				}
				dg_vol_close(v);
				if (eio || !(is[0] || is[1]) ||
				    (done == DG_UPD && !is[0])) {
					fprintf(stderr, "k=%" PRIu64 " (%u done) "
						"%s, copy 1 %s: %u EIO, state "
						"%d\n", k, done, pol_names[p],
						f ? "lost" : "flipped", eio,
						is[0] ? 0 : is[1] ? 1 : -1);
					CHECK(false);
				}
				newer += !is[0] && is[1];
				states++;
			}
	}
	printf("# degraded, copy 1 faulted: %" PRIu64 " persists, %" PRIu64
	       " crash states, %" PRIu64 " with the update in flight "
	       "redone\n", K, states, newer);
	crec_free(rec);
	free(tv.paths[0]);
	tv.paths[0] = saved;
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	for (unsigned u = 0; u <= DG_UPD; u++)
		free(state[u]);
	free(pg);
	free(area);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "jbytes_one_copy_p1", test_one_copy_p1 },
		{ "jbytes_one_copy_p2", test_one_copy_p2 },
		{ "jbytes_all_lost_p1", test_all_lost_p1 },
		{ "jbytes_old_layout_p1", test_old_layout_p1 },
		{ "jbytes_noop_fault_p1", test_noop_fault_p1 },
		{ "jbytes_degraded_p1", test_degraded_p1 },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
