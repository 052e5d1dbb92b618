// SPDX-License-Identifier: MIT
/* inspect.c -- read-only views of the media for dumpfs; the label */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "csum.h"
#include "bmap.h"
#include "super.h"

/*
 * Superblock fields in on-media order. The dump tool prints whatever is
 * listed here, so a new field of struct dg_dsuper needs one line and
 * nothing else; dg_inspect_super() asserts that the list covers every
 * byte before reserved[].
 */
struct sfield {
	const char *name;
	enum dg_field_kind kind;
	size_t off, size;
};
#define SF(kind, field)                                                   \
	{ #field, DG_FIELD_##kind, offsetof(struct dg_dsuper, field),      \
	  sizeof(((struct dg_dsuper *)0)->field) }
static const struct sfield super_fields[] = {
	SF(HEX, magic),	       SF(UINT, version),     SF(UINT, size),
	SF(HEX, compat),       SF(HEX, ro_compat),    SF(HEX, incompat),
	SF(UUID, vol_uuid),    SF(UUID, dev_uuid),    SF(UINT, dev_index),
	SF(UINT, dev_count),   SF(UINT, parity),      SF(UINT, chunk_pages),
	SF(UINT, dev_pages),   SF(UINT, generation),  SF(UINT, state),
	SF(UINT, jrnl_devs),   SF(UINT, jrnl_start),  SF(UINT, jrnl_pages),
	SF(UINT, csum_start),  SF(UINT, csum_pages),  SF(UINT, csum_copies),
	SF(UINT, cmap_pages),  SF(UINT, data_start),  SF(UINT, rows),
	SF(TIME, ctime),       SF(TIME, mtime),	      SF(STR, label),
	SF(UINT, cmap_start),  SF(UINT, ditto_start), SF(UINT, ditto_pages),
	SF(UINT, ditto_copies),
};

static const struct {
	unsigned which;		/* 0 compat, 1 ro_compat, 2 incompat */
	uint64_t bit;
	const char *name;
} features[] = {
	{ 2, DG_FEAT_INCOMPAT_NOREDUNDANCY, "noredundancy" },
	{ 2, DG_FEAT_INCOMPAT_SEALED_JOURNAL, "sealed_journal" },
	{ 2, DG_FEAT_INCOMPAT_META_ZONE, "meta_zone" },
	{ 2, DG_FEAT_INCOMPAT_XATTR_RUN, "xattr_run" },
	{ 2, DG_FEAT_INCOMPAT_STAGED_SYNC, "staged_sync" },
	{ 2, DG_FEAT_INCOMPAT_JOURNAL_COPIES, "journal_copies" },
	{ 2, DG_FEAT_INCOMPAT_NEW_ROWS, "new_rows" },
	{ 2, DG_FEAT_INCOMPAT_XATTR_64K, "xattr_64k" },
	{ 2, DG_FEAT_INCOMPAT_BIG_ITABLE, "big_itable" },
	{ 2, DG_FEAT_INCOMPAT_JOURNAL_V2, "journal_v2" },
	{ 2, DG_FEAT_INCOMPAT_RESERVED_ROWS, "reserved_rows" },
	{ 2, DG_FEAT_INCOMPAT_LEAN_JOURNAL, "lean_journal" },
	{ 2, DG_FEAT_INCOMPAT_COPIES_TOGETHER, "copies_together" },
	{ 2, DG_FEAT_INCOMPAT_REMAP, "remap" },
	{ 2, DG_FEAT_INCOMPAT_LINE_SEAL, "line_seal" },
};

const char *dg_feature_name(unsigned which, uint64_t bit)
{
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++)
		if (features[i].which == which && features[i].bit == bit)
			return features[i].name;
	return NULL;
}

/* "noredundancy,sealed_journal", unknown bits as 0x...; "" for none. */
static void feature_names(unsigned which, uint64_t mask, char *out,
			  size_t len)
{
	size_t o = 0;

	out[0] = 0;
	for (unsigned b = 0; b < 64 && o < len; b++) {
		const char *n;

		if (!(mask & (1ull << b)))
			continue;
		n = dg_feature_name(which, 1ull << b);
		if (n)
			o += (size_t)snprintf(out + o, len - o, "%s%s",
					      o ? "," : "", n);
		else
			o += (size_t)snprintf(out + o, len - o, "%s%#llx",
					      o ? "," : "",
					      (unsigned long long)(1ull << b));
	}
}

