/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Phrases from their words' positions in memory: FTS5 checks a phrase
 * by reading the positions of its words in every note that has them all
 * (for a word in every note, every note: half a second at 100k notes,
 * again for each phrase). Here each word's positions (every note with
 * it, in order) are read once from the index's instances and kept for
 * the generation they were read in, the most recently used first within
 * a memory budget; a phrase is then its rarest word's notes, each
 * checked on the positions of the others, with what the ranking needs
 * of each (its weighted instances, as vterm counts them: ftsaux.h) and
 * the count of its notes, exactly as FTS5 would find them (store_rank.c
 * ranks them as it ranks a common word's notes).
 */
#include "ftsaux.h"
#include "store_int.h"
#include "tokenizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The memory the words' positions may take, all words together; a word
 * that would take more than a quarter of it is read for each phrase. */
#define PHRASE_BYTES ((size_t)64 << 20)
/* A phrase's words: more are left to FTS5. */
#define TERMS_MAX 16
/* Stems FTS5 may match at one place of the phrase. */
#define SYN_MAX 16
/* A position: the column in the top bit, the offset below. */
#define POS_COL FTSAUX_POS_COL
#define POS_OFF ((1u << POS_COL) - 1)
/* A word's positions in a note are kept up to this offset (a phrase
 * found fewer times than vterm counts before it in a note with more is
 * left to FTS5 for that note: a long one, one in a few hundred). */
#define REACH 4096
#define FOUND_BYTES (PHRASE_BYTES / 4)
/* vterm's counting (ftsaux.c): instances counted, the rest estimated. */
#define COUNT_MAX 64

/* One word of the index: every note with it, by id, and its positions
 * in each (pos[at[i]] to pos[at[i + 1]]), in order, those before cut[i]
 * only (UINT32_MAX: all of them; a long note's are cut at REACH).
 * Shared, immutable, counted references. */
struct sto_pos {
	size_t n;
	int64_t *id;
	uint32_t *at, *pos, *cut;
	size_t bytes;
	uint64_t used;
	atomic_int refs;
};

/* The words kept for generation gen, bytes in all; tick orders uses.
 * found: the phrases' notes of that generation (sto_word), found_bytes
 * in all (all dropped when they would take more than FOUND_BYTES). */
struct sto_phrases {
	pthread_mutex_t mu;
	struct hmap *terms, *found;
	uint64_t gen, tick;
	size_t bytes, found_bytes;
};

static void pos_unref(struct sto_pos *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	free(p->id);
	free(p->at);
	free(p->pos);
	free(p->cut);
	free(p);
}

static void cache_clear(struct sto_phrases *c)
{
	size_t it = 0;
	const char *k;
	void *v;
	while (hmap_next(c->terms, &it, &k, &v))
		pos_unref(v);
	hmap_free(c->terms);
	c->terms = hmap_new();
	c->bytes = 0;
	it = 0;
	while (hmap_next(c->found, &it, &k, &v))
		sto_word_put(v);
	hmap_free(c->found);
	c->found = hmap_new();
	c->found_bytes = 0;
}

void sto_phrases_init(struct store *s)
{
	s->phrases = xcalloc(1, sizeof(*s->phrases));
	pthread_mutex_init(&s->phrases->mu, NULL);
	s->phrases->terms = hmap_new();
	s->phrases->found = hmap_new();
}

void sto_phrases_free(struct store *s)
{
	struct sto_phrases *c = s->phrases;
	if (!c)
		return;
	cache_clear(c);
	hmap_free(c->terms);
	hmap_free(c->found);
	pthread_mutex_destroy(&c->mu);
	free(c);
	s->phrases = NULL;
}

/* The cached positions of term for generation gen (a reference), or
 * NULL. */
static struct sto_pos *lookup(struct sto_phrases *c, const char *term,
			      uint64_t gen)
{
	pthread_mutex_lock(&c->mu);
	if (c->gen != gen) {
		cache_clear(c);
		c->gen = gen;
	}
	struct sto_pos *p = hmap_get(c->terms, term);
	if (p) {
		p->used = ++c->tick;
		atomic_fetch_add(&p->refs, 1);
	}
	pthread_mutex_unlock(&c->mu);
	return p;
}

/* The least recently used word out (c->mu held). */
static void evict_one(struct sto_phrases *c)
{
	size_t it = 0;
	const char *k, *oldest = NULL;
	void *v;
	uint64_t at = UINT64_MAX;
	while (hmap_next(c->terms, &it, &k, &v)) {
		struct sto_pos *p = v;
		if (p->used < at) {
			at = p->used;
			oldest = k;
		}
	}
	if (!oldest)
		return;
	_cleanup_free_ char *key = xstrdup(oldest);
	struct sto_pos *p = hmap_del(c->terms, key);
	c->bytes -= p->bytes;
	pos_unref(p);
}

/* p kept for generation gen, unless a write committed since it was read
 * or it is too big to keep. */
static void keep(struct store *s, const char *term, uint64_t gen,
		 struct sto_pos *p)
{
	struct sto_phrases *c = s->phrases;
	if (atomic_load(&s->gen) != gen || p->bytes > PHRASE_BYTES / 4)
		return;
	pthread_mutex_lock(&c->mu);
	if (c->gen != gen) {
		cache_clear(c);
		c->gen = gen;
	}
	if (!hmap_get(c->terms, term)) {
		while (c->bytes + p->bytes > PHRASE_BYTES &&
		       hmap_size(c->terms))
			evict_one(c);
		atomic_fetch_add(&p->refs, 1);
		p->used = ++c->tick;
		hmap_put(c->terms, term, p);
		c->bytes += p->bytes;
	}
	pthread_mutex_unlock(&c->mu);
}

/* ---- reading a word's positions ------------------------------------------ */

struct builder {
	struct sto_pos *p;
	size_t cap_n, cap_pos, npos;
};

/* Note id and its positions from vpos's blob b of n bytes; false when
 * it is not such a blob. */
static bool add_note(struct builder *b, int64_t id, const void *blob, size_t n)
{
	struct sto_pos *p = b->p;
	size_t k = n / sizeof(uint32_t);
	if (!blob || n % sizeof(uint32_t))
		return false;
	if (p->n + 1 >= b->cap_n) {
		b->cap_n = b->cap_n ? b->cap_n * 2 : 256;
		p->id = xrealloc(p->id, b->cap_n * sizeof(*p->id));
		p->at = xrealloc(p->at, (b->cap_n + 1) * sizeof(*p->at));
		p->cut = xrealloc(p->cut, b->cap_n * sizeof(*p->cut));
	}
	if (b->npos + k > b->cap_pos) {
		b->cap_pos = 2 * b->cap_pos + k + 1024;
		p->pos = xrealloc(p->pos, b->cap_pos * sizeof(*p->pos));
	}
	uint32_t *v = p->pos + b->npos;
	memcpy(v, blob, n);
	p->id[p->n] = id;
	p->at[p->n] = (uint32_t)b->npos;
	p->cut[p->n] = UINT32_MAX;
	if (k >= 2 && v[k - 2] == FTSAUX_POS_MORE) {
		p->cut[p->n] = v[k - 1];
		k -= 2;
	}
	b->npos += k;
	p->n++;
	return true;
}

/* The FTS5 expression of exactly the index term term (no stems): NULL
 * when the tokenizer would not give it back as it is. */
static int on_same(void *ctx, int tflags, const char *tok, int ntok)
{
	const char **t = ctx;
	if (!*t || tflags || strlen(*t) != (size_t)ntok ||
	    memcmp(*t, tok, (size_t)ntok))
		*t = NULL;
	else
		*t = ""; /* seen once */
	return SQLITE_OK;
}

static char *term_expr(const char *term)
{
	struct sbuf b = {0};
	sb_printf(&b, "\"%c00", TOKENIZER_LANGS);
	for (const char *c = term; *c; c++)
		sb_printf(&b, *c == '"' ? "\"\"" : "%c", *c);
	sb_putc(&b, '"');
	_cleanup_free_ char *raw = xasprintf("%c00%s", TOKENIZER_LANGS, term);
	const char *t = term;
	if (tokenizer_query(raw, (int)strlen(raw), &t, on_same) < 0 || !t ||
	    *t) {
		sb_free(&b);
		return NULL;
	}
	return sb_steal(&b);
}

/* Every note with term (an index term, as FTS5 stores it) and its
 * positions up to REACH, in one pass; NULL on error (*ret_r, *ret_msg)
 * or when it cannot be read so (*ret_r 0). */
static struct sto_pos *read_term(struct store *s, sqlite3 *db, const char *term,
				 int *ret_r, char **ret_msg)
{
	_cleanup_free_ char *expr = term_expr(term);
	if (!expr)
		return NULL;
	sqlite3_stmt *st = sto_stmt(db, "SELECT rowid, vpos(fts, ?2) FROM"
					" fts WHERE fts MATCH ?1");
	if (!st) {
		*ret_r = sto_search_error(s, db, ret_msg);
		return NULL;
	}
	sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, REACH);
	struct builder b = {xcalloc(1, sizeof(*b.p)), 0, 0, 0};
	atomic_init(&b.p->refs, 1);
	int r;
	bool ok = true;
	while (ok && (r = sqlite3_step(st)) == SQLITE_ROW)
		ok = add_note(&b, sqlite3_column_int64(st, 0),
			      sqlite3_column_blob(st, 1),
			      (size_t)sqlite3_column_bytes(st, 1));
	if (ok && r != SQLITE_DONE)
		*ret_r = sto_search_error(s, db, ret_msg);
	sqlite3_clear_bindings(st);
	sto_stmt_done(st);
	if (!ok || r != SQLITE_DONE) {
		pos_unref(b.p);
		return NULL;
	}
	if (!b.cap_n)
		b.p->at = xcalloc(1, sizeof(*b.p->at));
	b.p->at[b.p->n] = (uint32_t)b.npos;
	b.p->bytes = sizeof(*b.p) + strlen(term) +
		     b.p->n * (sizeof(*b.p->id) + 2 * sizeof(*b.p->at)) +
		     b.npos * sizeof(uint32_t);
	return b.p;
}

