/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Task lines, their emoji fields, and the compact string a note keeps
 * them in. The fields are read as the Tasks plugin reads its emoji
 * format: repeatedly from the end of the text back (each field anchored
 * at the end, a field found further left replacing one found before,
 * trailing tags stepped over and kept), at most 20 rounds.
 */
#include "tasks.h"
#include "u8.h"
#include "util.h"

#include <string.h>
#include <utf8proc.h>

static const char *const DATE_NAMES[TD_COUNT] = {
	[TD_DUE] = "due",	  [TD_SCHEDULED] = "scheduled",
	[TD_START] = "start",	  [TD_DONE] = "done",
	[TD_CREATED] = "created", [TD_CANCELLED] = "cancelled",
};

const char *task_date_name(enum task_date d)
{
	return DATE_NAMES[d];
}

const char *task_status_name(enum task_status s)
{
	static const char *const N[] = {"todo", "in_progress", "done",
					"cancelled"};
	return N[s];
}

const char *task_priority_name(enum task_priority p)
{
	static const char *const N[] = {"lowest", "low",  "normal",
					"medium", "high", "highest"};
	return N[p];
}

enum task_status task_symbol_status(int32_t symbol)
{
	switch (symbol) {
	case 'x':
	case 'X':
		return TASK_DONE;
	case '/':
		return TASK_IN_PROGRESS;
	case '-':
		return TASK_CANCELLED;
	default:
		return TASK_TODO;
	}
}

void task_symbol_utf8(int32_t symbol, char out[8])
{
	utf8proc_ssize_t n =
		utf8proc_encode_char(symbol, (utf8proc_uint8_t *)out);
	out[n > 0 ? n : 0] = 0;
}

/* ---- the line ---------------------------------------------------------- */

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

bool task_line_at(const char *text, size_t ls, size_t le, struct task_line *ret)
{
	size_t i = ls;
	/* Indentation, quotes and callouts: blanks and '>'. */
	while (i < le && (blank(text[i]) || text[i] == '>'))
		i++;
	if (i >= le)
		return false;
	if (text[i] == '-' || text[i] == '*' || text[i] == '+') {
		i++;
	} else {
		size_t d = i;
		while (i < le && i - d < 9 && text[i] >= '0' && text[i] <= '9')
			i++;
		if (i == d || i >= le || (text[i] != '.' && text[i] != ')'))
			return false;
		i++;
	}
	if (i >= le || !blank(text[i]))
		return false;
	while (i < le && blank(text[i]))
		i++;
	if (i + 2 >= le || text[i] != '[')
		return false;
	int32_t cp;
	int l = u8_decode(text + i + 1, le - i - 1, &cp);
	if (l <= 0 || cp < 0x20 || cp == 0x7f || cp == '[' || cp == ']')
		return false;
	size_t close = i + 1 + (size_t)l;
	if (close >= le || text[close] != ']')
		return false;
	size_t t = close + 1;
	/* "- [ ]" alone, or a blank before the text ("- [ ]x" is text). */
	if (t < le && !blank(text[t]) && text[t] != '\r')
		return false;
	while (t < le && blank(text[t]))
		t++;
	size_t e = le;
	while (e > t && (blank(text[e - 1]) || text[e - 1] == '\r'))
		e--;
	ret->sym_off = i + 1;
	ret->sym_len = (size_t)l;
	ret->symbol = cp;
	ret->text_off = t;
	ret->text_end = e;
	return true;
}

/* ---- fields ------------------------------------------------------------ */

#define VS16 "\xef\xb8\x8f" /* U+FE0F, the emoji presentation selector */

struct emoji {
	const char *s;
	int what; /* FLD_*, or a date (enum task_date) */
	int prio;
};

enum {
	FLD_PRIO = TD_COUNT,
	FLD_RECUR,
	FLD_DONE_ACTION,
	FLD_ID,
	FLD_DEPS,
};

