/* SPDX-License-Identifier: MIT */
/* format.h -- every on-media structure of a daxguard volume */
#ifndef DG_FORMAT_H
#define DG_FORMAT_H

#include <stdint.h>
#include <stddef.h>

/*
 * OVERVIEW
 *
 * A volume is 1..16 devices of equal geometry. All integers are little
 * endian; all offsets are in pages of DG_PAGE_SIZE bytes from the start
 * of the device. Every device has the same layout:
 *
 *   page 0                  struct dg_dsuper, primary copy
 *   [cmap_start, +2 * cmap_pages)  checksum-page init map, two slots
 *                           (on every device)
 *   [jrnl_start, +jrnl_pages)  journal area (used on the journal devices,
 *                           reserved on the others so that rows line up)
 *   [csum_start, +csum_copies * csum_pages)  checksum page copies: region
 *                           c holds copy c of the checksum pages of
 *                           device (dev + ndev - c) % ndev
 *   [ditto_start, ...)      ditto copies of the metadata zone
 *                           (vpns [0, ditto_pages)); see "Metadata zone"
 *   [data_start, +rows)     data rows
 *   dev_pages - 1           struct dg_dsuper, backup copy
 *
 * Rows and columns. Row r of the volume is page data_start + r on every
 * device. With parity P > 0, P pages of each row hold parity of the other
 * K = ndev - P pages. The parity position rotates per chunk of
 * chunk_pages rows (RAID-5 left-symmetric style), so a run of data pages
 * within one chunk stays contiguous on one device:
 *
 *   chunk c = r / chunk_pages
 *   first parity device  p0 = ndev - 1 - (c % ndev)
 *   parity j (0..P-1) lives on device (p0 + j) % ndev
 *   data devices are the others; data rank i (0..K-1) in device order
 *   P = XOR of the data; Q = sum over i of g^i * D_i in GF(2^8), g = 2
 *   (ISA-L gf_gen_rs_matrix rows k and k+1).
 *
 * Volume page numbers (vpn) address the data pages only, chunk-major:
 *   vpn = (c * K + i) * chunk_pages + (r % chunk_pages)
 * so vpns within one chunk-sized aligned run are contiguous on one device.
 *
 * Checksums. Each page of the data rows (data and parity
 * alike) has a 64-bit XXH3 checksum seeded with the volume seed, the
 * device index and the page number, so a page read from or written to the
 * wrong address fails verification. The checksum of row r on device d
 * ("owner" d) is slot r % DG_CSUMS_PER_PAGE of checksum page
 * i = r / DG_CSUMS_PER_PAGE of d (struct dg_dcpage).
 *
 * Freshness (docs/integrity.md). A device that silently drops writes can
 * return an older data page together with the older checksum page that
 * matches it, so agreement on one device proves nothing. Every checksum
 * page therefore has csum_copies copies on as many different devices
 * (parity + 2 where there are that many devices, never fewer than 2;
 * a one-device volume keeps both on its device):
 * copy c of (d, i) is page csum_start + c * csum_pages + i of device
 * (d + c) % ndev. Each copy carries a generation, drawn from a counter
 * that only grows over the volume's life (dg_dsuper.generation <<
 * DG_GEN_SHIFT | writes since the open, dg_gen_base()), and a seal
 * seeded with (d, i). The copy with
 * the highest generation whose seal verifies is the checksum page;
 * every other copy is stale or damaged and is rewritten from it. Data
 * that matches only an older copy is rebuilt from parity.
 *
 * Never-written pages need no initialisation. A checksum value of 0
 * (DG_CSUM_NONE) in a verified checksum page means "never written": the
 * page reads as zeros and its media contents are ignored, in parity as
 * everywhere else. A computed checksum of 0 is stored as 1. Checksum
 * pages themselves are written lazily: the init map (struct
 * dg_dcmap, one bit per checksum page index, a copy on every device)
 * says which indexes have had their checksum pages written, sealed, on
 * every device. A bit is set only after those pages are durable and is
 * never cleared, so the union of the verified map copies is the truth.
 * (A bit may reach the media a round after its pages, no other round
 * touching them meanwhile: docs/design.md, "A new index in the update's
 * rounds". Its two slots are written one at a time, a write to one slot
 * or both.)
 * A checksum page whose index is set in the map and of which no copy
 * verifies is damage (its pages give EIO), never "never written".
 *
 * Journal. A redo journal of byte ranges on data-row pages, kept on two
 * devices (devices 0 and 1; with one device, two halves of device 0's
 * area). Its first two pages are alternating header slots
 * (struct dg_djhead); the rest is a circular log of struct dg_djentry,
 * each DG_JALIGN aligned and self-checksummed.
 *
 * Volume metadata in the vpn space: vpn 0 holds struct dg_droot; the
 * allocation bitmap (one bit per vpn, 1 = in use) follows it.
 *
 * Metadata zone (DG_FEAT_INCOMPAT_META_ZONE, docs/integrity.md). vpns
 * [0, ditto_pages) are the metadata zone: zone_chunks whole chunks of
 * rows (ditto_pages = zone_chunks * K * chunk_pages), so rows
 * [0, zone_chunks * chunk_pages) hold zone pages and nothing else. The
 * root, the bitmap and every page the filesystem layer allocates for its
 * metadata (inode table chunks and chunk maps, directory, extent, xattr
 * pages, symlink pages) live in the zone; file data lives outside it
 * while there is room there. Each zone page has ditto_copies =
 * max(1, parity) plain copies beside parity, outside the rows: copy j
 * (1..ditto_copies) of the page at (device d, row r) is page
 * ditto_start + r * ditto_copies + (j - 1) of device (d + j) % ndev, so
 * the ditto region of each device is zone_chunks * chunk_pages *
 * ditto_copies pages. A copy is trusted only when it matches the page's
 * own verified checksum (so a stale copy is never used: it is rewritten
 * from the page). A fault beyond parity in data rows never touches
 * metadata; one in a zone row is covered by the copies. When the zone is
 * full, metadata is allocated among the data rows (without copies;
 * fsck and dumpfs count such pages) rather than failing an operation.
 *
 * Volumes without META_ZONE (format 3 as first released) have a ditto
 * region of ditto_pages pages covering the root and the bitmap only:
 * copy j of vpn v < ditto_pages is page ditto_start + v of device
 * (dev(v) + j) % ndev, and metadata is allocated anywhere. They still
 * open and are written as they are; the flag is incompat because a
 * reader that did not know it would look for the copies in the wrong
 * place and allocate metadata among the data rows.
 */

