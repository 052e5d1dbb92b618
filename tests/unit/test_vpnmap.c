// SPDX-License-Identifier: MIT
/* test_vpnmap.c -- the walk's per-vpn class and owner (vpnmap.c) cost
 * what is in use, not the volume's size: leaves are allocated for the
 * groups that hold a used vpn only, and fsck checks a volume whose
 * vpn space a dense array per vpn could not fit in the memory left */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fscheck.h"
#include "tfs.h"

#define GiB (1ull << 30)
#define L DG_VPNMAP_LEAF

/* A missing leaf reads free/0; a store allocates its leaf once; a
 * free store where no leaf is allocates nothing; next skips to the
 * allocated leaves. */
static void test_map_sparse(void)
{
	uint64_t vpns = 64 * GiB / DG_PAGE_SIZE * 4;	/* 4 x 64 GiB */
	struct dg_vpnmap *m = dg_vpnmap_new(vpns);

	REQUIRE(m);
	CHECK_EQ(dg_vpnmap_leaves(m), 0);
	CHECK_EQ(dg_vpnmap_cls(m, 12345), DG_PC_FREE);
	CHECK_EQ(dg_vpnmap_owner(m, 12345), 0);
	CHECK_EQ(dg_vpnmap_next(m, 0), vpns);
	CHECK_EQ(dg_vpnmap_set(m, 7, DG_PC_FREE, 0), 0);
	CHECK_EQ(dg_vpnmap_leaves(m), 0);
	CHECK_EQ(dg_vpnmap_set(m, vpns, DG_PC_FILE, 1), -EINVAL);
	CHECK_EQ(dg_vpnmap_cls(m, vpns), DG_PC_FREE);

	CHECK_EQ(dg_vpnmap_set(m, 3 * L + 5, DG_PC_FILE, 42), 0);
	CHECK_EQ(dg_vpnmap_set(m, 3 * L + 6, DG_PC_DIR, 43), 0);
	CHECK_EQ(dg_vpnmap_set(m, vpns - 1, DG_PC_EMAP, 44), 0);
	CHECK_EQ(dg_vpnmap_leaves(m), 2);
	CHECK_EQ(dg_vpnmap_cls(m, 3 * L + 5), DG_PC_FILE);
	CHECK_EQ(dg_vpnmap_owner(m, 3 * L + 5), 42);
	CHECK_EQ(dg_vpnmap_cls(m, 3 * L + 6), DG_PC_DIR);
	CHECK_EQ(dg_vpnmap_owner(m, 3 * L + 6), 43);
	CHECK_EQ(dg_vpnmap_cls(m, 3 * L + 7), DG_PC_FREE);
	CHECK_EQ(dg_vpnmap_cls(m, vpns - 1), DG_PC_EMAP);
	CHECK_EQ(dg_vpnmap_next(m, 0), 3 * L);
	CHECK_EQ(dg_vpnmap_next(m, 3 * L + 9), 3 * L + 9);
	CHECK_EQ(dg_vpnmap_next(m, 4 * L), (vpns - 1) / L * L);
	CHECK_EQ(dg_vpnmap_next(m, vpns), vpns);
	/* freeing keeps the owner, as the walk's unmark did */
	CHECK_EQ(dg_vpnmap_set(m, 3 * L + 5, DG_PC_FREE, 42), 0);
	CHECK_EQ(dg_vpnmap_cls(m, 3 * L + 5), DG_PC_FREE);
	CHECK_EQ(dg_vpnmap_leaves(m), 2);
	dg_vpnmap_free(m);
	dg_vpnmap_free(NULL);
}

/* The groups of DG_VPNMAP_LEAF vpns that hold an allocated vpn. */
static uint64_t allocated_groups(struct dg_vol *vol, uint64_t vpns)
{
	uint64_t n = 0, v = 0;

	while ((v = dg_vpn_next_allocated(vol, v, vpns)) < vpns) {
		n++;
		v = (v / L + 1) * L;
	}
	return n;
}

static void count_problems(void *arg, const struct dg_chk_event *ev)
{
	(void)ev;
	(*(unsigned *)arg)++;
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#ifndef UNDER_ASAN
/* Address space in use now (VmSize), in bytes; 0 if unknown. */
static uint64_t vm_size(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb << 10;
}
#endif

/*
 * 4 x 64 GiB (16M vpns per device, 64M in all) holding a few files:
 * the classification allocates a leaf per group in use (a handful of
 * the 16K), and the whole check runs with 256 MiB of address space
 * to spare, where a byte and an owner per vpn took 576 MiB.
 */
static void test_check_big_sparse(void)
{
	static uint8_t buf[DG_PAGE_SIZE];
	struct dg_vol_info in;
	struct dg_vpnmap *map = NULL;
	struct tfs t = { 0 };
	uint64_t groups, ino;
	unsigned events = 0;
	int status;
	pid_t pid;

	tvol_make(&t.tv, "vpnmap", 4, 1, 64 * GiB, false);
	t.vol = tvol_open(&t.tv, 0);
	REQUIRE(t.vol && dg_fs_open(t.vol, &t.fs) == 0);
	memset(buf, 0xa5, sizeof(buf));
	for (unsigned i = 0; i < 8; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", i);
		ino = tfs_file(&t, DG_ROOT_INO, name);
		REQUIRE(ino);
		for (uint64_t p = 0; p < 64; p++)
			REQUIRE(dg_fs_write(t.fs, ino, p * sizeof(buf), buf,
					    sizeof(buf)) == sizeof(buf));
	}
	dg_fs_close(t.fs);
	t.fs = NULL;
	dg_vol_get_info(t.vol, &in);
	CHECK(in.vpns >= 48 * GiB / DG_PAGE_SIZE);

	REQUIRE(dg_check_classify(t.vol, &map) == 0);
	groups = allocated_groups(t.vol, in.vpns);
	CHECK(groups > 0);
	/* a used vpn is an allocated one on a clean volume */
	CHECK(dg_vpnmap_leaves(map) <= groups);
	CHECK(dg_vpnmap_leaves(map) * 100 < in.vpns / L);
	CHECK_EQ(dg_vpnmap_cls(map, 0), DG_PC_ROOT);
	CHECK_EQ(dg_vpnmap_owner(map, dg_vpnmap_next(map, 1)), 0);
	dg_vpnmap_free(map);

	CHECK_EQ(dg_check_fs(t.vol, count_problems, NULL, &events), 0);
	CHECK_EQ(events, 0);

#ifndef UNDER_ASAN
	/* The check in a child whose address space ends 256 MiB past
	 * what it maps now: 0 problems, not -ENOMEM. */
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		uint64_t now = vm_size();
		struct rlimit r;
		unsigned ev = 0;
		int ret;

		if (!now)
			_exit(0);	/* no /proc: nothing to measure */
		r.rlim_cur = r.rlim_max = now + (256ull << 20);
		if (setrlimit(RLIMIT_AS, &r))
			_exit(3);
		ret = dg_check_fs(t.vol, count_problems, NULL, &ev);
		_exit(ret == 0 && ev == 0 ? 0 : ret == -ENOMEM ? 4 : 5);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
#else
	(void)pid;
	(void)status;
#endif
	tfs_done(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "map_sparse", test_map_sparse },
		{ "check_big_sparse", test_check_big_sparse },
		{ NULL, NULL },
	};
	return test_main(argc, argv, cases);
}
