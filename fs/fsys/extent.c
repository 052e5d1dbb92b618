// SPDX-License-Identifier: MIT
/* extent.c -- file extent maps: lookup, allocate, punch, store, load
 *
 * The in-core map mirrors the media leaf for leaf (fsys_i.h, format.h):
 * the inline array, then one leaf per chain page, each with slack. An
 * insert or removal shifts entries within one leaf and marks the slots
 * it moved; a full leaf, or a long one inserted into (LEAF_SOFT),
 * splits into a new page. ext_store() then writes
 * only the marked part of each changed leaf, so the metadata cost of a
 * write is a few hundred bytes however many extents the file has.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "bsearch.h"
#include "fsys_i.h"

/* A place in the map: slot of leaf (slot == n: just after the leaf). */
struct epos {
	uint32_t leaf, slot;
};

static uint32_t leaf_cap(uint32_t li)
{
	return li ? DG_EMAP_PER_PAGE : DG_INLINE_EXTENTS;
}

static struct dg_eleaf *leaf_new(uint32_t li, uint64_t vpn)
{
	struct dg_eleaf *lf = calloc(1, sizeof(*lf) + leaf_cap(li) *
						  sizeof(struct dg_ext));

	if (lf) {
		lf->vpn = vpn;
		lf->dirty = UINT32_MAX;
	}
	return lf;
}

static void leaf_dirty(struct dg_eleaf *lf, uint32_t slot)
{
	if (slot < lf->dirty)
		lf->dirty = slot;
}

