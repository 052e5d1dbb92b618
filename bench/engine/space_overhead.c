// SPDX-License-Identifier: MIT
/* space_overhead.c -- raw vs usable space of really formatted volumes */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsys.h"
#include "json.h"
#include "util.h"

/*
 * Nothing here repeats the layout arithmetic: every volume is formatted
 * with dg_format() on sparse images, opened read-only, and the regions
 * are taken from dg_vol_get_info(). Whatever the fields do not account
 * for (the tail left when rows are rounded down to whole chunks) shows
 * up as the remainder, so the columns always add up to the raw size.
 */

#define MAX_ITEMS 8

static char *paths[DG_MAX_DEVS];
static unsigned npaths;

static void remove_images(void)
{
	for (unsigned i = 0; i < npaths; i++)
		if (paths[i])
			unlink(paths[i]);
}

/* One formatted volume, in bytes. */
struct row {
	unsigned ndev, parity;
	bool none;
	uint64_t dev_bytes;
	uint64_t raw, usable, free_after, csum, parity_b, jrnl, supers, rest;
	uint64_t allocated;	/* image blocks actually used after mkfs */
};

static uint64_t allocated_bytes(unsigned ndev)
{
	uint64_t sum = 0;
	struct stat st;

	for (unsigned i = 0; i < ndev; i++) {
		if (stat(paths[i], &st))
			die("cannot stat '%s': %s", paths[i], strerror(errno));
		sum += (uint64_t)st.st_blocks * 512;
	}
	return sum;
}

static void measure(const char *dir, unsigned ndev, unsigned parity,
		    bool none, uint64_t size, struct row *r)
{
	struct dg_format_opts fo = { .parity = parity, .no_redundancy = none,
				     .size = size, .force = true };
	struct dg_vol_info in;
	struct dg_vol *vol;
	uint64_t pg = DG_PAGE_SIZE, accounted;
	char err[512];
	int ret;

	for (unsigned i = 0; i < ndev; i++) {
		free(paths[i]);
		if (asprintf(&paths[i], "%s/dgspace-%d-%u.img", dir,
			     (int)getpid(), i) < 0)
			die("out of memory");
		unlink(paths[i]);
	}
	npaths = ndev;
	ret = dg_format((const char *const *)paths, ndev, &fo, NULL);
	if (ret)
		die("cannot format %u x %" PRIu64 " bytes parity %u: %s", ndev,
		    size, parity, strerror(-ret));
	ret = dg_vol_open((const char *const *)paths, ndev, DG_OPEN_RDONLY,
			  &vol, err, sizeof(err));
	if (ret)
		die("cannot open: %s", err);
	dg_vol_get_info(vol, &in);
	dg_vol_close(vol);

	memset(r, 0, sizeof(*r));
	r->ndev = in.ndev;
	r->parity = in.parity;
	r->none = in.no_redundancy;
	r->dev_bytes = in.dev_pages * pg;
	r->raw = (uint64_t)in.ndev * in.dev_pages * pg;
	r->usable = in.vpns * pg;
	r->free_after = in.free_vpns * pg;
	/* Checksum region plus its replica, on every device. */
	r->csum = (uint64_t)in.ndev * 2 * in.csum_pages * pg;
	/* parity pages of each row */
	r->parity_b = (uint64_t)in.parity * in.rows * pg;
	/* The journal area is reserved on every device so rows line up. */
	r->jrnl = (uint64_t)in.ndev * in.jrnl_pages * pg;
	r->supers = (uint64_t)in.ndev * 2 * pg;
	accounted = r->usable + r->csum + r->parity_b + r->jrnl + r->supers;
	if (accounted > r->raw || in.vpns != (in.ndev - in.parity) * in.rows)
		die("%u devices parity %u: regions do not add up (%" PRIu64
		    " of %" PRIu64 " bytes)", in.ndev, in.parity, accounted,
		    r->raw);
	r->rest = r->raw - accounted;
	r->allocated = allocated_bytes(ndev);
	remove_images();
}

static double pct(uint64_t part, uint64_t whole)
{
	return 100.0 * (double)part / (double)whole;
}

static void print_row(const struct row *r)
{
	char b[5][32];

	printf("| %u | %s | %s | %s | %s | %.2f | %.3f | %.2f | %.3f | "
	       "%.4f | %s |\n", r->ndev,
	       r->none ? "none" : r->parity == 1 ? "parity 1" : "parity 2",
	       human_bytes(r->dev_bytes, b[0], sizeof(b[0])),
	       human_bytes(r->raw, b[1], sizeof(b[1])),
	       human_bytes(r->usable, b[2], sizeof(b[2])),
	       pct(r->usable, r->raw), pct(r->csum, r->raw),
	       pct(r->parity_b, r->raw), pct(r->jrnl, r->raw),
	       pct(r->supers + r->rest, r->raw),
	       human_bytes(r->allocated, b[3], sizeof(b[3])));
}

