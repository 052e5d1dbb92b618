// SPDX-License-Identifier: MIT
/* problem.c -- the problem table: code, message, flags */
#include <stddef.h>

#include "problem.h"

/* Each kind's entry, from the engine's list (check_kinds.h): the
 * name "PR_<pass>_<KIND>", the message and the flags. */
#define P(kind, pass, message, flags) \
	[DG_CHK_##kind] = { "PR_" #pass "_" #kind, message, flags },

static const struct pr_entry table[PR_NR] = {
	DG_CHK_KINDS(P)
};
#undef P

const struct pr_entry *pr_get(int code)
{
	static const struct pr_entry unknown = { "PR_UNKNOWN", "?", 0 };

	if (code < 0 || code >= PR_NR || !table[code].name)
		return &unknown;
	return &table[code];
}

bool pr_mode_allows(enum fsck_mode mode, int code)
{
	const struct pr_entry *p = pr_get(code);

	if (p->flags & PR_NOFIX)
		return false;
	switch (mode) {
	case MODE_Y:
		return true;
	case MODE_P:
		return p->flags & PR_PREEN_OK;
	default:
		return false;
	}
}
