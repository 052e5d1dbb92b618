// SPDX-License-Identifier: MIT
/* pass_rebuild.c -- devices missing, blank, truncated or stale: each
 * reported, and with -y (every one agreed to) rebuilt from parity before
 * anything else is checked */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fsck.h"
#include "image_file.h"
#include "probe.h"

/* A missing image path is created, an empty one extended, sized like
 * the others, so the rebuild has somewhere to write. */
static int create_missing(struct fsck_ctx *c)
{
	off_t size = 0;
	struct stat st;

	for (unsigned i = 0; i < c->n; i++)
		if (stat(c->paths[i], &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size > size)
			size = st.st_size;
	for (unsigned i = 0; i < c->n; i++) {
		char err[8400];
		bool created;

		if (!c->paths[i][0])
			continue;
		/* The paths are resolved (main()): what is not there is
		 * created 0600, never through a symlink (image_file.h). */
		if (!(stat(c->paths[i], &st) == 0 && S_ISREG(st.st_mode) &&
		      st.st_size == 0) &&
		    (lstat(c->paths[i], &st) == 0 || errno != ENOENT))
			continue;
		if (dg_image_prepare(c->paths[i], (uint64_t)size, &created,
				     err, sizeof(err))) {
			say_error(c, "%s\n", err);
			return -1;
		}
	}
	return 0;
}

/*
 * A rebuild writes a whole device onto every path that is not a current
 * member of the volume. That is only safe on what is ours or nothing:
 * a path that carries this volume's superblock (stale, truncated,
 * damaged), one that does not exist, an empty or an all-zero file, or a
 * path the user named for the slot with --replace. Anything else (a file
 * system, another volume's device, a file of data) is refused before a
 * byte is written, saying what it holds.
 */
static int check_rebuild_targets(struct fsck_ctx *c,
				 const struct dg_vol_info *info)
{
	int bad = 0;

	for (unsigned d = 0; d < DG_MAX_DEVS; d++) {
		if (!c->replace[d])
			continue;
		if (d >= info->ndev || !(info->missing_mask & (1u << d))) {
			say_error(c, "--replace %u='%s': "
				"device %u of volume %s is %s; --replace only "
				"names where a missing device is rebuilt\n", d,
				c->replace[d], d, c->uuid,
				d >= info->ndev ? "not part of it"
						: "present and current");
			bad = -1;
		}
	}
	if (bad)
		return bad;
	for (unsigned i = 0; i < c->n; i++) {
		const char *path = c->paths[i];
		unsigned slot;
		struct dg_probe p;
		char err[512], what[256];
		bool ours;

		if (!path[0] || replace_slot(c, path, &slot))
			continue;
		if (dg_dev_probe(path, &p, err, sizeof(err))) {
			say_error(c, "%s\n", err);
			bad = -1;
			continue;
		}
		ours = p.kind == DG_PROBE_DAXGUARD &&
		       !memcmp(p.uuid, info->uuid, 16);
		/* Both superblocks lost, the rest still sealed as this
		 * volume's: ours, and rebuilt like any damaged device. */
		if (p.kind == DG_PROBE_DATA && c->vol &&
		    dg_vol_marks_on(c->vol, path))
			continue;
		if (ours && p.dev_index < DG_MAX_DEVS &&
		    c->replace[p.dev_index]) {
			say_error(c, "'%s' (a copy of device "
				"%u) and --replace %u='%s' name the same "
				"device; give only one of them\n", path,
				p.dev_index, p.dev_index,
				c->replace[p.dev_index]);
			bad = -1;
			continue;
		}
		if (ours || p.kind == DG_PROBE_ABSENT ||
		    p.kind == DG_PROBE_EMPTY || p.kind == DG_PROBE_BLANK)
			continue;
		/* The slot it would fill: its position if that is missing,
		 * else the first missing one (rebuild.c assigns them so). */
		slot = i < info->ndev && (info->missing_mask & (1u << i))
			       ? i
			       : (unsigned)__builtin_ctz(info->missing_mask);
		dg_probe_describe(&p, what, sizeof(what));
		say_error(c, "'%s' %s, not a device of "
			"volume %s; refusing to rebuild device %u onto it; "
			"use --replace %u=%s to overwrite it\n", path, what,
			c->uuid, slot, slot, path);
		bad = -1;
	}
	return bad;
}

/*
 * Which path stands for missing device d, and what it holds: a path
 * with this volume's superblock for d (stale, truncated, damaged), else,
 * when only one device is missing, the one path that is not a current
 * device. NULL when that cannot be told.
 */
static const char *explain_missing(struct fsck_ctx *c,
				   const struct dg_vol_info *info, unsigned d,
				   char *buf, size_t len)
{
	const char *other = NULL;
	unsigned nother = 0;
	char tmp[512];

	for (unsigned i = 0; i < c->n; i++) {
		struct dg_probe p;
		char err[256];

		if (!c->paths[i][0] ||
		    !dg_dev_explain(c->paths[i], info, tmp, sizeof(tmp)))
			continue;
		if (dg_dev_probe(c->paths[i], &p, err, sizeof(err)) == 0 &&
		    p.kind == DG_PROBE_DAXGUARD &&
		    !memcmp(p.uuid, info->uuid, 16)) {
			if (p.dev_index == d) {
				snprintf(buf, len, "%s", tmp);
				return buf;
			}
			continue;
		}
		other = c->paths[i];
		nother++;
	}
	if (nother != 1 || __builtin_popcount(info->missing_mask) != 1)
		return NULL;
	return dg_dev_explain(other, info, buf, len);
}

static void missing_findings(struct fsck_ctx *c, bool fixed)
{
	struct dg_vol_info info;

	dg_vol_get_info(c->vol, &info);
	for (unsigned d = 0; d < info.ndev; d++) {
		struct dg_chk_event ev = { 0 };
		char why[512];

		if (!(info.missing_mask & (1u << d)))
			continue;
		ev.kind = DG_CHK_DEV_MISSING;
		ev.dev = (int)d;
		ev.page = ev.vpn = -1;
		ev.structure = "device";
		ev.fixable = info.parity > 0;
		ev.fixed = fixed;
		/* A long path may be cut short in the detail. The open
		 * knows best when a copy of another device stood in the
		 * slot's place. */
		if (dg_vol_missing_why(c->vol, d))
			snprintf(why, sizeof(why), "%s",
				 dg_vol_missing_why(c->vol, d));
		if (dg_vol_missing_why(c->vol, d) ||
		    explain_missing(c, &info, d, why, sizeof(why))) {
			if (snprintf(ev.detail, sizeof(ev.detail),
				     "device %u of %u: %s", d, info.ndev,
				     why) < 0)
				ev.detail[0] = 0;
		} else
			snprintf(ev.detail, sizeof(ev.detail),
				 "device %u of %u is missing, blank, truncated "
				 "or stale", d, info.ndev);
		snprintf(ev.action, sizeof(ev.action), "%s",
			 info.parity ? "rebuild from parity" : "none");
		ctx_add(c, &ev);
	}
}

int pass_rebuild(struct fsck_ctx *c)
{
	struct dg_vol_info info;
	bool rebuild;
	size_t before;
	double t0;
	int ret;

	dg_vol_get_info(c->vol, &info);
	if (!info.degraded)
		return PASS_NEXT;
	rebuild = c->repair && info.parity;
	if (rebuild) {
		/* One rebuild for every missing device: each is asked
		 * about, and all must be agreed to. */
		size_t m = c->nf;

		missing_findings(c, false);
		rebuild = ask_findings(c, m);
		c->nf = m;
	}
	if (rebuild && check_rebuild_targets(c, &info)) {
		missing_findings(c, false);
		return FSCK_ERROR;
	}
	if (!rebuild) {
		missing_findings(c, false);
		if (c->rootless)
			return 0; /* nothing more to read until then */
		/* -p does not rebuild a device: check the rest as -n would
		 * (a writable open needs every device), and exit 4 for -y to
		 * do it, as e2fsck -p does with what is not safe to preen. */
		c->repair = false;
		return PASS_NEXT;
	}
	missing_findings(c, true);
	if (dg_vol_close(c->vol)) {
		c->vol = NULL;
		say_error(c, "the volume could not be closed cleanly before "
			  "the rebuild\n");
		return FSCK_ERROR;
	}
	c->vol = NULL;
	if (create_missing(c))
		return FSCK_ERROR;
	c->phase = "rebuild";
	before = c->nf;
	t0 = now_secs();
	ret = dg_vol_rebuild(c->paths, c->n, ctx_event, c, ctx_progress, c,
			     c->err, sizeof(c->err));
	c->secs_rebuild = now_secs() - t0;
	report_progress_end(c);
	if (ret && ret != -EIO) {
		for (size_t i = 0; i < before; i++)
			c->f[i].fixed = false;
		say_error(c, "cannot rebuild: %s\n",
			  c->err[0] ? c->err : strerror(-ret));
		return FSCK_ERROR | FSCK_UNCORRECTED;
	}
	ret = open_vol(c, DG_OPEN_RDONLY | c->oflags, c->err, sizeof(c->err));
	if (ret) {
		say_error(c, "cannot check after rebuild: %s\n", c->err);
		return FSCK_ERROR | FSCK_UNCORRECTED;
	}
	/* A device found by its pages went through the rebuild's rows and
	 * got its superblocks there (rebuild.c): no longer a suspect. */
	dg_vol_get_info(c->vol, &info);
	for (size_t i = 0; i < before; i++) {
		struct finding *f = &c->f[i];

		if (f->code == PR_0_DEV_STALE && f->dev >= 0 &&
		    !((info.suspect_mask | info.missing_mask) &
		      (1u << f->dev)))
			f->fixed = true;
	}
	return PASS_NEXT;
}
