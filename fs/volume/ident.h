/* SPDX-License-Identifier: MIT */
/* ident.h -- which slot each device given to an open really is, when
 * superblocks claim the same slot twice (docs/integrity.md, "Devices
 * that lie about who they are") */
#ifndef DG_IDENT_H
#define DG_IDENT_H

#include <stdbool.h>
#include <stdint.h>

/* One superblock copy's word on who its device is. */
struct dg_ident_id {
	uint32_t index;		/* dev_index */
	uint8_t uuid[16];	/* dev_uuid */
	uint64_t generation;
};

/* One device given to the open (a path that opened and whose
 * superblock belongs to the volume). */
struct dg_ident {
	/* in */
	bool has[2];		/* copy 0 (primary) and 1 (backup) decode
				 * and belong to this volume */
	struct dg_ident_id id[2];
	unsigned pos;		/* its position among the paths */
	/* What the device's own checksum-page copies say: how many of
	 * them verify as the copies slot id[k].index holds (the seals
	 * name the owner device, so a device's content says which slot
	 * wrote it, whatever its superblocks say). */
	unsigned votes[2];
	/* out */
	int use;		/* the copy that names it: 0 or 1 */
	bool torn;		/* its copies name different slots */
	int copy_of;		/* a byte copy of the device at this entry
				 * (same slot, same device UUID): -1 none */
	int fills;		/* a copy: the slot it stands for and is
				 * rebuilt as, -1 when none is free */
};

/*
 * Decide every entry's identity (use), and which entries are copies of
 * another. ndev is the volume's device count.
 *
 * A device whose two copies name different devices (a misdirected
 * superblock write, torn) is the device its own checksum pages vote
 * for; on a tie, the one of the two slots no consistent device claims;
 * else its primary. Devices that still claim one slot with one device
 * UUID are one device and its copies: the highest generation is the
 * device (an older one is a stale copy), then the one whose position
 * is its slot, then the first given. A copy stands for the slot at its
 * own position when no device claims that slot, else for the first
 * unclaimed one. Claims of one slot with different device UUIDs are
 * left as they are (the caller's stale and conflict rules judge them).
 */
void dg_ident_resolve(struct dg_ident *c, unsigned n, unsigned ndev);

/* The slot entry c names (after dg_ident_resolve()). */
static inline unsigned dg_ident_slot(const struct dg_ident *c)
{
	return c->id[c->use].index;
}

#endif /* DG_IDENT_H */
