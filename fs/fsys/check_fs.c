// SPDX-License-Identifier: MIT
/* check_fs.c -- fsck of the filesystem structures: a tolerant walk of
 * inodes, extent maps and directories; counts, reachability and the
 * allocation bitmap against what the walk found; page classes */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fscheck.h"
#include "fsys_i.h"
#include "walk.h"

/* ---- filesystem walk ------------------------------------------------- */

const char *dg_pclass_name(enum dg_pclass c)
{
	static const char *const n[DG_PC_NR] = {
		"free", "root", "allocation", "inode", "extent", "xattr",
		"directory", "data", "symlink", "remap",
	};

	return c < DG_PC_NR ? n[c] : "?";
}

static bool wask(struct walk *w, struct dg_chk_event *ev)
{
	bool fix;

	w->problems++;
	ev->fixable = ev->fixable || ev->action[0];
	fix = !w->classify_only && ev->fixable && w->ask &&
	      !dg_vol_read_only(w->vol) && w->ask(w->arg, ev);
	return fix;
}

static void wreport(struct walk *w, struct dg_chk_event *ev, bool fixed)
{
	ev->fixed = fixed;
	if (fixed)
		w->fixes++;
	if (!w->classify_only)
		dg_chk_emit(w->fn, w->arg, ev);
}

void dg_walk_ino_loc(const struct walk *w, uint64_t ino, uint64_t *vpn,
		     uint32_t *off)
{
	uint64_t slot = ino % DG_INODES_PER_CHUNK;

	*vpn = w->chunk_vpn[ino / DG_INODES_PER_CHUNK] +
	       slot / DG_INODES_PER_PAGE;
	*off = (uint32_t)(slot % DG_INODES_PER_PAGE) * DG_INODE_SIZE;
}

/* One small update through the engine (G4: each repair is atomic). */
static int wwrite(struct walk *w, uint64_t vpn, uint32_t off, const void *p,
		  uint32_t len)
{
	struct dg_txn *t = dg_txn_new(w->vol);
	int ret;

	if (!t)
		return -ENOMEM;
	ret = dg_txn_write(t, vpn, off, p, len);
	if (!ret)
		ret = dg_txn_commit(t);
	dg_txn_free(t);
	return ret;
}

static int store_inode(struct walk *w, uint64_t ino)
{
	uint64_t vpn;
	uint32_t off;

	dg_walk_ino_loc(w, ino, &vpn, &off);
	return wwrite(w, vpn, off, &w->in[ino].d, sizeof(w->in[ino].d));
}

static void ev_ino(struct walk *w, struct dg_chk_event *ev, uint64_t ino)
{
	uint64_t vpn;
	uint32_t off;

	ev->ino = ino;
	if (ino / DG_INODES_PER_CHUNK < w->fsr.nchunks) {
		dg_walk_ino_loc(w, ino, &vpn, &off);
		ev->vpn = (int64_t)vpn;
		if (vpn < w->vpns) {
			struct dg_loc l = dg_vpn_loc(w->vol, vpn);

			ev->dev = (int)l.dev;
			ev->page = (int64_t)dg_row_page(w->vol, l.row);
		}
	}
}

static void ev_vpn(struct walk *w, struct dg_chk_event *ev, uint64_t vpn)
{
	ev->vpn = (int64_t)vpn;
	if (vpn < w->vpns) {
		struct dg_loc l = dg_vpn_loc(w->vol, vpn);

		ev->dev = (int)l.dev;
		ev->page = (int64_t)dg_row_page(w->vol, l.row);
	}
}

static void unreadable(struct walk *w, uint64_t vpn, uint64_t ino,
		       const char *what, int err)
{
	struct dg_chk_event ev;

	dg_chk_event_init(&ev, DG_CHK_UNREADABLE, what);
	ev_vpn(w, &ev, vpn);
	ev.ino = ino;
	snprintf(ev.detail, sizeof(ev.detail), "%s page unreadable: %s",
		 what, strerror(-err));
	snprintf(ev.action, sizeof(ev.action), "none: left as is (G6)");
	w->problems++;
	wreport(w, &ev, false);
}

/* Mark [vpn, vpn+n) used by ino; false if any page is used already.
 * A leaf the map cannot allocate sets w->nomem (the load fails). */
static bool mark(struct walk *w, uint64_t vpn, uint64_t n, uint8_t cls,
		 uint64_t ino)
{
	for (uint64_t i = vpn; i < vpn + n && i < w->vpns; i++)
		if (dg_walk_cls(w, i))
			return false;
	for (uint64_t i = vpn; i < vpn + n && i < w->vpns; i++)
		if (dg_vpnmap_set(w->map, i, cls, ino))
			w->nomem = true;
	return true;
}

/* The walk's claim on vpn v given up, if ino holds it: free again. */
static void unmark(struct walk *w, uint64_t v, uint64_t ino)
{
	if (dg_walk_owner(w, v) == ino)
		dg_vpnmap_set(w->map, v, DG_PC_FREE, ino); /* leaf exists */
}

/* The first vpn at or after v in a group some mark touched, else
 * w->vpns: the vpns before it are free. */
static uint64_t next_marked(const struct walk *w, uint64_t v)
{
	return dg_vpnmap_next(w->map, v);
}

static uint8_t data_class(uint32_t mode)
{
	return S_ISDIR(mode) ? DG_PC_DIR
	       : S_ISLNK(mode) ? DG_PC_SYMLINK : DG_PC_FILE;
}

static bool mode_ok(uint32_t mode)
{
	uint32_t t = mode & S_IFMT;

	return t == S_IFREG || t == S_IFDIR || t == S_IFLNK || t == S_IFIFO ||
	       t == S_IFSOCK || t == S_IFCHR || t == S_IFBLK;
}

/* An extent count a file can have (the reader's bound on its walk). */
static bool count_ok(const struct dg_dinode *d)
{
	return d->nextents <= (1u << 26);
}

/* The file type an entry's type says (DT_* == S_IFMT >> 12), 0 when it
 * says none. */
static uint32_t dtype_mode(uint8_t type)
{
	uint32_t m = (uint32_t)type << 12;

	return !(m & ~(uint32_t)S_IFMT) && mode_ok(m) ? m : 0;
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	default:
		return "a block device";
	}
}

/* Forget the chain pages of wi from index keep on: they become leaks
 * the walk frees (only those this inode claimed). */
static void drop_emap(struct walk *w, uint64_t ino, uint32_t keep)
{
	struct wino *wi = &w->in[ino];

	for (uint32_t e = keep; e < wi->nemap; e++)
		unmark(w, wi->emap[e], ino);
	if (wi->nemap > keep)
		wi->nemap = keep;
}

/* End ino's extent map before slot of leaf (format.h), keeping the
 * wi->next extents before it: shorten that leaf, or end the chain at
 * the leaf before. The caller stores the inode. */
