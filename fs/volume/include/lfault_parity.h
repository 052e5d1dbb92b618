/* SPDX-License-Identifier: MIT */
/* lfault_parity.h -- a logical fault of parity, for daxguard-inject alone
 * (lfault_parity.c) */
#ifndef DG_LFAULT_PARITY_H
#define DG_LFAULT_PARITY_H

#include "volume.h"

/*
 * What a bug in computing parity would leave: the first parity page of
 * one row of file data holding a bit other than its data say, with a
 * checksum that matches it -- parity that verifies and disagrees with
 * the verified data (fsck's PR_2_PARITY_STALE). seed picks the row (the
 * first fitting one from seed % rows on) and the bit. Written through
 * the repair path, parity then checksum, as a real recomputation is. On
 * a writable volume with parity and every device present; 0, -EINVAL
 * (no parity), -ENXIO (a device missing), -ENOENT (no row of file data
 * whose pages all verify), or the write's error.
 */
struct dg_parity_lfault {
	uint64_t row;
	unsigned dev;		/* the parity page's device */
	uint64_t page;		/* its device page */
	uint32_t bit;		/* the bit flipped, 0..32767 */
};
int dg_check_parity_lfault(struct dg_vol *vol, uint64_t seed,
			   struct dg_parity_lfault *out);

#endif /* DG_LFAULT_PARITY_H */
