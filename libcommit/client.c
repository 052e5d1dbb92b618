// SPDX-License-Identifier: MIT
/* client.c -- libcommit: map, sync, verify, unmap */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "bsearch.h"
#include "commit_i.h"

static __thread char errmsg[256];

int cm_err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	return err;
}

const char *commit_errormsg(void)
{
	return errmsg;
}

/* ---- socket ------------------------------------------------------------ */

static int send_msg(int sock, const void *a, size_t alen, const void *b,
		    size_t blen, int passfd)
{
	struct iovec iov[2] = { { (void *)a, alen }, { (void *)b, blen } };
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = blen ? 2 : 1 };
	size_t total = alen + blen, done = 0;

	if (passfd >= 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &passfd, sizeof(int));
	}
	while (done < total) {
		ssize_t r = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		done += (size_t)r;
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		/* Advance the iovecs past what went out. */
		while (r > 0 && mh.msg_iovlen) {
			size_t k = (size_t)r < mh.msg_iov->iov_len
					   ? (size_t)r : mh.msg_iov->iov_len;

			mh.msg_iov->iov_base = (char *)mh.msg_iov->iov_base + k;
			mh.msg_iov->iov_len -= k;
			r -= (ssize_t)k;
			if (!mh.msg_iov->iov_len) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
	}
	return 0;
}

/* Read exactly n bytes, collecting up to maxfds descriptors. */
static int recv_exact(int sock, void *buf, size_t n, int *fds, int maxfds,
		      int *nfds)
{
	size_t got = 0;

	while (got < n) {
		char cbuf[CMSG_SPACE(sizeof(int) * COMMIT_MAX_DEVS)];
		struct iovec iov = { (char *)buf + got, n - got };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		ssize_t r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		commit_take_fds(&mh, fds, nfds, maxfds);
		if (r == 0)
			return -ECONNRESET;
		got += (size_t)r;
	}
	return 0;
}

/* One request and its reply header + payload (malloc'd into *rep). */
static int roundtrip(struct commit_map *m, uint16_t type, const void *a,
		     size_t alen, const void *b, size_t blen, int passfd,
		     struct commit_hdr *rh, uint8_t **rep, int *fds, int *nfds)
{
	struct commit_hdr h;
	uint8_t hb[sizeof(h)];
	uint8_t *first;
	int ret;

	if (alen + blen > COMMIT_MSG_MAX)
		return -E2BIG;
	/* Header and the fixed part go in one buffer. */
	first = malloc(sizeof(h) + alen);
	if (!first)
		return -ENOMEM;
	commit_hdr_encode(&h, type, (uint32_t)(alen + blen), ++m->seq);
	memcpy(first, &h, sizeof(h));
	if (alen)
		memcpy(first + sizeof(h), a, alen);
	ret = send_msg(m->sock, first, sizeof(h) + alen, b, blen, passfd);
	free(first);
	if (ret)
		return ret;
	ret = recv_exact(m->sock, hb, sizeof(hb), fds, COMMIT_MAX_DEVS, nfds);
	if (!ret)
		ret = commit_hdr_decode(hb, sizeof(hb), rh);
	if (ret)
		return ret;
	if (rh->seq != m->seq)
		return -EPROTO;
	*rep = malloc(rh->len ? rh->len : 1);
	if (!*rep)
		return -ENOMEM;
	ret = recv_exact(m->sock, *rep, rh->len, fds, COMMIT_MAX_DEVS, nfds);
	if (ret) {
		free(*rep);
		*rep = NULL;
	}
	return ret;
}

/* A request answered by a STATUS. */
static int status_call(struct commit_map *m, uint16_t type, const void *a,
		       size_t alen, const void *b, size_t blen, uint64_t *value)
{
	struct commit_status_rep s;
	struct commit_hdr rh;
	uint8_t *rep = NULL;
	int ret;

	ret = roundtrip(m, type, a, alen, b, blen, -1, &rh, &rep, NULL, NULL);
	if (ret)
		return ret;
	ret = rh.type == COMMIT_MSG_STATUS
		      ? commit_status_decode(rep, rh.len, &s) : -EPROTO;
	free(rep);
	if (ret)
		return ret;
	if (value)
		*value = s.value;
	return s.status;
}

/* ---- map --------------------------------------------------------------- */

static void map_free(struct commit_map *m)
{
	cm_region_del(&m->reg);
	cm_uffd_close(&m->reg);
	if (m->resv)
		munmap(m->resv, m->resvlen);
	if (m->media)
		munmap(m->media, m->maplen);
	for (unsigned d = 0; d < COMMIT_MAX_DEVS; d++)
		if (m->devfd[d] >= 0)
			close(m->devfd[d]);
	if (m->filefd >= 0)
		close(m->filefd);
	if (m->sock >= 0)
		close(m->sock);
	free((void *)m->reg.bits);
	free(m->reg.list);
	free(m->take);
	free(m->ext);
	free(m->msg);
	free(m->runs);
	free(m);
}

