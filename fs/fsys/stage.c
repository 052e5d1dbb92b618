// SPDX-License-Identifier: MIT
/* stage.c -- libcommit syncs larger than one transaction, made atomic */
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

/*
 * A sync whose changes do not fit one dg_apply() (libcommit/README.md
 * "Syncs of any size"):
 *
 *  1. stage: the new image of every page the sync changes is written to
 *     an unlinked regular file, the stage, at the page's own file
 *     offset (its extent map is the index: nothing to parse). Each batch
 *     is an ordinary transaction: journaled, checksummed, with parity.
 *     A crash here leaves an orphan, freed by the next mount like any
 *     other; the file is untouched.
 *  2. publish: ONE transaction sets dinode.stage_ino of the file. This
 *     is the commit point.
 *  3. apply: the staged pages are applied to the file in chunks, each
 *     its own dg_apply() of the lines that differ between the staged
 *     page and the file's verified page. That diff makes the loop
 *     idempotent: a chunk already applied finds nothing to change, a
 *     chunk torn by a crash was journaled and is finished by the
 *     journal first, and parity deltas always come from the old pages
 *     read at that moment. The mount runs the same loop for a published
 *     stage it finds (dg_fstage_recover()).
 *  4. retire: one transaction clears stage_ino, then the stage is freed
 *     (a crash in between leaves an ordinary orphan).
 *
 * Why not copy-on-write extents (write new pages, swap the extent map in
 * one record)? It writes once instead of twice, but moves the extents of
 * a file under its live maps and fragments it, and the extent update of
 * a scattered 1 GiB change can itself exceed one transaction.
 */

#define LINES_PER_PAGE (DG_PAGE_SIZE / DG_LINE_SIZE)
#define STAGE_BATCH    256u	/* pages staged per transaction, at most */

struct dg_fstage {
	struct dg_fmap *m;
	struct dg_fs *fs;
	uint64_t ino;		/* the file */
	uint64_t sino;		/* the stage */
	uint64_t size;		/* the file's size when the stage began */
	/* Pages of the batch being staged: their images (kept until the
	 * batch's transaction commits: dg_txn_write_ref) and file pages. */
	uint8_t *buf;
	uint64_t *fp;
	unsigned n;
	uint64_t staged;	/* pages staged so far */
};

/* Tests: DG_TEST_STAGE_KILL=N makes the process kill itself after the
 * N-th durable step of staged syncs (a staging batch, the publish, an
 * applied chunk, the retire), to crash at a known point. */
static void stage_step(const char *what)
{
	static atomic_ulong steps;
	static long kill_at = -1;
	unsigned long k = atomic_fetch_add(&steps, 1) + 1;

	if (kill_at < 0) {
		const char *e = getenv("DG_TEST_STAGE_KILL");

		kill_at = e ? atol(e) : 0;
	}
	if (kill_at > 0 && k == (unsigned long)kill_at) {
		dg_log(DG_LOG_WARNING, "DG_TEST_STAGE_KILL: killed after "
		       "step %lu (%s)", k, what);
		raise(SIGKILL);
	}
}

bool dg_fstage_supported(const struct dg_fs *fs)
{
	return dg_vol_has_incompat(fs->vol, DG_FEAT_INCOMPAT_STAGED_SYNC);
}

