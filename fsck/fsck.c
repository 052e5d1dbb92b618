// SPDX-License-Identifier: MIT
/* fsck.c -- fsck.daxguard: options, the order of the passes, exit codes */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devlist.h"
#include "fsck.h"
#include "image_file.h"
#include "probe.h"
#include "util.h"
#include "version.h"

static const char usage_line[] =
	"usage: fsck.daxguard [-n | -y | -p] [-f] [-v] [--json] "
	"[--replace N=PATH]... DEV...\n";

static const char help_text[] =
	"Check a daxguard volume (superblocks, journal, every written page\n"
	"against its checksum, parity, the filesystem) and repair what can be\n"
	"proven. The volume must not be mounted.\n"
	"\n"
	"  -n              check only, change nothing\n"
	"  -y              repair everything that can be repaired\n"
	"  -p, -a          repair what is safe without asking (for boot)\n"
	"                  none of them: on a terminal, ask before each\n"
	"                  repair (yes, no, or all); else check only\n"
	"  -f              check even if the volume looks clean (always done)\n"
	"  -v              verbose: statistics, and the engine's messages\n"
	"  -j, --json      print the report as JSON\n"
	"  --replace N=PATH\n"
	"                  with -y: rebuild device N onto PATH, whatever it\n"
	"                  holds (PATH need not be among the DEVs)\n"
	"  -h, --help      show this help and exit\n"
	"  -V, --version   show the version and exit\n"
	"\n"
	"DEV... are the volume's devices in any order, as separate arguments\n"
	"or as one list separated by ',' or ':' (the form fstab and fsck(8)\n"
	"hand over).\n"
	"Exit status (fsck(8)): 0 clean, 1 errors corrected, 4 errors left\n"
	"uncorrected or data lost, 8 operational error, 16 usage error.\n";

static bool verbose_log;

