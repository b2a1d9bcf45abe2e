/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The expression language behind query_notes, DQL and Bases: a lexer, a
 * recursive-descent parser with bounded depth, and an evaluator that
 * reads a note's properties from its compact form (props.h) without
 * touching the file. Dates are local wall times in ms, as Dataview and
 * Obsidian show them; a date-only value is midnight.
 */
#include "expr.h"
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

/* ---- dates and durations ---------------------------------------------- */

#define MS_SEC 1000LL
#define MS_MIN (60 * MS_SEC)
#define MS_HOUR (60 * MS_MIN)
#define MS_DAY (24 * MS_HOUR)

/* Durations keep calendar months apart from fixed time: QV_DUR holds ms
 * in .ms and months in .n (as int32). */
static int32_t dur_months(const struct qval *v)
{
	return (int32_t)v->n;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int *ry, int *rm, int *rd)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t y = (int64_t)yoe + era * 400;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	unsigned d = doy - (153 * mp + 2) / 5 + 1;
	unsigned m = mp < 10 ? mp + 3 : mp - 9;
	*ry = (int)(y + (m <= 2));
	*rm = (int)m;
	*rd = (int)d;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int days_in_month(int y, int m)
{
	static const int D[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : D[m - 1];
}

/* Local offset (seconds east of UTC) at a UTC time. */
static long local_offset(time_t t)
{
	struct tm tm;
	localtime_r(&t, &tm);
	return tm.tm_gmtoff;
}

int64_t qv_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((int64_t)ts.tv_sec + local_offset(ts.tv_sec)) * MS_SEC +
	       ts.tv_nsec / 1000000;
}

/* Local wall time of a UTC time in ns. */
static int64_t local_ms_of_ns(int64_t ns)
{
	time_t s = (time_t)(ns / 1000000000LL);
	return ((int64_t)s + local_offset(s)) * MS_SEC +
	       (ns % 1000000000LL) / 1000000;
}

static int digits(const char *s, size_t n, size_t *i, int min, int max,
		  int *ret)
{
	int v = 0, k = 0;
	while (*i < n && k < max && isdigit((unsigned char)s[*i])) {
		v = v * 10 + (s[*i] - '0');
		(*i)++;
		k++;
	}
	if (k < min)
		return -1;
	*ret = v;
	return 0;
}

bool qv_parse_date(const char *s, size_t n, int64_t *ret_ms, bool *ret_time)
{
	size_t i = 0;
	int y, mo = 1, d = 1, h = 0, mi = 0, sec = 0, msec = 0;
	bool has_time = false;
	if (digits(s, n, &i, 4, 4, &y) < 0 || i >= n || s[i] != '-')
		return false;
	i++;
	if (digits(s, n, &i, 1, 2, &mo) < 0)
		return false;
	if (i < n && s[i] == '-') {
		i++;
		if (digits(s, n, &i, 1, 2, &d) < 0)
			return false;
	} else if (i != n) {
		return false;
	}
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return false;
	long tz = 0;
	bool zoned = false;
	if (i < n && (s[i] == 'T' || s[i] == ' ')) {
		i++;
		if (digits(s, n, &i, 2, 2, &h) < 0 || i >= n || s[i] != ':')
			return false;
		i++;
		if (digits(s, n, &i, 2, 2, &mi) < 0)
			return false;
		if (i < n && s[i] == ':') {
			i++;
			if (digits(s, n, &i, 2, 2, &sec) < 0)
				return false;
			if (i < n && s[i] == '.') {
				i++;
				size_t st = i;
				int frac = 0;
				if (digits(s, n, &i, 1, 9, &frac) < 0)
					return false;
				while (i - st < 3) {
					frac *= 10;
					st--;
				}
				while (i - st > 3) {
					frac /= 10;
					st++;
				}
				msec = frac;
			}
		}
		if (h > 23 || mi > 59 || sec > 60)
			return false;
		has_time = true;
		if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
			i++;
			zoned = true;
		} else if (i < n && (s[i] == '+' || s[i] == '-')) {
			int sign = s[i] == '-' ? -1 : 1, th, tm = 0;
			i++;
			if (digits(s, n, &i, 2, 2, &th) < 0)
				return false;
			if (i < n && s[i] == ':')
				i++;
			if (i < n && digits(s, n, &i, 2, 2, &tm) < 0)
				return false;
			tz = sign * (th * 3600L + tm * 60L);
			zoned = true;
		}
	}
	if (i != n)
		return false;
	int64_t ms = days_from_civil(y, (unsigned)mo, (unsigned)d) * MS_DAY +
		     h * MS_HOUR + mi * MS_MIN + sec * MS_SEC + msec;
	if (zoned) {
		int64_t utc_s = ms / MS_SEC - tz;
		ms += (local_offset((time_t)utc_s) - tz) * MS_SEC;
	}
	*ret_ms = ms;
	*ret_time = has_time;
	return true;
}

void qv_format_date(const struct qval *v, char out[40])
{
	int64_t day = floor_div(v->ms, MS_DAY);
	int64_t rest = v->ms - day * MS_DAY;
	int y, m, d;
	civil_from_days(day, &y, &m, &d);
	if (!v->time) {
		snprintf(out, 40, "%04d-%02d-%02d", y, m, d);
		return;
	}
	int64_t s = rest / MS_SEC;
	int ms = (int)(rest % MS_SEC);
	if (ms)
		snprintf(out, 40, "%04d-%02d-%02dT%02d:%02d:%02d.%03d", y, m, d,
			 (int)(s / 3600), (int)(s / 60 % 60), (int)(s % 60),
			 ms);
	else
		snprintf(out, 40, "%04d-%02d-%02dT%02d:%02d:%02d", y, m, d,
			 (int)(s / 3600), (int)(s / 60 % 60), (int)(s % 60));
}

static const struct dur_unit {
	const char *name;
	int64_t ms;
	int months;
} DUR_UNITS[] = {
	{"ms", 1, 0},
	{"millisecond", 1, 0},
	{"milliseconds", 1, 0},
	{"s", MS_SEC, 0},
	{"sec", MS_SEC, 0},
	{"secs", MS_SEC, 0},
	{"second", MS_SEC, 0},
	{"seconds", MS_SEC, 0},
	{"m", MS_MIN, 0},
	{"min", MS_MIN, 0},
	{"mins", MS_MIN, 0},
	{"minute", MS_MIN, 0},
	{"minutes", MS_MIN, 0},
	{"h", MS_HOUR, 0},
	{"hr", MS_HOUR, 0},
	{"hrs", MS_HOUR, 0},
	{"hour", MS_HOUR, 0},
	{"hours", MS_HOUR, 0},
	{"d", MS_DAY, 0},
	{"day", MS_DAY, 0},
	{"days", MS_DAY, 0},
	{"w", 7 * MS_DAY, 0},
	{"wk", 7 * MS_DAY, 0},
	{"wks", 7 * MS_DAY, 0},
	{"week", 7 * MS_DAY, 0},
	{"weeks", 7 * MS_DAY, 0},
	{"M", 0, 1},
	{"mo", 0, 1},
	{"month", 0, 1},
	{"months", 0, 1},
	{"y", 0, 12},
	{"yr", 0, 12},
	{"yrs", 0, 12},
	{"year", 0, 12},
	{"years", 0, 12},
};

