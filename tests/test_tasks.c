/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tasks: task lines and the Tasks plugin's emoji fields (common/tasks.h),
 * the task string a note keeps, and the tools list_tasks and
 * set_task_status.
 */
#include "testutil.h"
#include "json.h"
#include "note.h"
#include "tasks.h"
#include "util.h"
#include "note_int.h" /* white-box: the note's fields */

#include <stdio.h>
#include <string.h>
#include <time.h>

static void json_deletep(cJSON **p)
{
	cJSON_Delete(*p);
}
#define _cleanup_json_ _cleanup_(json_deletep)

/* The tasks of a text, one per line: "LINE|SYMBOL|TEXT|tag,tag". */
static char *tasks_of(const char *text, size_t len)
{
	struct note *n = note_new("T.md", text, len, 0);
	struct sbuf b = {0};
	size_t pos = 0;
	struct task t;
	while (tasks_next(n->tasks, n->tasks_len, &pos, &t)) {
		char sym[8];
		task_symbol_utf8(t.symbol, sym);
		sb_printf(&b, "%d|%s|%.*s|", t.line, sym, (int)t.text_len,
			  t.text);
		const char *p = t.tags;
		for (uint32_t i = 0; i < t.ntags; i++, p += strlen(p) + 1)
			sb_printf(&b, "%s%s", i ? "," : "", p);
		sb_putc(&b, '\n');
	}
	note_free(n);
	return b.len ? sb_steal(&b) : xstrdup("");
}

#define ASSERT_TASKS(text, want)                                        \
	do {                                                            \
		_cleanup_free_ char *_g = tasks_of(text, strlen(text)); \
		ASSERT_STR_EQ(_g, want);                                \
	} while (0)

/* ---- task lines ------------------------------------------------------- */

static void test_markers(void)
{
	ASSERT_TASKS("- [ ] a\n* [x] b\n+ [/] c\n1. [-] d\n12) [>] e\n",
		     "1| |a|\n2|x|b|\n3|/|c|\n4|-|d|\n5|>|e|\n");
	/* Nested, tab-indented, in quotes and callouts. */
	ASSERT_TASKS("- [ ] top\n    - [x] child\n\t- [ ] tab\n"
		     "        1. [?] deeper\n",
		     "1| |top|\n2|x|child|\n3| |tab|\n4|?|deeper|\n");
	ASSERT_TASKS("> - [ ] quoted\n> [!todo] Callout\n> > * [x] deep\n",
		     "1| |quoted|\n3|x|deep|\n");
	/* A symbol that is not ASCII. */
	ASSERT_TASKS("- [✓] tick\n", "1|✓|tick|\n");
}

static void test_not_tasks(void)
{
	ASSERT_TASKS("- [] x\n-[ ] x\n- [ ]x\n[ ] x\ntext - [ ] x\n"
		     "- [ab] x\n- [[link]]\n-  \n- [\n- [ \n1234567890. [ ] x\n"
		     "# - [ ] heading\n",
		     "");
}

static void test_empty_task(void)
{
	/* "- [ ]" with nothing after is a task with no text (Obsidian shows
	 * a checkbox). */
	ASSERT_TASKS("- [ ]\n- [x]   \n- [ ] \r\n", "1| ||\n2|x||\n3| ||\n");
	ASSERT_TASKS("- [ ]", "1| ||\n");
}

static void test_code_and_comments(void)
{
	const char *text = "---\ntodo:\n  - [ ] in yaml\n---\n"
			   "- [ ] real 1\n"
			   "```\n- [ ] fenced\n```\n"
			   "~~~md\n- [x] tilde\n~~~\n"
			   "\n    - [ ] indented code\n\n"
			   "$$\n- [ ] math\n$$\n"
			   "%%\n- [ ] comment\n%%\n"
			   "<!--\n- [ ] html comment\n-->\n"
			   "- [ ] real 2 `- [ ] inline code`\n"
			   "- list\n    - [ ] nested real 3\n";
	ASSERT_TASKS(text, "5| |real 1|\n"
			   "24| |real 2 `- [ ] inline code`|\n"
			   "26| |nested real 3|\n");
}

