// SPDX-License-Identifier: MIT
/* scrub.c -- the background scrub: a thread, its commands, its record */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ctl_proto.h"
#include "daemon.h"
#include "json.h"

_Static_assert(CTL_SCRUB_MAX_THREADS == DG_PAR_MAX_THREADS,
	       "daxguard-ctl's --threads bound is the engine's");

/* Rows checked between looks at the commands and the rate: a row locks
 * one of the row locks for a few microseconds, a batch (128 KiB a
 * device) is well under a millisecond in memory, a few read from a cold
 * disk, so pause and cancel answer at once. Each batch looks its
 * checksum pages up afresh (every copy read and verified): 8 rows a
 * batch made that a third of the scrub's work, 32 a tenth.
 *
 * With threads (dg_vol_scrub_threads()) the batches stay these, so the
 * faults are looked at, counted and classified after the same rows
 * whatever their number; the threads verify ahead of them, a batch of
 * their own (DG_PAR_BATCH_BLOCKS blocks of rows a thread: 128 MiB of a
 * 4-device volume with 4 threads, some 60 ms) each time the scrub
 * reaches a row none verified, and the scrub's batches take their
 * verdicts (a row updated since is checked again, there). A pause,
 * cancel or unmount halts them first (dg_vol_scrub_threads_halt()): it
 * waits for the block each is on (2 MiB a device; milliseconds, more
 * from a cold disk), not their batch, then for the scrub's own batch,
 * checked by its thread alone where the threads left no verdict. */
#define BATCH_ROWS 32

/* With a rate the threads verify at most about this long of it ahead of
 * the scrub (1/10 s), so its reads come about as evenly spread as one
 * thread's, not a batch of the threads at a time. */
#define AHEAD_PER_S 10

static const char *const state_names[] = {
	[DG_SCRUB_NONE] = "none",	    [DG_SCRUB_RUNNING] = "running",
	[DG_SCRUB_PAUSED] = "paused",	    [DG_SCRUB_CANCELLED] = "cancelled",
	[DG_SCRUB_FINISHED] = "finished",
};

/* Bytes of one row on all devices: what checking a written row reads. */
static uint64_t row_bytes(struct dg_daemon *dd)
{
	struct dg_vol_info in;

	dg_vol_get_info(dd->vol, &in);
	return (uint64_t)in.ndev * DG_PAGE_SIZE;
}

__attribute__((format(printf, 3, 4)))
static void post(struct dg_daemon *dd, enum dg_ev_type t, const char *fmt,
		 ...)
{
	struct dg_event ev;
	va_list ap;

	dg_event_init(&ev, t);
	va_start(ap, fmt);
	vsnprintf(ev.detail, sizeof(ev.detail), fmt, ap);
	va_end(ap);
	dg_event_post(&dd->events, &ev);
}

/* Save the record; s->job.lock held. A read-only mount keeps it in
 * memory only (nothing may be written), and says so in status. */
static void save(void *arg)
{
	struct dg_daemon *dd = arg;
	struct dg_scrub *s = &dd->scrub;
	struct dg_scrub_rec rec = s->rec;
	struct dg_vol_info in;

	dg_vol_get_info(dd->vol, &in);
	if (in.read_only) {
		s->save_err = -EROFS;
		return;
	}
	if (rec.state == DG_SCRUB_RUNNING)
		rec.run_ms = s->run_ms0 + (dg_now_ms() - s->job.run_since_ms);
	/* The update path takes row locks, never the scrub's lock: safe
	 * to call with it held. */
	s->save_err = dg_vol_scrub_save(dd->vol, &rec);
	if (s->save_err)
		dg_log(DG_LOG_WARNING, "scrub: cannot save its position: %s",
		       strerror(-s->save_err));
}

/* Unrecoverable pages the engine reported since the last look: a data
 * page a file holds is lost data (status names the file); a free one
 * is reset at once, so it is not reported again (issue 16). The reset
 * rewrites the row whole, parity included, so a parity page of a row
 * reset counts as repaired too: data pages first, then the rest. */
