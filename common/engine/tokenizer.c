/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "tokenizer.h"
#include "ftsaux.h"
#include "stem.h"
#include "u8.h"
#include "util.h"
#include "varint.h"

#include <pthread.h>

bool tokenizer_is_cjk(int32_t c)
{
	return (c >= 0x3040 && c <= 0x30ff) || (c >= 0x3400 && c <= 0x4dbf) ||
	       (c >= 0x4e00 && c <= 0x9fff) || (c >= 0xac00 && c <= 0xd7af) ||
	       (c >= 0xf900 && c <= 0xfaff) || (c >= 0xff66 && c <= 0xff9f) ||
	       (c >= 0x20000 && c <= 0x2fa1f);
}

/* The unicode61 tokenizer this one wraps. */
struct tok {
	fts5_tokenizer base;
	Fts5Tokenizer *inner;
	struct stemmer *stem;
};

struct call {
	void *ctx;
	int (*emit)(void *ctx, int tflags, const char *tok, int ntok, int start,
		    int end);
	const char *text; /* the original text */
	struct stemmer *stem;
	unsigned langs; /* whose stems go with each word; 0: none */
};

struct cp {
	int32_t c;
	int off, len; /* bytes in the token */
};

/* Code points of s[0..n); *ret_n of them. */
static struct cp *decode(const char *s, int n, int *ret_n)
{
	struct cp *v = xcalloc((size_t)n + 1, sizeof(*v));
	int k = 0;
	for (int i = 0; i < n;) {
		int32_t c;
		int l = u8_decode(s + i, (size_t)(n - i), &c);
		if (l <= 0) {
			c = (unsigned char)s[i];
			l = 1;
		}
		v[k++] = (struct cp){c, i, l};
		i += l;
	}
	*ret_n = k;
	return v;
}

/*
 * A token from unicode61 that holds CJK characters: its non-CJK stretches
 * go on as tokens, each CJK stretch as overlapping pairs (a lone CJK
 * character as itself). Offsets point into the original text: CJK
 * characters are not changed by folding, so the n-th CJK character of the
 * token is the n-th of the original span.
 */
static int split(struct call *c, int tflags, const char *tok, int ntok,
		 int start, int end)
{
	int nt, no;
	struct cp *t = decode(tok, ntok, &nt);
	struct cp *o = decode(c->text + start, end - start, &no);
	/* Original offsets of the token's CJK characters, in order. */
	int *where = xcalloc((size_t)nt + 1, sizeof(int));
	int oi = 0;
	bool mapped = true;
	for (int i = 0; i < nt; i++) {
		if (!tokenizer_is_cjk(t[i].c))
			continue;
		while (oi < no && o[oi].c != t[i].c)
			oi++;
		if (oi >= no) {
			mapped = false;
			break;
		}
		where[i] = start + o[oi].off;
		oi++;
	}
	int rc = SQLITE_OK;
	for (int i = 0; i < nt && rc == SQLITE_OK;) {
		int j = i;
		bool cjk = tokenizer_is_cjk(t[i].c);
		while (j < nt && tokenizer_is_cjk(t[j].c) == cjk)
			j++;
		if (!cjk) {
			/* The original span of this stretch is not known
			 * exactly; the whole token's is close enough. */
			rc = c->emit(c->ctx, tflags, tok + t[i].off,
				     t[j - 1].off + t[j - 1].len - t[i].off,
				     start, end);
		} else if (j - i == 1) {
			int s = mapped ? where[i] : start;
			rc = c->emit(c->ctx, tflags, tok + t[i].off, t[i].len,
				     s, mapped ? s + t[i].len : end);
		} else {
			for (int k = i; k + 1 < j && rc == SQLITE_OK; k++) {
				int s = mapped ? where[k] : start;
				int e = mapped ? where[k + 1] + t[k + 1].len
					       : end;
				rc = c->emit(c->ctx, tflags, tok + t[k].off,
					     t[k].len + t[k + 1].len, s, e);
			}
		}
		i = j;
	}
	free(where);
	free(t);
	free(o);
	return rc;
}

