// SPDX-License-Identifier: MIT
/* remap.c -- whole-page overwrites redirected to new pages, and the
 * records that say so (format.h "Remap page", docs/design.md
 * "Overwrites redirected")
 *
 * An overwrite in place must first put its bytes where a crash plus the
 * loss of any one device leaves them: the journal's copies, 4.1x the
 * bytes written under parity 1, and no in-place layout needs less than
 * m / (m - 1) pages of them. Redirected, the page goes to a blank page,
 * which needs no copy (apply.c: lone rows, holes filled), the old page
 * stays whole until the commit says which one the file reads, and what
 * the commit adds is a record of 16 bytes. The extents learn of it only
 * when the remap page is full: a fold moves its records into them at
 * once, each leaf rewritten once for all of its records, where an
 * extent split a write would rewrite a leaf's tail each time.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bsearch.h"
#include "fsys_i.h"

int dg_dremap_check(const struct dg_dremap *pg, uint64_t ino,
		    struct dg_vol *vol, uint32_t *n, const char **why)
{
	const uint64_t vpns = dg_vol_vpns(vol);
	const uint64_t fpages = DG_MAX_FILE_SIZE / DG_PAGE_SIZE;
	uint32_t i = 0;

	*why = NULL;
	*n = 0;
	if (pg->ino != ino || pg->zero) {
		*why = "remap page of another file";
		return -EUCLEAN;
	}
	while (i < DG_REMAP_PER_PAGE && pg->rec[i].vpn)
		i++;
	for (uint32_t j = 0; j < i; j++) {
		const struct dg_dremap_rec *r = &pg->rec[j];

		if (r->vpn >= vpns || r->vpn < dg_alloc_meta_vpns(vol) ||
		    r->fpage >= fpages) {
			*why = "remap record out of range";
			return -EUCLEAN;
		}
		for (uint32_t m = 0; m < j; m++) {
			if (pg->rec[m].fpage == r->fpage ||
			    pg->rec[m].vpn == r->vpn) {
				*why = "two remap records for one page";
				return -EUCLEAN;
			}
		}
	}
	for (uint32_t j = i; j < DG_REMAP_PER_PAGE; j++) {
		if (pg->rec[j].fpage || pg->rec[j].vpn) {
			*why = "remap slots past the last record not zero";
			return -EUCLEAN;
		}
	}
	*n = i;
	return 0;
}

static int rrec_cmp(const void *a, const void *b)
{
	const struct dg_rrec *x = a, *y = b;

	return x->fpage < y->fpage ? -1 : x->fpage > y->fpage;
}

void dg_remap_free(struct dg_inode *ip)
{
	free(ip->remap);
	ip->remap = NULL;
}

int dg_remap_load(struct dg_fs *fs, struct dg_inode *ip)
{
	struct dg_dremap *pg = NULL;
	struct dg_remap *rm = NULL;
	const char *why;
	uint32_t n;
	int ret;

	dg_remap_free(ip);
	if (!ip->d.remap_vpn)
		return 0;
	if (!dg_vol_has_incompat(fs->vol, DG_FEAT_INCOMPAT_REMAP) ||
	    ip->d.remap_vpn >= dg_vol_vpns(fs->vol) || !S_ISREG(ip->d.mode))
		return DG_CORRUPT(fs->vol, "inode %" PRIu64 ": remap page %"
				  PRIu64 " not allowed here", ip->ino,
				  (uint64_t)ip->d.remap_vpn);
	pg = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	rm = calloc(1, sizeof(*rm));
	if (!pg || !rm) {
		ret = -ENOMEM;
		goto out;
	}
	ret = dg_read(fs->vol, ip->d.remap_vpn, 1, pg);
	if (ret)
		goto out;
	ret = dg_dremap_check(pg, ip->ino, fs->vol, &n, &why);
	if (ret) {
		ret = DG_CORRUPT(fs->vol, "inode %" PRIu64 ": %s", ip->ino,
				 why);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		rm->r[i] = (struct dg_rrec){ pg->rec[i].fpage, pg->rec[i].vpn,
					     i };
	qsort(rm->r, n, sizeof(rm->r[0]), rrec_cmp);
	rm->vpn = ip->d.remap_vpn;
	rm->n = n;
	ip->remap = rm;
	rm = NULL;
out:
	free(pg);
	free(rm);
	return ret;
}

static bool rec_starts_before(const void *set, size_t i, uint64_t fpage)
{
	const struct dg_remap *rm = set;

	return rm->r[i].fpage < fpage;
}

/* The first record at or after fpage (rm->n: none). */
static uint32_t rec_find(const struct dg_remap *rm, uint64_t fpage)
{
	return (uint32_t)dg_partition_point(0, rm->n, rec_starts_before, rm,
					    fpage);
}

