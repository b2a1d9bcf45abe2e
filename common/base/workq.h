/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A work queue: jobs wait in FIFO lanes (lane 0 first) and worker threads
 * run them. Workers are started in classes, each class taking jobs from
 * the lanes of its mask, so that some workers can be kept for one lane;
 * a lane may cap how many of its jobs run at once. A job may also be
 * pushed after a delay (it waits on the side, soonest first, and joins
 * its lane when its time comes, or at once when hurried). A queued job
 * can be taken back (cancellation), the running ones can be visited, and
 * a stop either drains the queue first or leaves the rest to
 * workq_free(). One mutex guards it all and is innermost: the callbacks
 * that run under it (match, visit) take no lock. The control socket's
 * calls, the mount's kernel-cache invalidations and the vault's
 * full-text work (vault_fulltext.c: one job, pushed after a delay to
 * gather a burst of writes) run on it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define WORKQ_LANES 4
#define WORKQ_CLASSES 4

struct workq;

/* A job is embedded in the caller's struct; lane is set before a push. */
struct workq_job {
	struct workq_job *next; /* the queue's while queued; a list's after */
	unsigned lane;
	uint64_t due; /* the queue's while delayed (now_ns()) */
};

struct workq_ops {
	/* Run one job (no lock of the queue held). */
	void (*run)(struct workq_job *j, void *ud);
	/* After run, once j is no longer running: may free it. Optional. */
	void (*done)(struct workq_job *j, void *ud);
	/* A job that never ran, at workq_free(): may free it. Optional. */
	void (*drop)(struct workq_job *j, void *ud);
	/* In each worker before its first job, with its lane mask. Optional. */
	void (*thread_start)(unsigned lanes, void *ud);
	void *ud;
};

struct workq *workq_new(const struct workq_ops *ops);
/* At most max jobs of lane run at once (0: no limit). */
void workq_set_limit(struct workq *q, unsigned lane, unsigned max);
/* Start n workers of a new class taking jobs from the lanes of the mask
 * (bit i: lane i), lower lanes first; a queued job wakes a worker of the
 * first class started that takes it. Returns how many started. */
int workq_start(struct workq *q, int n, unsigned lanes);
void workq_push(struct workq *q, struct workq_job *j);
/* Push j once delay_ms have passed. A stop ends the wait: with drain, j
 * is queued at once; without, it is left to workq_free(). */
void workq_push_after(struct workq *q, struct workq_job *j, unsigned delay_ms);
/* A job still waiting its delay is queued now: true; false when j was
 * not waiting (queued, running, or not in q). */
bool workq_hurry(struct workq *q, struct workq_job *j);
/* Take the queued jobs (delayed ones too) for which match is true out of
 * the queue; they are returned as a list (next), the last taken first. */
struct workq_job *
workq_remove(struct workq *q,
	     bool (*match)(const struct workq_job *j, void *arg), void *arg);
/* Call visit on every job being run now. */
void workq_each_running(struct workq *q,
			void (*visit)(struct workq_job *j, void *arg),
			void *arg);
/* Jobs being run and jobs queued (delayed ones too). */
void workq_counts(struct workq *q, size_t *ret_running, size_t *ret_queued);
/* Workers take no more jobs (with drain: once the queue is empty) and end
 * after the one they run; does not wait. */
void workq_stop(struct workq *q, bool drain);
/* Wait for the workers to end, until the time given (CLOCK_REALTIME; NULL:
 * for as long as it takes): 0, or -ETIMEDOUT (call again to go on). */
int workq_join(struct workq *q, const struct timespec *until);
/* Stop (without drain unless stopped before), join, hand what never ran to
 * drop, free. Accepts NULL; returns NULL. */
struct workq *workq_free(struct workq *q);