static void test_tags_and_lines(void)
{
	/* Tags of the task's own line only; not in code spans. */
	const char *text = "#note-tag\n- [ ] a #one and #two/sub\n"
			   "- [ ] b `#no` #three\n  more #four\n";
	ASSERT_TASKS(text, "2| |a #one and #two/sub|one,two/sub\n"
			   "3| |b `#no` #three|three\n");
}

static void test_crlf(void)
{
	const char *text = "- [ ] one 📅 2024-01-05\r\n- [x] two\r\n\r\n"
			   "  - [ ] three\r\n";
	ASSERT_TASKS(text, "1| |one 📅 2024-01-05|\n2|x|two|\n4| |three|\n");
	struct note *n = note_new("T.md", text, strlen(text), 0);
	size_t pos = 0;
	struct task t;
	CU_ASSERT_FATAL(tasks_next(n->tasks, n->tasks_len, &pos, &t));
	CU_ASSERT_NOT_EQUAL(t.dates[TD_DUE], TASK_NO_DATE);
	note_free(n);
}

static void test_invalid_utf8(void)
{
	const char text[] = "- [ ] bad \xff\xfe bytes 📅 2024-01-05\n"
			    "- [\xff] not a symbol\n- [\xc3] cut\n"
			    "- [ ] end \xe2\x9c";
	struct note *n = note_new("T.md", text, sizeof(text) - 1, 0);
	size_t pos = 0, count = 0;
	struct task t;
	while (tasks_next(n->tasks, n->tasks_len, &pos, &t)) {
		count++;
		if (t.line == 1)
			CU_ASSERT_NOT_EQUAL(t.dates[TD_DUE], TASK_NO_DATE);
	}
	CU_ASSERT_EQUAL(count, 2); /* lines 1 and 4 */
	note_free(n);
}

/* ---- fields ------------------------------------------------------------ */

static int32_t day(const char *iso)
{
	struct task_fields f;
	_cleanup_free_ char *s = xasprintf("x 📅 %s", iso);
	task_parse_fields(s, strlen(s), &f);
	return f.dates[TD_DUE];
}

static void test_fields_any_order(void)
{
	static const char *const ORDERS[] = {
		"Do it 📅 2024-01-05 ⏫ ✅ 2024-02-01 ➕ 2023-12-31 ⏳ 2024-01-03 "
		"🛫 2024-01-02 🔁 every week",
		"Do it 🔁 every week ⏫ 🛫 2024-01-02 ➕ 2023-12-31 ✅ 2024-02-01 "
		"⏳ 2024-01-03 📅 2024-01-05",
		"Do it ⏳2024-01-03 🛫 2024-01-02 📅 2024-01-05 🔁 every week "
		"➕ 2023-12-31 ✅ 2024-02-01 ⏫  ",
	};
	for (size_t i = 0; i < ARRAY_SIZE(ORDERS); i++) {
		struct task_fields f;
		task_parse_fields(ORDERS[i], strlen(ORDERS[i]), &f);
		CU_ASSERT(f.any);
		CU_ASSERT_EQUAL(f.dates[TD_DUE], day("2024-01-05"));
		CU_ASSERT_EQUAL(f.dates[TD_SCHEDULED], day("2024-01-03"));
		CU_ASSERT_EQUAL(f.dates[TD_START], day("2024-01-02"));
		CU_ASSERT_EQUAL(f.dates[TD_DONE], day("2024-02-01"));
		CU_ASSERT_EQUAL(f.dates[TD_CREATED], day("2023-12-31"));
		CU_ASSERT_EQUAL(f.dates[TD_CANCELLED], TASK_NO_DATE);
		CU_ASSERT_EQUAL(f.priority, TP_HIGH);
		CU_ASSERT_EQUAL(f.recur_len, strlen("every week"));
		CU_ASSERT(!strncmp(ORDERS[i] + f.recur_off, "every week",
				   f.recur_len));
		_cleanup_free_ char *d = task_description(ORDERS[i], &f);
		ASSERT_STR_EQ(d, "Do it");
	}
	CU_ASSERT_EQUAL(day("1970-01-01"), 0);
	CU_ASSERT_EQUAL(day("2024-03-01") - day("2024-02-28"), 2);
}

