// SPDX-License-Identifier: MIT
/* mkfs.c -- mkfs.daxguard: parse options, dg_format(), report */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsys.h"
#include "image_file.h"
#include "probe.h"
#include "util.h"
#include "version.h"

static const char usage_line[] =
	"usage: mkfs.daxguard [--parity N] [--size SIZE] [--chunk SIZE] "
	"[--meta-size SIZE] [--label L] [--redundancy full|none] "
	"[--lean-journal] [--remap] [--force] [-q] DEV...\n";

static const char help_text[] =
	"Format 1 to 16 devices (regular files, block devices or device-DAX)\n"
	"as one daxguard volume.\n"
	"\n"
	"  -p, --parity N          parity devices: 0, 1 or 2 (default 1 with two\n"
	"                          or more devices, else 0)\n"
	"  -s, --size SIZE         create regular files, or extend them, to SIZE\n"
	"  -c, --chunk SIZE        bytes of a file kept together on one device\n"
	"                          (default 1M; a multiple of 4K, at most 4G)\n"
	"  -m, --meta-size SIZE    the metadata zone, whose pages have copies on\n"
	"                          other devices beside parity: SIZE of the\n"
	"                          usable space, rounded up to whole chunks of\n"
	"                          rows (default 3%, at least 2M and one chunk;\n"
	"                          at most half the volume); none: no zone,\n"
	"                          only the root and the allocation bitmap have\n"
	"                          copies (the layout daxguard used before)\n"
	"  -L, --label L           volume label, at most 63 bytes\n"
	"  -r, --redundancy full|none\n"
	"                          none: no checksums and no parity (a baseline\n"
	"                          for benchmarks; excludes --parity)\n"
	"      --lean-journal      an overwrite of one whole page journals its\n"
	"                          bytes on as many devices as there is parity,\n"
	"                          not one more (3.1x the bytes written instead\n"
	"                          of 4.1x under parity 1); a crash during such a\n"
	"                          write together with the loss of a whole\n"
	"                          device then loses data in more cases\n"
	"                          (docs/design.md, \"Lean entries\"); needs\n"
	"                          parity and parity + 2 devices\n"
	"      --remap             send an overwrite of a whole page to a blank\n"
	"                          page and record the move in the file's\n"
	"                          remap page: 2.4x the bytes written instead\n"
	"                          of 4.1x, for some three times the pages\n"
	"                          read and hashed a write (docs/design.md,\n"
	"                          \"Overwrites redirected\"); needs parity 1\n"
	"                          and three devices or more\n"
	"  -f, --force             overwrite an existing daxguard volume, or a\n"
	"                          device or file that holds something else\n"
	"  -q, --quiet             print nothing on success\n"
	"  -h, --help              show this help and exit\n"
	"  -V, --version           show the version and exit\n"
	"\n"
	"SIZE is a number of bytes with an optional suffix K, M, G or T (powers\n"
	"of 1024; KiB, MiB, KB and MB mean the same): 4096, 64M, 1G, 2TiB.\n"
	"Exit status: 0 formatted, 1 failed, 2 bad usage.\n";

