// SPDX-License-Identifier: MIT
/* test_crash_new_rows.c -- crash states of writes whose rows skip the
 * journal */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"
#include "harness.h"
#include "old_layout.h"
#include "recorder.h"
#include "super.h"
#include "volume_i.h"

/*
 * apply.c's new rows: a whole row of pages an update allocated is
 * written, with its parity and checksums, before the journal entry,
 * which carries only their checksums (DG_JRANGE_IN_PLACE); file.c moves
 * a large overwrite to such rows. The run, on 4 devices with parity 1:
 * files a and b of generation 1 (already on new rows); then, recorded,
 * one page of a overwritten in place (its bytes journaled), a unlinked
 * (its rows freed), b overwritten whole with generation 2 (moved to new
 * rows: a's, freed just before, so the replay meets a's journaled page
 * on a row b now holds), and a new file c of generation 3. At every
 * persist point, under every policy for the writes not yet durable, the
 * images are rebuilt and opened (journal replay) and:
 *   (a) b is wholly generation 1 or wholly 2, and 2 once its write
 *       returned;
 *   (b) a is there with its page changed or not, or gone once the
 *       unlink returned; c is absent, empty or whole, whole once its
 *       write returned;
 *   (c) neither the replay nor the reads meet a fault; a second open
 *       reads the same, and every 4th state a scrub finds no bad page
 *       and no parity mismatch.
 * The updates reserve their new rows a run of rows a range
 * (DG_JRANGE_ROWS: b's and c's 64 rows each, some of them in one
 * range), and the recorded run caches checksum pages as the daemon
 * does; the old layout (DG_FEAT_INCOMPAT_RESERVED_ROWS cleared: a
 * volume made before it) reserves a range a page, without the cache.
 */

#define NDEV  4u
#define PAGES 192u /* 64 rows of 3 data pages: the least that gets them */

static const enum crec_policy pols[] = { CREC_NONE, CREC_ALL, CREC_RANDOM,
					 CREC_TORN };
static const char *const pol_names[] = { "none", "all", "random", "torn" };

static void fill_gen(uint8_t *b, uint64_t g)
{
	uint64_t *w = (uint64_t *)b;

	for (uint64_t i = 0; i < PAGES * DG_PAGE_SIZE / 8; i++)
		w[i] = g << 32 | i;
}

/* What one open finds: per file, 0 absent, 1.. the generation (4: a's
 * generation 1 with page 5 of 3), or a code below; the scrub's verdict
 * when asked. */
enum { F_A_CHANGED = 4, F_EMPTY = 10, F_MIXED, F_ERROR };
struct found {
	int a, b, c;
	bool scrub_bad;		/* or a fault met before it */
};

static int file_state(struct dg_fs *fs, const char *name, uint8_t *buf,
		      const uint8_t *const *gens, unsigned ngens)
{
	struct dg_attr at;
	const void *data;
	ssize_t n;

	if (dg_fs_lookup(fs, DG_ROOT_INO, name, &at) != 0)
		return 0;
	dg_fs_forget(fs, at.ino, 1);
	if (at.size == 0)
		return F_EMPTY;
	n = dg_fs_read(fs, at.ino, 0, PAGES * DG_PAGE_SIZE, buf, &data);
	if (n != (ssize_t)(PAGES * DG_PAGE_SIZE)) {
		fprintf(stderr, "%s: read %zd\n", name, n);
		return F_ERROR;
	}
	for (unsigned g = 1; g < ngens; g++)
		if (!memcmp(data, gens[g], (size_t)n))
			return (int)g;
	return F_MIXED;
}

