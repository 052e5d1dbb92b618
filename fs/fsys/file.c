// SPDX-License-Identifier: MIT
/* file.c -- file data: read, write, truncate, fallocate */
#include <inttypes.h>
#include <linux/falloc.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

size_t dg_file_piece_max(struct dg_fs *fs)
{
	size_t max = dg_apply_max_bytes(fs->vol);

	return max > (512u << 10) ? max - (256u << 10) : max / 2;
}

/* Pages allocated by this write that it does not cover whole must be
 * zero-filled: a reused page still holds its old bytes. */
struct fresh_list {
	struct fresh_run {
		uint64_t fpage, vpn, n;
	} *r;
	unsigned n, cap;
	int err;
};

static void note_fresh(void *arg, uint64_t fpage, uint64_t vpn, uint64_t n)
{
	struct fresh_list *fl = arg;

	if (fl->n == fl->cap) {
		unsigned cap = fl->cap ? fl->cap * 2 : 8;
		void *r = realloc(fl->r, cap * sizeof(*fl->r));

		if (!r) {
			fl->err = -ENOMEM;
			return;
		}
		fl->r = r;
		fl->cap = cap;
	}
	fl->r[fl->n++] = (struct fresh_run){ fpage, vpn, n };
}

static bool is_fresh(const struct fresh_list *fl, uint64_t fpage)
{
	for (unsigned i = 0; i < fl->n; i++)
		if (fpage >= fl->r[i].fpage && fpage < fl->r[i].fpage + fl->r[i].n)
			return true;
	return false;
}

/* Map every hole in [first, last] to new pages. */
static int fill_holes(struct dg_fs *fs, struct dg_txn *txn,
		      struct dg_inode *ip, uint64_t first, uint64_t last,
		      struct fresh_list *fl)
{
	uint64_t p = first;

	while (p <= last) {
		uint64_t vpn, run;
		int ret;

		dg_ext_lookup(ip, p, &vpn, &run);
		if (run > last - p + 1)
			run = last - p + 1;
		if (!vpn) {
			ret = dg_ext_alloc(fs, txn, ip, p, run, note_fresh, fl);
			if (ret)
				return ret;
			if (fl->err)
				return fl->err;
		}
		p += run;
	}
	return 0;
}

/*
 * The whole pages of a write, moved to new pages when there are enough
 * for whole rows (dg_vol_new_row_min()): new pages on whole rows are
 * written before the journal entry and not copied into it, where
 * overwriting them in place journals every byte. The old pages are freed
 * by the same commit, so a crash leaves the old bytes or the new, and
 * their space is reused only once the commit is durable (dg_free()) --
 * by the next such write, not given back as zeros first under -o
 * discard (dg_txn_frees_rewritten()). Not while the file has a
 * libcommit map: those read the pages where they are.
 */
static int relocate(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		    uint64_t off, size_t size, bool *moved)
{
	uint64_t first = dg_div_up(off, DG_PAGE_SIZE);
	uint64_t end = (off + size) / DG_PAGE_SIZE;
	uint64_t min = dg_vol_new_row_min(fs->vol);

	if (!min || end < first + min || dg_inode_map_check(ip, true))
		return 0;
	*moved = true;
	dg_txn_frees_rewritten(txn);
	return dg_ext_punch(fs, txn, ip, first, end - first);
}

