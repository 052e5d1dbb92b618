// SPDX-License-Identifier: MIT
/*
 * lfault.c -- logical faults for daxguard-inject: corruption of the
 * filesystem structures that every checksum passes. Built into the
 * injector only (fs/meson.build: inject_dep), never into the engine
 * library that the daemon, mkfs and fsck run; it lives here because it
 * plans on the filesystem walk (walk.h), private to this layer.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lfault.h"
#include "walk.h"

static uint64_t lf_rnd(uint64_t *st)
{
	uint64_t z = (*st += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A regular file whose structures are all consistent: one name, every
 * extent good and inline (maxext: at most that many). */
static bool lf_plain_file(const struct walk *w, uint64_t ino,
			  uint32_t maxext)
{
	const struct wino *wi = &w->in[ino];

	return ino > DG_ROOT_INO && ino < w->icap && wi->used && !wi->bad &&
	       S_ISREG(wi->d.mode) && wi->reached && wi->refs == 1 &&
	       wi->d.nlink == 1 && !wi->d.map_flags && wi->next >= 1 &&
	       wi->next == wi->d.nextents && wi->next <= maxext;
}

/* ino when given and fitting, else a fitting file chosen by rng. */
static uint64_t lf_pick_file(const struct walk *w, uint64_t ino,
			     uint32_t maxext, uint64_t below, uint64_t *rng)
{
	uint64_t n = 0, k;

	if (ino)
		return lf_plain_file(w, ino, maxext) && ino < below ? ino : 0;
	for (uint64_t i = 2; i < w->icap && i < below; i++)
		n += lf_plain_file(w, i, maxext);
	if (!n)
		return 0;
	k = lf_rnd(rng) % n;
	for (uint64_t i = 2; i < w->icap && i < below; i++)
		if (lf_plain_file(w, i, maxext) && k-- == 0)
			return i;
	return 0;
}

static struct dg_lf_write *lf_add(struct dg_lfault *lf, uint64_t vpn,
				  uint32_t off, uint32_t len,
				  const char *structure)
{
	struct dg_lf_write *x = &lf->w[lf->nw++];

	x->vpn = vpn;
	x->off = off;
	x->len = len;
	x->structure = structure;
	return x;
}

static void lf_inode(struct walk *w, struct dg_lfault *lf, uint64_t ino,
		     const struct dg_dinode *d)
{
	struct dg_lf_write *x;
	uint64_t vpn;
	uint32_t off;

	dg_walk_ino_loc(w, ino, &vpn, &off);
	x = lf_add(lf, vpn, off, sizeof(*d), "inode");
	memcpy(x->data, d, sizeof(*d));
}

static const struct went *lf_entry_of(const struct walk *w, uint64_t ino)
{
	for (size_t i = 0; i < w->nents; i++)
		if (!w->ents[i].dead && w->ents[i].ino == ino)
			return &w->ents[i];
	return NULL;
}

/* A record named lf->name in directory dir, naming ino of type type,
 * placed as dg_dir_add() would: in a deleted record big enough (keeping
 * its reclen) when reuse says so, else at the tail of the last page,
 * after every record there; -ENOSPC when there is no room, -EEXIST
 * when the name is taken. *reused: a deleted record was. */
