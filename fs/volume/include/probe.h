/* SPDX-License-Identifier: MIT */
/* probe.h -- what a path holds before a tool writes to it */
#ifndef DG_PROBE_H
#define DG_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dg_probe_kind {
	DG_PROBE_ABSENT,	/* no such file */
	DG_PROBE_EMPTY,		/* a regular file of 0 bytes */
	DG_PROBE_BLANK,		/* every byte reads as zero */
	DG_PROBE_DAXGUARD,	/* a daxguard superblock, valid or damaged */
	DG_PROBE_FOREIGN,	/* a signature libblkid knows */
	DG_PROBE_DATA,		/* non-zero bytes that nothing claims */
};

struct dg_probe {
	enum dg_probe_kind kind;
	uint64_t size;		/* bytes */
	/* DG_PROBE_DAXGUARD: from the first superblock copy found */
	bool sb_valid;		/* it passed validation (else: damaged) */
	bool unsupported;	/* sealed, but a format version or feature
				 * this build does not read */
	unsigned version;	/* its format version */
	uint8_t uuid[16];	/* volume UUID */
	unsigned dev_index, dev_count;
	uint64_t generation;
	/* DG_PROBE_FOREIGN: libblkid's TYPE (or PTTYPE), LABEL, USAGE */
	char type[32];
	char label[64];		/* also the daxguard label */
	char usage[32];		/* filesystem, raid, crypto, other,
				 * partition table */
	bool ambivalent;	/* more than one signature */
};

/*
 * Look at what path holds without writing to it and without taking the
 * device lock: a daxguard superblock first (ours is not a signature
 * libblkid knows), then libblkid's file systems, RAID members, crypto
 * and swap signatures and partition tables, then whether every byte is
 * zero. Returns 0 (a missing path is DG_PROBE_ABSENT), or a negative
 * errno with a one-line reason in err when path cannot be read.
 */
int dg_dev_probe(const char *path, struct dg_probe *p, char *err,
		 size_t errlen);
/* What p found, as the rest of a sentence that starts with the path:
 * "contains an ext4 file system labelled 'data'". */
void dg_probe_describe(const struct dg_probe *p, char *buf, size_t len);

struct dg_vol_info;
/* Why path is not a current device of the volume in describes, as a
 * sentence naming it ("'x' is stale: ...", "'x' contains an ext4 file
 * system ..."); NULL when it is one. */
const char *dg_dev_explain(const char *path, const struct dg_vol_info *in,
			   char *buf, size_t len);

/* -EINVAL, with the reason in err, when an existing file or device is
 * given twice, by the same name or by two. */
int dg_paths_given_twice(const char *const *paths, unsigned n, char *err,
			 size_t errlen);

/*
 * Unmounting a FUSE file system does not wait for its daemon: umount
 * returns while the daemon still holds the device locks. These let a
 * tool tell that from a volume still mounted and wait for it, bounded.
 */
/* 1, with its mount point in mnt, when a mounted daxguard volume lists
 * path (by its canonical name) among its devices; else 0. */
int dg_dev_mountpoint(const char *path, char *mnt, size_t len);
/* Wait up to timeout_ms until every path's device lock can be taken
 * (shared or exclusive); 0, or -EBUSY when one is still held. */
int dg_devs_wait_unlocked(const char *const *paths, unsigned n, bool shared,
			  unsigned timeout_ms);

#endif /* DG_PROBE_H */