/* Engine messages (dg_format's reasons) under this tool's name. */
static void log_func(enum dg_log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void log_func(enum dg_log_level level, const char *fmt, va_list ap)
{
	fputs(level == DG_LOG_ERR ? "mkfs.daxguard: "
	      : level == DG_LOG_WARNING ? "mkfs.daxguard: warning: "
	      : "mkfs.daxguard: note: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* Image files this run created: removed again when it fails. */
static const char *created[DG_MAX_DEVS];
static unsigned ncreated;

static void remove_created(void)
{
	for (unsigned i = 0; i < ncreated; i++)
		unlink(created[i]);
}

/* The same device under two names is given twice as much as under one. */
static int check_twice(const char *const *devs, unsigned n)
{
	struct stat st[DG_MAX_DEVS];
	bool exists[DG_MAX_DEVS];

	for (unsigned i = 0; i < n; i++) {
		exists[i] = stat(devs[i], &st[i]) == 0;
		for (unsigned j = 0; j < i; j++) {
			if (!strcmp(devs[i], devs[j])) {
				fprintf(stderr, "mkfs.daxguard: '%s' is given "
					"twice\n", devs[i]);
				return -1;
			}
			if (exists[i] && exists[j] &&
			    st[i].st_dev == st[j].st_dev &&
			    st[i].st_ino == st[j].st_ino &&
			    st[i].st_rdev == st[j].st_rdev) {
				fprintf(stderr, "mkfs.daxguard: '%s' and '%s' "
					"are the same device, given twice\n",
					devs[j], devs[i]);
				return -1;
			}
		}
	}
	return 0;
}

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * Look at every target before anything is written (mke2fs, mkfs.btrfs,
 * zpool do the same): a daxguard volume or anything libblkid recognises
 * (a file system, a RAID member, LUKS, swap, a partition table) is
 * refused unless --force, and so is a regular file of data nothing
 * claims (a text file, a database: libblkid knows no signature in
 * them, and an image to be is empty, sparse or zeros). Every refusal is
 * reported, not just the first. Paths that do not exist yet are noted,
 * to be removed on failure.
 */
static int check_targets(const char *const *devs, unsigned n, bool force)
{
	int bad = 0;

	for (unsigned i = 0; i < n; i++) {
		struct dg_probe p;
		char err[512], what[256];

		if (dg_dev_probe(devs[i], &p, err, sizeof(err))) {
			fprintf(stderr, "mkfs.daxguard: %s\n", err);
			bad = -1;
			continue;
		}
		if (p.kind == DG_PROBE_ABSENT) {
			created[ncreated++] = devs[i];
			continue;
		}
		if (force || (p.kind != DG_PROBE_DAXGUARD &&
			      p.kind != DG_PROBE_FOREIGN &&
			      !(p.kind == DG_PROBE_DATA && is_file(devs[i]))))
			continue;
		dg_probe_describe(&p, what, sizeof(what));
		if (p.kind == DG_PROBE_DAXGUARD)
			fprintf(stderr, "mkfs.daxguard: '%s' already holds a "
				"daxguard volume (it %s); use --force to "
				"overwrite it\n", devs[i], what);
		else
			fprintf(stderr, "mkfs.daxguard: '%s' %s; use --force "
				"to overwrite it\n", devs[i], what);
		bad = -1;
	}
	return bad;
}

/*
 * Resolve each path once (image_file.h): a symlink planted in a sticky,
 * world-writable directory is refused, whatever fs.protected_symlinks
 * says. The resolved paths are what mkfs works on from here.
 */
static int resolve_paths(const char *const *devs, unsigned n,
			 const char **out)
{
	static char bufs[DG_MAX_DEVS][4096];
	int bad = 0;

	for (unsigned i = 0; i < n; i++) {
		char err[8400];
		int ret = dg_image_resolve(devs[i], bufs[i], sizeof(bufs[i]),
					   err, sizeof(err));

		if (ret == -EPERM)
			fprintf(stderr, "mkfs.daxguard: %s\n", err);
		else if (ret)
			fprintf(stderr, "mkfs.daxguard: cannot resolve '%s': "
				"%s\n", devs[i], strerror(-ret));
		if (ret)
			bad = -1;
		out[i] = bufs[i];
	}
	return bad;
}

/* An image readable by others gives them the whole volume: it becomes
 * 0600, as a new one is created, and mkfs says so. */
static int tighten_modes(const char *const *devs, unsigned n, bool quiet)
{
	for (unsigned i = 0; i < n; i++) {
		mode_t wide = dg_image_wide_mode(devs[i]);
		int ret;

		if (!wide)
			continue;
		ret = dg_image_tighten(devs[i]);
		if (ret) {
			fprintf(stderr, "mkfs.daxguard: cannot make '%s' "
				"private (chmod 0600): %s\n", devs[i],
				strerror(-ret));
			return -1;
		}
		if (!quiet)
			fprintf(stderr, "mkfs.daxguard: '%s' was readable "
				"by others (group/other bits %03o): its mode "
				"is now 0600\n", devs[i], (unsigned)wide);
	}
	return 0;
}

/* A volume just unmounted may still be held by its closing daemon
 * (umount does not wait for it): wait for that, bounded; a mounted one
 * is refused at once. */
static int wait_for_daemon(const char *const *devs, unsigned n)
{
	char mnt[4096];

	for (unsigned i = 0; i < n; i++)
		if (dg_dev_mountpoint(devs[i], mnt, sizeof(mnt))) {
			fprintf(stderr, "mkfs.daxguard: '%s' is in use: its "
				"volume is mounted on '%s'; unmount it first\n",
				devs[i], mnt);
			return -1;
		}
	if (dg_devs_wait_unlocked(devs, n, false, 0) == 0)
		return 0;
	fprintf(stderr, "mkfs.daxguard: waiting for the daemon of an "
		"unmounted volume to release the devices\n");
	/* Still held after that: dg_format() says by whom. */
	dg_devs_wait_unlocked(devs, n, false, 10000);
	return 0;
}

static void print_summary(const char *const *devs, unsigned n,
			  const struct dg_vol_info *in, double secs)
{
	char u[37], b1[32], b2[32];
	uint64_t total = (uint64_t)in->ndev * in->dev_pages * DG_PAGE_SIZE;
	uint64_t usable = in->vpns * DG_PAGE_SIZE;
	double csum_pct = 100.0 * (2.0 * (double)in->csum_pages) /
			  (double)in->dev_pages;
	double par_pct = 100.0 * in->parity / in->ndev;

	dg_uuid_format(in->uuid, u);
	printf("daxguard volume %s%s%s%s\n", u, in->label[0] ? " label '" : "",
	       in->label, in->label[0] ? "'" : "");
	for (unsigned i = 0; i < n; i++)
		printf("  device %u: %s\n", i, devs[i]);
	printf("  devices %u, parity %u%s, chunk %u KiB\n", in->ndev,
	       in->parity, in->no_redundancy ? " (redundancy none)" : "",
	       in->chunk_pages * 4);
	printf("  raw %s, usable %s\n", human_bytes(total, b1, sizeof(b1)),
	       human_bytes(usable, b2, sizeof(b2)));
	if (!in->zone_vpns)
		printf("  no metadata zone: copies of the root and the "
		       "allocation bitmap only\n");
	else
		printf("  metadata zone %s (%.1f%% of usable), %u %s of each "
		       "page\n",
		       human_bytes(in->zone_vpns * DG_PAGE_SIZE, b1,
				   sizeof(b1)),
		       100.0 * (double)in->zone_vpns / (double)in->vpns,
		       in->no_redundancy ? 0 : in->ditto_copies,
		       in->no_redundancy || in->ditto_copies != 1 ? "copies"
								 : "copy");
	if (in->no_redundancy)
		printf("  overhead: no checksums, no parity\n");
	else
		printf("  overhead: checksums %.2f%% (with replica), parity "
		       "%.2f%%, journal %s per device\n", csum_pct, par_pct,
		       human_bytes(in->jrnl_pages * DG_PAGE_SIZE, b1,
				   sizeof(b1)));
	printf("  formatted in %.3f s\n", secs);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "parity", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "meta-size", required_argument, NULL, 'm' },
		{ "label", required_argument, NULL, 'L' },
		{ "redundancy", required_argument, NULL, 'r' },
		{ "lean-journal", no_argument, NULL, 'J' },
		{ "remap", no_argument, NULL, 'R' },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct dg_format_opts o = { 0 };
	struct dg_vol_info info;
	bool parity_set = false, quiet = false;
	struct timespec t0, t1;
	const char *devs[DG_MAX_DEVS];
	unsigned ndev;
	uint64_t v;
	int c, ret;

	tool_init("mkfs.daxguard", usage_line, 2);
	dg_log_set_func(log_func);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:s:c:m:L:r:fqhV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'p':
			if (strlen(optarg) != 1 || optarg[0] < '0' ||
			    optarg[0] > '2')
				usage_error("--parity takes 0, 1 or 2, not '%s'",
					    optarg);
			o.parity = (unsigned)(optarg[0] - '0');
			parity_set = true;
			break;
		case 's':
			if (parse_size(optarg, &o.size) || !o.size)
				usage_error("bad size '%s'", optarg);
			break;
		case 'c':
			if (parse_size(optarg, &v) || v < DG_PAGE_SIZE ||
			    v % DG_PAGE_SIZE || v > (1ull << 32))
				usage_error("bad chunk size '%s' (multiple of "
					    "4K, at most 4G)", optarg);
			o.chunk_pages = (uint32_t)(v / DG_PAGE_SIZE);
			break;
		case 'm':
			if (!strcmp(optarg, "none"))
				o.no_meta_zone = true;
			else if (parse_size(optarg, &o.meta_size) ||
				 !o.meta_size)
				usage_error("bad metadata zone size '%s'",
					    optarg);
			break;
		case 'L':
			o.label = optarg;
			break;
		case 'r':
			if (!strcmp(optarg, "none"))
				o.no_redundancy = true;
			else if (strcmp(optarg, "full"))
				usage_error("--redundancy takes full or none, "
					    "not '%s'", optarg);
			break;
		case 'J':
			o.lean_journal = true;
			break;
		case 'R':
			o.remap = true;
			break;
		case 'f':
			o.force = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(usage_line, stdout);
			fputs(help_text, stdout);
			return 0;
		case 'V':
			printf("mkfs.daxguard (daxguard) %s\n", DG_VERSION);
			return 0;
		default:
			usage_bad_option(argv, optind, optopt);
		}
	}
	if (optind == argc)
		usage_error("no devices given");
	if (argc - optind > (int)DG_MAX_DEVS)
		usage_error("at most %u devices", DG_MAX_DEVS);
	if (!parity_set)
		o.parity = (!o.no_redundancy && argc - optind >= 2) ? 1 : 0;
	if (o.no_redundancy && o.parity)
		usage_error("--redundancy none excludes --parity");
	if (o.lean_journal && !o.parity)
		usage_error("--lean-journal needs parity");
	if (o.remap && (o.parity != 1 || argc - optind < 3))
		usage_error("--remap needs parity 1 and three devices or more");
	if (o.lean_journal && argc - optind < (int)o.parity + 2)
		usage_error("--lean-journal needs parity + 2 devices (%u with "
			    "parity %u; %d given)", o.parity + 2, o.parity,
			    argc - optind);
	/* Checked here, not only by dg_format(), so that the message names
	 * the tool and the count given and the exit says "bad usage". */
	if (o.parity >= (unsigned)(argc - optind))
		usage_error("parity %u needs at least %u devices (%d given)",
			    o.parity, o.parity + 1, argc - optind);

	ndev = (unsigned)(argc - optind);
	if (check_twice((const char *const *)argv + optind, ndev) ||
	    resolve_paths((const char *const *)argv + optind, ndev, devs) ||
	    check_targets(devs, ndev, o.force))
		return 1;
	tool_cleanup(remove_created);
	if (wait_for_daemon(devs, ndev) || tighten_modes(devs, ndev, quiet))
		return 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = dg_format(devs, ndev, &o, &info);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ret) {
		fprintf(stderr, "mkfs.daxguard: cannot format: %s\n",
			strerror(-ret));
		remove_created();
		return 1;
	}
	if (!quiet)
		print_summary((const char *const *)argv + optind,
			      (unsigned)(argc - optind), &info,
			      (double)(t1.tv_sec - t0.tv_sec) +
				      (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
