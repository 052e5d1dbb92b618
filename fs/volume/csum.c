// SPDX-License-Identifier: MIT
/*
 * csum.c -- address-seeded XXH3 page checksums and the checksum pages that
 * hold them: copies on several devices, generations, the init map.
 *
 * The freshness rule (format.h, docs/integrity.md): of the copies of a
 * checksum page, the one with the highest generation whose seal verifies
 * is the page; every other copy is stale or damaged and is rewritten from
 * it. A device that drops writes can only hand back an older, valid copy,
 * and an older copy always loses. A checksum page of which no copy
 * verifies is "never written" only when the init map says so; otherwise
 * it is damage and the pages it covers cannot be verified (EIO).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "xxh.h"

#include "check.h"
#include "csum.h"
#include "super.h"

/* Generations: dg_dsuper.generation (bumped at every open for writing)
 * in the high bits, writes since in the low ones (format.h,
 * dg_gen_base()). Start a new epoch this far before the low bits would
 * run out: the writes already under way stay below the boundary. */
#define GEN_ROLL (dg_gen_count(UINT64_MAX) - (1ull << 24))

uint64_t dg_seed_from_uuid(const uint8_t uuid[16])
{
	return XXH3_64bits(uuid, 16);
}

/* Checksum seed = volume identity + page address (format.h,
 * "Checksums"): a misdirected page fails verification. */
uint64_t dg_csum_page(const struct dg_vol *vol, unsigned dev, uint64_t row,
		      const void *page)
{
	uint64_t seed = vol->seed ^ ((dev + 1) * DG_SEED_K_DEV) ^
			((row + 1) * DG_SEED_K_ROW);
	uint64_t h = XXH3_64bits_withSeed(page, DG_PAGE_SIZE, seed);

	return h == DG_CSUM_NONE ? 1 : h;
}

const uint8_t dg_zero_page[DG_PAGE_SIZE] __attribute__((aligned(DG_PAGE_SIZE)));

bool dg_csum_blank(const struct dg_vol *vol, unsigned dev, uint64_t row,
		   uint64_t cs)
{
	return cs == DG_CSUM_NONE || cs == dg_csum_page(vol, dev, row,
						       dg_zero_page);
}

/* ---- generations ------------------------------------------------------ */

void dg_gen_init(struct dg_vol *vol)
{
	atomic_store(&vol->gen, dg_gen_base(vol->sb.generation));
}

static uint64_t dg_gen_next(struct dg_vol *vol)
{
	uint64_t g = atomic_fetch_add(&vol->gen, 1) + 1;

	/* Exactly one caller gets here. Its failure is not this
	 * generation's: it latched the volume (media.h), and the write the
	 * generation is for is refused by the media layer. */
	if (dg_gen_count(g) == GEN_ROLL)
		(void)dg_super_new_epoch(vol);
	return g;
}

/* ---- checksum page images ---------------------------------------------- */

static uint64_t cpage_seed(const struct dg_vol *vol, unsigned owner,
			   uint64_t index)
{
	return vol->seed ^ ((owner + 1) * DG_SEED_K_DEV) ^
	       ((index + 1) * DG_SEED_K_CPAGE);
}

#define CPAGE_LINES (DG_PAGE_SIZE / DG_LINE_SIZE)

/* The sum of the line seal's terms (format.h, struct dg_dcpage) of the
 * lines of page in the mask lines: bit l for line l. */
static uint64_t seal_lines(uint64_t seed, const void *page, uint64_t lines)
{
	const size_t end = offsetof(struct dg_dcpage, seal);
	uint64_t sum = 0;

	for (; lines; lines &= lines - 1) {
		size_t at = (size_t)__builtin_ctzll(lines) * DG_LINE_SIZE;

		sum += XXH3_64bits_withSeed(
			(const uint8_t *)page + at,
			at + DG_LINE_SIZE > end ? end - at : DG_LINE_SIZE,
			seed ^ ((at / DG_LINE_SIZE + 1) * DG_SEED_K_LINE));
	}
	return sum;
}

static uint64_t cpage_seal(const struct dg_vol *vol, unsigned owner,
			   uint64_t index, const void *page)
{
	uint64_t seed = cpage_seed(vol, owner, index);

	_Static_assert(CPAGE_LINES == 64, "one mask bit a line");
	if (dg_vol_has_incompat(vol, DG_FEAT_INCOMPAT_LINE_SEAL))
		return seal_lines(seed, page, ~0ull);
	return XXH3_64bits_withSeed(page, offsetof(struct dg_dcpage, seal),
				    seed);
}

int dg_csum_page_check(const struct dg_vol *vol, unsigned owner,
		       uint64_t index, const void *page)
{
	const struct dg_dcpage *p = page;

	/* An all-zero page does not verify: its seal would be 0. */
	if (p->seal != 0 && p->seal == cpage_seal(vol, owner, index, page))
		return 1;
	return -EUCLEAN;
}

void dg_csum_page_seal(const struct dg_vol *vol, unsigned owner,
		       uint64_t index, void *page)
{
	struct dg_dcpage *p = page;

	p->seal = cpage_seal(vol, owner, index, page);
}

