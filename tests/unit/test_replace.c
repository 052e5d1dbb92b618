// SPDX-License-Identifier: MIT
/* test_replace.c -- online replace (replace.c): a present or a missing
 * device rebuilt onto a new file while updates go on between the rows;
 * cut short and resumed; never onto a file that holds something. At the
 * end the volume opens with the new file, every page exact and a scrub
 * clean, and the old device is stale. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"
#include "volume_i.h"

#define PG DG_PAGE_SIZE
#define SIZE (16ull << 20)
#define NPAGES 300u

struct model {
	uint64_t vpn[NPAGES];
	uint8_t want[NPAGES][PG];
	uint64_t seed;
};

/* Page i of the model: spread over every device and the zone. */
static uint64_t vpn_of(struct dg_vol *vol, unsigned i)
{
	return i < 16 ? dg_alloc_meta_vpns(vol) + 40 + i
		      : tdata_vpn(vol) + (uint64_t)(i - 16) * 11;
}

static void update(struct dg_vol *vol, struct model *m, unsigned i,
		   bool whole)
{
	uint32_t off = whole ? 0 : (uint32_t)(m->seed % 3000);
	uint32_t len = whole ? PG : 700;
	uint8_t buf[PG];
	struct dg_range r = { m->vpn[i], off, len, buf };

	trand_fill(&m->seed, buf, len);
	memcpy(m->want[i] + off, buf, len);
	CHECK(dg_apply(vol, &r, 1) == 0);
}

static void fill(struct dg_vol *vol, struct model *m)
{
	for (unsigned i = 0; i < NPAGES; i++) {
		m->vpn[i] = vpn_of(vol, i);
		update(vol, m, i, true);
	}
}

static void check_pages(struct dg_vol *vol, struct model *m)
{
	uint8_t got[PG];

	for (unsigned i = 0; i < NPAGES; i++) {
		CHECK(dg_read(vol, m->vpn[i], 1, got) == 0);
		CHECK(memcmp(got, m->want[i], PG) == 0);
	}
}

/* Rows in batches with updates between them (and before the first). */
static void run_rows(struct dg_vol *vol, struct model *m, uint64_t first,
		     uint64_t end)
{
	uint64_t pages = 0, lost = 0;

	for (uint64_t row = first; row < end; row += 64) {
		update(vol, m, (unsigned)(trand(&m->seed) % NPAGES),
		       row % 128 == 0);
		CHECK(dg_vol_replace_rows(vol, row, row + 64, &pages,
					  &lost) == 0);
	}
	CHECK_EQ(lost, 0);
}

/* The volume whole with path in slot dev: every page, a clean scrub. */
static void check_whole(struct tvol *tv, struct model *m)
{
	struct dg_scrub_report sr;
	struct dg_vol_info in;
	struct dg_vol *vol = tvol_open(tv, 0);

	REQUIRE(vol);
	dg_vol_get_info(vol, &in);
	CHECK(!in.degraded);
	check_pages(vol, m);
	memset(&sr, 0, sizeof(sr));
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
}

