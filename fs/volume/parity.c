// SPDX-License-Identifier: MIT
/* parity.c -- XOR and Reed-Solomon parity of a row through ISA-L */
#include <stdlib.h>
#include <string.h>
#include <isa-l/erasure_code.h>

#include "volume_i.h"

/*
 * The generator is ISA-L's gf_gen_rs_matrix(): identity for the k data
 * positions, then a row of ones (P = XOR) and a row of powers of 2
 * (Q, as RAID-6). It is MDS for the one and two parity rows we use.
 */
int dg_parity_init(struct dg_vol *vol)
{
	unsigned k = vol->k, m = k + vol->parity;

	if (!vol->parity)
		return 0;
	vol->ec_matrix = malloc(m * k);
	vol->ec_tables = malloc(32 * k * vol->parity);
	if (!vol->ec_matrix || !vol->ec_tables) {
		dg_parity_fini(vol);
		return -ENOMEM;
	}
	gf_gen_rs_matrix(vol->ec_matrix, (int)m, (int)k);
	ec_init_tables((int)k, (int)vol->parity, vol->ec_matrix + k * k,
		       vol->ec_tables);
	return 0;
}

void dg_parity_fini(struct dg_vol *vol)
{
	free(vol->ec_matrix);
	free(vol->ec_tables);
	vol->ec_matrix = vol->ec_tables = NULL;
}

/*
 * Parity 1 is P alone, the XOR of the data (the generator's row of
 * ones), so a whole row's is taken as XOR: the GF(2^8) dot product with
 * every coefficient 1 gives the same bytes for several times the
 * instructions (a quarter of the daemon's on 1 MiB writes). Our own loop,
 * not ISA-L's xor_gen(): its AVX2 and SSE versions store the parity past
 * the caches (non-temporal), and the update reads it back at once, to
 * hash it and to copy it to the device; plain stores leave it in the
 * cache. Loads and stores through memcpy: no alignment wanted. A patch
 * of P is XOR as well (dg_parity_patch()).
 */
typedef uint64_t xor_vec __attribute__((vector_size(32)));

/* Two accumulators of 32 bytes a step: pairs of SSE2 registers in the
 * generic build, one AVX2 register each in xor_row_avx2(). */
static inline __attribute__((always_inline)) void
xor_row_body(unsigned k, uint8_t *const *data, uint8_t *par, size_t len)
{
	size_t i = 0;

	for (; i + 2 * sizeof(xor_vec) <= len; i += 2 * sizeof(xor_vec)) {
		xor_vec a, b, x, y;

		memcpy(&a, data[0] + i, sizeof(a));
		memcpy(&b, data[0] + i + sizeof(a), sizeof(b));
		for (unsigned d = 1; d < k; d++) {
			memcpy(&x, data[d] + i, sizeof(x));
			memcpy(&y, data[d] + i + sizeof(x), sizeof(y));
			a ^= x;
			b ^= y;
		}
		memcpy(par + i, &a, sizeof(a));
		memcpy(par + i + sizeof(a), &b, sizeof(b));
	}
	for (; i < len; i++) {
		uint8_t c = data[0][i];

		for (unsigned d = 1; d < k; d++)
			c ^= data[d][i];
		par[i] = c;
	}
}

static void xor_row_generic(unsigned k, uint8_t *const *data, uint8_t *par,
			    size_t len)
{
	xor_row_body(k, data, par, len);
}

__attribute__((target("avx2")))
static void xor_row_avx2(unsigned k, uint8_t *const *data, uint8_t *par,
			 size_t len)
{
	xor_row_body(k, data, par, len);
}

/* Chosen at the call, not by an ifunc (target_clones): an ifunc's
 * resolver runs before ThreadSanitizer's runtime is up, and crashes
 * every sanitized binary. */
static void xor_row(unsigned k, uint8_t *const *data, uint8_t *par,
		    size_t len)
{
	if (__builtin_cpu_supports("avx2"))
		xor_row_avx2(k, data, par, len);
	else
		xor_row_generic(k, data, par, len);
}

/* d = a xor b over len bytes, a multiple of 32 (whole cache lines). */
static void xor_lines(uint8_t *d, const uint8_t *a, const uint8_t *b,
		      size_t len)
{
	for (size_t i = 0; i < len; i += sizeof(xor_vec)) {
		xor_vec x, y;

		memcpy(&x, a + i, sizeof(x));
		memcpy(&y, b + i, sizeof(y));
		x ^= y;
		memcpy(d + i, &x, sizeof(x));
	}
}

/* par ^= old ^ new over len bytes, a multiple of 32: P's patch in one
 * pass, with no delta page written and read back. */