int dg_fstage_new(struct dg_fmap *m, struct dg_fstage **sp)
{
	struct dg_fs *fs = dg_fmap_fs(m);
	struct dg_fstage *s;
	struct dg_inode *ip, *sip = NULL;
	struct dg_txn *txn;
	uint32_t nchunks = 0;
	int ret;

	if (!dg_fstage_supported(fs))
		return -E2BIG; /* as before: the sync must fit one update */
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->buf = aligned_alloc(DG_PAGE_SIZE, STAGE_BATCH * DG_PAGE_SIZE);
	s->fp = malloc(STAGE_BATCH * sizeof(*s->fp));
	txn = dg_txn_new(fs->vol);
	if (!s->buf || !s->fp || !txn) {
		ret = -ENOMEM;
		goto fail;
	}
	s->m = m;
	s->fs = fs;
	s->ino = dg_fmap_ino(m);
	pthread_rwlock_wrlock(&fs->lock);
	ip = dg_inode_get(fs, s->ino);
	ret = !ip ? -ENOENT : fs->broken || dg_vol_read_only(fs->vol) ? -EROFS : 0;
	if (!ret) {
		s->size = ip->d.size;
		nchunks = fs->root.nchunks;
		ret = dg_inode_new(fs, txn, S_IFREG | 0600, 0, 0, &sip);
		if (ret)	/* a new chunk was not committed */
			fs->root.nchunks = nchunks;
	}
	if (!ret) {
		/* Born unlinked: an orphan until published, so a crash
		 * before the publish frees it at the next mount. */
		sip->d.nlink = 0;
		sip->d.parent = s->ino;
		sip->nopen = 1;
		ret = dg_inode_store(fs, txn, sip);
		if (!ret)
			ret = dg_fs_commit(fs, txn);
		if (ret) {
			dg_inode_discard(fs, sip);
			fs->root.nchunks = nchunks;
		} else {
			s->sino = sip->ino;
		}
	}
	pthread_rwlock_unlock(&fs->lock);
	dg_txn_free(txn);
	if (ret)
		goto fail;
	*sp = s;
	return 0;
fail:
	dg_txn_free(txn);
	free(s->buf);
	free(s->fp);
	free(s);
	return ret;
}

/* Commit the batch of page images to the stage: one transaction. */
static int stage_flush(struct dg_fstage *s)
{
	struct dg_fs *fs = s->fs;
	struct dg_inode *sip;
	struct dg_txn *txn;
	int ret = 0;

	if (!s->n)
		return 0;
	txn = dg_txn_new(fs->vol);
	if (!txn)
		return -ENOMEM;
	pthread_rwlock_rdlock(&fs->lock);
	sip = dg_inode_get(fs, s->sino);
	if (!sip)
		ret = -ENOENT;
	if (!ret) {
		struct dg_dinode saved = sip->d;

		pthread_rwlock_wrlock(&sip->lock);
		for (unsigned i = 0; i < s->n && !ret; i++) {
			uint64_t end = (s->fp[i] + 1) * DG_PAGE_SIZE;

			ret = dg_file_write_txn(fs, txn, sip,
						s->fp[i] * DG_PAGE_SIZE,
						s->buf + (size_t)i * DG_PAGE_SIZE,
						DG_PAGE_SIZE, NULL);
			if (end > sip->d.size)
				sip->d.size = end;
		}
		if (!ret)
			ret = dg_inode_store(fs, txn, sip);
		if (!ret)
			ret = dg_fs_commit(fs, txn);
		if (ret == -ENOSPC) {
			/* Nothing reached the media: forget the mapping. */
			dg_txn_free(txn);
			txn = NULL;
			sip->d = saved;
			dg_ext_load(fs, sip);
		}
		pthread_rwlock_unlock(&sip->lock);
	}
	pthread_rwlock_unlock(&fs->lock);
	dg_txn_free(txn);
	if (!ret) {
		s->staged += s->n;
		s->n = 0;
		stage_step("staging batch");
	}
	return ret;
}

/* The verified image of file page fp as the sync sees it so far: the
 * stage's when an earlier piece staged it, else the file's. */
static int base_image(struct dg_fstage *s, uint64_t fp, uint8_t *out)
{
	struct dg_fs *fs = s->fs;
	struct dg_inode *ip;
	uint64_t vpn = 0, run;

	pthread_rwlock_rdlock(&fs->lock);
	ip = dg_inode_get(fs, s->sino);
	if (ip) {
		pthread_rwlock_rdlock(&ip->lock);
		dg_ext_lookup(ip, fp, &vpn, &run);
		pthread_rwlock_unlock(&ip->lock);
	}
	if (!vpn && (ip = dg_inode_get(fs, s->ino))) {
		pthread_rwlock_rdlock(&ip->lock);
		dg_ext_lookup(ip, fp, &vpn, &run);
		pthread_rwlock_unlock(&ip->lock);
	}
	pthread_rwlock_unlock(&fs->lock);
	if (!vpn)
		return -EIO; /* the map pins every page: no holes */
	return dg_read(fs->vol, vpn, 1, out);
}

