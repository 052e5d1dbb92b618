// SPDX-License-Identifier: MIT
/*
 * replace.c -- online replace: rebuild a device onto a new path while the
 * volume is mounted and serves reads and updates
 *
 * The new device T must end exact: every page of the slot, data rows and
 * the slot's checksum copies, init map, journal copy and ditto copies,
 * as the volume holds it at the end. Two rules make it so.
 *
 *  1. From the moment T is attached, every write of the slot reaches T.
 *     A present old device S mirrors its writes to T (media.c; not its
 *     superblocks, T gets its own at the end). A missing device's slot
 *     is taken by T itself, "filling" (media.h): updates write it as any
 *     device, but its rows at or past fill_row read as missing (rebuilt
 *     from parity), and the volume stays degraded (companions, apply.c)
 *     until the end, so a crash leaves what a degraded volume leaves.
 *  2. Each unit of the slot is made exact on T once, under the lock that
 *     orders every write to it: everything outside the data rows while
 *     every row lock and the journal lock are held (updates and repairs
 *     write checksum pages, the init map and ditto copies only under row
 *     locks; journal entries are placed under the journal lock and
 *     written while their update holds its row locks), before T is
 *     attached; each data
 *     row under its own lock, in row order (fill_row grows with it).
 *
 * Every write to T goes through a repair write's rule (repair.c): whole
 * pages proven elsewhere -- a page that verifies against its checksum, a
 * page rebuilt from its row and then verified, the newest verified copy
 * of a checksum page. A row already exact on T is left alone, so a
 * replace cut short (crash, unmount) starts over at row 0 and passes the
 * rows done before at the cost of a checksum each; updates a journal
 * replay redid while T was not attached are caught the same way.
 *
 * T's superblocks say generation 0 (behind any volume) until the end, so
 * a T given to a mount by mistake is left out as stale; at the end the
 * new slot and a new generation are written to every superblock, and the
 * old device, if any, is stale from then on.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "csum.h"
#include "image_file.h"
#include "probe.h"
#include "super.h"

struct dg_repl {
	unsigned dev;
	bool missing;		/* T took the slot (filling) */
	struct dg_dev tgt;	/* T, while S mirrors to it */
	uint8_t uuid[16];	/* T's device uuid */
	_Atomic uint64_t stale;	/* S's copies found stale, not copied */
};

#define REC_OFF offsetof(struct dg_droot, replace)

/* ---- the record -------------------------------------------------------- */

int dg_vol_replace_load(struct dg_vol *vol, struct dg_replace_rec *rec)
{
	struct dg_dreplace d;
	int ret;

	memset(rec, 0, sizeof(*rec));
	ret = dg_read_bytes(vol, 0, REC_OFF, sizeof(d), &d);
	if (ret)
		return ret;
	if (d.magic != DG_REPLACE_MAGIC || d.state > DG_REPLACE_FAILED ||
	    d.dev >= vol->ndev || d.next_row > vol->sb.rows)
		return 0;
	*rec = (struct dg_replace_rec){
		.state = (enum dg_replace_state)d.state, .dev = d.dev,
		.next_row = d.next_row, .started = d.started,
		.ended = d.ended, .rate = d.rate, .pages = d.pages,
		.lost = d.lost, .stale = d.stale,
	};
	memcpy(rec->path, vol->sb.replace_path, sizeof(rec->path) - 1);
	/* The superblocks forget the path when the new device takes the
	 * slot, before the record says so: a crash in between. */
	if (rec->state == DG_REPLACE_RUNNING && !rec->path[0]) {
		rec->state = DG_REPLACE_FINISHED;
		rec->next_row = vol->sb.rows;
	}
	return 0;
}

