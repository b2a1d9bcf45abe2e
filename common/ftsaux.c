/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "ftsaux.h"
#include "util.h"

#include <math.h>
#include <sqlite3.h>

/* Token positions of the window around the first hit. */
#define BEFORE 5
#define WINDOW 16
/* Bytes kept of the text between two tokens. */
#define GAP 40

struct win {
	int first, last; /* token positions wanted */
	int pos;	 /* position of the next token */
	int start, end;	 /* bytes of the window's first and last token */
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
		w->tok_start[p - w->first] = start;
		w->tok_end[p - w->first] = end;
	}
	return SQLITE_OK;
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

/* The first instance of phrase p in column col at or after token `from`;
 * -1 if none. Instances come in order of column, then offset, so the walk
 * stops at the first one that fits. */
static int first_at(const Fts5ExtensionApi *api, Fts5Context *fts, int p,
		    int col, int from)
{
	Fts5PhraseIter it;
	int c, off;
	if (api->xPhraseFirst(fts, p, &it, &c, &off) != SQLITE_OK)
		return -1;
	for (; c >= 0; api->xPhraseNext(fts, &it, &c, &off))
		if (c > col || (c == col && off >= from))
			return c == col ? off : -1;
	return -1;
}

/*
 * vsnippet(fts, col): the text of column col around its first hit, hits
 * marked with ** and cut ends with an ellipsis; NULL without a hit in
 * that column.
 */
static void vsnippet(const Fts5ExtensionApi *api, Fts5Context *fts,
		     sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int col = argc > 0 ? sqlite3_value_int(argv[0]) : 0;
	int nphrase = api->xPhraseCount(fts);
	int first = -1;
	for (int p = 0; p < nphrase; p++) {
		int off = first_at(api, fts, p, col, 0);
		if (off >= 0 && (first < 0 || off < first))
			first = off;
	}
	if (first < 0)
		return;
	const char *text;
	int len;
	if (api->xColumnText(fts, col, &text, &len) != SQLITE_OK || !text)
		return;
	int ts[WINDOW], te[WINDOW];
	struct win w = {.first = first > BEFORE ? first - BEFORE : 0,
			.tok_start = ts,
			.tok_end = te};
	w.last = w.first + WINDOW - 1;
	int rc = api->xTokenize(fts, text, len, &w, on_token);
	if (rc != SQLITE_OK && rc != SQLITE_DONE)
		return;
	int ntok = (w.pos > w.last ? w.last + 1 : w.pos) - w.first;
	if (ntok <= 0)
		return;
	/* Which tokens of the window are hits: one walk per phrase, up to
	 * the window's end. */
	bool hit[WINDOW + 1] = {0};
	for (int p = 0; p < nphrase; p++) {
		int size = api->xPhraseSize(fts, p);
		Fts5PhraseIter it;
		int c, off;
		if (api->xPhraseFirst(fts, p, &it, &c, &off) != SQLITE_OK)
			continue;
		for (; c >= 0 && c <= col && (c < col || off < w.first + ntok);
		     api->xPhraseNext(fts, &it, &c, &off))
			for (int k = off; c == col && k < off + size; k++)
				if (k >= w.first && k < w.first + ntok)
					hit[k - w.first] = true;
	}
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
	if (w.more)
		sb_puts(&b, "\xe2\x80\xa6");
	else
		gap(&b, text + from, len - from, false, true);
	sqlite3_result_text(ctx, b.s ? b.s : "", -1, free);
}

/* ---- ranking ------------------------------------------------------------ */

/* Instances of one phrase counted in a note; past that, the rest of the
 * column is estimated from how far into it they reached. */
#define COUNT_MAX 512
#define K1 1.2
#define B 0.75

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

static struct rank_data *rank_data(const Fts5ExtensionApi *api,
				   Fts5Context *fts)
{
	struct rank_data *d = api->xGetAuxdata(fts, 0);
	if (d)
		return d;
	sqlite3_int64 nrow = 0;
	if (api->xRowCount(fts, &nrow) != SQLITE_OK)
		return NULL;
	d = xcalloc(1, sizeof(*d));
	d->nphrase = api->xPhraseCount(fts);
	d->idf = xcalloc((size_t)d->nphrase + 1, sizeof(double));
	for (int p = 0; p < d->nphrase; p++) {
		sqlite3_int64 hits = 0;
		api->xQueryPhrase(fts, p, &hits, count_rows);
		double idf = log(((double)nrow - (double)hits + 0.5) /
				 ((double)hits + 0.5));
		d->idf[p] = idf > 1e-6 ? idf : 1e-6;
	}
	if (api->xSetAuxdata(fts, d, rank_data_free) != SQLITE_OK)
		return NULL; /* freed by xSetAuxdata */
	return d;
}

/*
 * vrank(fts, weight of column 0, weight of column 1, ...): Okapi BM25, as
 * FTS5's bm25() computes it, negated (smaller is better), except that a
 * phrase's instances in a note are counted up to COUNT_MAX and the rest
 * estimated: bm25() looks at every instance, millions in a big note.
 */
static void vrank(const Fts5ExtensionApi *api, Fts5Context *fts,
		  sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct rank_data *d = rank_data(api, fts);
	if (!d) {
		sqlite3_result_error(ctx, "vrank: no statistics", -1);
		return;
	}
	double total = 0, avgdl = 1;
	sqlite3_int64 nrow = 0, ntok = 0;
	if (api->xRowCount(fts, &nrow) == SQLITE_OK &&
	    api->xColumnTotalSize(fts, -1, &ntok) == SQLITE_OK && nrow > 0)
		avgdl = (double)ntok / (double)nrow;
	int dl = 0;
	api->xColumnSize(fts, -1, &dl);
	double norm = K1 * (1 - B + B * (double)dl / (avgdl > 0 ? avgdl : 1));
	for (int p = 0; p < d->nphrase; p++) {
		Fts5PhraseIter it;
		int c, off, seen = 0, last_col = -1, in_col = 0;
		double freq = 0;
		if (api->xPhraseFirst(fts, p, &it, &c, &off) != SQLITE_OK)
			continue;
		for (; c >= 0; api->xPhraseNext(fts, &it, &c, &off)) {
			if (c != last_col) {
				last_col = c;
				in_col = 0;
			}
			double w = c < argc ? sqlite3_value_double(argv[c]) : 1;
			if (++seen > COUNT_MAX) {
				/* Estimate the column's remaining instances
				 * from the density so far. */
				int size = 0;
				api->xColumnSize(fts, c, &size);
				if (off > 0 && size > off)
					freq += w * in_col *
						((double)(size - off) / off);
				break;
			}
			in_col++;
			freq += w;
		}
		total += d->idf[p] * freq * (K1 + 1) / (freq + norm);
	}
	sqlite3_result_double(ctx, -total);
}

int ftsaux_register(fts5_api *api)
{
	int rc = api->xCreateFunction(api, "vsnippet", NULL, vsnippet, NULL);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "vrank", NULL, vrank, NULL);
	return rc;
}
