// SPDX-License-Identifier: MIT
/* journal.c -- the redo journal: append, retire, recover (docs/design.md "The update path", G4) */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "xxh.h"

#include "check.h"
#include "csum.h"
#include "replay_prove.h"

/* An appended entry not yet retired. */
struct dg_jpending {
	uint64_t seq;
	uint64_t at, len;	/* log bytes of the entry */
	uint64_t mlen;		/* of them on a metadata-only copy */
	uint64_t end_off;	/* log offset just past the entry */
	uint32_t bytes_mask;	/* copies that hold its bytes (entry_copies()) */
	int stored;		/* 0 being copied, 1 copied (not yet known
				 * durable), else the store's failure */
	int written;		/* 0 being written, 1 durable, else the
				 * persist failure */
	bool grouped;		/* in the round a leader is making */
	bool done;
	/* Stores the append put in the entry's round besides it (the
	 * map's pending pages, dg_cmap_ride()), or NULL. */
	struct dg_flushset *extra;
};

/*
 * The entry checksum (format.h): header with csum = 0, descriptors, and
 * the bytes of the ranges that are not sealed. The bytes of range i are
 * at data[i], or inline after the descriptors when data is NULL.
 */
size_t dg_jentry_meta_len(const struct dg_vol *vol, uint32_t nranges)
{
	return sizeof(struct dg_djentry) +
	       (size_t)nranges * sizeof(struct dg_djrange) +
	       (vol->journal_v2 ? sizeof(uint64_t) : 0);
}

/* The range bytes of a stored entry (or a copy of one): after the
 * metadata. */
static const uint8_t *entry_bytes(const struct dg_vol *vol,
				  const struct dg_djentry *e, const void *copy)
{
	return (const uint8_t *)copy + dg_jentry_meta_len(vol, e->nranges);
}

/* JOURNAL_V2: the checksum of the bytes of the ranges that are neither
 * sealed nor without bytes (format.h); bytes as entry_csum() takes them.
 * One span or none (a write of one page: its range sealed) is hashed in
 * one call: XXH3's streaming state costs some 230 instructions to set up
 * and finish, and its result is the one-shot hash of the same bytes. */
static uint64_t bytes_csum(const struct dg_vol *vol,
			   const struct dg_djentry *e, const void *const *data,
			   const uint8_t *inl)
{
	const struct dg_djrange *r = (const void *)(e + 1);
	uint64_t seed = vol->seed + e->seq + 1;
	const void *one = "";
	size_t one_len = 0;
	unsigned spans = 0;
	XXH3_state_t st;

	size_t at = 0;

	for (uint32_t i = 0; i < e->nranges && spans < 2; i++) {
		if (!(r[i].flags & (DG_JRANGE_SEALED | DG_JRANGE_NO_BYTES))) {
			one = data ? data[i] : inl + at;
			one_len = r[i].len;
			spans++;
		}
		at += dg_jrange_bytes(&r[i]);
	}
	if (spans < 2)
		return XXH3_64bits_withSeed(one, one_len, seed);
	XXH3_64bits_reset_withSeed(&st, seed);
	for (uint32_t i = 0; i < e->nranges; i++) {
		const void *src = data ? data[i] : inl;

		if (!(r[i].flags & (DG_JRANGE_SEALED | DG_JRANGE_NO_BYTES)))
			XXH3_64bits_update(&st, src, r[i].len);
		if (!data) /* inl is NULL when data is given */
			inl += dg_jrange_bytes(&r[i]);
	}
	return XXH3_64bits_digest(&st);
}

/* JOURNAL_V2: the checksum of the metadata, given its bytes_csum. */
static uint64_t meta_csum(const struct dg_vol *vol,
			  const struct dg_djentry *e, uint64_t bcs)
{
	const struct dg_djrange *r = (const void *)(e + 1);
	struct dg_djentry h = *e;
	XXH3_state_t st;

	h.csum = 0;
	XXH3_64bits_reset_withSeed(&st, vol->seed + h.seq);
	XXH3_64bits_update(&st, &h, sizeof(h));
	XXH3_64bits_update(&st, r, e->nranges * sizeof(*r));
	XXH3_64bits_update(&st, &bcs, sizeof(bcs));
	return XXH3_64bits_digest(&st);
}

/* The bytes_csum a stored V2 entry's metadata carries. */
static uint64_t stored_bcs(const struct dg_djentry *e)
{
	uint64_t bcs;

	memcpy(&bcs, (const struct dg_djrange *)(e + 1) + e->nranges,
	       sizeof(bcs));
	return bcs;
}

static uint64_t entry_csum(const struct dg_vol *vol,
			   const struct dg_djentry *e, const void *const *data)
{
	const struct dg_djrange *r = (const void *)(e + 1);
	const uint8_t *inl = (const uint8_t *)(r + e->nranges);
	struct dg_djentry h = *e;
	XXH3_state_t st;

	if (vol->journal_v2)
		return meta_csum(vol, e, data ? bytes_csum(vol, e, data, NULL)
					      : stored_bcs(e));
	h.csum = 0;
	XXH3_64bits_reset_withSeed(&st, vol->seed + h.seq);
	XXH3_64bits_update(&st, &h, sizeof(h));
	XXH3_64bits_update(&st, r, e->nranges * sizeof(*r));
	for (uint32_t i = 0; i < e->nranges; i++) {
		const void *src = data ? data[i] : inl;

		if (!(r[i].flags & (DG_JRANGE_SEALED | DG_JRANGE_NO_BYTES)))
			XXH3_64bits_update(&st, src, r[i].len);
		inl += dg_jrange_bytes(&r[i]);
	}
	return XXH3_64bits_digest(&st);
}

/* The range bytes the descriptors claim lie inside the entry, a sealed,
 * in-place or reserved range is a whole page, and a sealed one carries
 * its bytes (seals_hold() hashes a page of them): before anything is
 * hashed. What the ranges point at is checked at replay, once the
 * checksum says the entry was really written. */
static bool ranges_fit(const struct dg_vol *vol, const struct dg_djentry *e)
{
	const struct dg_djrange *r = (const void *)(e + 1);
	uint64_t bytes = dg_jentry_meta_len(vol, e->nranges);

	for (uint32_t i = 0; i < e->nranges; i++) {
		if ((r[i].flags & (DG_JRANGE_SEALED | DG_JRANGE_NO_BYTES)) &&
		    (r[i].len != DG_PAGE_SIZE || r[i].off))
			return false;
		if ((r[i].flags & DG_JRANGE_SEALED) &&
		    (r[i].flags & DG_JRANGE_NO_BYTES))
			return false;
		bytes += dg_jrange_bytes(&r[i]);
	}
	return bytes <= e->len;
}

/* Every sealed range's bytes (from data on) hash to the page checksum
 * it carries. */
static bool seals_hold(const struct dg_vol *vol, const struct dg_djentry *e,
		       const uint8_t *data)
{
	const struct dg_djrange *r = (const void *)(e + 1);

	for (uint32_t i = 0; i < e->nranges; i++) {
		if ((r[i].flags & DG_JRANGE_SEALED) &&
		    dg_csum_page(vol, r[i].dev, r[i].row, data) !=
			    r[i].page_csum)
			return false;
		data += dg_jrange_bytes(&r[i]);
	}
	return true;
}

uint64_t dg_jhead_csum(const struct dg_vol *vol, const struct dg_djhead *h)
{
	return XXH3_64bits_withSeed(h, offsetof(struct dg_djhead, csum),
				    vol->seed);
}

void dg_jhead_seal(const struct dg_vol *vol, struct dg_djhead *h)
{
	h->csum = dg_jhead_csum(vol, h);
}

int dg_jhead_decode(const struct dg_vol *vol, const void *slot,
		    uint64_t log_bytes, struct dg_djhead *out)
{
	struct dg_djhead h;

	memcpy(&h, slot, sizeof(h));
	if (h.magic != DG_JHEAD_MAGIC ||
	    memcmp(h.vol_uuid, vol->sb.vol_uuid, 16))
		return -EUCLEAN;
	if (h.csum != dg_jhead_csum(vol, &h))
		return -EBADMSG;
	if (h.tail_off >= log_bytes || h.tail_off % DG_JALIGN)
		return -EUCLEAN;
	*out = h;
	return 0;
}

static uint64_t zone_rows(const struct dg_vol *vol);

/* A lean entry is what format.h says (DG_JENTRY_LEAN), on a volume that
 * has them; its row is checked with every range's (dg_jrange_check()). */
static bool lean_fits(const struct dg_vol *vol, const struct dg_djentry *e)
{
	const struct dg_djrange *r = (const void *)(e + 1);

	if (!(e->flags & DG_JENTRY_LEAN))
		return true;
	return vol->lean_journal && e->nranges == 1 &&
	       r->flags == DG_JRANGE_SEALED && r->row >= zone_rows(vol);
}

/* The header fields and descriptors fit in avail bytes and the ranges
 * in the entry: what must hold before anything is hashed. */
static bool entry_fits(const struct dg_vol *vol, const struct dg_djentry *e,
		       uint64_t avail)
{
	return e->magic == DG_JENTRY_MAGIC && e->len >= sizeof(*e) &&
	       e->len % DG_JALIGN == 0 && e->len <= avail &&
	       (uint64_t)e->nranges * sizeof(struct dg_djrange) +
			       (vol->journal_v2 ? sizeof(uint64_t) : 0) <=
		       e->len - sizeof(*e) &&
	       ranges_fit(vol, e) && lean_fits(vol, e);
}

/* With JOURNAL_V2 the metadata only: the bytes may be on another copy
 * (dg_jentry_bytes_ok()). */
int dg_jentry_decode(const struct dg_vol *vol, const void *p, uint64_t avail)
{
	const struct dg_djentry *e = p;

	if (avail < sizeof(*e) || !entry_fits(vol, e, avail))
		return -EUCLEAN;
	if (entry_csum(vol, e, NULL) != e->csum)
		return -EBADMSG;
	if (!vol->journal_v2 && !seals_hold(vol, e, entry_bytes(vol, e, e)))
		return -EBADMSG;
	return 0;
}

bool dg_jentry_bytes_ok(const struct dg_vol *vol, const struct dg_djentry *e,
			const void *copy)
{
	const uint8_t *b = entry_bytes(vol, e, copy);

	if (!vol->journal_v2)
		return true;
	/* A lean entry's one range is sealed: the word bytes_csum would
	 * take holds its prior (format.h). */
	if (e->flags & DG_JENTRY_LEAN)
		return seals_hold(vol, e, b);
	return bytes_csum(vol, e, NULL, b) == stored_bcs(e) &&
	       seals_hold(vol, e, b);
}

