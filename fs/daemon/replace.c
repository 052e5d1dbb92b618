// SPDX-License-Identifier: MIT
/*
 * replace.c -- daxguard-ctl replace: a device rebuilt onto a new path
 * while the volume stays mounted
 *
 * A thread passes the rows (the engine's dg_vol_replace_rows(), each row
 * under its own lock, so reads and writes go on beside it) a batch at a
 * time, keeps its position in the volume root every 2 s (as the scrub
 * does), holds the rate asked for, and at the end lets the new device
 * take the slot. An unmount stops it with the record still "running";
 * the next mount resumes it (the engine passes rows already exact at the
 * cost of a checksum each), as does the mount after a crash.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl_proto.h"
#include "daemon.h"
#include "json.h"

/*
 * Rows a batch at most: the engine persists what a batch wrote to the
 * new device once at its end (one msync of up to 4 MiB on an image
 * file, not one a page), and between batches the thread saves its
 * position and answers stop. Under a rate limit, what a quarter second
 * of it allows, at least MIN_BATCH_ROWS, so the position moves evenly.
 */
#define MAX_BATCH_ROWS 1024
#define MIN_BATCH_ROWS 16

static uint64_t batch_rows(uint64_t rate)
{
	uint64_t n = rate / 4 / DG_PAGE_SIZE;

	if (!rate || n > MAX_BATCH_ROWS)
		return MAX_BATCH_ROWS;
	return n < MIN_BATCH_ROWS ? MIN_BATCH_ROWS : n;
}

static const char *const state_names[] = {
	[DG_REPLACE_NONE] = "none", [DG_REPLACE_RUNNING] = "running",
	[DG_REPLACE_FINISHED] = "finished", [DG_REPLACE_FAILED] = "failed",
};

__attribute__((format(printf, 4, 5)))
static void post(struct dg_daemon *dd, enum dg_ev_type t, unsigned dev,
		 const char *fmt, ...)
{
	struct dg_replace_d *r = &dd->replace;
	struct dg_event ev;
	va_list ap;

	dg_event_init(&ev, t);
	ev.dev = (int)dev;
	snprintf(ev.path, sizeof(ev.path), "%.*s", (int)sizeof(ev.path) - 1,
		 r->rec.path);
	va_start(ap, fmt);
	vsnprintf(ev.detail, sizeof(ev.detail), fmt, ap);
	va_end(ap);
	dg_event_post(&dd->events, &ev);
}

/* Save the record; r->job.lock held (the update path never takes
 * it). */
static void save(void *arg)
{
	struct dg_daemon *dd = arg;
	struct dg_replace_d *r = &dd->replace;

	r->save_err = dg_vol_replace_save(dd->vol, &r->rec);
	if (r->save_err)
		dg_log(DG_LOG_WARNING, "replace: cannot save its position: %s",
		       strerror(-r->save_err));
}

/* The new device took the slot: status shows it by its new path, and
 * the device list that names it (device_list.c) is what fstab needs
 * now; r->job.lock held. */
static void slot_taken(struct dg_daemon *dd, unsigned dev)
{
	struct dg_replace_d *r = &dd->replace;
	char *now = dg_devlist_after_replace(
		dd, r->devs_now ? r->devs_now : dd->devs, dev, r->rec.path);

	free(dd->slot_path[dev]);
	dd->slot_path[dev] = strdup(r->rec.path);
	dd->slot_state[dev] = "online";
	if (!now)
		return;
	free(r->devs_now);
	r->devs_now = now;
	dg_log(DG_LOG_NOTICE, "fstab: the device list is now %s; the mount's "
	       "source (findmnt) stays %s until the next mount: an fstab "
	       "line that names %s must name %s", now, dd->devs, dd->devs,
	       now);
}

/* After the rows: finish, or give up with the reason; r->job.lock
 * held. */
