/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The locales Moment formats speak (see moment.h): names of months and
 * weekdays, ordinals, long-date forms and week rules, as Moment 2.29's
 * en, en-gb, en-ie, de, fr and es locales have them.
 */
#include "moment.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

/* Names as Moment 2.29's locales spell them (month, short month,
 * weekday from Sunday: long, short, min). */
static const char *const MONTHS[] = {
	"January", "February", "March",	    "April",   "May",	   "June",
	"July",	   "August",   "September", "October", "November", "December",
};
static const char *const MONTHS_SHORT[] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};
static const char *const DAYS[] = {
	"Sunday",   "Monday", "Tuesday",  "Wednesday",
	"Thursday", "Friday", "Saturday",
};
static const char *const DAYS_SHORT[] = {"Sun", "Mon", "Tue", "Wed",
					 "Thu", "Fri", "Sat"};
static const char *const DAYS_MIN[] = {"Su", "Mo", "Tu", "We",
				       "Th", "Fr", "Sa"};

static const char *const DE_MONTHS[] = {
	"Januar", "Februar", "März",	  "April",   "Mai",	 "Juni",
	"Juli",	  "August",  "September", "Oktober", "November", "Dezember",
};
static const char *const DE_MONTHS_SHORT[] = {
	"Jan.", "Feb.", "März", "Apr.", "Mai",	"Juni",
	"Juli", "Aug.", "Sep.", "Okt.", "Nov.", "Dez.",
};
static const char *const DE_DAYS[] = {
	"Sonntag",    "Montag",	 "Dienstag", "Mittwoch",
	"Donnerstag", "Freitag", "Samstag",
};
static const char *const DE_DAYS_SHORT[] = {"So.", "Mo.", "Di.", "Mi.",
					    "Do.", "Fr.", "Sa."};
static const char *const DE_DAYS_MIN[] = {"So", "Mo", "Di", "Mi",
					  "Do", "Fr", "Sa"};

static const char *const FR_MONTHS[] = {
	"janvier", "février", "mars",	   "avril",   "mai",	  "juin",
	"juillet", "août",    "septembre", "octobre", "novembre", "décembre",
};
static const char *const FR_MONTHS_SHORT[] = {
	"janv.", "févr.", "mars",  "avr.", "mai",  "juin",
	"juil.", "août",  "sept.", "oct.", "nov.", "déc.",
};
static const char *const FR_DAYS[] = {
	"dimanche", "lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi",
};
static const char *const FR_DAYS_SHORT[] = {"dim.", "lun.", "mar.", "mer.",
					    "jeu.", "ven.", "sam."};
static const char *const FR_DAYS_MIN[] = {"di", "lu", "ma", "me",
					  "je", "ve", "sa"};

static const char *const ES_MONTHS[] = {
	"enero", "febrero", "marzo",	  "abril",   "mayo",	  "junio",
	"julio", "agosto",  "septiembre", "octubre", "noviembre", "diciembre",
};
static const char *const ES_MONTHS_SHORT[] = {
	"ene.", "feb.", "mar.", "abr.", "may.", "jun.",
	"jul.", "ago.", "sep.", "oct.", "nov.", "dic.",
};
static const char *const ES_MONTHS_DASHED[] = {
	"ene", "feb", "mar", "abr", "may", "jun",
	"jul", "ago", "sep", "oct", "nov", "dic",
};
static const char *const ES_DAYS[] = {
	"domingo", "lunes",   "martes", "miércoles",
	"jueves",  "viernes", "sábado",
};
static const char *const ES_DAYS_SHORT[] = {"dom.", "lun.", "mar.", "mié.",
					    "jue.", "vie.", "sáb."};
static const char *const ES_DAYS_MIN[] = {"do", "lu", "ma", "mi",
					  "ju", "vi", "sá"};

#define EN_NAMES MONTHS, MONTHS_SHORT, DAYS, DAYS_SHORT, DAYS_MIN, NULL, ORD_EN

static const struct moment_locale LOCALES[] = {
	{"en", 0, 6, "h:mm A", "h:mm:ss A", "MM/DD/YYYY", "MMMM D, YYYY",
	 "MMMM D, YYYY h:mm A", "dddd, MMMM D, YYYY h:mm A", EN_NAMES},
	{"en-us", 0, 6, "h:mm A", "h:mm:ss A", "MM/DD/YYYY", "MMMM D, YYYY",
	 "MMMM D, YYYY h:mm A", "dddd, MMMM D, YYYY h:mm A", EN_NAMES},
	{"en-gb", 1, 4, "HH:mm", "HH:mm:ss", "DD/MM/YYYY", "D MMMM YYYY",
	 "D MMMM YYYY HH:mm", "dddd, D MMMM YYYY HH:mm", EN_NAMES},
	{"en-ie", 1, 4, "HH:mm", "HH:mm:ss", "DD/MM/YYYY", "D MMMM YYYY",
	 "D MMMM YYYY HH:mm", "dddd D MMMM YYYY HH:mm", EN_NAMES},
	{"de", 1, 4, "HH:mm", "HH:mm:ss", "DD.MM.YYYY", "D. MMMM YYYY",
	 "D. MMMM YYYY HH:mm", "dddd, D. MMMM YYYY HH:mm", DE_MONTHS,
	 DE_MONTHS_SHORT, DE_DAYS, DE_DAYS_SHORT, DE_DAYS_MIN, NULL, ORD_DOT},
	{"fr", 1, 4, "HH:mm", "HH:mm:ss", "DD/MM/YYYY", "D MMMM YYYY",
	 "D MMMM YYYY HH:mm", "dddd D MMMM YYYY HH:mm", FR_MONTHS,
	 FR_MONTHS_SHORT, FR_DAYS, FR_DAYS_SHORT, FR_DAYS_MIN, NULL, ORD_FR},
	{"es", 1, 4, "H:mm", "H:mm:ss", "DD/MM/YYYY", "D [de] MMMM [de] YYYY",
	 "D [de] MMMM [de] YYYY H:mm", "dddd, D [de] MMMM [de] YYYY H:mm",
	 ES_MONTHS, ES_MONTHS_SHORT, ES_DAYS, ES_DAYS_SHORT, ES_DAYS_MIN,
	 ES_MONTHS_DASHED, ORD_MASC},
};

int moment_locale_find(const char *name, const struct moment_locale **ret)
{
	char want[16];
	size_t n = strlen(name);
	if (n >= sizeof(want))
		return -ENOENT;
	for (size_t i = 0; i <= n; i++)
		want[i] = name[i] == '_' ? '-' : (char)tolower(name[i]);
	for (size_t i = 0; i < ARRAY_SIZE(LOCALES); i++) {
		if (!strcmp(LOCALES[i].name, want)) {
			*ret = &LOCALES[i];
			return 0;
		}
	}
	return -ENOENT;
}

const char *moment_locales_known(void)
{
	return "en, en-us, en-gb, en-ie, de, fr, es";
}

const struct moment_locale *moment_locale_default(void)
{
	return &LOCALES[0];
}