uint64_t dg_jentry_csum(const struct dg_vol *vol, const struct dg_djentry *e)
{
	return entry_csum(vol, e, NULL);
}

/* Rows [0, zone_rows) hold the metadata zone and nothing else
 * (format.h, "Metadata zone"); 0 without one. */
static uint64_t zone_rows(const struct dg_vol *vol)
{
	if (!(vol->sb.incompat & DG_FEAT_INCOMPAT_META_ZONE) || !vol->k)
		return 0;
	return vol->sb.ditto_pages / vol->k;
}

int dg_jrange_check(const struct dg_vol *vol, const struct dg_djrange *r)
{
	/* Committed, yet naming no page of this volume, or sealed where
	 * nothing seals: corruption, never a silent skip. */
	if (r->dev >= vol->ndev || r->row >= vol->sb.rows || r->len == 0 ||
	    r->off + r->len > DG_PAGE_SIZE ||
	    (r->flags & ~(DG_JRANGE_SEALED | DG_JRANGE_NO_BYTES)) ||
	    __builtin_popcount(r->flags) > 1 ||
	    ((r->flags & DG_JRANGE_SEALED) && !vol->sealed_journal) ||
	    ((r->flags & DG_JRANGE_NO_BYTES) && !vol->new_rows))
		return -EUCLEAN;
	/* A run of rows: whole rows, all inside the volume, and only
	 * where the format has them (format.h, DG_JRANGE_ROWS). One run
	 * names no more pages than the replay may expand in all
	 * (dg_jrange_budget()); what all the runs of a replay name
	 * together is bounded by dg_jentry_pages_take(). */
	if ((r->flags & DG_JRANGE_ROWS) &&
	    (!vol->reserved_rows || !vol->parity || r->dev || r->off ||
	     r->len != DG_PAGE_SIZE || r->page_csum == 0 ||
	     r->page_csum > vol->sb.rows - r->row ||
	     r->page_csum > dg_jrange_budget(vol) / vol->k))
		return -EUCLEAN;
	/* A reservation names new rows, never one of the metadata zone
	 * (apply.c, mark_full_rows(): the zone's pages have ditto copies,
	 * which the replay writes from the journal). */
	if ((r->flags & (DG_JRANGE_ROWS | DG_JRANGE_RESERVED)) &&
	    r->row < zone_rows(vol))
		return -EUCLEAN;
	return 0;
}

/*
 * Twice what the log could name a range a page. A genuine log stays under
 * the first half with room for the second: every page a reservation names
 * is named again, a range a page (DG_JRANGE_IN_PLACE), by the entry of its
 * update (apply.c: the same in_place pages), which comes later in the log,
 * so the reservations whose updates reached the log name at most
 * log_bytes / 24 pages together. Only reservations whose entries never came
 * add to that: one per update in flight at the crash (or failed: the volume
 * then takes no more), a band's rows each (344 pages of 4 devices), and it
 * would take hundreds at once to use the second half. A forged log is held
 * to the whole: the replay's list of pages stays O(log_bytes).
 */
uint64_t dg_jrange_budget(const struct dg_vol *vol)
{
	return 2 * (vol->jrnl.log_bytes / sizeof(struct dg_djrange));
}

int dg_jentry_pages_take(const struct dg_vol *vol, const struct dg_djentry *e,
			 uint64_t *left)
{
	const struct dg_djrange *r = (const void *)(e + 1);
	uint64_t next_row = 0;

	if (e->flags & DG_JENTRY_WRAP)
		return 0;
	for (uint32_t i = 0; i < e->nranges; i++) {
		uint64_t pages;

		if (!(r[i].flags & DG_JRANGE_ROWS))
			continue;
		/* The writer's runs: ascending, apart (apply.c,
		 * reserve_ranges()); a run again is no reservation. */
		if (dg_jrange_check(vol, &r[i]) || r[i].row < next_row)
			return -EUCLEAN;
		next_row = r[i].row + r[i].page_csum;
		pages = r[i].page_csum * vol->k;
		if (pages > *left)
			return -EUCLEAN;
		*left -= pages;
	}
	return 0;
}

bool dg_journal_marks(const struct dg_vol *vol, const uint8_t *area,
		      uint64_t bytes)
{
	for (uint64_t s = 0; s < 2 && (s + 1) * DG_PAGE_SIZE <= bytes; s++) {
		struct dg_djhead h;

		memcpy(&h, area + s * DG_PAGE_SIZE, sizeof(h));
		if (h.magic == DG_JHEAD_MAGIC && h.csum == dg_jhead_csum(vol, &h))
			return true;
	}
	for (uint64_t off = 2 * DG_PAGE_SIZE; off + sizeof(struct dg_djentry)
					      <= bytes; off += DG_JALIGN) {
		const struct dg_djentry *e = (const void *)(area + off);

		if (!entry_fits(vol, e, bytes - off))
			continue;
		if (entry_csum(vol, e, NULL) == e->csum)
			return true;
	}
	return false;
}

static struct dg_dev *copy_dev(struct dg_vol *vol, unsigned c,
			       uint64_t *area)
{
	struct dg_journal *j = &vol->jrnl;

	*area = j->start[c] << DG_PAGE_SHIFT;
	return vol->devs[j->dev[c]].present ? &vol->devs[j->dev[c]] : NULL;
}

/* Write both header slots' successor: the slot not written last. 0, or
 * the first failure: no further copy is written, and the in-core tail
 * is not taken as durable (log_used() measures from the durable one).
 * -EAGAIN, nothing written: a new index's bit is pending and an append
 * holds the map's lock (below); the caller lets go of the journal's
 * lock, writes the map (dg_cmap_flush()) and comes back. */
static int write_head(struct dg_vol *vol)
{
	struct dg_journal *j = &vol->jrnl;
	struct dg_djhead h = { 0 };
	struct dg_flushset fs;
	uint64_t area;
	int ret = 0, r;

	/* Opened without recovery over live entries: the header on the
	 * media names them, and stays (struct dg_journal, replayed). */
	if (!j->replayed)
		return 0;
	/* A new index's bit still pending (csum.c, the map) is written
	 * before the tail passes the entries that name its rows: an open
	 * after a crash then finds the index clear only while the log
	 * still names them (dg_cmap_recover(): no fault). Only tried
	 * here: an append holding the map's lock waits for the journal's,
	 * which the caller holds. */
	if (!dg_cmap_flush_try(vol, &ret))
		return -EAGAIN;
	if (ret)
		return ret;

	h.magic = DG_JHEAD_MAGIC;
	memcpy(h.vol_uuid, vol->sb.vol_uuid, 16);
	h.hseq = ++j->hseq;
	h.tail_off = j->tail_off;
	h.tail_seq = j->tail_seq;
	dg_jhead_seal(vol, &h);
	/* Every copy in one round (media.h): the slot written is the one
	 * not written last, so a crash that tears it on every copy leaves
	 * the other slot, the header before, whole on each: the older tail,
	 * whose entries are all still in the log (the space behind the new
	 * tail is reused only once it is durable, below). */
	dg_flushset_init(&fs);
	for (unsigned c = 0; c < j->ncopies && !ret; c++) {
		struct dg_dev *d = copy_dev(vol, c, &area);
		uint64_t off = area + (h.hseq % 2) * DG_PAGE_SIZE;

		if (!d)
			continue;
		ret = dg_dev_write(d, off, &h, sizeof(h));
		if (!ret)
			dg_flushset_add(&fs, j->dev[c], off, sizeof(h));
	}
	/* The new tail must be durable before the space behind it is
	 * reused. */
	r = dg_flushset_persist(vol->devs, vol->ndev, &fs);
	dg_flushset_fini(&fs);
	ret = ret ? ret : r;
	if (!ret) {
		j->disk_tail_off = j->tail_off;
		j->disk_tail_seq = j->tail_seq;
	}
	return ret;
}

static bool read_head(struct dg_vol *vol, struct dg_djhead *best)
{
	struct dg_journal *j = &vol->jrnl;
	bool found = false;
	uint64_t area;

	for (unsigned c = 0; c < j->ncopies; c++) {
		struct dg_dev *d = copy_dev(vol, c, &area);

		for (unsigned s = 0; d && s < 2; s++) {
			struct dg_djhead h;

			if (dg_jhead_decode(vol, dg_dev_ptr(d, area + s *
							    DG_PAGE_SIZE),
					    j->log_bytes, &h))
				continue;
			if (!found || h.hseq > best->hseq)
				*best = h;
			found = true;
		}
	}
	return found;
}

/* The entry at off with sequence seq in copy c, if it is committed. */
static const struct dg_djentry *entry_at(struct dg_vol *vol, unsigned c,
					 uint64_t off, uint64_t seq)
{
	struct dg_journal *j = &vol->jrnl;
	const struct dg_djentry *e;
	struct dg_dev *d;
	uint64_t area;

	d = copy_dev(vol, c, &area);
	if (!d || off + sizeof(*e) > j->log_bytes)
		return NULL;
	e = (const void *)dg_dev_ptr(d, area + j->log_off + off);
	if (e->seq != seq || dg_jentry_decode(vol, e, j->log_bytes - off))
		return NULL;
	return e;
}

static const struct dg_djentry *entry_any(struct dg_vol *vol, uint64_t off,
					  uint64_t seq)
{
	for (unsigned c = 0; c < vol->jrnl.ncopies; c++) {
		const struct dg_djentry *e = entry_at(vol, c, off, seq);

		if (e)
			return e;
	}
	return NULL;
}

/* The range bytes of entry e (its metadata whole at off): from the
 * first copy whose bytes verify against it; NULL when none does. Any
 * copy may serve, the metadata-only one too (a rebuild may have copied
 * a whole copy there); bytes that verify are the entry's. */
static const uint8_t *bytes_any(struct dg_vol *vol, const struct dg_djentry *e,
				uint64_t off)
{
	struct dg_journal *j = &vol->jrnl;

	if (!vol->journal_v2)
		return entry_bytes(vol, e, e);
	for (unsigned c = 0; c < j->ncopies; c++) {
		uint64_t area;
		struct dg_dev *d = copy_dev(vol, c, &area);
		const void *cp;

		if (!d)
			continue;
		cp = dg_dev_ptr(d, area + j->log_off + off);
		if (dg_jentry_bytes_ok(vol, e, cp))
			return entry_bytes(vol, e, cp);
	}
	return NULL;
}