static void replace_case(const char *tag, unsigned parity, bool missing,
			 bool cut_short)
{
	static struct model m;
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_replace_rec rec;
	char err[512] = "", *newp = tfile_path(tag), *old;
	unsigned dev = 2, flags = 0;
	uint64_t rows;

	memset(&m, 0, sizeof(m));
	m.seed = 5;
	tvol_make(&tv, tag, 4, parity, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	fill(vol, &m);
	rows = dg_vol_rows(vol);
	dg_vol_close(vol);
	old = tv.paths[dev];
	if (missing) {
		REQUIRE(unlink(old) == 0);
		tv.paths[dev] = strdup("");
		flags = DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW;
	}
	vol = tvol_open(&tv, flags);
	REQUIRE(vol);
	REQUIRE(dg_vol_replace_begin(vol, dev, newp, false, err,
				     sizeof(err)) == 0);
	CHECK_EQ(dg_vol_replacing(vol), dev);
	rec = (struct dg_replace_rec){ .state = DG_REPLACE_RUNNING,
				       .dev = dev };
	REQUIRE(dg_vol_replace_save(vol, &rec) == 0);
	if (cut_short) {
		run_rows(vol, &m, 0, rows / 2);
		rec.next_row = rows / 2;
		REQUIRE(dg_vol_replace_save(vol, &rec) == 0);
		check_pages(vol, &m);
		dg_vol_close(vol);	/* lets the new file go */
		vol = tvol_open(&tv, flags);
		REQUIRE(vol);
		check_pages(vol, &m);
		REQUIRE(dg_vol_replace_load(vol, &rec) == 0);
		CHECK(rec.state == DG_REPLACE_RUNNING);
		CHECK_EQ(rec.next_row, rows / 2);
		CHECK(strcmp(rec.path, newp) == 0);
		REQUIRE(dg_vol_replace_begin(vol, dev, rec.path, true, err,
					     sizeof(err)) == 0);
	}
	run_rows(vol, &m, 0, rows);
	check_pages(vol, &m);
	REQUIRE(dg_vol_replace_finish(vol, err, sizeof(err)) == 0);
	CHECK_EQ(dg_vol_replacing(vol), -1);
	rec.state = DG_REPLACE_FINISHED;
	REQUIRE(dg_vol_replace_save(vol, &rec) == 0);
	update(vol, &m, 3, false);	/* after: the new device in use */
	update(vol, &m, 200, true);
	check_pages(vol, &m);
	dg_vol_close(vol);

	if (missing)
		free(tv.paths[dev]);	/* the "" put for the missing one */
	tv.paths[dev] = strdup(newp);
	check_whole(&tv, &m);
	if (!missing) {		/* the old device is behind now */
		free(tv.paths[dev]);
		tv.paths[dev] = old;
		CHECK(tvol_open(&tv, 0) == NULL);
		unlink(newp);
	} else {
		free(old);
	}
	tvol_cleanup(&tv);
	free(newp);
}

static void test_present_device(void)
{
	replace_case("replp", 1, false, false);
}

static void test_missing_device(void)
{
	replace_case("replm", 1, true, false);
}

static void test_parity2(void)
{
	replace_case("repl2", 2, true, false);
	replace_case("repl2p", 2, false, false);
}

static void test_resumed(void)
{
	replace_case("replrp", 1, false, true);
	replace_case("replrm", 1, true, true);
}

/*
 * A pass of rows persists the new device once, not once a page (on a
 * disk each persist is a write waited for: a few hundred pages a
 * second). Counted, not timed: onto a missing slot the new device is
 * the slot's (filling), whose counts the device layer keeps.
 */
static void test_one_persist_a_pass(void)
{
	static struct model m;
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_media_counts a, b;
	char err[512] = "", *newp = tfile_path("replpersist");
	uint64_t pages = 0, lost = 0, rows;
	unsigned dev = 2;

	memset(&m, 0, sizeof(m));
	m.seed = 7;
	tvol_make(&tv, "replpers", 4, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	fill(vol, &m);
	rows = dg_vol_rows(vol);
	dg_vol_close(vol);
	REQUIRE(unlink(tv.paths[dev]) == 0);
	free(tv.paths[dev]);
	tv.paths[dev] = strdup("");
	vol = tvol_open(&tv, DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW);
	REQUIRE(vol);
	REQUIRE(dg_vol_replace_begin(vol, dev, newp, false, err,
				     sizeof(err)) == 0);
	dg_dev_counts(&vol->devs[dev], &a);
	REQUIRE(dg_vol_replace_rows(vol, 0, rows, &pages, &lost) == 0);
	dg_dev_counts(&vol->devs[dev], &b);
	CHECK_EQ(lost, 0);
	CHECK(pages > 50);
	CHECK_EQ(b.fences - a.fences, 1);
	CHECK_EQ(b.bytes_stored - a.bytes_stored, pages * PG);
	check_pages(vol, &m);
	REQUIRE(dg_vol_replace_finish(vol, err, sizeof(err)) == 0);
	dg_vol_close(vol);
	free(tv.paths[dev]);
	tv.paths[dev] = strdup(newp);
	check_whole(&tv, &m);
	tvol_cleanup(&tv);
	free(newp);
}

/* A file that holds data is refused, untouched. */
static void test_foreign_refused(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	char err[512] = "", *p = tfile_path("replforeign");
	uint8_t buf[PG], back[PG];
	uint64_t seed = 9;
	int fd;

	tvol_make(&tv, "replf", 4, 1, SIZE, false);
	trand_fill(&seed, buf, PG);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, buf, PG) == PG);
	close(fd);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(dg_vol_replace_begin(vol, 1, p, false, err, sizeof(err)),
		 -EEXIST);
	CHECK(strstr(err, "refusing to replace device 1") != NULL);
	CHECK_EQ(dg_vol_replacing(vol), -1);
	/* A device of the volume itself, in use: refused too. */
	CHECK(dg_vol_replace_begin(vol, 1, tv.paths[0], false, err,
				   sizeof(err)) < 0);
	CHECK(dg_vol_replace_begin(vol, 9, p, false, err, sizeof(err)) ==
	      -EINVAL);
	dg_vol_close(vol);
	fd = open(p, O_RDONLY);
	REQUIRE(fd >= 0);
	CHECK(read(fd, back, PG) == PG && memcmp(back, buf, PG) == 0);
	CHECK(lseek(fd, 0, SEEK_END) == PG);
	close(fd);
	unlink(p);
	free(p);
	tvol_cleanup(&tv);
}