static int cut_extents(struct walk *w, uint64_t ino, uint32_t leaf,
		       uint32_t slot)
{
	struct wino *wi = &w->in[ino];
	struct dg_demap hdr = { 0 };

	wi->d.nextents = wi->next;
	if (leaf == 0) {
		for (uint32_t i = slot; i < DG_INLINE_EXTENTS; i++)
			memset(&wi->d.inl[i], 0, sizeof(wi->d.inl[i]));
		wi->d.emap_vpn = 0;
		drop_emap(w, ino, 0);
		return 0;
	}
	if (slot) {			/* the leaf keeps slot extents */
		hdr.count = slot;
		drop_emap(w, ino, leaf);
		return wwrite(w, wi->emap[leaf - 1], 0, &hdr,
			      offsetof(struct dg_demap, e));
	}
	drop_emap(w, ino, leaf - 1);	/* the leaf goes */
	if (leaf == 1) {
		wi->d.emap_vpn = 0;
		return 0;
	}
	return wwrite(w, wi->emap[leaf - 2], 0, &hdr.next_vpn,
		      sizeof(hdr.next_vpn));
}

/* Load an inode's extents, marking its pages; truncates the map at the
 * first bad extent when told to. */
static void load_extents(struct walk *w, uint64_t ino)
{
	struct wino *wi = &w->in[ino];
	struct dg_emap_reader r;
	const struct dg_dextent *d;
	struct dg_chk_event ev;
	uint32_t cut_leaf, cut_slot;
	uint64_t kept;			/* file pages the kept extents cover */
	const char *why = NULL;
	int k;

	wi->next = 0;
	wi->ext = calloc(wi->d.nextents ? wi->d.nextents : 1,
			 sizeof(*wi->ext));
	if (!wi->ext)
		return;
	dg_emap_begin(&r, w->vol, &wi->d, (struct dg_demap *)w->page);
	while ((k = dg_emap_next(&r, &d)) > 0) {
		if (k == DG_EMAP_PAGE) {
			uint64_t *m;

			if (!mark(w, r.page_vpn, 1, DG_PC_EMAP, ino)) {
				why = "extent page used twice";
				break;
			}
			m = realloc(wi->emap, (wi->nemap + 1) * sizeof(*m));
			if (!m)
				return;
			wi->emap = m;
			wi->emap[wi->nemap++] = r.page_vpn;
			continue;
		}
		if (!mark(w, d->vpn, d->len, data_class(wi->d.mode), ino)) {
			why = "extent maps pages another structure uses";
			dg_chk_event_init(&ev, DG_CHK_EXTENT_DUP, "extent");
			cut_leaf = r.leaf;
			cut_slot = r.slot - 1;
			kept = d->fpage;
			goto bad;
		}
		wi->ext[wi->next++] = *d;
	}
	if (k < 0 && !r.why && k != -EIO) {
		unreadable(w, r.page_vpn, ino, "extent", k);
		return;
	}
	cut_leaf = r.leaf;
	cut_slot = r.slot;
	kept = r.prev_end;
	if (k == -EIO && !r.why) {
		/* No copy of an extent page verifies: the file ends where
		 * the extents that could be read end (what followed hung
		 * off that page). Left alone, the volume does not mount. */
		if (w->classify_only)
			return;
		dg_chk_event_init(&ev, DG_CHK_EXTENTS_LOST, "extent");
		why = "extent page unreadable";
		goto bad;
	}
	if (k < 0)
		why = r.why;
	if (!why || w->classify_only)
		return;
	dg_chk_event_init(&ev, DG_CHK_EXTENT_BAD, "extent");
bad:
	ev_ino(w, &ev, ino);
	snprintf(ev.detail, sizeof(ev.detail), "inode %llu extent %u: %s",
		 (unsigned long long)ino, wi->next, why);
	snprintf(ev.action, sizeof(ev.action),
		 "drop extents from %u on (data lost)", wi->next);
	if (wask(w, &ev)) {
		/* The size goes where the kept extents end, so the loss
		 * reads as a short file, not as zeros (G1: never silently
		 * wrong data). */
		if (wi->d.size > kept << DG_PAGE_SHIFT)
			wi->d.size = kept << DG_PAGE_SHIFT;
		wreport(w, &ev, cut_extents(w, ino, cut_leaf, cut_slot) == 0 &&
				store_inode(w, ino) == 0);
	} else {
		wreport(w, &ev, false);
	}
}

/* An empty root directory in place of one given up with its table
 * page: the names it held are lost, and the reconnect pass moves the
 * files they named to /lost+found. */
static int new_root(struct walk *w)
{
	struct wino *wi = &w->in[DG_ROOT_INO];
	struct timespec now;
	int64_t ns;

	clock_gettime(CLOCK_REALTIME, &now);
	ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	wi->d = (struct dg_dinode){
		.mode = S_IFDIR | 0755, .nlink = 2, .parent = DG_ROOT_INO,
		.atime_ns = ns, .mtime_ns = ns, .ctime_ns = ns, .btime_ns = ns,
	};
	wi->used = true;
	wi->lost = false;
	return store_inode(w, DG_ROOT_INO);
}

/*
 * An inode table page no copy of which verifies (more faults in its row
 * than parity covers): its inodes are lost. Left alone, the volume does
 * not mount. Repair clears the page so the rest of it does; the entry
 * pass then names and drops the entries of the lost inodes, and the
 * allocation pass frees their pages. When the page held the root, an
 * empty root takes its place (as e2fsck recreates a lost root).
 */
static void lose_inode_page(struct walk *w, uint32_t c, uint32_t p,
			    uint64_t vpn, int err)
{
	static const uint8_t zero[DG_PAGE_SIZE];
	uint64_t first = (uint64_t)c * DG_INODES_PER_CHUNK +
			 (uint64_t)p * DG_INODES_PER_PAGE;
	bool root = first <= DG_ROOT_INO;
	struct dg_chk_event ev;

	if (err != -EIO) {
		unreadable(w, vpn, 0, "inode", err);
		return;
	}
	dg_chk_event_init(&ev, DG_CHK_INODES_LOST, "inode");
	ev_vpn(w, &ev, vpn);
	/* With the root go the names of everything: the finding names
	 * "/" (its files reappear in /lost+found where their inodes
	 * survive). */
	if (root)
		ev.ino = DG_ROOT_INO;
	snprintf(ev.detail, sizeof(ev.detail),
		 "inode table page unreadable: inodes %llu-%llu are lost%s",
		 (unsigned long long)first,
		 (unsigned long long)(first + DG_INODES_PER_PAGE - 1),
		 root ? ", the root with them" : "");
	snprintf(ev.action, sizeof(ev.action),
		 root ? "clear the page (the files it held are lost) and make "
			"an empty root (the files under it go to /lost+found)"
		      : "clear the page (the files it held are lost)");
	for (uint32_t s = 0; s < DG_INODES_PER_PAGE; s++)
		w->in[first + s].lost = first + s != DG_ROOT_INO;
	if (wask(w, &ev)) {
		bool ok = dg_row_replace_page(w->vol, vpn, zero) == 0;

		wreport(w, &ev, ok && (!root || new_root(w) == 0));
	} else {
		wreport(w, &ev, false);
	}
}

/*
 * An xattr page no copy of which verifies (more faults in its row than
 * parity covers): the file's extended attributes are lost, its data is
 * not. Left alone, they read as EIO and every fsck reports the page for
 * ever. Repair drops them (the inode forgets the page); the allocation
 * pass frees the page and the next pass re-protects its row.
 */
