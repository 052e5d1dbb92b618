// SPDX-License-Identifier: MIT
/* harness.c -- the unit test runner and volume helpers */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"

int test_failures;

/*
 * Every image path handed out, with the process that asked for it, so
 * that the images go however that process ends: at exit (a case that
 * bailed out through REQUIRE too), and on a signal that ends it (the
 * runner's SIGTERM at a timeout, ^C, abort(), a crash), which skips
 * atexit and would leave them on /dev/shm, in memory, until someone
 * removes them. Each process removes only its own: a forked child
 * (dies_storing(), a crash test's worker) that dies must not take its
 * parent's images with it. Entries sit in blocks that never move nor
 * go (not even at exit) and are counted once written, so a signal
 * handler on any thread reads only whole entries.
 */
#define REG_BLOCK 64
struct reg_block {
	struct reg_block *next;
	unsigned n;
	pid_t owner[REG_BLOCK];
	char *path[REG_BLOCK];
};
static struct reg_block *reg_head, *reg_tail;
static bool reg_hooked;

/* Async-signal-safe: unlink() and reads only. */
static void reg_unlink_mine(void)
{
	pid_t me = getpid();

	for (struct reg_block *b = __atomic_load_n(&reg_head, __ATOMIC_ACQUIRE);
	     b; b = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE)) {
		unsigned n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);

		for (unsigned i = 0; i < n; i++)
			if (b->owner[i] == me)
				unlink(b->path[i]);
	}
}

/* At exit the images go; the blocks stay, reachable and whole: a
 * signal on another thread may be walking them in reg_on_signal(). */
static void reg_cleanup(void)
{
	reg_unlink_mine();
}

/* The images removed, then the signal's own action: its default put
 * back first (sigaction() is async-signal-safe), so the raise ends the
 * process even when another handler (libcommit's SIGSEGV handler
 * chains to this one by a plain call) is still the one installed, and
 * would call back here without end. */
static void reg_on_signal(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int saved = errno;

	reg_unlink_mine();
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
	/* Blocked while a handler runs: delivered once it returns. */
	errno = saved;
}

