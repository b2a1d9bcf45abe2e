/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the expression engine (expr_*.c), not for its users: the parse
 * tree, the parser's state, the function table's entries, value
 * constructors and the date arithmetic the evaluator and the functions
 * share. The interface is expr.h.
 */
#pragma once

#include "expr.h"
#include "util.h"

enum node_kind {
	N_LIT,
	N_IDENT,
	N_DOT,
	N_METHOD,
	N_CALL,
	N_INDEX,
	N_LIST,
	N_NEG,
	N_NOT,
	N_BIN,
	N_EXISTS,
	N_MISSING,
};

enum bin_op {
	B_OR,
	B_AND,
	B_EQ,
	B_NE,
	B_LT,
	B_LE,
	B_GT,
	B_GE,
	B_ADD,
	B_SUB,
	B_MUL,
	B_DIV,
	B_MOD,
	B_CONTAINS,
};

struct enode {
	uint8_t kind;
	uint8_t op;	 /* bin_op, or function id */
	uint8_t ptype;	 /* N_IDENT: enum ptype + 1 once looked up */
	uint8_t ident;	 /* N_IDENT: what the name is, once looked up */
	struct qval lit; /* N_LIT */
	const char *name;
	struct enode *a, *b;
	struct enode **args;
	size_t nargs;
};

struct eparser {
	const char *src;
	size_t len, pos;
	enum expr_dialect dialect;
	struct qarena *ar;
	struct tok cur;
	bool have;
	int depth;
	size_t nodes;
	bool uses_this;
	char *err;
};

/* ---- functions ---- */

enum fn_id {
	F_CONTAINS,
	F_ICONTAINS,
	F_ECONTAINS,
	F_CONTAINS_ALL,
	F_CONTAINS_ANY,
	F_DATE,
	F_DUR,
	F_LENGTH,
	F_LOWER,
	F_UPPER,
	F_DEFAULT,
	F_NUMBER,
	F_STRING,
	F_ROUND,
	F_MIN,
	F_MAX,
	F_SUM,
	F_STARTSWITH,
	F_ENDSWITH,
	F_CHOICE,
	F_LIST,
	F_JOIN,
	F_TYPEOF,
	F_NONNULL,
	F_STRIPTIME,
	F_LINK,
	F_NOW,
	F_TODAY,
	F_ISEMPTY,
	F_TRIM,
	F_TOSTRING,
	F_TOFIXED,
	F_ABS,
	F_FLOOR,
	F_CEIL,
	F_HASTAG,
	F_INFOLDER,
	F_HASLINK,
	F_HASPROPERTY,
	F_ISTYPE,
	F_REVERSE,
	F_SORT,
	F_UNIQUE,
	F_NFUNCS, /* how many */
};

enum {
	D_PLAIN = 1 << EXPR_PLAIN,
	D_DQL = 1 << EXPR_DQL,
	D_BASES = 1 << EXPR_BASES,
	D_DV = D_PLAIN | D_DQL,
	D_ALL = D_DV | D_BASES,
};

struct fn_def {
	const char *name;
	uint8_t id;
	uint8_t min, max; /* arguments, the receiver of a method included */
	uint8_t dialects;
	bool method; /* called as recv.name(...) (Bases) */
};

/* The entry for name(...) (method false) or recv.name(...) (method true)
 * in dialect d, or NULL. */
const struct fn_def *ex_fn_find(const char *name, bool method,
				enum expr_dialect d);
/* Dataview's contains (mode 0), icontains (1) and econtains (2). */
bool ex_contains(const struct qval *h, const struct qval *nd, int mode);
/* Call function e->op; recv is a method's receiver, or NULL. */
struct qval ex_call(struct expr_env *env, const struct qrow *row,
		    const struct enode *e, const struct qval *recv);

/* ---- values ---- */

static const struct qval V_NULL = {.t = QV_NULL};

static inline struct qval vnum(double d)
{
	return (struct qval){.t = QV_NUM, .num = d};
}

static inline struct qval vbool(bool b)
{
	return (struct qval){.t = QV_BOOL, .b = b};
}

static inline struct qval vstr(const char *s, size_t n)
{
	return (struct qval){.t = QV_STR, .s = s, .n = (uint32_t)n};
}

static inline struct qval vdate(int64_t ms, bool time)
{
	return (struct qval){.t = QV_DATE, .ms = ms, .time = time};
}

static inline struct qval vdur(int64_t ms, int32_t months)
{
	return (struct qval){.t = QV_DUR, .ms = ms, .n = (uint32_t)months};
}

static inline struct qval vlist(struct qval *items, size_t n)
{
	return (struct qval){.t = QV_LIST, .items = items, .n = (uint32_t)n};
}

/* Order of two links by their target. */
int qv_link_cmp(const struct qval *a, const struct qval *b);
/* Append a value's text (qv_to_text) to b. */
void qv_text_of(const struct qval *v, struct sbuf *b);

/* ---- dates and durations ---- */

#define MS_SEC 1000LL
#define MS_MIN (60 * MS_SEC)
#define MS_HOUR (60 * MS_MIN)
#define MS_DAY (24 * MS_HOUR)

/* Durations keep calendar months apart from fixed time: QV_DUR holds ms
 * in .ms and months in .n (as int32). */
static inline int32_t dur_months(const struct qval *v)
{
	return (int32_t)v->n;
}

/* Days since 1970-01-01 of a civil date, and back. */
int64_t qv_days_from_civil(int64_t y, unsigned m, unsigned d);
void qv_civil_from_days(int64_t z, int *ry, int *rm, int *rd);
int64_t qv_floor_div(int64_t a, int64_t b);
int qv_days_in_month(int y, int m);
/* Local wall time in ms of a UTC time in ns. */
int64_t qv_local_ms_of_ns(int64_t ns);
/* "3 days", "1h 30m", ...: ms and calendar months. */
bool qv_parse_dur(const char *s, size_t n, int64_t *ret_ms,
		  int32_t *ret_months);
/* qv_format_dur of a QV_DUR with its calendar months. */
void qv_format_dur_val(const struct qval *v, char out[96]);
/* ms plus (sign 1) or minus (sign -1) a duration of add_ms and months. */
int64_t qv_date_add(int64_t ms, int64_t add_ms, int32_t months, int sign);

/* ---- evaluation ---- */

struct qval ex_eval(struct expr_env *env, const struct qrow *row,
		    const struct enode *e);
/* Whether name is a file field (file.name, ...). */
bool ex_file_field_known(const char *name);
/* A link to target (resolved from the note from, when given). */
struct qval ex_link_to(struct expr_env *env, const char *target,
		       const struct note *from);
/* A note's outgoing links (which 0), embeds (1) or backlinks (2). */
struct qval ex_links_list(struct expr_env *env, const struct note *n,
			  int which);
