// SPDX-License-Identifier: MIT
/*
 * itable.c -- where the inode table's chunks are: the first ones listed in
 * the fs root record, the rest through the chunk map
 * (DG_FEAT_INCOMPAT_BIG_ITABLE, format.h "Inode table").
 *
 * Why a map of pages rather than a longer list: the root record has room
 * for 470 vpns and no more (it shares vpn 0 with the volume root). A map
 * directory page naming up to 512 map pages of 512 chunk vpns each takes
 * the table to 268 M inodes at the cost of one page per 512 chunks, and
 * a volume that never needs it keeps the old form. The whole map is read
 * at mount into fs->chunk_vpn, so finding an inode costs an array index.
 */
#include <stdlib.h>
#include <string.h>

#include "fscheck.h"
#include "fsys_i.h"

uint32_t dg_itable_direct(const struct dg_dfsroot *r)
{
	return r->direct ? r->direct : DG_MAX_ICHUNKS;
}

int dg_itable_root_check(struct dg_vol *vol, const struct dg_dfsroot *r)
{
	uint32_t direct = dg_itable_direct(r);

	if (r->magic != DG_FS_MAGIC || r->nchunks == 0 ||
	    direct > DG_MAX_ICHUNKS)
		return -EUCLEAN;
	if (r->nchunks <= direct)
		return 0;
	if (!dg_vol_has_incompat(vol, DG_FEAT_INCOMPAT_BIG_ITABLE) ||
	    r->icmap_vpn == 0 || r->icmap_vpn >= dg_vol_vpns(vol) ||
	    r->nchunks - direct > DG_ICMAP_PER_PAGE * DG_ICMAP_PER_PAGE)
		return -EUCLEAN;
	return 0;
}

/* Read one map page into pg, its entries checked for range. */
static int read_map_page(struct dg_vol *vol, uint64_t vpn, uint32_t used,
			 struct dg_dicmap *pg)
{
	int ret;

	if (vpn == 0 || vpn >= dg_vol_vpns(vol))
		return -EUCLEAN;
	ret = dg_read(vol, vpn, 1, pg);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < used; i++)
		if (pg->vpn[i] == 0 || pg->vpn[i] >= dg_vol_vpns(vol))
			return -EUCLEAN;
	return 0;
}

int dg_itable_read_map(struct dg_vol *vol, const struct dg_dfsroot *r,
		       uint64_t *chunk_vpn, uint64_t *map_vpn,
		       uint32_t *nmap, uint64_t *bad_vpn)
{
	uint32_t direct = dg_itable_direct(r), mapped, npages;
	struct dg_dicmap *dir = NULL, *pg = NULL;
	int ret = 0;

	*nmap = 0;
	for (uint32_t c = 0; c < r->nchunks && c < direct; c++)
		chunk_vpn[c] = r->chunks[c];
	if (r->nchunks <= direct)
		return 0;
	mapped = r->nchunks - direct;
	npages = (mapped + DG_ICMAP_PER_PAGE - 1) / DG_ICMAP_PER_PAGE;
	dir = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	pg = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!dir || !pg) {
		ret = -ENOMEM;
		goto out;
	}
	*bad_vpn = r->icmap_vpn;
	ret = read_map_page(vol, r->icmap_vpn, npages, dir);
	if (ret)
		goto out;
	map_vpn[(*nmap)++] = r->icmap_vpn;
	for (uint32_t m = 0; m < npages; m++) {
		uint32_t first = m * DG_ICMAP_PER_PAGE;
		uint32_t n = mapped - first < DG_ICMAP_PER_PAGE
				     ? mapped - first
				     : DG_ICMAP_PER_PAGE;

		*bad_vpn = dir->vpn[m];
		ret = read_map_page(vol, dir->vpn[m], n, pg);
		if (ret)
			goto out;
		map_vpn[(*nmap)++] = dir->vpn[m];
		memcpy(chunk_vpn + direct + first, pg->vpn, n * sizeof(uint64_t));
	}
out:
	free(dir);
	free(pg);
	return ret;
}