int dg_csum_upd_cmp(const void *a, const void *b)
{
	const struct dg_csum_upd *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

static struct dg_dev *copy_dev(struct dg_vol *vol, unsigned owner,
			       uint64_t index, unsigned c, uint64_t *off)
{
	unsigned dev = dg_cpage_copy_dev(vol, owner, c);

	*off = dg_cpage_copy_page(vol, index, c) << DG_PAGE_SHIFT;
	return vol->devs[dev].present ? &vol->devs[dev] : NULL;
}

static pthread_mutex_t *cpage_lock(struct dg_vol *vol, unsigned owner,
				   uint64_t index)
{
	return &vol->csum_locks[dg_cpage_lock_idx(dg_cpage_key(owner, index))];
}

/*
 * One checksum page being written: its new image, and which of its
 * slots changed: those of the updates u[0, nu) (sorted by row), or, nu
 * 0, every one (a page written whole). first: its first_copy(), set by
 * write_pages_copies().
 */
struct cpw {
	unsigned owner;
	uint64_t index;
	const void *img;
	unsigned first;
	const struct dg_csum_upd *u;
	unsigned nu;
};

/* Store img's bytes [from, to) in copy c at off and add them to fs. */
static int store_span(struct dg_dev *d, unsigned dev, uint64_t off,
		      const void *img, uint32_t from, uint32_t to,
		      struct dg_flushset *fs)
{
	int ret = dg_dev_write(d, off + from, (const uint8_t *)img + from,
			       to - from);

	if (!ret)
		dg_flushset_add(fs, dev, off + from, to - from);
	return ret;
}

/*
 * Store the bytes of w that changed, and the generation and seal of
 * its image, in copy c, and add the lines stored to fs, the round that
 * makes them durable. Only those bytes: every other line of the copy is
 * durable already (each writer of a copy persists what it stores before
 * it lets go: updates, repairs, the format), so storing or flushing it
 * would make nothing more durable. An update's slots are stored run by
 * run, slots less than a line apart in one: the rows of an update (the
 * data page's, a metadata page's, their ditto copies') are often far
 * apart in one checksum page, and the span from the first to the last
 * cost 270 bytes a copy where the slots are 8 each. A crash before the
 * round's fence leaves this copy sealed at the older generation (stale)
 * or failing its seal (bad), as a crash inside a persist of the whole
 * page would (docs/design.md, "What a write costs the media"). 0, or
 * the store's failure (latched).
 */
static int store_copy(struct dg_vol *vol, const struct cpw *w, unsigned c,
		      struct dg_flushset *fs)
{
	const uint32_t tail = offsetof(struct dg_dcpage, gen);
	uint64_t off;
	struct dg_dev *d = copy_dev(vol, w->owner, w->index, c, &off);
	unsigned dev = dg_cpage_copy_dev(vol, w->owner, c);
	int ret = 0;

	if (!d)
		return 0;
	if (!w->nu)
		ret = store_span(d, dev, off, w->img, 0, tail, fs);
	for (unsigned i = 0; i < w->nu && !ret;) {
		uint32_t from = (uint32_t)(w->u[i].row % DG_CSUMS_PER_PAGE) * 8;
		uint32_t to = from + 8;

		for (i++; i < w->nu; i++) {
			uint32_t at = (uint32_t)(w->u[i].row %
						 DG_CSUMS_PER_PAGE) * 8;

			if (at >= to + DG_LINE_SIZE)
				break;
			to = at + 8;
		}
		ret = store_span(d, dev, off, w->img, from, to, fs);
	}
	return ret ? ret : store_span(d, dev, off, w->img, tail, DG_PAGE_SIZE,
				      fs);
}

/* Whether copy c of owner's checksum pages counts after a crash: its
 * device present, and not one being filled in by a replace (left out
 * until it is whole, replace.c) or rebuilt by fsck (its copies do not
 * vote while a survivor's verifies, cpage_candidate()). */
static bool copy_counts(struct dg_vol *vol, unsigned owner, unsigned c)
{
	unsigned dev = dg_cpage_copy_dev(vol, owner, c);

	return vol->devs[dev].present && !vol->devs[dev].filling &&
	       !(vol->cpx_rebuilding & (1u << dev));
}

/*
 * The copy of (owner, index) made durable alone, before the others are
 * touched: the first that counts after a crash (copy_counts()), so that
 * a crash in the second round leaves one such copy whole; failing that
 * the first on a present device. ncopies if none is present.
 */
static unsigned first_copy(struct dg_vol *vol, unsigned owner, uint64_t index)
{
	unsigned c, present = vol->sb.csum_copies;
	uint64_t off;

	for (c = 0; c < vol->sb.csum_copies; c++) {
		if (!copy_dev(vol, owner, index, c, &off))
			continue;
		if (copy_counts(vol, owner, c))
			return c;
		if (present == vol->sb.csum_copies)
			present = c;
	}
	return present;
}

/* Store every copy of the n pages w into fs, but each page's first
 * copy (w[i].first, stored already) where but_first. */
static int store_copies(struct dg_vol *vol, const struct cpw *w, unsigned n,
			bool but_first, struct dg_flushset *fs)
{
	int ret = 0;

	for (unsigned i = 0; i < n && !ret; i++)
		for (unsigned c = 0; c < vol->sb.csum_copies && !ret; c++)
			if (!but_first || c != w[i].first)
				ret = store_copy(vol, &w[i], c, fs);
	return ret;
}

/*
 * Write the n pages w to their copies, one copy of each page a round.
 * First one copy of every page that counts after a crash (first_copy()),
 * in one round with the caller's stores fs (they may become durable in
 * any order with those copies); then each other copy in a round of its
 * own, as the copies were written before rounds, one durable before the
 * next is touched. So no crash tears every copy of a page (until the
 * first round's fence the other copies are untouched and whole, the
 * older generation; from it on the first copy is whole at the new one
 * and wins, dg_cpage_examine(), newest verified copy), and a crash plus
 * one lost or misdirected write of a copy still leaves a whole copy of
 * one generation or the other beside the torn one. Two rounds (all the
 * other copies together) saved a fence a write and failed that: the
 * compound campaign found a lost first copy with every other copy torn
 * (docs/integrity.md, "Ordering of an update"). The generation is the
 * page's, not the copy's, so a copy written later is never newer than
 * the first. 0, or the first failure (the volume is latched, media.h:
 * nothing more is stored).
 */
static int write_pages_copies(struct dg_vol *vol, struct cpw *w,
			      unsigned n, struct dg_flushset *fs,
			      const struct dg_csum_then *then, bool together)
{
	struct dg_flushset rest;
	int ret = 0, r;

	if (together && !then) {
		/* Every copy in the caller's round (copies_together_ok()):
		 * a crash may tear them all, and the replay rebuilds each
		 * page from them (cpage_salvage()). */
		ret = store_copies(vol, w, n, false, fs);
		r = dg_flushset_persist(vol->devs, vol->ndev, fs);
		return ret ? ret : r;
	}

	/* Each page's first copy found once, not again in every later
	 * round (300 instructions a 4 KiB write): the later rounds store
	 * exactly the copies other than the one this round stored, even
	 * should a device's state change meanwhile. */
	for (unsigned i = 0; i < n && !ret; i++) {
		unsigned c = w[i].first = first_copy(vol, w[i].owner,
						     w[i].index);

		if (c < vol->sb.csum_copies)
			ret = store_copy(vol, &w[i], c, fs);
	}
	r = dg_flushset_persist(vol->devs, vol->ndev, fs);
	ret = ret ? ret : r;
	if (ret)
		return ret;
	if (together) {
		/* A lean update's (then): every other copy in the round
		 * of its parity, which the first round's fence orders after
		 * its page (apply.c, "Lean entries"). */
		dg_flushset_init(&rest);
		ret = then->store(then->arg, &rest);
		if (!ret)
			ret = store_copies(vol, w, n, true, &rest);
		r = dg_flushset_persist(vol->devs, vol->ndev, &rest);
		dg_flushset_fini(&rest);
		return ret ? ret : r;
	}
	/* The other copies one at a time: step j stores the j-th copy
	 * after the first of every page, and is durable before step j + 1
	 * touches the next. Then's stores join step 0, or make a round of
	 * their own. */
	for (unsigned j = 0; (j + 1 < vol->sb.csum_copies || (!j && then)) &&
			     !ret; j++) {
		dg_flushset_init(&rest);
		if (!j && then)
			ret = then->store(then->arg, &rest);
		for (unsigned i = 0; j + 1 < vol->sb.csum_copies && i < n &&
				     !ret; i++) {
			unsigned c = j < w[i].first ? j : j + 1;

			ret = store_copy(vol, &w[i], c, &rest);
		}
		r = dg_flushset_persist(vol->devs, vol->ndev, &rest);
		dg_flushset_fini(&rest);
		ret = ret ? ret : r;
	}
	return ret;
}

/*
 * Write every copy of the n pages w of an index the map says was never
 * written (cmap_init_index()), all in one round with the caller's stores
 * fs. No checksum of such an index is in use: nothing is set in it until
 * its bit is durable in the map, which is written only after this
 * round's fence, and until then a copy that verifies holds what an
 * initialisation wrote (no entry set), while none verifying reads as
 * "never written" (dg_cpage_examine()). (A bit lost from every copy of
 * the map, beyond parity, is set again at the open for each index with
 * a page in use, before anything writes: bmap.c, map_covers_used().)
 * So a crash that tears every copy
 * loses nothing: the bit is still clear, and the next write into the
 * index writes its pages again. The order write_pages_copies() keeps
 * (one copy durable before the next is touched) guards checksums in
 * use; here there are none, and its rounds were csum_copies of the
 * csum_copies + 2 a new index cost.
 */
static int write_fresh_copies(struct dg_vol *vol, const struct cpw *w,
			      unsigned n, struct dg_flushset *fs)
{
	int ret = store_copies(vol, w, n, false, fs);
	int r = dg_flushset_persist(vol->devs, vol->ndev, fs);

	return ret ? ret : r;
}

static int lock_idx_cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/* Lock indexes in ascending order. A few by insertion: a 4 KiB write
 * has two, which qsort() (glibc's merge sort, through a comparison
 * call each) took 170 instructions to order. */
static void sort_lock_idx(unsigned *l, unsigned n)
{
	if (n > 8) {
		qsort(l, n, sizeof(*l), lock_idx_cmp);
		return;
	}
	for (unsigned i = 1; i < n; i++) {
		unsigned x = l[i], j = i;

		for (; j > 0 && l[j - 1] > x; j--)
			l[j] = l[j - 1];
		l[j] = x;
	}
}

/* The repair primitive for checksum copies: copy c is proven stale or
 * damaged by a newer verified copy, whose image it gets whole. */
static void repair_copy(struct dg_vol *vol, unsigned owner, uint64_t index,
			unsigned c, const void *img, bool stale, bool quiet)
{
	uint64_t page = dg_cpage_copy_page(vol, index, c);
	unsigned dev = dg_cpage_copy_dev(vol, owner, c);
	const char *why = stale ? "copy is stale (older generation)"
				: "copy fails its seal";

	if (!quiet)
		dg_fault_note_copy(vol, DG_FAULT_DETECTED, dev, page, stale,
				   why);
	if (!dg_repair_ok(vol, stale ? DG_CHK_CSUM_STALE : DG_CHK_CSUM_BAD,
			  dev, page, DG_WHAT_CSUM_COPY, why,
			  "rewrite it from the newest copy")) {
		/* The newest copy serves the reader; this one stays. */
		if (!quiet)
			dg_fault_note_copy(vol, DG_FAULT_RECOVERED, dev, page,
					   stale, "newest copy used");
		return;
	}
	/* The newest copy serves the reader either way; a failure has
	 * latched the volume (media.h) and is the next writer's to see. */
	if (dg_repair_write(vol, dev, page << DG_PAGE_SHIFT, img,
			    DG_PAGE_SIZE))
		return;
	if (!quiet)
		dg_fault_note_copy(vol, DG_FAULT_REPAIRED, dev, page, stale,
				   "rewritten from the newest copy");
}

/*
 * Whether a stale or torn copy of a checksum page of index may be what
 * a crash left of a round in flight: the open found entries in the log
 * that name a row of the page. The replay sets those rows again and the
 * copy is rewritten from the newest, but it is no fault of the device:
 * no fault event (which fsck -n, replaying in memory, would report as a
 * finding the crash alone made). The price: a real fault on such a copy
 * at that moment is repaired unreported too.
 */
static bool crash_debris(const struct dg_vol *vol, uint64_t index)
{
	return vol->jrnl.ncover &&
	       dg_journal_covers_any(vol, index * DG_CSUMS_PER_PAGE,
				     (index + 1) * DG_CSUMS_PER_PAGE);
}

/*
 * Whether the copies of (owner, index) look torn by a round that wrote
 * them together (write_pages_copies()), so that they are to be voted on
 * slot by slot (cpage_salvage()): the open found entries in the log (a
 * crash), the index is in use, the page holds a row an entry names (a
 * together round sets only those), and two copies or more that count
 * fail their seal -- a round that writes one copy at a time tears one,
 * and one fault another. Beside a copy that verifies (the newest, of
 * generation ref_gen), only if a torn copy went through a later round
 * than it (its generation word, an 8-byte store of that round, is
 * higher): the copy that verifies then lost writes the torn ones hold
 * outside their round. Else it is the newest state, and wins, as a copy
 * written alone and durable before the others (a writer that keeps a
 * round a copy) must.
 */
static bool torn_together(struct dg_vol *vol, unsigned owner,
			  uint64_t index, const struct dg_cpage_view *v,
			  bool verified, uint64_t ref_gen)
{
	unsigned bad = 0;
	bool later = !verified;

	/* An index whose bit is clear holds no checksum in use. */
	if (!vol->copies_together || !dg_cmap_test(vol, index) ||
	    !crash_debris(vol, index))
		return false;
	for (unsigned c = 0; c < vol->sb.csum_copies; c++) {
		uint64_t off;
		struct dg_dev *d = copy_dev(vol, owner, index, c, &off);

		if (v->state[c] != DG_COPY_BAD || !d ||
		    !copy_counts(vol, owner, c))
			continue;
		bad++;
		later = later || ((const struct dg_dcpage *)dg_dev_ptr(d, off))
					 ->gen > ref_gen;
	}
	return bad >= 2 && later;
}

/* A generation for a page rebuilt from copies that verify up to
 * generation floor: newer than floor, even in an open that began no
 * epoch of its own (read-only, or a rebuild's), and the volume's
 * counter moved past it so that later updates are newer still. */
static uint64_t gen_past(struct dg_vol *vol, uint64_t floor)
{
	uint64_t cur = atomic_load(&vol->gen);

	while (cur < floor &&
	       !atomic_compare_exchange_weak(&vol->gen, &cur, floor))
		;
	return dg_gen_next(vol);
}

/*
 * Checksum page (owner, index), whose copies a crash tore together
 * (torn_together()), rebuilt slot by slot into img from every copy that
 * counts, torn or not (write_pages_copies(),
 * DG_FEAT_INCOMPAT_COPIES_TOGETHER). A copy's store rewrites the slots
 * it spans with the bytes each holds already, but for those its update
 * sets, and a crash keeps or loses each 8-byte store; so a torn copy
 * still holds every slot its round did not set as it was, and the
 * slots a round sets are those of rows its live journal entry names
 * (the journal's cover, dg_journal_covers()), which the replay sets
 * again. Each slot takes the value that most copies that count hold, if
 * two hold it and no other value as many: one fault under parity 1
 * leaves two of the three copies as they were (or as the round left
 * them). A slot none wins is a live entry's to set, and takes the
 * first copy's value until then (an old or a new one). Anything else is
 * not a crash's doing: 0 if rebuilt (*first: the first copy that
 * counts), -EIO if not.
 */
static int cpage_salvage(struct dg_vol *vol, unsigned owner, uint64_t index,
			 void *img, unsigned *first)
{
	const unsigned n = vol->sb.csum_copies;
	const struct dg_dcpage *cp[DG_MAX_CSUM_COPIES];
	struct dg_dcpage *out = img;
	unsigned m = 0;
	uint64_t off, floor = 0;

	for (unsigned c = 0; c < n; c++) {
		struct dg_dev *d = copy_dev(vol, owner, index, c, &off);

		if (!d || !copy_counts(vol, owner, c))
			continue;
		if (!m)
			*first = c;
		cp[m] = (const void *)dg_dev_ptr(d, off);
		if (dg_csum_page_check(vol, owner, index, cp[m]) == 1 &&
		    cp[m]->gen > floor)
			floor = cp[m]->gen;
		m++;
	}
	if (m < 2)
		return -EIO;
	for (unsigned s = 0; s < DG_CSUMS_PER_PAGE; s++) {
		unsigned best = 0, votes = 0;
		bool tie = false;

		for (unsigned a = 0; a < m; a++) {
			unsigned same = 0;

			for (unsigned b = 0; b < m; b++)
				same += cp[b]->csum[s] == cp[a]->csum[s];
			if (same > votes) {
				best = a;
				votes = same;
				tie = false;
			} else if (same == votes &&
				   cp[a]->csum[s] != cp[best]->csum[s]) {
				tie = true;
			}
		}
		if (votes < 2 || tie) {
			if (!dg_journal_covers(vol, index * DG_CSUMS_PER_PAGE +
							    s))
				return -EIO;
			best = 0;
		}
		out->csum[s] = cp[best]->csum[s];
	}
	out->gen = gen_past(vol, floor);
	dg_csum_page_seal(vol, owner, index, out);
	return 0;
}

int dg_cpage_examine(struct dg_vol *vol, unsigned owner, uint64_t index,
		     void *img, struct dg_cpage_view *v, unsigned flags)
{
	const bool quiet = flags & DG_CPX_QUIET;
	const unsigned n = vol->sb.csum_copies;
	struct dg_dcpage *best = img;
	uint8_t *tmp = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	int ref = -1;

	if (!tmp)
		return -ENOMEM;
	memset(v, 0, sizeof(*v));
	v->ncopies = n;
	for (unsigned c = 0; c < n; c++) {
		uint64_t off;
		struct dg_dev *d = copy_dev(vol, owner, index, c, &off);
		const struct dg_dcpage *p = (const void *)tmp;

		if (!d) {
			v->state[c] = DG_COPY_ABSENT;
			continue;
		}
		memcpy(tmp, dg_dev_ptr(d, off), DG_PAGE_SIZE);
		if (dg_csum_page_check(vol, owner, index, tmp) != 1) {
			v->state[c] = DG_COPY_BAD;
			continue;
		}
		v->state[c] = DG_COPY_CURRENT;
		v->copy_gen[c] = p->gen;
		if (vol->cpx_rebuilding & (1u << (unsigned)(d - vol->devs)))
			continue; /* a candidate below, if no other verifies */
		if (ref < 0 || p->gen > best->gen) {
			memcpy(best, tmp, DG_PAGE_SIZE);
			ref = (int)c;
		}
	}
	if (torn_together(vol, owner, index, v, ref >= 0,
			  ref >= 0 ? best->gen : 0)) {
		unsigned first = 0;

		if (cpage_salvage(vol, owner, index, img, &first) == 0) {
			dg_vol_log(vol, DG_LOG_NOTICE, "checksum page %u/%" PRIu64
				   ": copies torn together by a crash; rebuilt "
				   "slot by slot from them", owner, index);
			/* Each counted copy is rewritten from it: one that
			 * verifies is older (torn_together()). */
			for (unsigned c = 0; c < n; c++)
				if (v->state[c] == DG_COPY_CURRENT &&
				    copy_counts(vol, owner, c))
					v->state[c] = DG_COPY_STALE;
			ref = (int)first;
		} else if (ref >= 0) {
			/* The newest that verifies, as before: the page is
			 * not one a together round tore. */
			uint64_t off;
			struct dg_dev *d = copy_dev(vol, owner, index,
						    (unsigned)ref, &off);

			memcpy(best, dg_dev_ptr(d, off), DG_PAGE_SIZE);
		}
	}
	/* Only copies on devices being rebuilt verify: the newest of them,
	 * the only evidence left. */
	if (ref < 0) {
		for (unsigned c = 0; c < n; c++)
			if (v->state[c] == DG_COPY_CURRENT &&
			    (ref < 0 || v->copy_gen[c] > v->copy_gen[ref]))
				ref = (int)c;
		if (ref >= 0) {
			uint64_t off;
			struct dg_dev *d = copy_dev(vol, owner, index,
						    (unsigned)ref, &off);

			memcpy(best, dg_dev_ptr(d, off), DG_PAGE_SIZE);
		}
	}
	free(tmp);
	if (ref < 0) {
		memset(img, 0, DG_PAGE_SIZE);
		if (!dg_cmap_test(vol, index))
			return v->result = 0; /* never written */
		v->result = -EIO;
		if (!quiet) {
			dg_fault_note(vol, DG_FAULT_DETECTED, owner, index,
				      DG_WHAT_CSUM_PAGE, "no copy verifies");
			dg_fault_note(vol, DG_FAULT_UNRECOVERABLE, owner,
				      index, DG_WHAT_CSUM_PAGE, "EIO");
		}
		return -EIO;
	}
	v->gen = best->gen;
	v->source = (unsigned)ref;
	for (unsigned c = 0; c < n; c++) {
		uint64_t off;
		struct dg_dev *d = copy_dev(vol, owner, index, c, &off);

		if (v->state[c] == DG_COPY_CURRENT &&
		    v->copy_gen[c] < best->gen)
			v->state[c] = DG_COPY_STALE;
		/* A copy on a device being rebuilt that is not the winner's
		 * bytes (newer, or as new but other: written in a history
		 * of its own) is rewritten from the winner too. */
		if (v->state[c] == DG_COPY_CURRENT && (int)c != ref && d &&
		    (vol->cpx_rebuilding & (1u << (unsigned)(d - vol->devs))) &&
		    memcmp(dg_dev_ptr(d, off), best, DG_PAGE_SIZE))
			v->state[c] = DG_COPY_STALE;
		if (v->state[c] == DG_COPY_BAD || v->state[c] == DG_COPY_STALE) {
			v->bad++;
			if (flags & DG_CPX_REPAIR)
				repair_copy(vol, owner, index, c, img,
					    v->state[c] == DG_COPY_STALE,
					    quiet || crash_debris(vol, index));
		}
	}
	return v->result = 1;
}

int dg_cpage_settle(struct dg_vol *vol, unsigned owner, uint64_t index)
{
	pthread_mutex_t *lock = cpage_lock(vol, owner, index);
	uint8_t *img = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	struct dg_cpage_view v;
	int ret;

	if (!img)
		return -ENOMEM;
	pthread_mutex_lock(lock);
	ret = dg_cpage_examine(vol, owner, index, img, &v, DG_CPX_REPAIR);
	pthread_mutex_unlock(lock);
	free(img);
	return ret == -ENOMEM ? ret : 0;
}

/* ---- the init map ------------------------------------------------------ */

static uint64_t cmap_seal(const struct dg_vol *vol, uint64_t p,
			  const void *page)
{
	return XXH3_64bits_withSeed(page, offsetof(struct dg_dcmap, seal),
				    vol->seed ^ ((p + 1) * DG_SEED_K_CMAP));
}

int dg_cmap_page_check(const struct dg_vol *vol, uint64_t p, const void *page)
{
	const struct dg_dcmap *m = page;

	/* An all-zero page does not verify: its seal would be 0. */
	return m->seal != 0 && m->seal == cmap_seal(vol, p, m) ? 1 : -EUCLEAN;
}

void dg_cmap_page_seal(const struct dg_vol *vol, uint64_t p, void *page)
{
	struct dg_dcmap *m = page;

	m->seal = cmap_seal(vol, p, m);
}

static uint64_t cmap_off(const struct dg_vol *vol, uint64_t p, unsigned slot)
{
	return (vol->sb.cmap_start + slot * vol->sb.cmap_pages + p)
	       << DG_PAGE_SHIFT;
}

uint64_t dg_cmap_slot_off(const struct dg_vol *vol, unsigned slot)
{
	return cmap_off(vol, 0, slot);
}

/*
 * The map's writes. Every write of a page is a round of its own or a
 * round it rides in (dg_cmap_ride()), one at a time (cmap_init_lock,
 * held until the round is durable), each writing the bits in core, which
 * only grow. A whole write puts a page in both slots, slot 0 durable
 * before slot 1 is touched; a one-slot write (a pending bit's, below)
 * goes to the slot not written last, so the other holds every bit
 * written before it, whole. Either way a crash tears at most one slot of
 * a page, and the map -- the union of the copies that verify -- keeps
 * every bit it held.
 *
 * A bit set in core by a journaled batch's new index (fresh_add()) is
 * *pending* until a write holds it: the next journal entry's round takes
 * it along (journal.c, append()), or the next batch's that touches no
 * pending index (set_batch()); a batch that would touch the index's
 * pages writes it in a round of its own first. So nothing but the
 * initialising round touches a pending index's pages, and a crash that
 * finds its bit clear on the media finds pages whole or torn by that
 * round alone (fresh_add()).
 */

/* Map page p's image in core into m, with a new generation and sealed;
 * the pending bits it carries into took (NULL: none wanted). */
static void cmap_image(struct dg_vol *vol, uint64_t p, struct dg_dcmap *m,
		       uint8_t *took)
{
	const size_t bytes = sizeof(m->bits);

	pthread_mutex_lock(&vol->cmap_lock);
	memcpy(m->bits, vol->cmap + p * bytes, bytes);
	if (took)
		memcpy(took, vol->cmap_pending + p * bytes, bytes);
	pthread_mutex_unlock(&vol->cmap_lock);
	m->gen = dg_gen_next(vol);
	dg_cmap_page_seal(vol, p, m);
}

/* The bits in took (cmap_image()) are on the media now: not pending. */
static void cmap_written(struct dg_vol *vol, uint64_t p, const uint8_t *took)
{
	const size_t bytes = DG_CMAP_BITS / 8;
	uint8_t *pend = vol->cmap_pending + p * bytes;
	uint64_t n = 0;

	pthread_mutex_lock(&vol->cmap_lock);
	for (size_t i = 0; i < bytes; i++) {
		n += (uint64_t)__builtin_popcount(pend[i] & took[i]);
		pend[i] &= (uint8_t)~took[i];
	}
	vol->cmap_npending -= n;
	pthread_mutex_unlock(&vol->cmap_lock);
}

/* Store m into page p on every present device (or those marked in
 * differs), into fs: into slot (slot ^ flip[d], with flip). */
static int cmap_store_slot(struct dg_vol *vol, uint64_t p, unsigned slot,
			   const uint8_t *flip, const struct dg_dcmap *m,
			   const uint8_t *differs, struct dg_flushset *fs)
{
	int ret = 0;

	for (unsigned d = 0; d < vol->ndev && !ret; d++) {
		uint64_t off = cmap_off(vol, p, slot ^ (flip ? flip[d] : 0));

		if (!vol->devs[d].present || (differs && !differs[d]))
			continue;
		ret = dg_dev_write(&vol->devs[d], off, m, DG_PAGE_SIZE);
		if (!ret)
			dg_flushset_add(fs, d, off, DG_PAGE_SIZE);
	}
	return ret;
}

/* Write map page p whole, to both slots of every present device (all)
 * or of those marked in differs: first the slot not written last (the
 * other one holds every bit written before, whole), or on device d slot
 * behind[d] where given (dg_cmap_load(): the slot short of the union).
 * 0, or the first failure (nothing more written). Caller holds
 * cmap_init_lock, or is alone (the format, the open). */
static int cmap_write(struct dg_vol *vol, uint64_t p, bool all,
		      const uint8_t *differs, const uint8_t *behind)
{
	struct dg_dcmap *m = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint8_t *took = all ? malloc(DG_CMAP_BITS / 8) : NULL;
	int ret = 0;

	if (!m || (all && !took)) {
		free(m);
		free(took);
		return -ENOMEM;
	}
	cmap_image(vol, p, m, took);
	/* A round a slot (media.h). */
	for (unsigned k = 0; k < 2 && !ret; k++) {
		struct dg_flushset fs;
		int r;

		dg_flushset_init(&fs);
		ret = cmap_store_slot(vol, p,
				      k ^ (behind ? 0 : vol->cmap_next_slot[p]),
				      behind, m, all ? NULL : differs, &fs);
		r = dg_flushset_persist(vol->devs, vol->ndev, &fs);
		dg_flushset_fini(&fs);
		ret = ret ? ret : r;
	}
	if (!ret && all)
		cmap_written(vol, p, took);
	free(took);
	free(m);
	return ret;
}

/* Whether any bit of map page p is pending. Caller holds cmap_lock. */
static bool page_pending(const struct dg_vol *vol, uint64_t p)
{
	const size_t bytes = DG_CMAP_BITS / 8;
	const uint8_t *pend = vol->cmap_pending + p * bytes;

	for (size_t i = 0; i < bytes; i++)
		if (pend[i])
			return true;
	return false;
}

/* One slot of map page p, pending bits and all (the slot not written
 * last), into the round fs: held in *r until that round is durable,
 * then cmap_rode(). Caller holds cmap_init_lock until then. */
static int cmap_ride_page(struct dg_vol *vol, uint64_t p,
			  struct dg_flushset *fs, struct dg_cmap_rider *r)
{
	r->p = p;
	r->m = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	r->took = malloc(DG_CMAP_BITS / 8);
	if (!r->m || !r->took) {
		free(r->m);
		free(r->took);
		r->m = NULL;
		r->took = NULL;
		return -ENOMEM; /* nothing stored */
	}
	cmap_image(vol, p, r->m, r->took);
	return cmap_store_slot(vol, p, vol->cmap_next_slot[p], NULL, r->m,
			       NULL, fs);
}

/* The round r rode in is over (ok: durable): its bits are written, and
 * the page's next write goes to its other slot. */
static void cmap_rode(struct dg_vol *vol, struct dg_cmap_rider *r, bool ok)
{
	if (ok) {
		cmap_written(vol, r->p, r->took);
		vol->cmap_next_slot[r->p] ^= 1;
	}
	free(r->m);
	free(r->took);
	r->m = NULL;
	r->took = NULL;
}

/* Write map page p in a round of its own if a bit of it is pending,
 * after taking the map's lock (only if free, where try: -EBUSY). */
static int cmap_flush_page_if(struct dg_vol *vol, uint64_t p, bool try)
{
	struct dg_cmap_rider r = { 0 };
	struct dg_flushset fs;
	bool pending;
	int ret, pr;

	if (!try)
		pthread_mutex_lock(&vol->cmap_init_lock);
	else if (pthread_mutex_trylock(&vol->cmap_init_lock))
		return -EBUSY;
	pthread_mutex_lock(&vol->cmap_lock);
	pending = vol->cmap_pending && page_pending(vol, p);
	pthread_mutex_unlock(&vol->cmap_lock);
	if (!pending) {
		pthread_mutex_unlock(&vol->cmap_init_lock);
		return 0;
	}
	dg_flushset_init(&fs);
	ret = cmap_ride_page(vol, p, &fs, &r);
	pr = dg_flushset_persist(vol->devs, vol->ndev, &fs);
	dg_flushset_fini(&fs);
	ret = ret ? ret : pr;
	cmap_rode(vol, &r, !ret);
	pthread_mutex_unlock(&vol->cmap_init_lock);
	return ret;
}

static int cmap_flush_page(struct dg_vol *vol, uint64_t p)
{
	return cmap_flush_page_if(vol, p, false);
}

int dg_cmap_flush(struct dg_vol *vol)
{
	int ret = 0;

	if (!vol->cmap || !vol->cmap_npending)
		return 0;
	for (uint64_t p = 0; p < vol->sb.cmap_pages && !ret; p++)
		ret = cmap_flush_page(vol, p);
	return ret;
}

bool dg_cmap_flush_try(struct dg_vol *vol, int *ret)
{
	*ret = 0;
	if (!vol->cmap || !vol->cmap_npending)
		return true;
	for (uint64_t p = 0; p < vol->sb.cmap_pages && !*ret; p++)
		*ret = cmap_flush_page_if(vol, p, true);
	if (*ret != -EBUSY)
		return true;
	*ret = 0;
	return false;
}

/* Whether index is pending (cmap_set_new()). */
static bool cmap_is_pending(struct dg_vol *vol, uint64_t index)
{
	bool set;

	if (!vol->cmap_npending)
		return false;
	pthread_mutex_lock(&vol->cmap_lock);
	set = vol->cmap_pending[index / 8] & (1u << (index % 8));
	pthread_mutex_unlock(&vol->cmap_lock);
	return set;
}

/* Set index in core, pending: its map page is written in the next
 * round that can take it (dg_cmap_ride()), else before anything
 * touches the index's pages again, or the journal's tail moves. */
static void cmap_set_new(struct dg_vol *vol, uint64_t index)
{
	pthread_mutex_lock(&vol->cmap_lock);
	vol->cmap[index / 8] |= 1u << (index % 8);
	if (!(vol->cmap_pending[index / 8] & (1u << (index % 8)))) {
		vol->cmap_pending[index / 8] |= 1u << (index % 8);
		vol->cmap_npending++;
	}
	pthread_mutex_unlock(&vol->cmap_lock);
}

int dg_cmap_ride(struct dg_vol *vol, struct dg_flushset *fs,
		 struct dg_cmap_rider *r, unsigned max, unsigned *nr)
{
	int ret = 0;

	*nr = 0;
	if (!vol->cmap_npending || pthread_mutex_trylock(&vol->cmap_init_lock))
		return 0;
	for (uint64_t p = 0; p < vol->sb.cmap_pages && *nr < max && !ret;
	     p++) {
		bool pending;

		pthread_mutex_lock(&vol->cmap_lock);
		pending = page_pending(vol, p);
		pthread_mutex_unlock(&vol->cmap_lock);
		if (!pending)
			continue;
		ret = cmap_ride_page(vol, p, fs, &r[*nr]);
		if (ret == -ENOMEM) {
			/* Not this page: a later round takes it. */
			ret = 0;
			break;
		}
		(*nr)++;
	}
	if (!*nr)
		pthread_mutex_unlock(&vol->cmap_init_lock);
	return ret;
}

void dg_cmap_ride_end(struct dg_vol *vol, struct dg_cmap_rider *r,
		      unsigned nr, bool ok)
{
	for (unsigned i = 0; i < nr; i++)
		cmap_rode(vol, &r[i], ok);
	if (nr)
		pthread_mutex_unlock(&vol->cmap_init_lock);
}

static int cmap_alloc(struct dg_vol *vol)
{
	vol->cmap = calloc(vol->sb.cmap_pages, DG_CMAP_BITS / 8);
	vol->cmap_pending = calloc(vol->sb.cmap_pages, DG_CMAP_BITS / 8);
	vol->cmap_next_slot = calloc(vol->sb.cmap_pages, 1);
	vol->cmap_npending = 0;
	return vol->cmap && vol->cmap_pending && vol->cmap_next_slot ? 0
								     : -ENOMEM;
}

int dg_cmap_format(struct dg_vol *vol)
{
	int ret = 0;

	if (cmap_alloc(vol))
		return -ENOMEM;
	for (uint64_t p = 0; p < vol->sb.cmap_pages && !ret; p++)
		ret = cmap_write(vol, p, true, NULL, NULL);
	return ret;
}

int dg_cmap_load(struct dg_vol *vol)
{
	const size_t bytes = DG_CMAP_BITS / 8;
	struct dg_dcmap *m = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	int ret = 0;

	if (!m || cmap_alloc(vol)) {
		free(m);
		return -ENOMEM;
	}
	for (uint64_t p = 0; p < vol->sb.cmap_pages; p++) {
		uint8_t *u = vol->cmap + p * bytes;
		uint8_t differs[DG_MAX_DEVS] = { 0 };
		uint8_t seen[DG_MAX_DEVS] = { 0 }, whole[DG_MAX_DEVS] = { 0 };
		uint8_t first[DG_MAX_DEVS] = { 0 }, quiet[DG_MAX_DEVS] = { 0 };
		bool any = false, fix = false;

		/* Bits are only ever set: the union of the verified copies
		 * is the map, and a copy short of it is stale. */
		for (unsigned d = 0; d < vol->ndev; d++) {
			if (!vol->devs[d].present)
				continue;
			for (unsigned slot = 0; slot < 2; slot++) {
				memcpy(m, dg_dev_ptr(&vol->devs[d],
						     cmap_off(vol, p, slot)),
				       DG_PAGE_SIZE);
				if (dg_cmap_page_check(vol, p, m) != 1) {
					differs[d] = 1;
					continue;
				}
				seen[d] |= 1u << slot;
				any = true;
				for (size_t i = 0; i < bytes; i++)
					u[i] |= m->bits[i];
			}
		}
		if (!any) {
			/* Nothing says which indexes were never written:
			 * take them all as written, so a lost checksum page
			 * reads as EIO rather than as zeros. */
			memset(u, 0xff, bytes);
			dg_vol_log(vol, DG_LOG_ERR,
				   "no copy of checksum init map page "
				   "%" PRIu64 " verifies: its checksum pages "
				   "must verify to be read", p);
			dg_fault_note(vol, DG_FAULT_DETECTED, 0,
				      vol->sb.cmap_start + p, DG_WHAT_CMAP,
				      "no copy verifies");
			continue;
		}
		for (unsigned d = 0; d < vol->ndev; d++)
			for (unsigned slot = 0; slot < 2; slot++) {
				if (!(seen[d] & (1u << slot)))
					continue;
				memcpy(m, dg_dev_ptr(&vol->devs[d],
						     cmap_off(vol, p, slot)),
				       DG_PAGE_SIZE);
				if (memcmp(m->bits, u, bytes))
					differs[d] = 1;
				else
					whole[d] |= 1u << slot;
			}
		for (unsigned d = 0; d < vol->ndev; d++) {
			if (!differs[d] || !vol->devs[d].present)
				continue;
			/* Rewritten slot by slot, the one short of the union
			 * (or failing its seal) first: the other keeps what
			 * it holds until that one is whole. */
			first[d] = (whole[d] & 1u) || ((seen[d] & 1u) &&
						       !(seen[d] & 2u));
			/* Both slots whole, one of them the union: the
			 * other one write behind, as a one-slot write
			 * (cmap_ride_page()) leaves it. Or, after a crash,
			 * one slot failing its seal beside one that
			 * verifies: a write of one slot torn (every write
			 * is a round a slot, above). Made equal again, no
			 * fault -- the price, as for checksum pages
			 * (crash_debris()): a real fault of such a slot at
			 * that moment is repaired unreported. */
			if ((seen[d] == 3u && whole[d]) ||
			    (vol->found_dirty &&
			     (seen[d] == 1u || seen[d] == 2u))) {
				quiet[d] = 1;
				fix = true;
				continue;
			}
			dg_fault_note(vol, DG_FAULT_DETECTED, d,
				      vol->sb.cmap_start + p, DG_WHAT_CMAP,
				      !seen[d] ? "both slots fail their seal"
				      : seen[d] != 3u ? "a slot fails its seal"
						      : "copy is stale");
			fix = true;
			/* Read-only (fsck -n): the union of the copies
			 * that verify is in use, so the copy's bytes are
			 * known; a writable open rewrites it below. */
			if (vol->read_only)
				dg_fault_note(vol, DG_FAULT_RECOVERED, d,
					      vol->sb.cmap_start + p,
					      DG_WHAT_CMAP, "the union of the "
					      "copies that verify is used");
		}
		if (fix && !vol->read_only) {
			ret = cmap_write(vol, p, false, differs, first);
			if (ret)
				break; /* latched (media.h): the open fails */
			for (unsigned d = 0; d < vol->ndev; d++)
				if (differs[d] && !quiet[d] &&
				    vol->devs[d].present)
					dg_fault_note(vol, DG_FAULT_REPAIRED, d,
						      vol->sb.cmap_start + p,
						      DG_WHAT_CMAP, "rewritten from "
							      "the union");
		}
	}
	free(m);
	return ret;
}

int dg_cmap_store(struct dg_vol *vol, uint32_t devs)
{
	uint8_t differs[DG_MAX_DEVS];
	int ret = 0;

	for (unsigned d = 0; d < DG_MAX_DEVS; d++)
		differs[d] = (devs >> d) & 1;
	/* One writer of the map at a time (above): a replace attaching
	 * its device holds every row lock, so no rider holds this lock
	 * waiting for one, and the others hold it a round at most. */
	pthread_mutex_lock(&vol->cmap_init_lock);
	for (uint64_t p = 0; p < vol->sb.cmap_pages && !ret; p++)
		ret = cmap_write(vol, p, false, differs, NULL);
	pthread_mutex_unlock(&vol->cmap_init_lock);
	return ret;
}

void dg_cmap_free(struct dg_vol *vol)
{
	free(vol->cmap);
	vol->cmap = NULL;
	free(vol->cmap_pending);
	vol->cmap_pending = NULL;
	free(vol->cmap_next_slot);
	vol->cmap_next_slot = NULL;
	vol->cmap_npending = 0;
}

bool dg_cmap_test(struct dg_vol *vol, uint64_t index)
{
	bool set;

	if (!vol->cmap)
		return true; /* no map: assume written (EIO over zeros) */
	pthread_mutex_lock(&vol->cmap_lock);
	set = vol->cmap[index / 8] & (1u << (index % 8));
	pthread_mutex_unlock(&vol->cmap_lock);
	return set;
}

uint64_t dg_cmap_next_set(struct dg_vol *vol, uint64_t index, uint64_t end)
{
	if (!vol->cmap)
		return index < end ? index : end; /* no map: all written */
	pthread_mutex_lock(&vol->cmap_lock);
	/* Bit by bit to a byte boundary, then whole zero bytes at a time:
	 * an empty map of a terabyte device is a few hundred KiB. */
	while (index < end) {
		uint8_t b = vol->cmap[index / 8];

		if (b & (1u << (index % 8)))
			break;
		if (!b) {
			index = (index / 8 + 1) * 8;
			continue;
		}
		index++;
	}
	pthread_mutex_unlock(&vol->cmap_lock);
	return index < end ? index : end;
}

uint64_t dg_cmap_next_row(struct dg_vol *vol, uint64_t row, uint64_t end)
{
	uint64_t index, next;

	if (row >= end)
		return end;
	index = row / DG_CSUMS_PER_PAGE;
	next = dg_cmap_next_set(vol, index,
				(end - 1) / DG_CSUMS_PER_PAGE + 1);
	if (next == index)
		return row;
	next *= DG_CSUMS_PER_PAGE;
	return next < end ? next : end;
}

/*
 * Index is clear in the map, but was it only lost from it? Every copy of
 * the map page gone back on every device (beyond parity: the map is on
 * all of them), or a crash between an initialisation's checksum pages
 * and its bit. Skipping the index's rows would then leave pages in use
 * never verified, rebuilt or read at the open (docs/integrity.md,
 * "Faults in the allocation state"). The evidence: a copy of the
 * owner's checksum page of index that verifies (its seal names this
 * volume, owner and index). Then the bit is set again, in core, and on
 * every device when writable; true. Pages after a cut-short
 * initialisation hold what its round set, nothing else (a pending
 * index's pages are touched by no other round: the map, above), so
 * setting it then changes nothing read. But an index whose rows the log
 * names is left to the replay (false, no fault): its bit was pending at
 * a crash, which an open that does not replay meets (`fsck -n`, a
 * rebuild's open); one that replays has written it before its tail
 * moved.
 */
bool dg_cmap_recover(struct dg_vol *vol, unsigned owner, uint64_t index)
{
	uint8_t *img;
	bool found;

	if (!vol->cmap || index >= vol->sb.csum_pages ||
	    dg_cmap_test(vol, index))
		return false;
	/* The log names rows of it: a bit still pending at a crash, over
	 * pages whole or torn by the round that set the index up, which
	 * the replay sets up again. Left clear until then: taken as set,
	 * an owner's page that round tore would read EIO, and written so
	 * (a rebuild's open), the replay could no longer set it up. */
	if (crash_debris(vol, index))
		return false;
	img = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!img)
		return false;
	pthread_mutex_lock(&vol->cmap_init_lock);
	{
		pthread_mutex_t *lock = cpage_lock(vol, owner, index);
		struct dg_cpage_view v;

		pthread_mutex_lock(lock);
		found = dg_cpage_examine(vol, owner, index, img, &v,
					 DG_CPX_QUIET) == 1;
		pthread_mutex_unlock(lock);
	}
	free(img);
	if (found) {
		uint64_t p = index / DG_CMAP_BITS;

		pthread_mutex_lock(&vol->cmap_lock);
		vol->cmap[index / 8] |= 1u << (index % 8);
		pthread_mutex_unlock(&vol->cmap_lock);
		dg_vol_log(vol, DG_LOG_ERR, "checksum init map: index %" PRIu64
			   " is clear on every copy, but its checksum pages "
			   "were written: taken as set", index);
		dg_fault_note(vol, DG_FAULT_DETECTED, owner,
			      vol->sb.cmap_start + p, DG_WHAT_CMAP,
			      "an index in use is clear");
		if (!vol->read_only && !cmap_write(vol, p, true, NULL, NULL))
			dg_fault_note(vol, DG_FAULT_REPAIRED, owner,
				      vol->sb.cmap_start + p, DG_WHAT_CMAP,
				      "bit set again");
	}
	pthread_mutex_unlock(&vol->cmap_init_lock);
	return found;
}

