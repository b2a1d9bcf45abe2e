/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The common words' notes in memory: for a word that a good part of the
 * notes have, every note with it and what the ranking needs of each (its
 * weighted instances, the note's length normalisation: vterm, ftsaux.h),
 * read in one pass over the word's notes and kept for the generation it
 * was read in, the most recently used first within a memory budget. A
 * search of such words alone then ranks their notes in memory, with the
 * same scores as FTS5 would give them, instead of reading every note's
 * positions again (store_rank.c).
 */
#include "ftsaux.h"
#include "store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The memory the words' notes may take, all words together: 32 MiB, or
 * room for WORDS_KEPT words that every note has (a search's common words
 * come from a few dozen: at 100k notes, more than 32 MiB; a word read
 * again costs a pass over its notes' positions, half a second there). */
#define WORDS_BYTES_MIN ((size_t)32 << 20)
#define WORDS_KEPT 32

static size_t words_budget(const struct sto_word *w)
{
	size_t per_note = sizeof(*w->id) + sizeof(*w->freq) + sizeof(*w->norm);
	size_t all =
		(size_t)(w->nrow > 0 ? w->nrow : 0) * per_note * WORDS_KEPT;
	return all > WORDS_BYTES_MIN ? all : WORDS_BYTES_MIN;
}

static void word_unref(struct sto_word *w)
{
	if (!w || atomic_fetch_sub(&w->refs, 1) != 1)
		return;
	free(w->id);
	free(w->freq);
	free(w->norm);
	free(w);
}

void sto_word_put(struct sto_word *w)
{
	word_unref(w);
}

/* Every word out of the cache (s->wmu held). */
static void words_clear(struct store *s)
{
	size_t it = 0;
	const char *k;
	void *v;
	while (hmap_next(s->words, &it, &k, &v))
		word_unref(v);
	hmap_free(s->words);
	s->words = hmap_new();
	s->wbytes = 0;
}

void sto_words_init(struct store *s)
{
	pthread_mutex_init(&s->wmu, NULL);
	s->words = hmap_new();
}

void sto_words_free(struct store *s)
{
	words_clear(s);
	hmap_free(s->words);
	s->words = NULL;
	pthread_mutex_destroy(&s->wmu);
}

/* The least recently used word out of the cache (s->wmu held). */
static void evict_one(struct store *s)
{
	size_t it = 0;
	const char *k, *oldest = NULL;
	void *v;
	uint64_t at = UINT64_MAX;
	while (hmap_next(s->words, &it, &k, &v)) {
		struct sto_word *w = v;
		if (w->used < at) {
			at = w->used;
			oldest = k;
		}
	}
	if (!oldest)
		return;
	_cleanup_free_ char *key = xstrdup(oldest);
	struct sto_word *w = hmap_del(s->words, key);
	s->wbytes -= w->bytes;
	word_unref(w);
}

/* The cached notes of expr for generation gen (a reference), or NULL. */
static struct sto_word *lookup(struct store *s, const char *expr, uint64_t gen)
{
	pthread_mutex_lock(&s->wmu);
	if (s->wgen != gen) {
		words_clear(s);
		s->wgen = gen;
	}
	struct sto_word *w = hmap_get(s->words, expr);
	if (w) {
		w->used = ++s->wtick;
		atomic_fetch_add(&w->refs, 1);
	}
	pthread_mutex_unlock(&s->wmu);
	return w;
}

bool sto_word_cached(struct store *s, const char *expr, uint64_t gen)
{
	struct sto_word *w = lookup(s, expr, gen);
	word_unref(w);
	return w != NULL;
}

/* w kept for generation gen, unless a write committed since it was read
 * (it may be of before that write) or it is too big to keep. */
static void keep(struct store *s, const char *expr, uint64_t gen,
		 struct sto_word *w)
{
	size_t budget = words_budget(w);
	if (atomic_load(&s->gen) != gen || w->bytes > budget / 4)
		return;
	pthread_mutex_lock(&s->wmu);
	if (s->wgen != gen) {
		words_clear(s);
		s->wgen = gen;
	}
	if (!hmap_get(s->words, expr)) {
		while (s->wbytes + w->bytes > budget && hmap_size(s->words))
			evict_one(s);
		atomic_fetch_add(&w->refs, 1);
		w->used = ++s->wtick;
		hmap_put(s->words, expr, w);
		s->wbytes += w->bytes;
	}
	pthread_mutex_unlock(&s->wmu);
}

/* Room for one more note in w. */
static void grow(struct sto_word *w, size_t *cap)
{
	if (w->n < *cap)
		return;
	*cap = *cap ? *cap * 2 : 1024;
	w->id = xrealloc(w->id, *cap * sizeof(*w->id));
	w->freq = xrealloc(w->freq, *cap * sizeof(*w->freq));
	w->norm = xrealloc(w->norm, *cap * sizeof(*w->norm));
}

/* The notes of expr read in one pass (by id), or NULL (*ret_r set). */
static struct sto_word *read_word(struct store *s, sqlite3 *db,
				  const char *expr, int *ret_r, char **ret_msg)
{
	sqlite3_stmt *st = sto_stmt(db, "SELECT rowid, vterm(fts, " RANK_WEIGHTS
					") FROM fts WHERE fts MATCH ?1");
	if (!st) {
		*ret_r = sto_search_error(s, db, ret_msg);
		return NULL;
	}
	sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	struct sto_word *w = xcalloc(1, sizeof(*w));
	atomic_init(&w->refs, 1);
	size_t cap = 0;
	int r;
	bool ok = true;
	while (ok && (r = sqlite3_step(st)) == SQLITE_ROW) {
		struct ftsaux_term t;
		const void *b = sqlite3_column_blob(st, 1);
		ok = b && sqlite3_column_bytes(st, 1) == (int)sizeof(t);
		if (!ok)
			break;
		memcpy(&t, b, sizeof(t));
		grow(w, &cap);
		w->id[w->n] = sqlite3_column_int64(st, 0);
		w->freq[w->n] = t.freq;
		w->norm[w->n] = t.norm;
		w->nrow = t.nrow;
		w->n++;
	}
	if (!ok) {
		*ret_r = -EIO;
		*ret_msg = xstrdup("Search failed: a note's statistics "
				   "cannot be read");
	} else if (r != SQLITE_DONE) {
		*ret_r = sto_search_error(s, db, ret_msg);
	}
	if (!ok || r != SQLITE_DONE) {
		sto_stmt_done(st);
		word_unref(w);
		return NULL;
	}
	sto_stmt_done(st);
	w->bytes =
		sizeof(*w) + strlen(expr) +
		w->n * (sizeof(*w->id) + sizeof(*w->freq) + sizeof(*w->norm));
	return w;
}

struct sto_word *sto_word_get(struct store *s, sqlite3 *db, const char *expr,
			      uint64_t gen, int *ret_r, char **ret_msg)
{
	struct sto_word *w = lookup(s, expr, gen);
	if (w)
		return w;
	w = read_word(s, db, expr, ret_r, ret_msg);
	if (w)
		keep(s, expr, gen, w);
	return w;
}
