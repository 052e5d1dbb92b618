// SPDX-License-Identifier: MIT
/* mapped.c -- libcommit maps: pinning, extents, line checksums, commits */
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
/* Plain XXH3: lines are 64 bytes, too short for the vector dispatch
 * of the volume's page checksums (volume/xxh.h) to matter. */
#include <xxhash.h>

#include "bsearch.h"
#include "fsys_i.h"

#define LINES_PER_PAGE (DG_PAGE_SIZE / DG_LINE_SIZE)

/* A vpn run of the map, sorted by vpn, for the page hook. */
struct vrun {
	uint64_t vpn, fpage, n;
};

struct dg_fmap {
	struct dg_fs *fs;
	uint64_t ino;
	bool rw;
	uint64_t fp0, np;	/* file pages [fp0, fp0 + np) */
	uint64_t *vpn;		/* np: vpn of each file page */
	struct dg_fmap_ext *ext;
	unsigned next;
	struct vrun *vr;	/* by vpn */
	unsigned nvr;
	/* Line checksums, np * LINES_PER_PAGE; NULL without redundancy.
	 * Written by the page hook under the page's row lock, read under
	 * it: media and checksums change together. */
	uint32_t *lcs;
	uint8_t *bad;		/* np: a verify found a bad line; by lock */
	uint64_t nbad;		/* pages set in bad[]; by lock */
	pthread_mutex_t lock;	/* one commit or verify at a time */
	bool committed;		/* by lock */
	struct dg_fmap *next_map; /* fs->maps, by fs->map_lock */
};

/* Line checksums are seeded with the line's volume address,
 * so a line read from the wrong place fails too. */
static uint32_t line_csum(const struct dg_vol *vol, uint64_t vpn, unsigned l,
			  const void *line)
{
	uint64_t seed = dg_vol_seed(vol) ^ (vpn * LINES_PER_PAGE + l);

	return (uint32_t)XXH3_64bits_withSeed(line, DG_LINE_SIZE, seed);
}

static void page_csums(const struct dg_vol *vol, uint64_t vpn,
		       const uint8_t *pg, uint32_t *out)
{
	for (unsigned l = 0; l < LINES_PER_PAGE; l++)
		out[l] = line_csum(vol, vpn, l, pg + l * DG_LINE_SIZE);
}

static bool vrun_ends_by(const void *set, size_t i, uint64_t vpn)
{
	const struct dg_fmap *m = set;

	return m->vr[i].vpn + m->vr[i].n <= vpn;
}

static int vrun_find(const struct dg_fmap *m, uint64_t vpn)
{
	unsigned lo = (unsigned)dg_partition_point(0, m->nvr, vrun_ends_by,
						   m, vpn);

	if (lo < m->nvr && m->vr[lo].vpn <= vpn)
		return (int)lo;
	return -1;
}

/* Volume page hook (dg_vol_set_page_hook, arg the fs): keep line
 * checksums current through every update of a mapped page of this fs.
 * Called under the row lock. */
static void fmap_hook(void *arg, uint64_t vpn, const void *oldpg,
		      const void *newpg, uint32_t lo, uint32_t hi)
{
	const uint8_t *o = oldpg, *nw = newpg;
	struct dg_fs *fs = arg;

	pthread_rwlock_rdlock(&fs->map_lock);
	for (struct dg_fmap *m = fs->maps; m; m = m->next_map) {
		int i;

		if (!m->lcs || (i = vrun_find(m, vpn)) < 0)
			continue;
		uint64_t fp = m->vr[i].fpage + (vpn - m->vr[i].vpn);
		uint32_t *cs = m->lcs + (fp - m->fp0) * LINES_PER_PAGE;

		/* Only the span can have changed (and only it of the old
		 * image is there). */
		for (unsigned l = lo / DG_LINE_SIZE; l < hi / DG_LINE_SIZE; l++)
			if (!o || memcmp(o + l * DG_LINE_SIZE,
					 nw + l * DG_LINE_SIZE, DG_LINE_SIZE))
				cs[l] = line_csum(fs->vol, vpn, l,
						  nw + l * DG_LINE_SIZE);
	}
	pthread_rwlock_unlock(&fs->map_lock);
}