/* The positions of term, cached for generation gen or read now. */
static struct sto_pos *term_get(struct store *s, sqlite3 *db, const char *term,
				uint64_t gen, int *ret_r, char **ret_msg)
{
	struct sto_pos *p = lookup(s->phrases, term, gen);
	if (p)
		return p;
	p = read_term(s, db, term, ret_r, ret_msg);
	if (p)
		keep(s, term, gen, p);
	return p;
}

/* ---- a phrase --------------------------------------------------------------
 * FTS5 makes a quoted string a phrase of the tokens its tokenizer gives
 * for a query, a stem (a token at the previous one's position) matching
 * as another form of the word before it; a note has the phrase at each
 * place where every word of it, in one of its forms, follows the one
 * before in the same column (fts5ExprPhraseIsMatch, whose walk this is).
 */

struct phrase {
	bool title; /* title : "...": the name and aliases only */
	bool bad;   /* more words or forms than this file takes */
	size_t n;   /* words */
	size_t nsyn[TERMS_MAX];
	char *syn[TERMS_MAX][SYN_MAX];
	struct sto_pos *pos[TERMS_MAX][SYN_MAX];
};

static void phrase_free(struct phrase *p)
{
	for (size_t i = 0; i < p->n; i++)
		for (size_t k = 0; k < p->nsyn[i]; k++) {
			free(p->syn[i][k]);
			pos_unref(p->pos[i][k]);
		}
}

