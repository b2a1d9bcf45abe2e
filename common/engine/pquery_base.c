/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Plans from Obsidian Bases: a .base file's YAML (formulas, filters,
 * views with their filters, groupBy, sort, limit and order) read with
 * the frontmatter reader and its limits.
 */
#include "pquery_int.h"
#include "frontmatter.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>

/* ---- parsing: Bases --------------------------------------------------- */

static int base_expr(struct pquery *q, const char *src, const char *where,
		     struct enode **ret, char **ret_msg)
{
	char *msg = NULL;
	if (expr_parse(src, EXPR_BASES, q->ar, ret, &msg) < 0) {
		*ret_msg = xasprintf("%s: %s in %s", where, msg, QUOTE(src));
		free(msg);
		return -EINVAL;
	}
	return 0;
}

/* filters: a string, or {and|or|not: [filters]}. */
static int base_filter(struct pquery *q, const cJSON *f, const char *where,
		       int depth, struct sbuf *out, char **ret_msg)
{
	if (depth > EXPR_MAX_DEPTH) {
		*ret_msg = xasprintf("%s: filters nested too deeply (over %d "
				     "levels)",
				     where, EXPR_MAX_DEPTH);
		return -EINVAL;
	}
	if (cJSON_IsString(f)) {
		struct enode *e;
		/* Each filter is checked alone, so errors name it. */
		if (base_expr(q, f->valuestring, where, &e, ret_msg) < 0)
			return -EINVAL;
		sb_printf(out, "(%s)", f->valuestring);
		return 0;
	}
	if (cJSON_IsBool(f)) {
		sb_puts(out, cJSON_IsTrue(f) ? "true" : "false");
		return 0;
	}
	if (!cJSON_IsObject(f) || cJSON_GetArraySize(f) != 1) {
		*ret_msg = xasprintf("%s: a filter is an expression or an "
				     "object with one key: and, or, not",
				     where);
		return -EINVAL;
	}
	const cJSON *list = f->child;
	const char *k = list->string;
	bool is_and = !strcmp(k, "and"), is_or = !strcmp(k, "or"),
	     is_not = !strcmp(k, "not");
	if (!is_and && !is_or && !is_not) {
		*ret_msg = xasprintf("%s: unknown filter key %s (and, or, "
				     "not)",
				     where, QUOTE(k));
		return -EINVAL;
	}
	if (!cJSON_IsArray(list)) {
		*ret_msg =
			xasprintf("%s: '%s' takes a list of filters", where, k);
		return -EINVAL;
	}
	/* not: none of them holds. */
	sb_puts(out, is_not ? "!(" : "(");
	int n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, list)
	{
		if (n++)
			sb_puts(out, is_and ? " && " : " || ");
		if (base_filter(q, it, where, depth + 1, out, ret_msg) < 0)
			return -EINVAL;
	}
	if (!n)
		sb_puts(out, is_or ? "false" : "true");
	sb_puts(out, ")");
	return 0;
}

static int base_filter_node(struct pquery *q, const cJSON *f, const char *where,
			    struct enode **ret, char **ret_msg)
{
	struct sbuf b = {0};
	int r = base_filter(q, f, where, 0, &b, ret_msg);
	if (r >= 0)
		r = base_expr(q, sb_str(&b), where, ret, ret_msg);
	sb_free(&b);
	return r;
}

static int base_sort(struct pquery *q, const cJSON *sort, char **ret_msg)
{
	if (!sort)
		return 0;
	if (!cJSON_IsArray(sort)) {
		*ret_msg = xstrdup("view sort: a list of {property, "
				   "direction}");
		return -EINVAL;
	}
	struct step st = {.kind = ST_SORT};
	st.keys = qarena_alloc(q->ar, (size_t)(cJSON_GetArraySize(sort) + 1) *
					      sizeof(*st.keys));
	const cJSON *it;
	cJSON_ArrayForEach(it, sort)
	{
		const cJSON *prop =
			cJSON_GetObjectItemCaseSensitive(it, "property");
		const cJSON *dir =
			cJSON_GetObjectItemCaseSensitive(it, "direction");
		if (!cJSON_IsString(prop)) {
			*ret_msg = xstrdup("view sort: each item needs a "
					   "property");
			return -EINVAL;
		}
		struct sort_key *k = &st.keys[st.nkeys++];
		if (expr_property(prop->valuestring, q->ar, &k->e, ret_msg) < 0)
			return -EINVAL;
		k->desc = cJSON_IsString(dir) &&
			  !strcasecmp(dir->valuestring, "DESC");
	}
	if (st.nkeys)
		pq_add_step(q, st);
	return 0;
}

