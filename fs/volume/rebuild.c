// SPDX-License-Identifier: MIT
/* rebuild.c -- rebuild missing, blank or stale devices from parity */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "csum.h"
#include "image_file.h"
#include "super.h"

/* Which missing slot a spare path fills: the open's word (a copy of
 * another device), else its own (stale) superblock says so, else its
 * position among the paths, else the first free. */
static int assign_spares(struct dg_vol *vol, const char *const *paths,
			 unsigned n, int *slot_of_spare, char *errbuf,
			 size_t errlen)
{
	uint32_t todo = vol->missing_mask;

	for (unsigned s = 0; s < vol->nspare; s++) {
		struct dg_dev d;
		struct dg_dsuper sb;
		bool backup;
		char e[256];
		int hint = vol->spare_slot[s] - 1;

		slot_of_spare[s] = -1;
		/* The open said which slot it stands for (a copy of
		 * another device: its superblock names that device). */
		if (hint >= 0 && (todo & (1u << hint))) {
			slot_of_spare[s] = hint;
			todo &= ~(1u << hint);
			continue;
		}
		if (dg_dev_open(&d, vol->spare[s], true, true, e, sizeof(e)))
			continue;
		if (dg_dev_read_super(&d, &sb, &backup) == 0 &&
		    !memcmp(sb.vol_uuid, vol->sb.vol_uuid, 16) &&
		    sb.dev_index < vol->ndev && (todo & (1u << sb.dev_index))) {
			slot_of_spare[s] = (int)sb.dev_index;
			todo &= ~(1u << sb.dev_index);
		}
		dg_dev_close(&d);
	}
	for (unsigned s = 0; s < vol->nspare; s++) {
		if (slot_of_spare[s] >= 0)
			continue;
		for (unsigned i = 0; i < n; i++)
			if (paths[i] && !strcmp(paths[i], vol->spare[s]) &&
			    i < vol->ndev && (todo & (1u << i))) {
				slot_of_spare[s] = (int)i;
				todo &= ~(1u << i);
				break;
			}
	}
	for (unsigned s = 0; s < vol->nspare; s++) {
		if (slot_of_spare[s] >= 0 || !todo)
			continue;
		slot_of_spare[s] = __builtin_ctz(todo);
		todo &= todo - 1;
	}
	if (todo) {
		snprintf(errbuf, errlen, "device %u is missing and no path was "
			 "given to rebuild it on", __builtin_ctz(todo));
		return -ENXIO;
	}
	return 0;
}

int dg_spare_open(struct dg_vol *vol, const char *path, struct dg_dev *t,
		  char *err, size_t errlen)
{
	uint64_t need = vol->sb.dev_pages * DG_PAGE_SIZE;
	bool created;
	int ret;

	mode_t wide;

	/* Created 0600, never through a symlink (image_file.h). */
	ret = dg_image_prepare(path, need, &created, err, errlen);
	if (ret)
		return ret;
	/* A whole device is about to be written there: whoever could read
	 * the file before would read the volume. */
	wide = dg_image_wide_mode(path);
	if (wide && dg_image_tighten(path) == 0)
		dg_log(DG_LOG_NOTICE, "'%s' was readable by others "
		       "(group/other bits %03o): its mode is now 0600", path,
		       (unsigned)wide);
	ret = dg_dev_open(t, path, false, false, err, errlen);
	if (ret)
		return ret;
	if (t->size < need) {
		snprintf(err, errlen, "'%s' is too small: %llu bytes, the "
			 "volume needs %llu", path,
			 (unsigned long long)t->size,
			 (unsigned long long)need);
		dg_dev_close(t);
		return -ENOSPC;
	}
	t->latch = &vol->latch;
	t->obs = vol->obs;
	return 0;
}


