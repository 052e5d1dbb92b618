/* SPDX-License-Identifier: MIT */
/* fsys.h -- the filesystem layer: inodes, directories, extents, on volume.h */
#ifndef DG_FS_H
#define DG_FS_H

#include <stdint.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>

#include "volume.h"

/*
 * Every structure lives in vpn pages and changes only through
 * transactions of the engine, so each operation below is atomic and
 * durable when it returns (G4): fsync has nothing left to do. All
 * metadata is also held in memory, loaded at dg_fs_open().
 *
 * Functions return 0 (or a byte count) or a negative errno. Permission
 * checks are the kernel's (default_permissions); callers pass the
 * credentials new inodes get.
 */
struct dg_fs;

struct dg_attr {
	uint64_t ino;
	uint32_t mode, nlink, uid, gid;
	uint64_t size, blocks, rdev;
	struct timespec atime, mtime, ctime;
	uint32_t generation;
};

/* dg_setattr.valid */
#define DG_SET_MODE	 (1u << 0)
#define DG_SET_UID	 (1u << 1)
#define DG_SET_GID	 (1u << 2)
#define DG_SET_SIZE	 (1u << 3)
#define DG_SET_ATIME	 (1u << 4)
#define DG_SET_MTIME	 (1u << 5)
#define DG_SET_ATIME_NOW (1u << 6)
#define DG_SET_MTIME_NOW (1u << 7)
#define DG_SET_CTIME	 (1u << 8)

struct dg_cred;
struct dg_setattr {
	unsigned valid;
	uint32_t mode, uid, gid;
	uint64_t size;
	struct timespec atime, mtime, ctime;
	/* Who asks: a chown or truncate drops set-ID bits and file
	 * capabilities by the kernel's rules (setid.c) in the change's own
	 * transaction. NULL: no drop. */
	const struct dg_cred *cr;
};

/* Format devs as a new filesystem (mkfs): the volume (dg_vol_format())
 * and its root directory, owned by the caller; info (may be NULL) gets
 * the new volume's summary. */
int dg_format(const char *const *devs, unsigned ndev,
	      const struct dg_format_opts *opts, struct dg_vol_info *info);
/* Load the filesystem of an open volume; frees orphans when writable. */
int dg_fs_open(struct dg_vol *vol, struct dg_fs **fsp);
void dg_fs_close(struct dg_fs *fs);
/* The FUSE loop has ended: the kernel holds no name or open file of
 * any inode any more. Unlinked files are freed now rather than at the
 * next mount, so that their pages are free before the close. */
void dg_fs_kernel_gone(struct dg_fs *fs);

/* Lookup counts follow the FUSE rules: every reply that hands the
 * kernel an inode (lookup, create, mknod, mkdir, symlink, link,
 * readdirplus) adds one; forget takes them back. */
int dg_fs_lookup(struct dg_fs *fs, uint64_t parent, const char *name,
		 struct dg_attr *attr);
void dg_fs_forget(struct dg_fs *fs, uint64_t ino, uint64_t nlookup);
int dg_fs_getattr(struct dg_fs *fs, uint64_t ino, struct dg_attr *attr);
int dg_fs_setattr(struct dg_fs *fs, uint64_t ino, const struct dg_setattr *sa,
		  struct dg_attr *attr);

/* mode carries the type: S_IFREG, S_IFDIR, S_IFIFO, S_IFSOCK,
 * S_IFCHR/S_IFBLK (rdev). */
int dg_fs_mknod(struct dg_fs *fs, uint64_t parent, const char *name,
		uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid,
		struct dg_attr *attr);
/* Owned by cr's uid and gid (a symlink's mode is always 0777). */
int dg_fs_symlink(struct dg_fs *fs, uint64_t parent, const char *name,
		  const char *target, const struct dg_cred *cr,
		  struct dg_attr *attr);
/* Returns the target length (not NUL terminated in buf). */
int dg_fs_readlink(struct dg_fs *fs, uint64_t ino, char *buf, size_t size);
int dg_fs_link(struct dg_fs *fs, uint64_t ino, uint64_t parent,
	       const char *name, struct dg_attr *attr);
int dg_fs_unlink(struct dg_fs *fs, uint64_t parent, const char *name);
int dg_fs_rmdir(struct dg_fs *fs, uint64_t parent, const char *name);
/* flags: RENAME_NOREPLACE, RENAME_EXCHANGE. */
int dg_fs_rename(struct dg_fs *fs, uint64_t parent, const char *name,
		 uint64_t newparent, const char *newname, unsigned flags);