static int on_token(void *ctx, int tflags, const char *tok, int ntok, int start,
		    int end)
{
	struct call *c = ctx;
	for (int i = 0; i < ntok; i++) {
		if ((unsigned char)tok[i] < 0x80)
			continue;
		int32_t cp;
		int l = u8_decode(tok + i, (size_t)(ntok - i), &cp);
		if (l > 0 && tokenizer_is_cjk(cp))
			return split(c, tflags, tok, ntok, start, end);
		if (l > 1)
			i += l - 1;
	}
	int rc = c->emit(c->ctx, tflags, tok, ntok, start, end);
	if (rc != SQLITE_OK || !c->langs)
		return rc;
	/* The stems at the same position: from the word as written, since
	 * unicode61's folding (й to и) would defeat the stemmer. */
	const char *st[LANG_COUNT];
	size_t sl[LANG_COUNT];
	int k = stemmer_stems(c->stem, c->text + start, (size_t)(end - start),
			      c->langs, tok, (size_t)ntok, st, sl);
	for (int i = 0; i < k && rc == SQLITE_OK; i++)
		rc = c->emit(c->ctx, FTS5_TOKEN_COLOCATED, st[i], (int)sl[i],
			     start, end);
	return rc;
}

static int tok_create(void *ctx, const char **args, int nargs,
		      Fts5Tokenizer **ret)
{
	fts5_api *api = ctx;
	struct tok *t = xcalloc(1, sizeof(*t));
	void *uctx = NULL;
	int rc = api->xFindTokenizer(api, "unicode61", &uctx, &t->base);
	if (rc == SQLITE_OK)
		rc = t->base.xCreate(uctx, args, nargs, &t->inner);
	if (rc != SQLITE_OK) {
		free(t);
		return rc;
	}
	t->stem = stemmer_new();
	*ret = (Fts5Tokenizer *)t;
	return SQLITE_OK;
}

static void tok_delete(Fts5Tokenizer *p)
{
	struct tok *t = (struct tok *)p;
	t->base.xDelete(t->inner);
	stemmer_free(t->stem);
	free(t);
}

/* ---- token streams ---------------------------------------------------------
 * One token after another: its flags (a byte), then as varints its
 * length, its start (zigzag, from the last token's) and its end (from
 * its start), then its bytes.
 */
struct tokens {
	unsigned char *b;
	size_t len, cap;
	int last; /* the last token's start, while recording */
};

/* What this thread's inserts replay (tokenizer_replay). */
static _Thread_local struct {
	const struct tokens *toks;
	const char *text;
	int n;
} replay;

static int on_record(void *ctx, int tflags, const char *tok, int ntok,
		     int start, int end)
{
	struct tokens *t = ctx;
	/* A flag byte, three varints of 5 bytes at most, the token. */
	size_t need = 16 + (size_t)ntok;
	if (t->cap - t->len < need) {
		t->cap = 2 * t->cap + need;
		t->b = xrealloc(t->b, t->cap);
	}
	int d = start - t->last;
	t->b[t->len++] = (unsigned char)tflags;
	t->len += varint_put(t->b + t->len, (uint32_t)ntok);
	t->len += varint_put(t->b + t->len, d < 0 ? ((uint32_t)-d << 1) - 1
						  : (uint32_t)d << 1);
	t->len += varint_put(t->b + t->len, (uint32_t)(end - start));
	memcpy(t->b + t->len, tok, (size_t)ntok);
	t->len += (size_t)ntok;
	t->last = start;
	return SQLITE_OK;
}

