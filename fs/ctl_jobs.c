/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket's calls that need the index: jobs on the work
 * queue (workq.h) in two lanes, quick and slow, run by a pool of workers
 * of which a reserve takes quick calls only; their cancellation, and the
 * wait for the first index.
 */
#include "ctl_server_int.h"
#include "tools.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* How long a tool call waits for the first index before giving up. */
#define INDEX_WAIT_S 120

/* ---- index readiness ---- */

void ctl_server_index_ready(struct ctl_server *s)
{
	pthread_mutex_lock(&s->ready_mu);
	s->ready = true;
	pthread_cond_broadcast(&s->ready_cv);
	pthread_mutex_unlock(&s->ready_mu);
}

void ctl_server_names_ready(struct ctl_server *s)
{
	pthread_mutex_lock(&s->ready_mu);
	s->names_ready = true;
	pthread_cond_broadcast(&s->ready_cv);
	pthread_mutex_unlock(&s->ready_mu);
}

int ctl_index_percent(struct ctl_server *s)
{
	size_t done, total;
	bool ready;
	vault_index_state(s->v, &done, &total, &ready);
	if (ready)
		return 100;
	return total ? (int)(done * 100 / total) : 0;
}

/* Tool calls wait for the first index (documented in README); those
 * that read no link (names_only), for its notes only. */
static bool wait_index(struct ctl_server *s, bool names_only)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += INDEX_WAIT_S;
	pthread_mutex_lock(&s->ready_mu);
	while (!s->ready && !(names_only && s->names_ready) &&
	       !s->ready_stopping && !cancel_requested()) {
		/* In slices: a cancelled call stops waiting. */
		struct timespec slice;
		clock_gettime(CLOCK_REALTIME, &slice);
		slice.tv_nsec += 100000000;
		if (slice.tv_nsec >= 1000000000) {
			slice.tv_sec++;
			slice.tv_nsec -= 1000000000;
		}
		if (slice.tv_sec > until.tv_sec ||
		    (slice.tv_sec == until.tv_sec &&
		     slice.tv_nsec > until.tv_nsec))
			slice = until;
		if (pthread_cond_timedwait(&s->ready_cv, &s->ready_mu,
					   &slice) &&
		    (slice.tv_sec == until.tv_sec &&
		     slice.tv_nsec == until.tv_nsec))
			break;
	}
	bool ok = s->ready || (names_only && s->names_ready);
	pthread_mutex_unlock(&s->ready_mu);
	return ok;
}

/* ---- running a call ---- */

static void run_job(struct ctl_server *s, struct job *j)
{
	const struct ctl_method *m = j->m;
	cJSON *res = NULL;
	int code = 0;
	char *msg = NULL;
	char *gone = m->gone_ok ? NULL : vault_gone(s->v);
	bool indexed = gone ||
		       wait_index(s, m->names_only && m->names_only(j->params));
	if (gone) {
		code = RPC_SERVER_ERROR;
		msg = gone;
	} else if (cancel_requested()) {
		code = RPC_CANCELLED;
		msg = xstrdup("Cancelled");
	} else if (!indexed) {
		code = RPC_SERVER_ERROR;
		msg = xasprintf("The vault is still being indexed (%d%%); try "
				"again in a moment",
				ctl_index_percent(s));
	} else {
		code = m->run(s, j, &res, &msg);
	}
	if (code) {
		ctl_send_error(s, j->c, j->id, code, msg ? msg : "error");
		cJSON_Delete(res);
	} else {
		ctl_client_send(s, j->c, rpc_result_line(j->id, res));
	}
	free(msg);
}

/* ---- the lanes and the workers ---- */

static void job_free(struct job *j)
{
	cJSON_Delete(j->id);
	cJSON_Delete(j->params);
	free(j);
}

/* A job answered (or dropped) is no longer its client's; with
 * wake_closing, a client that closed its side is closed by the main
 * thread once its last answer is out. */
