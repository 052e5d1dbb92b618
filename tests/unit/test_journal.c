// SPDX-License-Identifier: MIT
/* test_journal.c -- journal entries: sealed ranges, torn copies, replay */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "csum.h"
#include "harness.h"
#include "super.h"

/*
 * A child process opens the volume, appends one entry and dies without
 * applying it (a crash between journal and data). The parent may damage
 * the log copies behind the engine, then opens the volume, which replays
 * what is committed. The entry: vpn VPN_WHOLE written whole (sealed where
 * the volume allows it), and PART_LEN bytes at PART_OFF of VPN_PART.
 */
#define VPN_WHOLE 1024u
#define VPN_PART  1025u
#define PART_OFF  100u
#define PART_LEN  300u

struct where {
	unsigned n;			/* journal copies */
	unsigned dev[DG_MAX_JCOPIES];
	uint64_t entry_off[DG_MAX_JCOPIES]; /* of the entry on dev[c] */
};

static void fill(uint8_t *whole, uint8_t *part)
{
	uint64_t s = 77;

	trand_fill(&s, whole, DG_PAGE_SIZE);
	trand_fill(&s, part, PART_LEN);
}

/* Where the next entry goes: the head of an idle, cleanly closed
 * journal, which the child's open finds again. */
static bool next_entry_at(struct tvol *tv, struct where *w)
{
	struct dg_vol *vol = tvol_open(tv, 0);

	if (!vol)
		return false;
	w->n = dg_jrnl_ncopies(vol);
	for (unsigned c = 0; c < w->n; c++) {
		w->dev[c] = vol->jrnl.dev[c];
		w->entry_off[c] = (vol->jrnl.start[c] << DG_PAGE_SHIFT) +
				  vol->jrnl.log_off + vol->jrnl.head_off;
	}
	dg_vol_close(vol);
	return true;
}

/* The child: append the entry, then die as a crash would. */
static void crash_after_append(struct tvol *tv, bool sealed)
{
	struct dg_vol *vol = tvol_open(tv, 0);
	uint8_t whole[DG_PAGE_SIZE], part[PART_LEN], page[DG_PAGE_SIZE];
	struct {
		struct dg_djentry e;
		struct dg_djrange r[2];
	} h;
	const void *data[2] = { whole, part };
	struct dg_loc lw, lp;
	uint64_t seq;

	if (!vol)
		_exit(2);
	fill(whole, part);
	memset(&h, 0, sizeof(h));
	lw = dg_vpn_loc(vol, VPN_WHOLE);
	lp = dg_vpn_loc(vol, VPN_PART);
	/* The partial page's checksum afterwards: its old bytes (zeros on
	 * a fresh volume) with the range in them. */
	memset(page, 0, sizeof(page));
	memcpy(page + PART_OFF, part, PART_LEN);
	h.e.nranges = 2;
	h.e.len = (sizeof(h) + DG_PAGE_SIZE + ((PART_LEN + 7) & ~7u) +
		   DG_JALIGN - 1) & ~(DG_JALIGN - 1);
	h.r[0] = (struct dg_djrange){
		.row = lw.row, .dev = (uint16_t)lw.dev, .len = DG_PAGE_SIZE,
		.flags = sealed ? DG_JRANGE_SEALED : 0,
		.page_csum = dg_csum_page(vol, lw.dev, lw.row, whole) };
	h.r[1] = (struct dg_djrange){
		.row = lp.row, .dev = (uint16_t)lp.dev, .off = PART_OFF,
		.len = PART_LEN,
		.page_csum = dg_csum_page(vol, lp.dev, lp.row, page) };
	_exit(dg_journal_append(vol, &h.e, data, &seq) ? 3 : 0);
}

static bool run_child(struct tvol *tv, bool sealed)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		crash_after_append(tv, sealed);
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/* Flip a byte of the entry's sealed page in log copy c. */
static void damage_sealed_bytes(struct tvol *tv, const struct where *w,
				unsigned c)
{
	uint64_t off = w->entry_off[c] + sizeof(struct dg_djentry) +
		       2 * sizeof(struct dg_djrange) + 2000;
	uint8_t b;

	tvol_peek(tv, w->dev[c], off, &b, 1);
	b ^= 0x10;
	tvol_poke(tv, w->dev[c], off, &b, 1);
}

/* After replay: both pages hold the entry (applied) or zeros (dropped),
 * and every page reads back verified. */
static void check_replayed(struct tvol *tv, bool applied)
{
	uint8_t whole[DG_PAGE_SIZE], part[PART_LEN], buf[2 * DG_PAGE_SIZE];
	uint8_t want[2 * DG_PAGE_SIZE] = { 0 };
	uint64_t counts[DG_FAULT_NR];
	struct dg_vol *vol = tvol_open(tv, 0);

	REQUIRE(vol);
	fill(whole, part);
	if (applied) {
		memcpy(want, whole, DG_PAGE_SIZE);
		memcpy(want + DG_PAGE_SIZE + PART_OFF, part, PART_LEN);
	}
	CHECK_EQ(dg_read(vol, VPN_WHOLE, 2, buf), 0);
	CHECK(!memcmp(buf, want, sizeof(want)));
	dg_vol_fault_counts(vol, counts);
	CHECK_EQ(counts[DG_FAULT_DETECTED], 0);
	dg_vol_close(vol);
}

/* What replaying the entry must do. */
enum outcome { APPLIED, DROPPED, CORRUPT };

/* A committed entry that the volume cannot have written: the open
 * fails and says why, nothing is skipped in silence. */
static void check_refused(struct tvol *tv)
{
	struct dg_vol *vol = NULL;
	char err[256];

	CHECK_EQ(dg_vol_open((const char *const *)tv->paths, tv->ndev, 0,
			     &vol, err, sizeof(err)),
		 -EUCLEAN);
	if (vol)
		dg_vol_close(vol);
}

/* Crash after appending the entry (sealed or not), damage the entry's
 * whole page in the log copies of damage_mask, replay, and expect the
 * outcome. */
static void crash_case(const char *tag, bool no_redundancy, bool sealed,
		       unsigned damage_mask, enum outcome want)
{
	struct tvol tv;
	struct where w;

	tvol_make(&tv, tag, 4, no_redundancy ? 0 : 1, 32u << 20,
		  no_redundancy);
	REQUIRE(next_entry_at(&tv, &w));
	REQUIRE(run_child(&tv, sealed));
	for (unsigned c = 0; c < w.n; c++)
		if (damage_mask & (1u << c))
			damage_sealed_bytes(&tv, &w, c);
	if (want == CORRUPT)
		check_refused(&tv);
	else
		check_replayed(&tv, want == APPLIED);
	tvol_cleanup(&tv);
}

