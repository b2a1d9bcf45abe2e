/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The store's entries and writes: loading every note's entry at start
 * (store_load), transactions, and putting, removing and re-stating notes;
 * the FTS changes are queued and written when the transaction commits.
 */
#include "store_int.h"
#include "docz.h"
#include "docz_dict.h"
#include "markdown.h"
#include "tokenizer.h"
#include "u8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- entries ------------------------------------------------------------ */

struct loaded {
	struct store_entry e;
	const char *path;
	bool used;
};

/* Paths and blobs are copied into blocks of this size (a larger one for
 * an entry that needs it): no copy moves once made. */
#define ARENA_BLOCK (8u << 20)

struct store_entries {
	struct loaded *v;
	size_t n;
	struct ptrvec blocks;
	char *cur; /* the last block: used up to cur_len of cur_cap */
	size_t cur_len, cur_cap;
	struct hmap *by_path; /* path -> struct loaded * */
};

/* Room for n bytes that never moves. */
static char *arena_get(struct store_entries *es, size_t n)
{
	if (!es->cur || es->cur_cap - es->cur_len < n) {
		es->cur_cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
		es->cur = xmalloc(es->cur_cap);
		es->cur_len = 0;
		pv_push(&es->blocks, es->cur);
	}
	char *r = es->cur + es->cur_len;
	es->cur_len += n;
	return r;
}

bool store_empty(struct store *s)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->w, "SELECT 1 FROM notes LIMIT 1", -1, &st,
			       NULL) != SQLITE_OK)
		return true;
	bool empty = sqlite3_step(st) != SQLITE_ROW;
	sqlite3_finalize(st);
	return empty;
}

struct store_entries *store_load(struct store *s)
{
	struct store_entries *es = xcalloc(1, sizeof(*es));
	es->by_path = hmap_new();
	size_t cap = 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(
		    s->w, "SELECT path, mtime_ns, size, ino, data FROM notes",
		    -1, &st, NULL) != SQLITE_OK)
		return es;
	int r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		const char *p = (const char *)sqlite3_column_text(st, 0);
		if (!p)
			continue;
		if (es->n == cap) {
			cap = cap ? 2 * cap : 1024;
			es->v = xrealloc(es->v, cap * sizeof(*es->v));
		}
		struct loaded *l = &es->v[es->n++];
		memset(l, 0, sizeof(*l));
		l->e.mtime_ns = sqlite3_column_int64(st, 1);
		l->e.size = sqlite3_column_int64(st, 2);
		l->e.ino = (uint64_t)sqlite3_column_int64(st, 3);
		l->e.len = (size_t)sqlite3_column_bytes(st, 4);
		size_t pl = strlen(p) + 1;
		char *m = arena_get(es, pl + l->e.len);
		memcpy(m, p, pl);
		if (l->e.len)
			memcpy(m + pl, sqlite3_column_blob(st, 4), l->e.len);
		l->path = m;
		l->e.blob = m + pl;
	}
	if (r != SQLITE_DONE)
		sto_write_failed(s);
	sqlite3_finalize(st);
	/* Pointers once the array has stopped moving; the map sized once. */
	hmap_reserve(es->by_path, es->n);
	for (size_t i = 0; i < es->n; i++)
		hmap_put(es->by_path, es->v[i].path, &es->v[i]);
	return es;
}

const struct store_entry *store_entries_get(const struct store_entries *es,
					    const char *path)
{
	struct loaded *l = es ? hmap_get(es->by_path, path) : NULL;
	return l ? &l->e : NULL;
}

void store_entries_use(struct store_entries *es, const char *path)
{
	struct loaded *l = es ? hmap_get(es->by_path, path) : NULL;
	if (l)
		l->used = true;
}

bool store_entries_next_unused(const struct store_entries *es, size_t *iter,
			       const char **ret_path)
{
	while (es && *iter < es->n) {
		const struct loaded *l = &es->v[(*iter)++];
		if (!l->used) {
			*ret_path = l->path;
			return true;
		}
	}
	return false;
}

struct store_entries *store_entries_free(struct store_entries *es)
{
	if (!es)
		return NULL;
	hmap_free(es->by_path);
	free(es->v);
	for (size_t i = 0; i < es->blocks.n; i++)
		free(es->blocks.v[i]);
	pv_free(&es->blocks);
	free(es);
	return NULL;
}

