/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Moment.js formats (see moment.h). Dates are counted in days since
 * 1970-01-01 with libc's timegm()/gmtime_r(), which are exact for the
 * proleptic Gregorian calendar; weeks follow Moment's rule: week 1 of a
 * week-year is the week (starting on the locale's first day) holding
 * January (7 + dow - doy), so ISO weeks are dow 1, doy 4 and the
 * English ones dow 0, doy 6 (the week holding January 1).
 */
#include "moment.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>

/* ---- the calendar ----------------------------------------------------- */

static bool is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int D[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return m == 2 && is_leap(y) ? 29 : D[m - 1];
}

int64_t moment_days(int year, int month, int day)
{
	struct tm tm = {.tm_year = year - 1900,
			.tm_mon = month - 1,
			.tm_mday = day,
			.tm_hour = 12};
	return ((int64_t)timegm(&tm) - 12 * 3600) / 86400;
}

void moment_from_days(int64_t days, struct moment_tm *ret)
{
	time_t s = (time_t)(days * 86400);
	struct tm tm;
	gmtime_r(&s, &tm);
	*ret = (struct moment_tm){.year = tm.tm_year + 1900,
				  .month = tm.tm_mon + 1,
				  .day = tm.tm_mday,
				  .gmtoff = ret->gmtoff};
}

void moment_now(struct moment_tm *ret)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	localtime_r(&ts.tv_sec, &tm);
	*ret = (struct moment_tm){.year = tm.tm_year + 1900,
				  .month = tm.tm_mon + 1,
				  .day = tm.tm_mday,
				  .hour = tm.tm_hour,
				  .min = tm.tm_min,
				  .sec = tm.tm_sec,
				  .ms = (int)(ts.tv_nsec / 1000000),
				  .gmtoff = tm.tm_gmtoff};
}

static int64_t days_of(const struct moment_tm *t)
{
	return moment_days(t->year, t->month, t->day);
}

static int weekday_of_days(int64_t days)
{
	/* 1970-01-01 was a Thursday. */
	return (int)(((days % 7) + 11) % 7);
}

int moment_weekday(const struct moment_tm *t)
{
	return weekday_of_days(days_of(t));
}

/* The first day of week 1 of week-year y. */
static int64_t week1_start(int y, int dow, int doy)
{
	int64_t jan = moment_days(y, 1, 7 + dow - doy);
	return jan - (weekday_of_days(jan) - dow + 7) % 7;
}

/* The week and week-year of a day. */
static void week_of(int64_t days, int year, int dow, int doy, int *ret_week,
		    int *ret_year)
{
	int y = year;
	if (days < week1_start(y, dow, doy))
		y--;
	else if (days >= week1_start(y + 1, dow, doy))
		y++;
	*ret_week = (int)((days - week1_start(y, dow, doy)) / 7) + 1;
	*ret_year = y;
}

static int weeks_in_year(int y, int dow, int doy)
{
	return (int)((week1_start(y + 1, dow, doy) - week1_start(y, dow, doy)) /
		     7);
}

/* Whole-calendar shifts: months (years are 12), the day clamped. */
static void add_months(struct moment_tm *t, long n)
{
	long m = (long)t->year * 12 + (t->month - 1) + n;
	t->year = (int)(m / 12);
	t->month = (int)(m % 12) + 1;
	int dim = days_in_month(t->year, t->month);
	if (t->day > dim)
		t->day = dim;
}

int moment_add(struct moment_tm *t, long n, char unit)
{
	static const struct {
		char unit;
		long months, secs;
	} U[] = {{'y', 12, 0},	   {'Q', 3, 0},	    {'M', 1, 0},
		 {'w', 0, 604800}, {'d', 0, 86400}, {'h', 0, 3600},
		 {'m', 0, 60},	   {'s', 0, 1}};
	for (size_t i = 0; i < ARRAY_SIZE(U); i++) {
		if (U[i].unit != unit)
			continue;
		if (n > 120000 || n < -120000)
			return -ERANGE;
		if (U[i].months) {
			add_months(t, n * U[i].months);
		} else {
			int64_t s = days_of(t) * 86400 + t->hour * 3600 +
				    t->min * 60 + t->sec + n * U[i].secs;
			int64_t d = s >= 0 ? s / 86400 : (s - 86399) / 86400;
			int64_t r = s - d * 86400;
			struct moment_tm k = *t;
			moment_from_days(d, &k);
			k.hour = (int)(r / 3600);
			k.min = (int)(r / 60 % 60);
			k.sec = (int)(r % 60);
			k.ms = t->ms;
			*t = k;
		}
		return t->year >= 1 && t->year <= 9999 ? 0 : -ERANGE;
	}
	return -EINVAL;
}

