/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Expressions over notes and their properties, in three dialects that
 * share one evaluator: query_notes' predicates (EXPR_PLAIN: Dataview's
 * expressions plus infix `contains`, postfix `exists` / `missing`, and
 * comparisons with a missing value false), the Dataview query language's
 * expressions (EXPR_DQL: Dataview's ordering, null lowest) and Obsidian
 * Bases' formulas and filters (EXPR_BASES: method calls, `note.`,
 * `formula.`). Values are typed as Obsidian types them
 * (.obsidian/types.json), untyped ones inferred from the YAML.
 *
 * A function or construct the evaluator does not know is a parse error
 * naming it, never a silently wrong value. Parsing is bounded (length,
 * nesting, node count). Values live in an arena owned by the caller.
 */
#pragma once

#include "index.h"

#include <stdbool.h>
#include <stdint.h>

enum expr_dialect {
	EXPR_PLAIN,
	EXPR_DQL,
	EXPR_BASES,
};

/* Largest expression or query text, nesting depth and node count. */
#define EXPR_MAX_LEN (64u << 10)
#define EXPR_MAX_DEPTH 64
#define EXPR_MAX_NODES 20000

enum qv_type {
	QV_NULL,
	QV_BOOL,
	QV_NUM,
	QV_DUR,	 /* ms */
	QV_DATE, /* ms since 1970 of the local wall time (time: has one) */
	QV_STR,
	QV_LINK, /* s: note path when resolved, else the target */
	QV_LIST,
	QV_OBJ,	 /* s: JSON text */
	QV_FILE, /* a row's file (file.*): row */
	QV_NOTE, /* a row as a whole (this, note.*): row */
	QV_FORMULAS,
};

struct qrow;

struct qval {
	uint8_t t;
	bool time;  /* QV_DATE: has a time of day */
	uint32_t n; /* QV_STR, QV_LINK, QV_OBJ: bytes; QV_LIST: items */
	union {
		bool b;
		double num;
		int64_t ms;
		const char *s;
		struct qval *items;
		const struct qrow *row;
	};
};

/* Obsidian's property types. */
enum ptype {
	PT_NONE, /* untyped: inferred */
	PT_TEXT,
	PT_LIST,
	PT_NUMBER,
	PT_CHECKBOX,
	PT_DATE,
	PT_DATETIME,
};

/* Property types of a vault: .obsidian/types.json. */
struct ptypes;
/* Read them (none when the file is absent; -EBADMSG with *ret_msg when
 * it is broken). */
int ptypes_load(int rootfd, struct ptypes **ret, char **ret_msg);
struct ptypes *ptypes_free(struct ptypes *t);
enum ptype ptypes_get(const struct ptypes *t, const char *key);

struct qarena;
struct qarena *qarena_new(void);
struct qarena *qarena_free(struct qarena *a);
void *qarena_alloc(struct qarena *a, size_t n);
char *qarena_strndup(struct qarena *a, const char *s, size_t n);
/* Drop what was allocated since the mark. */
size_t qarena_mark(struct qarena *a);
void qarena_reset(struct qarena *a, size_t mark);

/* A row: a note, or (Bases) another file of the vault. */
struct qrow {
	const struct note *note; /* NULL for a file that is not a note */
	const char *path;
	/* An item of the note (a task), with fields of its own, or NULL. */
	const void *item;
	/* Files only: filled on first use. */
	bool statted;
	int64_t size, mtime_ns, btime;
};

struct enode;

struct expr_env {
	const struct index *ix;
	int rootfd;
	const struct ptypes *types;
	struct qarena *ar;
	enum expr_dialect dialect;
	const struct qrow *this_row; /* DQL `this`, or NULL */
	int64_t now_ms;		     /* local wall time */
	/* Bases formulas by name. */
	const char *const *formula_names;
	struct enode *const *formulas;
	size_t nformulas;
	int depth; /* formula evaluation depth */
	/* A row's item's field by name (looked up before the note's
	 * properties): true and *ret when the item has one. */
	bool (*item_field)(struct expr_env *env, const struct qrow *row,
			   const char *name, struct qval *ret);
};

/* ---- parsing ---------------------------------------------------------- */

/* Tokens, for the query parsers built on the expression parser. */
enum tok_kind {
	TK_END,
	TK_NUM,
	TK_STR,
	TK_IDENT,
	TK_LINK, /* [[target]] */
	TK_TAG,	 /* #tag */
	TK_DATE, /* 2024-01-05 or 2024-01-05T10:00 */
	TK_OP,	 /* punctuation and operators */
};

struct tok {
	enum tok_kind kind;
	const char *s; /* where it starts in the text */
	size_t len;
	char *text; /* TK_STR: unescaped; TK_IDENT, TK_LINK, TK_TAG: name */
	double num;
};

struct eparser;
struct eparser *eparser_new(const char *src, size_t len,
			    enum expr_dialect dialect, struct qarena *ar);
struct eparser *eparser_free(struct eparser *p);
/* The next token (not consumed) and consuming it. */
const struct tok *eparser_peek(struct eparser *p);
void eparser_skip(struct eparser *p);
/* True (and consumed) when the next token is keyword kw (any case). */
bool eparser_keyword(struct eparser *p, const char *kw);
/* True (and consumed) when the next token is operator op. */
bool eparser_op(struct eparser *p, const char *op);
/* One expression from here. 0, or -EINVAL with the error set. */
int eparser_expr(struct eparser *p, struct enode **ret);
/* Set the error (first one wins) and return -EINVAL. */
int eparser_fail(struct eparser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *eparser_error(const struct eparser *p);
/* Whether what was parsed refers to `this`. */
bool eparser_uses_this(const struct eparser *p);
/*
 * A Bases property id as an expression: "file.name", "note.status",
 * "formula.ppu" or a bare property name (which may hold spaces).
 * 0, or -EINVAL with *ret_msg.
 */
int expr_property(const char *id, struct qarena *ar, struct enode **ret,
		  char **ret_msg);
/* Byte offset of the next token, for messages. */
size_t eparser_offset(const struct eparser *p);

/* Parse a whole text as one expression: 0, or -EINVAL and *ret_msg. */
int expr_parse(const char *src, enum expr_dialect dialect, struct qarena *ar,
	       struct enode **ret, char **ret_msg);

/* ---- evaluation ------------------------------------------------------- */

void expr_eval(struct expr_env *env, const struct qrow *row,
	       const struct enode *e, struct qval *ret);
bool qv_truthy(const struct qval *v);
/* Order of two values (the dialect's sort order). */
int qv_cmp(const struct qval *a, const struct qval *b);
/* A value as text (strings as they are, dates ISO, lists joined). */
char *qv_to_text(const struct qval *v, struct qarena *ar);
/* "2024-01-05" or "2024-01-05T10:30:00" of a QV_DATE. */
void qv_format_date(const struct qval *v, char out[40]);
/* "3 days", "1 hours, 30 minutes" of a QV_DUR. */
void qv_format_dur(int64_t ms, char out[96]);
/* Parse an ISO date (2024-1-5, 2024-01-05, 2024-01-05T10:30[:00][Z]). */
bool qv_parse_date(const char *s, size_t n, int64_t *ret_ms, bool *ret_time);
/* Local wall time now, in ms. */
int64_t qv_now_ms(void);
