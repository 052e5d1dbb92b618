// SPDX-License-Identifier: MIT
/* damaged_rows.c -- volumes damaged at the edges of a threaded pass's
 * ranges (damaged_rows.h) */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "damaged_rows.h"

#define PG DG_PAGE_SIZE
#define C DG_CSUMS_PER_PAGE
#define DAEMON_BATCH 32	/* the daemon's scrub batch (fs/daemon/scrub.c) */

const struct tshape tshapes[TSHAPES] = {
	{ 4, 1, -1 },
	{ 6, 2, -1 },
	{ 4, 1, 1 },
};

unsigned tshape_ro_flags(const struct tshape *s)
{
	return DG_OPEN_RDONLY | (s->lost >= 0 ? DG_OPEN_DEGRADED : 0);
}

void trow_write(struct dg_vol *vol, uint64_t row, unsigned rank,
		uint64_t *seed)
{
	uint8_t buf[PG];
	struct dg_range r = {
		dg_loc_vpn(vol, dg_row_data_dev(vol, row, rank), row), 0, PG,
		buf,
	};

	trand_fill(seed, buf, PG);
	CHECK(dg_apply(vol, &r, 1) == 0);
}

/* Random bytes over a page of dev in row, behind the volume's back. */
static void junk(struct tvol *tv, struct dg_vol *vol, unsigned dev,
		 uint64_t row, uint64_t *seed)
{
	uint8_t buf[PG];

	trand_fill(seed, buf, PG);
	tvol_poke(tv, dev, dg_row_page(vol, row) * PG, buf, PG);
}

/* Rows the faults go in, beyond the first and last: the edges of the
 * blocks and of the batches of 2, 3 and 4 threads past the metadata
 * zone (multiples of the daemon's batch too), inside a block, and a
 * daemon batch's last row. */
static unsigned fault_rows(struct dg_vol *vol, uint64_t *out)
{
	uint64_t rows = dg_vol_rows(vol), z = tdata_row(vol);
	unsigned n = 0;

	for (uint64_t t = 2; t <= 4; t++) {
		uint64_t b = t * DG_PAR_BATCH_BLOCKS * C;

		for (uint64_t e = b; e < rows; e += b) {
			if (e - 1 > z)
				out[n++] = e - 1;
			out[n++] = e;
		}
	}
	out[n++] = z + C - 1 - z % C;	/* the last of a block */
	out[n++] = z + 3 * C + 200;	/* inside one */
	out[n++] = z + 3 * C + DAEMON_BATCH - 1;
	return n;
}

struct dg_vol *tvol_damaged(struct tvol *tv, const char *tag,
			    const struct tshape *s, unsigned flags)
{
	uint64_t seed = 7, rows, first, fr[64];
	struct dg_vol *vol;
	unsigned nf;

	tvol_make(tv, tag, s->ndev, s->parity, 96ull << 20, false);
	vol = tvol_open(tv, 0);
	if (!vol)
		return NULL;
	rows = dg_vol_rows(vol);
	nf = fault_rows(vol, fr);
	for (uint64_t r = tdata_row(vol); r < rows; r += 211)
		trow_write(vol, r, 0, &seed);
	for (unsigned i = 0; i < nf; i++)
		trow_write(vol, fr[i], 1, &seed);
	trow_write(vol, rows - 1, 0, &seed);
	first = dg_cmap_next_row(vol, 0, rows);
	dg_vol_close(vol);
	vol = tvol_open(tv, DG_OPEN_RDONLY);
	if (!vol)
		return NULL;
	junk(tv, vol, dg_row_parity_dev(vol, first, 0), first, &seed);
	junk(tv, vol, dg_row_data_dev(vol, rows - 1, 0), rows - 1, &seed);
	for (unsigned i = 0; i < nf; i++) {
		junk(tv, vol, dg_row_data_dev(vol, fr[i], 1), fr[i], &seed);
		if (i % 4 == 3) /* two in a row: beyond parity 1 */
			junk(tv, vol, dg_row_parity_dev(vol, fr[i], 0), fr[i],
			     &seed);
	}
	dg_vol_close(vol);
	if (s->lost >= 0) {
		char *gone = tv->paths[s->lost];

		CHECK(unlink(gone) == 0);
		tv->paths[s->lost] = strdup("");
		free(gone);
		if (!tv->paths[s->lost])
			return NULL;
	}
	return tvol_open(tv, flags);
}
