/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "store.h"
#include "docz.h"
#include "markdown.h"
#include "stem.h"
#include "tokenizer.h"
#include "u8.h"
#include "util.h"
#include "note_int.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>

/* The layout; a database with another one is rebuilt. NOTE_FORMAT is part
 * of it: stored entries are only as good as the parser that made them. */
#define LAYOUT (8 * 1000 + NOTE_FORMAT)
#define POOL_MAX 8
/* Ranking: BM25 with a note's name and aliases weighing ten times its
 * text, with bounded work per note (ftsaux.h). */
#define RANK "vrank(10.0, 1.0)"
/* Trigrams taken from a long content query (the rest is checked). */
#define MAX_TRIGRAMS 24

static const char SCHEMA_SQL[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
	/* name and folder are folded (case-insensitive matching). */
	"CREATE TABLE notes(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,"
	" name TEXT NOT NULL, title TEXT NOT NULL, folder TEXT NOT NULL,"
	" mtime_ns INTEGER, size INTEGER, ino INTEGER, body_line INTEGER,"
	" cjk INTEGER NOT NULL DEFAULT 0, data BLOB NOT NULL);"
	"CREATE INDEX notes_folder ON notes(folder);"
	"CREATE INDEX notes_name ON notes(name, path);"
	"CREATE TABLE tags(tag TEXT NOT NULL, note INTEGER NOT NULL,"
	" PRIMARY KEY(tag, note)) WITHOUT ROWID;"
	"CREATE INDEX tags_note ON tags(note);"
	/* title: the name and the aliases; body: the text after the
	 * frontmatter, compressed in chunks (docz.h). Both FTS tables index the
	 * view docs, which reads it back. */
	"CREATE TABLE docz(id INTEGER PRIMARY KEY, title TEXT, body BLOB);"
	"CREATE VIEW docs(id, title, body) AS"
	" SELECT id, title, vunzip(body) FROM docz;"
	"CREATE VIRTUAL TABLE fts USING fts5(title, body, content = 'docs',"
	" content_rowid = 'id', tokenize = 'vaultd remove_diacritics 2');"
	"INSERT INTO fts(fts, rank) VALUES('rank', 'bm25(10.0, 1.0)');"
	/* Trigrams of the folded text (NFC, case folded: "Straße" is
	 * "strasse"), for substrings; it keeps no copy of the text. */
	"CREATE VIRTUAL TABLE sub USING fts5(body, content = '',"
	" tokenize = 'trigram', detail = 'none');"
	/* Terms pending in memory before FTS5 writes a segment (default
	 * 1 MB): a build writes few large segments instead of many small
	 * ones that are merged again and again. */
	"INSERT INTO fts(fts, rank) VALUES('hashsize', 33554432);"
	"INSERT INTO sub(sub, rank) VALUES('hashsize', 16777216);";

enum {
	ST_FIND,
	ST_UPSERT,
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

static const char *const STMTS[ST_COUNT] = {
	[ST_FIND] = "SELECT id FROM notes WHERE path = ?",
	[ST_UPSERT] = "INSERT INTO notes(path, name, title, folder, mtime_ns,"
		      " size, ino, body_line, cjk, data)"
		      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
		      " ON CONFLICT(path) DO UPDATE SET name = ?2, title = ?3,"
		      " folder = ?4, mtime_ns = ?5, size = ?6, ino = ?7,"
		      " body_line = ?8, cjk = ?9, data = ?10 RETURNING id",
	[ST_DEL_TAGS] = "DELETE FROM tags WHERE note = ?",
	[ST_ADD_TAG] = "INSERT OR IGNORE INTO tags(tag, note) VALUES(?, ?)",
	/* External-content and contentless FTS tables forget a row given
	 * its old text. Always single-row VALUES: an INSERT ... SELECT into
	 * an FTS5 table opens a statement savepoint, which makes FTS5 flush
	 * its pending terms for every row (three times slower). */
	[ST_OLD_DOC] = "SELECT title, body FROM docs WHERE id = ?",
	[ST_UNINDEX_FTS] = "INSERT INTO fts(fts, rowid, title, body)"
			   " VALUES('delete', ?, ?, ?)",
	[ST_UNINDEX_SUB] = "INSERT INTO sub(sub, rowid, body)"
			   " VALUES('delete', ?, ?)",
	[ST_PUT_DOC] = "INSERT OR REPLACE INTO docz(id, title, body)"
		       " VALUES(?, ?, ?)",
	[ST_INDEX_FTS] = "INSERT INTO fts(rowid, title, body) VALUES(?, ?, ?)",
	[ST_INDEX_SUB] = "INSERT INTO sub(rowid, body) VALUES(?, ?)",
	[ST_DEL_DOC] = "DELETE FROM docz WHERE id = ?",
	[ST_DEL_NOTE] = "DELETE FROM notes WHERE id = ?",
	[ST_SET_STAT] = "UPDATE notes SET mtime_ns = ?2, size = ?3, ino = ?4"
			" WHERE path = ?1",
};

/* A change to the FTS tables, held until the transaction commits. */
struct fts_op {
	bool del;
	int64_t id;
	char *title, *body;
	int tlen, blen;
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
	/* How many notes each word of recent queries is in (FTS5
	 * expression to count + 1), for generation dfgen. */
	pthread_mutex_t dfmu;
	struct hmap *df;
	uint64_t dfgen;
};

static void drop_ops(struct store *s);
static int run(sqlite3_stmt *st);
static int write_failed(struct store *s);
static int fts_rows(struct store *s, bool del, int64_t id, const char *title,
		    int tlen, const char *body, int blen);

/* ---- SQL functions ------------------------------------------------------ */

static bool ascii_only(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}

static const char *ascii_casestr(const char *hay, size_t hn, const char *ndl,
				 size_t nn)
{
	if (!nn)
		return hay;
	for (size_t i = 0; i + nn <= hn; i++) {
		size_t k = 0;
		while (k < nn) {
			char c = hay[i + k];
			if (c >= 'A' && c <= 'Z')
				c = (char)(c + 32);
			if (c != ndl[k])
				break;
			k++;
		}
		if (k == nn)
			return hay + i;
	}
	return NULL;
}

/* vcontains(text, folded): text holds folded, ignoring case (any script). */
static void sql_vcontains(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	const char *t = (const char *)sqlite3_value_text(argv[0]);
	const char *q = (const char *)sqlite3_value_text(argv[1]);
	if (!t || !q) {
		sqlite3_result_int(ctx, 0);
		return;
	}
	size_t tn = (size_t)sqlite3_value_bytes(argv[0]);
	size_t qn = (size_t)sqlite3_value_bytes(argv[1]);
	bool hit;
	if (ascii_only(q, qn) && ascii_only(t, tn)) {
		hit = ascii_casestr(t, tn, q, qn) != NULL;
	} else {
		_cleanup_free_ char *f = fold_key_n(t, tn);
		hit = strstr(f, q) != NULL;
	}
	sqlite3_result_int(ctx, hit);
}

/* ---- connections -------------------------------------------------------- */

/* vunzip(blob): the text docz_pack() packed; NULL for what it did not. */
static void sql_vunzip(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	const void *b = sqlite3_value_blob(argv[0]);
	size_t n = (size_t)sqlite3_value_bytes(argv[0]);
	if (!b || n < 1) {
		sqlite3_result_null(ctx);
		return;
	}
	size_t len;
	char *t = docz_text(b, n, &len);
	if (!t) {
		sqlite3_result_error(ctx, "stored text is damaged", -1);
		return;
	}
	sqlite3_result_text64(ctx, t, len, free, SQLITE_UTF8);
}

static int open_conn(const char *path, bool create, sqlite3 **ret)
{
	sqlite3 *db = NULL;
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
		    (create ? SQLITE_OPEN_CREATE : 0);
	int r = sqlite3_open_v2(path, &db, flags, NULL);
	if (r != SQLITE_OK) {
		sqlite3_close(db);
		return r;
	}
	if (tokenizer_register(db) != SQLITE_OK) {
		sqlite3_close(db);
		return SQLITE_ERROR;
	}
	sqlite3_busy_timeout(db, 10000);
	/* A cache: WAL without fsync per commit. A crash may lose the last
	 * commits, never consistency; stat checks at start catch up. */
	sqlite3_exec(db,
		     "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
		     "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16000;"
		     /* A build's large transactions leave the WAL no
		      * larger than this once checkpointed. */
		     "PRAGMA journal_size_limit = 16777216;",
		     NULL, NULL, NULL);
	sqlite3_create_function_v2(db, "vcontains", 2,
				   SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
				   sql_vcontains, NULL, NULL, NULL);
	sqlite3_create_function_v2(db, "vunzip", 1,
				   SQLITE_UTF8 | SQLITE_DETERMINISTIC |
					   SQLITE_INNOCUOUS,
				   NULL, sql_vunzip, NULL, NULL, NULL);
	*ret = db;
	return SQLITE_OK;
}

static int interrupted(void *ud)
{
	(void)ud;
	return cancel_requested();
}

static sqlite3 *acquire(struct store *s)
{
	pthread_mutex_lock(&s->pmu);
	sqlite3 *db = s->npool ? s->pool[--s->npool] : NULL;
	pthread_mutex_unlock(&s->pmu);
	if (!db) {
		if (open_conn(s->path, false, &db) != SQLITE_OK)
			return NULL;
		/* Searches stop when their request is cancelled. Only
		 * readers: the writer's work is never cut short. */
		sqlite3_progress_handler(db, 2000, interrupted, NULL);
	}
	return db;
}

static void release(struct store *s, sqlite3 *db)
{
	pthread_mutex_lock(&s->pmu);
	if (s->npool < POOL_MAX) {
		s->pool[s->npool++] = db;
		db = NULL;
	}
	pthread_mutex_unlock(&s->pmu);
	if (db)
		sqlite3_close(db);
}

static void remove_files(const char *path)
{
	static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
	for (size_t i = 0; i < ARRAY_SIZE(sfx); i++) {
		_cleanup_free_ char *p = xasprintf("%s%s", path, sfx[i]);
		unlink(p);
	}
}

static int user_version(sqlite3 *db)
{
	sqlite3_stmt *st;
	int v = -1;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	return v;
}

static char *meta_get(sqlite3 *db, const char *key)
{
	sqlite3_stmt *st;
	char *v = NULL;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1,
			       &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		v = xstrdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

/* NULL when usable: our layout, this vault, and the tables read back. */
static const char *check(sqlite3 *db, const char *root)
{
	int v = user_version(db);
	if (v < 0)
		return "it cannot be read (damaged?)";
	if (v == 0) {
		/* New, or not ours: an empty file is fine, tables are not. */
		sqlite3_stmt *st;
		int n = -1;
		if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master",
				       -1, &st, NULL) == SQLITE_OK) {
			if (sqlite3_step(st) == SQLITE_ROW)
				n = sqlite3_column_int(st, 0);
			sqlite3_finalize(st);
		}
		return n == 0 ? NULL : "it is not a vaultd index";
	}
	if (v != LAYOUT)
		return "it has another layout (another vaultd version)";
	_cleanup_free_ char *r = meta_get(db, "root");
	if (!r || strcmp(r, root) != 0)
		return "it belongs to another vault folder";
	if (sqlite3_exec(
		    db,
		    "SELECT id FROM notes LIMIT 1; SELECT id FROM docs LIMIT 1;"
		    "SELECT * FROM fts_config; SELECT * FROM sub_config",
		    NULL, NULL, NULL) != SQLITE_OK)
		return "it cannot be read (damaged?)";
	return NULL;
}

static int create_schema(sqlite3 *db, const char *root)
{
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return -EIO;
	int r = sqlite3_exec(db, SCHEMA_SQL, NULL, NULL, NULL);
	sqlite3_stmt *st;
	if (r == SQLITE_OK)
		r = sqlite3_exec(db,
				 "INSERT INTO meta VALUES('sub_cursor', '0')",
				 NULL, NULL, NULL);
	if (r == SQLITE_OK)
		r = sqlite3_prepare_v2(db, "INSERT INTO meta VALUES('root', ?)",
				       -1, &st, NULL);
	if (r == SQLITE_OK) {
		sqlite3_bind_text(st, 1, root, -1, SQLITE_STATIC);
		r = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_finalize(st);
	}
	if (r == SQLITE_OK) {
		char pragma[64];
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d",
			 LAYOUT);
		r = sqlite3_exec(db, pragma, NULL, NULL, NULL);
	}
	if (r == SQLITE_OK)
		r = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (r != SQLITE_OK) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return -EIO;
	}
	return 0;
}

