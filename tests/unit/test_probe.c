// SPDX-License-Identifier: MIT
/* test_probe.c -- what a path holds, before a tool writes to it */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "probe.h"

#define SIZE (32ull << 20)

static int probe(const char *path, struct dg_probe *p)
{
	char err[256];

	return dg_dev_probe(path, p, err, sizeof(err));
}

static void make_file(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0) {
		if (ftruncate(fd, (off_t)size) < 0)
			perror("ftruncate");
		close(fd);
	}
}

static void describe_is(const struct dg_probe *p, const char *want)
{
	char buf[256];

	dg_probe_describe(p, buf, sizeof(buf));
	if (strcmp(buf, want)) {
		fprintf(stderr, "describe: '%s', want '%s'\n", buf, want);
		test_failures++;
	}
}

/* Absent, empty, blank (sparse and written zeros), data. */
static void test_kinds(void)
{
	char *path = tfile_path("probe-kinds");
	struct dg_probe p;
	uint64_t st = 1;
	uint8_t buf[4096];

	unlink(path);
	CHECK_EQ(probe(path, &p), 0);
	CHECK_EQ(p.kind, DG_PROBE_ABSENT);
	make_file(path, 0);
	CHECK_EQ(probe(path, &p), 0);
	CHECK_EQ(p.kind, DG_PROBE_EMPTY);
	describe_is(&p, "is empty");
	make_file(path, SIZE);
	CHECK_EQ(probe(path, &p), 0);
	CHECK_EQ(p.kind, DG_PROBE_BLANK);
	CHECK_EQ(p.size, SIZE);
	describe_is(&p, "is blank (all zeros)");
	/* Zeros written (no hole) are blank too; one byte is not. */
	memset(buf, 0, sizeof(buf));
	{
		int fd = open(path, O_RDWR);

		REQUIRE(fd >= 0);
		for (int i = 0; i < 16; i++)
			CHECK_EQ(pwrite(fd, buf, sizeof(buf), i * 4096ll),
				 4096);
		CHECK_EQ(probe(path, &p), 0);
		CHECK_EQ(p.kind, DG_PROBE_BLANK);
		trand_fill(&st, buf, 1);
		buf[0] |= 1;
		CHECK_EQ(pwrite(fd, buf, 1, (off_t)SIZE - 1), 1);
		close(fd);
	}
	CHECK_EQ(probe(path, &p), 0);
	CHECK_EQ(p.kind, DG_PROBE_DATA);
	describe_is(&p, "holds data but no daxguard superblock");
	unlink(path);
	free(path);
}

/* A device of a volume, and one whose superblocks are damaged. */
static void test_daxguard(void)
{
	struct tvol tv;
	struct dg_probe p;
	struct dg_vol *vol;
	struct dg_vol_info in;
	uint8_t junk[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	char buf[512];

	tvol_make(&tv, "probe-dg", 3, 1, SIZE, false);
	vol = tvol_open(&tv, DG_OPEN_RDONLY);
	REQUIRE(vol);
	dg_vol_get_info(vol, &in);
	dg_vol_close(vol);
	CHECK_EQ(probe(tv.paths[2], &p), 0);
	CHECK_EQ(p.kind, DG_PROBE_DAXGUARD);
	CHECK(p.sb_valid);
	CHECK_EQ(p.dev_index, 2);
	CHECK_EQ(p.dev_count, 3);
	CHECK(!memcmp(p.uuid, in.uuid, 16));
	CHECK(dg_dev_explain(tv.paths[2], &in, buf, sizeof(buf)) == NULL);
	/* Both copies fail their checksum: still ours, damaged. */
	tvol_poke(&tv, 2, 200, junk, sizeof(junk));
	tvol_poke(&tv, 2, SIZE - 4096 + 200, junk, sizeof(junk));
	CHECK_EQ(probe(tv.paths[2], &p), 0);
	CHECK_EQ(p.kind, DG_PROBE_DAXGUARD);
	CHECK(!p.sb_valid);
	CHECK(!memcmp(p.uuid, in.uuid, 16));
	CHECK(dg_dev_explain(tv.paths[2], &in, buf, sizeof(buf)) != NULL);
	tvol_cleanup(&tv);
}

/* A real ext4 image, when mkfs.ext4 is there. */
static void test_ext4(void)
{
	char *path = tfile_path("probe-ext4"), cmd[512];
	struct dg_probe p;

	if (access("/usr/sbin/mkfs.ext4", X_OK) && access("/sbin/mkfs.ext4",
							  X_OK)) {
		fprintf(stderr, "no mkfs.ext4: skipped\n");
		free(path);
		return;
	}
	make_file(path, SIZE);
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F -L data '%s'", path);
	REQUIRE(system(cmd) == 0);
	CHECK_EQ(probe(path, &p), 0);
	CHECK_EQ(p.kind, DG_PROBE_FOREIGN);
	CHECK(!strcmp(p.type, "ext4"));
	CHECK(!strcmp(p.label, "data"));
	describe_is(&p, "contains an ext4 file system labelled 'data'");
	unlink(path);
	free(path);
}

static void test_given_twice(void)
{
	char *a = tfile_path("probe-twice-a"), *b = tfile_path("probe-twice-b");
	char *gone = tfile_path("probe-twice-gone"), link[600], err[256];
	const char *p[3];

	make_file(a, 4096);
	make_file(b, 4096);
	unlink(gone);
	snprintf(link, sizeof(link), "%s.link", a);
	unlink(link);
	REQUIRE(symlink(a, link) == 0);
	p[0] = a, p[1] = b, p[2] = a;
	CHECK_EQ(dg_paths_given_twice(p, 3, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "is given twice") != NULL);
	p[2] = link;
	CHECK_EQ(dg_paths_given_twice(p, 3, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "are the same device, given twice") != NULL);
	p[0] = gone, p[1] = b, p[2] = gone; /* holes, not a device */
	CHECK_EQ(dg_paths_given_twice(p, 3, err, sizeof(err)), 0);
	unlink(link);
	free(a);
	free(b);
	free(gone);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "kinds", test_kinds },
		{ "daxguard", test_daxguard },
		{ "ext4", test_ext4 },
		{ "given_twice", test_given_twice },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