static struct found look(char **paths, uint8_t *buf,
			 const uint8_t *const *gens, bool scrub,
			 unsigned ngens)
{
	struct found f = { F_ERROR, F_ERROR, F_ERROR, true };
	struct dg_vol *vol = crec_open(paths, NDEV, 0);
	static struct dg_fault_event ev[DG_FAULT_RING];
	struct dg_fs *fs = NULL;

	if (!vol)
		return f;
	if (dg_fs_open(vol, &fs)) {
		fprintf(stderr, "fs open failed\n");
		dg_vol_close(vol);
		return f;
	}
	f.a = file_state(fs, "a", buf, gens, ngens);
	f.b = file_state(fs, "b", buf, gens, ngens);
	f.c = file_state(fs, "c", buf, gens, ngens);
	/* The replay and the reads met no bad data or parity page: one
	 * the replay spoilt and parity mended would still be a fault. (A
	 * checksum copy the crash left stale is the crash's.) */
	f.scrub_bad = false;
	for (unsigned i = 0, n = dg_vol_fault_events(vol, 0, ev, DG_FAULT_RING);
	     i < n; i++)
		f.scrub_bad |= ev[i].what == DG_WHAT_DATA ||
			       ev[i].what == DG_WHAT_PARITY;
	if (scrub) {
		struct dg_scrub_report sr;

		f.scrub_bad |= dg_vol_scrub(vol, false, &sr, NULL, NULL) ||
			      sr.detected || sr.parity_mismatch ||
			      sr.unrecoverable;
	}
	dg_fs_close(fs);
	dg_vol_close(vol);
	return f;
}

/* The vpns of a file's pages, for the overlap the run must have. */
static void file_vpns(struct dg_fs *fs, uint64_t ino, uint64_t *v)
{
	struct dg_inode *ip = dg_inode_get(fs, ino);

	for (uint64_t p = 0; p < PAGES; p++) {
		uint64_t run;

		dg_ext_lookup(ip, p, &v[p], &run);
	}
}

/* A file name of generation g; its inode, or 0. */
static uint64_t create(struct dg_fs *fs, const char *name, const uint8_t *g)
{
	struct dg_attr at;

	if (dg_fs_mknod(fs, DG_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &at))
		return 0;
	dg_fs_forget(fs, at.ino, 1);
	if (dg_fs_write(fs, at.ino, 0, g, PAGES * DG_PAGE_SIZE) !=
	    (ssize_t)(PAGES * DG_PAGE_SIZE))
		return 0;
	return at.ino;
}

/* Entries numbered from seq on in the log of tv's first journal copy
 * (the recording's: the log has not wrapped over them) that reserve new
 * rows: *runs by runs of rows (DG_JRANGE_ROWS), *pages a range a page
 * (DG_JRANGE_RESERVED). */
static void count_reservations(struct tvol *tv, uint64_t seq, unsigned *runs,
			       unsigned *pages)
{
	struct dg_vol *vol = tvol_open(tv, DG_OPEN_RDONLY);
	const struct dg_journal *j;
	uint8_t *log;

	REQUIRE(vol);
	j = &vol->jrnl;
	log = malloc(j->log_bytes);
	REQUIRE(log);
	tvol_peek(tv, j->dev[0], (j->start[0] << DG_PAGE_SHIFT) + j->log_off,
		  log, j->log_bytes);
	*runs = *pages = 0;
	for (uint64_t off = 0; off + sizeof(struct dg_djentry) <= j->log_bytes;
	     off += DG_JALIGN) {
		const struct dg_djentry *e = (const void *)(log + off);
		const struct dg_djrange *r = (const void *)(e + 1);
		bool run = false, page = false;

		if (dg_jentry_decode(vol, e, j->log_bytes - off) ||
		    e->seq < seq || (e->flags & DG_JENTRY_WRAP))
			continue;
		for (uint32_t i = 0; i < e->nranges; i++) {
			run |= !!(r[i].flags & DG_JRANGE_ROWS);
			page |= !!(r[i].flags & DG_JRANGE_RESERVED);
		}
		*runs += run;
		*pages += page;
	}
	free(log);
	dg_vol_close(vol);
}

