// SPDX-License-Identifier: MIT
/* super.c -- superblocks: validate, assemble devices into a volume, close */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "xxh.h"

#include "csum.h"
#include "probe.h"
#include "super.h"

static uint64_t dsuper_csum(const struct dg_dsuper *s)
{
	return XXH3_64bits_withSeed(s, offsetof(struct dg_dsuper, csum),
				    DG_SUPER_MAGIC);
}

void dg_dsuper_seal(struct dg_dsuper *s)
{
	s->size = sizeof(*s);
	s->csum = dsuper_csum(s);
}

/* The layout fields must be exactly what dg_geom_layout() derives. */
static bool layout_ok(const struct dg_dsuper *s)
{
	struct dg_dsuper g = { 0 };

	if (s->dev_count < 1 || s->dev_count > DG_MAX_DEVS ||
	    s->dev_index >= s->dev_count || s->parity > DG_MAX_PARITY ||
	    s->parity >= s->dev_count || s->chunk_pages == 0 ||
	    s->chunk_pages > (1u << 20) || s->dev_pages > (1ull << 40))
		return false;
	dg_geom_layout(&g, s->dev_pages, s->chunk_pages, s->dev_count,
		       s->parity);
	return g.rows && g.rows == s->rows && g.jrnl_start == s->jrnl_start &&
	       g.jrnl_pages == s->jrnl_pages && g.jrnl_devs == s->jrnl_devs &&
	       g.csum_start == s->csum_start &&
	       g.csum_pages == s->csum_pages &&
	       g.csum_copies == s->csum_copies &&
	       g.cmap_start == s->cmap_start && g.cmap_pages == s->cmap_pages &&
	       g.ditto_start == s->ditto_start &&
	       g.ditto_pages == s->ditto_pages &&
	       g.ditto_copies == s->ditto_copies &&
	       g.data_start == s->data_start;
}

int dg_dsuper_decode(const void *page, struct dg_dsuper *out)
{
	const struct dg_dsuper *s = page;

	if (s->magic != DG_SUPER_MAGIC)
		return -ENODEV;
	if (s->size != sizeof(*s) || s->csum != dsuper_csum(s))
		return -EUCLEAN;
	if (s->version != DG_FORMAT_VERSION ||
	    (s->incompat & ~DG_FEAT_INCOMPAT_SUPPORTED)) {
		/* What the caller reports: which version, which features. */
		memset(out, 0, sizeof(*out));
		out->version = s->version;
		out->incompat = s->incompat;
		return -EOPNOTSUPP;
	}
	if (!layout_ok(s))
		return -EUCLEAN;
	memcpy(out, s, sizeof(*out));
	return 0;
}

/* Superblock of a mapped device: the primary, else the backup at the
 * end of the device. */
int dg_dev_read_super(const struct dg_dev *d, struct dg_dsuper *out,
		      bool *from_backup)
{
	int ret, ret2;

	*from_backup = false;
	if (d->size < DG_PAGE_SIZE)
		return -ENODEV;
	ret = dg_dsuper_decode(dg_dev_ptr(d, 0), out);
	if (ret == 0 || ret == -EOPNOTSUPP)
		return ret;
	ret2 = dg_dsuper_decode(dg_dev_ptr(d, d->size - DG_PAGE_SIZE), out);
	if (ret2 == 0 || ret2 == -EOPNOTSUPP) {
		*from_backup = true;
		return ret2;
	}
	return ret;
}

void dg_super_new_epoch(struct dg_vol *vol)
{
	pthread_mutex_lock(&vol->epoch_lock);
	/* Two passes: every device learns the new generation (as OPENING)
	 * before any device says DIRTY, and nothing else is written until
	 * both are durable. A crash in the first pass leaves laggards one
	 * behind an OPENING reference, which the next open accepts; a stale
	 * copy is at least two behind or behind a DIRTY or CLEAN reference.
	 * Mid-mount (dg_gen_next()), the generations already handed out
	 * stay below the new epoch's. */
	vol->sb.generation++;
	vol->sb.state = DG_STATE_OPENING;
	dg_write_supers(vol);
	vol->sb.state = DG_STATE_DIRTY;
	dg_write_supers(vol);
	if ((atomic_load(&vol->gen) >> 40) < vol->sb.generation)
		atomic_store(&vol->gen, vol->sb.generation << 40);
	pthread_mutex_unlock(&vol->epoch_lock);
}