/*
 * Set the slots u[0..n) of p, the image of (owner, index), give it a new
 * generation and seal it. A line seal (format.h) takes the old terms of
 * the lines that change away and adds their new ones, two lines' hashes
 * for a one-slot update instead of the page's: p's seal is that of its
 * bytes (the cache's image, or a copy that verified). An image that
 * carries no seal, an empty one to be written whole, is sealed whole.
 */
static void set_slots(struct dg_vol *vol, unsigned owner,
		      uint64_t index, struct dg_dcpage *p,
		      const struct dg_csum_upd *u, unsigned n)
{
	const bool lines = dg_vol_has_incompat(vol, DG_FEAT_INCOMPAT_LINE_SEAL) &&
			   p->seal != 0;
	uint64_t seed = cpage_seed(vol, owner, index), seal = p->seal;
	uint64_t mask = 1ull << (offsetof(struct dg_dcpage, gen) / DG_LINE_SIZE);

	for (unsigned i = 0; i < n; i++)
		mask |= 1ull << (u[i].row % DG_CSUMS_PER_PAGE * 8 /
				 DG_LINE_SIZE);
	if (lines)
		seal -= seal_lines(seed, p, mask);
	for (unsigned i = 0; i < n; i++)
		p->csum[u[i].row % DG_CSUMS_PER_PAGE] = u[i].csum;
	p->gen = dg_gen_next(vol);
	if (lines)
		p->seal = seal + seal_lines(seed, p, mask);
	else
		dg_csum_page_seal(vol, owner, index, p);
}