/*
 * JOURNAL_V2: an entry whose metadata is whole and whose bytes verify on
 * no copy. Within the faults the journal covers that is an entry that
 * never became durable (a crash tore its bytes copies, and the
 * metadata-only copy got through): nothing of its update, nor of any
 * later one, went in place (wait_written()), and the log ends before it.
 * Only faults beyond them (every bytes copy lost, as parity + 1 devices
 * that all drop their last writes) leave a durable entry without bytes.
 *
 * The one sign that counts is a page that holds the entry's new bytes
 * while its verified checksum is older: no fault makes a page's bytes
 * hash to a checksum they were not written for, and a checksum copy
 * that fails its seal gives way to another (dg_csum_get()). The other
 * half -- checksum new, bytes not -- is no sign: a range that leaves its
 * page as it was (a rewrite of the bytes it holds) carries the checksum
 * the page already has, and one fault in the page's bytes then looks
 * just so; nor can the row tell, its parity may be half through an
 * earlier entry the replay has yet to redo. Taking it would replay an
 * entry that never was, giving its other pages checksums their old,
 * acknowledged bytes fail (EIO). Left out, a durable entry whose
 * bytes are all lost and that shows no page of new bytes under an old
 * checksum ends the log: its pages and those of later entries keep
 * what their checksums prove, or read EIO (docs/integrity.md).
 *
 * An entry that is replayed without bytes (replay_entry()) gives every
 * page the checksum the metadata says, so a page proves its bytes -- as
 * it is, or rebuilt from its row -- or reads EIO (redo_redundancy());
 * nothing unproven is written.
 */
static bool went_in_place(struct dg_vol *vol, const struct dg_djentry *e)
{
	const struct dg_djrange *r = (const void *)(e + 1);

	for (uint32_t i = 0; i < e->nranges; i++) {
		struct dg_dev *d;
		uint64_t cs, now;

		if ((r[i].flags & DG_JRANGE_NO_BYTES) ||
		    dg_jrange_check(vol, &r[i]))
			continue;
		d = &vol->devs[r[i].dev];
		/* A page never written (DG_CSUM_NONE) holds nothing to
		 * go by: new zeros are there before any write. */
		if (!d->present || dg_csum_get(vol, r[i].dev, r[i].row, &cs) ||
		    cs == DG_CSUM_NONE)
			continue;
		now = dg_csum_page(vol, r[i].dev, r[i].row,
				   dg_dev_ptr(d, dg_row_page(vol, r[i].row)
						      << DG_PAGE_SHIFT));
		if (now == r[i].page_csum && cs != r[i].page_csum)
			return true;
	}
	return false;
}

/* The entry at off numbered seq, if it counts: its metadata whole on
 * some copy and its bytes on some copy, or its update in place
 * (went_in_place()). *bytes: its range bytes, NULL when it has none to
 * give. recovering: the replay acts on the answer; an open that replays
 * nothing (DG_OPEN_NORECOVER: fsck -n, a rebuild) only finds the head,
 * and says what it saw at debug level only -- over a log a crash left
 * unreplayed, not a finding of faults. */
static const struct dg_djentry *entry_live(struct dg_vol *vol, uint64_t off,
					   uint64_t seq, const uint8_t **bytes,
					   bool recovering)
{
	const struct dg_djentry *e = entry_any(vol, off, seq);

	*bytes = NULL;
	if (!e || (e->flags & DG_JENTRY_WRAP))
		return e;
	*bytes = bytes_any(vol, e, off);
	if (*bytes)
		return e;
	if (e->flags & DG_JENTRY_LEAN) {
		/* Its bytes were on parity copies: a crash tore them, or a
		 * fault within parity took them. Either way its page is in
		 * place new, or rebuilds from its row as before the entry
		 * (replay_entry()), and entries after it may be in place:
		 * the log goes on. */
		dg_vol_log(vol, recovering ? DG_LOG_NOTICE : DG_LOG_DEBUG,
			   "journal entry %" PRIu64 ": lean, its bytes verify "
			   "on no copy: its page is taken new where it "
			   "proves so, else as before the entry", seq);
		return e;
	}
	if (!went_in_place(vol, e)) {
		dg_vol_log(vol, recovering ? DG_LOG_NOTICE : DG_LOG_DEBUG,
			   "journal entry %" PRIu64
			   ": its bytes verify on no copy and nothing of it "
			   "is in place: never committed, the log ends there",
			   seq);
		return NULL;
	}
	dg_vol_log(vol, recovering ? DG_LOG_ERR : DG_LOG_DEBUG,
		   "journal entry %" PRIu64 ": its bytes "
		   "verify on no copy, yet its update is in place (faults "
		   "beyond the journal's copies): its pages keep what they "
		   "prove, the rest reads EIO", seq);
	return e;
}

/*
 * Copies that hold entry bytes (JOURNAL_V2): parity + 1 where the
 * journal has parity + 2 copies -- one copy of the bytes survives a
 * crash plus any fault parity covers, and more buys nothing the in-place
 * row can keep (docs/design.md, "What a write costs the media") -- and
 * every copy elsewhere: without parity (one device's two halves, or
 * parity 0 on two devices), or where the devices hold parity + 1 copies
 * only (two devices at parity 1, three at parity 2).
 */
static unsigned bytes_copies(const struct dg_vol *vol, unsigned ncopies)
{
	if (vol->journal_v2 && vol->parity && ncopies == vol->parity + 2)
		return ncopies - 1;
	return ncopies;
}

/*
 * Copy c takes the entry bytes: a bytes copy, or the metadata-only copy
 * while a bytes copy's device is missing -- parity + 1 copies of the
 * bytes then remain on present devices, the crash plus fault argument
 * above holding on a degraded volume as on a whole one. Replay looks
 * for the bytes on every copy (bytes_any()).
 */
static bool copy_gets_bytes(const struct dg_vol *vol, unsigned c)
{
	const struct dg_journal *j = &vol->jrnl;

	if (c < j->nbytes)
		return true;
	for (unsigned b = 0; b < j->nbytes; b++)
		if (!vol->devs[j->dev[b]].present)
			return true;
	return false;
}

/* ---- recovery ------------------------------------------------------ */

struct touched {
	unsigned dev;
	uint64_t row;
	uint64_t csum;	/* of the last entry that touched the page */
	bool in_place;	/* ... which wrote it in place (DG_JRANGE_IN_PLACE) */
	bool as_found;	/* ... which reserved it (DG_JRANGE_RESERVED) */
	size_t pos;	/* its place in the replay's order: later wins */
};

/* A page some live entry wrote in place, and the newest such entry. */
struct in_place {
	unsigned dev;
	uint64_t row, seq;
};
struct in_places {
	struct in_place *p;
	size_t n, cap;
};

