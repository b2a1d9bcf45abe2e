/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The expression lexer: tokens (numbers, strings, identifiers, [[links]],
 * #tags, ISO dates, operators) and the parser handle the query parsers
 * built on it step through.
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

bool eparser_uses_this(const struct eparser *p)
{
	return p->uses_this;
}

static bool ident_start(unsigned char c)
{
	return isalpha(c) || c == '_' || c >= 0x80;
}

static bool ident_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c >= 0x80;
}

static bool tag_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '-' || c == '/' || c >= 0x80;
}

/* A date literal at s: its length, or 0. */
static size_t date_len(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && i < 4 && isdigit((unsigned char)s[i]))
		i++;
	if (i != 4 || i >= n || s[i] != '-' || i + 1 >= n ||
	    !isdigit((unsigned char)s[i + 1]))
		return 0;
	size_t e = i;
	while (e < n &&
	       (isdigit((unsigned char)s[e]) || s[e] == '-' || s[e] == 'T' ||
		s[e] == ':' || s[e] == '.' || s[e] == 'Z' || s[e] == '+'))
		e++;
	while (e > i) {
		int64_t ms;
		bool tm;
		if (qv_parse_date(s, e, &ms, &tm) &&
		    (e >= n || !ident_char((unsigned char)s[e])))
			return e;
		e--;
	}
	return 0;
}

/* The scanners of lex(): each reads one token from s + *i (its first
 * character known), advances *i and fills t. 0, or -EINVAL. */

static int lex_number(struct eparser *p, size_t *pi, struct tok *t)
{
	const char *s = p->src;
	size_t n = p->len, st = *pi, i = *pi;
	while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '.'))
		i++;
	if (i < n && (s[i] == 'e' || s[i] == 'E') && i + 1 < n &&
	    (isdigit((unsigned char)s[i + 1]) || s[i + 1] == '-')) {
		i += 2;
		while (i < n && isdigit((unsigned char)s[i]))
			i++;
	}
	_cleanup_free_ char *num = xstrndup(s + st, i - st);
	char *end;
	t->kind = TK_NUM;
	t->num = strtod(num, &end);
	if (*end)
		return eparser_fail(p, "invalid number %s at offset %zu",
				    QUOTE(num), st);
	*pi = i;
	return 0;
}

static int lex_string(struct eparser *p, size_t *pi, struct tok *t)
{
	const char *s = p->src;
	size_t n = p->len, st = *pi, i = *pi;
	char q = s[i];
	struct sbuf b = {0};
	i++;
	while (i < n && s[i] != q) {
		if (s[i] == '\\' && i + 1 < n) {
			i++;
			char e = s[i];
			sb_putc(&b, e == 'n' ? '\n' : e == 't' ? '\t' : e);
		} else {
			sb_putc(&b, s[i]);
		}
		i++;
	}
	if (i >= n) {
		sb_free(&b);
		return eparser_fail(p,
				    "unterminated string starting at "
				    "offset %zu",
				    st);
	}
	i++;
	t->kind = TK_STR;
	t->text = qarena_strndup(p->ar, sb_str(&b), b.len);
	t->num = (double)b.len;
	sb_free(&b);
	*pi = i;
	return 0;
}

static int lex_link(struct eparser *p, size_t *pi, struct tok *t)
{
	const char *s = p->src;
	size_t n = p->len, i = *pi;
	const char *e = memmem(s + i + 2, n - i - 2, "]]", 2);
	if (!e)
		return eparser_fail(p, "unterminated [[link at offset %zu", i);
	size_t tl = (size_t)(e - (s + i + 2));
	const char *bar = memchr(s + i + 2, '|', tl);
	if (bar)
		tl = (size_t)(bar - (s + i + 2));
	const char *hash = memchr(s + i + 2, '#', tl);
	if (hash)
		tl = (size_t)(hash - (s + i + 2));
	t->kind = TK_LINK;
	t->text = qarena_strndup(p->ar, s + i + 2, tl);
	*pi = (size_t)(e - s) + 2;
	return 0;
}