#define DG_PAGE_SHIFT	  12
#define DG_PAGE_SIZE	  (1u << DG_PAGE_SHIFT)
#define DG_LINE_SIZE	  64u /* cache line: unit of parity deltas */
#define DG_MAX_DEVS	  16u
#define DG_MAX_PARITY	  2u
/* Journal copies at most (jrnl_devs). */
#define DG_MAX_JCOPIES	  (DG_MAX_PARITY + 2)
#define DG_CSUMS_PER_PAGE (DG_PAGE_SIZE / 8 - 2)
#define DG_CSUM_NONE	  0ull
#define DG_JALIGN	  64u

#define DG_SUPER_MAGIC	0x5344524155475844ull /* "DXGUARDS" */
#define DG_JHEAD_MAGIC	0x4844524155475844ull /* "DXGUARDH" */
#define DG_JENTRY_MAGIC 0x4a47584du	     /* "MXGJ" */
#define DG_ROOT_MAGIC	0x5452524155475844ull /* "DXGUARRT" */
/* 2: extent pages carry a count and may have slack (struct dg_demap).
 * 3: checksum pages carry generations and have csum_copies copies; the
 *    checksum-page init map (docs/integrity.md). */
#define DG_FORMAT_VERSION 3u

/* Feature flags, as ext4: unknown incompat -> refuse to open; unknown
 * ro_compat -> open read-only; unknown compat -> ignore. */
#define DG_FEAT_INCOMPAT_NOREDUNDANCY (1ull << 0) /* no checksums, no parity */
/* Journal ranges may be sealed (DG_JRANGE_SEALED): a reader that does not
 * know them would find such entries uncommitted and drop them. */
#define DG_FEAT_INCOMPAT_SEALED_JOURNAL (1ull << 1)
/* vpns [0, ditto_pages) are the metadata zone; ditto copies are
 * addressed by row (see "Metadata zone" above). */
#define DG_FEAT_INCOMPAT_META_ZONE (1ull << 2)
/* An inode's extended attributes may fill a run of up to
 * DG_XATTR_MAX_PAGES contiguous pages (dinode.xattr_pages): a reader
 * that knows only one page would take a longer record area for damage.
 * Set by mkfs on every new volume; a volume made without it keeps one
 * page per inode (format 3 as it was). */
#define DG_FEAT_INCOMPAT_XATTR_RUN (1ull << 3)
/* A file may carry a published staged sync (dg_dinode.stage_ino) that
 * the mount finishes: a reader that does not know it would free the
 * stage as an orphan and leave the file half old, half new. */
#define DG_FEAT_INCOMPAT_STAGED_SYNC (1ull << 4)
/* The journal has min(parity + 2, ndev) copies (jrnl_devs), as checksum
 * pages have, instead of parity + 1: devices beyond parity that all lose
 * their last header writes then still leave the newest header on a copy,
 * so recovery cannot redo retired entries over newer data. A reader that
 * does not know it would keep only parity + 1 copies current and let the
 * last one go stale behind its back. Set by mkfs on every new volume; a
 * volume made without it keeps parity + 1 copies. */
#define DG_FEAT_INCOMPAT_JOURNAL_COPIES (1ull << 5)
/* Journal ranges may be written in place (DG_JRANGE_IN_PLACE): the
 * entry holds no bytes for them. A reader that does not know it would
 * look for bytes that are not there and drop the entry as torn. Set by
 * mkfs on every new volume with redundancy; without it every byte of
 * an update is journaled, as before. */
#define DG_FEAT_INCOMPAT_NEW_ROWS (1ull << 6)
/* An xattr value may be 65,536 bytes (XATTR_SIZE_MAX): dg_dxattr.vallen_hi
 * holds bit 16 of its length, and an inode's run may be
 * DG_XATTR_64K_PAGES pages. A reader that does not know it would read
 * such a record 64 KiB short and take the run for damage. Not set by
 * mkfs: set on first use (see "Features set on first use" below). */
#define DG_FEAT_INCOMPAT_XATTR_64K (1ull << 7)
/* The inode table may hold more than DG_MAX_ICHUNKS chunks: chunks past
 * dg_dfsroot.direct are found through the chunk map (dg_dfsroot.icmap_vpn,
 * see "Inode table" below). A reader that does not know it would see at
 * most DG_MAX_ICHUNKS chunks and take nchunks for damage. Not set by mkfs:
 * set on first use, when the table needs its chunk DG_MAX_ICHUNKS + 1. */
#define DG_FEAT_INCOMPAT_BIG_ITABLE (1ull << 8)
/* Journal entries carry their range bytes on parity + 1 copies only and
 * their metadata on every copy (see "JOURNAL_V2" at struct dg_djentry):
 * a reader that did not know it would find the last copy's entries torn
 * and their checksums wrong. Set by mkfs on every new volume; a volume
 * made without it keeps every byte on every copy. */
#define DG_FEAT_INCOMPAT_JOURNAL_V2 (1ull << 9)
/* A journal range may reserve a run of whole new rows (DG_JRANGE_ROWS)
 * instead of one page: a reader that did not know it would find the
 * range invalid and refuse the replay. Set by mkfs on every new volume
 * with parity (runs of new rows need it); a volume made without it keeps
 * a range a page. */