static int on_term(void *ctx, int tflags, const char *tok, int ntok)
{
	struct phrase *p = ctx;
	if (p->bad)
		return SQLITE_OK;
	if (!(tflags & FTS5_TOKEN_COLOCATED) || !p->n) {
		if (p->n == TERMS_MAX) {
			p->bad = true;
			return SQLITE_OK;
		}
		p->nsyn[p->n++] = 0;
	}
	size_t i = p->n - 1;
	if (p->nsyn[i] == SYN_MAX) {
		p->bad = true;
		return SQLITE_OK;
	}
	p->syn[i][p->nsyn[i]++] = xstrndup(tok, (size_t)ntok);
	return SQLITE_OK;
}

/* The phrase of an FTS5 atom ("..." or title : "...", sto_fts_atom);
 * false when expr is no such phrase of two words or more. */
static bool phrase_of(const char *expr, struct phrase *p)
{
	memset(p, 0, sizeof(*p));
	if (!strncmp(expr, "title : ", 8)) {
		p->title = true;
		expr += 8;
	}
	if (*expr != '"')
		return false;
	struct sbuf b = {0};
	const char *e = expr + 1;
	for (; *e; e++) {
		if (*e == '"' && e[1] != '"')
			break;
		sb_putc(&b, *e);
		e += *e == '"';
	}
	bool ok = *e == '"' && !e[1] && b.len &&
		  tokenizer_query(b.s, (int)b.len, p, on_term) == 0;
	sb_free(&b);
	if (!ok || p->bad || p->n < 2) {
		phrase_free(p);
		return false;
	}
	return true;
}