static void test_fields_rules(void)
{
	struct task_fields f;
	/* A field in the middle of the text is text. */
	const char *mid = "Pay 📅 2024-01-05 the rent";
	task_parse_fields(mid, strlen(mid), &f);
	CU_ASSERT(!f.any);
	CU_ASSERT_EQUAL(f.dates[TD_DUE], TASK_NO_DATE);
	/* Tags between fields stay in the description. */
	const char *tags = "Call #home 📅 2024-01-05 #phone ⏬ ^blk-1";
	task_parse_fields(tags, strlen(tags), &f);
	CU_ASSERT_NOT_EQUAL(f.dates[TD_DUE], TASK_NO_DATE);
	CU_ASSERT_EQUAL(f.priority, TP_LOWEST);
	_cleanup_free_ char *d = task_description(tags, &f);
	ASSERT_STR_EQ(d, "Call #home #phone");
	/* Not a date: no field. Variation selectors, ids, dependencies. */
	const char *bad = "x 📅 2024-02-30";
	task_parse_fields(bad, strlen(bad), &f);
	CU_ASSERT(!f.any);
	const char *vs =
		"y 🗓️ 2024-01-05 🆔 abc1 ⛔️ x1, y-2 🏁 delete 🔺";
	task_parse_fields(vs, strlen(vs), &f);
	CU_ASSERT_EQUAL(f.dates[TD_DUE], day("2024-01-05"));
	CU_ASSERT(!strncmp(vs + f.id_off, "abc1", f.id_len) && f.id_len == 4);
	CU_ASSERT(!strncmp(vs + f.deps_off, "x1, y-2", f.deps_len) &&
		  f.deps_len == 7);
	CU_ASSERT(!strncmp(vs + f.done_off, "delete", f.done_len));
	CU_ASSERT_EQUAL(f.priority, TP_HIGHEST);
	const char *pvs = "p ⏫️";
	task_parse_fields(pvs, strlen(pvs), &f);
	CU_ASSERT_EQUAL(f.priority, TP_HIGH);
	/* The leftmost of two same fields wins, as in the plugin. */
	const char *two = "z 📅 2024-01-01 📅 2024-02-02";
	task_parse_fields(two, strlen(two), &f);
	CU_ASSERT_EQUAL(f.dates[TD_DUE], day("2024-01-01"));
	/* Only fields: an empty description. */
	const char *only = "📅 2024-01-01";
	task_parse_fields(only, strlen(only), &f);
	_cleanup_free_ char *e = task_description(only, &f);
	ASSERT_STR_EQ(e, "");
}

static void test_restamp(void)
{
	const char *s = "Write 📅 2024-01-05 ^id-1";
	_cleanup_free_ char *done =
		task_restamp(s, strlen(s), ' ', 'x', true, "2024-03-04");
	ASSERT_STR_EQ(done, "Write 📅 2024-01-05 ✅ 2024-03-04 ^id-1");
	_cleanup_free_ char *back =
		task_restamp(done, strlen(done), 'x', ' ', true, "2024-03-05");
	ASSERT_STR_EQ(back, s);
	_cleanup_free_ char *plain =
		task_restamp(s, strlen(s), ' ', 'x', false, "2024-03-04");
	ASSERT_STR_EQ(plain, s);
	_cleanup_free_ char *cancel =
		task_restamp("a", 1, '/', '-', true, "2024-03-04");
	ASSERT_STR_EQ(cancel, "a ❌ 2024-03-04");
	/* done to cancelled: the done date goes, the cancelled one comes. */
	const char *d2 = "b ✅ 2024-01-01";
	_cleanup_free_ char *dc =
		task_restamp(d2, strlen(d2), 'x', '-', true, "2024-03-04");
	ASSERT_STR_EQ(dc, "b ❌ 2024-03-04");
	/* A stale done date on an open task is replaced. */
	_cleanup_free_ char *re =
		task_restamp(d2, strlen(d2), ' ', 'X', true, "2024-03-04");
	ASSERT_STR_EQ(re, "b ✅ 2024-03-04");
	_cleanup_free_ char *empty =
		task_restamp("", 0, ' ', 'x', true, "2024-03-04");
	ASSERT_STR_EQ(empty, "✅ 2024-03-04");
}

