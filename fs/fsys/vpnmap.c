// SPDX-License-Identifier: MIT
/* vpnmap.c -- the class and owner of each vpn, stored sparsely
 *
 * A walk of the structures (check_fs.c) gives each vpn some structure
 * uses a class and an owning inode. A dense array of both costs 9
 * bytes per vpn of the volume, used or not (36 GB for 16 x 1 TiB), so
 * they live in leaves of DG_VPNMAP_LEAF vpns, allocated when a leaf
 * gets its first used vpn; a missing leaf reads as free, owner 0. The
 * cost is the directory (a pointer per leaf, 8 bytes per 16 MiB of
 * volume) and one leaf (36 KiB) per leaf that holds a used vpn.
 */
#include <errno.h>
#include <stdlib.h>

#include "fscheck.h"

struct leaf {
	uint8_t cls[DG_VPNMAP_LEAF];
	uint64_t owner[DG_VPNMAP_LEAF];
};

struct dg_vpnmap {
	uint64_t vpns;
	uint64_t nleaves;	/* slots in dir */
	uint64_t allocated;	/* leaves allocated */
	struct leaf **dir;
};

struct dg_vpnmap *dg_vpnmap_new(uint64_t vpns)
{
	struct dg_vpnmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->vpns = vpns;
	m->nleaves = (vpns + DG_VPNMAP_LEAF - 1) / DG_VPNMAP_LEAF;
	m->dir = calloc(m->nleaves ? m->nleaves : 1, sizeof(*m->dir));
	if (!m->dir) {
		free(m);
		return NULL;
	}
	return m;
}

void dg_vpnmap_free(struct dg_vpnmap *m)
{
	if (!m)
		return;
	for (uint64_t i = 0; i < m->nleaves; i++)
		free(m->dir[i]);
	free(m->dir);
	free(m);
}

static const struct leaf *leaf_of(const struct dg_vpnmap *m, uint64_t v)
{
	return v < m->vpns ? m->dir[v / DG_VPNMAP_LEAF] : NULL;
}

uint8_t dg_vpnmap_cls(const struct dg_vpnmap *m, uint64_t v)
{
	const struct leaf *l = leaf_of(m, v);

	return l ? l->cls[v % DG_VPNMAP_LEAF] : DG_PC_FREE;
}

uint64_t dg_vpnmap_owner(const struct dg_vpnmap *m, uint64_t v)
{
	const struct leaf *l = leaf_of(m, v);

	return l ? l->owner[v % DG_VPNMAP_LEAF] : 0;
}

int dg_vpnmap_set(struct dg_vpnmap *m, uint64_t v, uint8_t cls,
		  uint64_t owner)
{
	struct leaf **l;

	if (v >= m->vpns)
		return -EINVAL;
	l = &m->dir[v / DG_VPNMAP_LEAF];
	if (!*l) {
		if (cls == DG_PC_FREE && !owner)
			return 0;	/* what a missing leaf reads as */
		*l = calloc(1, sizeof(**l));
		if (!*l)
			return -ENOMEM;
		m->allocated++;
	}
	(*l)->cls[v % DG_VPNMAP_LEAF] = cls;
	(*l)->owner[v % DG_VPNMAP_LEAF] = owner;
	return 0;
}

uint64_t dg_vpnmap_next(const struct dg_vpnmap *m, uint64_t v)
{
	uint64_t i = v / DG_VPNMAP_LEAF;

	if (v >= m->vpns)
		return m->vpns;
	if (m->dir[i])
		return v;
	while (++i < m->nleaves)
		if (m->dir[i])
			return i * DG_VPNMAP_LEAF;
	return m->vpns;
}

uint64_t dg_vpnmap_leaves(const struct dg_vpnmap *m)
{
	return m->allocated;
}
