// SPDX-License-Identifier: MIT
/* vol.c -- assemble devices into a volume (open), sync, close, info */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "csum.h"
#include "ident.h"
#include "probe.h"
#include "super.h"

/* One device path given to dg_vol_open(). */
struct cand {
	const char *path;
	struct dg_dev dev;
	struct dg_dsuper sb;
	bool opened, valid;
	bool blank;		/* an empty file: a rebuild target */
	bool nosuper;		/* opened, no superblock verifies */
	bool found;		/* ... taken as the device its pages name */
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
	       a->dev_pages == b->dev_pages &&
	       /* A crash while a feature set on first use was written
		* leaves devices apart on it alone (format.h). */
	       (a->incompat & ~DG_FEAT_INCOMPAT_ON_USE) ==
		       (b->incompat & ~DG_FEAT_INCOMPAT_ON_USE);
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
	pthread_mutex_init(&vol->blank.lock, NULL);
	pthread_cond_init(&vol->blank.cond, NULL);
	pthread_mutex_init(&vol->epoch_lock, NULL);
	pthread_mutex_init(&vol->cmap_lock, NULL);
	pthread_mutex_init(&vol->cmap_init_lock, NULL);
	pthread_mutex_init(&vol->fault_lock, NULL);
	pthread_mutex_init(&vol->lost_lock, NULL);
	vol->ndev = vol->sb.dev_count;
	vol->parity = vol->sb.parity;
	vol->k = vol->ndev - vol->parity;
	dg_geom_init(vol);
	vol->vpns = vol->sb.rows * vol->k;
	vol->redundancy = !(vol->sb.incompat & DG_FEAT_INCOMPAT_NOREDUNDANCY);
	vol->sealed_journal = vol->redundancy &&
		(vol->sb.incompat & DG_FEAT_INCOMPAT_SEALED_JOURNAL);
	vol->new_rows = vol->redundancy &&
		(vol->sb.incompat & DG_FEAT_INCOMPAT_NEW_ROWS);
	vol->journal_v2 = vol->redundancy &&
		(vol->sb.incompat & DG_FEAT_INCOMPAT_JOURNAL_V2);
	vol->reserved_rows = vol->new_rows &&
		(vol->sb.incompat & DG_FEAT_INCOMPAT_RESERVED_ROWS);
	vol->lean_journal = vol->journal_v2 && vol->sealed_journal &&
		vol->parity &&
		(vol->sb.incompat & DG_FEAT_INCOMPAT_LEAN_JOURNAL);
	vol->copies_together = vol->redundancy && vol->parity == 1 &&
		vol->sb.csum_copies >= 3 && vol->ndev >= vol->sb.csum_copies &&
		(vol->sb.incompat & DG_FEAT_INCOMPAT_COPIES_TOGETHER);
	vol->seed = dg_seed_from_uuid(vol->sb.vol_uuid);
	dg_latch_init(&vol->latch);
	for (unsigned i = 0; i < vol->ndev; i++) {
		vol->devs[i].latch = &vol->latch;
		vol->devs[i].obs = vol->obs;
	}
	return dg_parity_init(vol);
}

static void vol_free(struct dg_vol *vol)
{
	for (unsigned i = 0; i < DG_MAX_DEVS; i++)
		if (vol->devs[i].present)
			dg_dev_close(&vol->devs[i]);
	for (unsigned i = 0; i < vol->nspare; i++)
		free(vol->spare[i]);
	for (unsigned i = 0; i < DG_MAX_DEVS; i++)
		free(vol->missing_why[i]);
	dg_parity_fini(vol);
	dg_alloc_fini(vol);
	dg_cpcache_free(vol);
	dg_cmap_free(vol);
	free(vol->losses);
	free(vol->lost);
	free(vol->gone);
	free(vol->pending);
	free(vol);
}

/*
 * Open every path and read its superblock; the highest generation among
 * valid ones is the reference the others are judged against.
 */
