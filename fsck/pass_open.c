// SPDX-License-Identifier: MIT
/* pass_open.c -- the first pass: open the volume read-only, whatever
 * state it is in (missing devices, a root only parity still holds,
 * devices behind the volume), and the open every later pass reuses */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "devlist.h"
#include "fsck.h"
#include "probe.h"

/* Every repair of a writable volume is asked about, from the open's
 * first read on (ask.c); the superblocks and the journal the open
 * rewrites were asked about as pass 0 and 1 before it
 * (pass_super_journal.c). */
static int vol_open_once(struct fsck_ctx *c, unsigned flags, char *err,
			 size_t errlen)
{
	if (flags & DG_OPEN_RDONLY)
		return dg_vol_open(c->paths, c->n, flags, &c->vol, err,
				   errlen);
	return dg_vol_open_asking(c->paths, c->n, flags, ctx_ask, c, &c->vol,
				  err, errlen);
}

/*
 * umount returns before the daemon of the volume has let go of its
 * devices, so "umount MNT && fsck.daxguard -n DEVS" would find them in
 * use. A volume still mounted is refused at once, naming where; devices
 * of no mounted volume are waited for (up to 10 s, saying so).
 */
int open_vol(struct fsck_ctx *c, unsigned flags, char *err,
		    size_t errlen)
{
	bool shared = flags & DG_OPEN_RDONLY;
	char mnt[4096];
	int ret;

	ret = vol_open_once(c, flags, err, errlen);
	if (ret != -EBUSY)
		return ret;
	for (unsigned i = 0; i < c->n; i++)
		if (c->paths[i][0] &&
		    dg_dev_mountpoint(c->paths[i], mnt, sizeof(mnt))) {
			/* (a long mount point may be cut short) */
			if (snprintf(err, errlen, "'%s' is in use: its volume "
				     "is mounted on '%s'; unmount it first",
				     c->paths[i], mnt) < 0)
				err[0] = 0;
			return ret;
		}
	fprintf(stderr, "fsck.daxguard: waiting for the daemon of an "
		"unmounted volume to release the devices\n");
	if (dg_devs_wait_unlocked(c->paths, c->n, shared, 10000))
		return ret;
	return vol_open_once(c, flags, err, errlen);
}

/* Errors that leave a device out but may be covered by parity. */
static bool degradable(int ret)
{
	return ret == -ENXIO || ret == -ESTALE || ret == -EFBIG ||
	       ret == -ENOSPC || ret == -ENODEV;
}

/*
 * More devices behind the volume's generation than parity covers: they
 * lost writes, their superblock updates among them; or devices no
 * superblock of which verifies, whose pages said which they are. Each is
 * used page by page, a page counting only where it verifies against the
 * newest checksum copy (DG_OPEN_SUSPECT); what does not verify is
 * rebuilt from parity where its row allows, else given up and named.
 */
static void suspect_findings(struct fsck_ctx *c)
{
	struct dg_vol_info info;

	dg_vol_get_info(c->vol, &info);
	for (unsigned d = 0; d < info.ndev; d++) {
		struct dg_chk_event ev = { 0 };

		if (!(info.suspect_mask & (1u << d)))
			continue;
		ev.kind = DG_CHK_DEV_STALE;
		ev.dev = (int)d;
		ev.page = ev.vpn = -1;
		ev.structure = "device";
		ev.fixable = true;
		if (info.found_mask & (1u << d))
			snprintf(ev.detail, sizeof(ev.detail),
				 "device %u of %u: no superblock of it "
				 "verifies, its pages say which device it is "
				 "(more devices missing than parity covers)",
				 d, info.ndev);
		else
			snprintf(ev.detail, sizeof(ev.detail),
				 "device %u of %u is behind the volume: it "
				 "lost writes, its superblock's too (more "
				 "such devices than parity covers)",
				 d, info.ndev);
		snprintf(ev.action, sizeof(ev.action),
			 "every page checked, then taken back");
		ctx_add(c, &ev);
	}
}

int fsck_fail(struct fsck_ctx *c, const char *what, const char *err)
{
	say_error(c, "%s: %s\n", what, err);
	dg_vol_close(c->vol);
	c->vol = NULL;
	return FSCK_ERROR;
}

int pass_open(struct fsck_ctx *c)
{
	struct dg_vol_info info;
	int ret;

	c->repair = c->mode != MODE_N;
	ret = open_vol(c, DG_OPEN_RDONLY, c->err, sizeof(c->err));
	if (ret && degradable(ret)) {
		char err2[512];

		ret = open_vol(c, DG_OPEN_RDONLY | DG_OPEN_DEGRADED |
					  DG_OPEN_SUSPECT, err2, sizeof(err2));
		if (ret == -ENOENT || (ret && !err2[0]))
			; /* keep the first message */
		else if (ret)
			snprintf(c->err, sizeof(c->err), "%s", err2);
	}
	if (ret == -EIO) {
		/* The root lives only on the missing devices: look at the
		 * device set alone, the rebuild brings the root back. */
		char err3[512];

		if (open_vol(c, DG_OPEN_RDONLY | DG_OPEN_DEGRADED |
				     DG_OPEN_SUSPECT | DG_OPEN_FORMAT, err3,
			     sizeof(err3)) == 0) {
			ret = 0;
			c->rootless = true;
		}
	}
	if (ret) {
		say_error(c, "cannot check: %s\n",
			c->err[0] ? c->err : strerror(-ret));
		return FSCK_ERROR;
	}
	dg_vol_get_info(c->vol, &info);
	dg_uuid_format(info.uuid, c->uuid);
	if (info.suspect_mask) {
		/* Every later open takes them in too; a writable one may
		 * repair them (accept_suspects()). */
		c->oflags = DG_OPEN_SUSPECT | DG_OPEN_REPAIR;
		suspect_findings(c);
	}
	return PASS_NEXT;
}
