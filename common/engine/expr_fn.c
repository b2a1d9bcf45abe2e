/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The expression functions: the name tables each dialect resolves calls
 * and (Bases) methods in, and one handler per function.
 */
#include "expr_int.h"
#include "fileio.h"
#include "hmap.h"
#include "props.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>

/* ---- functions -------------------------------------------------------- */

/* Functions as called: name(args). */
static const struct fn_def FUNCS[] = {
	{"contains", F_CONTAINS, 2, 2, D_DV, false},
	{"icontains", F_ICONTAINS, 2, 2, D_DV, false},
	{"econtains", F_ECONTAINS, 2, 2, D_DV, false},
	{"containsword", F_ICONTAINS, 2, 2, 0, false},
	{"date", F_DATE, 1, 2, D_ALL, false},
	{"dur", F_DUR, 1, 1, D_DV, false},
	{"duration", F_DUR, 1, 1, D_BASES, false},
	{"length", F_LENGTH, 1, 1, D_DV, false},
	{"lower", F_LOWER, 1, 1, D_DV, false},
	{"upper", F_UPPER, 1, 1, D_DV, false},
	{"default", F_DEFAULT, 2, 2, D_DV, false},
	{"number", F_NUMBER, 1, 1, D_ALL, false},
	{"string", F_STRING, 1, 1, D_DV, false},
	{"round", F_ROUND, 1, 2, D_DV, false},
	{"min", F_MIN, 1, 64, D_ALL, false},
	{"max", F_MAX, 1, 64, D_ALL, false},
	{"sum", F_SUM, 1, 1, D_DV, false},
	{"startswith", F_STARTSWITH, 2, 2, D_DV, false},
	{"endswith", F_ENDSWITH, 2, 2, D_DV, false},
	{"choice", F_CHOICE, 3, 3, D_DV, false},
	{"if", F_CHOICE, 2, 3, D_BASES, false},
	{"list", F_LIST, 0, 64, D_ALL, false},
	{"join", F_JOIN, 1, 2, D_DV, false},
	{"typeof", F_TYPEOF, 1, 1, D_DV, false},
	{"nonnull", F_NONNULL, 1, 1, D_DV, false},
	{"striptime", F_STRIPTIME, 1, 1, D_DV, false},
	{"link", F_LINK, 1, 2, D_ALL, false},
	{"now", F_NOW, 0, 0, D_BASES, false},
	{"today", F_TODAY, 0, 0, D_BASES, false},
	{"reverse", F_REVERSE, 1, 1, D_DV, false},
	{"sort", F_SORT, 1, 1, D_DV, false},
	{"unique", F_UNIQUE, 1, 1, D_DV, false},
};

/* Methods (Bases): recv.name(args). */
static const struct fn_def METHODS[] = {
	{"contains", F_ECONTAINS, 2, 2, D_BASES, true},
	{"containsAll", F_CONTAINS_ALL, 2, 64, D_BASES, true},
	{"containsAny", F_CONTAINS_ANY, 2, 64, D_BASES, true},
	{"startsWith", F_STARTSWITH, 2, 2, D_BASES, true},
	{"endsWith", F_ENDSWITH, 2, 2, D_BASES, true},
	{"isEmpty", F_ISEMPTY, 1, 1, D_BASES, true},
	{"lower", F_LOWER, 1, 1, D_BASES, true},
	{"upper", F_UPPER, 1, 1, D_BASES, true},
	{"trim", F_TRIM, 1, 1, D_BASES, true},
	{"toString", F_TOSTRING, 1, 1, D_BASES, true},
	{"toFixed", F_TOFIXED, 2, 2, D_BASES, true},
	{"round", F_ROUND, 1, 2, D_BASES, true},
	{"abs", F_ABS, 1, 1, D_BASES, true},
	{"floor", F_FLOOR, 1, 1, D_BASES, true},
	{"ceil", F_CEIL, 1, 1, D_BASES, true},
	{"join", F_JOIN, 2, 2, D_BASES, true},
	{"reverse", F_REVERSE, 1, 1, D_BASES, true},
	{"sort", F_SORT, 1, 1, D_BASES, true},
	{"unique", F_UNIQUE, 1, 1, D_BASES, true},
	{"hasTag", F_HASTAG, 2, 64, D_BASES, true},
	{"inFolder", F_INFOLDER, 2, 2, D_BASES, true},
	{"hasLink", F_HASLINK, 2, 2, D_BASES, true},
	{"hasProperty", F_HASPROPERTY, 2, 2, D_BASES, true},
	{"isType", F_ISTYPE, 2, 2, D_BASES, true},
	{"date", F_DATE, 1, 1, D_BASES, true},
};

