/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The ranked page of a search of words alone: for a plain query's words
 * joined by OR, the top k without ranking every hit (MaxScore, below),
 * with the words' note counts cached per generation; otherwise every hit
 * ranked in one pass that also counts them.
 */
#include "ftsaux.h"
#include "store_int.h"
#include "tokenizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* ---- top k without ranking every hit ---------------------------------------
 * A plain query's words joined by OR (MaxScore): BM25 gives a word at most
 * idf * (k1 + 1) however often it occurs, so a note that has none of the
 * words that can score the most cannot be among the first k once the
 * other words' best scores add up to less than the k-th score found
 * among the notes that have one. The ranked query then reads only those
 * notes (the words that score little, often the commonest, are not
 * iterated) and scores them on every word, with the documents counts it
 * is given; the page is the same as ranking every hit.
 */

/* BM25's k1 + 1 (ftsaux.c), and a margin for rounding. */
#define SCORE_BOUND 2.2
#define BOUND_MARGIN 1e-9

struct prune {
	size_t n, m;   /* words; the first m (by bound) drive */
	char **expr;   /* FTS5 expression of each word */
	int64_t *df;   /* notes with it */
	bool *capped;  /* counted up to the common count, not yet in full */
	double *bound; /* its best score */
	size_t *order; /* words by bound, highest first */
	char *all;     /* every word OR'ed */
	char *rank;    /* the rank function, given the counts */
	char *match;   /* the current plan's expression */
	int64_t rows;  /* notes */
};

/* The words of an OR chain of plain words and phrases (not prefixes,
 * fields or CJK); false for any other query. */
static bool or_words(const struct qnode *q, struct ptrvec *out)
{
	if (q->kind == Q_OR)
		return or_words(q->a, out) && or_words(q->b, out);
	if (!sto_text_atom(q) || q->prefix || q->title || sto_cjk_atom(q))
		return false;
	pv_push(out, (void *)q);
	return true;
}

static int64_t count_of(sqlite3 *db, const char *sql, const char *match)
{
	sqlite3_stmt *st = sto_stmt(db, sql);
	int64_t n = -1;
	if (!st)
		return -1;
	if (match)
		sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sto_stmt_done(st);
	return n;
}

static void prune_free(struct prune *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->expr[i]);
	free(p->expr);
	free(p->df);
	free(p->capped);
	free(p->bound);
	free(p->order);
	free(p->all);
	free(p->rank);
	free(p->match);
	memset(p, 0, sizeof(*p));
}

static int cmp_bound(const void *a, const void *b, void *ud)
{
	const double *bound = ud;
	double x = bound[*(const size_t *)a], y = bound[*(const size_t *)b];
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Cached counts hold for one generation, and only the most recent ones
 * are kept. */
#define DF_CACHE_MAX 4096

/* The count cached under key for generation gen in *ret (true), if any. */
static bool df_get(struct store *s, const char *key, uint64_t gen, int64_t *ret)
{
	pthread_mutex_lock(&s->dfmu);
	void *v = s->dfgen == gen ? hmap_get(s->df, key) : NULL;
	pthread_mutex_unlock(&s->dfmu);
	if (v)
		*ret = (int64_t)(intptr_t)v - 1;
	return v != NULL;
}

/* n cached under key for generation gen, unless a write committed
 * meanwhile (the count may be of before it). */
static void df_put(struct store *s, const char *key, uint64_t gen, int64_t n)
{
	if (n < 0 || atomic_load(&s->gen) != gen)
		return;
	pthread_mutex_lock(&s->dfmu);
	if (s->dfgen != gen || hmap_size(s->df) >= DF_CACHE_MAX) {
		hmap_free(s->df);
		s->df = hmap_new();
		s->dfgen = gen;
	}
	hmap_put(s->df, key, (void *)(intptr_t)(n + 1));
	pthread_mutex_unlock(&s->dfmu);
}

/* The count of sql (expr, if any, as ?1), counted or from the cache
 * (under key), for a search that began at generation gen; -1 on error. */
static int64_t cached_count(struct store *s, sqlite3 *db, const char *key,
			    const char *sql, const char *expr, uint64_t gen)
{
	int64_t n;
	if (df_get(s, key, gen, &n))
		return n;
	n = count_of(db, sql, expr);
	df_put(s, key, gen, n);
	return n;
}

/* The notes that match expr (cached as cached_count). */
static int64_t word_count(struct store *s, sqlite3 *db, const char *expr,
			  uint64_t gen)
{
	return cached_count(s, db, expr,
			    "SELECT count(*) FROM fts WHERE fts MATCH ?1", expr,
			    gen);
}

/* The rows of a table (cached as cached_count; the key, which no FTS5
 * expression is, starts with a control character). */
static int64_t rows_of(struct store *s, sqlite3 *db, const char *table,
		       uint64_t gen)
{
	_cleanup_free_ char *key = xasprintf("\x01%s", table);
	_cleanup_free_ char *sql = xasprintf("SELECT count(*) FROM %s", table);
	return cached_count(s, db, key, sql, NULL, gen);
}

/* A word in at least 1 / COMMON_SHARE of the notes, and COMMON_MIN, is
 * common: ranked from its notes in memory (below). */
#define COMMON_SHARE 4
#define COMMON_MIN 64

/* The notes that match expr, counted up to limit (< 0: all). -1 on
 * error. */
int64_t sto_count_upto(sqlite3 *db, const char *expr, int64_t limit)
{
	if (limit < 0)
		return count_of(db,
				"SELECT count(*) FROM fts WHERE fts MATCH ?1",
				expr);
	sqlite3_stmt *st = sto_stmt(db, "SELECT count(*) FROM (SELECT 1 FROM"
					" fts WHERE fts MATCH ?1 LIMIT ?2)");
	int64_t n = -1;
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, limit);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sto_stmt_done(st);
	return n;
}

