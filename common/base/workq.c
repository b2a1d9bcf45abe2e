/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The work queue of workq.h: lanes of intrusive FIFO lists, worker
 * classes each with its condition variable and count of idle workers (a
 * push signals one worker that can take the job, never all of them), the
 * delayed jobs in one list by due time (idle workers that take a delayed
 * job's lane wait until the soonest is due; whoever looks for a job first
 * after that moves it to its lane), and the job each worker runs, for
 * workq_each_running().
 */
#include "workq.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>

struct lane {
	struct workq_job *head, *tail;
	size_t n;
	unsigned running, max;
};

struct wclass {
	unsigned lanes;
	pthread_cond_t cv;
	unsigned idle;
};

struct worker {
	struct workq *q;
	unsigned cls;
	pthread_t th;
	bool joined;	       /* the joining thread's */
	struct workq_job *cur; /* mu */
};

struct workq {
	struct workq_ops ops;
	pthread_mutex_t mu;
	struct lane lane[WORKQ_LANES];	  /* mu */
	struct wclass cls[WORKQ_CLASSES]; /* mu; lanes set before start */
	unsigned ncls;			  /* mu */
	struct worker **w;		  /* mu */
	size_t nw;			  /* mu */
	struct workq_job *timed;	  /* mu: delayed, soonest first */
	size_t ntimed;			  /* mu */
	bool stop, drain;		  /* mu */
};

struct workq *workq_new(const struct workq_ops *ops)
{
	struct workq *q = xcalloc(1, sizeof(*q));
	q->ops = *ops;
	pthread_mutex_init(&q->mu, NULL);
	return q;
}

static bool runnable(const struct lane *l)
{
	return l->head && (!l->max || l->running < l->max);
}

/* Signal one idle worker that takes jobs of lane (mu held). */
static void wake(struct workq *q, unsigned lane)
{
	for (unsigned c = 0; c < q->ncls; c++)
		if ((q->cls[c].lanes & (1u << lane)) && q->cls[c].idle) {
			pthread_cond_signal(&q->cls[c].cv);
			return;
		}
}

/* More is queued than one worker takes: pass it on (mu held). */
static void wake_next(struct workq *q)
{
	for (unsigned l = 0; l < WORKQ_LANES; l++)
		if (runnable(&q->lane[l])) {
			wake(q, l);
			return;
		}
}

/* Append j to its lane and wake a worker for it (mu held). */
static void enqueue(struct workq *q, struct workq_job *j)
{
	struct lane *ln = &q->lane[j->lane];
	j->next = NULL;
	if (ln->tail)
		ln->tail->next = j;
	else
		ln->head = j;
	ln->tail = j;
	ln->n++;
	if (runnable(ln))
		wake(q, j->lane);
}

/* Move the delayed jobs due by now (all of them: UINT64_MAX) to their
 * lanes (mu held). */
static void promote(struct workq *q, uint64_t now)
{
	while (q->timed && q->timed->due <= now) {
		struct workq_job *j = q->timed;
		q->timed = j->next;
		q->ntimed--;
		enqueue(q, j);
	}
}

/* When the soonest delayed job of these lanes is due (mu held): false
 * when none waits. */
static bool soonest(const struct workq *q, unsigned lanes, uint64_t *ret)
{
	for (const struct workq_job *j = q->timed; j; j = j->next)
		if (lanes & (1u << j->lane)) {
			*ret = j->due;
			return true;
		}
	return false;
}

void workq_set_limit(struct workq *q, unsigned lane, unsigned max)
{
	pthread_mutex_lock(&q->mu);
	q->lane[lane].max = max;
	wake_next(q);
	pthread_mutex_unlock(&q->mu);
}

