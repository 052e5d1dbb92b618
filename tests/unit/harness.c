// SPDX-License-Identifier: MIT
/* harness.c -- the unit test runner and volume helpers */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"

int test_failures;

/* Every image path handed out, so that images of a case that bailed
 * out through REQUIRE are removed at exit too. */
static char **reg_paths;
static unsigned reg_n, reg_cap;
static bool reg_atexit;

static void reg_cleanup(void)
{
	for (unsigned i = 0; i < reg_n; i++) {
		unlink(reg_paths[i]);
		free(reg_paths[i]);
	}
	free(reg_paths);
	reg_paths = NULL;
	reg_n = reg_cap = 0;
}

static void reg_add(const char *path)
{
	if (reg_n == reg_cap) {
		unsigned cap = reg_cap ? 2 * reg_cap : 32;
		char **n = realloc(reg_paths, cap * sizeof(*n));

		if (!n)
			abort();
		reg_paths = n;
		reg_cap = cap;
	}
	for (unsigned i = 0; i < reg_n; i++)
		if (!strcmp(reg_paths[i], path))
			return;
	reg_paths[reg_n] = strdup(path);
	if (!reg_paths[reg_n])
		abort();
	reg_n++;
	if (!reg_atexit) {
		atexit(reg_cleanup);
		reg_atexit = true;
	}
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
