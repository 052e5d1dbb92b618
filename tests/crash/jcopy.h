// SPDX-License-Identifier: MIT
/* jcopy.h -- a journal copy's area in rebuilt crash images, and the
 * faults the crash tests put there */
#ifndef DG_CRASH_JCOPY_H
#define DG_CRASH_JCOPY_H

#include <stdint.h>

struct crec;
struct dg_vol;
struct tvol;

/* Where journal copy c lives: its device, and its area's byte offset
 * and size there (dg_jrnl_loc()). */
struct jcopy {
	unsigned dev;
	uint64_t off, bytes;
};

/* The n journal copies of vol, into jc. */
void jcopy_locate(struct dg_vol *vol, struct jcopy *jc, unsigned n);

/* Every write to copy j since rec began recording lost: its area in out
 * as rec's snapshot holds it (headers too). */
void jcopy_lose(struct tvol *out, struct crec *rec, const struct jcopy *j);

/* A byte flipped in every 64-byte line of j's log (past its two header
 * slots) that differs in out from rec's snapshot: each line the run
 * wrote there. area: scratch of j->bytes. */
void jcopy_flip(struct tvol *out, struct crec *rec, const struct jcopy *j,
		uint8_t *area);

#endif /* DG_CRASH_JCOPY_H */
