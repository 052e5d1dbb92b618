// SPDX-License-Identifier: MIT
/*
 * access.c -- what the layers above may ask of an open volume besides
 * reading and updating pages: a few facts of it, and direct access to
 * the media for mapped files (libcommit, fsys/mapped.c), which check the
 * bytes in place against line checksums of their own and repair through
 * dg_read() whatever fails.
 */
#include <fcntl.h>
#include <unistd.h>

#include "volume_i.h"

uint64_t dg_vol_vpns(const struct dg_vol *vol)
{
	return vol->vpns;
}

bool dg_vol_read_only(const struct dg_vol *vol)
{
	return vol->read_only;
}

bool dg_vol_redundant(const struct dg_vol *vol)
{
	return vol->redundancy;
}

bool dg_vol_has_incompat(const struct dg_vol *vol, uint64_t bit)
{
	/* Atomic: dg_vol_set_incompat() may add a bit meanwhile. */
	return (__atomic_load_n(&vol->sb.incompat, __ATOMIC_ACQUIRE) & bit) ==
	       bit;
}

uint64_t dg_vol_seed(const struct dg_vol *vol)
{
	return vol->seed;
}

const void *dg_vpn_media(struct dg_vol *vol, uint64_t vpn)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);

	return dg_dev_ptr(&vol->devs[l.dev], dg_row_page(vol, l.row)
					     << DG_PAGE_SHIFT);
}

void dg_vpn_hold(struct dg_vol *vol, uint64_t vpn)
{
	pthread_rwlock_rdlock(dg_row_lock(vol, dg_vpn_loc(vol, vpn).row));
}

void dg_vpn_release(struct dg_vol *vol, uint64_t vpn)
{
	pthread_rwlock_unlock(dg_row_lock(vol, dg_vpn_loc(vol, vpn).row));
}

void dg_vpn_fault(struct dg_vol *vol, uint64_t vpn, enum dg_fault kind,
		  enum dg_fault_what what, const char *action)
{
	struct dg_loc l = dg_vpn_loc(vol, vpn);

	dg_fault_note(vol, kind, l.dev, l.row, what, action);
}

int dg_vol_dev_open_ro(struct dg_vol *vol, unsigned dev)
{
	int fd;

	if (dev >= vol->ndev || !vol->devs[dev].present || !vol->devs[dev].path)
		return -ENXIO;
	fd = open(vol->devs[dev].path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