/*
 * Whether path is device idx of this volume come back behind it (a
 * device left out while a degraded mount went on): its own superblock
 * names the volume and the slot, with the same geometry and an older
 * generation. Such a device keeps everything written before it left,
 * so only what changed meanwhile is rebuilt (resync_note()). *sb is
 * its superblock.
 */
static bool returning_member(struct dg_vol *vol, unsigned idx,
			     const char *path, struct dg_dsuper *sb)
{
	struct dg_dev d;
	bool backup, ok;
	char e[256];

	if (dg_dev_open(&d, path, true, true, e, sizeof(e)))
		return false;
	ok = dg_dev_read_super(&d, sb, &backup) == 0 &&
	     !memcmp(sb->vol_uuid, vol->sb.vol_uuid, 16) &&
	     sb->dev_index == idx && sb->dev_count == vol->sb.dev_count &&
	     sb->parity == vol->sb.parity &&
	     sb->chunk_pages == vol->sb.chunk_pages &&
	     sb->dev_pages == vol->sb.dev_pages &&
	     sb->incompat == vol->sb.incompat &&
	     sb->csum_start == vol->sb.csum_start &&
	     sb->csum_pages == vol->sb.csum_pages &&
	     sb->csum_copies == vol->sb.csum_copies &&
	     sb->data_start == vol->sb.data_start &&
	     sb->rows == vol->sb.rows &&
	     sb->generation < vol->sb.generation &&
	     !sb->replace_path[0] &&
	     d.size >= vol->sb.dev_pages * DG_PAGE_SIZE;
	dg_dev_close(&d);
	return ok;
}

static int prepare_spare(struct dg_vol *vol, unsigned idx, const char *path,
			 bool member, const struct dg_dsuper *sb,
			 char *errbuf, size_t errlen)
{
	struct dg_dev *d = &vol->devs[idx];
	int ret = dg_spare_open(vol, path, d, errbuf, errlen);

	if (ret)
		return ret;
	d->idx = idx;
	/* A returning device is the same media: it keeps its identity. */
	if (member)
		memcpy(vol->dev_uuid[idx], sb->dev_uuid, 16);
	else
		dg_uuid_new(vol->dev_uuid[idx]);
	return 0;
}


struct rb {
	struct dg_vol *vol;
	uint32_t target;	/* mask of devices being rebuilt */
	uint32_t member;	/* of these, returning members (resync) */
	uint64_t member_gen[DG_MAX_DEVS]; /* their superblock generation */
	uint8_t *changed;	/* resync: checksum page indexes to rebuild */
	uint64_t nchanged[DG_MAX_DEVS], nwritten[DG_MAX_DEVS];
	uint64_t pages, lost;
	dg_chk_fn fn;
	void *arg;
	/* A full rebuild's pages of the rebuilt devices, stored and not
	 * yet persisted: one round a batch (rb_store()). */
	struct dg_flushset fs;
	uint64_t batched;
};

/*
 * Pages a round of a full rebuild persists together. A device rebuilt
 * whole (blank, missing, cut short) is trusted by nothing until the
 * superblocks written at the end of dg_vol_rebuild() take it in: until
 * then its superblock is absent, foreign or of an older generation, so
 * an open leaves it out (missing or returning) and a rebuild starts
 * over. Its pages need be durable only before those superblocks, in
 * any order among themselves: a crash in a round keeps any subset of
 * the round's pages, torn or whole, which is what a crash between two
 * per-page persists keeps too (the pages not reached yet), only more of
 * them. One round per batch instead of one persist a page: on an image
 * file on a disk each persist is an msync waited for.
 */
#define RB_BATCH 1024u

/* Persist the round under way; a failure latches the volume (media.h),
 * which dg_vol_rebuild() checks before the superblocks. */
static void rb_round(struct rb *b)
{
	if (b->fs.n || b->fs.oom)
		(void)dg_flushset_persist(b->vol->devs, b->vol->ndev, &b->fs);
	b->batched = 0;
}