static void new_rows_states(bool old_layout)
{
	struct tvol tv, out;
	struct dg_vol *vol;
	struct dg_fs *fs;
	struct dg_vol_info in;
	struct crec *rec;
	uint64_t a, b, K, m_unlink, m_b, m_c, va[PAGES], vb[PAGES];
	uint64_t seen_b[3] = { 0 }, new0, seq0;
	unsigned runs = 0, per_page = 0;
	uint8_t *g[5], *buf;
	unsigned checked = 0, overlap = 0;

	tvol_make(&tv, old_layout ? "crnewo" : "crnew", NDEV, 1, 16ull << 20,
		  false);
	tvol_make(&out, old_layout ? "crnewoout" : "crnewout", NDEV, 1,
		  16ull << 20, false);
	if (old_layout) {
		tvol_clear_incompat(&tv, DG_FEAT_INCOMPAT_RESERVED_ROWS);
		tvol_clear_incompat(&out, DG_FEAT_INCOMPAT_RESERVED_ROWS);
	}
	for (unsigned i = 0; i < 5; i++) {
		g[i] = malloc(PAGES * DG_PAGE_SIZE);
		REQUIRE(g[i]);
		fill_gen(g[i], i);
	}
	/* g[4]: a with its page 5 from generation 3 (not b's new bytes:
	 * b's page 5 may land where a's was). */
	memcpy(g[4], g[1], PAGES * DG_PAGE_SIZE);
	memcpy(g[4] + 5 * DG_PAGE_SIZE, g[3] + 5 * DG_PAGE_SIZE,
	       DG_PAGE_SIZE);
	buf = aligned_alloc(DG_PAGE_SIZE, (PAGES + 2) * DG_PAGE_SIZE);
	REQUIRE(buf);

	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	a = create(fs, "a", g[1]);
	b = create(fs, "b", g[1]);
	REQUIRE(a && b);
	file_vpns(fs, a, va);
	dg_fs_close(fs);
	dg_vol_close(vol);

	rec = crec_start((const char *const *)tv.paths, NDEV);
	REQUIRE(rec);
	vol = crec_open(tv.paths, NDEV, 0);
	REQUIRE(vol);
	REQUIRE(vol->reserved_rows == !old_layout);
	seq0 = vol->jrnl.head_seq;
	if (!old_layout)
		REQUIRE(dg_vol_cache_csum_pages(vol, 1u << 20) == 0);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	dg_vol_get_info(vol, &in);
	new0 = in.rows_new;
	REQUIRE(dg_fs_write(fs, a, 5 * DG_PAGE_SIZE, g[4] + 5 * DG_PAGE_SIZE,
			    DG_PAGE_SIZE) == DG_PAGE_SIZE);
	REQUIRE(dg_fs_unlink(fs, DG_ROOT_INO, "a") == 0);
	m_unlink = crec_mark(rec, "a unlinked");
	REQUIRE(dg_fs_write(fs, b, 0, g[2], PAGES * DG_PAGE_SIZE) ==
		(ssize_t)(PAGES * DG_PAGE_SIZE));
	m_b = crec_mark(rec, "b written");
	file_vpns(fs, b, vb);
	REQUIRE(create(fs, "c", g[3]));
	m_c = crec_mark(rec, "c written");
	dg_vol_get_info(vol, &in);
	dg_fs_close(fs);
	dg_vol_close(vol);
	crec_stop(rec);
	/* b and c went to new rows; b to rows a had, journaled page and
	 * all: the case the replay must not undo. */
	CHECK_EQ(in.rows_new - new0, 2 * PAGES / 3);
	/* ... reserved by runs of rows, not a range a page: the states
	 * below replay those (the old layout, the ranges a page) */
	count_reservations(&tv, seq0, &runs, &per_page);
	printf("# entries reserving new rows: %u by runs, %u a page a "
	       "range\n", runs, per_page);
	CHECK(old_layout ? runs == 0 && per_page >= 2
			 : runs >= 2 && per_page == 0);
	for (unsigned i = 0; i < PAGES; i++)
		for (unsigned j = 0; j < PAGES; j++)
			overlap += vb[i] == va[j];
	CHECK(overlap > 0);
	for (unsigned j = 0; j < PAGES; j++)
		if (va[5] == vb[j])
			overlap += 1000;
	CHECK(overlap >= 1000);
	K = crec_npersists(rec);
	m_unlink = crec_marker(rec, (unsigned)m_unlink)->persists;
	m_b = crec_marker(rec, (unsigned)m_b)->persists;
	m_c = crec_marker(rec, (unsigned)m_c)->persists;
	printf("# %" PRIu64 " persists; a unlinked after %" PRIu64 ", b after "
	       "%" PRIu64 ", c after %" PRIu64 "; %u of b's pages where a's "
	       "were\n", K, m_unlink, m_b, m_c, overlap % 1000);

	for (uint64_t k = 0; k <= K; k++)
		for (unsigned p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			struct found f, f2;
			bool bad;

			REQUIRE(crec_build(rec, k, pols[p], k * 7 + p,
					   (const char *const *)out.paths) == 0);
			f = look(out.paths, buf, (const uint8_t *const *)g,
				 false, 5);
			f2 = look(out.paths, buf, (const uint8_t *const *)g,
				  k % 4 == p % 4, 5);
			bad = f.b != 1 && f.b != 2;
			bad |= k >= m_b && f.b != 2;
			bad |= f.a != 1 && f.a != F_A_CHANGED && f.a != 0;
			bad |= k >= m_unlink && f.a != 0;
			bad |= f.c != 0 && f.c != F_EMPTY && f.c != 3;
			bad |= k >= m_c && f.c != 3;
			bad |= f.scrub_bad || f2.a != f.a || f2.b != f.b ||
			       f2.c != f.c || f2.scrub_bad;
			if (bad) {
				fprintf(stderr, "k=%" PRIu64 " %s: a %d b %d c "
					"%d%s, again a %d b %d c %d%s\n",
					k, pol_names[p], f.a, f.b, f.c,
					f.scrub_bad ? " faults" : "", f2.a,
					f2.b, f2.c,
					f2.scrub_bad ? " faults" : "");
				CHECK(false);
			}
			seen_b[f.b == 2 ? 2 : 1]++;
			checked++;
		}
	printf("# %u crash states: b old in %" PRIu64 ", new in %" PRIu64
	       "\n", checked, seen_b[1], seen_b[2]);
	CHECK(seen_b[1] > 0 && seen_b[2] > 0);
	crec_free(rec);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	for (unsigned i = 0; i < 5; i++)
		free(g[i]);
	free(buf);
}

