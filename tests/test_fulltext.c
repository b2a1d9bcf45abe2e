/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the search index's background work
 * (vault_fulltext_start(): its rounds on a work queue): a first build
 * and the substring backfill after it, writes put a moment later with a
 * burst gathered into one round, and a stop in the middle of a build;
 * the tokens a build's read-ahead makes, which the index must take as
 * if it had tokenised the text itself; the word index's segments merged
 * after a build. Also run under ThreadSanitizer.
 */
#include "store.h"
#include "testutil.h"
#include "tokenizer.h"
#include "util.h"

#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

/* The steps the background work reported. */
struct steps {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int texts, subs;
	int ahead;	   /* read-aheads of the commonest words reported */
	size_t ahead_n;	   /* the words of the last one */
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
	if (step->read_ahead) {
		s->ahead++;
		s->ahead_n = step->n;
	} else if (step->substrings) {
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

/* Wait until the commonest words were read ahead (60 s at most): how
 * many of them there were, or 0. */
static size_t ahead_wait(struct steps *s)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&s->mu);
	while (!s->ahead)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &until))
			break;
	size_t n = s->ahead ? s->ahead_n : 0;
	pthread_mutex_unlock(&s->mu);
	return n;
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

/* The first round builds the index, then fills the substrings, and the
 * commonest words are read ahead, once; a write after it is put by a
 * round of its own, not before the delay; a burst of writes takes one or
 * two rounds, not one each. */
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
	/* Every note has "bassoon": one word, its positions, not a
	 * question's (no stop words). */
	CU_ASSERT_EQUAL(ahead_wait(&s), 2);
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
	pthread_mutex_lock(&s.mu);
	CU_ASSERT_EQUAL(s.ahead, 1); /* once a process */
	pthread_mutex_unlock(&s.mu);

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

/* Every token instance of FTS table tab (term, row, column, offset) as
 * one string. */
static char *vocab(sqlite3 *db, const char *tab)
{
	char *sql = xasprintf("CREATE VIRTUAL TABLE temp.v_%s USING "
			      "fts5vocab(main, %s, instance)",
			      tab, tab);
	CU_ASSERT_EQUAL_FATAL(sqlite3_exec(db, sql, NULL, NULL, NULL),
			      SQLITE_OK);
	free(sql);
	sql = xasprintf("SELECT term, doc, col, offset FROM v_%s", tab);
	sqlite3_stmt *st;
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, sql, -1, &st, NULL),
			      SQLITE_OK);
	free(sql);
	struct sbuf b = {0};
	while (sqlite3_step(st) == SQLITE_ROW)
		sb_printf(&b, "%s %lld %s %d\n",
			  (const char *)sqlite3_column_text(st, 0),
			  (long long)sqlite3_column_int64(st, 1),
			  (const char *)sqlite3_column_text(st, 2),
			  sqlite3_column_int(st, 3));
	sqlite3_finalize(st);
	return sb_steal(&b);
}

/* Insert text as row id of tab, replaying toks for it (NULL: none). */
static void insert(sqlite3 *db, const char *tab, int id, const char *text,
		   const struct tokens *toks, const char *replayed)
{
	char *sql = xasprintf("INSERT INTO %s(rowid, title, body) "
			      "VALUES(?, 'Title of it', ?)",
			      tab);
	sqlite3_stmt *st;
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, sql, -1, &st, NULL),
			      SQLITE_OK);
	free(sql);
	sqlite3_bind_int(st, 1, id);
	sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	tokenizer_replay(toks, replayed, (int)strlen(replayed));
	CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_DONE);
	tokenizer_replay(NULL, NULL, 0);
	sqlite3_finalize(st);
}

/* Tokens made ahead give the index what tokenising the text gives it
 * (stems, CJK pairs, folded diacritics, offsets); a text they were not
 * made for is tokenised as usual. */
