/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The expression parser: recursive descent with bounded depth and node
 * count, one precedence level a step, and Bases property ids.
 */
#include "expr_int.h"
#include "fileio.h"
#include "hmap.h"
#include "props.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>

/* ---- parser ----------------------------------------------------------- */

static struct enode *node(struct eparser *p, enum node_kind k)
{
	if (++p->nodes > EXPR_MAX_NODES) {
		eparser_fail(p, "expression too large (over %d parts)",
			     EXPR_MAX_NODES);
		return NULL;
	}
	struct enode *e = qarena_alloc(p->ar, sizeof(*e));
	e->kind = (uint8_t)k;
	return e;
}

static int parse_or(struct eparser *p, struct enode **ret);

/* The items up to close (")" or "]", the opening one consumed) into
 * e->args. */
static int parse_args(struct eparser *p, struct enode *e, const char *close)
{
	struct ptrvec args = {0};
	if (!eparser_op(p, close)) {
		for (;;) {
			struct enode *a;
			if (parse_or(p, &a) < 0) {
				pv_free(&args);
				return -EINVAL;
			}
			pv_push(&args, a);
			if (eparser_op(p, close))
				break;
			if (!eparser_op(p, ",")) {
				pv_free(&args);
				return eparser_fail(p,
						    "expected ',' or '%s' at "
						    "offset %zu",
						    close, eparser_offset(p));
			}
		}
	}
	e->nargs = args.n;
	e->args = qarena_alloc(p->ar, (args.n + 1) * sizeof(*e->args));
	memcpy(e->args, args.v, args.n * sizeof(*e->args));
	pv_free(&args);
	return 0;
}

/* date(today), date(2024-01-05) and dur(3 days) take their argument
 * unquoted in Dataview: read it as a literal when it is one. */
static bool raw_literal(struct eparser *p, bool is_date, struct qval *ret)
{
	size_t i = p->pos;
	while (i < p->len && isspace((unsigned char)p->src[i]))
		i++;
	const char *close = memchr(p->src + i, ')', p->len - i);
	if (!close)
		return false;
	size_t n = (size_t)(close - (p->src + i));
	while (n && isspace((unsigned char)p->src[i + n - 1]))
		n--;
	const char *s = p->src + i;
	if (!n || memchr(s, '(', n) || memchr(s, '"', n) || memchr(s, '\'', n))
		return false;
	if (is_date) {
		static const char *const KW[] = {
			"today", "now", "tomorrow", "yesterday", "sow",
			"eow",	 "som", "eom",	    "soy",	 "eoy"};
		bool kw = false;
		for (size_t k = 0; k < ARRAY_SIZE(KW) && !kw; k++)
			kw = strlen(KW[k]) == n && !strncasecmp(KW[k], s, n);
		if (kw) {
			ret->t = QV_STR;
			ret->s = qarena_strndup(p->ar, s, n);
			ret->n = (uint32_t)n;
			ret->time = true; /* a keyword, resolved at eval */
		} else {
			int64_t ms;
			bool tm;
			if (!qv_parse_date(s, n, &ms, &tm))
				return false;
			*ret = vdate(ms, tm);
		}
	} else {
		int64_t ms;
		int32_t mo;
		if (!qv_parse_dur(s, n, &ms, &mo))
			return false;
		*ret = vdur(ms, mo);
	}
	p->pos = (size_t)(close - p->src) + 1;
	p->have = false;
	return true;
}

/* name(args...), its "(" consumed. */
static int parse_call(struct eparser *p, const char *name, struct enode **ret)
{
	const struct fn_def *f = ex_fn_find(name, false, p->dialect);
	if (!f)
		return eparser_fail(p, "unsupported function %s()",
				    QUOTE(name));
	struct enode *e = node(p, N_CALL);
	if (!e)
		return -EINVAL;
	*ret = e;
	e->op = f->id;
	e->name = f->name;
	struct qval lit;
	if (p->dialect != EXPR_BASES && (f->id == F_DATE || f->id == F_DUR) &&
	    raw_literal(p, f->id == F_DATE, &lit)) {
		if (lit.t == QV_STR && lit.time) {
			/* date(today): a keyword. */
			e->nargs = 1;
			e->args = qarena_alloc(p->ar, sizeof(*e->args));
			if (!(e->args[0] = node(p, N_LIT)))
				return -EINVAL;
			e->args[0]->lit = lit;
			e->args[0]->lit.time = false;
			return 0;
		}
		e->kind = N_LIT;
		e->lit = lit;
		return 0;
	}
	if (parse_args(p, e, ")") < 0)
		return -EINVAL;
	if (e->nargs < f->min || e->nargs > f->max)
		return eparser_fail(p, "%s() takes %u to %u arguments, not %zu",
				    f->name, f->min, f->max, e->nargs);
	return 0;
}