static void test_new_rows_states(void)
{
	new_rows_states(false);
}

static void test_new_rows_states_old_layout(void)
{
	new_rows_states(true);
}

/*
 * The writeback hold's scattered pages (file.c, scatter_move()): one
 * batch of every 4th page of file s and a few bytes of another, each
 * run shorter than a band, moved together to new rows in one
 * transaction, the old pages freed by it. At every persist point, under
 * every policy, s is wholly old or wholly new (new once the batch
 * returned), no open, read or scrub meets a fault, and a second open
 * reads the same.
 */
static void test_scatter_states(void)
{
	enum { NSEG = PAGES / 4 + 1 };
	struct tvol tv, out;
	struct dg_vol *vol;
	struct dg_fs *fs;
	struct dg_vol_info in;
	struct dg_wseg seg[NSEG];
	struct dg_attr at;
	struct crec *rec;
	uint8_t *g[3], *buf;
	uint64_t K, m_s, new0, seen[3] = { 0 };
	unsigned checked = 0;

	tvol_make(&tv, "crscat", NDEV, 1, 16ull << 20, false);
	tvol_make(&out, "crscatout", NDEV, 1, 16ull << 20, false);
	for (unsigned i = 0; i < 3; i++) {
		g[i] = malloc(PAGES * DG_PAGE_SIZE);
		REQUIRE(g[i]);
		fill_gen(g[i], i);
	}
	/* g[2]: generation 1 with the batch's bytes of generation 0. */
	memcpy(g[2], g[1], PAGES * DG_PAGE_SIZE);
	for (unsigned i = 0; i + 1 < NSEG; i++)
		seg[i] = (struct dg_wseg){ 4ull * i * DG_PAGE_SIZE,
					   g[0] + 4ull * i * DG_PAGE_SIZE,
					   DG_PAGE_SIZE };
	seg[NSEG - 1] = (struct dg_wseg){ 190ull * DG_PAGE_SIZE + 100,
					  g[0] + 190ull * DG_PAGE_SIZE + 100,
					  300 };
	for (unsigned i = 0; i < NSEG; i++)
		memcpy(g[2] + seg[i].off, seg[i].buf, seg[i].len);
	buf = aligned_alloc(DG_PAGE_SIZE, (PAGES + 2) * DG_PAGE_SIZE);
	REQUIRE(buf);

	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(create(fs, "b", g[1]));
	dg_fs_close(fs);
	dg_vol_close(vol);

	rec = crec_start((const char *const *)tv.paths, NDEV);
	REQUIRE(rec);
	vol = crec_open(tv.paths, NDEV, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_cache_csum_pages(vol, 1u << 20) == 0);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	dg_vol_get_info(vol, &in);
	new0 = in.rows_new;
	REQUIRE(dg_fs_lookup(fs, DG_ROOT_INO, "b", &at) == 0);
	dg_fs_forget(fs, at.ino, 1);
	REQUIRE(dg_fs_write_batch(fs, at.ino, seg, NSEG, NSEG) == 0);
	m_s = crec_mark(rec, "batch written");
	dg_vol_get_info(vol, &in);
	dg_fs_close(fs);
	dg_vol_close(vol);
	crec_stop(rec);
	/* The case: the 48 pages went to new rows (16 of 3 pages). */
	CHECK_EQ(in.rows_new - new0, (PAGES / 4) / 3);
	K = crec_npersists(rec);
	m_s = crec_marker(rec, (unsigned)m_s)->persists;
	printf("# %" PRIu64 " persists, the batch written after %" PRIu64
	       "\n", K, m_s);

	for (uint64_t k = 0; k <= K; k++)
		for (unsigned p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			struct found f, f2;

			REQUIRE(crec_build(rec, k, pols[p], k * 13 + p,
					   (const char *const *)out.paths) == 0);
			f = look(out.paths, buf, (const uint8_t *const *)g,
				 false, 3);
			f2 = look(out.paths, buf, (const uint8_t *const *)g,
				  k % 4 == p % 4, 3);
			if ((f.b != 1 && f.b != 2) || (k >= m_s && f.b != 2) ||
			    f.scrub_bad || f2.b != f.b || f2.scrub_bad) {
				fprintf(stderr, "k=%" PRIu64 " %s: s %d%s, "
					"again %d%s\n", k, pol_names[p], f.b,
					f.scrub_bad ? " faults" : "", f2.b,
					f2.scrub_bad ? " faults" : "");
				CHECK(false);
			}
			seen[f.b == 2 ? 2 : 1]++;
			checked++;
		}
	printf("# %u crash states: old in %" PRIu64 ", new in %" PRIu64 "\n",
	       checked, seen[1], seen[2]);
	CHECK(seen[1] > 0 && seen[2] > 0);
	crec_free(rec);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	for (unsigned i = 0; i < 3; i++)
		free(g[i]);
	free(buf);
}