static int probe(struct cand *c, unsigned n, bool rdonly, bool nolock,
		 bool scratch, bool degraded, char *errbuf, size_t errlen,
		 int *refp)
{
	int ret, ref = -1;
	unsigned opened = 0, absent = 0;

	for (unsigned i = 0; i < n; i++) {
		bool backup;

		if (!c[i].path || !*c[i].path)
			continue;
		ret = scratch ? dg_dev_open_scratch(&c[i].dev, c[i].path,
						    errbuf, errlen)
			      : dg_dev_open(&c[i].dev, c[i].path, rdonly,
					    nolock, errbuf, errlen);
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
			/* Blank, a rebuild target; or a device that lost
			 * its superblocks alone (identify_by_pages()). */
			c[i].nosuper = true;
			if (degraded)
				continue;
			snprintf(errbuf, errlen, "'%s' is not a daxguard "
				 "device (no valid superblock)", c[i].path);
			return -ENODEV;
		}
		if (backup)
			dg_log(DG_LOG_WARNING, "'%s': primary superblock bad, "
			       "using the backup", c[i].path);
		c[i].valid = true;
		/* Of equal generations, the one with more features set on
		 * first use: the flag is written before anything uses it,
		 * so the reference that has it is never wrong. */
		if (ref < 0 || c[i].sb.generation > c[ref].sb.generation ||
		    (c[i].sb.generation == c[ref].sb.generation &&
		     (c[i].sb.incompat & ~c[ref].sb.incompat &
		      DG_FEAT_INCOMPAT_ON_USE)))
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

static bool behind(const struct cand *c, const struct dg_dsuper *ref)
{
	/* One behind an interrupted bump (OPENING) is current. */
	return c->sb.generation < ref->generation &&
	       !(c->sb.generation + 1 == ref->generation &&
		 ref->state == DG_STATE_OPENING);
}

/* The paths of the devices behind ref, for a message. */
static const char *stale_names(const struct cand *c, unsigned n,
			       const struct dg_dsuper *ref, char *names,
			       size_t size)
{
	size_t o = 0;

	names[0] = 0;
	for (unsigned i = 0; i < n && o < size; i++)
		if (c[i].sb.magic == DG_SUPER_MAGIC &&
		    !memcmp(c[i].sb.vol_uuid, ref->vol_uuid,
					  16) && behind(&c[i], ref)) {
			int k = snprintf(names + o, size - o, "%s'%s'",
					 o ? ", " : "", c[i].path);

			if (k < 0)
				break;
			o += (size_t)k;
		}
	return names;
}

/* Either superblock copy of a current device valid but behind: the
 * device dropped that superblock write, so it loses writes too. */
static bool copy_behind(const struct cand *c, const struct dg_dsuper *ref)
{
	for (unsigned k = 0; k < 2; k++) {
		uint64_t off = k ? c->dev.size - DG_PAGE_SIZE : 0;
		struct cand t = { 0 };

		if (dg_dsuper_decode(dg_dev_ptr(&c->dev, off), &t.sb) == 0 &&
		    !memcmp(t.sb.vol_uuid, ref->vol_uuid, 16) &&
		    behind(&t, ref))
			return true;
	}
	return false;
}

/*
 * Whether the devices behind the volume's generation are to be used
 * page by page (DG_OPEN_SUSPECT): only when leaving them out would
 * leave more devices missing than parity covers, taking them in brings
 * that back within parity, and no more than parity + 1 devices are
 * known to lose writes (these, those left out, and current devices one
 * of whose superblock copies is behind). Within parity a stale device
 * is left out and rebuilt whole, as before.
 *
 * A stale device is one that lost writes, its superblock updates among
 * them. It never hands back a checksum page newer than the truth, and
 * checksum pages have parity + 2 copies on different devices: with at
 * most parity + 1 devices losing writes, every checksum page keeps its
 * newest copy on a device that did not, so the newest verified copy
 * still decides every page of theirs (integrity.md, "superblock vs
 * device"). With more, every copy of a checksum page may be old and
 * old data would verify: refused, nothing written.
 */
static bool use_suspects(const struct cand *c, unsigned n,
			 const struct dg_dsuper *ref, unsigned flags,
			 unsigned *lagging)
{
	unsigned current = 0, stale = 0, torn = 0;

	*lagging = 0;
	if (!(flags & DG_OPEN_SUSPECT))
		return false;
	for (unsigned i = 0; i < n; i++) {
		if (!c[i].opened || !c[i].valid ||
		    memcmp(c[i].sb.vol_uuid, ref->vol_uuid, 16) ||
		    !same_volume_geometry(&c[i].sb, ref) ||
		    c[i].dev.size < ref->dev_pages * DG_PAGE_SIZE)
			continue;
		if (behind(&c[i], ref)) {
			stale++;
		} else {
			current++;
			torn += copy_behind(&c[i], ref);
		}
	}
	*lagging = ref->dev_count - current + torn;
	return ref->dev_count - current > ref->parity &&
	       ref->dev_count - current - stale <= ref->parity &&
	       *lagging <= ref->parity + 1u;
}

/* ---- who each device is (ident.c) ------------------------------------ */

/* How many of the checksum-page copies that slot keeps verify on dev:
 * their seals name the owner device, so they say which slot wrote the
 * device, whatever its superblocks say. The first few pages of each
 * copy region are enough (the low indexes are written first). */
static unsigned content_votes(struct dg_vol *vol, const struct dg_dev *dev,
			      unsigned slot)
{
	uint64_t most = vol->sb.csum_pages < 8 ? vol->sb.csum_pages : 8;
	unsigned votes = 0;

	for (unsigned c = 0; c < vol->sb.csum_copies; c++)
		for (unsigned owner = 0; owner < vol->ndev; owner++) {
			if (dg_cpage_copy_dev(vol, owner, c) != slot)
				continue;
			for (uint64_t i = 0; i < most; i++) {
				uint64_t off = dg_cpage_copy_page(vol, i, c)
					       << DG_PAGE_SHIFT;

				if (off + DG_PAGE_SIZE <= dev->size &&
				    dg_csum_page_check(vol, owner, i,
					    dg_dev_ptr(dev, off)) == 1)
					votes++;
			}
		}
	return votes;
}

/* Copy k (0 primary, 1 backup) of a candidate's superblock, when it
 * decodes and belongs to the volume of ref. */
static bool read_copy(const struct cand *c, unsigned k,
		      const struct dg_dsuper *ref, struct dg_dsuper *out)
{
	uint64_t off = k ? c->dev.size - DG_PAGE_SIZE : 0;

	return c->dev.size >= 2 * DG_PAGE_SIZE &&
	       dg_dsuper_decode(dg_dev_ptr(&c->dev, off), out) == 0 &&
	       !memcmp(out->vol_uuid, ref->vol_uuid, 16) &&
	       same_volume_geometry(out, ref);
}

/*
 * Two devices that claim one slot (docs/integrity.md, "Devices that lie
 * about who they are"). A device whose primary superblock is another
 * device's (a misdirected write) is taken as the device its backup and
 * its checksum pages name; the open writes its superblocks afresh, as
 * it does after a lost primary. A byte copy of another device (same
 * slot, same device UUID) is not a device of the volume: the slot it
 * stands for is missing, and it is kept as that slot's rebuild target,
 * degraded; without DG_OPEN_DEGRADED the open is refused, naming it.
 */
static int resolve_claims(struct dg_vol *vol, struct cand *c, unsigned n,
			  bool degraded, char *errbuf, size_t errlen)
{
	struct dg_ident id[DG_MAX_DEVS];
	struct dg_dsuper *copy = malloc(2 * DG_MAX_DEVS * sizeof(*copy));
	int map[DG_MAX_DEVS], nid = 0, ret = 0;

	if (!copy)
		return -ENOMEM;
	/* What content_votes() needs before vol_init_core() sets them. */
	vol->ndev = vol->sb.dev_count;
	vol->seed = dg_seed_from_uuid(vol->sb.vol_uuid);
	memset(id, 0, sizeof(id));
	for (unsigned i = 0; i < n; i++) {
		struct dg_ident *e = &id[nid];

		if (!c[i].opened || !c[i].valid)
			continue;
		for (unsigned k = 0; k < 2; k++) {
			struct dg_dsuper *s = &copy[2 * nid + k];

			e->has[k] = read_copy(&c[i], k, &vol->sb, s);
			if (!e->has[k])
				continue;
			e->id[k].index = s->dev_index;
			memcpy(e->id[k].uuid, s->dev_uuid, 16);
			e->id[k].generation = s->generation;
		}
		if (!e->has[0] && !e->has[1])
			continue; /* another volume's: vol_open() says so */
		e->pos = i;
		if (e->has[0] && e->has[1] &&
		    e->id[0].index != e->id[1].index)
			for (unsigned k = 0; k < 2; k++)
				e->votes[k] = content_votes(vol, &c[i].dev,
							    e->id[k].index);
		map[nid++] = (int)i;
	}
	dg_ident_resolve(id, (unsigned)nid, vol->sb.dev_count);

	for (int j = 0; j < nid; j++) {
		struct dg_ident *e = &id[j];
		struct cand *ci = &c[map[j]];

		if (e->torn) {
			unsigned u = (unsigned)e->use, o = !u;

			dg_log(DG_LOG_WARNING, "'%s': its primary superblock "
			       "names device %u, its backup device %u (its "
			       "checksum pages: %u for device %u, %u for device "
			       "%u): taken as device %u, its %s superblock is "
			       "another device's", ci->path, e->id[0].index,
			       e->id[1].index, e->votes[u], e->id[u].index,
			       e->votes[o], e->id[o].index, e->id[u].index,
			       o ? "backup" : "primary");
			ci->sb = copy[2 * j + e->use];
		}
		if (e->copy_of < 0)
			continue;
		{
			const char *orig = c[map[e->copy_of]].path;
			unsigned slot = dg_ident_slot(e);
			char why[1024];

			if (e->fills < 0)
				continue; /* no slot free: the caller's rules */
			/* Short: fsck's finding keeps 160 bytes of it. */
			snprintf(why, sizeof(why), "'%s' is a copy of device %u "
				 "('%s'), not device %d", ci->path, slot, orig,
				 e->fills);
			if (!degraded) {
				snprintf(errbuf, errlen, "%s; device %d is "
					 "missing. Rebuild it onto '%s' with "
					 "fsck.daxguard -y, or open degraded "
					 "(-o degraded) to go on without it",
					 why, e->fills, ci->path);
				ret = -ENXIO;
				break;
			}
			dg_log(DG_LOG_WARNING, "%s: left out (fsck.daxguard "
			       "-y rebuilds device %d onto it)", why, e->fills);
			free(vol->missing_why[e->fills]);
			vol->missing_why[e->fills] = strdup(why); /* or none */
			vol->spare[vol->nspare] = strdup(ci->path);
			if (!vol->spare[vol->nspare]) {
				ret = -ENOMEM;
				break;
			}
			vol->spare_slot[vol->nspare++] = (int8_t)(e->fills + 1);
			dg_dev_close(&ci->dev);
			ci->opened = ci->valid = false;
		}
	}
	free(copy);
	return ret;
}

/* The candidate that holds slot by its superblock, or NULL. */
static const struct cand *holder(const struct cand *c, unsigned n,
				 unsigned slot)
{
	for (unsigned i = 0; i < n; i++)
		if (c[i].opened && c[i].valid && c[i].sb.dev_index == slot)
			return &c[i];
	return NULL;
}

static bool all_zero(const uint8_t *p)
{
	static const uint8_t zero[DG_PAGE_SIZE];

	return !memcmp(p, zero, DG_PAGE_SIZE);
}

/*
 * How many pages of slot on dev hash to the checksums the other devices
 * keep for slot: for the first few indexes, a copy of slot's checksum
 * page that verifies on a device its superblock names, and each page of
 * a row it holds a checksum of. The checksums are seeded by (device,
 * row), so only the slot's own pages match; pages of zeros are left out
 * (zeros written to a file of one device would match zeros where
 * another device lost its pages).
 */
static unsigned page_votes(struct dg_vol *vol, const struct cand *c,
			   unsigned n, const struct dg_dev *dev, unsigned slot)
{
	uint64_t most = vol->sb.csum_pages < 8 ? vol->sb.csum_pages : 8;
	unsigned votes = 0;

	for (uint64_t i = 0; i < most; i++) {
		const struct dg_dcpage *cp = NULL;

		for (unsigned k = 0; k < vol->sb.csum_copies && !cp; k++) {
			const struct cand *h =
				holder(c, n, dg_cpage_copy_dev(vol, slot, k));
			uint64_t off = dg_cpage_copy_page(vol, i, k)
				       << DG_PAGE_SHIFT;

			if (h && off + DG_PAGE_SIZE <= h->dev.size &&
			    dg_csum_page_check(vol, slot, i,
					       dg_dev_ptr(&h->dev, off)) == 1)
				cp = (const void *)dg_dev_ptr(&h->dev, off);
		}
		for (unsigned e = 0; cp && e < DG_CSUMS_PER_PAGE; e++) {
			uint64_t row = i * DG_CSUMS_PER_PAGE + e;
			uint64_t off = dg_row_page(vol, row) << DG_PAGE_SHIFT;
			const uint8_t *pg;

			if (cp->csum[e] == DG_CSUM_NONE ||
			    row >= vol->sb.rows || off + DG_PAGE_SIZE > dev->size)
				continue;
			pg = dg_dev_ptr(dev, off);
			votes += !all_zero(pg) &&
				 dg_csum_page(vol, slot, row, pg) == cp->csum[e];
		}
	}
	return votes;
}

/*
 * Devices no superblock of which verifies, where leaving them out would
 * leave more slots missing than parity covers (DG_OPEN_SUSPECT): a device
 * that lost its superblocks alone -- both copies, as firmware that zeroes
 * ranges of two devices at once does -- is still the device its pages
 * say. Each slot no device claims is weighed by the device's checksum
 * page copies (content_votes()) and by its pages that hash to the
 * checksums the others keep for that slot (page_votes()); a device whose
 * pages name one such slot by far is taken as it: a suspect, used page by
 * page where it verifies, as a stale device is (use_suspects()), with
 * the volume's superblock as its own and a new device UUID, written only
 * once fsck has checked every page of it. At most parity + 1 devices
 * lose writes in all (lagging: the stale, those a superblock copy of
 * which is behind, and every slot no current device holds), as
 * use_suspects() asks; past that, or where the pages name no slot
 * clearly, the device is left out as before. Returns how many were
 * found.
 */
enum { FOUND_MIN_VOTES = 2, FOUND_MARGIN = 4 };

static unsigned identify_by_pages(struct dg_vol *vol, struct cand *c,
				  unsigned n, unsigned lagging)
{
	uint32_t claimed = 0;
	unsigned found = 0, unclaimed;

	for (unsigned i = 0; i < n; i++)
		if (c[i].opened && c[i].valid &&
		    c[i].sb.dev_index < vol->sb.dev_count)
			claimed |= 1u << c[i].sb.dev_index;
	/* Within parity a device without a superblock is left out and
	 * rebuilt whole, as before: a rebuild cut short leaves its target
	 * so, pages and all, and the next rebuild must take it again. */
	unclaimed = vol->sb.dev_count - (unsigned)__builtin_popcount(claimed);
	if (unclaimed <= vol->sb.parity || lagging > vol->sb.parity + 1u)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		int slot = -1;
		unsigned best = 0, second = 0;

		if (!c[i].opened || !c[i].nosuper ||
		    c[i].dev.size < vol->sb.dev_pages * DG_PAGE_SIZE)
			continue;
		for (unsigned s = 0; s < vol->sb.dev_count; s++) {
			unsigned v;

			if (claimed & (1u << s))
				continue;
			v = content_votes(vol, &c[i].dev, s) +
			    page_votes(vol, c, n, &c[i].dev, s);
			if (v > best) {
				second = best;
				best = v;
				slot = (int)s;
			} else if (v > second) {
				second = v;
			}
		}
		/* Pages of equal bytes at one row of two devices (metadata
		 * alike on both) vote for the other slot too: the slot
		 * must win by far, on more than one page. Taken wrongly,
		 * a device would be repaired into another's place. */
		if (slot < 0 || best < FOUND_MIN_VOTES ||
		    best < FOUND_MARGIN * second) {
			if (best)
				dg_log(DG_LOG_WARNING, "'%s': no superblock "
				       "verifies, and its pages do not say "
				       "clearly which device it is (%u for "
				       "device %d, %u for another): left out",
				       c[i].path, best, slot, second);
			continue;
		}
		dg_log(DG_LOG_WARNING, "'%s': no superblock verifies, but %u "
		       "of its pages are device %u's: taken as device %u, "
		       "used page by page where it verifies until fsck has "
		       "checked it", c[i].path, best, slot, slot);
		c[i].sb = vol->sb;
		c[i].sb.dev_index = (uint32_t)slot;
		dg_uuid_new(c[i].sb.dev_uuid);
		c[i].valid = c[i].found = true;
		c[i].nosuper = false;
		claimed |= 1u << slot;
		found++;
	}
	return found;
}

