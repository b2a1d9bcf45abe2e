/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Task queries: a plan's FROM picks notes, then each of their tasks
 * (held with the note, tasks.h) is a row whose own fields (status, due,
 * tags, ...) come before the note's properties in WHERE and SORT.
 * Without SORT the page is cut while scanning: nothing is kept of the
 * tasks before or after it.
 */
#include "pquery_int.h"
#include "util.h"

#include <errno.h>

static struct qval v_str(struct expr_env *env, const char *s, size_t n)
{
	return (struct qval){.t = QV_STR,
			     .n = (uint32_t)n,
			     .s = qarena_strndup(env->ar, s, n)};
}

static struct qval v_date(int32_t day)
{
	if (day == TASK_NO_DATE)
		return (struct qval){.t = QV_NULL};
	return (struct qval){.t = QV_DATE, .ms = (int64_t)day * 86400000LL};
}

static struct qval v_tags(struct expr_env *env, const struct task *t)
{
	struct qval *items =
		qarena_alloc(env->ar, (t->ntags + 1) * sizeof(*items));
	const char *p = t->tags;
	for (uint32_t i = 0; i < t->ntags; i++) {
		size_t n = strlen(p);
		items[i] = (struct qval){.t = QV_STR, .n = (uint32_t)n, .s = p};
		p += n + 1;
	}
	return (struct qval){.t = QV_LIST, .n = t->ntags, .items = items};
}

static bool task_field(struct expr_env *env, const struct qrow *row,
		       const char *name, struct qval *ret)
{
	const struct task *t = &((const struct pq_task *)row->item)->t;
	for (int d = 0; d < TD_COUNT; d++) {
		if (!strcmp(name, task_date_name(d))) {
			*ret = v_date(t->dates[d]);
			return true;
		}
	}
	enum task_status st = task_symbol_status(t->symbol);
	if (!strcmp(name, "status")) {
		const char *s = task_status_name(st);
		*ret = (struct qval){
			.t = QV_STR, .n = (uint32_t)strlen(s), .s = s};
	} else if (!strcmp(name, "symbol")) {
		char b[8];
		task_symbol_utf8(t->symbol, b);
		*ret = v_str(env, b, strlen(b));
	} else if (!strcmp(name, "text")) {
		*ret = v_str(env, t->text, t->text_len);
	} else if (!strcmp(name, "description")) {
		char *s = qarena_strndup(env->ar, t->text, t->text_len);
		struct task_fields f;
		task_parse_fields(s, t->text_len, &f);
		_cleanup_free_ char *d = task_description(s, &f);
		*ret = v_str(env, d, strlen(d));
	} else if (!strcmp(name, "tags")) {
		*ret = v_tags(env, t);
	} else if (!strcmp(name, "priority")) {
		const char *s = task_priority_name(t->priority);
		*ret = (struct qval){
			.t = QV_STR, .n = (uint32_t)strlen(s), .s = s};
	} else if (!strcmp(name, "recurrence")) {
		*ret = t->recur_len ? v_str(env, t->recur, t->recur_len)
				    : (struct qval){.t = QV_NULL};
	} else if (!strcmp(name, "line")) {
		*ret = (struct qval){.t = QV_NUM, .num = t->line};
	} else if (!strcmp(name, "completed")) {
		*ret = (struct qval){.t = QV_BOOL, .b = st == TASK_DONE};
	} else if (!strcmp(name, "checked")) {
		*ret = (struct qval){.t = QV_BOOL, .b = t->symbol != ' '};
	} else {
		return false;
	}
	return true;
}

struct task_run {
	struct pquery *q;
	struct expr_env env;
	const struct step *sort;
	struct pq_task *all; /* with SORT: every task kept */
	struct qval *keys;   /* with SORT: nkeys per task kept */
	size_t n, cap;
	size_t total, offset, limit;
	size_t most; /* LIMIT: the most tasks the query gives */
	struct pq_task_page *page;
};

/* Whether every WHERE keeps the task. */
static bool task_kept(struct task_run *r, const struct qrow *row)
{
	for (size_t s = 0; s < r->q->nsteps; s++) {
		const struct step *st = &r->q->steps[s];
		if (st->kind != ST_WHERE)
			continue;
		size_t mark = qarena_mark(r->q->ar);
		struct qval v;
		expr_eval(&r->env, row, st->where, &v);
		bool keep = qv_truthy(&v);
		qarena_reset(r->q->ar, mark);
		if (!keep)
			return false;
	}
	return true;
}

