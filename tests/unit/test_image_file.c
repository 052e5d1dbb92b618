// SPDX-License-Identifier: MIT
/* test_image_file.c -- resolving device paths under the protected_symlinks
 * rule, creating images 0600 whatever the umask, tightening modes */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "image_file.h"

/* A scratch tree: DIR/plain (0755) and DIR/sticky (1777), removed at
 * the end by rm_tree(); a case that bails out (REQUIRE) leaves it to
 * the next make_tree() or the exit, not on /dev/shm. */
static char dir[128];

static void rm_tree(void);

static bool make_tree(const char *name)
{
	static bool hooked;
	char p[256];

	if (!hooked) {
		atexit(rm_tree);
		hooked = true;
	}
	rm_tree();
	snprintf(dir, sizeof(dir), "/dev/shm/dgtest-%d-%s", getpid(), name);
	if (mkdir(dir, 0755) < 0)
		return false;
	snprintf(p, sizeof(p), "%s/plain", dir);
	if (mkdir(p, 0755) < 0)
		return false;
	snprintf(p, sizeof(p), "%s/sticky", dir);
	return mkdir(p, 0755) == 0 && chmod(p, 01777) == 0;
}

static void rm_tree(void)
{
	char cmd[PATH_MAX + 16];

	if (!dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	dir[0] = '\0';
}

static const char *at(const char *rel)
{
	static char bufs[4][PATH_MAX];
	static unsigned n;
	char *b = bufs[n++ % 4];

	snprintf(b, PATH_MAX, "%s/%s", dir, rel);
	return b;
}

static int resolve(const char *path, char *out)
{
	char err[PATH_MAX * 3];

	return dg_image_resolve(path, out, PATH_MAX, err, sizeof(err));
}

/* Paths without links come back as given; links are followed, relative
 * and absolute, through directories too. */
static void test_resolve_plain_and_links(void)
{
	char out[PATH_MAX];

	REQUIRE(make_tree("resolve"));
	CHECK_EQ(resolve(at("plain/none.img"), out), 0);
	CHECK(!strcmp(out, at("plain/none.img")));
	CHECK_EQ(resolve("relative/x.img", out), 0);
	CHECK(!strcmp(out, "relative/x.img"));
	CHECK_EQ(resolve("", out), 0);
	CHECK(!strcmp(out, ""));
	/* A link to a file that does not exist yet (relative target). */
	REQUIRE(symlink("none.img", at("plain/l1")) == 0);
	CHECK_EQ(resolve(at("plain/l1"), out), 0);
	CHECK(!strcmp(out, at("plain/none.img")));
	/* A link to a directory, the path going on through it. */
	REQUIRE(symlink(at("plain"), at("dirlink")) == 0);
	CHECK_EQ(resolve(at("dirlink/../plain/y.img"), out), 0);
	CHECK(!strcmp(out, at("plain/y.img")));
	/* Root's own link (or the directory owner's) in a sticky one. */
	REQUIRE(symlink(at("plain/a.img"), at("sticky/mine")) == 0);
	CHECK_EQ(resolve(at("sticky/mine"), out), 0);
	CHECK(!strcmp(out, at("plain/a.img")));
	/* A loop. */
	REQUIRE(symlink("loop2", at("plain/loop1")) == 0);
	REQUIRE(symlink("loop1", at("plain/loop2")) == 0);
	CHECK_EQ(resolve(at("plain/loop1"), out), -ELOOP);
	rm_tree();
}

/* Another user's link in a sticky, world-writable directory is refused,
 * as the last component or on the way; in a plain directory it is not. */
static void test_resolve_refuses_planted_links(void)
{
	char out[PATH_MAX], err[PATH_MAX * 3];

	if (geteuid() != 0) {
		fprintf(stderr, "skipped: needs root to chown a link\n");
		return;
	}
	REQUIRE(make_tree("planted"));
	REQUIRE(symlink(at("plain/victim"), at("sticky/img")) == 0);
	REQUIRE(lchown(at("sticky/img"), 65534, 65534) == 0);
	CHECK_EQ(dg_image_resolve(at("sticky/img"), out, sizeof(out), err,
				  sizeof(err)), -EPERM);
	CHECK(strstr(err, "protected_symlinks") != NULL);
	CHECK(strstr(err, at("sticky/img")) != NULL);
	REQUIRE(symlink(at("plain"), at("sticky/d")) == 0);
	REQUIRE(lchown(at("sticky/d"), 65534, 65534) == 0);
	CHECK_EQ(resolve(at("sticky/d/x.img"), out), -EPERM);
	/* Reached through a root link, still refused. */
	REQUIRE(symlink(at("sticky/img"), at("plain/via")) == 0);
	CHECK_EQ(resolve(at("plain/via"), out), -EPERM);
	/* The same user link in a directory that is not sticky. */
	REQUIRE(symlink(at("plain/victim"), at("plain/ulink")) == 0);
	REQUIRE(lchown(at("plain/ulink"), 65534, 65534) == 0);
	CHECK_EQ(resolve(at("plain/ulink"), out), 0);
	CHECK(!strcmp(out, at("plain/victim")));
	/* A sticky directory owned by the link's owner: followed. */
	REQUIRE(chown(at("sticky"), 65534, 65534) == 0);
	CHECK_EQ(resolve(at("sticky/img"), out), 0);
	rm_tree();
}

/* New images are 0600 under any umask, never through a link; a wide
 * mode is seen and tightened. */
static void test_create_and_modes(void)
{
	bool created;
	char err[512];
	struct stat st;
	mode_t old = umask(0);
	int fd;

	REQUIRE(make_tree("create"));
	fd = dg_image_create(at("plain/a.img"), 0);
	REQUIRE(fd >= 0);
	close(fd);
	CHECK(stat(at("plain/a.img"), &st) == 0 && (st.st_mode & 07777) == 0600);
	CHECK_EQ(dg_image_create(at("plain/a.img"), 0), -EEXIST);
	/* A dangling link is not created through. */
	REQUIRE(symlink(at("plain/b.img"), at("plain/lb")) == 0);
	CHECK_EQ(dg_image_create(at("plain/lb"), 0), -EEXIST);
	CHECK(access(at("plain/b.img"), F_OK) < 0);
	CHECK(dg_image_prepare(at("plain/lb"), 1 << 20, &created, err,
			       sizeof(err)) < 0);
	CHECK(access(at("plain/b.img"), F_OK) < 0);
	/* prepare: created and sized, or an existing file extended. */
	CHECK_EQ(dg_image_prepare(at("plain/c.img"), 1 << 20, &created, err,
				  sizeof(err)), 0);
	CHECK(created);
	CHECK(stat(at("plain/c.img"), &st) == 0 && st.st_size == 1 << 20 &&
	      (st.st_mode & 07777) == 0600);
	CHECK_EQ(dg_image_prepare(at("plain/c.img"), 2 << 20, &created, err,
				  sizeof(err)), 0);
	CHECK(!created);
	CHECK(stat(at("plain/c.img"), &st) == 0 && st.st_size == 2 << 20);
	/* Modes. */
	REQUIRE(chmod(at("plain/c.img"), 0644) == 0);
	CHECK_EQ(dg_image_wide_mode(at("plain/c.img")), 044);
	CHECK_EQ(dg_image_wide_mode(at("plain/a.img")), 0);
	CHECK_EQ(dg_image_wide_mode(at("plain")), 0); /* not a file */
	CHECK_EQ(dg_image_wide_mode(at("plain/none")), 0);
	CHECK_EQ(dg_image_tighten(at("plain/c.img")), 0);
	CHECK(stat(at("plain/c.img"), &st) == 0 && (st.st_mode & 07777) == 0600);
	umask(old);
	rm_tree();
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "resolve_plain_and_links", test_resolve_plain_and_links },
		{ "resolve_refuses_planted_links",
		  test_resolve_refuses_planted_links },
		{ "create_and_modes", test_create_and_modes },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
