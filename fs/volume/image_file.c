// SPDX-License-Identifier: MIT
/* image_file.c -- how every tool names, creates and opens a device image */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_file.h"

/* Links followed on one path before giving up, as the kernel (MAXSYMLINKS). */
#define MAX_LINKS 40

/*
 * may_follow_link() of fs/namei.c: a link in a directory that is sticky
 * and writable by everyone may have been planted by anyone, so it is
 * followed only when the one following it or the directory's owner owns
 * it.
 */
static int check_link(const char *dir, const char *link,
		      const struct stat *lst, char *err, size_t errlen)
{
	struct stat ds;

	if (stat(dir, &ds) < 0)
		return 0; /* the open that follows says what is wrong */
	if ((ds.st_mode & (S_ISVTX | S_IWOTH)) != (S_ISVTX | S_IWOTH))
		return 0;
	if (lst->st_uid == ds.st_uid || lst->st_uid == geteuid())
		return 0;
	if (snprintf(err, errlen, "'%s' is a symbolic link in the sticky, "
		     "world-writable directory '%s', owned by uid %u (neither "
		     "you nor the directory's owner): not followed (the "
		     "kernel's protected_symlinks rule); name the file itself",
		     link, dir, (unsigned)lst->st_uid) < 0)
		err[0] = 0;
	return -EPERM;
}

/* Append "/" comp (or comp alone to "") to buf of len bytes. */
static int join(char *buf, size_t len, const char *a, const char *b,
		size_t blen)
{
	int n = snprintf(buf, len, "%s/%.*s", a, (int)blen, b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int dg_image_resolve(const char *path, char *out, size_t outlen, char *err,
		     size_t errlen)
{
	/* done: the resolved prefix, absolute, "" for the root; todo: what
	 * is left to walk (a link's target is put in front of it). */
	char done[PATH_MAX], todo[2 * PATH_MAX], cand[PATH_MAX];
	char target[PATH_MAX], rest[2 * PATH_MAX];
	bool followed = false;
	unsigned links = 0;
	const char *res = NULL;
	int ret;

	if (!path[0] || path[0] != '/') {
		if (!path[0] || !getcwd(done, sizeof(done)))
			goto as_given;
		if (!strcmp(done, "/"))
			done[0] = 0;
	} else {
		done[0] = 0;
	}
	if (snprintf(todo, sizeof(todo), "%s", path) >= (int)sizeof(todo))
		return -ENAMETOOLONG;
	for (char *p = todo;;) {
		size_t clen;
		const char *next;
		struct stat st;
		ssize_t tl;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		next = strchr(p, '/');
		clen = next ? (size_t)(next - p) : strlen(p);
		if (clen == 1 && p[0] == '.') {
			p += clen;
			continue;
		}
		if (clen == 2 && p[0] == '.' && p[1] == '.') {
			/* done holds no link: ".." is lexical on it. */
			char *slash = strrchr(done, '/');

			if (slash)
				*slash = 0;
			p += clen;
			continue;
		}
		ret = join(cand, sizeof(cand), done, p, clen);
		if (ret)
			return ret;
		if (lstat(cand, &st) < 0) {
			/* Missing (a file to create) or not ours to look
			 * at: the rest as given, for the open to judge. */
			if (snprintf(rest, sizeof(rest), "%s%s", cand,
				     next ? next : "") >= (int)sizeof(rest))
				return -ENAMETOOLONG;
			res = rest;
			break;
		}
		if (!S_ISLNK(st.st_mode)) {
			memcpy(done, cand, strlen(cand) + 1);
			p += clen;
			continue;
		}
		if (++links > MAX_LINKS)
			return -ELOOP;
		ret = check_link(done[0] ? done : "/", cand, &st, err, errlen);
		if (ret)
			return ret;
		tl = readlink(cand, target, sizeof(target) - 1);
		if (tl < 0)
			return -errno;
		target[tl] = 0;
		followed = true;
		/* The target, then what followed the link. */
		if (snprintf(rest, sizeof(rest), "%s%s", target, p + clen) >=
		    (int)sizeof(rest))
			return -ENAMETOOLONG;
		memcpy(todo, rest, strlen(rest) + 1);
		p = todo;
		if (target[0] == '/')
			done[0] = 0;
	}
	if (!followed)
		goto as_given;
	if (!res)
		res = done[0] ? done : "/";
	if (snprintf(out, outlen, "%s", res) >= (int)outlen)
		return -ENAMETOOLONG;
	return 0;
as_given:
	if (snprintf(out, outlen, "%s", path) >= (int)outlen)
		return -ENAMETOOLONG;
	return 0;
}

int dg_image_create(const char *path, int extra_flags)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
				    extra_flags, 0600);

	if (fd < 0)
		return -errno;
	/* The umask only narrows 0600, but a default ACL of the directory
	 * may widen it: the mode is set, not left to them. */
	if (fchmod(fd, 0600) < 0) {
		int e = -errno;

		close(fd);
		unlink(path);
		return e;
	}
	return fd;
}

/* An existing file at path, never through a symlink in its last
 * component: open(2) with O_NOFOLLOW | O_CLOEXEC added. fd or -errno. */
static int dg_image_open(const char *path, int flags)
{
	int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int dg_image_prepare(const char *path, uint64_t size, bool *created,
		     char *err, size_t errlen)
{
	struct stat st;
	int fd, ret = 0;

	bool existed;

	*created = false;
	fd = dg_image_create(path, 0);
	existed = fd == -EEXIST;
	if (existed)
		fd = dg_image_open(path, O_RDWR);
	else if (fd >= 0)
		*created = true;
	if (fd < 0) {
		snprintf(err, errlen, "cannot %s '%s': %s",
			 existed ? "open" : "create", path,
			 fd == -ELOOP ? "it is a symbolic link"
				      : strerror(-fd));
		return fd;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat '%s': %s", path,
			 strerror(errno));
		goto out;
	}
	/* An existing file that another user owns, or that has another
	 * name, would let that user read (or chmod back) the device's
	 * bytes we are about to write: a file a user planted in /tmp. */
	if (existed && S_ISREG(st.st_mode) &&
	    (st.st_uid != geteuid() || st.st_nlink != 1)) {
		ret = -EPERM;
		snprintf(err, errlen, "'%s' exists and %s: a device written "
			 "into it could be read by others; remove it or name "
			 "a new file", path, st.st_uid != geteuid()
			 ? "belongs to another user" : "has another name");
		goto out;
	}
	if (S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size < size && ftruncate(fd, (off_t)size) < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot extend '%s' to %llu bytes: %s",
			 path, (unsigned long long)size, strerror(errno));
		if (*created)
			unlink(path);
		*created = false;
	}
out:
	close(fd);
	return ret;
}

mode_t dg_image_wide_mode(const char *path)
{
	struct stat st;

	if (!path[0] || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return st.st_mode & 077;
}

int dg_image_tighten(const char *path)
{
	int fd = dg_image_open(path, O_RDONLY), ret = 0;

	if (fd < 0)
		return fd;
	if (fchmod(fd, 0600) < 0)
		ret = -errno;
	close(fd);
	return ret;
}
