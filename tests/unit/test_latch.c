// SPDX-License-Identifier: MIT
/* test_latch.c -- a persist that fails latches the volume read-only with
 * a reason; whichever persist of an update fails, the next open finds
 * the update all there or not at all, and redundancy consistent */
#include "harness.h"
#include "media.h"
#include "volume_i.h"

#define PG DG_PAGE_SIZE

/* The media hook (media.h): persist number fail_at (1, 2, ...) after
 * arming fails with EIO; 0 fails none. */
struct failer {
	uint64_t persists, fail_at;
};

static void obs_write(void *arg, const char *path, uint64_t off,
		      const void *src, size_t len)
{
	(void)arg, (void)path, (void)off, (void)src, (void)len;
}

static int obs_persist(void *arg, const char *path, uint64_t off, size_t len)
{
	struct failer *f = arg;

	(void)path, (void)off, (void)len;
	return ++f->persists == f->fail_at ? -EIO : 0;
}

/* A round (media.h) is one persist: it fails whole or not at all. */
static int obs_round(void *arg, const struct dg_obs_span *s, unsigned n)
{
	struct failer *f = arg;

	(void)s, (void)n;
	return ++f->persists == f->fail_at ? -EIO : 0;
}

static void fill(uint8_t *p, uint64_t seed)
{
	trand_fill(&seed, p, 2 * PG);
}

/* An update of two pages with persist k failing: EIO (or 0 when it has
 * fewer persists), then the latch, and after a reopen old or new whole,
 * with a clean scrub. Returns how many persists the update made. */
