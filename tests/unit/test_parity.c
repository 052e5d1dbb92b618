// SPDX-License-Identifier: MIT
/* test_parity.c -- ISA-L XOR and Reed-Solomon parity against references */
#include "harness.h"
#include "volume_i.h"

#define PG DG_PAGE_SIZE

/* A bare volume that only carries the parity geometry and tables. */
static struct dg_vol *pvol_new(unsigned k, unsigned parity)
{
	struct dg_vol *vol = calloc(1, sizeof(*vol));

	if (!vol)
		return NULL;
	vol->ndev = k + parity;
	vol->parity = parity;
	vol->k = k;
	if (dg_parity_init(vol)) {
		free(vol);
		return NULL;
	}
	return vol;
}

static void pvol_free(struct dg_vol *vol)
{
	dg_parity_fini(vol);
	free(vol);
}

/* GF(2^8) with ISA-L's polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d). */
static uint8_t gf_mul_ref(uint8_t a, uint8_t b)
{
	uint8_t r = 0;

	while (b) {
		if (b & 1)
			r ^= a;
		a = (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1d : 0));
		b >>= 1;
	}
	return r;
}

/* format.h: P = XOR of the data, Q = sum of 2^i * D_i. A plain byte
 * loop, independent of ISA-L. */
static void parity_ref(unsigned k, unsigned parity, uint8_t **data,
		       uint8_t *p, uint8_t *q, size_t len)
{
	for (size_t b = 0; b < len; b++) {
		uint8_t x = 0, y = 0, g = 1;

		for (unsigned i = 0; i < k; i++) {
			x ^= data[i][b];
			y ^= gf_mul_ref(g, data[i][b]);
			g = gf_mul_ref(g, 2);
		}
		p[b] = x;
		if (parity > 1)
			q[b] = y;
	}
}

/* Pages of one row: k data, then parity; a pristine copy of each. */
struct prow {
	unsigned k, parity, m;
	uint8_t *mem;
	uint8_t *pg[DG_MAX_DEVS], *orig[DG_MAX_DEVS];
};

static bool prow_init(struct prow *r, unsigned k, unsigned parity,
		      uint64_t *seed)
{
	r->k = k;
	r->parity = parity;
	r->m = k + parity;
	r->mem = aligned_alloc(PG, 2ul * r->m * PG);
	if (!r->mem)
		return false;
	for (unsigned i = 0; i < r->m; i++) {
		r->pg[i] = r->mem + (size_t)i * PG;
		r->orig[i] = r->mem + (size_t)(r->m + i) * PG;
	}
	for (unsigned i = 0; i < k; i++)
		trand_fill(seed, r->pg[i], PG);
	return true;
}

static void prow_save(struct prow *r)
{
	for (unsigned i = 0; i < r->m; i++)
		memcpy(r->orig[i], r->pg[i], PG);
}

static void prow_restore(struct prow *r)
{
	for (unsigned i = 0; i < r->m; i++)
		memcpy(r->pg[i], r->orig[i], PG);
}

static bool prow_intact(const struct prow *r)
{
	for (unsigned i = 0; i < r->m; i++)
		if (memcmp(r->orig[i], r->pg[i], PG))
			return false;
	return true;
}

/* Lose the positions set in mask (garbage over them), rebuild, compare. */
static int lose_and_rebuild(const struct dg_vol *vol, struct prow *r,
			    uint32_t mask, uint64_t *seed)
{
	bool lost[DG_MAX_DEVS] = { false };
	int ret;

	for (unsigned i = 0; i < r->m; i++) {
		if (!(mask & (1u << i)))
			continue;
		lost[i] = true;
		trand_fill(seed, r->pg[i], PG);
	}
	ret = dg_parity_rebuild(vol, r->pg, lost, PG);
	if (ret)
		return ret;
	return prow_intact(r) ? 0 : 1;
}

