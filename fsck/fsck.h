/* SPDX-License-Identifier: MIT */
/* fsck.h -- fsck.daxguard's context, shared by main, passes and report */
#ifndef DG_FSCK_H
#define DG_FSCK_H

#include <stdbool.h>
#include <stdint.h>

#include "fscheck.h"
#include "problem.h"

/* fsck(8) exit bits (e2fsck FSCK_*). */
#define FSCK_OK		 0
#define FSCK_NONDESTRUCT 1
#define FSCK_UNCORRECTED 4
#define FSCK_ERROR	 8
#define FSCK_USAGE	 16

/* Passes over the volume one run makes at most: the first, and the
 * restarts after repairs that uncover more (pass_fs.c). */
#define FSCK_MAX_PASSES 4

struct finding {
	int code;		/* enum pr_code */
	int dev;
	int64_t page, vpn;
	uint64_t ino;
	char structure[16];
	char file[512];		/* path on the volume, "" when unknown */
	char name[256];		/* an entry of directory ino (file = its path) */
	bool cleared;		/* ino goes with the repair: named by the */
	uint64_t dir;		/* entry name of dir, or "#INO" (check.h) */
	char detail[160];
	char action[64];
	bool fixed, fixable;
	bool declined;		/* asked, and the answer was no (ask.c) */
};

struct answer;

struct fsck_ctx {
	enum fsck_mode mode;
	bool force, verbose, json, tty;
	unsigned threads;	/* --threads; 0: the engine's default */
	const char **paths;
	unsigned n;
	/* --replace N=PATH: rebuild device N onto PATH, whatever it holds */
	const char *replace[DG_MAX_DEVS];
	struct dg_vol *vol;
	struct finding *f;
	size_t nf, capf;
	struct dg_chk_stats stats;
	double secs_redundancy;
	double secs_rebuild;	/* the device rebuild or resync; < 0: none */
	/* metadata pages a full zone put among the data rows (no ditto
	 * copies); -1: not known */
	int64_t meta_outside;
	const char *phase;
	double t0, last_draw;
	uint64_t done0;		/* progress done at t0, for the ETA */
	char uuid[37];
	int rebuild_failed;
	unsigned oflags;	/* DG_OPEN_SUSPECT | DG_OPEN_REPAIR while
				 * devices behind the volume are in use */
	unsigned passes;	/* page and filesystem passes made */
	bool unconverged;	/* the last pass still repaired */
	bool replayed_in_memory; /* -n: the journal needed recovery, and
				  * the checks saw it replayed in a
				  * copy-on-write view (replay_check.c) */
	char error[512];	/* why the run stopped, "" when it did not */
	/* The run's state the passes hand on (fsck.c, run()). */
	bool repair;		/* write repairs: not -n, nothing declined
				 * that keeps the run a check, no device
				 * left missing */
	bool rootless;		/* opened as a device set alone: the root
				 * lives only on missing devices */
	size_t first_super;	/* first finding of pass 0 */
	size_t first_of_pass;	/* first finding of this page pass */
	char err[512];		/* the last open's or rebuild's message */
	/* ask.c: the answers given, by device page; "all" was answered */
	struct answer *answers;
	size_t nanswers, capanswers;
	bool yes_to_all;
};

/* Whether to make the repair finding ev offers: by the mode, or asked
 * (once per device page) without one (ask.c). */
bool fix_problem(struct fsck_ctx *c, const struct dg_chk_event *ev);
/* The user answered no about (dev, page). */
bool fix_declined(const struct fsck_ctx *c, int dev, int64_t page);


void ctx_add(struct fsck_ctx *c, const struct dg_chk_event *ev);
/* Engine callbacks. */
void ctx_event(void *arg, const struct dg_chk_event *ev);
bool ctx_ask(void *arg, const struct dg_chk_event *ev);
void ctx_progress(void *arg, uint64_t done, uint64_t total);
double now_secs(void);

/* Passes (fsck.c, run()): each returns PASS_NEXT to go on,
 * PASS_RESTART to go back to the page pass, or the exit code the run
 * stops with. */
#define PASS_NEXT    (-1)
#define PASS_RESTART (-2)
int pass_open(struct fsck_ctx *c);	/* pass_open.c */
int pass_rebuild(struct fsck_ctx *c);	/* pass_rebuild.c */
int pass_super(struct fsck_ctx *c);	/* pass_super_journal.c */
int pass_journal(struct fsck_ctx *c);	/* pass_super_journal.c */
int pass_reopen(struct fsck_ctx *c);	/* pass_reopen.c */
int pass_redundancy(struct fsck_ctx *c); /* pass_redundancy.c */
int pass_fs(struct fsck_ctx *c);	/* pass_fs.c */
int pass_restart(struct fsck_ctx *c);	/* pass_fs.c */
int pass_names(struct fsck_ctx *c);	/* pass_names.c */

/* Open the volume on c->paths into c->vol, waiting for the daemon of
 * an unmounted volume to let go (pass_open.c). */
int open_vol(struct fsck_ctx *c, unsigned flags, char *err, size_t errlen);
/* Say why the run stops, close the volume: FSCK_ERROR (pass_open.c). */
int fsck_fail(struct fsck_ctx *c, const char *what, const char *err);
/* Whether path is a --replace path, and for which slot (fsck.c). */
bool replace_slot(const struct fsck_ctx *c, const char *path,
		  unsigned *slot);
/* Ask about finding f (with action, or its own); ask about each
 * fixable finding from first on, true when all were agreed to (ask.c). */
bool ask_finding(struct fsck_ctx *c, const struct finding *f,
		 const char *action);
/* ... as a finding of another kind (a repair its own question asks). */
bool ask_finding_as(struct fsck_ctx *c, const struct finding *f,
		    enum dg_chk_kind kind, const char *action);
bool ask_findings(struct fsck_ctx *c, size_t first);
/* Without repairs: a journal that needs recovery replayed into a
 * copy-on-write view, which the checks then see (replay_check.c). */
void replay_in_memory(struct fsck_ctx *c);
/* Give up the pages of files lost beyond parity (give_up.c). */
void give_up_pages(struct fsck_ctx *c);

/* Report (report.c). */
void report_progress_end(struct fsck_ctx *c);
int report_exit_code(const struct fsck_ctx *c);
/* A finding found as an earlier repair left it (PR_WARNING): exit 0. */
bool report_is_warning(const struct finding *f);
void report_print(struct fsck_ctx *c, int exit_code);
/* "fsck.daxguard: MESSAGE" on stderr, kept for the --json report
 * ("error"), so a run that stops early still says why in JSON. */
void say_error(struct fsck_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* DG_FSCK_H */
