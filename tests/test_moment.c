/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Moment.js formats: the note names users give their daily, weekly,
 * monthly, quarterly and yearly notes, written and read back, with the
 * edges of week-years, leap days and ordinals. Expected values are
 * what Moment 2.29 (Obsidian's) gives for the same date and format.
 */
#include "testutil.h"
#include "moment.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static struct moment_tm day(int y, int m, int d)
{
	return (struct moment_tm){.year = y, .month = m, .day = d};
}

static const struct moment_locale *loc(const char *name)
{
	const struct moment_locale *l = NULL;
	CU_ASSERT_EQUAL(moment_locale_find(name, &l), 0);
	return l ? l : moment_locale_default();
}

static void check_fmt(const char *locname, struct moment_tm t, const char *fmt,
		      const char *want)
{
	_cleanup_free_ char *got = moment_format(fmt, &t, loc(locname));
	if (strcmp(got, want))
		fprintf(stderr,
			"  %04d-%02d-%02d %s (%s): got '%s', want '%s'\n",
			t.year, t.month, t.day, fmt, locname, got, want);
	ASSERT_STR_EQ(got, want);
}

/* Parse text in fmt; "YYYY-MM-DD" of the result, or "invalid". */
static char *parsed(const char *locname, const char *fmt, const char *text)
{
	struct moment_tm t;
	if (moment_parse(fmt, text, loc(locname), &t, NULL) < 0)
		return xstrdup("invalid");
	return xasprintf("%04d-%02d-%02d", t.year, t.month, t.day);
}

static void check_parse(const char *locname, const char *fmt, const char *text,
			const char *want)
{
	_cleanup_free_ char *got = parsed(locname, fmt, text);
	if (strcmp(got, want))
		fprintf(stderr, "  parse '%s' as %s (%s): got %s, want %s\n",
			text, fmt, locname, got, want);
	ASSERT_STR_EQ(got, want);
}

static void test_daily_formats(void)
{
	struct moment_tm t = day(2024, 1, 5);
	check_fmt("en", t, "YYYY-MM-DD", "2024-01-05");
	check_fmt("en", t, "YYYY/MM/YYYY-MM-DD ddd", "2024/01/2024-01-05 Fri");
	check_fmt("en", t, "YYYY/MMMM/YYYY-MM-DD dddd",
		  "2024/January/2024-01-05 Friday");
	check_fmt("en", t, "Do MMMM YYYY", "5th January 2024");
	check_fmt("en", t, "dddd, MMMM Do, YYYY", "Friday, January 5th, 2024");
	check_fmt("en", t, "YY.M.D dd", "24.1.5 Fr");
	check_fmt("en", t, "MMM D, YYYY", "Jan 5, 2024");
	check_fmt("en", t, "DDD DDDD DDDo", "5 005 5th");
	check_fmt("en", t, "d do e E", "5 5th 5 5");
	check_fmt("en-gb", t, "e", "4");
	check_fmt("en", t, "Y", "2024");
	check_fmt("en", t, "L", "01/05/2024");
	check_fmt("en", t, "LL", "January 5, 2024");
	check_fmt("en-gb", t, "L", "05/01/2024");
	check_fmt("en-gb", t, "LL", "5 January 2024");
	/* Ordinals: 11th-13th are not 1st-3rd. */
	static const struct {
		int d;
		const char *s;
	} ords[] = {{1, "1st"},	  {2, "2nd"},	{3, "3rd"},   {4, "4th"},
		    {11, "11th"}, {12, "12th"}, {13, "13th"}, {21, "21st"},
		    {22, "22nd"}, {23, "23rd"}, {30, "30th"}, {31, "31st"}};
	for (size_t i = 0; i < ARRAY_SIZE(ords); i++)
		check_fmt("en", day(2024, 3, ords[i].d), "Do", ords[i].s);
}

static void test_escapes(void)
{
	struct moment_tm t = day(2024, 3, 9);
	check_fmt("en", t, "[Week] w [of] gggg", "Week 10 of 2024");
	check_fmt("en", t, "YYYY-[Q]Q", "2024-Q1");
	check_fmt("en", t, "[YYYY]-YYYY", "YYYY-2024");
	check_fmt("en", t, "\\Y\\Y YYYY", "YY 2024");
	check_fmt("en", t, "[Daily]/YYYY/[Note] MM-DD",
		  "Daily/2024/Note 03-09");
	/* A bracket with no end is plain text, as in Moment. */
	check_fmt("en", t, "[YYYY", "[2024");
	/* Letters that are no token stay as they are. */
	check_fmt("en", t, "YYYY_MM_DD (ji)", "2024_03_09 (ji)");
}

static void test_weeks(void)
{
	/* 2024-12-30 is a Monday: week 1 of 2025 in both systems. */
	struct moment_tm t = day(2024, 12, 30);
	check_fmt("en", t, "gggg-[W]ww", "2025-W01");
	check_fmt("en", t, "GGGG-[W]WW", "2025-W01");
	check_fmt("en", t, "YYYY-[W]ww", "2024-W01");
	check_fmt("en", t, "gg w wo W Wo GG", "25 1 1st 1 1st 25");
	/* 2027-01-01 is a Friday: English week 1 of 2027, ISO week 53 of
	 * 2026. */
	t = day(2027, 1, 1);
	check_fmt("en", t, "gggg-[W]ww", "2027-W01");
	check_fmt("en", t, "GGGG-[W]WW", "2026-W53");
	check_fmt("en-gb", t, "gggg-[W]ww", "2026-W53");
	/* Sunday 2023-12-31: English week 1 of 2024, ISO week 52 of 2023. */
	t = day(2023, 12, 31);
	check_fmt("en", t, "gggg-[W]ww", "2024-W01");
	check_fmt("en", t, "GGGG-[W]WW", "2023-W52");
	/* 2021-01-03, a Sunday: ISO week 53 of 2020. */
	check_fmt("en", day(2021, 1, 3), "GGGG-[W]WW E", "2020-W53 7");
	check_fmt("en", day(2021, 1, 3), "gggg-[W]ww", "2021-W02");
	/* 2022-01-01 is a Saturday: English week 1, ISO week 52 of 2021. */
	check_fmt("en", day(2022, 1, 1), "gggg-[W]ww GGGG-[W]WW",
		  "2022-W01 2021-W52");
	check_fmt("en", day(2022, 12, 31), "gggg-[W]ww", "2022-W53");
}

static void test_months_quarters_leap(void)
{
	check_fmt("en", day(2024, 9, 1), "MMMM YYYY", "September 2024");
	check_fmt("en", day(2024, 9, 1), "YYYY-MM", "2024-09");
	check_fmt("en", day(2024, 9, 1), "YYYY-[Q]Q Qo", "2024-Q3 3rd");
	check_fmt("en", day(2024, 12, 31), "YYYY-[Q]Q", "2024-Q4");
	check_fmt("en", day(2024, 2, 29), "YYYY-MM-DD ddd DDD",
		  "2024-02-29 Thu 60");
	check_fmt("en", day(2024, 12, 31), "DDDD", "366");
	check_fmt("en", day(2023, 12, 31), "DDDD", "365");
	check_fmt("en", day(2000, 2, 29), "dddd", "Tuesday");
	/* Adding keeps Moment's month-end clamp. */
	struct moment_tm t = day(2024, 1, 31);
	CU_ASSERT_EQUAL(moment_add(&t, 1, 'M'), 0);
	CU_ASSERT(t.month == 2 && t.day == 29);
	t = day(2024, 2, 29);
	CU_ASSERT_EQUAL(moment_add(&t, 1, 'y'), 0);
	CU_ASSERT(t.year == 2025 && t.month == 2 && t.day == 28);
	t = day(2024, 12, 31);
	CU_ASSERT_EQUAL(moment_add(&t, 1, 'd'), 0);
	CU_ASSERT(t.year == 2025 && t.month == 1 && t.day == 1);
	CU_ASSERT_EQUAL(moment_add(&t, -1, 'w'), 0);
	CU_ASSERT(t.year == 2024 && t.month == 12 && t.day == 25);
	CU_ASSERT_EQUAL(moment_add(&t, 1, 'q'), -EINVAL);
}

static void test_times(void)
{
	struct moment_tm t = {.year = 2024,
			      .month = 1,
			      .day = 5,
			      .hour = 0,
			      .min = 7,
			      .sec = 9,
			      .ms = 45,
			      .gmtoff = 3600};
	check_fmt("en", t, "HH:mm:ss.SSS", "00:07:09.045");
	check_fmt("en", t, "h:mm a", "12:07 am");
	check_fmt("en", t, "k kk H", "24 24 0");
	check_fmt("en", t, "Z ZZ", "+01:00 +0100");
	check_fmt("en", t, "X", "1704409629");
	check_fmt("en", t, "x", "1704409629045");
	t.hour = 13;
	check_fmt("en", t, "hh:mm A", "01:07 PM");
	check_fmt("en", t, "LT", "1:07 PM");
	check_fmt("en-gb", t, "LT", "13:07");
	check_fmt("en", t, "LLLL", "Friday, January 5, 2024 1:07 PM");
	struct moment_tm p;
	CU_ASSERT_EQUAL(moment_parse("YYYY-MM-DD hh:mm A",
				     "2024-01-05 01:07 PM", loc("en"), &p,
				     NULL),
			0);
	CU_ASSERT(p.hour == 13 && p.min == 7);
	CU_ASSERT_EQUAL(moment_parse("YYYY-MM-DD h a", "2024-01-05 12 am",
				     loc("en"), &p, NULL),
			0);
	CU_ASSERT_EQUAL(p.hour, 0);
}

static void test_parse(void)
{
	check_parse("en", "YYYY-MM-DD", "2024-01-05", "2024-01-05");
	check_parse("en", "YYYY/MM/YYYY-MM-DD ddd", "2024/01/2024-01-05 Fri",
		    "2024-01-05");
	check_parse("en", "Do MMMM YYYY", "5th January 2024", "2024-01-05");
	check_parse("en", "Do MMMM YYYY", "5th january 2024", "2024-01-05");
	check_parse("en", "MMMM YYYY", "September 2024", "2024-09-01");
	check_parse("en", "YYYY-[Q]Q", "2024-Q3", "2024-07-01");
	check_parse("en", "YYYY", "2024", "2024-01-01");
	/* A week's name is its first day. */
	check_parse("en", "gggg-[W]ww", "2025-W01", "2024-12-29");
	check_parse("en", "gggg-[W]ww", "2024-W01", "2023-12-31");
	check_parse("en", "GGGG-[W]WW", "2026-W53", "2026-12-28");
	check_parse("en-gb", "gggg-[W]ww", "2026-W53", "2026-12-28");
	check_parse("en", "GGGG-[W]WW-E", "2020-W53-7", "2021-01-03");
	check_parse("en", "YYYY-DDDD", "2024-366", "2024-12-31");
	/* Leap days: only in leap years. */
	check_parse("en", "YYYY-MM-DD", "2024-02-29", "2024-02-29");
	check_parse("en", "YYYY-MM-DD", "2023-02-29", "invalid");
	check_parse("en", "YYYY-MM-DD", "1900-02-29", "invalid");
	check_parse("en", "YYYY-MM-DD", "2000-02-29", "2000-02-29");
	/* Strict: widths, weekdays, what is left, parts that disagree. */
	check_parse("en", "YYYY-MM-DD", "2024-1-05", "invalid");
	check_parse("en", "YYYY-M-D", "2024-1-5", "2024-01-05");
	check_parse("en", "YYYY-MM-DD", "2024-01-05 copy", "invalid");
	check_parse("en", "YYYY-MM-DD ddd", "2024-01-05 Sat", "invalid");
	check_parse("en", "YYYY/MM/YYYY-MM-DD", "2024/02/2024-01-05",
		    "invalid");
	check_parse("en", "YYYY-MM-DD", "2024-13-01", "invalid");
	check_parse("en", "gggg-[W]ww", "2024-W53", "invalid");
	check_parse("en", "YYYY-[Q]Q", "2024-Q5", "invalid");
	check_parse("en", "Do MMMM YYYY", "5st January 2024", "invalid");
	const char *why = NULL;
	struct moment_tm t;
	CU_ASSERT_EQUAL(
		moment_parse("YYYY-MM-DD", "2024-1-05", loc("en"), &t, &why),
		-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(why);
}

/* Every day of 2020-2030, in each format users give, reads back as the
 * day itself (day formats) or as its period's first day. */
static void test_roundtrip(void)
{
	static const struct {
		const char *fmt;
		char unit; /* what the name keeps: the period it names */
	} F[] = {
		{"YYYY-MM-DD", 'd'},
		{"YYYY/MM/YYYY-MM-DD ddd", 'd'},
		{"Do MMMM YYYY", 'd'},
		{"dddd, MMMM D, YYYY", 'd'},
		{"YYYY/MMMM/DD-dd", 'd'},
		{"YY-DDDD", 'd'},
		{"gggg-[W]ww", 'w'},
		{"YYYY-MM", 'M'},
		{"MMMM YYYY", 'M'},
		{"YYYY-[Q]Q", 'Q'},
		{"YYYY", 'y'},
	};
	const struct moment_locale *l = loc("en");
	int64_t from = moment_days(2020, 1, 1), to = moment_days(2031, 1, 1);
	int bad = 0;
	for (int64_t d = from; d < to; d++) {
		struct moment_tm t = {0};
		moment_from_days(d, &t);
		for (size_t i = 0; i < ARRAY_SIZE(F); i++) {
			_cleanup_free_ char *s = moment_format(F[i].fmt, &t, l);
			struct moment_tm p, want = t;
			moment_start_of(&want, F[i].unit, l);
			if (moment_parse(F[i].fmt, s, l, &p, NULL) < 0 ||
			    p.year != want.year || p.month != want.month ||
			    p.day != want.day) {
				if (bad++ < 5)
					fprintf(stderr, "  roundtrip %s: %s\n",
						F[i].fmt, s);
			}
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* ISO weeks read back as their Monday. */
	struct moment_tm t = day(2027, 1, 1), p;
	_cleanup_free_ char *s = moment_format("GGGG-[W]WW", &t, l);
	CU_ASSERT_EQUAL(moment_parse("GGGG-[W]WW", s, l, &p, NULL), 0);
	CU_ASSERT(p.year == 2026 && p.month == 12 && p.day == 28);
}

/* Localized names, ordinals and long forms as Moment 2.29's de, fr
 * and es locales write them (checked against Moment on 4,140 dates and
 * formats), and read back. */
static void test_localized_names(void)
{
	static const struct {
		const char *loc, *fmt, *want;
	} cases[] = {
		{"de", "dddd, D. MMMM YYYY", "Sonntag, 3. März 2024"},
		{"de", "ddd DD MMM YYYY", "So. 03 März 2024"},
		{"de", "Do MMMM", "3. März"},
		{"de", "LLLL", "Sonntag, 3. März 2024 00:00"},
		{"fr", "dddd D MMMM YYYY", "dimanche 3 mars 2024"},
		{"fr", "Do MMM", "3 mars"},
		{"fr", "Mo Wo", "3e 9e"},
		{"fr", "ddd dd", "dim. di"},
		{"es", "dddd, D [de] MMMM [de] YYYY",
		 "domingo, 3 de marzo de 2024"},
		{"es", "D MMM YYYY", "3 mar. 2024"},
		{"es", "DD-MMM-YYYY", "03-mar-2024"},
		{"es", "Do", "3º"},
	};
	struct moment_tm t = day(2024, 3, 3);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct moment_locale *l = loc(cases[i].loc);
		_cleanup_free_ char *s = moment_format(cases[i].fmt, &t, l);
		if (strcmp(s, cases[i].want))
			fprintf(stderr, "  %s %s: %s\n", cases[i].loc,
				cases[i].fmt, s);
		ASSERT_STR_EQ(s, cases[i].want);
		if (strstr(cases[i].fmt, "YYYY")) {
			struct moment_tm p;
			CU_ASSERT_EQUAL(
				moment_parse(cases[i].fmt, s, l, &p, NULL), 0);
			CU_ASSERT(p.year == 2024 && p.month == 3 && p.day == 3);
		}
	}
	/* The first of the month: French "1er", a week "1re". */
	struct moment_tm first = day(2024, 1, 1);
	_cleanup_free_ char *fr =
		moment_format("Do MMMM, wo", &first, loc("fr"));
	ASSERT_STR_EQ(fr, "1er janvier, 1re");
	/* A name in another language is not read. */
	struct moment_tm p;
	CU_ASSERT_EQUAL(moment_parse("D MMMM YYYY", "3 March 2024", loc("de"),
				     &p, NULL),
			-EINVAL);
}

static void test_locales(void)
{
	const struct moment_locale *l;
	CU_ASSERT_EQUAL(moment_locale_find("EN_GB", &l), 0);
	ASSERT_STR_EQ(l->name, "en-gb");
	CU_ASSERT_EQUAL(moment_locale_find("ja", &l), -ENOENT);
	CU_ASSERT_EQUAL(moment_locale_find("a-very-long-locale-name", &l),
			-ENOENT);
	ASSERT_CONTAINS(moment_locales_known(), "en-gb");
	struct moment_tm t = day(2024, 1, 10);
	moment_start_of(&t, 'w', loc("en"));
	CU_ASSERT_EQUAL(t.day, 7);
	t = day(2024, 1, 10);
	moment_start_of(&t, 'w', loc("en-gb"));
	CU_ASSERT_EQUAL(t.day, 8);
	t = day(2024, 8, 10);
	moment_start_of(&t, 'Q', l);
	CU_ASSERT(t.month == 7 && t.day == 1);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"daily_formats", test_daily_formats},
		{"escapes", test_escapes},
		{"weeks", test_weeks},
		{"months_quarters_leap", test_months_quarters_leap},
		{"times", test_times},
		{"parse", test_parse},
		{"roundtrip", test_roundtrip},
		{"locales", test_locales},
		{"localized_names", test_localized_names},
	};
	return run_tests("moment", tests, ARRAY_SIZE(tests));
}