#define DG_FEAT_INCOMPAT_RESERVED_ROWS (1ull << 10)
/* A journal entry may be lean (DG_JENTRY_LEAN): its one page's bytes on
 * parity copies of the journal, not parity + 1 (docs/design.md, "Lean
 * entries"). Set by mkfs --lean-journal (parity > 0 only). */
#define DG_FEAT_INCOMPAT_LEAN_JOURNAL (1ull << 11)
/* The checksum copies an update sets under its journal entry are written
 * together, in one round (docs/design.md, "Copies together"): a crash
 * may tear every copy of a checksum page, and the replay rebuilds such a
 * page slot by slot from its copies (a slot no live entry names is whole
 * on every copy a crash tore). A reader that did not know it would find
 * no copy that verifies and refuse the pages it covers. Set by mkfs on
 * volumes with parity 1 and a copy on each of three devices or more;
 * parity 2 keeps the copies one round each (two faults could leave two
 * copies against two). */
#define DG_FEAT_INCOMPAT_COPIES_TOGETHER (1ull << 12)
/* A file may carry a remap page (dg_dinode.remap_vpn, struct dg_dremap):
 * whole-page overwrites redirected to new pages, which a reader that did
 * not know it would read from the old ones (docs/design.md, "Overwrites
 * redirected"). Set by mkfs --remap on volumes with parity 1 whose
 * checksum copies go together (three devices or more): there a whole
 * page into a blank one needs no journal copy. */
#define DG_FEAT_INCOMPAT_REMAP (1ull << 13)
/* A checksum page's seal is the sum of one hash per line (struct
 * dg_dcpage), so an update that sets a few slots hashes the lines they
 * and the generation are in, not the whole page again. A reader that
 * did not know it would find no copy that verifies. Set by mkfs on
 * every volume with checksums. */
#define DG_FEAT_INCOMPAT_LINE_SEAL (1ull << 14)
#define DG_FEAT_INCOMPAT_SUPPORTED                                          \
	(DG_FEAT_INCOMPAT_NOREDUNDANCY | DG_FEAT_INCOMPAT_SEALED_JOURNAL |  \
	 DG_FEAT_INCOMPAT_META_ZONE | DG_FEAT_INCOMPAT_XATTR_RUN |           \
	 DG_FEAT_INCOMPAT_STAGED_SYNC | DG_FEAT_INCOMPAT_JOURNAL_COPIES |    \
	 DG_FEAT_INCOMPAT_NEW_ROWS | DG_FEAT_INCOMPAT_XATTR_64K |            \
	 DG_FEAT_INCOMPAT_BIG_ITABLE | DG_FEAT_INCOMPAT_JOURNAL_V2 |         \
	 DG_FEAT_INCOMPAT_RESERVED_ROWS | DG_FEAT_INCOMPAT_LEAN_JOURNAL |    \
	 DG_FEAT_INCOMPAT_COPIES_TOGETHER | DG_FEAT_INCOMPAT_REMAP |        \
	 DG_FEAT_INCOMPAT_LINE_SEAL)
/*
 * Features set on first use. A volume that never needs the new form
 * stays readable by a daxguard that does not know it. The superblocks
 * are not written through the journal, so the flag is made durable on
 * every present device's superblocks (both copies, one device at a time,
 * as dg_write_supers() does) BEFORE the transaction that first writes
 * the new form: a crash in between leaves the flag set and unused, which
 * only asks for a reader that knows it. A crash while the flag is being
 * written leaves devices that disagree on these bits alone; the open
 * does not take that for another volume's geometry, takes the flags of
 * the device it reads the volume from (nothing uses them yet either
 * way), and the next open for writing, or fsck, rewrites the others.
 */
#define DG_FEAT_INCOMPAT_ON_USE \
	(DG_FEAT_INCOMPAT_XATTR_64K | DG_FEAT_INCOMPAT_BIG_ITABLE)
#define DG_FEAT_RO_COMPAT_SUPPORTED   0ull
#define DG_FEAT_COMPAT_SUPPORTED      0ull

/* dg_dsuper.state */
#define DG_STATE_CLEAN 1u /* closed cleanly: journal empty */
#define DG_STATE_DIRTY 2u /* open for writing, or crashed while open */
/* The generation is being bumped device by device and nothing has been
 * written in it yet: a device one generation behind is not stale. */
#define DG_STATE_OPENING 3u

/*
 * Superblock, one per device at page 0 and a backup at the last page.
 * Fields common to the volume are identical on every device; dev_index
 * and dev_uuid are the device's own. csum is XXH3-64 of the first
 * offsetof(csum) bytes, seeded with DG_SUPER_MAGIC.
 */