static void look_at_faults(struct dg_daemon *dd, uint64_t *in_use,
			   uint64_t *other, uint64_t *reset)
{
	struct dg_scrub *s = &dd->scrub;
	struct dg_fault_event ev[32], rest[64];
	uint64_t rows_reset[64];
	unsigned n, nrest = 0, nreset = 0, nwait = 0;

	/* The faults are events before the scrub's own next one is, so
	 * the ring keeps them in the order they happened. */
	dg_ctl_log_faults(dd);
	while ((n = dg_vol_fault_events(dd->vol, s->fault_seq, ev, 32))) {
		for (unsigned i = 0; i < n; i++) {
			s->fault_seq = ev[i].seq;
			/* The scrub's own, as its report counts them: a
			 * reader's faults before or beside it are not. */
			if (ev[i].kind != DG_FAULT_UNRECOVERABLE ||
			    !ev[i].by_scrub)
				continue;
			switch (dg_ctl_lost_page(dd, &ev[i], true)) {
			case 1:
				++*in_use;
				break;
			case 2:
				nwait++;
				break;
			case 0:
				++*reset;
				if (nreset < 64)
					rows_reset[nreset++] = ev[i].row;
				break;
			default:
				if (nrest < 64)
					rest[nrest++] = ev[i];
				else
					++*other;
			}
		}
	}
	/* In use, whose not known at once (a file not in core, or
	 * metadata): the inode table says, before the report counts. */
	if (nwait) {
		unsigned named = dg_ctl_resolve_lost(dd);

		if (named > nwait)
			named = nwait;
		*in_use += named;
		*other += nwait - named;
	}
	for (unsigned i = 0; i < nrest; i++) {
		bool fixed = false;

		for (unsigned j = 0; j < nreset && !fixed; j++)
			fixed = rest[i].what == DG_WHAT_PARITY &&
				rest[i].row == rows_reset[j];
		if (fixed)
			++*reset;
		else
			++*other;
	}
}

