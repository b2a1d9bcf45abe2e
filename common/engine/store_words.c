/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The common words' notes in memory: for a word that a good part of the
 * notes have, every note with it and what the ranking needs of each (its
 * weighted instances: vterm, ftsaux.h; the note's length normalisation,
 * from the notes' lengths, which are read in one scan and kept too),
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

static void lens_put(struct sto_lens *l)
{
	if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	free(l->id);
	free(l->dl);
	free(l);
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
	lens_put(s->lens);
	s->lens = NULL;
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

/* ---- the notes' lengths ----------------------------------------------------
 * BM25 weighs a note by its length (tokens, all columns), which FTS5 keeps
 * in the table fts_docsize: vterm leaves it out, and the lengths of a
 * word's notes are read here, all of them in one scan of that table when
 * the word is in a good part of the notes (kept for the generation, as
 * the words are: the next word needs no scan), else looked up one by one.
 */

/* A word in at least 1 / LENS_SHARE of the notes has their lengths
 * scanned: a scan costs about a tenth of a look-up per note. */
#define LENS_SHARE 8

/* The tokens of a note from its fts_docsize blob: one of SQLite's
 * varints per column (7 bits a byte, high bit set: more follow), as
 * FTS5 sums them for xColumnSize(-1). */
static uint32_t blob_len(const unsigned char *b, int n)
{
	uint32_t total = 0;
	for (int at = 0; at < n;) {
		uint64_t v = 0;
		for (int k = 0; at < n; k++) {
			unsigned char c = b[at++];
			if (k == 8) {
				v = v << 8 | c;
				break;
			}
			v = v << 7 | (c & 0x7f);
			if (!(c & 0x80))
				break;
		}
		total += (uint32_t)v;
	}
	return total;
}

/* Every note's length, by id (one scan) in *ret; < 0 on error (*ret_msg
 * set). */
static int scan_lens(struct store *s, sqlite3 *db, struct sto_lens **ret,
		     char **ret_msg)
{
	*ret = NULL;
	sqlite3_stmt *st = sto_stmt(db, "SELECT id, sz FROM fts_docsize");
	if (!st)
		return sto_search_error(s, db, ret_msg);
	struct sto_lens *l = xcalloc(1, sizeof(*l));
	atomic_init(&l->refs, 1);
	size_t cap = 0;
	int r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		if (l->n == cap) {
			cap = cap ? cap * 2 : 4096;
			l->id = xrealloc(l->id, cap * sizeof(*l->id));
			l->dl = xrealloc(l->dl, cap * sizeof(*l->dl));
		}
		l->id[l->n] = sqlite3_column_int64(st, 0);
		l->dl[l->n++] = blob_len(sqlite3_column_blob(st, 1),
					 sqlite3_column_bytes(st, 1));
	}
	r = r == SQLITE_DONE ? 0 : sto_search_error(s, db, ret_msg);
	sto_stmt_done(st);
	if (r < 0)
		lens_put(l);
	else
		*ret = l;
	return r;
}

/* The lengths kept for generation gen (a reference) in *ret, else, with
 * read, scanned now (and kept unless a write committed meanwhile), else
 * NULL; < 0 on error (*ret_msg set). */
static int lens_of(struct store *s, sqlite3 *db, uint64_t gen, bool read,
		   struct sto_lens **ret, char **ret_msg)
{
	pthread_mutex_lock(&s->wmu);
	struct sto_lens *l = s->wgen == gen ? s->lens : NULL;
	if (l)
		atomic_fetch_add(&l->refs, 1);
	pthread_mutex_unlock(&s->wmu);
	*ret = l;
	if (l || !read)
		return 0;
	int r = scan_lens(s, db, &l, ret_msg);
	if (r < 0 || atomic_load(&s->gen) != gen) {
		*ret = l;
		return r;
	}
	pthread_mutex_lock(&s->wmu);
	if (s->wgen != gen) {
		words_clear(s);
		s->wgen = gen;
	}
	if (!s->lens) {
		atomic_fetch_add(&l->refs, 1);
		s->lens = l;
	}
	pthread_mutex_unlock(&s->wmu);
	*ret = l;
	return 0;
}

/* The length of note id in l; *at: where the previous one was (the notes
 * come by id), moved on: the next few are looked at, then the rest
 * halved (a rare word's notes are far apart). */
static uint32_t len_in(const struct sto_lens *l, int64_t id, size_t *at)
{
	size_t lo = *at < l->n && l->id[*at] <= id ? *at : 0, hi = l->n;
	for (int k = 0; k < 8 && lo < hi && l->id[lo] < id; k++)
		lo++;
	while (lo < hi && l->id[lo] < id) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return lo < l->n && l->id[lo] == id ? l->dl[lo] : 0;
}

/* w's norms, given the notes' average length in each (w->norm[i]): from
 * their lengths, scanned or looked up. < 0 on error (*ret_msg set). */
int sto_word_norms(struct store *s, sqlite3 *db, uint64_t gen,
		   struct sto_word *w, char **ret_msg)
{
	struct sto_lens *l;
	int r = lens_of(s, db, gen,
			w->nrow > 0 && w->n * LENS_SHARE >= (size_t)w->nrow, &l,
			ret_msg);
	if (r < 0)
		return r;
	sqlite3_stmt *one =
		l ? NULL
		  : sto_stmt(db, "SELECT sz FROM fts_docsize WHERE id = ?1");
	if (!l && !one)
		return sto_search_error(s, db, ret_msg);
	size_t at = 0;
	for (size_t i = 0; i < w->n && r == 0; i++) {
		uint32_t dl = 0;
		if (l) {
			dl = len_in(l, w->id[i], &at);
		} else {
			sqlite3_bind_int64(one, 1, w->id[i]);
			int rc = sqlite3_step(one);
			if (rc == SQLITE_ROW)
				dl = blob_len(sqlite3_column_blob(one, 0),
					      sqlite3_column_bytes(one, 0));
			else if (rc != SQLITE_DONE)
				r = sto_search_error(s, db, ret_msg);
			sqlite3_reset(one);
		}
		w->norm[i] = ftsaux_norm((double)dl, w->norm[i]);
	}
	sto_stmt_done(one);
	lens_put(l);
	return r;
}

/* The notes of expr read in one pass (by id), or NULL (*ret_r set). */
static struct sto_word *read_word(struct store *s, sqlite3 *db,
				  const char *expr, uint64_t gen, int *ret_r,
				  char **ret_msg)
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
		w->norm[w->n] = t.avgdl; /* until the note's length is read */
		w->nrow = t.nrow;
		w->n++;
	}
	if (!ok) {
		*ret_r = -EIO;
		*ret_msg = xstrdup("Search failed: a note's statistics "
				   "cannot be read");
	} else if (r != SQLITE_DONE) {
		*ret_r = sto_search_error(s, db, ret_msg);
		ok = false;
	}
	sto_stmt_done(st);
	if (ok && (*ret_r = sto_word_norms(s, db, gen, w, ret_msg)) < 0)
		ok = false;
	if (!ok) {
		word_unref(w);
		return NULL;
	}
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
	w = read_word(s, db, expr, gen, ret_r, ret_msg);
	if (w)
		keep(s, expr, gen, w);
	return w;
}
