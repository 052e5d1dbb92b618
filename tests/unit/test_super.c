// SPDX-License-Identifier: MIT
/* test_super.c -- assembling a volume from hostile device sets (G5) */
#include <fcntl.h>
#include <unistd.h>

#include "harness.h"
#include "super.h"

#define PG   DG_PAGE_SIZE
#define SIZE (16ull << 20)
#define NDEV 4u

/* Sample pages at vpns V0.., spread over every device by the chunking. */
#define V0 100u
#define NV 8u
static const uint64_t sample_vpns[NV] = { V0,	    V0 + 1,    V0 + 256,
					  V0 + 512, V0 + 768,  V0 + 1024,
					  V0 + 1300, V0 + 2000 };

static int try_open(char *const *paths, unsigned n, unsigned flags,
		    struct dg_vol **volp)
{
	char err[512] = "";
	struct dg_vol *vol = NULL;
	int ret = dg_vol_open((const char *const *)paths, n, flags, &vol, err,
			      sizeof(err));

	if (ret) {
		if (vol)
			fprintf(stderr, "dg_vol_open failed but set *volp\n");
		CHECK(vol == NULL);
		CHECK(err[0] != 0); /* a reason is given */
	}
	if (volp)
		*volp = ret ? NULL : vol;
	else if (!ret)
		dg_vol_close(vol);
	return ret;
}

/* A formatted volume holding sample pages (seeded by tag's first byte). */
static bool make_sample(struct tvol *tv, const char *tag, unsigned parity,
			uint8_t *model)
{
	uint64_t seed = 0x5u + (uint8_t)tag[0];
	struct dg_vol *vol;
	bool ok = true;

	tvol_make(tv, tag, NDEV, parity, SIZE, false);
	vol = tvol_open(tv, 0);
	if (!vol)
		return false;
	trand_fill(&seed, model, NV * PG);
	for (unsigned i = 0; i < NV && ok; i++) {
		struct dg_range r = { sample_vpns[i], 0, PG, model + i * PG };

		ok = dg_apply(vol, &r, 1) == 0;
	}
	dg_vol_close(vol);
	return ok;
}

static bool sample_ok(struct dg_vol *vol, const uint8_t *model)
{
	uint8_t buf[PG];

	for (unsigned i = 0; i < NV; i++)
		if (dg_read(vol, sample_vpns[i], 1, buf) ||
		    memcmp(buf, model + i * PG, PG))
			return false;
	return true;
}

static void copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out;
	static uint8_t buf[1 << 16];
	ssize_t n;

	if (in < 0)
		abort();
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0)
		abort();
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			abort();
	if (n < 0)
		abort();
	close(in);
	close(out);
}

/* A file of size bytes: zeros, or random bytes when seed is set. */
static void make_file(const char *path, uint64_t size, uint64_t seed)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	static uint8_t buf[1 << 16];

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		abort();
	for (uint64_t off = 0; seed && off < size; off += sizeof(buf)) {
		trand_fill(&seed, buf, sizeof(buf));
		if (pwrite(fd, buf, sizeof(buf), (off_t)off) != sizeof(buf))
			abort();
	}
	close(fd);
}

/* The sample volume opens and holds its data. */
static void check_intact(struct tvol *tv, const uint8_t *model)
{
	struct dg_vol *vol;

	CHECK_EQ(try_open(tv->paths, NDEV, 0, &vol), 0);
	if (!vol)
		return;
	CHECK(sample_ok(vol, model));
	dg_vol_close(vol);
}

/*
 * A device replaced by foreign bytes or a blank image: -ENODEV. With
 * DG_OPEN_DEGRADED parity covers it, read-only.
 */
static void replaced_device(uint64_t seed)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info info;
	uint8_t *model = malloc(NV * PG);

	REQUIRE(model);
	REQUIRE(make_sample(&tv, seed ? "foreign" : "blank", 1, model));
	make_file(tv.paths[2], SIZE, seed);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -ENODEV);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_RDONLY, NULL), -ENODEV);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED, &vol), 0);
	if (vol) {
		dg_vol_get_info(vol, &info);
		CHECK(info.degraded && info.read_only);
		CHECK_EQ(info.missing_mask, 1u << 2);
		CHECK(sample_ok(vol, model));
		dg_vol_close(vol);
	}
	/* Nothing was written to the stranger. */
	if (!seed) {
		uint8_t buf[PG], zero[PG] = { 0 };

		tvol_peek(&tv, 2, 0, buf, PG);
		CHECK(memcmp(buf, zero, PG) == 0);
		tvol_peek(&tv, 2, SIZE - PG, buf, PG);
		CHECK(memcmp(buf, zero, PG) == 0);
	}
	/* Every device foreign: no volume at all. */
	for (unsigned d = 0; d < NDEV; d++)
		make_file(tv.paths[d], SIZE, seed ? seed + d : 0);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -ENODEV);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED, NULL), -ENODEV);
	tvol_cleanup(&tv);
	free(model);
}

