/* SPDX-License-Identifier: MIT */
/* fsys_i.h -- private to the filesystem layer (inode, extent, dir, file...) */
#ifndef DG_FS_I_H
#define DG_FS_I_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>

#include "volume.h"
#include "fsys.h"

/* In-core extent: [fpage, fpage + len) of the file at [vpn, vpn + len). */
struct dg_ext {
	uint64_t fpage, vpn;
	uint32_t len;
};

/* One leaf of a file's extent map, as on the media (format.h): leaf 0
 * is the inode's inline array, leaves 1.. the chain pages in order.
 * Only leaf 0 may be empty. */
struct dg_eleaf {
	uint64_t vpn;		/* chain page; 0: inline in the inode */
	uint32_t n;		/* extents held */
	uint32_t dirty;		/* rewrite from this slot on; UINT32_MAX: clean */
	struct dg_ext e[];	/* DG_INLINE_EXTENTS or DG_EMAP_PER_PAGE */
};

/* A directory entry in core; ino 0 marks a deleted slot. */
struct dg_dent {
	char *name;
	uint64_t ino;
	uint8_t type;
	uint64_t page;		/* dirent page (file page of the dir) */
	uint32_t off;		/* byte offset of the record in it */
	uint32_t reclen;	/* bytes the record occupies */
};

struct dg_dir {
	struct dg_dent *ents;	/* in media order; index + 1 is the cookie */
	size_t nents, cap;
	uint32_t *hash;		/* open addressing: index + 1, 0 empty */
	size_t hcap, nlive, ntomb;
	uint32_t *dead;		/* indexes of deleted entries, for reuse */
	size_t ndead, capdead;
	uint64_t tail_page;	/* where the next record goes */
	uint32_t tail_off;
	/* Records visited by index rebuilds and free-slot searches: what
	 * tests count to see a change cost O(1) however big the directory
	 * is (test_dir.c). */
	uint64_t work;
};

struct dg_inode {
	uint64_t ino;
	struct dg_dinode d;	/* in-core truth, written whole to media */
	struct dg_eleaf **leaf;	/* extent map; leaf[0] exists once loaded */
	uint32_t nleaf, capleaf;
	uint32_t next;		/* extents in all leaves */
	/* Its remap page's records (remap.c), loaded with the extents;
	 * NULL: none. Under lock, as the extents. */
	struct dg_remap *remap;
	/* Directories only, and only while in use (dir_load.c): NULL
	 * until the first lookup, readdir or change reads its pages. */
	struct dg_dir *dir;
	uint64_t nlookup;	/* protected by fs->lock (write) or ilock */
	uint32_t nopen;
	/* Times changed by an overwrite that touched nothing else: in core
	 * only until fsync, release or unmount (like lazytime), so a plain
	 * overwrite is one page of work, not two. Under lock. */
	bool times_dirty;
	/* Freed on media in the transaction that dropped its last name
	 * (dg_inode_drop_last()); kept in core only until the kernel forgets it,
	 * invisible to dg_inode_get(). Under fs->lock (write). */
	bool reaped;
	/* libcommit maps (mapped.c): a read-write map pins the file for
	 * one writer; any map pins its extents. Under fs->lock (write), or
	 * fs->lock (read) + lock. */
	uint32_t map_rw, map_ro;
	/* Part of its metadata (an extent page, a directory page, or the
	 * inode of one of its names) failed verification with no repair
	 * left: more faults in its row than parity covers. The rest of the
	 * volume serves on; what needs the lost part fails with EIO until
	 * fsck gives the page up. Set at load only. */
	_Atomic bool damaged; /* atomic: a directory load sets it under
				* fs->lock read (dir_load.c) */
	/* Its record could not be read or did not check, or its extent
	 * map is malformed (-EUCLEAN): a stub kept in core (damaged too)
	 * so the damage is counted and logged once; every find of it
	 * gives EIO (icache.c). Set at load only. */
	bool unreadable;
	/* xattrs the hot paths ask for (a write: file capabilities; a
	 * chmod: the access ACL; a create: the directory's default ACL)
	 * that it is known not to have: DG_XABSENT_* bits, learnt when
	 * dg_xattr_get_locked() finds none, all forgotten at every change
	 * of its xattrs, so those paths do not read the xattr run each
	 * time. */
	_Atomic uint8_t xabsent;
	pthread_rwlock_t lock;	/* data and extents; under fs->lock */
	struct dg_inode *hnext;	/* icache.c: next in its bucket */
};

