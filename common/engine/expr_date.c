/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Dates and durations of the expression language: local wall times in
 * ms (a date-only value is midnight), ISO parsing and formatting, and
 * calendar arithmetic that keeps months apart from fixed time.
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

/* ---- dates and durations ---------------------------------------------- */

int64_t qv_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

void qv_civil_from_days(int64_t z, int *ry, int *rm, int *rd)
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

int64_t qv_floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b && (a < 0) != (b < 0)) ? q - 1 : q;
}

int qv_days_in_month(int y, int m)
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
int64_t qv_local_ms_of_ns(int64_t ns)
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
	if (mo < 1 || mo > 12 || d < 1 || d > qv_days_in_month(y, mo))
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
	int64_t ms = qv_days_from_civil(y, (unsigned)mo, (unsigned)d) * MS_DAY +
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
	int64_t day = qv_floor_div(v->ms, MS_DAY);
	int64_t rest = v->ms - day * MS_DAY;
	int y, m, d;
	qv_civil_from_days(day, &y, &m, &d);
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
bool qv_parse_dur(const char *s, size_t n, int64_t *ret_ms, int32_t *ret_months)
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

void qv_format_dur_val(const struct qval *v, char out[96])
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

int64_t qv_date_add(int64_t ms, int64_t add_ms, int32_t months, int sign)
{
	if (months) {
		int64_t day = qv_floor_div(ms, MS_DAY);
		int64_t rest = ms - day * MS_DAY;
		int y, m, d;
		qv_civil_from_days(day, &y, &m, &d);
		int64_t t = (int64_t)y * 12 + (m - 1) + sign * (int64_t)months;
		y = (int)qv_floor_div(t, 12);
		m = (int)(t - (int64_t)y * 12) + 1;
		if (d > qv_days_in_month(y, m))
			d = qv_days_in_month(y, m);
		ms = qv_days_from_civil(y, (unsigned)m, (unsigned)d) * MS_DAY +
		     rest;
	}
	return ms + sign * add_ms;
}
