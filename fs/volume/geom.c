// SPDX-License-Identifier: MIT
/* geom.c -- address arithmetic: rows, chunks, parity rotation, vpns */
#include <string.h>

#include "volume_i.h"

/* Parity rotates per chunk so extents stay on one device. */
unsigned dg_row_parity_first(const struct dg_vol *vol, uint64_t row)
{
	uint64_t chunk = row / vol->sb.chunk_pages;

	return vol->ndev - 1 - (unsigned)(chunk % vol->ndev);
}

bool dg_row_dev_is_parity(const struct dg_vol *vol, uint64_t row,
			  unsigned dev)
{
	unsigned p0;

	if (!vol->parity)
		return false;
	p0 = dg_row_parity_first(vol, row);
	return (dev + vol->ndev - p0) % vol->ndev < vol->parity;
}

unsigned dg_row_parity_dev(struct dg_vol *vol, uint64_t row, unsigned j)
{
	return (dg_row_parity_first(vol, row) + j) % vol->ndev;
}

/*
 * Data ranks and devices by rotation, so that the lookups below (a few
 * for every page of every update) are one load each rather than a walk
 * of the devices.
 */
void dg_geom_init(struct dg_vol *vol)
{
	memset(vol->dev_rank, DG_NO_RANK, sizeof(vol->dev_rank));
	for (unsigned p0 = 0; p0 < vol->ndev; p0++) {
		unsigned rank = 0;

		for (unsigned d = 0; d < vol->ndev; d++) {
			if (vol->parity &&
			    (d + vol->ndev - p0) % vol->ndev < vol->parity)
				continue;
			vol->rank_dev[p0][rank] = (uint8_t)d;
			vol->dev_rank[p0][d] = (uint8_t)rank++;
		}
	}
}

/* The data rank of dev in row: the data devices before it (a parity
 * device has the rank of the data device after it). */
unsigned dg_row_data_rank(const struct dg_vol *vol, uint64_t row,
			  unsigned dev)
{
	unsigned p0 = vol->parity ? dg_row_parity_first(vol, row) : 0;
	unsigned rank = 0;

	if (vol->dev_rank[p0][dev] != DG_NO_RANK)
		return vol->dev_rank[p0][dev];
	for (unsigned d = 0; d < dev; d++)
		rank += vol->dev_rank[p0][d] != DG_NO_RANK;
	return rank;
}

unsigned dg_row_data_dev(const struct dg_vol *vol, uint64_t row,
			 unsigned rank)
{
	unsigned p0 = vol->parity ? dg_row_parity_first(vol, row) : 0;

	return rank < vol->k ? vol->rank_dev[p0][rank] : vol->ndev;
}

struct dg_loc dg_vpn_loc(struct dg_vol *vol, uint64_t vpn)
{
	uint64_t cp = vol->sb.chunk_pages;
	uint64_t q = vpn / cp;
	uint64_t row = (q / vol->k) * cp + vpn % cp;

	return (struct dg_loc){ dg_row_data_dev(vol, row, q % vol->k), row };
}

uint64_t dg_loc_vpn(struct dg_vol *vol, unsigned dev, uint64_t row)
{
	uint64_t cp = vol->sb.chunk_pages;
	uint64_t rank = dg_row_data_rank(vol, row, dev);

	return ((row / cp) * vol->k + rank) * cp + row % cp;
}

uint64_t dg_row_page(struct dg_vol *vol, uint64_t row)
{
	return vol->sb.data_start + row;
}

void dg_csum_loc(struct dg_vol *vol, unsigned dev, uint64_t row,
		 unsigned copy, unsigned *cdev, uint64_t *page, uint32_t *byte)
{
	uint64_t index = row / DG_CSUMS_PER_PAGE;

	*cdev = dg_cpage_copy_dev(vol, dev, copy);
	*page = dg_cpage_copy_page(vol, index, copy);
	*byte = (uint32_t)(row % DG_CSUMS_PER_PAGE) * 8;
}

unsigned dg_vol_csum_copies(struct dg_vol *vol)
{
	return vol->sb.csum_copies;
}

unsigned dg_cpage_copy_dev(const struct dg_vol *vol, unsigned owner,
			   unsigned copy)
{
	return (owner + copy) % vol->ndev;
}

uint64_t dg_cpage_copy_page(const struct dg_vol *vol, uint64_t index,
			    unsigned copy)
{
	return vol->sb.csum_start + copy * vol->sb.csum_pages + index;
}