/* -EIO for an inode whose extent map or directory is incomplete. */
static inline int dg_inode_intact(const struct dg_inode *ip)
{
	return ip->damaged ? -EIO : 0;
}

/* -ETXTBSY while a libcommit read-write map is open (mapped.c); for
 * shrink/punch, -EBUSY while any map is open. */
static inline int dg_inode_map_check(const struct dg_inode *ip, bool frees)
{
	if (ip->map_rw)
		return -ETXTBSY;
	if (frees && ip->map_ro)
		return -EBUSY;
	return 0;
}

struct dg_fs {
	struct dg_vol *vol;
	/* Namespace operations hold it for writing; data operations for
	 * reading plus the inode's own lock. */
	pthread_rwlock_t lock;
	/* icache.c: the inodes in core, by ino (a hash, not an array
	 * the size of the table): read at first use, let go under
	 * fs->lock held for writing once nothing holds them. Buckets and
	 * counts under ino_lock; loads serialised by iload_lock. */
	struct dg_inode **ibucket;
	uint64_t nibucket, icached, iloads;
	uint64_t icache_limit;	/* -o inode_cache; 0: the default */
	uint64_t icache_sweep_at; /* sweep again past this many */
	pthread_mutex_t iload_lock;
	/* Slots in use on the media or in core (reaped), a bit each,
	 * DG_INODES_PER_CHUNK / 64 words a chunk (chunk_cap chunks): what
	 * the free-slot search and a load ask, with no inode in core.
	 * Under ino_lock. */
	uint64_t *ino_used;
	struct dg_dfsroot root;	/* in-core copy of the fs root record */
	uint64_t inodes_used;
	uint64_t next_free_pos;	/* search hint: ino_at() order */
	/* Slots of each inode table chunk in use (live or reaped): the
	 * search for a free slot steps over a full chunk at once, so a
	 * create costs O(chunks + one chunk), not O(inodes), whatever
	 * order slots were freed in. ino_scanned counts the slots looked
	 * at, for the tests (test_inode.c). Under ino_lock. */
	uint16_t *chunk_used;
	uint64_t ino_scanned;
	/* itable.c: first vpn of each chunk, root record and chunk map
	 * alike (chunk_cap entries in both arrays); the map's pages, its
	 * directory first (0: none); the test knob of where the map
	 * starts (0: DG_MAX_ICHUNKS). Under ino_lock. */
	uint64_t *chunk_vpn;
	uint32_t chunk_cap;
	uint64_t icmap_vpn[DG_ICMAP_PER_PAGE + 1];
	uint32_t itable_direct;
	pthread_mutex_t ino_lock; /* slot allocation, counts, icache buckets */
	/* Directory indexes (dir_load.c): loads are serialised by
	 * dir_lock; dirs_cached counts the indexes in core, dirs_loaded
	 * the loads since mount (dg_fs_cache_counts()). */
	pthread_mutex_t dir_lock;
	uint64_t dirs_cached, dirs_loaded;
	bool broken;		/* a commit failed: refuse changes */
	uint32_t gen_counter;	/* protected by ino_lock */
	/* First inodes of inode table pages that failed verification with
	 * no repair left (set at load): their slots are neither live nor
	 * free until fsck gives the page up. */
	uint64_t *lost_ino;
	unsigned nlost;
	/* Live libcommit maps (mapped.c), for the volume's page hook, which
	 * runs under row locks: map_lock is taken after them and never held
	 * across a call into the volume. */
	pthread_rwlock_t map_lock;
	struct dg_fmap *maps;	/* by map_lock */
	bool map_hooked;	/* the hook is installed; by map_lock */
	/* dg_fs_write_counts(); atomic (__atomic builtins) */
	uint64_t writes, bytes_written;
	/* Transactions of dg_fs_write_batch() undone after a move ran out
	 * of room and written again without it (file.c); atomic. */
	uint64_t moves_redone;
	/* dg_fs_remap_counts(); atomic. */
	uint64_t pages_remapped, remaps_folded;
	/* Where xattr names go (xattr_ops.c): set by the mount before its
	 * first request, read unlocked after. */
	bool posix_acl;
	struct dg_xattr_fixed {
		const char *name, *value;
	} xfixed[DG_XATTR_FIXED_MAX];
	unsigned nxfixed;
};