/* A literal true/false/null, a call, or a property name. */
static int parse_ident(struct eparser *p, struct enode **ret)
{
	const char *name = eparser_peek(p)->text;
	struct enode *e;
	if (!strcasecmp(name, "true") || !strcasecmp(name, "false") ||
	    !strcasecmp(name, "null")) {
		if (!(e = node(p, N_LIT)))
			return -EINVAL;
		e->lit = !strcasecmp(name, "null")
				 ? V_NULL
				 : vbool(!strcasecmp(name, "true"));
		eparser_skip(p);
		*ret = e;
		return 0;
	}
	eparser_skip(p);
	if (eparser_op(p, "("))
		return parse_call(p, name, ret);
	if (p->dialect == EXPR_BASES && !strcmp(name, "this"))
		return eparser_fail(p, "'this' in a base (the note "
				       "embedding it) is not "
				       "supported");
	if (!(e = node(p, N_IDENT)))
		return -EINVAL;
	e->name = name;
	if (!strcmp(name, "this"))
		p->uses_this = true;
	*ret = e;
	return 0;
}

/* [a, b, ...], its "[" consumed. */
static int parse_list(struct eparser *p, struct enode **ret)
{
	struct enode *e = node(p, N_LIST);
	if (!e || parse_args(p, e, "]") < 0)
		return -EINVAL;
	*ret = e;
	return 0;
}

/* A literal token as a node. */
static int parse_literal(struct eparser *p, struct enode **ret)
{
	const struct tok *t = eparser_peek(p);
	struct enode *e = node(p, N_LIT);
	if (!e)
		return -EINVAL;
	int64_t ms;
	bool tm;
	switch (t->kind) {
	case TK_NUM:
		e->lit = vnum(t->num);
		break;
	case TK_STR:
		e->lit = vstr(t->text, (size_t)t->num);
		break;
	case TK_DATE:
		qv_parse_date(t->text, strlen(t->text), &ms, &tm);
		e->lit = vdate(ms, tm);
		break;
	default: /* TK_LINK */
		e->lit = (struct qval){.t = QV_LINK,
				       .s = t->text,
				       .n = (uint32_t)strlen(t->text)};
		/* Resolved at evaluation, against the index. */
		e->name = t->text;
		break;
	}
	eparser_skip(p);
	*ret = e;
	return 0;
}

static int parse_primary(struct eparser *p, struct enode **ret)
{
	const struct tok *t = eparser_peek(p);
	struct enode *e = NULL;
	switch (t->kind) {
	case TK_NUM:
	case TK_STR:
	case TK_DATE:
	case TK_LINK:
		return parse_literal(p, ret);
	case TK_TAG:
		return eparser_fail(p,
				    "a #tag is not an expression (offset "
				    "%zu): compare file.tags, e.g. "
				    "contains(file.tags, \"#%s\")",
				    eparser_offset(p), t->text);
	case TK_IDENT:
		return parse_ident(p, ret);
	case TK_OP:
		if (eparser_op(p, "(")) {
			if (parse_or(p, &e) < 0)
				return -EINVAL;
			if (!eparser_op(p, ")"))
				return eparser_fail(p,
						    "expected ')' at offset "
						    "%zu",
						    eparser_offset(p));
			*ret = e;
			return 0;
		}
		if (eparser_op(p, "["))
			return parse_list(p, ret);
		if (t->s[0] == '{')
			return eparser_fail(p, "object literals { } are not "
					       "supported");
		/* fall through */
	default:
		if (t->kind == TK_END)
			return eparser_fail(p, "expression expected at the "
					       "end");
		return eparser_fail(p, "unexpected %s at offset %zu",
				    QUOTE(qarena_strndup(p->ar, t->s, t->len)),
				    eparser_offset(p));
	}
}