/* The next job for a worker of these lanes, or NULL (mu held). */
static struct workq_job *next_job(struct workq *q, unsigned lanes)
{
	if (q->stop && !q->drain)
		return NULL;
	if (q->timed)
		promote(q, now_ns());
	for (unsigned l = 0; l < WORKQ_LANES; l++) {
		struct lane *ln = &q->lane[l];
		if (!(lanes & (1u << l)) || !runnable(ln))
			continue;
		struct workq_job *j = ln->head;
		ln->head = j->next;
		if (!ln->head)
			ln->tail = NULL;
		ln->n--;
		ln->running++;
		j->next = NULL;
		return j;
	}
	return NULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct workq *q = w->q;
	pthread_mutex_lock(&q->mu);
	struct wclass *c = &q->cls[w->cls];
	unsigned lanes = c->lanes;
	pthread_mutex_unlock(&q->mu);
	if (q->ops.thread_start)
		q->ops.thread_start(lanes, q->ops.ud);
	pthread_mutex_lock(&q->mu);
	for (;;) {
		struct workq_job *j;
		while (!(j = next_job(q, lanes)) && !q->stop) {
			uint64_t due;
			c->idle++;
			if (soonest(q, lanes, &due)) {
				struct timespec ts = {
					.tv_sec = (time_t)(due / 1000000000u),
					.tv_nsec = (long)(due % 1000000000u)};
				pthread_cond_timedwait(&c->cv, &q->mu, &ts);
			} else {
				pthread_cond_wait(&c->cv, &q->mu);
			}
			c->idle--;
		}
		if (!j)
			break;
		w->cur = j;
		wake_next(q);
		pthread_mutex_unlock(&q->mu);
		q->ops.run(j, q->ops.ud);
		pthread_mutex_lock(&q->mu);
		w->cur = NULL;
		struct lane *ln = &q->lane[j->lane];
		ln->running--;
		/* A slot for a queued job of a capped lane. */
		if (ln->max && ln->head)
			wake(q, j->lane);
		if (q->ops.done) {
			pthread_mutex_unlock(&q->mu);
			q->ops.done(j, q->ops.ud);
			pthread_mutex_lock(&q->mu);
		}
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

int workq_start(struct workq *q, int n, unsigned lanes)
{
	pthread_mutex_lock(&q->mu);
	if (q->ncls == WORKQ_CLASSES) {
		pthread_mutex_unlock(&q->mu);
		return 0;
	}
	unsigned cls = q->ncls++;
	q->cls[cls].lanes = lanes;
	/* Delays are waited for on now_ns()'s clock. */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cls[cls].cv, &ca);
	pthread_condattr_destroy(&ca);
	int started = 0;
	for (int i = 0; i < n; i++) {
		struct worker *w = xcalloc(1, sizeof(*w));
		w->q = q;
		w->cls = cls;
		if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
			free(w);
			continue;
		}
		q->w = xrealloc(q->w, (q->nw + 1) * sizeof(*q->w));
		q->w[q->nw++] = w;
		started++;
	}
	pthread_mutex_unlock(&q->mu);
	return started;
}

void workq_push(struct workq *q, struct workq_job *j)
{
	pthread_mutex_lock(&q->mu);
	enqueue(q, j);
	pthread_mutex_unlock(&q->mu);
}

void workq_push_after(struct workq *q, struct workq_job *j, unsigned delay_ms)
{
	j->due = now_ns() + (uint64_t)delay_ms * 1000000u;
	pthread_mutex_lock(&q->mu);
	if (q->stop && q->drain) {
		enqueue(q, j);
	} else {
		struct workq_job **pp = &q->timed;
		while (*pp && (*pp)->due <= j->due)
			pp = &(*pp)->next;
		j->next = *pp;
		*pp = j;
		q->ntimed++;
		/* Its workers' wait may end sooner now. */
		wake(q, j->lane);
	}
	pthread_mutex_unlock(&q->mu);
}

