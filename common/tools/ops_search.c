/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * search_notes: names and aliases, tags and text straight from the index
 * in memory; text (content) and ranked full-text search from the on-disk
 * index (store.h), which answers without reading the vault's files.
 */
#include "frontmatter.h"
#include "json.h"
#include "query.h"
#include "store.h"
#include "tools.h"
#include "u8.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>

/* How long a full-text search waits for a first build when its caller
 * can show progress (MCP progressToken); without, it answers at once. */
#define FULLTEXT_WAIT_S 600
/* The same for a caller that cannot be shown progress. */
#define FULLTEXT_QUIET_WAIT_S 10

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a;
	uintptr_t y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

/* The notes carrying tag q or a tag below it (q/...), sorted by address
 * and unique: answered from the tag index, not by scanning notes. */
static struct ptrvec notes_with_tag(struct tag_entry **tags, size_t ntags,
				    const char *q)
{
	_cleanup_free_ char *fq = fold_key(q);
	size_t l = strlen(fq);
	struct ptrvec pv = {0};
	for (size_t i = 0; i < ntags; i++) {
		const char *f = tags[i]->fold;
		if (strncmp(f, fq, l) != 0 || (f[l] && f[l] != '/'))
			continue;
		for (size_t k = 0; k < tags[i]->notes.n; k++)
			pv_push(&pv, tags[i]->notes.v[k]);
	}
	pv_sort(&pv, cmp_ptr);
	size_t u = 0;
	for (size_t i = 0; i < pv.n; i++)
		if (!u || pv.v[u - 1] != pv.v[i])
			pv.v[u++] = pv.v[i];
	pv.n = u;
	return pv;
}

/* tag_logic and|or over the query's tags. */
static struct ptrvec tag_search(const struct index *ix, char **queries,
				bool and_)
{
	size_t ntags;
	_cleanup_free_ struct tag_entry **tags = index_tags(ix, &ntags);
	struct ptrvec acc = notes_with_tag(tags, ntags, queries[0]);
	for (char **q = queries + 1; *q; q++) {
		struct ptrvec next = notes_with_tag(tags, ntags, *q);
		struct ptrvec out = {0};
		size_t i = 0, j = 0;
		while (i < acc.n || j < next.n) {
			int c = i >= acc.n    ? 1
				: j >= next.n ? -1
					      : cmp_ptr(&acc.v[i], &next.v[j]);
			if (c == 0) {
				pv_push(&out, acc.v[i]);
				i++;
				j++;
			} else if (c < 0) {
				if (!and_)
					pv_push(&out, acc.v[i]);
				i++;
			} else {
				if (!and_)
					pv_push(&out, next.v[j]);
				j++;
			}
		}
		pv_free(&acc);
		pv_free(&next);
		acc = out;
	}
	return acc;
}

/* Rank for name_partial: exact, then prefix, then substring. */
static int rank_one(const char *cand, const char *fq, bool exact_only)
{
	if (strcmp(cand, fq) == 0)
		return 0;
	if (exact_only)
		return -1;
	if (str_has_prefix(cand, fq))
		return 1;
	return strstr(cand, fq) ? 2 : -1;
}

static int name_rank(const struct note *n, const char *fq, bool exact_only)
{
	int best = rank_one(note_fold_name(n), fq, exact_only);
	char *const *fa = note_fold_aliases(n);
	for (size_t i = 0; i < note_nfold_aliases(n) && best != 0; i++) {
		int r = rank_one(fa[i], fq, exact_only);
		if (r >= 0 && (best < 0 || r < best))
			best = r;
	}
	return best;
}

struct hit {
	const struct note *n;
	int rank;
	int line;
	char *text;
};

static int cmp_hit(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	int r = strcmp(note_fold_name(x->n), note_fold_name(y->n));
	return r ? r : strcmp(note_path(x->n), note_path(y->n));
}

/* First line of the body containing the folded query, or 0. */
static int content_match(struct vault *v, const struct note *n, const char *fq,
			 char **ret_line)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (note_too_big(n) || vault_read_text(v, n, &text, &len) < 0)
		return 0;
	size_t fs, fe, body = 0;
	if (md_split_frontmatter(text, len, &fs, &fe, &body)) {
	}
	int i = fold_find_line(text + body, fq, ret_line);
	return i < 0 ? 0 : line_of_offset(text, body) + i;
}

static const char *const MODES[] = {"name", "name_partial", "content",
				    "tag",  "fulltext",	    NULL};

/* Notes too big to have their text searched are named, never silently
 * left out: {"not_searched": {"notes": [...], "why": ...}}. */
