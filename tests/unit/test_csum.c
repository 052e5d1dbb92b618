// SPDX-License-Identifier: MIT
/* test_csum.c -- address-seeded page checksums and checksum-page faults */
#include <xxhash.h>

#include "harness.h"
#include "volume_i.h"
#include "csum.h"

#define PG DG_PAGE_SIZE

#define CHECK_HEX(a, b)                                                    \
	do {                                                               \
		uint64_t a_ = (a), b_ = (b);                               \
		if (a_ != b_) {                                            \
			fprintf(stderr, "%s:%d: %s == %#018llx, want "     \
				"%#018llx\n", __FILE__, __LINE__, #a,      \
				(unsigned long long)a_,                    \
				(unsigned long long)b_);                   \
			test_failures++;                                   \
		}                                                          \
	} while (0)

/* A bare volume carrying only the checksum seed of uuid. */
static struct dg_vol *svol_new(const uint8_t uuid[16])
{
	struct dg_vol *vol = calloc(1, sizeof(*vol));

	if (vol)
		vol->seed = dg_seed_from_uuid(uuid);
	return vol;
}

static const uint8_t kat_uuid[16] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
				      0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
				      0xcc, 0xdd, 0xee, 0xff };

/* byte i = (i * 7 + 3) mod 256 */
static void kat_page(uint8_t *p)
{
	for (unsigned i = 0; i < PG; i++)
		p[i] = (uint8_t)(i * 7 + 3);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * One page content, many addresses and two volume identities: every
 * (uuid, dev, row) gives its own checksum, so a page that lands at, or
 * is read from, another address never verifies.
 */
static void test_seeded_distinct(void)
{
	static const uint64_t rows[] = { 0, 1, 2, 510, 511, 512, 1022, 1023,
					 4096, 65535, 1ull << 20,
					 (1ull << 28) + 5 };
	const unsigned nrows = sizeof(rows) / sizeof(rows[0]);
	uint8_t uuid2[16];
	struct dg_vol *v[2];
	uint64_t *cs, n = 0, c0;
	uint8_t *page = aligned_alloc(PG, PG);

	memcpy(uuid2, kat_uuid, 16);
	uuid2[15] ^= 1; /* one bit apart */
	v[0] = svol_new(kat_uuid);
	v[1] = svol_new(uuid2);
	cs = calloc(2 * DG_MAX_DEVS * nrows * 2, sizeof(*cs));
	REQUIRE(page && v[0] && v[1] && cs);
	CHECK(v[0]->seed != v[1]->seed);

	for (int z = 0; z < 2; z++) {
		if (z)
			memset(page, 0, PG); /* even the all-zero page */
		else
			kat_page(page);
		for (int i = 0; i < 2; i++)
			for (unsigned d = 0; d < DG_MAX_DEVS; d++)
				for (unsigned r = 0; r < nrows; r++) {
					uint64_t c = dg_csum_page(v[i], d,
								  rows[r],
								  page);

					CHECK(c != DG_CSUM_NONE);
					cs[n++] = c;
				}
	}
	qsort(cs, n, sizeof(*cs), u64_cmp);
	for (uint64_t i = 1; i < n; i++)
		if (cs[i] == cs[i - 1]) {
			fprintf(stderr, "checksum %#llx repeats across "
				"addresses\n", (unsigned long long)cs[i]);
			CHECK(0);
		}

	/* And one flipped bit anywhere changes it. */
	kat_page(page);
	c0 = dg_csum_page(v[0], 3, 77, page);

	for (unsigned b = 0; b < PG * 8; b += 509) {
		page[b / 8] ^= (uint8_t)(1u << (b % 8));
		CHECK(dg_csum_page(v[0], 3, 77, page) != c0);
		page[b / 8] ^= (uint8_t)(1u << (b % 8));
	}
	CHECK_HEX(dg_csum_page(v[0], 3, 77, page), c0);
	free(cs);
	free(v[0]);
	free(v[1]);
	free(page);
}

/*
 * Known answers. These pin on-media format v1: the XXH3 variant, the
 * seed derived from the volume uuid, how a page address folds into the
 * seed, the self checksum of a checksum page and of a superblock-style
 * header. If one changes, old volumes no longer verify: bump
 * DG_FORMAT_VERSION instead of editing the constants.
 */
static void test_known_answers(void)
{
	uint8_t *page = aligned_alloc(PG, PG);
	struct dg_vol *vol = svol_new(kat_uuid);
	uint64_t *w;

	REQUIRE(page && vol);
	kat_page(page);

	/* The library itself; the empty-input value is xxHash's published
	 * test vector, the others were computed with libxxhash 0.8.1. */
	CHECK_HEX(XXH3_64bits("", 0), 0x2d06800538d394c2ull);
	CHECK_HEX(XXH3_64bits_withSeed(page, PG, 0),
		  0xd7428746842be37eull);
	CHECK_HEX(XXH3_64bits_withSeed(page, PG, 0x0123456789abcdefull),
		  0xe4273ed68d466853ull);
	CHECK_HEX(XXH3_64bits(kat_uuid, 16), 0xc56cde21e711bf96ull);

	/* Seed of the volume and the page checksums built on it. */
	CHECK_HEX(dg_seed_from_uuid(kat_uuid), 0xc56cde21e711bf96ull);
	CHECK_HEX(dg_csum_page(vol, 0, 0, page), 0xb1d65d134a0a3b07ull);
	CHECK_HEX(dg_csum_page(vol, 3, 1000, page), 0x58f677f46b7fa55eull);
	CHECK_HEX(dg_csum_page(vol, 15, (1ull << 32) + 7, page),
		  0x05080313fdd7483bull);
	memset(page, 0, PG);
	CHECK_HEX(dg_csum_page(vol, 1, 7, page), 0x1ded662a78f7c71dull);

	/* A checksum page: entries, a generation, then its seal in the
	 * last eight bytes, seeded by owner device and page index. A zero
	 * page is damage, never "empty" (format.h). */
	w = (uint64_t *)page;
	for (unsigned i = 0; i < DG_CSUMS_PER_PAGE; i++)
		w[i] = 0x0101010101010101ull * (i % 251) + i;
	w[DG_CSUMS_PER_PAGE] = 0x1234;
	dg_csum_page_seal(vol, 2, 5, page);
	CHECK_HEX(w[DG_CSUMS_PER_PAGE + 1],
		  XXH3_64bits_withSeed(page, PG - 8,
				       vol->seed ^ (3 * 0x9e3779b97f4a7c15ull) ^
					       (6 * 0x165667b19e3779f9ull)));
	CHECK_EQ(dg_csum_page_check(vol, 2, 5, page), 1);
	CHECK_EQ(dg_csum_page_check(vol, 3, 5, page), -EUCLEAN);
	CHECK_EQ(dg_csum_page_check(vol, 2, 6, page), -EUCLEAN);
	w[DG_CSUMS_PER_PAGE] = 0x1235;	/* the generation is sealed too */
	CHECK_EQ(dg_csum_page_check(vol, 2, 5, page), -EUCLEAN);

	/* The line seal (DG_FEAT_INCOMPAT_LINE_SEAL): the sum of each
	 * line's XXH3-64, the line's number in its seed. */
	vol->sb.incompat = DG_FEAT_INCOMPAT_LINE_SEAL;
	dg_csum_page_seal(vol, 2, 5, page);
	{
		uint64_t seed = vol->seed ^ (3 * 0x9e3779b97f4a7c15ull) ^
				(6 * 0x165667b19e3779f9ull), sum = 0;

		for (unsigned l = 0; l < PG / 64; l++)
			sum += XXH3_64bits_withSeed(
				page + l * 64, l == PG / 64 - 1 ? 56 : 64,
				seed ^ ((l + 1) * 0x85ebca77c2b2ae63ull));
		CHECK_HEX(w[DG_CSUMS_PER_PAGE + 1], sum);
	}
	CHECK_HEX(w[DG_CSUMS_PER_PAGE + 1], 0xf5dbe4b30a510bbdull);
	CHECK_EQ(dg_csum_page_check(vol, 2, 5, page), 1);
	CHECK_EQ(dg_csum_page_check(vol, 3, 5, page), -EUCLEAN);
	CHECK_EQ(dg_csum_page_check(vol, 2, 6, page), -EUCLEAN);
	for (unsigned b = 0; b < PG - 8; b += 61) {	/* every line */
		page[b] ^= 0x10;
		CHECK_EQ(dg_csum_page_check(vol, 2, 5, page), -EUCLEAN);
		page[b] ^= 0x10;
	}
	/* Two lines swapped: each line's seed is its own. */
	{
		uint8_t line[64];

		memcpy(line, page + 64, 64);
		memcpy(page + 64, page + 128, 64);
		memcpy(page + 128, line, 64);
		CHECK_EQ(dg_csum_page_check(vol, 2, 5, page), -EUCLEAN);
	}
	memset(page, 0, PG);
	CHECK_EQ(dg_csum_page_check(vol, 2, 5, page), -EUCLEAN);
	free(page);
	free(vol);
}

/*
 * Both seal forms through the update path: a checksum page updated slot
 * by slot, from the cache and from the media, keeps copies that verify,
 * whether its seal is the whole page's or the sum of its lines' (where
 * an update hashes only the lines it changes, csum.c set_slots()).
 */
static void test_seal_forms(void)
{
	enum { FIRST = 2 * DG_CSUMS_PER_PAGE };

	for (unsigned whole = 0; whole < 2; whole++) {
		struct dg_format_opts o = { .parity = 1, .size = 32ull << 20,
					    .force = true,
					    .whole_seal = whole };
		uint64_t want[2][DG_CSUMS_PER_PAGE] = { { 0 } }, got;
		struct tvol tv;
		struct dg_vol *vol;
		uint32_t rnd = 12345;

		tvol_make_opts(&tv, whole ? "seal-whole" : "seal-lines", 4,
			       &o);
		vol = tvol_open(&tv, 0);
		REQUIRE(vol);
		CHECK_EQ(dg_vol_has_incompat(vol, DG_FEAT_INCOMPAT_LINE_SEAL),
			 !whole);
		for (unsigned round = 0; round < 200; round++) {
			struct dg_csum_upd u[3];
			struct dg_flushset fs;
			unsigned n = 1 + round % 3;

			if (round == 100)	/* the rest from the cache */
				REQUIRE(dg_vol_cache_csum_pages(vol,
								1u << 20) ==
					0);
			for (unsigned i = 0; i < n; i++) {
				rnd = rnd * 1103515245u + 12345u;
				/* rows of device 0 then device 1, ascending,
				 * in a checksum page whose rows a fresh
				 * volume leaves unused */
				u[i] = (struct dg_csum_upd){
					i == 2, FIRST + (rnd >> 8) % 170 + 170 * i,
					((uint64_t)rnd << 20) | round | 1 };
			}
			if (n > 1 && u[1].row < u[0].row) {
				struct dg_csum_upd t = u[0];

				u[0] = u[1];
				u[1] = t;
			}
			dg_flushset_init(&fs);
			CHECK_EQ(dg_csum_set_batch(vol, u, n, &fs), 0);
			dg_flushset_fini(&fs);
			for (unsigned i = 0; i < n; i++)
				want[u[i].dev][u[i].row - FIRST] = u[i].csum;
		}
		dg_vol_close(vol);

		/* Uncached: every copy read from the media, and sealed. */
		vol = tvol_open(&tv, DG_OPEN_RDONLY);
		REQUIRE(vol);
		for (unsigned d = 0; d < 2; d++)
			for (unsigned r = 0; r < DG_CSUMS_PER_PAGE; r++) {
				if (!want[d][r])
					continue;
				REQUIRE(dg_csum_get(vol, d, FIRST + r, &got) ==
					0);
				CHECK_HEX(got, want[d][r]);
			}
		dg_vol_close(vol);
		tvol_cleanup(&tv);
	}
}

/* ---- end to end on a volume ---------------------------------------- */

static void fault_delta(struct dg_vol *vol, const uint64_t base[DG_FAULT_NR],
			uint64_t out[DG_FAULT_NR])
{
	dg_vol_fault_counts(vol, out);
	for (int i = 0; i < DG_FAULT_NR; i++)
		out[i] -= base[i];
}

static uint64_t dev_off(struct dg_vol *vol, struct dg_loc l)
{
	return dg_row_page(vol, l.row) * PG;
}

/* A page region after a failed read: untouched or zeroed, never bytes
 * that did not verify. */
static bool untouched_or_zero(const uint8_t *p, uint8_t fill_byte)
{
	bool all_fill = true, all_zero = true;

	for (unsigned i = 0; i < PG; i++) {
		all_fill &= p[i] == fill_byte;
		all_zero &= p[i] == 0;
	}
	return all_fill || all_zero;
}

/* Write a distinct random page to each vpn; fill model. */
static bool write_pages(struct dg_vol *vol, const uint64_t *vpns, unsigned n,
			uint8_t *model, uint64_t *seed)
{
	for (unsigned i = 0; i < n; i++) {
		struct dg_range r = { vpns[i], 0, PG, model + (size_t)i * PG };

		trand_fill(seed, model + (size_t)i * PG, PG);
		if (dg_apply(vol, &r, 1))
			return false;
	}
	return true;
}

/*
 * A misdirected write: page A's bytes land on page B's address. The
 * checksum at B is seeded with B's address, so B fails; with parity it
 * is rebuilt (and A is untouched), without parity the read is EIO.
 */
static void misdirected(unsigned ndev, unsigned parity, uint64_t va,
			uint64_t vb)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t vpns[2], seed = va * 1000 + vb + parity;
	uint64_t base[DG_FAULT_NR], got[DG_FAULT_NR];
	uint8_t *model = aligned_alloc(PG, 4 * PG), *buf = model + 2 * PG;
	uint8_t *img = model + 3 * PG;
	struct dg_loc la, lb;
	int ret;

	REQUIRE(model);
	tvol_make(&tv, "misdir", ndev, parity, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	/* file data: zone pages would come back from their ditto copies */
	va += tdata_vpn(vol);
	vb += tdata_vpn(vol);
	vpns[0] = va;
	vpns[1] = vb;
	REQUIRE(write_pages(vol, vpns, 2, model, &seed));
	la = dg_vpn_loc(vol, va);
	lb = dg_vpn_loc(vol, vb);
	/* The same content at another address would not verify. */
	CHECK(dg_csum_page(vol, la.dev, la.row, model) !=
	      dg_csum_page(vol, lb.dev, lb.row, model));

	tvol_peek(&tv, la.dev, dev_off(vol, la), img, PG);
	REQUIRE(memcmp(img, model, PG) == 0);
	tvol_poke(&tv, lb.dev, dev_off(vol, lb), img, PG);

	dg_vol_fault_counts(vol, base);
	memset(buf, 0xa5, PG);
	ret = dg_read(vol, vb, 1, buf);
	fault_delta(vol, base, got);
	if (parity) {
		CHECK_EQ(ret, 0);
		CHECK(memcmp(buf, model + PG, PG) == 0);
		CHECK_EQ(got[DG_FAULT_DETECTED], 1);
		CHECK_EQ(got[DG_FAULT_REPAIRED], 1);
		CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 0);
		/* Repaired in place. */
		tvol_peek(&tv, lb.dev, dev_off(vol, lb), img, PG);
		CHECK(memcmp(img, model + PG, PG) == 0);
	} else {
		CHECK_EQ(ret, -EIO);
		CHECK(untouched_or_zero(buf, 0xa5)); /* not A's bytes */
		CHECK_EQ(got[DG_FAULT_DETECTED], 1);
		CHECK_EQ(got[DG_FAULT_REPAIRED], 0);
		CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 1);
	}
	/* A itself was never touched. */
	dg_vol_fault_counts(vol, base);
	CHECK_EQ(dg_read(vol, va, 1, buf), 0);
	CHECK(memcmp(buf, model, PG) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(model);
}