static const struct emoji EMOJI[] = {
	{"📅", TD_DUE, 0},
	{"📆", TD_DUE, 0},
	{"🗓" VS16, TD_DUE, 0},
	{"🗓", TD_DUE, 0},
	{"⏳", TD_SCHEDULED, 0},
	{"⌛", TD_SCHEDULED, 0},
	{"🛫", TD_START, 0},
	{"✅", TD_DONE, 0},
	{"➕", TD_CREATED, 0},
	{"❌", TD_CANCELLED, 0},
	{"🔺", FLD_PRIO, TP_HIGHEST},
	{"⏫", FLD_PRIO, TP_HIGH},
	{"🔼", FLD_PRIO, TP_MEDIUM},
	{"🔽", FLD_PRIO, TP_LOW},
	{"⏬", FLD_PRIO, TP_LOWEST},
	{"🔁", FLD_RECUR, 0},
	{"🏁", FLD_DONE_ACTION, 0},
	{"🆔", FLD_ID, 0},
	{"⛔" VS16, FLD_DEPS, 0},
	{"⛔", FLD_DEPS, 0},
};

/* Whether s[0, e) ends with the emoji; its start. */
static bool ends_with(const char *s, size_t e, const char *em, size_t *ret)
{
	size_t n = strlen(em);
	if (e < n || memcmp(s + e - n, em, n))
		return false;
	*ret = e - n;
	return true;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alnum(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static int32_t days_from_civil(int y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return (int32_t)(era * 146097 + (int)doe - 719468);
}

/* "YYYY-MM-DD" at s: its day, or TASK_NO_DATE when it is no date. */
static int32_t parse_day(const char *s)
{
	for (int i = 0; i < 10; i++)
		if (i == 4 || i == 7 ? s[i] != '-' : !is_digit(s[i]))
			return TASK_NO_DATE;
	int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 +
		(s[3] - '0');
	unsigned m = (unsigned)((s[5] - '0') * 10 + (s[6] - '0'));
	unsigned d = (unsigned)((s[8] - '0') * 10 + (s[9] - '0'));
	static const unsigned MDAYS[] = {31, 29, 31, 30, 31, 30,
					 31, 31, 30, 31, 30, 31};
	if (m < 1 || m > 12 || d < 1 || d > MDAYS[m - 1])
		return TASK_NO_DATE;
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (m == 2 && d == 29 && !leap)
		return TASK_NO_DATE;
	return days_from_civil(y, m, d);
}

/* Back from e over bytes the predicate accepts. */
static size_t back_over(const char *s, size_t e, const char *set)
{
	while (e > 0) {
		char c = s[e - 1];
		if (!is_alnum(c) && !strchr(set, c))
			break;
		e--;
	}
	return e;
}

static size_t skip_blanks_back(const char *s, size_t e)
{
	while (e > 0 && blank(s[e - 1]))
		e--;
	return e;
}

/* The value of a field whose emoji is em, at the end of s[0, e): where
 * the field starts (its emoji), and the value's span. set: the value's
 * characters besides letters and digits; date: a YYYY-MM-DD. */
static bool field_at(const char *s, size_t e, const struct emoji *em,
		     size_t *ret_start, size_t *ret_v)
{
	size_t v, st;
	if (em->what < TD_COUNT) {
		if (e < 10 || parse_day(s + e - 10) == TASK_NO_DATE)
			return false;
		v = e - 10;
		size_t b = skip_blanks_back(s, v);
		if (!ends_with(s, b, em->s, &st))
			return false;
	} else if (em->what == FLD_PRIO) {
		/* A priority may carry the emoji presentation selector. */
		size_t pe = e;
		if (pe >= 3 && !memcmp(s + pe - 3, VS16, 3))
			pe -= 3;
		if (!ends_with(s, pe, em->s, &st))
			return false;
		v = e;
	} else {
		const char *set = em->what == FLD_RECUR	 ? ", !"
				  : em->what == FLD_DEPS ? "-_, "
				  : em->what == FLD_ID	 ? "-_"
							 : "";
		v = back_over(s, e, set);
		if (v == e)
			return false;
		size_t b = v;
		if (em->what != FLD_RECUR)
			b = skip_blanks_back(s, v);
		if (!ends_with(s, b, em->s, &st))
			return false;
		if (em->what == FLD_RECUR || em->what == FLD_DEPS)
			while (v < e && blank(s[v]))
				v++;
		if (em->what == FLD_DONE_ACTION)
			for (size_t k = v; k < e; k++)
				if (is_digit(s[k]))
					return false;
	}
	*ret_start = st;
	*ret_v = v;
	return true;
}

static void keep_span(struct task_fields *f, size_t a, size_t b)
{
	if (a >= b || f->nkeep * 2 >= ARRAY_SIZE(f->keep))
		return;
	f->keep[2 * f->nkeep] = a;
	f->keep[2 * f->nkeep + 1] = b;
	f->nkeep++;
}

/* A trailing "#tag" (after a blank or at the start): where it starts. */
static bool trailing_tag(const char *s, size_t e, size_t *ret)
{
	size_t b = e;
	while (b > 0 && !blank(s[b - 1]) && s[b - 1] != '#')
		b--;
	if (b == 0 || s[b - 1] != '#' || b == e)
		return false;
	b--;
	if (b > 0 && !blank(s[b - 1]))
		return false;
	*ret = b;
	return true;
}

static void set_field(struct task_fields *f, const char *s,
		      const struct emoji *em, size_t st, size_t v, size_t e)
{
	f->any = true;
	if (em->what < TD_COUNT) {
		f->dates[em->what] = parse_day(s + v);
		f->date_start[em->what] = st;
		f->date_end[em->what] = e;
	} else if (em->what == FLD_PRIO) {
		f->priority = (uint8_t)em->prio;
	} else {
		size_t ve = e;
		while (ve > v && blank(s[ve - 1]))
			ve--;
		size_t *off = em->what == FLD_RECUR  ? &f->recur_off
			      : em->what == FLD_ID   ? &f->id_off
			      : em->what == FLD_DEPS ? &f->deps_off
						     : &f->done_off;
		off[0] = v;
		off[1] = ve - v;
	}
}

void task_parse_fields(const char *s, size_t n, struct task_fields *f)
{
	memset(f, 0, sizeof(*f));
	f->priority = TP_NORMAL;
	for (int d = 0; d < TD_COUNT; d++)
		f->dates[d] = TASK_NO_DATE;
	size_t e = skip_blanks_back(s, n);
	/* A block id ("^abc-1") ends the line after the fields. */
	size_t b = back_over(s, e, "-");
	if (b < e && b > 0 && s[b - 1] == '^' && (b == 1 || blank(s[b - 2])))
		e = skip_blanks_back(s, b - 1);
	size_t tags_end = e; /* tags stepped over, kept */
	for (int round = 0; round < 20; round++) {
		e = skip_blanks_back(s, e);
		bool found = false;
		for (size_t k = 0; k < ARRAY_SIZE(EMOJI) && !found; k++) {
			size_t st, v;
			if (!field_at(s, e, &EMOJI[k], &st, &v))
				continue;
			set_field(f, s, &EMOJI[k], st, v, e);
			keep_span(f, e, tags_end);
			e = tags_end = skip_blanks_back(s, st);
			found = true;
		}
		size_t t;
		if (!found && trailing_tag(s, e, &t)) {
			e = t;
			found = true;
		}
		if (!found)
			break;
	}
	keep_span(f, 0, tags_end);
}

char *task_description(const char *s, const struct task_fields *f)
{
	struct sbuf b = {0};
	/* Spans were found from the end back. */
	for (size_t i = f->nkeep; i-- > 0;) {
		size_t a = f->keep[2 * i], e = f->keep[2 * i + 1];
		while (a < e && blank(s[a]))
			a++;
		while (e > a && blank(s[e - 1]))
			e--;
		if (a == e)
			continue;
		if (b.len)
			sb_putc(&b, ' ');
		sb_add(&b, s + a, e - a);
	}
	return sb_steal(&b);
}

/* ---- the task string -------------------------------------------------- */

/*
 * Layout: a flags byte (1: some task has fields), then per task: line
 * u32, symbol u32, text (u32 length, bytes), priority u8, a byte with a
 * bit per date present, the dates (i32 each), recurrence (u32 offset
 * into the text, u32 length), tags (u32 count, u32 bytes, the tags
 * NUL-ended).
 */
enum { TS_HAS_FIELDS = 1 };

static void put32(struct sbuf *b, uint32_t v)
{
	sb_add(b, (const char *)&v, 4);
}

static void encode_task(struct sbuf *b, const char *text,
			const struct task_line *tl, int line,
			const struct md_tag *tags, size_t ntags)
{
	const char *s = text + tl->text_off;
	size_t n = tl->text_end - tl->text_off;
	struct task_fields f;
	task_parse_fields(s, n, &f);
	put32(b, (uint32_t)line);
	put32(b, (uint32_t)tl->symbol);
	put32(b, (uint32_t)n);
	sb_add(b, s, n);
	sb_putc(b, (char)f.priority);
	uint8_t mask = 0;
	for (int d = 0; d < TD_COUNT; d++)
		if (f.dates[d] != TASK_NO_DATE)
			mask |= (uint8_t)(1u << d);
	sb_putc(b, (char)mask);
	for (int d = 0; d < TD_COUNT; d++)
		if (mask & (1u << d))
			put32(b, (uint32_t)f.dates[d]);
	put32(b, (uint32_t)f.recur_off);
	put32(b, (uint32_t)f.recur_len);
	size_t bytes = 0;
	for (size_t i = 0; i < ntags; i++)
		bytes += strlen(tags[i].tag) + 1;
	put32(b, (uint32_t)ntags);
	put32(b, (uint32_t)bytes);
	for (size_t i = 0; i < ntags; i++)
		sb_add(b, tags[i].tag, strlen(tags[i].tag) + 1);
	if (f.any)
		b->s[0] |= TS_HAS_FIELDS;
}

/* Whether any line of text[from, len) looks like a task, the mask not
 * looked at: most notes have none, and then no mask is made. */
static bool any_task_line(const char *text, size_t len, size_t from)
{
	struct task_line tl;
	for (size_t i = from; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - text) : len;
		if (task_line_at(text, i, e, &tl))
			return true;
		i = e + 1;
	}
	return false;
}

unsigned char *tasks_scan(const char *text, size_t len, const struct md_doc *d,
			  uint32_t *ret_len)
{
	*ret_len = 0;
	size_t body_off = d->body_off, ntags = d->ntags;
	const struct md_tag *tags = d->tags;
	const unsigned char *mask = d->mask;
	if (!any_task_line(text, len, body_off))
		return NULL;
	struct sbuf b = {0};
	sb_putc(&b, 0);
	size_t count = 0, ti = 0;
	int line = d->body_line;
	for (size_t i = body_off; i < len; line++) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - text) : len;
		struct task_line tl;
		if (task_line_at(text, i, e, &tl) && !mask[tl.sym_off - 1] &&
		    !mask[tl.sym_off]) {
			while (ti < ntags && tags[ti].line < line)
				ti++;
			size_t tn = 0;
			while (ti + tn < ntags && tags[ti + tn].line == line)
				tn++;
			encode_task(&b, text, &tl, line, tags + ti, tn);
			count++;
		}
		i = e + 1;
	}
	if (!count) {
		sb_free(&b);
		return NULL;
	}
	*ret_len = (uint32_t)b.len;
	return (unsigned char *)sb_steal(&b);
}

