// SPDX-License-Identifier: MIT
/* inject.c -- daxguard-inject: media faults written behind the engine,
 * and logical faults (--fault logical) written through it */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lfault.h"
#include "lfault_parity.h"
#include "devlist.h"
#include "json.h"
#include "util.h"
#include "version.h"

static const char usage_line[] =
	"usage: daxguard-inject DEV... --fault KIND --target WHAT [--file PATH] "
	"[--count N] [--seed S] [--sub-kind NAME] [--bits N] [--len BYTES] "
	"[--device N] [--same-row] [--json]\n";

static const char help_text[] =
	"Write faults straight into a daxguard volume's device images, behind\n"
	"daxguard's back, and report exactly which bytes changed. For testing.\n"
	"\n"
	"  -k, --fault KIND     bitflip scribble zero lost-write misdirect\n"
	"                       device-loss stale-device logical\n"
	"  -t, --target WHAT    data directory inode extent allocation checksum\n"
	"                       parity superblock journal xattr bitmap cmap\n"
	"                       free remap any (default any)\n"
	"  -F, --file PATH      damage this file of the volume (with data)\n"
	"  -c, --count N        faults to inject, 1 to 1000 (default 1)\n"
	"  -s, --seed S         seed of the random choices (default: the time)\n"
	"  -K, --sub-kind NAME  the logical fault's sub-kind (default: by --seed)\n"
	"  -b, --bits N         bits a bitflip flips (default 1)\n"
	"  -l, --len BYTES      bytes a scribble or zero covers\n"
	"  -d, --device N       only damage device N\n"
	"  -R, --same-row       later faults hit the first one's parity row\n"
	"  -j, --json           print the report as JSON\n"
	"  -h, --help           show this help and exit\n"
	"  -V, --version        show the version and exit\n"
	"\n"
	"logical (unmounted volume; checksums stay valid): WHAT is inode,\n"
	"directory, allocation, extent, xattr or parity (a row's parity\n"
	"wrong under a matching checksum); --seed picks the sub-kind (for\n"
	"parity the row) unless --sub-kind names it, --file the file.\n"
	"Sub-kinds: inode nlink+1 nlink-1 parent mode; directory orphan\n"
	"dangling type record, and by name only multi; allocation\n"
	"bitmap-missing bitmap-leak; extent extent-dup blocks, and by name\n"
	"only extent-bad and remap-bad (a file's remap page names another\n"
	"file); xattr xattr-garbage; parity parity-stale.\n"
	"DEV... as separate arguments or one list separated by ',' or ':'.\n"
	"bitmap: an allocation bitmap page; cmap: a copy of a checksum-page\n"
	"init map page (lost-write: both slots of one device miss the map's\n"
	"next update); free: a page of a vpn nothing uses that was never\n"
	"written (garbage there must stay invisible).\n"
	"Numbers take the suffixes K, M, G, T. Exit status: 0\n"
	"done, 1 failed, 2 bad usage.\n";

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rndn(uint64_t n)
{
	return n ? rnd() % n : 0;
}

enum kind { K_BITFLIP, K_SCRIBBLE, K_ZERO, K_LOST, K_MISDIRECT, K_DEVLOSS,
	    K_STALE, K_LOGICAL };
static const char *const kinds[] = { "bitflip", "scribble", "zero",
				     "lost-write", "misdirect",
				     "device-loss", "stale-device", "logical",
				     NULL };
/* T_XATTR and after come after T_JOURNAL: "any" picks among the
 * targets up to T_JOURNAL, so a seed hits what it hit before they were
 * targets. T_BITMAP: allocation bitmap pages only (T_ALLOC has the root
 * too); T_CMAP: an init map page copy; T_FREE: a never-written page of
 * a vpn nothing uses (issue 34: rows the allocation state calls empty);
 * T_REMAP: a file's remap page (format.h "Remap page"). */
enum target { T_DATA, T_DIR, T_INODE, T_EXTENT, T_ALLOC, T_CSUM, T_PARITY,
	      T_SUPER, T_JOURNAL, T_XATTR, T_BITMAP, T_CMAP, T_FREE, T_REMAP,
	      T_ANY };
static const char *const targets[] = { "data", "directory", "inode",
				       "extent", "allocation", "checksum",
				       "parity", "superblock", "journal",
				       "xattr", "bitmap", "cmap", "free",
				       "remap", "any", NULL };

static int lookup(const char *const *tab, const char *s)
{
	for (int i = 0; tab[i]; i++)
		if (!strcmp(tab[i], s))
			return i;
	return -1;
}

/* One device page chosen as a target. */
struct tgt {
	unsigned dev;
	uint64_t page;		/* device page */
	uint32_t lim;		/* bytes of the page that matter */
	int64_t vpn, row;
	uint64_t ino;
	const char *what;
};

/* One change made. */
struct change {
	unsigned dev;
	uint64_t off, len;
	uint64_t page;
	int64_t vpn, row;
	const char *what;
	char file[512];
	const char *how;
};

struct inj {
	const char **paths;
	unsigned n;
	struct dg_vol *vol;
	struct dg_vol_info info;
	bool mounted;
	struct dg_vpnmap *map;	/* class and owner of each vpn */
	uint64_t file_ino;
	struct dg_fs *fs;
	struct change ch[4096];
	unsigned nch;
	unsigned bits;
	uint64_t len;
	int device;
	bool same_row;		/* later faults hit the first one's row */
	bool lost;		/* a lost write: a free target is a data page
				 * (a write goes to it through the engine) */
	char *devpath[DG_MAX_DEVS];	/* malloc'd; NULL: device absent */
};

static int dev_fd(struct inj *s, unsigned dev, int flags)
{
	const char *p = s->devpath[dev];
	int fd;

	if (!p)
		die("device %u is not present", dev);
	fd = open(p, flags);
	if (fd < 0)
		die("cannot open '%s': %s", p, strerror(errno));
	return fd;
}

static void rd(struct inj *s, unsigned dev, uint64_t off, void *buf,
	       size_t len)
{
	int fd = dev_fd(s, dev, O_RDONLY);

	if (pread(fd, buf, len, (off_t)off) != (ssize_t)len)
		die("cannot read '%s': %s", s->devpath[dev], strerror(errno));
	close(fd);
}

