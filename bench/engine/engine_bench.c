// SPDX-License-Identifier: MIT
/* engine_bench.c -- one-core engine throughput: verified reads and updates */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "fsys.h"
#include "json.h"
#include "util.h"

/*
 * Every configuration gets its own set of images and stays open for the
 * whole run, so that the measurements can be interleaved: rep r measures
 * test t on every configuration back to back (in an order that rotates
 * with r) before moving on. A burst of noise from the other core then
 * hits one rep of every configuration alike instead of all the reps of
 * one, and the per-rep ratio to the baseline cancels slow drifts.
 */

#define MAX_CFGS  8
#define MAX_REPS  64
#define CHUNK	  256u /* pages: 1 MiB, the default chunk and the big update */

enum test_id { T_VERIFY, T_UPD64, T_UPD4K, T_UPD1M, T_NR };

static const struct test_desc {
	const char *name;	/* on the command line and in the output */
	uint32_t bytes;		/* payload of one update; 0 for verify */
} tests[T_NR] = {
	[T_VERIFY] = { "verify", 0 },
	[T_UPD64] = { "64", 64 },
	[T_UPD4K] = { "4k", DG_PAGE_SIZE },
	[T_UPD1M] = { "1m", CHUNK * DG_PAGE_SIZE },
};

struct bcfg {
	char name[16];
	unsigned ndev, parity;
	bool none;		/* --redundancy none */
	char *paths[DG_MAX_DEVS];
	struct dg_vol *vol;
	uint64_t start;		/* first vpn of the written region */
	/* per test, per rep: units per second (GB/s or ops/s) */
	double rate[T_NR][MAX_REPS];
};

static struct bcfg cfgs[MAX_CFGS];
static unsigned ncfg;

static struct {
	uint64_t size;		/* bytes written, then read and updated */
	unsigned reps;
	double seconds;		/* per measurement */
	double warmup;		/* per configuration and test, before rep 1 */
	const char *dir;
	const char *json;
	int cpu;		/* pin to this CPU; -1: do not pin */
	uint64_t seed;
	bool run[T_NR];
} opt = {
	.size = 256ull << 20,
	.reps = 5,
	.seconds = 1.0,
	.warmup = 0.2,
	.dir = "/dev/shm",
	.cpu = -1,
	.seed = 0x5eed,
};

static const char usage_line[] =
	"usage: engine_bench [--size SIZE] [--reps N] [--seconds S] "
	"[--warmup S] [--configs LIST] [--tests LIST] [--dir DIR] [--cpu N] "
	"[--seed N] [--json FILE|-]\n";

/* ---- images ---------------------------------------------------------- */

/* Remove every image; safe from a signal handler (unlink only). */
static void remove_images(void)
{
	for (unsigned c = 0; c < ncfg; c++)
		for (unsigned i = 0; i < cfgs[c].ndev; i++)
			if (cfgs[c].paths[i])
				unlink(cfgs[c].paths[i]);
}

