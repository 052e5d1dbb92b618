// SPDX-License-Identifier: MIT
/* read.c -- the one read path: verify every page, repair from parity */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csum.h"

static uint64_t page_off(struct dg_vol *vol, uint64_t row)
{
	return dg_row_page(vol, row) << DG_PAGE_SHIFT;
}

/* Position of dev in a row: data rank, or k + parity index. */
static unsigned row_pos(struct dg_vol *vol, uint64_t row, unsigned dev)
{
	unsigned p0 = dg_row_parity_first(vol, row);

	if (dg_row_dev_is_parity(vol, row, dev))
		return vol->k + (dev + vol->ndev - p0) % vol->ndev;
	return dg_row_data_rank(vol, row, dev);
}


/*
 * Read (dev, row) and check it against csum without repairing: 1 good,
 * 0 bad or absent. A never-written page is zeros whatever the media
 * holds.
 */
static int fetch_verified(struct dg_vol *vol, unsigned dev, uint64_t row,
			  uint64_t csum, void *buf)
{
	struct dg_dev *d = &vol->devs[dev];

	if (csum == DG_CSUM_NONE) {
		memset(buf, 0, DG_PAGE_SIZE);
		return 1;
	}
	if (!dg_dev_has_row(d, row))
		return 0;
	memcpy(buf, dg_dev_ptr(d, page_off(vol, row)), DG_PAGE_SIZE);
	/* A SIGBUS on the device's mapping (media.h) left zeros where
	 * the page was: the volume is latched now, and the checksum says
	 * whether these bytes are the page's (a page of zeros is). */
	(void)dg_dev_fault_check(d);
	if (dg_csum_page(vol, dev, row, buf) != csum)
		return 0;
	/* Verified: if it was known lost, its next loss is a new one. */
	dg_fault_loss_verified(vol, dev, row);
	return 1;
}

/* The checksum of (dev, row) from the newest copy that verifies; cur
 * may cache the checksum page (NULL: look it up afresh). */
static int csum_of(struct dg_vol *vol, struct dg_csum_cursor *cur,
		   unsigned dev, uint64_t row, uint64_t *csum)
{
	if (cur)
		return dg_csum_lookup(vol, cur, dev, row, csum);
	return dg_csum_get(vol, dev, row, csum);
}

/*
 * Rebuild (dev, row) from the rest of its row into buf and check it
 * against csum. Other bad pages in the row are rebuilt too when parity
 * allows and written back. Caller holds the row lock for writing.
 */
/* The outcome of a fault whose bytes were rebuilt: repaired when they
 * were written back, else recovered (for the reader only). */
static enum dg_fault outcome(bool written)
{
	return written ? DG_FAULT_REPAIRED : DG_FAULT_RECOVERED;
}

/* A bad page whose bytes img were proven elsewhere (how: the repair it
 * would be, noted: the fault event's action): written back where that
 * may be done, and its fault noted repaired or recovered. */
static void put_back(struct dg_vol *vol, unsigned dev, uint64_t row,
		     enum dg_fault_what what, const void *img, const char *how,
		     const char *noted)
{
	bool fixed = dg_repair_ok(vol, DG_CHK_PAGE_BAD, dev, row, what,
				  "checksum mismatch", how);

	/* Repaired only when it was written: a failure latched the volume
	 * (media.h), and the reader has its bytes either way. */
	if (fixed)
		fixed = dg_repair_page(vol, dev, row, img) == 0;
	dg_fault_note(vol, outcome(fixed), dev, row, what, noted);
}

