// SPDX-License-Identifier: MIT
/* newvol.c -- dg_vol_format(): lay a new volume over devices (mkfs) */
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image_file.h"
#include "super.h"

#define DG_DEFAULT_CHUNK_PAGES 256u /* 1 MiB */
#define DG_MIN_DEV_BYTES       (16ull << 20)


/* Create or extend a regular file to size; leave other files alone. A
 * new image is 0600 (image_file.h): whoever may read it may read every
 * file of the volume, whatever their modes (libcommit/README.md,
 * "Direct or through the mount"). */
static int prepare_file(const char *path, uint64_t size)
{
	char err[512];
	bool created;
	int ret = dg_image_prepare(path, size, &created, err, sizeof(err));

	if (ret)
		dg_log(DG_LOG_ERR, "%s", err);
	return ret;
}

/*
 * Zero [off, off + len) of a device as cheaply as the device allows:
 * a hole in a file, BLKZEROOUT on a block device, stores otherwise.
 * This is what keeps mkfs proportional to the metadata.
 */
static int zero_region(struct dg_dev *d, uint64_t off, uint64_t len)
{
	struct stat st;
	int ret;

	if (fstat(d->fd, &st) == 0) {
		if (S_ISREG(st.st_mode) &&
		    fallocate(d->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)off, (off_t)len) == 0)
			return 0;
		if (S_ISBLK(st.st_mode)) {
			uint64_t range[2] = { off, len };

			if (ioctl(d->fd, BLKZEROOUT, range) == 0)
				return 0;
		}
	}
	ret = dg_dev_zero(d, off, len);
	return ret ? ret : dg_dev_persist(d, off, len);
}

static int check_opts(unsigned ndev, const struct dg_format_opts *o)
{
	if (ndev < 1 || ndev > DG_MAX_DEVS) {
		dg_log(DG_LOG_ERR, "need 1 to %u devices, got %u",
		       DG_MAX_DEVS, ndev);
		return -EINVAL;
	}
	if (o->parity > DG_MAX_PARITY || o->parity >= ndev) {
		dg_log(DG_LOG_ERR, "parity %u needs at least %u devices and "
		       "is at most %u", o->parity, o->parity + 1,
		       DG_MAX_PARITY);
		return -EINVAL;
	}
	if (o->no_redundancy && o->parity) {
		dg_log(DG_LOG_ERR, "redundancy none excludes parity");
		return -EINVAL;
	}
	if (o->label && strlen(o->label) >= 64) {
		dg_log(DG_LOG_ERR, "label longer than 63 bytes");
		return -EINVAL;
	}
	return 0;
}

/* Open every device, refusing an existing volume without force, and
 * check the sizes agree. */
static int open_devs(struct dg_vol *vol, const char *const *devs,
		     unsigned ndev, const struct dg_format_opts *o,
		     uint64_t *dev_bytes)
{
	char err[512];
	int ret;

	for (unsigned i = 0; i < ndev; i++) {
		struct dg_dev *d = &vol->devs[i];
		struct dg_dsuper s;
		bool backup;

		for (unsigned j = 0; j < i; j++)
			if (!strcmp(devs[i], devs[j])) {
				dg_log(DG_LOG_ERR, "'%s' is given twice",
				       devs[i]);
				return -EINVAL;
			}
		/* Refuse before anything is written, extension included. */
		if (!o->force && access(devs[i], F_OK) == 0) {
			ret = dg_dev_open(d, devs[i], true, false, err,
					  sizeof(err));
			if (ret == 0 &&
			    dg_dev_read_super(d, &s, &backup) != -ENODEV) {
				dg_dev_close(d);
				dg_log(DG_LOG_ERR, "'%s' already holds a "
				       "daxguard volume; use --force to "
				       "overwrite it", devs[i]);
				return -EEXIST;
			}
			if (ret == 0)
				dg_dev_close(d);
		}
		if (o->size) {
			ret = prepare_file(devs[i], o->size);
			if (ret)
				return ret;
		}
		ret = dg_dev_open(d, devs[i], false, false, err, sizeof(err));
		if (ret) {
			dg_log(DG_LOG_ERR, "%s", err);
			return ret;
		}
		d->idx = i;
		d->latch = &vol->latch;
		if (i && d->size != *dev_bytes) {
			dg_log(DG_LOG_ERR, "device sizes differ: '%s' has %llu "
			       "bytes, '%s' has %llu", devs[0],
			       (unsigned long long)*dev_bytes, devs[i],
			       (unsigned long long)d->size);
			return -EINVAL;
		}
		*dev_bytes = d->size;
	}
	if (*dev_bytes < DG_MIN_DEV_BYTES) {
		dg_log(DG_LOG_ERR, "devices of %llu bytes are too small: "
		       "need at least %llu MiB each",
		       (unsigned long long)*dev_bytes, DG_MIN_DEV_BYTES >> 20);
		return -ENOSPC;
	}
	return 0;
}

