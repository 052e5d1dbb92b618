// SPDX-License-Identifier: MIT
/*
 * device_list.c -- the volume's device list as it is now, after a
 * replace, beside the one the mount was made with
 *
 * The daemon gives libfuse the device list as the mount's fsname, and
 * the kernel keeps it as the mount's source (/proc/self/mountinfo,
 * findmnt) for the mount's life: a FUSE mount's source cannot be
 * changed while it is mounted. After "daxguard-ctl MNT replace DEV NEW"
 * the source still names the old device, and so does the fstab line the
 * volume was mounted from; at the next boot that list finds the old
 * device stale. So the daemon works out the list that names the devices
 * as they are now -- the mount's list with the old device's path
 * replaced by the new one -- logs it once the replace is done, and
 * status and replace status show it, ready to paste into fstab.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "devlist.h"

/* paths joined by ':', or by ',' when one holds ':' (canonical_devs()
 * in main.c: what fsck.daxguard and the daemon take back). */
static char *join(char **paths, unsigned n)
{
	size_t len = 1;
	char sep = ':', *out;

	for (unsigned i = 0; i < n; i++) {
		len += strlen(paths[i]) + 1;
		if (strchr(paths[i], ':'))
			sep = ',';
	}
	out = calloc(1, len);
	if (!out)
		return NULL;
	for (unsigned i = 0; i < n; i++) {
		if (i)
			strncat(out, &sep, 1);
		strcat(out, paths[i]);
	}
	return out;
}

char *dg_devlist_after_replace(struct dg_daemon *dd, const char *list,
			       unsigned dev, const char *new_path)
{
	char *p[DG_MAX_DEVS + 1], *out;
	int n = devlist_split(list, p, DG_MAX_DEVS);
	int at = -1;

	if (n < 0)
		return NULL;
	/* The slot's own path (present, or stale when given); for a
	 * missing one, the first path that is no other slot's (a path
	 * given for it that did not open). */
	for (int i = 0; i < n && at < 0; i++)
		if (dd->slot_path[dev] && !strcmp(p[i], dd->slot_path[dev]))
			at = i;
	for (int i = 0; i < n && at < 0 && !dd->slot_path[dev]; i++) {
		bool other = false;

		for (unsigned d = 0; d < DG_MAX_DEVS && !other; d++)
			other = d != dev && dd->slot_path[d] &&
				!strcmp(p[i], dd->slot_path[d]);
		if (!other)
			at = i;
	}
	if (at < 0 && n == DG_MAX_DEVS) {
		devlist_free(p, (unsigned)n);
		return NULL;
	}
	if (at < 0) {
		p[n] = NULL;
		at = n++;
	}
	free(p[at]);
	p[at] = strdup(new_path);
	out = p[at] ? join(p, (unsigned)n) : NULL;
	devlist_free(p, (unsigned)n);
	return out;
}

char *dg_devlist_now(struct dg_daemon *dd)
{
	struct dg_replace_d *r = &dd->replace;
	char *s;

	pthread_mutex_lock(&r->job.lock);
	s = strdup(r->devs_now ? r->devs_now : dd->devs);
	pthread_mutex_unlock(&r->job.lock);
	return s;
}