/* Word i's count in p->df[i]: the notes it has in memory (read now if
 * they are not; cached as cached_count). false on error. */
static bool listed_df(struct store *s, sqlite3 *db, struct prune *p, size_t i,
		      uint64_t gen)
{
	int r = 0;
	char *msg = NULL;
	struct sto_word *w = sto_word_get(s, db, p->expr[i], gen, &r, &msg);
	free(msg);
	p->df[i] = w ? (int64_t)w->n : -1;
	sto_word_put(w);
	df_put(s, p->expr[i], gen, p->df[i]);
	return w != NULL;
}

/* Word i's count in p->df[i]: cached, of its notes in memory (brought up
 * to date), or counted up to common notes (then p->capped[i], and
 * finish_counts finishes it). false on error. */
static bool word_df(struct store *s, sqlite3 *db, struct prune *p, size_t i,
		    int64_t common, uint64_t gen)
{
	const char *e = p->expr[i];
	if (df_get(s, e, gen, &p->df[i]))
		return true;
	if (sto_word_cached(s, e))
		return listed_df(s, db, p, i, gen);
	p->df[i] = sto_count_upto(db, e, common);
	p->capped[i] = p->df[i] >= common;
	if (!p->capped[i])
		df_put(s, e, gen, p->df[i]);
	return p->df[i] >= 0;
}

/* The counts of p's words counted up to common notes finished: when
 * every word is common (or in memory), the query is ranked from their
 * notes in memory, which are read now and give the counts (a count,
 * then a pass over the same notes, would read them twice); else each
 * is counted in full (a count that goes on from the last note counted,
 * with FTS5 given a bound on the ids, is slower). false on error. */
static bool finish_counts(struct store *s, sqlite3 *db, struct prune *p,
			  int64_t common, uint64_t gen)
{
	bool memory = true, ok = true;
	for (size_t i = 0; i < p->n && memory; i++)
		memory = p->capped[i] || p->df[i] >= common ||
			 sto_word_cached(s, p->expr[i]);
	for (size_t i = 0; i < p->n && ok; i++) {
		if (!p->capped[i])
			continue;
		if (memory) {
			ok = listed_df(s, db, p, i, gen);
			continue;
		}
		p->df[i] = sto_count_upto(db, p->expr[i], -1);
		ok = p->df[i] >= 0;
		df_put(s, p->expr[i], gen, p->df[i]);
	}
	return ok;
}

/* The words of q and their counts; false when q is not such a query or
 * a count fails. */
