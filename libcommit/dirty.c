// SPDX-License-Identifier: MIT
/* dirty.c -- libcommit write tracking: write-protect + SIGSEGV */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "commit_i.h"

/*
 * Dirty pages are found in time proportional to their number.
 * Data pages are mapped PROT_READ; the first store to one faults, the
 * handler makes that page writable (its MAP_PRIVATE copy is made by the
 * kernel) and appends it to the map's dirty list (with the pages after
 * it when the stores stream, claim_run()). A sync takes the list.
 *
 * Everything the handler touches is preallocated; it takes only a spin
 * flag that non-handler code holds for a few stores and never while it
 * could fault on a map.
 *
 * A VMA per dirty run costs two system calls per page and runs into
 * vm.max_map_count. So once a region has ESCALATE dirty pages (or an
 * mprotect fails), the handler makes the whole region writable
 * (cm_region_overflow()) and leaves the tracking to the kernel: the
 * region is also write-protected with userfaultfd in asynchronous mode
 * (Linux 6.7: the kernel resolves the fault itself and marks the page
 * written), and the sync asks PAGEMAP_SCAN for the written pages,
 * write-protecting them again in the same call. The scan walks the
 * region's page table (about 0.2 ms per GiB), so small syncs stay on
 * the list. Without userfaultfd (older kernels) an overflowed region is
 * diffed page by page instead.
 */

/* Not in Debian 12's 6.1 headers; the ABI is Linux 6.7's. */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef PAGEMAP_SCAN
struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask;
	uint64_t return_mask;
};
#define PAGEMAP_SCAN	      _IOWR('f', 16, struct pm_scan_arg)
#define PM_SCAN_WP_MATCHING   (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#define PAGE_IS_WRITTEN	      (1 << 1)
#endif

/* Escalate once a region has this many dirty pages (128 measured
 * best). LIBCOMMIT_ESCALATE=N sets it for tests, whose maps are small. */
#define ESCALATE 128
static size_t escalate_at = ESCALATE;

#define MAX_REGIONS 1024

static _Atomic(struct cm_region *) regions[MAX_REGIONS];
static struct sigaction prev_segv;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_err;

static void lock(struct cm_region *r)
{
	while (atomic_flag_test_and_set_explicit(&r->lock, memory_order_acquire))
		;
}

static void unlock(struct cm_region *r)
{
	atomic_flag_clear_explicit(&r->lock, memory_order_release);
}

/* Not ours: behave as if we were never installed. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	if (prev_segv.sa_flags & SA_SIGINFO) {
		prev_segv.sa_sigaction(sig, si, uc);
	} else if (prev_segv.sa_handler == SIG_IGN ||
		   prev_segv.sa_handler == SIG_DFL) {
		/* Returning re-executes the faulting instruction, which
		 * then gets the default action (a core dump). */
		signal(sig, SIG_DFL);
	} else {
		prev_segv.sa_handler(sig);
	}
}

static bool claim(struct cm_region *r, size_t pg)
{
	uint64_t bit = 1ull << (pg % 64);

	return !(atomic_fetch_or(&r->bits[pg / 64], bit) & bit);
}

/*
 * Claim page pg for writing, and when the page before it is dirty too (a
 * store stream: rows of a matrix, a log, a memcpy) the free pages after
 * it, up to FAULT_AROUND in all: one signal and one mprotect instead of
 * one each per page. A page made writable but never stored to keeps no
 * private copy; the sync finds it unchanged and ships nothing for it.
 * Random stores get no neighbours, so a sync reads no more than they
 * touched. Returns the pages claimed from pg on (0: pg was taken).
 */
#define FAULT_AROUND 16
static size_t claim_run(struct cm_region *r, size_t pg)
{
	size_t n = 1;

	if (!claim(r, pg))
		return 0;
	if (pg == 0 || !(atomic_load(&r->bits[(pg - 1) / 64]) &
			 (1ull << ((pg - 1) % 64))))
		return 1;
	while (n < FAULT_AROUND && pg + n < r->npages && claim(r, pg + n))
		n++;
	return n;
}