/* Make ino's times durable (an overwrite leaves them in core only) and
 * retire the journal. Everything else is durable already. */
int dg_fs_fsync(struct dg_fs *fs, uint64_t ino);

/* Open files keep an unlinked inode alive until the last release. A
 * truncating open (O_TRUNC) of a regular file by cr (NULL: no drop)
 * drops set-ID bits and capabilities as truncate(2) does, in the
 * truncate's transaction. */
int dg_fs_open_ino(struct dg_fs *fs, uint64_t ino, bool truncate,
		   const struct dg_cred *cr);
void dg_fs_release(struct dg_fs *fs, uint64_t ino);

/*
 * Read up to size bytes at off. pages must be page aligned and hold the
 * whole pages the range touches (size + 2 pages is always enough); the
 * bytes start at *data. Holes read as zeros. Returns the byte count.
 */
ssize_t dg_fs_read(struct dg_fs *fs, uint64_t ino, uint64_t off, size_t size,
		   void *pages, const void **data);
ssize_t dg_fs_write(struct dg_fs *fs, uint64_t ino, uint64_t off,
		    const void *buf, size_t size);
/* A write that drops set-ID bits (setid.c's rules for cr) and file
 * capabilities in the same transaction as the first bytes written, so
 * no crash leaves one without the other (KILLPRIV_V2). */
struct dg_cred;
ssize_t dg_fs_write_unpriv(struct dg_fs *fs, uint64_t ino, uint64_t off,
			   const void *buf, size_t size,
			   const struct dg_cred *cr);
/* One run of bytes of a batched write (dg_fs_write_batch()). */
struct dg_wseg {
	uint64_t off;
	const void *buf;
	size_t len;
};
/*
 * Write n runs of one file, sorted by offset and not overlapping, in
 * transactions of up to 1 MiB each: runs share a journal entry and its
 * persists, and whole rows of them go to new pages (the "Whole rows"
 * path) rather than into the journal. The daemon's write-back hold
 * (-o writeback) commits what it gathered of a file with one call. Each
 * transaction is atomic. Returns 0, or the negative errno of the
 * transaction that failed (those committed before it stay). Counted as
 * requests write requests (those the runs gathered), so that the
 * media's cost per write compares across modes.
 */
int dg_fs_write_batch(struct dg_fs *fs, uint64_t ino,
		      const struct dg_wseg *seg, unsigned n, unsigned requests);
/* Write requests served by dg_fs_write(), dg_fs_write_unpriv() and
 * dg_fs_write_batch() since the mount, and the bytes they wrote: what the media's counts are
 * divided by (dg_vol_media_counts(), docs/design.md "What a write costs
 * the media"). A request that wrote nothing is not counted. */
void dg_fs_write_counts(struct dg_fs *fs, uint64_t *writes, uint64_t *bytes);
/* Whole-page overwrites redirected to blank pages since the mount, and
 * the records folded into extents (remap.c, format.h "Remap page"). */
void dg_fs_remap_counts(struct dg_fs *fs, uint64_t *remapped,
			uint64_t *folded);
/* SEEK_DATA or SEEK_HOLE from off (seek.c): the offset in *out, or
 * -ENXIO at or past EOF, for a negative off (as lseek(2)), and for
 * SEEK_DATA in a hole up to EOF. off is signed as the caller's off_t:
 * its checks are made here, for every caller. */
int dg_fs_lseek(struct dg_fs *fs, uint64_t ino, int64_t off, int whence,
		uint64_t *out);
/* mode: 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE|KEEP_SIZE,
 * FALLOC_FL_ZERO_RANGE (|KEEP_SIZE). off and len are signed as
 * fallocate(2)'s: -EINVAL for off < 0 or len <= 0, -EFBIG past the
 * largest file. */
int dg_fs_fallocate(struct dg_fs *fs, uint64_t ino, int mode, int64_t off,
		    int64_t len);

/* Directory listing from cookie off (0: start). fill() gets each entry
 * and the cookie of the next; returning nonzero stops. With plus, the
 * entry's lookup count is taken before fill() (FUSE readdirplus) and
 * attr is filled. */
typedef int (*dg_fill_fn)(void *arg, const char *name,
			  const struct dg_attr *attr, uint64_t next);
int dg_fs_readdir(struct dg_fs *fs, uint64_t ino, uint64_t off, bool plus,
		  dg_fill_fn fill, void *arg);
