/* SPDX-License-Identifier: MIT */
/* daemon.h -- state shared by the daxguard daemon's files */
#ifndef DG_DAEMON_H
#define DG_DAEMON_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "fsys.h"
#include "owner_memo.h"
#include "wb_hold.h"

/* ---- events (events.c) ------------------------------------------------ */

enum dg_ev_type {
	DG_EV_FAULT_DETECTED,	/* from the engine's fault events */
	DG_EV_FAULT_REPAIRED,
	DG_EV_FAULT_UNRECOVERABLE,
	DG_EV_FAULT_RECOVERED,	/* rebuilt for the reader, media as it was */
	DG_EV_PAGE_RESET,	/* a free page that failed given zeros */
	DG_EV_SCRUB_STARTED,
	DG_EV_SCRUB_PAUSED,
	DG_EV_SCRUB_RESUMED,
	DG_EV_SCRUB_CANCELLED,
	DG_EV_SCRUB_FINISHED,
	DG_EV_DEVICE_MISSING,	/* at mount: a slot with no device */
	DG_EV_DEVICE_STALE,	/* at mount: a device left out as stale */
	DG_EV_COUNTERS_CLEARED,
	DG_EV_REPLACE_STARTED,	/* daxguard-ctl replace */
	DG_EV_REPLACE_RESUMED,	/* at mount, one cut short */
	DG_EV_DEVICE_REPLACED,	/* the new device took the slot */
	DG_EV_REPLACE_FAILED,
	DG_EV_NR,
};

/* One event: a struct, not a line, so that --json and the text form
 * say the same thing. -1 in an int field: not applicable. */
struct dg_event {
	uint64_t seq;		/* 1, 2, ...: set by dg_event_post() */
	struct timespec time;	/* CLOCK_REALTIME: set by dg_event_post() */
	enum dg_ev_type type;
	int dev;		/* device index */
	int64_t page;		/* device page */
	int64_t vpn;		/* volume page, for data */
	int64_t offset;		/* byte offset in path */
	enum dg_fault_what what; /* fault events only */
	char path[512];		/* file, or device for device events */
	char detail[160];
};

#define DG_EVENT_RING 1024u
struct dg_events {
	pthread_mutex_t lock;
	struct dg_event ring[DG_EVENT_RING];
	uint64_t seq;		/* last posted */
};

const char *dg_ev_type_name(enum dg_ev_type t);
/* Stamp ev, keep it in the ring, and log it (syslog, -o log=PATH or
 * stderr, as main.c routes dg_log()). */
struct json_object;
void dg_event_post(struct dg_events *e, struct dg_event *ev);
/* ev as one JSON object (the log line's and `events --json`'s record);
 * json_object_put() it. */
struct json_object *dg_event_json(const struct dg_event *ev);
/* An event with no location yet (dev, page, vpn, offset -1). */
void dg_event_init(struct dg_event *ev, enum dg_ev_type type);
/* Events after since, oldest first, up to max; *dropped gets how many
 * after since were already overwritten. */
unsigned dg_events_since(struct dg_events *e, uint64_t since,
			 struct dg_event *out, unsigned max, uint64_t *dropped);

/* ---- background jobs (job.c): the scrub's and the replace's runner --- */
/* What a job's thread is asked: go on, or stop for a reason. */
enum dg_job_req { DG_JOB_GO, DG_JOB_PAUSE, DG_JOB_CANCEL, DG_JOB_STOP };
/* Save the job's record every DG_JOB_SAVE_MS while it runs: a crash
 * repeats at most this much of it. */
#define DG_JOB_SAVE_MS 2000
/* One background job: a thread over the rows, its lock, its requests,
 * its clock. The job's own record and counters sit beside it, by lock. */
struct dg_job {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a request, or the thread ended */
	pthread_t thread;
	bool thread_live;	/* joined at the next launch or at stop */
	bool running;		/* the thread is working */
	enum dg_job_req req;
	uint64_t run_since_ms;	/* monotonic ms when this run began */
	uint64_t last_save_ms;	/* monotonic ms of the last save */
	void *(*main)(void *arg);	/* the thread */
	void (*save)(void *arg);	/* the record saved; lock held */
	void *arg;
};
/* Lock and cond made; main and save with their arg. */
void dg_job_init(struct dg_job *j, void *(*main)(void *),
		 void (*save)(void *), void *arg);