/*
 * For every width, random data, parity by dg_parity_compute(), which
 * must match the byte-loop reference; then every single position (and
 * with two parity pages every pair) is lost and rebuilt exactly.
 */
static void rebuild_all(unsigned parity, unsigned kmax)
{
	uint64_t seed = 0x5eed0000 + parity;

	for (unsigned k = 1; k <= kmax; k++) {
		struct dg_vol *vol = pvol_new(k, parity);
		uint8_t *ref;
		struct prow r;
		unsigned bad = 0;

		REQUIRE(vol);
		ref = aligned_alloc(PG, 2 * PG);
		REQUIRE(ref);
		REQUIRE(prow_init(&r, k, parity, &seed));
		dg_parity_compute(vol, r.pg, r.pg + k, PG);
		parity_ref(k, parity, r.pg, ref, ref + PG, PG);
		CHECK(memcmp(r.pg[k], ref, PG) == 0);
		if (parity > 1)
			CHECK(memcmp(r.pg[k + 1], ref + PG, PG) == 0);
		prow_save(&r);

		for (unsigned i = 0; i < r.m; i++)
			if (lose_and_rebuild(vol, &r, 1u << i, &seed)) {
				fprintf(stderr, "k=%u P=%u: position %u not "
					"rebuilt\n", k, parity, i);
				bad++;
				prow_restore(&r);
			}
		for (unsigned i = 0; parity > 1 && i < r.m; i++)
			for (unsigned j = i + 1; j < r.m; j++)
				if (lose_and_rebuild(vol, &r,
						     (1u << i) | (1u << j),
						     &seed)) {
					fprintf(stderr, "k=%u P=%u: positions "
						"%u,%u not rebuilt\n", k,
						parity, i, j);
					bad++;
					prow_restore(&r);
				}
		CHECK_EQ(bad, 0);
		free(r.mem);
		free(ref);
		pvol_free(vol);
	}
}

static void test_rebuild_p1(void)
{
	rebuild_all(1, DG_MAX_DEVS - 1);
}

static void test_rebuild_p2(void)
{
	rebuild_all(2, DG_MAX_DEVS - 2);
}

/* More lost pages than parity: -EIO, and no lost page is "rebuilt". */
static void test_too_many_lost(void)
{
	uint64_t seed = 77;

	for (unsigned parity = 1; parity <= DG_MAX_PARITY; parity++) {
		struct dg_vol *vol = pvol_new(4, parity);
		bool lost[DG_MAX_DEVS] = { false };
		struct prow r;

		REQUIRE(vol);
		REQUIRE(prow_init(&r, 4, parity, &seed));
		dg_parity_compute(vol, r.pg, r.pg + 4, PG);
		for (unsigned i = 0; i <= parity; i++)
			lost[i] = true;
		CHECK_EQ(dg_parity_rebuild(vol, r.pg, lost, PG), -EIO);
		/* Nothing lost: nothing to do. */
		memset(lost, 0, sizeof(lost));
		prow_save(&r);
		CHECK_EQ(dg_parity_rebuild(vol, r.pg, lost, PG), 0);
		CHECK(prow_intact(&r));
		free(r.mem);
		pvol_free(vol);
	}
}

/*
 * Pangolin-style delta: change a random cache-line aligned span of one
 * data page, patch the parity with old ^ new over that span only; the
 * result must equal parity recomputed from scratch.
 */
