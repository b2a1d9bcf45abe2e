/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A parsed query (query.h) as the store searches it: FTS5 MATCH
 * expressions for words and phrases (with the stems' languages the
 * tokenizer expects), trigram expressions for CJK text and substrings,
 * SQL conditions for the rest (tags, folders, properties), and the rank
 * terms.
 */
#include "store_int.h"
#include "stem.h"
#include "tokenizer.h"
#include "u8.h"

#include <stdlib.h>
#include <string.h>

/* ---- queries --------------------------------------------------------------
 */

static void param(struct sql *q, char *owned)
{
	pv_push(&q->params, owned);
	sb_printf(&q->s, "?%zu", FIRST_PARAM - 1 + q->params.n);
}

void sto_sql_free(struct sql *q)
{
	sb_free(&q->s);
	for (size_t i = 0; i < q->params.n; i++)
		free(q->params.v[i]);
	pv_free(&q->params);
}

void sto_bind_params(sqlite3_stmt *st, const struct sql *q)
{
	for (size_t i = 0; i < q->params.n; i++)
		sqlite3_bind_text(st, FIRST_PARAM + (int)i, q->params.v[i], -1,
				  SQLITE_STATIC);
}

/* An FTS5 string: "..." with quotes doubled. */
static void fts_quote(struct sbuf *b, const char *t, size_t n)
{
	sb_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '"')
			sb_putc(b, '"');
		sb_putc(b, t[i]);
	}
	sb_putc(b, '"');
}

/* Has a letter or digit: something the word tokenizer keeps. */
static bool searchable(const char *t)
{
	size_t n = strlen(t);
	for (size_t i = 0; i < n;) {
		int32_t c;
		int l = u8_decode(t + i, n - i, &c);
		if (l < 0)
			return false;
		if (u8_is_tag_char(c) && c != '/' && c != '-' && c != '_')
			return true;
		i += (size_t)l;
	}
	return false;
}

bool sto_text_atom(const struct qnode *q)
{
	return q->kind == Q_WORD || q->kind == Q_PHRASE;
}

/* A word or phrase with a CJK character standing alone (between other
 * text): character pairs cannot find it; substrings can. */
bool sto_cjk_atom(const struct qnode *q)
{
	if (!sto_text_atom(q))
		return false;
	const char *t = q->text;
	size_t n = strlen(t);
	int run = 0;
	for (size_t i = 0; i <= n;) {
		int32_t c = 0;
		int l = i < n ? u8_decode(t + i, n - i, &c) : 1;
		if (l <= 0)
			l = 1;
		if (i < n && tokenizer_is_cjk(c)) {
			run++;
		} else {
			if (run == 1)
				return true;
			run = 0;
		}
		i += (size_t)l;
	}
	return false;
}

/* Trigram query for a substring of the folded text: "abc" AND "bcd" ...
 * (detail=none has no phrases; the caller checks the text). NULL below
 * three characters. */
char *sto_trigrams(const char *text)
{
	_cleanup_free_ char *t = fold_key(text);
	struct ptrvec starts = {0};
	for (const char *p = t; *p; p++)
		if (((unsigned char)*p & 0xc0) != 0x80)
			pv_push(&starts, (void *)p);
	size_t n = starts.n;
	if (n < 3) {
		pv_free(&starts);
		return NULL;
	}
	size_t ngrams = n - 2;
	size_t step = ngrams > MAX_TRIGRAMS ? ngrams / MAX_TRIGRAMS : 1;
	struct sbuf b = {0};
	for (size_t i = 0; i < ngrams; i += step) {
		const char *a = starts.v[i];
		const char *e = i + 3 < n ? (const char *)starts.v[i + 3]
					  : t + strlen(t);
		if (b.len)
			sb_puts(&b, " AND ");
		fts_quote(&b, a, (size_t)(e - a));
	}
	pv_free(&starts);
	return sb_steal(&b);
}

_Thread_local unsigned sto_query_langs = LANG_ALL;