int dg_fs_opendir(struct dg_fs *fs, uint64_t ino);

int dg_fs_statfs(struct dg_fs *fs, struct statvfs *st);

/* Metadata lost at load (fsys_i.h: damaged inodes, lost inode table
 * pages): served with EIO where it matters until fsck gives it up. */
struct dg_fs_damage {
	uint64_t inodes;	/* files and directories served as damaged */
	uint64_t inode_pages;	/* inode table pages lost */
};
void dg_fs_get_damage(struct dg_fs *fs, struct dg_fs_damage *d);
/* Up to max of the inodes served as damaged; returns how many. */
unsigned dg_fs_damaged_inodes(struct dg_fs *fs, uint64_t *inos, unsigned max);

/* What is in core (issue 34): memory follows what is in use, not what
 * is stored. dirs_cached: directory indexes held now; dirs_loaded:
 * directory loads since the mount (a directory forgotten by the kernel
 * and used again counts twice). */
struct dg_fs_cache {
	uint64_t dirs_cached, dirs_loaded;
	/* inodes_cached: inodes in core now (the root, those in use, up to
	 * -o inode_cache idle ones); inode_loads: inode table pages read
	 * since the mount (a read takes the page's other inodes too). */
	uint64_t inodes_cached, inode_loads;
};
void dg_fs_cache_counts(struct dg_fs *fs, struct dg_fs_cache *c);
/* Whether slot ino holds an inode (live, or reaped and still known to
 * the kernel): what getattr's -ENOENT tells, reading nothing. */
bool dg_fs_ino_in_use(struct dg_fs *fs, uint64_t ino);
/* -o inode_cache: idle inodes kept in core (0: the default, 65536);
 * set before the first request. */
void dg_fs_set_inode_cache(struct dg_fs *fs, uint64_t n);

/* flags: XATTR_CREATE, XATTR_REPLACE. get/list return the size, or
 * -ERANGE when size is too small (size 0 asks for the size). */
int dg_fs_setxattr(struct dg_fs *fs, uint64_t ino, const char *name,
		   const void *value, size_t size, int flags);
int dg_fs_getxattr(struct dg_fs *fs, uint64_t ino, const char *name,
		   void *value, size_t size);
int dg_fs_listxattr(struct dg_fs *fs, uint64_t ino, char *list, size_t size);
int dg_fs_removexattr(struct dg_fs *fs, uint64_t ino, const char *name);

/*
 * The xattr calls as a mount's request reaches them (xattr_ops.c): which
 * store a name goes to, decided here, not by the daemon. A name made
 * fixed reads as its value and refuses a change (EPERM); with POSIX ACLs
 * on, system.posix_acl_* go through dg_fs_set_acl() (mode kept one truth
 * with the ACL, cr the caller); the rest to the record pages above.
 * Permission (modes, ACLs) is the kernel's (default_permissions).
 */
int dg_fs_xattr_set(struct dg_fs *fs, uint64_t ino, const char *name,
		    const void *value, size_t size, int flags,
		    const struct dg_cred *cr);
int dg_fs_xattr_get(struct dg_fs *fs, uint64_t ino, const char *name,
		    void *value, size_t size);
/* POSIX ACLs on (the kernel enforces them, FUSE_CAP_POSIX_ACL). */
void dg_fs_xattr_acl(struct dg_fs *fs, bool on);
/* name reads as the string at value (read at each get, so it may be
 * filled in later; it must outlive fs) and cannot be set. -ENOSPC past
 * DG_XATTR_FIXED_MAX names. Before the mount's first request. */
#define DG_XATTR_FIXED_MAX 4
int dg_fs_xattr_fix(struct dg_fs *fs, const char *name, const char *value);

/*
 * Who asks, for the rules that depend on it (setid.c). fsetid: the
 * caller may keep set-ID bits (CAP_FSETID). in_group() says whether gid
 * is one of the caller's supplementary groups; it is asked only when the
 * answer matters (the daemon reads /proc for it). NULL for a cred means
 * a privileged caller (fsck, tools).
 */
struct dg_cred {
	uint32_t uid, gid;
	bool fsetid;
	int32_t umask;	/* to apply at create (FUSE_CAP_DONT_MASK); -1: done */
	bool (*in_group)(const struct dg_cred *cr, uint32_t gid);
	void *ctx;
};

