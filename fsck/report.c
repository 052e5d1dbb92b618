// SPDX-License-Identifier: MIT
/* report.c -- findings as text or --json; a progress bar on a terminal */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsck.h"
#include "json.h"

double now_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void say_error(struct fsck_ctx *c, const char *fmt, ...)
{
	size_t n = strlen(c->error);
	va_list ap;

	va_start(ap, fmt);
	fputs("fsck.daxguard: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	/* Several reasons (one per refused path) are joined with "; ". */
	if (n && n + 2 < sizeof(c->error)) {
		memcpy(c->error + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	if (n < sizeof(c->error))
		vsnprintf(c->error + n, sizeof(c->error) - n, fmt, ap);
	va_end(ap);
	n = strlen(c->error);
	while (n && c->error[n - 1] == '\n')
		c->error[--n] = 0;
}

void ctx_add(struct fsck_ctx *c, const struct dg_chk_event *ev)
{
	struct finding *f;

	/* A page given up by this run, found so again by the pass after a
	 * restart: one finding, the give-up (give_up.c). */
	if (ev->kind == DG_CHK_PAGE_GIVEN_UP && !ev->fixed)
		for (size_t i = 0; i < c->nf; i++)
			if (c->f[i].code == PR_2_PAGE_GIVEN_UP && c->f[i].fixed &&
			    c->f[i].dev == ev->dev && c->f[i].page == ev->page)
				return;

	if (c->nf == c->capf) {
		size_t cap = c->capf ? c->capf * 2 : 64;
		struct finding *n = realloc(c->f, cap * sizeof(*n));

		if (!n)
			return; /* the exit code still reflects it below */
		c->f = n;
		c->capf = cap;
	}
	f = &c->f[c->nf++];
	memset(f, 0, sizeof(*f));
	f->code = (int)ev->kind;
	f->dev = ev->dev;
	f->page = ev->page;
	f->vpn = ev->vpn;
	f->ino = ev->ino;
	snprintf(f->structure, sizeof(f->structure), "%s",
		 ev->structure ? ev->structure : "");
	snprintf(f->detail, sizeof(f->detail), "%s", ev->detail);
	snprintf(f->action, sizeof(f->action), "%s", ev->action);
	snprintf(f->name, sizeof(f->name), "%s", ev->name);
	f->cleared = ev->cleared;
	f->dir = ev->dir;
	f->fixed = ev->fixed;
	f->fixable = ev->fixable;
	/* The engine reports what a writable pass would do; a repair
	 * declined was not made. */
	if (f->fixable && fix_declined(c, f->dev, f->page)) {
		f->fixed = false;
		f->declined = true;
	}
}

void ctx_event(void *arg, const struct dg_chk_event *ev)
{
	ctx_add(arg, ev);
}

bool ctx_ask(void *arg, const struct dg_chk_event *ev)
{
	return fix_problem(arg, ev);
}

void ctx_progress(void *arg, uint64_t done, uint64_t total)
{
	struct fsck_ctx *c = arg;
	double t = now_secs(), el;

	if (!c->tty || c->json || (t - c->last_draw < 0.1 && done < total))
		return;
	c->last_draw = t;
	if (!c->t0) {
		c->t0 = t;
		c->done0 = done;
	}
	el = t - c->t0;
	fprintf(stderr, "\r%-12s [", c->phase);
	for (int i = 0; i < 30; i++)
		fputc(total && (uint64_t)i * total < done * 30 ? '#' : '.',
		      stderr);
	fprintf(stderr, "] %3.0f%% %8.1f MiB/s ",
		total ? 100.0 * (double)done / (double)total : 100.0,
		el > 0 ? (double)c->stats.bytes_checked / el / 1048576.0 : 0);
	/* At the pace since the bar appeared; none before half a second
	 * (a guess from the first rows swings wildly). */
	if (done < total && done > c->done0 && el >= 0.5) {
		double left = el * (double)(total - done) /
			      (double)(done - c->done0);

		fprintf(stderr, "ETA %d:%02d:%02d ", (int)(left / 3600),
			(int)(left / 60) % 60, (int)left % 60);
	} else {
		fputs("\033[K", stderr);
	}
	fflush(stderr);
}

void report_progress_end(struct fsck_ctx *c)
{
	if (c->tty && !c->json && c->last_draw) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	c->t0 = 0;
	c->done0 = 0;
	c->last_draw = 0;
}

bool report_is_warning(const struct finding *f)
{
	return !f->fixed && (pr_get(f->code)->flags & PR_WARNING);
}

int report_exit_code(const struct fsck_ctx *c)
{
	int code = FSCK_OK;

	for (size_t i = 0; i < c->nf; i++) {
		const struct finding *f = &c->f[i];

		if (report_is_warning(f))
			continue;	/* given up earlier, reported then */
		code |= f->fixed && !(pr_get(f->code)->flags & PR_LOSS)
				? FSCK_NONDESTRUCT
				: FSCK_UNCORRECTED;
	}
	if (c->unconverged)
		code |= FSCK_UNCORRECTED;
	/* As e2fsck: errors left (or data given up) is 4 whatever else was
	 * corrected; 1 alone says the volume is now clean. */
	if (code & FSCK_UNCORRECTED)
		code &= ~FSCK_NONDESTRUCT;
	return code;
}

/*
 * Why a repairable finding was left as it is, in the words of the mode
 * that ran: -n and -p never make it, the user declined it, or -y tried
 * and the repair failed. Never "-n" in another mode.
 */
static const char *unrepaired(const struct fsck_ctx *c,
			      const struct finding *f)
{
	if (f->declined)
		return "declined";
	switch (c->mode) {
	case MODE_N:
		return "not repaired (-n)";
	case MODE_P:
		return "not repaired (-p): run fsck.daxguard -y";
	case MODE_ASK:
		return "not repaired";
	default:
		return "could not be repaired";
	}
}

static const char *unrepaired_json(const struct fsck_ctx *c,
				   const struct finding *f)
{
	if (f->declined)
		return "none (declined)";
	return c->mode == MODE_Y ? "none (could not be repaired)"
				 : "none (not repaired in this mode)";
}

static const char *dev_path(const struct fsck_ctx *c, int dev)
{
	const char *p = c->vol && dev >= 0 ? dg_vol_dev_path(c->vol,
							     (unsigned)dev)
					   : NULL;

	return p ? p : "";
}

/* The --json report; codes are pr_get()'s stable names. */
static void report_json(const struct fsck_ctx *c, int exit_code, size_t fixed,
			size_t left, size_t warn)
{
	struct json_object *r = json_object_new_object();
	struct json_object *list = json_object_new_array();
	char secs[32];

	json_object_object_add(r, "volume", json_object_new_string(c->uuid));
	json_object_object_add(r, "mode", json_object_new_string(
		c->mode == MODE_N ? "n" : c->mode == MODE_Y ? "y"
		: c->mode == MODE_P ? "p" : "ask"));
	json_object_object_add(r, "exit", json_object_new_int(exit_code));
	if (c->error[0])
		json_add_bytes(r, "error", c->error);
	json_object_object_add(r, "passes", json_object_new_int(
		(int)c->passes));
	json_object_object_add(r, "replayed_in_memory",
			       json_object_new_boolean(c->replayed_in_memory));
	json_object_object_add(r, "converged",
			       json_object_new_boolean(!c->unconverged));
	json_object_object_add(r, "rows_checked",
			       json_object_new_uint64(c->stats.rows_checked));
	json_object_object_add(r, "pages_checked",
			       json_object_new_uint64(c->stats.pages_checked));
	/* Rows verified ahead by the workers, and in place on the walk's
	 * thread (the tests see the fast paths are taken). */
	json_object_object_add(r, "rows_ahead",
			       json_object_new_uint64(c->stats.rows_ahead));
	json_object_object_add(r, "rows_in_place",
			       json_object_new_uint64(c->stats.rows_in_place));
	json_object_object_add(r, "meta_outside_zone",
			       c->meta_outside < 0 ? NULL
			       : json_object_new_int64(c->meta_outside));
	json_object_object_add(r, "bytes_checked",
			       json_object_new_uint64(c->stats.bytes_checked));
	snprintf(secs, sizeof(secs), "%.3f", c->secs_redundancy);
	json_object_object_add(r, "seconds", json_object_new_double_s(
		c->secs_redundancy, secs));
	/* How long the rebuild or resync of devices took (null: none). */
	snprintf(secs, sizeof(secs), "%.3f", c->secs_rebuild);
	json_object_object_add(r, "rebuild_seconds", c->secs_rebuild < 0 ? NULL
			       : json_object_new_double_s(c->secs_rebuild,
							  secs));
	json_object_object_add(r, "corrected", json_object_new_uint64(fixed));
	json_object_object_add(r, "uncorrected", json_object_new_uint64(left));
	json_object_object_add(r, "warnings", json_object_new_uint64(warn));
	for (size_t i = 0; i < c->nf; i++) {
		const struct finding *f = &c->f[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "code", json_object_new_string(
			pr_get(f->code)->name));
		json_object_object_add(o, "device", json_object_new_int(f->dev));
		json_add_bytes(o, "device_path", dev_path(c, f->dev));
		json_object_object_add(o, "page", json_object_new_int64(f->page));
		json_object_object_add(o, "vpn", json_object_new_int64(f->vpn));
		json_object_object_add(o, "structure",
				       json_object_new_string(f->structure));
		json_object_object_add(o, "ino", json_object_new_uint64(f->ino));
		json_add_bytes(o, "file", f->file[0] ? f->file : NULL);
		json_object_object_add(o, "problem", json_object_new_string(
			pr_get(f->code)->message));
		json_add_bytes(o, "detail", f->detail);
		json_add_bytes(o, "action", f->fixed || !f->fixable
						    ? f->action
						    : unrepaired_json(c, f));
		json_object_object_add(o, "declined",
				       json_object_new_boolean(f->declined));
		json_object_object_add(o, "warning", json_object_new_boolean(
			report_is_warning(f)));
		json_object_object_add(o, "fixed",
				       json_object_new_boolean(f->fixed));
		json_object_array_add(list, o);
	}
	json_object_object_add(r, "findings", list);
	json_print(r, stdout, 1);
}

/* Nothing found but the journal's pending updates (and warnings). */
static bool only_pending(const struct fsck_ctx *c)
{
	for (size_t i = 0; i < c->nf; i++)
		if (c->f[i].code != PR_1_JOURNAL_PENDING &&
		    !report_is_warning(&c->f[i]))
			return false;
	return true;
}

static const char *warn_note(size_t warn)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), ", %zu warning%s", warn,
		 warn == 1 ? "" : "s");
	return buf;
}

