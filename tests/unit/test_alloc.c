// SPDX-License-Identifier: MIT
/* test_alloc.c -- the allocation bitmap: txns, alloc, free, persistence */
#include "harness.h"
#include "bmap.h"

#define PG DG_PAGE_SIZE

/* What the test believes is allocated, one byte per vpn. */
struct amodel {
	uint64_t vpns, cp, meta, used;
	uint8_t *map;
};

/* Start from the volume's own view (the root, the bitmap and whatever
 * dg_format() put in place). */
static bool model_load(struct amodel *m, struct dg_vol *vol)
{
	struct dg_vol_info info;

	dg_vol_get_info(vol, &info);
	m->vpns = info.vpns;
	m->cp = info.chunk_pages;
	m->meta = vol->meta_vpns;
	m->used = 0;
	m->map = calloc(m->vpns, 1);
	if (!m->map)
		return false;
	for (uint64_t v = 0; v < m->vpns; v++) {
		m->map[v] = dg_vpn_allocated(vol, v);
		m->used += m->map[v];
	}
	return true;
}

/* The volume agrees with the model, vpn by vpn and in its free count. */
static bool model_matches(const struct amodel *m, struct dg_vol *vol)
{
	uint64_t bad = 0;

	for (uint64_t v = 0; v < m->vpns; v++)
		if (dg_vpn_allocated(vol, v) != (bool)m->map[v]) {
			if (bad++ < 5)
				fprintf(stderr, "vpn %llu: volume says %d\n",
					(unsigned long long)v, !m->map[v]);
		}
	if (dg_free_vpns(vol) != m->vpns - m->used) {
		fprintf(stderr, "free count %llu, model %llu\n",
			(unsigned long long)dg_free_vpns(vol),
			(unsigned long long)(m->vpns - m->used));
		bad++;
	}
	return bad == 0;
}

static void model_set(struct amodel *m, uint64_t s, uint64_t n, bool on)
{
	for (uint64_t v = s; v < s + n; v++) {
		m->used += on ? !m->map[v] : -(uint64_t)m->map[v];
		m->map[v] = on;
	}
}

/*
 * One dg_alloc() checked against the model: inside the volume, past the
 * metadata, no more than asked, nothing already used,
 * and marked at once. Returns 0, -ENOSPC, or 1 when a check failed.
 */
static int alloc_checked(struct dg_txn *t, struct dg_vol *vol,
			 struct amodel *m, uint64_t hint, uint64_t want,
			 uint64_t *start, uint64_t *got)
{
	int ret = dg_alloc(t, hint, want, start, got);
	bool ok;

	if (ret)
		return ret;
	ok = *got >= 1 && *got <= want && *start >= m->meta &&
	     *start < m->vpns && *got <= m->vpns - *start;
	for (uint64_t v = *start; ok && v < *start + *got; v++)
		ok = !m->map[v] && dg_vpn_allocated(vol, v);
	if (!ok) {
		fprintf(stderr, "dg_alloc(hint %llu, want %llu) gave "
			"%llu+%llu\n",
			(unsigned long long)hint, (unsigned long long)want,
			(unsigned long long)*start, (unsigned long long)*got);
		return 1;
	}
	model_set(m, *start, *got, true);
	return 0;
}

static struct dg_vol *reopen(struct tvol *tv, struct dg_vol *vol)
{
	dg_vol_close(vol);
	return tvol_open(tv, 0);
}

/*
 * Allocate everything with random sizes and hints: no overlap, no
 * metadata; then -ENOSPC with nothing free. The
 * bitmap survives reopen; freeing makes room again, only there.
 */
