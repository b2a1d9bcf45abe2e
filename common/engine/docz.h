/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A note's text as the search index stores it: cut at spaces into chunks
 * of about DOCZ_CHUNK bytes, each compressed on its own (zstd with the
 * store's dictionary, docz_dict.h; raw deflate without one), behind a
 * table of where each chunk starts (in the text, in its tokens, in the
 * blob). A snippet then reads and inflates the chunk around its hits, not
 * the whole note (a 2 MB note cost milliseconds per snippet).
 *
 * 'c', the text's size (4 bytes, little-endian), the number of chunks
 * (4), per chunk its text offset, its first token's position and its
 * offset among the compressed bytes (4 each), then the deflate streams;
 * 'z', the dictionary's key (8), the size and the number of chunks as
 * varints, the same table (none for a text of one chunk), then zstd
 * frames; or, for a short text, 'r' and the text as is.
 */
#pragma once

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 8 KiB rather than 4: at 10,000 notes (4.3 KB each on average, most of
 * them two chunks of 4 KiB) the texts take 5 % fewer bytes, and a
 * snippet inflates 8 KiB in microseconds. */
#define DOCZ_CHUNK 8192
/* Texts shorter than this are kept as they are. */
#define DOCZ_PACK_MIN 256

struct docz_dict;

/* The text packed (malloc'ed, *ret_len bytes): with deflate, or with
 * zstd and dictionary d. A reader needs d listed (docz_dict.h). */
void *docz_pack(const char *text, size_t len, size_t *ret_len);
/* toks: the text's tokens (tokenizer_tokens()), if made already, for
 * the chunks' first positions; NULL: it is tokenized here for them. */
struct tokens;
void *docz_pack_with(const struct docz_dict *d, const char *text, size_t len,
		     const struct tokens *toks, size_t *ret_len);
/* The key of the dictionary a packed blob needs (0: none). */
uint64_t docz_key(const void *blob, size_t n);
/* The whole text of a packed blob (NUL-terminated, malloc'ed), or NULL
 * when it is damaged. */
char *docz_text(const void *blob, size_t n, size_t *ret_len);

/* A chunk of a stored text: its first token is at position pos; more
 * when text follows it. */
struct docz_part {
	char *text;
	int len;
	int pos;
	bool more;
};

/*
 * The stored text of row id of table.column (a docz_pack() blob) around
 * the tokens at positions tok to tok_last: the chunk that holds tok, and
 * the next one when tok_last is in it (only those are inflated).
 * *blob: a handle to reuse for the next row (NULL at first; the caller
 * closes it with sqlite3_blob_close()). 0, -ENOENT without such a row,
 * -EIO when it is damaged.
 */
int docz_read(sqlite3 *db, const char *table, const char *column, int64_t id,
	      int tok, int tok_last, sqlite3_blob **blob,
	      struct docz_part *ret);
