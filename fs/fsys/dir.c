// SPDX-License-Identifier: MIT
/* dir.c -- directories: dirent pages on media, a hash index in core */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
/* Plain XXH3: names are short; the vector dispatch of the volume's
 * page checksums (volume/xxh.h) would not pay. */
#include <xxhash.h>

#include "fsys_i.h"

#define HASH_TOMB UINT32_MAX

uint8_t dg_mode_dtype(uint32_t mode)
{
	return (uint8_t)((mode & S_IFMT) >> 12); /* DT_* == S_IFMT >> 12 */
}

static uint32_t rec_len(size_t namelen)
{
	return (uint32_t)((sizeof(struct dg_ddirent) + namelen + 7) & ~7u);
}

static size_t name_hash(const char *name)
{
	return (size_t)XXH3_64bits(name, strlen(name));
}

static int hash_rebuild(struct dg_dir *dir, size_t cap)
{
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	dir->work += dir->nents;
	for (size_t i = 0; i < dir->nents; i++) {
		size_t j;

		if (!dir->ents[i].ino)
			continue;
		j = name_hash(dir->ents[i].name) & (cap - 1);
		while (h[j])
			j = (j + 1) & (cap - 1);
		h[j] = (uint32_t)(i + 1);
	}
	free(dir->hash);
	dir->hash = h;
	dir->hcap = cap;
	dir->ntomb = 0;
	return 0;
}

/*
 * Room in the hash for one more name. A rebuild visits every record,
 * deleted ones too, and only a create brings the next one nearer (an
 * unlink turns a live slot into a tombstone: the count stays). Sized
 * for four times the live names alone, a directory that once held a
 * million names and now holds ten would rebuild every twenty creates,
 * each time over the million records. At least one slot per record
 * (4 bytes, beside the record's own 32 in core) keeps the creates
 * between two rebuilds at a quarter of the records or more, so each
 * create pays O(1) of rebuilding, however large the directory grew.
 */
static int hash_make_room(struct dg_dir *dir)
{
	size_t cap = 16;

	if ((dir->nlive + dir->ntomb + 1) * 2 <= dir->hcap)
		return 0;
	while (cap < (dir->nlive + 1) * 4 || cap < dir->nents)
		cap *= 2;
	return hash_rebuild(dir, cap);
}

/* Slot of name in the hash, or of the empty slot that ends its probe. */
static size_t hash_probe(const struct dg_dir *dir, const char *name)
{
	size_t j = name_hash(name) & (dir->hcap - 1);

	for (;;) {
		uint32_t v = dir->hash[j];

		if (v == 0)
			return j;
		if (v != HASH_TOMB && !strcmp(dir->ents[v - 1].name, name))
			return j;
		j = (j + 1) & (dir->hcap - 1);
	}
}

struct dg_dent *dg_dir_find(struct dg_dir *dir, const char *name)
{
	uint32_t v;

	if (!dir->hcap)
		return NULL;
	v = dir->hash[hash_probe(dir, name)];
	return v ? &dir->ents[v - 1] : NULL;
}