struct dg_dsuper {
	uint64_t magic;		  /* DG_SUPER_MAGIC */
	uint32_t version;	  /* DG_FORMAT_VERSION */
	uint32_t size;		  /* sizeof(struct dg_dsuper) when written */
	uint64_t compat;	  /* DG_FEAT_COMPAT_* */
	uint64_t ro_compat;	  /* DG_FEAT_RO_COMPAT_* */
	uint64_t incompat;	  /* DG_FEAT_INCOMPAT_* */
	uint8_t vol_uuid[16];	  /* identity of the volume */
	uint8_t dev_uuid[16];	  /* identity of this device slot's media */
	uint32_t dev_index;	  /* 0..dev_count-1 */
	uint32_t dev_count;	  /* devices in the volume, 1..16 */
	uint32_t parity;	  /* parity pages per row, 0..2 */
	uint32_t chunk_pages;	  /* rows per parity-rotation chunk */
	uint64_t dev_pages;	  /* pages per device that the volume uses */
	uint64_t generation;	  /* bumped at every open for writing */
	uint32_t state;		  /* DG_STATE_* */
	uint32_t jrnl_devs;	  /* devices that carry a journal copy:
				   * 0 .. jrnl_devs - 1 (JOURNAL_COPIES) */
	uint64_t jrnl_start;	  /* first page of the journal area */
	uint64_t jrnl_pages;	  /* pages in the journal area */
	uint64_t csum_start;	  /* first checksum page */
	uint64_t csum_pages;	  /* checksum pages per copy region */
	uint32_t csum_copies;	  /* copies of each checksum page, 2..4 */
	uint32_t cmap_pages;	  /* pages of the init map */
	uint64_t data_start;	  /* first page of row 0 */
	uint64_t rows;		  /* data rows, a multiple of chunk_pages */
	uint64_t ctime;		  /* mkfs time, seconds since the epoch */
	uint64_t mtime;		  /* last open for writing, seconds */
	char label[64];		  /* NUL padded */
	uint64_t cmap_start;	  /* first page of the init map */
	uint64_t ditto_start;	  /* first page of the ditto region */
	uint32_t ditto_pages;	  /* vpns [0, ditto_pages) have ditto copies:
				     the metadata zone with META_ZONE */
	uint32_t ditto_copies;	  /* copies besides the page itself */
	uint8_t reserved[2792];	  /* zero; room for new fields */
	/* Where an online replace (struct dg_dreplace in the root) is
	 * rebuilding its device, NUL padded; "" when none is. In bytes
	 * that were reserved and zero: older binaries keep it as it is. */
	char replace_path[1024];
	uint64_t csum;		  /* XXH3-64 of the bytes before it */
};
_Static_assert(sizeof(struct dg_dsuper) == DG_PAGE_SIZE, "dsuper size");
_Static_assert(offsetof(struct dg_dsuper, csum) == DG_PAGE_SIZE - 8,
	       "dsuper csum offset");

/*
 * Numbers the format fixes beside the superblock (kept in one block so
 * that no file writes them as literals).
 *
 * Sequence numbers (checksum-page generations, journal sequence numbers
 * and header numbers) are dg_dsuper.generation << DG_GEN_SHIFT | a
 * count of writes since that open: each open for writing starts a range
 * above every number an earlier open can have used.
 */
#define DG_GEN_SHIFT 40
static inline uint64_t dg_gen_base(uint64_t generation)
{
	return generation << DG_GEN_SHIFT;
}
/* The open (dg_dsuper.generation) a sequence number was drawn in. */
static inline uint64_t dg_gen_of(uint64_t seq)
{
	return seq >> DG_GEN_SHIFT;
}
/* Writes since that open. */
static inline uint64_t dg_gen_count(uint64_t seq)
{
	return seq & ((UINT64_C(1) << DG_GEN_SHIFT) - 1);
}
/* Checksum seeds: the volume's seed (from its uuid) ^ (n + 1) * one of
 * these per coordinate: a data page's (device, row), a checksum page's
 * (owner device, index), an init map page's index. */
#define DG_SEED_K_DEV	0x9e3779b97f4a7c15ull
#define DG_SEED_K_ROW	0xc2b2ae3d27d4eb4full
#define DG_SEED_K_CPAGE 0x165667b19e3779f9ull
#define DG_SEED_K_CMAP	0x27d4eb2f165667c5ull
#define DG_SEED_K_LINE	0x85ebca77c2b2ae63ull
/* A page fsck gave up on (check.h, given_up.c): its checksum entry is
 * that of its bytes as they are, XOR this tag ("DXGLOST!"). */
#define DG_CSUM_GIVEN_UP_TAG 0x2154534f4c475844ull
/* The xattr form of a POSIX ACL ("system.posix_acl_access" and
 * "..._default", stored as the kernel passes it: acl.c): a
 * little-endian version word, then entries of tag, perm and id. */
#define DG_ACL_VERSION	    2u
#define DG_ACL_USER_OBJ	    0x01
#define DG_ACL_USER	    0x02
#define DG_ACL_GROUP_OBJ    0x04
#define DG_ACL_GROUP	    0x08
#define DG_ACL_MASK	    0x10
#define DG_ACL_OTHER	    0x20
/* Largest dg_dsuper.chunk_pages and dev_pages a superblock may claim. */
#define DG_MAX_CHUNK_PAGES (UINT32_C(1) << 20)
#define DG_MAX_DEV_PAGES   (UINT64_C(1) << 40)
/* Largest file size (and end of any byte range in a file): 4 PiB. */
#define DG_MAX_FILE_SIZE   (UINT64_C(1) << 52)

/*
 * A checksum page copy. seal is XXH3-64 of the bytes before it, seeded
 * with the volume seed, the owner device and the page index (not the
 * copy: all copies of a generation are the same bytes). With
 * DG_FEAT_INCOMPAT_LINE_SEAL it is instead the sum, modulo 2^64, of
 * XXH3-64 of each 64-byte line's bytes before the seal (56 in the last
 * line), line l's seeded with that seed XOR (l + 1) * DG_SEED_K_LINE: an update that sets one slot changes two lines (its
 * slot's and the generation's), and the seal takes those two lines'
 * old terms away and adds their new ones. Torn or corrupted lines fail
 * it as they fail a whole-page hash. An all-zero page does not verify.
 */
struct dg_dcpage {
	uint64_t csum[DG_CSUMS_PER_PAGE]; /* page checksums; 0: never written */
	uint64_t gen;			  /* generation of this image */
	uint64_t seal;
};
_Static_assert(sizeof(struct dg_dcpage) == DG_PAGE_SIZE, "dcpage size");