static const char *state_name(uint64_t state)
{
	return state == DG_STATE_CLEAN	   ? "clean"
	       : state == DG_STATE_DIRTY   ? "dirty"
	       : state == DG_STATE_OPENING ? "opening"
					   : "unknown";
}

static uint64_t load_uint(const uint8_t *p, size_t size)
{
	uint64_t v = 0;

	memcpy(&v, p, size < sizeof(v) ? size : sizeof(v));
	return v; /* little endian: the low bytes come first */
}

static void report_super(const uint8_t *raw, dg_field_fn fn, void *arg)
{
	size_t expect = 0;

	for (size_t i = 0; i < sizeof(super_fields) / sizeof(super_fields[0]);
	     i++) {
		const struct sfield *sf = &super_fields[i];
		struct dg_field f = { .name = sf->name, .kind = sf->kind };

		/* The table must tile the superblock without gaps; only
		 * the assert reads expect, so NDEBUG builds discard it. */
		assert(sf->off == expect);
		expect = sf->off + sf->size;
		(void)expect;
		switch (sf->kind) {
		case DG_FIELD_UUID:
			dg_uuid_format(raw + sf->off, f.str);
			break;
		case DG_FIELD_STR:
			/* As stored, up to the first NUL. */
			memcpy(f.str, raw + sf->off,
			       sf->size < sizeof(f.str) ? sf->size
							: sizeof(f.str) - 1);
			break;
		default:
			f.u = load_uint(raw + sf->off, sf->size);
			break;
		}
		if (!strcmp(sf->name, "compat"))
			feature_names(0, f.u, f.str, sizeof(f.str));
		else if (!strcmp(sf->name, "ro_compat"))
			feature_names(1, f.u, f.str, sizeof(f.str));
		else if (!strcmp(sf->name, "incompat"))
			feature_names(2, f.u, f.str, sizeof(f.str));
		else if (!strcmp(sf->name, "state"))
			snprintf(f.str, sizeof(f.str), "%s", state_name(f.u));
		fn(arg, &f);
	}
	assert(expect == offsetof(struct dg_dsuper, reserved));
	{
		struct dg_field f = { .name = "csum", .kind = DG_FIELD_HEX };

		f.u = load_uint(raw + offsetof(struct dg_dsuper, csum), 8);
		fn(arg, &f);
	}
}

int dg_inspect_super(struct dg_vol *vol, unsigned dev, unsigned copy,
		     uint64_t *page, dg_field_fn fn, void *arg)
{
	const struct dg_dev *d;
	struct dg_dsuper s;
	uint64_t pg;
	int ret;

	if (dev >= vol->ndev || copy > 1)
		return -EINVAL;
	d = &vol->devs[dev];
	pg = copy ? vol->sb.dev_pages - 1 : 0;
	*page = pg;
	if (!d->present)
		return -ENXIO;
	if ((pg + 1) * DG_PAGE_SIZE > d->size)
		return -EFBIG;
	if (load_uint(dg_dev_ptr(d, pg * DG_PAGE_SIZE), 8) != DG_SUPER_MAGIC)
		return -ENODEV;
	/* Every field, also of a copy that fails validation: a dump shows
	 * what is there. */
	report_super(dg_dev_ptr(d, pg * DG_PAGE_SIZE), fn, arg);
	ret = dg_dsuper_decode(dg_dev_ptr(d, pg * DG_PAGE_SIZE), &s);
	return ret == -ENODEV ? -EUCLEAN : ret;
}

/* One field of a computed view. */
static void put(dg_field_fn fn, void *arg, const char *name,
		enum dg_field_kind kind, uint64_t u, const char *str)
{
	struct dg_field f = { .name = name, .kind = kind, .u = u };

	if (str)
		snprintf(f.str, sizeof(f.str), "%s", str);
	fn(arg, &f);
}