/* Open the writer, rebuilding a database that cannot be used. */
static int open_writer(const char *path, const char *root, sqlite3 **ret,
		       char **ret_note)
{
	sqlite3 *db = NULL;
	const char *why = NULL;
	for (int attempt = 0; attempt < 2; attempt++) {
		int r = open_conn(path, true, &db);
		why = r == SQLITE_OK ? check(db, root) : "it cannot be opened";
		if (!why && user_version(db) == 0 &&
		    create_schema(db, root) < 0)
			why = "its tables cannot be created";
		if (!why)
			break;
		/* Never a reason to stop: the notes are in the vault. */
		sqlite3_close(db);
		db = NULL;
		if (!*ret_note)
			*ret_note =
				xasprintf("index %s rebuilt: %s", path, why);
		remove_files(path);
	}
	if (why) {
		free(*ret_note);
		*ret_note = xasprintf("index %s: %s", path, why);
		return -EIO;
	}
	*ret = db;
	return 0;
}

static void load_sub_cursor(struct store *s)
{
	_cleanup_free_ char *c = meta_get(s->w, "sub_cursor");
	atomic_store(&s->sub_cursor, c ? atoll(c) : -1);
}

static int prepare_all(struct store *s)
{
	for (int i = 0; i < ST_COUNT; i++)
		if (sqlite3_prepare_v3(s->w, STMTS[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &s->st[i],
				       NULL) != SQLITE_OK)
			return -EIO;
	return 0;
}

static void close_all(struct store *s)
{
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(s->st[i]);
		s->st[i] = NULL;
	}
	sqlite3_close(s->w);
	s->w = NULL;
	pthread_mutex_lock(&s->pmu);
	for (int i = 0; i < s->npool; i++)
		sqlite3_close(s->pool[i]);
	s->npool = 0;
	pthread_mutex_unlock(&s->pmu);
}

int store_open(const char *dir, const char *root, struct store **ret,
	       char **ret_note)
{
	*ret_note = NULL;
	_cleanup_free_ char *path = xasprintf("%s/index.sqlite", dir);
	sqlite3 *db;
	int r = open_writer(path, root, &db, ret_note);
	if (r < 0)
		return r;
	struct store *s = xcalloc(1, sizeof(*s));
	s->path = TAKE_PTR(path);
	s->root = xstrdup(root);
	s->w = db;
	pthread_mutex_init(&s->pmu, NULL);
	pthread_mutex_init(&s->dfmu, NULL);
	s->df = hmap_new();
	if (prepare_all(s) < 0) {
		free(*ret_note);
		*ret_note = xasprintf("index %s: %s", s->path,
				      sqlite3_errmsg(s->w));
		store_close(s);
		return -EIO;
	}
	atomic_store(&s->gen, 1);
	load_sub_cursor(s);
	*ret = s;
	return 0;
}

int store_reset(struct store *s, char **ret_note)
{
	*ret_note = NULL;
	close_all(s);
	remove_files(s->path);
	int r = open_writer(s->path, s->root, &s->w, ret_note);
	if (r == 0 && prepare_all(s) < 0)
		r = -EIO;
	if (r < 0 && !*ret_note)
		*ret_note = xasprintf("index %s cannot be created", s->path);
	if (r == 0) {
		atomic_store(&s->failed, false);
		free(s->error);
		s->error = NULL;
		load_sub_cursor(s);
	}
	atomic_fetch_add(&s->gen, 1);
	return r;
}

struct store *store_close(struct store *s)
{
	if (!s)
		return NULL;
	close_all(s);
	drop_ops(s);
	free(s->ops);
	pthread_mutex_destroy(&s->pmu);
	pthread_mutex_destroy(&s->dfmu);
	hmap_free(s->df);
	free(s->path);
	free(s->root);
	free(s->error);
	free(s);
	return NULL;
}

const char *store_path(const struct store *s)
{
	return s->path;
}

int64_t store_size(const struct store *s)
{
	int64_t total = 0;
	static const char *const sfx[] = {"", "-wal"};
	for (size_t i = 0; i < ARRAY_SIZE(sfx); i++) {
		_cleanup_free_ char *p = xasprintf("%s%s", s->path, sfx[i]);
		struct stat st;
		if (stat(p, &st) == 0)
			total += st.st_size;
	}
	return total;
}

uint64_t store_generation(struct store *s)
{
	return atomic_load(&s->gen);
}

bool store_sub_ready(struct store *s)
{
	return atomic_load(&s->sub_cursor) < 0;
}

int store_sub_backfill(struct store *s, uint64_t budget_ns, size_t *ret_done)
{
	*ret_done = 0;
	int64_t cur = atomic_load(&s->sub_cursor);
	if (cur < 0)
		return 0;
	if (store_begin(s) < 0)
		return -EIO;
	sqlite3_stmt *q = NULL, *m = NULL;
	int r = sqlite3_prepare_v2(s->w,
				   "SELECT id, body FROM docs WHERE id > ?"
				   " ORDER BY id LIMIT 64",
				   -1, &q, NULL) == SQLITE_OK
			? 0
			: -EIO;
	uint64_t t0 = now_ns();
	bool more = true;
	while (r == 0 && more && now_ns() - t0 < budget_ns) {
		more = false;
		sqlite3_bind_int64(q, 1, cur);
		int sr;
		while (r == 0 && (sr = sqlite3_step(q)) == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(q, 0);
			const char *b = (const char *)sqlite3_column_text(q, 1);
			_cleanup_free_ char *f =
				fold_key_n(b ? b : "", b ? strlen(b) : 0);
			sqlite3_stmt *t = s->st[ST_INDEX_SUB];
			sqlite3_bind_int64(t, 1, id);
			sqlite3_bind_text(t, 2, f, -1, SQLITE_STATIC);
			r = run(t);
			cur = id;
			more = true;
			(*ret_done)++;
		}
		if (r == 0 && sr != SQLITE_DONE)
			r = -EIO;
		sqlite3_reset(q);
	}
	sqlite3_finalize(q);
	int64_t next = more ? cur : -1;
	if (r == 0 &&
	    sqlite3_prepare_v2(s->w,
			       "UPDATE meta SET value = ? WHERE key = "
			       "'sub_cursor'",
			       -1, &m, NULL) == SQLITE_OK) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%lld", (long long)next);
		sqlite3_bind_text(m, 1, buf, -1, SQLITE_TRANSIENT);
		r = run(m);
	} else if (r == 0) {
		r = -EIO;
	}
	sqlite3_finalize(m);
	if (r < 0) {
		write_failed(s);
		store_rollback(s);
		return -EIO;
	}
	if (store_commit(s) < 0)
		return -EIO;
	/* Content searches give the same answers from the trigram index
	 * as from the stored text: the generation stays. */
	atomic_store(&s->sub_cursor, next);
	return next < 0 ? 0 : 1;
}

