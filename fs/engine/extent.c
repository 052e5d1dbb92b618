// SPDX-License-Identifier: MIT
/* extent.c -- file extent maps: lookup, allocate, punch, store, load */
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

/* Index of the first extent that ends after fpage (may be next). */
static uint32_t ext_search(const struct dg_inode *ip, uint64_t fpage)
{
	uint32_t lo = 0, hi = ip->next;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		const struct dg_ext *e = &ip->ext[mid];

		if (e->fpage + e->len <= fpage)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void dg_ext_lookup(const struct dg_inode *ip, uint64_t fpage, uint64_t *vpn,
		   uint64_t *run)
{
	uint32_t i = ext_search(ip, fpage);

	if (i == ip->next) {
		*vpn = 0;
		*run = UINT64_MAX;
	} else if (ip->ext[i].fpage > fpage) {
		*vpn = 0;
		*run = ip->ext[i].fpage - fpage;
	} else {
		*vpn = ip->ext[i].vpn + (fpage - ip->ext[i].fpage);
		*run = ip->ext[i].fpage + ip->ext[i].len - fpage;
	}
}

static int ext_reserve(struct dg_inode *ip, uint32_t n)
{
	struct dg_ext *e;
	uint32_t cap;

	if (n <= ip->capext)
		return 0;
	cap = ip->capext ? ip->capext * 2 : 8;
	while (cap < n)
		cap *= 2;
	e = realloc(ip->ext, cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	ip->ext = e;
	ip->capext = cap;
	return 0;
}

/* Insert a mapping that overlaps nothing, merging with neighbours that
 * continue it on the media. Returns the lowest index changed. */
static int ext_insert(struct dg_inode *ip, uint64_t fpage, uint64_t vpn,
		      uint32_t len, uint32_t *changed)
{
	uint32_t i = ext_search(ip, fpage);
	struct dg_ext *prev = i ? &ip->ext[i - 1] : NULL;
	int ret;

	if (prev && prev->fpage + prev->len == fpage &&
	    prev->vpn + prev->len == vpn && prev->len + (uint64_t)len < UINT32_MAX) {
		prev->len += len;
		*changed = i - 1;
		return 0;
	}
	ret = ext_reserve(ip, ip->next + 1);
	if (ret)
		return ret;
	memmove(&ip->ext[i + 1], &ip->ext[i],
		(ip->next - i) * sizeof(*ip->ext));
	ip->ext[i] = (struct dg_ext){ fpage, vpn, len };
	ip->next++;
	*changed = i;
	return 0;
}

/* Where extent index i lives on the media. */
static void ext_where(const struct dg_inode *ip, uint32_t i, uint64_t *vpn,
		      uint32_t *off)
{
	uint32_t j = i - DG_INLINE_EXTENTS;

	*vpn = ip->emap[j / DG_EMAP_PER_PAGE];
	*off = (uint32_t)offsetof(struct dg_demap, e) +
	       (j % DG_EMAP_PER_PAGE) * (uint32_t)sizeof(struct dg_dextent);
}

static struct dg_dextent ext_d(const struct dg_ext *e)
{
	return (struct dg_dextent){ e->fpage, e->vpn, e->len, 0 };
}

/* Grow or shrink the chain of extent pages to fit next extents. */
static int chain_fit(struct dg_txn *txn, struct dg_inode *ip)
{
	uint32_t need = ip->next > DG_INLINE_EXTENTS
				? (ip->next - DG_INLINE_EXTENTS +
				   DG_EMAP_PER_PAGE - 1) / DG_EMAP_PER_PAGE
				: 0;
	int ret;

	while (ip->nemap < need) {
		uint64_t vpn, got, *n;
		struct dg_demap hdr = { 0 };

		ret = dg_alloc(txn, ip->nemap ? ip->emap[ip->nemap - 1] + 1 : 0,
			       1, &vpn, &got);
		if (ret)
			return ret;
		n = realloc(ip->emap, (ip->nemap + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		ip->emap = n;
		ret = dg_txn_write(txn, vpn, 0, &hdr,
				   offsetof(struct dg_demap, e));
		if (ret)
			return ret;
		/* Link it from the previous page (or the inode). */
		if (ip->nemap)
			ret = dg_txn_write(txn, ip->emap[ip->nemap - 1], 0, &vpn,
					   sizeof(vpn));
		else
			ip->d.emap_vpn = vpn;
		if (ret)
			return ret;
		ip->emap[ip->nemap++] = vpn;
		ip->d.blocks++;
	}
	while (ip->nemap > need) {
		uint64_t zero = 0;

		ret = dg_free(txn, ip->emap[--ip->nemap], 1);
		if (ret)
			return ret;
		ip->d.blocks--;
		if (ip->nemap)
			ret = dg_txn_write(txn, ip->emap[ip->nemap - 1], 0,
					   &zero, sizeof(zero));
		else
			ip->d.emap_vpn = 0;
		if (ret)
			return ret;
	}
	return 0;
}

/* Write extents [from, next) and the count; the inode record carries
 * the inline ones and is stored by the caller. */
static int ext_store(struct dg_fs *fs, struct dg_txn *txn,
		     struct dg_inode *ip, uint32_t from)
{
	int ret = chain_fit(txn, ip);

	(void)fs;

	if (ret)
		return ret;
	ip->d.nextents = ip->next;
	memset(ip->d.inl, 0, sizeof(ip->d.inl));
	for (uint32_t i = 0; i < ip->next && i < DG_INLINE_EXTENTS; i++)
		ip->d.inl[i] = ext_d(&ip->ext[i]);
	if (from < DG_INLINE_EXTENTS)
		from = DG_INLINE_EXTENTS;
	while (from < ip->next) {
		struct dg_dextent buf[DG_EMAP_PER_PAGE];
		uint32_t n = 0, off;
		uint64_t vpn;

		/* One range per chain page. */
		ext_where(ip, from, &vpn, &off);
		do {
			buf[n++] = ext_d(&ip->ext[from++]);
		} while (from < ip->next &&
			 (from - DG_INLINE_EXTENTS) % DG_EMAP_PER_PAGE);
		ret = dg_txn_write(txn, vpn, off, buf,
				   n * (uint32_t)sizeof(*buf));
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
	uint32_t lowest = UINT32_MAX;
	uint64_t hint = 0;
	uint32_t i = ext_search(ip, fpage);
	int ret = 0;

	/* Continue the previous extent on the media when it is adjacent. */
	if (i > 0)
		hint = ip->ext[i - 1].vpn + (fpage - ip->ext[i - 1].fpage);
	while (len) {
		uint64_t start, got;
		uint32_t changed;

		ret = dg_alloc(txn, hint, len > (1u << 20) ? (1u << 20) : len,
			       &start, &got);
		if (ret)
			break;
		ret = ext_insert(ip, fpage, start, (uint32_t)got, &changed);
		if (ret)
			break;
		if (changed < lowest)
			lowest = changed;
		if (fresh)
			fresh(arg, fpage, start, got);
		ip->d.blocks += got;
		fpage += got;
		len -= got;
		hint = start + got;
	}
	if (lowest != UINT32_MAX) {
		int r = ext_store(fs, txn, ip, lowest);

		if (!ret)
			ret = r;
	}
	return ret;
}

int dg_ext_punch(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		 uint64_t fpage, uint64_t len)
{
	uint64_t end = fpage + len;
	uint32_t i = ext_search(ip, fpage), first = i;
	bool changed = false;
	int ret = 0;

	while (i < ip->next && ip->ext[i].fpage < end) {
		struct dg_ext *e = &ip->ext[i];
		uint64_t s = e->fpage > fpage ? e->fpage : fpage;
		uint64_t t = e->fpage + e->len < end ? e->fpage + e->len : end;

		ret = dg_free(txn, e->vpn + (s - e->fpage), t - s);
		if (ret)
			return ret;
		ip->d.blocks -= t - s;
		changed = true;
		if (s > e->fpage && t < e->fpage + e->len) {
			/* A hole in the middle splits the extent. */
			struct dg_ext tail = { t, e->vpn + (t - e->fpage),
					       (uint32_t)(e->fpage + e->len - t) };

			e->len = (uint32_t)(s - e->fpage);
			ret = ext_reserve(ip, ip->next + 1);
			if (ret)
				return ret;
			e = &ip->ext[i];
			memmove(&ip->ext[i + 2], &ip->ext[i + 1],
				(ip->next - i - 1) * sizeof(*ip->ext));
			ip->ext[i + 1] = tail;
			ip->next++;
			break;
		} else if (s > e->fpage) {
			e->len = (uint32_t)(s - e->fpage);
			i++;
		} else if (t < e->fpage + e->len) {
			e->vpn += t - e->fpage;
			e->len -= (uint32_t)(t - e->fpage);
			e->fpage = t;
			i++;
		} else {
			memmove(e, e + 1, (ip->next - i - 1) * sizeof(*e));
			ip->next--;
		}
	}
	return changed ? ext_store(fs, txn, ip, first) : 0;
}

int dg_ext_load(struct dg_fs *fs, struct dg_inode *ip)
{
	struct dg_demap *pg = NULL;
	uint32_t n = ip->d.nextents;
	uint64_t vpn = ip->d.emap_vpn, prev_end = 0;
	int ret;

	ip->next = 0;
	ip->nemap = 0;

	ret = ext_reserve(ip, n ? n : 1);
	if (ret)
		return ret;
	if (n > DG_INLINE_EXTENTS) {
		pg = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
		if (!pg)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct dg_dextent *d;
		uint32_t j = i - DG_INLINE_EXTENTS;

		if (i < DG_INLINE_EXTENTS) {
			d = &ip->d.inl[i];
		} else {
			if (j % DG_EMAP_PER_PAGE == 0) {
				uint64_t *m;

				if (vpn < 1 || vpn >= fs->vol->vpns) {
					ret = DG_CORRUPT(fs->vol, "inode %" PRIu64
						": extent chain broken", ip->ino);
					goto out;
				}
				ret = dg_read(fs->vol, vpn, 1, pg);
				if (ret)
					goto out;
				m = realloc(ip->emap, (ip->nemap + 1) * sizeof(*m));
				if (!m) {
					ret = -ENOMEM;
					goto out;
				}
				ip->emap = m;
				ip->emap[ip->nemap++] = vpn;
				vpn = pg->next_vpn;
			}
			d = &pg->e[j % DG_EMAP_PER_PAGE];
		}
		if (d->len == 0 || d->vpn < 1 || d->vpn >= fs->vol->vpns ||
		    d->len > fs->vol->vpns - d->vpn || d->fpage < prev_end ||
		    d->fpage > (UINT64_MAX >> DG_PAGE_SHIFT) - d->len) {
			ret = DG_CORRUPT(fs->vol, "inode %" PRIu64 ": bad extent "
					 "%u", ip->ino, i);
			goto out;
		}
		ip->ext[i] = (struct dg_ext){ d->fpage, d->vpn, d->len };
		prev_end = d->fpage + d->len;
	}
	ip->next = n;
	ret = 0;
out:
	free(pg);
	return ret;
}