void dg_write_supers(struct dg_vol *vol)
{
	for (unsigned i = 0; i < vol->ndev; i++) {
		struct dg_dev *d = &vol->devs[i];
		struct dg_dsuper s = vol->sb;
		uint64_t backup = (s.dev_pages - 1) << DG_PAGE_SHIFT;

		if (!d->present)
			continue;
		s.dev_index = i;
		memcpy(s.dev_uuid, vol->dev_uuid[i], 16);
		dg_dsuper_seal(&s);
		/* The primary is durable before the backup is written and
		 * each device's superblock before the next one's, so a crash
		 * tears at most one copy of one device's. */
		dg_dev_write(d, 0, &s, sizeof(s));
		dg_dev_persist(d, 0, sizeof(s));
		dg_dev_write(d, backup, &s, sizeof(s));
		dg_dev_persist(d, backup, sizeof(s));
	}
}

static void uuid_str(const uint8_t u[16], char *out)
{
	for (int i = 0, o = 0; i < 16; i++) {
		o += sprintf(out + o, "%02x", u[i]);
		if (i == 3 || i == 5 || i == 7 || i == 9)
			out[o++] = '-';
	}
}

void dg_uuid_format(const uint8_t u[16], char out[37])
{
	uuid_str(u, out);
}

/* One device path given to dg_vol_open(). */
struct cand {
	const char *path;
	struct dg_dev dev;
	struct dg_dsuper sb;
	bool opened, valid;
	bool blank;		/* an empty file: a rebuild target */
};

#define FAIL(code, ...)                                                    \
	do {                                                               \
		snprintf(errbuf, errlen, __VA_ARGS__);                     \
		ret = (code);                                              \
		goto fail;                                                 \
	} while (0)

static bool same_volume_geometry(const struct dg_dsuper *a,
				 const struct dg_dsuper *b)
{
	return a->dev_count == b->dev_count && a->parity == b->parity &&
	       a->chunk_pages == b->chunk_pages &&
	       a->dev_pages == b->dev_pages && a->incompat == b->incompat;
}

