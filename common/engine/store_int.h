/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The store's private parts, shared by its files (store.c: opening, the
 * schema, connections and reset; store_write.c: loading entries, writes
 * and transactions; store_query.c: a query as FTS5 expressions and SQL
 * conditions; store_relax.c: plain queries joined by OR, typo fixes;
 * store_snippet.c: a hit's snippet; store_rank.c: top k without ranking
 * every hit; store_words.c: the common words' notes in memory;
 * store_search.c: the searches themselves; store_stmt.c: the statements
 * a reader connection keeps; store_phrase.c: phrases from their words'
 * positions in memory; store_warm.c: the commonest words read ahead).
 */
#pragma once

#include "store.h"
#include "hmap.h"
#include "store_kept.h"
#include "util.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The layout; a database with another one is rebuilt. NOTE_FORMAT is part
 * of it: stored entries are only as good as the parser that made them. */
#define LAYOUT (9 * 1000 + NOTE_FORMAT)
#define POOL_MAX 8
/* Ranking: BM25 with a note's name and aliases weighing ten times its
 * text, with bounded work per note (ftsaux.h). */
#define RANK_WEIGHTS "10.0, 1.0"
#define RANK "vrank(" RANK_WEIGHTS ")"
/* Trigrams taken from a long content query (the rest is checked). */
#define MAX_TRIGRAMS 24

enum {
	ST_FIND,
	ST_ADD_NOTE,
	ST_SET_NOTE,
	ST_DEL_TAGS,
	ST_ADD_TAG,
	ST_OLD_DOC,
	ST_UNINDEX_FTS,
	ST_UNINDEX_SUB,
	ST_PUT_DOC,
	ST_INDEX_FTS,
	ST_INDEX_SUB,
	ST_DEL_DOC,
	ST_DEL_NOTE,
	ST_SET_STAT,
	ST_COUNT
};

/* A change to the FTS tables, held until the transaction commits. */
struct tokens;

struct fts_op {
	bool del;
	int64_t id;
	char *title, *body;
	int tlen, blen;
	struct tokens *toks; /* the body's, made ahead (tokenizer.h), or NULL */
};

struct store {
	char *path, *root;
	/* Queued FTS changes: any statement that needs a statement journal
	 * (an upsert, INSERT OR REPLACE, a multi-row DELETE) makes SQLite
	 * open a savepoint on every virtual table in the transaction, and
	 * FTS5 flushes its pending terms there; interleaved with them, every
	 * note would become its own FTS segment (several times slower). */
	struct fts_op *ops;
	size_t nops, capops;
	sqlite3 *w; /* the writer */
	sqlite3_stmt *st[ST_COUNT];
	pthread_mutex_t pmu;
	sqlite3 *pool[POOL_MAX];
	int npool;
	/* Bumped when what a search finds may have changed (not by the
	 * trigram backfill or a stat update): cursors and cached counts
	 * hold for one generation. */
	atomic_uint_fast64_t gen;
	bool dirty; /* the open transaction changed what searches find */
	/* The trigram index (sub) lags behind on a first build: rows with
	 * an id up to sub_cursor are in it; -1: all of them. It is filled
	 * after the word index, so that full-text search is ready sooner. */
	atomic_int_fast64_t sub_cursor;
	atomic_bool failed;
	char *error;
	/* Packs the texts (docz_dict.h); kept across a reset. dict_saved:
	 * the key of its dictionary once the zdict table holds it (the
	 * writer's; 0 until then). */
	struct docz_coder *coder;
	uint64_t dict_saved;
	/* How many notes each word of recent queries is in (FTS5
	 * expression to count + 1), for generation dfgen. */
	pthread_mutex_t dfmu;
	struct hmap *df;
	uint64_t dfgen;
	/* The common words' notes (store_words.c: FTS5 expression to
	 * struct sto_word), kept under wmu. */
	pthread_mutex_t wmu;
	struct sto_keep words;
	/* Every note's length (or NULL). */
	struct sto_lens *lens;
	/* The words' positions that phrases are checked on
	 * (store_phrase.c; its own lock). */
	struct sto_phrases *phrases;
	/* The notes each commit changed, oldest first, every one since
	 * generation wfloor: notes of that generation or a later one are
	 * brought up to date with them (under wmu). */
	struct sto_change *wlog;
	size_t nwlog, capwlog;
	uint64_t wfloor;
	/* The writer's: the notes the open transaction changes (more
	 * than the log holds: wpend_over). */
	int64_t *wpend;
	size_t nwpend, capwpend;
	bool wpend_over;
};

