// SPDX-License-Identifier: MIT
/* mount.c -- load the filesystem of an open volume, and let it go */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsys_i.h"

int dg_dinode_check(const struct dg_vol *vol, uint64_t ino,
		    const struct dg_dinode *d)
{
	uint32_t t = d->mode & S_IFMT;

	if (t != S_IFREG && t != S_IFDIR && t != S_IFLNK && t != S_IFIFO &&
	    t != S_IFSOCK && t != S_IFCHR && t != S_IFBLK)
		return DG_CORRUPT(vol, "inode %" PRIu64 ": bad mode %#o",
				  ino, d->mode);
	if (d->nextents > (1u << 26))
		return DG_CORRUPT(vol, "inode %" PRIu64 ": %u extents",
				  ino, d->nextents);
	return 0;
}

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

static int load_chunk(struct dg_fs *fs, uint32_t c, uint8_t *buf)
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
		struct dg_inode *ip;

		if (!d->mode || ino == 0)
			continue;
		ret = dg_dinode_check(fs->vol, ino, d);
		if (ret)
			return ret;
		ip = dg_inode_alloc_core(ino);
		if (!ip)
			return -ENOMEM;
		ip->d = *d;
		fs->itab[ino] = ip;
		fs->inodes_used++;
		fs->chunk_used[c]++;
		if (d->generation > fs->gen_counter)
			fs->gen_counter = d->generation;
		ret = dg_ext_load(fs, ip);
		if (ret == -EIO) {
			dg_vol_log(fs->vol, DG_LOG_ERR,
				   "inode %" PRIu64 ": an extent page is "
				   "unreadable: its data gives EIO until fsck",
				   ino);
			ip->damaged = true;
			ret = 0;
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* Unlinked inodes still open at a crash are freed at the next open. */
static void free_orphans(struct dg_fs *fs)
{
	for (uint64_t ino = 1; ino < fs->icap; ino++) {
		struct dg_inode *ip = fs->itab[ino];

		if (ip && ip->d.nlink == 0 && ip->damaged) {
			dg_vol_log(fs->vol, DG_LOG_WARNING,
				   "orphan inode %" PRIu64 " is "
				   "damaged: left for fsck", ino);
		} else if (ip && ip->d.nlink == 0) {
			dg_vol_log(fs->vol, DG_LOG_NOTICE,
				   "freeing orphan inode %" PRIu64,
				   ino);
			dg_inode_maybe_destroy(fs, ip);
		}
	}
}

void dg_fs_get_damage(struct dg_fs *fs, struct dg_fs_damage *d)
{
	*d = (struct dg_fs_damage){ .inode_pages = fs->nlost };
	pthread_rwlock_rdlock(&fs->lock);
	for (uint64_t ino = 1; ino < fs->icap; ino++)
		d->inodes += fs->itab[ino] && fs->itab[ino]->damaged;
	pthread_rwlock_unlock(&fs->lock);
}

unsigned dg_fs_damaged_inodes(struct dg_fs *fs, uint64_t *inos, unsigned max)
{
	unsigned n = 0;

	pthread_rwlock_rdlock(&fs->lock);
	for (uint64_t ino = 1; ino < fs->icap && n < max; ino++)
		if (fs->itab[ino] && fs->itab[ino]->damaged)
			inos[n++] = ino;
	pthread_rwlock_unlock(&fs->lock);
	return n;
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
	int ret;

	if (!droot || !buf || !fs) {
		ret = -ENOMEM;
		goto fail;
	}
	fs->vol = vol;
	pthread_rwlock_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->ino_lock, NULL);
	pthread_mutex_init(&fs->dir_lock, NULL);
	pthread_rwlock_init(&fs->map_lock, NULL);
	ret = dg_read(vol, 0, 1, droot);
	if (ret)
		goto fail;
	memcpy(&fs->root, droot->fs, sizeof(fs->root));
	ret = dg_itable_load(fs);
	if (!ret)
		ret = dg_itab_grow(fs, (uint64_t)fs->root.nchunks * DG_INODES_PER_CHUNK);
	for (uint32_t c = 0; !ret && c < fs->root.nchunks; c++)
		ret = load_chunk(fs, c, buf);
	if (ret)
		goto fail;
	if (!fs->itab[DG_ROOT_INO] || !S_ISDIR(fs->itab[DG_ROOT_INO]->d.mode)) {
		ret = DG_CORRUPT(vol, "root directory missing");
		goto fail;
	}
	/* Directories are read at their first use (dir_load.c). */
	fs->next_free_pos = 0;
	/* A published stage is an orphan too: finish it before the
	 * orphans are freed. */
	dg_fstage_recover(fs);
	if (!dg_vol_read_only(vol)) {
		free_orphans(fs);
		dg_fmap_recover(fs);
	}
	free(droot);
	free(buf);
	/* The volume's registry of lost pages asks which file holds one. */
	dg_vol_lost_owner(vol, vpn_owner, fs);
	*fsp = fs;
	return 0;
fail:
	free(droot);
	free(buf);
	if (fs)
		dg_fs_close(fs);
	return ret;
}

/*
 * An unlinked file still open or still named by the kernel when it was
 * deleted (a release arrives after the unlink it raced) waits for a
 * forget that an unmount never sends. Freed here as free_orphans()
 * would at the next mount, with the same exceptions (damaged inodes,
 * read-only volume), and also none that is a file's stage or mapped
 * by libcommit: those are the next mount's to finish.
 */
void dg_fs_kernel_gone(struct dg_fs *fs)
{
	uint8_t *staged;

	if (!fs || dg_vol_read_only(fs->vol))
		return;
	pthread_rwlock_wrlock(&fs->lock);
	staged = calloc(fs->icap / 8 + 1, 1);
	if (!staged)
		goto out;	/* the next mount frees them */
	for (uint64_t ino = 1; ino < fs->icap; ino++) {
		uint64_t s = fs->itab[ino] ? fs->itab[ino]->d.stage_ino : 0;

		if (s && s < fs->icap)
			staged[s / 8] |= (uint8_t)(1u << (s % 8));
	}
	for (uint64_t ino = 1; ino < fs->icap; ino++) {
		struct dg_inode *ip = fs->itab[ino];

		if (!ip || ip->d.nlink || ip->map_rw || ip->map_ro ||
		    (staged[ino / 8] & (1u << (ino % 8))))
			continue;
		ip->nlookup = 0;
		ip->nopen = 0;
		dg_inode_maybe_destroy(fs, ip);
	}
	free(staged);
out:
	pthread_rwlock_unlock(&fs->lock);
}

void dg_fs_close(struct dg_fs *fs)
{
	if (!fs)
		return;
	/* Before the inodes go: the volume's lost-page registry asks. */
	if (fs->vol)
		dg_vol_lost_owner(fs->vol, NULL, NULL);
	for (uint64_t i = 0; i < fs->icap; i++) {
		if (fs->itab[i])
			dg_inode_flush_times(fs, fs->itab[i]);
		dg_inode_free_core(fs->itab[i]);
	}
	/* The volume may outlive this fs: its hook must not call into it. */
	if (fs->map_hooked)
		dg_vol_set_page_hook(fs->vol, NULL, NULL);
	free(fs->itab);
	free(fs->lost_ino);
	free(fs->chunk_vpn);
	free(fs->chunk_used);
	pthread_rwlock_destroy(&fs->map_lock);
	pthread_rwlock_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->ino_lock);
	pthread_mutex_destroy(&fs->dir_lock);
	free(fs);
}
