/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The statements a reader connection keeps: the SQL a search runs (fixed
 * texts, and the generated ones that differ only by their bound values)
 * is parsed and planned once per connection and reused, reset, by the
 * later searches on it. A kept statement is found among the connection's
 * statements by its text, which starts with a mark no other has; one
 * that the calling thread holds is never handed out twice (a connection
 * serves one thread at a time); at most KEPT_MAX are kept per connection;
 * they are finalized before the connection closes.
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

#define MARK "/*kept*/ "
#define MARK_LEN (sizeof(MARK) - 1)
#define KEPT_MAX 64
#define HELD_MAX 16

/* The kept statements the thread holds now. */
static _Thread_local sqlite3_stmt *held[HELD_MAX];
static _Thread_local size_t nheld;

static bool is_held(const sqlite3_stmt *st)
{
	for (size_t i = 0; i < nheld; i++)
		if (held[i] == st)
			return true;
	return false;
}

static bool kept(sqlite3_stmt *st)
{
	const char *t = sqlite3_sql(st);
	return t && !strncmp(t, MARK, MARK_LEN);
}

/* st, held by the thread; NULL when it cannot be (then it is finalized:
 * the caller prepares its own). */
static sqlite3_stmt *hold(sqlite3_stmt *st)
{
	if (nheld == HELD_MAX) {
		sqlite3_finalize(st);
		return NULL;
	}
	held[nheld++] = st;
	return st;
}

/* Room for one more kept statement on db: the first free one is
 * finalized when KEPT_MAX are kept. */
static void make_room(sqlite3 *db)
{
	size_t n = 0;
	sqlite3_stmt *spare = NULL;
	for (sqlite3_stmt *p = sqlite3_next_stmt(db, NULL); p;
	     p = sqlite3_next_stmt(db, p)) {
		if (!kept(p))
			continue;
		n++;
		if (!spare && !is_held(p) && !sqlite3_stmt_busy(p))
			spare = p;
	}
	if (n >= KEPT_MAX && spare)
		sqlite3_finalize(spare);
}

sqlite3_stmt *sto_stmt(sqlite3 *db, const char *sql)
{
	for (sqlite3_stmt *p = sqlite3_next_stmt(db, NULL); p;
	     p = sqlite3_next_stmt(db, p)) {
		const char *t = sqlite3_sql(p);
		if (t && !strncmp(t, MARK, MARK_LEN) &&
		    !strcmp(t + MARK_LEN, sql) && !is_held(p) &&
		    !sqlite3_stmt_busy(p))
			return hold(p);
	}
	make_room(db);
	_cleanup_free_ char *text = xasprintf(MARK "%s", sql);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v3(db, text, -1, SQLITE_PREPARE_PERSISTENT, &st,
			       NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	return hold(st);
}

void sto_stmt_done(sqlite3_stmt *st)
{
	if (!st)
		return;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	for (size_t i = 0; i < nheld; i++) {
		if (held[i] == st) {
			held[i] = held[--nheld];
			break;
		}
	}
}

bool sto_run_kept(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = sto_stmt(db, sql);
	bool ok = st && sqlite3_step(st) == SQLITE_DONE;
	sto_stmt_done(st);
	return ok;
}

void sto_close_reader(sqlite3 *db)
{
	/* Only the kept ones: the others are FTS5's own, which it
	 * finalizes itself. */
	sqlite3_stmt *p = sqlite3_next_stmt(db, NULL);
	while (p) {
		sqlite3_stmt *next = sqlite3_next_stmt(db, p);
		if (kept(p))
			sqlite3_finalize(p);
		p = next;
	}
	sqlite3_close(db);
}