static int lf_place_record(struct walk *w, struct dg_lfault *lf,
			   uint64_t dir, uint64_t ino, uint8_t type,
			   bool reuse, bool *reused)
{
	struct wino *dp = &w->in[dir];
	uint64_t pages = dp->d.size / DG_PAGE_SIZE, vpn = 0;
	struct dg_ddirent *r;
	struct dg_lf_write *x;
	uint32_t off = 0, need, wlen = 0, reclen = 0;
	size_t nlen;
	int ret;

	*reused = false;
	if (!pages)
		return -ENOSPC;
	for (size_t i = 0; i < w->nents; i++)
		if (w->ents[i].dir == dir && !strcmp(w->ents[i].name, lf->name))
			return -EEXIST;
	nlen = strlen(lf->name);
	need = (uint32_t)((sizeof(*r) + nlen + 7) & ~7u);
	for (uint64_t pg = 0; pg < pages && !wlen; pg++) {
		dg_walk_ext_lookup(dp, pg, &vpn);
		if (!vpn)
			return -ENOSPC;
		ret = dg_read(w->vol, vpn, 1, w->page);
		if (ret)
			return ret;
		for (off = 0; off + sizeof(*r) <= DG_PAGE_SIZE;
		     off += r->reclen) {
			r = (struct dg_ddirent *)(w->page + off);
			if (r->reclen == 0)
				break;
			if (reuse && !r->ino && r->reclen >= need) {
				/* reuse: the record keeps its length */
				reclen = r->reclen;
				wlen = (uint32_t)(sizeof(*r) + nlen);
				*reused = true;
				break;
			}
		}
	}
	if (!wlen) {
		/* off: the tail of the last page, read last */
		if (off + need > DG_PAGE_SIZE)
			return -ENOSPC;
		reclen = need;
		/* the record and, when there is room, the end marker */
		wlen = need + (off + need + sizeof(*r) <= DG_PAGE_SIZE
				       ? (uint32_t)sizeof(*r) : 0);
	}
	x = lf_add(lf, vpn, off, wlen, "directory");
	memset(x->data, 0, sizeof(x->data));
	r = (struct dg_ddirent *)x->data;
	r->ino = ino;
	r->reclen = (uint16_t)reclen;
	r->namelen = (uint8_t)nlen;
	r->type = type;
	memcpy(r + 1, lf->name, nlen);
	lf->dir = dir;
	return 0;
}

/* A record naming a free inode slot, in a deleted record big enough or
 * at the tail of dir's last page. */
static int lf_dangling(struct walk *w, struct dg_lfault *lf, uint64_t dir,
		       uint64_t *rng)
{
	uint64_t start, ino = 0;
	bool reused;
	int ret;

	if (!(w->in[dir].d.size / DG_PAGE_SIZE))
		return -ENOSPC;
	start = 2 + lf_rnd(rng) % (w->icap - 2);
	for (uint64_t i = 0; i < w->icap - 2; i++) {
		uint64_t c = 2 + (start - 2 + i) % (w->icap - 2);

		if (!w->in[c].used && !w->in[c].bad && !w->in[c].d.mode) {
			ino = c;
			break;
		}
	}
	if (!ino)
		return -ENOENT;
	snprintf(lf->name, sizeof(lf->name), "dangling-%llu",
		 (unsigned long long)ino);
	ret = lf_place_record(w, lf, dir, ino, DT_REG, true, &reused);
	if (ret)
		return ret;
	lf->other = ino;
	snprintf(lf->detail, sizeof(lf->detail),
		 "entry 'dangling-%llu' (%s record) added to directory %llu "
		 "naming free inode %llu", (unsigned long long)ino,
		 reused ? "reused" : "new", (unsigned long long)dir,
		 (unsigned long long)ino);
	return 0;
}

/* A data page (of ino when given) or a free page, by rng. */
static int lf_bitmap(struct walk *w, struct dg_lfault *lf, uint64_t ino,
		     bool missing, uint64_t *rng)
{
	struct dg_vol *vol = w->vol;
	uint64_t lo = dg_alloc_meta_vpns(vol), n = w->vpns - lo, start, v = 0;
	struct dg_lf_write *x;
	bool found = false;
	uint64_t bvpn;
	uint32_t boff;
	uint8_t byte;

	if (!missing && ino)
		return -EINVAL;
	start = lf_rnd(rng) % n;
	for (uint64_t i = 0; i < n && !found; i++) {
		bool on;

		v = lo + (start + i) % n;
		on = dg_vpn_allocated(vol, v);
		if (missing)
			found = on && dg_walk_cls(w, v) == DG_PC_FILE &&
				(ino ? dg_walk_owner(w, v) == ino
				     : lf_plain_file(w, dg_walk_owner(w, v),
						     UINT32_MAX));
		else
			found = !on && dg_walk_cls(w, v) == DG_PC_FREE;
	}
	if (!found)
		return -ENOENT;
	dg_alloc_bit(vol, v, &bvpn, &boff, &byte);
	x = lf_add(lf, bvpn, boff, 1, "allocation");
	x->data[0] = byte ^ (uint8_t)(1u << (v % 8));
	lf->vpn = (int64_t)v;
	lf->ino = missing ? dg_walk_owner(w, v) : 0;
	if (missing)
		snprintf(lf->detail, sizeof(lf->detail),
			 "bit of vpn %llu (used by inode %llu) cleared",
			 (unsigned long long)v, (unsigned long long)lf->ino);
	else
		snprintf(lf->detail, sizeof(lf->detail),
			 "bit of free vpn %llu set", (unsigned long long)v);
	return 0;
}