int store_begin(struct store *s)
{
	if (!s->w)
		return -EIO;
	return sqlite3_exec(s->w, "BEGIN IMMEDIATE", NULL, NULL, NULL) ==
			       SQLITE_OK
		       ? 0
		       : sto_write_failed(s);
}

/* Write the queued FTS rows (at the commit). */
static int flush_ops(struct store *s)
{
	int r = 0;
	for (size_t i = 0; i < s->nops; i++) {
		struct fts_op *o = &s->ops[i];
		tokenizer_replay(o->toks, o->body, o->blen);
		r |= sto_fts_rows(s, o->del, o->id, o->title, o->tlen, o->body,
				  o->blen);
		tokenizer_replay(NULL, NULL, 0);
	}
	sto_drop_ops(s);
	return r ? sto_write_failed(s) : 0;
}

int store_commit(struct store *s)
{
	bool changed = s->dirty || s->nops;
	s->dirty = false;
	int r = flush_ops(s);
	/* Logged before the commit: a search whose snapshot has it finds
	 * the notes it changed in the log. */
	if (r == 0)
		sto_words_log(s);
	if (r == 0 &&
	    sqlite3_exec(s->w, "COMMIT", NULL, NULL, NULL) == SQLITE_OK) {
		/* What searches counted before is out of date. */
		if (changed)
			atomic_fetch_add(&s->gen, 1);
		return 0;
	}
	sto_write_failed(s);
	store_rollback(s);
	return -EIO;
}

void store_rollback(struct store *s)
{
	/* The dictionary may have been saved in this transaction. */
	s->dict_saved = 0;
	sto_drop_ops(s);
	sto_words_forget(s);
	if (s->w && !sqlite3_get_autocommit(s->w))
		sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
	if (s->dirty)
		atomic_fetch_add(&s->gen, 1);
	s->dirty = false;
}

int sto_run(sqlite3_stmt *st)
{
	int r = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r == SQLITE_DONE || r == SQLITE_ROW ? 0 : -EIO;
}

bool sto_has_cjk(const char *t, size_t len)
{
	for (size_t i = 0; i < len;) {
		/* CJK starts at U+3040: lead bytes 0xe3 and up. */
		if ((unsigned char)t[i] < 0xe3) {
			i++;
			continue;
		}
		int32_t c;
		int l = u8_decode(t + i, len - i, &c);
		if (l < 0) {
			i++;
			continue;
		}
		if (tokenizer_is_cjk(c))
			return true;
		i += (size_t)l;
	}
	return false;
}

static int64_t find_id(struct store *s, const char *path)
{
	sqlite3_stmt *st = s->st[ST_FIND];
	sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
	int64_t id = -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return id;
}

static int run_id(struct store *s, int which, int64_t id)
{
	sqlite3_bind_int64(s->st[which], 1, id);
	return sto_run(s->st[which]);
}

/* Queue a change; the op takes title, body (malloc'd) and the body's
 * tokens, if made ahead, over. */
static void queue_op(struct store *s, bool del, int64_t id, char *title,
		     int tlen, char *body, int blen, struct tokens *toks)
{
	if (s->nops == s->capops) {
		s->capops = s->capops ? 2 * s->capops : 64;
		s->ops = xrealloc(s->ops, s->capops * sizeof(*s->ops));
	}
	sto_words_touch(s, id);
	s->ops[s->nops++] = (struct fts_op){
		.del = del,
		.id = id,
		.title = title,
		.body = body,
		.tlen = tlen,
		.blen = blen,
		.toks = toks,
	};
}

void sto_drop_ops(struct store *s)
{
	for (size_t i = 0; i < s->nops; i++) {
		free(s->ops[i].title);
		free(s->ops[i].body);
		tokens_free(s->ops[i].toks);
	}
	s->nops = 0;
}

