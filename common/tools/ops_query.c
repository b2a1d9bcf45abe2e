/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Property query tools: query_notes (predicates, or a Dataview query)
 * and query_base (an Obsidian .base file). The plans run in pquery.c;
 * here arguments are checked and rows shaped as JSON.
 */
#include "fileio.h"
#include "frontmatter.h"
#include "json.h"
#include "pquery.h"
#include "tools.h"

#include <errno.h>
#include <math.h>

static cJSON *qval_json(const struct qval *v, struct qarena *ar)
{
	char buf[96];
	switch (v->t) {
	case QV_NULL:
		return cJSON_CreateNull();
	case QV_BOOL:
		return cJSON_CreateBool(v->b);
	case QV_NUM:
		return isfinite(v->num) ? cJSON_CreateNumber(v->num)
					: cJSON_CreateNull();
	case QV_DATE:
		qv_format_date(v, buf);
		return cJSON_CreateString(buf);
	case QV_LIST: {
		cJSON *a = cJSON_CreateArray();
		for (uint32_t i = 0; i < v->n; i++)
			cJSON_AddItemToArray(a, qval_json(&v->items[i], ar));
		return a;
	}
	case QV_OBJ: {
		cJSON *o = cJSON_ParseWithLength(v->s, v->n);
		return o ? o : cJSON_CreateNull();
	}
	case QV_FORMULAS:
		return cJSON_CreateNull();
	default:
		return cJSON_CreateString(qv_to_text(v, ar));
	}
}

static int load_types(struct tool_ctx *c, struct ptypes **ret)
{
	_cleanup_free_ char *msg = NULL;
	int r = ptypes_load(vault_rootfd(c->v), ret, &msg);
	if (r < 0)
		return op_fail(c, r, "%s", msg);
	return 0;
}

static void ptypes_freep(struct ptypes **t)
{
	ptypes_free(*t);
}

static void pq_freep(struct pquery **q)
{
	pq_free(*q);
}

int op_pq_page(struct tool_ctx *c, const char *scope,
	       const struct ptypes *types, const struct note *this_note,
	       long def_limit, struct pq_env *env, size_t *ret_offset,
	       size_t *ret_limit)
{
	struct index *ix = vault_index(c->v);
	int r = op_cursor_offset(c, scope, index_generation(ix), ret_offset);
	if (r < 0)
		return r;
	*ret_limit = (size_t)arg_int(c, "limit", def_limit);
	*env = (struct pq_env){
		.ix = ix,
		.rootfd = vault_rootfd(c->v),
		.types = types,
		.this_note = this_note,
	};
	return 0;
}

/* Run q and shape its page: rows of {name, path, fields}. */
static int run_page(struct tool_ctx *c, struct pquery *q, const char *scope,
		    cJSON *o)
{
	_cleanup_(ptypes_freep) struct ptypes *types = NULL;
	int r = load_types(c, &types);
	if (r < 0)
		return r;
	struct index *ix = vault_index(c->v);
	struct note *this_note = NULL;
	const char *this_ref = arg_str(c, "this", NULL);
	if (this_ref && (r = op_find(c, this_ref, &this_note)) < 0)
		return r;
	if (pq_uses_this(q) && !this_note)
		return op_fail(c, -EINVAL,
			       "The query uses 'this': pass this=<note> (the "
			       "note the query belongs to)");
	if (pq_kind(q) == PQ_TASK) {
		/* Rows are tasks, as list_tasks gives them. */
		cJSON_AddStringToObject(o, "kind", "task");
		cJSON_AddArrayToObject(o, "columns");
		return op_tasks_page(c, q, scope, types, this_note, "rows", 50,
				     o);
	}
	size_t offset, limit;
	struct pq_env env;
	if ((r = op_pq_page(c, scope, types, this_note, 50, &env, &offset,
			    &limit)) < 0)
		return r;
	struct pq_result res;
	if ((r = pq_run(q, &env, offset, limit, &res)) < 0)
		return op_fail(c, r, "Cancelled");
	struct qarena *ar = qarena_new();
	cJSON_AddStringToObject(o, "kind",
				pq_kind(q) == PQ_LIST ? "list" : "table");
	cJSON *cols = cJSON_AddArrayToObject(o, "columns");
	for (size_t i = 0; i < res.ncols; i++)
		cJSON_AddItemToArray(cols, cJSON_CreateString(res.cols[i]));
	cJSON *rows = cJSON_AddArrayToObject(o, "rows");
	for (size_t i = 0; i < res.nrows; i++) {
		const struct pq_row *pr = &res.rows[i];
		cJSON *row = cJSON_CreateObject();
		if (pr->row->note) {
			_cleanup_free_ char *dn =
				index_display_name(ix, pr->row->note);
			cJSON_AddStringToObject(row, "name", dn);
		} else {
			cJSON_AddStringToObject(row, "name", pr->row->path);
		}
		cJSON_AddStringToObject(row, "path", pr->row->path);
		if (res.has_group)
			cJSON_AddItemToObject(row, "group",
					      qval_json(&pr->group, ar));
		cJSON *fields = cJSON_AddObjectToObject(row, "fields");
		for (size_t k = 0; k < res.ncols; k++) {
			cJSON_DeleteItemFromObjectCaseSensitive(fields,
								res.cols[k]);
			cJSON_AddItemToObject(fields, res.cols[k],
					      qval_json(&pr->vals[k], ar));
		}
		cJSON_AddItemToArray(rows, row);
	}
	qarena_free(ar);
	op_cursor_next(o, scope, index_generation(ix), offset, res.nrows,
		       res.total);
	return 0;
}

