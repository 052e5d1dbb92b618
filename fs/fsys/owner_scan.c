// SPDX-License-Identifier: MIT
/* owner_scan.c -- which file maps a data page, the thorough way: the
 * inodes in core first, then the inode table streamed off the media,
 * one chunk and one extent map page at a time, for the inodes not in
 * core. For the volume's registry of lost pages (lost_reg.c), whose
 * quick answer only knows the inodes in core; and whether one file
 * still maps a page an earlier answer gave it (fault reports), asked
 * of that file loaded. */
#include <stdlib.h>
#include <string.h>

#include "fsys_i.h"

/* Whether lp[i] is still to be placed. */
static bool open_slot(const struct dg_lost_page *lp)
{
	return lp->ino == 0;
}

/* Whether file page fpage reads from a record's page (rec[0, nrec)):
 * its home page is then not the file's data (format.h "Remap page"). */
static bool shadowed(const struct dg_dremap_rec *rec, uint32_t nrec,
		     uint64_t fpage)
{
	for (uint32_t i = 0; i < nrec; i++)
		if (rec[i].fpage == fpage)
			return true;
	return false;
}

/* Give the unplaced pages that extent maps to ino, but for the home
 * pages of records rec[0, nrec). */
static unsigned claim(struct dg_lost_page *lp, unsigned n, uint64_t ino,
		      uint64_t vpn, uint64_t len, uint64_t fpage,
		      const struct dg_dremap_rec *rec, uint32_t nrec)
{
	unsigned got = 0;

	for (unsigned i = 0; i < n; i++)
		if (open_slot(&lp[i]) && lp[i].vpn >= vpn &&
		    lp[i].vpn < vpn + len &&
		    !shadowed(rec, nrec, fpage + lp[i].vpn - vpn)) {
			lp[i].ino = ino;
			lp[i].fpage = fpage + lp[i].vpn - vpn;
			got++;
		}
	return got;
}

/* The records of ino's remap page off the media, into rec (*nrec; 0:
 * none); -EUCLEAN or -EIO when it is damaged or cannot be read. pg is
 * a page to read it into. */
static int scan_remap(struct dg_fs *fs, uint64_t ino,
		      const struct dg_dinode *d, void *pg,
		      struct dg_dremap_rec *rec, uint32_t *nrec)
{
	const struct dg_dremap *rp = pg;
	const char *why;
	int ret;

	*nrec = 0;
	if (!d->remap_vpn)
		return 0;
	if (!dg_vol_has_incompat(fs->vol, DG_FEAT_INCOMPAT_REMAP) ||
	    d->remap_vpn >= dg_vol_vpns(fs->vol))
		return -EUCLEAN;
	ret = dg_read(fs->vol, d->remap_vpn, 1, pg);
	if (!ret)
		ret = dg_dremap_check(rp, ino, fs->vol, nrec, &why);
	if (!ret)
		memcpy(rec, rp->rec, *nrec * sizeof(*rec));
	return ret;
}

/* The extents of one inode off the media, and its remap page's records:
 * a record's page is the file's at its file page, the home page it
 * stands in for no longer is. A map or remap page that cannot be read
 * or is damaged places nothing: the page stays unnamed, never reset. */
static unsigned scan_dinode(struct dg_fs *fs, uint64_t ino,
			    const struct dg_dinode *d, struct dg_demap *pg,
			    struct dg_lost_page *lp, unsigned n)
{
	struct dg_dremap_rec rec[DG_REMAP_PER_PAGE];
	struct dg_emap_reader r;
	const struct dg_dextent *e;
	unsigned got = 0;
	uint32_t nrec;
	int k;

	if (scan_remap(fs, ino, d, pg, rec, &nrec))
		return 0;
	for (uint32_t i = 0; i < nrec; i++)
		got += claim(lp, n, ino, rec[i].vpn, 1, rec[i].fpage, NULL, 0);
	dg_emap_begin(&r, fs->vol, d, pg);
	while ((k = dg_emap_next(&r, &e)) > 0)
		if (k != DG_EMAP_PAGE)
			got += claim(lp, n, ino, e->vpn, e->len, e->fpage, rec,
				     nrec);
	return got;
}

static bool in_core_now(struct dg_fs *fs, uint64_t ino)
{
	bool in;

	pthread_mutex_lock(&fs->ino_lock);
	in = dg_icache_peek(fs, ino) != NULL;
	pthread_mutex_unlock(&fs->ino_lock);
	return in;
}

/* Stream chunk c: each page read alone, so a lost inode table page
 * only hides its own inodes. in_core: skip those (already asked). */
