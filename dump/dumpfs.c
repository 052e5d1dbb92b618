// SPDX-License-Identifier: MIT
/* dumpfs.c -- dumpfs.daxguard: show a volume's superblocks, geometry,
 * journal and free space offline (as dumpe2fs), and set its label */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "devlist.h"
#include "fscheck.h"
#include "json.h"
#include "util.h"
#include "version.h"

static const char usage_line[] =
	"usage: dumpfs.daxguard [--json] DEV...\n"
	"       dumpfs.daxguard --set-label LABEL DEV...\n";

static const char help_text[] =
	"Show what is on a daxguard volume's devices, without changing them:\n"
	"every device's superblocks (primary and backup, every field),\n"
	"the geometry, the checksum pages' copies and generations, the journal\n"
	"(header slots and live entries), the free space and the feature\n"
	"flags. Works on a mounted volume too (then the journal may move while\n"
	"it is read).\n"
	"\n"
	"  -j, --json              print it all as one JSON object\n"
	"  -L, --set-label LABEL   set the volume label (at most 63 bytes) on\n"
	"                          every superblock; the volume must be unmounted\n"
	"  -h, --help              show this help and exit\n"
	"  -V, --version           show the version and exit\n"
	"\n"
	"DEV... in any order, as separate arguments or one list separated by\n"
	"',' or ':'. Exit status: 0 done, 1 the volume cannot be opened, or a\n"
	"superblock copy, checksum page copy or journal header is damaged or\n"
	"stale (shown), 2 bad usage.\n";

/* Fields of one view, kept so that two copies can be compared. */
struct fields {
	struct dg_field *f;
	size_t n, cap;
};

static void collect(void *arg, const struct dg_field *f)
{
	struct fields *fs = arg;

	if (fs->n == fs->cap) {
		fs->cap = fs->cap ? 2 * fs->cap : 32;
		fs->f = realloc(fs->f, fs->cap * sizeof(*fs->f));
		if (!fs->f)
			die("out of memory");
	}
	fs->f[fs->n++] = *f;
}

/* The field called name; the inspectors always report the ones asked
 * for here. */
static const struct dg_field *field(const struct fields *fs, const char *name)
{
	static const struct dg_field none = { .name = "" };

	for (size_t i = 0; i < fs->n; i++)
		if (!strcmp(fs->f[i].name, name))
			return &fs->f[i];
	return &none;
}

static bool same_fields(const struct fields *a, const struct fields *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->f[i].name, b->f[i].name) ||
		    a->f[i].u != b->f[i].u || strcmp(a->f[i].str, b->f[i].str))
			return false;
	return true;
}

static void print_field(const struct dg_field *f, const char *indent)
{
	char when[64];
	time_t t;

	printf("%s%-22s ", indent, f->name);
	switch (f->kind) {
	case DG_FIELD_UINT:
		printf("%" PRIu64, f->u);
		break;
	case DG_FIELD_HEX:
		printf("%#" PRIx64, f->u);
		break;
	case DG_FIELD_TIME:
		t = (time_t)f->u;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC",
			 gmtime(&t));
		printf("%" PRIu64 " (%s)", f->u, when);
		break;
	case DG_FIELD_UUID:
		printf("%s", f->str);
		break;
	case DG_FIELD_STR:
		printf("'%s'", f->str);
		break;
	}
	if ((f->kind == DG_FIELD_UINT || f->kind == DG_FIELD_HEX) && f->str[0])
		printf(" (%s)", f->str);
	putchar('\n');
}

static void print_fields(const struct fields *fs, const char *indent)
{
	for (size_t i = 0; i < fs->n; i++)
		print_field(&fs->f[i], indent);
}

/* A field as JSON: numbers as numbers, hex values (magics, checksums,
 * masks: 64-bit) as "0x..." strings, names of values as name_text. */
static void json_field(struct json_object *o, const struct dg_field *f)
{
	char buf[32], key[96];

	switch (f->kind) {
	case DG_FIELD_UINT:
	case DG_FIELD_TIME:
		json_add_u64(o, f->name, f->u);
		break;
	case DG_FIELD_HEX:
		snprintf(buf, sizeof(buf), "%#" PRIx64, f->u);
		json_add_str(o, f->name, buf);
		break;
	case DG_FIELD_UUID:
	case DG_FIELD_STR:
		json_add_bytes(o, f->name, f->str);
		return;
	}
	if (f->str[0]) {
		snprintf(key, sizeof(key), "%s_text", f->name);
		json_add_str(o, key, f->str);
	}
}

static struct json_object *json_fields(const struct fields *fs)
{
	struct json_object *o = json_object_new_object();