const struct fn_def *ex_fn_find(const char *name, bool method,
				enum expr_dialect d)
{
	/* Functions are named in any case (Dataview), methods exactly. */
	const struct fn_def *tab = method ? METHODS : FUNCS;
	size_t n = method ? ARRAY_SIZE(METHODS) : ARRAY_SIZE(FUNCS);
	for (size_t i = 0; i < n; i++)
		if ((tab[i].dialects & (1 << d)) &&
		    !(method ? strcmp : strcasecmp)(tab[i].name, name))
			return &tab[i];
	return NULL;
}

/* ---- evaluation: functions -------------------------------------------- */

static bool eq(const struct qval *a, const struct qval *b)
{
	return qv_cmp(a, b) == 0;
}

static bool str_contains(const struct qval *h, const struct qval *nd,
			 bool icase)
{
	if (nd->n > h->n)
		return false;
	if (!icase)
		return memmem(h->s, h->n, nd->s, nd->n) != NULL;
	for (size_t i = 0; i + nd->n <= h->n; i++)
		if (!strncasecmp(h->s + i, nd->s, nd->n))
			return true;
	return false;
}

/* Dataview's contains: substring in strings, recursive in lists; exact
 * (econtains) compares list items whole. */
bool ex_contains(const struct qval *h, const struct qval *nd, int mode)
{
	/* mode: 0 contains, 1 icontains, 2 econtains */
	switch (h->t) {
	case QV_STR:
		if (nd->t != QV_STR)
			return false;
		return mode == 2 ? str_contains(h, nd, false)
				 : str_contains(h, nd, mode == 1);
	case QV_LIST:
		for (uint32_t i = 0; i < h->n; i++) {
			const struct qval *x = &h->items[i];
			if (mode == 2 ? eq(x, nd)
				      : (x->t == QV_STR || x->t == QV_LIST
						 ? ex_contains(x, nd, mode)
						 : eq(x, nd)))
				return true;
		}
		return false;
	case QV_LINK:
		return nd->t == QV_LINK	 ? qv_link_cmp(h, nd) == 0
		       : nd->t == QV_STR ? str_contains(h, nd, mode == 1)
					 : false;
	case QV_OBJ:
		if (nd->t != QV_STR)
			return false;
		{
			cJSON *o = cJSON_ParseWithLength(h->s, h->n);
			_cleanup_free_ char *k = xstrndup(nd->s, nd->n);
			bool r = cJSON_HasObjectItem(o, k);
			cJSON_Delete(o);
			return r;
		}
	default:
		return eq(h, nd);
	}
}

static struct qval map_list(struct expr_env *env, const struct qval *l,
			    struct qval (*fn)(struct expr_env *,
					      const struct qval *))
{
	struct qval *items = qarena_alloc(env->ar, (l->n + 1) * sizeof(*items));
	for (uint32_t i = 0; i < l->n; i++)
		items[i] = fn(env, &l->items[i]);
	return vlist(items, l->n);
}

