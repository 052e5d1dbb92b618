// SPDX-License-Identifier: MIT
/* test_new_index.c -- a checksum index set up in the rounds of the
 * journaled update that first sets a checksum of it, its bit in the init
 * map written before the journal's tail passes that update */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "csum.h"
#include "harness.h"

/*
 * A journaled batch that sets the first checksums of an index writes the
 * index's pages with them, in its own round, and leaves the bit in core
 * (csum.c, fresh_add()); the map page is written before the journal's
 * tail moves (journal.c, write_head()). Until then a crash leaves the
 * bit clear on the media over pages that hold checksums of rows the log
 * names, which the replay sets again. These cases look at the map on
 * the media, crash (a child that exits without a checkpoint), tear the
 * pages by hand, and read back. docs/design.md, "A new index in the
 * update's rounds".
 */
#define SIZE (32u << 20)

/* An index no one wrote, far from the metadata's, and a row of it
 * (slot off) on its first data page. */
static void fresh_index(struct dg_vol *vol, uint64_t *index)
{
	*index = vol->sb.csum_pages - 2;
	REQUIRE(*index > 2);
	REQUIRE(!dg_cmap_test(vol, *index));
}

/* A 4-device volume (tag) open, and an index no one wrote; NULL if it
 * does not open (the caller REQUIREs it). */
static struct dg_vol *fresh_volume(struct tvol *tv, const char *tag,
				   unsigned parity, uint64_t *index)
{
	struct dg_vol *vol;

	tvol_make(tv, tag, 4, parity, SIZE, false);
	vol = tvol_open(tv, 0);
	if (vol)
		fresh_index(vol, index);
	return vol;
}

static uint64_t row_vpn(struct dg_vol *vol, uint64_t index, unsigned off,
			unsigned *dev)
{
	uint64_t row = index * DG_CSUMS_PER_PAGE + off;

	*dev = dg_row_data_dev(vol, row, 0);
	return dg_loc_vpn(vol, *dev, row);
}

static void fill(uint8_t *buf, uint8_t v)
{
	for (unsigned i = 0; i < DG_PAGE_SIZE; i++)
		buf[i] = (uint8_t)(v + i * 13);
}

static int put(struct dg_vol *vol, uint64_t vpn, const uint8_t *buf)
{
	return dg_apply(vol, &(struct dg_range){ vpn, 0, DG_PAGE_SIZE, buf },
			1);
}

/* put(), and the page's bit in the allocation bitmap in the same update,
 * as a file's write allocates: a page in use. */
static int put_allocated(struct dg_vol *vol, uint64_t vpn,
			 const uint8_t *buf)
{
	const uint64_t per = DG_PAGE_SIZE * 8ull;
	uint64_t bm = vol->bitmap_vpn + vpn / per;
	uint16_t off = (uint16_t)(vpn % per / 8);
	uint8_t page[DG_PAGE_SIZE], byte;
	int ret = dg_read(vol, bm, 1, page);

	if (ret)
		return ret;
	byte = page[off] | (uint8_t)(1u << (vpn % 8));
	return dg_apply(vol,
			(struct dg_range[]){ { bm, off, 1, &byte },
					     { vpn, 0, DG_PAGE_SIZE, buf } },
			2);
}

/* How many (device, slot) copies of the map on the media verify and
 * hold index's bit; *verify: how many verify. */
static unsigned bit_on_media(struct tvol *tv, struct dg_vol *vol,
			     uint64_t index, unsigned *verify)
{
	uint64_t p = index / DG_CMAP_BITS, bit = index % DG_CMAP_BITS;
	struct dg_dcmap page __attribute__((aligned(DG_PAGE_SIZE))),
		*m = &page;
	unsigned set = 0;

	*verify = 0;
	for (unsigned d = 0; d < vol->ndev; d++)
		for (unsigned slot = 0; slot < 2; slot++) {
			tvol_peek(tv, d, dg_cmap_slot_off(vol, slot) +
						 p * DG_PAGE_SIZE,
				  m, DG_PAGE_SIZE);
			if (dg_cmap_page_check(vol, p, m) != 1)
				continue;
			(*verify)++;
			set += (m->bits[bit / 8] >> (bit % 8)) & 1;
		}
	return set;
}