static bool prune_init(struct store *s, sqlite3 *db, const struct qnode *q,
		       uint64_t gen, struct prune *p)
{
	struct ptrvec words = {0};
	memset(p, 0, sizeof(*p));
	int64_t rows = rows_of(s, db, "notes", gen);
	if (!or_words(q, &words) || words.n < 2 || rows < 0) {
		pv_free(&words);
		return false;
	}
	int64_t common = (rows + COMMON_SHARE - 1) / COMMON_SHARE;
	if (common < COMMON_MIN)
		common = COMMON_MIN;
	p->n = words.n;
	p->rows = rows;
	p->expr = xcalloc(p->n, sizeof(*p->expr));
	p->df = xcalloc(p->n, sizeof(*p->df));
	p->capped = xcalloc(p->n, sizeof(*p->capped));
	p->bound = xcalloc(p->n, sizeof(*p->bound));
	p->order = xcalloc(p->n, sizeof(*p->order));
	bool ok = true;
	for (size_t i = 0; i < p->n && ok; i++) {
		struct sbuf e = {0};
		sto_fts_atom(&e, words.v[i]);
		p->expr[i] = sb_steal(&e);
		ok = word_df(s, db, p, i, common, gen);
	}
	pv_free(&words);
	ok = ok && finish_counts(s, db, p, common, gen);
	struct sbuf all = {0}, rank = {0};
	sb_puts(&rank, "vrank(" RANK_WEIGHTS);
	for (size_t i = 0; i < p->n && ok; i++) {
		double idf = log(((double)rows - (double)p->df[i] + 0.5) /
				 ((double)p->df[i] + 0.5));
		p->bound[i] = (idf > 1e-6 ? idf : 1e-6) * SCORE_BOUND;
		p->order[i] = i;
		sb_printf(&all, "%s%s", i ? " OR " : "(", p->expr[i]);
		sb_printf(&rank, ", %lld", (long long)p->df[i]);
	}
	sb_puts(&all, ")");
	sb_puts(&rank, ")");
	p->all = sb_steal(&all);
	p->rank = sb_steal(&rank);
	qsort_r(p->order, p->n, sizeof(*p->order), cmp_bound, p->bound);
	p->m = 0;
	if (!ok)
		prune_free(p);
	return ok;
}

/* The next plan: one more word drives (all of them: every hit ranked);
 * false when there is none. */
static bool prune_next(struct prune *p)
{
	if (p->m >= p->n)
		return false;
	p->m++;
	free(p->match);
	if (p->m == p->n) {
		p->match = xstrdup(p->all);
		return true;
	}
	struct sbuf b = {0};
	sb_printf(&b, "%s AND (", p->all);
	for (size_t i = 0; i < p->m; i++)
		sb_printf(&b, "%s%s", i ? " OR " : "", p->expr[p->order[i]]);
	sb_puts(&b, ")");
	p->match = sb_steal(&b);
	return true;
}

/* ---- one pass over the hits ------------------------------------------------
 * The hits of a MATCH expression are read once, unsorted, each scored as
 * it comes; the best offset + limit are kept in a heap (FTS5's own ORDER
 * BY rank writes every hit to a sorter and sorts them all), and the rows
 * read are the total when the expression is the query's own (no separate
 * count of the same hits).
 */

struct scored {
	int64_t id;
	double score;
};

/* Ranks below: a lower score, or as high with a higher id. */
static bool worse(const struct scored *a, const struct scored *b)
{
	return a->score < b->score || (a->score == b->score && a->id > b->id);
}

/* The best k seen, the worst of them at v[0] (a binary heap). */
struct topk {
	struct scored *v;
	size_t n, k;
};

static void topk_add(struct topk *t, int64_t id, double score)
{
	struct scored x = {id, score};
	size_t i;
	if (t->n < t->k) {
		for (i = t->n++; i > 0 && worse(&x, &t->v[(i - 1) / 2]);
		     i = (i - 1) / 2)
			t->v[i] = t->v[(i - 1) / 2];
		t->v[i] = x;
		return;
	}
	if (!t->k || !worse(&t->v[0], &x))
		return;
	for (i = 0;;) {
		size_t c = 2 * i + 1;
		if (c >= t->n)
			break;
		if (c + 1 < t->n && worse(&t->v[c + 1], &t->v[c]))
			c++;
		if (!worse(&t->v[c], &x))
			break;
		t->v[i] = t->v[c];
		i = c;
	}
	t->v[i] = x;
}

static int cmp_better(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;
	return worse(y, x) ? -1 : worse(x, y) ? 1 : 0;
}

/* The hits of match scored by the rank function rank: the best t->k of
 * them in t->v, best first; *ret_rows: how many there were. */