int dg_fstage_add(struct dg_fstage *s, const struct dg_fmap_run *runs,
		  unsigned n)
{
	int ret = dg_fmap_runs_check(s->m, runs, n);

	for (unsigned i = 0; i < n && !ret;) {
		uint64_t fp = runs[i].off / DG_PAGE_SIZE;
		uint8_t *pg;

		bool again = false;

		/* A page staged twice (runs out of order, or in two
		 * pieces of one batch) builds on its first image, which
		 * must be committed to be read back: rare. */
		for (unsigned j = 0; j < s->n && !again; j++)
			again = s->fp[j] == fp;
		if ((s->n == STAGE_BATCH || again) && (ret = stage_flush(s)))
			break;
		pg = s->buf + (size_t)s->n * DG_PAGE_SIZE;
		ret = base_image(s, fp, pg);
		if (ret)
			break;
		for (; i < n && runs[i].off / DG_PAGE_SIZE == fp; i++)
			memcpy(pg + runs[i].off % DG_PAGE_SIZE, runs[i].data,
			       runs[i].len);
		/* Past the end of the file stays zero (dg_fmap_commit). */
		if (s->size < (fp + 1) * DG_PAGE_SIZE) {
			uint64_t keep = s->size > fp * DG_PAGE_SIZE
						? s->size - fp * DG_PAGE_SIZE
						: 0;

			memset(pg + keep, 0, DG_PAGE_SIZE - keep);
		}
		s->fp[s->n++] = fp;
	}
	if (!ret)
		ret = stage_flush(s);
	return ret;
}

/* Line runs of page fp where new differs from old, appended to r. */
static unsigned diff_page(uint64_t fp, const uint8_t *old, const uint8_t *nw,
			  struct dg_fmap_run *r)
{
	unsigned k = 0;

	for (unsigned l = 0; l < LINES_PER_PAGE;) {
		unsigned e = l;

		while (e < LINES_PER_PAGE &&
		       memcmp(old + e * DG_LINE_SIZE, nw + e * DG_LINE_SIZE,
			      DG_LINE_SIZE))
			e++;
		if (e > l) {
			r[k++] = (struct dg_fmap_run){
				fp * DG_PAGE_SIZE + l * DG_LINE_SIZE,
				(e - l) * DG_LINE_SIZE, nw + l * DG_LINE_SIZE };
			l = e;
		} else {
			l++;
		}
	}
	return k;
}

/* Apply one chunk: through the map when there is one (its line
 * checksums are checked and kept current), else straight to the pages
 * of the file (the mount: nothing else runs). */
static int apply_chunk(struct dg_fs *fs, struct dg_inode *ip,
		       struct dg_fmap *m, const struct dg_fmap_run *r,
		       unsigned n, struct dg_range *rg)
{
	if (!n)
		return 0;
	if (m)
		return dg_fmap_commit(m, r, n);
	for (unsigned i = 0; i < n; i++) {
		uint64_t vpn, run;

		/* The mount: nothing else runs, no lock needed. */
		dg_ext_lookup(ip, r[i].off / DG_PAGE_SIZE, &vpn, &run);
		if (!vpn)
			return -EIO;
		rg[i] = (struct dg_range){ vpn,
					   (uint32_t)(r[i].off % DG_PAGE_SIZE),
					   r[i].len, r[i].data };
	}
	return dg_apply(fs->vol, rg, n);
}

/*
 * Steps 3 and 4 for file ip and stage sip: apply every staged page, in
 * chunks of at most `batch` pages (each one dg_apply()), then clear the
 * publish record. Idempotent. The caller keeps both inodes alive and
 * holds no lock (m's commit takes them); at the mount nothing else runs.
 */