int op_query_notes(struct tool_ctx *c)
{
	static const char *const PARTS[] = {"where", "from", "sort", "fields"};
	const char *query = arg_str(c, "query", NULL);
	bool parts = false;
	for (size_t i = 0; i < ARRAY_SIZE(PARTS); i++)
		parts |= arg_str(c, PARTS[i], NULL) != NULL;
	if (query && parts)
		return op_fail(c, -EINVAL,
			       "Give either query (a Dataview query) or "
			       "where/from/sort/fields, not both");
	_cleanup_(pq_freep) struct pquery *q = NULL;
	_cleanup_free_ char *msg = NULL;
	int r = query ? pq_dql(query, &q, &msg)
		      : pq_plain(arg_str(c, "where", NULL),
				 arg_str(c, "from", NULL),
				 arg_str(c, "sort", NULL),
				 arg_str(c, "fields", NULL), &q, &msg);
	if (r < 0)
		return op_fail(c, r, "Cannot run the query: %s", msg);
	/* The cursor belongs to this query. */
	struct sbuf scope = {0};
	sb_printf(&scope, "query_notes\n%s", query ? query : "");
	for (size_t i = 0; i < ARRAY_SIZE(PARTS); i++)
		sb_printf(&scope, "\n%s", arg_str(c, PARTS[i], ""));
	sb_printf(&scope, "\n%s", arg_str(c, "this", ""));
	READ_LOCKED(c);
	cJSON *o = cJSON_CreateObject();
	r = run_page(c, q, sb_str(&scope), o);
	sb_free(&scope);
	if (r < 0) {
		cJSON_Delete(o);
		return r;
	}
	c->json = o;
	return 0;
}

/* A .base file is not a note: read it as a file, with the same path
 * rules. */
static int read_base(struct tool_ctx *c, const char *given, char **ret_path,
		     char **ret, size_t *ret_len)
{
	_cleanup_free_ char *norm = NULL;
	const char *why;
	int r = op_name_len(c, given);
	if (r < 0)
		return r;
	if (path_check(given, &norm, &why) < 0)
		return op_fail(c, -EINVAL, "Invalid path %s: %s", QUOTE(given),
			       why);
	if (!str_has_suffix_ci(norm, ".base")) {
		char *p = xasprintf("%s.base", norm);
		free(norm);
		norm = p;
	}
	r = file_read(vault_rootfd(c->v), norm, FM_MAX_BYTES, ret, ret_len,
		      NULL);
	if (r == -ENOENT)
		return op_fail(c, r, "Base %s not found", QUOTE(norm));
	if (r == -EFBIG)
		return op_fail(c, r,
			       "Base %s is too large (the limit is %d bytes)",
			       QUOTE(norm), FM_MAX_BYTES);
	if (r < 0)
		return op_fail(c, r, "Cannot read base %s: %s", QUOTE(norm),
			       strerror(-r));
	*ret_path = TAKE_PTR(norm);
	return 0;
}

int op_query_base(struct tool_ctx *c)
{
	_cleanup_free_ char *path = NULL, *text = NULL, *msg = NULL;
	size_t len;
	int r = read_base(c, arg_str(c, "path", ""), &path, &text, &len);
	if (r < 0)
		return r;
	const char *view = arg_str(c, "view", NULL);
	_cleanup_(pq_freep) struct pquery *q = NULL;
	if ((r = pq_base(text, len, view, &q, &msg)) < 0)
		return op_fail(c, r, "Cannot run base '%s': %s", path, msg);
	_cleanup_free_ char *scope =
		xasprintf("query_base\n%s\n%s\n%016llx", path, view ? view : "",
			  (unsigned long long)hash_bytes(text, len));
	READ_LOCKED(c);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "base", path);
	if (pq_view_name(q))
		cJSON_AddStringToObject(o, "view", pq_view_name(q));
	if ((r = run_page(c, q, scope, o)) < 0) {
		cJSON_Delete(o);
		return r;
	}
	if (pq_not_evaluated(q)) {
		cJSON *ne = cJSON_AddArrayToObject(o, "not_evaluated");
		cJSON_AddItemToArray(ne,
				     cJSON_CreateString(pq_not_evaluated(q)));
	}
	c->json = o;
	return 0;
}
