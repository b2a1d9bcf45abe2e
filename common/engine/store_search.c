/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The store's searches: store_search plans a parsed query (FTS5 drives
 * and ranks what it can, SQL conditions filter the rest), counts the
 * hits, reads the ranked page and its snippets in one snapshot;
 * store_search_text finds a text anywhere in the notes (the trigram
 * index, the rest checked).
 */
#include "store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sto_search_error(struct store *s, sqlite3 *db, char **ret_msg)
{
	int code = sqlite3_errcode(db);
	if (code == SQLITE_INTERRUPT) {
		*ret_msg = xstrdup("Cancelled");
		return -ECANCELED;
	}
	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
		atomic_store(&s->failed, true);
		*ret_msg =
			xstrdup("The search index is damaged; it is being "
				"rebuilt from the vault. Try again shortly.");
	} else {
		*ret_msg = xasprintf("Search failed: %s", sqlite3_errmsg(db));
	}
	return -EIO;
}

/* The rows of a ranked query (path, score, id [, snippet]) as hits. */
static int collect(struct store *s, sqlite3 *db, sqlite3_stmt *st,
		   struct ptrvec *hits, char **ret_msg)
{
	int r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_hit *h = xcalloc(1, sizeof(*h));
		h->path = xstrdup((const char *)sqlite3_column_text(st, 0));
		h->score = sqlite3_column_double(st, 1);
		/* The id rides in line until the snippet is made. */
		h->line = (int)sqlite3_column_int64(st, 2);
		if (sqlite3_column_count(st) > 3) {
			const char *t =
				(const char *)sqlite3_column_text(st, 3);
			h->snippet = xstrdup(t ? t : "");
		}
		pv_push(hits, h);
	}
	return r == SQLITE_DONE ? 0 : sto_search_error(s, db, ret_msg);
}

static size_t count_rows(struct store *s, sqlite3 *db, const char *sql,
			 const char *match, const struct sql *w, int *ret_r,
			 char **ret_msg)
{
	sqlite3_stmt *st = sto_stmt(db, sql);
	size_t n = 0;
	if (!st) {
		*ret_r = sto_search_error(s, db, ret_msg);
		return 0;
	}
	if (match)
		sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sto_bind_params(st, w);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = (size_t)sqlite3_column_int64(st, 0);
	else
		*ret_r = sto_search_error(s, db, ret_msg);
	sto_stmt_done(st);
	return n;
}

static void hand_over(struct ptrvec *hits, struct store_hit **ret,
		      size_t *ret_n)
{
	struct store_hit *arr = xcalloc(hits->n + 1, sizeof(*arr));
	for (size_t i = 0; i < hits->n; i++) {
		arr[i] = *(struct store_hit *)hits->v[i];
		free(hits->v[i]);
	}
	*ret = arr;
	*ret_n = hits->n;
	pv_free(hits);
}

void sto_drop_hits(struct ptrvec *hits)
{
	for (size_t i = 0; i < hits->n; i++) {
		struct store_hit *h = hits->v[i];
		free(h->path);
		free(h->snippet);
		free(h);
	}
	pv_free(hits);
}

/* The page of the ranked query sel (driver as ?1, the conditions of w
 * from FIRST_PARAM). */
static int ranked(struct store *s, sqlite3 *db, const char *sel,
		  const char *driver, const struct sql *w, size_t offset,
		  size_t limit, struct ptrvec *hits, char **ret_msg)
{
	sqlite3_stmt *st = sto_stmt(db, sel);
	if (!st)
		return sto_search_error(s, db, ret_msg);
	if (driver)
		sqlite3_bind_text(st, 1, driver, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)offset);
	sto_bind_params(st, w);
	int r = collect(s, db, st, hits, ret_msg);
	sto_stmt_done(st);
	return r;
}

static bool has_prefix(const struct qnode *q)
{
	return q && (q->prefix || has_prefix(q->a) || has_prefix(q->b));
}

/* The plan of query q: the MATCH expression that drives it (NULL: none)
 * and, in w, the SQL conditions for the rest. */
