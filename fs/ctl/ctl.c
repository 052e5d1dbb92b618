// SPDX-License-Identifier: MIT
/* ctl.c -- daxguard-ctl: ask a mounted volume's daemon for status or a scrub */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "version.h"

static const char usage[] =
	"usage: daxguard-ctl MOUNTPOINT status [-v] [--json]\n"
	"       daxguard-ctl MOUNTPOINT scrub [--json]\n"
	"       daxguard-ctl MOUNTPOINT clear\n";

static const char help_text[] =
	"Ask the daemon of a mounted daxguard volume (MOUNTPOINT or any\n"
	"directory in it) what it has seen, or to act.\n"
	"\n"
	"commands:\n"
	"  status          health, devices, capacity and fault counters\n"
	"  scrub           verify every written page and all parity now,\n"
	"                  repairing what fails (root or the mount's owner)\n"
	"  clear           reset the fault counters (root or the mount's owner)\n"
	"options:\n"
	"  -v, --verbose   status: every device and its counters\n"
	"  --json          print the reply as one JSON object\n"
	"  -h, --help      show this help and exit\n"
	"  -V, --version   show the version and exit\n"
	"\n"
	"Exit status: 0 done, 1 the daemon cannot be reached or refused, 2 bad\n"
	"usage, 3 a scrub found damage it could not repair.\n";

/* Exit codes: as btrfs scrub, 3 when a scrub found what it could not
 * repair. */
#define EXIT_FAIL	   1
#define EXIT_USAGE	   2
#define EXIT_UNRECOVERABLE 3

static int not_a_mount(const char *mnt, int err)
{
	if (err == ENOTCONN)
		fprintf(stderr, "daxguard-ctl: '%s': %s: its daemon is gone; "
			"run 'fusermount3 -u %s' and mount it again\n", mnt,
			strerror(err), mnt);
	else
		fprintf(stderr, "daxguard-ctl: '%s' is not a daxguard mount: "
			"%s\n", mnt, strerror(err));
	return EXIT_FAIL;
}

/* The number after key in a reply ("unrecoverable 2" or
 * "\"unrecoverable\":2"); 0 when absent. */
static unsigned long long reply_count(const char *reply, const char *key)
{
	const char *p = strstr(reply, key);

	if (!p)
		return 0;
	p += strlen(key);
	p += strspn(p, "\": ");
	return strtoull(p, NULL, 10);
}

static int cmd_request(const char *mnt, const char *req, bool is_scrub)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *reply = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, ret = 0;

	n = getxattr(mnt, "user.daxguard.socket", sa.sun_path,
		     sizeof(sa.sun_path) - 1);
	if (n < 0)
		return not_a_mount(mnt, errno);
	sa.sun_path[n] = 0;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "daxguard-ctl: cannot reach the daemon at "
			"'%s': %s\n", sa.sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return EXIT_FAIL;
	}
	if (write(fd, req, strlen(req)) < 0) {
		fprintf(stderr, "daxguard-ctl: send: %s\n", strerror(errno));
		close(fd);
		return EXIT_FAIL;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *r = realloc(reply, cap = 2 * cap + 8192);

			if (!r) {
				fprintf(stderr, "daxguard-ctl: out of memory\n");
				ret = EXIT_FAIL;
				break;
			}
			reply = r;
		}
		n = read(fd, reply + len, 4096);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!reply)
		return EXIT_FAIL;
	reply[len] = 0;
	fwrite(reply, 1, len, stdout);
	if (!ret && (!len || !strncmp(reply, "error", 5) ||
		     !strncmp(reply, "{\"error\"", 8)))
		ret = EXIT_FAIL;
	else if (!ret && is_scrub && reply_count(reply, "unrecoverable"))
		ret = EXIT_UNRECOVERABLE;
	free(reply);
	return ret;
}

int main(int argc, char **argv)
{
	bool json = false, verbose = false;
	const char *cmd;
	char req[64];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			fputs(help_text, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("daxguard-ctl (daxguard) %s\n", DG_VERSION);
			return 0;
		}
	}
	if (argc < 3) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	cmd = argv[2];
	if (strcmp(cmd, "status") && strcmp(cmd, "scrub") &&
	    strcmp(cmd, "clear")) {
		fprintf(stderr, "daxguard-ctl: unknown command '%s'\n%s", cmd,
			usage);
		return EXIT_USAGE;
	}
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && strcmp(cmd, "clear")) {
			json = true;
		} else if ((!strcmp(argv[i], "-v") ||
			    !strcmp(argv[i], "--verbose")) &&
			   !strcmp(cmd, "status")) {
			verbose = true;
		} else {
			fprintf(stderr, "daxguard-ctl: unknown option '%s'\n%s",
				argv[i], usage);
			return EXIT_USAGE;
		}
	}
	snprintf(req, sizeof(req), "%s%s%s\n", cmd, json ? " json" : "",
		 verbose ? " verbose" : "");
	return cmd_request(argv[1], req, !strcmp(cmd, "scrub"));
}