static struct qval fn_case(struct expr_env *env, const struct qval *v,
			   bool upper)
{
	if (v->t != QV_STR)
		return V_NULL;
	char *s = qarena_strndup(env->ar, v->s, v->n);
	/* ASCII and two-byte Latin/Cyrillic/Greek letters via towlower
	 * would need a locale; u8 folding is done by fold_key for lower. */
	if (!upper) {
		_cleanup_free_ char *f = fold_key_n(v->s, v->n);
		s = qarena_strndup(env->ar, f, strlen(f));
		return vstr(s, strlen(s));
	}
	for (char *c = s; *c; c++)
		*c = (char)toupper((unsigned char)*c);
	return vstr(s, v->n);
}

static struct qval fn_lower(struct expr_env *env, const struct qval *v)
{
	return v->t == QV_LIST ? map_list(env, v, fn_lower)
			       : fn_case(env, v, false);
}

static struct qval fn_upper(struct expr_env *env, const struct qval *v)
{
	return v->t == QV_LIST ? map_list(env, v, fn_upper)
			       : fn_case(env, v, true);
}

static int64_t start_of_day(int64_t ms)
{
	return qv_floor_div(ms, MS_DAY) * MS_DAY;
}

static struct qval date_keyword(struct expr_env *env, const char *s, size_t n)
{
	int64_t today = start_of_day(env->now_ms);
	int y, m, d;
	qv_civil_from_days(qv_floor_div(today, MS_DAY), &y, &m, &d);
	int64_t days = qv_floor_div(today, MS_DAY);
	int wd = (int)(((days % 7) + 7 + 3) % 7); /* 0 = Monday */
	static const char *const K[] = {"today", "now", "tomorrow", "yesterday",
					"sow",	 "eow", "som",	    "eom",
					"soy",	 "eoy"};
	size_t k = 0;
	for (; k < ARRAY_SIZE(K); k++)
		if (strlen(K[k]) == n && !strncasecmp(K[k], s, n))
			break;
	switch (k) {
	case 0:
		return vdate(today, false);
	case 1:
		return vdate(env->now_ms, true);
	case 2:
		return vdate(today + MS_DAY, false);
	case 3:
		return vdate(today - MS_DAY, false);
	case 4:
		return vdate(today - wd * MS_DAY, false);
	case 5:
		return vdate(today + (6 - wd) * MS_DAY, false);
	case 6:
		return vdate(qv_days_from_civil(y, (unsigned)m, 1) * MS_DAY,
			     false);
	case 7:
		return vdate(
			qv_days_from_civil(y, (unsigned)m,
					   (unsigned)qv_days_in_month(y, m)) *
				MS_DAY,
			false);
	case 8:
		return vdate(qv_days_from_civil(y, 1, 1) * MS_DAY, false);
	case 9:
		return vdate(qv_days_from_civil(y, 12, 31) * MS_DAY, false);
	}
	return V_NULL;
}

static struct qval fn_date(struct expr_env *env, const struct qval *v)
{
	int64_t ms;
	bool tm;
	switch (v->t) {
	case QV_DATE:
		return *v;
	case QV_STR:
		if (qv_parse_date(v->s, v->n, &ms, &tm))
			return vdate(ms, tm);
		return date_keyword(env, v->s, v->n);
	case QV_LIST:
		return map_list(env, v, fn_date);
	default:
		return V_NULL;
	}
}

static struct qval fn_dur(struct expr_env *env, const struct qval *v)
{
	(void)env;
	int64_t ms;
	int32_t mo;
	if (v->t == QV_DUR)
		return *v;
	if (v->t == QV_STR && qv_parse_dur(v->s, v->n, &ms, &mo))
		return vdur(ms, mo);
	return V_NULL;
}