/*
 * A page of the checksum-page init map: bit i of map page p says that
 * the checksum pages of index p * DG_CMAP_BITS + i are written on every
 * device. Every device holds two copies (slot s of map page p is page
 * cmap_start + s * cmap_pages + p); seal is XXH3-64 of the bytes
 * before it seeded with the volume seed and p.
 */
#define DG_CMAP_BITS ((DG_PAGE_SIZE - 16) * 8)
struct dg_dcmap {
	uint8_t bits[DG_PAGE_SIZE - 16];
	uint64_t gen;			  /* generation of this image */
	uint64_t seal;
};
_Static_assert(sizeof(struct dg_dcmap) == DG_PAGE_SIZE, "dcmap size");

/*
 * Journal header slot (pages 0 and 1 of a journal copy). The valid slot
 * with the higher hseq wins. Entries before tail_off/tail_seq have been
 * applied and are durable in place.
 */
struct dg_djhead {
	uint64_t magic;		/* DG_JHEAD_MAGIC */
	uint8_t vol_uuid[16];	/* volume this journal belongs to */
	uint64_t hseq;		/* header write counter */
	uint64_t tail_off;	/* byte offset of the first live entry in the log */
	uint64_t tail_seq;	/* sequence number expected there */
	uint64_t csum;		/* XXH3-64 of the bytes before it, vol seeded */
};
_Static_assert(sizeof(struct dg_djhead) == 56, "djhead size");

/*
 * One journal entry: a set of byte ranges applied atomically. Layout:
 *   struct dg_djentry
 *   struct dg_djrange[nranges]
 *   the range bytes, concatenated, each padded to 8 bytes
 *   zero padding to DG_JALIGN
 * csum is XXH3-64, seeded with the volume seed + seq, of the header (with
 * csum = 0), the range descriptors and the bytes of every range that is
 * not sealed (padding excluded). A sealed range is one whole page whose
 * bytes hash to its page_csum (dg_csum_page at its dev and row): the page
 * checksum the update computes anyway vouches for it, so the entry
 * checksum need not pass over the same bytes again. An entry is committed
 * iff magic, seq and csum check out and every sealed range's bytes match
 * its page_csum. A wrap entry (nranges = 0, flags DG_JENTRY_WRAP) says
 * the log continues at offset 0.
 *
 * JOURNAL_V2 (DG_FEAT_INCOMPAT_JOURNAL_V2, docs/design.md "What a write
 * costs the media"). The descriptors are followed by a uint64_t
 * bytes_csum, then the bytes: the metadata is the header, the
 * descriptors and bytes_csum; csum covers the metadata alone (header
 * with csum = 0, descriptors, bytes_csum), and bytes_csum, XXH3-64
 * seeded with the volume seed + seq + 1, the bytes of every range that
 * is neither sealed nor without bytes (sealed ranges keep the page_csum
 * rule). Where the journal has parity + 2 copies (parity > 0), the last
 * copy holds the metadata only: its bytes area is neither written nor
 * flushed; the others hold the entry whole. The ring is the same on
 * every copy (same offsets, same len). An entry counts when some copy
 * holds its metadata whole at the offset and number the chain expects
 * and some copy holds bytes that verify against it.
 */
struct dg_djentry {
	uint32_t magic;		/* DG_JENTRY_MAGIC */
	uint32_t len;		/* bytes, multiple of DG_JALIGN */
	uint64_t seq;		/* strictly increasing, no gaps */
	uint32_t nranges;	/* struct dg_djrange that follow */
	uint32_t flags;		/* DG_JENTRY_* */
	uint64_t csum;		/* see above */
};
#define DG_JENTRY_WRAP 1u
/*
 * A lean entry (DG_FEAT_INCOMPAT_LEAN_JOURNAL, JOURNAL_V2): one range, a
 * whole data page sealed by its page_csum, outside the metadata zone,
 * that held data before (docs/design.md, "Lean entries"). Its bytes are
 * on parity copies of the journal, none on the devices of the page and
 * (parity 1) of its row's parity; the others hold its metadata only.
 * The word after the descriptor is not bytes_csum (the seal proves the
 * bytes) but the page's checksum before the entry, its prior: the
 * update writes the page in a round of its own before the row's parity,
 * so a replay that finds no copy of the bytes takes the page new where
 * it proves page_csum and else rebuilds it from the row as found, which
 * proves the prior -- the update rolled back, never acknowledged.
 */
#define DG_JENTRY_LEAN 2u
_Static_assert(sizeof(struct dg_djentry) == 32, "djentry size");

/* A byte range of one page of a data row, and that page's checksum after
 * the entry is applied (recovery checks the replayed page against it). */
struct dg_djrange {
	uint64_t row;		/* data row */
	uint16_t dev;		/* device index */
	uint16_t off;		/* byte offset in the page */
	uint16_t len;		/* bytes, 1..DG_PAGE_SIZE */
	uint16_t flags;		/* DG_JRANGE_* */
	uint64_t page_csum;	/* checksum of the whole page afterwards */
};
/* The range is a whole page covered by page_csum, not by the entry csum;
 * only on volumes with DG_FEAT_INCOMPAT_SEALED_JOURNAL. */
#define DG_JRANGE_SEALED 1u
/*
 * The range is a whole page whose bytes are not in the entry: the page
 * was new to the update (allocated by it, nothing live in it before),
 * as was every other data page of its row -- or every other was free
 * and blank, zeros or never written (a lone row), or the page itself
 * was blank (a hole filled beside pages in use) -- and the update wrote
 * the row -- data, parity, checksums -- and made it durable before the
 * entry (apply.c, "new rows" and mark_lone_rows()). page_csum says what
 * the page holds. Replay
 * writes nothing to it, and no earlier entry's bytes over it; a page
 * that does not verify is a fault after the write, repaired from its
 * row like any other. Only on volumes with DG_FEAT_INCOMPAT_NEW_ROWS.
 */
