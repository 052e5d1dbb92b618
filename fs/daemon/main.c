// SPDX-License-Identifier: MIT
/* main.c -- daxguard: open a volume, mount it with FUSE, serve it */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "devlist.h"
#include "image_file.h"
#include "probe.h"
#include "version.h"

#define EXIT_USAGE 2

static const char usage[] =
	"usage: daxguard DEV[:DEV...] MOUNTPOINT [-f] [-d] [-s] [-o opt,...]\n"
	"Serve a daxguard volume at MOUNTPOINT. DEV... are its devices in any\n"
	"order, separated by ':' or ',' (with a ',' in the list, only ','\n"
	"separates, for paths that hold ':'). Also run by mount -t\n"
	"fuse.daxguard DEVS MOUNTPOINT when daxguard is on mount(8)'s PATH.\n"
	"daxguard options (-o):\n"
	"    degraded          mount with devices missing that parity covers,\n"
	"                      read-write (writes keep the missing devices'\n"
	"                      pages in parity until they are rebuilt: fsck -y\n"
	"                      or daxguard-ctl replace); with ro, read-only;\n"
	"                      without it such a mount is refused\n"
	"    ro                with degraded: mount read-only, and the missing\n"
	"                      devices can come back as they are\n"
	"    log=PATH          append the daemon's messages and events to PATH\n"
	"                      (default: syslog when /dev/log exists, else\n"
	"                      stderr in the foreground, else a file named at\n"
	"                      mount in /run/daxguard)\n"
	"    timeout=SECONDS   entry and attribute cache timeout (1.0)\n"
	"    allow_dev         (root) device nodes on the volume open: the mount\n"
	"                      is not nodev; the same as -o dev, which mount(8)\n"
	"                      does not pass on to its helpers\n"
	"    allow_suid        (root) set-ID bits and file capabilities take\n"
	"                      effect: the mount is not nosuid; as -o suid\n"
	"    writeback         kernel writeback cache: faster small writes, but\n"
	"                      a write() is durable only at fsync (default off:\n"
	"                      every write() is on the media, redundant, on return)\n"
	"    wb_max=SIZE       with writeback: the daemon holds up to SIZE of what\n"
	"                      the kernel writes back (K, M, G; from 1M) and\n"
	"                      commits it in batches; sync(1) is then not a\n"
	"                      durability point (FUSE does not pass syncfs on):\n"
	"                      fsync, or daxguard-ctl MNT sync (default: no hold)\n"
	"    commit=SECONDS    with wb_max: held data is committed at least\n"
	"                      this often (5)\n"
	"    bdi_ratio=PERCENT with writeback, as root: the share of the kernel's\n"
	"                      dirty limit this mount may use, without FUSE's\n"
	"                      strict limit (20; 0 leaves the kernel's 1% strict)\n"
	"    discard           give the rows of freed pages back as zeros in the\n"
	"                      background, as fstrim(8) does: space back to\n"
	"                      sparse images at once, and small writes into\n"
	"                      those rows skip the journal (parity 1); costs\n"
	"                      the zeros (default: nodiscard)\n"
	"    inode_cache=N     inodes kept in core once idle (65536; from 64):\n"
	"                      the daemon's memory is bounded by it, plus what\n"
	"                      the kernel and open files hold, not by the files\n"
	"                      stored\n";

/* -o discard: freed rows given back as zeros in the background
 * (blank.c; it passes them by while the volume is degraded). */
static void start_blanker(struct dg_daemon *dd)
{
	int ret = dg_vol_blank_start(dd->vol);

	if (ret)
		dg_log(DG_LOG_WARNING, "discard: freed rows are not given back "
		       "on this volume (%s)", strerror(-ret));
}

struct dg_opts {
	char *devs;
	char *log;
	double timeout;
	int writeback;
	char *wb_max;
	int commit;
	int bdi_ratio;
	char *inode_cache;
	int degraded;
	int ro;
	int discard;
	int nodiscard;
	int show_help;
	int show_version;
	int allow_other;
	int allow_dev;
	int allow_suid;
};

enum { KEY_ALLOW_OTHER = 1 };

