// SPDX-License-Identifier: MIT
/* apply.c -- the one update path: journal, data, checksums, parity, persist */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csum.h"

/* An update of this many ranges or fewer (a 4 KiB write, a small
 * metadata change) keeps its bookkeeping on the stack: the six arrays
 * and the checksum list it allocated and freed cost a microsecond or
 * two of malloc a write. */
#define SMALL_PAGES 8

/* One page an update touches. */
struct apage {
	uint64_t vpn, row;
	unsigned dev;
	uint8_t *old, *img;	/* page buffers (redundancy only) */
	/* The page after the update: img, or the caller's bytes when one
	 * range is all of it (no copy made). */
	const uint8_t *new;
	uint64_t old_csum, new_csum;
	uint32_t lo, hi;	/* changed bytes [lo, hi) */
	unsigned nranges;	/* ranges that touch the page */
	unsigned r0;		/* ... rix[r0, r0 + nranges) (note_ranges()) */
	bool whole;		/* some range covers the whole page */
	bool fresh;		/* ... a range new to the page (DG_RANGE_NEW) */
	bool full_row;		/* every data page of its row is whole */
	bool in_place;		/* ... and new: written before the entry */
	bool lone;		/* in_place, its row's other pages free and
				 * blank (mark_lone_rows()) */
	bool beside;		/* ... or, lone but for live pages beside,
				 * the page itself blank: a hole filled
				 * (check_lone_rows()) */
};

/* One row whose parity an update patches. */
struct arow {
	uint64_t row;
	uint8_t *par[DG_MAX_PARITY];
	uint64_t par_csum[DG_MAX_PARITY];	/* old */
	uint64_t new_par_csum[DG_MAX_PARITY];
	uint32_t lo, hi;
	unsigned left;		/* pages still to patch in (prepare_parity()) */
	bool started;		/* ... its old parity read */
	bool in_place;		/* a new row (new_rows_first()) */
	bool patched;		/* not new: its parity patched with deltas
				 * (prepare_parity()) */
	enum {
		PARITY_WITH_PAGES,	/* in its pages' round */
		PARITY_AFTER,		/* in the round after theirs */
		PARITY_BEFORE,		/* in a round before theirs */
	} parity_round;		/* (write_pages()) */
	unsigned page[DG_MAX_DEVS];	/* by data rank: index + 1 of the
					 * update's page there, 0 none */
};

/*
 * Page images of an update live in a buffer kept per thread: a fresh
 * multi-MiB allocation per call was mmap'd and faulted in every time.
 */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

enum { SCRATCH_PAGES, SCRATCH_ENTRY, SCRATCH_NEW_PARITY, SCRATCH_NR };

struct scratch {
	uint8_t *mem[SCRATCH_NR];
	size_t size[SCRATCH_NR];
};

static void scratch_free(void *p)
{
	struct scratch *s = p;

	for (int i = 0; i < SCRATCH_NR; i++)
		free(s->mem[i]);
	free(s);
}

static void scratch_init(void)
{
	pthread_key_create(&scratch_key, scratch_free);
}

static uint8_t *scratch_get(int slot, size_t size)
{
	struct scratch *s;

	pthread_once(&scratch_once, scratch_init);
	s = pthread_getspecific(scratch_key);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || pthread_setspecific(scratch_key, s)) {
			free(s);
			return NULL;
		}
	}
	if (s->size[slot] < size) {
		free(s->mem[slot]);
		size = (size + DG_PAGE_SIZE - 1) & ~(size_t)(DG_PAGE_SIZE - 1);
		s->mem[slot] = aligned_alloc(DG_PAGE_SIZE, size);
		s->size[slot] = s->mem[slot] ? size : 0;
	}
	return s->mem[slot];
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The end of the ascending run of b (n entries of size) that starts
 * at i. */
static size_t run_end(const char *b, size_t i, size_t n, size_t size,
		      int (*cmp)(const void *, const void *))
{
	for (i++; i < n && cmp(b + (i - 1) * size, b + i * size) <= 0; i++)
		;
	return i;
}

/*
 * Sort, stable, by merging the ascending runs the array already has,
 * pairwise, until one is left. The lists an update sorts come in a few
 * runs (a band's pages rank by rank: a run a data device), so this is
 * two or three passes, where glibc's merge sort of the 256 pages of a
 * megabyte took n log n compare calls, 4% of the update. Nothing to do
 * for a sorted array; qsort() when no buffer is to be had.
 */
static void sort_runs(void *base, size_t n, size_t size,
		      int (*cmp)(const void *, const void *))
{
	char *b = base, *tmp;
	size_t runs;

	if (run_end(b, 0, n ? n : 1, size, cmp) >= n)
		return;
	tmp = malloc(n * size);
	if (!tmp) {
		qsort(base, n, size, cmp);
		return;
	}
	do {
		char *out = tmp;

		runs = 0;
		for (size_t i = 0; i < n;) {
			size_t m = run_end(b, i, n, size, cmp);
			size_t e = m < n ? run_end(b, m, n, size, cmp) : n;
			size_t x = i, y = m;

			runs++;
			while (x < m || y < e) {
				/* Ties from the first run: stable. */
				size_t k = y >= e || (x < m &&
					   cmp(b + x * size, b + y * size) <= 0)
						   ? x++
						   : y++;

				memcpy(out, b + k * size, size);
				out += size;
			}
			i = e;
		}
		memcpy(b, tmp, n * size);
	} while (runs > 1);
	free(tmp);
}

/* The index of vpn's page in pg (sorted by vpn): at or just after
 * hint, the page of the range before (ranges mostly come in order), or
 * found by bisection. */
static inline unsigned page_ix(const struct apage *pg, unsigned npg,
			       uint64_t vpn, unsigned hint)
{
	unsigned lo = 0, hi = npg;

	if (hint < npg && pg[hint].vpn == vpn)
		return hint;
	if (hint + 1 < npg && pg[hint + 1].vpn == vpn)
		return hint + 1;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (pg[mid].vpn < vpn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int check_ranges(struct dg_vol *vol, const struct dg_range *r,
			unsigned n)
{
	if (n == 0)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (r[i].vpn >= vol->vpns || r[i].len == 0 ||
		    r[i].off >= DG_PAGE_SIZE ||
		    r[i].len > DG_PAGE_SIZE - r[i].off || !r[i].data)
			return -EINVAL;
	return 0;
}

size_t dg_apply_max_bytes(struct dg_vol *vol)
{
	size_t max = dg_journal_max_entry(vol);
	size_t per_page = DG_PAGE_SIZE + sizeof(struct dg_djrange);

	/* Whole pages, each with its range descriptor, plus the header. */
	max = (max - dg_jentry_meta_len(vol, 0)) / per_page * DG_PAGE_SIZE;
	/* Degraded, a row's missing data pages ride along whole (see
	 * add_companions()): room for one per missing device per page. */
	if (vol->degraded && !vol->read_only)
		max = max / (1 + __builtin_popcount(vol->missing_mask)) &
		      ~(size_t)(DG_PAGE_SIZE - 1);
	return max;
}

void dg_vol_set_page_hook(struct dg_vol *vol, dg_page_hook hook, void *arg)
{
	vol->page_hook = hook;
	vol->page_hook_arg = arg;
}

/* A page one range covers whole: the range's bytes can stand for it. */
static bool sole_whole(const struct apage *p)
{
	return p->whole && p->nranges == 1;
}

/*
 * The journal entry's header and range descriptors; *datap gets where
 * each range's bytes are (the caller's buffers: the journal copies them
 * straight to the log). A page one range covers whole is sealed by its
 * new checksum, so the entry checksum skips its bytes (format.h).
 */
static struct dg_djentry *build_entry(struct dg_vol *vol,
				      const struct dg_range *r, unsigned n,
				      const unsigned *pix, struct apage *pg,
				      const void *const **datap)
{
	size_t hlen = sizeof(struct dg_djentry) + n * sizeof(struct dg_djrange);
	size_t len = hlen;
	struct dg_djentry *e;
	struct dg_djrange *jr;
	const void **data;

	for (unsigned i = 0; i < n; i++)
		if (!pg[pix[i]].in_place)
			len += (r[i].len + 7u) & ~7u;
	len = (len + DG_JALIGN - 1) & ~(size_t)(DG_JALIGN - 1);
	e = (struct dg_djentry *)scratch_get(SCRATCH_ENTRY,
					     hlen + n * sizeof(*data));
	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e));
	e->len = (uint32_t)len;
	e->nranges = n;
	jr = (struct dg_djrange *)(e + 1);
	data = (const void **)(jr + n);
	for (unsigned i = 0; i < n; i++) {
		struct apage *p = &pg[pix[i]];
		bool sealed = vol->sealed_journal && sole_whole(p);

		jr[i] = (struct dg_djrange){
			.row = p->row,
			.dev = (uint16_t)p->dev,
			.off = (uint16_t)r[i].off,
			.len = (uint16_t)r[i].len,
			.flags = p->in_place ? DG_JRANGE_IN_PLACE
				 : sealed    ? DG_JRANGE_SEALED
					     : 0,
			.page_csum = p->new_csum,
		};
		data[i] = r[i].data;
	}
	*datap = data;
	return e;
}

static int apage_row_cmp(const void *a, const void *b)
{
	const struct apage *x = *(const struct apage *const *)a;
	const struct apage *y = *(const struct apage *const *)b;

	return x->row < y->row ? -1 : x->row > y->row;
}

/*
 * A whole row of pages new to the update (allocated by it, so nothing
 * live was in the row; none in the metadata zone, whose copies the
 * replay writes from the journal) is a new row: written, with parity
 * and checksums, and made durable before the journal entry, which then
 * carries only its checksums (DG_JRANGE_IN_PLACE). A crash before the
 * entry leaves a row nobody uses; after it, the row is all there. Not on
 * a degraded volume (a missing page rides in the journal) nor during a
 * replace (whose argument is the journaled update's).
 */
