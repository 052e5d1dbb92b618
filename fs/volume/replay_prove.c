// SPDX-License-Identifier: MIT
/*
 * replay_prove.c -- prove a page of a row the journal replay rewrites
 *
 * The rule (docs/integrity.md, "Replay under faults"): a data page of a
 * replayed row that fails its checksum is rebuilt from its row in every
 * way the crash may have left the row consistent, and a rebuild counts
 * only when it hashes to the page's verified checksum -- 64 bits seeded
 * with the page's address, so no guess passes it by chance. Which
 * version of the row the parity on the media was computed from does not
 * need to be known: the checksum says which rebuild was right.
 *
 * The versions a crash leaves (apply.c writes an update's data pages,
 * then its parity, after its entry is durable; the recorder of
 * tests/crash may land any subset of them, each torn at 8 bytes):
 *  - as found: no in-place write landed; the parity and the old bytes
 *    of the pages the entries rewrite agree (the redone bytes of the
 *    page wanted are put back over its rebuilt old image);
 *  - as redone: every write landed, parity included; the redone pages
 *    and the parity as found agree;
 *  - torn parity: the parity write landed up to an 8-byte boundary b:
 *    redone below b, as found from b on. Rebuilding works byte by byte,
 *    so these are splices of the two rebuilds, one checksum each;
 *  - with parity 2, either of the above from one parity alone (the
 *    other one half written), or with one more page of the row taken as
 *    unknown (a data page of the entry half written, its old bytes
 *    gone).
 */
#include <stdlib.h>
#include <string.h>

#include "replay_prove.h"

#define MASK_BYTES (DG_PAGE_SIZE / 8)

/* A row the replay rewrites: its pages as found, before the first write
 * of the replay to the row; of the data pages, which bytes it wrote. */
struct prow {
	uint64_t row;
	uint8_t *found[DG_MAX_DEVS];	/* by device; NULL: not rewritten */
	uint8_t *redone[DG_MAX_DEVS];	/* bit per byte the replay wrote */
	const uint8_t *shadow[DG_MAX_DEVS];	/* a missing device's page:
						 * where the replay wrote
						 * them (journal.c) */
};

struct dg_rproof {
	struct prow *rows;
	size_t n, cap;
	size_t *slot;		/* open addressing by row: index + 1 */
	size_t nslot;
};

struct dg_rproof *dg_rproof_new(void)
{
	return calloc(1, sizeof(struct dg_rproof));
}

void dg_rproof_free(struct dg_rproof *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		for (unsigned d = 0; d < DG_MAX_DEVS; d++) {
			/* dg_rproof_blank()'s is shared, so that the
			 * reservations of a forged log cost no page
			 * each. */
			if (p->rows[i].found[d] != dg_zero_page)
				free(p->rows[i].found[d]);
			free(p->rows[i].redone[d]);
		}
	free(p->rows);
	free(p->slot);
	free(p);
}

static size_t hash_row(uint64_t row, size_t nslot)
{
	return (size_t)((row * 0x9e3779b97f4a7c15ull) >> 20) & (nslot - 1);
}

static struct prow *find_row(const struct dg_rproof *p, uint64_t row)
{
	if (!p->nslot)
		return NULL;
	for (size_t h = hash_row(row, p->nslot);; h = (h + 1) & (p->nslot - 1)) {
		size_t i = p->slot[h];

		if (!i)
			return NULL;
		if (p->rows[i - 1].row == row)
			return &p->rows[i - 1];
	}
}

static int grow(struct dg_rproof *p)
{
	size_t nslot = p->nslot ? 2 * p->nslot : 64;
	size_t *slot = calloc(nslot, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		size_t h = hash_row(p->rows[i].row, nslot);

		while (slot[h])
			h = (h + 1) & (nslot - 1);
		slot[h] = i + 1;
	}
	free(p->slot);
	p->slot = slot;
	p->nslot = nslot;
	return 0;
}

static uint8_t *copy_page(struct dg_vol *vol, unsigned dev, uint64_t row)
{
	uint8_t *pg = malloc(DG_PAGE_SIZE);

	if (pg)
		memcpy(pg, dg_dev_ptr(&vol->devs[dev],
				      dg_row_page(vol, row) << DG_PAGE_SHIFT),
		       DG_PAGE_SIZE);
	return pg;
}