/* formulas: name: expression (or a number). */
static int base_formulas(struct pquery *q, const cJSON *formulas,
			 char **ret_msg)
{
	if (formulas && !cJSON_IsObject(formulas)) {
		*ret_msg = xstrdup("formulas: a mapping of name: expression");
		return -EINVAL;
	}
	size_t nf = (size_t)cJSON_GetArraySize(formulas);
	q->fnames = qarena_alloc(q->ar, (nf + 1) * sizeof(*q->fnames));
	q->formulas = qarena_alloc(q->ar, (nf + 1) * sizeof(*q->formulas));
	const cJSON *f;
	cJSON_ArrayForEach(f, formulas)
	{
		_cleanup_free_ char *where =
			xasprintf("formula %s", QUOTE(f->string));
		if (!cJSON_IsString(f) && !cJSON_IsNumber(f)) {
			*ret_msg = xasprintf("%s: not an expression", where);
			return -EINVAL;
		}
		char num[32];
		if (cJSON_IsNumber(f))
			format_double(f->valuedouble, num);
		const char *src = cJSON_IsString(f) ? f->valuestring : num;
		int r = base_expr(q, src, where, &q->formulas[q->nformulas],
				  ret_msg);
		if (r < 0)
			return r;
		q->fnames[q->nformulas++] =
			qarena_strndup(q->ar, f->string, strlen(f->string));
	}
	return 0;
}

/* A WHERE step for filters (the base's or a view's), when there are. */
static int base_where(struct pquery *q, const cJSON *filters, const char *where,
		      char **ret_msg)
{
	if (!filters)
		return 0;
	struct step st = {.kind = ST_WHERE};
	int r = base_filter_node(q, filters, where, &st.where, ret_msg);
	if (r < 0)
		return r;
	pq_add_step(q, st);
	return 0;
}

/* The view named view (NULL or "": the first one) into *ret (NULL when
 * the base has no views). */