	for (size_t i = 0; i < fs->n; i++)
		json_field(o, &fs->f[i]);
	return o;
}

static const char *status_name(int ret)
{
	switch (ret) {
	case 0:
		return "valid";
	case -EUCLEAN:
		return "damaged";
	case -EOPNOTSUPP:
		return "unsupported";
	case -ENODEV:
		return "absent";
	case -ENXIO:
		return "missing";
	case -EFBIG:
		return "truncated";
	default:
		return "unreadable";
	}
}

struct dump {
	struct dg_vol *vol;
	bool json, mounted;
	int bad;		/* a copy or header is damaged */
	struct json_object *root;
	struct json_object *entries; /* the journal's, while they are read */
};

static void dump_volume(struct dump *d)
{
	struct fields g = { 0 }, fr = { 0 };
	struct dg_vol_info in;
	struct dg_itable_info it = { 0 };
	uint64_t outside = 0;
	int ret, outside_ret = -1, it_ret = -1;

	dg_vol_get_info(d->vol, &in);
	dg_inspect_geometry(d->vol, collect, &g);
	ret = dg_inspect_free(d->vol, collect, &fr);
	/* Where a full zone put metadata: a walk of the structures. */
	if (!ret)
		outside_ret = dg_check_meta_outside(d->vol, &outside);
	if (!ret)
		it_ret = dg_itable_inspect(d->vol, &it);
	if (d->json) {
		struct json_object *ito = NULL;

		if (!it_ret) {
			ito = json_object_new_object();
			json_object_object_add(ito, "chunks",
					       json_object_new_uint64(it.chunks));
			json_object_object_add(ito, "in_root",
					       json_object_new_uint64(it.direct));
			json_object_object_add(ito, "map_pages",
					       json_object_new_uint64(it.map_pages));
		}
		json_object_object_add(d->root, "inode_table", ito);
		json_add_bytes(d->root, "label", in.label);
		json_add_bool(d->root, "mounted", d->mounted);
		json_object_object_add(d->root, "geometry", json_fields(&g));
		json_object_object_add(d->root, "free_space",
				       ret ? NULL : json_fields(&fr));
		json_object_object_add(d->root, "meta_outside_zone",
				       ret || outside_ret ? NULL
				       : json_object_new_uint64(outside));
	} else {
		printf("daxguard volume %s, label '%s'%s\n",
		       field(&g, "uuid")->str, in.label,
		       d->mounted ? " (mounted)" : "");
		printf("geometry:\n");
		print_fields(&g, "  ");
		printf("free space:%s\n", ret ? " unknown (volume root "
		       "unreadable)" : "");
		print_fields(&fr, "  ");
		if (!ret && !outside_ret)
			printf("  meta_outside_zone: %" PRIu64 " (metadata "
			       "pages without ditto copies)\n", outside);
		if (!it_ret)
			printf("inode table: %u chunks of %u inodes, %u listed "
			       "in the root record, %u through %u chunk map "
			       "pages\n", it.chunks, DG_INODES_PER_CHUNK,
			       it.direct, it.chunks - it.direct, it.map_pages);
		else if (!ret)
			printf("inode table: unknown (%s)\n",
			       strerror(-it_ret));
	}
	free(g.f);
	free(fr.f);
}

static void dump_csum(struct dump *d)
{
	struct fields cs = { 0 };
	int ret = dg_inspect_csum(d->vol, collect, &cs);

	if (d->json) {
		json_object_object_add(d->root, "checksum_pages",
				       ret ? NULL : json_fields(&cs));
	} else {
		printf("checksum pages:%s\n", ret == -EOPNOTSUPP
		       ? " none (redundancy none)" : ret ? " unreadable" : "");
		print_fields(&cs, "  ");
	}
	if (!ret && (field(&cs, "copies_stale")->u ||
		     field(&cs, "copies_bad")->u ||
		     field(&cs, "unreadable")->u))
		d->bad = 1;
	free(cs.f);
}

static void print_jentry(void *arg, const struct dg_jentry_info *e)
{
	struct dump *d = arg;

	if (d->json) {
		struct json_object *o = json_object_new_object();

		json_add_u64(o, "seq", e->seq);
		json_add_u64(o, "offset", e->off);
		json_add_u64(o, "len", e->len);
		json_add_u64(o, "ranges", e->nranges);
		json_add_u64(o, "bytes", e->bytes);
		json_add_u64(o, "sealed", e->sealed);
		json_add_u64(o, "in_place", e->in_place);
		json_add_u64(o, "reserved", e->reserved);
		json_add_bool(o, "wrap", e->wrap);
		json_add_bool(o, "lean", e->lean);
		json_object_array_add(d->entries, o);
		return;
	}
	printf("    seq %" PRIu64 " offset %" PRIu64 " len %u: %s%u ranges, "
	       "%" PRIu64 " bytes, %u sealed, %u in place, %u reserved\n",
	       e->seq, e->off, e->len,
	       e->wrap ? "wrap, " : e->lean ? "lean, " : "", e->nranges,
	       e->bytes, e->sealed, e->in_place, e->reserved);
}