static int stage_finish(struct dg_fs *fs, struct dg_inode *ip,
			struct dg_inode *sip, struct dg_fmap *m)
{
	/* Worst case per page: 4 KiB of bytes and 32 runs, each a journal
	 * range descriptor: keep a chunk within half an update. */
	size_t per_page = DG_PAGE_SIZE + LINES_PER_PAGE / 2 *
					 sizeof(struct dg_djrange);
	size_t batch = dg_apply_max_bytes(fs->vol) / 2 / per_page;
	uint8_t *sbuf = NULL, *obuf = NULL;
	struct dg_fmap_run *r = NULL;
	struct dg_range *rg = NULL;
	struct dg_ext *pg = NULL;	/* staged pages: fpage, vpn, len 1 */
	uint64_t np = 0;
	struct dg_txn *txn;
	int ret = 0;

	if (batch > STAGE_BATCH)
		batch = STAGE_BATCH;
	if (batch == 0)
		return -E2BIG;
	sbuf = aligned_alloc(DG_PAGE_SIZE, batch * DG_PAGE_SIZE);
	obuf = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	r = malloc(batch * LINES_PER_PAGE * sizeof(*r));
	rg = malloc(batch * LINES_PER_PAGE * sizeof(*rg));
	pg = malloc((sip->next ? sip->next : 1) * sizeof(*pg));
	if (!sbuf || !obuf || !r || !rg || !pg) {
		ret = -ENOMEM;
		goto out;
	}
	/* The stage's extents in file order; nobody changes them now. */
	for (uint32_t li = 0; li < sip->nleaf; li++)
		for (uint32_t ei = 0; ei < sip->leaf[li]->n; ei++)
			if (np < sip->next)
				pg[np++] = sip->leaf[li]->e[ei];
	for (uint64_t e = 0, j = 0; e < np && !ret;) {
		unsigned nb = 0, nr = 0;

		for (; e < np && nb < batch && !ret; nb++) {
			uint64_t fp = pg[e].fpage + j, vpn, run;
			uint8_t *sp = sbuf + (size_t)nb * DG_PAGE_SIZE;

			ret = dg_read(fs->vol, pg[e].vpn + j, 1, sp);
			/* The map pins the page, but the inode's extent
			 * map may change elsewhere (fallocate past it). */
			pthread_rwlock_rdlock(&ip->lock);
			dg_ext_lookup(ip, fp, &vpn, &run);
			pthread_rwlock_unlock(&ip->lock);
			if (!ret && !vpn)
				ret = -EIO;
			if (!ret)
				ret = dg_read(fs->vol, vpn, 1, obuf);
			if (!ret)
				nr += diff_page(fp, obuf, sp, r + nr);
			if (++j == pg[e].len)
				e++, j = 0;
		}
		if (!ret)
			ret = apply_chunk(fs, ip, m, r, nr, rg);
		if (!ret)
			stage_step("applied chunk");
	}
out:
	free(sbuf);
	free(obuf);
	free(r);
	free(rg);
	free(pg);
	if (ret)
		return ret;
	txn = dg_txn_new(fs->vol);
	if (!txn)
		return -ENOMEM;
	pthread_rwlock_rdlock(&fs->lock);
	pthread_rwlock_wrlock(&ip->lock);
	ip->d.stage_ino = 0;
	dg_inode_touch(ip, true, true);
	ret = dg_inode_store(fs, txn, ip);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	pthread_rwlock_unlock(&ip->lock);
	pthread_rwlock_unlock(&fs->lock);
	dg_txn_free(txn);
	if (!ret)
		stage_step("retired");
	return ret;
}

static void stage_free(struct dg_fstage *s)
{
	free(s->buf);
	free(s->fp);
	free(s);
}

void dg_fstage_abort(struct dg_fstage *s)
{
	if (!s)
		return;
	/* Unpublished: the file never saw it. Freeing the stage is the
	 * orphan path (at the next mount if this fails). */
	dg_fs_release(s->fs, s->sino);
	stage_free(s);
}