#define DG_JRANGE_IN_PLACE 2u
/*
 * A whole page of a new row, of a lone row or of a hole filled beside
 * pages in use (DG_JRANGE_IN_PLACE), about to be written before its
 * entry (the entry that reserves is appended first): if no later entry
 * wrote the page in place, its update never committed and the page is
 * free, its row possibly half written. The replay takes such a page as
 * it finds it -- its checksum recomputed from its bytes -- and
 * recomputes its row's parity, so free rows stay consistent. A page of
 * the row that fails its checksum meanwhile is proven from the row with
 * the reserved page as zeros or as found: a hole filled was blank
 * (zeros, as the parity counts them) and durable before its row's
 * parity was written (apply.c, check_lone_rows()). No bytes; page_csum
 * is 0. Only on volumes with DG_FEAT_INCOMPAT_NEW_ROWS.
 */
#define DG_JRANGE_RESERVED 4u
/*
 * Every data page of rows row .. row + page_csum - 1 reserved, each as
 * DG_JRANGE_RESERVED says of one page (page_csum counts the rows, at
 * least 1; dev and off are 0, len DG_PAGE_SIZE). New rows are whole
 * rows (apply.c, mark_full_rows()), so a run of them is named by one
 * range instead of one a page: 24 bytes a megabyte on each journal copy
 * instead of 6 KiB. Only on volumes with DG_FEAT_INCOMPAT_RESERVED_ROWS.
 * Never rows of the metadata zone. The runs of one entry come in
 * ascending order of rows, none overlapping another; and the runs of all
 * the live entries of a log name no more pages together than twice what
 * the log could name a range a page (2 x log bytes / 24; a genuine log
 * stays under the first half, journal.c dg_jrange_budget()), which bounds
 * the replay's work. An entry past either rule is corrupt.
 */
#define DG_JRANGE_ROWS 8u
/* Ranges without bytes in the entry, and whole pages. */
#define DG_JRANGE_NO_BYTES \
	(DG_JRANGE_IN_PLACE | DG_JRANGE_RESERVED | DG_JRANGE_ROWS)
_Static_assert(sizeof(struct dg_djrange) == 24, "djrange size");

/* Bytes range r takes in its entry: its data padded to 8, none for a
 * page written in place or reserved. */
static inline uint32_t dg_jrange_bytes(const struct dg_djrange *r)
{
	return r->flags & DG_JRANGE_NO_BYTES ? 0 : (r->len + 7u) & ~7u;
}

/*
 * Volume root, vpn 0. Written by mkfs through the update path; the
 * filesystem layer keeps its own fields in fs[].
 */
/*
 * The background scrub's position (volume.h, struct dg_scrub_rec), in
 * bytes that were reserved and zero: all zero (no magic) reads as "no
 * scrub recorded", so volumes made before it need no new version and
 * older binaries ignore it. In the root because the scrub is the
 * volume's, and the root has ditto copies and is written through the
 * update path like any other page.
 */
#define DG_SCRUB_MAGIC 0x4255524353475844ull /* "DXGSCRUB" */
struct dg_dscrub {
	uint64_t magic;		/* DG_SCRUB_MAGIC, or 0: none */
	uint64_t state;		/* enum dg_scrub_state */
	uint64_t next_row;
	uint64_t started, ended; /* seconds since the epoch */
	uint64_t run_ms;
	uint64_t rate;		/* bytes per second; 0 unlimited */
	uint64_t rows_checked, detected, repaired, unrecoverable;
	uint64_t parity_mismatch, parity_fixed;
};
_Static_assert(sizeof(struct dg_dscrub) == 104, "dscrub size");

/*
 * An online replace (volume.h, struct dg_replace_rec): which device is
 * being rebuilt and how far, in bytes of the root that were reserved and
 * zero, like the scrub's record (zeros: none). The new device's path is
 * longer than the root has room for: it is in the superblocks
 * (dg_dsuper.replace_path), written before the record says RUNNING.
 */
#define DG_REPLACE_MAGIC 0x4c50455253475844ull /* "DXGSREPL" */
struct dg_dreplace {
	uint64_t magic;		/* DG_REPLACE_MAGIC, or 0: none */
	uint32_t state;		/* enum dg_replace_state */
	uint32_t dev;		/* the device index being replaced */
	uint64_t next_row;	/* rows [0, next_row) were done */
	uint64_t started, ended; /* seconds since the epoch */
	uint64_t rate;		/* bytes per second; 0 unlimited */
	uint64_t pages;		/* pages written to the new device */
	uint64_t lost;		/* pages that could not be rebuilt */
	/* Copies the old device held stale (checksum-page and ditto
	 * copies) and that were written from the newest verified copy
	 * instead. In bytes that were the root's reserved zeros: older
	 * binaries keep it as it is. */
	uint64_t stale;
};
_Static_assert(sizeof(struct dg_dreplace) == 72, "dreplace size");

struct dg_droot {
	uint64_t magic;		/* DG_ROOT_MAGIC */
	uint64_t vpns;		/* data pages in the volume */
	uint64_t bitmap_vpn;	/* first allocation bitmap page */
	uint64_t bitmap_pages;	/* pages of allocation bitmap */
	uint64_t meta_vpns;	/* vpns [0, meta_vpns) are reserved metadata */
	uint64_t zone_vpns;	/* vpns [0, zone_vpns): metadata zone
				   (= sb.ditto_pages); 0 without META_ZONE */
	struct dg_dscrub scrub;	/* where the last background scrub stands */
	struct dg_dreplace replace; /* the last online replace */
	uint8_t reserved[32];	/* zero */
	uint8_t fs[3840];	/* owned by the filesystem layer */
};
_Static_assert(sizeof(struct dg_droot) == DG_PAGE_SIZE, "droot size");