/* A note a commit changed, and the generation the commit made. */
struct sto_change {
	int64_t id;
	uint64_t gen;
};

/* A common word's notes by id, with what vrank needs of each (its
 * weighted instances and the note's length, whose normalisation,
 * ftsaux_norm, is computed as the note is scored: 8 bytes a note fewer
 * to keep), the notes indexed and their average length; shared,
 * immutable (but gen and used, under the store's wmu), counted
 * references. gen: the generation they are of. Kept small, 10 bytes a
 * note, so that more words fit in the words' memory: the ids in 32 bits
 * while they all fit (id32; else id64, and id32 NULL), the weighted
 * instances in 16 bits while whole and below STO_FREQ_ESC (most are:
 * the count of the title's times ten and the text's), else
 * STO_FREQ_ESC there and the double itself in esc, by index (once more
 * than one in STO_ESC_SHARE is, as for a word whose instances in long
 * notes are estimated, all are doubles in f64, and f16 NULL): the same
 * doubles, the same scores. Appended to with sto_word_add. */
#define STO_FREQ_ESC UINT16_MAX
#define STO_ESC_SHARE 8
struct sto_wesc {
	size_t at;
	double freq;
};

struct sto_word {
	size_t n, cap;
	uint32_t *id32;
	int64_t *id64;
	uint16_t *f16;
	double *f64;
	uint32_t *dl;
	struct sto_wesc *esc;
	size_t nesc, capesc;
	int64_t nrow;
	double avgdl;
	struct sto_kept kept;
};

/* Note i of w: its id, its weighted instances. */
static inline int64_t sto_word_id(const struct sto_word *w, size_t i)
{
	return w->id32 ? (int64_t)w->id32[i] : w->id64[i];
}

double sto_word_freq_esc(const struct sto_word *w, size_t i);

static inline double sto_word_freq(const struct sto_word *w, size_t i)
{
	if (!w->f16)
		return w->f64[i];
	uint16_t f = w->f16[i];
	return f != STO_FREQ_ESC ? (double)f : sto_word_freq_esc(w, i);
}

/* The notes' lengths in tokens (all columns), by id (ascending), as FTS5
 * keeps them in fts_docsize; shared, immutable (but gen, under wmu),
 * counted references. */
struct sto_lens {
	size_t n;
	int64_t *id;
	uint32_t *dl;
	uint64_t gen;
	atomic_int refs;
};

/* SQL text with its text parameters, numbered from FIRST_PARAM. */
#define FIRST_PARAM 4
struct sql {
	struct sbuf s;
	struct ptrvec params;
	bool sub_ok; /* the trigram index is complete */
	bool few;    /* the word index drives: few notes are tested */
};

/* store.c */
bool sto_ascii_only(const char *s, size_t n);
sqlite3 *sto_acquire(struct store *s);
void sto_release(struct store *s, sqlite3 *db);
int sto_write_failed(struct store *s);
/* The coder's dictionary (of that key) saved; -EIO when it is not the
 * coder's, or cannot be written. */
int sto_save_dict(struct store *s, uint64_t key);

/* store_write.c */
int sto_run(sqlite3_stmt *st);
bool sto_has_cjk(const char *t, size_t len);
void sto_drop_ops(struct store *s);
int sto_fts_rows(struct store *s, bool del, int64_t id, const char *title,
		 int tlen, const char *body, int blen);

/* store_query.c */
void sto_sql_free(struct sql *q);
void sto_bind_params(sqlite3_stmt *st, const struct sql *q);
bool sto_text_atom(const struct qnode *q);
bool sto_cjk_atom(const struct qnode *q);
char *sto_trigrams(const char *text);
void sto_fts_atom(struct sbuf *b, const struct qnode *q);
/* The two phrases of prefix q's FTS5 atom (sto_fts_atom), each an
 * expression of its own: the word itself and the words it begins. */
