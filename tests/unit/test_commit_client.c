// SPDX-License-Identifier: MIT
/* test_commit_client.c -- libcommit's client (libcommit/client.c)
 * against the real daemon: map, store, sync (whole and by range),
 * verify, discard on delete, read-only maps, and its refusals.
 * Usage: test_commit_client DAEMON [CASE...]; a volume in /dev/shm is
 * mounted on a temporary directory for the run and unmounted at exit
 * (the daemon also dies with this process). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commit_i.h"
#include "harness.h"

#define PG CM_PAGE
#define FUSE_SUPER_MAGIC 0x65735546

static const char *daemon_path;
static struct tvol tv;
static char mnt[64];
static pid_t daemon_pid;

static void unmount(void)
{
	pid_t pid;

	if (!daemon_pid)
		return;
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-z", mnt, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	waitpid(daemon_pid, NULL, 0);
	daemon_pid = 0;
	rmdir(mnt);
	tvol_cleanup(&tv);
}

static bool mounted(void)
{
	struct statfs s;

	return statfs(mnt, &s) == 0 && s.f_type == FUSE_SUPER_MAGIC;
}

/* Mount once, for every case; false when the daemon would not. */
static bool mount_once(void)
{
	char devs[3 * 80];

	if (daemon_pid)
		return true;
	tvol_make(&tv, "client", 3, 1, 16ull << 20, false);
	snprintf(devs, sizeof(devs), "%s,%s,%s", tv.paths[0], tv.paths[1],
		 tv.paths[2]);
	snprintf(mnt, sizeof(mnt), "/tmp/dgtest-mnt-XXXXXX");
	if (!mkdtemp(mnt))
		return false;
	daemon_pid = fork();
	if (daemon_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execl(daemon_path, daemon_path, devs, mnt, "-f", (char *)NULL);
		_exit(127);
	}
	atexit(unmount);
	for (int i = 0; i < 500 && !mounted(); i++) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		if (waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid) {
			daemon_pid = 0;
			return false;
		}
		nanosleep(&ts, NULL);
	}
	return mounted();
}

/* A file of pages pages of byte fill on the mount; its path. */
static const char *file(const char *name, unsigned pages, int fill)
{
	static char path[128];
	uint8_t buf[PG];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", mnt, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return NULL;
	memset(buf, fill, sizeof(buf));
	for (unsigned i = 0; i < pages; i++)
		if (pwrite(fd, buf, PG, (off_t)i * PG) != PG) {
			close(fd);
			return NULL;
		}
	close(fd);
	return path;
}

/* Byte off of the file as the mount reads it now. */
static int byte_at(const char *path, size_t off)
{
	uint8_t b;
	int fd = open(path, O_RDONLY | O_DIRECT);
	ssize_t n;

	if (fd < 0)
		fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	{
		static uint8_t pg[PG] __attribute__((aligned(4096)));

		n = pread(fd, pg, PG, (off_t)(off / PG * PG));
		b = pg[off % PG];
	}
	close(fd);
	return n == PG ? b : -1;
}

static void test_sync_and_verify(void)
{
	struct commit_map *m = NULL;
	const char *path;
	uint8_t *a;
	size_t bad = 0;

	REQUIRE(mount_once());
	path = file("sync", 4, 0x11);
	REQUIRE(path);
	REQUIRE(commit_map_new(path, 0, 4 * PG, COMMIT_MAP_RDWR, &m) == 0);
	CHECK_EQ(commit_map_len(m), 4 * PG);
	a = commit_map_addr(m);
	CHECK(a[0] == 0x11 && a[4 * PG - 1] == 0x11);
	a[100] = 0xaa;
	a[2 * PG + 4000] = 0xbb;
	REQUIRE(commit_sync(m) == 0);
	CHECK_EQ(commit_verify(m, 0, 4 * PG, &bad), 0);
	CHECK(commit_sync(m) == 0); /* nothing pending: fine */
	REQUIRE(commit_map_delete(&m) == 0);
	CHECK(m == NULL);
	CHECK_EQ(byte_at(path, 100), 0xaa);
	CHECK_EQ(byte_at(path, 101), 0x11);
	CHECK_EQ(byte_at(path, 2 * PG + 4000), 0xbb);
}

