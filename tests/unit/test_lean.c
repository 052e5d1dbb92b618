// SPDX-License-Identifier: MIT
/* test_lean.c -- lean journal entries: which updates are lean, where
 * their bytes go, and the replay of one whose bytes are lost */
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "csum.h"
#include "harness.h"

/*
 * A lean entry (format.h DG_JENTRY_LEAN, on volumes made with mkfs
 * --lean-journal; docs/design.md "Lean entries") keeps one whole data
 * page's bytes on parity journal copies, not
 * parity + 1, because its update writes the page in a round before its
 * row's parity: a crash leaves the page new, or torn beside the parity
 * it had. With no copy of the bytes the replay takes the page new where
 * it proves so, else rebuilds it from the row as it was (the update
 * never returned). These cases build those states by hand: a child
 * makes the update and dies right after its entry is durable (the
 * apply's `journaled` hook), having stored to the page what the crash
 * kept; the parent breaks the bytes copies and opens the volume.
 */
#define SIZE (32u << 20)

/* A volume made with --lean-journal. */
static void lean_make(struct tvol *tv, const char *tag, unsigned ndev,
		      unsigned parity)
{
	const struct dg_format_opts o = { .parity = parity, .size = SIZE,
					  .force = true, .lean_journal = true };

	tvol_make_opts(tv, tag, ndev, &o);
}

static unsigned popcount(uint32_t m)
{
	return (unsigned)__builtin_popcount(m);
}

/* The copies a lean entry's bytes go to: parity of them, none on the
 * page's device nor (parity 1) on the row's parity device; none in the
 * metadata zone, on a volume without the bit, or with a device missing. */