static void test_fill_and_free(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	struct amodel m;
	uint64_t seed = 11, s, got, n = 0, cap = 4096;
	uint64_t (*ext)[2] = malloc(cap * sizeof(*ext));
	int ret;

	REQUIRE(ext);
	tvol_make(&tv, "afill", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(model_load(&m, vol));
	/* The root and the bitmap are always taken. */
	CHECK(m.meta >= 2);
	CHECK_EQ(m.meta, 1 + dg_div_up(m.vpns, 8ull * PG));
	for (uint64_t v = 0; v < m.meta; v++)
		CHECK(m.map[v]);
	CHECK(model_matches(&m, vol));

	t = dg_txn_new(vol);
	REQUIRE(t);
	for (;;) {
		static const uint64_t fixed[] = { 0, 1, ~0ull };
		uint64_t r = trand(&seed), hint, want = 1 + trand(&seed) % 300;

		if (r % 4 == 0)
			hint = fixed[(r >> 8) % 3];
		else if (r % 4 == 1)
			hint = m.vpns + (r >> 8) % 10;
		else
			hint = trand(&seed) % m.vpns;
		ret = alloc_checked(t, vol, &m, hint, want, &s, &got);
		if (ret)
			break;
		REQUIRE(n < cap);
		ext[n][0] = s;
		ext[n][1] = got;
		n++;
		CHECK_EQ(dg_free_vpns(vol), m.vpns - m.used);
	}
	CHECK_EQ(ret, -ENOSPC);
	CHECK_EQ(dg_free_vpns(vol), 0);
	CHECK_EQ(m.used, m.vpns);
	CHECK_EQ(dg_alloc(t, 0, 1, &s, &got), -ENOSPC);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
	CHECK(model_matches(&m, vol));

	vol = reopen(&tv, vol);
	REQUIRE(vol);
	CHECK(model_matches(&m, vol));
	CHECK_EQ(dg_free_vpns(vol), 0);

	/* Free every other extent in one txn. */
	t = dg_txn_new(vol);
	REQUIRE(t);
	for (uint64_t i = 0; i < n; i += 2)
		CHECK_EQ(dg_free(t, ext[i][0], ext[i][1]), 0);
	CHECK_EQ(dg_free_vpns(vol), 0); /* not before commit */
	REQUIRE(dg_txn_commit(t) == 0);
	for (uint64_t i = 0; i < n; i += 2)
		model_set(&m, ext[i][0], ext[i][1], false);
	dg_txn_free(t);
	CHECK(model_matches(&m, vol));
	CHECK(dg_free_vpns(vol) > 0);

	vol = reopen(&tv, vol);
	REQUIRE(vol);
	CHECK(model_matches(&m, vol));

	/* Refill: only the freed space comes back. */
	t = dg_txn_new(vol);
	REQUIRE(t);
	while ((ret = alloc_checked(t, vol, &m, trand(&seed) % m.vpns,
				    1 + trand(&seed) % 500, &s, &got)) == 0)
		;
	CHECK_EQ(ret, -ENOSPC);
	CHECK_EQ(dg_free_vpns(vol), 0);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
	vol = reopen(&tv, vol);
	REQUIRE(vol);
	CHECK(model_matches(&m, vol));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(m.map);
	free(ext);
}

/* A txn freed without commit gives its vpns back, in core and on media. */
static void test_abort(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	struct amodel m;
	uint64_t free0, s[8], got[8], total = 0, s2, got2;

	tvol_make(&tv, "aabort", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(model_load(&m, vol));
	free0 = dg_free_vpns(vol);

	t = dg_txn_new(vol);
	REQUIRE(t);
	for (int i = 0; i < 8; i++) {
		REQUIRE(alloc_checked(t, vol, &m, 0, 100, &s[i], &got[i]) ==
			0);
		total += got[i];
	}
	CHECK_EQ(dg_free_vpns(vol), free0 - total);
	dg_txn_free(t);
	for (int i = 0; i < 8; i++)
		model_set(&m, s[i], got[i], false);
	CHECK(model_matches(&m, vol));
	CHECK_EQ(dg_free_vpns(vol), free0);

	/* The same space is handed out again. */
	t = dg_txn_new(vol);
	REQUIRE(t);
	REQUIRE(alloc_checked(t, vol, &m, s[0], 100, &s2, &got2) == 0);
	CHECK_EQ(s2, s[0]);
	dg_txn_free(t);
	model_set(&m, s2, got2, false);

	/* A commit with no writes and no allocations is a no-op. */
	t = dg_txn_new(vol);
	REQUIRE(t);
	CHECK_EQ(dg_txn_commit(t), 0);
	dg_txn_free(t);

	vol = reopen(&tv, vol);
	REQUIRE(vol);
	CHECK(model_matches(&m, vol));
	CHECK_EQ(dg_free_vpns(vol), free0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(m.map);
}

/* Allocations committed with the data that uses them survive reopen. */
static void test_commit_persists(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	struct amodel m;
	uint64_t seed = 12, s[4], got[4];
	uint8_t *data = malloc(4 * 64 * PG), *buf = malloc(64 * PG);

	REQUIRE(data && buf);
	tvol_make(&tv, "apers", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(model_load(&m, vol));
	t = dg_txn_new(vol);
	REQUIRE(t);
	trand_fill(&seed, data, 4 * 64 * PG);
	for (int i = 0; i < 4; i++) {
		REQUIRE(alloc_checked(t, vol, &m, 0, 32, &s[i], &got[i]) == 0);
		/* Unaligned, spanning pages: the txn splits it. */
		CHECK_EQ(dg_txn_write(t, s[i], 100, data + i * 64 * PG,
				      (uint32_t)(got[i] * PG - 100)),
			 0);
	}
	CHECK_EQ(dg_txn_write(t, m.vpns, 0, data, 1), -EINVAL);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);

	vol = reopen(&tv, vol);
	REQUIRE(vol);
	CHECK(model_matches(&m, vol));
	for (int i = 0; i < 4; i++) {
		REQUIRE(dg_read(vol, s[i], got[i], buf) == 0);
		CHECK(memcmp(buf + 100, data + i * 64 * PG,
			     got[i] * PG - 100) == 0);
	}
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(m.map);
	free(data);
	free(buf);
}

/* Whether the bitmap on the media says vpn is in use (a read that
 * fails says yes: the checks below want it clear). */
static bool media_bit(struct dg_vol *vol, uint64_t vpn)
{
	static uint8_t pg[PG] __attribute__((aligned(PG)));
	const uint64_t per = PG * 8;

	if (dg_read(vol, vol->bitmap_vpn + vpn / per, 1, pg))
		return true;
	return pg[vpn % per / 8] >> (vpn % 8) & 1;
}

/*
 * A commit's bitmap bytes hold what it allocated and what commits made
 * durable before it, not what another open transaction has taken: that
 * one may never commit (a crash), and its page would then be marked in
 * use on the media with nothing using it. Parallel writers that
 * allocate a page each (remapped overwrites, appends) left such pages
 * after a kill for fsck to find (tests/e2e/test_parallel_journal.py).
 */
static void test_others_pending(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t1, *t2;
	uint64_t x, y, got;
	uint8_t *page = calloc(1, PG);

	REQUIRE(page);
	tvol_make(&tv, "apend", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	t1 = dg_txn_new(vol);
	t2 = dg_txn_new(vol);
	REQUIRE(t1 && t2);
	REQUIRE(dg_alloc(t1, 0, 1, &x, &got) == 0);
	REQUIRE(dg_alloc(t2, x + 1, 1, &y, &got) == 0);
	REQUIRE(y / (PG * 8) == x / (PG * 8));	/* one bitmap page */
	memset(page, 0x5a, PG);
	REQUIRE(dg_txn_write(t2, y, 0, page, PG) == 0);
	REQUIRE(dg_txn_commit(t2) == 0);
	CHECK(media_bit(vol, y));
	CHECK(!media_bit(vol, x));	/* t1's, not committed */
	CHECK(dg_vpn_allocated(vol, x));	/* in core: taken */
	REQUIRE(dg_txn_write(t1, x, 0, page, PG) == 0);
	REQUIRE(dg_txn_commit(t1) == 0);
	CHECK(media_bit(vol, x) && media_bit(vol, y));
	dg_txn_free(t1);
	dg_txn_free(t2);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(page);
}

/*
 * A free takes effect only at commit: until then the vpns stay taken
 * and nobody else gets them (the metadata that stopped using them is
 * not durable yet). An aborted free changes nothing.
 */
static void test_free_at_commit(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t, *t2, *t3;
	struct amodel m;
	uint64_t x, xn, s[4], got[4], free1;

	tvol_make(&tv, "afree", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(model_load(&m, vol));
	t = dg_txn_new(vol);
	REQUIRE(t);
	REQUIRE(alloc_checked(t, vol, &m, 3 * m.cp, 64, &x, &xn) == 0);
	REQUIRE(dg_txn_commit(t) == 0);
	free1 = dg_free_vpns(vol);

	/* An aborted free. */
	CHECK_EQ(dg_free(t, x, xn), 0);
	dg_txn_free(t);
	CHECK(model_matches(&m, vol));

	t2 = dg_txn_new(vol);
	t3 = dg_txn_new(vol);
	REQUIRE(t2 && t3);
	CHECK_EQ(dg_free(t2, x, xn), 0);
	CHECK(dg_vpn_allocated(vol, x));
	CHECK(dg_vpn_allocated(vol, x + xn - 1));
	CHECK_EQ(dg_free_vpns(vol), free1);
	/* Another txn asking right there does not get them. */
	for (int i = 0; i < 4; i++)
		REQUIRE(alloc_checked(t3, vol, &m, x, xn, &s[i], &got[i]) ==
			0);
	dg_txn_free(t3);
	for (int i = 0; i < 4; i++)
		model_set(&m, s[i], got[i], false);
	CHECK_EQ(dg_free_vpns(vol), free1);

	REQUIRE(dg_txn_commit(t2) == 0);
	model_set(&m, x, xn, false);
	CHECK(!dg_vpn_allocated(vol, x));
	CHECK_EQ(dg_free_vpns(vol), free1 + xn);
	CHECK(model_matches(&m, vol));
	dg_txn_free(t2);

	vol = reopen(&tv, vol);
	REQUIRE(vol);
	CHECK(model_matches(&m, vol));
	/* Free again: the space is there to take. */
	t = dg_txn_new(vol);
	REQUIRE(t);
	CHECK_EQ(alloc_checked(t, vol, &m, x, xn, &s[0], &got[0]), 0);
	CHECK_EQ(s[0], x);
	CHECK_EQ(got[0], xn);
	dg_txn_free(t);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(m.map);
}

/*
 * A run crosses chunk (and so device) boundaries when the space is free:
 * extents are vpn runs, and a file written in large pieces must not be
 * cut into chunk-sized extents.
 */
static void test_across_chunks(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	struct amodel m;
	uint64_t s, got;

	tvol_make(&tv, "achunk", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(model_load(&m, vol));
	t = dg_txn_new(vol);
	REQUIRE(t);
	for (uint64_t c = 5; c < 20; c += 4) {
		uint64_t hint = c * m.cp - 5;

		REQUIRE(!m.map[hint]);
		CHECK_EQ(alloc_checked(t, vol, &m, hint, 3 * m.cp, &s, &got),
			 0);
		CHECK_EQ(s, hint);
		CHECK_EQ(got, 3 * m.cp);
	}
	dg_txn_free(t);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(m.map);
}

/* Bad arguments are refused and change nothing. */
static void test_bad_args(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	struct amodel m;
	uint64_t s, got, free0, hole;

	tvol_make(&tv, "abad", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(model_load(&m, vol));
	free0 = dg_free_vpns(vol);
	t = dg_txn_new(vol);
	REQUIRE(t);
	CHECK_EQ(dg_alloc(t, 0, 0, &s, &got), -EINVAL);
	CHECK_EQ(dg_free(t, 0, 1), -EINVAL);		/* the root */
	CHECK_EQ(dg_free(t, m.meta - 1, 1), -EINVAL);	/* the bitmap */
	CHECK_EQ(dg_free(t, m.vpns, 1), -EINVAL);
	CHECK_EQ(dg_free(t, m.vpns - 1, 2), -EINVAL);
	CHECK_EQ(dg_free(t, m.meta, ~0ull), -EINVAL);
	/* Freeing what is not allocated is refused, not counted. */
	for (hole = m.vpns - 1; m.map[hole]; hole--)
		;
	CHECK(dg_free(t, hole, 1) < 0);
	CHECK_EQ(dg_txn_commit(t), 0);
	CHECK_EQ(dg_free_vpns(vol), free0);
	CHECK(model_matches(&m, vol));
	dg_txn_free(t);
	dg_vol_close(vol);

	/* On a read-only volume the commit fails and the vpns go back. */
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	t = dg_txn_new(vol);
	REQUIRE(t);
	if (dg_alloc(t, 0, 10, &s, &got) == 0) {
		CHECK_EQ(dg_txn_commit(t), -EROFS);
		CHECK_EQ(dg_free_vpns(vol), free0);
		CHECK(!dg_vpn_allocated(vol, s));
	}
	dg_txn_free(t);
	CHECK(model_matches(&m, vol));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(m.map);
}

/*
 * Two txns that both free one extent before either commits each pass
 * dg_free()'s check (the bits clear only at commit): the second commit
 * must be refused, or the free count drifts from the bitmap.
 */
/*
 * Unhinted allocations reuse freed space before untouched space (images
 * on tmpfs cost memory only where written); a file's home
 * (dg_alloc_home) moves the cursor past the span it reserves, so the
 * next unhinted allocation lands beyond it.
 */
static void test_reuse_and_home(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	uint64_t a, b, c, got, home;

	tvol_make(&tv, "areuse", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	t = dg_txn_new(vol);
	REQUIRE(t);
	REQUIRE(dg_alloc(t, 0, 100, &a, &got) == 0 && got == 100);
	REQUIRE(dg_alloc(t, 0, 100, &b, &got) == 0);
	CHECK(b >= a + 100);
	REQUIRE(dg_txn_commit(t) == 0);
	REQUIRE(dg_free(t, a, 100) == 0);
	REQUIRE(dg_txn_commit(t) == 0);
	REQUIRE(dg_alloc(t, 0, 50, &c, &got) == 0);
	CHECK_EQ(c, a);
	home = dg_alloc_home(vol, 300);
	CHECK_EQ(home, a + 50);
	REQUIRE(dg_alloc(t, home + 7, 1, &c, &got) == 0);
	CHECK_EQ(c, home + 7);		/* the hint is honoured */
	REQUIRE(dg_alloc(t, 0, 1, &c, &got) == 0);
	CHECK(c >= home + 300);		/* unhinted: past the home */
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/*
 * The metadata zone (format.h): whole chunks of rows at the start of
 * the vpns. Metadata goes there, file data outside, hinted or not;
 * a full zone sends metadata among the data rows (counted) instead of
 * failing, and a page freed in the zone is reused for metadata.
 */
static void test_zone_classes(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	struct dg_vol_info in;
	struct amodel m;
	uint64_t z, s, got, spilled = 0, last = 0;

	tvol_make(&tv, "azone", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(model_load(&m, vol));
	dg_vol_get_info(vol, &in);
	z = in.zone_vpns;
	CHECK(z > m.meta);
	CHECK_EQ(z % ((in.ndev - in.parity) * m.cp), 0);
	/* what dg_format() put there (the root directory) is in the zone */
	for (uint64_t v = m.meta; v < in.vpns; v++)
		if (m.map[v])
			CHECK(v < z);
	s = 0;
	for (uint64_t v = 0; v < z; v++)
		s += !m.map[v];
	CHECK_EQ(in.zone_free, s);
	t = dg_txn_new(vol);
	REQUIRE(t);

	REQUIRE(alloc_checked(t, vol, &m, 0, 10, &s, &got) == 0);
	CHECK(s >= z);				/* data: outside */
	REQUIRE(alloc_checked(t, vol, &m, m.meta + 5, 3, &s, &got) == 0);
	CHECK(s >= z);				/* even hinted inside */
	REQUIRE(dg_alloc_meta(t, 0, 1, &s, &got) == 0);
	model_set(&m, s, got, true);
	CHECK(s >= m.meta && s < z);		/* metadata: inside */
	REQUIRE(dg_alloc_meta(t, z + 100, 2, &s, &got) == 0);
	model_set(&m, s, got, true);
	CHECK(s >= m.meta && s + got <= z);	/* even hinted outside */
	REQUIRE(dg_alloc_exact(t, 64, true, &s) == 0);
	model_set(&m, s, 64, true);
	CHECK(s >= m.meta && s + 64 <= z);
	REQUIRE(dg_alloc_exact(t, 64, false, &s) == 0);
	model_set(&m, s, 64, true);
	CHECK(s >= z);
	REQUIRE(dg_txn_commit(t) == 0);
	CHECK(model_matches(&m, vol));

	/* Fill the zone with metadata: then it goes outside, counted. */
	while (!spilled) {
		REQUIRE(dg_alloc_meta(t, 0, 100, &s, &got) == 0);
		model_set(&m, s, got, true);
		if (s >= z)
			spilled = got;
		else
			CHECK(s + got <= z);	/* a run never crosses out */
		if (s < z)
			last = s;
	}
	dg_vol_get_info(vol, &in);
	CHECK_EQ(in.zone_free, 0);
	CHECK_EQ(vol->meta_spill, spilled);
	REQUIRE(dg_txn_commit(t) == 0);
	/* A zone page freed is metadata's again. */
	REQUIRE(dg_free(t, last, 1) == 0);
	model_set(&m, last, 1, false);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_vol_get_info(vol, &in);
	CHECK_EQ(in.zone_free, 1);
	REQUIRE(dg_alloc_meta(t, 0, 5, &s, &got) == 0);
	model_set(&m, s, got, true);
	CHECK_EQ(s, last);
	CHECK_EQ(got, 1);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
	CHECK(model_matches(&m, vol));

	vol = reopen(&tv, vol);
	REQUIRE(vol);
	CHECK(model_matches(&m, vol));
	dg_vol_get_info(vol, &in);
	CHECK_EQ(in.zone_free, 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(m.map);
}

static void test_double_free_pending(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t, *a, *b;
	struct amodel m;
	uint64_t x, xn;
	int ra, rb;

	tvol_make(&tv, "adbl", 3, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(model_load(&m, vol));
	t = dg_txn_new(vol);
	REQUIRE(t);
	REQUIRE(alloc_checked(t, vol, &m, 0, 32, &x, &xn) == 0);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
	a = dg_txn_new(vol);
	b = dg_txn_new(vol);
	REQUIRE(a && b);
	ra = dg_free(a, x, xn);
	rb = dg_free(b, x, xn);
	if (!ra)
		ra = dg_txn_commit(a);
	if (!rb)
		rb = dg_txn_commit(b);
	CHECK(ra == 0 || rb == 0);
	model_set(&m, x, xn, false);
	CHECK(model_matches(&m, vol));
	dg_txn_free(a);
	dg_txn_free(b);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(m.map);
}

/* Runs from dg_alloc_rows() lie on the same rows of distinct data
 * devices, in rank order, outside the zone, each first page of a row;
 * the model is told. Returns the pages given. */
static uint64_t rows_checked(struct dg_txn *t, struct dg_vol *vol,
			     struct amodel *m, uint64_t hint, uint64_t want,
			     struct dg_vrun *runs, unsigned *nr, int *retp)
{
	uint64_t total = 0;

	*retp = dg_alloc_rows(t, hint, want, runs, nr);
	if (*retp)
		return 0;
	CHECK(*nr >= 1 && *nr <= vol->k);
	for (unsigned r = 0; r < *nr; r++) {
		CHECK(runs[r].n >= 1);
		CHECK(runs[r].vpn + runs[r].n <= m->vpns);
		for (uint64_t v = runs[r].vpn; v < runs[r].vpn + runs[r].n;
		     v++)
			CHECK(!m->map[v]);
		model_set(m, runs[r].vpn, runs[r].n, true);
		total += runs[r].n;
		if (*nr == 1)
			continue;
		/* No longer than the run before it, at most one shorter
		 * than the first unless the band ran out (then all as long):
		 * one partial row at most; same rows. */
		CHECK(r == 0 || runs[r].n <= runs[r - 1].n);
		CHECK(runs[r].n + 1 >= runs[0].n || r == *nr - 1);
		for (uint64_t i = 0; i < runs[r].n; i++) {
			struct dg_loc a = dg_vpn_loc(vol, runs[0].vpn + i);
			struct dg_loc b = dg_vpn_loc(vol, runs[r].vpn + i);

			CHECK_EQ(a.row, b.row);
			CHECK(r == 0 || a.dev != b.dev);
		}
		CHECK(runs[r].vpn >= vol->zone_vpns);
	}
	CHECK(total >= 1 && total <= want);
	return total;
}

/*
 * Whole rows for file data: a band of rows free on every data device,
 * runs in rank order, the next band where the last ended, one plain run
 * for fewer pages than a band is worth, for a volume without parity,
 * and when no band is left; the volume fills to the last page.
 */
static void test_rows(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	struct amodel m;
	struct dg_vrun a[DG_MAX_DEVS], b[DG_MAX_DEVS];
	unsigned na, nb;
	uint64_t seed = 5, got;
	int ret;

	tvol_make(&tv, "arows", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(model_load(&m, vol));
	t = dg_txn_new(vol);
	REQUIRE(t);
	/* 256 pages on 3 data devices: 86 + 85 + 85, one partial row of
	 * one page (86 + 86 + 84 left two rows of two). */
	CHECK_EQ(rows_checked(t, vol, &m, 0, 256, a, &na, &ret), 256);
	CHECK_EQ(ret, 0);
	CHECK_EQ(na, 3);
	CHECK_EQ(a[0].n, 86);
	CHECK_EQ(a[1].n, 85);
	CHECK_EQ(a[2].n, 85);
	/* Appending (hint: where the last run ended) goes on below. */
	CHECK_EQ(rows_checked(t, vol, &m, a[2].vpn + a[2].n, 200, b, &nb,
			      &ret), 200);
	CHECK_EQ(nb, 3);
	CHECK_EQ(b[0].vpn, a[0].vpn + 86);
	/* Fewer pages than a band is worth (64 rows): one run. */
	CHECK_EQ(dg_alloc_band_pages(vol), 192);
	CHECK_EQ(rows_checked(t, vol, &m, 0, 191, b, &nb, &ret), 191);
	CHECK_EQ(nb, 1);
	/* A write larger than a chunk group: one group's worth at a time. */
	got = rows_checked(t, vol, &m, 0, 3 * m.cp + 5, b, &nb, &ret);
	CHECK_EQ(got, 3 * m.cp);	/* a later group is still empty */
	REQUIRE(dg_txn_commit(t) == 0);
	CHECK(model_matches(&m, vol));
	/* Fill it: bands while there are any, then plain runs. */
	for (;;) {
		got = rows_checked(t, vol, &m, trand(&seed) % m.vpns,
				   1 + trand(&seed) % 700, b, &nb, &ret);
		if (ret)
			break;
	}
	CHECK_EQ(ret, -ENOSPC);
	CHECK_EQ(dg_free_vpns(vol), 0);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
	vol = reopen(&tv, vol);
	REQUIRE(vol);
	CHECK(model_matches(&m, vol));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(m.map);

	/* No parity: nothing to gain, one run. */
	tvol_make(&tv, "arows0", 3, 0, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	t = dg_txn_new(vol);
	REQUIRE(t);
	REQUIRE(dg_alloc_rows(t, 0, 256, a, &na) == 0);
	CHECK_EQ(na, 1);
	CHECK_EQ(a[0].n, 256);
	dg_txn_free(t);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A volume whose free rows are all used on one device has no band: a
 * plain run. */
static void test_rows_fragmented(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	struct dg_vrun r[DG_MAX_DEVS];
	unsigned nr;
	uint64_t cp, s, got;

	tvol_make(&tv, "arowsf", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	cp = vol->sb.chunk_pages;
	t = dg_txn_new(vol);
	REQUIRE(t);
	/* Every other row of rank 0 of every group outside the zone. */
	for (uint64_t g = dg_div_up(vol->zone_vpns, vol->k * cp);
	     g < vol->vpns / (vol->k * cp); g++)
		for (uint64_t o = 0; o < cp; o += 2)
			REQUIRE(dg_alloc(t, g * vol->k * cp + o, 1, &s,
					 &got) == 0 &&
				s == g * vol->k * cp + o);
	REQUIRE(dg_alloc_rows(t, 0, 256, r, &nr) == 0);
	CHECK_EQ(nr, 1);
	dg_txn_free(t);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* The free-space walk (dumpfs) agrees with the model. */
static bool stats_match(const struct amodel *m, struct dg_vol *vol)
{
	struct dg_bm_stats st;
	uint64_t free = 0, zfree = 0, ext = 0, big = 0, run = 0;

	for (uint64_t v = 0; v < m->vpns; v++) {
		if (m->map[v]) {
			run = 0;
			continue;
		}
		free++;
		zfree += v < vol->zone_vpns;
		ext += run == 0;
		if (++run > big)
			big = run;
	}
	pthread_mutex_lock(&vol->alloc_lock);
	dg_bm_free_stats(vol, &st);
	pthread_mutex_unlock(&vol->alloc_lock);
	if (st.free != free || st.zone_free != zfree || st.extents != ext ||
	    st.largest != big) {
		fprintf(stderr, "stats %llu %llu %llu %llu, model %llu %llu "
			"%llu %llu\n", (unsigned long long)st.free,
			(unsigned long long)st.zone_free,
			(unsigned long long)st.extents,
			(unsigned long long)st.largest, (unsigned long long)free,
			(unsigned long long)zfree, (unsigned long long)ext,
			(unsigned long long)big);
		return false;
	}
	return free == dg_free_vpns(vol);
}

/* Take [s, s + n) whole in t (it is free): dg_alloc() from s on. */
static void take_range(struct dg_txn *t, struct dg_vol *vol,
		       struct amodel *m, uint64_t s, uint64_t n)
{
	for (uint64_t v = s; v < s + n;) {
		uint64_t start, got;

		REQUIRE(alloc_checked(t, vol, m, v, s + n - v, &start,
				      &got) == 0);
		REQUIRE(start == v);
		v += got;
	}
}

/*
 * The in-core bitmap is a table of pages (bmap.c): a page full or free
 * is held as a count, only a mixed one as its image, and the open reads
 * only pages that may have been written. Pages in every state -- full,
 * written then emptied, mixed, never written -- come back from a reopen
 * with exact bits and free counts, and a page held as "full" can be
 * freed from. With and without redundancy (no init map: every page is
 * read, and kept as compact).
 */
static void lazy_case(bool no_redundancy)
{
	const uint64_t B = DG_BM_BITS;
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	struct amodel m;
	uint64_t s, got;

	tvol_make(&tv, no_redundancy ? "alazyn" : "alazy", 4, no_redundancy ? 0 : 1,
		  256ull << 20, no_redundancy);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(vol->bitmap_pages >= 6);
	REQUIRE(vol->zone_vpns < B);
	REQUIRE(model_load(&m, vol));
	/* A fresh volume: the first page (the root's and bitmap's own
	 * bits) is the only one held whole. */
	CHECK_EQ(dg_bm_images(vol), 1);
	CHECK(model_matches(&m, vol));
	CHECK(stats_match(&m, vol));

	t = dg_txn_new(vol);
	REQUIRE(t);
	take_range(t, vol, &m, 2 * B, B);	/* page 2: full */
	take_range(t, vol, &m, 3 * B + 7, 100);	/* page 3: emptied below */
	take_range(t, vol, &m, 4 * B + 1, 10);	/* page 4: mixed */
	REQUIRE(dg_txn_commit(t) == 0);
	REQUIRE(dg_alloc(t, 3 * B + 7, 1, &s, &got) == 0); /* abort: back */
	dg_txn_free(t);
	t = dg_txn_new(vol);
	REQUIRE(t);
	REQUIRE(dg_free(t, 3 * B + 7, 100) == 0);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
	model_set(&m, 3 * B + 7, 100, false);
	CHECK(model_matches(&m, vol));
	/* Page 3 is free again: its image went. */
	CHECK(vol->bm[3].bits == NULL);
	CHECK_EQ(vol->bm[3].used, 0);

	vol = reopen(&tv, vol);
	REQUIRE(vol);
	CHECK(model_matches(&m, vol));
	CHECK_EQ(dg_bm_images(vol), 2);		/* pages 0 and 4 */
	CHECK(stats_match(&m, vol));
	CHECK(vol->bm[2].bits == NULL);
	CHECK_EQ(vol->bm[2].used, B);
	CHECK(vol->bm[3].bits == NULL && vol->bm[5].bits == NULL);

	/* Free from the page held as "full". */
	t = dg_txn_new(vol);
	REQUIRE(t);
	REQUIRE(dg_free(t, 2 * B + 500, 5) == 0);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
	model_set(&m, 2 * B + 500, 5, false);
	CHECK(model_matches(&m, vol));
	/* Allocation skips full pages and finds the hole. */
	t = dg_txn_new(vol);
	REQUIRE(t);
	REQUIRE(alloc_checked(t, vol, &m, 2 * B, 100, &s, &got) == 0);
	CHECK_EQ(s, 2 * B + 500);
	CHECK_EQ(got, 5);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
	vol = reopen(&tv, vol);
	REQUIRE(vol);
	CHECK(model_matches(&m, vol));
	CHECK(vol->bm[2].bits == NULL);		/* full again: a count */
	CHECK(stats_match(&m, vol));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(m.map);
}

/* Clear index i in every copy of the init map, each copy resealed as a
 * valid (older) page: a bit lost from the map on every device. */
static void map_lose_bit(struct tvol *tv, struct dg_vol *vol, uint64_t i)
{
	struct dg_dcmap *m = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint64_t p = i / DG_CMAP_BITS, b = i % DG_CMAP_BITS;

	REQUIRE(m);
	for (unsigned d = 0; d < tv->ndev; d++)
		for (unsigned slot = 0; slot < 2; slot++) {
			uint64_t off = (vol->sb.cmap_start +
					slot * vol->sb.cmap_pages + p) * PG;

			tvol_peek(tv, d, off, m, PG);
			REQUIRE(dg_cmap_page_check(vol, p, m) == 1);
			m->bits[b / 8] &= (uint8_t)~(1u << (b % 8));
			dg_cmap_page_seal(vol, p, m);
			tvol_poke(tv, d, off, m, PG);
		}
	free(m);
}

/*
 * Issue 34: the passes skip rows whose init map index is clear, and the
 * open reads only bitmap pages of set indexes. A bit lost from every
 * copy of the map (beyond parity: the map is on every device) must not
 * make pages in use unverified, nor a written bitmap page read as all
 * free: the open checks the map against the bitmap and the bitmap's
 * own rows against their checksum pages, and sets a lost bit again
 * (dg_cmap_recover()). Here the index of a file-data range and index 0
 * (the root's and the bitmap's rows) are lost, and a data page of the
 * range is damaged: the reopen must still see it allocated, and the
 * scrub find and repair the damaged page.
 */
static void test_map_bit_lost(void)
{
	const uint64_t n = 64;
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_txn *t;
	uint8_t *want = malloc(n * PG), *got = malloc(n * PG), junk[64];
	uint64_t start = 0, seed = 34, freev, idx, page, moff;
	struct dg_dcmap *m = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	struct dg_scrub_report sr = { 0 };
	struct dg_loc l;

	REQUIRE(want && got && m);
	tvol_make(&tv, "amapl", 4, 1, 256ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	t = dg_txn_new(vol);
	REQUIRE(t);
	REQUIRE(dg_alloc_exact(t, n, false, &start) == 0);
	trand_fill(&seed, want, n * PG);
	for (uint64_t i = 0; i < n; i++)
		REQUIRE(dg_txn_write(t, start + i, 0, want + i * PG, PG) == 0);
	REQUIRE(dg_txn_commit(t) == 0);
	dg_txn_free(t);
	freev = dg_free_vpns(vol);
	l = dg_vpn_loc(vol, start);
	idx = l.row / DG_CSUMS_PER_PAGE;
	REQUIRE(idx > 0);
	REQUIRE(dg_cmap_test(vol, idx) && dg_cmap_test(vol, 0));
	map_lose_bit(&tv, vol, idx);
	map_lose_bit(&tv, vol, 0);
	page = dg_row_page(vol, l.row);
	moff = (vol->sb.cmap_start + vol->sb.cmap_pages) * PG; /* slot 1 */
	dg_vol_close(vol);
	memset(junk, 0x5a, sizeof(junk));
	tvol_poke(&tv, l.dev, page * PG + 100, junk, sizeof(junk));

	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(dg_cmap_test(vol, 0));
	CHECK(dg_cmap_test(vol, idx));
	CHECK(dg_vpn_allocated(vol, start));
	CHECK(dg_vpn_allocated(vol, start + n - 1));
	CHECK_EQ(dg_free_vpns(vol), freev);
	CHECK_EQ(dg_vol_scrub(vol, true, &sr, NULL, NULL), 0);
	CHECK(sr.detected >= 1);
	CHECK_EQ(sr.unrecoverable, 0);
	REQUIRE(dg_read(vol, start, n, got) == 0);
	CHECK(!memcmp(got, want, n * PG));
	/* The bits were written back, on every device. */
	dg_vol_close(vol);
	for (unsigned d = 0; d < tv.ndev; d++) {
		tvol_peek(&tv, d, moff, m, PG);
		CHECK(m->bits[idx / 8] & (1u << (idx % 8)));
		CHECK(m->bits[0] & 1u);
	}
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(want);
	free(got);
	free(m);
}

static void test_lazy_pages(void)
{
	lazy_case(false);
}

static void test_lazy_pages_noredundancy(void)
{
	lazy_case(true);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "fill_and_free", test_fill_and_free },
		{ "abort", test_abort },
		{ "commit_persists", test_commit_persists },
		{ "free_at_commit", test_free_at_commit },
		{ "others_pending", test_others_pending },
		{ "across_chunks", test_across_chunks },
		{ "bad_args", test_bad_args },
		{ "double_free_pending", test_double_free_pending },
		{ "reuse_and_home", test_reuse_and_home },
		{ "zone_classes", test_zone_classes },
		{ "rows", test_rows },
		{ "rows_fragmented", test_rows_fragmented },
		{ "lazy_pages", test_lazy_pages },
		{ "lazy_pages_noredundancy", test_lazy_pages_noredundancy },
		{ "map_bit_lost", test_map_bit_lost },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