/* Indexes whose checksum pages were written (the init map in core). */
static unsigned indexes_set(struct dg_vol *vol)
{
	unsigned n = 0;

	for (uint64_t i = 0; i < vol->sb.csum_pages; i++)
		n += dg_cmap_test(vol, i);
	return n;
}

#define IX_PAGES 768u /* 256 rows: d crosses into a block never written */

/* What one open finds of file d: 0 absent, F_EMPTY, 1 whole, 2 a
 * prefix (its write is more than one update), F_MIXED, F_ERROR; *bad
 * when the open, the reads or a scrub met a fault. */
static int look_d(char **paths, uint8_t *buf, const uint8_t *want,
		  bool scrub, bool *bad)
{
	struct dg_vol *vol = crec_open(paths, NDEV, 0);
	static struct dg_fault_event ev[DG_FAULT_RING];
	struct dg_fs *fs = NULL;
	struct dg_attr at;
	int st = F_ERROR;

	*bad = true;
	if (!vol)
		return st;
	if (dg_fs_open(vol, &fs)) {
		dg_vol_close(vol);
		return st;
	}
	if (dg_fs_lookup(fs, DG_ROOT_INO, "d", &at) != 0) {
		st = 0;
	} else {
		const void *data;
		ssize_t n;

		dg_fs_forget(fs, at.ino, 1);
		n = at.size && at.size <= IX_PAGES * DG_PAGE_SIZE
			    ? dg_fs_read(fs, at.ino, 0, at.size, buf, &data)
			    : -1;
		st = !at.size ? F_EMPTY
		     : n != (ssize_t)at.size ? F_ERROR
		     : memcmp(data, want, (size_t)n) ? F_MIXED
		     : at.size == IX_PAGES * DG_PAGE_SIZE ? 1
							  : 2;
	}
	*bad = false;
	for (unsigned i = 0, n = dg_vol_fault_events(vol, 0, ev, DG_FAULT_RING);
	     i < n; i++)
		*bad |= ev[i].what == DG_WHAT_DATA ||
			ev[i].what == DG_WHAT_PARITY ||
			ev[i].what == DG_WHAT_CSUM_PAGE;
	if (scrub) {
		struct dg_scrub_report sr;

		*bad |= dg_vol_scrub(vol, false, &sr, NULL, NULL) ||
			sr.detected || sr.parity_mismatch || sr.unrecoverable;
	}
	dg_fs_close(fs);
	dg_vol_close(vol);
	return st;
}

