// SPDX-License-Identifier: MIT
/* mount.c -- load the filesystem of an open volume, and let it go */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

/*
 * Read an inode table chunk page by page after a whole read failed: a
 * page no copy of which verifies is noted lost and reads as free slots,
 * which dg_ino_lost() keeps from being handed out. The root's page is
 * not given up here: without a root there is nothing to serve.
 */
static int load_chunk_pages(struct dg_fs *fs, uint32_t c, uint8_t *buf)
{
	uint64_t vpn = dg_itable_chunk(fs, c);

	for (uint32_t p = 0; p < DG_ITABLE_CHUNK_PAGES; p++) {
		uint64_t first = (uint64_t)c * DG_INODES_PER_CHUNK +
				 (uint64_t)p * DG_INODES_PER_PAGE;
		uint8_t *pg = buf + (size_t)p * DG_PAGE_SIZE;
		uint64_t *n;
		int ret = dg_read(fs->vol, vpn + p, 1, pg);

		if (ret != -EIO || first <= DG_ROOT_INO) {
			if (ret)
				return ret;
			continue;
		}
		n = realloc(fs->lost_ino, (fs->nlost + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		fs->lost_ino = n;
		fs->lost_ino[fs->nlost++] = first;
		memset(pg, 0, DG_PAGE_SIZE);
		dg_vol_log(fs->vol, DG_LOG_ERR,
			   "inode table page of inodes %" PRIu64
			   "-%" PRIu64 " is unreadable: their names give EIO "
			   "until fsck", first, first + DG_INODES_PER_PAGE - 1);
	}
	return 0;
}

/* Inodes the mount must act on after its scan: unlinked ones (orphans,
 * stages), published stages, maps open at a crash. Few, whatever the
 * volume's size. */
struct ino_list {
	uint64_t *ino;
	size_t n, cap;
};

static int list_add(struct ino_list *l, uint64_t ino)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		uint64_t *n = realloc(l->ino, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->ino = n;
		l->cap = cap;
	}
	l->ino[l->n++] = ino;
	return 0;
}

/*
 * One chunk of the streaming scan: its records checked, and only what
 * the mount keeps taken from them (the slots in use, counts, the
 * highest generation, the inodes to act on). No inode stays in core:
 * they are read at their first use (icache.c), so an extent page that
 * cannot be read is found then, not here.
 */
static int scan_chunk(struct dg_fs *fs, uint32_t c, uint8_t *buf,
		      struct ino_list *todo)
{
	uint64_t vpn = dg_itable_chunk(fs, c);
	int ret;

	if (vpn < 1 || vpn + DG_ITABLE_CHUNK_PAGES > dg_vol_vpns(fs->vol))
		return DG_CORRUPT(fs->vol, "inode chunk %u at vpn %" PRIu64,
				  c, vpn);
	ret = dg_read(fs->vol, vpn, DG_ITABLE_CHUNK_PAGES, buf);
	if (ret == -EIO)
		ret = load_chunk_pages(fs, c, buf);
	if (ret)
		return ret;
	for (uint32_t s = 0; s < DG_INODES_PER_CHUNK; s++) {
		const struct dg_dinode *d =
			(const void *)(buf + (size_t)s * DG_INODE_SIZE);
		uint64_t ino = (uint64_t)c * DG_INODES_PER_CHUNK + s;

		if (!d->mode || ino == 0)
			continue;
		ret = dg_dinode_check(fs->vol, ino, d);
		if (ret)
			return ret;
		dg_ino_mark(fs, ino, true);
		fs->inodes_used++;
		fs->chunk_used[c]++;
		if (d->generation > fs->gen_counter)
			fs->gen_counter = d->generation;
		if ((d->nlink == 0 || d->stage_ino || d->map_flags) &&
		    list_add(todo, ino))
			return -ENOMEM;
	}
	return 0;
}

/* Unlinked inodes still open at a crash are freed at the next open. */
static void free_orphans(struct dg_fs *fs, const struct ino_list *todo)
{
	for (size_t i = 0; i < todo->n; i++) {
		uint64_t ino = todo->ino[i];
		struct dg_inode *ip;
		int ret = dg_inode_find(fs, ino, false, &ip);

		if (ret == -ENOENT || (!ret && ip->d.nlink))
			continue;
		if (ret || ip->damaged) {
			dg_vol_log(fs->vol, DG_LOG_WARNING,
				   "orphan inode %" PRIu64 " is "
				   "damaged: left for fsck", ino);
			continue;
		}
		dg_vol_log(fs->vol, DG_LOG_NOTICE,
			   "freeing orphan inode %" PRIu64, ino);
		dg_inode_maybe_destroy(fs, ip);
	}
}

/* Over the inodes in core (in a list: a load may come meanwhile). */
static void count_damaged(struct dg_fs *fs, uint64_t *inos, unsigned max,
			  uint64_t *count)
{
	struct dg_inode **ips;
	uint64_t n;

	pthread_rwlock_rdlock(&fs->lock);
	pthread_mutex_lock(&fs->ino_lock);
	if (dg_icache_list(fs, &ips, &n))
		n = 0, ips = NULL;
	pthread_mutex_unlock(&fs->ino_lock);
	*count = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (!ips[i]->damaged)
			continue;
		if (inos && *count < max)
			inos[*count] = ips[i]->ino;
		++*count;
	}
	pthread_rwlock_unlock(&fs->lock);
	free(ips);
}

