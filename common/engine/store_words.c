/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The common words' notes in memory: for a word that a good part of the
 * notes have, every note with it and what the ranking needs of each (its
 * weighted instances: vterm, ftsaux.h; the note's length, from the
 * notes' lengths, which are read in one scan and kept too; its length
 * normalisation is computed as it is scored), read in one pass over the
 * word's notes, the most recently used first within a memory budget. A
 * search of such words alone then ranks their notes in memory, with the
 * same scores as FTS5 would give them, instead of reading every note's
 * positions again (store_rank.c). They are kept across writes: the
 * writer logs the notes each commit changes (sto_words_touch,
 * sto_words_log), and the notes of a word (or the lengths) of an older
 * generation are brought up to date by reading again only the notes
 * changed since, with the notes' new count and average length: the same
 * doubles as a fresh pass. The log is bounded: past WLOG_MAX notes its
 * oldest go, and what is older than them is read afresh.
 */
#include "ftsaux.h"
#include "store_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The memory the words' notes may take, all words together: 32 MiB, or
 * WORDS_BUDGET bytes a note indexed (a search's common words come from a
 * few dozen: at 100k notes, more than 32 MiB; a word read again costs a
 * pass over its notes' positions, half a second there): the memory 44
 * words that every note has took at 20 bytes a note, 88 at 10. */
#define WORDS_BYTES_MIN ((size_t)32 << 20)
#define WORDS_BUDGET (20 * 44)
/* What a note costs in a word's notes (ids in 32 bits; the few escaped
 * weighted instances are counted apart). */
#define NOTE_BYTES (sizeof(uint32_t) + sizeof(uint16_t) + sizeof(uint32_t))

/* The notes changed that the log holds at most (a transaction that
 * changes more empties it). */
#define WLOG_MAX 2048

static size_t per_note(const struct sto_word *w)
{
	size_t b = NOTE_BYTES;
	if (w->id64)
		b += sizeof(int64_t) - sizeof(uint32_t);
	if (w->f64)
		b += sizeof(double) - sizeof(uint16_t);
	return b;
}

static size_t words_budget(const struct sto_word *w)
{
	size_t all = (size_t)(w->nrow > 0 ? w->nrow : 0) * WORDS_BUDGET;
	return all > WORDS_BYTES_MIN ? all : WORDS_BYTES_MIN;
}

bool sto_words_room(struct store *s, int64_t notes)
{
	struct sto_word all = {.nrow = notes};
	size_t budget = words_budget(&all);
	size_t need = (size_t)(notes > 0 ? notes : 0) * NOTE_BYTES;
	pthread_mutex_lock(&s->wmu);
	bool room = s->words.bytes + need <= budget / 4 * 3;
	pthread_mutex_unlock(&s->wmu);
	return room;
}

static void word_unref(struct sto_word *w)
{
	if (!w || atomic_fetch_sub(&w->kept.refs, 1) != 1)
		return;
	free(w->id32);
	free(w->id64);
	free(w->f16);
	free(w->f64);
	free(w->dl);
	free(w->esc);
	free(w);
}

void sto_word_put(struct sto_word *w)
{
	word_unref(w);
}

static void word_kept_unref(struct sto_kept *e)
{
	word_unref(sto_kept_of(e, struct sto_word, kept));
}

static void lens_put(struct sto_lens *l)
{
	if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	free(l->id);
	free(l->dl);
	free(l);
}

/* Every word out of the cache (s->wmu held). */
static void words_clear(struct store *s)
{
	sto_keep_clear(&s->words);
	lens_put(s->lens);
	s->lens = NULL;
}

void sto_words_init(struct store *s)
{
	pthread_mutex_init(&s->wmu, NULL);
	sto_keep_init(&s->words, &s->wmu, word_kept_unref);
}

void sto_words_free(struct store *s)
{
	words_clear(s);
	sto_keep_free(&s->words);
	free(s->wlog);
	free(s->wpend);
	pthread_mutex_destroy(&s->wmu);
}

void store_words_kept(struct store *s, size_t *ret_words, size_t *ret_bytes)
{
	pthread_mutex_lock(&s->wmu);
	*ret_words = s->words.map ? hmap_size(s->words.map) : 0;
	*ret_bytes = s->words.bytes;
	pthread_mutex_unlock(&s->wmu);
}

/* The words and lengths older than the log out of the cache (s->wmu
 * held): they cannot be brought up to date. */
static void drop_old(struct store *s)
{
	sto_keep_drop_old(&s->words, s->wfloor);
	if (s->lens && s->lens->gen < s->wfloor) {
		lens_put(s->lens);
		s->lens = NULL;
	}
}

/* ---- the writer's log --------------------------------------------------- */

void sto_words_touch(struct store *s, int64_t id)
{
	if (s->wpend_over)
		return;
	if (s->nwpend == WLOG_MAX) {
		s->wpend_over = true;
		return;
	}
	if (s->nwpend == s->capwpend) {
		s->capwpend = s->capwpend ? 2 * s->capwpend : 64;
		s->wpend = xrealloc(s->wpend, s->capwpend * sizeof(*s->wpend));
	}
	s->wpend[s->nwpend++] = id;
}

void sto_words_forget(struct store *s)
{
	s->nwpend = 0;
	s->wpend_over = false;
}

void sto_words_log(struct store *s)
{
	if (!s->nwpend && !s->wpend_over)
		return;
	/* The generation the commit makes. */
	uint64_t gen = atomic_load(&s->gen) + 1;
	pthread_mutex_lock(&s->wmu);
	size_t keep = WLOG_MAX - s->nwpend;
	if (s->wpend_over) {
		s->nwlog = 0;
		s->wfloor = gen;
	} else if (s->nwlog > keep) {
		/* The oldest out, half the log at once. */
		size_t out = s->nwlog - keep / 2;
		s->wfloor = s->wlog[out - 1].gen;
		memmove(s->wlog, s->wlog + out,
			(s->nwlog - out) * sizeof(*s->wlog));
		s->nwlog -= out;
	}
	if (!s->wpend_over) {
		if (s->nwlog + s->nwpend > s->capwlog) {
			s->capwlog = WLOG_MAX;
			s->wlog = xrealloc(s->wlog,
					   s->capwlog * sizeof(*s->wlog));
		}
		for (size_t i = 0; i < s->nwpend; i++)
			s->wlog[s->nwlog++] =
				(struct sto_change){s->wpend[i], gen};
	}
	drop_old(s);
	pthread_mutex_unlock(&s->wmu);
	sto_words_forget(s);
}

void sto_words_reset(struct store *s)
{
	pthread_mutex_lock(&s->wmu);
	words_clear(s);
	s->nwlog = 0;
	s->wfloor = atomic_load(&s->gen) + 1;
	pthread_mutex_unlock(&s->wmu);
	sto_words_forget(s);
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t sto_words_floor(struct store *s)
{
	pthread_mutex_lock(&s->wmu);
	uint64_t floor = s->wfloor;
	pthread_mutex_unlock(&s->wmu);
	return floor;
}

bool sto_changed_since(struct store *s, uint64_t from, size_t max,
		       int64_t **ret, size_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	pthread_mutex_lock(&s->wmu);
	bool ok = from >= s->wfloor;
	size_t first = s->nwlog;
	while (ok && first > 0 && s->wlog[first - 1].gen > from)
		first--;
	size_t n = s->nwlog - first;
	ok = ok && n <= max;
	int64_t *v = ok && n ? xmalloc(n * sizeof(*v)) : NULL;
	for (size_t i = 0; ok && i < n; i++)
		v[i] = s->wlog[first + i].id;
	pthread_mutex_unlock(&s->wmu);
	if (!ok)
		return false;
	if (n)
		qsort(v, n, sizeof(*v), cmp_id);
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (!m || v[m - 1] != v[i])
			v[m++] = v[i];
	*ret = v;
	*ret_n = m;
	return true;
}

/* ---- the cache ------------------------------------------------------------
 */

/* The cached notes of expr (a reference; *ret_gen: the generation they
 * are of), or NULL; older than the log: dropped. */
static struct sto_word *lookup(struct store *s, const char *expr,
			       uint64_t *ret_gen)
{
	struct sto_kept *e = sto_keep_get(&s->words, expr, &s->wfloor, ret_gen);
	return e ? sto_kept_of(e, struct sto_word, kept) : NULL;
}

bool sto_word_cached(struct store *s, const char *expr)
{
	uint64_t at;
	struct sto_word *w = lookup(s, expr, &at);
	word_unref(w);
	return w != NULL;
}

/* w kept for generation gen, in place of notes of an older one, unless a
 * write committed since it was read (it may be of before that write) or
 * it is too big to keep. */
static void keep(struct store *s, const char *expr, uint64_t gen,
		 struct sto_word *w)
{
	size_t budget = words_budget(w);
	if (atomic_load(&s->gen) != gen || w->kept.bytes > budget / 4)
		return;
	sto_keep_put(&s->words, expr, gen, &w->kept, budget);
}

/* Room for one more note in w. */
static void grow(struct sto_word *w)
{
	if (w->n < w->cap)
		return;
	w->cap = w->cap ? w->cap * 2 : 1024;
	if (w->id64)
		w->id64 = xrealloc(w->id64, w->cap * sizeof(*w->id64));
	else
		w->id32 = xrealloc(w->id32, w->cap * sizeof(*w->id32));
	if (w->f64)
		w->f64 = xrealloc(w->f64, w->cap * sizeof(*w->f64));
	else
		w->f16 = xrealloc(w->f16, w->cap * sizeof(*w->f16));
	w->dl = xrealloc(w->dl, w->cap * sizeof(*w->dl));
}

/* w's ids in 64 bits from now on. */
static void wide_ids(struct sto_word *w)
{
	w->id64 = xmalloc((w->cap ? w->cap : 1) * sizeof(*w->id64));
	for (size_t i = 0; i < w->n; i++)
		w->id64[i] = w->id32[i];
	free(w->id32);
	w->id32 = NULL;
}

/* w's weighted instances all doubles from now on (too many escaped: a
 * look-up each would cost more than they spare). */
static void wide_freqs(struct sto_word *w)
{
	w->f64 = xmalloc((w->cap ? w->cap : 1) * sizeof(*w->f64));
	for (size_t i = 0; i < w->n; i++)
		w->f64[i] = sto_word_freq(w, i);
	free(w->f16);
	free(w->esc);
	w->f16 = NULL;
	w->esc = NULL;
	w->nesc = w->capesc = 0;
}

void sto_word_add(struct sto_word *w, int64_t id, double freq, uint32_t dl)
{
	grow(w);
	if (w->id32 && (id < 0 || id > (int64_t)UINT32_MAX))
		wide_ids(w);
	if (w->id32)
		w->id32[w->n] = (uint32_t)id;
	else
		w->id64[w->n] = id;
	bool whole = freq >= 0 && freq < STO_FREQ_ESC && !signbit(freq) &&
		     (double)(uint16_t)freq == freq;
	if (!whole && w->f16 && w->nesc >= 16 &&
	    (w->nesc + 1) * STO_ESC_SHARE > w->n + 1)
		wide_freqs(w);
	if (w->f64) {
		w->f64[w->n] = freq;
		whole = true;
	} else {
		w->f16[w->n] = whole ? (uint16_t)freq : STO_FREQ_ESC;
	}
	if (!whole) {
		if (w->nesc == w->capesc) {
			w->capesc = w->capesc ? 2 * w->capesc : 16;
			w->esc = xrealloc(w->esc, w->capesc * sizeof(*w->esc));
		}
		w->esc[w->nesc++] = (struct sto_wesc){w->n, freq};
	}
	w->dl[w->n++] = dl;
}

double sto_word_freq_esc(const struct sto_word *w, size_t i)
{
	size_t lo = 0, hi = w->nesc;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->esc[mid].at < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->nesc && w->esc[lo].at == i ? w->esc[lo].freq : 0;
}

void sto_word_sized(struct sto_word *w, const char *expr)
{
	w->kept.bytes = sizeof(*w) + strlen(expr) + w->n * per_note(w) +
			w->nesc * sizeof(*w->esc);
}

/* ---- the notes' lengths ----------------------------------------------------
 * BM25 weighs a note by its length (tokens, all columns), which FTS5 keeps
 * in the table fts_docsize: vterm leaves it out, and the lengths of a
 * word's notes are read here, all of them in one scan of that table when
 * the word is in a good part of the notes (kept, as the words are, and
 * brought up to date the same way: the next word needs no scan), else
 * looked up one by one.
 */

/* A word in at least 1 / LENS_SHARE of the notes has their lengths
 * scanned: a scan costs about a tenth of a look-up per note. */
#define LENS_SHARE 8

/* One of SQLite's varints at b + *at (7 bits a byte, high bit set: more
 * follow; a ninth byte whole), *at moved past it. */
uint64_t sto_varint(const unsigned char *b, int n, int *at)
{
	uint64_t v = 0;
	for (int k = 0; *at < n; k++) {
		unsigned char c = b[(*at)++];
		if (k == 8)
			return v << 8 | c;
		v = v << 7 | (c & 0x7f);
		if (!(c & 0x80))
			break;
	}
	return v;
}

uint32_t sto_docsize(const unsigned char *b, int n, int col)
{
	uint32_t total = 0, size = 0;
	for (int c = 0, at = 0; b && at < n && (col < 0 || c <= col); c++) {
		size = (uint32_t)sto_varint(b, n, &at);
		total += size;
	}
	return col < 0 ? total : size;
}

/* The notes indexed and their average length as vterm has them (1 when
 * there are none), from FTS5's averages record (row 1 of fts_data: the
 * notes, then each column's tokens). < 0 on error (*ret_msg set). */
int sto_fts_averages(struct store *s, sqlite3 *db, int64_t *ret_nrow,
		     double *ret_avgdl, char **ret_msg)
{
	sqlite3_stmt *st =
		sto_stmt(db, "SELECT block FROM fts_data WHERE id = 1");
	if (!st)
		return sto_search_error(s, db, ret_msg);
	int64_t nrow = 0, ntok = 0;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *b = sqlite3_column_blob(st, 0);
		int n = sqlite3_column_bytes(st, 0), at = 0;
		if (b && n > 0)
			nrow = (int64_t)sto_varint(b, n, &at);
		while (b && at < n)
			ntok += (int64_t)sto_varint(b, n, &at);
	}
	int r = rc == SQLITE_ROW || rc == SQLITE_DONE
			? 0
			: sto_search_error(s, db, ret_msg);
	sto_stmt_done(st);
	*ret_nrow = nrow;
	*ret_avgdl = nrow > 0 ? (double)ntok / (double)nrow : 1;
	return r;
}

/* Note id's length (0: it has none, *ret_has false), looked up in st
 * ("SELECT sz FROM fts_docsize WHERE id = ?1"); < 0 on error. */
static int look_up_len(struct store *s, sqlite3 *db, sqlite3_stmt *st,
		       int64_t id, uint32_t *ret_dl, bool *ret_has,
		       char **ret_msg)
{
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st), r = 0;
	*ret_dl = 0;
	*ret_has = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW)
		*ret_dl = sto_docsize(sqlite3_column_blob(st, 0),
				      sqlite3_column_bytes(st, 0), -1);
	else if (rc != SQLITE_DONE)
		r = sto_search_error(s, db, ret_msg);
	sqlite3_reset(st);
	return r;
}

