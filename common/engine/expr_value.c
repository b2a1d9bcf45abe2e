/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Expression values: the arena they live in, the vault's property types
 * (.obsidian/types.json) and the order, truth and text of a value.
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

/* ---- arena ------------------------------------------------------------ */

#define ARENA_CHUNK (64u << 10)

struct qarena {
	struct ptrvec chunks; /* each: size_t cap, then data */
	size_t cur;	      /* chunk in use */
	size_t used;	      /* bytes used in it */
};

struct qarena *qarena_new(void)
{
	return xcalloc(1, sizeof(struct qarena));
}

struct qarena *qarena_free(struct qarena *a)
{
	if (!a)
		return NULL;
	for (size_t i = 0; i < a->chunks.n; i++)
		free(a->chunks.v[i]);
	pv_free(&a->chunks);
	free(a);
	return NULL;
}

static size_t chunk_cap(const struct qarena *a, size_t i)
{
	return *(size_t *)a->chunks.v[i];
}

void *qarena_alloc(struct qarena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	while (a->cur < a->chunks.n) {
		if (a->used + n <= chunk_cap(a, a->cur)) {
			char *p = (char *)a->chunks.v[a->cur] + 16 + a->used;
			a->used += n;
			memset(p, 0, n);
			return p;
		}
		a->cur++;
		a->used = 0;
	}
	size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;
	char *c = xmalloc(16 + cap);
	*(size_t *)c = cap;
	pv_push(&a->chunks, c);
	a->cur = a->chunks.n - 1;
	a->used = n;
	memset(c + 16, 0, n);
	return c + 16;
}

char *qarena_strndup(struct qarena *a, const char *s, size_t n)
{
	char *r = qarena_alloc(a, n + 1);
	memcpy(r, s, n);
	r[n] = 0;
	return r;
}

/* A mark is chunk index and offset in one number. */
size_t qarena_mark(struct qarena *a)
{
	return (a->cur << 32) | a->used;
}

void qarena_reset(struct qarena *a, size_t mark)
{
	a->cur = mark >> 32;
	a->used = mark & 0xffffffffu;
}

/* ---- property types --------------------------------------------------- */

struct ptypes {
	struct hmap *map; /* folded key -> (void *)(uintptr_t)ptype */
};

static const struct {
	const char *name;
	enum ptype type;
} PTYPE_NAMES[] = {
	{"text", PT_TEXT},	   {"multitext", PT_LIST},
	{"list", PT_LIST},	   {"tags", PT_LIST},
	{"aliases", PT_LIST},	   {"number", PT_NUMBER},
	{"checkbox", PT_CHECKBOX}, {"date", PT_DATE},
	{"datetime", PT_DATETIME},
};

#define TYPES_MAX_BYTES (4u << 20)

int ptypes_load(int rootfd, struct ptypes **ret, char **ret_msg)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	struct ptypes *t = xcalloc(1, sizeof(*t));
	t->map = hmap_new();
	int r = file_read(rootfd, ".obsidian/types.json", TYPES_MAX_BYTES,
			  &text, &len, NULL);
	if (r == -ENOENT) {
		*ret = t;
		return 0;
	}
	if (r < 0) {
		*ret_msg = xasprintf(".obsidian/types.json cannot be read: %s",
				     strerror(-r));
		ptypes_free(t);
		return r;
	}
	cJSON *j = cJSON_ParseWithLength(text, len);
	const cJSON *types = cJSON_GetObjectItemCaseSensitive(j, "types");
	if (!j || (types && !cJSON_IsObject(types))) {
		*ret_msg = xstrdup(".obsidian/types.json is not valid JSON "
				   "of the form {\"types\": {key: type}}");
		cJSON_Delete(j);
		ptypes_free(t);
		return -EBADMSG;
	}
	const cJSON *kv;
	cJSON_ArrayForEach(kv, types)
	{
		if (!cJSON_IsString(kv))
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(PTYPE_NAMES); i++) {
			if (strcasecmp(kv->valuestring, PTYPE_NAMES[i].name))
				continue;
			_cleanup_free_ char *k = xstrdup(kv->string);
			for (char *c = k; *c; c++)
				*c = (char)tolower((unsigned char)*c);
			hmap_put(t->map, k,
				 (void *)(uintptr_t)PTYPE_NAMES[i].type);
		}
	}
	cJSON_Delete(j);
	*ret = t;
	return 0;
}

struct ptypes *ptypes_free(struct ptypes *t)
{
	if (!t)
		return NULL;
	hmap_free(t->map);
	free(t);
	return NULL;
}

enum ptype ptypes_get(const struct ptypes *t, const char *key)
{
	if (!t || !hmap_size(t->map))
		return PT_NONE;
	char buf[256];
	size_t n = strlen(key);
	if (n >= sizeof(buf))
		return PT_NONE;
	for (size_t i = 0; i <= n; i++)
		buf[i] = (char)tolower((unsigned char)key[i]);
	return (enum ptype)(uintptr_t)hmap_get(t->map, buf);
}

/* ---- values ----------------------------------------------------------- */