void moment_start_of(struct moment_tm *t, char unit,
		     const struct moment_locale *loc)
{
	struct moment_tm k = *t;
	if (unit == 'w') {
		int64_t d = days_of(t);
		moment_from_days(d - (weekday_of_days(d) - loc->dow + 7) % 7,
				 &k);
	} else if (unit == 'M' || unit == 'Q' || unit == 'y') {
		k.day = 1;
		if (unit == 'Q')
			k.month = (k.month - 1) / 3 * 3 + 1;
		if (unit == 'y')
			k.month = 1;
	}
	k.hour = t->hour;
	k.min = t->min;
	k.sec = t->sec;
	k.ms = t->ms;
	*t = k;
}

/* ---- tokens ----------------------------------------------------------- */

enum tok {
	T_Y,
	T_YY,
	T_YYYY,
	T_YYYYY,
	T_YYYYYY,
	T_M,
	T_Mo,
	T_MM,
	T_MMM,
	T_MMMM,
	T_D,
	T_Do,
	T_DD,
	T_DDD,
	T_DDDo,
	T_DDDD,
	T_d,
	T_do,
	T_dd,
	T_ddd,
	T_dddd,
	T_e,
	T_E,
	T_w,
	T_wo,
	T_ww,
	T_W,
	T_Wo,
	T_WW,
	T_gg,
	T_gggg,
	T_ggggg,
	T_GG,
	T_GGGG,
	T_GGGGG,
	T_Q,
	T_Qo,
	T_H,
	T_HH,
	T_h,
	T_hh,
	T_k,
	T_kk,
	T_m,
	T_mm,
	T_s,
	T_ss,
	T_S,
	T_SS,
	T_SSS,
	T_a,
	T_A,
	T_X,
	T_x,
	T_Z,
	T_ZZ,
	T_LT,
	T_LTS,
	T_L,
	T_LL,
	T_LLL,
	T_LLLL,
};

/* Longest first where one is a prefix of another. */
static const struct {
	const char *s;
	enum tok t;
} TOKENS[] = {
	{"YYYYYY", T_YYYYYY}, {"YYYYY", T_YYYYY}, {"YYYY", T_YYYY},
	{"YY", T_YY},	      {"Y", T_Y},	  {"MMMM", T_MMMM},
	{"MMM", T_MMM},	      {"MM", T_MM},	  {"Mo", T_Mo},
	{"M", T_M},	      {"DDDD", T_DDDD},	  {"DDDo", T_DDDo},
	{"DDD", T_DDD},	      {"DD", T_DD},	  {"Do", T_Do},
	{"D", T_D},	      {"dddd", T_dddd},	  {"ddd", T_ddd},
	{"dd", T_dd},	      {"do", T_do},	  {"d", T_d},
	{"e", T_e},	      {"E", T_E},	  {"ww", T_ww},
	{"wo", T_wo},	      {"w", T_w},	  {"WW", T_WW},
	{"Wo", T_Wo},	      {"W", T_W},	  {"ggggg", T_ggggg},
	{"gggg", T_gggg},     {"gg", T_gg},	  {"GGGGG", T_GGGGG},
	{"GGGG", T_GGGG},     {"GG", T_GG},	  {"Qo", T_Qo},
	{"Q", T_Q},	      {"HH", T_HH},	  {"H", T_H},
	{"hh", T_hh},	      {"h", T_h},	  {"kk", T_kk},
	{"k", T_k},	      {"mm", T_mm},	  {"m", T_m},
	{"ss", T_ss},	      {"s", T_s},	  {"SSS", T_SSS},
	{"SS", T_SS},	      {"S", T_S},	  {"a", T_a},
	{"A", T_A},	      {"X", T_X},	  {"x", T_x},
	{"ZZ", T_ZZ},	      {"Z", T_Z},	  {"LTS", T_LTS},
	{"LT", T_LT},	      {"LLLL", T_LLLL},	  {"LLL", T_LLL},
	{"LL", T_LL},	      {"L", T_L},
};