static int parse_postfix(struct eparser *p, struct enode **ret)
{
	struct enode *e = NULL;
	if (parse_primary(p, &e) < 0)
		return -EINVAL;
	for (;;) {
		if (eparser_op(p, ".")) {
			const struct tok *t = eparser_peek(p);
			if (t->kind != TK_IDENT)
				return eparser_fail(p,
						    "a field name must follow "
						    "'.' (offset %zu)",
						    eparser_offset(p));
			const char *name = t->text;
			eparser_skip(p);
			if (eparser_op(p, "(")) {
				if (p->dialect != EXPR_BASES)
					return eparser_fail(
						p,
						"method calls (.%s()) are "
						"not Dataview syntax: call "
						"%s(x, ...)",
						name, name);
				const struct fn_def *f =
					ex_fn_find(name, true, p->dialect);
				if (!f)
					return eparser_fail(
						p, "unsupported method .%s()",
						name);
				struct enode *m = node(p, N_METHOD);
				if (!m)
					return -EINVAL;
				m->op = f->id;
				m->name = f->name;
				m->a = e;
				if (parse_args(p, m, ")") < 0)
					return -EINVAL;
				if (m->nargs + 1 < f->min ||
				    m->nargs + 1 > f->max)
					return eparser_fail(
						p,
						".%s() takes %u to %u "
						"arguments, not %zu",
						f->name, f->min - 1, f->max - 1,
						m->nargs);
				e = m;
				continue;
			}
			if (e->kind == N_IDENT && !strcmp(e->name, "file") &&
			    !ex_file_field_known(name))
				return eparser_fail(p, "unknown field file.%s",
						    name);
			struct enode *d = node(p, N_DOT);
			if (!d)
				return -EINVAL;
			d->a = e;
			d->name = name;
			e = d;
		} else if (eparser_op(p, "[")) {
			struct enode *ix = node(p, N_INDEX);
			if (!ix)
				return -EINVAL;
			ix->a = e;
			if (parse_or(p, &ix->b) < 0)
				return -EINVAL;
			if (!eparser_op(p, "]"))
				return eparser_fail(p,
						    "expected ']' at offset "
						    "%zu",
						    eparser_offset(p));
			e = ix;
		} else {
			break;
		}
	}
	*ret = e;
	return 0;
}

static int enter(struct eparser *p)
{
	if (++p->depth > EXPR_MAX_DEPTH)
		return eparser_fail(p,
				    "expression nested too deeply (over %d "
				    "levels)",
				    EXPR_MAX_DEPTH);
	return 0;
}

static int parse_unary(struct eparser *p, struct enode **ret)
{
	if (enter(p) < 0)
		return -EINVAL;
	int r;
	if (eparser_op(p, "-")) {
		struct enode *e = node(p, N_NEG);
		if (!e || parse_unary(p, &e->a) < 0)
			return -EINVAL;
		*ret = e;
		r = 0;
	} else {
		r = parse_postfix(p, ret);
	}
	p->depth--;
	return r;
}

static int parse_bin_level(struct eparser *p, int level, struct enode **ret);

static struct enode *bin(struct eparser *p, int op, struct enode *a,
			 struct enode *b)
{
	struct enode *e = node(p, N_BIN);
	if (e) {
		e->op = (uint8_t)op;
		e->a = a;
		e->b = b;
	}
	return e;
}

/* Levels: 0 or, 1 and, 2 not, 3 comparison, 4 + -, 5 * / %. */
/* Comparison level: a == b, a < b, ... (and query_notes' a contains b,
 * a exists, a missing). */
static int parse_cmp(struct eparser *p, struct enode **ret)
{
	static const struct {
		const char *op;
		int b;
	} CMP[] = {{"==", B_EQ}, {"=", B_EQ}, {"!=", B_NE}, {"<=", B_LE},
		   {">=", B_GE}, {"<", B_LT}, {">", B_GT}};
	struct enode *a, *b;
	int r;
	if ((r = parse_bin_level(p, 4, &a)) < 0)
		return r;
	int op = -1;
	for (size_t k = 0; k < ARRAY_SIZE(CMP) && op < 0; k++)
		if (eparser_op(p, CMP[k].op))
			op = CMP[k].b;
	if (op < 0 && p->dialect == EXPR_PLAIN) {
		if (eparser_keyword(p, "contains")) {
			op = B_CONTAINS;
		} else if (eparser_keyword(p, "exists") ||
			   eparser_keyword(p, "missing")) {
			bool ex = !strncasecmp(p->cur.s, "exists", 6);
			struct enode *e = node(p, ex ? N_EXISTS : N_MISSING);
			if (!e)
				return -EINVAL;
			e->a = a;
			*ret = e;
			return 0;
		}
	}
	if (op < 0) {
		*ret = a;
		return 0;
	}
	if ((r = parse_bin_level(p, 4, &b)) < 0)
		return r;
	if (!(*ret = bin(p, op, a, b)))
		return -EINVAL;
	return 0;
}