static void reg_hook(void)
{
	static const int sigs[] = {
		SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT,
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
		/* Under a sanitizer, its own handler reports a crash. */
		SIGSEGV, SIGBUS, SIGFPE, SIGILL,
#endif
	};
	struct sigaction sa = { .sa_handler = reg_on_signal,
				.sa_flags = SA_RESETHAND };

	atexit(reg_cleanup);
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old;

		/* A signal ignored (a background job's SIGINT) or handled
		 * by the test itself is left as it is. */
		if (sigaction(sigs[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_DFL)
			sigaction(sigs[i], &sa, NULL);
	}
	reg_hooked = true;
}

static void reg_add(const char *path)
{
	pid_t me = getpid();
	struct reg_block *b;
	char *p;

	for (b = reg_head; b; b = b->next)
		for (unsigned i = 0; i < b->n; i++)
			if (b->owner[i] == me && !strcmp(b->path[i], path))
				return;
	if (!reg_hooked)
		reg_hook();
	p = strdup(path);
	if (!p)
		abort();
	b = reg_tail;
	if (!b || b->n == REG_BLOCK) {
		b = calloc(1, sizeof(*b));
		if (!b)
			abort();
		if (reg_tail)
			__atomic_store_n(&reg_tail->next, b, __ATOMIC_RELEASE);
		else
			__atomic_store_n(&reg_head, b, __ATOMIC_RELEASE);
		reg_tail = b;
	}
	b->owner[b->n] = me;
	b->path[b->n] = p;
	__atomic_store_n(&b->n, b->n + 1, __ATOMIC_RELEASE);
}

char *tfile_path(const char *tag)
{
	char *p;

	if (asprintf(&p, "/dev/shm/dgtest-%d-%s.img", getpid(), tag) < 0)
		abort();
	reg_add(p);
	return p;
}

int test_main(int argc, char **argv, const struct test_case *cases)
{
	int passed = 0, failed = 0;

	dg_log_set_level(getenv("DG_TEST_VERBOSE") ? DG_LOG_DEBUG
						   : DG_LOG_ERR);
	for (const struct test_case *c = cases; c->name; c++) {
		bool wanted = argc < 2 && strncmp(c->name, "bug_", 4);
		int before = test_failures;

		for (int i = 1; i < argc; i++)
			if (!strcmp(argv[i], c->name))
				wanted = true;
		if (!wanted)
			continue;
		c->fn();
		if (test_failures == before) {
			printf("ok %s\n", c->name);
			passed++;
		} else {
			printf("FAIL %s\n", c->name);
			failed++;
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

static void make(struct tvol *tv, const char *tag, unsigned ndev,
		 const struct dg_format_opts *o)
{
	int ret;

	memset(tv, 0, sizeof(*tv));
	tv->ndev = ndev;
	for (unsigned i = 0; i < ndev; i++) {
		if (asprintf(&tv->paths[i], "/dev/shm/dgtest-%d-%s-%u.img",
			     getpid(), tag, i) < 0)
			abort();
		reg_add(tv->paths[i]);
		unlink(tv->paths[i]);
	}
	ret = dg_format((const char *const *)tv->paths, ndev, o, NULL);
	if (ret) {
		fprintf(stderr, "tvol_make: dg_format: %s\n", strerror(-ret));
		abort();
	}
}

void tvol_make(struct tvol *tv, const char *tag, unsigned ndev,
	       unsigned parity, uint64_t size, bool no_redundancy)
{
	struct dg_format_opts o = { .parity = parity, .size = size,
				    .force = true,
				    .no_redundancy = no_redundancy };

	make(tv, tag, ndev, &o);
}

void tvol_make_remap(struct tvol *tv, const char *tag, unsigned ndev,
		     uint64_t size)
{
	struct dg_format_opts o = { .parity = 1, .size = size,
				    .force = true, .remap = true };

	make(tv, tag, ndev, &o);
}

void tvol_make_chunked(struct tvol *tv, const char *tag, unsigned ndev,
		       unsigned parity, uint64_t size, uint32_t chunk_pages)
{
	struct dg_format_opts o = { .parity = parity, .size = size,
				    .force = true, .chunk_pages = chunk_pages };

	make(tv, tag, ndev, &o);
}

void tvol_make_opts(struct tvol *tv, const char *tag, unsigned ndev,
		    const struct dg_format_opts *o)
{
	make(tv, tag, ndev, o);
}

void tvol_fill_spread(struct tvol *tv, uint8_t (*want)[DG_PAGE_SIZE],
		      unsigned n)
{
	struct dg_vol *vol = tvol_open(tv, 0);
	uint64_t seed = 31;

	REQUIRE(vol);
	for (unsigned i = 0; i < n; i++) {
		struct dg_range r = { 500 + 7 * i, 0, DG_PAGE_SIZE, want[i] };

		trand_fill(&seed, want[i], DG_PAGE_SIZE);
		REQUIRE(dg_apply(vol, &r, 1) == 0);
	}
	dg_vol_close(vol);
}

struct dg_vol *tvol_open(struct tvol *tv, unsigned flags)
{
	struct dg_vol *vol = NULL;
	char err[512];
	int ret = dg_vol_open((const char *const *)tv->paths, tv->ndev, flags,
			      &vol, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "tvol_open: %s (%s)\n", err, strerror(-ret));
		return NULL;
	}
	return vol;
}

void tvol_cleanup(struct tvol *tv)
{
	for (unsigned i = 0; i < tv->ndev; i++) {
		if (tv->paths[i])
			unlink(tv->paths[i]);
		free(tv->paths[i]);
		tv->paths[i] = NULL;
	}
}

uint64_t trand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

void trand_fill(uint64_t *s, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len >= 8) {
		uint64_t v = trand(s);

		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	while (len--)
		*p++ = (uint8_t)trand(s);
}

static void image_io(struct tvol *tv, unsigned dev, uint64_t off, void *buf,
		     size_t len, bool write)
{
	int fd = open(tv->paths[dev], write ? O_WRONLY : O_RDONLY);
	ssize_t n;

	if (fd < 0)
		abort();
	n = write ? pwrite(fd, buf, len, (off_t)off)
		  : pread(fd, buf, len, (off_t)off);
	if (n != (ssize_t)len)
		abort();
	close(fd);
}

void tvol_poke(struct tvol *tv, unsigned dev, uint64_t off, const void *src,
	       size_t len)
{
	image_io(tv, dev, off, (void *)src, len, true);
}

void tvol_peek(struct tvol *tv, unsigned dev, uint64_t off, void *dst,
	       size_t len)
{
	image_io(tv, dev, off, dst, len, false);
}

void tvol_lose_page(struct tvol *tv, struct dg_vol *vol, uint64_t vpn)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);
	uint64_t off = dg_row_page(vol, l.row) * DG_PAGE_SIZE;
	uint64_t seed = 91 + vpn;
	uint8_t junk[DG_PAGE_SIZE];

	for (unsigned d = 0; d < tv->ndev; d++) {
		if (d != l.dev && !dg_vol_row_is_parity(vol, l.row, d))
			continue;
		trand_fill(&seed, junk, sizeof(junk));
		tvol_poke(tv, d, off, junk, sizeof(junk));
	}
}

uint64_t tdata_vpn(struct dg_vol *vol)
{
	struct dg_vol_info info;

	dg_vol_get_info(vol, &info);
	return info.zone_vpns;
}

uint64_t tdata_row(struct dg_vol *vol)
{
	struct dg_vol_info info;

	dg_vol_get_info(vol, &info);
	return info.zone_vpns / (info.ndev - info.parity);
}

int dies_storing(volatile uint8_t *p)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		*p = 1;
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	if (!WIFSIGNALED(st))
		return WEXITSTATUS(st) ? SIGSEGV_UNDER_ASAN : 0;
	/* AddressSanitizer takes the SIGSEGV first and aborts. */
	return WTERMSIG(st) == SIGABRT ? SIGSEGV_UNDER_ASAN : WTERMSIG(st);
}

void tcheck_count_event(void *arg, const struct dg_chk_event *ev)
{
	if ((*(int *)arg)++ < 3)
		fprintf(stderr, "  fsck: %s: %s (%s)\n", ev->structure,
			ev->detail, ev->action);
}