/* "3 days, 2 hours", "1d", "2 weeks 1 day": false when not one. */
static bool parse_dur(const char *s, size_t n, int64_t *ret_ms,
		      int32_t *ret_months)
{
	size_t i = 0;
	int64_t ms = 0;
	int64_t months = 0;
	int parts = 0;
	for (;;) {
		while (i < n && (isspace((unsigned char)s[i]) || s[i] == ','))
			i++;
		if (i >= n)
			break;
		size_t st = i;
		while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '.'))
			i++;
		if (i == st || i - st > 15)
			return false;
		char num[16];
		memcpy(num, s + st, i - st);
		num[i - st] = 0;
		double q = strtod(num, NULL);
		while (i < n && s[i] == ' ')
			i++;
		st = i;
		while (i < n && isalpha((unsigned char)s[i]))
			i++;
		if (i == st)
			return false;
		const struct dur_unit *u = NULL;
		for (size_t k = 0; k < ARRAY_SIZE(DUR_UNITS) && !u; k++) {
			size_t ul = strlen(DUR_UNITS[k].name);
			bool exact = ul == i - st &&
				     !memcmp(DUR_UNITS[k].name, s + st, ul);
			/* "M" is months, "m" minutes; longer names
			 * ignore case. */
			if (exact ||
			    (ul > 1 && ul == i - st &&
			     !strncasecmp(DUR_UNITS[k].name, s + st, ul)))
				u = &DUR_UNITS[k];
		}
		if (!u)
			return false;
		if (u->months)
			months += (int64_t)(q * u->months);
		else
			ms += (int64_t)(q * (double)u->ms);
		if (++parts > 16 || months > 1200000 || months < -1200000)
			return false;
	}
	if (!parts)
		return false;
	*ret_ms = ms;
	*ret_months = (int32_t)months;
	return true;
}

void qv_format_dur(int64_t ms, char out[96])
{
	static const struct {
		const char *name;
		int64_t ms;
	} U[] = {{"weeks", 7 * MS_DAY}, {"days", MS_DAY},
		 {"hours", MS_HOUR},	{"minutes", MS_MIN},
		 {"seconds", MS_SEC},	{"milliseconds", 1}};
	struct sbuf b = {0};
	if (ms < 0) {
		sb_putc(&b, '-');
		ms = -ms;
	}
	for (size_t i = 0; i < ARRAY_SIZE(U); i++) {
		if (ms >= U[i].ms) {
			int64_t q = ms / U[i].ms;
			ms -= q * U[i].ms;
			sb_printf(&b, "%s%lld %s", b.len > 1 ? ", " : "",
				  (long long)q, U[i].name);
		}
	}
	snprintf(out, 96, "%s", b.len > (b.s[0] == '-') ? b.s : "0 seconds");
	sb_free(&b);
}

static void format_dur_val(const struct qval *v, char out[96])
{
	int32_t mo = dur_months(v);
	if (!mo) {
		qv_format_dur(v->ms, out);
		return;
	}
	char rest[96];
	qv_format_dur(v->ms, rest);
	if (v->ms)
		snprintf(out, 96, "%d months, %.70s", mo, rest);
	else
		snprintf(out, 96, "%d months", mo);
}

static int64_t date_add(int64_t ms, int64_t add_ms, int32_t months, int sign)
{
	if (months) {
		int64_t day = floor_div(ms, MS_DAY);
		int64_t rest = ms - day * MS_DAY;
		int y, m, d;
		civil_from_days(day, &y, &m, &d);
		int64_t t = (int64_t)y * 12 + (m - 1) + sign * (int64_t)months;
		y = (int)floor_div(t, 12);
		m = (int)(t - (int64_t)y * 12) + 1;
		if (d > days_in_month(y, m))
			d = days_in_month(y, m);
		ms = days_from_civil(y, (unsigned)m, (unsigned)d) * MS_DAY +
		     rest;
	}
	return ms + sign * add_ms;
}

/* ---- values ----------------------------------------------------------- */

static struct qval V_NULL = {.t = QV_NULL};

static struct qval vnum(double d)
{
	return (struct qval){.t = QV_NUM, .num = d};
}

static struct qval vbool(bool b)
{
	return (struct qval){.t = QV_BOOL, .b = b};
}

static struct qval vstr(const char *s, size_t n)
{
	return (struct qval){.t = QV_STR, .s = s, .n = (uint32_t)n};
}

static struct qval vdate(int64_t ms, bool time)
{
	return (struct qval){.t = QV_DATE, .ms = ms, .time = time};
}

static struct qval vdur(int64_t ms, int32_t months)
{
	return (struct qval){.t = QV_DUR, .ms = ms, .n = (uint32_t)months};
}

static struct qval vlist(struct qval *items, size_t n)
{
	return (struct qval){.t = QV_LIST, .items = items, .n = (uint32_t)n};
}

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
static int link_cmp(const struct qval *a, const struct qval *b)
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
		return link_cmp(a, b);
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

static void text_of(const struct qval *v, struct sbuf *b)
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
		format_dur_val(v, buf);
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
			text_of(&v->items[i], b);
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
	text_of(v, &b);
	char *r = qarena_strndup(ar, sb_str(&b), b.len);
	sb_free(&b);
	return r;
}

/* ---- lexer ------------------------------------------------------------ */

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

bool eparser_uses_this(const struct eparser *p)
{
	return p->uses_this;
}

static bool ident_start(unsigned char c)
{
	return isalpha(c) || c == '_' || c >= 0x80;
}

static bool ident_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c >= 0x80;
}

static bool tag_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '-' || c == '/' || c >= 0x80;
}

/* A date literal at s: its length, or 0. */
static size_t date_len(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && i < 4 && isdigit((unsigned char)s[i]))
		i++;
	if (i != 4 || i >= n || s[i] != '-' || i + 1 >= n ||
	    !isdigit((unsigned char)s[i + 1]))
		return 0;
	size_t e = i;
	while (e < n &&
	       (isdigit((unsigned char)s[e]) || s[e] == '-' || s[e] == 'T' ||
		s[e] == ':' || s[e] == '.' || s[e] == 'Z' || s[e] == '+'))
		e++;
	while (e > i) {
		int64_t ms;
		bool tm;
		if (qv_parse_date(s, e, &ms, &tm) &&
		    (e >= n || !ident_char((unsigned char)s[e])))
			return e;
		e--;
	}
	return 0;
}

