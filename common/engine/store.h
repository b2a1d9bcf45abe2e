/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The on-disk index (SQLite, in the cache folder, never in the vault):
 *
 *  - every note's index entry as a blob, with the size, mtime and inode
 *    it was read at, so a restart parses only the files that changed;
 *  - the notes' text (the body after the frontmatter, NFC) and two FTS5
 *    indexes over it: words (unicode61, diacritics folded; BM25 ranking,
 *    phrases, prefixes, snippets) and trigrams (substrings: the content
 *    search mode and CJK text, which has no spaces between words).
 *
 * Losing it loses no note: a missing, damaged or old-layout database is
 * deleted and built again from the vault.
 *
 * One writer at a time (the caller serialises writes); searches use a
 * pool of read connections and run alongside writes (WAL).
 */
#pragma once

#include "hmap.h"
#include "note.h"
#include "query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

struct store_entry {
	int64_t mtime_ns, size;
	uint64_t ino;
	const void *blob;
	size_t len;
};

/*
 * Open (or create) dir/index.sqlite for the vault at root. A database
 * that cannot be used is deleted and created again; *ret_note then says
 * why (for the caller's log) and is NULL otherwise.
 */
int store_open(const char *dir, const char *root, struct store **ret,
	       char **ret_note);
struct store *store_close(struct store *s);
const char *store_path(const struct store *s);
/* Bytes on disk (the database and its WAL). */
int64_t store_size(const struct store *s);
/* Bumped by every write: search cursors compare it. */
uint64_t store_generation(struct store *s);
/* A write found the database damaged (or the disk full): the caller
 * should store_reset() it and put every note again. */
bool store_failed(struct store *s);
/*
 * The substring (trigram) index is filled after the word index on a first
 * build: store_sub_ready() says whether it holds every note; until then
 * substring searches read the stored text instead (slower, same answers).
 * store_sub_backfill() fills it for about budget_ns (writer side, no
 * transaction open): 1 when more is left, 0 when complete, <0 on error.
 */
bool store_sub_ready(struct store *s);
int store_sub_backfill(struct store *s, uint64_t budget_ns, size_t *ret_done);
/*
 * The commonest words' notes read ahead, as their first search would read
 * them (store_warm.c), on a reader connection (any thread; the writer is
 * not held): store_warm_new() finds the words (NULL: none; a store of
 * few notes has none), store_warm_step() reads the next one (1 when more
 * are left, 0 when done, < 0 on error), store_warm_words() tells how many
 * there are.
 */
struct store_warm;
struct store_warm *store_warm_new(struct store *s);
int store_warm_step(struct store *s, struct store_warm *w);
size_t store_warm_words(const struct store_warm *w);
struct store_warm *store_warm_free(struct store_warm *w);
/* The common words' notes kept in memory now (store_words.c): how many
 * lists, and the bytes they take. */
void store_words_kept(struct store *s, size_t *ret_words, size_t *ret_bytes);
/*
 * A build leaves the word index in several segments (one per commit,
 * partly merged); every search reads each word's list once per segment.
 * store_fts_merge() merges them into one for about budget_ns (writer
 * side, no transaction open): 1 when more is left, 0 when the index is
 * one segment, <0 on error. The answers do not change.
 */
int store_fts_merge(struct store *s, uint64_t budget_ns);
const char *store_error(struct store *s);
/* Delete the database and create it empty. */
int store_reset(struct store *s, char **ret_note);

/* True when no note is stored (a new or rebuilt index). */
bool store_empty(struct store *s);
/*
 * Every stored entry, read at once (the entries live in a few large
 * blocks, not one allocation each). Lookups may run on several threads;
 * store_entries_use() marks an entry as accounted for, and
 * store_entries_next_unused() then lists the others (notes that are gone).
 */
struct store_entries;
struct store_entries *store_load(struct store *s);
const struct store_entry *store_entries_get(const struct store_entries *es,
					    const char *path);
void store_entries_use(struct store_entries *es, const char *path);
bool store_entries_next_unused(const struct store_entries *es, size_t *iter,
			       const char **ret_path);
struct store_entries *store_entries_free(struct store_entries *es);

/* Writes, grouped in transactions (one writer at a time). */
int store_begin(struct store *s);
int store_commit(struct store *s);
void store_rollback(struct store *s);
/* The note's entry and its text (the whole file; NULL: no text). */
int store_put(struct store *s, const struct note *n, const char *text,
	      size_t len);
/*
 * The same in two steps, the first of which any thread may do (it
 * needs no transaction, only the store's dictionary): a note's text as
 * the store keeps it (the body, normalised and compressed), then the put
 * (which takes t over).
 */
struct store_text;
struct store_text *store_text_new(struct store *s, const char *text,
				  size_t len);
/* The same, tokenized for the index ahead as well (tokenizer.h), off
 * the writer's thread; the tokens also give the compressed chunks'
 * positions, which store_text_new() tokenizes the text once more for. */
struct store_text *store_text_tokenized(struct store *s, const char *text,
					size_t len);
/* Bytes of memory it holds. */
size_t store_text_size(const struct store_text *t);
struct store_text *store_text_free(struct store_text *t);
int store_put_text(struct store *s, const struct note *n, struct store_text *t);
int store_remove(struct store *s, const char *path);
/* The file facts of an entry put earlier with none (a racy note's, once
 * proven: note.h). */
int store_set_stat(struct store *s, const char *path, int64_t mtime_ns,
		   int64_t size, uint64_t ino);

struct store_hit {
	char *path;
	double score;
	char *snippet; /* fulltext: matched words between ** */
	int line;      /* content: the first matching line (in the file) */
};
void store_hits_free(struct store_hit *h, size_t n);

/*
 * Ranked full-text search (BM25; a match in the title, i.e. the name or an
 * alias, weighs ten times a match in the text). Words side by side (no
 * operator between them) find the notes with any of them, stop words left
 * out, those with more of them first; words match their other forms
 * (stems, stem.h). Results from offset, at most limit; *ret_total counts
 * them all. Errors: -EINVAL (nothing to search for) or -EIO, with a
 * message.
 */
int store_search(struct store *s, const struct qnode *q, bool case_sensitive,
		 size_t offset, size_t limit, struct store_hit **ret,
		 size_t *ret_n, size_t *ret_total, char **ret_msg);

/*
 * Case-insensitive substring search in the notes' text (content mode),
 * through the trigram index; results in name order.
 */
int store_search_text(struct store *s, const char *query, size_t offset,
		      size_t limit, struct store_hit **ret, size_t *ret_n,
		      size_t *ret_total, char **ret_msg);