static int connect_daemon(int fd, int *sockp)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	ssize_t n;
	int s;

	n = fgetxattr(fd, COMMIT_XATTR, sa.sun_path, sizeof(sa.sun_path) - 1);
	if (n < 0)
		return cm_err(errno == ENODATA || errno == ENOTSUP ||
					      errno == EOPNOTSUPP
				      ? -ENOTSUP : -errno,
			      "not a file of a daxguard mount: %s",
			      strerror(errno));
	if (n == 0)
		return cm_err(-ENOTSUP, "not a file of a daxguard mount");
	sa.sun_path[n] = 0;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return cm_err(-errno, "socket: %s", strerror(errno));
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(s);
		return cm_err(-e, "cannot reach the daxguard daemon at '%s': %s",
			      sa.sun_path, strerror(e));
	}
	*sockp = s;
	return 0;
}

/*
 * What backs file page fp of the map: a descriptor, the byte offset of
 * the page in it, and how many pages from fp on it backs contiguously.
 * Direct maps read the device (as the extent says); other maps read the
 * file itself through the mount.
 */
static const struct commit_ext *ext_of(const struct commit_map *m,
				       uint64_t fpage);

static void backing(const struct commit_map *m, uint64_t fp, int *fd,
		    off_t *off, uint64_t *pages)
{
	const struct commit_ext *e;

	if (!m->direct) {
		*fd = m->filefd;
		*off = (off_t)(fp * CM_PAGE);
		*pages = (m->foff + m->maplen) / CM_PAGE - fp;
		return;
	}
	e = ext_of(m, fp);
	/* A hole of a read-only map: zeros, from no device (fd -1). */
	*fd = e->dev == COMMIT_EXT_HOLE ? -1 : m->devfd[e->dev];
	*off = e->dev == COMMIT_EXT_HOLE
		       ? 0 : (off_t)(e->devoff + (fp - e->fpage) * CM_PAGE);
	*pages = e->fpage + e->pages - fp;
}

/* Map the whole range at its place in the area at base (maplen bytes),
 * one mmap per backing run. */
static int map_area(struct commit_map *m, uint8_t *base, int flags)
{
	uint64_t fp = m->foff / CM_PAGE, end = fp + m->maplen / CM_PAGE;

	while (fp < end) {
		uint64_t k;
		off_t off;
		int fd;
		void *p;

		backing(m, fp, &fd, &off, &k);
		p = mmap(base + (fp * CM_PAGE - m->foff), k * CM_PAGE,
			 PROT_READ, flags | MAP_FIXED |
			 (fd < 0 ? MAP_ANONYMOUS : 0), fd, off);
		if (p == MAP_FAILED)
			return cm_err(-errno, "cannot map %s: %s",
				      m->direct ? "a device" : "the file",
				      strerror(errno));
		fp += k;
	}
	return 0;
}