static void *xmalloc_aligned(size_t len)
{
	void *p = aligned_alloc(DG_PAGE_SIZE, len);

	if (!p)
		die("cannot allocate %zu bytes", len);
	return p;
}

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64*: cheap next to an update, and reproducible */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void fill_random(uint64_t *s, void *buf, size_t len)
{
	uint64_t *w = buf;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = rnd(s);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "none", "p1", "p2", each optionally "xN" for N devices (default 4). */
static int parse_cfg(const char *s, struct bcfg *c)
{
	const char *x = strchr(s, 'x');
	size_t base = x ? (size_t)(x - s) : strlen(s);
	char *end;
	long n = 4;

	if (x) {
		n = strtol(x + 1, &end, 10);
		if (*end || n < 1 || n > (long)DG_MAX_DEVS)
			return -1;
	}
	memset(c, 0, sizeof(*c));
	if (base == 4 && !strncmp(s, "none", 4)) {
		c->none = true;
	} else if (base == 2 && s[0] == 'p' && s[1] >= '1' && s[1] <= '2') {
		c->parity = (unsigned)(s[1] - '0');
	} else {
		return -1;
	}
	if (c->parity >= (unsigned)n)
		return -1;
	c->ndev = (unsigned)n;
	snprintf(c->name, sizeof(c->name), "%s", s);
	return 0;
}

static void parse_list(const char *list, bool is_cfg)
{
	char *dup = strdup(list), *save = NULL, *tok;

	if (!dup)
		die("out of memory");
	if (!is_cfg)
		memset(opt.run, 0, sizeof(opt.run));
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int t = 0;

		if (is_cfg) {
			if (ncfg == MAX_CFGS)
				die("at most %u configurations", MAX_CFGS);
			if (parse_cfg(tok, &cfgs[ncfg]))
				die("bad configuration '%s' (none, p1, p2, "
				    "optionally xN devices)", tok);
			ncfg++;
			continue;
		}
		while (t < T_NR && strcmp(tok, tests[t].name))
			t++;
		if (t == T_NR)
			die("bad test '%s' (verify, 64, 4k, 1m)", tok);
		opt.run[t] = true;
	}
	free(dup);
}

/* Data pages per row. */
static unsigned cfg_k(const struct bcfg *c)
{
	return c->ndev - c->parity;
}

/*
 * Size the devices so the region (plus the partial first chunk the
 * metadata occupies) fits with room to spare: journal, checksum and
 * replica regions come out of the same devices.
 */
static uint64_t dev_bytes(const struct bcfg *c)
{
	uint64_t per_dev = opt.size / cfg_k(c) + 2 * CHUNK * DG_PAGE_SIZE;

	per_dev += per_dev / 16 + (24ull << 20);
	return (per_dev + (1ull << 20) - 1) & ~((1ull << 20) - 1);
}

/*
 * Allocate a contiguous run of size bytes through the allocator, chunk
 * aligned so that a 1 MiB update is one device's chunk, and commit the
 * bitmap change.
 */
static void alloc_region(struct bcfg *c)
{
	uint64_t want = opt.size / DG_PAGE_SIZE, start, got, next = 0;
	struct dg_txn *txn = dg_txn_new(c->vol);
	int ret;

	if (!txn)
		die("out of memory");
	while (want) {
		/* Until the region starts, stop at chunk ends. */
		uint64_t ask = c->start ? CHUNK : CHUNK - next % CHUNK;

		ret = dg_alloc(txn, next, ask, &start, &got);
		if (ret)
			die("%s: cannot allocate the region: %s", c->name,
			    strerror(-ret));
		if (!c->start && start % CHUNK) {
			/* The metadata's partial chunks: skip to the next. */
			next = start + got;
			continue;
		}
		if (!c->start)
			c->start = start;
		else if (start != next)
			die("%s: allocation not contiguous at vpn %" PRIu64,
			    c->name, start);
		got = got < want ? got : want;
		want -= got;
		next = start + got;
	}
	if (c->start % CHUNK)
		die("%s: region at vpn %" PRIu64 " is not chunk aligned",
		    c->name, c->start);
	ret = dg_txn_commit(txn);
	if (ret)
		die("%s: cannot commit the allocation: %s", c->name,
		    strerror(-ret));
	dg_txn_free(txn);
}

/* Write the whole region once, 1 MiB per dg_apply(), random contents. */
static void populate(struct bcfg *c, uint64_t *seed)
{
	uint8_t *buf = xmalloc_aligned(CHUNK * DG_PAGE_SIZE);
	struct dg_range r[CHUNK];
	uint64_t pages = opt.size / DG_PAGE_SIZE;

	for (uint64_t p = 0; p < pages; p += CHUNK) {
		fill_random(seed, buf, CHUNK * DG_PAGE_SIZE);
		for (unsigned i = 0; i < CHUNK; i++)
			r[i] = (struct dg_range){ c->start + p + i, 0,
						  DG_PAGE_SIZE,
						  buf + (size_t)i * DG_PAGE_SIZE };
		int ret = dg_apply(c->vol, r, CHUNK);

		if (ret)
			die("%s: populate at vpn %" PRIu64 ": %s", c->name,
			    c->start + p, strerror(-ret));
	}
	free(buf);
}