/* The job's thread that ended, joined; lock held (dropped for the
 * join). Nothing when none is left to join. Before a launch sets the
 * job's record for a new run. */
void dg_job_reap(struct dg_job *j);
/* Start the thread on the record as it stands, saved first; lock held,
 * dg_job_reap() called. 0, or -EAGAIN (not running) when no thread. */
int dg_job_launch(struct dg_job *j);
/* The thread, between batches (lock held): save when DG_JOB_SAVE_MS have
 * passed since the last save. */
void dg_job_tick(struct dg_job *j);
/* The thread, between batches (lock held): sleep until bytes done in
 * this run are within rate bytes/s (0: none), or a request comes. */
void dg_job_pace(struct dg_job *j, uint64_t bytes, uint64_t rate);
/* The thread's end (lock held, then dropped): no longer running, and
 * whoever waits for it woken. */
void dg_job_done(struct dg_job *j);
/* Ask the running thread to stop for req and wait until it has (lock
 * held): a job said paused or cancelled does no more work. */
void dg_job_ask(struct dg_job *j, enum dg_job_req req);
/* Whether the thread is working (takes the lock). */
bool dg_job_running(struct dg_job *j);
/* The job's end at unmount: a running thread asked DG_JOB_STOP (its
 * record stays "running", so the next mount resumes it), joined; lock
 * and cond destroyed. */
void dg_job_stop(struct dg_job *j);

/* ---- background scrub (scrub.c) --------------------------------------- */

struct dg_daemon;
struct dg_scrub {
	struct dg_job job;	/* its thread, lock and requests */
	struct dg_scrub_rec rec;	/* by job.lock; saved in the root */
	uint64_t run_ms0;	/* rec.run_ms when this run began */
	uint64_t verified0;	/* bytes verified when this run began */
	uint64_t lost_in_use;	/* unrecoverable pages a file holds */
	uint64_t lost_other;	/* parity, checksum, or free not reset */
	uint64_t pages_reset;	/* free pages given zeros */
	uint64_t fault_seq;	/* engine fault events looked at */
	int save_err;		/* last dg_vol_scrub_save() error */
	/* Threads asked for (scrub start --threads; 0: one a CPU), kept in
	 * memory only: the record has no room for it, so the resume at a
	 * mount takes the default. threads_used: how many the running or
	 * last run had (1: the scrub's own alone). */
	unsigned threads, threads_used;
	/* The running scrub's threads (NULL: none), by job.lock: halted
	 * with a pause, cancel or unmount, so it waits for no batch of
	 * theirs. */
	struct dg_par *par;
};

int dg_scrub_init(struct dg_daemon *dd);
/* The ctl commands: text or JSON reply into buf (see ctl_server.c). */
struct dg_out;
void dg_scrub_cmd(struct dg_daemon *dd, const char *args, bool json,
		  struct dg_out *o);
/* Stop the thread (unmount), keeping the record as it is: a scrub
 * running now resumes at the next mount. */
void dg_scrub_stop(struct dg_daemon *dd);

/* ---- online replace (replace.c, device_list.c) -------------------------- */
struct dg_replace_d {
	struct dg_job job;	/* its thread, lock and stop */
	struct dg_replace_rec rec;	/* by job.lock; saved in the root */
	uint64_t done;		/* rows passed in this run */
	uint64_t used_done;	/* of those, rows of written blocks */
	char error[256];	/* why the last one failed */
	int save_err;
	/* The device list naming the devices as they are since a replace
	 * of this mount finished (device_list.c); NULL: dd->devs. By
	 * lock. */
	char *devs_now;
};
int dg_replace_init(struct dg_daemon *dd);
/* "replace DEV RATE PATH" (RATE bytes/s, 0 none); "replace status". */
void dg_replace_cmd(struct dg_daemon *dd, const char *args, bool json,
		    struct dg_out *o);
void dg_replace_stop(struct dg_daemon *dd);
bool dg_replace_running(struct dg_daemon *dd);
/* Device d's state for the device table: "replacing" while it is. */
const char *dg_replace_slot_state(struct dg_daemon *dd, unsigned d);
/* Slot d's path ("-" if none) copied into buf, safe against a replace
 * that finishes meanwhile. */
