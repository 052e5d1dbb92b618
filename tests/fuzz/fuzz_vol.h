/* SPDX-License-Identifier: MIT */
/* fuzz_vol.h -- what the libFuzzer harnesses share: a real volume to
 * decode against, made the way the seed corpus was made */
#ifndef DG_FUZZ_VOL_H
#define DG_FUZZ_VOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fsys_i.h"
#include "volume_i.h"

/*
 * Every harness is one LLVMFuzzerTestOneInput(). Built with clang
 * -fsanitize=fuzzer (scripts/fuzz.sh) libFuzzer drives it; built plainly
 * (meson test, gcc) fuzz_main.c runs it over the committed corpus and
 * seeded mutations of it.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The uuid every fuzz volume is made with: the seed pages cut out of the
 * volume mkseeds made verify in the one the harness makes (seals and
 * checksums are seeded from it). */
extern const uint8_t dg_fuzz_uuid[16];
/* Devices, parity and size of that volume. */
#define DG_FUZZ_NDEV   2u
#define DG_FUZZ_PARITY 1u
#define DG_FUZZ_SIZE   (16u << 20) /* the smallest mkfs takes */

/* Format DG_FUZZ_NDEV images on /dev/shm under tag with dg_fuzz_uuid and
 * open them; the images are unlinked at once (the mappings keep them),
 * so nothing is left behind when libFuzzer stops the process on a
 * finding. Exits on failure. */
struct dg_vol *dg_fuzz_vol_make(const char *tag, char paths[][64]);
/* The harnesses' shared volume, made on first use, engine logging off. */
struct dg_vol *dg_fuzz_vol(void);

/* The filesystem the seed corpus is cut from, made through the engine's
 * filesystem calls (the ones the daemon serves): names, a directory of
 * several pages with deleted records, xattrs, a symlink, a fragmented
 * file whose extent map needs a chain of extent pages. ino gets the
 * root, the large directory, the fragmented file and the file with
 * xattrs. Deterministic: the same calls give the same vpns. */
int dg_fuzz_fill(struct dg_vol *vol, uint64_t ino[4]);
/* The inode record of ino as the media holds it, and its vpn. */
int dg_fuzz_dinode(struct dg_vol *vol, uint64_t ino, struct dg_dinode *d,
		   uint64_t *vpn);
/* Up to max pages of a file mapped by its inline extents, read into out;
 * how many. */
size_t dg_fuzz_file_pages(struct dg_vol *vol, const struct dg_dinode *d,
			  uint8_t *out, size_t max);

/* A finding that is not a crash: the decoder accepted what it promises
 * to refuse, or the reverse. Aborts, so both drivers report it. */
#define FUZZ_ASSERT(c)                                                     \
	do {                                                               \
		if (!(c)) {                                                \
			fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", \
				__FILE__, __LINE__, #c);                   \
			abort();                                           \
		}                                                          \
	} while (0)

#endif /* DG_FUZZ_VOL_H */
