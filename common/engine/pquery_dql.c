/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Plans from text: Dataview's query language (TABLE / LIST, FROM
 * sources, WHERE / SORT / LIMIT) and query_notes' arguments, parsed with
 * the expression parser's tokens; what a plan cannot express is refused
 * by name.
 */
#include "pquery_int.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>

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
		pq_add_col(q, name, e);
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
		pq_add_step(q, st);
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
			pq_add_step(q, st);
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
			pq_add_step(q, (struct step){.kind = ST_LIMIT,
						     .limit = (size_t)n->num});
			eparser_skip(p);
		} else if (dql && (eparser_keyword(p, "group") ||
				   eparser_keyword(p, "flatten"))) {
			return eparser_fail(p,
					    "%s is not supported: a query "
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

/* A TASK query runs its WHEREs, then one SORT, then LIMIT: steps in
 * another order would need the tasks between them, which it does not
 * keep, so they are refused rather than answered differently. */
static void check_task_steps(const struct pquery *q, struct eparser *p)
{
	int stage = 0; /* 0: WHEREs, 1: after the SORT, 2: after a LIMIT */
	for (size_t s = 0; s < q->nsteps; s++) {
		enum step_kind k = q->steps[s].kind;
		int want = k == ST_WHERE ? 0 : k == ST_SORT ? 1 : 2;
		if (want < stage || (k == ST_SORT && stage == 1)) {
			eparser_fail(p, "a TASK query takes WHERE, then one "
					"SORT, then LIMIT, in that order");
			return;
		}
		stage = want;
	}
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
				pq_add_col(q,
					   span_text(q, text, a, tok_start(p)),
					   e);
		}
	} else if (eparser_keyword(p, "task")) {
		q->kind = PQ_TASK;
	} else if (eparser_keyword(p, "calendar")) {
		eparser_fail(p, "CALENDAR queries are not supported (a "
				"calendar is a view, not rows)");
	} else {
		eparser_fail(p, "a query starts with TABLE, LIST or TASK");
	}
	if (!eparser_error(p))
		parse_commands(q, p, true);
	if (!eparser_error(p) && q->kind == PQ_TASK)
		check_task_steps(q, p);
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
				pq_add_step(q, st);
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
