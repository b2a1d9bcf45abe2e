/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "ftsaux.h"
#include "docz.h"
#include "util.h"

#include <math.h>
#include <sqlite3.h>

/* Tokens looked at for the snippet: up to WINDOW, BEFORE of them ahead
 * of its best stretch of hits, and about SNIPPET_CHARS characters. */
#define BEFORE 3
#define WINDOW 24
#define SNIPPET_CHARS 64
/* Hits weighed to find the best stretch, and how far into the text. */
#define HITS_MAX FTSAUX_HITS_MAX
#define HITS_REACH 20000
/* Bytes kept of the text between two tokens. */
#define GAP 40

struct win {
	int first, last; /* token positions wanted */
	int pos;	 /* position of the next token */
	int base;	 /* offset of the text tokenized in the whole */
	int *tok_start, *tok_end;
	bool more;
};

/* Stops as soon as the window is complete: the tokens of the text after
 * it are never looked at. */
static int on_token(void *ctx, int tflags, const char *tok, int ntok, int start,
		    int end)
{
	struct win *w = ctx;
	(void)tok;
	(void)ntok;
	if (tflags & FTS5_TOKEN_COLOCATED)
		return SQLITE_OK;
	int p = w->pos++;
	if (p > w->last) {
		w->more = true;
		return SQLITE_DONE;
	}
	if (p >= w->first) {
		w->tok_start[p - w->first] = w->base + start;
		w->tok_end[p - w->first] = w->base + end;
	}
	return SQLITE_OK;
}

/* An ASCII letter or digit: what unicode61 makes tokens of. */
static bool ascii_alnum(unsigned char c)
{
	return (c >= '0' && c <= '9') || (unsigned)((c | 0x20) - 'a') < 26u;
}

/*
 * text[0..len) tokenized into w from position w->pos: the ASCII text
 * before the window counted here (unicode61's tokens there are the runs
 * of letters and digits), the tokenizer given the rest from the end of
 * the last token counted, where a long note's hit deep in its chunk
 * cost tokenizing the whole chunk up to it. Other text (a letter
 * beyond ASCII may go on a token or be one; CJK is cut in pairs) is
 * left to the tokenizer, from the last token counted on.
 */
static int tokenize_window(const struct ftsaux_tok *tk, const char *text,
			   int len, struct win *w)
{
	int start = 0, pos = w->pos;
	for (int i = 0; i < len && pos < w->first;) {
		unsigned char c = (unsigned char)text[i];
		if (c >= 0x80)
			break;
		if (!ascii_alnum(c)) {
			i++;
			continue;
		}
		int j = i;
		while (j < len && ascii_alnum((unsigned char)text[j]))
			j++;
		if (j < len && (unsigned char)text[j] >= 0x80)
			break;
		pos++;
		start = i = j;
	}
	w->pos = pos;
	w->base = start;
	int rc = tk->fn(tk->ctx, text + start, len - start, w, on_token);
	w->base = 0;
	return rc;
}