static void task_take(struct task_run *r, const struct pq_task *pt,
		      struct qrow *row)
{
	if (!r->sort) {
		if (r->total >= r->most)
			return;
		if (r->total >= r->offset && r->page->nrows < r->limit)
			r->page->rows[r->page->nrows++] = *pt;
		r->total++;
		return;
	}
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 256;
		r->all = xrealloc(r->all, r->cap * sizeof(*r->all));
		r->keys = xrealloc(r->keys,
				   r->cap * r->sort->nkeys * sizeof(*r->keys));
	}
	r->all[r->n] = *pt;
	row->item = &r->all[r->n];
	for (size_t k = 0; k < r->sort->nkeys; k++)
		expr_eval(&r->env, row, r->sort->keys[k].e,
			  &r->keys[r->n * r->sort->nkeys + k]);
	r->n++;
	r->total++;
}

struct task_sort {
	const struct task_run *r;
	size_t *ord;
};

static int cmp_task(const void *a, const void *b, void *ud)
{
	const struct task_run *r = ud;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	size_t nk = r->sort->nkeys;
	for (size_t k = 0; k < nk; k++) {
		const struct qval *u = &r->keys[x * nk + k];
		const struct qval *v = &r->keys[y * nk + k];
		/* Missing values last, whichever the direction. */
		if ((u->t == QV_NULL) != (v->t == QV_NULL))
			return u->t == QV_NULL ? 1 : -1;
		int c = qv_cmp(u, v);
		if (c)
			return r->sort->keys[k].desc ? -c : c;
	}
	return (x > y) - (x < y);
}

static void sort_page(struct task_run *r)
{
	size_t *ord = xmalloc((r->n + 1) * sizeof(*ord));
	for (size_t i = 0; i < r->n; i++)
		ord[i] = i;
	qsort_r(ord, r->n, sizeof(*ord), cmp_task, r);
	size_t end = r->n < r->most ? r->n : r->most;
	for (size_t i = r->offset; i < end && r->page->nrows < r->limit; i++)
		r->page->rows[r->page->nrows++] = r->all[ord[i]];
	free(ord);
}

/* The plan holds WHEREs, then at most one SORT, then LIMITs (a TASK
 * query's parser sees to it; query_notes' fields are no part of a task
 * query). */
static const struct step *plan_sort(const struct pquery *q)
{
	const struct step *sort = NULL;
	for (size_t s = 0; s < q->nsteps; s++)
		if (q->steps[s].kind == ST_SORT)
			sort = &q->steps[s];
	return sort;
}

/* The smallest LIMIT of the plan (SIZE_MAX: none). */
static size_t plan_limit(const struct pquery *q)
{
	size_t most = SIZE_MAX;
	for (size_t s = 0; s < q->nsteps; s++)
		if (q->steps[s].kind == ST_LIMIT && q->steps[s].limit < most)
			most = q->steps[s].limit;
	return most;
}

int pq_run_tasks(struct pquery *q, const struct pq_env *pe, size_t offset,
		 size_t limit, struct pq_task_page *ret)
{
	struct task_run r = {
		.q = q,
		.sort = plan_sort(q),
		.offset = offset,
		.limit = limit,
		.most = plan_limit(q),
		.page = ret,
	};
	r.env = pq_env_base(q, pe);
	r.env.item_field = task_field;
	memset(ret, 0, sizeof(*ret));
	ret->rows = qarena_alloc(q->ar, (limit + 1) * sizeof(*ret->rows));
	pq_src_prepare(q, pe->ix, q->from);
	size_t nn;
	struct note *const *sorted = index_sorted((struct index *)pe->ix, &nn);
	int err = 0;
	for (size_t i = 0; i < nn && !err; i++) {
		const struct note *n = sorted[i];
		if (!note_tasks_len(n))
			continue;
		if (!(i & 1023) && cancel_requested())
			err = -ECANCELED;
		struct qrow row = {.note = n, .path = note_path(n)};
		if (q->from && !pq_src_match(pe, q->from, &row))
			continue;
		struct pq_task pt = {.note = n};
		size_t pos = 0;
		while (tasks_next(note_tasks(n), note_tasks_len(n), &pos,
				  &pt.t)) {
			row.item = &pt;
			if (task_kept(&r, &row))
				task_take(&r, &pt, &row);
		}
	}
	if (!err && r.sort)
		sort_page(&r);
	free(r.all);
	free(r.keys);
	ret->total = r.total < r.most ? r.total : r.most;
	return err;
}