static int topk_pass(struct store *s, sqlite3 *db, sqlite3_stmt *st,
		     const char *match, const char *rank, struct topk *t,
		     size_t *ret_rows, char **ret_msg)
{
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, rank, -1, SQLITE_STATIC);
	size_t rows = 0;
	int r;
	t->n = 0;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		rows++;
		topk_add(t, sqlite3_column_int64(st, 0),
			 -sqlite3_column_double(st, 1));
	}
	int err = r == SQLITE_DONE ? 0 : sto_search_error(s, db, ret_msg);
	sqlite3_reset(st);
	qsort(t->v, t->n, sizeof(*t->v), cmp_better);
	*ret_rows = rows;
	return err;
}

/* The rank function with the count of the notes of a word or phrase
 * (?4) for its page: scored by its rarity. */
#define RESCORE "vrank(fts, " RANK_WEIGHTS ", ?4)"

/* A word's hits, at most, read in one query for the page's snippets
 * rather than a query per hit. */
#define RANGE_ROWS 256

/* A hit of the page with the name it is ordered by after its score. */
struct named {
	struct store_hit *h;
	char *name;
};

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	if (x->h->score != y->h->score)
		return x->h->score > y->h->score ? -1 : 1;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->h->path, y->h->path);
}

/* A page hit's snippet and, when the page is scored again, its score
 * (row: the snippet's query returned the hit). */
struct snipped {
	char *text;
	double score;
	bool row;
};

/* One hit of the page: its note's path and name (none: the note is not
 * in the notes table, and the hit is left out) and its snippet sn. */
static bool page_hit(sqlite3_stmt *note, bool rescore, const struct scored *sc,
		     struct snipped *sn, struct named *out)
{
	sqlite3_bind_int64(note, 1, sc->id);
	if (sqlite3_step(note) != SQLITE_ROW) {
		sqlite3_reset(note);
		return false;
	}
	struct store_hit *h = xcalloc(1, sizeof(*h));
	h->path = xstrdup((const char *)sqlite3_column_text(note, 0));
	out->name = xstrdup((const char *)sqlite3_column_text(note, 1));
	sqlite3_reset(note);
	h->score = sn->row && rescore ? sn->score : sc->score;
	/* The id rides in line until the snippet is made. */
	h->line = (int)sc->id;
	h->snippet = sn->text ? sn->text : xstrdup("");
	sn->text = NULL;
	out->h = h;
	return true;
}

/* The snippet query's columns for the hit it returned. */
static void snipped_of(sqlite3_stmt *st, int col, bool rescore,
		       struct snipped *sn)
{
	const char *t = (const char *)sqlite3_column_text(st, col);
	free(sn->text);
	sn->text = xstrdup(t ? t : "");
	sn->row = true;
	if (rescore)
		sn->score = -sqlite3_column_double(st, col + 1);
}

/* The snippets of the n hits v that no query returned yet, one query
 * each ("rowid = ?" takes FTS5 straight to the hit). */
