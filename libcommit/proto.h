/* SPDX-License-Identifier: MIT */
/* proto.h -- libcommit wire protocol: bytes on the commit socket */
#ifndef COMMIT_PROTO_H
#define COMMIT_PROTO_H

/*
 * OVERVIEW. The daemon listens on one unix stream socket per mounted
 * volume; its path is the value of the extended attribute
 * "user.daxguard.commit" of any file of the mount. One connection holds
 * at most one map. Every message is a struct commit_hdr followed by
 * hdr.len payload bytes; all integers are little endian (x86-64 only,
 * asserted below); structs have no implicit padding.
 *
 *   client                                   daemon
 *   MAP   commit_map_req  + SCM_RIGHTS(file fd)
 *                         <- MAP_REP commit_map_rep, commit_ext[next],
 *                            commit_dev[one per bit of dev_mask,
 *                            ascending device index]
 *   COMMIT commit_commit_req, commit_run[nruns], data (sum of run lens)
 *                         <- STATUS commit_status_rep
 *   STAGE  as COMMIT      <- STATUS
 *
 * One sync is atomic whatever its size. A COMMIT alone is one sync; the
 * daemon applies it in one update when it fits, else stages and
 * publishes it. A sync too large for one message is sent as STAGE
 * messages (staged durably, nothing applied) ended by a COMMIT (its
 * runs join them; STATUS once all of it is applied, durable and
 * parity-protected, all or nothing after a crash). An error on any of
 * them, a STAGE without runs (the client gives the sync up), UNMAP or
 * the end of the connection drops the staged part.
 * Added in version 2 without a bump: an older daemon answers STAGE
 * with -EBADMSG and closes the connection.
 *   VERIFY commit_verify_req <- STATUS (value: first bad file offset)
 *   UNMAP  (no payload)      <- STATUS; closing the socket unmaps too
 *
 * The daemon never passes a descriptor (version 2; version 1 passed
 * read-only descriptors of whole devices, which let anyone who could
 * read one file read the whole volume). A commit_dev names a device by
 * path and identity; the client opens it with its own credentials, so
 * it gets no access the kernel would not give it anyway, or else maps
 * the file through the mount (libcommit/README.md, "Permissions").
 *
 * A message that fails to decode gets a STATUS with a negative errno
 * when the header was readable, and the connection is closed: a stream
 * cannot be resynchronised after a bad length.
 *
 * Every decoder below checks every field against the bytes it was given
 * (never assert on socket bytes) and is fuzzed by
 * tests/fuzz/fuzz_proto.c.
 */
#include <stddef.h>
#include <stdint.h>

#define COMMIT_PROTO_MAGIC   0x4d434744u /* "DGCM" */
#define COMMIT_PROTO_VERSION 2u
/* Largest payload either side accepts. */
#define COMMIT_MSG_MAX	     (160u << 20)
#define COMMIT_PAGE_SIZE     4096u
#define COMMIT_LINE_SIZE     64u
#define COMMIT_MAX_DEVS	     16u
/* Largest file offset a request may name: the filesystem's largest file
 * size (DG_MAX_FILE_SIZE in fs/volume/include/format.h; the daemon checks
 * that they agree). */
#define COMMIT_FILE_MAX	     (UINT64_C(1) << 52)
#define COMMIT_XATTR	     "user.daxguard.commit"

enum commit_msg_type {
	COMMIT_MSG_MAP = 1,
	COMMIT_MSG_MAP_REP = 2,
	COMMIT_MSG_COMMIT = 3,
	COMMIT_MSG_VERIFY = 4,
	COMMIT_MSG_UNMAP = 5,
	COMMIT_MSG_STATUS = 6,
	COMMIT_MSG_STAGE = 7,
};

struct commit_hdr {
	uint32_t magic;		/* COMMIT_PROTO_MAGIC */
	uint16_t version;	/* COMMIT_PROTO_VERSION */
	uint16_t type;		/* enum commit_msg_type */
	uint32_t len;		/* payload bytes that follow */
	uint32_t seq;		/* echoed in the reply */
};
_Static_assert(sizeof(struct commit_hdr) == 16, "commit_hdr size");

#define COMMIT_REQ_RW 1u

struct commit_map_req {
	uint64_t off;		/* file bytes, page aligned */
	uint64_t len;		/* bytes; 0: to the end of the file */
	uint32_t flags;		/* COMMIT_REQ_RW */
	uint32_t pad;		/* zero */
};
_Static_assert(sizeof(struct commit_map_req) == 24, "map_req size");

struct commit_ext {
	uint64_t fpage;		/* first file page */
	uint64_t pages;		/* > 0 */
	uint64_t devoff;	/* bytes on the device, page aligned */
	uint32_t dev;		/* device index, a bit of dev_mask, or
				 * COMMIT_EXT_HOLE */
	uint32_t pad;		/* zero */
};
_Static_assert(sizeof(struct commit_ext) == 32, "commit_ext size");