/* A file's extended attribute page claims more bytes than a page holds:
 * the page verifies, its records cannot be parsed (EUCLEAN inside). */
static int lf_xattr(struct walk *w, struct dg_lfault *lf, uint64_t ino,
		    uint64_t *rng)
{
	uint64_t n = 0, k, f = 0;
	uint32_t used = DG_PAGE_SIZE + 4;
	struct dg_lf_write *x;

	for (uint64_t i = 2; i < w->icap; i++)
		n += (!ino || i == ino) && lf_plain_file(w, i, UINT32_MAX) &&
		     w->in[i].d.xattr_vpn;
	if (!n)
		return -ENOENT;
	k = lf_rnd(rng) % n;
	for (uint64_t i = 2; i < w->icap && !f; i++)
		if ((!ino || i == ino) && lf_plain_file(w, i, UINT32_MAX) &&
		    w->in[i].d.xattr_vpn && k-- == 0)
			f = i;
	lf->ino = f;
	x = lf_add(lf, w->in[f].d.xattr_vpn,
		   offsetof(struct dg_dxattr_hdr, used), sizeof(used), "xattr");
	memcpy(x->data, &used, sizeof(used));
	snprintf(lf->detail, sizeof(lf->detail),
		 "inode %llu: xattr page %llu says %u bytes are used",
		 (unsigned long long)f,
		 (unsigned long long)w->in[f].d.xattr_vpn, used);
	return 0;
}

/* A write of len bytes at offset field of the record naming a plain
 * file (ino, or one chosen by rng), its file, directory and name noted
 * in lf; NULL when there is no such record. */
static struct dg_lf_write *lf_record_field(struct walk *w,
					   struct dg_lfault *lf, uint64_t ino,
					   uint64_t *rng, uint32_t field,
					   uint32_t len,
					   const struct went **ep)
{
	uint64_t f = lf_pick_file(w, ino, UINT32_MAX, UINT64_MAX, rng), vpn;
	const struct went *e = f ? lf_entry_of(w, f) : NULL;

	if (!e)
		return NULL;
	dg_walk_ext_lookup(&w->in[e->dir], e->fpage, &vpn);
	if (!vpn)
		return NULL;
	lf->ino = f;
	lf->dir = e->dir;
	snprintf(lf->name, sizeof(lf->name), "%s", e->name);
	*ep = e;
	return lf_add(lf, vpn, e->off + field, len, "directory");
}

/* "type": the entry of a plain file says it is a symbolic link. */
static int lf_type(struct walk *w, struct dg_lfault *lf, uint64_t ino,
		   uint64_t *rng)
{
	const struct went *e;
	struct dg_lf_write *x = lf_record_field(
		w, lf, ino, rng, offsetof(struct dg_ddirent, type), 1, &e);

	if (!x)
		return -ENOENT;
	x->data[0] = DT_LNK;	/* the on-media type is the DT_ value */
	lf->before = e->type;
	lf->after = DT_LNK;
	snprintf(lf->detail, sizeof(lf->detail),
		 "entry '%s' of directory %llu: type %u -> %u (a symlink's)",
		 e->name, (unsigned long long)e->dir, e->type, DT_LNK);
	return 0;
}

/* A directory below another directory, consistent, with one name. */
static bool lf_nested_dir(const struct walk *w, uint64_t ino)
{
	const struct wino *wi = &w->in[ino];

	return ino > DG_ROOT_INO && ino < w->icap && wi->used && !wi->bad &&
	       wi->reached && S_ISDIR(wi->d.mode) && wi->refs == 1 &&
	       wi->d.parent != DG_ROOT_INO &&
	       wi->d.parent == wi->first_parent;
}