static void test_tokens_made_ahead(void)
{
	static const char *const texts[] = {
		"The churches were running; the church runs. Straße café "
		"naïve résumé 42 x2 a",
		"Налоги и налогов в России: новые правила для всех",
		"東京都に住んでいます。中文分词 mixed 漢字 text",
		"Der Hund und die Katze sind in dem Haus, aber nicht hier",
		"",
	};
	sqlite3 *db;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(":memory:", &db), SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(tokenizer_register(db), SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(
		sqlite3_exec(db,
			     "CREATE VIRTUAL TABLE a USING fts5(title, body, "
			     "tokenize = 'vaultd remove_diacritics 2');"
			     "CREATE VIRTUAL TABLE b USING fts5(title, body, "
			     "tokenize = 'vaultd remove_diacritics 2');",
			     NULL, NULL, NULL),
		SQLITE_OK);
	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		struct tokens *toks =
			tokenizer_tokens(texts[i], (int)strlen(texts[i]));
		CU_ASSERT_PTR_NOT_NULL_FATAL(toks);
		insert(db, "a", (int)i + 1, texts[i], NULL, "");
		insert(db, "b", (int)i + 1, texts[i], toks, texts[i]);
		/* Named for another text: not used. */
		insert(db, "a", (int)i + 100, texts[0], NULL, "");
		insert(db, "b", (int)i + 100, texts[0], toks, texts[i]);
		tokens_free(toks);
	}
	char *va = vocab(db, "a"), *vb = vocab(db, "b");
	CU_ASSERT(strlen(va) > 100);
	CU_ASSERT_STRING_EQUAL(va, vb);
	free(va);
	free(vb);
	sqlite3_close(db);
}

/* The word index's segments in the store's database (a leaf's row id
 * holds its segment's id above bit 37). */
static int segments(struct tvault *t)
{
	sqlite3 *db;
	int n = -1;
	if (sqlite3_open_v2(store_path(vault_store(t->v)), &db,
			    SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(db,
				       "SELECT count(DISTINCT id >> 37)"
				       " FROM fts_data WHERE id > 10",
				       -1, &q, NULL) == SQLITE_OK &&
		    sqlite3_step(q) == SQLITE_ROW)
			n = sqlite3_column_int(q, 0);
		sqlite3_finalize(q);
	}
	sqlite3_close(db);
	return n;
}

/* A first build's segments are merged into one before the substrings
 * are filled; store_fts_merge() merges what writes added, ends, and the
 * answers stay. */
static void test_merge_segments(void)
{
	struct tvault t;
	struct steps s;
	steps_init(&s);
	open_unbuilt(&t, 3000);
	CU_ASSERT_EQUAL(vault_fulltext_start(t.v, on_step, &s), 0);
	CU_ASSERT_FATAL(steps_wait(&s, 1, 1));
	CU_ASSERT_EQUAL(segments(&t), 1);
	/* Each round of writes commits a segment. */
	for (int i = 0; i < 6; i++) {
		char content[32];
		snprintf(content, sizeof(content), "piccolo %d", i);
		update(&t, i % 2 ? "N0001" : "N0002", content);
		CU_ASSERT_FATAL(steps_wait(&s, 2 + i, 2 + i));
	}
	/* Merged here, the background stopped. */
	vault_fulltext_stop(t.v);
	CU_ASSERT(segments(&t) > 1);
	int r, steps = 0;
	while ((r = store_fts_merge(vault_store(t.v), 1000000000u)) == 1 &&
	       steps < 1000)
		steps++;
	CU_ASSERT_EQUAL(r, 0);
	CU_ASSERT_EQUAL(segments(&t), 1);
	CU_ASSERT_EQUAL(store_fts_merge(vault_store(t.v), 1000000000u), 0);
	CU_ASSERT_EQUAL(tv_search_total(&t, "piccolo", "fulltext"), 2);
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon", "fulltext"), 2998);
	CU_ASSERT_EQUAL(tv_search_total(&t, "\\\"piccolo 5\\\"", "fulltext"),
			1);
	tv_close(&t);
	steps_clear(&s);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"background rounds: build, delayed writes, bursts",
		 test_background_rounds},
		{"stop during a first build", test_stop_during_build},
		{"tokens made ahead", test_tokens_made_ahead},
		{"a build's segments merged", test_merge_segments},
	};
	return run_tests("fulltext", tests, ARRAY_SIZE(tests));
}