bool dg_new_row_allowed(const struct dg_vol *vol)
{
	return vol->new_rows && vol->parity && !vol->degraded && !vol->repl;
}

/*
 * Mark the pages of rows this update overwrites whole: their new parity
 * is computed from the new data alone, so neither the old data nor the
 * old parity is read (a full-stripe write); and, of those, the new rows
 * (above).
 */
static int mark_full_rows(struct dg_vol *vol, struct apage *pg, unsigned npg)
{
	struct apage **by_row;
	unsigned nwhole = 0;

	if (!vol->parity || npg < vol->k)
		return 0;
	by_row = malloc(npg * sizeof(*by_row));
	if (!by_row)
		return -ENOMEM;
	for (unsigned i = 0; i < npg; i++)
		if (pg[i].whole)
			by_row[nwhole++] = &pg[i];
	sort_runs(by_row, nwhole, sizeof(*by_row), apage_row_cmp);
	for (unsigned i = 0, j; i < nwhole; i = j) {
		bool fresh = dg_new_row_allowed(vol);

		for (j = i + 1; j < nwhole && by_row[j]->row == by_row[i]->row;
		     j++)
			;
		/* Pages are distinct, so k of one row are all of it. */
		if (j - i != vol->k)
			continue;
		for (unsigned x = i; x < j; x++)
			fresh = fresh && by_row[x]->fresh &&
				by_row[x]->nranges == 1 &&
				!dg_ditto_has(vol, by_row[x]->vpn);
		for (unsigned x = i; x < j; x++) {
			by_row[x]->full_row = true;
			by_row[x]->in_place = fresh;
		}
	}
	free(by_row);
	return 0;
}

/*
 * Lone rows. A small write into a hole lands on a page whose row may
 * hold nothing else: every other data page free and blank (zeros with
 * the checksum of zeros, or never written: a fresh volume is nothing
 * but such rows, and the trim makes them). Then the row's parity is
 * computed from the update's pages of the row alone, neither the old
 * page nor the old parity is read, and the row is written as a new row
 * is (new_rows_first(): reserved, written, durable, then the entry with
 * its checksums and no bytes) -- where the journaled path stores the
 * page's bytes on parity + 1 journal copies besides the page and its
 * parity. Nothing acknowledged lives in such a row while it is written,
 * so a crash there, with or without a device lost or a page flipped,
 * loses nothing the new row would not: the replay takes the reserved
 * page as found and recomputes the row's parity (journal.c), the other
 * pages reading as the zeros they are.
 *
 * Holes filled. A row with pages in use beside takes the same path when
 * the update's pages of it were blank themselves -- a small write into a
 * hole of a row already partly filled, the usual case of a sparse file
 * written at random: the old parity is read (not the old pages: they
 * were zeros) and the new pages added to it, and the parity is stored a
 * round after the pages (PARITY_AFTER), so that a crash leaves at most
 * one of them torn. The replay then proves any page beside from the row
 * with the hole as zeros or as written, or a splice of the two at a torn
 * parity's 8-byte boundary (replay_prove.c, dg_rproof_blank()) -- which
 * the journaled path, both written in one round, cannot always do.
 *
 * A candidate is a whole page new to the update, its only range, not
 * in a full row nor the metadata zone, in a row where every page of
 * the update is such a candidate. Which way it goes -- a lone row, a
 * hole filled or journaled -- is decided under the row's lock
 * (row_lone_kind()).
 *
 * The trade is two fences for a page of journal copies and two pages
 * read: the reservation's round and the rows' come before the entry's.
 * Only where the rows' checksum copies go in one round (copies
 * together, parity 1): with a round a copy, parity 2 paid five fences
 * more for its three pages (docs/design.md, "Lone rows").
 */
static bool lone_candidate(const struct dg_vol *vol, const struct apage *p)
{
	return p->whole && p->fresh && p->nranges == 1 && !p->full_row &&
	       !dg_ditto_has(vol, p->vpn);
}

/* Whether every page of the update in row, but for candidates, is
 * absent: the other data pages of the row looked up among the update's
 * (sorted by vpn). */
static bool row_all_candidates(struct dg_vol *vol, const struct apage *pg,
			       unsigned npg, uint64_t row)
{
	for (unsigned rank = 0; rank < vol->k; rank++) {
		uint64_t vpn = dg_loc_vpn(vol, dg_row_data_dev(vol, row, rank),
					  row);
		unsigned ix = page_ix(pg, npg, vpn, 0);

		if (ix < npg && pg[ix].vpn == vpn &&
		    !lone_candidate(vol, &pg[ix]))
			return false;
	}
	return true;
}

bool dg_vol_blank_page_alone(struct dg_vol *vol)
{
	return vol->copies_together && dg_new_row_allowed(vol);
}

/* The candidates are few or none in most updates (a megabyte's pages
 * are whole rows): each is looked at alone, its row's other pages
 * found by bisection, nothing sorted. */
static void mark_lone_rows(struct dg_vol *vol, struct apage *pg, unsigned npg)
{
	if (!vol->copies_together || !dg_new_row_allowed(vol))
		return;
	for (unsigned i = 0; i < npg; i++)
		if (lone_candidate(vol, &pg[i]) &&
		    (npg == 1 || row_all_candidates(vol, pg, npg, pg[i].row)))
			pg[i].lone = pg[i].in_place = true;
}

/* What the ranges do to each page, and which rows they fill: nothing
 * read yet, no lock needed. pix[] gets the page of each range; rix[]
 * each page's ranges, together and in the order given (a later range's
 * bytes win where two overlap), so a page is built in one go while its
 * image is in the cache. */
static int note_ranges(struct dg_vol *vol, const struct dg_range *r,
		       unsigned n, const bool *fresh, struct apage *pg,
		       unsigned npg, unsigned *pix, unsigned *rix)
{
	unsigned end = 0;
	int ret;

	for (unsigned i = 0; i < n; i++) {
		struct apage *p;

		pix[i] = page_ix(pg, npg, r[i].vpn, i ? pix[i - 1] : 0);
		p = &pg[pix[i]];

		if (r[i].off < p->lo)
			p->lo = r[i].off;
		if (r[i].off + r[i].len > p->hi)
			p->hi = r[i].off + r[i].len;
		if (r[i].len == DG_PAGE_SIZE) {
			p->whole = true;
			p->fresh = fresh && fresh[i];
		}
		p->nranges++;
	}
	for (unsigned i = 0; i < npg; i++) {
		end += pg[i].nranges;
		pg[i].r0 = end;
	}
	for (unsigned i = n; i-- > 0;)
		rix[--pg[pix[i]].r0] = i;
	/* A companion (no range: a missing page read only to be
	 * journaled) changes no byte. */
	for (unsigned i = 0; i < npg; i++)
		if (!pg[i].nranges)
			pg[i].lo = pg[i].hi = 0;
	if (!vol->redundancy)
		return 0;
	ret = mark_full_rows(vol, pg, npg);
	if (!ret)
		mark_lone_rows(vol, pg, npg);
	return ret;
}

/* The new image of page p, its ranges over its old image in img (the
 * page's own buffer, or a buffer of the thread's: prepare_pages()), and
 * its checksum. */
static void build_page(struct dg_vol *vol, const struct dg_range *r,
		       const unsigned *rix, struct apage *p, uint8_t *img)
{
	p->new = img;
	for (unsigned x = p->r0; x < p->r0 + p->nranges; x++) {
		const struct dg_range *q = &r[rix[x]];

		/* 8-byte aligned: parity deltas load the page in words. */
		if (sole_whole(p) && !((uintptr_t)q->data & 7))
			p->new = q->data;
		else
			memcpy(img + q->off, q->data, q->len);
	}
	p->new_csum = dg_csum_page(vol, p->dev, p->row, p->new);
}

/* Keep of page image src, built in a thread's buffer, what is written
 * of it: the lines [lo, hi), or all of it where the media holds nothing
 * yet (never written: fresh). */
static void keep_span(uint8_t *dst, const uint8_t *src, bool fresh,
		      uint32_t lo, uint32_t hi)
{
	lo = fresh ? 0 : lo & ~(DG_LINE_SIZE - 1);
	hi = fresh ? DG_PAGE_SIZE : (hi + DG_LINE_SIZE - 1) &
					    ~(DG_LINE_SIZE - 1);
	memcpy(dst + lo, src + lo, hi - lo);
}

/*
 * A large update of pages patched in place (a scattered sync of
 * thousands of pages) splits its work between two threads on a machine
 * with more than one CPU: reading and verifying the old pages and
 * parity it patches (prepare()), and writing pages and parity in place
 * (write_pages()). The caller, whose client waits meanwhile, would
 * otherwise leave the other CPU idle. The split is by row, so no row is
 * touched by both (a repair on the way writes only its own row, under
 * the row locks the update holds, and checksum pages under their own
 * locks, as concurrent readers do). A row goes to the part a hash of
 * its number names: split by checksum page (510 rows each), an update
 * of rows near each other went to one part whole, and split by odd and
 * even rows, one of every other page did. Each part walks the checksum
 * pages in order with its own cursors. The checksum pages themselves
 * are written by the caller alone, once both parts are done.
 */
#define SPLIT_MIN 256	/* pages: below, a thread costs more than it saves */

static unsigned online_cpus(void)
{
	static atomic_uint n;

	if (!atomic_load(&n)) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		atomic_store(&n, c > 0 ? (unsigned)c : 1);
	}
	return atomic_load(&n);
}

static bool worth_two(unsigned pages)
{
	return pages >= SPLIT_MIN && online_cpus() > 1;
}

static bool part_has(unsigned part, unsigned parts, uint64_t row)
{
	return (row * 0x9e3779b97f4a7c15ull >> 32) % parts == part;
}

/* fn(a0) here and, when two, fn(a1) on a second thread (here, after
 * a0, if no thread can be made). Returns whether a thread ran it. */