/* ---- the task string --------------------------------------------------- */

static void test_blob_roundtrip(void)
{
	const char *text = "- [ ] a 📅 2024-01-05 #t\n- [x] b 🔁 every day\n";
	struct note *n = note_new("a/N.md", text, strlen(text), 0);
	CU_ASSERT_FATAL(n->tasks_len > 0);
	CU_ASSERT(tasks_use_fields(n->tasks, n->tasks_len));
	CU_ASSERT(tasks_valid(n->tasks, n->tasks_len));
	/* Cut inside a task: refused (at a task's end it is a shorter
	 * list). */
	size_t first = 0;
	struct task t;
	CU_ASSERT_FATAL(tasks_next(n->tasks, n->tasks_len, &first, &t));
	for (size_t cut = 2; cut < n->tasks_len; cut++)
		CU_ASSERT(tasks_valid(n->tasks, cut) == (cut == first));
	size_t len;
	_cleanup_free_ void *blob = note_to_blob(n, &len);
	struct note *c = note_from_blob("a/N.md", blob, len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(c->tasks_len, n->tasks_len);
	CU_ASSERT(!memcmp(c->tasks, n->tasks, n->tasks_len));
	for (size_t cut = 0; cut < len; cut++) {
		struct note *x = note_from_blob("a/N.md", blob, cut);
		CU_ASSERT_PTR_NULL(x);
		note_free(x);
	}
	note_free(c);
	note_free(n);
	struct note *plain = note_new("P.md", "- [ ] x\n", 8, 0);
	CU_ASSERT(!tasks_use_fields(plain->tasks, plain->tasks_len));
	note_free(plain);
}

static void test_big_note(void)
{
	/* 20 MB of tasks, then one 20 MB task line: linear, all found. */
	const char *line = "- [ ] task with a date 📅 2024-01-05 #tag\n";
	size_t ll = strlen(line), n = (20u << 20) / ll;
	char *text = xmalloc(n * ll + 1);
	for (size_t i = 0; i < n; i++)
		memcpy(text + i * ll, line, ll);
	text[n * ll] = 0;
	struct note *note = note_new("Big.md", text, n * ll, 0);
	size_t pos = 0, count = 0;
	struct task t;
	while (tasks_next(note->tasks, note->tasks_len, &pos, &t))
		count++;
	CU_ASSERT_EQUAL(count, n);
	note_free(note);
	memset(text, 'a', n * ll);
	memcpy(text, "- [ ] ", 6);
	memcpy(text + n * ll - 16, " 📅 2024-01-05", 16);
	note = note_new("Long.md", text, n * ll, 0);
	pos = 0;
	CU_ASSERT_FATAL(tasks_next(note->tasks, note->tasks_len, &pos, &t));
	CU_ASSERT_EQUAL(t.dates[TD_DUE], day("2024-01-05"));
	note_free(note);
	free(text);
}

/* ---- the tools --------------------------------------------------------- */

static void vault_setup(struct tvault *t)
{
	tv_init(t);
	tv_write(t, "Projects/Plan.md",
		 "---\ntags: [project]\nowner: ann\n---\n# Plan\n\n"
		 "- [ ] Write report 📅 2024-06-01 #work\n"
		 "- [x] Buy milk ✅ 2024-05-20\n"
		 "    - [/] Refactor ⏫ 🛫 2024-05-01 #work/code\n"
		 "1. [-] Old idea\n"
		 "- [ ] Weekly review 🔁 every week 📅 2024-06-03\n"
		 "```\n- [ ] not a task\n```\n");
	tv_write(t, "Home.md",
		 "- [ ] Fix the door 📅 2024-05-30\n"
		 "- [>] Call plumber #home\n");
	tv_write(t, "Empty.md", "No tasks here.\n");
	tv_open(t);
}

/* "path:line" of each task of a list_tasks result, joined by ','. */
static char *lines_of(struct tvault *t, const char *args)
{
	_cleanup_json_ cJSON *r = tv_call_json(t, "list_tasks", args);
	if (!r) {
		_cleanup_free_ char *e = tv_call_err(t, "list_tasks", args);
		fprintf(stderr, "  list_tasks(%s) failed: %s\n", args, e);
		return xstrdup("(error)");
	}
	struct sbuf b = {0};
	const cJSON *x;
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(r, "tasks"))
	{
		sb_printf(&b, "%s%s:%d", b.len ? "," : "",
			  cJSON_GetObjectItem(x, "path")->valuestring,
			  cJSON_GetObjectItem(x, "line")->valueint);
	}
	return b.len ? sb_steal(&b) : xstrdup("");
}

