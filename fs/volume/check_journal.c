// SPDX-License-Identifier: MIT
/* check_journal.c -- fsck of the journal: both header slots of every
 * copy (the newest that verifies wins), and updates not yet replayed */
#include <stdio.h>

#include "check.h"
#include "volume_i.h"

void dg_jhead_loc(struct dg_vol *vol, unsigned c, unsigned s, unsigned *dev,
		  uint64_t *page, bool *newest)
{
	uint64_t start, pages;

	dg_jrnl_loc(vol, c, dev, &start, &pages);
	*page = start + s;
	*newest = vol->jrnl.hseq % 2 == s;
}

enum { JH_ZERO, JH_VALID, JH_BAD, JH_ABSENT };

static int jhead_state(struct dg_vol *vol, unsigned c, unsigned s,
		       struct dg_djhead *h, unsigned *devp, uint64_t *offp)
{
	uint64_t page;
	bool newest;
	unsigned dev;
	static const struct dg_djhead zero;

	dg_jhead_loc(vol, c, s, &dev, &page, &newest);
	*devp = dev;
	*offp = page << DG_PAGE_SHIFT;
	if (!vol->devs[dev].present)
		return JH_ABSENT;
	memcpy(h, dg_dev_ptr(&vol->devs[dev], *offp), sizeof(*h));
	if (!memcmp(h, &zero, sizeof(*h)))
		return JH_ZERO;
	/* The decoder recovery uses (journal.c), and the slot its hseq
	 * parity says. */
	if (dg_jhead_decode(vol, h, vol->jrnl.log_bytes, h) ||
	    h->hseq % 2 != s)
		return JH_BAD;
	return JH_VALID;
}

int dg_check_journal(struct dg_vol *vol, bool repair, dg_chk_fn fn, void *arg)
{
	struct dg_chk_event ev;
	int bad = 0;
	bool any_valid = false;

	repair = repair && !vol->read_only;
	for (unsigned s = 0; s < 2; s++) {
		const unsigned n = dg_jrnl_ncopies(vol);
		struct dg_djhead h[DG_MAX_JCOPIES];
		unsigned dev[DG_MAX_JCOPIES];
		uint64_t off[DG_MAX_JCOPIES];
		int st[DG_MAX_JCOPIES], best = -1;

		/* The copy of this slot with the highest hseq that verifies
		 * is the slot; the others are stale, missing or damaged. */
		for (unsigned c = 0; c < n; c++) {
			st[c] = jhead_state(vol, c, s, &h[c], &dev[c], &off[c]);
			if (st[c] == JH_VALID &&
			    (best < 0 || h[c].hseq > h[best].hseq))
				best = (int)c;
		}
		if (best >= 0)
			any_valid = true;
		for (unsigned c = 0; c < n; c++) {
			if (st[c] == JH_ABSENT || (st[c] == JH_ZERO && best < 0))
				continue;
			if (st[c] == JH_VALID &&
			    !memcmp(&h[c], &h[best], sizeof(h[c])))
				continue;
			dg_chk_event_init(&ev, st[c] == JH_VALID
						       ? DG_CHK_JHEAD_STALE
						       : DG_CHK_JHEAD_BAD,
					  "journal");
			ev.dev = (int)dev[c];
			ev.page = (int64_t)(off[c] >> DG_PAGE_SHIFT);
			if (best >= 0)
				snprintf(ev.action, sizeof(ev.action),
					 "copy from journal copy %d", best);
			else
				snprintf(ev.action, sizeof(ev.action),
					 "clear the slot");
			snprintf(ev.detail, sizeof(ev.detail),
				 "journal copy %u header slot %u is %s", c, s,
				 st[c] == JH_VALID ? "stale"
				 : st[c] == JH_ZERO ? "missing" : "damaged");
			ev.fixable = true;
			if (repair) {
				struct dg_djhead z = { 0 };

				ev.fixed = dg_repair_write(vol, dev[c], off[c],
						best >= 0 ? &h[best] : &z,
						sizeof(z)) == 0;
			}
			bad++;
			dg_chk_emit(fn, arg, &ev);
		}
	}
	if (!any_valid) {
		dg_chk_event_init(&ev, DG_CHK_JHEAD_BAD, "journal");
		snprintf(ev.detail, sizeof(ev.detail),
			 "no journal header verifies on any copy");
		snprintf(ev.action, sizeof(ev.action), "write a fresh header");
		ev.fixable = true;
		if (repair && !dg_journal_dirty(vol)) {
			/* The open started an empty journal; make it durable. */
			struct dg_djhead nh = { 0 };

			nh.magic = DG_JHEAD_MAGIC;
			memcpy(nh.vol_uuid, vol->sb.vol_uuid, 16);
			nh.hseq = vol->jrnl.hseq + 2;
			nh.tail_off = vol->jrnl.tail_off;
			nh.tail_seq = vol->jrnl.tail_seq;
			dg_jhead_seal(vol, &nh);
			int wret = 0;

			for (unsigned c = 0; c < dg_jrnl_ncopies(vol) && !wret;
			     c++) {
				unsigned dev;
				uint64_t page;
				bool newest;

				dg_jhead_loc(vol, c, (unsigned)(nh.hseq % 2),
					     &dev, &page, &newest);
				wret = dg_repair_write(vol, dev,
						       page << DG_PAGE_SHIFT,
						       &nh, sizeof(nh));
			}
			vol->jrnl.hseq = nh.hseq;
			ev.fixed = wret == 0;
		}
		bad++;
		dg_chk_emit(fn, arg, &ev);
	}
	if (dg_journal_dirty(vol)) {
		dg_chk_event_init(&ev, DG_CHK_JOURNAL_PENDING, "journal");
		snprintf(ev.detail, sizeof(ev.detail),
			 "journal holds %llu committed updates not yet "
			 "replayed",
			 (unsigned long long)(vol->jrnl.head_seq -
					      vol->jrnl.tail_seq));
		snprintf(ev.action, sizeof(ev.action), "replay the journal");
		ev.fixable = true;
		bad++;
		dg_chk_emit(fn, arg, &ev);
	}
	return bad;
}