static int base_pick_view(const cJSON *views, const char *view,
			  const cJSON **ret, char **ret_msg)
{
	if (views && !cJSON_IsArray(views)) {
		*ret_msg = xstrdup("views: a list of views");
		return -EINVAL;
	}
	const cJSON *v = NULL;
	if (!view || !*view) {
		v = cJSON_GetArrayItem(views, 0);
	} else {
		const cJSON *it;
		cJSON_ArrayForEach(it, views)
		{
			const cJSON *nm =
				cJSON_GetObjectItemCaseSensitive(it, "name");
			if (cJSON_IsString(nm) &&
			    !strcmp(nm->valuestring, view))
				v = it;
		}
	}
	if (!v && view && *view) {
		struct sbuf names = {0};
		const cJSON *it;
		cJSON_ArrayForEach(it, views)
		{
			const cJSON *nm =
				cJSON_GetObjectItemCaseSensitive(it, "name");
			if (cJSON_IsString(nm))
				sb_printf(&names, "%s%s", names.len ? ", " : "",
					  nm->valuestring);
		}
		*ret_msg = xasprintf("no view named %s in the base "
				     "(views: %s)",
				     QUOTE(view), names.len ? names.s : "none");
		sb_free(&names);
		return -ENOENT;
	}
	if (v && !cJSON_IsObject(v)) {
		*ret_msg = xstrdup("views: each view is a mapping");
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* A view's groupBy: {property, direction}. */
static int base_group(struct pquery *q, const cJSON *gb, char **ret_msg)
{
	if (!gb)
		return 0;
	const cJSON *gp = cJSON_GetObjectItemCaseSensitive(gb, "property");
	const cJSON *gd = cJSON_GetObjectItemCaseSensitive(gb, "direction");
	if (!cJSON_IsString(gp)) {
		*ret_msg = xstrdup("groupBy: needs a property");
		return -EINVAL;
	}
	int r = expr_property(gp->valuestring, q->ar, &q->group, ret_msg);
	if (r < 0)
		return r;
	q->group_desc =
		cJSON_IsString(gd) && !strcasecmp(gd->valuestring, "DESC");
	return 0;
}

static int base_limit(struct pquery *q, const cJSON *lim, char **ret_msg)
{
	if (!lim)
		return 0;
	if (!cJSON_IsNumber(lim) || lim->valuedouble < 0 ||
	    lim->valuedouble > 1e9) {
		*ret_msg = xstrdup("view limit: a whole number");
		return -EINVAL;
	}
	pq_add_step(q, (struct step){.kind = ST_LIMIT,
				     .limit = (size_t)lim->valuedouble});
	return 0;
}

/* A view's order: the columns (file.name when there are none). */
static int base_columns(struct pquery *q, const cJSON *order, char **ret_msg)
{
	if (order && !cJSON_IsArray(order)) {
		*ret_msg = xstrdup("view order: a list of properties");
		return -EINVAL;
	}
	const cJSON *o;
	cJSON_ArrayForEach(o, order)
	{
		struct enode *e;
		if (!cJSON_IsString(o)) {
			*ret_msg = xstrdup("view order: a list of properties");
			return -EINVAL;
		}
		int r = expr_property(o->valuestring, q->ar, &e, ret_msg);
		if (r < 0)
			return r;
		if (!strncmp(o->valuestring, "formula.", 8)) {
			bool known = false;
			for (size_t i = 0; i < q->nformulas && !known; i++)
				known = !strcmp(q->fnames[i],
						o->valuestring + 8);
			if (!known) {
				*ret_msg = xasprintf("view order: no formula "
						     "%s",
						     QUOTE(o->valuestring + 8));
				return -EINVAL;
			}
		}
		pq_add_col(q,
			   qarena_strndup(q->ar, o->valuestring,
					  strlen(o->valuestring)),
			   e);
	}
	if (!q->ncols) {
		struct enode *e;
		expr_property("file.name", q->ar, &e, ret_msg);
		pq_add_col(q, "file.name", e);
	}
	return 0;
}

/* The plan of a base's root mapping and its view. */
static int base_plan(struct pquery *q, const cJSON *root, const char *view,
		     char **ret_msg)
{
	const cJSON *v = NULL;
	int r;
	if ((r = base_formulas(
		     q, cJSON_GetObjectItemCaseSensitive(root, "formulas"),
		     ret_msg)) < 0 ||
	    (r = base_where(q,
			    cJSON_GetObjectItemCaseSensitive(root, "filters"),
			    "filters", ret_msg)) < 0 ||
	    (r = base_pick_view(cJSON_GetObjectItemCaseSensitive(root, "views"),
				view, &v, ret_msg)) < 0)
		return r;
	const cJSON *nm = cJSON_GetObjectItemCaseSensitive(v, "name");
	if (cJSON_IsString(nm))
		q->view = qarena_strndup(q->ar, nm->valuestring,
					 strlen(nm->valuestring));
	if ((r = base_where(q, cJSON_GetObjectItemCaseSensitive(v, "filters"),
			    "view filters", ret_msg)) < 0 ||
	    (r = base_group(q, cJSON_GetObjectItemCaseSensitive(v, "groupBy"),
			    ret_msg)) < 0 ||
	    (r = base_sort(q, cJSON_GetObjectItemCaseSensitive(v, "sort"),
			   ret_msg)) < 0 ||
	    (r = base_limit(q, cJSON_GetObjectItemCaseSensitive(v, "limit"),
			    ret_msg)) < 0 ||
	    (r = base_columns(q, cJSON_GetObjectItemCaseSensitive(v, "order"),
			      ret_msg)) < 0)
		return r;
	if (cJSON_GetObjectItemCaseSensitive(root, "summaries") ||
	    cJSON_GetObjectItemCaseSensitive(v, "summaries"))
		q->not_evaluated = "summaries";
	return 0;
}

int pq_base(const char *yaml, size_t len, const char *view, struct pquery **ret,
	    char **ret_msg)
{
	if (len > FM_MAX_BYTES) {
		*ret_msg = xasprintf("the base is too large (%zu bytes; the "
				     "limit is %d)",
				     len, FM_MAX_BYTES);
		return -EFBIG;
	}
	/* The YAML reader of frontmatter, with its limits: the base as a
	 * frontmatter block. */
	struct sbuf doc = {0};
	sb_puts(&doc, "---\n");
	sb_add(&doc, yaml, len);
	if (len && yaml[len - 1] != '\n')
		sb_putc(&doc, '\n');
	sb_puts(&doc, "---\n");
	struct frontmatter fm;
	fm_parse(doc.s, doc.len, &fm);
	sb_free(&doc);
	if (!fm.valid) {
		*ret_msg = xasprintf("the base is not valid YAML (line %d: "
				     "%s)",
				     fm.err_line - 1,
				     fm.err_msg ? fm.err_msg : "not a mapping");
		fm_clear(&fm);
		return -EBADMSG;
	}
	struct pquery *q = pq_new(EXPR_BASES);
	q->kind = PQ_TABLE;
	q->all_files = true;
	int r = base_plan(q, fm.data, view, ret_msg);
	fm_clear(&fm);
	if (r < 0) {
		pq_free(q);
		return r;
	}
	*ret = q;
	return 0;
}
