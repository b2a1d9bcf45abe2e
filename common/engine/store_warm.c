/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The commonest words' notes read ahead (store_warm_*): the first search
 * of a common word pays a pass over its notes (store_words.c: at 100k
 * notes, 50 to 300 ms), and the first phrase of one a pass over its
 * positions (store_phrase.c), which a daemon just started would
 * otherwise pay in the middle of its first searches. The words are found
 * in a sample of the notes' names and texts (SAMPLE notes spread over
 * the ids, up to SAMPLE_TEXT bytes of each text: the words that at least
 * one in COMMON_SHARE of them has, the most frequent first), and each is
 * read as a search of it reads it: as a word of a query without stop
 * words (every language's stems), its positions, and as a word of a
 * question in the language the sample's stop words name, within three
 * quarters of the words' memory and half the positions' (a search's own
 * words push them out, the least recently used first). One word a step,
 * each in its own snapshot, so that the caller can stop between them.
 */
#include "stem.h"
#include "store_int.h"
#include "tokenizer.h"
#include "u8.h"

#include <stdlib.h>
#include <string.h>

/* Notes sampled, and the notes a store needs for any word to be read
 * ahead (below that, a word's pass costs little). */
#define SAMPLE 256
#define WARM_MIN_NOTES 1024
int64_t sto_warm_min_notes = WARM_MIN_NOTES;
/* A word in at least 1 / COMMON_SHARE of the sampled notes (as
 * store_rank.c calls a word common), the WARM_WORDS most frequent. */
#define COMMON_SHARE 4
#define WARM_WORDS 64
/* The bytes of a note's text sampled at most (a long note's first
 * ones). */
#define SAMPLE_TEXT (16 * 1024)
/* Words shorter than this (in bytes) are left out. */
#define WORD_MIN 3

/* The FTS5 expressions to read, in order: a word's notes, or with
 * phrase, its positions (a phrase of it twice). */
struct warm_item {
	char *expr;
	bool phrase;
};

struct store_warm {
	struct warm_item *item;
	size_t n, next;
	int64_t notes;
};

/* A word of the sample: the notes that have it, and the last one seen. */
struct seen {
	size_t notes, last;
};

struct sample {
	struct hmap *words; /* word to struct seen */
	size_t note;	    /* the note being read (from 1) */
	unsigned stop[LANG_COUNT];
};

static bool cjk_first(const char *t, size_t n)
{
	int32_t c = 0;
	return u8_decode(t, n, &c) > 0 && tokenizer_is_cjk(c);
}

static int on_token(void *ctx, int tflags, const char *tok, int ntok)
{
	struct sample *s = ctx;
	size_t n = (size_t)ntok;
	if (tflags & FTS5_TOKEN_COLOCATED || n < WORD_MIN || cjk_first(tok, n))
		return SQLITE_OK;
	unsigned m = stem_stopword(tok, n);
	if (m) {
		for (int l = 0; l < LANG_COUNT; l++)
			s->stop[l] += m >> l & 1;
		return SQLITE_OK;
	}
	_cleanup_free_ char *w = xstrndup(tok, n);
	struct seen *e = hmap_get(s->words, w);
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		hmap_put(s->words, w, e);
	}
	if (e->last != s->note) {
		e->last = s->note;
		e->notes++;
	}
	return SQLITE_OK;
}

/* The words of up to SAMPLE notes spread over ids lo to hi (their names,
 * aliases and the start of their texts) into *smp. false on error. */
static bool sample_notes(sqlite3 *db, int64_t lo, int64_t hi,
			 struct sample *smp)
{
	sqlite3_stmt *st = sto_stmt(db, "SELECT id, title, body FROM docs"
					" WHERE id >= ?1 LIMIT 1");
	if (!st)
		return false;
	int64_t span = hi - lo + 1, last = lo - 1;
	for (int i = 0; i < SAMPLE; i++) {
		int64_t at = lo + span * i / SAMPLE;
		sqlite3_bind_int64(st, 1, at > last ? at : last + 1);
		if (sqlite3_step(st) != SQLITE_ROW) {
			sqlite3_reset(st);
			break;
		}
		last = sqlite3_column_int64(st, 0);
		const char *t = (const char *)sqlite3_column_text(st, 1);
		const char *b = (const char *)sqlite3_column_text(st, 2);
		/* No stems: the words as they are, of the name and aliases
		 * and of the text. */
		size_t nb = b ? (size_t)sqlite3_column_bytes(st, 2) : 0;
		if (nb > SAMPLE_TEXT)
			nb = utf8_cut(b, SAMPLE_TEXT);
		_cleanup_free_ char *text =
			xasprintf("%c00%s\n%.*s", TOKENIZER_LANGS, t ? t : "",
				  (int)nb, b ? b : "");
		smp->note++;
		tokenizer_query(text, (int)strlen(text), smp, on_token);
		sqlite3_reset(st);
	}
	sto_stmt_done(st);
	return true;
}

struct common {
	const char *word;
	size_t notes;
};

static int cmp_common(const void *a, const void *b)
{
	const struct common *x = a, *y = b;
	if (x->notes != y->notes)
		return x->notes > y->notes ? -1 : 1;
	return strcmp(x->word, y->word);
}