static void *scrub_main(void *arg)
{
	struct dg_daemon *dd = arg;
	struct dg_scrub *s = &dd->scrub;
	struct dg_vol_info in;
	uint64_t rows, rb = row_bytes(dd), ahead;
	struct dg_par *par;
	bool repair;
	int ret = 0;

	dg_vol_get_info(dd->vol, &in);
	rows = in.rows;
	repair = !in.read_only;
	pthread_mutex_lock(&s->job.lock);
	/* The threads for this run, from its start (or resume) to its
	 * pause, cancel, end or the unmount; none when one is asked for or
	 * no other can be had. */
	par = s->par = dg_vol_scrub_threads(dd->vol, s->threads);
	s->threads_used = dg_vol_scrub_threads_n(par);
	ahead = s->rec.rate ? s->rec.rate / AHEAD_PER_S / rb : rows;
	while (s->job.req == DG_JOB_GO && s->rec.next_row < rows) {
		uint64_t first = s->rec.next_row;
		uint64_t end = first + BATCH_ROWS < rows ? first + BATCH_ROWS
							 : rows;
		/* A stretch of rows never written is one batch: the engine
		 * skips it whole, and the rate counts rows verified. */
		uint64_t used = dg_vol_next_used_row(dd->vol, first, rows);

		if (used > end)
			end = used;
		struct dg_scrub_report r = { 0 };
		uint64_t in_use = 0, other = 0, reset = 0;

		/* The rows unlocked: status, pause and cancel answer while
		 * the batch runs; each row's lock is the engine's. */
		pthread_mutex_unlock(&s->job.lock);
		ret = dg_vol_scrub_rows_par(dd->vol, repair, first, end, par,
					    end + ahead < end ? rows
							      : end + ahead,
					    &r);
		look_at_faults(dd, &in_use, &other, &reset);
		/* The engine keeps its last DG_FAULT_RING events: past that,
		 * unrecoverable pages this batch met and nobody classified
		 * count as not repaired, so -w never exits 0 on them. */
		if (r.unrecoverable > in_use + other + reset)
			other += r.unrecoverable - (in_use + other + reset);
		pthread_mutex_lock(&s->job.lock);
		if (ret)
			break;
		s->rec.next_row = end;
		s->rec.rep.rows_checked += r.rows_checked;
		s->rec.rep.detected += r.detected;
		s->rec.rep.repaired += r.repaired;
		s->rec.rep.unrecoverable += r.unrecoverable;
		s->rec.rep.parity_mismatch += r.parity_mismatch;
		s->rec.rep.parity_fixed += r.parity_fixed;
		s->lost_in_use += in_use;
		s->lost_other += other;
		s->pages_reset += reset;
		dg_job_tick(&s->job);
		/* The bytes verified in this run within the rate. */
		dg_job_pace(&s->job,
			    s->rec.rep.rows_checked * rb - s->verified0,
			    s->rec.rate);
	}
	/* Idle between batches: joined at once. */
	s->par = NULL;
	dg_vol_scrub_threads_stop(par);
	if (!ret && s->job.req == DG_JOB_GO) {
		struct dg_scrub_report r = { 0 };
		uint64_t in_use = 0, other = 0, reset = 0;

		pthread_mutex_unlock(&s->job.lock);
		ret = dg_vol_scrub_ditto(dd->vol, repair, &r);
		look_at_faults(dd, &in_use, &other, &reset);
		pthread_mutex_lock(&s->job.lock);
		s->rec.rep.detected += r.detected;
		s->rec.rep.repaired += r.repaired;
		s->rec.rep.unrecoverable += r.unrecoverable;
		s->lost_in_use += in_use;
		s->lost_other += other;
		s->pages_reset += reset;
	}
	s->rec.run_ms = s->run_ms0 + (dg_now_ms() - s->job.run_since_ms);
	if (ret) {
		dg_log(DG_LOG_ERR, "scrub stopped at row %" PRIu64 ": %s",
		       s->rec.next_row, strerror(-ret));
		s->rec.state = DG_SCRUB_PAUSED;
		post(dd, DG_EV_SCRUB_PAUSED, "stopped by an error at row %"
		     PRIu64 ": %s", s->rec.next_row, strerror(-ret));
	} else if (s->job.req == DG_JOB_GO) {
		s->rec.state = DG_SCRUB_FINISHED;
		s->rec.ended = (uint64_t)time(NULL);
		post(dd, DG_EV_SCRUB_FINISHED, "rows checked %" PRIu64
		     ", detected %" PRIu64 ", repaired %" PRIu64
		     ", unrecoverable %" PRIu64 ", free pages reset %" PRIu64,
		     s->rec.rep.rows_checked, s->rec.rep.detected,
		     s->rec.rep.repaired, s->rec.rep.unrecoverable,
		     s->pages_reset);
	} else if (s->job.req == DG_JOB_PAUSE) {
		s->rec.state = DG_SCRUB_PAUSED;
		post(dd, DG_EV_SCRUB_PAUSED, "at row %" PRIu64 " of %" PRIu64,
		     s->rec.next_row, rows);
	} else if (s->job.req == DG_JOB_CANCEL) {
		s->rec.state = DG_SCRUB_CANCELLED;
		s->rec.ended = (uint64_t)time(NULL);
		post(dd, DG_EV_SCRUB_CANCELLED, "at row %" PRIu64 " of %"
		     PRIu64, s->rec.next_row, rows);
	}
	/* DG_JOB_STOP (unmount): the state stays "running", so the
	 * next mount resumes it. */
	save(dd);
	dg_job_done(&s->job);
	return NULL;
}

/* Start the thread on s->rec as it stands; s->job.lock held. */
static int launch(struct dg_daemon *dd)
{
	struct dg_scrub *s = &dd->scrub;

	dg_job_reap(&s->job);
	s->rec.state = DG_SCRUB_RUNNING;
	s->run_ms0 = s->rec.run_ms;
	s->verified0 = s->rec.rep.rows_checked * row_bytes(dd);
	if (dg_job_launch(&s->job)) {
		s->rec.state = DG_SCRUB_PAUSED;
		return -EAGAIN;
	}
	return 0;
}

int dg_scrub_init(struct dg_daemon *dd)
{
	struct dg_scrub *s = &dd->scrub;
	uint64_t from;
	int ret;

	dg_job_init(&s->job, scrub_main, save, dd);
	ret = dg_vol_scrub_load(dd->vol, &s->rec);
	if (ret) {
		dg_log(DG_LOG_WARNING, "scrub: cannot read its record: %s",
		       strerror(-ret));
		memset(&s->rec, 0, sizeof(s->rec));
	}
	/* The engine's fault events before now are the mount's, not ours. */
	{
		struct dg_fault_event ev;

		while (dg_vol_fault_events(dd->vol, s->fault_seq, &ev, 1))
			s->fault_seq = ev.seq;
	}
	if (s->rec.state != DG_SCRUB_RUNNING)
		return 0;
	/* Running at an unmount or a crash: go on from where it was, as
	 * zpool does after an import. */
	pthread_mutex_lock(&s->job.lock);
	/* Where it resumes: the thread moves it on from the launch. */
	from = s->rec.next_row;
	ret = launch(dd);
	pthread_mutex_unlock(&s->job.lock);
	if (!ret)
		post(dd, DG_EV_SCRUB_RESUMED, "after remount, at row %" PRIu64,
		     from);
	return ret;
}