static int lex(struct eparser *p)
{
	const char *s = p->src;
	size_t n = p->len, i = p->pos;
	while (i < n && isspace((unsigned char)s[i]))
		i++;
	struct tok t = {.s = s + i};
	if (i >= n) {
		t.kind = TK_END;
		p->cur = t;
		p->have = true;
		return 0;
	}
	unsigned char c = (unsigned char)s[i];
	size_t st = i;
	size_t dl;
	if ((dl = date_len(s + i, n - i))) {
		t.kind = TK_DATE;
		i += dl;
		t.text = qarena_strndup(p->ar, s + st, dl);
	} else if (isdigit(c) || (c == '.' && i + 1 < n &&
				  isdigit((unsigned char)s[i + 1]))) {
		while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '.'))
			i++;
		if (i < n && (s[i] == 'e' || s[i] == 'E') && i + 1 < n &&
		    (isdigit((unsigned char)s[i + 1]) || s[i + 1] == '-')) {
			i += 2;
			while (i < n && isdigit((unsigned char)s[i]))
				i++;
		}
		_cleanup_free_ char *num = xstrndup(s + st, i - st);
		char *end;
		t.kind = TK_NUM;
		t.num = strtod(num, &end);
		if (*end)
			return eparser_fail(p,
					    "invalid number %s at offset %zu",
					    QUOTE(num), st);
	} else if (c == '"' || c == '\'') {
		struct sbuf b = {0};
		i++;
		while (i < n && s[i] != (char)c) {
			if (s[i] == '\\' && i + 1 < n) {
				i++;
				char e = s[i];
				sb_putc(&b, e == 'n'   ? '\n'
					    : e == 't' ? '\t'
						       : e);
			} else {
				sb_putc(&b, s[i]);
			}
			i++;
		}
		if (i >= n) {
			sb_free(&b);
			return eparser_fail(p,
					    "unterminated string starting at "
					    "offset %zu",
					    st);
		}
		i++;
		t.kind = TK_STR;
		t.text = qarena_strndup(p->ar, sb_str(&b), b.len);
		t.num = (double)b.len;
		sb_free(&b);
	} else if (c == '[' && i + 1 < n && s[i + 1] == '[') {
		const char *e = memmem(s + i + 2, n - i - 2, "]]", 2);
		if (!e)
			return eparser_fail(
				p, "unterminated [[link at offset %zu", st);
		size_t tl = (size_t)(e - (s + i + 2));
		const char *bar = memchr(s + i + 2, '|', tl);
		if (bar)
			tl = (size_t)(bar - (s + i + 2));
		const char *hash = memchr(s + i + 2, '#', tl);
		if (hash)
			tl = (size_t)(hash - (s + i + 2));
		t.kind = TK_LINK;
		t.text = qarena_strndup(p->ar, s + i + 2, tl);
		i = (size_t)(e - s) + 2;
	} else if (c == '#' && i + 1 < n && tag_char((unsigned char)s[i + 1])) {
		i++;
		while (i < n && tag_char((unsigned char)s[i]))
			i++;
		t.kind = TK_TAG;
		t.text = qarena_strndup(p->ar, s + st + 1, i - st - 1);
	} else if (ident_start(c)) {
		while (i < n &&
		       (ident_char((unsigned char)s[i]) ||
			(s[i] == '-' && p->dialect != EXPR_BASES && i + 1 < n &&
			 ident_start((unsigned char)s[i + 1]))))
			i++;
		t.kind = TK_IDENT;
		t.text = qarena_strndup(p->ar, s + st, i - st);
	} else {
		static const char *const OPS2[] = {
			"==", "!=", "<=", ">=", "&&", "||"};
		t.kind = TK_OP;
		i++;
		for (size_t k = 0; k < ARRAY_SIZE(OPS2); k++)
			if (i < n && s[st] == OPS2[k][0] &&
			    s[i] == OPS2[k][1]) {
				i++;
				break;
			}
		if (!strchr("=!<>+-*/%()[],.{}:&|", c) ||
		    (c == '&' && i - st < 2) || (c == '|' && i - st < 2))
			return eparser_fail(p,
					    "unexpected character '%c' at "
					    "offset %zu",
					    c >= 0x20 && c < 0x7f ? c : '?',
					    st);
	}
	t.len = i - st;
	p->cur = t;
	p->pos = i;
	p->have = true;
	return 0;
}

struct eparser *eparser_new(const char *src, size_t len,
			    enum expr_dialect dialect, struct qarena *ar)
{
	struct eparser *p = xcalloc(1, sizeof(*p));
	p->src = src;
	p->len = len;
	p->dialect = dialect;
	p->ar = ar;
	return p;
}

struct eparser *eparser_free(struct eparser *p)
{
	if (p) {
		free(p->err);
		free(p);
	}
	return NULL;
}

int eparser_fail(struct eparser *p, const char *fmt, ...)
{
	if (!p->err) {
		struct sbuf b = {0};
		va_list ap;
		va_start(ap, fmt);
		sb_vprintf(&b, fmt, ap);
		va_end(ap);
		p->err = sb_steal(&b);
	}
	/* Nothing after an error is read. */
	p->cur = (struct tok){.kind = TK_END, .s = p->src + p->len};
	p->have = true;
	p->pos = p->len;
	return -EINVAL;
}

const char *eparser_error(const struct eparser *p)
{
	return p->err;
}

const struct tok *eparser_peek(struct eparser *p)
{
	if (!p->have)
		lex(p);
	return &p->cur;
}

void eparser_skip(struct eparser *p)
{
	eparser_peek(p);
	p->have = false;
}

size_t eparser_offset(const struct eparser *p)
{
	return p->have ? (size_t)(p->cur.s - p->src) : p->pos;
}

bool eparser_keyword(struct eparser *p, const char *kw)
{
	const struct tok *t = eparser_peek(p);
	if (t->kind != TK_IDENT || strcasecmp(t->text, kw))
		return false;
	eparser_skip(p);
	return true;
}

bool eparser_op(struct eparser *p, const char *op)
{
	const struct tok *t = eparser_peek(p);
	if (t->kind != TK_OP || t->len != strlen(op) ||
	    memcmp(t->s, op, t->len))
		return false;
	eparser_skip(p);
	return true;
}

/* ---- functions -------------------------------------------------------- */

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

static const struct fn_def *find_fn(const struct fn_def *tab, size_t n,
				    const char *name, enum expr_dialect d)
{
	for (size_t i = 0; i < n; i++)
		if ((tab[i].dialects & (1 << d)) &&
		    !(tab == FUNCS ? strcasecmp : strcmp)(tab[i].name, name))
			return &tab[i];
	return NULL;
}

/* ---- parser ----------------------------------------------------------- */

static struct enode *node(struct eparser *p, enum node_kind k)
{
	if (++p->nodes > EXPR_MAX_NODES) {
		eparser_fail(p, "expression too large (over %d parts)",
			     EXPR_MAX_NODES);
		return NULL;
	}
	struct enode *e = qarena_alloc(p->ar, sizeof(*e));
	e->kind = (uint8_t)k;
	return e;
}

static int parse_or(struct eparser *p, struct enode **ret);

/* File fields known in each dialect. */
static const char *const FILE_FIELDS[] = {
	"name",	       "basename",   "path",   "folder",  "ext",
	"link",	       "size",	     "ctime",  "cday",	  "mtime",
	"mday",	       "tags",	     "etags",  "inlinks", "outlinks",
	"links",       "backlinks",  "embeds", "aliases", "day",
	"frontmatter", "properties", "file",
};

static bool known_file_field(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(FILE_FIELDS); i++)
		if (!strcmp(FILE_FIELDS[i], name))
			return true;
	return false;
}

static int parse_args(struct eparser *p, struct enode *e)
{
	struct ptrvec args = {0};
	if (!eparser_op(p, ")")) {
		for (;;) {
			struct enode *a;
			if (parse_or(p, &a) < 0) {
				pv_free(&args);
				return -EINVAL;
			}
			pv_push(&args, a);
			if (eparser_op(p, ")"))
				break;
			if (!eparser_op(p, ",")) {
				pv_free(&args);
				return eparser_fail(p,
						    "expected ',' or ')' at "
						    "offset %zu",
						    eparser_offset(p));
			}
		}
	}
	e->nargs = args.n;
	e->args = qarena_alloc(p->ar, (args.n + 1) * sizeof(*e->args));
	memcpy(e->args, args.v, args.n * sizeof(*e->args));
	pv_free(&args);
	return 0;
}