/*
 * The image of (owner, index), an index the map says was never written,
 * into img: 1 a copy verifies (kept, the others made equal to it: an
 * initialisation a crash cut short), 0 none does (img empty: the page is
 * to be written whole), or a failure -- never EIO, the map saying
 * "never written". Caller holds the page's lock.
 */
static int fresh_load(struct dg_vol *vol, unsigned owner, uint64_t index,
		      void *img)
{
	struct dg_cpage_view v;

	return dg_cpage_examine(vol, owner, index, img, &v, DG_CPX_REPAIR);
}

/*
 * Write the checksum pages of index on every device (empty, or the
 * newest copy where one verifies), then set the index in the map. Only
 * then may an entry of those pages be set: a set bit always means the
 * pages were written. Idempotent, so a crash anywhere just repeats it.
 * For a batch whose checksums no entry names (set_batch()), which are in
 * use at once; a journaled one writes the pages in its own round and
 * the bit in the next (fresh_add()).
 */
static int cmap_init_index(struct dg_vol *vol, uint64_t index)
{
	uint8_t *img = aligned_alloc(DG_PAGE_SIZE,
				     (size_t)vol->ndev * DG_PAGE_SIZE);
	unsigned locks[DG_MAX_DEVS], nl = 0, nw = 0;
	struct cpw w[DG_MAX_DEVS] = { 0 };
	struct dg_flushset fs;
	int ret = 0;

	if (!img)
		return -ENOMEM;
	pthread_mutex_lock(&vol->cmap_init_lock);
	if (dg_cmap_test(vol, index))
		goto out;
	/* The pages of every owner together, in one round
	 * (write_fresh_copies()), under their locks in ascending order. */
	for (unsigned owner = 0; owner < vol->ndev; owner++)
		locks[owner] = dg_cpage_lock_idx(dg_cpage_key(owner, index));
	sort_lock_idx(locks, vol->ndev);
	for (unsigned i = 0; i < vol->ndev; i++)
		if (i == 0 || locks[i] != locks[i - 1])
			locks[nl++] = locks[i];
	for (unsigned i = 0; i < nl; i++)
		pthread_mutex_lock(&vol->csum_locks[locks[i]]);
	for (unsigned owner = 0; owner < vol->ndev && !ret; owner++) {
		uint8_t *pg = img + (size_t)owner * DG_PAGE_SIZE;

		ret = fresh_load(vol, owner, index, pg);
		if (ret == 0) {
			struct dg_dcpage *p = (void *)pg;

			p->gen = dg_gen_next(vol);
			dg_csum_page_seal(vol, owner, index, pg);
			w[nw++] = (struct cpw){ .owner = owner,
						.index = index, .img = pg };
		}
		ret = ret < 0 ? ret : 0;
	}
	dg_flushset_init(&fs);
	if (!ret)
		ret = write_fresh_copies(vol, w, nw, &fs);
	dg_flushset_fini(&fs);
	/* Cached as equal to every copy, which they now are, durably: the
	 * update that set off this initialisation then stores only the
	 * entries it sets and the seal of each copy (prepare_page()), not
	 * the page whole a second time. (Pages of two owners may share a
	 * slot; one put over another only costs that page a reread.) */
	for (unsigned i = 0; i < nw && !ret; i++)
		dg_cpcache_put(vol, w[i].owner, w[i].index, w[i].img, true);
	for (unsigned i = 0; i < nl; i++)
		pthread_mutex_unlock(&vol->csum_locks[locks[i]]);
	if (!ret) {
		pthread_mutex_lock(&vol->cmap_lock);
		vol->cmap[index / 8] |= 1u << (index % 8);
		pthread_mutex_unlock(&vol->cmap_lock);
		/* Set in core only once the pages are written; should the
		 * map's write fail, nothing sets an entry of them (the
		 * volume is latched), and the next open finds the bit
		 * clear and writes them again. */
		ret = cmap_write(vol, index / DG_CMAP_BITS, true, NULL, NULL);
	}
out:
	pthread_mutex_unlock(&vol->cmap_init_lock);
	free(img);
	return ret;
}

