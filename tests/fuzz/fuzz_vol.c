// SPDX-License-Identifier: MIT
/* fuzz_vol.c -- the harnesses' volume (fuzz_vol.h) */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_vol.h"

const uint8_t dg_fuzz_uuid[16] = { 0xd9, 0x0a, 0x9e, 0x1c, 0x5f, 0x22,
				   0x4b, 0x37, 0x8a, 0x01, 0xf0, 0x0d,
				   0xfa, 0x22, 0x5e, 0xed };

static void quiet(enum dg_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

struct dg_vol *dg_fuzz_vol_make(const char *tag, char paths[][64])
{
	const char *devs[DG_FUZZ_NDEV];
	struct dg_format_opts o = { .parity = DG_FUZZ_PARITY,
				    .size = DG_FUZZ_SIZE, .force = true,
				    .uuid = dg_fuzz_uuid };
	struct dg_vol *vol;
	char err[256];

	for (unsigned i = 0; i < DG_FUZZ_NDEV; i++) {
		snprintf(paths[i], 64, "/dev/shm/dg-%s-%d-%u.img", tag,
			 (int)getpid(), i);
		devs[i] = paths[i];
	}
	if (dg_format(devs, DG_FUZZ_NDEV, &o, NULL) ||
	    dg_vol_open(devs, DG_FUZZ_NDEV, 0, &vol, err, sizeof(err))) {
		fprintf(stderr, "fuzz: cannot make a volume in /dev/shm\n");
		for (unsigned i = 0; i < DG_FUZZ_NDEV; i++)
			unlink(paths[i]);
		exit(1);
	}
	return vol;
}

struct dg_vol *dg_fuzz_vol(void)
{
	static struct dg_vol *vol;
	char paths[DG_FUZZ_NDEV][64];

	if (vol)
		return vol;
	dg_log_set_func(quiet);
	vol = dg_fuzz_vol_make("fuzz", paths);
	for (unsigned i = 0; i < DG_FUZZ_NDEV; i++)
		unlink(paths[i]);
	return vol;
}