static struct sto_lens *lens_new(size_t cap)
{
	struct sto_lens *l = xcalloc(1, sizeof(*l));
	atomic_init(&l->refs, 1);
	l->id = xmalloc((cap ? cap : 1) * sizeof(*l->id));
	l->dl = xmalloc((cap ? cap : 1) * sizeof(*l->dl));
	return l;
}

/* Every note's length, by id (one scan) in *ret; < 0 on error (*ret_msg
 * set). */
static int scan_lens(struct store *s, sqlite3 *db, struct sto_lens **ret,
		     char **ret_msg)
{
	*ret = NULL;
	sqlite3_stmt *st = sto_stmt(db, "SELECT id, sz FROM fts_docsize");
	if (!st)
		return sto_search_error(s, db, ret_msg);
	size_t cap = 4096;
	struct sto_lens *l = lens_new(cap);
	int r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		if (l->n == cap) {
			cap *= 2;
			l->id = xrealloc(l->id, cap * sizeof(*l->id));
			l->dl = xrealloc(l->dl, cap * sizeof(*l->dl));
		}
		l->id[l->n] = sqlite3_column_int64(st, 0);
		l->dl[l->n++] = sto_docsize(sqlite3_column_blob(st, 1),
					    sqlite3_column_bytes(st, 1), -1);
	}
	r = r == SQLITE_DONE ? 0 : sto_search_error(s, db, ret_msg);
	sto_stmt_done(st);
	if (r < 0)
		lens_put(l);
	else
		*ret = l;
	return r;
}

