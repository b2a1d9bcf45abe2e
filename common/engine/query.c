/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "query.h"
#include "u8.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>

enum tok {
	T_END,
	T_LPAREN,
	T_RPAREN,
	T_AND,
	T_OR,
	T_NOT, /* NOT or a leading '-' */
	T_ATOM,
};

struct parser {
	const char *s;
	size_t i;
	enum tok tok;
	size_t tpos; /* byte offset of the current token */
	struct qnode *atom;
	char *err;
	int depth; /* of '(' and NOT */
	int atoms;
};

/* Enough for any query a person writes; bounds recursion and the size of
 * what SQLite is handed. */
#define MAX_DEPTH 32
#define MAX_ATOMS 256

/* Character (not byte) position of a byte offset, 1-based. */
static int charpos(const char *s, size_t off)
{
	int n = 1;
	for (size_t i = 0; i < off && s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

static int fail(struct parser *p, size_t off, const char *what)
{
	if (!p->err)
		p->err = xasprintf("Invalid query at character %d: %s",
				   charpos(p->s, off), what);
	return -EINVAL;
}

static struct qnode *node(enum qkind k, int pos)
{
	struct qnode *q = xcalloc(1, sizeof(*q));
	q->kind = k;
	q->pos = pos;
	return q;
}

static bool is_break(char c)
{
	return !c || isspace((unsigned char)c) || c == '(' || c == ')' ||
	       c == '"';
}

/* A quoted phrase at s[i] == '"'; returns the text or NULL. */
static char *phrase(struct parser *p, size_t *i)
{
	size_t start = *i + 1, j = start;
	while (p->s[j] && p->s[j] != '"')
		j++;
	if (!p->s[j]) {
		fail(p, *i, "a quote is not closed");
		return NULL;
	}
	*i = j + 1;
	return xstrndup(p->s + start, j - start);
}

/* The fields a query word may name ("tag:x"). */
static const struct {
	const char *name;
	enum qkind kind;
} FIELDS[] = {{"title", Q_WORD}, {"tag", Q_TAG}, {"folder", Q_FOLDER}};

/*
 * "field:value" at p->i, the field's name wl bytes long: 1 and the atom
 * when the name is a field, 0 when it is not (the word is plain text),
 * -EINVAL on an unclosed quote or no value.
 */
static int field_atom(struct parser *p, size_t wl, int pos)
{
	const char *s = p->s;
	size_t f = 0;
	while (f < ARRAY_SIZE(FIELDS) &&
	       (wl != strlen(FIELDS[f].name) ||
		strncasecmp(s + p->i, FIELDS[f].name, wl) != 0))
		f++;
	if (f == ARRAY_SIZE(FIELDS))
		return 0;
	size_t v = p->i + wl + 1;
	char *val;
	bool quoted = s[v] == '"';
	if (quoted) {
		val = phrase(p, &v);
		if (!val)
			return -EINVAL;
	} else {
		size_t e = v;
		while (!is_break(s[e]))
			e++;
		val = xstrndup(s + v, e - v);
		v = e;
	}
	if (!*val) {
		free(val);
		_cleanup_free_ char *m =
			xasprintf("'%s:' needs a value", FIELDS[f].name);
		return fail(p, p->i, m);
	}
	struct qnode *q = node(FIELDS[f].kind, pos);
	if (f == 0) {
		q->title = true;
		q->kind = quoted ? Q_PHRASE : Q_WORD;
	}
	if (q->kind == Q_TAG && val[0] == '#')
		memmove(val, val + 1, strlen(val));
	size_t vl = strlen(val);
	while (q->kind == Q_FOLDER && vl && val[vl - 1] == '/')
		val[--vl] = 0;
	q->text = val;
	p->atom = q;
	p->i = v;
	p->tok = T_ATOM;
	return 1;
}

/* A plain word at p->i: an operator (AND, OR, NOT) or an atom. */
static void word_token(struct parser *p, int pos)
{
	const char *s = p->s;
	size_t j = p->i;
	while (!is_break(s[j]))
		j++;
	size_t wl = j - p->i;
	if (wl == 3 && !strncmp(s + p->i, "AND", 3)) {
		p->tok = T_AND;
	} else if (wl == 2 && !strncmp(s + p->i, "OR", 2)) {
		p->tok = T_OR;
	} else if (wl == 3 && !strncmp(s + p->i, "NOT", 3)) {
		p->tok = T_NOT;
	} else {
		struct qnode *q = node(Q_WORD, pos);
		q->text = xstrndup(s + p->i, wl);
		p->atom = q;
		p->tok = T_ATOM;
	}
	p->i = j;
}

static int next(struct parser *p)
{
	const char *s = p->s;
	while (isspace((unsigned char)s[p->i]))
		p->i++;
	p->tpos = p->i;
	p->atom = NULL;
	char c = s[p->i];
	if (!c) {
		p->tok = T_END;
		return 0;
	}
	if (c == '(' || c == ')') {
		p->tok = c == '(' ? T_LPAREN : T_RPAREN;
		p->i++;
		return 0;
	}
	/* "-x", "-(...)", "-\"...\"": without. A lone "-" is a word. */
	char n = s[p->i + 1];
	if (c == '-' && n && !isspace((unsigned char)n) && n != ')') {
		p->tok = T_NOT;
		p->i++;
		return 0;
	}
	int pos = (int)p->i;
	if (c == '"') {
		char *t = phrase(p, &p->i);
		if (!t)
			return -EINVAL;
		p->atom = node(Q_PHRASE, pos);
		p->atom->text = t;
		p->tok = T_ATOM;
		return 0;
	}
	size_t j = p->i;
	while (!is_break(s[j]) && s[j] != ':')
		j++;
	int r = s[j] == ':' ? field_atom(p, j - p->i, pos) : 0;
	if (r < 0)
		return r;
	/* A plain word (an unknown "x:y" is just text). */
	if (!r)
		word_token(p, pos);
	if (p->atom && p->atom->kind == Q_WORD) {
		size_t l = strlen(p->atom->text);
		if (l > 1 && p->atom->text[l - 1] == '*') {
			p->atom->text[l - 1] = 0;
			p->atom->prefix = true;
		}
	}
	return 0;
}

static int parse_or(struct parser *p, struct qnode **ret);

static int parse_unary_(struct parser *p, struct qnode **ret);

static int parse_unary(struct parser *p, struct qnode **ret)
{
	if (p->depth >= MAX_DEPTH)
		return fail(p, p->tpos, "nested too deeply");
	p->depth++;
	int r = parse_unary_(p, ret);
	p->depth--;
	return r;
}

static int parse_unary_(struct parser *p, struct qnode **ret)
{
	if (p->tok == T_NOT) {
		int pos = (int)p->tpos;
		size_t at = p->tpos;
		if (next(p) < 0)
			return -EINVAL;
		if (p->tok == T_END)
			return fail(p, at, "nothing after '-' or NOT");
		struct qnode *a;
		if (parse_unary(p, &a) < 0)
			return -EINVAL;
		struct qnode *q = node(Q_NOT, pos);
		q->a = a;
		*ret = q;
		return 0;
	}
	if (p->tok == T_LPAREN) {
		size_t at = p->tpos;
		if (next(p) < 0)
			return -EINVAL;
		if (p->tok == T_RPAREN)
			return fail(p, at, "empty parentheses");
		struct qnode *e;
		if (parse_or(p, &e) < 0)
			return -EINVAL;
		if (p->tok != T_RPAREN) {
			query_free(e);
			return fail(p, at, "'(' is not closed");
		}
		if (next(p) < 0) {
			query_free(e);
			return -EINVAL;
		}
		*ret = e;
		return 0;
	}
	if (p->tok == T_ATOM) {
		if (++p->atoms > MAX_ATOMS)
			return fail(p, p->tpos, "too many terms (at most 256)");
		struct qnode *a = p->atom;
		p->atom = NULL;
		if (next(p) < 0) {
			query_free(a);
			return -EINVAL;
		}
		*ret = a;
		return 0;
	}
	if (p->tok == T_RPAREN)
		return fail(p, p->tpos, "')' without '('");
	if (p->tok == T_END)
		return fail(p, p->tpos, "the query ends too early");
	return fail(p, p->tpos,
		    p->tok == T_AND ? "AND needs a term before it"
				    : "OR needs a term before it");
}

static int parse_and(struct parser *p, struct qnode **ret)
{
	struct qnode *left;
	if (parse_unary(p, &left) < 0)
		return -EINVAL;
	for (;;) {
		int pos = (int)p->tpos;
		bool implicit = p->tok != T_AND;
		if (p->tok == T_AND) {
			size_t at = p->tpos;
			if (next(p) < 0) {
				query_free(left);
				return -EINVAL;
			}
			if (p->tok == T_END || p->tok == T_RPAREN ||
			    p->tok == T_OR || p->tok == T_AND) {
				query_free(left);
				return fail(p, at, "AND needs a term after it");
			}
		} else if (p->tok != T_ATOM && p->tok != T_NOT &&
			   p->tok != T_LPAREN) {
			break; /* implicit AND only before another term */
		}
		struct qnode *right;
		if (parse_unary(p, &right) < 0) {
			query_free(left);
			return -EINVAL;
		}
		struct qnode *q = node(Q_AND, pos);
		q->implicit = implicit;
		q->a = left;
		q->b = right;
		left = q;
	}
	*ret = left;
	return 0;
}

static int parse_or(struct parser *p, struct qnode **ret)
{
	struct qnode *left;
	if (parse_and(p, &left) < 0)
		return -EINVAL;
	while (p->tok == T_OR) {
		int pos = (int)p->tpos;
		size_t at = p->tpos;
		if (next(p) < 0) {
			query_free(left);
			return -EINVAL;
		}
		if (p->tok == T_END || p->tok == T_RPAREN || p->tok == T_OR ||
		    p->tok == T_AND) {
			query_free(left);
			return fail(p, at, "OR needs a term after it");
		}
		struct qnode *right;
		if (parse_and(p, &right) < 0) {
			query_free(left);
			return -EINVAL;
		}
		struct qnode *q = node(Q_OR, pos);
		q->a = left;
		q->b = right;
		left = q;
	}
	*ret = left;
	return 0;
}

int query_parse(const char *s, struct qnode **ret, char **ret_msg)
{
	struct parser p = {.s = s};
	struct qnode *q = NULL;
	int r = next(&p);
	if (r == 0 && p.tok == T_END)
		r = fail(&p, 0, "the query is empty");
	if (r == 0)
		r = parse_or(&p, &q);
	if (r == 0 && p.tok != T_END) {
		r = fail(&p, p.tpos,
			 p.tok == T_RPAREN ? "')' without '('"
					   : "unexpected text");
		q = query_free(q);
	}
	query_free(p.atom);
	if (r < 0) {
		*ret_msg = p.err ? p.err : xstrdup("Invalid query");
		return -EINVAL;
	}
	free(p.err);
	*ret = q;
	return 0;
}

struct qnode *query_free(struct qnode *q)
{
	if (!q)
		return NULL;
	query_free(q->a);
	query_free(q->b);
	free(q->text);
	free(q);
	return NULL;
}

static void dump(struct sbuf *b, const struct qnode *q)
{
	static const char *const names[] = {"word", "phrase", "tag", "folder",
					    "and",  "or",     "not"};
	sb_printf(b, "(%s", names[q->kind]);
	if (q->title)
		sb_puts(b, " title");
	if (q->text)
		sb_printf(b, " %s%s", q->text, q->prefix ? "*" : "");
	if (q->a) {
		sb_putc(b, ' ');
		dump(b, q->a);
	}
	if (q->b) {
		sb_putc(b, ' ');
		dump(b, q->b);
	}
	sb_putc(b, ')');
}

char *query_dump(const struct qnode *q)
{
	struct sbuf b = {0};
	dump(&b, q);
	return sb_steal(&b);
}

static bool positive(const struct qnode *q, bool negated)
{
	switch (q->kind) {
	case Q_WORD:
	case Q_PHRASE:
		return !negated;
	case Q_NOT:
		return positive(q->a, !negated);
	case Q_AND:
	case Q_OR:
		return positive(q->a, negated) || positive(q->b, negated);
	default:
		return false;
	}
}

bool query_has_positive_text(const struct qnode *q)
{
	return positive(q, false);
}
