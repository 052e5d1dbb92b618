// SPDX-License-Identifier: MIT
/* ident.c -- which slot each device given to an open really is (the
 * rules are in ident.h; the reasons in docs/integrity.md) */
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ident.h"
#include "volume_i.h" /* dg_uuid_new() */

static bool same_device(const struct dg_ident_id *a,
			const struct dg_ident_id *b)
{
	return a->index == b->index && !memcmp(a->uuid, b->uuid, 16);
}

static const struct dg_ident_id *named(const struct dg_ident *c)
{
	return &c->id[c->use];
}

/* A torn entry: which of its two copies names it. */
static int pick_copy(const struct dg_ident *c, uint32_t firm)
{
	uint32_t a = 1u << c->id[0].index, b = 1u << c->id[1].index;

	/* Its content first: a misdirected superblock moves one page, the
	 * checksum pages it wrote as its slot stay. */
	if (c->votes[0] != c->votes[1])
		return c->votes[1] > c->votes[0];
	/* Then its peers: a slot another device holds consistently is not
	 * this one's, and a slot nobody holds is. */
	if ((firm & a) && !(firm & b))
		return 1;
	return 0;
}

/* Whether entry i, rather than j, is the device of their slot; both
 * name the same device. */
static bool original_first(const struct dg_ident *c, unsigned i, unsigned j)
{
	const struct dg_ident_id *a = named(&c[i]), *b = named(&c[j]);

	if (a->generation != b->generation)
		return a->generation > b->generation;
	if ((c[i].pos == a->index) != (c[j].pos == b->index))
		return c[i].pos == a->index;
	return c[i].pos < c[j].pos;
}

void dg_ident_resolve(struct dg_ident *c, unsigned n, unsigned ndev)
{
	uint32_t firm = 0, held = 0, all = ndev >= 32 ? ~0u : (1u << ndev) - 1;

	for (unsigned i = 0; i < n; i++) {
		c[i].copy_of = -1;
		c[i].fills = -1;
		/* Copies that name one slot with two device UUIDs are a
		 * rebuild cut between its two superblock writes: the
		 * primary, written first, is the newer. */
		c[i].torn = c[i].has[0] && c[i].has[1] &&
			    c[i].id[0].index != c[i].id[1].index;
		c[i].use = c[i].has[0] ? 0 : 1;
		if (!c[i].torn && c[i].id[c[i].use].index < ndev)
			firm |= 1u << c[i].id[c[i].use].index;
	}
	for (unsigned i = 0; i < n; i++)
		if (c[i].torn)
			c[i].use = pick_copy(&c[i], firm);

	/* One device named twice: keep the original, mark the copy. */
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < i && c[i].copy_of < 0; j++) {
			unsigned orig, copy;

			if (c[j].copy_of >= 0 ||
			    !same_device(named(&c[i]), named(&c[j])))
				continue;
			orig = original_first(c, i, j) ? i : j;
			copy = orig == i ? j : i;
			c[copy].copy_of = (int)orig;
		}
	}

	/* The slots copies stand for: none that a device holds. */
	for (unsigned i = 0; i < n; i++)
		if (c[i].copy_of < 0 && dg_ident_slot(&c[i]) < ndev)
			held |= 1u << dg_ident_slot(&c[i]);
	for (unsigned i = 0; i < n; i++) {
		uint32_t free_slots = all & ~held;

		if (c[i].copy_of < 0 || !free_slots)
			continue;
		if (c[i].pos < ndev && (free_slots & (1u << c[i].pos)))
			c[i].fills = (int)c[i].pos;
		else
			c[i].fills = __builtin_ctz(free_slots);
		held |= 1u << c[i].fills;
	}
}

void dg_uuid_new(uint8_t u[16])
{
	if (getrandom(u, 16, 0) != 16) {
		uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)getpid();

		memcpy(u, &t, 8);
		memcpy(u + 8, &u, 8);
	}
	u[6] = (u[6] & 0x0f) | 0x40; /* RFC 4122 version 4 */
	u[8] = (u[8] & 0x3f) | 0x80;
}