#define DG_OPT(t, p) { t, offsetof(struct dg_opts, p), 1 }
static const struct fuse_opt dg_fuse_opts[] = {
	{ "timeout=%lf", offsetof(struct dg_opts, timeout), 0 },
	{ "log=%s", offsetof(struct dg_opts, log), 0 },
	DG_OPT("writeback", writeback),
	{ "wb_max=%s", offsetof(struct dg_opts, wb_max), 0 },
	{ "commit=%d", offsetof(struct dg_opts, commit), 0 },
	{ "bdi_ratio=%d", offsetof(struct dg_opts, bdi_ratio), 0 },
	{ "inode_cache=%s", offsetof(struct dg_opts, inode_cache), 0 },
	DG_OPT("degraded", degraded),
	DG_OPT("discard", discard),
	DG_OPT("nodiscard", nodiscard),
	DG_OPT("ro", ro),
	DG_OPT("allow_dev", allow_dev),
	DG_OPT("allow_suid", allow_suid),
	DG_OPT("-h", show_help),
	DG_OPT("--help", show_help),
	DG_OPT("-V", show_version),
	DG_OPT("--version", show_version),
	/* Noted, and passed on to libfuse. */
	FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
	FUSE_OPT_END
};

/* The first non-option argument is the device list; the rest go to
 * libfuse (mountpoint and its options). */
static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct dg_opts *o = data;

	(void)outargs;
	if (key == KEY_ALLOW_OTHER) {
		o->allow_other = 1;
		return 1;
	}
	if (key == FUSE_OPT_KEY_NONOPT && !o->devs) {
		o->devs = strdup(arg);
		return 0;
	}
	return 1;
}

/* Where messages go once the mount is up (before that: stderr, to the
 * one who mounted). Events are messages too (events.c), so whichever is
 * chosen, nothing is lost for want of a syslog daemon. */
static enum { TO_STDERR, TO_SYSLOG, TO_FILE } log_to;
static FILE *log_file;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_quiet;	/* a second look at the devices: said already */