static bool run_parts(void *(*fn)(void *), void *a0, void *a1, bool two)
{
	pthread_t t;
	bool threaded = two && !pthread_create(&t, NULL, fn, a1);

	fn(a0);
	if (threaded)
		pthread_join(t, NULL);
	else if (two)
		fn(a1);
	return threaded;
}

struct prep {
	struct dg_vol *vol;
	const struct dg_range *r;
	const unsigned *rix;
	struct apage *pg;
	unsigned npg;
	struct rowset *rs;
	uint8_t *delta;		/* a page of scratch */
	uint8_t *hot;		/* 1 + parity pages of scratch (prepare_pages()) */
	unsigned part, parts;
	int ret;
};

static bool prep_mine(const struct prep *x, const struct apage *p)
{
	return part_has(x->part, x->parts, p->row);
}

/*
 * Read old images (verified), build new ones and their checksums, for
 * this part's pages not in a new row (those are done:
 * new_rows_first()). Page by page: the new image is hashed while the
 * old one just read is still in the cache.
 *
 * A page patched where it changes (not overwritten whole, not a ditto
 * page written whole to its copy, not journaled whole for a missing
 * device) is built in the thread's buffer, which stays in the cache, and
 * only what is written of it is kept (keep_span()): building every page
 * of a scattered update in a buffer of its own wrote as many bytes to
 * memory as were read from the media. The rows whose parity one page
 * alone patches do the same (prepare_parity()).
 */
static bool built_hot(const struct dg_vol *vol, const struct apage *p)
{
	return !p->whole && p->nranges && !dg_ditto_has(vol, p->vpn) &&
	       !(vol->missing_mask & (1u << p->dev));
}

static int prepare_pages(struct prep *x, struct dg_csum_cursor *cur)
{
	struct dg_vol *vol = x->vol;
	uint8_t *img;
	bool hot;
	int ret;

	for (unsigned i = 0; i < x->npg; i++) {
		struct apage *p = &x->pg[i];

		if (p->in_place || !prep_mine(x, p))
			continue;
		/* An overwritten page needs no old image when no parity
		 * delta is taken from it. */
		if (p->whole && (!vol->parity || p->full_row)) {
			p->old = NULL;
			p->old_csum = DG_CSUM_NONE;
			build_page(vol, x->r, x->rix, p, p->img);
			continue;
		}
		hot = built_hot(vol, p);
		img = hot ? x->hot : p->img;
		/* A page a range covers whole keeps no old byte: its old
		 * image is only for the parity delta. Any other page is
		 * read straight into the new image, and only the lines
		 * that change are kept as the old image (parity deltas and
		 * the page hook look at nothing else): a scattered update
		 * changes a line or two of each page, and copying every
		 * old page whole was a tenth of its time. */
		ret = dg_page_read_cur(vol, cur, p->dev, p->row,
				       p->whole ? p->old : img, &p->old_csum);
		if (ret)
			return ret;
		if (!p->whole)
			keep_span(p->old, img, false, p->lo, p->hi);
		build_page(vol, x->r, x->rix, p, img);
		if (hot) {
			keep_span(p->img, img, p->old_csum == DG_CSUM_NONE,
				  p->lo, p->hi);
			p->new = p->img;
		}
	}
	return 0;
}

/* The rows an update touches, found by row number in O(1): an update of
 * a long run of one device has a row per page. */
#define ROWSET_INLINE 16	/* slots kept in the set itself: a small
				 * update allocates nothing for them */

struct rowset {
	struct arow *rows;
	unsigned n, mask;
	unsigned *slot;		/* index + 1 into rows; 0: free */
	unsigned inline_slot[ROWSET_INLINE];
};

static int rowset_init(struct rowset *rs, struct arow *rows, unsigned npg)
{
	unsigned size = ROWSET_INLINE;

	while (size < 2 * npg)
		size *= 2;
	rs->rows = rows;
	rs->n = 0;
	rs->mask = size - 1;
	if (size == ROWSET_INLINE) {
		memset(rs->inline_slot, 0, sizeof(rs->inline_slot));
		rs->slot = rs->inline_slot;
		return 0;
	}
	rs->slot = calloc(size, sizeof(*rs->slot));
	return rs->slot ? 0 : -ENOMEM;
}

static void rowset_fini(struct rowset *rs)
{
	if (rs->slot != rs->inline_slot)
		free(rs->slot);
	rs->slot = NULL;
}

/* The entry of row; a new one has only its row (and page buffers) set:
 * it is zeroed here, as it is taken, so the caller's array need not be
 * (a megabyte's 256 entries were 40 KiB of calloc() twice, for the 86
 * rows it has). */
static struct arow *rowset_get(struct rowset *rs, uint64_t row, bool *added)
{
	unsigned h = (unsigned)((row * 0x9e3779b97f4a7c15ull) >> 40) & rs->mask;

	for (;; h = (h + 1) & rs->mask) {
		unsigned i = rs->slot[h];

		if (i && rs->rows[i - 1].row == row) {
			*added = false;
			return &rs->rows[i - 1];
		}
		if (!i) {
			struct arow *a = &rs->rows[rs->n];
			uint8_t *par[DG_MAX_PARITY];

			rs->slot[h] = ++rs->n;
			memcpy(par, a->par, sizeof(par));
			*a = (struct arow){ .row = row };
			memcpy(a->par, par, sizeof(par));
			*added = true;
			return a;
		}
	}
}

static uint64_t par_page_csum(struct dg_vol *vol, const struct arow *a,
			      unsigned j, const uint8_t *par)
{
	return dg_csum_page(vol, dg_row_parity_dev(vol, a->row, j), a->row,
			    par);
}

/* Parity of a full row, from its new data pages alone, and its
 * checksums; of a lone row (mark_lone_rows()), from its new pages and
 * zeros for the rest. */
static void compute_full_row(struct dg_vol *vol, const struct apage *pg,
			     struct arow *a)
{
	uint8_t *data[DG_MAX_DEVS];
	unsigned have = 0, last = 0;

	/* ISA-L only reads its sources. */
	for (unsigned rank = 0; rank < vol->k; rank++) {
		if (!a->page[rank]) {
			data[rank] = (uint8_t *)dg_zero_page;
			continue;
		}
		data[rank] = (uint8_t *)pg[a->page[rank] - 1].new;
		have++;
		last = rank;
	}
	a->in_place = pg[a->page[last] - 1].in_place;
	/* One page beside zeros is its own XOR: a lone row's usual case. */
	if (vol->parity == 1 && have == 1)
		memcpy(a->par[0], data[last], DG_PAGE_SIZE);
	else
		dg_parity_compute(vol, data, a->par, DG_PAGE_SIZE);
	for (unsigned j = 0; j < vol->parity; j++) {
		a->par_csum[j] = DG_CSUM_NONE;	/* written whole */
		a->new_par_csum[j] = par_page_csum(vol, a, j, a->par[j]);
	}
	a->lo = 0;
	a->hi = DG_PAGE_SIZE;
}

/*
 * A hole filled beside pages in use (check_lone_rows()): the row's
 * parity is its old parity -- read under the row's lock, verified or
 * rebuilt like any page -- plus what compute_full_row() made of the
 * update's pages beside zeros, since those pages were zeros as the old
 * parity counts them (parity is linear). Stored in the round after the
 * pages' (PARITY_AFTER), so that a crash never leaves the pages and the
 * parity both torn: the replay rebuilds a page beside from the row with
 * the hole taken as zeros or as written (journal.c, replay_prove.c).
 */
static int add_old_parity(struct dg_vol *vol, struct arow *a)
{
	uint64_t old[DG_PAGE_SIZE / 8] __attribute__((aligned(64))), cs;

	for (unsigned j = 0; j < vol->parity; j++) {
		uint64_t *par = (uint64_t *)a->par[j];
		int ret = dg_page_read_locked(vol,
					      dg_row_parity_dev(vol, a->row, j),
					      a->row, old, &cs);

		if (ret)
			return ret;
		for (unsigned w = 0; w < DG_PAGE_SIZE / 8; w++)
			par[w] ^= old[w];
		a->new_par_csum[j] = par_page_csum(vol, a, j, a->par[j]);
	}
	a->parity_round = PARITY_AFTER;
	return 0;
}

/* The first of the update's pages in row a: what it is, the row is. */
static const struct apage *first_page(const struct apage *pg,
				      const struct arow *a)
{
	unsigned rank = 0;

	while (!a->page[rank])
		rank++;
	return &pg[a->page[rank] - 1];
}

/* Page i of the update into its row's entry (the row added if new):
 * where it is by data rank. */
static struct arow *row_add(struct dg_vol *vol, struct rowset *rs,
			    const struct apage *pg, unsigned i)
{
	bool added;
	struct arow *a = rowset_get(rs, pg[i].row, &added);

	a->page[dg_row_data_rank(vol, pg[i].row, pg[i].dev)] = i + 1;
	return a;
}

/* The rows of the pages not in new rows, each with the number of its
 * pages to patch in (prepare_parity()). */
static int rows_of(struct dg_vol *vol, struct rowset *rs, struct arow *rows,
		   const struct apage *pg, unsigned npg)
{
	int ret = rowset_init(rs, rows, npg);

	for (unsigned i = 0; i < npg && !ret; i++)
		if (!pg[i].in_place)
			row_add(vol, rs, pg, i)->left++;
	return ret;
}

/* Verified parity of this part's rows (rows_of()), patched with the data
 * deltas (old xor new) of the changed cache lines only, and its
 * checksums, taken as the row's last page is patched in, while the
 * parity is in the cache; full rows get parity computed afresh. */