/* The rebuilt page (dev, row): on a device rebuilt whole, stored into
 * the round (rb_round()); on a returning member (a resync: its pages
 * are trusted one by one, by checksum) or any device that stays in the
 * volume (a fault on top of the loss), written and persisted alone. */
static int rb_store(struct rb *b, unsigned dev, uint64_t row,
		    const uint8_t *img)
{
	struct dg_vol *vol = b->vol;
	uint64_t off = dg_row_page(vol, row) << DG_PAGE_SHIFT;
	int ret;

	if (!(b->target & (1u << dev)) || (b->member & (1u << dev)))
		return dg_repair_page(vol, dev, row, img);
	ret = dg_repair_store_dev(vol, &vol->devs[dev], off, img,
				  DG_PAGE_SIZE);
	if (ret)
		return ret;
	dg_flushset_add(&b->fs, dev, off, DG_PAGE_SIZE);
	if (++b->batched >= RB_BATCH)
		rb_round(b);
	return 0;
}

static void rb_lost(struct rb *b, unsigned dev, uint64_t row,
		    const char *why)
{
	struct dg_chk_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = DG_CHK_PAGE_BAD;
	ev.dev = (int)dev;
	ev.page = (int64_t)dg_row_page(b->vol, row);
	ev.vpn = dg_row_dev_is_parity(b->vol, row, dev)
			 ? -1 : (int64_t)dg_loc_vpn(b->vol, dev, row);
	ev.structure = ev.vpn < 0 ? "parity" : "data";
	snprintf(ev.detail, sizeof(ev.detail),
		 "page cannot be rebuilt while rebuilding the device: %s",
		 why);
	snprintf(ev.action, sizeof(ev.action), "none: left as is (G6)");
	b->lost++;
	if (b->fn)
		b->fn(b->arg, &ev);
}

static bool index_changed(const struct rb *b, uint64_t i)
{
	return b->changed[i / 8] & (1u << (i % 8));
}

/* The walk's filter in a resync: the blocks that changed. */
static bool keep_changed(void *arg, uint64_t i)
{
	return index_changed(arg, i);
}

/*
 * Whether the rows of checksum page index i of a returning member dev
 * changed while it was away, from the view examined before the copies
 * are repaired. Copy 0 of (dev, i) lives on dev itself (format.h). A
 * degraded write sets the checksum of every page of the missing device
 * it changes, data or parity, on the copies left (docs/design.md,
 * "Degraded writes"): each gets a newer generation, and the copy on dev
 * stays behind. So a copy on dev that is current means that no page of
 * dev in those rows changed since; anything else (stale, failing its
 * seal, newer than the generation its superblock knows of: written in a
 * history this volume does not share) marks them to be rebuilt, and so
 * does a copy on dev that no copy on a device that stayed matches in
 * generation (resync_keeps()).
 * Rows kept are still verified against the newest checksum page at
 * every read and by fsck's page pass (docs/integrity.md, "A device that
 * comes back").
 */
static bool resync_keeps(const struct rb *b, unsigned dev,
			 const struct dg_cpage_view *v)
{
	uint64_t known = dg_gen_base(b->member_gen[dev] + 1);
	unsigned n = b->vol->sb.csum_copies;
	int own = -1;

	if (!v)
		return false;
	for (unsigned c = 0; c < n; c++)
		if (dg_cpage_copy_dev(b->vol, dev, c) == dev)
			own = (int)c;
	if (own < 0 || v->state[own] != DG_COPY_CURRENT ||
	    v->copy_gen[own] >= known)
		return false;
	/* A copy on a device that stayed (not rebuilt in this pass) is
	 * current at the same generation: the volume that stayed agrees
	 * the device's copy is the newest. A copy newest only on the
	 * returning device was written where the others did not see it
	 * (a mount of that device alone): its rows are rebuilt. */
	for (unsigned c = 0; c < n; c++) {
		unsigned cd = dg_cpage_copy_dev(b->vol, dev, c);

		if (cd != dev && !(b->target & (1u << cd)) &&
		    v->state[c] == DG_COPY_CURRENT &&
		    v->copy_gen[c] == v->copy_gen[own])
			return true;
	}
	return false;
}