/* A word for the tokenizer, with the languages of its stems ahead. */
static void fts_word(struct sbuf *b, const char *t)
{
	struct sbuf w = {0};
	sb_printf(&w, "%c%02x%s", TOKENIZER_LANGS, sto_query_langs & 0xff, t);
	fts_quote(b, w.s, w.len);
	sb_free(&w);
}

/* FTS5 expression of a text atom (not CJK). A prefix also matches the
 * word itself, as another phrase, so that the word ranks above the
 * words it begins. */
void sto_fts_atom(struct sbuf *b, const struct qnode *q)
{
	const char *col = q->title ? "title : " : "";
	if (q->prefix) {
		sb_printf(b, "(%s", col);
		fts_word(b, q->text);
		sb_printf(b, " OR %s", col);
		fts_quote(b, q->text, strlen(q->text));
		sb_puts(b, " *)");
		return;
	}
	sb_puts(b, col);
	fts_word(b, q->text);
}

void sto_fts_prefix_phrases(const struct qnode *q, char **ret_word,
			    char **ret_prefix)
{
	const char *col = q->title ? "title : " : "";
	struct sbuf w = {0}, p = {0};
	sb_puts(&w, col);
	fts_word(&w, q->text);
	sb_puts(&p, col);
	fts_quote(&p, q->text, strlen(q->text));
	sb_puts(&p, " *");
	*ret_word = sb_steal(&w);
	*ret_prefix = sb_steal(&p);
}

/* Translatable into one FTS5 expression: words and phrases (not CJK)
 * under AND and OR. */
bool sto_ftsable(const struct qnode *q)
{
	if (q->kind == Q_AND || q->kind == Q_OR)
		return sto_ftsable(q->a) && sto_ftsable(q->b);
	return sto_text_atom(q) && !sto_cjk_atom(q);
}

/* The operands of a chain of one operator, flat: FTS5's parser has a
 * small stack, too small for 256 nested parentheses. */
static void fts_chain(struct sbuf *b, const struct qnode *q, enum qkind k)
{
	if (q->kind == k) {
		fts_chain(b, q->a, k);
		sb_puts(b, k == Q_AND ? " AND " : " OR ");
		fts_chain(b, q->b, k);
	} else if (q->kind == Q_AND || q->kind == Q_OR) {
		sb_putc(b, '(');
		fts_chain(b, q, q->kind);
		sb_putc(b, ')');
	} else {
		sto_fts_atom(b, q);
	}
}

void sto_fts_expr(struct sbuf *b, const struct qnode *q)
{
	if (q->kind == Q_AND || q->kind == Q_OR) {
		sb_putc(b, '(');
		fts_chain(b, q, q->kind);
		sb_putc(b, ')');
	} else {
		sto_fts_atom(b, q);
	}
}

