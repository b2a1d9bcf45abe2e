/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Query plans and their execution. Sources (FROM) select notes from the
 * index by tag, folder, links; the steps filter and order them with the
 * expression evaluator; columns are evaluated for the page only. Every
 * allocation of a plan and its results is in one arena.
 */
#include "pquery.h"
#include "frontmatter.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>

enum src_kind {
	S_ALL,
	S_TAG,
	S_FOLDER,
	S_LINKS_TO,
	S_OUTGOING,
	S_AND,
	S_OR,
	S_NOT,
};

struct source {
	enum src_kind kind;
	const char *arg;
	struct source *a, *b;
	/* S_TAG at run time: the notes with the tag or a subtag, sorted
	 * by address (from the index's tag lists, not note by note). */
	const struct note **set;
	size_t nset;
};

enum step_kind {
	ST_WHERE,
	ST_SORT,
	ST_LIMIT,
};

struct sort_key {
	struct enode *e;
	bool desc;
};

struct step {
	enum step_kind kind;
	struct enode *where;
	struct sort_key *keys;
	size_t nkeys;
	size_t limit;
};

struct pquery {
	struct qarena *ar;
	enum expr_dialect dialect;
	enum pq_kind kind;
	bool uses_this;
	bool all_files; /* Bases: every file, not only notes */
	struct source *from;
	struct step *steps;
	size_t nsteps;
	const char **col_names;
	struct enode **cols;
	size_t ncols;
	const char **fnames;
	struct enode **formulas;
	size_t nformulas;
	struct enode *group;
	bool group_desc;
	const char *view;
	const char *not_evaluated;
};

static struct pquery *pq_new(enum expr_dialect d)
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

static void add_step(struct pquery *q, struct step s)
{
	struct step *n = qarena_alloc(q->ar, (q->nsteps + 1) * sizeof(*n));
	if (q->nsteps)
		memcpy(n, q->steps, q->nsteps * sizeof(*n));
	n[q->nsteps++] = s;
	q->steps = n;
}

static void add_col(struct pquery *q, const char *name, struct enode *e)
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

/* ---- parsing: sources ------------------------------------------------- */

static struct source *src_node(struct pquery *q, enum src_kind k,
			       const char *arg)
{
	struct source *s = qarena_alloc(q->ar, sizeof(*s));
	s->kind = k;
	s->arg = arg;
	return s;
}

static int parse_src_or(struct pquery *q, struct eparser *p, int depth,
			struct source **ret);

static int parse_src_atom(struct pquery *q, struct eparser *p, int depth,
			  struct source **ret)
{
	if (depth > EXPR_MAX_DEPTH)
		return eparser_fail(p,
				    "FROM nested too deeply (over %d "
				    "levels)",
				    EXPR_MAX_DEPTH);
	if (eparser_op(p, "-") || eparser_op(p, "!")) {
		struct source *s = src_node(q, S_NOT, NULL);
		*ret = s;
		return parse_src_atom(q, p, depth + 1, &s->a);
	}
	if (eparser_op(p, "(")) {
		if (parse_src_or(q, p, depth + 1, ret) < 0)
			return -EINVAL;
		if (!eparser_op(p, ")"))
			return eparser_fail(p,
					    "FROM: expected ')' at offset "
					    "%zu",
					    eparser_offset(p));
		return 0;
	}
	const struct tok *t = eparser_peek(p);
	switch (t->kind) {
	case TK_TAG:
		*ret = src_node(q, S_TAG, t->text);
		eparser_skip(p);
		return 0;
	case TK_STR:
		*ret = src_node(q, S_FOLDER, t->text);
		eparser_skip(p);
		return 0;
	case TK_LINK:
		*ret = src_node(q, S_LINKS_TO, t->text);
		eparser_skip(p);
		return 0;
	case TK_IDENT:
		if (!strcasecmp(t->text, "outgoing")) {
			eparser_skip(p);
			if (!eparser_op(p, "(") ||
			    eparser_peek(p)->kind != TK_LINK)
				return eparser_fail(p,
						    "FROM: outgoing() takes "
						    "a [[link]] (offset %zu)",
						    eparser_offset(p));
			*ret = src_node(q, S_OUTGOING, eparser_peek(p)->text);
			eparser_skip(p);
			if (!eparser_op(p, ")"))
				return eparser_fail(p,
						    "FROM: expected ')' at "
						    "offset %zu",
						    eparser_offset(p));
			return 0;
		}
		break;
	default:
		break;
	}
	return eparser_fail(p,
			    "FROM: expected #tag, \"folder\", [[note]] or "
			    "outgoing([[note]]) at offset %zu",
			    eparser_offset(p));
}

