/* SPDX-License-Identifier: MIT */
/* recorder.h -- persist-point recorder and crash-state image rebuilder */
#ifndef DG_CRASH_RECORDER_H
#define DG_CRASH_RECORDER_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/*
 * DESIGN §7, STYLE §8 "Crash states": SQLite's crash VFS and PMDK's
 * pmreorder applied to the media layer.
 *
 * crec_start() snapshots the device images and makes a
 * dg_media_observer (crec_observer()) for the volume to be opened with
 * (dg_vol_open_observed()) or given (dg_vol_set_observer()); from then on
 * every write and persist the engine makes to those images is recorded
 * in program order. The test places
 * markers ("update 7 done") between engine calls. crec_stop() ends the
 * recording (the observer then records nothing; close the volume before
 * crec_free()).
 *
 * Crash points. Persists are numbered 1..K in program order. Crash
 * point k (0 <= k <= K) is the instant right after persist k returned,
 * widened to just before persist k + 1 is issued: every write made
 * before persist k + 1 has been issued, none after it. (Crashing
 * earlier inside that window is one of the subsets below.)
 *
 * Durability model (non-DAX files: persists are page granular). A write
 * is split into its per-page pieces, since pages reach the media
 * independently. A piece is durable at k once some persist numbered
 * <= k, issued after the piece, on the same image covers its page. A
 * round (media.h: ranges of several images flushed apart and drained by
 * one fence) is one persist covering all its ranges: nothing of it is
 * durable before, and every crash point before it may keep any subset
 * of its pieces.
 * Pieces issued before the crash but not durable may or may not have
 * reached the media: crec_build() applies a subset chosen by a policy,
 * in program order, on top of snapshot + durable pieces.
 */

struct crec;
struct dg_vol;

enum crec_policy {
	CREC_NONE,	/* no non-durable piece reached the media */
	CREC_ALL,	/* every one did */
	CREC_RANDOM,	/* each one did with probability 1/2 (seeded) */
	CREC_TORN,	/* each one reached it up to a random 8-byte
			 * aligned boundary: a prefix, maybe empty or whole */
};

/* Where a marker was placed. */
struct crec_marker {
	const char *name;
	uint64_t persists;	/* persists recorded before the marker */
	uint64_t pieces;	/* write pieces recorded before it */
};

/*
 * Snapshot the n images at paths (read whole into memory) and start
 * recording. Paths must be spelled as they will be given to
 * dg_vol_open(): the observer reports the path the engine opened.
 * One recorder at a time. NULL on failure (errno set).
 */
struct crec *crec_start(const char *const *paths, unsigned n);
/* The observer of the recording under way, NULL when there is none. */
struct dg_media_observer;
const struct dg_media_observer *crec_observer(void);
/* dg_vol_open_observed() of n paths with the recorder's observer
 * (none while not recording); NULL, the reason on stderr, on failure. */
struct dg_vol *crec_open(char **paths, unsigned n, unsigned flags);
/* The same, but silent when the open fails with one of quiet's errors
 * (negative errnos, 0 ends the list): the failure a crash state is
 * expected to give this way, e.g. -ESTALE for the old device set after
 * a replace took its slot. Any other failure is printed. */
struct dg_vol *crec_open_quiet(char **paths, unsigned n, unsigned flags,
			       const int *quiet);
/* Stop recording; the recording stays available for crec_build(). */
void crec_stop(struct crec *r);
void crec_free(struct crec *r);

/* Mark the current position; returns the marker's index. */
unsigned crec_mark(struct crec *r, const char *name);
unsigned crec_nmarkers(const struct crec *r);
const struct crec_marker *crec_marker(const struct crec *r, unsigned i);

/* K: the number of persists recorded; crash points are 0..K. */
uint64_t crec_npersists(const struct crec *r);
/* Writes and write pieces recorded; writes to images not snapshotted
 * (ignored) are counted apart. */
void crec_counts(const struct crec *r, uint64_t *writes, uint64_t *pieces,
		 uint64_t *foreign);
/* Image dev (crec_start() order) as it was when the recording began;
 * *size gets its bytes. NULL when there is no such image. */
const uint8_t *crec_snapshot(const struct crec *r, unsigned dev,
			     uint64_t *size);
/* Pieces issued before crash point k that are not durable at k. */
uint64_t crec_inflight(struct crec *r, uint64_t k);

/*
 * Make out[0..n), one per snapshotted image in crec_start() order, hold
 * the images of crash point k: snapshot + durable pieces + the policy's
 * choice among the others. seed drives CREC_RANDOM and CREC_TORN.
 * Existing files of the right size are reused whatever they hold (only
 * what differs is rewritten); others are created or reset. Cheapest
 * with non-decreasing k. 0 or a negative errno.
 */
int crec_build(struct crec *r, uint64_t k, enum crec_policy pol,
	       uint64_t seed, const char *const *out);

/*
 * Identity of the images crec_build() would write for the same
 * arguments, without writing them: a 128-bit hash of the set of
 * (piece, bytes applied) on top of the snapshot, which determines the
 * images. Equal ids mean identical images (up to hash collisions), so
 * a test need check each distinct crash state once.
 */
void crec_state_id(struct crec *r, uint64_t k, enum crec_policy pol,
		   uint64_t seed, uint64_t id[2]);

#endif /* DG_CRASH_RECORDER_H */