/* Chunks are 256 rows; with 4 devices and parity 1, vpn 100 is rank 0
 * row 100, vpn 356 rank 1 row 100, vpn 101 rank 0 row 101. */
static void test_misdirected_same_dev(void)
{
	misdirected(4, 1, 100, 101);
}

static void test_misdirected_same_row(void)
{
	misdirected(4, 1, 100, 356);
}

static void test_misdirected_other(void)
{
	misdirected(4, 1, 100, 256 + 200);
	misdirected(5, 2, 300, 1000);
}

static void test_misdirected_no_parity(void)
{
	misdirected(2, 0, 100, 101);
	misdirected(2, 0, 100, 356);
}

/* ---- checksum page faults ------------------------------------------ */

enum cfault { CF_ZERO, CF_BITFLIP, CF_STALE, CF_ALL };

static void csum_page_fault(enum cfault kind)
{
	struct tvol tv;
	struct dg_vol *vol;
	const uint64_t vpn = 300;
	uint64_t seed = 99 + kind, base[DG_FAULT_NR], got[DG_FAULT_NR];
	uint64_t cpage, rpage;
	uint32_t cbyte;
	uint8_t *mem = aligned_alloc(PG, 5 * PG);
	uint8_t *model = mem, *buf = mem + PG, *img = mem + 2 * PG;
	uint8_t *old = mem + 3 * PG, *rep = mem + 4 * PG;
	unsigned rdev;
	struct dg_loc l;
	uint64_t stored;
	int ret;

	REQUIRE(mem);
	tvol_make(&tv, "cpage", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(write_pages(vol, &vpn, 1, model, &seed));
	l = dg_vpn_loc(vol, vpn);
	dg_csum_loc(vol, l.dev, l.row, 0, &rdev, &cpage, &cbyte);
	CHECK_EQ(rdev, l.dev);
	dg_csum_loc(vol, l.dev, l.row, 1, &rdev, &rpage, &cbyte);
	CHECK_EQ(rdev, (l.dev + 1) % 4);

	/* The entry really is where dg_csum_loc() says, in both copies. */
	tvol_peek(&tv, l.dev, cpage * PG, img, PG);
	memcpy(&stored, img + cbyte, 8);
	CHECK_HEX(stored, dg_csum_page(vol, l.dev, l.row, model));
	tvol_peek(&tv, rdev, rpage * PG, rep, PG);
	CHECK(memcmp(img, rep, PG) == 0);

	switch (kind) {
	case CF_ZERO:
		memset(img, 0, PG);
		tvol_poke(&tv, l.dev, cpage * PG, img, PG);
		break;
	case CF_BITFLIP:
		img[cbyte + 3] ^= 0x10;
		tvol_poke(&tv, l.dev, cpage * PG, img, PG);
		break;
	case CF_STALE: {
		/* A lost write of the checksum page: it keeps its old,
		 * self-consistent contents while data and replica move on. */
		struct dg_range r = { vpn, 1000, 200, buf };

		memcpy(old, img, PG);
		trand_fill(&seed, buf, 200);
		REQUIRE(dg_apply(vol, &r, 1) == 0);
		memcpy(model + 1000, buf, 200);
		tvol_peek(&tv, rdev, rpage * PG, rep, PG);
		tvol_poke(&tv, l.dev, cpage * PG, old, PG);
		break;
	}
	case CF_ALL:
		/* every copy damaged, each differently */
		for (unsigned c = 0; c < dg_vol_csum_copies(vol); c++) {
			unsigned xdev;
			uint64_t xpage;

			dg_csum_loc(vol, l.dev, l.row, c, &xdev, &xpage,
				    &cbyte);
			tvol_peek(&tv, xdev, xpage * PG, img, PG);
			img[cbyte + c] ^= 1;
			tvol_poke(&tv, xdev, xpage * PG, img, PG);
		}
		break;
	}

	dg_vol_fault_counts(vol, base);
	memset(buf, 0xa5, PG);
	ret = dg_read(vol, vpn, 1, buf);
	fault_delta(vol, base, got);
	if (kind == CF_ALL) {
		/* One checksum page, one fault: counted once (STYLE §5). */
		CHECK_EQ(ret, -EIO);
		CHECK(untouched_or_zero(buf, 0xa5));
		CHECK_EQ(got[DG_FAULT_DETECTED], 1);
		CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 1);
		CHECK_EQ(got[DG_FAULT_REPAIRED], 0);
		goto out;
	}
	CHECK_EQ(ret, 0);
	CHECK(memcmp(buf, model, PG) == 0);
	CHECK_EQ(got[DG_FAULT_DETECTED], 1);
	CHECK_EQ(got[DG_FAULT_REPAIRED], 1);
	CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 0);
	/* Its events say whether the copy was stale or damaged: fsck
	 * reports them as PR_2_CSUM_STALE and PR_2_CSUM_BAD. */
	{
		struct dg_fault_event ev[8];
		unsigned n = dg_vol_fault_events(vol, 0, ev, 8), copies = 0;

		for (unsigned i = 0; i < n; i++) {
			if (ev[i].what != DG_WHAT_CSUM_COPY)
				continue;
			copies++;
			CHECK_EQ(ev[i].stale, kind == CF_STALE);
		}
		CHECK_EQ(copies, 2);	/* detected, repaired */
	}
	/* The primary was rewritten from the replica. */
	tvol_peek(&tv, l.dev, cpage * PG, img, PG);
	CHECK(memcmp(img, rep, PG) == 0);
	memcpy(&stored, img + cbyte, 8);
	CHECK_HEX(stored, dg_csum_page(vol, l.dev, l.row, model));
	/* Nothing left to find. */
	dg_vol_fault_counts(vol, base);
	CHECK_EQ(dg_read(vol, vpn, 1, buf), 0);
	CHECK(memcmp(buf, model, PG) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 0);