struct rd {
	const unsigned char *p;
	size_t n, pos;
	bool bad;
};

static uint32_t get32(struct rd *r)
{
	uint32_t v = 0;
	if (r->n - r->pos < 4) {
		r->bad = true;
		return 0;
	}
	memcpy(&v, r->p + r->pos, 4);
	r->pos += 4;
	return v;
}

static const char *get_bytes(struct rd *r, size_t len)
{
	if (r->n - r->pos < len) {
		r->bad = true;
		return NULL;
	}
	const char *s = (const char *)r->p + r->pos;
	r->pos += len;
	return s;
}

static uint8_t get8(struct rd *r)
{
	const char *b = get_bytes(r, 1);
	return b ? (uint8_t)*b : 0;
}

/* One task from r; r->bad when the string is broken. */
static void read_task(struct rd *r, struct task *t)
{
	t->line = (int)get32(r);
	t->symbol = (int32_t)get32(r);
	t->text_len = get32(r);
	t->text = get_bytes(r, t->text_len);
	t->priority = get8(r);
	uint8_t mask = get8(r);
	for (int d = 0; d < TD_COUNT; d++)
		t->dates[d] =
			(mask & (1u << d)) ? (int32_t)get32(r) : TASK_NO_DATE;
	uint32_t ro = get32(r), rl = get32(r);
	t->ntags = get32(r);
	t->tags_len = get32(r);
	t->tags = get_bytes(r, t->tags_len);
	if (r->bad)
		return;
	if (t->priority > TP_HIGHEST || (uint64_t)ro + rl > t->text_len ||
	    (t->tags_len && t->tags[t->tags_len - 1]))
		r->bad = true;
	t->recur = t->text + ro;
	t->recur_len = rl;
}

