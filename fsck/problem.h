/* SPDX-License-Identifier: MIT */
/* problem.h -- fsck.daxguard's problem table (e2fsck problem.c style) */
#ifndef DG_FSCK_PROBLEM_H
#define DG_FSCK_PROBLEM_H

#include <stdbool.h>
#include <stdint.h>

#include "check.h"

/* Problem codes: PR_<pass>_<WHAT>. Pass 0 devices and superblocks,
 * 1 journal, 2 redundancy (pages, checksums, parity), 3 filesystem.
 * The names are stable IDs in the --json report. One per kind the
 * engine reports, with its value, made from the engine's list
 * (check_kinds.h). */
enum pr_code {
#define PR_ENUM(kind, pass, message, flags) \
	PR_##pass##_##kind = DG_CHK_##kind,
	DG_CHK_KINDS(PR_ENUM)
#undef PR_ENUM
	PR_NR = DG_CHK_NR,
};

#define PR_PREEN_OK (1u << 0) /* -p may repair it without asking */
#define PR_FATAL    (1u << 1) /* the check cannot go on past it */
#define PR_NOFIX    (1u << 2) /* no repair exists (G6: report only) */
#define PR_LOSS	    (1u << 3) /* its repair gives data up: exit 4 even so */
/* Found again as it was left (not repaired): a warning, exit 0 -- what
 * an earlier repair gave up and reported then (fsck converges). */
#define PR_WARNING  (1u << 4)

struct pr_entry {
	const char *name;	/* "PR_2_PAGE_BAD" */
	const char *message;	/* short description */
	unsigned flags;
};
const struct pr_entry *pr_get(int code);

/* -n, -y, -p; ASK: none of them, on a terminal (ask.c) */
enum fsck_mode { MODE_N, MODE_Y, MODE_P, MODE_ASK };
/* Whether a mode repairs a problem without asking: -n never, -y always,
 * -p when PR_PREEN_OK; never one that has no repair (PR_NOFIX). */
bool pr_mode_allows(enum fsck_mode mode, int code);

#endif /* DG_FSCK_PROBLEM_H */