bool qv_truthy(const struct qval *v)
{
	switch (v->t) {
	case QV_NULL:
		return false;
	case QV_BOOL:
		return v->b;
	case QV_NUM:
		return v->num != 0 && !isnan(v->num);
	case QV_STR:
	case QV_LIST:
		return v->n > 0;
	case QV_DUR:
		return v->ms || v->n;
	default:
		return true;
	}
}

/* Link targets compare without ".md" and without case. */
int qv_link_cmp(const struct qval *a, const struct qval *b)
{
	size_t an = a->n, bn = b->n;
	if (an > 3 && !strncasecmp(a->s + an - 3, ".md", 3))
		an -= 3;
	if (bn > 3 && !strncasecmp(b->s + bn - 3, ".md", 3))
		bn -= 3;
	size_t m = an < bn ? an : bn;
	int r = strncasecmp(a->s, b->s, m);
	return r ? r : (an > bn) - (an < bn);
}

static int type_rank(uint8_t t)
{
	/* Dataview's order of types: null first. */
	static const int R[] = {
		[QV_NULL] = 0, [QV_BOOL] = 1,  [QV_NUM] = 2,
		[QV_DUR] = 3,  [QV_DATE] = 4,  [QV_STR] = 5,
		[QV_LINK] = 6, [QV_LIST] = 7,  [QV_OBJ] = 8,
		[QV_FILE] = 9, [QV_NOTE] = 10, [QV_FORMULAS] = 11,
	};
	return R[t];
}

/* A string that reads as a date compares with dates as that date. */
static bool str_as_date(const struct qval *s, struct qval *ret)
{
	int64_t ms;
	bool tm;
	if (s->t != QV_STR || !qv_parse_date(s->s, s->n, &ms, &tm))
		return false;
	*ret = vdate(ms, tm);
	return true;
}

int qv_cmp(const struct qval *a, const struct qval *b)
{
	struct qval t;
	if (a->t == QV_STR && b->t == QV_DATE && str_as_date(a, &t))
		return qv_cmp(&t, b);
	if (a->t == QV_DATE && b->t == QV_STR && str_as_date(b, &t))
		return qv_cmp(a, &t);
	if (a->t != b->t)
		return type_rank(a->t) - type_rank(b->t);
	switch (a->t) {
	case QV_NULL:
		return 0;
	case QV_BOOL:
		return (int)a->b - (int)b->b;
	case QV_NUM:
		if (isnan(a->num) || isnan(b->num))
			return isnan(a->num) - isnan(b->num);
		return (a->num > b->num) - (a->num < b->num);
	case QV_DUR: {
		/* A month counts 30 days for ordering. */
		int64_t x = a->ms + dur_months(a) * 30 * MS_DAY;
		int64_t y = b->ms + dur_months(b) * 30 * MS_DAY;
		return (x > y) - (x < y);
	}
	case QV_DATE:
		return (a->ms > b->ms) - (a->ms < b->ms);
	case QV_STR:
	case QV_OBJ: {
		size_t m = a->n < b->n ? a->n : b->n;
		int r = memcmp(a->s, b->s, m);
		return r ? r : (a->n > b->n) - (a->n < b->n);
	}
	case QV_LINK:
		return qv_link_cmp(a, b);
	case QV_LIST:
		for (uint32_t i = 0; i < a->n && i < b->n; i++) {
			int r = qv_cmp(&a->items[i], &b->items[i]);
			if (r)
				return r;
		}
		return (a->n > b->n) - (a->n < b->n);
	default:
		return (a->row > b->row) - (a->row < b->row);
	}
}

void qv_text_of(const struct qval *v, struct sbuf *b)
{
	char buf[96];
	switch (v->t) {
	case QV_NULL:
		break;
	case QV_BOOL:
		sb_puts(b, v->b ? "true" : "false");
		break;
	case QV_NUM:
		format_double(v->num, buf);
		sb_puts(b, buf);
		break;
	case QV_DUR:
		qv_format_dur_val(v, buf);
		sb_puts(b, buf);
		break;
	case QV_DATE:
		qv_format_date(v, buf);
		sb_puts(b, buf);
		break;
	case QV_STR:
	case QV_OBJ:
		sb_add(b, v->s, v->n);
		break;
	case QV_LINK: {
		size_t n = v->n;
		if (n > 3 && !strncasecmp(v->s + n - 3, ".md", 3))
			n -= 3;
		sb_puts(b, "[[");
		sb_add(b, v->s, n);
		sb_puts(b, "]]");
		break;
	}
	case QV_LIST:
		for (uint32_t i = 0; i < v->n; i++) {
			if (i)
				sb_puts(b, ", ");
			qv_text_of(&v->items[i], b);
		}
		break;
	case QV_FILE:
	case QV_NOTE:
		sb_puts(b, v->row->path);
		break;
	default:
		break;
	}
}

char *qv_to_text(const struct qval *v, struct qarena *ar)
{
	if (v->t == QV_STR)
		return qarena_strndup(ar, v->s, v->n);
	struct sbuf b = {0};
	qv_text_of(v, &b);
	char *r = qarena_strndup(ar, sb_str(&b), b.len);
	sb_free(&b);
	return r;
}
