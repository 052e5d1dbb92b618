// SPDX-License-Identifier: MIT
/* commit_server.c -- the libcommit server: map, commit, verify, unmap */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "proto.h"

_Static_assert(COMMIT_FILE_MAX == DG_MAX_FILE_SIZE,
	       "libcommit and the filesystem agree on the largest file");

/*
 * The libcommit server (docs/design.md "Layers"). One socket per mounted volume; its path
 * is the xattr COMMIT_XATTR of any file. One thread per connection and
 * one map per connection: the map lives until UNMAP or until the client
 * goes away (a killed program's unsynced stores die with it; its last
 * completed sync is on the media). A malformed message gets an error
 * status and ends that connection only.
 *
 * Anyone may connect (the socket is 0666), so what one client can cost
 * the daemon is bounded (docs/local-users.md states the bound): a
 * message body is read only when its map and the protocol allow a body
 * of that size (a COMMIT without a read-write map, or larger than its
 * map could need, ends the connection unread); the bodies being held
 * count against a budget per user and one in all; each user has a
 * connection cap well below the total, and root and the mount's owner
 * pass every cap but a hard one; a connection that maps nothing is
 * closed when idle; a reply the client does not read within SEND_WAIT
 * ends the connection.
 */

#define MAX_CONNS      512	/* every unprivileged user together */
#define MAX_CONNS_UID  64	/* one unprivileged user */
#define MAX_CONNS_HARD (MAX_CONNS + 64) /* root and the owner too */
#define PAYLOAD_WAIT   10000	/* ms between the bytes of a message */
#define IDLE_WAIT      10000	/* ms a connection with no map may idle */
#define SEND_WAIT      10000	/* ms a reply may wait for the reader */
/* Message bodies held (being read or applied, or kept for the next
 * message), all connections; one unprivileged user's share. */
#define MEM_TOTAL      ((size_t)512 << 20)
#define MEM_UID	       ((size_t)256 << 20)
/* A body buffer kept from message to message (a commit of many pages
 * would otherwise be a fresh mapping, faulted in page by page, every
 * time); larger ones are freed after their message. A kept buffer
 * still counts, but between messages it is idle, and a connection that
 * needs bytes the budgets lack takes them from idle buffers first. */
#define KEEP_MAX       ((size_t)64 << 20)
/* Bytes of files one unprivileged user may hold mapped: each mapped
 * page costs the daemon about 270 bytes (line checksums, vpns). */
#define MAP_BYTES_UID  ((uint64_t)4 << 30)
#define MAP_BYTES_ALL  ((uint64_t)8 << 30)
/* Bodies this small are read into the stack: MAP, VERIFY. */
#define SMALL_BODY     64

struct conn {
	struct dg_daemon *dd;
	int fd;
	uid_t uid;
	bool priv;		/* root or the mount's owner */
	struct dg_fmap *m;
	bool rw;		/* m is a read-write map */
	uint64_t maplen;	/* bytes m covers; by conns_lock */
	/* A sync larger than one update being staged (STAGE messages so
	 * far); published by the COMMIT that ends it, dropped with the map
	 * or the connection. */
	struct dg_fstage *stage;
	/* The body buffer; bufcap counts against the budgets. While not
	 * busy (between messages) another connection may free it. All by
	 * conns_lock, but buf while busy (its own thread's). */
	uint8_t *buf;
	size_t bufcap;
	bool busy;
	struct conn *next;	/* by conns_lock */
};

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conns_cond = PTHREAD_COND_INITIALIZER;
static struct conn *conns;	/* by conns_lock */
static unsigned nconns;		/* by conns_lock */
static size_t mem_used;		/* sum of bufcap; by conns_lock */

/* What uid holds now: connections, body bytes, mapped bytes. Caller
 * holds conns_lock. */
static void uid_use(uid_t uid, unsigned *n, size_t *mem, uint64_t *mapped)
{
	*n = 0, *mem = 0, *mapped = 0;
	for (struct conn *c = conns; c; c = c->next) {
		if (c->uid != uid)
			continue;
		(*n)++;
		*mem += c->bufcap;
		*mapped += c->maplen;
	}
}