static int prepare_parity(struct prep *x, struct dg_csum_cursor *cur)
{
	struct dg_vol *vol = x->vol;
	bool added;
	int ret = 0;

	for (unsigned i = 0; i < x->npg && !ret; i++) {
		struct apage *p = &x->pg[i];
		uint32_t lo = p->lo & ~(DG_LINE_SIZE - 1);
		uint32_t hi = (p->hi + DG_LINE_SIZE - 1) & ~(DG_LINE_SIZE - 1);
		uint8_t *par[DG_MAX_PARITY], *pb[DG_MAX_PARITY];
		struct arow *a;
		bool hot;

		if (p->in_place || !prep_mine(x, p))
			continue; /* new rows are done: new_rows_first() */
		a = rowset_get(x->rs, p->row, &added);
		/* Patched by this page alone: built in the thread's buffers
		 * (prepare_pages()). */
		hot = !a->started && a->left == 1;
		for (unsigned j = 0; j < vol->parity; j++)
			pb[j] = hot ? x->hot + (1 + j) * (size_t)DG_PAGE_SIZE
				    : a->par[j];
		if (p->full_row) {
			if (!a->started) {
				a->started = true;
				compute_full_row(vol, x->pg, a);
				vol->rows_full++;
			}
			continue;
		}
		if (!a->started) {
			a->started = true;
			a->patched = true;
			vol->rows_patched++;
			a->lo = lo;
			a->hi = hi;
			for (unsigned j = 0; j < vol->parity && !ret; j++)
				ret = dg_page_read_cur(vol, &cur[j],
						       dg_row_parity_dev(vol,
								 p->row, j),
						       p->row, pb[j],
						       &a->par_csum[j]);
			if (ret)
				break;
		}
		if (lo < a->lo)
			a->lo = lo;
		if (hi > a->hi)
			a->hi = hi;
		for (unsigned j = 0; j < vol->parity; j++)
			par[j] = pb[j] + lo;
		dg_parity_patch(vol, dg_row_data_rank(vol, p->row, p->dev),
				p->old + lo, p->new + lo, x->delta + lo,
				hi - lo, par);
		if (--a->left)
			continue;
		for (unsigned j = 0; j < vol->parity; j++) {
			a->new_par_csum[j] = par_page_csum(vol, a, j, pb[j]);
			if (hot)
				keep_span(a->par[j], pb[j],
					  a->par_csum[j] == DG_CSUM_NONE,
					  a->lo, a->hi);
		}
	}
	return ret;
}

/* One part of preparing an update: its pages, then its rows' parity.
 * One cursor for the data pages, one per parity position: each walks
 * the checksum pages of one device in row order. */
static int prepare_part(struct prep *x)
{
	struct dg_csum_cursor cur[DG_MAX_PARITY + 1];
	int ret;

	for (unsigned j = 0; j <= DG_MAX_PARITY; j++)
		dg_csum_cursor_init(&cur[j]);
	ret = prepare_pages(x, &cur[DG_MAX_PARITY]);
	if (!ret && x->vol->parity)
		ret = prepare_parity(x, cur);
	for (unsigned j = 0; j <= DG_MAX_PARITY; j++)
		dg_csum_cursor_fini(&cur[j]);
	return ret;
}

static void *prepare_thread(void *arg)
{
	struct prep *x = arg;

	x->ret = prepare_part(x);
	return NULL;
}

/* Whether preparing an update is worth a second thread (above): not
 * when a repair may ask for consent (fsck asks one question at a
 * time). */
static bool prepare_in_two(const struct dg_vol *vol, const struct apage *pg,
			   unsigned npg)
{
	unsigned reads = 0;

	if (vol->consent)
		return false;
	for (unsigned i = 0; i < npg; i++)
		reads += !pg[i].in_place && !pg[i].full_row;
	return worth_two(reads);
}

/* Scratch pages prepare() needs: for each of two threads, a delta page
 * and the buffers pages and parity are built in. */
static size_t prepare_scratch_pages(const struct dg_vol *vol)
{
	return 2 * (2 + (size_t)vol->parity);
}

/* Read and verify what the update patches, and build its new pages and
 * parity (no redundancy: nothing to do), on two threads when it pays
 * (above). */
static int prepare(struct dg_vol *vol, const struct dg_range *r,
		   const unsigned *rix, struct apage *pg, unsigned npg,
		   struct arow *rows, unsigned *nrowsp, uint8_t *scratch)
{
	struct rowset rs = { 0 };
	struct prep x[2];
	unsigned parts;
	int ret;

	*nrowsp = 0;
	if (!vol->redundancy)
		return 0;
	ret = vol->parity ? rows_of(vol, &rs, rows, pg, npg) : 0;
	if (ret)
		return ret;
	parts = prepare_in_two(vol, pg, npg) ? 2 : 1;
	for (unsigned i = 0; i < parts; i++)
		x[i] = (struct prep){
			vol, r, rix, pg, npg, &rs,
			scratch + (size_t)i * (2 + vol->parity) * DG_PAGE_SIZE,
			scratch + ((size_t)i * (2 + vol->parity) + 1) *
					  DG_PAGE_SIZE,
			i, parts, 0 };
	vol->updates_split += run_parts(prepare_thread, &x[0], &x[1],
					parts == 2);
	ret = x[0].ret ? x[0].ret : parts == 2 ? x[1].ret : 0;
	*nrowsp = rs.n;
	rowset_fini(&rs);
	return ret;
}

/* stream: a new row's page, past the caches (dg_dev_stream()). 0, or
 * the store's failure (media.h). */
static int write_page_span(struct dg_vol *vol, unsigned dev, uint64_t row,
			   const uint8_t *img, uint32_t lo, uint32_t hi,
			   bool stream, struct dg_flushset *fs)
{
	struct dg_dev *d = &vol->devs[dev];
	uint64_t off = dg_row_page(vol, row) << DG_PAGE_SHIFT;
	int ret;

	/* Degraded: a missing device's page lives on as parity (data) or
	 * as the data it is computed from (parity); its checksum is still
	 * set, on the copies that remain. */
	if (!d->present)
		return 0;
	ret = (stream ? dg_dev_stream : dg_dev_write)(d, off + lo, img + lo,
						       hi - lo);
	if (!ret)
		dg_flushset_add(fs, dev, off, DG_PAGE_SIZE);
	return ret;
}

/* One part of writing pages and parity in place (write_pages()). */
struct wpart {
	struct dg_vol *vol;
	struct apage *pg;
	unsigned npg;
	struct arow *rows;
	unsigned nrows;
	bool new_rows;
	unsigned part, parts;
	struct dg_csum_upd *u;	/* the checksums written: room for all */
	unsigned nu;
	struct dg_flushset *fs;
	int ret;		/* the first store that failed: the part
				 * stops there */
};

/* Row a's parity pages in place (stream: a new row's). */
static int write_parity(struct dg_vol *vol, const struct arow *a,
			bool stream, struct dg_flushset *fs)
{
	int ret = 0;

	for (unsigned j = 0; j < vol->parity && !ret; j++) {
		bool fresh = a->par_csum[j] == DG_CSUM_NONE;

		ret = write_page_span(vol, dg_row_parity_dev(vol, a->row, j),
				      a->row, a->par[j], fresh ? 0 : a->lo,
				      fresh ? DG_PAGE_SIZE : a->hi, stream, fs);
	}
	return ret;
}

static void *write_part(void *arg)
{
	struct wpart *w = arg;
	struct dg_vol *vol = w->vol;

	for (unsigned i = 0; i < w->npg && !w->ret; i++) {
		struct apage *p = &w->pg[i];
		bool fresh = p->old_csum == DG_CSUM_NONE;

		if (!p->nranges || p->in_place != w->new_rows ||
		    !part_has(w->part, w->parts, p->row))
			continue; /* a companion (unchanged), or not now */
		/* A never-written page may hold anything: write it whole. */
		w->ret = write_page_span(vol, p->dev, p->row, p->new,
					 fresh ? 0 : p->lo,
					 fresh ? DG_PAGE_SIZE : p->hi,
					 w->new_rows, w->fs);
		if (!w->ret && dg_ditto_has(vol, p->vpn))
			w->ret = dg_ditto_write_span(vol, p->vpn, p->new,
						     fresh ? 0 : p->lo,
						     fresh ? DG_PAGE_SIZE : p->hi,
						     w->fs);
		if (w->ret)
			break;
		if (vol->page_hook)
			vol->page_hook(vol->page_hook_arg, p->vpn, p->old,
				       p->new, p->lo & ~(DG_LINE_SIZE - 1),
				       (p->hi + DG_LINE_SIZE - 1) &
					       ~(DG_LINE_SIZE - 1));
		w->u[w->nu++] = (struct dg_csum_upd){ p->dev, p->row,
						      p->new_csum };
	}
	for (unsigned i = 0; i < w->nrows && !w->ret; i++) {
		struct arow *a = &w->rows[i];

		if (a->in_place != w->new_rows ||
		    !part_has(w->part, w->parts, a->row))
			continue;
		if (a->parity_round == PARITY_WITH_PAGES)
			w->ret = write_parity(vol, a, w->new_rows, w->fs);
		for (unsigned j = 0; j < vol->parity && !w->ret; j++)
			w->u[w->nu++] = (struct dg_csum_upd){
				dg_row_parity_dev(vol, a->row, j), a->row,
				a->new_par_csum[j] };
	}
	return NULL;
}

/* The parity of the rows marked PARITY_AFTER, stored after their pages'
 * round (write_pages()). */
struct parity_after {
	struct dg_vol *vol;
	const struct arow *rows;
	unsigned nrows;
	bool new_rows;
};

static int parity_after_store(void *arg, struct dg_flushset *fs)
{
	const struct parity_after *lp = arg;
	int ret = 0;

	for (unsigned i = 0; i < lp->nrows && !ret; i++)
		if (lp->rows[i].parity_round == PARITY_AFTER &&
		    lp->rows[i].in_place == lp->new_rows)
			ret = write_parity(lp->vol, &lp->rows[i], lp->new_rows,
					   fs);
	return ret;
}

