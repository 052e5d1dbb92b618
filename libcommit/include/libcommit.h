/* SPDX-License-Identifier: MIT */
/* libcommit.h -- direct load/store access to daxguard files, atomic syncs */
#ifndef LIBCOMMIT_H
#define LIBCOMMIT_H

/*
 * libcommit maps a file of a mounted daxguard volume into memory for
 * direct loads and stores, and makes the stores durable, atomic and
 * redundant (page checksums, cache-line checksums, parity) at sync
 * points -- the PMO model: stores are private until commit_sync().
 *
 *   struct commit_map *m;
 *   if (commit_map_new("/mnt/dg/f", 0, 0, COMMIT_MAP_RDWR, &m) < 0)
 *       errx(1, "%s", commit_errormsg());
 *   char *p = commit_map_addr(m);
 *   memcpy(p + 100, "hello", 5);
 *   commit_sync(m);               // atomic: all of it or none of it
 *   commit_map_delete(&m);        // unsynced stores are discarded
 *
 * Errors: every function that can fail returns 0 (or a count) on success
 * and a negative errno on failure, and then commit_errormsg() describes
 * the failure. The library never prints and never exits.
 *
 * Threads: a map may be used from several threads; stores from any
 * thread are tracked. commit_sync() and commit_map_delete() of one map
 * must not run concurrently with each other. A store made while a sync
 * of the same map is in flight waits (in the fault handler) until the
 * sync has finished and then belongs to the next sync.
 *
 * Signals: libcommit installs a SIGSEGV handler (once, SA_SIGINFO) to
 * track the first store to each page; faults outside its maps are passed
 * to the handler that was installed before it (or the default action).
 * A program that installs its own SIGSEGV handler afterwards must chain
 * to the previous one, or stores to read-write maps will crash it.
 *
 * See libcommit/README.md for the exact semantics.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An opaque map of a daxguard file range. */
struct commit_map;

/* commit_map_new() flags. */
#define COMMIT_MAP_RDONLY 0u	  /* loads only; a store raises SIGSEGV */
#define COMMIT_MAP_RDWR	  (1u << 0) /* loads and stores; one writer per file */
#define COMMIT_MAP_DIRECT (1u << 1) /* refuse unless loads reach the media */

/*
 * Map [offset, offset + len) of the daxguard file at path.
 *
 * offset must be a multiple of the page size (4096); len 0 maps from
 * offset to the end of the file. The map is rounded up to whole pages and
 * surrounded by one inaccessible guard page on each side.
 *
 * COMMIT_MAP_RDWR needs the file to be openable for reading and writing
 * by the caller; the file then has a single writer: another read-write
 * map fails with -EBUSY and write(), truncate() and fallocate(PUNCH_HOLE)
 * from anyone fail with ETXTBSY until the map is deleted. A read-write
 * map that reaches past the end of the file extends the file to
 * offset + len (with zeros), and its holes are allocated (zeroed pages).
 * A read-only map may not reach past the last page of the file (-ENXIO)
 * and allocates nothing: its holes read as zeros.
 *
 * Every permission decision is the kernel's, when the file is opened
 * (modes, ACLs); the daemon passes no descriptor to the caller. Loads go
 * straight to the media when the caller can itself open the volume's
 * devices for reading (a *direct* map, commit_map_is_direct()); else the
 * map reads the file through the mount (the kernel's page cache, filled
 * by the daemon's verified reads) and works the same otherwise. With
 * COMMIT_MAP_DIRECT, a map that cannot be direct fails instead
 * (-EACCES or the error opening the device; commit_errormsg() names the
 * device).
 *
 * Returns 0 and sets *mp, or a negative errno: -ENOTSUP the file is not
 * on a daxguard mount, -EACCES/-EPERM permission denied, -EBUSY another
 * read-write map is open, -EINVAL bad arguments, -ENXIO range past the
 * end of a read-only map or a device missing (degraded volume),
 * -ECONNREFUSED the daemon is not answering.
 */
int commit_map_new(const char *path, uint64_t offset, size_t len,
		   unsigned flags, struct commit_map **mp);

/*
 * As commit_map_new(), for an open descriptor of a daxguard file (which
 * is not closed and may be closed after the call). COMMIT_MAP_RDWR needs
 * fd opened O_RDWR.
 */
int commit_map_new_fd(int fd, uint64_t offset, size_t len, unsigned flags,
		      struct commit_map **mp);

/* 1 when loads of the map read the media directly (the caller opened
 * the volume's devices itself), 0 when they go through the mount. */
int commit_map_is_direct(const struct commit_map *m);

/* First byte of the map: file byte offset maps here. Never fails. */
void *commit_map_addr(const struct commit_map *m);

/* Bytes the map covers: len as given (or to the end of the file when it
 * was 0). Pages beyond it up to the next page boundary are mapped too. */
size_t commit_map_len(const struct commit_map *m);

/*
 * The commit point. Every store made to the map since the last sync is
 * applied atomically: after a crash of this program or of the daemon at
 * any instant, the file holds either all of them or none of them (and
 * the state of the previous completed sync). When it returns 0, the
 * stores are durable and page checksums, cache-line checksums and parity
 * are current; loads then read the media again.
 *
 * Cost is proportional to the pages stored to since the last sync, not
 * to the size of the map; only the 64-byte lines that changed are sent
 * to the daemon.
 *
 * Any size is atomic: a sync larger than one update of the volume is
 * staged by the daemon and published at one commit point (README.md,
 * "Syncs of any size"); it needs as much free space as it changes.
 *
 * Returns 0 or a negative errno: -E2BIG the changes exceed one update
 * and the volume predates staged syncs (mkfs before them), -ENOSPC no
 * room to stage them, -EIO an old line could not be verified
 * or repaired, -EROFS the volume refuses writes, -EBADF a read-only map,
 * -ECONNRESET the daemon went away. On failure nothing was applied and
 * the stores stay pending, so the call can be retried.
 */
int commit_sync(struct commit_map *m);

/*
 * As commit_sync(), for the pages that overlap [off, off + len) of the
 * map (offsets relative to the map); stores to other pages stay pending.
 * -EINVAL if the range lies outside the map.
 */
int commit_sync_range(struct commit_map *m, size_t off, size_t len);

/*
 * Check the media under [off, off + len) of the map against the
 * cache-line checksums the daemon keeps for the map. Reports, does not
 * repair: the next commit_sync() repairs the pages found bad (from
 * parity) before applying anything.
 *
 * Returns the number of 64-byte lines that fail (0: clean) and, when it
 * is not 0, the map offset of the first one in *bad_off (if bad_off is
 * not NULL); or a negative errno: -EOPNOTSUPP the volume has no
 * redundancy, -EINVAL the range lies outside the map.
 */
int commit_verify(struct commit_map *m, size_t off, size_t len,
		  size_t *bad_off);

/*
 * Unmap and release the map, then set *mp to NULL (NULL or *mp NULL is
 * fine). Stores not synced are discarded, as a PMO detach does: the file
 * keeps the state of the last completed sync. Returns 0, or a negative
 * errno if the daemon could not confirm the release (the map is released
 * in this process regardless, and the daemon releases its side when it
 * sees the connection close).
 */
int commit_map_delete(struct commit_map **mp);

/* A description of the last failure in the calling thread (thread-local;
 * "" if none). Valid until the next libcommit call in the thread. */
const char *commit_errormsg(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBCOMMIT_H */
