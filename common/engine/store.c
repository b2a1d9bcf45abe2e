/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The store's database (see store.h): opening it (a missing, damaged or
 * old-layout one is made anew), its schema and prepared statements, the
 * pool of read connections, the SQL functions it adds, reset, and the
 * trigram index's backfill.
 */
#include "store_int.h"
#include "docz.h"
#include "docz_dict.h"
#include "tokenizer.h"
#include "u8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
	/* The dictionary the bodies are compressed with (docz_dict.h). */
	"CREATE TABLE zdict(id INTEGER PRIMARY KEY, dict BLOB NOT NULL);"
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

static const char *const STMTS[ST_COUNT] = {
	[ST_FIND] = "SELECT id FROM notes WHERE path = ?",
	/* A note's row added, or changed in place (its id kept), as
	 * ST_FIND found it: no upsert, whose RETURNING (a trigger) and
	 * conflict clause give each row a statement journal (a tenth of a
	 * first build's writer). */
	[ST_ADD_NOTE] = "INSERT INTO notes(path, name, title, folder,"
			" mtime_ns, size, ino, body_line, cjk, data)"
			" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	[ST_SET_NOTE] = "UPDATE notes SET name = ?2, title = ?3, folder = ?4,"
			" mtime_ns = ?5, size = ?6, ino = ?7, body_line = ?8,"
			" cjk = ?9, data = ?10 WHERE id = ?11 AND path = ?1",
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

/* ---- SQL functions ------------------------------------------------------ */

bool sto_ascii_only(const char *s, size_t n)
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
	if (sto_ascii_only(q, qn) && sto_ascii_only(t, tn)) {
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
	 * commits, never consistency; stat checks at start catch up. A new
	 * database (these two do nothing to one with tables) has pages of
	 * 8 KiB: rows of the notes table (about 900 bytes) and the texts'
	 * overflow pages leave less of each page unused than in 4 KiB; and
	 * it can give back the pages a build's merges freed (trim()). */
	sqlite3_exec(
		db,
		"PRAGMA page_size = 8192; PRAGMA auto_vacuum = INCREMENTAL;"
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

sqlite3 *sto_acquire(struct store *s)
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

void sto_release(struct store *s, sqlite3 *db)
{
	pthread_mutex_lock(&s->pmu);
	if (s->npool < POOL_MAX) {
		s->pool[s->npool++] = db;
		db = NULL;
	}
	pthread_mutex_unlock(&s->pmu);
	if (db)
		sto_close_reader(db);
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

/* The texts' dictionary in db (*ret NULL: none yet); -EIO when it cannot
 * be read or used. */
static int load_dict(sqlite3 *db, struct docz_dict **ret)
{
	*ret = NULL;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT dict FROM zdict WHERE id = 1", -1,
			       &st, NULL) != SQLITE_OK)
		return -EIO;
	int r = sqlite3_step(st);
	if (r == SQLITE_ROW)
		*ret = docz_dict_new(sqlite3_column_blob(st, 0),
				     (size_t)sqlite3_column_bytes(st, 0));
	sqlite3_finalize(st);
	return r == SQLITE_DONE || *ret ? 0 : -EIO;
}

int sto_save_dict(struct store *s, uint64_t key)
{
	const struct docz_dict *d = docz_coder_dict(s->coder);
	if (!d || d->key != key)
		return -EIO;
	/* Keyed by id 1: a reset's new database gets the same one. */
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->w,
			       "INSERT OR REPLACE INTO zdict(id, dict)"
			       " VALUES(1, ?)",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_blob(st, 1, d->bytes, (int)d->n, SQLITE_STATIC);
	int r = sto_run(st);
	sqlite3_finalize(st);
	if (r == 0)
		s->dict_saved = key;
	return r;
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

/* Open the writer, rebuilding a database that cannot be used; with its
 * texts' dictionary (NULL: none yet). */
static int open_writer(const char *path, const char *root, sqlite3 **ret,
		       struct docz_dict **ret_dict, char **ret_note)
{
	sqlite3 *db = NULL;
	const char *why = NULL;
	for (int attempt = 0; attempt < 2; attempt++) {
		int r = open_conn(path, true, &db);
		why = r == SQLITE_OK ? check(db, root) : "it cannot be opened";
		if (!why && user_version(db) == 0 &&
		    create_schema(db, root) < 0)
			why = "its tables cannot be created";
		if (!why && load_dict(db, ret_dict) < 0)
			why = "its dictionary cannot be read (damaged?)";
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
		sto_close_reader(s->pool[i]);
	s->npool = 0;
	pthread_mutex_unlock(&s->pmu);
}

int store_open(const char *dir, const char *root, struct store **ret,
	       char **ret_note)
{
	*ret_note = NULL;
	_cleanup_free_ char *path = xasprintf("%s/index.sqlite", dir);
	sqlite3 *db;
	struct docz_dict *dict;
	int r = open_writer(path, root, &db, &dict, ret_note);
	if (r < 0)
		return r;
	struct store *s = xcalloc(1, sizeof(*s));
	s->path = TAKE_PTR(path);
	s->root = xstrdup(root);
	s->w = db;
	s->coder = docz_coder_new(dict);
	s->dict_saved = dict ? dict->key : 0;
	pthread_mutex_init(&s->pmu, NULL);
	pthread_mutex_init(&s->dfmu, NULL);
	s->df = hmap_new();
	sto_words_init(s);
	sto_phrases_init(s);
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
	/* The coder keeps its dictionary (made of this vault's texts): the
	 * new database is given it with the next text packed with it. */
	struct docz_dict *dict = NULL;
	s->dict_saved = 0;
	int r = open_writer(s->path, s->root, &s->w, &dict, ret_note);
	docz_dict_free(dict);
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
	sto_words_reset(s);
	atomic_fetch_add(&s->gen, 1);
	return r;
}

struct store *store_close(struct store *s)
{
	if (!s)
		return NULL;
	close_all(s);
	sto_drop_ops(s);
	free(s->ops);
	pthread_mutex_destroy(&s->pmu);
	pthread_mutex_destroy(&s->dfmu);
	hmap_free(s->df);
	sto_words_free(s);
	sto_phrases_free(s);
	docz_coder_free(s->coder);
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

/* The free pages given back, the file made shorter by them: after the
 * word index is merged and after the trigram index is filled, which
 * leave megabytes of pages free (3 MB at 100,000 notes) that later
 * writes would take a long time to use. */
static void trim(struct store *s)
{
	sqlite3_exec(s->w, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
}

/* The end of a background step's transaction: committed, or after a
 * failure (r < 0) rolled back; once its work is done, the pages it
 * freed given back. 0 or -EIO. */
static int step_end(struct store *s, int r, bool done)
{
	if (r < 0) {
		sto_write_failed(s);
		store_rollback(s);
		return -EIO;
	}
	if (store_commit(s) < 0)
		return -EIO;
	if (done)
		trim(s);
	return 0;
}

int store_fts_merge(struct store *s, uint64_t budget_ns)
{
	if (store_begin(s) < 0)
		return -EIO;
	/* A negative page count merges every segment into one, 256 pages
	 * at a time; a step that changes no row besides its own found one
	 * segment. */
	sqlite3_stmt *q = NULL;
	int r = sqlite3_prepare_v2(s->w,
				   "INSERT INTO fts(fts, rank)"
				   " VALUES('merge', -256)",
				   -1, &q, NULL) == SQLITE_OK
			? 1
			: -EIO;
	uint64_t t0 = now_ns();
	while (r == 1 && now_ns() - t0 < budget_ns) {
		int64_t before = sqlite3_total_changes64(s->w);
		if (sto_run(q) < 0)
			r = -EIO;
		else if (sqlite3_total_changes64(s->w) - before < 2)
			r = 0;
		sqlite3_reset(q);
	}
	sqlite3_finalize(q);
	/* The same notes and words: the generation stays. */
	return step_end(s, r, r == 0) < 0 ? -EIO : r;
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
			r = sto_run(t);
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
		r = sto_run(m);
	} else if (r == 0) {
		r = -EIO;
	}
	sqlite3_finalize(m);
	if (step_end(s, r, next < 0) < 0)
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
int sto_write_failed(struct store *s)
{
	int code = sqlite3_errcode(s->w);
	if (!s->error)
		s->error = xstrdup(sqlite3_errmsg(s->w));
	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB ||
	    code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_ERROR)
		atomic_store(&s->failed, true);
	return -EIO;
}