#define ASSERT_LINES(t, args, want)                                  \
	do {                                                         \
		_cleanup_free_ char *_g = lines_of((t), (args));     \
		if (strcmp(_g, want))                                \
			fprintf(stderr, "  %s: got %s\n", args, _g); \
		ASSERT_STR_EQ(_g, want);                             \
	} while (0)

static void test_list_tasks(void)
{
	struct tvault t;
	vault_setup(&t);
	ASSERT_LINES(&t, "{}",
		     "Home.md:1,Home.md:2,Projects/Plan.md:7,"
		     "Projects/Plan.md:8,Projects/Plan.md:9,"
		     "Projects/Plan.md:10,Projects/Plan.md:11");
	ASSERT_LINES(&t, "{\"where\": \"status = \\\"done\\\"\"}",
		     "Projects/Plan.md:8");
	ASSERT_LINES(&t,
		     "{\"where\": \"!completed and status != "
		     "\\\"cancelled\\\" and due < 2024-06-02\"}",
		     "Home.md:1,Projects/Plan.md:7");
	ASSERT_LINES(&t, "{\"where\": \"due > 2024-06-01\"}",
		     "Projects/Plan.md:11");
	ASSERT_LINES(&t, "{\"where\": \"due = 2024-06-01\"}",
		     "Projects/Plan.md:7");
	/* Dataview's contains: parts of the list's strings too. */
	ASSERT_LINES(&t, "{\"where\": \"tags contains \\\"work\\\"\"}",
		     "Projects/Plan.md:7,Projects/Plan.md:9");
	ASSERT_LINES(&t, "{\"where\": \"econtains(tags, \\\"work\\\")\"}",
		     "Projects/Plan.md:7");
	ASSERT_LINES(&t, "{\"where\": \"text contains \\\"plumber\\\"\"}",
		     "Home.md:2");
	ASSERT_LINES(&t, "{\"where\": \"symbol = \\\">\\\"\"}", "Home.md:2");
	ASSERT_LINES(&t,
		     "{\"from\": \"\\\"Projects\\\"\", \"where\": "
		     "\"priority = \\\"high\\\" or recurrence exists\"}",
		     "Projects/Plan.md:9,Projects/Plan.md:11");
	ASSERT_LINES(&t,
		     "{\"from\": \"#project\", \"where\": "
		     "\"owner = \\\"ann\\\" and line < 9\"}",
		     "Projects/Plan.md:7,Projects/Plan.md:8");
	ASSERT_LINES(&t, "{\"where\": \"due exists\", \"sort\": \"due desc\"}",
		     "Projects/Plan.md:11,Projects/Plan.md:7,Home.md:1");
	/* The fields of one task. */
	_cleanup_json_ cJSON *r =
		tv_call_json(&t, "list_tasks", "{\"where\": \"line = 9\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	_cleanup_free_ char *one = cJSON_PrintUnformatted(
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "tasks"), 0));
	ASSERT_STR_EQ(one,
		      "{\"name\":\"Plan\",\"path\":\"Projects/Plan.md\","
		      "\"line\":9,\"symbol\":\"/\",\"status\":\"in_progress\","
		      "\"text\":\"Refactor ⏫ 🛫 2024-05-01 #work/code\","
		      "\"fields\":{\"description\":\"Refactor #work/code\","
		      "\"tags\":[\"work/code\"],\"start\":\"2024-05-01\","
		      "\"priority\":\"high\"}}");
	/* Paging. */
	_cleanup_json_ cJSON *p1 =
		tv_call_json(&t, "list_tasks", "{\"limit\": 4}");
	CU_ASSERT_EQUAL(cJSON_GetObjectItem(p1, "total")->valueint, 7);
	_cleanup_free_ char *args =
		xasprintf("{\"limit\": 4, \"cursor\": \"%s\"}",
			  cJSON_GetObjectItem(p1, "next_cursor")->valuestring);
	ASSERT_LINES(&t, args,
		     "Projects/Plan.md:9,Projects/Plan.md:10,"
		     "Projects/Plan.md:11");
	_cleanup_free_ char *e =
		tv_call_err(&t, "list_tasks", "{\"where\": \"due <\"}");
	ASSERT_CONTAINS(e, "where");
	tv_close(&t);
}