/* Whether ino's inode table page is lost (see dg_fs.lost_ino;
 * itable.c). */
bool dg_ino_lost(const struct dg_fs *fs, uint64_t ino);

/* ---- itable.c: where the inode table's chunks are ------------------ */
/* Chunks listed in the root record (format.h "Inode table"). */
uint32_t dg_itable_direct(const struct dg_dfsroot *r);
/* 0 or -EUCLEAN: the root record's magic and chunk counts. */
int dg_itable_root_check(struct dg_vol *vol, const struct dg_dfsroot *r);
/* The first vpn of every chunk of r (chunk_vpn: r->nchunks entries) and
 * the map pages read (map_vpn: DG_ICMAP_PER_PAGE + 1 entries, *nmap
 * used, the directory first). -EUCLEAN or -EIO with the page at fault
 * in *bad_vpn. */
int dg_itable_read_map(struct dg_vol *vol, const struct dg_dfsroot *r,
		       uint64_t *chunk_vpn, uint64_t *map_vpn,
		       uint32_t *nmap, uint64_t *bad_vpn);
/* At mount: fs->chunk_vpn and the map from fs->root. */
int dg_itable_load(struct dg_fs *fs);
/* Record a new chunk starting at start in txn (root record, and map
 * pages past the root's room, setting DG_FEAT_INCOMPAT_BIG_ITABLE
 * first); -ENOSPC at the map's limit. Under ino_lock. */
int dg_itable_add(struct dg_fs *fs, struct dg_txn *txn, uint64_t start);
/* statfs f_files and f_ffree, given the volume's vpns (under ino_lock). */
void dg_itable_counts(const struct dg_fs *fs, uint64_t vpns,
		      uint64_t *files, uint64_t *ffree);
/* Tests only: the map starts after n chunks rather than DG_MAX_ICHUNKS,
 * so a test crosses into it with few inodes; before the map exists. */
int dg_fs_test_itable_direct(struct dg_fs *fs, uint32_t n);
/* Where inode ino's record is: its table page and the offset in it. */
void dg_ino_where(const struct dg_fs *fs, uint64_t ino, uint64_t *vpn,
		  uint32_t *off);
/* The first vpn of chunk c (< nchunks): the one place that says it. */
static inline uint64_t dg_itable_chunk(const struct dg_fs *fs, uint64_t c)
{
	return fs->chunk_vpn[c];
}

/* ---- icache.c: the inodes in core --------------------------------- */
#define DG_ICACHE_DEFAULT 65536u
/* The bound on idle inodes in core (-o inode_cache). */
static inline uint64_t dg_icache_limit(const struct dg_fs *fs)
{
	return fs->icache_limit ? fs->icache_limit : DG_ICACHE_DEFAULT;
}
#define DG_IUSED_WORDS (DG_INODES_PER_CHUNK / 64) /* ino_used, a chunk */
/* The inode ino, read from the media at its first use: 0 and *ipp;
 * -ENOENT for a free slot (and a reaped inode unless reaped); else
 * why it cannot be read (-EIO, -ENOMEM). An inode whose extent map is
 * unreadable loads damaged. Caller holds fs->lock (read or write). */
int dg_inode_find(struct dg_fs *fs, uint64_t ino, bool reaped,
		  struct dg_inode **ipp);
/* The live inode ino; NULL for a free slot, a reaped inode or an
 * inode that cannot be read (callers that must tell: dg_inode_find). */
struct dg_inode *dg_inode_get(struct dg_fs *fs, uint64_t ino);
/* The same, reaped inodes included. */
struct dg_inode *dg_inode_slot(struct dg_fs *fs, uint64_t ino);
/* ino if it is in core now, else NULL; reads nothing (under ino_lock). */
struct dg_inode *dg_icache_peek(const struct dg_fs *fs, uint64_t ino);
/* Put a new inode in core, take one out (under ino_lock). */
int dg_icache_add(struct dg_fs *fs, struct dg_inode *ip);
void dg_icache_del(struct dg_fs *fs, struct dg_inode *ip);
/* The inodes in core now (under ino_lock): *n of them in a new array
 * (free() it); pointers valid while the caller holds fs->lock. */
int dg_icache_list(struct dg_fs *fs, struct dg_inode ***ips, uint64_t *n);
/* Let go of inodes nothing holds while more than the bound are in
 * core (fs->lock held for writing). */