/* A condition on notes n for one atom. */
static void where_atom(struct sql *out, const struct qnode *q, bool cs)
{
	struct sbuf *s = &out->s;
	if (q->kind == Q_TAG || q->kind == Q_FOLDER) {
		char *f = fold_key(q->text);
		bool tag = q->kind == Q_TAG;
		/* x, or x/...: "x/" < "x/..." < "x0" ('0' follows '/'). */
		if (tag && out->few) {
			/* Each note's own few tags, not every note with
			 * the tag. */
			sb_puts(s, "EXISTS (SELECT 1 FROM tags WHERE note ="
				   " n.id AND (tag = ");
			param(out, xstrdup(f));
			sb_puts(s, " OR (tag > ");
			param(out, xasprintf("%s/", f));
			sb_puts(s, " AND tag < ");
			param(out, xasprintf("%s0", f));
			sb_puts(s, ")))");
			free(f);
			return;
		}
		sb_puts(s, tag ? "n.id IN (SELECT note FROM tags WHERE tag = "
			       : "(n.folder = ");
		param(out, xstrdup(f));
		sb_puts(s, tag ? " OR (tag > " : " OR (n.folder > ");
		param(out, xasprintf("%s/", f));
		sb_puts(s, tag ? " AND tag < " : " AND n.folder < ");
		param(out, xasprintf("%s0", f));
		sb_puts(s, "))");
		free(f);
		return;
	}
	if (sto_cjk_atom(q)) {
		/* Substrings: the trigram index narrows (three characters
		 * or more), the folded text decides. */
		_cleanup_free_ char *grams = sto_trigrams(q->text);
		sb_puts(s, "(vcontains(n.title, ");
		param(out, fold_key(q->text));
		sb_puts(s, ")");
		if (!q->title) {
			sb_puts(s, " OR (");
			if (grams && out->sub_ok) {
				sb_puts(s, "n.id IN (SELECT rowid FROM sub "
					   "WHERE sub MATCH ");
				param(out, TAKE_PTR(grams));
				sb_puts(s, ")");
			} else {
				sb_puts(s, "n.cjk");
			}
			sb_puts(s, " AND vcontains((SELECT body FROM docs "
				   "WHERE id = n.id), ");
			param(out, fold_key(q->text));
			sb_puts(s, "))");
		}
		sb_puts(s, ")");
		return;
	}
	struct sbuf e = {0};
	sto_fts_atom(&e, q);
	sb_puts(s, "(n.id IN (SELECT rowid FROM fts WHERE fts MATCH ");
	param(out, sb_steal(&e));
	sb_puts(s, ")");
	if (cs) {
		/* Case matters: the text holds the term as written. */
		sb_puts(s, " AND (instr((SELECT title FROM docs WHERE id = "
			   "n.id), ");
		param(out, xstrdup(q->text));
		sb_puts(s, ") > 0");
		if (!q->title) {
			sb_puts(s, " OR instr((SELECT body FROM docs WHERE "
				   "id = n.id), ");
			param(out, xstrdup(q->text));
			sb_puts(s, ") > 0");
		}
		sb_puts(s, ")");
	}
	sb_puts(s, ")");
}

void sto_where(struct sql *out, const struct qnode *q, bool cs)
{
	switch (q->kind) {
	case Q_AND:
	case Q_OR:
		sb_putc(&out->s, '(');
		sto_where(out, q->a, cs);
		sb_puts(&out->s, q->kind == Q_AND ? " AND " : " OR ");
		sto_where(out, q->b, cs);
		sb_putc(&out->s, ')');
		break;
	case Q_NOT:
		sb_puts(&out->s, "(NOT ");
		sto_where(out, q->a, cs);
		sb_putc(&out->s, ')');
		break;
	default:
		where_atom(out, q, cs);
	}
}

/* The ranking expression: every positive word atom, OR'ed. */
void sto_rank_terms(struct sbuf *b, const struct qnode *q, bool negated)
{
	if (q->kind == Q_NOT) {
		sto_rank_terms(b, q->a, !negated);
	} else if (q->kind == Q_AND || q->kind == Q_OR) {
		sto_rank_terms(b, q->a, negated);
		sto_rank_terms(b, q->b, negated);
	} else if (sto_text_atom(q) && !negated && !sto_cjk_atom(q)) {
		if (b->len)
			sb_puts(b, " OR ");
		sto_fts_atom(b, q);
	}
}

/* Drop atoms with nothing to search for ("&", "-"): they would match
 * everything or nothing. Returns what is left (maybe NULL). */
struct qnode *sto_prune(struct qnode *q)
{
	if (!q)
		return NULL;
	if (sto_text_atom(q)) {
		if (searchable(q->text) ||
		    sto_has_cjk(q->text, strlen(q->text)))
			return q;
		return query_free(q);
	}
	if (q->kind == Q_TAG || q->kind == Q_FOLDER)
		return q;
	q->a = sto_prune(q->a);
	if (q->kind == Q_NOT) {
		if (q->a)
			return q;
		return query_free(q);
	}
	q->b = sto_prune(q->b);
	if (q->a && q->b)
		return q;
	struct qnode *keep = q->a ? q->a : q->b;
	q->a = q->b = NULL;
	query_free(q);
	return keep;
}

struct qnode *sto_copy(const struct qnode *q)
{
	if (!q)
		return NULL;
	struct qnode *c = xcalloc(1, sizeof(*c));
	*c = *q;
	c->text = q->text ? xstrdup(q->text) : NULL;
	c->a = sto_copy(q->a);
	c->b = sto_copy(q->b);
	return c;
}