static int tokens_replay(const struct tokens *t, void *ctx,
			 int (*emit)(void *, int, const char *, int, int, int))
{
	const unsigned char *p = t->b, *e = t->b + t->len;
	int start = 0, rc = SQLITE_OK;
	while (p < e && rc == SQLITE_OK) {
		int tflags = *p++;
		uint32_t ntok, z, len;
		if (!varint_get(&p, e, &ntok) || !varint_get(&p, e, &z) ||
		    !varint_get(&p, e, &len) || ntok > (size_t)(e - p))
			return SQLITE_ERROR;
		start += z & 1 ? -(int)((z + 1) >> 1) : (int)(z >> 1);
		rc = emit(ctx, tflags, (const char *)p, (int)ntok, start,
			  start + (int)len);
		p += ntok;
	}
	return rc;
}

static bool replay_matches(const char *text, int n)
{
	return replay.toks && replay.n == n &&
	       (replay.text == text || !memcmp(replay.text, text, (size_t)n));
}

void tokenizer_replay(const struct tokens *t, const char *text, int n)
{
	replay.toks = t;
	replay.text = text;
	replay.n = n;
}

size_t tokens_size(const struct tokens *t)
{
	return t ? t->cap : 0;
}

struct tokens *tokens_free(struct tokens *t)
{
	if (t) {
		free(t->b);
		free(t);
	}
	return NULL;
}

static int tok_tokenize(Fts5Tokenizer *p, void *ctx, int flags,
			const char *text, int n,
			int (*emit)(void *, int, const char *, int, int, int))
{
	struct tok *t = (struct tok *)p;
	struct call c = {ctx, emit, text, t->stem, 0};
	if (flags == FTS5_TOKENIZE_DOCUMENT && replay_matches(text, n))
		return tokens_replay(replay.toks, ctx, emit);
	if (flags & FTS5_TOKENIZE_DOCUMENT) {
		/* A long text of no known language: English, a short one
		 * (a name, aliases) every language's stems. */
		c.langs = stem_guess(text, (size_t)n);
		if (c.langs == LANG_ALL && n >= SHORT_TEXT)
			c.langs = 1u << LANG_EN | 1u << LANG_RU;
	} else if (flags & FTS5_TOKENIZE_QUERY) {
		c.langs = LANG_ALL;
		if (n >= 3 && text[0] == TOKENIZER_LANGS) {
			c.langs = (unsigned)strtoul(
				(char[]){text[1], text[2], 0}, NULL, 16);
			text += 3;
			n -= 3;
			c.text = text;
		}
		/* A prefix is matched as written. */
		if (flags & FTS5_TOKENIZE_PREFIX)
			c.langs = 0;
	}
	return t->base.xTokenize(t->inner, &c, flags, text, n, on_token);
}

static fts5_api *get_api(sqlite3 *db)
{
	fts5_api *api = NULL;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) !=
	    SQLITE_OK)
		return NULL;
	sqlite3_bind_pointer(st, 1, (void *)&api, "fts5_api_ptr", NULL);
	sqlite3_step(st);
	sqlite3_finalize(st);
	return api;
}

int tokenizer_register(sqlite3 *db)
{
	fts5_api *api = get_api(db);
	if (!api || api->iVersion < 2)
		return SQLITE_ERROR;
	fts5_tokenizer t = {tok_create, tok_delete, tok_tokenize};
	int rc = api->xCreateTokenizer(api, "vaultd", api, &t, NULL);
	return rc == SQLITE_OK ? ftsaux_register(api) : rc;
}

/* ---- positions outside the index ------------------------------------------
 * Each thread that asks gets its own in-memory connection with this
 * tokenizer on it, closed when the thread ends.
 */

struct local {
	sqlite3 *db;
	fts5_tokenizer api;
	Fts5Tokenizer *tok;
};

static pthread_key_t local_key;
static pthread_once_t local_once = PTHREAD_ONCE_INIT;

static void local_free(void *p)
{
	struct local *l = p;
	if (l->tok)
		l->api.xDelete(l->tok);
	sqlite3_close(l->db);
	free(l);
}

static void local_key_make(void)
{
	pthread_key_create(&local_key, local_free);
}