/*
 * One piece of a format at f: a token (ret_tok, returns its length), or
 * literal text (ret_tok -1; *ret_lit and *ret_litlen say which bytes):
 * "[...]" (without its brackets), a "\x" escape, or one other byte.
 */
static size_t next_piece(const char *f, int *ret_tok, const char **ret_lit,
			 size_t *ret_litlen)
{
	*ret_tok = -1;
	if (f[0] == '[') {
		const char *e = strchr(f + 1, ']');
		const char *o = strchr(f + 1, '[');
		if (e && (!o || o > e)) {
			*ret_lit = f + 1;
			*ret_litlen = (size_t)(e - f - 1);
			return (size_t)(e - f) + 1;
		}
	}
	if (f[0] == '\\' && f[1]) {
		*ret_lit = f + 1;
		*ret_litlen = 1;
		return 2;
	}
	for (size_t i = 0; i < ARRAY_SIZE(TOKENS); i++) {
		size_t n = strlen(TOKENS[i].s);
		if (!strncmp(f, TOKENS[i].s, n)) {
			*ret_tok = (int)TOKENS[i].t;
			return n;
		}
	}
	*ret_lit = f;
	*ret_litlen = 1;
	return 1;
}

/* ---- numbers ---------------------------------------------------------- */

/* What a numeric token stands for. */
enum field {
	F_YEAR,
	F_YEAR2,
	F_MONTH,
	F_DAY,
	F_YDAY,
	F_WD,
	F_LWD,
	F_ISOWD,
	F_WEEK,
	F_WYEAR,
	F_WYEAR2,
	F_ISOWEEK,
	F_ISOYEAR,
	F_ISOYEAR2,
	F_QUARTER,
	F_HOUR,
	F_H12,
	F_H24,
	F_MIN,
	F_SEC,
	F_DSEC,
	F_CSEC,
	F_MS,
	NFIELDS
};

/*
 * Numeric tokens: the field, the width (written zero-padded to it, and
 * read as exactly that many digits; 0: as many as the number has, read
 * as 1 to max digits) and whether the locale's ordinal follows.
 */
static const struct {
	enum tok t;
	enum field f;
	int width, max;
	bool ordinal;
} NUMS[] = {
	{T_Y, F_YEAR, 0, 4, false},	   {T_YY, F_YEAR2, 2, 2, false},
	{T_YYYY, F_YEAR, 4, 4, false},	   {T_YYYYY, F_YEAR, 5, 5, false},
	{T_M, F_MONTH, 0, 2, false},	   {T_Mo, F_MONTH, 0, 2, true},
	{T_MM, F_MONTH, 2, 2, false},	   {T_D, F_DAY, 0, 2, false},
	{T_Do, F_DAY, 0, 2, true},	   {T_DD, F_DAY, 2, 2, false},
	{T_DDD, F_YDAY, 0, 3, false},	   {T_DDDo, F_YDAY, 0, 3, true},
	{T_DDDD, F_YDAY, 3, 3, false},	   {T_d, F_WD, 0, 1, false},
	{T_do, F_WD, 0, 1, true},	   {T_e, F_LWD, 0, 1, false},
	{T_E, F_ISOWD, 0, 1, false},	   {T_w, F_WEEK, 0, 2, false},
	{T_wo, F_WEEK, 0, 2, true},	   {T_ww, F_WEEK, 2, 2, false},
	{T_W, F_ISOWEEK, 0, 2, false},	   {T_Wo, F_ISOWEEK, 0, 2, true},
	{T_WW, F_ISOWEEK, 2, 2, false},	   {T_gg, F_WYEAR2, 2, 2, false},
	{T_gggg, F_WYEAR, 4, 4, false},	   {T_ggggg, F_WYEAR, 5, 5, false},
	{T_GG, F_ISOYEAR2, 2, 2, false},   {T_GGGG, F_ISOYEAR, 4, 4, false},
	{T_GGGGG, F_ISOYEAR, 5, 5, false}, {T_Q, F_QUARTER, 0, 1, false},
	{T_Qo, F_QUARTER, 0, 1, true},	   {T_H, F_HOUR, 0, 2, false},
	{T_HH, F_HOUR, 2, 2, false},	   {T_h, F_H12, 0, 2, false},
	{T_hh, F_H12, 2, 2, false},	   {T_k, F_H24, 0, 2, false},
	{T_kk, F_H24, 2, 2, false},	   {T_m, F_MIN, 0, 2, false},
	{T_mm, F_MIN, 2, 2, false},	   {T_s, F_SEC, 0, 2, false},
	{T_ss, F_SEC, 2, 2, false},	   {T_S, F_DSEC, 1, 1, false},
	{T_SS, F_CSEC, 2, 2, false},	   {T_SSS, F_MS, 3, 3, false},
};