static int in_place_cmp(const void *a, const void *b)
{
	const struct in_place *x = a, *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* lean_lost: e is a lean entry whose bytes no copy holds; its page then
 * holds what the replay goes by (replay_entry()), which no earlier
 * entry's bytes may overwrite: those entries were in place before its
 * update read the page (its row lock). */
static int in_places_add(struct in_places *ip, const struct dg_djentry *e,
			 bool lean_lost)
{
	const struct dg_djrange *r = (const void *)(e + 1);

	for (uint32_t i = 0; i < e->nranges; i++) {
		if (!(r[i].flags & DG_JRANGE_IN_PLACE) && !lean_lost)
			continue;
		if (ip->n == ip->cap) {
			size_t cap = ip->cap ? ip->cap * 2 : 64;
			void *n = realloc(ip->p, cap * sizeof(*ip->p));

			if (!n)
				return -ENOMEM;
			ip->p = n;
			ip->cap = cap;
		}
		ip->p[ip->n++] = (struct in_place){ r[i].dev, r[i].row, e->seq };
	}
	return 0;
}

/* Sorted, and only the newest entry of each page kept. */
static void in_places_sort(struct in_places *ip)
{
	size_t m = 0;

	if (!ip->n)
		return;
	qsort(ip->p, ip->n, sizeof(*ip->p), in_place_cmp);
	for (size_t i = 0; i < ip->n; i++) {
		if (m && ip->p[m - 1].row == ip->p[i].row &&
		    ip->p[m - 1].dev == ip->p[i].dev)
			m--;
		ip->p[m++] = ip->p[i];
	}
	ip->n = m;
}

/* A later entry than seq wrote (dev, row) in place: the bytes entry seq
 * has for it are older than what the page holds. */
static bool written_later(const struct in_places *ip, unsigned dev,
			  uint64_t row, uint64_t seq)
{
	size_t lo = 0, hi = ip->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct in_place *x = &ip->p[mid];

		if (x->row < row || (x->row == row && x->dev < dev))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ip->n && ip->p[lo].row == row && ip->p[lo].dev == dev &&
	       ip->p[lo].seq > seq;
}

static int touched_cmp(const void *a, const void *b)
{
	const struct touched *x = a, *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	return x->dev < y->dev ? -1 : x->dev > y->dev;
}

/* By page, and a page's touches in the order the entries made them. */
static int touched_order(const void *a, const void *b)
{
	const struct touched *x = a, *y = b;
	int c = touched_cmp(a, b);

	if (c)
		return c;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/*
 * The pages of missing devices as the journal has them: a degraded update
 * journals each missing data page of a row it touches whole (apply.c,
 * add_companions()), and the replay recomputes the row's parity from it,
 * since the parity on the media may be torn. Later entries win.
 */
struct shadow {
	unsigned dev;
	uint64_t row;
	uint8_t *page;
};
struct shadows {
	struct shadow *s;
	size_t n, cap;
};

static uint8_t *shadow_find(const struct shadows *sh, unsigned dev,
			    uint64_t row)
{
	for (size_t i = sh->n; i-- > 0;)
		if (sh->s[i].dev == dev && sh->s[i].row == row)
			return sh->s[i].page;
	return NULL;
}

/* The range's bytes onto the page's shadow (zeros where none was yet:
 * a page journaled in part only never verifies, and is then taken from
 * the row instead). */
static int shadow_put(struct shadows *sh, const struct dg_djrange *r,
		      const uint8_t *data)
{
	uint8_t *pg = shadow_find(sh, r->dev, r->row);

	if (!pg) {
		if (sh->n == sh->cap) {
			size_t cap = sh->cap ? sh->cap * 2 : 16;
			void *n = realloc(sh->s, cap * sizeof(*sh->s));

			if (!n)
				return -ENOMEM;
			sh->s = n;
			sh->cap = cap;
		}
		pg = calloc(1, DG_PAGE_SIZE);
		if (!pg)
			return -ENOMEM;
		sh->s[sh->n++] = (struct shadow){ r->dev, r->row, pg };
	}
	memcpy(pg + r->off, data, r->len);
	return 0;
}

static void shadows_free(struct shadows *sh)
{
	for (size_t i = 0; i < sh->n; i++)
		free(sh->s[i].page);
	free(sh->s);
}

static int touch(struct touched **t, size_t *nt, size_t *capt,
		 struct touched x)
{
	if (*nt == *capt) {
		size_t cap = *capt ? *capt * 2 : 64;
		void *n = realloc(*t, cap * sizeof(**t));

		if (!n)
			return -ENOMEM;
		*t = n;
		*capt = cap;
	}
	x.pos = *nt;
	(*t)[(*nt)++] = x;
	return 0;
}

/* A run of reserved rows (DG_JRANGE_ROWS): each data page of them is
 * touched as a page reserved alone is, taken as found unless a later
 * entry wrote it in place (the last entry of a page wins). */
static int touch_rows(struct dg_vol *vol, const struct dg_djrange *r,
		      struct touched **t, size_t *nt, size_t *capt)
{
	for (uint64_t row = r->row; row < r->row + r->page_csum; row++)
		for (unsigned x = 0; x < vol->k; x++)
			if (touch(t, nt, capt, (struct touched){
					  dg_row_data_dev(vol, row, x), row,
					  0, false, true, 0 }))
				return -ENOMEM;
	return 0;
}

/*
 * The checksum the page of lean entry e (range r), whose bytes no copy
 * holds, is to prove: its new one when the page holds it (its round came
 * through), else its prior -- the page's write never made it whole, so
 * the row's parity, written in the round after (apply.c), is still the
 * one before the entry and rebuilds the page as it was. The row is kept
 * as found for that proof (redo_data_page()). A page whose device is
 * missing is its row's: rebuilt as found, it proves the one or the other
 * (the bytes torn by a crash in their round, the device the one fault:
 * nothing went in place, and the prior proves), or neither -- beyond
 * parity: the new one then, which the page never proves, and the
 * replay refuses the open with the row named (redo_redundancy()).
 */
static int lean_lost_csum(struct dg_vol *vol, const struct dg_djentry *e,
			  const struct dg_djrange *r, struct dg_rproof *pf,
			  uint64_t *csum)
{
	struct dg_dev *d = &vol->devs[r->dev];
	uint64_t prior = stored_bcs(e);
	uint8_t *buf;
	int ret;

	*csum = r->page_csum;
	if (d->present) {
		const void *pg = dg_dev_ptr(d, dg_row_page(vol, r->row)
						       << DG_PAGE_SHIFT);

		if (dg_csum_page(vol, r->dev, r->row, pg) == r->page_csum)
			return 0;
		*csum = prior;
		return dg_rproof_keep(pf, vol, r->dev, r->row, 0, 0);
	}
	ret = dg_rproof_row(pf, vol, r->row);
	buf = ret ? NULL : aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!buf)
		return -ENOMEM;
	ret = dg_rproof_page(pf, vol, r->dev, r->row, r->page_csum, buf);
	if (ret == -EIO) {
		ret = dg_rproof_page(pf, vol, r->dev, r->row, prior, buf);
		if (ret == 0)
			*csum = prior;
		else if (ret == -EIO)
			ret = 0;
	}
	free(buf);
	return ret;
}

/* Redo the bytes of one entry; remember the pages it touched, and keep
 * each page as found before its first rewrite (pf). A page a later
 * entry wrote in place keeps what it holds. */
static int replay_entry(struct dg_vol *vol, const struct dg_djentry *e,
			const uint8_t *data, const struct in_places *ip,
			struct touched **t, size_t *nt, size_t *capt,
			struct shadows *sh, struct dg_rproof *pf)
{
	const struct dg_djrange *r = (const void *)(e + 1);
	/* data NULL: the bytes are lost (entry_live()), nothing is
	 * written; the pages are taken as they prove. */
	const bool lost = !data;

	/* entry_at() checked that the bytes lie inside the entry. */
	for (uint32_t i = 0; i < e->nranges; i++) {
		struct dg_dev *d;
		uint64_t off, csum;

		if (dg_jrange_check(vol, &r[i]))
			return DG_CORRUPT(vol, "journal entry %" PRIu64
					  " range %u is invalid", e->seq, i);
		if (r[i].flags & DG_JRANGE_ROWS) {
			if (touch_rows(vol, &r[i], t, nt, capt))
				return -ENOMEM;
			continue;
		}
		d = &vol->devs[r[i].dev];

		off = (dg_row_page(vol, r[i].row) << DG_PAGE_SHIFT) + r[i].off;
		if ((r[i].flags & DG_JRANGE_RESERVED) && d->present &&
		    !written_later(ip, r[i].dev, r[i].row, e->seq) &&
		    dg_rproof_blank(pf, vol, r[i].dev, r[i].row))
			return -ENOMEM; /* never committed: blank before */
		if ((r[i].flags & DG_JRANGE_NO_BYTES) ||
		    written_later(ip, r[i].dev, r[i].row, e->seq) || lost)
			; /* the page holds its newest bytes already */
		else if (d->present) {
			int ret;

			if (dg_rproof_keep(pf, vol, r[i].dev, r[i].row,
					   r[i].off, r[i].len))
				return -ENOMEM;
			ret = dg_dev_write(d, off, data, r[i].len);
			if (ret)
				return ret;
		} else if (shadow_put(sh, &r[i], data) ||
			   dg_rproof_shadow(pf, vol, r[i].dev, r[i].row,
					    r[i].off, r[i].len,
					    shadow_find(sh, r[i].dev,
							r[i].row))) {
			return -ENOMEM;
		}
		if (!lost)
			data += dg_jrange_bytes(&r[i]);
		csum = r[i].page_csum;
		if (lost && (e->flags & DG_JENTRY_LEAN) &&
		    lean_lost_csum(vol, e, &r[i], pf, &csum))
			return -ENOMEM; /* its only failure */
		if (touch(t, nt, capt, (struct touched){
				  r[i].dev, r[i].row, csum,
				  r[i].flags & DG_JRANGE_IN_PLACE,
				  r[i].flags & DG_JRANGE_RESERVED, 0 }))
			return -ENOMEM;
	}
	return 0;
}

/* Data page (dev, row) as a missing device's shadow holds it, when that
 * matches its checksum (just set from the journal). */
static bool shadow_read(struct dg_vol *vol, const struct shadows *sh,
			unsigned dev, uint64_t row, uint8_t *buf)
{
	const uint8_t *pg = vol->devs[dev].present ? NULL
						   : shadow_find(sh, dev, row);
	uint64_t cs;

	if (pg && dg_csum_get(vol, dev, row, &cs) == 0 &&
	    dg_csum_page(vol, dev, row, pg) == cs) {
		memcpy(buf, pg, DG_PAGE_SIZE);
		return true;
	}
	return false;
}

/* A page of a replayed row that failed its checksum, proven by
 * dg_rproof_page(): written back (its ditto copies too) through the
 * repair path, which writes only proven bytes. (A missing device's page
 * is no fault of its own: it is only used for the parity, as any read
 * rebuilds it.) */
static int redo_put_back(struct dg_vol *vol, unsigned dev, uint64_t row,
			 const uint8_t *buf)
{
	uint64_t vpn = dg_loc_vpn(vol, dev, row);
	int ret;

	if (!vol->devs[dev].present)
		return 0;
	dg_fault_note(vol, DG_FAULT_DETECTED, dev, row, DG_WHAT_DATA,
		      "checksum mismatch in a row the journal replay redoes");
	ret = dg_repair_page(vol, dev, row, buf);
	if (!ret && dg_ditto_has(vol, vpn))
		ret = dg_ditto_repair(vol, vpn, buf);
	if (ret)
		return ret; /* latched: the replay fails, the journal stays */
	dg_fault_note(vol, DG_FAULT_REPAIRED, dev, row, DG_WHAT_DATA,
		      "rebuilt from the row as the replay found it");
	return 0;
}

/*
 * Data page (dev, row) of a replayed row, verified, for the parity the
 * replay recomputes (docs/integrity.md, "Replay under faults"): as it
 * is; a missing device's from its shadow; else rebuilt from the row as
 * the replay found it or redid it (dg_rproof_page()) and put back; else
 * through the read path (the row as it is now, ditto copies). 0 proven;
 * 1 given up: the page fails its checksum and reads EIO, and buf holds
 * its bytes as they are, so that the parity still covers the rest of
 * the row; -EIO when a missing device's page is given up (it has no
 * bytes but in the parity as found); -ENOMEM. as_found: the row was
 * reserved by an update that never came (redo_redundancy()).
 */
static int redo_data_page(struct dg_vol *vol, const struct shadows *sh,
			  struct dg_rproof *pf, unsigned dev, uint64_t row,
			  uint8_t *buf, bool as_found)
{
	struct dg_dev *d = &vol->devs[dev];
	uint64_t cs, off = dg_row_page(vol, row) << DG_PAGE_SHIFT;
	int ret;

	if (shadow_read(vol, sh, dev, row, buf))
		return 0;
	if (dg_csum_get(vol, dev, row, &cs) == 0 && cs != DG_CSUM_NONE) {
		if (d->present) {
			memcpy(buf, dg_dev_ptr(d, off), DG_PAGE_SIZE);
			if (dg_csum_page(vol, dev, row, buf) == cs)
				return 0;
			/* Given up by fsck already: its bytes as they are,
			 * which the row's parity covers (given_up.c). */
			if (dg_page_given_up(vol, dev, row))
				return 1;
		}
		ret = dg_rproof_page(pf, vol, dev, row, cs, buf);
		if (ret == -ENOMEM)
			return ret;
		if (ret == 0)
			return redo_put_back(vol, dev, row, buf);
		/* A blank page (a trimmed one: its checksum that of zeros)
		 * is proven by its checksum alone, whatever the crash left
		 * of its row: the journaled write beside it torn together
		 * with its parity. */
		if (dg_csum_blank(vol, dev, row, cs)) {
			memset(buf, 0, DG_PAGE_SIZE);
			return redo_put_back(vol, dev, row, buf);
		}
	}
	/* A missing page of a row half written by an update that never
	 * came is free (nothing to keep: the caller leaves the row), or
	 * beside a hole filled, whose row the proof above has taken as
	 * the read path would: the read path would only note it lost. */
	if (!d->present && as_found)
		return -EIO;
	if (dg_page_read_locked(vol, dev, row, buf, &cs) == 0)
		return 0;
	if (!d->present)
		return -EIO;
	/* The read path noted it unrecoverable, as for any read. */
	dg_vol_log(vol, DG_LOG_ERR, "journal replay: row %" PRIu64 ": its "
		   "page on device %u proves neither as found, as redone "
		   "nor from its row: given up, it reads EIO", row, dev);
	memcpy(buf, dg_dev_ptr(d, off), DG_PAGE_SIZE);
	return 1;
}

/*
 * Bring the redundancy of the replayed pages up to date: each page must
 * hash to the checksum its last entry recorded (anything else is a
 * fault on top of the crash: proven from its row or given up, never
 * blessed), and the parity of every touched row is recomputed from its
 * data -- a delta would not be idempotent.
 */
/* The ditto copies of a missing device's zone page, from its shadow
 * when that matches the checksum the journal recorded. */
static int redo_ditto_missing(struct dg_vol *vol, const struct shadows *sh,
			      const struct touched *t, struct dg_flushset *fs)
{
	const uint8_t *pg = shadow_find(sh, t->dev, t->row);
	uint64_t vpn;

	if (!pg || dg_row_dev_is_parity(vol, t->row, t->dev))
		return 0;
	vpn = dg_loc_vpn(vol, t->dev, t->row);
	if (dg_ditto_has(vol, vpn) &&
	    dg_csum_page(vol, t->dev, t->row, pg) == t->csum)
		return dg_ditto_write(vol, vpn, pg, fs);
	return 0;
}

static int redo_redundancy(struct dg_vol *vol, struct touched *t, size_t nt,
			   const struct shadows *sh, struct dg_rproof *pf,
			   struct dg_flushset *fs)
{
	struct dg_csum_upd *u = NULL;
	size_t nu = 0;
	uint8_t *buf = NULL;
	int ret = 0;

	/* A page's touches kept in entry order: the last one wins. (A
	 * replay that touched nothing has no array: qsort(NULL, 0) is
	 * undefined.) */
	if (nt)
		qsort(t, nt, sizeof(*t), touched_order);
	u = calloc(nt + vol->parity * nt + 1, sizeof(*u));
	buf = aligned_alloc(DG_PAGE_SIZE, (DG_MAX_DEVS + 1) * DG_PAGE_SIZE);
	if (!u || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nt; i++) {
		struct dg_dev *d = &vol->devs[t[i].dev];
		uint64_t off = dg_row_page(vol, t[i].row) << DG_PAGE_SHIFT;

		if (i + 1 < nt && !touched_cmp(&t[i], &t[i + 1]))
			continue;
		if (t[i].as_found) {
			/* Reserved, never committed: free, as it is. A
			 * missing device's page is left to the rebuild. */
			if (d->present)
				u[nu++] = (struct dg_csum_upd){
					t[i].dev, t[i].row,
					dg_csum_page(vol, t[i].dev, t[i].row,
						     dg_dev_ptr(d, off))
				};
			continue;
		}
		if (d->present && t[i].in_place &&
		    dg_csum_page(vol, t[i].dev, t[i].row, dg_dev_ptr(d, off)) !=
			    t[i].csum) {
			/* Written and made durable before its entry: a
			 * fault since, which its row can repair (the read
			 * path does, on the first read or scrub). */
			dg_fault_note(vol, DG_FAULT_DETECTED, t[i].dev, t[i].row,
				      DG_WHAT_DATA, "page written in place "
				      "before its journal entry differs");
		} else if (d->present &&
		    dg_csum_page(vol, t[i].dev, t[i].row, dg_dev_ptr(d, off)) !=
			    t[i].csum) {
			/* A fault on top of the crash (outside the bytes
			 * redone): proven from its row or given up with
			 * it, below (redo_data_page()). */
			if (!vol->parity) {
				dg_fault_note(vol, DG_FAULT_DETECTED, t[i].dev,
					      t[i].row, DG_WHAT_DATA, "replayed "
					      "page differs from journal");
				dg_fault_note(vol, DG_FAULT_UNRECOVERABLE,
					      t[i].dev, t[i].row, DG_WHAT_DATA,
					      "none");
			}
		} else if (d->present && !dg_row_dev_is_parity(vol, t[i].row,
							       t[i].dev) &&
			   dg_ditto_has(vol, dg_loc_vpn(vol, t[i].dev,
							t[i].row))) {
			/* the replayed page, verified: its ditto copies */
			ret = dg_ditto_write(vol, dg_loc_vpn(vol, t[i].dev,
							     t[i].row),
					     dg_dev_ptr(d, off), fs);
		} else if (!d->present) {
			ret = redo_ditto_missing(vol, sh, &t[i], fs);
		}
		if (ret)
			goto out;
		u[nu++] = (struct dg_csum_upd){ t[i].dev, t[i].row, t[i].csum };
	}
	qsort(u, nu, sizeof(*u), dg_csum_upd_cmp);
	ret = dg_csum_set_journaled(vol, u, (unsigned)nu, fs, NULL);
	if (!ret)
		ret = dg_flushset_persist(vol->devs, vol->ndev, fs);
	if (ret)
		goto out;

	nu = 0;
	for (size_t i = 0; i < nt && vol->parity; i++) {
		uint8_t *pages[DG_MAX_DEVS];
		uint64_t row = t[i].row;
		bool in_place = true, as_found = false;

		if (i > 0 && t[i - 1].row == row)
			continue;
		/* A row whose pages were all last written in place got its
		 * parity with them, before the entry: nothing to redo
		 * (and a page of it faulted since is repaired from it). */
		for (size_t x = i; x < nt && t[x].row == row; x++) {
			if (x + 1 < nt && !touched_cmp(&t[x], &t[x + 1]))
				continue; /* not the last entry's */
			in_place = in_place && t[x].in_place;
			as_found = as_found || t[x].as_found;
		}
		if (in_place)
			continue;
		for (unsigned p = 0; p < vol->k + vol->parity; p++)
			pages[p] = buf + p * DG_PAGE_SIZE;
		for (unsigned r = 0; r < vol->k && !ret; r++) {
			unsigned dev = dg_row_data_dev(vol, row, r);

			ret = redo_data_page(vol, sh, pf, dev, row, pages[r],
					     as_found);
			if (ret == -ENOMEM)
				goto out;
			if (ret > 0 && !as_found)
				ret = 0; /* given up: parity from it as is */
			if (ret < 0 && !as_found) {
				/* Its bytes live only in the parity as
				 * found (design.md, "Degraded"). */
				dg_vol_log(vol, DG_LOG_ERR, "journal replay: "
					   "row %" PRIu64 " cannot be made "
					   "whole: its page on device %u "
					   "cannot be read (degraded: a "
					   "rebuild needs the missing "
					   "device's pages)", row, dev);
				goto out;
			}
		}
		if (ret < 0 && dg_latch_on(&vol->latch))
			goto out; /* a failed persist: the journal stays */
		if (ret) {
			/* A free row half written when the crash came,
			 * with a page missing or given up: nothing in it
			 * to keep. */
			ret = 0;
			continue;
		}
		dg_parity_compute(vol, pages, pages + vol->k, DG_PAGE_SIZE);
		for (unsigned j = 0; j < vol->parity; j++) {
			unsigned dev = dg_row_parity_dev(vol, row, j);
			struct dg_dev *d = &vol->devs[dev];
			uint64_t off = dg_row_page(vol, row) << DG_PAGE_SHIFT;

			/* A missing parity page is its data's: only its
			 * checksum copies are set, for the rebuild. */
			if (d->present) {
				ret = dg_dev_write(d, off, pages[vol->k + j],
						   DG_PAGE_SIZE);
				if (ret)
					goto out;
				dg_flushset_add(fs, dev, off, DG_PAGE_SIZE);
			}
			u[nu++] = (struct dg_csum_upd){
				dev, row,
				dg_csum_page(vol, dev, row, pages[vol->k + j])
			};
		}
	}
	qsort(u, nu, sizeof(*u), dg_csum_upd_cmp);
	ret = dg_csum_set_journaled(vol, u, (unsigned)nu, fs, NULL);
	if (!ret)
		ret = dg_flushset_persist(vol->devs, vol->ndev, fs);
out:
	free(u);
	free(buf);
	return ret;
}

static int recover(struct dg_vol *vol)
{
	struct dg_journal *j = &vol->jrnl;
	struct touched *t = NULL;
	size_t nt = 0, capt = 0;
	uint64_t off = j->tail_off, seq = j->tail_seq, n = 0;
	struct dg_flushset fs;
	const struct dg_djentry *e;
	const uint8_t *bytes;
	struct shadows sh = { 0 };
	struct in_places ip = { 0 };
	struct dg_rproof *pf = dg_rproof_new();
	uint64_t live = 0, left = dg_jrange_budget(vol);
	int ret = 0;

	if (!pf)
		return -ENOMEM;
	dg_flushset_init(&fs);
	/* First the pages written in place, and by which entry: an earlier
	 * entry's bytes must not go over them (DG_JRANGE_IN_PLACE). This
	 * pass, over the pages as found, also decides where the log ends
	 * (entry_live()): the replay below redoes that many entries. */
	while ((e = entry_live(vol, off, seq, &bytes, true))) {
		live++;
		/* Runs of rows past twice what the log could name a range a
		 * page: forged or corrupt, as a range naming no page is. */
		if (dg_jentry_pages_take(vol, e, &left)) {
			ret = DG_CORRUPT(vol, "journal entry %" PRIu64
					 " reserves more rows than a replay "
					 "may expand", seq);
			goto out;
		}
		if (e->flags & DG_JENTRY_WRAP) {
			off = 0;
		} else {
			ret = in_places_add(&ip, e, !bytes &&
						     (e->flags & DG_JENTRY_LEAN));
			if (ret)
				goto out;
			off += e->len;
		}
		seq++;
		if (off >= j->log_bytes)
			off = 0;
	}
	in_places_sort(&ip);
	off = j->tail_off;
	seq = j->tail_seq;
	while (n < live && (e = entry_any(vol, off, seq))) {
		if (!(e->flags & DG_JENTRY_WRAP)) {
			ret = replay_entry(vol, e, bytes_any(vol, e, off), &ip,
					   &t, &nt, &capt, &sh, pf);
			if (ret)
				goto out;
			off += e->len;
		} else {
			off = 0;
		}
		seq++;
		n++;
		if (off >= j->log_bytes)
			off = 0;
	}
	j->head_off = off;
	j->head_seq = seq;
	if (n == 0)
		goto out;
	dg_vol_log(vol, DG_LOG_NOTICE,
		   "journal replay entries=%" PRIu64
		   " first_seq=%" PRIu64 " pages=%zu", n, j->tail_seq, nt);
	/* The redone bytes must be durable before redundancy is derived
	 * from them and before the journal forgets them. */
	for (size_t i = 0; i < nt; i++)
		dg_flushset_add(&fs, t[i].dev,
				dg_row_page(vol, t[i].row) << DG_PAGE_SHIFT,
				DG_PAGE_SIZE);
	ret = dg_flushset_persist(vol->devs, vol->ndev, &fs);
	if (!ret && vol->redundancy)
		ret = redo_redundancy(vol, t, nt, &sh, pf, &fs);
	if (ret)
		goto out;
	/* Retired only once every redone byte and its redundancy are
	 * durable: on any failure the entries stay for the next open. */
	j->tail_off = j->head_off;
	j->tail_seq = j->head_seq;
	ret = write_head(vol);
out:
	dg_flushset_fini(&fs);
	free(t);
	free(ip.p);
	shadows_free(&sh);
	dg_rproof_free(pf);
	return ret;
}

/*
 * After the replay, number the next entries above every number this
 * volume used before (each open for writing has a new generation). The
 * replay stops at the first entry that is not whole, and appends write
 * side by side: entries after a torn one may be whole, left by updates
 * that never went on (wait_written()). Numbered afresh, they can never
 * pass for successors of the entries appended from here on.
 */
static int fresh_numbers(struct dg_vol *vol)
{
	struct dg_journal *j = &vol->jrnl;
	uint64_t first = dg_gen_base(vol->sb.generation) + 1;

	if (j->head_seq >= first)
		return 0;
	j->tail_off = j->head_off;
	j->tail_seq = j->head_seq = j->written_seq = first;
	return write_head(vol);
}

/* ---- the cover: rows a crash may have torn checksum slots of -------- */

static int row_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cover_add(struct dg_journal *j, size_t *cap, uint64_t row)
{
	if (j->ncover == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		uint64_t *n = realloc(j->cover, c * sizeof(*n));

		if (!n)
			return -ENOMEM;
		j->cover = n;
		*cap = c;
	}
	j->cover[j->ncover++] = row;
	return 0;
}

/*
 * The rows the entries from the tail on name, found from their metadata
 * alone -- before anything reads a checksum page, which may need them
 * (csum.c, crash_debris(), cpage_salvage()). A checksum round of an update, of the
 * reservation of its new rows or of a replay sets slots of those rows
 * only (the pages it names and their rows' parity), under an entry that
 * is in the log until the round is durable. Entries past the end of the
 * log the replay finds (never committed) add rows whose slots no round
 * set: harmless, a slot of them that no copy agrees on is a fault
 * beyond the one a salvage takes either way. Runs of rows are bounded
 * as the replay bounds them (dg_jentry_pages_take()).
 */
static int cover_build(struct dg_vol *vol)
{
	struct dg_journal *j = &vol->jrnl;
	const struct dg_djentry *e;
	uint64_t off = j->tail_off, seq = j->tail_seq;
	uint64_t left = dg_jrange_budget(vol);
	size_t cap = 0, n = 0;

	if (!vol->redundancy)
		return 0;
	while ((e = entry_any(vol, off, seq))) {
		const struct dg_djrange *r = (const void *)(e + 1);

		if (e->flags & DG_JENTRY_WRAP) {
			off = 0;
			seq++;
			continue;
		}
		if (dg_jentry_pages_take(vol, e, &left))
			break; /* the replay refuses it (recover()) */
		for (uint32_t i = 0; i < e->nranges; i++) {
			uint64_t rows = (r[i].flags & DG_JRANGE_ROWS)
						? r[i].page_csum : 1;

			if (dg_jrange_check(vol, &r[i]))
				continue;
			for (uint64_t x = 0; x < rows; x++)
				if (cover_add(j, &cap, r[i].row + x))
					return -ENOMEM;
		}
		off += e->len;
		if (off >= j->log_bytes)
			off = 0;
		seq++;
	}
	if (!j->ncover)
		return 0;
	qsort(j->cover, j->ncover, sizeof(*j->cover), row_cmp);
	for (size_t i = 0; i < j->ncover; i++)
		if (!n || j->cover[i] != j->cover[n - 1])
			j->cover[n++] = j->cover[i];
	j->ncover = n;
	return 0;
}

/*
 * After the replay: every checksum page of an index the cover touches,
 * examined and repaired, before the cover goes (cover_free()) and with
 * it the means to rebuild a page a crash tore on every copy. The replay
 * reads most of them (the pages it sets), but not, say, those whose
 * only slots in the cover are of rows it leaves as they are (rows whose
 * pages were all written in place before their entry, redo_redundancy()).
 */
static int cover_settle(struct dg_vol *vol)
{
	const struct dg_journal *j = &vol->jrnl;
	uint64_t last = UINT64_MAX;

	for (size_t i = 0; i < j->ncover; i++) {
		uint64_t index = j->cover[i] / DG_CSUMS_PER_PAGE;

		if (index == last)
			continue;
		last = index;
		for (unsigned owner = 0; owner < vol->ndev; owner++)
			if (dg_cpage_settle(vol, owner, index))
				return -ENOMEM;
	}
	return 0;
}

static void cover_free(struct dg_journal *j)
{
	free(j->cover);
	j->cover = NULL;
	j->ncover = 0;
}

int dg_journal_open(struct dg_vol *vol, bool do_recover)
{
	struct dg_journal *j = &vol->jrnl;
	struct dg_djhead h;
	uint64_t pages;
	int ret;

	memset(j, 0, sizeof(*j));
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	pthread_cond_init(&j->wcond, NULL);
	j->ncopies = dg_jrnl_ncopies(vol);
	j->nbytes = bytes_copies(vol, j->ncopies);
	for (unsigned c = 0; c < j->ncopies; c++)
		dg_jrnl_loc(vol, c, &j->dev[c], &j->start[c], &pages);
	j->log_off = 2 * DG_PAGE_SIZE;
	j->log_bytes = (pages - 2) * DG_PAGE_SIZE;
	{
		bool any = false;

		for (unsigned c = 0; c < j->ncopies; c++)
			any |= vol->devs[j->dev[c]].present;
		if (!any) {
			/* No copy to keep or append to: as before, the
			 * volume's caller decides (vol.c). */
			j->replayed = true;
			return -ENXIO;
		}
	}
	if (!read_head(vol, &h)) {
		dg_vol_log(vol, DG_LOG_WARNING,
			   "journal header unreadable on every "
			   "copy: starting an empty journal");
		/* Above every header an earlier journal of the volume
		 * wrote (as dg_journal_format()). */
		h.hseq = dg_gen_base(vol->sb.generation);
		h.tail_off = 0;
		h.tail_seq = 1;
	}
	j->hseq = h.hseq;
	j->tail_off = j->head_off = j->disk_tail_off = h.tail_off;
	j->tail_seq = j->head_seq = j->disk_tail_seq = h.tail_seq;
	ret = cover_build(vol);
	if (ret)
		return ret;
	if (!do_recover) {
		/* Find the head only, so nothing is appended over it. */
		const struct dg_djentry *e;
		const uint8_t *b;
		uint64_t off = j->tail_off, seq = j->tail_seq;

		while ((e = entry_live(vol, off, seq, &b, false))) {
			off = (e->flags & DG_JENTRY_WRAP) ? 0 : off + e->len;
			if (off >= j->log_bytes)
				off = 0;
			seq++;
		}
		j->head_off = off;
		j->head_seq = j->written_seq = seq;
		/* Entries left unreplayed stay: were the tail moved past
		 * them (a checkpoint at close retires every entry it does
		 * not hold pending), committed updates would be dropped
		 * unreplayed -- a rebuild opens so, then writes and
		 * closes (rebuild.c). They wait for the next open that
		 * recovers (fsck reopens after its rebuild pass). */
		j->replayed = j->head_seq == j->tail_seq;
		return 0;
	}
	j->replayed = true;
	ret = recover(vol);
	/* Every page the cover touches whole on every copy now; a page
	 * torn later is a new crash's, for the next open. */
	if (!ret)
		ret = cover_settle(vol);
	if (!ret)
		cover_free(j);
	j->written_seq = j->head_seq;
	if (!ret)
		ret = fresh_numbers(vol);
	return ret;
}

bool dg_journal_dirty(struct dg_vol *vol)
{
	return vol->jrnl.head_seq != vol->jrnl.tail_seq;
}

void dg_journal_close(struct dg_vol *vol)
{
	cover_free(&vol->jrnl);
	free(vol->jrnl.pend);
	vol->jrnl.pend = NULL;
	pthread_mutex_destroy(&vol->jrnl.lock);
	pthread_cond_destroy(&vol->jrnl.cond);
	pthread_cond_destroy(&vol->jrnl.wcond);
}

size_t dg_journal_max_entry(const struct dg_vol *vol)
{
	return vol->jrnl.log_bytes / 2 - DG_JALIGN;
}

/* Retire completed entries from the front of the pending ring (in
 * core; write_head() makes it durable). Caller holds the journal lock. */
static void retire(struct dg_journal *j)
{
	if (!j->replayed)
		return; /* unreplayed entries before the head: keep them */
	/* Not past written_seq: pend_of() indexes from the first entry
	 * held. A wrap is pushed done, and one that failed to be written
	 * holds written_seq (mark_written()); only a durable entry is ever
	 * marked done otherwise (dg_journal_done() follows a successful
	 * append). */
	while (j->npend && j->pend[j->pend_first].done &&
	       j->pend[j->pend_first].seq < j->written_seq) {
		struct dg_jpending *p = &j->pend[j->pend_first];

		j->tail_off = p->end_off;
		j->tail_seq = p->seq + 1;
		j->pend_first = (j->pend_first + 1) % j->pend_cap;
		j->npend--;
	}
	if (!j->npend) {
		j->tail_off = j->head_off;
		j->tail_seq = j->head_seq;
	}
}

static uint64_t log_used(const struct dg_journal *j)
{
	/* Measured from the durable tail: the space behind it is free only
	 * once the header says so. A gap of DG_JALIGN is always kept, so
	 * head == tail means empty. */
	if (j->head_off >= j->disk_tail_off)
		return j->head_off - j->disk_tail_off;
	return j->log_bytes - j->disk_tail_off + j->head_off;
}

static int pend_push(struct dg_journal *j, uint64_t seq, uint64_t at,
		     uint64_t len, uint64_t mlen, uint32_t mask, uint64_t end,
		     bool done)
{
	if (j->npend == j->pend_cap) {
		unsigned cap = j->pend_cap ? j->pend_cap * 2 : 64;
		struct dg_jpending *n = malloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (unsigned i = 0; i < j->npend; i++)
			n[i] = j->pend[(j->pend_first + i) % j->pend_cap];
		free(j->pend);
		j->pend = n;
		j->pend_cap = cap;
		j->pend_first = 0;
	}
	j->pend[(j->pend_first + j->npend++) % j->pend_cap] =
		(struct dg_jpending){ .seq = seq, .at = at, .len = len,
				      .mlen = mlen, .bytes_mask = mask,
				      .end_off = end,
				      .done = done };
	return 0;
}

/*
 * Make [at, at + len) of the log durable on every copy, in one round:
 * the copies are flushed apart and drained by one fence (media.h). A
 * crash before the fence may keep any part of any copy; the entry
 * counts only where some copy holds it whole, at the place and number
 * the chain expects and with its checksum (find_entry()), so a crash
 * that tears every copy leaves an entry that never happened -- and
 * nothing of its update is in place yet (wait_written()). That is the
 * state a crash before the first of the copies' persists left already.
 */
/* The copies that take an entry's bytes, a bit each: those
 * copy_gets_bytes() names, or a lean entry's (dg_journal_lean_copies()). */
static uint32_t entry_copies(const struct dg_vol *vol,
			     const struct dg_jlean *lean)
{
	uint32_t mask = 0;

	if (lean)
		return lean->copies;
	for (unsigned c = 0; c < vol->jrnl.ncopies; c++)
		if (copy_gets_bytes(vol, c))
			mask |= 1u << c;
	return mask;
}

/*
 * A lean entry's bytes go to parity copies of the journal on devices
 * other than the page's, and under parity 1 other than its row's parity
 * device: a crash in the page's round (apply.c) leaves the page torn and
 * the parity as before, so the page is its bytes or its row as found,
 * and one fault of a page or a journal copy may take either, not both
 * -- a device that held the page, or (parity 1) the parity, and the
 * only copy of the bytes would take both. Under parity 2 the two copies
 * may both sit on the row's parity devices; no choice does better, as
 * every device is in every row, and so the loss of whole devices under
 * a crash is the price of lean entries (docs/design.md, "Lean
 * entries"). Only on a volume whose journal has parity + 2 copies, each
 * on a device of its own, all present. 0: no lean entry for this page.
 */
uint32_t dg_journal_lean_copies(const struct dg_vol *vol, unsigned dev,
				uint64_t row)
{
	const struct dg_journal *j = &vol->jrnl;
	uint32_t mask = 0, devs = 0;
	unsigned n = 0;

	if (!vol->lean_journal || vol->missing_mask ||
	    j->ncopies != vol->parity + 2u || row < zone_rows(vol))
		return 0;
	for (unsigned c = 0; c < j->ncopies; c++) {
		unsigned cd = j->dev[c];

		if (devs & (1u << cd))
			return 0; /* two copies on one device */
		devs |= 1u << cd;
		if (cd == dev || n == vol->parity ||
		    (vol->parity == 1 && dg_row_dev_is_parity(vol, row, cd)))
			continue;
		mask |= 1u << c;
		n++;
	}
	return n == vol->parity ? mask : 0;
}

/* Log bytes of an entry of len bytes that copy c stores: all of them,
 * or the metadata (mlen) on a copy not in mask, the entry's bytes
 * copies (entry_copies()). */
static uint64_t copy_len(uint32_t mask, unsigned c, uint64_t len,
			 uint64_t mlen)
{
	return mask & (1u << c) ? len : mlen;
}

static int persist_copies(struct dg_vol *vol, uint64_t at, uint64_t len,
			  uint64_t mlen, uint32_t mask)
{
	struct dg_journal *j = &vol->jrnl;
	struct dg_flushset fs;
	uint64_t area;
	int ret;

	dg_flushset_init(&fs);
	for (unsigned c = 0; c < j->ncopies; c++) {
		struct dg_dev *d = copy_dev(vol, c, &area);

		if (d)
			dg_flushset_add(&fs, (unsigned)(d - vol->devs),
					area + j->log_off + at,
					copy_len(mask, c, len, mlen));
	}
	ret = dg_flushset_persist(vol->devs, vol->ndev, &fs);
	dg_flushset_fini(&fs);
	return ret;
}

/* Metadata (header, descriptors, bytes checksum) of at most this many
 * bytes is built whole on the stack by store_entry(): an entry of a few
 * pages, a few descriptors of 24 bytes. */
enum { META_INLINE = 1024 };

/*
 * JOURNAL_V2: the metadata image of e, as stored, into img (META_INLINE
 * bytes) and its checksum into e->csum and the image: one hash of
 * contiguous bytes and one store a copy, where the header and the bytes
 * checksum were two stores and meta_csum()'s stream of three parts cost
 * 470 instructions. XXH3's one-shot hash of the bytes is the hash of
 * their stream, so the checksum is meta_csum()'s. Its length, or 0 when
 * the metadata does not fit (meta_csum() and two stores then).
 */
static size_t meta_image(const struct dg_vol *vol, struct dg_djentry *e,
			 uint64_t bcs, void *img)
{
	size_t hlen = sizeof(*e) + e->nranges * sizeof(struct dg_djrange);
	size_t mlen = hlen + sizeof(bcs);
	struct dg_djentry *h = img;

	if (mlen > META_INLINE)
		return 0;
	memcpy(img, e, hlen);
	memcpy((uint8_t *)img + hlen, &bcs, sizeof(bcs));
	h->csum = 0;
	h->csum = e->csum = XXH3_64bits_withSeed(img, mlen, vol->seed + e->seq);
	return mlen;
}

/* Store entry e, numbered seq, at log offset at of every copy: the
 * header and descriptors from e, the bytes of range i from data[i] (a
 * wrap entry has no ranges: data may be NULL), with the zero padding the
 * layout asks for; the bytes on the copies of mask only (entry_copies()),
 * and for a lean entry its prior where bytes_csum goes. Not persisted.
 * The space is the caller's (reserved, or the lock held). Returns the
 * first failure (latched, media.h): the entry is then as torn by a
 * crash. */
static int store_entry(struct dg_vol *vol, struct dg_djentry *e,
		       const void *const *data, uint64_t seq, uint64_t at,
		       const struct dg_jlean *lean, uint32_t mask)
{
	int ret = 0;
	static const uint8_t zeros[8];
	struct dg_journal *j = &vol->jrnl;
	const struct dg_djrange *r = (const void *)(e + 1);
	size_t hlen = sizeof(*e) + e->nranges * sizeof(*r), mlen = 0;
	uint64_t area, bcs = 0, img[META_INLINE / sizeof(uint64_t)];

	e->magic = DG_JENTRY_MAGIC;
	e->seq = seq;
	if (vol->journal_v2) {
		bcs = lean ? lean->prior : bytes_csum(vol, e, data, NULL);
		mlen = meta_image(vol, e, bcs, img);
		if (!mlen)
			e->csum = meta_csum(vol, e, bcs);
	} else {
		e->csum = entry_csum(vol, e, data);
	}
	for (unsigned c = 0; c < j->ncopies; c++) {
		struct dg_dev *d = copy_dev(vol, c, &area);
		uint64_t off = area + j->log_off + at;
		uint64_t end = off + e->len;

		if (!d)
			continue;
		if (mlen) {
			ret = dg_dev_write(d, off, img, mlen);
			off += mlen;
		} else {
			ret = dg_dev_write(d, off, e, hlen);
			off += hlen;
			if (vol->journal_v2 && !ret) {
				ret = dg_dev_write(d, off, &bcs, sizeof(bcs));
				off += sizeof(bcs);
			}
		}
		if (!(mask & (1u << c))) {
			/* A metadata-only copy: its bytes area is left
			 * as it is (format.h, JOURNAL_V2). */
			if (ret)
				return ret;
			continue;
		}
		for (uint32_t i = 0; i < e->nranges; i++) {
			uint32_t pad = ((r[i].len + 7u) & ~7u) - r[i].len;

			if (r[i].flags & DG_JRANGE_NO_BYTES)
				continue;
			if (!ret)
				ret = dg_dev_write(d, off, data[i], r[i].len);
			if (pad && !ret)
				ret = dg_dev_write(d, off + r[i].len, zeros,
						   pad);
			off += r[i].len + pad;
		}
		if (!ret)
			ret = dg_dev_zero(d, off, end - off);
		if (ret)
			return ret; /* latched (media.h): as a torn entry */
	}
	return 0;
}

/* store_entry() and its own round: for entries written under the lock
 * (the wrap). */
static int put_entry(struct dg_vol *vol, struct dg_djentry *e,
		     const void *const *data, uint64_t seq, uint64_t at)
{
	uint32_t mask = entry_copies(vol, NULL);
	int ret = store_entry(vol, e, data, seq, at, NULL, mask);

	return ret ? ret : persist_copies(vol, at, e->len,
					  dg_jentry_meta_len(vol, e->nranges),
					  mask);
}

static struct dg_jpending *pend_of(struct dg_journal *j, uint64_t seq)
{
	uint64_t first = j->pend[j->pend_first].seq;

	return &j->pend[(j->pend_first + (seq - first)) % j->pend_cap];
}

/* Entry seq is written (ret: how its persist went); wake those waiting
 * for it. Caller holds the lock. */
static void mark_written(struct dg_journal *j, uint64_t seq, int ret)
{
	pend_of(j, seq)->written = ret ? ret : 1;
	while (j->written_seq < j->head_seq &&
	       pend_of(j, j->written_seq)->written == 1)
		j->written_seq++;
	if (j->wwaiters)
		pthread_cond_broadcast(&j->wcond);
}

/*
 * Group commit. Entry seq is stored (ret: how the stores went); return
 * once it is durable, or its failure. Entries stored while a round of
 * the journal is being made wait for it to end and join the next one:
 * one of them leads -- persists all stored entries not yet durable in
 * one round, the ranges of every copy of each -- and the others wait
 * for their entry to be marked. So concurrent updates pay one round of
 * persists, not one each (design.md, "Parallel commits"). An entry
 * still being copied is not waited for: its append leads or joins the
 * next round once stored. (The leader used to wait for every entry
 * reserved before the round: on two cores a copier the scheduler put
 * aside then held up the round and every append queued behind it.)
 * Entries stay separate records in the ring; a round makes nothing
 * durable out of order that the replay could misread (each entry
 * counts alone, an entry durable before an earlier one is the
 * overtaking a torn round leaves too, and wait_written() still keeps
 * an update from writing in place before the entries before it are
 * durable). Caller holds the lock.
 */
static int commit_group(struct dg_vol *vol, uint64_t seq, int ret)
{
	struct dg_journal *j = &vol->jrnl;
	struct dg_flushset fs;

	/* No one waits for an entry to be stored (a leader takes the
	 * entries stored when it starts): nothing to wake. */
	pend_of(j, seq)->stored = ret ? ret : 1;
	if (ret)
		mark_written(j, seq, ret); /* torn: never durable */
	while (!pend_of(j, seq)->written) {
		uint64_t end = j->head_seq, from = j->written_seq, n = 0;
		int r;

		if (j->committing) {
			j->wwaiters++;
			pthread_cond_wait(&j->wcond, &j->lock);
			j->wwaiters--;
			continue;
		}
		j->committing = true;
		dg_flushset_init(&fs);
		/* An entry still being copied is left to a later round. */
		for (uint64_t s = from; s < end; s++) {
			struct dg_jpending *p = pend_of(j, s);
			uint64_t area;

			if (p->stored != 1 || p->written)
				continue;
			p->grouped = true;
			n++;
			if (p->extra)
				dg_flushset_merge(&fs, p->extra);
			for (unsigned c = 0; c < j->ncopies; c++) {
				struct dg_dev *d = copy_dev(vol, c, &area);

				if (d)
					dg_flushset_add(&fs,
						(unsigned)(d - vol->devs),
						area + j->log_off + p->at,
						copy_len(p->bytes_mask, c, p->len,
							 p->mlen));
			}
		}
		pthread_mutex_unlock(&j->lock);
		r = dg_flushset_persist(vol->devs, vol->ndev, &fs);
		dg_flushset_fini(&fs);
		pthread_mutex_lock(&j->lock);
		if (n > 1)
			__atomic_fetch_add(&j->appends_grouped, n - 1,
					   __ATOMIC_RELAXED);
		for (uint64_t s = from; s < end; s++) {
			struct dg_jpending *p = pend_of(j, s);

			if (p->grouped) {
				p->grouped = false;
				mark_written(j, s, r);
			}
		}
		j->committing = false;
		pthread_cond_broadcast(&j->wcond);
	}
	return pend_of(j, seq)->written < 0 ? pend_of(j, seq)->written : 0;
}

/*
 * Entry seq is durable (ret: 0), or failed. Returns once every entry
 * before it is durable too, or the first failure among them. The
 * replay stops at the first entry that is not whole, so an update must
 * not write in place while an earlier entry may still be torn: the
 * replay would not redo it. Caller holds the lock.
 */
static int wait_written(struct dg_journal *j, uint64_t seq, int ret)
{
	unsigned waited = 0;

	if (ret)
		return ret;
	for (;;) {
		int w;

		if (seq < j->written_seq)
			return 0;
		w = pend_of(j, j->written_seq)->written;
		if (w < 0)
			return w;
		if (!waited++)
			__atomic_fetch_add(&j->appends_waited, 1,
					   __ATOMIC_RELAXED);
		j->wwaiters++;
		pthread_cond_wait(&j->wcond, &j->lock);
		j->wwaiters--;
	}
}

/* Wait on j->cond for an entry to be retired, at most JSPACE_WAIT_MS
 * (the caller looks at the latch again). Caller holds the lock. */
#define JSPACE_WAIT_MS 200
static void space_wait(struct dg_journal *j)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts); /* the cond's clock */
	ts.tv_nsec += JSPACE_WAIT_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&j->cond, &j->lock, &ts);
}

