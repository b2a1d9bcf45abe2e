/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The expression evaluator: identifiers, a row's properties read from
 * their compact form, file fields, members, and the operators.
 */
#include "expr_int.h"
#include "fileio.h"
#include "graph.h"
#include "hmap.h"
#include "props.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>

/* ---- evaluation: rows and properties ---------------------------------- */

static void row_stat(struct expr_env *env, const struct qrow *row)
{
	struct qrow *w = (struct qrow *)row;
	if (w->statted)
		return;
	w->statted = true;
	struct stat st;
	if (!w->note && file_stat(env->rootfd, w->path, &st) == 0) {
		w->size = st.st_size;
		w->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL +
			      st.st_mtim.tv_nsec;
		int64_t bt = file_btime(env->rootfd, w->path);
		w->btime = bt ? bt : st.st_mtim.tv_sec;
	}
}

/* File fields (file.name, ...), the same in every dialect. */
enum file_field {
	FF_UNKNOWN,
	FF_NAME,
	FF_BASENAME,
	FF_PATH,
	FF_FOLDER,
	FF_EXT,
	FF_LINK,
	FF_SIZE,
	FF_CTIME,
	FF_CDAY,
	FF_MTIME,
	FF_MDAY,
	FF_DAY,
	FF_TAGS,
	FF_ETAGS,
	FF_ALIASES,
	FF_OUTLINKS,
	FF_EMBEDS,
	FF_INLINKS,
	FF_FRONTMATTER,
};

static const struct {
	const char *name;
	enum file_field id;
} FILE_FIELDS[] = {
	{"name", FF_NAME},
	{"basename", FF_BASENAME},
	{"path", FF_PATH},
	{"folder", FF_FOLDER},
	{"ext", FF_EXT},
	{"link", FF_LINK},
	{"file", FF_LINK},
	{"size", FF_SIZE},
	{"ctime", FF_CTIME},
	{"cday", FF_CDAY},
	{"mtime", FF_MTIME},
	{"mday", FF_MDAY},
	{"day", FF_DAY},
	{"tags", FF_TAGS},
	{"etags", FF_ETAGS},
	{"aliases", FF_ALIASES},
	{"outlinks", FF_OUTLINKS},
	{"links", FF_OUTLINKS},
	{"embeds", FF_EMBEDS},
	{"inlinks", FF_INLINKS},
	{"backlinks", FF_INLINKS},
	{"frontmatter", FF_FRONTMATTER},
	{"properties", FF_FRONTMATTER},
};

static enum file_field file_field_id(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(FILE_FIELDS); i++)
		if (!strcmp(FILE_FIELDS[i].name, name))
			return FILE_FIELDS[i].id;
	return FF_UNKNOWN;
}

bool ex_file_field_known(const char *name)
{
	return file_field_id(name) != FF_UNKNOWN;
}

struct qval ex_link_to(struct expr_env *env, const char *target,
		       const struct note *from)
{
	bool file = false;
	const struct note *n =
		index_resolve(env->ix, from, target, LINK_WIKI, &file);
	const char *s = n ? note_path(n) : target;
	return (struct qval){.t = QV_LINK, .s = s, .n = (uint32_t)strlen(s)};
}

static struct qval prop_to_qv(struct expr_env *env, const struct qrow *row,
			      const struct prop_val *pv, enum ptype type);

/* A string property as Obsidian reads it for its type. */
static struct qval str_prop(struct expr_env *env, const struct qrow *row,
			    const char *s, size_t n, enum ptype type)
{
	int64_t ms;
	bool tm;
	switch (type) {
	case PT_DATE:
	case PT_DATETIME:
	case PT_NONE:
		if (qv_parse_date(s, n, &ms, &tm))
			return vdate(ms, tm);
		break;
	case PT_NUMBER: {
		char buf[64];
		if (n && n < sizeof(buf)) {
			memcpy(buf, s, n);
			buf[n] = 0;
			char *end;
			double d = strtod(buf, &end);
			if (!*end)
				return vnum(d);
		}
		break;
	}
	case PT_CHECKBOX:
		if (n == 4 && !strncasecmp(s, "true", 4))
			return vbool(true);
		if (n == 5 && !strncasecmp(s, "false", 5))
			return vbool(false);
		break;
	case PT_LIST: {
		struct qval *it = qarena_alloc(env->ar, sizeof(*it));
		*it = str_prop(env, row, s, n, PT_NONE);
		return vlist(it, 1);
	}
	default:
		break;
	}
	if (type != PT_TEXT && n > 4 && !memcmp(s, "[[", 2) &&
	    !memcmp(s + n - 2, "]]", 2) && !memchr(s + 2, ']', n - 4)) {
		size_t tl = n - 4;
		const char *bar = memchr(s + 2, '|', tl);
		if (bar)
			tl = (size_t)(bar - (s + 2));
		const char *hash = memchr(s + 2, '#', tl);
		if (hash)
			tl = (size_t)(hash - (s + 2));
		char *t = qarena_strndup(env->ar, s + 2, tl);
		return ex_link_to(env, t, row ? row->note : NULL);
	}
	return vstr(s, n);
}