int dg_vol_replace_save(struct dg_vol *vol, const struct dg_replace_rec *rec)
{
	struct dg_dreplace d = {
		.magic = DG_REPLACE_MAGIC, .state = rec->state,
		.dev = rec->dev, .next_row = rec->next_row,
		.started = rec->started, .ended = rec->ended,
		.rate = rec->rate, .pages = rec->pages, .lost = rec->lost,
		.stale = rec->stale,
	};
	struct dg_range r = { 0, REC_OFF, sizeof(d), &d };

	if (vol->read_only)
		return -EROFS;
	return dg_apply(vol, &r, 1);
}

int dg_vol_replacing(struct dg_vol *vol)
{
	return vol->repl ? (int)vol->repl->dev : -1;
}

/* ---- the whole volume held still --------------------------------------- */

/* Every row lock (in index order, as lock_rows() takes them) and then
 * the journal lock: no update, read, repair or checkpoint runs. */
static void hold_all(struct dg_vol *vol)
{
	for (unsigned i = 0; i < DG_ROW_LOCKS; i++)
		pthread_rwlock_wrlock(&vol->row_locks[i]);
	pthread_mutex_lock(&vol->jrnl.lock);
}

static void release_all(struct dg_vol *vol)
{
	pthread_mutex_unlock(&vol->jrnl.lock);
	for (unsigned i = DG_ROW_LOCKS; i-- > 0;)
		pthread_rwlock_unlock(&vol->row_locks[i]);
}

/* The device the new pages go to. */
static struct dg_dev *target(struct dg_vol *vol)
{
	struct dg_repl *r = vol->repl;

	return r->missing ? &vol->devs[r->dev] : &r->tgt;
}


/* ---- the new path ---------------------------------------------------- */

/* Refuse anything but nothing, zeros, or this volume's device dev (a
 * replace cut short, or the slot's own stale device). */
static int check_target(struct dg_vol *vol, unsigned dev, const char *path,
			char *err, size_t errlen)
{
	struct dg_probe p;
	char what[256], u[37];
	int ret = dg_dev_probe(path, &p, err, errlen);

	if (ret)
		return ret;
	if (p.kind == DG_PROBE_ABSENT || p.kind == DG_PROBE_EMPTY ||
	    p.kind == DG_PROBE_BLANK)
		return 0;
	if (p.kind == DG_PROBE_DAXGUARD && !memcmp(p.uuid, vol->sb.vol_uuid, 16) &&
	    p.dev_index == dev && p.generation < vol->sb.generation)
		return 0;
	dg_probe_describe(&p, what, sizeof(what));
	dg_uuid_format(vol->sb.vol_uuid, u);
	snprintf(err, errlen, "'%s' %s, not a blank file or device; refusing "
		 "to replace device %u of volume %s onto it (nothing was "
		 "written); wipe it first (wipefs -a) if it is to be "
		 "overwritten", path, what, dev, u);
	return -EEXIST;
}

/*
 * Failures. Every write of a replace goes through the media layer, which
 * refuses all of them once a persist failed (media.h); the replace looks
 * at the volume's latch before each step that builds on the ones before
 * (dg_vol_replace_begin(), _rows(), _finish()), so the writers below may
 * drop their own results: T is then left stale (generation 0), as an
 * interrupted replace leaves it.
 */

/* T's superblocks, at generation 0 (stale) until the end. */
static void mark_target(struct dg_vol *vol, struct dg_dev *t, unsigned dev,
			const uint8_t uuid[16])
{
	struct dg_dsuper s = vol->sb;

	s.dev_index = dev;
	s.generation = 0;
	memset(s.replace_path, 0, sizeof(s.replace_path));
	memcpy(s.dev_uuid, uuid, 16);
	dg_dsuper_seal(&s);
	(void)dg_repair_write_dev(vol, t, 0, &s, sizeof(s)); /* see above */
	(void)dg_repair_write_dev(vol, t, (s.dev_pages - 1) << DG_PAGE_SHIFT,
				  &s, sizeof(s));
}