static void not_searched(struct index *ix, cJSON *o)
{
	size_t count;
	struct note *const *big = index_too_big(ix, &count);
	if (!count)
		return;
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < count && i < 20; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(note_path(big[i])));
	cJSON *ns = cJSON_AddObjectToObject(o, "not_searched");
	cJSON_AddItemToObject(ns, "notes", a);
	cJSON_AddNumberToObject(ns, "total", (double)count);
	_cleanup_free_ char *why = xasprintf(
		"notes over %u MiB are found by name, tag and links, not by "
		"their text",
		NOTE_MAX_INDEXED >> 20);
	cJSON_AddStringToObject(ns, "why", why);
}

static cJSON *page(struct tool_ctx *c, const char *query, const char *mode,
		   cJSON *results, size_t total, const char *scope,
		   uint64_t gen, size_t offset, size_t limit)
{
	/* The query and mode are the caller's own: not sent back. */
	(void)query;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "results", results);
	cJSON_AddNumberToObject(o, "total", (double)total);
	if (offset + limit < total) {
		_cleanup_free_ char *next =
			cursor_make(scope, gen, offset + limit);
		cJSON_AddStringToObject(o, "next_cursor", next);
	}
	if (!strcmp(mode, "fulltext") || !strcmp(mode, "content"))
		not_searched(vault_index(c->v), o);
	c->json = o;
	return o;
}

/*
 * Full-text search needs the on-disk index to hold every note's text.
 * While a first build runs, a caller that can show progress waits for it
 * (reporting how far it is, up to FULLTEXT_WAIT_S); others wait up to
 * FULLTEXT_QUIET_WAIT_S, then hear how far it is.
 */
static int fulltext_ready(struct tool_ctx *c)
{
	struct vault_store_state st;
	vault_store_state(c->v, &st);
	if (!st.enabled)
		return op_fail(
			c, -EIO,
			"Full-text search is not available: the search "
			"index could not be opened (see the vaultd log). "
			"The other search modes work.");
	if (st.ready)
		return 0;
	{
		uint64_t wait =
			c->progress ? FULLTEXT_WAIT_S : FULLTEXT_QUIET_WAIT_S;
		uint64_t until = now_ns() + wait * 1000000000ull;
		while (now_ns() < until) {
			vault_store_state(c->v, &st);
			if (st.ready)
				return 0;
			if (c->progress) {
				_cleanup_free_ char *m = xasprintf(
					"Indexing note text: %zu of %zu notes",
					st.done, st.total);
				c->progress(c->progress_ud, st.done, st.total,
					    m);
			}
			if (vault_fulltext_wait_ready(c->v, 250))
				return 0;
			if (cancel_requested())
				return op_fail(c, -ECANCELED, "Cancelled");
			vault_store_state(c->v, &st);
			if (!st.enabled)
				return fulltext_ready(c);
		}
	}
	vault_store_state(c->v, &st);
	if (st.ready)
		return 0;
	unsigned pct = st.total ? (unsigned)(st.done * 100 / st.total) : 0;
	return op_fail(
		c, -EAGAIN,
		"Full-text search is not ready yet: the search index is "
		"being built (%u%%, %zu of %zu notes). Try again shortly; "
		"the name, name_partial, tag and content modes work now.",
		pct, st.done, st.total);
}

/* A score to compare with others, not to read digits from. */
static double round1(double x)
{
	return round(x * 10.0) / 10.0;
}

/* A result's tags: the first TAGS_SHOWN, and how many more there are
 * (more_tags) when the note has more; read_note gives them all. A note
 * with a hundred tags would otherwise fill a page of results. */
#define TAGS_SHOWN 10
static void add_tags(cJSON *o, const struct note *n)
{
	size_t nt = note_ntags(n);
	size_t shown = nt > TAGS_SHOWN ? TAGS_SHOWN : nt;
	cJSON_AddItemToObject(o, "tags", str_array(note_tags(n), shown));
	if (nt > shown)
		cJSON_AddNumberToObject(o, "more_tags", (double)(nt - shown));
}

/* A hit of the on-disk index as a result: its name (as the index shows
 * it, when it has the note) and path; *ret_note (if asked): the note. */
static cJSON *hit_object(struct index *ix, const char *path,
			 struct note **ret_note)
{
	struct note *nt = index_by_path(ix, path);
	cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *dn =
		nt ? index_display_name(ix, nt) : path_note_name(path);
	cJSON_AddStringToObject(o, "name", dn);
	cJSON_AddStringToObject(o, "path", path);
	if (ret_note)
		*ret_note = nt;
	return o;
}