bool tasks_next(const unsigned char *p, size_t n, size_t *pos, struct task *ret)
{
	if (!p || n < 1 || *pos >= n)
		return false;
	struct rd r = {p, n, *pos ? *pos : 1, false};
	if (r.pos >= n)
		return false;
	read_task(&r, ret);
	if (r.bad)
		return false;
	*pos = r.pos;
	return true;
}

bool tasks_valid(const unsigned char *p, size_t n)
{
	if (!n)
		return true;
	struct rd r = {p, n, 1, false};
	while (r.pos < n && !r.bad) {
		struct task t;
		read_task(&r, &t);
		size_t cnt = 0;
		for (uint32_t i = 0; !r.bad && i < t.tags_len; i++)
			cnt += t.tags[i] == 0;
		if (!r.bad && cnt != t.ntags)
			r.bad = true;
	}
	return !r.bad;
}

bool tasks_use_fields(const unsigned char *p, size_t n)
{
	return n && (p[0] & TS_HAS_FIELDS);
}

/* ---- changing a status ------------------------------------------------ */

/* s without the field of date d (and the blanks before it). */
static void drop_date(struct sbuf *out, const char *s, size_t n,
		      const struct task_fields *f, enum task_date d)
{
	size_t a = f->date_start[d], e = f->date_end[d];
	while (a > 0 && blank(s[a - 1]))
		a--;
	sb_add(out, s, a);
	sb_add(out, s + e, n - e);
}