static int vol_init_core(struct dg_vol *vol)
{
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	/* Updates must not starve behind a stream of readers. */
	pthread_rwlockattr_setkind_np(
		&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (unsigned i = 0; i < DG_ROW_LOCKS; i++)
		pthread_rwlock_init(&vol->row_locks[i], &attr);
	pthread_rwlockattr_destroy(&attr);
	for (unsigned i = 0; i < DG_CSUM_LOCKS; i++)
		pthread_mutex_init(&vol->csum_locks[i], NULL);
	pthread_mutex_init(&vol->alloc_lock, NULL);
	pthread_mutex_init(&vol->epoch_lock, NULL);
	pthread_mutex_init(&vol->cmap_lock, NULL);
	pthread_mutex_init(&vol->cmap_init_lock, NULL);
	pthread_mutex_init(&vol->fault_lock, NULL);
	vol->ndev = vol->sb.dev_count;
	vol->parity = vol->sb.parity;
	vol->k = vol->ndev - vol->parity;
	vol->vpns = vol->sb.rows * vol->k;
	vol->redundancy = !(vol->sb.incompat & DG_FEAT_INCOMPAT_NOREDUNDANCY);
	vol->sealed_journal = vol->redundancy &&
		(vol->sb.incompat & DG_FEAT_INCOMPAT_SEALED_JOURNAL);
	vol->seed = dg_seed_from_uuid(vol->sb.vol_uuid);
	return dg_parity_init(vol);
}

static void vol_free(struct dg_vol *vol)
{
	for (unsigned i = 0; i < DG_MAX_DEVS; i++)
		if (vol->devs[i].present)
			dg_dev_close(&vol->devs[i]);
	for (unsigned i = 0; i < vol->nspare; i++)
		free(vol->spare[i]);
	dg_parity_fini(vol);
	dg_alloc_fini(vol);
	dg_cpcache_free(vol);
	dg_cmap_free(vol);
	free(vol);
}

/*
 * Open every path and read its superblock; the highest generation among
 * valid ones is the reference the others are judged against.
 */
static int probe(struct cand *c, unsigned n, bool rdonly, bool nolock,
		 bool degraded, char *errbuf, size_t errlen, int *refp)
{
	int ret, ref = -1;
	unsigned opened = 0, absent = 0;

	for (unsigned i = 0; i < n; i++) {
		bool backup;

		if (!c[i].path || !*c[i].path)
			continue;
		ret = dg_dev_open(&c[i].dev, c[i].path, rdonly, nolock, errbuf,
				  errlen);
		if (ret == -ENOENT || ret == -ENOSPC) {
			/* Missing like a NULL path: -ENXIO below unless
			 * parity covers it and the caller allows that. An
			 * empty file is a blank replacement: kept as a
			 * rebuild target, grown to the device size then. */
			dg_log(DG_LOG_WARNING, "%s", errbuf);
			c[i].blank = ret == -ENOSPC;
			absent++;
			continue;
		}
		if (ret)
			return ret;
		c[i].opened = true;
		opened++;
		ret = dg_dev_read_super(&c[i].dev, &c[i].sb, &backup);
		if (ret == -EOPNOTSUPP && c[i].sb.version &&
		    c[i].sb.version < DG_FORMAT_VERSION) {
			snprintf(errbuf, errlen, "'%s' holds a daxguard volume "
				 "of format version %u; this daxguard reads "
				 "version %u (generations on checksum pages): "
				 "copy its files off with the daxguard that "
				 "made it, then mkfs.daxguard again",
				 c[i].path, c[i].sb.version, DG_FORMAT_VERSION);
			return ret;
		}
		if (ret == -EOPNOTSUPP) {
			snprintf(errbuf, errlen, "'%s': format version %u or "
				 "incompatible features %#llx not supported",
				 c[i].path, c[i].sb.version,
				 (unsigned long long)c[i].sb.incompat);
			return ret;
		}
		if (ret) {
			if (degraded)
				continue; /* blank: a rebuild target */
			snprintf(errbuf, errlen, "'%s' is not a daxguard "
				 "device (no valid superblock)", c[i].path);
			return -ENODEV;
		}
		if (backup)
			dg_log(DG_LOG_WARNING, "'%s': primary superblock bad, "
			       "using the backup", c[i].path);
		c[i].valid = true;
		if (ref < 0 || c[i].sb.generation > c[ref].sb.generation)
			ref = (int)i;
	}
	if (ref < 0 && absent && !opened)
		return -ENOENT; /* errbuf says which path */
	if (ref < 0) {
		snprintf(errbuf, errlen, "no daxguard superblock on any of "
			 "the %u devices", n);
		return -ENODEV;
	}
	*refp = ref;
	return 0;
}

int dg_vol_open(const char *const *paths, unsigned n, unsigned flags,
		struct dg_vol **volp, char *errbuf, size_t errlen)
{
	bool rdonly = flags & (DG_OPEN_RDONLY | DG_OPEN_NOLOCK);
	bool degraded = flags & DG_OPEN_DEGRADED;
	struct cand c[DG_MAX_DEVS];
	struct dg_vol *vol = NULL;
	char ubuf[2][37], dummy[1];
	unsigned missing = 0;
	int ret, ref;

	if (!errbuf) {
		errbuf = dummy;
		errlen = sizeof(dummy);
	}
	if (n == 0 || n > DG_MAX_DEVS) {
		snprintf(errbuf, errlen, "need 1 to %u devices, got %u",
			 DG_MAX_DEVS, n);
		return -EINVAL;
	}
	/* Else the second open of one file meets the first's lock. */
	ret = dg_paths_given_twice(paths, n, errbuf, errlen);
	if (ret)
		return ret;
	memset(c, 0, sizeof(c));
	for (unsigned i = 0; i < n; i++)
		c[i].path = paths[i];
	vol = calloc(1, sizeof(*vol));
	if (!vol)
		return -ENOMEM;
	ret = probe(c, n, rdonly, flags & DG_OPEN_NOLOCK, degraded, errbuf,
		    errlen, &ref);
	if (ret)
		goto fail;
	vol->sb = c[ref].sb;
	if (vol->sb.dev_count < n)
		FAIL(-EINVAL, "%u devices given but the volume has %u", n,
		     vol->sb.dev_count);

	for (unsigned i = 0; i < n; i++) {
		struct dg_dsuper *s = &c[i].sb;
		unsigned idx = s->dev_index;

		if (c[i].blank && degraded)
			vol->spare[vol->nspare++] = strdup(c[i].path);
		if (!c[i].opened)
			continue;
		if (c[i].valid &&
		    memcmp(s->vol_uuid, vol->sb.vol_uuid, 16)) {
			uuid_str(s->vol_uuid, ubuf[0]);
			uuid_str(vol->sb.vol_uuid, ubuf[1]);
			FAIL(-EXDEV, "'%s' belongs to volume %s, '%s' to "
			     "volume %s", c[i].path, ubuf[0], c[ref].path,
			     ubuf[1]);
		}
		if (c[i].valid && !same_volume_geometry(s, &vol->sb))
			FAIL(-EUCLEAN, "'%s' disagrees with '%s' on the "
			     "volume geometry", c[i].path, c[ref].path);
		if (c[i].valid && s->generation + 1 == vol->sb.generation &&
		    vol->sb.state == DG_STATE_OPENING) {
			/* A crash cut the bump short before any write of
			 * the new generation: this device is current. */
			dg_log(DG_LOG_INFO, "'%s' missed an interrupted "
			       "generation bump: current", c[i].path);
		} else if (c[i].valid && s->generation < vol->sb.generation) {
			if (!degraded)
				FAIL(-ESTALE, "'%s' is stale (generation %llu, "
				     "volume is at %llu)", c[i].path,
				     (unsigned long long)s->generation,
				     (unsigned long long)vol->sb.generation);
			dg_log(DG_LOG_WARNING, "'%s' is stale (generation "
			       "%llu < %llu): left out", c[i].path,
			       (unsigned long long)s->generation,
			       (unsigned long long)vol->sb.generation);
			c[i].valid = false;
		}
		if (c[i].valid &&
		    c[i].dev.size < vol->sb.dev_pages * DG_PAGE_SIZE) {
			if (!degraded)
				FAIL(-EFBIG, "'%s' is truncated: %llu bytes, "
				     "the volume needs %llu", c[i].path,
				     (unsigned long long)c[i].dev.size,
				     (unsigned long long)(vol->sb.dev_pages *
							  DG_PAGE_SIZE));
			dg_log(DG_LOG_WARNING, "'%s' is truncated: left out",
			       c[i].path);
			c[i].valid = false;
		}
		if (c[i].valid && vol->devs[idx].present)
			FAIL(-EINVAL, "'%s' and '%s' both claim to be device "
			     "%u", vol->devs[idx].path, c[i].path, idx);
		if (!c[i].valid) {
			/* Blank, stale or truncated: kept as a rebuild target. */
			vol->spare[vol->nspare++] = strdup(c[i].path);
			dg_dev_close(&c[i].dev);
			c[i].opened = false;
			continue;
		}
		if (idx != i)
			dg_log(DG_LOG_INFO, "'%s' is device %u of the volume",
			       c[i].path, idx);
		vol->devs[idx] = c[i].dev;
		vol->devs[idx].idx = idx;
		memcpy(vol->dev_uuid[idx], s->dev_uuid, 16);
		c[i].opened = false; /* owned by vol now */
	}
	for (unsigned d = 0; d < vol->sb.dev_count; d++)
		if (!vol->devs[d].present) {
			vol->missing_mask |= 1u << d;
			missing++;
		}
	if (missing > vol->sb.parity)
		FAIL(-ENXIO, "%u of %u devices missing or unusable; parity "
		     "covers %u", missing, vol->sb.dev_count, vol->sb.parity);
	if (missing && !degraded)
		FAIL(-ENXIO, "%u of %u devices missing (mask %#x); open "
		     "degraded to go on", missing, vol->sb.dev_count,
		     vol->missing_mask);
	vol->degraded = missing > 0;
	/* Degraded volumes are read-only until fsck rebuilds the device. */
	vol->read_only = rdonly || vol->degraded;
	if (vol->sb.ro_compat & ~DG_FEAT_RO_COMPAT_SUPPORTED) {
		/* format.h: unknown ro_compat features allow reading only. */
		dg_log(DG_LOG_WARNING, "unknown read-only compatible features "
		       "%#llx: read-only", (unsigned long long)vol->sb.ro_compat);
		vol->read_only = true;
	}
	if (vol->degraded)
		dg_log(DG_LOG_WARNING, "volume degraded: %u of %u devices "
		       "missing (mask %#x), read-only", missing,
		       vol->sb.dev_count, vol->missing_mask);

	ret = vol_init_core(vol);
	if (ret)
		FAIL(ret, "out of memory");
	if (!vol->read_only) {
		vol->sb.mtime = (uint64_t)time(NULL);
		dg_super_new_epoch(vol);
	}
	/* Checksum pages are written from here on (journal replay). */
	dg_gen_init(vol);
	if (vol->redundancy) {
		ret = dg_cmap_load(vol);
		if (ret)
			FAIL(ret, "out of memory");
	}
	ret = dg_journal_open(vol, !vol->read_only &&
					   !(flags & DG_OPEN_NORECOVER));
	if (ret == -ENXIO && vol->degraded) {
		/* Both journal devices are gone (double parity): the data
		 * stands as of the last checkpoint; a rebuild (fsck) writes
		 * a fresh journal. */
		dg_log(DG_LOG_WARNING, "both journal copies missing: "
		       "unreplayed updates, if any, are lost");
		ret = 0;
	}
	if (ret)
		FAIL(ret, "journal: %s", strerror(-ret));
	if (dg_journal_dirty(vol) && vol->read_only)
		dg_log(DG_LOG_WARNING, "journal holds updates that a "
		       "read-only open does not replay");
	ret = (flags & DG_OPEN_FORMAT) ? 0 : dg_alloc_load(vol);
	if (ret)
		FAIL(ret, "volume root or allocation bitmap unreadable: %s",
		     strerror(-ret));
	*volp = vol;
	return 0;
fail:
	for (unsigned i = 0; i < n; i++)
		if (c[i].opened)
			dg_dev_close(&c[i].dev);
	if (vol->jrnl.log_bytes)
		dg_journal_close(vol);
	vol_free(vol);
	return ret;
}

int dg_vol_close(struct dg_vol *vol)
{
	if (!vol)
		return 0;
	if (!vol->read_only && !atomic_load(&vol->fatal)) {
		dg_journal_checkpoint(vol);
		vol->sb.state = DG_STATE_CLEAN;
		dg_write_supers(vol);
	}
	dg_journal_close(vol);
	vol_free(vol);
	return 0;
}

int dg_vol_sync(struct dg_vol *vol)
{
	if (vol->read_only)
		return 0;
	return dg_journal_checkpoint(vol);
}

void dg_vol_get_info(struct dg_vol *vol, struct dg_vol_info *info)
{
	memset(info, 0, sizeof(*info));
	memcpy(info->uuid, vol->sb.vol_uuid, 16);
	memcpy(info->label, vol->sb.label, sizeof(info->label));
	info->label[sizeof(info->label) - 1] = 0;
	info->ndev = vol->ndev;
	info->present = vol->ndev - (unsigned)__builtin_popcount(
					    vol->missing_mask);
	info->parity = vol->parity;
	info->no_redundancy = !vol->redundancy;
	info->degraded = vol->degraded;
	info->read_only = vol->read_only;
	info->missing_mask = vol->missing_mask;
	info->chunk_pages = vol->sb.chunk_pages;
	info->dev_pages = vol->sb.dev_pages;
	info->rows = vol->sb.rows;
	info->vpns = vol->vpns;
	info->free_vpns = dg_free_vpns(vol);
	info->generation = vol->sb.generation;
	info->csum_pages = vol->sb.csum_pages;
	info->jrnl_pages = vol->sb.jrnl_pages;
}
