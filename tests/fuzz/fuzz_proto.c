// SPDX-License-Identifier: MIT
/* fuzz_proto.c -- fuzz the libcommit message decoders (libcommit/proto.h) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/*
 * LLVMFuzzerTestOneInput() feeds one input to every decoder, the first
 * byte choosing which gets the rest first. Built plainly (meson test) a
 * main() runs it on seeds of valid messages and on many seeded random
 * mutations of them; with clang -fsanitize=fuzzer,address,undefined
 * -DDG_LIBFUZZER it is a libFuzzer target.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rep(const uint8_t *p, size_t n)
{
	struct commit_map_rep r;
	const struct commit_ext *e;
	const struct commit_dev *dv;

	if (commit_map_rep_decode(p, n, &r, &e, &dv) == 0 && r.status == 0) {
		uint64_t pages = 0;

		/* What a successful decode promises the client. */
		for (uint32_t i = 0; i < r.next; i++) {
			struct commit_ext x;

			memcpy(&x, (const uint8_t *)e + i * sizeof(x), sizeof(x));
			/* A hole of a read-only map names no device. */
			if (x.dev == COMMIT_EXT_HOLE ? x.devoff != 0
			    : x.dev >= COMMIT_MAX_DEVS ||
				      !(r.dev_mask & 1u << x.dev))
				abort();
			pages += x.pages;
		}
		if (pages * COMMIT_PAGE_SIZE != r.len)
			abort();
		for (unsigned i = 0; i < (unsigned)__builtin_popcount(r.dev_mask);
		     i++) {
			struct commit_dev v;

			memcpy(&v, (const uint8_t *)dv + i * sizeof(v),
			       sizeof(v));
			if (v.pathlen >= COMMIT_DEV_PATH ||
			    strlen(v.path) != v.pathlen ||
			    !(r.dev_mask & 1u << v.dev))
				abort();
		}
	}
}

/* The daemon reads a COMMIT body only up to commit_body_max() of its
 * map: a message a client could really send (every line once, all in a
 * map from offset 0 to the last run) must fit. */
static void check_budget(const struct commit_run *runs, uint32_t nr, size_t n)
{
	uint64_t end = 0;

	for (uint32_t i = 0; i < nr; i++) {
		struct commit_run a;

		memcpy(&a, (const uint8_t *)runs + i * sizeof(a), sizeof(a));
		if (a.off + a.len > end)
			end = a.off + a.len;
		for (uint32_t j = 0; j < i; j++) {
			struct commit_run b;

			memcpy(&b, (const uint8_t *)runs + j * sizeof(b),
			       sizeof(b));
			if (a.off < b.off + b.len && b.off < a.off + a.len)
				return; /* a line twice: no client sends it */
		}
	}
	end = (end + COMMIT_PAGE_SIZE - 1) / COMMIT_PAGE_SIZE * COMMIT_PAGE_SIZE;
	if (n > commit_body_max(end) || commit_body_max(end) > COMMIT_MSG_MAX)
		abort();
}

