/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Phrases checked on their words' positions in memory (store_phrase.c)
 * against FTS5's own phrase search: the same notes with the same
 * weighted instances and lengths to the bit, and the same pages (paths,
 * scores, snippets, totals) as the query FTS5 ranks itself, for phrases
 * across the title and the text, repeated words, stop words, stems,
 * CJK character pairs, a '*' inside the quotes, the title only, many
 * instances in one note, and after writes change the notes (many of
 * them, or a few: the positions kept brought up to date).
 */
#include "query.h"
#include "stem.h"
#include "store.h"
#include "store_int.h"
#include "testutil.h"
#include "util.h"
#include "vault.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void open_indexed(struct tvault *t)
{
	tv_open_with_store(t);
	vault_fulltext_work(t->v);
}

/* The phrases looked at: each one as written in a query. */
static const char *const PHRASES[] = {
	"\"sea lark\"",		 "\"the sea\"",		"\"the the\"",
	"\"lark lark\"",	 "\"over the sea\"",	"\"a lark over the\"",
	"\"sea lark sings\"",	 "\"sings sea\"",	"\"running dogs\"",
	"\"dog runs\"",		 "\"管理系统\"",	"\"知识管理\"",
	"\"sea lar*\"",		 "\"Sea-Lark\"",	"title:\"sea lark\"",
	"title:\"grey heron\"",	 "\"grey heron lake\"", "\"no such words\"",
	"\"heron heron heron\"", "\"lark sea lark\"",	"\"sea the sea\"",
	"\"cafe creme\"",	 "\"красная площадь\"", "\"красные площади\"",
	"\"blue whale\"",	 "\"end marker\"",	"\"start marker\"",
	"\"far away\"",
};

static const char *const WORDS[] = {
	"sea",	 "lark", "the",	 "over", "a",	 "sings",   "grey",
	"heron", "lake", "dogs", "dog",	 "runs", "running", "the",
};

/* A note of len words drawn from WORDS by seed. */
static char *text_of(unsigned seed, int len)
{
	struct sbuf b = {0};
	for (int i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		sb_printf(&b, "%s%s", WORDS[(seed >> 16) % ARRAY_SIZE(WORDS)],
			  i % 11 == 10 ? "\n" : " ");
	}
	return sb_steal(&b);
}

static void write_notes(struct tvault *t, unsigned salt)
{
	for (int i = 0; i < 40; i++) {
		char p[64];
		snprintf(p, sizeof(p), "p/Note %02d.md", i);
		char *x = text_of((unsigned)i * 7919u + salt, 20 + i * 3);
		/* CJK text in a good part of the notes. */
		char *y = xasprintf("%s%s", x,
				    i % 3 == 1 ? "" : "\n知识管理系统\n");
		tv_write(t, p, y);
		free(x);
		free(y);
	}
	tv_write(t, "p/Sea Lark.md",
		 "---\naliases: [Grey Heron]\n---\n"
		 "sea lark sings over the lake\n");
	tv_write(t, "p/CJK.md", "知识管理系统 and 管理系统 again\n");
	/* More than vterm counts (64): the rest is estimated. */
	struct sbuf b = {0};
	for (int i = 0; i < 150; i++)
		sb_puts(&b, i % 3 ? "sea lark " : "the the ");
	tv_write(t, "p/Many.md", b.s);
	sb_free(&b);
	/* Words whose positions in the text are bitmaps, with the phrase in
	 * the title too, its places across the bitmaps' 32-bit words. */
	struct sbuf d = {0};
	for (int i = 0; i < 200; i++)
		sb_puts(&d, i % 7 == 3 ? "the sea "
			    : i % 5    ? "lark sea "
				       : "sea ");
	tv_write(t, "p/Lark Sea Lark.md", d.s);
	sb_free(&d);
	/* Diacritics, Cyrillic and its stems, a phrase at the very start
	 * and end of a note, one in the name alone, one more often than a
	 * snippet weighs (128) and one only past where it looks (20000). */
	tv_write(t, "p/Accents.md", "Un café crème, then\nCAFÉ CRÈME again\n");
	tv_write(t, "p/Москва.md",
		 "Красная площадь в Москве; красные площади городов.\n");
	tv_write(t, "p/Edges.md", "start marker then words end marker");
	tv_write(t, "p/Blue Whale.md", "a note about something else\n");
	struct sbuf m = {0};
	for (int i = 0; i < 300; i++)
		sb_puts(&m, i % 2 ? "sea lark, " : "grey heron; ");
	tv_write(t, "p/Many More.md", m.s);
	sb_free(&m);
	struct sbuf f = {0};
	for (int i = 0; i < 21000; i++)
		sb_puts(&f, i % 7 ? "filler " : "far words ");
	sb_puts(&f, "far away at last far away\n");
	tv_write(t, "p/Far.md", f.s);
	sb_free(&f);
	/* Longer than the positions kept of a note: the phrases past them
	 * are found too, few or many. */
	for (int k = 0; k < 3; k++) {
		char p[64];
		snprintf(p, sizeof(p), "p/Long %d.md", k);
		char *x = text_of(salt + 99u * (unsigned)k, 6000);
		struct sbuf l = {0};
		sb_printf(&l, "%s\n", x);
		for (int i = 0; i < 40 * k; i++)
			sb_puts(&l, "grey heron lake sea lark the the ");
		tv_write(t, p, l.s);
		sb_free(&l);
		free(x);
	}
}