static char *plan(struct store *s, const struct qnode *q, bool cs,
		  struct sql *w)
{
	/*
	 * Plan: the top-level AND's parts that FTS5 can evaluate (words,
	 * phrases, AND/OR of them; negated ones too) become one MATCH
	 * expression that drives the query and ranks it; the rest (tags,
	 * folders, CJK substrings, OR across kinds) are SQL conditions.
	 * Without a positive FTS part, the notes table drives and the
	 * words that are there still rank through a LEFT JOIN.
	 */
	struct ptrvec parts = {0};
	sto_conjuncts(q, &parts);
	struct sbuf pos = {0}, neg = {0};
	*w = (struct sql){.sub_ok = store_sub_ready(s)};
	for (size_t i = 0; i < parts.n && !cs; i++)
		w->few |= sto_ftsable(parts.v[i]);
	for (size_t i = 0; i < parts.n; i++) {
		const struct qnode *c = parts.v[i];
		bool to_fts = false;
		if (sto_ftsable(c)) {
			if (pos.len)
				sb_puts(&pos, " AND ");
			sto_fts_expr(&pos, c);
			to_fts = !cs;
		} else if (c->kind == Q_NOT && sto_ftsable(c->a) && !cs) {
			sb_puts(&neg, " NOT ");
			sto_fts_expr(&neg, c->a);
			to_fts = true;
		}
		if (!to_fts) {
			sb_puts(&w->s, w->s.len ? " AND " : "");
			sto_where(w, c, cs);
		}
	}
	pv_free(&parts);
	char *match = NULL;
	if (pos.len) {
		match = neg.len ? xasprintf("(%s)%s", pos.s, neg.s)
				: xstrdup(pos.s);
	} else {
		/* Negated words without a positive one: SQL conditions. */
		struct ptrvec again = {0};
		sto_conjuncts(q, &again);
		sto_sql_free(w);
		*w = (struct sql){.sub_ok = store_sub_ready(s)};
		for (size_t i = 0; i < again.n; i++) {
			sb_puts(&w->s, w->s.len ? " AND " : "");
			sto_where(w, again.v[i], cs);
		}
		pv_free(&again);
	}
	sb_free(&pos);
	sb_free(&neg);
	return match;
}

/* The page's query (sel) and the count's (cnt) for the plan's MATCH
 * expression and conditions w (words alone without a prefix are
 * sto_topk's); ranks: the query has words to rank by. */
static void selects(const char *match, const struct sql *w, bool ranks,
		    char **ret_sel, char **ret_cnt)
{
	char *sel, *cnt;
	const char *cond = w->s.len ? w->s.s : "1";
	if (match && !w->s.len) {
		/* Words only, with a prefix (sto_topk's snippets would
		 * expand it once per result): FTS5 ranks and keeps the page,
		 * the snippets are made for it as it is read. */
		sel = xstrdup(
			"SELECT n.path, -r.rank, n.id, r.snip FROM"
			" (SELECT rowid, rank, vsnippet(fts, 1, 'docz',"
			" 'body', 2147483647) AS snip FROM fts WHERE fts"
			" MATCH ?1 AND rank MATCH '" RANK "' ORDER BY"
			" rank LIMIT ?2 OFFSET ?3) r JOIN notes n ON"
			" n.id = r.rowid ORDER BY r.rank, n.name, n.path");
		cnt = xstrdup("SELECT count(*) FROM fts WHERE fts MATCH ?1");
	} else if (match) {
		sel = xasprintf(
			"SELECT n.path, -fts.rank, n.id FROM fts JOIN notes"
			" n ON n.id = fts.rowid WHERE fts MATCH ?1 AND"
			" fts.rank MATCH '" RANK "' AND"
			" (%s) ORDER BY fts.rank, n.name, n.path"
			" LIMIT ?2 OFFSET ?3",
			cond);
		cnt = xasprintf(
			"SELECT count(*) FROM fts JOIN notes n ON n.id ="
			" fts.rowid WHERE fts MATCH ?1 AND (%s)",
			cond);
	} else if (ranks) {
		sel = xasprintf(
			"SELECT n.path, coalesce(-r.rank, 0) AS score,"
			" n.id FROM notes n LEFT JOIN (SELECT rowid, rank"
			" FROM fts WHERE fts MATCH ?1 AND rank MATCH"
			" '" RANK "') r ON r.rowid = n.id"
			" WHERE %s ORDER BY score DESC, n.name, n.path"
			" LIMIT ?2 OFFSET ?3",
			cond);
		cnt = xasprintf("SELECT count(*) FROM notes n WHERE ?1 NOTNULL"
				" AND %s",
				cond);
	} else {
		sel = xasprintf("SELECT n.path, 0, n.id FROM notes n WHERE"
				" ?1 ISNULL AND %s ORDER BY n.name, n.path"
				" LIMIT ?2 OFFSET ?3",
				cond);
		cnt = xasprintf("SELECT count(*) FROM notes n WHERE ?1 ISNULL"
				" AND %s",
				cond);
	}
	*ret_sel = sel;
	*ret_cnt = cnt;
}