static void log_func(enum dg_log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void log_func(enum dg_log_level level, const char *fmt, va_list ap)
{
	static const char *const names[] = {
		[DG_LOG_ERR] = "error",	    [DG_LOG_WARNING] = "warning",
		[DG_LOG_NOTICE] = "notice", [DG_LOG_INFO] = "info",
		[DG_LOG_DEBUG] = "debug",
	};

	if (log_quiet)
		return;
	if (log_to == TO_SYSLOG) {
		vsyslog((int)level, fmt, ap);
	} else if (log_to == TO_FILE) {
		struct timespec ts;
		struct tm tm;
		char t[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
		/* One line per message even from many threads. */
		pthread_mutex_lock(&log_lock);
		fprintf(log_file, "%s.%03ld daxguard[%d]: %s: ", t,
			ts.tv_nsec / 1000000, (int)getpid(), names[level]);
		vfprintf(log_file, fmt, ap);
		fputc('\n', log_file);
		fflush(log_file);
		pthread_mutex_unlock(&log_lock);
	} else {
		fprintf(stderr, "daxguard: ");
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

/* A daemon in the background has no stderr: a syslog if there is one,
 * else a file in the socket directory, named now while the one who
 * mounted still reads stderr. */
static int default_log_path(struct dg_daemon *dd, char *buf, size_t len)
{
	struct dg_vol_info in;
	char u[37];
	const char *dir = "/run/daxguard";

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		dir = "/tmp";
	dg_vol_get_info(dd->vol, &in);
	dg_uuid_format(in.uuid, u);
	return snprintf(buf, len, "%s/%s.log", dir, u) >= (int)len ? -1 : 0;
}

/*
 * The log names damaged files by path: it is the daemon's alone (0600),
 * whatever the umask. A new one is created with O_EXCL; an existing one
 * is appended to when it is a regular file of the daemon's user with no
 * other name, never through a symlink (a user's link in /tmp must not
 * make root append to a file of its choosing), and made 0600 when it
 * was wider. -o log=PATH
 * is opened before the mount, so a path that cannot be written is
 * refused with the devices untouched.
 */
static int open_log(const char *path)
{
	char buf[PATH_MAX], err[8400];
	struct stat st;
	int fd = -1, tries = 0, ret;

	/* Symlinks on the path only under the protected_symlinks rule
	 * (image_file.h); the last component is never followed. */
	ret = dg_image_resolve(path, buf, sizeof(buf), err, sizeof(err));
	if (ret == -EPERM) {
		fprintf(stderr, "daxguard: cannot open log file: %s\n", err);
		return -1;
	}
	if (ret) {
		errno = -ret;
		goto fail;
	}
	/* The log itself is never a link: it would have root append to,
	 * and chmod, whatever the link's owner chose. */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		fprintf(stderr, "daxguard: cannot open log file '%s': it is a "
			"symbolic link\n", path);
		return -1;
	}
	while (fd < 0 && tries++ < 8) {
		fd = open(buf, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC |
			  O_NOCTTY | O_NONBLOCK);
		if (fd < 0 && errno == ENOENT)
			fd = open(buf, O_WRONLY | O_APPEND | O_CREAT | O_EXCL |
				  O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (fd < 0 && errno != ENOENT && errno != EEXIST)
			break; /* EEXIST, ENOENT: a race; again */
	}
	if (fd < 0)
		goto fail;
	if (fstat(fd, &st) < 0)
		goto fail;
	/* A second name (a hard link a user made in /tmp to one of
	 * root's files) would have us append to, and chmod, that file. */
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink != 1) {
		fprintf(stderr, "daxguard: log file '%s' is not a regular file "
			"of user %u with one name\n", path,
			(unsigned)geteuid());
		goto fail_quiet;
	}
	if ((st.st_mode & 077) && fchmod(fd, st.st_mode & 0700) < 0)
		goto fail;
	if (fcntl(fd, F_SETFL, O_WRONLY | O_APPEND) < 0)
		goto fail;
	log_file = fdopen(fd, "ae");
	if (!log_file)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "daxguard: cannot open log file '%s': %s\n", path,
		strerror(errno));
fail_quiet:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* ENOTCONN: a mount whose daemon died is still there, and only its
 * unmount frees the mount point. */
static void mountpoint_error(const char *what, const char *mnt, int err)
{
	if (err == ENOTCONN)
		fprintf(stderr, "daxguard: cannot %s mountpoint '%s': %s: the "
			"daemon of the volume mounted there is gone; run "
			"'fusermount3 -u %s' first\n", what, mnt,
			strerror(err), mnt);
	else
		fprintf(stderr, "daxguard: cannot %s mountpoint '%s': %s\n",
			what, mnt, strerror(err));
}

static int check_mountpoint(const char *mnt)
{
	struct stat st;
	struct dirent *de;
	DIR *d;

	if (stat(mnt, &st) < 0) {
		mountpoint_error("use", mnt, errno);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "daxguard: mountpoint '%s' is not a "
			"directory\n", mnt);
		return -1;
	}
	d = opendir(mnt);
	if (!d) {
		mountpoint_error("read", mnt, errno);
		return -1;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			closedir(d);
			fprintf(stderr, "daxguard: mountpoint '%s' is not "
				"empty\n", mnt);
			return -1;
		}
	}
	closedir(d);
	return 0;
}

/*
 * Each device path made absolute and free of symlinks: the daemon
 * changes to / when it goes to the background, and libcommit clients
 * open the devices by these names (mapped.c), so a relative path would
 * name nothing there. A path that does not exist (a missing device) is
 * made absolute only. Returns the list again (tools/devlist.h), joined
 * by ':', or by ',' when a path holds ':': what the status and
 * /proc/mounts show, so that it can be handed back to fsck.daxguard.
 */
static char *canonical_devs(const char *list, char **paths, int *np)
{
	char *raw[DG_MAX_DEVS], *out = NULL, sep = ':';
	size_t len = 0;
	int n = 0, nraw;

	nraw = devlist_split(list, raw, DG_MAX_DEVS);
	if (nraw == -E2BIG) {
		fprintf(stderr, "daxguard: at most %u devices\n", DG_MAX_DEVS);
		return NULL;
	}
	if (nraw < 0) {
		fprintf(stderr, "daxguard: no devices given\n");
		return NULL;
	}
	for (; n < nraw; n++) {
		char buf[PATH_MAX], cwd[PATH_MAX], err[8400], *tok = raw[n];

		/* A link planted in /tmp does not choose the device
		 * (image_file.h); realpath() then follows only the rest. */
		if (dg_image_resolve(tok, buf, sizeof(buf), err,
				     sizeof(err)) == -EPERM) {
			fprintf(stderr, "daxguard: %s\n", err);
			goto fail;
		}
		if (realpath(tok, buf))
			paths[n] = strdup(buf);
		else if (tok[0] == '/' || !getcwd(cwd, sizeof(cwd)))
			paths[n] = strdup(tok);
		else if (asprintf(&paths[n], "%s/%s", cwd, tok) < 0)
			paths[n] = NULL;
		if (!paths[n])
			goto fail;
		if (strchr(paths[n], ':'))
			sep = ',';
		len += strlen(paths[n]) + 1;
	}
	out = calloc(1, len + 1);
	if (!out)
		goto fail;
	for (int i = 0; i < n; i++) {
		if (i)
			strncat(out, &sep, 1);
		strcat(out, paths[i]);
	}
	devlist_free(raw, (unsigned)nraw);
	*np = n;
	return out;
fail:
	devlist_free(raw, (unsigned)nraw);
	while (n > 0)
		free(paths[--n]);
	return NULL;
}

/* "device 2", "devices 0 and 3" */
static void slot_list(uint32_t mask, char *buf, size_t len)
{
	unsigned n = (unsigned)__builtin_popcount(mask), k = 0;
	size_t o = (size_t)snprintf(buf, len, "device%s", n > 1 ? "s" : "");

	for (unsigned d = 0; d < 32 && o < len; d++)
		if (mask & (1u << d))
			o += (size_t)snprintf(buf + o, len - o, "%s %u",
					      k++ == 0	     ? ""
					      : k == n ? " and"
						       : ",",
					      d);
}

/*
 * A volume with devices missing, stale or replaced mounts only with -o
 * degraded (as btrfs does): read-write, or read-only with ro. Either way every path that is
 * not a current device is named, with what it holds. Returns true when
 * it found the volume degraded (and has said why).
 */
static bool explain_degraded(char **paths, int n, bool mounting,
			     char *err, size_t errlen)
{
	struct dg_vol *vol;
	struct dg_vol_info in;
	char buf[1024], slots[128], u[37];
	int ret;

	log_quiet = 1;
	ret = dg_vol_open((const char *const *)paths, (unsigned)n,
			  DG_OPEN_RDONLY | DG_OPEN_DEGRADED | DG_OPEN_NOLOCK |
				  DG_OPEN_NORECOVER | DG_OPEN_SUSPECT,
			  &vol, buf, sizeof(buf));
	log_quiet = 0;
	if (ret) {
		/* Not a volume at all, or not this device set, even
		 * leaving devices out: that says more than the first
		 * device that failed. Beyond parity (-ENXIO) the first
		 * message, naming the file, says more. */
		if (err && ret != -ENOENT && ret != -ENXIO)
			snprintf(err, errlen, "%s", buf);
		return false;
	}
	dg_vol_get_info(vol, &in);
	/* A slot whose path held a copy of another device: the open
	 * says which (the copy itself looks like a current device). */
	for (unsigned d = 0; d < in.ndev; d++)
		if (dg_vol_missing_why(vol, d))
			dg_log(mounting ? DG_LOG_NOTICE : DG_LOG_ERR, "%s%s",
			       mounting ? "left out: " : "",
			       dg_vol_missing_why(vol, d));
	log_quiet = 1;
	dg_vol_close(vol);
	log_quiet = 0;
	if (in.suspect_mask && !in.degraded) {
		/* More devices behind the volume than parity covers: read
		 * only what verifies against the newest checksums. */
		slot_list(in.suspect_mask, slots, sizeof(slots));
		dg_uuid_format(in.uuid, u);
		dg_log(mounting ? DG_LOG_NOTICE : DG_LOG_ERR, "%s volume %s: "
		       "%s of %u %s behind the volume (lost writes%s), more "
		       "than parity covers%s", mounting ? "mounting" :
		       "cannot mount", u, slots, in.ndev,
		       in.suspect_mask & (in.suspect_mask - 1) ? "are" : "is",
		       in.found_mask ? ", or their superblocks" : "",
		       mounting ? ": read-only, their pages used only where "
				  "they verify against the newest checksums"
				: "; mount with -o degraded to mount it "
				  "read-only (their pages used only where they "
				  "verify; the rest reads as EIO), or run "
				  "fsck.daxguard -y to check and repair them; "
				  "nothing was written");
		return true;
	}
	if (!in.degraded)
		return false;
	for (int i = 0; i < n; i++)
		if (dg_dev_explain(paths[i], &in, buf, sizeof(buf)))
			dg_log(mounting ? DG_LOG_NOTICE : DG_LOG_ERR,
			       "%s%s", mounting ? "left out: " : "", buf);
	if (mounting)
		return true;
	dg_uuid_format(in.uuid, u);
	slot_list(in.missing_mask, slots, sizeof(slots));
	dg_log(DG_LOG_ERR, "cannot mount volume %s: %s of %u missing or "
	       "unusable; mount with -o degraded to mount it without %s "
	       "(-o degraded,ro: read-only), or run fsck.daxguard -y to "
	       "rebuild %s", u, slots,
	       in.ndev, in.missing_mask & (in.missing_mask - 1) ? "them" : "it",
	       in.missing_mask & (in.missing_mask - 1) ? "them" : "it");
	return true;
}

/*
 * Open the volume. Its devices may still be held by the daemon of a
 * mount that was just unmounted (umount does not wait for it): wait for
 * that, bounded, but refuse at once when the volume is mounted.
 */
static int open_volume(struct dg_daemon *dd, bool degraded, bool ro)
{
	char *paths[DG_MAX_DEVS], err[8400], mnt[4096];
	/* -o degraded mounts read-write (volume.h, DG_OPEN_DEGRADED_RW);
	 * -o degraded,ro as before: nothing written, so the missing
	 * devices can come back unchanged. A plain -o ro stays the
	 * kernel's alone, the volume opened (and its journal replayed) as
	 * always. */
	unsigned flags = !degraded ? 0
			 : ro ? DG_OPEN_DEGRADED | DG_OPEN_SUSPECT |
					DG_OPEN_RDONLY
			      : DG_OPEN_DEGRADED | DG_OPEN_SUSPECT |
					DG_OPEN_DEGRADED_RW;
	int n = 0, ret;
	char *devs = canonical_devs(dd->devs, paths, &n);

	if (!devs)
		return -1;
	free(dd->devs);
	dd->devs = devs;
	ret = dg_vol_open((const char *const *)paths, (unsigned)n, flags,
			  &dd->vol, err, sizeof(err));
	if (ret == -EBUSY) {
		for (int i = 0; i < n; i++)
			if (dg_dev_mountpoint(paths[i], mnt, sizeof(mnt))) {
				/* A volume has one daemon; a second
				 * place to see it is the kernel's job. */
				snprintf(err, sizeof(err), "'%s' is in use: "
					 "its volume is mounted on '%s'; to "
					 "see it at a second place, bind-mount "
					 "that: mount --bind '%s' DIR",
					 paths[i], mnt, mnt);
				goto fail;
			}
		dg_log(DG_LOG_NOTICE, "waiting for the daemon of an unmounted "
		       "volume to release the devices");
		if (dg_devs_wait_unlocked((const char *const *)paths,
					  (unsigned)n, false, 10000) == 0)
			ret = dg_vol_open((const char *const *)paths,
					  (unsigned)n, flags, &dd->vol, err,
					  sizeof(err));
	}
	if (ret == -ENXIO || ret == -ESTALE || ret == -ENODEV ||
	    ret == -EFBIG || ret == -ENOSPC) {
		if (!degraded && explain_degraded(paths, n, false, err,
						  sizeof(err)))
			goto out;
	}
	if (ret)
		goto fail;
	if (degraded) {
		struct dg_vol_info in;

		dg_vol_get_info(dd->vol, &in);
		if (in.degraded || in.suspect_mask)
			explain_degraded(paths, n, true, NULL, 0);
	}
	/* Whoever may read an image may read every file of the volume
	 * (said of the images with a daxguard superblock). */
	for (int i = 0; i < n; i++) {
		mode_t wide = dg_image_wide_mode(paths[i]);
		struct dg_probe p;

		if (wide && dg_dev_probe(paths[i], &p, err, sizeof(err)) == 0 &&
		    p.kind == DG_PROBE_DAXGUARD)
			dg_log(DG_LOG_WARNING, "warning: '%s' is readable by "
			       "others (group/other bits %03o): whoever reads "
			       "it reads the whole volume; chmod 600 it",
			       paths[i], (unsigned)wide);
	}
	/* 64 MiB of checksum pages covers 32 GiB of data per device. */
	if (dg_vol_cache_csum_pages(dd->vol, (size_t)64 << 20))
		dg_log(DG_LOG_WARNING, "no memory to cache checksum pages");
	ret = dg_fs_open(dd->vol, &dd->fs);
	if (ret) {
		fprintf(stderr, "daxguard: cannot load the filesystem of '%s': "
			"%s\n", dd->devs, strerror(-ret));
		dg_vol_close(dd->vol);
		dd->vol = NULL;
		goto out;
	}
	/* How daxguard-ctl and libcommit find this daemon: the socket
	 * paths, filled in when the servers start (before any request). */
	dg_fs_set_inode_cache(dd->fs, dd->inode_cache);
	dg_fs_xattr_fix(dd->fs, "user.daxguard.socket", dd->sock_path);
	dg_fs_xattr_fix(dd->fs, "user.daxguard.commit", dd->commit_path);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	return 0;
fail:
	fprintf(stderr, "daxguard: cannot open volume '%s': %s\n", dd->devs,
		err);
out:
	for (int i = 0; i < n; i++)
		free(paths[i]);
	return -1;
}

/* libfuse options, checked before any device is opened: a session made
 * and dropped at once parses them all (and names what it rejects). */
static int check_fuse_opts(struct fuse_args *args)
{
	struct fuse_args chk = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;

	for (int i = 0; i < args->argc; i++)
		if (fuse_opt_add_arg(&chk, args->argv[i]))
			return -1;
	se = fuse_session_new(&chk, &dg_ll_ops, sizeof(dg_ll_ops), NULL);
	fuse_opt_free_args(&chk);
	if (!se)
		return -1;
	fuse_session_destroy(se);
	return 0;
}

/* -ofsname=a,b,c with the commas escaped for libfuse's option parser:
 * /proc/mounts and findmnt then show the device list as the source. */
static int add_fsname(struct fuse_args *args, const char *devs)
{
	size_t len = strlen(devs);
	char *o = malloc(2 * len + 16), *p;
	int ret;

	if (!o)
		return -1;
	p = o + sprintf(o, "-ofsname=");
	for (; *devs; devs++) {
		if (*devs == ',' || *devs == '\\')
			*p++ = '\\';
		*p++ = *devs;
	}
	*p = 0;
	ret = fuse_opt_add_arg(args, o);
	free(o);
	return ret;
}

/*
 * The control and libcommit servers' threads (and the connection threads
 * they start) block the signals that stop the daemon. libfuse's handler
 * only marks the session as exiting; the loop notices when one of its
 * own threads has a system call interrupted (its workers block these
 * signals, so that is the main thread). A stop signal delivered to a
 * server thread would leave the daemon running until the next FUSE
 * request came in.
 */
static int start_servers(struct dg_daemon *dd)
{
	sigset_t stop, old;
	int ret;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	ret = dg_ctl_start(dd);
	if (!ret) {
		ret = dg_commit_start(dd);
		if (ret)
			dg_ctl_stop(dd);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/* "64M": bytes, with K, M or G; at least 1 MiB (one request). */
/* A whole number in [lo, hi], digits only. */
static int parse_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	if (v > (1ull << 40))	/* before a shift could wrap it */
		return -1;
	switch (*end) {
	case 'G': case 'g': v <<= 10; /* fall through */
	case 'M': case 'm': v <<= 10; /* fall through */
	case 'K': case 'k': v <<= 10; end++; break;
	case 0: break;
	default: return -1;
	}
	if (*end || v < (1u << 20) || v > (1ull << 40))
		return -1;
	*out = (size_t)v;
	return 0;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts fo = { 0 };
	struct dg_opts o = { .timeout = 1.0, .commit = 5, .bdi_ratio = 20 };
	size_t wb_max = 0;	/* no hold unless asked for */
	struct dg_daemon dd = { .sock_fd = -1, .commit_fd = -1 };
	struct fuse_loop_config *cfg = NULL;
	char mnt[PATH_MAX];
	bool mounted = false;
	int ret = 1;

	dg_log_set_func(log_func);
	/* Bad usage exits 2, as every daxguard tool but fsck (whose 16
	 * fsck(8) fixes); a mount that fails for any other reason, 1. */
	if (fuse_opt_parse(&args, &o, dg_fuse_opts, opt_proc) == -1)
		return EXIT_USAGE;
	if (o.show_help) {
		fputs(usage, stdout);
		fuse_cmdline_help();
		ret = 0;
		goto out_args;
	}
	if (o.show_version) {
		printf("daxguard (daxguard) %s\n", DG_VERSION);
		printf("FUSE library version %s\n", fuse_pkgversion());
		fflush(stdout);
		fuse_lowlevel_version();
		ret = 0;
		goto out_args;
	}
	ret = EXIT_USAGE;
	/* mount(8) keeps dev and suid for itself (they are its defaults)
	 * and hands neither to mount.fuse3, so a root mount through mount(8)
	 * or fstab could never have them: these names get through. An
	 * unprivileged mount goes through fusermount3, which makes every
	 * mount nodev,nosuid: refused here rather than ignored there. */
	if ((o.allow_dev || o.allow_suid) && geteuid() != 0) {
		fprintf(stderr, "daxguard: %s needs root\n",
			o.allow_dev ? "allow_dev" : "allow_suid");
		goto out_args;
	}
	if (fuse_parse_cmdline(&args, &fo) != 0)
		goto out_args;
	if (!o.devs || !fo.mountpoint) {
		fprintf(stderr, "daxguard: %s\n%s", !o.devs
			? "no devices and no mountpoint given"
			: "no mountpoint given", usage);
		goto out_args;
	}
	if (o.timeout < 0) {
		fprintf(stderr, "daxguard: timeout must not be negative\n");
		goto out_args;
	}
	if (o.discard && o.nodiscard) {
		fprintf(stderr, "daxguard: discard and nodiscard contradict "
			"each other\n");
		goto out_args;
	}
	if (o.wb_max && !o.writeback) {
		fprintf(stderr, "daxguard: wb_max needs -o writeback (without "
			"it every write() is on the media when it returns)\n");
		goto out_args;
	}
	if (o.wb_max && parse_size(o.wb_max, &wb_max)) {
		fprintf(stderr, "daxguard: wb_max: a size from 1M, as 64M\n");
		goto out_args;
	}
	if (o.inode_cache && parse_count(o.inode_cache, 64, UINT32_MAX,
					 &dd.inode_cache)) {
		fprintf(stderr, "daxguard: inode_cache: a count of inodes "
			"from 64, as 65536\n");
		goto out_args;
	}
	if (o.commit < 1 || o.commit > 86400 || o.bdi_ratio < 0 ||
	    o.bdi_ratio > 100) {
		fprintf(stderr, "daxguard: %s\n", o.commit < 1 || o.commit > 86400
			? "commit: 1 to 86400 seconds"
			: "bdi_ratio: 0 to 100");
		goto out_args;
	}
	if ((o.allow_dev && fuse_opt_add_arg(&args, "-odev")) ||
	    (o.allow_suid && fuse_opt_add_arg(&args, "-osuid"))) {
		ret = 1;
		goto out_args;
	}
	ret = 1;
	if (check_mountpoint(fo.mountpoint) || !realpath(fo.mountpoint, mnt))
		goto out_args;
	if (o.log && open_log(o.log))
		goto out_args;
	dd.devs = o.devs;
	o.devs = NULL;
	dd.mountpoint = mnt;
	dd.timeout = o.timeout;
	dd.writeback = o.writeback;
	dd.wb_max = wb_max;
	dd.wb_commit_ms = (unsigned)o.commit * 1000u;
	dd.bdi_ratio = o.bdi_ratio;
	dd.allow_other = o.allow_other;
	dd.debug = fo.debug;
	if (fo.debug)
		dg_log_set_level(DG_LOG_DEBUG);
	/* The kernel checks permissions against the modes we keep. */
	fuse_opt_add_arg(&args, "-odefault_permissions");
	fuse_opt_add_arg(&args, "-osubtype=daxguard");
	/* Every option is checked before a device is opened. */
	if (check_fuse_opts(&args)) {
		ret = EXIT_USAGE;
		goto out_args;
	}
	if (o.ro && !o.degraded)
		fuse_opt_add_arg(&args, "-oro");
	if (open_volume(&dd, o.degraded, o.ro))
		goto out_args;
	if (add_fsname(&args, dd.devs))
		goto out_vol;
	{
		struct dg_vol_info in;

		/* A degraded (or otherwise read-only) volume is mounted
		 * read-only: the kernel refuses every change with EROFS
		 * before it reaches the engine, whose in-core state would
		 * otherwise run ahead of the media on the first attempt. */
		dg_vol_get_info(dd.vol, &in);
		if (in.read_only)
			fuse_opt_add_arg(&args, "-oro");
	}

	dd.se = fuse_session_new(&args, &dg_ll_ops, sizeof(dg_ll_ops), &dd);
	if (!dd.se)
		goto out_vol;
	if (fuse_set_signal_handlers(dd.se) != 0)
		goto out_session;
	if (fuse_session_mount(dd.se, mnt) != 0)
		goto out_signals;
	mounted = true;
	dg_log(DG_LOG_NOTICE, "mounted devices=%s mountpoint=%s", dd.devs, mnt);
	if (!o.log && !fo.foreground && access("/dev/log", W_OK) != 0) {
		char path[512];

		if (default_log_path(&dd, path, sizeof(path)) == 0 &&
		    open_log(path) == 0)
			fprintf(stderr, "daxguard: no syslog (/dev/log): "
				"messages and events go to '%s' (-o log=PATH "
				"chooses)\n", path);
	}
	if (fuse_daemonize(fo.foreground) != 0)
		goto out_unmount;
	if (log_file) {
		log_to = TO_FILE;
	} else if (!fo.foreground) {
		log_to = TO_SYSLOG;
		openlog("daxguard", LOG_PID, LOG_DAEMON);
	}
	/* Threads only after daemonize: fork keeps just the caller. */
	if (start_servers(&dd))
		goto out_unmount;
	if (dg_wbd_start(&dd))
		goto out_ctl;
	dg_wbd_tune_bdi(&dd);
	if (o.discard)
		start_blanker(&dd);
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		goto out_ctl;
	dg_killpriv_v2_arm(fuse_session_fd(dd.se));
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned)fo.clone_fd);
	fuse_loop_cfg_set_max_threads(cfg, fo.max_threads ? fo.max_threads : 16);
	ret = fo.singlethread ? fuse_session_loop(dd.se)
			      : fuse_session_loop_mt(dd.se, cfg);
	/* 0, -errno, or the number of the signal (TERM, INT, HUP) that
	 * asked us to stop: that is a clean exit, not a failure. */
	ret = ret < 0 ? 1 : 0;
	fuse_loop_cfg_destroy(cfg);
out_ctl:
	/* What the kernel wrote back at unmount is held: commit it. */
	dg_wbd_stop(&dd);
	dg_commit_stop(&dd);
	/* Before the control thread's last look, which resets the lost
	 * pages that are free by then. */
	dg_fs_kernel_gone(dd.fs);
	dg_ctl_stop(&dd);
	dg_wbd_free(&dd);
out_unmount:
	fuse_session_unmount(dd.se);
out_signals:
	fuse_remove_signal_handlers(dd.se);
out_session:
	fuse_session_destroy(dd.se);
out_vol:
	dg_fs_close(dd.fs);
	if (dg_vol_close(dd.vol) == 0 && mounted)
		dg_log(DG_LOG_NOTICE, "unmounted cleanly devices=%s", dd.devs);
out_args:
	if (log_file) {
		log_to = TO_STDERR;
		fclose(log_file);
	}
	free(o.log);
	free(o.wb_max);
	free(o.inode_cache);
	free(fo.mountpoint);
	free(o.devs);
	free(dd.devs);
	fuse_opt_free_args(&args);
	return ret;
}