/* Characters (not bytes) of s[0..n). */
static int chars(const char *s, int n)
{
	int c = 0;
	for (int i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* The text between two tokens, at most GAP bytes of it: a run of
 * punctuation or spaces may be megabytes long. */
static void gap(struct sbuf *b, const char *s, int n, bool lead, bool tail)
{
	if (n <= GAP) {
		sb_add(b, s, (size_t)n);
		return;
	}
	if (lead) {
		sb_puts(b, "\xe2\x80\xa6 ");
		return;
	}
	int keep = GAP / 2;
	while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
		keep--;
	sb_add(b, s, (size_t)keep);
	sb_puts(b, tail ? "\xe2\x80\xa6" : " \xe2\x80\xa6 ");
}

/* Open or close the ** around hits. */
static void mark(struct sbuf *b, bool *open, bool hit)
{
	if (*open != hit)
		sb_puts(b, "**");
	*open = hit;
}

struct inst {
	int off, phrase;
};

static int cmp_inst(const void *a, const void *b)
{
	const struct inst *x = a, *y = b;
	return x->off != y->off ? x->off - y->off : x->phrase - y->phrase;
}

/* The hits of column col near its start (HITS_MAX at most, in order);
 * how many. */
static int hits_in(const Fts5ExtensionApi *api, Fts5Context *fts, int col,
		   int nphrase, struct inst *out)
{
	int n = 0;
	/* A share for each word: one word's thousands of hits must not
	 * hide the others. */
	int share = nphrase > 0 ? HITS_MAX / nphrase : HITS_MAX;
	if (share < 1)
		share = 1;
	for (int p = 0; p < nphrase && n < HITS_MAX; p++) {
		Fts5PhraseIter it;
		int c, off, mine = 0;
		if (api->xPhraseFirst(fts, p, &it, &c, &off) != SQLITE_OK)
			continue;
		for (; c >= 0 && c <= col && n < HITS_MAX && mine < share;
		     api->xPhraseNext(fts, &it, &c, &off)) {
			if (c < col)
				continue;
			if (off > HITS_REACH && n)
				break;
			out[n++] = (struct inst){off, p};
			mine++;
		}
	}
	qsort(out, (size_t)n, sizeof(*out), cmp_inst);
	return n;
}

/* Where the window starts: at the stretch of WINDOW / 2 tokens with the
 * most different words of the query (the earliest such). */
static int best_start(const struct inst *h, int n)
{
	int best = h[0].off, most = 0;
	for (int i = 0; i < n; i++) {
		unsigned seen[8] = {0};
		int distinct = 0;
		for (int j = i; j < n && h[j].off < h[i].off + WINDOW / 2;
		     j++) {
			unsigned p = (unsigned)h[j].phrase % 256;
			if (!(seen[p / 32] & 1u << (p % 32))) {
				seen[p / 32] |= 1u << (p % 32);
				distinct++;
			}
		}
		if (distinct > most) {
			most = distinct;
			best = h[i].off;
		}
	}
	return best;
}

static void blob_free(void *p)
{
	sqlite3_blob **b = p;
	sqlite3_blob_close(*b);
	free(b);
}

/* The blob handle the query's snippets share (reopened on each row:
 * opening one compiles a statement). */
static sqlite3_blob **blob_slot(const Fts5ExtensionApi *api, Fts5Context *fts)
{
	sqlite3_blob **b = api->xGetAuxdata(fts, 0);
	if (b)
		return b;
	b = xcalloc(1, sizeof(*b));
	if (api->xSetAuxdata(fts, b, blob_free) != SQLITE_OK)
		return NULL; /* freed by xSetAuxdata */
	return b;
}

/* The window w from the stored text of row id of table.column (read
 * through *b), tokenized with tk: the chunk where it starts, and the
 * next one when it runs on. */
static int stored_window(sqlite3 *db, const char *table, const char *column,
			 int64_t id, sqlite3_blob **b,
			 const struct ftsaux_tok *tk, struct win *w,
			 char **ret_text, int *ret_len)
{
	struct docz_part part, next;
	if (!table || !column || !b ||
	    docz_read(db, table, column, id, w->first, w->last, b, &part) < 0)
		return -1;
	struct win start = *w;
	for (;;) {
		w->pos = part.pos;
		int rc = tokenize_window(tk, part.text, part.len, w);
		if (rc != SQLITE_OK && rc != SQLITE_DONE) {
			free(part.text);
			return -1;
		}
		w->more |= part.more;
		if (w->pos > w->last || !part.more ||
		    docz_read(db, table, column, id, w->pos, w->last, b,
			      &next) < 0)
			break;
		if (next.pos != w->pos) {
			free(next.text);
			break;
		}
		/* The window runs into the next chunk: both, again. */
		part.text =
			xrealloc(part.text, (size_t)(part.len + next.len) + 1);
		memcpy(part.text + part.len, next.text, (size_t)next.len + 1);
		part.len += next.len;
		part.more = next.more;
		free(next.text);
		*w = start;
	}
	*ret_text = part.text;
	*ret_len = part.len;
	return 0;
}

/* Where a snippet's text comes from: the stored text (table and column
 * set: row id read through blob) or, without, the text given. */
struct source {
	const struct ftsaux_tok *tk;
	sqlite3 *db;
	const char *table, *column;
	int64_t id;
	sqlite3_blob **blob;
	const char *text;
	int len;
};

/* The window w of src: its text (*ret_owned when read here) and
 * length; -1 when it cannot be read. */
static int source_window(const struct source *src, struct win *w,
			 const char **ret_text, int *ret_len, char **ret_owned)
{
	if (src->table)
		return stored_window(src->db, src->table, src->column, src->id,
				     src->blob, src->tk, w, ret_owned,
				     ret_len) < 0
			       ? -1
			       : (*ret_text = *ret_owned, 0);
	if (!src->text)
		return -1;
	int rc = tokenize_window(src->tk, src->text, src->len, w);
	if (rc != SQLITE_OK && rc != SQLITE_DONE)
		return -1;
	*ret_text = src->text;
	*ret_len = src->len;
	return 0;
}

/* The tokens of the window that fit in SNIPPET_CHARS characters of
 * text (w->more set when some are left out), and which of them are
 * marked (hit): each phrase of the hits h[0..nh) once, where it first is
 * in the window (phrase p of psize[p] tokens). */
static int window_marks(const struct inst *h, int nh, const int *psize,
			const char *text, const int *ts, const int *te,
			struct win *w, bool *hit)
{
	int ntok = (w->pos > w->last ? w->last + 1 : w->pos) - w->first;
	if (ntok <= 0)
		return 0;
	int keep = 1;
	while (keep < ntok &&
	       chars(text + ts[0], te[keep] - ts[0]) <= SNIPPET_CHARS)
		keep++;
	if (keep < ntok) {
		ntok = keep;
		w->more = true;
	}
	unsigned done[8] = {0};
	for (int i = 0; i < nh; i++) {
		unsigned p = (unsigned)h[i].phrase % 256;
		int off = h[i].off;
		if (off < w->first || off >= w->first + ntok ||
		    done[p / 32] & 1u << (p % 32))
			continue;
		done[p / 32] |= 1u << (p % 32);
		int size = psize[h[i].phrase];
		for (int k = off; k < off + size && k < w->first + ntok; k++)
			hit[k - w->first] = true;
	}
	return ntok;
}

/*
 * The snippet of the hits h[0..nh) (phrase p of psize[p] tokens) in the
 * text of src: about SNIPPET_CHARS characters around their best stretch
 * (the most different words of the query close together), the first hit
 * of each word marked with **, a cut start with an ellipsis; NULL when
 * the text cannot be read.
 */
static char *snippet_make(const struct inst *h, int nh, const int *psize,
			  const struct source *src)
{
	int first = best_start(h, nh);
	int from_tok = first > BEFORE ? first - BEFORE : 0;
	int ts[WINDOW], te[WINDOW];
	struct win w = {.first = from_tok, .tok_start = ts, .tok_end = te};
	w.last = w.first + WINDOW - 1;
	_cleanup_free_ char *owned = NULL;
	const char *text;
	int len;
	if (source_window(src, &w, &text, &len, &owned) < 0)
		return NULL;
	bool hit[WINDOW + 1] = {0};
	int ntok = window_marks(h, nh, psize, text, ts, te, &w, hit);
	if (ntok <= 0)
		return NULL;
	/* Pairs of CJK characters overlap by one character: each token
	 * adds the bytes past the previous one, and the part it shares with
	 * the next token is marked when either is a hit. */
	struct sbuf b = {0};
	bool open = false;
	int from = ts[0];
	if (w.first)
		sb_puts(&b, "\xe2\x80\xa6");
	else
		gap(&b, text, ts[0], true, false);
	for (int k = 0; k < ntok; k++) {
		if (ts[k] > from) {
			mark(&b, &open, false);
			gap(&b, text + from, ts[k] - from, false, false);
			from = ts[k];
		}
		int shared =
			k + 1 < ntok && ts[k + 1] < te[k] ? ts[k + 1] : te[k];
		if (shared > from) {
			mark(&b, &open, hit[k]);
			sb_add(&b, text + from, (size_t)(shared - from));
			from = shared;
		}
		if (te[k] > from) {
			mark(&b, &open, hit[k] || hit[k + 1]);
			sb_add(&b, text + from, (size_t)(te[k] - from));
			from = te[k];
		}
	}
	mark(&b, &open, false);
	/* A cut end goes without an ellipsis: every snippet is a part. */
	if (!w.more)
		gap(&b, text + from, len - from, false, true);
	return b.s ? sb_steal(&b) : xstrdup("");
}

/* FTS5's tokenizer of the current query, for snippet_make. */
struct fts_tok {
	const Fts5ExtensionApi *api;
	Fts5Context *fts;
};

static int fts_tokenize(void *ctx, const char *text, int len, void *w,
			int (*cb)(void *, int, const char *, int, int, int))
{
	struct fts_tok *t = ctx;
	return t->api->xTokenize(t->fts, text, len, w, cb);
}

/* vsnippet's source: the stored text (table argv[1], column argv[2],
 * through the handle argv[4] or the query's own) or column col; false
 * when it cannot be had. */
static bool fts_source(const Fts5ExtensionApi *api, Fts5Context *fts,
		       sqlite3_context *ctx, int argc, sqlite3_value **argv,
		       int col, struct source *src)
{
	if (argc < 3)
		return api->xColumnText(fts, col, &src->text, &src->len) ==
			       SQLITE_OK &&
		       src->text;
	src->table = (const char *)sqlite3_value_text(argv[1]);
	src->column = (const char *)sqlite3_value_text(argv[2]);
	/* The caller's handle when it gives one (kept across its rows,
	 * which the query's own would not be: FTS5 drops it on a reset). */
	if (argc >= 5)
		src->blob = sqlite3_value_pointer(argv[4], FTSAUX_BLOB);
	if (!src->blob)
		src->blob = blob_slot(api, fts);
	src->db = sqlite3_context_db_handle(ctx);
	src->id = api->xRowid(fts);
	return src->table && src->column && src->blob;
}

/*
 * vsnippet(fts, col [, table, column [, phrases]]): the snippet
 * (snippet_make) of column col around its hits; NULL without a hit in
 * that column. With table and column, the text is read from there (a
 * docz_pack() blob in the row of the same id), only the part around the
 * hits. With phrases, only the first that many phrases of the query are
 * shown; with a handle (FTSAUX_BLOB), the stored text is read through it.
 */
static void vsnippet(const Fts5ExtensionApi *api, Fts5Context *fts,
		     sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int col = argc > 0 ? sqlite3_value_int(argv[0]) : 0;
	struct inst h[HITS_MAX];
	/* The phrases that count: all, or the first argv[3]. */
	int nphrase = api->xPhraseCount(fts);
	if (argc >= 4 && sqlite3_value_int(argv[3]) < nphrase)
		nphrase = sqlite3_value_int(argv[3]);
	int nh = hits_in(api, fts, col, nphrase, h);
	if (!nh)
		return;
	_cleanup_free_ int *psize = xcalloc((size_t)nphrase, sizeof(*psize));
	for (int p = 0; p < nphrase; p++)
		psize[p] = api->xPhraseSize(fts, p);
	struct fts_tok ft = {api, fts};
	struct ftsaux_tok tk = {fts_tokenize, &ft};
	struct source src = {.tk = &tk};
	if (!fts_source(api, fts, ctx, argc, argv, col, &src))
		return;
	char *r = snippet_make(h, nh, psize, &src);
	if (r)
		sqlite3_result_text(ctx, r, -1, free);
}

char *ftsaux_snippet(sqlite3 *db, const char *table, const char *column,
		     sqlite3_blob **blob, int64_t id, const int *offs, int n,
		     int size, const struct ftsaux_tok *tk)
{
	/* hits_in's choice for one phrase: its first HITS_MAX, none past
	 * HITS_REACH but the first. */
	struct inst h[HITS_MAX];
	int nh = 0;
	for (int i = 0; i < n && nh < HITS_MAX; i++) {
		if (offs[i] > HITS_REACH && nh)
			break;
		h[nh++] = (struct inst){offs[i], 0};
	}
	if (!nh)
		return NULL;
	struct source src = {.tk = tk,
			     .db = db,
			     .table = table,
			     .column = column,
			     .id = id,
			     .blob = blob};
	return snippet_make(h, nh, &size, &src);
}

/* ---- ranking ------------------------------------------------------------ */

/* Instances of one phrase counted in a note; past that, the rest of the
 * column is estimated from how far into it they reached. */
#define COUNT_MAX 64

/* Per query: the weight of each phrase (its rarity). */
struct rank_data {
	int nphrase;
	double *idf;
};

static int count_rows(const Fts5ExtensionApi *api, Fts5Context *fts, void *ud)
{
	(void)api;
	(void)fts;
	(*(sqlite3_int64 *)ud)++;
	return SQLITE_OK;
}

static void rank_data_free(void *p)
{
	struct rank_data *d = p;
	free(d->idf);
	free(d);
}

/* The query's phrase weights: from the document counts given after the
 * column weights when there are (argv[ncol..]), else counted. */
static struct rank_data *rank_data(const Fts5ExtensionApi *api,
				   Fts5Context *fts, int argc,
				   sqlite3_value **argv)
{
	struct rank_data *d = api->xGetAuxdata(fts, 0);
	if (d)
		return d;
	sqlite3_int64 nrow = 0;
	if (api->xRowCount(fts, &nrow) != SQLITE_OK)
		return NULL;
	int ncol = api->xColumnCount(fts);
	d = xcalloc(1, sizeof(*d));
	d->nphrase = api->xPhraseCount(fts);
	if (argc > ncol && argc - ncol < d->nphrase)
		d->nphrase = argc - ncol;
	d->idf = xcalloc((size_t)d->nphrase + 1, sizeof(double));
	for (int p = 0; p < d->nphrase; p++) {
		sqlite3_int64 hits = 0;
		if (argc > ncol)
			hits = sqlite3_value_int64(argv[ncol + p]);
		else
			api->xQueryPhrase(fts, p, &hits, count_rows);
		d->idf[p] = hits < 0 ? 1 : ftsaux_idf(nrow, hits);
	}
	if (api->xSetAuxdata(fts, d, rank_data_free) != SQLITE_OK)
		return NULL; /* freed by xSetAuxdata */
	return d;
}

/* The notes' average length (1 when it cannot be read); *ret_nrow: the
 * notes indexed. */
static double avg_len(const Fts5ExtensionApi *api, Fts5Context *fts,
		      sqlite3_int64 *ret_nrow)
{
	double avgdl = 1;
	sqlite3_int64 nrow = 0, ntok = 0;
	if (api->xRowCount(fts, &nrow) == SQLITE_OK &&
	    api->xColumnTotalSize(fts, -1, &ntok) == SQLITE_OK && nrow > 0)
		avgdl = (double)ntok / (double)nrow;
	*ret_nrow = nrow;
	return avgdl;
}

/* BM25's length normalisation of the current note. */
static double note_norm(const Fts5ExtensionApi *api, Fts5Context *fts)
{
	sqlite3_int64 nrow;
	double avgdl = avg_len(api, fts, &nrow);
	int dl = 0;
	api->xColumnSize(fts, -1, &dl);
	return ftsaux_norm((double)dl, avgdl);
}

/* Phrase p's weighted instances in the current note (column c weighs
 * argv[c]), counted up to COUNT_MAX and the rest estimated; < 0 when
 * its instances cannot be read. */
static double phrase_freq(const Fts5ExtensionApi *api, Fts5Context *fts, int p,
			  int argc, sqlite3_value **argv)
{
	int ncol = api->xColumnCount(fts);
	Fts5PhraseIter it;
	int c, off, seen = 0, last_col = -1, in_col = 0;
	double freq = 0;
	if (api->xPhraseFirst(fts, p, &it, &c, &off) != SQLITE_OK)
		return -1;
	for (; c >= 0; api->xPhraseNext(fts, &it, &c, &off)) {
		if (c != last_col) {
			last_col = c;
			in_col = 0;
		}
		double w = c < argc && c < ncol ? sqlite3_value_double(argv[c])
						: 1;
		if (++seen > COUNT_MAX) {
			/* Estimate the column's remaining instances from
			 * the density so far. */
			int size = 0;
			api->xColumnSize(fts, c, &size);
			freq += ftsaux_rest(w, in_col, off, size);
			break;
		}
		in_col++;
		freq += w;
	}
	return freq;
}

/*
 * vrank(fts, weight of column 0, weight of column 1, ... [, documents
 * with phrase 0, with phrase 1, ...]): Okapi BM25, as FTS5's bm25()
 * computes it, negated (smaller is better), except that a phrase's
 * instances in a note are counted up to COUNT_MAX and the rest
 * estimated: bm25() looks at every instance, millions in a big note.
 * With document counts, only the phrases they are given for score (the
 * others only select notes), and they are not counted again; a count
 * below zero weighs its phrase 1 (an order of notes by one phrase
 * without counting them first).
 */
static void vrank(const Fts5ExtensionApi *api, Fts5Context *fts,
		  sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct rank_data *d = rank_data(api, fts, argc, argv);
	if (!d) {
		sqlite3_result_error(ctx, "vrank: no statistics", -1);
		return;
	}
	double total = 0, norm = note_norm(api, fts);
	for (int p = 0; p < d->nphrase; p++) {
		double freq = phrase_freq(api, fts, p, argc, argv);
		if (freq >= 0)
			total += ftsaux_term(d->idf[p], freq, norm);
	}
	sqlite3_result_double(ctx, -total);
}

/*
 * vterm(fts, weight of column 0, weight of column 1, ...): what vrank
 * needs of the current note for the query's first phrase but its length,
 * as a blob of struct ftsaux_term: its weighted instances, the notes'
 * average length and the notes indexed. NULL when they cannot be read.
 * The note's length is not looked up (a B-tree search per note, a
 * quarter of a common word's pass): the caller has it.
 */
static void vterm(const Fts5ExtensionApi *api, Fts5Context *fts,
		  sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct ftsaux_term t;
	sqlite3_int64 nrow;
	t.avgdl = avg_len(api, fts, &nrow);
	t.nrow = nrow;
	t.freq = phrase_freq(api, fts, 0, argc, argv);
	if (t.freq >= 0)
		sqlite3_result_blob(ctx, &t, sizeof(t), SQLITE_TRANSIENT);
}

/*
 * vpos(fts): the current note's instances of the query's first phrase,
 * in order, as a blob of uint32_t (the column in the top bit,
 * FTSAUX_POS_COL, the offset below). NULL when they cannot be read or a
 * column past the second has one.
 */
static void vpos(const Fts5ExtensionApi *api, Fts5Context *fts,
		 sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	Fts5PhraseIter it;
	int c, off;
	uint32_t *v = NULL;
	size_t n = 0, cap = 0;
	(void)argc;
	(void)argv;
	if (api->xPhraseFirst(fts, 0, &it, &c, &off) != SQLITE_OK)
		return;
	for (; c >= 0; api->xPhraseNext(fts, &it, &c, &off)) {
		if (c > 1 || off < 0) {
			free(v);
			return;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[n++] = (uint32_t)c << FTSAUX_POS_COL | (uint32_t)off;
	}
	sqlite3_result_blob(ctx, v ? (const void *)v : "",
			    (int)(n * sizeof(*v)), v ? free : SQLITE_STATIC);
}

int ftsaux_register(fts5_api *api)
{
	int rc = api->xCreateFunction(api, "vsnippet", NULL, vsnippet, NULL);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "vrank", NULL, vrank, NULL);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "vterm", NULL, vterm, NULL);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "vpos", NULL, vpos, NULL);
	return rc;
}
