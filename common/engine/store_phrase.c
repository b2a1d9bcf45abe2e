/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Phrases from their words' positions in memory: FTS5 checks a phrase
 * by reading the positions of its words in every note that has them all
 * (for a word in every note, every note: half a second at 100k notes,
 * again for each phrase). Here a word's positions in every note that
 * has it are read once (vpos, ftsaux.h) and kept, the most recently
 * used first within a memory budget (a word dense in a note as a
 * bitmap), across writes: as the common words' notes (store_words.c),
 * positions of an older generation are brought up to date by reading
 * again only the notes the writer logged as changed since, or read
 * afresh when they are too many; a phrase is then its rarest word's
 * notes, each checked on the positions of the others, with what the
 * ranking needs of each (its weighted instances, as vterm counts them)
 * and the count of its notes, exactly as FTS5 finds them (store_rank.c
 * ranks them as it ranks a common word's notes). A phrase whose words'
 * positions are not kept, but for its rarest word's, is left to FTS5,
 * which reads only that word's notes.
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
/* A word's positions in a note: from this many, as a bitmap when that
 * is smaller (a common word in a note). */
#define DENSE_MIN 16
#define FOUND_BYTES (PHRASE_BYTES / 4)
/* vterm's counting (ftsaux.c): instances counted, the rest estimated. */
#define COUNT_MAX 64

/* One word of the index: every note with it, by id, and its positions
 * in each, pos[at[i]] to pos[at[i + 1]]: a list, in order, or where
 * they are dense (dense[i]; a long note's common word) the title's
 * count, the title's list and a bitmap of the text's offsets (bit o of
 * word o / 32), a bit per token rather than 32 per position. cnt[i]:
 * how many. Shared, immutable (but gen and used, under the cache's
 * lock), counted references. gen: the generation they are of. */
struct sto_pos {
	size_t n;
	int64_t *id;
	uint32_t *at, *pos, *cnt;
	uint8_t *dense;
	struct sto_kept kept;
};

/* The words kept (under mu), each of its own generation (brought up
 * to date with the notes the writer logged, as the common words' notes
 * are: store_words.c). found: the phrases' notes of
 * generation gen (sto_word), found_bytes in all (all dropped when they
 * would take more than FOUND_BYTES). counts: words' notes counted up to
 * a limit (notes_upto; count + 1), of generation gen too. */
struct sto_phrases {
	pthread_mutex_t mu;
	struct sto_keep terms;
	struct hmap *found, *counts;
	uint64_t gen;
	size_t found_bytes;
};

static void pos_unref(struct sto_pos *p)
{
	if (!p || atomic_fetch_sub(&p->kept.refs, 1) != 1)
		return;
	free(p->id);
	free(p->at);
	free(p->pos);
	free(p->cnt);
	free(p->dense);
	free(p);
}

static void pos_kept_unref(struct sto_kept *e)
{
	pos_unref(sto_kept_of(e, struct sto_pos, kept));
}

static void found_put(void *w)
{
	sto_word_put(w);
}

/* The phrases found out (c->mu held). */
static void found_clear(struct sto_phrases *c)
{
	hmap_free_with(c->found, found_put);
	c->found = hmap_new();
	c->found_bytes = 0;
}

/* The phrases found and the counts out (c->mu held). */
static void derived_clear(struct sto_phrases *c)
{
	found_clear(c);
	hmap_free(c->counts);
	c->counts = hmap_new();
}

static void cache_clear(struct sto_phrases *c)
{
	sto_keep_clear(&c->terms);
	derived_clear(c);
}

/* The phrases found and the counts made for generation gen from now on
 * (c->mu held): those of an older one out; false when gen is older than
 * theirs (a search that began before a write: it keeps none). */
static bool derived_for(struct sto_phrases *c, uint64_t gen)
{
	if (gen > c->gen) {
		derived_clear(c);
		c->gen = gen;
	}
	return gen == c->gen;
}

void sto_phrases_init(struct store *s)
{
	s->phrases = xcalloc(1, sizeof(*s->phrases));
	pthread_mutex_init(&s->phrases->mu, NULL);
	sto_keep_init(&s->phrases->terms, &s->phrases->mu, pos_kept_unref);
	s->phrases->found = hmap_new();
	s->phrases->counts = hmap_new();
}

void sto_phrases_free(struct store *s)
{
	struct sto_phrases *c = s->phrases;
	if (!c)
		return;
	cache_clear(c);
	sto_keep_free(&c->terms);
	hmap_free(c->found);
	hmap_free(c->counts);
	pthread_mutex_destroy(&c->mu);
	free(c);
	s->phrases = NULL;
}

/* The cached positions of term (a reference; *ret_at: the generation
 * they are of), or NULL; older than the writer's log: dropped. */
static struct sto_pos *lookup(struct store *s, const char *term,
			      uint64_t *ret_at)
{
	uint64_t floor = sto_words_floor(s);
	struct sto_kept *e =
		sto_keep_get(&s->phrases->terms, term, &floor, ret_at);
	return e ? sto_kept_of(e, struct sto_pos, kept) : NULL;
}

/* p kept for generation gen, in place of positions of an older one,
 * unless a write committed since it was read (it may be of before that
 * write) or it is too big to keep. */
static void keep(struct store *s, const char *term, uint64_t gen,
		 struct sto_pos *p)
{
	if (atomic_load(&s->gen) != gen || p->kept.bytes > PHRASE_BYTES / 4)
		return;
	sto_keep_put(&s->phrases->terms, term, gen, &p->kept, PHRASE_BYTES);
}

/* ---- reading a word's positions ------------------------------------------ */

struct builder {
	struct sto_pos *p;
	size_t cap_n, cap_pos, npos;
};

static void room(struct builder *b, size_t k)
{
	struct sto_pos *p = b->p;
	if (p->n + 1 >= b->cap_n) {
		b->cap_n = b->cap_n ? b->cap_n * 2 : 256;
		p->id = xrealloc(p->id, b->cap_n * sizeof(*p->id));
		p->at = xrealloc(p->at, (b->cap_n + 1) * sizeof(*p->at));
		p->cnt = xrealloc(p->cnt, b->cap_n * sizeof(*p->cnt));
		p->dense = xrealloc(p->dense, b->cap_n * sizeof(*p->dense));
	}
	if (b->npos + k > b->cap_pos) {
		b->cap_pos = 2 * b->cap_pos + k + 1024;
		p->pos = xrealloc(p->pos, b->cap_pos * sizeof(*p->pos));
	}
}

/* Note id and its positions v[0..k) (vpos's, every one), as a list or
 * a bitmap. */
static void add_note(struct builder *b, int64_t id, const uint32_t *v, size_t k)
{
	size_t title = 0;
	while (title < k && !(v[title] >> POS_COL))
		title++;
	size_t words = k > title ? (v[k - 1] & POS_OFF) / 32 + 1 : 0;
	bool dense = k >= DENSE_MIN && 1 + title + words < k;
	size_t need = dense ? 1 + title + words : k;
	room(b, need);
	struct sto_pos *p = b->p;
	uint32_t *out = p->pos + b->npos;
	p->id[p->n] = id;
	p->at[p->n] = (uint32_t)b->npos;
	p->cnt[p->n] = (uint32_t)k;
	p->dense[p->n] = dense;
	if (!dense) {
		memcpy(out, v, k * sizeof(*v));
	} else {
		out[0] = (uint32_t)title;
		memcpy(out + 1, v, title * sizeof(*v));
		uint32_t *bits = out + 1 + title;
		memset(bits, 0, words * sizeof(*bits));
		for (size_t i = title; i < k; i++) {
			uint32_t o = v[i] & POS_OFF;
			bits[o / 32] |= 1u << (o % 32);
		}
	}
	b->npos += need;
	p->n++;
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

/* Note id with the positions of st's column col (a vpos blob) added to
 * b, through the aligned scratch *buf; false when the blob is not
 * vpos's. */
static bool add_row(struct builder *b, int64_t id, sqlite3_stmt *st, int col,
		    uint32_t **buf, size_t *cap)
{
	const void *v = sqlite3_column_blob(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	if ((!v && n) || n % sizeof(uint32_t))
		return false;
	if (n > *cap) {
		*cap = 2 * n;
		*buf = xrealloc(*buf, *cap);
	}
	if (n)
		memcpy(*buf, v, n);
	add_note(b, id, *buf, n / sizeof(uint32_t));
	return true;
}

/* Note i of old, as it is, added to b. */
static void copy_note(struct builder *b, const struct sto_pos *old, size_t i)
{
	size_t len = old->at[i + 1] - old->at[i];
	room(b, len);
	struct sto_pos *p = b->p;
	p->id[p->n] = old->id[i];
	p->at[p->n] = (uint32_t)b->npos;
	p->cnt[p->n] = old->cnt[i];
	p->dense[p->n] = old->dense[i];
	memcpy(p->pos + b->npos, old->pos + old->at[i], len * sizeof(*p->pos));
	b->npos += len;
	p->n++;
}

static struct builder builder_new(void)
{
	struct builder b = {xcalloc(1, sizeof(*b.p)), 0, 0, 0};
	atomic_init(&b.p->kept.refs, 1);
	return b;
}

/* b's positions, complete, for term. */
static struct sto_pos *builder_done(struct builder *b, const char *term)
{
	if (!b->cap_n)
		b->p->at = xcalloc(1, sizeof(*b->p->at));
	b->p->at[b->p->n] = (uint32_t)b->npos;
	b->p->kept.bytes =
		sizeof(*b->p) + strlen(term) +
		b->p->n * (sizeof(*b->p->id) + 2 * sizeof(*b->p->at) + 1) +
		b->npos * sizeof(uint32_t);
	return b->p;
}

/* Every note with term (an index term, as FTS5 stores it) and its
 * positions, in one pass; NULL on error (*ret_r, *ret_msg) or when it
 * cannot be read so (*ret_r 0). */
static struct sto_pos *read_term(struct store *s, sqlite3 *db, const char *term,
				 int *ret_r, char **ret_msg)
{
	_cleanup_free_ char *expr = term_expr(term);
	if (!expr)
		return NULL;
	sqlite3_stmt *st = sto_stmt(db, "SELECT rowid, vpos(fts) FROM fts"
					" WHERE fts MATCH ?1");
	if (!st) {
		*ret_r = sto_search_error(s, db, ret_msg);
		return NULL;
	}
	sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	struct builder b = builder_new();
	int r;
	bool ok = true;
	uint32_t *buf = NULL;
	size_t cap = 0;
	while (ok && (r = sqlite3_step(st)) == SQLITE_ROW)
		ok = add_row(&b, sqlite3_column_int64(st, 0), st, 1, &buf,
			     &cap);
	free(buf);
	if (ok && r != SQLITE_DONE)
		*ret_r = sto_search_error(s, db, ret_msg);
	sqlite3_clear_bindings(st);
	sto_stmt_done(st);
	if (!ok || r != SQLITE_DONE) {
		pos_unref(b.p);
		return NULL;
	}
	return builder_done(&b, term);
}

/* old's notes but the n changed ones chg (by id), with those of them
 * that have term now read again (st: their positions, ?2 the id), in
 * *ret; < 0 on error (*ret_msg set), 0 (*ret NULL too when a blob is
 * not vpos's). */
static int merge_changed(struct store *s, sqlite3 *db, sqlite3_stmt *st,
			 const char *term, const struct sto_pos *old,
			 const int64_t *chg, size_t n, struct sto_pos **ret,
			 char **ret_msg)
{
	struct builder b = builder_new();
	uint32_t *buf = NULL;
	size_t cap = 0, i = 0, j = 0;
	int r = 0;
	bool ok = true;
	while (ok && r == 0 && (i < old->n || j < n)) {
		if (j >= n || (i < old->n && old->id[i] < chg[j])) {
			copy_note(&b, old, i++);
			continue;
		}
		if (i < old->n && old->id[i] == chg[j])
			i++;
		sqlite3_bind_int64(st, 2, chg[j]);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			ok = add_row(&b, chg[j], st, 0, &buf, &cap);
		else if (rc != SQLITE_DONE)
			r = sto_search_error(s, db, ret_msg);
		sqlite3_reset(st);
		j++;
	}
	free(buf);
	if (!ok || r < 0) {
		pos_unref(b.p);
		*ret = NULL;
		return r;
	}
	*ret = builder_done(&b, term);
	return 0;
}

/* The positions of term, of generation from (old), brought up to date by
 * reading again the notes changed since, in *ret (old itself, another
 * reference, when none changed); NULL when too many did (or the log does
 * not reach back that far). < 0 on error (*ret_msg set). */
static int refresh_term(struct store *s, sqlite3 *db, const char *term,
			struct sto_pos *old, uint64_t from,
			struct sto_pos **ret, char **ret_msg)
{
	*ret = NULL;
	_cleanup_free_ int64_t *chg = NULL;
	size_t n, max = old->n / REFRESH_SHARE;
	if (!sto_changed_since(s, from, max > REFRESH_MIN ? max : REFRESH_MIN,
			       &chg, &n))
		return 0;
	if (!n) {
		atomic_fetch_add(&old->kept.refs, 1);
		*ret = old;
		return 0;
	}
	_cleanup_free_ char *expr = term_expr(term);
	sqlite3_stmt *st = expr ? sto_stmt(db, "SELECT vpos(fts) FROM fts"
					       " WHERE fts MATCH ?1 AND"
					       " rowid = ?2")
				: NULL;
	if (!expr)
		return 0;
	if (!st)
		return sto_search_error(s, db, ret_msg);
	sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	int r = merge_changed(s, db, st, term, old, chg, n, ret, ret_msg);
	sqlite3_clear_bindings(st);
	sto_stmt_done(st);
	return r;
}

/* The positions of term, cached (brought up to date for generation gen)
 * or read now. */
static struct sto_pos *term_get(struct store *s, sqlite3 *db, const char *term,
				uint64_t gen, int *ret_r, char **ret_msg)
{
	uint64_t at = 0;
	struct sto_pos *p = lookup(s, term, &at), *up = NULL;
	if (p && at == gen)
		return p;
	if (p) {
		*ret_r = refresh_term(s, db, term, p, at < gen ? at : gen, &up,
				      ret_msg);
		pos_unref(p);
		if (*ret_r < 0)
			return NULL;
	}
	p = up ? up : read_term(s, db, term, ret_r, ret_msg);
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

/* One form of a word in the current note: its list (the title's when
 * dense: then bits, words of them, hold the text's), and a cursor in
 * it for the places asked about, which come in order. */
struct form {
	const uint32_t *list, *bits;
	size_t n, words, cur;
	uint32_t cnt;
	bool dense;
};

static bool form_has(const struct phrase *p, struct form *f, uint32_t x)
{
	if (p->title && x >> POS_COL)
		return false;
	if (f->dense && x >> POS_COL) {
		uint32_t o = x & POS_OFF;
		return o / 32 < f->words && (f->bits[o / 32] >> (o % 32) & 1);
	}
	while (f->cur < f->n && f->list[f->cur] < x)
		f->cur++;
	return f->cur < f->n && f->list[f->cur] == x;
}

/* A note's forms of each word of p: false when a word has none. */
static bool forms_of(const struct phrase *p, int64_t id, size_t cur[][SYN_MAX],
		     struct form f[][SYN_MAX], size_t *nf)
{
	for (size_t i = 0; i < p->n; i++) {
		nf[i] = 0;
		for (size_t k = 0; k < p->nsyn[i]; k++) {
			const struct sto_pos *w = p->pos[i][k];
			size_t at = seek(w, id, &cur[i][k]);
			if (at >= w->n || w->id[at] != id)
				continue;
			const uint32_t *v = w->pos + w->at[at];
			size_t len = w->at[at + 1] - w->at[at];
			struct form *x = &f[i][nf[i]++];
			*x = (struct form){.list = v,
					   .n = len,
					   .cnt = w->cnt[at],
					   .dense = w->dense[at]};
			if (x->dense) {
				x->n = v[0];
				x->list = v + 1;
				x->bits = v + 1 + v[0];
				x->words = len - 1 - v[0];
			}
		}
		if (!nf[i])
			return false;
	}
	return true;
}

/* A growing list of positions. */
struct plist {
	uint32_t *v;
	size_t n, cap;
};

static void pl_add(struct plist *l, uint32_t x)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = x;
}

/* Every position of form f, in order, into out (the title's only with
 * p->title). */
static void expand(const struct phrase *p, const struct form *f,
		   struct plist *out)
{
	out->n = 0;
	for (size_t i = 0; i < f->n; i++)
		if (!p->title || !(f->list[i] >> POS_COL))
			pl_add(out, f->list[i]);
	for (size_t w = 0; f->dense && !p->title && w < f->words; w++)
		for (uint32_t b = f->bits[w]; b; b &= b - 1)
			pl_add(out,
			       1u << POS_COL |
				       (uint32_t)(w * 32 +
						  (size_t)__builtin_ctz(b)));
}

/* The positions of a word from its forms in the note (each once, in
 * order) into out, with scratch lists tmp. */
static void merged(const struct phrase *p, const struct form *f, size_t nf,
		   struct plist *tmp, struct plist *out)
{
	size_t at[SYN_MAX] = {0};
	if (nf == 1) {
		expand(p, &f[0], out);
		return;
	}
	for (size_t k = 0; k < nf; k++)
		expand(p, &f[k], &tmp[k]);
	out->n = 0;
	for (;;) {
		uint32_t least = UINT32_MAX;
		for (size_t k = 0; k < nf; k++)
			if (at[k] < tmp[k].n && tmp[k].v[at[k]] < least)
				least = tmp[k].v[at[k]];
		if (least == UINT32_MAX)
			break;
		for (size_t k = 0; k < nf; k++)
			if (at[k] < tmp[k].n && tmp[k].v[at[k]] == least)
				at[k]++;
		pl_add(out, least);
	}
}

/* Scratch lists for a phrase's notes. */
struct scratch {
	struct plist tmp[SYN_MAX], drive;
	struct form f[TERMS_MAX][SYN_MAX];
	size_t nf[TERMS_MAX];
};

static void scratch_free(struct scratch *s)
{
	for (size_t i = 0; i < SYN_MAX; i++)
		free(s->tmp[i].v);
	free(s->drive.v);
	free(s);
}

/* 32 bits of a form's bitmap of the text from bit at on (none past
 * its words). */
static uint32_t bits_at(const struct form *f, size_t at)
{
	size_t q = at / 32, r = at % 32;
	uint32_t lo = q < f->words ? f->bits[q] >> r : 0;
	uint32_t hi = r && q + 1 < f->words ? f->bits[q + 1] << (32 - r) : 0;
	return lo | hi;
}

/* Whether each word of p has one form in the note and that form's
 * positions in the text are a bitmap (a common word in a long note),
 * the title's and the text's places both asked for. */
static bool all_dense(const struct phrase *p, const struct scratch *s)
{
	if (p->title)
		return false;
	for (size_t i = 0; i < p->n; i++)
		if (s->nf[i] != 1 || !s->f[i][0].dense)
			return false;
	return true;
}

/* The places of the phrase (at most max, in order, into out) when
 * all_dense: in the title, each of the first word's positions followed
 * by the others' (their lists); in the text, 32 at a time, the first
 * word's bits and each other word's bits shifted back by its place in
 * the phrase, where places() would list the positions of one word and
 * look up the others' bits one by one (for two words in most notes,
 * every note, a few dozen times each). */
static size_t places_dense(const struct phrase *p, struct scratch *s,
			   uint32_t *out, size_t max)
{
	const struct form *first = &s->f[0][0];
	size_t got = 0;
	for (size_t j = 0; j < first->n && got < max; j++) {
		uint32_t o = first->list[j];
		bool all = true;
		for (size_t i = 1; i < p->n && all; i++)
			all = form_has(p, &s->f[i][0], o + (uint32_t)i);
		if (all)
			out[got++] = o;
	}
	for (size_t w = 0; w < first->words && got < max; w++) {
		uint32_t r = first->bits[w];
		for (size_t i = 1; i < p->n && r; i++)
			r &= bits_at(&s->f[i][0], w * 32 + i);
		for (; r && got < max; r &= r - 1)
			out[got++] =
				1u << POS_COL |
				(uint32_t)(w * 32 + (size_t)__builtin_ctz(r));
	}
	return got;
}

/* The places of the phrase in a note (at most max, in order, into out)
 * from its words' forms s->f: each position of the word with the fewest
 * is a place when every other word follows it as it should. */
static size_t places(const struct phrase *p, struct scratch *s, uint32_t *out,
		     size_t max)
{
	if (all_dense(p, s))
		return places_dense(p, s, out, max);
	size_t d = 0, least = SIZE_MAX, got = 0;
	for (size_t i = 0; i < p->n; i++) {
		size_t c = 0;
		for (size_t k = 0; k < s->nf[i]; k++)
			c += s->f[i][k].cnt;
		if (c < least) {
			least = c;
			d = i;
		}
	}
	merged(p, s->f[d], s->nf[d], s->tmp, &s->drive);
	for (size_t j = 0; j < s->drive.n && got < max; j++) {
		uint32_t x = s->drive.v[j];
		if ((x & POS_OFF) < d)
			continue;
		uint32_t o = x - (uint32_t)d;
		bool all = true;
		for (size_t i = 0; i < p->n && all; i++) {
			if (i == d)
				continue;
			bool has = false;
			for (size_t k = 0; k < s->nf[i] && !has; k++)
				has = form_has(p, &s->f[i][k], o + (uint32_t)i);
			all = has;
		}
		if (all)
			out[got++] = o;
	}
	return got;
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
	if (sqlite3_step(st) == SQLITE_ROW)
		size = (int)sto_docsize(sqlite3_column_blob(st, 0),
					sqlite3_column_bytes(st, 0), col);
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
			freq += ftsaux_rest(w, in_col, off,
					    column_size(db, id, c));
			break;
		}
		in_col++;
		freq += w;
	}
	return freq;
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

/* The phrase's notes and their weighted instances into w. */
static void phrase_notes(sqlite3 *db, const struct phrase *p,
			 struct sto_word *w)
{
	size_t(*cur)[SYN_MAX] = xcalloc(p->n, sizeof(*cur));
	struct scratch *s = xcalloc(1, sizeof(*s));
	uint32_t o[COUNT_MAX + 1];
	size_t d = rarest(p);
	for (int64_t id = next_note(p, d, -1, cur); id >= 0;
	     id = next_note(p, d, id, cur)) {
		if (!forms_of(p, id, cur, s->f, s->nf))
			continue;
		size_t n = places(p, s, o, COUNT_MAX + 1);
		if (!n)
			continue;
		sto_word_add(w, id, phrase_freq(db, id, o, n), 0);
	}
	scratch_free(s);
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
		atomic_fetch_add(&w->kept.refs, 1);
	pthread_mutex_unlock(&c->mu);
	return w;
}

/* w kept as phrase expr's notes for generation gen, unless a write
 * committed since. */
static void found_keep(struct store *s, const char *expr, uint64_t gen,
		       struct sto_word *w)
{
	struct sto_phrases *c = s->phrases;
	if (atomic_load(&s->gen) != gen || w->kept.bytes > FOUND_BYTES)
		return;
	pthread_mutex_lock(&c->mu);
	if (!derived_for(c, gen)) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	if (c->found_bytes + w->kept.bytes > FOUND_BYTES)
		found_clear(c);
	if (!hmap_get(c->found, expr)) {
		atomic_fetch_add(&w->kept.refs, 1);
		hmap_put(c->found, expr, w);
		c->found_bytes += w->kept.bytes;
	}
	pthread_mutex_unlock(&c->mu);
}

/* FTS5 finds a phrase by reading its words' positions in the notes
 * that have them all, the notes of its rarest word at most; a word's
 * positions not kept yet are read in every note that has it (and then
 * kept for the phrases that have it). The phrase is found here when its
 * words' positions are kept but for its rarest word's (at most), or when
 * its words are common (COUNT_UPTO notes or more) and only one's are to
 * be read (all its forms: the word and its stems, which FTS5 reads too);
 * else by FTS5. */
/* Words counted up to this many notes at most. */
#define COUNT_UPTO 1024
/* Counts remembered per generation at most. */
#define COUNTS_MAX 4096

/* The notes with term, counted up to limit (FTS5 reads at most that
 * many), remembered for generation gen; -1 when they cannot be. */
static int64_t notes_upto(struct store *s, sqlite3 *db, const char *term,
			  int64_t limit, uint64_t gen)
{
	struct sto_phrases *c = s->phrases;
	pthread_mutex_lock(&c->mu);
	void *v = c->gen == gen ? hmap_get(c->counts, term) : NULL;
	pthread_mutex_unlock(&c->mu);
	if (v)
		return (int64_t)(intptr_t)v - 1;
	_cleanup_free_ char *e = term_expr(term);
	int64_t n = e ? sto_count_upto(db, e, limit) : -1;
	if (n < 0)
		return -1;
	pthread_mutex_lock(&c->mu);
	if (atomic_load(&s->gen) == gen && derived_for(c, gen) &&
	    hmap_size(c->counts) < COUNTS_MAX)
		hmap_put(c->counts, term, (void *)(intptr_t)(n + 1));
	pthread_mutex_unlock(&c->mu);
	return n;
}

bool sto_phrase_always;

/* The positions of term read ahead for generation gen, unless they are
 * kept or half the memory is taken. */
static int warm_term(struct store *s, sqlite3 *db, const char *term,
		     uint64_t gen)
{
	struct sto_phrases *c = s->phrases;
	uint64_t at = 0;
	struct sto_pos *p = lookup(s, term, &at);
	pthread_mutex_lock(&c->mu);
	bool room = c->terms.bytes <= PHRASE_BYTES / 2;
	pthread_mutex_unlock(&c->mu);
	int r = 0;
	char *msg = NULL;
	if (p && at != gen) {
		pos_unref(p);
		p = term_get(s, db, term, gen, &r, &msg);
	} else if (!p && room) {
		p = term_get(s, db, term, gen, &r, &msg);
	}
	pos_unref(p);
	free(msg);
	return r < 0 ? r : room;
}

int sto_phrase_warm(struct store *s, sqlite3 *db, const char *expr,
		    uint64_t gen)
{
	struct phrase p;
	if (!s->phrases || !phrase_of(expr, &p))
		return 0;
	int r = 1;
	for (size_t i = 0; i < p.n && r > 0; i++)
		for (size_t k = 0; k < p.nsyn[i] && r > 0; k++)
			r = warm_term(s, db, p.syn[i][k], gen);
	phrase_free(&p);
	return r;
}

/* Whether term is one of the first n forms of p before word i, form k. */
static bool seen_before(const struct phrase *p, size_t i, size_t k)
{
	for (size_t a = 0; a <= i; a++)
		for (size_t b = 0; b < p->nsyn[a] && (a < i || b < k); b++)
			if (!strcmp(p->syn[a][b], p->syn[i][k]))
				return true;
	return false;
}

/* The positions of p's words kept for generation gen into p->pos (those
 * of an older one count as kept: they are brought up to date by term_get,
 * at the cost of the notes changed since); true when FTS5 finds the
 * phrase sooner (above). */
static bool fts5_sooner(struct store *s, sqlite3 *db, struct phrase *p,
			uint64_t gen)
{
	int64_t least = INT64_MAX, unkept = 0;
	size_t nunkept = 0;
	for (size_t i = 0; i < p->n; i++) {
		int64_t notes = 0;
		bool word_unkept = false;
		for (size_t k = 0; k < p->nsyn[i]; k++) {
			uint64_t at = 0;
			struct sto_pos *c = lookup(s, p->syn[i][k], &at);
			p->pos[i][k] = c && at == gen ? c : NULL;
			int64_t n = c ? (int64_t)c->n
				      : notes_upto(s, db, p->syn[i][k],
						   COUNT_UPTO, gen);
			if (c && at != gen)
				pos_unref(c);
			if (n < 0)
				return true;
			notes += n < COUNT_UPTO ? n : COUNT_UPTO;
			if (!c && !seen_before(p, i, k)) {
				unkept += n < COUNT_UPTO ? n : COUNT_UPTO;
				word_unkept = true;
			}
		}
		/* Words, not forms: a word's stems are read with it. */
		nunkept += word_unkept;
		least = notes < least ? notes : least;
	}
	return !sto_phrase_always && nunkept && unkept > least &&
	       !(least >= COUNT_UPTO && nunkept == 1);
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
	int64_t nrow = 0;
	double avgdl = 1;
	*ret_r = sto_fts_averages(s, db, &nrow, &avgdl, ret_msg);
	if (*ret_r == 0 && fts5_sooner(s, db, &p, gen))
		*ret_r = 1;
	for (size_t i = 0; i < p.n && *ret_r == 0; i++)
		for (size_t k = 0; k < p.nsyn[i] && *ret_r == 0; k++)
			if (!p.pos[i][k] &&
			    !(p.pos[i][k] = term_get(s, db, p.syn[i][k], gen,
						     ret_r, ret_msg)) &&
			    *ret_r == 0)
				*ret_r = 1; /* a blob that is not vpos's */
	if (*ret_r == 0) {
		w = xcalloc(1, sizeof(*w));
		atomic_init(&w->kept.refs, 1);
		phrase_notes(db, &p, w);
		w->nrow = nrow;
		w->avgdl = avgdl;
		w->kept.gen = gen;
		*ret_r = sto_word_lengths(s, db, gen, w, ret_msg);
		sto_word_sized(w, expr);
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

struct sto_word *sto_phrase_found(struct store *s, const char *expr,
				  uint64_t gen)
{
	return s->phrases ? found_get(s->phrases, expr, gen) : NULL;
}

/* Title places that may come before the text's (sto_phrase_places). */
#define PLACES_TITLE 64

/* The places of p in the text of note id into out (at most max), with
 * scratch s, cursors cur and room for cap places o: how many; -1 when
 * title places may have crowded the text's out. */
static int text_places(const struct phrase *p, int64_t id, struct scratch *s,
		       size_t cur[][SYN_MAX], uint32_t *o, size_t cap, int *out,
		       int max)
{
	memset(cur, 0, p->n * sizeof(*cur));
	size_t n = forms_of(p, id, cur, s->f, s->nf) ? places(p, s, o, cap) : 0;
	int r = 0;
	for (size_t j = 0; j < n && r < max; j++)
		if (o[j] >> POS_COL)
			out[r++] = (int)(o[j] & POS_OFF);
	return n == cap && r < max ? -1 : r;
}

int sto_phrase_places(struct store *s, const char *expr, uint64_t gen,
		      const int64_t *id, size_t n, int max, int *out, int *got,
		      int *ret_size)
{
	struct phrase p;
	if (!s->phrases || !phrase_of(expr, &p))
		return -1;
	int r = 0;
	*ret_size = (int)p.n;
	for (size_t i = 0; i < p.n; i++)
		for (size_t k = 0; k < p.nsyn[i]; k++) {
			uint64_t at = 0;
			struct sto_pos *c = lookup(s, p.syn[i][k], &at);
			if (c && at != gen) {
				pos_unref(c);
				c = NULL;
			}
			p.pos[i][k] = c;
			r = c ? r : -1;
		}
	if (r == 0) {
		size_t(*cur)[SYN_MAX] = xcalloc(p.n, sizeof(*cur));
		struct scratch *sc = xcalloc(1, sizeof(*sc));
		size_t cap = (size_t)max + PLACES_TITLE;
		uint32_t *o = xcalloc(cap, sizeof(*o));
		for (size_t i = 0; i < n; i++)
			got[i] = text_places(&p, id[i], sc, cur, o, cap,
					     out + i * (size_t)max, max);
		scratch_free(sc);
		free(cur);
		free(o);
	}
	phrase_free(&p);
	return r;
}