void report_print(struct fsck_ctx *c, int exit_code)
{
	size_t fixed = 0, left = 0, warn = 0;

	for (size_t i = 0; i < c->nf; i++)
		report_is_warning(&c->f[i]) ? warn++
		: c->f[i].fixed		    ? fixed++
					    : left++;
	if (c->json) {
		report_json(c, exit_code, fixed, left, warn);
		return;
	}
	for (size_t i = 0; i < c->nf; i++) {
		const struct finding *f = &c->f[i];

		printf("%s: ", pr_get(f->code)->name);
		if (f->dev >= 0)
			printf("device %d ", f->dev);
		if (f->page >= 0)
			printf("page %lld ", (long long)f->page);
		if (f->vpn >= 0)
			printf("vpn %lld ", (long long)f->vpn);
		printf("(%s%s%s%s): %s: %s\n", f->structure,
		       f->file[0] ? " of '" : "", f->file,
		       f->file[0] ? "'" : "", f->detail,
		       f->fixed || !f->fixable ? f->action
					       : unrepaired(c, f));
	}
	if (c->verbose || c->nf)
		printf("%s: %llu rows, %llu pages checked in %.2f s\n",
		       c->uuid, (unsigned long long)c->stats.rows_checked,
		       (unsigned long long)c->stats.pages_checked,
		       c->secs_redundancy);
	if (c->unconverged)
		printf("%s: the repairs of pass %u still changed the volume; "
		       "run fsck.daxguard -y again\n", c->uuid, c->passes);
	if (c->replayed_in_memory)
		printf("%s: the journal was replayed in memory only: the "
		       "devices still need it (the mount or fsck.daxguard -y "
		       "replays it)%s\n", c->uuid,
		       only_pending(c) ? "; after the replay the volume is "
					 "consistent" : "");
	if (c->meta_outside > 0)
		printf("%s: %lld metadata pages lie outside the metadata zone "
		       "(it was full): they have no ditto copies\n", c->uuid,
		       (long long)c->meta_outside);
	if (!c->nf)
		printf("%s: clean\n", c->uuid);
	else if (c->nf == warn)
		printf("%s: clean, %zu warning%s: what an earlier repair gave "
		       "up\n", c->uuid, warn, warn == 1 ? "" : "s");
	else
		printf("%s: %zu problems, %zu corrected, %zu left "
		       "uncorrected%s\n", c->uuid, c->nf - warn, fixed, left,
		       warn ? warn_note(warn) : "");
}