static int snippets_each(struct store *s, sqlite3 *db, const struct scored *v,
			 size_t n, const char *match, int64_t nphrase,
			 int64_t rescore, struct snipped *out, char **ret_msg)
{
	size_t left = 0;
	for (size_t i = 0; i < n; i++)
		left += !out[i].row;
	if (!left)
		return 0;
	/* With rescore, vrank given the count (without it, it would count
	 * every phrase) called as is: a "rank MATCH" prepares a statement
	 * for the rank function's arguments on each query. */
	sqlite3_stmt *snip = sto_stmt(
		db, rescore >= 0
			    ? "SELECT vsnippet(fts, 1, 'docz', 'body', ?3),"
			      " " RESCORE " FROM fts WHERE fts MATCH ?1"
			      " AND rowid = ?2"
			    : "SELECT vsnippet(fts, 1, 'docz', 'body', ?3)"
			      " FROM fts WHERE fts MATCH ?1 AND rowid = ?2");
	if (!snip)
		return sto_search_error(s, db, ret_msg);
	sqlite3_bind_text(snip, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_int64(snip, 3, nphrase);
	if (rescore >= 0)
		sqlite3_bind_int64(snip, 4, rescore);
	for (size_t i = 0; i < n; i++) {
		if (out[i].row)
			continue;
		sqlite3_bind_int64(snip, 2, v[i].id);
		if (sqlite3_step(snip) == SQLITE_ROW)
			snipped_of(snip, 0, rescore >= 0, &out[i]);
		sqlite3_reset(snip);
	}
	sto_stmt_done(snip);
	return 0;
}

/* The snippets of the n hits v in one query over the hits in their range
 * of ids (a statement kept for each n, the ids bound from ?7): for a
 * prefix, which FTS5 expands (reading every word it starts) for each
 * query it runs, not for each hit; for a rare word, whose few notes in
 * the range cost less to read than a query per hit (each parses the
 * expression and looks its words up again). */
static int snippets_ranged(struct store *s, sqlite3 *db, const struct scored *v,
			   size_t n, const char *match, int64_t nphrase,
			   int64_t rescore, struct snipped *out, char **ret_msg)
{
	if (!n)
		return 0;
	int64_t lo = v[0].id, hi = v[0].id;
	struct sbuf sql = {0};
	sb_printf(&sql,
		  "SELECT rowid, vsnippet(fts, 1, 'docz', 'body', ?3)%s"
		  " FROM fts WHERE fts MATCH ?1 AND rowid >= ?5 AND"
		  " rowid <= ?6 AND +rowid IN (",
		  rescore >= 0 ? ", " RESCORE : "");
	for (size_t i = 0; i < n; i++) {
		sb_printf(&sql, "%s?%zu", i ? ", " : "", i + 7);
		lo = v[i].id < lo ? v[i].id : lo;
		hi = v[i].id > hi ? v[i].id : hi;
	}
	sb_puts(&sql, ")");
	sqlite3_stmt *st = sto_stmt(db, sql.s);
	sb_free(&sql);
	if (!st)
		return sto_search_error(s, db, ret_msg);
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, nphrase);
	if (rescore >= 0)
		sqlite3_bind_int64(st, 4, rescore);
	sqlite3_bind_int64(st, 5, lo);
	sqlite3_bind_int64(st, 6, hi);
	for (size_t i = 0; i < n; i++)
		sqlite3_bind_int64(st, (int)i + 7, v[i].id);
	int rc, r = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		for (size_t i = 0; i < n; i++)
			if (v[i].id == id)
				snipped_of(st, 1, rescore >= 0, &out[i]);
	}
	if (rc != SQLITE_DONE)
		r = sto_search_error(s, db, ret_msg);
	sto_stmt_done(st);
	return r;
}

atomic_size_t sto_phrase_snippets;

/* The index of note id among the notes of w (by id), or -1. */
static ssize_t note_at(const struct sto_word *w, int64_t id)
{
	size_t lo = 0, hi = w->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sto_word_id(w, mid) < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n && sto_word_id(w, lo) == id ? (ssize_t)lo : -1;
}

/* The snippets and scores of the n hits v of a phrase alone (match, of
 * rescore notes) whose words' positions are kept for generation gen,
 * made from them and the stored texts as the snippet query would make
 * them (vsnippet, RESCORE) without one FTS5 query per hit, which reads
 * a common word's positions up to the hit: the others are left. */
static void snippets_kept(struct store *s, sqlite3 *db, const struct scored *v,
			  size_t n, const char *match, int64_t rescore,
			  uint64_t gen, struct snipped *out)
{
	/* The notes the page was ranked from, if still kept (reading
	 * them again would cost more than the queries spared). */
	struct sto_word *w = sto_phrase_found(s, match, gen);
	if (!w)
		return;
	struct ftsaux_tok tk = {tokenizer_aux, NULL};
	sqlite3_blob *blob = NULL;
	int64_t *id = xcalloc(n + 1, sizeof(*id));
	int *offs = xcalloc(n * FTSAUX_HITS_MAX + 1, sizeof(*offs));
	int *got = xcalloc(n + 1, sizeof(*got)), size = 0;
	for (size_t i = 0; i < n; i++)
		id[i] = v[i].id;
	if (sto_phrase_places(s, match, gen, id, n, FTSAUX_HITS_MAX, offs, got,
			      &size) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		ssize_t k = note_at(w, v[i].id);
		if (k < 0 || got[i] < 0)
			continue;
		char *t = ftsaux_snippet(db, "docz", "body", &blob, v[i].id,
					 offs + i * FTSAUX_HITS_MAX, got[i],
					 size, &tk);
		out[i].text = t ? t : xstrdup("");
		out[i].row = true;
		atomic_fetch_add(&sto_phrase_snippets, 1);
		out[i].score = ftsaux_term(
			ftsaux_idf(w->nrow, rescore), sto_word_freq(w, k),
			ftsaux_norm((double)w->dl[k], w->avgdl));
	}
	free(id);
	free(offs);
	free(got);
	sqlite3_blob_close(blob);
	sto_word_put(w);
}

