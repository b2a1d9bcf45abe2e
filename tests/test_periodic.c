/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Periodic notes and templates as tools: periodic_note and
 * append_periodic_note following daily-notes.json and the Periodic
 * Notes plugin's data.json (both of its layouts), templates filled and
 * Templater refused, create_note's template merged with the frontmatter
 * and content given, and every write through the guard.
 */
#include "testutil.h"
#include "moment.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void json_deletep(cJSON **p)
{
	cJSON_Delete(*p);
}
#define _cleanup_json_ _cleanup_(json_deletep)

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool jtrue(const cJSON *o, const char *key)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* A call's JSON result; a failure is shown and gives NULL. */
static cJSON *call(struct tvault *t, const char *tool, const char *args)
{
	cJSON *r = tv_call_json(t, tool, args);
	if (!r) {
		_cleanup_free_ char *e = tv_call_err(t, tool, args);
		fprintf(stderr, "  %s(%s) failed: %s\n", tool, args, e);
	}
	return r;
}

/* Today (local) moved by n days, in fmt. */
static char *day_from_now(int n, const char *fmt)
{
	struct moment_tm t;
	moment_now(&t);
	moment_add(&t, n, 'd');
	return moment_format(fmt, &t, moment_locale_default());
}

static void test_defaults(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Home.md", "home\n");
	tv_open(&t);
	_cleanup_json_ cJSON *a =
		call(&t, "periodic_note", "{\"date\": \"2024-1-5\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	ASSERT_STR_EQ(jstr(a, "path"), "2024-01-05.md");
	ASSERT_STR_EQ(jstr(a, "date"), "2024-01-05");
	CU_ASSERT(!jtrue(a, "exists"));
	CU_ASSERT_PTR_NULL(jstr(a, "text"));
	CU_ASSERT(!tv_exists(&t, "2024-01-05.md"));
	/* Today by default; create makes it (no template: empty). */
	_cleanup_free_ char *today = day_from_now(0, "YYYY-MM-DD");
	_cleanup_free_ char *want = xasprintf("%s.md", today);
	_cleanup_json_ cJSON *b =
		call(&t, "periodic_note", "{\"create\": true}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	ASSERT_STR_EQ(jstr(b, "path"), want);
	CU_ASSERT(jtrue(b, "exists") && jtrue(b, "created"));
	ASSERT_STR_EQ(jstr(b, "text"), "");
	CU_ASSERT(tv_exists(&t, want));
	/* Again: there already, nothing made. */
	_cleanup_json_ cJSON *c = call(
		&t, "periodic_note", "{\"create\": true, \"date\": \"today\"}");
	CU_ASSERT(jtrue(c, "exists") && !jtrue(c, "created"));
	_cleanup_free_ char *yday = day_from_now(-1, "YYYY-MM-DD");
	_cleanup_json_ cJSON *d =
		call(&t, "periodic_note", "{\"date\": \"yesterday\"}");
	ASSERT_STR_EQ(jstr(d, "date"), yday);
	_cleanup_free_ char *tmrw = day_from_now(1, "YYYY-MM-DD");
	_cleanup_json_ cJSON *e =
		call(&t, "periodic_note", "{\"date\": \"Tomorrow\"}");
	ASSERT_STR_EQ(jstr(e, "date"), tmrw);
	/* Bad dates and periods say what works. */
	_cleanup_free_ char *e1 =
		tv_call_err(&t, "periodic_note", "{\"date\": \"2023-02-29\"}");
	ASSERT_CONTAINS(e1, "Invalid date '2023-02-29'");
	ASSERT_CONTAINS(e1, "ISO date");
	_cleanup_free_ char *e2 =
		tv_call_err(&t, "periodic_note", "{\"date\": \"soon\"}");
	ASSERT_CONTAINS(e2, "Invalid date 'soon'");
	_cleanup_free_ char *e3 =
		tv_call_err(&t, "periodic_note", "{\"period\": \"decade\"}");
	ASSERT_CONTAINS(e3, "Invalid period 'decade'");
	/* Weeks need Periodic Notes. */
	_cleanup_free_ char *e4 =
		tv_call_err(&t, "periodic_note", "{\"period\": \"week\"}");
	ASSERT_CONTAINS(e4, "Weekly notes are not set up");
	ASSERT_CONTAINS(e4, "periodic-notes/data.json");
	tv_close(&t);
}

static const char DAILY_TEMPLATE[] =
	"---\ntags: [journal]\n---\n# {{title}}\n\n"
	"date={{date}} ymd={{date:YYYY-MM-DD}} next={{date+1d:ddd}}\n"
	"prev=[[{{yesterday}}]] then=[[{{tomorrow}}]] {{unknown}} {{time}}\n"
	"\n## Log\n\n## Tasks\n";

static void test_daily_core_settings(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(
		&t, ".obsidian/daily-notes.json",
		"{\"folder\": \"/Journal/\", \"format\": "
		"\"YYYY/MM/YYYY-MM-DD ddd\", \"template\": \"Templates/Day\"}");
	tv_write(&t, "Templates/Day.md", DAILY_TEMPLATE);
	tv_open(&t);
	_cleanup_json_ cJSON *a =
		call(&t, "periodic_note",
		     "{\"date\": \"2024-02-29\", \"create\": true}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	const char *path = "Journal/2024/02/2024-02-29 Thu.md";
	ASSERT_STR_EQ(jstr(a, "path"), path);
	ASSERT_STR_EQ(jstr(a, "name"), "2024-02-29 Thu");
	_cleanup_free_ char *text = tv_read(&t, path);
	ASSERT_CONTAINS(text, "---\ntags: [journal]\n---\n# 2024-02-29 Thu\n");
	ASSERT_CONTAINS(text, "date=2024/02/2024-02-29 Thu ymd=2024-02-29 "
			      "next=Fri\n");
	ASSERT_CONTAINS(text, "prev=[[2024/02/2024-02-28 Wed]] "
			      "then=[[2024/03/2024-03-01 Fri]] {{unknown}} ");
	ASSERT_NOT_CONTAINS(text, "{{time}}");
	ASSERT_STR_EQ(jstr(a, "text"), text);
	CU_ASSERT_EQUAL(strlen(jstr(a, "version")), 12);
	/* The note's own name works as a date. */
	_cleanup_json_ cJSON *b = call(
		&t, "periodic_note", "{\"date\": \"2024/02/2024-02-29 Thu\"}");
	CU_ASSERT(jtrue(b, "exists"));
	ASSERT_STR_EQ(jstr(b, "text"), text);
	/* And its vault path. */
	_cleanup_json_ cJSON *b2 =
		call(&t, "periodic_note",
		     "{\"date\": \"Journal/2024/02/2024-02-29 Thu.md\"}");
	ASSERT_STR_EQ(jstr(b2, "date"), "2024-02-29");
	/* A missing template is an error naming the setting. */
	tv_write(&t, ".obsidian/daily-notes.json",
		 "{\"folder\": \"Journal\", \"template\": \"Templates/Gone\"}");
	_cleanup_free_ char *e =
		tv_call_err(&t, "periodic_note",
			    "{\"date\": \"2024-03-01\", \"create\": true}");
	ASSERT_CONTAINS(e, "Templates/Gone.md");
	ASSERT_CONTAINS(e, ".obsidian/daily-notes.json");
	CU_ASSERT(!tv_exists(&t, "Journal/2024-03-01.md"));
	/* Settings that are not JSON. */
	tv_write(&t, ".obsidian/daily-notes.json", "{folder: x");
	_cleanup_free_ char *e2 = tv_call_err(&t, "periodic_note", "{}");
	ASSERT_CONTAINS(e2, ".obsidian/daily-notes.json is not a JSON object");
	tv_close(&t);
}

static void test_periodic_plugin(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".obsidian/community-plugins.json",
		 "[\"calendar\", \"periodic-notes\"]");
	tv_write(
		&t, ".obsidian/plugins/periodic-notes/data.json",
		"{\"daily\": {\"enabled\": true, \"folder\": \"Days\", "
		"\"format\": \"Do MMMM YYYY\", \"template\": \"\"},"
		"\"weekly\": {\"enabled\": true, \"folder\": \"Weeks\", "
		"\"format\": \"gggg-[W]ww\", \"template\": \"T/Week\"},"
		"\"monthly\": {\"enabled\": false, \"format\": \"YYYY-MM\"},"
		"\"quarterly\": {\"enabled\": true, \"format\": \"YYYY-[Q]Q\"}}");
	tv_write(&t, ".obsidian/daily-notes.json", "{\"folder\": \"Core\"}");
	tv_write(&t, "T/Week.md",
		 "# {{title}}\nfrom {{sunday:YYYY-MM-DD}} to "
		 "{{saturday:YYYY-MM-DD}}\n");
	tv_open(&t);
	_cleanup_json_ cJSON *d =
		call(&t, "periodic_note", "{\"date\": \"2024-01-01\"}");
	ASSERT_STR_EQ(jstr(d, "path"), "Days/1st January 2024.md");
	/* 2024-12-30: English week 1 of 2025 (Sunday 12-29 to 2025-01-04). */
	_cleanup_json_ cJSON *w = call(
		&t, "periodic_note",
		"{\"period\": \"week\", \"date\": \"2024-12-30\", \"create\": true}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	ASSERT_STR_EQ(jstr(w, "path"), "Weeks/2025-W01.md");
	ASSERT_STR_EQ(jstr(w, "text"),
		      "# 2025-W01\nfrom 2024-12-29 to 2025-01-04\n");
	/* A week's name reads back as its first day. */
	_cleanup_json_ cJSON *w2 =
		call(&t, "periodic_note",
		     "{\"period\": \"week\", \"date\": \"2025-W01\"}");
	ASSERT_STR_EQ(jstr(w2, "date"), "2024-12-29");
	CU_ASSERT(jtrue(w2, "exists"));
	_cleanup_json_ cJSON *q =
		call(&t, "periodic_note",
		     "{\"period\": \"quarter\", \"date\": \"2024-05-15\"}");
	ASSERT_STR_EQ(jstr(q, "path"), "2024-Q2.md");
	_cleanup_free_ char *e =
		tv_call_err(&t, "periodic_note", "{\"period\": \"monthly\"}");
	ASSERT_CONTAINS(e, "Monthly notes are not set up");
	ASSERT_CONTAINS(e, "do not enable");
	/* The plugin switched off in Obsidian: the core settings count. */
	tv_write(&t, ".obsidian/community-plugins.json", "[\"calendar\"]");
	_cleanup_json_ cJSON *d2 =
		call(&t, "periodic_note", "{\"date\": \"2024-01-01\"}");
	ASSERT_STR_EQ(jstr(d2, "path"), "Core/2024-01-01.md");
	tv_close(&t);
}

/* Periodic Notes 1.x: calendar sets, templatePath, locale and week
 * start. */
static void test_plugin_v1_locale(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".obsidian/plugins/periodic-notes/data.json",
		 "{\"activeCalendarSet\": \"work\", \"calendarSets\": ["
		 "{\"id\": \"default\", \"week\": {\"enabled\": true, "
		 "\"format\": \"[wrong]\"}},"
		 "{\"id\": \"work\", \"week\": {\"enabled\": true, \"folder\": "
		 "\"W\", \"format\": \"gggg-[W]ww\", \"templatePath\": "
		 "\"T/Wk.md\"},"
		 "\"year\": {\"enabled\": true, \"format\": \"YYYY\"}}],"
		 "\"localeOverride\": \"en-gb\"}");
	tv_write(&t, "T/Wk.md", "{{monday:ddd D}} {{sunday:ddd D}}\n");
	tv_open(&t);
	/* en-gb weeks are ISO weeks: 2027-01-01 is in 2026's week 53. */
	_cleanup_json_ cJSON *w = call(
		&t, "periodic_note",
		"{\"period\": \"week\", \"date\": \"2027-01-01\", \"create\": true}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	ASSERT_STR_EQ(jstr(w, "path"), "W/2026-W53.md");
	ASSERT_STR_EQ(jstr(w, "text"), "Mon 28 Sun 3\n");
	_cleanup_json_ cJSON *y =
		call(&t, "periodic_note",
		     "{\"period\": \"year\", \"date\": \"2024-06-01\"}");
	ASSERT_STR_EQ(jstr(y, "path"), "2024.md");
	/* A week start of its own (the Calendar plugin's weekStart). */
	tv_write(&t, ".obsidian/plugins/periodic-notes/data.json",
		 "{\"calendarSets\": [{\"id\": \"a\", \"week\": {\"enabled\": "
		 "true, \"format\": \"gggg-[W]ww\"}}], \"weekStart\": "
		 "\"monday\"}");
	/* Sunday 2024-01-07 ends week 1 when weeks start on Monday (it
	 * starts week 2 in English weeks). */
	_cleanup_json_ cJSON *m =
		call(&t, "periodic_note",
		     "{\"period\": \"week\", \"date\": \"2024-01-07\"}");
	ASSERT_STR_EQ(jstr(m, "path"), "2024-W01.md");
	/* A locale vaultd has no names for: a clear error. */
	tv_write(
		&t, ".obsidian/plugins/periodic-notes/data.json",
		"{\"daily\": {\"enabled\": true}, \"localeOverride\": \"ja\"}");
	_cleanup_free_ char *e = tv_call_err(&t, "periodic_note", "{}");
	ASSERT_CONTAINS(e, "sets the locale ja");
	ASSERT_CONTAINS(e, "en-gb");
	tv_close(&t);
}

static void test_append(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".obsidian/daily-notes.json",
		 "{\"folder\": \"Daily\", \"template\": \"Templates/Day.md\"}");
	tv_write(&t, "Templates/Day.md", "# {{title}}\n\n## Log\n\n## Tasks\n");
	tv_open(&t);
	/* Missing: made from the template, then appended to. */
	_cleanup_json_ cJSON *a = call(
		&t, "append_periodic_note",
		"{\"text\": \"- met Ann\", \"date\": \"2024-01-05\", \"section\": "
		"\"Log\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT(jtrue(a, "created"));
	ASSERT_STR_EQ(jstr(a, "path"), "Daily/2024-01-05.md");
	_cleanup_free_ char *t1 = tv_read(&t, "Daily/2024-01-05.md");
	ASSERT_STR_EQ(t1, "# 2024-01-05\n\n## Log\n- met Ann\n\n## Tasks\n");
	/* There: appended as append_section and append_note do. */
	_cleanup_json_ cJSON *b = call(
		&t, "append_periodic_note",
		"{\"text\": \"- call Bob\", \"date\": \"2024-01-05\", \"section\": "
		"\"## Log\"}");
	CU_ASSERT(b && !jtrue(b, "created"));
	_cleanup_json_ cJSON *c =
		call(&t, "append_periodic_note",
		     "{\"text\": \"Done.\", \"date\": \"2024-01-05\"}");
	CU_ASSERT_PTR_NOT_NULL(c);
	_cleanup_free_ char *t2 = tv_read(&t, "Daily/2024-01-05.md");
	ASSERT_STR_EQ(t2, "# 2024-01-05\n\n## Log\n- met Ann\n- call Bob\n\n"
			  "## Tasks\n\nDone.");
	/* A section that is not there: nothing is made. */
	_cleanup_free_ char *e = tv_call_err(
		&t, "append_periodic_note",
		"{\"text\": \"x\", \"date\": \"2024-01-06\", \"section\": \"Nope\"}");
	ASSERT_CONTAINS(e, "Section 'Nope' not found");
	CU_ASSERT(!tv_exists(&t, "Daily/2024-01-06.md"));
	/* A dry run writes nothing and shows the new note. */
	_cleanup_json_ cJSON *d = call(
		&t, "append_periodic_note",
		"{\"text\": \"x\", \"date\": \"2024-01-07\", \"dry_run\": true}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT(jtrue(d, "dry_run") && !jtrue(d, "created"));
	ASSERT_CONTAINS(jstr(d, "diff"), "+# 2024-01-07");
	CU_ASSERT(!tv_exists(&t, "Daily/2024-01-07.md"));
	tv_close(&t);
}

static void test_templater_and_policy(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".obsidian/daily-notes.json",
		 "{\"template\": \"Templates/Day\"}");
	tv_write(&t, "Templates/Day.md",
		 "# <% tp.file.title %>\n<%* await tp.system.prompt() %>\n");
	tv_write(&t, "Templates/Agent.md",
		 "---\ntags: [claude]\n---\nno description here\n");
	tv_open(&t);
	_cleanup_free_ char *e =
		tv_call_err(&t, "periodic_note",
			    "{\"date\": \"2024-01-05\", \"create\": true}");
	ASSERT_CONTAINS(e, "Templater syntax");
	ASSERT_CONTAINS(e, "never runs");
	CU_ASSERT(!tv_exists(&t, "2024-01-05.md"));
	_cleanup_free_ char *e2 =
		tv_call_err(&t, "append_periodic_note",
			    "{\"text\": \"x\", \"date\": \"2024-01-05\"}");
	ASSERT_CONTAINS(e2, "Templater syntax");
	_cleanup_free_ char *e3 = tv_call_err(
		&t, "create_note", "{\"name\": \"X\", \"template\": \"Day\"}");
	ASSERT_CONTAINS(e3, "Templater syntax");
	CU_ASSERT(!tv_exists(&t, "X.md"));
	/* The guard judges what a template makes: a claude note needs a
	 * description. */
	tv_write(&t, ".obsidian/daily-notes.json",
		 "{\"template\": \"Templates/Agent\"}");
	_cleanup_free_ char *e4 =
		tv_call_err(&t, "periodic_note",
			    "{\"date\": \"2024-01-05\", \"create\": true}");
	ASSERT_CONTAINS(e4, "description");
	CU_ASSERT(!tv_exists(&t, "2024-01-05.md"));
	_cleanup_free_ char *e5 =
		tv_call_err(&t, "create_note",
			    "{\"name\": \"Y\", \"template\": \"Agent\"}");
	ASSERT_CONTAINS(e5, "description");
	CU_ASSERT(!tv_exists(&t, "Y.md"));
	tv_close(&t);
}

static void test_create_note_template(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(
		&t, ".obsidian/templates.json",
		"{\"folder\": \"Meta/Templates\", \"dateFormat\": \"DD.MM.YYYY\", "
		"\"timeFormat\": \"h A\"}");
	tv_write(&t, "Meta/Templates/Project.md",
		 "---\n# kept comment\ntags: [project]\nstatus: idea\n---\n"
		 "# {{ title }}\nMade {{date}} at {{time}}; {{date:YYYY}}.\n");
	tv_write(&t, "Other.md", "---\ntags: [work]\n---\nx\n");
	tv_open(&t);
	_cleanup_json_ cJSON *a = call(
		&t, "create_note",
		"{\"name\": \"Projects/Garden\", \"template\": \"Project\", "
		"\"frontmatter\": {\"tags\": [\"work\", \"project\"], \"status\": "
		"\"active\"}, \"content\": \"First steps.\\n\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	ASSERT_STR_EQ(jstr(a, "template"), "Meta/Templates/Project.md");
	_cleanup_free_ char *text = tv_read(&t, "Projects/Garden.md");
	_cleanup_free_ char *today = day_from_now(0, "DD.MM.YYYY");
	_cleanup_free_ char *year = day_from_now(0, "YYYY");
	ASSERT_CONTAINS(text, "# kept comment\n");
	ASSERT_CONTAINS(text, "project");
	ASSERT_CONTAINS(text, "work");
	ASSERT_CONTAINS(text, "status: active\n");
	ASSERT_NOT_CONTAINS(text, "idea");
	_cleanup_free_ char *line = xasprintf("# Garden\nMade %s at ", today);
	ASSERT_CONTAINS(text, line);
	_cleanup_free_ char *tail = xasprintf("; %s.\n\nFirst steps.\n", year);
	CU_ASSERT(str_has_suffix(text, tail));
	CU_ASSERT(strstr(text, " AM;") || strstr(text, " PM;"));
	/* Content with its own frontmatter: merged the same way. */
	_cleanup_json_ cJSON *b = call(
		&t, "create_note",
		"{\"name\": \"B\", \"template\": \"Meta/Templates/Project.md\", "
		"\"content\": \"---\\naliases: [Bee]\\n---\\nBody\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	_cleanup_free_ char *tb = tv_read(&t, "B.md");
	ASSERT_CONTAINS(tb, "tags: [project]\nstatus: idea\n");
	ASSERT_CONTAINS(tb, "Bee");
	CU_ASSERT(str_has_suffix(tb, ".\n\nBody"));
	/* No such template. */
	_cleanup_free_ char *e = tv_call_err(
		&t, "create_note", "{\"name\": \"C\", \"template\": \"Nope\"}");
	ASSERT_CONTAINS(e, "Template 'Nope' not found in the templates folder");
	tv_close(&t);
}

/* Odd templates: offsets out of range, nested and broken braces, a
 * weekday outside a periodic note; all left as written, never a crash. */
static void test_template_edges(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Templates/Odd.md",
		 "a {{date+999999999y}} b {{{{title}}}} c {{ title d "
		 "{{monday:YYYY}} e {{date:[Y]YYYY}} f {{time-90m:H}} g "
		 "{{yesterday}} h {{}}");
	tv_open(&t);
	_cleanup_json_ cJSON *r =
		call(&t, "create_note",
		     "{\"name\": \"Odd\", \"template\": \"Odd\"}");
	CU_ASSERT_PTR_NOT_NULL(r);
	_cleanup_free_ char *text = tv_read(&t, "Odd.md");
	_cleanup_free_ char *year = day_from_now(0, "[Y]YYYY");
	_cleanup_free_ char *want = xasprintf(
		"a {{date+999999999y}} b {{Odd}} c {{ title d {{monday:YYYY}} "
		"e %s f ",
		year);
	CU_ASSERT(text && str_has_prefix(text, want));
	ASSERT_CONTAINS(text, " g {{yesterday}} h {{}}");
	tv_close(&t);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"defaults", test_defaults},
		{"daily_core_settings", test_daily_core_settings},
		{"periodic_plugin", test_periodic_plugin},
		{"plugin_v1_locale", test_plugin_v1_locale},
		{"append", test_append},
		{"templater_and_policy", test_templater_and_policy},
		{"create_note_template", test_create_note_template},
		{"template_edges", test_template_edges},
	};
	return run_tests("periodic", tests, ARRAY_SIZE(tests));
}