static void setup_cfg(struct bcfg *c, uint64_t *seed)
{
	struct dg_format_opts fo = {
		.parity = c->parity,
		.no_redundancy = c->none,
		.size = dev_bytes(c),
		.force = true,
		.label = "engine_bench",
	};
	struct dg_vol_info info;
	char err[512];
	int ret;

	for (unsigned i = 0; i < c->ndev; i++) {
		if (asprintf(&c->paths[i], "%s/dgengbench-%d-%s-%u.img",
			     opt.dir, (int)getpid(), c->name, i) < 0)
			die("out of memory");
		unlink(c->paths[i]);
	}
	ret = dg_format((const char *const *)c->paths, c->ndev, &fo, &info);
	if (ret)
		die("%s: cannot format: %s", c->name, strerror(-ret));
	ret = dg_vol_open((const char *const *)c->paths, c->ndev, 0, &c->vol,
			  err, sizeof(err));
	if (ret)
		die("%s: cannot open: %s", c->name, err);
	/* Configured as the daemon runs it. */
	if (dg_vol_cache_csum_pages(c->vol, (size_t)64 << 20))
		die("%s: cannot cache checksum pages", c->name);
	if (dg_apply_max_bytes(c->vol) < CHUNK * DG_PAGE_SIZE)
		die("%s: journal too small for a 1 MiB update", c->name);
	alloc_region(c);
	populate(c, seed);
}

/* ---- measurements ---------------------------------------------------- */

/* Read the whole region, verified, as often as fits in secs; GB/s. */
static double run_verify(struct bcfg *c, uint8_t *buf, double secs)
{
	uint64_t pages = opt.size / DG_PAGE_SIZE, passes = 0;
	double t0 = now(), t;
	int ret;

	do {
		ret = dg_read(c->vol, c->start, pages, buf);
		if (ret)
			die("%s: dg_read: %s", c->name, strerror(-ret));
		passes++;
		t = now() - t0;
	} while (t < secs);
	return (double)passes * (double)opt.size / t / 1e9;
}

/*
 * Updates of one size at random places in the region for secs; ops/s.
 * 64 B lands at any byte offset that keeps it within one page (so one
 * or two cache lines of parity); 4 KiB and 1 MiB are aligned to their
 * size. Payloads slide through a random pool so that consecutive
 * updates change the data.
 */
static double run_update(struct bcfg *c, enum test_id t, const uint8_t *pool,
			 size_t pool_len, uint64_t *seed, double secs)
{
	uint32_t bytes = tests[t].bytes;
	uint64_t pages = opt.size / DG_PAGE_SIZE, ops = 0;
	unsigned n = bytes > DG_PAGE_SIZE ? bytes / DG_PAGE_SIZE : 1;
	struct dg_range r[CHUNK];
	double t0 = now(), el;
	int ret;

	do {
		uint64_t x = rnd(seed);
		const uint8_t *src = pool + (x >> 40) % (pool_len - bytes);
		uint64_t vpn;
		uint32_t off = 0;

		if (t == T_UPD64) {
			vpn = c->start + x % pages;
			off = (uint32_t)((x >> 24) %
					 (DG_PAGE_SIZE - bytes + 1));
		} else {
			vpn = c->start + x % (pages / n) * n;
		}
		for (unsigned i = 0; i < n; i++)
			r[i] = (struct dg_range){
				vpn + i, off, bytes < DG_PAGE_SIZE ? bytes :
								     DG_PAGE_SIZE,
				src + (size_t)i * DG_PAGE_SIZE
			};
		ret = dg_apply(c->vol, r, n);
		if (ret)
			die("%s: dg_apply: %s", c->name, strerror(-ret));
		ops++;
		el = now() - t0;
	} while (el < secs);
	return (double)ops / el;
}