out:
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(mem);
}

static void test_csum_page_zeroed(void)
{
	csum_page_fault(CF_ZERO);
}

static void test_csum_page_bitflip(void)
{
	csum_page_fault(CF_BITFLIP);
}

static void test_csum_page_stale(void)
{
	csum_page_fault(CF_STALE);
}

static void test_csum_page_all_bad(void)
{
	csum_page_fault(CF_ALL);
}

/*
 * The checksum page cache (csum_cache.c): reads through it do not see a
 * checksum page damaged behind the engine, but still return verified
 * data; the scrub reads media and repairs the damage; an update through
 * the cache seals the copy as it should be, so damage outside the
 * updated entries is caught by the copy's own checksum, never blessed.
 */
static void test_csum_cache(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	const uint64_t vpn = 300;
	uint64_t seed = 7, base[DG_FAULT_NR], got[DG_FAULT_NR], cpage, rpage;
	uint64_t stored;
	uint32_t cbyte, other;
	unsigned cdev;
	uint8_t *mem = aligned_alloc(PG, 4 * PG);
	uint8_t *model = mem, *buf = mem + PG, *img = mem + 2 * PG;
	uint8_t *rep = mem + 3 * PG;
	struct dg_scrub_report sr;
	struct dg_loc l;

	REQUIRE(mem);
	tvol_make(&tv, "ccache", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_cache_csum_pages(vol, 1u << 20) == 0);
	REQUIRE(write_pages(vol, &vpn, 1, model, &seed));
	l = dg_vpn_loc(vol, vpn);
	dg_csum_loc(vol, l.dev, l.row, 0, &cdev, &cpage, &cbyte);
	dg_csum_loc(vol, l.dev, l.row, 1, &cdev, &rpage, &cbyte);
	other = cbyte < PG / 2 ? cbyte + 64 : cbyte - 64;

	/* Damage the primary's entry: the cached image still serves. */
	tvol_peek(&tv, l.dev, cpage * PG, img, PG);
	img[cbyte] ^= 0x40;
	tvol_poke(&tv, l.dev, cpage * PG, img, PG);
	dg_vol_fault_counts(vol, base);
	REQUIRE(dg_read(vol, vpn, 1, buf) == 0);
	CHECK(memcmp(buf, model, PG) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 0);

	/* The scrub reads the media copy, finds and repairs it. */
	REQUIRE(dg_vol_scrub(vol, true, &sr, NULL, NULL) == 0);
	CHECK_EQ(sr.detected, 1);
	CHECK_EQ(sr.repaired, 1);
	tvol_peek(&tv, l.dev, cpage * PG, img, PG);
	tvol_peek(&tv, (l.dev + 1) % 4, rpage * PG, rep, PG);
	CHECK(memcmp(img, rep, PG) == 0);

	/* Damage another entry, then update through the cache: the copy
	 * gets the seal of the right image and so fails its own check. */
	img[other] ^= 0x01;
	tvol_poke(&tv, l.dev, cpage * PG, img, PG);
	{
		struct dg_range r = { vpn, 100, 50, buf };

		trand_fill(&seed, buf, 50);
		REQUIRE(dg_apply(vol, &r, 1) == 0);
		memcpy(model + 100, buf, 50);
	}
	tvol_peek(&tv, l.dev, cpage * PG, img, PG);
	tvol_peek(&tv, (l.dev + 1) % 4, rpage * PG, rep, PG);
	CHECK(memcmp(img, rep, PG) != 0);
	memcpy(&stored, rep + cbyte, 8);
	CHECK_HEX(stored, dg_csum_page(vol, l.dev, l.row, model));
	REQUIRE(dg_vol_scrub(vol, true, &sr, NULL, NULL) == 0);
	CHECK_EQ(sr.detected, 1);
	CHECK_EQ(sr.repaired, 1);
	tvol_peek(&tv, l.dev, cpage * PG, img, PG);
	CHECK(memcmp(img, rep, PG) == 0);
	REQUIRE(dg_read(vol, vpn, 1, buf) == 0);
	CHECK(memcmp(buf, model, PG) == 0);
	dg_vol_close(vol);

	/* Uncached, as fsck opens it: nothing left to find. */
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(mem);
}

