// SPDX-License-Identifier: MIT
/* test_sigbus.c -- a SIGBUS on a device's mapping (an image cut short
 * under it) is recorded for that device and latches its volume; the
 * process lives, reads come from parity, updates fail. A SIGBUS
 * anywhere else still ends the process. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "media.h"
#include "sigbus.h"

#define PG 4096u
#define DEV_BYTES (1u << 20)
#define CUT (16 * PG)		/* the images are cut to this */

static bool open_dev(struct dg_dev *d, const char *tag, struct dg_latch *l)
{
	char *path = tfile_path(tag), err[256] = "";
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	bool ok = fd >= 0 && ftruncate(fd, DEV_BYTES) == 0;

	if (fd >= 0)
		close(fd);
	ok = ok && dg_dev_open(d, path, false, false, err, sizeof(err)) == 0;
	if (!ok)
		fprintf(stderr, "cannot open %s: %s\n", path, err);
	free(path);
	if (ok)
		d->latch = l;
	return ok;
}

static uint64_t first_fault(const struct dg_dev *d)
{
	return atomic_load(&d->fault->first);
}

static uint64_t pages_faulted(const struct dg_dev *d)
{
	return atomic_load(&d->fault->pages);
}

/* A load and a store past the end of a cut image: both complete (the
 * load reads zeros), the fault is the device's, at the byte touched,
 * and the first look at the device latches its volume with that. */
static void load_and_store_past_the_end(void)
{
	struct dg_latch l;
	struct dg_dev a, b;
	uint64_t total = dg_sigbus_total();
	char why[160];
	uint8_t v = 0xff;

	dg_latch_init(&l);
	REQUIRE(open_dev(&a, "sb-a", &l));
	if (!open_dev(&b, "sb-b", &l)) {
		CHECK(!"open b");
		dg_dev_close(&a);
		return;
	}
	CHECK_EQ(dg_dev_write(&b, 5 * PG, "kept", 4), 0);
	CHECK_EQ(dg_dev_persist(&b, 5 * PG, 4), 0);
	CHECK_EQ(truncate(b.path, CUT), 0);

	v = *(volatile const uint8_t *)dg_dev_ptr(&b, 40 * PG + 5);
	CHECK_EQ(v, 0);
	CHECK(dg_dev_faulted(&b));
	CHECK(!dg_dev_faulted(&a));
	CHECK_EQ(first_fault(&b), 40 * PG + 5);
	CHECK_EQ(pages_faulted(&b), 1);
	CHECK_EQ(dg_sigbus_total(), total + 1);
	/* Nothing looked yet: the latch is set at the first look. */
	CHECK(!dg_latch_on(&l));
	CHECK_EQ(dg_dev_fault_check(&a), 0);
	CHECK_EQ(dg_dev_fault_check(&b), -EIO);
	CHECK(dg_latch_on(&l));
	dg_latch_why(&l, why, sizeof(why));
	CHECK(strstr(why, b.path) != NULL);
	CHECK(strstr(why, "SIGBUS at byte 163845 ") != NULL);

	/* A store elsewhere past the end: the process goes on, the first
	 * fault stays the one said. */
	*(volatile uint8_t *)(b.base + 60 * PG) = 7;
	CHECK_EQ(*(volatile const uint8_t *)dg_dev_ptr(&b, 60 * PG), 7);
	CHECK_EQ(pages_faulted(&b), 2);
	CHECK_EQ(first_fault(&b), 40 * PG + 5);
	/* The pages still in the file are read from it as before. */
	CHECK(!memcmp(dg_dev_ptr(&b, 5 * PG), "kept", 4));
	/* The volume takes nothing more, on any device. */
	CHECK_EQ(dg_dev_write(&b, 0, "x", 1), -EIO);
	CHECK_EQ(dg_dev_write(&a, 0, "x", 1), -EIO);
	CHECK_EQ(dg_dev_persist(&a, 0, 1), -EIO);
	dg_dev_close(&b);
	dg_dev_close(&a);
}

/* The store functions' own store may be the one that faults: it
 * reaches no device, so it fails (-EIO), latch or not. */
