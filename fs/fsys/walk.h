/* SPDX-License-Identifier: MIT */
/* walk.h -- private to the filesystem layer: the tolerant walk of the
 * structures that fsck's checks (check_fs.c) and the injector's logical
 * faults (lfault.c) are built on */
#ifndef DG_WALK_H
#define DG_WALK_H

#include "fscheck.h"

struct went {			/* a directory entry as found */
	uint64_t dir, ino;
	uint64_t fpage;		/* dirent page (file page of the dir) */
	uint32_t off;
	uint8_t type;
	bool dead;		/* removed by a repair */
	char *name;
};

struct wino {
	bool used;
	bool bad;		/* invalid: judged once the entries are read
				 * (check_fs.c), still so if its repair is
				 * declined */
	bool lost;		/* its inode table page was given up */
	struct dg_dinode d;
	struct dg_dextent *ext;
	uint32_t next;
	uint64_t *emap;
	uint32_t nemap;
	uint32_t refs, subdirs;
	uint64_t first_parent;	/* dir of the first entry naming it */
	bool reached;
};

#define DG_WALK_GROUP DG_VPNMAP_LEAF

struct walk {
	struct dg_vol *vol;
	dg_chk_fn fn;
	dg_chk_ask_fn ask;
	void *arg;
	bool classify_only;
	uint64_t vpns;
	/* class and owner of each used vpn (dg_walk_load() allocates
	 * it, dg_walk_free() frees it): a leaf per DG_WALK_GROUP vpns
	 * some mark touched, so the passes over every vpn visit those
	 * leaves only. */
	struct dg_vpnmap *map;
	bool nomem;	/* a leaf could not be allocated: -ENOMEM */
	struct dg_droot *root;
	struct dg_dfsroot fsr;
	uint64_t *chunk_vpn;	/* first vpn of each chunk (itable.c) */
	uint64_t icap;
	struct wino *in;
	struct went *ents;
	size_t nents, capents;
	uint8_t *page;
	unsigned fixes, problems;
};

/* Load what the structures hold, classifying every vpn (w->map);
 * -EUCLEAN when the roots are unusable, -ENOMEM. */
int dg_walk_load(struct walk *w);
void dg_walk_free(struct walk *w);
/* Class and owner of vpn v (free, 0 beyond the volume). */
static inline uint8_t dg_walk_cls(const struct walk *w, uint64_t v)
{
	return dg_vpnmap_cls(w->map, v);
}
static inline uint64_t dg_walk_owner(const struct walk *w, uint64_t v)
{
	return dg_vpnmap_owner(w->map, v);
}
/* Directory entries against the inodes they name; reachability from
 * the root (wino.reached). */
void dg_walk_check_entries(struct walk *w);
void dg_walk_reach(struct walk *w);
/* The vpn of file page fpage of a walked inode (0: a hole). */
void dg_walk_ext_lookup(const struct wino *wi, uint64_t fpage, uint64_t *vpn);
/* Where inode ino's record lives. */
void dg_walk_ino_loc(const struct walk *w, uint64_t ino, uint64_t *vpn,
		     uint32_t *off);

#endif /* DG_WALK_H */