/*
 * A write to new rows that is the first into a block of 510 rows: the
 * block's checksum pages are written, every copy on every device, in the
 * round of the rows (csum.c, fresh_add()), and the init map's bit in the
 * round of the update's entry (dg_cmap_ride()). At every persist point, under every policy (torn among
 * them: any subset of that round's copies), file d is absent, empty, a
 * prefix of its bytes or whole (whole once its write returned), no open, read or scrub meets a
 * bad data, parity or checksum page, and a second open reads the same.
 */
static void new_index_states(bool cache)
{
	struct tvol tv, out;
	struct dg_vol *vol;
	struct dg_fs *fs;
	struct crec *rec;
	uint8_t *g, *filler, *buf;
	uint64_t K, m_d;
	unsigned before, after, checked = 0, whole = 0;

	tvol_make(&tv, cache ? "crnewixc" : "crnewix", NDEV, 1, 16ull << 20,
		  false);
	tvol_make(&out, cache ? "crnewixcout" : "crnewixout", NDEV, 1,
		  16ull << 20, false);
	g = malloc(IX_PAGES * DG_PAGE_SIZE);
	filler = malloc(PAGES * DG_PAGE_SIZE);
	buf = aligned_alloc(DG_PAGE_SIZE, (IX_PAGES + 2) * DG_PAGE_SIZE);
	REQUIRE(g && filler && buf);
	for (uint64_t i = 0; i < IX_PAGES * DG_PAGE_SIZE / 8; i++)
		((uint64_t *)g)[i] = 7ull << 32 | i;
	fill_gen(filler, 1);

	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(create(fs, "a", filler));
	dg_fs_close(fs);
	dg_vol_close(vol);

	rec = crec_start((const char *const *)tv.paths, NDEV);
	REQUIRE(rec);
	vol = crec_open(tv.paths, NDEV, 0);
	REQUIRE(vol);
	if (cache)
		REQUIRE(dg_vol_cache_csum_pages(vol, 1u << 20) == 0);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	before = indexes_set(vol);
	{
		struct dg_attr at;

		REQUIRE(dg_fs_mknod(fs, DG_ROOT_INO, "d", S_IFREG | 0644, 0,
				    0, 0, &at) == 0);
		dg_fs_forget(fs, at.ino, 1);
		REQUIRE(dg_fs_write(fs, at.ino, 0, g,
				    IX_PAGES * DG_PAGE_SIZE) ==
			(ssize_t)(IX_PAGES * DG_PAGE_SIZE));
	}
	m_d = crec_mark(rec, "d written");
	after = indexes_set(vol);
	dg_fs_close(fs);
	dg_vol_close(vol);
	crec_stop(rec);
	K = crec_npersists(rec);
	m_d = crec_marker(rec, (unsigned)m_d)->persists;
	printf("# %" PRIu64 " persists, d written after %" PRIu64 "; "
	       "indexes written %u -> %u\n", K, m_d, before, after);
	CHECK(after > before); /* the case: a block first written */

	for (uint64_t k = 0; k <= K; k++)
		for (unsigned p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			bool bad1, bad2;
			int d1, d2;

			REQUIRE(crec_build(rec, k, pols[p], k * 11 + p,
					   (const char *const *)out.paths) == 0);
			d1 = look_d(out.paths, buf, g, false, &bad1);
			d2 = look_d(out.paths, buf, g, k % 4 == p % 4, &bad2);
			if ((d1 != 0 && d1 != F_EMPTY && d1 != 1 && d1 != 2) ||
			    (k >= m_d && d1 != 1) || d2 != d1 || bad1 ||
			    bad2) {
				fprintf(stderr, "k=%" PRIu64 " %s: d %d%s, "
					"again %d%s\n", k, pol_names[p], d1,
					bad1 ? " faults" : "", d2,
					bad2 ? " faults" : "");
				CHECK(false);
			}
			whole += d1 == 1;
			checked++;
		}
	printf("# %u crash states, d whole in %u\n", checked, whole);
	CHECK(whole > 0 && whole < checked);
	crec_free(rec);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
	free(g);
	free(filler);
	free(buf);
}

