// SPDX-License-Identifier: MIT
/* super.c -- superblocks: validate, read, write, begin a new epoch */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "xxh.h"

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
	    s->chunk_pages > DG_MAX_CHUNK_PAGES ||
	    s->dev_pages > DG_MAX_DEV_PAGES)
		return false;
	if ((s->incompat & DG_FEAT_INCOMPAT_META_ZONE) &&
	    (s->ditto_pages == 0 ||
	     s->ditto_pages % ((s->dev_count - s->parity) * s->chunk_pages)))
		return false;
	g.incompat = s->incompat; /* which journal geometry */
	dg_geom_layout(&g, s->dev_pages, s->chunk_pages, s->dev_count,
		       s->parity, dg_sb_zone_chunks(s));
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
	/* A copy: page may sit anywhere (the last page of a device cut to
	 * a size that is no multiple of a page is not aligned). */
	struct dg_dsuper copy;
	const struct dg_dsuper *s = &copy;

	memcpy(&copy, page, sizeof(copy));

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

int dg_super_new_epoch(struct dg_vol *vol)
{
	int ret;

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
	ret = dg_write_supers(vol);
	vol->sb.state = DG_STATE_DIRTY;
	if (!ret)
		ret = dg_write_supers(vol);
	if (dg_gen_of(atomic_load(&vol->gen)) < vol->sb.generation)
		atomic_store(&vol->gen, dg_gen_base(vol->sb.generation));
	pthread_mutex_unlock(&vol->epoch_lock);
	return ret;
}

static int dg_write_supers_with(struct dg_vol *vol, uint64_t incompat);

int dg_vol_set_incompat(struct dg_vol *vol, uint64_t bit)
{
	int ret = 0;

	if (!(bit & DG_FEAT_INCOMPAT_ON_USE) || (bit & ~DG_FEAT_INCOMPAT_ON_USE))
		return -EINVAL;
	/* The epoch lock orders this against a generation bump, which
	 * writes the superblocks from vol->sb too. */
	pthread_mutex_lock(&vol->epoch_lock);
	if ((vol->sb.incompat & bit) == bit)
		goto out;
	if (vol->read_only) {
		ret = -EROFS;
		goto out;
	}
	ret = dg_write_supers_with(vol, bit);
	/* Not durable everywhere: the caller must not use the form, and
	 * the next try writes every device again. Devices that took it
	 * keep a flag nothing uses, which the open accepts. */
	if (!ret)
		__atomic_or_fetch(&vol->sb.incompat, bit, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&vol->epoch_lock);
	return ret;
}

int dg_write_supers(struct dg_vol *vol)
{
	return dg_write_supers_with(vol, 0);
}

/* dg_write_supers() with extra incompat bits in what is written: the
 * bits reach vol->sb (and the readers) only once they are durable. */
static int dg_write_supers_with(struct dg_vol *vol, uint64_t incompat)
{
	int ret = 0;

	for (unsigned i = 0; i < vol->ndev && !ret; i++) {
		struct dg_dev *d = &vol->devs[i];
		struct dg_dsuper s = vol->sb;
		uint64_t backup = (s.dev_pages - 1) << DG_PAGE_SHIFT;

		s.incompat |= incompat;

		/* A suspect keeps its old superblock until fsck has checked
		 * every page of it: a crash before that must find it
		 * suspect again, not current. */
		if (!d->present || d->suspect || d->filling)
			continue;
		s.dev_index = i;
		memcpy(s.dev_uuid, vol->dev_uuid[i], 16);
		dg_dsuper_seal(&s);
		/* The primary is durable before the backup is written and
		 * each device's superblock before the next one's, so a crash
		 * tears at most one copy of one device's. */
		ret = dg_dev_write(d, 0, &s, sizeof(s));
		if (!ret)
			ret = dg_dev_persist(d, 0, sizeof(s));
		if (!ret)
			ret = dg_dev_write(d, backup, &s, sizeof(s));
		if (!ret)
			ret = dg_dev_persist(d, backup, sizeof(s));
	}
	return ret;
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
