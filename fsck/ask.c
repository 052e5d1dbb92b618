// SPDX-License-Identifier: MIT
/*
 * ask.c -- whether to make a repair: one decision per finding
 *
 * As e2fsck's fix_problem(): -n never repairs, -y always, -p what its
 * problem allows to preen, and without any of them on a terminal the
 * user is asked about each finding ("yes", "no", or "all" for yes to
 * everything after). The engine asks too, for the repairs it makes on
 * its own way (read-repair, checksum copies, parity, ditto copies:
 * dg_vol_set_consent), with the finding each would answer. A finding
 * is asked about once: its answer is kept by (device, page), so a later
 * pass, or a read of the same page by the filesystem check, neither asks
 * again nor repairs what the user declined, and the report says
 * "declined" where the repair was not made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

struct answer {
	int dev;
	int64_t page;
	int code;
	bool yes;
};

/* A finding without a device page (a directory entry, a link count) is
 * its own question each time: only located ones are remembered. */
static struct answer *find_answer(const struct fsck_ctx *c, int dev,
				  int64_t page)
{
	if (page < 0)
		return NULL;
	for (size_t i = 0; i < c->nanswers; i++)
		if (c->answers[i].dev == dev && c->answers[i].page == page)
			return &c->answers[i];
	return NULL;
}

static void keep_answer(struct fsck_ctx *c, const struct dg_chk_event *ev,
			bool yes)
{
	struct answer *a;

	if (ev->page < 0)
		return;
	if (c->nanswers == c->capanswers) {
		size_t cap = c->capanswers ? c->capanswers * 2 : 32;

		a = realloc(c->answers, cap * sizeof(*a));
		if (!a)
			return; /* asked again later: no worse than that */
		c->answers = a;
		c->capanswers = cap;
	}
	c->answers[c->nanswers++] = (struct answer){ ev->dev, ev->page,
						     (int)ev->kind, yes };
}

/* The question on stdout, the answer from stdin: y, n or a. EOF or an
 * unreadable terminal is "no": nothing is written that was not agreed
 * to. */
static bool prompt(struct fsck_ctx *c, const struct dg_chk_event *ev)
{
	char line[64];

	/* The progress bar (stderr) gives way to the question. */
	if (c->tty && !c->json && c->last_draw) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		c->last_draw = 0;
	}
	for (;;) {
		printf("%s: ", pr_get((int)ev->kind)->name);
		if (ev->dev >= 0)
			printf("device %d ", ev->dev);
		if (ev->page >= 0)
			printf("page %lld ", (long long)ev->page);
		if (ev->vpn >= 0)
			printf("vpn %lld ", (long long)ev->vpn);
		printf("(%s): %s.\n%s? (yes, no, all) [no] ",
		       ev->structure ? ev->structure : "?", ev->detail,
		       ev->action[0] ? ev->action : "Repair");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin)) {
			printf("\n");
			return false;
		}
		line[strcspn(line, "\r\n")] = 0;
		if (!strcmp(line, "y") || !strcmp(line, "yes"))
			return true;
		if (!line[0] || !strcmp(line, "n") || !strcmp(line, "no"))
			return false;
		if (!strcmp(line, "a") || !strcmp(line, "all")) {
			c->yes_to_all = true;
			return true;
		}
		printf("Please answer yes, no or all.\n");
	}
}

bool fix_problem(struct fsck_ctx *c, const struct dg_chk_event *ev)
{
	struct answer *a = find_answer(c, ev->dev, ev->page);
	bool yes;

	/* -n, -y and -p decide by the problem alone. */
	if (c->mode != MODE_ASK)
		return pr_mode_allows(c->mode, (int)ev->kind);
	if (a)
		return a->yes;
	if (pr_get((int)ev->kind)->flags & PR_NOFIX)
		return false;
	yes = c->yes_to_all || prompt(c, ev);
	keep_answer(c, ev, yes);
	return yes;
}

bool fix_declined(const struct fsck_ctx *c, int dev, int64_t page)
{
	const struct answer *a = find_answer(c, dev, page);

	return a && !a->yes;
}

/* The question a finding asks (ask.c takes events, as the engine
 * gives them). */
bool ask_finding(struct fsck_ctx *c, const struct finding *f,
			const char *action)
{
	return ask_finding_as(c, f, (enum dg_chk_kind)f->code, action);
}

bool ask_finding_as(struct fsck_ctx *c, const struct finding *f,
		    enum dg_chk_kind kind, const char *action)
{
	struct dg_chk_event ev;

	dg_chk_event_init(&ev, kind, f->structure);
	ev.dev = f->dev;
	ev.page = f->page;
	ev.vpn = f->vpn;
	ev.ino = f->ino;
	ev.fixable = true;
	snprintf(ev.detail, sizeof(ev.detail), "%s", f->detail);
	snprintf(ev.action, sizeof(ev.action), "%s", action ? action
							   : f->action);
	return fix_problem(c, &ev);
}

/* Ask about each fixable finding in [first, c->nf); true when every
 * answer was yes. The ones declined are marked so in the report. */
bool ask_findings(struct fsck_ctx *c, size_t first)
{
	bool all = true;

	for (size_t i = first; i < c->nf; i++) {
		struct finding *f = &c->f[i];

		if (!f->fixable || ask_finding(c, f, NULL))
			continue;
		f->declined = c->mode == MODE_ASK;
		all = false;
	}
	return all;
}
