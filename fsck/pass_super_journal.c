// SPDX-License-Identifier: MIT
/* pass_super_journal.c -- passes 0 and 1 on the read-only view: the
 * superblock copies of every device, the journal's header slots and
 * pending entries; then whether the run repairs them at all (the
 * writable open of pass_reopen.c is their repair: it rewrites every
 * superblock and replays the journal) */
#include <stdio.h>

#include "fsck.h"

int pass_super(struct fsck_ctx *c)
{
	c->first_super = c->nf;
	c->phase = "superblocks";
	dg_check_supers(c->vol, false, ctx_event, c);
	return PASS_NEXT;
}

int pass_journal(struct fsck_ctx *c)
{
	c->phase = "journal";
	dg_check_journal(c->vol, false, ctx_event, c);
	/* The writable open repairs all of pass 0 and 1 at once (every
	 * superblock rewritten, the journal replayed): each finding is
	 * asked about first, and one no keeps the whole run a check. */
	if (c->repair && !ask_findings(c, c->first_super)) {
		c->repair = false;
		for (size_t i = c->first_super; i < c->nf; i++)
			c->f[i].fixed = false;
		if (!c->json)
			printf("%s: a superblock or journal repair was "
			       "declined: checking only, nothing written\n",
			       c->uuid);
	}
	/* A check only sees the volume as the replay would leave it. */
	if (!c->repair)
		replay_in_memory(c);
	return PASS_NEXT;
}
