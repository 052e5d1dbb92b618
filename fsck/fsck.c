// SPDX-License-Identifier: MIT
/* fsck.c -- fsck.daxguard: options, device paths, the table of passes,
 * exit codes */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devlist.h"
#include "fsck.h"
#include "image_file.h"
#include "probe.h"
#include "util.h"
#include "version.h"

static const char usage_line[] =
	"usage: fsck.daxguard [-n | -y | -p] [-f] [-v] [--json] "
	"[--replace N=PATH]... [--threads N] DEV...\n";

static const char help_text[] =
	"Check a daxguard volume (superblocks, journal, every written page\n"
	"against its checksum, parity, the filesystem) and repair what can be\n"
	"proven. The volume must not be mounted.\n"
	"\n"
	"  -n              check only, change nothing\n"
	"  -y              repair everything that can be repaired\n"
	"  -p, -a          repair what is safe without asking (for boot)\n"
	"                  none of them: on a terminal, ask before each\n"
	"                  repair (yes, no, or all); else check only\n"
	"  -f              check even if the volume looks clean (always done)\n"
	"  -v              verbose: statistics, and the engine's messages\n"
	"  -j, --json      print the report as JSON\n"
	"  --replace N=PATH\n"
	"                  with -y: rebuild device N onto PATH, whatever it\n"
	"                  holds (PATH need not be among the DEVs)\n"
	"  --threads N     verify the pages with N threads (1-16; default:\n"
	"                  one a CPU fsck may run on, at most 16); the\n"
	"                  report is the same whatever N\n"
	"  -h, --help      show this help and exit\n"
	"  -V, --version   show the version and exit\n"
	"\n"
	"DEV... are the volume's devices in any order, as separate arguments\n"
	"or as one list separated by ',' or ':' (the form fstab and fsck(8)\n"
	"hand over).\n"
	"Exit status (fsck(8)): 0 clean, 1 errors corrected, 4 errors left\n"
	"uncorrected or data lost, 8 operational error, 16 usage error.\n";

static bool verbose_log;

/* --threads N: 1 to DG_PAR_MAX_THREADS, in digits only (strtoul()
 * alone takes " 4", "+4" and "-4"). */
static unsigned parse_threads(const char *arg)
{
	unsigned long n = 0;
	const char *p;

	for (p = arg; *p >= '0' && *p <= '9' && n <= DG_PAR_MAX_THREADS; p++)
		n = n * 10 + (unsigned long)(*p - '0');
	if (p == arg || *p || n < 1 || n > DG_PAR_MAX_THREADS)
		usage_error("--threads wants a number from 1 to %u, not '%s'",
			    DG_PAR_MAX_THREADS, arg);
	return (unsigned)n;
}