static void resync_note(struct rb *b, unsigned dev, uint64_t i,
			const struct dg_cpage_view *v)
{
	b->nwritten[dev]++;
	if (resync_keeps(b, dev, v))
		return;
	if (!index_changed(b, i))
		b->changed[i / 8] |= (uint8_t)(1u << (i % 8));
	b->nchanged[dev]++;
}

/* Every checksum page copy that lives on a rebuilt device, written from
 * the newest verified copy (dg_cpage_examine() repairs it). A page of
 * which no copy verifies stays so: its pages cannot be verified. */
static int rebuild_csum_copies(struct rb *b)
{
	struct dg_vol *vol = b->vol;
	const uint64_t np = vol->sb.csum_pages;
	uint8_t *img = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);

	if (!img)
		return -ENOMEM;
	for (unsigned owner = 0; owner < vol->ndev; owner++) {
		bool mine = false;

		for (unsigned c = 0; c < vol->sb.csum_copies; c++)
			if (b->target & (1u << dg_cpage_copy_dev(vol, owner, c)))
				mine = true;
		if (!mine)
			continue;
		/* Indexes the init map says were written: the others hold
		 * no entry, whatever their copies (check_csum_pages()). */
		for (uint64_t i = dg_cmap_next_set(vol, 0, np); i < np;
		     i = dg_cmap_next_set(vol, i + 1, np)) {
			struct dg_cpage_view v;

			bool ok = dg_cpage_examine(vol, owner, i, img, &v,
						   DG_CPX_REPAIR) >= 0;

			if (!ok)
				rb_lost(b, owner, i * DG_CSUMS_PER_PAGE,
					"no copy of its checksum page verifies");
			/* No copy verifies: its rows go as in a full
			 * rebuild (their pages cannot be proven). */
			if (b->member & (1u << owner))
				resync_note(b, owner, i, ok ? &v : NULL);
		}
	}
	free(img);
	return 0;
}

/*
 * The ditto copies of the row's zone pages that lie on a device rebuilt
 * whole, from the pages of the row (verified: each matches its
 * checksum), stored into the round like the row's pages: dg_ditto_check()
 * at the end then finds them right instead of writing and persisting
 * them one by one (a few hundred persists of a small volume, more than
 * all its rounds). Copies anywhere else are left to dg_ditto_check().
 */
static void rb_dittos(struct rb *b, uint64_t row, uint8_t *const *pages,
		      const bool *known, const uint64_t *cs)
{
	struct dg_vol *vol = b->vol;
	uint32_t whole = b->target & ~b->member;
	unsigned m = vol->k + vol->parity;

	if (!whole)
		return;
	for (unsigned p = 0; p < m; p++) {
		unsigned dev = dg_row_pos_dev(vol, row, p);
		uint64_t vpn;

		if (dg_row_dev_is_parity(vol, row, dev) || !known[p] ||
		    cs[p] == DG_CSUM_NONE)
			continue;
		vpn = dg_loc_vpn(vol, dev, row);
		if (!dg_ditto_has(vol, vpn) ||
		    dg_csum_page(vol, dev, row, pages[p]) != cs[p])
			continue;
		for (unsigned j = 1; j <= vol->sb.ditto_copies; j++) {
			unsigned cdev;
			uint64_t page, off;

			dg_ditto_loc(vol, vpn, j, &cdev, &page);
			off = page << DG_PAGE_SHIFT;
			if (!(whole & (1u << cdev)) ||
			    !memcmp(dg_dev_ptr(&vol->devs[cdev], off),
				    pages[p], DG_PAGE_SIZE))
				continue;
			if (dg_repair_store_dev(vol, &vol->devs[cdev], off,
						pages[p], DG_PAGE_SIZE))
				return;	/* latched: said at the end */
			dg_flushset_add(&b->fs, cdev, off, DG_PAGE_SIZE);
			if (++b->batched >= RB_BATCH)
				rb_round(b);
		}
	}
}