static struct qval prop_to_qv(struct expr_env *env, const struct qrow *row,
			      const struct prop_val *pv, enum ptype type)
{
	char buf[40];
	switch (pv->kind) {
	case PROP_NULL:
		return V_NULL;
	case PROP_BOOL:
		if (type == PT_TEXT)
			return vstr(pv->b ? "true" : "false", pv->b ? 4 : 5);
		return type == PT_LIST ? vlist(qarena_alloc(env->ar, 0), 0)
				       : vbool(pv->b);
	case PROP_NUM:
		if (type == PT_TEXT) {
			format_double(pv->num, buf);
			char *s = qarena_strndup(env->ar, buf, strlen(buf));
			return vstr(s, strlen(s));
		}
		if (type == PT_LIST) {
			struct qval *it = qarena_alloc(env->ar, sizeof(*it));
			*it = vnum(pv->num);
			return vlist(it, 1);
		}
		return vnum(pv->num);
	case PROP_STR:
		return str_prop(env, row, pv->str, pv->len, type);
	case PROP_LIST: {
		struct qval *items =
			qarena_alloc(env->ar, (pv->count + 1) * sizeof(*items));
		const unsigned char *it = pv->items;
		struct prop_val x;
		uint32_t k = 0;
		while (k < pv->count && props_list_next(pv, &it, &x))
			items[k++] = prop_to_qv(env, row, &x, PT_NONE);
		return vlist(items, k);
	}
	case PROP_OBJ:
		return (struct qval){
			.t = QV_OBJ, .s = pv->str, .n = (uint32_t)pv->len};
	}
	return V_NULL;
}

static struct qval note_prop(struct expr_env *env, const struct qrow *row,
			     const char *key, uint8_t *cache)
{
	if (!row || !row->note)
		return V_NULL;
	struct prop_val pv;
	if (!props_get(note_props(row->note), note_props_len(row->note), key,
		       &pv))
		return V_NULL;
	enum ptype t;
	if (cache && *cache) {
		t = (enum ptype)(*cache - 1);
	} else {
		t = ptypes_get(env->types, key);
		if (cache)
			*cache = (uint8_t)(t + 1);
	}
	return prop_to_qv(env, row, &pv, t);
}

static struct qval strv_list(struct expr_env *env, char *const *v, size_t n,
			     const char *prefix)
{
	struct qval *items = qarena_alloc(env->ar, (n + 1) * sizeof(*items));
	for (size_t i = 0; i < n; i++) {
		char *s =
			prefix ? qarena_alloc(env->ar, strlen(v[i]) + 2) : v[i];
		if (prefix) {
			s[0] = '#';
			strcpy(s + 1, v[i]);
		}
		items[i] = vstr(s, strlen(s));
	}
	return vlist(items, n);
}

/* Dataview's file.tags: each tag and its parents (#a/b gives #a too). */
static struct qval tags_with_parents(struct expr_env *env, const struct note *n)
{
	struct ptrvec all = {0};
	for (size_t i = 0; i < note_ntags(n); i++) {
		const char *t = note_tag(n, i);
		for (const char *sl = strchr(t, '/'); sl;
		     sl = strchr(sl + 1, '/'))
			pv_push(&all,
				qarena_strndup(env->ar, t, (size_t)(sl - t)));
		pv_push(&all, (char *)t);
	}
	struct qval *items =
		qarena_alloc(env->ar, (all.n + 1) * sizeof(*items));
	size_t k = 0;
	for (size_t i = 0; i < all.n; i++) {
		bool dup = false;
		for (size_t j = 0; j < i && !dup; j++)
			dup = !strcasecmp(all.v[i], all.v[j]);
		if (dup)
			continue;
		char *s = qarena_alloc(env->ar, strlen(all.v[i]) + 2);
		s[0] = '#';
		strcpy(s + 1, all.v[i]);
		items[k++] = vstr(s, strlen(s));
	}
	pv_free(&all);
	return vlist(items, k);
}