/* The page: t's hits from offset, ordered by score, name and path, with
 * their snippets around the first nphrase phrases of match (ranged:
 * read in one query, snippets_ranged); with rescore (0 or more), scored
 * again by vrank given that count. */
static int topk_page(struct store *s, sqlite3 *db, const struct topk *t,
		     size_t offset, const char *match, int64_t nphrase,
		     int64_t rescore, bool ranged, uint64_t gen,
		     struct ptrvec *hits, char **ret_msg)
{
	size_t n = t->n > offset ? t->n - offset : 0, got = 0;
	struct snipped *sn = xcalloc(n + 1, sizeof(*sn));
	if (rescore >= 0 && !ranged && nphrase == INT32_MAX)
		snippets_kept(s, db, t->v + offset, n, match, rescore, gen, sn);
	int r = ranged ? snippets_ranged(s, db, t->v + offset, n, match,
					 nphrase, rescore, sn, ret_msg)
		       : 0;
	/* Any the range did not return (none should), one by one. */
	if (r == 0)
		r = snippets_each(s, db, t->v + offset, n, match, nphrase,
				  rescore, sn, ret_msg);
	sqlite3_stmt *note =
		r == 0 ? sto_stmt(db,
				  "SELECT path, name FROM notes WHERE id = ?1")
		       : NULL;
	if (r == 0 && !note)
		r = sto_search_error(s, db, ret_msg);
	struct named *page = xcalloc(n + 1, sizeof(*page));
	for (size_t i = 0; i < n && r == 0; i++)
		got += page_hit(note, rescore >= 0, &t->v[offset + i], &sn[i],
				&page[got]);
	qsort(page, got, sizeof(*page), cmp_named);
	for (size_t i = 0; i < got; i++) {
		pv_push(hits, page[i].h);
		free(page[i].name);
	}
	for (size_t i = 0; i < n; i++)
		free(sn[i].text);
	free(sn);
	free(page);
	sto_stmt_done(note);
	return r;
}

/* Whether the best need hits found under the current plan are those of
 * every hit: the notes left out score below the need-th. */
static bool prune_exact(const struct prune *p, const struct topk *t,
			size_t need)
{
	if (p->m >= p->n)
		return true;
	if (t->n < need || !t->n)
		return false;
	double rest = 0;
	for (size_t i = p->m; i < p->n; i++)
		rest += p->bound[p->order[i]];
	return rest * (1 + BOUND_MARGIN) < t->v[t->n - 1].score;
}

/* The notes indexed when a word of p is in every one of them (then so
 * are the query's hits), else -1: their count needs no pass. */
static int64_t every_note(struct store *s, sqlite3 *db, const struct prune *p,
			  uint64_t gen)
{
	int64_t all = rows_of(s, db, "fts_docsize", gen);
	for (size_t i = 0; all > 0 && i < p->n; i++)
		if (p->df[i] == all)
			return all;
	return -1;
}

/* The notes with any word of p: those with its commonest word (counted
 * already) and those with another one but not that one, which FTS5
 * counts by reading the other words' notes and skipping through the
 * commonest word's (the union would read every one of them). */
static int64_t union_count(struct store *s, sqlite3 *db, const struct prune *p,
			   uint64_t gen)
{
	size_t c = 0;
	for (size_t i = 1; i < p->n; i++)
		if (p->df[i] > p->df[c])
			c = i;
	struct sbuf b = {0};
	sb_puts(&b, "(");
	for (size_t i = 0, k = 0; i < p->n; i++)
		if (i != c)
			sb_printf(&b, "%s%s", k++ ? " OR " : "", p->expr[i]);
	sb_printf(&b, ") NOT %s", p->expr[c]);
	int64_t rest = word_count(s, db, b.s, gen);
	sb_free(&b);
	return rest < 0 ? -1 : p->df[c] + rest;
}

/* ---- common words in memory ----------------------------------------------
 * Words that a good part of the notes have (or whose notes are in memory
 * already) are ranked from their notes in memory (store_words.c): each
 * note with any of them scored as vrank scores it, phrase by phrase in
 * the same order (the same double), the best kept in the same heap. MaxScore
 * cannot spare much there: every such word bounds the others little.
 */