static void test_foreign(void)
{
	replaced_device(0xf00d);
}

static void test_blank(void)
{
	replaced_device(0);
}

/* Devices of two volumes with identical geometry: -EXDEV, whichever
 * volume the majority comes from. */
static void test_mixed_volumes(void)
{
	struct tvol a, b;
	uint8_t *ma = malloc(NV * PG), *mb = malloc(NV * PG);
	char *mix[NDEV];

	REQUIRE(ma && mb);
	REQUIRE(make_sample(&a, "mixa", 1, ma));
	REQUIRE(make_sample(&b, "mixb", 1, mb));
	for (unsigned bad = 0; bad < NDEV; bad++) {
		for (unsigned d = 0; d < NDEV; d++)
			mix[d] = d == bad ? b.paths[d] : a.paths[d];
		CHECK_EQ(try_open(mix, NDEV, 0, NULL), -EXDEV);
		CHECK_EQ(try_open(mix, NDEV, DG_OPEN_DEGRADED, NULL), -EXDEV);
		CHECK_EQ(try_open(mix, NDEV, DG_OPEN_RDONLY, NULL), -EXDEV);
	}
	/* Two of each. */
	mix[0] = a.paths[0];
	mix[1] = b.paths[1];
	mix[2] = a.paths[2];
	mix[3] = b.paths[3];
	CHECK_EQ(try_open(mix, NDEV, 0, NULL), -EXDEV);
	/* And neither volume was touched. */
	check_intact(&a, ma);
	check_intact(&b, mb);
	tvol_cleanup(&a);
	tvol_cleanup(&b);
	free(ma);
	free(mb);
}

/* The superblocks say which device is which: any order opens. */
static void test_order(void)
{
	static const unsigned perms[][NDEV] = {
		{ 3, 2, 1, 0 }, { 1, 0, 3, 2 }, { 2, 3, 0, 1 }, { 1, 2, 3, 0 },
	};
	struct tvol tv;
	struct dg_vol *vol;
	uint8_t *model = malloc(NV * PG);
	char *p[NDEV];

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "order", 1, model));
	for (unsigned i = 0; i < sizeof(perms) / sizeof(perms[0]); i++) {
		uint8_t buf[PG];
		struct dg_range r = { V0 + 3000 + i, 0, PG, buf };

		for (unsigned d = 0; d < NDEV; d++)
			p[d] = tv.paths[perms[i][d]];
		CHECK_EQ(try_open(p, NDEV, 0, &vol), 0);
		if (!vol)
			continue;
		CHECK(sample_ok(vol, model));
		/* Writes land where the right order expects them. */
		memset(buf, (int)i + 1, PG);
		CHECK_EQ(dg_apply(vol, &r, 1), 0);
		dg_vol_close(vol);
	}
	CHECK_EQ(try_open(tv.paths, NDEV, 0, &vol), 0);
	if (vol) {
		struct dg_scrub_report rep;
		uint8_t buf[PG], want[PG];

		for (unsigned i = 0; i < sizeof(perms) / sizeof(perms[0]);
		     i++) {
			memset(want, (int)i + 1, PG);
			CHECK_EQ(dg_read(vol, V0 + 3000 + i, 1, buf), 0);
			CHECK(memcmp(buf, want, PG) == 0);
		}
		CHECK_EQ(dg_vol_scrub(vol, false, &rep, NULL, NULL), 0);
		CHECK_EQ(rep.detected + rep.parity_mismatch, 0);
		dg_vol_close(vol);
	}
	tvol_cleanup(&tv);
	free(model);
}

/*
 * Missing devices, given as NULL, "" or a path that does not exist:
 * -ENXIO unless DG_OPEN_DEGRADED and parity covers them.
 */
