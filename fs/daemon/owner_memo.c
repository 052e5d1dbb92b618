// SPDX-License-Identifier: MIT
/* owner_memo.c -- fault batches stream the inode table a few times,
 * then at most once an interval, and pages a stream placed are not
 * streamed for again */
#include "owner_memo.h"

bool dg_owner_memo_may_scan(struct dg_owner_memo *m, int64_t now_ns)
{
	int64_t gained;

	if (!m->started) {
		m->started = true;
		m->tokens = DG_OWNER_SCAN_BURST;
		m->refill_ns = now_ns;
	}
	/* A token an interval, up to the burst (a bucket). */
	gained = (now_ns - m->refill_ns) / DG_OWNER_SCAN_INTERVAL_NS;
	if (gained > 0) {
		m->refill_ns += gained * DG_OWNER_SCAN_INTERVAL_NS;
		m->tokens = gained >= DG_OWNER_SCAN_BURST - m->tokens
				    ? DG_OWNER_SCAN_BURST
				    : m->tokens + (unsigned)gained;
	}
	if (m->tokens == DG_OWNER_SCAN_BURST)
		m->refill_ns = now_ns;
	if (!m->tokens)
		return false;
	m->tokens--;
	m->scans++;
	return true;
}

void dg_owner_memo_keep(struct dg_owner_memo *m,
			const struct dg_lost_page *lp, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		/* A page's newest finding replaces its older one. */
		unsigned k;

		for (k = 0; k < m->nseen; k++)
			if (m->seen[k].vpn == lp[i].vpn)
				break;
		if (k == m->nseen) {
			k = m->next;
			m->next = (m->next + 1) % DG_OWNER_MEMO_PAGES;
			if (m->nseen < DG_OWNER_MEMO_PAGES)
				m->nseen++;
		}
		m->seen[k] = lp[i];
	}
}

bool dg_owner_memo_recall(const struct dg_owner_memo *m, uint64_t vpn,
			  struct dg_lost_page *lp)
{
	for (unsigned k = 0; k < m->nseen; k++)
		if (m->seen[k].vpn == vpn) {
			*lp = m->seen[k];
			return true;
		}
	return false;
}