static void conclude(struct dg_daemon *dd, int ret)
{
	struct dg_replace_d *r = &dd->replace;
	unsigned dev = r->rec.dev;
	char err[256] = "";

	r->rec.stale += dg_vol_replace_take_stale(dd->vol);
	if (!ret)
		ret = dg_vol_replace_finish(dd->vol, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "%s", strerror(-ret));
	r->rec.ended = (uint64_t)time(NULL);
	if (ret) {
		dg_vol_replace_abort(dd->vol);
		r->rec.state = DG_REPLACE_FAILED;
		snprintf(r->error, sizeof(r->error), "%s", err);
		post(dd, DG_EV_REPLACE_FAILED, dev, "stopped at row %" PRIu64
		     ": %s", r->rec.next_row, err);
		return;
	}
	r->rec.state = DG_REPLACE_FINISHED;
	slot_taken(dd, dev);
	post(dd, DG_EV_DEVICE_REPLACED, dev, "device %u rebuilt: %" PRIu64
	     " pages written, %" PRIu64 " could not be rebuilt, %" PRIu64
	     " stale copies of the old device rebuilt", dev, r->rec.pages,
	     r->rec.lost, r->rec.stale);
}

static void *replace_main(void *arg)
{
	struct dg_daemon *dd = arg;
	struct dg_replace_d *r = &dd->replace;
	struct dg_vol_info in;
	uint64_t row = 0;
	int ret = 0;

	dg_vol_get_info(dd->vol, &in);
	pthread_mutex_lock(&r->job.lock);
	while (r->job.req == DG_JOB_GO && row < in.rows) {
		uint64_t n = batch_rows(r->rec.rate);
		uint64_t end = row + n < in.rows ? row + n : in.rows;
		uint64_t pages = 0, lost = 0;
		/* Unpaced, a stretch of rows never written is one batch,
		 * which the engine skips whole (a blank row needs no
		 * rebuild). A rate limit counts every row passed, as it
		 * always has: batches stay small, so the position saved
		 * and shown moves as evenly as the rate. */
		uint64_t used = r->rec.rate ? row
				: dg_vol_next_used_row(dd->vol, row, in.rows);

		if (used > end)
			end = used;

		pthread_mutex_unlock(&r->job.lock);
		ret = dg_vol_replace_rows(dd->vol, row, end, &pages, &lost);
		pthread_mutex_lock(&r->job.lock);
		if (ret)
			break;
		r->rec.pages += pages;
		r->rec.lost += lost;
		r->rec.stale += dg_vol_replace_take_stale(dd->vol);
		r->done += end - row;
		r->used_done += dg_vol_used_rows(dd->vol, row, end);
		row = end;
		/* A resumed run passes the rows done before again (fast:
		 * they are exact); the position never goes back. */
		if (row > r->rec.next_row)
			r->rec.next_row = row;
		dg_job_tick(&r->job);
		/* The rows passed in this run within the rate (a row is a
		 * page of the new device). */
		dg_job_pace(&r->job, r->done * DG_PAGE_SIZE, r->rec.rate);
	}
	/* A stop (unmount): the record stays "running" for the next
	 * mount; the engine lets the new device go at close. */
	if (r->job.req == DG_JOB_GO)
		conclude(dd, ret);
	save(dd);
	dg_job_done(&r->job);
	return NULL;
}

/* Start the thread on r->rec as it stands; r->job.lock held. */
static int launch(struct dg_daemon *dd)
{
	struct dg_replace_d *r = &dd->replace;

	dg_job_reap(&r->job);
	r->rec.state = DG_REPLACE_RUNNING;
	r->done = 0;
	r->used_done = 0;
	r->error[0] = 0;
	return dg_job_launch(&r->job);
}