int dg_file_write_txn(struct dg_fs *fs, struct dg_txn *txn,
		      struct dg_inode *ip, uint64_t off, const void *buf,
		      size_t size, bool *moved)
{
	struct fresh_list fl = { 0 };
	const uint8_t *src = buf;
	uint64_t first = off / DG_PAGE_SIZE, last = (off + size - 1) / DG_PAGE_SIZE;
	uint8_t *page = NULL;
	/* Only a --remap volume redirects: elsewhere no page is asked
	 * (each asking scans the txn's allocations, 256 times a MiB). */
	const bool remap = moved && dg_vol_has_incompat(fs->vol,
							DG_FEAT_INCOMPAT_REMAP);
	int ret;

	ret = moved ? relocate(fs, txn, ip, off, size, moved) : 0;
	if (!ret)
		ret = fill_holes(fs, txn, ip, first, last, &fl);
	if (ret)
		goto out;
	/* One lookup an extent: a megabyte's 256 pages are a few. */
	for (uint64_t p = first, vpn = 0, run = 0; p <= last; p++) {
		uint64_t pstart = p * DG_PAGE_SIZE;
		uint32_t po = p == first ? (uint32_t)(off % DG_PAGE_SIZE) : 0;
		uint64_t end = off + size < pstart + DG_PAGE_SIZE
				       ? off + size - pstart
				       : DG_PAGE_SIZE;
		uint32_t n = (uint32_t)(end - po);

		if (run > 1 && vpn) {
			vpn++;
			run--;
		} else {
			dg_ext_lookup(ip, p, &vpn, &run);
		}
		if (remap && n == DG_PAGE_SIZE && vpn &&
		    !dg_txn_allocated(txn, vpn)) {
			bool done = false;

			/* A whole page over one in use: to a blank page,
			 * where that stores less (remap.c). */
			ret = dg_remap_write(fs, txn, ip, p, src, &done, moved);
			if (ret)
				goto out;
			if (done) {
				/* Counted when sent: a commit that fails
				 * fails the write as well. */
				__atomic_fetch_add(&fs->pages_remapped, 1,
						   __ATOMIC_RELAXED);
				src += n;
				continue;
			}
		}
		if (n < DG_PAGE_SIZE && is_fresh(&fl, p)) {
			if (!page && !(page = malloc(DG_PAGE_SIZE))) {
				ret = -ENOMEM;
				goto out;
			}
			memset(page, 0, DG_PAGE_SIZE);
			memcpy(page + po, src, n);
			ret = dg_txn_write(txn, vpn, 0, page, DG_PAGE_SIZE);
		} else {
			ret = dg_txn_write_ref(txn, vpn, po, src, n);
		}
		if (ret)
			goto out;
		src += n;
	}
out:
	free(page);
	free(fl.r);
	return ret;
}

/*
 * The start of every write of ino: fs->lock held shared, the inode found,
 * a regular file not damaged, the volume not broken, no libcommit map of
 * it (one writer), a transaction, and the inode's lock held. 0, or the
 * error with nothing held.
 */
static int write_begin(struct dg_fs *fs, uint64_t ino, struct dg_inode **ipp,
		       struct dg_txn **txnp)
{
	struct dg_inode *ip;
	int ret;

	pthread_rwlock_rdlock(&fs->lock);
	ret = dg_inode_find(fs, ino, false, &ip);
	if (ret)
		ip = NULL;
	else if (!S_ISREG(ip->d.mode) || ip->damaged)
		ret = ip->damaged ? -EIO : -EINVAL;
	else if (fs->broken)
		ret = -EROFS;
	else
		ret = dg_inode_map_check(ip, false);
	if (!ret && !(*txnp = dg_txn_new(fs->vol)))
		ret = -ENOMEM;
	if (ret) {
		pthread_rwlock_unlock(&fs->lock);
		return ret;
	}
	pthread_rwlock_wrlock(&ip->lock);
	*ipp = ip;
	return 0;
}

/*
 * Commit one piece of a write (write_file(), dg_fs_write_batch()): the
 * file's bytes up to end are in txn. The inode is stored with it when
 * its record changed (size, blocks, or meta: set-ID bits dropped, pages
 * moved); times alone wait for the next store or fsync.
 */
static int piece_commit(struct dg_fs *fs, struct dg_txn *txn,
			struct dg_inode *ip, const struct dg_dinode *saved,
			uint64_t end, bool meta)
{
	int ret = 0;

	meta = meta || end > ip->d.size || ip->d.blocks != saved->blocks;
	if (end > ip->d.size)
		ip->d.size = end;
	dg_inode_touch(ip, true, true);
	if (meta)
		ret = dg_inode_store(fs, txn, ip);
	else
		ip->times_dirty = true;
	return ret ? ret : dg_fs_commit(fs, txn);
}

/*
 * The inode record as it was (saved) and its extents as the media
 * holds them, after a change that was not committed: relocate(),
 * scatter_move(), fill_holes() and dg_ext_punch() change the in-core
 * map first, and a failure after them (ENOMEM from dg_txn_write() or
 * note_fresh(), a failed commit) would otherwise leave it on pages
 * never written (they read as zeros), which the next store of the
 * inode would make durable. A commit that failed once its entry was
 * appended (the volume is latched, media.h) reads back the old map or
 * the new: the journal says which at the next open. A map that cannot
 * be read back (EIO, EUCLEAN) makes the inode damaged; a load short of
 * memory is tried again, and the inode is damaged only if it still
 * fails: a half-loaded map must not be stored.
 */