/* "path:line" of each row of a query_notes TASK query, joined by ','. */
static char *dql_lines(struct tvault *t, const char *query)
{
	_cleanup_free_ char *args = xasprintf("{\"query\": \"%s\"}", query);
	_cleanup_json_ cJSON *r = tv_call_json(t, "query_notes", args);
	if (!r) {
		_cleanup_free_ char *e = tv_call_err(t, "query_notes", args);
		fprintf(stderr, "  %s failed: %s\n", query, e);
		return xstrdup("(error)");
	}
	CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(r, "kind")->valuestring,
			       "task");
	struct sbuf b = {0};
	const cJSON *x;
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(r, "rows"))
	{
		sb_printf(&b, "%s%s:%d", b.len ? "," : "",
			  cJSON_GetObjectItem(x, "path")->valuestring,
			  cJSON_GetObjectItem(x, "line")->valueint);
	}
	sb_printf(&b, " (%d)", cJSON_GetObjectItem(r, "total")->valueint);
	return sb_steal(&b);
}

#define ASSERT_DQL(t, query, want)                                    \
	do {                                                          \
		_cleanup_free_ char *_g = dql_lines((t), (query));    \
		if (strcmp(_g, want))                                 \
			fprintf(stderr, "  %s: got %s\n", query, _g); \
		ASSERT_STR_EQ(_g, want);                              \
	} while (0)

/* Dataview's TASK queries through query_notes: the tasks list_tasks
 * finds, WHERE over task fields then note properties, SORT, LIMIT. */