/* Add (or, with del, remove) a row's text in both FTS tables. */
int sto_fts_rows(struct store *s, bool del, int64_t id, const char *title,
		 int tlen, const char *body, int blen)
{
	sqlite3_stmt *f = s->st[del ? ST_UNINDEX_FTS : ST_INDEX_FTS];
	sqlite3_bind_int64(f, 1, id);
	sqlite3_bind_text(f, 2, title, tlen, SQLITE_STATIC);
	sqlite3_bind_text(f, 3, body, blen, SQLITE_STATIC);
	int r = sto_run(f);
	int64_t cur = atomic_load(&s->sub_cursor);
	if (cur >= 0 && id > cur)
		return r; /* the backfill comes to it */
	_cleanup_free_ char *folded = fold_key_n(body, (size_t)blen);
	sqlite3_stmt *t = s->st[del ? ST_UNINDEX_SUB : ST_INDEX_SUB];
	sqlite3_bind_int64(t, 1, id);
	sqlite3_bind_text(t, 2, folded, -1, SQLITE_STATIC);
	return r | sto_run(t);
}

/* Take a row's text out of both FTS tables: queued with the text it has
 * now (before it changes). */
static int unindex(struct store *s, int64_t id)
{
	sqlite3_stmt *st = s->st[ST_OLD_DOC];
	sqlite3_bind_int64(st, 1, id);
	int r = sqlite3_step(st);
	if (r == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		const char *b = (const char *)sqlite3_column_text(st, 1);
		int tl = sqlite3_column_bytes(st, 0),
		    bl = sqlite3_column_bytes(st, 1);
		queue_op(s, true, id, xstrndup(t ? t : "", (size_t)tl), tl,
			 xstrndup(b ? b : "", (size_t)bl), bl, NULL);
	}
	sqlite3_reset(st);
	return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -EIO;
}

struct store_text {
	char *body; /* after the frontmatter, NFC */
	size_t blen;
	int body_line;
	bool cjk;
	void *z; /* the body as stored (docz_pack) */
	size_t zlen;
	struct tokens *toks; /* the body's, made ahead, or NULL */
};

/* store_text_new(), its tokens made first when tokenize is set. */
static struct store_text *text_new(struct store *s, const char *text,
				   size_t len, bool tokenize)
{
	struct store_text *t = xcalloc(1, sizeof(*t));
	/* The text searched: after the frontmatter, NFC (names are NFC,
	 * and so are the queries). */
	size_t fs, fe, body = 0;
	if (!text)
		len = 0;
	if (text)
		md_split_frontmatter(text, len, &fs, &fe, &body);
	char *raw = xstrndup(text ? text + body : "", len - body);
	char *nfc = sto_ascii_only(raw, len - body) ? NULL : u8_nfc(raw);
	if (nfc) {
		free(raw);
		t->body = nfc;
	} else {
		t->body = raw;
	}
	t->blen = strlen(t->body);
	t->body_line = 1;
	for (size_t i = 0; i < body; i++)
		t->body_line += text[i] == '\n';
	t->cjk = sto_has_cjk(t->body, t->blen);
	if (tokenize)
		t->toks = tokenizer_tokens(t->body, (int)t->blen);
	t->z = docz_coder_pack(s->coder, t->body, t->blen, t->toks, &t->zlen);
	return t;
}

struct store_text *store_text_new(struct store *s, const char *text, size_t len)
{
	return text_new(s, text, len, false);
}

struct store_text *store_text_tokenized(struct store *s, const char *text,
					size_t len)
{
	return text_new(s, text, len, true);
}

size_t store_text_size(const struct store_text *t)
{
	return t->blen + t->zlen + tokens_size(t->toks);
}

struct store_text *store_text_free(struct store_text *t)
{
	if (!t)
		return NULL;
	free(t->body);
	free(t->z);
	tokens_free(t->toks);
	free(t);
	return NULL;
}

int store_put(struct store *s, const struct note *n, const char *text,
	      size_t len)
{
	if (!s->w)
		return -EIO;
	return store_put_text(s, n, store_text_new(s, text, len));
}

/* The dictionary t's packed body needs, saved in the store if it is not
 * yet (the body is packed again with deflate when it cannot be). */
static int need_dict(struct store *s, struct store_text *t)
{
	uint64_t key = docz_key(t->z, t->zlen);
	if (!key || key == s->dict_saved)
		return 0;
	int r = sto_save_dict(s, key);
	if (r < 0) {
		free(t->z);
		t->z = docz_pack(t->body, t->blen, &t->zlen);
	}
	return r;
}