/* "parent": a nested directory (ino, or one chosen by rng) names the
 * root as its parent. */
static int lf_parent(struct walk *w, struct dg_lfault *lf, uint64_t ino,
		     uint64_t *rng)
{
	uint64_t n = 0, k, dir = 0;
	struct dg_dinode d;

	if (ino) {
		if (!lf_nested_dir(w, ino))
			return -ENOENT;
		dir = ino;
	} else {
		for (uint64_t i = DG_ROOT_INO + 1; i < w->icap; i++)
			n += lf_nested_dir(w, i);
		if (!n)
			return -ENOENT;
		k = lf_rnd(rng) % n;
		for (uint64_t i = DG_ROOT_INO + 1; !dir && i < w->icap; i++)
			if (lf_nested_dir(w, i) && k-- == 0)
				dir = i;
	}
	d = w->in[dir].d;
	lf->ino = dir;
	lf->before = d.parent;
	lf->after = d.parent = DG_ROOT_INO;
	lf_inode(w, lf, dir, &d);
	snprintf(lf->detail, sizeof(lf->detail),
		 "directory %llu: parent %llu -> %llu",
		 (unsigned long long)dir, (unsigned long long)lf->before,
		 (unsigned long long)lf->after);
	return 0;
}

/* "mode": a plain file's inode (ino, or one chosen by rng) gets a file
 * type no file has (every S_IFMT bit set). */
static int lf_mode(struct walk *w, struct dg_lfault *lf, uint64_t ino,
		   uint64_t *rng)
{
	uint64_t f = lf_pick_file(w, ino, UINT32_MAX, UINT64_MAX, rng);
	struct dg_dinode d;

	if (!f)
		return -ENOENT;
	d = w->in[f].d;
	lf->ino = f;
	lf->before = d.mode;
	d.mode |= S_IFMT;
	lf->after = d.mode;
	lf_inode(w, lf, f, &d);
	snprintf(lf->detail, sizeof(lf->detail), "inode %llu: mode %#llo -> "
		 "%#llo", (unsigned long long)f,
		 (unsigned long long)lf->before, (unsigned long long)lf->after);
	return 0;
}

/* "record": the record naming a plain file gets a length no record
 * has (3: not a multiple of 8). */
static int lf_record(struct walk *w, struct dg_lfault *lf, uint64_t ino,
		     uint64_t *rng)
{
	const uint16_t bad = 3;
	const struct went *e;
	struct dg_lf_write *x = lf_record_field(
		w, lf, ino, rng, offsetof(struct dg_ddirent, reclen),
		sizeof(bad), &e);

	if (!x)
		return -ENOENT;
	memcpy(x->data, &bad, sizeof(bad));
	lf->after = bad;
	snprintf(lf->detail, sizeof(lf->detail),
		 "record of entry '%s' in directory %llu: length %u",
		 e->name, (unsigned long long)e->dir, bad);
	return 0;
}

/* A directory other than the root, consistent, with one name. */
static bool lf_plain_dir(const struct walk *w, uint64_t ino)
{
	const struct wino *wi = &w->in[ino];

	return ino > DG_ROOT_INO && ino < w->icap && wi->used && !wi->bad &&
	       wi->reached && S_ISDIR(wi->d.mode) && wi->refs == 1 &&
	       wi->d.parent == wi->first_parent;
}

/* "multi": a directory (ino, or one chosen by rng) gets a second name,
 * link-INO, at the tail of the directory that holds its first: the
 * walk meets the first name first and keeps it. */
