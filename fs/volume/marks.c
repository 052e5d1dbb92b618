// SPDX-License-Identifier: MIT
/* marks.c -- does a device carry this volume's sealed structures? (a
 * device whose superblocks were lost, found by fsck) */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "csum.h"

bool dg_vol_marks_on(struct dg_vol *vol, const char *path)
{
	uint8_t *pg = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ours = false;

	if (!pg || fd < 0 || !vol->redundancy)
		goto out;
	/* A slot of the init map: sealed with this volume's seed. */
	for (unsigned slot = 0; slot < 2 && !ours; slot++) {
		if (pread(fd, pg, DG_PAGE_SIZE,
			  (off_t)dg_cmap_slot_off(vol, slot)) == DG_PAGE_SIZE &&
		    dg_cmap_page_check(vol, 0, pg) == 1)
			ours = true;
	}
	/* Any checksum page copy: sealed with the volume's seed, its
	 * owner and its index. */
	for (unsigned c = 0; c < vol->sb.csum_copies && !ours; c++)
		for (uint64_t i = 0; i < vol->sb.csum_pages && !ours; i++) {
			off_t off = (off_t)(dg_cpage_copy_page(vol, i, c)
					    << DG_PAGE_SHIFT);

			if (pread(fd, pg, DG_PAGE_SIZE, off) != DG_PAGE_SIZE)
				break;
			for (unsigned o = 0; o < vol->ndev && !ours; o++)
				ours = dg_csum_page_check(vol, o, i, pg) == 1;
		}
	/* A journal header or entry sealed with the volume's seed. */
	for (unsigned c = 0; c < 2 && !ours; c++) {
		unsigned jdev;
		uint64_t start, pages;
		uint8_t *area;

		dg_jrnl_loc(vol, c, &jdev, &start, &pages);
		area = malloc(pages << DG_PAGE_SHIFT);
		if (area && pread(fd, area, pages << DG_PAGE_SHIFT,
				  (off_t)(start << DG_PAGE_SHIFT)) ==
				    (ssize_t)(pages << DG_PAGE_SHIFT))
			ours = dg_journal_marks(vol, area,
						pages << DG_PAGE_SHIFT);
		free(area);
	}
	/* A data or parity page that matches its verified checksum as the
	 * page of one of the volume's devices (checksums are seeded with
	 * the volume, the device and the row). */
	for (uint64_t r = 0; r < vol->sb.rows && !ours; r++) {
		off_t off = (off_t)(dg_row_page(vol, r) << DG_PAGE_SHIFT);
		const uint64_t *w = (const uint64_t *)pg;
		bool zero = true;

		if (pread(fd, pg, DG_PAGE_SIZE, off) != DG_PAGE_SIZE)
			break;
		for (unsigned i = 0; i < DG_PAGE_SIZE / 8 && zero; i++)
			zero = w[i] == 0;
		if (zero)
			continue;
		for (unsigned d = 0; d < vol->ndev && !ours; d++) {
			pthread_rwlock_t *lk = dg_row_lock(vol, r);
			uint64_t cs;

			pthread_rwlock_rdlock(lk);
			ours = dg_csum_get(vol, d, r, &cs) == 0 &&
			       cs != DG_CSUM_NONE &&
			       dg_csum_page(vol, d, r, pg) == cs;
			pthread_rwlock_unlock(lk);
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(pg);
	return ours;
}
