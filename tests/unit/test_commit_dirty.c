// SPDX-License-Identifier: MIT
/* test_commit_dirty.c -- libcommit's write tracking (libcommit/dirty.c):
 * the first store to a page lists it once, a stream claims the pages
 * after it, taking and cleaning, overflow, and faults that are not the
 * tracker's still kill */
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commit_i.h"
#include "harness.h"

#define NPAGES 64u

struct tregion {
	struct cm_region r;
	volatile uint8_t *mem;	/* stores fault in program order */
};

static bool region_make(struct tregion *t, bool writable)
{
	void *m = mmap(NULL, NPAGES * CM_PAGE, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	memset(t, 0, sizeof(*t));
	if (m == MAP_FAILED)
		return false;
	t->mem = m;
	t->r.base = (uintptr_t)t->mem;
	t->r.npages = NPAGES;
	t->r.writable = writable;
	t->r.bits = calloc((NPAGES + 63) / 64, sizeof(*t->r.bits));
	t->r.list = calloc(NPAGES, sizeof(*t->r.list));
	t->r.uffd = t->r.pagemap = -1;
	return t->r.bits && t->r.list && cm_region_add(&t->r) == 0;
}

static void region_free(struct tregion *t)
{
	cm_region_del(&t->r);
	munmap((void *)t->mem, NPAGES * CM_PAGE);
	free((void *)t->r.bits);
	free(t->r.list);
}

/* The handler appends from a signal: a fence, so the compiler reads the
 * count after the stores that faulted, as the client's lock makes it. */
static size_t nlisted(struct cm_region *r)
{
	atomic_signal_fence(memory_order_seq_cst);
	return r->nlist;
}

static bool listed(const uint32_t *pg, size_t n, uint32_t want)
{
	for (size_t i = 0; i < n; i++)
		if (pg[i] == want)
			return true;
	return false;
}

/* Random stores: each page listed once, in fault order, nothing else. */
static void test_first_store_lists_page(void)
{
	struct tregion t;
	uint32_t out[NPAGES];
	size_t n;

	REQUIRE(region_make(&t, true));
	t.mem[5 * CM_PAGE + 10] = 1;
	t.mem[40 * CM_PAGE] = 2;
	t.mem[5 * CM_PAGE + 20] = 3; /* already writable: no new entry */
	t.mem[20 * CM_PAGE + 4095] = 4;
	CHECK_EQ(nlisted(&t.r), 3);
	n = cm_region_take(&t.r, 0, NPAGES, out);
	REQUIRE(n == 3);
	CHECK_EQ(out[0], 5);
	CHECK_EQ(out[1], 40);
	CHECK_EQ(out[2], 20);
	CHECK_EQ(nlisted(&t.r), 0);
	CHECK(t.mem[5 * CM_PAGE + 10] == 1 && t.mem[5 * CM_PAGE + 20] == 3);
	region_free(&t);
}

/* A store to the page after a dirty one is a stream: the pages after it
 * are claimed with it, one fault for the run. */
static void test_stream_claims_run(void)
{
	struct tregion t;
	uint32_t out[NPAGES];
	size_t n;

	REQUIRE(region_make(&t, true));
	t.mem[10 * CM_PAGE] = 1;
	t.mem[11 * CM_PAGE] = 1;
	n = cm_region_take(&t.r, 0, NPAGES, out);
	CHECK(n > 2);
	for (uint32_t p = 10; p < 10 + n; p++)
		CHECK(listed(out, n, p));
	/* No store reached the claimed pages past 11: nothing to ship,
	 * and the map still reads zeros there. */
	CHECK(t.mem[12 * CM_PAGE] == 0);
	region_free(&t);
}

/* take() moves only the pages of its range; untake() puts them back;
 * clean() lets a page fault again once the caller protects it. */
static void test_take_untake_clean(void)
{
	struct tregion t;
	uint32_t out[NPAGES];
	size_t n;

	REQUIRE(region_make(&t, true));
	t.mem[2 * CM_PAGE] = 1;
	t.mem[30 * CM_PAGE] = 1;
	n = cm_region_take(&t.r, 0, 16, out);
	CHECK_EQ(n, 1);
	CHECK_EQ(out[0], 2);
	CHECK_EQ(nlisted(&t.r), 1);
	cm_region_untake(&t.r, out, n);
	CHECK_EQ(nlisted(&t.r), 2);
	n = cm_region_take(&t.r, 0, NPAGES, out);
	CHECK_EQ(n, 2);
	/* As a sync does: protect again, then clean the bits. */
	REQUIRE(mprotect((void *)t.mem, NPAGES * CM_PAGE, PROT_READ) == 0);
	cm_region_clean(&t.r, out, n);
	t.mem[2 * CM_PAGE] = 9;
	n = cm_region_take(&t.r, 0, NPAGES, out);
	CHECK_EQ(n, 1);
	CHECK_EQ(out[0], 2);
	region_free(&t);
}

/* Overflow: every page marked, the whole region writable, no more
 * faults (nothing listed) and the count the tests read goes up. */
static void test_overflow(void)
{
	struct tregion t;

	REQUIRE(region_make(&t, true));
	REQUIRE(cm_region_overflow(&t.r) == 0);
	CHECK(atomic_load(&t.r.overflow));
	CHECK_EQ(atomic_load(&t.r.overflows), 1);
	for (unsigned w = 0; w < NPAGES / 64; w++)
		CHECK(atomic_load(&t.r.bits[w]) == ~0ull);
	t.mem[0] = 1;
	t.mem[(NPAGES - 1) * CM_PAGE] = 1;
	CHECK_EQ(nlisted(&t.r), 0);
	region_free(&t);
}

/* clean_range() clears the bits of its range only, across words. */
static void test_clean_range(void)
{
	_Atomic uint64_t bits[4];
	struct cm_region r = { .npages = 200, .bits = bits };

	for (unsigned w = 0; w < 4; w++)
		atomic_store(&bits[w], ~0ull);
	cm_region_clean_range(&r, 5, 150);
	for (unsigned pg = 0; pg < 256; pg++)
		CHECK_EQ(!!(atomic_load(&bits[pg / 64]) & (1ull << (pg % 64))),
			 pg < 5 || pg >= 150);
	cm_region_clean_range(&r, 0, 200);
	CHECK(atomic_load(&bits[0]) == 0 && atomic_load(&bits[1]) == 0 &&
	      atomic_load(&bits[2]) == 0);
	CHECK(atomic_load(&bits[3]) == ~0ull << 8);	/* past npages */
}

/* After a sync of a whole overflowed region: with the kernel's tracking
 * and many pages, the region stays in overflow, writable (stores list
 * nothing); with few pages, or no kernel tracking, it does not (the
 * caller cleans up, as after any sync). */
static void test_resume(void)
{
	struct tregion t;

	REQUIRE(region_make(&t, true));
	CHECK(!cm_region_resume(&t.r, NPAGES, false));	/* no userfaultfd */
	REQUIRE(cm_uffd_setup(&t.r) == 0);
	if (t.r.uffd < 0) {
		region_free(&t);
		return;		/* a kernel before 6.7: nothing to resume */
	}
	REQUIRE(cm_region_overflow(&t.r) == 0);
	/* As a sync of the whole region does. */
	atomic_store(&t.r.overflow, false);
	REQUIRE(mprotect((void *)t.mem, NPAGES * CM_PAGE, PROT_READ) == 0);
	CHECK(!cm_region_resume(&t.r, 3, false));	/* few pages */
	CHECK(!atomic_load(&t.r.overflow));
	CHECK(cm_region_resume(&t.r, 1000, true));
	CHECK(atomic_load(&t.r.overflow));
	CHECK_EQ(atomic_load(&t.r.overflows), 1);	/* not escalated again */
	t.mem[5 * CM_PAGE] = 1;				/* no fault: writable */
	CHECK_EQ(nlisted(&t.r), 0);
	cm_uffd_close(&t.r);
	region_free(&t);
}

/* A store the tracker does not own still kills: to a read-only map, and
 * to read-only memory outside every region. */
static void test_foreign_faults_kill(void)
{
	struct tregion ro;
	uint8_t *other = mmap(NULL, CM_PAGE, PROT_READ,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(other != MAP_FAILED);
	REQUIRE(region_make(&ro, false));
	CHECK_EQ(dies_storing(ro.mem + 3 * CM_PAGE), SIGSEGV);
	CHECK_EQ(dies_storing(other), SIGSEGV);
	CHECK_EQ(nlisted(&ro.r), 0);
	region_free(&ro);
	munmap(other, CM_PAGE);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "first_store_lists_page", test_first_store_lists_page },
		{ "stream_claims_run", test_stream_claims_run },
		{ "take_untake_clean", test_take_untake_clean },
		{ "overflow", test_overflow },
		{ "clean_range", test_clean_range },
		{ "resume", test_resume },
		{ "foreign_faults_kill", test_foreign_faults_kill },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