/* date(today), date(2024-01-05) and dur(3 days) take their argument
 * unquoted in Dataview: read it as a literal when it is one. */
static bool raw_literal(struct eparser *p, bool is_date, struct qval *ret)
{
	size_t i = p->pos;
	while (i < p->len && isspace((unsigned char)p->src[i]))
		i++;
	const char *close = memchr(p->src + i, ')', p->len - i);
	if (!close)
		return false;
	size_t n = (size_t)(close - (p->src + i));
	while (n && isspace((unsigned char)p->src[i + n - 1]))
		n--;
	const char *s = p->src + i;
	if (!n || memchr(s, '(', n) || memchr(s, '"', n) || memchr(s, '\'', n))
		return false;
	if (is_date) {
		static const char *const KW[] = {
			"today", "now", "tomorrow", "yesterday", "sow",
			"eow",	 "som", "eom",	    "soy",	 "eoy"};
		bool kw = false;
		for (size_t k = 0; k < ARRAY_SIZE(KW) && !kw; k++)
			kw = strlen(KW[k]) == n && !strncasecmp(KW[k], s, n);
		if (kw) {
			ret->t = QV_STR;
			ret->s = qarena_strndup(p->ar, s, n);
			ret->n = (uint32_t)n;
			ret->time = true; /* a keyword, resolved at eval */
		} else {
			int64_t ms;
			bool tm;
			if (!qv_parse_date(s, n, &ms, &tm))
				return false;
			*ret = vdate(ms, tm);
		}
	} else {
		int64_t ms;
		int32_t mo;
		if (!parse_dur(s, n, &ms, &mo))
			return false;
		*ret = vdur(ms, mo);
	}
	p->pos = (size_t)(close - p->src) + 1;
	p->have = false;
	return true;
}

static int parse_primary(struct eparser *p, struct enode **ret)
{
	const struct tok *t = eparser_peek(p);
	struct enode *e;
	switch (t->kind) {
	case TK_NUM:
		if (!(e = node(p, N_LIT)))
			return -EINVAL;
		e->lit = vnum(t->num);
		eparser_skip(p);
		break;
	case TK_STR:
		if (!(e = node(p, N_LIT)))
			return -EINVAL;
		e->lit = vstr(t->text, (size_t)t->num);
		eparser_skip(p);
		break;
	case TK_DATE: {
		if (!(e = node(p, N_LIT)))
			return -EINVAL;
		int64_t ms;
		bool tm;
		qv_parse_date(t->text, strlen(t->text), &ms, &tm);
		e->lit = vdate(ms, tm);
		eparser_skip(p);
		break;
	}
	case TK_LINK:
		if (!(e = node(p, N_LIT)))
			return -EINVAL;
		e->lit = (struct qval){.t = QV_LINK,
				       .s = t->text,
				       .n = (uint32_t)strlen(t->text)};
		/* Resolved at evaluation, against the index. */
		e->name = t->text;
		eparser_skip(p);
		break;
	case TK_TAG:
		return eparser_fail(p,
				    "a #tag is not an expression (offset "
				    "%zu): compare file.tags, e.g. "
				    "contains(file.tags, \"#%s\")",
				    eparser_offset(p), t->text);
	case TK_IDENT: {
		const char *name = t->text;
		if (!strcasecmp(name, "true") || !strcasecmp(name, "false") ||
		    !strcasecmp(name, "null")) {
			if (!(e = node(p, N_LIT)))
				return -EINVAL;
			e->lit = !strcasecmp(name, "null")
					 ? V_NULL
					 : vbool(!strcasecmp(name, "true"));
			eparser_skip(p);
			break;
		}
		eparser_skip(p);
		if (eparser_op(p, "(")) {
			const struct fn_def *f = find_fn(
				FUNCS, ARRAY_SIZE(FUNCS), name, p->dialect);
			if (!f)
				return eparser_fail(p,
						    "unsupported function %s()",
						    QUOTE(name));
			if (!(e = node(p, N_CALL)))
				return -EINVAL;
			e->op = f->id;
			e->name = f->name;
			struct qval lit;
			if (p->dialect != EXPR_BASES &&
			    (f->id == F_DATE || f->id == F_DUR) &&
			    raw_literal(p, f->id == F_DATE, &lit)) {
				if (lit.t == QV_STR && lit.time) {
					/* date(today): a keyword. */
					e->nargs = 1;
					e->args = qarena_alloc(
						p->ar, sizeof(*e->args));
					if (!(e->args[0] = node(p, N_LIT)))
						return -EINVAL;
					e->args[0]->lit = lit;
					e->args[0]->lit.time = false;
					break;
				}
				e->kind = N_LIT;
				e->lit = lit;
				break;
			}
			if (parse_args(p, e) < 0)
				return -EINVAL;
			if (e->nargs < f->min || e->nargs > f->max)
				return eparser_fail(p,
						    "%s() takes %u to %u "
						    "arguments, not %zu",
						    f->name, f->min, f->max,
						    e->nargs);
			break;
		}
		if (p->dialect == EXPR_BASES && !strcmp(name, "this"))
			return eparser_fail(p, "'this' in a base (the note "
					       "embedding it) is not "
					       "supported");
		if (!(e = node(p, N_IDENT)))
			return -EINVAL;
		e->name = name;
		if (!strcmp(name, "this"))
			p->uses_this = true;
		break;
	}
	case TK_OP:
		if (eparser_op(p, "(")) {
			if (parse_or(p, &e) < 0)
				return -EINVAL;
			if (!eparser_op(p, ")"))
				return eparser_fail(p,
						    "expected ')' at offset "
						    "%zu",
						    eparser_offset(p));
			break;
		}
		if (eparser_op(p, "[")) {
			if (!(e = node(p, N_LIST)))
				return -EINVAL;
			struct ptrvec items = {0};
			if (!eparser_op(p, "]")) {
				for (;;) {
					struct enode *a;
					if (parse_or(p, &a) < 0) {
						pv_free(&items);
						return -EINVAL;
					}
					pv_push(&items, a);
					if (eparser_op(p, "]"))
						break;
					if (!eparser_op(p, ",")) {
						pv_free(&items);
						return eparser_fail(
							p,
							"expected ',' or ']' "
							"at offset %zu",
							eparser_offset(p));
					}
				}
			}
			e->nargs = items.n;
			e->args = qarena_alloc(p->ar, (items.n + 1) *
							      sizeof(*e->args));
			memcpy(e->args, items.v, items.n * sizeof(*e->args));
			pv_free(&items);
			break;
		}
		if (t->s[0] == '{')
			return eparser_fail(p, "object literals { } are not "
					       "supported");
		/* fall through */
	default:
		if (t->kind == TK_END)
			return eparser_fail(p, "expression expected at the "
					       "end");
		return eparser_fail(p, "unexpected %s at offset %zu",
				    QUOTE(qarena_strndup(p->ar, t->s, t->len)),
				    eparser_offset(p));
	}
	*ret = e;
	return 0;
}

