// SPDX-License-Identifier: MIT
/* damaged_rows.h -- volumes damaged at the edges of the ranges a
 * threaded pass shares out (blocks of rows, the threads' batches, the
 * daemon's batches), for the tests that check a pass with threads finds
 * what one thread does (test_check_par.c: fsck; test_scrub_par.c: the
 * daemon's scrub) */
#ifndef DG_TEST_DAMAGED_ROWS_H
#define DG_TEST_DAMAGED_ROWS_H

#include <stdint.h>

#include "harness.h"
#include "volume_i.h"

/* Parity 1 and 2 with every device, and parity 1 with one device gone
 * (opened degraded: a row with a written page there takes the read
 * path, which rebuilds it from parity). */
struct tshape {
	unsigned ndev, parity;
	int lost;		/* the device removed after the damage, or -1 */
};

#define TSHAPES 3
extern const struct tshape tshapes[TSHAPES];

/* How a shape's volume opens read-only. */
unsigned tshape_ro_flags(const struct tshape *s);

/* A page written through the update path in row, on the row's data
 * device of rank rank, from seed. */
void trow_write(struct dg_vol *vol, uint64_t row, unsigned rank,
		uint64_t *seed);

/* A volume of shape s written sparsely over many blocks and damaged:
 * the parity page of the first written row, a data page in the last
 * row, a data page or two (one row beyond repair with parity 1) at each
 * edge; then the device s->lost removed. The same every time but for
 * the volume's seed. Opened with flags; NULL if it cannot be. */
struct dg_vol *tvol_damaged(struct tvol *tv, const char *tag,
			    const struct tshape *s, unsigned flags);

#endif