void dg_icache_sweep(struct dg_fs *fs);
/* ino may have just become idle (forget, release): let it go now when
 * the cache is past its bound, else sweep if due (fs->lock held for
 * writing; ino may be gone already). */
void dg_icache_settle(struct dg_fs *fs, uint64_t ino);
/* Free every inode in core and the hash (dg_fs_close). */
void dg_icache_free(struct dg_fs *fs);
/* Whether slot ino is in use on the media or in core (ino_used). */
static inline bool dg_ino_used(const struct dg_fs *fs, uint64_t ino)
{
	return (fs->ino_used[ino / 64] >> (ino % 64)) & 1;
}
static inline void dg_ino_mark(struct dg_fs *fs, uint64_t ino, bool used)
{
	if (used)
		fs->ino_used[ino / 64] |= 1ull << (ino % 64);
	else
		fs->ino_used[ino / 64] &= ~(1ull << (ino % 64));
}

/* In-core inode objects (an inode read, or made by dg_inode_new()). */
struct dg_inode *dg_inode_alloc_core(uint64_t ino);
void dg_inode_free_core(struct dg_inode *ip);
/* An inode record read from the media is one the filesystem can hold
 * (0 or -EUCLEAN); its extents are checked by the extent walk. */
int dg_dinode_check(const struct dg_vol *vol, uint64_t ino,
		    const struct dg_dinode *d);

/* ---- inode.c --------------------------------------------------------- */
/* Whether nothing holds ip but the cache: no lookup the kernel has,
 * no open, no map, no stage, no unsaved times, nothing to recover. */
bool dg_inode_idle(const struct dg_fs *fs, const struct dg_inode *ip);
/* Queue the inode record (whole) in txn. */
int dg_inode_store(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip);
/* Allocate an inode slot (growing the table in txn when full). The new
 * inode is installed in core; dg_inode_discard undoes it on failure. */
int dg_inode_new(struct dg_fs *fs, struct dg_txn *txn, uint32_t mode,
		 uint32_t uid, uint32_t gid, struct dg_inode **ipp);
void dg_inode_discard(struct dg_fs *fs, struct dg_inode *ip);
/* Free everything the inode owns and its slot, in txn. */
int dg_inode_destroy(struct dg_fs *fs, struct dg_txn *txn,
		     struct dg_inode *ip);
/* Free it now if nothing refers to it any more. */
void dg_inode_maybe_destroy(struct dg_fs *fs, struct dg_inode *ip);
/* ip just lost its last name in txn: destroy it in the same txn when
 * nothing but the kernel's lookups holds it, else store it. */
int dg_inode_drop_last(struct dg_fs *fs, struct dg_txn *txn,
		       struct dg_inode *ip);
void dg_inode_attr(const struct dg_inode *ip, struct dg_attr *attr);
void dg_inode_touch(struct dg_inode *ip, bool mtime, bool ctime);
int64_t dg_now_ns(void);
/* Persist times left dirty by overwrites (fsync, release, unmount). */
int dg_inode_flush_times(struct dg_fs *fs, struct dg_inode *ip);
/* Commit txn; a failure after in-core changes breaks the fs. */
int dg_fs_commit(struct dg_fs *fs, struct dg_txn *txn);

/* ---- extent.c -------------------------------------------------------- */
/* The mapping of fpage: *vpn (0: hole) and how many pages the answer
 * holds for (mapped run, or hole up to the next extent; UINT64_MAX). */
void dg_ext_lookup(const struct dg_inode *ip, uint64_t fpage, uint64_t *vpn,
		   uint64_t *run);
/* Map [fpage, fpage + len) to newly allocated vpns in txn. Allocated
 * runs are reported through fresh() so callers can initialise them. */
int dg_ext_alloc(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		 uint64_t fpage, uint64_t len,
		 void (*fresh)(void *arg, uint64_t fpage, uint64_t vpn,
			       uint64_t n),
		 void *arg);
/* Unmap and free [fpage, fpage + len) in txn. */
int dg_ext_punch(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		 uint64_t fpage, uint64_t len);
/* A run of file pages. */
struct dg_frun {
	uint64_t fpage, n;
};
/* Each run of file pages unmapped (its pages freed) and mapped again,
 * in order, onto the given media runs (as many pages in all, allocated
 * by the caller in txn): a move to pages the caller chose. */
int dg_ext_move(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		const struct dg_frun *file, unsigned nfile,
		const struct dg_vrun *media, unsigned nmedia);