/*
 * Stop tracking page by page (cm_region_overflow()) unless a sync or
 * another escalation runs: the gate keeps all three apart. Returns 0
 * (done), -EBUSY (the gate was held) or the overflow's error (> 0).
 * After -EBUSY, a store whose mprotect failed retries; one past the
 * threshold has already been listed, so it asks the holder to escalate
 * as it leaves (cm_region_leave()). It cannot wait for a later fault to
 * try again: the list reaches the threshold almost only while a sync
 * holds the gate (between syncs each sync takes it), so a program that
 * syncs in a loop would escalate only when a fault fell in the
 * instant between two syncs, and some runs never did.
 *
 * Why a gate and not a flag checked first (issue 19, stores lost under
 * load): an escalation that had found no sync running made the whole
 * region writable under a sync that started right after, between its
 * diff and its drop of the private copies, and the stores that landed
 * there were dropped with them; and of two escalations at once, the
 * second could make the region writable before the first had armed the
 * write-protect, so a store in between was neither listed nor seen by
 * the kernel.
 */
static int escalate(struct cm_region *r)
{
	bool idle = false;
	int ret;

	if (!atomic_compare_exchange_strong(&r->busy, &idle, true))
		return -EBUSY;
	atomic_store(&r->escalate_wanted, false);
	ret = cm_region_overflow(r);
	atomic_store(&r->busy, false);
	return ret < 0 ? 1 : 0;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int saved = errno;

	if (si->si_code == SEGV_ACCERR) {
		for (unsigned i = 0; i < MAX_REGIONS; i++) {
			struct cm_region *r = atomic_load(&regions[i]);
			size_t pg, n;

			if (!r || a < r->base || a >= r->base + r->npages * CM_PAGE)
				continue;
			if (!r->writable)
				break;
			pg = (a - r->base) / CM_PAGE;
			/* Counted from before the claim until the pages are
			 * listed: a sync after an escalation waits for
			 * claims made before it (cm_region_drain()). */
			atomic_fetch_add(&r->claimers, 1);
			n = claim_run(r, pg);
			if (n) {
				/* MAP_PRIVATE: the kernel copies each page
				 * on the store that follows. Failing means
				 * the VMA limit (vm.max_map_count): stop
				 * tracking page by page rather than fault
				 * forever; while a sync runs, wait for it
				 * (it merges VMAs back). */
				if (mprotect((void *)(r->base + pg * CM_PAGE),
					     n * CM_PAGE, PROT_READ | PROT_WRITE)) {
					for (size_t q = pg; q < pg + n; q++)
						atomic_fetch_and(&r->bits[q / 64],
								 ~(1ull << (q % 64)));
					atomic_fetch_sub(&r->claimers, 1);
					if (escalate(r) > 0)
						break; /* cannot go on: die */
					errno = saved;
					return;
				}
				/* A stream will store to the run: copy it in
				 * one call rather than a fault per page. */
				if (n > 1)
					madvise((void *)(r->base + pg * CM_PAGE),
						n * CM_PAGE, MADV_POPULATE_WRITE);
				lock(r);
				for (size_t q = pg; q < pg + n; q++)
					r->list[r->nlist++] = (uint32_t)q;
				n = r->nlist;
				unlock(r);
				atomic_fetch_sub(&r->claimers, 1);
				/* Enough pages for the scan to be cheaper than
				 * a VMA each: let the kernel track them, now
				 * or, if a sync holds the gate, when it ends.
				 * Asked first: a holder that lets go between
				 * the two has the gate free for escalate(). */
				if (n >= escalate_at && r->uffd >= 0) {
					atomic_store(&r->escalate_wanted, true);
					(void)escalate(r);
				}
			}
			/* else: another thread is making it writable, or a
			 * sync holds it; the store retries until done,
			 * yielding meanwhile: a sync needs the daemon, and
			 * a store spinning on its fault starves it on a
			 * loaded machine. */
			else {
				atomic_fetch_sub(&r->claimers, 1);
				sched_yield();
			}
			errno = saved;
			return;
		}
	}
	errno = saved;
	chain(sig, si, uc);
}

static void install(void)
{
	const char *e = getenv("LIBCOMMIT_ESCALATE");
	struct sigaction sa;

	if (e && strtoul(e, NULL, 10) > 0)
		escalate_at = strtoul(e, NULL, 10);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &prev_segv) < 0)
		install_err = -errno;
}

int cm_region_add(struct cm_region *r)
{
	pthread_once(&once, install);
	if (install_err)
		return install_err;
	atomic_flag_clear(&r->lock);
	for (unsigned i = 0; i < MAX_REGIONS; i++) {
		struct cm_region *expect = NULL;

		if (atomic_compare_exchange_strong(&regions[i], &expect, r))
			return 0;
	}
	return -EMFILE;
}

void cm_region_del(struct cm_region *r)
{
	for (unsigned i = 0; i < MAX_REGIONS; i++) {
		struct cm_region *expect = r;

		if (atomic_compare_exchange_strong(&regions[i], &expect, NULL))
			return;
	}
}