/* write_head() found the map's lock held (-EAGAIN): the map written
 * outside the journal's lock, which the caller holds on entry and on
 * return, and which the holder of the map's may be waiting for. The
 * caller looks at the journal again, as after any wait. */
static int flush_map_unlocked(struct dg_vol *vol)
{
	int ret;

	pthread_mutex_unlock(&vol->jrnl.lock);
	ret = dg_cmap_flush(vol);
	pthread_mutex_lock(&vol->jrnl.lock);
	return ret;
}

/*
 * Appends run side by side: the lock is held only to reserve the space
 * and the number, and to wait for the entries before (wait_written());
 * the copies are made without it, and persisted in rounds shared by the
 * entries stored meanwhile (commit_group()), so concurrent updates share
 * the journal instead of queueing on it.
 */
static int append(struct dg_vol *vol, struct dg_djentry *entry,
		  const void *const *data, const struct dg_jlean *lean,
		  uint64_t *seq)
{
	struct dg_journal *j = &vol->jrnl;
	size_t len, mlen = dg_jentry_meta_len(vol, entry->nranges);
	uint32_t mask = entry_copies(vol, lean);
	struct dg_cmap_rider riders[DG_CMAP_RIDERS];
	struct dg_flushset extra;
	unsigned nr = 0;
	uint64_t at;
	int ret;

	if (vol->journal_v2) {
		/* The callers size the entry without bytes_csum: laid out
		 * here, the metadata then the bytes (format.h). */
		const struct dg_djrange *r = (const void *)(entry + 1);
		size_t b = mlen;

		for (uint32_t i = 0; i < entry->nranges; i++)
			b += dg_jrange_bytes(&r[i]);
		entry->len = (uint32_t)((b + DG_JALIGN - 1) &
					~(size_t)(DG_JALIGN - 1));
	}
	len = entry->len;
	if (len > dg_journal_max_entry(vol))
		return -E2BIG;
	/* An entry after unreplayed ones could never be retired (retire()). */
	if (!j->replayed)
		return -EROFS;
	pthread_mutex_lock(&j->lock);
	for (;;) {
		uint64_t need = len;

		if (j->head_off + len > j->log_bytes)
			need += j->log_bytes - j->head_off; /* the wrap */
		if (log_used(j) + need + DG_JALIGN <= j->log_bytes)
			break;
		retire(j);
		if (j->disk_tail_off != j->tail_off ||
		    j->disk_tail_seq != j->tail_seq) {
			ret = write_head(vol);
			if (ret == -EAGAIN)
				ret = flush_map_unlocked(vol);
			if (ret)
				goto out;
			continue;
		}
		/* Every live entry is still being applied: wait for one.
		 * Once the volume latches (media.h) no entry is marked done
		 * again (apply.c): a waiter would wait forever. The latch
		 * is set deep in the media layer, which knows no journal to
		 * wake, so the wait is bounded and the latch looked at
		 * again after each. */
		if (dg_latch_on(&vol->latch)) {
			ret = vol->latch.err ? vol->latch.err : -EIO;
			goto out;
		}
		space_wait(j);
	}
	if (j->head_off + len > j->log_bytes) {
		struct dg_djentry wrap = { .len = DG_JALIGN,
					   .flags = DG_JENTRY_WRAP };

		ret = pend_push(j, j->head_seq, j->head_off, DG_JALIGN,
				dg_jentry_meta_len(vol, 0),
				entry_copies(vol, NULL), 0, true);
		if (ret)
			goto out;
		/* Written under the lock: the next entry waits for it. */
		ret = put_entry(vol, &wrap, NULL, j->head_seq, j->head_off);
		pend_of(j, j->head_seq)->stored = ret ? ret : 1;
		mark_written(j, j->head_seq, ret);
		j->head_seq++;
		j->head_off = 0;
		if (ret)
			goto out;
	}
	ret = pend_push(j, j->head_seq, j->head_off, len, mlen, mask,
			(j->head_off + len) % j->log_bytes, false);
	if (ret)
		goto out;
	*seq = j->head_seq++;
	at = j->head_off;
	j->head_off = (j->head_off + len) % j->log_bytes;
	pthread_mutex_unlock(&j->lock);

	/* A new index's bit rides the entry's round (csum.c, the map):
	 * the round after the one that set the index up, for the update
	 * that did -- before its pages in place touch the index again. */
	dg_flushset_init(&extra);
	ret = dg_cmap_ride(vol, &extra, riders, DG_CMAP_RIDERS, &nr);
	if (!ret)
		ret = store_entry(vol, entry, data, *seq, at, lean, mask);

	pthread_mutex_lock(&j->lock);
	pend_of(j, *seq)->extra = nr ? &extra : NULL;
	ret = commit_group(vol, *seq, ret);
	ret = wait_written(j, *seq, ret);
	pend_of(j, *seq)->extra = NULL;
	pthread_mutex_unlock(&j->lock);
	dg_cmap_ride_end(vol, riders, nr, !ret);
	dg_flushset_fini(&extra);
	return ret;
out:
	pthread_mutex_unlock(&j->lock);
	return ret;
}