/* The notes of one form of a word from cursor *at on: where id is (or
 * the first past it), the next few looked at first, then halving. */
static size_t seek(const struct sto_pos *w, int64_t id, size_t *at)
{
	size_t lo = *at, hi = w->n;
	for (int k = 0; k < 4 && lo < hi && w->id[lo] < id; k++)
		lo++;
	while (lo < hi && w->id[lo] < id) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return lo;
}

/* A word's positions in a note: v[0..n), a form's own or merged in buf
 * (its forms' together). */
struct plist {
	const uint32_t *v;
	size_t n;
	uint32_t *buf;
	size_t cap;
};

static void pl_add(struct plist *l, uint32_t x)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->buf = xrealloc(l->buf, l->cap * sizeof(*l->buf));
	}
	l->buf[l->n++] = x;
}

/* The positions of word i of p in note id (its forms' together, each
 * once, in order; only the title's, which come first, with p->title)
 * in out, known before *ret_cut; false when the note has none. cur:
 * each form's cursor. */
static bool word_in(const struct phrase *p, size_t i, int64_t id,
		    size_t cur[][SYN_MAX], struct plist *out, uint32_t *ret_cut)
{
	const uint32_t *from[SYN_MAX], *to[SYN_MAX];
	size_t m = 0;
	out->n = 0;
	*ret_cut = UINT32_MAX;
	for (size_t k = 0; k < p->nsyn[i]; k++) {
		const struct sto_pos *w = p->pos[i][k];
		size_t at = seek(w, id, &cur[i][k]);
		if (at < w->n && w->id[at] == id) {
			from[m] = w->pos + w->at[at];
			to[m] = w->pos + w->at[at + 1];
			while (p->title && to[m] > from[m] &&
			       to[m][-1] >> POS_COL)
				to[m]--;
			m += to[m] > from[m];
			/* Cut in the text: the title's are all there. */
			bool whole = p->title && w->cut[at] >> POS_COL;
			if (!whole && w->cut[at] < *ret_cut)
				*ret_cut = w->cut[at];
		}
	}
	if (m == 1) {
		out->v = from[0];
		out->n = (size_t)(to[0] - from[0]);
		return true;
	}
	for (;;) {
		uint32_t least = UINT32_MAX;
		for (size_t k = 0; k < m; k++)
			if (from[k] < to[k] && *from[k] < least)
				least = *from[k];
		if (least == UINT32_MAX)
			break;
		for (size_t k = 0; k < m; k++)
			if (from[k] < to[k] && *from[k] == least)
				from[k]++;
		pl_add(out, least);
	}
	out->v = out->buf;
	return out->n > 0 || *ret_cut != UINT32_MAX;
}