/*
 * u sorted by (dev, row), as dg_csum_set_batch() wants. The checksums
 * of a megabyte come as each device's data pages in row order, then
 * each row's parity, whose device turns with the row: a few ascending
 * runs per device. So they are dealt out by device (stable), which
 * leaves each device's rows in order, and only a device whose rows are
 * not is sorted; glibc's merge sort of the 342 of a megabyte was the
 * largest cost of the update's own code. Falls back to qsort() when no
 * buffer is to be had.
 */
static void sort_upd(struct dg_csum_upd *u, unsigned n)
{
	unsigned at[DG_MAX_DEVS + 1] = { 0 };
	struct dg_csum_upd *tmp;
	bool sorted = true;

	for (unsigned i = 1; i < n && sorted; i++)
		sorted = dg_csum_upd_cmp(&u[i - 1], &u[i]) <= 0;
	if (sorted)
		return;
	if (n <= 2 * SMALL_PAGES * (1 + DG_MAX_PARITY)) {
		/* A small update's few (its parity's device turns with
		 * the row, so half come out of order): insertion, stable,
		 * nothing allocated. */
		for (unsigned i = 1; i < n; i++) {
			struct dg_csum_upd x = u[i];
			unsigned j = i;

			for (; j && dg_csum_upd_cmp(&u[j - 1], &x) > 0; j--)
				u[j] = u[j - 1];
			u[j] = x;
		}
		return;
	}
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp) {
		qsort(u, n, sizeof(*u), dg_csum_upd_cmp);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		at[u[i].dev + 1]++;
	for (unsigned d = 0; d < DG_MAX_DEVS; d++)
		at[d + 1] += at[d];
	for (unsigned i = 0; i < n; i++)
		tmp[at[u[i].dev]++] = u[i];
	memcpy(u, tmp, n * sizeof(*u));
	free(tmp);
	/* at[d] is now where device d + 1's begin. */
	for (unsigned d = 0, b = 0; d < DG_MAX_DEVS && b < n; b = at[d++])
		sort_runs(u + b, at[d] - b, sizeof(*u), dg_csum_upd_cmp);
}

/* Whether every data page of row has ditto copies (the metadata zone). */
static bool row_has_dittos(struct dg_vol *vol, uint64_t row)
{
	for (unsigned rank = 0; rank < vol->k; rank++)
		if (!dg_ditto_has(vol, dg_loc_vpn(vol, dg_row_data_dev(vol, row,
								      rank),
						  row)))
			return false;
	return true;
}

/*
 * The parity of the data rows an update patches in place, in a round of
 * its own before their pages': so a crash leaves at most one of a page
 * and its parity torn, never both. The replay then proves any other page
 * of the row that a fault took -- its bytes flipped or lost, its device
 * gone -- from the row as found (the old page, the parity as it was),
 * as redone (the journal's page, the parity written) or a splice of the
 * two at the torn parity's 8-byte boundary (replay_prove.c). Written in
 * one round, a torn page beside a torn parity left that page to no
 * version: the write hole of the journaled path. Parity before pages,
 * not after: the journal holds the page's new bytes, not its old ones,
 * so a page torn beside the old parity would be lost. The metadata
 * zone's rows are left in one round: their pages have ditto copies, from
 * which the read path proves them (ditto.c), and a megabyte's write
 * keeps its four rounds. So is parity 2: where its two parities are torn
 * at different bytes, each byte of the row has a parity of one version
 * or two equations for the torn page's lost byte and the faulted one's.
 */
static bool parity_goes_first(struct dg_vol *vol, const struct arow *a)
{
	return vol->parity == 1 && !a->in_place && a->patched &&
	       !row_has_dittos(vol, a->row);
}

static int parity_first(struct dg_vol *vol, struct arow *rows,
			unsigned nrows)
{
	struct dg_flushset fs;
	unsigned n = 0;
	int ret = 0, p;

	dg_flushset_init(&fs);
	for (unsigned i = 0; i < nrows && !ret; i++) {
		if (!parity_goes_first(vol, &rows[i]))
			continue;
		rows[i].parity_round = PARITY_BEFORE;
		ret = write_parity(vol, &rows[i], false, &fs);
		n++;
	}
	p = n ? dg_flushset_persist(vol->devs, vol->ndev, &fs) : 0;
	dg_flushset_fini(&fs);
	return ret ? ret : p;
}

/*
 * Write in place the pages and the parity of the rows that are (or are
 * not) new rows, on two threads when they are many (above), then their
 * checksums. A row marked PARITY_AFTER -- every row of a lean update
 * (format.h DG_JENTRY_LEAN), a hole filled beside live pages
 * (check_lone_rows()) -- has its page and the first checksum copies in
 * one round and its parity after that round's fence, with the second
 * copies: so a crash leaves the page torn beside the parity as it was,
 * or the page whole, never both torn.
 */
static int write_pages(struct dg_vol *vol, struct apage *pg, unsigned npg,
		       struct arow *rows, unsigned nrows, bool new_rows,
		       bool lean, struct dg_flushset *fs)
{
	struct parity_after lp = { vol, rows, nrows, new_rows };
	const struct dg_csum_then then = { parity_after_store, &lp };
	bool late = false;
	size_t cap = npg + (size_t)nrows * vol->parity;
	struct dg_csum_upd *u, small_u[2 * SMALL_PAGES * (1 + DG_MAX_PARITY)];
	struct dg_flushset fs1;
	struct wpart w[2];
	unsigned todo = 0;
	bool two;
	int ret;

	/* Not new rows: their writer keeps the other CPU busy copying its
	 * next megabyte in (a second thread gained nothing measurable). */
	for (unsigned i = 0; i < npg; i++)
		todo += pg[i].nranges && pg[i].in_place == new_rows;
	for (unsigned i = 0; i < nrows; i++) {
		if (rows[i].in_place != new_rows)
			continue;
		if (lean)
			rows[i].parity_round = PARITY_AFTER;
		late = late || rows[i].parity_round == PARITY_AFTER;
	}
	if (!new_rows && !late) {
		ret = parity_first(vol, rows, nrows);
		if (ret)
			return ret;
	}
	two = !new_rows && !late && worth_two(todo);
	u = (two ? 2 : 1) * cap <= sizeof(small_u) / sizeof(*small_u)
		    ? small_u
		    : malloc((two ? 2 : 1) * cap * sizeof(*u));
	if (!u)
		return -ENOMEM;
	dg_flushset_init(&fs1);
	for (unsigned i = 0; i < 2; i++)
		w[i] = (struct wpart){ vol, pg, npg, rows, nrows, new_rows,
				       i, two ? 2 : 1, u + i * cap, 0,
				       i ? &fs1 : fs, 0 };
	run_parts(write_part, &w[0], &w[1], two);
	if (two) {
		memmove(u + w[0].nu, w[1].u, w[1].nu * sizeof(*u));
		dg_flushset_merge(fs, &fs1);
	}
	dg_flushset_fini(&fs1);
	/* A store refused (media.h): no checksum may bless what is not
	 * there. */
	ret = w[0].ret ? w[0].ret : w[1].ret;
	if (!ret) {
		sort_upd(u, w[0].nu + w[1].nu);
		/* Under the update's entry, or the reservation of its
		 * new rows, which the replay redoes. */
		ret = dg_csum_set_journaled(vol, u, w[0].nu + w[1].nu, fs,
					    late ? &then : NULL);
	}
	if (u != small_u)
		free(u);
	return ret;
}

/*
 * The ranges that reserve the new rows into jr (NULL: count them): a
 * range a run of consecutive rows (DG_JRANGE_ROWS) where the volume has
 * them -- every data page of a new row is the update's (mark_full_rows())
 * -- else, and for the pages of lone rows, a range a page
 * (DG_JRANGE_RESERVED). rows: scratch for npg.
 */
/* The range that reserves page p alone. */
static struct dg_djrange reserved_page(const struct apage *p)
{
	return (struct dg_djrange){ .row = p->row, .dev = (uint16_t)p->dev,
				    .len = DG_PAGE_SIZE,
				    .flags = DG_JRANGE_RESERVED };
}

static unsigned reserve_ranges(struct dg_vol *vol, const struct apage *pg,
			       unsigned npg, uint64_t *rows,
			       struct dg_djrange *jr)
{
	unsigned n = 0, nr = 0, nlone = 0;

	if (!vol->reserved_rows) {
		for (unsigned i = 0; i < npg; i++) {
			if (!pg[i].in_place)
				continue;
			if (jr)
				jr[n] = reserved_page(&pg[i]);
			n++;
		}
		return n;
	}
	/* Each new row once, by its first data page (a new row's data
	 * pages are all the update's): in vpn order they mostly come in
	 * row order already, which sort_runs() only checks. */
	for (unsigned i = 0; i < npg; i++) {
		nlone += pg[i].lone;
		if (pg[i].in_place && !pg[i].lone &&
		    !dg_row_data_rank(vol, pg[i].row, pg[i].dev))
			rows[nr++] = pg[i].row;
	}
	sort_runs(rows, nr, sizeof(*rows), u64_cmp);
	for (unsigned i = 0, j; i < nr; i = j) {
		/* A run of consecutive rows, one range. */
		for (j = i + 1; j < nr && rows[j] == rows[j - 1] + 1; j++)
			;
		if (jr)
			jr[n] = (struct dg_djrange){
				.row = rows[i],
				.len = DG_PAGE_SIZE,
				.flags = DG_JRANGE_ROWS,
				.page_csum = rows[j - 1] - rows[i] + 1,
			};
		n++;
	}
	/* A lone row's pages a range each, as on the old layout: the
	 * rest of its row is not the update's, and the bound on what the
	 * reservations of a log name (dg_jrange_budget()) counts on every
	 * page they name being named again by the update's entry. */
	for (unsigned i = 0; i < npg && nlone; i++) {
		if (!pg[i].lone)
			continue;
		nlone--;
		if (jr)
			jr[n] = reserved_page(&pg[i]);
		n++;
	}
	return n;
}