/* The three write the leaves they changed to txn, adding or freeing chain
 * pages; the caller stores the inode (which holds leaf 0). On failure
 * the in-core map may be half changed: reload it with dg_ext_load(). */
int dg_ext_load(struct dg_fs *fs, struct dg_inode *ip);
void dg_ext_free(struct dg_inode *ip);
/* The file page that vpn holds, if ip maps it. */
bool dg_ext_owns(const struct dg_inode *ip, uint64_t vpn, uint64_t *fpage);

/* ---- remap.c ----------------------------------------------------------- */
/* A file's remap page in core (format.h "Remap page"): its records in
 * fpage order, each with the slot that holds it on the media. */
struct dg_remap {
	uint64_t vpn;		/* the remap page */
	uint32_t n;		/* records, in r[0, n) and slots [0, n) */
	bool fold_due;		/* full: folded at the write's end (file.c) */
	struct dg_rrec {
		uint64_t fpage, vpn;
		uint32_t slot;
	} r[DG_REMAP_PER_PAGE];
};
/* A remap page read from the media: owned by ino, its records in range
 * for vol and no two alike, the slots after them zero. 0, or -EUCLEAN
 * with *why; *n the records. Shared by the load and fsck. */
int dg_dremap_check(const struct dg_dremap *pg, uint64_t ino,
		    struct dg_vol *vol, uint32_t *n, const char **why);
/* ip's remap page read into core (dg_ext_load(), which checks that
 * each record's page is mapped); 0 with none. */
int dg_remap_load(struct dg_fs *fs, struct dg_inode *ip);
void dg_remap_free(struct dg_inode *ip);
/* Where a mapped file page reads from: *vpn and *run (dg_ext_lookup())
 * narrowed by the records. */
void dg_remap_apply(const struct dg_inode *ip, uint64_t fpage, uint64_t *vpn,
		    uint64_t *run);
/* The record whose page is vpn, if any: its file page. */
bool dg_remap_owns(const struct dg_inode *ip, uint64_t vpn, uint64_t *fpage);
/* Whether fpage reads from a record's page (its home page is stale). */
bool dg_remap_has(const struct dg_inode *ip, uint64_t fpage);
/* Pages the remap holds beyond dinode.blocks: the page and its records'. */
uint64_t dg_remap_blocks(const struct dg_inode *ip);
/* Drop the records of [fpage, fpage + len) in txn, their pages freed;
 * the remap page too when none is left. */
int dg_remap_drop(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		  uint64_t fpage, uint64_t len);
/* Write the whole page src of file page fpage (mapped) to a blank page,
 * if the volume writes it there for less (REMAP, not degraded, no
 * libcommit map, room in the remap page, a blank page near):
 * *done then, and *meta when the inode record changed (a remap page
 * begun). Otherwise the caller writes it in place. */
int dg_remap_write(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		   uint64_t fpage, const void *src, bool *done, bool *meta);
/* Up to max records, those of the last slots, out of the remap page in
 * txn (the page freed with the last), their pages not freed: *fr and
 * *vr (the caller's to free) get each one's file page and page, in file
 * order, for dg_ext_move() to map in place of their homes. */
int dg_remap_take(struct dg_txn *txn, struct dg_inode *ip, uint32_t max,
		  struct dg_frun **fr, struct dg_vrun **vr, unsigned *n);

/* ---- emap.c ------------------------------------------------------------ */
/* Reads an extent map from the media in file order, checking each
 * extent and page header; shared by the mount path and fsck so the
 * format is parsed in one place. dg_emap_next() returns:
 *   DG_EMAP_EXTENT  *e is the next extent (valid until the next call);
 *   DG_EMAP_PAGE    the next chain page, page_vpn, is about to be read
 *                   (callers may account for it first);
 *   DG_EMAP_END     all d->nextents extents were returned;
 *   < 0             -EUCLEAN with why set, or dg_read()'s error for
 *                   page_vpn. Errors are final.
 * leaf is the leaf being read (0: inline) and slot the next slot in it:
 * the failing one after an error. */
enum { DG_EMAP_END = 0, DG_EMAP_EXTENT = 1, DG_EMAP_PAGE = 2 };
struct dg_emap_reader {
	struct dg_vol *vol;
	const struct dg_dinode *d;
	struct dg_demap *pg;	/* caller's page buffer */
	uint64_t page_vpn;	/* current chain page; 0: inline */
	uint64_t next_vpn;	/* chain page after the current one */
	uint64_t prev_end;	/* first file page after the last extent */
	uint32_t leaf, slot, count, seen;
	bool page_pending;	/* PAGE returned, page not read yet */
	int err;
	const char *why;
};
void dg_emap_begin(struct dg_emap_reader *r, struct dg_vol *vol,
		   const struct dg_dinode *d, struct dg_demap *pg);
