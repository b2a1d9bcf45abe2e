/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the search index's background work
 * (vault_fulltext_start(): its rounds on a work queue): a first build
 * and the substring backfill after it, writes put a moment later with a
 * burst gathered into one round, and a stop in the middle of a build.
 * Also run under ThreadSanitizer.
 */
#include "store.h"
#include "testutil.h"
#include "util.h"

#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

/* The steps the background work reported. */
struct steps {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int texts, subs;
	uint64_t texts_at; /* now_ns() at the last texts step */
	size_t first_n;	   /* the first texts step's n */
};

static void steps_init(struct steps *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
}

static void steps_clear(struct steps *s)
{
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
}

static void on_step(struct vault *v, const struct vault_fulltext_step *step,
		    void *ud)
{
	struct steps *s = ud;
	(void)v;
	pthread_mutex_lock(&s->mu);
	if (step->substrings) {
		s->subs++;
	} else {
		if (!s->texts)
			s->first_n = step->n;
		s->texts++;
		s->texts_at = now_ns();
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Wait until at least texts and subs steps were reported (60 s at
 * most): whether they were. */
static bool steps_wait(struct steps *s, int texts, int subs)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&s->mu);
	while (s->texts < texts || s->subs < subs)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &until))
			break;
	bool ok = s->texts >= texts && s->subs >= subs;
	pthread_mutex_unlock(&s->mu);
	return ok;
}

static int steps_texts(struct steps *s)
{
	pthread_mutex_lock(&s->mu);
	int n = s->texts;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* n notes "N0000.md" ... saying "bassoon i", and the vault opened on
 * them with a search index not yet built (n over what vault_index_all()
 * catches up with by itself). */
static void open_unbuilt(struct tvault *t, int n)
{
	tv_init(t);
	for (int i = 0; i < n; i++) {
		char p[64], body[64];
		snprintf(p, sizeof(p), "f%d/N%04d.md", i % 10, i);
		snprintf(body, sizeof(body), "bassoon %d\n", i);
		tv_write(t, p, body);
	}
	tv_open_with_store(t);
}

static void update(struct tvault *t, const char *name, const char *content)
{
	char *args = xasprintf("{\"name\": \"%s\", \"content\": \"%s\"}", name,
			       content);
	cJSON *r = tv_call_json(t, "update_note", args);
	CU_ASSERT_PTR_NOT_NULL(r);
	cJSON_Delete(r);
	free(args);
}

/* The first round builds the index, then fills the substrings; a write
 * after it is put by a round of its own, not before the delay; a burst
 * of writes takes one or two rounds, not one each. */
static void test_background_rounds(void)
{
	struct tvault t;
	struct steps s;
	steps_init(&s);
	open_unbuilt(&t, 2100);
	struct vault_store_state st;
	vault_store_state(t.v, &st);
	CU_ASSERT(!st.ready);
	CU_ASSERT_EQUAL(vault_fulltext_start(t.v, on_step, &s), 0);
	CU_ASSERT_FATAL(steps_wait(&s, 1, 1));
	vault_store_state(t.v, &st);
	CU_ASSERT(st.ready);
	CU_ASSERT(st.substrings_ready);
	CU_ASSERT_EQUAL(s.first_n, 2100);
	/* Nothing else to do: no round until a write. */
	struct timespec pause = {0, 400000000};
	nanosleep(&pause, NULL);
	CU_ASSERT_EQUAL(steps_texts(&s), 1);

	uint64_t t0 = now_ns();
	update(&t, "N0042", "oboe");
	CU_ASSERT_FATAL(steps_wait(&s, 2, 2));
	pthread_mutex_lock(&s.mu);
	CU_ASSERT(s.texts_at - t0 >= 300000000u);
	pthread_mutex_unlock(&s.mu);
	CU_ASSERT_EQUAL(tv_search_total(&t, "oboe", "fulltext"), 1);

	for (int i = 0; i < 10; i++) {
		char content[32];
		snprintf(content, sizeof(content), "clarinet %d", i);
		update(&t, "N0043", content);
	}
	CU_ASSERT_FATAL(steps_wait(&s, 3, 3));
	nanosleep(&pause, NULL);
	int rounds = steps_texts(&s) - 2;
	CU_ASSERT(rounds >= 1 && rounds <= 3);
	CU_ASSERT_EQUAL(tv_search_total(&t, "clarinet", "fulltext"), 1);
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon", "fulltext"), 2098);

	/* Stopped: writes are still answered (searches put them). */
	vault_fulltext_stop(t.v);
	CU_ASSERT(vault_fulltext_stopped(t.v));
	int before = steps_texts(&s);
	update(&t, "N0044", "piccolo");
	nanosleep(&pause, NULL);
	CU_ASSERT_EQUAL(steps_texts(&s), before);
	tv_close(&t);
	steps_clear(&s);
}

/* A stop during a first build ends it at its next slice; the next start
 * builds on what was committed. */
static void test_stop_during_build(void)
{
	struct tvault t;
	struct steps s;
	steps_init(&s);
	open_unbuilt(&t, 3000);
	CU_ASSERT_EQUAL(vault_fulltext_start(t.v, on_step, &s), 0);
	uint64_t t0 = now_ns();
	vault_fulltext_stop(t.v);
	CU_ASSERT(now_ns() - t0 < 30000000000u);
	CU_ASSERT(steps_texts(&s) <= 1);
	t.v = vault_free(t.v);

	steps_clear(&s);
	steps_init(&s);
	tv_open_with_store(&t);
	CU_ASSERT_EQUAL(vault_fulltext_start(t.v, on_step, &s), 0);
	CU_ASSERT_FATAL(steps_wait(&s, 1, 1));
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon", "fulltext"), 3000);
	tv_close(&t);
	steps_clear(&s);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"background rounds: build, delayed writes, bursts",
		 test_background_rounds},
		{"stop during a first build", test_stop_during_build},
	};
	return run_tests("fulltext", tests, ARRAY_SIZE(tests));
}