/*
 * The entry that reserves the new rows (DG_JRANGE_RESERVED, or
 * DG_JRANGE_ROWS a run), durable before any of them is written: should
 * the update's own entry never come, the replay makes those free rows
 * consistent as it finds them, so a later update of a row never meets a
 * half-written neighbour. *seq: the entry, to retire once the rows are
 * written. Only with new rows.
 */
static int reserve_new_rows(struct dg_vol *vol, const struct apage *pg,
			    unsigned npg, uint64_t *seq)
{
	/* A small update's on the stack: a lone row's page is one. */
	union {
		struct dg_djentry e;
		uint8_t b[(sizeof(struct dg_djentry) +
			   SMALL_PAGES * sizeof(struct dg_djrange) +
			   DG_JALIGN - 1) & ~(size_t)(DG_JALIGN - 1)];
	} small_e;
	uint64_t small_rows[SMALL_PAGES];
	const void *small_data[SMALL_PAGES] = { NULL };
	struct dg_djentry *e = NULL;
	struct dg_djrange *jr;
	const void **data = NULL;
	bool small = npg <= SMALL_PAGES;
	uint64_t *rows = small ? small_rows : malloc(npg * sizeof(*rows));
	unsigned n;
	size_t len;
	int ret;

	if (!rows)
		return -ENOMEM;
	n = reserve_ranges(vol, pg, npg, rows, NULL);
	len = sizeof(*e) + n * sizeof(*jr);
	if (small) {
		memset(&small_e, 0, sizeof(small_e));
		e = &small_e.e;
		data = small_data;	/* no bytes */
	} else {
		e = calloc(1, (len + DG_JALIGN - 1) &
				      ~(size_t)(DG_JALIGN - 1));
		data = calloc(n, sizeof(*data));
	}
	if (!e || !data) {
		ret = -ENOMEM;
		goto out;
	}
	e->len = (uint32_t)((len + DG_JALIGN - 1) & ~(size_t)(DG_JALIGN - 1));
	e->nranges = n;
	jr = (struct dg_djrange *)(e + 1);
	reserve_ranges(vol, pg, npg, rows, jr);
	ret = dg_journal_append(vol, e, data, seq);
out:
	if (!small) {
		free(rows);
		free(e);
		free(data);
	}
	return ret;
}

/*
 * Persist what an update wrote (ret: how the writes went) and give the
 * outcome: 0, or -EIO with the volume latched read-only and why. A
 * checksum copy's persist (csum.c) may have failed meanwhile, so the
 * latch is looked at too. Whatever failed, the journal keeps what only
 * recovery can finish: what entry seq (`what` says which) stands for.
 */
static int persist_writes(struct dg_vol *vol, struct dg_flushset *fs,
			  int ret, const char *what, uint64_t seq)
{
	int p = dg_flushset_persist(vol->devs, vol->ndev, fs);

	if (!ret)
		ret = p;
	if (!ret && dg_latch_on(&vol->latch))
		ret = -EIO;
	if (!ret)
		return 0;
	dg_latch_set(&vol->latch, ret, "%s seq=%" PRIu64 " failed midway: %s",
		     what, seq, strerror(-ret));
	return -EIO;
}

/* Lock the rows of the pages in new rows, or of the others. */
static unsigned lock_rows(struct dg_vol *vol, const struct apage *pg,
			  unsigned npg, bool in_place, unsigned *locks)
{
	uint64_t want[DG_ROW_LOCKS / 64] = { 0 };
	unsigned nl = 0;

	/* The distinct locks in ascending order, from a bitmap of them: a
	 * band's pages come rank by rank, so their rows are several
	 * ascending runs, and sorting 256 of them cost more than this. */
	for (unsigned i = 0; i < npg; i++)
		if (pg[i].in_place == in_place) {
			unsigned l = (unsigned)(pg[i].row % DG_ROW_LOCKS);

			want[l / 64] |= 1ull << (l % 64);
		}
	for (unsigned w = 0; w < DG_ROW_LOCKS / 64; w++)
		for (uint64_t b = want[w]; b; b &= b - 1)
			locks[nl++] = w * 64 + (unsigned)__builtin_ctzll(b);
	/* Sorted order: two updates never wait on each other in a cycle. */
	for (unsigned i = 0; i < nl; i++)
		pthread_rwlock_wrlock(&vol->row_locks[locks[i]]);
	return nl;
}

static void unlock_rows(struct dg_vol *vol, const unsigned *locks,
			unsigned nl)
{
	for (unsigned i = 0; i < nl; i++)
		pthread_rwlock_unlock(&vol->row_locks[locks[i]]);
}

bool dg_page_blank(struct dg_vol *vol, unsigned dev, uint64_t row)
{
	struct dg_csum_cursor cur;
	uint64_t cs;
	bool blank;

	dg_csum_cursor_init(&cur);
	blank = dg_csum_lookup(vol, &cur, dev, row, &cs) == 0 &&
		dg_csum_blank(vol, dev, row, cs);
	dg_csum_cursor_fini(&cur);
	return blank;
}

/* How a candidate row of the update (mark_lone_rows()) may go before its
 * journal entry. */
enum lone_kind {
	LONE_NOT,	/* journaled after all */
	LONE_ROW,	/* its other data pages free and blank */
	LONE_BESIDE,	/* the update's pages of it blank before, its other
			 * pages anything: a hole filled */
};

/* Whether every data page of row that is the update's (own) or that is
 * not (and is then free too, the allocation bitmap says) is blank. */
static bool pages_blank(struct dg_vol *vol, const struct apage *pg,
			unsigned npg, uint64_t row, bool own)
{
	for (unsigned rank = 0; rank < vol->k; rank++) {
		unsigned dev = dg_row_data_dev(vol, row, rank);
		uint64_t vpn = dg_loc_vpn(vol, dev, row);
		unsigned ix = page_ix(pg, npg, vpn, 0);

		if ((ix < npg && pg[ix].vpn == vpn) != own)
			continue;
		if ((!own && dg_vpn_allocated(vol, vpn)) ||
		    !dg_page_blank(vol, dev, row))
			return false;
	}
	return true;
}

/*
 * Which way row goes (enum lone_kind), its lock held, so no page of it
 * is written meanwhile (a page allocated after the look is written after
 * this update's rows: its own update locks the row). A lone row's other
 * data pages are free and blank; failing that, the update's own pages of
 * it must be blank -- zeros as the row's parity counts them -- for the
 * hole filled beside the pages in use, where the old parity is read and
 * the new pages added to it.
 */
static enum lone_kind row_lone_kind(struct dg_vol *vol, const struct apage *pg,
				    unsigned npg, uint64_t row)
{
	if (pages_blank(vol, pg, npg, row, false))
		return LONE_ROW;
	return pages_blank(vol, pg, npg, row, true) ? LONE_BESIDE : LONE_NOT;
}

/* Each lone row's way (row_lone_kind()): the rows that turn out to be
 * neither go the journaled way after all, every page of such a row (a
 * page allocated meanwhile may fail a second look at a row whose first
 * passed); how many pages stay in_place. */
static unsigned check_lone_rows(struct dg_vol *vol, struct apage *pg,
				unsigned npg)
{
	unsigned left = 0;

	for (unsigned i = 0; i < npg; i++) {
		enum lone_kind k;

		if (!pg[i].lone)
			continue;
		k = row_lone_kind(vol, pg, npg, pg[i].row);
		for (unsigned x = 0; x < npg; x++) {
			if (pg[x].row != pg[i].row)
				continue;
			pg[x].lone = pg[x].in_place = k != LONE_NOT;
			pg[x].beside = k == LONE_BESIDE;
		}
	}
	for (unsigned i = 0; i < npg; i++)
		left += pg[i].in_place;
	return left;
}

/*
 * New rows (mark_full_rows()), before the update's journal entry: data,
 * parity and checksums, all durable before the entry is written, so that
 * once it is there the rows are whole and verify. Nothing live is in
 * them, so a crash anywhere before the entry loses nothing (their order
 * among themselves does not matter), and once written they are
 * consistent free rows: the reservation is retired at once.
 *
 * Under the locks of these rows only, before the update locks its other
 * rows: the bitmap's and the inode table's rows are shared by every
 * allocating update, and holding them while a megabyte is written would
 * make concurrent writers take turns. The two sets are never held
 * together, so the lock order stays acyclic. held: the caller holds
 * every row's lock already (dg_apply_locked()).
 */