static void dump_journal(struct dump *d)
{
	struct fields j = { 0 };
	struct json_object *jo = NULL, *heads = NULL;
	unsigned copies;
	int ret;

	dg_inspect_journal(d->vol, collect, &j);
	copies = (unsigned)field(&j, "copies")->u;
	if (d->json) {
		jo = json_fields(&j);
		heads = json_object_new_array();
		d->entries = json_object_new_array();
		json_object_object_add(jo, "headers", heads);
		json_object_object_add(jo, "entries", d->entries);
		json_object_object_add(d->root, "journal", jo);
	} else {
		printf("journal:\n");
		print_fields(&j, "  ");
	}
	for (unsigned c = 0; c < copies; c++) {
		for (unsigned s = 0; s < 2; s++) {
			struct fields h = { 0 };

			ret = dg_inspect_jhead(d->vol, c, s, collect, &h);
			if (ret && ret != -ENXIO && ret != -ENODEV)
				d->bad = 1;
			if (d->json) {
				struct json_object *o;

				o = json_object_new_object();
				json_add_int(o, "copy", (int)c);
				json_add_int(o, "slot", (int)s);
				json_add_str(o, "status", status_name(ret));
				json_object_object_add(o, "fields",
						       json_fields(&h));
				json_object_array_add(heads, o);
			} else {
				printf("  header copy %u slot %u: %s\n", c, s,
				       ret == -ENODEV ? "never written"
						      : status_name(ret));
				if (ret != -ENODEV)
					print_fields(&h, "    ");
			}
			free(h.f);
		}
	}
	if (!d->json)
		printf("  live entries:%s\n",
		       field(&j, "live_entries")->u ? "" : " none");
	free(j.f);
	if (dg_inspect_jentries(d->vol, print_jentry, d)) {
		fprintf(stderr, "dumpfs.daxguard: the journal changed while "
			"it was read\n");
		d->bad = 1;
	}
}

static void dump_devices(struct dump *d)
{
	struct dg_vol_info in;
	struct json_object *devs = json_object_new_array();

	dg_vol_get_info(d->vol, &in);
	for (unsigned dev = 0; dev < in.ndev; dev++) {
		const char *path = dg_vol_dev_path(d->vol, dev);
		struct fields sb[2] = { { 0 }, { 0 } };
		struct json_object *o = NULL, *sbs = NULL;
		uint64_t page[2];
		int ret[2];

		for (unsigned c = 0; c < 2; c++) {
			ret[c] = dg_inspect_super(d->vol, dev, c, &page[c],
						  collect, &sb[c]);
			if (ret[c] && ret[c] != -ENXIO)
				d->bad = 1;
		}
		if (d->json) {
			o = json_object_new_object();
			sbs = json_object_new_array();
			json_add_int(o, "index", (int)dev);
			json_add_bytes(o, "path", path);
			json_add_bool(o, "present", ret[0] != -ENXIO);
		} else {
			printf("device %u: %s\n", dev,
			       path ? path : "(missing)");
		}
		for (unsigned c = 0; c < 2 && ret[0] != -ENXIO; c++) {
			const char *name = c ? "backup" : "primary";

			if (d->json) {
				struct json_object *so;

				so = json_object_new_object();
				json_add_str(so, "copy", name);
				json_add_u64(so, "page", page[c]);
				json_add_str(so, "status", status_name(ret[c]));
				json_object_object_add(so, "fields",
						       json_fields(&sb[c]));
				json_object_array_add(sbs, so);
				continue;
			}
			printf("  superblock %s (page %" PRIu64 "): %s", name,
			       page[c], status_name(ret[c]));
			if (c && sb[1].n && same_fields(&sb[0], &sb[1])) {
				printf(", same as the primary\n");
				continue;
			}
			putchar('\n');
			print_fields(&sb[c], "    ");
		}
		if (d->json) {
			json_object_object_add(o, "superblocks", sbs);
			json_object_array_add(devs, o);
		}
		free(sb[0].f);
		free(sb[1].f);
	}
	if (d->json)
		json_object_object_add(d->root, "devices", devs);
	else
		json_object_put(devs);
}

