/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Making a plain query forgiving: words written side by side are joined
 * by OR without their stop words (the ranking puts the notes that match
 * more of them first), and a word no note has is replaced by the close
 * spellings that some have.
 */
#include "store_int.h"
#include "stem.h"
#include "tokenizer.h"
#include "u8.h"

#include <stdlib.h>
#include <string.h>

/* ---- plain queries ------------------------------------------------------
 * Words written side by side ("how did Rome collect taxes") ask for the
 * notes about them, not for the notes that hold every one: they are
 * joined by OR, without their stop words, and the ranking puts the notes
 * that match more of them first. Written operators keep their meaning.
 */

static bool is_word(const struct qnode *q)
{
	return q->kind == Q_WORD && !q->prefix;
}

/* The words of q's text atoms, space-separated, lower case. */
static void query_words(const struct qnode *q, struct sbuf *b)
{
	if (!q)
		return;
	if (sto_text_atom(q)) {
		_cleanup_free_ char *f = fold_key(q->text);
		sb_printf(b, " %s", f);
	}
	query_words(q->a, b);
	query_words(q->b, b);
}

/* Languages of a query whose stop words a plain query drops: those with
 * the most stop words among its words; 0 when it has none. */
unsigned sto_query_stop_langs(const struct qnode *q)
{
	struct sbuf b = {0};
	query_words(q, &b);
	unsigned count[LANG_COUNT] = {0}, best = 0;
	for (const char *p = b.s ? b.s : ""; *p;) {
		while (*p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ' ')
			e++;
		unsigned m = stem_stopword(p, (size_t)(e - p));
		for (int l = 0; l < LANG_COUNT; l++)
			if ((m >> l) & 1 && ++count[l] > best)
				best = count[l];
		p = e;
	}
	sb_free(&b);
	unsigned mask = 0;
	for (int l = 0; best && l < LANG_COUNT; l++)
		if (count[l] == best)
			mask |= 1u << l;
	return mask;
}

/* The languages of a query's stems: the one its stop words name, else
 * all of them. */
unsigned sto_query_stem_langs(unsigned stop)
{
	unsigned latin = stop & LANG_LATIN;
	if (latin && !(latin & (latin - 1)))
		return latin | 1u << LANG_RU;
	return LANG_ALL;
}

static bool all_cjk(const char *t, size_t *ret_chars)
{
	size_t n = strlen(t), chars = 0;
	for (size_t i = 0; i < n;) {
		int32_t c;
		int l = u8_decode(t + i, n - i, &c);
		if (l < 0 || !tokenizer_is_cjk(c))
			return false;
		chars++;
		i += (size_t)l;
	}
	*ret_chars = chars;
	return chars > 0;
}

static struct qnode *word_node(const struct qnode *like, char *text)
{
	struct qnode *w = xcalloc(1, sizeof(*w));
	w->kind = Q_WORD;
	w->text = text;
	w->title = like->title;
	w->pos = like->pos;
	return w;
}

static struct qnode *join(enum qkind k, struct qnode *a, struct qnode *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	struct qnode *q = xcalloc(1, sizeof(*q));
	q->kind = k;
	q->a = a;
	q->b = b;
	return q;
}

/* The parts of an AND chain; *explicit_ when an AND was written. */
static void and_parts(struct qnode *q, struct ptrvec *out, bool *explicit_)
{
	if (q->kind == Q_AND) {
		*explicit_ |= !q->implicit;
		and_parts(q->a, out, explicit_);
		and_parts(q->b, out, explicit_);
		q->a = q->b = NULL;
		query_free(q);
	} else {
		pv_push(out, q);
	}
}

/* Text atoms side by side: any of them. A run of CJK characters (a
 * sentence: no spaces) is its character pairs, each one a word. */