/* old's lengths with those of the n notes chg (by id) read again. */
static int refresh_lens(struct store *s, sqlite3 *db,
			const struct sto_lens *old, const int64_t *chg,
			size_t n, struct sto_lens **ret, char **ret_msg)
{
	*ret = NULL;
	sqlite3_stmt *st =
		sto_stmt(db, "SELECT sz FROM fts_docsize WHERE id = ?1");
	if (!st)
		return sto_search_error(s, db, ret_msg);
	struct sto_lens *l = lens_new(old->n + n);
	size_t i = 0, j = 0;
	int r = 0;
	while (r == 0 && (i < old->n || j < n)) {
		if (j >= n || (i < old->n && old->id[i] < chg[j])) {
			l->id[l->n] = old->id[i];
			l->dl[l->n++] = old->dl[i++];
			continue;
		}
		if (i < old->n && old->id[i] == chg[j])
			i++;
		bool has;
		r = look_up_len(s, db, st, chg[j], &l->dl[l->n], &has, ret_msg);
		if (has)
			l->id[l->n++] = chg[j];
		j++;
	}
	sto_stmt_done(st);
	if (r < 0)
		lens_put(l);
	else
		*ret = l;
	return r;
}

/* l kept for generation gen, in place of older lengths (as keep()). */
static void keep_lens(struct store *s, uint64_t gen, struct sto_lens *l)
{
	if (atomic_load(&s->gen) != gen)
		return;
	pthread_mutex_lock(&s->wmu);
	if (s->lens == l) {
		l->gen = gen;
	} else if (!s->lens || s->lens->gen < gen) {
		lens_put(s->lens);
		atomic_fetch_add(&l->refs, 1);
		l->gen = gen;
		s->lens = l;
	}
	pthread_mutex_unlock(&s->wmu);
}

