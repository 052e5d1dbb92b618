// SPDX-License-Identifier: MIT
/*
 * give_up.c -- what the page pass found lost beyond parity, given up
 *
 * A page of a file (its data, or a symlink's target) no copy of which
 * verifies stays lost: its file reads EIO there. fsck -y gives it up
 * (dg_row_give_up_page(): its row re-protected, the page marked on the
 * media), names the file and exits 4, data lost. The next fsck finds
 * the mark and reports the page as a warning (PR_2_PAGE_GIVEN_UP, exit
 * 0): the volume has converged, the loss was reported when it happened.
 * Free pages are reset instead (pass_redundancy.c, reset_free_pages(), or here
 * when a lost neighbour keeps that from reading the row); metadata
 * pages are given up by the filesystem pass, which rebuilds what they
 * held (check_fs.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

/* The finding of the page pass that give_up_pages() may act on. */
static bool lost_page(const struct finding *f)
{
	return f->code == PR_2_PAGE_BAD && !f->fixed && !f->fixable &&
	       !f->declined && f->vpn >= 0;
}

static bool ask_give_up(struct fsck_ctx *c, const struct finding *f)
{
	return ask_finding_as(c, f, DG_CHK_PAGE_GIVEN_UP,
			      "give the page up (its file reads EIO there)");
}

/* The row's other findings that the give-up resolved: its parity pages,
 * recomputed from the row as it now is. */
static void parity_fixed(struct fsck_ctx *c, int64_t page)
{
	for (size_t j = 0; j < c->nf; j++) {
		struct finding *f = &c->f[j];

		if (f->code == PR_2_PAGE_BAD && !f->fixed && f->vpn < 0 &&
		    f->page == page && !strcmp(f->structure, "parity")) {
			f->fixed = true;
			f->fixable = true;
			snprintf(f->action, sizeof(f->action),
				 "parity recomputed");
		}
	}
}

/*
 * A free page lost in a row where a page in use is lost too: the reset
 * of pass_redundancy.c (through the update path) cannot read that
 * neighbour, so the free page is given zeros and the row's parity
 * recomputed from the row as it is (dg_row_replace_page()), as for a
 * lost metadata page.
 */
static void zero_free_page(struct fsck_ctx *c, struct finding *f)
{
	static const uint8_t zero[DG_PAGE_SIZE];
	struct dg_chk_event ev;

	dg_chk_event_init(&ev, DG_CHK_PAGE_BAD, f->structure);
	ev.dev = f->dev;
	ev.page = f->page;
	ev.vpn = f->vpn;
	ev.fixable = true;
	snprintf(ev.detail, sizeof(ev.detail), "%s", f->detail);
	snprintf(ev.action, sizeof(ev.action), "reset the free page to zeros");
	if (!fix_problem(c, &ev)) {
		f->declined = c->mode == MODE_ASK;
		return;
	}
	if (dg_row_replace_page(c->vol, (uint64_t)f->vpn, zero))
		return;
	f->fixed = true;
	f->fixable = true;
	snprintf(f->action, sizeof(f->action), "free page reset");
	parity_fixed(c, f->page);
}

void give_up_pages(struct fsck_ctx *c)
{
	struct dg_vpnmap *map = NULL;
	bool any = false;

	for (size_t i = 0; i < c->nf; i++)
		any |= lost_page(&c->f[i]);
	if (!any || dg_check_classify(c->vol, &map))
		return;
	for (size_t i = 0; i < c->nf; i++) {
		struct finding *f = &c->f[i];
		uint8_t cls = dg_vpnmap_cls(map, (uint64_t)f->vpn);
		int ret;

		if (lost_page(f) && cls == DG_PC_FREE &&
		    !dg_vpn_allocated(c->vol, (uint64_t)f->vpn)) {
			zero_free_page(c, f);
			continue;
		}
		if (!lost_page(f) || (cls != DG_PC_FILE &&
				      cls != DG_PC_SYMLINK))
			continue;
		if (!ask_give_up(c, f)) {
			f->declined = c->mode == MODE_ASK;
			continue;
		}
		ret = dg_row_give_up_page(c->vol, (uint64_t)f->vpn);
		if (ret == -EAGAIN) {
			/* Its row brought it back since it was found (an
			 * earlier repair of the row): nothing is lost. */
			f->fixed = true;
			f->fixable = true;
			snprintf(f->action, sizeof(f->action), "reads whole "
				 "now: repaired from its row");
			continue;
		}
		if (ret) {
			if (c->verbose)
				fprintf(stderr, "fsck.daxguard: cannot give up "
					"the page at vpn %lld: %s\n",
					(long long)f->vpn, strerror(-ret));
			continue;
		}
		f->code = PR_2_PAGE_GIVEN_UP;
		f->fixed = true;
		f->fixable = true;
		if (!f->ino)
			f->ino = dg_vpnmap_owner(map, (uint64_t)f->vpn);
		snprintf(f->action, sizeof(f->action), "given up: marked lost "
			 "(reads give EIO), its row re-protected");
		parity_fixed(c, f->page);
	}
	dg_vpnmap_free(map);
}
