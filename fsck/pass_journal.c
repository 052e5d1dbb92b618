// SPDX-License-Identifier: MIT
/* pass_journal.c -- pass 1: journal headers and pending entries */
#include "fsck.h"

int pass_journal(struct fsck_ctx *c, bool repair)
{
	c->phase = "journal";
	return dg_check_journal(c->vol, repair, ctx_event, c);
}