bool store_failed(struct store *s)
{
	return atomic_load(&s->failed);
}

const char *store_error(struct store *s)
{
	return s->error ? s->error : "";
}

/* A failed write: remember why; damage and a full disk need a reset. */
static int write_failed(struct store *s)
{
	int code = sqlite3_errcode(s->w);
	if (!s->error)
		s->error = xstrdup(sqlite3_errmsg(s->w));
	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB ||
	    code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_ERROR)
		atomic_store(&s->failed, true);
	return -EIO;
}

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
		write_failed(s);
	sqlite3_finalize(st);
	/* Pointers once the array has stopped moving. */
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
		       : write_failed(s);
}

int store_commit(struct store *s)
{
	int r = 0;
	bool changed = s->dirty || s->nops;
	s->dirty = false;
	for (size_t i = 0; i < s->nops; i++) {
		struct fts_op *o = &s->ops[i];
		r |= fts_rows(s, o->del, o->id, o->title, o->tlen, o->body,
			      o->blen);
	}
	drop_ops(s);
	if (r == 0 &&
	    sqlite3_exec(s->w, "COMMIT", NULL, NULL, NULL) == SQLITE_OK) {
		/* What searches counted before is out of date. */
		if (changed)
			atomic_fetch_add(&s->gen, 1);
		return 0;
	}
	write_failed(s);
	store_rollback(s);
	return -EIO;
}

void store_rollback(struct store *s)
{
	drop_ops(s);
	if (s->w && !sqlite3_get_autocommit(s->w))
		sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
	if (s->dirty)
		atomic_fetch_add(&s->gen, 1);
	s->dirty = false;
}

static int run(sqlite3_stmt *st)
{
	int r = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r == SQLITE_DONE || r == SQLITE_ROW ? 0 : -EIO;
}

static bool has_cjk(const char *t, size_t len)
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
	return run(s->st[which]);
}

/* Queue a change; the op takes title and body (malloc'd) over. */
static void queue_op(struct store *s, bool del, int64_t id, char *title,
		     int tlen, char *body, int blen)
{
	if (s->nops == s->capops) {
		s->capops = s->capops ? 2 * s->capops : 64;
		s->ops = xrealloc(s->ops, s->capops * sizeof(*s->ops));
	}
	s->ops[s->nops++] = (struct fts_op){
		.del = del,
		.id = id,
		.title = title,
		.body = body,
		.tlen = tlen,
		.blen = blen,
	};
}

static void drop_ops(struct store *s)
{
	for (size_t i = 0; i < s->nops; i++) {
		free(s->ops[i].title);
		free(s->ops[i].body);
	}
	s->nops = 0;
}

/* Add (or, with del, remove) a row's text in both FTS tables. */
static int fts_rows(struct store *s, bool del, int64_t id, const char *title,
		    int tlen, const char *body, int blen)
{
	sqlite3_stmt *f = s->st[del ? ST_UNINDEX_FTS : ST_INDEX_FTS];
	sqlite3_bind_int64(f, 1, id);
	sqlite3_bind_text(f, 2, title, tlen, SQLITE_STATIC);
	sqlite3_bind_text(f, 3, body, blen, SQLITE_STATIC);
	int r = run(f);
	int64_t cur = atomic_load(&s->sub_cursor);
	if (cur >= 0 && id > cur)
		return r; /* the backfill comes to it */
	_cleanup_free_ char *folded = fold_key_n(body, (size_t)blen);
	sqlite3_stmt *t = s->st[del ? ST_UNINDEX_SUB : ST_INDEX_SUB];
	sqlite3_bind_int64(t, 1, id);
	sqlite3_bind_text(t, 2, folded, -1, SQLITE_STATIC);
	return r | run(t);
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
			 xstrndup(b ? b : "", (size_t)bl), bl);
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
};

struct store_text *store_text_new(const char *text, size_t len)
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
	char *nfc = ascii_only(raw, len - body) ? NULL : u8_nfc(raw);
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
	t->cjk = has_cjk(t->body, t->blen);
	t->z = docz_pack(t->body, t->blen, &t->zlen);
	return t;
}

size_t store_text_size(const struct store_text *t)
{
	return t->blen + t->zlen;
}

struct store_text *store_text_free(struct store_text *t)
{
	if (!t)
		return NULL;
	free(t->body);
	free(t->z);
	free(t);
	return NULL;
}

int store_put(struct store *s, const struct note *n, const char *text,
	      size_t len)
{
	if (!s->w)
		return -EIO;
	return store_put_text(s, n, store_text_new(text, len));
}

int store_put_text(struct store *s, const struct note *n, struct store_text *t)
{
	if (!s->w) {
		store_text_free(t);
		return -EIO;
	}
	struct sbuf title = {0};
	sb_puts(&title, n->name);
	for (size_t i = 0; i < n->naliases; i++) {
		sb_putc(&title, '\n');
		sb_puts(&title, n->aliases[i]);
	}
	bool cjk = t->cjk || has_cjk(title.s, title.len);
	size_t blen;
	_cleanup_free_ void *blob = note_to_blob(n, &blen);
	_cleanup_free_ char *folder = fold_key_n(n->path, n->dirlen);
	int64_t old = find_id(s, n->path);
	int r = 0;
	if (old >= 0)
		r |= unindex(s, old);
	sqlite3_stmt *st = s->st[ST_UPSERT];
	sqlite3_bind_text(st, 1, n->path, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, n->fold_name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, folder, -1, SQLITE_STATIC);
	/* A racy note is stored with no time: read again at the next start
	 * (its time and size prove nothing, note.h). */
	sqlite3_bind_int64(st, 5, n->racy ? 0 : n->mtime_ns);
	sqlite3_bind_int64(st, 6, n->size);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)n->ino);
	sqlite3_bind_int(st, 8, t->body_line);
	sqlite3_bind_int(st, 9, cjk);
	sqlite3_bind_blob(st, 10, blob, (int)blen, SQLITE_STATIC);
	int64_t id = -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (id < 0) {
		sb_free(&title);
		store_text_free(t);
		return write_failed(s);
	}
	r |= run_id(s, ST_DEL_TAGS, id);
	for (size_t i = 0; i < n->ntags; i++) {
		const char *tag = n->fold_tags[i];
		sqlite3_bind_text(s->st[ST_ADD_TAG], 1, tag, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s->st[ST_ADD_TAG], 2, id);
		r |= run(s->st[ST_ADD_TAG]);
	}
	st = s->st[ST_PUT_DOC];
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, title.s, (int)title.len, SQLITE_STATIC);
	sqlite3_bind_blob64(st, 3, t->z, t->zlen, SQLITE_STATIC);
	r |= run(st);
	int tlen = (int)title.len;
	queue_op(s, false, id, sb_steal(&title), tlen, TAKE_PTR(t->body),
		 (int)t->blen);
	store_text_free(t);
	s->dirty = true;
	atomic_fetch_add(&s->gen, 1);
	return r ? write_failed(s) : 0;
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
	return r ? write_failed(s) : 0;
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
	return run(st) ? write_failed(s) : 0;
}

void store_hits_free(struct store_hit *h, size_t n)
{
	for (size_t i = 0; h && i < n; i++) {
		free(h[i].path);
		free(h[i].snippet);
	}
	free(h);
}

/* ---- queries --------------------------------------------------------------
 */

/* SQL text with its text parameters, numbered from FIRST_PARAM. */
#define FIRST_PARAM 4
struct sql {
	struct sbuf s;
	struct ptrvec params;
	bool sub_ok; /* the trigram index is complete */
	bool few;    /* the word index drives: few notes are tested */
};

static void param(struct sql *q, char *owned)
{
	pv_push(&q->params, owned);
	sb_printf(&q->s, "?%zu", FIRST_PARAM - 1 + q->params.n);
}

static void sql_free(struct sql *q)
{
	sb_free(&q->s);
	for (size_t i = 0; i < q->params.n; i++)
		free(q->params.v[i]);
	pv_free(&q->params);
}

static void bind_params(sqlite3_stmt *st, const struct sql *q)
{
	for (size_t i = 0; i < q->params.n; i++)
		sqlite3_bind_text(st, FIRST_PARAM + (int)i, q->params.v[i], -1,
				  SQLITE_STATIC);
}

/* An FTS5 string: "..." with quotes doubled. */
static void fts_quote(struct sbuf *b, const char *t, size_t n)
{
	sb_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '"')
			sb_putc(b, '"');
		sb_putc(b, t[i]);
	}
	sb_putc(b, '"');
}

/* Has a letter or digit: something the word tokenizer keeps. */
static bool searchable(const char *t)
{
	size_t n = strlen(t);
	for (size_t i = 0; i < n;) {
		int32_t c;
		int l = u8_decode(t + i, n - i, &c);
		if (l < 0)
			return false;
		if (u8_is_tag_char(c) && c != '/' && c != '-' && c != '_')
			return true;
		i += (size_t)l;
	}
	return false;
}