int dg_fstage_publish(struct dg_fstage *s)
{
	struct dg_fs *fs = s->fs;
	struct dg_inode *ip, *sip;
	struct dg_txn *txn;
	int ret;

	ret = stage_flush(s);
	if (ret) {
		dg_fstage_abort(s);
		return ret;
	}
	txn = dg_txn_new(fs->vol);
	if (!txn) {
		dg_fstage_abort(s);
		return -ENOMEM;
	}
	/* The commit point: one transaction names the stage in the file. */
	pthread_rwlock_rdlock(&fs->lock);
	ip = dg_inode_get(fs, s->ino);
	sip = dg_inode_get(fs, s->sino);
	ret = !ip || !sip ? -ENOENT : 0;
	if (!ret) {
		pthread_rwlock_wrlock(&ip->lock);
		ip->d.stage_ino = s->sino;
		ret = dg_inode_store(fs, txn, ip);
		if (!ret)
			ret = dg_fs_commit(fs, txn);
		if (ret)
			ip->d.stage_ino = 0;
		pthread_rwlock_unlock(&ip->lock);
	}
	pthread_rwlock_unlock(&fs->lock);
	dg_txn_free(txn);
	if (ret) {
		dg_fstage_abort(s);
		return ret;
	}
	stage_step("published");
	dg_log(DG_LOG_DEBUG, "libcommit staged sync ino=%" PRIu64 " stage=%"
	       PRIu64 " pages=%" PRIu64 " published", s->ino, s->sino,
	       s->staged);
	/* Both inodes stay alive: the map holds the file open, the stage
	 * holds itself (nopen) until released below. */
	ret = stage_finish(fs, ip, sip, s->m);
	if (ret) {
		/* Published: the stage must survive, for the next mount to
		 * finish (a failure here is a failing volume; the fs is
		 * broken or the media unreadable). Keep it referenced. */
		dg_log(DG_LOG_ERR, "libcommit staged sync ino=%" PRIu64
		       ": applying the published stage failed (%s); the "
		       "next mount finishes it", s->ino, strerror(-ret));
		stage_free(s);
		return ret;
	}
	dg_fstage_abort(s); /* now an ordinary orphan: free it */
	return 0;
}

void dg_fstage_recover(struct dg_fs *fs, const uint64_t *inos, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct dg_inode *ip = NULL, *sip = NULL;
		uint64_t ino = inos[i];
		int ret = dg_inode_find(fs, ino, false, &ip);

		if (ret == -ENOENT || (!ret && !ip->d.stage_ino))
			continue;
		if (ret) {
			dg_log(DG_LOG_ERR, "ino=%" PRIu64 ": unreadable (%s): "
			       "if it names a published sync, fsck.daxguard "
			       "finishes it", ino, strerror(-ret));
			continue;
		}
		if (dg_inode_find(fs, ip->d.stage_ino, false, &sip))
			sip = NULL;
		if (!sip || !S_ISREG(sip->d.mode) || sip->d.nlink ||
		    sip->d.parent != ino || sip->damaged || ip->damaged ||
		    !S_ISREG(ip->d.mode)) {
			dg_log(DG_LOG_ERR, "ino=%" PRIu64 ": its published "
			       "sync names stage ino=%" PRIu64 ", which is "
			       "not usable: the file may hold part of that "
			       "sync (fsck.daxguard)", ino, ip->d.stage_ino);
			ip->damaged = true;
			continue;
		}
		if (dg_vol_read_only(fs->vol)) {
			dg_log(DG_LOG_WARNING, "ino=%" PRIu64 ": a published "
			       "libcommit sync is unfinished; read-only, so "
			       "the file is served as damaged until a "
			       "writable mount finishes it", ino);
			ip->damaged = true;
			continue;
		}
		dg_log(DG_LOG_NOTICE, "ino=%" PRIu64 ": finishing the "
		       "libcommit sync published before a crash (stage ino=%"
		       PRIu64 ")", ino, ip->d.stage_ino);
		ret = stage_finish(fs, ip, sip, NULL);
		if (ret) {
			dg_log(DG_LOG_ERR, "ino=%" PRIu64 ": finishing the "
			       "published sync failed: %s", ino,
			       strerror(-ret));
			ip->damaged = true;
			sip->damaged = true; /* not freed: fsck's */
		}
		/* The stage is an ordinary orphan now: free_orphans(). */
	}
}