static uint64_t faults(struct dg_vol *vol)
{
	uint64_t n[DG_FAULT_NR], sum = 0;

	dg_vol_fault_counts(vol, n);
	for (unsigned k = 0; k < DG_FAULT_NR; k++)
		sum += n[k];
	return sum;
}

/*
 * A 4-device parity 1 volume (tag) with one page written into a new
 * index (slot off of it; *dev its device): the bit set in core, on no
 * copy of the map on the media yet, every copy of which verifies.
 */
static void pending_index(struct tvol *tv, const char *tag, unsigned off,
			  struct dg_vol **vol, uint64_t *index, unsigned *dev)
{
	uint8_t buf[DG_PAGE_SIZE];
	unsigned verify;

	*vol = NULL;
	tvol_make(tv, tag, 4, 1, SIZE, false);
	*vol = tvol_open(tv, 0);
	REQUIRE(*vol);
	fresh_index(*vol, index);
	fill(buf, 1);
	CHECK_EQ(put(*vol, row_vpn(*vol, *index, off, dev), buf), 0);
	CHECK(dg_cmap_test(*vol, *index));
	CHECK_EQ(bit_on_media(tv, *vol, *index, &verify), 0);
	CHECK_EQ(verify, 2 * (*vol)->ndev);
}

/*
 * The bit is in core at once, on the media once the next round (the next
 * update's journal entry) has taken it along -- one slot of the map page
 * on every device -- and in both slots after a clean close and an open,
 * which makes the slot left behind equal again without a fault.
 */
static void bit_rides_next_round(void)
{
	uint8_t buf[DG_PAGE_SIZE];
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t index;
	unsigned dev, verify;

	pending_index(&tv, "newidx-ride", 3, &vol, &index, &dev);
	if (!vol)
		return;
	fill(buf, 2);
	/* A page of an index in use: its entry's round takes the bit. */
	CHECK_EQ(put(vol, tdata_vpn(vol), buf), 0);
	CHECK_EQ(bit_on_media(&tv, vol, index, &verify), vol->ndev);
	CHECK_EQ(verify, 2 * vol->ndev);
	SCRUB_CLEAN(vol, false);
	CHECK_EQ(dg_vol_close(vol), 0);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(faults(vol), 0);
	CHECK_EQ(bit_on_media(&tv, vol, index, &verify), 2 * vol->ndev);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A checkpoint (as at a close) writes a pending bit in a round of its
 * own. */
static void bit_written_at_checkpoint(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t index;
	unsigned dev, verify;

	pending_index(&tv, "newidx-ckpt", 3, &vol, &index, &dev);
	if (!vol)
		return;
	CHECK_EQ(dg_journal_checkpoint(vol), 0);
	CHECK_EQ(bit_on_media(&tv, vol, index, &verify), vol->ndev);
	CHECK_EQ(verify, 2 * vol->ndev);
	CHECK_EQ(dg_vol_close(vol), 0);
	tvol_cleanup(&tv);
}

/*
 * A child writes a page of a new index and crashes: the bit is clear on
 * the media. crash_tear: every copy of every owner's page of the index
 * then fails its seal (a crash in a later round that wrote them all).
 */
static void crash_state(struct tvol *tv, unsigned parity, uint64_t *index,
			uint64_t *vpn, bool tear)
{
	uint8_t buf[DG_PAGE_SIZE];
	struct dg_vol *vol;
	unsigned dev, verify;
	pid_t pid;
	int st;

	vol = fresh_volume(tv, "newidx-crash", parity, index);
	REQUIRE(vol);
	*vpn = row_vpn(vol, *index, 5, &dev);
	REQUIRE(dg_vol_close(vol) == 0);
	fill(buf, 2);
	pid = fork();
	if (pid == 0) {
		vol = tvol_open(tv, 0);
		/* No close: a crash. */
		_exit(!vol || put_allocated(vol, *vpn, buf) ? 2 : 0);
	}
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0);
	vol = tvol_open(tv, DG_OPEN_RDONLY | DG_OPEN_NORECOVER);
	REQUIRE(vol);
	CHECK_EQ(bit_on_media(tv, vol, *index, &verify), 0);
	for (unsigned owner = 0; tear && owner < vol->ndev; owner++)
		for (unsigned c = 0; c < vol->sb.csum_copies; c++) {
			unsigned d = dg_cpage_copy_dev(vol, owner, c);
			uint64_t off = (dg_cpage_copy_page(vol, *index, c)
					<< DG_PAGE_SHIFT) +
				       DG_PAGE_SIZE - 8;
			uint64_t seal;

			tvol_peek(tv, d, off, &seal, 8);
			seal ^= 1;
			tvol_poke(tv, d, off, &seal, 8);
		}
	dg_vol_close(vol);
}