static int parse_src_and(struct pquery *q, struct eparser *p, int depth,
			 struct source **ret)
{
	struct source *a;
	if (parse_src_atom(q, p, depth, &a) < 0)
		return -EINVAL;
	while (eparser_keyword(p, "and") || eparser_op(p, "&&")) {
		struct source *s = src_node(q, S_AND, NULL);
		s->a = a;
		if (parse_src_atom(q, p, depth, &s->b) < 0)
			return -EINVAL;
		a = s;
	}
	*ret = a;
	return 0;
}

static int parse_src_or(struct pquery *q, struct eparser *p, int depth,
			struct source **ret)
{
	struct source *a;
	if (parse_src_and(q, p, depth, &a) < 0)
		return -EINVAL;
	while (eparser_keyword(p, "or") || eparser_op(p, "||") ||
	       eparser_op(p, ",")) {
		struct source *s = src_node(q, S_OR, NULL);
		s->a = a;
		if (parse_src_and(q, p, depth, &s->b) < 0)
			return -EINVAL;
		a = s;
	}
	*ret = a;
	return 0;
}

/* ---- parsing: DQL ----------------------------------------------------- */

static bool at_command(struct eparser *p)
{
	static const char *const KW[] = {"from",  "where", "sort",
					 "limit", "group", "flatten"};
	const struct tok *t = eparser_peek(p);
	if (t->kind == TK_END)
		return true;
	if (t->kind != TK_IDENT)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(KW); i++)
		if (!strcasecmp(t->text, KW[i]))
			return true;
	return false;
}

/* The text an expression was written as, for its column name. */
static const char *span_text(struct pquery *q, const char *src, size_t a,
			     size_t b)
{
	while (a < b && (src[a] == ' ' || src[a] == '\t' || src[a] == '\n'))
		a++;
	while (b > a &&
	       (src[b - 1] == ' ' || src[b - 1] == '\t' || src[b - 1] == '\n'))
		b--;
	return qarena_strndup(q->ar, src + a, b - a);
}

static size_t tok_start(struct eparser *p)
{
	eparser_peek(p);
	return eparser_offset(p);
}

static int parse_fields(struct pquery *q, struct eparser *p, const char *src)
{
	for (;;) {
		size_t a = tok_start(p);
		struct enode *e;
		if (eparser_expr(p, &e) < 0)
			return -EINVAL;
		size_t b = tok_start(p);
		const char *name = span_text(q, src, a, b);
		if (eparser_keyword(p, "as")) {
			const struct tok *t = eparser_peek(p);
			if (t->kind != TK_STR && t->kind != TK_IDENT)
				return eparser_fail(p,
						    "AS must be followed by a "
						    "name (offset %zu)",
						    eparser_offset(p));
			name = t->text;
			eparser_skip(p);
		}
		add_col(q, name, e);
		if (!eparser_op(p, ","))
			return 0;
	}
}

static int parse_sort(struct pquery *q, struct eparser *p)
{
	struct ptrvec keys = {0};
	struct step st = {.kind = ST_SORT};
	int r = 0;
	for (;;) {
		struct enode *e;
		if ((r = eparser_expr(p, &e)) < 0)
			break;
		struct sort_key *k = qarena_alloc(q->ar, sizeof(*k));
		k->e = e;
		if (eparser_keyword(p, "desc") ||
		    eparser_keyword(p, "descending"))
			k->desc = true;
		else if (!eparser_keyword(p, "asc"))
			eparser_keyword(p, "ascending");
		pv_push(&keys, k);
		if (!eparser_op(p, ","))
			break;
	}
	if (r >= 0) {
		st.nkeys = keys.n;
		st.keys = qarena_alloc(q->ar, keys.n * sizeof(*st.keys) + 1);
		for (size_t i = 0; i < keys.n; i++)
			st.keys[i] = *(struct sort_key *)keys.v[i];
		add_step(q, st);
	}
	pv_free(&keys);
	return r;
}