static void test_missing(void)
{
	struct tvol tv, t0;
	struct dg_vol *vol;
	uint8_t *model = malloc(NV * PG);
	char *p[NDEV], empty[] = "", *gone = tfile_path("missing-gone");

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "missing", 1, model));
	unlink(gone);
	for (int how = 0; how < 3; how++) {
		char *hole = how == 0 ? NULL : how == 1 ? empty : gone;

		for (unsigned d = 0; d < NDEV; d++) {
			memcpy(p, tv.paths, sizeof(p));
			p[d] = hole;
			CHECK_EQ(try_open(p, NDEV, 0, NULL), -ENXIO);
			CHECK_EQ(try_open(p, NDEV, DG_OPEN_RDONLY, NULL),
				 -ENXIO);
			CHECK_EQ(try_open(p, NDEV, DG_OPEN_DEGRADED, &vol), 0);
			if (vol) {
				struct dg_vol_info info;

				dg_vol_get_info(vol, &info);
				CHECK(info.degraded && info.read_only);
				CHECK_EQ(info.missing_mask, 1u << d);
				CHECK(sample_ok(vol, model));
				dg_vol_close(vol);
			}
			/* Two missing is beyond single parity. */
			p[(d + 1) % NDEV] = hole;
			CHECK_EQ(try_open(p, NDEV, 0, NULL), -ENXIO);
			CHECK_EQ(try_open(p, NDEV, DG_OPEN_DEGRADED, NULL),
				 -ENXIO);
		}
	}
	/* Fewer paths than devices: the rest are missing. */
	CHECK_EQ(try_open(tv.paths, NDEV - 1, 0, NULL), -ENXIO);
	CHECK_EQ(try_open(tv.paths, NDEV - 1, DG_OPEN_DEGRADED, &vol), 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);

	/* Without parity nothing may be missing. */
	tvol_make(&t0, "missing0", 2, 0, SIZE, false);
	p[0] = t0.paths[0];
	p[1] = NULL;
	CHECK_EQ(try_open(p, 2, 0, NULL), -ENXIO);
	CHECK_EQ(try_open(p, 2, DG_OPEN_DEGRADED, NULL), -ENXIO);
	tvol_cleanup(&t0);
	free(gone);
	free(model);
}

/*
 * A stale device: an old copy of one image, put back after the volume
 * moved on (generation bumped, data changed). -ESTALE, or degraded
 * without it; its old pages are never returned.
 */
static void test_stale(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info info;
	uint8_t *model = malloc(NV * PG);
	char *old = tfile_path("stale-old");
	uint64_t gen0;

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "stale", 1, model));
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	dg_vol_get_info(vol, &info);
	gen0 = info.generation;
	dg_vol_close(vol);
	copy_file(tv.paths[1], old);

	/* Move on: new data everywhere (device 1 included). */
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	for (unsigned i = 0; i < NV; i++) {
		struct dg_range r = { sample_vpns[i], 0, PG, model + i * PG };

		memset(model + i * PG, 0xc0 + (int)i, PG);
		CHECK_EQ(dg_apply(vol, &r, 1), 0);
	}
	dg_vol_close(vol);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	dg_vol_get_info(vol, &info);
	CHECK(info.generation > gen0);
	dg_vol_close(vol);

	copy_file(old, tv.paths[1]);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -ESTALE);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_RDONLY, NULL), -ESTALE);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED, &vol), 0);
	if (vol) {
		dg_vol_get_info(vol, &info);
		CHECK(info.degraded && info.read_only);
		CHECK_EQ(info.missing_mask, 1u << 1);
		CHECK(sample_ok(vol, model));
		dg_vol_close(vol);
	}
	/* A stale device and a missing one: beyond single parity. */
	unlink(tv.paths[2]);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED, NULL), -ENXIO);
	tvol_cleanup(&tv);
	free(old);
	free(model);
}

/* Copy the superblock pages (the first and the last) of one image
 * file to another: "lost every superblock write since then". */
static void put_supers(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY);
	uint8_t buf[PG];

	if (in < 0 || out < 0)
		abort();
	for (unsigned k = 0; k < 2; k++) {
		off_t off = k ? (off_t)(SIZE - PG) : 0;

		if (pread(in, buf, PG, off) != PG ||
		    pwrite(out, buf, PG, off) != PG)
			abort();
	}
	close(in);
	close(out);
}

/* Every sample page reads current or fails with EIO: never old. */
static bool sample_never_old(struct dg_vol *vol, const uint8_t *model,
			     unsigned *eio)
{
	uint8_t buf[PG];

	*eio = 0;
	for (unsigned i = 0; i < NV; i++) {
		int r = dg_read(vol, sample_vpns[i], 1, buf);

		if (r == -EIO)
			(*eio)++;
		else if (r || memcmp(buf, model + i * PG, PG))
			return false;
	}
	return true;
}