/*
 * A missing device's journal copy comes from another device's mapping
 * by a plain copy. With that source poisoned under it (its journal's
 * log pages mapped to a file with nothing behind them: a load there
 * raises SIGBUS, as a truncated image or poisoned media would), the
 * copy reads zeros: the volume must be latched (read-only, EIO), not
 * left with a target whose journal is zeros and nothing said. Only the
 * log pages: the superblock writes of the replace's start, at the
 * device's ends, would notice a whole truncated image by themselves.
 */
static void test_source_poisoned(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	char err[512] = "", *newp = tfile_path("replpois");
	unsigned dev = 1;
	uint64_t off, len;
	int fd;

	tvol_make(&tv, "replpois", 4, 1, SIZE, false);
	REQUIRE(unlink(tv.paths[dev]) == 0);
	free(tv.paths[dev]);
	tv.paths[dev] = strdup("");
	vol = tvol_open(&tv, DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW);
	REQUIRE(vol);
	/* Device 0 holds journal copy 0, the one copied. */
	off = (vol->sb.jrnl_start + 2) * PG;
	len = (vol->sb.jrnl_pages - 2) * PG;
	fd = memfd_create("poisoned", 0);
	REQUIRE(fd >= 0);
	REQUIRE(ftruncate(fd, (off_t)len) == 0);
	REQUIRE(mmap(vol->devs[0].base + off, len, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED);
	REQUIRE(ftruncate(fd, 0) == 0);
	close(fd);
	CHECK(!dg_latch_on(&vol->latch));
	(void)dg_vol_replace_begin(vol, dev, newp, false, err, sizeof(err));
	CHECK(dg_latch_on(&vol->latch));
	dg_vol_replace_abort(vol);
	dg_vol_close(vol);
	unlink(newp);
	free(newp);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "present_device", test_present_device },
		{ "missing_device", test_missing_device },
		{ "parity2", test_parity2 },
		{ "resumed", test_resumed },
		{ "one_persist_a_pass", test_one_persist_a_pass },
		{ "foreign_refused", test_foreign_refused },
		{ "source_poisoned", test_source_poisoned },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