/*
 * A degraded volume takes writes only when asked (DG_OPEN_DEGRADED_RW)
 * and when parity can carry the missing pages. A journal copy is always
 * left: there are at least parity + 1 copies on distinct devices.
 */
static bool degraded_writable(const struct dg_vol *vol, unsigned flags)
{
	return (flags & DG_OPEN_DEGRADED_RW) && vol->sb.parity > 0 &&
	       !(vol->sb.incompat & DG_FEAT_INCOMPAT_NOREDUNDANCY);
}

static int vol_open(const char *const *paths, unsigned n, unsigned flags,
		    const struct dg_media_observer *obs, dg_chk_ask_fn ask,
		    void *ask_arg, struct dg_vol **volp, char *errbuf,
		    size_t errlen);

/* Why a write of the open failed: the latch's reason (which persist, on
 * which device) when it is set, else the error. */
static const char *failure(struct dg_vol *vol, int ret, char why[160])
{
	dg_latch_why(&vol->latch, why, 160);
	return why[0] ? why : strerror(-ret);
}

int dg_vol_open(const char *const *paths, unsigned n, unsigned flags,
		struct dg_vol **volp, char *errbuf, size_t errlen)
{
	return vol_open(paths, n, flags, NULL, NULL, NULL, volp, errbuf,
			errlen);
}

