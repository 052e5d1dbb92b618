// SPDX-License-Identifier: MIT
/* old_layout.h -- a test volume as made before an incompat feature */
#ifndef DG_CRASH_OLD_LAYOUT_H
#define DG_CRASH_OLD_LAYOUT_H

#include <stdint.h>

struct tvol;

/* Clear incompat feature bit(s) in both superblocks of every device of
 * tv, resealed: the volume as a mkfs without the feature made it, for
 * features nothing else of the layout depends on (JOURNAL_V2,
 * RESERVED_ROWS). The bit must be set (REQUIRE). */
void tvol_clear_incompat(struct tvol *tv, uint64_t bits);

#endif /* DG_CRASH_OLD_LAYOUT_H */