static uint64_t mapped_unpriv(void)
{
	uint64_t sum = 0;

	for (struct conn *c = conns; c; c = c->next)
		if (!c->priv)
			sum += c->maplen;
	return sum;
}

static void ms_from_now(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* Free c's buffer and give its bytes back. Caller holds conns_lock. */
static void buf_free_locked(struct conn *c)
{
	free(c->buf);
	c->buf = NULL;
	mem_used -= c->bufcap;
	c->bufcap = 0;
	pthread_cond_broadcast(&conns_cond);
}

/* Drop the connection's body buffer (its message failed, or it ends). */
static void buf_drop(struct conn *c)
{
	pthread_mutex_lock(&conns_lock);
	buf_free_locked(c);
	c->busy = false;
	pthread_mutex_unlock(&conns_lock);
}

/* The message is done: the buffer is kept idle, or freed when large. */
static void buf_done(struct conn *c)
{
	pthread_mutex_lock(&conns_lock);
	c->busy = false;
	if (c->bufcap > KEEP_MAX)
		buf_free_locked(c);
	else if (c->bufcap)
		pthread_cond_broadcast(&conns_cond); /* reclaimable now */
	pthread_mutex_unlock(&conns_lock);
}

/* Whether n more bytes for c fit the budgets. Caller holds conns_lock. */
static bool buf_fits(const struct conn *c, size_t n)
{
	unsigned k;
	size_t mine;
	uint64_t mapped;

	uid_use(c->uid, &k, &mine, &mapped);
	return mem_used + n <= MEM_TOTAL && (c->priv || mine + n <= MEM_UID);
}

/* A body buffer of at least n bytes, within the budgets: taken from the
 * idle buffers of other connections, or waited for up to PAYLOAD_WAIT.
 * -ENOMEM when none comes (the connection ends: its body stays unread).
 * The buffer is busy until buf_done() or buf_drop(). */
static int buf_get(struct conn *c, size_t n)
{
	struct timespec until;
	int ret = 0;

	pthread_mutex_lock(&conns_lock);
	c->busy = true;
	if (n <= c->bufcap) {
		pthread_mutex_unlock(&conns_lock);
		return 0;
	}
	buf_free_locked(c);
	ms_from_now(&until, PAYLOAD_WAIT);
	while (!buf_fits(c, n)) {
		for (struct conn *o = conns; o; o = o->next)
			if (o != c && !o->busy && o->bufcap)
				buf_free_locked(o);
		if (buf_fits(c, n))
			break;
		if (c->dd->stop || pthread_cond_timedwait(&conns_cond,
				&conns_lock, &until) == ETIMEDOUT) {
			ret = -ENOMEM;
			break;
		}
	}
	if (!ret) {
		mem_used += n;
		c->bufcap = n;
	}
	pthread_mutex_unlock(&conns_lock);
	if (ret)
		return ret;
	c->buf = malloc(n); /* busy: no one else touches it */
	if (!c->buf) {
		buf_drop(c);
		return -ENOMEM;
	}
	return 0;
}

/*
 * The largest body a message of this type may have on this connection
 * (proto.h): MAP and VERIFY their fixed request, UNMAP none, COMMIT and
 * STAGE only on a read-write map, at most a run and the bytes of every
 * line of it (a client never sends a line twice in one message). Sets
 * *err to the status to answer when the type takes no body here.
 */
static size_t body_max(const struct conn *c, uint16_t type, int *err)
{
	*err = 0;
	switch (type) {
	case COMMIT_MSG_MAP:
		return sizeof(struct commit_map_req);
	case COMMIT_MSG_VERIFY:
		return sizeof(struct commit_verify_req);
	case COMMIT_MSG_COMMIT:
	case COMMIT_MSG_STAGE:
		if (!c->m) {
			*err = -ENOTCONN;
			return 0;
		}
		if (!c->rw) {
			*err = -EBADF;
			return 0;
		}
		return commit_body_max(c->maplen);
	case COMMIT_MSG_UNMAP:
		return 0;
	default:
		*err = -EBADMSG; /* replies are the daemon's to send */
		return 0;
	}
}

/* Read exactly n bytes; the first read may carry descriptors. The
 * first byte may take wait_ms (-1: forever), each next one PAYLOAD_WAIT
 * and all of them together total_ms (recvmsg never blocks: poll
 * waits). Returns n, 0 at a clean EOF before
 * any byte, or -errno. */
static ssize_t recv_full(int fd, void *buf, size_t n, int *fds, int *nfds,
			 int wait_ms, uint64_t total_ms)
{
	uint64_t end = dg_now_ms() + total_ms;
	size_t got = 0;

	while (got < n) {
		char cbuf[CMSG_SPACE(sizeof(int) * 4)];
		struct iovec iov = { (char *)buf + got, n - got };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		ssize_t r;

		{
			struct pollfd p = { fd, POLLIN, 0 };
			uint64_t now = dg_now_ms();
			int ms = wait_ms;

			if (now >= end)
				return -ETIMEDOUT;
			if (ms >= 0 && end - now < (uint64_t)ms)
				ms = (int)(end - now);
			r = poll(&p, 1, ms); /* ms < 0: until a byte comes */
			if (r < 0 && errno == EINTR)
				continue;
			if (r != 1)
				return -ETIMEDOUT;
		}
		r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -errno;
		commit_take_fds(&mh, fds, nfds, 1);
		if (r == 0)
			return got ? -EPROTO : 0;
		got += (size_t)r;
		wait_ms = PAYLOAD_WAIT;
	}
	return (ssize_t)n;
}

/* Send all of buf, never blocking for longer than SEND_WAIT on a client
 * that does not read: it would hold its connection's thread and its
 * map. The daemon never sends descriptors (proto.h). */
static int send_full(int fd, const void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = send(fd, (const char *)buf + done, n - done,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (r < 0 && errno == EAGAIN) {
			struct pollfd p = { fd, POLLOUT, 0 };

			r = poll(&p, 1, SEND_WAIT);
			if (r == 0)
				return -ETIMEDOUT;
			if (r > 0 && !(p.revents & POLLOUT))
				return -EPIPE;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		done += (size_t)r;
	}
	return 0;
}

static int send_status(int fd, uint32_t seq, int status, uint64_t value)
{
	struct {
		struct commit_hdr h;
		struct commit_status_rep s;
	} msg;

	commit_hdr_encode(&msg.h, COMMIT_MSG_STATUS, sizeof(msg.s), seq);
	msg.s = (struct commit_status_rep){ status, 0, value };
	return send_full(fd, &msg, sizeof(msg));
}

/* The mount's device number, for checking a client's descriptor. Asked
 * lazily: stat() of our own mountpoint needs the FUSE loop running. */
static int mount_dev(struct dg_daemon *dd, dev_t *dev)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static dev_t cached;
	static bool have;
	struct stat st;
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (!have) {
		if (stat(dd->mountpoint, &st) < 0)
			ret = -errno;
		else
			cached = st.st_dev, have = true;
	}
	*dev = cached;
	pthread_mutex_unlock(&lock);
	return ret;
}

/*
 * Describe device d for a client: its path and identity, never a
 * descriptor. The client opens the path with its own credentials (so it
 * reads nothing the kernel would not let it read anyway) and checks the
 * identity; a device it cannot open makes it map the file through the
 * mount instead. The path comes from /proc/self/fd: absolute, and the
 * one the daemon really opened.
 */
static int describe_dev(struct dg_daemon *dd, unsigned d, struct commit_dev *v)
{
	char lp[64];
	struct stat st;
	ssize_t n;
	int fd;

	fd = dg_vol_dev_open_ro(dd->vol, d);
	if (fd < 0)
		return fd;
	memset(v, 0, sizeof(*v));
	v->dev = d;
	if (fstat(fd, &st) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	v->st_dev = st.st_dev;
	v->st_ino = st.st_ino;
	snprintf(lp, sizeof(lp), "/proc/self/fd/%d", fd);
	n = readlink(lp, v->path, sizeof(v->path));
	close(fd);
	if (n <= 0 || (size_t)n >= sizeof(v->path) || v->path[0] != '/' ||
	    memchr(v->path, 0, (size_t)n))
		n = 0; /* no usable path: the client maps through the mount */
	memset(v->path + n, 0, sizeof(v->path) - (size_t)n);
	v->pathlen = (uint32_t)n;
	return 0;
}

/* Hold bytes of mapped file against the map budgets (0: give them
 * back). -ENOMEM past them: one user's maps cannot take the memory their
 * line checksums need from everyone else. */
static int map_reserve(struct conn *c, uint64_t bytes)
{
	unsigned n;
	size_t mem;
	uint64_t mine;
	int ret = 0;

	pthread_mutex_lock(&conns_lock);
	c->maplen = 0;
	uid_use(c->uid, &n, &mem, &mine);
	if (!c->priv && (mine + bytes > MAP_BYTES_UID ||
			 mapped_unpriv() + bytes > MAP_BYTES_ALL))
		ret = -ENOMEM;
	else
		c->maplen = bytes;
	pthread_mutex_unlock(&conns_lock);
	return ret;
}

/*
 * MAP: the file is named by a descriptor the client opened, so every
 * permission decision is the kernel's (default_permissions: modes, ACLs,
 * the open mode): a read-write map needs an O_RDWR descriptor, a
 * read-only one an O_RDONLY or O_RDWR descriptor, and an O_PATH
 * descriptor (which anyone may open) is refused. The daemon does not
 * look at the peer's credentials: a descriptor passed on is a
 * capability, as it is for read() and write(). The reply passes no
 * descriptor (describe_dev()).
 */
static int do_map(struct conn *c, const struct commit_map_req *rq, int ffd,
		  uint32_t seq)
{
	struct dg_daemon *dd = c->dd;
	struct commit_map_rep rep = { 0 };
	const struct dg_fmap_ext *ext;
	struct dg_attr a;
	struct stat st;
	dev_t mdev;
	bool rw = rq->flags & COMMIT_REQ_RW;
	int acc, ret;
	unsigned next, ndevs = 0;
	uint64_t len = rq->len;
	struct commit_hdr h;
	uint8_t *buf = NULL;
	size_t blen, at;

	if (ffd < 0)
		return -EBADF;
	if (c->m)
		return -EISCONN;
	if (fstat(ffd, &st) < 0)
		return -errno;
	ret = mount_dev(dd, &mdev);
	if (ret)
		return ret;
	if (st.st_dev != mdev || !S_ISREG(st.st_mode))
		return -EXDEV;
	acc = fcntl(ffd, F_GETFL);
	if (acc < 0)
		return -errno;
	if (acc & O_PATH)
		return -EBADF;
	acc &= O_ACCMODE;
	if (acc == O_WRONLY || (rw && acc != O_RDWR))
		return -EBADF;
	/* -o writeback: the map reads the pages where they are, so what
	 * the hold keeps of the file is committed first. */
	if (dd->wb_on && dg_wb_holds(&dd->wb, st.st_ino))
		dg_wb_drain(&dd->wb, st.st_ino, false);
	ret = dg_fs_getattr(dd->fs, st.st_ino, &a);
	if (ret)
		return ret;
	if (len == 0) {
		if (a.size <= rq->off)
			return -EINVAL;
		len = a.size - rq->off;
	}
	ret = map_reserve(c, (len + DG_PAGE_SIZE - 1) / DG_PAGE_SIZE *
			  DG_PAGE_SIZE);
	if (ret)
		return ret;
	ret = dg_fmap_new(dd->fs, st.st_ino, rq->off, len,
			  rw ? DG_FMAP_RW : 0, &c->m);
	if (ret) {
		map_reserve(c, 0);
		return ret;
	}
	c->rw = rw;
	dg_fmap_extents(c->m, &ext, &next);
	for (unsigned i = 0; i < next; i++)
		if (ext[i].dev != DG_FMAP_HOLE) /* COMMIT_EXT_HOLE on the wire */
			rep.dev_mask |= 1u << ext[i].dev;
	ndevs = (unsigned)__builtin_popcount(rep.dev_mask);
	rep.next = next;
	rep.off = rq->off;
	rep.len = (rq->off + len + DG_PAGE_SIZE - 1) / DG_PAGE_SIZE *
		  DG_PAGE_SIZE - rq->off;
	rep.size = a.size > rq->off + len ? a.size : rq->off + len;
	if (!rw)
		rep.size = a.size;
	blen = sizeof(h) + sizeof(rep) + (size_t)next * sizeof(struct commit_ext) +
	       ndevs * sizeof(struct commit_dev);
	if (blen - sizeof(h) > COMMIT_MSG_MAX) {
		ret = -EFBIG;
		goto fail;
	}
	buf = malloc(blen);
	if (!buf) {
		ret = -ENOMEM;
		goto fail;
	}
	commit_hdr_encode(&h, COMMIT_MSG_MAP_REP, (uint32_t)(blen - sizeof(h)),
			  seq);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &rep, sizeof(rep));
	at = sizeof(h) + sizeof(rep);
	for (unsigned i = 0; i < next; i++, at += sizeof(struct commit_ext)) {
		struct commit_ext e = { ext[i].fpage, ext[i].pages,
					ext[i].devoff, ext[i].dev, 0 };

		memcpy(buf + at, &e, sizeof(e));
	}
	for (unsigned d = 0; d < COMMIT_MAX_DEVS; d++) {
		struct commit_dev v;

		if (!(rep.dev_mask & (1u << d)))
			continue;
		ret = describe_dev(dd, d, &v);
		if (ret)
			goto fail;
		memcpy(buf + at, &v, sizeof(v));
		at += sizeof(v);
	}
	if (rep.size != a.size && dd->se)
		/* The file grew: a client that maps it through the mount
		 * must see the new size (attributes only: off < 0). */
		fuse_lowlevel_notify_inval_inode(dd->se, st.st_ino, -1, 0);
	ret = send_full(c->fd, buf, blen);
	free(buf);
	if (ret) {
		dg_fmap_delete(c->m);
		c->m = NULL;
		map_reserve(c, 0);
		return 1; /* the peer is gone: nothing to reply to */
	}
	dg_log(DG_LOG_DEBUG, "libcommit map ino=%" PRIu64 " off=%" PRIu64
	       " len=%" PRIu64 " rw=%d extents=%u", (uint64_t)st.st_ino,
	       rq->off, rep.len, rw, next);
	return 0;
fail:
	free(buf);
	dg_fmap_delete(c->m);
	c->m = NULL;
	map_reserve(c, 0);
	return ret;
}

/* Stage runs into the connection's stage, beginning one if needed. */
static int stage_runs(struct conn *c, const struct dg_fmap_run *r,
		      uint32_t nruns)
{
	int ret = 0;

	if (!c->stage)
		ret = dg_fstage_new(c->m, &c->stage);
	if (!ret)
		ret = dg_fstage_add(c->stage, r, nruns);
	return ret;
}

/*
 * COMMIT (more = false) ends a sync: alone it is applied in one update
 * when it fits one, else staged and published (dg_fstage_*); after
 * STAGE messages its runs join theirs and the whole stage is published.
 * STAGE (more = true) stages its runs and applies nothing. Any error
 * drops the stage: nothing of that sync is applied.
 */
static int do_commit(struct conn *c, const uint8_t *p, size_t n, bool more)
{
	const struct commit_run *runs;
	const uint8_t *data;
	struct dg_fmap_run *r = NULL;
	uint64_t lo = UINT64_MAX, hi = 0, bytes = 0;
	uint32_t nruns = 0;
	bool staged = c->stage != NULL;
	int ret;

	if (!c->m)
		return -ENOTCONN;
	ret = commit_commit_decode(p, n, &nruns, &runs, &data);
	if (ret)
		goto out;
	if (nruns == 0 && (more || !staged)) {
		/* An empty STAGE: the client abandons its sync. */
		dg_fstage_abort(c->stage);
		c->stage = NULL;
		return 0;
	}
	r = malloc((nruns ? nruns : 1) * sizeof(*r));
	if (!r) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < nruns; i++) {
		r[i] = (struct dg_fmap_run){ runs[i].off, runs[i].len, data };
		data += runs[i].len;
		bytes += runs[i].len;
		if (runs[i].off < lo)
			lo = runs[i].off;
		if (runs[i].off + runs[i].len > hi)
			hi = runs[i].off + runs[i].len;
	}
	if (more) {
		ret = stage_runs(c, r, nruns);
		goto out;
	}
	if (!staged) {
		ret = dg_fmap_commit(c->m, r, nruns);
		if (ret != -E2BIG || !dg_fstage_supported(c->dd->fs))
			goto out;
		staged = true; /* too large for one update: stage it */
	}
	ret = stage_runs(c, r, nruns);
	if (!ret) {
		ret = dg_fstage_publish(c->stage);
		c->stage = NULL; /* published or dropped */
	}
out:
	free(r);
	if (ret && c->stage) {
		dg_fstage_abort(c->stage);
		c->stage = NULL;
	}
	/* The tests read this to see that only changed lines travel. */
	dg_log(DG_LOG_DEBUG, "libcommit %s ino=%" PRIu64 " runs=%" PRIu32
	       " bytes=%" PRIu64 "%s: %d", more ? "stage" : "commit",
	       c->m ? dg_fmap_ino(c->m) : 0, nruns, bytes,
	       staged && !more ? " (staged)" : "", ret);
	if (ret == 0 && !more && c->dd->se) {
		/* Reads through the mount must see the commit: drop what
		 * the kernel cached of the range (-ENOENT: nothing); a
		 * staged sync may have changed any page of the map. */
		if (staged)
			lo = 0, hi = 0;
		fuse_lowlevel_notify_inval_inode(c->dd->se,
						 dg_fmap_ino(c->m), (off_t)lo,
						 (off_t)(hi - lo));
	}
	return ret;
}

