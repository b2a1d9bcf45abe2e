/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The ranked page of a search: for a plain query's words joined by OR,
 * the top k without ranking every hit (MaxScore, below), with the words'
 * note counts cached per generation; otherwise FTS5 ranks every hit.
 */
#include "store_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
	double *bound; /* its best score */
	size_t *order; /* words by bound, highest first */
	char *all;     /* every word OR'ed */
	char *rank;    /* the rank function, given the counts */
	char *match;   /* the current plan's expression */
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
	sqlite3_stmt *st;
	int64_t n = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (match)
		sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static void prune_free(struct prune *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->expr[i]);
	free(p->expr);
	free(p->df);
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

/* The notes that match expr, counted or from the cache, for a search
 * that began at generation gen; -1 on error. */
static int64_t word_count(struct store *s, sqlite3 *db, const char *expr,
			  uint64_t gen)
{
	pthread_mutex_lock(&s->dfmu);
	void *v = s->dfgen == gen ? hmap_get(s->df, expr) : NULL;
	pthread_mutex_unlock(&s->dfmu);
	if (v)
		return (int64_t)(intptr_t)v - 1;
	int64_t n = count_of(db, "SELECT count(*) FROM fts WHERE fts MATCH ?1",
			     expr);
	/* A write committed meanwhile: the count may be of before it. */
	if (n < 0 || atomic_load(&s->gen) != gen)
		return n;
	pthread_mutex_lock(&s->dfmu);
	if (s->dfgen != gen || hmap_size(s->df) >= DF_CACHE_MAX) {
		hmap_free(s->df);
		s->df = hmap_new();
		s->dfgen = gen;
	}
	hmap_put(s->df, expr, (void *)(intptr_t)(n + 1));
	pthread_mutex_unlock(&s->dfmu);
	return n;
}

/* The words of q and their counts; false when q is not such a query or
 * a count fails. */
static bool prune_init(struct store *s, sqlite3 *db, const struct qnode *q,
		       uint64_t gen, struct prune *p)
{
	struct ptrvec words = {0};
	memset(p, 0, sizeof(*p));
	int64_t rows = count_of(db, "SELECT count(*) FROM notes", NULL);
	if (!or_words(q, &words) || words.n < 2 || rows < 0) {
		pv_free(&words);
		return false;
	}
	p->n = words.n;
	p->expr = xcalloc(p->n, sizeof(*p->expr));
	p->df = xcalloc(p->n, sizeof(*p->df));
	p->bound = xcalloc(p->n, sizeof(*p->bound));
	p->order = xcalloc(p->n, sizeof(*p->order));
	struct sbuf all = {0}, rank = {0};
	sb_puts(&rank, "vrank(10.0, 1.0");
	bool ok = true;
	for (size_t i = 0; i < p->n && ok; i++) {
		struct sbuf e = {0};
		sto_fts_atom(&e, words.v[i]);
		p->expr[i] = sb_steal(&e);
		p->df[i] = word_count(s, db, p->expr[i], gen);
		ok = p->df[i] >= 0;
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
	pv_free(&words);
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

/* Whether the page found under the current plan is the page of every
 * hit: the notes left out score below its need-th (last) score. */
static bool prune_exact(const struct prune *p, const struct ptrvec *hits,
			size_t need_on_page)
{
	if (p->m >= p->n)
		return true;
	if (hits->n < need_on_page || !hits->n)
		return false;
	double rest = 0;
	for (size_t i = p->m; i < p->n; i++)
		rest += p->bound[p->order[i]];
	const struct store_hit *last = hits->v[hits->n - 1];
	return rest * (1 + BOUND_MARGIN) < last->score;
}

/* The page of the ranked query sel (driver as ?1); for a words-only
 * query q (else NULL), without ranking every hit when it can (above).
 * gen: the generation the search began at. */
int sto_ranked(struct store *s, sqlite3 *db, const char *sel,
	       const char *driver, const struct sql *w, const struct qnode *q,
	       uint64_t gen, size_t offset, size_t limit, struct ptrvec *hits,
	       char **ret_msg)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sel, -1, &st, NULL) != SQLITE_OK)
		return sto_search_error(s, db, ret_msg);
	struct prune p;
	bool pruning = q && prune_init(s, db, q, gen, &p) && prune_next(&p);
	int r;
	for (;;) {
		const char *m = pruning ? p.match : driver;
		if (m)
			sqlite3_bind_text(st, 1, m, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)offset);
		sto_bind_params(st, w);
		if (q) {
			sqlite3_bind_text(st, 4, pruning ? p.rank : RANK, -1,
					  SQLITE_STATIC);
			sqlite3_bind_int64(st, 5,
					   pruning ? (sqlite3_int64)p.n
						   : INT32_MAX);
		}
		r = sto_collect(s, db, st, hits, ret_msg);
		if (r < 0 || !pruning || prune_exact(&p, hits, limit) ||
		    !prune_next(&p))
			break;
		sto_drop_hits(hits);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (pruning)
		prune_free(&p);
	return r;
}
