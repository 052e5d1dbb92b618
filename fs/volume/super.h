/* SPDX-License-Identifier: MIT */
/* super.h -- superblock helpers shared by super.c and newvol.c */
#ifndef DG_SUPER_H
#define DG_SUPER_H

#include "volume_i.h"

/* Validate a superblock image: 0, -ENODEV (no magic), -EUCLEAN (bad
 * checksum or layout), -EOPNOTSUPP (version or incompatible feature). */
int dg_dsuper_decode(const void *page, struct dg_dsuper *out);
void dg_dsuper_seal(struct dg_dsuper *s);
int dg_dev_read_super(const struct dg_dev *d, struct dg_dsuper *out,
		      bool *from_backup);
/* Write and persist the superblock copies of every present device: 0,
 * or the first failure (nothing more is written after it). */
int dg_write_supers(struct dg_vol *vol);
/* Bump the generation on every device, OPENING first, then DIRTY (the
 * crash rule in dg_vol_open()); at open and when the generations of
 * checksum pages need a new epoch (dg_gen_next()). 0 or the first
 * failure. */
int dg_super_new_epoch(struct dg_vol *vol);

#endif /* DG_SUPER_H */
