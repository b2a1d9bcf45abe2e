/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket's calls that need the index: two lanes of queued
 * jobs (quick and slow), the pool of workers that runs them, their
 * cancellation, and the wait for the first index.
 */
#include "ctl_server_int.h"
#include "tools.h"

#include <errno.h>
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

int ctl_index_percent(struct ctl_server *s)
{
	size_t done, total;
	bool ready;
	vault_index_state(s->v, &done, &total, &ready);
	if (ready)
		return 100;
	return total ? (int)(done * 100 / total) : 0;
}

/* Tool calls wait for the first index (documented in README). */
static bool wait_index(struct ctl_server *s)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += INDEX_WAIT_S;
	pthread_mutex_lock(&s->ready_mu);
	while (!s->ready && !s->ready_stopping && !cancel_requested()) {
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
	bool ok = s->ready;
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
	bool indexed = gone || wait_index(s);
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

static void lane_push(struct lane *l, struct job *j)
{
	j->next = NULL;
	if (l->tail)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
	l->n++;
}

static struct job *lane_pop(struct lane *l)
{
	struct job *j = l->head;
	if (!j)
		return NULL;
	l->head = j->next;
	if (!l->head)
		l->tail = NULL;
	l->n--;
	return j;
}

/* Take c's queued jobs (all of them, or the one with that id) out of a
 * lane, onto *dropped (mu held). */
static void lane_take(struct lane *l, struct client *c, const cJSON *id,
		      struct job **dropped)
{
	struct job **pp = &l->head;
	l->tail = NULL;
	while (*pp) {
		struct job *j = *pp;
		if (j->c == c && (!id || cJSON_Compare(j->id, id, true))) {
			*pp = j->next;
			l->n--;
			j->next = *dropped;
			*dropped = j;
		} else {
			l->tail = j;
			pp = &j->next;
		}
	}
}

struct job *ctl_cancel_jobs(struct ctl_server *s, struct client *c,
			    const cJSON *id)
{
	struct job *dropped = NULL;
	lane_take(&s->quick, c, id, &dropped);
	lane_take(&s->slow, c, id, &dropped);
	for (size_t i = 0; i < s->running.n; i++) {
		struct job *j = s->running.v[i];
		if (j->c == c && (!id || cJSON_Compare(j->id, id, true)))
			atomic_store(&j->cancelled, true);
	}
	return dropped;
}

void ctl_drop_jobs(struct ctl_server *s, struct job *j)
{
	while (j) {
		struct job *next = j->next;
		ctl_send_error(s, j->c, j->id, RPC_CANCELLED, "Cancelled");
		pthread_mutex_lock(&s->mu);
		j->c->jobs--;
		pthread_mutex_unlock(&s->mu);
		ctl_client_unref(s, j->c);
		job_free(j);
		j = next;
	}
}

/* Wake one worker that can run a job just queued (mu held). */
static void wake_worker(struct ctl_server *s, bool slow)
{
	if (!slow && s->idle_quick)
		pthread_cond_signal(&s->qcv);
	else if (s->idle_general)
		pthread_cond_signal(&s->cv);
}

/* The next job a worker may run (mu held): quick ones first; a slow one
 * only on a general worker, while fewer than max_slow run. */
static struct job *next_job(struct ctl_server *s, bool general)
{
	struct job *j = lane_pop(&s->quick);
	if (!j && general && s->slow_running < s->max_slow) {
		j = lane_pop(&s->slow);
		if (j)
			s->slow_running++;
	}
	return j;
}

struct worker_arg {
	struct ctl_server *s;
	bool general;
};

/*
 * The first QUICK_RESERVE workers run quick calls only; the others run
 * both, at a lower CPU priority (nice +5, this thread only): slow work
 * yields the CPU to quick calls, the mount and the user's programs.
 */
static void *worker(void *arg)
{
	struct worker_arg *wa = arg;
	struct ctl_server *s = wa->s;
	bool general = wa->general;
	free(wa);
	if (general)
		setpriority(PRIO_PROCESS, (id_t)gettid(), 5);
	for (;;) {
		pthread_mutex_lock(&s->mu);
		struct job *j = NULL;
		while (!s->stopping && !(j = next_job(s, general))) {
			int *idle = general ? &s->idle_general : &s->idle_quick;
			(*idle)++;
			pthread_cond_wait(general ? &s->cv : &s->qcv, &s->mu);
			(*idle)--;
		}
		if (!j) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		/* More queued than the one woken for: pass it on. */
		if (s->quick.n)
			wake_worker(s, false);
		else if (s->slow.n && s->slow_running < s->max_slow)
			wake_worker(s, true);
		pv_push(&s->running, j);
		s->calls++;
		pthread_mutex_unlock(&s->mu);
		cancel_bind(&j->cancelled);
		run_job(s, j);
		cancel_bind(NULL);
		pthread_mutex_lock(&s->mu);
		pv_remove(&s->running, j);
		if (j->slow) {
			s->slow_running--;
			/* A slot for a queued slow job. */
			if (s->slow.n)
				wake_worker(s, true);
		}
		j->c->jobs--;
		pthread_mutex_unlock(&s->mu);
		/* A client that closed its side is closed by the main
		 * thread once its last answer is out. */
		pthread_mutex_lock(&j->c->mu);
		bool closing = j->c->close_after_flush;
		pthread_mutex_unlock(&j->c->mu);
		if (closing)
			ctl_wake(s);
		ctl_client_unref(s, j->c);
		job_free(j);
	}
}

void ctl_enqueue(struct ctl_server *s, struct client *c, const cJSON *id,
		 const struct ctl_method *m, const cJSON *params)
{
	struct job *j = xcalloc(1, sizeof(*j));
	j->c = c;
	j->id = cJSON_Duplicate(id, 1);
	j->m = m;
	j->params = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();
	j->slow = !(m->quick && m->quick(j->params));
	pthread_mutex_lock(&s->mu);
	c->refs++;
	c->jobs++;
	lane_push(j->slow ? &s->slow : &s->quick, j);
	wake_worker(s, j->slow);
	pthread_mutex_unlock(&s->mu);
}

int ctl_workers_start(struct ctl_server *s)
{
	int started = 0;
	for (int i = 0; i < s->nworkers; i++) {
		struct worker_arg *wa = xcalloc(1, sizeof(*wa));
		wa->s = s;
		/* The reserve first: a failed start costs general ones. */
		wa->general = started >= QUICK_RESERVE;
		if (pthread_create(&s->workers[started], NULL, worker, wa) == 0)
			started++;
		else
			free(wa);
	}
	return started;
}

void ctl_jobs_free_queued(struct ctl_server *s)
{
	struct job *j;
	while ((j = lane_pop(&s->quick)) || (j = lane_pop(&s->slow))) {
		j->c->jobs--;
		ctl_client_unref(s, j->c);
		job_free(j);
	}
}
