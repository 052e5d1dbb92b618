/* SPDX-License-Identifier: MIT */
/* harness.h -- named unit test cases, runnable singly (PMDK TEST_CASE) */
#ifndef DG_TEST_HARNESS_H
#define DG_TEST_HARNESS_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsys.h"

/* A case named "bug_..." shows a known, reported engine bug and fails
 * until it is fixed: it runs only when named on the command line. */
struct test_case {
	const char *name;
	void (*fn)(void);
};

extern int test_failures;

/* Fail the current case (and keep going: later checks may explain). */
#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                          \
			test_failures++;                                   \
		}                                                          \
	} while (0)
/* Fail and leave the case: later steps would only crash. */
#define REQUIRE(cond)                                                      \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: REQUIRE failed: %s\n",     \
				__FILE__, __LINE__, #cond);                \
			test_failures++;                                   \
			return;                                            \
		}                                                          \
	} while (0)
#define CHECK_EQ(a, b)                                                     \
	do {                                                               \
		long long a_ = (long long)(a), b_ = (long long)(b);        \
		if (a_ != b_) {                                            \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, " \
				"%s == %lld\n", __FILE__, __LINE__, #a, a_, #b, \
				b_);                                       \
			test_failures++;                                   \
		}                                                          \
	} while (0)

/* A scrub (repairing or not) of the whole volume finds no damage and no
 * parity that disagrees with its data. */
#define SCRUB_CLEAN(vol, repair)                                           \
	do {                                                               \
		struct dg_scrub_report sr_ = { 0 };                        \
		CHECK_EQ(dg_vol_scrub((vol), (repair), &sr_, NULL, NULL), 0); \
		CHECK_EQ(sr_.detected, 0);                                 \
		CHECK_EQ(sr_.parity_mismatch, 0);                          \
	} while (0)

/*
 * Run the cases named on the command line, or all but the bug_ ones.
 * Prints one line per case and the closing "N passed, N failed" line;
 * exit status 0 only when every case passed.
 */
int test_main(int argc, char **argv, const struct test_case *cases);

/* ---- volumes on /dev/shm for tests ---------------------------------- */

/* Image paths /dev/shm/dgtest-<pid>-<tag>-<i>.img; removed by
 * tvol_cleanup(), else at exit or on a signal that ends the process
 * (a REQUIRE that bailed out, a timeout's SIGTERM, abort(), a crash). */
struct tvol {
	unsigned ndev;
	char *paths[DG_MAX_DEVS];
};
/* Format ndev images of size bytes each; REQUIREs success. */
void tvol_make(struct tvol *tv, const char *tag, unsigned ndev,
	       unsigned parity, uint64_t size, bool no_redundancy);
/* The same made --remap (DG_FEAT_INCOMPAT_REMAP, parity 1 on three
 * devices or more): whole-page overwrites go to blank pages, with a
 * record in the file's remap page (fs/fsys/remap.c). */
void tvol_make_remap(struct tvol *tv, const char *tag, unsigned ndev,
		     uint64_t size);
/* The same with chunks of chunk_pages pages, for cases that lay out
 * whole rows of one chunk. */
void tvol_make_chunked(struct tvol *tv, const char *tag, unsigned ndev,
		       unsigned parity, uint64_t size, uint32_t chunk_pages);
/* Any format options (force is up to o). */
void tvol_make_opts(struct tvol *tv, const char *tag, unsigned ndev,
		    const struct dg_format_opts *o);
struct dg_vol *tvol_open(struct tvol *tv, unsigned flags);
void tvol_cleanup(struct tvol *tv);
/* A scratch file path /dev/shm/dgtest-<pid>-<tag>.img (malloc'd),
 * removed at exit or on a signal that ends the process, even when a
 * case bails out early. */
char *tfile_path(const char *tag);

/* A check's event callback (check.h) that counts findings in *(int *)arg
 * and prints the first three, so a failing case shows what fsck saw. */
struct dg_chk_event;
void tcheck_count_event(void *arg, const struct dg_chk_event *ev);

/* Deterministic PRNG (xorshift64*), so failures reproduce. */
uint64_t trand(uint64_t *state);
void trand_fill(uint64_t *state, void *buf, size_t len);

/* Write len bytes at byte offset off of a device image, behind the
 * engine (a faulty device). */
void tvol_poke(struct tvol *tv, unsigned dev, uint64_t off, const void *src,
	       size_t len);
void tvol_peek(struct tvol *tv, unsigned dev, uint64_t off, void *dst,
	       size_t len);
/* Page vpn of tv, open as vol, lost beyond parity: its data page and
 * every parity page of its row overwritten with random bytes. (A page
 * of the metadata zone keeps its ditto copies.) */
void tvol_lose_page(struct tvol *tv, struct dg_vol *vol, uint64_t vpn);

/* Pages 500 + 7 i of tv hold want[i] (i < n, random bytes from a fixed
 * seed), each applied and retired; REQUIREs in the caller. Cases about
 * a rebuild's rows use them. */
void tvol_fill_spread(struct tvol *tv, uint8_t (*want)[DG_PAGE_SIZE],
		      unsigned n);

/* The first vpn, and the first row, past the metadata zone: pages of
 * file data, which have no ditto copies (format.h). Cases about what
 * parity alone does use these. */
uint64_t tdata_vpn(struct dg_vol *vol);
uint64_t tdata_row(struct dg_vol *vol);

/* The signal a forked child dies of when it stores to p (0: it did
 * not; -1: fork or wait failed). Under AddressSanitizer or
 * ThreadSanitizer, which take the SIGSEGV first and abort or exit, a
 * death by SIGSEGV reads as SIGSEGV_UNDER_ASAN. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SIGSEGV_UNDER_ASAN SIGSEGV
#else
#define SIGSEGV_UNDER_ASAN (-1)
#endif
int dies_storing(volatile uint8_t *p);

#endif /* DG_TEST_HARNESS_H */