/* The places of the phrase in a note, given its words' positions w[]:
 * at most max of them in out (fts5ExprPhraseIsMatch's walk); how many. */
static size_t places(const struct plist *w, size_t n, uint32_t *out, size_t max)
{
	size_t idx[TERMS_MAX] = {0}, got = 0;
	for (size_t i = 0; i < n; i++)
		if (!w[i].n)
			return 0;
	while (got < max) {
		uint32_t o = w[0].v[idx[0]];
		bool match;
		do {
			match = true;
			for (size_t i = 0; i < n; i++) {
				uint32_t adj = o + (uint32_t)i;
				if (w[i].v[idx[i]] == adj)
					continue;
				match = false;
				while (w[i].v[idx[i]] < adj)
					if (++idx[i] == w[i].n)
						return got;
				if (w[i].v[idx[i]] > adj)
					o = w[i].v[idx[i]] - (uint32_t)i;
			}
		} while (!match);
		out[got++] = o;
		for (size_t i = 0; i < n; i++)
			if (++idx[i] == w[i].n)
				return got;
	}
	return got;
}

/* SQLite's varint (as FTS5 writes its sizes) at b[*at..n). */
static uint64_t varint(const unsigned char *b, int n, int *at)
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

/* Tokens in column col of note id (fts_docsize), as xColumnSize. */
static int column_size(sqlite3 *db, int64_t id, int col)
{
	sqlite3_stmt *st = sto_stmt(db, "SELECT sz FROM fts_docsize"
					" WHERE id = ?1");
	int size = 0;
	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *b = sqlite3_column_blob(st, 0);
		int n = sqlite3_column_bytes(st, 0), at = 0;
		for (int c = 0; b && c <= col && at < n; c++)
			size = (int)varint(b, n, &at);
	}
	sto_stmt_done(st);
	return size;
}

/* A note's weighted instances of the phrase from its places o[0..n) (at
 * most COUNT_MAX + 1 of them), as vterm counts them (phrase_freq,
 * ftsaux.c): column 0 (the title) weighs 10, the body 1; past
 * COUNT_MAX, the rest of the column is estimated. */
static double phrase_freq(sqlite3 *db, int64_t id, const uint32_t *o, size_t n)
{
	static const double weight[] = {10.0, 1.0};
	double freq = 0;
	int seen = 0, last_col = -1, in_col = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (int)(o[i] >> POS_COL), off = (int)(o[i] & POS_OFF);
		if (c != last_col) {
			last_col = c;
			in_col = 0;
		}
		double w = weight[c];
		if (++seen > COUNT_MAX) {
			int size = column_size(db, id, c);
			if (off > 0 && size > off)
				freq += w * in_col *
					((double)(size - off) / off);
			break;
		}
		in_col++;
		freq += w;
	}
	return freq;
}

/* The notes indexed and their average length (all columns), as FTS5
 * keeps them (the averages record of fts_data) and vterm reads them. */
static int averages(struct store *s, sqlite3 *db, int64_t *ret_nrow,
		    double *ret_avgdl, char **ret_msg)
{
	sqlite3_stmt *st = sto_stmt(db, "SELECT block FROM fts_data"
					" WHERE id = 1");
	if (!st)
		return sto_search_error(s, db, ret_msg);
	int rc = sqlite3_step(st);
	uint64_t nrow = 0, ntok = 0;
	if (rc == SQLITE_ROW) {
		const unsigned char *b = sqlite3_column_blob(st, 0);
		int n = sqlite3_column_bytes(st, 0), at = 0;
		if (b && n > 0) {
			nrow = varint(b, n, &at);
			for (int c = 0; c < 2 && at < n; c++)
				ntok += varint(b, n, &at);
		}
	}
	int r = rc == SQLITE_ROW || rc == SQLITE_DONE
			? 0
			: sto_search_error(s, db, ret_msg);
	sto_stmt_done(st);
	*ret_nrow = (int64_t)nrow;
	*ret_avgdl =
		nrow > 0 ? (double)(int64_t)ntok / (double)(int64_t)nrow : 1;
	return r;
}