/*
 * FILESYSTEM LAYER (all of it in vpn pages of the metadata zone while
 * it has room, protected like file data and by ditto copies).
 *
 * dg_droot.fs holds struct dg_dfsroot: the inode table is a list of
 * chunks of DG_ITABLE_CHUNK_PAGES contiguous vpns, each page holding
 * DG_INODES_PER_PAGE struct dg_dinode. Inode number ino lives in chunk
 * ino / DG_INODES_PER_CHUNK at slot ino % DG_INODES_PER_CHUNK; ino 0 is
 * never used and ino 1 is the root directory. A slot is free when its
 * mode is 0.
 *
 * A file's pages are mapped by extents (struct dg_dextent), sorted by
 * file page across a list of leaves: first the inode's inline array, then
 * a chain of extent pages (struct dg_demap) starting at dinode.emap_vpn.
 * The inline array holds its extents in its leading slots (the first
 * slot of len 0 ends it; the rest are zero); each chain page holds
 * 1..DG_EMAP_PER_PAGE in e[0, count), and what lies beyond count is
 * meaningless. dinode.nextents is the total. Leaves keep slack so that
 * adding or removing an extent rewrites one leaf, not the rest of the
 * map: a random write into a sparse file costs O(1) pages of metadata.
 *
 * A directory is a file of dirent pages. Each page is a run of records
 * (struct dg_ddirent + name, padded to 8) ended by a record of reclen 0
 * or the end of the page; a deleted entry keeps its record with ino 0.
 * Directories keep their parent in dinode.parent, not as a ".." entry.
 *
 * Extended attributes live in a run of contiguous pages per inode
 * (dinode.xattr_vpn, dinode.xattr_pages; one page on volumes without
 * DG_FEAT_INCOMPAT_XATTR_RUN): struct dg_dxattr_hdr, then records
 * (struct dg_dxattr + name + value, padded to 4), across page boundaries
 * as one byte area; hdr.used says how much of it is in use, and the run
 * is the fewest pages that hold it. The limit is in bytes, as ext4's:
 * DG_XATTR_MAX_PAGES pages (64 KiB, the kernel's XATTR_LIST_MAX), which
 * holds some 2,000 small attributes. A value of the kernel's largest
 * size (XATTR_SIZE_MAX, 65,536 bytes) does not fit in 16 pages with its
 * headers: an area that holds a value of 15 pages or more may take one
 * page more, DG_XATTR_64K_PAGES, and a record's length has 17 bits
 * (dg_dxattr.vallen_hi), under DG_FEAT_INCOMPAT_XATTR_64K, set when a
 * run first grows past DG_XATTR_MAX_PAGES; without it vallen_hi is zero
 * and the run at most DG_XATTR_MAX_PAGES.
 *
 * Symlink targets are the contents of the symlink's (single) page.
 *
 * Remap page (DG_FEAT_INCOMPAT_REMAP): a regular file's whole-page
 * overwrite may go to a new page instead of over the old, and only a
 * record says so: struct dg_dremap at dinode.remap_vpn (0: none), a
 * metadata page written only through transactions. Record r in
 * rec[0, n), n the first slot whose vpn is 0 (the rest are zero), says
 * that file page r.fpage reads from volume page r.vpn, not from the page
 * the extents map it to. That page -- its home -- stays mapped and
 * allocated, holding the bytes before the first redirect, until the
 * records are folded into the extents (the home freed, r.vpn mapped in
 * its place, the record gone). So: r.fpage is mapped by an extent, no
 * two records share an fpage or a vpn, r.vpn is allocated and mapped by
 * nothing else, and dinode.blocks counts neither the remap page nor the
 * records' pages (st_blocks adds them). Slots are not sorted: a record
 * dropped takes the last one's place.
 */
#define DG_FS_MAGIC	      0x5346445241554758ull /* "XGUARDFS" */
#define DG_ITABLE_CHUNK_PAGES 64u
#define DG_INODE_SIZE	      256u
#define DG_INODES_PER_PAGE    (DG_PAGE_SIZE / DG_INODE_SIZE)
#define DG_INODES_PER_CHUNK   (DG_ITABLE_CHUNK_PAGES * DG_INODES_PER_PAGE)
#define DG_MAX_ICHUNKS	      470u /* listed in dg_dfsroot.chunks[] */
#define DG_ICMAP_PER_PAGE     512u /* vpns in a chunk map page */
/* With DG_FEAT_INCOMPAT_BIG_ITABLE: the most chunks a table can have,
 * 268,922,880 inodes (nchunks stays a uint32_t). */
#define DG_MAX_ICHUNKS_BIG                                                  \
	(DG_MAX_ICHUNKS + DG_ICMAP_PER_PAGE * DG_ICMAP_PER_PAGE)
#define DG_INLINE_EXTENTS     4u
#define DG_EMAP_PER_PAGE      170u
#define DG_NAME_MAX	      255u
#define DG_ROOT_INO	      1ull
#define DG_XATTR_MAX_PAGES    16u
#define DG_XATTR_64K_PAGES    17u    /* with DG_FEAT_INCOMPAT_XATTR_64K */
#define DG_XATTR_VALUE_MAX    65536u /* XATTR_SIZE_MAX, with XATTR_64K */

/*
 * Inode table: chunk c (inodes [c * DG_INODES_PER_CHUNK, +1024)) starts
 * at chunks[c] for c < direct (direct 0 means DG_MAX_ICHUNKS, as on every
 * volume but some test ones, which set it before the map is made). Past
 * that, with DG_FEAT_INCOMPAT_BIG_ITABLE, k = c - direct: icmap_vpn is a
 * map directory page (struct dg_dicmap) whose entry k / 512 is the vpn of
 * a chunk map page (struct dg_dicmap too) whose entry k % 512 is the
 * chunk's first vpn. Both kinds of page are metadata (metadata zone,
 * ditto copies), written only through transactions; entries past the
 * table's last chunk are zero. The directory is made in the transaction
 * that adds the first mapped chunk, a map page in the one that adds its
 * first chunk. Without the feature icmap_vpn and direct are zero.
 */
