// SPDX-License-Identifier: MIT
/* pass_reopen.c -- the repairs of pass 0 and 1, made by reopening: the
 * writable open rewrites every superblock and replays the journal;
 * what it fixed is confirmed on the volume it leaves */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fsck.h"

/* What the writable open could not read (the volume root, the bitmap,
 * the journal), as a finding: the media failed, not fsck. */
static void unreadable_volume(struct fsck_ctx *c, const char *why)
{
	struct dg_chk_event ev = { 0 };

	ev.kind = DG_CHK_UNREADABLE;
	ev.dev = -1;
	ev.page = -1;
	ev.vpn = -1;
	ev.structure = "volume";
	/* (a long message is cut short) */
	if (snprintf(ev.detail, sizeof(ev.detail), "%s", why) < 0)
		ev.detail[0] = 0;
	snprintf(ev.action, sizeof(ev.action), "none: nothing left to "
		 "rebuild it from");
	ctx_add(c, &ev);
}

static bool is_jhead(const struct finding *f)
{
	return f->code == PR_1_JHEAD_BAD || f->code == PR_1_JHEAD_STALE;
}

/*
 * A writable open writes a journal header slot on every copy (the
 * fresh numbering after the replay, journal.c), which may be the very
 * slot the read-only look found stale or damaged. The check after the
 * open, whose findings follow `last`, is the proof: a slot copy it
 * finds again stands as its own finding (repaired there), one it finds
 * whole was rewritten by the open, so the finding from before is
 * fixed. Findings [first, last) were made before the open.
 */
static void confirm_jheads(struct fsck_ctx *c, size_t first, size_t last)
{
	size_t m = first;

	for (size_t i = first; i < c->nf; i++) {
		bool again = false;

		if (i < last && is_jhead(&c->f[i])) {
			for (size_t j = last; j < c->nf && !again; j++)
				again = is_jhead(&c->f[j]) &&
					c->f[j].dev == c->f[i].dev &&
					c->f[j].page == c->f[i].page;
			if (again)
				continue;
			c->f[i].fixed = true;
			snprintf(c->f[i].action, sizeof(c->f[i].action),
				 "rewritten by the open for repair");
		}
		c->f[m++] = c->f[i];
	}
	c->nf = m;
}

int pass_reopen(struct fsck_ctx *c)
{
	bool pend = false;
	size_t m, last;
	int ret;

	if (!c->repair)
		return PASS_NEXT;
	/* Only the pending-journal finding and the header slots now; the
	 * header slots are checked again, and repaired, after the open. */

	for (size_t i = c->first_super; i < c->nf; i++)
		if (c->f[i].code == PR_1_JOURNAL_PENDING)
			pend = true;
	for (size_t i = m = c->first_super; i < c->nf; i++)
		if (c->f[i].code < PR_1_JHEAD_BAD ||
		    c->f[i].code > PR_1_JENTRY_COPY ||
		    is_jhead(&c->f[i])) {
			c->f[i].fixed = false;	/* confirmed below */
			c->f[m++] = c->f[i];
		}
	c->nf = m;
	if (pend) {
		struct dg_chk_event ev = { 0 };

		ev.kind = DG_CHK_JOURNAL_PENDING;
		ev.dev = -1;
		ev.page = ev.vpn = -1;
		ev.structure = "journal";
		ev.fixable = true;
		snprintf(ev.detail, sizeof(ev.detail),
			 "journal holds committed updates not yet "
			 "replayed");
		snprintf(ev.action, sizeof(ev.action),
			 "replayed the journal");
		ctx_add(c, &ev);
	}
	last = c->nf;

	ret = dg_vol_close(c->vol);
	c->vol = NULL;
	if (ret) {
		say_error(c, "the replayed journal could not be "
			  "retired: %s\n", strerror(-ret));
		return FSCK_ERROR;
	}
	ret = open_vol(c, c->oflags, c->err, sizeof(c->err));
	if (ret == -EIO) {
		/* The media failed, not fsck: the volume root, its
		 * bitmap or the journal is beyond what parity and
		 * their copies cover. An error left uncorrected (4),
		 * named as a finding, not an operational error (8). */
		unreadable_volume(c, c->err);
		fsck_fail(c, "cannot open for repair", c->err);
		return FSCK_UNCORRECTED;
	}
	if (ret)
		return fsck_fail(c, "cannot open for repair",
				 c->err[0] ? c->err : strerror(-ret)) |
		       FSCK_UNCORRECTED;
	/* The open rewrote the superblocks and replayed the
	 * journal: confirm. */
	if (dg_check_supers(c->vol, false, NULL, NULL) == 0)
		for (size_t i = c->first_super; i < last; i++)
			if (c->f[i].code == PR_0_SUPER_BAD ||
			    c->f[i].code == PR_0_SUPER_DIFFERS ||
			    c->f[i].code == PR_1_JOURNAL_PENDING)
				c->f[i].fixed = true;
	c->phase = "journal";
	dg_check_journal(c->vol, true, ctx_event, c);
	confirm_jheads(c, c->first_super, last);
	return PASS_NEXT;
}