/* The open replays the entry: the page reads its new bytes, every
 * checksum the log names set again, the bit written, nothing reported
 * as a fault, the scrub clean. */
static void reads_back(struct tvol *tv, uint64_t index, uint64_t vpn)
{
	uint8_t want[DG_PAGE_SIZE], got[DG_PAGE_SIZE];
	struct dg_vol *vol = tvol_open(tv, 0);
	unsigned verify;

	REQUIRE(vol);
	fill(want, 2);
	CHECK_EQ(dg_read(vol, vpn, 1, got), 0);
	CHECK(!memcmp(got, want, DG_PAGE_SIZE));
	CHECK(dg_cmap_test(vol, index));
	CHECK(bit_on_media(tv, vol, index, &verify) >= vol->ndev);
	CHECK_EQ(faults(vol), 0);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
}

/* The crash, then the replay, under both parities. */
static void crash_and_replay(bool tear)
{
	for (unsigned parity = 1; parity <= 2; parity++) {
		struct tvol tv;
		uint64_t index, vpn;

		crash_state(&tv, parity, &index, &vpn, tear);
		reads_back(&tv, index, vpn);
		tvol_cleanup(&tv);
	}
}

static void crash_bit_clear(void)
{
	crash_and_replay(false);
}

/* Pages torn on every copy with the bit clear: "never written", set up
 * again by the replay with the checksum its entry names. */
static void crash_torn_pages(void)
{
	crash_and_replay(true);
}

/* An open that does not replay (fsck -n) finds the index's pages in
 * use with the bit clear, and the log naming its rows: left to the
 * replay, no fault -- the crash's. The page reads (its checksum page
 * verifies). */
