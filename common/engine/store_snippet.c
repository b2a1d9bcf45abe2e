/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Snippets: the fragment of a hit's text around the query's first word,
 * the word marked, on one line; for CJK words (which FTS5's snippet does
 * not see), a fragment found in the note's text.
 */
#include "store_int.h"
#include "docz.h"
#include "ftsaux.h"
#include "u8.h"

#include <stdlib.h>
#include <string.h>

static char *marked_fragment(const char *text, const char *word)
{
	_cleanup_free_ char *fw = fold_key(word);
	size_t tl = strlen(text), wl = strlen(word);
	const char *hit = NULL;
	size_t hl = wl;
	/* Scan character starts; compare the folded window. */
	for (size_t i = 0; i < tl && !hit; i++) {
		if (((unsigned char)text[i] & 0xc0) == 0x80)
			continue;
		size_t w = wl <= tl - i ? wl : tl - i;
		_cleanup_free_ char *f = fold_key_n(text + i, w);
		if (strcmp(f, fw) == 0) {
			hit = text + i;
			hl = w;
		}
	}
	if (!hit)
		return NULL;
	size_t start = (size_t)(hit - text), end = start + hl;
	size_t from = start > 40 ? start - 40 : 0;
	size_t to = end + 80 < tl ? end + 80 : tl;
	while (from > 0 && ((unsigned char)text[from] & 0xc0) == 0x80)
		from--;
	while (to < tl && ((unsigned char)text[to] & 0xc0) == 0x80)
		to++;
	struct sbuf b = {0};
	if (from)
		sb_puts(&b, "\xe2\x80\xa6");
	sb_add(&b, text + from, start - from);
	sb_puts(&b, "**");
	sb_add(&b, hit, hl);
	sb_puts(&b, "**");
	sb_add(&b, text + end, to - end);
	if (to < tl)
		sb_puts(&b, "\xe2\x80\xa6");
	return sb_steal(&b);
}

void sto_first_cjk_word(const struct qnode *q, bool negated, const char **ret)
{
	if (*ret || !q)
		return;
	if (q->kind == Q_NOT)
		sto_first_cjk_word(q->a, !negated, ret);
	else if (q->kind == Q_AND || q->kind == Q_OR) {
		sto_first_cjk_word(q->a, negated, ret);
		sto_first_cjk_word(q->b, negated, ret);
	} else if (!negated && sto_cjk_atom(q) && !q->title) {
		*ret = q->text;
	}
}

/* Whitespace runs as one space, for a one-line snippet; without the
 * marks of headings and links, which cost bytes and say little. */
static char *one_line(const char *s)
{
	struct sbuf b = {0};
	bool space = false, line_start = true;
	for (const char *p = s; *p; p++) {
		if (*p == '\n' || *p == '\r' || *p == '\t' || *p == ' ') {
			space = b.len > 0;
			line_start |= *p == '\n';
			continue;
		}
		if (line_start && *p == '#') {
			const char *e = p;
			while (*e == '#')
				e++;
			if (*e == ' ') {
				p = e;
				continue;
			}
		}
		line_start = false;
		if ((p[0] == '[' && p[1] == '[') ||
		    (p[0] == ']' && p[1] == ']')) {
			p++;
			continue;
		}
		if (space)
			sb_putc(&b, ' ');
		space = false;
		sb_putc(&b, *p);
	}
	return b.s ? sb_steal(&b) : xstrdup("");
}

/* The snippet of a hit from its text's start (no hit in the body), or
 * around a CJK substring. */
static char *snippet_head(sqlite3 *db, const char *cjk, int64_t id,
			  sqlite3_blob **blob)
{
	sqlite3_stmt *st =
		cjk ? sto_stmt(db, "SELECT body FROM docs WHERE id = ?") : NULL;
	char *r = NULL;
	if (st) {
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) == SQLITE_ROW &&
		    sqlite3_column_text(st, 0))
			r = marked_fragment(
				(const char *)sqlite3_column_text(st, 0), cjk);
		sto_stmt_done(st);
	}
	struct docz_part part;
	if (!r && docz_read(db, "docz", "body", id, 0, 0, blob, &part) == 0) {
		/* The note's start: about 80 characters. */
		const char *body = part.text;
		size_t l = (size_t)part.len, keep = 0, nc = 0;
		while (keep < l && nc < 80)
			nc += ((unsigned char)body[++keep] & 0xc0) != 0x80;
		r = xasprintf("%.*s%s", (int)keep, body,
			      keep < l || part.more ? "\xe2\x80\xa6" : "");
		free(part.text);
	}
	return r;
}