static int num_index(enum tok t)
{
	for (size_t i = 0; i < ARRAY_SIZE(NUMS); i++)
		if (NUMS[i].t == t)
			return (int)i;
	return -1;
}

static const char *ordinal_suffix(long n);

/* What follows the number of an ordinal token in a locale. */
static const char *ordinal_of(const struct moment_locale *l, enum tok t, long n)
{
	switch (l->ordinal) {
	case ORD_DOT:
		return ".";
	case ORD_MASC:
		return "º";
	case ORD_FR:
		if (t == T_Do)
			return n == 1 ? "er" : "";
		if (t == T_wo || t == T_Wo)
			return n == 1 ? "re" : "e";
		return n == 1 ? "er" : "e";
	default:
		return ordinal_suffix(n);
	}
}

static const char *ordinal_suffix(long n)
{
	long t = n % 100;
	if (t >= 11 && t <= 13)
		return "th";
	switch (n % 10) {
	case 1:
		return "st";
	case 2:
		return "nd";
	case 3:
		return "rd";
	default:
		return "th";
	}
}

/* ---- formatting ------------------------------------------------------- */

/* What the tokens say of one moment, worked out once. */
struct mview {
	const struct moment_tm *t;
	const struct moment_locale *loc;
	int64_t days;
	int val[NFIELDS];
	bool dashed_mmm; /* the format has "-MMM-" (es's short months) */
};

static void view_init(struct mview *v, const struct moment_tm *t,
		      const struct moment_locale *loc)
{
	*v = (struct mview){.t = t, .loc = loc, .days = days_of(t)};
	int *x = v->val;
	int wd = weekday_of_days(v->days);
	x[F_YEAR] = t->year;
	x[F_YEAR2] = t->year % 100;
	x[F_MONTH] = t->month;
	x[F_DAY] = t->day;
	x[F_YDAY] = (int)(v->days - moment_days(t->year, 1, 1)) + 1;
	x[F_WD] = wd;
	x[F_LWD] = (wd - loc->dow + 7) % 7;
	x[F_ISOWD] = wd ? wd : 7;
	week_of(v->days, t->year, loc->dow, loc->doy, &x[F_WEEK], &x[F_WYEAR]);
	x[F_WYEAR2] = x[F_WYEAR] % 100;
	week_of(v->days, t->year, 1, 4, &x[F_ISOWEEK], &x[F_ISOYEAR]);
	x[F_ISOYEAR2] = x[F_ISOYEAR] % 100;
	x[F_QUARTER] = (t->month - 1) / 3 + 1;
	x[F_HOUR] = t->hour;
	x[F_H12] = t->hour % 12 ? t->hour % 12 : 12;
	x[F_H24] = t->hour ? t->hour : 24;
	x[F_MIN] = t->min;
	x[F_SEC] = t->sec;
	x[F_DSEC] = t->ms / 100;
	x[F_CSEC] = t->ms / 10;
	x[F_MS] = t->ms;
}

static void put_offset(struct sbuf *b, long off, bool colon)
{
	long a = off < 0 ? -off : off;
	sb_printf(b, "%c%02ld%s%02ld", off < 0 ? '-' : '+', a / 3600,
		  colon ? ":" : "", a / 60 % 60);
}