static struct qval fn_number(struct expr_env *env, const struct qval *v)
{
	if (v->t == QV_NUM)
		return *v;
	if (v->t == QV_BOOL && env->dialect == EXPR_BASES)
		return vnum(v->b);
	if (v->t == QV_DATE && env->dialect == EXPR_BASES)
		return vnum((double)v->ms);
	if (v->t == QV_LIST)
		return map_list(env, v, fn_number);
	if (v->t != QV_STR)
		return V_NULL;
	/* Dataview: the first number in the text. */
	for (uint32_t i = 0; i < v->n; i++) {
		char c = v->s[i];
		if (isdigit((unsigned char)c) ||
		    ((c == '-' || c == '.') && i + 1 < v->n &&
		     isdigit((unsigned char)v->s[i + 1]))) {
			char buf[64];
			size_t l = v->n - i < 63 ? v->n - i : 63;
			memcpy(buf, v->s + i, l);
			buf[l] = 0;
			return vnum(strtod(buf, NULL));
		}
	}
	return V_NULL;
}

static struct qval fn_string(struct expr_env *env, const struct qval *v)
{
	char *s = qv_to_text(v, env->ar);
	return vstr(s, strlen(s));
}

static double round_to(double x, int digits_)
{
	double f = pow(10, digits_);
	return round(x * f) / f;
}

static const char *type_name(uint8_t t)
{
	static const char *const N[] = {
		[QV_NULL] = "null",   [QV_BOOL] = "boolean",
		[QV_NUM] = "number",  [QV_DUR] = "duration",
		[QV_DATE] = "date",   [QV_STR] = "string",
		[QV_LINK] = "link",   [QV_LIST] = "array",
		[QV_OBJ] = "object",  [QV_FILE] = "object",
		[QV_NOTE] = "object", [QV_FORMULAS] = "object",
	};
	return N[t];
}

static bool has_tag(const struct note *n, const struct qval *t)
{
	if (!n || t->t != QV_STR)
		return false;
	bool hash = t->n && t->s[0] == '#';
	_cleanup_free_ char *q = fold_key_n(t->s + hash, t->n - hash);
	size_t fl = strlen(q);
	for (size_t i = 0; i < note_ntags(n); i++) {
		const char *f = note_fold_tags(n)[i];
		if (!strncmp(f, q, fl) && (!f[fl] || f[fl] == '/'))
			return true;
	}
	return false;
}

static bool in_folder(const struct qrow *row, const struct qval *f)
{
	if (f->t != QV_STR)
		return false;
	size_t n = f->n;
	while (n && f->s[n - 1] == '/')
		n--;
	if (!n)
		return true;
	return strlen(row->path) > n && !strncasecmp(row->path, f->s, n) &&
	       row->path[n] == '/';
}

/* A call's evaluated arguments, a method's receiver first. */
struct fn_args {
	struct expr_env *env;
	uint8_t op; /* enum fn_id */
	const struct qval *a;
	size_t na;
};

typedef struct qval fn_impl(const struct fn_args *c);

static struct qval f_contains(const struct fn_args *c)
{
	int mode = c->op == F_ICONTAINS ? 1 : c->op == F_ECONTAINS ? 2 : 0;
	return vbool(ex_contains(&c->a[0], &c->a[1], mode));
}

static struct qval f_contains_some(const struct fn_args *c)
{
	bool all = c->op == F_CONTAINS_ALL;
	for (size_t i = 1; i < c->na; i++)
		if (ex_contains(&c->a[0], &c->a[i], 2) != all)
			return vbool(!all);
	return vbool(all);
}

static struct qval f_date(const struct fn_args *c)
{
	return fn_date(c->env, &c->a[0]);
}

static struct qval f_dur(const struct fn_args *c)
{
	return fn_dur(c->env, &c->a[0]);
}

static struct qval f_length(const struct fn_args *c)
{
	const struct qval *x = &c->a[0];
	return x->t == QV_LIST || x->t == QV_STR ? vnum(x->n)
	       : x->t == QV_NULL		 ? vnum(0)
						 : V_NULL;
}

static struct qval f_lower(const struct fn_args *c)
{
	return fn_lower(c->env, &c->a[0]);
}

static struct qval f_upper(const struct fn_args *c)
{
	return fn_upper(c->env, &c->a[0]);
}