static void test_dql_task(void)
{
	struct tvault t;
	vault_setup(&t);
	ASSERT_DQL(&t, "TASK",
		   "Home.md:1,Home.md:2,Projects/Plan.md:7,Projects/Plan.md:8,"
		   "Projects/Plan.md:9,Projects/Plan.md:10,Projects/Plan.md:11"
		   " (7)");
	ASSERT_DQL(&t, "TASK FROM \\\"Projects\\\" WHERE !completed",
		   "Projects/Plan.md:7,Projects/Plan.md:9,Projects/Plan.md:10,"
		   "Projects/Plan.md:11 (4)");
	ASSERT_DQL(&t, "TASK WHERE due SORT due DESC",
		   "Projects/Plan.md:11,Projects/Plan.md:7,Home.md:1 (3)");
	ASSERT_DQL(&t, "TASK WHERE due SORT due DESC LIMIT 2",
		   "Projects/Plan.md:11,Projects/Plan.md:7 (2)");
	ASSERT_DQL(&t, "TASK FROM #project WHERE owner = \\\"ann\\\" LIMIT 1",
		   "Projects/Plan.md:7 (1)");
	/* Steps a task query cannot run in that order are refused. */
	_cleanup_free_ char *e =
		tv_call_err(&t, "query_notes",
			    "{\"query\": \"TASK SORT due WHERE completed\"}");
	ASSERT_CONTAINS(e, "WHERE, then one SORT, then LIMIT");
	_cleanup_free_ char *e2 = tv_call_err(
		&t, "query_notes", "{\"query\": \"TASK GROUP BY file.link\"}");
	ASSERT_CONTAINS(e2, "GROUP BY");
	tv_close(&t);
}

static char *today_iso(void)
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	char b[16];
	strftime(b, sizeof(b), "%Y-%m-%d", &tm);
	return xstrdup(b);
}

