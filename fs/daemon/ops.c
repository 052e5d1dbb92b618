// SPDX-License-Identifier: MIT
/* ops.c -- FUSE low-level operations: decode, call the fs once, reply */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon.h"

static struct dg_daemon *dd_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Engine results become FUSE replies in one place: every
 * error reply, and every bare 0, goes through here (ret is 0 or a
 * negative errno). */
static void reply_err(fuse_req_t req, int ret)
{
	/* EUCLEAN reaches applications as EIO: the structure is damaged. */
	fuse_reply_err(req, ret == -EUCLEAN ? EIO : -ret);
}

/* dg_cred.in_group: the caller's supplementary groups, from /proc. */
static bool req_in_group(const struct dg_cred *cr, uint32_t gid)
{
	gid_t list[256];
	int n = fuse_req_getgroups(cr->ctx, 256, list);

	for (int i = 0; i < n && i < 256; i++)
		if (list[i] == gid)
			return true;
	return false;
}

/* Who sends req. uid 0 stands for CAP_FSETID: the protocol does not
 * carry capabilities. */
static struct dg_cred req_cred(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	return (struct dg_cred){ .uid = ctx->uid, .gid = ctx->gid,
				 .fsetid = ctx->uid == 0,
				 .umask = dd_of(req)->acl ? (int32_t)ctx->umask
							  : -1,
				 .in_group = req_in_group, .ctx = req };
}

static void to_stat(const struct dg_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)(a->blocks * (DG_PAGE_SIZE / 512));
	st->st_blksize = DG_PAGE_SIZE;
	st->st_rdev = a->rdev;
	st->st_atim = a->atime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->ctime;
}

static void reply_entry(fuse_req_t req, int ret, const struct dg_attr *a)
{
	struct fuse_entry_param e;
	struct dg_daemon *dd = dd_of(req);

	if (ret) {
		reply_err(req, ret);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = a->ino;
	e.generation = a->generation;
	e.attr_timeout = dd->timeout;
	e.entry_timeout = dd->timeout;
	to_stat(a, &e.attr);
	if (fuse_reply_entry(req, &e) == -ENOENT)
		dg_fs_forget(dd->fs, a->ino, 1); /* interrupted */
}

static void reply_attr(fuse_req_t req, int ret, const struct dg_attr *a)
{
	struct stat st;

	if (ret) {
		reply_err(req, ret);
		return;
	}
	to_stat(a, &st);
	fuse_reply_attr(req, &st, dd_of(req)->timeout);
}

/* -o writeback: commit what the hold keeps of ino before a request
 * that must see it on the media (wb_hold.c). An error stays for the
 * file's next fsync or flush. */
static void wb_drain(struct dg_daemon *dd, fuse_ino_t ino)
{
	if (dd->wb_on && dg_wb_holds(&dd->wb, ino))
		dg_wb_drain(&dd->wb, ino, false);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct dg_daemon *dd = userdata;

	if (dd->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	/* POSIX ACLs: the kernel enforces them and leaves to us keeping
	 * them one truth with the mode and inheriting default ACLs (acl.c),
	 * for which the umask must reach us unapplied (DONT_MASK). */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) &&
	    (conn->capable & FUSE_CAP_DONT_MASK)) {
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
		dd->acl = true;
		dg_fs_xattr_acl(dd->fs, true);
	}
	/* File handles (name_to_handle_at, NFS): node ids are inode
	 * numbers with the slot's generation, and lookups of "." and ".."
	 * by node id are answered (dg_fs_lookup). */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* We clear setuid/setgid/capabilities on write ourselves. Only V2
	 * spares the kernel a GETXATTR round trip before every write; an
	 * old libfuse gets it offered by killpriv_v2.c. */
	if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV)
		conn->want |= FUSE_CAP_HANDLE_KILLPRIV;
#ifdef FUSE_CAP_HANDLE_KILLPRIV_V2
	if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV_V2)
		conn->want |= FUSE_CAP_HANDLE_KILLPRIV_V2;