/* A long-date form's format (LT ... LLLL), or NULL. */
static const char *long_form(enum tok k, const struct moment_locale *l)
{
	switch (k) {
	case T_LT:
		return l->lt;
	case T_LTS:
		return l->lts;
	case T_L:
		return l->l;
	case T_LL:
		return l->ll;
	case T_LLL:
		return l->lll;
	case T_LLLL:
		return l->llll;
	default:
		return NULL;
	}
}

static void format_into(struct sbuf *b, const char *fmt, const struct mview *v,
			bool nested);

/* A token that is not a plain number. */
static void put_other(struct sbuf *b, enum tok k, const struct mview *v,
		      bool nested)
{
	const struct moment_tm *t = v->t;
	int64_t unix_s = v->days * 86400 + t->hour * 3600 + t->min * 60 +
			 t->sec - t->gmtoff;
	const char *lf = long_form(k, v->loc);
	if (lf) {
		/* The long forms hold only plain tokens: one level. */
		if (!nested)
			format_into(b, lf, v, true);
		return;
	}
	switch (k) {
	case T_YYYYYY:
		sb_printf(b, "+%06d", t->year);
		break;
	case T_MMM:
		sb_puts(b, (v->loc->months_short_dashed && v->dashed_mmm
				    ? v->loc->months_short_dashed
				    : v->loc->months_short)[t->month - 1]);
		break;
	case T_MMMM:
		sb_puts(b, v->loc->months[t->month - 1]);
		break;
	case T_dd:
		sb_puts(b, v->loc->days_min[v->val[F_WD]]);
		break;
	case T_ddd:
		sb_puts(b, v->loc->days_short[v->val[F_WD]]);
		break;
	case T_dddd:
		sb_puts(b, v->loc->days[v->val[F_WD]]);
		break;
	case T_a:
		sb_puts(b, t->hour < 12 ? "am" : "pm");
		break;
	case T_A:
		sb_puts(b, t->hour < 12 ? "AM" : "PM");
		break;
	case T_X:
		sb_printf(b, "%lld", (long long)unix_s);
		break;
	case T_x:
		sb_printf(b, "%lld", (long long)unix_s * 1000 + t->ms);
		break;
	case T_Z:
	case T_ZZ:
		put_offset(b, t->gmtoff, k == T_Z);
		break;
	default:
		break;
	}
}

static void format_into(struct sbuf *b, const char *fmt, const struct mview *v,
			bool nested)
{
	for (const char *f = fmt; *f;) {
		int tok;
		const char *lit = NULL;
		size_t litlen = 0;
		f += next_piece(f, &tok, &lit, &litlen);
		int ni = tok < 0 ? -1 : num_index((enum tok)tok);
		if (tok < 0) {
			sb_add(b, lit, litlen);
		} else if (ni >= 0) {
			int n = v->val[NUMS[ni].f];
			sb_printf(b, "%0*d%s", NUMS[ni].width, n,
				  NUMS[ni].ordinal
					  ? ordinal_of(v->loc, NUMS[ni].t, n)
					  : "");
		} else {
			put_other(b, (enum tok)tok, v, nested);
		}
	}
}

char *moment_format(const char *fmt, const struct moment_tm *t,
		    const struct moment_locale *loc)
{
	struct mview v;
	view_init(&v, t, loc);
	v.dashed_mmm = strstr(fmt, "-MMM-") != NULL;
	struct sbuf b = {0};
	sb_puts(&b, "");
	format_into(&b, fmt, &v, false);
	return sb_steal(&b);
}

/* ---- parsing ---------------------------------------------------------- */

struct pstate {
	const struct moment_locale *loc;
	const char *p; /* the text still to read */
	int val[NFIELDS];
	bool has[NFIELDS];
	int pm; /* -1: no am/pm, 0 am, 1 pm */
	bool has_unix, has_off;
	int64_t unix_ms;
	long off;
	const char *why;
};

static int fail(struct pstate *s, const char *why)
{
	s->why = why;
	return -EINVAL;
}

/* A field read twice must read the same (YYYY/MM/YYYY-MM-DD). */
static int set_field(struct pstate *s, enum field f, int n)
{
	if (s->has[f] && s->val[f] != n)
		return fail(s, "two parts of the name disagree");
	s->has[f] = true;
	s->val[f] = n;
	return 0;
}