static int rebuild_row(struct rb *b, uint64_t row, uint8_t *mem)
{
	struct dg_vol *vol = b->vol;
	unsigned m = vol->k + vol->parity, nlost = 0;
	uint8_t *pages[DG_MAX_DEVS];
	bool lost[DG_MAX_DEVS] = { false }, known[DG_MAX_DEVS];
	uint64_t cs[DG_MAX_DEVS];
	bool written = false;

	for (unsigned p = 0; p < m; p++) {
		unsigned dev = dg_row_pos_dev(vol, row, p);
		struct dg_dev *d = &vol->devs[dev];

		pages[p] = mem + (size_t)p * DG_PAGE_SIZE;
		cs[p] = 1;
		known[p] = dg_csum_get(vol, dev, row, &cs[p]) == 0;
		if (known[p] && cs[p] != DG_CSUM_NONE)
			written = true;
		if (b->target & (1u << dev)) {
			lost[p] = true;
			continue;
		}
		if (!known[p]) {
			lost[p] = true;
			continue;
		}
		if (cs[p] == DG_CSUM_NONE) {
			memset(pages[p], 0, DG_PAGE_SIZE);
			continue;
		}
		memcpy(pages[p], dg_dev_ptr(d, dg_row_page(vol, row)
					       << DG_PAGE_SHIFT),
		       DG_PAGE_SIZE);
		/* Zeros from a mapping that faulted: lost, and latched. */
		if (dg_dev_fault_check(d)) {
			lost[p] = true;
			continue;
		}
		/* A page fsck gave up holds the bytes its row's parity
		 * was computed from (given_up.c): they count. */
		if (dg_csum_page(vol, dev, row, pages[p]) != cs[p] &&
		    !dg_csum_is_given_up(vol, dev, row, cs[p], pages[p]))
			lost[p] = true; /* a fault on top of the loss */
	}
	if (!written)
		return 0;
	for (unsigned p = 0; p < m; p++)
		nlost += lost[p];
	if (nlost > vol->parity ||
	    dg_parity_rebuild(vol, pages, lost, DG_PAGE_SIZE) < 0) {
		for (unsigned p = 0; p < m; p++)
			if (lost[p] && (b->target & (1u << dg_row_pos_dev(vol, row, p))))
				rb_lost(b, dg_row_pos_dev(vol, row, p), row,
					"too many pages of its row are bad");
		return 0;
	}
	for (unsigned p = 0; p < m; p++) {
		unsigned dev = dg_row_pos_dev(vol, row, p);

		if (!lost[p])
			continue;
		if (known[p] && cs[p] == DG_CSUM_NONE)
			continue; /* never written: media ignored */
		/* A given-up page goes back as parity pins it: other
		 * bytes would leave the row's parity wrong. */
		if (known[p] && dg_csum_page(vol, dev, row, pages[p]) != cs[p] &&
		    !dg_csum_is_given_up(vol, dev, row, cs[p], pages[p])) {
			rb_lost(b, dev, row, "rebuilt page fails its checksum");
			continue;
		}
		if (!known[p])
			continue; /* no checksum proves it: left (G6) */
		/* A failure latches the volume (media.h); the rebuild
		 * sees it before it writes the superblocks. */
		if (rb_store(b, dev, row, pages[p]))
			return 0;
		if (b->target & (1u << dev))
			b->pages++;
	}
	rb_dittos(b, row, pages, known, cs);
	return 0;
}

/* Write pages [start, start + pages) of dev from src; on a returning
 * member only the runs of pages that differ (most of its journal copy
 * is what it held when it left). */
