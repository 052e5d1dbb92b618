// SPDX-License-Identifier: MIT
/* test_owner_memo.c -- fault batches of pages of files not in core
 * stream the inode table a burst, then at most once an interval,
 * whatever their number, and a page placed once is recalled (lost_pages.c). A made-up
 * clock: counts, not timings. */
#include "harness.h"
#include "owner_memo.h"

#define MS 1000000ll

static void test_scans_rate_limited(void)
{
	struct dg_owner_memo m = { 0 };
	unsigned scans = 0;
	int64_t now = 5 * MS;

	/* 1,000 batches, one a millisecond: a second of a failing device;
	 * the burst, then none. */
	for (unsigned i = 0; i < 1000; i++, now += MS)
		scans += dg_owner_memo_may_scan(&m, now);
	CHECK_EQ(scans, DG_OWNER_SCAN_BURST);
	/* An interval later, one more; then none again. */
	now += DG_OWNER_SCAN_INTERVAL_NS;
	CHECK(dg_owner_memo_may_scan(&m, now));
	CHECK(!dg_owner_memo_may_scan(&m, now + MS));
	CHECK_EQ(m.scans, DG_OWNER_SCAN_BURST + 1);
	/* 100,000 batches over 100 s: the burst and one each 10 s. */
	scans = 0;
	for (unsigned i = 0; i < 100000; i++, now += MS)
		scans += dg_owner_memo_may_scan(&m, now);
	CHECK(scans <= 100 * 1000 * MS / DG_OWNER_SCAN_INTERVAL_NS + 1);
	/* Quiet for long: the burst again, not more. */
	now += 1000 * DG_OWNER_SCAN_INTERVAL_NS;
	scans = 0;
	for (unsigned i = 0; i < 100; i++, now += MS)
		scans += dg_owner_memo_may_scan(&m, now);
	CHECK_EQ(scans, DG_OWNER_SCAN_BURST);
}

static void test_pages_recalled(void)
{
	struct dg_owner_memo m = { 0 };
	struct dg_lost_page lp[3] = { { 10, 7, 1 }, { 11, 0, 0 },
				      { 12, 8, 4 } }, got;

	dg_owner_memo_keep(&m, lp, 3);
	REQUIRE(dg_owner_memo_recall(&m, 12, &got));
	CHECK_EQ(got.ino, 8);
	CHECK_EQ(got.fpage, 4);
	REQUIRE(dg_owner_memo_recall(&m, 11, &got));
	CHECK_EQ(got.ino, 0);
	CHECK(!dg_owner_memo_recall(&m, 13, &got));
	/* Newer findings replace the page's older one; the ring keeps the
	 * last DG_OWNER_MEMO_PAGES pages. */
	lp[0].ino = 9;
	dg_owner_memo_keep(&m, lp, 1);
	REQUIRE(dg_owner_memo_recall(&m, 10, &got));
	CHECK_EQ(got.ino, 9);
	for (uint64_t v = 100; v < 100 + DG_OWNER_MEMO_PAGES; v++) {
		struct dg_lost_page p = { v, v, 0 };

		dg_owner_memo_keep(&m, &p, 1);
	}
	CHECK(!dg_owner_memo_recall(&m, 10, &got));
	REQUIRE(dg_owner_memo_recall(&m, 100, &got));
	CHECK_EQ(got.ino, 100);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "scans_rate_limited", test_scans_rate_limited },
		{ "pages_recalled", test_pages_recalled },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