static void test_set_task_status(void)
{
	struct tvault t;
	vault_setup(&t);
	_cleanup_free_ char *day0 = today_iso();
	_cleanup_json_ cJSON *r = tv_call_json(
		&t, "set_task_status",
		"{\"name\": \"Plan\", \"line\": 7, \"status\": \"done\", "
		"\"expected_text\": \"Write report 📅 2024-06-01 #work\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	ASSERT_STR_EQ(cJSON_GetObjectItem(r, "status")->valuestring, "done");
	_cleanup_free_ char *text = tv_read(&t, "Projects/Plan.md");
	_cleanup_free_ char *want =
		xasprintf("- [x] Write report 📅 2024-06-01 #work ✅ %s\n", day0);
	ASSERT_CONTAINS(text, want);
	/* The index has the change at once. */
	ASSERT_LINES(&t, "{\"where\": \"completed\"}",
		     "Projects/Plan.md:7,Projects/Plan.md:8");
	/* Undone: the date goes. */
	_cleanup_json_ cJSON *r2 = tv_call_json(
		&t, "set_task_status",
		"{\"name\": \"Plan\", \"line\": 8, \"status\": \"todo\", "
		"\"expected_text\": \"Buy milk ✅ 2024-05-20\"}");
	CU_ASSERT_PTR_NOT_NULL(r2);
	_cleanup_free_ char *t2 = tv_read(&t, "Projects/Plan.md");
	ASSERT_CONTAINS(t2, "\n- [ ] Buy milk\n");
	/* Stale expected text: nothing written, where the task went. */
	tv_write(&t, "Home.md",
		 "New first line\n- [ ] Fix the door 📅 "
		 "2024-05-30\n- [>] Call plumber #home\n");
	tv_reindex(&t);
	_cleanup_free_ char *e = tv_call_err(
		&t, "set_task_status",
		"{\"name\": \"Home\", \"line\": 1, \"status\": \"x\", "
		"\"expected_text\": \"Fix the door 📅 2024-05-30\"}");
	ASSERT_CONTAINS(e, "is not the task");
	ASSERT_CONTAINS(e, "now at line 2");
	_cleanup_free_ char *h = tv_read(&t, "Home.md");
	ASSERT_CONTAINS(h, "- [ ] Fix the door");
	/* Any symbol; recurring tasks are not completed. */
	_cleanup_json_ cJSON *r3 = tv_call_json(
		&t, "set_task_status",
		"{\"name\": \"Home\", \"line\": 3, \"status\": \"?\", "
		"\"expected_text\": \"Call plumber #home\"}");
	CU_ASSERT_PTR_NOT_NULL(r3);
	_cleanup_free_ char *h2 = tv_read(&t, "Home.md");
	ASSERT_CONTAINS(h2, "- [?] Call plumber #home\n");
	_cleanup_free_ char *e2 = tv_call_err(
		&t, "set_task_status",
		"{\"name\": \"Plan\", \"line\": 11, \"status\": \"done\", "
		"\"expected_text\": \"Weekly review 🔁 every week 📅 "
		"2024-06-03\"}");
	ASSERT_CONTAINS(e2, "recurs");
	/* Not a task; code is no task; bad status. */
	_cleanup_free_ char *e3 = tv_call_err(
		&t, "set_task_status",
		"{\"name\": \"Plan\", \"line\": 13, \"status\": \"done\", "
		"\"expected_text\": \"not a task\"}");
	ASSERT_CONTAINS(e3, "is not the task");
	_cleanup_free_ char *e4 = tv_call_err(
		&t, "set_task_status",
		"{\"name\": \"Plan\", \"line\": 7, \"status\": \"finished\", "
		"\"expected_text\": \"x\"}");
	ASSERT_CONTAINS(e4, "Invalid status");
	_cleanup_free_ char *e5 = tv_call_err(
		&t, "set_task_status",
		"{\"name\": \"Plan\", \"line\": 500, \"status\": \"done\", "
		"\"expected_text\": \"x\"}");
	ASSERT_CONTAINS(e5, "no line 500");
	/* dry_run: the diff, nothing written. */
	_cleanup_json_ cJSON *d = tv_call_json(
		&t, "set_task_status",
		"{\"name\": \"Plan\", \"line\": 10, \"status\": \"todo\", "
		"\"expected_text\": \"Old idea\", \"dry_run\": true}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	ASSERT_CONTAINS(cJSON_GetObjectItem(d, "diff")->valuestring,
			"+1. [ ] Old idea");
	_cleanup_free_ char *t3 = tv_read(&t, "Projects/Plan.md");
	ASSERT_CONTAINS(t3, "1. [-] Old idea");
	tv_close(&t);
}

static void test_stamps_need_format(void)
{
	/* No emoji field anywhere and no Tasks plugin: no done date. */
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "- [ ] plain\n");
	tv_open(&t);
	_cleanup_json_ cJSON *r = tv_call_json(
		&t, "set_task_status",
		"{\"name\": \"A\", \"line\": 1, \"status\": \"done\", "
		"\"expected_text\": \"plain\"}");
	CU_ASSERT_PTR_NOT_NULL(r);
	_cleanup_free_ char *a = tv_read(&t, "A.md");
	ASSERT_STR_EQ(a, "- [x] plain\n");
	/* With the plugin installed: stamped. */
	tv_write(&t, ".obsidian/plugins/obsidian-tasks-plugin/manifest.json",
		 "{}");
	_cleanup_json_ cJSON *r2 = tv_call_json(
		&t, "set_task_status",
		"{\"name\": \"A\", \"line\": 1, \"status\": \"cancelled\", "
		"\"expected_text\": \"plain\"}");
	CU_ASSERT_PTR_NOT_NULL(r2);
	_cleanup_free_ char *b = tv_read(&t, "A.md");
	ASSERT_CONTAINS(b, "- [-] plain ❌ ");
	tv_close(&t);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"markers", test_markers},
		{"not_tasks", test_not_tasks},
		{"empty_task", test_empty_task},
		{"code_and_comments", test_code_and_comments},
		{"tags_and_lines", test_tags_and_lines},
		{"crlf", test_crlf},
		{"invalid_utf8", test_invalid_utf8},
		{"fields_any_order", test_fields_any_order},
		{"fields_rules", test_fields_rules},
		{"restamp", test_restamp},
		{"blob_roundtrip", test_blob_roundtrip},
		{"big_note", test_big_note},
		{"list_tasks", test_list_tasks},
		{"dql_task", test_dql_task},
		{"set_task_status", test_set_task_status},
		{"stamps_need_format", test_stamps_need_format},
	};
	return run_tests("tasks", tests, ARRAY_SIZE(tests));
}
