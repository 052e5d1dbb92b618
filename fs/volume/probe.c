// SPDX-License-Identifier: MIT
/* probe.c -- what a path holds before a tool writes to it (libblkid) */
#include <blkid.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "super.h"

/* Read len bytes at off; short reads (a truncated file) leave zeros. */
static void read_at(int fd, uint64_t off, void *buf, size_t len)
{
	ssize_t n;

	memset(buf, 0, len);
	n = pread(fd, buf, len, (off_t)off);
	(void)n;
}

/*
 * A daxguard superblock, valid or not: the magic is what says the page
 * was ours, whatever happened to the rest of it. The primary is at the
 * start of the device, the backup in its last page (super.c).
 */
static bool probe_daxguard(int fd, uint64_t size, struct dg_probe *p)
{
	static const uint64_t at[2] = { 0, 1 };
	struct dg_dsuper *raw;
	bool found = false;
	int ret;

	raw = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!raw)
		return false;
	for (unsigned i = 0; i < 2 && !p->sb_valid; i++) {
		uint64_t off = at[i] ? size - DG_PAGE_SIZE : 0;
		struct dg_dsuper s;

		if (size < DG_PAGE_SIZE || (at[i] && size < 2 * DG_PAGE_SIZE))
			break;
		read_at(fd, off & ~(uint64_t)(DG_PAGE_SIZE - 1), raw,
			DG_PAGE_SIZE);
		if (raw->magic != DG_SUPER_MAGIC)
			continue;
		ret = dg_dsuper_decode(raw, &s);
		if (ret == 0) {
			p->sb_valid = true;
			raw = memcpy(raw, &s, sizeof(s));
		} else if (found) {
			continue; /* keep the first damaged one */
		}
		found = true;
		/* Sealed, but of a format or features this build does not
		 * read: not damage. */
		p->unsupported = ret == -EOPNOTSUPP;
		p->version = raw->version;
		memcpy(p->uuid, raw->vol_uuid, 16);
		p->dev_index = raw->dev_index;
		p->dev_count = raw->dev_count;
		p->generation = raw->generation;
		memcpy(p->label, raw->label, sizeof(p->label) - 1);
		p->label[sizeof(p->label) - 1] = 0;
	}
	free(raw);
	return found;
}

/* True if every byte of the device reads as zero. Holes of a sparse
 * file are skipped without reading them. */
static bool all_zero(int fd, uint64_t size, bool regular)
{
	static const size_t chunk = 1u << 20;
	uint64_t off = 0;
	uint8_t *buf = malloc(chunk);
	bool zero = true;

	if (!buf)
		return false;
	while (zero && off < size) {
		uint64_t end = size;
		off_t d;

		if (regular) {
			d = lseek(fd, (off_t)off, SEEK_DATA);
			if (d < 0)
				break; /* only holes from here on */
			off = (uint64_t)d;
			d = lseek(fd, (off_t)off, SEEK_HOLE);
			end = d < 0 ? size : (uint64_t)d;
		}
		while (zero && off < end) {
			size_t n = end - off < chunk ? end - off : chunk;
			ssize_t got = pread(fd, buf, n, (off_t)off);

			if (got <= 0) {
				zero = got == 0;
				off = size;
				break;
			}
			for (ssize_t i = 0; i < got; i++)
				if (buf[i]) {
					zero = false;
					break;
				}
			off += (uint64_t)got;
		}
	}
	free(buf);
	return zero;
}

static void copy_value(blkid_probe pr, const char *name, char *out,
		       size_t len)
{
	const char *v;

	if (blkid_probe_lookup_value(pr, name, &v, NULL) == 0)
		snprintf(out, len, "%s", v);
}

/*
 * Ask libblkid for file systems, RAID members, LUKS, swap and partition
 * tables. Returns true if it recognised something (or more than one
 * thing: p->ambivalent).
 */
static bool probe_blkid(const char *path, struct dg_probe *p)
{
	blkid_probe pr = blkid_new_probe_from_filename(path);
	int ret;

	if (!pr)
		return false;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE |
						      BLKID_SUBLKS_LABEL |
						      BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	ret = blkid_do_safeprobe(pr);
	if (ret == 0) {
		copy_value(pr, "TYPE", p->type, sizeof(p->type));
		copy_value(pr, "LABEL", p->label, sizeof(p->label));
		copy_value(pr, "USAGE", p->usage, sizeof(p->usage));
		if (!p->type[0]) {
			copy_value(pr, "PTTYPE", p->type, sizeof(p->type));
			if (p->type[0])
				snprintf(p->usage, sizeof(p->usage),
					 "partition table");
		}
	} else if (ret == -2) {
		p->ambivalent = true;
	}
	blkid_free_probe(pr);
	return ret == 0 ? p->type[0] != 0 : ret == -2;
}

