// SPDX-License-Identifier: MIT
/* test_copies_together.c -- the checksum copies of a journaled update in
 * one round, and the rebuild of a page a crash tore on every copy */
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "csum.h"
#include "harness.h"

/*
 * On a volume with DG_FEAT_INCOMPAT_COPIES_TOGETHER (parity 1, a copy on
 * each of three devices or more) an update writes every copy of its
 * checksum pages in one round (csum.c, write_pages_copies()), so a crash
 * may tear them all; the replay then rebuilds each such page slot by
 * slot (cpage_salvage()): a slot no live entry names from the copies
 * that agree on it, the others from the entries. These cases build the
 * state by hand: a child makes an update and exits without a
 * checkpoint (its entry stays in the log), and the parent tears every
 * copy of the checksum page -- the seal fails on each, and a copy holds
 * the updated slot's old value -- and adds faults.
 */
#define SIZE (32u << 20)

/* Two data pages of one device whose checksums share a checksum page:
 * a, retired before the crash, and b, updated by the crashed run. */
struct pair {
	unsigned dev;
	uint64_t ra, rb, va, vb, index;
};

static bool pick(struct dg_vol *vol, struct pair *p)
{
	/* An index of its own: the volume's metadata is in the first
	 * ones, and a torn page there would end the open early. */
	p->ra = tdata_row(vol);
	if (p->ra < 2 * DG_CSUMS_PER_PAGE)
		p->ra = 2 * DG_CSUMS_PER_PAGE;
	p->dev = dg_row_data_dev(vol, p->ra, 0);
	for (p->rb = p->ra + 1; p->rb < p->ra + 2 * vol->ndev; p->rb++)
		for (unsigned x = 0; x < vol->k; x++)
			if (dg_row_data_dev(vol, p->rb, x) == p->dev)
				goto found;
	return false;
found:
	p->va = dg_loc_vpn(vol, p->dev, p->ra);
	p->vb = dg_loc_vpn(vol, p->dev, p->rb);
	p->index = p->ra / DG_CSUMS_PER_PAGE;
	return p->rb / DG_CSUMS_PER_PAGE == p->index;
}

static void fill(uint8_t *buf, uint8_t v)
{
	for (unsigned i = 0; i < DG_PAGE_SIZE; i++)
		buf[i] = (uint8_t)(v + i * 7);
}

static int put(struct dg_vol *vol, uint64_t vpn, const uint8_t *buf)
{
	return dg_apply(vol, &(struct dg_range){ vpn, 0, DG_PAGE_SIZE, buf },
			1);
}

/* Where copy c of the pair's checksum page lives. */
static void copy_at(struct dg_vol *vol, const struct pair *p, unsigned c,
		    unsigned *dev, uint64_t *off)
{
	*dev = dg_cpage_copy_dev(vol, p->dev, c);
	*off = dg_cpage_copy_page(vol, p->index, c) << DG_PAGE_SHIFT;
}

/*
 * The state to open: a and b written and retired (old bytes), then a
 * child's update of b left in the log, and every copy of their checksum
 * page torn by hand (stale: a copy keeps b's old checksum). bad_a: how
 * many copies get a wrong checksum for a on top (faults on copies).
 * checkpoint: the child closes cleanly first, so no entry names b.
 * lost: instead of being torn, copy 1 lost every write since a held
 * other bytes -- whole, and older than the torn copies' slot of a.
 */
static void make_state(struct tvol *tv, struct pair *p, unsigned bad_a,
		       bool checkpoint, bool lost)
{
	uint8_t old[DG_PAGE_SIZE], neu[DG_PAGE_SIZE];
	uint8_t *before = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint64_t old_b = 0, junk = 0x5eedbadc0ffeeull;
	struct dg_vol *vol;
	unsigned ncopies, ldev = 0;
	uint64_t loff = 0;
	pid_t pid;
	int st;

	REQUIRE(before);
	tvol_make(tv, "together", 4, 1, SIZE, false);
	vol = tvol_open(tv, 0);
	REQUIRE(vol);
	REQUIRE(vol->copies_together);
	REQUIRE(pick(vol, p));
	fill(old, 1);
	if (lost) {
		fill(neu, 3);
		REQUIRE(put(vol, p->va, neu) == 0);
		copy_at(vol, p, 1, &ldev, &loff);
		tvol_peek(tv, ldev, loff, before, DG_PAGE_SIZE);
	}
	REQUIRE(put(vol, p->va, old) == 0);
	REQUIRE(put(vol, p->vb, old) == 0);
	REQUIRE(dg_csum_get(vol, p->dev, p->rb, &old_b) == 0);
	ncopies = vol->sb.csum_copies;
	REQUIRE(dg_vol_close(vol) == 0);

	fill(neu, 2);
	pid = fork();
	if (pid == 0) {
		vol = tvol_open(tv, 0);
		if (!vol || put(vol, p->vb, neu))
			_exit(2);
		if (checkpoint)
			_exit(dg_vol_close(vol) ? 3 : 0);
		_exit(0);	/* a crash: the entry stays in the log */
	}
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0);

	vol = tvol_open(tv, DG_OPEN_RDONLY | DG_OPEN_NORECOVER);
	REQUIRE(vol);
	for (unsigned c = 0; c < ncopies; c++) {
		unsigned dev;
		uint64_t off, seal = 0, bad = junk + c;

		copy_at(vol, p, c, &dev, &off);
		tvol_peek(tv, dev, off + DG_PAGE_SIZE - 8, &seal, 8);
		seal ^= 1;
		tvol_poke(tv, dev, off + DG_PAGE_SIZE - 8, &seal, 8);
		if (c == 0)
			tvol_poke(tv, dev, off + (p->rb % DG_CSUMS_PER_PAGE) * 8,
				  &old_b, 8);
		if (c < bad_a)
			tvol_poke(tv, dev, off + (p->ra % DG_CSUMS_PER_PAGE) * 8,
				  &bad, 8);
		if (lost && c == 1)
			tvol_poke(tv, dev, off, before, DG_PAGE_SIZE);
	}
	dg_vol_close(vol);
	free(before);
}