static void log_func(enum dg_log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void log_func(enum dg_log_level level, const char *fmt, va_list ap)
{
	/* Findings are reported by the passes; engine chatter only with -v. */
	(void)level;
	if (!verbose_log)
		return;
	fprintf(stderr, "fsck.daxguard: engine: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/*
 * Each path resolved once (image_file.h): a symlink planted in a sticky,
 * world-writable directory is refused, whatever fs.protected_symlinks
 * says, and fsck works on the resolved paths from here on (a rebuild
 * writes a whole device). NULL, having said why, when one is refused.
 */
static const char *resolve_path(const char *path)
{
	char buf[4096], err[8400];
	char *out;
	int ret;

	ret = dg_image_resolve(path, buf, sizeof(buf), err, sizeof(err));
	if (ret == -EPERM)
		die_code(FSCK_ERROR, "%s", err);
	if (ret)
		die_code(FSCK_ERROR, "cannot resolve '%s': %s", path,
			 strerror(-ret));
	out = !strcmp(buf, path) ? (char *)path : strdup(buf);
	if (!out)
		die_code(FSCK_ERROR, "out of memory");
	return out;
}

/* Whoever may read an image may read every file of the volume: said
 * of each image with a daxguard superblock (a foreign file named for a
 * rebuild is not one yet, and is refused or overwritten anyway). */
static void warn_wide_modes(const struct fsck_ctx *c)
{
	for (unsigned i = 0; i < c->n; i++) {
		mode_t wide = dg_image_wide_mode(c->paths[i]);
		struct dg_probe p;
		char err[512];

		if (wide && dg_dev_probe(c->paths[i], &p, err, sizeof(err)) == 0 &&
		    p.kind == DG_PROBE_DAXGUARD)
			fprintf(stderr, "fsck.daxguard: warning: '%s' is "
				"readable by others (group/other bits %03o): "
				"whoever reads it reads the whole volume; "
				"chmod 600 it\n", c->paths[i], (unsigned)wide);
	}
}

bool replace_slot(const struct fsck_ctx *c, const char *path, unsigned *slot)
{
	for (unsigned d = 0; d < DG_MAX_DEVS; d++)
		if (c->replace[d] && !strcmp(c->replace[d], path)) {
			*slot = d;
			return true;
		}
	return false;
}

/*
 * The passes in their order, as e2fsck_run() walks its pass table. Each
 * has one job and returns PASS_NEXT to go on, PASS_RESTART to go back
 * to the first pass marked restart (the page pass, on a fresh open), or
 * the exit code the run stops with.
 */
static const struct fsck_pass {
	const char *name;
	int (*run)(struct fsck_ctx *c);
	bool restart;		/* PASS_RESTART goes back here */
} passes[] = {
	{ "open", pass_open, false },		/* read-only, any state */
	{ "rebuild", pass_rebuild, false },	/* missing devices */
	{ "superblocks", pass_super, false },	/* pass 0 */
	{ "journal", pass_journal, false },	/* pass 1; repair at all? */
	{ "reopen", pass_reopen, false },	/* their repair: reopen */
	{ "pages", pass_redundancy, true },	/* pass 2 */
	{ "filesystem", pass_fs, false },	/* pass 3 */
	{ "restart", pass_restart, false },	/* 2 and 3 again? */
	{ "names", pass_names, false },		/* files of findings */
};

static int run(struct fsck_ctx *c)
{
	const size_t n = sizeof(passes) / sizeof(passes[0]);

	for (size_t i = 0; i < n; i++) {
		int ret = passes[i].run(c);

		if (ret == PASS_RESTART) {
			while (!passes[i].restart)
				i--;
			i--;	/* the loop's i++ runs it again */
		} else if (ret != PASS_NEXT) {
			return ret;
		}
	}
	return 0;
}

/* --replace N=PATH */
static void add_replace(struct fsck_ctx *c, const char *arg)
{
	char *end;
	unsigned long d;

	errno = 0;
	d = strtoul(arg, &end, 10);
	if (end == arg || *end != '=' || !end[1] || errno ||
	    d >= DG_MAX_DEVS)
		usage_error("--replace takes N=PATH with N a device number "
			    "from 0 to %u, not '%s'", DG_MAX_DEVS - 1, arg);
	if (c->replace[d])
		usage_error("--replace %lu is given twice", d);
	c->replace[d] = end + 1;
}

/*
 * With every device of the volume listed and a --replace path on top
 * ("--replace 2=new d0 d1 d2 d3": one more path than the volume has
 * devices), the listed device that carries the volume's superblock as
 * device 2 is the old device of that slot: it is set aside, so that the
 * line means what "--replace 2=new d0 d1 d3" does. A list that does not
 * overflow keeps every device it names (replacing a device that is
 * present and current stays refused, check_rebuild_targets()). Also
 * checks each --replace slot against the device count the superblocks
 * give. Only reads.
 */
static void drop_replaced_olds(struct fsck_ctx *c, const char **devs,
			       bool *dropped, unsigned n)
{
	struct dg_probe p;
	uint8_t uuid[16];
	unsigned count = 0, nlisted = 0, nrepl = 0;
	bool old_of[2 * DG_MAX_DEVS] = { false };
	char err[512];

	for (unsigned i = 0; i < n; i++) {
		unsigned slot;

		if (!devs[i][0] || replace_slot(c, devs[i], &slot) ||
		    dg_dev_probe(devs[i], &p, err, sizeof(err)) ||
		    p.kind != DG_PROBE_DAXGUARD || !p.sb_valid)
			continue;
		if (!count) {
			memcpy(uuid, p.uuid, sizeof(uuid));
			count = p.dev_count;
		} else if (memcmp(uuid, p.uuid, sizeof(uuid))) {
			continue;	/* another volume: pass_open() says so */
		}
		if (p.dev_index < DG_MAX_DEVS && c->replace[p.dev_index])
			old_of[i] = true;
	}
	for (unsigned d = 0; count && d < DG_MAX_DEVS; d++)
		if (c->replace[d] && d >= count)
			usage_error("--replace: device %u is not a device of "
				    "this volume (0-%u)", d, count - 1);
	for (unsigned i = 0; i < n; i++) {
		unsigned slot;

		if (!replace_slot(c, devs[i], &slot))
			nlisted++;
	}
	for (unsigned d = 0; d < DG_MAX_DEVS; d++)
		nrepl += c->replace[d] != NULL;
	if (!count || nlisted + nrepl <= count)
		return;
	for (unsigned i = 0; i < n; i++)
		dropped[i] = old_of[i];
}

/*
 * The paths fsck works on: the devices given, less the old device of
 * each replaced slot, plus each --replace path not among them, with
 * every --replace path at the position of its slot (rebuild.c gives a
 * blank or foreign spare the slot of its position; "" pads the list up
 * to it, a missing device).
 */
static void set_paths(struct fsck_ctx *c, const char **devs, unsigned n)
{
	static const char *out[DG_MAX_DEVS];
	const char *rest[2 * DG_MAX_DEVS];
	bool dropped[2 * DG_MAX_DEVS] = { false };
	unsigned nrest = 0, total = 0, used = 0;

	drop_replaced_olds(c, devs, dropped, n);
	for (unsigned i = 0; i < n; i++) {
		unsigned slot;

		if (!dropped[i] && !replace_slot(c, devs[i], &slot))
			rest[nrest++] = devs[i];
	}
	total = nrest;
	for (unsigned d = 0; d < DG_MAX_DEVS; d++) {
		if (!c->replace[d])
			continue;
		total++;
		if (d + 1 > total)
			total = d + 1;
	}
	if (total > DG_MAX_DEVS)
		usage_error("at most %u devices", DG_MAX_DEVS);
	for (unsigned i = 0; i < total; i++) {
		if (c->replace[i])
			out[i] = c->replace[i];
		else if (used < nrest)
			out[i] = rest[used++];
		else
			out[i] = "";
	}
	c->paths = out;
	c->n = total;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "replace", required_argument, NULL, 'R' },
		{ "threads", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct fsck_ctx c = { .meta_outside = -1, .secs_rebuild = -1 };
	int opt, modes = 0, code;

	c.mode = MODE_N;
	tool_init("fsck.daxguard", usage_line, FSCK_USAGE);
	if (tool_argv_has(argc, argv, "--json", 'j'))
		tool_json_errors();
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "nypfvajhV", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'n':
			c.mode = MODE_N;
			modes++;
			break;
		case 'y':
			c.mode = MODE_Y;
			modes++;
			break;
		case 'p':
		case 'a':
			c.mode = MODE_P;
			modes++;
			break;
		case 'f':
			c.force = true;
			break;
		case 'v':
			c.verbose = true;
			break;
		case 'j':
			c.json = true;
			break;
		case 'R':
			add_replace(&c, optarg);
			break;
		case 'T':
			c.threads = parse_threads(optarg);
			break;
		case 'h':
			fputs(usage_line, stdout);
			fputs(help_text, stdout);
			return FSCK_OK;
		case 'V':
			printf("fsck.daxguard (daxguard) %s\n", DG_VERSION);
			return FSCK_OK;
		default:
			usage_bad_option(argv, optind, optopt);
		}
	}
	if (modes > 1)
		usage_error("only one of -n, -y and -p may be given");
	/* None of them: ask about each repair, as e2fsck does, when
	 * someone is there to answer; else check only. */
	if (!modes && !c.json && isatty(STDIN_FILENO))
		c.mode = MODE_ASK;
	if (c.mode != MODE_Y)
		for (unsigned d = 0; d < DG_MAX_DEVS; d++)
			if (c.replace[d])
				usage_error("--replace rebuilds a device: it "
					    "needs -y");
	{
		/* One argument may be a list (fsck(8) hands fstab's over). */
		unsigned n;
		const char **devs = devlist_args(argv + optind, argc - optind,
						 &n);

		for (unsigned i = 0; i < n; i++)
			if (devs[i][0])
				devs[i] = resolve_path(devs[i]);
		for (unsigned d = 0; d < DG_MAX_DEVS; d++)
			if (c.replace[d])
				c.replace[d] = resolve_path(c.replace[d]);
		set_paths(&c, devs, n);
	}
	warn_wide_modes(&c);
	c.tty = isatty(STDERR_FILENO);
	verbose_log = c.verbose;
	dg_log_set_func(log_func);

	code = run(&c);
	if (code & FSCK_ERROR) {
		if (c.json)
			report_print(&c, code);
		dg_vol_close(c.vol);
		free(c.f);
		free(c.answers);
		return code;
	}
	code |= report_exit_code(&c);
	report_print(&c, code);
	/* The last checkpoint and superblocks: a failure here means the
	 * repairs reported above may not be durable. */
	if (dg_vol_close(c.vol)) {
		say_error(&c, "closing the volume failed: the repairs above "
			  "may not be durable\n");
		code |= FSCK_ERROR;
	}
	free(c.f);
	free(c.answers);
	return code;
}