int dg_dev_probe(const char *path, struct dg_probe *p, char *err,
		 size_t errlen)
{
	struct stat st;
	int fd, ret = 0;

	memset(p, 0, sizeof(*p));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) {
			p->kind = DG_PROBE_ABSENT;
			return 0;
		}
		ret = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", path,
			 strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat '%s': %s", path,
			 strerror(errno));
		goto out;
	}
	if (S_ISREG(st.st_mode)) {
		p->size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &p->size) < 0)
			p->size = 0;
	} else if (S_ISCHR(st.st_mode)) {
		/* Device DAX: the size is in sysfs; a superblock check at
		 * the start is all that is cheap. */
		p->size = DG_PAGE_SIZE;
	} else {
		ret = -EINVAL;
		snprintf(err, errlen, "'%s' is not a regular file, block or "
			 "DAX device", path);
		goto out;
	}
	if (p->size == 0 && S_ISREG(st.st_mode))
		p->kind = DG_PROBE_EMPTY;
	else if (probe_daxguard(fd, p->size, p))
		p->kind = DG_PROBE_DAXGUARD;
	else if (probe_blkid(path, p))
		p->kind = DG_PROBE_FOREIGN;
	else if (!S_ISCHR(st.st_mode) &&
		 all_zero(fd, p->size, S_ISREG(st.st_mode)))
		p->kind = DG_PROBE_BLANK;
	else
		p->kind = DG_PROBE_DATA;
out:
	close(fd);
	return ret;
}

/* "an ext4 file system", "a dos partition table", "a LUKS volume" */
static const char *article(const char *word)
{
	return strchr("aeiouAEIOU", word[0]) ? "an" : "a";
}

void dg_probe_describe(const struct dg_probe *p, char *buf, size_t len)
{
	char uuid[37];

	switch (p->kind) {
	case DG_PROBE_ABSENT:
		snprintf(buf, len, "does not exist");
		break;
	case DG_PROBE_EMPTY:
		snprintf(buf, len, "is empty");
		break;
	case DG_PROBE_BLANK:
		snprintf(buf, len, "is blank (all zeros)");
		break;
	case DG_PROBE_DAXGUARD:
		dg_uuid_format(p->uuid, uuid);
		if (p->unsupported) {
			snprintf(buf, len, "is device %u of daxguard volume "
				 "%s (format version %u)", p->dev_index, uuid,
				 p->version);
			break;
		}
		snprintf(buf, len, "%s device %u of daxguard volume %s%s%s%s",
			 p->sb_valid ? "is" : "has a damaged superblock of",
			 p->dev_index, uuid, p->label[0] ? " labelled '" : "",
			 p->label, p->label[0] ? "'" : "");
		break;
	case DG_PROBE_FOREIGN:
		if (p->ambivalent) {
			snprintf(buf, len, "contains several conflicting "
				 "signatures (file systems or partition "
				 "tables)");
			break;
		}
		if (!strcmp(p->usage, "partition table"))
			snprintf(buf, len, "contains %s %s partition table",
				 article(p->type), p->type);
		else if (!strcmp(p->usage, "raid"))
			snprintf(buf, len, "is %s %s RAID member%s%s%s",
				 article(p->type), p->type,
				 p->label[0] ? " labelled '" : "", p->label,
				 p->label[0] ? "'" : "");
		else if (!strcmp(p->usage, "crypto"))
			snprintf(buf, len, "contains %s %s encrypted volume",
				 article(p->type), p->type);
		else if (!strcmp(p->type, "swap"))
			snprintf(buf, len, "contains swap space%s%s%s",
				 p->label[0] ? " labelled '" : "", p->label,
				 p->label[0] ? "'" : "");
		else
			snprintf(buf, len, "contains %s %s file system%s%s%s",
				 article(p->type), p->type,
				 p->label[0] ? " labelled '" : "", p->label,
				 p->label[0] ? "'" : "");
		break;
	case DG_PROBE_DATA:
	default:
		snprintf(buf, len, "holds data but no daxguard superblock");
		break;
	}
}