static void lose_xattrs(struct walk *w, uint64_t ino)
{
	struct wino *wi = &w->in[ino];
	uint64_t vpn = wi->d.xattr_vpn;
	uint32_t n = dg_xattr_run_pages(&wi->d);
	struct dg_chk_event ev;

	dg_chk_event_init(&ev, DG_CHK_XATTRS_LOST, "xattr");
	ev_vpn(w, &ev, vpn);
	ev.ino = ino;
	snprintf(ev.detail, sizeof(ev.detail), "inode %llu: extended "
		 "attribute pages %llu-%llu unreadable",
		 (unsigned long long)ino, (unsigned long long)vpn,
		 (unsigned long long)(vpn + n - 1));
	snprintf(ev.action, sizeof(ev.action),
		 "drop the extended attributes (lost)");
	if (wask(w, &ev)) {
		wi->d.xattr_vpn = 0;
		wi->d.xattr_pages = 0;
		for (uint32_t p = 0; p < n; p++)
			unmark(w, vpn + p, ino);
		wreport(w, &ev, store_inode(w, ino) == 0);
	} else {
		wreport(w, &ev, false);
	}
}

/* Whether a page of the xattr run [vpn, vpn + n) cannot be read. */
static bool xattr_run_lost(struct walk *w, uint64_t vpn, uint32_t n)
{
	for (uint32_t p = 0; p < n; p++)
		if (dg_read(w->vol, vpn + p, 1, w->page) == -EIO)
			return true;
	return false;
}

/*
 * Where the inode table's chunks are: the root record's list and, past
 * it, the chunk map (format.h "Inode table"), whose pages are inode
 * table metadata. A map page no copy of which verifies, or that names
 * a page out of range, loses every chunk it names: nothing says where
 * those inodes are, so the table is not walked (as a bad root record).
 */
static int load_chunk_map(struct walk *w)
{
	uint64_t map[DG_ICMAP_PER_PAGE + 1], bad = 0;
	struct dg_chk_event ev;
	uint32_t nmap = 0;
	int r;

	w->chunk_vpn = calloc(w->fsr.nchunks, sizeof(*w->chunk_vpn));
	if (!w->chunk_vpn)
		return -ENOMEM;
	r = dg_itable_read_map(w->vol, &w->fsr, w->chunk_vpn, map, &nmap,
			       &bad);
	for (uint32_t i = 0; i < nmap; i++)
		if (!mark(w, map[i], 1, DG_PC_ITABLE, 0) && !r) {
			bad = map[i];
			r = -EUCLEAN;
		}
	if (r == -ENOMEM)
		return r;
	if (r) {
		dg_chk_event_init(&ev, DG_CHK_FS_ROOT, "root");
		ev_vpn(w, &ev, bad < w->vpns ? bad : 0);
		snprintf(ev.detail, sizeof(ev.detail),
			 "inode table chunk map page at vpn %llu is %s",
			 (unsigned long long)bad,
			 r == -EIO ? "unreadable"
				   : "out of range, overlaps or names a page "
				     "out of range");
		snprintf(ev.action, sizeof(ev.action), "none");
		w->problems++;
		wreport(w, &ev, false);
		return -EUCLEAN;
	}
	return 0;
}

/* An inode's extents and extended attribute pages, marked as its own. */
static void load_pages(struct walk *w, uint64_t ino)
{
	struct wino *wi = &w->in[ino];
	uint32_t xn;

	load_extents(w, ino);
	xn = dg_xattr_run_pages(&wi->d);
	if (xn && (xn == 1 ? wi->d.xattr_pages != 0
			   : xn > (dg_vol_has_incompat(w->vol,
				     DG_FEAT_INCOMPAT_XATTR_64K)
					   ? DG_XATTR_64K_PAGES
					   : DG_XATTR_MAX_PAGES) ||
			     !dg_vol_has_incompat(
				     w->vol, DG_FEAT_INCOMPAT_XATTR_RUN)))
		xn = 0;	/* reported below as out of range */
	if (wi->d.xattr_vpn &&
	    (!xn || wi->d.xattr_vpn + xn > w->vpns ||
	     !mark(w, wi->d.xattr_vpn, xn, DG_PC_XATTR, ino))) {
		struct dg_chk_event ev;

		dg_chk_event_init(&ev, DG_CHK_EXTENT_BAD, "inode");
		ev_ino(w, &ev, ino);
		snprintf(ev.detail, sizeof(ev.detail),
			 "inode %llu: xattr pages at %llu out of range "
			 "or used twice", (unsigned long long)ino,
			 (unsigned long long)wi->d.xattr_vpn);
		snprintf(ev.action, sizeof(ev.action),
			 "drop the extended attributes");
		if (wask(w, &ev)) {
			wi->d.xattr_vpn = 0;
			wi->d.xattr_pages = 0;
			wreport(w, &ev, store_inode(w, ino) == 0);
		} else {
			wreport(w, &ev, false);
		}
	} else if (wi->d.xattr_vpn && !w->classify_only &&
		   xattr_run_lost(w, wi->d.xattr_vpn, xn)) {
		lose_xattrs(w, ino);
	}
}

/*
 * A remap page found bad (why): the inode forgets it, and the pages it
 * and its records hold that this walk marked as the inode's (marked[0,
 * n)) become leaks the bitmap pass frees. The file then reads its home
 * pages, which stayed mapped and allocated: the bytes before the
 * overwrites the records redirected, which are lost (format.h "Remap
 * page"). Declined, the marks stay: the inode still names those pages.
 */
static void drop_remap(struct walk *w, uint64_t ino, const uint64_t *marked,
		       uint32_t n, const char *why)
{
	struct wino *wi = &w->in[ino];
	struct dg_chk_event ev;

	dg_chk_event_init(&ev, DG_CHK_REMAP_BAD, "remap");
	ev_vpn(w, &ev, wi->d.remap_vpn);
	ev.ino = ino;
	snprintf(ev.detail, sizeof(ev.detail), "inode %llu: %s",
		 (unsigned long long)ino, why);
	/* The file reads its home pages again: the detail's room goes to
	 * the fault, the action's says what is lost. */
	snprintf(ev.action, sizeof(ev.action),
		 "drop it (the overwrites it redirected are lost)");
	if (wask(w, &ev)) {
		for (uint32_t i = 0; i < n; i++)
			unmark(w, marked[i], ino);
		wi->d.remap_vpn = 0;
		wreport(w, &ev, store_inode(w, ino) == 0);
	} else {
		wreport(w, &ev, false);
	}
}

/* Where a remap page may be at all, else why not (dg_remap_load() says
 * the same of it). */
static const char *remap_allowed(const struct walk *w, const struct wino *wi)
{
	if (!dg_vol_has_incompat(w->vol, DG_FEAT_INCOMPAT_REMAP))
		return "remap page on a volume without them";
	if (!S_ISREG(wi->d.mode))
		return "remap page of a file not regular";
	if (wi->d.remap_vpn >= w->vpns)
		return "remap page out of range";
	return NULL;
}

/*
 * ino's remap page (format.h "Remap page"), after every inode's extents
 * are marked: the page itself as metadata, each record's page as the
 * file's data, so that a page used twice and the bitmap are judged as
 * for the extents' pages. Marked after them, a remap page or record
 * that collides is the one found bad: it holds only the overwrites
 * since the last fold, the extents the file. Any fault drops the page
 * whole, not the one bad record: simplest, and a record is trusted no
 * more than the page that holds it. dinode.blocks counts none of these
 * pages, so check_counts() has nothing to add for them.
 */