/* The superblocks name the new path (or none, path NULL). */
static void set_path(struct dg_vol *vol, const char *path)
{
	pthread_mutex_lock(&vol->epoch_lock);
	memset(vol->sb.replace_path, 0, sizeof(vol->sb.replace_path));
	if (path)
		snprintf(vol->sb.replace_path, sizeof(vol->sb.replace_path),
			 "%s", path);
	(void)dg_write_supers(vol); /* see "Failures" above */
	pthread_mutex_unlock(&vol->epoch_lock);
}

/* ---- attach: everything outside the data rows, under hold_all() ------ */

/*
 * A present S: the slot's pages before the data rows, as they are (the
 * volume is held still, so they are what S holds). Only what S's file
 * holds: the head of a terabyte device is gigabytes of checksum region,
 * nearly all holes (never written, punched at mkfs), and copying them
 * wrote gigabytes of zeros to T with every row lock held (144 s at 4 x
 * 1 TiB). Where S has a hole, T must read zeros too: a T that holds
 * something there (a resumed replace's) is zeroed. Where the file
 * cannot say (a block device), all of it, as before.
 */
static void copy_head(struct dg_vol *vol, struct dg_dev *s, struct dg_dev *t)
{
	uint64_t start = DG_PAGE_SIZE;
	uint64_t end = vol->sb.data_start << DG_PAGE_SHIFT;
	uint64_t off = start, lo, hi, tlo, thi;
	int r;

	if (dg_dev_next_data(s, start, end, &lo, &hi) < 0 ||
	    dg_dev_next_data(t, start, end, &tlo, &thi) < 0) {
		(void)dg_repair_write_dev(vol, t, start, /* "Failures" */
					  dg_dev_ptr(s, start), end - start);
		/* S cut short or poisoned under the copy: zeros were
		 * copied; latched (S shares the volume's latch). */
		(void)dg_dev_fault_check(s);
		return;
	}
	while (off < end) {
		r = dg_dev_next_data(s, off, end, &lo, &hi);
		if (r < 0) {
			lo = off;	/* cannot tell: copy the rest */
			hi = end;
		} else if (r == 0) {
			lo = hi = end;
		}
		/* [off, lo) is a hole of S: zero what T holds there. */
		while (off < lo &&
		       dg_dev_next_data(t, off, lo, &tlo, &thi) == 1) {
			/* Refused once latched (T shares the latch). */
			if (dg_dev_zero(t, tlo, thi - tlo))
				return; /* "Failures" */
			off = thi;
		}
		if (lo < hi && (dg_repair_store_dev(vol, t, lo,
						    dg_dev_ptr(s, lo), hi - lo) ||
				dg_dev_fault_check(s)))
			return; /* as above */
		off = hi > lo ? hi : end;
	}
	(void)dg_dev_persist(t, start, end - start); /* "Failures" */
}

/* Each checksum copy the slot holds, from the newest copy that
 * verifies (others hold at least one: parity + 1 copies): for a
 * missing S all of them; for a present S, whose head was copied as it
 * is, those where S's copy is not that (S lost the write). Returns how
 * many of a present S's were stale. */
static uint64_t copy_csum_pages(struct dg_vol *vol, unsigned dev,
				struct dg_dev *t, uint8_t *img, bool present)
{
	const uint64_t np = vol->sb.csum_pages;
	uint64_t stale = 0;

	/* Initialised indexes only: the others hold no entry. */
	for (unsigned owner = 0; owner < vol->ndev; owner++)
		for (unsigned c = 0; c < vol->sb.csum_copies; c++) {
			if (dg_cpage_copy_dev(vol, owner, c) != dev)
				continue;
			for (uint64_t i = dg_cmap_next_set(vol, 0, np);
			     i < np; i = dg_cmap_next_set(vol, i + 1, np)) {
				struct dg_cpage_view v;

				uint64_t off = dg_cpage_copy_page(vol, i, c)
					       << DG_PAGE_SHIFT;

				if (dg_cpage_examine(vol, owner, i, img, &v,
						     DG_CPX_QUIET) != 1)
					continue;
				if (present) {
					if (!memcmp(dg_dev_ptr(t, off), img,
						    DG_PAGE_SIZE))
						continue;
					stale++;
				}
				(void)dg_repair_write_dev(vol, t, off, /* above */
							  img, DG_PAGE_SIZE);
			}
		}
	return stale;
}

