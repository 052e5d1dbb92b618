// SPDX-License-Identifier: MIT
/* pass_fs.c -- pass 3: inodes, extents, directories, links, bitmap
 * (the engine's dg_check_fs(), each repair asked about); then whether
 * its repairs uncovered work for the page pass and itself, which start
 * over on a fresh open */
#include <stdio.h>
#include <string.h>

#include "fsck.h"

int pass_fs(struct fsck_ctx *c)
{
	int ret;

	c->phase = "filesystem";
	ret = dg_check_fs(c->vol, ctx_event, ctx_ask, c);
	if (ret < 0)
		return fsck_fail(c, "filesystem check failed",
				 strerror(-ret)) | report_exit_code(c);
	return PASS_NEXT;
}

/*
 * Some repairs uncover work for passes that already ran: a file cut at
 * a lost extent page frees pages the page pass found bad (reset only
 * once they are free), a file moved to /lost+found changes that
 * directory's counts. Like e2fsck's restart_e2fsck, a run whose
 * filesystem pass changed anything starts the checks over on a fresh
 * open, so that one fsck -y leaves nothing for the next one.
 */
static bool needs_restart(const struct fsck_ctx *c, size_t first)
{
	for (size_t i = first; i < c->nf; i++)
		if (c->f[i].fixed &&
		    !strncmp(pr_get(c->f[i].code)->name, "PR_3_", 5))
			return true;
	return false;
}

/*
 * Findings of the pass being restarted that were left as they are are
 * dropped: the next pass finds again whatever still holds (a repair
 * made since may have resolved them). Repairs made stay in the report.
 * The volume is closed and opened again, so the next pass reads every
 * structure afresh and counts only its own fault events.
 */
static int restart(struct fsck_ctx *c, size_t first, char *err,
		   size_t errlen)
{
	size_t n = first;
	int ret;

	for (size_t i = first; i < c->nf; i++)
		if (c->f[i].fixed)
			c->f[n++] = c->f[i];
	c->nf = n;
	if (!c->json)
		printf("%s: restarting the checks (pass %u of at most %u): "
		       "the repairs above changed what earlier checks "
		       "passed\n", c->uuid, c->passes + 1, FSCK_MAX_PASSES);
	ret = dg_vol_close(c->vol);
	c->vol = NULL;
	if (ret) {
		snprintf(err, errlen, "the repairs could not be made durable: "
			 "%s", strerror(-ret));
		return ret;
	}
	return open_vol(c, c->oflags, err, errlen);
}

int pass_restart(struct fsck_ctx *c)
{
	int ret;

	if (!c->repair || !needs_restart(c, c->first_of_pass))
		return PASS_NEXT;
	if (c->passes == FSCK_MAX_PASSES) {
		c->unconverged = true;
		return PASS_NEXT;
	}
	ret = restart(c, c->first_of_pass, c->err, sizeof(c->err));
	if (ret)
		return fsck_fail(c, "cannot reopen to restart",
				 c->err[0] ? c->err : strerror(-ret)) |
		       report_exit_code(c);
	return PASS_RESTART;
}