/*
 * More devices with stale superblocks than parity covers: with
 * DG_OPEN_SUSPECT they are used page by page (read-only; writable with
 * DG_OPEN_REPAIR, then taken back). Whole old images read as EIO where
 * their rows cannot be rebuilt, never as old data. More devices behind
 * than parity + 1: refused, nothing written.
 */
static void test_suspects(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info info;
	uint8_t *model = malloc(NV * PG);
	char *old[NDEV];
	unsigned eio;
	char err[1024];

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "suspect", 1, model));
	for (unsigned d = 0; d < NDEV; d++) {
		char tag[32];

		snprintf(tag, sizeof(tag), "suspect-old%u", d);
		old[d] = tfile_path(tag);
		copy_file(tv.paths[d], old[d]);
	}
	/* Move on: new data everywhere. */
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	for (unsigned i = 0; i < NV; i++) {
		struct dg_range r = { sample_vpns[i], 0, PG, model + i * PG };

		memset(model + i * PG, 0xa0 + (int)i, PG);
		CHECK_EQ(dg_apply(vol, &r, 1), 0);
	}
	dg_vol_close(vol);

	/* Devices 1 and 2 lost only their superblock writes. */
	put_supers(old[1], tv.paths[1]);
	put_supers(old[2], tv.paths[2]);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -ESTALE);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED, NULL), -ENXIO);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED | DG_OPEN_SUSPECT,
			  &vol), 0);
	if (vol) {
		dg_vol_get_info(vol, &info);
		CHECK(info.read_only && !info.degraded);
		CHECK_EQ(info.suspect_mask, (1u << 1) | (1u << 2));
		CHECK(sample_ok(vol, model));
		CHECK_EQ(dg_vol_accept_suspects(vol), -EROFS);
		dg_vol_close(vol);
	}
	/* Repairing: writable, superblocks untouched until taken back. */
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_SUSPECT | DG_OPEN_REPAIR,
			  &vol), 0);
	if (vol) {
		dg_vol_get_info(vol, &info);
		CHECK(!info.read_only);
		CHECK(sample_ok(vol, model));
		dg_vol_close(vol);
	}
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -ESTALE);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_SUSPECT | DG_OPEN_REPAIR,
			  &vol), 0);
	if (vol) {
		CHECK_EQ(dg_vol_accept_suspects(vol), 2);
		dg_vol_close(vol);
	}
	check_intact(&tv, model);

	/* Devices 1 and 2 whole old images: EIO or current, never old. */
	copy_file(old[1], tv.paths[1]);
	copy_file(old[2], tv.paths[2]);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED | DG_OPEN_SUSPECT,
			  &vol), 0);
	if (vol) {
		CHECK(sample_never_old(vol, model, &eio));
		CHECK(eio > 0);
		dg_vol_close(vol);
	}

	/* Three of four behind under parity 1: refused, nothing written. */
	copy_file(old[3], tv.paths[3]);
	{
		uint8_t before[PG], after[PG];
		struct dg_vol *v2 = NULL;

		tvol_peek(&tv, 1, 0, before, PG);
		CHECK_EQ(dg_vol_open((const char *const *)tv.paths, NDEV,
				     DG_OPEN_DEGRADED | DG_OPEN_SUSPECT |
					     DG_OPEN_REPAIR,
				     &v2, err, sizeof(err)), -ENXIO);
		CHECK(strstr(err, "nothing was written") != NULL);
		tvol_peek(&tv, 1, 0, after, PG);
		CHECK(memcmp(before, after, PG) == 0);
	}
	tvol_cleanup(&tv);
	for (unsigned d = 0; d < NDEV; d++) {
		unlink(old[d]);
		free(old[d]);
	}
	free(model);
}

/* A truncated device: -EFBIG; an empty one: -ENOSPC. */
static void test_truncated(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint8_t *model = malloc(NV * PG);

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "trunc", 1, model));
	REQUIRE(truncate(tv.paths[3], SIZE / 2) == 0);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -EFBIG);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_RDONLY, NULL), -EFBIG);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED, &vol), 0);
	if (vol) {
		struct dg_vol_info info;

		dg_vol_get_info(vol, &info);
		CHECK_EQ(info.missing_mask, 1u << 3);
		CHECK(sample_ok(vol, model));
		dg_vol_close(vol);
	}
	/* Cut just short of the backup superblock. */
	REQUIRE(truncate(tv.paths[3], SIZE) == 0);
	REQUIRE(truncate(tv.paths[0], SIZE - PG) == 0);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -EFBIG);
	/* An empty file is a blank replacement, missing until rebuilt
	 * onto: refused unless degraded, and then kept as a spare. */
	REQUIRE(truncate(tv.paths[0], 0) == 0);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -ENXIO);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_RDONLY | DG_OPEN_DEGRADED,
			  &vol), 0);
	if (vol) {
		struct dg_vol_info info;

		dg_vol_get_info(vol, &info);
		CHECK_EQ(info.missing_mask, 1u << 0);
		CHECK(sample_ok(vol, model));
		dg_vol_close(vol);
	}
	tvol_cleanup(&tv);
	free(model);
}