enum dg_kill {
	DG_KILL_WRITE,	/* a write or truncate */
	DG_KILL_CHOWN,	/* a change of owner or group */
};

/* The mode a write/truncate or a chown leaves (setid.c gives the rules). */
uint32_t dg_setid_kill(uint32_t mode, uint32_t gid, const struct dg_cred *cr,
		       enum dg_kill why);
/* The mode a chmod by cr stores, given the file's group. */
uint32_t dg_setid_chmod(uint32_t mode, uint32_t gid, const struct dg_cred *cr);
/* A new inode of any type but a symlink, as the caller cr asks for it:
 * the owner rules of setid.c, the directory's default ACL or the umask
 * (acl.c). */
int dg_fs_create(struct dg_fs *fs, uint64_t parent, const char *name,
		 uint32_t mode, uint64_t rdev, const struct dg_cred *cr,
		 struct dg_attr *attr);
/* open(O_CREAT) of a new regular file: created as dg_fs_create() and
 * open (as dg_fs_open_ino(); dg_fs_release() closes it) under one hold
 * of the filesystem, so no unlink comes between. */
int dg_fs_create_open(struct dg_fs *fs, uint64_t parent, const char *name,
		      uint32_t mode, const struct dg_cred *cr,
		      struct dg_attr *attr);
/* setxattr of system.posix_acl_access or _default: kept one truth with
 * the mode (acl.c). */
int dg_fs_set_acl(struct dg_fs *fs, uint64_t ino, const char *name,
		  const void *value, size_t size, const struct dg_cred *cr);

/* FITRIM of the volume's free rows (dg_vol_trim()), for a caller who may
 * (root; NULL cr: a tool): -EPERM otherwise. */
int dg_fs_trim(struct dg_fs *fs, uint64_t start, uint64_t len,
	       uint64_t minlen, const struct dg_cred *cr, uint64_t *trimmed);

/* Someone other than the caller, for the kernel's permission rules
 * (visible.c): the daemon names to a user only what that user could
 * reach. groups: the supplementary groups. */
struct dg_who {
	uint32_t uid, gid;
	const uint32_t *groups;
	unsigned ngroups;
};
#define DG_MAY_EXEC  1u
#define DG_MAY_WRITE 2u
#define DG_MAY_READ  4u
/* generic_permission(): want (DG_MAY_*) on a file of this mode and
 * owner, with its access ACL in xattr form (NULL: none). */
bool dg_who_may(const struct dg_who *w, uint32_t mode, uint32_t uid,
		uint32_t gid, const void *acl, size_t acl_size, unsigned want);
/* Whether w could stat path ("/a/b", from the volume's root) now: search
 * permission on every directory on it (with ACLs when acl), and the
 * name there. */
bool dg_fs_may_stat(struct dg_fs *fs, const char *path,
		    const struct dg_who *w, bool acl);

/* Path of ino for log messages ("?" parts when unknown); buf gets at
 * most len bytes, NUL terminated. */
void dg_fs_path(struct dg_fs *fs, uint64_t ino, char *buf, size_t len);
/* The inode and file page that own vpn, for fault reports; -ENOENT
 * when no file maps it, -EAGAIN when none does but a file being
 * written could not be asked (its lock is not waited for). Takes the
 * fs lock. */
int dg_fs_owner(struct dg_fs *fs, uint64_t vpn, uint64_t *ino,
		uint64_t *fpage);
/* The thorough answer (owner_scan.c), for the lost-page registry's
 * pages the quick one could not place: each lp[i].ino and .fpage set
 * (ino 0: no file maps lp[i].vpn), the inodes in core asked first, then,
 * when some inode is not in core, the inode table streamed off the
 * media for the rest. Takes the fs lock (read). 0, or -ENOMEM. */
int dg_fs_resolve_owners(struct dg_fs *fs, struct dg_lost_page *lp,
			 unsigned n);
/* Whether ino maps vpn at file page fpage now: what an earlier answer
 * found checked before a report names it again, since the page may have
 * been freed (the file deleted, truncated, punched, the page moved) and
 * taken by another file since. Asked of the inode in core, loading it
 * when it is not (its record and extent map read once, as naming the
 * file in the report would; later checks read nothing). Takes the fs
 * lock (read) and waits for the inode's. */
bool dg_fs_owner_holds(struct dg_fs *fs, uint64_t ino, uint64_t vpn,
		       uint64_t fpage);