/* FTS5 expression of the one phrase of query (as a search plans it). */
static char *expr_of(const char *query)
{
	struct qnode *q = NULL;
	char *msg = NULL;
	CU_ASSERT_FATAL(query_parse(query, &q, &msg) == 0);
	sto_query_langs = LANG_ALL;
	struct sbuf b = {0};
	sto_fts_atom(&b, q);
	query_free(q);
	return sb_steal(&b);
}

/* The phrase's notes from memory are FTS5's (vterm), to the bit. */
static void same_notes(struct tvault *t, const char *query)
{
	struct store *s = vault_store(t->v);
	_cleanup_free_ char *expr = expr_of(query);
	sqlite3 *db = sto_acquire(s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	uint64_t gen = store_generation(s);
	char *msg = NULL;
	int r1 = 0, r2 = 0;
	struct sto_word *mem = sto_phrase_get(s, db, expr, gen, &r1, &msg);
	struct sto_word *fts = sto_word_get(s, db, expr, gen, &r2, &msg);
	sto_release(s, db);
	CU_ASSERT_EQUAL(r1, 0);
	CU_ASSERT_EQUAL(r2, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fts);
	if (!mem) {
		/* Left to FTS5 (as sooner found there). */
		CU_ASSERT(!sto_phrase_always);
		sto_word_put(fts);
		return;
	}
	CU_ASSERT_EQUAL(mem->n, fts->n);
	if (mem->n != fts->n)
		fprintf(stderr, "  %s: %zu notes, FTS5 %zu\n", query, mem->n,
			fts->n);
	for (size_t i = 0; i < mem->n && i < fts->n; i++) {
		CU_ASSERT_EQUAL(sto_word_id(mem, i), sto_word_id(fts, i));
		CU_ASSERT(sto_word_freq(mem, i) == sto_word_freq(fts, i));
		CU_ASSERT_EQUAL(mem->dl[i], fts->dl[i]);
		CU_ASSERT(mem->avgdl == fts->avgdl);
	}
	if (fts->n)
		CU_ASSERT_EQUAL(mem->nrow, fts->nrow);
	sto_word_put(mem);
	sto_word_put(fts);
}

/* The phrase's page is that of the same query ranked by FTS5 (a NOT
 * that excludes nothing makes it another query): paths, scores,
 * snippets and total. */
static void same_page(struct tvault *t, const char *query)
{
	_cleanup_free_ char *other = xasprintf("%s -qqzzx", query);
	size_t n, total, on, ototal;
	struct store_hit *h = tv_store_page(t, query, &n, &total);
	struct store_hit *o = tv_store_page(t, other, &on, &ototal);
	CU_ASSERT_EQUAL(total, ototal);
	CU_ASSERT_EQUAL(n, on);
	for (size_t i = 0; i < n && i < on; i++) {
		CU_ASSERT_STRING_EQUAL(h[i].path, o[i].path);
		CU_ASSERT(h[i].score == o[i].score);
		CU_ASSERT_STRING_EQUAL(h[i].snippet, o[i].snippet);
	}
	store_hits_free(h, n);
	store_hits_free(o, on);
}

/* Every phrase, found from positions, then as a search plans it (some
 * left to FTS5). */
static void check_all(struct tvault *t)
{
	for (int always = 1; always >= 0; always--) {
		sto_phrase_always = always;
		for (size_t i = 0; i < ARRAY_SIZE(PHRASES); i++) {
			same_notes(t, PHRASES[i]);
			same_page(t, PHRASES[i]);
		}
	}
}

static void test_same_as_fts5(void)
{
	struct tvault t;
	tv_init(&t);
	write_notes(&t, 0);
	open_indexed(&t);
	size_t kept = atomic_load(&sto_phrase_snippets);
	check_all(&t);
	/* The pages' snippets were made from the positions kept too. */
	CU_ASSERT(atomic_load(&sto_phrase_snippets) > kept + 50);
	/* The total of a phrase many notes have, and one no note has. */
	size_t n, total;
	struct store_hit *h = tv_store_page(&t, "\"sea lark\"", &n, &total);
	CU_ASSERT(total > 10);
	store_hits_free(h, n);
	h = tv_store_page(&t, "\"no such words\"", &n, &total);
	CU_ASSERT_EQUAL(total, 0);
	store_hits_free(h, n);
	tv_close(&t);
}

/* Positions kept for a generation are not used as they are after a
 * write: the phrases follow the notes as they change, are added and
 * removed (here most notes change: the positions are read again). */
static void test_after_writes(void)
{
	struct tvault t;
	tv_init(&t);
	write_notes(&t, 0);
	open_indexed(&t);
	check_all(&t);
	write_notes(&t, 17);
	tv_write(&t, "p/New.md", "grey heron lake grey heron lake\n");
	_cleanup_free_ char *gone = xasprintf("%s/p/Sea Lark.md", t.dir);
	CU_ASSERT(unlink(gone) == 0);
	tv_reindex(&t);
	vault_fulltext_work(t.v);
	check_all(&t);
	/* The new note has the phrase, the removed one no more. */
	size_t n, total;
	struct store_hit *h =
		tv_store_page(&t, "\"grey heron lake\"", &n, &total);
	bool found_new = false;
	for (size_t i = 0; i < n; i++) {
		found_new |= !strcmp(h[i].path, "p/New.md");
		CU_ASSERT_STRING_NOT_EQUAL(h[i].path, "p/Sea Lark.md");
	}
	CU_ASSERT(found_new);
	store_hits_free(h, n);
	h = tv_store_page(&t, "title:\"grey heron\"", &n, &total);
	CU_ASSERT_EQUAL(total, 0);
	store_hits_free(h, n);
	tv_close(&t);
}

/* A few notes changed: the positions kept are brought up to date with
 * them (the rest as they were) rather than read again, and the phrases
 * are still FTS5's, with the note changed, added and removed. */
static void test_few_writes(void)
{
	struct tvault t;
	tv_init(&t);
	write_notes(&t, 0);
	open_indexed(&t);
	check_all(&t);
	for (int round = 0; round < 3; round++) {
		tv_write(&t, "p/Note 03.md",
			 round % 2 ? "grey heron lake sea lark\n"
				   : "the sea the lark over the sea\n");
		char p[64];
		snprintf(p, sizeof(p), "p/Added %d.md", round);
		tv_write(&t, p, "sea lark sings over the lake sea lark\n");
		_cleanup_free_ char *gone =
			xasprintf("%s/p/Note %02d.md", t.dir, 10 + round);
		CU_ASSERT(unlink(gone) == 0);
		tv_reindex(&t);
		vault_fulltext_work(t.v);
		check_all(&t);
	}
	size_t n, total;
	struct store_hit *h = tv_store_page(&t, "\"lark sings\"", &n, &total);
	bool added = false;
	for (size_t i = 0; i < n; i++)
		added |= !strcmp(h[i].path, "p/Added 2.md");
	CU_ASSERT(added);
	store_hits_free(h, n);
	tv_close(&t);
}

/* A word's notes kept small give back the same ids and weighted
 * instances: whole ones in 16 bits, the rest (fractions, too big, -0)
 * escaped (65535 too), ids past 32 bits widening the list; a list of
 * mostly fractions kept as doubles. */
static void test_compact_notes(void)
{
	static const double freq[] = {0,   1,	 10, 65534, 65535, 1e9,
				      2.5, -0.0, -3, 0.125, 11,	   1.0 / 3};
	static const int64_t id[] = {1,
				     7,
				     8,
				     4000000000,
				     (int64_t)UINT32_MAX,
				     (int64_t)UINT32_MAX + 1,
				     (int64_t)1 << 40,
				     ((int64_t)1 << 40) + 3,
				     ((int64_t)1 << 41),
				     ((int64_t)1 << 42),
				     ((int64_t)1 << 43),
				     ((int64_t)1 << 44)};
	struct sto_word *w = xcalloc(1, sizeof(*w));
	atomic_init(&w->kept.refs, 1);
	for (size_t i = 0; i < ARRAY_SIZE(freq); i++) {
		sto_word_add(w, id[i], freq[i], (uint32_t)i);
		CU_ASSERT_EQUAL(w->id32 != NULL, id[i] <= (int64_t)UINT32_MAX);
	}
	CU_ASSERT_EQUAL(w->n, ARRAY_SIZE(freq));
	CU_ASSERT_EQUAL(w->nesc, 7);
	for (size_t i = 0; i < w->n; i++) {
		double f = sto_word_freq(w, i);
		CU_ASSERT_EQUAL(sto_word_id(w, i), id[i]);
		CU_ASSERT(memcmp(&f, &freq[i], sizeof(f)) == 0);
		CU_ASSERT_EQUAL(w->dl[i], i);
	}
	sto_word_put(w);
	/* Most of them fractions: all doubles, the same ones. */
	w = xcalloc(1, sizeof(*w));
	atomic_init(&w->kept.refs, 1);
	for (int i = 0; i < 3000; i++)
		sto_word_add(w, i, i % 3 ? i / 7.0 : i, 0);
	CU_ASSERT(w->f64 != NULL && w->f16 == NULL && w->nesc == 0);
	for (int i = 0; i < 3000; i++)
		CU_ASSERT(sto_word_freq(w, (size_t)i) == (i % 3 ? i / 7.0 : i));
	sto_word_put(w);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"phrases from positions are FTS5's", test_same_as_fts5},
		{"phrases follow writes", test_after_writes},
		{"positions brought up to date after a few writes",
		 test_few_writes},
		{"a word's notes kept small", test_compact_notes},
	};
	return run_tests("phrase", tests, ARRAY_SIZE(tests));
}