static void undo_map(struct dg_fs *fs, struct dg_inode *ip,
		     const struct dg_dinode *saved)
{
	int ret;

	ip->d = *saved;
	for (unsigned tries = 0;; tries++) {
		ret = dg_ext_load(fs, ip);
		if (ret != -ENOMEM || tries == 8)
			break;
		sched_yield();
	}
	if (!ret)
		return;
	if (ret == -ENOMEM)
		dg_vol_log(fs->vol, DG_LOG_ERR, "inode %" PRIu64 ": out of "
			   "memory reloading its extents after a failed "
			   "write: EIO until it is read again", ip->ino);
	ip->damaged = true;
}

/*
 * A piece failed with ret: it is undone in core (inode record, extent
 * map, undo_map()). -ENOSPC: the allocation failed before anything
 * changed on the media, and *txn is freed; when its pages were being
 * moved (moved), there was no room for new pages beside the old: true,
 * with a new *txn, to write it again in place. Otherwise false: the
 * write stops (*txn, maybe NULL, is the caller's to free).
 */
static bool piece_undo(struct dg_fs *fs, struct dg_txn **txn,
		       struct dg_inode *ip, const struct dg_dinode *saved,
		       int ret, bool moved)
{
	undo_map(fs, ip, saved);
	if (ret != -ENOSPC)
		return false;
	dg_txn_free(*txn);
	*txn = NULL;
	return moved && (*txn = dg_txn_new(fs->vol)) != NULL;
}

/*
 * A full remap page folded into the extents (remap.c): up to the records
 * one transaction holds, each mapped in place of its home page, which is
 * freed (dg_ext_move()); the records leave the page, or the page goes.
 * A crash leaves the records or the extents that replace them. A record
 * may rewrite a leaf's tail and split it: some three pages of the entry.
 */
static int remap_fold(struct dg_fs *fs, struct dg_inode *ip)
{
	uint32_t max = (uint32_t)(dg_apply_max_bytes(fs->vol) /
				  (3 * DG_PAGE_SIZE));
	struct dg_dinode saved = ip->d;
	struct dg_frun *fr = NULL;
	struct dg_vrun *vr = NULL;
	struct dg_txn *txn;
	unsigned n = 0;
	int ret;

	if (!ip->remap || !ip->remap->fold_due)
		return 0;
	txn = dg_txn_new(fs->vol);
	if (!txn)
		return -ENOMEM;
	ret = dg_remap_take(txn, ip, max ? max : 1, &fr, &vr, &n);
	if (!ret)
		ret = dg_ext_move(fs, txn, ip, fr, n, vr, n);
	if (!ret)
		ret = dg_inode_store(fs, txn, ip);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	dg_txn_free(txn);
	free(fr);
	free(vr);
	if (!ret) {
		__atomic_fetch_add(&fs->remaps_folded, n, __ATOMIC_RELAXED);
	} else {
		undo_map(fs, ip, &saved);
		dg_vol_log(fs->vol, DG_LOG_WARNING, "inode %" PRIu64 ": remap "
			   "records not folded (%s); whole-page overwrites "
			   "go in place until they are", ip->ino,
			   strerror(-ret));
	}
	return ret;
}

/* The end of every write: a full remap page folded (its failure is
 * logged: the write is done, and the next ones go in place), the locks
 * of write_begin() dropped, and the requests and bytes counted when
 * some were written. */
static void write_end(struct dg_fs *fs, struct dg_inode *ip,
		      struct dg_txn *txn, unsigned requests, size_t done)
{
	(void)remap_fold(fs, ip);
	pthread_rwlock_unlock(&ip->lock);
	dg_txn_free(txn);
	pthread_rwlock_unlock(&fs->lock);
	if (done) {
		__atomic_fetch_add(&fs->writes, requests, __ATOMIC_RELAXED);
		__atomic_fetch_add(&fs->bytes_written, done, __ATOMIC_RELAXED);
	}
}

/* kill_priv: the first piece clears set-ID bits (as cr may keep them)
 * and capabilities in its own transaction (setid.c). */