/* The lengths kept (a reference; *ret_gen: their generation), or NULL. */
static struct sto_lens *lens_kept(struct store *s, uint64_t *ret_gen)
{
	pthread_mutex_lock(&s->wmu);
	struct sto_lens *l = s->lens;
	if (l && l->gen < s->wfloor)
		l = NULL;
	if (l) {
		*ret_gen = l->gen;
		atomic_fetch_add(&l->refs, 1);
	}
	pthread_mutex_unlock(&s->wmu);
	return l;
}

/* *l, of generation at, brought up to date for generation gen when at
 * most max notes changed since, else NULL (the reference given back);
 * < 0 on error (*ret_msg set). */
static int lens_update(struct store *s, sqlite3 *db, uint64_t gen, uint64_t at,
		       size_t max, struct sto_lens **l, char **ret_msg)
{
	_cleanup_free_ int64_t *chg = NULL;
	size_t n;
	if (!sto_changed_since(s, at < gen ? at : gen, max, &chg, &n)) {
		lens_put(*l);
		*l = NULL;
		return 0;
	}
	if (!n) {
		keep_lens(s, gen, *l);
		return 0;
	}
	struct sto_lens *fresh = NULL;
	int r = refresh_lens(s, db, *l, chg, n, &fresh, ret_msg);
	lens_put(*l);
	*l = fresh;
	if (fresh)
		keep_lens(s, gen, fresh);
	return r;
}