/* A missing S: its journal copy, from one that is present (every row
 * lock and the journal lock are held: no entry is placed or written
 * meanwhile). */
static void copy_journal(struct dg_vol *vol, unsigned dev, struct dg_dev *t)
{
	unsigned nj = dg_jrnl_ncopies(vol), src = nj, sdev = 0;
	uint64_t sstart = 0, spages = 0;

	for (unsigned c = 0; c < nj && src == nj; c++) {
		dg_jrnl_loc(vol, c, &sdev, &sstart, &spages);
		if (sdev != dev && vol->devs[sdev].present)
			src = c;
	}
	for (unsigned c = 0; c < nj && src < nj; c++) {
		unsigned d;
		uint64_t start, pages;

		dg_jrnl_loc(vol, c, &d, &start, &pages);
		if (d == dev)
			(void)dg_repair_write_dev(vol, t, /* "Failures" */
				start << DG_PAGE_SHIFT,
				dg_dev_ptr(&vol->devs[sdev],
					   sstart << DG_PAGE_SHIFT),
				pages << DG_PAGE_SHIFT);
	}
	/* A source that faulted under the copy gave zeros: latched. */
	if (src < nj)
		(void)dg_dev_fault_check(&vol->devs[sdev]);
}

static int attach(struct dg_vol *vol, struct dg_repl *r)
{
	struct dg_dev *s = &vol->devs[r->dev];
	uint8_t *img = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);

	if (!img)
		return -ENOMEM;
	hold_all(vol);
	if (!r->missing) {
		/* S's head as it is, then what in it S may have kept old
		 * (it lost writes: that may be why it is replaced): the
		 * checksum copies from their newest verified copy, the
		 * init map from the union loaded at open (through S, which
		 * mirrors it). Its ditto copies follow with their rows. */
		copy_head(vol, s, &r->tgt);
		s->mirror = &r->tgt;
		s->mirror_lo = DG_PAGE_SIZE;
		s->mirror_hi = (vol->sb.dev_pages - 1) << DG_PAGE_SHIFT;
		r->stale += copy_csum_pages(vol, r->dev, &r->tgt, img, true);
		(void)dg_cmap_store(vol, 1u << r->dev); /* "Failures" */
	} else {
		copy_csum_pages(vol, r->dev, &r->tgt, img, false);
		copy_journal(vol, r->dev, &r->tgt);
		/* T takes the slot, filling: present for writes, its rows
		 * missing for reads until rebuilt. */
		*s = r->tgt;
		memset(&r->tgt, 0, sizeof(r->tgt));
		r->tgt.fd = -1;
		s->idx = r->dev;
		s->filling = true;
		s->fill_row = 0;
		(void)dg_cmap_store(vol, 1u << r->dev); /* "Failures" */
	}
	vol->repl = r;
	vol->repl_abort = dg_vol_replace_abort;
	release_all(vol);
	free(img);
	return 0;
}

