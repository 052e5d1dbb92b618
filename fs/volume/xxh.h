/* SPDX-License-Identifier: MIT */
/* xxh.h -- XXH3 for the engine, through libxxhash's run-time dispatch */
#ifndef DG_XXH_H
#define DG_XXH_H
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>
/*
 * libxxhash's plain XXH3 entry points are built for the baseline CPU
 * (SSE2 on x86-64); its *_dispatch variants pick AVX2 or AVX-512 at run
 * time, 2-3x faster on a 4 KiB page. This header maps the XXH3 names
 * onto them. The hashes are the same whatever the vector width.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <xxh_x86dispatch.h>
#endif
#endif /* DG_XXH_H */