void sto_fts_prefix_phrases(const struct qnode *q, char **ret_word,
			    char **ret_prefix);
bool sto_ftsable(const struct qnode *q);
void sto_fts_expr(struct sbuf *b, const struct qnode *q);
void sto_where(struct sql *out, const struct qnode *q, bool cs);
void sto_rank_terms(struct sbuf *b, const struct qnode *q, bool negated);
struct qnode *sto_prune(struct qnode *q);
struct qnode *sto_copy(const struct qnode *q);

/* store_relax.c */
unsigned sto_query_stop_langs(const struct qnode *q);
unsigned sto_query_stem_langs(unsigned stop);
struct qnode *sto_relax(struct qnode *q, unsigned stop);
void sto_fix_typos(sqlite3 *db, struct qnode *q);
void sto_conjuncts(const struct qnode *q, struct ptrvec *out);

/* store_snippet.c */
void sto_first_cjk_word(const struct qnode *q, bool negated, const char **ret);
void sto_snippets(sqlite3 *db, struct ptrvec *hits, const char *match,
		  const char *cjk);

/* store_rank.c */
int sto_topk(struct store *s, sqlite3 *db, const char *match,
	     const struct qnode *q, uint64_t gen, size_t offset, size_t limit,
	     struct ptrvec *hits, size_t *ret_total, char **ret_msg);

/* store_words.c: the notes of FTS5 expression expr (a reference, given
 * back with sto_word_put), cached (brought up to date for generation gen)
 * or read now; NULL on error (*ret_r, *ret_msg). sto_word_cached: whether
 * they are cached (of any generation the log can bring up to date). */
void sto_words_init(struct store *s);
void sto_words_free(struct store *s);
struct sto_word *sto_word_get(struct store *s, sqlite3 *db, const char *expr,
			      uint64_t gen, int *ret_r, char **ret_msg);
void sto_word_put(struct sto_word *w);
/* The same, but read now (for one search, not kept) when not cached for
 * generation gen. */
struct sto_word *sto_word_read(struct store *s, sqlite3 *db, const char *expr,
			       uint64_t gen, int *ret_r, char **ret_msg);
bool sto_word_cached(struct store *s, const char *expr);
/* Notes (a common word's, or a word's positions) of an older generation
 * are brought up to date when at most one in REFRESH_SHARE of them (and
 * REFRESH_MIN at least) changed since: a changed note is looked up, which
 * costs about as much as reading a few notes in a pass. */
#define REFRESH_SHARE 8
#define REFRESH_MIN 4
/* The notes changed after generation from, by id, each once, in *ret
 * (*ret_n of them); false when the writer's log does not reach back that
 * far or they are more than max. sto_words_floor: the oldest generation
 * the log reaches back to (older notes are read afresh). */
bool sto_changed_since(struct store *s, uint64_t from, size_t max,
		       int64_t **ret, size_t *ret_n);
uint64_t sto_words_floor(struct store *s);
/* Whether a word in every one of notes notes fits in three quarters of
 * the words' memory with the words kept (read ahead: store_warm.c; the
 * rest is left to searches, which push the least recently used out). */
bool sto_words_room(struct store *s, int64_t notes);
/* Note id (past the last one) appended to w with its weighted instances
 * and length; w->bytes for w of expr with its w->n notes (for the
 * budgets). */
void sto_word_add(struct sto_word *w, int64_t id, double freq, uint32_t dl);
void sto_word_sized(struct sto_word *w, const char *expr);
/* The notes that match FTS5 expression expr, counted up to limit (< 0:
 * all; store_rank.c). -1 on error. */
int64_t sto_count_upto(sqlite3 *db, const char *expr, int64_t limit);
/* One of SQLite's varints at b + *at (as FTS5 writes its sizes), *at
 * moved past it. */
