/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for common/base/workq.h (also run under ThreadSanitizer). */
#include "testutil.h"
#include "util.h"
#include "workq.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

/* ---- helpers ------------------------------------------------------------ */

/* A gate that jobs wait at until it opens. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool open;
	int waiting; /* jobs at the gate now */
};

struct tjob {
	struct workq_job wq; /* first */
	int tag;
	bool wait; /* waits at the gate */
};

struct rec {
	struct gate g;
	pthread_mutex_t mu;
	int order[1024];   /* tags in the order run */
	uint64_t at[1024]; /* when each of them ran (now_ns()) */
	int nrun;
	int running[WORKQ_LANES], most[WORKQ_LANES];
	_Atomic int done, dropped, started;
};

static struct rec R;

static void rec_init(void)
{
	memset(&R, 0, sizeof(R));
	pthread_mutex_init(&R.g.mu, NULL);
	pthread_cond_init(&R.g.cv, NULL);
	pthread_mutex_init(&R.mu, NULL);
}

static void rec_clear(void)
{
	pthread_mutex_destroy(&R.g.mu);
	pthread_cond_destroy(&R.g.cv);
	pthread_mutex_destroy(&R.mu);
}

static void gate_open(void)
{
	pthread_mutex_lock(&R.g.mu);
	R.g.open = true;
	pthread_cond_broadcast(&R.g.cv);
	pthread_mutex_unlock(&R.g.mu);
}

/* Wait until n jobs wait at the gate. */
static void gate_wait_for(int n)
{
	pthread_mutex_lock(&R.g.mu);
	while (R.g.waiting < n)
		pthread_cond_wait(&R.g.cv, &R.g.mu);
	pthread_mutex_unlock(&R.g.mu);
}

static void run(struct workq_job *wj, void *ud)
{
	struct tjob *j = (struct tjob *)wj;
	(void)ud;
	pthread_mutex_lock(&R.mu);
	if (R.nrun < (int)ARRAY_SIZE(R.order)) {
		R.order[R.nrun] = j->tag;
		R.at[R.nrun] = now_ns();
	}
	R.nrun++;
	if (++R.running[wj->lane] > R.most[wj->lane])
		R.most[wj->lane] = R.running[wj->lane];
	pthread_mutex_unlock(&R.mu);
	if (j->wait) {
		pthread_mutex_lock(&R.g.mu);
		R.g.waiting++;
		pthread_cond_broadcast(&R.g.cv);
		while (!R.g.open)
			pthread_cond_wait(&R.g.cv, &R.g.mu);
		R.g.waiting--;
		pthread_mutex_unlock(&R.g.mu);
	}
	pthread_mutex_lock(&R.mu);
	R.running[wj->lane]--;
	pthread_mutex_unlock(&R.mu);
}

static void done(struct workq_job *wj, void *ud)
{
	(void)ud;
	atomic_fetch_add(&R.done, 1);
	free(wj);
}

static void drop(struct workq_job *wj, void *ud)
{
	(void)ud;
	atomic_fetch_add(&R.dropped, 1);
	free(wj);
}

static void thread_start(unsigned lanes, void *ud)
{
	(void)lanes, (void)ud;
	atomic_fetch_add(&R.started, 1);
}

static const struct workq_ops OPS = {
	.run = run,
	.done = done,
	.drop = drop,
	.thread_start = thread_start,
};

static void push(struct workq *q, unsigned lane, int tag, bool wait)
{
	struct tjob *j = xcalloc(1, sizeof(*j));
	j->wq.lane = lane;
	j->tag = tag;
	j->wait = wait;
	workq_push(q, &j->wq);
}

/* ---- tests -------------------------------------------------------------- */

/* One worker runs the jobs in the order pushed; a draining stop runs them
 * all before the worker ends. */