/* The record of row, made with its parity pages as found. */
static struct prow *add_row(struct dg_rproof *p, struct dg_vol *vol,
			    uint64_t row)
{
	struct prow *pr;
	size_t h;

	if (2 * (p->n + 1) > p->nslot && grow(p))
		return NULL;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		void *n = realloc(p->rows, cap * sizeof(*p->rows));

		if (!n)
			return NULL;
		p->rows = n;
		p->cap = cap;
	}
	pr = &p->rows[p->n];
	memset(pr, 0, sizeof(*pr));
	pr->row = row;
	for (unsigned j = 0; j < vol->parity; j++) {
		unsigned pd = dg_row_parity_dev(vol, row, j);

		if (!dg_dev_has_row(&vol->devs[pd], row))
			continue;
		pr->found[pd] = copy_page(vol, pd, row);
		if (!pr->found[pd]) {
			for (unsigned d = 0; d < DG_MAX_DEVS; d++)
				free(pr->found[d]);
			return NULL;
		}
	}
	for (h = hash_row(row, p->nslot); p->slot[h];
	     h = (h + 1) & (p->nslot - 1))
		;
	p->slot[h] = ++p->n;
	return pr;
}

/* Row's record, made (with its parity pages as found) the first time;
 * NULL when out of memory. */
static struct prow *row_of(struct dg_rproof *p, struct dg_vol *vol,
			   uint64_t row)
{
	struct prow *pr = find_row(p, row);

	return pr ? pr : add_row(p, vol, row);
}

/* Note bytes [off, off + len) of dev's page in pr as redone. */
static int mark_redone(struct prow *pr, unsigned dev, uint32_t off,
		       uint32_t len)
{
	uint8_t *m = pr->redone[dev];

	if (!m)
		m = pr->redone[dev] = calloc(1, MASK_BYTES);
	if (!m)
		return -ENOMEM; /* freed with p */
	for (uint32_t b = off; b < off + len && b < DG_PAGE_SIZE; b++)
		m[b / 8] |= (uint8_t)(1u << (b % 8));
	return 0;
}

int dg_rproof_keep(struct dg_rproof *p, struct dg_vol *vol, unsigned dev,
		   uint64_t row, uint32_t off, uint32_t len)
{
	struct prow *pr;

	if (!vol->parity)
		return 0;	/* nothing to rebuild from */
	pr = row_of(p, vol, row);
	if (!pr)
		return -ENOMEM;
	if (!pr->found[dev]) /* a parity page's is kept already */
		pr->found[dev] = copy_page(vol, dev, row);
	if (!pr->found[dev])
		return -ENOMEM;
	return mark_redone(pr, dev, off, len);
}

int dg_rproof_shadow(struct dg_rproof *p, struct dg_vol *vol, unsigned dev,
		     uint64_t row, uint32_t off, uint32_t len,
		     const uint8_t *shadow)
{
	struct prow *pr;

	if (!vol->parity)
		return 0;
	pr = row_of(p, vol, row);
	if (!pr)
		return -ENOMEM;
	pr->shadow[dev] = shadow;
	return mark_redone(pr, dev, off, len);
}

int dg_rproof_row(struct dg_rproof *p, struct dg_vol *vol, uint64_t row)
{
	if (!vol->parity)
		return 0;
	return row_of(p, vol, row) ? 0 : -ENOMEM;
}

int dg_rproof_blank(struct dg_rproof *p, struct dg_vol *vol, unsigned dev,
		    uint64_t row)
{
	struct prow *pr;

	if (!vol->parity)
		return 0;
	pr = row_of(p, vol, row);
	if (!pr)
		return -ENOMEM;
	if (!pr->found[dev])
		pr->found[dev] = (uint8_t *)dg_zero_page; /* only read */
	return 0;
}

/* What one proof attempt works with. */
struct attempt {
	struct dg_vol *vol;
	uint64_t row;
	unsigned dev, want, m;
	uint64_t csum;
	const uint8_t *src[2][DG_MAX_DEVS];	/* by position: as found, as
						 * redone; NULL unknown */
	const uint8_t *cur_want;	/* the page wanted on the media */
	const uint8_t *redone_mask;	/* its bytes the replay wrote */
	uint8_t *work;			/* m pages */
};

/* Rebuild the page wanted from version v of the row with position extra
 * (-1: none) taken as unknown too, into out, the replay's own bytes put
 * back over it. False when too much of the row is unknown. */