/* Write the skeleton: metadata regions zeroed, journal header,
 * superblocks (CLEAN, generation 1). */
static int write_skeleton(struct dg_vol *vol, unsigned ndev,
			  const struct dg_format_opts *o, uint64_t dev_bytes)
{
	struct dg_dsuper *sb = &vol->sb;
	uint32_t cp = o->chunk_pages ? o->chunk_pages : DG_DEFAULT_CHUNK_PAGES;
	uint64_t dev_pages = dev_bytes / DG_PAGE_SIZE, zone;
	int ret;

	memset(sb, 0, sizeof(*sb));
	/* The metadata zone: whole chunks of rows (format.h). */
	zone = o->no_meta_zone ? 0
			       : dg_geom_zone_chunks(dev_pages, cp, ndev,
						     o->parity, o->meta_size);
	sb->incompat = DG_FEAT_INCOMPAT_JOURNAL_COPIES; /* the layout's */
	dg_geom_layout(sb, dev_pages, cp, ndev, o->parity, zone);
	if (sb->rows < 2ull * cp) {
		dg_log(DG_LOG_ERR, "devices of %llu bytes are too small for "
		       "chunks of %u pages and a metadata zone",
		       (unsigned long long)dev_bytes, cp);
		return -ENOSPC;
	}
	if (zone && (uint64_t)sb->ditto_pages * DG_PAGE_SIZE < o->meta_size) {
		dg_log(DG_LOG_ERR, "a metadata zone of %llu bytes does not "
		       "fit: at most %llu bytes (half the volume) on these "
		       "devices", (unsigned long long)o->meta_size,
		       (unsigned long long)sb->ditto_pages * DG_PAGE_SIZE);
		return -ENOSPC;
	}
	sb->magic = DG_SUPER_MAGIC;
	sb->version = DG_FORMAT_VERSION;
	sb->incompat = (o->no_redundancy ? DG_FEAT_INCOMPAT_NOREDUNDANCY
					 : DG_FEAT_INCOMPAT_SEALED_JOURNAL) |
		       (zone ? DG_FEAT_INCOMPAT_META_ZONE : 0) |
		       DG_FEAT_INCOMPAT_XATTR_RUN |
		       DG_FEAT_INCOMPAT_STAGED_SYNC |
		       DG_FEAT_INCOMPAT_JOURNAL_COPIES |
		       (o->no_redundancy ? 0 : DG_FEAT_INCOMPAT_NEW_ROWS) |
		       (o->no_redundancy ? 0 : DG_FEAT_INCOMPAT_JOURNAL_V2) |
		       (o->no_redundancy || o->whole_seal
				? 0 : DG_FEAT_INCOMPAT_LINE_SEAL) |
		       /* runs of new rows need parity (dg_new_row_allowed()):
			* without it the bit would only lock out older
			* readers */
		       (o->no_redundancy || !o->parity
				? 0 : DG_FEAT_INCOMPAT_RESERVED_ROWS) |
		       /* asked for only: it trades crash plus device loss
			* states for bytes (docs/design.md, "Lean
			* entries"); they stand on the row's parity, and on
			* parity + 2 journal copies (journal.c) -- with
			* fewer devices the bit would only lock out older
			* readers */
		       (o->lean_journal && !o->no_redundancy && o->parity &&
				ndev >= o->parity + 2
				? DG_FEAT_INCOMPAT_LEAN_JOURNAL : 0) |
		       /* parity 1 and a copy on each of three devices or
			* more: one fault leaves two torn copies that agree
			* (csum.c, cpage_salvage()) */
		       (!o->no_redundancy && o->parity == 1 &&
				sb->csum_copies >= 3 && ndev >= sb->csum_copies
				? DG_FEAT_INCOMPAT_COPIES_TOGETHER : 0) |
		       /* asked for only (docs/design.md, "Overwrites
			* redirected": fewer bytes stored, more pages read
			* and hashed), and where a whole page into a blank
			* one needs no journal copy (apply.c, lone rows and
			* holes filled, which need the copies together) */
		       (o->remap && !o->no_redundancy && o->parity == 1 &&
				sb->csum_copies >= 3 && ndev >= sb->csum_copies
				? DG_FEAT_INCOMPAT_REMAP : 0);
	if (o->uuid)
		memcpy(sb->vol_uuid, o->uuid, 16);
	else
		dg_uuid_new(sb->vol_uuid);
	sb->generation = 1;
	sb->state = DG_STATE_CLEAN;
	sb->ctime = sb->mtime = (uint64_t)time(NULL);
	if (o->label)
		strncpy(sb->label, o->label, sizeof(sb->label) - 1);
	vol->ndev = ndev;
	vol->seed = dg_seed_from_uuid(sb->vol_uuid);
	for (unsigned i = 0; i < ndev; i++) {
		struct dg_dev *d = &vol->devs[i];

		dg_uuid_new(vol->dev_uuid[i]);
		/* Checksum regions must read as zero ("never written"); the
		 * journal log needs nothing, its entries carry checksums. */
		ret = zero_region(d, sb->jrnl_start << DG_PAGE_SHIFT,
				  2ull * DG_PAGE_SIZE);
		if (!ret && ndev == 1)
			ret = zero_region(d, (sb->jrnl_start +
					      sb->jrnl_pages / 2)
						     << DG_PAGE_SHIFT,
					  2ull * DG_PAGE_SIZE);
		/* Checksum pages are written when their index is first
		 * used (the init map says which were); until then what the
		 * region holds is never read as a checksum. */
		if (!ret)
			ret = zero_region(d, sb->csum_start << DG_PAGE_SHIFT,
					  (uint64_t)sb->csum_copies *
						  sb->csum_pages
						  << DG_PAGE_SHIFT);
		if (ret)
			return ret;
	}
	pthread_mutex_init(&vol->cmap_lock, NULL);
	ret = dg_cmap_format(vol);
	if (!ret)
		ret = dg_journal_format(vol);
	if (!ret)
		ret = dg_write_supers(vol);
	return ret;
}