static bool text_atom(const struct qnode *q)
{
	return q->kind == Q_WORD || q->kind == Q_PHRASE;
}

/* A word or phrase with a CJK character standing alone (between other
 * text): character pairs cannot find it; substrings can. */
static bool cjk_atom(const struct qnode *q)
{
	if (!text_atom(q))
		return false;
	const char *t = q->text;
	size_t n = strlen(t);
	int run = 0;
	for (size_t i = 0; i <= n;) {
		int32_t c = 0;
		int l = i < n ? u8_decode(t + i, n - i, &c) : 1;
		if (l <= 0)
			l = 1;
		if (i < n && tokenizer_is_cjk(c)) {
			run++;
		} else {
			if (run == 1)
				return true;
			run = 0;
		}
		i += (size_t)l;
	}
	return false;
}

/* Trigram query for a substring of the folded text: "abc" AND "bcd" ...
 * (detail=none has no phrases; the caller checks the text). NULL below
 * three characters. */
static char *trigrams(const char *text)
{
	_cleanup_free_ char *t = fold_key(text);
	struct ptrvec starts = {0};
	for (const char *p = t; *p; p++)
		if (((unsigned char)*p & 0xc0) != 0x80)
			pv_push(&starts, (void *)p);
	size_t n = starts.n;
	if (n < 3) {
		pv_free(&starts);
		return NULL;
	}
	size_t ngrams = n - 2;
	size_t step = ngrams > MAX_TRIGRAMS ? ngrams / MAX_TRIGRAMS : 1;
	struct sbuf b = {0};
	for (size_t i = 0; i < ngrams; i += step) {
		const char *a = starts.v[i];
		const char *e = i + 3 < n ? (const char *)starts.v[i + 3]
					  : t + strlen(t);
		if (b.len)
			sb_puts(&b, " AND ");
		fts_quote(&b, a, (size_t)(e - a));
	}
	pv_free(&starts);
	return sb_steal(&b);
}

/* The languages whose stems the words of the query being planned bring
 * (stem.h): set by store_search for the thread that plans it. */
static _Thread_local unsigned query_langs = LANG_ALL;

/* A word for the tokenizer, with the languages of its stems ahead. */
static void fts_word(struct sbuf *b, const char *t)
{
	struct sbuf w = {0};
	sb_printf(&w, "%c%02x%s", TOKENIZER_LANGS, query_langs & 0xff, t);
	fts_quote(b, w.s, w.len);
	sb_free(&w);
}

/* FTS5 expression of a text atom (not CJK). A prefix also matches the
 * word itself, as another phrase, so that the word ranks above the
 * words it begins. */
static void fts_atom(struct sbuf *b, const struct qnode *q)
{
	const char *col = q->title ? "title : " : "";
	if (q->prefix) {
		sb_printf(b, "(%s", col);
		fts_word(b, q->text);
		sb_printf(b, " OR %s", col);
		fts_quote(b, q->text, strlen(q->text));
		sb_puts(b, " *)");
		return;
	}
	sb_puts(b, col);
	fts_word(b, q->text);
}

/* Translatable into one FTS5 expression: words and phrases (not CJK)
 * under AND and OR. */
static bool ftsable(const struct qnode *q)
{
	if (q->kind == Q_AND || q->kind == Q_OR)
		return ftsable(q->a) && ftsable(q->b);
	return text_atom(q) && !cjk_atom(q);
}

/* The operands of a chain of one operator, flat: FTS5's parser has a
 * small stack, too small for 256 nested parentheses. */
static void fts_chain(struct sbuf *b, const struct qnode *q, enum qkind k)
{
	if (q->kind == k) {
		fts_chain(b, q->a, k);
		sb_puts(b, k == Q_AND ? " AND " : " OR ");
		fts_chain(b, q->b, k);
	} else if (q->kind == Q_AND || q->kind == Q_OR) {
		sb_putc(b, '(');
		fts_chain(b, q, q->kind);
		sb_putc(b, ')');
	} else {
		fts_atom(b, q);
	}
}

static void fts_expr(struct sbuf *b, const struct qnode *q)
{
	if (q->kind == Q_AND || q->kind == Q_OR) {
		sb_putc(b, '(');
		fts_chain(b, q, q->kind);
		sb_putc(b, ')');
	} else {
		fts_atom(b, q);
	}
}

/* A condition on notes n for one atom. */
static void where_atom(struct sql *out, const struct qnode *q, bool cs)
{
	struct sbuf *s = &out->s;
	if (q->kind == Q_TAG || q->kind == Q_FOLDER) {
		char *f = fold_key(q->text);
		bool tag = q->kind == Q_TAG;
		/* x, or x/...: "x/" < "x/..." < "x0" ('0' follows '/'). */
		if (tag && out->few) {
			/* Each note's own few tags, not every note with
			 * the tag. */
			sb_puts(s, "EXISTS (SELECT 1 FROM tags WHERE note ="
				   " n.id AND (tag = ");
			param(out, xstrdup(f));
			sb_puts(s, " OR (tag > ");
			param(out, xasprintf("%s/", f));
			sb_puts(s, " AND tag < ");
			param(out, xasprintf("%s0", f));
			sb_puts(s, ")))");
			free(f);
			return;
		}
		sb_puts(s, tag ? "n.id IN (SELECT note FROM tags WHERE tag = "
			       : "(n.folder = ");
		param(out, xstrdup(f));
		sb_puts(s, tag ? " OR (tag > " : " OR (n.folder > ");
		param(out, xasprintf("%s/", f));
		sb_puts(s, tag ? " AND tag < " : " AND n.folder < ");
		param(out, xasprintf("%s0", f));
		sb_puts(s, "))");
		free(f);
		return;
	}
	if (cjk_atom(q)) {
		/* Substrings: the trigram index narrows (three characters
		 * or more), the folded text decides. */
		_cleanup_free_ char *grams = trigrams(q->text);
		sb_puts(s, "(vcontains(n.title, ");
		param(out, fold_key(q->text));
		sb_puts(s, ")");
		if (!q->title) {
			sb_puts(s, " OR (");
			if (grams && out->sub_ok) {
				sb_puts(s, "n.id IN (SELECT rowid FROM sub "
					   "WHERE sub MATCH ");
				param(out, TAKE_PTR(grams));
				sb_puts(s, ")");
			} else {
				sb_puts(s, "n.cjk");
			}
			sb_puts(s, " AND vcontains((SELECT body FROM docs "
				   "WHERE id = n.id), ");
			param(out, fold_key(q->text));
			sb_puts(s, "))");
		}
		sb_puts(s, ")");
		return;
	}
	struct sbuf e = {0};
	fts_atom(&e, q);
	sb_puts(s, "(n.id IN (SELECT rowid FROM fts WHERE fts MATCH ");
	param(out, sb_steal(&e));
	sb_puts(s, ")");
	if (cs) {
		/* Case matters: the text holds the term as written. */
		sb_puts(s, " AND (instr((SELECT title FROM docs WHERE id = "
			   "n.id), ");
		param(out, xstrdup(q->text));
		sb_puts(s, ") > 0");
		if (!q->title) {
			sb_puts(s, " OR instr((SELECT body FROM docs WHERE "
				   "id = n.id), ");
			param(out, xstrdup(q->text));
			sb_puts(s, ") > 0");
		}
		sb_puts(s, ")");
	}
	sb_puts(s, ")");
}

static void where(struct sql *out, const struct qnode *q, bool cs)
{
	switch (q->kind) {
	case Q_AND:
	case Q_OR:
		sb_putc(&out->s, '(');
		where(out, q->a, cs);
		sb_puts(&out->s, q->kind == Q_AND ? " AND " : " OR ");
		where(out, q->b, cs);
		sb_putc(&out->s, ')');
		break;
	case Q_NOT:
		sb_puts(&out->s, "(NOT ");
		where(out, q->a, cs);
		sb_putc(&out->s, ')');
		break;
	default:
		where_atom(out, q, cs);
	}
}

/* The ranking expression: every positive word atom, OR'ed. */
static void rank_terms(struct sbuf *b, const struct qnode *q, bool negated)
{
	if (q->kind == Q_NOT) {
		rank_terms(b, q->a, !negated);
	} else if (q->kind == Q_AND || q->kind == Q_OR) {
		rank_terms(b, q->a, negated);
		rank_terms(b, q->b, negated);
	} else if (text_atom(q) && !negated && !cjk_atom(q)) {
		if (b->len)
			sb_puts(b, " OR ");
		fts_atom(b, q);
	}
}

/* Drop atoms with nothing to search for ("&", "-"): they would match
 * everything or nothing. Returns what is left (maybe NULL). */
static struct qnode *prune(struct qnode *q)
{
	if (!q)
		return NULL;
	if (text_atom(q)) {
		if (searchable(q->text) || has_cjk(q->text, strlen(q->text)))
			return q;
		return query_free(q);
	}
	if (q->kind == Q_TAG || q->kind == Q_FOLDER)
		return q;
	q->a = prune(q->a);
	if (q->kind == Q_NOT) {
		if (q->a)
			return q;
		return query_free(q);
	}
	q->b = prune(q->b);
	if (q->a && q->b)
		return q;
	struct qnode *keep = q->a ? q->a : q->b;
	q->a = q->b = NULL;
	query_free(q);
	return keep;
}

