/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FTS5 auxiliary functions whose work per note is bounded, whatever its
 * size or number of hits:
 *
 * vrank(fts, w0, w1 [, df0, df1, ...]): BM25 with column weights, like
 * FTS5's bm25(), with a phrase's instances counted up to a bound (bm25()
 * reads every one); with the phrases' document counts given, only those
 * phrases score (a count below zero: its phrase weighs 1).
 *
 * vterm(fts, w0, w1): what vrank needs of a note for the query's first
 * phrase (struct ftsaux_term) but the note's length, which the caller
 * reads itself (from the table fts_docsize, all notes in one scan: FTS5
 * looks each one up), for scoring outside FTS5 with ftsaux_idf(),
 * ftsaux_norm() and ftsaux_term(), to the bit as vrank does.
 *
 * vpos(fts): the instances of the query's first phrase in the current
 * note (store_phrase.c keeps them).
 *
 * The full-text search's snippet, "vsnippet(fts, column [, table,
 * column [, phrases [, handle]]])": the words
 * around the first hit of the note, hits marked with **. Its work is
 * bounded whatever the note's size or number of hits (FTS5's own
 * snippet() compares every hit with every other one: a 5 MB note of one
 * repeated word took minutes).
 */
#pragma once

#include <math.h>
#include <stdint.h>
#include <sqlite3.h>

/* The type of vsnippet's handle argument: a sqlite3_blob ** bound with
 * sqlite3_bind_pointer(), through which the stored texts are read (its
 * owner closes it), so that one handle serves a page of hits queried one
 * by one. */
#define FTSAUX_BLOB "docz_blob"

/* vpos's positions: the column in the top bit, the offset below. */
#define FTSAUX_POS_COL 31

/* BM25's parameters. */
#define FTSAUX_K1 1.2
#define FTSAUX_B 0.75

/* vterm's answer: a phrase's weighted instances in a note, the notes'
 * average length (in tokens, all columns) and the notes indexed. */
struct ftsaux_term {
	double freq, avgdl;
	sqlite3_int64 nrow;
};

/* BM25's length normalisation of a note of dl tokens among notes of
 * avgdl on average. */
static inline double ftsaux_norm(double dl, double avgdl)
{
	return FTSAUX_K1 *
	       (1 - FTSAUX_B + FTSAUX_B * dl / (avgdl > 0 ? avgdl : 1));
}

/* A column's instances past the ones counted, estimated from their
 * density so far: in_col of them, of weight w, in its first off tokens,
 * of size tokens in all. */
static inline double ftsaux_rest(double w, int in_col, int off, int size)
{
	return off > 0 && size > off ? w * in_col * ((double)(size - off) / off)
				     : 0;
}

/* The weight of a phrase that nhits of nrow notes have. */
static inline double ftsaux_idf(sqlite3_int64 nrow, sqlite3_int64 nhits)
{
	double idf = log(((double)nrow - (double)nhits + 0.5) /
			 ((double)nhits + 0.5));
	return idf > 1e-6 ? idf : 1e-6;
}

/* A phrase's part of a note's score: its weight idf, its weighted
 * instances freq, the note's length normalisation norm. */
static inline double ftsaux_term(double idf, double freq, double norm)
{
	return idf * freq * (FTSAUX_K1 + 1) / (freq + norm);
}

/* A tokenizer of the index's, as FTS5_TOKENIZE_AUX: fn(ctx, text, len,
 * cbctx, cb) calls cb(cbctx, ...) with each token (FTS5's xTokenize
 * callback) and returns an SQLite code (SQLITE_DONE: cb stopped it). */
struct ftsaux_tok {
	int (*fn)(void *ctx, const char *text, int len, void *cbctx,
		  int (*cb)(void *, int, const char *, int, int, int));
	void *ctx;
};

/*
 * vsnippet's snippet, without FTS5, of the one phrase of a query (of size
 * tokens) in column 1 of row id, whose instances there FTS5 would give
 * as offs[0..n) (in order; those vsnippet weighs at least: its first
 * 128), from the stored text of that row of table.column (read through
 * *blob, which the caller closes) tokenized with tk: the same bytes, a
 * string to free; NULL where vsnippet gives NULL (n of 0, or the text
 * cannot be read).
 */
char *ftsaux_snippet(sqlite3 *db, const char *table, const char *column,
		     sqlite3_blob **blob, int64_t id, const int *offs, int n,
		     int size, const struct ftsaux_tok *tk);

/* vsnippet's bound on the hits it weighs (ftsaux_snippet's offs). */
#define FTSAUX_HITS_MAX 128

/* Register the functions with the FTS5 module of a connection. */
int ftsaux_register(fts5_api *api);
