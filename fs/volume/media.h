/* SPDX-License-Identifier: MIT */
/* media.h -- device layer: libpmem2 mappings, writes, persists, recording */
#ifndef DG_MEDIA_H
#define DG_MEDIA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpmem2.h>

/* One device of a volume. Reads are plain loads from base; every store
 * goes through dg_dev_write() and becomes durable at dg_dev_persist(). */
struct dg_dev {
	bool present;
	bool rdonly;
	bool coarse;		/* persist costs a syscall, not a flush per
				 * line: one call over a span is cheapest */
	unsigned idx;		/* device index, once known */
	int fd;
	char *path;
	struct pmem2_source *src;
	struct pmem2_map *map;
	uint8_t *base;
	uint64_t size;		/* bytes mapped */
	pmem2_memcpy_fn memcpy_fn;
	pmem2_memset_fn memset_fn;
	pmem2_persist_fn persist_fn;
};

/*
 * Test hook (DESIGN §7 crash states): when set, every write and every
 * persist of every device is reported, in program order, before it
 * happens. Process-wide; set it before opening the volume.
 */
struct dg_media_observer {
	void (*write)(void *arg, const char *path, uint64_t off,
		      const void *src, size_t len);
	void (*persist)(void *arg, const char *path, uint64_t off, size_t len);
	void *arg;
};
void dg_media_set_observer(const struct dg_media_observer *obs);

/* Open path and map it whole. Takes an exclusive (or, read-only, shared)
 * lock on the file: -EBUSY if another process holds it; nolock (only
 * with rdonly) takes none, to look at a volume a daemon has open. */
int dg_dev_open(struct dg_dev *d, const char *path, bool rdonly, bool nolock,
		char *err, size_t errlen);
void dg_dev_close(struct dg_dev *d);
/* Store without flushing; off + len must lie within the device. */
void dg_dev_write(struct dg_dev *d, uint64_t off, const void *src,
		  size_t len);
void dg_dev_zero(struct dg_dev *d, uint64_t off, size_t len);
void dg_dev_persist(struct dg_dev *d, uint64_t off, size_t len);
static inline const uint8_t *dg_dev_ptr(const struct dg_dev *d, uint64_t off)
{
	return d->base + off;
}

/* A set of device ranges written but not yet persisted, coalesced so a
 * commit persists each touched region once. */
struct dg_flushset {
	struct dg_flushrange {
		unsigned dev;
		uint64_t off, len;
	} *r;
	unsigned n, cap;
	bool oom;		/* an add failed: persist everything touched */
};
void dg_flushset_init(struct dg_flushset *fs);
void dg_flushset_add(struct dg_flushset *fs, unsigned dev, uint64_t off,
		     uint64_t len);
void dg_flushset_fini(struct dg_flushset *fs);

#endif /* DG_MEDIA_H */
