// SPDX-License-Identifier: MIT
/* test_crash_lone.c -- crash states of small writes into rows that hold
 * nothing else, into blank holes beside pages in use and over pages in
 * use, with and without a fault on top */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsys_i.h"
#include "harness.h"
#include "recorder.h"
#include "volume_i.h"

/*
 * apply.c's lone rows: a page written into a hole, whose row's other
 * data pages are free and blank, goes with the row's parity before the
 * journal entry, reserved by its page, its bytes never journaled; so
 * does a hole filled beside pages in use, its parity a round after it;
 * and a journaled overwrite writes its row's parity a round before its
 * page. The recorded run, on 4 devices with parity 1, begins by making the rows
 * of pages 0 and 1 blank again after use, as the blanker does (blank.c):
 *   w0, w0' pages 0 and 1 (generation 3): lone rows;
 *   t  the file truncated to nothing: both freed, their bytes left;
 *   b  the blanker gives both rows back as zeros, in one update
 *      (trim.c, as new rows);
 * and then writes one page at a time into file s (each write 4 KiB, a
 * page of its own generation):
 *   w1 page 0 (into the row just blanked) and w2 page 1: lone rows;
 *   w3 page 0's neighbour in its row (the same row, another device):
 *      a hole filled beside w1's page, reserved by its page, the row's
 *      parity patched from the old and stored after the page;
 *   w4 page 2: a lone row;
 *   w5 page 1 again: an overwrite in place, journaled;
 *   w6 page 2's neighbour: a hole filled beside w4's page;
 *   w7 page 0 again: an overwrite in place, journaled, w3's page beside
 *      it.
 * That is the volume as mkfs makes it (lone_states); on one made
 * --remap (remap_states) w5 and w7 go to blank pages instead, each with a
 * record in the file's remap page (fs/fsys/remap.c), the pages they
 * overwrite left whole.
 * At every persist point, under every policy (the random and torn ones
 * three times), the images are opened
 * (journal replay) as they are and again with each of 30 faults put on
 * them, one at a time (a byte flipped, the page zeroed, its write lost
 * or another's misdirected to it, or its whole device missing at the
 * open: w1's or w4's page, its row's parity, or the page its neighbour
 * write goes to), and every page of s reads
 * what the writes before the crash left, the write in flight old or new,
 * never other bytes (a page past the end or in a hole reads zeros: the
 * truncate's old or new), never EIO. While a lone write is in flight
 * nothing acknowledged is in its row; while a hole is filled the page
 * beside proves from the row with the hole as zeros or as written (the
 * page is durable before the parity); while an overwrite is in place,
 * as found or as redone (the parity is durable before the page) -- and
 * a splice of the two at a torn parity's boundary (docs/integrity.md,
 * "Replay under faults"). With the page and its parity written in one
 * round, w7's neighbour read EIO in 6 states. A device missing may not
 * refuse the open either: the metadata every write journals beside it
 * is proven with the entry's bytes over its row as found, and a blank
 * page beside a torn journaled write by its checksum (journal.c,
 * redo_data_page()). Unfaulted states also find no bad
 * page in the replay, the reads or (every 4th) a scrub, and a second
 * open of every state reads the same as the first.
 */

#define NDEV	4u
#define NWRITES 11u
#define NPAGES	4u	/* file pages the checks read: 0, 1, 2 and the two
			 * neighbours are looked at by their own index */

/* The random and torn policies drawn three times each: a page and its
 * parity torn or landed apart is the state that tells the orders of a
 * write apart, and one draw a crash point may miss it. */
static const enum crec_policy pols[] = { CREC_NONE,   CREC_ALL,
					 CREC_RANDOM, CREC_TORN,
					 CREC_RANDOM, CREC_TORN,
					 CREC_RANDOM, CREC_TORN };
static const char *const pol_names[] = { "none",   "all",  "random",
					  "torn",   "random", "torn",
					  "random", "torn" };