static inline __attribute__((always_inline)) void
xor_patch_body(uint8_t *par, const uint8_t *old, const uint8_t *new,
	       size_t len)
{
	for (size_t i = 0; i < len; i += sizeof(xor_vec)) {
		xor_vec p, x, y;

		memcpy(&p, par + i, sizeof(p));
		memcpy(&x, old + i, sizeof(x));
		memcpy(&y, new + i, sizeof(y));
		p ^= x ^ y;
		memcpy(par + i, &p, sizeof(p));
	}
}

static void xor_patch_generic(uint8_t *par, const uint8_t *old,
			      const uint8_t *new, size_t len)
{
	xor_patch_body(par, old, new, len);
}

__attribute__((target("avx2")))
static void xor_patch_avx2(uint8_t *par, const uint8_t *old,
			   const uint8_t *new, size_t len)
{
	xor_patch_body(par, old, new, len);
}

/*
 * Parity patches from data diffs commute (XOR, and GF(2^8) sums for
 * Q, are associative and commutative); the caller holds the row lock,
 * so patches to one parity page do not interleave. Parity 1 is P, whose
 * coefficients are all 1: its patch is old ^ new XORed in, one pass over
 * the three buffers (a 4 KiB write's delta page and ISA-L's update of P
 * from it took 3,900 instructions, the pass 1,000 with AVX2). Q needs
 * the delta, multiplied by its rank's coefficient: ISA-L's update of
 * every parity row from the delta page.
 */
void dg_parity_patch(const struct dg_vol *vol, unsigned rank,
		     const uint8_t *old, const uint8_t *new, uint8_t *delta,
		     size_t len, uint8_t **parity)
{
	if (vol->parity == 1) {
		if (__builtin_cpu_supports("avx2"))
			xor_patch_avx2(parity[0], old, new, len);
		else
			xor_patch_generic(parity[0], old, new, len);
		return;
	}
	xor_lines(delta, old, new, len);
	ec_encode_data_update((int)len, (int)vol->k, (int)vol->parity,
			      (int)rank, vol->ec_tables, delta, parity);
}

void dg_parity_compute(const struct dg_vol *vol, uint8_t **data,
		       uint8_t **parity, size_t len)
{
	if (vol->parity == 1) {
		xor_row(vol->k, data, parity[0], len);
		return;
	}
	ec_encode_data((int)len, (int)vol->k, (int)vol->parity,
		       vol->ec_tables, data, parity);
}

int dg_parity_rebuild(const struct dg_vol *vol, uint8_t **pages,
		      const bool *lost, size_t len)
{
	unsigned k = vol->k, m = k + vol->parity, nlost = 0, nsurv = 0;
	unsigned surv[DG_MAX_DEVS], lostd[DG_MAX_DEVS], nlostd = 0;
	uint8_t b[DG_MAX_DEVS * DG_MAX_DEVS], inv[DG_MAX_DEVS * DG_MAX_DEVS];
	uint8_t c[DG_MAX_PARITY * DG_MAX_DEVS];
	uint8_t tbls[32 * DG_MAX_DEVS * DG_MAX_PARITY];
	uint8_t *src[DG_MAX_DEVS], *dst[DG_MAX_PARITY];

	for (unsigned i = 0; i < m; i++) {
		if (lost[i]) {
			nlost++;
			if (i < k)
				lostd[nlostd++] = i;
		} else if (nsurv < k) {
			surv[nsurv++] = i;
		}
	}
	if (nlost == 0)
		return 0;
	if (nlost > vol->parity)
		return -EIO;

	if (nlostd) {
		/* Invert the rows of the survivors; rows of the inverse
		 * give each lost data page from the survivors. */
		for (unsigned r = 0; r < k; r++)
			memcpy(b + r * k, vol->ec_matrix + surv[r] * k, k);
		if (gf_invert_matrix(b, inv, (int)k) < 0)
			return -EIO;
		for (unsigned r = 0; r < nlostd; r++) {
			memcpy(c + r * k, inv + lostd[r] * k, k);
			dst[r] = pages[lostd[r]];
		}
		for (unsigned r = 0; r < k; r++)
			src[r] = pages[surv[r]];
		ec_init_tables((int)k, (int)nlostd, c, tbls);
		ec_encode_data((int)len, (int)k, (int)nlostd, tbls, src, dst);
	}
	/* With every data page present again, lost parity is recomputed. */
	for (unsigned j = 0; j < vol->parity; j++) {
		if (!lost[k + j])
			continue;
		ec_init_tables((int)k, 1, vol->ec_matrix + (k + j) * k, tbls);
		dst[0] = pages[k + j];
		ec_encode_data((int)len, (int)k, 1, tbls, pages, dst);
	}
	return 0;
}