static struct json_object *json_row(const struct row *r)
{
	struct json_object *o = json_object_new_object();

	json_add_u64(o, "ndev", r->ndev);
	json_add_u64(o, "parity", r->parity);
	json_add_str(o, "redundancy", r->none ? "none" : "full");
	json_add_u64(o, "dev_bytes", r->dev_bytes);
	json_add_u64(o, "raw", r->raw);
	json_add_u64(o, "usable", r->usable);
	json_add_u64(o, "free_after_mkfs", r->free_after);
	json_add_u64(o, "csum_replica", r->csum);
	json_add_u64(o, "parity_bytes", r->parity_b);
	json_add_u64(o, "journal", r->jrnl);
	json_add_u64(o, "supers", r->supers);
	json_add_u64(o, "tail", r->rest);
	json_add_u64(o, "allocated_after_mkfs", r->allocated);
	return o;
}

static unsigned parse_u64_list(const char *s, uint64_t *out, bool sizes)
{
	char *dup = strdup(s), *save = NULL, *tok;
	unsigned n = 0;

	if (!dup)
		die("out of memory");
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;

		if (n == MAX_ITEMS)
			die("at most %u items in '%s'", MAX_ITEMS, s);
		if (sizes) {
			if (parse_size(tok, &out[n]) || !out[n])
				die("bad size '%s'", tok);
		} else {
			out[n] = strtoull(tok, &end, 10);
			if (*end || out[n] < 1 || out[n] > DG_MAX_DEVS)
				die("bad device count '%s'", tok);
		}
		n++;
	}
	free(dup);
	return n;
}

static const char usage_line[] =
	"usage: space_overhead [--devs 4,8] [--sizes 1G,64G] [--dir DIR] "
	"[--json FILE|-]\n";

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "devs", required_argument, NULL, 'n' },
		{ "sizes", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "json", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* redundancy none, then parity 1 and 2 */
	static const int modes[] = { -1, 1, 2 };
	uint64_t devs[MAX_ITEMS], sizes[MAX_ITEMS];
	unsigned ndevs, nsizes;
	const char *dir = "/dev/shm", *json = NULL;
	struct row rows[MAX_ITEMS * MAX_ITEMS * 3];
	unsigned nrows = 0;
	FILE *f;
	int c;

	tool_init("space_overhead", usage_line, 1);
	tool_cleanup(remove_images);
	ndevs = parse_u64_list("4,8", devs, false);
	nsizes = parse_u64_list("1G,64G", sizes, true);
	while ((c = getopt_long(argc, argv, "n:s:d:j:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'n':
			ndevs = parse_u64_list(optarg, devs, false);
			break;
		case 's':
			nsizes = parse_u64_list(optarg, sizes, true);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'j':
			json = optarg;
			break;
		case 'h':
			fputs(usage_line, stdout);
			return 0;
		default:
			fputs(usage_line, stderr);
			return 1;
		}
	}
	if (optind != argc) {
		fputs(usage_line, stderr);
		return 1;
	}
	dg_log_set_level(DG_LOG_WARNING);

	printf("| devs | redundancy | device | raw | usable | usable %% | "
	       "csum+replica %% | parity %% | journal %% | supers+tail %% | "
	       "allocated after mkfs |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (unsigned s = 0; s < nsizes; s++)
		for (unsigned d = 0; d < ndevs; d++)
			for (unsigned m = 0; m < 3; m++) {
				struct row *r = &rows[nrows];

				if (modes[m] > 0 &&
				    (uint64_t)modes[m] >= devs[d])
					continue;
				measure(dir, (unsigned)devs[d],
					modes[m] > 0 ? (unsigned)modes[m] : 0,
					modes[m] < 0, sizes[s], r);
				print_row(r);
				nrows++;
			}
	if (json) {
		f = strcmp(json, "-") ? fopen(json, "w") : stdout;
		if (!f)
			die("cannot open '%s': %s", json, strerror(errno));
		struct json_object *root = json_object_new_object();
		struct json_object *vols = json_object_new_array();

		json_add_str(root, "tool", "space_overhead");
		for (unsigned i = 0; i < nrows; i++)
			json_object_array_add(vols, json_row(&rows[i]));
		json_object_object_add(root, "volumes", vols);
		if (json_print(root, f, 1))
			die("cannot write '%s'", json);
		if (f != stdout)
			fclose(f);
	}
	for (unsigned i = 0; i < DG_MAX_DEVS; i++)
		free(paths[i]);
	return 0;
}