static uint8_t *reserve(size_t len)
{
	void *p = mmap(NULL, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Lay out guard + data + guard and map every extent over the data.
 * Never write access to the media; stores land in private
 * copies. A read-write map also gets a shared read-only view of the
 * same extents, so a sync diffs the copies against the media in place
 * instead of reading every dirty page into a buffer first.
 */
static int map_extents(struct commit_map *m)
{
	int ret;

	m->resvlen = m->maplen + 2 * CM_PAGE;
	m->resv = reserve(m->resvlen);
	if (!m->resv)
		return cm_err(-errno, "cannot reserve %zu bytes: %s",
			      m->resvlen, strerror(errno));
	ret = map_area(m, m->resv + CM_PAGE, MAP_PRIVATE);
	if (ret || !m->rw)
		return ret;
	m->media = reserve(m->maplen);
	if (!m->media)
		return cm_err(-errno, "cannot reserve %zu bytes: %s",
			      m->maplen, strerror(errno));
	return map_area(m, m->media, MAP_SHARED);
}

/*
 * Open every device of the map with the caller's own credentials and
 * check that each is the device the daemon named. Returns 0 (direct
 * map), or -errno with the reason in msg (the caller then maps through
 * the mount, or refuses when COMMIT_MAP_DIRECT asked for direct).
 */
static int open_devices(struct commit_map *m, const struct commit_dev *devs,
			uint32_t mask, char *msg, size_t msglen)
{
	unsigned i = 0;

	for (unsigned d = 0; d < COMMIT_MAX_DEVS; d++) {
		struct commit_dev v;
		struct stat st;
		int fd;

		if (!(mask & (1u << d)))
			continue;
		memcpy(&v, (const uint8_t *)devs + (size_t)i++ * sizeof(v),
		       sizeof(v));
		if (!v.pathlen) {
			snprintf(msg, msglen, "device %u has no path", d);
			return -ENOENT;
		}
		fd = open(v.path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			int e = errno;

			snprintf(msg, msglen, "cannot open device '%s': %s",
				 v.path, strerror(e));
			return -e;
		}
		if (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != v.st_dev ||
		    (uint64_t)st.st_ino != v.st_ino) {
			close(fd);
			snprintf(msg, msglen, "'%s' is not the device the "
				 "daemon opened", v.path);
			return -ESTALE;
		}
		m->devfd[d] = fd;
	}
	return 0;
}

static void close_devices(struct commit_map *m)
{
	for (unsigned d = 0; d < COMMIT_MAX_DEVS; d++) {
		if (m->devfd[d] >= 0)
			close(m->devfd[d]);
		m->devfd[d] = -1;
	}
}

/* Unmap, then ask the daemon to release the map and wait until it has,
 * keeping the thread's error message (as commit_map_delete()). */
static void release(struct commit_map *m)
{
	char keep[sizeof(errmsg)];

	cm_region_del(&m->reg);
	if (m->resv)
		munmap(m->resv, m->resvlen);
	if (m->media)
		munmap(m->media, m->maplen);
	m->resv = m->media = NULL;
	memcpy(keep, errmsg, sizeof(keep));
	(void)status_call(m, COMMIT_MSG_UNMAP, NULL, 0, NULL, 0, NULL);
	memcpy(errmsg, keep, sizeof(keep));
}

int commit_map_new_fd(int fd, uint64_t offset, size_t len, unsigned flags,
		      struct commit_map **mp)
{
	bool mapped = false;
	const struct commit_dev *devs;
	char why[COMMIT_DEV_PATH + 64];
	struct stat st;
	struct commit_map_req rq = { offset, len, 0, 0 };
	struct commit_map_rep rep;
	const struct commit_ext *ext;
	struct commit_hdr rh;
	struct commit_map *m;
	uint8_t *buf = NULL;
	int fds[COMMIT_MAX_DEVS], nfds = 0, ret;

	if (!mp || (flags & ~(COMMIT_MAP_RDWR | COMMIT_MAP_DIRECT)) ||
	    offset % CM_PAGE)
		return cm_err(-EINVAL, "invalid argument: offset must be page "
			      "aligned, flags RDONLY or RDWR, and DIRECT");
	m = calloc(1, sizeof(*m));
	if (!m)
		return cm_err(-ENOMEM, "out of memory");
	m->sock = -1;
	m->filefd = -1;
	m->reg.uffd = m->reg.pagemap = -1;
	for (unsigned d = 0; d < COMMIT_MAX_DEVS; d++)
		m->devfd[d] = -1;
	m->rw = flags & COMMIT_MAP_RDWR;
	if (m->rw)
		rq.flags = COMMIT_REQ_RW;
	ret = connect_daemon(fd, &m->sock);
	if (ret)
		goto fail;
	ret = roundtrip(m, COMMIT_MSG_MAP, &rq, sizeof(rq), NULL, 0, fd, &rh,
			&buf, fds, &nfds);
	if (ret) {
		cm_err(ret, "map request failed: %s", strerror(-ret));
		goto fail_fds;
	}
	if (rh.type == COMMIT_MSG_STATUS) {
		struct commit_status_rep s;

		ret = commit_status_decode(buf, rh.len, &s);
		ret = ret ? ret : s.status < 0 ? s.status : -EPROTO;
		cm_err(ret, "daxguard refused the map: %s", strerror(-ret));
		goto fail_fds;
	}
	ret = rh.type == COMMIT_MSG_MAP_REP
		      ? commit_map_rep_decode(buf, rh.len, &rep, &ext, &devs)
		      : -EPROTO;
	if (!ret && rep.status < 0)
		ret = rep.status;
	/* The daemon passes no descriptors (proto.h): any is an error. */
	if (!ret && (rep.off != offset || nfds))
		ret = -EPROTO;
	/* Only a read-only map has holes (a read-write one is allocated
	 * whole). */
	for (uint32_t i = 0; !ret && m->rw && i < rep.next; i++) {
		struct commit_ext e;

		memcpy(&e, (const uint8_t *)ext + (size_t)i * sizeof(e),
		       sizeof(e));
		if (e.dev == COMMIT_EXT_HOLE)
			ret = -EPROTO;
	}
	if (ret) {
		cm_err(ret, "bad map reply: %s", strerror(-ret));
		goto fail_fds;
	}
	/* From here on the daemon holds a map for us: a failure releases
	 * it before returning (release()), so that a map right after a
	 * failed one does not find the file still busy. */
	mapped = true;
	ret = open_devices(m, devs, rep.dev_mask, why, sizeof(why));
	m->direct = ret == 0;
	if (!m->direct) {
		close_devices(m);
		if (flags & COMMIT_MAP_DIRECT) {
			cm_err(ret, "no direct access: %s (direct maps need "
			       "read access to the volume's devices)", why);
			goto fail;
		}
		/* Through the mount: the kernel's page cache of the file,
		 * filled by verified reads. The size the daemon may just
		 * have grown the file to must be the kernel's too. */
		m->filefd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (m->filefd < 0 || fstat(m->filefd, &st) < 0) {
			ret = cm_err(-errno, "cannot keep the file open: %s",
				     strerror(errno));
			goto fail;
		}
	}
	m->foff = offset;
	m->maplen = rep.len;
	m->len = len ? len : (size_t)(rep.size - offset);
	m->next = rep.next;
	m->ext = malloc(rep.next * sizeof(*m->ext));
	if (!m->ext) {
		ret = cm_err(-ENOMEM, "out of memory");
		goto fail;
	}
	memcpy(m->ext, ext, rep.next * sizeof(*m->ext));
	free(buf);
	buf = NULL;
	ret = map_extents(m);
	if (ret)
		goto fail;
	m->reg.base = (uintptr_t)m->resv + CM_PAGE;
	m->reg.npages = m->maplen / CM_PAGE;
	m->reg.writable = m->rw;
	if (m->rw) {
		size_t np = m->reg.npages;

		m->reg.bits = calloc((np + 63) / 64, sizeof(uint64_t));
		m->reg.list = malloc(np * sizeof(uint32_t));
		/* The list and a scan may both name a page (twice np). */
		m->take = malloc(2 * np * sizeof(uint32_t));
		if (!m->reg.bits || !m->reg.list || !m->take) {
			ret = cm_err(-ENOMEM, "out of memory");
			goto fail;
		}
		ret = cm_uffd_setup(&m->reg);
		if (!ret)
			ret = cm_region_add(&m->reg);
		if (ret) {
			cm_err(ret, "cannot track stores: %s", strerror(-ret));
			goto fail;
		}
	}
	*mp = m;
	return 0;
fail_fds:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
fail:
	free(buf);
	if (mapped)
		release(m);
	map_free(m);
	return ret;
}

int commit_map_new(const char *path, uint64_t offset, size_t len,
		   unsigned flags, struct commit_map **mp)
{
	int fd, ret;

	if (!path)
		return cm_err(-EINVAL, "invalid argument: path is NULL");
	fd = open(path, ((flags & COMMIT_MAP_RDWR) ? O_RDWR : O_RDONLY) |
				O_CLOEXEC);
	if (fd < 0)
		return cm_err(-errno, "cannot open '%s': %s", path,
			      strerror(errno));
	ret = commit_map_new_fd(fd, offset, len, flags, mp);
	close(fd);
	return ret;
}

void *commit_map_addr(const struct commit_map *m)
{
	return m->resv + CM_PAGE;
}

size_t commit_map_len(const struct commit_map *m)
{
	return m->len;
}

/* ---- sync -------------------------------------------------------------- */

static bool ext_ends_by(const void *set, size_t i, uint64_t fpage)
{
	const struct commit_map *m = set;

	return m->ext[i].fpage + m->ext[i].pages <= fpage;
}

static const struct commit_ext *ext_of(const struct commit_map *m,
				       uint64_t fpage)
{
	return &m->ext[dg_partition_point(0, m->next, ext_ends_by, m, fpage)];
}

int commit_map_is_direct(const struct commit_map *m)
{
	return m->direct;
}

unsigned commit__overflows(const struct commit_map *m)
{
	return atomic_load(&m->reg.overflows);
}

size_t commit__taken(const struct commit_map *m)
{
	return m->taken;
}

int commit__locate(const struct commit_map *m, size_t off, unsigned *dev,
		   uint64_t *devoff, int *devfd)
{
	uint64_t fp = (m->foff + off) / CM_PAGE;
	const struct commit_ext *e;

	if (off >= m->maplen)
		return -EINVAL;
	if (!m->direct)
		return -ENODEV;
	e = ext_of(m, fp);
	if (e->dev == COMMIT_EXT_HOLE)
		return -ENXIO; /* a hole of a read-only map */
	*dev = e->dev;
	*devoff = e->devoff + (fp - e->fpage) * CM_PAGE + off % CM_PAGE;
	*devfd = m->devfd[e->dev];
	return 0;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	size_t nc = *cap ? *cap : 1 << 16;
	uint8_t *b;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	b = realloc(*buf, nc);
	if (!b)
		return -ENOMEM;
	*buf = b;
	*cap = nc;
	return 0;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether line l of page a differs from b's: both pages are aligned,
 * so the line is compared in words (a memcmp call per line cost more
 * than the compare). */
static bool line_differs(const uint8_t *a, const uint8_t *b, unsigned l)
{
	const uint64_t *x = (const uint64_t *)(a + l * COMMIT_LINE_SIZE);
	const uint64_t *y = (const uint64_t *)(b + l * COMMIT_LINE_SIZE);
	uint64_t d = 0;

	for (unsigned w = 0; w < COMMIT_LINE_SIZE / 8; w++)
		d |= x[w] ^ y[w];
	return d != 0;
}

/* The next run of changed lines of page a (against its media image b)
 * at or after line *l: its first line in *l, its length (0: none). */
static unsigned changed_run(const uint8_t *a, const uint8_t *b, unsigned *l)
{
	const unsigned lines = CM_PAGE / COMMIT_LINE_SIZE;
	unsigned k = 0;

	while (*l < lines && !line_differs(a, b, *l))
		(*l)++;
	while (*l + k < lines && line_differs(a, b, *l + k))
		k++;
	return k;
}

/* Room for n runs in m->runs. */
static int runs_room(struct commit_map *m, size_t n)
{
	struct commit_run *r;
	size_t nc = m->runcap ? m->runcap : 1024;

	if (n <= m->runcap)
		return 0;
	while (nc < n)
		nc *= 2;
	r = realloc(m->runs, nc * sizeof(*r));
	if (!r)
		return -ENOMEM;
	m->runs = r;
	m->runcap = nc;
	return 0;
}

/* Build the COMMIT payload: runs of changed lines of each page, then
 * their bytes. The pages are diffed once, their runs noted in m->runs,
 * and the bytes copied after: the pages are write-protected, so what is
 * copied is what was compared (a second diff pass to fill the message
 * read every page twice, and was half of the client's time in a sync of
 * scattered pages). Returns the payload size in *len. */
static int build_commit(struct commit_map *m, const uint32_t *pg, size_t n,
			size_t *len)
{
	const uint8_t *base = commit_map_addr(m);
	size_t nruns = 0, bytes = 0, off;
	struct commit_commit_req q = { 0, 0 };

	for (size_t i = 0; i < n; i++) {
		const uint8_t *a = base + (size_t)pg[i] * CM_PAGE;
		const uint8_t *b = m->media + (size_t)pg[i] * CM_PAGE;
		unsigned l = 0, k;

		while ((k = changed_run(a, b, &l))) {
			if (runs_room(m, nruns + 1))
				return -ENOMEM;
			m->runs[nruns++] = (struct commit_run){
				m->foff + (uint64_t)pg[i] * CM_PAGE +
					l * COMMIT_LINE_SIZE,
				k * COMMIT_LINE_SIZE, 0 };
			bytes += k * COMMIT_LINE_SIZE;
			l += k;
		}
	}
	if (nruns > UINT32_MAX)
		return -E2BIG;
	*len = sizeof(q) + nruns * sizeof(struct commit_run) + bytes;
	if (*len > COMMIT_MSG_MAX)
		return -E2BIG;
	if (grow(&m->msg, &m->msgcap, *len))
		return -ENOMEM;
	q.nruns = (uint32_t)nruns;
	memcpy(m->msg, &q, sizeof(q));
	off = sizeof(q);
	if (nruns)
		memcpy(m->msg + off, m->runs, nruns * sizeof(*m->runs));
	off += nruns * sizeof(*m->runs);
	for (size_t i = 0; i < nruns; i++) {
		memcpy(m->msg + off, base + (m->runs[i].off - m->foff),
		       m->runs[i].len);
		off += m->runs[i].len;
	}
	return 0;
}

/* Protect (or unprotect) the pages, coalescing neighbours. Returns 0
 * or the first mprotect error (the pages after it are left as they
 * were). */
static int protect(struct commit_map *m, const uint32_t *pg, size_t n,
		   int prot)
{
	uint8_t *base = commit_map_addr(m);

	for (size_t i = 0; i < n;) {
		size_t k = 1;

		while (i + k < n && pg[i + k] == pg[i] + k)
			k++;
		if (mprotect(base + (size_t)pg[i] * CM_PAGE, k * CM_PAGE, prot))
			return -errno;
		i += k;
	}
	return 0;
}

/* Drop the private copies: map the media again over each run of pages.
 * A fresh MAP_PRIVATE mapping (rather than MADV_DONTNEED + mprotect)
 * carries no anonymous pages, so the kernel merges it back with its
 * neighbours and the number of VMAs stays proportional to the pages
 * dirtied between two syncs, not to all pages ever written. */
static int drop_copies(struct commit_map *m, const uint32_t *pg, size_t n)
{
	uint8_t *base = commit_map_addr(m);

	for (size_t i = 0; i < n;) {
		uint64_t fp = m->foff / CM_PAGE + pg[i], run;
		size_t k = 1;
		off_t off;
		int fd;
		void *p;

		backing(m, fp, &fd, &off, &run);
		while (i + k < n && pg[i + k] == pg[i] + k && k < run)
			k++;
		p = mmap(base + (size_t)pg[i] * CM_PAGE, k * CM_PAGE, PROT_READ,
			 MAP_PRIVATE | MAP_FIXED, fd, off);
		if (p == MAP_FAILED)
			return -errno;
		/* A fresh mapping is not registered with userfaultfd; until
		 * it is, it does not merge with its neighbours either. */
		if (m->reg.uffd >= 0) {
			int ret = cm_uffd_register(&m->reg, pg[i], k);

			if (ret)
				return ret;
		}
		i += k;
	}
	return 0;
}

static size_t dedup(uint32_t *pg, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (k == 0 || pg[i] != pg[k - 1])
			pg[k++] = pg[i];
	return k;
}

/* What a sync took (take_pages()). */
struct taken {
	size_t n;	/* pages, in m->take */
	size_t listed;	/* ... of them from the dirty list: VMAs split */
	bool ov;	/* after an overflow */
	bool scanned;	/* ... the kernel said which pages were written */
};

/*
 * The pages a sync of [p0, p1) diffs, into m->take (t->n of them,
 * sorted), write-protected. Normally the dirty list's. After an overflow
 * (cm_region_overflow()) any page of the range may have been stored to:
 * with userfaultfd the list's and those the kernel saw written since the
 * overflow (the range is write-protected first, so the answer holds
 * until the sync ends); without it (or if arming it failed) every page
 * of the range. A sync of the whole map ends the overflow (unless
 * cm_region_resume() takes it up again); a store racing it makes it
 * start again. Returns 0 or -errno; t->n is what was taken either way.
 */
static int take_pages(struct commit_map *m, size_t p0, size_t p1,
		      struct taken *t)
{
	struct cm_region *r = &m->reg;
	bool scan;
	ssize_t k;
	int ret;

	/* Every bit is set since the overflow: once the claims made
	 * before it are listed, nothing lists a page of the range or makes
	 * one writable until clean(). Wait for them before taking the
	 * list, not after: a page such a claim listed after the take would
	 * stay on the list while clean() cleared its bit, and the next sync
	 * would take it with no bit set, so a store could claim it again
	 * and make it writable under that sync's diff or after it, before
	 * the drop (the store lost). The sync holds the gate:
	 * no overflow starts or ends between this test and the take. */
	if (atomic_load(&r->overflow))
		cm_region_drain(r);
	*t = (struct taken){ 0 };
	t->n = t->listed = cm_region_take(r, p0, p1, m->take);
	t->ov = p0 == 0 && p1 == r->npages
			? atomic_exchange(&r->overflow, false)
			: atomic_load(&r->overflow);
	if (!t->ov) {
		qsort(m->take, t->n, sizeof(*m->take), u32_cmp);
		return protect(m, m->take, t->n, PROT_READ);
	}
	scan = r->uffd >= 0 && !(p0 == 0 && p1 == r->npages
					 ? atomic_exchange(&r->uffd_failed, false)
					 : atomic_load(&r->uffd_failed));
	if (scan) {
		/* One call for the range: it merges VMAs, never splits. */
		ret = mprotect((uint8_t *)r->base + p0 * CM_PAGE,
			       (p1 - p0) * CM_PAGE, PROT_READ) ? -errno : 0;
		if (ret)
			return ret;
		k = cm_uffd_scan(r, p0, p1, m->take + t->n);
		if (k >= 0) {
			t->scanned = true;
			t->n += (size_t)k;
			qsort(m->take, t->n, sizeof(*m->take), u32_cmp);
			t->n = dedup(m->take, t->n);
			return 0;
		}
		/* A failed scan may have protected some written pages:
		 * diff them all. */
	}
	for (size_t i = p0; i < p1; i++)
		m->take[i - p0] = (uint32_t)i;
	t->n = p1 - p0;
	return protect(m, m->take, t->n, PROT_READ);
}

/* Clear the bits of what a sync took: the pages, or after an overflow
 * (every bit set) the whole range. */
static void clean(struct commit_map *m, const struct taken *t, size_t p0,
		  size_t p1)
{
	if (!t->ov)
		cm_region_clean(&m->reg, m->take, t->n);
	else
		cm_region_clean_range(&m->reg, p0, p1);
}

/* A failed sync: the stores stay pending, their pages back on the list.
 * They become writable again; if that fails too, or the sync followed
 * an overflow, the whole map does (overflow): never leave a taken page
 * read-only, where a store would wait forever. */
static void untake(struct commit_map *m, const struct taken *t)
{
	cm_region_untake(&m->reg, m->take, t->n);
	if (t->ov || protect(m, m->take, t->n, PROT_READ | PROT_WRITE) ||
	    atomic_load(&m->reg.overflow))
		(void)cm_region_overflow(&m->reg);
}

/*
 * Drop the private copies of the pages taken, choosing how by what
 * keeps the VMAs few: after a page-by-page sync, a fresh mapping per run
 * (drop_copies()); after an overflow of the whole map, if pages were
 * made writable one by one before it (split VMAs, which keep their
 * own anonymous memory and so never merge again), the whole map mapped
 * afresh (a call per extent), else MADV_DONTNEED over all of it (one
 * call, twice as fast at 4,096 pages of a 1 GiB map; it keeps the VMAs,
 * and the userfaultfd registration and write-protect); after an
 * overflow of part of it, MADV_DONTNEED per run (the pages are
 * read-only already). Mappings made afresh are registered with
 * userfaultfd again.
 */
static int drop(struct commit_map *m, const struct taken *t, size_t p0,
		size_t p1)
{
	uint8_t *base = commit_map_addr(m);

	if (!t->ov)
		return drop_copies(m, m->take, t->n);
	if (p0 == 0 && p1 == m->reg.npages && t->listed) {
		int ret = map_area(m, base, MAP_PRIVATE);

		if (!ret && m->reg.uffd >= 0)
			ret = cm_uffd_register(&m->reg, 0, m->reg.npages);
		return ret;
	}
	if (p0 == 0 && p1 == m->reg.npages)
		return madvise(base, m->reg.npages * CM_PAGE, MADV_DONTNEED)
			       ? -errno : 0;
	for (size_t i = 0, n = t->n; i < n;) {
		size_t k = 1;

		while (i + k < n && m->take[i + k] == m->take[i] + k)
			k++;
		if (madvise(base + (size_t)m->take[i] * CM_PAGE, k * CM_PAGE,
			    MADV_DONTNEED))
			return -errno;
		i += k;
	}
	return 0;
}

/* Pages per message of a sync: a page ships at most 4 KiB of lines in
 * at most 32 runs, so a piece stays near 32 MiB, far below
 * COMMIT_MSG_MAX, and the daemon's buffer stays modest. */
#define PIECE_PAGES \
	((32u << 20) / (CM_PAGE + CM_PAGE / COMMIT_LINE_SIZE / 2 * \
				      sizeof(struct commit_run)))

/* Tests: LIBCOMMIT_TEST_KILL_AFTER_STAGE=N kills the program once the
 * daemon has acknowledged the N-th STAGE message of this process;
 * LIBCOMMIT_TEST_PIECE_PAGES=N makes pieces of at most N pages. */
static void stage_acked(void)
{
	static _Atomic unsigned long acked;
	const char *e = getenv("LIBCOMMIT_TEST_KILL_AFTER_STAGE");

	if (e && (unsigned long)atol(e) == atomic_fetch_add(&acked, 1) + 1)
		raise(SIGKILL);
}

/*
 * Send the changed lines of the n pages taken as one sync: one COMMIT
 * when they fit one message, else STAGE messages of PIECE_PAGES pages
 * ended by a COMMIT, which the daemon applies atomically as a whole
 * (proto.h). A failure after a STAGE asks the daemon to drop what was
 * staged (an empty STAGE), so the next sync starts clean.
 */
static int send_sync(struct commit_map *m, size_t n)
{
	const size_t empty = sizeof(struct commit_commit_req);
	bool staged = false;
	int ret = 0;

	size_t piece = PIECE_PAGES;
	const char *e = getenv("LIBCOMMIT_TEST_PIECE_PAGES");

	if (e && atol(e) > 0 && (size_t)atol(e) < piece)
		piece = (size_t)atol(e); /* tests: many pieces, small maps */
	for (size_t i = 0; i < n && !ret;) {
		size_t k = n - i < piece ? n - i : piece, len = 0;
		bool last = i + k == n;

		ret = build_commit(m, m->take + i, k, &len);
		if (ret) {
			cm_err(ret, "commit too large (%zu pages)", n);
			break;
		}
		i += k;
		if (len == empty && !(last && staged))
			continue; /* nothing changed in this piece */
		ret = status_call(m, last ? COMMIT_MSG_COMMIT : COMMIT_MSG_STAGE,
				  m->msg, len, NULL, 0, NULL);
		if (ret) {
			cm_err(ret, "commit of %zu pages failed: %s", n,
			       strerror(-ret));
			break;
		}
		if (!last) {
			staged = true;
			stage_acked();
		}
	}
	if (ret && staged && ret != -ECONNRESET && ret != -EPIPE) {
		/* The daemon dropped the stage itself if it failed the
		 * message; otherwise tell it. */
		struct commit_commit_req q = { 0, 0 };

		(void)status_call(m, COMMIT_MSG_STAGE, &q, sizeof(q), NULL, 0,
				  NULL);
	}
	return ret;
}

static int sync_pages(struct commit_map *m, size_t p0, size_t p1)
{
	bool whole = p0 == 0 && p1 == m->reg.npages;
	struct taken t;
	int ret;

	if (!m->rw)
		return cm_err(-EBADF, "the map is read-only");
	cm_region_enter(&m->reg);
	/* From here on a store to the pages taken waits (SIGSEGV retry)
	 * until clean(): the images diffed are the images committed. The
	 * diff relies on it, so a page left writable fails the sync. */
	ret = take_pages(m, p0, p1, &t);
	m->taken = t.n;
	if (ret) {
		cm_err(ret, "cannot write-protect %zu dirty pages for the "
		       "sync: %s", t.n, strerror(-ret));
		goto undo;
	}
	if (t.n == 0) {
		clean(m, &t, p0, p1);
		cm_region_leave(&m->reg);
		return 0;
	}
	ret = send_sync(m, t.n);
	if (ret)
		goto undo;
	ret = drop(m, &t, p0, p1);
	if (ret || !t.ov || !t.scanned || !whole ||
	    !cm_region_resume(&m->reg, t.n, t.listed > 0))
		clean(m, &t, p0, p1);
	cm_region_leave(&m->reg);
	if (ret)
		/* Committed, but loads may still see the private copies
		 * (which hold the committed bytes). */
		return cm_err(ret, "cannot remap after commit: %s",
			      strerror(-ret));
	return 0;
undo:
	untake(m, &t);
	cm_region_leave(&m->reg);
	return ret;
}

int commit_sync(struct commit_map *m)
{
	return sync_pages(m, 0, m->reg.npages);
}

int commit_sync_range(struct commit_map *m, size_t off, size_t len)
{
	if (off > m->maplen || len > m->maplen - off)
		return cm_err(-EINVAL, "range outside the map");
	if (len == 0)
		return 0;
	return sync_pages(m, off / CM_PAGE, (off + len + CM_PAGE - 1) / CM_PAGE);
}

int commit_verify(struct commit_map *m, size_t off, size_t len,
		  size_t *bad_off)
{
	struct commit_verify_req q = { m->foff + off, len };
	uint64_t bad = 0;
	int ret;

	if (off > m->maplen || len > m->maplen - off)
		return cm_err(-EINVAL, "range outside the map");
	ret = status_call(m, COMMIT_MSG_VERIFY, &q, sizeof(q), NULL, 0, &bad);
	if (ret < 0)
		return cm_err(ret, "verify failed: %s", strerror(-ret));
	if (ret > 0 && bad_off)
		*bad_off = (size_t)(bad - m->foff);
	return ret;
}

int commit_map_delete(struct commit_map **mp)
{
	struct commit_map *m;
	int ret = 0;

	if (!mp || !*mp)
		return 0;
	m = *mp;
	/* Unsynced stores are discarded: the private copies go with the
	 * mapping. The daemon releases the pin when asked (or at close). */
	cm_region_del(&m->reg);
	if (m->resv)
		munmap(m->resv, m->resvlen);
	if (m->media)
		munmap(m->media, m->maplen);
	m->resv = NULL;
	if (m->sock >= 0) {
		ret = status_call(m, COMMIT_MSG_UNMAP, NULL, 0, NULL, 0, NULL);
		if (ret)
			cm_err(ret, "unmap not confirmed: %s", strerror(-ret));
	}
	map_free(m);
	*mp = NULL;
	return ret;
}