size_t cm_region_take(struct cm_region *r, size_t p0, size_t p1,
		      uint32_t *out)
{
	size_t n = 0, keep = 0;

	lock(r);
	for (size_t i = 0; i < r->nlist; i++) {
		uint32_t pg = r->list[i];

		if (pg >= p0 && pg < p1)
			out[n++] = pg;
		else
			r->list[keep++] = pg;
	}
	r->nlist = keep;
	unlock(r);
	return n;
}

void cm_region_untake(struct cm_region *r, const uint32_t *pg, size_t n)
{
	lock(r);
	for (size_t i = 0; i < n; i++)
		r->list[r->nlist++] = pg[i];
	unlock(r);
}

void cm_region_enter(struct cm_region *r)
{
	bool idle = false;

	/* An escalation holds it for two system calls, never while it
	 * could fault on the map. */
	while (!atomic_compare_exchange_weak(&r->busy, &idle, true)) {
		idle = false;
		sched_yield();
	}
}

/*
 * Let go of the region; first escalate if a handler found it past the
 * threshold meanwhile and it still is (a sync that took the pages after
 * that has brought it back under). The holder escalating is as if the
 * handler had taken the gate right after it: the same state, the same
 * call. Its error is not the sync's: cm_region_overflow() makes pages
 * writable with one mprotect over the whole region, which needs no new
 * VMA (untake() ignores it likewise).
 */
void cm_region_leave(struct cm_region *r)
{
	if (atomic_exchange(&r->escalate_wanted, false)) {
		size_t n;

		lock(r);
		n = r->nlist;
		unlock(r);
		if (n >= escalate_at && r->uffd >= 0)
			(void)cm_region_overflow(r);
	}
	atomic_store(&r->busy, false);
}

/*
 * A handler that claimed pages before an escalation set every bit may
 * still be about to make them writable and list them. A sync after the
 * escalation write-protects the whole range and then diffs and drops
 * every private copy in it: such a late mprotect would make a page
 * writable between the diff and the drop, and its stores would be
 * dropped. So that sync first waits for those claims to finish, before
 * it takes the list (so that it takes their pages too); no new one can
 * succeed while every bit is set.
 */
void cm_region_drain(struct cm_region *r)
{
	while (atomic_load(&r->claimers))
		sched_yield();
}

int cm_region_overflow(struct cm_region *r)
{
	size_t words = (r->npages + 63) / 64;

	/* Overflow first: a sync that sees it keeps its pages dirty. Then
	 * the bits, so a racing fault waits instead of listing a page.
	 *
	 * Arm the write-protect only when the region was not in overflow:
	 * then every page stored to since its last sync is on the list, and
	 * from here on the kernel records the others. In an overflow,
	 * arming would forget stores only the kernel knows of (a sync of
	 * part of the map leaves the rest in overflow). If arming fails,
	 * the next sync diffs every page. */
	atomic_fetch_add(&r->overflows, 1);
	if (!atomic_exchange(&r->overflow, true) && r->uffd >= 0 &&
	    cm_uffd_protect(r, 0, r->npages, true))
		atomic_store(&r->uffd_failed, true);
	for (size_t w = 0; w < words; w++) {
		size_t left = r->npages - w * 64;

		atomic_fetch_or(&r->bits[w], left >= 64 ? ~0ull
							: (1ull << left) - 1);
	}
	if (mprotect((void *)r->base, r->npages * CM_PAGE,
		     PROT_READ | PROT_WRITE))
		return -errno;
	return 0;
}

/*
 * After a sync of the whole region that the kernel's tracking served
 * (the scan write-protected again the n pages it found, so the region
 * is armed as at the overflow unless it was mapped afresh, rearm; every
 * bit is still set): if the program dirtied many pages, stay with that
 * tracking. Going back to page by
 * page costs a signal and an mprotect per page up to the threshold,
 * then the escalation again (arming the whole region), every round of a
 * program that keeps dirtying many pages; staying costs one mprotect.
 * A program that dirties few goes back to page by page at its next
 * sync, since the scan walks the whole region's page table and the list
 * does not. Returns whether it stays (false: the caller cleans up as
 * after any sync, and the region is tracked page by page).
 */
