/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every kind of work on one vault at once, for a bounded time: writers
 * (create, update, append, replace, rename, delete), changes made in the
 * folder (synced as the watcher does), policy reloads, searches (full
 * text, content, names), the commonest words read ahead, reads of the
 * graph, history reads and commits, and index rebuilds; before them,
 * searches by name and tag while the first build binds its links. Built
 * under ThreadSanitizer by the test command: it must be clean.
 * VAULTD_STRESS_SECS sets the time (default 4).
 */
#include "shape.h"
#include "graph.h"
#include "history.h"
#include "index.h"
#include "store.h"
#include "store_int.h"
#include "testutil.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct stress {
	struct tvault t;
	struct history *h;
	atomic_bool stop;
	atomic_size_t calls, errors, reloads, rebuilds, syncs, commits;
};

static unsigned rnd(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 16) & 0x7fff;
}

/* A tool call; a refusal is an answer too. Only a missing answer is a
 * failure. */
static void call(struct stress *s, const char *tool, const char *args)
{
	struct tool_result r;
	tv_call(&s->t, tool, args, &r);
	CU_ASSERT_PTR_NOT_NULL(r.text);
	if (r.is_error)
		atomic_fetch_add(&s->errors, 1);
	atomic_fetch_add(&s->calls, 1);
	tool_result_clear(&r);
}

struct worker {
	struct stress *s;
	unsigned seed;
	void (*step)(struct worker *w);
};

static void *work(void *p)
{
	struct worker *w = p;
	while (!atomic_load(&w->s->stop))
		w->step(w);
	return NULL;
}

static void writer(struct worker *w)
{
	/* The writer lock is not fair: writers that never pause would
	 * starve the outside changes and rebuilds of this test. */
	usleep(200);
	char a[256];
	unsigned n = rnd(&w->seed) % 40, m = rnd(&w->seed) % 40;
	switch (rnd(&w->seed) % 7) {
	case 0:
		snprintf(
			a, sizeof(a),
			"{\"name\":\"n%u\",\"content\":\"new [[n%u]] #known\"}",
			n, m);
		call(w->s, "create_note", a);
		break;
	case 1:
		snprintf(a, sizeof(a),
			 "{\"name\":\"n%u\",\"content\":\"updated [[n%u]] "
			 "#%s\"}",
			 n, m, m % 5 ? "known" : "other");
		call(w->s, "update_note", a);
		break;
	case 2:
		snprintf(a, sizeof(a),
			 "{\"name\":\"n%u\",\"text\":\"more [[n%u|alias]]\"}",
			 n, m);
		call(w->s, "append_note", a);
		break;
	case 3:
		snprintf(a, sizeof(a),
			 "{\"name\":\"n%u\",\"old_text\":\"more\","
			 "\"new_text\":\"less\"}",
			 n);
		call(w->s, "replace_text", a);
		break;
	case 4:
		snprintf(a, sizeof(a),
			 "{\"old_name\":\"n%u\",\"new_name\":\"%sn%u\"}", n,
			 m % 2 ? "d/" : "", m);
		call(w->s, "rename_note", a);
		break;
	case 5:
		snprintf(a, sizeof(a), "{\"name\":\"n%u\"}", n);
		call(w->s, "delete_note", a);
		break;
	default:
		snprintf(
			a, sizeof(a),
			"{\"name\":\"n%u\",\"heading\":\"H\",\"content\":\"x\"}",
			n);
		call(w->s, "update_section", a);
		break;
	}
}

static void reader(struct worker *w)
{
	char a[256];
	unsigned n = rnd(&w->seed) % 40;
	switch (rnd(&w->seed) % 8) {
	case 0:
		switch (rnd(&w->seed) % 3) {
		case 0:
			call(w->s, "search_notes",
			     "{\"query\":\"updated known\",\"mode\":"
			     "\"fulltext\"}");
			break;
		case 1:
			call(w->s, "search_notes",
			     "{\"query\":\"\\\"note known\\\"\",\"mode\":"
			     "\"fulltext\"}");
			break;
		default:
			call(w->s, "search_notes",
			     "{\"query\":\"kno*\",\"mode\":\"fulltext\"}");
		}
		break;
	case 1:
		call(w->s, "search_notes",
		     "{\"query\":\"more\",\"mode\":\"content\"}");
		break;
	case 2:
		call(w->s, "search_notes", "{\"query\":\"n1\"}");
		break;
	case 3:
		snprintf(a, sizeof(a), "{\"name\":\"n%u\"}", n);
		call(w->s, "get_backlinks", a);
		break;
	case 4:
		call(w->s, "find_broken_links", "{}");
		break;
	case 5:
		call(w->s, "list_tags", "{}");
		break;
	case 6:
		snprintf(a, sizeof(a), "{\"name\":\"n%u\"}", n);
		call(w->s, "read_note", a);
		break;
	default:
		call(w->s, "get_policy", "{}");
		break;
	}
}