static void test_new_index_states(void)
{
	new_index_states(false);
}

/* As the daemon runs: the pages an initialisation wrote are cached, and
 * the update's later rounds store only their entries and the seals into
 * them. */
static void test_new_index_states_cached(void)
{
	new_index_states(true);
}

/* Whether index is set in the map of the images at paths, as an open
 * that does not replay loads it (the union of the slots that verify). */
static bool map_has(char **paths, uint64_t index)
{
	struct dg_vol *vol = crec_open(paths, NDEV,
				       DG_OPEN_RDONLY | DG_OPEN_NORECOVER);
	bool set;

	if (!vol)
		return false;
	set = dg_cmap_test(vol, index);
	dg_vol_close(vol);
	return set;
}

/*
 * The map's two slots under one-slot and whole writes (csum.c, "the
 * map's writes"): index A set up by a page's update, its bit taken along
 * by the next update's entry (one slot), then index B set up by a
 * checksum no entry names, its map page written whole (both slots, a
 * round each). At every persist point from A's ride on, under every
 * policy, A is in the map an open loads: the whole write begins with the
 * slot the ride did not write, so a crash tearing it leaves the ride's
 * slot whole. (Begun with slot 0, the ride's, the torn states lost A.)
 */
static void test_map_slot_order_states(void)
{
	uint8_t page[DG_PAGE_SIZE] = { 1 };
	struct dg_flushset fs;
	struct tvol tv, out;
	struct dg_vol *vol;
	struct crec *rec;
	uint64_t a, b, K, m_ride;
	unsigned checked = 0;

	tvol_make(&tv, "crmapslot", NDEV, 1, 16ull << 20, false);
	tvol_make(&out, "crmapslotout", NDEV, 1, 16ull << 20, false);
	rec = crec_start((const char *const *)tv.paths, NDEV);
	REQUIRE(rec);
	vol = crec_open(tv.paths, NDEV, 0);
	REQUIRE(vol);
	a = vol->sb.csum_pages - 2;
	b = vol->sb.csum_pages - 3;
	REQUIRE(!dg_cmap_test(vol, a) && !dg_cmap_test(vol, b));
	{
		uint64_t row = a * DG_CSUMS_PER_PAGE + 1;
		unsigned dev = dg_row_data_dev(vol, row, 0);
		struct dg_range r = { dg_loc_vpn(vol, dev, row), 0,
				      DG_PAGE_SIZE, page };

		REQUIRE(dg_apply(vol, &r, 1) == 0);	/* sets A up */
		r.vpn = tdata_vpn(vol);
		REQUIRE(dg_apply(vol, &r, 1) == 0);	/* its entry: A's bit */
	}
	m_ride = crec_mark(rec, "A's bit ridden");
	dg_flushset_init(&fs);
	REQUIRE(dg_csum_set(vol, 0, b * DG_CSUMS_PER_PAGE + 1, 12345, &fs) ==
		0);
	REQUIRE(dg_flushset_persist(vol->devs, vol->ndev, &fs) == 0);
	dg_flushset_fini(&fs);
	dg_vol_close(vol);
	crec_stop(rec);
	K = crec_npersists(rec);
	m_ride = crec_marker(rec, (unsigned)m_ride)->persists;
	printf("# %" PRIu64 " persists, A's bit ridden after %" PRIu64 "\n",
	       K, m_ride);
	CHECK(K > m_ride + 2); /* B's pages, then its two slots */
	for (uint64_t k = m_ride; k <= K; k++)
		for (unsigned p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			REQUIRE(crec_build(rec, k, pols[p], k * 5 + p,
					   (const char *const *)out.paths) == 0);
			if (!map_has(out.paths, a)) {
				fprintf(stderr, "k=%" PRIu64 " %s: A lost from "
					"the map\n", k, pol_names[p]);
				CHECK(false);
			}
			checked++;
		}
	printf("# %u crash states\n", checked);
	crec_free(rec);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "new_rows_states", test_new_rows_states },
		{ "new_rows_states_old_layout",
		  test_new_rows_states_old_layout },
		{ "scatter_states", test_scatter_states },
		{ "new_index_states", test_new_index_states },
		{ "new_index_states_cached", test_new_index_states_cached },
		{ "map_slot_order_states", test_map_slot_order_states },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