static double measure(struct bcfg *c, enum test_id t, uint8_t *rbuf,
		      const uint8_t *pool, size_t pool_len, uint64_t *seed,
		      double secs)
{
	if (t == T_VERIFY)
		return run_verify(c, rbuf, secs);
	return run_update(c, t, pool, pool_len, seed, secs);
}

/* ---- statistics and output ------------------------------------------- */

struct stat3 {
	double med, min, max;
};

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct stat3 stats(const double *v, unsigned n)
{
	double s[MAX_REPS];

	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), dbl_cmp);
	return (struct stat3){ n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2,
			       s[0], s[n - 1] };
}

static const struct bcfg *baseline(void)
{
	for (unsigned c = 0; c < ncfg; c++)
		if (cfgs[c].none)
			return &cfgs[c];
	return NULL;
}

/* Per-rep ratio to the baseline measured in the same rep. */
static bool ratio_stats(const struct bcfg *c, enum test_id t,
			struct stat3 *st)
{
	const struct bcfg *b = baseline();
	double r[MAX_REPS];

	if (!b)
		return false;
	for (unsigned i = 0; i < opt.reps; i++)
		r[i] = c->rate[t][i] / b->rate[t][i];
	*st = stats(r, opt.reps);
	return true;
}

static void print_cfg_cell(const struct bcfg *c)
{
	if (c->none)
		printf("| %s | %u | none", c->name, c->ndev);
	else
		printf("| %s | %u | parity %u", c->name, c->ndev, c->parity);
}

static void print_markdown(void)
{
	struct stat3 s, r;

	if (opt.run[T_VERIFY]) {
		printf("\n### verify: dg_read of %" PRIu64 " MiB, GB/s "
		       "(1 GB = 1e9 B)\n\n", opt.size >> 20);
		printf("| config | devs | redundancy | GB/s median | min | "
		       "max | vs none median [min, max] |\n");
		printf("|---|---|---|---|---|---|---|\n");
		for (unsigned c = 0; c < ncfg; c++) {
			s = stats(cfgs[c].rate[T_VERIFY], opt.reps);
			print_cfg_cell(&cfgs[c]);
			printf(" | %.2f | %.2f | %.2f |", s.med, s.min, s.max);
			if (ratio_stats(&cfgs[c], T_VERIFY, &r))
				printf(" %.2f [%.2f, %.2f] |\n", r.med, r.min,
				       r.max);
			else
				printf(" - |\n");
		}
	}
	if (!opt.run[T_UPD64] && !opt.run[T_UPD4K] && !opt.run[T_UPD1M])
		return;
	printf("\n### update: dg_apply at random offsets, ops/s and payload "
	       "MB/s (1 MB = 1e6 B)\n\n");
	printf("| size | config | devs | redundancy | ops/s median | min | max "
	       "| MB/s median | vs none median [min, max] |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	for (int t = T_UPD64; t < T_NR; t++) {
		if (!opt.run[t])
			continue;
		for (unsigned c = 0; c < ncfg; c++) {
			s = stats(cfgs[c].rate[t], opt.reps);
			printf("| %s ", t == T_UPD64 ? "64 B" :
					t == T_UPD4K ? "4 KiB" : "1 MiB");
			print_cfg_cell(&cfgs[c]);
			printf(" | %.0f | %.0f | %.0f | %.1f |", s.med, s.min,
			       s.max, s.med * tests[t].bytes / 1e6);
			if (ratio_stats(&cfgs[c], t, &r))
				printf(" %.3f [%.3f, %.3f] |\n", r.med, r.min,
				       r.max);
			else
				printf(" - |\n");
		}
	}
}

static struct json_object *json_stat(struct stat3 s)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "median", json_object_new_double(s.med));
	json_object_object_add(o, "min", json_object_new_double(s.min));
	json_object_object_add(o, "max", json_object_new_double(s.max));
	return o;
}

/* The report, built with json-c (the CPU name is text from the
 * system, and may hold anything). */