/* sync_range applies its pages only; delete discards what is pending. */
static void test_range_and_discard(void)
{
	struct commit_map *m = NULL;
	const char *path;
	uint8_t *a;

	REQUIRE(mount_once());
	path = file("range", 4, 0x22);
	REQUIRE(path);
	REQUIRE(commit_map_new(path, 0, 0, COMMIT_MAP_RDWR, &m) == 0);
	CHECK_EQ(commit_map_len(m), 4 * PG); /* 0: to the end of the file */
	a = commit_map_addr(m);
	a[10] = 1;
	a[3 * PG + 10] = 3;
	REQUIRE(commit_sync_range(m, 0, PG) == 0);
	CHECK_EQ(commit_sync_range(m, 3 * PG, 2 * PG), -EINVAL);
	REQUIRE(commit_map_delete(&m) == 0);
	CHECK_EQ(byte_at(path, 10), 1);
	CHECK_EQ(byte_at(path, 3 * PG + 10), 0x22);
}

static void test_read_only(void)
{
	struct commit_map *m = NULL, *w = NULL;
	const char *path;

	REQUIRE(mount_once());
	path = file("ro", 2, 0x33);
	REQUIRE(path);
	REQUIRE(commit_map_new(path, 0, 2 * PG, COMMIT_MAP_RDONLY, &m) == 0);
	CHECK(((uint8_t *)commit_map_addr(m))[PG] == 0x33);
	CHECK_EQ(dies_storing((uint8_t *)commit_map_addr(m) + 5), SIGSEGV);
	CHECK_EQ(commit_sync(m), -EBADF);
	/* Read-only maps do not keep a writer out. */
	REQUIRE(commit_map_new(path, 0, PG, COMMIT_MAP_RDWR, &w) == 0);
	commit_map_delete(&w);
	commit_map_delete(&m);
}

static void test_refusals(void)
{
	struct commit_map *m = NULL, *m2 = NULL;
	const char *path;
	char other[] = "/dev/shm/dgtest-notdaxguard-XXXXXX";
	int fd;

	REQUIRE(mount_once());
	path = file("refuse", 2, 0);
	REQUIRE(path);
	CHECK_EQ(commit_map_new(path, 100, PG, COMMIT_MAP_RDWR, &m), -EINVAL);
	CHECK(strlen(commit_errormsg()) > 0);
	CHECK_EQ(commit_map_new(path, 0, PG, 0x80, &m), -EINVAL);
	REQUIRE(commit_map_new(path, 0, PG, COMMIT_MAP_RDWR, &m) == 0);
	/* One writer a file. */
	CHECK_EQ(commit_map_new(path, 0, PG, COMMIT_MAP_RDWR, &m2), -EBUSY);
	commit_map_delete(&m);
	/* A file elsewhere: refused with a reason, not a crash. */
	fd = mkstemp(other);
	REQUIRE(fd >= 0);
	CHECK(commit_map_new_fd(fd, 0, PG, COMMIT_MAP_RDONLY, &m2) < 0);
	CHECK(m2 == NULL);
	CHECK(strlen(commit_errormsg()) > 0);
	close(fd);
	unlink(other);
	CHECK(commit_map_delete(&m2) == 0); /* NULL is fine */
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "sync_and_verify", test_sync_and_verify },
		{ "range_and_discard", test_range_and_discard },
		{ "read_only", test_read_only },
		{ "refusals", test_refusals },
		{ NULL, NULL },
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s DAEMON [CASE...]\n", argv[0]);
		return 2;
	}
	daemon_path = argv[1];
	argv[1] = argv[0];
	return test_main(argc - 1, argv + 1, cases);
}
