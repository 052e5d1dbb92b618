/* SPDX-License-Identifier: MIT */
/* media.h -- device layer: libpmem2 mappings, writes, persists, recording */
#ifndef DG_MEDIA_H
#define DG_MEDIA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpmem2.h>

#include "format.h"
#include "media_counts.h"
#include "sigbus.h"

/*
 * The devices of one volume share one latch. The first persist that
 * fails sets it, with the reason, and the volume takes no more updates
 * or repairs: what was written since the last good persist may or may
 * not be durable, and nothing may be built on it. The journal still
 * holds every update not known to be in place, so the next open redoes
 * them (a persist that fails is a crash that the process survives:
 * docs/integrity.md "Replay under faults").
 */
struct dg_latch {
	atomic_bool on;
	pthread_mutex_t lock;
	int err;		/* negative errno of the first failure */
	char why[160];		/* by lock; fixed once on is set */
};
void dg_latch_init(struct dg_latch *l);
/* Set the latch unless it is set (the first reason stays); logs once.
 * Returns err. */
int dg_latch_set(struct dg_latch *l, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline bool dg_latch_on(struct dg_latch *l)
{
	return atomic_load(&l->on);
}
/* The reason, "" when not set. */
void dg_latch_why(struct dg_latch *l, char *buf, size_t len);

/*
 * Test hook (the crash states of tests/crash/): every write and every persist of
 * a device that has one is reported, in program order, before it
 * happens. Per device, set through its volume: dg_vol_open_observed()
 * and dg_vol_set_observer() (volume_i.h).
 */
struct dg_obs_span {
	const char *path;
	uint64_t off, len;
};
struct dg_media_observer {
	void (*write)(void *arg, const char *path, uint64_t off,
		      const void *src, size_t len);
	/* Nonzero (a negative errno): the persist fails with it, as a
	 * device that cannot write back would (tests of the latch). */
	int (*persist)(void *arg, const char *path, uint64_t off, size_t len);
	void *arg;
	/* A round (dg_flushset_persist()): ranges of several devices
	 * flushed apart and drained by one fence, so they become durable
	 * together and none before the drain: one persist, reported once
	 * with every range. Nonzero fails the whole round. NULL: each range
	 * is reported to persist() in turn. */
	int (*persist_round)(void *arg, const struct dg_obs_span *s,
			     unsigned n);
};

/* One device of a volume. Reads are plain loads from base; every store
 * goes through dg_dev_write() and becomes durable at dg_dev_persist(). */
struct dg_dev {
	bool present;
	bool rdonly;
	bool suspect;		/* behind the volume (DG_OPEN_SUSPECT): its
				 * superblocks are not rewritten until fsck
				 * has checked every page of it */
	bool found;		/* suspect for a reason of its own: no
				 * superblock verified, its pages said which
				 * device it is (vol.c, identify_by_pages()) */
	bool coarse;		/* persist costs a syscall, not a flush per
				 * line: one call over a span is cheapest */
	unsigned idx;		/* device index, once known */
	int fd;
	char *path;
	struct pmem2_source *src;
	struct pmem2_map *map;
	uint8_t *base;
	uint64_t size;		/* bytes mapped */
	pmem2_memcpy_fn memcpy_fn;
	pmem2_memset_fn memset_fn;
	pmem2_persist_fn persist_fn; /* fine-grained devices only */
	/* Real pmem (pmem2's own persist): flush and drain apart, for
	 * rounds (dg_flushset_persist()); NULL elsewhere. */
	pmem2_flush_fn flush_fn;
	pmem2_drain_fn drain_fn;
	/* persist_fn is a fence alone (tmpfs, scratch): ranges of a round
	 * need no flush, and one fence drains them all. */
	bool fence_only;
	struct dg_latch *latch;	/* the volume's; NULL: failures only returned */
	/* The SIGBUS record of the mapping (sigbus.h), shared by every
	 * copy of this struct; NULL when not mapped. */
	struct dg_sigbus_rec *fault;
	const struct dg_media_observer *obs; /* tests only; NULL */
	/* Online replace of this present device (replace.c): every write
	 * and persist of bytes [mirror_lo, mirror_hi) goes to the new
	 * device too (the superblocks, outside, are its own). */
	struct dg_dev *mirror;
	uint64_t mirror_lo, mirror_hi;
	/* Online replace of a missing device: this is the new one, being
	 * filled in. Its data rows [0, fill_row) are rebuilt (and kept by
	 * every update since); the rest is read as missing. Read with
	 * __atomic_load_n: it grows under one row's lock at a time. Its
	 * superblocks are written only when it is whole. */
	bool filling;
	uint64_t fill_row;
	/* media_counts.h, since the open: relaxed atomics, as every
	 * thread of the volume writes them. */
	struct dg_media_tally {
		_Atomic uint64_t stored, streamed, lines, fences;
		_Atomic uint64_t hints;	/* dg_dev_will_need() calls */
	} tally;
};

/* d's counts since it was opened (a device rebuilt or replaced in
 * starts from zero). */
void dg_dev_counts(const struct dg_dev *d, struct dg_media_counts *c);

/*
 * Bytes [off, off + len) of d will be read soon (a walk over the whole
 * volume, walk.c): on a device behind the page cache (an image file on
 * a disk, a block device) their reads are started now, without waiting,
 * so they overlap the work on what was read before. Nothing on pmem,
 * DAX and tmpfs, whose loads are the read. Every call is counted
 * (dg_dev_hints()), whatever the media does with it.
 */
/* The pages of [off, off + len) mapped in at once, readable
 * (MADV_POPULATE_READ), instead of a fault each few of them: for a
 * thread about to read them all (verify_par.c). */
void dg_dev_map_in(struct dg_dev *d, uint64_t off, uint64_t len);
void dg_dev_will_need(struct dg_dev *d, uint64_t off, uint64_t len);
uint64_t dg_dev_hints(const struct dg_dev *d);
/*
 * The first range [*lo, *hi) within [off, end) of d that may hold
 * something other than zeros (SEEK_DATA/SEEK_HOLE of its file): 1, or 0
 * when the rest reads as zeros (a hole); -EOPNOTSUPP where the file
 * cannot tell (a block or DAX device): every byte may hold data.
 */
int dg_dev_next_data(struct dg_dev *d, uint64_t off, uint64_t end,
		     uint64_t *lo, uint64_t *hi);

/* Whether row's page of d can be read (present, and rebuilt there when
 * d is being filled in). */
static inline bool dg_dev_has_row(const struct dg_dev *d, uint64_t row)
{
	return d->present &&
	       (!d->filling || row < __atomic_load_n(&d->fill_row,
						    __ATOMIC_ACQUIRE));
}

/* Open path and map it whole. Takes an exclusive (or, read-only, shared)
 * lock on the file: -EBUSY if another process holds it; nolock (only
 * with rdonly) takes none, to look at a volume a daemon has open. */
int dg_dev_open(struct dg_dev *d, const char *path, bool rdonly, bool nolock,
		char *err, size_t errlen);
void dg_dev_close(struct dg_dev *d);
/* Open path read-only (shared lock) and map it copy-on-write: stores
 * stay in this process's memory, nothing reaches the device (scratch.c,
 * DG_OPEN_SCRATCH). Regular files and block devices only. */
int dg_dev_open_scratch(struct dg_dev *d, const char *path, char *err,
			size_t errlen);
/*
 * The one failure rule of the media: once d->latch is set (a persist of
 * any device of the volume failed), every store function below and
 * dg_dev_persist() refuse: they store nothing, persist nothing, and
 * return the latched error (a negative errno). What was written since
 * the last good persist may be lost, and nothing may be built on it --
 * least of all a journal header that retires it. The latch is looked at
 * here, where the media is written, so no caller can forget it.
 */
/*
 * A SIGBUS on a device's mapping (sigbus.h: the image was cut short, its
 * file system is full, the media is poisoned) put zeros in place of the
 * page that faulted: a store there never reached the device, and a load
 * read zeros. So it is a failed persist too: the first look at the
 * device after it latches the volume, with the device and offset as
 * the reason. The store functions and dg_dev_persist() look before they
 * store and again after (a store of theirs may be the one that
 * faulted), and fail with -EIO; the read path looks after it copies a
 * page out (read.c) and leaves it to the checksum whether the page's
 * bytes are good.
 */
static inline bool dg_dev_faulted(const struct dg_dev *d)
{
	return d->fault && atomic_load(&d->fault->pages) != 0;
}
/* 0, or -EIO with the volume latched when d's mapping faulted. */
int dg_dev_fault_check(const struct dg_dev *d);
/* Watch d's mapping (base, size) for SIGBUS, with the protection it was
 * mapped with; a failure is said in err. For the mappings of
 * dg_dev_open() and dg_dev_open_scratch(). */
int dg_dev_watch(struct dg_dev *d, int prot, char *err, size_t errlen);

/* Store without flushing; off + len must lie within the device. 0, or
 * the latched error (nothing stored), or -EIO when the store faulted. */
int dg_dev_write(struct dg_dev *d, uint64_t off, const void *src,
		 size_t len);
/* The same, for bytes not read back soon (new rows): past the caches. */
int dg_dev_stream(struct dg_dev *d, uint64_t off, const void *src,
		  size_t len);
int dg_dev_zero(struct dg_dev *d, uint64_t off, size_t len);
/* Punch [off, off + len), which holds zeros, out of a device file;
 * -EOPNOTSUPP for block and DAX devices. Not persisted (media.c). */
int dg_dev_punch(struct dg_dev *d, uint64_t off, size_t len);
/* Make [off, off + len) durable: 0, or a negative errno when msync
 * fails (page cache write-back of a file or block device), which also
 * sets d->latch, or the latched error when an earlier persist failed.
 * On pmem and tmpfs a persist cannot fail. */
int dg_dev_persist(struct dg_dev *d, uint64_t off, size_t len);
static inline const uint8_t *dg_dev_ptr(const struct dg_dev *d, uint64_t off)
{
	return d->base + off;
}

/* A set of device ranges written but not yet persisted, coalesced so a
 * commit persists each touched region once: a round. */
struct dg_flushset {
	struct dg_flushrange {
		unsigned dev;
		uint64_t off, len;
	} *r;			/* inline_r, or the heap past it */
	unsigned n, cap;
	bool oom;		/* an add failed: persist everything touched */
	/* The first ranges: a round of a small update holds a few, and a
	 * heap array per set cost a realloc and a free per round. The
	 * set is used in place (r may point here): never copied. */
	struct dg_flushrange inline_r[8];
};
void dg_flushset_init(struct dg_flushset *fs);
void dg_flushset_add(struct dg_flushset *fs, unsigned dev, uint64_t off,
		     uint64_t len);
void dg_flushset_fini(struct dg_flushset *fs);
/* Add every range of from to to (from is left as it was). */
void dg_flushset_merge(struct dg_flushset *to, const struct dg_flushset *from);
/*
 * Persist every range of fs as one round and empty it. devs is indexed
 * by device index. On devices persisted by a flush per line and a fence
 * (pmem; tmpfs, whose persist is the fence alone) the ranges of every
 * device are flushed apart and drained by one fence: an sfence drains
 * all of the CPU's outstanding flushes, whatever device they went to.
 * So nothing of the round is known durable before the fence, and a
 * crash before it may keep any subset of its stores: put in one round
 * only stores that may become durable in any order (docs/design.md,
 * "What a write costs the media"). A device persisted by msync gets one
 * msync over its ranges (a call costs, not bytes). Returns the first
 * failure, having tried them all.
 */
int dg_flushset_persist(struct dg_dev *devs, unsigned ndev,
			struct dg_flushset *fs);

#endif /* DG_MEDIA_H */