static int vrun_cmp(const void *a, const void *b)
{
	const struct vrun *x = a, *y = b;

	return x->vpn < y->vpn ? -1 : x->vpn > y->vpn;
}

/* Build vpn[], the device extents and the vpn index from the inode's
 * extent map. A read-only map keeps the file's holes: vpn 0, extents
 * of DG_FMAP_HOLE, in no vpn run. Caller holds ip->lock. */
static int build_extents(struct dg_fmap *m, struct dg_inode *ip)
{
	struct dg_vol *vol = m->fs->vol;
	unsigned cap = 0;

	for (uint64_t p = 0; p < m->np;) {
		uint64_t vpn, run;

		dg_ext_lookup(ip, m->fp0 + p, &vpn, &run);
		if (!vpn && m->rw)
			return DG_CORRUPT(vol, "ino %" PRIu64 ": hole in a "
					  "mapped range", m->ino);
		if (!run)
			run = 1;
		for (uint64_t j = 0; j < run && p < m->np; j++, p++)
			m->vpn[p] = vpn ? vpn + j : 0;
	}
	for (uint64_t p = 0; p < m->np; p++) {
		struct dg_loc l = { 0 };
		uint64_t devoff = 0;
		uint32_t dev = DG_FMAP_HOLE;
		struct dg_fmap_ext *e = m->next ? &m->ext[m->next - 1] : NULL;

		if (m->vpn[p]) {
			l = dg_vpn_loc(vol, m->vpn[p]);
			devoff = dg_row_page(vol, l.row) << DG_PAGE_SHIFT;
			dev = l.dev;
		}
		if (e && e->dev == dev && dev == DG_FMAP_HOLE) {
			e->pages++;
		} else if (e && e->dev == dev &&
		    e->devoff + e->pages * DG_PAGE_SIZE == devoff) {
			e->pages++;
		} else {
			if (m->next == cap) {
				unsigned nc = cap ? cap * 2 : 16;
				void *x = realloc(m->ext, nc * sizeof(*m->ext));

				if (!x)
					return -ENOMEM;
				m->ext = x;
				cap = nc;
			}
			m->ext[m->next++] = (struct dg_fmap_ext){
				m->fp0 + p, 1, devoff, dev };
		}
	}
	cap = 0;
	for (uint64_t p = 0; p < m->np; p++) {
		struct vrun *r = m->nvr ? &m->vr[m->nvr - 1] : NULL;

		if (!m->vpn[p])
			continue;
		if (r && r->vpn + r->n == m->vpn[p] &&
		    r->fpage + r->n == m->fp0 + p) {
			r->n++;
			continue;
		}
		if (m->nvr == cap) {
			unsigned nc = cap ? cap * 2 : 16;
			void *x = realloc(m->vr, nc * sizeof(*m->vr));

			if (!x)
				return -ENOMEM;
			m->vr = x;
			cap = nc;
		}
		m->vr[m->nvr++] = (struct vrun){ m->vpn[p], m->fp0 + p, 1 };
	}
	qsort(m->vr, m->nvr, sizeof(*m->vr), vrun_cmp);
	return 0;
}

/* Line checksums from verified pages (dg_read repairs what it must). */
static int build_lcs(struct dg_fmap *m)
{
	enum { BATCH = 256 };
	struct dg_vol *vol = m->fs->vol;
	uint8_t *buf;
	int ret = 0;

	if (!dg_vol_redundant(vol))
		return 0;
	m->lcs = malloc(m->np * LINES_PER_PAGE * sizeof(*m->lcs));
	buf = aligned_alloc(DG_PAGE_SIZE, BATCH * DG_PAGE_SIZE);
	if (!m->lcs || !buf) {
		free(buf);
		return -ENOMEM;
	}
	for (uint64_t p = 0; p < m->np && !ret;) {
		uint64_t n = 1;

		if (!m->vpn[p]) { /* a hole: nothing on the media to check */
			p++;
			continue;
		}
		while (p + n < m->np && n < BATCH &&
		       m->vpn[p + n] == m->vpn[p] + n)
			n++;
		ret = dg_read(vol, m->vpn[p], n, buf);
		for (uint64_t j = 0; j < n && !ret; j++)
			page_csums(vol, m->vpn[p + j], buf + j * DG_PAGE_SIZE,
				   m->lcs + (p + j) * LINES_PER_PAGE);
		p += n;
	}
	free(buf);
	return ret;
}

