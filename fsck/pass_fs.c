// SPDX-License-Identifier: MIT
/* pass_fs.c -- pass 3: inodes, extents, directories, links, bitmap
 * (the engine's dg_check_fs(), each repair asked about) */
#include <string.h>

#include "fsck.h"

int pass_fs(struct fsck_ctx *c)
{
	int ret;

	c->phase = "filesystem";
	ret = dg_check_fs(c->vol, ctx_event, ctx_ask, c);
	if (ret < 0)
		return fsck_fail(c, "filesystem check failed",
				 strerror(-ret)) | report_exit_code(c);
	return PASS_NEXT;
}