static struct qval f_default(const struct fn_args *c)
{
	return c->a[0].t == QV_NULL ? c->a[1] : c->a[0];
}

static struct qval f_number(const struct fn_args *c)
{
	return fn_number(c->env, &c->a[0]);
}

static struct qval f_string(const struct fn_args *c)
{
	return fn_string(c->env, &c->a[0]);
}

static struct qval f_round(const struct fn_args *c)
{
	const struct qval *a = c->a;
	if (a[0].t != QV_NUM)
		return V_NULL;
	return vnum(round_to(
		a[0].num, c->na > 1 && a[1].t == QV_NUM ? (int)a[1].num : 0));
}

static struct qval f_tofixed(const struct fn_args *c)
{
	const struct qval *a = c->a;
	if (a[0].t != QV_NUM || a[1].t != QV_NUM || a[1].num < 0 ||
	    a[1].num > 20)
		return V_NULL;
	char buf[400];
	snprintf(buf, sizeof(buf), "%.*f", (int)a[1].num, a[0].num);
	char *s = qarena_strndup(c->env->ar, buf, strlen(buf));
	return vstr(s, strlen(s));
}

static struct qval f_num1(const struct fn_args *c)
{
	if (c->a[0].t != QV_NUM)
		return V_NULL;
	double x = c->a[0].num;
	return vnum(c->op == F_ABS     ? fabs(x)
		    : c->op == F_FLOOR ? floor(x)
				       : ceil(x));
}

static struct qval f_aggregate(const struct fn_args *c)
{
	const struct qval *xs = c->a;
	size_t n = c->na;
	if (c->na == 1 && c->a[0].t == QV_LIST) {
		xs = c->a[0].items;
		n = c->a[0].n;
	}
	if (c->op == F_SUM) {
		double s = 0;
		for (size_t i = 0; i < n; i++) {
			if (xs[i].t != QV_NUM)
				return V_NULL;
			s += xs[i].num;
		}
		return vnum(s);
	}
	struct qval best = V_NULL;
	for (size_t i = 0; i < n; i++) {
		if (xs[i].t == QV_NULL)
			continue;
		int r = best.t == QV_NULL ? 0 : qv_cmp(&xs[i], &best);
		if (best.t == QV_NULL || (c->op == F_MIN ? r < 0 : r > 0))
			best = xs[i];
	}
	return best;
}

static struct qval f_affix(const struct fn_args *c)
{
	const struct qval *a = c->a;
	if (a[0].t != QV_STR || a[1].t != QV_STR || a[1].n > a[0].n)
		return vbool(false);
	return vbool(!memcmp(c->op == F_STARTSWITH ? a[0].s
						   : a[0].s + a[0].n - a[1].n,
			     a[1].s, a[1].n));
}

static struct qval f_list(const struct fn_args *c)
{
	struct qval *items =
		qarena_alloc(c->env->ar, (c->na + 1) * sizeof(*items));
	memcpy(items, c->a, c->na * sizeof(*items));
	return vlist(items, c->na);
}

static struct qval f_join(const struct fn_args *c)
{
	const struct qval *a = c->a;
	if (a[0].t != QV_LIST)
		return fn_string(c->env, &a[0]);
	struct sbuf b = {0};
	const char *sep = ", ";
	size_t sl = 2;
	if (c->na > 1 && a[1].t == QV_STR) {
		sep = a[1].s;
		sl = a[1].n;
	}
	for (uint32_t i = 0; i < a[0].n; i++) {
		if (i)
			sb_add(&b, sep, sl);
		qv_text_of(&a[0].items[i], &b);
	}
	char *s = qarena_strndup(c->env->ar, sb_str(&b), b.len);
	size_t n = b.len;
	sb_free(&b);
	return vstr(s, n);
}

static struct qval f_typeof(const struct fn_args *c)
{
	const char *t = type_name(c->a[0].t);
	return vstr(t, strlen(t));
}