/* Put lf at index at of the leaf array. */
static int leaf_put(struct dg_inode *ip, uint32_t at, struct dg_eleaf *lf)
{
	if (ip->nleaf == ip->capleaf) {
		uint32_t cap = ip->capleaf ? ip->capleaf * 2 : 4;
		struct dg_eleaf **l = realloc(ip->leaf, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		ip->leaf = l;
		ip->capleaf = cap;
	}
	memmove(&ip->leaf[at + 1], &ip->leaf[at],
		(ip->nleaf - at) * sizeof(*ip->leaf));
	ip->leaf[at] = lf;
	ip->nleaf++;
	return 0;
}

void dg_ext_free(struct dg_inode *ip)
{
	for (uint32_t i = 0; i < ip->nleaf; i++)
		free(ip->leaf[i]);
	free(ip->leaf);
	ip->leaf = NULL;
	ip->nleaf = ip->capleaf = ip->next = 0;
	dg_remap_free(ip);
}

/* Leaf 0, for an inode whose map was never loaded (a new inode). */
static int leaf0(struct dg_inode *ip)
{
	struct dg_eleaf *lf;

	if (ip->nleaf)
		return 0;
	lf = leaf_new(0, 0);
	if (!lf)
		return -ENOMEM;
	if (leaf_put(ip, 0, lf)) {
		free(lf);
		return -ENOMEM;
	}
	return 0;
}

/* The leaf fpage belongs in: the last whose first extent starts at or
 * before it; leaf 0 when none does. */
static bool leaf_starts_at_or_before(const void *set, size_t i,
				     uint64_t fpage)
{
	const struct dg_inode *ip = set;

	return ip->leaf[i]->e[0].fpage <= fpage;
}

static uint32_t leaf_find(const struct dg_inode *ip, uint64_t fpage)
{
	return (uint32_t)dg_partition_point(1, ip->nleaf,
					    leaf_starts_at_or_before, ip,
					    fpage) - 1;
}

static bool extent_ends_by(const void *set, size_t i, uint64_t fpage)
{
	const struct dg_eleaf *lf = set;

	return lf->e[i].fpage + lf->e[i].len <= fpage;
}

/* In lf, the first extent that ends after fpage (may be lf->n). */
static uint32_t slot_find(const struct dg_eleaf *lf, uint64_t fpage)
{
	return (uint32_t)dg_partition_point(0, lf->n, extent_ends_by, lf,
					    fpage);
}

static struct epos pos_find(const struct dg_inode *ip, uint64_t fpage)
{
	uint32_t li = leaf_find(ip, fpage);

	return (struct epos){ li, slot_find(ip->leaf[li], fpage) };
}

/* The extent at or after p, and where it is; NULL past the end. */
static struct dg_ext *ext_at(const struct dg_inode *ip, struct epos *p)
{
	if (p->leaf == ip->nleaf)	/* the last leaf was just freed */
		return NULL;
	if (p->slot == ip->leaf[p->leaf]->n) {
		if (p->leaf + 1 == ip->nleaf)
			return NULL;
		*p = (struct epos){ p->leaf + 1, 0 };
	}
	return &ip->leaf[p->leaf]->e[p->slot];
}

/* The extent before p, and where it is; NULL at the start. Only leaf 0
 * can be empty, so this looks at two leaves at most. */
static struct dg_ext *ext_before(const struct dg_inode *ip, struct epos *p)
{
	uint32_t li = p->leaf;

	if (p->slot) {
		p->slot--;
		return &ip->leaf[li]->e[p->slot];
	}
	while (li--) {
		if (ip->leaf[li]->n) {
			*p = (struct epos){ li, ip->leaf[li]->n - 1 };
			return &ip->leaf[li]->e[p->slot];
		}
	}
	return NULL;
}

void dg_ext_lookup(const struct dg_inode *ip, uint64_t fpage, uint64_t *vpn,
		   uint64_t *run)
{
	struct epos p;
	const struct dg_ext *e;

	if (!ip->nleaf) {
		*vpn = 0;
		*run = UINT64_MAX;
		return;
	}
	p = pos_find(ip, fpage);
	e = ext_at(ip, &p);
	if (!e) {
		*vpn = 0;
		*run = UINT64_MAX;
	} else if (e->fpage > fpage) {
		*vpn = 0;
		*run = e->fpage - fpage;
	} else {
		*vpn = e->vpn + (fpage - e->fpage);
		*run = e->fpage + e->len - fpage;
		if (ip->remap)
			dg_remap_apply(ip, fpage, vpn, run);
	}
}

/* A home page a record stands in for is owned by no file page: what it
 * holds is read no more (format.h "Remap page"). */
bool dg_ext_owns(const struct dg_inode *ip, uint64_t vpn, uint64_t *fpage)
{
	if (dg_remap_owns(ip, vpn, fpage))
		return true;
	for (uint32_t li = 0; li < ip->nleaf; li++) {
		const struct dg_eleaf *lf = ip->leaf[li];

		for (uint32_t i = 0; i < lf->n; i++)
			if (vpn >= lf->e[i].vpn &&
			    vpn < lf->e[i].vpn + lf->e[i].len) {
				*fpage = lf->e[i].fpage + vpn - lf->e[i].vpn;
				return !dg_remap_has(ip, *fpage);
			}
	}
	return false;
}

/* A new chain page at leaf index at (>= 1), linked after leaf at - 1. */
static int leaf_add(struct dg_txn *txn, struct dg_inode *ip, uint32_t at)
{
	struct dg_eleaf *prev = ip->leaf[at - 1], *lf;
	uint64_t vpn, got;
	int ret;

	ret = dg_alloc_meta(txn, prev->vpn ? prev->vpn + 1 : 0, 1, &vpn,
			    &got);
	if (ret)
		return ret;
	lf = leaf_new(at, vpn);
	if (!lf)
		return -ENOMEM;
	ret = leaf_put(ip, at, lf);
	if (ret) {
		free(lf);
		return ret;
	}
	leaf_dirty(lf, 0);
	leaf_dirty(prev, prev->n);	/* its link changes */
	ip->d.blocks++;
	return 0;
}

/* Split leaf p->leaf: its last move extents go to a new chain page
 * after it (none: an empty page, to append to). *p, a place in the leaf,
 * is moved to where the new extent now goes. */
static int leaf_split(struct dg_txn *txn, struct dg_inode *ip, struct epos *p,
		      uint32_t move)
{
	struct dg_eleaf *lf = ip->leaf[p->leaf], *nl;
	int ret = leaf_add(txn, ip, p->leaf + 1);

	if (ret)
		return ret;
	nl = ip->leaf[p->leaf + 1];
	memcpy(nl->e, &lf->e[lf->n - move], move * sizeof(*nl->e));
	nl->n = move;
	lf->n -= move;
	leaf_dirty(lf, lf->n);
	if (p->slot > lf->n || lf->n == leaf_cap(p->leaf))
		*p = (struct epos){ p->leaf + 1, p->slot - lf->n };
	return 0;
}

/*
 * A leaf is kept sorted, so an insert into its middle rewrites the slots
 * after it, and each byte rewritten costs the journal's copies, the
 * page, its ditto copy and their parity (docs/design.md, "What a write
 * costs the media"). A random write into a sparse file inserts at a
 * random slot: in leaves filled towards DG_EMAP_PER_PAGE that moved
 * some 60 extents (1,440 bytes) a write. A chain leaf of LEAF_SOFT
 * extents or more splits in half at such an insert, so leaves filled
 * at random hold 32-64 extents (a fifth to two fifths of a page: one
 * chain page for some 45 extents of a file split page by page, where
 * full pages hold 170) and an insert moves about 20. Appends at a
 * leaf's end move nothing and fill it to DG_EMAP_PER_PAGE, as files
 * written in order do.
 */
#define LEAF_SOFT 64u

static int leaf_insert(struct dg_txn *txn, struct dg_inode *ip, struct epos p,
		       struct dg_ext x)
{
	struct dg_eleaf *lf = ip->leaf[p.leaf];
	struct dg_eleaf *nx = p.leaf + 1 < ip->nleaf ? ip->leaf[p.leaf + 1] :
						       NULL;
	int ret = 0;

	if (p.leaf && p.slot < lf->n && lf->n >= LEAF_SOFT &&
	    lf->dirty >= lf->n) {
		/* Into the middle of a long leaf: split it in half first
		 * (LEAF_SOFT). Only in a leaf this transaction has not
		 * changed yet: where it has, the shift rewrites slots it
		 * rewrites anyway (a batch's inserts into one leaf), and
		 * a split each would leave a trail of short pages. */
		ret = leaf_split(txn, ip, &p, lf->n - lf->n / 2);
	} else if (lf->n < leaf_cap(p.leaf)) {
		/* room */
	} else if (p.slot == lf->n && nx && nx->n < DG_EMAP_PER_PAGE) {
		/* At the end of a full leaf: the next has room. */
		p = (struct epos){ p.leaf + 1, 0 };
	} else if (p.leaf == 0 && nx && nx->n < DG_EMAP_PER_PAGE) {
		/* The inline array spills its last extent into the first
		 * chain page rather than start a page of two. */
		memmove(&nx->e[1], &nx->e[0], nx->n * sizeof(*nx->e));
		nx->e[0] = lf->e[--lf->n];
		nx->n++;
		leaf_dirty(nx, 0);
	} else {
		/* Split the full leaf in half or, appending at the very
		 * end, start a new page, so files written in order fill
		 * pages. */
		bool append = p.slot == lf->n && !nx;

		ret = leaf_split(txn, ip, &p, append ? 0 : lf->n - lf->n / 2);
	}
	if (ret)
		return ret;
	lf = ip->leaf[p.leaf];
	memmove(&lf->e[p.slot + 1], &lf->e[p.slot],
		(lf->n - p.slot) * sizeof(*lf->e));
	lf->e[p.slot] = x;
	lf->n++;
	ip->next++;
	leaf_dirty(lf, p.slot);
	return 0;
}

/* Unlink chain leaf li and free its page. */
static int leaf_drop(struct dg_txn *txn, struct dg_inode *ip, uint32_t li)
{
	struct dg_eleaf *prev = ip->leaf[li - 1];
	int ret = dg_free(txn, ip->leaf[li]->vpn, 1);

	if (ret)
		return ret;
	ip->d.blocks--;
	free(ip->leaf[li]);
	memmove(&ip->leaf[li], &ip->leaf[li + 1],
		(ip->nleaf - li - 1) * sizeof(*ip->leaf));
	ip->nleaf--;
	leaf_dirty(prev, prev->n);	/* its link changes */
	return 0;
}

/* Move chain leaf li + 1's extents to the end of chain leaf li. */
static int leaf_merge_next(struct dg_txn *txn, struct dg_inode *ip,
			   uint32_t li)
{
	struct dg_eleaf *lf = ip->leaf[li], *nx = ip->leaf[li + 1];

	memcpy(&lf->e[lf->n], nx->e, nx->n * sizeof(*nx->e));
	leaf_dirty(lf, lf->n);
	lf->n += nx->n;
	nx->n = 0;
	return leaf_drop(txn, ip, li + 1);
}

/* Drop k extents at *p, all within one leaf (nothing of theirs is freed
 * here). A chain page left empty is freed; one left under a quarter full
 * joins a neighbour that has room, so punched maps do not keep pages of
 * slack. *p then names the extent that followed the dropped ones. */
static int ext_remove(struct dg_txn *txn, struct dg_inode *ip, struct epos *p,
		      uint32_t k)
{
	const uint32_t low = DG_EMAP_PER_PAGE / 4, room = DG_EMAP_PER_PAGE / 2;
	uint32_t li = p->leaf;
	struct dg_eleaf *lf = ip->leaf[li];

	memmove(&lf->e[p->slot], &lf->e[p->slot + k],
		(lf->n - p->slot - k) * sizeof(*lf->e));
	lf->n -= k;
	ip->next -= k;
	leaf_dirty(lf, p->slot);
	if (li == 0 || lf->n >= low)
		return 0;
	if (lf->n == 0) {
		*p = (struct epos){ li, 0 };	/* the next leaf moves here */
		return leaf_drop(txn, ip, li);
	}
	if (li + 1 < ip->nleaf && lf->n + ip->leaf[li + 1]->n <= room)
		return leaf_merge_next(txn, ip, li);
	if (li > 1 && ip->leaf[li - 1]->n + lf->n <= room) {
		*p = (struct epos){ li - 1, ip->leaf[li - 1]->n + p->slot };
		return leaf_merge_next(txn, ip, li - 1);
	}
	return 0;
}

/* Does [fpage, vpn) continue e on both the file and the media? */
static bool continues(const struct dg_ext *e, uint64_t fpage, uint64_t vpn,
		      uint64_t len)
{
	return e->fpage + e->len == fpage && e->vpn + e->len == vpn &&
	       e->len + len < UINT32_MAX;
}

/* Map [fpage, fpage + len) to [vpn, ...), which overlaps nothing mapped,
 * merging with the extents on either side where the media continues. */
static int ext_insert(struct dg_txn *txn, struct dg_inode *ip, uint64_t fpage,
		      uint64_t vpn, uint32_t len)
{
	struct epos p = pos_find(ip, fpage), pp = p, np = p;
	struct dg_ext *prev = ext_before(ip, &pp), *next = ext_at(ip, &np);

	if (prev && continues(prev, fpage, vpn, len)) {
		prev->len += len;
		leaf_dirty(ip->leaf[pp.leaf], pp.slot);
		if (next && continues(prev, next->fpage, next->vpn, next->len)) {
			/* A hole filled where the media was left for it. */
			prev->len += next->len;
			return ext_remove(txn, ip, &np, 1);
		}
		return 0;
	}
	if (next && fpage + len == next->fpage && vpn + len == next->vpn &&
	    next->len + (uint64_t)len < UINT32_MAX) {
		next->fpage = fpage;
		next->vpn = vpn;
		next->len += len;
		leaf_dirty(ip->leaf[np.leaf], np.slot);
		return 0;
	}
	return leaf_insert(txn, ip, p, (struct dg_ext){ fpage, vpn, len });
}

static struct dg_dextent ext_d(const struct dg_ext *e)
{
	return (struct dg_dextent){ e->fpage, e->vpn, e->len, 0 };
}

/* Write what changed: the inline leaf into the inode record (stored by
 * the caller), and each marked chain page's header and marked slots. */
static int ext_store(struct dg_txn *txn, struct dg_inode *ip)
{
	struct dg_demap pg;
	const uint32_t hdr = (uint32_t)offsetof(struct dg_demap, e);
	const uint32_t esz = (uint32_t)sizeof(struct dg_dextent);

	ip->d.nextents = ip->next;
	ip->d.emap_vpn = ip->nleaf > 1 ? ip->leaf[1]->vpn : 0;
	memset(ip->d.inl, 0, sizeof(ip->d.inl));
	for (uint32_t i = 0; i < ip->leaf[0]->n; i++)
		ip->d.inl[i] = ext_d(&ip->leaf[0]->e[i]);
	ip->leaf[0]->dirty = UINT32_MAX;
	for (uint32_t li = 1; li < ip->nleaf; li++) {
		struct dg_eleaf *lf = ip->leaf[li];
		uint32_t from = lf->dirty < lf->n ? lf->dirty : lf->n;
		int ret;

		if (lf->dirty == UINT32_MAX)
			continue;
		lf->dirty = UINT32_MAX;
		pg.next_vpn = li + 1 < ip->nleaf ? ip->leaf[li + 1]->vpn : 0;
		pg.count = lf->n;
		pg.pad = 0;
		for (uint32_t i = from; i < lf->n; i++)
			pg.e[i] = ext_d(&lf->e[i]);
		if (from == 0) {
			ret = dg_txn_write(txn, lf->vpn, 0, &pg,
					   hdr + lf->n * esz);
		} else {
			ret = dg_txn_write(txn, lf->vpn, 0, &pg, hdr);
			if (!ret && from < lf->n)
				ret = dg_txn_write(txn, lf->vpn,
						   hdr + from * esz,
						   &pg.e[from],
						   (lf->n - from) * esz);
		}
		if (ret)
			return ret;
	}
	return 0;
}

int dg_ext_alloc(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		 uint64_t fpage, uint64_t len,
		 void (*fresh)(void *arg, uint64_t fpage, uint64_t vpn,
			       uint64_t n),
		 void *arg)
{
	struct epos pp, np;
	const struct dg_ext *prev, *next;
	uint64_t hint = 0;
	/* Directory and symlink pages are metadata: they go in the zone. */
	bool meta = S_ISDIR(ip->d.mode) || S_ISLNK(ip->d.mode);
	int ret = leaf0(ip);

	if (ret)
		return ret;
	/* Aim where the neighbours on the media say this range belongs, so
	 * that a sparse file filled in any order ends up contiguous. */
	pp = np = pos_find(ip, fpage);
	prev = ext_before(ip, &pp);
	next = ext_at(ip, &np);
	if (prev) {
		hint = prev->vpn + (fpage - prev->fpage);
	} else if (next) {
		if (next->vpn > next->fpage - fpage)
			hint = next->vpn - (next->fpage - fpage);
	} else if (!meta) {
		uint64_t span = dg_div_up(ip->d.size, DG_PAGE_SIZE);

		if (span < fpage + len)
			span = fpage + len;
		hint = dg_alloc_home(fs->vol, span) + fpage;
	}
	while (len && !ret) {
		struct dg_vrun runs[DG_MAX_DEVS];
		uint64_t ask = len > (1u << 20) ? (1u << 20) : len;
		unsigned nr = 1;

		/* File data on whole rows where it can (alloc.c): a write
		 * of this range then reads nothing old for parity. */
		ret = meta ? dg_alloc_meta(txn, hint, ask, &runs[0].vpn,
					   &runs[0].n)
			   : dg_alloc_rows(txn, hint, ask, runs, &nr);
		for (unsigned i = 0; i < nr && !ret; i++) {
			ret = ext_insert(txn, ip, fpage, runs[i].vpn,
					 (uint32_t)runs[i].n);
			if (ret)
				break;
			if (fresh)
				fresh(arg, fpage, runs[i].vpn, runs[i].n);
			ip->d.blocks += runs[i].n;
			fpage += runs[i].n;
			len -= runs[i].n;
			hint = runs[i].vpn + runs[i].n;
		}
	}
	if (!ret)
		ret = ext_store(txn, ip);
	return ret;
}

/* Free file pages [s, t), which lie within e. */
static int ext_free_part(struct dg_txn *txn, struct dg_inode *ip,
			 const struct dg_ext *e, uint64_t s, uint64_t t)
{
	int ret = dg_free(txn, e->vpn + (s - e->fpage), t - s);

	if (!ret)
		ip->d.blocks -= t - s;
	return ret;
}

/* Unmap and free [fpage, fpage + len); *changed when anything was
 * mapped there. The leaves are not stored (the caller's ext_store()). */
static int ext_punch(struct dg_txn *txn, struct dg_inode *ip, uint64_t fpage,
		     uint64_t len, bool *changed)
{
	uint64_t end = fpage + len;
	struct epos p;
	struct dg_ext *e;
	int ret;

	p = pos_find(ip, fpage);
	while ((e = ext_at(ip, &p)) && e->fpage < end) {
		struct dg_eleaf *lf = ip->leaf[p.leaf];
		uint64_t s = e->fpage > fpage ? e->fpage : fpage;
		uint64_t t = e->fpage + e->len < end ? e->fpage + e->len : end;
		uint32_t k = 0;

		*changed = true;
		if (s > e->fpage && t < e->fpage + e->len) {
			/* A hole in the middle splits the extent. */
			struct dg_ext tail = { t, e->vpn + (t - e->fpage),
					       (uint32_t)(e->fpage + e->len - t) };

			ret = ext_free_part(txn, ip, e, s, t);
			if (ret)
				return ret;
			e->len = (uint32_t)(s - e->fpage);
			leaf_dirty(lf, p.slot);
			ret = leaf_insert(txn, ip, (struct epos){ p.leaf,
							p.slot + 1 }, tail);
			if (ret)
				return ret;
			break;
		}
		if (s > e->fpage || t < e->fpage + e->len) {
			ret = ext_free_part(txn, ip, e, s, t);
			if (ret)
				return ret;
			if (s > e->fpage) {
				e->len = (uint32_t)(s - e->fpage);
			} else {
				e->vpn += t - e->fpage;
				e->len -= (uint32_t)(t - e->fpage);
				e->fpage = t;
			}
			leaf_dirty(lf, p.slot);
			p.slot++;
			continue;
		}
		/* Whole extents: free each, drop the run from the leaf at
		 * once (a truncate moves each leaf once, not per extent). */
		while (p.slot + k < lf->n && e[k].fpage + e[k].len <= end) {
			ret = ext_free_part(txn, ip, &e[k], e[k].fpage,
					    e[k].fpage + e[k].len);
			if (ret)
				return ret;
			k++;
		}
		ret = ext_remove(txn, ip, &p, k);
		if (ret)
			return ret;
	}
	return 0;
}

int dg_ext_punch(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		 uint64_t fpage, uint64_t len)
{
	bool changed = false;
	int ret = leaf0(ip);

	if (!ret)
		ret = dg_remap_drop(fs, txn, ip, fpage, len);
	if (!ret)
		ret = ext_punch(txn, ip, fpage, len, &changed);
	return !ret && changed ? ext_store(txn, ip) : ret;
}

/*
 * Every run of file pages unmapped (freed) and mapped again, in file
 * order, onto the media runs, which hold as many pages. The leaves are
 * stored once, at the end: a store after each run would write each
 * changed leaf from its first changed slot to its end once a run, so
 * n scattered runs would store n times most of a leaf.
 */
int dg_ext_move(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		const struct dg_frun *file, unsigned nfile,
		const struct dg_vrun *media, unsigned nmedia)
{
	uint64_t pages = 0, fo = 0, mo = 0;
	unsigned j = 0;
	bool changed = false;
	int ret = leaf0(ip);

	for (unsigned i = 0; i < nfile; i++)
		pages += file[i].n;
	for (unsigned i = 0; i < nmedia; i++)
		pages -= media[i].n;
	if (pages)
		return -EINVAL;
	for (unsigned i = 0; i < nfile && !ret; i++) {
		ret = dg_remap_drop(fs, txn, ip, file[i].fpage, file[i].n);
		if (!ret)
			ret = ext_punch(txn, ip, file[i].fpage, file[i].n,
					&changed);
	}
	for (unsigned i = 0; i < nfile && !ret;) {
		uint64_t len = file[i].n - fo;

		if (len > media[j].n - mo)
			len = media[j].n - mo;
		if (len > UINT32_MAX / 2)
			len = UINT32_MAX / 2;
		ret = ext_insert(txn, ip, file[i].fpage + fo, media[j].vpn + mo,
				 (uint32_t)len);
		if (ret)
			break;
		ip->d.blocks += len;
		fo += len;
		mo += len;
		if (fo == file[i].n) {
			i++;
			fo = 0;
		}
		if (mo == media[j].n) {
			j++;
			mo = 0;
		}
	}
	return ret ? ret : ext_store(txn, ip);
}

/* ip's remap page loaded (remap.c), each record's page a mapped one: a
 * record stands in for its home page, never for a hole (format.h). */
static int remap_homes(struct dg_fs *fs, struct dg_inode *ip)
{
	const struct dg_remap *rm;
	int ret = dg_remap_load(fs, ip);

	if (ret || !(rm = ip->remap))
		return ret;
	for (uint32_t i = 0; i < rm->n; i++) {
		struct epos p = pos_find(ip, rm->r[i].fpage);
		const struct dg_ext *e = ext_at(ip, &p);

		if (!e || e->fpage > rm->r[i].fpage) {
			ret = DG_CORRUPT(fs->vol, "inode %" PRIu64 ": remap "
					 "record for page %" PRIu64 ", a hole",
					 ip->ino, rm->r[i].fpage);
			dg_remap_free(ip);
			return ret;
		}
	}
	return 0;
}

int dg_ext_load(struct dg_fs *fs, struct dg_inode *ip)
{
	struct dg_demap *pg = NULL;
	struct dg_emap_reader r;
	const struct dg_dextent *d;
	int k, ret;

	dg_ext_free(ip);
	ret = leaf0(ip);
	if (ret)
		return ret;
	if (ip->d.emap_vpn) {
		pg = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
		if (!pg)
			return -ENOMEM;
	}
	dg_emap_begin(&r, fs->vol, &ip->d, pg);
	while ((k = dg_emap_next(&r, &d)) > 0) {
		struct dg_eleaf *lf;

		if (k == DG_EMAP_PAGE) {
			lf = leaf_new(ip->nleaf, r.page_vpn);
			if (!lf || leaf_put(ip, ip->nleaf, lf)) {
				free(lf);
				k = -ENOMEM;
				break;
			}
			continue;
		}
		lf = ip->leaf[ip->nleaf - 1];
		lf->e[lf->n++] = (struct dg_ext){ d->fpage, d->vpn, d->len };
		ip->next++;
	}
	free(pg);
	if (k == -EUCLEAN && r.why)
		return DG_CORRUPT(fs->vol, "inode %" PRIu64 ": extent %u: %s",
				  ip->ino, r.seen, r.why);
	if (k)
		return k;
	return remap_homes(fs, ip);
}