int dg_emap_next(struct dg_emap_reader *r, const struct dg_dextent **e);
/* A chain page read from the media holds 1..left extents (0 or -EUCLEAN). */
int dg_demap_check(const struct dg_demap *pg, uint32_t left);

/* ---- dir.c ------------------------------------------------------------ */
/* dir_load.c: dp's in-core index (*dirp), read from its pages at first
 * use; -EIO for a directory that cannot be served. Caller holds
 * fs->lock (read or write): loads are serialised by fs->dir_lock. */
int dg_dir_get(struct dg_fs *fs, struct dg_inode *dp, struct dg_dir **dirp);
/* dp's index for one search that must leave nothing loaded (log
 * paths, permission walks: no forget comes for what they read): the
 * index in core, or one read for the call (*own); give it back with
 * dg_dir_unborrow(). Caller holds fs->lock. */
int dg_dir_borrow(struct dg_fs *fs, struct dg_inode *dp,
		  struct dg_dir **dirp, bool *own);
void dg_dir_unborrow(struct dg_dir *dir, bool own);
/* Let the index go (not the root's); under fs->lock held for writing. */
void dg_dir_evict(struct dg_fs *fs, struct dg_inode *dp);
/* The parts of the load, pure over bytes (and fuzzed so): an empty
 * in-core directory, and one dirent page (file page page of directory
 * ino) checked and indexed into it; -EUCLEAN for a bad record. */
int dg_dir_new(struct dg_dir **dirp);
/* The record at off of a dirent page: NULL with *err 0 at the end of
 * the page's records, NULL with *err -EUCLEAN when it is malformed (the
 * one rule, for the daemon's parser and fsck's). */
const struct dg_ddirent *dg_dirent_at(const uint8_t *p, uint32_t off,
				      int *err);
int dg_dir_parse_page(struct dg_vol *vol, struct dg_dir *dir, uint64_t ino,
		      uint64_t page, const uint8_t *p);
void dg_dir_free(struct dg_dir *dir);
struct dg_dent *dg_dir_find(struct dg_dir *dir, const char *name);
int dg_dir_add(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *dp,
	       const char *name, uint64_t ino, uint8_t type);
int dg_dir_remove(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *dp,
		  struct dg_dent *de);
/* Point an existing entry at another inode (rename over, exchange). */
int dg_dir_retarget(struct dg_fs *fs, struct dg_txn *txn, struct dg_dent *de,
		    struct dg_inode *dp, uint64_t ino, uint8_t type);
bool dg_dir_empty(const struct dg_dir *dir);
uint8_t dg_mode_dtype(uint32_t mode);

/* ---- file.c ------------------------------------------------------------ */
/* Bytes one transaction of file data may carry (a write's piece): what
 * the journal takes, less room for the metadata that rides along. */
size_t dg_file_piece_max(struct dg_fs *fs);
/* Write into a file's pages within txn (no size or time update). With
 * moved, the whole pages of a large write may go to new pages instead
 * (file.c, relocate()): *moved is then true, and the inode must be
 * stored (its extents changed). */
int dg_file_write_txn(struct dg_fs *fs, struct dg_txn *txn,
		      struct dg_inode *ip, uint64_t off, const void *buf,
		      size_t size, bool *moved);
int dg_file_truncate(struct dg_fs *fs, struct dg_txn *txn,
		     struct dg_inode *ip, uint64_t size);

/* ---- mapped.c --------------------------------------------------------- */
/* Clear map records left by a crash (dg_fs_open, writable volumes),
 * of the inodes listed (the mount's scan: those with a map record). */
void dg_fmap_recover(struct dg_fs *fs, const uint64_t *inos, size_t n);
/* 0, or -EINVAL for runs outside m or not line aligned, -EBADF for a
 * read-only map. */
int dg_fmap_runs_check(const struct dg_fmap *m, const struct dg_fmap_run *runs,
		       unsigned n);
struct dg_fs *dg_fmap_fs(const struct dg_fmap *m);

