// SPDX-License-Identifier: MIT
/* test_inspect.c -- the inspectors dumpfs prints, and the label */
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "volume_i.h"

#define SIZE (16ull << 20)

struct seen {
	unsigned n;
	const char *name[64];
	struct dg_field f[64];
};

static void see(void *arg, const struct dg_field *f)
{
	struct seen *s = arg;

	if (s->n < 64) {
		s->name[s->n] = f->name;
		s->f[s->n++] = *f;
	}
}

/* The field called name, or one with an empty name (checks fail). */
static const struct dg_field *get(const struct seen *s, const char *name)
{
	static const struct dg_field none = { .name = "", .u = ~0ull };

	for (unsigned i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name))
			return &s->f[i];
	return &none;
}

/* Parity 0 reserves no new rows (they need parity), so it sets no
 * reserved_rows bit, which would only lock out older readers; parity 1
 * and 2 do. No volume gets lean_journal unless asked for. Each volume
 * still takes and gives back a write. */
static void test_reserved_rows_with_parity(void)
{
	for (unsigned p = 0; p < 3; p++) {
		struct tvol tv;
		struct dg_vol *vol;
		struct seen s = { 0 };
		uint64_t page;
		uint8_t buf[DG_PAGE_SIZE], back[DG_PAGE_SIZE];
		struct dg_range r = { 300, 0, sizeof(buf), buf };

		tvol_make(&tv, "insp-par", 3, p, SIZE, false);
		vol = tvol_open(&tv, 0);
		REQUIRE(vol);
		CHECK_EQ(dg_inspect_super(vol, 0, 0, &page, see, &s), 0);
		CHECK_EQ(!!strstr(get(&s, "incompat")->str, "reserved_rows"),
			 p > 0);
		/* only asked for (mkfs --lean-journal) */
		CHECK(!strstr(get(&s, "incompat")->str, "lean_journal"));
		CHECK_EQ(!!strstr(get(&s, "incompat")->str, "new_rows"), 1);
		memset(buf, 0x5a + p, sizeof(buf));
		CHECK_EQ(dg_apply(vol, &r, 1), 0);
		dg_vol_close(vol);
		vol = tvol_open(&tv, 0);
		REQUIRE(vol);
		CHECK_EQ(dg_read(vol, 300, 1, back), 0);
		CHECK(!memcmp(buf, back, sizeof(buf)));
		dg_vol_close(vol);
		tvol_cleanup(&tv);
	}
}

/* Every device's two copies: all fields, as on the media, alike but for
 * the device's own, and dev_index right. */