/* The steps: file page, generation (0: the truncate's hole, in every
 * page), and what it is. */
enum { W_WRITE, W_TRUNC, W_BLANK };
struct wr {
	uint64_t page;
	unsigned gen, what;
};
#define NO_PAGE UINT64_MAX

/* What a page reads: 0 zeros (a hole), g a generation, or below. */
enum { R_EIO = 100, R_OTHER };

static void fill(uint8_t *b, uint64_t page, unsigned gen)
{
	uint64_t *w = (uint64_t *)b;

	for (unsigned i = 0; i < DG_PAGE_SIZE / 8; i++)
		w[i] = (uint64_t)gen << 48 | page << 16 | i;
}

static int page_state(struct dg_fs *fs, uint64_t ino, uint64_t page)
{
	static uint8_t buf[DG_PAGE_SIZE], want[DG_PAGE_SIZE];
	const void *data;
	ssize_t n = dg_fs_read(fs, ino, page * DG_PAGE_SIZE, DG_PAGE_SIZE,
			       buf, &data);

	if (n == -EIO)
		return R_EIO;
	if (n < 0)
		return R_OTHER;
	if (n == 0) /* past the end: as a hole */
		return 0;
	if (n != DG_PAGE_SIZE)
		return R_OTHER;
	memset(want, 0, sizeof(want));
	if (!memcmp(data, want, DG_PAGE_SIZE))
		return 0;
	for (unsigned g = 1; g <= 3; g++) {
		fill(want, page, g);
		if (!memcmp(data, want, DG_PAGE_SIZE))
			return (int)g;
	}
	return R_OTHER;
}

/* One open: the state of every page the writes touch into st[], in the
 * order of pg[]; *bad when the replay, the reads or the scrub met a bad
 * data or parity page. false when the open or the file failed. */
static bool look(char **paths, const uint64_t *pg, unsigned npg, int *st,
		 bool scrub, bool *bad, int miss)
{
	char *open_paths[NDEV], none[] = "";
	struct dg_vol *vol;
	static struct dg_fault_event ev[DG_FAULT_RING];
	struct dg_fs *fs = NULL;
	struct dg_attr at;

	for (unsigned d = 0; d < NDEV; d++)
		open_paths[d] = (int)d == miss ? none : paths[d];
	vol = crec_open_quiet(open_paths, NDEV, miss < 0 ? 0 :
				      DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW,
			      NULL);
	*bad = true;
	if (!vol)
		return false;
	if (dg_fs_open(vol, &fs) || dg_fs_lookup(fs, DG_ROOT_INO, "s", &at)) {
		if (fs)
			dg_fs_close(fs);
		dg_vol_close(vol);
		return false;
	}
	dg_fs_forget(fs, at.ino, 1);
	for (unsigned i = 0; i < npg; i++)
		st[i] = page_state(fs, at.ino, pg[i]);
	*bad = false;
	for (unsigned i = 0, n = dg_vol_fault_events(vol, 0, ev, DG_FAULT_RING);
	     i < n; i++)
		*bad |= ev[i].what == DG_WHAT_DATA ||
			ev[i].what == DG_WHAT_PARITY;
	if (scrub) {
		struct dg_scrub_report sr;

		*bad |= dg_vol_scrub(vol, false, &sr, NULL, NULL) ||
			sr.detected || sr.parity_mismatch || sr.unrecoverable;
	}
	dg_fs_close(fs);
	dg_vol_close(vol);
	return true;
}

/* A fault on a page of the crash images, of the compound campaign's
 * kinds (test_crash.c): a byte flipped, the page zeroed, its write lost
 * (the page as the recording began) or another page's write misdirected
 * to it (the next row's page of the same device); or the page's whole
 * device missing at the open (degraded, read-write). */
enum { FK_FLIP, FK_ZERO, FK_LOST, FK_MISDIRECT, FK_MISSING, FK_NR };
static const char *const fk_names[FK_NR] = { "flipped", "zeroed", "lost",
					     "misdirected", "missing" };