int dg_journal_append(struct dg_vol *vol, struct dg_djentry *entry,
		      const void *const *data, uint64_t *seq)
{
	return append(vol, entry, data, NULL, seq);
}

int dg_journal_append_lean(struct dg_vol *vol, struct dg_djentry *entry,
			   const void *const *data,
			   const struct dg_jlean *lean, uint64_t *seq)
{
	entry->flags |= DG_JENTRY_LEAN;
	return append(vol, entry, data, lean, seq);
}

void dg_journal_done(struct dg_vol *vol, uint64_t seq)
{
	struct dg_journal *j = &vol->jrnl;
	uint64_t first;

	pthread_mutex_lock(&j->lock);
	/* The ring holds consecutive sequence numbers: index directly. */
	if (j->npend) {
		first = j->pend[j->pend_first].seq;
		if (seq >= first && seq - first < j->npend)
			j->pend[(j->pend_first + (seq - first)) %
				j->pend_cap].done = true;
	}
	/* Retire in core right away so the ring stays short; the header
	 * catches up when space is needed or at a checkpoint. */
	retire(j);
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

int dg_journal_checkpoint(struct dg_vol *vol)
{
	struct dg_journal *j = &vol->jrnl;
	int ret = 0;

	/* The map whole on the media too (outside the journal's lock,
	 * which a rider waits for while it holds the map's). */
	if (j->replayed)
		ret = dg_cmap_flush(vol);
	pthread_mutex_lock(&j->lock);
	for (;;) {
		retire(j);
		if (ret || (j->disk_tail_off == j->tail_off &&
			    j->disk_tail_seq == j->tail_seq))
			break;
		ret = write_head(vol);
		if (ret != -EAGAIN)
			break;
		ret = flush_map_unlocked(vol);
	}
	pthread_mutex_unlock(&j->lock);
	return ret;
}

int dg_journal_format(struct dg_vol *vol)
{
	struct dg_journal *j = &vol->jrnl;
	uint64_t pages;

	memset(j, 0, sizeof(*j));
	j->ncopies = dg_jrnl_ncopies(vol);
	j->nbytes = bytes_copies(vol, j->ncopies);
	for (unsigned c = 0; c < j->ncopies; c++)
		dg_jrnl_loc(vol, c, &j->dev[c], &j->start[c], &pages);
	j->log_off = 2 * DG_PAGE_SIZE;
	j->log_bytes = (pages - 2) * DG_PAGE_SIZE;
	j->tail_off = 0;
	/* Above every sequence number an earlier journal of this volume can
	 * have used (each open's generation starts a new range), so an old
	 * entry left on a stale device can never pass for a live one. */
	j->tail_seq = j->head_seq = j->written_seq =
		dg_gen_base(vol->sb.generation) + 1;
	/* The same for the header: the highest hseq over every copy wins
	 * (read_head()), so a fresh journal's headers must outrank any an
	 * older journal left on a device that comes back stale, or its old
	 * tail would send recovery to old entries still on that copy. */
	j->hseq = dg_gen_base(vol->sb.generation);
	j->replayed = true; /* empty: nothing left to replay */
	return write_head(vol);
}