/* The languages of the stems of a question in the sample's language (the
 * one its stop words name most), or 0 when that is every language. */
static unsigned question_langs(const struct sample *smp)
{
	unsigned best = 0, mask = 0;
	for (int l = 0; l < LANG_COUNT; l++)
		if (smp->stop[l] > best)
			best = smp->stop[l];
	for (int l = 0; best && l < LANG_COUNT; l++)
		if (smp->stop[l] == best)
			mask |= 1u << l;
	unsigned langs = mask ? sto_query_stem_langs(mask) : LANG_ALL;
	return langs == LANG_ALL ? 0 : langs;
}

/* A word's FTS5 expression as a query of stem languages langs has it. */
static char *word_expr(const char *word, unsigned langs)
{
	unsigned saved = sto_query_langs;
	sto_query_langs = langs;
	struct qnode q = {.kind = Q_WORD, .text = (char *)word};
	struct sbuf b = {0};
	sto_fts_atom(&b, &q);
	sto_query_langs = saved;
	return sb_steal(&b);
}

/* The plan: the common words of the sample as a plain query's words,
 * then their positions (as a phrase's words, with every language's
 * stems), then as a question's words (langs, if any), the commonest
 * first in each: a plain query of two common words reads both words'
 * notes, a phrase their positions, while a question counts its common
 * word's notes rather than read them (store_rank.c). */
static void plan_words(struct store_warm *w, const struct sample *smp)
{
	size_t n = hmap_size(smp->words), k = 0, it = 0;
	struct common *c = xcalloc(n + 1, sizeof(*c));
	const char *key;
	void *v;
	while (hmap_next(smp->words, &it, &key, &v)) {
		const struct seen *e = v;
		if (e->notes * COMMON_SHARE >= smp->note)
			c[k++] = (struct common){key, e->notes};
	}
	qsort(c, k, sizeof(*c), cmp_common);
	if (k > WARM_WORDS)
		k = WARM_WORDS;
	unsigned langs = question_langs(smp);
	w->item = xcalloc(3 * k + 1, sizeof(*w->item));
	for (size_t i = 0; i < k; i++)
		w->item[w->n++].expr = word_expr(c[i].word, LANG_ALL);
	for (size_t i = 0; i < k; i++) {
		_cleanup_free_ char *twice =
			xasprintf("%s %s", c[i].word, c[i].word);
		w->item[w->n].phrase = true;
		w->item[w->n++].expr = word_expr(twice, LANG_ALL);
	}
	for (size_t i = 0; i < k && langs; i++)
		w->item[w->n++].expr = word_expr(c[i].word, langs);
	free(c);
}

static void sample_free(struct sample *smp)
{
	hmap_free_with(smp->words, free);
}

struct store_warm *store_warm_new(struct store *s)
{
	sqlite3 *db = sto_acquire(s);
	if (!db)
		return NULL;
	struct store_warm *w = xcalloc(1, sizeof(*w));
	struct sample smp = {.words = hmap_new()};
	bool txn = sto_run_kept(db, "BEGIN");
	sqlite3_stmt *st =
		sto_stmt(db, "SELECT count(*), min(id), max(id) FROM docz");
	bool ok = st && sqlite3_step(st) == SQLITE_ROW &&
		  sqlite3_column_int64(st, 0) >= sto_warm_min_notes;
	int64_t lo = ok ? sqlite3_column_int64(st, 1) : 0;
	int64_t hi = ok ? sqlite3_column_int64(st, 2) : 0;
	w->notes = ok ? sqlite3_column_int64(st, 0) : 0;
	sto_stmt_done(st);
	if (ok && sample_notes(db, lo, hi, &smp) && smp.note)
		plan_words(w, &smp);
	if (txn && !sto_run_kept(db, "COMMIT"))
		sto_run_kept(db, "ROLLBACK");
	sto_release(s, db);
	sample_free(&smp);
	return w->n ? w : store_warm_free(w);
}

int store_warm_step(struct store *s, struct store_warm *w)
{
	if (!w || w->next >= w->n)
		return 0;
	const struct warm_item *it = &w->item[w->next++];
	if (!it->phrase &&
	    (sto_word_cached(s, it->expr) || !sto_words_room(s, w->notes)))
		return w->next < w->n;
	sqlite3 *db = sto_acquire(s);
	if (!db)
		return 0;
	uint64_t gen = atomic_load(&s->gen);
	bool txn = sto_run_kept(db, "BEGIN");
	int r = 0;
	char *msg = NULL;
	if (it->phrase) {
		r = sto_phrase_warm(s, db, it->expr, gen);
	} else {
		struct sto_word *word =
			sto_word_get(s, db, it->expr, gen, &r, &msg);
		sto_word_put(word);
	}
	free(msg);
	if (txn && !sto_run_kept(db, "COMMIT"))
		sto_run_kept(db, "ROLLBACK");
	sto_release(s, db);
	return r < 0 ? r : w->next < w->n;
}

size_t store_warm_words(const struct store_warm *w)
{
	return w ? w->n : 0;
}

struct store_warm *store_warm_free(struct store_warm *w)
{
	if (!w)
		return NULL;
	for (size_t i = 0; i < w->n; i++)
		free(w->item[i].expr);
	free(w->item);
	free(w);
	return NULL;
}