/* The volume opens (replaying the journal), a reads the bytes filled
 * with va_fill, b those with vb_fill, and the scrub finds it clean. */
static void reads_back(struct tvol *tv, const struct pair *p, uint8_t va_fill,
		       uint8_t vb_fill)
{
	uint8_t want[DG_PAGE_SIZE], got[DG_PAGE_SIZE];
	struct dg_vol *vol = tvol_open(tv, 0);

	REQUIRE(vol);
	fill(want, va_fill);
	CHECK_EQ(dg_read(vol, p->va, 1, got), 0);
	CHECK(!memcmp(got, want, DG_PAGE_SIZE));
	fill(want, vb_fill);
	CHECK_EQ(dg_read(vol, p->vb, 1, got), 0);
	CHECK(!memcmp(got, want, DG_PAGE_SIZE));
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
}

/* Volumes that have the feature, and those that keep a round a copy. */
static void feature_where(void)
{
	static const struct { unsigned ndev, parity; bool want; } v[] = {
		{ 3, 1, true }, { 4, 1, true },
		{ 2, 1, false },	/* two copies: one fault leaves one */
		{ 4, 2, false }, { 5, 2, false },
	};

	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct tvol tv;
		struct dg_vol *vol;

		tvol_make(&tv, "together-where", v[i].ndev, v[i].parity, SIZE,
			  false);
		vol = tvol_open(&tv, 0);
		REQUIRE(vol);
		CHECK_EQ(vol->copies_together, v[i].want);
		CHECK_EQ(!!(vol->sb.incompat &
			    DG_FEAT_INCOMPAT_COPIES_TOGETHER), v[i].want);
		dg_vol_close(vol);
		tvol_cleanup(&tv);
	}
}

/* Torn on every copy, one of them with a fault in a slot no entry names:
 * the replay rebuilds the page; a reads its old bytes, b its new ones,
 * and the scrub finds the volume clean. */
static void torn_everywhere_one_fault(void)
{
	struct tvol tv;
	struct pair p;

	make_state(&tv, &p, 1, false, false);
	reads_back(&tv, &p, 1, 2);
	tvol_cleanup(&tv);
}

/* The other copies torn, one whole but older: it lost the write that
 * gave a the bytes it holds (a firmware's lost write). It verifies,
 * alone, yet the torn copies outvote it on a: a reads its bytes, not
 * EIO, and b its new ones. */
static void lost_copy_beside_torn(void)
{
	struct tvol tv;
	struct pair p;

	make_state(&tv, &p, 0, false, true);
	reads_back(&tv, &p, 1, 2);
	tvol_cleanup(&tv);
}

/* Counts the pages a rebuild could not rebuild. */
static void count_lost(void *arg, const struct dg_chk_event *ev)
{
	if (ev->kind == DG_CHK_PAGE_BAD)
		++*(unsigned *)arg;
}

/* Torn on every copy, and the device of a, b and the first copy lost
 * too: fsck rebuilds the device before it replays the journal
 * (rebuild.c opens without replay), from the two copies left, which
 * agree; then the replay. a reads its old bytes, b its new ones. */
static void torn_then_device_lost(void)
{
	char err[256] = "";
	unsigned lost = 0;
	struct tvol tv;
	struct pair p;

	make_state(&tv, &p, 0, false, false);
	REQUIRE(truncate(tv.paths[p.dev], 0) == 0 &&
		truncate(tv.paths[p.dev], SIZE) == 0);
	CHECK_EQ(dg_vol_rebuild((const char *const *)tv.paths, tv.ndev,
				count_lost, &lost, NULL, NULL, err,
				sizeof(err)),
		 0);
	CHECK_EQ(lost, 0);
	reads_back(&tv, &p, 1, 2);
	tvol_cleanup(&tv);
}