int store_search(struct store *s, const struct qnode *query, bool cs,
		 size_t offset, size_t limit, struct store_hit **ret,
		 size_t *ret_n, size_t *ret_total, char **ret_msg)
{
	struct qnode *q = sto_prune(sto_copy(query));
	if (!q) {
		*ret_msg = xstrdup("The query has no words to search for");
		return -EINVAL;
	}
	unsigned stop = sto_query_stop_langs(q);
	sto_query_langs = sto_query_stem_langs(stop);
	q = sto_relax(q, stop);
	if (!cs) {
		sqlite3 *tdb = sto_acquire(s);
		if (tdb) {
			sto_fix_typos(tdb, q);
			sto_release(s, tdb);
		}
	}
	struct sql w = {0};
	_cleanup_free_ char *match = plan(s, q, cs, &w);
	struct sbuf rank = {0};
	sto_rank_terms(&rank, q, false);
	const char *cjk = NULL;
	sto_first_cjk_word(q, false, &cjk);

	_cleanup_free_ char *sel = NULL, *cnt = NULL;
	/* A prefix alone: sto_topk too (its snippets in one query). */
	bool topk = match && !w.s.len &&
		    (!has_prefix(q) ||
		     (sto_text_atom(q) && q->prefix && !q->title));
	if (!topk)
		selects(match, &w, rank.len > 0, &sel, &cnt);
	const char *driver = match ? match : rank.len ? rank.s : NULL;

	int r = 0;
	struct ptrvec hits = {0};
	size_t total = 0;
	uint64_t gen = atomic_load(&s->gen);
	sqlite3 *db = sto_acquire(s);
	if (!db) {
		*ret_msg = xstrdup("Full-text search: cannot open the index");
		r = -EIO;
		goto out;
	}
	/* One snapshot for the total, the words' counts and the page (the
	 * bound that spares ranking every hit relies on it). */
	bool txn = sto_run_kept(db, "BEGIN");
	if (topk) {
		r = sto_topk(s, db, match, q, gen, offset, limit, &hits, &total,
			     ret_msg);
	} else {
		total = count_rows(s, db, cnt, driver, &w, &r, ret_msg);
		if (r == 0)
			r = ranked(s, db, sel, driver, &w, offset, limit, &hits,
				   ret_msg);
	}
	if (r == 0)
		sto_snippets(db, &hits, rank.len ? rank.s : NULL, cjk);
	if (txn && !sto_run_kept(db, "COMMIT"))
		sto_run_kept(db, "ROLLBACK");
out:
	if (db)
		sto_release(s, db);
	if (r == 0) {
		hand_over(&hits, ret, ret_n);
		*ret_total = total;
	} else {
		sto_drop_hits(&hits);
	}
	sb_free(&rank);
	sto_sql_free(&w);
	query_free(q);
	return r;
}

int store_search_text(struct store *s, const char *query, size_t offset,
		      size_t limit, struct store_hit **ret, size_t *ret_n,
		      size_t *ret_total, char **ret_msg)
{
	_cleanup_free_ char *fq = fold_key(query);
	_cleanup_free_ char *grams =
		store_sub_ready(s) ? sto_trigrams(query) : NULL;
	/* Three characters or more: the trigram index finds the candidates;
	 * shorter ones (or while the trigram index is still being filled)
	 * read every note's text (from the index, not the vault). The
	 * folded text decides. */
	const char *from =
		grams ? "FROM sub JOIN notes n ON n.id = sub.rowid"
			" JOIN docs d ON d.id = n.id WHERE sub MATCH ?1"
			" AND vcontains(d.body, ?4)"
		      : "FROM notes n JOIN docs d ON d.id = n.id"
			" WHERE ?1 ISNULL AND vcontains(d.body, ?4)";
	_cleanup_free_ char *csql = xasprintf("SELECT count(*) %s", from);
	_cleanup_free_ char *ssql =
		xasprintf("SELECT n.path, d.body, n.body_line %s ORDER BY"
			  " n.name, n.path LIMIT ?2 OFFSET ?3",
			  from);
	struct sql w = {0};
	pv_push(&w.params, xstrdup(fq));
	sqlite3 *db = sto_acquire(s);
	if (!db) {
		sto_sql_free(&w);
		*ret_msg = xstrdup("Text search: cannot open the index");
		return -EIO;
	}
	int r = 0;
	struct ptrvec hits = {0};
	size_t total = count_rows(s, db, csql, grams, &w, &r, ret_msg);
	sqlite3_stmt *st = r == 0 ? sto_stmt(db, ssql) : NULL;
	if (r == 0 && !st)
		r = sto_search_error(s, db, ret_msg);
	if (r == 0) {
		if (grams)
			sqlite3_bind_text(st, 1, grams, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)offset);
		sto_bind_params(st, &w);
		int sr;
		while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
			struct store_hit *h = xcalloc(1, sizeof(*h));
			h->path = xstrdup(
				(const char *)sqlite3_column_text(st, 0));
			const char *body =
				(const char *)sqlite3_column_text(st, 1);
			int at = fold_find_line(body ? body : "", fq,
						&h->snippet);
			h->line = at < 0 ? 0 : at;
			if (at < 0)
				h->snippet = xstrdup("");
			h->line += sqlite3_column_int(st, 2);
			pv_push(&hits, h);
		}
		if (sr != SQLITE_DONE)
			r = sto_search_error(s, db, ret_msg);
	}
	sto_stmt_done(st);
	sto_release(s, db);
	sto_sql_free(&w);
	if (r < 0) {
		sto_drop_hits(&hits);
		return r;
	}
	hand_over(&hits, ret, ret_n);
	*ret_total = total;
	return 0;
}