static int parse_bin_level(struct eparser *p, int level, struct enode **ret)
{
	struct enode *a, *b;
	if (enter(p) < 0)
		return -EINVAL;
	int r = 0;
	switch (level) {
	case 0:
	case 1:
		if ((r = parse_bin_level(p, level + 1, &a)) < 0)
			break;
		for (;;) {
			bool more = level == 0 ? (eparser_keyword(p, "or") ||
						  eparser_op(p, "||"))
					       : (eparser_keyword(p, "and") ||
						  eparser_op(p, "&&"));
			if (!more)
				break;
			if ((r = parse_bin_level(p, level + 1, &b)) < 0)
				break;
			if (!(a = bin(p, level == 0 ? B_OR : B_AND, a, b))) {
				r = -EINVAL;
				break;
			}
		}
		*ret = a;
		break;
	case 2:
		if (eparser_keyword(p, "not") || eparser_op(p, "!")) {
			struct enode *e = node(p, N_NOT);
			if (!e || (r = parse_bin_level(p, 2, &e->a)) < 0) {
				r = -EINVAL;
				break;
			}
			*ret = e;
			break;
		}
		r = parse_bin_level(p, 3, ret);
		break;
	case 3:
		r = parse_cmp(p, ret);
		break;
	case 4:
	case 5:
		if ((r = level == 4 ? parse_bin_level(p, 5, &a)
				    : parse_unary(p, &a)) < 0)
			break;
		for (;;) {
			int op = -1;
			if (level == 4)
				op = eparser_op(p, "+")	  ? B_ADD
				     : eparser_op(p, "-") ? B_SUB
							  : -1;
			else
				op = eparser_op(p, "*")	  ? B_MUL
				     : eparser_op(p, "/") ? B_DIV
				     : eparser_op(p, "%") ? B_MOD
							  : -1;
			if (op < 0)
				break;
			if ((r = level == 4 ? parse_bin_level(p, 5, &b)
					    : parse_unary(p, &b)) < 0)
				break;
			if (!(a = bin(p, op, a, b))) {
				r = -EINVAL;
				break;
			}
		}
		*ret = a;
		break;
	}
	p->depth--;
	return r < 0 || p->err ? -EINVAL : 0;
}

static int parse_or(struct eparser *p, struct enode **ret)
{
	return parse_bin_level(p, 0, ret);
}

int eparser_expr(struct eparser *p, struct enode **ret)
{
	if (p->err)
		return -EINVAL;
	return parse_or(p, ret);
}

int expr_parse(const char *src, enum expr_dialect dialect, struct qarena *ar,
	       struct enode **ret, char **ret_msg)
{
	size_t len = strlen(src);
	if (len > EXPR_MAX_LEN) {
		*ret_msg = xasprintf("expression too long (%zu bytes; the "
				     "limit is %u)",
				     len, EXPR_MAX_LEN);
		return -EINVAL;
	}
	struct eparser *p = eparser_new(src, len, dialect, ar);
	struct enode *e;
	int r = eparser_expr(p, &e);
	if (r >= 0 && eparser_peek(p)->kind != TK_END)
		r = eparser_fail(p, "unexpected %s at offset %zu",
				 QUOTE(qarena_strndup(ar, eparser_peek(p)->s,
						      eparser_peek(p)->len)),
				 eparser_offset(p));
	if (r < 0)
		*ret_msg = xstrdup(eparser_error(p));
	else
		*ret = e;
	eparser_free(p);
	return r;
}

int expr_property(const char *id, struct qarena *ar, struct enode **ret,
		  char **ret_msg)
{
	static const char *const PREFIX[] = {"file.", "formula.", "note."};
	struct enode *e = qarena_alloc(ar, sizeof(*e));
	for (size_t i = 0; i < ARRAY_SIZE(PREFIX); i++) {
		size_t pl = strlen(PREFIX[i]);
		if (strncmp(id, PREFIX[i], pl))
			continue;
		const char *rest = id + pl;
		if (!*rest)
			break;
		if (i == 2) {
			e->kind = N_IDENT;
			e->name = qarena_strndup(ar, rest, strlen(rest));
			*ret = e;
			return 0;
		}
		if (i == 0 && !ex_file_field_known(rest)) {
			*ret_msg = xasprintf("unknown property %s", QUOTE(id));
			return -EINVAL;
		}
		struct enode *base = qarena_alloc(ar, sizeof(*base));
		base->kind = N_IDENT;
		base->name = i == 0 ? "file" : "formula";
		e->kind = N_DOT;
		e->a = base;
		e->name = qarena_strndup(ar, rest, strlen(rest));
		*ret = e;
		return 0;
	}
	if (!*id) {
		*ret_msg = xstrdup("empty property name");
		return -EINVAL;
	}
	e->kind = N_IDENT;
	e->name = qarena_strndup(ar, id, strlen(id));
	*ret = e;
	return 0;
}
