// SPDX-License-Identifier: MIT
/* test_extent.c -- file extent maps: leaves with slack, merging, punch,
 * reload from the media, and fsck's cut of a damaged map */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "harness.h"
#include "fscheck.h"
#include "fsys_i.h"

#define PG DG_PAGE_SIZE

/* A volume with one regular file, and what each page of it should hold:
 * 0 for a hole, else the seed of its pattern. */
struct fx {
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_fs *fs;
	uint64_t ino, npages;
	uint64_t *model;
	uint64_t rng;
	uint8_t *buf, *pages;
};

static void fill_page(uint8_t *p, uint64_t seed, uint64_t page)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull ^ page;

	trand_fill(&s, p, PG);
}

static bool fx_open_fs(struct fx *x)
{
	x->vol = tvol_open(&x->tv, 0);
	return x->vol && dg_fs_open(x->vol, &x->fs) == 0;
}

static void fx_close_fs(struct fx *x)
{
	if (x->fs)
		dg_fs_close(x->fs);
	if (x->vol)
		dg_vol_close(x->vol);
	x->fs = NULL;
	x->vol = NULL;
}

static bool fx_make(struct fx *x, const char *tag, uint64_t npages)
{
	struct dg_attr a;

	memset(x, 0, sizeof(*x));
	x->rng = 0x5eed ^ npages;
	x->npages = npages;
	x->model = calloc(npages, sizeof(*x->model));
	x->buf = aligned_alloc(PG, PG);
	x->pages = aligned_alloc(PG, 3 * PG);
	tvol_make(&x->tv, tag, 4, 1, 64ull << 20, false);
	if (!x->model || !x->buf || !x->pages || !fx_open_fs(x))
		return false;
	if (dg_fs_mknod(x->fs, DG_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &a))
		return false;
	x->ino = a.ino;
	/* sized up front, as fio sizes the files it writes at random */
	return dg_fs_setattr(x->fs, x->ino, &(struct dg_setattr){
				     .valid = DG_SET_SIZE,
				     .size = npages * PG }, &a) == 0;
}

static void fx_free(struct fx *x)
{
	fx_close_fs(x);
	tvol_cleanup(&x->tv);
	free(x->model);
	free(x->buf);
	free(x->pages);
}

static struct dg_inode *fx_ip(struct fx *x)
{
	return dg_inode_get(x->fs, x->ino);
}

static bool fx_write(struct fx *x, uint64_t page)
{
	uint64_t seed = trand(&x->rng) | 1;

	fill_page(x->buf, seed, page);
	if (dg_fs_write(x->fs, x->ino, page * PG, x->buf, PG) != PG)
		return false;
	x->model[page] = seed;
	return true;
}

static bool fx_punch(struct fx *x, uint64_t page, uint64_t n)
{
	if (page + n > x->npages)
		n = x->npages - page;
	if (dg_fs_fallocate(x->fs, x->ino,
			    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			    page * PG, n * PG))
		return false;
	memset(&x->model[page], 0, n * sizeof(*x->model));
	return true;
}

/* Every page reads back as the model says. */
static bool fx_verify(struct fx *x)
{
	uint64_t bad = 0;

	for (uint64_t p = 0; p < x->npages; p++) {
		const void *data;
		uint64_t vpn, run;

		if (dg_fs_read(x->fs, x->ino, p * PG, PG, x->pages, &data) !=
		    PG) {
			bad++;
			continue;
		}
		if (x->model[p])
			fill_page(x->buf, x->model[p], p);
		else
			memset(x->buf, 0, PG);
		dg_ext_lookup(fx_ip(x), p, &vpn, &run);
		if (memcmp(data, x->buf, PG) || !vpn != !x->model[p]) {
			if (bad < 5)
				fprintf(stderr, "page %llu differs\n",
					(unsigned long long)p);
			bad++;
		}
	}
	return bad == 0;
}

/* The leaves obey format.h: sorted, disjoint, within capacity, only
 * leaf 0 empty, the totals right. */
static bool map_ok(const struct dg_inode *ip)
{
	uint64_t end = 0, n = 0;

	if (ip->nleaf < 1 || ip->leaf[0]->vpn != 0)
		return false;
	for (uint32_t li = 0; li < ip->nleaf; li++) {
		const struct dg_eleaf *lf = ip->leaf[li];

		if (lf->n > (li ? DG_EMAP_PER_PAGE : DG_INLINE_EXTENTS) ||
		    (li && (lf->n == 0 || lf->vpn == 0)))
			return false;
		for (uint32_t i = 0; i < lf->n; i++) {
			if (lf->e[i].len == 0 || lf->e[i].fpage < end)
				return false;
			end = lf->e[i].fpage + lf->e[i].len;
		}
		n += lf->n;
	}
	return n == ip->next && ip->d.nextents == ip->next;
}

static bool say_yes(void *arg, const struct dg_chk_event *ev)
{
	(void)arg;
	(void)ev;
	return true;
}

