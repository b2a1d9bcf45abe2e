/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The search index's word tokenizer, "vaultd": FTS5's own unicode61
 * (case and diacritics folded) for alphabetic scripts, and overlapping
 * character pairs for Chinese, Japanese and Korean text, which is written
 * without spaces between words. unicode61 alone would make a whole CJK
 * sentence one token, so that no word inside it could be found; with
 * pairs, a CJK word of two characters or more is a phrase of pairs, and
 * matches, ranks and is highlighted like any other word.
 *
 * Each word also brings its Snowball stems (stem.h) at its position: in
 * a note, for the note's language; in a query, for the languages a
 * leading TOKENIZER_LANGS, two hex digits (a mask of enum lang), names,
 * else for all of them.
 */
#pragma once

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOKENIZER_LANGS '\x1b'
/* Texts shorter than this with no known language are names and aliases:
 * they take every language's stems. */
#define SHORT_TEXT 256

/* Register the tokenizer on a connection (each one that uses the index). */
int tokenizer_register(sqlite3 *db);

/* Han, kana, hangul: text cut into character pairs. */
bool tokenizer_is_cjk(int32_t cp);

/*
 * Token positions as the index counts them, without a connection of the
 * caller's: pos[i] is the number of tokens of text[0..n) that end before
 * offs[i] (ascending byte offsets, each at a space, between tokens).
 * 0, or -1 when no tokenizer could be made on this thread.
 */
int tokenizer_positions(const char *text, int n, const int *offs, int noffs,
			int *pos);

/*
 * text[0..n) tokenized as FTS5 tokenizes it for an auxiliary function
 * (FTS5_TOKENIZE_AUX: no stems), on this thread's tokenizer: cb(ctx, ...)
 * gets each token; cb's code, or SQLITE_ERROR when no tokenizer could be
 * made on this thread (unused: struct ftsaux_tok's context).
 */
int tokenizer_aux(void *unused, const char *text, int n, void *ctx,
		  int (*cb)(void *ctx, int tflags, const char *tok, int ntok,
			    int start, int end));

/*
 * The tokens FTS5 makes of a query's string text[0..n) (a phrase, as
 * written between quotes in a MATCH expression, with its leading
 * TOKENIZER_LANGS if any): fn gets each one in order, its flags
 * FTS5_TOKEN_COLOCATED when it stands at the previous one's position (a
 * stem). 0; -1 when no tokenizer could be made on this thread or fn did
 * not return SQLITE_OK.
 */
int tokenizer_query(const char *text, int n, void *ctx,
		    int (*fn)(void *ctx, int tflags, const char *tok,
			      int ntok));

/*
 * A note's text tokenized ahead, on any thread (a first build's
 * read-ahead): the tokens, in order, that this tokenizer gives for it as
 * a document. An insert on a thread that names it (tokenizer_replay)
 * takes them instead of tokenizing a document text equal to the one
 * named; any other text is tokenized as usual. NULL when no tokenizer
 * could be made on this thread.
 */
struct tokens;
struct tokens *tokenizer_tokens(const char *text, int n);
size_t tokens_size(const struct tokens *t);
struct tokens *tokens_free(struct tokens *t);
/* t for text[0..n) on this thread's inserts from now on; t NULL: none. */
void tokenizer_replay(const struct tokens *t, const char *text, int n);
/* tokenizer_positions() for the text t was made of, read from t (its
 * stems stand at their words' positions): 0, or -1 when t is damaged. */
int tokens_positions(const struct tokens *t, const int *offs, int noffs,
		     int *pos);
