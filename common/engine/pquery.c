/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Query plans and their execution. Sources (FROM) select notes from the
 * index by tag, folder, links; the steps filter and order them with the
 * expression evaluator; columns are evaluated for the page only. Every
 * allocation of a plan and its results is in one arena.
 */
#include "pquery_int.h"
#include "graph.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>

struct pquery *pq_new(enum expr_dialect d)
{
	struct qarena *ar = qarena_new();
	struct pquery *q = qarena_alloc(ar, sizeof(*q));
	q->ar = ar;
	q->dialect = d;
	return q;
}

struct pquery *pq_free(struct pquery *q)
{
	if (q)
		qarena_free(q->ar);
	return NULL;
}

enum pq_kind pq_kind(const struct pquery *q)
{
	return q->kind;
}

bool pq_uses_this(const struct pquery *q)
{
	return q->uses_this;
}

const char *pq_view_name(const struct pquery *q)
{
	return q->view;
}

const char *pq_not_evaluated(const struct pquery *q)
{
	return q->not_evaluated;
}

void pq_add_step(struct pquery *q, struct step s)
{
	struct step *n = qarena_alloc(q->ar, (q->nsteps + 1) * sizeof(*n));
	if (q->nsteps)
		memcpy(n, q->steps, q->nsteps * sizeof(*n));
	n[q->nsteps++] = s;
	q->steps = n;
}

void pq_add_col(struct pquery *q, const char *name, struct enode *e)
{
	const char **nn = qarena_alloc(q->ar, (q->ncols + 1) * sizeof(*nn));
	struct enode **ne = qarena_alloc(q->ar, (q->ncols + 1) * sizeof(*ne));
	if (q->ncols) {
		memcpy(nn, q->col_names, q->ncols * sizeof(*nn));
		memcpy(ne, q->cols, q->ncols * sizeof(*ne));
	}
	nn[q->ncols] = name;
	ne[q->ncols] = e;
	q->col_names = nn;
	q->cols = ne;
	q->ncols++;
}

/* ---- execution -------------------------------------------------------- */

struct run {
	struct pquery *q;
	struct expr_env env;
	const struct pq_env *pe;
	const struct note *link_target; /* per source node, resolved */
};

static const struct note *resolve_ref(const struct pq_env *pe, const char *t)
{
	bool file = false;
	return index_resolve(pe->ix, NULL, t, LINK_WIKI, &file);
}

static bool folder_match(const char *path, const char *f)
{
	size_t n = strlen(f);
	while (n && f[n - 1] == '/')
		n--;
	if (!n)
		return true;
	size_t pl = strlen(path);
	if (pl > n && !strncasecmp(path, f, n) && path[n] == '/')
		return true;
	/* A single file: "folder/File" or "folder/File.md". */
	if (!strncasecmp(path, f, n) &&
	    (pl == n || (pl == n + 3 && !strcasecmp(path + n, ".md"))))
		return true;
	return false;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (const void *const *)a;
	uintptr_t y = (uintptr_t) * (const void *const *)b;
	return (x > y) - (x < y);
}

void pq_src_prepare(struct pquery *q, const struct index *ix, struct source *s)
{
	if (!s)
		return;
	pq_src_prepare(q, ix, s->a);
	pq_src_prepare(q, ix, s->b);
	if (s->kind != S_TAG)
		return;
	size_t nt;
	struct tag_entry **tags = index_tags(ix, &nt);
	struct ptrvec notes = {0};
	_cleanup_free_ char *fq = fold_key(s->arg);
	size_t fl = strlen(fq);
	for (size_t i = 0; i < nt; i++) {
		const char *f = tags[i]->fold;
		if (strncmp(f, fq, fl) || (f[fl] && f[fl] != '/'))
			continue;
		for (size_t k = 0; k < tags[i]->notes.n; k++)
			pv_push(&notes, tags[i]->notes.v[k]);
	}
	free(tags);
	pv_sort(&notes, cmp_ptr);
	s->set = qarena_alloc(q->ar, (notes.n + 1) * sizeof(*s->set));
	memcpy(s->set, notes.v, notes.n * sizeof(*s->set));
	s->nset = notes.n;
	pv_free(&notes);
}