int dg_vol_replace_begin(struct dg_vol *vol, unsigned dev, const char *path,
			 bool resume, char *err, size_t errlen)
{
	struct dg_repl *r;
	char *abs, *given = NULL;
	int ret;

	(void)resume; /* a resumed replace starts over, skipping what is exact */
	if (vol->read_only || dg_latch_on(&vol->latch)) {
		snprintf(err, errlen, "the volume is read-only");
		return -EROFS;
	}
	if (vol->repl) {
		snprintf(err, errlen, "device %u is being replaced already",
			 vol->repl->dev);
		return -EBUSY;
	}
	if (dev >= vol->ndev) {
		snprintf(err, errlen, "no device %u: the volume has %u", dev,
			 vol->ndev);
		return -EINVAL;
	}
	if (!vol->redundancy || !vol->parity) {
		snprintf(err, errlen, "the volume has no parity to rebuild "
			 "device %u from", dev);
		return -ENXIO;
	}
	/* Root writes a whole device there: a link planted in /tmp must
	 * not choose where (image_file.h). Resolved once, used from here. */
	given = malloc(PATH_MAX);
	if (!given)
		return -ENOMEM;
	ret = dg_image_resolve(path, given, PATH_MAX, err, errlen);
	if (ret == -EPERM) {
		free(given);
		return ret;
	}
	if (ret) {
		snprintf(err, errlen, "cannot resolve '%s': %s", path,
			 strerror(-ret));
		free(given);
		return ret;
	}
	path = given;
	ret = check_target(vol, dev, path, err, errlen);
	if (ret)
		goto out;
	r = calloc(1, sizeof(*r));
	if (!r) {
		ret = -ENOMEM;
		goto out;
	}
	r->dev = dev;
	r->missing = !vol->devs[dev].present;
	ret = dg_spare_open(vol, path, &r->tgt, err, errlen);
	if (ret) {
		free(r);
		goto out;
	}
	dg_uuid_new(r->uuid);
	mark_target(vol, &r->tgt, dev, r->uuid);
	abs = realpath(path, NULL);
	set_path(vol, abs ? abs : path);
	free(abs);
	ret = attach(vol, r);
	if (ret) {
		dg_dev_close(&r->tgt);
		free(r);
	}
out:
	free(given);
	return ret;
}

/* ---- the data rows ----------------------------------------------------- */

/*
 * The ditto copies that the slot keeps in row's part of the ditto
 * region, made exact on T: each copy that is not its page (verified,
 * rebuilt if need be) is written from the page. A present S's head was
 * copied as it was, so a copy S kept stale is counted. Under the row's
 * lock, which every write of these copies holds (updates write a zone
 * page's copies under its row's lock); from then on S mirrors them.
 */
static void replace_dittos(struct dg_vol *vol, uint64_t row, uint8_t *buf)
{
	struct dg_repl *r = vol->repl;
	struct dg_dev *t = target(vol);

	for (unsigned d = 0; d < vol->ndev; d++) {
		uint64_t vpn, cs;

		if (d == r->dev || dg_row_dev_is_parity(vol, row, d))
			continue;
		vpn = dg_loc_vpn(vol, d, row);
		if (!dg_ditto_has(vol, vpn))
			continue;
		for (unsigned j = 1; j <= vol->sb.ditto_copies; j++) {
			unsigned cdev;
			uint64_t page;

			dg_ditto_loc(vol, vpn, j, &cdev, &page);
			if (cdev != r->dev)
				continue;
			if (dg_page_read_locked(vol, d, row, buf, &cs) < 0 ||
			    cs == DG_CSUM_NONE)
				break; /* unreadable or never written */
			if (!memcmp(dg_dev_ptr(t, page << DG_PAGE_SHIFT), buf,
				    DG_PAGE_SIZE))
				continue;
			if (dg_repair_write_dev(vol, t, page << DG_PAGE_SHIFT,
						buf, DG_PAGE_SIZE))
				return; /* latched: the replace says so */
			r->stale++;
		}
	}
}

/*
 * Rows [row, next) lie in blocks the init map calls never written: a
 * blank row needs no rebuild (its pages' media is ignored everywhere,
 * and a page written there later is written whole, T's included: apply.c
 * writes a never-written page whole, wherever it goes). A filling T's
 * fill_row moves past them under the lock of the last one, in order
 * with the updates of that row; an update of an earlier row of the
 * range in flight meanwhile finds the page never written, whether T's
 * row reads as missing or not, and writes T whole. Bits are never
 * cleared, so no block with live pages is skipped; one initialised
 * after the test holds new data, written to T as above. True when the
 * rows were skipped.
 */