static uint64_t fail_one(uint64_t k)
{
	struct failer f = { 0, 0 };
	struct dg_media_observer obs = { obs_write, obs_persist, &f,
					 obs_round };
	uint8_t *old = aligned_alloc(PG, 2 * PG), *new = aligned_alloc(PG, 2 * PG);
	uint8_t *got = aligned_alloc(PG, 2 * PG);
	struct dg_range r[2];
	struct dg_vol_info in;
	struct dg_vol *vol;
	struct tvol tv;
	uint64_t made = 0;
	int ret;

	if (!old || !new || !got) {
		CHECK(!"out of memory");
		goto out;
	}
	tvol_make(&tv, "latch", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	if (!vol) {
		CHECK(vol);
		goto out_tv;
	}
	fill(old, 1);
	fill(new, 2 + k);
	r[0] = (struct dg_range){ 100, 0, PG, old };
	r[1] = (struct dg_range){ 101, 0, PG, old + PG };
	CHECK_EQ(dg_apply(vol, r, 2), 0);
	r[0].data = new;
	r[1].data = new + PG;
	dg_vol_set_observer(vol, &obs);
	f.fail_at = k;
	ret = dg_apply(vol, r, 2);
	made = f.persists;
	dg_vol_set_observer(vol, NULL);
	dg_vol_get_info(vol, &in);
	if (k <= made) {
		CHECK_EQ(ret, -EIO);
		CHECK(in.read_only);
		CHECK(strstr(in.failed, "persist of") != NULL);
		CHECK_EQ(dg_apply(vol, r, 1), -EROFS);
		CHECK_EQ(dg_vol_sync(vol), -EIO);
	} else {
		CHECK_EQ(ret, 0);
		CHECK(!in.read_only && !in.failed[0]);
	}
	/* Reads go on from what is in memory and on the media. */
	CHECK_EQ(dg_read(vol, 100, 2, got), 0);
	dg_vol_close(vol);

	vol = tvol_open(&tv, 0);
	if (!vol) {
		CHECK(vol);
		goto out_tv;
	}
	CHECK_EQ(dg_read(vol, 100, 2, got), 0);
	CHECK(!memcmp(got, old, 2 * PG) || !memcmp(got, new, 2 * PG));
	if (ret == 0)
		CHECK(!memcmp(got, new, 2 * PG));
	SCRUB_CLEAN(vol, false);
	dg_vol_get_info(vol, &in);
	CHECK(!in.read_only && !in.failed[0]);
	dg_vol_close(vol);
out_tv:
	tvol_cleanup(&tv);
out:
	free(old);
	free(new);
	free(got);
	return made;
}

static void every_persist_of_an_update_may_fail(void)
{
	uint64_t n = fail_one(UINT64_MAX);	/* none fails: count them */

	/* journal; data, parity and checksums (their copies together on
	 * this parity 1 volume, DG_FEAT_INCOMPAT_COPIES_TOGETHER) */
	CHECK(n >= 2);
	for (uint64_t k = 1; k <= n; k++)
		fail_one(k);
}

/* The same for a write of new rows (apply.c: reserved, written before
 * the update's entry, then the entry): a band of fresh pages in one
 * txn, persist k failing. After a reopen the pages are allocated and
 * new, or free; either way the scrub finds every row consistent (the
 * replay of a reservation whose update never came makes the rows so).
 * *madep: how many persists the commit made. */
#define NEW_PAGES 192u
static void fail_one_new_rows(uint64_t k, uint64_t *madep)
{
	struct failer f = { 0, 0 };
	struct dg_media_observer obs = { obs_write, obs_persist, &f,
					 obs_round };
	uint8_t *new = aligned_alloc(PG, NEW_PAGES * PG);
	uint8_t *got = aligned_alloc(PG, PG);
	struct dg_vrun runs[DG_MAX_DEVS];
	struct dg_vol_info in;
	struct dg_txn *t = NULL;
	struct dg_vol *vol;
	struct tvol tv;
	uint64_t made = 0, seed = 40 + k, done = 0;
	unsigned nr = 0;
	int ret;

	REQUIRE(new && got);
	trand_fill(&seed, new, NEW_PAGES * PG);
	tvol_make(&tv, "latchnew", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	t = dg_txn_new(vol);
	REQUIRE(t);
	REQUIRE(dg_alloc_rows(t, 0, NEW_PAGES, runs, &nr) == 0);
	CHECK_EQ(nr, 3);
	for (unsigned i = 0; i < nr; i++)
		for (uint64_t p = 0; p < runs[i].n; p++, done++)
			REQUIRE(dg_txn_write_ref(t, runs[i].vpn + p, 0,
						 new + done * PG, PG) == 0);
	CHECK_EQ(done, NEW_PAGES);
	dg_vol_set_observer(vol, &obs);
	f.fail_at = k;
	ret = dg_txn_commit(t);
	made = f.persists;
	dg_vol_set_observer(vol, NULL);
	dg_txn_free(t);
	*madep = made;
	dg_vol_get_info(vol, &in);
	if (k <= made) {
		CHECK(ret != 0);
		CHECK(in.read_only);
	} else {
		CHECK_EQ(ret, 0);
		CHECK_EQ(in.rows_new, NEW_PAGES / 3);
	}
	dg_vol_close(vol);

	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	done = 0;
	for (unsigned i = 0; i < nr; i++) {
		bool used = dg_vpn_allocated(vol, runs[i].vpn);

		CHECK(ret != 0 || used);
		for (uint64_t p = 0; p < runs[i].n; p++, done++) {
			CHECK_EQ(dg_vpn_allocated(vol, runs[i].vpn + p), used);
			if (!used)
				continue;
			CHECK_EQ(dg_read(vol, runs[i].vpn + p, 1, got), 0);
			CHECK(!memcmp(got, new + done * PG, PG));
		}
	}
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(new);
	free(got);
}

static void every_persist_of_new_rows_may_fail(void)
{
	uint64_t n = 0, m;

	fail_one_new_rows(UINT64_MAX, &n);	/* none fails: count them */
	/* reservation, rows with their checksums, entry, the rest */
	CHECK(n >= 4);
	for (uint64_t k = 1; k <= n; k++)
		fail_one_new_rows(k, &m);
}

static const struct test_case cases[] = {
	{ "every_persist_of_an_update_may_fail",
	  every_persist_of_an_update_may_fail },
	{ "every_persist_of_new_rows_may_fail",
	  every_persist_of_new_rows_may_fail },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return test_main(argc, argv, cases);
}
