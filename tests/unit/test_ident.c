// SPDX-License-Identifier: MIT
/* test_ident.c -- which slot each device given to an open really is
 * (ident.c): misdirected superblocks, byte copies, stale copies */
#include <string.h>

#include "harness.h"
#include "ident.h"

/* Device d of the volume, its superblocks saying so, at generation gen,
 * given at position pos. */
static struct dg_ident dev(unsigned d, uint64_t gen, unsigned pos)
{
	struct dg_ident e;

	memset(&e, 0, sizeof(e));
	for (unsigned k = 0; k < 2; k++) {
		e.has[k] = true;
		e.id[k].index = d;
		memset(e.id[k].uuid, 0xa0 + (int)d, 16);
		e.id[k].generation = gen;
	}
	e.pos = pos;
	return e;
}

/* Copy k of e says it is device d (a misdirected superblock write). */
static void names(struct dg_ident *e, unsigned k, unsigned d)
{
	e->id[k].index = d;
	memset(e->id[k].uuid, 0xa0 + (int)d, 16);
}

/* Four consistent devices: nothing to decide. */
static void test_consistent(void)
{
	struct dg_ident c[4];

	for (unsigned i = 0; i < 4; i++)
		c[i] = dev(i, 5, i);
	dg_ident_resolve(c, 4, 4);
	for (unsigned i = 0; i < 4; i++) {
		CHECK_EQ(dg_ident_slot(&c[i]), i);
		CHECK_EQ(c[i].copy_of, -1);
		CHECK(!c[i].torn);
	}
}

/* Device 1's primary is device 3's: its backup says 1, and device 3
 * holds slot 3 consistently, so it is device 1 (the peers' claims),
 * also with its content saying nothing. */
static void test_misdirected_primary(void)
{
	struct dg_ident c[4];

	for (unsigned i = 0; i < 4; i++)
		c[i] = dev(i, 5, i);
	names(&c[1], 0, 3);
	dg_ident_resolve(c, 4, 4);
	CHECK(c[1].torn);
	CHECK_EQ(c[1].use, 1);
	CHECK_EQ(dg_ident_slot(&c[1]), 1);
	CHECK_EQ(c[1].copy_of, -1);
	CHECK_EQ(c[3].copy_of, -1);
	CHECK_EQ(dg_ident_slot(&c[3]), 3);
}

/* The same, device 3 absent: no peer holds either slot, the content
 * decides (its checksum pages were sealed as device 1's). */
static void test_misdirected_content_decides(void)
{
	struct dg_ident c[3] = { dev(0, 5, 0), dev(1, 5, 1), dev(2, 5, 2) };

	names(&c[1], 0, 3);
	c[1].votes[0] = 0;	/* as device 3 */
	c[1].votes[1] = 12;	/* as device 1 */
	dg_ident_resolve(c, 3, 4);
	CHECK_EQ(dg_ident_slot(&c[1]), 1);
	/* And the other way: the backup was the misdirected one. */
	c[1] = dev(1, 5, 1);
	names(&c[1], 1, 3);
	c[1].votes[0] = 12;
	c[1].votes[1] = 0;
	dg_ident_resolve(c, 3, 4);
	CHECK_EQ(dg_ident_slot(&c[1]), 1);
	CHECK_EQ(c[1].use, 0);
}

/* Position 1 holds a byte copy of device 3: it is the copy (device 3
 * sits at its own position), and stands for slot 1. */
static void test_byte_copy(void)
{
	struct dg_ident c[4] = { dev(0, 5, 0), dev(3, 5, 1), dev(2, 5, 2),
				 dev(3, 5, 3) };

	dg_ident_resolve(c, 4, 4);
	CHECK_EQ(c[1].copy_of, 3);
	CHECK_EQ(c[1].fills, 1);
	CHECK_EQ(c[3].copy_of, -1);
	/* Given in another order: still the one off its position. */
	{
		struct dg_ident d[4] = { dev(3, 5, 0), dev(0, 5, 1),
					 dev(2, 5, 2), dev(3, 5, 3) };

		dg_ident_resolve(d, 4, 4);
		CHECK_EQ(d[0].copy_of, 3);
		CHECK_EQ(d[3].copy_of, -1);
		CHECK_EQ(d[0].fills, 1); /* the slot nobody holds */
	}
}

/* An older byte copy loses to the current device wherever it is. */
static void test_stale_copy(void)
{
	struct dg_ident c[4] = { dev(0, 7, 0), dev(1, 7, 1), dev(2, 7, 2),
				 dev(2, 6, 3) };

	dg_ident_resolve(c, 4, 4);
	CHECK_EQ(c[3].copy_of, 2);
	CHECK_EQ(c[3].fills, 3);
	CHECK_EQ(c[2].copy_of, -1);
	{
		struct dg_ident d[2] = { dev(0, 6, 0), dev(0, 7, 1) };

		dg_ident_resolve(d, 2, 2);
		CHECK_EQ(d[0].copy_of, 1);
		CHECK_EQ(d[0].fills, 1);
	}
}

/* Two devices of one slot with different device UUIDs (an old device
 * of a replaced slot): not copies; the open's stale rule judges. */
static void test_different_uuids_left_alone(void)
{
	struct dg_ident c[2] = { dev(0, 7, 0), dev(1, 7, 1) };

	names(&c[1], 0, 0);
	names(&c[1], 1, 0);
	memset(c[1].id[0].uuid, 0x11, 16);
	memset(c[1].id[1].uuid, 0x11, 16);
	dg_ident_resolve(c, 2, 2);
	CHECK_EQ(c[0].copy_of, -1);
	CHECK_EQ(c[1].copy_of, -1);
}

/* Only a backup decodes: it names the device. */
static void test_backup_only(void)
{
	struct dg_ident c[2] = { dev(0, 7, 0), dev(1, 7, 1) };

	c[1].has[0] = false;
	names(&c[1], 0, 0); /* garbage in a copy that does not decode */
	dg_ident_resolve(c, 2, 2);
	CHECK(!c[1].torn);
	CHECK_EQ(c[1].use, 1);
	CHECK_EQ(dg_ident_slot(&c[1]), 1);
	CHECK_EQ(c[1].copy_of, -1);
}

/* Copies of one slot with two device UUIDs (a rebuild cut between its
 * two superblock writes): not torn, the primary names it. */
static void test_uuid_change_not_torn(void)
{
	struct dg_ident c[2] = { dev(0, 7, 0), dev(1, 7, 1) };

	memset(c[1].id[1].uuid, 0x33, 16);
	dg_ident_resolve(c, 2, 2);
	CHECK(!c[1].torn);
	CHECK_EQ(c[1].use, 0);
	CHECK_EQ(dg_ident_slot(&c[1]), 1);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "consistent", test_consistent },
		{ "misdirected_primary", test_misdirected_primary },
		{ "misdirected_content_decides",
		  test_misdirected_content_decides },
		{ "byte_copy", test_byte_copy },
		{ "stale_copy", test_stale_copy },
		{ "different_uuids_left_alone",
		  test_different_uuids_left_alone },
		{ "backup_only", test_backup_only },
		{ "uuid_change_not_torn", test_uuid_change_not_torn },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
