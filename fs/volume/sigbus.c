// SPDX-License-Identifier: MIT
/*
 * sigbus.c -- the media's SIGBUS handler (sigbus.h)
 *
 * The handler runs on the thread whose load or store faulted, and
 * several threads may fault at once, on one device or several: it
 * takes no lock and calls only what a signal handler may. The watched
 * mappings are a fixed array of slots, each published by an atomic
 * state and a generation, odd while the slot changes (a seqlock: a
 * fault reads the generation, the state, the range, and the generation
 * again, and skips the slot when it changed), so a mapping added or
 * removed on another thread is either seen whole or not at all. A
 * handler counts itself in the slot it looks at, and dg_sigbus_unwatch()
 * waits for that count to drop: once it returns, no handler still
 * holds the old range, which the caller unmaps and anyone may map again
 * (a late handler would put zeros over an unrelated mapping).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sigbus.h"

/* Mappings one process may watch at once: the devices of its volumes,
 * a replace's new device, the spares a rebuild looks at. */
#define SLOTS 256

enum { FREE, BUSY, LIVE };

struct watch {
	_Atomic int state;
	_Atomic unsigned gen;		/* odd while the slot changes */
	_Atomic unsigned inflight;	/* handlers looking at the slot */
	_Atomic uintptr_t base;
	_Atomic size_t len;
	_Atomic int prot;
	struct dg_sigbus_rec rec;
};

static struct watch watches[SLOTS];
static _Atomic uint64_t total;
static struct sigaction prev;	/* the handler before ours */
static uintptr_t page_size;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_err;

/* Not a fault of a device: as if we had never been installed. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	if (prev.sa_flags & SA_SIGINFO) {
		prev.sa_sigaction(sig, si, uc);
	} else if (prev.sa_handler == SIG_IGN && si->si_code <= 0) {
		/* Sent by kill() and ignored before: still ignored. (A
		 * fault ends the process even when ignored.) */
	} else if (prev.sa_handler == SIG_IGN ||
		   prev.sa_handler == SIG_DFL) {
		/* The default action back (sigaction() is async-signal-
		 * safe), then the signal again: blocked while this runs,
		 * it ends the process as soon as the handler returns,
		 * with the core dump it would have had. */
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		sigemptyset(&dfl.sa_mask);
		sigaction(sig, &dfl, NULL);
		raise(sig);
	} else {
		prev.sa_handler(sig);
	}
}

/*
 * The bytes [lo, lo + len) of a mapping whose store failed become a
 * private anonymous mapping of zeros, with the mapping's protection, so
 * the instruction that faulted completes when the handler returns: a
 * load reads zeros, a store lands in memory of this process and never
 * reaches the device. mmap() is not on POSIX's list of async-signal-
 * safe functions, but the system call itself only changes this
 * process's page tables and takes no user-space lock; it is made raw
 * (syscall(), not the libc's wrapper or a sanitizer's interceptor of
 * mmap). It is how programs that must survive a SIGBUS on a mapped
 * file usually do it: map something over the page and let the access
 * complete, rather than jump out of the faulting code.
 */