/* Rewrite the primary superblock of dev with fn applied, re-sealed. */
static void patch_super(struct tvol *tv, unsigned dev,
			void (*fn)(struct dg_dsuper *s))
{
	struct dg_dsuper *s = aligned_alloc(PG, PG);

	if (!s)
		abort();
	tvol_peek(tv, dev, 0, s, PG);
	if (dg_dsuper_decode(s, s) != 0)
		abort();
	fn(s);
	dg_dsuper_seal(s);
	tvol_poke(tv, dev, 0, s, PG);
	free(s);
}

static void set_incompat(struct dg_dsuper *s)
{
	s->incompat |= 1ull << 40;
}

static void set_version(struct dg_dsuper *s)
{
	s->version = DG_FORMAT_VERSION + 1;
}

static void set_old_version(struct dg_dsuper *s)
{
	s->version = 2;
}

static void set_ro_compat(struct dg_dsuper *s)
{
	s->ro_compat |= 1ull << 33;
}

static void set_compat(struct dg_dsuper *s)
{
	s->compat |= 1ull << 17;
}

/* ext4 rules: unknown incompat (or version) refuses to open. */
static void test_unknown_incompat(void)
{
	struct tvol tv;
	uint8_t *model = malloc(NV * PG);

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "incompat", 1, model));
	for (unsigned d = 0; d < NDEV; d++)
		patch_super(&tv, d, set_incompat);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -EOPNOTSUPP);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_RDONLY, NULL), -EOPNOTSUPP);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED, NULL),
		 -EOPNOTSUPP);
	tvol_cleanup(&tv);

	/* On one device only: still refused, not left out. */
	REQUIRE(make_sample(&tv, "incompat1", 1, model));
	patch_super(&tv, 2, set_incompat);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -EOPNOTSUPP);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED, NULL),
		 -EOPNOTSUPP);
	tvol_cleanup(&tv);

	REQUIRE(make_sample(&tv, "version", 1, model));
	for (unsigned d = 0; d < NDEV; d++)
		patch_super(&tv, d, set_version);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -EOPNOTSUPP);
	tvol_cleanup(&tv);

	/* A volume of an older format says so, and what to do. */
	REQUIRE(make_sample(&tv, "oldversion", 1, model));
	for (unsigned d = 0; d < NDEV; d++)
		patch_super(&tv, d, set_old_version);
	{
		char err[512] = "";
		struct dg_vol *vol = NULL;

		CHECK_EQ(dg_vol_open((const char *const *)tv.paths, NDEV, 0,
				     &vol, err, sizeof(err)),
			 -EOPNOTSUPP);
		CHECK(strstr(err, "format version 2; this daxguard reads "
			     "version 3") != NULL);
		CHECK(strstr(err, "mkfs.daxguard again") != NULL);
	}
	tvol_cleanup(&tv);
	free(model);
}

/* Unknown compat features are ignored; unknown ro_compat ones open
 * read-only (format.h). */
static void test_unknown_compat(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_vol_info info;
	uint8_t *model = malloc(NV * PG);

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "compat", 1, model));
	for (unsigned d = 0; d < NDEV; d++)
		patch_super(&tv, d, set_compat);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, &vol), 0);
	if (vol) {
		dg_vol_get_info(vol, &info);
		CHECK(!info.read_only);
		CHECK(sample_ok(vol, model));
		dg_vol_close(vol);
	}
	for (unsigned d = 0; d < NDEV; d++)
		patch_super(&tv, d, set_ro_compat);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, &vol), 0);
	if (vol) {
		struct dg_range r = { V0, 0, 8, model };

		dg_vol_get_info(vol, &info);
		CHECK(info.read_only);
		CHECK(sample_ok(vol, model));
		CHECK_EQ(dg_apply(vol, &r, 1), -EROFS);
		dg_vol_close(vol);
	}
	tvol_cleanup(&tv);
	free(model);
}

/*
 * A corrupt primary superblock: the backup in the last page stands in,
 * and the next writable open rewrites the primary. Both copies bad: the
 * device is not recognised.
 */