static struct qval f_istype(const struct fn_args *c)
{
	const struct qval *a = c->a;
	if (a[1].t != QV_STR)
		return vbool(false);
	const char *t = type_name(a[0].t);
	return vbool(strlen(t) == a[1].n && !strncasecmp(t, a[1].s, a[1].n));
}

static struct qval f_nonnull(const struct fn_args *c)
{
	const struct qval *l = &c->a[0];
	if (l->t != QV_LIST)
		return *l;
	struct qval *items =
		qarena_alloc(c->env->ar, (l->n + 1) * sizeof(*items));
	size_t k = 0;
	for (uint32_t i = 0; i < l->n; i++)
		if (l->items[i].t != QV_NULL)
			items[k++] = l->items[i];
	return vlist(items, k);
}

static struct qval f_striptime(const struct fn_args *c)
{
	return c->a[0].t == QV_DATE ? vdate(start_of_day(c->a[0].ms), false)
				    : V_NULL;
}

static struct qval f_link(const struct fn_args *c)
{
	const struct qval *a = c->a;
	if (a[0].t == QV_LINK)
		return a[0];
	if (a[0].t != QV_STR)
		return V_NULL;
	return ex_link_to(c->env, qarena_strndup(c->env->ar, a[0].s, a[0].n),
			  NULL);
}

static struct qval f_now(const struct fn_args *c)
{
	return vdate(c->env->now_ms, true);
}

static struct qval f_today(const struct fn_args *c)
{
	return vdate(start_of_day(c->env->now_ms), false);
}

static struct qval f_isempty(const struct fn_args *c)
{
	const struct qval *x = &c->a[0];
	return vbool(x->t == QV_NULL ||
		     ((x->t == QV_STR || x->t == QV_LIST) && !x->n) ||
		     (x->t == QV_OBJ && x->n <= 2));
}

static struct qval f_trim(const struct fn_args *c)
{
	if (c->a[0].t != QV_STR)
		return V_NULL;
	const char *s = c->a[0].s;
	size_t n = c->a[0].n;
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return vstr(s, n);
}

static void sort_vals(struct qval *items, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i;
		     j > 0 && qv_cmp(&items[j - 1], &items[j]) > 0; j--) {
			struct qval t = items[j];
			items[j] = items[j - 1];
			items[j - 1] = t;
		}
}

/* reverse, sort and unique. */
static struct qval f_reorder(const struct fn_args *c)
{
	const struct qval *l = &c->a[0];
	if (l->t != QV_LIST)
		return l->t == QV_STR && c->op == F_REVERSE ? V_NULL : *l;
	uint32_t n = l->n;
	struct qval *items = qarena_alloc(c->env->ar, (n + 1) * sizeof(*items));
	size_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct qval *x =
			&l->items[c->op == F_REVERSE ? n - 1 - i : i];
		bool dup = false;
		for (size_t j = 0; c->op == F_UNIQUE && j < k && !dup; j++)
			dup = eq(&items[j], x);
		if (!dup)
			items[k++] = *x;
	}
	if (c->op == F_SORT)
		sort_vals(items, k);
	return vlist(items, k);
}

static struct qval f_hastag(const struct fn_args *c)
{
	if (c->a[0].t != QV_FILE)
		return vbool(false);
	for (size_t i = 1; i < c->na; i++)
		if (has_tag(c->a[0].row->note, &c->a[i]))
			return vbool(true);
	return vbool(false);
}

static struct qval f_infolder(const struct fn_args *c)
{
	return vbool(c->a[0].t == QV_FILE && in_folder(c->a[0].row, &c->a[1]));
}