/* A sealed page is replayed like any other range. */
static void test_sealed_replay(void)
{
	crash_case("seal", false, true, 0, APPLIED);
}

/* The entry checksum no longer covers a sealed page's bytes: damage
 * there must still make that copy uncommitted, and the other copy is
 * replayed instead. */
static void test_sealed_damaged_in_one_copy(void)
{
	crash_case("seal1", false, true, 1, APPLIED);
}

/* Damaged in every copy (a torn append): the entry is not committed. */
static void test_sealed_damaged_in_both(void)
{
	crash_case("seal2", false, true, ~0u, DROPPED);
}

/* Unsealed, the same damage is caught by the entry checksum. */
static void test_unsealed_damaged_in_both(void)
{
	crash_case("seal3", false, false, ~0u, DROPPED);
}

/* Without checksums (--redundancy none) nothing seals, so a committed
 * entry with a sealed range is corruption: reported, not replayed. */
static void test_no_seal_without_redundancy(void)
{
	crash_case("seal4", true, true, 0, CORRUPT);
}

/* dg_apply() seals a page one range covers whole, and only that. */
static void test_apply_seals_whole_pages(void)
{
	struct tvol tv;
	struct where w;
	struct dg_vol *vol;
	uint8_t page[DG_PAGE_SIZE] = { 1 };
	struct dg_range r[3] = {
		{ .vpn = VPN_WHOLE, .len = DG_PAGE_SIZE, .data = page },
		{ .vpn = VPN_PART, .len = DG_PAGE_SIZE, .data = page },
		{ .vpn = VPN_PART, .off = 8, .len = 8, .data = page },
	};
	struct dg_djrange jr[3];

	tvol_make(&tv, "seal5", 4, 1, 32u << 20, false);
	REQUIRE(next_entry_at(&tv, &w));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(dg_apply(vol, r, 3), 0);
	dg_vol_close(vol);
	tvol_peek(&tv, w.dev[0], w.entry_off[0] + sizeof(struct dg_djentry),
		  jr, sizeof(jr));
	CHECK_EQ(jr[0].flags, DG_JRANGE_SEALED);
	/* VPN_PART is whole but also has a second range: its page checksum
	 * is not the checksum of either range's bytes. */
	CHECK_EQ(jr[1].flags, 0);
	CHECK_EQ(jr[2].flags, 0);
	tvol_cleanup(&tv);
}

/* ---- journal copies beyond parity (DG_FEAT_INCOMPAT_JOURNAL_COPIES) -- */

/* Make a volume made before the flag of tv: parity + 1 journal copies,
 * both superblocks of every device re-sealed. */
static void make_legacy(struct tvol *tv, unsigned parity, uint64_t size)
{
	struct dg_dsuper *s = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);

	if (!s)
		abort();
	for (unsigned d = 0; d < tv->ndev; d++)
		for (unsigned b = 0; b < 2; b++) {
			uint64_t off = b ? size - DG_PAGE_SIZE : 0;

			tvol_peek(tv, d, off, s, DG_PAGE_SIZE);
			if (dg_dsuper_decode(s, s) != 0)
				abort();
			s->incompat &= ~DG_FEAT_INCOMPAT_JOURNAL_COPIES;
			s->jrnl_devs = parity + 1 > 2 ? parity + 1 : 2;
			dg_dsuper_seal(s);
			tvol_poke(tv, d, off, s, DG_PAGE_SIZE);
		}
	free(s);
}

/*
 * The devices of journal copies 0 .. parity lose every journal write
 * after an entry was appended (a crash kept it live): the header that
 * retired it, and the entry of a later update of the same page. The
 * entry is then live on all of them, at the offset and sequence number
 * their stale header expects. With parity + 2 copies the last copy keeps
 * the newest header: nothing is replayed and the page keeps the later
 * bytes. With parity + 1 (legacy) every copy lags, the retired entry is
 * replayed with its checksum, and the old bytes verify: the limit the
 * flag removes (docs/integrity.md).
 */