int dg_replace_init(struct dg_daemon *dd)
{
	struct dg_replace_d *r = &dd->replace;
	struct dg_vol_info in;
	char err[512];
	int ret;

	dg_job_init(&r->job, replace_main, save, dd);
	ret = dg_vol_replace_load(dd->vol, &r->rec);
	if (ret) {
		dg_log(DG_LOG_WARNING, "replace: cannot read its record: %s",
		       strerror(-ret));
		memset(&r->rec, 0, sizeof(r->rec));
	}
	if (r->rec.state != DG_REPLACE_RUNNING)
		return 0;
	dg_vol_get_info(dd->vol, &in);
	if (in.read_only) {
		dg_log(DG_LOG_WARNING, "replace of device %u onto '%s' not "
		       "resumed: the volume is read-only", r->rec.dev,
		       r->rec.path);
		return 0;
	}
	/* Cut short by an unmount or a crash: go on. */
	ret = dg_vol_replace_begin(dd->vol, r->rec.dev, r->rec.path, true,
				   err, sizeof(err));
	pthread_mutex_lock(&r->job.lock);
	if (!ret)
		ret = launch(dd);
	if (ret) {
		r->rec.state = DG_REPLACE_FAILED;
		snprintf(r->error, sizeof(r->error), "cannot resume: %.*s",
			 (int)sizeof(r->error) - 20,
			 ret == -EAGAIN ? "no thread" : err);
		post(dd, DG_EV_REPLACE_FAILED, r->rec.dev, "%s", r->error);
		save(dd);
	} else {
		post(dd, DG_EV_REPLACE_RESUMED, r->rec.dev, "after remount, "
		     "at row %" PRIu64, r->rec.next_row);
	}
	pthread_mutex_unlock(&r->job.lock);
	return ret;
}

void dg_replace_stop(struct dg_daemon *dd)
{
	dg_job_stop(&dd->replace.job);
	/* Its thread is joined, and so is the control thread (dg_ctl_stop()):
	 * nothing reads the device list any more. */
	free(dd->replace.devs_now);
	dd->replace.devs_now = NULL;
}

bool dg_replace_running(struct dg_daemon *dd)
{
	return dg_job_running(&dd->replace.job);
}

const char *dg_replace_slot_state(struct dg_daemon *dd, unsigned d)
{
	struct dg_replace_d *r = &dd->replace;
	const char *state;

	pthread_mutex_lock(&r->job.lock);
	state = r->job.running && r->rec.dev == d ? "replacing"
						  : dd->slot_state[d];
	pthread_mutex_unlock(&r->job.lock);
	return state;
}

/* Slot d's path, as status shows it, copied into buf under the lock a
 * finishing replace holds while it gives the slot its new path (the old
 * string is freed then). */
const char *dg_replace_slot_path(struct dg_daemon *dd, unsigned d, char *buf,
				 size_t len)
{
	struct dg_replace_d *r = &dd->replace;

	pthread_mutex_lock(&r->job.lock);
	snprintf(buf, len, "%s", dd->slot_path[d] ? dd->slot_path[d] : "-");
	pthread_mutex_unlock(&r->job.lock);
	return buf;
}

/* ---- status ----------------------------------------------------------- */

/*
 * How far, in rows of written blocks: the rows a replace works on (a
 * blank row is passed at no cost, and a terabyte device of a few GiB of
 * data is nearly all blank rows: counted by rows, the percent would sit
 * near 0 until the last second). The used rows are counted from the
 * init map as it is now; a block written since the replace passed it
 * counts as done (the mirror or the filling slot wrote it).
 */
struct replace_pos {
	uint64_t used, used_done;	/* rows of written blocks */
};

static struct replace_pos pos_of(struct dg_daemon *dd,
				 const struct dg_replace_rec *rec,
				 uint64_t rows)
{
	struct replace_pos p;

	p.used = dg_vol_used_rows(dd->vol, 0, rows);
	p.used_done = rec->state == DG_REPLACE_FINISHED ? p.used :
		      dg_vol_used_rows(dd->vol, 0, rec->next_row);
	return p;
}

static double percent(const struct replace_pos *p)
{
	return p->used ? 100.0 * (double)p->used_done / (double)p->used
		       : 100.0;
}

/*
 * The rate of this run (bytes of the slot's used rows passed a second:
 * one page a row) and the time left at that rate, as zpool status's
 * scan line gives them. eta_s: 0 once finished, -1 while unknown (no
 * row done yet in this run, or not running). r->job.lock held.
 */
struct replace_progress {
	double rate;
	int64_t eta_s;
};