static void test_fifo_drain(void)
{
	rec_init();
	struct workq *q = workq_new(&OPS);
	CU_ASSERT_EQUAL(workq_start(q, 1, 1), 1);
	for (int i = 0; i < 200; i++)
		push(q, 0, i, false);
	workq_stop(q, true);
	CU_ASSERT_EQUAL(workq_join(q, NULL), 0);
	CU_ASSERT_EQUAL(R.nrun, 200);
	for (int i = 0; i < 200; i++)
		CU_ASSERT_EQUAL(R.order[i], i);
	CU_ASSERT_EQUAL(atomic_load(&R.done), 200);
	CU_ASSERT_EQUAL(atomic_load(&R.started), 1);
	q = workq_free(q);
	CU_ASSERT_PTR_NULL(q);
	CU_ASSERT_EQUAL(atomic_load(&R.dropped), 0);
	rec_clear();
}

/* Lane 0 first; workers kept for lane 0 run its jobs while lane 1's
 * block the others; lane 1's limit holds. */
static void test_lanes_classes_limit(void)
{
	rec_init();
	struct workq *q = workq_new(&OPS);
	workq_set_limit(q, 1, 2);
	CU_ASSERT_EQUAL(workq_start(q, 1, 1u << 0), 1);
	CU_ASSERT_EQUAL(workq_start(q, 3, (1u << 0) | (1u << 1)), 3);
	for (int i = 0; i < 5; i++)
		push(q, 1, 100 + i, true);
	gate_wait_for(2);
	/* Two of the slow ones run, the third general worker stays idle,
	 * and quick jobs still run. */
	for (int i = 0; i < 20; i++)
		push(q, 0, i, false);
	for (;;) {
		size_t running, queued;
		workq_counts(q, &running, &queued);
		if (queued == 3 && running == 2)
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&R.mu);
	CU_ASSERT_EQUAL(R.nrun, 22);
	CU_ASSERT_EQUAL(R.most[1], 2);
	pthread_mutex_unlock(&R.mu);
	gate_open();
	workq_stop(q, true);
	workq_join(q, NULL);
	CU_ASSERT_EQUAL(R.nrun, 25);
	CU_ASSERT_EQUAL(R.most[1], 2);
	workq_free(q);
	CU_ASSERT_EQUAL(atomic_load(&R.done), 25);
	rec_clear();
}

static bool even(const struct workq_job *wj, void *arg)
{
	(void)arg;
	return ((const struct tjob *)wj)->tag % 2 == 0;
}

static void count_running(struct workq_job *wj, void *arg)
{
	int *n = arg;
	CU_ASSERT_EQUAL(((struct tjob *)wj)->tag, -1);
	(*n)++;
}

/* Queued jobs can be taken back; running ones are visited. */
static void test_remove_and_running(void)
{
	rec_init();
	struct workq *q = workq_new(&OPS);
	CU_ASSERT_EQUAL(workq_start(q, 1, 3), 1);
	push(q, 0, -1, true);
	gate_wait_for(1);
	for (int i = 0; i < 10; i++)
		push(q, (unsigned)i % 2, i, false);
	struct workq_job *list = workq_remove(q, even, NULL);
	int n = 0, last = 100;
	while (list) {
		struct tjob *j = (struct tjob *)list;
		list = list->next;
		CU_ASSERT_EQUAL(j->tag % 2, 0);
		/* The last taken comes first: lane 0 is taken first. */
		CU_ASSERT_TRUE(j->tag < last || n == 0);
		last = j->tag;
		n++;
		free(j);
	}
	CU_ASSERT_EQUAL(n, 5);
	int nrunning = 0;
	workq_each_running(q, count_running, &nrunning);
	CU_ASSERT_EQUAL(nrunning, 1);
	gate_open();
	workq_stop(q, true);
	workq_join(q, NULL);
	CU_ASSERT_EQUAL(R.nrun, 6);
	for (int i = 1; i < R.nrun; i++)
		CU_ASSERT_EQUAL(R.order[i] % 2, 1);
	workq_free(q);
	rec_clear();
}

/* A stop without drain leaves the queued jobs to workq_free's drop; a
 * join can give up at a time and be called again. */