/* Run the filesystem check on the unmounted volume: the findings, each
 * repaired when repair is set. */
static int fx_fsck(struct fx *x, bool repair)
{
	int n = 0;

	fx_close_fs(x);
	x->vol = tvol_open(&x->tv, 0);
	if (!x->vol)
		return -1;
	if (dg_check_fs(x->vol, tcheck_count_event, repair ? say_yes : NULL, &n) < 0)
		n = -1;
	dg_vol_close(x->vol);
	x->vol = NULL;
	return fx_open_fs(x) ? n : -1;
}

static void shuffle(uint64_t *a, uint64_t n, uint64_t *rng)
{
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = trand(rng) % i, t = a[i - 1];

		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* Pages first, first + step, ... below npages, in random order. */
static bool fx_write_shuffled(struct fx *x, uint64_t first, uint64_t step)
{
	uint64_t n = (x->npages - first + step - 1) / step, *order;
	bool ok = true;

	order = malloc(n * sizeof(*order));
	if (!order)
		return false;
	for (uint64_t i = 0; i < n; i++)
		order[i] = first + i * step;
	shuffle(order, n, &x->rng);
	for (uint64_t i = 0; i < n && ok; i++) {
		ok = fx_write(x, order[i]);
		if (ok && i % 97 == 0)
			ok = map_ok(fx_ip(x));
	}
	free(order);
	return ok;
}

/* A sparse file written a page at a time in random order (fio's
 * randwrite over a file it did not lay out): every write fills a hole.
 * Allocation aims where the neighbours put the page, so the holes close
 * up on the media and the map ends small. */
static void fill_sparse_random(void)
{
	struct fx x;

	REQUIRE(fx_make(&x, "fill", 3000));
	REQUIRE(fx_write_shuffled(&x, 0, 1));
	CHECK(map_ok(fx_ip(&x)));
	fprintf(stderr, "  3000 pages: %u extents, %u leaves\n",
		fx_ip(&x)->next, fx_ip(&x)->nleaf);
	CHECK(fx_ip(&x)->next < 300);
	CHECK(fx_verify(&x));
	CHECK_EQ(fx_fsck(&x, false), 0);
	CHECK(map_ok(fx_ip(&x)));
	CHECK(fx_verify(&x));
	fx_free(&x);
}

/* Every other page: no extent can merge, so the map needs a dozen chain
 * pages, filled by inserts all over (splits). Then the odd pages close
 * every hole: extents merge away and emptied chain pages are freed. */
static void fragment_then_merge(void)
{
	struct fx x;
	struct dg_attr a;
	uint64_t blocks_frag;

	REQUIRE(fx_make(&x, "frag", 4000));
	REQUIRE(fx_write_shuffled(&x, 0, 2));
	CHECK_EQ(fx_ip(&x)->next, 2000);
	CHECK(fx_ip(&x)->nleaf >= 1 + 2000 / DG_EMAP_PER_PAGE);
	CHECK(fx_verify(&x));
	CHECK_EQ(fx_fsck(&x, false), 0);
	CHECK(map_ok(fx_ip(&x)));
	CHECK_EQ(fx_ip(&x)->next, 2000);
	CHECK(fx_verify(&x));
	REQUIRE(dg_fs_getattr(x.fs, x.ino, &a) == 0);
	blocks_frag = a.blocks;

	REQUIRE(fx_write_shuffled(&x, 1, 2));
	CHECK(map_ok(fx_ip(&x)));
	fprintf(stderr, "  after filling: %u extents, %u leaves\n",
		fx_ip(&x)->next, fx_ip(&x)->nleaf);
	CHECK(fx_ip(&x)->next < 200);
	REQUIRE(dg_fs_getattr(x.fs, x.ino, &a) == 0);
	/* 2000 more data pages, fewer chain pages than before */
	CHECK(a.blocks < blocks_frag + 2000 * (PG / 512));
	CHECK(fx_verify(&x));
	CHECK_EQ(fx_fsck(&x, false), 0);
	CHECK(fx_verify(&x));
	fx_free(&x);
}

/* Chain leaves in use, and the mean extents each. */
static double mean_leaf(const struct dg_inode *ip)
{
	return ip->nleaf > 1 ? (double)(ip->next - ip->leaf[0]->n) /
				       (ip->nleaf - 1)
			     : 0;
}

/* Every other page, in order then at random: 2000 extents that cannot
 * merge. In order each lands at the end of the map and fills chain
 * pages to DG_EMAP_PER_PAGE; at random each lands in the middle of a
 * leaf, which splits in half from 64 on (extent.c, LEAF_SOFT), so an
 * insert moves a few dozen slots, not half a full page. */
static void leaves_in_order_and_at_random(void)
{
	struct fx x;
	uint32_t full = (2000 - DG_INLINE_EXTENTS + DG_EMAP_PER_PAGE - 1) /
			DG_EMAP_PER_PAGE;

	REQUIRE(fx_make(&x, "order", 4000));
	for (uint64_t p = 0; p < 4000; p += 2)
		REQUIRE(fx_write(&x, p));
	CHECK(map_ok(fx_ip(&x)));
	fprintf(stderr, "  in order: %u extents, %u leaves, %.0f a leaf\n",
		fx_ip(&x)->next, fx_ip(&x)->nleaf, mean_leaf(fx_ip(&x)));
	CHECK_EQ(fx_ip(&x)->next, 2000);
	CHECK_EQ(fx_ip(&x)->nleaf, 1 + full);
	CHECK(fx_verify(&x));
	fx_free(&x);

	REQUIRE(fx_make(&x, "random", 4000));
	REQUIRE(fx_write_shuffled(&x, 0, 2));
	CHECK(map_ok(fx_ip(&x)));
	fprintf(stderr, "  at random: %u extents, %u leaves, %.0f a leaf\n",
		fx_ip(&x)->next, fx_ip(&x)->nleaf, mean_leaf(fx_ip(&x)));
	CHECK_EQ(fx_ip(&x)->next, 2000);
	CHECK(mean_leaf(fx_ip(&x)) >= 32 && mean_leaf(fx_ip(&x)) <= 80);
	CHECK(fx_verify(&x));
	/* The map reads back from the media as it was made. */
	CHECK_EQ(fx_fsck(&x, false), 0);
	CHECK(map_ok(fx_ip(&x)));
	CHECK(fx_verify(&x));
	fx_free(&x);
}

/* Punch holes of every size over a fragmented file (splitting extents
 * in the middle, dropping whole runs across leaves), rewriting pages in
 * between; then truncate it to nothing: all pages come back. */
static void punch_and_truncate(void)
{
	struct fx x;
	struct statvfs st0, st;
	struct dg_setattr sa = { .valid = DG_SET_SIZE, .size = 0 };
	struct dg_attr a;

	REQUIRE(fx_make(&x, "punch", 4000));
	REQUIRE(dg_fs_statfs(x.fs, &st0) == 0);
	REQUIRE(fx_write_shuffled(&x, 0, 3));
	for (uint64_t p = 1; p < 4000; p += 6)	/* some 2-page extents */
		REQUIRE(fx_write(&x, p));
	for (int i = 0; i < 400; i++) {
		uint64_t p = trand(&x.rng) % 4000;

		if (i % 3 == 0) {
			REQUIRE(fx_write(&x, p));
		} else {
			REQUIRE(fx_punch(&x, p, 1 + trand(&x.rng) %
					 (i % 10 ? 8 : 600)));
		}
		if (i % 50 == 0)
			CHECK(map_ok(fx_ip(&x)));
	}
	CHECK(map_ok(fx_ip(&x)));
	CHECK(fx_verify(&x));
	CHECK_EQ(fx_fsck(&x, false), 0);
	CHECK(fx_verify(&x));

	REQUIRE(dg_fs_setattr(x.fs, x.ino, &sa, &a) == 0);
	CHECK_EQ(fx_ip(&x)->next, 0);
	CHECK_EQ(fx_ip(&x)->nleaf, 1);
	CHECK_EQ(a.blocks, 0);
	REQUIRE(dg_fs_statfs(x.fs, &st) == 0);
	CHECK_EQ(st.f_bfree, st0.f_bfree);
	CHECK_EQ(fx_fsck(&x, false), 0);
	fx_free(&x);
}

/* One writeback-hold batch of n random distinct pages (runs of one to
 * three), in file order, each of new bytes. */
static bool fx_batch(struct fx *x, uint64_t n)
{
	struct dg_wseg *seg = calloc(n, sizeof(*seg));
	uint8_t *bytes = malloc(n * 3 * PG);
	bool *taken = calloc(x->npages, sizeof(*taken));
	uint64_t *seeds = calloc(x->npages, sizeof(*seeds));
	unsigned nseg = 0;
	uint8_t *b = bytes;
	bool ok = seg && bytes && taken && seeds;

	for (uint64_t i = 0; ok && i < n; i++) {
		uint64_t p = trand(&x->rng) % x->npages;
		uint64_t len = 1 + trand(&x->rng) % 3;

		for (uint64_t j = 0; j < len && p + j < x->npages; j++)
			if (!taken[p + j])
				seeds[p + j] = trand(&x->rng) | 1;
		for (uint64_t j = 0; j < len && p + j < x->npages; j++)
			taken[p + j] = true;
	}
	for (uint64_t p = 0; ok && p < x->npages;) {
		uint64_t q = p;

		if (!taken[p]) {
			p++;
			continue;
		}
		while (q < x->npages && taken[q])
			q++;
		seg[nseg++] = (struct dg_wseg){ p * PG, b, (q - p) * PG };
		for (; p < q; p++, b += PG) {
			fill_page(b, seeds[p], p);
			x->model[p] = seeds[p];
		}
	}
	ok = ok && dg_fs_write_batch(x->fs, x->ino, seg, nseg, nseg) == 0;
	free(seg);
	free(bytes);
	free(taken);
	free(seeds);
	return ok;
}

/* The writeback hold's scattered pages move to a band each batch
 * (file.c, scatter_move()): the map, stored once a move, stays well
 * formed, reads back after a reload (fsck closes and opens the volume)
 * and a check finds nothing; truncating it frees every page. */
static void batch_scatter_moves(void)
{
	struct fx x;
	struct statvfs st0, st;
	struct dg_setattr sa = { .valid = DG_SET_SIZE, .size = 0 };
	struct dg_vol_info in;
	struct dg_attr a;
	uint64_t new0;

	REQUIRE(fx_make(&x, "scatter", 3000));
	REQUIRE(dg_fs_statfs(x.fs, &st0) == 0);
	REQUIRE(fx_write_shuffled(&x, 0, 2));	/* holes between */
	dg_vol_get_info(x.vol, &in);
	new0 = in.rows_new;
	for (int i = 0; i < 40; i++) {
		REQUIRE(fx_batch(&x, 20 + trand(&x.rng) % 120));
		CHECK(map_ok(fx_ip(&x)));
	}
	dg_vol_get_info(x.vol, &in);
	fprintf(stderr, "  %u extents, %u leaves, %llu new rows\n",
		fx_ip(&x)->next, fx_ip(&x)->nleaf,
		(unsigned long long)(in.rows_new - new0));
	CHECK(in.rows_new - new0 >= 40 * 8);	/* every batch moved */
	CHECK(fx_verify(&x));
	CHECK_EQ(fx_fsck(&x, false), 0);
	CHECK(map_ok(fx_ip(&x)));
	CHECK(fx_verify(&x));
	REQUIRE(dg_fs_setattr(x.fs, x.ino, &sa, &a) == 0);
	CHECK_EQ(a.blocks, 0);
	REQUIRE(dg_fs_statfs(x.fs, &st) == 0);
	CHECK_EQ(st.f_bfree, st0.f_bfree);
	CHECK_EQ(fx_fsck(&x, false), 0);
	fx_free(&x);
}

/* The file's bytes as the page model says (fx.model): what a byte
 * model starts from. */
static uint8_t *fx_image(struct fx *x)
{
	uint8_t *img = malloc(x->npages * PG);

	for (uint64_t p = 0; img && p < x->npages; p++)
		if (x->model[p])
			fill_page(img + p * PG, x->model[p], p);
		else
			memset(img + p * PG, 0, PG);
	return img;
}

/* Every byte reads back as img says. */
static bool fx_verify_bytes(struct fx *x, const uint8_t *img)
{
	uint64_t bad = 0;

	for (uint64_t p = 0; p < x->npages; p++) {
		const void *data;

		if (dg_fs_read(x->fs, x->ino, p * PG, PG, x->pages, &data) !=
			    PG ||
		    memcmp(data, img + p * PG, PG)) {
			if (bad < 5)
				fprintf(stderr, "page %llu differs\n",
					(unsigned long long)p);
			bad++;
		}
	}
	return bad == 0;
}

/* A batch of segments, kept in order, of new random bytes. */
struct bsegs {
	struct dg_wseg seg[256];
	unsigned n;
	uint8_t *bytes;
	size_t used, cap;
};

static bool bseg_add(struct bsegs *b, struct fx *x, uint8_t *img,
		     uint64_t off, uint64_t len)
{
	if (b->n == 256 || b->used + len > b->cap || off + len > x->npages * PG)
		return false;
	if (b->n && b->seg[b->n - 1].off + b->seg[b->n - 1].len > off)
		return false;	/* in file order, not overlapping */
	trand_fill(&x->rng, b->bytes + b->used, len);
	memcpy(img + off, b->bytes + b->used, len);
	b->seg[b->n++] = (struct dg_wseg){ off, b->bytes + b->used, len };
	b->used += len;
	return true;
}

/* Runs written byte by byte by one batch: partial end pages around
 * pages scatter_move() moves, partial pages over holes beside moved
 * ones, a run starting in the page the run before ended in, then runs
 * of random bytes at random offsets; every byte reads back as a model
 * says, also after a reload. */
static void batch_scatter_bytes(void)
{
	struct fx x;
	struct bsegs b = { .cap = 8u << 20 };
	struct dg_vol_info in;
	uint64_t new0;
	uint8_t *img;

	REQUIRE(fx_make(&x, "sbytes", 1200));
	REQUIRE(fx_write_shuffled(&x, 0, 2));	/* odd pages: holes */
	img = fx_image(&x);
	b.bytes = malloc(b.cap);
	REQUIRE(img && b.bytes);
	dg_vol_get_info(x.vol, &in);
	new0 = in.rows_new;
	/* mapped partial | hole, mapped, hole moved | mapped partial */
	REQUIRE(bseg_add(&b, &x, img, 10 * PG + 100, 4 * PG - 50));
	/* a partial page over a hole, then moved pages */
	REQUIRE(bseg_add(&b, &x, img, 21 * PG + 3000, 4 * PG - 3000));
	/* moved pages, then a partial page over a hole */
	REQUIRE(bseg_add(&b, &x, img, 30 * PG, 5 * PG + 77));
	/* two runs in one page (40): the second goes in the next
	 * transaction */
	REQUIRE(bseg_add(&b, &x, img, 37 * PG + 9, 3 * PG + 491));
	REQUIRE(bseg_add(&b, &x, img, 40 * PG + 1000, 3 * PG + 10));
	for (uint64_t i = 0; i < 30; i++)	/* whole pages: a band */
		REQUIRE(bseg_add(&b, &x, img, (50 + 3 * i) * PG, PG));
	REQUIRE(dg_fs_write_batch(x.fs, x.ino, b.seg, b.n, b.n) == 0);
	dg_vol_get_info(x.vol, &in);
	CHECK(in.rows_new - new0 >= 8);	/* the middle pages moved */
	CHECK(map_ok(fx_ip(&x)));
	CHECK(fx_verify_bytes(&x, img));

	for (int round = 0; round < 8; round++) {
		uint64_t off = trand(&x.rng) % (3 * PG);

		b.n = 0;
		b.used = 0;
		while (b.n < 200) {
			uint64_t len = 1 + trand(&x.rng) % (5 * PG);

			if (off + len > x.npages * PG)
				break;
			REQUIRE(bseg_add(&b, &x, img, off, len));
			off += len + trand(&x.rng) % (3 * PG);
		}
		REQUIRE(dg_fs_write_batch(x.fs, x.ino, b.seg, b.n, b.n) == 0);
		CHECK(map_ok(fx_ip(&x)));
	}
	dg_vol_get_info(x.vol, &in);
	fprintf(stderr, "  %llu new rows\n",
		(unsigned long long)(in.rows_new - new0));
	CHECK(fx_verify_bytes(&x, img));
	CHECK_EQ(fx_fsck(&x, false), 0);
	CHECK(map_ok(fx_ip(&x)));
	CHECK(fx_verify_bytes(&x, img));
	free(img);
	free(b.bytes);
	fx_free(&x);
}

/* Fill the volume with a second file, then free its pages but on every
 * eighth row: free space everywhere, no band of 8 free rows; but for
 * rows 0-15 of chunk group band, all free (UINT64_MAX: none). */
static bool fx_fragment_free_space(struct fx *x, uint64_t band)
{
	struct dg_vol_info in;
	struct dg_attr a;
	struct dg_inode *gip;
	uint64_t pages = 0, from = UINT64_MAX, gsize;

	if (dg_fs_mknod(x->fs, DG_ROOT_INO, "filler", S_IFREG | 0644, 0, 0, 0,
			&a))
		return false;
	for (uint64_t step = 1024; step;) {
		int ret = dg_fs_fallocate(x->fs, a.ino, 0, pages * PG,
					  step * PG);

		if (ret && ret != -ENOSPC)
			return false;
		if (ret)
			step /= 2;
		else
			pages += step;
	}
	dg_vol_get_info(x->vol, &in);
	gsize = (uint64_t)(in.ndev - in.parity) * in.chunk_pages;
	gip = dg_inode_get(x->fs, a.ino);
	for (uint64_t p = 0; p <= pages; p++) {
		uint64_t vpn = 0, run;
		bool keep = true;

		if (p < pages) {
			dg_ext_lookup(gip, p, &vpn, &run);
			keep = vpn % in.chunk_pages % 8 == 7 &&
			       !(vpn / gsize == band &&
				 vpn % in.chunk_pages < 16);
		}
		if (!keep && from == UINT64_MAX)
			from = p;
		if (keep && from != UINT64_MAX) {
			if (dg_fs_fallocate(x->fs, a.ino,
					    FALLOC_FL_PUNCH_HOLE |
						    FALLOC_FL_KEEP_SIZE,
					    from * PG, (p - from) * PG))
				return false;
			from = UINT64_MAX;
		}
	}
	fprintf(stderr, "  filler: %llu pages, %llu free after\n",
		(unsigned long long)pages,
		(unsigned long long)dg_free_vpns(x->vol));
	return true;
}

/*
 * One batch over x (its file written whole): 40 scattered pages and a
 * short run, which must stay where they are (redos: the undos it is
 * expected to cost, fs->moves_redone), then a long run of 400 pages,
 * of which a later transaction still moves at least min (relocate());
 * the bytes, the map and fsck checked after.
 */
static void scattered_then_long_run(struct fx *x, uint64_t min,
				    uint64_t redos)
{
	struct bsegs b = { .cap = 4u << 20 };
	uint64_t redone0, *vpn0, run, moved = 0;
	uint8_t *img = fx_image(x);

	b.bytes = malloc(b.cap);
	vpn0 = calloc(x->npages, sizeof(*vpn0));
	REQUIRE(img && b.bytes && vpn0);
	for (uint64_t p = 0; p < x->npages; p++)
		dg_ext_lookup(fx_ip(x), p, &vpn0[p], &run);
	for (uint64_t i = 0; i < 40; i++)
		REQUIRE(bseg_add(&b, x, img, (8 + 4 * i) * PG, PG));
	REQUIRE(bseg_add(&b, x, img, 200 * PG + 5, 180 * PG - 5));
	REQUIRE(bseg_add(&b, x, img, 400 * PG, 400 * PG));
	redone0 = __atomic_load_n(&x->fs->moves_redone, __ATOMIC_RELAXED);
	REQUIRE(dg_fs_write_batch(x->fs, x->ino, b.seg, b.n, b.n) == 0);
	CHECK_EQ(__atomic_load_n(&x->fs->moves_redone, __ATOMIC_RELAXED),
		 redone0 + redos);
	CHECK(fx_verify_bytes(x, img));
	for (uint64_t i = 0; i < 40; i++) {	/* in place */
		uint64_t p = 8 + 4 * i, vpn;

		dg_ext_lookup(fx_ip(x), p, &vpn, &run);
		CHECK_EQ(vpn, vpn0[p]);
	}
	for (uint64_t p = 400; p < 800; p++) {
		uint64_t vpn;

		dg_ext_lookup(fx_ip(x), p, &vpn, &run);
		moved += vpn != vpn0[p];
	}
	fprintf(stderr, "  long run: %llu of 400 pages moved\n",
		(unsigned long long)moved);
	CHECK(moved >= min);
	CHECK(map_ok(fx_ip(x)));
	CHECK_EQ(fx_fsck(x, false), 0);
	CHECK(fx_verify_bytes(x, img));
	free(vpn0);
	free(img);
	free(b.bytes);
}

/* On a volume with free space but no band, a batch's scattered pages
 * are written in place in the same transaction: nothing is undone and
 * written again (the map is not reloaded), and a later transaction of
 * the batch with a long run still moves it (relocate()). */
static void batch_no_band_in_place(void)
{
	struct fx x;
	struct dg_vrun vr[DG_MAX_DEVS];
	struct dg_txn *t;
	unsigned nr = 0;
	uint64_t min;

	REQUIRE(fx_make(&x, "noband", 800));
	for (uint64_t p = 0; p < x.npages; p++)
		REQUIRE(fx_write(&x, p));
	REQUIRE(fx_fragment_free_space(&x, UINT64_MAX));
	CHECK(dg_free_vpns(x.vol) > 20000);
	t = dg_txn_new(x.vol);
	REQUIRE(t);
	CHECK_EQ(dg_alloc_band(t, 0, 64, vr, &nr), -ENOSPC);
	dg_txn_free(t);
	min = dg_vol_new_row_min(x.vol);
	REQUIRE(min && min <= 256);
	fprintf(stderr, "  journal takes %zu bytes an update\n",
		dg_apply_max_bytes(x.vol));

	scattered_then_long_run(&x, min, 0);
	fx_free(&x);
}

/* The allocation cursor to vpn (dg_alloc_home() moves it on, and past
 * the end back to the first data page): where a band is looked for. */
static void set_cursor(struct dg_vol *vol, uint64_t vpn)
{
	uint64_t home = dg_alloc_home(vol, 0);

	if (home > vpn) {
		dg_alloc_home(vol, dg_vol_vpns(vol) - home);
		home = dg_alloc_home(vol, 0);
	}
	dg_alloc_home(vol, vpn - home);
}

/* One band of 23 rows in fragmented free space: a batch's scattered
 * pages (85 rows' worth) take it, then find no more. That transaction
 * is undone once and written again without the scatter move but with
 * relocate(); the batch's later long run still moves. */
static void batch_band_runs_out(void)
{
	struct fx x;
	struct dg_vrun vr[DG_MAX_DEVS];
	struct dg_vol_info in;
	struct dg_txn *t;
	unsigned nr = 0;
	uint64_t min, gsize, band, got = 0;

	REQUIRE(fx_make(&x, "bandout", 800));
	for (uint64_t p = 0; p < x.npages; p++)
		REQUIRE(fx_write(&x, p));
	dg_vol_get_info(x.vol, &in);
	gsize = (uint64_t)(in.ndev - in.parity) * in.chunk_pages;
	band = in.vpns / gsize - 1;	/* the last group: the filler's */
	REQUIRE(fx_fragment_free_space(&x, band));
	/* The band, and none after it, from where the batch looks. */
	set_cursor(x.vol, band * gsize);
	t = dg_txn_new(x.vol);
	REQUIRE(t);
	REQUIRE(dg_alloc_band(t, 0, 255, vr, &nr) == 0);
	for (unsigned i = 0; i < nr; i++)
		got += vr[i].n;
	/* rows 0-22: the 16, and the 7 free before row 23 */
	CHECK_EQ(got, 23 * (in.ndev - in.parity));
	CHECK_EQ(dg_alloc_band(t, 0, 255 - got, vr, &nr), -ENOSPC);
	CHECK_EQ(nr, 0);
	dg_txn_free(t);
	set_cursor(x.vol, band * gsize);
	min = dg_vol_new_row_min(x.vol);
	REQUIRE(min && min <= 256);

	scattered_then_long_run(&x, min, 1);
	fx_free(&x);
}

/*
 * One write() of two pieces (dg_file_piece_max()) into a file written
 * whole, on a volume with room for the second piece's new pages but not
 * the first's: the first cannot move (ENOSPC before its old pages are
 * freed) and is written again in place; the second, which fits, still
 * moves (relocate()) -- one failed move does not keep the rest of the
 * write in place.
 */
static void write_moves_after_failed_move(void)
{
	struct fx x;
	struct dg_attr a;
	uint64_t min, piece, tail, room, total, *vpn0, run, moved = 0;
	uint8_t *img;

	REQUIRE(fx_make(&x, "movelater", 1));
	min = dg_vol_new_row_min(x.vol);
	piece = dg_file_piece_max(x.fs) / PG;
	tail = min;
	REQUIRE(min && piece > tail + 64);
	total = piece + tail;
	free(x.model);
	x.model = calloc(total, sizeof(*x.model));
	REQUIRE(x.model);
	x.npages = total;
	for (uint64_t p = 0; p < total; p++)
		REQUIRE(fx_write(&x, p));
	/* Everything else taken by a filler, then room for the second
	 * piece's pages (and the metadata of both) given back. */
	REQUIRE(dg_fs_mknod(x.fs, DG_ROOT_INO, "filler", S_IFREG | 0644, 0,
			    0, 0, &a) == 0);
	for (uint64_t step = 1024, off = 0; step;) {
		int ret = dg_fs_fallocate(x.fs, a.ino, 0, off * PG, step * PG);

		REQUIRE(ret == 0 || ret == -ENOSPC);
		if (ret)
			step /= 2;
		else
			off += step;
	}
	room = (piece + tail) / 2;
	REQUIRE(dg_fs_fallocate(x.fs, a.ino,
				FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
				room * PG) == 0);
	fprintf(stderr, "  pieces of %llu and %llu pages, %llu free\n",
		(unsigned long long)piece, (unsigned long long)tail,
		(unsigned long long)dg_free_vpns(x.vol));
	REQUIRE(dg_free_vpns(x.vol) < piece);
	vpn0 = calloc(total, sizeof(*vpn0));
	REQUIRE(vpn0);
	for (uint64_t p = 0; p < total; p++) {
		dg_ext_lookup(fx_ip(&x), p, &vpn0[p], &run);
		x.model[p] = trand(&x.rng) | 1;
	}
	img = fx_image(&x);
	REQUIRE(img);
	CHECK_EQ(dg_fs_write(x.fs, x.ino, 0, img, total * PG),
		 (ssize_t)(total * PG));
	for (uint64_t p = 0; p < total; p++) {
		uint64_t vpn;

		dg_ext_lookup(fx_ip(&x), p, &vpn, &run);
		if (p < piece)
			CHECK_EQ(vpn, vpn0[p]);	/* in place */
		else
			moved += vpn != vpn0[p];
	}
	fprintf(stderr, "  second piece: %llu of %llu pages moved\n",
		(unsigned long long)moved, (unsigned long long)tail);
	CHECK(moved >= min);
	CHECK(fx_verify_bytes(&x, img));
	CHECK(map_ok(fx_ip(&x)));
	CHECK_EQ(fx_fsck(&x, false), 0);
	CHECK(fx_verify_bytes(&x, img));
	free(vpn0);
	free(img);
	fx_free(&x);
}

/* Damage the map through the engine (valid checksums and parity: a
 * software bug, not a media fault), as fsck would find it. */
static bool poke_map(struct fx *x, uint64_t vpn, uint32_t off,
		     const void *p, uint32_t len)
{
	struct dg_txn *t = dg_txn_new(x->vol);
	bool ok = t && dg_txn_write(t, vpn, off, p, len) == 0 &&
		  dg_txn_commit(t) == 0;

	dg_txn_free(t);
	return ok;
}

/* After fsck cut the map before a bad extent: the map loads, the file
 * ends where the kept extents end (the loss reads as a short file, not
 * as zeros), the pages before the cut are intact, and a second fsck
 * finds nothing. kept: extents the cut keeps. */
static void check_cut(struct fx *x, uint32_t kept)
{
	const struct dg_inode *ip;
	uint64_t end = 0;
	int n = fx_fsck(x, true);

	CHECK(n >= 1);
	REQUIRE(x->fs);
	ip = fx_ip(x);
	REQUIRE(ip);
	CHECK(map_ok(ip));
	CHECK_EQ(ip->next, kept);
	for (uint32_t li = 0; li < ip->nleaf; li++)
		if (ip->leaf[li]->n)
			end = ip->leaf[li]->e[ip->leaf[li]->n - 1].fpage +
			      ip->leaf[li]->e[ip->leaf[li]->n - 1].len;
	CHECK(end < x->npages);
	CHECK_EQ(ip->d.size, end * PG);
	x->npages = end;
	CHECK(fx_verify(x));
	CHECK_EQ(fx_fsck(x, false), 0);
}

/* fsck's three cuts: within a chain page (the page keeps a count), at a
 * chain page with a bad header (the chain ends before it), and in the
 * inline array (the chain goes). */
static void fsck_cuts_bad_map(void)
{
	static const struct {
		uint32_t leaf, slot;
		bool count;
	} cut[] = { { 2, 7, false }, { 3, 0, true }, { 0, 1, false } };

	for (unsigned c = 0; c < sizeof(cut) / sizeof(cut[0]); c++) {
		struct fx x;
		const struct dg_inode *ip;
		uint32_t kept = 0;
		uint64_t vpn;

		REQUIRE(fx_make(&x, "cut", 1500));
		REQUIRE(fx_write_shuffled(&x, 0, 2));
		ip = fx_ip(&x);
		fprintf(stderr, "  cut %u: %u extents, %u leaves\n", c, ip->next, ip->nleaf);
		REQUIRE(ip->nleaf > 3 && ip->leaf[cut[c].leaf]->n > cut[c].slot);
		for (uint32_t li = 0; li < cut[c].leaf; li++)
			kept += ip->leaf[li]->n;
		kept += cut[c].slot;
		vpn = ip->leaf[cut[c].leaf]->vpn;
		if (cut[c].count) {
			uint32_t bad = DG_EMAP_PER_PAGE + 1;

			REQUIRE(poke_map(&x, vpn, offsetof(struct dg_demap,
							   count), &bad,
					 sizeof(bad)));
		} else if (cut[c].leaf) {
			uint64_t zero = 0; /* fpage 0: out of order */

			REQUIRE(poke_map(&x, vpn, offsetof(struct dg_demap, e) +
					 cut[c].slot * sizeof(struct dg_dextent),
					 &zero, sizeof(zero)));
		} else {
			struct dg_setattr sa = { .valid = DG_SET_MODE,
						 .mode = 0600 };
			struct dg_attr a;

			/* an inline extent past the volume, stored with the
			 * next inode update (which writes the record whole) */
			fx_ip(&x)->d.inl[cut[c].slot].vpn = UINT64_MAX / 2;
			REQUIRE(dg_fs_setattr(x.fs, x.ino, &sa, &a) == 0);
		}
		check_cut(&x, kept);
		fx_free(&x);
	}
}

/* An xattr page number past the volume (a software bug, valid
 * checksums): fsck finds it, drops the attributes rather than reading
 * a page it cannot trust, and the file's data stays whole. */
static void fsck_drops_bad_xattr_page(void)
{
	/* Not a chmod: that reads the access ACL from the xattr pages. */
	struct dg_setattr sa = { .valid = DG_SET_ATIME_NOW };
	struct dg_attr a;
	struct fx x;

	REQUIRE(fx_make(&x, "xattr", 64));
	REQUIRE(fx_write_shuffled(&x, 0, 2));
	fx_ip(&x)->d.xattr_vpn = UINT64_MAX / 2;
	REQUIRE(dg_fs_setattr(x.fs, x.ino, &sa, &a) == 0);
	CHECK(fx_fsck(&x, false) >= 1);
	CHECK(fx_fsck(&x, true) >= 1);
	REQUIRE(x.fs);
	CHECK_EQ(fx_ip(&x)->d.xattr_vpn, 0);
	CHECK(fx_verify(&x));
	CHECK_EQ(fx_fsck(&x, false), 0);
	fx_free(&x);
}

static const struct test_case cases[] = {
	{ "fill_sparse_random", fill_sparse_random },
	{ "fragment_then_merge", fragment_then_merge },
	{ "leaves_in_order_and_at_random", leaves_in_order_and_at_random },
	{ "punch_and_truncate", punch_and_truncate },
	{ "batch_scatter_moves", batch_scatter_moves },
	{ "batch_scatter_bytes", batch_scatter_bytes },
	{ "batch_no_band_in_place", batch_no_band_in_place },
	{ "batch_band_runs_out", batch_band_runs_out },
	{ "write_moves_after_failed_move", write_moves_after_failed_move },
	{ "fsck_cuts_bad_map", fsck_cuts_bad_map },
	{ "fsck_drops_bad_xattr_page", fsck_drops_bad_xattr_page },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return test_main(argc, argv, cases);
}
