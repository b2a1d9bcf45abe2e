/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Property queries over the index: a plan (sources, then WHERE / SORT /
 * LIMIT steps in order, then columns) built from query_notes' arguments,
 * from a Dataview query (TABLE / LIST) or from an Obsidian Bases file
 * and one of its views, run against the notes held in memory. Results
 * are C structs (rows with their column values); the tools shape JSON.
 *
 * What a plan cannot express is refused when it is built, with the part
 * named (GROUP BY, FLATTEN, CALENDAR, ...), so a query never returns a
 * silently different answer.
 */
#pragma once

#include "expr.h"
#include "tasks.h"

struct pquery;

/* query_notes: where, from (DQL sources), sort ("f [asc|desc], ..."),
 * fields ("f1, f2 as x"). Any may be NULL. */
int pq_plain(const char *where, const char *from, const char *sort,
	     const char *fields, struct pquery **ret, char **ret_msg);
/* A DQL query: TABLE, LIST or TASK. */
int pq_dql(const char *text, struct pquery **ret, char **ret_msg);
/* A .base file's YAML and the view to run (NULL: the first). */
int pq_base(const char *yaml, size_t len, const char *view, struct pquery **ret,
	    char **ret_msg);
struct pquery *pq_free(struct pquery *q);

enum pq_kind {
	PQ_TABLE,
	PQ_LIST,
	PQ_TASK, /* DQL's TASK: run with pq_run_tasks() */
};
enum pq_kind pq_kind(const struct pquery *q);
/* Whether the query refers to `this` (then pq_run needs this_note). */
bool pq_uses_this(const struct pquery *q);
/* Bases: the view run, and parts of the file that do not change rows
 * (summaries) and are not computed. */
const char *pq_view_name(const struct pquery *q);
const char *pq_not_evaluated(const struct pquery *q);

struct pq_row {
	const struct qrow *row;
	struct qval *vals; /* one per column */
	struct qval group; /* Bases groupBy value (QV_NULL otherwise) */
};

struct pq_result {
	size_t ncols;
	const char *const *cols;
	bool has_group;
	size_t total; /* rows after every step */
	size_t nrows; /* rows of the page asked for */
	struct pq_row *rows;
};

struct pq_env {
	const struct index *ix;
	int rootfd;
	const struct ptypes *types;
	const struct note *this_note;
};

/*
 * Run the plan (read lock held); the page is rows [offset, offset+limit).
 * The result lives until pq_free(). -ECANCELED when cancelled.
 */
int pq_run(struct pquery *q, const struct pq_env *env, size_t offset,
	   size_t limit, struct pq_result *ret);

/*
 * list_tasks and DQL's TASK: the tasks of the notes a plan's FROM picks
 * (a plan from pq_plain(where, from, sort, NULL) or a TASK query) that
 * its WHERE keeps, in note name then line order unless it has SORT,
 * at most its LIMIT. In WHERE and SORT a task's fields
 * (status, symbol, text, description, tags, due, scheduled, start,
 * done, created, cancelled, priority, recurrence, line, completed,
 * checked) come before the note's properties. The page's tasks point
 * into the notes (read lock held while they are used).
 */
struct pq_task {
	const struct note *note;
	struct task t;
};

struct pq_task_page {
	size_t total, nrows;
	struct pq_task *rows;
};

int pq_run_tasks(struct pquery *q, const struct pq_env *env, size_t offset,
		 size_t limit, struct pq_task_page *ret);
