// SPDX-License-Identifier: MIT
/* peer.c -- who is at the other end of a socket, and which paths of the
 * volume it may be shown */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "daemon.h"

bool dg_peer_is_privileged(uid_t uid)
{
	return uid == 0 || uid == getuid();
}

/* Whether w may search the host's directory dir (mode and access ACL):
 * the way to the mountpoint is the kernel's to check too. */
static bool host_may_search(const char *dir, const struct dg_who *w)
{
	uint32_t acl[(4 + 8 * 1024 + 3) / 4];	/* 1,024 entries */
	struct stat st;
	ssize_t n;

	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	n = getxattr(dir, "system.posix_acl_access", acl, sizeof(acl));
	return dg_who_may(w, st.st_mode, st.st_uid, st.st_gid,
			  n > 0 ? acl : NULL, n > 0 ? (size_t)n : 0,
			  DG_MAY_EXEC);
}

/* Whether the peer could reach the mount at all: without allow_other
 * only the user who mounted can (the kernel refuses everyone else, root
 * too), and every directory above the mountpoint must let it pass. */
static bool peer_reach(struct dg_daemon *dd, const struct dg_peer *p)
{
	char dir[4096];
	size_t n = strlen(dd->mountpoint);

	if (!dd->allow_other && p->who.uid != getuid())
		return false;
	if (n >= sizeof(dir))
		return false;
	memcpy(dir, dd->mountpoint, n + 1);
	for (size_t i = 1; i < n; i++) {
		if (dir[i] != '/')
			continue;
		dir[i] = 0;
		if (!host_may_search(dir, &p->who))
			return false;
		dir[i] = '/';
	}
	return n == 1 || host_may_search("/", &p->who);
}

bool dg_peer_sees(struct dg_daemon *dd, const struct dg_peer *p,
		  const char *path)
{
	if (p->root)
		return true;
	return p->reach && dg_fs_may_stat(dd->fs, path, &p->who, dd->acl);
}

/* The peer's identity and groups (SO_PEERCRED, SO_PEERGROUPS), and what
 * it may see. */
int dg_peer_get(struct dg_daemon *dd, int fd, struct dg_peer *p)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uint32_t *g = NULL;

	memset(p, 0, sizeof(*p));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	for (socklen_t cap = 64 * sizeof(gid_t);;) {
		uint32_t *ng = realloc(g, cap);

		if (!ng) {
			free(g);
			return -ENOMEM;
		}
		g = ng;
		len = cap;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) == 0)
			break;
		if (errno != ERANGE || len <= cap) {
			len = 0; /* no groups known: the fewest rights */
			break;
		}
		cap = len;
	}
	p->groups = g;
	p->who = (struct dg_who){ cred.uid, cred.gid, g,
				  (unsigned)(len / sizeof(gid_t)) };
	p->root = cred.uid == 0;
	p->privileged = dg_peer_is_privileged(cred.uid);
	p->reach = !p->root && peer_reach(dd, p);
	return 0;
}

void dg_peer_free(struct dg_peer *p)
{
	free(p->groups);
	p->groups = NULL;
}