#endif
	/* Fewer, larger requests: one journal entry carries up to 1 MiB. */
	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dg_attr a;
	int ret = dg_fs_lookup(dd_of(req)->fs, parent, name, &a);

	if (ret == -ENOENT) {
		/* A negative entry the kernel may cache. */
		struct fuse_entry_param e = { 0 };

		e.entry_timeout = dd_of(req)->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry(req, ret, &a);
}

/* The last forget may free an unlinked inode: nothing of it may be held
 * past that, and its error is dropped with it. Only an error of its own
 * batches (ended by epoch): another thread may reuse the number for a
 * new file as soon as it is freed, and write and fail a batch of it
 * before the check below. */
static void forget_one(struct dg_daemon *dd, fuse_ino_t ino, uint64_t n)
{
	bool known = dd->wb_on && dg_wb_knows(&dd->wb, ino);
	uint64_t epoch = 0;

	if (known) {
		wb_drain(dd, ino);
		epoch = dg_wb_epoch(&dd->wb);
	}
	dg_fs_forget(dd->fs, ino, n);
	/* Freed by the forget? The slot's bit says, reading nothing: a
	 * getattr would load the inode the forget just let go. */
	if (known && !dg_fs_ino_in_use(dd->fs, ino))
		dg_wb_forget_err(&dd->wb, ino, epoch);
}

/*
 * ino was just given to a new file, not yet told to the kernel: what the
 * hold kept under the number was an older file's. Its error must not be
 * told to the new one's fsync: the older inode may have been freed by a
 * release or a map's end, after its last forget, with the error still
 * kept (forget_one() drops it only when the forget frees the inode).
 */
