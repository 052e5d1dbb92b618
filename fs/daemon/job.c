// SPDX-License-Identifier: MIT
/*
 * job.c -- the runner of the daemon's background jobs (the scrub and the
 * online replace): launch, reap, the save every DG_JOB_SAVE_MS, the rate
 * limit, the requests to stop, and the clock they share
 *
 * A job is a thread that passes the rows a batch at a time, its lock
 * dropped while a batch runs so status and commands answer at once. The
 * job's own file says what a batch does and what its record holds.
 */
#include <errno.h>
#include <time.h>

#include "daemon.h"

uint64_t dg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Work of bytes done since since_ms (dg_now_ms) at rate bytes/s (0:
 * unlimited): true, with the CLOCK_REALTIME instant to wait until in
 * *until, when it ran ahead of the rate. */
static bool pace_deadline(uint64_t bytes, uint64_t rate, uint64_t since_ms,
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

void dg_job_init(struct dg_job *j, void *(*main)(void *),
		 void (*save)(void *), void *arg)
{
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	j->main = main;
	j->save = save;
	j->arg = arg;
}

void dg_job_reap(struct dg_job *j)
{
	if (!j->thread_live)
		return;
	/* It ended (pause, cancel, finish) but may still be unlocking. */
	pthread_mutex_unlock(&j->lock);
	pthread_join(j->thread, NULL);
	pthread_mutex_lock(&j->lock);
	j->thread_live = false;
}

int dg_job_launch(struct dg_job *j)
{
	j->req = DG_JOB_GO;
	j->run_since_ms = dg_now_ms();
	j->last_save_ms = j->run_since_ms;
	j->running = true;
	j->save(j->arg);
	if (pthread_create(&j->thread, NULL, j->main, j->arg)) {
		j->running = false;
		return -EAGAIN;
	}
	j->thread_live = true;
	return 0;
}

void dg_job_tick(struct dg_job *j)
{
	if (dg_now_ms() - j->last_save_ms >= DG_JOB_SAVE_MS) {
		j->save(j->arg);
		j->last_save_ms = dg_now_ms();
	}
}

void dg_job_pace(struct dg_job *j, uint64_t bytes, uint64_t rate)
{
	struct timespec until;

	if (!pace_deadline(bytes, rate, j->run_since_ms, &until))
		return;
	while (j->req == DG_JOB_GO &&
	       pthread_cond_timedwait(&j->cond, &j->lock, &until) == 0)
		;
}

void dg_job_done(struct dg_job *j)
{
	j->running = false;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

void dg_job_ask(struct dg_job *j, enum dg_job_req req)
{
	j->req = req;
	pthread_cond_broadcast(&j->cond);
	while (j->running)
		pthread_cond_wait(&j->cond, &j->lock);
}

bool dg_job_running(struct dg_job *j)
{
	bool running;

	pthread_mutex_lock(&j->lock);
	running = j->running;
	pthread_mutex_unlock(&j->lock);
	return running;
}

void dg_job_stop(struct dg_job *j)
{
	pthread_mutex_lock(&j->lock);
	if (j->running)
		j->req = DG_JOB_STOP;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	if (j->thread_live)
		pthread_join(j->thread, NULL);
	j->thread_live = false;
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
}