static void test_stop_join_timeout(void)
{
	rec_init();
	struct workq *q = workq_new(&OPS);
	CU_ASSERT_EQUAL(workq_start(q, 2, 1), 2);
	push(q, 0, 0, true);
	push(q, 0, 1, true);
	gate_wait_for(2);
	for (int i = 0; i < 5; i++)
		push(q, 0, 10 + i, false);
	workq_stop(q, false);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 50000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	CU_ASSERT_EQUAL(workq_join(q, &until), -ETIMEDOUT);
	gate_open();
	CU_ASSERT_EQUAL(workq_join(q, NULL), 0);
	CU_ASSERT_EQUAL(R.nrun, 2);
	workq_free(q);
	CU_ASSERT_EQUAL(atomic_load(&R.dropped), 5);
	CU_ASSERT_EQUAL(atomic_load(&R.done), 2);
	/* Nothing at all queued or started. */
	CU_ASSERT_PTR_NULL(workq_free(workq_new(&OPS)));
	rec_clear();
}

struct pusher {
	struct workq *q;
	int base;
};

static void *pusher_main(void *arg)
{
	struct pusher *p = arg;
	for (int i = 0; i < 2000; i++)
		push(p->q, (unsigned)i % 3, p->base + i, false);
	return NULL;
}