void dg_jrnl_loc(struct dg_vol *vol, unsigned copy, unsigned *dev,
		 uint64_t *start, uint64_t *pages)
{
	/* Copies on devices 0 .. jrnl_devs - 1; one device holds two
	 * halves. */
	if (vol->ndev > 1) {
		*dev = copy;
		*start = vol->sb.jrnl_start;
		*pages = vol->sb.jrnl_pages;
	} else {
		*dev = 0;
		*pages = vol->sb.jrnl_pages / 2;
		*start = vol->sb.jrnl_start + copy * *pages;
	}
}

/*
 * Journal copies, on devices 0 .. n - 1. A stale or lost header on every
 * copy sends recovery back to entries long retired, and it redoes them
 * over newer data with their old checksums: old bytes that verify. So,
 * as checksum pages: parity + 2 copies where there are that many devices
 * (DG_FEAT_INCOMPAT_JOURNAL_COPIES), and even parity + 1 devices that
 * all lose their last header writes leave the newest header on another
 * copy (docs/integrity.md). Volumes made without the flag keep parity + 1
 * (no fault parity covers takes every header). Never fewer than 2 on more
 * than one device; one device holds two halves (dg_jrnl_loc()).
 */
uint32_t dg_geom_jrnl_devs(uint32_t ndev, uint32_t parity, uint64_t incompat)
{
	uint32_t n = parity + 1;

	if (ndev == 1)
		return 1;
	if (incompat & DG_FEAT_INCOMPAT_JOURNAL_COPIES)
		n = parity + 2 < ndev ? parity + 2 : ndev;
	return n > 2 ? n : 2;
}

/*
 * Lay out a device of dev_pages pages: supers at both ends, the journal,
 * checksum and ditto regions, then as many whole chunks of rows as fit.
 * zone_chunks 0 is the layout of a volume without a metadata zone
 * (ditto copies of the root and bitmap only, addressed by vpn); else the
 * zone is zone_chunks chunks of rows and the ditto region holds
 * ditto_copies pages per zone row (format.h). Leaves sb->rows == 0 if
 * nothing fits. The journal copies follow the JOURNAL_COPIES flag in
 * sb->incompat as the caller set it (dg_geom_jrnl_devs()).
 */
void dg_geom_layout(struct dg_dsuper *sb, uint64_t dev_pages,
		    uint32_t chunk_pages, uint32_t ndev, uint32_t parity,
		    uint64_t zone_chunks)
{
	uint64_t jrnl = dev_pages / 64, avail, rows, cp, meta, ditto_region;
	/* Parity + 1 copies on different devices outlive any fault parity
	 * covers. One
	 * more, where there are devices for it: then even devices beyond
	 * what parity covers that all lose the same checksum page write
	 * leave a newer copy, so their old data reads as EIO, never as
	 * current (docs/integrity.md). Never fewer than two. */
	uint32_t copies = parity + 2 < ndev ? parity + 2 : ndev;

	if (copies < 2)
		copies = 2;

	if (jrnl < 1024)
		jrnl = 1024; /* 4 MiB: a copy holds a 1 MiB update twice */
	if (jrnl > 16384)
		jrnl = 16384;
	if (ndev == 1)
		jrnl *= 2; /* both copies share the one device */
	if (jrnl > dev_pages / 4)
		jrnl = dev_pages / 4 & ~1ull;
	sb->dev_pages = dev_pages;
	sb->dev_count = ndev;
	sb->parity = parity;
	sb->chunk_pages = chunk_pages;
	sb->jrnl_devs = dg_geom_jrnl_devs(ndev, parity, sb->incompat);
	sb->csum_copies = copies;
	/* Enough map bits for a checksum page per DG_CSUMS_PER_PAGE pages
	 * of the whole device, more than the rows will need. */
	sb->cmap_start = 1;
	sb->cmap_pages = (uint32_t)dg_div_up(dg_div_up(dev_pages,
						       DG_CSUMS_PER_PAGE),
					     DG_CMAP_BITS);
	/* Two slots of the map on every device: written one after the
	 * other, so even a one-device volume keeps a whole copy. */
	sb->jrnl_start = sb->cmap_start + 2ull * sb->cmap_pages;
	sb->jrnl_pages = jrnl;
	sb->rows = 0;
	sb->ditto_copies = parity > 1 ? parity : 1;
	cp = chunk_pages;
	if (zone_chunks) {
		uint64_t zone = zone_chunks * (ndev - parity) * cp;

		if (zone > UINT32_MAX)
			return;
		sb->ditto_pages = (uint32_t)zone;
		ditto_region = zone_chunks * cp * sb->ditto_copies;
	} else {
		/* Room for the root and a bitmap of every page the volume
		 * could have (an upper bound: rows are not known yet). */
		sb->ditto_pages = (uint32_t)(1 + dg_div_up(dev_pages * ndev,
							   8ull * DG_PAGE_SIZE));
		ditto_region = sb->ditto_pages;
	}
	meta = 2 + 2ull * sb->cmap_pages + jrnl + ditto_region;
	if (dev_pages < meta + copies)
		return;
	avail = dev_pages - meta;
	rows = avail * DG_CSUMS_PER_PAGE / (DG_CSUMS_PER_PAGE + copies);
	while (rows && rows + copies * dg_div_up(rows, DG_CSUMS_PER_PAGE) >
			       avail)
		rows--;
	rows -= rows % cp;
	/* The zone leaves at least one chunk of rows to file data. */
	if (zone_chunks && rows < (zone_chunks + 1) * cp)
		rows = 0;
	sb->rows = rows;
	sb->csum_pages = dg_div_up(rows, DG_CSUMS_PER_PAGE);
	sb->csum_start = sb->jrnl_start + jrnl;
	sb->ditto_start = sb->csum_start + copies * sb->csum_pages;
	sb->data_start = sb->ditto_start + ditto_region;
}