int dg_paths_given_twice(const char *const *paths, unsigned n, char *err,
			 size_t errlen)
{
	struct stat st[DG_MAX_DEVS];
	bool exists[DG_MAX_DEVS];

	for (unsigned i = 0; i < n && i < DG_MAX_DEVS; i++) {
		exists[i] = paths[i] && paths[i][0] && stat(paths[i], &st[i]) == 0;
		for (unsigned j = 0; j < i; j++) {
			/* Only what exists: missing paths are holes. */
			if (!exists[i] || !exists[j])
				continue;
			if (!strcmp(paths[i], paths[j])) {
				snprintf(err, errlen, "'%s' is given twice",
					 paths[i]);
				return -EINVAL;
			}
			if (st[i].st_dev == st[j].st_dev &&
			    st[i].st_ino == st[j].st_ino &&
			    st[i].st_rdev == st[j].st_rdev) {
				snprintf(err, errlen, "'%s' and '%s' are the "
					 "same device, given twice", paths[j],
					 paths[i]);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* Undo /proc/mounts' octal escapes (\040 for a space) in place. */
static void unescape_mounts(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = 0;
}

int dg_dev_mountpoint(const char *path, char *mnt, size_t len)
{
	char real[4096], line[16384];
	FILE *f;
	int found = 0;

	if (!realpath(path, real))
		return 0;
	f = fopen("/proc/self/mounts", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *src = strtok(line, " "), *dir = strtok(NULL, " ");
		char *type = strtok(NULL, " "), *save, *tok;
		const char *sep;

		if (!src || !dir || !type || strcmp(type, "fuse.daxguard"))
			continue;
		unescape_mounts(src);
		unescape_mounts(dir);
		/* The daemon's device list: ':' separated, or ',' when a
		 * path holds ':' (tools/devlist.h). */
		sep = strchr(src, ',') ? "," : ":";
		for (tok = strtok_r(src, sep, &save); tok && !found;
		     tok = strtok_r(NULL, sep, &save))
			if (!strcmp(tok, real)) {
				snprintf(mnt, len, "%s", dir);
				found = 1;
			}
	}
	fclose(f);
	return found;
}

int dg_devs_wait_unlocked(const char *const *paths, unsigned n, bool shared,
			  unsigned timeout_ms)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };

	for (unsigned waited = 0;; waited += 20) {
		bool free_all = true;

		for (unsigned i = 0; i < n && free_all; i++) {
			int fd;

			if (!paths[i] || !paths[i][0])
				continue;
			fd = open(paths[i], O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			if (flock(fd, (shared ? LOCK_SH : LOCK_EX) |
					      LOCK_NB) < 0)
				free_all = false;
			close(fd);
		}
		if (free_all)
			return 0;
		if (waited >= timeout_ms)
			return -EBUSY;
		nanosleep(&nap, NULL);
	}
}

const char *dg_dev_explain(const char *path, const struct dg_vol_info *in,
			   char *buf, size_t len)
{
	struct dg_probe p;
	char err[512], what[256], u[37];

	if (dg_dev_probe(path, &p, err, sizeof(err))) {
		snprintf(buf, len, "%s", err);
		return buf;
	}
	if (p.kind == DG_PROBE_DAXGUARD && !memcmp(p.uuid, in->uuid, 16)) {
		if (p.sb_valid && p.generation < in->generation)
			snprintf(buf, len, "'%s' is stale: device %u at "
				 "generation %llu, the volume is at %llu", path,
				 p.dev_index, (unsigned long long)p.generation,
				 (unsigned long long)in->generation);
		else if (p.size < in->dev_pages * DG_PAGE_SIZE)
			snprintf(buf, len, "'%s' is truncated: %llu bytes, "
				 "the volume needs %llu", path,
				 (unsigned long long)p.size,
				 (unsigned long long)(in->dev_pages *
						      DG_PAGE_SIZE));
		else if (!p.sb_valid)
			snprintf(buf, len, "'%s' has a damaged superblock "
				 "(device %u)", path, p.dev_index);
		else
			return NULL;
		return buf;
	}
	if (p.kind == DG_PROBE_DAXGUARD) {
		dg_uuid_format(p.uuid, u);
		snprintf(buf, len, "'%s' is device %u of another daxguard "
			 "volume, %s", path, p.dev_index, u);
		return buf;
	}
	dg_probe_describe(&p, what, sizeof(what));
	snprintf(buf, len, "'%s' %s", path, what);
	return buf;
}
