// SPDX-License-Identifier: MIT
/* test_killpriv.c -- a write by an unprivileged caller drops setuid,
 * setgid and capabilities in the same transaction as its data: one
 * journal entry, never the privilege change without the data */
#include <sys/stat.h>

#include "harness.h"

/* A writer without CAP_FSETID, in none of the file's groups. */
static const struct dg_cred user = { .uid = 1000, .gid = 1000, .umask = -1 };

#define CAP "security.capability"

static const uint8_t cap_v2[20] = { 0x01, 0x00, 0x00, 0x02, 0x01 };

/* The journal's head sequence: one more per transaction. */
static void head_seq_field(void *arg, const struct dg_field *f)
{
	if (!strcmp(f->name, "head_seq"))
		*(uint64_t *)arg = f->u;
}

static uint64_t head_seq(struct dg_vol *vol)
{
	uint64_t seq = UINT64_MAX;

	dg_inspect_journal(vol, head_seq_field, &seq);
	return seq;
}

struct kp {
	struct tvol tv;
	struct dg_vol *vol;
	struct dg_fs *fs;
	uint64_t ino;
};

/* A file "prog" of mode with a capability xattr and 10 bytes. */
static bool kp_make(struct kp *k, const char *tag, uint32_t mode)
{
	struct dg_attr a;

	memset(k, 0, sizeof(*k));
	tvol_make(&k->tv, tag, 3, 1, 32ull << 20, false);
	k->vol = tvol_open(&k->tv, 0);
	if (!k->vol || dg_fs_open(k->vol, &k->fs))
		return false;
	if (dg_fs_mknod(k->fs, 1, "prog", S_IFREG | mode, 0, 1000, 1000, &a))
		return false;
	k->ino = a.ino;
	return dg_fs_write(k->fs, k->ino, 0, "#!/bin/sh\n", 10) == 10 &&
	       dg_fs_setxattr(k->fs, k->ino, CAP, cap_v2, sizeof(cap_v2),
			      0) == 0;
}

static void kp_free(struct kp *k)
{
	if (k->fs)
		dg_fs_close(k->fs);
	dg_vol_close(k->vol);
	tvol_cleanup(&k->tv);
}

static void unpriv_write_is_one_transaction(void)
{
	struct kp k;
	struct dg_attr a;
	char buf[16];
	uint64_t seq;

	REQUIRE(kp_make(&k, "kp-one", 06775));
	seq = head_seq(k.vol);
	CHECK_EQ(dg_fs_write_unpriv(k.fs, k.ino, 10, "x", 1, &user), 1);
	CHECK_EQ(head_seq(k.vol), seq + 1);
	REQUIRE(dg_fs_getattr(k.fs, k.ino, &a) == 0);
	CHECK_EQ(a.mode & 07777, 0775);	/* setgid of a group executable too */
	CHECK_EQ(a.size, 11);
	CHECK_EQ(dg_fs_getxattr(k.fs, k.ino, CAP, buf, sizeof(buf)), -ENODATA);
	/* Nothing left to drop: the next write is as cheap as any. */
	seq = head_seq(k.vol);
	CHECK_EQ(dg_fs_write_unpriv(k.fs, k.ino, 11, "y", 1, &user), 1);
	CHECK_EQ(head_seq(k.vol), seq + 1);
	kp_free(&k);

	/* And it is on the media, not only in core. */
	REQUIRE(kp_make(&k, "kp-media", 04755));
	CHECK_EQ(dg_fs_write_unpriv(k.fs, k.ino, 0, "X", 1, &user), 1);
	dg_fs_close(k.fs);
	REQUIRE(dg_fs_open(k.vol, &k.fs) == 0);
	REQUIRE(dg_fs_getattr(k.fs, k.ino, &a) == 0);
	CHECK_EQ(a.mode & 07777, 0755);
	CHECK_EQ(dg_fs_getxattr(k.fs, k.ino, CAP, buf, sizeof(buf)), -ENODATA);
	kp_free(&k);
}

/* setgid without group execute marks mandatory locking, not privilege:
 * it stays, as the kernel leaves it. */
static void unpriv_write_keeps_sgid_without_xgrp(void)
{
	struct kp k;
	struct dg_attr a;

	REQUIRE(kp_make(&k, "kp-sgid", 02764));
	CHECK_EQ(dg_fs_write_unpriv(k.fs, k.ino, 0, "x", 1, &user), 1);
	REQUIRE(dg_fs_getattr(k.fs, k.ino, &a) == 0);
	CHECK_EQ(a.mode & 07777, 02764);
	kp_free(&k);
}

static void privileged_write_keeps_everything(void)
{
	struct kp k;
	struct dg_attr a;
	char buf[32];

	REQUIRE(kp_make(&k, "kp-root", 06755));
	CHECK_EQ(dg_fs_write(k.fs, k.ino, 10, "x", 1), 1);
	REQUIRE(dg_fs_getattr(k.fs, k.ino, &a) == 0);
	CHECK_EQ(a.mode & 07777, 06755);
	CHECK_EQ(dg_fs_getxattr(k.fs, k.ino, CAP, buf, sizeof(buf)),
		 (int)sizeof(cap_v2));
	kp_free(&k);
}

/* A write that fails changes nothing: the privileges stay with the
 * bytes they were granted for. */
static void failed_unpriv_write_keeps_privileges(void)
{
	struct kp k;
	struct dg_attr a;

	REQUIRE(kp_make(&k, "kp-fail", 04755));
	/* Past the largest file: refused before anything is queued. */
	CHECK_EQ(dg_fs_write_unpriv(k.fs, k.ino, DG_MAX_FILE_SIZE, "x", 1, &user), -EFBIG);
	REQUIRE(dg_fs_getattr(k.fs, k.ino, &a) == 0);
	CHECK_EQ(a.mode & 07777, 04755);
	kp_free(&k);
}

static const struct test_case cases[] = {
	{ "unpriv_write_is_one_transaction", unpriv_write_is_one_transaction },
	{ "unpriv_write_keeps_sgid_without_xgrp",
	  unpriv_write_keeps_sgid_without_xgrp },
	{ "privileged_write_keeps_everything",
	  privileged_write_keeps_everything },
	{ "failed_unpriv_write_keeps_privileges",
	  failed_unpriv_write_keeps_privileges },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return test_main(argc, argv, cases);
}
