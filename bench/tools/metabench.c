/*
 * metabench: time create / stat / rename / delete of N empty files.
 *
 *   metabench DIR N flat|tree
 *
 * flat: all files in DIR/m.  tree: 100 files per leaf directory, 32 leaf
 * directories per middle directory (DIR/m/MM/LLLL/).  Renames stay in the
 * directory for flat and move each file to the next leaf directory for tree.
 * Prints one JSON object with the seconds each phase took.  Built by the
 * benchmark harness (bench/dgbench/workloads.py) with cc and -ljson-c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#define PER_LEAF 100
#define LEAVES_PER_MID 32

static const char *root;
static int tree;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "metabench: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void leaf_dir(char *buf, size_t len, long leaf)
{
	if (tree)
		snprintf(buf, len, "%s/m/%02ld/%04ld", root, leaf / LEAVES_PER_MID, leaf);
	else
		snprintf(buf, len, "%s/m", root);
}

static void file_path(char *buf, size_t len, long i, char tag, int shifted, long n)
{
	char dir[PATH_MAX - 32];
	long leaf = tree ? i / PER_LEAF : 0;

	if (tree && shifted)
		leaf = (leaf + 1) % ((n + PER_LEAF - 1) / PER_LEAF);
	leaf_dir(dir, sizeof(dir), leaf);
	snprintf(buf, len, "%s/%c%07ld", dir, tag, i);
}

static void mkdir_or_die(const char *p)
{
	if (mkdir(p, 0755) && errno != EEXIST)
		die("mkdir", p);
}

int main(int argc, char **argv)
{
	char p[PATH_MAX], q[PATH_MAX];
	double t0, t_create, t_stat, t_rename, t_delete;
	long n, i, leaves;
	struct stat st;
	struct json_object *o;

	if (argc != 4 || (strcmp(argv[3], "flat") && strcmp(argv[3], "tree"))) {
		fprintf(stderr, "usage: metabench DIR N flat|tree\n");
		return 2;
	}
	root = argv[1];
	n = atol(argv[2]);
	tree = !strcmp(argv[3], "tree");
	leaves = tree ? (n + PER_LEAF - 1) / PER_LEAF : 1;

	t0 = now();
	snprintf(p, sizeof(p), "%s/m", root);
	mkdir_or_die(p);
	for (i = 0; tree && i < leaves; i++) {
		if (i % LEAVES_PER_MID == 0) {
			snprintf(p, sizeof(p), "%s/m/%02ld", root, i / LEAVES_PER_MID);
			mkdir_or_die(p);
		}
		leaf_dir(p, sizeof(p), i);
		mkdir_or_die(p);
	}
	for (i = 0; i < n; i++) {
		int fd;

		file_path(p, sizeof(p), i, 'f', 0, n);
		fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			die("create", p);
		close(fd);
	}
	t_create = now() - t0;

	t0 = now();
	for (i = 0; i < n; i++) {
		file_path(p, sizeof(p), i, 'f', 0, n);
		if (stat(p, &st))
			die("stat", p);
	}
	t_stat = now() - t0;

	t0 = now();
	for (i = 0; i < n; i++) {
		file_path(p, sizeof(p), i, 'f', 0, n);
		file_path(q, sizeof(q), i, 'g', 1, n);
		if (rename(p, q))
			die("rename", p);
	}
	t_rename = now() - t0;

	t0 = now();
	for (i = 0; i < n; i++) {
		file_path(p, sizeof(p), i, 'g', 1, n);
		if (unlink(p))
			die("unlink", p);
	}
	for (i = leaves - 1; tree && i >= 0; i--) {
		leaf_dir(p, sizeof(p), i);
		if (rmdir(p))
			die("rmdir", p);
		if (i % LEAVES_PER_MID == 0) {
			snprintf(p, sizeof(p), "%s/m/%02ld", root, i / LEAVES_PER_MID);
			if (rmdir(p))
				die("rmdir", p);
		}
	}
	snprintf(p, sizeof(p), "%s/m", root);
	if (rmdir(p))
		die("rmdir", p);
	t_delete = now() - t0;

	/* One line of JSON, built with json-c (the layout is argv text). */
	o = json_object_new_object();
	json_object_object_add(o, "files", json_object_new_int64(n));
	json_object_object_add(o, "layout", json_object_new_string(argv[3]));
	json_object_object_add(o, "create_s", json_object_new_double(t_create));
	json_object_object_add(o, "stat_s", json_object_new_double(t_stat));
	json_object_object_add(o, "rename_s", json_object_new_double(t_rename));
	json_object_object_add(o, "delete_s", json_object_new_double(t_delete));
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return 0;
}