static int lf_multi(struct walk *w, struct dg_lfault *lf, uint64_t ino,
		    uint64_t *rng)
{
	uint64_t n = 0, k, dir = 0;
	bool reused;
	int ret;

	if (ino) {
		if (!lf_plain_dir(w, ino))
			return -ENOENT;
		dir = ino;
	} else {
		for (uint64_t i = DG_ROOT_INO + 1; i < w->icap; i++)
			n += lf_plain_dir(w, i);
		if (!n)
			return -ENOENT;
		k = lf_rnd(rng) % n;
		for (uint64_t i = DG_ROOT_INO + 1; !dir && i < w->icap; i++)
			if (lf_plain_dir(w, i) && k-- == 0)
				dir = i;
	}
	snprintf(lf->name, sizeof(lf->name), "link-%llu",
		 (unsigned long long)dir);
	ret = lf_place_record(w, lf, w->in[dir].first_parent, dir, DT_DIR,
			      false, &reused);
	if (ret)
		return ret;
	lf->ino = dir;
	snprintf(lf->detail, sizeof(lf->detail),
		 "entry 'link-%llu' added to directory %llu: a second name "
		 "of directory %llu", (unsigned long long)dir,
		 (unsigned long long)lf->dir, (unsigned long long)dir);
	return 0;
}

/* "extent-bad": a file's last extent (inline; the file ino, or one
 * chosen by rng) starts past the end of the volume. */
static int lf_extent_bad(struct walk *w, struct dg_lfault *lf, uint64_t ino,
			 uint64_t *rng)
{
	uint64_t f = lf_pick_file(w, ino, DG_INLINE_EXTENTS, UINT64_MAX, rng);
	struct dg_dextent *e;
	struct dg_dinode d;
	uint32_t k;

	if (!f)
		return -ENOENT;
	d = w->in[f].d;
	k = d.nextents - 1;
	e = &d.inl[k];
	lf->ino = f;
	lf->fpage = e->fpage;
	lf->pages = e->len;
	lf->before = e->vpn;
	lf->after = e->vpn = w->vpns;
	lf_inode(w, lf, f, &d);
	snprintf(lf->detail, sizeof(lf->detail),
		 "inode %llu extent %u (file pages %llu+%llu): vpn %llu -> "
		 "%llu, past the end of the volume", (unsigned long long)f, k,
		 (unsigned long long)lf->fpage, (unsigned long long)lf->pages,
		 (unsigned long long)lf->before, (unsigned long long)lf->after);
	return 0;
}

/* "remap-bad": a file's remap page (the file ino, or one chosen by rng,
 * among those that have one) names another file as its owner: the
 * page verifies, dg_dremap_check() refuses it. */
static int lf_remap_bad(struct walk *w, struct dg_lfault *lf, uint64_t ino,
			uint64_t *rng)
{
	uint64_t n = 0, k, f = 0, owner;
	struct dg_lf_write *x;

	for (uint64_t i = 2; i < w->icap; i++)
		n += (!ino || i == ino) && lf_plain_file(w, i, UINT32_MAX) &&
		     w->in[i].d.remap_vpn;
	if (!n)
		return -ENOENT;
	k = lf_rnd(rng) % n;
	for (uint64_t i = 2; i < w->icap && !f; i++)
		if ((!ino || i == ino) && lf_plain_file(w, i, UINT32_MAX) &&
		    w->in[i].d.remap_vpn && k-- == 0)
			f = i;
	owner = f + 1;
	lf->ino = f;
	lf->vpn = (int64_t)w->in[f].d.remap_vpn;
	lf->before = f;
	lf->after = owner;
	x = lf_add(lf, w->in[f].d.remap_vpn, offsetof(struct dg_dremap, ino),
		   sizeof(owner), "remap");
	memcpy(x->data, &owner, sizeof(owner));
	snprintf(lf->detail, sizeof(lf->detail),
		 "inode %llu: remap page %llu says it is inode %llu's",
		 (unsigned long long)f,
		 (unsigned long long)w->in[f].d.remap_vpn,
		 (unsigned long long)owner);
	return 0;
}

/*
 * Every sub-kind, by target. The first ones of a target (by_seed) are
 * what seed % (their number) picks when none is named; the rest are
 * planned only when named (--sub-kind), so that a sub-kind added later
 * changes what no seed plans (golden tests and campaigns name seeds).
 * plan NULL: planned in dg_check_lfault() below, by its index.
 */
typedef int (*lf_plan_fn)(struct walk *w, struct dg_lfault *lf,
			  uint64_t ino, uint64_t *rng);