/* Room for chunk index c in the in-core arrays (under ino_lock). */
static int reserve(struct dg_fs *fs, uint32_t c)
{
	uint32_t cap = fs->chunk_cap ? fs->chunk_cap : 64;
	uint64_t *v, *w;
	uint16_t *u;

	if (c < fs->chunk_cap)
		return 0;
	while (cap <= c)
		cap *= 2;
	/* Every array grown first, then their new tails cleared and
	 * chunk_cap moved: a failed realloc leaves some arrays longer than
	 * chunk_cap says (harmless, their tails cleared at the next try),
	 * never chunk_cap past one of them. */
	v = realloc(fs->chunk_vpn, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	fs->chunk_vpn = v;
	u = realloc(fs->chunk_used, cap * sizeof(*u));
	if (!u)
		return -ENOMEM;
	fs->chunk_used = u;
	w = realloc(fs->ino_used, (size_t)cap * DG_IUSED_WORDS * sizeof(*w));
	if (!w)
		return -ENOMEM;
	fs->ino_used = w;
	memset(u + fs->chunk_cap, 0, (cap - fs->chunk_cap) * sizeof(*u));
	memset(w + (size_t)fs->chunk_cap * DG_IUSED_WORDS, 0,
	       (size_t)(cap - fs->chunk_cap) * DG_IUSED_WORDS * sizeof(*w));
	fs->chunk_cap = cap;
	return 0;
}

int dg_itable_load(struct dg_fs *fs)
{
	uint64_t bad = 0;
	uint32_t nmap;
	int ret;

	if (dg_itable_root_check(fs->vol, &fs->root))
		return DG_CORRUPT(fs->vol, "filesystem root record");
	ret = reserve(fs, fs->root.nchunks);
	if (ret)
		return ret;
	ret = dg_itable_read_map(fs->vol, &fs->root, fs->chunk_vpn,
				 fs->icmap_vpn, &nmap, &bad);
	if (ret == -EUCLEAN)
		return DG_CORRUPT(fs->vol, "inode chunk map page at vpn %" PRIu64,
				  bad);
	return ret;
}

/* A new metadata page of the map holding first in entry 0. */
static int new_map_page(struct dg_txn *txn, uint64_t first, uint64_t *vpn)
{
	struct dg_dicmap pg = { .vpn = { first } };
	uint64_t got;
	int ret = dg_alloc_meta(txn, 0, 1, vpn, &got);

	return ret ? ret : dg_txn_write(txn, *vpn, 0, &pg, sizeof(pg));
}

/* Where the map starts for a table growing now: the root's word once
 * the map exists, else the test knob (dg_fs_test_itable_direct). */
static uint32_t direct_now(const struct dg_fs *fs)
{
	if (fs->root.direct || !fs->itable_direct)
		return dg_itable_direct(&fs->root);
	return fs->itable_direct;
}

int dg_fs_test_itable_direct(struct dg_fs *fs, uint32_t n)
{
	if (n == 0 || n > DG_MAX_ICHUNKS || n < fs->root.nchunks ||
	    fs->root.icmap_vpn)
		return -EINVAL;
	fs->itable_direct = n;
	return 0;
}

/*
 * Record chunk nchunks at start. Everything in core follows from
 * nchunks and the chunk index alone, so a create that fails before its
 * commit undoes a new chunk by putting nchunks back (namei.c): the next
 * one makes the same pages again.
 */
int dg_itable_add(struct dg_fs *fs, struct dg_txn *txn, uint64_t start)
{
	uint32_t c = fs->root.nchunks, direct = direct_now(fs);
	int ret;

	if (c >= direct + DG_ICMAP_PER_PAGE * DG_ICMAP_PER_PAGE)
		return -ENOSPC;
	ret = reserve(fs, c);
	if (ret)
		return ret;
	if (c < direct) {
		fs->root.chunks[c] = start;
	} else {
		uint32_t k = c - direct, m = k / DG_ICMAP_PER_PAGE,
			 s = k % DG_ICMAP_PER_PAGE;

		/* Durable on every device before any transaction that
		 * uses the form (format.h, "Features set on first use"). */
		ret = dg_vol_set_incompat(fs->vol, DG_FEAT_INCOMPAT_BIG_ITABLE);
		if (ret)
			return ret;
		if (s == 0)
			ret = new_map_page(txn, start, &fs->icmap_vpn[m + 1]);
		else
			ret = dg_txn_write(txn, fs->icmap_vpn[m + 1],
					   s * sizeof(uint64_t), &start,
					   sizeof(start));
		if (!ret && k == 0) {
			ret = new_map_page(txn, fs->icmap_vpn[1],
					   &fs->root.icmap_vpn);
			fs->root.direct = direct == DG_MAX_ICHUNKS ? 0 : direct;
		} else if (!ret && s == 0) {
			ret = dg_txn_write(txn, fs->root.icmap_vpn,
					   m * sizeof(uint64_t),
					   &fs->icmap_vpn[m + 1],
					   sizeof(uint64_t));
		}
		if (ret)
			return ret;
	}
	fs->chunk_vpn[c] = start;
	fs->chunk_used[c] = 0;
	memset(fs->ino_used + (size_t)c * DG_IUSED_WORDS, 0,
	       DG_IUSED_WORDS * sizeof(uint64_t));
	fs->root.nchunks++;
	return dg_txn_write(txn, 0, offsetof(struct dg_droot, fs), &fs->root,
			    sizeof(fs->root));
}

/*
 * statfs: the table may grow as long as there is room, so the inodes it
 * could hold are as many as the volume's pages would take as chunks (65
 * pages with their share of the map), up to the map's limit, and never
 * fewer than it has. A figure of the volume's size, not of its free
 * space: a file's data does not move f_ffree (under ino_lock).
 */
void dg_itable_counts(const struct dg_fs *fs, uint64_t vpns,
		      uint64_t *files, uint64_t *ffree)
{
	uint64_t have = fs->root.nchunks;
	uint64_t most = (uint64_t)direct_now(fs) +
			DG_ICMAP_PER_PAGE * DG_ICMAP_PER_PAGE;
	uint64_t fit = vpns / (DG_ITABLE_CHUNK_PAGES + 1);
	uint64_t chunks = fit < most ? fit : most;

	if (chunks < have)
		chunks = have;
	*files = chunks * DG_INODES_PER_CHUNK - 1; /* ino 0 */
	*ffree = *files > fs->inodes_used ? *files - fs->inodes_used : 0;
}

int dg_itable_inspect(struct dg_vol *vol, struct dg_itable_info *info)
{
	struct dg_droot *root = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint64_t map[DG_ICMAP_PER_PAGE + 1], bad, *chunk_vpn = NULL;
	struct dg_dfsroot r;
	int ret;

	if (!root)
		return -ENOMEM;
	ret = dg_read(vol, 0, 1, root);
	memcpy(&r, root->fs, sizeof(r));
	free(root);
	if (ret)
		return ret;
	if (dg_itable_root_check(vol, &r))
		return -EUCLEAN;
	chunk_vpn = calloc(r.nchunks, sizeof(*chunk_vpn));
	if (!chunk_vpn)
		return -ENOMEM;
	ret = dg_itable_read_map(vol, &r, chunk_vpn, map, &info->map_pages,
				 &bad);
	free(chunk_vpn);
	info->chunks = r.nchunks;
	info->direct = r.nchunks < dg_itable_direct(&r)
			       ? r.nchunks
			       : dg_itable_direct(&r);
	return ret;
}

void dg_ino_where(const struct dg_fs *fs, uint64_t ino, uint64_t *vpn,
		  uint32_t *off)
{
	uint64_t slot = ino % DG_INODES_PER_CHUNK;

	*vpn = dg_itable_chunk(fs, ino / DG_INODES_PER_CHUNK) +
	       slot / DG_INODES_PER_PAGE;
	*off = (uint32_t)(slot % DG_INODES_PER_PAGE) * DG_INODE_SIZE;
}

bool dg_ino_lost(const struct dg_fs *fs, uint64_t ino)
{
	for (unsigned i = 0; i < fs->nlost; i++)
		if (ino >= fs->lost_ino[i] &&
		    ino < fs->lost_ino[i] + DG_INODES_PER_PAGE)
			return true;
	return false;
}
