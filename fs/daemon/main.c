// SPDX-License-Identifier: MIT
/* main.c -- daxguard: open a volume, mount it with FUSE, serve it */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon.h"

static const char usage[] =
	"usage: daxguard DEV[,DEV...] MOUNTPOINT [-f] [-d] [-s] [-o opt,...]\n"
	"daxguard options (-o):\n"
	"    timeout=SECONDS   entry and attribute cache timeout (1.0)\n"
	"    writeback         kernel writeback cache: faster small writes, but\n"
	"                      a write() is durable only at fsync (default off:\n"
	"                      every write() is on the media, redundant, on return)\n";

struct dg_opts {
	char *devs;
	double timeout;
	int writeback;
	int show_help;
};

#define DG_OPT(t, p) { t, offsetof(struct dg_opts, p), 1 }
static const struct fuse_opt dg_fuse_opts[] = {
	{ "timeout=%lf", offsetof(struct dg_opts, timeout), 0 },
	DG_OPT("writeback", writeback),
	DG_OPT("-h", show_help),
	DG_OPT("--help", show_help),
	FUSE_OPT_END
};

/* The first non-option argument is the device list; the rest go to
 * libfuse (mountpoint and its options). */
static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct dg_opts *o = data;

	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT && !o->devs) {
		o->devs = strdup(arg);
		return 0;
	}
	return 1;
}

static int log_to_syslog;

static void log_func(enum dg_log_level level, const char *fmt, va_list ap)
{
	if (log_to_syslog) {
		vsyslog((int)level, fmt, ap);
	} else {
		fprintf(stderr, "daxguard: ");
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

static int check_mountpoint(const char *mnt)
{
	struct stat st;
	struct dirent *de;
	DIR *d;

	if (stat(mnt, &st) < 0) {
		fprintf(stderr, "daxguard: cannot use mountpoint '%s': %s\n",
			mnt, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "daxguard: mountpoint '%s' is not a "
			"directory\n", mnt);
		return -1;
	}
	d = opendir(mnt);
	if (!d) {
		fprintf(stderr, "daxguard: cannot read mountpoint '%s': %s\n",
			mnt, strerror(errno));
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

static int open_volume(struct dg_daemon *dd)
{
	char *paths[DG_MAX_DEVS + 1], err[512];
	int n = 0, ret;
	char *save, *tok, *list = strdup(dd->devs);

	if (!list)
		return -1;
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == (int)DG_MAX_DEVS) {
			fprintf(stderr, "daxguard: at most %u devices\n",
				DG_MAX_DEVS);
			free(list);
			return -1;
		}
		paths[n++] = tok;
	}
	ret = dg_vol_open((const char *const *)paths, (unsigned)n,
			  DG_OPEN_DEGRADED, &dd->vol, err, sizeof(err));
	free(list);
	if (ret) {
		fprintf(stderr, "daxguard: cannot open volume '%s': %s\n",
			dd->devs, err);
		return -1;
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
		return -1;
	}
	return 0;
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

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts fo = { 0 };
	struct dg_opts o = { .timeout = 1.0 };
	struct dg_daemon dd = { .sock_fd = -1, .commit_fd = -1 };
	struct fuse_loop_config *cfg = NULL;
	char mnt[PATH_MAX];
	int ret = 1;

	dg_log_set_func(log_func);
	if (fuse_opt_parse(&args, &o, dg_fuse_opts, opt_proc) == -1)
		return 1;
	if (o.show_help) {
		fputs(usage, stdout);
		fuse_cmdline_help();
		ret = 0;
		goto out_args;
	}
	if (fuse_parse_cmdline(&args, &fo) != 0)
		goto out_args;
	if (!o.devs || !fo.mountpoint) {
		fputs(usage, stderr);
		goto out_args;
	}
	if (o.timeout < 0) {
		fprintf(stderr, "daxguard: timeout must not be negative\n");
		goto out_args;
	}
	if (check_mountpoint(fo.mountpoint) || !realpath(fo.mountpoint, mnt))
		goto out_args;
	dd.devs = o.devs;
	dd.mountpoint = mnt;
	dd.timeout = o.timeout;
	dd.writeback = o.writeback;
	dd.debug = fo.debug;
	if (fo.debug)
		dg_log_set_level(DG_LOG_DEBUG);
	if (open_volume(&dd))
		goto out_args;
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

	/* The kernel checks permissions against the modes we keep. */
	fuse_opt_add_arg(&args, "-odefault_permissions");
	fuse_opt_add_arg(&args, "-ofsname=daxguard");
	fuse_opt_add_arg(&args, "-osubtype=daxguard");
	dd.se = fuse_session_new(&args, &dg_ll_ops, sizeof(dg_ll_ops), &dd);
	if (!dd.se)
		goto out_vol;
	if (fuse_set_signal_handlers(dd.se) != 0)
		goto out_session;
	if (fuse_session_mount(dd.se, mnt) != 0)
		goto out_signals;
	dg_log(DG_LOG_NOTICE, "mounted devices=%s mountpoint=%s", dd.devs, mnt);
	if (fuse_daemonize(fo.foreground) != 0)
		goto out_unmount;
	if (!fo.foreground) {
		log_to_syslog = 1;
		openlog("daxguard", LOG_PID, LOG_DAEMON);
	}
	/* Threads only after daemonize: fork keeps just the caller. */
	if (start_servers(&dd))
		goto out_unmount;
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
	dg_commit_stop(&dd);
	dg_ctl_stop(&dd);
out_unmount:
	fuse_session_unmount(dd.se);
out_signals:
	fuse_remove_signal_handlers(dd.se);
out_session:
	fuse_session_destroy(dd.se);
out_vol:
	dg_fs_close(dd.fs);
	if (dg_vol_close(dd.vol) == 0)
		dg_log(DG_LOG_NOTICE, "unmounted cleanly devices=%s", dd.devs);
out_args:
	free(fo.mountpoint);
	free(o.devs);
	fuse_opt_free_args(&args);
	return ret;
}
