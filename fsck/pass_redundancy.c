// SPDX-License-Identifier: MIT
/* pass_redundancy.c -- pass 2: every written page against its checksum,
 * both copies of every checksum page, parity of every written row; then
 * what -y does with what it found beyond repair (free pages reset, file
 * pages given up: give_up.c) and with devices behind the volume */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

/* Every page of the suspects has been through the page pass: they are
 * devices like the others from now on (their superblocks rewritten). */
static void accept_suspects(struct fsck_ctx *c)
{
	struct dg_vol_info info;

	dg_vol_get_info(c->vol, &info);
	if (!info.suspect_mask)
		return;
	for (size_t i = 0; i < c->nf; i++)
		if (c->f[i].code == PR_0_DEV_STALE && !c->f[i].fixed &&
		    !ask_finding(c, &c->f[i], NULL)) {
			c->f[i].declined = c->mode == MODE_ASK;
			return;
		}
	if (dg_vol_accept_suspects(c->vol) <= 0)
		return;
	for (size_t i = 0; i < c->nf; i++) {
		struct finding *f = &c->f[i];

		if (f->dev >= 0 && (info.suspect_mask & (1u << f->dev)) &&
		    (f->code == PR_0_DEV_STALE ||
		     f->code == PR_0_SUPER_DIFFERS ||
		     f->code == PR_0_SUPER_BAD))
			f->fixed = true;
	}
	c->oflags &= ~(DG_OPEN_SUSPECT | DG_OPEN_REPAIR);
}

/* A repair of a page of the row at device page page was declined. */
static bool row_declined(const struct fsck_ctx *c, uint64_t page)
{
	for (size_t i = 0; i < c->nf; i++)
		if (c->f[i].declined && c->f[i].page == (int64_t)page &&
		    (c->f[i].code == PR_2_PAGE_BAD ||
		     c->f[i].code == PR_2_PARITY_STALE))
			return true;
	return false;
}

/*
 * Pages that failed with nothing left to repair them from but that no
 * file uses any more (its file was deleted or truncated after the loss)
 * are not data lost: their rows are rewritten with the free pages as
 * zeros and parity recomputed, so they stop being reported for ever.
 */
static void reset_free_pages(struct fsck_ctx *c)
{
	size_t nf = c->nf;
	struct dg_vpnmap *map = NULL;
	bool any = false;

	for (size_t i = 0; i < nf; i++)
		any |= c->f[i].code == PR_2_PAGE_BAD && !c->f[i].fixed &&
		       c->f[i].vpn >= 0;
	/* What the structures use, not just what the bitmap says: a page
	 * a file maps is never zeroed. */
	if (!any || dg_check_classify(c->vol, &map))
		return;

	for (size_t i = 0; i < nf; i++) {
		struct finding *f = &c->f[i];
		struct dg_loc l;
		uint64_t page;
		int ret;

		if (f->code != PR_2_PAGE_BAD || f->fixed || f->declined ||
		    f->vpn < 0 || dg_vpn_allocated(c->vol, (uint64_t)f->vpn) ||
		    dg_vpnmap_cls(map, (uint64_t)f->vpn) != DG_PC_FREE)
			continue;
		l = dg_vpn_loc(c->vol, (uint64_t)f->vpn);
		page = dg_row_page(c->vol, l.row);
		/* The reset rewrites the row's pages in use too (through
		 * the update path): not where a repair was declined. */
		if (row_declined(c, page))
			continue;
		if (!ask_finding(c, f, "reset the free page to zeros")) {
			f->declined = c->mode == MODE_ASK;
			continue;
		}
		ret = dg_check_reset_free_page(c->vol, (uint64_t)f->vpn, map);
		if (ret) {
			if (c->verbose)
				fprintf(stderr, "fsck.daxguard: cannot reset "
					"the free page at vpn %lld: %s\n",
					(long long)f->vpn, strerror(-ret));
			continue;
		}
		for (size_t j = 0; j < nf; j++)
			if (c->f[j].code == PR_2_PAGE_BAD && !c->f[j].fixed &&
			    c->f[j].page == (int64_t)page) {
				c->f[j].fixed = true;
				snprintf(c->f[j].action, sizeof(c->f[j].action),
					 "%s", c->f[j].vpn >= 0
						       ? "free page reset"
						       : "parity recomputed");
			}
	}
	dg_vpnmap_free(map);
}

int pass_redundancy(struct fsck_ctx *c)
{
	double t0 = now_secs();
	int ret;

	c->first_of_pass = c->nf;
	c->passes++;
	c->phase = "pages";
	/* Each repair of the page pass is asked about on its own
	 * (ask_engine()). The threads change its speed, never its
	 * findings or their order (verify_par.c). */
	dg_vol_set_check_threads(c->vol, c->threads);
	ret = dg_check_redundancy(c->vol, c->repair, ctx_event, c,
				  ctx_progress, c, &c->stats);
	report_progress_end(c);
	c->secs_redundancy = now_secs() - t0;
	if (ret < 0)
		return fsck_fail(c, "page check failed", strerror(-ret)) |
		       report_exit_code(c);
	if (c->repair) {
		accept_suspects(c);
		reset_free_pages(c);
		give_up_pages(c);
	}
	return PASS_NEXT;
}
