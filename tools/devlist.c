// SPDX-License-Identifier: MIT
/* devlist.c -- a volume's devices as one argument: "a:b:c" or "a,b,c" */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devlist.h"
#include "util.h"

void devlist_free(char **paths, unsigned n)
{
	while (n > 0)
		free(paths[--n]);
}

int devlist_split(const char *list, char **out, unsigned max)
{
	char sep = strchr(list, ',') ? ',' : ':';
	const char *p = list;
	unsigned n = 0;

	if (access(list, F_OK) == 0)
		sep = 0;
	while (*p) {
		const char *end = sep ? strchr(p, sep) : NULL;
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len) {
			if (n == max)
				goto fail_e2big;
			out[n] = strndup(p, len);
			if (!out[n])
				goto fail_nomem;
			n++;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return n ? (int)n : -EINVAL;

fail_e2big:
	devlist_free(out, n);
	return -E2BIG;
fail_nomem:
	devlist_free(out, n);
	return -ENOMEM;
}

const char **devlist_args(char **argv, int argc, unsigned *n)
{
	/* Static: the paths are the program's for its whole run. */
	static char *list[DG_DEVLIST_MAX];
	int ret;

	if (argc == 0)
		usage_error("no devices given");
	if (argc > 1) {
		if (argc > DG_DEVLIST_MAX)
			usage_error("at most %d devices", DG_DEVLIST_MAX);
		*n = (unsigned)argc;
		return (const char **)argv;
	}
	ret = devlist_split(argv[0], list, DG_DEVLIST_MAX);
	if (ret == -E2BIG)
		usage_error("at most %d devices", DG_DEVLIST_MAX);
	if (ret < 0)
		usage_error("bad device list '%s': %s", argv[0],
			    strerror(-ret));
	*n = (unsigned)ret;
	return (const char **)list;
}