/* Damage is found where an inode is read: at its first use, as for a
 * directory's pages (docs/design.md); damaged inodes stay in core. */
void dg_fs_get_damage(struct dg_fs *fs, struct dg_fs_damage *d)
{
	uint64_t n;

	*d = (struct dg_fs_damage){ .inode_pages = fs->nlost };
	count_damaged(fs, NULL, 0, &n);
	d->inodes = n;
}

unsigned dg_fs_damaged_inodes(struct dg_fs *fs, uint64_t *inos, unsigned max)
{
	uint64_t n;

	count_damaged(fs, inos, max, &n);
	return n < max ? (unsigned)n : max;
}

/*
 * The registry's quick answer, under its lock: the inodes in core. A
 * page none of them maps but the allocator has in use may be a file's
 * not in core (or metadata): not known (-EAGAIN), so the registry never
 * resets it, and the thorough answer (owner_scan.c) places it later,
 * without the registry's lock. Only a page the allocator has free is
 * no file's: G1, a page is reset only when it is proven free.
 */
static int vpn_owner(void *fs, uint64_t vpn, uint64_t *ino, uint64_t *fpage)
{
	struct dg_fs *f = fs;

	if (!dg_fs_owner(f, vpn, ino, fpage))
		return 0;
	return dg_vpn_allocated(f->vol, vpn) ? -EAGAIN : -ENOENT;
}

int dg_fs_open(struct dg_vol *vol, struct dg_fs **fsp)
{
	struct dg_droot *droot = aligned_alloc(DG_PAGE_SIZE, DG_PAGE_SIZE);
	uint8_t *buf = aligned_alloc(DG_PAGE_SIZE,
				     DG_ITABLE_CHUNK_PAGES * DG_PAGE_SIZE);
	struct dg_fs *fs = calloc(1, sizeof(*fs));
	struct ino_list todo = { 0 };
	struct dg_inode *root;
	int ret;

	if (!droot || !buf || !fs) {
		ret = -ENOMEM;
		goto fail;
	}
	fs->vol = vol;
	pthread_rwlock_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->ino_lock, NULL);
	pthread_mutex_init(&fs->iload_lock, NULL);
	pthread_mutex_init(&fs->dir_lock, NULL);
	pthread_rwlock_init(&fs->map_lock, NULL);
	ret = dg_read(vol, 0, 1, droot);
	if (ret)
		goto fail;
	memcpy(&fs->root, droot->fs, sizeof(fs->root));
	ret = dg_itable_load(fs);
	for (uint32_t c = 0; !ret && c < fs->root.nchunks; c++)
		ret = scan_chunk(fs, c, buf, &todo);
	if (ret)
		goto fail;
	ret = dg_inode_find(fs, DG_ROOT_INO, false, &root);
	if (ret == -ENOENT || (!ret && !S_ISDIR(root->d.mode)))
		ret = DG_CORRUPT(vol, "root directory missing");
	if (ret)
		goto fail;
	/* Directories are read at their first use (dir_load.c), inodes
	 * too (icache.c). */
	fs->next_free_pos = 0;
	/* A published stage is an orphan too: finish it before the
	 * orphans are freed. */
	dg_fstage_recover(fs, todo.ino, todo.n);
	if (!dg_vol_read_only(vol)) {
		free_orphans(fs, &todo);
		dg_fmap_recover(fs, todo.ino, todo.n);
	}
	free(todo.ino);
	free(droot);
	free(buf);
	/* The volume's registry of lost pages asks which file holds one. */
	dg_vol_lost_owner(vol, vpn_owner, fs);
	*fsp = fs;
	return 0;