static bool all_common(struct store *s, const struct prune *p)
{
	for (size_t i = 0; i < p->n; i++)
		if ((p->df[i] < COMMON_MIN ||
		     p->df[i] * COMMON_SHARE < p->rows) &&
		    !sto_word_cached(s, p->expr[i]))
			return false;
	return true;
}

/* The notes of FTS5 phrase expr: a phrase from its words' positions
 * (store_phrase.c), else a word's notes, kept (store_words.c) or, without
 * keep, read for this search alone when they are not; NULL on error (*ret_r,
 * *ret_msg). */
static struct sto_word *notes_of(struct store *s, sqlite3 *db, const char *expr,
				 bool keep, uint64_t gen, int *ret_r,
				 char **ret_msg)
{
	struct sto_word *w = sto_phrase_get(s, db, expr, gen, ret_r, ret_msg);
	if (!w && *ret_r == 0)
		w = keep ? sto_word_get(s, db, expr, gen, ret_r, ret_msg)
			 : sto_word_read(s, db, expr, gen, ret_r, ret_msg);
	return w;
}

/* The n words' notes w (in the order the rank function has them; df:
 * their counts, NULL: each weighs 1) scored: the best t->k in t->v, best
 * first; the notes with any of them returned. */
static size_t score_notes(struct sto_word *const *w, size_t n,
			  const int64_t *df, struct topk *t)
{
	size_t *at = xcalloc(n, sizeof(*at)), rows = 0;
	double *idf = xcalloc(n, sizeof(*idf));
	for (size_t i = 0; i < n; i++)
		idf[i] = df ? ftsaux_idf(w[i]->nrow, df[i]) : 1;
	t->n = 0;
	/* FTS5 gives each word's notes by id: one merge of them. */
	for (;;) {
		int64_t id = INT64_MAX;
		for (size_t i = 0; i < n; i++)
			if (at[i] < w[i]->n && sto_word_id(w[i], at[i]) < id)
				id = sto_word_id(w[i], at[i]);
		if (id == INT64_MAX)
			break;
		double total = 0;
		for (size_t i = 0; i < n; i++) {
			size_t k = at[i];
			if (k < w[i]->n && sto_word_id(w[i], k) == id) {
				total += ftsaux_term(
					idf[i], sto_word_freq(w[i], k),
					ftsaux_norm((double)w[i]->dl[k],
						    w[i]->avgdl));
				at[i]++;
			}
		}
		rows++;
		topk_add(t, id, total);
	}
	qsort(t->v, t->n, sizeof(*t->v), cmp_better);
	free(at);
	free(idf);
	return rows;
}

/* The notes of the n words expr (FTS5 phrases, in the order the rank
 * function has them; df: their counts, NULL: each weighs 1) scored in
 * memory: the best t->k in t->v, best first; *ret_rows: the notes with
 * any of them. */
static int memory_pass(struct store *s, sqlite3 *db, char *const *expr,
		       size_t n, const int64_t *df, uint64_t gen,
		       struct topk *t, size_t *ret_rows, char **ret_msg)
{
	struct sto_word **w = xcalloc(n, sizeof(*w));
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++)
		w[i] = notes_of(s, db, expr[i], true, gen, &r, ret_msg);
	*ret_rows = r == 0 ? score_notes(w, n, df, t) : 0;
	for (size_t i = 0; i < n; i++)
		sto_word_put(w[i]);
	free(w);
	return r;
}

/* A prefix alone (q, word*): its two phrases, the word itself and the
 * words it begins, scored from their notes in memory with their counts,
 * as the query's rank function (RANK) scores them, counting each phrase
 * (the best t->k in t->v, best first; *ret_rows: the notes with either):
 * FTS5 would count the words it begins, then look up the length of every
 * note that has one. Their notes are read for this search alone, unless
 * they are kept already (were they kept, every prefix searched would push
 * the common words out of memory). */
static int prefix_pass(struct store *s, sqlite3 *db, const struct qnode *q,
		       uint64_t gen, struct topk *t, size_t *ret_rows,
		       char **ret_msg)
{
	char *expr[2];
	struct sto_word *w[2] = {NULL, NULL};
	int r = 0;
	sto_fts_prefix_phrases(q, &expr[0], &expr[1]);
	for (size_t i = 0; i < 2 && r == 0; i++)
		w[i] = notes_of(s, db, expr[i], false, gen, &r, ret_msg);
	if (r == 0) {
		int64_t df[2] = {(int64_t)w[0]->n, (int64_t)w[1]->n};
		*ret_rows = score_notes(w, 2, df, t);
	}
	for (size_t i = 0; i < 2; i++)
		sto_word_put(w[i]);
	free(expr[0]);
	free(expr[1]);
	return r;
}