static int copy_changed(struct dg_vol *vol, unsigned dev, uint64_t start,
			const uint8_t *src, uint64_t pages, bool member)
{
	const uint8_t *cur = dg_dev_ptr(&vol->devs[dev],
					start << DG_PAGE_SHIFT);

	if (!member)
		return dg_repair_write(vol, dev, start << DG_PAGE_SHIFT, src,
				       pages << DG_PAGE_SHIFT);
	for (uint64_t p = 0; p < pages;) {
		uint64_t q = p;
		int ret;

		while (q < pages && memcmp(cur + (q << DG_PAGE_SHIFT),
					   src + (q << DG_PAGE_SHIFT),
					   DG_PAGE_SIZE))
			q++;
		if (q > p) {
			ret = dg_repair_write(vol, dev,
					      (start + p) << DG_PAGE_SHIFT,
					      src + (p << DG_PAGE_SHIFT),
					      (q - p) << DG_PAGE_SHIFT);
			if (ret)
				return ret;
		}
		p = q + 1;
	}
	return 0;
}

/* What the rebuilt devices' media was asked to do (counted from their
 * open in prepare_spare()), logged with the pages rebuilt: a rebuild of
 * a disk image is as slow as its persists are many. */
static void rb_counts(struct rb *b, struct dg_media_counts *out)
{
	struct dg_media_counts tot, per[DG_MAX_DEVS], c = { 0 };

	dg_vol_media_counts(b->vol, &tot, per);
	for (unsigned t = 0; t < b->vol->ndev; t++)
		if (b->target & (1u << t))
			dg_media_counts_add(&c, &per[t]);
	dg_log(DG_LOG_INFO, "rebuild: %llu pages from parity; the rebuilt "
	       "devices: %llu bytes stored, %llu persists",
	       (unsigned long long)b->pages,
	       (unsigned long long)c.bytes_stored,
	       (unsigned long long)c.fences);
	if (out)
		*out = c;
}

int dg_vol_rebuild(const char *const *paths, unsigned n, dg_chk_fn fn,
		   void *arg, dg_progress_fn progress, void *parg,
		   char *errbuf, size_t errlen)
{
	return dg_vol_rebuild_observed(paths, n, NULL, NULL, fn, arg,
				       progress, parg, errbuf, errlen);
}