bool pq_src_match(const struct pq_env *pe, const struct source *s,
		  const struct qrow *row)
{
	const struct note *n = row->note;
	switch (s->kind) {
	case S_ALL:
		return true;
	case S_TAG:
		return n && bsearch(&n, s->set, s->nset, sizeof(*s->set),
				    cmp_ptr) != NULL;
	case S_FOLDER:
		return folder_match(row->path, s->arg);
	case S_LINKS_TO: {
		if (!n)
			return false;
		const struct note *t = resolve_ref(pe, s->arg);
		_cleanup_free_ char *fk = fold_key(s->arg);
		const struct link *l;
		for (size_t i = 0; (l = graph_next_link(n, &i));) {
			if (t ? l->to == t
			      : (!l->to && l->key && !strcmp(l->key, fk)))
				return true;
		}
		return false;
	}
	case S_OUTGOING: {
		const struct note *from = resolve_ref(pe, s->arg);
		if (!from || !n)
			return false;
		const struct link *l;
		for (size_t i = 0; (l = graph_next_link(from, &i));)
			if (l->to == n)
				return true;
		return false;
	}
	case S_AND:
		return pq_src_match(pe, s->a, row) &&
		       pq_src_match(pe, s->b, row);
	case S_OR:
		return pq_src_match(pe, s->a, row) ||
		       pq_src_match(pe, s->b, row);
	case S_NOT:
		return !pq_src_match(pe, s->a, row);
	}
	return false;
}

struct keyed {
	struct qrow *row;
	struct qval *keys;
	size_t ord;
};

struct sort_ctx {
	const struct sort_key *keys;
	size_t nkeys;
	bool nulls_last;
};

static int cmp_keyed(const void *a, const void *b, void *ud)
{
	const struct sort_ctx *c = ud;
	const struct keyed *x = a, *y = b;
	for (size_t i = 0; i < c->nkeys; i++) {
		const struct qval *u = &x->keys[i], *v = &y->keys[i];
		int r;
		if (c->nulls_last && (u->t == QV_NULL) != (v->t == QV_NULL))
			return u->t == QV_NULL ? 1 : -1;
		r = qv_cmp(u, v);
		if (r)
			return c->keys[i].desc ? -r : r;
	}
	return (x->ord > y->ord) - (x->ord < y->ord);
}

/*
 * Rows are visited in name order, their notes scattered in memory: ask
 * for a note and its properties (packed right after it, note.c) a few
 * rows ahead, so that a scan waits on memory less.
 */
#define PREFETCH_AHEAD 8

