/* SPDX-License-Identifier: MIT */
/* devlist.h -- a volume's devices as one argument: "a:b:c" or "a,b,c" */
#ifndef DG_TOOLS_DEVLIST_H
#define DG_TOOLS_DEVLIST_H

/* DG_MAX_DEVS of format.h; the tools' helpers do not include the engine. */
#define DG_DEVLIST_MAX 16
#ifdef DG_MAX_DEVS
_Static_assert(DG_DEVLIST_MAX == DG_MAX_DEVS, "devlist.h: DG_MAX_DEVS");
#endif

/*
 * The daemon takes a volume's devices as one argument, and so do fstab,
 * mount(8) and fsck(8), which hand that argument on. Both ':' (the
 * bcachefs convention, safe in sed expressions) and ',' separate; when
 * the list holds a ',', only ',' separates, so that paths with ':' in
 * them (/dev/disk/by-path names) can still be given. A list that names
 * an existing file is one device. Empty elements are skipped.
 *
 * Splits list into at most max strdup'd paths in out. Returns the count,
 * -E2BIG when there are more than max, -EINVAL when there are none,
 * -ENOMEM. On failure nothing is left allocated.
 */
int devlist_split(const char *list, char **out, unsigned max);
void devlist_free(char **paths, unsigned n);

/*
 * The devices of a tool's DEV... arguments: argv as it is, or the one
 * argument split as a list (fsck(8) hands over fstab's source that way).
 * The split paths live until exit. Usage errors go to usage_error().
 */
const char **devlist_args(char **argv, int argc, unsigned *n);

#endif /* DG_TOOLS_DEVLIST_H */