static struct qval f_haslink(const struct fn_args *c)
{
	const struct qval *a = c->a;
	if (a[0].t != QV_FILE || !a[0].row->note)
		return vbool(false);
	struct qval target = a[1];
	if (target.t == QV_STR)
		target = ex_link_to(c->env,
				    qarena_strndup(c->env->ar, a[1].s, a[1].n),
				    NULL);
	if (target.t == QV_FILE)
		target = (struct qval){.t = QV_LINK,
				       .s = target.row->path,
				       .n = (uint32_t)strlen(target.row->path)};
	struct qval l = ex_links_list(c->env, a[0].row->note, 0);
	return vbool(ex_contains(&l, &target, 2));
}

static struct qval f_hasproperty(const struct fn_args *c)
{
	const struct qval *a = c->a;
	if (a[0].t != QV_FILE || a[1].t != QV_STR || !a[0].row->note)
		return vbool(false);
	_cleanup_free_ char *key = xstrndup(a[1].s, a[1].n);
	struct prop_val pv;
	return vbool(props_get(note_props(a[0].row->note),
			       note_props_len(a[0].row->note), key, &pv));
}

/* The handler of each function id (F_CHOICE is ex_call's: it evaluates
 * only the branch taken). */
static fn_impl *const IMPL[F_NFUNCS] = {
	[F_CONTAINS] = f_contains,
	[F_ICONTAINS] = f_contains,
	[F_ECONTAINS] = f_contains,
	[F_CONTAINS_ALL] = f_contains_some,
	[F_CONTAINS_ANY] = f_contains_some,
	[F_DATE] = f_date,
	[F_DUR] = f_dur,
	[F_LENGTH] = f_length,
	[F_LOWER] = f_lower,
	[F_UPPER] = f_upper,
	[F_DEFAULT] = f_default,
	[F_NUMBER] = f_number,
	[F_STRING] = f_string,
	[F_TOSTRING] = f_string,
	[F_ROUND] = f_round,
	[F_TOFIXED] = f_tofixed,
	[F_ABS] = f_num1,
	[F_FLOOR] = f_num1,
	[F_CEIL] = f_num1,
	[F_MIN] = f_aggregate,
	[F_MAX] = f_aggregate,
	[F_SUM] = f_aggregate,
	[F_STARTSWITH] = f_affix,
	[F_ENDSWITH] = f_affix,
	[F_LIST] = f_list,
	[F_JOIN] = f_join,
	[F_TYPEOF] = f_typeof,
	[F_ISTYPE] = f_istype,
	[F_NONNULL] = f_nonnull,
	[F_STRIPTIME] = f_striptime,
	[F_LINK] = f_link,
	[F_NOW] = f_now,
	[F_TODAY] = f_today,
	[F_ISEMPTY] = f_isempty,
	[F_TRIM] = f_trim,
	[F_REVERSE] = f_reorder,
	[F_SORT] = f_reorder,
	[F_UNIQUE] = f_reorder,
	[F_HASTAG] = f_hastag,
	[F_INFOLDER] = f_infolder,
	[F_HASLINK] = f_haslink,
	[F_HASPROPERTY] = f_hasproperty,
};

struct qval ex_call(struct expr_env *env, const struct qrow *row,
		    const struct enode *e, const struct qval *recv)
{
	size_t na = e->nargs + (recv ? 1 : 0);
	struct qval a[64];
	if (na > ARRAY_SIZE(a))
		return V_NULL;
	size_t k = 0;
	if (recv)
		a[k++] = *recv;
	/* choice/if evaluate only the branch taken. */
	if (e->op == F_CHOICE) {
		struct qval c = ex_eval(env, row, e->args[0]);
		if (qv_truthy(&c))
			return ex_eval(env, row, e->args[1]);
		return e->nargs > 2 ? ex_eval(env, row, e->args[2]) : V_NULL;
	}
	for (size_t i = 0; i < e->nargs; i++)
		a[k++] = ex_eval(env, row, e->args[i]);
	fn_impl *f = e->op < ARRAY_SIZE(IMPL) ? IMPL[e->op] : NULL;
	if (!f)
		return V_NULL;
	return f(&(struct fn_args){.env = env, .op = e->op, .a = a, .na = na});
}