static void wb_new_ino(struct dg_daemon *dd, uint64_t ino)
{
	if (dd->wb_on && dg_wb_knows(&dd->wb, ino))
		dg_wb_take_err(&dd->wb, ino);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(dd_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		forget_one(dd_of(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct dg_daemon *dd = dd_of(req);
	/* The size counts what the hold keeps of the file: its end read
	 * first, so a batch committed in between is in the size below. */
	uint64_t end = dd->wb_on ? dg_wb_end(&dd->wb, ino) : 0;
	struct dg_attr a;
	int ret = dg_fs_getattr(dd->fs, ino, &a);

	(void)fi;
	if (!ret && end > a.size)
		a.size = end;
	reply_attr(req, ret, &a);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *st,
		       int to_set, struct fuse_file_info *fi)
{
	struct dg_cred cr = req_cred(req);
	struct dg_setattr sa = { 0 };
	struct dg_attr a;
	int ret;

	(void)fi;
	/* KILLPRIV: a chown or a truncate drops setuid/setgid/capabilities
	 * in its own transaction, as the kernel would have (setid.c has the
	 * rules). */
	sa.cr = &cr;
	if (to_set & FUSE_SET_ATTR_MODE)
		sa.valid |= DG_SET_MODE, sa.mode = st->st_mode;
	if (to_set & FUSE_SET_ATTR_UID)
		sa.valid |= DG_SET_UID, sa.uid = st->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		sa.valid |= DG_SET_GID, sa.gid = st->st_gid;
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.valid |= DG_SET_SIZE, sa.size = (uint64_t)st->st_size;
		/* Held bytes land before the new size, not after it. */
		wb_drain(dd_of(req), ino);
	}
	if (to_set & FUSE_SET_ATTR_ATIME)
		sa.valid |= DG_SET_ATIME, sa.atime = st->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME)
		sa.valid |= DG_SET_MTIME, sa.mtime = st->st_mtim;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		sa.valid |= DG_SET_ATIME_NOW;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		sa.valid |= DG_SET_MTIME_NOW;
	if (to_set & FUSE_SET_ATTR_CTIME)
		sa.valid |= DG_SET_CTIME, sa.ctime = st->st_ctim;
	ret = dg_fs_setattr(dd_of(req)->fs, ino, &sa, &a);
	/* With the writeback cache the kernel writes an evicted inode's
	 * times back after its unlink freed it (reaped, dg_inode_drop_last):
	 * nothing is left to keep them in, and an error would be kept as a
	 * writeback error that syncfs(2) reports. */
	if (ret == -ENOENT && dd_of(req)->writeback &&
	    !(sa.valid & ~(DG_SET_ATIME | DG_SET_MTIME | DG_SET_CTIME |
			   DG_SET_ATIME_NOW | DG_SET_MTIME_NOW)) &&
	    !dg_fs_getattr(dd_of(req)->fs, ino, &a) && a.nlink == 0)
		ret = 0;
	reply_attr(req, ret, &a);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[DG_PAGE_SIZE + 1];
	int ret = dg_fs_readlink(dd_of(req)->fs, ino, buf, DG_PAGE_SIZE);

	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	buf[ret] = 0;
	fuse_reply_readlink(req, buf);
}

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev)
{
	struct dg_cred cr = req_cred(req);
	struct dg_attr a;
	int ret = dg_fs_create(dd_of(req)->fs, parent, name, mode, rdev, &cr,
			       &a);

	if (!ret)
		wb_new_ino(dd_of(req), a.ino);
	reply_entry(req, ret, &a);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	make_node(req, parent, name, mode, rdev);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | (mode & 07777), 0);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	struct dg_cred cr = req_cred(req);
	struct dg_attr a;
	int ret = dg_fs_symlink(dd_of(req)->fs, parent, name, link, &cr, &a);

	if (!ret)
		wb_new_ino(dd_of(req), a.ino);
	reply_entry(req, ret, &a);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent,
		    const char *name)
{
	struct dg_attr a;

	reply_entry(req, dg_fs_link(dd_of(req)->fs, ino, parent, name, &a), &a);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_err(req, dg_fs_unlink(dd_of(req)->fs, parent, name));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_err(req, dg_fs_rmdir(dd_of(req)->fs, parent, name));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	reply_err(req, dg_fs_rename(dd_of(req)->fs, parent, name, newparent,
				    newname, flags));
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dg_cred cr = req_cred(req);
	int ret = 0;

	/* An O_TRUNC open truncates here (atomic_o_trunc), with the same
	 * privilege drop as truncate(2), in the same transaction; held
	 * bytes land before it. */
	if (fi->flags & O_TRUNC)
		wb_drain(dd_of(req), ino);
	ret = dg_fs_open_ino(dd_of(req)->fs, ino, (fi->flags & O_TRUNC) != 0,
			     &cr);
	if (ret) {
		reply_err(req, ret);
		return;
	}
	/* Every change goes through this daemon: cached pages stay valid. */
	fi->keep_cache = 1;
	if (fuse_reply_open(req, fi) == -ENOENT)
		dg_fs_release(dd_of(req)->fs, ino);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct dg_cred cr = req_cred(req);
	struct dg_daemon *dd = dd_of(req);
	struct fuse_entry_param e = { 0 };
	struct dg_attr a;
	int ret = dg_fs_create_open(dd->fs, parent, name,
				    S_IFREG | (mode & 07777), &cr, &a);

	if (ret) {
		reply_err(req, ret);
		return;
	}
	wb_new_ino(dd, a.ino);
	e.ino = a.ino;
	e.generation = a.generation;
	e.attr_timeout = e.entry_timeout = dd->timeout;
	to_stat(&a, &e.attr);
	fi->keep_cache = 1;
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		dg_fs_release(dd->fs, a.ino);
		dg_fs_forget(dd->fs, a.ino, 1);
	}
}

/*
 * A page-aligned read buffer per worker thread, reused across reads and
 * freed when libfuse ends the thread.
 */
struct rbuf {
	void *mem;
	size_t size;
};
static pthread_key_t rbuf_key;
static pthread_once_t rbuf_once = PTHREAD_ONCE_INIT;

static void rbuf_free(void *p)
{
	struct rbuf *b = p;

	free(b->mem);
	free(b);
}

static void rbuf_init(void)
{
	pthread_key_create(&rbuf_key, rbuf_free);
}