struct qval ex_links_list(struct expr_env *env, const struct note *n, int which)
{
	/* which: 0 outgoing, 1 embeds, 2 incoming. Each target once. */
	size_t nin;
	struct link *const *in = graph_incoming(n, &nin);
	size_t cap = which == 2 ? nin : note_nlinks(n);
	struct qval *items = qarena_alloc(env->ar, (cap + 1) * sizeof(*items));
	size_t k = 0;
	for (size_t i = 0, next = 0; i < cap; i++) {
		const char *s;
		if (which == 2) {
			s = note_path(in[i]->src);
		} else {
			const struct link *l = graph_next_link(n, &next);
			if (!graph_link_counts(l))
				continue;
			bool embed = l->kind == LINK_EMBED ||
				     l->kind == LINK_MD_EMBED;
			if (which == 1 && !embed)
				continue;
			s = l->to ? note_path(l->to) : l->target;
		}
		struct qval v = {
			.t = QV_LINK, .s = s, .n = (uint32_t)strlen(s)};
		bool dup = false;
		for (size_t j = 0; j < k && !dup; j++)
			dup = qv_link_cmp(&items[j], &v) == 0;
		if (!dup)
			items[k++] = v;
	}
	return vlist(items, k);
}

static struct qval frontmatter_obj(struct expr_env *env, const struct note *n)
{
	cJSON *o = cJSON_CreateObject();
	size_t pos = 0;
	const char *k;
	struct prop_val pv;
	while (props_next(note_props(n), note_props_len(n), &pos, &k, &pv)) {
		cJSON *v;
		switch (pv.kind) {
		case PROP_BOOL:
			v = cJSON_CreateBool(pv.b);
			break;
		case PROP_NUM:
			v = cJSON_CreateNumber(pv.num);
			break;
		case PROP_STR:
			v = cJSON_CreateString(pv.str);
			break;
		case PROP_OBJ:
			v = cJSON_Parse(pv.str);
			break;
		case PROP_LIST: {
			v = cJSON_CreateArray();
			const unsigned char *it = pv.items;
			struct prop_val x;
			for (uint32_t i = 0;
			     i < pv.count && props_list_next(&pv, &it, &x); i++)
				cJSON_AddItemToArray(
					v, x.kind == PROP_STR
						   ? cJSON_CreateString(x.str)
					   : x.kind == PROP_NUM
						   ? cJSON_CreateNumber(x.num)
					   : x.kind == PROP_BOOL
						   ? cJSON_CreateBool(x.b)
						   : cJSON_CreateNull());
			break;
		}
		default:
			v = cJSON_CreateNull();
		}
		cJSON_AddItemToObject(o, k, v ? v : cJSON_CreateNull());
	}
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	char *r = qarena_strndup(env->ar, s, strlen(s));
	cJSON_free(s);
	return (struct qval){.t = QV_OBJ, .s = r, .n = (uint32_t)strlen(r)};
}

/* A file's name parts: its base name, and the stem's length. */
struct file_name {
	const char *path, *base, *dot;
	size_t stem;
};

/* The fields read from the path alone; false when f is another one. */
static bool path_field(enum file_field f, const struct file_name *fn,
		       bool bases, struct qval *ret)
{
	const char *path = fn->path, *base = fn->base, *dot = fn->dot;
	switch (f) {
	case FF_NAME:
		*ret = vstr(base, bases ? strlen(base) : fn->stem);
		return true;
	case FF_BASENAME:
		*ret = vstr(base, fn->stem);
		return true;
	case FF_PATH:
		*ret = vstr(path, strlen(path));
		return true;
	case FF_FOLDER:
		*ret = vstr(path, base > path ? (size_t)(base - path - 1) : 0);
		return true;
	case FF_EXT:
		*ret = dot && dot != base ? vstr(dot + 1, strlen(dot + 1))
					  : vstr("", 0);
		return true;
	case FF_LINK:
		*ret = (struct qval){
			.t = QV_LINK, .s = path, .n = (uint32_t)strlen(path)};
		return true;
	case FF_DAY:
		/* A date in the file name (YYYY-MM-DD or YYYYMMDD). */
		*ret = V_NULL;
		for (size_t i = 0; i + 10 <= fn->stem; i++) {
			int64_t ms;
			bool tm;
			if (isdigit((unsigned char)base[i]) &&
			    qv_parse_date(base + i, 10, &ms, &tm)) {
				*ret = vdate(ms, false);
				break;
			}
		}
		return true;
	default:
		return false;
	}
}