/* The best t->k hits read by FTS5: of match ranked by RANK, of the one
 * word or phrase match (one) in its own order, or under p's plans until
 * one is exact (pruning); *ret_rows: the hits read. */
static int fts_passes(struct store *s, sqlite3 *db, const char *match, bool one,
		      bool pruning, struct prune *p, struct topk *t,
		      size_t *ret_rows, char **ret_msg)
{
	sqlite3_stmt *st = sto_stmt(db, "SELECT rowid, rank FROM fts WHERE"
					" fts MATCH ?1 AND rank MATCH ?2");
	if (!st)
		return sto_search_error(s, db, ret_msg);
	int r;
	for (;;) {
		r = topk_pass(s, db, st, pruning ? p->match : match,
			      pruning ? p->rank
			      : one   ? "vrank(" RANK_WEIGHTS ", -1)"
				      : RANK,
			      t, ret_rows, ret_msg);
		if (r < 0 || !pruning || prune_exact(p, t, t->k) ||
		    !prune_next(p))
			break;
	}
	sto_stmt_done(st);
	return r;
}

/* The page of a query of words alone, match (q parsed): a plain
 * query's words joined by OR without ranking every hit when it can
 * (above), else every hit ranked in one pass that counts them too. gen:
 * the generation the search began at. */
int sto_topk(struct store *s, sqlite3 *db, const char *match,
	     const struct qnode *q, uint64_t gen, size_t offset, size_t limit,
	     struct ptrvec *hits, size_t *ret_total, char **ret_msg)
{
	struct prune p;
	bool pruning = prune_init(s, db, q, gen, &p) && prune_next(&p);
	/* One word or phrase: its weight (how rare it is) does not change
	 * the order of its hits, and they are counted as they are ranked;
	 * the page is scored with the count. */
	bool one = !pruning && sto_text_atom(q) && !q->prefix && !q->title;
	/* A prefix alone: every hit ranked as RANK ranks it (the words it
	 * begins weigh as one phrase, below the word itself), from memory
	 * (prefix_pass), the page's snippets in one query. */
	bool ranged = !pruning && sto_text_atom(q) && q->prefix;
	struct topk t = {.k = offset + limit};
	t.v = xcalloc(t.k + 1, sizeof(*t.v));
	size_t rows = 0;
	int r;
	if (one || (pruning && all_common(s, &p))) {
		/* Every hit, from memory: the plan of all the words. */
		char *const *expr = pruning ? p.expr : (char *const *)&match;
		r = memory_pass(s, db, expr, pruning ? p.n : 1,
				pruning ? p.df : NULL, gen, &t, &rows, ret_msg);
		if (pruning) {
			p.m = p.n;
			free(p.match);
			p.match = xstrdup(p.all);
		}
	} else if (ranged) {
		r = prefix_pass(s, db, q, gen, &t, &rows, ret_msg);
	} else {
		r = fts_passes(s, db, match, one, pruning, &p, &t, &rows,
			       ret_msg);
	}
	/* A plan that read only some of the hits: they are counted (once
	 * per generation: the next page's search counts no more). */
	bool counted = !pruning || p.m >= p.n;
	if (r == 0 && !counted) {
		int64_t n = every_note(s, db, &p, gen);
		if (n < 0)
			n = union_count(s, db, &p, gen);
		if (n < 0)
			r = sto_search_error(s, db, ret_msg);
		rows = n < 0 ? 0 : (size_t)n;
	}
	/* One word or phrase: the page scored with its count. */
	int64_t rescore = one ? (int64_t)rows : -1;
	/* A rare word alone: its notes read in one query for the page's
	 * snippets (a common one's would cost more than a query per hit). */
	if (one && q->kind == Q_WORD && rows <= RANGE_ROWS)
		ranged = true;
	if (r == 0)
		r = topk_page(s, db, &t, offset, pruning ? p.match : match,
			      pruning ? (int64_t)p.n : INT32_MAX, rescore,
			      ranged, gen, hits, ret_msg);
	*ret_total = rows;
	free(t.v);
	if (pruning)
		prune_free(&p);
	return r;
}
