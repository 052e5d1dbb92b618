// SPDX-License-Identifier: MIT
/* test_bsearch.c -- dg_partition_point() against a linear scan */
#include "bsearch.h"
#include "harness.h"

/* Runs [start, start + len) sorted and disjoint, as extents and maps
 * keep them. */
struct run {
	uint64_t start, len;
};

static bool run_ends_by(const void *set, size_t i, uint64_t key)
{
	const struct run *r = set;

	return r[i].start + r[i].len <= key;
}

static size_t linear(const struct run *r, size_t lo, size_t hi, uint64_t key)
{
	while (lo < hi && run_ends_by(r, lo, key))
		lo++;
	return lo;
}

static void test_matches_linear_scan(void)
{
	struct run r[64];
	uint64_t at = 0, seed = 7;
	unsigned bad = 0;

	for (size_t n = 0; n <= 64; n++) {
		at = 0;
		for (size_t i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ull + 1;
			at += seed >> 61;	/* gaps of 0..7 */
			r[i].start = at;
			r[i].len = 1 + (seed >> 59 & 3);
			at += r[i].len;
		}
		for (uint64_t key = 0; key <= at + 2; key++)
			for (size_t lo = 0; lo <= n; lo++)
				bad += dg_partition_point(lo, n, run_ends_by,
							  r, key) !=
				       linear(r, lo, n, key);
	}
	CHECK_EQ(bad, 0);
}

static void test_empty_and_inverted_ranges(void)
{
	struct run r[1] = { { 10, 5 } };

	CHECK_EQ(dg_partition_point(0, 0, run_ends_by, r, 100), 0);
	CHECK_EQ(dg_partition_point(1, 0, run_ends_by, r, 100), 1);
	CHECK_EQ(dg_partition_point(0, 1, run_ends_by, r, 14), 0);
	CHECK_EQ(dg_partition_point(0, 1, run_ends_by, r, 15), 1);
}

static bool always_before(const void *set, size_t i, uint64_t key)
{
	(void)set;
	(void)i;
	(void)key;
	return true;
}

/* The midpoint is lo + (hi - lo) / 2, not (lo + hi) / 2: no wrap. */
static void test_no_overflow_near_size_max(void)
{
	size_t lo = SIZE_MAX - 3, hi = SIZE_MAX;

	CHECK_EQ(dg_partition_point(lo, hi, always_before, NULL, 0), hi);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "matches_linear_scan", test_matches_linear_scan },
		{ "empty_and_inverted_ranges", test_empty_and_inverted_ranges },
		{ "no_overflow_near_size_max", test_no_overflow_near_size_max },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
