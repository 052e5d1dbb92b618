// SPDX-License-Identifier: MIT
/* proto.c -- libcommit wire protocol: encode and bounds-checked decode */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"

int commit_hdr_decode(const void *buf, size_t n, struct commit_hdr *h)
{
	struct commit_hdr t;

	if (n < sizeof(t))
		return -EINVAL;
	memcpy(&t, buf, sizeof(t));
	if (t.magic != COMMIT_PROTO_MAGIC || t.version != COMMIT_PROTO_VERSION)
		return -EPROTO;
	if (t.type < COMMIT_MSG_MAP || t.type > COMMIT_MSG_STAGE)
		return -EBADMSG;
	if (t.len > COMMIT_MSG_MAX)
		return -EMSGSIZE;
	*h = t;
	return 0;
}

void commit_hdr_encode(struct commit_hdr *h, uint16_t type, uint32_t len,
		       uint32_t seq)
{
	*h = (struct commit_hdr){ COMMIT_PROTO_MAGIC, COMMIT_PROTO_VERSION,
				  type, len, seq };
}

int commit_map_req_decode(const void *p, size_t n, struct commit_map_req *r)
{
	struct commit_map_req t;

	if (n != sizeof(t))
		return -EBADMSG;
	memcpy(&t, p, sizeof(t));
	if (t.pad || (t.flags & ~COMMIT_REQ_RW) || t.off % COMMIT_PAGE_SIZE ||
	    t.off + t.len < t.off || t.off + t.len > COMMIT_FILE_MAX)
		return -EINVAL;
	*r = t;
	return 0;
}

int commit_commit_decode(const void *p, size_t n, uint32_t *nruns,
			 const struct commit_run **runs, const uint8_t **data)
{
	struct commit_commit_req q;
	const uint8_t *b = p;
	uint64_t need, sum = 0;

	if (n < sizeof(q))
		return -EBADMSG;
	memcpy(&q, b, sizeof(q));
	if (q.pad)
		return -EINVAL;
	need = sizeof(q) + (uint64_t)q.nruns * sizeof(struct commit_run);
	if (need > n)
		return -EBADMSG;
	for (uint32_t i = 0; i < q.nruns; i++) {
		struct commit_run r;

		memcpy(&r, b + sizeof(q) + (size_t)i * sizeof(r), sizeof(r));
		if (r.pad || r.len == 0 || r.len % COMMIT_LINE_SIZE ||
		    r.off % COMMIT_LINE_SIZE ||
		    r.off % COMMIT_PAGE_SIZE + r.len > COMMIT_PAGE_SIZE ||
		    r.off > COMMIT_FILE_MAX)
			return -EINVAL;
		sum += r.len;
	}
	if (need + sum != n)
		return -EBADMSG;
	/* The runs start 8 bytes into a malloc'd payload: aligned. */
	*nruns = q.nruns;
	*runs = (const struct commit_run *)(const void *)(b + sizeof(q));
	*data = b + need;
	return 0;
}

size_t commit_body_max(uint64_t maplen)
{
	uint64_t lines = maplen / COMMIT_LINE_SIZE;
	uint64_t max = sizeof(struct commit_commit_req) +
		       lines * (sizeof(struct commit_run) + COMMIT_LINE_SIZE);

	if (lines > COMMIT_MSG_MAX || max > COMMIT_MSG_MAX)
		return COMMIT_MSG_MAX;
	return (size_t)max;
}

int commit_verify_req_decode(const void *p, size_t n,
			     struct commit_verify_req *r)
{
	struct commit_verify_req t;

	if (n != sizeof(t))
		return -EBADMSG;
	memcpy(&t, p, sizeof(t));
	if (t.off + t.len < t.off)
		return -EINVAL;
	*r = t;
	return 0;
}