/* Many pushers, many workers, three lanes: every job runs once. */
static void test_many_threads(void)
{
	rec_init();
	struct workq *q = workq_new(&OPS);
	workq_set_limit(q, 2, 1);
	CU_ASSERT_EQUAL(workq_start(q, 2, 1), 2);
	CU_ASSERT_EQUAL(workq_start(q, 3, 7), 3);
	pthread_t th[4];
	struct pusher p[4];
	for (int i = 0; i < 4; i++) {
		p[i] = (struct pusher){q, i * 10000};
		pthread_create(&th[i], NULL, pusher_main, &p[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	workq_stop(q, true);
	workq_join(q, NULL);
	CU_ASSERT_EQUAL(R.nrun, 8000);
	CU_ASSERT_EQUAL(R.most[2], 1);
	CU_ASSERT_EQUAL(atomic_load(&R.done), 8000);
	CU_ASSERT_EQUAL(atomic_load(&R.started), 5);
	workq_free(q);
	rec_clear();
}

static struct tjob *job_new(unsigned lane, int tag)
{
	struct tjob *j = xcalloc(1, sizeof(*j));
	j->wq.lane = lane;
	j->tag = tag;
	return j;
}

/* Wait until n jobs have run. */
static void wait_runs(int n)
{
	for (;;) {
		pthread_mutex_lock(&R.mu);
		int nrun = R.nrun;
		pthread_mutex_unlock(&R.mu);
		if (nrun >= n)
			return;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

/* Delayed jobs run once due, soonest first, not before; others run
 * meanwhile; a hurried one runs at once. */
static void test_delay(void)
{
	rec_init();
	struct workq *q = workq_new(&OPS);
	CU_ASSERT_EQUAL(workq_start(q, 1, 3), 1);
	uint64_t t0 = now_ns();
	workq_push_after(q, &job_new(0, 1)->wq, 300);
	workq_push_after(q, &job_new(1, 2)->wq, 50);
	struct tjob *late = job_new(0, 3);
	workq_push_after(q, &late->wq, 60000);
	push(q, 0, 0, false);
	size_t running, queued;
	workq_counts(q, &running, &queued);
	CU_ASSERT_TRUE(queued >= 3);
	wait_runs(3);
	pthread_mutex_lock(&R.mu);
	CU_ASSERT_EQUAL(R.order[0], 0);
	CU_ASSERT_EQUAL(R.order[1], 2);
	CU_ASSERT_EQUAL(R.order[2], 1);
	CU_ASSERT_TRUE(R.at[1] - t0 >= 50000000u);
	CU_ASSERT_TRUE(R.at[2] - t0 >= 300000000u);
	pthread_mutex_unlock(&R.mu);
	/* The 60 s one still waits; hurried, it runs now. */
	workq_counts(q, &running, &queued);
	CU_ASSERT_EQUAL(queued, 1);
	uint64_t t1 = now_ns();
	CU_ASSERT_TRUE(workq_hurry(q, &late->wq));
	wait_runs(4);
	pthread_mutex_lock(&R.mu);
	CU_ASSERT_EQUAL(R.order[3], 3);
	CU_ASSERT_TRUE(R.at[3] - t1 < 10000000000u);
	pthread_mutex_unlock(&R.mu);
	/* Not waiting (run, freed by done): nothing to hurry. */
	struct tjob other = {.wq.lane = 0};
	CU_ASSERT_FALSE(workq_hurry(q, &other.wq));
	workq_stop(q, true);
	workq_join(q, NULL);
	CU_ASSERT_EQUAL(atomic_load(&R.done), 4);
	workq_free(q);
	rec_clear();
}

/* A draining stop runs the delayed jobs at once; without drain they are
 * dropped by workq_free; workq_remove takes them back too. */
static void test_delay_stop(void)
{
	rec_init();
	struct workq *q = workq_new(&OPS);
	CU_ASSERT_EQUAL(workq_start(q, 2, 1), 2);
	for (int i = 0; i < 4; i++)
		workq_push_after(q, &job_new(0, i)->wq, 60000);
	struct workq_job *list = workq_remove(q, even, NULL);
	int n = 0;
	while (list) {
		struct workq_job *j = list;
		list = list->next;
		CU_ASSERT_EQUAL(((struct tjob *)j)->tag % 2, 0);
		free(j);
		n++;
	}
	CU_ASSERT_EQUAL(n, 2);
	uint64_t t0 = now_ns();
	workq_stop(q, true);
	workq_join(q, NULL);
	CU_ASSERT_TRUE(now_ns() - t0 < 30000000000u);
	CU_ASSERT_EQUAL(R.nrun, 2);
	CU_ASSERT_EQUAL(atomic_load(&R.done), 2);
	workq_free(q);
	rec_clear();

	rec_init();
	q = workq_new(&OPS);
	CU_ASSERT_EQUAL(workq_start(q, 1, 1), 1);
	for (int i = 0; i < 3; i++)
		workq_push_after(q, &job_new(0, i)->wq, 60000);
	workq_stop(q, false);
	workq_join(q, NULL);
	CU_ASSERT_EQUAL(R.nrun, 0);
	workq_free(q);
	CU_ASSERT_EQUAL(atomic_load(&R.dropped), 3);
	rec_clear();
}

static void *delayer_main(void *arg)
{
	struct pusher *p = arg;
	for (int i = 0; i < 500; i++)
		workq_push_after(p->q,
				 &job_new((unsigned)i % 2, p->base + i)->wq,
				 (unsigned)(i % 7));
	return NULL;
}

/* Delayed and immediate pushes from many threads, workers of two
 * classes: every job runs once. */
static void test_delay_many(void)
{
	rec_init();
	struct workq *q = workq_new(&OPS);
	CU_ASSERT_EQUAL(workq_start(q, 1, 2), 1);
	CU_ASSERT_EQUAL(workq_start(q, 2, 7), 2);
	pthread_t th[4];
	struct pusher p[4];
	for (int i = 0; i < 4; i++) {
		p[i] = (struct pusher){q, i * 10000};
		pthread_create(&th[i], NULL, i % 2 ? delayer_main : pusher_main,
			       &p[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	wait_runs(5000);
	workq_stop(q, true);
	workq_join(q, NULL);
	CU_ASSERT_EQUAL(R.nrun, 5000);
	CU_ASSERT_EQUAL(atomic_load(&R.done), 5000);
	workq_free(q);
	rec_clear();
}

int main(void)
{
	static const struct test_case tests[] = {
		{"fifo_drain", test_fifo_drain},
		{"lanes_classes_limit", test_lanes_classes_limit},
		{"remove_and_running", test_remove_and_running},
		{"stop_join_timeout", test_stop_join_timeout},
		{"many_threads", test_many_threads},
		{"delay", test_delay},
		{"delay_stop", test_delay_stop},
		{"delay_many", test_delay_many},
	};
	return run_tests("workq", tests, ARRAY_SIZE(tests));
}