static struct qnode *any_of(struct ptrvec *atoms, unsigned stop)
{
	struct ptrvec words = {0};
	for (size_t i = 0; i < atoms->n; i++) {
		struct qnode *a = atoms->v[i];
		size_t chars;
		if (!is_word(a) || !all_cjk(a->text, &chars) || chars < 3) {
			pv_push(&words, a);
			continue;
		}
		const char *t = a->text;
		for (size_t k = 0; k + 1 < chars; k++) {
			int32_t c;
			int l1 = u8_decode(t, strlen(t), &c);
			int l2 = u8_decode(t + l1, strlen(t + l1), &c);
			pv_push(&words,
				word_node(a, xstrndup(t, (size_t)(l1 + l2))));
			t += l1;
		}
		query_free(a);
	}
	/* Each word once. */
	size_t u = 0;
	for (size_t i = 0; i < words.n; i++) {
		struct qnode *a = words.v[i];
		bool dup = false;
		for (size_t j = 0; j < u && !dup; j++) {
			const struct qnode *o = words.v[j];
			dup = o->kind == a->kind && o->title == a->title &&
			      o->prefix == a->prefix &&
			      !strcmp(o->text, a->text);
		}
		if (dup)
			query_free(a);
		else
			words.v[u++] = a;
	}
	words.n = u;
	/* Without stop words, unless that leaves nothing. */
	size_t kept = 0;
	for (size_t i = 0; i < words.n; i++) {
		struct qnode *a = words.v[i];
		_cleanup_free_ char *f = fold_key(a->text);
		if (!is_word(a) || !(stem_stopword(f, strlen(f)) & stop))
			kept++;
	}
	struct qnode *out = NULL;
	for (size_t i = 0; i < words.n; i++) {
		struct qnode *a = words.v[i];
		_cleanup_free_ char *f = fold_key(a->text);
		if (kept && is_word(a) && stem_stopword(f, strlen(f)) & stop)
			query_free(a);
		else
			out = join(Q_OR, out, a);
	}
	pv_free(&words);
	return out;
}

/* q as a plain query: side-by-side text atoms OR'ed (see above). */
struct qnode *sto_relax(struct qnode *q, unsigned stop)
{
	if (!q)
		return NULL;
	if (q->kind == Q_OR) {
		q->a = sto_relax(q->a, stop);
		q->b = sto_relax(q->b, stop);
		return q;
	}
	if (q->kind != Q_AND && !sto_text_atom(q))
		return q;
	struct ptrvec parts = {0}, atoms = {0};
	bool explicit_ = false;
	and_parts(q, &parts, &explicit_);
	struct qnode *rest = NULL;
	for (size_t i = 0; i < parts.n; i++) {
		struct qnode *p = parts.v[i];
		if (!explicit_ && sto_text_atom(p))
			pv_push(&atoms, p);
		else
			rest = join(Q_AND, rest,
				    sto_text_atom(p) ? p : sto_relax(p, stop));
	}
	pv_free(&parts);
	struct qnode *any = atoms.n ? any_of(&atoms, stop) : NULL;
	pv_free(&atoms);
	return join(Q_AND, any, rest);
}

/* ---- typos ---------------------------------------------------------------
 * A word of the query that no note has is likely mistyped: it is searched
 * as the words of the index one edit away from it (a letter changed,
 * added, dropped, or two swapped), the most frequent first.
 */

/* Words this short, and rarer, are left as they are. */
#define TYPO_MIN 4
#define TYPO_ALTERNATIVES 3

/* Whether a note has q; *found: the statement that asks, prepared at
 * the first word and reused for the next ones. */
static bool word_found(sqlite3 *db, sqlite3_stmt **found, const struct qnode *q)
{
	if (!*found)
		*found = sto_stmt(db, "SELECT 1 FROM fts WHERE fts MATCH ?1"
				      " LIMIT 1");
	if (!*found)
		return true;
	struct sbuf e = {0};
	sto_fts_atom(&e, q);
	sqlite3_bind_text(*found, 1, e.s, -1, SQLITE_STATIC);
	bool r = sqlite3_step(*found) != SQLITE_DONE;
	sqlite3_reset(*found);
	sqlite3_clear_bindings(*found);
	sb_free(&e);
	return r;
}

struct alt {
	char *term;
	int64_t docs;
};

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* c, if it starts with w's first or second letter and is not w. */
static void edit_keep(struct hmap *seen, const char *c, const char *w)
{
	if ((c[0] == w[0] || c[0] == w[1]) && strcmp(c, w) != 0)
		hmap_put(seen, c, NULL);
}

/* The words one edit away from w (a letter dropped, two swapped, one
 * changed or added) that start with its first or second letter, each
 * once, in order. */
static struct ptrvec edits(const char *w)
{
	size_t wl = strlen(w);
	struct hmap *seen = hmap_new();
	char *c = xmalloc(wl + 2);
	for (size_t i = 0; i < wl; i++) {
		memcpy(c, w, i);
		strcpy(c + i, w + i + 1);
		edit_keep(seen, c, w);
		if (i + 1 < wl) {
			strcpy(c, w);
			c[i] = w[i + 1];
			c[i + 1] = w[i];
			edit_keep(seen, c, w);
		}
	}
	for (size_t i = 0; i <= wl; i++) {
		for (char l = 'a'; l <= 'z'; l++) {
			if (i < wl) {
				strcpy(c, w);
				c[i] = l;
				edit_keep(seen, c, w);
			}
			memcpy(c, w, i);
			c[i] = l;
			strcpy(c + i + 1, w + i);
			edit_keep(seen, c, w);
		}
	}
	free(c);
	struct ptrvec out = {0};
	size_t it = 0;
	const char *key;
	while (hmap_next(seen, &it, &key, NULL))
		pv_push(&out, xstrdup(key));
	hmap_free(seen);
	pv_sort(&out, cmp_str_ptr);
	return out;
}