int dg_vol_format(const char *const *devs, unsigned ndev,
		  const struct dg_format_opts *opts, struct dg_vol **volp)
{
	struct dg_vol *tmp, *vol = NULL;
	uint64_t dev_bytes = 0;
	int ret;

	ret = check_opts(ndev, opts);
	if (ret)
		return ret;
	tmp = calloc(1, sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	dg_latch_init(&tmp->latch);
	ret = open_devs(tmp, devs, ndev, opts, &dev_bytes);
	if (!ret)
		ret = write_skeleton(tmp, ndev, opts, dev_bytes);
	if (!ret && dg_latch_on(&tmp->latch))
		ret = tmp->latch.err; /* logged by the latch */
	for (unsigned i = 0; i < ndev; i++)
		if (tmp->devs[i].present)
			dg_dev_close(&tmp->devs[i]);
	dg_cmap_free(tmp);
	free(tmp);
	if (ret)
		return ret;

	/* The root and bitmap go through the ordinary update path. */
	char err[512];
	ret = dg_vol_open(devs, ndev, DG_OPEN_FORMAT, &vol, err, sizeof(err));
	if (ret) {
		dg_log(DG_LOG_ERR, "%s", err);
		return ret;
	}
	ret = dg_alloc_format(vol);
	if (!ret)
		ret = dg_alloc_load(vol);
	if (ret) {
		dg_vol_close(vol);
		return ret;
	}
	*volp = vol;
	return 0;
}