/* Set the checksums of rows r[0, n) of device 0 to vals: the bytes the
 * media was asked to store. */
static uint64_t set_rows(struct dg_vol *vol, const uint64_t *r, unsigned n,
			 uint64_t val)
{
	struct dg_csum_upd u[4];
	struct dg_media_counts c0, c1;
	struct dg_flushset fs;

	for (unsigned i = 0; i < n; i++)
		u[i] = (struct dg_csum_upd){ 0, r[i], val + i };
	dg_vol_media_counts(vol, &c0, NULL);
	dg_flushset_init(&fs);
	if (dg_csum_set_batch(vol, u, n, &fs))
		c0.bytes_stored = UINT64_MAX / 2;	/* fails any check */
	dg_flushset_fini(&fs);
	dg_vol_media_counts(vol, &c1, NULL);
	return c1.bytes_stored - c0.bytes_stored;
}

/*
 * An update of a cached checksum page stores, in each copy, the slots
 * it changes -- slots less than a line apart as one run -- and the
 * generation and seal: not the span from its first slot to its last
 * (csum.c, store_copy()). The first update of the page reads it and
 * writes it whole.
 */
static void test_copy_stores_changed_slots(void)
{
	const uint64_t far[2] = { 10, 300 }, near[2] = { 40, 42 };
	struct tvol tv;
	struct dg_vol *vol;
	unsigned copies;
	uint64_t got;

	tvol_make(&tv, "cslots", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(dg_vol_cache_csum_pages(vol, 1u << 20) == 0);
	copies = vol->sb.csum_copies;
	CHECK(set_rows(vol, far, 2, 0x1000) >= copies * (PG - 16));
	CHECK_EQ(set_rows(vol, far, 2, 0x2000), copies * (8 + 8 + 16));
	CHECK_EQ(set_rows(vol, near, 2, 0x3000), copies * (24 + 16));
	dg_vol_close(vol);

	/* What the copies hold, read from the media. */
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	REQUIRE(dg_csum_get(vol, 0, 10, &got) == 0);
	CHECK_HEX(got, 0x2000);
	REQUIRE(dg_csum_get(vol, 0, 300, &got) == 0);
	CHECK_HEX(got, 0x2001);
	REQUIRE(dg_csum_get(vol, 0, 42, &got) == 0);
	CHECK_HEX(got, 0x3001);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/*
 * A cursor answers every lookup with the stored checksum: a first lookup
 * in a cached checksum page reads the one entry, a second in that page
 * copies it, a third is served from the copy; another device's page
 * starts over. Without the cache every page is read and copied.
 */
static void test_cursor_lookups(void)
{
	for (int cached = 0; cached < 2; cached++) {
		struct tvol tv;
		struct dg_vol *vol;
		struct dg_csum_cursor cur;
		uint64_t seed = 21, vpn[3], got;
		uint8_t *model = malloc(3 * PG);
		struct dg_loc l;
		unsigned other;

		REQUIRE(model);
		tvol_make(&tv, "cursor", 4, 1, 16ull << 20, false);
		vol = tvol_open(&tv, 0);
		REQUIRE(vol);
		if (cached)
			REQUIRE(dg_vol_cache_csum_pages(vol, 1u << 20) == 0);
		l = dg_vpn_loc(vol, 300);
		other = dg_row_data_dev(vol, l.row,
					(dg_row_data_rank(vol, l.row, l.dev) + 1) %
						vol->k);
		vpn[0] = dg_loc_vpn(vol, l.dev, l.row);
		vpn[1] = dg_loc_vpn(vol, l.dev, l.row + 1);
		vpn[2] = dg_loc_vpn(vol, other, l.row);
		REQUIRE(write_pages(vol, vpn, 3, model, &seed));
		dg_vol_close(vol);
		vol = tvol_open(&tv, 0);	/* a cold cache */
		REQUIRE(vol);
		if (cached)
			REQUIRE(dg_vol_cache_csum_pages(vol, 1u << 20) == 0);
		dg_csum_cursor_init(&cur);
		for (unsigned i = 0; i < 5; i++) {
			/* rows 0, 1, 0 of one page, then the other device */
			unsigned w = (unsigned[]){ 0, 1, 0, 2, 0 }[i];
			struct dg_loc lw = dg_vpn_loc(vol, vpn[w]);

			REQUIRE(dg_csum_lookup(vol, &cur, lw.dev, lw.row,
					       &got) == 0);
			CHECK_HEX(got, dg_csum_page(vol, lw.dev, lw.row,
						    model + (size_t)w * PG));
		}
		dg_csum_cursor_fini(&cur);
		dg_vol_close(vol);
		tvol_cleanup(&tv);
		free(model);
	}
}

/* ---- freshness: lost writes that a device cannot fake ----------------- */

/*
 * The defect the freshness rule closes (issue 15): one device loses the
 * write of a data page together with the write of the checksum page copy
 * on the same device, so it hands back an old page and an old checksum
 * page that agree with each other. The other copy is newer; the read must
 * return the current bytes (rebuilt from parity), never the old ones,
 * and repair both the stale copy and the page. With `copies_lost` = 2
 * under parity 2, two devices lost the checksum page writes.
 */
static void lost_data_and_csum(unsigned ndev, unsigned parity,
			       unsigned copies_lost, bool rdonly)
{
	struct tvol tv;
	struct dg_vol *vol;
	const uint64_t vpn = 300;
	uint64_t seed = 1000 + ndev * 10 + copies_lost, base[DG_FAULT_NR];
	uint64_t got[DG_FAULT_NR], cpage[DG_MAX_CSUM_COPIES];
	unsigned cdev[DG_MAX_CSUM_COPIES], ncopies;
	uint8_t *mem = aligned_alloc(PG, (4 + DG_MAX_CSUM_COPIES) * PG);
	uint8_t *model = mem, *buf = mem + PG, *olddata = mem + 2 * PG;
	uint8_t *oldc = mem + 4 * PG;
	struct dg_scrub_report sr;
	struct dg_range r = { vpn, 0, PG, buf };
	uint32_t cbyte;
	uint64_t doff;
	struct dg_loc l;

	REQUIRE(mem);
	tvol_make(&tv, "fresh", ndev, parity, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(write_pages(vol, &vpn, 1, model, &seed));
	l = dg_vpn_loc(vol, vpn);
	ncopies = dg_vol_csum_copies(vol);
	CHECK_EQ(ncopies, parity + 2 < ndev ? parity + 2 : ndev);
	for (unsigned c = 0; c < ncopies; c++) {
		dg_csum_loc(vol, l.dev, l.row, c, &cdev[c], &cpage[c], &cbyte);
		tvol_peek(&tv, cdev[c], cpage[c] * PG, oldc + c * PG, PG);
	}
	CHECK_EQ(cdev[0], l.dev);	/* copy 0 shares the data's device */
	doff = dev_off(vol, l);
	tvol_peek(&tv, l.dev, doff, olddata, PG);
	/* The update the device will "lose". */
	trand_fill(&seed, buf, PG);
	REQUIRE(dg_apply(vol, &r, 1) == 0);
	memcpy(model, buf, PG);
	dg_vol_close(vol);
	tvol_poke(&tv, l.dev, doff, olddata, PG);
	for (unsigned c = 0; c < copies_lost; c++)
		tvol_poke(&tv, cdev[c], cpage[c] * PG, oldc + c * PG, PG);

	vol = tvol_open(&tv, rdonly ? DG_OPEN_RDONLY : 0);
	REQUIRE(vol);
	dg_vol_fault_counts(vol, base);
	memset(buf, 0xa5, PG);
	CHECK_EQ(dg_read(vol, vpn, 1, buf), 0);
	CHECK(memcmp(buf, model, PG) == 0);	/* never the old bytes */
	CHECK(memcmp(buf, olddata, PG) != 0);
	fault_delta(vol, base, got);
	/* each stale copy and the page: detected and repaired; read-only,
	 * the page is rebuilt in memory only (recovered, not repaired) and
	 * stale copies are left to fsck's checksum pass, which reports them
	 * from the copies. */
	CHECK_EQ(got[DG_FAULT_DETECTED], rdonly ? 1 : copies_lost + 1);
	CHECK_EQ(got[DG_FAULT_REPAIRED], rdonly ? 0 : copies_lost + 1);
	CHECK_EQ(got[DG_FAULT_RECOVERED], rdonly ? 1 : 0);
	CHECK_EQ(got[DG_FAULT_UNRECOVERABLE], 0);
	if (!rdonly) {
		/* Nothing left: a scrub from media finds every copy and the
		 * row consistent. */
		SCRUB_CLEAN(vol, false);
		tvol_peek(&tv, l.dev, doff, buf, PG);
		CHECK(memcmp(buf, model, PG) == 0);
	} else {
		/* Read-only: nothing written, the media still stale; the
		 * scrub does not bless the old page into parity. */
		REQUIRE(dg_vol_scrub(vol, true, &sr, NULL, NULL) == 0);
		CHECK_EQ(sr.parity_fixed, 0);
		tvol_peek(&tv, l.dev, doff, buf, PG);
		CHECK(memcmp(buf, olddata, PG) == 0);
	}
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(mem);
}

static void test_lost_data_and_csum_p1(void)
{
	lost_data_and_csum(4, 1, 1, false);
}

static void test_lost_data_and_csum_rdonly(void)
{
	lost_data_and_csum(4, 1, 1, true);
}

static void test_lost_data_and_two_copies_p2(void)
{
	lost_data_and_csum(5, 2, 2, false);
}

/*
 * A checksum page of which no copy verifies is damage once the init map
 * says it was written: its pages read as EIO, never as zeros ("never
 * written"); one that was never written reads as zeros with no fault.
 */
static void test_zeroed_copies_are_damage(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	const uint64_t vpn = 300, fresh = 5000;
	uint64_t seed = 77, base[DG_FAULT_NR], got[DG_FAULT_NR], cpage[3];
	uint8_t *mem = aligned_alloc(PG, 3 * PG);
	uint8_t *model = mem, *buf = mem + PG, *zero = mem + 2 * PG;
	unsigned cdev[3];
	uint32_t cbyte;
	struct dg_loc l;

	REQUIRE(mem);
	memset(zero, 0, PG);
	tvol_make(&tv, "zcopies", 4, 1, 16ull << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	/* Never written: zeros, and no fault. */
	dg_vol_fault_counts(vol, base);
	memset(buf, 0xa5, PG);
	CHECK_EQ(dg_read(vol, fresh, 1, buf), 0);
	CHECK(memcmp(buf, zero, PG) == 0);
	fault_delta(vol, base, got);
	CHECK_EQ(got[DG_FAULT_DETECTED], 0);
	REQUIRE(write_pages(vol, &vpn, 1, model, &seed));
	l = dg_vpn_loc(vol, vpn);
	for (unsigned c = 0; c < 3; c++)
		dg_csum_loc(vol, l.dev, l.row, c, &cdev[c], &cpage[c], &cbyte);
	CHECK_EQ(dg_vol_csum_copies(vol), 3);
	dg_vol_close(vol);
	for (unsigned c = 0; c < 3; c++)
		tvol_poke(&tv, cdev[c], cpage[c] * PG, zero, PG);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	memset(buf, 0xa5, PG);
	CHECK_EQ(dg_read(vol, vpn, 1, buf), -EIO);
	CHECK(untouched_or_zero(buf, 0xa5));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	free(mem);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "seeded_distinct", test_seeded_distinct },
		{ "known_answers", test_known_answers },
		{ "seal_forms", test_seal_forms },
		{ "copy_stores_changed_slots", test_copy_stores_changed_slots },
		{ "misdirected_same_dev", test_misdirected_same_dev },
		{ "misdirected_same_row", test_misdirected_same_row },
		{ "misdirected_other", test_misdirected_other },
		{ "misdirected_no_parity", test_misdirected_no_parity },
		{ "csum_page_zeroed", test_csum_page_zeroed },
		{ "csum_page_bitflip", test_csum_page_bitflip },
		{ "csum_page_stale", test_csum_page_stale },
		{ "csum_page_all_bad", test_csum_page_all_bad },
		{ "cursor_lookups", test_cursor_lookups },
		{ "csum_cache", test_csum_cache },
		{ "lost_data_and_csum_p1", test_lost_data_and_csum_p1 },
		{ "lost_data_and_csum_rdonly", test_lost_data_and_csum_rdonly },
		{ "lost_data_and_two_copies_p2",
		  test_lost_data_and_two_copies_p2 },
		{ "zeroed_copies_are_damage", test_zeroed_copies_are_damage },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