const char *dg_replace_slot_path(struct dg_daemon *dd, unsigned d, char *buf,
				 size_t len);
/* device_list.c: list with device dev's path (as the slots say) made
 * new_path (malloc'd; NULL when out of memory); the list naming the
 * devices now (malloc'd). */
char *dg_devlist_after_replace(struct dg_daemon *dd, const char *list,
			       unsigned dev, const char *new_path);
char *dg_devlist_now(struct dg_daemon *dd);
/* status: the replace's line (text) or object (json, NULL when none). */
void dg_replace_status_text(struct dg_daemon *dd, struct dg_out *o);
struct json_object *dg_replace_status_json(struct dg_daemon *dd);

/* ---- status: what writes cost the media (media_status.c) ------------- */
/* The "media" object of status --json, and status's one line. */
struct json_object *dg_media_status_json(struct dg_daemon *dd);
void dg_media_status_text(struct dg_daemon *dd, struct dg_out *o);

/* ---- the kernel's cached pages after direct writes (dio_inval.c) ------ */

#define DG_DIO_SLOTS 1024u
struct dg_dio {
	struct dg_dio_slot {
		_Atomic uint64_t owner;	/* 0, an inode, or shared */
		_Atomic uint64_t noted;	/* requests that may cache pages */
		_Atomic uint64_t clean;	/* noted when the last drop began */
	} slot[DG_DIO_SLOTS];
};

/* Before serving a request that can leave pages of ino in the kernel's
 * cache (a read or write without O_DIRECT, a page written back). */
void dg_dio_note(struct dg_dio *d, fuse_ino_t ino);
/* After an O_DIRECT write of [off, off + len) of ino: drop the
 * kernel's cached pages of it before the reply, when it may hold any.
 * 0, or -ETIMEDOUT when the kernel held the pages past a bounded wait. */
int dg_dio_inval(struct dg_dio *d, struct fuse_session *se, fuse_ino_t ino,
		 off_t off, off_t len);

/* ---- the clock (job.c) ---------------------------------------------- */
/* Monotonic milliseconds. */
uint64_t dg_now_ms(void);

/* ---- a growing reply buffer (out.c; ctl_server.c, trim_op.c, commit_server.c) */
struct dg_out {
	char *buf;
	size_t len, cap;
};
void dg_outf(struct dg_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct dg_daemon {
	struct dg_vol *vol;
	struct dg_fs *fs;
	struct fuse_session *se;
	char *devs;		/* canonical paths, ':' (or ',') separated */
	char *mountpoint;	/* absolute */
	double timeout;		/* entry and attribute cache, seconds */
	int writeback;		/* kernel writeback cache */
	/* -o writeback: the pages written back, held and batched
	 * (wb_hold.c, wb_daemon.c); wb_on once it runs. */
	struct dg_wb wb;
	bool wb_on;
	size_t wb_max;		/* -o wb_max= */
	unsigned wb_commit_ms;	/* -o commit= */
	int bdi_ratio;		/* -o bdi_ratio=, 0: the kernel's */
	uint64_t inode_cache;	/* -o inode_cache=, 0: the default */
	bool acl;		/* POSIX ACLs negotiated (ops.c op_init) */
	/* -o allow_other: users other than the one who mounted reach the
	 * files (what the control socket may show them depends on it). */
	bool allow_other;
	int debug;
	/* control socket, ctl_server.c */
	char sock_path[108];
	int sock_fd;
	pthread_t ctl_thread;
	/* Set at unmount by the main thread, read by the socket servers'
	 * threads (ctl_server.c, commit_server.c): atomic, not volatile,
	 * which orders nothing between threads (ThreadSanitizer). */
	atomic_int stop;
	uint64_t fault_seq;	/* last fault event logged, by faults_lock */
	pthread_mutex_t faults_lock;
	struct dg_owner_memo owners; /* by faults_lock (lost_pages.c) */
	/* Counters as of the last "clear", by dmg_lock (the lost pages
	 * are the volume's registry, lost_reg.c). */
	pthread_mutex_t dmg_lock;
	uint64_t fault_base[DG_FAULT_NR];
	struct dg_dev_counts dev_base[DG_MAX_DEVS];
	/* Per device index, at mount: its path (or what was given for a
	 * slot left out) and state; a finishing replace changes its slot's
	 * under replace.job.lock, so others read them through
	 * dg_replace_slot_path() and dg_replace_slot_state(). */
	char *slot_path[DG_MAX_DEVS];
	const char *slot_state[DG_MAX_DEVS];	/* online, missing, stale */
	struct dg_events events;
	struct dg_scrub scrub;
	struct dg_replace_d replace;
	struct dg_dio dio;
	/* libcommit server, commit_server.c */
	char commit_path[108];
	int commit_fd;
	pthread_t commit_thread;
};

/* ---- -o writeback (wb_daemon.c) ---------------------------------------- */
/* The hold and its flusher, when -o writeback. */
int dg_wbd_start(struct dg_daemon *dd);
/* Everything held committed, the flusher stopped (unmount); the hold's
 * lock stays for the servers until dg_wbd_free(), after they stopped. */
void dg_wbd_stop(struct dg_daemon *dd);
void dg_wbd_free(struct dg_daemon *dd);
/* status --json "writeback". */
struct json_object *dg_wbd_status_json(struct dg_daemon *dd);
/* -o bdi_ratio: the connection's dirty limit in sysfs, at mount. */
void dg_wbd_tune_bdi(struct dg_daemon *dd);

extern const struct fuse_lowlevel_ops dg_ll_ops;
/* FITRIM (trim_op.c); every other ioctl is ENOTTY. */
void dg_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		 size_t in_bufsz, size_t out_bufsz);