/* A time in s or ns as a date (day true: its day). */
static struct qval time_field(int64_t ns, bool day)
{
	int64_t ms = qv_local_ms_of_ns(ns);
	if (day)
		return vdate(qv_floor_div(ms, MS_DAY) * MS_DAY, false);
	return vdate(ms, true);
}

/* The fields of a note's content. */
static struct qval note_field(struct expr_env *env, const struct note *n,
			      enum file_field f, bool bases)
{
	switch (f) {
	case FF_TAGS:
		return bases ? strv_list(env, note_tags(n), note_ntags(n), NULL)
			     : tags_with_parents(env, n);
	case FF_ETAGS:
		return strv_list(env, note_tags(n), note_ntags(n), "#");
	case FF_ALIASES:
		return strv_list(env, note_aliases(n), note_naliases(n), NULL);
	case FF_OUTLINKS:
		return ex_links_list(env, n, 0);
	case FF_EMBEDS:
		return ex_links_list(env, n, 1);
	case FF_INLINKS:
		return ex_links_list(env, n, 2);
	case FF_FRONTMATTER:
		return frontmatter_obj(env, n);
	default:
		return V_NULL;
	}
}

static struct qval file_field(struct expr_env *env, const struct qrow *row,
			      const char *name)
{
	const struct note *n = row->note;
	enum file_field f = file_field_id(name);
	struct file_name fn = {.path = row->path};
	const char *slash = strrchr(fn.path, '/');
	fn.base = slash ? slash + 1 : fn.path;
	fn.dot = strrchr(fn.base, '.');
	fn.stem = fn.dot && fn.dot != fn.base ? (size_t)(fn.dot - fn.base)
					      : strlen(fn.base);
	bool bases = env->dialect == EXPR_BASES;
	struct qval v;
	/* The day is read after the stat, as the other file fields. */
	if (f != FF_DAY && path_field(f, &fn, bases, &v))
		return v;
	if (!n)
		row_stat(env, row);
	int64_t size = n ? note_size(n) : row->size;
	int64_t mtime_ns = n ? note_mtime_ns(n) : row->mtime_ns;
	int64_t btime = n ? note_btime(n) : row->btime;
	switch (f) {
	case FF_SIZE:
		return vnum((double)size);
	case FF_MTIME:
	case FF_MDAY:
		return time_field(mtime_ns, f == FF_MDAY);
	case FF_CTIME:
	case FF_CDAY:
		return time_field(btime * 1000000000LL, f == FF_CDAY);
	case FF_DAY:
		path_field(f, &fn, bases, &v);
		return v;
	default:
		break;
	}
	if (!n)
		return f == FF_FRONTMATTER ? V_NULL : vlist(NULL, 0);
	return note_field(env, n, f, bases);
}

/* ---- evaluation: operators -------------------------------------------- */

static struct qval date_dur_str(const struct qval *v)
{
	/* Bases: date + "1 week" */
	int64_t ms;
	int32_t mo;
	if (v->t == QV_STR && qv_parse_dur(v->s, v->n, &ms, &mo))
		return vdur(ms, mo);
	return *v;
}