/* t among the n best alternatives in out (the most frequent first; of
 * as frequent ones, the first found), if it is one of them. */
static size_t keep_alt(struct alt *out, size_t n, const char *t, int64_t d)
{
	size_t at = n;
	while (at > 0 && out[at - 1].docs < d)
		at--;
	if (at >= TYPO_ALTERNATIVES)
		return n;
	if (n == TYPO_ALTERNATIVES)
		free(out[--n].term);
	memmove(out + at + 1, out + at, (n - at) * sizeof(*out));
	out[at] = (struct alt){xstrdup(t), d};
	return n + 1;
}

/* The index's words one edit away from w (lower case ASCII), from
 * those that start with its first or second letter, the most frequent
 * first. The candidates, in order, are walked along the index's words:
 * one look-up gives the first word at or after a candidate (from the
 * instances' view, which counts nothing), and every candidate before
 * that word is skipped (most of them: a few dozen look-ups for a word
 * of several hundred candidates, not one each); a candidate that is a
 * word has its notes counted. Reading the index's words with their
 * counts would take tens of milliseconds. */
static size_t alternatives(sqlite3 *db, const char *w, struct alt *out)
{
	size_t n = 0;
	sqlite3_stmt *st = NULL, *next = NULL;
	if (sqlite3_exec(db,
			 "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING"
			 " fts5vocab(main, fts, row);"
			 " CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_at"
			 " USING fts5vocab(main, fts, instance)",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT doc FROM temp.vocab WHERE term = ?1",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "SELECT term FROM temp.vocab_at WHERE term >= ?1"
			       " LIMIT 1",
			       -1, &next, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return 0;
	}
	struct ptrvec cand = edits(w);
	_cleanup_free_ char *word = NULL;
	for (size_t i = 0; i < cand.n; i++) {
		const char *t = cand.v[i];
		if (!word || strcmp(t, word) > 0) {
			/* Past the last word found: the next one. */
			free(word);
			word = NULL;
			sqlite3_bind_text(next, 1, t, -1, SQLITE_STATIC);
			if (sqlite3_step(next) == SQLITE_ROW)
				word = xstrdup(
					(const char *)sqlite3_column_text(next,
									  0));
			sqlite3_reset(next);
			if (!word)
				break; /* no word at or after t */
		}
		if (strcmp(t, word) != 0)
			continue;
		sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
		int64_t d = sqlite3_step(st) == SQLITE_ROW
				    ? sqlite3_column_int64(st, 0)
				    : 0;
		sqlite3_reset(st);
		if (d > 0)
			n = keep_alt(out, n, t, d);
	}
	for (size_t i = 0; i < cand.n; i++)
		free(cand.v[i]);
	pv_free(&cand);
	sqlite3_finalize(st);
	sqlite3_finalize(next);
	return n;
}

static bool ascii_word(const char *t)
{
	for (; *t; t++)
		if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z')))
			return false;
	return true;
}

/* q with its words that no note has replaced by their alternatives (not
 * under a NOT: "-wrod" excludes nothing either way). */
static void fix_typos(sqlite3 *db, sqlite3_stmt **found, struct qnode *q)
{
	if (q->kind == Q_AND || q->kind == Q_OR) {
		fix_typos(db, found, q->a);
		fix_typos(db, found, q->b);
		return;
	}
	if (!is_word(q) || strlen(q->text) < TYPO_MIN || !ascii_word(q->text) ||
	    word_found(db, found, q))
		return;
	_cleanup_free_ char *w = fold_key(q->text);
	struct alt alt[TYPO_ALTERNATIVES];
	size_t n = alternatives(db, w, alt);
	if (!n)
		return;
	struct qnode *any = NULL;
	for (size_t i = 0; i < n; i++)
		any = join(Q_OR, any, word_node(q, alt[i].term));
	/* The node becomes the alternatives, in place. */
	free(q->text);
	*q = *any;
	free(any);
}

void sto_fix_typos(sqlite3 *db, struct qnode *q)
{
	sqlite3_stmt *found = NULL;
	fix_typos(db, &found, q);
	sto_stmt_done(found);
}

void sto_conjuncts(const struct qnode *q, struct ptrvec *out)
{
	if (q->kind == Q_AND) {
		sto_conjuncts(q->a, out);
		sto_conjuncts(q->b, out);
	} else {
		pv_push(out, (void *)q);
	}
}