struct dg_dfsroot {
	uint64_t magic;		/* DG_FS_MAGIC */
	uint32_t nchunks;	/* inode table chunks in use */
	uint32_t direct;	/* chunks in chunks[]; 0: DG_MAX_ICHUNKS */
	uint64_t icmap_vpn;	/* chunk map directory; 0: none */
	uint64_t reserved[2];	/* zero */
	uint64_t chunks[DG_MAX_ICHUNKS]; /* first vpn of each chunk */
};
_Static_assert(sizeof(struct dg_dfsroot) <= sizeof(((struct dg_droot *)0)->fs),
	       "dfsroot fits the root page");

struct dg_dicmap {
	uint64_t vpn[DG_ICMAP_PER_PAGE]; /* 0: none (yet) */
};
_Static_assert(sizeof(struct dg_dicmap) == DG_PAGE_SIZE, "dicmap size");
_Static_assert(DG_MAX_ICHUNKS_BIG <= UINT32_MAX, "nchunks holds every chunk");

struct dg_dextent {
	uint64_t fpage;		/* first file page */
	uint64_t vpn;		/* first volume page */
	uint32_t len;		/* pages */
	uint32_t flags;		/* zero */
};
_Static_assert(sizeof(struct dg_dextent) == 24, "dextent size");

struct dg_dinode {
	uint32_t mode;		/* st_mode; 0: free slot */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size;		/* bytes */
	uint64_t blocks;	/* pages allocated, data and metadata */
	int64_t atime_ns, mtime_ns, ctime_ns, btime_ns; /* since the epoch */
	uint64_t rdev;
	uint64_t parent;	/* directories: parent inode */
	uint64_t xattr_vpn;	/* 0: no extended attributes */
	uint64_t emap_vpn;	/* first extent page, 0: none */
	uint32_t nextents;	/* extents in use */
	uint32_t generation;	/* bumped when the slot is reused */
	struct dg_dextent inl[DG_INLINE_EXTENTS];
	/* libcommit (libcommit/README.md): a read-write map of the file is open.
	 * Set by the map's transaction, cleared by the unmap's; a mount
	 * that finds it set knows the file was mapped at a crash (the
	 * file holds its last completed sync; nothing else to undo). */
	uint32_t map_flags;	/* DG_DINODE_MAPPED_RW or 0 */
	uint32_t map_pad;	/* zero */
	uint64_t map_gen;	/* counts read-write maps of this inode */
	/* Pages of the xattr run at xattr_vpn, 2..DG_XATTR_MAX_PAGES
	 * (DG_XATTR_64K_PAGES with DG_FEAT_INCOMPAT_XATTR_64K), or 0 for
	 * one page (as every inode before DG_FEAT_INCOMPAT_XATTR_RUN). */
	uint32_t xattr_pages;
	uint32_t xattr_pad;	/* zero */
	/* libcommit staged sync (fs/fsys/stage.c), on volumes with
	 * DG_FEAT_INCOMPAT_STAGED_SYNC: nonzero from the transaction that
	 * publishes a sync larger than one transaction (its commit point)
	 * until the one after its last chunk is applied. It names the
	 * stage: an unlinked regular file (nlink 0, parent = this inode)
	 * whose page p holds the new image of this file's page p, for
	 * every page the sync changes. A mount that finds it set applies
	 * the stage again (idempotent), then clears it. */
	uint64_t stage_ino;
	/* Remap page (DG_FEAT_INCOMPAT_REMAP, "Remap page" above), 0: none;
	 * zero on volumes without the feature. */
	uint64_t remap_vpn;
	uint8_t reserved[16];	/* zero */
};
#define DG_DINODE_MAPPED_RW 1u
_Static_assert(sizeof(struct dg_dinode) == DG_INODE_SIZE, "dinode size");

struct dg_demap {
	uint64_t next_vpn;	/* next page of the chain, 0: last */
	uint32_t count;		/* extents in e[], 1..DG_EMAP_PER_PAGE */
	uint32_t pad;		/* zero */
	struct dg_dextent e[DG_EMAP_PER_PAGE];
};
_Static_assert(sizeof(struct dg_demap) == DG_PAGE_SIZE, "demap size");

#define DG_REMAP_PER_PAGE 255u
struct dg_dremap {
	uint64_t ino;		/* the file that owns it */
	uint64_t zero;		/* zero */
	struct dg_dremap_rec {
		uint64_t fpage;	/* file page */
		uint64_t vpn;	/* where it reads from; 0: end of the list */
	} rec[DG_REMAP_PER_PAGE];
};
_Static_assert(sizeof(struct dg_dremap) == DG_PAGE_SIZE, "dremap size");

struct dg_ddirent {
	uint64_t ino;		/* 0: deleted */
	uint16_t reclen;	/* bytes of the record, multiple of 8; 0: end */
	uint8_t namelen;	/* 1..255 */
	uint8_t type;		/* DT_* of the target */
	/* name follows, not NUL terminated */
};
_Static_assert(sizeof(struct dg_ddirent) == 16, "ddirent size");

struct dg_dxattr_hdr {
	uint32_t count;		/* records */
	uint32_t used;		/* bytes used including this header */
};
struct dg_dxattr {
	uint8_t namelen;	/* 1..255 */
	/* Bit 16 of the value's length: 0 or 1, and only with
	 * DG_FEAT_INCOMPAT_XATTR_64K (zero before it, as a pad byte). */
	uint8_t vallen_hi;
	uint16_t vallen;	/* bytes of value, low 16 bits */
	/* name, then value */
};

#endif /* DG_FORMAT_H */