/* Drop the connection's map and any stage of it. */
static void drop_map(struct conn *c)
{
	dg_fstage_abort(c->stage);
	c->stage = NULL;
	dg_fmap_delete(c->m);
	c->m = NULL;
	c->rw = false;
	map_reserve(c, 0);
}

/* Serve one message. Returns > 0 to end the connection quietly, < 0 to
 * end it after an error status, 0 to go on. */
static int serve_one(struct conn *c)
{
	struct commit_hdr h = { 0 };
	uint64_t small[SMALL_BODY / 8];	/* aligned, as malloc's */
	uint8_t hb[sizeof(h)], *p = NULL;
	int ffd[1] = { -1 }, nf = 0, ret;
	size_t max;
	ssize_t r;

	/* A client with a map may sync seldom; one without is just
	 * connecting, or holding a connection for nothing. */
	r = recv_full(c->fd, hb, sizeof(hb), ffd, &nf,
		      c->m ? -1 : IDLE_WAIT, c->m ? UINT64_MAX / 2 : IDLE_WAIT +
		      PAYLOAD_WAIT);
	if (r <= 0) {
		ret = 1;
		goto end;
	}
	ret = commit_hdr_decode(hb, sizeof(hb), &h);
	if (ret) {
		send_status(c->fd, 0, ret, 0);
		goto end;
	}
	/* Never read a body the protocol or the map does not allow: a
	 * header alone must not make the daemon hold memory. */
	max = body_max(c, h.type, &ret);
	if (!ret && h.len > max)
		ret = h.type == COMMIT_MSG_COMMIT ||
		      h.type == COMMIT_MSG_STAGE ? -EMSGSIZE : -EBADMSG;
	if (ret) {
		/* The connection ends, its body unread (the stream cannot
		 * be resynchronised) and its buffer freed. */
		send_status(c->fd, h.seq, ret, 0);
		goto end_body;
	}
	if (h.len) {
		if (h.len <= sizeof(small)) {
			p = (uint8_t *)small;
		} else {
			ret = buf_get(c, h.len);
			if (ret) {
				send_status(c->fd, h.seq, ret, 0);
				goto end_body;
			}
			p = c->buf;
		}
		/* At least 16 MiB/s: a body trickled in holds its bytes. */
		r = recv_full(c->fd, p, h.len, NULL, NULL, PAYLOAD_WAIT,
			      30000 + h.len / (16u << 10));
		if (r != (ssize_t)h.len) {
			ret = 1;
			goto end;
		}
	}
	switch (h.type) {
	case COMMIT_MSG_MAP: {
		struct commit_map_req rq;

		ret = commit_map_req_decode(p, h.len, &rq);
		if (!ret)
			ret = do_map(c, &rq, nf ? ffd[0] : -1, h.seq);
		if (ret < 0 && send_status(c->fd, h.seq, ret, 0))
			ret = 1;
		/* A refused map leaves the connection usable. */
		if (ret < 0 && ret != -EBADMSG && ret != -EINVAL)
			ret = 0;
		break;
	}
	case COMMIT_MSG_COMMIT:
	case COMMIT_MSG_STAGE:
		ret = do_commit(c, p, h.len, h.type == COMMIT_MSG_STAGE);
		if (send_status(c->fd, h.seq, ret, 0))
			ret = 1;
		else if (ret != -EBADMSG && ret != -EINVAL)
			ret = 0;
		break;
	case COMMIT_MSG_VERIFY: {
		struct commit_verify_req vq;
		uint64_t bad = 0;

		ret = commit_verify_req_decode(p, h.len, &vq);
		if (!ret)
			ret = c->m ? dg_fmap_verify(c->m, vq.off, vq.len, &bad)
				   : -ENOTCONN;
		if (send_status(c->fd, h.seq, ret, bad))
			ret = 1;
		else
			ret = ret == -EBADMSG ? ret : 0;
		break;
	}
	case COMMIT_MSG_UNMAP:
		drop_map(c);
		ret = send_status(c->fd, h.seq, 0, 0) ? 1 : 0;
		break;
	}
	buf_done(c);
	goto end;
end_body:
	buf_drop(c);
end:
	if (nf)
		close(ffd[0]);
	if (ret < 0)
		dg_log(DG_LOG_DEBUG, "libcommit: bad message type=%u: %s",
		       h.type, strerror(-ret));
	return ret;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;

	while (!c->dd->stop && serve_one(c) == 0)
		;
	drop_map(c);
	buf_drop(c);
	pthread_mutex_lock(&conns_lock);
	for (struct conn **pp = &conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	nconns--;
	pthread_cond_broadcast(&conns_cond);
	pthread_mutex_unlock(&conns_lock);
	close(c->fd);
	free(c);
	return NULL;
}

/* Whether a client of uid may have one more connection: unprivileged
 * users each up to MAX_CONNS_UID and together up to MAX_CONNS, so no
 * one fills the server for the others; root and the mount's owner up to
 * the hard cap. Caller holds conns_lock. */
static bool conn_allowed(uid_t uid, bool priv)
{
	unsigned mine, unpriv = 0;
	size_t mem;
	uint64_t mapped;

	if (nconns >= MAX_CONNS_HARD)
		return false;
	if (priv)
		return true;
	for (struct conn *c = conns; c; c = c->next)
		unpriv += !c->priv;
	uid_use(uid, &mine, &mem, &mapped);
	return mine < MAX_CONNS_UID && unpriv < MAX_CONNS;
}

static void *accept_main(void *arg)
{
	struct dg_daemon *dd = arg;
	unsigned refused = 0;

	while (!dd->stop) {
		struct pollfd p = { dd->commit_fd, POLLIN, 0 };
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		struct conn *c;
		pthread_attr_t at;
		pthread_t t;
		bool priv;
		int fd;

		if (poll(&p, 1, 200) != 1)
			continue;
		fd = accept4(dd->commit_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			/* Out of descriptors or memory: the socket stays
			 * readable, so wait a little instead of spinning. */
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				usleep(100 * 1000);
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			close(fd);
			continue;
		}
		priv = dg_peer_is_privileged(cred.uid);
		c = calloc(1, sizeof(*c));
		pthread_mutex_lock(&conns_lock);
		if (!c || !conn_allowed(cred.uid, priv)) {
			pthread_mutex_unlock(&conns_lock);
			/* Said once in a while: a flood must not flood the
			 * log too. */
			if (refused++ % 1000 == 0)
				dg_log(DG_LOG_WARNING, "libcommit: refusing "
				       "clients of uid %u (%u connections, "
				       "%u refused)", (unsigned)cred.uid,
				       nconns, refused);
			free(c);
			close(fd);
			continue;
		}
		*c = (struct conn){ .dd = dd, .fd = fd, .uid = cred.uid,
				    .priv = priv, .next = conns };
		conns = c;
		nconns++;
		pthread_mutex_unlock(&conns_lock);
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &at, conn_main, c)) {
			pthread_mutex_lock(&conns_lock);
			for (struct conn **pp = &conns; *pp; pp = &(*pp)->next)
				if (*pp == c) {
					*pp = c->next;
					break;
				}
			nconns--;
			pthread_cond_broadcast(&conns_cond);
			pthread_mutex_unlock(&conns_lock);
			close(fd);
			free(c);
		}
		pthread_attr_destroy(&at);
	}
	return NULL;
}