static int parse_postfix(struct eparser *p, struct enode **ret)
{
	struct enode *e;
	if (parse_primary(p, &e) < 0)
		return -EINVAL;
	for (;;) {
		if (eparser_op(p, ".")) {
			const struct tok *t = eparser_peek(p);
			if (t->kind != TK_IDENT)
				return eparser_fail(p,
						    "a field name must follow "
						    "'.' (offset %zu)",
						    eparser_offset(p));
			const char *name = t->text;
			eparser_skip(p);
			if (eparser_op(p, "(")) {
				if (p->dialect != EXPR_BASES)
					return eparser_fail(
						p,
						"method calls (.%s()) are "
						"not Dataview syntax: call "
						"%s(x, ...)",
						name, name);
				const struct fn_def *f =
					find_fn(METHODS, ARRAY_SIZE(METHODS),
						name, p->dialect);
				if (!f)
					return eparser_fail(
						p, "unsupported method .%s()",
						name);
				struct enode *m = node(p, N_METHOD);
				if (!m)
					return -EINVAL;
				m->op = f->id;
				m->name = f->name;
				m->a = e;
				if (parse_args(p, m) < 0)
					return -EINVAL;
				if (m->nargs + 1 < f->min ||
				    m->nargs + 1 > f->max)
					return eparser_fail(
						p,
						".%s() takes %u to %u "
						"arguments, not %zu",
						f->name, f->min - 1, f->max - 1,
						m->nargs);
				e = m;
				continue;
			}
			if (e->kind == N_IDENT && !strcmp(e->name, "file") &&
			    !known_file_field(name))
				return eparser_fail(p, "unknown field file.%s",
						    name);
			struct enode *d = node(p, N_DOT);
			if (!d)
				return -EINVAL;
			d->a = e;
			d->name = name;
			e = d;
		} else if (eparser_op(p, "[")) {
			struct enode *ix = node(p, N_INDEX);
			if (!ix)
				return -EINVAL;
			ix->a = e;
			if (parse_or(p, &ix->b) < 0)
				return -EINVAL;
			if (!eparser_op(p, "]"))
				return eparser_fail(p,
						    "expected ']' at offset "
						    "%zu",
						    eparser_offset(p));
			e = ix;
		} else {
			break;
		}
	}
	*ret = e;
	return 0;
}

static int enter(struct eparser *p)
{
	if (++p->depth > EXPR_MAX_DEPTH)
		return eparser_fail(p,
				    "expression nested too deeply (over %d "
				    "levels)",
				    EXPR_MAX_DEPTH);
	return 0;
}

static int parse_unary(struct eparser *p, struct enode **ret)
{
	if (enter(p) < 0)
		return -EINVAL;
	int r;
	if (eparser_op(p, "-")) {
		struct enode *e = node(p, N_NEG);
		if (!e || parse_unary(p, &e->a) < 0)
			return -EINVAL;
		*ret = e;
		r = 0;
	} else {
		r = parse_postfix(p, ret);
	}
	p->depth--;
	return r;
}

static int parse_bin_level(struct eparser *p, int level, struct enode **ret);

static struct enode *bin(struct eparser *p, int op, struct enode *a,
			 struct enode *b)
{
	struct enode *e = node(p, N_BIN);
	if (e) {
		e->op = (uint8_t)op;
		e->a = a;
		e->b = b;
	}
	return e;
}

/* Levels: 0 or, 1 and, 2 not, 3 comparison, 4 + -, 5 * / %. */
static int parse_bin_level(struct eparser *p, int level, struct enode **ret)
{
	struct enode *a, *b;
	if (enter(p) < 0)
		return -EINVAL;
	int r = 0;
	switch (level) {
	case 0:
	case 1:
		if ((r = parse_bin_level(p, level + 1, &a)) < 0)
			break;
		for (;;) {
			bool more = level == 0 ? (eparser_keyword(p, "or") ||
						  eparser_op(p, "||"))
					       : (eparser_keyword(p, "and") ||
						  eparser_op(p, "&&"));
			if (!more)
				break;
			if ((r = parse_bin_level(p, level + 1, &b)) < 0)
				break;
			if (!(a = bin(p, level == 0 ? B_OR : B_AND, a, b))) {
				r = -EINVAL;
				break;
			}
		}
		*ret = a;
		break;
	case 2:
		if (eparser_keyword(p, "not") || eparser_op(p, "!")) {
			struct enode *e = node(p, N_NOT);
			if (!e || (r = parse_bin_level(p, 2, &e->a)) < 0) {
				r = -EINVAL;
				break;
			}
			*ret = e;
			break;
		}
		r = parse_bin_level(p, 3, ret);
		break;
	case 3: {
		if ((r = parse_bin_level(p, 4, &a)) < 0)
			break;
		static const struct {
			const char *op;
			int b;
		} CMP[] = {{"==", B_EQ}, {"=", B_EQ},  {"!=", B_NE},
			   {"<=", B_LE}, {">=", B_GE}, {"<", B_LT},
			   {">", B_GT}};
		int op = -1;
		for (size_t k = 0; k < ARRAY_SIZE(CMP) && op < 0; k++)
			if (eparser_op(p, CMP[k].op))
				op = CMP[k].b;
		if (op < 0 && p->dialect == EXPR_PLAIN) {
			if (eparser_keyword(p, "contains")) {
				op = B_CONTAINS;
			} else if (eparser_keyword(p, "exists") ||
				   eparser_keyword(p, "missing")) {
				bool ex = !strncasecmp(p->cur.s, "exists", 6);
				struct enode *e =
					node(p, ex ? N_EXISTS : N_MISSING);
				if (!e) {
					r = -EINVAL;
					break;
				}
				e->a = a;
				*ret = e;
				break;
			}
		}
		if (op < 0) {
			*ret = a;
			break;
		}
		if ((r = parse_bin_level(p, 4, &b)) < 0)
			break;
		if (!(*ret = bin(p, op, a, b)))
			r = -EINVAL;
		break;
	}
	case 4:
	case 5:
		if ((r = level == 4 ? parse_bin_level(p, 5, &a)
				    : parse_unary(p, &a)) < 0)
			break;
		for (;;) {
			int op = -1;
			if (level == 4)
				op = eparser_op(p, "+")	  ? B_ADD
				     : eparser_op(p, "-") ? B_SUB
							  : -1;
			else
				op = eparser_op(p, "*")	  ? B_MUL
				     : eparser_op(p, "/") ? B_DIV
				     : eparser_op(p, "%") ? B_MOD
							  : -1;
			if (op < 0)
				break;
			if ((r = level == 4 ? parse_bin_level(p, 5, &b)
					    : parse_unary(p, &b)) < 0)
				break;
			if (!(a = bin(p, op, a, b))) {
				r = -EINVAL;
				break;
			}
		}
		*ret = a;
		break;
	}
	p->depth--;
	return r < 0 || p->err ? -EINVAL : 0;
}

static int parse_or(struct eparser *p, struct enode **ret)
{
	return parse_bin_level(p, 0, ret);
}

int eparser_expr(struct eparser *p, struct enode **ret)
{
	if (p->err)
		return -EINVAL;
	return parse_or(p, ret);
}