/* A query's notes read, at most, to find the page's hits in one query
 * over the range of their ids: past that (a common word's notes between
 * them), the rest are found one query each. */
#define RANGE_ROWS 64

/* The snippets of the hits not yet got (ids in line) around the words of
 * match, from one query over its notes between the least and the
 * greatest of their ids (the snippet made only for a hit's note), until
 * RANGE_ROWS notes are read; got[i]: hit i's note was. */
static void snippets_ranged(sqlite3 *db, struct ptrvec *hits, const char *match,
			    sqlite3_blob **blob, bool *got)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	struct sbuf sql = {0};
	sb_puts(&sql, "SELECT rowid, CASE WHEN rowid IN (");
	for (size_t i = 0; i < hits->n; i++) {
		int64_t id = ((struct store_hit *)hits->v[i])->line;
		sb_printf(&sql, "%s?%zu", i ? ", " : "", i + 5);
		lo = id < lo ? id : lo;
		hi = id > hi ? id : hi;
	}
	sb_puts(&sql, ") THEN vsnippet(fts, 1, 'docz', 'body', 2147483647,"
		      " ?2) END FROM fts WHERE fts MATCH ?1 AND rowid >= ?3"
		      " AND rowid <= ?4");
	sqlite3_stmt *st = sto_stmt(db, sql.s);
	sb_free(&sql);
	if (!st)
		return;
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_pointer(st, 2, blob, FTSAUX_BLOB, NULL);
	sqlite3_bind_int64(st, 3, lo);
	sqlite3_bind_int64(st, 4, hi);
	for (size_t i = 0; i < hits->n; i++)
		sqlite3_bind_int64(st, (int)i + 5,
				   ((struct store_hit *)hits->v[i])->line);
	for (int rows = 0; rows < RANGE_ROWS && sqlite3_step(st) == SQLITE_ROW;
	     rows++) {
		int64_t id = sqlite3_column_int64(st, 0);
		for (size_t i = 0; i < hits->n; i++) {
			struct store_hit *h = hits->v[i];
			if (got[i] || h->line != id)
				continue;
			got[i] = true;
			const char *t =
				(const char *)sqlite3_column_text(st, 1);
			if (t && *t)
				h->snippet = xstrdup(t);
		}
	}
	sto_stmt_done(st);
}

/*
 * The hits' snippets, one line each: those the ranked query made, else
 * around the words of match (in one query over their range of ids, else
 * a statement prepared once for all hits, and one handle on their stored
 * texts), else from the start of the text.
 */
void sto_snippets(sqlite3 *db, struct ptrvec *hits, const char *match,
		  const char *cjk)
{
	/* One handle on the stored texts for all the hits: opening one
	 * per hit cost more than reading its text. */
	sqlite3_blob *blob = NULL;
	bool *got = xcalloc(hits->n + 1, sizeof(*got));
	size_t left = 0;
	for (size_t i = 0; i < hits->n; i++) {
		got[i] = ((struct store_hit *)hits->v[i])->snippet != NULL;
		left += !got[i];
	}
	if (match && left > 1)
		snippets_ranged(db, hits, match, &blob, got);
	sqlite3_stmt *st =
		match ? sto_stmt(db, "SELECT vsnippet(fts, 1, 'docz', 'body',"
				     " 2147483647, ?3) FROM fts WHERE fts"
				     " MATCH ?1 AND rowid = ?2")
		      : NULL;
	if (st)
		sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	for (size_t i = 0; i < hits->n; i++) {
		struct store_hit *h = hits->v[i];
		int64_t id = h->line;
		h->line = 0;
		if (!got[i] && st) {
			sqlite3_bind_int64(st, 2, id);
			sqlite3_bind_pointer(st, 3, &blob, FTSAUX_BLOB, NULL);
			const char *t =
				sqlite3_step(st) == SQLITE_ROW
					? (const char *)sqlite3_column_text(st,
									    0)
					: NULL;
			if (t && *t)
				h->snippet = xstrdup(t);
			sqlite3_reset(st);
		}
		if (h->snippet && !*h->snippet) {
			free(h->snippet);
			h->snippet = NULL;
		}
		char *r = h->snippet ? h->snippet
				     : snippet_head(db, cjk, id, &blob);
		h->snippet = one_line(r ? r : "");
		free(r);
	}
	free(got);
	sto_stmt_done(st);
	sqlite3_blob_close(blob);
}

/* The ranked rows: path, score, id, and the snippet if the query made
 * one (an empty one when the note's body has no hit). */