static void copies_case(unsigned ndev, unsigned parity)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t row0;

	lean_make(&tv, "lean-copies", ndev, parity);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	REQUIRE(vol->lean_journal);
	row0 = tdata_row(vol);
	for (uint64_t row = row0; row < row0 + 2 * ndev; row++)
		for (unsigned x = 0; x < vol->k; x++) {
			unsigned dev = dg_row_data_dev(vol, row, x);
			uint32_t m = dg_journal_lean_copies(vol, dev, row);

			CHECK_EQ(popcount(m), parity);
			for (unsigned c = 0; c < vol->jrnl.ncopies; c++) {
				unsigned cd = vol->jrnl.dev[c];

				if (!(m & (1u << c)))
					continue;
				CHECK(cd != dev);
				CHECK(parity > 1 ||
				      !dg_row_dev_is_parity(vol, row, cd));
			}
		}
	if (row0 > 0)
		CHECK_EQ(dg_journal_lean_copies(vol, dg_row_data_dev(vol, 0, 0),
						0), 0);
	vol->missing_mask = 1;
	CHECK_EQ(dg_journal_lean_copies(vol, dg_row_data_dev(vol, row0, 0),
					row0), 0);
	vol->missing_mask = 0;
	vol->lean_journal = false;	/* a volume made before the bit */
	CHECK_EQ(dg_journal_lean_copies(vol, dg_row_data_dev(vol, row0, 0),
					row0), 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A lean entry on a volume made without the bit is no entry of its
 * log: forged or corrupt, it ends the log there (journal.c lean_fits()),
 * and the page keeps what it had. */
static void test_forged_on_default(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint8_t old[DG_PAGE_SIZE], newpg[DG_PAGE_SIZE], buf[DG_PAGE_SIZE];
	uint64_t vpn, s = 3;
	pid_t pid;
	int st;

	tvol_make(&tv, "lean-forged", 4, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	vpn = tdata_vpn(vol) + 7;
	trand_fill(&s, old, sizeof(old));
	trand_fill(&s, newpg, sizeof(newpg));
	REQUIRE(dg_apply(vol, &(struct dg_range){ vpn, 0, DG_PAGE_SIZE, old },
			 1) == 0);
	dg_vol_close(vol);
	pid = fork();
	if (pid == 0) {
		struct dg_loc l;
		struct {
			struct dg_djentry e;
			struct dg_djrange r;
		} h;
		const void *data[1] = { newpg };
		struct dg_jlean jl = { 0, 1 };	/* copy 0 */
		uint64_t seq;

		vol = tvol_open(&tv, 0);
		if (!vol)
			_exit(2);
		l = dg_vpn_loc(vol, vpn);
		memset(&h, 0, sizeof(h));
		h.e.nranges = 1;
		h.r = (struct dg_djrange){
			.row = l.row, .dev = (uint16_t)l.dev,
			.len = DG_PAGE_SIZE, .flags = DG_JRANGE_SEALED,
			.page_csum = dg_csum_page(vol, l.dev, l.row, newpg) };
		_exit(dg_journal_append_lean(vol, &h.e, data, &jl, &seq) ? 3
									 : 0);
	}
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(dg_read(vol, vpn, 1, buf), 0);
	CHECK(!memcmp(buf, old, DG_PAGE_SIZE));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* Only asked for, and only with parity: a default volume, or one without
 * parity that asked, writes every entry as before. */
static void test_off_by_default(void)
{
	const struct dg_format_opts none = { .parity = 0, .size = SIZE,
					     .force = true,
					     .lean_journal = true };
	struct tvol tv;
	struct dg_vol *vol;

	tvol_make(&tv, "lean-default", 4, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(!vol->lean_journal);
	CHECK(!(vol->sb.incompat & DG_FEAT_INCOMPAT_LEAN_JOURNAL));
	CHECK_EQ(dg_journal_lean_copies(vol, dg_row_data_dev(vol,
					 tdata_row(vol), 0), tdata_row(vol)), 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
	tvol_make_opts(&tv, "lean-p0", 2, &none);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(!(vol->sb.incompat & DG_FEAT_INCOMPAT_LEAN_JOURNAL));
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_copies_p1(void)
{
	copies_case(4, 1);
	copies_case(3, 1);
}

static void test_copies_p2(void)
{
	copies_case(5, 2);
}

/* Where the next entry goes on copy c, as a byte offset of its device. */
static uint64_t head_at(struct dg_vol *vol, unsigned c)
{
	return (vol->jrnl.start[c] << DG_PAGE_SHIFT) + vol->jrnl.log_off +
	       vol->jrnl.head_off;
}

/* The flags of the entry an apply of r wrote, and on which copies its
 * bytes area changed. */
static uint32_t applied_flags(struct tvol *tv, struct dg_vol *vol,
			      const struct dg_range *r, unsigned n,
			      uint32_t *changed)
{
	size_t mlen = dg_jentry_meta_len(vol, 1);
	uint8_t before[DG_MAX_JCOPIES][64], after[64];
	uint64_t at[DG_MAX_JCOPIES];
	struct dg_djentry e;

	for (unsigned c = 0; c < vol->jrnl.ncopies; c++) {
		at[c] = head_at(vol, c);
		tvol_peek(tv, vol->jrnl.dev[c], at[c] + mlen, before[c], 64);
	}
	*changed = 0;
	if (dg_apply(vol, r, n)) {
		CHECK(!"apply failed");
		return 0;
	}
	for (unsigned c = 0; c < vol->jrnl.ncopies; c++) {
		tvol_peek(tv, vol->jrnl.dev[c], at[c] + mlen, after, 64);
		if (memcmp(before[c], after, 64))
			*changed |= 1u << c;
	}
	tvol_peek(tv, vol->jrnl.dev[0], at[0], &e, sizeof(e));
	return e.flags;
}

/* Only a whole data page that held data is lean; its bytes land on its
 * copies alone. */
static void lean_shapes_case(unsigned ndev, unsigned parity)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint8_t page[2][DG_PAGE_SIZE];
	uint64_t s = 5, vpn;
	uint32_t changed, flags;
	struct dg_loc l;

	lean_make(&tv, "lean-shapes", ndev, parity);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	vpn = tdata_vpn(vol) + 40;
	l = dg_vpn_loc(vol, vpn);
	trand_fill(&s, page, sizeof(page));
	/* Never written: nothing to roll back to. */
	flags = applied_flags(&tv, vol, &(struct dg_range){ vpn, 0,
			      DG_PAGE_SIZE, page[0] }, 1, &changed);
	CHECK_EQ(flags & DG_JENTRY_LEAN, 0);
	/* Written before: lean, its bytes on its copies only. */
	flags = applied_flags(&tv, vol, &(struct dg_range){ vpn, 0,
			      DG_PAGE_SIZE, page[1] }, 1, &changed);
	CHECK(flags & DG_JENTRY_LEAN);
	CHECK_EQ(changed, dg_journal_lean_copies(vol, l.dev, l.row));
	/* Part of a page, or two pages: as before. */
	flags = applied_flags(&tv, vol, &(struct dg_range){ vpn, 8, 64,
			      page[0] }, 1, &changed);
	CHECK_EQ(flags & DG_JENTRY_LEAN, 0);
	flags = applied_flags(&tv, vol, (struct dg_range[]){
				      { vpn, 0, DG_PAGE_SIZE, page[0] },
				      { vpn + 1, 0, DG_PAGE_SIZE, page[1] } },
			      2, &changed);
	CHECK_EQ(flags & DG_JENTRY_LEAN, 0);
	/* During a replace: as before (its copy of a row argues from the
	 * journaled bytes). Only whether one runs matters to the writer. */
	vol->repl = (struct dg_repl *)&s;
	flags = applied_flags(&tv, vol, &(struct dg_range){ vpn, 0,
			      DG_PAGE_SIZE, page[0] }, 1, &changed);
	vol->repl = NULL;
	CHECK_EQ(flags & DG_JENTRY_LEAN, 0);
	/* A page of the metadata zone (ditto copies): as before. */
	if (tdata_vpn(vol) > 0) {
		REQUIRE(dg_apply(vol, &(struct dg_range){ 1, 0, DG_PAGE_SIZE,
				 page[0] }, 1) == 0);
		flags = applied_flags(&tv, vol, &(struct dg_range){ 1, 0,
				      DG_PAGE_SIZE, page[1] }, 1, &changed);
		CHECK_EQ(flags & DG_JENTRY_LEAN, 0);
	}
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_lean_shapes(void)
{
	lean_shapes_case(4, 1);
	lean_shapes_case(5, 2);
}

/* ---- a crash right after a lean entry is durable -------------------- */

enum kept {
	KEPT_NONE,	/* nothing of the page's round landed */
	KEPT_HALF,	/* the page's first half */
	KEPT_WHOLE,	/* the whole page (its round's fence not reached) */
};

/* What the child tells the parent, in memory shared across the fork. */
struct crash_info {
	unsigned ncopies;
	unsigned dev[DG_MAX_JCOPIES];
	uint64_t bytes_at[DG_MAX_JCOPIES];	/* the lean entry's bytes */
	uint64_t entry_at;			/* ... its header, copy 0 */
	uint32_t mask;				/* ... on these copies */
};

struct child {
	struct dg_vol *vol;
	struct crash_info *info;
	uint64_t vpn, later_vpn;
	const uint8_t *newpg;
	enum kept kept;
};

/* An entry for a whole page, appended and never applied. */
static void append_whole(struct dg_vol *vol, uint64_t vpn, const uint8_t *pg)
{
	struct {
		struct dg_djentry e;
		struct dg_djrange r;
	} h;
	const void *data[1] = { pg };
	struct dg_loc l = dg_vpn_loc(vol, vpn);
	uint64_t seq;

	memset(&h, 0, sizeof(h));
	h.e.nranges = 1;
	h.r = (struct dg_djrange){
		.row = l.row, .dev = (uint16_t)l.dev, .len = DG_PAGE_SIZE,
		.page_csum = dg_csum_page(vol, l.dev, l.row, pg) };
	if (dg_journal_append(vol, &h.e, data, &seq))
		_exit(3);
}

/* The apply's hook, its entry durable: store what the crash keeps of
 * the page, append one more entry if asked, and die. */
static void die_journaled(void *arg)
{
	struct child *ch = arg;
	struct dg_vol *vol = ch->vol;
	struct dg_loc l = dg_vpn_loc(vol, ch->vpn);
	/* The device's mapping, written behind the engine: a store the
	 * crash kept. */
	uint8_t *p = (uint8_t *)dg_dev_ptr(&vol->devs[l.dev],
					   dg_row_page(vol, l.row)
						   << DG_PAGE_SHIFT);
	uint8_t later[DG_PAGE_SIZE];

	if (ch->kept != KEPT_NONE)
		memcpy(p, ch->newpg,
		       ch->kept == KEPT_HALF ? DG_PAGE_SIZE / 2 : DG_PAGE_SIZE);
	if (ch->later_vpn) {
		memset(later, 0x7e, sizeof(later));
		append_whole(vol, ch->later_vpn, later);
	}
	_exit(0);
}

/* In a child: vpn and later_vpn hold old, then vpn is overwritten with
 * newpg as a lean update that dies once its entry is durable. */
static bool child_crashes(struct tvol *tv, struct crash_info *info,
			  uint64_t vpn, uint64_t later_vpn, const uint8_t *old,
			  const uint8_t *newpg, enum kept kept)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct dg_vol *vol = tvol_open(tv, 0);
		struct child ch = { vol, info, vpn, later_vpn, newpg, kept };
		struct dg_apply_hooks hooks = { NULL, die_journaled, &ch };
		struct dg_loc l;
		size_t mlen;
		bool fresh = false;

		if (!vol)
			_exit(2);
		if (dg_apply(vol, &(struct dg_range){ vpn, 0, DG_PAGE_SIZE,
			     old }, 1) ||
		    (later_vpn && dg_apply(vol, &(struct dg_range){
				later_vpn, 0, DG_PAGE_SIZE, old }, 1)))
			_exit(4);
		l = dg_vpn_loc(vol, vpn);
		mlen = dg_jentry_meta_len(vol, 1);
		info->ncopies = vol->jrnl.ncopies;
		info->mask = dg_journal_lean_copies(vol, l.dev, l.row);
		for (unsigned c = 0; c < vol->jrnl.ncopies; c++) {
			info->dev[c] = vol->jrnl.dev[c];
			info->bytes_at[c] = head_at(vol, c) + mlen;
		}
		info->entry_at = head_at(vol, 0);
		dg_apply_new(vol, &(struct dg_range){ vpn, 0, DG_PAGE_SIZE,
			     newpg }, 1, &fresh, &hooks);
		_exit(5);	/* the hook never returns */
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/* Every copy that holds the lean entry's bytes: a byte flipped in each
 * of its lines, so no copy's bytes prove the entry's seal. */
static void lose_bytes(struct tvol *tv, const struct crash_info *info)
{
	for (unsigned c = 0; c < info->ncopies; c++) {
		if (!(info->mask & (1u << c)))
			continue;
		for (unsigned b = 0; b < DG_PAGE_SIZE; b += 64) {
			uint8_t x;

			tvol_peek(tv, info->dev[c], info->bytes_at[c] + b, &x, 1);
			x ^= 0x5a;
			tvol_poke(tv, info->dev[c], info->bytes_at[c] + b, &x, 1);
		}
	}
}

/* vpn reads want, twice (the second open replays nothing), and the
 * volume scrubs clean. */
static void check_page(struct tvol *tv, uint64_t vpn, const uint8_t *want)
{
	for (int i = 0; i < 2; i++) {
		struct dg_vol *vol = tvol_open(tv, 0);
		uint8_t buf[DG_PAGE_SIZE];

		REQUIRE(vol);
		CHECK_EQ(dg_read(vol, vpn, 1, buf), 0);
		CHECK(!memcmp(buf, want, DG_PAGE_SIZE));
		SCRUB_CLEAN(vol, false);
		dg_vol_close(vol);
	}
}

/*
 * The crash kept `kept` of the page; the bytes are lost when lost. The
 * page must read old where the update cannot be proven (it never
 * returned), new where the page proves it or the bytes redo it.
 */
static void crash_case(unsigned ndev, unsigned parity, enum kept kept,
		       bool lost, bool later)
{
	struct crash_info *info = mmap(NULL, sizeof(*info),
				       PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint8_t old[DG_PAGE_SIZE], newpg[DG_PAGE_SIZE], later_pg[DG_PAGE_SIZE];
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t s = 11 + kept, vpn, later_vpn = 0;
	const uint8_t *want;
	struct dg_djentry e;

	REQUIRE(info != MAP_FAILED);
	lean_make(&tv, "lean-crash", ndev, parity);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	vpn = tdata_vpn(vol) + 7;
	if (later)
		later_vpn = vpn + 3 * vol->k; /* another row */
	dg_vol_close(vol);
	trand_fill(&s, old, sizeof(old));
	trand_fill(&s, newpg, sizeof(newpg));
	REQUIRE(child_crashes(&tv, info, vpn, later_vpn, old, newpg, kept));
	REQUIRE(popcount(info->mask) == parity);
	tvol_peek(&tv, info->dev[0], info->entry_at, &e, sizeof(e));
	REQUIRE(e.flags & DG_JENTRY_LEAN);
	if (lost)
		lose_bytes(&tv, info);
	want = !lost || kept == KEPT_WHOLE ? newpg : old;
	check_page(&tv, vpn, want);
	if (later) {
		/* The log went on past the lean entry. */
		memset(later_pg, 0x7e, sizeof(later_pg));
		check_page(&tv, later_vpn, later_pg);
	}
	tvol_cleanup(&tv);
	munmap(info, sizeof(*info));
}

static void crash_cases(unsigned ndev, unsigned parity)
{
	for (enum kept k = KEPT_NONE; k <= KEPT_WHOLE; k++)
		for (int lost = 0; lost < 2; lost++)
			crash_case(ndev, parity, k, lost, false);
}

static void test_crash_p1(void)
{
	crash_cases(4, 1);
	crash_cases(3, 1);
}

static void test_crash_p2(void)
{
	crash_cases(5, 2);
}

/* A lean entry whose bytes are lost does not end the log: a later entry,
 * durable, is replayed. */
static void test_log_goes_on(void)
{
	crash_case(4, 1, KEPT_NONE, true, true);
	crash_case(4, 1, KEPT_HALF, true, true);
	crash_case(5, 2, KEPT_WHOLE, true, true);
}

/*
 * A device gone at the next open (degraded, writable), the one fault:
 * the page's own (its bytes on no copy: a crash tore them, nothing went
 * in place), or one of its row's parity devices (parity 2: the crash in
 * the page's round, both bytes copies lost -- two faults). The page reads
 * as before the update, then again read-only.
 */
static void missing_case(unsigned ndev, unsigned parity, int parity_dev,
			 enum kept kept)
{
	struct crash_info *info = mmap(NULL, sizeof(*info),
				       PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint8_t old[DG_PAGE_SIZE], newpg[DG_PAGE_SIZE], buf[DG_PAGE_SIZE];
	const unsigned flags[2] = { DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW,
				    DG_OPEN_DEGRADED };
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t s = 99, vpn;
	struct dg_loc l;
	unsigned gone;

	REQUIRE(info != MAP_FAILED);
	lean_make(&tv, "lean-missing", ndev, parity);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	vpn = tdata_vpn(vol) + 7;
	l = dg_vpn_loc(vol, vpn);
	gone = parity_dev < 0 ? l.dev
			      : dg_row_parity_dev(vol, l.row,
						  (unsigned)parity_dev);
	dg_vol_close(vol);
	trand_fill(&s, old, sizeof(old));
	trand_fill(&s, newpg, sizeof(newpg));
	REQUIRE(child_crashes(&tv, info, vpn, 0, old, newpg, kept));
	lose_bytes(&tv, info);
	REQUIRE(unlink(tv.paths[gone]) == 0);
	free(tv.paths[gone]);
	tv.paths[gone] = strdup("");
	for (int i = 0; i < 2; i++) {
		vol = tvol_open(&tv, flags[i]);
		CHECK(vol != NULL);
		if (!vol)
			continue;
		CHECK_EQ(dg_read(vol, vpn, 1, buf), 0);
		CHECK(!memcmp(buf, old, DG_PAGE_SIZE));
		dg_vol_close(vol);
	}
	tvol_cleanup(&tv);
	munmap(info, sizeof(*info));
}

static void test_page_device_missing(void)
{
	missing_case(4, 1, -1, KEPT_NONE);
	missing_case(5, 2, -1, KEPT_NONE);
}

static void test_parity_device_missing_p2(void)
{
	missing_case(5, 2, 0, KEPT_HALF);
	missing_case(5, 2, 1, KEPT_HALF);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "off_by_default", test_off_by_default },
		{ "forged_on_default", test_forged_on_default },
		{ "copies_p1", test_copies_p1 },
		{ "copies_p2", test_copies_p2 },
		{ "lean_shapes", test_lean_shapes },
		{ "crash_p1", test_crash_p1 },
		{ "crash_p2", test_crash_p2 },
		{ "log_goes_on", test_log_goes_on },
		{ "page_device_missing", test_page_device_missing },
		{ "parity_device_missing_p2", test_parity_device_missing_p2 },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
