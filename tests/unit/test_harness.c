// SPDX-License-Identifier: MIT
/* test_harness.c -- the harness's own image registry (harness.c): a
 * process that dies of a signal removes its images, and ends, even when
 * another handler installed after the harness's chains to it by a plain
 * call (as libcommit's SIGSEGV handler does, libcommit/dirty.c) */
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct sigaction prev_term;
static int report_fd = -1;

/* A handler that chains to the one it found, libcommit's way, and
 * tells the parent whether errno came back as it was. */
static void chaining(int sig)
{
	char ok;

	errno = EDOM;
	prev_term.sa_handler(sig);
	ok = errno == EDOM ? 'y' : 'n';
	if (write(report_fd, &ok, 1) != 1)
		_exit(3);
}

/* In the child: two images registered (one never made, so the
 * handler's unlink fails and sets errno), SIGTERM chained, raised. */
static void child(int fd)
{
	char *made = tfile_path("made"), *never = tfile_path("never");
	struct sigaction sa = { .sa_handler = chaining };
	int img = open(made, O_CREAT | O_WRONLY, 0600);

	if (img < 0)
		_exit(4);
	close(img);
	report_fd = fd;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, NULL, &prev_term) ||
	    prev_term.sa_handler == SIG_DFL ||
	    prev_term.sa_handler == SIG_IGN ||
	    sigaction(SIGTERM, &sa, NULL))
		_exit(5);
	/* Never reached by the fixed handler; the old one looped until
	 * this alarm (each SIGTERM handled, put back, raised again). */
	alarm(30);
	raise(SIGTERM);
	free(made);
	free(never);
	_exit(0);
}

/* The chain ends in the default action: the child dies of SIGTERM, its
 * image is gone, and the errno the chaining handler had is kept. */
static void chained_handler_ends(void)
{
	char path[128], ok = 0;
	int fds[2], st = 0;
	pid_t pid;

	struct sigaction cur;

	free(tfile_path("parent")); /* the parent's registry hooked */
	/* Started with SIGTERM ignored: the harness leaves it so. */
	REQUIRE(sigaction(SIGTERM, NULL, &cur) == 0);
	if (cur.sa_handler == SIG_IGN)
		return;
	REQUIRE(pipe(fds) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		child(fds[1]);
	}
	close(fds[1]);
	CHECK_EQ(read(fds[0], &ok, 1), 1);
	close(fds[0]);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st));
	if (WIFSIGNALED(st))
		CHECK_EQ(WTERMSIG(st), SIGTERM);
	else
		fprintf(stderr, "child exited %d\n", WEXITSTATUS(st));
	CHECK_EQ(ok, 'y');
	snprintf(path, sizeof(path), "/dev/shm/dgtest-%d-made.img", (int)pid);
	CHECK(access(path, F_OK) != 0);
	unlink(path);
}

static const struct test_case cases[] = {
	{ "chained_handler_ends", chained_handler_ends },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return test_main(argc, argv, cases);
}