uint64_t dg_geom_zone_chunks(uint64_t dev_pages, uint32_t chunk_pages,
			     uint32_t ndev, uint32_t parity,
			     uint64_t zone_bytes)
{
	struct dg_dsuper g = { 0 };
	uint64_t per_chunk = (uint64_t)(ndev - parity) * chunk_pages;
	uint64_t want, chunks, most;

	/* The rows without a zone bound those with one from above. */
	dg_geom_layout(&g, dev_pages, chunk_pages, ndev, parity, 0);
	if (!g.rows || !per_chunk)
		return 0;
	if (zone_bytes)
		want = dg_div_up(zone_bytes, DG_PAGE_SIZE);
	else
		want = g.rows * (ndev - parity) * DG_ZONE_DEFAULT_PCT / 100;
	if (want < DG_ZONE_MIN_PAGES)
		want = DG_ZONE_MIN_PAGES;
	chunks = dg_div_up(want, per_chunk);
	/* At most half the chunks: the zone is for metadata, not data. */
	most = g.rows / chunk_pages / 2;
	if (chunks > most)
		chunks = most;
	if (chunks > UINT32_MAX / per_chunk)
		chunks = UINT32_MAX / per_chunk;
	if (!chunks)
		chunks = 1;
	/* The ditto region takes rows too: shrink until the rest fits. */
	for (;;) {
		dg_geom_layout(&g, dev_pages, chunk_pages, ndev, parity,
			       chunks);
		if (g.rows || chunks == 1)
			return chunks;
		chunks--;
	}
}

uint64_t dg_sb_zone_chunks(const struct dg_dsuper *sb)
{
	uint64_t per_chunk = (uint64_t)(sb->dev_count - sb->parity) *
			     sb->chunk_pages;

	if (!(sb->incompat & DG_FEAT_INCOMPAT_META_ZONE) || !per_chunk)
		return 0;
	return sb->ditto_pages / per_chunk;
}

unsigned dg_jrnl_ncopies(const struct dg_vol *vol)
{
	return vol->ndev == 1 ? 2 : vol->sb.jrnl_devs;
}

uint64_t dg_vol_rows(struct dg_vol *vol)
{
	return vol->sb.rows;
}

bool dg_vol_row_is_parity(struct dg_vol *vol, uint64_t row, unsigned dev)
{
	return dg_row_dev_is_parity(vol, row, dev);
}

/* The device at position pos of a row: data rank pos for pos < k, else
 * parity pos - k (the order ISA-L's matrix rows use). */
unsigned dg_row_pos_dev(struct dg_vol *vol, uint64_t row, unsigned pos)
{
	if (pos < vol->k)
		return dg_row_data_dev(vol, row, pos);
	return dg_row_parity_dev(vol, row, pos - vol->k);
}