static unsigned scan_chunk(struct dg_fs *fs, uint32_t c, uint8_t *page,
			   struct dg_demap *pg, struct dg_lost_page *lp,
			   unsigned n, bool in_core)
{
	uint64_t vpn = dg_itable_chunk(fs, c);
	unsigned got = 0;

	if (vpn < 1 || vpn + DG_ITABLE_CHUNK_PAGES > dg_vol_vpns(fs->vol))
		return 0;
	for (uint32_t p = 0; p < DG_ITABLE_CHUNK_PAGES; p++) {
		if (dg_read(fs->vol, vpn + p, 1, page))
			continue;
		for (uint32_t s = 0; s < DG_INODES_PER_PAGE; s++) {
			const struct dg_dinode *d =
				(const void *)(page + (size_t)s * DG_INODE_SIZE);
			uint64_t ino = (uint64_t)c * DG_INODES_PER_CHUNK +
				       (uint64_t)p * DG_INODES_PER_PAGE + s;

			if (!d->mode || ino == 0 ||
			    (in_core && in_core_now(fs, ino)) ||
			    dg_dinode_check(fs->vol, ino, d))
				continue;
			got += scan_dinode(fs, ino, d, pg, lp, n);
		}
	}
	return got;
}

int dg_fs_owners_on_media(struct dg_fs *fs, struct dg_lost_page *lp,
			  unsigned n, bool skip_in_core)
{
	uint8_t *page = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	struct dg_demap *pg = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	unsigned left = 0;

	if (!page || !pg) {
		free(page);
		free(pg);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++)
		left += open_slot(&lp[i]);
	for (uint32_t c = 0; c < fs->root.nchunks && left; c++)
		left -= scan_chunk(fs, c, page, pg, lp, n, skip_in_core);
	free(page);
	free(pg);
	return 0;
}

int dg_fs_resolve_owners(struct dg_fs *fs, struct dg_lost_page *lp,
			 unsigned n)
{
	struct dg_inode **ips = NULL;
	uint64_t in_core = 0, used;
	unsigned left = 0;
	int ret = 0;

	pthread_rwlock_rdlock(&fs->lock);
	for (unsigned i = 0; i < n; i++)
		lp[i].ino = 0;
	/* A list, for its locks are waited for: a load may come meanwhile,
	 * an eviction not (fs->lock). */
	pthread_mutex_lock(&fs->ino_lock);
	ret = dg_icache_list(fs, &ips, &in_core);
	pthread_mutex_unlock(&fs->ino_lock);
	if (ret) {
		pthread_rwlock_unlock(&fs->lock);
		return ret;
	}
	for (uint64_t k = 0; k < in_core; k++) {
		struct dg_inode *ip = ips[k];

		/* Its extents change under its lock (a write's leaf may be
		 * reallocated); waited for here, outside the registry's
		 * lock, in the order data operations take them. */
		pthread_rwlock_rdlock(&ip->lock);
		for (unsigned i = 0; i < n; i++)
			if (!lp[i].ino &&
			    dg_ext_owns(ip, lp[i].vpn, &lp[i].fpage))
				lp[i].ino = ip->ino;
		pthread_rwlock_unlock(&ip->lock);
	}
	free(ips);
	for (unsigned i = 0; i < n; i++)
		left += !lp[i].ino;
	pthread_mutex_lock(&fs->ino_lock);
	used = fs->inodes_used;
	pthread_mutex_unlock(&fs->ino_lock);
	/* The table off the media only when some inode is not in core:
	 * a metadata page in use met again and again costs no reads. */
	if (left && in_core < used)
		ret = dg_fs_owners_on_media(fs, lp, n, true);
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}

/*
 * An inode not in core is loaded (dg_inode_find()), not read on the
 * side: a fault storm recalls the same few files again and again, and a
 * walk of the record and extent chain per event costs the whole chain
 * each time (a file of a million extents: milliseconds, under the
 * faults lock and fs->lock). Loaded, the file costs its record page and
 * its chain once; every later check, and the owner lookup before it
 * (dg_fs_owner(), which then finds its pages in core), reads nothing
 * until a sweep lets it go (at a forget or release). The report naming
 * the file loads it right after anyway (dg_fs_path()), so the check
 * adds no reads to it. A record or map that cannot be read or is
 * malformed loads as a stub (EIO): not held.
 */
bool dg_fs_owner_holds(struct dg_fs *fs, uint64_t ino, uint64_t vpn,
		       uint64_t fpage)
{
	struct dg_inode *ip = NULL;
	bool used, held = false;
	uint64_t fp;

	pthread_rwlock_rdlock(&fs->lock);
	pthread_mutex_lock(&fs->ino_lock);
	used = ino && ino < (uint64_t)fs->root.nchunks * DG_INODES_PER_CHUNK &&
	       dg_ino_used(fs, ino) && !dg_ino_lost(fs, ino);
	pthread_mutex_unlock(&fs->ino_lock);
	if (used && dg_inode_find(fs, ino, false, &ip) == 0) {
		/* In core: its map is the truth (the media's may lag a
		 * write). Valid while fs->lock is held; its extents change
		 * under its own lock, waited for as the thorough answer
		 * waits. */
		pthread_rwlock_rdlock(&ip->lock);
		held = !ip->reaped && !ip->unreadable &&
		       dg_ext_owns(ip, vpn, &fp) && fp == fpage;
		pthread_rwlock_unlock(&ip->lock);
	}
	pthread_rwlock_unlock(&fs->lock);
	return held;
}
