// SPDX-License-Identifier: MIT
/* test_media_counts.c -- the media layer's exact counts (media_counts.h):
 * bytes stored and streamed, lines flushed, fences */
#include <fcntl.h>
#include <unistd.h>

#include "harness.h"
#include "media.h"
#include "volume_i.h"

#define DEV_BYTES (1u << 20)

static bool open_dev(struct dg_dev *d, const char *tag)
{
	char *path = tfile_path(tag), err[256];
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	bool ok = fd >= 0 && ftruncate(fd, DEV_BYTES) == 0;

	if (fd >= 0)
		close(fd);
	ok = ok && dg_dev_open(d, path, false, false, err, sizeof(err)) == 0;
	if (!ok)
		fprintf(stderr, "cannot open %s: %s\n", path, err);
	free(path);
	return ok;
}

/* Every store counts its bytes; a persist counts the 64-byte lines its
 * range touches and one fence, whatever the alignment. */
static void stores_lines_and_fences(void)
{
	static uint8_t buf[3 * 4096];
	struct dg_media_counts c;
	struct dg_dev d;

	REQUIRE(open_dev(&d, "mc1"));
	dg_dev_counts(&d, &c);
	CHECK_EQ(c.bytes_stored + c.streamed_bytes + c.lines_flushed +
		 c.fences, 0);
	CHECK_EQ(dg_dev_write(&d, 100, buf, 8), 0);
	CHECK_EQ(dg_dev_zero(&d, 8192, 4096), 0);
	CHECK_EQ(dg_dev_stream(&d, 16384, buf, sizeof(buf)), 0);
	CHECK_EQ(dg_dev_stream(&d, 65536, buf, 32), 0); /* too small: cached */
	CHECK_EQ(dg_dev_persist(&d, 100, 8), 0);	 /* one line */
	CHECK_EQ(dg_dev_persist(&d, 60, 8), 0);		 /* across two */
	CHECK_EQ(dg_dev_persist(&d, 8192, 4096), 0);	 /* 64 */
	CHECK_EQ(dg_dev_persist(&d, 0, 0), 0);		 /* a fence alone */
	dg_dev_counts(&d, &c);
	CHECK_EQ(c.bytes_stored, 8 + 4096 + sizeof(buf) + 32);
	CHECK_EQ(c.streamed_bytes, d.coarse ? 0 : sizeof(buf));
	CHECK_EQ(c.lines_flushed, 1 + 2 + 64);
	CHECK_EQ(c.fences, 4);
	dg_dev_close(&d);
}

/* A round (dg_flushset_persist()): the lines of its ranges, a range
 * that continues the one before merged into it, and one fence for all
 * the ranges of every device. */
static void round_counts_its_ranges(void)
{
	struct dg_media_counts c0, c1;
	struct dg_flushset fs;
	struct dg_dev d[2];

	REQUIRE(open_dev(&d[0], "mc2"));
	REQUIRE(open_dev(&d[1], "mc3"));
	dg_flushset_init(&fs);
	/* a slot at 800, the seal at the page's end (checksum copies) */
	dg_flushset_add(&fs, 0, 800, 8);
	dg_flushset_add(&fs, 0, 4080, 16);
	CHECK_EQ(dg_flushset_persist(d, 2, &fs), 0);
	CHECK_EQ(fs.n, 0);
	dg_dev_counts(&d[0], &c0);
	/* msync (a device not on tmpfs or pmem) persists the span */
	CHECK_EQ(c0.lines_flushed, d[0].coarse ? 64 - 12 : 2);
	CHECK_EQ(c0.fences, 1);
	/* a whole page as two ranges, the second continuing the first,
	 * and a line of the other device: still one fence */
	dg_flushset_add(&fs, 0, 4096, 4080);
	dg_flushset_add(&fs, 0, 8176, 16);
	dg_flushset_add(&fs, 1, 64, 8);
	CHECK_EQ(fs.n, 2);
	CHECK_EQ(dg_flushset_persist(d, 2, &fs), 0);
	dg_dev_counts(&d[0], &c0);
	dg_dev_counts(&d[1], &c1);
	CHECK_EQ(c0.lines_flushed + c1.lines_flushed,
		 (d[0].coarse ? 64 - 12 : 2) + 64 + 1);
	/* msync: one call per device */
	CHECK_EQ(c0.fences + c1.fences, 1 + (d[0].coarse ? 2 : 1));
	dg_flushset_fini(&fs);
	dg_dev_close(&d[1]);
	dg_dev_close(&d[0]);
}

/* The volume's counts are its devices' summed. */
static void volume_sums_its_devices(void)
{
	struct dg_media_counts tot, per[DG_MAX_DEVS], sum = { 0 };
	struct tvol tv;
	struct dg_vol *vol;
	uint8_t page[4096];
	struct dg_range r;

	tvol_make(&tv, "mcvol", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	memset(page, 0x5a, sizeof(page));
	r = (struct dg_range){ tdata_vpn(vol), 0, sizeof(page), page };
	CHECK_EQ(dg_apply(vol, &r, 1), 0);
	dg_vol_media_counts(vol, &tot, per);
	for (unsigned d = 0; d < 4; d++)
		dg_media_counts_add(&sum, &per[d]);
	CHECK(tot.bytes_stored >= 2 * sizeof(page)); /* data and parity */
	CHECK(tot.fences >= 2);
	CHECK_EQ(sum.bytes_stored, tot.bytes_stored);
	CHECK_EQ(sum.lines_flushed, tot.lines_flushed);
	CHECK_EQ(sum.fences, tot.fences);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static const struct test_case cases[] = {
	{ "stores_lines_and_fences", stores_lines_and_fences },
	{ "round_counts_its_ranges", round_counts_its_ranges },
	{ "volume_sums_its_devices", volume_sums_its_devices },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return test_main(argc, argv, cases);
}