static void lost_headers_case(const char *tag, unsigned ndev,
			      unsigned parity, bool legacy)
{
	const uint64_t size = 32u << 20;
	uint8_t whole[DG_PAGE_SIZE], part[PART_LEN], buf[DG_PAGE_SIZE];
	uint8_t newer[DG_PAGE_SIZE];
	uint64_t jstart, jbytes, counts[DG_FAULT_NR];
	uint8_t *saved[DG_MAX_PARITY + 1] = { NULL };
	struct dg_range r = { .vpn = VPN_WHOLE, .len = DG_PAGE_SIZE,
			      .data = newer };
	struct tvol tv;
	struct where w;
	struct dg_vol *vol;

	tvol_make(&tv, tag, ndev, parity, size, false);
	if (legacy)
		make_legacy(&tv, parity, size);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	if (legacy) {
		CHECK(!(vol->sb.incompat & DG_FEAT_INCOMPAT_JOURNAL_COPIES));
		CHECK_EQ(dg_jrnl_ncopies(vol), parity + 1 > 2 ? parity + 1 : 2);
	} else {
		CHECK(vol->sb.incompat & DG_FEAT_INCOMPAT_JOURNAL_COPIES);
		CHECK_EQ(dg_jrnl_ncopies(vol), parity + 2);
	}
	for (unsigned c = 0; c < dg_jrnl_ncopies(vol); c++)
		CHECK_EQ(vol->jrnl.dev[c], c);
	jstart = vol->sb.jrnl_start << DG_PAGE_SHIFT;
	jbytes = vol->sb.jrnl_pages << DG_PAGE_SHIFT;
	dg_vol_close(vol);

	REQUIRE(next_entry_at(&tv, &w));
	REQUIRE(run_child(&tv, true));
	/* What devices 0 .. parity keep: the entry live. */
	for (unsigned d = 0; d <= parity; d++) {
		saved[d] = malloc(jbytes);
		REQUIRE(saved[d]);
		tvol_peek(&tv, d, jstart, saved[d], jbytes);
	}
	/* The open redoes and retires it; a later update of the page. */
	memset(newer, 0xb5, sizeof(newer));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(dg_apply(vol, &r, 1), 0);
	dg_vol_close(vol);
	for (unsigned d = 0; d <= parity; d++) {
		tvol_poke(&tv, d, jstart, saved[d], jbytes);
		free(saved[d]);
	}

	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	fill(whole, part);
	CHECK_EQ(dg_read(vol, VPN_WHOLE, 1, buf), 0);
	if (legacy) {
		CHECK(!memcmp(buf, whole, sizeof(buf)));
	} else {
		CHECK(!memcmp(buf, newer, sizeof(buf)));
		CHECK(!dg_journal_dirty(vol));
	}
	dg_vol_fault_counts(vol, counts);
	CHECK_EQ(counts[DG_FAULT_DETECTED], 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void test_lost_headers_p1(void)
{
	lost_headers_case("jlost1", 4, 1, false);
}

static void test_lost_headers_p2(void)
{
	lost_headers_case("jlost2", 5, 2, false);
}

/* Three devices: parity + 2 copies is every device. */
static void test_lost_headers_p1_three_devices(void)
{
	lost_headers_case("jlost3", 3, 1, false);
}

static void test_lost_headers_legacy(void)
{
	lost_headers_case("jlost4", 4, 1, true);
}

/*
 * Appends write side by side (journal.c), so a crash can leave an entry
 * torn and the one after it whole: that update never went on
 * (wait_written()), and the replay stops at the torn one. The entries
 * appended after that replay start at the torn entry's place. Had they
 * gone on with its number, an entry of the same length would end where
 * the old whole one begins, with the very number that follows -- and the
 * next replay would redo a stale update over newer data.
 *
 * Child 1 appends A (page VPN_A) and B (page VPN_B) and dies; A is then
 * torn on every copy. The open replays nothing. Child 2 appends C, as
 * long as A, over VPN_A and dies. The next open must redo C and only C.
 */
#define VPN_A 2048u
#define VPN_B 2049u

/* Journal page vpn, all bytes v: 0 or the append's failure. */
static int append_page(struct dg_vol *vol, uint64_t vpn, uint8_t v)
{
	struct {
		struct dg_djentry e;
		struct dg_djrange r;
	} h;
	uint8_t page[DG_PAGE_SIZE];
	const void *data[1] = { page };
	struct dg_loc l = dg_vpn_loc(vol, vpn);
	uint64_t seq;

	memset(&h, 0, sizeof(h));
	memset(page, v, sizeof(page));
	h.e.nranges = 1;
	h.e.len = (sizeof(h) + DG_PAGE_SIZE + DG_JALIGN - 1) &
		  ~(DG_JALIGN - 1);
	h.r = (struct dg_djrange){
		.row = l.row, .dev = (uint16_t)l.dev, .len = DG_PAGE_SIZE,
		.page_csum = dg_csum_page(vol, l.dev, l.row, page) };
	return dg_journal_append(vol, &h.e, data, &seq);
}

static bool child_appends(struct tvol *tv, const uint64_t *vpn,
			  const uint8_t *v, unsigned n)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct dg_vol *vol = tvol_open(tv, 0);

		if (!vol)
			_exit(2);
		for (unsigned i = 0; i < n; i++)
			if (append_page(vol, vpn[i], v[i]))
				_exit(3);
		_exit(0);	/* a crash: nothing written in place */
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/* Pages VPN_A and VPN_B hold a and b everywhere. */
static void check_ab(struct tvol *tv, uint8_t a, uint8_t b)
{
	uint8_t buf[2 * DG_PAGE_SIZE], want[2 * DG_PAGE_SIZE];
	uint64_t counts[DG_FAULT_NR];
	struct dg_vol *vol = tvol_open(tv, 0);

	REQUIRE(vol);
	memset(want, a, DG_PAGE_SIZE);
	memset(want + DG_PAGE_SIZE, b, DG_PAGE_SIZE);
	CHECK_EQ(dg_read(vol, VPN_A, 2, buf), 0);
	CHECK(!memcmp(buf, want, sizeof(want)));
	dg_vol_fault_counts(vol, counts);
	CHECK_EQ(counts[DG_FAULT_DETECTED], 0);
	dg_vol_close(vol);
}

static void test_whole_entry_after_torn_one(void)
{
	static const uint64_t ab[2] = { VPN_A, VPN_B }, c[1] = { VPN_A };
	static const uint8_t vab[2] = { 0xa1, 0xb1 }, vc[1] = { 0xc1 };
	struct tvol tv;
	struct where w;

	tvol_make(&tv, "jtorn", 4, 1, 32u << 20, false);
	REQUIRE(next_entry_at(&tv, &w));
	REQUIRE(child_appends(&tv, ab, vab, 2));
	for (unsigned i = 0; i < w.n; i++) {
		/* A's page bytes, past its header: torn on every copy. */
		uint64_t off = w.entry_off[i] + sizeof(struct dg_djentry) +
			       sizeof(struct dg_djrange) + 100;
		uint8_t b;

		tvol_peek(&tv, w.dev[i], off, &b, 1);
		b ^= 0x40;
		tvol_poke(&tv, w.dev[i], off, &b, 1);
	}
	check_ab(&tv, 0, 0);		/* neither A nor B */
	REQUIRE(child_appends(&tv, c, vc, 1));
	check_ab(&tv, 0xc1, 0);		/* C, and still not B */
	check_ab(&tv, 0xc1, 0);		/* and again after a clean open */
	tvol_cleanup(&tv);
}

/*
 * Issue 29: a committed entry at the tail (the daemon died once it was
 * durable, before its in-place writes and parity) and one flipped byte
 * in another data page of the same row, on another device. The replay
 * recomputes the row's parity from every data page; the flipped one
 * fails its checksum and the row as it stands after the redo (new page,
 * old parity) cannot rebuild it. The row as found (old parity, the old
 * bytes of the page the entry rewrites) can: the open must succeed and
 * every byte read back be right (docs/integrity.md, "Replay under
 * faults").
 */
/* A child appends one entry of len bytes v at off of vpn (over the
 * page's current bytes) and dies without applying it. */
static bool child_appends_range(struct tvol *tv, uint64_t vpn, uint32_t off,
				uint32_t len, uint8_t v)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct dg_vol *vol = tvol_open(tv, 0);
		struct {
			struct dg_djentry e;
			struct dg_djrange r;
		} h;
		uint8_t page[DG_PAGE_SIZE], bytes[DG_PAGE_SIZE];
		const void *data[1] = { bytes };
		struct dg_loc l;
		uint64_t seq;

		if (!vol || dg_read(vol, vpn, 1, page))
			_exit(2);
		l = dg_vpn_loc(vol, vpn);
		memset(bytes, v, len);
		memcpy(page + off, bytes, len);
		memset(&h, 0, sizeof(h));
		h.e.nranges = 1;
		h.e.len = (sizeof(h) + ((len + 7) & ~7u) + DG_JALIGN - 1) &
			  ~(DG_JALIGN - 1);
		h.r = (struct dg_djrange){
			.row = l.row, .dev = (uint16_t)l.dev,
			.off = (uint16_t)off, .len = (uint16_t)len,
			.page_csum = dg_csum_page(vol, l.dev, l.row, page) };
		_exit(dg_journal_append(vol, &h.e, data, &seq) ? 3 : 0);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/* What befalls the row after the crash. */
enum row_fault {
	FLIP_OTHER,	/* a flipped byte in another data page */
	FLIP_SAME,	/* the entry rewrites bytes [100, 400) of its page,
			 * and the flipped byte is there, outside them */
	MISSING,	/* another data page's device goes missing */
};

static void fault_in_row_case(const char *tag, unsigned ndev,
			      unsigned parity, enum row_fault fault)
{
	bool same_page = fault == FLIP_SAME;
	unsigned flags = fault == MISSING ? DG_OPEN_DEGRADED |
						    DG_OPEN_DEGRADED_RW
					  : 0;
	char *vpath = NULL;
	uint8_t *img = malloc((size_t)DG_MAX_DEVS * DG_PAGE_SIZE);
	uint8_t *buf = malloc(DG_PAGE_SIZE), entry[DG_PAGE_SIZE];
	struct dg_range r[DG_MAX_DEVS];
	uint64_t vpn[DG_MAX_DEVS], counts[DG_FAULT_NR], s = 29, off;
	unsigned k, victim, vdev;
	struct dg_vol *vol;
	struct dg_loc l;
	struct tvol tv;
	uint8_t b;

	REQUIRE(img && buf);
	tvol_make(&tv, tag, ndev, parity, 32u << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	k = vol->k;
	l = dg_vpn_loc(vol, tdata_vpn(vol));
	for (unsigned i = 0; i < k; i++) {
		vpn[i] = dg_loc_vpn(vol, dg_row_data_dev(vol, l.row, i), l.row);
		trand_fill(&s, img + (size_t)i * DG_PAGE_SIZE, DG_PAGE_SIZE);
		r[i] = (struct dg_range){ vpn[i], 0, DG_PAGE_SIZE,
					  img + (size_t)i * DG_PAGE_SIZE };
	}
	CHECK_EQ(dg_apply(vol, r, k), 0);
	/* Another data page of the row, on another device. */
	victim = same_page ? 0 : 1;
	vdev = dg_row_data_dev(vol, l.row, victim);
	off = (dg_row_page(vol, l.row) << DG_PAGE_SHIFT) +
	      (same_page ? 3000 : 1234);
	dg_vol_close(vol);

	/* Rank 0's page rewritten by an entry never applied: whole, or
	 * bytes [100, 400). */
	memset(entry, 0xc1, sizeof(entry));
	if (same_page) {
		REQUIRE(child_appends_range(&tv, vpn[0], 100, 300, 0xc1));
		memcpy(img + 100, entry, 300);
	} else {
		REQUIRE(child_appends(&tv, &vpn[0], (const uint8_t[]){ 0xc1 },
				      1));
		memcpy(img, entry, DG_PAGE_SIZE);
	}
	if (fault == MISSING) {
		vpath = tv.paths[vdev];
		REQUIRE(unlink(vpath) == 0);
		tv.paths[vdev] = strdup("");
	} else {
		tvol_peek(&tv, vdev, off, &b, 1);
		b ^= 0x08;
		tvol_poke(&tv, vdev, off, &b, 1);
	}

	for (int pass = 0; pass < 2; pass++) {
		vol = tvol_open(&tv, flags);
		REQUIRE(vol);
		CHECK(!dg_journal_dirty(vol));
		for (unsigned i = 0; i < k; i++) {
			CHECK_EQ(dg_read(vol, vpn[i], 1, buf), 0);
			CHECK(!memcmp(buf, img + (size_t)i * DG_PAGE_SIZE,
				      DG_PAGE_SIZE));
		}
		dg_vol_fault_counts(vol, counts);
		CHECK_EQ(counts[DG_FAULT_UNRECOVERABLE], 0);
		/* Found and put back by the replay; none left after (a
		 * missing page is no fault). */
		CHECK_EQ(counts[DG_FAULT_DETECTED],
			 pass || vpath ? 0u : 1u);
		CHECK_EQ(counts[DG_FAULT_REPAIRED],
			 pass || vpath ? 0u : 1u);
		if (pass && !vpath)
			SCRUB_CLEAN(vol, false);
		dg_vol_close(vol);
	}
	if (vpath) {
		free(tv.paths[vdev]);
		tv.paths[vdev] = vpath;
	}
	tvol_cleanup(&tv);
	free(img);
	free(buf);
}

static void test_fault_in_replayed_row(void)
{
	fault_in_row_case("jfault1", 4, 1, FLIP_OTHER);
	fault_in_row_case("jfault2", 5, 2, FLIP_OTHER);
}

/* The same with the flipped byte in the page the entry rewrites in
 * part, outside its bytes: rebuilt as found, the redone bytes put back
 * over it. */
static void test_fault_in_replayed_page(void)
{
	fault_in_row_case("jfault3", 4, 1, FLIP_SAME);
	fault_in_row_case("jfault4", 5, 2, FLIP_SAME);
}

/* A crash before another data page's device went missing: that page is
 * in no journal shadow, and the row as redone cannot rebuild it; the
 * row as found can, so the degraded open goes on (design.md, "what is
 * refused", refused only when not even that proves it). */
static void test_missing_device_in_replayed_row(void)
{
	fault_in_row_case("jfault5", 4, 1, MISSING);
	fault_in_row_case("jfault6", 5, 2, MISSING);
}

/* A range flagged both sealed and without bytes (no writer makes one):
 * a hostile entry whose checksum holds would have the seal check hash a
 * page of bytes the entry does not hold, past its end. Refused by its
 * structure, before anything is hashed, on either layout. */
static void test_sealed_without_bytes_refused(void)
{
	struct tvol tv;
	struct dg_vol *vol;

	tvol_make(&tv, "sealnb", 3, 1, 32u << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	for (unsigned v2 = 0; v2 < 2; v2++) {
		bool was = vol->journal_v2;
		size_t len;
		struct dg_djentry *e;
		struct dg_djrange *r;

		vol->journal_v2 = v2;
		len = (dg_jentry_meta_len(vol, 1) + DG_JALIGN - 1) /
		      DG_JALIGN * DG_JALIGN;
		e = calloc(1, len);
		REQUIRE(e);
		e->magic = DG_JENTRY_MAGIC;
		e->len = (uint32_t)len;
		e->seq = 1;
		e->nranges = 1;
		r = (void *)(e + 1);
		r->len = DG_PAGE_SIZE;
		r->flags = DG_JRANGE_SEALED | DG_JRANGE_IN_PLACE;
		e->csum = dg_jentry_csum(vol, e);
		CHECK_EQ(dg_jentry_decode(vol, e, len), -EUCLEAN);
		r->flags = DG_JRANGE_SEALED | DG_JRANGE_RESERVED;
		e->csum = dg_jentry_csum(vol, e);
		CHECK_EQ(dg_jentry_decode(vol, e, len), -EUCLEAN);
		free(e);
		vol->journal_v2 = was;
	}
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* ---- reservations of new rows (DG_FEAT_INCOMPAT_RESERVED_ROWS) ------ */

/* Write rows [row, row + n) whole as new rows (dg_apply_new()), as the
 * next entry of tv's journal; *e and jr[0, max) get the entry that
 * reserves them (the first the update appends). runs: whether the
 * volume reserves by runs of rows (false: as before the flag). */
static void reserve_case(struct tvol *tv, const uint64_t *rows, unsigned n,
			 bool runs, struct dg_djentry *e, struct dg_djrange *jr,
			 unsigned max)
{
	static uint8_t page[DG_PAGE_SIZE] = { 7 };
	struct dg_range r[3 * 16];
	bool fresh[3 * 16];
	struct where w;
	struct dg_vol *vol;
	struct dg_vol_info a, b;
	unsigned nr = 0;

	REQUIRE(next_entry_at(tv, &w));
	vol = tvol_open(tv, 0);
	REQUIRE(vol);
	REQUIRE(vol->k == 3 && n <= 16);
	REQUIRE(vol->reserved_rows);
	vol->reserved_rows = runs;
	for (unsigned i = 0; i < n; i++)
		for (unsigned x = 0; x < vol->k; x++) {
			unsigned dev = dg_row_data_dev(vol, rows[i], x);

			fresh[nr] = true;
			r[nr++] = (struct dg_range){
				.vpn = dg_loc_vpn(vol, dev, rows[i]),
				.len = DG_PAGE_SIZE, .data = page };
		}
	dg_vol_get_info(vol, &a);
	CHECK_EQ(dg_apply_new(vol, r, nr, fresh, NULL), 0);
	dg_vol_get_info(vol, &b);
	CHECK_EQ(b.rows_new - a.rows_new, n);
	dg_vol_close(vol);
	tvol_peek(tv, w.dev[0], w.entry_off[0], e, sizeof(*e));
	REQUIRE(e->nranges <= max);
	tvol_peek(tv, w.dev[0], w.entry_off[0] + sizeof(*e), jr,
		  e->nranges * sizeof(*jr));
}

/* The entry that reserves an update's new rows names a run of
 * consecutive rows a range (DG_JRANGE_ROWS: 2 ranges for 6 rows in two
 * runs), and a range a page on a volume made before the flag. */
static void test_reserves_row_runs(void)
{
	struct tvol tv;
	struct dg_djentry e;
	struct dg_djrange jr[3 * 16];
	uint64_t base, rows[6];

	tvol_make(&tv, "resrows", 4, 1, 32u << 20, false);
	{
		struct dg_vol *vol = tvol_open(&tv, 0);

		REQUIRE(vol);
		base = vol->sb.rows / 2;
		dg_vol_close(vol);
	}
	for (unsigned i = 0; i < 6; i++)
		rows[i] = base + (i < 4 ? i : i + 2);
	reserve_case(&tv, rows, 6, true, &e, jr, 3 * 16);
	CHECK_EQ(e.nranges, 2);
	CHECK_EQ(jr[0].flags, DG_JRANGE_ROWS);
	CHECK_EQ(jr[0].row, base);
	CHECK_EQ(jr[0].page_csum, 4);
	CHECK_EQ(jr[0].dev, 0);
	CHECK_EQ(jr[1].flags, DG_JRANGE_ROWS);
	CHECK_EQ(jr[1].row, base + 6);
	CHECK_EQ(jr[1].page_csum, 2);

	for (unsigned i = 0; i < 6; i++)
		rows[i] = base + 32 + i;
	reserve_case(&tv, rows, 6, false, &e, jr, 3 * 16);
	CHECK_EQ(e.nranges, 18);
	for (unsigned i = 0; i < e.nranges && i < 18; i++) {
		CHECK_EQ(jr[i].flags, DG_JRANGE_RESERVED);
		CHECK_EQ(jr[i].page_csum, 0);
	}
	tvol_cleanup(&tv);
}

/* What dg_jrange_check() takes of a run of rows: whole rows inside the
 * volume and outside its metadata zone (a page reserved alone too), dev
 * and off 0, at least one row and no more pages than the replay may
 * expand (dg_jrange_budget()), and only where the volume has the flag. */
static void test_row_run_checked(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_djrange ok, r;

	tvol_make(&tv, "resrowck", 4, 1, 32u << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	ok = (struct dg_djrange){ .row = vol->sb.rows - 4, .len = DG_PAGE_SIZE,
				  .flags = DG_JRANGE_ROWS, .page_csum = 4 };
	CHECK_EQ(dg_jrange_check(vol, &ok), 0);
	r = ok;
	r.page_csum = 5;	/* past the last row */
	CHECK_EQ(dg_jrange_check(vol, &r), -EUCLEAN);
	r.page_csum = UINT64_MAX; /* row + count wraps */
	CHECK_EQ(dg_jrange_check(vol, &r), -EUCLEAN);
	r = ok;
	r.page_csum = 0;
	CHECK_EQ(dg_jrange_check(vol, &r), -EUCLEAN);
	{
		/* more pages than the replay may expand (twice what the
		 * log could name a range a page) */
		uint64_t lb = vol->jrnl.log_bytes;

		vol->jrnl.log_bytes = 2 * vol->k * sizeof(r);
		CHECK_EQ(dg_jrange_check(vol, &ok), 0);
		vol->jrnl.log_bytes--;
		CHECK_EQ(dg_jrange_check(vol, &ok), -EUCLEAN);
		vol->jrnl.log_bytes = lb;
	}
	r = ok;
	r.dev = 1;
	CHECK_EQ(dg_jrange_check(vol, &r), -EUCLEAN);
	r = ok;
	r.off = 8;
	r.len = DG_PAGE_SIZE - 8;
	CHECK_EQ(dg_jrange_check(vol, &r), -EUCLEAN);
	r = ok;
	r.flags |= DG_JRANGE_RESERVED;
	CHECK_EQ(dg_jrange_check(vol, &r), -EUCLEAN);
	{
		/* rows of the metadata zone, which no update reserves:
		 * the zone's last row, a run ending there, and a run
		 * from its last row on; a page reserved there */
		uint64_t z = vol->sb.ditto_pages / vol->k;

		REQUIRE(vol->sb.incompat & DG_FEAT_INCOMPAT_META_ZONE);
		REQUIRE(z > 0 && z < vol->sb.rows - 8);
		r = ok;
		r.row = z;
		CHECK_EQ(dg_jrange_check(vol, &r), 0);
		r.row = z - 1;
		CHECK_EQ(dg_jrange_check(vol, &r), -EUCLEAN);
		r.row = 0;
		r.page_csum = 2;
		CHECK_EQ(dg_jrange_check(vol, &r), -EUCLEAN);
		r = (struct dg_djrange){ .row = z - 1,
					 .dev = (uint16_t)dg_row_data_dev(
						 vol, z - 1, 0),
					 .len = DG_PAGE_SIZE,
					 .flags = DG_JRANGE_RESERVED };
		CHECK_EQ(dg_jrange_check(vol, &r), -EUCLEAN);
		r.row = z;
		r.dev = (uint16_t)dg_row_data_dev(vol, z, 0);
		CHECK_EQ(dg_jrange_check(vol, &r), 0);
	}
	vol->reserved_rows = false;	/* a volume made before the flag */
	CHECK_EQ(dg_jrange_check(vol, &ok), -EUCLEAN);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A child appends entries of per ranges each from r[0, n) (the last
 * entry the rest) and dies before anything of them is in place. */
static bool child_appends_ranges(struct tvol *tv, const struct dg_djrange *r,
				 unsigned n, unsigned per)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct dg_vol *vol = tvol_open(tv, 0);

		if (!vol)
			_exit(2);
		for (unsigned i = 0; i < n; i += per) {
			unsigned m = n - i < per ? n - i : per;
			size_t len = (sizeof(struct dg_djentry) +
				      m * sizeof(*r) + DG_JALIGN - 1) &
				     ~(size_t)(DG_JALIGN - 1);
			struct dg_djentry *e = calloc(1, len);
			const void **data = calloc(m, sizeof(*data));
			uint64_t seq;

			if (!e || !data)
				_exit(4);
			e->len = (uint32_t)len;
			e->nranges = m;
			memcpy(e + 1, r + i, m * sizeof(*r));
			if (dg_journal_append(vol, e, data, &seq))
				_exit(3);
			free(e);
			free(data);
		}
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/* Data pages of rows [row, row + n) with a checksum set. */
static uint64_t pages_with_csum(struct dg_vol *vol, uint64_t row, uint64_t n)
{
	uint64_t set = 0, cs;

	for (uint64_t w = row; w < row + n; w++)
		for (unsigned x = 0; x < vol->k; x++)
			set += dg_csum_get(vol, dg_row_data_dev(vol, w, x), w,
					   &cs) == 0 && cs != DG_CSUM_NONE;
	return set;
}

/*
 * The pages a replay expands from runs of rows, over all its entries, are
 * bounded by twice what the log could name a range a page
 * (dg_jrange_budget()):
 * one run at that bound is replayed, each of its pages taken as found
 * once; 16 copies of it in one entry (a forged entry with a valid
 * checksum once made the open take 30 s and memory for 16 times the
 * pages), the same run in entries that pass the bound together, or two
 * overlapping runs, are
 * refused as corrupt before any page is touched.
 */
static void test_row_runs_bounded(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_djrange r[64];
	uint64_t n, base, zrows, budget;
	unsigned over, k;

	tvol_make(&tv, "rowsbound", 4, 1, 32u << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	zrows = vol->sb.ditto_pages / vol->k;
	budget = dg_jrange_budget(vol);
	k = vol->k;
	n = budget / vol->k;
	if (n > vol->sb.rows - zrows)
		n = vol->sb.rows - zrows;
	base = vol->sb.rows - n;
	CHECK_EQ(pages_with_csum(vol, base, n), 0);
	dg_vol_close(vol);
	/* entries of the run that pass the bound together */
	over = (unsigned)(budget / (n * k) + 1);
	REQUIRE(over <= 64);
	printf("# a run of %" PRIu64 " rows; %u entries of it pass the bound "
	       "of %" PRIu64 " pages\n", n, over, budget);
	for (unsigned i = 0; i < 64; i++)
		r[i] = (struct dg_djrange){ .row = base, .len = DG_PAGE_SIZE,
					    .flags = DG_JRANGE_ROWS,
					    .page_csum = n };

	/* 16 times the run in one entry; the run in enough entries */
	REQUIRE(child_appends_ranges(&tv, r, 16, 16));
	check_refused(&tv);
	vol = tvol_open(&tv, DG_OPEN_NORECOVER | DG_OPEN_RDONLY);
	REQUIRE(vol);
	CHECK_EQ(pages_with_csum(vol, base, n), 0);	/* none touched */
	dg_vol_close(vol);
	tvol_cleanup(&tv);

	tvol_make(&tv, "rowsbound", 4, 1, 32u << 20, false);
	REQUIRE(child_appends_ranges(&tv, r, over, 1));
	check_refused(&tv);
	tvol_cleanup(&tv);

	/* overlapping runs, well within the bound */
	tvol_make(&tv, "rowsbound", 4, 1, 32u << 20, false);
	r[0].page_csum = 4;
	r[1] = r[0];
	r[1].row = base + 2;
	REQUIRE(child_appends_ranges(&tv, r, 2, 2));
	check_refused(&tv);
	tvol_cleanup(&tv);

	/* the run once: every page of it taken as found, once */
	tvol_make(&tv, "rowsbound", 4, 1, 32u << 20, false);
	r[0].page_csum = n;
	REQUIRE(child_appends_ranges(&tv, r, 1, 1));
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(pages_with_csum(vol, base, n), n * vol->k);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/*
 * A run of rows reserved by an update that never came, its rows half
 * written (bytes that match neither checksum nor parity), replayed: each
 * data page taken as found -- its checksum from its bytes, the rows'
 * parity recomputed -- on parity 1 and 2; on a degraded volume the
 * present pages alike and the open goes on. in_place: a later entry
 * wrote one page of the run in place (DG_JRANGE_IN_PLACE), which keeps
 * those bytes and that entry's checksum.
 */
#define RUN_ROWS 4u
static void run_replay_case(const char *tag, unsigned ndev, unsigned parity,
			    bool missing, bool in_place)
{
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_djrange r[2];
	uint8_t *img = malloc((size_t)RUN_ROWS * DG_MAX_DEVS * DG_PAGE_SIZE);
	uint8_t *buf = malloc(DG_PAGE_SIZE);
	uint64_t base, s = 41 + ndev, counts[DG_FAULT_NR], cs, vpn_in = 0;
	unsigned k, gone = 0, nr = 1;
	char *vpath = NULL;

	REQUIRE(img && buf);
	tvol_make(&tv, tag, ndev, parity, 32u << 20, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	k = vol->k;
	base = vol->sb.rows - 2 * RUN_ROWS;
	r[0] = (struct dg_djrange){ .row = base, .len = DG_PAGE_SIZE,
				    .flags = DG_JRANGE_ROWS,
				    .page_csum = RUN_ROWS };
	for (unsigned i = 0; i < RUN_ROWS * k; i++) {
		uint64_t row = base + i / k;
		unsigned dev = dg_row_data_dev(vol, row, i % k);

		trand_fill(&s, img + (size_t)i * DG_PAGE_SIZE, DG_PAGE_SIZE);
		if (in_place && i == k) {
			/* row base + 1's first page, written in place */
			memset(img + (size_t)i * DG_PAGE_SIZE, 0xd7,
			       DG_PAGE_SIZE);
			r[nr++] = (struct dg_djrange){
				.row = row, .dev = (uint16_t)dev,
				.len = DG_PAGE_SIZE,
				.flags = DG_JRANGE_IN_PLACE,
				.page_csum = dg_csum_page(
					vol, dev, row,
					img + (size_t)i * DG_PAGE_SIZE) };
			vpn_in = dg_loc_vpn(vol, dev, row);
		}
		tvol_poke(&tv, dev, dg_row_page(vol, row) << DG_PAGE_SHIFT,
			  img + (size_t)i * DG_PAGE_SIZE, DG_PAGE_SIZE);
	}
	gone = dg_row_data_dev(vol, base, 1);
	dg_vol_close(vol);
	REQUIRE(child_appends_ranges(&tv, r, nr, 1));
	if (missing) {
		vpath = tv.paths[gone];
		REQUIRE(unlink(vpath) == 0);
		tv.paths[gone] = strdup("");
	}

	for (int pass = 0; pass < 2; pass++) {
		vol = tvol_open(&tv, missing ? DG_OPEN_DEGRADED |
						       DG_OPEN_DEGRADED_RW
					     : 0);
		REQUIRE(vol);
		CHECK(!dg_journal_dirty(vol));
		for (unsigned i = 0; i < RUN_ROWS * k; i++) {
			uint64_t row = base + i / k;
			unsigned dev = dg_row_data_dev(vol, row, i % k);
			const uint8_t *want = img + (size_t)i * DG_PAGE_SIZE;

			if (missing && dev == gone)
				continue;	/* left to the rebuild */
			CHECK_EQ(dg_csum_get(vol, dev, row, &cs), 0);
			CHECK(cs == dg_csum_page(vol, dev, row, want));
			CHECK_EQ(dg_read(vol, dg_loc_vpn(vol, dev, row), 1,
					 buf), 0);
			CHECK(!memcmp(buf, want, DG_PAGE_SIZE));
		}
		if (in_place) {
			CHECK_EQ(dg_read(vol, vpn_in, 1, buf), 0);
			CHECK(buf[0] == 0xd7 && buf[DG_PAGE_SIZE - 1] == 0xd7);
			CHECK_EQ(dg_csum_get(vol, (unsigned)r[1].dev,
					     r[1].row, &cs), 0);
			CHECK(cs == r[1].page_csum);
		}
		dg_vol_fault_counts(vol, counts);
		CHECK_EQ(counts[DG_FAULT_DETECTED], 0);
		CHECK_EQ(counts[DG_FAULT_UNRECOVERABLE], 0);
		if (!missing)
			SCRUB_CLEAN(vol, false);
		dg_vol_close(vol);
	}
	if (vpath) {
		free(tv.paths[gone]);
		tv.paths[gone] = vpath;
	}
	tvol_cleanup(&tv);
	free(img);
	free(buf);
}

static void test_run_replay_p1(void)
{
	run_replay_case("runrp1", 4, 1, false, false);
}

static void test_run_replay_p2(void)
{
	run_replay_case("runrp2", 5, 2, false, false);
}

static void test_run_replay_degraded(void)
{
	run_replay_case("runrdeg", 4, 1, true, false);
}

static void test_run_then_in_place(void)
{
	run_replay_case("runrip", 4, 1, false, true);
}

/*
 * The journal across a rebuild (rebuild.c opens without recovery).
 */
#define RB_SIZE (16ull << 20)

static void rb_event(void *arg, const struct dg_chk_event *ev)
{
	unsigned *rebuilt = arg;

	if (ev->kind == DG_CHK_DEV_REBUILT)
		(*rebuilt)++;
}

static void rb_check_all(struct tvol *tv, uint8_t want[][DG_PAGE_SIZE],
			 unsigned n)
{
	struct dg_vol *vol = tvol_open(tv, 0);
	uint8_t got[DG_PAGE_SIZE];

	REQUIRE(vol);
	for (unsigned i = 0; i < n; i++) {
		REQUIRE(dg_read(vol, 500 + 7 * i, 1, got) == 0);
		CHECK(memcmp(got, want[i], DG_PAGE_SIZE) == 0);
	}
	dg_vol_close(vol);
}

/*
 * A child opens the volume with flags, journals one page of v at the
 * first vpn from 900 on that is not on device skip, and dies before it
 * writes in place (a crash). Returns that vpn, 0 on failure.
 */
static uint64_t crash_after_journal(struct tvol *tv, unsigned flags,
				    unsigned skip, uint8_t v)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct dg_vol *vol = tvol_open(tv, flags);
		uint64_t vpn = 900;

		if (!vol)
			_exit(100);
		while (dg_vpn_loc(vol, vpn).dev == skip)
			vpn++;
		if (append_page(vol, vpn, v))
			_exit(101);
		_exit((int)(vpn - 900)); /* nothing written in place */
	}
	if (pid <= 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) >= 100)
		return 0;
	return 900 + (uint64_t)WEXITSTATUS(st);
}

static void rb_check_page(struct tvol *tv, uint64_t vpn, uint8_t v)
{
	struct dg_vol *vol = tvol_open(tv, 0);
	uint8_t got[DG_PAGE_SIZE], want[DG_PAGE_SIZE];

	REQUIRE(vol);
	memset(want, v, DG_PAGE_SIZE);
	REQUIRE(dg_read(vol, vpn, 1, got) == 0);
	CHECK(memcmp(got, want, DG_PAGE_SIZE) == 0);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
}

/*
 * A rebuild opens without replaying the journal (fsck replays at its
 * reopen after it) and writes: its close must not retire the committed
 * entries it never replayed -- acknowledged updates would be lost. A
 * crash on a degraded volume open for writes, then the rebuild; and a
 * rebuild of a whole volume (fsck runs the pass on any) the same.
 */
static void test_unreplayed_journal_kept(void)
{
	static uint8_t want[4][DG_PAGE_SIZE];
	struct tvol tv;
	unsigned rebuilt = 0;
	char err[256] = "";
	uint64_t vpn;

	tvol_make(&tv, "rebuildjrnl", 3, 1, RB_SIZE, false);
	tvol_fill_spread(&tv, want, 4);
	REQUIRE(truncate(tv.paths[1], 0) == 0 && truncate(tv.paths[1], RB_SIZE) == 0);
	vpn = crash_after_journal(&tv, DG_OPEN_DEGRADED | DG_OPEN_DEGRADED_RW,
				  1, 0x5a);
	REQUIRE(vpn);
	REQUIRE(dg_vol_rebuild((const char *const *)tv.paths, 3, rb_event, &rebuilt,
			       NULL, NULL, err, sizeof(err)) == 0);
	CHECK_EQ(rebuilt, 1);
	rb_check_page(&tv, vpn, 0x5a);	/* the open after replays it */
	rb_check_all(&tv, want, 4);

	vpn = crash_after_journal(&tv, 0, DG_MAX_DEVS, 0xa5);
	REQUIRE(vpn);
	REQUIRE(dg_vol_rebuild((const char *const *)tv.paths, 3, rb_event, &rebuilt,
			       NULL, NULL, err, sizeof(err)) == 0);
	rb_check_page(&tv, vpn, 0xa5);
	tvol_cleanup(&tv);
}

/*
 * An append waiting for log space is woken by an entry retired; once the
 * volume latches, none is (apply.c marks an entry done only after its
 * writes persisted): the waiter must see the latch and fail, not hang.
 */
#define FULL_PAGES 16u	/* pages an entry of the full log names */

struct full_entry {
	struct dg_djentry e;
	struct dg_djrange r[FULL_PAGES];
};

struct full_append {
	struct dg_vol *vol;
	atomic_int ret;
	atomic_bool returned;
};

static int full_append(struct dg_vol *vol)
{
	static uint8_t page[DG_PAGE_SIZE];
	const void *data[FULL_PAGES];
	struct full_entry h;
	uint64_t seq;

	memset(&h, 0, sizeof(h));
	memset(page, 0x3c, sizeof(page));
	h.e.nranges = FULL_PAGES;
	h.e.len = (sizeof(h) + FULL_PAGES * DG_PAGE_SIZE + DG_JALIGN - 1) &
		  ~(DG_JALIGN - 1);
	for (unsigned i = 0; i < FULL_PAGES; i++) {
		struct dg_loc l = dg_vpn_loc(vol, 3000 + i);

		h.r[i] = (struct dg_djrange){
			.row = l.row, .dev = (uint16_t)l.dev,
			.len = DG_PAGE_SIZE,
			.page_csum = dg_csum_page(vol, l.dev, l.row, page) };
		data[i] = page;
	}
	return dg_journal_append(vol, &h.e, data, &seq);
}

static void *full_append_thread(void *arg)
{
	struct full_append *a = arg;

	atomic_store(&a->ret, full_append(a->vol));
	atomic_store(&a->returned, true);
	return NULL;
}

/* Would an entry of len bytes wait for space (journal.c, log_used())? */
static bool log_full(const struct dg_journal *j, uint64_t len)
{
	uint64_t used = j->head_off >= j->disk_tail_off
				? j->head_off - j->disk_tail_off
				: j->log_bytes - j->disk_tail_off + j->head_off;

	if (j->head_off + len > j->log_bytes)
		len += j->log_bytes - j->head_off;
	return used + len + DG_JALIGN > j->log_bytes;
}

static void test_full_log_latched(void)
{
	struct full_append a = { 0 };
	struct tvol tv;
	pthread_t th;
	struct timespec t0, now;
	uint64_t len, n = 0;

	tvol_make(&tv, "jfull", 4, 1, 32u << 20, false);
	a.vol = tvol_open(&tv, 0);
	REQUIRE(a.vol);
	/* Fill the log with entries never marked done (none retires). */
	len = a.vol->jrnl.head_off;
	REQUIRE(full_append(a.vol) == 0);
	/* the first entry's length (at 0 if it wrapped) */
	len = a.vol->jrnl.head_off >= len ? a.vol->jrnl.head_off - len
					  : a.vol->jrnl.head_off;
	while (!log_full(&a.vol->jrnl, len)) {
		REQUIRE(full_append(a.vol) == 0);
		REQUIRE(++n < 100000);
	}
	REQUIRE(pthread_create(&th, NULL, full_append_thread, &a) == 0);
	/* Most likely waiting by now; either way it must come back. */
	usleep(300 * 1000);
	dg_latch_set(&a.vol->latch, -EIO, "test: latched with a full log");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (atomic_load(&a.returned))
			break;
		usleep(10 * 1000);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 30);
	CHECK(atomic_load(&a.returned));
	if (!atomic_load(&a.returned)) {
		/* Hung: the thread still uses the volume; leave both. */
		printf("# the append waiting for space never returned\n");
		return;
	}
	pthread_join(th, NULL);
	CHECK_EQ(atomic_load(&a.ret), -EIO);
	/* A new append on the full, latched log fails at once too. */
	CHECK_EQ(full_append(a.vol), -EIO);
	CHECK(dg_vol_close(a.vol) != 0);
	tvol_cleanup(&tv);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "sealed_replay", test_sealed_replay },
		{ "sealed_damaged_in_one_copy", test_sealed_damaged_in_one_copy },
		{ "sealed_damaged_in_both", test_sealed_damaged_in_both },
		{ "unsealed_damaged_in_both", test_unsealed_damaged_in_both },
		{ "no_seal_without_redundancy",
		  test_no_seal_without_redundancy },
		{ "apply_seals_whole_pages", test_apply_seals_whole_pages },
		{ "lost_headers_p1", test_lost_headers_p1 },
		{ "lost_headers_p2", test_lost_headers_p2 },
		{ "lost_headers_p1_three_devices",
		  test_lost_headers_p1_three_devices },
		{ "lost_headers_legacy", test_lost_headers_legacy },
		{ "whole_entry_after_torn_one",
		  test_whole_entry_after_torn_one },
		{ "fault_in_replayed_row", test_fault_in_replayed_row },
		{ "fault_in_replayed_page", test_fault_in_replayed_page },
		{ "missing_device_in_replayed_row",
		  test_missing_device_in_replayed_row },
		{ "sealed_without_bytes_refused",
		  test_sealed_without_bytes_refused },
		{ "reserves_row_runs", test_reserves_row_runs },
		{ "row_run_checked", test_row_run_checked },
		{ "row_runs_bounded", test_row_runs_bounded },
		{ "run_replay_p1", test_run_replay_p1 },
		{ "run_replay_p2", test_run_replay_p2 },
		{ "run_replay_degraded", test_run_replay_degraded },
		{ "run_then_in_place", test_run_then_in_place },
		{ "unreplayed_journal_kept", test_unreplayed_journal_kept },
		{ "full_log_latched", test_full_log_latched },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