static void delta_rounds(unsigned k, unsigned parity, unsigned rounds)
{
	uint64_t seed = 0xde17a + k * 8 + parity;
	struct dg_vol *vol = pvol_new(k, parity);
	uint8_t *calc, *old, *delta, *par[DG_MAX_PARITY], *cp[DG_MAX_PARITY];
	struct prow r;

	REQUIRE(vol);
	calc = aligned_alloc(PG, DG_MAX_PARITY * PG);
	old = aligned_alloc(PG, PG);
	delta = aligned_alloc(PG, PG);
	REQUIRE(calc && old && delta);
	REQUIRE(prow_init(&r, k, parity, &seed));
	dg_parity_compute(vol, r.pg, r.pg + k, PG);
	for (unsigned j = 0; j < parity; j++)
		cp[j] = calc + (size_t)j * PG;

	for (unsigned n = 0; n < rounds; n++) {
		unsigned rank = (unsigned)(trand(&seed) % k);
		uint32_t lines = PG / DG_LINE_SIZE;
		uint32_t a = (uint32_t)(trand(&seed) % lines);
		uint32_t b = (uint32_t)(trand(&seed) % lines);
		uint32_t lo, hi;

		if (a > b) {
			uint32_t t = a;

			a = b;
			b = t;
		}
		lo = a * DG_LINE_SIZE;
		hi = (b + 1) * DG_LINE_SIZE;
		memcpy(old + lo, r.pg[rank] + lo, hi - lo);
		trand_fill(&seed, r.pg[rank] + lo, hi - lo);
		for (unsigned j = 0; j < parity; j++)
			par[j] = r.pg[k + j] + lo;
		dg_parity_patch(vol, rank, old + lo, r.pg[rank] + lo,
				delta + lo, hi - lo, par);

		dg_parity_compute(vol, r.pg, cp, PG);
		for (unsigned j = 0; j < parity; j++)
			if (memcmp(cp[j], r.pg[k + j], PG)) {
				fprintf(stderr, "k=%u P=%u round %u: parity %u "
					"after delta [%u,%u) of rank %u "
					"differs from recompute\n", k, parity,
					n, j, lo, hi, rank);
				CHECK(0);
				goto out;
			}
	}
	/* And the patched parity still matches the plain reference. */
	parity_ref(k, parity, r.pg, calc, calc + PG, PG);
	CHECK(memcmp(calc, r.pg[k], PG) == 0);
	if (parity > 1)
		CHECK(memcmp(calc + PG, r.pg[k + 1], PG) == 0);
out:
	free(r.mem);
	free(calc);
	free(old);
	free(delta);
	pvol_free(vol);
}

static void test_delta_p1(void)
{
	for (unsigned k = 1; k <= DG_MAX_DEVS - 1; k++)
		delta_rounds(k, 1, 200);
}

static void test_delta_p2(void)
{
	for (unsigned k = 1; k <= DG_MAX_DEVS - 2; k++)
		delta_rounds(k, 2, 200);
}

/* Parity is linear: compute over a sub-range equals the same bytes of a
 * whole-page compute (apply and scrub rely on spans and pages agreeing). */
static void test_span_compute(void)
{
	uint64_t seed = 4242;
	struct dg_vol *vol = pvol_new(5, 2);
	uint8_t *sub[DG_MAX_DEVS], *out, *par[DG_MAX_PARITY];
	struct prow r;

	REQUIRE(vol);
	REQUIRE(prow_init(&r, 5, 2, &seed));
	out = aligned_alloc(PG, 2 * PG);
	REQUIRE(out);
	dg_parity_compute(vol, r.pg, r.pg + 5, PG);
	for (unsigned lo = 0; lo < PG; lo += 448) {
		uint32_t len = DG_LINE_SIZE * (1 + lo % 7);

		if (lo + len > PG)
			len = PG - lo;
		for (unsigned i = 0; i < 5; i++)
			sub[i] = r.pg[i] + lo;
		par[0] = out;
		par[1] = out + PG;
		dg_parity_compute(vol, sub, par, len);
		CHECK(memcmp(out, r.pg[5] + lo, len) == 0);
		CHECK(memcmp(out + PG, r.pg[6] + lo, len) == 0);
	}
	free(out);
	free(r.mem);
	pvol_free(vol);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "rebuild_p1", test_rebuild_p1 },
		{ "rebuild_p2", test_rebuild_p2 },
		{ "too_many_lost", test_too_many_lost },
		{ "delta_p1", test_delta_p1 },
		{ "delta_p2", test_delta_p2 },
		{ "span_compute", test_span_compute },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