static int new_rows_first(struct dg_vol *vol, const struct dg_range *r,
			  const unsigned *rix, struct apage *pg, unsigned npg,
			  bool held)
{
	struct dg_flushset fs;
	struct rowset rs = { 0 };
	struct arow *rows = NULL, small_rows[SMALL_PAGES];
	unsigned *locks = NULL, small_locks[SMALL_PAGES], nl, nnew = 0;
	unsigned nlone = 0, nbeside = 0;
	uint8_t *par = NULL;
	uint64_t seq = 0;
	bool small;
	int ret;

	for (unsigned i = 0; i < npg; i++)
		nnew += pg[i].in_place;
	if (!nnew)
		return 0;
	/* A small update (a lone row's page) allocates nothing: its
	 * parity pages are a buffer the thread keeps. */
	small = nnew <= SMALL_PAGES;
	locks = small ? small_locks : malloc(nnew * sizeof(*locks));
	rows = small ? small_rows : malloc(nnew * sizeof(*rows)); /* zeroed
								     as taken */
	par = small ? scratch_get(SCRATCH_NEW_PARITY, (size_t)nnew *
						      vol->parity *
						      DG_PAGE_SIZE)
		    : aligned_alloc(DG_PAGE_SIZE, (size_t)nnew * vol->parity *
							  DG_PAGE_SIZE);
	ret = !locks || !rows || !par ? -ENOMEM : rowset_init(&rs, rows, nnew);
	if (ret)
		goto out;
	nl = held ? 0 : lock_rows(vol, pg, npg, true, locks);
	/* A replace may have begun, or a device gone, since they were
	 * marked: journal them like any full row after all. */
	if (!dg_new_row_allowed(vol)) {
		for (unsigned i = 0; i < npg; i++)
			pg[i].lone = pg[i].in_place = false;
		goto unlock;
	}
	if (!check_lone_rows(vol, pg, npg))
		goto unlock;
	for (unsigned i = 0; i < nnew; i++)
		for (unsigned j = 0; j < vol->parity; j++)
			rows[i].par[j] = par + ((size_t)i * vol->parity + j) *
						       DG_PAGE_SIZE;
	for (unsigned i = 0; i < npg; i++)
		if (pg[i].in_place) {
			build_page(vol, r, rix, &pg[i], pg[i].img);
			row_add(vol, &rs, pg, i);
		}
	for (unsigned i = 0; i < rs.n && !ret; i++) {
		const struct apage *p0 = first_page(pg, &rows[i]);

		compute_full_row(vol, pg, &rows[i]);
		nlone += p0->lone && !p0->beside;
		nbeside += p0->beside;
		if (p0->beside)
			ret = add_old_parity(vol, &rows[i]);
	}
	if (ret)
		goto unlock;
	vol->rows_full += rs.n - nlone - nbeside;
	vol->rows_new += rs.n - nlone - nbeside;
	vol->rows_lone += nlone;
	vol->holes_filled += nbeside;
	ret = reserve_new_rows(vol, pg, npg, &seq);
	if (ret)
		goto unlock;
	dg_flushset_init(&fs);
	ret = write_pages(vol, pg, npg, rows, rs.n, true, false, &fs);
	/* Maybe half written on failure: only the replay of the
	 * reservation makes them consistent again. */
	ret = persist_writes(vol, &fs, ret, "new rows reserved by", seq);
	dg_flushset_fini(&fs);
	if (!ret)
		dg_journal_done(vol, seq);
unlock:
	unlock_rows(vol, locks, nl);
out:
	rowset_fini(&rs);
	if (!small) {
		free(locks);
		free(rows);
		free(par);
	}
	return ret;
}

/* Write everything else in place; the journal already holds the entry
 * (lean: a lean one, write_pages()). */
static int write_in_place(struct dg_vol *vol, const struct dg_range *r,
			  unsigned n, struct apage *pg, unsigned npg,
			  struct arow *rows, unsigned nrows, bool lean,
			  struct dg_flushset *fs)
{
	if (!vol->redundancy) {
		for (unsigned i = 0; i < n; i++) {
			struct dg_loc l = dg_vpn_loc(vol, r[i].vpn);
			uint64_t off = dg_row_page(vol, l.row) << DG_PAGE_SHIFT;
			int ret = dg_dev_write(&vol->devs[l.dev],
					       off + r[i].off, r[i].data,
					       r[i].len);

			if (ret)
				return ret;
			dg_flushset_add(fs, l.dev, off, DG_PAGE_SIZE);
		}
		return 0;
	}
	return write_pages(vol, pg, npg, rows, nrows, false, lean, fs);
}

/*
 * Degraded rows (a volume opened with DG_OPEN_DEGRADED_RW). A data page
 * on a missing device exists only as parity. Updating its row's other
 * pages patches parity with their deltas, which keeps it recoverable --
 * but a crash between the in-place writes and the parity writes leaves
 * parity that fits neither the old row nor the new one, and the replay,
 * which recomputes parity from the row's data, could then no longer
 * reconstruct the missing page (the write hole of a degraded RAID). So
 * each such page joins the update as a companion: read (reconstructed)
 * under the row lock like any old page, journaled whole with the
 * update's own ranges applied, never written in place. The replay takes
 * it from the journal (journal.c, redo_redundancy()), so parity comes out
 * exact. vpns has room for npg * (1 + missing devices); returns the new
 * count of distinct pages, sorted.
 */
static unsigned add_companions(struct dg_vol *vol, uint64_t *vpns,
			       unsigned npg)
{
	unsigned n = npg;

	if (!vol->degraded || !vol->redundancy || !vol->parity)
		return npg;
	for (unsigned i = 0; i < npg; i++) {
		uint64_t row = dg_vpn_loc(vol, vpns[i]).row;

		for (unsigned d = 0; d < vol->ndev; d++)
			if ((vol->missing_mask & (1u << d)) &&
			    !dg_row_dev_is_parity(vol, row, d))
				vpns[n++] = dg_loc_vpn(vol, d, row);
	}
	if (n == npg)
		return npg;
	qsort(vpns, n, sizeof(*vpns), u64_cmp);
	npg = 0;
	for (unsigned i = 0; i < n; i++)
		if (i == 0 || vpns[i] != vpns[i - 1])
			vpns[npg++] = vpns[i];
	return npg;
}

/*
 * The ranges to journal: the caller's, then each page of a missing
 * device whole (its image after the update), unless a range already
 * covers it whole or it was never written and stays so (the replay reads
 * such a page as zeros). *outp is r itself when nothing is added, else a
 * new array for the caller to free.
 */