void dg_inspect_geometry(struct dg_vol *vol, dg_field_fn fn, void *arg)
{
	char u[37];

	dg_uuid_format(vol->sb.vol_uuid, u);
	put(fn, arg, "uuid", DG_FIELD_UUID, 0, u);
	put(fn, arg, "devices", DG_FIELD_UINT, vol->ndev, NULL);
	put(fn, arg, "present", DG_FIELD_UINT,
	    vol->ndev - (unsigned)__builtin_popcount(vol->missing_mask), NULL);
	put(fn, arg, "missing_mask", DG_FIELD_HEX, vol->missing_mask, NULL);
	put(fn, arg, "parity", DG_FIELD_UINT, vol->parity, NULL);
	put(fn, arg, "data_per_row", DG_FIELD_UINT, vol->k, NULL);
	put(fn, arg, "redundancy", DG_FIELD_UINT, vol->redundancy,
	    vol->redundancy ? "full" : "none");
	put(fn, arg, "page_size", DG_FIELD_UINT, DG_PAGE_SIZE, NULL);
	put(fn, arg, "chunk_pages", DG_FIELD_UINT, vol->sb.chunk_pages, NULL);
	put(fn, arg, "dev_pages", DG_FIELD_UINT, vol->sb.dev_pages, NULL);
	put(fn, arg, "rows", DG_FIELD_UINT, vol->sb.rows, NULL);
	put(fn, arg, "vpns", DG_FIELD_UINT, vol->vpns, NULL);
	put(fn, arg, "meta_vpns", DG_FIELD_UINT, vol->meta_vpns, NULL);
	put(fn, arg, "bitmap_vpn", DG_FIELD_UINT, vol->bitmap_vpn, NULL);
	put(fn, arg, "bitmap_pages", DG_FIELD_UINT, vol->bitmap_pages, NULL);
	/* The metadata zone (format.h): its pages and their copies. */
	put(fn, arg, "zone_vpns", DG_FIELD_UINT, vol->zone_vpns,
	    vol->sb.incompat & DG_FEAT_INCOMPAT_META_ZONE
		    ? "metadata zone"
		    : "no zone: ditto copies of root and bitmap only");
	put(fn, arg, "zone_rows", DG_FIELD_UINT,
	    vol->sb.incompat & DG_FEAT_INCOMPAT_META_ZONE
		    ? vol->zone_vpns / vol->k : 0, NULL);
	put(fn, arg, "ditto_copies", DG_FIELD_UINT,
	    vol->redundancy ? vol->sb.ditto_copies : 0,
	    "copies of each zone page beside parity");
	put(fn, arg, "generation", DG_FIELD_UINT, vol->sb.generation, NULL);
	put(fn, arg, "degraded", DG_FIELD_UINT, vol->degraded,
	    vol->degraded ? "yes" : "no");
}

int dg_inspect_free(struct dg_vol *vol, dg_field_fn fn, void *arg)
{
	struct dg_bm_stats st;
	uint64_t free_vpns, zone_free, extents, largest;

	if (!vol->bm)
		return -ENODATA; /* opened without the volume root */

	/* The in-core bitmap alloc.c loaded (bmap.c): pages held as a count
	 * are counted whole; vpns below meta_vpns are metadata and always
	 * in use. */
	pthread_mutex_lock(&vol->alloc_lock);
	dg_bm_free_stats(vol, &st);
	pthread_mutex_unlock(&vol->alloc_lock);
	free_vpns = st.free;
	zone_free = st.zone_free;
	extents = st.extents;
	largest = st.largest;
	put(fn, arg, "vpns", DG_FIELD_UINT, vol->vpns, NULL);
	put(fn, arg, "free_vpns", DG_FIELD_UINT, free_vpns, NULL);
	put(fn, arg, "used_vpns", DG_FIELD_UINT, vol->vpns - free_vpns, NULL);
	put(fn, arg, "free_bytes", DG_FIELD_UINT, free_vpns * DG_PAGE_SIZE,
	    NULL);
	put(fn, arg, "free_extents", DG_FIELD_UINT, extents, NULL);
	put(fn, arg, "largest_free_extent", DG_FIELD_UINT, largest, NULL);
	put(fn, arg, "zone_free_vpns", DG_FIELD_UINT, zone_free,
	    "free pages in the metadata zone");
	put(fn, arg, "zone_used_vpns", DG_FIELD_UINT,
	    vol->zone_vpns - zone_free, NULL);
	return 0;
}