int expr_parse(const char *src, enum expr_dialect dialect, struct qarena *ar,
	       struct enode **ret, char **ret_msg)
{
	size_t len = strlen(src);
	if (len > EXPR_MAX_LEN) {
		*ret_msg = xasprintf("expression too long (%zu bytes; the "
				     "limit is %u)",
				     len, EXPR_MAX_LEN);
		return -EINVAL;
	}
	struct eparser *p = eparser_new(src, len, dialect, ar);
	struct enode *e;
	int r = eparser_expr(p, &e);
	if (r >= 0 && eparser_peek(p)->kind != TK_END)
		r = eparser_fail(p, "unexpected %s at offset %zu",
				 QUOTE(qarena_strndup(ar, eparser_peek(p)->s,
						      eparser_peek(p)->len)),
				 eparser_offset(p));
	if (r < 0)
		*ret_msg = xstrdup(eparser_error(p));
	else
		*ret = e;
	eparser_free(p);
	return r;
}

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

static struct qval link_to(struct expr_env *env, const char *target,
			   const struct note *from)
{
	bool file = false;
	const struct note *n =
		index_resolve(env->ix, from, target, LINK_WIKI, &file);
	const char *s = n ? n->path : target;
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
		return link_to(env, t, row ? row->note : NULL);
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
	if (!props_get(row->note->props, row->note->props_len, key, &pv))
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
	for (size_t i = 0; i < n->ntags; i++) {
		const char *t = n->tags[i];
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

static struct qval links_list(struct expr_env *env, const struct note *n,
			      int which)
{
	/* which: 0 outgoing, 1 embeds, 2 incoming. Each target once. */
	size_t cap = which == 2 ? n->incoming.n : n->nlinks;
	struct qval *items = qarena_alloc(env->ar, (cap + 1) * sizeof(*items));
	size_t k = 0;
	for (size_t i = 0; i < cap; i++) {
		const char *s;
		if (which == 2) {
			const struct link *l = n->incoming.v[i];
			s = l->src->path;
		} else {
			const struct link *l = &n->links[i];
			if (!*l->target)
				continue;
			bool embed = l->kind == LINK_EMBED ||
				     l->kind == LINK_MD_EMBED;
			if (which == 1 && !embed)
				continue;
			s = l->to ? l->to->path : l->target;
		}
		struct qval v = {
			.t = QV_LINK, .s = s, .n = (uint32_t)strlen(s)};
		bool dup = false;
		for (size_t j = 0; j < k && !dup; j++)
			dup = link_cmp(&items[j], &v) == 0;
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
	while (props_next(n->props, n->props_len, &pos, &k, &pv)) {
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

static struct qval file_field(struct expr_env *env, const struct qrow *row,
			      const char *f)
{
	const struct note *n = row->note;
	const char *path = row->path;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *dot = strrchr(base, '.');
	size_t stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	bool bases = env->dialect == EXPR_BASES;
	if (!strcmp(f, "name"))
		return vstr(base, bases ? strlen(base) : stem);
	if (!strcmp(f, "basename"))
		return vstr(base, stem);
	if (!strcmp(f, "path"))
		return vstr(path, strlen(path));
	if (!strcmp(f, "folder"))
		return vstr(path, base > path ? (size_t)(base - path - 1) : 0);
	if (!strcmp(f, "ext"))
		return dot && dot != base ? vstr(dot + 1, strlen(dot + 1))
					  : vstr("", 0);
	if (!strcmp(f, "link") || !strcmp(f, "file"))
		return (struct qval){
			.t = QV_LINK, .s = path, .n = (uint32_t)strlen(path)};
	if (!n)
		row_stat(env, row);
	int64_t size = n ? n->size : row->size;
	int64_t mtime_ns = n ? n->mtime_ns : row->mtime_ns;
	int64_t btime = n ? n->btime : row->btime;
	if (!strcmp(f, "size"))
		return vnum((double)size);
	if (!strcmp(f, "mtime") || !strcmp(f, "mday")) {
		int64_t ms = local_ms_of_ns(mtime_ns);
		if (f[1] == 'd')
			return vdate(floor_div(ms, MS_DAY) * MS_DAY, false);
		return vdate(ms, true);
	}
	if (!strcmp(f, "ctime") || !strcmp(f, "cday")) {
		int64_t ms = local_ms_of_ns(btime * 1000000000LL);
		if (f[1] == 'd')
			return vdate(floor_div(ms, MS_DAY) * MS_DAY, false);
		return vdate(ms, true);
	}
	if (!strcmp(f, "day")) {
		/* A date in the file name (YYYY-MM-DD or YYYYMMDD). */
		for (size_t i = 0; i + 10 <= stem; i++) {
			int64_t ms;
			bool tm;
			if (isdigit((unsigned char)base[i]) &&
			    qv_parse_date(base + i, 10, &ms, &tm))
				return vdate(ms, false);
		}
		return V_NULL;
	}
	if (!n)
		return !strcmp(f, "frontmatter") || !strcmp(f, "properties")
			       ? V_NULL
			       : vlist(NULL, 0);
	if (!strcmp(f, "tags"))
		return bases ? strv_list(env, n->tags, n->ntags, NULL)
			     : tags_with_parents(env, n);
	if (!strcmp(f, "etags"))
		return strv_list(env, n->tags, n->ntags, "#");
	if (!strcmp(f, "aliases"))
		return strv_list(env, n->aliases, n->naliases, NULL);
	if (!strcmp(f, "outlinks") || !strcmp(f, "links"))
		return links_list(env, n, 0);
	if (!strcmp(f, "embeds"))
		return links_list(env, n, 1);
	if (!strcmp(f, "inlinks") || !strcmp(f, "backlinks"))
		return links_list(env, n, 2);
	if (!strcmp(f, "frontmatter") || !strcmp(f, "properties"))
		return frontmatter_obj(env, n);
	return V_NULL;
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
static bool contains(const struct qval *h, const struct qval *nd, int mode)
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
						 ? contains(x, nd, mode)
						 : eq(x, nd)))
				return true;
		}
		return false;
	case QV_LINK:
		return nd->t == QV_LINK	 ? link_cmp(h, nd) == 0
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
	return floor_div(ms, MS_DAY) * MS_DAY;
}

static struct qval date_keyword(struct expr_env *env, const char *s, size_t n)
{
	int64_t today = start_of_day(env->now_ms);
	int y, m, d;
	civil_from_days(floor_div(today, MS_DAY), &y, &m, &d);
	int64_t days = floor_div(today, MS_DAY);
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
		return vdate(days_from_civil(y, (unsigned)m, 1) * MS_DAY,
			     false);
	case 7:
		return vdate(days_from_civil(y, (unsigned)m,
					     (unsigned)days_in_month(y, m)) *
				     MS_DAY,
			     false);
	case 8:
		return vdate(days_from_civil(y, 1, 1) * MS_DAY, false);
	case 9:
		return vdate(days_from_civil(y, 12, 31) * MS_DAY, false);
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
	if (v->t == QV_STR && parse_dur(v->s, v->n, &ms, &mo))
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
	for (size_t i = 0; i < n->ntags; i++) {
		const char *f = n->fold_tags[i];
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

static struct qval eval(struct expr_env *env, const struct qrow *row,
			const struct enode *e);

static struct qval call_fn(struct expr_env *env, const struct qrow *row,
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
		struct qval c = eval(env, row, e->args[0]);
		if (qv_truthy(&c))
			return eval(env, row, e->args[1]);
		return e->nargs > 2 ? eval(env, row, e->args[2]) : V_NULL;
	}
	for (size_t i = 0; i < e->nargs; i++)
		a[k++] = eval(env, row, e->args[i]);
	switch (e->op) {
	case F_CONTAINS:
		return vbool(contains(&a[0], &a[1], 0));
	case F_ICONTAINS:
		return vbool(contains(&a[0], &a[1], 1));
	case F_ECONTAINS:
		return vbool(contains(&a[0], &a[1], 2));
	case F_CONTAINS_ALL:
	case F_CONTAINS_ANY: {
		bool all = e->op == F_CONTAINS_ALL;
		for (size_t i = 1; i < na; i++)
			if (contains(&a[0], &a[i], 2) != all)
				return vbool(!all);
		return vbool(all);
	}
	case F_DATE:
		return fn_date(env, &a[0]);
	case F_DUR:
		return fn_dur(env, &a[0]);
	case F_LENGTH:
		return a[0].t == QV_LIST || a[0].t == QV_STR ? vnum(a[0].n)
		       : a[0].t == QV_NULL		     ? vnum(0)
							     : V_NULL;
	case F_LOWER:
		return fn_lower(env, &a[0]);
	case F_UPPER:
		return fn_upper(env, &a[0]);
	case F_DEFAULT:
		return a[0].t == QV_NULL ? a[1] : a[0];
	case F_NUMBER:
		return fn_number(env, &a[0]);
	case F_STRING:
	case F_TOSTRING:
		return fn_string(env, &a[0]);
	case F_ROUND:
		if (a[0].t != QV_NUM)
			return V_NULL;
		return vnum(round_to(a[0].num, na > 1 && a[1].t == QV_NUM
						       ? (int)a[1].num
						       : 0));
	case F_TOFIXED: {
		if (a[0].t != QV_NUM || a[1].t != QV_NUM || a[1].num < 0 ||
		    a[1].num > 20)
			return V_NULL;
		char buf[400];
		snprintf(buf, sizeof(buf), "%.*f", (int)a[1].num, a[0].num);
		char *s = qarena_strndup(env->ar, buf, strlen(buf));
		return vstr(s, strlen(s));
	}
	case F_ABS:
		return a[0].t == QV_NUM ? vnum(fabs(a[0].num)) : V_NULL;
	case F_FLOOR:
		return a[0].t == QV_NUM ? vnum(floor(a[0].num)) : V_NULL;
	case F_CEIL:
		return a[0].t == QV_NUM ? vnum(ceil(a[0].num)) : V_NULL;
	case F_MIN:
	case F_MAX:
	case F_SUM: {
		const struct qval *xs = a;
		size_t n = na;
		if (na == 1 && a[0].t == QV_LIST) {
			xs = a[0].items;
			n = a[0].n;
		}
		if (e->op == F_SUM) {
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
			int c = best.t == QV_NULL ? 0 : qv_cmp(&xs[i], &best);
			if (best.t == QV_NULL ||
			    (e->op == F_MIN ? c < 0 : c > 0))
				best = xs[i];
		}
		return best;
	}
	case F_STARTSWITH:
	case F_ENDSWITH:
		if (a[0].t != QV_STR || a[1].t != QV_STR || a[1].n > a[0].n)
			return vbool(false);
		return vbool(!memcmp(e->op == F_STARTSWITH
					     ? a[0].s
					     : a[0].s + a[0].n - a[1].n,
				     a[1].s, a[1].n));
	case F_LIST: {
		struct qval *items =
			qarena_alloc(env->ar, (na + 1) * sizeof(*items));
		memcpy(items, a, na * sizeof(*items));
		return vlist(items, na);
	}
	case F_JOIN: {
		if (a[0].t != QV_LIST)
			return fn_string(env, &a[0]);
		struct sbuf b = {0};
		const char *sep = ", ";
		size_t sl = 2;
		if (na > 1 && a[1].t == QV_STR) {
			sep = a[1].s;
			sl = a[1].n;
		}
		for (uint32_t i = 0; i < a[0].n; i++) {
			if (i)
				sb_add(&b, sep, sl);
			text_of(&a[0].items[i], &b);
		}
		char *s = qarena_strndup(env->ar, sb_str(&b), b.len);
		size_t n = b.len;
		sb_free(&b);
		return vstr(s, n);
	}
	case F_TYPEOF: {
		const char *t = type_name(a[0].t);
		return vstr(t, strlen(t));
	}
	case F_ISTYPE: {
		if (a[1].t != QV_STR)
			return vbool(false);
		const char *t = type_name(a[0].t);
		const char *w = a[1].s;
		return vbool(strlen(t) == a[1].n && !strncasecmp(t, w, a[1].n));
	}
	case F_NONNULL: {
		if (a[0].t != QV_LIST)
			return a[0];
		struct qval *items =
			qarena_alloc(env->ar, (a[0].n + 1) * sizeof(*items));
		size_t k2 = 0;
		for (uint32_t i = 0; i < a[0].n; i++)
			if (a[0].items[i].t != QV_NULL)
				items[k2++] = a[0].items[i];
		return vlist(items, k2);
	}
	case F_STRIPTIME:
		return a[0].t == QV_DATE ? vdate(start_of_day(a[0].ms), false)
					 : V_NULL;
	case F_LINK:
		if (a[0].t == QV_LINK)
			return a[0];
		if (a[0].t != QV_STR)
			return V_NULL;
		return link_to(env, qarena_strndup(env->ar, a[0].s, a[0].n),
			       NULL);
	case F_NOW:
		return vdate(env->now_ms, true);
	case F_TODAY:
		return vdate(start_of_day(env->now_ms), false);
	case F_ISEMPTY:
		return vbool(
			a[0].t == QV_NULL ||
			((a[0].t == QV_STR || a[0].t == QV_LIST) && !a[0].n) ||
			(a[0].t == QV_OBJ && a[0].n <= 2));
	case F_TRIM: {
		if (a[0].t != QV_STR)
			return V_NULL;
		const char *s = a[0].s;
		size_t n = a[0].n;
		while (n && isspace((unsigned char)*s)) {
			s++;
			n--;
		}
		while (n && isspace((unsigned char)s[n - 1]))
			n--;
		return vstr(s, n);
	}
	case F_REVERSE:
	case F_SORT:
	case F_UNIQUE: {
		if (a[0].t != QV_LIST)
			return a[0].t == QV_STR && e->op == F_REVERSE ? V_NULL
								      : a[0];
		uint32_t n = a[0].n;
		struct qval *items =
			qarena_alloc(env->ar, (n + 1) * sizeof(*items));
		size_t k2 = 0;
		for (uint32_t i = 0; i < n; i++) {
			const struct qval *x =
				&a[0].items[e->op == F_REVERSE ? n - 1 - i : i];
			bool dup = false;
			for (size_t j = 0; e->op == F_UNIQUE && j < k2 && !dup;
			     j++)
				dup = eq(&items[j], x);
			if (!dup)
				items[k2++] = *x;
		}
		if (e->op == F_SORT)
			for (size_t i = 1; i < k2; i++)
				for (size_t j = i;
				     j > 0 &&
				     qv_cmp(&items[j - 1], &items[j]) > 0;
				     j--) {
					struct qval t = items[j];
					items[j] = items[j - 1];
					items[j - 1] = t;
				}
		return vlist(items, k2);
	}
	case F_HASTAG:
		if (a[0].t != QV_FILE)
			return vbool(false);
		for (size_t i = 1; i < na; i++)
			if (has_tag(a[0].row->note, &a[i]))
				return vbool(true);
		return vbool(false);
	case F_INFOLDER:
		return vbool(a[0].t == QV_FILE && in_folder(a[0].row, &a[1]));
	case F_HASLINK: {
		if (a[0].t != QV_FILE || !a[0].row->note)
			return vbool(false);
		struct qval target = a[1];
		if (target.t == QV_STR)
			target = link_to(
				env, qarena_strndup(env->ar, a[1].s, a[1].n),
				NULL);
		if (target.t == QV_FILE)
			target = (struct qval){
				.t = QV_LINK,
				.s = target.row->path,
				.n = (uint32_t)strlen(target.row->path)};
		struct qval l = links_list(env, a[0].row->note, 0);
		return vbool(contains(&l, &target, 2));
	}
	case F_HASPROPERTY: {
		if (a[0].t != QV_FILE || a[1].t != QV_STR || !a[0].row->note)
			return vbool(false);
		_cleanup_free_ char *key = xstrndup(a[1].s, a[1].n);
		struct prop_val pv;
		return vbool(props_get(a[0].row->note->props,
				       a[0].row->note->props_len, key, &pv));
	}
	}
	return V_NULL;
}

/* ---- evaluation: operators -------------------------------------------- */

static struct qval date_dur_str(const struct qval *v)
{
	/* Bases: date + "1 week" */
	int64_t ms;
	int32_t mo;
	if (v->t == QV_STR && parse_dur(v->s, v->n, &ms, &mo))
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
			return vdate(date_add(a.ms, b.ms, dur_months(&b), 1),
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
			text_of(&a, &s);
			text_of(&b, &s);
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
			return vdate(date_add(a.ms, b.ms, dur_months(&b), -1),
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
			struct qval v = eval(env, r.row, env->formulas[i]);
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
		lr->path = n->path;
		if (!strcmp(name, "file"))
			return (struct qval){.t = QV_FILE, .row = lr};
		return note_prop(env, lr, name, NULL);
	}
	case QV_DATE: {
		int64_t day = floor_div(r.ms, MS_DAY);
		int64_t rest = r.ms - day * MS_DAY;
		int y, m, d;
		civil_from_days(day, &y, &m, &d);
		if (!strcmp(name, "year"))
			return vnum(y);
		if (!strcmp(name, "month"))
			return vnum(m);
		if (!strcmp(name, "day"))
			return vnum(d);
		if (!strcmp(name, "hour"))
			return vnum((double)(rest / MS_HOUR));
		if (!strcmp(name, "minute"))
			return vnum((double)(rest / MS_MIN % 60));
		if (!strcmp(name, "second"))
			return vnum((double)(rest / MS_SEC % 60));
		if (!strcmp(name, "weekday"))
			return vnum((double)(((day % 7) + 7 + 3) % 7 + 1));
		return V_NULL;
	}
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

static struct qval eval(struct expr_env *env, const struct qrow *row,
			const struct enode *e)
{
	switch (e->kind) {
	case N_LIT:
		if (e->lit.t == QV_LINK)
			return link_to(env, e->name, NULL);
		return e->lit;
	case N_IDENT: {
		const char *n = e->name;
		if (!strcmp(n, "file"))
			return (struct qval){.t = QV_FILE, .row = row};
		if (env->dialect != EXPR_BASES && !strcmp(n, "this"))
			return env->this_row
				       ? (struct qval){.t = QV_NOTE,
						       .row = env->this_row}
				       : V_NULL;
		if (env->dialect == EXPR_BASES) {
			if (!strcmp(n, "note"))
				return (struct qval){.t = QV_NOTE, .row = row};
			if (!strcmp(n, "formula"))
				return (struct qval){.t = QV_FORMULAS,
						     .row = row};
		}
		return note_prop(env, row, n, (uint8_t *)&e->ptype);
	}
	case N_DOT:
		return member(env, row, eval(env, row, e->a), e->name);
	case N_METHOD: {
		struct qval r = eval(env, row, e->a);
		return call_fn(env, row, e, &r);
	}
	case N_CALL:
		return call_fn(env, row, e, NULL);
	case N_INDEX: {
		struct qval a = eval(env, row, e->a);
		struct qval i = eval(env, row, e->b);
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
			items[i] = eval(env, row, e->args[i]);
		return vlist(items, e->nargs);
	}
	case N_NEG: {
		struct qval a = eval(env, row, e->a);
		if (a.t == QV_NUM)
			return vnum(-a.num);
		if (a.t == QV_DUR)
			return vdur(-a.ms, -dur_months(&a));
		return V_NULL;
	}
	case N_NOT: {
		struct qval a = eval(env, row, e->a);
		return vbool(!qv_truthy(&a));
	}
	case N_EXISTS:
	case N_MISSING: {
		struct qval a = eval(env, row, e->a);
		bool there = a.t != QV_NULL &&
			     !((a.t == QV_STR || a.t == QV_LIST) && !a.n);
		return vbool(e->kind == N_EXISTS ? there : !there);
	}
	case N_BIN: {
		if (e->op == B_AND || e->op == B_OR) {
			struct qval a = eval(env, row, e->a);
			bool t = qv_truthy(&a);
			if (e->op == B_AND ? !t : t)
				return vbool(t);
			struct qval b = eval(env, row, e->b);
			return vbool(qv_truthy(&b));
		}
		struct qval a = eval(env, row, e->a);
		struct qval b = eval(env, row, e->b);
		if (e->op == B_CONTAINS)
			return vbool(contains(&a, &b, 0));
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
	*ret = eval(env, row, e);
}

int expr_property(const char *id, struct qarena *ar, struct enode **ret,
		  char **ret_msg)
{
	static const char *const PREFIX[] = {"file.", "formula.", "note."};
	struct enode *e = qarena_alloc(ar, sizeof(*e));
	for (size_t i = 0; i < ARRAY_SIZE(PREFIX); i++) {
		size_t pl = strlen(PREFIX[i]);
		if (strncmp(id, PREFIX[i], pl))
			continue;
		const char *rest = id + pl;
		if (!*rest)
			break;
		if (i == 2) {
			e->kind = N_IDENT;
			e->name = qarena_strndup(ar, rest, strlen(rest));
			*ret = e;
			return 0;
		}
		if (i == 0 && !known_file_field(rest)) {
			*ret_msg = xasprintf("unknown property %s", QUOTE(id));
			return -EINVAL;
		}
		struct enode *base = qarena_alloc(ar, sizeof(*base));
		base->kind = N_IDENT;
		base->name = i == 0 ? "file" : "formula";
		e->kind = N_DOT;
		e->a = base;
		e->name = qarena_strndup(ar, rest, strlen(rest));
		*ret = e;
		return 0;
	}
	if (!*id) {
		*ret_msg = xstrdup("empty property name");
		return -EINVAL;
	}
	e->kind = N_IDENT;
	e->name = qarena_strndup(ar, id, strlen(id));
	*ret = e;
	return 0;
}
