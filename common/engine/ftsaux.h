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
 * The full-text search's snippet, "vsnippet(fts, column [, table,
 * column [, phrases]])": the words
 * around the first hit of the note, hits marked with **. Its work is
 * bounded whatever the note's size or number of hits (FTS5's own
 * snippet() compares every hit with every other one: a 5 MB note of one
 * repeated word took minutes).
 */
#pragma once

#include <sqlite3.h>

/* Register the functions with the FTS5 module of a connection. */
int ftsaux_register(fts5_api *api);