/* The commit_dev records after the extents: one per bit of mask. */
static int devs_decode(const uint8_t *b, size_t n, uint32_t mask)
{
	unsigned want = (unsigned)__builtin_popcount(mask), i = 0;

	if (n != (size_t)want * sizeof(struct commit_dev))
		return -EBADMSG;
	for (unsigned d = 0; d < COMMIT_MAX_DEVS; d++) {
		struct commit_dev v;

		if (!(mask & (1u << d)))
			continue;
		memcpy(&v, b + (size_t)i++ * sizeof(v), sizeof(v));
		if (v.dev != d || v.pathlen >= COMMIT_DEV_PATH ||
		    v.path[v.pathlen] != 0 ||
		    memchr(v.path, 0, v.pathlen) != NULL ||
		    (v.pathlen && v.path[0] != '/'))
			return -EBADMSG;
	}
	return 0;
}

int commit_map_rep_decode(const void *p, size_t n, struct commit_map_rep *r,
			  const struct commit_ext **ext,
			  const struct commit_dev **devs)
{
	struct commit_map_rep t;
	const uint8_t *b = p;
	uint64_t next_page;
	size_t extlen;

	if (n < sizeof(t))
		return -EBADMSG;
	memcpy(&t, b, sizeof(t));
	if (t.status < 0) {
		if (n != sizeof(t) || t.status < -4095)
			return -EBADMSG;
		*r = t;
		*ext = NULL;
		*devs = NULL;
		return 0;
	}
	if (t.status != 0 || t.pad || t.next == 0 ||
	    t.dev_mask >= (1u << COMMIT_MAX_DEVS) ||
	    t.off % COMMIT_PAGE_SIZE || t.len % COMMIT_PAGE_SIZE || !t.len ||
	    t.off + t.len < t.off || t.off + t.len > COMMIT_FILE_MAX)
		return -EBADMSG;
	if ((uint64_t)t.next * sizeof(struct commit_ext) > n - sizeof(t))
		return -EBADMSG;
	extlen = (size_t)t.next * sizeof(struct commit_ext);
	if (devs_decode(b + sizeof(t) + extlen, n - sizeof(t) - extlen,
			t.dev_mask))
		return -EBADMSG;
	next_page = t.off / COMMIT_PAGE_SIZE;
	for (uint32_t i = 0; i < t.next; i++) {
		struct commit_ext e;
		int hole;

		memcpy(&e, b + sizeof(t) + (size_t)i * sizeof(e), sizeof(e));
		hole = e.dev == COMMIT_EXT_HOLE;
		if (hole && e.devoff)
			return -EBADMSG;
		if (e.pad || e.pages == 0 || e.fpage != next_page ||
		    (!hole && (e.dev >= COMMIT_MAX_DEVS ||
			       !(t.dev_mask & (1u << e.dev)))) ||
		    e.devoff % COMMIT_PAGE_SIZE ||
		    e.pages > (t.off + t.len) / COMMIT_PAGE_SIZE - e.fpage ||
		    e.devoff + e.pages * COMMIT_PAGE_SIZE < e.devoff ||
		    e.devoff + e.pages * COMMIT_PAGE_SIZE > (1ull << 62))
			return -EBADMSG;
		next_page += e.pages;
	}
	if (next_page != (t.off + t.len) / COMMIT_PAGE_SIZE)
		return -EBADMSG;
	*r = t;
	*ext = (const struct commit_ext *)(const void *)(b + sizeof(t));
	*devs = (const struct commit_dev *)(const void *)(b + sizeof(t) +
							  extlen);
	return 0;
}

int commit_status_decode(const void *p, size_t n, struct commit_status_rep *r)
{
	struct commit_status_rep t;

	if (n != sizeof(t))
		return -EBADMSG;
	memcpy(&t, p, sizeof(t));
	if (t.pad || t.status < -4095)
		return -EBADMSG;
	*r = t;
	return 0;
}

void commit_take_fds(struct msghdr *mh, int *fds, int *nfds, int max)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t k;
		int *cf;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		cf = (int *)(void *)CMSG_DATA(c);
		for (size_t i = 0; i < k; i++) {
			if (fds && *nfds < max)
				fds[(*nfds)++] = cf[i];
			else
				close(cf[i]);
		}
	}
}