void dg_scrub_stop(struct dg_daemon *dd)
{
	/* The unmount waits for the scrub as a pause does (see there). */
	pthread_mutex_lock(&dd->scrub.job.lock);
	dg_vol_scrub_threads_halt(dd->scrub.par);
	pthread_mutex_unlock(&dd->scrub.job.lock);
	dg_job_stop(&dd->scrub.job);
}

/* ---- status ----------------------------------------------------------- */

struct progress {
	uint64_t rows, row_bytes;
	uint64_t scanned, total, verified; /* bytes */
	uint64_t run_ms;
	double rate;		/* verified bytes per second */
	int64_t eta_s;		/* -1: unknown */
};

static void progress_of(struct dg_daemon *dd, struct progress *p)
{
	struct dg_scrub *s = &dd->scrub;
	struct dg_vol_info in;

	dg_vol_get_info(dd->vol, &in);
	p->rows = in.rows;
	p->row_bytes = (uint64_t)in.ndev * DG_PAGE_SIZE;
	p->total = p->rows * p->row_bytes;
	p->scanned = s->rec.next_row * p->row_bytes;
	p->verified = s->rec.rep.rows_checked * p->row_bytes;
	p->run_ms = s->job.running
			    ? s->run_ms0 + (dg_now_ms() - s->job.run_since_ms)
			    : s->rec.run_ms;
	p->rate = p->run_ms ? (double)p->verified * 1000.0 / (double)p->run_ms
			    : 0;
	p->eta_s = -1;
	if (s->rec.state == DG_SCRUB_FINISHED)
		p->eta_s = 0;
	else if (p->run_ms && s->rec.next_row &&
		 (s->rec.state == DG_SCRUB_RUNNING ||
		  s->rec.state == DG_SCRUB_PAUSED))
		p->eta_s = (int64_t)((double)(p->rows - s->rec.next_row) *
				     (double)p->run_ms /
				     (double)s->rec.next_row / 1000.0);
}