/* The word of p with the fewest notes (all its forms'). */
static size_t rarest(const struct phrase *p)
{
	size_t best = 0, least = SIZE_MAX;
	for (size_t i = 0; i < p->n; i++) {
		size_t n = 0;
		for (size_t k = 0; k < p->nsyn[i]; k++)
			n += p->pos[i][k]->n;
		if (n < least) {
			least = n;
			best = i;
		}
	}
	return best;
}

/* The next note (by id) past id that a form of word d has, or -1. */
static int64_t next_note(const struct phrase *p, size_t d, int64_t id,
			 size_t cur[][SYN_MAX])
{
	int64_t best = -1;
	for (size_t k = 0; k < p->nsyn[d]; k++) {
		const struct sto_pos *w = p->pos[d][k];
		size_t at = seek(w, id + 1, &cur[d][k]);
		if (at < w->n && (best < 0 || w->id[at] < best))
			best = w->id[at];
	}
	return best;
}

/* A note's weighted instances of the phrase expr as FTS5 counts them
 * (vterm), into *ret_freq: false when the note does not have it. */
static bool fts5_freq(sqlite3 *db, const char *expr, int64_t id,
		      double *ret_freq)
{
	sqlite3_stmt *st = sto_stmt(db, "SELECT vterm(fts, " RANK_WEIGHTS
					") FROM fts WHERE fts MATCH ?1 AND"
					" rowid = ?2");
	bool found = false;
	if (!st)
		return false;
	sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, id);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_bytes(st, 0) == (int)sizeof(struct ftsaux_term)) {
		struct ftsaux_term t;
		memcpy(&t, sqlite3_column_blob(st, 0), sizeof(t));
		*ret_freq = t.freq;
		found = t.freq >= 0;
	}
	sto_stmt_done(st);
	return found;
}

/* Whether note id has the phrase, and its weighted instances: from the
 * places found in its words' positions when they hold every place up to
 * the last one vterm counts, else from FTS5 (a long note). */
static bool note_freq(sqlite3 *db, const struct phrase *p, const char *expr,
		      int64_t id, size_t cur[][SYN_MAX], struct plist *l,
		      double *ret_freq)
{
	uint32_t o[COUNT_MAX + 1], known = UINT32_MAX;
	for (size_t i = 0; i < p->n; i++) {
		uint32_t cut;
		if (!word_in(p, i, id, cur, &l[i], &cut))
			return false;
		/* A place there needs word i at cut - i or past it. */
		if (cut != UINT32_MAX && cut - (uint32_t)i < known)
			known = cut - (uint32_t)i;
	}
	size_t n = places(l, p->n, o, COUNT_MAX + 1), sure = 0;
	while (sure < n && o[sure] < known)
		sure++;
	if (known != UINT32_MAX && sure < COUNT_MAX + 1)
		return fts5_freq(db, expr, id, ret_freq);
	if (!n)
		return false;
	*ret_freq = phrase_freq(db, id, o, n);
	return true;
}