static int parse_commands(struct pquery *q, struct eparser *p, bool dql)
{
	bool from_seen = false;
	for (;;) {
		const struct tok *t = eparser_peek(p);
		if (t->kind == TK_END)
			return 0;
		if (eparser_keyword(p, "from")) {
			if (from_seen)
				return eparser_fail(p, "only one FROM is "
						       "allowed");
			from_seen = true;
			if (parse_src_or(q, p, 0, &q->from) < 0)
				return -EINVAL;
		} else if (eparser_keyword(p, "where")) {
			struct step st = {.kind = ST_WHERE};
			if (eparser_expr(p, &st.where) < 0)
				return -EINVAL;
			add_step(q, st);
		} else if (eparser_keyword(p, "sort")) {
			if (parse_sort(q, p) < 0)
				return -EINVAL;
		} else if (eparser_keyword(p, "limit")) {
			const struct tok *n = eparser_peek(p);
			if (n->kind != TK_NUM || n->num < 0 || n->num > 1e9 ||
			    n->num != (double)(size_t)n->num)
				return eparser_fail(p,
						    "LIMIT takes a whole "
						    "number (offset %zu)",
						    eparser_offset(p));
			add_step(q, (struct step){.kind = ST_LIMIT,
						  .limit = (size_t)n->num});
			eparser_skip(p);
		} else if (dql && (eparser_keyword(p, "group") ||
				   eparser_keyword(p, "flatten"))) {
			return eparser_fail(p,
					    "%s is not supported: query_notes "
					    "returns one row per note",
					    !strncasecmp(t->s, "group", 5)
						    ? "GROUP BY"
						    : "FLATTEN");
		} else {
			return eparser_fail(
				p,
				"unexpected %s at offset %zu: "
				"expected FROM, WHERE, SORT or "
				"LIMIT",
				QUOTE(qarena_strndup(q->ar, t->s, t->len)),
				eparser_offset(p));
		}
	}
}

static int finish(struct pquery *q, struct eparser *p, struct pquery **ret,
		  char **ret_msg)
{
	if (eparser_error(p)) {
		*ret_msg = xstrdup(eparser_error(p));
		eparser_free(p);
		pq_free(q);
		return -EINVAL;
	}
	q->uses_this = eparser_uses_this(p);
	eparser_free(p);
	*ret = q;
	return 0;
}

static int too_long(const char *what, size_t len, char **ret_msg)
{
	if (len <= EXPR_MAX_LEN)
		return 0;
	*ret_msg = xasprintf("%s too long (%zu bytes; the limit is %u)", what,
			     len, EXPR_MAX_LEN);
	return -EINVAL;
}

int pq_dql(const char *text, struct pquery **ret, char **ret_msg)
{
	size_t len = strlen(text);
	if (too_long("query", len, ret_msg) < 0)
		return -EINVAL;
	struct pquery *q = pq_new(EXPR_DQL);
	struct eparser *p = eparser_new(text, len, EXPR_DQL, q->ar);
	if (eparser_keyword(p, "table")) {
		q->kind = PQ_TABLE;
		bool without = false;
		if (eparser_keyword(p, "without")) {
			if (!eparser_keyword(p, "id"))
				eparser_fail(p, "expected ID after WITHOUT");
			without = true;
		}
		(void)without;
		if (!at_command(p))
			parse_fields(q, p, text);
	} else if (eparser_keyword(p, "list")) {
		q->kind = PQ_LIST;
		if (eparser_keyword(p, "without") && !eparser_keyword(p, "id"))
			eparser_fail(p, "expected ID after WITHOUT");
		if (!at_command(p)) {
			size_t a = tok_start(p);
			struct enode *e;
			if (eparser_expr(p, &e) >= 0)
				add_col(q, span_text(q, text, a, tok_start(p)),
					e);
		}
	} else if (eparser_keyword(p, "task")) {
		eparser_fail(p, "TASK queries are not supported by "
				"query_notes");
	} else if (eparser_keyword(p, "calendar")) {
		eparser_fail(p, "CALENDAR queries are not supported (a "
				"calendar is a view, not rows)");
	} else {
		eparser_fail(p, "a query starts with TABLE or LIST");
	}
	if (!eparser_error(p))
		parse_commands(q, p, true);
	return finish(q, p, ret, ret_msg);
}