static struct qval arith(struct expr_env *env, int op, struct qval a,
			 struct qval b)
{
	if (env->dialect == EXPR_BASES && (op == B_ADD || op == B_SUB)) {
		if (a.t == QV_DATE)
			b = date_dur_str(&b);
	}
	if (a.t == QV_NULL || b.t == QV_NULL)
		return V_NULL;
	switch (op) {
	case B_ADD:
		if (a.t == QV_NUM && b.t == QV_NUM)
			return vnum(a.num + b.num);
		if (a.t == QV_DATE && b.t == QV_DUR)
			return vdate(qv_date_add(a.ms, b.ms, dur_months(&b), 1),
				     a.time || b.ms % MS_DAY);
		if (a.t == QV_DUR && b.t == QV_DATE)
			return arith(env, op, b, a);
		if (a.t == QV_DUR && b.t == QV_DUR)
			return vdur(a.ms + b.ms,
				    dur_months(&a) + dur_months(&b));
		if (a.t == QV_LIST && b.t == QV_LIST) {
			struct qval *items = qarena_alloc(
				env->ar, (a.n + b.n + 1) * sizeof(*items));
			memcpy(items, a.items, a.n * sizeof(*items));
			memcpy(items + a.n, b.items, b.n * sizeof(*items));
			return vlist(items, a.n + b.n);
		}
		if (a.t == QV_STR || b.t == QV_STR) {
			struct sbuf s = {0};
			qv_text_of(&a, &s);
			qv_text_of(&b, &s);
			char *r = qarena_strndup(env->ar, sb_str(&s), s.len);
			size_t n = s.len;
			sb_free(&s);
			return vstr(r, n);
		}
		return V_NULL;
	case B_SUB:
		if (a.t == QV_NUM && b.t == QV_NUM)
			return vnum(a.num - b.num);
		if (a.t == QV_DATE && b.t == QV_DUR)
			return vdate(
				qv_date_add(a.ms, b.ms, dur_months(&b), -1),
				a.time || b.ms % MS_DAY);
		if (a.t == QV_DATE && b.t == QV_DATE)
			return vdur(a.ms - b.ms, 0);
		if (a.t == QV_DUR && b.t == QV_DUR)
			return vdur(a.ms - b.ms,
				    dur_months(&a) - dur_months(&b));
		return V_NULL;
	case B_MUL:
		if (a.t == QV_NUM && b.t == QV_NUM)
			return vnum(a.num * b.num);
		if (a.t == QV_DUR && b.t == QV_NUM)
			return vdur((int64_t)((double)a.ms * b.num),
				    (int32_t)(dur_months(&a) * b.num));
		if (a.t == QV_NUM && b.t == QV_DUR)
			return arith(env, op, b, a);
		return V_NULL;
	case B_DIV:
		if (a.t == QV_NUM && b.t == QV_NUM)
			return b.num == 0 ? V_NULL : vnum(a.num / b.num);
		if (a.t == QV_DUR && b.t == QV_NUM && b.num != 0)
			return vdur((int64_t)((double)a.ms / b.num),
				    (int32_t)(dur_months(&a) / b.num));
		return V_NULL;
	case B_MOD:
		if (a.t == QV_NUM && b.t == QV_NUM && b.num != 0)
			return vnum(fmod(a.num, b.num));
		return V_NULL;
	}
	return V_NULL;
}

static struct qval compare(struct expr_env *env, int op, struct qval a,
			   struct qval b)
{
	bool nul = a.t == QV_NULL || b.t == QV_NULL;
	if (nul && env->dialect != EXPR_DQL) {
		/* A missing value equals only null and orders with
		 * nothing. */
		bool both = a.t == QV_NULL && b.t == QV_NULL;
		return vbool(op == B_EQ ? both : op == B_NE ? !both : false);
	}
	/* Links compare with text by their target. */
	if (a.t == QV_LINK && b.t == QV_STR)
		b.t = QV_LINK;
	else if (a.t == QV_STR && b.t == QV_LINK)
		a.t = QV_LINK;
	int c = qv_cmp(&a, &b);
	switch (op) {
	case B_EQ:
		return vbool(c == 0);
	case B_NE:
		return vbool(c != 0);
	case B_LT:
		return vbool(c < 0);
	case B_LE:
		return vbool(c <= 0);
	case B_GT:
		return vbool(c > 0);
	default:
		return vbool(c >= 0);
	}
}