static const struct lf_sub {
	enum dg_lf_target target;
	const char *kind;
	bool by_seed;
	lf_plan_fn plan;
} lf_subs[] = {
	{ DG_LF_INODE, "nlink+1", true, NULL },
	{ DG_LF_INODE, "nlink-1", true, NULL },
	{ DG_LF_INODE, "parent", true, lf_parent },
	{ DG_LF_INODE, "mode", true, lf_mode },
	{ DG_LF_DIRECTORY, "orphan", true, NULL },
	{ DG_LF_DIRECTORY, "dangling", true, NULL },
	{ DG_LF_DIRECTORY, "type", true, lf_type },
	{ DG_LF_DIRECTORY, "record", true, lf_record },
	{ DG_LF_DIRECTORY, "multi", false, lf_multi },
	{ DG_LF_ALLOCATION, "bitmap-missing", true, NULL },
	{ DG_LF_ALLOCATION, "bitmap-leak", true, NULL },
	{ DG_LF_EXTENT, "extent-dup", true, NULL },
	{ DG_LF_EXTENT, "blocks", true, NULL },
	{ DG_LF_EXTENT, "extent-bad", false, lf_extent_bad },
	{ DG_LF_EXTENT, "remap-bad", false, lf_remap_bad },
	{ DG_LF_XATTR, "xattr-garbage", true, NULL },
};
#define LF_NSUBS (sizeof(lf_subs) / sizeof(lf_subs[0]))

const char *dg_lfault_kind(enum dg_lf_target target, unsigned i)
{
	for (unsigned s = 0; s < LF_NSUBS; s++)
		if (lf_subs[s].target == target && i-- == 0)
			return lf_subs[s].kind;
	return NULL;
}

/* The sub-kind of target named kind, or, kind NULL, the one seed picks;
 * NULL when target has no such sub-kind. *idx: its index in target. */
static const struct lf_sub *lf_sub_find(enum dg_lf_target target,
					const char *kind, uint64_t seed,
					unsigned *idx)
{
	unsigned n = 0, seeded = 0;

	for (unsigned s = 0; s < LF_NSUBS; s++)
		seeded += lf_subs[s].target == target && lf_subs[s].by_seed;
	for (unsigned s = 0; s < LF_NSUBS; s++) {
		const struct lf_sub *x = &lf_subs[s];

		if (x->target != target)
			continue;
		if (kind ? !strcmp(kind, x->kind)
			 : x->by_seed && n == seed % seeded) {
			*idx = n;
			return x;
		}
		n++;
	}
	return NULL;
}

int dg_check_lfault(struct dg_vol *vol, enum dg_lf_target target,
		    uint64_t ino, uint64_t seed, const char *kind,
		    struct dg_lfault *lf)
{
	struct walk w = { .vol = vol, .classify_only = true };
	uint64_t rng = seed, f;
	const struct lf_sub *sk;
	unsigned sub;
	struct dg_dinode d;
	int ret;

