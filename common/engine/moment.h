/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Moment.js date formats, the way Obsidian writes note names with them:
 * daily notes, Periodic Notes and the core Templates plugin all name a
 * note or fill a variable with `moment(date).format(FORMAT)`. Formatting
 * covers Moment's tokens (years, months, days, weekdays, locale and ISO
 * weeks and week-years, quarters, times, Unix time, offsets, the
 * long-date forms L..LLLL, [literal] text, \-escapes); parsing is
 * Moment's strict parse of one format, so a note name maps back to its
 * date. Names of months and days, ordinals, long forms and the week
 * rules (first day, first week) come with the locale: English (en,
 * en-us, en-gb, en-ie), German, French, Spanish.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* A local date and time (Gregorian, years 1..9999). */
struct moment_tm {
	int year, month, day; /* month and day from 1 */
	int hour, min, sec, ms;
	long gmtoff; /* seconds east of UTC (X, x, Z) */
};

/* Week rules as Moment keeps them: dow, the first day of a week
 * (0 = Sunday); doy, 7 + dow - the day of January always in week 1. */
enum moment_ordinal {
	ORD_EN,	  /* 1st 2nd 3rd 4th 11th */
	ORD_DOT,  /* 1. 2. (de) */
	ORD_FR,	  /* 1er 2e; a day 1er 2; a week 1re 2e */
	ORD_MASC, /* 1º 2º (es) */
};

struct moment_locale {
	const char *name;
	int dow, doy;
	/* The long-date forms LT, LTS, L, LL, LLL, LLLL. */
	const char *lt, *lts, *l, *ll, *lll, *llll;
	/* Names: months, short months, weekdays from Sunday (long, short,
	 * min); short months between dashes ("-MMM-", es), or NULL. */
	const char *const *months, *const *months_short;
	const char *const *days, *const *days_short, *const *days_min;
	const char *const *months_short_dashed;
	enum moment_ordinal ordinal;
};

/* A locale by Moment's name ("en", "en-gb", ... any case, '_' or '-');
 * -ENOENT when vaultd has no month and day names for it. */
int moment_locale_find(const char *name, const struct moment_locale **ret);
/* The locales moment_locale_find() knows, for messages ("en, en-us"). */
const char *moment_locales_known(void);
const struct moment_locale *moment_locale_default(void);

/* The local date and time now. */
void moment_now(struct moment_tm *ret);
/* Days since 1970-01-01 of a date, and back (time fields zeroed). */
int64_t moment_days(int year, int month, int day);
void moment_from_days(int64_t days, struct moment_tm *ret);
/* 0 = Sunday. */
int moment_weekday(const struct moment_tm *t);
/* t moved by n units: 'y' years, 'Q' quarters, 'M' months, 'w' weeks,
 * 'd' days, 'h' hours, 'm' minutes, 's' seconds; a month end clamps
 * (Jan 31 + 1 month = Feb 29 in a leap year), as in Moment. */
int moment_add(struct moment_tm *t, long n, char unit);
/* The first day of t's week (loc's first day), month, quarter, year:
 * unit 'w', 'M', 'Q', 'y' ('d': t itself). Time fields kept. */
void moment_start_of(struct moment_tm *t, char unit,
		     const struct moment_locale *loc);

/* t in fmt. Caller frees. */
char *moment_format(const char *fmt, const struct moment_tm *t,
		    const struct moment_locale *loc);

/*
 * Strict parse of text in fmt: every token must match in full, the
 * date must exist (a weekday name must be the date's). A format with
 * weeks and no day of month gives the week's first day; a missing day
 * or month is the first, missing times 0. -EINVAL when text does not
 * match; ret_why (may be NULL) then says where, e.g. "expected 2
 * digits for MM at '1-05'" (static text or NULL).
 */
int moment_parse(const char *fmt, const char *text,
		 const struct moment_locale *loc, struct moment_tm *ret,
		 const char **ret_why);