static struct qnode *copy(const struct qnode *q)
{
	if (!q)
		return NULL;
	struct qnode *c = xcalloc(1, sizeof(*c));
	*c = *q;
	c->text = q->text ? xstrdup(q->text) : NULL;
	c->a = copy(q->a);
	c->b = copy(q->b);
	return c;
}

/* ---- plain queries ------------------------------------------------------
 * Words written side by side ("how did Rome collect taxes") ask for the
 * notes about them, not for the notes that hold every one: they are
 * joined by OR, without their stop words, and the ranking puts the notes
 * that match more of them first. Written operators keep their meaning.
 */

static bool is_word(const struct qnode *q)
{
	return q->kind == Q_WORD && !q->prefix;
}

/* The words of q's text atoms, space-separated, lower case. */
static void query_words(const struct qnode *q, struct sbuf *b)
{
	if (!q)
		return;
	if (text_atom(q)) {
		_cleanup_free_ char *f = fold_key(q->text);
		sb_printf(b, " %s", f);
	}
	query_words(q->a, b);
	query_words(q->b, b);
}

/* Languages of a query whose stop words a plain query drops: those with
 * the most stop words among its words; 0 when it has none. */
static unsigned query_stop_langs(const struct qnode *q)
{
	struct sbuf b = {0};
	query_words(q, &b);
	unsigned count[LANG_COUNT] = {0}, best = 0;
	for (const char *p = b.s ? b.s : ""; *p;) {
		while (*p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ' ')
			e++;
		unsigned m = stem_stopword(p, (size_t)(e - p));
		for (int l = 0; l < LANG_COUNT; l++)
			if ((m >> l) & 1 && ++count[l] > best)
				best = count[l];
		p = e;
	}
	sb_free(&b);
	unsigned mask = 0;
	for (int l = 0; best && l < LANG_COUNT; l++)
		if (count[l] == best)
			mask |= 1u << l;
	return mask;
}

/* The languages of a query's stems: the one its stop words name, else
 * all of them. */
static unsigned query_stem_langs(unsigned stop)
{
	unsigned latin = stop & LANG_LATIN;
	if (latin && !(latin & (latin - 1)))
		return latin | 1u << LANG_RU;
	return LANG_ALL;
}

static bool all_cjk(const char *t, size_t *ret_chars)
{
	size_t n = strlen(t), chars = 0;
	for (size_t i = 0; i < n;) {
		int32_t c;
		int l = u8_decode(t + i, n - i, &c);
		if (l < 0 || !tokenizer_is_cjk(c))
			return false;
		chars++;
		i += (size_t)l;
	}
	*ret_chars = chars;
	return chars > 0;
}

static struct qnode *word_node(const struct qnode *like, char *text)
{
	struct qnode *w = xcalloc(1, sizeof(*w));
	w->kind = Q_WORD;
	w->text = text;
	w->title = like->title;
	w->pos = like->pos;
	return w;
}

static struct qnode *join(enum qkind k, struct qnode *a, struct qnode *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	struct qnode *q = xcalloc(1, sizeof(*q));
	q->kind = k;
	q->a = a;
	q->b = b;
	return q;
}

/* The parts of an AND chain; *explicit_ when an AND was written. */
static void and_parts(struct qnode *q, struct ptrvec *out, bool *explicit_)
{
	if (q->kind == Q_AND) {
		*explicit_ |= !q->implicit;
		and_parts(q->a, out, explicit_);
		and_parts(q->b, out, explicit_);
		q->a = q->b = NULL;
		query_free(q);
	} else {
		pv_push(out, q);
	}
}

static struct qnode *relax(struct qnode *q, unsigned stop);

/* Text atoms side by side: any of them. A run of CJK characters (a
 * sentence: no spaces) is its character pairs, each one a word. */
static struct qnode *any_of(struct ptrvec *atoms, unsigned stop)
{
	struct ptrvec words = {0};
	for (size_t i = 0; i < atoms->n; i++) {
		struct qnode *a = atoms->v[i];
		size_t chars;
		if (!is_word(a) || !all_cjk(a->text, &chars) || chars < 3) {
			pv_push(&words, a);
			continue;
		}
		const char *t = a->text;
		for (size_t k = 0; k + 1 < chars; k++) {
			int32_t c;
			int l1 = u8_decode(t, strlen(t), &c);
			int l2 = u8_decode(t + l1, strlen(t + l1), &c);
			pv_push(&words,
				word_node(a, xstrndup(t, (size_t)(l1 + l2))));
			t += l1;
		}
		query_free(a);
	}
	/* Each word once. */
	size_t u = 0;
	for (size_t i = 0; i < words.n; i++) {
		struct qnode *a = words.v[i];
		bool dup = false;
		for (size_t j = 0; j < u && !dup; j++) {
			const struct qnode *o = words.v[j];
			dup = o->kind == a->kind && o->title == a->title &&
			      o->prefix == a->prefix &&
			      !strcmp(o->text, a->text);
		}
		if (dup)
			query_free(a);
		else
			words.v[u++] = a;
	}
	words.n = u;
	/* Without stop words, unless that leaves nothing. */
	size_t kept = 0;
	for (size_t i = 0; i < words.n; i++) {
		struct qnode *a = words.v[i];
		_cleanup_free_ char *f = fold_key(a->text);
		if (!is_word(a) || !(stem_stopword(f, strlen(f)) & stop))
			kept++;
	}
	struct qnode *out = NULL;
	for (size_t i = 0; i < words.n; i++) {
		struct qnode *a = words.v[i];
		_cleanup_free_ char *f = fold_key(a->text);
		if (kept && is_word(a) && stem_stopword(f, strlen(f)) & stop)
			query_free(a);
		else
			out = join(Q_OR, out, a);
	}
	pv_free(&words);
	return out;
}

/* q as a plain query: side-by-side text atoms OR'ed (see above). */
static struct qnode *relax(struct qnode *q, unsigned stop)
{
	if (!q)
		return NULL;
	if (q->kind == Q_OR) {
		q->a = relax(q->a, stop);
		q->b = relax(q->b, stop);
		return q;
	}
	if (q->kind != Q_AND && !text_atom(q))
		return q;
	struct ptrvec parts = {0}, atoms = {0};
	bool explicit_ = false;
	and_parts(q, &parts, &explicit_);
	struct qnode *rest = NULL;
	for (size_t i = 0; i < parts.n; i++) {
		struct qnode *p = parts.v[i];
		if (!explicit_ && text_atom(p))
			pv_push(&atoms, p);
		else
			rest = join(Q_AND, rest,
				    text_atom(p) ? p : relax(p, stop));
	}
	pv_free(&parts);
	struct qnode *any = atoms.n ? any_of(&atoms, stop) : NULL;
	pv_free(&atoms);
	return join(Q_AND, any, rest);
}

/* ---- typos ---------------------------------------------------------------
 * A word of the query that no note has is likely mistyped: it is searched
 * as the words of the index one edit away from it (a letter changed,
 * added, dropped, or two swapped), the most frequent first.
 */

/* Words this short, and rarer, are left as they are. */
#define TYPO_MIN 4
#define TYPO_ALTERNATIVES 3

static bool word_found(sqlite3 *db, const struct qnode *q)
{
	struct sbuf e = {0};
	fts_atom(&e, q);
	sqlite3_stmt *st;
	bool found = true;
	if (sqlite3_prepare_v2(db,
			       "SELECT 1 FROM fts WHERE fts MATCH ?1 LIMIT 1",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, e.s, -1, SQLITE_STATIC);
		found = sqlite3_step(st) != SQLITE_DONE;
		sqlite3_finalize(st);
	}
	sb_free(&e);
	return found;
}

struct alt {
	char *term;
	int64_t docs;
};

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* c, if it starts with w's first or second letter and is not w. */
static void edit_keep(struct hmap *seen, const char *c, const char *w)
{
	if ((c[0] == w[0] || c[0] == w[1]) && strcmp(c, w) != 0)
		hmap_put(seen, c, NULL);
}

/* The words one edit away from w (a letter dropped, two swapped, one
 * changed or added) that start with its first or second letter, each
 * once, in order. */
static struct ptrvec edits(const char *w)
{
	size_t wl = strlen(w);
	struct hmap *seen = hmap_new();
	char *c = xmalloc(wl + 2);
	for (size_t i = 0; i < wl; i++) {
		memcpy(c, w, i);
		strcpy(c + i, w + i + 1);
		edit_keep(seen, c, w);
		if (i + 1 < wl) {
			strcpy(c, w);
			c[i] = w[i + 1];
			c[i + 1] = w[i];
			edit_keep(seen, c, w);
		}
	}
	for (size_t i = 0; i <= wl; i++) {
		for (char l = 'a'; l <= 'z'; l++) {
			if (i < wl) {
				strcpy(c, w);
				c[i] = l;
				edit_keep(seen, c, w);
			}
			memcpy(c, w, i);
			c[i] = l;
			strcpy(c + i + 1, w + i);
			edit_keep(seen, c, w);
		}
	}
	free(c);
	struct ptrvec out = {0};
	size_t it = 0;
	const char *key;
	while (hmap_next(seen, &it, &key, NULL))
		pv_push(&out, xstrdup(key));
	hmap_free(seen);
	pv_sort(&out, cmp_str_ptr);
	return out;
}

