// SPDX-License-Identifier: MIT
/* pass_redundancy.c -- pass 2: every written page against its checksum,
 * both copies of every checksum page, parity of every written row */
#include "fsck.h"

int pass_redundancy(struct fsck_ctx *c, bool repair)
{
	double t0 = now_secs();
	int ret;

	c->phase = "pages";
	ret = dg_check_redundancy(c->vol, repair, ctx_event, c, ctx_progress,
				  c, &c->stats);
	report_progress_end(c);
	c->secs_redundancy = now_secs() - t0;
	return ret;
}