/* ---- stage.c ------------------------------------------------------------ */
/* Finish the syncs published before a crash (dg_fs_open, before the
 * orphans are freed), of the inodes listed (the mount's scan: those
 * naming a stage, among others); read-only: serve them as damaged. */
void dg_fstage_recover(struct dg_fs *fs, const uint64_t *inos, size_t n);

/* ---- setid.c ------------------------------------------------------------ */
/* Clear set-ID bits (setid.c's rules for cr and why) and file
 * capabilities in txn, as the kernel would before a write, truncate or
 * chown; *changed: the caller stores the inode. Caller holds fs->lock
 * (and ip->lock for writing, or fs->lock for writing). */
int dg_inode_kill_priv(struct dg_fs *fs, struct dg_txn *txn,
		       struct dg_inode *ip, const struct dg_cred *cr,
		       enum dg_kill why, bool *changed);

/* ---- xattr.c ----------------------------------------------------------- */
/* An xattr run of pages pages read from the media: header and records
 * fit, and pages is the fewest that hold them (0 or -EUCLEAN); and, on a
 * checked run, the value of name (its length; -ENODATA, -ERANGE) and the
 * NUL-separated list of names (its length; -ERANGE), size 0 asking only
 * for the length. big: the volume has DG_FEAT_INCOMPAT_XATTR_64K, so a
 * record's length has 17 bits. */
int dg_xattr_page_check(const uint8_t *buf, uint32_t pages, bool big);
int dg_xattr_page_get(const uint8_t *buf, const char *name, void *out,
		      size_t size);
int dg_xattr_page_list(const uint8_t *buf, char *out, size_t size);
#define DG_XABSENT_CAPS   1u /* security.capability */
#define DG_XABSENT_ACL	  2u /* system.posix_acl_access */
#define DG_XABSENT_DEFACL 4u /* system.posix_acl_default */
/* For callers that hold fs->lock and change the inode in their own
 * transaction (ACLs with the mode): get one attribute; set some (value
 * NULL: remove it, if there), all in one load and store of the run.
 * The caller stores the inode. */
int dg_xattr_get_locked(struct dg_fs *fs, struct dg_inode *ip,
			const char *name, void *value, size_t size);
struct dg_xset {
	const char *name;
	const void *value;	/* NULL: remove */
	size_t size;
};
int dg_xattr_set_txn(struct dg_fs *fs, struct dg_txn *txn,
		     struct dg_inode *ip, const struct dg_xset *sets,
		     unsigned n);
/* ---- xattr_run.c: the run's pages, freed with the inode ---- */
/* Pages of the inode's xattr run (0: none). */
uint32_t dg_xattr_run_pages(const struct dg_dinode *d);
/* Free the inode's xattr run in txn (dg_inode_destroy). */
int dg_xattr_drop(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip);

/* ---- acl.c: POSIX ACLs in xattr form, in 4-byte aligned buffers ---- */
#define DG_ACL_ACCESS  "system.posix_acl_access"
#define DG_ACL_DEFAULT "system.posix_acl_default"
#define DG_ACL_MAX     (4 + 8 * 1024) /* bytes; 1,024 entries */
int dg_acl_check(const void *v, size_t size);
int dg_acl_equiv_mode(const void *v, size_t size, uint32_t *mode);
void dg_acl_chmod(void *v, size_t size, uint32_t mode);
int dg_acl_create_masq(void *v, size_t size, uint32_t *mode);
/* After a chmod: the access ACL, if any, takes the new bits (in txn). */
int dg_acl_chmod_inode(struct dg_fs *fs, struct dg_txn *txn,
		       struct dg_inode *ip);
/* What a new inode in dp gets (posix_acl_create()): *mode limited by
 * dp's default ACL, or by umask (>= 0) when dp has none. */
struct dg_acl_new {
	void *access, *dflt;
	size_t access_len, dflt_len;
};
int dg_acl_prepare(struct dg_fs *fs, struct dg_inode *dp, uint32_t *mode,
		   int32_t umask, struct dg_acl_new *an);
int dg_acl_apply(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *ip,
		 const struct dg_acl_new *an);
void dg_acl_new_free(struct dg_acl_new *an);

/* inode_init_owner(): a new inode in a set-group-ID directory dir takes
 * its group, and a new directory its S_ISGID too (setid.c). */
void dg_setid_init_owner(const struct dg_dinode *dir, uint32_t *mode,
			 uint32_t *gid);

#endif /* DG_FS_I_H */
