// SPDX-License-Identifier: MIT
/*
 * dio_stale.c FILE ROUNDS [late] -- asynchronous O_DIRECT writes mixed
 * with buffered reads of the same file must never read bytes older than
 * a completed write.
 *
 * A reader thread keeps reading the block under write through the page
 * cache while
 * the main thread submits O_DIRECT writes with io_submit(2) (Linux AIO,
 * through the raw system calls) and, once each completes, reads the
 * block back buffered. Every block carries its round number; a read
 * back with an older one is a stale read. With "late", the first half
 * of the rounds has no reads at all (the daemon then stops invalidating,
 * dio_inval.c) and the reads begin halfway. Prints "stale N of ROUNDS"
 * and exits 1 if N > 0, 2 on a usage or system error.
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BLK    4096
#define NBLK   16

static atomic_bool stop;
static atomic_uint target;	/* the block being written */
static int buffered_fd;

static void *reader(void *arg)
{
	char buf[BLK];

	(void)arg;
	/* Read the block under write, so that a read can race the write
	 * and put the old bytes in the page cache. */
	while (!atomic_load(&stop))
		if (pread(buffered_fd, buf, BLK,
			  (off_t)atomic_load(&target) * BLK) < 0)
			break;
	return NULL;
}

static void fill(char *p, uint64_t round)
{
	for (size_t i = 0; i < BLK; i += sizeof(round))
		memcpy(p + i, &round, sizeof(round));
}

int main(int argc, char **argv)
{
	aio_context_t ctx = 0;
	unsigned long rounds, stale = 0, reads_from = 1;
	uint64_t *last;
	pthread_t th;
	char *wbuf, rbuf[BLK];
	int dfd;

	if (argc < 3 || argc > 4 || (rounds = strtoul(argv[2], NULL, 10)) == 0 ||
	    (argc == 4 && strcmp(argv[3], "late"))) {
		fprintf(stderr, "usage: dio_stale FILE ROUNDS [late]\n");
		return 2;
	}
	if (argc == 4)
		reads_from = rounds / 2 + 1;
	dfd = open(argv[1], O_RDWR | O_CREAT | O_DIRECT, 0644);
	buffered_fd = open(argv[1], O_RDWR);
	last = calloc(NBLK, sizeof(*last));
	if (dfd < 0 || buffered_fd < 0 || !last ||
	    posix_memalign((void **)&wbuf, BLK, BLK) ||
	    syscall(SYS_io_setup, 1, &ctx)) {
		perror("dio_stale: setup");
		return 2;
	}
	/* Round 0 everywhere, written buffered and cached. */
	fill(wbuf, 0);
	for (unsigned b = 0; b < NBLK; b++)
		if (pwrite(buffered_fd, wbuf, BLK, (off_t)b * BLK) != BLK) {
			perror("dio_stale: pwrite");
			return 2;
		}
	srand(1);
	for (unsigned long r = 1; r <= rounds; r++) {
		unsigned b = (unsigned)rand() % NBLK;
		struct iocb cb = { 0 }, *cbs[1] = { &cb };
		struct io_event ev;
		uint64_t got;

		if (r == reads_from)
			pthread_create(&th, NULL, reader, NULL);
		fill(wbuf, r);
		atomic_store(&target, b);
		cb.aio_fildes = (uint32_t)dfd;
		cb.aio_lio_opcode = IOCB_CMD_PWRITE;
		cb.aio_buf = (uint64_t)(uintptr_t)wbuf;
		cb.aio_nbytes = BLK;
		cb.aio_offset = (int64_t)b * BLK;
		if (syscall(SYS_io_submit, ctx, 1, cbs) != 1 ||
		    syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1 ||
		    ev.res != BLK) {
			perror("dio_stale: io_submit");
			return 2;
		}
		last[b] = r;
		if (r < reads_from)
			continue;
		if (pread(buffered_fd, rbuf, BLK, (off_t)b * BLK) != BLK) {
			perror("dio_stale: pread");
			return 2;
		}
		memcpy(&got, rbuf, sizeof(got));
		if (got < last[b])
			stale++;
	}
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	printf("stale %lu of %lu\n", stale, rounds - reads_from + 1);
	syscall(SYS_io_destroy, ctx);
	close(dfd);
	close(buffered_fd);
	free(wbuf);
	free(last);
	return stale ? 1 : 0;
}