static int search_fulltext(struct tool_ctx *c, const char *query, size_t limit,
			   const char *cursor)
{
	bool cs = arg_bool(c, "case_sensitive", false);
	struct qnode *q = NULL;
	_cleanup_free_ char *perr = NULL;
	if (query_parse(query, &q, &perr) < 0)
		return op_fail(c, -EINVAL, "%s", perr);
	struct index *ix = vault_index(c->v);
	struct store *s = vault_store(c->v);
	if (!s) {
		query_free(q);
		return fulltext_ready(c);
	}
	_cleanup_free_ char *scope =
		xasprintf("fulltext\x1f%s\x1f%d", query, cs);
	uint64_t gen = store_generation(s);
	size_t offset = 0;
	if (cursor && *cursor) {
		const char *why;
		if (cursor_parse(cursor, scope, gen, &offset, &why) < 0) {
			query_free(q);
			return op_fail(c, -EINVAL, "%s", why);
		}
	}
	struct store_hit *hits = NULL;
	size_t n = 0, total = 0;
	_cleanup_free_ char *msg = NULL;
	int r = store_search(s, q, cs, offset, limit, &hits, &n, &total, &msg);
	query_free(q);
	if (r < 0) {
		vault_store_damaged(c->v);
		return op_fail(c, r, "%s", msg);
	}
	/* Lean results: the path (the name is its last part), the tags if
	 * any, the score, the snippet. */
	cJSON *res = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		struct note *nt = index_by_path(ix, hits[i].path);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", hits[i].path);
		if (nt && note_ntags(nt))
			add_tags(o, nt);
		cJSON_AddNumberToObject(o, "score", round1(hits[i].score));
		cJSON_AddStringToObject(o, "snippet", hits[i].snippet);
		cJSON_AddItemToArray(res, o);
	}
	store_hits_free(hits, n);
	page(c, query, "fulltext", res, total, scope, gen, offset, limit);
	return 0;
}

/* Content mode from the on-disk index: no file is read. */
static int search_content_stored(struct tool_ctx *c, struct store *s,
				 const char *query, const char *trimmed,
				 size_t limit, size_t offset, const char *scope,
				 uint64_t gen)
{
	struct store_hit *hits = NULL;
	size_t n = 0, total = 0;
	_cleanup_free_ char *msg = NULL;
	int r = store_search_text(s, trimmed, offset, limit, &hits, &n, &total,
				  &msg);
	if (r < 0) {
		vault_store_damaged(c->v);
		return op_fail(c, r, "%s", msg);
	}
	struct index *ix = vault_index(c->v);
	cJSON *res = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = hit_object(ix, hits[i].path, NULL);
		cJSON_AddNumberToObject(o, "line", hits[i].line);
		cJSON_AddStringToObject(o, "text", hits[i].snippet);
		cJSON_AddItemToArray(res, o);
	}
	store_hits_free(hits, n);
	page(c, query, "content", res, total, scope, gen, offset, limit);
	return 0;
}

/* The notes with the tags (all of them, or any), by name: *ret_n. */
static struct hit *tag_hits(struct index *ix, char **tags, bool all,
			    size_t *ret_n)
{
	struct ptrvec found = tag_search(ix, tags, all);
	pv_sort(&found, cmp_note_name);
	struct hit *hits = xcalloc(found.n + 1, sizeof(*hits));
	for (size_t i = 0; i < found.n; i++)
		hits[i] = (struct hit){.n = found.v[i]};
	*ret_n = found.n;
	pv_free(&found);
	return hits;
}

/* The notes whose name or path (ranked, best first) or, until the
 * on-disk index is built, whose file (in path order) has the folded
 * query fq: *ret_n. */
static struct hit *scan_notes(struct tool_ctx *c, struct index *ix,
			      const char *fq, bool content, bool exact,
			      size_t *ret_n)
{
	size_t n;
	struct note *const *all = index_sorted(ix, &n);
	struct hit *hits = xcalloc(n + 1, sizeof(*hits));
	size_t nh = 0;
	for (size_t i = 0; i < n; i++) {
		const struct note *nt = all[i];
		struct hit h = {.n = nt};
		if (content) {
			if (cancel_requested())
				break;
			h.line = content_match(c->v, nt, fq, &h.text);
			if (!h.line)
				continue;
		} else {
			h.rank = name_rank(nt, fq, exact);
			if (h.rank < 0) {
				/* A path query: "folder/name". */
				if (!strchr(fq, '/') ||
				    !strstr(note_fold_path(nt), fq))
					continue;
				h.rank = 3;
			}
		}
		hits[nh++] = h;
	}
	if (!content)
		qsort(hits, nh, sizeof(*hits), cmp_hit);
	*ret_n = nh;
	return hits;
}