static void job_release(struct ctl_server *s, struct job *j, bool wake_closing)
{
	struct client *c = j->c;
	pthread_mutex_lock(&s->mu);
	c->jobs--;
	pthread_mutex_unlock(&s->mu);
	if (wake_closing) {
		pthread_mutex_lock(&c->mu);
		bool closing = c->close_after_flush;
		pthread_mutex_unlock(&c->mu);
		if (closing)
			ctl_wake(s);
	}
	ctl_client_unref(s, c);
	job_free(j);
}

static struct job *job_of(struct workq_job *wj)
{
	return (struct job *)((char *)wj - offsetof(struct job, wq));
}

struct job_match {
	struct client *c;
	const cJSON *id;
};

static bool job_matches(const struct job *j, const struct job_match *jm)
{
	return j->c == jm->c && (!jm->id || cJSON_Compare(j->id, jm->id, true));
}

static bool queued_matches(const struct workq_job *wj, void *arg)
{
	return job_matches(job_of((struct workq_job *)wj), arg);
}

static void cancel_running(struct workq_job *wj, void *arg)
{
	struct job *j = job_of(wj);
	if (!arg || job_matches(j, arg))
		atomic_store(&j->cancelled, true);
}

struct workq_job *ctl_cancel_jobs(struct ctl_server *s, struct client *c,
				  const cJSON *id)
{
	struct job_match jm = {c, id};
	/* The server's free closes its clients after the queue is gone. */
	if (!s->q)
		return NULL;
	struct workq_job *dropped = workq_remove(s->q, queued_matches, &jm);
	workq_each_running(s->q, cancel_running, &jm);
	return dropped;
}

void ctl_cancel_running(struct ctl_server *s)
{
	workq_each_running(s->q, cancel_running, NULL);
}

void ctl_drop_jobs(struct ctl_server *s, struct workq_job *wj)
{
	while (wj) {
		struct workq_job *next = wj->next;
		struct job *j = job_of(wj);
		ctl_send_error(s, j->c, j->id, RPC_CANCELLED, "Cancelled");
		job_release(s, j, false);
		wj = next;
	}
}

/*
 * The first QUICK_RESERVE workers run quick calls only; the others run
 * both, at a lower CPU priority (nice +5, this thread only): slow work
 * yields the CPU to quick calls, the mount and the user's programs.
 */
static void worker_start(unsigned lanes, void *ud)
{
	(void)ud;
	if (lanes & (1u << LANE_SLOW))
		setpriority(PRIO_PROCESS, (id_t)gettid(), 5);
}

static void worker_run(struct workq_job *wj, void *ud)
{
	struct ctl_server *s = ud;
	struct job *j = job_of(wj);
	atomic_fetch_add(&s->calls, 1);
	cancel_bind(&j->cancelled);
	run_job(s, j);
	cancel_bind(NULL);
}

static void worker_done(struct workq_job *wj, void *ud)
{
	job_release(ud, job_of(wj), true);
}

/* A job that never ran (the server is freed): nobody waits for it. */
static void worker_drop(struct workq_job *wj, void *ud)
{
	job_release(ud, job_of(wj), false);
}

void ctl_enqueue(struct ctl_server *s, struct client *c, const cJSON *id,
		 const struct ctl_method *m, const cJSON *params)
{
	struct job *j = xcalloc(1, sizeof(*j));
	j->c = c;
	j->id = cJSON_Duplicate(id, 1);
	j->m = m;
	j->params = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();
	bool slow = !(m->quick && m->quick(j->params));
	j->wq.lane = slow ? LANE_SLOW : LANE_QUICK;
	pthread_mutex_lock(&s->mu);
	c->refs++;
	c->jobs++;
	pthread_mutex_unlock(&s->mu);
	workq_push(s->q, &j->wq);
}

int ctl_workers_start(struct ctl_server *s, int n)
{
	const struct workq_ops ops = {
		.run = worker_run,
		.done = worker_done,
		.drop = worker_drop,
		.thread_start = worker_start,
		.ud = s,
	};
	s->q = workq_new(&ops);
	/* The reserve first: a failed start costs general ones. */
	int quick = workq_start(s->q, QUICK_RESERVE, 1u << LANE_QUICK);
	int general = workq_start(s->q, n - QUICK_RESERVE,
				  (1u << LANE_QUICK) | (1u << LANE_SLOW));
	return general > 0 ? quick + general : 0;
}