/* The phrase's notes and their weighted instances into w. */
static void phrase_notes(sqlite3 *db, const struct phrase *p, const char *expr,
			 struct sto_word *w)
{
	size_t(*cur)[SYN_MAX] = xcalloc(p->n, sizeof(*cur));
	struct plist l[TERMS_MAX] = {0};
	size_t d = rarest(p), cap = 0;
	for (int64_t id = next_note(p, d, -1, cur); id >= 0;
	     id = next_note(p, d, id, cur)) {
		double freq;
		if (!note_freq(db, p, expr, id, cur, l, &freq))
			continue;
		if (w->n == cap) {
			cap = cap ? cap * 2 : 64;
			w->id = xrealloc(w->id, cap * sizeof(*w->id));
			w->freq = xrealloc(w->freq, cap * sizeof(*w->freq));
			w->norm = xrealloc(w->norm, cap * sizeof(*w->norm));
		}
		w->id[w->n] = id;
		w->freq[w->n++] = freq;
	}
	for (size_t i = 0; i < TERMS_MAX; i++)
		free(l[i].buf);
	free(cur);
}

/* The notes of phrase expr found for generation gen (a reference), or
 * NULL. */
static struct sto_word *found_get(struct sto_phrases *c, const char *expr,
				  uint64_t gen)
{
	pthread_mutex_lock(&c->mu);
	struct sto_word *w = c->gen == gen ? hmap_get(c->found, expr) : NULL;
	if (w)
		atomic_fetch_add(&w->refs, 1);
	pthread_mutex_unlock(&c->mu);
	return w;
}

/* w kept as phrase expr's notes for generation gen, unless a write
 * committed since. */
static void found_keep(struct store *s, const char *expr, uint64_t gen,
		       struct sto_word *w)
{
	struct sto_phrases *c = s->phrases;
	if (atomic_load(&s->gen) != gen || w->bytes > FOUND_BYTES)
		return;
	pthread_mutex_lock(&c->mu);
	if (c->gen != gen) {
		cache_clear(c);
		c->gen = gen;
	}
	if (c->found_bytes + w->bytes > FOUND_BYTES) {
		size_t it = 0;
		const char *k;
		void *v;
		while (hmap_next(c->found, &it, &k, &v))
			sto_word_put(v);
		hmap_free(c->found);
		c->found = hmap_new();
		c->found_bytes = 0;
	}
	if (!hmap_get(c->found, expr)) {
		atomic_fetch_add(&w->refs, 1);
		hmap_put(c->found, expr, w);
		c->found_bytes += w->bytes;
	}
	pthread_mutex_unlock(&c->mu);
}

struct sto_word *sto_phrase_get(struct store *s, sqlite3 *db, const char *expr,
				uint64_t gen, int *ret_r, char **ret_msg)
{
	struct phrase p;
	*ret_r = 0;
	if (!s->phrases)
		return NULL;
	struct sto_word *w = found_get(s->phrases, expr, gen);
	if (w)
		return w;
	if (!phrase_of(expr, &p))
		return NULL;
	for (size_t i = 0; i < p.n && *ret_r == 0; i++)
		for (size_t k = 0; k < p.nsyn[i] && *ret_r == 0; k++)
			if (!(p.pos[i][k] = term_get(s, db, p.syn[i][k], gen,
						     ret_r, ret_msg)) &&
			    *ret_r == 0)
				*ret_r = 1; /* a position that does not fit */
	int64_t nrow = 0;
	double avgdl = 1;
	if (*ret_r == 0)
		*ret_r = averages(s, db, &nrow, &avgdl, ret_msg);
	if (*ret_r == 0) {
		w = xcalloc(1, sizeof(*w));
		atomic_init(&w->refs, 1);
		phrase_notes(db, &p, expr, w);
		w->nrow = nrow;
		for (size_t i = 0; i < w->n; i++)
			w->norm[i] = avgdl;
		*ret_r = sto_word_norms(s, db, gen, w, ret_msg);
		w->bytes = sizeof(*w) + strlen(expr) +
			   w->n * (sizeof(*w->id) + sizeof(*w->freq) +
				   sizeof(*w->norm));
		if (*ret_r < 0) {
			sto_word_put(w);
			w = NULL;
		} else {
			found_keep(s, expr, gen, w);
		}
	}
	if (*ret_r > 0)
		*ret_r = 0; /* left to FTS5 */
	phrase_free(&p);
	return w;
}