/* ---- lookups ------------------------------------------------------------ */

void dg_csum_cursor_init(struct dg_csum_cursor *cur)
{
	cur->owner = -1;
	cur->peek_owner = -1;
	cur->uncached = false;
	cur->entries = NULL;	/* allocated by the first page copied */
}

void dg_csum_cursor_fini(struct dg_csum_cursor *cur)
{
	free(cur->entries);
	cur->entries = NULL;
}

/*
 * The current image of checksum page (owner, index) into img: 1 found,
 * 0 never written (img zero), -EIO. Caller holds the page's lock. A
 * writable volume rewrites stale and damaged copies on the way, and
 * caches the page as equal to all its copies.
 */
static int load_page(struct dg_vol *vol, unsigned owner, uint64_t index,
		     void *img, bool cache)
{
	struct dg_cpage_view v;
	int ret = dg_cpage_examine(vol, owner, index, img, &v,
				   vol->read_only ? 0 : DG_CPX_REPAIR);

	if (ret == 1 && cache)
		dg_cpcache_put(vol, owner, index, img,
			       !vol->read_only || v.bad == 0);
	return ret;
}

int dg_csum_lookup(struct dg_vol *vol, struct dg_csum_cursor *cur,
		   unsigned dev, uint64_t row, uint64_t *csum)
{
	uint64_t index = row / DG_CSUMS_PER_PAGE;

	if (cur->owner != (int)dev || cur->index != index) {
		pthread_mutex_t *lock = cpage_lock(vol, dev, index);
		const uint8_t *cached;
		bool all;
		int ret;

		pthread_mutex_lock(lock);
		cached = cur->uncached ? NULL
				       : dg_cpcache_get(vol, dev, index, &all);
		if (cached && (cur->peek_owner != (int)dev ||
			       cur->peek_index != index)) {
			*csum = ((const uint64_t *)cached)[row %
							   DG_CSUMS_PER_PAGE];
			cur->peek_owner = (int)dev;
			cur->peek_index = index;
			pthread_mutex_unlock(lock);
			return 0;
		}
		if (!cur->entries &&
		    !(cur->entries = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE))) {
			pthread_mutex_unlock(lock);
			return -ENOMEM;
		}
		if (cached) {
			memcpy(cur->entries, cached, DG_PAGE_SIZE);
			ret = 1;
		} else {
			ret = load_page(vol, dev, index, cur->entries,
					!cur->uncached);
		}
		pthread_mutex_unlock(lock);
		if (ret < 0) {
			cur->owner = -1;
			return ret;
		}
		cur->owner = (int)dev;
		cur->index = index;
	}
	*csum = cur->entries[row % DG_CSUMS_PER_PAGE];
	return 0;
}

