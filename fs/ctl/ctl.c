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

static const char usage[] =
	"usage: daxguard-ctl MOUNTPOINT status|scrub [--json]\n";

static int cmd_request(const char *mnt, const char *req)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[4096];
	ssize_t n;
	int fd;

	n = getxattr(mnt, "user.daxguard.socket", sa.sun_path,
		     sizeof(sa.sun_path) - 1);
	if (n < 0) {
		fprintf(stderr, "daxguard-ctl: '%s' is not a daxguard mount: "
			"%s\n", mnt, strerror(errno));
		return 1;
	}
	sa.sun_path[n] = 0;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "daxguard-ctl: cannot reach the daemon at "
			"'%s': %s\n", sa.sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (write(fd, req, strlen(req)) < 0) {
		fprintf(stderr, "daxguard-ctl: send: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	shutdown(fd, SHUT_WR);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	bool json = false;
	const char *cmd;
	char req[64];

	if (argc < 3 || argc > 4) {
		fputs(usage, stderr);
		return 2;
	}
	if (argc == 4) {
		if (strcmp(argv[3], "--json")) {
			fprintf(stderr, "daxguard-ctl: unknown option '%s'\n%s",
				argv[3], usage);
			return 2;
		}
		json = true;
	}
	cmd = argv[2];
	if (strcmp(cmd, "status") && strcmp(cmd, "scrub")) {
		fprintf(stderr, "daxguard-ctl: unknown command '%s'\n%s", cmd,
			usage);
		return 2;
	}
	snprintf(req, sizeof(req), "%s%s\n", cmd, json ? " json" : "");
	return cmd_request(argv[1], req);
}