static void dump_features(struct dump *d)
{
	static const char *const which[] = { "compat", "ro_compat",
					     "incompat" };
	struct json_object *fo = json_object_new_object();
	uint64_t page;
	struct fields sb = { 0 };
	struct dg_vol_info in;

	/* From the first device whose primary copy reads. */
	dg_vol_get_info(d->vol, &in);
	for (unsigned dev = 0; dev < in.ndev && !sb.n; dev++)
		if (dg_inspect_super(d->vol, dev, 0, &page, collect, &sb))
			sb.n = 0;
	for (unsigned w = 0; w < 3; w++) {
		struct json_object *names = json_object_new_array();
		uint64_t mask = 0;

		for (size_t i = 0; i < sb.n; i++)
			if (!strcmp(sb.f[i].name, which[w]))
				mask = sb.f[i].u;
		for (unsigned b = 0; b < 64; b++) {
			const char *n = dg_feature_name(w, 1ull << b);
			char unk[32];

			if (!(mask & (1ull << b)))
				continue;
			snprintf(unk, sizeof(unk), "%#llx",
				 (unsigned long long)(1ull << b));
			json_object_array_add(names, json_object_new_string(
							     n ? n : unk));
		}
		if (!d->json) {
			size_t k = json_object_array_length(names);

			printf("features %-10s%s", which[w], k ? "" : " none");
			for (size_t i = 0; i < k; i++)
				printf(" %s", json_object_get_string(
					json_object_array_get_idx(names, i)));
			putchar('\n');
		}
		json_object_object_add(fo, which[w], names);
	}
	free(sb.f);
	if (d->json)
		json_object_object_add(d->root, "features", fo);
	else
		json_object_put(fo);
}

static int set_label(const char **paths, unsigned n, const char *label)
{
	struct dg_vol *vol;
	char err[512] = "";
	int ret;

	if (strlen(label) >= 64)
		usage_error("the label is longer than 63 bytes");
	ret = dg_vol_open(paths, n, 0, &vol, err, sizeof(err));
	if (ret == -EBUSY)
		die("the volume is mounted or in use: unmount it to set the "
		    "label");
	if (ret)
		die("cannot open the volume: %s", err[0] ? err
			: strerror(-ret));
	ret = dg_vol_set_label(vol, label);
	if (ret)
		die("cannot set the label: %s", strerror(-ret));
	ret = dg_vol_close(vol);
	if (ret)
		die("cannot close the volume: %s", strerror(-ret));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "set-label", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct dump d = { 0 };
	const char *label = NULL, **paths;
	char err[512] = "";
	unsigned n;
	int c, ret;

	tool_init("dumpfs.daxguard", usage_line, 2);
	if (tool_argv_has(argc, argv, "--json", 'j'))
		tool_json_errors();
	opterr = 0;
	while ((c = getopt_long(argc, argv, "jL:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			d.json = true;
			break;
		case 'L':
			label = optarg;
			break;
		case 'h':
			fputs(usage_line, stdout);
			fputs(help_text, stdout);
			return 0;
		case 'V':
			printf("dumpfs.daxguard (daxguard) %s\n", DG_VERSION);
			return 0;
		default:
			usage_bad_option(argv, optind, optopt);
		}
	}
	paths = devlist_args(argv + optind, argc - optind, &n);
	dg_log_set_level(DG_LOG_ERR);
	if (label)
		return set_label(paths, n, label);

	ret = dg_vol_open(paths, n, DG_OPEN_RDONLY | DG_OPEN_DEGRADED, &d.vol,
			  err, sizeof(err));
	if (ret == -EBUSY) {
		d.mounted = true;
		ret = dg_vol_open(paths, n, DG_OPEN_NOLOCK | DG_OPEN_DEGRADED,
				  &d.vol, err, sizeof(err));
	}
	if (ret == -EIO)
		/* The volume root is unreadable: everything but free space. */
		ret = dg_vol_open(paths, n, DG_OPEN_RDONLY | DG_OPEN_DEGRADED |
				  DG_OPEN_FORMAT | (d.mounted ? DG_OPEN_NOLOCK
							      : 0),
				  &d.vol, err, sizeof(err));
	if (ret)
		die("cannot open the volume: %s", err[0] ? err
			: strerror(-ret));
	if (d.json)
		d.root = json_object_new_object();
	dump_volume(&d);
	dump_features(&d);
	dump_csum(&d);
	dump_journal(&d);
	dump_devices(&d);
	if (d.json)
		json_print(d.root, stdout, 1);
	dg_vol_close(d.vol);
	return d.bad ? 1 : 0;
}
