// SPDX-License-Identifier: MIT
/* pace.c -- the clock, the rate limit and the thread handling the
 * background scrub and the online replace share */
#include <time.h>

#include "daemon.h"

uint64_t dg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool dg_pace_deadline(uint64_t bytes, uint64_t rate, uint64_t since_ms,
		      struct timespec *until)
{
	uint64_t due_ms, t;

	if (!rate)
		return false;
	due_ms = bytes * 1000 / rate;
	t = dg_now_ms() - since_ms;
	if (due_ms <= t)
		return false;
	/* CLOCK_REALTIME: the callers' condition variables use it. */
	clock_gettime(CLOCK_REALTIME, until);
	until->tv_sec += (time_t)((due_ms - t) / 1000);
	until->tv_nsec += (long)((due_ms - t) % 1000) * 1000000;
	if (until->tv_nsec >= 1000000000) {
		until->tv_sec++;
		until->tv_nsec -= 1000000000;
	}
	return true;
}

void dg_job_reap(pthread_mutex_t *lock, pthread_t thread, bool *live)
{
	if (!*live)
		return;
	/* It ended (pause, cancel, finish) but may still be unlocking. */
	pthread_mutex_unlock(lock);
	pthread_join(thread, NULL);
	pthread_mutex_lock(lock);
	*live = false;
}

void dg_job_end(pthread_mutex_t *lock, pthread_cond_t *cond, pthread_t thread,
		bool *live)
{
	pthread_cond_broadcast(cond);
	pthread_mutex_unlock(lock);
	if (*live)
		pthread_join(thread, NULL);
	*live = false;
	pthread_cond_destroy(cond);
	pthread_mutex_destroy(lock);
}