/* The lengths kept, brought up to date for generation gen (with read, or
 * when no more than want notes changed), a reference in *ret; else, with
 * read, scanned now; else NULL. < 0 on error (*ret_msg set). */
static int lens_of(struct store *s, sqlite3 *db, uint64_t gen, bool read,
		   size_t want, struct sto_lens **ret, char **ret_msg)
{
	uint64_t at = 0;
	struct sto_lens *l = lens_kept(s, &at);
	*ret = NULL;
	int r = 0;
	if (l && at != gen)
		r = lens_update(s, db, gen, at,
				read ? l->n / REFRESH_SHARE : want, &l,
				ret_msg);
	if (r < 0) {
		lens_put(l);
		return r;
	}
	if (!l && read) {
		r = scan_lens(s, db, &l, ret_msg);
		if (r == 0)
			keep_lens(s, gen, l);
	}
	*ret = l;
	return r;
}

/* The length of note id in l; *at: where the previous one was (the notes
 * come by id), moved on: the next few are looked at, then the rest
 * halved (a rare word's notes are far apart). */
static uint32_t len_in(const struct sto_lens *l, int64_t id, size_t *at)
{
	size_t lo = *at < l->n && l->id[*at] <= id ? *at : 0, hi = l->n;
	for (int k = 0; k < 8 && lo < hi && l->id[lo] < id; k++)
		lo++;
	while (lo < hi && l->id[lo] < id) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return lo < l->n && l->id[lo] == id ? l->dl[lo] : 0;
}