static void a_store_that_faults_fails(void)
{
	static uint8_t buf[2 * PG];
	struct dg_latch l;
	struct dg_dev c, d;
	char why[160];

	dg_latch_init(&l);
	REQUIRE(open_dev(&c, "sb-c", NULL));
	CHECK_EQ(truncate(c.path, CUT), 0);
	memset(buf, 0x5a, sizeof(buf));
	CHECK_EQ(dg_dev_write(&c, 20 * PG, buf, sizeof(buf)), -EIO);
	CHECK_EQ(pages_faulted(&c), 2);
	CHECK_EQ(first_fault(&c), 20 * PG);
	CHECK_EQ(dg_dev_persist(&c, 20 * PG, sizeof(buf)), -EIO);
	dg_dev_close(&c);

	REQUIRE(open_dev(&d, "sb-d", &l));
	CHECK_EQ(truncate(d.path, CUT), 0);
	CHECK_EQ(dg_dev_stream(&d, 30 * PG, buf, sizeof(buf)), -EIO);
	CHECK(dg_latch_on(&l));
	dg_latch_why(&l, why, sizeof(why));
	CHECK(strstr(why, "SIGBUS at byte 122880 ") != NULL);
	dg_dev_close(&d);

	REQUIRE(open_dev(&d, "sb-e", NULL));
	CHECK_EQ(truncate(d.path, CUT), 0);
	CHECK_EQ(dg_dev_zero(&d, 17 * PG, PG), -EIO);
	CHECK_EQ(first_fault(&d), 17 * PG);
	dg_dev_close(&d);
}

/* Several threads fault at once, each on pages of its own: each page
 * is replaced once, every load completes. */
#define THREADS 4
#define PER_THREAD 16
struct reader {
	struct dg_dev *d;
	unsigned t;
	unsigned nonzero;
};

static void *read_past_the_end(void *arg)
{
	struct reader *r = arg;

	for (unsigned i = 0; i < PER_THREAD; i++) {
		uint64_t pg = 32 + r->t * PER_THREAD + i;

		r->nonzero += *(volatile const uint8_t *)dg_dev_ptr(
			r->d, pg * PG + r->t) != 0;
	}
	return NULL;
}

static void threads_fault_at_once(void)
{
	struct reader r[THREADS];
	pthread_t th[THREADS];
	struct dg_dev d;

	REQUIRE(open_dev(&d, "sb-t", NULL));
	CHECK_EQ(truncate(d.path, CUT), 0);
	for (unsigned t = 0; t < THREADS; t++) {
		r[t] = (struct reader){ &d, t, 0 };
		REQUIRE(pthread_create(&th[t], NULL, read_past_the_end,
				       &r[t]) == 0);
	}
	for (unsigned t = 0; t < THREADS; t++) {
		pthread_join(th[t], NULL);
		CHECK_EQ(r[t].nonzero, 0);
	}
	CHECK_EQ(pages_faulted(&d), THREADS * PER_THREAD);
	CHECK(first_fault(&d) >= 32 * PG &&
	      first_fault(&d) < (32 + THREADS * PER_THREAD) * PG);
	dg_dev_close(&d);
}

/* How a forked child ended: the signal that ended it, 0 when it exited
 * 0, -1 when it exited otherwise (a sanitizer's report). */
/* In a child about to die of SIGBUS by design: no core file, no
 * systemd-coredump stall. */
static void no_core(void)
{
	struct rlimit rl = { 0, 0 };

	setrlimit(RLIMIT_CORE, &rl);
}

static int child_end(pid_t pid)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -2;
	if (WIFSIGNALED(st))
		return WTERMSIG(st);
	return WEXITSTATUS(st) ? -1 : 0;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* The sanitizer's handler was there first: it reports the SIGBUS and
 * exits or aborts. */
#define DIES_OF_SIGBUS(end) ((end) == SIGBUS || (end) == SIGABRT || (end) == -1)
#else
#define DIES_OF_SIGBUS(end) ((end) == SIGBUS)
#endif

/* With the handler installed (a device is mapped), a SIGBUS outside
 * every device's mapping ends the process as it did before, and so
 * does one sent by kill(). */
static void elsewhere_it_still_kills(void)
{
	struct dg_dev d;
	pid_t pid;
	int end;

	REQUIRE(open_dev(&d, "sb-k", NULL));
	pid = fork();
	if (pid == 0) {
		int fd = memfd_create("sigbus-test", 0);
		volatile uint8_t *p;

		no_core();

		if (fd < 0 || ftruncate(fd, 2 * PG) < 0)
			_exit(3);
		p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, 0);
		if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
			_exit(3);
		(void)p[PG];
		_exit(0);	/* survived: wrong */
	}
	end = child_end(pid);
	CHECK(DIES_OF_SIGBUS(end));
	if (!DIES_OF_SIGBUS(end))
		fprintf(stderr, "  a load outside: the child ended %d\n", end);

	pid = fork();
	if (pid == 0) {
		no_core();
		raise(SIGBUS);
		_exit(0);
	}
	end = child_end(pid);
	CHECK(DIES_OF_SIGBUS(end));
	if (!DIES_OF_SIGBUS(end))
		fprintf(stderr, "  a raise: the child ended %d\n", end);
	dg_dev_close(&d);
}