struct fault {
	unsigned dev;
	uint64_t page;		/* device page */
	uint64_t file_page;	/* the file page it holds, or UINT64_MAX */
	unsigned kind;
};

static void put_fault(struct crec *rec, char **paths, const struct fault *f)
{
	uint8_t b[DG_PAGE_SIZE];
	int fd = f->kind == FK_MISSING ? -1 : open(paths[f->dev], O_RDWR);
	off_t off = (off_t)(f->page << DG_PAGE_SHIFT);
	const uint8_t *snap;
	uint64_t size;

	if (f->kind == FK_MISSING)
		return; /* at the open (look()) */
	REQUIRE(fd >= 0);
	REQUIRE(pread(fd, b, sizeof(b), off) == (ssize_t)sizeof(b));
	switch (f->kind) {
	case FK_FLIP:
		b[1234] ^= 0x10;
		break;
	case FK_ZERO:
		memset(b, 0, sizeof(b));
		break;
	case FK_LOST:
		snap = crec_snapshot(rec, f->dev, &size);
		REQUIRE(snap && (uint64_t)off + sizeof(b) <= size);
		memcpy(b, snap + off, sizeof(b));
		break;
	default:
		REQUIRE(pread(fd, b, sizeof(b), off + DG_PAGE_SIZE) ==
			(ssize_t)sizeof(b));
	}
	REQUIRE(pwrite(fd, b, sizeof(b), off) == (ssize_t)sizeof(b));
	close(fd);
}

static uint64_t vpn_of(struct dg_fs *fs, uint64_t ino, uint64_t page)
{
	uint64_t vpn = 0, run;

	dg_ext_lookup(dg_inode_get(fs, ino), page, &vpn, &run);
	return vpn;
}

/* in_place: a volume made without --remap, where w5 and w7 are journaled
 * overwrites; else w5 and w7 are redirected to blank pages, a remap
 * record each (fs/fsys/remap.c), and the pages they leave are read by
 * nothing: two more lone rows or holes filled. */
