// SPDX-License-Identifier: MIT
/*
 * loop_kick.c -- make sure a stop signal ends libfuse's loop
 *
 * libfuse's signal handler only marks the session as exited. Its
 * multi-threaded loop notices in the main thread, which waits in
 * sem_wait() for a signal to interrupt it: it checks the mark, then
 * sleeps. A stop signal handled between the check and the sleep leaves
 * the loop asleep with the mark set, and the daemon running until some
 * other signal comes (test_crash.py test_signal_unmounts_cleanly saw a
 * daemon still running 20 s after SIGINT on a loaded machine). So a
 * thread of ours looks every 100 ms: once the session is marked exited
 * and the loop has not returned, it interrupts the main thread with a
 * signal whose handler does nothing.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "daemon.h"

#define KICK_SIGNAL SIGUSR2

static pthread_t loop_thread, kick_thread;
static struct fuse_session *kick_se;
static atomic_bool loop_returned;
static bool kick_started;

static void kick_handler(int sig)
{
	(void)sig; /* only to interrupt the loop's sem_wait() */
}

static void *kick_main(void *arg)
{
	struct timespec tick = { 0, 100 * 1000 * 1000 };

	(void)arg;
	while (!atomic_load(&loop_returned)) {
		nanosleep(&tick, NULL);
		if (fuse_session_exited(kick_se) &&
		    !atomic_load(&loop_returned))
			pthread_kill(loop_thread, KICK_SIGNAL);
	}
	return NULL;
}

int dg_loop_kick_start(struct fuse_session *se)
{
	struct sigaction sa;
	sigset_t mask;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler;
	/* SA_RESTART: other system calls of the main thread go on;
	 * sem_wait() is never restarted, whatever the flag says. */
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(KICK_SIGNAL, &sa, NULL) < 0)
		return -1;
	kick_se = se;
	loop_thread = pthread_self();
	atomic_store(&loop_returned, false);
	/* The loop's thread must take the kick (the caller blocks only the
	 * stop signals, which the kicker inherits blocked). */
	sigemptyset(&mask);
	sigaddset(&mask, KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &mask, NULL);
	if (pthread_create(&kick_thread, NULL, kick_main, NULL))
		return -1;
	kick_started = true;
	return 0;
}

void dg_loop_kick_stop(void)
{
	atomic_store(&loop_returned, true);
	if (kick_started)
		pthread_join(kick_thread, NULL);
	kick_started = false;
}
