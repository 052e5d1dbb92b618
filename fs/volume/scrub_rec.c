// SPDX-License-Identifier: MIT
/* scrub_rec.c -- where a background scrub stands, kept in the volume root */
#include <stddef.h>
#include <string.h>

#include "volume_i.h"

#define REC_OFF offsetof(struct dg_droot, scrub)

int dg_vol_scrub_load(struct dg_vol *vol, struct dg_scrub_rec *rec)
{
	struct dg_dscrub d;
	int ret;

	memset(rec, 0, sizeof(*rec));
	ret = dg_read_bytes(vol, 0, REC_OFF, sizeof(d), &d);
	if (ret)
		return ret;
	/* Zeros (a volume made before the record, or never scrubbed), or
	 * a state this binary does not know: no scrub to resume. */
	if (d.magic != DG_SCRUB_MAGIC || d.state > DG_SCRUB_FINISHED ||
	    d.next_row > vol->sb.rows)
		return 0;
	rec->state = (enum dg_scrub_state)d.state;
	rec->next_row = d.next_row;
	rec->started = d.started;
	rec->ended = d.ended;
	rec->run_ms = d.run_ms;
	rec->rate = d.rate;
	rec->rep = (struct dg_scrub_report){
		.rows_checked = d.rows_checked,
		.detected = d.detected,
		.repaired = d.repaired,
		.unrecoverable = d.unrecoverable,
		.parity_mismatch = d.parity_mismatch,
		.parity_fixed = d.parity_fixed,
	};
	return 0;
}

/* A byte range of page 0 through dg_apply(): journaled, checksummed,
 * in parity and in the root's ditto copies like any update, so the
 * record is as safe as the root it lives in and a crash leaves the old
 * record or the new one. */
int dg_vol_scrub_save(struct dg_vol *vol, const struct dg_scrub_rec *rec)
{
	struct dg_dscrub d = {
		.magic = DG_SCRUB_MAGIC,
		.state = rec->state,
		.next_row = rec->next_row,
		.started = rec->started,
		.ended = rec->ended,
		.run_ms = rec->run_ms,
		.rate = rec->rate,
		.rows_checked = rec->rep.rows_checked,
		.detected = rec->rep.detected,
		.repaired = rec->rep.repaired,
		.unrecoverable = rec->rep.unrecoverable,
		.parity_mismatch = rec->rep.parity_mismatch,
		.parity_fixed = rec->rep.parity_fixed,
	};
	struct dg_range r = { 0, REC_OFF, sizeof(d), &d };

	if (vol->read_only)
		return -EROFS;
	return dg_apply(vol, &r, 1);
}