int dg_vol_rebuild_observed(const char *const *paths, unsigned n,
			    const struct dg_media_observer *obs,
			    struct dg_media_counts *counts, dg_chk_fn fn,
			    void *arg, dg_progress_fn progress, void *parg,
			    char *errbuf, size_t errlen)
{
	struct dg_vol *vol = NULL;
	int slot[DG_MAX_DEVS];
	struct rb b = { .fn = fn, .arg = arg };
	struct dg_row_walk w;
	uint8_t *mem = NULL;
	bool jfresh = false;
	int ret, closed;

	/* No allocator: the root may live only on the lost devices. */
	/* Devices behind the volume beyond what parity covers are used
	 * page by page (fsck.c takes them back after its page pass). */
	/* The journal is not replayed here (fsck's reopen, the pass after,
	 * does): opened so, it keeps its tail and header whatever is
	 * written (journal.c, dg_journal_open()), and the close leaves the
	 * committed entries for that open. */
	dg_flushset_init(&b.fs);
	ret = dg_vol_open_observed(paths, n, DG_OPEN_DEGRADED |
					   DG_OPEN_NORECOVER | DG_OPEN_FORMAT |
					   DG_OPEN_SUSPECT | DG_OPEN_REPAIR,
				   obs, &vol, errbuf, errlen);
	if (ret)
		return ret;
	if (!vol->degraded)
		goto out;
	if (!vol->redundancy || !vol->parity) {
		snprintf(errbuf, errlen, "no parity to rebuild from");
		ret = -ENXIO;
		goto out;
	}
	ret = assign_spares(vol, paths, n, slot, errbuf, errlen);
	if (ret)
		goto out;
	b.vol = vol;
	for (unsigned s = 0; s < vol->nspare; s++) {
		struct dg_dsuper sb;
		bool member;

		if (slot[s] < 0)
			continue;
		member = returning_member(vol, (unsigned)slot[s],
					  vol->spare[s], &sb);
		ret = prepare_spare(vol, (unsigned)slot[s], vol->spare[s],
				    member, &sb, errbuf, errlen);
		if (ret)
			goto out;
		b.target |= 1u << slot[s];
		if (member) {
			b.member |= 1u << slot[s];
			b.member_gen[slot[s]] = sb.generation;
		}
	}
	/* Returning members are resynced: only the rows of the checksum
	 * page indexes that changed while they were away (resync_note()),
	 * unless a blank device is rebuilt in the same pass (every row). */
	if (b.member == b.target) {
		b.changed = calloc(vol->sb.csum_pages / 8 + 1, 1);
		if (!b.changed) {
			ret = -ENOMEM;
			goto out;
		}
	} else {
		b.member = 0;
	}
	/* Checksum pages first, each copy on a rebuilt device from the
	 * newest copy that verifies elsewhere (there are at least parity
	 * + 1 copies on different devices, so one survives any loss parity
	 * covers);
	 * then the init map, from the union loaded at open. */
	vol->read_only = false;	/* the rebuilt devices are written now */
	vol->cpx_rebuilding = b.target;
	ret = rebuild_csum_copies(&b);
	vol->cpx_rebuilding = 0;
	if (ret)
		goto out;
	ret = dg_cmap_store(vol, b.target);
	if (ret)
		goto out;
	/* Journal copies on rebuilt devices, from a copy that survived;
	 * with none left, a fresh journal. */
	{
		unsigned nj = dg_jrnl_ncopies(vol), src = nj;

		for (unsigned c = 0; c < nj && src == nj; c++) {
			unsigned dev;
			uint64_t start, pages;

			dg_jrnl_loc(vol, c, &dev, &start, &pages);
			if (!(b.target & (1u << dev)))
				src = c;
		}
		for (unsigned c = 0; c < nj && src < nj; c++) {
			unsigned dev, odev;
			uint64_t start, pages, ostart, opages;

			dg_jrnl_loc(vol, c, &dev, &start, &pages);
			dg_jrnl_loc(vol, src, &odev, &ostart, &opages);
			if (!(b.target & (1u << dev)))
				continue;
			ret = copy_changed(vol, dev, start, dg_dev_ptr(
					       &vol->devs[odev],
					       ostart << DG_PAGE_SHIFT),
					   pages, b.member & (1u << dev));
			/* A source that faulted under the copy gave
			 * zeros: EIO, the volume latched. */
			if (!ret)
				ret = dg_dev_fault_check(&vol->devs[odev]);
			if (ret)
				goto out;
		}
		jfresh = src == nj;
	}
	vol->missing_mask = 0;
	vol->degraded = false;
	if (jfresh) {
		ret = dg_journal_format(vol); /* every copy was lost */
		if (ret)
			goto out;
	}
	mem = aligned_alloc(DG_PAGE_SIZE, DG_MAX_DEVS * DG_PAGE_SIZE);
	if (!mem) {
		ret = -ENOMEM;
		goto out;
	}
	/* A blank row needs no rebuild: blocks of rows whose checksum page
	 * index is clear in the init map (the union loaded at open from
	 * the devices left; every device holds a copy) were never written,
	 * their media is ignored everywhere (docs/design.md, "What the
	 * passes visit"). Offline: nothing sets a bit meanwhile. */
	dg_walk_init(&w, vol, 0, vol->sb.rows);
	/* Read ahead what is read: not the devices being rebuilt. */
	w.devs &= ~b.target;
	if (b.member) {		/* resync: unchanged blocks are kept */
		w.keep = keep_changed;
		w.arg = &b;
	}
	for (uint64_t row, report = 0; dg_walk_next(&w, &row);) {
		if (progress && row >= report) {
			progress(parg, row, vol->sb.rows);
			report = (row / 1024 + 1) * 1024;
		}
		rebuild_row(&b, row, mem);
	}
	/* The last round: every rebuilt page durable before anything
	 * (ditto copies, superblocks) is built on it. */
	rb_round(&b);
	if (progress)
		progress(parg, vol->sb.rows, vol->sb.rows);
	{
		/* ditto copies on the rebuilt devices, from their pages */
		uint64_t stale;

		dg_ditto_check(vol, true, &stale);
	}
	/* A store or persist failed on the way (media.h): the devices are
	 * not whole, and their superblocks must not say they are. */
	if (dg_latch_on(&vol->latch)) {
		ret = -EIO;
		goto out;
	}
	/* Superblocks of every device, the rebuilt ones included; the
	 * volume is whole again and closes clean. */
	/* A new epoch (super.c): every device learns the new generation
	 * as OPENING before any says more, so a crash between two devices'
	 * superblocks leaves laggards one behind an OPENING reference,
	 * which the next open accepts; written in one pass, the devices
	 * not reached yet were stale behind the others, more of them than
	 * parity covers (tests/crash/test_crash_rebuild.c). The close
	 * marks it clean. */
	vol->read_only = false;
	/* A suspect -- a device behind the volume, or one found by its
	 * pages (vol.c, identify_by_pages()) -- went through every row
	 * above like the others: each page verified against its newest
	 * checksum, rebuilt where it failed and its row allowed, which is
	 * what fsck's page pass would check it for. Its superblocks are
	 * written with the others: left as they were, the next open --
	 * within parity now -- would take it for a stale device (refused)
	 * or a blank one. Not after a resync, which skips the rows that
	 * did not change. */
	for (unsigned d = 0; d < vol->ndev && !b.member; d++)
		if (vol->devs[d].present && vol->devs[d].suspect)
			vol->devs[d].suspect = vol->devs[d].found = false;
	ret = dg_super_new_epoch(vol);
	if (ret)
		goto out;
	rb_counts(&b, counts);
	for (unsigned t = 0; t < vol->ndev; t++) {
		struct dg_chk_event ev;
		char resync[64];

		if (!(b.target & (1u << t)))
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.kind = DG_CHK_DEV_REBUILT;
		ev.dev = (int)t;
		ev.page = -1;
		ev.vpn = -1;
		ev.structure = "device";
		ev.fixable = true;
		ev.fixed = true;
		resync[0] = 0;
		if (b.member & (1u << t)) {
			dg_log(DG_LOG_NOTICE, "device %u on '%s' came back: "
			       "resync: %llu of %llu blocks changed", t,
			       vol->devs[t].path,
			       (unsigned long long)b.nchanged[t],
			       (unsigned long long)b.nwritten[t]);
			snprintf(resync, sizeof(resync),
				 " (resync: %llu of %llu blocks changed)",
				 (unsigned long long)b.nchanged[t],
				 (unsigned long long)b.nwritten[t]);
		}
		snprintf(ev.detail, sizeof(ev.detail),
			 "device %u rebuilt on '%s': %llu pages from parity%s%s",
			 t, vol->devs[t].path, (unsigned long long)b.pages,
			 resync,
			 b.lost ? ", some pages could not be rebuilt" : "");
		snprintf(ev.action, sizeof(ev.action), "rebuilt from parity");
		if (fn)
			fn(arg, &ev);
	}
	ret = b.lost ? -EIO : 0;
out:
	dg_flushset_fini(&b.fs);
	free(mem);
	free(b.changed);
	closed = dg_vol_close(vol); /* the last checkpoint, superblocks */
	return ret ? ret : closed;
}