/* Add an in-core entry (the caller writes the media record). */
static int dir_index(struct dg_dir *dir, const char *name, size_t namelen,
		     uint64_t ino, uint8_t type, uint64_t page, uint32_t off,
		     uint32_t reclen)
{
	struct dg_dent *e;
	int ret;

	ret = hash_make_room(dir);
	if (ret)
		return ret;
	if (dir->nents == dir->cap) {
		size_t cap = dir->cap ? dir->cap * 2 : 16;
		struct dg_dent *n = realloc(dir->ents, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		dir->ents = n;
		dir->cap = cap;
	}
	e = &dir->ents[dir->nents];
	/* A deleted record needs no name in core: its length is its use. */
	e->name = ino ? strndup(name, namelen) : NULL;
	if (ino && !e->name)
		return -ENOMEM;
	e->ino = ino;
	e->type = type;
	e->page = page;
	e->off = off;
	e->reclen = reclen;
	dir->nents++;
	if (!ino)
		return 0; /* a deleted record: in core, not in the hash */
	dir->nlive++;
	dir->hash[hash_probe(dir, e->name)] = (uint32_t)dir->nents;
	return 0;
}

/* Remember a deleted record so a later name that fits can reuse it. */
static int note_dead(struct dg_dir *dir, size_t idx)
{
	if (dir->ndead == dir->capdead) {
		size_t cap = dir->capdead ? dir->capdead * 2 : 16;
		uint32_t *n = realloc(dir->dead, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		dir->dead = n;
		dir->capdead = cap;
	}
	dir->dead[dir->ndead++] = (uint32_t)idx;
	return 0;
}

/* A deleted record of at least len bytes (first fit among the most
 * recent ones), taken off the dead list; -1 if none. */
static ssize_t take_dead(struct dg_dir *dir, uint32_t len)
{
	size_t scan = dir->ndead < 64 ? dir->ndead : 64;

	for (size_t k = 0; k < scan; k++) {
		size_t j = dir->ndead - 1 - k;
		uint32_t idx = dir->dead[j];

		dir->work++;
		if (dir->ents[idx].reclen >= len) {
			dir->dead[j] = dir->dead[--dir->ndead];
			return idx;
		}
	}
	return -1;
}

void dg_dir_free(struct dg_dir *dir)
{
	for (size_t i = 0; i < dir->nents; i++)
		free(dir->ents[i].name);
	free(dir->dead);
	free(dir->ents);
	free(dir->hash);
	free(dir);
}

bool dg_dir_empty(const struct dg_dir *dir)
{
	return dir->nlive == 0;
}

int dg_dir_new(struct dg_dir **dirp)
{
	struct dg_dir *dir = calloc(1, sizeof(*dir));
	int ret;

	if (!dir)
		return -ENOMEM;
	dir->tail_off = DG_PAGE_SIZE; /* no page yet */
	ret = hash_rebuild(dir, 16);
	if (ret) {
		free(dir);
		return ret;
	}
	*dirp = dir;
	return 0;
}

const struct dg_ddirent *dg_dirent_at(const uint8_t *p, uint32_t off,
				      int *err)
{
	const struct dg_ddirent *r = (const void *)(p + off);
	const char *name = (const char *)(r + 1);

	*err = 0;
	if (off + sizeof(struct dg_ddirent) > DG_PAGE_SIZE || r->reclen == 0)
		return NULL;
	if (r->reclen % 8 || r->reclen < rec_len(r->namelen) ||
	    r->reclen > DG_PAGE_SIZE - off || r->namelen == 0 ||
	    memchr(name, '/', r->namelen) || memchr(name, 0, r->namelen)) {
		*err = -EUCLEAN;
		return NULL;
	}
	return r;
}

int dg_dir_parse_page(struct dg_vol *vol, struct dg_dir *dir, uint64_t ino,
		      uint64_t page, const uint8_t *p)
{
	const struct dg_ddirent *r;
	uint32_t off = 0;
	int err;

	while ((r = dg_dirent_at(p, off, &err))) {
		const char *name = (const char *)(r + 1);

		if (r->ino) {
			int ret = dir_index(dir, name, r->namelen, r->ino,
					    r->type, page, off, r->reclen);
			if (ret)
				return ret;
		} else {
			/* Kept in core as a reusable slot. */
			int ret = dir_index(dir, "", 0, 0, 0, page, off,
					    r->reclen);
			if (ret)
				return ret;
			ret = note_dead(dir, dir->nents - 1);
			if (ret)
				return ret;
		}
		off += r->reclen;
	}
	if (err)
		return DG_CORRUPT(vol, "directory %" PRIu64 " page %" PRIu64
				  " offset %u: bad record", ino, page, off);
	dir->tail_page = page;
	dir->tail_off = off;
	return 0;
}

struct fresh_page {
	uint64_t vpn;
};

static void note_fresh(void *arg, uint64_t fpage, uint64_t vpn, uint64_t n)
{
	(void)fpage;
	(void)n;
	((struct fresh_page *)arg)->vpn = vpn;
}

/*
 * Put a new name into the deleted record ents[idx]: the record keeps its
 * length, so the chain of records in the page stays intact. The in-core
 * slot is reused too, so churn does not grow the directory at all.
 */
static int reuse(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *dp,
		 size_t idx, uint8_t *rec, const char *name, uint64_t ino,
		 uint8_t type)
{
	struct dg_dir *dir = dp->dir;
	struct dg_dent *e = &dir->ents[idx];
	struct dg_ddirent *r = (void *)rec;
	char *copy = strdup(name);
	uint64_t vpn, run;
	int ret;

	(void)fs;
	if (!copy) {
		note_dead(dir, idx);
		return -ENOMEM;
	}
	r->reclen = (uint16_t)e->reclen;
	dg_ext_lookup(dp, e->page, &vpn, &run);
	ret = dg_txn_write(txn, vpn, e->off, rec,
			   (uint32_t)sizeof(*r) + r->namelen);
	if (ret) {
		free(copy);
		note_dead(dir, idx);
		return ret;
	}
	ret = hash_make_room(dir);
	if (ret) {
		free(copy);
		note_dead(dir, idx);
		return ret;
	}
	free(e->name);
	e->name = copy;
	e->ino = ino;
	e->type = type;
	dir->nlive++;
	dir->hash[hash_probe(dir, e->name)] = (uint32_t)(idx + 1);
	return 0;
}

int dg_dir_add(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *dp,
	       const char *name, uint64_t ino, uint8_t type)
{
	struct dg_dir *dir = dp->dir;
	size_t namelen = strlen(name);
	uint32_t len = rec_len(namelen);
	uint8_t rec[sizeof(struct dg_ddirent) + DG_NAME_MAX + 8 + 16] = { 0 };
	struct dg_ddirent *r = (void *)rec;
	uint64_t vpn, run;
	uint32_t wlen = len;
	ssize_t idx;
	int ret;

	r->ino = ino;
	r->reclen = (uint16_t)len;
	r->namelen = (uint8_t)namelen;
	r->type = type;
	memcpy(r + 1, name, namelen);
	idx = take_dead(dir, len);
	if (idx >= 0)
		return reuse(fs, txn, dp, (size_t)idx, rec, name, ino, type);
	if (dir->tail_off + len > DG_PAGE_SIZE) {
		/* A new page, written whole: reused pages hold old bytes. */
		uint8_t *page = calloc(1, DG_PAGE_SIZE);
		struct fresh_page fp = { 0 };
		uint64_t pg = dp->d.size / DG_PAGE_SIZE;

		if (!page)
			return -ENOMEM;
		ret = dg_ext_alloc(fs, txn, dp, pg, 1, note_fresh, &fp);
		if (!ret) {
			memcpy(page, rec, len);
			ret = dg_txn_write(txn, fp.vpn, 0, page, DG_PAGE_SIZE);
		}
		free(page);
		if (ret)
			return ret;
		dp->d.size += DG_PAGE_SIZE;
		dir->tail_page = pg;
		dir->tail_off = 0;
	} else {
		dg_ext_lookup(dp, dir->tail_page, &vpn, &run);
		/* The record and the end marker after it. */
		if (dir->tail_off + len + sizeof(struct dg_ddirent) <=
		    DG_PAGE_SIZE)
			wlen += sizeof(struct dg_ddirent);
		ret = dg_txn_write(txn, vpn, dir->tail_off, rec, wlen);
		if (ret)
			return ret;
	}
	ret = dir_index(dir, name, namelen, ino, type, dir->tail_page,
			dir->tail_off, len);
	if (ret)
		return ret;
	dir->tail_off += len;
	return 0;
}

static int write_header(struct dg_fs *fs, struct dg_txn *txn,
			struct dg_inode *dp, const struct dg_dent *de)
{
	struct dg_ddirent r = { de->ino, (uint16_t)de->reclen,
				(uint8_t)strlen(de->name), de->type };
	uint64_t vpn, run;

	(void)fs;
	dg_ext_lookup(dp, de->page, &vpn, &run);
	return dg_txn_write(txn, vpn, de->off, &r, sizeof(r));
}

int dg_dir_remove(struct dg_fs *fs, struct dg_txn *txn, struct dg_inode *dp,
		  struct dg_dent *de)
{
	struct dg_dir *dir = dp->dir;
	size_t slot = hash_probe(dir, de->name);
	uint64_t ino = de->ino;
	int ret;

	de->ino = 0;
	ret = write_header(fs, txn, dp, de);
	if (ret) {
		de->ino = ino;
		return ret;
	}
	dir->hash[slot] = HASH_TOMB;
	dir->ntomb++;
	dir->nlive--;
	free(de->name);
	de->name = NULL;
	/* The record stays on media with ino 0; failing to remember it
	 * only costs its reuse. */
	note_dead(dir, (size_t)(de - dir->ents));
	return 0;
}

int dg_dir_retarget(struct dg_fs *fs, struct dg_txn *txn, struct dg_dent *de,
		    struct dg_inode *dp, uint64_t ino, uint8_t type)
{
	de->ino = ino;
	de->type = type;
	return write_header(fs, txn, dp, de);
}