void dg_remap_apply(const struct dg_inode *ip, uint64_t fpage, uint64_t *vpn,
		    uint64_t *run)
{
	const struct dg_remap *rm = ip->remap;
	uint32_t i = rec_find(rm, fpage);

	if (i == rm->n)
		return;
	if (rm->r[i].fpage == fpage) {
		*vpn = rm->r[i].vpn;
		*run = 1;
	} else if (rm->r[i].fpage - fpage < *run) {
		*run = rm->r[i].fpage - fpage;
	}
}

bool dg_remap_has(const struct dg_inode *ip, uint64_t fpage)
{
	const struct dg_remap *rm = ip->remap;
	uint32_t i;

	if (!rm)
		return false;
	i = rec_find(rm, fpage);
	return i < rm->n && rm->r[i].fpage == fpage;
}

bool dg_remap_owns(const struct dg_inode *ip, uint64_t vpn, uint64_t *fpage)
{
	const struct dg_remap *rm = ip->remap;

	for (uint32_t i = 0; rm && i < rm->n; i++) {
		if (rm->r[i].vpn == vpn) {
			*fpage = rm->r[i].fpage;
			return true;
		}
	}
	return false;
}

uint64_t dg_remap_blocks(const struct dg_inode *ip)
{
	return ip->remap ? ip->remap->n + 1u : 0;
}

/* Slot s of the remap page says fpage reads from vpn (0, 0: empty). */
static int slot_store(struct dg_txn *txn, const struct dg_remap *rm,
		      uint32_t s, uint64_t fpage, uint64_t vpn)
{
	struct dg_dremap_rec rec = { fpage, vpn };

	return dg_txn_write(txn, rm->vpn,
			    (uint32_t)(offsetof(struct dg_dremap, rec) +
				       s * sizeof(rec)),
			    &rec, sizeof(rec));
}

/* The remap page and its in-core records gone: freed in txn (the caller
 * stores the inode). */
static int remap_end(struct dg_txn *txn, struct dg_inode *ip)
{
	int ret = dg_free(txn, ip->remap->vpn, 1);

	if (ret)
		return ret;
	ip->d.remap_vpn = 0;
	dg_remap_free(ip);
	return 0;
}

/* Record i leaves the list; the last slot's record takes its slot, so
 * the list stays a prefix of the page (format.h). Its page is the
 * caller's. */
static int rec_remove(struct dg_txn *txn, struct dg_remap *rm, uint32_t i)
{
	uint32_t last = rm->n - 1, s = rm->r[i].slot;
	int ret = 0;

	if (s != last) {
		for (uint32_t j = 0; j < rm->n; j++) {
			if (rm->r[j].slot != last)
				continue;
			ret = slot_store(txn, rm, s, rm->r[j].fpage,
					 rm->r[j].vpn);
			rm->r[j].slot = s;
			break;
		}
	}
	if (!ret)
		ret = slot_store(txn, rm, last, 0, 0);
	if (ret)
		return ret;
	memmove(&rm->r[i], &rm->r[i + 1], (rm->n - i - 1) * sizeof(rm->r[0]));
	rm->n--;
	return 0;
}

int dg_remap_drop(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		  uint64_t fpage, uint64_t len)
{
	struct dg_remap *rm = ip->remap;
	uint64_t end = len > UINT64_MAX - fpage ? UINT64_MAX : fpage + len;
	uint32_t i, j;
	int ret = 0;

	(void)fs;
	if (!rm)
		return 0;
	i = rec_find(rm, fpage);
	for (j = i; j < rm->n && rm->r[j].fpage < end && !ret; j++)
		ret = dg_free(txn, rm->r[j].vpn, 1);
	if (ret || j == i)
		return ret;
	if (j - i == rm->n)
		return remap_end(txn, ip);
	while (j-- > i && !ret)
		ret = rec_remove(txn, rm, j);
	return ret;
}

/* Redirect where it stores less than in place: where the volume writes
 * a whole page into a blank one without a journal copy (not degraded,
 * no replace), and not while a libcommit map reads the pages where they
 * are. */
static bool redirect_pays(struct dg_fs *fs, const struct dg_inode *ip)
{
	return dg_vol_has_incompat(fs->vol, DG_FEAT_INCOMPAT_REMAP) &&
	       S_ISREG(ip->d.mode) && !dg_inode_map_check(ip, true) &&
	       dg_vol_blank_page_alone(fs->vol);
}