/* A date's parts: date.year, ... */
static struct qval date_part(const struct qval *r, const char *name)
{
	static const char *const PARTS[] = {
		"year", "month", "day", "hour", "minute", "second", "weekday"};
	size_t k = 0;
	while (k < ARRAY_SIZE(PARTS) && strcmp(PARTS[k], name))
		k++;
	if (k == ARRAY_SIZE(PARTS))
		return V_NULL;
	int64_t day = qv_floor_div(r->ms, MS_DAY);
	int64_t rest = r->ms - day * MS_DAY;
	int y, m, d;
	qv_civil_from_days(day, &y, &m, &d);
	const double v[] = {
		y,
		m,
		d,
		(double)(rest / MS_HOUR),
		(double)(rest / MS_MIN % 60),
		(double)(rest / MS_SEC % 60),
		(double)(((day % 7) + 7 + 3) % 7 + 1),
	};
	return vnum(v[k]);
}

static struct qval member(struct expr_env *env, const struct qrow *row,
			  struct qval r, const char *name)
{
	(void)row;
	switch (r.t) {
	case QV_FILE:
		return file_field(env, r.row, name);
	case QV_NOTE:
		if (!strcmp(name, "file"))
			return (struct qval){.t = QV_FILE, .row = r.row};
		return note_prop(env, r.row, name, NULL);
	case QV_FORMULAS:
		for (size_t i = 0; i < env->nformulas; i++) {
			if (strcmp(env->formula_names[i], name))
				continue;
			if (env->depth >= 32)
				return V_NULL;
			env->depth++;
			struct qval v = ex_eval(env, r.row, env->formulas[i]);
			env->depth--;
			return v;
		}
		return V_NULL;
	case QV_LIST: {
		if (env->dialect == EXPR_BASES && !strcmp(name, "length"))
			return vnum(r.n);
		struct qval *items =
			qarena_alloc(env->ar, (r.n + 1) * sizeof(*items));
		for (uint32_t i = 0; i < r.n; i++)
			items[i] = member(env, row, r.items[i], name);
		return vlist(items, r.n);
	}
	case QV_STR:
		if (env->dialect == EXPR_BASES && !strcmp(name, "length"))
			return vnum(r.n);
		return V_NULL;
	case QV_LINK: {
		/* [[Note]].field: the linked note's property. */
		_cleanup_free_ char *p = xstrndup(r.s, r.n);
		const struct note *n = index_by_path(env->ix, p);
		if (!n)
			return V_NULL;
		struct qrow *lr = qarena_alloc(env->ar, sizeof(*lr));
		lr->note = n;
		lr->path = note_path(n);
		if (!strcmp(name, "file"))
			return (struct qval){.t = QV_FILE, .row = lr};
		return note_prop(env, lr, name, NULL);
	}
	case QV_DATE:
		return date_part(&r, name);
	case QV_OBJ: {
		cJSON *o = cJSON_ParseWithLength(r.s, r.n);
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
		struct qval out = V_NULL;
		if (cJSON_IsString(v)) {
			char *s = qarena_strndup(env->ar, v->valuestring,
						 strlen(v->valuestring));
			out = str_prop(env, r.row, s, strlen(s), PT_NONE);
		} else if (cJSON_IsNumber(v)) {
			out = vnum(v->valuedouble);
		} else if (cJSON_IsBool(v)) {
			out = vbool(cJSON_IsTrue(v));
		} else if (v && !cJSON_IsNull(v)) {
			char *s = cJSON_PrintUnformatted(v);
			char *c = qarena_strndup(env->ar, s, strlen(s));
			cJSON_free(s);
			out = (struct qval){
				.t = QV_OBJ, .s = c, .n = (uint32_t)strlen(c)};
		}
		cJSON_Delete(o);
		return out;
	}
	default:
		return V_NULL;
	}
}

/* Identifiers that name a row rather than one of its properties. */
static const struct {
	const char *name;
	uint8_t dialects; /* D_* */
	uint8_t t;	  /* QV_FILE, QV_NOTE or QV_FORMULAS */
	bool this_row;	  /* DQL's `this`, not the row at hand */
} ROW_IDENTS[] = {
	{"file", D_ALL, QV_FILE, false},
	{"this", D_DV, QV_NOTE, true},
	{"note", D_BASES, QV_NOTE, false},
	{"formula", D_BASES, QV_FORMULAS, false},
};

/* enode.ident: not looked up yet, a property, or 1 + ROW_IDENTS' index. */
#define IDENT_UNKNOWN 0
#define IDENT_PROP 0xff

static uint8_t ident_kind(const struct expr_env *env, const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(ROW_IDENTS); i++)
		if ((ROW_IDENTS[i].dialects & (1 << env->dialect)) &&
		    !strcmp(ROW_IDENTS[i].name, name))
			return (uint8_t)(i + 1);
	return IDENT_PROP;
}