static int rebuild_from_row(struct dg_vol *vol, unsigned dev, uint64_t row,
			    uint64_t csum, bool pinned, void *buf)
{
	unsigned m = vol->k + vol->parity, want = row_pos(vol, row, dev);
	uint64_t cs[DG_MAX_DEVS];
	bool known[DG_MAX_DEVS];
	uint8_t *pages[DG_MAX_DEVS], *mem;
	bool lost[DG_MAX_DEVS] = { false }, fixed;
	int ret = -EIO;

	if (!vol->parity)
		return -EIO;
	mem = aligned_alloc(DG_PAGE_SIZE, (size_t)m * DG_PAGE_SIZE);
	if (!mem)
		return -ENOMEM;
	for (unsigned p = 0; p < m; p++) {
		unsigned pd = dg_row_pos_dev(vol, row, p);

		pages[p] = mem + (size_t)p * DG_PAGE_SIZE;
		known[p] = true;
		if (p == want) {
			lost[p] = true;
			cs[p] = csum;
			continue;
		}
		if (csum_of(vol, NULL, pd, row, &cs[p]) < 0) {
			lost[p] = true;
			known[p] = false; /* cannot verify a rebuild */
			continue;
		}
		lost[p] = !fetch_verified(vol, pd, row, cs[p], pages[p]);
		/* A page fsck gave up (given_up.c) holds wrong bytes, but
		 * the very bytes its row's parity was computed from: they
		 * count for rebuilding a neighbour (which must still verify
		 * on its own), and are never returned. */
		if (lost[p] && dg_dev_has_row(&vol->devs[pd], row) &&
		    dg_csum_is_given_up(vol, pd, row, cs[p], pages[p]))
			lost[p] = false;
		/* A bad neighbour in the metadata zone comes back from its
		 * ditto copy (proven by its own checksum), so that parity
		 * still covers the page wanted. */
		if (lost[p] && p < vol->k &&
		    dg_ditto_read(vol, pd, row, cs[p], pages[p]) == 0) {
			lost[p] = false;
			if (!vol->devs[pd].present)
				continue;
			dg_fault_note(vol, DG_FAULT_DETECTED, pd, row, DG_WHAT_DATA,
				      "found while rebuilding a neighbour");
			put_back(vol, pd, row, DG_WHAT_DATA, pages[p],
				 "rewrite it from its ditto copy",
				 "from a ditto copy");
		}
	}
	if (dg_parity_rebuild(vol, pages, lost, DG_PAGE_SIZE) < 0)
		goto out;
	for (unsigned p = 0; p < m; p++) {
		unsigned pd = dg_row_pos_dev(vol, row, p);
		struct dg_dev *d = &vol->devs[pd];

		if (!lost[p])
			continue;
		/* pinned: the bytes of a page fsck gave up, which its row's
		 * parity holds; for a copy to a new device, never a reader. */
		if (p == want && pinned &&
		    dg_csum_is_given_up(vol, pd, row, cs[p], pages[p])) {
			memcpy(buf, pages[p], DG_PAGE_SIZE);
			continue;
		}
		if (!known[p] ||
		    (cs[p] != DG_CSUM_NONE &&
		     dg_csum_page(vol, pd, row, pages[p]) != cs[p])) {
			if (p == want)
				goto out; /* parity disagrees too */
			continue;
		}
		if (p == want)
			memcpy(buf, pages[p], DG_PAGE_SIZE);
		if (p != want)
			dg_fault_note(vol, DG_FAULT_DETECTED, pd, row,
				      p < vol->k ? DG_WHAT_DATA : DG_WHAT_PARITY,
				      "found while rebuilding a neighbour");
		/* A page never written has nothing to repair; nor has a
		 * row of a device being filled in past its fill row (a
		 * replace onto a missing slot writes it there in order,
		 * persisting a batch at once: replace.c). */
		fixed = dg_dev_has_row(d, row) && (cs[p] == DG_CSUM_NONE ||
			dg_repair_ok(vol, DG_CHK_PAGE_BAD, pd, row,
				     p < vol->k ? DG_WHAT_DATA : DG_WHAT_PARITY,
				     "checksum mismatch",
				     "rebuild it from parity"));
		if (fixed && cs[p] != DG_CSUM_NONE)
			fixed = dg_repair_page(vol, pd, row, pages[p]) == 0;
		if (p != want)
			dg_fault_note(vol, outcome(fixed), pd, row,
				      p < vol->k ? DG_WHAT_DATA : DG_WHAT_PARITY,
				      "rebuilt from parity");
	}
	ret = 0;
out:
	free(mem);
	return ret;
}

/* A page known lost that read back after all (its row's other pages
 * were repaired since): its detection is noted now, as a new fault, and
 * the loss forgotten. */
static void found_after_all(struct dg_vol *vol, unsigned dev, uint64_t row,
			    enum dg_fault_what what, bool repeat)
{
	if (!repeat)
		return;
	dg_fault_loss_forget(vol, dev, row);
	dg_fault_note(vol, DG_FAULT_DETECTED, dev, row, what,
		      "checksum mismatch");
}