static void log_func(enum dg_log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void log_func(enum dg_log_level level, const char *fmt, va_list ap)
{
	/* Findings are reported by the passes; engine chatter only with -v. */
	(void)level;
	if (!verbose_log)
		return;
	fprintf(stderr, "fsck.daxguard: engine: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* Every repair of a writable volume is asked about, from the open's
 * first read on (ask.c); the superblocks and the journal the open
 * rewrites were asked about as pass 0 and 1 before it (run()). */
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
static int open_vol(struct fsck_ctx *c, unsigned flags, char *err,
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
 * Each path resolved once (image_file.h): a symlink planted in a sticky,
 * world-writable directory is refused, whatever fs.protected_symlinks
 * says, and fsck works on the resolved paths from here on (a rebuild
 * writes a whole device). NULL, having said why, when one is refused.
 */
static const char *resolve_path(const char *path)
{
	char buf[4096], err[8400];
	char *out;
	int ret;

	ret = dg_image_resolve(path, buf, sizeof(buf), err, sizeof(err));
	if (ret == -EPERM)
		die_code(FSCK_ERROR, "%s", err);
	if (ret)
		die_code(FSCK_ERROR, "cannot resolve '%s': %s", path,
			 strerror(-ret));
	out = !strcmp(buf, path) ? (char *)path : strdup(buf);
	if (!out)
		die_code(FSCK_ERROR, "out of memory");
	return out;
}

/* Whoever may read an image may read every file of the volume: said
 * of each image with a daxguard superblock (a foreign file named for a
 * rebuild is not one yet, and is refused or overwritten anyway). */
static void warn_wide_modes(const struct fsck_ctx *c)
{
	for (unsigned i = 0; i < c->n; i++) {
		mode_t wide = dg_image_wide_mode(c->paths[i]);
		struct dg_probe p;
		char err[512];

		if (wide && dg_dev_probe(c->paths[i], &p, err, sizeof(err)) == 0 &&
		    p.kind == DG_PROBE_DAXGUARD)
			fprintf(stderr, "fsck.daxguard: warning: '%s' is "
				"readable by others (group/other bits %03o): "
				"whoever reads it reads the whole volume; "
				"chmod 600 it\n", c->paths[i], (unsigned)wide);
	}
}

static bool replaced(const struct fsck_ctx *c, const char *path, unsigned *slot)
{
	for (unsigned d = 0; d < DG_MAX_DEVS; d++)
		if (c->replace[d] && !strcmp(c->replace[d], path)) {
			*slot = d;
			return true;
		}
	return false;
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

		if (!path[0] || replaced(c, path, &slot))
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

/* The question a finding asks (ask.c takes events, as the engine
 * gives them). */
static bool ask_finding(struct fsck_ctx *c, const struct finding *f,
			const char *action)
{
	struct dg_chk_event ev;

	dg_chk_event_init(&ev, (enum dg_chk_kind)f->code, f->structure);
	ev.dev = f->dev;
	ev.page = f->page;
	ev.vpn = f->vpn;
	ev.ino = f->ino;
	ev.fixable = true;
	snprintf(ev.detail, sizeof(ev.detail), "%s", f->detail);
	snprintf(ev.action, sizeof(ev.action), "%s", action ? action
							   : f->action);
	return fix_problem(c, &ev);
}

/* Ask about each fixable finding in [first, c->nf); true when every
 * answer was yes. The ones declined are marked so in the report. */
static bool ask_findings(struct fsck_ctx *c, size_t first)
{
	bool all = true;

	for (size_t i = first; i < c->nf; i++) {
		struct finding *f = &c->f[i];

		if (!f->fixable || ask_finding(c, f, NULL))
			continue;
		f->declined = c->mode == MODE_ASK;
		all = false;
	}
	return all;
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

/* What the writable open could not read (the volume root, the bitmap,
 * the journal), as a finding: the media failed, not fsck. */
static void unreadable_volume(struct fsck_ctx *c, const char *why)
{
	struct dg_chk_event ev = { 0 };

	ev.kind = DG_CHK_UNREADABLE;
	ev.dev = -1;
	ev.page = -1;
	ev.vpn = -1;
	ev.structure = "volume";
	snprintf(ev.detail, sizeof(ev.detail), "%s", why);
	snprintf(ev.action, sizeof(ev.action), "none: nothing left to "
		 "rebuild it from");
	ctx_add(c, &ev);
}

/*
 * More devices behind the volume's generation than parity covers: they
 * lost writes, their superblock updates among them. Each is used page
 * by page, a page counting only where it verifies against the newest
 * checksum copy (DG_OPEN_SUSPECT); what does not verify is rebuilt from
 * parity where its row allows, else given up and named.
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
		snprintf(ev.detail, sizeof(ev.detail),
			 "device %u of %u is behind the volume: it lost "
			 "writes, its superblock's too (more such devices "
			 "than parity covers)",
			 d, info.ndev);
		snprintf(ev.action, sizeof(ev.action),
			 "every page checked, then taken back");
		ctx_add(c, &ev);
	}
}

/* Every page of the suspects has been through the page pass: they are
 * devices like the others from now on (their superblocks rewritten). */
static void accept_suspects(struct fsck_ctx *c)
{
	struct dg_vol_info info;

	dg_vol_get_info(c->vol, &info);
	if (!info.suspect_mask)
		return;
	for (size_t i = 0; i < c->nf; i++)
		if (c->f[i].code == PR_0_DEV_STALE && !c->f[i].fixed &&
		    !ask_finding(c, &c->f[i], NULL)) {
			c->f[i].declined = c->mode == MODE_ASK;
			return;
		}
	if (dg_vol_accept_suspects(c->vol) <= 0)
		return;
	for (size_t i = 0; i < c->nf; i++) {
		struct finding *f = &c->f[i];

		if (f->dev >= 0 && (info.suspect_mask & (1u << f->dev)) &&
		    (f->code == PR_0_DEV_STALE ||
		     f->code == PR_0_SUPER_DIFFERS ||
		     f->code == PR_0_SUPER_BAD))
			f->fixed = true;
	}
	c->oflags &= ~(DG_OPEN_SUSPECT | DG_OPEN_REPAIR);
}

static int fail(struct fsck_ctx *c, const char *what, const char *err)
{
	say_error(c, "%s: %s\n", what, err);
	dg_vol_close(c->vol);
	c->vol = NULL;
	return FSCK_ERROR;
}

/* A repair of a page of the row at device page page was declined. */
static bool row_declined(const struct fsck_ctx *c, uint64_t page)
{
	for (size_t i = 0; i < c->nf; i++)
		if (c->f[i].declined && c->f[i].page == (int64_t)page &&
		    (c->f[i].code == PR_2_PAGE_BAD ||
		     c->f[i].code == PR_2_PARITY_STALE))
			return true;
	return false;
}

/*
 * Pages that failed with nothing left to repair them from but that no
 * file uses any more (its file was deleted or truncated after the loss)
 * are not data lost: their rows are rewritten with the free pages as
 * zeros and parity recomputed, so they stop being reported for ever.
 */
static void reset_free_pages(struct fsck_ctx *c)
{
	size_t nf = c->nf;
	uint8_t *cls = NULL;
	uint64_t *owner = NULL;
	bool any = false;

	for (size_t i = 0; i < nf; i++)
		any |= c->f[i].code == PR_2_PAGE_BAD && !c->f[i].fixed &&
		       c->f[i].vpn >= 0;
	/* What the structures use, not just what the bitmap says: a page
	 * a file maps is never zeroed. */
	if (!any || dg_check_classify(c->vol, &cls, &owner))
		return;

	for (size_t i = 0; i < nf; i++) {
		struct finding *f = &c->f[i];
		struct dg_loc l;
		uint64_t page;
		int ret;

		if (f->code != PR_2_PAGE_BAD || f->fixed || f->declined ||
		    f->vpn < 0 || dg_vpn_allocated(c->vol, (uint64_t)f->vpn) ||
		    cls[f->vpn] != DG_PC_FREE)
			continue;
		l = dg_vpn_loc(c->vol, (uint64_t)f->vpn);
		page = dg_row_page(c->vol, l.row);
		/* The reset rewrites the row's pages in use too (through
		 * the update path): not where a repair was declined. */
		if (row_declined(c, page))
			continue;
		if (!ask_finding(c, f, "reset the free page to zeros")) {
			f->declined = c->mode == MODE_ASK;
			continue;
		}
		ret = dg_vol_reset_free_pages(c->vol, l.row, cls);
		if (ret) {
			if (c->verbose)
				fprintf(stderr, "fsck.daxguard: cannot reset "
					"the free page at vpn %lld: %s\n",
					(long long)f->vpn, strerror(-ret));
			continue;
		}
		for (size_t j = 0; j < nf; j++)
			if (c->f[j].code == PR_2_PAGE_BAD && !c->f[j].fixed &&
			    c->f[j].page == (int64_t)page) {
				c->f[j].fixed = true;
				snprintf(c->f[j].action, sizeof(c->f[j].action),
					 "%s", c->f[j].vpn >= 0
						       ? "free page reset"
						       : "parity recomputed");
			}
	}
	free(cls);
	free(owner);
}

/*
 * Some repairs uncover work for passes that already ran: a file cut at
 * a lost extent page frees pages the page pass found bad (reset only
 * once they are free), a file moved to /lost+found changes that
 * directory's counts. Like e2fsck's restart_e2fsck, a run whose
 * filesystem pass changed anything starts the checks over on a fresh
 * open, so that one fsck -y leaves nothing for the next one.
 */
static bool needs_restart(const struct fsck_ctx *c, size_t first)
{
	for (size_t i = first; i < c->nf; i++)
		if (c->f[i].fixed &&
		    !strncmp(pr_get(c->f[i].code)->name, "PR_3_", 5))
			return true;
	return false;
}

/*
 * Findings of the pass being restarted that were left as they are are
 * dropped: the next pass finds again whatever still holds (a repair
 * made since may have resolved them). Repairs made stay in the report.
 * The volume is closed and opened again, so the next pass reads every
 * structure afresh and counts only its own fault events.
 */
static int restart(struct fsck_ctx *c, size_t first, char *err,
		   size_t errlen)
{
	size_t n = first;
	int ret;

	for (size_t i = first; i < c->nf; i++)
		if (c->f[i].fixed)
			c->f[n++] = c->f[i];
	c->nf = n;
	if (!c->json)
		printf("%s: restarting the checks (pass %u of at most %u): "
		       "the repairs above changed what earlier checks "
		       "passed\n", c->uuid, c->passes + 1, FSCK_MAX_PASSES);
	ret = dg_vol_close(c->vol);
	c->vol = NULL;
	if (ret) {
		snprintf(err, errlen, "the repairs could not be made durable: "
			 "%s", strerror(-ret));
		return ret;
	}
	return open_vol(c, c->oflags, err, errlen);
}

static bool is_jhead(const struct finding *f)
{
	return f->code == PR_1_JHEAD_BAD || f->code == PR_1_JHEAD_STALE;
}

/*
 * A writable open writes a journal header slot on every copy (the
 * fresh numbering after the replay, journal.c), which may be the very
 * slot the read-only look found stale or damaged. The check after the
 * open, whose findings follow `last`, is the proof: a slot copy it
 * finds again stands as its own finding (repaired there), one it finds
 * whole was rewritten by the open, so the finding from before is
 * fixed. Findings [first, last) were made before the open.
 */
static void confirm_jheads(struct fsck_ctx *c, size_t first, size_t last)
{
	size_t m = first;

	for (size_t i = first; i < c->nf; i++) {
		bool again = false;

		if (i < last && is_jhead(&c->f[i])) {
			for (size_t j = last; j < c->nf && !again; j++)
				again = is_jhead(&c->f[j]) &&
					c->f[j].dev == c->f[i].dev &&
					c->f[j].page == c->f[i].page;
			if (again)
				continue;
			c->f[i].fixed = true;
			snprintf(c->f[i].action, sizeof(c->f[i].action),
				 "rewritten by the open for repair");
		}
		c->f[m++] = c->f[i];
	}
	c->nf = m;
}

static int run(struct fsck_ctx *c)
{
	bool repair = c->mode != MODE_N;
	char err[512] = "";
	struct dg_vol_info info;
	size_t first_super;
	bool rootless = false;
	uint64_t outside;
	int ret;

	ret = open_vol(c, DG_OPEN_RDONLY, err, sizeof(err));
	if (ret && degradable(ret)) {
		char err2[512];

		ret = open_vol(c, DG_OPEN_RDONLY | DG_OPEN_DEGRADED |
					  DG_OPEN_SUSPECT, err2, sizeof(err2));
		if (ret == -ENOENT || (ret && !err2[0]))
			; /* keep the first message */
		else if (ret)
			snprintf(err, sizeof(err), "%s", err2);
	}
	if (ret == -EIO) {
		/* The root lives only on the missing devices: look at the
		 * device set alone, the rebuild brings the root back. */
		char err3[512];

		if (open_vol(c, DG_OPEN_RDONLY | DG_OPEN_DEGRADED |
				     DG_OPEN_SUSPECT | DG_OPEN_FORMAT, err3,
			     sizeof(err3)) == 0) {
			ret = 0;
			rootless = true;
		}
	}
	if (ret) {
		say_error(c, "cannot check: %s\n",
			err[0] ? err : strerror(-ret));
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

	if (info.degraded) {
		bool rebuild = repair && info.parity;

		if (rebuild) {
			/* One rebuild for every missing device: each is
			 * asked about, and all must be agreed to. */
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
			if (rootless)
				return 0; /* nothing more to read until then */
			/* -p does not rebuild a device: check the rest as
			 * -n would (a writable open needs every device), and
			 * exit 4 for -y to do it, as e2fsck -p does with
			 * what is not safe to preen. */
			repair = false;
		} else {
			size_t before;

			missing_findings(c, true);
			if (dg_vol_close(c->vol)) {
				c->vol = NULL;
				say_error(c, "the volume could not be closed "
					  "cleanly before the rebuild\n");
				return FSCK_ERROR;
			}
			c->vol = NULL;
			if (create_missing(c))
				return FSCK_ERROR;
			c->phase = "rebuild";
			before = c->nf;
			ret = dg_vol_rebuild(c->paths, c->n, ctx_event, c,
					     ctx_progress, c, err, sizeof(err));
			report_progress_end(c);
			if (ret && ret != -EIO) {
				for (size_t i = 0; i < before; i++)
					c->f[i].fixed = false;
				say_error(c, "cannot rebuild: "
					"%s\n", err[0] ? err : strerror(-ret));
				return FSCK_ERROR | FSCK_UNCORRECTED;
			}
			ret = open_vol(c, DG_OPEN_RDONLY | c->oflags, err,
				       sizeof(err));
			if (ret) {
				say_error(c, "cannot check "
					"after rebuild: %s\n", err);
				return FSCK_ERROR | FSCK_UNCORRECTED;
			}
		}
	}

	/* Pass 0 and the pending journal on a read-only view: a writable
	 * open rewrites the superblocks and replays the journal, which are
	 * the repairs of what is found here. */
	first_super = c->nf;
	pass_super(c, false);
	pass_journal(c, false);
	/* The writable open repairs all of pass 0 and 1 at once (every
	 * superblock rewritten, the journal replayed): each finding is
	 * asked about first, and one no keeps the whole run a check. */
	if (repair && !ask_findings(c, first_super)) {
		repair = false;
		for (size_t i = first_super; i < c->nf; i++)
			c->f[i].fixed = false;
		if (!c->json)
			printf("%s: a superblock or journal repair was "
			       "declined: checking only, nothing written\n",
			       c->uuid);
	}
	if (repair) {
		/* Only the pending-journal finding and the header slots
		 * now; the header slots are checked again, and repaired,
		 * after the open. */
		bool pend = false;
		size_t m = c->nf, last;

		for (size_t i = first_super; i < c->nf; i++)
			if (c->f[i].code == PR_1_JOURNAL_PENDING)
				pend = true;
		for (size_t i = m = first_super; i < c->nf; i++)
			if (c->f[i].code < PR_1_JHEAD_BAD ||
			    c->f[i].code > PR_1_JENTRY_COPY ||
			    is_jhead(&c->f[i])) {
				c->f[i].fixed = false;	/* confirmed below */
				c->f[m++] = c->f[i];
			}
		c->nf = m;
		if (pend) {
			struct dg_chk_event ev = { 0 };

			ev.kind = DG_CHK_JOURNAL_PENDING;
			ev.dev = -1;
			ev.page = ev.vpn = -1;
			ev.structure = "journal";
			ev.fixable = true;
			snprintf(ev.detail, sizeof(ev.detail),
				 "journal holds committed updates not yet "
				 "replayed");
			snprintf(ev.action, sizeof(ev.action),
				 "replayed the journal");
			ctx_add(c, &ev);
		}
		last = c->nf;

		ret = dg_vol_close(c->vol);
		c->vol = NULL;
		if (ret) {
			say_error(c, "the replayed journal could not be "
				  "retired: %s\n", strerror(-ret));
			return FSCK_ERROR;
		}
		ret = open_vol(c, c->oflags, err, sizeof(err));
		if (ret == -EIO) {
			/* The media failed, not fsck: the volume root, its
			 * bitmap or the journal is beyond what parity and
			 * their copies cover. An error left uncorrected (4),
			 * named as a finding, not an operational error (8). */
			unreadable_volume(c, err);
			fail(c, "cannot open for repair", err);
			return FSCK_UNCORRECTED;
		}
		if (ret)
			return fail(c, "cannot open for repair", err[0] ? err
						: strerror(-ret)) |
			       FSCK_UNCORRECTED;
		/* The open rewrote the superblocks and replayed the
		 * journal: confirm. */
		if (dg_check_supers(c->vol, false, NULL, NULL) == 0)
			for (size_t i = first_super; i < last; i++)
				if (c->f[i].code == PR_0_SUPER_BAD ||
				    c->f[i].code == PR_0_SUPER_DIFFERS ||
				    c->f[i].code == PR_1_JOURNAL_PENDING)
					c->f[i].fixed = true;
		pass_journal(c, true);
		confirm_jheads(c, first_super, last);
	} else {
		replay_in_memory(c);
	}

	for (;;) {
		size_t first = c->nf;

		c->passes++;
		/* Each repair of the page pass is asked about on its own
		 * (ask_engine()). */
		ret = pass_redundancy(c, repair);
		if (ret < 0)
			return fail(c, "page check failed", strerror(-ret)) |
			       report_exit_code(c);
		if (repair) {
			accept_suspects(c);
			reset_free_pages(c);
			give_up_pages(c);
		}
		ret = pass_fs(c);
		if (ret < 0)
			return fail(c, "filesystem check failed",
				    strerror(-ret)) | report_exit_code(c);
		if (!repair || !needs_restart(c, first))
			break;
		if (c->passes == FSCK_MAX_PASSES) {
			c->unconverged = true;
			break;
		}
		ret = restart(c, first, err, sizeof(err));
		if (ret)
			return fail(c, "cannot reopen to restart", err[0] ? err
				    : strerror(-ret)) | report_exit_code(c);
	}
	if (dg_check_meta_outside(c->vol, &outside) == 0)
		c->meta_outside = (int64_t)outside;
	else
		c->meta_outside = -1;
	annotate(c);
	return 0;
}

/* --replace N=PATH */
static void add_replace(struct fsck_ctx *c, const char *arg)
{
	char *end;
	unsigned long d;

	errno = 0;
	d = strtoul(arg, &end, 10);
	if (end == arg || *end != '=' || !end[1] || errno ||
	    d >= DG_MAX_DEVS)
		usage_error("--replace takes N=PATH with N a device number "
			    "from 0 to %u, not '%s'", DG_MAX_DEVS - 1, arg);
	if (c->replace[d])
		usage_error("--replace %lu is given twice", d);
	c->replace[d] = end + 1;
}

/*
 * With every device of the volume listed and a --replace path on top
 * ("--replace 2=new d0 d1 d2 d3": one more path than the volume has
 * devices), the listed device that carries the volume's superblock as
 * device 2 is the old device of that slot: it is set aside, so that the
 * line means what "--replace 2=new d0 d1 d3" does. A list that does not
 * overflow keeps every device it names (replacing a device that is
 * present and current stays refused, check_rebuild_targets()). Also
 * checks each --replace slot against the device count the superblocks
 * give. Only reads.
 */
static void drop_replaced_olds(struct fsck_ctx *c, const char **devs,
			       bool *dropped, unsigned n)
{
	struct dg_probe p;
	uint8_t uuid[16];
	unsigned count = 0, nlisted = 0, nrepl = 0;
	bool old_of[2 * DG_MAX_DEVS] = { false };
	char err[512];

	for (unsigned i = 0; i < n; i++) {
		unsigned slot;

		if (!devs[i][0] || replaced(c, devs[i], &slot) ||
		    dg_dev_probe(devs[i], &p, err, sizeof(err)) ||
		    p.kind != DG_PROBE_DAXGUARD || !p.sb_valid)
			continue;
		if (!count) {
			memcpy(uuid, p.uuid, sizeof(uuid));
			count = p.dev_count;
		} else if (memcmp(uuid, p.uuid, sizeof(uuid))) {
			continue;	/* another volume: run() says so */
		}
		if (p.dev_index < DG_MAX_DEVS && c->replace[p.dev_index])
			old_of[i] = true;
	}
	for (unsigned d = 0; count && d < DG_MAX_DEVS; d++)
		if (c->replace[d] && d >= count)
			usage_error("--replace: device %u is not a device of "
				    "this volume (0-%u)", d, count - 1);
	for (unsigned i = 0; i < n; i++) {
		unsigned slot;

		if (!replaced(c, devs[i], &slot))
			nlisted++;
	}
	for (unsigned d = 0; d < DG_MAX_DEVS; d++)
		nrepl += c->replace[d] != NULL;
	if (!count || nlisted + nrepl <= count)
		return;
	for (unsigned i = 0; i < n; i++)
		dropped[i] = old_of[i];
}

/*
 * The paths fsck works on: the devices given, less the old device of
 * each replaced slot, plus each --replace path not among them, with
 * every --replace path at the position of its slot (rebuild.c gives a
 * blank or foreign spare the slot of its position; "" pads the list up
 * to it, a missing device).
 */
static void set_paths(struct fsck_ctx *c, const char **devs, unsigned n)
{
	static const char *out[DG_MAX_DEVS];
	const char *rest[2 * DG_MAX_DEVS];
	bool dropped[2 * DG_MAX_DEVS] = { false };
	unsigned nrest = 0, total = 0, used = 0;

	drop_replaced_olds(c, devs, dropped, n);
	for (unsigned i = 0; i < n; i++) {
		unsigned slot;

		if (!dropped[i] && !replaced(c, devs[i], &slot))
			rest[nrest++] = devs[i];
	}
	total = nrest;
	for (unsigned d = 0; d < DG_MAX_DEVS; d++) {
		if (!c->replace[d])
			continue;
		total++;
		if (d + 1 > total)
			total = d + 1;
	}
	if (total > DG_MAX_DEVS)
		usage_error("at most %u devices", DG_MAX_DEVS);
	for (unsigned i = 0; i < total; i++) {
		if (c->replace[i])
			out[i] = c->replace[i];
		else if (used < nrest)
			out[i] = rest[used++];
		else
			out[i] = "";
	}
	c->paths = out;
	c->n = total;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "replace", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct fsck_ctx c = { .meta_outside = -1 };
	int opt, modes = 0, code;

	c.mode = MODE_N;
	tool_init("fsck.daxguard", usage_line, FSCK_USAGE);
	if (tool_argv_has(argc, argv, "--json", 'j'))
		tool_json_errors();
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "nypfvajhV", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'n':
			c.mode = MODE_N;
			modes++;
			break;
		case 'y':
			c.mode = MODE_Y;
			modes++;
			break;
		case 'p':
		case 'a':
			c.mode = MODE_P;
			modes++;
			break;
		case 'f':
			c.force = true;
			break;
		case 'v':
			c.verbose = true;
			break;
		case 'j':
			c.json = true;
			break;
		case 'R':
			add_replace(&c, optarg);
			break;
		case 'h':
			fputs(usage_line, stdout);
			fputs(help_text, stdout);
			return FSCK_OK;
		case 'V':
			printf("fsck.daxguard (daxguard) %s\n", DG_VERSION);
			return FSCK_OK;
		default:
			usage_bad_option(argv, optind, optopt);
		}
	}
	if (modes > 1)
		usage_error("only one of -n, -y and -p may be given");
	/* None of them: ask about each repair, as e2fsck does, when
	 * someone is there to answer; else check only. */
	if (!modes && !c.json && isatty(STDIN_FILENO))
		c.mode = MODE_ASK;
	if (c.mode != MODE_Y)
		for (unsigned d = 0; d < DG_MAX_DEVS; d++)
			if (c.replace[d])
				usage_error("--replace rebuilds a device: it "
					    "needs -y");
	{
		/* One argument may be a list (fsck(8) hands fstab's over). */
		unsigned n;
		const char **devs = devlist_args(argv + optind, argc - optind,
						 &n);

		for (unsigned i = 0; i < n; i++)
			if (devs[i][0])
				devs[i] = resolve_path(devs[i]);
		for (unsigned d = 0; d < DG_MAX_DEVS; d++)
			if (c.replace[d])
				c.replace[d] = resolve_path(c.replace[d]);
		set_paths(&c, devs, n);
	}
	warn_wide_modes(&c);
	c.tty = isatty(STDERR_FILENO);
	verbose_log = c.verbose;
	dg_log_set_func(log_func);

	code = run(&c);
	if (code & FSCK_ERROR) {
		if (c.json)
			report_print(&c, code);
		dg_vol_close(c.vol);
		free(c.f);
		free(c.answers);
		return code;
	}
	code |= report_exit_code(&c);
	report_print(&c, code);
	/* The last checkpoint and superblocks: a failure here means the
	 * repairs reported above may not be durable. */
	if (dg_vol_close(c.vol)) {
		say_error(&c, "closing the volume failed: the repairs above "
			  "may not be durable\n");
		code |= FSCK_ERROR;
	}
	free(c.f);
	free(c.answers);
	return code;
}
