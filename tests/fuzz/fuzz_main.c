// SPDX-License-Identifier: MIT
/* fuzz_main.c -- the plain driver of a harness (no libFuzzer): every
 * file of the corpus directory as it is, then N seeded mutations of
 * them, deterministic so a failure reproduces. Usage: HARNESS DIR [N] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_vol.h"

struct input {
	uint8_t *data;
	size_t size;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static size_t load(const char *dir, struct input **out)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, by_name);
	size_t k = 0;

	if (n < 0) {
		fprintf(stderr, "fuzz: cannot read corpus '%s'\n", dir);
		exit(2);
	}
	*out = calloc((size_t)n + 1, sizeof(**out));
	for (int i = 0; i < n; i++) {
		char path[4096];
		FILE *f;
		long len;

		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		f = ents[i]->d_name[0] == '.' ? NULL : fopen(path, "rb");
		free(ents[i]);
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		(*out)[k].data = malloc((size_t)len + 1);
		(*out)[k].size = fread((*out)[k].data, 1, (size_t)len, f);
		fclose(f);
		k++;
	}
	free(ents);
	return k;
}

static void mutate(uint8_t *b, size_t *n, size_t cap)
{
	unsigned flips = 1 + (unsigned)(next() % 8);

	for (unsigned f = 0; f < flips && *n; f++) {
		size_t at = next() % *n;

		switch (next() % 6) {
		case 0: b[at] ^= (uint8_t)(1u << (next() % 8)); break;
		case 1: b[at] = (uint8_t)next(); break;
		case 2: memset(b + at, 0xff, *n - at > 8 ? 8 : *n - at); break;
		case 3: memset(b + at, 0, *n - at > 8 ? 8 : *n - at); break;
		case 4: { /* a small integer where a field may be */
			uint64_t v = next() % 4097;

			memcpy(b + at, &v, *n - at > 8 ? 8 : *n - at);
			break;
		}
		default: *n = at; break; /* truncate */
		}
	}
	if (next() % 32 == 0) { /* grow with noise */
		size_t to = *n + next() % 256;

		for (to = to > cap ? cap : to; *n < to; (*n)++)
			b[*n] = (uint8_t)next();
	}
}

int main(int argc, char **argv)
{
	struct input *in;
	size_t nin, cap = 0;
	unsigned long iters = argc > 2 ? strtoul(argv[2], NULL, 0) : 2000;
	uint8_t *buf;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS-DIR [ITERATIONS]\n", argv[0]);
		return 2;
	}
	nin = load(argv[1], &in);
	if (nin == 0) {
		fprintf(stderr, "fuzz: corpus '%s' is empty\n", argv[1]);
		return 2;
	}
	for (size_t i = 0; i < nin; i++) {
		LLVMFuzzerTestOneInput(in[i].data, in[i].size);
		if (in[i].size > cap)
			cap = in[i].size;
	}
	cap += 256;
	buf = malloc(cap);
	for (unsigned long i = 0; i < iters; i++) {
		const struct input *s = &in[next() % nin];
		size_t n = s->size;

		memcpy(buf, s->data, n);
		mutate(buf, &n, cap);
		LLVMFuzzerTestOneInput(buf, n);
	}
	printf("%s: %zu corpus inputs, %lu mutations, no finding\n", argv[0],
	       nin, iters);
	for (size_t i = 0; i < nin; i++)
		free(in[i].data);
	free(in);
	free(buf);
	return 0;
}