static void load_remap(struct walk *w, uint64_t ino)
{
	struct wino *wi = &w->in[ino];
	const struct dg_dremap *pg = (const struct dg_dremap *)w->page;
	uint64_t marked[DG_REMAP_PER_PAGE + 1];
	const char *why = remap_allowed(w, wi);
	char buf[96];
	uint32_t n = 0, nr = 0;
	int r;

	if (!wi->d.remap_vpn || !wi->used || wi->bad)
		return;
	if (!why && !mark(w, wi->d.remap_vpn, 1, DG_PC_REMAP, ino))
		why = "remap page used twice";
	if (why)
		goto bad;
	marked[n++] = wi->d.remap_vpn;
	r = dg_read(w->vol, wi->d.remap_vpn, 1, w->page);
	if (r && r != -EIO) {
		/* The records are not known: left as they are (G6). */
		unreadable(w, wi->d.remap_vpn, ino, "remap", r);
		return;
	}
	if (r) {
		why = "remap page unreadable";
		goto bad;
	}
	if (dg_dremap_check(pg, ino, w->vol, &nr, &why))
		goto bad;
	for (uint32_t i = 0; i < nr; i++) {
		const struct dg_dremap_rec *rec = &pg->rec[i];
		uint64_t home;

		dg_walk_ext_lookup(wi, rec->fpage, &home);
		if (!home) {
			snprintf(buf, sizeof(buf), "remap record for file page "
				 "%llu, which no extent maps",
				 (unsigned long long)rec->fpage);
			why = buf;
			goto bad;
		}
		if (!mark(w, rec->vpn, 1, DG_PC_FILE, ino)) {
			snprintf(buf, sizeof(buf), "remap record for file page "
				 "%llu names vpn %llu, used already",
				 (unsigned long long)rec->fpage,
				 (unsigned long long)rec->vpn);
			why = buf;
			goto bad;
		}
		marked[n++] = rec->vpn;
	}
	return;
bad:
	if (w->classify_only)
		return;	/* what was marked stays the inode's */
	drop_remap(w, ino, marked, n, why);
}

static void load_itable(struct walk *w)
{
	for (uint32_t c = 0; c < w->fsr.nchunks; c++) {
		uint64_t v0 = w->chunk_vpn[c];
		struct dg_chk_event ev;

		if (v0 < 1 || v0 + DG_ITABLE_CHUNK_PAGES > w->vpns ||
		    !mark(w, v0, DG_ITABLE_CHUNK_PAGES, DG_PC_ITABLE, 0)) {
			dg_chk_event_init(&ev, DG_CHK_ITABLE, "inode");
			ev.vpn = (int64_t)v0;
			snprintf(ev.detail, sizeof(ev.detail),
				 "inode table chunk %u at vpn %llu is out of "
				 "range or overlaps", c,
				 (unsigned long long)v0);
			snprintf(ev.action, sizeof(ev.action), "none");
			ev.fixable = false;
			w->problems++;
			wreport(w, &ev, false);
			continue;
		}
		for (uint32_t p = 0; p < DG_ITABLE_CHUNK_PAGES; p++) {
			int r = dg_read(w->vol, v0 + p, 1, w->page);

			if (r) {
				lose_inode_page(w, c, p, v0 + p, r);
				continue;
			}
			for (uint32_t s = 0; s < DG_INODES_PER_PAGE; s++) {
				uint64_t ino = (uint64_t)c * DG_INODES_PER_CHUNK +
					       p * DG_INODES_PER_PAGE + s;
				struct wino *wi = &w->in[ino];

				memcpy(&wi->d, w->page + s * DG_INODE_SIZE,
				       sizeof(wi->d));
				if (!wi->d.mode || ino == 0)
					continue;
				/* Judged once the entries are read, which
				 * may say its type (settle_bad_inodes()). */
				if (!mode_ok(wi->d.mode) || !count_ok(&wi->d)) {
					wi->bad = true;
					continue;
				}
				wi->used = true;
			}
		}
	}
	for (uint64_t ino = 1; ino < w->icap; ino++)
		if (w->in[ino].used)
			load_pages(w, ino);
	for (uint64_t ino = 1; ino < w->icap; ino++)
		load_remap(w, ino);
}

void dg_walk_ext_lookup(const struct wino *wi, uint64_t fpage, uint64_t *vpn)
{
	*vpn = 0;
	for (uint32_t i = 0; i < wi->next; i++)
		if (fpage >= wi->ext[i].fpage &&
		    fpage < wi->ext[i].fpage + wi->ext[i].len) {
			*vpn = wi->ext[i].vpn + fpage - wi->ext[i].fpage;
			return;
		}
}

