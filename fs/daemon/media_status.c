// SPDX-License-Identifier: MIT
/* media_status.c -- status's account of what writes cost the media */
#include <inttypes.h>
#include <stdio.h>

#include "daemon.h"
#include "json.h"

static void add_counts(struct json_object *x, const struct dg_media_counts *c)
{
	json_add_u64(x, "bytes_stored", c->bytes_stored);
	json_add_u64(x, "streamed_bytes", c->streamed_bytes);
	json_add_u64(x, "lines_flushed", c->lines_flushed);
	json_add_u64(x, "fences", c->fences);
}

/*
 * Raw counts since the mount, never ratios: a caller takes two and
 * divides their differences (docs/design.md, "What a write costs the
 * media"). The media counts cover every update, metadata and repairs
 * too; writes and bytes_written only the write requests.
 */
struct json_object *dg_media_status_json(struct dg_daemon *dd)
{
	struct dg_media_counts tot, dev[DG_MAX_DEVS];
	struct dg_vol_info in;
	struct json_object *m = json_object_new_object();
	struct json_object *a = json_object_new_array();
	uint64_t writes, written;

	dg_vol_get_info(dd->vol, &in);
	dg_vol_media_counts(dd->vol, &tot, dev);
	dg_fs_write_counts(dd->fs, &writes, &written);
	add_counts(m, &tot);
	json_add_u64(m, "writes", writes);
	json_add_u64(m, "bytes_written", written);
	for (unsigned d = 0; d < in.ndev; d++) {
		struct json_object *x = json_object_new_object();

		json_add_u64(x, "index", d);
		add_counts(x, &dev[d]);
		json_object_array_add(a, x);
	}
	json_object_object_add(m, "devices", a);
	return m;
}

/* One line: what was stored per byte written and the fences per write,
 * the two numbers that persistent memory charges for. */
void dg_media_status_text(struct dg_daemon *dd, struct dg_out *o)
{
	struct dg_media_counts tot;
	uint64_t writes, written;

	dg_vol_media_counts(dd->vol, &tot, NULL);
	dg_fs_write_counts(dd->fs, &writes, &written);
	dg_outf(o, "media since mount: ");
	if (written)
		dg_outf(o, "%.2fx bytes stored per byte written, %.1f fences "
			"a write (%" PRIu64 " writes of %" PRIu64 " MiB); ",
			(double)tot.bytes_stored / (double)written,
			(double)tot.fences / (double)writes, writes,
			written >> 20);
	dg_outf(o, "%" PRIu64 " MiB stored, %" PRIu64 " lines flushed, %"
		PRIu64 " fences\n", tot.bytes_stored >> 20, tot.lines_flushed,
		tot.fences);
}
