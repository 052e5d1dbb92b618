/* SPDX-License-Identifier: MIT */
/* bsearch.h -- the one binary search, shared by the engine and libcommit */
#ifndef DG_BSEARCH_H
#define DG_BSEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Header only, so that libcommit (a separate library) and the engine
 * share it without either linking the other.
 *
 * The first index i in [lo, hi) for which before(set, i, key) is false,
 * or hi when there is none (lo when lo >= hi). before() must be true on
 * a prefix of [lo, hi) and false on the rest: the sorted-array question
 * "does element i lie wholly before key". Inline, so a caller's static
 * predicate is inlined too.
 */
static inline size_t dg_partition_point(size_t lo, size_t hi,
					bool (*before)(const void *set,
						       size_t i,
						       uint64_t key),
					const void *set, uint64_t key)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (before(set, mid, key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