/* A hole of a read-only map (devoff 0, no device): its pages read as
 * zeros. The daemon never allocates for a read-only map, so a reader
 * cannot fill the volume by mapping sparse files. Added in version 2
 * without a bump: an older client refuses such a reply (-EPROTO) rather
 * than misread it; a read-write map never has one. */
#define COMMIT_EXT_HOLE 0xffffffffu

struct commit_map_rep {
	int32_t status;		/* 0 or -errno; nothing follows if < 0 */
	uint32_t next;		/* commit_ext that follow */
	uint64_t off;		/* mapped file bytes [off, off + len) */
	uint64_t len;		/* multiple of the page size */
	uint64_t size;		/* file size at map time */
	uint32_t dev_mask;	/* devices named by the commit_dev that follow */
	uint32_t pad;		/* zero */
};
_Static_assert(sizeof(struct commit_map_rep) == 40, "map_rep size");

#define COMMIT_DEV_PATH 256u

struct commit_dev {
	uint64_t st_dev;	/* stat() identity of the device ... */
	uint64_t st_ino;	/* ... as the daemon opened it */
	uint32_t dev;		/* device index, a bit of dev_mask */
	uint32_t pathlen;	/* bytes of path; 0: no usable path */
	char path[COMMIT_DEV_PATH]; /* absolute, NUL after pathlen */
};
_Static_assert(sizeof(struct commit_dev) == 280, "commit_dev size");

struct commit_commit_req {
	uint32_t nruns;		/* commit_run that follow */
	uint32_t pad;		/* zero */
};

struct commit_run {
	uint64_t off;		/* file bytes, line aligned */
	uint32_t len;		/* bytes, lines, within one page */
	uint32_t pad;		/* zero */
};
_Static_assert(sizeof(struct commit_run) == 16, "commit_run size");

struct commit_verify_req {
	uint64_t off, len;	/* file bytes */
};

struct commit_status_rep {
	int32_t status;		/* >= 0 result, or -errno */
	uint32_t pad;		/* zero */
	uint64_t value;		/* verify: first bad offset */
};
_Static_assert(sizeof(struct commit_status_rep) == 16, "status size");

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the commit protocol is little endian");

/* Validate a header: magic, version, known type, len <= COMMIT_MSG_MAX.
 * -EPROTO bad magic/version, -EBADMSG unknown type, -EMSGSIZE too long,
 * -EINVAL fewer than 16 bytes. */
/* Keep the descriptors a received message carries (SCM_RIGHTS), up to
 * max in fds[*nfds...] (none when fds is NULL); close the rest, so a
 * hostile peer cannot make the receiver leak descriptors. */
struct msghdr;
void commit_take_fds(struct msghdr *mh, int *fds, int *nfds, int max);

int commit_hdr_decode(const void *buf, size_t n, struct commit_hdr *h);
void commit_hdr_encode(struct commit_hdr *h, uint16_t type, uint32_t len,
		       uint32_t seq);

int commit_map_req_decode(const void *p, size_t n, struct commit_map_req *r);

/* A COMMIT payload: on success *runs and *data point into p. Checks
 * that the runs and their data account for exactly n bytes, each run is
 * 1..page size long, line aligned and within one page, and the offsets
 * do not overflow. */
int commit_commit_decode(const void *p, size_t n, uint32_t *nruns,
			 const struct commit_run **runs, const uint8_t **data);

/* The largest COMMIT or STAGE payload a map of maplen bytes can need:
 * a run (and its 64 bytes) per line of the map, and at most
 * COMMIT_MSG_MAX. The daemon reads no larger body (a client never sends
 * a line twice in one message), so a header alone cannot make it hold
 * memory its map does not justify. */
size_t commit_body_max(uint64_t maplen);

int commit_verify_req_decode(const void *p, size_t n,
			     struct commit_verify_req *r);

/* A MAP_REP payload: the extents must be sorted, contiguous, cover
 * [off, off + len) exactly, name devices in dev_mask (or be holes:
 * COMMIT_EXT_HOLE, devoff 0; dev_mask is 0 when all are) and not
 * overflow;
 * one commit_dev per bit of dev_mask follows, in ascending order, each
 * path empty or absolute and NUL-terminated at pathlen. *ext and *devs
 * point into p (unaligned: copy before use). */
int commit_map_rep_decode(const void *p, size_t n, struct commit_map_rep *r,
			  const struct commit_ext **ext,
			  const struct commit_dev **devs);

int commit_status_decode(const void *p, size_t n, struct commit_status_rep *r);

#endif /* COMMIT_PROTO_H */