static int journal_ranges(struct dg_vol *vol, const struct dg_range *r,
			  unsigned n, const struct apage *pg, unsigned npg,
			  unsigned *pix, const struct dg_range **outp,
			  unsigned *np)
{
	struct dg_range *out;
	unsigned m = n;

	*outp = r;
	*np = n;
	if (!vol->degraded)
		return 0;
	out = malloc((n + npg) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	memcpy(out, r, n * sizeof(*r));
	for (unsigned i = 0; i < npg; i++) {
		const struct apage *p = &pg[i];

		if (!(vol->missing_mask & (1u << p->dev)) || p->whole ||
		    (!p->nranges && p->old_csum == DG_CSUM_NONE))
			continue;
		pix[m] = i;
		out[m++] = (struct dg_range){ .vpn = p->vpn, .off = 0,
					      .len = DG_PAGE_SIZE,
					      .data = p->new };
	}
	if (m == n) {
		free(out);
		return 0;
	}
	*outp = out;
	*np = m;
	return 0;
}

/*
 * A page whose ranges rewrite bytes it already holds: an inode stored
 * whole for a changed size and time, a directory record rewritten with
 * one field changed. Its old image, read and verified under the row
 * lock (prepare_pages()), says which of the bytes change; only those
 * are journaled and written (with the ditto copy and the parity): every
 * byte it stores costs P + 1 journal copies, the page, its ditto copy
 * and both rows' parity. Not a page a range covers whole (its bytes
 * seal the entry), nor one never written (the media may hold anything
 * there: written whole), nor a new row's; and not at all on a degraded
 * volume (journal_ranges()) nor during a replace, whose replays argue
 * from the journal's bytes (trim_ranges() looks).
 */
static inline bool trimmable(const struct apage *p)
{
	return p->nranges && !p->whole && !p->in_place && !p->full_row &&
	       p->old && p->old_csum != DG_CSUM_NONE;
}

/* The bytes of [*lo, *hi) that change from old to new (narrowed to the
 * first and last that do); false when none does. */
static bool changed_span(const uint8_t *old, const uint8_t *new,
			 uint32_t *lo, uint32_t *hi)
{
	uint32_t a = *lo, b = *hi;

	while (a < b && old[a] == new[a])
		a++;
	while (b > a && old[b - 1] == new[b - 1])
		b--;
	*lo = a;
	*hi = b;
	return a < b;
}

/* Row a's parity span: the lines its pages change now. */
static void row_span(struct dg_vol *vol, const struct apage *pg,
		     struct arow *a)
{
	uint32_t lo = DG_PAGE_SIZE, hi = 0;

	for (unsigned rank = 0; rank < vol->k; rank++) {
		const struct apage *p;

		if (!a->page[rank])
			continue;
		p = &pg[a->page[rank] - 1];
		if (p->lo < lo)
			lo = p->lo;
		if (p->hi > hi)
			hi = p->hi;
	}
	a->lo = lo & ~(DG_LINE_SIZE - 1);
	a->hi = (hi + DG_LINE_SIZE - 1) & ~(DG_LINE_SIZE - 1);
}

/*
 * The ranges to journal with the bytes that do not change trimmed off
 * (trimmable() pages), each taken from the page's new image, so ranges
 * that overlap say the same as the caller's in any order; a range that
 * changes nothing is dropped, but a page keeps one byte (every page of
 * an update is in its entry). The pages' spans, and their rows' parity
 * spans, shrink to match: what is written in place. *outp is r itself
 * when nothing is trimmed, else a new array for the caller to free.
 */
static int trim_ranges(struct dg_vol *vol, const struct dg_range *r,
		       unsigned n, const unsigned *rix, struct apage *pg,
		       unsigned npg, struct arow *rows, unsigned nrows,
		       unsigned *pix, const struct dg_range **outp,
		       unsigned *np)
{
	struct dg_range *out;
	bool any = false;
	unsigned m = 0;

	*outp = r;
	*np = n;
	if (!vol->redundancy || vol->degraded || vol->repl)
		return 0;
	for (unsigned i = 0; i < npg && !any; i++)
		any = trimmable(&pg[i]);
	if (!any)
		return 0;
	out = malloc(n * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (unsigned i = 0; i < npg; i++)
		if (trimmable(&pg[i])) {
			pg[i].lo = DG_PAGE_SIZE;
			pg[i].hi = 0;
		}
	/* pix[m] is written only once pix[i >= m] has been read. */
	for (unsigned i = 0; i < n; i++) {
		struct apage *p = &pg[pix[i]];
		uint32_t lo = r[i].off, hi = r[i].off + r[i].len;

		if (!trimmable(p)) {
			pix[m] = pix[i];
			out[m++] = r[i];
			continue;
		}
		if (!changed_span(p->old, p->new, &lo, &hi))
			continue;
		if (lo < p->lo)
			p->lo = lo;
		if (hi > p->hi)
			p->hi = hi;
		pix[m] = pix[i];
		out[m++] = (struct dg_range){ .vpn = r[i].vpn, .off = lo,
					      .len = hi - lo,
					      .data = p->new + lo };
	}
	/* A page none of whose bytes change keeps the first byte of its
	 * first range: one range dropped for it, so out has room. */
	for (unsigned i = 0; i < npg; i++) {
		struct apage *p = &pg[i];
		const struct dg_range *q;

		if (!trimmable(p) || p->lo < p->hi)
			continue;
		q = &r[rix[p->r0]];
		p->lo = q->off;
		p->hi = q->off + 1;
		pix[m] = i;
		out[m++] = (struct dg_range){ .vpn = q->vpn, .off = q->off,
					      .len = 1,
					      .data = p->new + q->off };
	}
	for (unsigned i = 0; i < nrows; i++)
		if (!rows[i].in_place)
			row_span(vol, pg, &rows[i]);
	*outp = out;
	*np = m;
	return 0;
}

/*
 * The old pages a small update will read (its data pages and the parity
 * of their rows), asked of memory at once: read one after the other,
 * each waits out its own walk of the page tables and its own trip to
 * memory; asked together, the trips overlap with each other and with
 * the locking and bookkeeping before the reads.
 */
#define PREFETCH_MAX 8	/* pages of the update: a large one streams */

static void prefetch_old(struct dg_vol *vol, const struct apage *pg,
			 unsigned npg)
{
	if (!vol->redundancy || npg > PREFETCH_MAX)
		return;
	for (unsigned i = 0; i < npg; i++) {
		const struct apage *p = &pg[i];
		uint64_t off = dg_row_page(vol, p->row) << DG_PAGE_SHIFT;
		unsigned devs[1 + DG_MAX_PARITY], nd = 0;

		if (p->whole && (!vol->parity || p->full_row))
			continue; /* nothing old is read */
		devs[nd++] = p->dev;
		for (unsigned j = 0; j < vol->parity; j++)
			devs[nd++] = dg_row_parity_dev(vol, p->row, j);
		for (unsigned d = 0; d < nd; d++) {
			const struct dg_dev *dv = &vol->devs[devs[d]];

			if (!dg_dev_has_row(dv, p->row))
				continue;
			for (uint32_t l = 0; l < DG_PAGE_SIZE; l += DG_LINE_SIZE)
				__builtin_prefetch(dg_dev_ptr(dv, off + l));
		}
	}
}

/*
 * A lean update (format.h, DG_JENTRY_LEAN; docs/design.md "Lean
 * entries"): one range, a whole data page patched into its row (not a
 * new row, not the metadata zone, not a page new to the update) that
 * held data. Its bytes go to parity copies of the journal instead of
 * parity + 1, and its page is written before its parity (write_pages()).
 * Not during a replace, whose copy of a row argues from the journaled
 * update's bytes.
 */
static bool lean_update(const struct dg_vol *vol, const struct apage *pg,
			unsigned npg, unsigned njr, struct dg_jlean *jl)
{
	if (!vol->lean_journal || vol->repl || npg != 1 || njr != 1 ||
	    !sole_whole(pg) || pg->in_place || pg->full_row || pg->fresh ||
	    pg->old_csum == DG_CSUM_NONE || dg_ditto_has(vol, pg->vpn))
		return false;
	jl->prior = pg->old_csum;
	jl->copies = dg_journal_lean_copies(vol, pg->dev, pg->row);
	return jl->copies != 0;
}

/* held: the caller holds the locks of every row r touches, for writing
 * (dg_apply_locked()). fresh, hooks: dg_apply_new(). */
static int apply(struct dg_vol *vol, const struct dg_range *r, unsigned n,
		 const bool *fresh, const struct dg_apply_hooks *hooks,
		 bool held)
{
	uint64_t *vpns = NULL, seq;
	struct apage *pg = NULL;
	struct arow *rows = NULL;
	unsigned *locks = NULL, *rix = NULL, *pix = NULL, npg = 0, nrows = 0;
	unsigned nl = 0;
	uint8_t *mem = NULL;
	struct dg_djentry *entry;
	const void *const *edata;
	const struct dg_range *jr = r;	/* the ranges journaled */
	unsigned njr = n;
	size_t mem_pages;
	struct dg_flushset fs;
	struct dg_jlean jl;
	bool lean;
	struct {
		uint64_t vpns[SMALL_PAGES];
		struct apage pg[SMALL_PAGES];
		struct arow rows[SMALL_PAGES];
		unsigned locks[SMALL_PAGES], rix[SMALL_PAGES];
		unsigned pix[2 * SMALL_PAGES];
	} sm;
	bool small;
	int ret;

	if (vol->read_only || dg_latch_on(&vol->latch))
		return -EROFS;
	ret = check_ranges(vol, r, n);
	if (ret)
		return ret;
	dg_flushset_init(&fs);
	/* Companions (a missing device) may add pages: the heap then. */
	small = n <= SMALL_PAGES && !vol->missing_mask;
	vpns = small ? sm.vpns
		     : malloc(n * (1 + (size_t)__builtin_popcount(
					    vol->missing_mask)) *
			      sizeof(*vpns));
	if (!vpns)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		vpns[i] = r[i].vpn;
	sort_runs(vpns, n, sizeof(*vpns), u64_cmp);
	for (unsigned i = 0; i < n; i++)
		if (i == 0 || vpns[i] != vpns[i - 1])
			vpns[npg++] = vpns[i];
	npg = add_companions(vol, vpns, npg);

	mem_pages = vol->redundancy ? 2 * npg + npg * vol->parity +
					      prepare_scratch_pages(vol)
				    : 0;
	/* pg[] is set whole below; rows[] is zeroed as taken
	 * (rowset_get()), but for the page buffers set below. */
	if (small) {
		pg = sm.pg;
		rows = sm.rows;
		locks = sm.locks;
		rix = sm.rix;
		pix = sm.pix;
	} else {
		pg = malloc(npg * sizeof(*pg));
		rows = malloc(npg * sizeof(*rows));
		locks = malloc(npg * sizeof(*locks));
		rix = malloc(n * sizeof(*rix));
		/* room for companions */
		pix = malloc((n + npg) * sizeof(*pix));
	}
	mem = mem_pages ? scratch_get(SCRATCH_PAGES, mem_pages * DG_PAGE_SIZE)
			: NULL;
	if (!pg || !rows || !locks || !rix || !pix || (mem_pages && !mem)) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < npg; i++) {
		struct dg_loc l = dg_vpn_loc(vol, vpns[i]);

		pg[i] = (struct apage){ .vpn = vpns[i], .row = l.row,
					.dev = l.dev, .lo = DG_PAGE_SIZE };
		if (mem) {
			pg[i].old = mem + (size_t)(2 * i) * DG_PAGE_SIZE;
			pg[i].img = pg[i].old + DG_PAGE_SIZE;
			for (unsigned j = 0; j < vol->parity; j++)
				rows[i].par[j] =
					mem + (2 * npg + i * vol->parity + j) *
						      (size_t)DG_PAGE_SIZE;
		}
	}

	ret = note_ranges(vol, r, n, fresh, pg, npg, pix, rix);
	if (!ret)
		prefetch_old(vol, pg, npg);
	if (!ret)
		ret = new_rows_first(vol, r, rix, pg, npg, held);
	if (ret)
		goto out;
	if (!held)
		nl = lock_rows(vol, pg, npg, false, locks);
	if (hooks && hooks->locked)
		hooks->locked(hooks->arg);
	/* No redundancy: no buffers, nothing to prepare. */
	ret = prepare(vol, r, rix, pg, npg, rows, &nrows,
		      mem ? mem + (mem_pages - prepare_scratch_pages(vol)) *
					  DG_PAGE_SIZE
			  : NULL);
	if (!ret)
		ret = vol->degraded ? journal_ranges(vol, r, n, pg, npg, pix,
						     &jr, &njr)
				    : trim_ranges(vol, r, n, rix, pg, npg,
						  rows, nrows, pix, &jr, &njr);
	if (ret)
		goto unlock;
	entry = build_entry(vol, jr, njr, pix, pg, &edata);
	if (!entry) {
		ret = -ENOMEM;
		goto unlock;
	}
	/* The entry is durable before anything else is written in place:
	 * after a crash recovery redoes it whole (G4, no write hole). */
	lean = lean_update(vol, pg, npg, njr, &jl);
	ret = lean ? dg_journal_append_lean(vol, entry, edata, &jl, &seq)
		   : dg_journal_append(vol, entry, edata, &seq);
	if (ret)
		goto unlock;
	if (hooks && hooks->journaled)
		hooks->journaled(hooks->arg);
	ret = write_in_place(vol, r, n, pg, npg, rows, nrows, lean, &fs);
	/* Partly applied, or not known durable, on failure: the entry
	 * stays in the journal and only recovery can finish it. */
	ret = persist_writes(vol, &fs, ret, "update", seq);
	if (!ret)
		dg_journal_done(vol, seq);
unlock:
	unlock_rows(vol, locks, nl);
out:
	dg_flushset_fini(&fs);
	if (jr != r)
		free((void *)jr);
	if (!small) {
		free(pix);
		free(rix);
		free(locks);
		free(rows);
		free(pg);
		free(vpns);
	}
	return ret;
}

int dg_apply(struct dg_vol *vol, const struct dg_range *r, unsigned n)
{
	return apply(vol, r, n, NULL, NULL, false);
}

int dg_apply_locked(struct dg_vol *vol, const struct dg_range *r, unsigned n,
		    const bool *fresh)
{
	return apply(vol, r, n, fresh, NULL, true);
}

int dg_apply_new(struct dg_vol *vol, const struct dg_range *r, unsigned n,
		 const bool *fresh, const struct dg_apply_hooks *hooks)
{
	return apply(vol, r, n, fresh, hooks, false);
}