/* A new remap page for ip whose first record is fpage -> vpn. */
static int remap_begin(struct dg_txn *txn, struct dg_inode *ip,
		       uint64_t fpage, uint64_t vpn)
{
	struct dg_dremap *pg;
	uint64_t pvpn, got;
	int ret;

	ip->remap = calloc(1, sizeof(*ip->remap));
	pg = calloc(1, sizeof(*pg));
	ret = !ip->remap || !pg ? -ENOMEM
				: dg_alloc_meta(txn, 0, 1, &pvpn, &got);
	if (!ret) {
		pg->ino = ip->ino;
		pg->rec[0] = (struct dg_dremap_rec){ fpage, vpn };
		/* Whole: a page allocated anew holds whatever it held. */
		ret = dg_txn_write(txn, pvpn, 0, pg, DG_PAGE_SIZE);
	}
	free(pg);
	if (ret) {
		dg_remap_free(ip);
		return ret;
	}
	ip->remap->vpn = ip->d.remap_vpn = pvpn;
	ip->remap->r[0] = (struct dg_rrec){ fpage, vpn, 0 };
	ip->remap->n = 1;
	return 0;
}

int dg_remap_write(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		   uint64_t fpage, const void *src, bool *done, bool *meta)
{
	struct dg_remap *rm = ip->remap;
	uint32_t i = rm ? rec_find(rm, fpage) : 0;
	bool again = rm && i < rm->n && rm->r[i].fpage == fpage;
	uint64_t hint, vpn, got;
	int ret;

	*done = false;
	if (!redirect_pays(fs, ip))
		return 0;
	if (rm && !again && rm->n == DG_REMAP_PER_PAGE) {
		rm->fold_due = true;	/* in place this once */
		return 0;
	}
	/* Only to a blank page: a page that held bytes takes the journal's
	 * copies, as in place, and the record besides. */
	hint = dg_alloc_blank_hint(fs->vol);
	if (!hint)
		return 0;
	ret = dg_alloc(txn, hint, 1, &vpn, &got);
	if (ret == -ENOSPC)
		return 0;		/* in place needs no room */
	if (!ret)
		ret = dg_txn_write_ref(txn, vpn, 0, src, DG_PAGE_SIZE);
	if (ret)
		return ret;
	if (again) {
		/* Redirected before: the page it was sent to goes. */
		ret = dg_free(txn, rm->r[i].vpn, 1);
		if (!ret)
			ret = slot_store(txn, rm, rm->r[i].slot, fpage, vpn);
		if (!ret)
			rm->r[i].vpn = vpn;
	} else if (!rm) {
		ret = remap_begin(txn, ip, fpage, vpn);
		*meta = true;
	} else {
		ret = slot_store(txn, rm, rm->n, fpage, vpn);
		if (!ret) {
			memmove(&rm->r[i + 1], &rm->r[i],
				(rm->n - i) * sizeof(rm->r[0]));
			rm->r[i] = (struct dg_rrec){ fpage, vpn, rm->n };
			rm->n++;
			/* Folded at this write's end, so the next has room. */
			rm->fold_due = rm->n == DG_REMAP_PER_PAGE;
		}
	}
	*done = !ret;
	return ret;
}

int dg_remap_take(struct dg_txn *txn, struct dg_inode *ip, uint32_t max,
		  struct dg_frun **frp, struct dg_vrun **vrp, unsigned *np)
{
	struct dg_remap *rm = ip->remap;
	uint32_t from = rm->n > max ? rm->n - max : 0, nf = 0;
	struct dg_frun *fr = malloc(rm->n * sizeof(*fr));
	struct dg_vrun *vr = malloc(rm->n * sizeof(*vr));
	int ret = !fr || !vr ? -ENOMEM : 0;

	for (uint32_t i = 0; i < rm->n && !ret; i++) {
		if (rm->r[i].slot < from)
			continue;
		fr[nf] = (struct dg_frun){ rm->r[i].fpage, 1 };
		vr[nf++] = (struct dg_vrun){ rm->r[i].vpn, 1 };
	}
	if (!ret && !from) {
		ret = remap_end(txn, ip);
	} else if (!ret) {
		/* Highest slot first: each leaves the list's end, so no
		 * record moves on the media. */
		for (uint32_t s = rm->n; s-- > from && !ret;) {
			uint32_t i = 0;

			while (rm->r[i].slot != s)
				i++;
			ret = rec_remove(txn, rm, i);
		}
		rm->fold_due = false;
	}
	if (ret) {
		free(fr);
		free(vr);
		return ret;
	}
	*frp = fr;
	*vrp = vr;
	*np = nf;
	return 0;
}