static int lex_op(struct eparser *p, size_t *pi, struct tok *t)
{
	static const char *const OPS2[] = {"==", "!=", "<=", ">=", "&&", "||"};
	const char *s = p->src;
	size_t n = p->len, st = *pi, i = *pi;
	unsigned char c = (unsigned char)s[i];
	t->kind = TK_OP;
	i++;
	for (size_t k = 0; k < ARRAY_SIZE(OPS2); k++)
		if (i < n && s[st] == OPS2[k][0] && s[i] == OPS2[k][1]) {
			i++;
			break;
		}
	if (!strchr("=!<>+-*/%()[],.{}:&|", c) || (c == '&' && i - st < 2) ||
	    (c == '|' && i - st < 2))
		return eparser_fail(p,
				    "unexpected character '%c' at "
				    "offset %zu",
				    c >= 0x20 && c < 0x7f ? c : '?', st);
	*pi = i;
	return 0;
}

static int lex(struct eparser *p)
{
	const char *s = p->src;
	size_t n = p->len, i = p->pos;
	while (i < n && isspace((unsigned char)s[i]))
		i++;
	struct tok t = {.s = s + i};
	if (i >= n) {
		t.kind = TK_END;
		p->cur = t;
		p->have = true;
		return 0;
	}
	unsigned char c = (unsigned char)s[i];
	size_t st = i;
	size_t dl;
	int r = 0;
	if ((dl = date_len(s + i, n - i))) {
		t.kind = TK_DATE;
		i += dl;
		t.text = qarena_strndup(p->ar, s + st, dl);
	} else if (isdigit(c) || (c == '.' && i + 1 < n &&
				  isdigit((unsigned char)s[i + 1]))) {
		r = lex_number(p, &i, &t);
	} else if (c == '"' || c == '\'') {
		r = lex_string(p, &i, &t);
	} else if (c == '[' && i + 1 < n && s[i + 1] == '[') {
		r = lex_link(p, &i, &t);
	} else if (c == '#' && i + 1 < n && tag_char((unsigned char)s[i + 1])) {
		i++;
		while (i < n && tag_char((unsigned char)s[i]))
			i++;
		t.kind = TK_TAG;
		t.text = qarena_strndup(p->ar, s + st + 1, i - st - 1);
	} else if (ident_start(c)) {
		while (i < n &&
		       (ident_char((unsigned char)s[i]) ||
			(s[i] == '-' && p->dialect != EXPR_BASES && i + 1 < n &&
			 ident_start((unsigned char)s[i + 1]))))
			i++;
		t.kind = TK_IDENT;
		t.text = qarena_strndup(p->ar, s + st, i - st);
	} else {
		r = lex_op(p, &i, &t);
	}
	if (r < 0)
		return r;
	t.len = i - st;
	p->cur = t;
	p->pos = i;
	p->have = true;
	return 0;
}

struct eparser *eparser_new(const char *src, size_t len,
			    enum expr_dialect dialect, struct qarena *ar)
{
	struct eparser *p = xcalloc(1, sizeof(*p));
	p->src = src;
	p->len = len;
	p->dialect = dialect;
	p->ar = ar;
	return p;
}

struct eparser *eparser_free(struct eparser *p)
{
	if (p) {
		free(p->err);
		free(p);
	}
	return NULL;
}

int eparser_fail(struct eparser *p, const char *fmt, ...)
{
	if (!p->err) {
		struct sbuf b = {0};
		va_list ap;
		va_start(ap, fmt);
		sb_vprintf(&b, fmt, ap);
		va_end(ap);
		p->err = sb_steal(&b);
	}
	/* Nothing after an error is read. */
	p->cur = (struct tok){.kind = TK_END, .s = p->src + p->len};
	p->have = true;
	p->pos = p->len;
	return -EINVAL;
}

const char *eparser_error(const struct eparser *p)
{
	return p->err;
}

const struct tok *eparser_peek(struct eparser *p)
{
	if (!p->have)
		lex(p);
	return &p->cur;
}

void eparser_skip(struct eparser *p)
{
	eparser_peek(p);
	p->have = false;
}

size_t eparser_offset(const struct eparser *p)
{
	return p->have ? (size_t)(p->cur.s - p->src) : p->pos;
}

bool eparser_keyword(struct eparser *p, const char *kw)
{
	const struct tok *t = eparser_peek(p);
	if (t->kind != TK_IDENT || strcasecmp(t->text, kw))
		return false;
	eparser_skip(p);
	return true;
}

bool eparser_op(struct eparser *p, const char *op)
{
	const struct tok *t = eparser_peek(p);
	if (t->kind != TK_OP || t->len != strlen(op) ||
	    memcmp(t->s, op, t->len))
		return false;
	eparser_skip(p);
	return true;
}