static void check_commit(const uint8_t *p, size_t n)
{
	const struct commit_run *runs;
	const uint8_t *data;
	uint32_t nr;

	if (commit_commit_decode(p, n, &nr, &runs, &data) == 0) {
		uint64_t sum = 0;

		for (uint32_t i = 0; i < nr; i++) {
			struct commit_run r;

			memcpy(&r, (const uint8_t *)runs + i * sizeof(r), sizeof(r));
			if (!r.len || r.len % COMMIT_LINE_SIZE ||
			    r.off % COMMIT_PAGE_SIZE + r.len > COMMIT_PAGE_SIZE)
				abort();
			sum += r.len;
		}
		if (data + sum != p + n)
			abort();
		check_budget(runs, nr, n);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Decoders take aligned, malloc'd payloads, as the daemon and the
	 * client give them. */
	uint8_t *p = malloc(size ? size : 1);
	struct commit_hdr h;
	struct commit_map_req mq;
	struct commit_verify_req vq;
	struct commit_status_rep st;

	if (!p)
		return 0;
	memcpy(p, data, size);
	if (commit_hdr_decode(p, size, &h) == 0 &&
	    (h.magic != COMMIT_PROTO_MAGIC || h.len > COMMIT_MSG_MAX ||
	     h.type < COMMIT_MSG_MAP || h.type > COMMIT_MSG_STAGE))
		abort();
	if (size >= 16) {
		size_t n = size - 16;

		memmove(p, p + 16, n);
		commit_map_req_decode(p, n, &mq);
		commit_verify_req_decode(p, n, &vq);
		commit_status_decode(p, n, &st);
		check_commit(p, n);
		check_rep(p, n);
	}
	free(p);
	return 0;
}

#ifndef DG_LIBFUZZER
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A COMMIT, or a STAGE (same payload: a piece of a large sync). */
static size_t seed_commit(uint8_t *b, uint16_t type)
{
	struct commit_hdr h;
	struct commit_commit_req q = { 2, 0 };
	struct commit_run r[2] = { { 4096, 64, 0 }, { 8192 + 128, 128, 0 } };
	size_t n = sizeof(q) + sizeof(r) + 192;

	commit_hdr_encode(&h, type, (uint32_t)n, 1);
	memcpy(b, &h, 16);
	memcpy(b + 16, &q, sizeof(q));
	memcpy(b + 16 + sizeof(q), r, sizeof(r));
	memset(b + 16 + sizeof(q) + sizeof(r), 0xab, 192);
	return 16 + n;
}

static size_t seed_rep(uint8_t *b)
{
	struct commit_hdr h;
	struct commit_map_rep r = { 0, 2, 0, 8 * 4096, 8 * 4096, 0x5, 0 };
	struct commit_ext e[2] = { { 0, 3, 1 << 20, 0, 0 },
				   { 3, 5, 9 << 20, 2, 0 } };
	struct commit_dev v[2] = { { 1, 2, 0, 4, "/d/0" },
				   { 1, 3, 2, 0, "" } };

	commit_hdr_encode(&h, COMMIT_MSG_MAP_REP,
			  sizeof(r) + sizeof(e) + sizeof(v), 1);
	memcpy(b, &h, 16);
	memcpy(b + 16, &r, sizeof(r));
	memcpy(b + 16 + sizeof(r), e, sizeof(e));
	memcpy(b + 16 + sizeof(r) + sizeof(e), v, sizeof(v));
	return 16 + sizeof(r) + sizeof(e) + sizeof(v);
}

int main(int argc, char **argv)
{
	unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 0) : 300000;
	uint8_t seed[3][1024], buf[1100];
	size_t sn[3] = { seed_commit(seed[0], COMMIT_MSG_COMMIT),
			 seed_rep(seed[1]),
			 seed_commit(seed[2], COMMIT_MSG_STAGE) };
	struct commit_hdr h;

	/* Every message type decodes, and one past the last does not. */
	commit_hdr_encode(&h, COMMIT_MSG_STAGE, 0, 1);
	if (commit_hdr_decode(&h, sizeof(h), &h) != 0)
		abort();
	commit_hdr_encode(&h, COMMIT_MSG_STAGE + 1, 0, 1);
	if (commit_hdr_decode(&h, sizeof(h), &h) != -EBADMSG)
		abort();
	for (int s = 0; s < 3; s++)
		LLVMFuzzerTestOneInput(seed[s], sn[s]);
	for (unsigned long i = 0; i < iters; i++) {
		int s = (int)(next() % 3);
		size_t n = sn[s];
		unsigned flips = 1 + (unsigned)(next() % 8);

		memcpy(buf, seed[s], n);
		for (unsigned f = 0; f < flips && n; f++) {
			size_t at = next() % n;

			switch (next() % 4) {
			case 0: buf[at] ^= (uint8_t)(1u << (next() % 8)); break;
			case 1: buf[at] = (uint8_t)next(); break;
			case 2: memset(buf + at, 0xff, n - at > 8 ? 8 : n - at); break;
			default: n = at; break; /* truncate */
			}
		}
		if (next() % 16 == 0) { /* pure noise */
			n = next() % sizeof(buf);
			for (size_t k = 0; k < n; k++)
				buf[k] = (uint8_t)next();
		}
		LLVMFuzzerTestOneInput(buf, n);
	}
	/* The budget's bounds: none without a map, the cap for any map. */
	if (commit_body_max(0) != sizeof(struct commit_commit_req) ||
	    commit_body_max(UINT64_MAX) != COMMIT_MSG_MAX ||
	    commit_body_max(1ull << 52) != COMMIT_MSG_MAX)
		abort();
	printf("fuzz_proto: %lu inputs, no violation\n", iters);
	return 0;
}
#endif