bool dg_csum_cursor_current(struct dg_vol *vol, struct dg_csum_cursor *cur)
{
	const struct dg_dcpage *img = (const void *)cur->entries;
	unsigned owner = (unsigned)cur->owner;
	pthread_mutex_t *lock;
	bool same = true;

	if (cur->owner < 0 || !cur->entries)
		return false;
	lock = cpage_lock(vol, owner, cur->index);
	pthread_mutex_lock(lock);
	/* A copy on a device being rebuilt may lag by design; an index
	 * never written may be initialised at any time: look again. */
	same = !vol->cpx_rebuilding && dg_cmap_test(vol, cur->index);
	for (unsigned c = 0; c < vol->sb.csum_copies && same; c++) {
		uint64_t off;
		struct dg_dev *d = copy_dev(vol, owner, cur->index, c, &off);

		if (d)
			same = ((const struct dg_dcpage *)dg_dev_ptr(d, off))
				       ->gen == img->gen;
	}
	pthread_mutex_unlock(lock);
	return same;
}

int dg_csum_get(struct dg_vol *vol, unsigned dev, uint64_t row,
		uint64_t *csum)
{
	struct dg_csum_cursor cur;
	int ret;

	dg_csum_cursor_init(&cur);
	ret = dg_csum_lookup(vol, &cur, dev, row, csum);
	dg_csum_cursor_fini(&cur);
	return ret;
}