bool workq_hurry(struct workq *q, struct workq_job *j)
{
	pthread_mutex_lock(&q->mu);
	struct workq_job **pp = &q->timed;
	while (*pp && *pp != j)
		pp = &(*pp)->next;
	bool found = *pp != NULL;
	if (found) {
		*pp = j->next;
		q->ntimed--;
		enqueue(q, j);
	}
	pthread_mutex_unlock(&q->mu);
	return found;
}

/* Move lane's jobs that match onto *list (mu held). */
static void lane_remove(struct lane *ln,
			bool (*match)(const struct workq_job *, void *),
			void *arg, struct workq_job **list)
{
	struct workq_job **pp = &ln->head;
	ln->tail = NULL;
	while (*pp) {
		struct workq_job *j = *pp;
		if (match(j, arg)) {
			*pp = j->next;
			ln->n--;
			j->next = *list;
			*list = j;
		} else {
			ln->tail = j;
			pp = &j->next;
		}
	}
}

struct workq_job *
workq_remove(struct workq *q,
	     bool (*match)(const struct workq_job *j, void *arg), void *arg)
{
	struct workq_job *list = NULL;
	pthread_mutex_lock(&q->mu);
	for (unsigned l = 0; l < WORKQ_LANES; l++)
		lane_remove(&q->lane[l], match, arg, &list);
	/* The delayed ones, as if a lane of their own. */
	struct lane timed = {.head = q->timed, .n = q->ntimed};
	lane_remove(&timed, match, arg, &list);
	q->timed = timed.head;
	q->ntimed = timed.n;
	pthread_mutex_unlock(&q->mu);
	return list;
}

void workq_each_running(struct workq *q,
			void (*visit)(struct workq_job *j, void *arg),
			void *arg)
{
	pthread_mutex_lock(&q->mu);
	for (size_t i = 0; i < q->nw; i++)
		if (q->w[i]->cur)
			visit(q->w[i]->cur, arg);
	pthread_mutex_unlock(&q->mu);
}

void workq_counts(struct workq *q, size_t *ret_running, size_t *ret_queued)
{
	size_t running = 0, queued;
	pthread_mutex_lock(&q->mu);
	queued = q->ntimed;
	for (unsigned l = 0; l < WORKQ_LANES; l++) {
		running += q->lane[l].running;
		queued += q->lane[l].n;
	}
	pthread_mutex_unlock(&q->mu);
	*ret_running = running;
	*ret_queued = queued;
}

void workq_stop(struct workq *q, bool drain)
{
	pthread_mutex_lock(&q->mu);
	if (!q->stop)
		q->drain = drain;
	q->stop = true;
	if (q->drain)
		promote(q, UINT64_MAX);
	for (unsigned c = 0; c < q->ncls; c++)
		pthread_cond_broadcast(&q->cls[c].cv);
	pthread_mutex_unlock(&q->mu);
}

int workq_join(struct workq *q, const struct timespec *until)
{
	pthread_mutex_lock(&q->mu);
	size_t nw = q->nw;
	pthread_mutex_unlock(&q->mu);
	for (size_t i = 0; i < nw; i++) {
		struct worker *w = q->w[i];
		if (w->joined)
			continue;
		if (until && pthread_timedjoin_np(w->th, NULL, until) != 0)
			return -ETIMEDOUT;
		if (!until)
			pthread_join(w->th, NULL);
		w->joined = true;
	}
	return 0;
}

struct workq *workq_free(struct workq *q)
{
	if (!q)
		return NULL;
	workq_stop(q, false);
	workq_join(q, NULL);
	promote(q, UINT64_MAX);
	for (unsigned l = 0; l < WORKQ_LANES; l++) {
		struct workq_job *j;
		while ((j = q->lane[l].head)) {
			q->lane[l].head = j->next;
			if (q->ops.drop)
				q->ops.drop(j, q->ops.ud);
		}
	}
	for (size_t i = 0; i < q->nw; i++)
		free(q->w[i]);
	free(q->w);
	for (unsigned c = 0; c < q->ncls; c++)
		pthread_cond_destroy(&q->cls[c].cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
	return NULL;
}