static void prefetch_row(const struct qrow *row)
{
	if (row->note)
		note_prefetch(row->note);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The candidate rows: notes in name order (the index keeps it), then
 * (Bases) other files in path order. */
static struct qrow *candidate_rows(struct pquery *q, const struct pq_env *pe,
				   size_t *ret_n)
{
	size_t nn;
	struct note *const *sorted = index_sorted((struct index *)pe->ix, &nn);
	struct ptrvec files = {0};
	if (q->all_files) {
		struct ptrvec all = {0};
		index_paths_under(pe->ix, "", &all);
		for (size_t i = 0; i < all.n; i++) {
			if (!path_is_note(all.v[i]))
				pv_push(&files, all.v[i]);
			else
				free(all.v[i]);
		}
		pv_free(&all);
		pv_sort(&files, cmp_str);
	}
	size_t cap = nn + files.n;
	struct qrow *rows = qarena_alloc(q->ar, (cap + 1) * sizeof(*rows));
	size_t n = 0;
	for (size_t i = 0; i < nn; i++) {
		rows[n].note = sorted[i];
		rows[n].path = note_path(sorted[i]);
		n++;
	}
	for (size_t i = 0; i < files.n; i++) {
		rows[n].path =
			qarena_strndup(q->ar, files.v[i], strlen(files.v[i]));
		free(files.v[i]);
		n++;
	}
	pv_free(&files);
	*ret_n = n;
	return rows;
}

/* WHERE: the rows kept, in place; how many. */
static size_t run_where(struct run *r, const struct step *st, struct keyed *cur,
			size_t m)
{
	struct pquery *q = r->q;
	size_t k = 0;
	for (size_t i = 0; i < m; i++) {
		if (i + PREFETCH_AHEAD < m)
			prefetch_row(cur[i + PREFETCH_AHEAD].row);
		size_t mark = qarena_mark(q->ar);
		struct qval v;
		expr_eval(&r->env, cur[i].row, st->where, &v);
		bool keep = qv_truthy(&v);
		qarena_reset(q->ar, mark);
		if (keep)
			cur[k++] = cur[i];
	}
	return k;
}

static void sift_down(struct keyed *h, size_t n, size_t i,
		      const struct sort_ctx *c)
{
	for (;;) {
		size_t big = i, l = 2 * i + 1, rt = l + 1;
		if (l < n && cmp_keyed(&h[l], &h[big], (void *)c) > 0)
			big = l;
		if (rt < n && cmp_keyed(&h[rt], &h[big], (void *)c) > 0)
			big = rt;
		if (big == i)
			return;
		struct keyed t = h[i];
		h[i] = h[big];
		h[big] = t;
		i = big;
	}
}

/*
 * The first `need` rows of m in order, the rest left in no order: a
 * heap of the `need` best (cmp_keyed is a total order — ties go by
 * position — so the rows are those a full sort puts first).
 */
static void sort_first(struct keyed *cur, size_t m, size_t need,
		       const struct sort_ctx *c)
{
	if (need < m / 8) {
		for (size_t i = need / 2; i-- > 0;)
			sift_down(cur, need, i, c);
		for (size_t i = need; i < m && need; i++) {
			if (cmp_keyed(&cur[i], &cur[0], (void *)c) >= 0)
				continue;
			struct keyed t = cur[0];
			cur[0] = cur[i];
			cur[i] = t;
			sift_down(cur, need, 0, c);
		}
		m = need;
	}
	qsort_r(cur, m, sizeof(*cur), cmp_keyed, (void *)c);
}

/* SORT: rows from the first to `need` in order (need: as many as the
 * steps after it and the page can look at). */
static void run_sort(struct run *r, const struct step *st, struct keyed *cur,
		     size_t m, size_t need)
{
	struct pquery *q = r->q;
	for (size_t i = 0; i < m; i++) {
		if (i + PREFETCH_AHEAD < m)
			prefetch_row(cur[i + PREFETCH_AHEAD].row);
		cur[i].keys =
			qarena_alloc(q->ar, st->nkeys * sizeof(struct qval));
		for (size_t k = 0; k < st->nkeys; k++)
			expr_eval(&r->env, cur[i].row, st->keys[k].e,
				  &cur[i].keys[k]);
		cur[i].ord = i;
	}
	struct sort_ctx c = {st->keys, st->nkeys, q->dialect != EXPR_DQL};
	sort_first(cur, m, need < m ? need : m, &c);
}

/* How many rows from the first the steps after step s and the page
 * [offset, offset + limit) look at: all of them when a later step
 * filters, sorts or groups. */
static size_t rows_needed(const struct pquery *q, size_t s, size_t offset,
			  size_t limit)
{
	if (q->group || limit > SIZE_MAX - offset)
		return SIZE_MAX;
	size_t need = offset + limit;
	for (size_t k = s + 1; k < q->nsteps; k++) {
		if (q->steps[k].kind != ST_LIMIT)
			return SIZE_MAX;
		if (q->steps[k].limit < need)
			need = q->steps[k].limit;
	}
	return need;
}

/* Bases groupBy: groups in order, rows in their order within each; the
 * group of each row. */
static struct qval *run_group(struct run *r, struct keyed *cur, size_t m)
{
	struct pquery *q = r->q;
	struct qval *groups = qarena_alloc(q->ar, (m + 1) * sizeof(*groups));
	for (size_t i = 0; i < m; i++) {
		cur[i].keys = qarena_alloc(q->ar, sizeof(struct qval));
		expr_eval(&r->env, cur[i].row, q->group, cur[i].keys);
		cur[i].ord = i;
	}
	struct sort_key gk = {q->group, q->group_desc};
	struct sort_ctx c = {&gk, 1, true};
	qsort_r(cur, m, sizeof(*cur), cmp_keyed, &c);
	for (size_t i = 0; i < m; i++)
		groups[i] = cur[i].keys[0];
	return groups;
}

/* The page [offset, offset+limit) of the m rows left, its columns
 * evaluated. */
static void run_page(struct run *r, const struct keyed *cur, size_t m,
		     const struct qval *groups, size_t offset, size_t limit,
		     struct pq_result *ret)
{
	struct pquery *q = r->q;
	ret->ncols = q->ncols;
	ret->cols = q->col_names;
	ret->has_group = q->group != NULL;
	ret->total = m;
	size_t first = offset < m ? offset : m;
	size_t cnt = m - first < limit ? m - first : limit;
	ret->nrows = cnt;
	ret->rows = qarena_alloc(q->ar, (cnt + 1) * sizeof(*ret->rows));
	for (size_t i = 0; i < cnt; i++) {
		struct pq_row *pr = &ret->rows[i];
		pr->row = cur[first + i].row;
		pr->vals =
			qarena_alloc(q->ar, (q->ncols + 1) * sizeof(*pr->vals));
		for (size_t c = 0; c < q->ncols; c++)
			expr_eval(&r->env, pr->row, q->cols[c], &pr->vals[c]);
		if (groups)
			pr->group = groups[first + i];
	}
}

struct expr_env pq_env_base(struct pquery *q, const struct pq_env *pe)
{
	struct qrow *this_row = NULL;
	if (pe->this_note) {
		this_row = qarena_alloc(q->ar, sizeof(*this_row));
		this_row->note = pe->this_note;
		this_row->path = note_path(pe->this_note);
	}
	return (struct expr_env){
		.ix = pe->ix,
		.rootfd = pe->rootfd,
		.types = pe->types,
		.ar = q->ar,
		.dialect = q->dialect,
		.this_row = this_row,
		.now_ms = qv_now_ms(),
	};
}

int pq_run(struct pquery *q, const struct pq_env *pe, size_t offset,
	   size_t limit, struct pq_result *ret)
{
	struct run r = {.q = q, .pe = pe};
	r.env = pq_env_base(q, pe);
	r.env.formula_names = q->fnames;
	r.env.formulas = q->formulas;
	r.env.nformulas = q->nformulas;
	size_t n;
	struct qrow *rows = candidate_rows(q, pe, &n);
	pq_src_prepare(q, pe->ix, q->from);
	/* Sources, then the steps in order. */
	struct keyed *cur = qarena_alloc(q->ar, (n + 1) * sizeof(*cur));
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (q->from && !pq_src_match(pe, q->from, &rows[i]))
			continue;
		cur[m].row = &rows[i];
		cur[m].ord = m;
		m++;
	}
	for (size_t s = 0; s < q->nsteps; s++) {
		const struct step *st = &q->steps[s];
		if (cancel_requested())
			return -ECANCELED;
		if (st->kind == ST_WHERE)
			m = run_where(&r, st, cur, m);
		else if (st->kind == ST_SORT)
			run_sort(&r, st, cur, m,
				 rows_needed(q, s, offset, limit));
		else if (m > st->limit)
			m = st->limit;
	}
	struct qval *groups = q->group ? run_group(&r, cur, m) : NULL;
	run_page(&r, cur, m, groups, offset, limit, ret);
	return 0;
}
