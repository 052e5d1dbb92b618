// SPDX-License-Identifier: MIT
/* mkseeds.c -- cut the fuzz seed corpus (tests/fuzz/corpus/<harness>/) out
 * of a real volume: formatted with the fuzz uuid, filled through the
 * engine's filesystem calls (the ones the daemon serves), every page
 * read back from the media or through the read path. Run by
 * scripts/fuzz.sh --seeds; its output is committed.
 * Usage: mkseeds CORPUS-DIR */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csum.h"
#include "fuzz_vol.h"
#include "proto.h"

static const char *out_dir;
static char paths[DG_FUZZ_NDEV][64];

static void save(const char *harness, const char *name, const void *a,
		 size_t na, const void *b, size_t nb)
{
	char p[4096];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", out_dir, harness);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%s/%s", out_dir, harness, name);
	f = fopen(p, "wb");
	if (!f || fwrite(a, 1, na, f) != na ||
	    (nb && fwrite(b, 1, nb, f) != nb) || fclose(f)) {
		fprintf(stderr, "mkseeds: cannot write '%s'\n", p);
		exit(1);
	}
}

static void media(unsigned dev, uint64_t page, void *buf, size_t len)
{
	int fd = open(paths[dev], O_RDONLY);

	if (fd < 0 || pread(fd, buf, len, (off_t)(page << DG_PAGE_SHIFT)) !=
			      (ssize_t)len) {
		fprintf(stderr, "mkseeds: cannot read '%s'\n", paths[dev]);
		exit(1);
	}
	close(fd);
}

static void must(int ret, const char *what)
{
	if (ret < 0) {
		fprintf(stderr, "mkseeds: %s: %s\n", what, strerror(-ret));
		exit(1);
	}
}

static void journal(struct dg_vol *vol)
{
	const struct dg_journal *j = &vol->jrnl;
	uint8_t *area = malloc(j->log_off + j->log_bytes);
	unsigned saved = 0, kinds = 0;

	media(j->dev[0], j->start[0], area, j->log_off + j->log_bytes);
	for (unsigned s = 0; s < 2; s++) {
		struct dg_djhead h;
		char name[32];

		if (dg_jhead_decode(vol, area + s * DG_PAGE_SIZE, j->log_bytes,
				    &h))
			continue;
		snprintf(name, sizeof(name), "slot%u", s);
		save("jhead", name, &h, sizeof(h), NULL, 0);
	}
	/* Committed entries of different shapes: by range count and
	 * sealing, so the corpus has both kinds of range. */
	for (uint64_t off = 0; off + sizeof(struct dg_djentry) <= j->log_bytes
	     && saved < 8; off += DG_JALIGN) {
		const struct dg_djentry *e = (const void *)(area + j->log_off +
							     off);
		const struct dg_djrange *r = (const void *)(e + 1);
		unsigned kind;
		char name[32];

		if (dg_jentry_decode(vol, e, j->log_bytes - off) ||
		    e->len > (16u << 10))
			continue;
		kind = (e->nranges > 4 ? 4 : e->nranges) * 2 +
		       (e->nranges && (r[0].flags & DG_JRANGE_SEALED));
		if (kinds & (1u << kind))
			continue;
		kinds |= 1u << kind;
		snprintf(name, sizeof(name), "entry%u", saved++);
		save("jentry", name, e, e->len, NULL, 0);
	}
	free(area);
	if (!saved)
		must(-ENOENT, "no committed journal entry to cut");
}

/* fz_fsopen: each metadata page it targets, as it is (fz_fsopen.c's
 * order: inode table pages of the root and of the fragmented file, the
 * root directory, the large directory's second page, the first extent
 * page, the xattr page, the volume root). */
static void fsopen(struct dg_vol *vol, const uint64_t ino[4])
{
	static uint8_t pg[DG_PAGE_SIZE];
	struct dg_dinode d;
	uint64_t vpn[7];
	char name[32];

	must(dg_fuzz_dinode(vol, ino[0], &d, &vpn[0]), "read an inode");
	vpn[2] = d.inl[0].vpn;
	must(dg_fuzz_dinode(vol, ino[1], &d, NULL), "read an inode");
	vpn[3] = d.inl[0].vpn + (d.inl[0].len > 1);
	must(dg_fuzz_dinode(vol, ino[2], &d, &vpn[1]), "read an inode");
	vpn[4] = d.emap_vpn;
	must(dg_fuzz_dinode(vol, ino[3], &d, NULL), "read an inode");
	vpn[5] = d.xattr_vpn;
	vpn[6] = 0;
	for (uint8_t t = 0; t < 7; t++) {
		must(dg_read(vol, vpn[t], 1, pg), "read a metadata page");
		snprintf(name, sizeof(name), "target%u", t);
		save("fsopen", name, &t, 1, pg, sizeof(pg));
	}
}