/* The name's meaning depends only on the dialect, which is the query's:
 * it is looked up once per node (as its property type is). */
static struct qval ident(struct expr_env *env, const struct qrow *row,
			 const struct enode *e)
{
	uint8_t k = e->ident;
	if (k == IDENT_UNKNOWN) {
		k = ident_kind(env, e->name);
		((struct enode *)e)->ident = k;
	}
	if (k == IDENT_PROP) {
		struct qval v;
		if (row && row->item && env->item_field &&
		    env->item_field(env, row, e->name, &v))
			return v;
		return note_prop(env, row, e->name, (uint8_t *)&e->ptype);
	}
	size_t i = (size_t)k - 1;
	if (!ROW_IDENTS[i].this_row)
		return (struct qval){.t = ROW_IDENTS[i].t, .row = row};
	return env->this_row ? (struct qval){.t = QV_NOTE, .row = env->this_row}
			     : V_NULL;
}

struct qval ex_eval(struct expr_env *env, const struct qrow *row,
		    const struct enode *e)
{
	switch (e->kind) {
	case N_LIT:
		if (e->lit.t == QV_LINK)
			return ex_link_to(env, e->name, NULL);
		return e->lit;
	case N_IDENT:
		return ident(env, row, e);
	case N_DOT:
		return member(env, row, ex_eval(env, row, e->a), e->name);
	case N_METHOD: {
		struct qval r = ex_eval(env, row, e->a);
		return ex_call(env, row, e, &r);
	}
	case N_CALL:
		return ex_call(env, row, e, NULL);
	case N_INDEX: {
		struct qval a = ex_eval(env, row, e->a);
		struct qval i = ex_eval(env, row, e->b);
		if (a.t == QV_LIST && i.t == QV_NUM) {
			double k = i.num < 0 ? a.n + i.num : i.num;
			return k >= 0 && k < a.n ? a.items[(size_t)k] : V_NULL;
		}
		if (i.t == QV_STR) {
			char *k = qarena_strndup(env->ar, i.s, i.n);
			return member(env, row,
				      a.t == QV_NULL && row
					      ? (struct qval){.t = QV_NOTE,
							      .row = row}
					      : a,
				      k);
		}
		return V_NULL;
	}
	case N_LIST: {
		struct qval *items =
			qarena_alloc(env->ar, (e->nargs + 1) * sizeof(*items));
		for (size_t i = 0; i < e->nargs; i++)
			items[i] = ex_eval(env, row, e->args[i]);
		return vlist(items, e->nargs);
	}
	case N_NEG: {
		struct qval a = ex_eval(env, row, e->a);
		if (a.t == QV_NUM)
			return vnum(-a.num);
		if (a.t == QV_DUR)
			return vdur(-a.ms, -dur_months(&a));
		return V_NULL;
	}
	case N_NOT: {
		struct qval a = ex_eval(env, row, e->a);
		return vbool(!qv_truthy(&a));
	}
	case N_EXISTS:
	case N_MISSING: {
		struct qval a = ex_eval(env, row, e->a);
		bool there = a.t != QV_NULL &&
			     !((a.t == QV_STR || a.t == QV_LIST) && !a.n);
		return vbool(e->kind == N_EXISTS ? there : !there);
	}
	case N_BIN: {
		if (e->op == B_AND || e->op == B_OR) {
			struct qval a = ex_eval(env, row, e->a);
			bool t = qv_truthy(&a);
			if (e->op == B_AND ? !t : t)
				return vbool(t);
			struct qval b = ex_eval(env, row, e->b);
			return vbool(qv_truthy(&b));
		}
		struct qval a = ex_eval(env, row, e->a);
		struct qval b = ex_eval(env, row, e->b);
		if (e->op == B_CONTAINS)
			return vbool(ex_contains(&a, &b, 0));
		if (e->op >= B_EQ && e->op <= B_GE)
			return compare(env, e->op, a, b);
		return arith(env, e->op, a, b);
	}
	}
	return V_NULL;
}

void expr_eval(struct expr_env *env, const struct qrow *row,
	       const struct enode *e, struct qval *ret)
{
	*ret = ex_eval(env, row, e);
}
