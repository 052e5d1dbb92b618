/* SPDX-License-Identifier: MIT */
/* commit_i.h -- private to libcommit: maps, dirty tracking, messages */
#ifndef COMMIT_I_H
#define COMMIT_I_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "libcommit.h"
#include "proto.h"

#define CM_PAGE COMMIT_PAGE_SIZE

/* dirty.c: write tracking by write-protect + SIGSEGV. One region per
 * map; the signal handler finds regions through a fixed table, without
 * locks or allocation. */
struct cm_region {
	uintptr_t base;		/* first data page */
	size_t npages;
	bool writable;
	_Atomic uint64_t *bits;	/* npages bits: page is (being) made writable */
	uint32_t *list;		/* dirty pages, in fault order */
	size_t nlist;		/* by lock */
	atomic_flag lock;	/* spin: held for a few stores only */
	/* Set when tracking page by page failed (a VMA per dirty run ran
	 * into vm.max_map_count): the whole region is writable, every bit
	 * is set, and the next sync diffs every page. */
	atomic_bool overflow;
	/* A sync of the region or an escalation (cm_region_overflow() from
	 * the fault handler) is running: each excludes the others
	 * (cm_region_enter(); the handler only tries, and retries the
	 * store when it is held). */
	atomic_bool busy;
	/* A handler found the region past the threshold while busy was
	 * held: the holder escalates as it lets go (cm_region_leave()). */
	atomic_bool escalate_wanted;
	/* Fault handlers between a claim and the listing of its pages. */
	atomic_uint claimers;
	/* userfaultfd write-protect (asynchronous) over the region, and
	 * /proc/self/pagemap for PAGEMAP_SCAN; -1 when the kernel has
	 * neither. With them an overflow costs no diff of the whole map:
	 * the sync asks the kernel which pages were written. */
	int uffd, pagemap;
	/* Arming the write-protect failed at the last overflow: the next
	 * sync cannot trust a scan (set in the handler, cleared by it). */
	atomic_bool uffd_failed;
	atomic_uint overflows;	/* times cm_region_overflow() ran, for tests */
};

int cm_region_add(struct cm_region *r);
void cm_region_del(struct cm_region *r);
/* Move the dirty pages overlapping [p0, p1) to out (capacity npages);
 * returns how many. Their bits stay set until cm_region_clean(), so a
 * concurrent store waits until then. */
size_t cm_region_take(struct cm_region *r, size_t p0, size_t p1,
		      uint32_t *out);
/* Put pages back on the dirty list (a failed sync). */
void cm_region_untake(struct cm_region *r, const uint32_t *pg, size_t n);
void cm_region_clean(struct cm_region *r, const uint32_t *pg, size_t n);
/* The same for every page of [p0, p1), a word at a time. */
void cm_region_clean_range(struct cm_region *r, size_t p0, size_t p1);
/* Hold the region against escalations (and other syncs) for a sync.
 * Leaving carries out an escalation a handler asked for meanwhile. */
void cm_region_enter(struct cm_region *r);
void cm_region_leave(struct cm_region *r);
/* Wait until no fault handler is between a claim and its listing
 * (for a sync after an overflow, with the region held, before it takes
 * the list). */
void cm_region_drain(struct cm_region *r);
/* Stop tracking page by page: mark every page dirty and make the whole
 * region writable (merging its VMAs, so this needs no new one). Safe in
 * the signal handler. The caller holds the region (cm_region_enter(),
 * or the handler's escalate()). 0 or -errno. */
int cm_region_overflow(struct cm_region *r);
/* After a sync of the whole region that followed an overflow and asked
 * the kernel which pages were written (n of them): whether the region
 * stays with the kernel's tracking (writable, every bit set) rather
 * than going back to page by page; rearm: the region was mapped afresh
 * since the scan. The caller holds the region. */
bool cm_region_resume(struct cm_region *r, size_t n, bool rearm);

/* userfaultfd write tracking (dirty.c). Setup registers the region;
 * cm_region_overflow() arms the write-protect. Without kernel support
 * it leaves uffd at -1 and returns 0 (an overflowed region is then
 * diffed page by page). Register pages again after mapping them
 * afresh. */
int cm_uffd_setup(struct cm_region *r);
int cm_uffd_register(struct cm_region *r, size_t pg, size_t n);
void cm_uffd_close(struct cm_region *r);
/* Write-protect (wp) or unprotect pages [pg, pg + n) of the region. */
int cm_uffd_protect(struct cm_region *r, size_t pg, size_t n, bool wp);
/* The pages of [p0, p1) written since they were last protected, into
 * out (ascending); write-protects them again in the same step. Returns
 * how many, or -errno. */
ssize_t cm_uffd_scan(struct cm_region *r, size_t p0, size_t p1,
		     uint32_t *out);

struct commit_map {
	int sock;
	uint32_t seq;
	bool rw;
	uint64_t foff;		/* file offset of the first page */
	size_t len, maplen;	/* as asked; whole pages */
	uint8_t *resv;		/* reservation: guard + data + guard */
	size_t resvlen;
	/* Direct maps: the devices, opened by the client with its own
	 * credentials. Otherwise filefd (a dup of the caller's file
	 * descriptor) backs the map through the mount. */
	bool direct;
	int devfd[COMMIT_MAX_DEVS];
	int filefd;
	struct commit_ext *ext;	/* sorted by fpage */
	uint32_t next;
	struct cm_region reg;
	uint32_t *take;		/* scratch for syncs: 2 * npages */
	size_t taken;		/* pages the last sync diffed, for tests */
	uint8_t *msg;		/* scratch message buffer */
	size_t msgcap;
	struct commit_run *runs; /* scratch: the runs of a message */
	size_t runcap;
	/* Read-write maps: the media itself, mapped shared and read-only
	 * at the data's offsets, to diff the private copies against. */
	uint8_t *media;
};

/* Thread-local error message; returns err. */
int cm_err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For tests: device index and byte offset of map offset off. */
/* For tests: how many times the map stopped tracking page by page. */
unsigned commit__overflows(const struct commit_map *m);
/* For tests: how many pages the last sync diffed. */
size_t commit__taken(const struct commit_map *m);
int commit__locate(const struct commit_map *m, size_t off, unsigned *dev,
		   uint64_t *devoff, int *devfd);

#endif /* COMMIT_I_H */