bool cm_region_resume(struct cm_region *r, size_t n, bool rearm)
{
	if (n < escalate_at || r->uffd < 0 || atomic_load(&r->uffd_failed))
		return false;
	/* A fresh mapping is registered but not protected: unarmed, every
	 * page would look written to the next scan. Nothing is written
	 * yet (the region is read-only). */
	if (rearm && cm_uffd_protect(r, 0, r->npages, true))
		return false;
	if (mprotect((void *)r->base, r->npages * CM_PAGE,
		     PROT_READ | PROT_WRITE)) {
		/* Some pages may have become writable without the
		 * overflow: overflow after all, and have the next sync
		 * diff every page rather than trust the scan. */
		atomic_store(&r->uffd_failed, true);
		(void)cm_region_overflow(r);
		return true;
	}
	atomic_store(&r->overflow, true);
	return true;
}

int cm_uffd_setup(struct cm_region *r)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED,
	};
	struct pm_scan_arg probe = { .size = sizeof(probe) };

	r->uffd = r->pagemap = -1;
	/* Tests (and comparisons) force the fallback with this. */
	if (getenv("LIBCOMMIT_NO_UFFD"))
		return 0;
	/* User-mode faults only: what an unprivileged process may have
	 * (vm.unprivileged_userfaultfd = 0); asynchronous write-protect
	 * faults never reach the descriptor anyway. */
	r->uffd = (int)syscall(SYS_userfaultfd,
			       O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (r->uffd < 0)
		goto unsupported;
	if (ioctl(r->uffd, UFFDIO_API, &api) < 0 || cm_uffd_register(r, 0, r->npages))
		goto unsupported;
	r->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (r->pagemap < 0 || ioctl(r->pagemap, PAGEMAP_SCAN, &probe) < 0)
		goto unsupported;
	/* Registered, not yet protected: cm_region_overflow() arms it. */
	return 0;
unsupported:
	cm_uffd_close(r);
	return 0;
}

void cm_uffd_close(struct cm_region *r)
{
	if (r->uffd >= 0)
		close(r->uffd); /* unregisters the range */
	if (r->pagemap >= 0)
		close(r->pagemap);
	r->uffd = r->pagemap = -1;
}

int cm_uffd_register(struct cm_region *r, size_t pg, size_t n)
{
	struct uffdio_register reg = {
		.range = { r->base + pg * CM_PAGE, n * CM_PAGE },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	return ioctl(r->uffd, UFFDIO_REGISTER, &reg) < 0 ? -errno : 0;
}

int cm_uffd_protect(struct cm_region *r, size_t pg, size_t n, bool wp)
{
	struct uffdio_writeprotect w = {
		.range = { r->base + pg * CM_PAGE, n * CM_PAGE },
		.mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(r->uffd, UFFDIO_WRITEPROTECT, &w) < 0 ? -errno : 0;
}

ssize_t cm_uffd_scan(struct cm_region *r, size_t p0, size_t p1,
		     uint32_t *out)
{
	struct page_region vec[512];
	uint64_t at = r->base + p0 * CM_PAGE, end = r->base + p1 * CM_PAGE;
	size_t n = 0;

	while (at < end) {
		struct pm_scan_arg a = {
			.size = sizeof(a),
			.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
			.start = at,
			.end = end,
			.vec = (uintptr_t)vec,
			.vec_len = sizeof(vec) / sizeof(vec[0]),
			.category_mask = PAGE_IS_WRITTEN,
			.return_mask = PAGE_IS_WRITTEN,
		};
		long k = ioctl(r->pagemap, PAGEMAP_SCAN, &a);

		if (k < 0)
			return -errno;
		for (long i = 0; i < k; i++)
			for (uint64_t q = vec[i].start; q < vec[i].end;
			     q += CM_PAGE)
				out[n++] = (uint32_t)((q - r->base) / CM_PAGE);
		if (a.walk_end <= at)
			return -EIO;
		at = a.walk_end;
	}
	return (ssize_t)n;
}

void cm_region_clean(struct cm_region *r, const uint32_t *pg, size_t n)
{
	for (size_t i = 0; i < n; i++)
		atomic_fetch_and(&r->bits[pg[i] / 64], ~(1ull << (pg[i] % 64)));
}

void cm_region_clean_range(struct cm_region *r, size_t p0, size_t p1)
{
	while (p0 < p1) {
		size_t w = p0 / 64, end = (w + 1) * 64 < p1 ? (w + 1) * 64 : p1;
		uint64_t mask = end - p0 == 64 ? ~0ull
					       : ((1ull << (end - p0)) - 1)
						 << (p0 % 64);

		atomic_fetch_and(&r->bits[w], ~mask);
		p0 = end;
	}
}