static void test_super_fields(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info in;

	tvol_make(&tv, "insp-sb", 3, 1, SIZE, false);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	dg_vol_get_info(vol, &in);
	for (unsigned d = 0; d < 3; d++) {
		struct seen s[2] = { { 0 }, { 0 } };
		uint64_t page[2];

		for (unsigned c = 0; c < 2; c++)
			CHECK_EQ(dg_inspect_super(vol, d, c, &page[c], see,
						  &s[c]), 0);
		CHECK_EQ(page[0], 0);
		CHECK_EQ(page[1], in.dev_pages - 1);
		CHECK_EQ(s[0].n, s[1].n);
		CHECK(s[0].n > 20);
		CHECK(!strcmp(s[0].name[0], "magic"));
		CHECK(!strcmp(s[0].name[s[0].n - 1], "csum"));
		CHECK_EQ(get(&s[0], "dev_index")->u, d);
		CHECK_EQ(get(&s[0], "dev_count")->u, 3);
		CHECK_EQ(get(&s[0], "generation")->u, in.generation);
		CHECK(!strcmp(get(&s[0], "state")->str, "clean"));
		CHECK(!strcmp(get(&s[0], "incompat")->str,
			      "sealed_journal,meta_zone,xattr_run,"
			      "staged_sync,journal_copies,new_rows,"
			      "journal_v2,reserved_rows,copies_together,"
			      "line_seal"));
		for (unsigned i = 0; i < s[0].n; i++)
			CHECK(s[0].f[i].u == s[1].f[i].u &&
			      !strcmp(s[0].f[i].str, s[1].f[i].str));
	}
	CHECK_EQ(dg_inspect_super(vol, 3, 0, &(uint64_t){ 0 }, see,
				  &(struct seen){ 0 }), -EINVAL);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A damaged copy still shows its fields and says -EUCLEAN; a blank one
 * says -ENODEV and shows nothing. */
static void test_damaged_super(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct seen s = { 0 };
	uint64_t page, gen = 0x1234;
	uint8_t zero[DG_PAGE_SIZE] = { 0 };

	tvol_make(&tv, "insp-bad", 2, 1, SIZE, false);
	tvol_poke(&tv, 1, offsetof(struct dg_dsuper, generation), &gen,
		  sizeof(gen));
	tvol_poke(&tv, 0, SIZE - DG_PAGE_SIZE, zero, sizeof(zero));
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	CHECK_EQ(dg_inspect_super(vol, 1, 0, &page, see, &s), -EUCLEAN);
	CHECK(s.n > 20);
	s.n = 0;
	CHECK_EQ(dg_inspect_super(vol, 0, 1, &page, see, &s), -ENODEV);
	CHECK_EQ(s.n, 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_free_and_geometry(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info in;
	struct seen g = { 0 }, f = { 0 };

	tvol_make(&tv, "insp-free", 4, 2, SIZE, false);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	dg_vol_get_info(vol, &in);
	dg_inspect_geometry(vol, see, &g);
	CHECK_EQ(dg_inspect_free(vol, see, &f), 0);
	CHECK_EQ(get(&g, "vpns")->u, in.vpns);
	CHECK_EQ(get(&g, "data_per_row")->u, 2);
	CHECK_EQ(get(&f, "free_vpns")->u, in.free_vpns);
	CHECK_EQ(get(&f, "used_vpns")->u + in.free_vpns, in.vpns);
	CHECK(get(&f, "largest_free_extent")->u <= in.free_vpns);
	CHECK(get(&f, "free_extents")->u >= 1);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

struct entries {
	unsigned n;
	uint64_t first_seq, bytes;
};

static void count_entry(void *arg, const struct dg_jentry_info *e)
{
	struct entries *x = arg;

	if (!x->n++)
		x->first_seq = e->seq;
	x->bytes += e->bytes;
}

/* Entries applied but not checkpointed are live until a writable open
 * replays them; a read-only open shows them, oldest first. */
static void test_journal(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct seen j = { 0 }, h = { 0 };
	struct entries x = { 0 };
	uint8_t buf[100];

	tvol_make(&tv, "insp-jrnl", 2, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	memset(buf, 0xab, sizeof(buf));
	for (unsigned i = 0; i < 3; i++) {
		struct dg_range r = { 10 + i, 0, sizeof(buf), buf };

		CHECK_EQ(dg_apply(vol, &r, 1), 0);
	}
	/* A crash now: copy the images while the volume is open. */
	{
		struct tvol snap = { .ndev = 2 };

		for (unsigned d = 0; d < 2; d++) {
			uint8_t *img = malloc(SIZE);

			REQUIRE(img);
			snap.paths[d] = tfile_path(d ? "insp-snap1"
						     : "insp-snap0");
			tvol_peek(&tv, d, 0, img, SIZE);
			FILE *f = fopen(snap.paths[d], "w");

			REQUIRE(f);
			CHECK_EQ(fwrite(img, 1, SIZE, f), SIZE);
			fclose(f);
			free(img);
		}
		dg_vol_close(vol);
		vol = tvol_open(&snap, DG_OPEN_RDONLY);
		REQUIRE(vol);
		dg_inspect_journal(vol, see, &j);
		CHECK_EQ(dg_inspect_jentries(vol, count_entry, &x), 0);
		CHECK_EQ(get(&j, "live_entries")->u, x.n);
		CHECK(x.n >= 3);
		CHECK_EQ(x.first_seq, get(&j, "tail_seq")->u);
		CHECK(x.bytes >= 3 * sizeof(buf));
		CHECK(!strcmp(get(&j, "live_entries")->str, "pending"));
		CHECK_EQ(dg_inspect_jhead(vol, 0, 0, see, &h) == 0 ||
				 dg_inspect_jhead(vol, 0, 1, see, &h) == 0,
			 1);
		CHECK_EQ(dg_inspect_jhead(vol, 2, 0, see, &h), -EINVAL);
		dg_vol_close(vol);
		/* Replayed by a writable open: nothing live. */
		vol = tvol_open(&snap, 0);
		REQUIRE(vol);
		dg_vol_close(vol);
		vol = tvol_open(&snap, DG_OPEN_RDONLY);
		REQUIRE(vol);
		j.n = 0;
		dg_inspect_journal(vol, see, &j);
		CHECK_EQ(get(&j, "live_entries")->u, 0);
		dg_vol_close(vol);
		for (unsigned d = 0; d < 2; d++) {
			unlink(snap.paths[d]);
			free(snap.paths[d]);
		}
	}
	tvol_cleanup(&tv);
}

static void reserved_entry(void *arg, const struct dg_jentry_info *e)
{
	uint32_t *reserved = arg;

	*reserved = e->reserved;
}

/* What dumpfs says an entry reserves: every data page of a run of rows
 * and a page reserved alone; a run naming rows the volume has not (past
 * its end, its count near 2^32 pages) counts nothing, where it once
 * wrapped the count. */
static void test_journal_reserved(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint32_t reserved = 0;
	unsigned k;
	pid_t pid;
	int st;

	tvol_make(&tv, "insp-rsv", 4, 1, 32ull << 20, false);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct {
			struct dg_djentry e;
			struct dg_djrange r[3];
		} h;
		const void *data[3] = { NULL, NULL, NULL };
		uint64_t seq, row;

		vol = tvol_open(&tv, 0);
		if (!vol)
			_exit(2);
		row = vol->sb.rows - 8;
		memset(&h, 0, sizeof(h));
		h.e.nranges = 3;
		h.e.len = sizeof(h);
		h.r[0] = (struct dg_djrange){ .row = row, .len = DG_PAGE_SIZE,
					      .flags = DG_JRANGE_ROWS,
					      .page_csum = 5 };
		h.r[1] = (struct dg_djrange){
			.row = row + 6,
			.dev = (uint16_t)dg_row_data_dev(vol, row + 6, 0),
			.len = DG_PAGE_SIZE, .flags = DG_JRANGE_RESERVED };
		h.r[2] = h.r[0];
		h.r[2].row = row + 7;
		h.r[2].page_csum = UINT32_MAX / vol->k;
		/* appended, and a crash before anything else */
		_exit(dg_journal_append(vol, &h.e, data, &seq) ? 3 : 0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	k = vol->k;
	CHECK_EQ(dg_inspect_jentries(vol, reserved_entry, &reserved), 0);
	CHECK_EQ(reserved, 5 * k + 1);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* Written checksum pages have every copy current; none without
 * redundancy. */
static void test_csum_copies(void)
{
	struct tvol tv, none;
	struct dg_vol *vol;
	struct seen c = { 0 };
	uint8_t buf[DG_PAGE_SIZE];

	tvol_make(&tv, "insp-csum", 3, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	memset(buf, 0x5a, sizeof(buf));
	for (unsigned i = 0; i < 40; i++) {
		struct dg_range r = { 100 + 37 * i, 0, sizeof(buf), buf };

		CHECK_EQ(dg_apply(vol, &r, 1), 0);
	}
	dg_vol_close(vol);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	CHECK_EQ(dg_inspect_csum(vol, see, &c), 0);
	CHECK(get(&c, "written")->u > 0);
	CHECK_EQ(get(&c, "copies_current")->u,
		 get(&c, "written")->u * get(&c, "copies")->u);
	CHECK_EQ(get(&c, "copies_stale")->u + get(&c, "copies_bad")->u +
			 get(&c, "unreadable")->u,
		 0);
	CHECK(get(&c, "newest_gen")->u != 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);

	tvol_make(&none, "insp-nored", 2, 0, SIZE, true);
	vol = tvol_open(&none, DG_OPEN_RDONLY);
	REQUIRE(vol);
	CHECK_EQ(dg_inspect_csum(vol, see, &c), -EOPNOTSUPP);
	dg_vol_close(vol);
	tvol_cleanup(&none);
}

static void test_label(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info in;
	char long_label[65];

	tvol_make(&tv, "insp-label", 2, 1, SIZE, false);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	CHECK_EQ(dg_vol_set_label(vol, "x"), -EROFS);
	dg_vol_close(vol);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	memset(long_label, 'l', 64);
	long_label[64] = 0;
	CHECK_EQ(dg_vol_set_label(vol, long_label), -EINVAL);
	long_label[63] = 0;
	CHECK_EQ(dg_vol_set_label(vol, long_label), 0);
	dg_vol_close(vol);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	dg_vol_get_info(vol, &in);
	CHECK(!strcmp(in.label, long_label));
	for (unsigned d = 0; d < 2; d++)
		for (unsigned c = 0; c < 2; c++) {
			struct seen s = { 0 };
			uint64_t page;

			CHECK_EQ(dg_inspect_super(vol, d, c, &page, see, &s), 0);
			CHECK(!strcmp(get(&s, "label")->str, long_label));
		}
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "super_fields", test_super_fields },
		{ "damaged_super", test_damaged_super },
		{ "free_and_geometry", test_free_and_geometry },
		{ "journal", test_journal },
		{ "journal_reserved", test_journal_reserved },
		{ "reserved_rows_with_parity",
		  test_reserved_rows_with_parity },
		{ "csum_copies", test_csum_copies },
		{ "label", test_label },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
