// SPDX-License-Identifier: MIT
/* pass_super.c -- pass 0: superblock copies of every device, on the
 * read-only view (the writable open of pass_reopen.c rewrites them:
 * that is their repair) */
#include "fsck.h"

int pass_super(struct fsck_ctx *c)
{
	c->first_super = c->nf;
	c->phase = "superblocks";
	dg_check_supers(c->vol, false, ctx_event, c);
	return PASS_NEXT;
}