int pq_plain(const char *where, const char *from, const char *sort,
	     const char *fields, struct pquery **ret, char **ret_msg)
{
	size_t total = (where ? strlen(where) : 0) + (from ? strlen(from) : 0) +
		       (sort ? strlen(sort) : 0) +
		       (fields ? strlen(fields) : 0);
	if (too_long("query", total, ret_msg) < 0)
		return -EINVAL;
	struct pquery *q = pq_new(EXPR_PLAIN);
	q->kind = PQ_TABLE;
	static const char *const WHAT[] = {"from", "where", "sort", "fields"};
	const char *parts[] = {from, where, sort, fields};
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		if (!parts[i] || !*parts[i])
			continue;
		struct eparser *p = eparser_new(parts[i], strlen(parts[i]),
						EXPR_PLAIN, q->ar);
		if (i == 0) {
			parse_src_or(q, p, 0, &q->from);
		} else if (i == 1) {
			struct step st = {.kind = ST_WHERE};
			if (eparser_expr(p, &st.where) >= 0)
				add_step(q, st);
		} else if (i == 2) {
			parse_sort(q, p);
		} else {
			parse_fields(q, p, parts[i]);
		}
		if (!eparser_error(p) && eparser_peek(p)->kind != TK_END)
			eparser_fail(
				p, "unexpected %s at offset %zu",
				QUOTE(qarena_strndup(q->ar, eparser_peek(p)->s,
						     eparser_peek(p)->len)),
				eparser_offset(p));
		if (eparser_error(p)) {
			*ret_msg =
				xasprintf("%s: %s", WHAT[i], eparser_error(p));
			eparser_free(p);
			pq_free(q);
			return -EINVAL;
		}
		q->uses_this |= eparser_uses_this(p);
		eparser_free(p);
	}
	*ret = q;
	return 0;
}

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
		add_step(q, st);
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
	cJSON *root = fm.data;
	struct pquery *q = pq_new(EXPR_BASES);
	q->kind = PQ_TABLE;
	q->all_files = true;
	int r = 0;
	const cJSON *formulas =
		cJSON_GetObjectItemCaseSensitive(root, "formulas");
	const cJSON *views = cJSON_GetObjectItemCaseSensitive(root, "views");
	const cJSON *filters =
		cJSON_GetObjectItemCaseSensitive(root, "filters");
	const cJSON *v = NULL;
	if (formulas && !cJSON_IsObject(formulas)) {
		*ret_msg = xstrdup("formulas: a mapping of name: expression");
		r = -EINVAL;
		goto out;
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
			r = -EINVAL;
			goto out;
		}
		char num[32];
		if (cJSON_IsNumber(f))
			format_double(f->valuedouble, num);
		const char *src = cJSON_IsString(f) ? f->valuestring : num;
		if ((r = base_expr(q, src, where, &q->formulas[q->nformulas],
				   ret_msg)) < 0)
			goto out;
		q->fnames[q->nformulas++] =
			qarena_strndup(q->ar, f->string, strlen(f->string));
	}
	if (filters) {
		struct step st = {.kind = ST_WHERE};
		if ((r = base_filter_node(q, filters, "filters", &st.where,
					  ret_msg)) < 0)
			goto out;
		add_step(q, st);
	}
	if (views && !cJSON_IsArray(views)) {
		*ret_msg = xstrdup("views: a list of views");
		r = -EINVAL;
		goto out;
	}
	if (view && *view) {
		const cJSON *it;
		cJSON_ArrayForEach(it, views)
		{
			const cJSON *nm =
				cJSON_GetObjectItemCaseSensitive(it, "name");
			if (cJSON_IsString(nm) &&
			    !strcmp(nm->valuestring, view))
				v = it;
		}
		if (!v) {
			struct sbuf names = {0};
			const cJSON *it2;
			cJSON_ArrayForEach(it2, views)
			{
				const cJSON *nm =
					cJSON_GetObjectItemCaseSensitive(
						it2, "name");
				if (cJSON_IsString(nm))
					sb_printf(&names, "%s%s",
						  names.len ? ", " : "",
						  nm->valuestring);
			}
			*ret_msg = xasprintf("no view named %s in the base "
					     "(views: %s)",
					     QUOTE(view),
					     names.len ? names.s : "none");
			sb_free(&names);
			r = -ENOENT;
			goto out;
		}
	} else {
		v = cJSON_GetArrayItem(views, 0);
	}
	if (v && !cJSON_IsObject(v)) {
		*ret_msg = xstrdup("views: each view is a mapping");
		r = -EINVAL;
		goto out;
	}
	const cJSON *nm = cJSON_GetObjectItemCaseSensitive(v, "name");
	if (cJSON_IsString(nm))
		q->view = qarena_strndup(q->ar, nm->valuestring,
					 strlen(nm->valuestring));
	const cJSON *vf = cJSON_GetObjectItemCaseSensitive(v, "filters");
	if (vf) {
		struct step st = {.kind = ST_WHERE};
		if ((r = base_filter_node(q, vf, "view filters", &st.where,
					  ret_msg)) < 0)
			goto out;
		add_step(q, st);
	}
	const cJSON *gb = cJSON_GetObjectItemCaseSensitive(v, "groupBy");
	if (gb) {
		const cJSON *gp =
			cJSON_GetObjectItemCaseSensitive(gb, "property");
		const cJSON *gd =
			cJSON_GetObjectItemCaseSensitive(gb, "direction");
		if (!cJSON_IsString(gp)) {
			*ret_msg = xstrdup("groupBy: needs a property");
			r = -EINVAL;
			goto out;
		}
		if ((r = expr_property(gp->valuestring, q->ar, &q->group,
				       ret_msg)) < 0)
			goto out;
		q->group_desc = cJSON_IsString(gd) &&
				!strcasecmp(gd->valuestring, "DESC");
	}
	if ((r = base_sort(q, cJSON_GetObjectItemCaseSensitive(v, "sort"),
			   ret_msg)) < 0)
		goto out;
	const cJSON *lim = cJSON_GetObjectItemCaseSensitive(v, "limit");
	if (lim) {
		if (!cJSON_IsNumber(lim) || lim->valuedouble < 0 ||
		    lim->valuedouble > 1e9) {
			*ret_msg = xstrdup("view limit: a whole number");
			r = -EINVAL;
			goto out;
		}
		add_step(q, (struct step){.kind = ST_LIMIT,
					  .limit = (size_t)lim->valuedouble});
	}
	const cJSON *order = cJSON_GetObjectItemCaseSensitive(v, "order");
	if (order && !cJSON_IsArray(order)) {
		*ret_msg = xstrdup("view order: a list of properties");
		r = -EINVAL;
		goto out;
	}
	const cJSON *o;
	cJSON_ArrayForEach(o, order)
	{
		struct enode *e;
		if (!cJSON_IsString(o)) {
			*ret_msg = xstrdup("view order: a list of properties");
			r = -EINVAL;
			goto out;
		}
		if ((r = expr_property(o->valuestring, q->ar, &e, ret_msg)) < 0)
			goto out;
		if (!strncmp(o->valuestring, "formula.", 8)) {
			bool known = false;
			for (size_t i = 0; i < q->nformulas && !known; i++)
				known = !strcmp(q->fnames[i],
						o->valuestring + 8);
			if (!known) {
				*ret_msg = xasprintf("view order: no formula "
						     "%s",
						     QUOTE(o->valuestring + 8));
				r = -EINVAL;
				goto out;
			}
		}
		add_col(q,
			qarena_strndup(q->ar, o->valuestring,
				       strlen(o->valuestring)),
			e);
	}
	if (!q->ncols) {
		struct enode *e;
		expr_property("file.name", q->ar, &e, ret_msg);
		add_col(q, "file.name", e);
	}
	if (cJSON_GetObjectItemCaseSensitive(root, "summaries") ||
	    cJSON_GetObjectItemCaseSensitive(v, "summaries"))
		q->not_evaluated = "summaries";