static void historian(struct worker *w)
{
	char a[256];
	snprintf(a, sizeof(a), "{\"name\":\"n%u\"}", rnd(&w->seed) % 40);
	call(w->s, "get_note_history", a);
	if (history_commit(w->s->h, rnd(&w->seed) % 2) > 0)
		atomic_fetch_add(&w->s->commits, 1);
}

static void reloader(struct worker *w)
{
	tv_write(&w->s->t, ".vaultd/policy.yaml",
		 rnd(&w->seed) % 2 ? "allowed_tags: [known, other]\n"
				   : "allowed_tags: [known]\n");
	char *msg = NULL;
	if (vault_reload_policy(w->s->t.v, &msg) == 0)
		atomic_fetch_add(&w->s->reloads, 1);
	free(msg);
	usleep(2000);
}

/* Changes made in the folder, synced as the watcher does; now and then
 * the whole index built again (as after an inotify overflow). */
static void outsider(struct worker *w)
{
	unsigned n = rnd(&w->seed) % 40;
	char rel[64], text[128];
	snprintf(rel, sizeof(rel), "n%u.md", n);
	snprintf(text, sizeof(text), "outside %u [[n%u]] #known\n", n,
		 rnd(&w->seed) % 40);
	tv_write(&w->s->t, rel, text);
	vault_write_lock(w->s->t.v);
	vault_sync_path(w->s->t.v, rel, "external", 0);
	vault_write_unlock(w->s->t.v);
	atomic_fetch_add(&w->s->syncs, 1);
	if (rnd(&w->seed) % 4 == 0) {
		vault_index_all(w->s->t.v, NULL, NULL, NULL);
		atomic_fetch_add(&w->s->rebuilds, 1);
	}
	usleep(1000);
}

static void fulltext(struct worker *w)
{
	vault_fulltext_work(w->s->t.v);
	vault_substrings_work(w->s->t.v);
	usleep(5000);
}

/* The commonest words read ahead (as vaultd does once search is ready),
 * again and again, while the writers change the notes and the readers
 * search them. */
static void warmer(struct worker *w)
{
	struct store *st = vault_store(w->s->t.v);
	struct store_warm *ahead = st ? store_warm_new(st) : NULL;
	int r;
	while ((r = store_warm_step(st, ahead)) > 0)
		;
	CU_ASSERT_EQUAL(r, 0);
	store_warm_free(ahead);
	usleep(2000);
}

/* A start's first build hands its notes out before it binds their links
 * (vault_on_names()): searches by name and tag run meanwhile, on threads
 * of their own. */
struct names_stage {
	struct stress *s;
	pthread_t th[2];
	size_t started;
	/* In the hook: n0 is there, its link not bound yet. */
	bool unbound;
};

static void *names_reader(void *p)
{
	struct stress *s = p;
	for (int i = 0; i < 40; i++) {
		char a[96];
		snprintf(a, sizeof(a), "{\"query\":\"%s\",\"mode\":\"%s\"}",
			 i % 2 ? "known" : "n1", i % 2 ? "tag" : "name");
		struct tool_result r;
		tv_call(&s->t, "search_notes", a, &r);
		CU_ASSERT(!r.is_error);
		tool_result_clear(&r);
		atomic_fetch_add(&s->calls, 1);
	}
	return NULL;
}

static void names_in_place(void *ud)
{
	struct names_stage *ns = ud;
	const struct ptrvec *pv = index_by_name(vault_index(ns->s->t.v), "n0");
	const struct note *n = pv && pv->n == 1 ? pv->v[0] : NULL;
	ns->unbound = n && note_nlinks(n) == 1 && !note_links(n)[0].to;
	for (; ns->started < 2; ns->started++)
		if (pthread_create(&ns->th[ns->started], NULL, names_reader,
				   ns->s) != 0)
			break;
}

/* The first build, with searches while it binds the links. */
static void first_build(struct stress *s)
{
	struct names_stage ns = {.s = s};
	vault_on_names(s->t.v, names_in_place, &ns);
	vault_index_all(s->t.v, NULL, NULL, NULL);
	for (size_t i = 0; i < ns.started; i++)
		pthread_join(ns.th[i], NULL);
	CU_ASSERT(ns.unbound);
	CU_ASSERT_EQUAL(ns.started, 2);
	CU_ASSERT_EQUAL(atomic_load(&s->calls), 80);
	/* Bound once the build returned. */
	const struct ptrvec *pv = index_by_name(vault_index(s->t.v), "n0");
	CU_ASSERT_FATAL(pv && pv->n == 1);
	const struct note *n0 = pv->v[0];
	CU_ASSERT_EQUAL_FATAL(note_nlinks(n0), 1);
	const struct note *n1 = note_links(n0)[0].to;
	CU_ASSERT_PTR_NOT_NULL_FATAL(n1);
	size_t nin = 0;
	graph_incoming(n1, &nin);
	CU_ASSERT_EQUAL(nin, 1);
}

