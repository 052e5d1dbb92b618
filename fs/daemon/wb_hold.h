/* SPDX-License-Identifier: MIT */
/* wb_hold.h -- -o writeback: the pages the kernel writes back, held and
 * committed in batches (wb_hold.c) */
#ifndef DG_WB_HOLD_H
#define DG_WB_HOLD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fsys.h"

/* Commits one file's held runs: dg_fs_write_batch() in the daemon, a
 * stand-in in the unit test. 0, or a negative errno. */
typedef int (*dg_wb_commit_fn)(void *arg, uint64_t ino,
				   const struct dg_wseg *seg, unsigned n,
				   unsigned requests);

#define DG_WB_BUCKETS 256u

/* One file's held bytes: runs sorted by offset, apart (not touching). */
struct dg_wb_file {
	struct dg_wb_file *next;	/* in its bucket */
	uint64_t ino;
	struct dg_wb_run {
		uint64_t off;
		size_t len, cap;
		uint8_t *buf;
	} *run;
	unsigned nrun, caprun;
	unsigned requests;	/* writes gathered in run[] */
	size_t bytes;		/* sum of run[].len */
	uint64_t end;		/* past the last held byte; 0: none */
	/* A batch of it is being committed (by the flusher or a drain):
	 * only one at a time, so a byte's later write lands later. */
	bool busy;
	uint64_t busy_end;	/* end of the batch in flight */
	int err;		/* a batch failed: for the next fsync/flush */
	uint64_t err_at;	/* the number of err's batch (dg_wb_epoch()) */
};

struct dg_wb {
	pthread_mutex_t lock;
	pthread_cond_t done;	/* a batch done */
	pthread_cond_t alarm;	/* the flusher's: stop, or half full */
	struct dg_wb_file *bucket[DG_WB_BUCKETS];
	size_t max;		/* buffer bytes at most (in flight too) */
	unsigned interval_ms;	/* commit interval */
	dg_wb_commit_fn commit;
	void *arg;
	pthread_t thread;
	bool thread_live, stop, kick;
	/* Counters since the mount (status --json "writeback"). */
	uint64_t held;		/* bytes held now, in flight included */
	uint64_t held_peak;
	/* Bytes allocated for held data (the runs' capacity, >= held):
	 * what max bounds. */
	uint64_t alloc;
	uint64_t alloc_peak;
	uint64_t batches;	/* commit calls made */
	uint64_t bytes_committed;
	uint64_t requests_held;	/* writes that went into the hold */
	uint64_t errors;	/* batches that failed */
};

/* Ready with no flusher thread; max bytes, interval in ms. */
int dg_wb_init(struct dg_wb *wb, size_t max, unsigned interval_ms,
	       dg_wb_commit_fn commit, void *arg);
/* The flusher: commits everything held every interval, and at once when
 * half of max is held. */
int dg_wb_start(struct dg_wb *wb);
/* Commit everything, stop the flusher, free what is held. The first
 * error of a batch nobody was told of, or 0. The lock stays usable (a
 * status or sync of the control server may still come) until
 * dg_wb_destroy(). */
int dg_wb_stop(struct dg_wb *wb);
void dg_wb_destroy(struct dg_wb *wb);
/* Hold a write. 0 when held; -E2BIG when it cannot be (larger than max):
 * the caller drains the file and writes it through. Waits, or commits
 * itself, while the hold is full. */
int dg_wb_put(struct dg_wb *wb, uint64_t ino, uint64_t off, const void *buf,
	      size_t len);
/* Commit what ino holds, waiting for a batch of it in flight. With
 * take_err, returns and forgets an error of an earlier batch of ino
 * (fsync, flush); without, returns only this drain's error and keeps it
 * for the next fsync too. */
int dg_wb_drain(struct dg_wb *wb, uint64_t ino, bool take_err);
/* Commit everything held, and wait for the batches in flight. */
int dg_wb_drain_all(struct dg_wb *wb);
/* Commit what each file held when called, once (daxguard-ctl sync):
 * bounded by what was held then, however fast writers add more. The
 * first error, or 0. */
int dg_wb_sync(struct dg_wb *wb);
/* Batches ended so far: a stamp for dg_wb_forget_err(). */
uint64_t dg_wb_epoch(struct dg_wb *wb);
/* ino's file is gone (its inode freed): forget its error if its batch
 * ended by epoch, taken after the file's last batch. A later one is a
 * new file's that reused the number. */
void dg_wb_forget_err(struct dg_wb *wb, uint64_t ino, uint64_t epoch);
/* An earlier batch's error of ino, returned and forgotten (fsync). */
int dg_wb_take_err(struct dg_wb *wb, uint64_t ino);
/* The same, kept for the next fsync (a close: any descriptor's close
 * tells it, and only an fsync, the writer's promise, forgets it). */
int dg_wb_peek_err(struct dg_wb *wb, uint64_t ino);
/* Past the last byte ino holds (in flight too), 0 when none: the size a
 * getattr reports at least. */
uint64_t dg_wb_end(struct dg_wb *wb, uint64_t ino);
/* Whether ino holds anything or has a batch in flight. */
bool dg_wb_holds(struct dg_wb *wb, uint64_t ino);
/* Whether the hold knows ino at all: held bytes, or an error untold. */
bool dg_wb_knows(struct dg_wb *wb, uint64_t ino);

struct dg_wb_counts {
	uint64_t held, held_peak, alloc, alloc_peak, max, batches,
		 bytes_committed, requests_held, errors;
	unsigned interval_ms;
};
void dg_wb_get_counts(struct dg_wb *wb, struct dg_wb_counts *c);

#endif /* DG_WB_HOLD_H */