fail:
	free(todo.ino);
	free(droot);
	free(buf);
	if (fs)
		dg_fs_close(fs);
	return ret;
}

/* Whether ino is one of the n stages named in st. */
static bool staged(const uint64_t *st, size_t n, uint64_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (st[i] == ino)
			return true;
	return false;
}

/*
 * An unlinked file still open or still named by the kernel when it was
 * deleted (a release arrives after the unlink it raced) waits for a
 * forget that an unmount never sends. Freed here as free_orphans()
 * would at the next mount, with the same exceptions (damaged inodes,
 * read-only volume), and also none that is a file's stage or mapped
 * by libcommit: those are the next mount's to finish. Such inodes are
 * all in core (open, named by the kernel or staged).
 */
void dg_fs_kernel_gone(struct dg_fs *fs)
{
	struct dg_inode **ips;
	uint64_t n, *st = NULL;
	size_t nst = 0;

	if (!fs || dg_vol_read_only(fs->vol))
		return;
	pthread_rwlock_wrlock(&fs->lock);
	pthread_mutex_lock(&fs->ino_lock);
	if (dg_icache_list(fs, &ips, &n))
		ips = NULL;
	pthread_mutex_unlock(&fs->ino_lock);
	if (!ips)
		goto out;	/* the next mount frees them */
	st = malloc((n + 1) * sizeof(*st));
	if (!st)
		goto out;
	for (uint64_t i = 0; i < n; i++)
		if (ips[i]->d.stage_ino)
			st[nst++] = ips[i]->d.stage_ino;
	/* A destroy frees only the inode it is given: the list holds. */
	for (uint64_t i = 0; i < n; i++) {
		struct dg_inode *ip = ips[i];

		if (ip->d.nlink || ip->map_rw || ip->map_ro ||
		    staged(st, nst, ip->ino))
			continue;
		ip->nlookup = 0;
		ip->nopen = 0;
		dg_inode_maybe_destroy(fs, ip);
	}
out:
	free(st);
	free(ips);
	pthread_rwlock_unlock(&fs->lock);
}

void dg_fs_close(struct dg_fs *fs)
{
	struct dg_inode **ips = NULL;
	uint64_t n = 0;

	if (!fs)
		return;
	/* Before the inodes go: the volume's lost-page registry asks. */
	if (fs->vol)
		dg_vol_lost_owner(fs->vol, NULL, NULL);
	if (!dg_icache_list(fs, &ips, &n))
		for (uint64_t i = 0; i < n; i++)
			dg_inode_flush_times(fs, ips[i]);
	free(ips);
	dg_icache_free(fs);
	/* The volume may outlive this fs: its hook must not call into it. */
	if (fs->map_hooked)
		dg_vol_set_page_hook(fs->vol, NULL, NULL);
	free(fs->ino_used);
	free(fs->lost_ino);
	free(fs->chunk_vpn);
	free(fs->chunk_used);
	pthread_rwlock_destroy(&fs->map_lock);
	pthread_rwlock_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->ino_lock);
	pthread_mutex_destroy(&fs->iload_lock);
	pthread_mutex_destroy(&fs->dir_lock);
	free(fs);
}