static int read_number(struct pstate *s, int ni)
{
	int want = NUMS[ni].width, max = want ? want : NUMS[ni].max;
	int n = 0, i = 0;
	while (i < max && isdigit((unsigned char)s->p[i]))
		n = n * 10 + (s->p[i++] - '0');
	if (i == 0 || (want && i != want))
		return fail(s, want ? "a number of fixed width was expected"
				    : "a number was expected");
	s->p += i;
	if (NUMS[ni].ordinal) {
		const char *suf = ordinal_of(s->loc, NUMS[ni].t, n);
		size_t sl = strlen(suf);
		if (strncasecmp(s->p, suf, sl))
			return fail(s, "an ordinal (1st, 2nd, 3rd, 4th) was "
				       "expected");
		s->p += sl;
	}
	return set_field(s, NUMS[ni].f, n);
}

/* The longest of names[0..n) at s->p (any case): its index. */
static int read_name(struct pstate *s, const char *const *names, int n,
		     enum field f, int base)
{
	int best = -1;
	size_t bl = 0;
	for (int i = 0; i < n; i++) {
		size_t l = strlen(names[i]);
		if (l > bl && !strncasecmp(s->p, names[i], l)) {
			best = i;
			bl = l;
		}
	}
	if (best < 0)
		return fail(s, f == F_MONTH ? "a month name was expected"
					    : "a weekday name was expected");
	s->p += bl;
	return set_field(s, f, best + base);
}

static int read_offset(struct pstate *s)
{
	if (*s->p == 'Z' || *s->p == 'z') {
		s->p++;
		s->off = 0;
		s->has_off = true;
		return 0;
	}
	int h, m, n = 0;
	char sign;
	if ((sscanf(s->p, "%c%2d:%2d%n", &sign, &h, &m, &n) != 3 &&
	     sscanf(s->p, "%c%2d%2d%n", &sign, &h, &m, &n) != 3) ||
	    (sign != '+' && sign != '-') || n < 5)
		return fail(s, "a UTC offset (+01:00) was expected");
	s->p += n;
	s->off = (sign == '-' ? -1 : 1) * (h * 3600L + m * 60L);
	s->has_off = true;
	return 0;
}

static int read_unix(struct pstate *s, bool ms)
{
	char *e;
	errno = 0;
	long long n = strtoll(s->p, &e, 10);
	if (e == s->p || errno || !isdigit((unsigned char)*s->p))
		return fail(s, "a Unix time was expected");
	s->p = e;
	s->has_unix = true;
	s->unix_ms = ms ? n : n * 1000;
	return 0;
}

static int parse_into(struct pstate *s, const char *fmt, bool nested);

static int read_other(struct pstate *s, enum tok k, bool nested)
{
	const char *lf = long_form(k, s->loc);
	if (lf)
		return nested ? 0 : parse_into(s, lf, true);
	switch (k) {
	case T_MMM:
		/* es: "ene." mostly, "ene" between dashes; either reads. */
		if (s->loc->months_short_dashed) {
			const char *why = s->why;
			if (read_name(s, s->loc->months_short, 12, F_MONTH,
				      1) == 0)
				return 0;
			s->why = why;
			return read_name(s, s->loc->months_short_dashed, 12,
					 F_MONTH, 1);
		}
		return read_name(s, s->loc->months_short, 12, F_MONTH, 1);
	case T_MMMM:
		return read_name(s, s->loc->months, 12, F_MONTH, 1);
	case T_dd:
		return read_name(s, s->loc->days_min, 7, F_WD, 0);
	case T_ddd:
		return read_name(s, s->loc->days_short, 7, F_WD, 0);
	case T_dddd:
		return read_name(s, s->loc->days, 7, F_WD, 0);
	case T_a:
	case T_A:
		if (strncasecmp(s->p, "am", 2) && strncasecmp(s->p, "pm", 2))
			return fail(s, "am or pm was expected");
		s->pm = tolower((unsigned char)*s->p) == 'p';
		s->p += 2;
		return 0;
	case T_X:
	case T_x:
		return read_unix(s, k == T_x);
	case T_Z:
	case T_ZZ:
		return read_offset(s);
	default:
		return fail(s, "this token cannot be read back");
	}
}