int dg_page_read_cur(struct dg_vol *vol, struct dg_csum_cursor *cur,
		     unsigned dev, uint64_t row, void *buf, uint64_t *csum_out)
{
	struct dg_dev *d = &vol->devs[dev];
	enum dg_fault_what what;
	uint64_t csum;
	bool repeat;
	int ret;

	if (!vol->redundancy) {
		memcpy(buf, dg_dev_ptr(d, page_off(vol, row)), DG_PAGE_SIZE);
		*csum_out = DG_CSUM_NONE;
		/* No checksum to tell zeros put in by a SIGBUS (media.h)
		 * from the page's bytes: a device that faulted reads EIO. */
		return dg_dev_fault_check(d);
	}
	ret = csum_of(vol, cur, dev, row, &csum);
	if (ret < 0)
		return -EIO;
	*csum_out = csum;
	if (fetch_verified(vol, dev, row, csum, buf))
		return 0;
	/* A page already found lost (fault.c) is met again, not found
	 * again: counted, logged and an event once (issue 32, item 3). */
	repeat = dg_fault_loss_known(vol, dev, row, csum);
	if (!dg_dev_has_row(d, row)) { /* degraded: only in parity */
		/* Absence is not a read error (issue 32, item 7): the
		 * device's state says it is missing or stale. */
		ret = rebuild_from_row(vol, dev, row, csum, false, buf);
		if (ret == -EIO && dg_ditto_read(vol, dev, row, csum, buf) == 0)
			ret = 0;
		if (ret == -EIO && repeat)
			dg_fault_note_repeat(vol, dev, row, DG_WHAT_DATA,
					     "EIO: device missing");
		else if (ret == -EIO)
			dg_fault_note_loss(vol, dev, row, DG_WHAT_DATA, csum,
					   "EIO: device missing");
		else if (!ret && repeat)
			dg_fault_loss_forget(vol, dev, row);
		return ret;
	}

	/* The checksum came from the newest verified copy of its page, so
	 * a page that matches only an older copy is stale: it is rebuilt
	 * from parity like any other bad page, never "proven" by the copy
	 * it happens to agree with (docs/integrity.md "The rules"). */
	what = dg_row_dev_is_parity(vol, row, dev) ? DG_WHAT_PARITY
						   : DG_WHAT_DATA;
	if (!repeat)
		dg_fault_note(vol, DG_FAULT_DETECTED, dev, row, what,
			      "checksum mismatch");
	if (rebuild_from_row(vol, dev, row, csum, false, buf) == 0) {
		found_after_all(vol, dev, row, what, repeat);
		put_back(vol, dev, row, what, buf, "rebuild it from parity",
			 "rebuilt from parity");
		return 0;
	}
	/* Beyond parity: the volume's own metadata has ditto copies. */
	if (dg_ditto_read(vol, dev, row, csum, buf) == 0) {
		found_after_all(vol, dev, row, what, repeat);
		put_back(vol, dev, row, what, buf,
			 "rewrite it from its ditto copy", "from a ditto copy");
		return 0;
	}
	if (repeat)
		dg_fault_note_repeat(vol, dev, row, what, "EIO");
	else
		dg_fault_note_loss(vol, dev, row, what, csum, "EIO");
	return -EIO;
}

int dg_page_read_locked(struct dg_vol *vol, unsigned dev, uint64_t row,
			void *buf, uint64_t *csum_out)
{
	return dg_page_read_cur(vol, NULL, dev, row, buf, csum_out);
}

int dg_page_read_given_up(struct dg_vol *vol, unsigned dev, uint64_t row,
			  void *buf)
{
	uint64_t csum;

	if (!vol->redundancy || dg_csum_get(vol, dev, row, &csum) < 0 ||
	    csum == DG_CSUM_NONE)
		return -EIO;
	if (fetch_verified(vol, dev, row, csum, buf))
		return -EIO;		/* it verifies: not given up */
	if (dg_dev_has_row(&vol->devs[dev], row))
		return dg_csum_is_given_up(vol, dev, row, csum, buf) ? 0 : -EIO;
	/* Missing: what parity pins, rebuilt raw from the rest of the row. */
	return rebuild_from_row(vol, dev, row, csum, true, buf);
}