static void human(char *buf, size_t len, double bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	while (bytes >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", bytes, unit[u]);
}

static void status_json(struct dg_daemon *dd, struct dg_out *o)
{
	struct dg_scrub *s = &dd->scrub;
	struct json_object *r = json_object_new_object();
	struct progress p;

	progress_of(dd, &p);
	json_add_str(r, "state", state_names[s->rec.state]);
	json_add_u64(r, "started", s->rec.started);
	json_add_u64(r, "ended", s->rec.ended);
	json_add_u64(r, "next_row", s->rec.next_row);
	json_add_u64(r, "rows", p.rows);
	json_add_u64(r, "bytes_scanned", p.scanned);
	json_add_u64(r, "bytes_total", p.total);
	json_add_u64(r, "bytes_verified", p.verified);
	json_add_u64(r, "run_ms", p.run_ms);
	json_add_u64(r, "rate_bytes_per_s", (uint64_t)p.rate);
	json_add_u64(r, "rate_limit_bytes_per_s", s->rec.rate);
	json_add_u64(r, "threads", s->threads_used);
	json_object_object_add(r, "eta_s", json_object_new_int64(p.eta_s));
	json_add_u64(r, "rows_checked", s->rec.rep.rows_checked);
	json_add_u64(r, "detected", s->rec.rep.detected);
	json_add_u64(r, "repaired", s->rec.rep.repaired);
	json_add_u64(r, "unrecoverable", s->rec.rep.unrecoverable);
	json_add_u64(r, "parity_mismatch", s->rec.rep.parity_mismatch);
	json_add_u64(r, "parity_fixed", s->rec.rep.parity_fixed);
	json_add_u64(r, "unrecoverable_in_use", s->lost_in_use);
	json_add_u64(r, "unrecoverable_free", s->pages_reset + s->lost_other);
	json_add_u64(r, "free_pages_reset", s->pages_reset);
	json_add_u64(r, "unrecoverable_not_reset", s->lost_other);
	json_add_bool(r, "position_saved", s->save_err == 0);
	dg_outf(o, "%s\n", json_line(r));
	json_object_put(r);
}

static void status_text(struct dg_daemon *dd, struct dg_out *o)
{
	struct dg_scrub *s = &dd->scrub;
	struct progress p;
	char a[32], b[32], c[32];

	progress_of(dd, &p);
	if (s->rec.state == DG_SCRUB_NONE) {
		dg_outf(o, "scrub none: no scrub has run on this volume\n");
		return;
	}
	dg_outf(o, "scrub %s, %.1f%% done (row %" PRIu64 " of %" PRIu64 ")\n",
		state_names[s->rec.state],
		p.rows ? 100.0 * (double)s->rec.next_row / (double)p.rows : 100,
		s->rec.next_row, p.rows);
	human(a, sizeof(a), (double)p.scanned);
	human(b, sizeof(b), (double)p.total);
	human(c, sizeof(c), (double)p.verified);
	dg_outf(o, "scanned %s of %s, verified %s in %.1f s\n", a, b, c,
		(double)p.run_ms / 1000.0);
	human(a, sizeof(a), p.rate);
	dg_outf(o, "rate %s/s", a);
	if (s->rec.rate) {
		human(b, sizeof(b), (double)s->rec.rate);
		dg_outf(o, " (limit %s/s)", b);
	}
	if (p.eta_s > 0 && s->rec.state != DG_SCRUB_FINISHED)
		dg_outf(o, ", ETA %" PRId64 ":%02" PRId64 ":%02" PRId64,
			p.eta_s / 3600, p.eta_s / 60 % 60, p.eta_s % 60);
	dg_outf(o, "\n");
	/* The line the synchronous scrub printed, kept for scripts. */
	dg_outf(o, "rows checked %" PRIu64 ", detected %" PRIu64 ", repaired %"
		PRIu64 ", unrecoverable %" PRIu64 ", parity mismatches %" PRIu64
		" (fixed %" PRIu64 ")\n", s->rec.rep.rows_checked,
		s->rec.rep.detected, s->rec.rep.repaired,
		s->rec.rep.unrecoverable, s->rec.rep.parity_mismatch,
		s->rec.rep.parity_fixed);
	if (s->lost_in_use)
		dg_outf(o, "data lost: %" PRIu64 " %s in use cannot be read: "
			"'daxguard-ctl %s status -v' names the files\n",
			s->lost_in_use, s->lost_in_use == 1 ? "page" : "pages",
			dd->mountpoint);
	if (s->pages_reset)
		dg_outf(o, "free pages reset: %" PRIu64 " unreadable %s no "
			"file held given fresh contents\n", s->pages_reset,
			s->pages_reset == 1 ? "page" : "pages");
	if (s->lost_other)
		dg_outf(o, "redundancy lost: %" PRIu64 " parity or checksum "
			"%s cannot be read (no file data in them): unmount "
			"and run fsck.daxguard -y to reset them\n",
			s->lost_other, s->lost_other == 1 ? "page" : "pages");
	if (s->save_err)
		dg_outf(o, "position not saved (%s): a remount starts over\n",
			strerror(-s->save_err));
}

/* ---- commands --------------------------------------------------------- */

static void reply(struct dg_out *o, bool json, bool err, const char *msg)
{
	if (json) {
		struct json_object *r = json_object_new_object();

		json_add_str(r, err ? "error" : "result", msg);
		dg_outf(o, "%s\n", json_line(r));
		json_object_put(r);
	} else {
		dg_outf(o, "%s%s\n", err ? "error: " : "", msg);
	}
}

/* "threads=N" in args: N, 1 to DG_PAR_MAX_THREADS, in digits only;
 * 0 when absent (the default); -1 when it is not such a number. */
static int threads_arg(const char *args)
{
	const char *t = strstr(args, " threads=");
	unsigned n = 0;

	if (!t)
		return 0;
	for (t += 9; *t >= '0' && *t <= '9' && n <= DG_PAR_MAX_THREADS; t++)
		n = n * 10 + (unsigned)(*t - '0');
	if (n < 1 || n > DG_PAR_MAX_THREADS || (*t && *t != ' '))
		return -1;
	return (int)n;
}

/* args: "start [rate=BYTES] [threads=N]", "status", "pause", "resume",
 * "cancel". */
void dg_scrub_cmd(struct dg_daemon *dd, const char *args, bool json,
		  struct dg_out *o)
{
	struct dg_scrub *s = &dd->scrub;
	char msg[160];

	pthread_mutex_lock(&s->job.lock);
	if (!strncmp(args, "status", 6)) {
		if (json)
			status_json(dd, o);
		else
			status_text(dd, o);
	} else if (!strncmp(args, "start", 5)) {
		const char *r = strstr(args, " rate=");
		int threads = threads_arg(args);

		if (threads < 0) {
			snprintf(msg, sizeof(msg), "threads must be a number "
				 "from 1 to %u", DG_PAR_MAX_THREADS);
			reply(o, json, true, msg);
		} else if (dg_replace_running(dd)) {
			reply(o, json, true, "a device is being replaced: "
			      "'daxguard-ctl status' shows how far; scrub "
			      "after it");
		} else if (s->job.running) {
			reply(o, json, true, "a scrub is running: 'scrub "
			      "status' shows it, 'scrub cancel' stops it");
		} else if (s->rec.state == DG_SCRUB_PAUSED) {
			reply(o, json, true, "a scrub is paused: 'scrub "
			      "resume' goes on with it, 'scrub cancel' then "
			      "'scrub start' begins a new one");
		} else {
			memset(&s->rec, 0, sizeof(s->rec));
			s->rec.started = (uint64_t)time(NULL);
			s->rec.rate = r ? strtoull(r + 6, NULL, 10) : 0;
			s->threads = (unsigned)threads;
			s->lost_in_use = s->lost_other = s->pages_reset = 0;
			if (launch(dd)) {
				reply(o, json, true, "cannot start the scrub "
				      "thread");
			} else {
				post(dd, DG_EV_SCRUB_STARTED, "rate limit %"
				     PRIu64 " bytes/s (0: none), threads %u "
				     "(0: one a CPU)", s->rec.rate, s->threads);
				reply(o, json, false, "scrub started");
			}
		}
	} else if (!strncmp(args, "pause", 5) || !strncmp(args, "cancel", 6)) {
		bool cancel = args[0] == 'c';

		if (s->job.running) {
			/* Answer once it has stopped: a scrub said paused
			 * or cancelled does no more work. Its threads take
			 * no more blocks: the wait is one block a thread at
			 * most, not their batch. */
			dg_vol_scrub_threads_halt(s->par);
			dg_job_ask(&s->job, cancel ? DG_JOB_CANCEL
						   : DG_JOB_PAUSE);
			reply(o, json, false, cancel ? "scrub cancelled"
						     : "scrub paused");
		} else if (cancel && s->rec.state == DG_SCRUB_PAUSED) {
			s->rec.state = DG_SCRUB_CANCELLED;
			s->rec.ended = (uint64_t)time(NULL);
			save(dd);
			post(dd, DG_EV_SCRUB_CANCELLED, "while paused, at row %"
			     PRIu64, s->rec.next_row);
			reply(o, json, false, "scrub cancelled");
		} else {
			snprintf(msg, sizeof(msg), "no scrub is running (the "
				 "last one is %s)", state_names[s->rec.state]);
			reply(o, json, true, msg);
		}
	} else if (!strncmp(args, "resume", 6)) {
		if (s->job.running) {
			reply(o, json, true, "the scrub is running already");
		} else if (s->rec.state == DG_SCRUB_PAUSED &&
			   dg_replace_running(dd)) {
			/* As start: the scrub's threads read every device,
			 * the replace closes one (a paused scrub did not
			 * stop the replace from starting). */
			reply(o, json, true, "a device is being replaced: "
			      "'daxguard-ctl status' shows how far; resume "
			      "the scrub after it");
		} else if (s->rec.state != DG_SCRUB_PAUSED) {
			snprintf(msg, sizeof(msg), "no scrub to resume (the "
				 "last one is %s): 'scrub start' begins one",
				 state_names[s->rec.state]);
			reply(o, json, true, msg);
		} else if (launch(dd)) {
			reply(o, json, true, "cannot start the scrub thread");
		} else {
			post(dd, DG_EV_SCRUB_RESUMED, "at row %" PRIu64,
			     s->rec.next_row);
			reply(o, json, false, "scrub resumed");
		}
	} else {
		reply(o, json, true, "unknown scrub command");
	}
	pthread_mutex_unlock(&s->job.lock);
}