/* The index's words one edit away from w (lower case ASCII), from
 * those that start with its first or second letter, the most frequent
 * first: each candidate looked up (a few hundred lookups of one term
 * each), not the index's words read (every word with that first letter
 * and its counts: tens of milliseconds). */
static size_t alternatives(sqlite3 *db, const char *w, struct alt *out)
{
	size_t n = 0;
	sqlite3_stmt *st;
	if (sqlite3_exec(db,
			 "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING"
			 " fts5vocab(main, fts, row)",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT doc FROM temp.vocab WHERE term = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	struct ptrvec cand = edits(w);
	for (size_t i = 0; i < cand.n; i++) {
		const char *t = cand.v[i];
		sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
		int64_t d = sqlite3_step(st) == SQLITE_ROW
				    ? sqlite3_column_int64(st, 0)
				    : 0;
		sqlite3_reset(st);
		if (d <= 0)
			continue;
		/* Keep the most frequent ones. */
		size_t at = n;
		while (at > 0 && out[at - 1].docs < d)
			at--;
		if (at >= TYPO_ALTERNATIVES)
			continue;
		if (n == TYPO_ALTERNATIVES)
			free(out[--n].term);
		memmove(out + at + 1, out + at, (n - at) * sizeof(*out));
		out[at] = (struct alt){xstrdup(t), d};
		n++;
	}
	for (size_t i = 0; i < cand.n; i++)
		free(cand.v[i]);
	pv_free(&cand);
	sqlite3_finalize(st);
	return n;
}

static bool ascii_word(const char *t)
{
	for (; *t; t++)
		if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z')))
			return false;
	return true;
}

/* q with its words that no note has replaced by their alternatives (not
 * under a NOT: "-wrod" excludes nothing either way). */
static void fix_typos(sqlite3 *db, struct qnode *q)
{
	if (q->kind == Q_AND || q->kind == Q_OR) {
		fix_typos(db, q->a);
		fix_typos(db, q->b);
		return;
	}
	if (!is_word(q) || strlen(q->text) < TYPO_MIN || !ascii_word(q->text) ||
	    word_found(db, q))
		return;
	_cleanup_free_ char *w = fold_key(q->text);
	struct alt alt[TYPO_ALTERNATIVES];
	size_t n = alternatives(db, w, alt);
	if (!n)
		return;
	struct qnode *any = NULL;
	for (size_t i = 0; i < n; i++)
		any = join(Q_OR, any, word_node(q, alt[i].term));
	/* The node becomes the alternatives, in place. */
	free(q->text);
	*q = *any;
	free(any);
}

static void conjuncts(const struct qnode *q, struct ptrvec *out)
{
	if (q->kind == Q_AND) {
		conjuncts(q->a, out);
		conjuncts(q->b, out);
	} else {
		pv_push(out, (void *)q);
	}
}

static int search_error(struct store *s, sqlite3 *db, char **ret_msg)
{
	int code = sqlite3_errcode(db);
	if (code == SQLITE_INTERRUPT) {
		*ret_msg = xstrdup("Cancelled");
		return -ECANCELED;
	}
	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
		atomic_store(&s->failed, true);
		*ret_msg =
			xstrdup("The search index is damaged; it is being "
				"rebuilt from the vault. Try again shortly.");
	} else {
		*ret_msg = xasprintf("Search failed: %s", sqlite3_errmsg(db));
	}
	return -EIO;
}

/* The first place in text where one of the query's words (folded) is;
 * a fragment around it with the word marked. */
static char *marked_fragment(const char *text, const char *word)
{
	_cleanup_free_ char *fw = fold_key(word);
	size_t tl = strlen(text), wl = strlen(word);
	const char *hit = NULL;
	size_t hl = wl;
	/* Scan character starts; compare the folded window. */
	for (size_t i = 0; i < tl && !hit; i++) {
		if (((unsigned char)text[i] & 0xc0) == 0x80)
			continue;
		size_t w = wl <= tl - i ? wl : tl - i;
		_cleanup_free_ char *f = fold_key_n(text + i, w);
		if (strcmp(f, fw) == 0) {
			hit = text + i;
			hl = w;
		}
	}
	if (!hit)
		return NULL;
	size_t start = (size_t)(hit - text), end = start + hl;
	size_t from = start > 40 ? start - 40 : 0;
	size_t to = end + 80 < tl ? end + 80 : tl;
	while (from > 0 && ((unsigned char)text[from] & 0xc0) == 0x80)
		from--;
	while (to < tl && ((unsigned char)text[to] & 0xc0) == 0x80)
		to++;
	struct sbuf b = {0};
	if (from)
		sb_puts(&b, "\xe2\x80\xa6");
	sb_add(&b, text + from, start - from);
	sb_puts(&b, "**");
	sb_add(&b, hit, hl);
	sb_puts(&b, "**");
	sb_add(&b, text + end, to - end);
	if (to < tl)
		sb_puts(&b, "\xe2\x80\xa6");
	return sb_steal(&b);
}

static void first_cjk_word(const struct qnode *q, bool negated,
			   const char **ret)
{
	if (*ret || !q)
		return;
	if (q->kind == Q_NOT)
		first_cjk_word(q->a, !negated, ret);
	else if (q->kind == Q_AND || q->kind == Q_OR) {
		first_cjk_word(q->a, negated, ret);
		first_cjk_word(q->b, negated, ret);
	} else if (!negated && cjk_atom(q) && !q->title) {
		*ret = q->text;
	}
}

/* Whitespace runs as one space, for a one-line snippet; without the
 * marks of headings and links, which cost bytes and say little. */
static char *one_line(const char *s)
{
	struct sbuf b = {0};
	bool space = false, line_start = true;
	for (const char *p = s; *p; p++) {
		if (*p == '\n' || *p == '\r' || *p == '\t' || *p == ' ') {
			space = b.len > 0;
			line_start |= *p == '\n';
			continue;
		}
		if (line_start && *p == '#') {
			const char *e = p;
			while (*e == '#')
				e++;
			if (*e == ' ') {
				p = e;
				continue;
			}
		}
		line_start = false;
		if ((p[0] == '[' && p[1] == '[') ||
		    (p[0] == ']' && p[1] == ']')) {
			p++;
			continue;
		}
		if (space)
			sb_putc(&b, ' ');
		space = false;
		sb_putc(&b, *p);
	}
	return b.s ? sb_steal(&b) : xstrdup("");
}

/* The snippet of a hit from its text's start (no hit in the body), or
 * around a CJK substring. */
static char *snippet_head(sqlite3 *db, const char *cjk, int64_t id)
{
	sqlite3_stmt *st;
	char *r = NULL;
	if (cjk && sqlite3_prepare_v2(db, "SELECT body FROM docs WHERE id = ?",
				      -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) == SQLITE_ROW &&
		    sqlite3_column_text(st, 0))
			r = marked_fragment(
				(const char *)sqlite3_column_text(st, 0), cjk);
		sqlite3_finalize(st);
	}
	struct docz_part part;
	sqlite3_blob *b = NULL;
	if (!r && docz_read(db, "docz", "body", id, 0, &b, &part) == 0) {
		/* The note's start: about 80 characters. */
		const char *body = part.text;
		size_t l = (size_t)part.len, keep = 0, nc = 0;
		while (keep < l && nc < 80)
			nc += ((unsigned char)body[++keep] & 0xc0) != 0x80;
		r = xasprintf("%.*s%s", (int)keep, body,
			      keep < l || part.more ? "\xe2\x80\xa6" : "");
		free(part.text);
	}
	sqlite3_blob_close(b);
	return r;
}

/*
 * The hits' snippets, one line each: those the ranked query made, else
 * around the words of match (a statement prepared once for all hits),
 * else from the start of the text.
 */
static void snippets(sqlite3 *db, struct ptrvec *hits, const char *match,
		     const char *cjk)
{
	sqlite3_stmt *st = NULL;
	if (match &&
	    sqlite3_prepare_v2(db,
			       "SELECT vsnippet(fts, 1, 'docz', 'body')"
			       " FROM fts WHERE fts MATCH ?1 AND"
			       " rowid = ?2",
			       -1, &st, NULL) != SQLITE_OK)
		st = NULL;
	if (st)
		sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	for (size_t i = 0; i < hits->n; i++) {
		struct store_hit *h = hits->v[i];
		int64_t id = h->line;
		h->line = 0;
		if (!h->snippet && st) {
			sqlite3_bind_int64(st, 2, id);
			const char *t =
				sqlite3_step(st) == SQLITE_ROW
					? (const char *)sqlite3_column_text(st,
									    0)
					: NULL;
			if (t && *t)
				h->snippet = xstrdup(t);
			sqlite3_reset(st);
		}
		if (h->snippet && !*h->snippet) {
			free(h->snippet);
			h->snippet = NULL;
		}
		char *r = h->snippet ? h->snippet : snippet_head(db, cjk, id);
		h->snippet = one_line(r ? r : "");
		free(r);
	}
	sqlite3_finalize(st);
}

/* The ranked rows: path, score, id, and the snippet if the query made
 * one (an empty one when the note's body has no hit). */