/* ---- updates ------------------------------------------------------------ */

/*
 * The new image of the checksum page the updates u[0..n) share: the
 * current image (cached, or examined and its copies made equal) with
 * the new entries and a new generation, into w. img is a page of the
 * caller's for a page not cached; *put says it is to be cached once
 * written. fresh: of an index the map says was never written, which
 * this batch initialises (fresh_add()): the page is written whole.
 * Caller holds the page's lock.
 */
static int prepare_page(struct dg_vol *vol, const struct dg_csum_upd *u,
			unsigned n, uint8_t *img, struct cpw *w, bool *put,
			bool fresh)
{
	unsigned owner = u[0].dev;
	uint64_t index = u[0].row / DG_CSUMS_PER_PAGE;
	struct dg_dcpage *p;
	uint8_t *cached;
	bool all = false;
	int ret;

	*put = false;
	cached = fresh ? NULL : dg_cpcache_get(vol, owner, index, &all);
	if (cached && all) {
		p = (struct dg_dcpage *)cached;
	} else if (fresh) {
		ret = fresh_load(vol, owner, index, img);
		if (ret < 0)
			return ret;
		p = (struct dg_dcpage *)img;
		*put = true;
	} else {
		struct dg_cpage_view v;

		/* Every stale or damaged copy is rewritten first, so the
		 * partial writes below leave each copy whole. */
		ret = dg_cpage_examine(vol, owner, index, img, &v, DG_CPX_REPAIR);
		if (ret <= 0) {
			/* 0: the map says written, no copy verifies --
			 * cannot happen after cmap_init_index() unless the
			 * pages were lost since; either way nothing proves
			 * the other entries, so refuse (G6). */
			return ret ? ret : -EIO;
		}
		p = (struct dg_dcpage *)img;
		*put = true;
	}
	set_slots(vol, owner, index, p, u, n);
	/* A page read into img is written whole: only one from the
	 * cache is known to be whole on every copy but for u's slots. */
	if (*put)
		*w = (struct cpw){ .owner = owner, .index = index, .img = p };
	else
		*w = (struct cpw){ .owner = owner, .index = index, .img = p,
				   .u = u, .nu = n };
	return 0;
}

#define SMALL_BATCH 4	/* checksums: dg_csum_set_batch() */

/*
 * Whether a journaled batch may write every copy in one round
 * (DG_FEAT_INCOMPAT_COPIES_TOGETHER): a crash plus one fault then leaves
 * two copies whose slots outside the live entries agree, which
 * cpage_salvage() needs -- so each copy on a device of its own that
 * counts after a crash, or missing (the one fault): none filled by a
 * replace nor rebuilt, whose copies do not vote (copy_counts()). A
 * replace is set and cleared under every row lock, which the batch's
 * caller holds some of.
 */
static bool copies_together_ok(struct dg_vol *vol)
{
	if (!vol->copies_together || vol->repl || vol->cpx_rebuilding)
		return false;
	for (unsigned d = 0; d < vol->ndev; d++)
		if (vol->devs[d].present && vol->devs[d].filling)
			return false;
	return true;
}

static int set_batch(struct dg_vol *vol, const struct dg_csum_upd *u,
		     unsigned n, struct dg_flushset *fs,
		     const struct dg_csum_then *then, bool together,
		     bool journaled);

int dg_csum_set_batch(struct dg_vol *vol, const struct dg_csum_upd *u,
		      unsigned n, struct dg_flushset *fs)
{
	return set_batch(vol, u, n, fs, NULL, false, false);
}

int dg_csum_set_journaled(struct dg_vol *vol, const struct dg_csum_upd *u,
			  unsigned n, struct dg_flushset *fs,
			  const struct dg_csum_then *then)
{
	return set_batch(vol, u, n, fs, then, copies_together_ok(vol), true);
}

/*
 * The distinct indexes of the np pages (first[]) of u that the map says
 * were never written, into fresh: their count.
 */
static unsigned new_indexes(struct dg_vol *vol, const struct dg_csum_upd *u,
			    const unsigned *first, unsigned np,
			    uint64_t *fresh)
{
	unsigned nf = 0;

	for (unsigned i = 0; i < np; i++) {
		uint64_t index = u[first[i]].row / DG_CSUMS_PER_PAGE;
		unsigned k = 0;

		if (dg_cmap_test(vol, index))
			continue;
		while (k < nf && fresh[k] != index)
			k++;
		if (k == nf)
			fresh[nf++] = index;
	}
	return nf;
}

/*
 * A journaled batch that sets the first checksums of a new index
 * initialises it itself (docs/design.md, "A new index in the update's
 * rounds"): the index's pages of every owner are written whole in the
 * batch's own round(s) -- those of the batch with its checksums set,
 * the other owners' (from img_extra on, into w[*nw...]) empty, or as a
 * copy that verifies left them -- and the bit is set in core once that
 * round is durable, pending (the map, above): the next round takes it
 * along, not two rounds of its own first. A crash before then leaves
 * the bit clear on the media over pages only this round wrote: whole
 * (they verify, and hold what it set) or torn ("never written"), when
 * the crash came in this round, which its entry (a reservation, or the
 * update whose bytes it holds) was durable before and is replayed, so
 * every checksum the round set is set again. For each index of
 * fresh[0..nf) still clear (the caller holds the locks of its every
 * owner's page): marks the batch's pages of it in isfresh, and adds the
 * others. 0 or a failure.
 */
static int fresh_add(struct dg_vol *vol, const struct dg_csum_upd *u,
		     const unsigned *first, unsigned np, uint64_t *fresh,
		     unsigned *nf, bool *isfresh, struct cpw *w, bool *put,
		     uint8_t *img_extra, unsigned *nw)
{
	unsigned kept = 0;

	for (unsigned k = 0; k < *nf; k++) {
		uint64_t index = fresh[k];

		/* Another batch initialised it while this one waited. */
		if (dg_cmap_test(vol, index))
			continue;
		fresh[kept++] = index;
		for (unsigned owner = 0; owner < vol->ndev; owner++) {
			unsigned i = 0;
			uint8_t *pg;
			int ret;

			while (i < np && (u[first[i]].dev != owner ||
					  u[first[i]].row / DG_CSUMS_PER_PAGE !=
						  index))
				i++;
			if (i < np) {
				isfresh[i] = true;
				continue;
			}
			pg = img_extra + (size_t)(*nw - np) * DG_PAGE_SIZE;
			ret = fresh_load(vol, owner, index, pg);
			if (ret < 0)
				return ret;
			if (ret == 1)
				continue; /* whole on every copy already */
			((struct dg_dcpage *)pg)->gen = dg_gen_next(vol);
			dg_csum_page_seal(vol, owner, index, pg);
			w[*nw] = (struct cpw){ .owner = owner, .index = index,
					       .img = pg };
			put[(*nw)++] = true;
		}
	}
	*nf = kept;
	return 0;
}

