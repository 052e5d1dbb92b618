/* SPDX-License-Identifier: MIT */
/* image_file.h -- how every tool names, creates and opens a device image */
#ifndef DG_IMAGE_FILE_H
#define DG_IMAGE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Whoever may read a device image may read every file of the volume,
 * whatever their modes; whoever may plant a symlink where root's tools
 * write may make them write over any file. So every file a daxguard
 * tool or the daemon creates that holds volume data or names files is
 * created 0600 whatever the umask, with O_CREAT | O_EXCL | O_NOFOLLOW,
 * and every path is first resolved here, once.
 */

/*
 * Resolve path, following each symlink on it only under the kernel's
 * protected_symlinks rule, applied here whatever fs.protected_symlinks
 * says: a link in a sticky, world-writable directory (/tmp, /dev/shm)
 * is followed only when its owner is the caller (euid) or the
 * directory's owner. The path to use goes to out: path itself when
 * nothing on it is a symlink, else the resolved absolute path (whose
 * last component may not exist). A missing or unreadable directory on
 * the way stops the walk there; the rest is kept as given, for the
 * open that follows to report. Returns 0, -EPERM with a one-line
 * reason in err for a link refused, -ELOOP, -ENAMETOOLONG.
 */
int dg_image_resolve(const char *path, char *out, size_t outlen, char *err,
		     size_t errlen);

/* A new file at path, created 0600 whatever the umask or a default
 * ACL says: O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC plus
 * extra flags. The descriptor, or -errno (-EEXIST for anything at
 * path, a symlink included). */
int dg_image_create(const char *path, int extra_flags);


/*
 * Make path a regular file of at least size bytes, for a tool about to
 * write a device there: created (dg_image_create) when absent, else
 * opened without following a symlink and extended when shorter. Block
 * and character devices are left as they are. *created says which;
 * err gets a one-line reason on failure (-errno).
 */
int dg_image_prepare(const char *path, uint64_t size, bool *created,
		     char *err, size_t errlen);

/* The permission bits of a regular file at path that let anyone but
 * its owner in (group or other bits), or 0: also for what is not a
 * regular file (device nodes are udev's) or cannot be looked at. */
mode_t dg_image_wide_mode(const char *path);

/* Set a regular file's mode to 0600 (not through a symlink). 0 or
 * -errno. */
int dg_image_tighten(const char *path);

#endif /* DG_IMAGE_FILE_H */