static void readonly_quiet(void)
{
	uint8_t want[DG_PAGE_SIZE], got[DG_PAGE_SIZE];
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t index, vpn;

	crash_state(&tv, 1, &index, &vpn, false);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	CHECK(!dg_cmap_test(vol, index));
	fill(want, 2);
	CHECK_EQ(dg_read(vol, vpn, 1, got), 0);
	CHECK(!memcmp(got, want, DG_PAGE_SIZE));
	CHECK_EQ(faults(vol), 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* A checksum set outside any entry (a repair's) is in use at once: the
 * bit a journaled batch left in core is written first. */
static void unjournaled_writes_bit(void)
{
	struct dg_flushset fs;
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t index, csum;
	unsigned dev, verify;

	pending_index(&tv, "newidx-unj", 7, &vol, &index, &dev);
	if (!vol)
		return;
	REQUIRE(dg_csum_get(vol, dev, index * DG_CSUMS_PER_PAGE + 7,
			    &csum) == 0);
	dg_flushset_init(&fs);
	CHECK_EQ(dg_csum_set(vol, dev, index * DG_CSUMS_PER_PAGE + 7, csum,
			     &fs), 0);
	CHECK_EQ(dg_flushset_persist(vol->devs, vol->ndev, &fs), 0);
	dg_flushset_fini(&fs);
	CHECK_EQ(bit_on_media(&tv, vol, index, &verify), vol->ndev);
	SCRUB_CLEAN(vol, false);
	CHECK_EQ(dg_vol_close(vol), 0);
	tvol_cleanup(&tv);
}

/*
 * An append that must move the journal's tail to find space while another
 * thread holds the map's lock (as an append carrying a pending bit does,
 * waiting for the journal's lock) writes the map before the tail moves:
 * a crash right after finds the bit on the media, and the open reports
 * nothing. Moved past the entry that set the index up with the bit still
 * pending, the tail would leave a clear bit over pages the log no longer
 * names: an "index in use is clear" fault the crash alone made.
 */
struct map_holder {
	struct dg_vol *vol;
	atomic_uint started, finished;
	atomic_bool locked, done;
};

/* Hold the map's lock until the writer has been inside one append for
 * two looks in a row (it waits for the lock), or is done. */
static void *hold_map(void *arg)
{
	struct map_holder *h = arg;
	unsigned last = ~0u;

	pthread_mutex_lock(&h->vol->cmap_init_lock);
	atomic_store(&h->locked, true);
	while (!atomic_load(&h->done)) {
		unsigned s = atomic_load(&h->started);

		usleep(50000);
		if (s != atomic_load(&h->finished) && s == last)
			break;
		last = s;
	}
	pthread_mutex_unlock(&h->vol->cmap_init_lock);
	return NULL;
}

/* The child: a pending index, the map's lock held, appends until the
 * tail has moved on the media; exits without a close (a crash). */
static int fill_log_held(struct tvol *tv, uint64_t index)
{
	uint8_t buf[DG_PAGE_SIZE];
	struct map_holder h = { 0 };
	struct dg_vol *vol = tvol_open(tv, 0);
	pthread_t th;
	uint64_t tail;
	unsigned dev;
	int ret = 0;

	if (!vol)
		return 2;
	fill(buf, 1);
	if (put(vol, row_vpn(vol, index, 3, &dev), buf))
		return 2;
	h.vol = vol;
	if (pthread_create(&th, NULL, hold_map, &h))
		return 2;
	while (!atomic_load(&h.locked))
		usleep(1000);
	tail = vol->jrnl.disk_tail_seq;
	for (unsigned i = 0; i < 100000 && !ret; i++) {
		atomic_fetch_add(&h.started, 1);
		fill(buf, (uint8_t)i);
		if (put(vol, tdata_vpn(vol), buf))
			ret = 2;
		atomic_fetch_add(&h.finished, 1);
		if (vol->jrnl.disk_tail_seq != tail)
			break;
	}
	if (!ret && vol->jrnl.disk_tail_seq == tail)
		ret = 3; /* the tail never moved */
	/* Joined, not left running: the thread sanitizer counts a thread
	 * the exit leaves behind as a leak. */
	atomic_store(&h.done, true);
	pthread_join(th, NULL);
	return ret;
}

static void tail_waits_for_map(void)
{
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t index;
	unsigned verify;
	pid_t pid;
	int st;

	vol = fresh_volume(&tv, "newidx-tail", 1, &index);
	REQUIRE(vol);
	REQUIRE(dg_vol_close(vol) == 0);
	pid = fork();
	if (pid == 0)
		_exit(fill_log_held(&tv, index));
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	vol = tvol_open(&tv, DG_OPEN_RDONLY | DG_OPEN_NORECOVER);
	REQUIRE(vol);
	CHECK(bit_on_media(&tv, vol, index, &verify) >= vol->ndev);
	dg_vol_close(vol);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(dg_cmap_test(vol, index));
	CHECK_EQ(faults(vol), 0);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/*
 * One slot of a map page failing its seal on one device, the other slot
 * verifying: after a crash (the volume found dirty), a one-slot write
 * the crash tore -- rewritten with no fault; after a clean close, a fault
 * of the device -- reported and rewritten.
 */
static void torn_slot(bool crash)
{
	uint8_t buf[DG_PAGE_SIZE];
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t index, off, word;
	unsigned verify;
	pid_t pid;
	int st;

	vol = fresh_volume(&tv, "newidx-torn", 1, &index);
	REQUIRE(vol);
	off = dg_cmap_slot_off(vol, 0) +
	      index / DG_CMAP_BITS * DG_PAGE_SIZE + 64;
	REQUIRE(dg_vol_close(vol) == 0);
	pid = fork();
	if (pid == 0) {
		unsigned dev;

		vol = tvol_open(&tv, 0);
		fill(buf, 1);
		/* The new index's bit rides the second put's round. */
		if (!vol || put(vol, row_vpn(vol, index, 3, &dev), buf) ||
		    put(vol, tdata_vpn(vol), buf))
			_exit(2);
		_exit(crash ? 0 : dg_vol_close(vol) ? 3 : 0);
	}
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0);
	tvol_peek(&tv, 1, off, &word, 8);
	word ^= 0x10;
	tvol_poke(&tv, 1, off, &word, 8);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	if (crash)
		CHECK_EQ(faults(vol), 0);
	else
		CHECK(faults(vol) > 0);
	CHECK_EQ(bit_on_media(&tv, vol, index, &verify), 2 * vol->ndev);
	CHECK_EQ(verify, 2 * vol->ndev);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static void torn_slot_after_crash(void)
{
	torn_slot(true);
}

static void torn_slot_after_close(void)
{
	torn_slot(false);
}

/*
 * A bit lost from every copy of the map (both slots of every device
 * missed its write: beyond what the map's copies cover) over an index
 * whose pages hold checksums of pages in use: the open finds its
 * checksum pages sealed for this volume, sets the bit again in core and
 * on the media, and says so (dg_cmap_recover(): detected, repaired);
 * the page reads back, and the next open finds nothing.
 */
static void lost_bit_set_again(void)
{
	uint8_t want[DG_PAGE_SIZE], got[DG_PAGE_SIZE];
	struct dg_dcmap page __attribute__((aligned(DG_PAGE_SIZE))),
		*m = &page;
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t index, vpn, p, bit, n[DG_FAULT_NR];
	unsigned dev, verify;

	vol = fresh_volume(&tv, "newidx-lost", 1, &index);
	REQUIRE(vol);
	vpn = row_vpn(vol, index, 9, &dev);
	fill(want, 4);
	CHECK_EQ(put_allocated(vol, vpn, want), 0);
	REQUIRE(dg_vol_close(vol) == 0);
	vol = tvol_open(&tv, DG_OPEN_RDONLY | DG_OPEN_NORECOVER);
	REQUIRE(vol);
	REQUIRE(bit_on_media(&tv, vol, index, &verify) >= vol->ndev);
	p = index / DG_CMAP_BITS;
	bit = index % DG_CMAP_BITS;
	for (unsigned d = 0; d < vol->ndev; d++)
		for (unsigned slot = 0; slot < 2; slot++) {
			uint64_t off = dg_cmap_slot_off(vol, slot) +
				       p * DG_PAGE_SIZE;

			tvol_peek(&tv, d, off, m, DG_PAGE_SIZE);
			m->bits[bit / 8] &= (uint8_t)~(1u << (bit % 8));
			dg_cmap_page_seal(vol, p, m);
			tvol_poke(&tv, d, off, m, DG_PAGE_SIZE);
		}
	CHECK_EQ(bit_on_media(&tv, vol, index, &verify), 0);
	CHECK_EQ(verify, 2 * vol->ndev);
	dg_vol_close(vol);

	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK(dg_cmap_test(vol, index));
	dg_vol_fault_counts(vol, n);
	CHECK_EQ(n[DG_FAULT_DETECTED], 1);
	CHECK_EQ(n[DG_FAULT_REPAIRED], 1);
	CHECK_EQ(bit_on_media(&tv, vol, index, &verify), 2 * vol->ndev);
	CHECK_EQ(dg_read(vol, vpn, 1, got), 0);
	CHECK(!memcmp(got, want, DG_PAGE_SIZE));
	SCRUB_CLEAN(vol, false);
	CHECK_EQ(dg_vol_close(vol), 0);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	CHECK_EQ(faults(vol), 0);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

/* Writers of one new index at once (each its own rows): one sets it up,
 * the others wait for its pages' locks and find it set. */
struct writer {
	struct dg_vol *vol;
	uint64_t index;
	unsigned t;
	int ret;
};

#define WRITERS 4
#define PAGES	16

static void *write_rows(void *arg)
{
	struct writer *w = arg;
	uint8_t buf[DG_PAGE_SIZE];

	for (unsigned i = 0; i < PAGES && !w->ret; i++) {
		unsigned dev;

		fill(buf, (uint8_t)(w->t * PAGES + i));
		w->ret = put(w->vol, row_vpn(w->vol, w->index,
					     i * WRITERS + w->t, &dev),
			     buf);
	}
	return NULL;
}

static void writers_at_once(void)
{
	uint8_t want[DG_PAGE_SIZE], got[DG_PAGE_SIZE];
	struct writer w[WRITERS];
	pthread_t th[WRITERS];
	struct tvol tv;
	struct dg_vol *vol;
	uint64_t index;
	unsigned verify;

	tvol_make(&tv, "newidx-writers", 4, 1, SIZE, false);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	fresh_index(vol, &index);
	for (unsigned t = 0; t < WRITERS; t++) {
		w[t] = (struct writer){ vol, index, t, 0 };
		REQUIRE(pthread_create(&th[t], NULL, write_rows, &w[t]) == 0);
	}
	for (unsigned t = 0; t < WRITERS; t++) {
		pthread_join(th[t], NULL);
		CHECK_EQ(w[t].ret, 0);
	}
	CHECK_EQ(dg_vol_close(vol), 0);
	vol = tvol_open(&tv, 0);
	REQUIRE(vol);
	for (unsigned t = 0; t < WRITERS; t++)
		for (unsigned i = 0; i < PAGES; i++) {
			unsigned dev;

			fill(want, (uint8_t)(t * PAGES + i));
			CHECK_EQ(dg_read(vol, row_vpn(vol, index,
						      i * WRITERS + t, &dev),
					 1, got),
				 0);
			CHECK(!memcmp(got, want, DG_PAGE_SIZE));
		}
	CHECK_EQ(bit_on_media(&tv, vol, index, &verify), 2 * vol->ndev);
	CHECK_EQ(faults(vol), 0);
	SCRUB_CLEAN(vol, false);
	dg_vol_close(vol);
	tvol_cleanup(&tv);
}

static const struct test_case cases[] = {
	{ "bit_rides_next_round", bit_rides_next_round },
	{ "bit_written_at_checkpoint", bit_written_at_checkpoint },
	{ "crash_bit_clear", crash_bit_clear },
	{ "crash_torn_pages", crash_torn_pages },
	{ "readonly_quiet", readonly_quiet },
	{ "tail_waits_for_map", tail_waits_for_map },
	{ "torn_slot_after_crash", torn_slot_after_crash },
	{ "torn_slot_after_close", torn_slot_after_close },
	{ "lost_bit_set_again", lost_bit_set_again },
	{ "unjournaled_writes_bit", unjournaled_writes_bit },
	{ "writers_at_once", writers_at_once },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return test_main(argc, argv, cases);
}