static int parse_into(struct pstate *s, const char *fmt, bool nested)
{
	for (const char *f = fmt; *f;) {
		int tok, r = 0;
		const char *lit = NULL;
		size_t litlen = 0;
		f += next_piece(f, &tok, &lit, &litlen);
		int ni = tok < 0 ? -1 : num_index((enum tok)tok);
		if (tok < 0) {
			if (strncmp(s->p, lit, litlen))
				return fail(s, "the text between the date's "
					       "parts differs");
			s->p += litlen;
		} else if (ni >= 0) {
			r = read_number(s, ni);
		} else {
			r = read_other(s, (enum tok)tok, nested);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* A two-digit year as Moment reads it: 69..99 are 1900s. */
static int full_year(int yy)
{
	return yy > 68 ? 1900 + yy : 2000 + yy;
}

/* The day a week-based name stands for, or -EINVAL. */
static int week_day(struct pstate *s, const struct moment_tm *now, int64_t *ret)
{
	const int *v = s->val;
	bool iso = s->has[F_ISOWEEK] || s->has[F_ISOYEAR] ||
		   s->has[F_ISOYEAR2] || s->has[F_ISOWD];
	int dow = iso ? 1 : s->loc->dow, doy = iso ? 4 : s->loc->doy;
	struct mview nv;
	view_init(&nv, now, s->loc);
	int y = iso ? (s->has[F_ISOYEAR]    ? v[F_ISOYEAR]
		       : s->has[F_ISOYEAR2] ? full_year(v[F_ISOYEAR2])
					    : nv.val[F_ISOYEAR])
		    : (s->has[F_WYEAR]	  ? v[F_WYEAR]
		       : s->has[F_WYEAR2] ? full_year(v[F_WYEAR2])
		       : s->has[F_YEAR]	  ? v[F_YEAR]
					  : nv.val[F_WYEAR]);
	int week = iso ? (s->has[F_ISOWEEK] ? v[F_ISOWEEK] : 1)
		       : (s->has[F_WEEK] ? v[F_WEEK] : 1);
	if (week < 1 || week > weeks_in_year(y, dow, doy))
		return fail(s, "the week number is not in that year");
	/* The day in the week: from its first day. */
	int off = 0;
	if (s->has[F_ISOWD])
		off = (v[F_ISOWD] % 7 - dow + 7) % 7;
	else if (s->has[F_LWD])
		off = v[F_LWD];
	else if (s->has[F_WD])
		off = (v[F_WD] - dow + 7) % 7;
	if ((s->has[F_ISOWD] && (v[F_ISOWD] < 1 || v[F_ISOWD] > 7)) ||
	    (s->has[F_WD] && v[F_WD] > 6) || off > 6)
		return fail(s, "the day of the week is out of range");
	*ret = week1_start(y, dow, doy) + (week - 1) * 7 + off;
	return 0;
}

/* The date the fields give (Moment's defaults for what is missing). */
static int assemble_date(struct pstate *s, struct moment_tm *t)
{
	struct moment_tm now;
	moment_now(&now);
	const int *v = s->val;
	const bool *h = s->has;
	bool weeks = h[F_WEEK] || h[F_WYEAR] || h[F_WYEAR2] || h[F_ISOWEEK] ||
		     h[F_ISOYEAR] || h[F_ISOYEAR2] || h[F_ISOWD] || h[F_LWD];
	int y = h[F_YEAR] ? v[F_YEAR] : h[F_YEAR2] ? full_year(v[F_YEAR2]) : 0;
	if (h[F_YEAR] && h[F_YEAR2] && v[F_YEAR] % 100 != v[F_YEAR2])
		return fail(s, "two parts of the name disagree");
	int64_t days;
	if (!h[F_DAY] && !h[F_MONTH] && !h[F_YDAY] && weeks) {
		int r = week_day(s, &now, &days);
		if (r < 0)
			return r;
		moment_from_days(days, t);
		return 0;
	}
	if (h[F_QUARTER] && (v[F_QUARTER] < 1 || v[F_QUARTER] > 4))
		return fail(s, "the quarter is out of range");
	int qm = h[F_QUARTER] ? (v[F_QUARTER] - 1) * 3 + 1 : 0;
	if (qm && h[F_MONTH] && (v[F_MONTH] - 1) / 3 != (qm - 1) / 3)
		return fail(s, "two parts of the name disagree");
	int month = h[F_MONTH] ? v[F_MONTH] : qm;
	/* Moment: a year alone is January 1; a month, its first day;
	 * no year, this year; no date at all, today. */
	t->year = y ? y : now.year;
	if (h[F_YDAY] && !month && !h[F_DAY]) {
		int n = is_leap(t->year) ? 366 : 365;
		if (v[F_YDAY] < 1 || v[F_YDAY] > n)
			return fail(s, "the day of the year is out of range");
		moment_from_days(moment_days(t->year, 1, 1) + v[F_YDAY] - 1, t);
		return 0;
	}
	t->month = month ? month : y ? 1 : now.month;
	t->day = h[F_DAY] ? v[F_DAY] : (y || month) ? 1 : now.day;
	if (t->month < 1 || t->month > 12)
		return fail(s, "the month is out of range");
	if (t->day < 1 || t->day > days_in_month(t->year, t->month))
		return fail(s, "that day is not in that month");
	return 0;
}

/* Hours, minutes and seconds, with am/pm. */
static int assemble_time(struct pstate *s, struct moment_tm *t)
{
	const int *v = s->val;
	const bool *h = s->has;
	int hour = h[F_HOUR] ? v[F_HOUR] : h[F_H24] ? v[F_H24] % 24 : 0;
	if (h[F_H12]) {
		if (v[F_H12] < 1 || v[F_H12] > 12)
			return fail(s, "the hour is out of range");
		hour = v[F_H12] % 12 + (s->pm == 1 ? 12 : 0);
	} else if (s->pm == 1 && hour < 12) {
		hour += 12;
	}
	t->hour = hour;
	t->min = h[F_MIN] ? v[F_MIN] : 0;
	t->sec = h[F_SEC] ? v[F_SEC] : 0;
	t->ms = h[F_MS]	    ? v[F_MS]
		: h[F_CSEC] ? v[F_CSEC] * 10
		: h[F_DSEC] ? v[F_DSEC] * 100
			    : 0;
	if (t->hour > 23 || t->min > 59 || t->sec > 59 ||
	    (h[F_H24] && (v[F_H24] < 1 || v[F_H24] > 24)))
		return fail(s, "the time is out of range");
	return 0;
}

static int from_unix(struct pstate *s, struct moment_tm *t)
{
	int64_t ms = s->unix_ms;
	time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	struct tm tm;
	if (!localtime_r(&secs, &tm) || tm.tm_year + 1900 < 1 ||
	    tm.tm_year + 1900 > 9999)
		return fail(s, "the Unix time is out of range");
	*t = (struct moment_tm){.year = tm.tm_year + 1900,
				.month = tm.tm_mon + 1,
				.day = tm.tm_mday,
				.hour = tm.tm_hour,
				.min = tm.tm_min,
				.sec = tm.tm_sec,
				.ms = (int)(ms - (int64_t)secs * 1000),
				.gmtoff = tm.tm_gmtoff};
	return 0;
}

int moment_parse(const char *fmt, const char *text,
		 const struct moment_locale *loc, struct moment_tm *ret,
		 const char **ret_why)
{
	struct pstate s = {.loc = loc, .p = text, .pm = -1};
	struct moment_tm t = {0};
	int r = parse_into(&s, fmt, false);
	if (r == 0 && *s.p)
		r = fail(&s, "the name goes on after the date");
	if (r == 0 && s.has_unix)
		r = from_unix(&s, &t);
	else if (r == 0 && (r = assemble_date(&s, &t)) == 0)
		r = assemble_time(&s, &t);
	if (r == 0 && (t.year < 1 || t.year > 9999))
		r = fail(&s, "the year is out of range");
	/* A weekday name must be the date's (Moment's strict parse). */
	if (r == 0 && s.has[F_WD] && moment_weekday(&t) != s.val[F_WD])
		r = fail(&s, "the weekday is not that date's");
	if (r < 0) {
		if (ret_why)
			*ret_why = s.why;
		return r;
	}
	struct moment_tm now;
	moment_now(&now);
	t.gmtoff = s.has_off ? s.off : now.gmtoff;
	*ret = t;
	return 0;
}