void dg_inspect_journal(struct dg_vol *vol, dg_field_fn fn, void *arg)
{
	struct dg_journal *j = &vol->jrnl;

	pthread_mutex_lock(&j->lock);
	put(fn, arg, "copies", DG_FIELD_UINT, j->ncopies, NULL);
	for (unsigned c = 0; c < j->ncopies && c < DG_MAX_JCOPIES; c++) {
		/* Field names outlive the call: static strings. */
		static const char *const dev_name[DG_MAX_JCOPIES] = {
			"copy0_device", "copy1_device", "copy2_device",
			"copy3_device"
		};
		static const char *const start_name[DG_MAX_JCOPIES] = {
			"copy0_start", "copy1_start", "copy2_start",
			"copy3_start"
		};

		put(fn, arg, dev_name[c], DG_FIELD_UINT, j->dev[c],
		    vol->devs[j->dev[c]].present ? "present" : "missing");
		put(fn, arg, start_name[c], DG_FIELD_UINT, j->start[c], NULL);
	}
	put(fn, arg, "log_bytes", DG_FIELD_UINT, j->log_bytes, NULL);
	put(fn, arg, "hseq", DG_FIELD_UINT, j->hseq, NULL);
	put(fn, arg, "tail_off", DG_FIELD_UINT, j->tail_off, NULL);
	put(fn, arg, "tail_seq", DG_FIELD_UINT, j->tail_seq, NULL);
	put(fn, arg, "head_off", DG_FIELD_UINT, j->head_off, NULL);
	put(fn, arg, "head_seq", DG_FIELD_UINT, j->head_seq, NULL);
	put(fn, arg, "live_entries", DG_FIELD_UINT, j->head_seq - j->tail_seq,
	    j->head_seq == j->tail_seq ? "empty" : "pending");
	put(fn, arg, "sealed_ranges", DG_FIELD_UINT, vol->sealed_journal,
	    vol->sealed_journal ? "yes" : "no");
	pthread_mutex_unlock(&j->lock);
}

int dg_inspect_jhead(struct dg_vol *vol, unsigned copy, unsigned slot,
		     dg_field_fn fn, void *arg)
{
	struct dg_journal *j = &vol->jrnl;
	const struct dg_dev *d;
	struct dg_djhead h;
	char u[37];

	if (copy >= j->ncopies || slot > 1)
		return -EINVAL;
	d = &vol->devs[j->dev[copy]];
	if (!d->present)
		return -ENXIO;
	memcpy(&h, dg_dev_ptr(d, (j->start[copy] + slot) * DG_PAGE_SIZE),
	       sizeof(h));
	put(fn, arg, "magic", DG_FIELD_HEX, h.magic, NULL);
	dg_uuid_format(h.vol_uuid, u);
	put(fn, arg, "vol_uuid", DG_FIELD_UUID, 0, u);
	put(fn, arg, "hseq", DG_FIELD_UINT, h.hseq, NULL);
	put(fn, arg, "tail_off", DG_FIELD_UINT, h.tail_off, NULL);
	put(fn, arg, "tail_seq", DG_FIELD_UINT, h.tail_seq, NULL);
	put(fn, arg, "csum", DG_FIELD_HEX, h.csum, NULL);
	if (h.magic != DG_JHEAD_MAGIC)
		return -ENODEV;
	/* As journal.c's read_head() accepts a slot. */
	if (memcmp(h.vol_uuid, vol->sb.vol_uuid, 16) ||
	    h.csum != XXH3_64bits_withSeed(&h, offsetof(struct dg_djhead, csum),
					   vol->seed) ||
	    h.tail_off >= j->log_bytes || h.tail_off % DG_JALIGN)
		return -EUCLEAN;
	return 0;
}

/*
 * The live (committed, not yet retired) entries, tail to head. Read
 * through the first copy that holds each one, as recovery does; on a
 * volume open for writing the entries may change underneath, so only
 * read-only opens (dumpfs) use this.
 */
int dg_inspect_jentries(struct dg_vol *vol, dg_jentry_fn fn, void *arg)
{
	struct dg_journal *j = &vol->jrnl;
	uint64_t off = j->tail_off, seq = j->tail_seq;

	while (seq != j->head_seq) {
		const struct dg_djentry *e = NULL;
		struct dg_jentry_info in = { 0 };

		for (unsigned c = 0; c < j->ncopies && !e; c++) {
			const struct dg_dev *d = &vol->devs[j->dev[c]];
			const struct dg_djentry *x;

			if (!d->present || off + sizeof(*x) > j->log_bytes)
				continue;
			x = (const void *)dg_dev_ptr(d, j->start[c] *
							DG_PAGE_SIZE +
							j->log_off + off);
			if (x->magic == DG_JENTRY_MAGIC && x->seq == seq &&
			    x->len >= sizeof(*x) &&
			    x->len <= j->log_bytes - off)
				e = x;
		}
		if (!e)
			return -EUCLEAN; /* the open found it; it changed */
		in.seq = seq;
		in.off = off;
		in.len = e->len;
		in.nranges = e->nranges;
		in.flags = e->flags;
		in.wrap = e->flags & DG_JENTRY_WRAP;
		in.lean = e->flags & DG_JENTRY_LEAN;
		if (!in.wrap &&
		    (uint64_t)e->nranges * sizeof(struct dg_djrange) <=
			    e->len - sizeof(*e)) {
			const struct dg_djrange *r = (const void *)(e + 1);
			uint64_t reserved = 0;

			for (uint32_t i = 0; i < e->nranges; i++) {
				if (!(r[i].flags & DG_JRANGE_NO_BYTES))
					in.bytes += r[i].len;
				in.sealed += !!(r[i].flags & DG_JRANGE_SEALED);
				in.in_place +=
					!!(r[i].flags & DG_JRANGE_IN_PLACE);
				reserved += !!(r[i].flags & DG_JRANGE_RESERVED);
				/* a run of rows: each data page of them, if
				 * it names rows of this volume (a forged
				 * count would wrap the total) */
				if ((r[i].flags & DG_JRANGE_ROWS) &&
				    !dg_jrange_check(vol, &r[i]))
					reserved += r[i].page_csum * vol->k;
			}
			in.reserved = reserved > UINT32_MAX
					      ? UINT32_MAX
					      : (uint32_t)reserved;
		}
		fn(arg, &in);
		off = in.wrap ? 0 : off + e->len;
		if (off >= j->log_bytes)
			off = 0;
		seq++;
	}
	return 0;
}