static int add_ent(struct walk *w, uint64_t dir, uint64_t ino, uint64_t pg,
		   uint32_t off, uint8_t type, const char *name, size_t len)
{
	struct went *e;

	if (w->nents == w->capents) {
		size_t cap = w->capents ? w->capents * 2 : 256;

		e = realloc(w->ents, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		w->ents = e;
		w->capents = cap;
	}
	e = &w->ents[w->nents];
	e->name = strndup(name, len);
	if (!e->name)
		return -ENOMEM;
	e->dir = dir;
	e->ino = ino;
	e->fpage = pg;
	e->off = off;
	e->type = type;
	e->dead = false;
	w->nents++;
	return 0;
}

/* Parse one dirent page; a malformed record ends the page (repair:
 * an end marker is written there, later entries are lost and their
 * inodes go to lost+found). */
static void parse_dir_page(struct walk *w, uint64_t dir, uint64_t pg,
			   uint64_t vpn, const uint8_t *p)
{
	const struct dg_ddirent *r;
	uint32_t off = 0;
	int err;

	for (;;) {
		struct dg_chk_event ev;

		r = dg_dirent_at(p, off, &err);
		if (!r && !err)
			break;
		if (!r) {
			struct dg_ddirent end = { 0 };

			if (w->classify_only)
				return;
			dg_chk_event_init(&ev, DG_CHK_DIRENT_BAD, "directory");
			ev_vpn(w, &ev, vpn);
			ev.ino = dir;
			snprintf(ev.detail, sizeof(ev.detail),
				 "directory %llu page %llu offset %u: bad "
				 "record", (unsigned long long)dir,
				 (unsigned long long)pg, off);
			snprintf(ev.action, sizeof(ev.action),
				 "end the page there");
			if (wask(w, &ev))
				wreport(w, &ev, wwrite(w, vpn, off, &end,
						       sizeof(end)) == 0);
			else
				wreport(w, &ev, false);
			return;
		}
		if (r->ino)
			add_ent(w, dir, r->ino, pg, off, r->type,
				(const char *)(r + 1), r->namelen);
		off += r->reclen;
	}
}

/*
 * A directory page no copy of which verifies (more faults in its row
 * than parity covers): the names it held are lost. Left alone, the
 * volume does not mount. Repair writes an empty page in its place; the
 * inodes those names pointed to are then unreachable, and the
 * reconnect pass moves them, data intact, to /lost+found.
 */
static void lose_dir_page(struct walk *w, uint64_t dir, uint64_t vpn,
			  int err)
{
	static const uint8_t empty[DG_PAGE_SIZE];	/* no records */
	struct dg_chk_event ev;

	if (err != -EIO) {
		unreadable(w, vpn, dir, "directory", err);
		return;
	}
	dg_chk_event_init(&ev, DG_CHK_DIR_LOST, "directory");
	ev_vpn(w, &ev, vpn);
	ev.ino = dir;
	snprintf(ev.detail, sizeof(ev.detail),
		 "directory %llu: page unreadable, the names on it are lost",
		 (unsigned long long)dir);
	snprintf(ev.action, sizeof(ev.action),
		 "write an empty page (its files go to /lost+found)");
	if (wask(w, &ev))
		wreport(w, &ev, dg_row_replace_page(w->vol, vpn, empty) == 0);
	else
		wreport(w, &ev, false);
}

/* The entries of directory ino. */
static void load_dir(struct walk *w, uint64_t ino)
{
	struct wino *wi = &w->in[ino];

	/* By extent, not by size: a damaged size can be huge. */
	for (uint32_t e = 0; e < wi->next; e++)
	for (uint64_t i = 0; i < wi->ext[e].len; i++) {
		uint64_t pg = wi->ext[e].fpage + i;
		uint64_t vpn = wi->ext[e].vpn + i;
		int r;

		if (pg >= wi->d.size / DG_PAGE_SIZE)
			break;
		r = dg_read(w->vol, vpn, 1, w->page);
		if (r) {
			lose_dir_page(w, ino, vpn, r);
			continue;
		}
		parse_dir_page(w, ino, pg, vpn, w->page);
	}
}

static void load_dirs(struct walk *w)
{
	for (uint64_t ino = 1; ino < w->icap; ino++)
		if (w->in[ino].used && S_ISDIR(w->in[ino].d.mode))
			load_dir(w, ino);
}

/* What the entries naming an invalid inode say of it: the one valid
 * type they all agree on (0: none names it; NO_TYPE: one gives no valid
 * type, or they disagree), and the first of them. */
#define NO_TYPE UINT32_MAX
struct said {
	uint32_t type;
	const struct went *first;
};

/* For every invalid inode, in one pass over the entries (a damaged
 * table can hold thousands of them, a large volume millions of
 * entries); NULL when out of memory. */
static struct said *entries_say(const struct walk *w)
{
	struct said *s = calloc(w->icap, sizeof(*s));

	for (size_t i = 0; s && i < w->nents; i++) {
		const struct went *e = &w->ents[i];
		struct said *x;
		uint32_t m;

		if (e->dead || e->ino >= w->icap || !w->in[e->ino].bad)
			continue;
		x = &s[e->ino];
		if (!x->first)
			x->first = e;
		m = dtype_mode(e->type);
		x->type = !m || (x->type && x->type != m) ? NO_TYPE : m;
	}
	return s;
}

/* Whether type t fits what the inode holds: a device, FIFO or socket
 * has no pages, so an entry saying one of those of an inode that has
 * some is not believed. */
static bool type_fits(const struct dg_dinode *d, uint32_t t)
{
	return S_ISREG(t) || S_ISDIR(t) || S_ISLNK(t) || !d->nextents;
}

/*
 * An inode whose only fault is a mode that names no file type: an entry
 * records the type the file was made with, so when the entries naming
 * it agree on one, that type goes back into the mode and the file keeps
 * its data (clearing it lost a whole file over four bits). Repaired or
 * not, the rest of the walk takes it as that type, so its pages stay
 * its own instead of being freed as leaks under a declined repair.
 * Returns whether it was given a type.
 */
static bool retype_inode(struct walk *w, uint64_t ino, const struct said *s)
{
	struct wino *wi = &w->in[ino];
	const struct went *e = s->first;
	uint32_t t = s->type;
	struct dg_chk_event ev;
	bool fix;

	if (!t || t == NO_TYPE || !count_ok(&wi->d) || !type_fits(&wi->d, t))
		return false;
	dg_chk_event_init(&ev, DG_CHK_INODE_BAD, "inode");
	ev_ino(w, &ev, ino);
	snprintf(ev.detail, sizeof(ev.detail),
		 "inode %llu: mode %#o has no file type; its entry '%s' says "
		 "%s", (unsigned long long)ino, wi->d.mode, e->name,
		 type_name(t));
	snprintf(ev.action, sizeof(ev.action), "set the type its entry says");
	fix = wask(w, &ev);
	wi->d.mode = (wi->d.mode & ~(uint32_t)S_IFMT) | t;
	wi->bad = false;
	wi->used = true;
	wreport(w, &ev, fix && store_inode(w, ino) == 0);
	load_pages(w, ino);
	load_remap(w, ino);
	if (S_ISDIR(t))
		load_dir(w, ino);
	return true;
}

/*
 * An invalid inode nothing can mend (no entry says its type, or its
 * extent count is out of range) is cleared, and its file with it: the
 * entries naming it are then dangling and its pages leaks, which the
 * checks after repair. Data given up (PR_LOSS: exit 4). No path reaches
 * it afterwards, so the finding names the entry that named it.
 */
static void clear_inode(struct walk *w, uint64_t ino, const struct said *s)
{
	struct wino *wi = &w->in[ino];
	const struct went *e = s->first;
	struct dg_chk_event ev;

	dg_chk_event_init(&ev, DG_CHK_INODE_UNUSABLE, "inode");
	ev_ino(w, &ev, ino);
	ev.cleared = true;
	if (e) {
		ev.dir = e->dir;
		snprintf(ev.name, sizeof(ev.name), "%s", e->name);
	}
	if (!count_ok(&wi->d))
		snprintf(ev.detail, sizeof(ev.detail),
			 "inode %llu: extent count %u out of range",
			 (unsigned long long)ino, wi->d.nextents);
	else
		snprintf(ev.detail, sizeof(ev.detail),
			 "inode %llu: mode %#o has no file type, and %s",
			 (unsigned long long)ino, wi->d.mode,
			 !e ? "no entry names it"
			 : s->type == NO_TYPE
				 ? "its entries say none or disagree"
				 : "its entry's type does not fit its pages");
	snprintf(ev.action, sizeof(ev.action),
		 "clear the inode (its file is lost)");
	if (wask(w, &ev)) {
		memset(&wi->d, 0, sizeof(wi->d));
		wi->bad = false;
		wreport(w, &ev, store_inode(w, ino) == 0);
	} else {
		wreport(w, &ev, false);
	}
}

/*
 * The inodes load_itable() found invalid, judged once the entries are
 * read: a directory given its type back holds entries too, which may
 * give another its type, so again until none is; the rest are cleared.
 */
static void settle_bad_inodes(struct walk *w)
{
	struct said *s = NULL;
	bool more = true, any = false;

	for (uint64_t ino = 1; ino < w->icap && !any; ino++)
		any = w->in[ino].bad;
	while (any && more) {
		more = false;
		free(s);
		s = entries_say(w);
		if (!s) {
			/* Nothing cleared for want of memory. */
			w->nomem = true;
			return;
		}
		for (uint64_t ino = 1; ino < w->icap; ino++)
			if (w->in[ino].bad && retype_inode(w, ino, &s[ino]) &&
			    S_ISDIR(w->in[ino].d.mode))
				more = true;
	}
	for (uint64_t ino = 1; ino < w->icap && any; ino++)
		if (w->in[ino].bad)
			clear_inode(w, ino, &s[ino]);
	free(s);
}

/* Mark the record deleted: only its ino changes. Its reclen stays as
 * found (a reused record can be longer than its name needs), so the
 * records after it still parse. */
static int kill_entry(struct walk *w, struct went *e)
{
	struct wino *dp = &w->in[e->dir];
	uint64_t vpn, zero = 0;

	dg_walk_ext_lookup(dp, e->fpage, &vpn);
	if (!vpn)
		return -EIO;
	e->dead = true;
	return wwrite(w, vpn, e->off + (uint32_t)offsetof(struct dg_ddirent,
							  ino),
		      &zero, sizeof(zero));
}

/* Report a bad entry and, if the repair is allowed, remove it; either
 * way the rest of the walk treats it as gone. */
static void drop_entry(struct walk *w, struct dg_chk_event *ev,
		       struct went *e)
{
	if (wask(w, ev))
		wreport(w, ev, kill_entry(w, e) == 0);
	else
		wreport(w, ev, false);
	e->dead = true;
}

void dg_walk_check_entries(struct walk *w)
{
	for (size_t i = 0; i < w->nents; i++) {
		struct went *e = &w->ents[i];
		struct wino *t = e->ino < w->icap ? &w->in[e->ino] : NULL;
		struct dg_chk_event ev;

		if (t && t->lost) {
			dg_chk_event_init(&ev, DG_CHK_FILE_LOST, "directory");
			ev_ino(w, &ev, e->dir);
			snprintf(ev.name, sizeof(ev.name), "%s", e->name);
			snprintf(ev.detail, sizeof(ev.detail),
				 "entry '%s' names inode %llu, lost with its "
				 "inode table page", e->name,
				 (unsigned long long)e->ino);
			snprintf(ev.action, sizeof(ev.action),
				 "remove the entry");
			drop_entry(w, &ev, e);
			continue;
		}
		if (!t || !t->used || e->ino == DG_ROOT_INO) {
			dg_chk_event_init(&ev, DG_CHK_DIRENT_DANGLING,
					  "directory");
			ev_ino(w, &ev, e->dir);
			snprintf(ev.detail, sizeof(ev.detail),
				 "entry '%s' in directory %llu names %s inode "
				 "%llu", e->name, (unsigned long long)e->dir,
				 e->ino == DG_ROOT_INO ? "the root" : "free",
				 (unsigned long long)e->ino);
			snprintf(ev.action, sizeof(ev.action),
				 "remove the entry");
			drop_entry(w, &ev, e);
			continue;
		}
		if (S_ISDIR(t->d.mode) && t->refs) {
			dg_chk_event_init(&ev, DG_CHK_DIR_MULTI, "directory");
			ev_ino(w, &ev, e->dir);
			snprintf(ev.detail, sizeof(ev.detail),
				 "directory %llu has a second name '%s'",
				 (unsigned long long)e->ino, e->name);
			snprintf(ev.action, sizeof(ev.action),
				 "remove the entry");
			drop_entry(w, &ev, e);
			continue;
		}
		if (e->type != dg_mode_dtype(t->d.mode)) {
			dg_chk_event_init(&ev, DG_CHK_DIRENT_TYPE, "directory");
			ev_ino(w, &ev, e->dir);
			snprintf(ev.detail, sizeof(ev.detail),
				 "entry '%s' has type %u, inode %llu is type "
				 "%u", e->name, e->type,
				 (unsigned long long)e->ino,
				 dg_mode_dtype(t->d.mode));
			snprintf(ev.action, sizeof(ev.action), "fix the type");
			if (wask(w, &ev)) {
				struct wino *dp = &w->in[e->dir];
				uint8_t ty = dg_mode_dtype(t->d.mode);
				uint64_t vpn;

				dg_walk_ext_lookup(dp, e->fpage, &vpn);
				e->type = ty;
				wreport(w, &ev, vpn && wwrite(w, vpn, e->off +
					offsetof(struct dg_ddirent, type), &ty,
					1) == 0);
			} else {
				wreport(w, &ev, false);
			}
		}
		if (!t->refs)
			t->first_parent = e->dir;
		t->refs++;
		if (S_ISDIR(t->d.mode))
			w->in[e->dir].subdirs++;
	}
}

void dg_walk_reach(struct walk *w)
{
	uint64_t *q = calloc(w->icap + 1, sizeof(*q));
	size_t h = 0, t = 0;

	if (!q)
		return;
	for (uint64_t i = 0; i < w->icap; i++)
		w->in[i].reached = false;
	w->in[DG_ROOT_INO].reached = true;
	q[t++] = DG_ROOT_INO;
	/* Entries are grouped by directory in load order; scan all. */
	while (h < t) {
		uint64_t d = q[h++];

		for (size_t i = 0; i < w->nents; i++) {
			struct went *e = &w->ents[i];

			if (e->dead || e->dir != d || w->in[e->ino].reached)
				continue;
			w->in[e->ino].reached = true;
			if (S_ISDIR(w->in[e->ino].d.mode))
				q[t++] = e->ino;
		}
	}
	free(q);
}

static void check_counts(struct walk *w)
{
	for (uint64_t ino = 1; ino < w->icap; ino++) {
		struct wino *wi = &w->in[ino];
		struct dg_chk_event ev;
		uint32_t want;
		/* Not its remap page nor its records' pages (format.h
		 * "Remap page"): load_remap() puts none in ext or emap. */
		uint64_t blocks = wi->nemap + dg_xattr_run_pages(&wi->d);

		if (!wi->used)
			continue;
		for (uint32_t i = 0; i < wi->next; i++)
			blocks += wi->ext[i].len;
		if (S_ISDIR(wi->d.mode)) {
			uint64_t par = ino == DG_ROOT_INO ? DG_ROOT_INO
							  : wi->first_parent;

			want = 2 + wi->subdirs;
			if (par && wi->d.parent != par) {
				dg_chk_event_init(&ev, DG_CHK_DIR_PARENT,
						  "inode");
				ev_ino(w, &ev, ino);
				snprintf(ev.detail, sizeof(ev.detail),
					 "directory %llu: parent %llu, should "
					 "be %llu", (unsigned long long)ino,
					 (unsigned long long)wi->d.parent,
					 (unsigned long long)par);
				snprintf(ev.action, sizeof(ev.action),
					 "set the parent");
				if (wask(w, &ev)) {
					wi->d.parent = par;
					wreport(w, &ev,
						store_inode(w, ino) == 0);
				} else {
					wreport(w, &ev, false);
				}
			}
		} else {
			want = wi->refs;
		}
		if (!wi->reached)
			continue; /* orphans: lost+found sets the count */
		if (wi->d.nlink != want) {
			dg_chk_event_init(&ev, DG_CHK_NLINK, "inode");
			ev_ino(w, &ev, ino);
			snprintf(ev.detail, sizeof(ev.detail),
				 "inode %llu: link count %u, should be %u",
				 (unsigned long long)ino, wi->d.nlink, want);
			snprintf(ev.action, sizeof(ev.action),
				 "set the link count");
			if (wask(w, &ev)) {
				wi->d.nlink = want;
				wreport(w, &ev, store_inode(w, ino) == 0);
			} else {
				wreport(w, &ev, false);
			}
		}
		if (wi->d.blocks != blocks) {
			dg_chk_event_init(&ev, DG_CHK_BLOCKS, "inode");
			ev_ino(w, &ev, ino);
			snprintf(ev.detail, sizeof(ev.detail),
				 "inode %llu: %llu blocks, should be %llu",
				 (unsigned long long)ino,
				 (unsigned long long)wi->d.blocks,
				 (unsigned long long)blocks);
			snprintf(ev.action, sizeof(ev.action),
				 "set the block count");
			if (wask(w, &ev)) {
				wi->d.blocks = blocks;
				wreport(w, &ev, store_inode(w, ino) == 0);
			} else {
				wreport(w, &ev, false);
			}
		}
	}
}

/*
 * A published libcommit sync (dinode.stage_ino, stage.c) must name its
 * stage: an unlinked regular file whose parent field is the file. Its
 * pages are an orphan's, counted like any inode's; the next mount
 * finishes it, so a valid one is no fault. One that names anything else
 * cannot be finished: the record is cleared, and the file may hold part
 * of that sync (its stage, if any, is then an ordinary orphan).
 */
static void check_stages(struct walk *w)
{
	for (uint64_t ino = 1; ino < w->icap; ino++) {
		struct wino *wi = &w->in[ino];
		uint64_t s = wi->d.stage_ino;
		const struct wino *si = s && s < w->icap ? &w->in[s] : NULL;
		struct dg_chk_event ev;

		if (!wi->used || !s)
			continue;
		if (S_ISREG(wi->d.mode) && si && si->used && !si->bad &&
		    S_ISREG(si->d.mode) && !si->d.nlink && si->d.parent == ino)
			continue;
		dg_chk_event_init(&ev, DG_CHK_INODE_BAD, "inode");
		ev_ino(w, &ev, ino);
		snprintf(ev.detail, sizeof(ev.detail),
			 "inode %llu: its published libcommit sync names "
			 "inode %llu, which is not its stage",
			 (unsigned long long)ino, (unsigned long long)s);
		snprintf(ev.action, sizeof(ev.action),
			 "clear the record (the file may hold part of that "
			 "sync)");
		if (wask(w, &ev)) {
			wi->d.stage_ino = 0;
			wreport(w, &ev, store_inode(w, ino) == 0);
		} else {
			wreport(w, &ev, false);
		}
	}
}

static void check_bitmap_vpn(struct walk *w, uint64_t v)
{
	struct dg_vol *vol = w->vol;
	bool used = dg_walk_cls(w, v) != DG_PC_FREE, on;
	struct dg_chk_event ev;

	on = dg_vpn_allocated(vol, v);
	if (used == on)
		return;
	{
		dg_chk_event_init(&ev, used ? DG_CHK_BITMAP_MISSING
					    : DG_CHK_BITMAP_LEAK, "allocation");
		ev_vpn(w, &ev, v);
		ev.ino = dg_walk_owner(w, v);
		snprintf(ev.detail, sizeof(ev.detail),
			 used ? "vpn %llu is used (%s) but marked free"
			      : "vpn %llu is marked in use but nothing uses it",
			 (unsigned long long)v,
			 dg_pclass_name(dg_walk_cls(w, v)));
		snprintf(ev.action, sizeof(ev.action), used ? "mark it used"
							    : "mark it free");
		if (wask(w, &ev))
			wreport(w, &ev, dg_alloc_mark(vol, v, used) == 0);
		else
			wreport(w, &ev, false);
	}
}

/* The bitmap against what the structures use: only the groups of vpns
 * that one of them marked or that hold an allocated vpn (a vpn neither
 * marked nor allocated agrees), so the cost is the used space, not the
 * volume's size. */
static void check_bitmap(struct walk *w)
{
	uint64_t v = 0;

	while (v < w->vpns) {
		uint64_t a = dg_vpn_next_allocated(w->vol, v, w->vpns);
		uint64_t m = next_marked(w, v);
		uint64_t end;

		v = a < m ? a : m;
		if (v >= w->vpns)
			break;
		end = (v / DG_WALK_GROUP + 1) * DG_WALK_GROUP;
		if (end > w->vpns)
			end = w->vpns;
		for (; v < end; v++)
			check_bitmap_vpn(w, v);
	}
}

void dg_walk_free(struct walk *w)
{
	if (w->in)
		for (uint64_t i = 0; i < w->icap; i++) {
			free(w->in[i].ext);
			free(w->in[i].emap);
		}
	for (size_t i = 0; i < w->nents; i++)
		free(w->ents[i].name);
	free(w->ents);
	free(w->in);
	free(w->chunk_vpn);
	w->chunk_vpn = NULL;
	free(w->root);
	free(w->page);
	dg_vpnmap_free(w->map);
	w->map = NULL;
}

/* Load the root records and every structure, tolerantly. */
int dg_walk_load(struct walk *w)
{
	struct dg_vol *vol = w->vol;
	struct dg_chk_event ev;
	int r;

	w->vpns = dg_vol_vpns(vol);
	w->root = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	w->page = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	w->map = dg_vpnmap_new(w->vpns);
	if (!w->root || !w->page || !w->map)
		return -ENOMEM;
	r = dg_read(vol, 0, 1, w->root);
	if (r) {
		unreadable(w, 0, 0, "root", r);
		return -EUCLEAN;
	}
	memcpy(&w->fsr, w->root->fs, sizeof(w->fsr));
	if (dg_itable_root_check(vol, &w->fsr) || !dg_alloc_meta_vpns(vol)) {
		dg_chk_event_init(&ev, DG_CHK_FS_ROOT, "root");
		ev_vpn(w, &ev, 0);
		snprintf(ev.detail, sizeof(ev.detail),
			 "filesystem root record is invalid");
		snprintf(ev.action, sizeof(ev.action), "none");
		w->problems++;
		wreport(w, &ev, false);
		return -EUCLEAN;
	}
	mark(w, 0, 1, DG_PC_ROOT, 0);
	mark(w, 1, dg_alloc_meta_vpns(vol) - 1, DG_PC_BITMAP, 0);
	r = load_chunk_map(w);
	if (r)
		return r;
	w->icap = (uint64_t)w->fsr.nchunks * DG_INODES_PER_CHUNK;
	w->in = calloc(w->icap, sizeof(*w->in));
	if (!w->in)
		return -ENOMEM;
	load_itable(w);
	if (!w->in[DG_ROOT_INO].used || !S_ISDIR(w->in[DG_ROOT_INO].d.mode)) {
		dg_chk_event_init(&ev, DG_CHK_FS_ROOT, "inode");
		ev_ino(w, &ev, DG_ROOT_INO);
		snprintf(ev.detail, sizeof(ev.detail),
			 "root directory inode missing or not a directory");
		snprintf(ev.action, sizeof(ev.action), "none");
		w->problems++;
		wreport(w, &ev, false);
		return -EUCLEAN;
	}
	load_dirs(w);
	settle_bad_inodes(w);
	return w->nomem ? -ENOMEM : 0;
}

int dg_check_classify(struct dg_vol *vol, struct dg_vpnmap **map)
{
	struct walk w = { .vol = vol, .classify_only = true };
	int ret;

	ret = dg_walk_load(&w);
	if (ret == -EUCLEAN && w.nomem)
		ret = -ENOMEM;	/* what was walked is not all there */
	if (!ret || ret == -EUCLEAN) {
		*map = w.map;	/* taken: dg_walk_free() leaves it */
		w.map = NULL;
		ret = 0;
	}
	dg_walk_free(&w);
	return ret;
}

int dg_check_meta_outside(struct dg_vol *vol, uint64_t *pages)
{
	struct walk w = { .vol = vol, .classify_only = true };
	struct dg_vol_info info;
	int ret;

	ret = dg_walk_load(&w);
	if (ret && ret != -EUCLEAN)
		goto out;
	ret = 0;
	dg_vol_get_info(vol, &info);
	*pages = 0;
	/* Without a zone zone_vpns is 0 and every metadata page counts:
	 * none has copies beyond the root and bitmap's. Only the groups
	 * the walk marked hold a class. */
	for (uint64_t v = next_marked(&w, info.zone_vpns); v < w.vpns;
	     v = next_marked(&w, v)) {
		uint64_t end = (v / DG_WALK_GROUP + 1) * DG_WALK_GROUP;

		for (; v < end && v < w.vpns; v++)
			*pages += dg_walk_cls(&w, v) != DG_PC_FREE &&
				  dg_walk_cls(&w, v) != DG_PC_FILE;
	}
out:
	dg_walk_free(&w);
	return ret;
}

/*
 * A directory that goes to /lost+found takes what it holds with it,
 * names and all: each file and directory under it is named in the
 * report where it now is (/lost+found/#INO/...; annotate() in fsck
 * resolves the path), so that a lost directory's files are not known
 * by the directory's number alone. fixed: the directory was moved.
 */
static void name_subtree(struct walk *w, uint64_t top, bool fixed)
{
	uint64_t *q = calloc(w->icap + 1, sizeof(*q));
	bool *seen = calloc(w->icap, sizeof(*seen));
	size_t h = 0, t = 0;

	if (!q || !seen)
		goto out;
	q[t++] = top;
	seen[top] = true;
	while (h < t) {
		uint64_t d = q[h++];

		for (size_t i = 0; i < w->nents; i++) {
			const struct went *e = &w->ents[i];
			const struct wino *wi;
			struct dg_chk_event ev;

			if (e->dead || e->dir != d || e->ino >= w->icap ||
			    seen[e->ino])
				continue;
			wi = &w->in[e->ino];
			/* a hard link still reached from the root keeps
			 * its name there */
			if (!wi->used || wi->reached)
				continue;
			seen[e->ino] = true;
			if (S_ISDIR(wi->d.mode))
				q[t++] = e->ino;
			dg_chk_event_init(&ev, DG_CHK_MOVED_WITH_DIR, "inode");
			ev_ino(w, &ev, e->ino);
			snprintf(ev.detail, sizeof(ev.detail),
				 "%s '%s' (inode %llu) is under directory %llu, "
				 "not reachable from the root",
				 S_ISDIR(wi->d.mode) ? "directory" : "file",
				 e->name, (unsigned long long)e->ino,
				 (unsigned long long)top);
			snprintf(ev.action, sizeof(ev.action),
				 "moved with it to /lost+found/#%llu",
				 (unsigned long long)top);
			ev.fixable = true;
			wreport(w, &ev, fixed);
		}
	}
out:
	free(q);
	free(seen);
}

/* Reconnect inodes no directory names to /lost+found. */
static void reconnect(struct walk *w)
{
	struct dg_fs *fs = NULL;
	struct dg_inode *lf = NULL;
	struct dg_dir *lfdir;
	struct dg_attr at;
	int r;

	for (uint64_t ino = 2; ino < w->icap; ino++) {
		struct wino *wi = &w->in[ino];
		struct dg_chk_event ev;
		char name[32];

		if (!wi->used || wi->reached || wi->refs ||
		    (!wi->d.nlink && !S_ISDIR(wi->d.mode)))
			continue; /* nlink 0: an orphan the mount frees */
		dg_chk_event_init(&ev, DG_CHK_UNREACHABLE, "inode");
		ev_ino(w, &ev, ino);
		snprintf(ev.detail, sizeof(ev.detail),
			 "inode %llu (%s, %llu bytes) is not reachable from "
			 "the root", (unsigned long long)ino,
			 S_ISDIR(wi->d.mode) ? "directory" : "file",
			 (unsigned long long)wi->d.size);
		snprintf(ev.action, sizeof(ev.action),
			 "move to /lost+found/#%llu", (unsigned long long)ino);
		if (!wask(w, &ev)) {
			wreport(w, &ev, false);
			if (S_ISDIR(wi->d.mode))
				name_subtree(w, ino, false);
			continue;
		}
		if (!fs) {
			r = dg_fs_open(w->vol, &fs);
			if (r) {
				wreport(w, &ev, false);
				fs = NULL;
				break;
			}
			r = dg_fs_lookup(fs, DG_ROOT_INO, "lost+found", &at);
			if (r == -ENOENT)
				r = dg_fs_mknod(fs, DG_ROOT_INO, "lost+found",
						S_IFDIR | 0700, 0, 0, 0, &at);
			if (r) {
				wreport(w, &ev, false);
				break;
			}
			lf = dg_inode_get(fs, at.ino);
			/* Its names in core, for dg_dir_add() below. */
			if (lf && dg_dir_get(fs, lf, &lfdir))
				lf = NULL;
		}
		snprintf(name, sizeof(name), "#%llu", (unsigned long long)ino);
		{
			struct dg_inode *ip = dg_inode_get(fs, ino);
			struct dg_txn *t = dg_txn_new(w->vol);

			r = -ENOMEM;
			if (ip && t && lf && ip->ino != lf->ino) {
				r = dg_dir_add(fs, t, lf, name, ino,
					       dg_mode_dtype(ip->d.mode));
				if (!r && S_ISDIR(ip->d.mode)) {
					ip->d.parent = lf->ino;
					lf->d.nlink++;
				} else if (!r) {
					ip->d.nlink = 1;
				}
				if (!r)
					r = dg_inode_store(fs, t, ip);
				if (!r)
					r = dg_inode_store(fs, t, lf);
				if (!r)
					r = dg_fs_commit(fs, t);
			}
			dg_txn_free(t);
			wreport(w, &ev, r == 0);
			if (S_ISDIR(wi->d.mode))
				name_subtree(w, ino, r == 0);
		}
	}
	dg_fs_close(fs);
}

int dg_check_fs(struct dg_vol *vol, dg_chk_fn fn, dg_chk_ask_fn ask, void *arg)
{
	struct walk w = { .vol = vol, .fn = fn, .ask = ask, .arg = arg };
	int ret;

	ret = dg_walk_load(&w);
	if (ret == 0) {
		dg_walk_check_entries(&w);
		dg_walk_reach(&w);
		check_counts(&w);
		check_stages(&w);
		check_bitmap(&w);
		reconnect(&w);
	}
	dg_walk_free(&w);
	if (ret == -EUCLEAN)
		ret = 0; /* reported */
	return ret < 0 ? ret : (int)w.problems;
}
