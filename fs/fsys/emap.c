// SPDX-License-Identifier: MIT
/* emap.c -- read a file's extent map off the media, checking as it goes
 *
 * The one parser of the on-media extent format (format.h): the mount
 * path builds its in-core leaves from it (extent.c) and fsck its walk
 * (check_fs.c). Every value is checked before it is used, so a damaged
 * inode or chain page ends the walk with a reason, never a wild read.
 */
#include <string.h>

#include "fsys_i.h"

int dg_demap_check(const struct dg_demap *pg, uint32_t left)
{
	if (pg->count < 1 || pg->count > DG_EMAP_PER_PAGE || pg->count > left)
		return -EUCLEAN;
	return 0;
}

static int fail(struct dg_emap_reader *r, const char *why)
{
	r->why = why;
	r->err = -EUCLEAN;
	return r->err;
}

void dg_emap_begin(struct dg_emap_reader *r, struct dg_vol *vol,
		   const struct dg_dinode *d, struct dg_demap *pg)
{
	*r = (struct dg_emap_reader){ .vol = vol, .d = d, .pg = pg,
				      .next_vpn = d->emap_vpn };
	while (r->count < DG_INLINE_EXTENTS && d->inl[r->count].len)
		r->count++;
	for (uint32_t i = r->count; i < DG_INLINE_EXTENTS; i++)
		if (d->inl[i].len || d->inl[i].vpn || d->inl[i].fpage)
			fail(r, "inline extents not packed");
	if (!r->err && r->count > d->nextents)
		fail(r, "more inline extents than the inode counts");
}

/* Step into the next chain page: announce it (DG_EMAP_PAGE), then, on
 * the next call, read it (0 when it is loaded). */
static int next_page(struct dg_emap_reader *r)
{
	struct dg_vol *vol = r->vol;
	uint32_t left = r->d->nextents - r->seen;
	int ret;

	if (!r->page_pending) {
		if (r->next_vpn < 1 || r->next_vpn >= dg_vol_vpns(vol) || !r->pg)
			return fail(r, "extent chain broken");
		r->page_vpn = r->next_vpn;
		r->leaf++;
		r->slot = r->count = 0;
		r->page_pending = true;
		return DG_EMAP_PAGE;
	}
	r->page_pending = false;
	ret = dg_read(vol, r->page_vpn, 1, r->pg);
	if (ret) {
		r->err = ret;
		return ret;
	}
	if (dg_demap_check(r->pg, left))
		return fail(r, "extent page count out of range");
	r->count = r->pg->count;
	r->next_vpn = r->pg->next_vpn;
	return 0;
}

int dg_emap_next(struct dg_emap_reader *r, const struct dg_dextent **e)
{
	uint64_t vpns = dg_vol_vpns(r->vol);
	const struct dg_dextent *d;

	if (r->err)
		return r->err;
	if (r->seen == r->d->nextents)
		return DG_EMAP_END;
	while (r->slot == r->count) {
		int ret = next_page(r);

		if (ret)
			return ret;
	}
	d = r->leaf ? &r->pg->e[r->slot] : &r->d->inl[r->slot];
	/* Never the volume root or the bitmap: a file's writes would go
	 * over them (dg_alloc_meta_vpns(), 0 while no bitmap is loaded). */
	if (d->len == 0 || d->vpn < 1 ||
	    d->vpn < dg_alloc_meta_vpns(r->vol) || d->vpn >= vpns ||
	    d->len > vpns - d->vpn || d->fpage < r->prev_end ||
	    d->fpage > (UINT64_MAX >> DG_PAGE_SHIFT) - d->len)
		return fail(r, "extent out of range or out of order");
	r->slot++;
	r->seen++;
	r->prev_end = d->fpage + d->len;
	*e = d;
	return DG_EMAP_EXTENT;
}