static void test_everything_at_once(void)
{
	struct stress s = {0};
	tv_init(&s.t);
	tv_write(&s.t, ".vaultd/policy.yaml", "allowed_tags: [known]\n");
	for (int i = 0; i < 40; i++) {
		char rel[32], text[96];
		snprintf(rel, sizeof(rel), "n%d.md", i);
		snprintf(text, sizeof(text), "# H\nnote %d [[n%d]] #known\n", i,
			 (i + 1) % 40);
		tv_write(&s.t, rel, text);
	}
	char *msg = NULL;
	CU_ASSERT_FATAL(vault_open(s.t.dir, &s.t.v, &msg) == 0);
	char *cache = xasprintf("%s.cache", s.t.dir);
	mkdir(cache, 0700);
	struct store *st = NULL;
	char *note = NULL;
	CU_ASSERT_FATAL(store_open(cache, vault_root(s.t.v), &st, &note) == 0);
	free(note);
	vault_attach_store(s.t.v, st);
	first_build(&s);
	vault_fulltext_work(s.t.v);
	CU_ASSERT_EQUAL_FATAL(history_open(vault_rootfd(s.t.v),
					   vault_root(s.t.v), &s.h, &note),
			      0);
	free(note);
	vault_attach_history(s.t.v, s.h);
	CU_ASSERT(vault_history_scan(s.t.v) >= 0);

	struct worker ws[] = {
		{&s, 1, writer},   {&s, 2, writer},   {&s, 3, writer},
		{&s, 4, reader},   {&s, 5, reader},   {&s, 6, historian},
		{&s, 7, reloader}, {&s, 8, outsider}, {&s, 9, fulltext},
		{&s, 10, warmer},
	};
	/* Every store has words to read ahead, and every phrase is found
	 * from its words' positions (kept across the writes). */
	sto_warm_min_notes = 0;
	sto_phrase_always = true;
	size_t nw = sizeof(ws) / sizeof(ws[0]);
	pthread_t th[sizeof(ws) / sizeof(ws[0])];
	for (size_t i = 0; i < nw; i++)
		CU_ASSERT_EQUAL_FATAL(
			pthread_create(&th[i], NULL, work, &ws[i]), 0);
	const char *e = getenv("VAULTD_STRESS_SECS");
	int secs = e && atoi(e) > 0 ? atoi(e) : 4;
	sleep((unsigned)secs);
	atomic_store(&s.stop, true);
	for (size_t i = 0; i < nw; i++)
		pthread_join(th[i], NULL);
	printf("\n  %zu calls (%zu refused or failed), %zu policy reloads, "
	       "%zu outside changes, %zu index rebuilds, %zu commits in %d s\n",
	       atomic_load(&s.calls), atomic_load(&s.errors),
	       atomic_load(&s.reloads), atomic_load(&s.syncs),
	       atomic_load(&s.rebuilds), atomic_load(&s.commits), secs);
	CU_ASSERT(atomic_load(&s.calls) > 0);
	CU_ASSERT(atomic_load(&s.reloads) > 0);
	/* Still consistent: the vault as held equals a fresh reading. */
	struct tvault fresh = {.dir = s.t.dir};
	tv_open(&fresh);
	cJSON *on = vault_check_json(s.t.v), *off = vault_check_json(fresh.v);
	char *a = cJSON_PrintUnformatted(on), *b = cJSON_PrintUnformatted(off);
	ASSERT_STR_EQ(a, b);
	if (a && b && strcmp(a, b))
		printf("\n  held:  %s\n  fresh: %s\n", a, b);
	cJSON_free(a);
	cJSON_free(b);
	cJSON_Delete(on);
	cJSON_Delete(off);
	fresh.v = vault_free(fresh.v);
	history_stop(s.h);
	vault_attach_history(s.t.v, NULL);
	history_free(s.h);
	tv_close(&s.t);
	char *rm = xasprintf("rm -rf '%s'", cache);
	CU_ASSERT_EQUAL(system(rm), 0);
	free(rm);
	free(cache);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"everything_at_once", test_everything_at_once},
	};
	return run_tests("stress", tests, ARRAY_SIZE(tests));
}