static int collect(struct store *s, sqlite3 *db, sqlite3_stmt *st,
		   struct ptrvec *hits, char **ret_msg)
{
	int r;
	bool snip = sqlite3_column_count(st) > 3;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_hit *h = xcalloc(1, sizeof(*h));
		h->path = xstrdup((const char *)sqlite3_column_text(st, 0));
		h->score = sqlite3_column_double(st, 1);
		/* The id rides in line until the snippet is made. */
		h->line = (int)sqlite3_column_int64(st, 2);
		if (snip) {
			const char *t =
				(const char *)sqlite3_column_text(st, 3);
			h->snippet = xstrdup(t ? t : "");
		}
		pv_push(hits, h);
	}
	return r == SQLITE_DONE ? 0 : search_error(s, db, ret_msg);
}

static size_t count_rows(struct store *s, sqlite3 *db, const char *sql,
			 const char *match, const struct sql *w, int *ret_r,
			 char **ret_msg)
{
	sqlite3_stmt *st;
	size_t n = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		*ret_r = search_error(s, db, ret_msg);
		return 0;
	}
	if (match)
		sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	bind_params(st, w);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = (size_t)sqlite3_column_int64(st, 0);
	else
		*ret_r = search_error(s, db, ret_msg);
	sqlite3_finalize(st);
	return n;
}

static void hand_over(struct ptrvec *hits, struct store_hit **ret,
		      size_t *ret_n)
{
	struct store_hit *arr = xcalloc(hits->n + 1, sizeof(*arr));
	for (size_t i = 0; i < hits->n; i++) {
		arr[i] = *(struct store_hit *)hits->v[i];
		free(hits->v[i]);
	}
	*ret = arr;
	*ret_n = hits->n;
	pv_free(hits);
}

static void drop_hits(struct ptrvec *hits)
{
	for (size_t i = 0; i < hits->n; i++) {
		struct store_hit *h = hits->v[i];
		free(h->path);
		free(h->snippet);
		free(h);
	}
	pv_free(hits);
}

/* ---- top k without ranking every hit ---------------------------------------
 * A plain query's words joined by OR (MaxScore): BM25 gives a word at most
 * idf * (k1 + 1) however often it occurs, so a note that has none of the
 * words that can score the most cannot be among the first k once the
 * other words' best scores add up to less than the k-th score found
 * among the notes that have one. The ranked query then reads only those
 * notes (the words that score little, often the commonest, are not
 * iterated) and scores them on every word, with the documents counts it
 * is given; the page is the same as ranking every hit.
 */

/* BM25's k1 + 1 (ftsaux.c), and a margin for rounding. */
#define SCORE_BOUND 2.2
#define BOUND_MARGIN 1e-9

struct prune {
	size_t n, m;   /* words; the first m (by bound) drive */
	char **expr;   /* FTS5 expression of each word */
	int64_t *df;   /* notes with it */
	double *bound; /* its best score */
	size_t *order; /* words by bound, highest first */
	char *all;     /* every word OR'ed */
	char *rank;    /* the rank function, given the counts */
	char *match;   /* the current plan's expression */
};

/* The words of an OR chain of plain words and phrases (not prefixes,
 * fields or CJK); false for any other query. */
static bool or_words(const struct qnode *q, struct ptrvec *out)
{
	if (q->kind == Q_OR)
		return or_words(q->a, out) && or_words(q->b, out);
	if (!text_atom(q) || q->prefix || q->title || cjk_atom(q))
		return false;
	pv_push(out, (void *)q);
	return true;
}

static int64_t count_of(sqlite3 *db, const char *sql, const char *match)
{
	sqlite3_stmt *st;
	int64_t n = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (match)
		sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static void prune_free(struct prune *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->expr[i]);
	free(p->expr);
	free(p->df);
	free(p->bound);
	free(p->order);
	free(p->all);
	free(p->rank);
	free(p->match);
	memset(p, 0, sizeof(*p));
}

static int cmp_bound(const void *a, const void *b, void *ud)
{
	const double *bound = ud;
	double x = bound[*(const size_t *)a], y = bound[*(const size_t *)b];
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Cached counts hold for one generation, and only the most recent ones
 * are kept. */
#define DF_CACHE_MAX 4096

/* The notes that match expr, counted or from the cache, for a search
 * that began at generation gen; -1 on error. */
static int64_t word_count(struct store *s, sqlite3 *db, const char *expr,
			  uint64_t gen)
{
	pthread_mutex_lock(&s->dfmu);
	void *v = s->dfgen == gen ? hmap_get(s->df, expr) : NULL;
	pthread_mutex_unlock(&s->dfmu);
	if (v)
		return (int64_t)(intptr_t)v - 1;
	int64_t n = count_of(db, "SELECT count(*) FROM fts WHERE fts MATCH ?1",
			     expr);
	/* A write committed meanwhile: the count may be of before it. */
	if (n < 0 || atomic_load(&s->gen) != gen)
		return n;
	pthread_mutex_lock(&s->dfmu);
	if (s->dfgen != gen || hmap_size(s->df) >= DF_CACHE_MAX) {
		hmap_free(s->df);
		s->df = hmap_new();
		s->dfgen = gen;
	}
	hmap_put(s->df, expr, (void *)(intptr_t)(n + 1));
	pthread_mutex_unlock(&s->dfmu);
	return n;
}

/* The words of q and their counts; false when q is not such a query or
 * a count fails. */
static bool prune_init(struct store *s, sqlite3 *db, const struct qnode *q,
		       uint64_t gen, struct prune *p)
{
	struct ptrvec words = {0};
	memset(p, 0, sizeof(*p));
	int64_t rows = count_of(db, "SELECT count(*) FROM notes", NULL);
	if (!or_words(q, &words) || words.n < 2 || rows < 0) {
		pv_free(&words);
		return false;
	}
	p->n = words.n;
	p->expr = xcalloc(p->n, sizeof(*p->expr));
	p->df = xcalloc(p->n, sizeof(*p->df));
	p->bound = xcalloc(p->n, sizeof(*p->bound));
	p->order = xcalloc(p->n, sizeof(*p->order));
	struct sbuf all = {0}, rank = {0};
	sb_puts(&rank, "vrank(10.0, 1.0");
	bool ok = true;
	for (size_t i = 0; i < p->n && ok; i++) {
		struct sbuf e = {0};
		fts_atom(&e, words.v[i]);
		p->expr[i] = sb_steal(&e);
		p->df[i] = word_count(s, db, p->expr[i], gen);
		ok = p->df[i] >= 0;
		double idf = log(((double)rows - (double)p->df[i] + 0.5) /
				 ((double)p->df[i] + 0.5));
		p->bound[i] = (idf > 1e-6 ? idf : 1e-6) * SCORE_BOUND;
		p->order[i] = i;
		sb_printf(&all, "%s%s", i ? " OR " : "(", p->expr[i]);
		sb_printf(&rank, ", %lld", (long long)p->df[i]);
	}
	sb_puts(&all, ")");
	sb_puts(&rank, ")");
	p->all = sb_steal(&all);
	p->rank = sb_steal(&rank);
	pv_free(&words);
	qsort_r(p->order, p->n, sizeof(*p->order), cmp_bound, p->bound);
	p->m = 0;
	if (!ok)
		prune_free(p);
	return ok;
}

/* The next plan: one more word drives (all of them: every hit ranked);
 * false when there is none. */
static bool prune_next(struct prune *p)
{
	if (p->m >= p->n)
		return false;
	p->m++;
	free(p->match);
	if (p->m == p->n) {
		p->match = xstrdup(p->all);
		return true;
	}
	struct sbuf b = {0};
	sb_printf(&b, "%s AND (", p->all);
	for (size_t i = 0; i < p->m; i++)
		sb_printf(&b, "%s%s", i ? " OR " : "", p->expr[p->order[i]]);
	sb_puts(&b, ")");
	p->match = sb_steal(&b);
	return true;
}

/* Whether the page found under the current plan is the page of every
 * hit: the notes left out score below its need-th (last) score. */
static bool prune_exact(const struct prune *p, const struct ptrvec *hits,
			size_t need_on_page)
{
	if (p->m >= p->n)
		return true;
	if (hits->n < need_on_page || !hits->n)
		return false;
	double rest = 0;
	for (size_t i = p->m; i < p->n; i++)
		rest += p->bound[p->order[i]];
	const struct store_hit *last = hits->v[hits->n - 1];
	return rest * (1 + BOUND_MARGIN) < last->score;
}

/* The page of the ranked query sel (driver as ?1); for a words-only
 * query q (else NULL), without ranking every hit when it can (above).
 * gen: the generation the search began at. */
static int ranked(struct store *s, sqlite3 *db, const char *sel,
		  const char *driver, const struct sql *w,
		  const struct qnode *q, uint64_t gen, size_t offset,
		  size_t limit, struct ptrvec *hits, char **ret_msg)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sel, -1, &st, NULL) != SQLITE_OK)
		return search_error(s, db, ret_msg);
	struct prune p;
	bool pruning = q && prune_init(s, db, q, gen, &p) && prune_next(&p);
	int r;
	for (;;) {
		const char *m = pruning ? p.match : driver;
		if (m)
			sqlite3_bind_text(st, 1, m, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)offset);
		bind_params(st, w);
		if (q) {
			sqlite3_bind_text(st, 4, pruning ? p.rank : RANK, -1,
					  SQLITE_STATIC);
			sqlite3_bind_int64(st, 5,
					   pruning ? (sqlite3_int64)p.n
						   : INT32_MAX);
		}
		r = collect(s, db, st, hits, ret_msg);
		if (r < 0 || !pruning || prune_exact(&p, hits, limit) ||
		    !prune_next(&p))
			break;
		drop_hits(hits);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (pruning)
		prune_free(&p);
	return r;
}