/* The media half alone (skip_in_core: not the inodes in core); the
 * caller holds the fs lock. Tests call it with !skip_in_core. */
int dg_fs_owners_on_media(struct dg_fs *fs, struct dg_lost_page *lp,
			  unsigned n, bool skip_in_core);

/* ---- libcommit maps (mapped.c, stage.c) --------------------------------- */

/*
 * One libcommit map of a file range (commit_server.c). While
 * it exists the file's pages in the range are allocated and pinned (never
 * moved or freed: the map holds an open reference, so unlink frees the
 * space only at unmap), and, on a redundant volume, every 64-byte line of
 * the range has a checksum kept in memory (allocated here, freed at
 * delete; recovery never depends on them). A read-write map makes the
 * file single-writer: write(), size changes and other read-write maps get
 * -ETXTBSY/-EBUSY until it is deleted; it is recorded in the dinode
 * (map_flags) so a mount after a crash knows about it.
 */
struct dg_fmap;
#define DG_FMAP_RW 1u

/* A run of file pages contiguous on one device. */
struct dg_fmap_ext {
	uint64_t fpage;		/* first file page */
	uint64_t pages;
	uint64_t devoff;	/* byte offset on the device, page aligned */
	uint32_t dev;		/* device index, or DG_FMAP_HOLE */
};
/* A hole of a read-only map: no device, devoff 0, reads as zeros. */
#define DG_FMAP_HOLE UINT32_MAX

/* New bytes for [off, off + len) of the file: off and len multiples of
 * DG_LINE_SIZE, within one page. */
struct dg_fmap_run {
	uint64_t off;
	uint32_t len;
	const void *data;
};

/* Map [off, off + len) (off page aligned, len > 0, rounded up to pages).
 * A read-write map past the end of the file grows it to off + len, and
 * its holes are filled with zeroed pages first; a read-only one may not
 * reach past the last page and never allocates: its holes are extents
 * of DG_FMAP_HOLE. -EBUSY: another read-write map is open. */
int dg_fmap_new(struct dg_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		unsigned flags, struct dg_fmap **mp);
/* Unpin, drop the line checksums, clear the media record. NULL is fine. */
void dg_fmap_delete(struct dg_fmap *m);
void dg_fmap_extents(const struct dg_fmap *m, const struct dg_fmap_ext **ext,
		     unsigned *n);
uint64_t dg_fmap_ino(const struct dg_fmap *m);
/*
 * Apply all runs in ONE dg_apply() (atomic, G4). The lines a run
 * overwrites are first checked against their line checksums; a mismatch
 * is repaired through the read path (dg_read) before anything is applied,
 * so corruption is never folded into new parity; pages an earlier verify
 * found bad are repaired too. Bytes past the end of the file are stored
 * as zeros. -E2BIG when the set exceeds what one dg_apply() carries,
 * -EINVAL for runs outside the map or not line aligned, -EIO when an old
 * line cannot be repaired.
 */
int dg_fmap_commit(struct dg_fmap *m, const struct dg_fmap_run *runs,
		   unsigned n);
/* Check the media lines of [off, off + len) against their line
 * checksums. Returns the number of bad lines (>= 0; *bad_off gets the
 * first bad file offset when > 0), -EOPNOTSUPP without redundancy. */
int dg_fmap_verify(struct dg_fmap *m, uint64_t off, uint64_t len,
		   uint64_t *bad_off);
/*
 * Staged syncs (stage.c): a sync larger than one dg_apply(), still
 * atomic. dg_fstage_new() begins one for a read-write map; each
 * dg_fstage_add() stages runs (dg_fmap_commit()'s rules; durable, the
 * file untouched); dg_fstage_publish() makes them the file's contents
 * in one commit point and applies them, returning 0 once all of it is
 * durable with checksums and parity; it frees the stage either way.
 * dg_fstage_abort() drops an unpublished stage. -E2BIG from new() on
 * a volume without DG_FEAT_INCOMPAT_STAGED_SYNC; -ENOSPC when the stage
 * does not fit the free space (nothing applied).
 */
struct dg_fstage;
bool dg_fstage_supported(const struct dg_fs *fs);
int dg_fstage_new(struct dg_fmap *m, struct dg_fstage **sp);
int dg_fstage_add(struct dg_fstage *s, const struct dg_fmap_run *runs,
		  unsigned n);
int dg_fstage_publish(struct dg_fstage *s);
void dg_fstage_abort(struct dg_fstage *s);


#endif /* DG_FS_H */