static bool skip_blank(struct dg_vol *vol, struct dg_dev *t, uint64_t row,
		       uint64_t next)
{
	pthread_rwlock_t *lk = dg_row_lock(vol, next - 1);

	pthread_rwlock_wrlock(lk);
	if (t->filling && __atomic_load_n(&t->fill_row, __ATOMIC_RELAXED) ==
			  row)
		__atomic_store_n(&t->fill_row, next, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(lk);
	return true;
}

/*
 * The pages a pass of rows writes to T, persisted once at its end: one
 * msync over the span instead of one a page (on an image file on a disk
 * each is a write to the disk waited for: a few hundred pages a
 * second). T is read back by nobody after a crash before the end
 * (generation 0: left out as stale, and a resumed replace checks every
 * row again), so a page of T need be durable only before the
 * superblocks that take T in, which dg_vol_replace_finish() writes
 * after the last pass.
 */
struct span {
	uint64_t lo, hi;
};

static void span_add(struct span *s, uint64_t off, uint64_t len)
{
	if (s->hi == s->lo || off < s->lo)
		s->lo = off;
	if (off + len > s->hi)
		s->hi = off + len;
}

/* Row's page of the slot exact on T (its persist in *sp); under the
 * row's lock. 1 written, 0 nothing to do, -EIO could not be rebuilt. */
static int replace_row(struct dg_vol *vol, uint64_t row, uint8_t *buf,
		       struct span *sp)
{
	struct dg_repl *r = vol->repl;
	struct dg_dev *t = target(vol);
	uint64_t off = dg_row_page(vol, row) << DG_PAGE_SHIFT, cs;

	if (dg_csum_get(vol, r->dev, row, &cs) < 0)
		return -EIO;
	/* Never written: its media is ignored wherever it is. */
	if (cs == DG_CSUM_NONE ||
	    dg_csum_page(vol, r->dev, row, dg_dev_ptr(t, off)) == cs)
		return 0;
	/* S's page verified (repaired from its row when bad), or, missing
	 * or not yet rebuilt on T, rebuilt from the row and verified. A
	 * page fsck gave up goes over as its row's parity holds it (else
	 * T would differ, and parity would no longer cover the row). */
	if (dg_page_read_locked(vol, r->dev, row, buf, &cs) < 0 &&
	    dg_page_read_given_up(vol, r->dev, row, buf) < 0)
		return -EIO;
	if (dg_repair_store_dev(vol, t, off, buf, DG_PAGE_SIZE))
		return -EIO; /* latched: dg_vol_replace_rows() says so */
	span_add(sp, off, DG_PAGE_SIZE);
	return 1;
}

int dg_vol_replace_rows(struct dg_vol *vol, uint64_t first, uint64_t end,
			uint64_t *pages, uint64_t *lost)
{
	struct dg_row_walk w;
	struct span sp = { 0, 0 };
	struct dg_dev *t;
	uint64_t row;
	uint8_t *buf;

	if (!vol->repl)
		return -EINVAL;
	if (end > vol->sb.rows)
		end = vol->sb.rows;
	buf = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!buf)
		return -ENOMEM;
	t = target(vol);
	dg_walk_init(&w, vol, first, end);
	/* What is read: a present S (and T, compared), else the rest of
	 * each row, to rebuild S's page from. */
	if (vol->repl->missing) {
		w.devs &= ~(1u << vol->repl->dev);
	} else {
		w.devs = 1u << vol->repl->dev;
		w.extra = target(vol);
	}
	while (dg_walk_next(&w, &row)) {
		pthread_rwlock_t *lk;
		int ret;

		if (w.gap != row)
			skip_blank(vol, t, w.gap, row);
		lk = dg_row_lock(vol, row);
		pthread_rwlock_wrlock(lk);
		/* A missing S's copies come from dg_ditto_check() at the
		 * end: T holds none of them to compare. */
		if (!vol->repl->missing)
			replace_dittos(vol, row, buf);
		ret = replace_row(vol, row, buf, &sp);
		if (ret > 0)
			++*pages;
		if (ret < 0)
			++*lost;
		/* Rows are filled in order: past this one, T's page is what
		 * the volume holds (or, lost, fails its checksum). */
		if (t->filling && __atomic_load_n(&t->fill_row,
						   __ATOMIC_RELAXED) == row)
			__atomic_store_n(&t->fill_row, row + 1,
					 __ATOMIC_RELEASE);
		pthread_rwlock_unlock(lk);
	}
	if (w.gap < w.end)
		skip_blank(vol, t, w.gap, w.end);
	/* A failure latches the volume: said below. */
	if (sp.hi > sp.lo)
		(void)dg_dev_persist(t, sp.lo, sp.hi - sp.lo);
	free(buf);
	return dg_latch_on(&vol->latch) ? -EIO : 0;
}