int store_put_text(struct store *s, const struct note *n, struct store_text *t)
{
	if (!s->w) {
		store_text_free(t);
		return -EIO;
	}
	struct sbuf title = {0};
	sb_puts(&title, note_name(n));
	for (size_t i = 0; i < note_naliases(n); i++) {
		sb_putc(&title, '\n');
		sb_puts(&title, note_aliases(n)[i]);
	}
	bool cjk = t->cjk || sto_has_cjk(title.s, title.len);
	size_t blen;
	_cleanup_free_ void *blob = note_to_blob(n, &blen);
	_cleanup_free_ char *folder = fold_key_n(note_path(n), note_dirlen(n));
	int64_t old = find_id(s, note_path(n));
	int r = 0;
	if (old >= 0)
		r |= unindex(s, old);
	sqlite3_stmt *st = s->st[old >= 0 ? ST_SET_NOTE : ST_ADD_NOTE];
	sqlite3_bind_text(st, 1, note_path(n), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, note_fold_name(n), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, note_name(n), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, folder, -1, SQLITE_STATIC);
	/* A racy note is stored with no time: read again at the next start
	 * (its time and size prove nothing, note.h). */
	sqlite3_bind_int64(st, 5, note_racy(n) ? 0 : note_mtime_ns(n));
	sqlite3_bind_int64(st, 6, note_size(n));
	sqlite3_bind_int64(st, 7, (sqlite3_int64)note_ino(n));
	sqlite3_bind_int(st, 8, t->body_line);
	sqlite3_bind_int(st, 9, cjk);
	sqlite3_bind_blob(st, 10, blob, (int)blen, SQLITE_STATIC);
	if (old >= 0)
		sqlite3_bind_int64(st, 11, old);
	bool put = sto_run(st) == 0 && sqlite3_changes(s->w) == 1;
	if (!put) {
		sb_free(&title);
		store_text_free(t);
		return sto_write_failed(s);
	}
	int64_t id = old >= 0 ? old : sqlite3_last_insert_rowid(s->w);
	/* A new row has no tags: a note removed takes its tags along. */
	if (old >= 0)
		r |= run_id(s, ST_DEL_TAGS, id);
	for (size_t i = 0; i < note_ntags(n); i++) {
		const char *tag = note_fold_tags(n)[i];
		sqlite3_bind_text(s->st[ST_ADD_TAG], 1, tag, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s->st[ST_ADD_TAG], 2, id);
		r |= sto_run(s->st[ST_ADD_TAG]);
	}
	r |= need_dict(s, t);
	st = s->st[ST_PUT_DOC];
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, title.s, (int)title.len, SQLITE_STATIC);
	sqlite3_bind_blob64(st, 3, t->z, t->zlen, SQLITE_STATIC);
	r |= sto_run(st);
	int tlen = (int)title.len;
	queue_op(s, false, id, sb_steal(&title), tlen, TAKE_PTR(t->body),
		 (int)t->blen, TAKE_PTR(t->toks));
	store_text_free(t);
	s->dirty = true;
	atomic_fetch_add(&s->gen, 1);
	return r ? sto_write_failed(s) : 0;
}

int store_remove(struct store *s, const char *path)
{
	if (!s->w)
		return -EIO;
	int64_t id = find_id(s, path);
	if (id < 0)
		return 0;
	int r = unindex(s, id);
	r |= run_id(s, ST_DEL_DOC, id);
	r |= run_id(s, ST_DEL_TAGS, id);
	r |= run_id(s, ST_DEL_NOTE, id);
	s->dirty = true;
	atomic_fetch_add(&s->gen, 1);
	return r ? sto_write_failed(s) : 0;
}

int store_set_stat(struct store *s, const char *path, int64_t mtime_ns,
		   int64_t size, uint64_t ino)
{
	if (!s->w)
		return -EIO;
	sqlite3_stmt *st = s->st[ST_SET_STAT];
	sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, mtime_ns);
	sqlite3_bind_int64(st, 3, size);
	sqlite3_bind_int64(st, 4, (int64_t)ino);
	return sto_run(st) ? sto_write_failed(s) : 0;
}

void store_hits_free(struct store_hit *h, size_t n)
{
	for (size_t i = 0; h && i < n; i++) {
		free(h[i].path);
		free(h[i].snippet);
	}
	free(h);
}