/*
 * Every checksum page the init map says was written, each of its copies
 * examined (read only, no fault events): how many copies are current,
 * stale (an older generation: lost writes), damaged or on a missing
 * device, and the newest generation. O(checksum pages).
 */
int dg_inspect_csum(struct dg_vol *vol, dg_field_fn fn, void *arg)
{
	uint64_t written = 0, lost = 0, newest = 0;
	uint64_t count[4] = { 0 }; /* by enum dg_copy_state */
	char gen[48];
	void *img;

	if (!vol->redundancy)
		return -EOPNOTSUPP;
	img = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!img)
		return -ENOMEM;
	for (uint64_t i = 0; i < vol->sb.csum_pages; i++) {
		if (!dg_cmap_test(vol, i))
			continue;
		for (unsigned owner = 0; owner < vol->ndev; owner++) {
			uint64_t key = dg_cpage_key(owner, i);
			pthread_mutex_t *l =
				&vol->csum_locks[dg_cpage_lock_idx(key)];
			struct dg_cpage_view v;

			pthread_mutex_lock(l);
			dg_cpage_examine(vol, owner, i, img, &v, DG_CPX_QUIET);
			pthread_mutex_unlock(l);
			written++;
			if (v.result < 0)
				lost++;
			else if (v.gen > newest)
				newest = v.gen;
			for (unsigned c = 0; c < v.ncopies &&
					     c < DG_MAX_CSUM_COPIES; c++)
				if (v.state[c] < 4)
					count[v.state[c]]++;
		}
	}
	free(img);
	put(fn, arg, "copies", DG_FIELD_UINT, vol->sb.csum_copies, NULL);
	put(fn, arg, "pages_per_copy", DG_FIELD_UINT, vol->sb.csum_pages,
	    NULL);
	put(fn, arg, "written", DG_FIELD_UINT, written, NULL);
	put(fn, arg, "unreadable", DG_FIELD_UINT, lost, NULL);
	put(fn, arg, "copies_current", DG_FIELD_UINT, count[DG_COPY_CURRENT],
	    NULL);
	put(fn, arg, "copies_stale", DG_FIELD_UINT, count[DG_COPY_STALE],
	    NULL);
	put(fn, arg, "copies_bad", DG_FIELD_UINT, count[DG_COPY_BAD], NULL);
	put(fn, arg, "copies_absent", DG_FIELD_UINT, count[DG_COPY_ABSENT],
	    NULL);
	/* format.h: generation << DG_GEN_SHIFT | writes since that open. */
	snprintf(gen, sizeof(gen), "open %" PRIu64 ", write %" PRIu64,
		 dg_gen_of(newest), dg_gen_count(newest));
	put(fn, arg, "newest_gen", DG_FIELD_UINT, newest, newest ? gen : NULL);
	return 0;
}

int dg_vol_set_label(struct dg_vol *vol, const char *label)
{
	if (strlen(label) >= sizeof(vol->sb.label))
		return -EINVAL;
	if (vol->read_only)
		return -EROFS;
	memset(vol->sb.label, 0, sizeof(vol->sb.label));
	memcpy(vol->sb.label, label, strlen(label));
	/* Both copies of every device's superblock, one at a time, as an
	 * open does: a crash leaves at most one copy torn. */
	return dg_write_supers(vol);
}