static void proto(void)
{
	uint8_t b[1024];
	struct commit_hdr h;
	struct commit_map_req mq = { 0, 8 * COMMIT_PAGE_SIZE, COMMIT_REQ_RW, 0 };
	struct commit_verify_req vq = { 4096, 8192 };
	struct commit_commit_req cq = { 2, 0 };
	struct commit_run r[2] = { { 4096, 64, 0 }, { 8192 + 128, 128, 0 } };
	struct commit_status_rep st = { 0, 0, 0 };

	commit_hdr_encode(&h, COMMIT_MSG_MAP, sizeof(mq), 1);
	save("proto", "map", &h, sizeof(h), &mq, sizeof(mq));
	commit_hdr_encode(&h, COMMIT_MSG_VERIFY, sizeof(vq), 2);
	save("proto", "verify", &h, sizeof(h), &vq, sizeof(vq));
	commit_hdr_encode(&h, COMMIT_MSG_STATUS, sizeof(st), 3);
	save("proto", "status", &h, sizeof(h), &st, sizeof(st));
	commit_hdr_encode(&h, COMMIT_MSG_UNMAP, 0, 4);
	save("proto", "unmap", &h, sizeof(h), NULL, 0);
	memcpy(b, &cq, sizeof(cq));
	memcpy(b + sizeof(cq), r, sizeof(r));
	memset(b + sizeof(cq) + sizeof(r), 0xab, 192);
	commit_hdr_encode(&h, COMMIT_MSG_COMMIT, sizeof(cq) + sizeof(r) + 192, 5);
	save("proto", "commit", &h, sizeof(h), b, sizeof(cq) + sizeof(r) + 192);
}

/* The control socket's protocol (fuzz_ctl.c): requests, a name to
 * escape, replies with their last line. */
static void ctl(void)
{
	static const char *const seeds[][2] = {
		{ "status", "status json verbose\n" },
		{ "events", "events since=12 json\n" },
		{ "scrub", "scrub start rate=1000000 json\n" },
		{ "replace", "replace start text 2 0 /tmp/new img\n" },
		{ "name", "x\n\t\\\x01\xc2\x9b\xe2\x80\xae\xe2\x82\xac\xff" },
		{ "reply", "2026-01-01 00:00:00.000 #1 counters-cleared\n"
			   "next 1\n" },
		{ "more", "next 18446744073709551615 more\n" },
	};

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		save("ctl", seeds[i][0], seeds[i][1], strlen(seeds[i][1]),
		     NULL, 0);
}

int main(int argc, char **argv)
{
	static uint8_t pg[4 * DG_PAGE_SIZE];
	struct dg_dinode d;
	struct dg_cpage_view v;
	struct dg_vol *vol;
	uint64_t ino[4];
	char name[32];
	size_t n;

	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds CORPUS-DIR\n");
		return 2;
	}
	out_dir = argv[1];
	mkdir(out_dir, 0755);
	vol = dg_fuzz_vol_make("mkseeds", paths);
	must(dg_fuzz_fill(vol, ino), "fill the volume");

	media(0, 0, pg, DG_PAGE_SIZE);
	save("super", "primary-dev0", pg, DG_PAGE_SIZE, NULL, 0);
	media(1, vol->sb.dev_pages - 1, pg, DG_PAGE_SIZE);
	save("super", "backup-dev1", pg, DG_PAGE_SIZE, NULL, 0);
	journal(vol);
	for (unsigned i = 0; i < 4; i++) {
		must(dg_fuzz_dinode(vol, ino[i], &d, NULL), "read an inode");
		snprintf(name, sizeof(name), "ino%llu", (unsigned long long)ino[i]);
		save("inode", name, &d, sizeof(d), NULL, 0);
	}
	/* The fragmented file: its inode and extent chain. */
	must(dg_fuzz_dinode(vol, ino[2], &d, NULL), "read an inode");
	n = 0;
	for (uint64_t v2 = d.emap_vpn; v2 && n < 3; n++) {
		must(dg_read(vol, v2, 1, pg + n * DG_PAGE_SIZE), "read emap");
		v2 = ((struct dg_demap *)(pg + n * DG_PAGE_SIZE))->next_vpn;
	}
	save("emap", "frag", &d, sizeof(d), pg, n * DG_PAGE_SIZE);
	must(dg_fuzz_dinode(vol, ino[3], &d, NULL), "read an inode");
	save("emap", "inline", &d, sizeof(d), NULL, 0);
	/* Directories: the root (one page), "many" (several). */
	for (unsigned i = 0; i < 2; i++) {
		must(dg_fuzz_dinode(vol, ino[i], &d, NULL), "read an inode");
		n = dg_fuzz_file_pages(vol, &d, pg, 4);
		save("dir", i ? "many" : "root", pg, n * DG_PAGE_SIZE, NULL, 0);
	}
	must(dg_fuzz_dinode(vol, ino[3], &d, NULL), "read an inode");
	must(dg_read(vol, d.xattr_vpn, 1, pg), "read the xattr page");
	save("xattr", "notes", pg, DG_PAGE_SIZE, NULL, 0);
	/* Checksum page 0 of device 0 as each copy holds it. */
	must(dg_cpage_examine(vol, 0, 0, pg, &v, DG_CPX_QUIET), "examine");
	for (unsigned c = 0; c < vol->sb.csum_copies; c++)
		media(dg_cpage_copy_dev(vol, 0, c), dg_cpage_copy_page(vol, 0, c),
		      pg + c * DG_PAGE_SIZE, DG_PAGE_SIZE);
	save("cpage", "index0", pg, vol->sb.csum_copies * DG_PAGE_SIZE, NULL, 0);
	media(0, vol->sb.cmap_start, pg, DG_PAGE_SIZE);
	save("cmap", "slot0", pg, DG_PAGE_SIZE, NULL, 0);
	fsopen(vol, ino);
	proto();
	ctl();
	dg_vol_close(vol);
	for (unsigned i = 0; i < DG_FUZZ_NDEV; i++)
		unlink(paths[i]);
	return 0;
}