	memset(lf, 0, sizeof(*lf));
	lf->vpn = -1;
	sk = lf_sub_find(target, kind, seed, &sub);
	if (!sk)
		return -EINVAL;
	if (dg_vol_read_only(vol))
		return -EROFS;
	ret = dg_walk_load(&w);
	if (ret)
		goto out;
	dg_walk_check_entries(&w);
	dg_walk_reach(&w);
	if (w.problems) {
		ret = -EUCLEAN; /* damaged already: plan nothing on it */
		goto out;
	}
	ret = -ENOENT;
	lf->kind = sk->kind;
	if (sk->plan) {
		ret = sk->plan(&w, lf, ino, &rng);
		goto out;
	}
	switch (target) {
	case DG_LF_INODE:
		f = lf_pick_file(&w, ino, UINT32_MAX, UINT64_MAX, &rng);
		if (!f)
			break;
		d = w.in[f].d;
		lf->ino = f;
		lf->before = d.nlink;
		d.nlink = sub ? d.nlink - 1 : d.nlink + 1;
		lf->after = d.nlink;
		lf_inode(&w, lf, f, &d);
		snprintf(lf->detail, sizeof(lf->detail),
			 "inode %llu: link count %llu -> %llu",
			 (unsigned long long)f,
			 (unsigned long long)lf->before,
			 (unsigned long long)lf->after);
		ret = 0;
		break;
	case DG_LF_DIRECTORY:
		if (sub == 0) {
			const struct went *e;
			struct dg_lf_write *x;
			uint64_t vpn, zero = 0;

			f = lf_pick_file(&w, ino, UINT32_MAX, UINT64_MAX, &rng);
			e = f ? lf_entry_of(&w, f) : NULL;
			if (!e)
				break;
			dg_walk_ext_lookup(&w.in[e->dir], e->fpage, &vpn);
			if (!vpn)
				break;
			x = lf_add(lf, vpn, e->off +
				   (uint32_t)offsetof(struct dg_ddirent, ino),
				   sizeof(zero), "directory");
			memcpy(x->data, &zero, sizeof(zero));
			lf->ino = f;
			lf->dir = e->dir;
			snprintf(lf->name, sizeof(lf->name), "%s", e->name);
			snprintf(lf->detail, sizeof(lf->detail),
				 "entry '%s' of directory %llu, the only name "
				 "of inode %llu, removed", e->name,
				 (unsigned long long)e->dir,
				 (unsigned long long)f);
			ret = 0;
			break;
		}
		if (ino) {
			const struct went *e;

			if (ino >= w.icap || !w.in[ino].used)
				break;
			if (!S_ISDIR(w.in[ino].d.mode)) {
				e = lf_entry_of(&w, ino);
				if (!e)
					break;
				ino = e->dir;
			}
			ret = lf_dangling(&w, lf, ino, &rng);
			break;
		}
		/* The root first, then any directory with room. */
		for (uint64_t i = DG_ROOT_INO; i < w.icap && ret; i++)
			if (w.in[i].used && w.in[i].reached &&
			    S_ISDIR(w.in[i].d.mode))
				ret = lf_dangling(&w, lf, i, &rng);
		break;
	case DG_LF_ALLOCATION:
		ret = lf_bitmap(&w, lf, ino, !sub, &rng);
		break;
	case DG_LF_XATTR:
		ret = lf_xattr(&w, lf, ino, &rng);
		break;
	case DG_LF_EXTENT:
		if (sub == 1) {
			f = lf_pick_file(&w, ino, UINT32_MAX, UINT64_MAX, &rng);
			if (!f)
				break;
			d = w.in[f].d;
			lf->ino = f;
			lf->before = d.blocks;
			lf->after = ++d.blocks;
			lf_inode(&w, lf, f, &d);
			snprintf(lf->detail, sizeof(lf->detail),
				 "inode %llu: block count %llu -> %llu",
				 (unsigned long long)f,
				 (unsigned long long)lf->before,
				 (unsigned long long)lf->after);
			ret = 0;
			break;
		}
		{
			uint64_t b = 0;
			uint32_t k;
			struct dg_dextent *e;

			/* A (higher inode, so the walk meets it second and
			 * it is the one repaired) takes B's first pages. */
			f = lf_pick_file(&w, ino, DG_INLINE_EXTENTS,
					 UINT64_MAX, &rng);
			if (f)
				b = lf_pick_file(&w, 0, UINT32_MAX, f, &rng);
			if (!f || !b)
				break;
			d = w.in[f].d;
			k = d.nextents - 1;
			e = &d.inl[k];
			lf->ino = f;
			lf->other = b;
			lf->fpage = e->fpage;
			lf->pages = e->len;
			e->vpn = w.in[b].ext[0].vpn;
			if (e->len > w.in[b].ext[0].len)
				e->len = w.in[b].ext[0].len;
			lf_inode(&w, lf, f, &d);
			snprintf(lf->detail, sizeof(lf->detail),
				 "inode %llu extent %u (file pages %llu+%llu) "
				 "remapped onto vpn %llu+%u of inode %llu",
				 (unsigned long long)f, k,
				 (unsigned long long)lf->fpage,
				 (unsigned long long)lf->pages,
				 (unsigned long long)e->vpn, e->len,
				 (unsigned long long)b);
			ret = 0;
		}
		break;
	default:
		ret = -EINVAL;
	}
out:
	dg_walk_free(&w);
	return ret;
}