static ssize_t write_file(struct dg_fs *fs, uint64_t ino, uint64_t off,
			  const void *buf, size_t size, bool kill_priv,
			  const struct dg_cred *cr)
{
	struct dg_inode *ip;
	struct dg_txn *txn;
	size_t done = 0, max = dg_file_piece_max(fs);
	bool relocating = true;
	int ret = 0;

	if (size == 0)
		return 0;
	if (off + size < off || off + size > DG_MAX_FILE_SIZE)
		return -EFBIG;
	ret = write_begin(fs, ino, &ip, &txn);
	if (ret)
		return ret;
	/* Each piece is atomic; a large write is a sequence of them. */
	while (done < size) {
		size_t n = size - done < max ? size - done : max;
		struct dg_dinode saved = ip->d;
		bool killed = false, moved = false;

		if (kill_priv && !done) {
			ret = dg_inode_kill_priv(fs, txn, ip, cr,
						 DG_KILL_WRITE, &killed);
			if (ret) {
				ip->d = saved;
				break;
			}
		}
		ret = dg_file_write_txn(fs, txn, ip, off + done,
					(const uint8_t *)buf + done, n,
					relocating ? &moved : NULL);
		if (!ret)
			ret = piece_commit(fs, txn, ip, &saved, off + done + n,
					   killed || moved);
		if (ret) {
			/* This piece again, in place; the next one may move
			 * (space may have been freed meanwhile, and it may be
			 * smaller: the last piece of a write). */
			if (piece_undo(fs, &txn, ip, &saved, ret, moved)) {
				relocating = false;
				continue;
			}
			break;
		}
		done += n;
		relocating = true;
	}
	write_end(fs, ip, txn, 1, done);
	return done ? (ssize_t)done : ret;
}

/* A batch's transactions carry at most a FUSE write's 1 MiB: a larger
 * one, with several allocations, got fewer whole rows (128 MiB written
 * in order: 4480 rows patched against 1176, 1.90 bytes stored a byte
 * against 1.54), and small runs still share an entry 256 at a time. */
#define BATCH_TXN_MAX (1u << 20)

/* Where a batch's transaction is in its runs: seg[i] at byte pos,
 * bytes taken so far, and the last page the run before ended in. */
struct bcur {
	unsigned i;
	size_t pos, bytes;
	uint64_t last_page;
};

/*
 * The next run of the transaction at c, up to max bytes: false when it
 * is full. A run that starts in the page the one before it ended in
 * goes to the next transaction: each page is written once per
 * transaction.
 */
static bool bcur_next(const struct dg_wseg *seg, unsigned n,
		      const struct bcur *c, size_t max, uint64_t *off,
		      size_t *take)
{
	if (c->i >= n || c->bytes >= max)
		return false;
	*off = seg[c->i].off + c->pos;
	*take = seg[c->i].len - c->pos;
	if (*take > max - c->bytes)
		*take = max - c->bytes;
	return c->last_page == UINT64_MAX ||
	       *off / DG_PAGE_SIZE > c->last_page;
}

static void bcur_step(const struct dg_wseg *seg, struct bcur *c,
		      uint64_t off, size_t take)
{
	c->last_page = (off + take - 1) / DG_PAGE_SIZE;
	c->bytes += take;
	c->pos += take;
	if (c->pos == seg[c->i].len) {
		c->i++;
		c->pos = 0;
	}
}