/* The page [offset, offset + limit) of the hits. */
static cJSON *hits_page(struct index *ix, const struct hit *hits, size_t nh,
			size_t offset, size_t limit, bool content, bool tagmode)
{
	cJSON *res = cJSON_CreateArray();
	for (size_t i = offset; i < nh && i < offset + limit; i++) {
		cJSON *o = cJSON_CreateObject();
		_cleanup_free_ char *dn = index_display_name(ix, hits[i].n);
		cJSON_AddStringToObject(o, "name", dn);
		cJSON_AddStringToObject(o, "path", note_path(hits[i].n));
		if (content) {
			cJSON_AddNumberToObject(o, "line", hits[i].line);
			cJSON_AddStringToObject(o, "text", hits[i].text);
		}
		if (tagmode)
			add_tags(o, hits[i].n);
		cJSON_AddItemToArray(res, o);
	}
	return res;
}

int op_search_notes(struct tool_ctx *c)
{
	const char *query = arg_str(c, "query", "");
	const char *mode = arg_str(c, "mode", "name_partial");
	const char *logic = arg_str(c, "tag_logic", "or");
	const char *cursor = arg_str(c, "cursor", NULL);
	bool ok = false;
	for (const char *const *m = MODES; *m; m++)
		ok |= strcmp(*m, mode) == 0;
	if (!ok)
		return op_fail(c, -EINVAL,
			       "Invalid search mode: %s. Valid: name, "
			       "name_partial, content, tag, fulltext",
			       mode);
	bool fulltext = strcmp(mode, "fulltext") == 0;
	c->compact = true;
	long limit = arg_int(c, "limit", fulltext ? 10 : 50);
	bool tagmode = strcmp(mode, "tag") == 0;
	if (tagmode && strcmp(logic, "and") && strcmp(logic, "or"))
		return op_fail(c, -EINVAL,
			       "Invalid tag_logic: %s. Valid: and, or", logic);
	if (limit < 1 || limit > 100)
		return op_fail(c, -EINVAL, "limit must be between 1 and 100");
	_cleanup_free_ char *fq = fold_key(query);
	size_t ql = strlen(fq);
	while (ql && isspace((unsigned char)fq[ql - 1]))
		fq[--ql] = 0;
	if (!ql)
		return op_fail(c, -EINVAL, "query must not be empty");
	if (fulltext) {
		int r = fulltext_ready(c);
		if (r < 0)
			return r;
		vault_fulltext_flush(c->v);
		READ_LOCKED(c);
		return search_fulltext(c, query, (size_t)limit, cursor);
	}

	if (strcmp(mode, "content") == 0)
		vault_fulltext_flush(c->v);
	READ_LOCKED(c);
	struct index *ix = vault_index(c->v);
	_cleanup_free_ char *scope =
		xasprintf("%s\x1f%s\x1f%s", mode, query, tagmode ? logic : "");
	size_t offset = 0;
	if (cursor && *cursor) {
		const char *why;
		if (cursor_parse(cursor, scope, index_generation(ix), &offset,
				 &why) < 0)
			return op_fail(c, -EINVAL, "%s", why);
	}
	bool content = strcmp(mode, "content") == 0;
	struct vault_store_state st;
	vault_store_state(c->v, &st);
	if (content && st.ready && vault_store(c->v)) {
		_cleanup_free_ char *trimmed = xstrdup(query);
		size_t tl = strlen(trimmed);
		while (tl && isspace((unsigned char)trimmed[tl - 1]))
			trimmed[--tl] = 0;
		return search_content_stored(c, vault_store(c->v), query,
					     trimmed, (size_t)limit, offset,
					     scope, index_generation(ix));
	}
	_cleanup_strv_free_ char **tags = NULL;
	if (tagmode) {
		cJSON tmp = {.type = cJSON_String,
			     .valuestring = (char *)query};
		tags = fm_string_list(&tmp, false, true);
		if (!tags[0])
			return op_fail(c, -EINVAL, "query names no tag");
	}
	size_t nh;
	struct hit *hits =
		tagmode ? tag_hits(ix, tags, !strcmp(logic, "and"), &nh)
			: scan_notes(c, ix, fq, content,
				     strcmp(mode, "name") == 0, &nh);
	cJSON *res = hits_page(ix, hits, nh, offset, (size_t)limit, content,
			       tagmode);
	for (size_t i = 0; i < nh; i++)
		free(hits[i].text);
	free(hits);
	page(c, query, mode, res, nh, scope, index_generation(ix), offset,
	     (size_t)limit);
	return 0;
}