static void write_json(const char *cpu)
{
	FILE *f = strcmp(opt.json, "-") ? fopen(opt.json, "w") : stdout;
	struct json_object *root = json_object_new_object();
	struct json_object *results = json_object_new_array();
	struct stat3 r;

	if (!f)
		die("cannot open '%s': %s", opt.json, strerror(errno));
	json_add_str(root, "tool", "engine_bench");
	json_add_bytes(root, "cpu", cpu);
	json_add_u64(root, "size_bytes", opt.size);
	json_add_u64(root, "reps", opt.reps);
	json_object_object_add(root, "seconds",
			       json_object_new_double(opt.seconds));
	json_add_u64(root, "seed", opt.seed);
	for (int t = 0; t < T_NR; t++) {
		if (!opt.run[t])
			continue;
		for (unsigned c = 0; c < ncfg; c++) {
			const struct bcfg *b = &cfgs[c];
			struct json_object *o = json_object_new_object();
			struct json_object *smp = json_object_new_array();

			json_add_str(o, "test", tests[t].name);
			json_add_bytes(o, "config", b->name);
			json_add_u64(o, "ndev", b->ndev);
			json_add_u64(o, "parity", b->parity);
			json_add_str(o, "redundancy", b->none ? "none" : "full");
			json_add_str(o, "unit",
				     t == T_VERIFY ? "GB/s" : "ops/s");
			if (t != T_VERIFY)
				json_add_u64(o, "bytes_per_op",
					     tests[t].bytes);
			for (unsigned i = 0; i < opt.reps; i++)
				json_object_array_add(
					smp, json_object_new_double(
						     b->rate[t][i]));
			json_object_object_add(o, "samples", smp);
			json_object_object_add(
				o, "rate",
				json_stat(stats(b->rate[t], opt.reps)));
			if (ratio_stats(b, t, &r))
				json_object_object_add(o, "ratio_to_none",
						       json_stat(r));
			json_object_array_add(results, o);
		}
	}
	json_object_object_add(root, "results", results);
	if (json_print(root, f, 1))
		die("cannot write '%s'", opt.json);
	if (f != stdout)
		fclose(f);
}