static bool rebuild(struct attempt *a, unsigned v, int extra, uint8_t *out)
{
	uint8_t *pages[DG_MAX_DEVS];
	bool lost[DG_MAX_DEVS];

	for (unsigned pos = 0; pos < a->m; pos++) {
		pages[pos] = a->work + (size_t)pos * DG_PAGE_SIZE;
		lost[pos] = pos == a->want || (int)pos == extra ||
			    !a->src[v][pos];
		if (!lost[pos])
			memcpy(pages[pos], a->src[v][pos], DG_PAGE_SIZE);
	}
	if (dg_parity_rebuild(a->vol, pages, lost, DG_PAGE_SIZE) < 0)
		return false;
	memcpy(out, pages[a->want], DG_PAGE_SIZE);
	if (a->redone_mask && a->cur_want)
		for (unsigned b = 0; b < DG_PAGE_SIZE; b++)
			if (a->redone_mask[b / 8] & (1u << (b % 8)))
				out[b] = a->cur_want[b];
	return true;
}

static bool proves(const struct attempt *a, const uint8_t *pg)
{
	return dg_csum_page(a->vol, a->dev, a->row, pg) == a->csum;
}

/* One way of taking the row (extra unknown too): as found, as redone,
 * or redone up to an 8-byte boundary and as found after it. */
static bool try_option(struct attempt *a, int extra, uint8_t *found,
		       uint8_t *redone, uint8_t *buf)
{
	bool f = rebuild(a, 0, extra, found);
	bool r = rebuild(a, 1, extra, redone);

	if (f && proves(a, found)) {
		memcpy(buf, found, DG_PAGE_SIZE);
		return true;
	}
	if (r && proves(a, redone)) {
		memcpy(buf, redone, DG_PAGE_SIZE);
		return true;
	}
	if (!f || !r)
		return false;
	/* buf holds the splice at b: redone below, found from b. */
	memcpy(buf, found, DG_PAGE_SIZE);
	for (unsigned b = 8; b < DG_PAGE_SIZE; b += 8) {
		if (!memcmp(buf + b - 8, redone + b - 8, 8))
			continue; /* the same page as at b - 8 */
		memcpy(buf + b - 8, redone + b - 8, 8);
		if (proves(a, buf))
			return true;
	}
	return false;
}

int dg_rproof_page(struct dg_rproof *p, struct dg_vol *vol, unsigned dev,
		   uint64_t row, uint64_t csum, void *buf)
{
	struct prow *pr = find_row(p, row);
	struct attempt a = { .vol = vol, .row = row, .dev = dev,
			     .csum = csum };
	uint64_t off = dg_row_page(vol, row) << DG_PAGE_SHIFT;
	unsigned unknown = 0;
	uint8_t *mem;
	int ret = -EIO;

	if (!pr || !vol->parity || dg_row_dev_is_parity(vol, row, dev))
		return -EIO;
	a.m = vol->k + vol->parity;
	a.want = dg_row_data_rank(vol, row, dev);
	for (unsigned pos = 0; pos < a.m; pos++) {
		unsigned pd = dg_row_pos_dev(vol, row, pos);
		const struct dg_dev *d = &vol->devs[pd];
		const uint8_t *cur = dg_dev_has_row(d, row)
					     ? dg_dev_ptr(d, off) : NULL;

		a.src[0][pos] = pr->found[pd] ? pr->found[pd] : cur;
		/* Parity is rewritten only after the row is proven. */
		a.src[1][pos] = pos < vol->k ? cur : a.src[0][pos];
		unknown += pos != a.want && !cur;
		if (pos == a.want) {
			a.cur_want = cur ? cur : pr->shadow[pd];
			a.redone_mask = pr->redone[pd];
		}
	}
	if (unknown + 1 > vol->parity)
		return -EIO;
	mem = aligned_alloc(DG_PAGE_SIZE, (size_t)(a.m + 2) * DG_PAGE_SIZE);
	if (!mem)
		return -ENOMEM;
	a.work = mem + 2 * (size_t)DG_PAGE_SIZE;
	if (try_option(&a, -1, mem, mem + DG_PAGE_SIZE, buf))
		ret = 0;
	/* Room for one more unknown page: a parity or a page of the entry
	 * that may be half written. */
	for (unsigned x = 0; ret && unknown + 2 <= vol->parity && x < a.m;
	     x++) {
		unsigned xd = dg_row_pos_dev(vol, row, x);

		if (x == a.want || !a.src[0][x] ||
		    (x < vol->k && !pr->redone[xd]))
			continue;
		if (try_option(&a, (int)x, mem, mem + DG_PAGE_SIZE, buf))
			ret = 0;
	}
	free(mem);
	return ret;
}