static struct local *local_get(void)
{
	pthread_once(&local_once, local_key_make);
	struct local *l = pthread_getspecific(local_key);
	if (l)
		return l;
	l = xcalloc(1, sizeof(*l));
	fts5_api *api = NULL;
	void *uctx = NULL;
	const char *args[] = {"remove_diacritics", "2"};
	if (sqlite3_open(":memory:", &l->db) != SQLITE_OK ||
	    tokenizer_register(l->db) != SQLITE_OK || !(api = get_api(l->db)) ||
	    api->xFindTokenizer(api, "vaultd", &uctx, &l->api) != SQLITE_OK ||
	    l->api.xCreate(uctx, args, 2, &l->tok) != SQLITE_OK) {
		l->tok = NULL;
		local_free(l);
		return NULL;
	}
	pthread_setspecific(local_key, l);
	return l;
}

struct tokens *tokenizer_tokens(const char *text, int n)
{
	struct local *l = local_get();
	if (!l)
		return NULL;
	struct tokens *t = xcalloc(1, sizeof(*t));
	t->cap = (size_t)n + (size_t)n / 2 + 64;
	t->b = xmalloc(t->cap);
	if (l->api.xTokenize(l->tok, t, FTS5_TOKENIZE_DOCUMENT, text, n,
			     on_record) != SQLITE_OK)
		return tokens_free(t);
	return t;
}

struct counting {
	const int *offs;
	int noffs, k, count;
	int *pos;
};

static int on_count(void *ctx, int tflags, const char *tok, int ntok, int start,
		    int end)
{
	struct counting *c = ctx;
	(void)tok;
	(void)ntok;
	(void)end;
	if (tflags & FTS5_TOKEN_COLOCATED)
		return SQLITE_OK;
	while (c->k < c->noffs && start >= c->offs[c->k])
		c->pos[c->k++] = c->count;
	c->count++;
	return SQLITE_OK;
}

int tokenizer_positions(const char *text, int n, const int *offs, int noffs,
			int *pos)
{
	struct local *l = local_get();
	if (!l)
		return -1;
	struct counting c = {offs, noffs, 0, 0, pos};
	if (l->api.xTokenize(l->tok, &c, FTS5_TOKENIZE_AUX, text, n,
			     on_count) != SQLITE_OK)
		return -1;
	while (c.k < noffs)
		pos[c.k++] = c.count;
	return 0;
}

int tokens_positions(const struct tokens *t, const int *offs, int noffs,
		     int *pos)
{
	struct counting c = {offs, noffs, 0, 0, pos};
	if (tokens_replay(t, &c, on_count) != SQLITE_OK)
		return -1;
	while (c.k < noffs)
		pos[c.k++] = c.count;
	return 0;
}

struct querying {
	void *ctx;
	int (*fn)(void *ctx, int tflags, const char *tok, int ntok);
};

static int on_query(void *ctx, int tflags, const char *tok, int ntok, int start,
		    int end)
{
	struct querying *q = ctx;
	(void)start;
	(void)end;
	return q->fn(q->ctx, tflags, tok, ntok);
}

int tokenizer_query(const char *text, int n, void *ctx,
		    int (*fn)(void *ctx, int tflags, const char *tok, int ntok))
{
	struct local *l = local_get();
	if (!l)
		return -1;
	struct querying q = {ctx, fn};
	return l->api.xTokenize(l->tok, &q, FTS5_TOKENIZE_QUERY, text, n,
				on_query) == SQLITE_OK
		       ? 0
		       : -1;
}

int tokenizer_aux(void *unused, const char *text, int n, void *ctx,
		  int (*cb)(void *, int, const char *, int, int, int))
{
	struct local *l = local_get();
	(void)unused;
	if (!l)
		return SQLITE_ERROR;
	return l->api.xTokenize(l->tok, ctx, FTS5_TOKENIZE_AUX, text, n, cb);
}
