/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Daily (weekly, monthly, quarterly, yearly) notes and templates, the way
 * the vault's own Obsidian settings have them: the core Daily notes
 * plugin (.obsidian/daily-notes.json), the Periodic Notes plugin
 * (.obsidian/plugins/periodic-notes/data.json) and the core Templates
 * plugin (.obsidian/templates.json). Also the filling of a template's
 * core variables ({{title}}, {{date}}, {{time}} and their :FORMAT
 * forms). Templater's <% ... %> is code: it is recognised, never run.
 */
#pragma once

#include "moment.h"

#include <stdbool.h>

enum period {
	PERIOD_DAY,
	PERIOD_WEEK,
	PERIOD_MONTH,
	PERIOD_QUARTER,
	PERIOD_YEAR,
};

/* "day" (or "daily"), "week", "month", "quarter", "year"; -EINVAL. */
int period_from_name(const char *name, enum period *ret);
const char *period_name(enum period p);

/* Where one period's notes go. */
struct periodic_conf {
	enum period period;
	char *folder;	/* vault-relative, no slashes at the ends; "" */
	char *format;	/* Moment format of the note's name */
	char *template; /* vault path of the template (.md), or "" */
	/* The file the settings come from, or "defaults". */
	const char *source;
	struct moment_locale loc; /* week rules (weekStart applied) */
};

/*
 * The settings of one period. Daily notes follow Periodic Notes when it
 * is enabled and has daily notes on, else the core plugin's settings
 * (defaults: YYYY-MM-DD in the vault root); the other periods need
 * Periodic Notes (-ENOENT otherwise). A settings file that is not JSON
 * (-EBADMSG) or a locale without English names (-ENOTSUP) is an error;
 * *ret_msg says which file and what to do.
 */
int periodic_conf_load(int rootfd, enum period p, struct periodic_conf *ret,
		       char **ret_msg);
void periodic_conf_clear(struct periodic_conf *c);

/* The core Templates plugin's settings (defaults: no folder,
 * YYYY-MM-DD, HH:mm). */
struct templates_conf {
	char *folder;
	char *date_format;
	char *time_format;
};
int templates_conf_load(int rootfd, struct templates_conf *ret, char **ret_msg);
void templates_conf_clear(struct templates_conf *c);

/*
 * The day a date argument names: today, yesterday, tomorrow (local
 * time), an ISO date (2024-01-05, 2024-1-5, with or without a time
 * after it), or a note name in c's format (2024-W05). -EINVAL else.
 */
int periodic_date_arg(const struct periodic_conf *c, const char *arg,
		      struct moment_tm *ret);

/* The note's vault path for a date: folder/<format(date)>.md. */
char *periodic_note_path(const struct periodic_conf *c,
			 const struct moment_tm *date);

/* What a template's variables are filled with. */
struct template_vars {
	const char *title;
	/* {{date}}/{{time}}: this day, with now's time of day. */
	const struct moment_tm *date;
	const char *date_format; /* {{date}} */
	const char *time_format; /* {{time}} */
	const struct moment_locale *loc;
	/* A periodic note's: {{yesterday}}, {{tomorrow}} and the days of
	 * its week ({{monday:FORMAT}}), in date_format unless given. */
	bool periodic;
};

/* True when text uses Templater's syntax (<% ... %>). */
bool template_uses_templater(const char *text);
/*
 * text with {{title}}, {{date}}, {{time}}, {{date:FORMAT}},
 * {{time:FORMAT}}, the offsets {{date+1d}} / {{date-2w:FORMAT}} (y, Q,
 * M, w, d, h, m, s) and, for periodic notes, {{yesterday}},
 * {{tomorrow}}, {{sunday:FORMAT}} ... filled; other {{...}} stay as
 * they are (Obsidian leaves them). Caller frees.
 */
char *template_fill(const char *text, const struct template_vars *v);
