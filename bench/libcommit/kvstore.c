// SPDX-License-Identifier: MIT
/* kvstore.c -- a persistent key-value store on a libcommit map */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcommit.h"

/*
 * usage: kvstore FILE put KEY VALUE | get KEY | del KEY | bench N
 * The file is a header and an open-addressing table of fixed slots;
 * every put/del is one commit_sync(), so a crash leaves the table as it
 * was before or after the operation, never half-updated.
 */

#define KV_MAGIC 0x31564b4744ull /* "DGKV1" */
#define KEY_MAX	 48
#define VAL_MAX	 192

struct slot {
	uint32_t used;		/* 1 live, 2 deleted */
	uint32_t klen;
	char key[KEY_MAX];
	uint32_t vlen;
	char val[VAL_MAX];
	uint32_t pad;
};

struct kv {
	uint64_t magic, nslots, count, pad[5];
	struct slot s[];
};

static uint64_t hash(const char *k, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	while (n--)
		h = (h ^ (uint8_t)*k++) * 1099511628211ull;
	return h;
}

static struct slot *find(struct kv *kv, const char *k, int insert)
{
	size_t n = strlen(k);
	struct slot *tomb = NULL;

	for (uint64_t i = 0, h = hash(k, n); i < kv->nslots; i++) {
		struct slot *s = &kv->s[(h + i) % kv->nslots];

		if (s->used == 0)
			return insert ? (tomb ? tomb : s) : NULL;
		if (s->used == 2) {
			if (!tomb)
				tomb = s;
			continue;
		}
		if (s->klen == n && !memcmp(s->key, k, n))
			return s;
	}
	return insert ? tomb : NULL;
}

static int put(struct kv *kv, const char *k, const char *v)
{
	struct slot *s = find(kv, k, 1);

	if (!s || strlen(k) > KEY_MAX || strlen(v) > VAL_MAX)
		return -1;
	if (s->used != 1)
		kv->count++;
	s->used = 1;
	s->klen = (uint32_t)strlen(k);
	memcpy(s->key, k, s->klen);
	s->vlen = (uint32_t)strlen(v);
	memcpy(s->val, v, s->vlen);
	return 0;
}

int main(int argc, char **argv)
{
	struct commit_map *m;
	struct kv *kv;
	size_t size = 64u << 20;
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: kvstore FILE put K V | get K | del K | "
			"bench N\n");
		return 2;
	}
	ret = commit_map_new(argv[1], 0, size, COMMIT_MAP_RDWR, &m);
	if (ret) {
		fprintf(stderr, "kvstore: %s\n", commit_errormsg());
		return 1;
	}
	kv = commit_map_addr(m);
	if (kv->magic != KV_MAGIC) {
		kv->magic = KV_MAGIC;
		kv->nslots = (size - sizeof(*kv)) / sizeof(struct slot);
		kv->count = 0;
		commit_sync(m);
	}
	if (!strcmp(argv[2], "put") && argc == 5) {
		ret = put(kv, argv[3], argv[4]);
	} else if (!strcmp(argv[2], "get") && argc == 4) {
		struct slot *s = find(kv, argv[3], 0);

		if (s)
			printf("%.*s\n", (int)s->vlen, s->val);
		ret = s ? 0 : 1;
	} else if (!strcmp(argv[2], "del") && argc == 4) {
		struct slot *s = find(kv, argv[3], 0);

		if (s) {
			s->used = 2;
			kv->count--;
		}
		ret = s ? 0 : 1;
	} else if (!strcmp(argv[2], "bench") && argc == 4) {
		unsigned long n = strtoul(argv[3], NULL, 0);
		struct timespec a, b;
		char k[32], v[64];

		clock_gettime(CLOCK_MONOTONIC, &a);
		for (unsigned long i = 0; i < n; i++) {
			snprintf(k, sizeof(k), "key%lu", i);
			snprintf(v, sizeof(v), "value-%lu", i * 7);
			put(kv, k, v);
			if (commit_sync(m)) {
				fprintf(stderr, "kvstore: %s\n", commit_errormsg());
				return 1;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
		printf("puts=%lu seconds=%.3f puts_per_s=%.0f us_per_put=%.1f\n",
		       n, s, n / s, s * 1e6 / n);
	} else {
		fprintf(stderr, "kvstore: bad command\n");
		ret = 2;
	}
	if (ret == 0 && strcmp(argv[2], "get") && commit_sync(m)) {
		fprintf(stderr, "kvstore: %s\n", commit_errormsg());
		ret = 1;
	}
	commit_map_delete(&m);
	return ret;
}