out:
	fm_clear(&fm);
	if (r < 0) {
		pq_free(q);
		return r;
	}
	*ret = q;
	return 0;
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

static void src_prepare(struct pquery *q, const struct index *ix,
			struct source *s)
{
	if (!s)
		return;
	src_prepare(q, ix, s->a);
	src_prepare(q, ix, s->b);
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

static bool src_match(const struct run *r, const struct source *s,
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
		const struct note *t = resolve_ref(r->pe, s->arg);
		_cleanup_free_ char *fk = fold_key(s->arg);
		for (size_t i = 0; i < n->nlinks; i++) {
			const struct link *l = &n->links[i];
			if (t ? l->to == t
			      : (!l->to && l->key && !strcmp(l->key, fk)))
				return true;
		}
		return false;
	}
	case S_OUTGOING: {
		const struct note *from = resolve_ref(r->pe, s->arg);
		if (!from || !n)
			return false;
		for (size_t i = 0; i < from->nlinks; i++)
			if (from->links[i].to == n)
				return true;
		return false;
	}
	case S_AND:
		return src_match(r, s->a, row) && src_match(r, s->b, row);
	case S_OR:
		return src_match(r, s->a, row) || src_match(r, s->b, row);
	case S_NOT:
		return !src_match(r, s->a, row);
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
	const char *n = (const char *)row->note;
	if (!n)
		return;
	__builtin_prefetch(n);
	__builtin_prefetch(n + 64);
	__builtin_prefetch(n + sizeof(struct note));
	__builtin_prefetch(n + sizeof(struct note) + 64);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int pq_run(struct pquery *q, const struct pq_env *pe, size_t offset,
	   size_t limit, struct pq_result *ret)
{
	struct run r = {.q = q, .pe = pe};
	struct qrow *this_row = NULL;
	if (pe->this_note) {
		this_row = qarena_alloc(q->ar, sizeof(*this_row));
		this_row->note = pe->this_note;
		this_row->path = pe->this_note->path;
	}
	r.env = (struct expr_env){
		.ix = pe->ix,
		.rootfd = pe->rootfd,
		.types = pe->types,
		.ar = q->ar,
		.dialect = q->dialect,
		.this_row = this_row,
		.now_ms = qv_now_ms(),
		.formula_names = q->fnames,
		.formulas = q->formulas,
		.nformulas = q->nformulas,
	};
	/* The candidate rows: notes in name order (the index keeps it),
	 * then other files in path order. */
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
		rows[n].path = sorted[i]->path;
		n++;
	}
	for (size_t i = 0; i < files.n; i++) {
		rows[n].path =
			qarena_strndup(q->ar, files.v[i], strlen(files.v[i]));
		free(files.v[i]);
		n++;
	}
	pv_free(&files);
	src_prepare(q, pe->ix, q->from);
	/* Sources, then the steps in order. */
	struct keyed *cur = qarena_alloc(q->ar, (n + 1) * sizeof(*cur));
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (q->from && !src_match(&r, q->from, &rows[i]))
			continue;
		cur[m].row = &rows[i];
		cur[m].ord = m;
		m++;
	}
	for (size_t s = 0; s < q->nsteps; s++) {
		const struct step *st = &q->steps[s];
		if (cancel_requested())
			return -ECANCELED;
		if (st->kind == ST_WHERE) {
			size_t k = 0;
			for (size_t i = 0; i < m; i++) {
				if (i + PREFETCH_AHEAD < m)
					prefetch_row(
						cur[i + PREFETCH_AHEAD].row);
				size_t mark = qarena_mark(q->ar);
				struct qval v;
				expr_eval(&r.env, cur[i].row, st->where, &v);
				bool keep = qv_truthy(&v);
				qarena_reset(q->ar, mark);
				if (keep)
					cur[k++] = cur[i];
			}
			m = k;
		} else if (st->kind == ST_SORT) {
			for (size_t i = 0; i < m; i++) {
				if (i + PREFETCH_AHEAD < m)
					prefetch_row(
						cur[i + PREFETCH_AHEAD].row);
				cur[i].keys = qarena_alloc(
					q->ar, st->nkeys * sizeof(struct qval));
				for (size_t k = 0; k < st->nkeys; k++)
					expr_eval(&r.env, cur[i].row,
						  st->keys[k].e,
						  &cur[i].keys[k]);
				cur[i].ord = i;
			}
			struct sort_ctx c = {st->keys, st->nkeys,
					     q->dialect != EXPR_DQL};
			qsort_r(cur, m, sizeof(*cur), cmp_keyed, &c);
		} else if (m > st->limit) {
			m = st->limit;
		}
	}
	struct qval *groups = NULL;
	if (q->group) {
		/* Groups in order, rows in their order within each. */
		groups = qarena_alloc(q->ar, (m + 1) * sizeof(*groups));
		for (size_t i = 0; i < m; i++) {
			cur[i].keys = qarena_alloc(q->ar, sizeof(struct qval));
			expr_eval(&r.env, cur[i].row, q->group, cur[i].keys);
			cur[i].ord = i;
		}
		struct sort_key gk = {q->group, q->group_desc};
		struct sort_ctx c = {&gk, 1, true};
		qsort_r(cur, m, sizeof(*cur), cmp_keyed, &c);
		for (size_t i = 0; i < m; i++)
			groups[i] = cur[i].keys[0];
	}
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
			expr_eval(&r.env, pr->row, q->cols[c], &pr->vals[c]);
		if (groups)
			pr->group = groups[first + i];
	}
	return 0;
}