static void test_backup_super(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_dsuper s;
	uint8_t *model = malloc(NV * PG), *pg = aligned_alloc(PG, PG);

	REQUIRE(model && pg);
	REQUIRE(make_sample(&tv, "backup", 1, model));
	tvol_peek(&tv, 1, 0, pg, PG);
	pg[200] ^= 0x04; /* a flipped bit in the label */
	tvol_poke(&tv, 1, 0, pg, PG);
	CHECK_EQ(dg_dsuper_decode(pg, &s), -EUCLEAN);

	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_RDONLY, &vol), 0);
	if (vol) {
		CHECK(sample_ok(vol, model));
		dg_vol_close(vol);
	}
	tvol_peek(&tv, 1, 0, pg, PG);
	CHECK_EQ(dg_dsuper_decode(pg, &s), -EUCLEAN); /* read-only: as is */

	CHECK_EQ(try_open(tv.paths, NDEV, 0, &vol), 0);
	if (vol) {
		struct dg_vol_info info;

		dg_vol_get_info(vol, &info);
		CHECK(!info.degraded);
		CHECK(sample_ok(vol, model));
		dg_vol_close(vol);
	}
	tvol_peek(&tv, 1, 0, pg, PG);
	CHECK_EQ(dg_dsuper_decode(pg, &s), 0);
	CHECK_EQ(s.dev_index, 1);

	/* Magic gone from the primary (zeroed page), backup intact. */
	memset(pg, 0, PG);
	tvol_poke(&tv, 2, 0, pg, PG);
	check_intact(&tv, model);

	/* Both copies bad: not a daxguard device any more. */
	tvol_peek(&tv, 3, 0, pg, PG);
	pg[100] ^= 1;
	tvol_poke(&tv, 3, 0, pg, PG);
	tvol_poke(&tv, 3, SIZE - PG, pg, PG);
	CHECK(try_open(tv.paths, NDEV, 0, NULL) < 0);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED, &vol), 0);
	if (vol) {
		CHECK(sample_ok(vol, model));
		dg_vol_close(vol);
	}
	tvol_cleanup(&tv);
	free(model);
	free(pg);
}

/* One writer per volume: the images are locked while it is open. */
static void test_busy(void)
{
	struct tvol tv;
	struct dg_vol *vol, *ro1, *ro2;
	uint8_t *model = malloc(NV * PG);

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "busy", 1, model));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -EBUSY);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_RDONLY, NULL), -EBUSY);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_DEGRADED, NULL), -EBUSY);
	/* The failed opens did not disturb the open volume. */
	CHECK(sample_ok(vol, model));
	dg_vol_close(vol);

	/* Readers share; a writer waits for them all. */
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_RDONLY, &ro1), 0);
	CHECK_EQ(try_open(tv.paths, NDEV, DG_OPEN_RDONLY, &ro2), 0);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -EBUSY);
	dg_vol_close(ro1);
	CHECK_EQ(try_open(tv.paths, NDEV, 0, NULL), -EBUSY);
	dg_vol_close(ro2);
	check_intact(&tv, model);
	tvol_cleanup(&tv);
	free(model);
}

/* Every device given twice, or more paths than devices: refused. */
static void test_bad_sets(void)
{
	struct tvol tv;
	uint8_t *model = malloc(NV * PG);
	char *p[DG_MAX_DEVS + 1] = { NULL };

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "badset", 1, model));
	memcpy(p, tv.paths, NDEV * sizeof(*p));
	p[NDEV] = p[0];
	CHECK(try_open(p, NDEV + 1, 0, NULL) < 0);
	CHECK(try_open(p, NDEV + 1, DG_OPEN_RDONLY, NULL) < 0);
	p[3] = p[1];
	CHECK(try_open(p, NDEV, DG_OPEN_RDONLY, NULL) < 0);
	CHECK(try_open(p, NDEV, DG_OPEN_DEGRADED | DG_OPEN_RDONLY, NULL) < 0);
	CHECK_EQ(try_open(p, 0, 0, NULL), -EINVAL);
	CHECK_EQ(try_open(p, DG_MAX_DEVS + 1, 0, NULL), -EINVAL);
	check_intact(&tv, model);
	tvol_cleanup(&tv);
	free(model);
}

static uint64_t file_size(const char *path)
{
	int fd = open(path, O_RDONLY);
	off_t n;

	if (fd < 0)
		return 0;
	n = lseek(fd, 0, SEEK_END);
	close(fd);
	return n < 0 ? 0 : (uint64_t)n;
}