static void *rbuf_get(size_t need)
{
	struct rbuf *b;

	pthread_once(&rbuf_once, rbuf_init);
	b = pthread_getspecific(rbuf_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || pthread_setspecific(rbuf_key, b)) {
			free(b);
			return NULL;
		}
	}
	if (need > b->size) {
		need = (need + DG_PAGE_SIZE - 1) & ~(size_t)(DG_PAGE_SIZE - 1);
		free(b->mem);
		b->mem = aligned_alloc(DG_PAGE_SIZE, need);
		b->size = b->mem ? need : 0;
	}
	return b->mem;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	void *buf = rbuf_get(size + 2 * DG_PAGE_SIZE);
	const void *data;
	ssize_t n;

	if (!buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	if (!(fi->flags & O_DIRECT))
		dg_dio_note(&dd_of(req)->dio, ino);
	/* Reads see what is held: committed first. */
	wb_drain(dd_of(req), ino);
	n = dg_fs_read(dd_of(req)->fs, ino, (uint64_t)off, size, buf, &data);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_buf(req, data, (size_t)n);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	ssize_t n;
	struct dg_cred cr = req_cred(req);
	bool direct = (fi->flags & O_DIRECT) && !fi->writepage;

	if (!direct)
		dg_dio_note(&dd_of(req)->dio, ino);
	/* -o writeback: a page the kernel writes back is held, committed
	 * with others at fsync, at the commit interval or when the hold is
	 * full. Any other write (O_DIRECT, a write-through) is committed
	 * now, after what is held of the file. */
	if (dd_of(req)->wb_on) {
		if (fi->writepage &&
		    !dg_wb_put(&dd_of(req)->wb, ino, (uint64_t)off, buf, size)) {
			fuse_reply_write(req, size);
			return;
		}
		wb_drain(dd_of(req), ino);
	}
	/* KILLPRIV_V2: dropping set-ID bits and capabilities on write is
	 * ours, in the write's own transaction. Not for pages written back
	 * from the kernel's cache: for a file with bits to drop the kernel
	 * writes through, and a writeback does not carry the writer's
	 * credentials. */
	if (!fi->writepage)
		n = dg_fs_write_unpriv(dd_of(req)->fs, ino, (uint64_t)off, buf,
				       size, &cr);
	else
		n = dg_fs_write(dd_of(req)->fs, ino, (uint64_t)off, buf, size);
	/* An O_DIRECT write leaves no stale cached pages behind, also when
	 * it was asynchronous (dio_inval.c). */
	if (n > 0 && direct &&
	    dg_dio_inval(&dd_of(req)->dio, dd_of(req)->se, ino, off, n) ==
	    -ETIMEDOUT)
		dg_log(DG_LOG_DEBUG, "ino %" PRIu64 ": cache invalidation "
		       "after a direct write still waits on the kernel",
		       (uint64_t)ino);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* close(): in -o writeback, not a sync (as on ext4), but where an
 * earlier batch's failure of the file is told, if no fsync told it.
 * Told, not forgotten: another descriptor's close (a backup reading the
 * file) must not take it from the writer's fsync. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dg_daemon *dd = dd_of(req);

	(void)fi;
	reply_err(req, dd->wb_on ? dg_wb_peek_err(&dd->wb, ino) : 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct dg_daemon *dd = dd_of(req);

	(void)fi;
	/* The last release of an unlinked file frees it: commit (or see
	 * fail) what is held of it before. */
	if (dd->wb_on && dg_wb_holds(&dd->wb, ino)) {
		struct dg_attr a;

		if (dg_fs_getattr(dd->fs, ino, &a) || a.nlink == 0)
			dg_wb_drain(&dd->wb, ino, false);
	}
	dg_fs_release(dd->fs, ino);
	reply_err(req, 0);
}

/* Data and metadata are durable when an operation returns (fsys.h); only
 * the times of overwritten files wait for fsync. In -o writeback, the
 * bytes held of the file are committed first, and a failure of an
 * earlier batch of it is told here. */