/* s with " <emoji> today" after its fields (before a ^block id). */
static void add_date(struct sbuf *out, const char *s, size_t n,
		     const char *emoji, const char *today)
{
	size_t e = skip_blanks_back(s, n);
	size_t b = back_over(s, e, "-");
	size_t at = e;
	if (b < e && b > 0 && s[b - 1] == '^' && (b == 1 || blank(s[b - 2])))
		at = skip_blanks_back(s, b - 1);
	sb_add(out, s, at);
	sb_printf(out, "%s%s %s", at ? " " : "", emoji, today);
	sb_add(out, s + at, n - at);
}

/* Change one stamp: date d dropped when leaving its status, set to
 * today when entering it. */
static char *stamp(const char *s, size_t n, enum task_date d, bool leave,
		   bool enter, const char *emoji, const char *today)
{
	struct task_fields f;
	task_parse_fields(s, n, &f);
	bool has = f.date_end[d] > f.date_start[d];
	struct sbuf out = {0};
	if (has && (leave || enter)) {
		drop_date(&out, s, n, &f, d);
		if (!enter)
			return sb_steal(&out);
		char *t = sb_steal(&out);
		char *r = stamp(t, strlen(t), d, false, enter, emoji, today);
		free(t);
		return r;
	}
	if (enter && !has)
		add_date(&out, s, n, emoji, today);
	else
		sb_add(&out, s, n);
	return sb_steal(&out);
}

char *task_restamp(const char *s, size_t n, int32_t old_symbol, int32_t symbol,
		   bool stamps, const char *today)
{
	enum task_status a = task_symbol_status(old_symbol);
	enum task_status b = task_symbol_status(symbol);
	if (!stamps || a == b)
		return xstrndup(s, n);
	char *t = stamp(s, n, TD_DONE, a == TASK_DONE, b == TASK_DONE, "✅",
			today);
	char *u = stamp(t, strlen(t), TD_CANCELLED, a == TASK_CANCELLED,
			b == TASK_CANCELLED, "❌", today);
	free(t);
	return u;
}