static bool file_zero_start(const char *path)
{
	uint8_t buf[PG], zero[PG] = { 0 };
	int fd = open(path, O_RDONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = pread(fd, buf, PG, 0) == PG && !memcmp(buf, zero, PG);
	close(fd);
	return ok;
}

/*
 * dg_format refuses to overwrite a volume without force, devices of
 * different sizes and devices too small; none of these write anything.
 */
static void test_format_refuses(void)
{
	struct tvol tv;
	struct dg_format_opts o = { .parity = 1 };
	struct dg_vol_info before, after;
	struct dg_vol *vol;
	uint8_t *model = malloc(NV * PG);
	char *f0 = tfile_path("fmt-new0"), *f1 = tfile_path("fmt-new1");
	const char *p[3];

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "fmt", 1, model));
	CHECK_EQ(dg_format((const char *const *)tv.paths, NDEV, &o, NULL),
		 -EEXIST);
	/* One volume device among fresh files is enough to refuse. */
	make_file(f0, SIZE, 0);
	make_file(f1, SIZE, 0);
	p[0] = f0;
	p[1] = f1;
	p[2] = tv.paths[2];
	CHECK_EQ(dg_format(p, 3, &o, NULL), -EEXIST);
	CHECK(file_zero_start(f0) && file_zero_start(f1));
	check_intact(&tv, model);

	/* Bad options are refused before anything is opened. */
	o.force = true;
	o.parity = 3;
	CHECK_EQ(dg_format((const char *const *)tv.paths, NDEV, &o, NULL),
		 -EINVAL);
	o.parity = 1;
	o.label = "0123456789012345678901234567890123456789012345678901234567"
		  "8901234";
	CHECK_EQ(dg_format((const char *const *)tv.paths, NDEV, &o, NULL),
		 -EINVAL);
	o.label = NULL;
	o.force = false;
	check_intact(&tv, model);

	/* Sizes that differ. */
	make_file(f1, SIZE + PG, 0);
	CHECK_EQ(dg_format(p, 2, &o, NULL), -EINVAL);
	/* Too small. */
	make_file(f0, 8ull << 20, 0);
	make_file(f1, 8ull << 20, 0);
	CHECK_EQ(dg_format(p, 2, &o, NULL), -ENOSPC);
	/* The same device twice. */
	make_file(f0, SIZE, 0);
	p[1] = f0;
	CHECK_EQ(dg_format(p, 2, &o, NULL), -EINVAL);
	CHECK(file_zero_start(f0) && file_zero_start(f1));

	/* With force the volume is replaced: a new identity, empty. */
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	dg_vol_get_info(vol, &before);
	dg_vol_close(vol);
	o.force = true;
	CHECK_EQ(dg_format((const char *const *)tv.paths, NDEV, &o, &after),
		 0);
	CHECK(memcmp(before.uuid, after.uuid, 16) != 0);
	CHECK(after.free_vpns < after.vpns - 1);
	CHECK(after.free_vpns > after.vpns / 2);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(!sample_ok(vol, model));
	dg_vol_close(vol);
	free(f0);
	free(f1);
	tvol_cleanup(&tv);
	free(model);
}

/*
 * With opts.size set, a refused dg_format() must not have extended the
 * files of the volume it refuses to touch (G5: nothing written by
 * accident).
 */
static void test_format_refuse_no_grow(void)
{
	struct tvol tv;
	struct dg_format_opts o = { .parity = 1, .size = 2 * SIZE };
	uint8_t *model = malloc(NV * PG);

	REQUIRE(model);
	REQUIRE(make_sample(&tv, "fmtgrow", 1, model));
	CHECK_EQ(dg_format((const char *const *)tv.paths, NDEV, &o, NULL),
		 -EEXIST);
	for (unsigned d = 0; d < NDEV; d++)
		CHECK_EQ(file_size(tv.paths[d]), SIZE);
	check_intact(&tv, model);
	tvol_cleanup(&tv);
	free(model);
}