int dg_vol_open_observed(const char *const *paths, unsigned n,
			 unsigned flags, const struct dg_media_observer *obs,
			 struct dg_vol **volp, char *errbuf, size_t errlen)
{
	return vol_open(paths, n, flags, obs, NULL, NULL, volp, errbuf,
			errlen);
}

int dg_vol_open_asking(const char *const *paths, unsigned n, unsigned flags,
		       dg_chk_ask_fn ask, void *arg, struct dg_vol **volp,
		       char *errbuf, size_t errlen)
{
	return vol_open(paths, n, flags, NULL, ask, arg, volp, errbuf,
			errlen);
}

static int vol_open(const char *const *paths, unsigned n, unsigned flags,
		    const struct dg_media_observer *obs, dg_chk_ask_fn ask,
		    void *ask_arg, struct dg_vol **volp, char *errbuf,
		    size_t errlen)
{
	bool rdonly = flags & (DG_OPEN_RDONLY | DG_OPEN_NOLOCK);
	bool degraded = flags & DG_OPEN_DEGRADED;
	struct cand c[DG_MAX_DEVS];
	struct dg_vol *vol = NULL;
	char ubuf[2][37], dummy[1], names[1024], why[160];
	unsigned missing = 0, nsuspect = 0, lagging;
	bool suspects;
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
	vol->obs = obs;
	dg_vol_set_consent(vol, ask, ask_arg);
	/* A device without a superblock may yet be found by its pages
	 * (DG_OPEN_SUSPECT): refused below unless it is. */
	ret = probe(c, n, rdonly, flags & DG_OPEN_NOLOCK,
		    flags & DG_OPEN_SCRATCH,
		    degraded || (flags & DG_OPEN_SUSPECT), errbuf, errlen,
		    &ref);
	if (ret)
		goto fail;
	vol->sb = c[ref].sb;
	if (vol->sb.dev_count < n)
		FAIL(-EINVAL, "%u devices given but the volume has %u", n,
		     vol->sb.dev_count);
	ret = resolve_claims(vol, c, n, degraded, errbuf, errlen);
	if (ret)
		goto fail;
	suspects = use_suspects(c, n, &vol->sb, flags, &lagging);
	/* lagging counts the devices without a superblock as not current:
	 * found, they stay so. */
	if (flags & DG_OPEN_SUSPECT)
		identify_by_pages(vol, c, n, lagging);
	for (unsigned i = 0; i < n && !degraded; i++)
		if (c[i].opened && c[i].nosuper)
			FAIL(-ENODEV, "'%s' is not a daxguard device (no "
			     "valid superblock)", c[i].path);

	for (unsigned i = 0; i < n; i++) {
		struct dg_dsuper *s = &c[i].sb;
		unsigned idx = s->dev_index;

		if (c[i].blank && degraded)
			vol->spare[vol->nspare++] = strdup(c[i].path);
		if (!c[i].opened)
			continue;
		if (c[i].valid &&
		    memcmp(s->vol_uuid, vol->sb.vol_uuid, 16)) {
			dg_uuid_format(s->vol_uuid, ubuf[0]);
			dg_uuid_format(vol->sb.vol_uuid, ubuf[1]);
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
		} else if (c[i].valid && s->generation < vol->sb.generation &&
			   suspects) {
			dg_log(DG_LOG_WARNING, "'%s' is stale (generation "
			       "%llu < %llu): used page by page where it "
			       "verifies", c[i].path,
			       (unsigned long long)s->generation,
			       (unsigned long long)vol->sb.generation);
			c[i].dev.suspect = true;
			nsuspect++;
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
		if (c[i].found) {
			c[i].dev.suspect = c[i].dev.found = true;
			nsuspect++;
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
	if (missing > vol->sb.parity && (flags & DG_OPEN_SUSPECT) &&
	    lagging > vol->sb.parity + 1u)
		FAIL(-ENXIO, "%u of %u devices missing or unusable (%s) and "
		     "%u lost writes, more than the checksum copies can "
		     "arbitrate (parity + 1 = %u): their pages cannot be told "
		     "current from old, so they are not used; nothing was "
		     "written. Put back a current copy of one of them, or "
		     "restore the volume from a backup", missing,
		     vol->sb.dev_count, stale_names(c, n, &vol->sb, names,
						    sizeof(names)),
		     lagging, vol->sb.parity + 1);
	if (missing > vol->sb.parity)
		FAIL(-ENXIO, "%u of %u devices missing or unusable; parity "
		     "covers %u", missing, vol->sb.dev_count, vol->sb.parity);
	if (missing && !degraded)
		FAIL(-ENXIO, "%u of %u devices missing (mask %#x); open "
		     "degraded to go on", missing, vol->sb.dev_count,
		     vol->missing_mask);
	vol->degraded = missing > 0;
	/* Degraded volumes are read-only until the device is rebuilt,
	 * unless asked for writes (DG_OPEN_DEGRADED_RW: apply.c keeps the
	 * missing pages recoverable); one with suspects until fsck has
	 * checked them. */
	vol->read_only = rdonly ||
			 (vol->degraded && !degraded_writable(vol, flags)) ||
			 (nsuspect && !(flags & DG_OPEN_REPAIR));
	if (vol->sb.ro_compat & ~DG_FEAT_RO_COMPAT_SUPPORTED) {
		/* format.h: unknown ro_compat features allow reading only. */
		dg_log(DG_LOG_WARNING, "unknown read-only compatible features "
		       "%#llx: read-only", (unsigned long long)vol->sb.ro_compat);
		vol->read_only = true;
	}
	if (vol->degraded)
		dg_log(DG_LOG_WARNING, "volume degraded: %u of %u devices "
		       "missing (mask %#x), %s", missing,
		       vol->sb.dev_count, vol->missing_mask,
		       vol->read_only ? "read-only"
				      : "read-write: parity keeps their pages "
					"until they are rebuilt");

	vol->found_dirty = vol->sb.state != DG_STATE_CLEAN;
	ret = vol_init_core(vol);
	if (ret)
		FAIL(ret, "out of memory");
	if (!vol->read_only) {
		vol->sb.mtime = (uint64_t)time(NULL);
		ret = dg_super_new_epoch(vol);
		if (ret)
			FAIL(ret, "cannot write the superblocks: %s (nothing "
			     "else was written)", failure(vol, ret, why));
	}
	/* Checksum pages are written from here on (journal replay). */
	dg_gen_init(vol);
	if (vol->redundancy) {
		ret = dg_cmap_load(vol);
		if (ret)
			FAIL(ret, "checksum init map: %s",
			     failure(vol, ret, why));
	}
	ret = dg_journal_open(vol, !vol->read_only &&
					   !(flags & DG_OPEN_NORECOVER));
	if (ret == -ENXIO && vol->degraded) {
		/* Every journal device is gone: the data stands as of the
		 * last checkpoint; a rebuild (fsck) writes a fresh
		 * journal. */
		dg_log(DG_LOG_WARNING, "every journal copy missing: "
		       "unreplayed updates, if any, are lost");
		ret = 0;
	}
	/* A replay whose writes could not be made durable (media.h) has
	 * retired nothing: the journal still holds every update, for the
	 * next open to redo. */
	if (ret && dg_latch_on(&vol->latch))
		FAIL(ret, "journal replay failed, the journal is kept for the "
		     "next open: %s", failure(vol, ret, why));
	if (ret)
		FAIL(ret, "journal: %s", strerror(-ret));
	if (dg_journal_dirty(vol) && vol->read_only)
		dg_log(DG_LOG_WARNING, "journal holds updates that a "
		       "read-only open does not replay");
	ret = (flags & DG_OPEN_FORMAT) ? 0 : dg_alloc_load(vol);
	if (ret)
		FAIL(ret, "volume root or allocation bitmap unreadable: %s",
		     strerror(-ret));
	/* A repair on the way (read-repair of the root, say) may have
	 * failed: a volume that cannot write is not handed out as
	 * writable. */
	if (dg_latch_on(&vol->latch))
		FAIL(vol->latch.err ? vol->latch.err : -EIO, "%s; the journal "
		     "is kept for the next open", failure(vol, -EIO, why));
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

int dg_vol_accept_suspects(struct dg_vol *vol)
{
	int n = 0;

	if (vol->read_only)
		return -EROFS;
	for (unsigned d = 0; d < vol->ndev; d++)
		if (vol->devs[d].present && vol->devs[d].suspect) {
			vol->devs[d].suspect = false;
			n++;
		}
	if (n) {
		int ret = dg_write_supers(vol);

		if (ret)
			return ret;
	}
	return n;
}

int dg_vol_close(struct dg_vol *vol)
{
	int ret = 0;

	if (!vol)
		return 0;
	/* Before the checkpoint: the blanker writes rows. */
	if (vol->blank.halt)
		vol->blank.halt(vol);
	/* A replace not finished lets go of its new device; its record
	 * resumes it at the next open. */
	if (vol->repl_abort)
		vol->repl_abort(vol);
	if (!vol->read_only && !dg_latch_on(&vol->latch)) {
		/* Clean only once every entry is retired: a failure leaves
		 * the volume dirty and the journal for the next open. */
		ret = dg_journal_checkpoint(vol);
		/* Entries a rebuild left unreplayed (journal.c) keep it
		 * dirty: the next open redoes them. */
		vol->sb.state = dg_journal_dirty(vol) ? DG_STATE_DIRTY
						      : DG_STATE_CLEAN;
		if (!ret)
			ret = dg_write_supers(vol);
	} else if (!vol->read_only) {
		/* A persist failed earlier: the volume stays dirty, and the
		 * caller must not call it closed cleanly. */
		ret = vol->latch.err ? vol->latch.err : -EIO;
	}
	dg_journal_close(vol);
	vol_free(vol);
	return ret;
}

int dg_vol_sync(struct dg_vol *vol)
{
	int ret;

	if (vol->read_only)
		return 0;
	/* After a failed persist nothing is known durable: say so, as
	 * fsync(2) does after a write-back error. */
	if (dg_latch_on(&vol->latch))
		return -EIO;
	ret = dg_journal_checkpoint(vol);
	return !ret && dg_latch_on(&vol->latch) ? -EIO : ret;
}

void dg_vol_get_info(struct dg_vol *vol, struct dg_vol_info *info)
{
	/* A SIGBUS on a device's mapping latches the volume when it is
	 * next looked at (media.h); a status looks at every device. A
	 * replace's attach, finish and abort swap and close devs[] with
	 * every row lock held (replace.c hold_all()): one of them, shared,
	 * keeps the device and its path while they are looked at. */
	pthread_rwlock_rdlock(&vol->row_locks[0]);
	for (unsigned d = 0; d < vol->ndev; d++)
		if (vol->devs[d].present)
			(void)dg_dev_fault_check(&vol->devs[d]);
	pthread_rwlock_unlock(&vol->row_locks[0]);
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
	info->read_only = vol->read_only || dg_latch_on(&vol->latch);
	dg_latch_why(&vol->latch, info->failed, sizeof(info->failed));
	info->missing_mask = vol->missing_mask;
	for (unsigned d = 0; d < vol->ndev; d++)
		if (vol->devs[d].present && vol->devs[d].suspect) {
			info->suspect_mask |= 1u << d;
			if (vol->devs[d].found)
				info->found_mask |= 1u << d;
		}
	info->chunk_pages = vol->sb.chunk_pages;
	info->dev_pages = vol->sb.dev_pages;
	info->rows = vol->sb.rows;
	info->vpns = vol->vpns;
	info->free_vpns = dg_free_vpns(vol);
	info->generation = vol->sb.generation;
	info->csum_pages = vol->sb.csum_pages;
	info->jrnl_pages = vol->sb.jrnl_pages;
	info->cmap_start = vol->redundancy ? vol->sb.cmap_start : 0;
	info->cmap_pages = vol->redundancy ? vol->sb.cmap_pages : 0;
	pthread_mutex_lock(&vol->alloc_lock);
	/* zone_vpns == meta_vpns without a zone: report none */
	info->zone_vpns = vol->sb.incompat & DG_FEAT_INCOMPAT_META_ZONE
				  ? vol->zone_vpns : 0;
	info->zone_free = info->zone_vpns ? vol->zone_free : 0;
	info->meta_spill = vol->meta_spill;
	info->rows_full = vol->rows_full;
	info->rows_patched = vol->rows_patched;
	info->rows_new = vol->rows_new;
	info->rows_lone = vol->rows_lone;
	info->holes_filled = vol->holes_filled;
	info->rows_blanked = vol->blank.rows;
	info->blank_dropped = vol->blank.dropped;
	info->updates_split = vol->updates_split;
	info->appends_waited = __atomic_load_n(&vol->jrnl.appends_waited,
					       __ATOMIC_RELAXED);
	info->appends_grouped = __atomic_load_n(&vol->jrnl.appends_grouped,
						__ATOMIC_RELAXED);
	info->ditto_copies = vol->sb.ditto_copies;
	pthread_mutex_unlock(&vol->alloc_lock);
	pthread_mutex_lock(&vol->blank.lock);
	info->blank_pending = vol->blank.pending;
	pthread_mutex_unlock(&vol->blank.lock);
}

void dg_vol_media_counts(struct dg_vol *vol, struct dg_media_counts *total,
			 struct dg_media_counts *per_dev)
{
	memset(total, 0, sizeof(*total));
	for (unsigned d = 0; d < vol->ndev; d++) {
		struct dg_media_counts c = { 0 };

		if (vol->devs[d].present)
			dg_dev_counts(&vol->devs[d], &c);
		dg_media_counts_add(total, &c);
		if (per_dev)
			per_dev[d] = c;
	}
}

void dg_vol_set_observer(struct dg_vol *vol,
			 const struct dg_media_observer *obs)
{
	vol->obs = obs;
	for (unsigned i = 0; i < vol->ndev; i++)
		vol->devs[i].obs = obs;
}