/* Room in *p (of *cap elements of size) for want elements. */
static int room_for(void **p, unsigned *cap, unsigned want, size_t size)
{
	unsigned c = *cap ? *cap : 8;
	void *q;

	if (want <= *cap)
		return 0;
	while (c < want)
		c *= 2;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/*
 * The whole pages of a transaction's runs that relocate() leaves in
 * place (runs shorter than a band: random overwrites), moved together to
 * one band of new pages when there are 8 rows' worth or more
 * (dg_vol_scatter_min()), so that they too are written as whole rows,
 * before the journal entry and not copied into it (apply.c, new rows),
 * where in place each would be journaled and its row's parity patched.
 * Mapped pages and holes alike; the pages at the ends of runs that are
 * written in part stay where they are. As for relocate(): the old
 * pages are freed by the same commit, not while the file has a
 * libcommit map. No band at all: 0, nothing moved (nor *moved), the
 * pages are written in place. -ENOSPC (the bands ran out after the
 * first) has the caller undo the transaction and write it again
 * without this move. *moved once anything may have changed.
 */
static int scatter_move(struct dg_fs *fs, struct dg_txn *txn,
			struct dg_inode *ip, const struct dg_wseg *seg,
			unsigned n, struct bcur c, size_t max, bool *moved)
{
	uint64_t min = dg_vol_scatter_min(fs->vol);
	uint64_t band = dg_vol_new_row_min(fs->vol), total = 0, off;
	struct dg_frun *fr = NULL;
	struct dg_vrun *vr = NULL;
	unsigned nf = 0, capf = 0, nv = 0, capv = 0;
	size_t take;
	int ret = 0;

	if (!min || !band || dg_inode_map_check(ip, true))
		return 0;
	for (; bcur_next(seg, n, &c, max, &off, &take);
	     bcur_step(seg, &c, off, take)) {
		uint64_t first = dg_div_up(off, DG_PAGE_SIZE);
		uint64_t end = (off + take) / DG_PAGE_SIZE;

		if (end <= first || end >= first + band)
			continue;	/* no whole page, or relocate()'s */
		ret = room_for((void **)&fr, &capf, nf + 1, sizeof(*fr));
		if (ret)
			goto out;
		fr[nf++] = (struct dg_frun){ first, end - first };
		total += end - first;
	}
	if (total < min)
		goto out;
	for (uint64_t left = total; left && !ret;) {
		unsigned got = 0;

		ret = room_for((void **)&vr, &capv, nv + DG_MAX_DEVS,
			       sizeof(*vr));
		if (ret)
			break;
		ret = dg_alloc_band(txn, 0, left, &vr[nv], &got);
		if (!ret && !got)
			ret = -ENOSPC;
		/* No band at all (a fragmented volume: no 8 free rows
		 * together where it looks) took nothing and changed
		 * nothing: the pages stay where they are, in this same
		 * transaction, at no cost. A band that runs out part way
		 * has allocated: undone by the caller. */
		if (!nv && !got) {
			ret = ret == -ENOSPC ? 0 : ret;
			goto out;
		}
		*moved = true;
		for (unsigned j = 0; j < got && !ret; j++)
			left -= vr[nv + j].n;
		nv += ret ? 0 : got;
	}
	if (!ret)
		ret = dg_ext_move(fs, txn, ip, fr, nf, vr, nv);
out:
	free(fr);
	free(vr);
	return ret;
}

/* Write the runs of one transaction, from c on, up to max bytes; the
 * bytes taken are added to c->bytes, the file's new end to *end. */
static int batch_fill(struct dg_fs *fs, struct dg_txn *txn,
		      struct dg_inode *ip, const struct dg_wseg *seg,
		      unsigned n, struct bcur *c, size_t max, bool *moved,
		      uint64_t *end)
{
	uint64_t off;
	size_t take;

	for (; bcur_next(seg, n, c, max, &off, &take);
	     bcur_step(seg, c, off, take)) {
		int ret = dg_file_write_txn(fs, txn, ip, off,
					    (const uint8_t *)seg[c->i].buf +
						    c->pos,
					    take, moved);

		if (ret)
			return ret;
		if (off + take > *end)
			*end = off + take;
	}
	return 0;
}

int dg_fs_write_batch(struct dg_fs *fs, uint64_t ino,
		      const struct dg_wseg *seg, unsigned n, unsigned requests)
{
	struct dg_inode *ip;
	struct dg_txn *txn;
	size_t done = 0, max = dg_file_piece_max(fs);
	struct bcur c = { 0, 0, 0, UINT64_MAX };
	/* The moves this transaction tries: a retry after a failed one
	 * drops it (and relocate() too when that is not what ran out of
	 * room), the next transaction tries both again. */
	bool scatter = true, relocating = true;
	int ret = 0;

	if (max > BATCH_TXN_MAX)
		max = BATCH_TXN_MAX;
	for (unsigned k = 0; k < n; k++)
		if (seg[k].off + seg[k].len < seg[k].off ||
		    seg[k].off + seg[k].len > DG_MAX_FILE_SIZE)
			return -EFBIG;
	while (c.i < n && seg[c.i].len == 0)
		c.i++;
	if (c.i == n)
		return 0;
	ret = write_begin(fs, ino, &ip, &txn);
	if (ret)
		return ret;
	/* One transaction a loop: as many runs as the journal takes. */
	while (c.i < n) {
		struct dg_dinode saved = ip->d;
		struct bcur c0 = c;
		uint64_t end = 0;
		bool moved = false, scatter_failed = false;

		c.bytes = 0;
		c.last_page = UINT64_MAX;
		ret = scatter ? scatter_move(fs, txn, ip, seg, n, c, max,
					     &moved)
			      : 0;
		scatter_failed = ret != 0;
		if (!ret)
			ret = batch_fill(fs, txn, ip, seg, n, &c, max,
					 relocating ? &moved : NULL, &end);
		if (!ret)
			ret = piece_commit(fs, txn, ip, &saved, end, moved);
		if (ret) {
			if (piece_undo(fs, &txn, ip, &saved, ret, moved)) {
				__atomic_fetch_add(&fs->moves_redone, 1,
						   __ATOMIC_RELAXED);
				relocating = relocating && scatter_failed;
				scatter = false;
				c = c0;
				continue;
			}
			break;
		}
		done += c.bytes;
		scatter = relocating = true;
	}
	write_end(fs, ip, txn, requests ? requests : 1, done);
	return ret;
}

void dg_fs_remap_counts(struct dg_fs *fs, uint64_t *remapped,
			uint64_t *folded)
{
	*remapped = __atomic_load_n(&fs->pages_remapped, __ATOMIC_RELAXED);
	*folded = __atomic_load_n(&fs->remaps_folded, __ATOMIC_RELAXED);
}

void dg_fs_write_counts(struct dg_fs *fs, uint64_t *writes, uint64_t *bytes)
{
	*writes = __atomic_load_n(&fs->writes, __ATOMIC_RELAXED);
	*bytes = __atomic_load_n(&fs->bytes_written, __ATOMIC_RELAXED);
}

ssize_t dg_fs_write(struct dg_fs *fs, uint64_t ino, uint64_t off,
		    const void *buf, size_t size)
{
	return write_file(fs, ino, off, buf, size, false, NULL);
}

ssize_t dg_fs_write_unpriv(struct dg_fs *fs, uint64_t ino, uint64_t off,
			   const void *buf, size_t size,
			   const struct dg_cred *cr)
{
	return write_file(fs, ino, off, buf, size, true, cr);
}

ssize_t dg_fs_read(struct dg_fs *fs, uint64_t ino, uint64_t off, size_t size,
		   void *pages, const void **data)
{
	struct dg_inode *ip;
	uint8_t *out = pages;
	uint64_t first, last;
	int ret = 0;

	pthread_rwlock_rdlock(&fs->lock);
	ret = dg_inode_find(fs, ino, false, &ip);
	if (ret || ip->damaged) {
		pthread_rwlock_unlock(&fs->lock);
		return ret ? ret : -EIO;
	}
	pthread_rwlock_rdlock(&ip->lock);
	if (off >= ip->d.size || size == 0) {
		size = 0;
		goto out;
	}
	if (size > ip->d.size - off)
		size = ip->d.size - off;
	first = off / DG_PAGE_SIZE;
	last = (off + size - 1) / DG_PAGE_SIZE;
	for (uint64_t p = first; p <= last;) {
		uint64_t vpn, run;

		dg_ext_lookup(ip, p, &vpn, &run);
		if (run > last - p + 1)
			run = last - p + 1;
		if (vpn)
			ret = dg_read(fs->vol, vpn, run,
				      out + (p - first) * DG_PAGE_SIZE);
		else
			memset(out + (p - first) * DG_PAGE_SIZE, 0,
			       run * DG_PAGE_SIZE);
		if (ret) {
			char path[256];

			dg_fs_path(fs, ino, path, sizeof(path));
			dg_vol_log(fs->vol, DG_LOG_ERR,
				   "read error ino=%" PRIu64 " path=%s page=%"
				   PRIu64 " err=%d", ino, path, p, ret);
			break;
		}
		p += run;
	}
	*data = out + off % DG_PAGE_SIZE;
out:
	pthread_rwlock_unlock(&ip->lock);
	pthread_rwlock_unlock(&fs->lock);
	return ret ? ret : (ssize_t)size;
}

/* Zero [from, to) of one mapped page (the tail of a shrunk file or the
 * edges of a punched hole) so those bytes read as zeros later. */
static int zero_in_page(struct dg_txn *txn, struct dg_inode *ip,
			uint64_t page, uint32_t from, uint32_t to)
{
	static const uint8_t zero[DG_PAGE_SIZE];
	uint64_t vpn, run;

	if (from >= to)
		return 0;
	dg_ext_lookup(ip, page, &vpn, &run);
	if (!vpn)
		return 0;
	return dg_txn_write(txn, vpn, from, zero, to - from);
}

int dg_file_truncate(struct dg_fs *fs, struct dg_txn *txn,
		     struct dg_inode *ip, uint64_t size)
{
	uint64_t keep = (size + DG_PAGE_SIZE - 1) / DG_PAGE_SIZE;
	int ret;

	if (size > DG_MAX_FILE_SIZE)
		return -EFBIG;
	if (size < ip->d.size) {
		ret = dg_ext_punch(fs, txn, ip, keep, UINT64_MAX / 2 - keep);
		if (!ret && size % DG_PAGE_SIZE)
			ret = zero_in_page(txn, ip, size / DG_PAGE_SIZE,
					   size % DG_PAGE_SIZE, DG_PAGE_SIZE);
		if (ret)
			return ret;
	}
	ip->d.size = size;
	return 0;
}

/* Pages the holes of [first, last] need. */
static uint64_t hole_pages(const struct dg_inode *ip, uint64_t first,
			   uint64_t last)
{
	uint64_t holes = 0;

	for (uint64_t p = first; p <= last;) {
		uint64_t vpn, run;

		dg_ext_lookup(ip, p, &vpn, &run);
		if (run > last - p + 1)
			run = last - p + 1;
		if (!vpn)
			holes += run;
		p += run;
	}
	return holes;
}

/* File pages one fallocate allocated, merged where they touch: what a
 * failure gives back. */
struct taken {
	struct taken_run {
		uint64_t fpage, n;
	} *r;
	unsigned n, cap;
};

static int note_taken(struct taken *t, uint64_t fpage, uint64_t n)
{
	if (t->n && t->r[t->n - 1].fpage + t->r[t->n - 1].n == fpage) {
		t->r[t->n - 1].n += n;
		return 0;
	}
	if (t->n == t->cap) {
		unsigned cap = t->cap ? t->cap * 2 : 8;
		void *r = realloc(t->r, cap * sizeof(*t->r));

		if (!r)
			return -ENOMEM;
		t->r = r;
		t->cap = cap;
	}
	t->r[t->n++] = (struct taken_run){ fpage, n };
	return 0;
}

/* Free what a failed fallocate allocated in the transactions it did
 * commit, so that it leaves the space as it found it (ENOSPC must not
 * keep the volume full). Only pages that were holes before it are
 * punched: the file's data is untouched. */
static int give_back(struct dg_fs *fs, struct dg_inode *ip,
		     const struct taken *t)
{
	struct dg_dinode saved = ip->d;
	struct dg_txn *txn;
	int ret = 0;

	if (!t->n)
		return 0;
	txn = dg_txn_new(fs->vol);
	if (!txn)
		return -ENOMEM;
	for (unsigned i = 0; i < t->n && !ret; i++)
		ret = dg_ext_punch(fs, txn, ip, t->r[i].fpage, t->r[i].n);
	if (!ret)
		ret = dg_inode_store(fs, txn, ip);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	if (ret) {
		ip->d = saved;
		dg_ext_load(fs, ip);
	}
	dg_txn_free(txn);
	return ret;
}

/* Allocate the holes of [first, last] with zeroed pages, in as many
 * transactions as the journal needs; all or nothing: a request the
 * free space cannot hold fails before it allocates, and one that fails
 * on the way frees again what it allocated. */
static int alloc_zeroed(struct dg_fs *fs, struct dg_inode *ip,
			uint64_t first, uint64_t last, uint64_t new_size)
{
	static const uint8_t zero[DG_PAGE_SIZE];
	uint64_t step = dg_file_piece_max(fs) / DG_PAGE_SIZE;
	struct taken taken = { 0 };
	int ret = 0;

	/* The extent pages it also needs are checked on the way. */
	if (hole_pages(ip, first, last) > dg_free_vpns(fs->vol))
		return -ENOSPC;

	for (uint64_t p = first; p <= last && !ret; p += step) {
		uint64_t e = p + step - 1 < last ? p + step - 1 : last;
		struct fresh_list fl = { 0 };
		struct dg_dinode saved = ip->d;
		struct dg_txn *txn = dg_txn_new(fs->vol);

		if (!txn) {
			ret = -ENOMEM;
			break;
		}
		ret = fill_holes(fs, txn, ip, p, e, &fl);
		for (unsigned i = 0; !ret && i < fl.n; i++)
			for (uint64_t j = 0; !ret && j < fl.r[i].n; j++)
				ret = dg_txn_write_ref(txn, fl.r[i].vpn + j, 0,
						       zero, DG_PAGE_SIZE);
		if (!ret && e == last && new_size > ip->d.size)
			ip->d.size = new_size;
		if (!ret) {
			dg_inode_touch(ip, false, true);
			ret = dg_inode_store(fs, txn, ip);
		}
		if (!ret)
			ret = dg_fs_commit(fs, txn);
		if (ret) {
			/* Not committed: the block count and the map as
			 * they were before this step. */
			ip->d = saved;
			dg_ext_load(fs, ip);
		}
		for (unsigned i = 0; !ret && i < fl.n; i++)
			ret = note_taken(&taken, fl.r[i].fpage, fl.r[i].n);
		free(fl.r);
		dg_txn_free(txn);
	}
	if (ret && give_back(fs, ip, &taken))
		dg_vol_log(fs->vol, DG_LOG_WARNING, "inode %" PRIu64 ": a "
			   "failed fallocate could not free what it had "
			   "allocated", ip->ino);
	free(taken.r);
	return ret;
}

/* Free the whole pages of [off, end) and zero the partial pages at its
 * edges, in one transaction. */
static int punch(struct dg_fs *fs, struct dg_inode *ip, uint64_t off,
		 uint64_t end)
{
	struct dg_txn *txn = dg_txn_new(fs->vol);
	struct dg_dinode saved = ip->d;
	uint64_t p0 = (off + DG_PAGE_SIZE - 1) / DG_PAGE_SIZE;
	uint64_t p1 = end / DG_PAGE_SIZE;
	int ret = txn ? 0 : -ENOMEM;

	if (!ret && off < end) {
		if (off / DG_PAGE_SIZE == (end - 1) / DG_PAGE_SIZE && p0 > p1)
			ret = zero_in_page(txn, ip, off / DG_PAGE_SIZE,
					   off % DG_PAGE_SIZE,
					   (uint32_t)((end - 1) % DG_PAGE_SIZE) + 1);
		else {
			ret = zero_in_page(txn, ip, off / DG_PAGE_SIZE,
					   off % DG_PAGE_SIZE,
					   off % DG_PAGE_SIZE ? DG_PAGE_SIZE : 0);
			if (!ret && end % DG_PAGE_SIZE && p1 >= p0)
				ret = zero_in_page(txn, ip, p1, 0,
						   end % DG_PAGE_SIZE);
			if (!ret && p1 > p0)
				ret = dg_ext_punch(fs, txn, ip, p0, p1 - p0);
		}
	}
	if (!ret) {
		dg_inode_touch(ip, true, true);
		ret = dg_inode_store(fs, txn, ip);
	}
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	/* Not committed (a failed commit too): the record and the map as
	 * the media holds them, not the punched ones. */
	if (ret && txn)
		undo_map(fs, ip, &saved);
	dg_txn_free(txn);
	return ret;
}

/*
 * mode: 0 or KEEP_SIZE allocates; PUNCH_HOLE|KEEP_SIZE frees; ZERO_RANGE
 * (with or without KEEP_SIZE) makes the range read as zeros with its
 * space allocated: the whole pages are freed and allocated again as
 * zeroed pages (cheaper than writing zeros over them: a freed page
 * needs no parity delta), the partial edge pages are zeroed in place.
 */
int dg_fs_fallocate(struct dg_fs *fs, uint64_t ino, int mode, int64_t soff,
		    int64_t slen)
{
	struct dg_inode *ip;
	uint64_t off = (uint64_t)soff, len = (uint64_t)slen, end = off + len;
	int ret;

	if (soff < 0 || slen <= 0)
		return -EINVAL;
	if (end < off || end > DG_MAX_FILE_SIZE)
		return -EFBIG;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
		     FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	pthread_rwlock_rdlock(&fs->lock);
	ret = dg_inode_find(fs, ino, false, &ip);
	if (!ret)
		ret = !S_ISREG(ip->d.mode) ? -ENODEV
		      : fs->broken	   ? -EROFS
					   : dg_inode_intact(ip);
	/* libcommit: mapped pages are pinned, never freed. */
	if (!ret && (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)))
		ret = dg_inode_map_check(ip, true);
	if (ret)
		goto out;
	pthread_rwlock_wrlock(&ip->lock);
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		ret = punch(fs, ip, off, end);
	} else {
		if (mode & FALLOC_FL_ZERO_RANGE)
			ret = punch(fs, ip, off, end);
		if (!ret)
			ret = alloc_zeroed(fs, ip, off / DG_PAGE_SIZE,
					   (end - 1) / DG_PAGE_SIZE,
					   (mode & FALLOC_FL_KEEP_SIZE) ? 0
									: end);
	}
	pthread_rwlock_unlock(&ip->lock);
out:
	pthread_rwlock_unlock(&fs->lock);
	return ret;
}