int sto_word_lengths(struct store *s, sqlite3 *db, uint64_t gen,
		     struct sto_word *w, char **ret_msg)
{
	struct sto_lens *l;
	int r = lens_of(s, db, gen,
			w->nrow > 0 && w->n * LENS_SHARE >= (size_t)w->nrow,
			w->n, &l, ret_msg);
	if (r < 0)
		return r;
	sqlite3_stmt *one =
		l ? NULL
		  : sto_stmt(db, "SELECT sz FROM fts_docsize WHERE id = ?1");
	if (!l && !one)
		return sto_search_error(s, db, ret_msg);
	size_t at = 0;
	for (size_t i = 0; i < w->n && r == 0; i++) {
		bool has;
		if (l)
			w->dl[i] = len_in(l, sto_word_id(w, i), &at);
		else
			r = look_up_len(s, db, one, sto_word_id(w, i),
					&w->dl[i], &has, ret_msg);
	}
	sto_stmt_done(one);
	lens_put(l);
	return r;
}

/* One note's part of vterm's answer in *t from st's row (column col);
 * false when it cannot be read. */
static bool term_of(sqlite3_stmt *st, int col, struct ftsaux_term *t)
{
	const void *b = sqlite3_column_blob(st, col);
	if (!b || sqlite3_column_bytes(st, col) != (int)sizeof(*t))
		return false;
	memcpy(t, b, sizeof(*t));
	return true;
}

static int unreadable(char **ret_msg)
{
	*ret_msg = xstrdup("Search failed: a note's statistics cannot be read");
	return -EIO;
}

/* The notes of expr read in one pass (by id), or NULL (*ret_r set). */
static struct sto_word *read_word(struct store *s, sqlite3 *db,
				  const char *expr, uint64_t gen, int *ret_r,
				  char **ret_msg)
{
	sqlite3_stmt *st = sto_stmt(db, "SELECT rowid, vterm(fts, " RANK_WEIGHTS
					") FROM fts WHERE fts MATCH ?1");
	if (!st) {
		*ret_r = sto_search_error(s, db, ret_msg);
		return NULL;
	}
	sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	struct sto_word *w = xcalloc(1, sizeof(*w));
	atomic_init(&w->kept.refs, 1);
	w->avgdl = 1;
	int r;
	bool ok = true;
	while (ok && (r = sqlite3_step(st)) == SQLITE_ROW) {
		struct ftsaux_term t;
		ok = term_of(st, 1, &t);
		if (!ok)
			break;
		sto_word_add(w, sqlite3_column_int64(st, 0), t.freq, 0);
		w->avgdl = t.avgdl;
		w->nrow = t.nrow;
	}
	if (!ok) {
		*ret_r = unreadable(ret_msg);
	} else if (r != SQLITE_DONE) {
		*ret_r = sto_search_error(s, db, ret_msg);
		ok = false;
	}
	sto_stmt_done(st);
	if (ok && (*ret_r = sto_word_lengths(s, db, gen, w, ret_msg)) < 0)
		ok = false;
	if (!ok) {
		word_unref(w);
		return NULL;
	}
	sto_word_sized(w, expr);
	return w;
}

/* A changed note that has the word: its weighted instances and length. */
struct fresh {
	int64_t id;
	double freq;
	uint32_t dl;
};

/* The n notes chg read again: those that have expr in f (by id; *ret_nf
 * of them). < 0 on error (*ret_msg set). */
static int read_changed(struct store *s, sqlite3 *db, const char *expr,
			const int64_t *chg, size_t n, struct fresh *f,
			size_t *ret_nf, char **ret_msg)
{
	sqlite3_stmt *st = sto_stmt(db, "SELECT vterm(fts, " RANK_WEIGHTS
					") FROM fts WHERE fts MATCH ?1"
					" AND rowid = ?2");
	sqlite3_stmt *len =
		st ? sto_stmt(db, "SELECT sz FROM fts_docsize WHERE id = ?1")
		   : NULL;
	int r = st && len ? 0 : sto_search_error(s, db, ret_msg);
	size_t nf = 0;
	if (st)
		sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	for (size_t i = 0; i < n && r == 0; i++) {
		sqlite3_bind_int64(st, 2, chg[i]);
		int rc = sqlite3_step(st);
		struct ftsaux_term t;
		bool has = false;
		if (rc == SQLITE_ROW && !term_of(st, 0, &t))
			r = unreadable(ret_msg);
		else if (rc == SQLITE_ROW)
			r = look_up_len(s, db, len, chg[i], &f[nf].dl, &has,
					ret_msg);
		else if (rc != SQLITE_DONE)
			r = sto_search_error(s, db, ret_msg);
		sqlite3_reset(st);
		if (r == 0 && rc == SQLITE_ROW) {
			f[nf].id = chg[i];
			f[nf++].freq = t.freq;
		}
	}
	sto_stmt_done(len);
	sto_stmt_done(st);
	*ret_nf = nf;
	return r;
}

