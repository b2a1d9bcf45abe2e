/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Task list items: Obsidian's checkboxes ("- [ ] text", "* [x]",
 * "1. [/]", in lists nested at any depth, in quotes and callouts) and
 * the Tasks plugin's emoji fields at the end of a task's text (📅 due,
 * ⏳ scheduled, 🛫 start, ✅ done, ➕ created, ❌ cancelled, 🔁
 * recurrence, 🏁 on completion, 🆔 id, ⛔ depends on, priorities 🔺 ⏫ 🔼 🔽 ⏬), read
 * the way the plugin reads them: from the end of the line back, in any order,
 * tags between them kept in the description.
 *
 * A note's tasks are found when it is indexed (never inside code, math,
 * comments or the frontmatter: the markdown scanner's code mask) and
 * kept as one compact byte string next to the note (note.h), so that
 * listing them reads no file. tasks_next() walks that string.
 */
#pragma once

#include "markdown.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The Tasks plugin's status types. */
enum task_status {
	TASK_TODO,
	TASK_IN_PROGRESS,
	TASK_DONE,
	TASK_CANCELLED,
};

enum task_date {
	TD_DUE,
	TD_SCHEDULED,
	TD_START,
	TD_DONE,
	TD_CREATED,
	TD_CANCELLED,
	TD_COUNT,
};

/* Priority, lowest to highest; TP_NORMAL when none is given. */
enum task_priority {
	TP_LOWEST,
	TP_LOW,
	TP_NORMAL,
	TP_MEDIUM,
	TP_HIGH,
	TP_HIGHEST,
};

#define TASK_NO_DATE INT32_MIN

/* Field names ("due", ...), status names ("todo", "in_progress", "done",
 * "cancelled") and priority names ("lowest" ... "highest"). */
const char *task_date_name(enum task_date d);
const char *task_status_name(enum task_status s);
const char *task_priority_name(enum task_priority p);
/* The status type of a checkbox symbol (the Tasks plugin's defaults:
 * ' ' todo, 'x' and 'X' done, '/' in progress, '-' cancelled, any
 * other todo). */
enum task_status task_symbol_status(int32_t symbol);

/* A symbol as UTF-8, NUL-ended. */
void task_symbol_utf8(int32_t symbol, char out[8]);

/* A task line: where its parts are in the text. */
struct task_line {
	size_t sym_off, sym_len;   /* the checkbox's symbol */
	size_t text_off, text_end; /* text after "[x] ", trailing blanks cut */
	int32_t symbol;
};

/* Whether the line text[ls, le) is a task; *ret says where its parts
 * are. The code mask is not looked at. */
bool task_line_at(const char *text, size_t ls, size_t le,
		  struct task_line *ret);

/* The emoji fields at the end of a task's text s[0, n). */
struct task_fields {
	int32_t dates[TD_COUNT]; /* days since 1970-01-01, or TASK_NO_DATE */
	/* Where each date's field is (emoji to value end); start == end
	 * when it has none. */
	size_t date_start[TD_COUNT], date_end[TD_COUNT];
	uint8_t priority; /* enum task_priority */
	bool any;	  /* at least one field */
	/* Values as written: offset and length in s (length 0: none). */
	size_t recur_off, recur_len;
	size_t id_off, id_len;
	size_t deps_off, deps_len;
	size_t done_off, done_len; /* 🏁 on completion */
	/* The text without its fields (and its ^block id), as spans of s. */
	size_t nkeep;
	size_t keep[2 * 24];
};

void task_parse_fields(const char *s, size_t n, struct task_fields *ret);
/* The description: s without its fields, blanks between parts single. */
char *task_description(const char *s, const struct task_fields *f);

/* A task as kept for a note (pointers into its task string). */
struct task {
	int line; /* 1-based */
	int32_t symbol;
	const char *text;
	uint32_t text_len;
	uint8_t priority;
	int32_t dates[TD_COUNT];
	const char *recur;
	uint32_t recur_len;
	/* Tags without '#', each NUL-ended, one after the other. */
	const char *tags;
	uint32_t ntags, tags_len;
};

/*
 * The tasks of a note's text as md_scan() read it (its body, first line
 * number, inline tags and code mask): a task string, or NULL (and 0)
 * when the note has none. Caller frees.
 */
unsigned char *tasks_scan(const char *text, size_t len, const struct md_doc *d,
			  uint32_t *ret_len);
/* Whether a stored task string is well formed. */
bool tasks_valid(const unsigned char *p, size_t n);
/* Whether a task of the string has Tasks plugin fields. */
bool tasks_use_fields(const unsigned char *p, size_t n);

/* Walk a task string: start with *pos = 0. */
bool tasks_next(const unsigned char *p, size_t n, size_t *pos,
		struct task *ret);

/*
 * A task's text with its status changed to symbol (from old_symbol):
 * with stamps, a ✅ date (today) is added when it becomes done and
 * removed when it stops being done, and a ❌ date alike for cancelled.
 * today is "YYYY-MM-DD". Returns the new text (caller frees).
 */
char *task_restamp(const char *s, size_t n, int32_t old_symbol, int32_t symbol,
		   bool stamps, const char *today);