/* Two copies wrong about a, differently: beyond parity 1. The page is
 * not rebuilt from a guess: the replay refuses the open, and an open
 * that does not replay reads a as EIO. */
static void torn_everywhere_two_faults(void)
{
	uint8_t got[DG_PAGE_SIZE];
	struct tvol tv;
	struct pair p;
	struct dg_vol *vol;

	make_state(&tv, &p, 2, false, false);
	vol = tvol_open(&tv, 0);
	CHECK(!vol);
	if (vol)
		dg_vol_close(vol);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	CHECK_EQ(dg_read(vol, p.va, 1, got), -EIO);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/*
 * A copy that verifies, and two that fail their seal holding an older
 * generation: what a writer that keeps a round a copy (a repair, say)
 * leaves when a crash tears its second copy and a fault the third --
 * with an update's entry in the log that names a row of the page. The
 * copy that verifies is the newest state and wins; the torn ones are
 * not voted on (torn_together()): a reads the bytes it was last given.
 */
static void newest_copy_kept(void)
{
	uint8_t one[DG_PAGE_SIZE], three[DG_PAGE_SIZE], neu[DG_PAGE_SIZE];
	uint8_t *snap = aligned_alloc(DG_PAGE_SIZE, 2 * DG_PAGE_SIZE);
	struct tvol tv;
	struct pair p;
	struct dg_vol *vol;
	unsigned dev[3];
	uint64_t off[3];
	pid_t pid;
	int st;

	REQUIRE(snap);
	fill(one, 1);
	fill(three, 3);
	fill(neu, 2);
	tvol_make(&tv, "together-newest", 4, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(pick(vol, &p));
	REQUIRE(put(vol, p.va, one) == 0);
	REQUIRE(put(vol, p.vb, one) == 0);
	for (unsigned c = 0; c < 3; c++)
		copy_at(vol, &p, c, &dev[c], &off[c]);
	REQUIRE(dg_vol_close(vol) == 0);
	for (unsigned c = 1; c < 3; c++)
		tvol_peek(&tv, dev[c], off[c], snap + (c - 1) * DG_PAGE_SIZE,
			  DG_PAGE_SIZE);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(put(vol, p.va, three) == 0);
	REQUIRE(dg_vol_close(vol) == 0);
	pid = fork();
	if (pid == 0) {
		vol = tvol_open(&tv, 0);
		_exit(!vol || put(vol, p.vb, neu) ? 2 : 0);
	}
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0);
	for (unsigned c = 1; c < 3; c++) {
		uint8_t *pg = snap + (c - 1) * DG_PAGE_SIZE;

		pg[DG_PAGE_SIZE - 1] ^= 1;	/* the seal */
		tvol_poke(&tv, dev[c], off[c], pg, DG_PAGE_SIZE);
	}
	reads_back(&tv, &p, 3, 2);
	tvol_cleanup(&tv);
	free(snap);
}

/* Every copy failing its seal with no entry in the log: no crash did
 * that, so nothing is rebuilt -- a and b read EIO. */
static void torn_without_entry(void)
{
	uint8_t got[DG_PAGE_SIZE];
	struct tvol tv;
	struct pair p;
	struct dg_vol *vol;

	make_state(&tv, &p, 0, true, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(vol->jrnl.ncover, 0);
	CHECK_EQ(dg_read(vol, p.va, 1, got), -EIO);
	CHECK_EQ(dg_read(vol, p.vb, 1, got), -EIO);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* An open that does not replay (fsck -n, a rebuild) rebuilds the page
 * in memory too, from the entries it finds: a reads its old bytes. */
static void torn_read_only(void)
{
	uint8_t old[DG_PAGE_SIZE], got[DG_PAGE_SIZE];
	struct tvol tv;
	struct pair p;
	struct dg_vol *vol;

	make_state(&tv, &p, 1, false, false);
	fill(old, 1);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	CHECK(vol->jrnl.ncover > 0);
	CHECK_EQ(dg_read(vol, p.va, 1, got), 0);
	CHECK(!memcmp(got, old, DG_PAGE_SIZE));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static const struct test_case cases[] = {
	{ "feature_where", feature_where },
	{ "torn_everywhere_one_fault", torn_everywhere_one_fault },
	{ "lost_copy_beside_torn", lost_copy_beside_torn },
	{ "torn_then_device_lost", torn_then_device_lost },
	{ "torn_everywhere_two_faults", torn_everywhere_two_faults },
	{ "newest_copy_kept", newest_copy_kept },
	{ "torn_without_entry", torn_without_entry },
	{ "torn_read_only", torn_read_only },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return test_main(argc, argv, cases);
}