int dg_ctl_start(struct dg_daemon *dd);
void dg_ctl_stop(struct dg_daemon *dd);
/* ---- lost pages (lost_pages.c) ---- */
/* Turn fault events the engine recorded since the last call into
 * events, with the file each page belongs to. */
void dg_ctl_log_faults(struct dg_daemon *dd);
/* A data page found unrecoverable, to the volume's registry
 * (dg_vol_lost_found()): 1 listed (a file holds it), 2 in use but whose
 * not known yet (dg_ctl_resolve_lost() places it), 0 reset (reset set
 * and no file holds it; an event says so), -1 neither. */
int dg_ctl_lost_page(struct dg_daemon *dd, const struct dg_fault_event *ev,
		     bool reset);
/* The pages waiting for their file named (dg_vol_lost_resolve() with
 * dg_fs_resolve_owners(): may read the inode table). Returns how many
 * it named. */
unsigned dg_ctl_resolve_lost(struct dg_daemon *dd);
/* dg_ctl_resolve_lost(), then dg_vol_lost_prune(), each reset an event. */
unsigned dg_ctl_prune_lost(struct dg_daemon *dd);
/* The unmount's last look (dg_vol_lost_reset_gone()), each reset an
 * event. */
void dg_ctl_reset_gone(struct dg_daemon *dd);

/* The libcommit socket (path in xattr "user.daxguard.commit"). Stop
 * waits until every client's map is released. */
int dg_commit_start(struct dg_daemon *dd);

/* ---- who asks (peer.c, commit_server.c, killpriv_v2.c) ------------------ */

/* Root or the user who mounted (the daemon's uid): past the per-user
 * caps of both sockets, and the only ones who may change things. */
bool dg_peer_is_privileged(uid_t uid);
/* The client of a socket and what it may be shown (docs/local-users.md). */
struct dg_peer {
	struct dg_who who;	/* SO_PEERCRED uid and gid, SO_PEERGROUPS */
	uint32_t *groups;	/* malloc'd: who.groups */
	bool privileged;	/* dg_peer_is_privileged() */
	bool root;		/* sees every path */
	bool reach;		/* could reach the mount's root at all */
};
int dg_peer_get(struct dg_daemon *dd, int fd, struct dg_peer *p);
void dg_peer_free(struct dg_peer *p);
/* Whether p may be shown path (from the volume's root): root always;
 * anyone else when they could stat it themselves now. */
bool dg_peer_sees(struct dg_daemon *dd, const struct dg_peer *p,
		  const char *path);
void dg_commit_stop(struct dg_daemon *dd);

/* Offer FUSE_HANDLE_KILLPRIV_V2 in the INIT reply written to fuse_fd
 * when libfuse cannot (killpriv_v2.c). Call before the session loop. */
void dg_killpriv_v2_arm(int fuse_fd);

#endif /* DG_DAEMON_H */