uint64_t dg_vol_replace_take_stale(struct dg_vol *vol)
{
	return vol->repl ? atomic_exchange(&vol->repl->stale, 0) : 0;
}

/* ---- the end ----------------------------------------------------------- */

int dg_vol_replace_finish(struct dg_vol *vol, char *err, size_t errlen)
{
	struct dg_repl *r = vol->repl;
	struct dg_dev *s;
	uint64_t stale;
	int ret;

	if (!r) {
		snprintf(err, errlen, "no replace is running");
		return -EINVAL;
	}
	s = &vol->devs[r->dev];
	if (r->missing && s->fill_row < vol->sb.rows) {
		snprintf(err, errlen, "rows %llu.. of device %u are not rebuilt",
			 (unsigned long long)s->fill_row, r->dev);
		return -EINVAL;
	}
	/* T's ditto copies, from their pages: a missing S's were never
	 * copied (a present S's came with copy_head() and the mirror). */
	if (r->missing)
		dg_ditto_check(vol, true, &stale);
	if (dg_latch_on(&vol->latch)) {
		snprintf(err, errlen, "a persist failed: the volume is "
			 "read-only");
		return -EIO;
	}
	hold_all(vol);
	if (r->missing) {
		s->filling = false;
		vol->missing_mask &= ~(1u << r->dev);
		vol->degraded = vol->missing_mask != 0;
	} else {
		s->mirror = NULL;
		dg_dev_close(s);
		*s = r->tgt;
		s->idx = r->dev;
	}
	memcpy(vol->dev_uuid[r->dev], r->uuid, 16);
	vol->repl = NULL;
	release_all(vol);
	free(r);
	/* Every superblock, T's included, with a new generation: an old S
	 * is stale from now on. The path goes with it. */
	pthread_mutex_lock(&vol->epoch_lock);
	memset(vol->sb.replace_path, 0, sizeof(vol->sb.replace_path));
	pthread_mutex_unlock(&vol->epoch_lock);
	ret = dg_super_new_epoch(vol);
	if (ret)
		snprintf(err, errlen, "the new superblocks could not be made "
			 "durable: %s", strerror(-ret));
	return ret;
}

void dg_vol_replace_abort(struct dg_vol *vol)
{
	struct dg_repl *r = vol->repl;
	struct dg_dev *s;

	if (!r)
		return;
	s = &vol->devs[r->dev];
	hold_all(vol);
	if (r->missing) {
		dg_dev_close(s);	/* back to missing */
		s->present = false;
	} else {
		s->mirror = NULL;
		dg_dev_close(&r->tgt);
	}
	vol->repl = NULL;
	release_all(vol);
	free(r);
}