int dg_commit_start(struct dg_daemon *dd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(dd->sock_path);
	bool bound = false;

	/* Next to the control socket: <uuid>-<pid>.sock -> .commit */
	if (n < 5 || n + 3 >= sizeof(dd->commit_path))
		return -1;
	memcpy(dd->commit_path, dd->sock_path, n - 5);
	strcpy(dd->commit_path + n - 5, ".commit");
	unlink(dd->commit_path);
	dd->commit_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (dd->commit_fd < 0)
		goto fail;
	memcpy(sa.sun_path, dd->commit_path, sizeof(dd->commit_path));
	/* Anyone may connect; each map is checked against the file. */
	if (bind(dd->commit_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	bound = true;
	if (chmod(dd->commit_path, 0666) < 0 || listen(dd->commit_fd, 64) < 0)
		goto fail;
	if (pthread_create(&dd->commit_thread, NULL, accept_main, dd))
		goto fail;
	return 0;
fail:
	dg_log(DG_LOG_ERR, "libcommit socket '%s': %s", dd->commit_path,
	       strerror(errno));
	if (dd->commit_fd >= 0)
		close(dd->commit_fd);
	if (bound)
		unlink(dd->commit_path); /* a name nobody listens on */
	dd->commit_fd = -1;
	return -1;
}

void dg_commit_stop(struct dg_daemon *dd)
{
	if (dd->commit_fd < 0)
		return;
	dd->stop = 1;
	pthread_join(dd->commit_thread, NULL);
	close(dd->commit_fd);
	unlink(dd->commit_path);
	/* Wake every connection and wait until they unmapped. */
	pthread_mutex_lock(&conns_lock);
	for (struct conn *c = conns; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	pthread_cond_broadcast(&conns_cond); /* buf_get() waiters */
	while (nconns)
		pthread_cond_wait(&conns_cond, &conns_lock);
	pthread_mutex_unlock(&conns_lock);
}