/*
 * Set the checksums u[0..n) (sorted by (dev, row)), every page's copies
 * durable on return, the first of each in the round of the caller's
 * stores fs (all of them there where together). journaled: every
 * checksum of u is of a row that an entry in the log names until this
 * returns, which a new index's initialisation relies on (fresh_add()).
 */
static int set_batch(struct dg_vol *vol, const struct dg_csum_upd *u,
		     unsigned n, struct dg_flushset *fs,
		     const struct dg_csum_then *then, bool together,
		     bool journaled)
{
	unsigned np = 0, nl = 0, nf = 0, nw, cap, nr = 0, *locks = NULL,
		 *first = NULL;
	struct dg_cmap_rider riders[DG_CMAP_RIDERS];
	struct cpw *w = NULL;
	bool *put = NULL, *isfresh = NULL;
	uint8_t *img = NULL;
	uint64_t *fresh = NULL;
	/* A small batch (a 4 KiB write: its page and its parity's) keeps
	 * its arrays on the stack: five allocations, one of them
	 * page-aligned, cost more than the rest of a cached page's
	 * update. img is only written when a page is not cached. */
	struct {
		unsigned first[SMALL_BATCH + 1], locks[SMALL_BATCH];
		uint64_t fresh[SMALL_BATCH];
		struct cpw w[SMALL_BATCH];
		bool put[SMALL_BATCH], isfresh[SMALL_BATCH];
		uint8_t img[SMALL_BATCH][DG_PAGE_SIZE]
			__attribute__((aligned(DG_PAGE_SIZE)));
	} sm;
	bool small = n <= SMALL_BATCH, small_pages = false;
	int ret = 0;

	if (!n)
		return 0;
	/* The pages, each a run of u: u is sorted by (dev, row). */
	first = small ? sm.first : malloc((n + 1) * sizeof(*first));
	fresh = small ? sm.fresh : malloc(n * sizeof(*fresh));
	if (!first || !fresh) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < n; i++)
		if (i == 0 || u[i].dev != u[i - 1].dev ||
		    u[i].row / DG_CSUMS_PER_PAGE !=
			    u[i - 1].row / DG_CSUMS_PER_PAGE)
			first[np++] = i;
	first[np] = n;
	/* Checksums no entry names are in use from this round on: each new
	 * index set up first, one at a time, its bit durable before any of
	 * them is set. */
	for (unsigned i = 0; i < np && !journaled && !ret; i++) {
		uint64_t index = u[first[i]].row / DG_CSUMS_PER_PAGE;

		if (!dg_cmap_test(vol, index))
			ret = cmap_init_index(vol, index);
	}
	/* A pending index's pages are touched by no round before its bit
	 * is durable (the map, above). */
	for (unsigned i = 0; i < np && !ret; i++) {
		uint64_t index = u[first[i]].row / DG_CSUMS_PER_PAGE;

		if (cmap_is_pending(vol, index))
			ret = cmap_flush_page(vol, index / DG_CMAP_BITS);
	}
	if (ret)
		goto out;
	if (journaled)
		nf = new_indexes(vol, u, first, np, fresh);
	/* np <= n: no more pages than checksums; a new index adds the
	 * pages of its other owners. */
	cap = np + nf * vol->ndev;
	small_pages = small && !nf;
	if (small_pages) {
		w = memset(sm.w, 0, np * sizeof(*w));
		put = memset(sm.put, 0, np * sizeof(*put));
		isfresh = memset(sm.isfresh, 0, np * sizeof(*isfresh));
		locks = sm.locks;
		img = &sm.img[0][0];
	} else {
		w = calloc(cap, sizeof(*w));
		put = calloc(cap, sizeof(*put));
		isfresh = calloc(np, sizeof(*isfresh));
		locks = malloc(cap * sizeof(*locks));
		img = aligned_alloc(DG_PAGE_SIZE, (size_t)cap * DG_PAGE_SIZE);
	}
	if (!w || !put || !isfresh || !locks || !img) {
		ret = -ENOMEM;
		goto out;
	}
	/* Every page's lock, held until its copies are all durable: in
	 * ascending order, so two batches never wait on each other in a
	 * cycle (cmap_init_index() takes its in the same order; everyone
	 * else holds one at a time). A new index's: every owner's. */
lock:
	for (unsigned i = 0; i < np; i++)
		locks[nl++] = dg_cpage_lock_idx(dg_cpage_key(
			u[first[i]].dev, u[first[i]].row / DG_CSUMS_PER_PAGE));
	for (unsigned k = 0; k < nf; k++)
		for (unsigned owner = 0; owner < vol->ndev; owner++)
			locks[nl++] = dg_cpage_lock_idx(
				dg_cpage_key(owner, fresh[k]));
	sort_lock_idx(locks, nl);
	{
		unsigned m = 0;

		for (unsigned i = 0; i < nl; i++)
			if (i == 0 || locks[i] != locks[i - 1])
				locks[m++] = locks[i];
		nl = m;
	}
	for (unsigned i = 0; i < nl; i++)
		pthread_mutex_lock(&vol->csum_locks[locks[i]]);
	nw = np;
	if (nf)
		ret = fresh_add(vol, u, first, np, fresh, &nf, isfresh, w, put,
				img + (size_t)np * DG_PAGE_SIZE, &nw);
	/* An index set up by another batch since the look above (while
	 * this one waited for its locks) is pending still, maybe: its bit
	 * written first, and everything looked at again. Rare: both
	 * batches wanted the same new index at once. */
	for (unsigned i = 0; i < np && !ret; i++) {
		uint64_t index = u[first[i]].row / DG_CSUMS_PER_PAGE;

		if (!cmap_is_pending(vol, index))
			continue;
		for (unsigned l = 0; l < nl; l++)
			pthread_mutex_unlock(&vol->csum_locks[locks[l]]);
		ret = cmap_flush_page(vol, index / DG_CMAP_BITS);
		if (ret)
			goto out;
		nl = nf = 0;
		memset(put, 0, cap * sizeof(*put));
		memset(isfresh, 0, np * sizeof(*isfresh));
		nf = journaled ? new_indexes(vol, u, first, np, fresh) : 0;
		goto lock;
	}
	for (unsigned i = 0; i < np && !ret; i++)
		ret = prepare_page(vol, u + first[i], first[i + 1] - first[i],
				   img + (size_t)i * DG_PAGE_SIZE, &w[i],
				   &put[i], isfresh[i]);
	/* Pending bits of other batches' new indexes ride this round. */
	if (!ret && journaled)
		ret = dg_cmap_ride(vol, fs, riders, DG_CMAP_RIDERS, &nr);
	if (!ret)
		ret = write_pages_copies(vol, w, nw, fs, then, together);
	dg_cmap_ride_end(vol, riders, nr, !ret);
	/* On failure the volume is latched (media.h) and takes no more
	 * updates; a page cached is what was meant to be written, which
	 * the journal redoes at the next open. Cached only now: a put
	 * may take the slot of a page cached above. (Pages of two owners
	 * may share a slot; one put over another only costs that page a
	 * reread.) A new index's bit is set under its pages' locks: a
	 * batch that waited for them finds it set. */
	for (unsigned k = 0; k < nf && !ret; k++)
		cmap_set_new(vol, fresh[k]);
	for (unsigned i = 0; i < nw && !ret; i++)
		if (put[i])
			dg_cpcache_put(vol, w[i].owner, w[i].index, w[i].img,
				       true);
	for (unsigned i = 0; i < nl; i++)
		pthread_mutex_unlock(&vol->csum_locks[locks[i]]);
out:
	if (!small) {
		free(first);
		free(fresh);
	}
	if (!small_pages) {
		free(w);
		free(put);
		free(isfresh);
		free(locks);
		free(img);
	}
	return ret;
}

int dg_csum_set(struct dg_vol *vol, unsigned dev, uint64_t row,
		uint64_t csum, struct dg_flushset *fs)
{
	struct dg_csum_upd u = { dev, row, csum };

	return dg_csum_set_batch(vol, &u, 1, fs);
}

/* The "given up" mark of a page fsck -y gave up (given_up.c says
 * why and when): a checksum rule, here so the read path asks it of the
 * checksums alone. */
uint64_t dg_csum_given_up(const struct dg_vol *vol, unsigned dev,
			  uint64_t row, const void *page)
{
	uint64_t h = dg_csum_page(vol, dev, row, page) ^ DG_CSUM_GIVEN_UP_TAG;

	/* Never "never written"; 1 is no page's checksum of these bytes
	 * (that one differs from it by the tag). */
	return h == DG_CSUM_NONE ? 1 : h;
}

bool dg_csum_is_given_up(const struct dg_vol *vol, unsigned dev,
			 uint64_t row, uint64_t csum, const void *page)
{
	return csum != DG_CSUM_NONE &&
	       csum == dg_csum_given_up(vol, dev, row, page);
}