uint64_t sto_varint(const unsigned char *b, int n, int *at);
/* The tokens of a note from its fts_docsize blob b (a varint per
 * column): column col's, or with col < 0 all of them, as FTS5 sums them
 * for xColumnSize(-1). */
uint32_t sto_docsize(const unsigned char *b, int n, int col);
/* The notes indexed and their average length as vterm has them (1 when
 * there are none), from FTS5's averages record. < 0 on error. */
int sto_fts_averages(struct store *s, sqlite3 *db, int64_t *ret_nrow,
		     double *ret_avgdl, char **ret_msg);
/* w's lengths (w->dl), from its notes' lengths, scanned or looked up;
 * < 0 on error (*ret_msg set). */
int sto_word_lengths(struct store *s, sqlite3 *db, uint64_t gen,
		     struct sto_word *w, char **ret_msg);

/* store_phrase.c: the notes of FTS5 expression expr when it is a phrase
 * of two words or more (a reference, as sto_word_get's, with the same
 * values), from its words' positions in memory (cached for generation
 * gen, or read now); NULL when expr is another kind of expression (then
 * *ret_r is 0) or on error (*ret_r < 0, *ret_msg). */
void sto_phrases_init(struct store *s);
void sto_phrases_free(struct store *s);
struct sto_word *sto_phrase_get(struct store *s, sqlite3 *db, const char *expr,
				uint64_t gen, int *ret_r, char **ret_msg);
/* The positions of the words of phrase expr (as sto_phrase_get reads
 * them) read ahead and kept for generation gen, while they take at most
 * half the phrases' memory: 1, 0 when it is half full (or expr is no
 * phrase of two words), < 0 on error. */
int sto_phrase_warm(struct store *s, sqlite3 *db, const char *expr,
		    uint64_t gen);
/* The notes of phrase expr as sto_phrase_get found them for generation
 * gen, when they are kept (a reference), else NULL: none is read. */
struct sto_word *sto_phrase_found(struct store *s, const char *expr,
				  uint64_t gen);
/* The places of phrase expr (as sto_phrase_get finds them) in the text
 * (column 1) of notes id[0..n), from its words' positions kept for
 * generation gen: note i's offsets, at most max, in order, at
 * out[i * max], got[i] of them (-1: not found here); *ret_size: the
 * phrase's words. 0; -1 when they are not all kept (or expr is no phrase
 * of two words). */
int sto_phrase_places(struct store *s, const char *expr, uint64_t gen,
		      const int64_t *id, size_t n, int max, int *out, int *got,
		      int *ret_size);
/* For the tests: the snippets made from kept positions so far. */
extern atomic_size_t sto_phrase_snippets;
/* store_warm.c: the notes a store needs for its words to be read ahead
 * (the tests take fewer). */
extern int64_t sto_warm_min_notes;
/* For the tests: every phrase of two words or more is found from the
 * positions (none is left to FTS5 as sooner found there). */
extern bool sto_phrase_always;
/* The writer's: note id changed in the open transaction (touch); the
 * notes changed logged, before the commit (log), or forgotten, at a
 * rollback (forget); every word and the log dropped (reset). */
void sto_words_touch(struct store *s, int64_t id);
void sto_words_log(struct store *s);
void sto_words_forget(struct store *s);
void sto_words_reset(struct store *s);

/* store_stmt.c: sto_stmt gives db's kept statement of sql (prepared at
 * its first use on db; NULL: it cannot be prepared), held by the thread
 * until sto_stmt_done resets it; sto_run_kept runs such a statement that
 * returns no rows (true: done); sto_close_reader finalizes db's kept
 * statements and closes it. */
sqlite3_stmt *sto_stmt(sqlite3 *db, const char *sql);
void sto_stmt_done(sqlite3_stmt *st);
bool sto_run_kept(sqlite3 *db, const char *sql);
void sto_close_reader(sqlite3 *db);

/* store_search.c */
int sto_search_error(struct store *s, sqlite3 *db, char **ret_msg);
void sto_drop_hits(struct ptrvec *hits);

/* The languages whose stems the words of the query being planned bring
 * (stem.h): set by store_search for the thread that plans it. */
extern _Thread_local unsigned sto_query_langs;