static void lone_states(bool in_place)
{
	const struct dg_format_opts o = { .parity = 1, .size = 16ull << 20,
					  .force = true, .remap = !in_place };
	struct tvol tv, out;
	struct dg_vol *vol;
	struct dg_fs *fs;
	struct dg_vol_info in;
	struct dg_attr at;
	struct crec *rec;
	struct wr w[NWRITES];
	struct fault faults[6 * FK_NR];
	uint64_t mark[NWRITES], pg[NWRITES], K, lone0, holes0, blank0;
	uint64_t v0 = 0, v2 = 0;
	uint64_t cp, vw0 = 0;
	unsigned npg = 0, nfaults = 0, checked = 0, faulted = 0;
	uint8_t page[DG_PAGE_SIZE];
	struct dg_loc l;

	tvol_make_opts(&tv, "crlone", NDEV, &o);
	tvol_make_opts(&out, "crloneout", NDEV, &o);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(dg_fs_mknod(fs, DG_ROOT_INO, "s", S_IFREG | 0644, 0, 0, 0,
			    &at) == 0);
	dg_fs_forget(fs, at.ino, 1);
	dg_fs_close(fs);
	dg_vol_close(vol);

	rec = crec_start((const char *const *)tv.paths, NDEV);
	REQUIRE(rec);
	vol = crec_open(tv.paths, NDEV, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_cache_csum_pages(vol, 1u << 20) == 0);
	REQUIRE(dg_fs_open(vol, &fs) == 0);
	REQUIRE(dg_vol_blank_start(vol) == 0);
	cp = vol->sb.chunk_pages;
	dg_vol_get_info(vol, &in);
	lone0 = in.rows_lone;
	holes0 = in.holes_filled;
	blank0 = in.rows_blanked;
	w[0] = (struct wr){ 0, 3, W_WRITE };
	w[1] = (struct wr){ 1, 3, W_WRITE };
	w[2] = (struct wr){ 0, 0, W_TRUNC };
	w[3] = (struct wr){ NO_PAGE, 0, W_BLANK };
	w[4] = (struct wr){ 0, 1, W_WRITE };
	w[5] = (struct wr){ 1, 1, W_WRITE };
	w[7] = (struct wr){ 2, 1, W_WRITE };
	w[8] = (struct wr){ 1, 2, W_WRITE };
	w[10] = (struct wr){ 0, 2, W_WRITE };
	for (unsigned i = 0; i < NWRITES; i++) {
		if (i == 6 || i == 9) {
			/* The neighbour of page 0 (2): a file page a chunk
			 * on, which the allocator puts at the next data
			 * device of the same row (a sparse file's pages go
			 * where its home says: alloc.c, dg_alloc_home()). */
			uint64_t base = i == 6 ? 0 : 2;

			w[i] = (struct wr){ base + cp, 1, W_WRITE };
		}
		if (w[i].what == W_TRUNC) {
			struct dg_setattr sa = { .valid = DG_SET_SIZE };
			struct dg_attr after;

			vw0 = vpn_of(fs, at.ino, 0);
			REQUIRE(dg_fs_setattr(fs, at.ino, &sa, &after) == 0);
			mark[i] = crec_mark(rec, "truncate");
			continue;
		}
		if (w[i].what == W_BLANK) {
			/* The blanker's thread, waited for: the only
			 * writer while it runs. */
			REQUIRE(dg_vol_blank_idle(vol, 60000));
			mark[i] = crec_mark(rec, "blank");
			continue;
		}
		fill(page, w[i].page, w[i].gen);
		REQUIRE(dg_fs_write(fs, at.ino, w[i].page * DG_PAGE_SIZE,
				    page, DG_PAGE_SIZE) == DG_PAGE_SIZE);
		mark[i] = crec_mark(rec, "write");
		if (i == 4 || i == 7) {
			/* Its neighbour's place: the next data device of
			 * its row, free and blank before the neighbour
			 * write (a fault target). */
			uint64_t v = vpn_of(fs, at.ino, w[i].page);

			l = dg_vpn_loc(vol, v);
			REQUIRE(dg_row_data_rank(vol, l.row, l.dev) + 1 <
				vol->k);
			if (i == 4)
				v0 = v;
			else
				v2 = v;
		}
	}
	/* The layout the run is about: w1 in the row w0 used and the
	 * blanker gave back, the neighbours in their rows. */
	REQUIRE(v0 == vw0);
	REQUIRE(vpn_of(fs, at.ino, cp) == v0 + cp);
	REQUIRE(vpn_of(fs, at.ino, 2 + cp) == v2 + cp);
	dg_vol_get_info(vol, &in);
	if (in_place) {
		CHECK_EQ(in.rows_lone - lone0, 5);
		CHECK_EQ(in.holes_filled - holes0, 2);
	} else {
		uint64_t remapped, folded;

		/* w5 and w7 each to a blank page: a lone row or a hole,
		 * as the allocator finds them. */
		dg_fs_remap_counts(fs, &remapped, &folded);
		CHECK_EQ(remapped, 2);
		CHECK_EQ(in.rows_lone - lone0 + in.holes_filled - holes0, 9);
		CHECK(in.rows_lone - lone0 >= 5);
	}
	CHECK_EQ(in.rows_blanked - blank0, 2);
	/* The faults: w1's and w4's pages, the parity of their rows, and
	 * the neighbours' pages, each of every kind. */
	for (unsigned kind = 0; kind < FK_NR; kind++)
		for (unsigned j = 0; j < 2; j++) {
			uint64_t v = j ? v2 : v0, fp = j ? 2 : 0;
			uint64_t row = dg_vpn_loc(vol, v).row;
			uint64_t dp = dg_row_page(vol, row);

			l = dg_vpn_loc(vol, v);
			faults[nfaults++] = (struct fault){ l.dev, dp, fp,
							    kind };
			faults[nfaults++] = (struct fault){
				dg_row_parity_dev(vol, row, 0), dp,
				UINT64_MAX, kind };
			l = dg_vpn_loc(vol, v + cp);
			faults[nfaults++] = (struct fault){ l.dev, dp, fp + cp,
							    kind };
		}
	dg_fs_close(fs);
	dg_vol_close(vol);
	crec_stop(rec);
	for (unsigned i = 0; i < NWRITES; i++) {
		bool seen = w[i].page == NO_PAGE;

		for (unsigned x = 0; x < npg; x++)
			seen |= pg[x] == w[i].page;
		if (!seen)
			pg[npg++] = w[i].page;
	}
	K = crec_npersists(rec);
	for (unsigned i = 0; i < NWRITES; i++)
		mark[i] = crec_marker(rec, (unsigned)mark[i])->persists;
	printf("# %" PRIu64 " persists; writes done after", K);
	for (unsigned i = 0; i < NWRITES; i++)
		printf(" %" PRIu64, mark[i]);
	printf("\n");

	for (uint64_t k = 0; k <= K; k++)
		for (unsigned p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			/* The write in flight: the first not returned. */
			unsigned fl = 0;

			while (fl < NWRITES && k >= mark[fl])
				fl++;
			for (unsigned pass = 0; pass <= nfaults; pass++) {
				const struct fault *f =
					pass ? &faults[pass - 1] : NULL;
				int st[NWRITES], st2[NWRITES];
				bool bad, bad2, ok = true;

				REQUIRE(crec_build(rec, k, pols[p], k * 11 + p,
						   (const char *const *)
							   out.paths) == 0);
				if (f)
					put_fault(rec, out.paths, f);
				int miss = f && f->kind == FK_MISSING
						   ? (int)f->dev : -1;

				ok &= look(out.paths, pg, npg, st,
					   !f && k % 4 == p % 4, &bad, miss);
				ok &= look(out.paths, pg, npg, st2, false,
					   &bad2, miss);
				for (unsigned x = 0; x < npg; x++) {
					/* Before and after the writes to
					 * it (the truncate's to every
					 * page): old is the last one done. */
					int old = 0, new = -1;

					for (unsigned i = 0; i < NWRITES; i++)
						if (w[i].page != pg[x] &&
						    w[i].what != W_TRUNC)
							continue;
						else if (i < fl)
							old = (int)w[i].gen;
						else if (i == fl)
							new = (int)w[i].gen;
					ok &= st[x] == st2[x];
					if (st[x] == old || st[x] == new)
						continue;
					ok = false;
				}
				ok &= f || (!bad && !bad2);
				if (!ok) {
					fprintf(stderr, "k=%" PRIu64 " %s%s: "
						"in flight w%u;", k,
						pol_names[p],
						f ? " faulted" : "", fl + 1);
					for (unsigned x = 0; x < npg; x++)
						fprintf(stderr, " page %" PRIu64
							" %d/%d", pg[x], st[x],
							st2[x]);
					if (f)
						fprintf(stderr, "; fault dev %u "
							"page %" PRIu64 " %s",
							f->dev, f->page,
							fk_names[f->kind]);
					fprintf(stderr, "%s\n",
						bad ? "; faults met" : "");
					CHECK(false);
				}
				checked++;
				faulted += !!f;
			}
		}
	printf("# %u crash states, %u with a fault\n", checked, faulted);
	crec_free(rec);
	tvol_cleanup(&out);
	tvol_cleanup(&tv);
}

static void test_lone_states(void)
{
	lone_states(true);
}

static void test_remap_states(void)
{
	lone_states(false);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "lone_states", test_lone_states },
		{ "remap_states", test_remap_states },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