/* Read one batch of pages under shared row locks. Returns the number of
 * pages read before one failed verification (the caller repairs it
 * under an exclusive lock), or a negative errno: -EIO when no copy of a
 * page's checksum verifies (already counted; retrying would count it
 * again and cannot do better). */
static int64_t read_batch(struct dg_vol *vol, uint64_t vpn, uint64_t n,
			  uint8_t *buf, struct dg_csum_cursor *cur)
{
	unsigned locks[64], nl = 0;
	int64_t done = 0;

	for (uint64_t i = 0; i < n; i++) {
		unsigned l = dg_vpn_loc(vol, vpn + i).row % DG_ROW_LOCKS;
		unsigned j = nl;

		while (j > 0 && locks[j - 1] > l)
			j--;
		if (j > 0 && locks[j - 1] == l)
			continue;
		memmove(locks + j + 1, locks + j, (nl - j) * sizeof(*locks));
		locks[j] = l;
		nl++;
	}
	for (unsigned i = 0; i < nl; i++)
		pthread_rwlock_rdlock(&vol->row_locks[locks[i]]);
	cur->owner = -1; /* entries may have changed since the last batch */
	for (; done < (int64_t)n; done++) {
		struct dg_loc l = dg_vpn_loc(vol, vpn + done);
		uint8_t *p = buf + (size_t)done * DG_PAGE_SIZE;
		uint64_t csum;

		if (!dg_dev_has_row(&vol->devs[l.dev], l.row))
			break;
		if (!vol->redundancy) {
			memcpy(p, dg_dev_ptr(&vol->devs[l.dev],
					     page_off(vol, l.row)),
			       DG_PAGE_SIZE);
			/* As in dg_page_read_cur(). */
			if (dg_dev_fault_check(&vol->devs[l.dev])) {
				memset(p, 0, DG_PAGE_SIZE);
				done = -EIO;
				break;
			}
			continue;
		}
		if (dg_csum_lookup(vol, cur, l.dev, l.row, &csum) < 0) {
			done = -EIO;
			break;
		}
		if (!fetch_verified(vol, l.dev, l.row, csum, p))
			break;
	}
	for (unsigned i = 0; i < nl; i++)
		pthread_rwlock_unlock(&vol->row_locks[locks[i]]);
	return done;
}

int dg_read(struct dg_vol *vol, uint64_t vpn, uint64_t npages, void *buf)
{
	struct dg_csum_cursor cur;
	uint8_t *out = buf;
	int ret = 0;

	if (vpn >= vol->vpns || npages > vol->vpns - vpn)
		return -EINVAL;
	dg_csum_cursor_init(&cur);
	while (npages) {
		uint64_t n = npages < 64 ? npages : 64;
		int64_t got = read_batch(vol, vpn, n, out, &cur);

		if (got < 0) {
			ret = (int)got;
			break;
		}
		if (got < (int64_t)n) {
			/* Slow path: verify again and repair exclusively. */
			struct dg_loc l = dg_vpn_loc(vol, vpn + got);
			pthread_rwlock_t *lk = dg_row_lock(vol, l.row);
			uint64_t csum;

			pthread_rwlock_wrlock(lk);
			ret = dg_page_read_locked(vol, l.dev, l.row,
						  out + got * DG_PAGE_SIZE,
						  &csum);
			pthread_rwlock_unlock(lk);
			if (ret) {
				/* G1: never leave bytes that failed
				 * verification in the caller's buffer. */
				memset(out + got * DG_PAGE_SIZE, 0,
				       DG_PAGE_SIZE);
				break;
			}
			got++;
		}
		vpn += got;
		npages -= got;
		out += got * DG_PAGE_SIZE;
	}
	dg_csum_cursor_fini(&cur);
	return ret;
}

int dg_read_bytes(struct dg_vol *vol, uint64_t vpn, uint32_t off,
		  uint32_t len, void *buf)
{
	uint8_t *page;
	int ret;

	if (off > DG_PAGE_SIZE || len > DG_PAGE_SIZE - off)
		return -EINVAL;
	page = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	if (!page)
		return -ENOMEM;
	ret = dg_read(vol, vpn, 1, page);
	if (!ret)
		memcpy(buf, page + off, len);
	free(page);
	return ret;
}