/* The superblock's self checksum pins format v3 (see test_csum.c). */
static void test_super_known_answer(void)
{
	struct dg_dsuper *s = aligned_alloc(PG, PG), out;

	REQUIRE(s);
	memset(s, 0, PG);
	s->magic = DG_SUPER_MAGIC;
	CHECK_EQ(DG_FORMAT_VERSION, 3);
	s->version = DG_FORMAT_VERSION;
	for (unsigned i = 0; i < 16; i++) {
		s->vol_uuid[i] = (uint8_t)(i * 17);
		s->dev_uuid[i] = (uint8_t)(255 - i);
	}
	s->dev_index = 2;
	s->dev_count = 4;
	s->parity = 1;
	s->chunk_pages = 256;
	dg_geom_layout(s, 4096, 256, 4, 1, 0);
	s->generation = 7;
	s->state = DG_STATE_CLEAN;
	s->ctime = 1700000000;
	s->mtime = 1700000100;
	strcpy(s->label, "kat");
	dg_dsuper_seal(s);
	CHECK_EQ(s->size, PG);
	CHECK_EQ(s->rows, 2816);
	CHECK_EQ(s->data_start, 1047);
	CHECK_EQ(s->ditto_pages, 2);
	CHECK_EQ(s->ditto_copies, 1);
	CHECK_EQ(s->csum_copies, 3);
	CHECK_EQ(s->cmap_start, 1);
	CHECK_EQ(s->cmap_pages, 1);
	CHECK_EQ(s->csum, 0xd8f19b2ef918b544ull);
	CHECK_EQ(dg_dsuper_decode(s, &out), 0);
	s->label[5] = 'x';
	CHECK_EQ(dg_dsuper_decode(s, &out), -EUCLEAN);
	s->magic ^= 1;
	CHECK_EQ(dg_dsuper_decode(s, &out), -ENODEV);
	free(s);
}

/* Journal copies: parity + 2 where there are that many devices on a
 * volume with JOURNAL_COPIES (as checksum pages), parity + 1 on one made
 * without it; a superblock whose jrnl_devs does not match its flag does
 * not decode. */
static void test_journal_copies_geometry(void)
{
	static const struct { unsigned ndev, parity, wide, legacy; } t[] = {
		{ 1, 0, 1, 1 }, { 2, 0, 2, 2 }, { 4, 0, 2, 2 },
		{ 2, 1, 2, 2 }, { 3, 1, 3, 2 }, { 4, 1, 3, 2 },
		{ 16, 1, 3, 2 }, { 3, 2, 3, 3 }, { 4, 2, 4, 3 },
		{ 5, 2, 4, 3 }, { 16, 2, 4, 3 },
	};
	struct dg_dsuper *s = aligned_alloc(PG, PG), out;

	REQUIRE(s);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CHECK_EQ(dg_geom_jrnl_devs(t[i].ndev, t[i].parity,
					   DG_FEAT_INCOMPAT_JOURNAL_COPIES),
			 t[i].wide);
		CHECK_EQ(dg_geom_jrnl_devs(t[i].ndev, t[i].parity, 0),
			 t[i].legacy);
		CHECK(t[i].wide <= DG_MAX_JCOPIES);
	}
	memset(s, 0, PG);
	s->magic = DG_SUPER_MAGIC;
	s->version = DG_FORMAT_VERSION;
	s->dev_count = 4;
	s->parity = 1;
	s->chunk_pages = 256;
	s->incompat = DG_FEAT_INCOMPAT_JOURNAL_COPIES;
	dg_geom_layout(s, 4096, 256, 4, 1, 0);
	CHECK_EQ(s->jrnl_devs, 3);
	/* The journal copies change no other field of the layout. */
	CHECK_EQ(s->rows, 2816);
	CHECK_EQ(s->data_start, 1047);
	dg_dsuper_seal(s);
	CHECK_EQ(dg_dsuper_decode(s, &out), 0);
	s->jrnl_devs = 2;
	dg_dsuper_seal(s);
	CHECK_EQ(dg_dsuper_decode(s, &out), -EUCLEAN);
	s->incompat = 0;
	dg_dsuper_seal(s);
	CHECK_EQ(dg_dsuper_decode(s, &out), 0);
	s->jrnl_devs = 3;
	dg_dsuper_seal(s);
	CHECK_EQ(dg_dsuper_decode(s, &out), -EUCLEAN);
	free(s);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "foreign", test_foreign },
		{ "blank", test_blank },
		{ "mixed_volumes", test_mixed_volumes },
		{ "order", test_order },
		{ "missing", test_missing },
		{ "stale", test_stale },
		{ "suspects", test_suspects },
		{ "truncated", test_truncated },
		{ "unknown_incompat", test_unknown_incompat },
		{ "unknown_compat", test_unknown_compat },
		{ "backup_super", test_backup_super },
		{ "busy", test_busy },
		{ "bad_sets", test_bad_sets },
		{ "format_refuses", test_format_refuses },
		{ "super_known_answer", test_super_known_answer },
		{ "journal_copies_geometry", test_journal_copies_geometry },
		{ "format_refuse_no_grow", test_format_refuse_no_grow },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
