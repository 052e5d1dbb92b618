// SPDX-License-Identifier: MIT
/* pass_super.c -- pass 0: superblock copies of every device */
#include "fsck.h"

int pass_super(struct fsck_ctx *c, bool repair)
{
	c->phase = "superblocks";
	return dg_check_supers(c->vol, repair, ctx_event, c);
}
