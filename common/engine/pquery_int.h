/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the query planner (pquery*.c), not for its users: a plan's
 * sources, steps and columns, shared by the parsers that build it (DQL
 * and query_notes in pquery_dql.c, Bases in pquery_base.c) and its
 * execution (pquery.c). The interface is pquery.h.
 */
#pragma once

#include "pquery.h"

enum src_kind {
	S_ALL,
	S_TAG,
	S_FOLDER,
	S_LINKS_TO,
	S_OUTGOING,
	S_AND,
	S_OR,
	S_NOT,
};

struct source {
	enum src_kind kind;
	const char *arg;
	struct source *a, *b;
	/* S_TAG at run time: the notes with the tag or a subtag, sorted
	 * by address (from the index's tag lists, not note by note). */
	const struct note **set;
	size_t nset;
};

enum step_kind {
	ST_WHERE,
	ST_SORT,
	ST_LIMIT,
};

struct sort_key {
	struct enode *e;
	bool desc;
};

struct step {
	enum step_kind kind;
	struct enode *where;
	struct sort_key *keys;
	size_t nkeys;
	size_t limit;
};

struct pquery {
	struct qarena *ar;
	enum expr_dialect dialect;
	enum pq_kind kind;
	bool uses_this;
	bool all_files; /* Bases: every file, not only notes */
	struct source *from;
	struct step *steps;
	size_t nsteps;
	const char **col_names;
	struct enode **cols;
	size_t ncols;
	const char **fnames;
	struct enode **formulas;
	size_t nformulas;
	struct enode *group;
	bool group_desc;
	const char *view;
	const char *not_evaluated;
};

/* An empty plan in its own arena. */
struct pquery *pq_new(enum expr_dialect d);
/* Append a step, or a column named name. */
void pq_add_step(struct pquery *q, struct step s);
void pq_add_col(struct pquery *q, const char *name, struct enode *e);

/* The expression environment a run of q over pe starts from: the index,
 * the folder, the property types, q's arena and dialect, now, and `this`
 * (the row of pe->this_note, when there is one). */
struct expr_env pq_env_base(struct pquery *q, const struct pq_env *pe);

/* FROM: ready the sources to match (tag sets), then match a row. */
void pq_src_prepare(struct pquery *q, const struct index *ix, struct source *s);
bool pq_src_match(const struct pq_env *pe, const struct source *s,
		  const struct qrow *row);