int store_search(struct store *s, const struct qnode *query, bool cs,
		 size_t offset, size_t limit, struct store_hit **ret,
		 size_t *ret_n, size_t *ret_total, char **ret_msg)
{
	struct qnode *q = prune(copy(query));
	if (!q) {
		*ret_msg = xstrdup("The query has no words to search for");
		return -EINVAL;
	}
	unsigned stop = query_stop_langs(q);
	query_langs = query_stem_langs(stop);
	q = relax(q, stop);
	if (!cs) {
		sqlite3 *tdb = acquire(s);
		if (tdb) {
			fix_typos(tdb, q);
			release(s, tdb);
		}
	}
	/*
	 * Plan: the top-level AND's parts that FTS5 can evaluate (words,
	 * phrases, AND/OR of them; negated ones too) become one MATCH
	 * expression that drives the query and ranks it; the rest (tags,
	 * folders, CJK substrings, OR across kinds) are SQL conditions.
	 * Without a positive FTS part, the notes table drives and the
	 * words that are there still rank through a LEFT JOIN.
	 */
	struct ptrvec parts = {0};
	conjuncts(q, &parts);
	struct sbuf pos = {0}, neg = {0};
	struct sql w = {.sub_ok = store_sub_ready(s)};
	for (size_t i = 0; i < parts.n && !cs; i++)
		w.few |= ftsable(parts.v[i]);
	for (size_t i = 0; i < parts.n; i++) {
		const struct qnode *c = parts.v[i];
		bool to_fts = false;
		if (ftsable(c)) {
			if (pos.len)
				sb_puts(&pos, " AND ");
			fts_expr(&pos, c);
			to_fts = !cs;
		} else if (c->kind == Q_NOT && ftsable(c->a) && !cs) {
			sb_puts(&neg, " NOT ");
			fts_expr(&neg, c->a);
			to_fts = true;
		}
		if (!to_fts) {
			sb_puts(&w.s, w.s.len ? " AND " : "");
			where(&w, c, cs);
		}
	}
	pv_free(&parts);
	_cleanup_free_ char *match = NULL;
	if (pos.len) {
		match = neg.len ? xasprintf("(%s)%s", pos.s, neg.s)
				: xstrdup(pos.s);
	} else {
		/* Negated words without a positive one: SQL conditions. */
		struct ptrvec again = {0};
		conjuncts(q, &again);
		sql_free(&w);
		memset(&w, 0, sizeof(w));
		w.sub_ok = store_sub_ready(s);
		for (size_t i = 0; i < again.n; i++) {
			sb_puts(&w.s, w.s.len ? " AND " : "");
			where(&w, again.v[i], cs);
		}
		pv_free(&again);
	}
	sb_free(&pos);
	sb_free(&neg);
	struct sbuf rank = {0};
	rank_terms(&rank, q, false);
	const char *cjk = NULL;
	first_cjk_word(q, false, &cjk);

	_cleanup_free_ char *sel = NULL, *cnt = NULL;
	const char *cond = w.s.len ? w.s.s : "1";
	if (match && !w.s.len) {
		/* Words only: FTS5 ranks and keeps the page on its own, and
		 * the notes table and the snippets are read for that page
		 * alone; the total is counted, not ranked. */
		sel = xstrdup("SELECT n.path, -r.rank, n.id, r.snip FROM"
			      " (SELECT rowid, rank, vsnippet(fts, 1, 'docz',"
			      " 'body', ?5) AS snip FROM fts WHERE fts MATCH"
			      " ?1 AND rank MATCH ?4 ORDER BY rank"
			      " LIMIT ?2 OFFSET ?3) r JOIN notes n ON n.id ="
			      " r.rowid ORDER BY r.rank, n.name, n.path");
		cnt = xstrdup("SELECT count(*) FROM fts WHERE fts MATCH ?1");
	} else if (match) {
		sel = xasprintf(
			"SELECT n.path, -fts.rank, n.id FROM fts JOIN notes"
			" n ON n.id = fts.rowid WHERE fts MATCH ?1 AND"
			" fts.rank MATCH '" RANK "' AND"
			" (%s) ORDER BY fts.rank, n.name, n.path"
			" LIMIT ?2 OFFSET ?3",
			cond);
		cnt = xasprintf(
			"SELECT count(*) FROM fts JOIN notes n ON n.id ="
			" fts.rowid WHERE fts MATCH ?1 AND (%s)",
			cond);
	} else if (rank.len) {
		sel = xasprintf(
			"SELECT n.path, coalesce(-r.rank, 0) AS score,"
			" n.id FROM notes n LEFT JOIN (SELECT rowid, rank"
			" FROM fts WHERE fts MATCH ?1 AND rank MATCH"
			" '" RANK "') r ON r.rowid = n.id"
			" WHERE %s ORDER BY score DESC, n.name, n.path"
			" LIMIT ?2 OFFSET ?3",
			cond);
		cnt = xasprintf("SELECT count(*) FROM notes n WHERE ?1 NOTNULL"
				" AND %s",
				cond);
	} else {
		sel = xasprintf("SELECT n.path, 0, n.id FROM notes n WHERE"
				" ?1 ISNULL AND %s ORDER BY n.name, n.path"
				" LIMIT ?2 OFFSET ?3",
				cond);
		cnt = xasprintf("SELECT count(*) FROM notes n WHERE ?1 ISNULL"
				" AND %s",
				cond);
	}
	const char *driver = match ? match : rank.len ? rank.s : NULL;

	int r = 0;
	struct ptrvec hits = {0};
	size_t total = 0;
	uint64_t gen = atomic_load(&s->gen);
	sqlite3 *db = acquire(s);
	if (!db) {
		*ret_msg = xstrdup("Full-text search: cannot open the index");
		r = -EIO;
		goto out;
	}
	/* One snapshot for the total, the words' counts and the page (the
	 * bound that spares ranking every hit relies on it). */
	bool txn = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
	total = count_rows(s, db, cnt, driver, &w, &r, ret_msg);
	if (r == 0)
		r = ranked(s, db, sel, driver, &w, match && !w.s.len ? q : NULL,
			   gen, offset, limit, &hits, ret_msg);
	if (r == 0)
		snippets(db, &hits, rank.len ? rank.s : NULL, cjk);
	if (txn && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
	if (db)
		release(s, db);
	if (r == 0) {
		hand_over(&hits, ret, ret_n);
		*ret_total = total;
	} else {
		drop_hits(&hits);
	}
	sb_free(&rank);
	sql_free(&w);
	query_free(q);
	return r;
}

int store_search_text(struct store *s, const char *query, size_t offset,
		      size_t limit, struct store_hit **ret, size_t *ret_n,
		      size_t *ret_total, char **ret_msg)
{
	_cleanup_free_ char *fq = fold_key(query);
	_cleanup_free_ char *grams =
		store_sub_ready(s) ? trigrams(query) : NULL;
	/* Three characters or more: the trigram index finds the candidates;
	 * shorter ones (or while the trigram index is still being filled)
	 * read every note's text (from the index, not the vault). The
	 * folded text decides. */
	const char *from =
		grams ? "FROM sub JOIN notes n ON n.id = sub.rowid"
			" JOIN docs d ON d.id = n.id WHERE sub MATCH ?1"
			" AND vcontains(d.body, ?4)"
		      : "FROM notes n JOIN docs d ON d.id = n.id"
			" WHERE ?1 ISNULL AND vcontains(d.body, ?4)";
	_cleanup_free_ char *csql = xasprintf("SELECT count(*) %s", from);
	_cleanup_free_ char *ssql =
		xasprintf("SELECT n.path, d.body, n.body_line %s ORDER BY"
			  " n.name, n.path LIMIT ?2 OFFSET ?3",
			  from);
	struct sql w = {0};
	pv_push(&w.params, xstrdup(fq));
	sqlite3 *db = acquire(s);
	if (!db) {
		sql_free(&w);
		*ret_msg = xstrdup("Text search: cannot open the index");
		return -EIO;
	}
	int r = 0;
	struct ptrvec hits = {0};
	size_t total = count_rows(s, db, csql, grams, &w, &r, ret_msg);
	sqlite3_stmt *st = NULL;
	if (r == 0 && sqlite3_prepare_v2(db, ssql, -1, &st, NULL) != SQLITE_OK)
		r = search_error(s, db, ret_msg);
	if (r == 0) {
		if (grams)
			sqlite3_bind_text(st, 1, grams, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)offset);
		bind_params(st, &w);
		int sr;
		while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
			struct store_hit *h = xcalloc(1, sizeof(*h));
			h->path = xstrdup(
				(const char *)sqlite3_column_text(st, 0));
			const char *body =
				(const char *)sqlite3_column_text(st, 1);
			int at = fold_find_line(body ? body : "", fq,
						&h->snippet);
			h->line = at < 0 ? 0 : at;
			if (at < 0)
				h->snippet = xstrdup("");
			h->line += sqlite3_column_int(st, 2);
			pv_push(&hits, h);
		}
		if (sr != SQLITE_DONE)
			r = search_error(s, db, ret_msg);
	}
	sqlite3_finalize(st);
	release(s, db);
	sql_free(&w);
	if (r < 0) {
		drop_hits(&hits);
		return r;
	}
	hand_over(&hits, ret, ret_n);
	*ret_total = total;
	return 0;
}