/* Record (or clear) the map in the dinode, in its own transaction.
 * Caller holds fs->lock and ip->lock. */
static int record_map(struct dg_fs *fs, struct dg_inode *ip, bool on,
		      bool touch)
{
	struct dg_txn *txn;
	int ret;

	if (fs->broken || dg_vol_read_only(fs->vol))
		return -EROFS;
	txn = dg_txn_new(fs->vol);
	if (!txn)
		return -ENOMEM;
	if (on) {
		ip->d.map_flags = DG_DINODE_MAPPED_RW;
		ip->d.map_gen++;
	} else {
		ip->d.map_flags = 0;
	}
	if (touch)
		dg_inode_touch(ip, true, true);
	ret = dg_inode_store(fs, txn, ip);
	if (!ret)
		ret = dg_fs_commit(fs, txn);
	dg_txn_free(txn);
	return ret;
}

static void fmap_free(struct dg_fmap *m)
{
	free(m->vpn);
	free(m->ext);
	free(m->vr);
	free(m->lcs);
	free(m->bad);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* Drop the pin taken by dg_fmap_new(). */
static void unpin(struct dg_fs *fs, struct dg_fmap *m)
{
	struct dg_inode *ip;

	pthread_rwlock_wrlock(&fs->lock);
	ip = dg_inode_get(fs, m->ino);
	if (ip) {
		if (m->rw && ip->map_rw)
			ip->map_rw--;
		else if (!m->rw && ip->map_ro)
			ip->map_ro--;
	}
	pthread_rwlock_unlock(&fs->lock);
	dg_fs_release(fs, m->ino);
}

int dg_fmap_new(struct dg_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		unsigned flags, struct dg_fmap **mp)
{
	struct dg_fmap *m;
	struct dg_inode *ip;
	uint64_t end, size;
	int ret;

	if (off % DG_PAGE_SIZE || len == 0 || off + len < off ||
	    off + len > DG_MAX_FILE_SIZE || (flags & ~DG_FMAP_RW))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->fs = fs;
	m->ino = ino;
	m->rw = flags & DG_FMAP_RW;
	m->fp0 = off / DG_PAGE_SIZE;
	end = dg_div_up(off + len, DG_PAGE_SIZE);
	m->np = end - m->fp0;

	/* Pin: one writer, an open reference that keeps the space. */
	pthread_rwlock_wrlock(&fs->lock);
	if (dg_inode_find(fs, ino, false, &ip))
		ip = NULL;
	ret = !ip ? -ENOENT : !S_ISREG(ip->d.mode) ? -EINVAL
			    : ip->damaged ? -EIO
			    : m->rw && (fs->broken || dg_vol_read_only(fs->vol)) ? -EROFS
			    : m->rw && ip->map_rw ? -EBUSY : 0;
	size = ip ? ip->d.size : 0;
	if (!ret && !m->rw && end > dg_div_up(size, DG_PAGE_SIZE))
		ret = -ENXIO;
	if (!ret) {
		if (m->rw)
			ip->map_rw++;
		else
			ip->map_ro++;
		ip->nopen++;
	}
	pthread_rwlock_unlock(&fs->lock);
	if (ret) {
		fmap_free(m);
		return ret;
	}

	/* A read-write map gets a vpn for every page (holes become zeroed
	 * pages), and past the end grows the file. A read-only one never
	 * allocates: its holes read as zeros (DG_FMAP_HOLE), so a user who
	 * may only read a sparse file cannot fill the volume with it. */
	if (m->rw) {
		bool grow = m->rw && off + len > size;

		ret = dg_fs_fallocate(fs, ino, grow ? 0 : FALLOC_FL_KEEP_SIZE,
				      off, grow ? len : end * DG_PAGE_SIZE - off);
		if (ret)
			goto fail_unpin;
	}
	m->vpn = malloc(m->np * sizeof(*m->vpn));
	m->bad = calloc(m->np, 1);
	if (!m->vpn || !m->bad) {
		ret = -ENOMEM;
		goto fail_unpin;
	}
	pthread_rwlock_rdlock(&fs->lock);
	ip = dg_inode_get(fs, ino);
	/* Writers wait while the checksums are built: none can slip in
	 * between the pages read here and the hook's registration. */
	pthread_rwlock_wrlock(&ip->lock);
	ret = build_extents(m, ip);
	if (!ret)
		ret = build_lcs(m);
	if (!ret && m->rw)
		ret = record_map(fs, ip, true, false);
	if (!ret) {
		pthread_rwlock_wrlock(&fs->map_lock);
		m->next_map = fs->maps;
		fs->maps = m;
		/* The hook costs every update a lock: only once mapped. */
		if (!fs->map_hooked)
			dg_vol_set_page_hook(fs->vol, fmap_hook, fs);
		fs->map_hooked = true;
		pthread_rwlock_unlock(&fs->map_lock);
	}
	pthread_rwlock_unlock(&ip->lock);
	pthread_rwlock_unlock(&fs->lock);
	if (ret)
		goto fail_unpin;
	*mp = m;
	return 0;

fail_unpin:
	unpin(fs, m);
	fmap_free(m);
	return ret;
}

void dg_fmap_delete(struct dg_fmap *m)
{
	struct dg_fs *fs;

	if (!m)
		return;
	fs = m->fs;
	pthread_rwlock_wrlock(&fs->map_lock);
	for (struct dg_fmap **pp = &fs->maps; *pp; pp = &(*pp)->next_map) {
		if (*pp == m) {
			*pp = m->next_map;
			break;
		}
	}
	pthread_rwlock_unlock(&fs->map_lock);
	if (m->rw) {
		struct dg_inode *ip;

		pthread_rwlock_rdlock(&fs->lock);
		ip = dg_inode_get(fs, m->ino);
		if (ip) {
			pthread_rwlock_wrlock(&ip->lock);
			/* mtime moves once per map that committed, as the
			 * kernel updates it lazily for shared maps. */
			if (record_map(fs, ip, false, m->committed))
				dg_vol_log(m->fs->vol, DG_LOG_WARNING,
					   "libcommit unmap ino=%" PRIu64
					   ": map record left set", m->ino);
			pthread_rwlock_unlock(&ip->lock);
		}
		pthread_rwlock_unlock(&fs->lock);
	}
	unpin(fs, m);
	fmap_free(m);
}

void dg_fmap_extents(const struct dg_fmap *m, const struct dg_fmap_ext **ext,
		     unsigned *n)
{
	*ext = m->ext;
	*n = m->next;
}

uint64_t dg_fmap_ino(const struct dg_fmap *m)
{
	return m->ino;
}

/* Check lines [l0, l1) of map page p against the media. Returns the
 * first bad line or -1. Caller holds the row lock. */
static int check_lines(struct dg_fmap *m, uint64_t p, unsigned l0, unsigned l1)
{
	struct dg_vol *vol = m->fs->vol;
	const uint8_t *pg = dg_vpn_media(vol, m->vpn[p]);
	const uint32_t *cs = m->lcs + p * LINES_PER_PAGE;

	for (unsigned l = l0; l < l1; l++)
		if (line_csum(vol, m->vpn[p], l, pg + l * DG_LINE_SIZE) != cs[l])
			return (int)l;
	return -1;
}

/* A line of page p failed: repair the page through the read path, which
 * verifies it against its page checksum and rebuilds it from parity
 * (G1, docs/design.md "Guarantees"), then check again. The page checksum is the authority;
 * line checksums are a cache, rebuilt if they disagree with a page that
 * verifies. */
static int repair_page(struct dg_fmap *m, uint64_t p)
{
	struct dg_vol *vol = m->fs->vol;
	uint8_t *buf = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	int ret, bad;

	if (!buf)
		return -ENOMEM;
	ret = dg_read(vol, m->vpn[p], 1, buf);
	if (ret) {
		free(buf);
		return ret;
	}
	dg_vpn_hold(vol, m->vpn[p]);
	bad = check_lines(m, p, 0, LINES_PER_PAGE);
	if (bad >= 0) {
		/* dg_read verified and rewrote the page: it is right. */
		dg_vol_log(vol, DG_LOG_WARNING,
			   "libcommit ino=%" PRIu64 " page=%" PRIu64
			   " line checksums rebuilt from the verified page",
			   m->ino, m->fp0 + p);
		page_csums(vol, m->vpn[p], buf, m->lcs + p * LINES_PER_PAGE);
	}
	dg_vpn_release(vol, m->vpn[p]);
	m->nbad -= m->bad[p];
	m->bad[p] = 0;
	free(buf);
	return 0;
}

/* Check the lines a commit overwrites (and pages an earlier verify
 * found bad), repairing before anything is folded into parity. */
static int check_old_lines(struct dg_fmap *m, const struct dg_fmap_run *r,
			   unsigned n)
{
	struct dg_vol *vol = m->fs->vol;
	int ret;

	if (!m->lcs)
		return 0;
	/* A scattered commit of a large map must not walk all of it. */
	for (uint64_t p = 0; p < m->np && m->nbad; p++)
		if (m->bad[p] && (ret = repair_page(m, p)))
			return ret;
	for (unsigned i = 0; i < n; i++) {
		uint64_t p = r[i].off / DG_PAGE_SIZE - m->fp0;
		unsigned l0 = (unsigned)(r[i].off % DG_PAGE_SIZE) / DG_LINE_SIZE;
		int bad;

		dg_vpn_hold(vol, m->vpn[p]);
		bad = check_lines(m, p, l0, l0 + r[i].len / DG_LINE_SIZE);
		dg_vpn_release(vol, m->vpn[p]);
		if (bad < 0)
			continue;
		dg_vpn_fault(vol, m->vpn[p], DG_FAULT_DETECTED, DG_WHAT_DATA,
			     "line checksum mismatch before libcommit commit");
		ret = repair_page(m, p);
		if (ret)
			return ret;
	}
	return 0;
}

int dg_fmap_runs_check(const struct dg_fmap *m, const struct dg_fmap_run *runs,
		       unsigned n)
{
	if (!m->rw)
		return -EBADF;
	for (unsigned i = 0; i < n; i++) {
		uint64_t o = runs[i].off;

		if (o % DG_LINE_SIZE || runs[i].len == 0 ||
		    runs[i].len % DG_LINE_SIZE ||
		    o / DG_PAGE_SIZE < m->fp0 ||
		    o / DG_PAGE_SIZE >= m->fp0 + m->np ||
		    o % DG_PAGE_SIZE + runs[i].len > DG_PAGE_SIZE ||
		    !runs[i].data)
			return -EINVAL;
	}
	return 0;
}

struct dg_fs *dg_fmap_fs(const struct dg_fmap *m)
{
	return m->fs;
}

int dg_fmap_commit(struct dg_fmap *m, const struct dg_fmap_run *runs,
		   unsigned n)
{
	struct dg_fs *fs = m->fs;
	struct dg_range *r = NULL;
	uint8_t *tail = NULL;
	uint64_t size = 0, bytes = 0;
	int ret = 0;

	ret = dg_fmap_runs_check(m, runs, n);
	if (ret || n == 0)
		return ret;
	for (unsigned i = 0; i < n; i++)
		bytes += runs[i].len;
	if (bytes > dg_apply_max_bytes(fs->vol))
		return -E2BIG;
	r = malloc(n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&m->lock);
	pthread_rwlock_rdlock(&fs->lock);
	{
		struct dg_inode *ip = dg_inode_get(fs, m->ino);

		if (ip)
			size = ip->d.size;
	}
	pthread_rwlock_unlock(&fs->lock);
	{
		size_t k = 0;

		for (unsigned i = 0; i < n; i++)
			k += runs[i].off + runs[i].len > size;
		if (k && !(tail = malloc(k * DG_PAGE_SIZE))) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (unsigned i = 0, k = 0; i < n; i++) {
		uint64_t o = runs[i].off;

		r[i] = (struct dg_range){ m->vpn[o / DG_PAGE_SIZE - m->fp0],
					  (uint32_t)(o % DG_PAGE_SIZE),
					  runs[i].len, runs[i].data };
		if (o + runs[i].len > size) {
			/* Past the end of the file stays zero: a later
			 * extension must read zeros there (file.c). */
			uint8_t *t = tail + (size_t)k++ * DG_PAGE_SIZE;
			uint64_t keep = o < size ? size - o : 0;

			memset(t, 0, DG_PAGE_SIZE);
			memcpy(t, runs[i].data, keep);
			r[i].data = t;
		}
	}
	ret = check_old_lines(m, runs, n);
	if (!ret)
		ret = dg_apply(fs->vol, r, n);
	if (!ret)
		m->committed = true;
out:
	pthread_mutex_unlock(&m->lock);
	free(tail);
	free(r);
	return ret;
}

int dg_fmap_verify(struct dg_fmap *m, uint64_t off, uint64_t len,
		   uint64_t *bad_off)
{
	struct dg_vol *vol = m->fs->vol;
	uint64_t p0, p1, first = 0;
	int nbad = 0;

	if (!m->lcs)
		return -EOPNOTSUPP;
	if (off + len < off || off / DG_PAGE_SIZE < m->fp0)
		return -EINVAL;
	if (len == 0)
		return 0;
	p0 = off / DG_PAGE_SIZE - m->fp0;
	p1 = dg_div_up(off + len, DG_PAGE_SIZE) - m->fp0;
	if (p1 > m->np)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	for (uint64_t p = p0; p < p1; p++) {
		const uint8_t *pg;
		const uint32_t *cs = m->lcs + p * LINES_PER_PAGE;
		int here = 0;

		if (!m->vpn[p])
			continue; /* a hole of a read-only map: zeros */
		pg = dg_vpn_media(vol, m->vpn[p]);

		dg_vpn_hold(vol, m->vpn[p]);
		for (unsigned li = 0; li < LINES_PER_PAGE; li++) {
			if (line_csum(vol, m->vpn[p], li,
				      pg + li * DG_LINE_SIZE) == cs[li])
				continue;
			if (!nbad)
				first = (m->fp0 + p) * DG_PAGE_SIZE +
					li * DG_LINE_SIZE;
			nbad++;
			here++;
		}
		dg_vpn_release(vol, m->vpn[p]);
		if (here) {
			m->nbad += !m->bad[p];
			m->bad[p] = 1;
			dg_vpn_fault(vol, m->vpn[p], DG_FAULT_DETECTED, DG_WHAT_DATA,
				     "line checksum mismatch (libcommit verify)");
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (nbad)
		*bad_off = first;
	return nbad;
}

void dg_fmap_recover(struct dg_fs *fs, const uint64_t *inos, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t ino = inos[i];
		struct dg_inode *ip;

		if (dg_inode_find(fs, ino, false, &ip) || !ip->d.map_flags)
			continue;
		dg_vol_log(fs->vol, DG_LOG_NOTICE,
			   "libcommit map of ino=%" PRIu64 " gen=%" PRIu64
			   " was open at a crash: the file holds its last "
			   "completed sync", ino, ip->d.map_gen);
		if (record_map(fs, ip, false, true))
			return;
	}
}