static struct replace_progress progress_of(const struct dg_replace_d *r,
					   const struct replace_pos *pos,
					   uint64_t rows)
{
	struct replace_progress p = { 0, -1 };
	uint64_t ms, left;

	if (r->rec.state == DG_REPLACE_FINISHED)
		p.eta_s = 0;
	if (!r->job.running)
		return p;
	/* None in the first half second: the first batch goes at once
	 * (the rate limit holds after it), so an early rate is wild. */
	ms = dg_now_ms() - r->job.run_since_ms;
	if (ms < 500 || !r->done)
		return p;
	if (r->rec.rate) {
		/* The limit counts every row passed (replace_main()): the
		 * rows left, blank or not, at that rate. */
		p.rate = (double)r->done * DG_PAGE_SIZE * 1000.0 / (double)ms;
		if (p.rate > (double)r->rec.rate)
			p.rate = (double)r->rec.rate;
		left = rows > r->rec.next_row ? rows - r->rec.next_row : 0;
	} else {
		/* Unlimited, blank rows cost nothing: the used rows left
		 * at the rate used rows went. A resumed run passes the rows
		 * done before again, fast: counting this run's rows only
		 * makes the estimate err long. */
		p.rate = (double)r->used_done * DG_PAGE_SIZE * 1000.0 /
			 (double)ms;
		left = pos->used - pos->used_done;
	}
	if (p.rate > 0)
		p.eta_s = (int64_t)((double)left * DG_PAGE_SIZE / p.rate);
	return p;
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

/* What to change in fstab after a replace: the list the volume was
 * mounted with, and the one that names its devices now; r->job.lock
 * held. */
static void fstab_hint(struct dg_daemon *dd, struct dg_out *o)
{
	struct dg_replace_d *r = &dd->replace;
	size_t a = 4 * strlen(dd->devs) + 1, b = 4 * strlen(r->devs_now) + 1;
	char *was = malloc(a), *now = malloc(b);

	if (was && now)
		dg_outf(o, "fstab: the device list is now %s (the mount's "
			"source, as findmnt shows it, stays %s until the next "
			"mount): an fstab line that names the old list must "
			"name the new one\n", ctl_escape(now, b, r->devs_now),
			ctl_escape(was, a, dd->devs));
	free(was);
	free(now);
}

void dg_replace_status_text(struct dg_daemon *dd, struct dg_out *o)
{
	struct dg_replace_d *r = &dd->replace;
	struct dg_vol_info in;
	char esc[4 * sizeof(r->rec.path) + 4 * sizeof(r->error)];

	dg_vol_get_info(dd->vol, &in);
	pthread_mutex_lock(&r->job.lock);
	if (r->rec.state != DG_REPLACE_NONE) {
		struct replace_pos pos = pos_of(dd, &r->rec, in.rows);

		/* Names escaped, as all text replies (ctl_proto.h). */
		dg_outf(o, "replace %s: device %u onto %s, %.1f%% (row %"
			PRIu64 " of %" PRIu64 "; %" PRIu64 " of %" PRIu64
			" used rows), %" PRIu64 " pages written",
			state_names[r->rec.state], r->rec.dev,
			ctl_escape(esc, sizeof(esc),
				   r->rec.path[0] ? r->rec.path : "-"),
			percent(&pos), r->rec.next_row, in.rows,
			pos.used_done, pos.used, r->rec.pages);
		if (r->job.running) {
			struct replace_progress p = progress_of(r, &pos,
								in.rows);
			char rate[32];

			human(rate, sizeof(rate), p.rate);
			dg_outf(o, ", %s/s", rate);
			if (p.eta_s >= 0)
				dg_outf(o, ", ETA %" PRId64 ":%02" PRId64
					":%02" PRId64, p.eta_s / 3600,
					p.eta_s / 60 % 60, p.eta_s % 60);
		}
		if (r->rec.lost)
			dg_outf(o, ", %" PRIu64 " could not be rebuilt",
				r->rec.lost);
		if (r->rec.stale)
			dg_outf(o, ", %" PRIu64 " stale copies rebuilt",
				r->rec.stale);
		if (r->error[0])
			dg_outf(o, ": %s", ctl_escape(esc, sizeof(esc),
						      r->error));
		dg_outf(o, "\n");
	}
	if (r->devs_now)
		fstab_hint(dd, o);
	pthread_mutex_unlock(&r->job.lock);
}

struct json_object *dg_replace_status_json(struct dg_daemon *dd)
{
	struct dg_replace_d *r = &dd->replace;
	struct json_object *x;
	struct dg_vol_info in;
	struct replace_pos pos;

	dg_vol_get_info(dd->vol, &in);
	pthread_mutex_lock(&r->job.lock);
	if (r->rec.state == DG_REPLACE_NONE) {
		pthread_mutex_unlock(&r->job.lock);
		return NULL;
	}
	pos = pos_of(dd, &r->rec, in.rows);
	x = json_object_new_object();
	json_add_str(x, "state", state_names[r->rec.state]);
	json_add_u64(x, "device", r->rec.dev);
	json_add_bytes(x, "path", r->rec.path[0] ? r->rec.path : NULL);
	json_add_u64(x, "next_row", r->rec.next_row);
	json_add_u64(x, "rows", in.rows);
	/* The rows of written blocks, all and passed: what percent and
	 * the ETA count (pos_of()). */
	json_add_u64(x, "used_rows", pos.used);
	json_add_u64(x, "used_rows_done", pos.used_done);
	json_object_object_add(x, "percent",
			       json_object_new_double(percent(&pos)));
	json_add_u64(x, "pages_written", r->rec.pages);
	/* After a replace: the list that names the devices now. */
	json_add_bytes(x, "device_list", r->devs_now ? r->devs_now : dd->devs);
	json_add_bytes(x, "mount_source", dd->devs);
	json_add_u64(x, "pages_lost", r->rec.lost);
	/* Checksum-page and ditto copies the old device held stale,
	 * written from the newest verified copy instead. */
	json_add_u64(x, "pages_stale", r->rec.stale);
	json_add_u64(x, "rate_limit_bytes_per_s", r->rec.rate);
	{
		struct replace_progress p = progress_of(r, &pos, in.rows);

		json_add_u64(x, "rate_bytes_per_s", (uint64_t)p.rate);
		json_object_object_add(x, "eta_s",
				       json_object_new_int64(p.eta_s));
	}
	json_add_u64(x, "started", r->rec.started);
	json_add_u64(x, "ended", r->rec.ended);
	json_add_bytes(x, "error", r->error[0] ? r->error : NULL);
	json_add_bool(x, "position_saved", r->save_err == 0);
	pthread_mutex_unlock(&r->job.lock);
	return x;
}

/* ---- the command ------------------------------------------------------ */

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

/* DEV as a device index, or as the path of a device of the volume (a
 * missing one by the path given for it at mount); -1 with a reason. */
static int resolve_dev(struct dg_daemon *dd, const char *arg, char *msg,
		       size_t len)
{
	struct dg_vol_info in;
	char *end, *want = realpath(arg, NULL);
	unsigned long d = strtoul(arg, &end, 10);
	int found = -1;

	dg_vol_get_info(dd->vol, &in);
	if (end != arg && !*end) {
		free(want);
		if (d < in.ndev)
			return (int)d;
		snprintf(msg, len, "no device %lu: the volume has %u (0..%u)",
			 d, in.ndev, in.ndev - 1);
		return -1;
	}
	for (unsigned i = 0; i < in.ndev && found < 0; i++)
		if (dd->slot_path[i] &&
		    (!strcmp(dd->slot_path[i], arg) ||
		     (want && !strcmp(dd->slot_path[i], want))))
			found = (int)i;
	/* A missing device's path no longer exists; if one device is
	 * missing and the path was given at mount, it is that one. */
	if (found < 0 && __builtin_popcount(in.missing_mask) == 1 &&
	    strstr(dd->devs, arg))
		found = __builtin_ctz(in.missing_mask);
	free(want);
	if (found < 0)
		snprintf(msg, len, "'%s' is not a device of this volume: give "
			 "its index (daxguard-ctl status lists them) or its "
			 "path", arg);
	return found;
}

/*
 * A target on this very mount (or a bind of it: same device number)
 * would have the daemon's own threads fault on pages of a file it
 * serves itself, under the row locks those faults need: the daemon
 * hangs. Refused before anything is opened or created. The target's
 * directory is what counts (the target may not exist yet), and the
 * target itself when it exists (a link may lead into the mount). The
 * stat()s of a path on this mount are served by the FUSE threads, not
 * this one, and take no lock this one holds. 0 or -1 with a reason.
 */
static int on_this_mount(struct dg_daemon *dd, const char *path, char *msg,
			 size_t len)
{
	struct stat mst, st;
	char dir[4400], *slash;
	bool same = false;

	if (stat(dd->mountpoint, &mst) < 0)
		return 0; /* what is wrong is for the open to say */
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	if (stat(dir, &st) == 0 && st.st_dev == mst.st_dev)
		same = true;
	if (stat(path, &st) == 0 && st.st_dev == mst.st_dev)
		same = true;
	if (!same)
		return 0;
	snprintf(msg, len, "'%s' is on this volume's own mount (%s): a "
		 "device cannot be replaced by a file the volume holds; give "
		 "a path on another file system", path, dd->mountpoint);
	return -1;
}

/* "DEV RATE PATH": start a replace; r->job.lock held. */
static void start(struct dg_daemon *dd, const char *args, bool json,
		  struct dg_out *o)
{
	struct dg_replace_d *r = &dd->replace;
	char devarg[256], msg[1400], err[1200], pbuf[4400];
	unsigned long long rate;
	int n = 0, dev, ret;
	const char *path;

	if (sscanf(args, "%255s %llu %n", devarg, &rate, &n) < 2 || !n ||
	    !args[n]) {
		reply(o, json, true, "usage: replace DEV NEWPATH");
		return;
	}
	/* The tool adds " json" at the end of the line for --json. */
	snprintf(pbuf, sizeof(pbuf), "%s", args + n);
	if (json && strlen(pbuf) > 5 &&
	    !strcmp(pbuf + strlen(pbuf) - 5, " json"))
		pbuf[strlen(pbuf) - 5] = 0;
	path = pbuf;
	if (r->job.running) {
		snprintf(msg, sizeof(msg), "device %u is being replaced: "
			 "'daxguard-ctl status' shows how far", r->rec.dev);
		reply(o, json, true, msg);
		return;
	}
	dev = resolve_dev(dd, devarg, msg, sizeof(msg));
	if (dev < 0 || on_this_mount(dd, path, msg, sizeof(msg))) {
		reply(o, json, true, msg);
		return;
	}
	ret = dg_vol_replace_begin(dd->vol, (unsigned)dev, path, false, err,
				   sizeof(err));
	if (ret) {
		reply(o, json, true, err);
		return;
	}
	memset(&r->rec, 0, sizeof(r->rec));
	r->rec.dev = (unsigned)dev;
	r->rec.rate = rate;
	r->rec.started = (uint64_t)time(NULL);
	{
		char *abs = realpath(path, NULL);

		snprintf(r->rec.path, sizeof(r->rec.path), "%s",
			 abs ? abs : path);
		free(abs);
	}
	if (launch(dd)) {
		dg_vol_replace_abort(dd->vol);
		r->rec.state = DG_REPLACE_FAILED;
		save(dd);
		reply(o, json, true, "cannot start the replace thread");
		return;
	}
	post(dd, DG_EV_REPLACE_STARTED, (unsigned)dev, "rate limit %llu "
	     "bytes/s (0: none)", rate);
	snprintf(msg, sizeof(msg), "replacing device %d onto %s", dev,
		 r->rec.path);
	reply(o, json, false, msg);
}

void dg_replace_cmd(struct dg_daemon *dd, const char *args, bool json,
		    struct dg_out *o)
{
	struct dg_replace_d *r = &dd->replace;

	if (!strncmp(args, "start ", 6)) {
		pthread_mutex_lock(&r->job.lock);
		if (dd->scrub.job.running)
			reply(o, json, true, "a scrub is running: 'scrub "
			      "cancel' or 'scrub pause' it first");
		else
			start(dd, args + 6, json, o);
		pthread_mutex_unlock(&r->job.lock);
		return;
	}
	if (!strncmp(args, "status", 6)) {
		struct json_object *x;

		if (!json) {
			dg_replace_status_text(dd, o);
			return;
		}
		x = dg_replace_status_json(dd);
		dg_outf(o, "%s\n", x ? json_line(x) : "{\"state\":\"none\"}");
		if (x)
			json_object_put(x);
		return;
	}
	reply(o, json, true, "unknown replace command");
}