static bool replace(uintptr_t lo, size_t len, int prot)
{
	long r = syscall(SYS_mmap, (void *)lo, len, prot,
			 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return r != -1;
}

/* A fault at a inside a watched mapping: recorded, then its page (or
 * the poisoned span of a machine check) replaced. false: not inside
 * one, or the replacement failed (the process ends as before). */
static bool handle_slot(struct watch *w, const siginfo_t *si, uintptr_t a,
			bool *done)
{
	uintptr_t base, end, lo, hi, span = page_size;
	uint64_t none = UINT64_MAX;
	unsigned gen = atomic_load(&w->gen);
	size_t len;
	int prot;

	if ((gen & 1) || atomic_load(&w->state) != LIVE)
		return false;
	base = atomic_load(&w->base);
	len = atomic_load(&w->len);
	prot = atomic_load(&w->prot);
	if (atomic_load(&w->gen) != gen)
		return false;	/* changed while read: not this one */
	end = base + len;
	if (a < base || a >= end)
		return false;
	/* A hardware memory error names how much was lost (a huge page
	 * of pmem: 2 MiB); a fault of the page cache is one page. */
	if ((si->si_code == BUS_MCEERR_AR || si->si_code == BUS_MCEERR_AO) &&
	    si->si_addr_lsb > 0 && si->si_addr_lsb < 48 &&
	    ((uintptr_t)1 << si->si_addr_lsb) > span)
		span = (uintptr_t)1 << si->si_addr_lsb;
	lo = a & ~(span - 1);
	hi = lo + span;
	if (lo < base)
		lo = base;
	end = (end + page_size - 1) & ~(page_size - 1);
	if (hi > end)
		hi = end;
	/* Recorded first: whoever meets the zeros (any thread) then
	 * finds the fault (media.c). */
	atomic_compare_exchange_strong(&w->rec.first, &none,
				       (uint64_t)(a - base));
	atomic_fetch_add(&w->rec.pages, (hi - lo) / page_size);
	atomic_fetch_add(&total, 1);
	*done = replace(lo, hi - lo, prot);
	return true;
}

/* A fault at a inside a watched mapping: recorded, then its page (or
 * the poisoned span of a machine check) replaced. false: not inside
 * one, or the replacement failed (the process ends as before). Every
 * slot is looked at counted in (inflight, before its generation is
 * read: all sequentially consistent, so an unwatch either sees the
 * count or this sees its change). */
static bool handle(const siginfo_t *si, uintptr_t a)
{
	for (unsigned i = 0; i < SLOTS; i++) {
		struct watch *w = &watches[i];
		bool done = false, mine;

		atomic_fetch_add(&w->inflight, 1);
		mine = handle_slot(w, si, a, &done);
		atomic_fetch_sub(&w->inflight, 1);
		if (mine)
			return done;
	}
	return false;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	/* si_code > 0: the kernel's, for a fault at si_addr. A SIGBUS
	 * sent by kill() or raise() names no address of ours. */
	if (si && si->si_code > 0 && handle(si, (uintptr_t)si->si_addr)) {
		errno = saved;
		return;
	}
	errno = saved;
	chain(sig, si, uc);
}

static void install(void)
{
	struct sigaction sa;

	page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	/* SA_ONSTACK: a thread that set up an alternate stack (for a
	 * stack overflow) handles it there. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &prev) < 0)
		install_err = -errno;
}

int dg_sigbus_watch(void *base, size_t len, int prot,
		    struct dg_sigbus_rec **rec)
{
	pthread_once(&once, install);
	if (install_err)
		return install_err;
	for (unsigned i = 0; i < SLOTS; i++) {
		struct watch *w = &watches[i];
		int expect = FREE;

		if (!atomic_compare_exchange_strong(&w->state, &expect, BUSY))
			continue;
		atomic_fetch_add(&w->gen, 1);	/* odd: changing */
		atomic_store(&w->base, (uintptr_t)base);
		atomic_store(&w->len, len);
		atomic_store(&w->prot, prot);
		atomic_store(&w->rec.first, UINT64_MAX);
		atomic_store(&w->rec.pages, 0);
		atomic_fetch_add(&w->gen, 1);	/* even: whole */
		atomic_store(&w->state, LIVE);
		*rec = &w->rec;
		return 0;
	}
	return -EMFILE;
}

void dg_sigbus_unwatch(struct dg_sigbus_rec *rec)
{
	struct watch *w;

	if (!rec)
		return;
	w = (struct watch *)((char *)rec - offsetof(struct watch, rec));
	atomic_store(&w->state, BUSY);
	atomic_fetch_add(&w->gen, 1);	/* odd: a handler skips the slot */
	/* A handler that counted itself in before the change may still
	 * be putting zeros over the range: it is short (one mmap). */
	while (atomic_load(&w->inflight))
		sched_yield();
	atomic_fetch_add(&w->gen, 1);
	atomic_store(&w->state, FREE);
}

uint64_t dg_sigbus_total(void)
{
	return atomic_load(&total);
}
