/* SPDX-License-Identifier: MIT */
/* media_counts.h -- what the media was asked to do, counted exactly */
#ifndef DG_MEDIA_COUNTS_H
#define DG_MEDIA_COUNTS_H

#include <stdint.h>

/*
 * On tmpfs a persist is almost free; on persistent memory every byte
 * stored, every line flushed and every fence is what a write costs
 * (docs/design.md, "What a write costs the media"). So the device layer
 * counts them where they happen (media.c), per device since it was
 * opened, and the volume sums its devices. Counts, not times: they are
 * the same on any machine.
 */
struct dg_media_counts {
	uint64_t bytes_stored;	 /* stored by write, stream or zero */
	uint64_t streamed_bytes; /* of those, non-temporal (past the caches) */
	uint64_t lines_flushed;	 /* 64-byte lines the persists covered */
	uint64_t fences;	 /* persists: each ends with one fence */
};

static inline void dg_media_counts_add(struct dg_media_counts *to,
				       const struct dg_media_counts *c)
{
	to->bytes_stored += c->bytes_stored;
	to->streamed_bytes += c->streamed_bytes;
	to->lines_flushed += c->lines_flushed;
	to->fences += c->fences;
}

#endif /* DG_MEDIA_COUNTS_H */