static void wr(struct inj *s, unsigned dev, uint64_t off, const void *buf,
	       size_t len)
{
	int fd = dev_fd(s, dev, O_RDWR);

	if (pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
		die("cannot write '%s': %s", s->devpath[dev], strerror(errno));
	close(fd);
}

static bool page_written(struct inj *s, unsigned dev, uint64_t row)
{
	uint64_t cs;

	return dg_check_csum(s->vol, dev, row, &cs) == 0 &&
	       cs != DG_CSUM_NONE;
}

static bool page_zero(struct inj *s, unsigned dev, uint64_t page)
{
	static uint8_t buf[DG_PAGE_SIZE];

	rd(s, dev, page * DG_PAGE_SIZE, buf, sizeof(buf));
	for (unsigned i = 0; i < DG_PAGE_SIZE; i++)
		if (buf[i])
			return false;
	return true;
}

static bool taken(struct inj *s, unsigned dev, uint64_t page)
{
	for (unsigned i = 0; i < s->nch; i++)
		if (s->ch[i].dev == dev && s->ch[i].page == page)
			return true;
	return false;
}

static bool class_fits(enum target t, uint8_t c)
{
	switch (t) {
	case T_DATA:
		return c == DG_PC_FILE;
	case T_DIR:
		return c == DG_PC_DIR;
	case T_INODE:
		return c == DG_PC_ITABLE;
	case T_EXTENT:
		return c == DG_PC_EMAP;
	case T_XATTR:
		return c == DG_PC_XATTR;
	case T_ALLOC:
		return c == DG_PC_ROOT || c == DG_PC_BITMAP;
	case T_BITMAP:
		return c == DG_PC_BITMAP;
	case T_FREE:
		return c == DG_PC_FREE;
	case T_REMAP:
		return c == DG_PC_REMAP;
	default:
		return c != DG_PC_FREE;
	}
}

static bool vpn_fits(struct inj *s, enum target t, bool need_nonzero,
		     uint64_t v)
{
	struct dg_loc l;

	if (!class_fits(t, dg_vpnmap_cls(s->map, v)))
		return false;
	if (s->file_ino && dg_vpnmap_owner(s->map, v) != s->file_ino)
		return false;
	l = dg_vpn_loc(s->vol, v);
	/* A free target is a page never written: its checksum says so (or
	 * its rows' index was never initialised), whatever the media holds. */
	if (!s->devpath[l.dev] ||
	    page_written(s, l.dev, l.row) != (t != T_FREE) ||
	    taken(s, l.dev, dg_row_page(s->vol, l.row)))
		return false;
	if (s->device >= 0 && l.dev != (unsigned)s->device)
		return false;
	return !need_nonzero ||
	       !page_zero(s, l.dev, dg_row_page(s->vol, l.row));
}

/* A written vpn of class t (of --file for data), chosen at random with
 * every candidate equally likely: scanning on from a random start would
 * favour the first page after each gap (the first inode table page). */
static int pick_vpn(struct inj *s, enum target t, bool need_nonzero,
		    struct tgt *out)
{
	uint64_t nv = s->info.vpns, n = 0, v;
	uint64_t *cand = malloc(nv * sizeof(*cand));
	struct dg_loc l;

	if (!cand)
		die("out of memory");
	for (v = 0; v < nv; v++)
		if (vpn_fits(s, t, need_nonzero, v))
			cand[n++] = v;
	v = n ? cand[rndn(n)] : 0;
	free(cand);
	if (n == 0)
		return -ENOENT;
	l = dg_vpn_loc(s->vol, v);
	out->dev = l.dev;
	out->row = (int64_t)l.row;
	out->vpn = (int64_t)v;
	out->page = dg_row_page(s->vol, l.row);
	out->lim = DG_PAGE_SIZE;
	out->ino = dg_vpnmap_owner(s->map, v);
	out->what = t == T_ANY ? dg_pclass_name(dg_vpnmap_cls(s->map, v))
				 : targets[t];
	return 0;
}

static int pick1(struct inj *s, enum target t, bool need_nonzero,
		 struct tgt *o);

/* Another written page of the row of the first change (a column
 * fault: several devices, one row). */
static int pick_same_row(struct inj *s, struct tgt *o)
{
	uint64_t row = (uint64_t)s->ch[0].row;
	unsigned start = (unsigned)rndn(s->info.ndev);

	memset(o, 0, sizeof(*o));
	for (unsigned i = 0; i < s->info.ndev; i++) {
		unsigned d = (start + i) % s->info.ndev;
		bool used = false;

		for (unsigned j = 0; j < s->nch; j++)
			if (s->ch[j].dev == d)
				used = true;
		if (used || !s->devpath[d] || !page_written(s, d, row))
			continue;
		o->dev = d;
		o->row = (int64_t)row;
		o->page = dg_row_page(s->vol, row);
		o->lim = DG_PAGE_SIZE;
		if (dg_vol_row_is_parity(s->vol, row, d)) {
			o->vpn = -1;
			o->what = "parity";
		} else {
			o->vpn = (int64_t)dg_loc_vpn(s->vol, d, row);
			o->ino = dg_vpnmap_owner(s->map, (uint64_t)o->vpn);
			o->what = dg_pclass_name(
				dg_vpnmap_cls(s->map, (uint64_t)o->vpn));
		}
		return 0;
	}
	return -ENOENT;
}

static int pick(struct inj *s, enum target t, bool need_nonzero,
		struct tgt *o)
{
	if (s->same_row && s->nch && s->ch[0].row >= 0)
		return pick_same_row(s, o);
	if (t != T_ANY)
		return pick1(s, t, need_nonzero, o);
	for (int i = 0; i < 32; i++)
		if (!pick1(s, (enum target)rndn(T_JOURNAL + 1), need_nonzero,
			   o))
			return 0;
	return -ENOENT;
}

static int pick1(struct inj *s, enum target t, bool need_nonzero,
		 struct tgt *o)
{
	memset(o, 0, sizeof(*o));
	o->vpn = o->row = -1;
	switch (t) {
	case T_PARITY:
	case T_CSUM: {
		struct tgt d;

		for (int tries = 0; tries < 64; tries++) {
			uint32_t byte;
			uint64_t cp;
			unsigned j, cdev;

			if (pick_vpn(s, T_ANY, false, &d))
				return -ENOENT;
			if (t == T_PARITY) {
				if (!s->info.parity)
					return -ENOENT;
				j = (unsigned)rndn(s->info.parity);
				o->dev = dg_row_parity_dev(s->vol,
							   (uint64_t)d.row, j);
				o->row = d.row;
				o->page = d.page;
				o->what = "parity";
				if (!s->devpath[o->dev] ||
				    !page_written(s, o->dev, (uint64_t)o->row))
					continue;
			} else {
				/* any copy of the page holding the entry */
				dg_csum_loc(s->vol, d.dev, (uint64_t)d.row,
					    (unsigned)rndn(dg_vol_csum_copies(
						    s->vol)),
					    &cdev, &cp, &byte);
				o->row = d.row; /* the row whose entry it holds */
				o->what = "checksum";
				o->dev = cdev;
				o->page = cp;
				if (!s->devpath[o->dev])
					continue;
			}
			if (s->device >= 0 && o->dev != (unsigned)s->device)
				continue;
			if (taken(s, o->dev, o->page))
				continue;
			if (need_nonzero && page_zero(s, o->dev, o->page))
				continue;
			o->lim = DG_PAGE_SIZE;
			return 0;
		}
		return -ENOENT;
	}
	case T_SUPER:
		for (int tries = 0; tries < 64; tries++) {
			o->dev = s->device >= 0 ? (unsigned)s->device
						: (unsigned)rndn(s->info.ndev);
			o->page = dg_super_page(s->vol, (unsigned)rndn(2));
			if (s->devpath[o->dev] && !taken(s, o->dev, o->page))
				break;
		}
		o->lim = DG_PAGE_SIZE;
		o->what = "superblock";
		return s->devpath[o->dev] ? 0 : -ENOENT;
	case T_CMAP:
		if (!s->info.cmap_pages)
			return -ENOENT;
		for (int tries = 0; tries < 64; tries++) {
			unsigned slot = (unsigned)rndn(2);

			o->dev = s->device >= 0 ? (unsigned)s->device
						: (unsigned)rndn(s->info.ndev);
			o->page = s->info.cmap_start +
				  slot * s->info.cmap_pages +
				  rndn(s->info.cmap_pages);
			if (o->dev >= s->info.ndev || !s->devpath[o->dev] ||
			    taken(s, o->dev, o->page) ||
			    (need_nonzero && page_zero(s, o->dev, o->page)))
				continue;
			o->lim = DG_PAGE_SIZE;
			o->what = "cmap";
			return 0;
		}
		return -ENOENT;
	case T_FREE:
		if (pick_vpn(s, T_FREE, need_nonzero, o))
			return -ENOENT;
		/* Half the time the row's parity page instead, where it was
		 * never written either: garbage there must not leak into the
		 * parity of the row's first write. */
		if (s->info.parity && !s->lost && rndn(2)) {
			unsigned pd = dg_row_parity_dev(
				s->vol, (uint64_t)o->row,
				(unsigned)rndn(s->info.parity));

			if (s->devpath[pd] &&
			    !page_written(s, pd, (uint64_t)o->row) &&
			    !taken(s, pd, o->page) &&
			    (s->device < 0 || pd == (unsigned)s->device) &&
			    (!need_nonzero || !page_zero(s, pd, o->page))) {
				o->dev = pd;
				o->vpn = -1;
				o->ino = 0;
				o->what = "free-parity";
			}
		}
		return 0;
	case T_JOURNAL: {
		unsigned n = dg_jrnl_ncopies(s->vol);
		unsigned c0 = (unsigned)rndn(n);

		/* A header slot: the newest of a copy drawn at random (the
		 * live part of the journal), else, once earlier faults took
		 * it (--count), that copy's other slot, then the slots of
		 * the next copies: --count 2 x copies takes every one. */
		o->lim = sizeof(struct dg_djhead);
		o->what = "journal";
		for (unsigned i = 0; i < n; i++)
			for (unsigned pass = 0; pass < 2; pass++)
				for (unsigned sl = 0; sl < 2; sl++) {
					bool newest;

					dg_jhead_loc(s->vol, (c0 + i) % n, sl,
						     &o->dev, &o->page,
						     &newest);
					if (newest == (pass == 0) &&
					    s->devpath[o->dev] &&
					    !taken(s, o->dev, o->page))
						return 0;
				}
		return -ENOENT;
	}
	default:
		return pick_vpn(s, t, need_nonzero, o);
	}
}

static struct change *note(struct inj *s, const struct tgt *t, uint64_t off,
			   uint64_t len, const char *how)
{
	struct change *c;

	if (s->nch == sizeof(s->ch) / sizeof(s->ch[0]))
		die("too many changes");
	c = &s->ch[s->nch++];
	memset(c, 0, sizeof(*c));
	c->dev = t->dev;
	c->page = t->page;
	c->off = off;
	c->len = len;
	c->vpn = t->vpn;
	c->row = t->row;
	c->what = t->what;
	c->how = how;
	if (t->ino && s->fs)
		dg_fs_path(s->fs, t->ino, c->file, sizeof(c->file));
	return c;
}

static void do_bitflip(struct inj *s, const struct tgt *t)
{
	for (unsigned b = 0; b < s->bits; b++) {
		uint64_t bit = rndn((uint64_t)t->lim * 8), off;
		uint8_t byte;

		off = t->page * DG_PAGE_SIZE + bit / 8;
		rd(s, t->dev, off, &byte, 1);
		byte ^= (uint8_t)(1u << (bit % 8));
		wr(s, t->dev, off, &byte, 1);
		note(s, t, off, 1, "bitflip");
	}
}

static void do_scribble(struct inj *s, const struct tgt *t)
{
	uint64_t len = s->len ? s->len : 64, start, off;
	uint8_t *buf, *old;

	if (t->lim < DG_PAGE_SIZE && len > t->lim)
		len = t->lim;
	/* A scribble may run into the next page of the device. */
	start = rndn(t->lim);
	if (t->lim < DG_PAGE_SIZE && start + len > t->lim)
		start = t->lim - len;
	off = t->page * DG_PAGE_SIZE + start;
	if (off + len > s->info.dev_pages * DG_PAGE_SIZE)
		off = s->info.dev_pages * DG_PAGE_SIZE - len;
	buf = malloc(len);
	old = malloc(len);
	if (!buf || !old)
		die("out of memory");
	rd(s, t->dev, off, old, len);
	for (uint64_t i = 0; i < len; i++)
		buf[i] = (uint8_t)rnd();
	if (len && buf[0] == old[0])
		buf[0] ^= 0xa5;
	wr(s, t->dev, off, buf, len);
	note(s, t, off, len, "scribble");
	free(buf);
	free(old);
}

/* A poisoned page reads as zeros; with --len, a zeroed run of that many
 * bytes from the page on (it may cover the pages after it). */
static void do_zero(struct inj *s, const struct tgt *t)
{
	uint64_t off = t->page * DG_PAGE_SIZE;
	uint64_t len = s->len ? s->len : t->lim;
	uint8_t *z;

	if (off + len > s->info.dev_pages * DG_PAGE_SIZE)
		len = s->info.dev_pages * DG_PAGE_SIZE - off;
	z = calloc(1, len);
	if (!z)
		die("out of memory");
	wr(s, t->dev, off, z, len);
	note(s, t, off, len, "zero");
	free(z);
}

static void do_misdirect(struct inj *s, enum target what, const struct tgt *t)
{
	static uint8_t src[DG_PAGE_SIZE], cur[DG_PAGE_SIZE];
	struct tgt from;
	int tries;

	rd(s, t->dev, t->page * DG_PAGE_SIZE, cur, DG_PAGE_SIZE);
	for (tries = 0; tries < 200; tries++) {
		if (what == T_JOURNAL) {
			bool nw;

			/* The other header slot of the same copy. */
			from = *t;
			for (unsigned c = 0; c < dg_jrnl_ncopies(s->vol); c++)
				for (unsigned sl = 0; sl < 2; sl++) {
					unsigned d;
					uint64_t p;

					dg_jhead_loc(s->vol, c, sl, &d, &p, &nw);
					if (d == t->dev && p != t->page &&
					    (p == t->page + 1 ||
					     p + 1 == t->page))
						from.page = p;
				}
		} else if (what == T_CSUM) {
			from = *t;
			from.page = t->page + 1 + rndn(3);
			if (rndn(2) && t->page > 1)
				from.page = t->page - 1;
		} else {
			/* Same device: a write that landed on the wrong
			 * page of this device. */
			int keep = s->device, r;

			s->device = (int)t->dev;
			r = pick_vpn(s, T_ANY, true, &from);
			s->device = keep;
			if (r)
				break;
		}
		if (from.page == t->page)
			continue;
		rd(s, t->dev, from.page * DG_PAGE_SIZE, src, DG_PAGE_SIZE);
		if (memcmp(src, cur, t->lim))
			break;
	}
	if (tries == 200 || !memcmp(src, cur, t->lim))
		die("no page to misdirect from");
	wr(s, t->dev, t->page * DG_PAGE_SIZE, src, t->lim);
	note(s, t, t->page * DG_PAGE_SIZE, t->lim, "misdirect");
}

/* Writes through the engine that change a page and put it back; the
 * image of the target page between the two is the "earlier content". */
static void engine_bounce(struct inj *s, uint64_t vpn, const struct tgt *t,
			  uint8_t *snap)
{
	static uint8_t b0[DG_PAGE_SIZE], b1[DG_PAGE_SIZE];
	struct dg_range r = { vpn, 0, DG_PAGE_SIZE, NULL };
	int ret;

	ret = dg_read(s->vol, vpn, 1, b0);
	if (ret)
		die("cannot read vpn %llu: %s", (unsigned long long)vpn,
		    strerror(-ret));
	memcpy(b1, b0, sizeof(b1));
	for (unsigned i = 0; i < 8; i++)
		b1[rndn(DG_PAGE_SIZE)] ^= (uint8_t)(1 + rndn(255));
	r.data = b1;
	ret = dg_apply(s->vol, &r, 1);
	if (!ret && t)
		rd(s, t->dev, t->page * DG_PAGE_SIZE, snap, DG_PAGE_SIZE);
	r.data = b0;
	if (!ret)
		ret = dg_apply(s->vol, &r, 1);
	if (ret)
		die("cannot write through the engine: %s", strerror(-ret));
}

/* The path of each device of the open volume (NULL: absent), replacing
 * those of a volume opened before. */
static void set_devpaths(struct inj *s)
{
	for (unsigned d = 0; d < s->info.ndev; d++) {
		const char *p = dg_vol_dev_path(s->vol, d);

		free(s->devpath[d]);
		s->devpath[d] = p ? strdup(p) : NULL;
	}
}

static void reopen(struct inj *s, unsigned flags)
{
	char err[512];
	int ret;

	dg_fs_close(s->fs);
	s->fs = NULL;
	dg_vol_close(s->vol);
	s->vol = NULL;
	ret = dg_vol_open(s->paths, s->n, flags, &s->vol, err, sizeof(err));
	if (ret)
		die("cannot open the volume: %s", err);
	set_devpaths(s);
	if (s->vol && dg_fs_open(s->vol, &s->fs))
		s->fs = NULL;
}

/*
 * The init map's next update lost on both slots of t->dev: both copies
 * of the map page as they stand, then a write through the engine to a
 * vpn nothing uses in rows whose index was never initialised (that sets
 * a bit of this map page and rewrites it on every device), then both
 * copies on t->dev put back: a device whose map is behind the others'.
 */
static void lost_map_write(struct inj *s, struct tgt *t)
{
	static uint8_t old[2][DG_PAGE_SIZE];
	uint64_t p = (t->page - s->info.cmap_start) % s->info.cmap_pages;
	uint64_t nv = s->info.vpns, start = rndn(nv), v = nv, pg[2];

	for (unsigned sl = 0; sl < 2; sl++) {
		pg[sl] = s->info.cmap_start + sl * s->info.cmap_pages + p;
		rd(s, t->dev, pg[sl] * DG_PAGE_SIZE, old[sl], DG_PAGE_SIZE);
	}
	for (uint64_t i = 0; i < nv; i++) {
		uint64_t c = (start + i) % nv;
		struct dg_loc l = dg_vpn_loc(s->vol, c);

		if (dg_vpnmap_cls(s->map, c) != DG_PC_FREE ||
		    l.row / DG_CSUMS_PER_PAGE / DG_CMAP_BITS != p ||
		    dg_vol_next_used_row(s->vol, l.row, l.row + 1) == l.row)
			continue;
		v = c;
		break;
	}
	if (v == nv)
		die("every checksum index of init map page %llu is set: no "
		    "map write to lose", (unsigned long long)p);
	reopen(s, 0);
	engine_bounce(s, v, NULL, NULL);
	reopen(s, DG_OPEN_RDONLY);
	for (unsigned sl = 0; sl < 2; sl++) {
		t->page = pg[sl];
		wr(s, t->dev, pg[sl] * DG_PAGE_SIZE, old[sl], DG_PAGE_SIZE);
		note(s, t, pg[sl] * DG_PAGE_SIZE, DG_PAGE_SIZE, "lost-write");
	}
}

static void do_lost_write(struct inj *s, enum target what, struct tgt *t)
{
	static uint8_t snap[DG_PAGE_SIZE];
	uint64_t vpn;

	if (s->mounted)
		die("lost-write needs an unmounted volume (it writes through "
		    "the engine)");
	if (what == T_SUPER) {
		/* The backup copy goes back one generation. */
		t->page = dg_super_page(s->vol, 1);
		rd(s, t->dev, t->page * DG_PAGE_SIZE, snap, DG_PAGE_SIZE);
		reopen(s, 0);
		reopen(s, DG_OPEN_RDONLY);
		wr(s, t->dev, t->page * DG_PAGE_SIZE, snap, DG_PAGE_SIZE);
		note(s, t, t->page * DG_PAGE_SIZE, DG_PAGE_SIZE,
		     "lost-write");
		return;
	}
	if (what == T_JOURNAL) {
		rd(s, t->dev, t->page * DG_PAGE_SIZE, snap, DG_PAGE_SIZE);
		reopen(s, 0);
		engine_bounce(s, 0, NULL, NULL);
		dg_vol_sync(s->vol);
		engine_bounce(s, 0, NULL, NULL);
		dg_vol_sync(s->vol);
		reopen(s, DG_OPEN_RDONLY);
		wr(s, t->dev, t->page * DG_PAGE_SIZE, snap, t->lim);
		note(s, t, t->page * DG_PAGE_SIZE, t->lim, "lost-write");
		return;
	}
	if (what == T_CMAP) {
		lost_map_write(s, t);
		return;
	}
	/* The vpn whose write changes the target page. */
	if (t->vpn >= 0)
		vpn = (uint64_t)t->vpn;
	else if (what == T_PARITY)
		vpn = dg_loc_vpn(s->vol, dg_row_parity_dev(s->vol,
				 (uint64_t)t->row, 0) == 0 && s->info.ndev > 1
				 ? 1 : 0, (uint64_t)t->row);
	else
		vpn = 0;
	if (what == T_PARITY) {
		/* any data page of the row */
		for (unsigned d = 0; d < s->info.ndev; d++)
			if (!dg_vol_row_is_parity(s->vol, (uint64_t)t->row, d)) {
				vpn = dg_loc_vpn(s->vol, d, (uint64_t)t->row);
				break;
			}
	} else if (what == T_CSUM) {
		/* the row's page on the checksum page's owner: the device
		 * whose copy c of that page is the target */
		unsigned owner = t->dev, cdev;
		uint64_t cp;
		uint32_t byte;

		for (unsigned c = 0; c < dg_vol_csum_copies(s->vol); c++) {
			unsigned o = (t->dev + s->info.ndev - c % s->info.ndev) %
				     s->info.ndev;

			dg_csum_loc(s->vol, o, (uint64_t)t->row, c, &cdev, &cp,
				    &byte);
			if (cdev == t->dev && cp == (uint64_t)t->page) {
				owner = o;
				break;
			}
		}
		if (dg_vol_row_is_parity(s->vol, (uint64_t)t->row, owner))
			die("no data page behind this checksum page");
		vpn = dg_loc_vpn(s->vol, owner, (uint64_t)t->row);
	}
	reopen(s, 0);
	engine_bounce(s, vpn, t, snap);
	reopen(s, DG_OPEN_RDONLY);
	wr(s, t->dev, t->page * DG_PAGE_SIZE, snap, DG_PAGE_SIZE);
	note(s, t, t->page * DG_PAGE_SIZE, DG_PAGE_SIZE, "lost-write");
}

static unsigned pick_dev(struct inj *s)
{
	if (s->device >= 0) {
		if ((unsigned)s->device >= s->info.ndev)
			die("no device %d", s->device);
		return (unsigned)s->device;
	}
	return (unsigned)rndn(s->info.ndev);
}

static void do_device_loss(struct inj *s)
{
	unsigned d = pick_dev(s), how = (unsigned)rndn(3);
	const char *p = s->devpath[d];
	struct tgt t = { .dev = d, .vpn = -1, .row = -1, .what = "device" };
	struct stat st;

	if (!p || stat(p, &st) < 0)
		die("device %u is not present", d);
	dg_fs_close(s->fs);
	s->fs = NULL;
	dg_vol_close(s->vol);
	s->vol = NULL;
	if (how == 0) {
		if (unlink(p) < 0)
			die("cannot remove '%s': %s", p, strerror(errno));
		note(s, &t, 0, (uint64_t)st.st_size, "removed");
	} else if (how == 1) {
		if (truncate(p, st.st_size / 2) < 0)
			die("cannot truncate '%s': %s", p, strerror(errno));
		note(s, &t, (uint64_t)st.st_size / 2,
		     (uint64_t)st.st_size - (uint64_t)st.st_size / 2,
		     "truncated");
	} else {
		if (truncate(p, 0) < 0 || truncate(p, st.st_size) < 0)
			die("cannot zero '%s': %s", p, strerror(errno));
		note(s, &t, 0, (uint64_t)st.st_size, "zeroed");
	}
}

static void do_stale(struct inj *s)
{
	unsigned d = pick_dev(s);
	struct tgt t = { .dev = d, .vpn = -1, .row = -1, .what = "device" };
	char tmp[4200], cmd[9000];
	const char *p = s->devpath[d];
	char path[4096];
	struct tgt v;

	if (s->mounted)
		die("stale-device needs an unmounted volume");
	if (!p)
		die("device %u is not present", d);
	snprintf(path, sizeof(path), "%s", p);
	snprintf(tmp, sizeof(tmp), "%s.stale-XXXXXX", path);
	{
		int fd = mkstemp(tmp);

		if (fd < 0)
			die("cannot create a temporary copy: %s",
			    strerror(errno));
		close(fd);
	}
	snprintf(cmd, sizeof(cmd), "cp --sparse=always '%s' '%s'", path, tmp);
	if (system(cmd) != 0)
		die("cannot copy '%s'", path);
	/* Move the volume on: pages of this device change and change back
	 * through the engine, the generation moves past the copy. */
	reopen(s, 0);
	if (!s->map && dg_check_classify(s->vol, &s->map))
		die("cannot read the volume's structures");
	for (unsigned i = 0; i < 8; i++) {
		s->device = (int)d;
		if (pick_vpn(s, T_ANY, false, &v) == 0)
			engine_bounce(s, (uint64_t)v.vpn, NULL, NULL);
	}
	/* The filesystem first: it refers to the volume (the next
	 * reopen() would close it on a volume already freed). */
	dg_fs_close(s->fs);
	s->fs = NULL;
	dg_vol_close(s->vol);
	s->vol = NULL;
	if (rename(tmp, path) < 0)
		die("cannot put the stale copy back: %s", strerror(errno));
	reopen(s, DG_OPEN_RDONLY | DG_OPEN_DEGRADED);
	free(s->devpath[d]);
	s->devpath[d] = strdup(path);
	note(s, &t, 0, s->info.dev_pages * DG_PAGE_SIZE, "stale copy");
}

static void print_json(struct inj *s, const char *kind, const char *target,
		       uint64_t seed)
{
	struct json_object *r = json_object_new_object();
	struct json_object *list = json_object_new_array();

	json_object_object_add(r, "fault", json_object_new_string(kind));
	json_object_object_add(r, "target", json_object_new_string(target));
	json_object_object_add(r, "seed", json_object_new_uint64(seed));
	json_object_object_add(r, "mounted",
			       json_object_new_boolean(s->mounted));
	for (unsigned i = 0; i < s->nch; i++) {
		struct change *c = &s->ch[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "device", json_object_new_int(
			(int)c->dev));
		json_add_bytes(o, "device_path", s->paths[0] &&
			       s->devpath[c->dev] ? s->devpath[c->dev] : "");
		json_object_object_add(o, "page", json_object_new_uint64(
			c->page));
		json_object_object_add(o, "offset", json_object_new_uint64(
			c->off));
		json_object_object_add(o, "len", json_object_new_uint64(c->len));
		json_object_object_add(o, "structure",
				       json_object_new_string(c->what));
		json_object_object_add(o, "how", json_object_new_string(c->how));
		json_object_object_add(o, "vpn", json_object_new_int64(c->vpn));
		json_object_object_add(o, "row", json_object_new_int64(c->row));
		json_add_bytes(o, "file", c->file[0] ? c->file : NULL);
		json_object_array_add(list, o);
	}
	json_object_object_add(r, "changes", list);
	json_print(r, stdout, 1);
}

static uint64_t resolve_file(struct inj *s, const char *path)
{
	char buf[4096], *save = NULL, *part;
	uint64_t ino = DG_ROOT_INO;
	struct dg_attr a;

	if (!s->fs)
		die("cannot read the filesystem to find '%s'", path);
	snprintf(buf, sizeof(buf), "%s", path);
	for (part = strtok_r(buf, "/", &save); part;
	     part = strtok_r(NULL, "/", &save)) {
		int ret = dg_fs_lookup(s->fs, ino, part, &a);

		if (ret)
			die("cannot find '%s' on the volume: %s", path,
			    strerror(-ret));
		ino = a.ino;
	}
	return ino;
}

/* Logical faults are written through the engine: the volume opened for
 * writing, which it refuses while mounted. */
static void open_writable(struct inj *s)
{
	char err[512] = "";
	int ret = dg_vol_open(s->paths, s->n, 0, &s->vol, err, sizeof(err));

	if (ret == -EBUSY)
		die("the volume is mounted or in use: logical faults are "
		    "written through the engine and need it unmounted (%s)",
		    err);
	if (ret)
		die("cannot open the volume for writing: %s", err);
	dg_vol_get_info(s->vol, &s->info);
}

/* After a logical fault's write (ret its result): the volume closed,
 * or the tool dies saying which failed. */
static void close_written(struct inj *s, int ret)
{
	if (ret)
		die("cannot write through the engine: %s", strerror(-ret));
	ret = dg_vol_close(s->vol);
	s->vol = NULL;
	if (ret)
		die("cannot close the volume: %s", strerror(-ret));
}

/* The fields every logical fault's JSON report starts with. */
static struct json_object *logical_json(const char *tname, uint64_t seed,
					const char *kind)
{
	struct json_object *r = json_object_new_object();

	json_object_object_add(r, "fault", json_object_new_string("logical"));
	json_object_object_add(r, "target", json_object_new_string(tname));
	json_object_object_add(r, "seed", json_object_new_uint64(seed));
	json_object_object_add(r, "mounted", json_object_new_boolean(0));
	json_object_object_add(r, "kind", json_object_new_string(kind));
	return r;
}

/* Parity that verifies and disagrees with its data (lfault_parity.h). */
static int do_logical_parity(struct inj *s, uint64_t seed, const char *sub,
			     bool json)
{
	struct dg_parity_lfault pf;
	struct json_object *r, *list, *o;
	int ret;

	if (sub && strcmp(sub, "parity-stale"))
		usage_error("unknown --sub-kind '%s' for --target parity: "
			    "parity-stale", sub);
	open_writable(s);
	ret = dg_check_parity_lfault(s->vol, seed, &pf);
	if (ret == -EINVAL)
		die("the volume has no parity");
	if (ret == -ENXIO)
		die("a device of the volume is missing: a logical parity "
		    "fault needs them all");
	if (ret == -ENOENT)
		die("no row of file data on this volume whose pages all "
		    "verify: nothing fitting a logical parity fault");
	close_written(s, ret);
	if (!json) {
		printf("logical parity-stale: device %u page %" PRIu64
		       " (parity of row %" PRIu64 "): bit %u flipped, its "
		       "checksum set to match\n", pf.dev, pf.page, pf.row,
		       pf.bit);
		return 0;
	}
	r = logical_json("parity", seed, "parity-stale");
	list = json_object_new_array();
	o = json_object_new_object();
	json_object_object_add(o, "device", json_object_new_int((int)pf.dev));
	json_object_object_add(o, "page", json_object_new_uint64(pf.page));
	json_object_object_add(o, "offset", json_object_new_uint64(pf.bit / 8));
	json_object_object_add(o, "len", json_object_new_uint64(1));
	json_object_object_add(o, "structure", json_object_new_string("parity"));
	json_object_object_add(o, "how", json_object_new_string("logical"));
	json_object_object_add(o, "vpn", json_object_new_int64(-1));
	json_object_object_add(o, "row", json_object_new_int64((int64_t)pf.row));
	json_object_array_add(list, o);
	json_object_object_add(r, "changes", list);
	json_print(r, stdout, 1);
	return 0;
}

/*
 * A logical fault: structures that are consistent with their checksums
 * and parity but wrong, as a bug in daxguard would leave them. The
 * engine plans the bytes (dg_check_lfault: all layout knowledge stays
 * there); they are written here through its one update path, so
 * checksums and parity stay valid.
 */
/* sub (NULL: none) names a sub-kind of target lt, or the tool stops
 * with a usage error that lists them. */
static void check_sub_kind(enum dg_lf_target lt, const char *tname,
			   const char *sub)
{
	char names[256] = "";
	const char *k;
	size_t n = 0;

	if (!sub)
		return;
	for (unsigned i = 0; (k = dg_lfault_kind(lt, i)); i++) {
		if (!strcmp(k, sub))
			return;
		n += (size_t)snprintf(names + n, n < sizeof(names)
						 ? sizeof(names) - n : 0,
				      "%s%s", i ? " " : "", k);
	}
	usage_error("unknown --sub-kind '%s' for --target %s: %s", sub, tname,
		    names);
}

static int do_logical(struct inj *s, enum target t, const char *tname,
		      const char *file, uint64_t seed, const char *sub,
		      bool json)
{
	static const struct { enum target t; enum dg_lf_target lt; } map[] = {
		{ T_INODE, DG_LF_INODE }, { T_DIR, DG_LF_DIRECTORY },
		{ T_ALLOC, DG_LF_ALLOCATION }, { T_EXTENT, DG_LF_EXTENT },
		{ T_XATTR, DG_LF_XATTR },
	};
	char path[512] = "", other[512] = "", dir[512] = "";
	char entry[1024] = "";
	struct json_object *r, *list;
	struct dg_lfault lf;
	struct dg_txn *txn;
	uint64_t ino = 0;
	int lt = -1, ret;

	for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].t == t)
			lt = (int)map[i].lt;
	if (t == T_PARITY)
		return do_logical_parity(s, seed, sub, json);
	if (lt < 0)
		usage_error("--fault logical needs --target inode, directory, "
			    "allocation, extent, xattr or parity");
	check_sub_kind((enum dg_lf_target)lt, tname, sub);
	open_writable(s);
	if (dg_fs_open(s->vol, &s->fs))
		die("cannot read the filesystem on the volume");
	if (file)
		ino = resolve_file(s, file);
	ret = dg_check_lfault(s->vol, (enum dg_lf_target)lt, ino, seed, sub,
			      &lf);
	if (ret == -EUCLEAN)
		die("the filesystem has problems already: run fsck.daxguard "
		    "first");
	if (ret == -EINVAL)
		die("--file does not go with this logical fault");
	if (ret)
		die("no %s structure fitting a logical fault on this volume%s: "
		    "%s", tname, file ? " for that file" : "", strerror(-ret));
	/* Names now: an orphan has none afterwards. */
	if (lf.ino)
		dg_fs_path(s->fs, lf.ino, path, sizeof(path));
	if (lf.other && !lf.dir)
		dg_fs_path(s->fs, lf.other, other, sizeof(other));
	if (lf.dir) {
		dg_fs_path(s->fs, lf.dir, dir, sizeof(dir));
		snprintf(entry, sizeof(entry), "%s/%s",
			 strcmp(dir, "/") ? dir : "", lf.name);
	}
	dg_fs_close(s->fs);
	s->fs = NULL;

	txn = dg_txn_new(s->vol);
	if (!txn)
		die("out of memory");
	for (unsigned i = 0; i < lf.nw && !ret; i++)
		ret = dg_txn_write(txn, lf.w[i].vpn, lf.w[i].off, lf.w[i].data,
				   lf.w[i].len);
	if (!ret)
		ret = dg_txn_commit(txn);
	dg_txn_free(txn);
	close_written(s, ret);

	if (!json) {
		printf("logical %s: %s%s%s\n", lf.kind, lf.detail,
		       path[0] || entry[0] ? " " : "",
		       entry[0] ? entry : path);
		return 0;
	}
	r = logical_json(tname, seed, lf.kind);
	json_object_object_add(r, "ino", json_object_new_uint64(lf.ino));
	json_add_bytes(r, "file", path[0] ? path : NULL);
	json_object_object_add(r, "other", json_object_new_uint64(lf.other));
	json_add_bytes(r, "other_file", other[0] ? other : NULL);
	json_object_object_add(r, "dir", json_object_new_uint64(lf.dir));
	json_add_bytes(r, "dir_path", dir[0] ? dir : NULL);
	json_add_bytes(r, "entry", entry[0] ? entry : NULL);
	json_object_object_add(r, "vpn", json_object_new_int64(lf.vpn));
	json_object_object_add(r, "fpage", json_object_new_uint64(lf.fpage));
	json_object_object_add(r, "pages", json_object_new_uint64(lf.pages));
	json_object_object_add(r, "before", json_object_new_uint64(lf.before));
	json_object_object_add(r, "after", json_object_new_uint64(lf.after));
	json_add_bytes(r, "detail", lf.detail);
	list = json_object_new_array();
	for (unsigned i = 0; i < lf.nw; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "vpn", json_object_new_uint64(
			lf.w[i].vpn));
		json_object_object_add(o, "offset", json_object_new_uint64(
			lf.w[i].off));
		json_object_object_add(o, "len", json_object_new_uint64(
			lf.w[i].len));
		json_object_object_add(o, "structure", json_object_new_string(
			lf.w[i].structure));
		json_object_object_add(o, "how",
				       json_object_new_string("logical"));
		json_object_array_add(list, o);
	}
	json_object_object_add(r, "changes", list);
	json_print(r, stdout, 1);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "fault", required_argument, NULL, 'k' },
		{ "target", required_argument, NULL, 't' },
		{ "file", required_argument, NULL, 'F' },
		{ "count", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 's' },
		{ "sub-kind", required_argument, NULL, 'K' },
		{ "bits", required_argument, NULL, 'b' },
		{ "len", required_argument, NULL, 'l' },
		{ "device", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "same-row", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct inj s;
	const char *file = NULL, *kname = NULL, *tname = "any", *sub = NULL;
	uint64_t seed = (uint64_t)time(NULL), count = 1, v;
	bool json = false;
	int opt, kind, target, ret;
	char err[512];

	s.bits = 1;
	s.device = -1;
	tool_init("daxguard-inject", usage_line, 2);
	if (tool_argv_has(argc, argv, "--json", 'j'))
		tool_json_errors();
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "k:t:F:c:s:K:b:l:d:jRhV",
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			kname = optarg;
			break;
		case 't':
			tname = optarg;
			break;
		case 'F':
			file = optarg;
			break;
		case 'c':
			if (parse_size(optarg, &count) || !count ||
			    count > 1000)
				usage_error("bad --count '%s'", optarg);
			break;
		case 's':
			if (parse_size(optarg, &seed))
				usage_error("bad --seed '%s'", optarg);
			break;
		case 'K':
			sub = optarg;
			break;
		case 'b':
			if (parse_size(optarg, &v) || !v || v > 4096 * 8)
				usage_error("bad --bits '%s'", optarg);
			s.bits = (unsigned)v;
			break;
		case 'l':
			if (parse_size(optarg, &s.len) || !s.len ||
			    s.len > (1u << 20))
				usage_error("bad --len '%s'", optarg);
			break;
		case 'd':
			if (parse_size(optarg, &v) || v >= DG_MAX_DEVS)
				usage_error("bad --device '%s'", optarg);
			s.device = (int)v;
			break;
		case 'j':
			json = true;
			break;
		case 'R':
			s.same_row = true;
			break;
		case 'h':
			fputs(usage_line, stdout);
			fputs(help_text, stdout);
			return 0;
		case 'V':
			printf("daxguard-inject (daxguard) %s\n", DG_VERSION);
			return 0;
		default:
			usage_bad_option(argv, optind, optopt);
		}
	}
	if (!kname)
		usage_error("--fault is required");
	kind = lookup(kinds, kname);
	if (kind < 0)
		usage_error("unknown fault kind '%s'", kname);
	target = lookup(targets, tname);
	if (target < 0)
		usage_error("unknown target '%s'", tname);
	s.paths = devlist_args(argv + optind, argc - optind, &s.n);
	if (file && target != T_DATA && target != T_ANY && kind != K_LOGICAL)
		usage_error("--file goes with --target data");
	if (sub && kind != K_LOGICAL)
		usage_error("--sub-kind goes with --fault logical");
	rng_state = seed;
	s.lost = kind == K_LOST;
	dg_log_set_level(DG_LOG_ERR);
	if (kind == K_LOGICAL)
		return do_logical(&s, (enum target)target, tname, file, seed,
				  sub, json);

	ret = dg_vol_open(s.paths, s.n, DG_OPEN_RDONLY, &s.vol, err,
			  sizeof(err));
	if (ret == -EBUSY) {
		s.mounted = true;
		ret = dg_vol_open(s.paths, s.n, DG_OPEN_NOLOCK, &s.vol, err,
				  sizeof(err));
	}
	if (ret)
		die("cannot open the volume: %s", err);
	dg_vol_get_info(s.vol, &s.info);
	set_devpaths(&s);

	if (kind == K_DEVLOSS || kind == K_STALE) {
		for (uint64_t i = 0; i < count && i < s.info.ndev; i++) {
			if (kind == K_DEVLOSS)
				do_device_loss(&s);
			else
				do_stale(&s);
			if (s.device >= 0)
				break;
		}
		goto done;
	}
	if (dg_check_classify(s.vol, &s.map))
		die("cannot read the volume's structures");
	if (dg_fs_open(s.vol, &s.fs))
		s.fs = NULL;
	if (file) {
		s.file_ino = resolve_file(&s, file);
		target = T_DATA;
	}
	for (uint64_t i = 0; i < count; i++) {
		struct tgt t;
		/* A never-written page is zeros: misdirecting onto it is a
		 * fault, zeroing it only where garbage is there already. */
		bool nonzero = kind == K_ZERO ||
			       (kind == K_MISDIRECT && target != T_FREE);

		if (pick(&s, (enum target)target, nonzero, &t))
			die("no %s page to damage on this volume%s", tname,
			    file ? " in that file" : "");
		switch (kind) {
		case K_BITFLIP:
			do_bitflip(&s, &t);
			break;
		case K_SCRIBBLE:
			do_scribble(&s, &t);
			break;
		case K_ZERO:
			do_zero(&s, &t);
			break;
		case K_MISDIRECT:
			do_misdirect(&s, target == T_ANY ? T_DATA
				     : (enum target)target, &t);
			break;
		case K_LOST:
			do_lost_write(&s, (enum target)target, &t);
			break;
		}
	}
done:
	if (json)
		print_json(&s, kname, tname, seed);
	else
		for (unsigned i = 0; i < s.nch; i++)
			printf("%s device %u page %llu bytes %llu+%llu (%s%s%s)\n",
			       s.ch[i].how, s.ch[i].dev,
			       (unsigned long long)s.ch[i].page,
			       (unsigned long long)s.ch[i].off,
			       (unsigned long long)s.ch[i].len, s.ch[i].what,
			       s.ch[i].file[0] ? " " : "", s.ch[i].file);
	dg_fs_close(s.fs);
	dg_vol_close(s.vol);
	for (unsigned d = 0; d < DG_MAX_DEVS; d++)
		free(s.devpath[d]);
	dg_vpnmap_free(s.map);
	return 0;
}