static void cpu_model(char *out, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(out, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !p)
			continue;
		p += 2;
		p[strcspn(p, "\n")] = 0;
		snprintf(out, len, "%s", p);
		break;
	}
	fclose(f);
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "reps", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 't' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "configs", required_argument, NULL, 'c' },
		{ "tests", required_argument, NULL, 'T' },
		{ "dir", required_argument, NULL, 'd' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "seed", required_argument, NULL, 'S' },
		{ "json", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int ch;

	for (int t = 0; t < T_NR; t++)
		opt.run[t] = true;
	while ((ch = getopt_long(argc, argv, "s:r:t:w:c:T:d:C:S:j:h",
				 longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			if (parse_size(optarg, &opt.size) || !opt.size ||
			    opt.size % (CHUNK * DG_PAGE_SIZE))
				die("bad size '%s' (a multiple of 1M)", optarg);
			break;
		case 'r':
			opt.reps = (unsigned)strtoul(optarg, &end, 10);
			if (*end || opt.reps < 1 || opt.reps > MAX_REPS)
				die("bad reps '%s' (1..%u)", optarg, MAX_REPS);
			break;
		case 't':
		case 'w':
			*(ch == 't' ? &opt.seconds : &opt.warmup) =
				strtod(optarg, &end);
			if (*end || !(opt.seconds > 0) || !(opt.warmup >= 0))
				die("bad seconds '%s'", optarg);
			break;
		case 'c':
			ncfg = 0;
			parse_list(optarg, true);
			break;
		case 'T':
			parse_list(optarg, false);
			break;
		case 'd':
			opt.dir = optarg;
			break;
		case 'C':
			opt.cpu = (int)strtol(optarg, &end, 10);
			if (*end || opt.cpu < 0)
				die("bad cpu '%s'", optarg);
			break;
		case 'S':
			opt.seed = strtoull(optarg, &end, 0);
			if (*end || !opt.seed)
				die("bad seed '%s' (nonzero)", optarg);
			break;
		case 'j':
			opt.json = optarg;
			break;
		case 'h':
			fputs(usage_line, stdout);
			exit(0);
		default:
			fputs(usage_line, stderr);
			exit(1);
		}
	}
	if (optind != argc) {
		fputs(usage_line, stderr);
		exit(1);
	}
	if (!ncfg)
		parse_list("none,p1,p2,p2x5", true);
}

int main(int argc, char **argv)
{
	size_t pool_len = 2 * CHUNK * DG_PAGE_SIZE;
	uint64_t seed, useed;
	uint8_t *rbuf = NULL, *pool;
	char cpu[128];
	struct utsname un;
	double t0;

	tool_init("engine_bench", usage_line, 1);
	tool_cleanup(remove_images);
	parse_args(argc, argv);
	dg_log_set_level(DG_LOG_WARNING);
	if (opt.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(opt.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			die("cannot pin to cpu %d: %s", opt.cpu,
			    strerror(errno));
	}
	cpu_model(cpu, sizeof(cpu));
	uname(&un);
	seed = opt.seed;
	pool = xmalloc_aligned(pool_len);
	fill_random(&seed, pool, pool_len);
	if (opt.run[T_VERIFY]) {
		rbuf = xmalloc_aligned(opt.size);
		memset(rbuf, 0, opt.size); /* fault it in before timing */
	}

	printf("engine_bench: %s, %ld online cpus, %s %s, pinned %s\n", cpu,
	       sysconf(_SC_NPROCESSORS_ONLN), un.sysname, un.release,
	       opt.cpu >= 0 ? "yes" : "no");
	printf("build: %s, asserts %s; region %" PRIu64 " MiB in %s, "
	       "%u reps x %.2f s, warm-up %.2f s\n",
#ifdef __OPTIMIZE__
	       "optimized",
#else
	       "not optimized",
#endif
#ifdef NDEBUG
	       "off",
#else
	       "on",
#endif
	       opt.size >> 20, opt.dir, opt.reps, opt.seconds, opt.warmup);
	fflush(stdout);

	t0 = now();
	for (unsigned c = 0; c < ncfg; c++) {
		setup_cfg(&cfgs[c], &seed);
		fprintf(stderr, "set up %s: %u x %" PRIu64 " MiB images, "
			"%.1f s\n", cfgs[c].name, cfgs[c].ndev,
			dev_bytes(&cfgs[c]) >> 20, now() - t0);
	}

	useed = opt.seed * 0x9e3779b97f4a7c15ull | 1;
	for (int t = 0; t < T_NR; t++)
		for (unsigned c = 0; c < ncfg && opt.run[t] && opt.warmup > 0;
		     c++)
			measure(&cfgs[c], (enum test_id)t, rbuf, pool, pool_len,
				&useed, opt.warmup);
	for (unsigned i = 0; i < opt.reps; i++) {
		for (int t = 0; t < T_NR; t++) {
			if (!opt.run[t])
				continue;
			for (unsigned k = 0; k < ncfg; k++) {
				struct bcfg *c = &cfgs[(i + k) % ncfg];

				c->rate[t][i] = measure(c, (enum test_id)t,
							rbuf, pool, pool_len,
							&useed, opt.seconds);
			}
		}
		fprintf(stderr, "rep %u/%u done, %.1f s\n", i + 1, opt.reps,
			now() - t0);
	}

	print_markdown();
	if (opt.json)
		write_json(cpu);

	for (unsigned c = 0; c < ncfg; c++) {
		dg_vol_close(cfgs[c].vol);
		cfgs[c].vol = NULL;
	}
	remove_images();
	for (unsigned c = 0; c < ncfg; c++)
		for (unsigned i = 0; i < cfgs[c].ndev; i++)
			free(cfgs[c].paths[i]);
	free(rbuf);
	free(pool);
	return 0;
}
