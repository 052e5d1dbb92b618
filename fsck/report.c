// SPDX-License-Identifier: MIT
/* report.c -- findings as text or --json; a progress bar on a terminal */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsck.h"

double now_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ctx_add(struct fsck_ctx *c, const struct dg_chk_event *ev)
{
	struct finding *f;

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
	f->fixed = ev->fixed;
	f->fixable = ev->fixable;
}

void ctx_event(void *arg, const struct dg_chk_event *ev)
{
	ctx_add(arg, ev);
}

bool ctx_ask(void *arg, const struct dg_chk_event *ev)
{
	struct fsck_ctx *c = arg;

	return fix_problem(c->mode, (int)ev->kind);
}

void ctx_progress(void *arg, uint64_t done, uint64_t total)
{
	struct fsck_ctx *c = arg;
	double t = now_secs(), el;

	if (!c->tty || c->json || (t - c->last_draw < 0.1 && done < total))
		return;
	c->last_draw = t;
	if (!c->t0)
		c->t0 = t;
	el = t - c->t0;
	fprintf(stderr, "\r%-12s [", c->phase);
	for (int i = 0; i < 30; i++)
		fputc(total && (uint64_t)i * total < done * 30 ? '#' : '.',
		      stderr);
	fprintf(stderr, "] %3.0f%% %8.1f MiB/s ",
		total ? 100.0 * (double)done / (double)total : 100.0,
		el > 0 ? (double)c->stats.bytes_checked / el / 1048576.0 : 0);
	fflush(stderr);
}

void report_progress_end(struct fsck_ctx *c)
{
	if (c->tty && !c->json && c->last_draw) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	c->t0 = 0;
	c->last_draw = 0;
}

int report_exit_code(const struct fsck_ctx *c)
{
	int code = FSCK_OK;

	for (size_t i = 0; i < c->nf; i++)
		code |= c->f[i].fixed && !(pr_get(c->f[i].code)->flags & PR_LOSS)
				? FSCK_NONDESTRUCT
				: FSCK_UNCORRECTED;
	return code;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static const char *dev_path(const struct fsck_ctx *c, int dev)
{
	const char *p = c->vol && dev >= 0 ? dg_vol_dev_path(c->vol,
							     (unsigned)dev)
					   : NULL;

	return p ? p : "";
}

void report_print(struct fsck_ctx *c, int exit_code)
{
	size_t fixed = 0, left = 0;

	for (size_t i = 0; i < c->nf; i++)
		c->f[i].fixed ? fixed++ : left++;
	if (c->json) {
		printf("{\"volume\": \"%s\", \"mode\": \"%s\", \"exit\": %d, "
		       "\"rows_checked\": %llu, \"pages_checked\": %llu, "
		       "\"bytes_checked\": %llu, \"seconds\": %.3f, "
		       "\"corrected\": %zu, \"uncorrected\": %zu, "
		       "\"findings\": [",
		       c->uuid, c->mode == MODE_N ? "n"
				: c->mode == MODE_Y ? "y" : "p",
		       exit_code, (unsigned long long)c->stats.rows_checked,
		       (unsigned long long)c->stats.pages_checked,
		       (unsigned long long)c->stats.bytes_checked,
		       c->secs_redundancy, fixed, left);
		for (size_t i = 0; i < c->nf; i++) {
			const struct finding *f = &c->f[i];

			printf("%s\n  {\"code\": \"%s\", \"device\": %d, "
			       "\"device_path\": ", i ? "," : "",
			       pr_get(f->code)->name, f->dev);
			json_str(dev_path(c, f->dev));
			printf(", \"page\": %lld, \"vpn\": %lld, "
			       "\"structure\": ", (long long)f->page,
			       (long long)f->vpn);
			json_str(f->structure);
			printf(", \"ino\": %llu, \"file\": ",
			       (unsigned long long)f->ino);
			if (f->file[0])
				json_str(f->file);
			else
				printf("null");
			printf(", \"problem\": ");
			json_str(pr_get(f->code)->message);
			printf(", \"detail\": ");
			json_str(f->detail);
			printf(", \"action\": ");
			json_str(f->fixed ? f->action : f->fixable
				 ? "none (not repaired in this mode)"
				 : f->action);
			printf(", \"fixed\": %s}", f->fixed ? "true" : "false");
		}
		printf("%s]}\n", c->nf ? "\n" : "");
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
		       f->fixed ? f->action
		       : f->fixable ? "not repaired (-n)" : f->action);
	}
	if (c->verbose || c->nf)
		printf("%s: %llu rows, %llu pages checked in %.2f s\n",
		       c->uuid, (unsigned long long)c->stats.rows_checked,
		       (unsigned long long)c->stats.pages_checked,
		       c->secs_redundancy);
	if (!c->nf)
		printf("%s: clean\n", c->uuid);
	else
		printf("%s: %zu problems, %zu corrected, %zu left "
		       "uncorrected\n", c->uuid, c->nf, fixed, left);
}