static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct dg_daemon *dd = dd_of(req);
	int held = dd->wb_on ? dg_wb_drain(&dd->wb, ino, true) : 0;
	int ret = dg_fs_fsync(dd->fs, ino);

	(void)datasync;
	(void)fi;
	reply_err(req, held ? held : ret);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	int ret = dg_fs_opendir(dd_of(req)->fs, ino);

	if (ret)
		reply_err(req, ret);
	else
		fuse_reply_open(req, fi);
}

struct rd_ctx {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	bool plus;
	double timeout;
};

static int fill(void *arg, const char *name, const struct dg_attr *a,
		uint64_t next)
{
	struct rd_ctx *c = arg;
	size_t n;

	if (c->plus) {
		struct fuse_entry_param e = { 0 };
		bool dot = !strcmp(name, ".") || !strcmp(name, "..");

		to_stat(a, &e.attr);
		/* nlink 0: an entry whose inode could not be read (its
		 * attributes unknown): node id 0 hands the kernel the name
		 * alone, and a stat of it looks it up (EIO). */
		if (!dot && a->nlink) {
			e.ino = a->ino;
			e.generation = a->generation;
			e.attr_timeout = e.entry_timeout = c->timeout;
		}
		n = fuse_add_direntry_plus(c->req, c->buf + c->used,
					   c->size - c->used, name, &e,
					   (off_t)next);
	} else {
		struct stat st = { .st_ino = a->ino, .st_mode = a->mode };

		n = fuse_add_direntry(c->req, c->buf + c->used,
				      c->size - c->used, name, &st,
				      (off_t)next);
	}
	if (n > c->size - c->used)
		return 1;
	c->used += n;
	return 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       bool plus)
{
	struct rd_ctx c = { req, malloc(size), size, 0, plus,
			    dd_of(req)->timeout };
	int ret;

	if (!c.buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	ret = dg_fs_readdir(dd_of(req)->fs, ino, (uint64_t)off, plus, fill, &c);
	if (ret)
		reply_err(req, ret);
	else
		fuse_reply_buf(req, c.buf, c.used);
	free(c.buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;

	(void)ino;
	dg_fs_statfs(dd_of(req)->fs, &st);
	fuse_reply_statfs(req, &st);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	struct dg_cred cr = req_cred(req);

	reply_err(req, dg_fs_xattr_set(dd_of(req)->fs, ino, name, value, size,
				       flags, &cr));
}

static void reply_xattr(fuse_req_t req, int ret, const void *buf, size_t size)
{
	if (ret < 0)
		reply_err(req, ret);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	int ret;

	if (size && !buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	ret = dg_fs_xattr_get(dd_of(req)->fs, ino, name, buf, size);
	reply_xattr(req, ret, buf, size);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	int ret;

	if (size && !buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	ret = dg_fs_listxattr(dd_of(req)->fs, ino, buf, size);
	reply_xattr(req, ret, buf, size);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	reply_err(req, dg_fs_removexattr(dd_of(req)->fs, ino, name));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			 off_t offset, off_t length, struct fuse_file_info *fi)
{
	(void)fi;
	wb_drain(dd_of(req), ino);
	reply_err(req, dg_fs_fallocate(dd_of(req)->fs, ino, mode, offset,
				       length));
}

/*
 * SEEK_DATA/SEEK_HOLE, so that cp, tar and backup tools skip holes. The
 * kernel asks without writing its dirty pages back first: with the
 * writeback cache the extent map may lack data that is written, and a
 * hole reported there would make a copy lose it. ENOSYS makes the
 * kernel answer for this mount from the size alone (all data), as
 * before.
 */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	uint64_t pos;
	int ret;

	(void)fi;
	if (dd_of(req)->writeback) {
		reply_err(req, -ENOSYS);
		return;
	}
	ret = dg_fs_lseek(dd_of(req)->fs, ino, off, whence, &pos);
	if (ret)
		reply_err(req, ret);
	else
		fuse_reply_lseek(req, (off_t)pos);
}

const struct fuse_lowlevel_ops dg_ll_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.link = op_link,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsync,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
	.ioctl = dg_op_ioctl,
};