/* A volume one of whose images is cut short under it: the pages that
 * were there read right, from parity; the volume is latched with the
 * reason and takes no update. With the image's size back, a scrub
 * rebuilds what it lost. */
#define NPG 8u
/* Pages [vpn, vpn + n) to data, one range a page. */
static int put(struct dg_vol *vol, uint64_t vpn, unsigned n,
	       const uint8_t *data)
{
	struct dg_range r[NPG];

	for (unsigned i = 0; i < n; i++)
		r[i] = (struct dg_range){ vpn + i, 0, PG, data + i * PG };
	return dg_apply(vol, r, n);
}

static void volume_with_a_cut_device(void)
{
	uint8_t *old = aligned_alloc(PG, NPG * PG);
	uint8_t *new = aligned_alloc(PG, NPG * PG);
	uint8_t *got = aligned_alloc(PG, NPG * PG);
	uint64_t seed = 7, vpn;
	struct dg_scrub_report sr = { 0 };
	struct dg_vol_info in;
	struct dg_vol *vol;
	struct dg_loc loc;
	struct tvol tv;

	REQUIRE(old && new && got);
	tvol_make(&tv, "sbvol", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	vpn = tdata_vpn(vol);
	trand_fill(&seed, old, NPG * PG);
	trand_fill(&seed, new, NPG * PG);
	CHECK_EQ(put(vol, vpn, NPG, old), 0);
	loc = dg_vpn_loc(vol, vpn);
	/* The device of the first page, cut at that page. */
	CHECK_EQ(truncate(tv.paths[loc.dev], dg_row_page(vol, loc.row) * PG),
		 0);

	memset(got, 0xee, NPG * PG);
	CHECK_EQ(dg_read(vol, vpn, NPG, got), 0);
	CHECK(!memcmp(got, old, NPG * PG));
	dg_vol_get_info(vol, &in);
	CHECK(in.read_only);
	CHECK(strstr(in.failed, "SIGBUS at byte") != NULL);
	CHECK(strstr(in.failed, tv.paths[loc.dev]) != NULL);
	CHECK(put(vol, vpn, NPG, new) < 0);
	CHECK_EQ(dg_read(vol, vpn, NPG, got), 0);
	CHECK(!memcmp(got, old, NPG * PG));
	dg_vol_close(vol);

	/* The size back: the lost pages read zeros, and fail their
	 * checksums until the scrub rebuilds them, or the journal redoes
	 * the update that failed (a persist that failed: old or new). */
	CHECK_EQ(truncate(tv.paths[loc.dev], 16ull << 20), 0);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(dg_vol_scrub(vol, true, &sr, NULL, NULL), 0);
	SCRUB_CLEAN(vol, false);
	CHECK_EQ(dg_read(vol, vpn, NPG, got), 0);
	CHECK(!memcmp(got, old, NPG * PG) || !memcmp(got, new, NPG * PG));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(old);
	free(new);
	free(got);
}

/* Without redundancy nothing tells the zeros from the page: a page of
 * a device that faulted reads EIO, never zeros. */
static void without_redundancy_it_reads_eio(void)
{
	uint8_t *buf = aligned_alloc(PG, 2 * PG);
	uint64_t seed = 9, vpn;
	struct dg_vol *vol;
	struct dg_loc loc;
	struct tvol tv;

	REQUIRE(buf);
	tvol_make(&tv, "sbnone", 2, 0, 16ull << 20, true);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	vpn = tdata_vpn(vol);
	trand_fill(&seed, buf, 2 * PG);
	CHECK_EQ(put(vol, vpn, 2, buf), 0);
	loc = dg_vpn_loc(vol, vpn);
	CHECK_EQ(truncate(tv.paths[loc.dev], dg_row_page(vol, loc.row) * PG),
		 0);
	CHECK_EQ(dg_read(vol, vpn, 1, buf), -EIO);
	CHECK_EQ(dg_read(vol, vpn, 2, buf), -EIO);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(buf);
}

static const struct test_case cases[] = {
	{ "load_and_store_past_the_end", load_and_store_past_the_end },
	{ "a_store_that_faults_fails", a_store_that_faults_fails },
	{ "threads_fault_at_once", threads_fault_at_once },
	{ "elsewhere_it_still_kills", elsewhere_it_still_kills },
	{ "volume_with_a_cut_device", volume_with_a_cut_device },
	{ "without_redundancy_it_reads_eio", without_redundancy_it_reads_eio },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return test_main(argc, argv, cases);
}