/* old's notes but the n changed ones chg, and the nf changed ones that
 * have the word f, merged by id, for notes of avgdl on average. */
static struct sto_word *merged(const struct sto_word *old, const int64_t *chg,
			       size_t n, const struct fresh *f, size_t nf,
			       double avgdl)
{
	struct sto_word *w = xcalloc(1, sizeof(*w));
	atomic_init(&w->kept.refs, 1);
	w->avgdl = avgdl;
	size_t i = 0, j = 0, k = 0;
	while (i < old->n || k < nf) {
		int64_t id = i < old->n ? sto_word_id(old, i) : 0;
		if (i < old->n) {
			while (j < n && chg[j] < id)
				j++;
			if (j < n && chg[j] == id) {
				i++;
				continue;
			}
		}
		if (k >= nf || (i < old->n && id < f[k].id)) {
			sto_word_add(w, id, sto_word_freq(old, i), old->dl[i]);
			i++;
		} else {
			sto_word_add(w, f[k].id, f[k].freq, f[k].dl);
			k++;
		}
	}
	return w;
}

/* The notes of expr, of generation from (old), brought up to date by
 * reading again the notes changed since, in *ret (old itself, another
 * reference, when none changed); NULL when too many did (or the log does
 * not reach back that far). < 0 on error (*ret_msg set). */
static int refresh_word(struct store *s, sqlite3 *db, const char *expr,
			struct sto_word *old, uint64_t from,
			struct sto_word **ret, char **ret_msg)
{
	*ret = NULL;
	int64_t nrow;
	double avgdl;
	/* Read first: the snapshot has begun before the log is read. */
	int r = sto_fts_averages(s, db, &nrow, &avgdl, ret_msg);
	_cleanup_free_ int64_t *chg = NULL;
	size_t n, max = old->n / REFRESH_SHARE;
	if (r < 0 ||
	    !sto_changed_since(s, from, max > REFRESH_MIN ? max : REFRESH_MIN,
			       &chg, &n))
		return r;
	if (!n && nrow == old->nrow && avgdl == old->avgdl) {
		atomic_fetch_add(&old->kept.refs, 1);
		*ret = old;
		return 0;
	}
	struct fresh *f = xcalloc(n + 1, sizeof(*f));
	size_t nf = 0;
	r = read_changed(s, db, expr, chg, n, f, &nf, ret_msg);
	if (r == 0) {
		*ret = merged(old, chg, n, f, nf, avgdl);
		(*ret)->nrow = nrow;
		sto_word_sized(*ret, expr);
	}
	free(f);
	return r;
}

struct sto_word *sto_word_read(struct store *s, sqlite3 *db, const char *expr,
			       uint64_t gen, int *ret_r, char **ret_msg)
{
	uint64_t at = 0;
	struct sto_word *w = lookup(s, expr, &at);
	if (w && at == gen)
		return w;
	word_unref(w);
	return read_word(s, db, expr, gen, ret_r, ret_msg);
}

struct sto_word *sto_word_get(struct store *s, sqlite3 *db, const char *expr,
			      uint64_t gen, int *ret_r, char **ret_msg)
{
	uint64_t at = 0;
	struct sto_word *w = lookup(s, expr, &at), *up = NULL;
	if (w && at == gen)
		return w;
	if (w) {
		*ret_r = refresh_word(s, db, expr, w, at < gen ? at : gen, &up,
				      ret_msg);
		word_unref(w);
		if (*ret_r < 0)
			return NULL;
	}
	w = up ? up : read_word(s, db, expr, gen, ret_r, ret_msg);
	if (w)
		keep(s, expr, gen, w);
	return w;
}
