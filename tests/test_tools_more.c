/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * More tool tests: the behaviour an Obsidian user expects from browse,
 * tags, backlinks, orphans/broken links, recent notes, the write tools,
 * frontmatter editing, link forms and resolution, rename/delete, names,
 * path safety, the policy guard, search and concurrent writers.
 */
#include "testutil.h"
#include "shape.h"
#include "fileio.h"
#include "history.h"
#include "json.h"
#include "u8.h"
#include "util.h"
#include "note_int.h" /* white-box: the note's fields */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------- */

static void json_deletep(cJSON **p)
{
	cJSON_Delete(*p);
}
#define _cleanup_json_ _cleanup_(json_deletep)

/*
 * Arguments as JSON text from NULL-terminated key/value string pairs.
 * A key starting with '=' takes its value as raw JSON ("=overwrite",
 * "true").
 */
static char *vargs(va_list ap)
{
	cJSON *o = cJSON_CreateObject();
	for (;;) {
		const char *k = va_arg(ap, const char *);
		if (!k)
			break;
		const char *v = va_arg(ap, const char *);
		if (k[0] == '=') {
			cJSON *raw = cJSON_Parse(v);
			if (!raw) {
				fprintf(stderr, "bad raw JSON in test: %s\n",
					v);
				abort();
			}
			cJSON_AddItemToObject(o, k + 1, raw);
		} else {
			cJSON_AddStringToObject(o, k, v);
		}
	}
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	char *r = xstrdup(s);
	cJSON_free(s);
	return r;
}

/* Call; JSON result or NULL on an error result. */
static cJSON *callj(struct tvault *t, const char *tool, ...)
{
	va_list ap;
	va_start(ap, tool);
	_cleanup_free_ char *a = vargs(ap);
	va_end(ap);
	return tv_call_json(t, tool, a);
}

/* Call expecting an error: the message (caller frees) or NULL. */
static char *calle(struct tvault *t, const char *tool, ...)
{
	va_list ap;
	va_start(ap, tool);
	_cleanup_free_ char *a = vargs(ap);
	va_end(ap);
	return tv_call_err(t, tool, a);
}

/* Call a text tool (read_note): its text, or NULL on error. */
static char *callt(struct tvault *t, const char *tool, ...)
{
	va_list ap;
	va_start(ap, tool);
	_cleanup_free_ char *a = vargs(ap);
	va_end(ap);
	struct tool_result r;
	tv_call(t, tool, a, &r);
	char *text = NULL;
	if (r.is_error)
		fprintf(stderr, "  %s(%s) failed: %s\n", tool, a, r.text);
	else
		text = TAKE_PTR(r.text);
	tool_result_clear(&r);
	return text;
}

/* Call and say whether it succeeded (the result is dropped). */
static bool callok(struct tvault *t, const char *tool, ...)
{
	va_list ap;
	va_start(ap, tool);
	_cleanup_free_ char *a = vargs(ap);
	va_end(ap);
	struct tool_result r;
	tv_call(t, tool, a, &r);
	bool ok = !r.is_error;
	if (!ok)
		fprintf(stderr, "  %s(%s) failed: %s\n", tool, a, r.text);
	tool_result_clear(&r);
	return ok;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static const cJSON *jitem(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* The first object of arr whose key has string value val. */
static const cJSON *arr_find(const cJSON *arr, const char *key, const char *val)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, arr)
	{
		const char *s = jstr(it, key);
		if (s && strcmp(s, val) == 0)
			return it;
	}
	return NULL;
}

static bool arr_has_str(const cJSON *arr, const char *s)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, arr) if (cJSON_IsString(it) &&
					strcmp(it->valuestring, s) ==
						0) return true;
	return false;
}

/* arr (of strings, or of objects with `key`) lists exactly the names
 * in want[] (NULL-terminated), in any order. */
static bool same_set(const cJSON *arr, const char *key, const char *const *want)
{
	size_t nw = 0;
	while (want[nw])
		nw++;
	bool ok = cJSON_IsArray(arr) && (size_t)cJSON_GetArraySize(arr) == nw;
	for (size_t i = 0; ok && i < nw; i++)
		ok = key ? arr_find(arr, key, want[i]) != NULL
			 : arr_has_str(arr, want[i]);
	if (!ok) {
		char *g = arr ? cJSON_PrintUnformatted(arr) : NULL;
		fprintf(stderr, "  set differs: got %s, want",
			g ? g : "(null)");
		for (size_t i = 0; i < nw; i++)
			fprintf(stderr, " '%s'", want[i]);
		fprintf(stderr, "\n");
		cJSON_free(g);
	}
	return ok;
}

/* The file's text equals want (printing both when not). */
static void set_mtime(struct tvault *t, const char *rel, time_t secs)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", t->dir, rel);
	struct timespec ts[2] = {{secs, 0}, {secs, 0}};
	if (utimensat(AT_FDCWD, p, ts, 0) < 0) {
		perror(p);
		abort();
	}
}

static time_t utc(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = {.tm_year = y - 1900,
			.tm_mon = mo - 1,
			.tm_mday = d,
			.tm_hour = h,
			.tm_min = mi,
			.tm_sec = s};
	return timegm(&tm);
}

static void mkdir_in(struct tvault *t, const char *rel)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", t->dir, rel);
	if (mkdir(p, 0755) < 0 && errno != EEXIST) {
		perror(p);
		abort();
	}
}

static bool is_iso_utc(const char *s)
{
	if (!s || strlen(s) != 20)
		return false;
	static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";
	for (size_t i = 0; i < 20; i++) {
		if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
			return false;
	}
	return true;
}

/* The message names a line: "line <digits>". */
static bool names_a_line(const char *msg)
{
	const char *p = msg ? strstr(msg, "line ") : NULL;
	return p && p[5] >= '0' && p[5] <= '9';
}

/* ---- 1. browse
 * --------------------------------------------------------------- */

static void test_browse(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Root Note.md", "root\n");
	tv_write(&t, "projects/index.md", "index\n");
	tv_write(&t, "projects/wiki-ai.md", "# Wiki-AI overview\n");
	tv_write(&t, "projects/wiki-ai/ideas.md", "ideas\n");
	tv_write(&t, "projects/wiki-ai/spec.md", "spec\n");
	tv_write(&t, "projects/wiki-ai/research/r1.md", "r1\n");
	tv_write(&t, "projects/wiki-ai/research/r2.md", "r2\n");
	tv_write(&t, "projects/other/o.md", "o\n");
	tv_write(&t, ".obsidian/app.json", "{}\n");
	tv_write(&t, ".obsidian/hidden.md", "not a note\n");
	mkdir_in(&t, "archive");
	tv_open(&t);

	/* The root: folders with recursive counts, an empty folder with 0,
	 * no hidden folders, the notes at the root. */
	_cleanup_json_ cJSON *root = callj(&t, "browse", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(root);
	CU_ASSERT(json_equal_text(jitem(root, "folders"),
				  "[{\"path\":\"archive\",\"notes\":0},"
				  "{\"path\":\"projects\",\"notes\":7}]"));
	CU_ASSERT(same_set(jitem(root, "notes"), "path",
			   (const char *[]){"Root Note.md", NULL}));
	CU_ASSERT(arr_find(jitem(root, "notes"), "name", "Root Note") != NULL);
	CU_ASSERT_PTR_NULL(jitem(root, "note"));

	/* A subfolder: the note projects/wiki-ai.md is a note at this level
	 * while projects/wiki-ai/ is a folder. */
	_cleanup_json_ cJSON *pr =
		callj(&t, "browse", "path", "projects", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pr);
	CU_ASSERT(json_equal_text(
		jitem(pr, "folders"),
		"[{\"path\":\"projects/other\",\"notes\":1},"
		"{\"path\":\"projects/wiki-ai\",\"notes\":4}]"));
	CU_ASSERT(same_set(jitem(pr, "notes"), "path",
			   (const char *[]){"projects/index.md",
					    "projects/wiki-ai.md", NULL}));
	const cJSON *idx =
		arr_find(jitem(pr, "notes"), "path", "projects/index.md");
	ASSERT_STR_EQ(jstr(idx, "name"), "index");
	CU_ASSERT(is_iso_utc(jstr(idx, "modified")));

	/* The folder that has a note of the same name next to it. */
	_cleanup_json_ cJSON *wa =
		callj(&t, "browse", "path", "projects/wiki-ai/", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(wa);
	const cJSON *here = jitem(wa, "note");
	CU_ASSERT_PTR_NOT_NULL(here);
	ASSERT_STR_EQ(jstr(here, "path"), "projects/wiki-ai.md");
	ASSERT_STR_EQ(jstr(here, "name"), "wiki-ai");
	CU_ASSERT(json_equal_text(jitem(wa, "folders"),
				  "[{\"path\":\"projects/wiki-ai/research\","
				  "\"notes\":2}]"));
	CU_ASSERT(same_set(jitem(wa, "notes"), "path",
			   (const char *[]){"projects/wiki-ai/ideas.md",
					    "projects/wiki-ai/spec.md", NULL}));

	/* An empty folder exists: no error, nothing in it. */
	_cleanup_json_ cJSON *ar = callj(&t, "browse", "path", "archive", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ar);
	CU_ASSERT(json_equal_text(jitem(ar, "folders"), "[]"));
	CU_ASSERT(json_equal_text(jitem(ar, "notes"), "[]"));

	/* A folder that does not exist, and paths leaving the vault. */
	_cleanup_free_ char *e1 = calle(&t, "browse", "path", "nowhere", NULL);
	ASSERT_CONTAINS(e1, "not found");
	_cleanup_free_ char *e2 = calle(&t, "browse", "path", "..", NULL);
	CU_ASSERT_PTR_NOT_NULL(e2);
	_cleanup_free_ char *e3 =
		calle(&t, "browse", "path", "projects/../..", NULL);
	CU_ASSERT_PTR_NOT_NULL(e3);
	_cleanup_free_ char *e4 = calle(&t, "browse", "path", "/etc", NULL);
	CU_ASSERT_PTR_NOT_NULL(e4);
	tv_close(&t);
}

/* ---- 2. list_tags
 * -------------------------------------------------------------- */

static void test_list_tags(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md",
		 "---\ntags: [alpha, beta]\n---\n"
		 "Text #gamma and #a/b here.\n");
	tv_write(&t, "B.md",
		 "---\ntags: \"alpha, delta\"\n---\n"
		 "#alpha again in the body\n");
	/* "tag" is no tags property since Obsidian 1.9 (Properties,
	 * "Deprecated properties"): "legacy" is no tag. */
	tv_write(&t, "C.md",
		 "---\ntags: epsilon\ntag: legacy\n---\n"
		 "# Title\n"
		 "```\n#fenced\n```\n"
		 "Some `#inline` code, %% #comment %% and <!-- #html -->.\n"
		 "%%\n#blockcomment\n%%\n"
		 "<!--\n#htmlblock\n-->\n"
		 "Cyrillic #проект and CJK #日本語 tags.\n"
		 "Numbers: #123 is not a tag, #y2024 is.\n"
		 "Links: http://x/#frag and word#notag.\n"
		 "## Heading two\n");
	tv_write(&t, "D.md", "#alpha\n");
	tv_write(&t, "E.md", "#ПРОЕКТ and #Alpha/Sub\n");
	tv_open(&t);

	_cleanup_json_ cJSON *r = callj(&t, "list_tags", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	const cJSON *tags = jitem(r, "tags");
	/* Most used first. */
	const cJSON *first = cJSON_GetArrayItem(tags, 0);
	ASSERT_STR_EQ(jstr(first, "tag"), "alpha");
	CU_ASSERT_EQUAL(jnum(first, "count"), 3);
	/* Case-insensitive, Cyrillic too: #ПРОЕКТ is #проект. */
	const cJSON *ru = arr_find(tags, "tag", "проект");
	if (!ru)
		ru = arr_find(tags, "tag", "ПРОЕКТ");
	CU_ASSERT_PTR_NOT_NULL(ru);
	CU_ASSERT_EQUAL(jnum(ru, "count"), 2);
	CU_ASSERT_EQUAL(jnum(cJSON_GetArrayItem(tags, 1), "count"), 2);
	static const char *const want[] = {"beta",  "gamma",	 "a/b",
					   "delta", "epsilon",	 "日本語",
					   "y2024", "Alpha/Sub", NULL};
	for (size_t i = 0; want[i]; i++) {
		const cJSON *e = arr_find(tags, "tag", want[i]);
		if (!e)
			fprintf(stderr, "  tag '%s' missing\n", want[i]);
		CU_ASSERT_EQUAL(jnum(e, "count"), 1);
	}
	CU_ASSERT_EQUAL(cJSON_GetArraySize(tags), 10);
	CU_ASSERT_EQUAL(jnum(r, "total"), 10);
	static const char *const not_tags[] = {
		"fenced",    "inline", "comment", "html",    "blockcomment",
		"htmlblock", "123",    "Title",	  "Heading", "frag",
		"notag",     "legacy", NULL};
	for (const char *const *p = not_tags; *p; p++) {
		if (arr_find(tags, "tag", *p))
			fprintf(stderr, "  '%s' must not be a tag\n", *p);
		CU_ASSERT_PTR_NULL(arr_find(tags, "tag", *p));
	}
	/* Counts are per note: B has alpha twice. */
	int prev = 1 << 30;
	const cJSON *it;
	cJSON_ArrayForEach(it, tags)
	{
		CU_ASSERT(jnum(it, "count") <= prev);
		prev = (int)jnum(it, "count");
	}
	tv_close(&t);
}

/* ---- 3. get_backlinks
 * ---------------------------------------------------------- */

static void test_backlinks_lines(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Target.md", "# Target\n## Heading\n");
	tv_write(&t, "Src.md",
		 "# Src\n"
		 "\n"
		 "See [[Target]].\n"
		 "line 4\n"
		 "Ghost: [[Ghost]]\n"
		 "line 6\n"
		 "Again [[Target|the target]].\n");
	tv_write(&t, "Other.md", "[[Target#Heading]]\n");
	tv_write(&t, "Third.md", "x\n\n[[ghost]] and ![[Ghost]]\n");
	tv_open(&t);

	_cleanup_json_ cJSON *r =
		callj(&t, "get_backlinks", "name", "Target", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT(cJSON_IsTrue(jitem(r, "exists")));
	const cJSON *bl = jitem(r, "backlinks");
	CU_ASSERT_EQUAL(cJSON_GetArraySize(bl), 2);
	const cJSON *src = arr_find(bl, "name", "Src");
	CU_ASSERT_PTR_NOT_NULL(src);
	CU_ASSERT_EQUAL(jnum(src, "count"), 2);
	CU_ASSERT(json_equal_text(jitem(src, "lines"), "[3,7]"));
	ASSERT_STR_EQ(jstr(src, "path"), "Src.md");
	const cJSON *oth = arr_find(bl, "name", "Other");
	CU_ASSERT_EQUAL(jnum(oth, "count"), 1);
	CU_ASSERT(json_equal_text(jitem(oth, "lines"), "[1]"));
	CU_ASSERT_EQUAL(jnum(r, "links"), 3);

	/* A note that does not exist: the notes naming it. */
	_cleanup_json_ cJSON *g =
		callj(&t, "get_backlinks", "name", "Ghost", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	CU_ASSERT(cJSON_IsFalse(jitem(g, "exists")));
	const cJSON *gb = jitem(g, "backlinks");
	CU_ASSERT(same_set(gb, "name", (const char *[]){"Src", "Third", NULL}));
	CU_ASSERT(json_equal_text(jitem(arr_find(gb, "name", "Src"), "lines"),
				  "[5]"));
	const cJSON *th = arr_find(gb, "name", "Third");
	CU_ASSERT_EQUAL(jnum(th, "count"), 2);

	/* Nobody links to Src. */
	_cleanup_json_ cJSON *n =
		callj(&t, "get_backlinks", "name", "Src", NULL);
	CU_ASSERT(json_equal_text(jitem(n, "backlinks"), "[]"));
	tv_close(&t);
}

/* ---- 4. orphans and broken links
 * ------------------------------------------------ */

static void test_orphans_broken(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Hub.md",
		 "[[Leaf]]\n"
		 "![[missing.png]]\n"
		 "![[pic.png]]\n"
		 "[[Nowhere]]\n"
		 "[[table.csv]] and ![img](assets/pic2.png)\n");
	tv_write(&t, "Leaf.md", "leaf\n");
	tv_write(&t, "Alone.md", "alone\n");
	tv_write(&t, "Self.md", "[[Self]] and [[#Heading]]\n# Heading\n");
	tv_write(&t, "pic.png", "PNG");
	tv_write(&t, "data/table.csv", "a,b\n");
	tv_write(&t, "assets/pic2.png", "PNG");
	tv_open(&t);

	_cleanup_json_ cJSON *o = callj(&t, "get_orphans", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT(same_set(jitem(o, "orphans"), "name",
			   (const char *[]){"Alone", "Self", NULL}));
	CU_ASSERT_EQUAL(jnum(o, "count"), 2);

	_cleanup_json_ cJSON *b = callj(&t, "find_broken_links", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT(json_equal_text(b, "[{\"source\":\"Hub\",\"target\":"
				     "\"missing.png\"},{\"source\":\"Hub\","
				     "\"target\":\"Nowhere\"}]"));

	/* Once the attachment exists, the embed is no longer broken. */
	tv_write(&t, "attachments/missing.png", "PNG");
	tv_reindex(&t);
	_cleanup_json_ cJSON *b2 = callj(&t, "find_broken_links", NULL);
	CU_ASSERT(json_equal_text(b2, "[{\"source\":\"Hub\",\"target\":"
				      "\"Nowhere\"}]"));

	/* And once Nowhere exists, nothing is broken and Hub links to it. */
	CU_ASSERT(callok(&t, "create_note", "name", "Nowhere", NULL));
	_cleanup_json_ cJSON *b3 = callj(&t, "find_broken_links", NULL);
	CU_ASSERT(json_equal_text(b3, "[]"));
	tv_close(&t);
}

/* ---- 5. recent_notes
 * ------------------------------------------------------------ */

static void test_recent_notes(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Old.md", "old\n");
	tv_write(&t, "meetings/Mid.md", "---\ntags: [meeting]\n---\nmid\n");
	tv_write(&t, "New.md", "new\n");
	set_mtime(&t, "Old.md", utc(2024, 1, 10, 9, 0, 0));
	set_mtime(&t, "meetings/Mid.md", utc(2024, 1, 15, 11, 0, 0));
	set_mtime(&t, "New.md", utc(2024, 1, 15, 14, 30, 0));
	tv_open(&t);

	_cleanup_json_ cJSON *all = callj(&t, "recent_notes", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(all);
	const cJSON *notes = jitem(all, "notes");
	CU_ASSERT_EQUAL(cJSON_GetArraySize(notes), 3);
	ASSERT_STR_EQ(jstr(cJSON_GetArrayItem(notes, 0), "name"), "New");
	ASSERT_STR_EQ(jstr(cJSON_GetArrayItem(notes, 1), "name"), "Mid");
	ASSERT_STR_EQ(jstr(cJSON_GetArrayItem(notes, 1), "path"),
		      "meetings/Mid.md");
	ASSERT_STR_EQ(jstr(cJSON_GetArrayItem(notes, 2), "name"), "Old");
	ASSERT_STR_EQ(jstr(cJSON_GetArrayItem(notes, 0), "modified"),
		      "2024-01-15T14:30:00Z");
	CU_ASSERT(json_equal_text(jitem(cJSON_GetArrayItem(notes, 1), "tags"),
				  "[\"meeting\"]"));

	_cleanup_json_ cJSON *two =
		callj(&t, "recent_notes", "=limit", "2", NULL);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(jitem(two, "notes")), 2);
	ASSERT_STR_EQ(jstr(cJSON_GetArrayItem(jitem(two, "notes"), 0), "name"),
		      "New");

	_cleanup_json_ cJSON *since = callj(&t, "recent_notes", "since",
					    "2024-01-15T00:00:00Z", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(since);
	CU_ASSERT(same_set(jitem(since, "notes"), "name",
			   (const char *[]){"New", "Mid", NULL}));
	ASSERT_STR_EQ(
		jstr(cJSON_GetArrayItem(jitem(since, "notes"), 0), "name"),
		"New");

	/* A time with an offset: 13:00+01:00 is 12:00Z. */
	_cleanup_json_ cJSON *off = callj(&t, "recent_notes", "since",
					  "2024-01-15T13:00:00+01:00", NULL);
	CU_ASSERT(same_set(jitem(off, "notes"), "name",
			   (const char *[]){"New", NULL}));

	_cleanup_json_ cJSON *none = callj(&t, "recent_notes", "since",
					   "2030-01-01T00:00:00Z", NULL);
	CU_ASSERT(json_equal_text(jitem(none, "notes"), "[]"));

	/* A write makes a note the most recent one. */
	CU_ASSERT(callok(&t, "append_note", "name", "Old", "text", "x", NULL));
	_cleanup_json_ cJSON *after =
		callj(&t, "recent_notes", "=limit", "1", NULL);
	ASSERT_STR_EQ(
		jstr(cJSON_GetArrayItem(jitem(after, "notes"), 0), "name"),
		"Old");

	_cleanup_free_ char *e1 =
		calle(&t, "recent_notes", "since", "yesterday", NULL);
	ASSERT_CONTAINS(e1, "since");
	_cleanup_free_ char *e2 =
		calle(&t, "recent_notes", "since", "2024-13-45", NULL);
	CU_ASSERT_PTR_NOT_NULL(e2);
	tv_close(&t);
}

/* ---- 6. prepend / append / create
 * ---------------------------------------------- */

static void test_write_tools_basic(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "P.md", "---\ntitle: P\n---\nBody line\n");
	tv_write(&t, "F.md", "---\ntitle: F\n---\n");
	tv_write(&t, "G.md", "---\ntitle: G\n---"); /* no final newline */
	tv_write(&t, "H.md", "---\ntitle: H\n---");
	tv_open(&t);

	/* Prepend goes after the frontmatter. */
	CU_ASSERT(callok(&t, "prepend_note", "name", "P", "text", "Top", NULL));
	CU_ASSERT(tv_file_is(&t, "P.md",
			     "---\ntitle: P\n---\nTop\n\nBody line\n"));

	/* Append to a note that is only frontmatter. */
	CU_ASSERT(
		callok(&t, "append_note", "name", "F", "text", "Hello", NULL));
	_cleanup_free_ char *f = tv_read(&t, "F.md");
	CU_ASSERT(f && (strcmp(f, "---\ntitle: F\n---\nHello") == 0 ||
			strcmp(f, "---\ntitle: F\n---\nHello\n") == 0));

	/* The same when the closing --- has no newline: the frontmatter
	 * must stay a frontmatter block. */
	CU_ASSERT(
		callok(&t, "append_note", "name", "G", "text", "Hello", NULL));
	_cleanup_free_ char *g = tv_read(&t, "G.md");
	CU_ASSERT(g && (strcmp(g, "---\ntitle: G\n---\nHello") == 0 ||
			strcmp(g, "---\ntitle: G\n---\nHello\n") == 0));
	CU_ASSERT(callok(&t, "prepend_note", "name", "H", "text", "Top", NULL));
	_cleanup_free_ char *h = tv_read(&t, "H.md");
	CU_ASSERT(h && (strcmp(h, "---\ntitle: H\n---\nTop") == 0 ||
			strcmp(h, "---\ntitle: H\n---\nTop\n") == 0));
	_cleanup_json_ cJSON *hm =
		callj(&t, "get_note_metadata", "name", "H", NULL);
	/* The frontmatter survives. */
	ASSERT_STR_EQ(jstr(jitem(hm, "frontmatter"), "title"), "H");

	/* create_note: refuses to replace unless overwrite=true. */
	CU_ASSERT(callok(&t, "create_note", "name", "Dup1", "content", "v1",
			 NULL));
	CU_ASSERT(tv_file_is(&t, "Dup1.md", "v1"));
	_cleanup_free_ char *e =
		calle(&t, "create_note", "name", "Dup1", "content", "v2", NULL);
	ASSERT_CONTAINS(e, "already exists");
	CU_ASSERT(tv_file_is(&t, "Dup1.md", "v1"));
	/* Names are case-insensitive: "DUP1" is the same note. */
	_cleanup_free_ char *ec =
		calle(&t, "create_note", "name", "DUP1", "content", "v3", NULL);
	ASSERT_CONTAINS(ec, "already exists");
	CU_ASSERT(!tv_exists(&t, "DUP1.md"));
	_cleanup_json_ cJSON *ow =
		callj(&t, "create_note", "name", "Dup1", "content", "v2",
		      "=overwrite", "true", NULL);
	CU_ASSERT_PTR_NOT_NULL(ow);
	CU_ASSERT(cJSON_IsTrue(jitem(ow, "overwritten")));
	CU_ASSERT(tv_file_is(&t, "Dup1.md", "v2"));
	_cleanup_free_ char *rd = callt(&t, "read_note", "name", "Dup1", NULL);
	ASSERT_STR_EQ(rd, "v2");

	/* Folders are created as needed. */
	_cleanup_json_ cJSON *nf = callj(&t, "create_note", "name", "a/b/New",
					 "content", "deep", NULL);
	CU_ASSERT_PTR_NOT_NULL(nf);
	ASSERT_STR_EQ(jstr(nf, "path"), "a/b/New.md");
	CU_ASSERT(tv_file_is(&t, "a/b/New.md", "deep"));
	_cleanup_free_ char *rn = callt(&t, "read_note", "name", "New", NULL);
	ASSERT_STR_EQ(rn, "deep");
	tv_close(&t);
}

/* ---- 7. frontmatter merging
 * ------------------------------------------------------ */

static void test_update_frontmatter(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "U.md",
		 "---\n"
		 "# leading comment\n"
		 "title: 'Quoted Title'   # trailing comment\n"
		 "status: draft\n"
		 "tags:\n"
		 "  - alpha   # first\n"
		 "  - beta\n"
		 "rating: 3\n"
		 "date: 2024-01-15\n"
		 "---\n"
		 "Body\n");
	tv_write(&t, "S.md", "---\nkeep: \"double\"\n---\nS body\n");
	tv_write(&t, "Plain.md", "plain body\n");
	tv_open(&t);

	/* A note without frontmatter gets a block. */
	CU_ASSERT(callok(&t, "update_frontmatter", "name", "Plain", "=updates",
			 "{\"a\":1}", NULL));
	CU_ASSERT(tv_file_is(&t, "Plain.md", "---\na: 1\n---\nplain body\n"));

	_cleanup_json_ cJSON *r =
		callj(&t, "update_frontmatter", "name", "U", "=updates",
		      "{\"status\":\"done\",\"new_key\":\"v\",\"rating\":null}",
		      NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT(tv_file_is(&t, "U.md",
			     "---\n"
			     "# leading comment\n"
			     "title: 'Quoted Title'   # trailing comment\n"
			     "status: done\n"
			     "tags:\n"
			     "  - alpha   # first\n"
			     "  - beta\n"
			     "date: 2024-01-15\n"
			     "new_key: v\n"
			     "---\n"
			     "Body\n"));
	CU_ASSERT(
		json_equal_text(jitem(r, "frontmatter"),
				"{\"title\":\"Quoted Title\",\"status\":"
				"\"done\",\"tags\":[\"alpha\",\"beta\"],"
				"\"date\":\"2024-01-15\",\"new_key\":\"v\"}"));

	/* set_frontmatter: text that is JSON is stored as such. */
	_cleanup_json_ cJSON *s1 = callj(&t, "set_frontmatter", "name", "S",
					 "key", "count", "value", "3", NULL);
	CU_ASSERT(json_equal_text(jitem(s1, "value"), "3"));
	_cleanup_json_ cJSON *s2 = callj(&t, "set_frontmatter", "name", "S",
					 "key", "state", "value", "done", NULL);
	CU_ASSERT(json_equal_text(jitem(s2, "value"), "\"done\""));
	_cleanup_json_ cJSON *s3 =
		callj(&t, "set_frontmatter", "name", "S", "key", "items",
		      "value", "[\"x\",\"y\"]", NULL);
	CU_ASSERT(json_equal_text(jitem(s3, "value"), "[\"x\",\"y\"]"));
	_cleanup_json_ cJSON *m =
		callj(&t, "get_note_metadata", "name", "S", NULL);
	CU_ASSERT(
		json_equal_text(jitem(m, "frontmatter"),
				"{\"keep\":\"double\",\"count\":3,"
				"\"state\":\"done\",\"items\":[\"x\",\"y\"]}"));
	_cleanup_free_ char *s = tv_read(&t, "S.md");
	CU_ASSERT(s && str_has_prefix(s, "---\nkeep: \"double\"\ncount: 3\n"
					 "state: done\n"));
	CU_ASSERT(s && str_has_suffix(s, "---\nS body\n"));

	/* Text that merely starts like JSON stays text. */
	_cleanup_json_ cJSON *s5 =
		callj(&t, "set_frontmatter", "name", "S", "key", "due", "value",
		      "2024-01-15", NULL);
	/* "2024-01-15" is not the number 2024. */
	CU_ASSERT(json_equal_text(jitem(s5, "value"), "\"2024-01-15\""));
	_cleanup_json_ cJSON *s6 =
		callj(&t, "set_frontmatter", "name", "S", "key", "qty", "value",
		      "3 apples", NULL);
	CU_ASSERT(json_equal_text(jitem(s6, "value"), "\"3 apples\""));
	/* Text needing quotes in YAML reads back the same. */
	CU_ASSERT(callok(&t, "set_frontmatter", "name", "S", "key", "desc",
			 "value", "a: b # c", NULL));
	_cleanup_json_ cJSON *m2 =
		callj(&t, "get_note_metadata", "name", "S", NULL);
	const cJSON *fm2 = jitem(m2, "frontmatter");
	ASSERT_STR_EQ(jstr(fm2, "due"), "2024-01-15");
	ASSERT_STR_EQ(jstr(fm2, "qty"), "3 apples");
	ASSERT_STR_EQ(jstr(fm2, "desc"), "a: b # c");

	/* Setting an existing key again changes only its line. */
	CU_ASSERT(callok(&t, "set_frontmatter", "name", "S", "key", "count",
			 "value", "4", NULL));
	_cleanup_free_ char *s4 = tv_read(&t, "S.md");
	CU_ASSERT(s4 && str_has_prefix(s4, "---\nkeep: \"double\"\ncount: 4\n"
					   "state: done\n"));
	tv_close(&t);
}

/* ---- 8. invalid YAML is kept and never rewritten
 * ---------------------------------- */

static void test_invalid_yaml(void)
{
	static const char BLOCK[] = "---\ntitle: [unclosed\n---\n";
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Broken.md", "---\ntitle: [unclosed\n---\nbody\n");
	tv_open(&t);

	CU_ASSERT(callok(&t, "update_note", "name", "Broken", "content",
			 "new body\n", NULL));
	CU_ASSERT(tv_file_is(&t, "Broken.md",
			     "---\ntitle: [unclosed\n---\nnew body\n"));
	CU_ASSERT(callok(&t, "append_note", "name", "Broken", "text", "more",
			 NULL));
	_cleanup_free_ char *a = tv_read(&t, "Broken.md");
	CU_ASSERT(a && str_has_prefix(a, BLOCK));
	ASSERT_CONTAINS(a, "new body\n\nmore");
	_cleanup_json_ cJSON *rt =
		callj(&t, "replace_text", "name", "Broken", "old_text",
		      "new body", "new_text", "NEW BODY", NULL);
	CU_ASSERT_EQUAL(jnum(rt, "replaced"), 1);
	CU_ASSERT(tv_file_is(&t, "Broken.md",
			     "---\ntitle: [unclosed\n---\nNEW BODY\n\nmore"));
	/* Text inside the broken block is not body text. */
	_cleanup_free_ char *rtx =
		calle(&t, "replace_text", "name", "Broken", "old_text",
		      "unclosed", "new_text", "closed]", NULL);
	CU_ASSERT_PTR_NOT_NULL(rtx);

	_cleanup_free_ char *before = tv_read(&t, "Broken.md");
	_cleanup_free_ char *e1 = calle(&t, "set_frontmatter", "name", "Broken",
					"key", "status", "value", "x", NULL);
	ASSERT_CONTAINS(e1, "Broken");
	CU_ASSERT(names_a_line(e1));
	CU_ASSERT(tv_file_is(&t, "Broken.md", before));
	_cleanup_free_ char *e2 =
		calle(&t, "add_tag", "name", "Broken", "tag", "x", NULL);
	ASSERT_CONTAINS(e2, "Broken");
	CU_ASSERT(names_a_line(e2));
	CU_ASSERT(tv_file_is(&t, "Broken.md", before));
	_cleanup_free_ char *e3 =
		calle(&t, "update_frontmatter", "name", "Broken", "=updates",
		      "{\"a\":1}", NULL);
	ASSERT_CONTAINS(e3, "Broken");
	CU_ASSERT(names_a_line(e3));
	CU_ASSERT(tv_file_is(&t, "Broken.md", before));

	/* Metadata says what is wrong and still answers. */
	_cleanup_json_ cJSON *m =
		callj(&t, "get_note_metadata", "name", "Broken", NULL);
	CU_ASSERT_PTR_NOT_NULL(m);
	CU_ASSERT(names_a_line(jstr(m, "frontmatter_error")));
	tv_close(&t);
}

/* A "billion laughs" frontmatter: 9 levels of 9 aliases, 350 bytes. */
static char *alias_bomb_note(void)
{
	struct sbuf b = {0};
	sb_puts(&b, "---\n");
	for (int l = 0; l < 9; l++) {
		sb_printf(&b, "%c: &%c [", 'a' + l, 'a' + l);
		for (int i = 0; i < 9; i++)
			sb_printf(&b, "%s%s", i ? "," : "",
				  l ? (char[]){'*', (char)('a' + l - 1), 0}
				    : "\"lol\"");
		sb_puts(&b, "]\n");
	}
	sb_puts(&b, "---\nSee [[Other]].\n");
	return sb_steal(&b);
}

static void bomb_vault(void *ud)
{
	const char *bomb = ud;
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Bomb.md", bomb);
	tv_write(&t, "Other.md", "---\ntags: [x]\n---\nplain #y\n");
	tv_open(&t);

	/* The note is indexed (by name and links) and reads as text. */
	_cleanup_free_ char *txt = callt(&t, "read_note", "name", "Bomb", NULL);
	ASSERT_STR_EQ(txt, bomb);
	_cleanup_json_ cJSON *m =
		callj(&t, "get_note_metadata", "name", "Bomb", NULL);
	ASSERT_CONTAINS(jstr(m, "frontmatter_error"),
			"frontmatter too complex");
	CU_ASSERT(json_equal_text(cJSON_GetObjectItem(m, "frontmatter"), "{}"));
	CU_ASSERT(json_equal_text(cJSON_GetObjectItem(m, "outgoing"),
				  "[\"Other\"]"));
	/* Frontmatter edits are refused; the file is untouched. */
	_cleanup_free_ char *e = calle(&t, "set_frontmatter", "name", "Bomb",
				       "key", "k", "value", "v", NULL);
	ASSERT_CONTAINS(e, "frontmatter too complex");
	_cleanup_free_ char *e2 =
		calle(&t, "add_tag", "name", "Bomb", "tag", "x", NULL);
	ASSERT_CONTAINS(e2, "frontmatter too complex");
	CU_ASSERT(tv_file_is(&t, "Bomb.md", bomb));
	/* The check lists it; the rest of the vault goes on working. */
	_cleanup_json_ cJSON *ck = vault_check_json(t.v);
	_cleanup_free_ char *ckt = json_dumps(ck);
	ASSERT_CONTAINS(ckt, "\"Bomb.md\"");
	CU_ASSERT_EQUAL(cJSON_GetArraySize(
				cJSON_GetObjectItem(ck, "frontmatter_errors")),
			1);
	_cleanup_json_ cJSON *tags = callj(&t, "list_tags", NULL);
	_cleanup_free_ char *tagt = tags ? json_dumps(tags) : NULL;
	ASSERT_CONTAINS(tagt, "\"x\"");
	CU_ASSERT(callok(&t, "append_note", "name", "Bomb", "text", "more",
			 NULL));
	_cleanup_free_ char *after = tv_read(&t, "Bomb.md");
	CU_ASSERT(after && str_has_prefix(after, bomb));
	tv_reindex(&t);
	_cleanup_free_ char *txt2 =
		callt(&t, "read_note", "name", "Bomb", NULL);
	ASSERT_STR_EQ(txt2, after);
	tv_close(&t);
}

/* A write that makes the frontmatter too big for vaultd to read would
 * hide its tags from the policy (Obsidian reads them): refused. */
static void test_frontmatter_over_budget_refused(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".vaultd/policy.yaml", "allowed_tags: [work, home]\n");
	const char *orig = "---\ntags: [work]\n---\nhello\n";
	tv_write(&t, "A.md", orig);
	tv_open(&t);
	_cleanup_free_ char *big = xmalloc((2u << 20) + 1);
	memset(big, 'z', 2u << 20);
	big[2u << 20] = 0;
	_cleanup_free_ char *e =
		calle(&t, "add_tag", "name", "A", "tag", big, NULL);
	ASSERT_CONTAINS(e, "Frontmatter too large or too complex");
	CU_ASSERT(strlen(e) < 1024);
	CU_ASSERT(tv_file_is(&t, "A.md", orig));
	/* The same through a whole-note write. */
	_cleanup_free_ char *text = xasprintf("---\ntags: [%s]\n---\nx\n", big);
	_cleanup_free_ char *e2 =
		calle(&t, "create_note", "name", "B", "content", text, NULL);
	ASSERT_CONTAINS(e2, "Frontmatter too large or too complex");
	/* A note that was over budget already keeps taking body edits. */
	tv_write(&t, "C.md", text);
	tv_reindex(&t);
	CU_ASSERT(callok(&t, "append_note", "name", "C", "text", "more", NULL));
	tv_close(&t);
}

static void test_alias_bomb_vault(void)
{
	_cleanup_free_ char *bomb = alias_bomb_note();
	CU_ASSERT_TRUE(strlen(bomb) < 400);
	CU_ASSERT_TRUE(run_capped(bomb_vault, bomb, 512u << 20, 60));
}

/* ---- bytes that are not UTF-8 ------------------------------------------- */

static bool is_utf8(const char *s)
{
	return s && u8_invalid_at(s, strlen(s)) == strlen(s);
}

/* Call; the result (error or not) must be valid UTF-8 through and
 * through. Returns it for more checks. */
static void call_u8(struct tvault *t, const char *tool, const char *args,
		    struct tool_result *r)
{
	tv_call(t, tool, args, r);
	CU_ASSERT(is_utf8(r->text));
	if (r->structured) {
		_cleanup_free_ char *d = json_dumps(r->structured);
		CU_ASSERT(is_utf8(d));
	}
	if (r->warning)
		CU_ASSERT(is_utf8(r->warning));
}

#define BAD_BODY                                                       \
	"Start \xff\xfe end\n\n## S\nsec \xc3 text\n\n## Other\nkeep " \
	"\xed\xa0\x80 me\n"
#define BAD_NOTE "---\ntitle: T\n---\n" BAD_BODY

static void test_not_utf8_read(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Bad.md", BAD_NOTE);
	tv_write(&t, "Good.md", "---\ntags: [x]\n---\nsee [[Bad]] end\n");
	tv_open(&t);

	/* read_note: U+FFFD for each stray byte, and a warning apart from
	 * the text naming the note. */
	struct tool_result r;
	call_u8(&t, "read_note", "{\"name\":\"Bad\"}", &r);
	CU_ASSERT_FALSE(r.is_error);
	ASSERT_STR_EQ(r.text,
		      "---\ntitle: T\n---\nStart \xef\xbf\xbd\xef\xbf\xbd"
		      " end\n\n## S\nsec \xef\xbf\xbd text\n\n## Other\n"
		      "keep \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd me\n");
	ASSERT_CONTAINS(r.warning, "Bad.md");
	ASSERT_CONTAINS(r.warning, "not valid UTF-8");
	ASSERT_CONTAINS(r.warning, "U+FFFD");
	tool_result_clear(&r);
	/* A valid note gets no warning. */
	call_u8(&t, "read_note", "{\"name\":\"Good\"}", &r);
	CU_ASSERT_PTR_NULL(r.warning);
	tool_result_clear(&r);

	/* Other tools that show note text. */
	call_u8(&t, "read_section", "{\"name\":\"Bad\",\"section\":\"S\"}", &r);
	CU_ASSERT_FALSE(r.is_error);
	ASSERT_CONTAINS(r.text, "sec \xef\xbf\xbd text");
	ASSERT_CONTAINS(r.warning, "not valid UTF-8");
	tool_result_clear(&r);
	call_u8(&t, "search_notes",
		"{\"query\":\"end\",\"mode\":\"content\",\"limit\":10}", &r);
	CU_ASSERT_FALSE(r.is_error);
	ASSERT_CONTAINS(r.text, "Start \xef\xbf\xbd\xef\xbf\xbd end");
	ASSERT_CONTAINS(r.text, "not valid UTF-8");
	tool_result_clear(&r);
	call_u8(&t, "get_note_metadata", "{\"name\":\"Bad\"}", &r);
	CU_ASSERT_FALSE(r.is_error);
	tool_result_clear(&r);
	call_u8(&t, "replace_text",
		"{\"name\":\"Bad\",\"old_text\":\"nowhere\",\"new_text\":\"x\"}",
		&r);
	CU_ASSERT_TRUE(r.is_error);
	tool_result_clear(&r);
	/* Nothing of that reached the file. */
	CU_ASSERT(tv_file_is(&t, "Bad.md", BAD_NOTE));
	tv_close(&t);
}

static void test_not_utf8_edits(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Bad.md", BAD_NOTE);
	tv_write(&t, "Good.md", "---\ntags: [x]\n---\ngood\n");
	tv_open(&t);

	/* Edits splice bytes: the stray ones outside the edited part stay
	 * exactly as they were; no U+FFFD is ever written. */
	CU_ASSERT(callok(&t, "set_frontmatter", "name", "Bad", "key", "status",
			 "value", "draft", NULL));
	CU_ASSERT(tv_file_is(&t, "Bad.md",
			     "---\ntitle: T\nstatus: draft\n---\n" BAD_BODY));
	CU_ASSERT(callok(&t, "add_tag", "name", "Bad", "tag", "x", NULL));
	CU_ASSERT(tv_file_is(
		&t, "Bad.md",
		"---\ntitle: T\nstatus: draft\ntags:\n  - x\n---\n" BAD_BODY));
	CU_ASSERT(callok(&t, "remove_tag", "name", "Bad", "tag", "x", NULL));
	CU_ASSERT(callok(&t, "update_frontmatter", "name", "Bad", "=updates",
			 "{\"status\":null}", NULL));
	CU_ASSERT(tv_file_is(&t, "Bad.md",
			     "---\ntitle: T\ntags: []\n---\n" BAD_BODY));
	tv_write(&t, "Bad.md", BAD_NOTE);
	tv_reindex(&t);
	CU_ASSERT(callok(&t, "replace_text", "name", "Bad", "old_text", "end",
			 "new_text", "END", NULL));
	CU_ASSERT(callok(&t, "insert_text", "name", "Bad", "text", "inserted",
			 "after", "keep", NULL));
	CU_ASSERT(callok(&t, "append_section", "name", "Bad", "section", "S",
			 "text", "added", NULL));
	CU_ASSERT(callok(&t, "prepend_note", "name", "Bad", "text", "first",
			 NULL));
	CU_ASSERT(
		callok(&t, "append_note", "name", "Bad", "text", "last", NULL));
	_cleanup_free_ char *now = tv_read(&t, "Bad.md");
	ASSERT_STR_EQ(now, "---\ntitle: T\n---\nfirst\n\nStart \xff\xfe END\n\n"
			   "## S\nsec \xc3 text\nadded\n\n## Other\nkeep "
			   "\xed\xa0\x80 me\ninserted\n\nlast");
	ASSERT_NOT_CONTAINS(now, U8_REPLACEMENT);
	/* Replacing one section keeps the others' bytes. */
	CU_ASSERT(callok(&t, "update_section", "name", "Bad", "section", "S",
			 "content", "clean\n", NULL));
	_cleanup_free_ char *now2 = tv_read(&t, "Bad.md");
	ASSERT_CONTAINS(now2, "Start \xff\xfe END\n");
	ASSERT_CONTAINS(now2, "keep \xed\xa0\x80 me\n");
	ASSERT_NOT_CONTAINS(now2, U8_REPLACEMENT);
	/* Text as shown (U+FFFD) is not the file's: it is not found, and
	 * nothing changes. */
	_cleanup_free_ char *before = tv_read(&t, "Bad.md");
	_cleanup_free_ char *e =
		calle(&t, "replace_text", "name", "Bad", "old_text",
		      "Start \xef\xbf\xbd\xef\xbf\xbd", "new_text", "x", NULL);
	CU_ASSERT_PTR_NOT_NULL(e);
	CU_ASSERT(tv_file_is(&t, "Bad.md", before));

	/* Stray bytes in the frontmatter: libyaml refuses them, so the
	 * frontmatter edits are refused with the line; the file stays. */
	static const char BADFM[] = "---\ntitle: \xff\xfe\n---\nbody\n";
	tv_write(&t, "BadFm.md", BADFM);
	tv_reindex(&t);
	_cleanup_free_ char *e2 = calle(&t, "set_frontmatter", "name", "BadFm",
					"key", "k", "value", "v", NULL);
	ASSERT_CONTAINS(e2, "BadFm");
	CU_ASSERT(names_a_line(e2));
	CU_ASSERT(is_utf8(e2));
	CU_ASSERT(tv_file_is(&t, "BadFm.md", BADFM));
	CU_ASSERT(callok(&t, "append_note", "name", "BadFm", "text", "more",
			 NULL));
	CU_ASSERT(tv_file_is(&t, "BadFm.md",
			     "---\ntitle: \xff\xfe\n---\nbody\n\nmore"));
	tv_close(&t);
}

/* ---- 9. get_note_metadata
 * ------------------------------------------------------------ */

static void test_note_metadata(void)
{
	struct tvault t;
	tv_init(&t);
	static const char TEXT[] = "---\n"
				   "aliases: [MN, Meta]\n"
				   "tags: [meta]\n"
				   "---\n"
				   "# Heading One\n"
				   "text #inline\n"
				   "## Sub\n"
				   "[[Other]]\n";
	tv_write(&t, "folder/Meta Note.md", TEXT);
	tv_write(&t, "Other.md", "[[Meta Note]]\n");
	tv_open(&t);

	_cleanup_json_ cJSON *m =
		callj(&t, "get_note_metadata", "name", "Meta Note", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	ASSERT_STR_EQ(jstr(m, "path"), "folder/Meta Note.md");
	CU_ASSERT(json_equal_text(jitem(m, "tags"), "[\"meta\",\"inline\"]"));
	CU_ASSERT(json_equal_text(jitem(m, "aliases"), "[\"MN\",\"Meta\"]"));
	CU_ASSERT(json_equal_text(jitem(m, "headings"),
				  "[{\"level\":1,\"text\":\"Heading One\"},"
				  "{\"level\":2,\"text\":\"Sub\"}]"));
	CU_ASSERT_EQUAL(jnum(m, "size"), (double)strlen(TEXT));
	CU_ASSERT(is_iso_utc(jstr(m, "created")));
	CU_ASSERT(is_iso_utc(jstr(m, "modified")));
	const char *uri = jstr(m, "uri");
	CU_ASSERT(uri && str_has_prefix(uri, "obsidian://open?vault="));
	ASSERT_CONTAINS(uri, "&file=folder%2FMeta%20Note");
	CU_ASSERT(json_equal_text(jitem(m, "outgoing"), "[\"Other\"]"));
	CU_ASSERT(json_equal_text(jitem(m, "incoming"), "[\"Other\"]"));
	CU_ASSERT(json_equal_text(jitem(m, "frontmatter"),
				  "{\"aliases\":[\"MN\",\"Meta\"],"
				  "\"tags\":[\"meta\"]}"));
	/* No body. */
	CU_ASSERT_PTR_NULL(jitem(m, "content"));
	CU_ASSERT_PTR_NULL(jitem(m, "body"));

	/* By alias and by path. */
	_cleanup_json_ cJSON *ma =
		callj(&t, "get_note_metadata", "name", "MN", NULL);
	ASSERT_STR_EQ(jstr(ma, "path"), "folder/Meta Note.md");
	_cleanup_json_ cJSON *mp = callj(&t, "get_note_metadata", "name",
					 "folder/meta note.md", NULL);
	ASSERT_STR_EQ(jstr(mp, "path"), "folder/Meta Note.md");
	tv_close(&t);
}

/* ---- 10. link forms and resolution
 * ------------------------------------------------------ */

static void test_link_forms(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Target.md", "# Heading\ntext ^block\n");
	tv_write(&t, "folder/My Note.md", "my note\n");
	tv_write(&t, "notes/folder/Deep Note.md", "deep\n");
	tv_write(&t, "other/x.md", "x\n");
	tv_write(&t, "notes/Local Note.md", "local\n");
	tv_write(&t, "notes/Src.md",
		 "[[Target]]\n"
		 "[[Target|alias]]\n"
		 "[[Target#Heading]]\n"
		 "[[Target#^block]]\n"
		 "![[Target]]\n"
		 "[[Target.md]]\n"
		 "[[#Local heading]]\n"
		 "[[folder/My Note]]\n"
		 "[text](folder/Deep%20Note.md)\n"
		 "[t](../other/x.md)\n"
		 "[t](<Local Note.md>)\n"
		 "[x](https://example.com) and [m](mailto:a@b.c)\n"
		 "```\n[[Fenced]]\n```\n"
		 "`[[Inline]]` and `[c](Code.md)`\n"
		 "# Local heading\n");
	tv_write(&t, "notes/Src2.md",
		 "[h](../Target.md#Heading)\n"
		 "| col | [[Target\\|in a table]] |\n"
		 "[[ folder/My Note | spaced ]]\n");
	tv_open(&t);

	_cleanup_json_ cJSON *l =
		callj(&t, "get_links", "name", "Src", "direction", "out", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT(same_set(jitem(l, "outgoing"), NULL,
			   (const char *[]){"Target", "My Note", "Deep Note",
					    "x", "Local Note", NULL}));
	_cleanup_json_ cJSON *bl =
		callj(&t, "get_backlinks", "name", "Target", NULL);
	const cJSON *src = arr_find(jitem(bl, "backlinks"), "name", "Src");
	CU_ASSERT_EQUAL(jnum(src, "count"), 6);
	CU_ASSERT(json_equal_text(jitem(src, "lines"), "[1,2,3,4,5,6]"));
	_cleanup_json_ cJSON *broken = callj(&t, "find_broken_links", NULL);
	CU_ASSERT(json_equal_text(broken, "[]"));
	_cleanup_json_ cJSON *l2 = callj(&t, "get_links", "name", "Src2",
					 "direction", "out", NULL);
	CU_ASSERT(same_set(jitem(l2, "outgoing"), NULL,
			   (const char *[]){"Target", "My Note", NULL}));
	const cJSON *src2 = arr_find(jitem(bl, "backlinks"), "name", "Src2");
	CU_ASSERT(json_equal_text(jitem(src2, "lines"), "[1,2]"));
	_cleanup_json_ cJSON *dl = callj(&t, "get_links", "name", "Deep Note",
					 "direction", "in", NULL);
	CU_ASSERT(json_equal_text(jitem(dl, "incoming"), "[\"Src\"]"));
	tv_close(&t);
}

static void test_duplicate_names(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "a/Dup.md", "in a\n");
	tv_write(&t, "b/Dup.md", "in b\n");
	tv_write(&t, "c/Dup.md", "in c\n");
	tv_write(&t, "b/FromB.md", "[[Dup]]\n");
	tv_write(&t, "RootSrc.md", "[[Dup]] [[Dup2]]\n");
	tv_write(&t, "zz/Dup2.md", "short\n");
	tv_write(&t, "a/deep/Dup2.md", "long\n");
	tv_open(&t);

	_cleanup_json_ cJSON *fb = callj(&t, "get_links", "name", "FromB",
					 "direction", "out", NULL);
	CU_ASSERT(json_equal_text(jitem(fb, "outgoing"), "[\"b/Dup\"]"));
	_cleanup_json_ cJSON *rs = callj(&t, "get_links", "name", "RootSrc",
					 "direction", "out", NULL);
	/* Same length: alphabetical; different lengths: the shortest. */
	CU_ASSERT(json_equal_text(jitem(rs, "outgoing"),
				  "[\"a/Dup\",\"zz/Dup2\"]"));
	_cleanup_json_ cJSON *bb =
		callj(&t, "get_backlinks", "name", "b/Dup", NULL);
	CU_ASSERT(same_set(jitem(bb, "backlinks"), "name",
			   (const char *[]){"FromB", NULL}));

	_cleanup_free_ char *e = calle(&t, "read_note", "name", "Dup", NULL);
	CU_ASSERT(e && str_has_prefix(e, "Ambiguous name 'Dup'"));
	ASSERT_CONTAINS(e, "a/Dup.md");
	ASSERT_CONTAINS(e, "b/Dup.md");
	ASSERT_CONTAINS(e, "c/Dup.md");
	struct tool_result r;
	tv_call(&t, "read_note", "{\"name\":\"dup\"}", &r);
	CU_ASSERT(r.is_error);
	CU_ASSERT_EQUAL(r.code, RPC_AMBIGUOUS);
	tool_result_clear(&r);
	_cleanup_free_ char *b = callt(&t, "read_note", "name", "b/Dup", NULL);
	ASSERT_STR_EQ(b, "in b\n");
	_cleanup_free_ char *b2 =
		callt(&t, "read_note", "name", "B/dup.md", NULL);
	ASSERT_STR_EQ(b2, "in b\n");

	_cleanup_json_ cJSON *ln = callj(&t, "list_notes", NULL);
	const cJSON *names = jitem(ln, "names");
	CU_ASSERT(arr_has_str(names, "a/Dup"));
	CU_ASSERT(arr_has_str(names, "b/Dup"));
	CU_ASSERT(arr_has_str(names, "c/Dup"));
	CU_ASSERT(!arr_has_str(names, "Dup"));
	CU_ASSERT(arr_has_str(names, "FromB"));
	/* Every name list_notes hands out can be read back. */
	const cJSON *it;
	cJSON_ArrayForEach(it, names)
	{
		_cleanup_free_ char *x =
			callt(&t, "read_note", "name", it->valuestring, NULL);
		CU_ASSERT_PTR_NOT_NULL(x);
	}
	tv_close(&t);
}

/* ---- 11. rename_note
 * ------------------------------------------------------------------------ */

static const char L1_TEXT[] =
	"Intro text stays.\n"
	"[[B Note]] and [[B Note|Bee]] and [[B Note#Sec]] and [[b note#^blk]]\n"
	"![[B Note]] embed\n"
	"[md](B%20Note.md) and [angle](<B Note.md>)\n"
	"Plan: [[projects/Plan]]\n"
	"Trailing text   \n"
	"no newline at end";
static const char L2_TEXT[] = "[up](../B%20Note.md) [[B Note.md]]\n"
			      "`[[B Note]]` in code stays\n"
			      "```\n[[B Note]]\n```\n";

static void test_rename(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "B Note.md",
		 "# B Note\n## Sec\n"
		 "See [rel](sub/C.md) and [x](<sub/C.md>).\n"
		 "Self [[B Note#Sec]].\n"
		 "![p](img/p.png) [[C]]\n");
	tv_write(&t, "img/p.png", "PNG");
	tv_write(&t, "sub/C.md", "c\n");
	tv_write(&t, "L1.md", L1_TEXT);
	tv_write(&t, "dir/L2.md", L2_TEXT);
	tv_write(&t, "projects/Plan.md", "plan\n");
	tv_write(&t, "L3.md", "unrelated\n");
	tv_open(&t);

	/* dry_run: the plan, nothing changes. */
	_cleanup_json_ cJSON *dry =
		callj(&t, "rename_note", "old_name", "B Note", "new_name",
		      "My B", "=dry_run", "true", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dry);
	CU_ASSERT(cJSON_IsTrue(jitem(dry, "dry_run")));
	CU_ASSERT(same_set(jitem(dry, "files_updated"), NULL,
			   (const char *[]){"L1", "L2", NULL}));
	CU_ASSERT(tv_exists(&t, "B Note.md"));
	CU_ASSERT(!tv_exists(&t, "My B.md"));
	CU_ASSERT(tv_file_is(&t, "L1.md", L1_TEXT));
	CU_ASSERT(tv_file_is(&t, "dir/L2.md", L2_TEXT));

	/* Rename in place. */
	_cleanup_json_ cJSON *r = callj(&t, "rename_note", "old_name", "B Note",
					"new_name", "My B", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	ASSERT_STR_EQ(jstr(r, "new_path"), "My B.md");
	CU_ASSERT(same_set(jitem(r, "files_updated"), NULL,
			   (const char *[]){"L1", "L2", NULL}));
	CU_ASSERT_EQUAL(jnum(r, "links_updated"), 9 + 1);
	CU_ASSERT(!tv_exists(&t, "B Note.md"));
	CU_ASSERT(tv_exists(&t, "My B.md"));
	CU_ASSERT(tv_file_is(&t, "L1.md",
			     "Intro text stays.\n"
			     "[[My B]] and [[My B|Bee]] and [[My B#Sec]] and "
			     "[[My B#^blk]]\n"
			     "![[My B]] embed\n"
			     "[md](My%20B.md) and [angle](<My B.md>)\n"
			     "Plan: [[projects/Plan]]\n"
			     "Trailing text   \n"
			     "no newline at end"));
	CU_ASSERT(tv_file_is(&t, "dir/L2.md",
			     "[up](../My%20B.md) [[My B.md]]\n"
			     "`[[B Note]]` in code stays\n"
			     "```\n[[B Note]]\n```\n"));
	/* Its own link to itself follows the rename. */
	CU_ASSERT(tv_file_is(&t, "My B.md",
			     "# B Note\n## Sec\n"
			     "See [rel](sub/C.md) and [x](<sub/C.md>).\n"
			     "Self [[My B#Sec]].\n"
			     "![p](img/p.png) [[C]]\n"));

	/* Move into a new folder: relative links are rewritten both ways. */
	_cleanup_json_ cJSON *mv = callj(&t, "rename_note", "old_name", "My B",
					 "new_name", "archive/My B", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mv);
	ASSERT_STR_EQ(jstr(mv, "new_path"), "archive/My B.md");
	CU_ASSERT(tv_exists(&t, "archive/My B.md"));
	CU_ASSERT(tv_file_is(
		&t, "L1.md",
		"Intro text stays.\n"
		"[[My B]] and [[My B|Bee]] and [[My B#Sec]] and "
		"[[My B#^blk]]\n"
		"![[My B]] embed\n"
		"[md](archive/My%20B.md) and [angle](<archive/My B.md>)\n"
		"Plan: [[projects/Plan]]\n"
		"Trailing text   \n"
		"no newline at end"));
	CU_ASSERT(tv_file_is(&t, "dir/L2.md",
			     "[up](../archive/My%20B.md) [[My B.md]]\n"
			     "`[[B Note]]` in code stays\n"
			     "```\n[[B Note]]\n```\n"));
	CU_ASSERT(tv_file_is(&t, "archive/My B.md",
			     "# B Note\n## Sec\n"
			     "See [rel](../sub/C.md) and [x](<../sub/C.md>).\n"
			     "Self [[My B#Sec]].\n"
			     "![p](../img/p.png) [[C]]\n"));

	/* A link rewritten takes the shortest form that leads to the note
	 * (Obsidian's "shortest path when possible"): the name, unique. */
	CU_ASSERT(callok(&t, "rename_note", "old_name", "Plan", "new_name",
			 "Roadmap", NULL));
	CU_ASSERT(tv_exists(&t, "projects/Roadmap.md"));
	_cleanup_free_ char *l1 = tv_read(&t, "L1.md");
	ASSERT_CONTAINS(l1, "Plan: [[Roadmap]]\n");

	/* Incoming links now point at the new name. */
	_cleanup_json_ cJSON *in =
		callj(&t, "get_links", "name", "My B", "direction", "in", NULL);
	CU_ASSERT(same_set(jitem(in, "incoming"), NULL,
			   (const char *[]){"L1", "L2", NULL}));
	_cleanup_json_ cJSON *out =
		callj(&t, "get_links", "name", "L1", "direction", "out", NULL);
	CU_ASSERT(same_set(jitem(out, "outgoing"), NULL,
			   (const char *[]){"My B", "Roadmap", NULL}));
	_cleanup_json_ cJSON *broken = callj(&t, "find_broken_links", NULL);
	CU_ASSERT(json_equal_text(broken, "[]"));

	/* Renaming onto an existing note fails and changes nothing. */
	_cleanup_free_ char *e = calle(&t, "rename_note", "old_name", "L1",
				       "new_name", "L3", NULL);
	ASSERT_CONTAINS(e, "already exists");
	CU_ASSERT(tv_file_is(&t, "L3.md", "unrelated\n"));
	CU_ASSERT(tv_exists(&t, "L1.md"));
	_cleanup_free_ char *e2 = calle(&t, "rename_note", "old_name", "L1",
					"new_name", "projects/Roadmap", NULL);
	ASSERT_CONTAINS(e2, "already exists");
	tv_close(&t);
}

/*
 * Notes read as Obsidian reads them: links with code in their text,
 * indented code, math and property links, through the tools and a
 * rename (nothing inside code or math is rewritten; a property link is
 * rewritten in its YAML with its quoting, every other byte kept).
 */
static const char USES_TEXT[] =
	"[[Functions|`hasTag`]] and [[Functions#h|a `b` c]]\n"
	"[[#`move`|move]] and `[[Functions]]` stays code\n";
static const char CODE_TEXT[] =
	"Paragraph.\n"
	"\n"
	"    [[Target]] [[IndentOnly]] #indentonly\n"
	"\n"
	"$$\n"
	"[[Target]] #inmath\n"
	"$$\n"
	"Inline $[[Target]]^2$ costs $5 and $6 [[Money]]\n";
static const char PROPS_TEXT[] = "---\n"
				 "title: Ünïcode first\n"
				 "related: \"[[Target]]\"\n"
				 "list:\n"
				 "  - \"[[Other]]\" # a comment\n"
				 "  - '[[Target|T]]'\n"
				 "  - '[[Other]]'\n"
				 "up: [[Unquoted]]\n"
				 "---\n"
				 "Body [[Target]]\n";

static void test_obsidian_reading(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Functions.md", "# Functions\n## `move`\n## h\n");
	tv_write(&t, "Uses.md", USES_TEXT);
	tv_write(&t, "Code.md", CODE_TEXT);
	tv_write(&t, "Props.md", PROPS_TEXT);
	tv_write(&t, "Target.md", "target\n");
	tv_write(&t, "Other.md", "other\n");
	tv_open(&t);

	/* Links whose text holds code. */
	_cleanup_json_ cJSON *fb =
		callj(&t, "get_backlinks", "name", "Functions", NULL);
	CU_ASSERT(json_equal_text(
		jitem(fb, "backlinks"),
		"[{\"name\":\"Uses\",\"path\":\"Uses.md\",\"count\":2,"
		"\"lines\":[1]}]"));
	/* Property links with their lines; nothing in code or math. */
	_cleanup_json_ cJSON *tb =
		callj(&t, "get_backlinks", "name", "Target", NULL);
	CU_ASSERT(json_equal_text(
		jitem(tb, "backlinks"),
		"[{\"name\":\"Props\",\"path\":\"Props.md\",\"count\":3,"
		"\"lines\":[3,6,10]}]"));
	_cleanup_json_ cJSON *po = callj(&t, "get_links", "name", "Props",
					 "direction", "out", NULL);
	CU_ASSERT(same_set(jitem(po, "outgoing"), NULL,
			   (const char *[]){"Target", "Other", NULL}));
	_cleanup_json_ cJSON *br = callj(&t, "find_broken_links", NULL);
	CU_ASSERT(json_equal_text(br, "[{\"source\":\"Code\",\"target\":"
				      "\"Money\"}]"));
	/* Other is linked from a property only: no orphan. */
	_cleanup_json_ cJSON *orph = callj(&t, "get_orphans", NULL);
	CU_ASSERT(same_set(jitem(orph, "orphans"), "name",
			   (const char *[]){"Code", NULL}));
	_cleanup_json_ cJSON *tags = callj(&t, "list_tags", NULL);
	CU_ASSERT(json_equal_text(jitem(tags, "tags"), "[]"));

	/* Renames: code and math keep their text, properties keep their
	 * quoting. */
	CU_ASSERT(callok(&t, "rename_note", "old_name", "Target", "new_name",
			 "Goal", NULL));
	CU_ASSERT(tv_file_is(&t, "Code.md", CODE_TEXT));
	CU_ASSERT(tv_file_is(&t, "Props.md",
			     "---\n"
			     "title: Ünïcode first\n"
			     "related: \"[[Goal]]\"\n"
			     "list:\n"
			     "  - \"[[Other]]\" # a comment\n"
			     "  - '[[Goal|T]]'\n"
			     "  - '[[Other]]'\n"
			     "up: [[Unquoted]]\n"
			     "---\n"
			     "Body [[Goal]]\n"));
	CU_ASSERT(callok(&t, "rename_note", "old_name", "Other", "new_name",
			 "Bob's note", NULL));
	CU_ASSERT(tv_file_is(&t, "Props.md",
			     "---\n"
			     "title: Ünïcode first\n"
			     "related: \"[[Goal]]\"\n"
			     "list:\n"
			     "  - \"[[Bob's note]]\" # a comment\n"
			     "  - '[[Goal|T]]'\n"
			     "  - '[[Bob''s note]]'\n"
			     "up: [[Unquoted]]\n"
			     "---\n"
			     "Body [[Goal]]\n"));
	/* The YAML still reads, and the links point where they did. */
	_cleanup_json_ cJSON *po2 = callj(&t, "get_links", "name", "Props",
					  "direction", "out", NULL);
	CU_ASSERT(same_set(jitem(po2, "outgoing"), NULL,
			   (const char *[]){"Goal", "Bob's note", NULL}));
	_cleanup_json_ cJSON *meta =
		callj(&t, "get_note_metadata", "name", "Props", NULL);
	CU_ASSERT(json_equal_text(jitem(jitem(meta, "frontmatter"), "list"),
				  "[\"[[Bob's note]]\",\"[[Goal|T]]\","
				  "\"[[Bob's note]]\"]"));
	CU_ASSERT(callok(&t, "rename_note", "old_name", "Functions", "new_name",
			 "Funcs", NULL));
	CU_ASSERT(tv_file_is(
		&t, "Uses.md",
		"[[Funcs|`hasTag`]] and [[Funcs#h|a `b` c]]\n"
		"[[#`move`|move]] and `[[Functions]]` stays code\n"));
	_cleanup_json_ cJSON *br2 = callj(&t, "find_broken_links", NULL);
	CU_ASSERT(json_equal_text(br2, "[{\"source\":\"Code\",\"target\":"
				       "\"Money\"}]"));
	/* Deleting marks a property link as it marks any other. */
	CU_ASSERT(callok(&t, "delete_note", "name", "Goal", NULL));
	_cleanup_free_ char *props = tv_read(&t, "Props.md");
	ASSERT_CONTAINS(props, "related: \"[[Goal (deleted)]]\"\n");
	ASSERT_CONTAINS(props, "Body [[Goal (deleted)]]\n");
	tv_close(&t);
}

/* Obsidian 1.9 reads no "tag" and "alias" properties; the policy's
 * legacy_properties keeps reading them, and changing it reads the vault
 * again. */
static void test_legacy_properties(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Old.md", "---\ntag: oldtag\nalias: Old Name\n---\nx\n");
	tv_write(&t, "New.md", "---\ntags: [newtag]\n---\ny\n");
	tv_open(&t);
	_cleanup_json_ cJSON *t1 = callj(&t, "list_tags", NULL);
	CU_ASSERT(same_set(jitem(t1, "tags"), "tag",
			   (const char *[]){"newtag", NULL}));
	_cleanup_free_ char *e1 =
		calle(&t, "read_note", "name", "Old Name", NULL);
	CU_ASSERT_PTR_NOT_NULL(e1);
	/* add_tag writes where Obsidian reads: "tags", not "tag". */
	CU_ASSERT(callok(&t, "add_tag", "name", "Old", "tag", "newtag", NULL));
	CU_ASSERT(tv_file_is(&t, "Old.md",
			     "---\ntag: oldtag\nalias: Old Name\ntags:\n"
			     "  - newtag\n---\nx\n"));

	tv_write(&t, ".vaultd/policy.yaml", "legacy_properties: true\n");
	char *msg = NULL;
	CU_ASSERT_EQUAL(vault_reload_policy(t.v, &msg), 1);
	free(msg);
	tv_reindex(&t);
	_cleanup_json_ cJSON *t2 = callj(&t, "list_tags", NULL);
	CU_ASSERT(same_set(jitem(t2, "tags"), "tag",
			   (const char *[]){"newtag", "oldtag", NULL}));
	_cleanup_free_ char *body =
		callt(&t, "read_note", "name", "Old Name", NULL);
	ASSERT_CONTAINS(body, "x\n");
	_cleanup_json_ cJSON *pol = callj(&t, "get_policy", NULL);
	CU_ASSERT(cJSON_IsTrue(jitem(pol, "legacy_properties")));
	/* The same policy again: nothing to read again. */
	CU_ASSERT_EQUAL(vault_reload_policy(t.v, &msg), 0);
	free(msg);
	/* With only "tag", add_tag keeps using it. */
	tv_write(&t, "Only.md", "---\ntag: oldtag\n---\n");
	tv_reindex(&t);
	CU_ASSERT(callok(&t, "add_tag", "name", "Only", "tag", "newtag", NULL));
	CU_ASSERT(tv_file_is(&t, "Only.md",
			     "---\ntag:\n  - oldtag\n  - newtag\n---\n"));
	tv_close(&t);
}

/* How many vaultd temp files a folder of the vault holds. */
static size_t temps_in(struct tvault *t, const char *rel)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", t->dir, rel);
	DIR *d = opendir(p);
	size_t n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += file_is_temp(e->d_name);
	if (d)
		closedir(d);
	return n;
}

#define NREF 300

/* A note 300 notes in three folders link to, renamed and moved. */
static void test_rename_many_referrers(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".vaultd/keep", "");
	tv_write(&t, "Hub.md", "# Hub\n");
	for (int i = 0; i < NREF; i++) {
		_cleanup_free_ char *rel =
			xasprintf("r%d/Ref %03d.md", i % 3, i);
		_cleanup_free_ char *text = xasprintf(
			"# Ref %d\n\nSee [[Hub]] and [[Hub|the hub]].\n", i);
		tv_write(&t, rel, text);
	}
	tv_open(&t);
	_cleanup_json_ cJSON *r = callj(&t, "rename_note", "old_name", "Hub",
					"new_name", "moved/Center", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(jitem(r, "files_updated")), NREF);
	CU_ASSERT_EQUAL(jnum(r, "links_updated"), 2 * NREF);
	CU_ASSERT(!tv_exists(&t, "Hub.md"));
	CU_ASSERT(tv_exists(&t, "moved/Center.md"));
	size_t rewritten = 0;
	for (int i = 0; i < NREF; i++) {
		_cleanup_free_ char *rel =
			xasprintf("r%d/Ref %03d.md", i % 3, i);
		_cleanup_free_ char *want = xasprintf(
			"# Ref %d\n\nSee [[Center]] and [[Center|the hub]].\n",
			i);
		_cleanup_free_ char *got = tv_read(&t, rel);
		rewritten += got && !strcmp(got, want);
	}
	CU_ASSERT_EQUAL(rewritten, NREF);
	static const char *const dirs[] = {".", "r0", "r1", "r2", "moved"};
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		CU_ASSERT_EQUAL(temps_in(&t, dirs[i]), 0);
	/* The index has every link on the new name. */
	_cleanup_json_ cJSON *in = callj(&t, "get_links", "name", "Center",
					 "direction", "in", NULL);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(jitem(in, "incoming")), NREF);
	_cleanup_json_ cJSON *broken = callj(&t, "find_broken_links", NULL);
	CU_ASSERT(json_equal_text(broken, "[]"));
	/* And back, through the same path. */
	CU_ASSERT(callok(&t, "rename_note", "old_name", "Center", "new_name",
			 "Hub", NULL));
	_cleanup_free_ char *r7 = tv_read(&t, "r1/Ref 007.md");
	ASSERT_STR_EQ(r7, "# Ref 7\n\nSee [[Hub]] and [[Hub|the hub]].\n");
	tv_close(&t);
}

/*
 * A linking note whose new text cannot be written (here: over the file
 * size limit, as on a full disk): the rename is refused before anything
 * changes, and says which note.
 */
static void test_rename_referrer_unwritable(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Hub.md", "# Hub\n");
	tv_write(&t, "a/Small.md", "[[Hub]]\n");
	struct sbuf big = {0};
	for (int i = 0; i < 150; i++)
		sb_puts(&big, "Some text that makes this note long. [[Hub]]\n");
	tv_write(&t, "b/Big.md", big.s);
	tv_open(&t);
	struct rlimit old;
	CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_FSIZE, &old), 0);
	void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
	struct rlimit lim = {4096, old.rlim_max};
	CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_FSIZE, &lim), 0);
	_cleanup_free_ char *e =
		calle(&t, "rename_note", "old_name", "Hub", "new_name",
		      "A much longer name for the hub", NULL);
	CU_ASSERT_EQUAL(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, oldsig);
	ASSERT_CONTAINS(e, "b/Big.md");
	ASSERT_CONTAINS(e, "nothing was changed");
	CU_ASSERT(tv_exists(&t, "Hub.md"));
	CU_ASSERT(!tv_exists(&t, "A much longer name for the hub.md"));
	CU_ASSERT(tv_file_is(&t, "a/Small.md", "[[Hub]]\n"));
	CU_ASSERT(tv_file_is(&t, "b/Big.md", big.s));
	CU_ASSERT_EQUAL(temps_in(&t, "a"), 0);
	CU_ASSERT_EQUAL(temps_in(&t, "b"), 0);
	_cleanup_json_ cJSON *in =
		callj(&t, "get_links", "name", "Hub", "direction", "in", NULL);
	CU_ASSERT(same_set(jitem(in, "incoming"), NULL,
			   (const char *[]){"Small", "Big", NULL}));
	/* Once it can be written, the same rename goes through. */
	CU_ASSERT(callok(&t, "rename_note", "old_name", "Hub", "new_name",
			 "A much longer name for the hub", NULL));
	CU_ASSERT(tv_file_is(&t, "a/Small.md",
			     "[[A much longer name for the hub]]\n"));
	sb_free(&big);
	tv_close(&t);
}

/* Set or clear the immutable flag (root, and a file system that has it). */
static int set_immutable(struct tvault *t, const char *rel, bool on)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", t->dir, rel);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	int flags;
	if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		return -errno;
	flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
	return ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0 ? -errno : 0;
}

/*
 * A linking note that cannot be replaced once the note is renamed (an
 * immutable file): the others are updated, it keeps its text, and the
 * error names it; the index has what the files have.
 */
static void test_rename_referrer_immutable(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Hub.md", "# Hub\n");
	tv_write(&t, "a/Free.md", "[[Hub]]\n");
	tv_write(&t, "b/Locked.md", "[[Hub]] locked\n");
	tv_write(&t, "b/Other.md", "[[Hub|other]]\n");
	tv_open(&t);
	int r = set_immutable(&t, "b/Locked.md", true);
	if (r < 0) {
		fprintf(stderr,
			"  skipped: cannot make a file immutable here "
			"(%s; needs root)\n",
			strerror(-r));
		tv_close(&t);
		return;
	}
	_cleanup_free_ char *e = calle(&t, "rename_note", "old_name", "Hub",
				       "new_name", "Center", NULL);
	CU_ASSERT_EQUAL(set_immutable(&t, "b/Locked.md", false), 0);
	ASSERT_CONTAINS(e, "Renamed");
	ASSERT_CONTAINS(e, "b/Locked.md");
	ASSERT_CONTAINS(e, "still link");
	CU_ASSERT(!tv_exists(&t, "Hub.md"));
	CU_ASSERT(tv_file_is(&t, "Center.md", "# Hub\n"));
	CU_ASSERT(tv_file_is(&t, "a/Free.md", "[[Center]]\n"));
	CU_ASSERT(tv_file_is(&t, "b/Other.md", "[[Center|other]]\n"));
	CU_ASSERT(tv_file_is(&t, "b/Locked.md", "[[Hub]] locked\n"));
	CU_ASSERT_EQUAL(temps_in(&t, "a"), 0);
	CU_ASSERT_EQUAL(temps_in(&t, "b"), 0);
	_cleanup_json_ cJSON *in = callj(&t, "get_links", "name", "Center",
					 "direction", "in", NULL);
	CU_ASSERT(same_set(jitem(in, "incoming"), NULL,
			   (const char *[]){"Free", "Other", NULL}));
	_cleanup_json_ cJSON *broken = callj(&t, "find_broken_links", NULL);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(broken), 1);
	_cleanup_free_ char *bt = cJSON_PrintUnformatted(broken);
	ASSERT_CONTAINS(bt, "Locked");
	tv_close(&t);
}

static void test_rename_shared_names(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "a/Dup.md", "a\n");
	tv_write(&t, "b/Dup.md", "b\n");
	tv_write(&t, "b/FromB.md", "[[Dup]]\n");
	tv_write(&t, "Root.md", "[[Dup]]\n");
	tv_write(&t, "Solo.md", "solo\n");
	tv_write(&t, "Root2.md", "[[Solo]] and [[Solo|s]]\n");
	tv_write(&t, "Case.md", "case\n");
	tv_write(&t, "Root3.md", "[[Case]]\n");
	tv_open(&t);

	/* Root's [[Dup]] meant a/Dup; b/FromB's meant b/Dup. */
	CU_ASSERT(callok(&t, "rename_note", "old_name", "a/Dup", "new_name",
			 "Unique", NULL));
	CU_ASSERT(tv_exists(&t, "a/Unique.md"));
	CU_ASSERT(tv_file_is(&t, "Root.md", "[[Unique]]\n"));
	CU_ASSERT(tv_file_is(&t, "b/FromB.md", "[[Dup]]\n"));

	/* A new name that another note has: the link must keep pointing
	 * at the moved note, so it takes the path form. */
	CU_ASSERT(callok(&t, "rename_note", "old_name", "Solo", "new_name",
			 "c/Dup", NULL));
	CU_ASSERT(tv_file_is(&t, "Root2.md", "[[c/Dup]] and [[c/Dup|s]]\n"));
	_cleanup_json_ cJSON *l = callj(&t, "get_links", "name", "Root2",
					"direction", "out", NULL);
	CU_ASSERT(json_equal_text(jitem(l, "outgoing"), "[\"c/Dup\"]"));
	_cleanup_json_ cJSON *fb = callj(&t, "get_links", "name", "FromB",
					 "direction", "out", NULL);
	CU_ASSERT(json_equal_text(jitem(fb, "outgoing"), "[\"b/Dup\"]"));

	/* A rename that only changes case. */
	CU_ASSERT(callok(&t, "rename_note", "old_name", "Case", "new_name",
			 "case", NULL));
	CU_ASSERT(tv_exists(&t, "case.md"));
	CU_ASSERT(!tv_exists(&t, "Case.md"));
	CU_ASSERT(tv_file_is(&t, "Root3.md", "[[case]]\n"));
	_cleanup_free_ char *rc = callt(&t, "read_note", "name", "CASE", NULL);
	ASSERT_STR_EQ(rc, "case\n");
	_cleanup_json_ cJSON *br = callj(&t, "find_broken_links", NULL);
	CU_ASSERT(json_equal_text(br, "[]"));
	tv_close(&t);
}

/* ---- 12. delete_note
 * --------------------------------------------------------------------- */

static void test_delete(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "folder/sub/X.md", "x\n");
	tv_write(&t, "L.md", "See [[X]] and [[X|ex]].\nkeep this\n");
	tv_write(&t, "Y.md", "first y\n");
	tv_open(&t);

	_cleanup_json_ cJSON *dd =
		callj(&t, "delete_note", "name", "X", "=dry_run", "true", NULL);
	CU_ASSERT(cJSON_IsTrue(jitem(dd, "dry_run")));
	CU_ASSERT(tv_exists(&t, "folder/sub/X.md"));
	CU_ASSERT(!tv_exists(&t, ".trash"));
	CU_ASSERT(
		tv_file_is(&t, "L.md", "See [[X]] and [[X|ex]].\nkeep this\n"));
	_cleanup_json_ cJSON *d = callj(&t, "delete_note", "name", "X", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	ASSERT_STR_EQ(jstr(d, "trash_path"), ".trash/folder/sub/X.md");
	CU_ASSERT(tv_exists(&t, ".trash/folder/sub/X.md"));
	CU_ASSERT(!tv_exists(&t, "folder/sub/X.md"));
	CU_ASSERT(tv_file_is(&t, "L.md",
			     "See [[X (deleted)]] and [[X (deleted)|ex]].\n"
			     "keep this\n"));
	_cleanup_free_ char *gone = calle(&t, "read_note", "name", "X", NULL);
	ASSERT_CONTAINS(gone, "not found");

	/* A second note of the same path goes to "Y 2.md". */
	CU_ASSERT(callok(&t, "delete_note", "name", "Y", NULL));
	CU_ASSERT(tv_file_is(&t, ".trash/Y.md", "first y\n"));
	CU_ASSERT(callok(&t, "create_note", "name", "Y", "content",
			 "second y\n", NULL));
	_cleanup_json_ cJSON *d2 = callj(&t, "delete_note", "name", "Y", NULL);
	ASSERT_STR_EQ(jstr(d2, "trash_path"), ".trash/Y 2.md");
	CU_ASSERT(tv_file_is(&t, ".trash/Y 2.md", "second y\n"));
	CU_ASSERT(tv_file_is(&t, ".trash/Y.md", "first y\n"));
	/* The trash is not part of the vault. */
	_cleanup_json_ cJSON *ln = callj(&t, "list_notes", NULL);
	CU_ASSERT(same_set(jitem(ln, "names"), NULL,
			   (const char *[]){"L", NULL}));
	tv_close(&t);

	/* Policy: keep links, and warn. */
	tv_init(&t);
	tv_write(&t, ".vaultd/policy.yaml", "delete_links: keep\n");
	tv_write(&t, "K.md", "k\n");
	tv_write(&t, "M.md", "Link [[K]] stays.\n");
	tv_open(&t);
	_cleanup_json_ cJSON *dk = callj(&t, "delete_note", "name", "K", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dk);
	CU_ASSERT(tv_file_is(&t, "M.md", "Link [[K]] stays.\n"));
	const char *w = jstr(dk, "warning");
	CU_ASSERT_PTR_NOT_NULL(w);
	ASSERT_CONTAINS(w, "M");
	CU_ASSERT(tv_exists(&t, ".trash/K.md"));
	_cleanup_json_ cJSON *br = callj(&t, "find_broken_links", NULL);
	CU_ASSERT(json_equal_text(br, "[{\"source\":\"M\",\"target\":\"K\"}]"));
	tv_close(&t);
}

/* ---- 13. Unicode names
 * ---------------------------------------------------------------------- */

static void test_unicode_names(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Проект.md", "ru\n");
	tv_write(&t, "日本語メモ.md", "ja\n");
	tv_write(&t, "Cafe\xcc\x81.md", "nfd\n"); /* "Café" in NFD */
	tv_write(&t, "Na\xc3\xafve.md", "nfc\n"); /* "Naïve" in NFC */
	tv_write(&t, "Links.md", "[[проект]] [[Caf\xc3\xa9]] [[日本語メモ]]\n");
	tv_open(&t);

	_cleanup_free_ char *a = callt(&t, "read_note", "name", "проект", NULL);
	ASSERT_STR_EQ(a, "ru\n");
	_cleanup_free_ char *b = callt(&t, "read_note", "name", "ПРОЕКТ", NULL);
	ASSERT_STR_EQ(b, "ru\n");
	_cleanup_free_ char *c =
		callt(&t, "read_note", "name", "日本語メモ", NULL);
	ASSERT_STR_EQ(c, "ja\n");
	_cleanup_free_ char *d =
		callt(&t, "read_note", "name", "Caf\xc3\xa9", NULL);
	ASSERT_STR_EQ(d, "nfd\n");
	_cleanup_free_ char *d2 =
		callt(&t, "read_note", "name", "CAF\xc3\x89", NULL);
	ASSERT_STR_EQ(d2, "nfd\n");
	_cleanup_free_ char *d3 =
		callt(&t, "read_note", "name", "Cafe\xcc\x81", NULL);
	ASSERT_STR_EQ(d3, "nfd\n");

	_cleanup_free_ char *nv =
		callt(&t, "read_note", "name", "nai\xcc\x88ve", NULL);
	ASSERT_STR_EQ(nv, "nfc\n");

	_cleanup_json_ cJSON *l = callj(&t, "get_links", "name", "Links",
					"direction", "out", NULL);
	CU_ASSERT(same_set(jitem(l, "outgoing"), NULL,
			   (const char *[]){"Проект", "Cafe\xcc\x81",
					    "日本語メモ", NULL}) ||
		  same_set(jitem(l, "outgoing"), NULL,
			   (const char *[]){"Проект", "Caf\xc3\xa9",
					    "日本語メモ", NULL}));
	_cleanup_json_ cJSON *br = callj(&t, "find_broken_links", NULL);
	CU_ASSERT(json_equal_text(br, "[]"));

	/* Writing through the NFC name updates the NFD file. */
	CU_ASSERT(callok(&t, "append_note", "name", "caf\xc3\xa9", "text",
			 "more", NULL));
	CU_ASSERT(tv_file_is(&t, "Cafe\xcc\x81.md", "nfd\n\nmore"));
	CU_ASSERT(!tv_exists(&t, "Caf\xc3\xa9.md"));
	tv_close(&t);
}

/* ---- 14. path safety
 * ------------------------------------------------------------------------ */

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

/* First line of a file outside the vault ("" when unreadable). */
static char *read_abs(const char *path)
{
	char buf[256] = {0};
	FILE *f = fopen(path, "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	return xstrdup(buf);
}

static void test_path_safety(void)
{
	struct tvault t;
	tv_init(&t);
	/* A folder outside the vault that a symlink points into. */
	const char *tmp = getenv("TMPDIR");
	_cleanup_free_ char *outside = xasprintf("%s/vaultd-outside-XXXXXX",
						 tmp && *tmp ? tmp : "/tmp");
	CU_ASSERT_FATAL(mkdtemp(outside) != NULL);
	_cleanup_free_ char *secret = xasprintf("%s/secret.md", outside);
	FILE *sf = fopen(secret, "w");
	CU_ASSERT_FATAL(sf != NULL);
	fputs("top secret\n", sf);
	fclose(sf);

	tv_write(&t, "Ok.md", "ok\n");
	_cleanup_free_ char *evil = xasprintf("%s/evil.md", t.dir);
	CU_ASSERT(symlink("/etc/passwd", evil) == 0);
	_cleanup_free_ char *evil2 = xasprintf("%s/evil2.md", t.dir);
	CU_ASSERT(symlink(secret, evil2) == 0);
	_cleanup_free_ char *out = xasprintf("%s/out", t.dir);
	CU_ASSERT(symlink(outside, out) == 0);
	tv_open(&t);

	_cleanup_free_ char *e1 =
		calle(&t, "read_note", "name", "../etc/passwd", NULL);
	CU_ASSERT_PTR_NOT_NULL(e1);
	_cleanup_free_ char *e1b =
		calle(&t, "read_note", "name", "/etc/passwd", NULL);
	CU_ASSERT_PTR_NOT_NULL(e1b);
	_cleanup_free_ char *e2 =
		calle(&t, "create_note", "name", "/abs", NULL);
	CU_ASSERT_PTR_NOT_NULL(e2);
	_cleanup_free_ char *e3 =
		calle(&t, "create_note", "name", "a/../../x", NULL);
	CU_ASSERT_PTR_NOT_NULL(e3);
	_cleanup_free_ char *e4 =
		calle(&t, "create_note", "name", "a\\b", NULL);
	CU_ASSERT_PTR_NOT_NULL(e4);
	_cleanup_free_ char *e5 =
		calle(&t, "create_note", "name", "..\\x", NULL);
	CU_ASSERT_PTR_NOT_NULL(e5);

	_cleanup_free_ char *e5b = calle(&t, "rename_note", "old_name", "Ok",
					 "new_name", "../escaped", NULL);
	CU_ASSERT_PTR_NOT_NULL(e5b);
	_cleanup_free_ char *e5c = calle(&t, "rename_note", "old_name", "Ok",
					 "new_name", "/tmp/escaped", NULL);
	CU_ASSERT_PTR_NOT_NULL(e5c);
	_cleanup_free_ char *e5d =
		calle(&t, "delete_note", "name", "../Ok", NULL);
	CU_ASSERT_PTR_NOT_NULL(e5d);
	CU_ASSERT(tv_exists(&t, "Ok.md"));

	/* Symlinks to files outside are not notes and cannot be read. */
	_cleanup_json_ cJSON *ln = callj(&t, "list_notes", NULL);
	CU_ASSERT(same_set(jitem(ln, "names"), NULL,
			   (const char *[]){"Ok", NULL}));
	_cleanup_free_ char *e6 = calle(&t, "read_note", "name", "evil", NULL);
	CU_ASSERT_PTR_NOT_NULL(e6);
	_cleanup_free_ char *e7 =
		calle(&t, "read_note", "name", "evil.md", NULL);
	CU_ASSERT_PTR_NOT_NULL(e7);
	_cleanup_free_ char *e8 = calle(&t, "read_note", "name", "evil2", NULL);
	CU_ASSERT_PTR_NOT_NULL(e8);
	_cleanup_free_ char *e9 =
		calle(&t, "read_note", "name", "out/secret", NULL);
	CU_ASSERT_PTR_NOT_NULL(e9);
	ASSERT_NOT_CONTAINS(e9, "top secret");
	_cleanup_json_ cJSON *s = callj(&t, "search_notes", "query", "secret",
					"mode", "content", NULL);
	CU_ASSERT(json_equal_text(jitem(s, "results"), "[]"));
	_cleanup_json_ cJSON *s2 = callj(&t, "search_notes", "query",
					 "root:", "mode", "content", NULL);
	CU_ASSERT(json_equal_text(jitem(s2, "results"), "[]"));

	/* Writes never go through a symlink to outside the vault. */
	_cleanup_free_ char *e10 = calle(&t, "create_note", "name", "out/pwn",
					 "content", "x", NULL);
	CU_ASSERT_PTR_NOT_NULL(e10);
	_cleanup_free_ char *pwn = xasprintf("%s/pwn.md", outside);
	CU_ASSERT(access(pwn, F_OK) != 0);
	_cleanup_free_ char *e11 =
		calle(&t, "create_note", "name", "evil", "content", "x",
		      "=overwrite", "true", NULL);
	CU_ASSERT_PTR_NOT_NULL(e11);
	_cleanup_free_ char *sec = read_abs(secret);
	ASSERT_STR_EQ(sec, "top secret\n");
	_cleanup_free_ char *e12 =
		calle(&t, "create_note", "name", "evil2", "content", "x",
		      "=overwrite", "true", NULL);
	CU_ASSERT_PTR_NOT_NULL(e12);
	_cleanup_free_ char *sec2 = read_abs(secret);
	ASSERT_STR_EQ(sec2, "top secret\n");

	/* Characters Obsidian does not allow in names. */
	static const char *const bad[] = {"a:b", "x#y",	 "q?",	"p|p", "s*",
					  "h^t", "l[x]", "<x>", NULL};
	for (const char *const *b = bad; *b; b++) {
		_cleanup_free_ char *m =
			calle(&t, "create_note", "name", *b, NULL);
		if (!m)
			fprintf(stderr, "  create_note('%s') must fail\n", *b);
		CU_ASSERT_PTR_NOT_NULL(m);
	}
	_cleanup_json_ cJSON *ln2 = callj(&t, "list_notes", NULL);
	CU_ASSERT(same_set(jitem(ln2, "names"), NULL,
			   (const char *[]){"Ok", NULL}));
	tv_close(&t);
	nftw(outside, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- 15. policy
 * ---------------------------------------------------------------------------
 */

static void test_policy_reject(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".vaultd/policy.yaml",
		 "allowed_tags: [inbox]\n"
		 "on_violation: reject\n"
		 "ignore: [\"templates/\"]\n");
	tv_write(&t, "templates/Tpl.md", "#tpltag\n");
	tv_write(&t, "Existing.md", "Work #work\n");
	tv_write(&t, "John.md", "---\ntags: [Person]\n---\nJohn\n");
	tv_open(&t);

	/* The allow list lets a tag no note has yet. */
	CU_ASSERT(callok(&t, "create_note", "name", "New", "content",
			 "todo #inbox\n", NULL));
	_cleanup_free_ char *e1 = calle(&t, "create_note", "name", "Bad",
					"content", "#newtag\n", NULL);
	ASSERT_CONTAINS(e1, "Tags not in allowed list");
	CU_ASSERT(!tv_exists(&t, "Bad.md"));

	/* An inline tag in update_note's body is judged too. */
	_cleanup_free_ char *e2 = calle(&t, "update_note", "name", "Existing",
					"content", "Now #newtag\n", NULL);
	ASSERT_CONTAINS(e2, "Tags not in allowed list");
	ASSERT_CONTAINS(e2, "newtag");
	CU_ASSERT(tv_file_is(&t, "Existing.md", "Work #work\n"));

	/* Every way of adding a tag is judged. */
	_cleanup_free_ char *e2b = calle(&t, "append_note", "name", "Existing",
					 "text", "#other", NULL);
	ASSERT_CONTAINS(e2b, "Tags not in allowed list");
	_cleanup_free_ char *e2c = calle(&t, "add_tag", "name", "Existing",
					 "tag", "brandnew", NULL);
	ASSERT_CONTAINS(e2c, "Tags not in allowed list");
	_cleanup_free_ char *e2d =
		calle(&t, "set_frontmatter", "name", "Existing", "key", "tags",
		      "value", "work, fresh", NULL);
	ASSERT_CONTAINS(e2d, "Tags not in allowed list");
	CU_ASSERT(tv_file_is(&t, "Existing.md", "Work #work\n"));
	CU_ASSERT(callok(&t, "add_tag", "name", "Existing", "tag", "#inbox",
			 NULL));

	/* A note that already breaks a rule may still be edited. */
	CU_ASSERT(callok(&t, "update_note", "name", "John", "content",
			 "John, unrelated change\n", NULL));
	CU_ASSERT(tv_file_is(
		&t, "John.md",
		"---\ntags: [Person]\n---\nJohn, unrelated change\n"));
	/* But a new Person note must follow the rule. */
	_cleanup_free_ char *e3 =
		calle(&t, "create_note", "name", "Jane", "=frontmatter",
		      "{\"tags\":[\"Person\"]}", NULL);
	ASSERT_CONTAINS(e3, "Person");
	CU_ASSERT(callok(&t, "create_note", "name", "@Jane", "=frontmatter",
			 "{\"tags\":[\"Person\"]}", NULL));
	/* Renaming a person note away from '@' breaks the rule. */
	_cleanup_free_ char *e4 = calle(&t, "rename_note", "old_name", "@Jane",
					"new_name", "Jane", NULL);
	ASSERT_CONTAINS(e4, "Person");
	CU_ASSERT(tv_exists(&t, "@Jane.md"));

	_cleanup_json_ cJSON *lv = callj(&t, "list_violations", NULL);
	CU_ASSERT(jnum(lv, "count") >= 7);
	const cJSON *v0 = cJSON_GetArrayItem(jitem(lv, "violations"), 0);
	ASSERT_STR_EQ(jstr(v0, "path"), "Jane.md");
	ASSERT_CONTAINS(jstr(v0, "message"), "Person");
	ASSERT_STR_EQ(jstr(v0, "action"), "refused");

	_cleanup_json_ cJSON *p = callj(&t, "get_policy", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	const cJSON *allowed = jitem(p, "allowed_tags");
	CU_ASSERT(arr_has_str(allowed, "inbox"));
	CU_ASSERT(arr_has_str(allowed, "work"));
	CU_ASSERT(arr_has_str(allowed, "Person"));
	CU_ASSERT(!arr_has_str(allowed, "newtag"));
	ASSERT_STR_EQ(jstr(p, "on_violation"), "reject");
	ASSERT_STR_EQ(jstr(p, "delete_links"), "mark");
	ASSERT_STR_EQ(jstr(p, "source"), ".vaultd/policy.yaml");
	CU_ASSERT(json_equal_text(jitem(p, "ignore"), "[\"templates/\"]"));
	CU_ASSERT(!arr_has_str(allowed, "tpltag"));

	/* Ignored paths are not part of the vault. */
	_cleanup_free_ char *ig = calle(&t, "read_note", "name", "Tpl", NULL);
	CU_ASSERT_PTR_NOT_NULL(ig);
	_cleanup_json_ cJSON *br = callj(&t, "browse", NULL);
	CU_ASSERT_PTR_NULL(arr_find(jitem(br, "folders"), "path", "templates"));
	_cleanup_free_ char *ig2 =
		calle(&t, "create_note", "name", "templates/New", NULL);
	CU_ASSERT_PTR_NOT_NULL(ig2);
	const cJSON *rule = arr_find(jitem(p, "tag_rules"), "tag", "Person");
	CU_ASSERT_PTR_NOT_NULL(rule);
	ASSERT_STR_EQ(jstr(rule, "name_prefix"), "@");
	CU_ASSERT(cJSON_IsArray(jitem(p, "ignore")));
	CU_ASSERT(arr_find(jitem(p, "tag_rules"), "tag", "claude") != NULL);
	tv_close(&t);
}

static void test_policy_warn(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".vaultd/policy.yaml", "on_violation: warn\n");
	tv_write(&t, "@Alice.md", "---\ntags: [Person]\n---\nAlice\n");
	tv_open(&t);

	_cleanup_json_ cJSON *r =
		callj(&t, "create_note", "name", "John", "=frontmatter",
		      "{\"tags\":[\"Person\"]}", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT(tv_exists(&t, "John.md"));
	const char *w = jstr(r, "warning");
	CU_ASSERT_PTR_NOT_NULL(w);
	ASSERT_CONTAINS(w, "Person");

	_cleanup_json_ cJSON *lv = callj(&t, "list_violations", NULL);
	CU_ASSERT_EQUAL(jnum(lv, "count"), 1);
	const cJSON *v0 = cJSON_GetArrayItem(jitem(lv, "violations"), 0);
	ASSERT_STR_EQ(jstr(v0, "path"), "John.md");
	ASSERT_STR_EQ(jstr(v0, "action"), "warned");
	ASSERT_CONTAINS(jstr(v0, "message"), "Person");

	_cleanup_json_ cJSON *p = callj(&t, "get_policy", NULL);
	ASSERT_STR_EQ(jstr(p, "on_violation"), "warn");
	tv_close(&t);
}

static void test_policy_malformed(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".vaultd/policy.yaml",
		 "allowed_tags:\n"
		 "  - inbox\n"
		 "on_violation: [reject\n");
	struct vault *v = NULL;
	char *msg = NULL;
	CU_ASSERT(vault_open(t.dir, &v, &msg) < 0);
	CU_ASSERT_PTR_NULL(v);
	ASSERT_CONTAINS(msg, "policy.yaml");
	CU_ASSERT(names_a_line(msg));
	free(msg);
	vault_free(v);

	/* A known key with a wrong value. */
	tv_write(&t, ".vaultd/policy.yaml", "on_violation: maybe\n");
	msg = NULL;
	v = NULL;
	CU_ASSERT(vault_open(t.dir, &v, &msg) < 0);
	ASSERT_CONTAINS(msg, "on_violation");
	free(msg);
	vault_free(v);
	tv_close(&t);
}

/* ---- 16. search
 * -------------------------------------------------------------------------- */

static void test_search_modes(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Project.md", "Мой проект важен.\n");
	tv_write(&t, "Project Plan.md", "plan\n");
	tv_write(&t, "Projection.md", "math\n");
	tv_write(&t, "Old Project.md", "old\n");
	tv_write(&t, "Alias Holder.md", "---\naliases: [Zebra]\n---\nz\n");
	tv_write(&t, "T1.md", "---\ntags: [vc/project, ai]\n---\n");
	tv_write(&t, "T2.md", "#vc\n");
	tv_write(&t, "T3.md", "---\ntags: ai\n---\n");
	tv_open(&t);

	_cleanup_json_ cJSON *n1 = callj(&t, "search_notes", "query", "PROJECT",
					 "mode", "name", NULL);
	CU_ASSERT(same_set(jitem(n1, "results"), "name",
			   (const char *[]){"Project", NULL}));
	_cleanup_json_ cJSON *n2 = callj(&t, "search_notes", "query", "zebra",
					 "mode", "name", NULL);
	CU_ASSERT(same_set(jitem(n2, "results"), "name",
			   (const char *[]){"Alias Holder", NULL}));

	_cleanup_json_ cJSON *p =
		callj(&t, "search_notes", "query", "project", NULL);
	const cJSON *pr = jitem(p, "results");
	CU_ASSERT_EQUAL(cJSON_GetArraySize(pr), 4);
	ASSERT_STR_EQ(jstr(cJSON_GetArrayItem(pr, 0), "name"), "Project");
	/* Prefix matches before substring matches. */
	const char *n_1 = jstr(cJSON_GetArrayItem(pr, 1), "name");
	const char *n_2 = jstr(cJSON_GetArrayItem(pr, 2), "name");
	CU_ASSERT(n_1 && n_2 && str_has_prefix(n_1, "Project") &&
		  str_has_prefix(n_2, "Project"));
	ASSERT_STR_EQ(jstr(cJSON_GetArrayItem(pr, 3), "name"), "Old Project");

	_cleanup_json_ cJSON *c = callj(&t, "search_notes", "query", "ПРОЕКТ",
					"mode", "content", NULL);
	CU_ASSERT(same_set(jitem(c, "results"), "name",
			   (const char *[]){"Project", NULL}));
	const cJSON *c0 = cJSON_GetArrayItem(jitem(c, "results"), 0);
	CU_ASSERT_EQUAL(jnum(c0, "line"), 1);

	_cleanup_json_ cJSON *t1 =
		callj(&t, "search_notes", "query", "vc", "mode", "tag", NULL);
	CU_ASSERT(same_set(jitem(t1, "results"), "name",
			   (const char *[]){"T1", "T2", NULL}));
	_cleanup_json_ cJSON *t2 =
		callj(&t, "search_notes", "query", "vc, ai", "mode", "tag",
		      "tag_logic", "and", NULL);
	CU_ASSERT(same_set(jitem(t2, "results"), "name",
			   (const char *[]){"T1", NULL}));
	_cleanup_json_ cJSON *t3 =
		callj(&t, "search_notes", "query", "#vc,ai", "mode", "tag",
		      "tag_logic", "or", NULL);
	CU_ASSERT(same_set(jitem(t3, "results"), "name",
			   (const char *[]){"T1", "T2", "T3", NULL}));
	_cleanup_json_ cJSON *t4 = callj(&t, "search_notes", "query",
					 "vc/project", "mode", "tag", NULL);
	CU_ASSERT(same_set(jitem(t4, "results"), "name",
			   (const char *[]){"T1", NULL}));
	/* "v" is not a parent of "vc". */
	_cleanup_json_ cJSON *t5 =
		callj(&t, "search_notes", "query", "v", "mode", "tag", NULL);
	CU_ASSERT(json_equal_text(jitem(t5, "results"), "[]"));
	tv_close(&t);
}

static void test_search_paging(void)
{
	struct tvault t;
	tv_init(&t);
	for (int i = 1; i <= 7; i++) {
		_cleanup_free_ char *p = xasprintf("Page %d.md", i);
		tv_write(&t, p, "page\n");
	}
	tv_write(&t, "Other.md", "other\n");
	tv_open(&t);

	bool seen[8] = {0};
	int pages = 0, total = 0;
	_cleanup_free_ char *cursor = NULL;
	do {
		_cleanup_json_ cJSON *r =
			cursor ? callj(&t, "search_notes", "query", "page",
				       "=limit", "3", "cursor", cursor, NULL)
			       : callj(&t, "search_notes", "query", "page",
				       "=limit", "3", NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		CU_ASSERT_EQUAL(jnum(r, "total"), 7);
		const cJSON *it;
		cJSON_ArrayForEach(it, jitem(r, "results"))
		{
			int k = 0;
			const char *nm = jstr(it, "name");
			if (nm && sscanf(nm, "Page %d", &k) == 1 && k >= 1 &&
			    k <= 7) {
				CU_ASSERT(!seen[k]);
				seen[k] = true;
			}
			total++;
		}
		free(cursor);
		const char *next = jstr(r, "next_cursor");
		cursor = next ? xstrdup(next) : NULL;
		pages++;
	} while (cursor && pages < 10);
	CU_ASSERT_EQUAL(pages, 3);
	CU_ASSERT_EQUAL(total, 7);
	for (int k = 1; k <= 7; k++)
		CU_ASSERT(seen[k]);

	/* Forged cursors. */
	_cleanup_free_ char *e1 = calle(&t, "search_notes", "query", "page",
					"cursor", "garbage", NULL);
	ASSERT_CONTAINS(e1, "Invalid cursor");
	_cleanup_json_ cJSON *r1 =
		callj(&t, "search_notes", "query", "page", "=limit", "3", NULL);
	const char *good = jstr(r1, "next_cursor");
	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	_cleanup_free_ char *forged = xstrdup(good);
	forged[5] = forged[5] == 'A' ? 'B' : 'A';
	_cleanup_free_ char *e2 = calle(&t, "search_notes", "query", "page",
					"cursor", forged, NULL);
	ASSERT_CONTAINS(e2, "Invalid cursor");
	_cleanup_free_ char *e2b =
		calle(&t, "search_notes", "query", "page", "cursor",
		      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", NULL);
	ASSERT_CONTAINS(e2b, "Invalid cursor");

	/* A cursor from another query. */
	_cleanup_free_ char *e3 =
		calle(&t, "search_notes", "query", "pag", "cursor", good, NULL);
	ASSERT_CONTAINS(e3, "different query");
	_cleanup_free_ char *e3b =
		calle(&t, "search_notes", "query", "page", "mode", "content",
		      "cursor", good, NULL);
	ASSERT_CONTAINS(e3b, "different query");

	/* The vault changed: the cursor is stale. */
	CU_ASSERT(callok(&t, "create_note", "name", "Page 8", "content", "p",
			 NULL));
	_cleanup_free_ char *e4 = calle(&t, "search_notes", "query", "page",
					"=limit", "3", "cursor", good, NULL);
	CU_ASSERT(e4 && str_has_prefix(e4, "Stale cursor"));
	tv_close(&t);
}

/* ---- 17. concurrent writers
 * -------------------------------------------------------------------- */

static struct tvault conc_vault;

static void *append_worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (int i = 0; i < 100; i++) {
		_cleanup_free_ char *text = xasprintf("line t%d-%03d", id, i);
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "name", "Log");
		cJSON_AddStringToObject(a, "text", text);
		struct tool_result r;
		tools_call(conc_vault.v, "append_note", a, "test", &r);
		if (r.is_error)
			fprintf(stderr, "  append failed: %s\n", r.text);
		tool_result_clear(&r);
		cJSON_Delete(a);
	}
	return NULL;
}

static atomic_bool conc_done;

static void *read_worker(void *arg)
{
	static const char *const calls[][2] = {
		{"read_note", "{\"name\":\"Log\"}"},
		{"search_notes", "{\"query\":\"line\",\"mode\":\"content\"}"},
		{"get_note_metadata", "{\"name\":\"Log\"}"},
		{"list_tags", NULL},
		{"get_backlinks", "{\"name\":\"Log\"}"},
		{"recent_notes", NULL},
	};
	size_t i = (size_t)(intptr_t)arg;
	int errors = 0;
	while (!atomic_load(&conc_done)) {
		struct tool_result r;
		tv_call(&conc_vault, calls[i % ARRAY_SIZE(calls)][0],
			calls[i % ARRAY_SIZE(calls)][1], &r);
		errors += r.is_error;
		tool_result_clear(&r);
		i++;
	}
	return (void *)(intptr_t)errors;
}

static void test_concurrent_appends(void)
{
	tv_init(&conc_vault);
	tv_write(&conc_vault, "Log.md", "---\ntitle: log\n---\n# Log\n");
	tv_write(&conc_vault, "Ref.md", "[[Log]] #tag\n");
	tv_open(&conc_vault);
	atomic_store(&conc_done, false);
	pthread_t th[4], rd_th[2];
	for (int i = 0; i < 2; i++)
		CU_ASSERT_FATAL(pthread_create(&rd_th[i], NULL, read_worker,
					       (void *)(intptr_t)(i * 3)) == 0);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, append_worker,
					       (void *)(intptr_t)i) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	atomic_store(&conc_done, true);
	for (int i = 0; i < 2; i++) {
		void *errs = NULL;
		pthread_join(rd_th[i], &errs);
		CU_ASSERT_EQUAL((intptr_t)errs, 0);
	}

	_cleanup_free_ char *text = tv_read(&conc_vault, "Log.md");
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT(str_has_prefix(text, "---\ntitle: log\n---\n# Log\n"));
	int missing = 0, dups = 0;
	for (int id = 0; id < 4; id++) {
		for (int i = 0; i < 100; i++) {
			_cleanup_free_ char *line =
				xasprintf("line t%d-%03d\n", id, i);
			_cleanup_free_ char *last =
				xasprintf("line t%d-%03d", id, i);
			const char *p = strstr(text, line);
			if (!p && str_has_suffix(text, last))
				p = text + strlen(text) - strlen(last);
			if (!p) {
				missing++;
				continue;
			}
			if (strstr(p + 1, line))
				dups++;
		}
	}
	CU_ASSERT_EQUAL(missing, 0);
	CU_ASSERT_EQUAL(dups, 0);
	/* The index agrees with the file. */
	_cleanup_free_ char *rd = NULL;
	{
		struct tool_result r;
		tv_call(&conc_vault, "read_note", "{\"name\":\"Log\"}", &r);
		rd = r.is_error ? NULL : TAKE_PTR(r.text);
		tool_result_clear(&r);
	}
	ASSERT_STR_EQ(rd, text);
	tv_close(&conc_vault);
}

/* ---- runner
 * ------------------------------------------------------------------------------------
 */

/*
 * A note deleted through the mount is forgotten after its grace period;
 * a note linking to it that cannot be read at that moment (replaced by a
 * folder here) leaves its links alone, and nothing is freed twice.
 */
static void test_forget_unreadable_source(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Target.md", "target\n");
	tv_write(&t, "Src.md", "see [[Target]]\n");
	tv_open(&t);
	char path[4096];
	snprintf(path, sizeof(path), "%s/Target.md", t.dir);
	CU_ASSERT_EQUAL(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/Src.md", t.dir);
	CU_ASSERT_EQUAL(unlink(path), 0);
	CU_ASSERT_EQUAL(mkdir(path, 0755), 0);
	vault_write_lock(t.v);
	vault_forget_note(t.v, "Target.md", "test");
	vault_write_unlock(t.v);
	vault_read_lock(t.v);
	CU_ASSERT_PTR_NULL(index_by_path(vault_index(t.v), "Target.md"));
	vault_read_unlock(t.v);
	tv_close(&t);
}

/* A note that cannot be read for a moment (no descriptor left, a failing
 * disk) is not a deleted note: the index keeps it, its links stay, and
 * the error is returned to the caller (which logs it). */
/* A note rewritten in place within one tick of the file clock, with the
 * same size: time, size and inode are those of the text the index has,
 * yet the text differs. The index reads it again (a racy note). */
static int sync_locked(struct tvault *t, const char *path)
{
	vault_write_lock(t->v);
	int r = vault_sync_path(t->v, path, "external", 0);
	vault_write_unlock(t->v);
	return r;
}

/* Whether get_backlinks of name lists a note whose path holds src. */
static bool backlinked_from(struct tvault *t, const char *name, const char *src)
{
	cJSON *bl = callj(t, "get_backlinks", "name", name, NULL);
	char *s = bl ? cJSON_PrintUnformatted(bl) : NULL;
	bool r = s && strstr(s, src);
	cJSON_free(s);
	cJSON_Delete(bl);
	return r;
}

static void test_sync_same_tick_rewrite(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "a\n");
	tv_write(&t, "B.md", "b\n");
	tv_write(&t, "Src.md", "see [[A]]\n");
	tv_open(&t);
	char *p = xasprintf("%s/Src.md", t.dir);
	struct stat st0;
	CU_ASSERT_EQUAL_FATAL(stat(p, &st0), 0);
	tv_write(&t, "Src.md", "see [[B]]\n");
	struct timespec ts[2] = {st0.st_atim, st0.st_mtim};
	CU_ASSERT_EQUAL_FATAL(utimensat(AT_FDCWD, p, ts, 0), 0);
	struct stat st1;
	CU_ASSERT_EQUAL_FATAL(stat(p, &st1), 0);
	CU_ASSERT_EQUAL(st1.st_ino, st0.st_ino);
	CU_ASSERT_EQUAL(st1.st_size, st0.st_size);
	CU_ASSERT_EQUAL(sync_locked(&t, "Src.md"), 0);
	CU_ASSERT_TRUE(backlinked_from(&t, "B", "Src"));
	/* Read again with the same text: nothing changes. */
	CU_ASSERT_EQUAL(sync_locked(&t, "Src.md"), 0);
	CU_ASSERT_FALSE(backlinked_from(&t, "A", "Src"));
	CU_ASSERT_TRUE(backlinked_from(&t, "B", "Src"));
	free(p);
	tv_close(&t);
}

static void test_sync_failing_read(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Target.md", "target #known\n");
	tv_write(&t, "Src.md", "see [[Target]]\n");
	tv_open(&t);
	tv_write(&t, "Target.md", "changed\n");
	/* Every descriptor number from the lowest free one is over the
	 * limit: the next open fails with EMFILE. */
	int lowest = fcntl(0, F_DUPFD, 0);
	CU_ASSERT_FATAL(lowest >= 0);
	close(lowest);
	struct rlimit old, low;
	CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)lowest;
	CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_NOFILE, &low), 0);
	int r = sync_locked(&t, "Target.md");
	CU_ASSERT_EQUAL(setrlimit(RLIMIT_NOFILE, &old), 0);
	CU_ASSERT_EQUAL(r, -EMFILE);
	vault_read_lock(t.v);
	struct note *n = index_by_path(vault_index(t.v), "Target.md");
	CU_ASSERT_PTR_NOT_NULL(n);
	CU_ASSERT_TRUE(n && n->ntags == 1);
	vault_read_unlock(t.v);
	CU_ASSERT_TRUE(backlinked_from(&t, "Target", "Src"));
	/* Once it reads again, the change is taken. */
	CU_ASSERT_EQUAL(sync_locked(&t, "Target.md"), 0);
	vault_read_lock(t.v);
	n = index_by_path(vault_index(t.v), "Target.md");
	CU_ASSERT_TRUE(n && n->ntags == 0);
	vault_read_unlock(t.v);
	/* A whole index build that cannot read the folder says so. */
	char *msg = NULL;
	lowest = fcntl(0, F_DUPFD, 0);
	close(lowest);
	low.rlim_cur = (rlim_t)lowest;
	CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_NOFILE, &low), 0);
	r = vault_index_all(t.v, NULL, NULL, &msg);
	CU_ASSERT_EQUAL(setrlimit(RLIMIT_NOFILE, &old), 0);
	CU_ASSERT_EQUAL(r, -EMFILE);
	ASSERT_CONTAINS(msg, "could not be read and is not in the index (the "
			     "first: .: Too many open files)");
	free(msg);
	tv_close(&t);
}

/* The policy reloaded (policy.yaml saved) while notes are written: a
 * write keeps the policy it started with; none is freed under it (seen
 * by AddressSanitizer as a use after free before). */
struct reload_arg {
	struct tvault *t;
	atomic_bool stop;
	int reloads;
};

static void *reload_loop(void *p)
{
	struct reload_arg *a = p;
	for (int i = 0; !atomic_load(&a->stop) && i < 2000; i++) {
		tv_write(a->t, ".vaultd/policy.yaml",
			 i % 2 ? "allowed_tags: [known, other]\n"
			       : "allowed_tags: [known]\non_violation: warn\n");
		char *msg = NULL;
		if (vault_reload_policy(a->t->v, &msg) == 0)
			a->reloads++;
		free(msg);
	}
	return NULL;
}

static void test_policy_reload_under_writes(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Known.md", "known #known\n");
	tv_write(&t, ".vaultd/policy.yaml", "allowed_tags: [known]\n");
	tv_open(&t);
	struct reload_arg a = {.t = &t};
	pthread_t th;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, reload_loop, &a), 0);
	/* Refused or not (the policy changes under them), every write
	 * answers. */
	for (int i = 0; i < 300; i++) {
		char args[128];
		struct tool_result r;
		snprintf(args, sizeof(args),
			 "{\"name\":\"N%d\",\"content\":\"text #%s\"}", i,
			 i % 3 ? "known" : "other");
		tv_call(&t, "create_note", args, &r);
		CU_ASSERT_PTR_NOT_NULL(r.text);
		tool_result_clear(&r);
		snprintf(args, sizeof(args),
			 "{\"name\":\"N%d\",\"text\":\"more #other\"}", i);
		tv_call(&t, "append_note", args, &r);
		tool_result_clear(&r);
		tv_call(&t, "get_policy", NULL, &r);
		CU_ASSERT_FALSE(r.is_error);
		tool_result_clear(&r);
	}
	atomic_store(&a.stop, true);
	pthread_join(th, NULL);
	CU_ASSERT_TRUE(a.reloads > 0);
	tv_close(&t);
}

/* Symlinks planted where vaultd keeps things: clear errors, nothing
 * written outside the vault (refused text kept elsewhere: test-modes.sh,
 * through the mount). */
static void test_planted_symlinks(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Keep.md", "keep #known\n");
	tv_write(&t, "Gone.md", "gone\n");
	char out[4096], link[4096];
	snprintf(out, sizeof(out), "%s.outside", t.dir);
	CU_ASSERT_EQUAL(mkdir(out, 0700), 0);
	snprintf(link, sizeof(link), "%s/.trash", t.dir);
	CU_ASSERT_EQUAL(symlink(out, link), 0);
	CU_ASSERT_EQUAL(mkdir(strcat(strcpy(link, t.dir), "/.vaultd"), 0755),
			0);
	snprintf(link, sizeof(link), "%s/.vaultd/rejected", t.dir);
	CU_ASSERT_EQUAL(symlink(out, link), 0);
	tv_open(&t);

	char *err = tv_call_err(&t, "delete_note", "{\"name\": \"Gone\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "symlink"));
	free(err);
	CU_ASSERT(tv_exists(&t, "Gone.md"));

	/* A refused write through the tools keeps nothing (the client has
	 * the text) and writes nothing outside. */
	err = tv_call_err(&t, "create_note",
			  "{\"name\": \"Bad\", \"content\": \"x #forbidden\"}");
	CU_ASSERT_PTR_NOT_NULL(err);
	free(err);
	/* Nothing landed outside. */
	DIR *d = opendir(out);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	if (d)
		closedir(d);
	CU_ASSERT_EQUAL(n, 0);
	rmdir(out);
	tv_close(&t);
}

/* ---- bounded answers
 * ------------------------------------------------------------ */

/* A string of n copies of c (caller frees). */
static char *repeat(char c, size_t n)
{
	char *s = xmalloc(n + 1);
	memset(s, c, n);
	s[n] = 0;
	return s;
}

/* An error that quotes a 20 MB argument is short, and says its size. */
static bool short_error(char *e, const char *what)
{
	bool ok = e && strlen(e) < 1024 && strstr(e, "(20971520 bytes") &&
		  u8_valid(e, strlen(e));
	if (!ok)
		fprintf(stderr, "  %s: %zu bytes: %.200s\n", what,
			e ? strlen(e) : 0, e ? e : "(no error)");
	free(e);
	return ok;
}

static void test_bounded_errors(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "# Head\n\nbody #known\n");
	tv_open(&t);
	const size_t big = 20u << 20;
	_cleanup_free_ char *huge = repeat('a', big);

	CU_ASSERT(short_error(calle(&t, "read_note", "name", huge, NULL),
			      "read_note"));
	_cleanup_free_ char *e = calle(&t, "read_note", "name", huge, NULL);
	ASSERT_CONTAINS(e, "name too long (20971520 bytes; the limit is "
			   "4096)");
	CU_ASSERT(short_error(calle(&t, "create_note", "name", huge, NULL),
			      "create_note"));
	CU_ASSERT(short_error(calle(&t, "rename_note", "old_name", "A",
				    "new_name", huge, NULL),
			      "rename_note"));
	CU_ASSERT(short_error(calle(&t, "replace_text", "name", "A", "old_text",
				    huge, "new_text", "x", NULL),
			      "replace_text"));
	CU_ASSERT(short_error(calle(&t, "insert_text", "name", "A", "text", "x",
				    "after", huge, NULL),
			      "insert_text"));
	CU_ASSERT(short_error(
		calle(&t, "read_section", "name", "A", "section", huge, NULL),
		"read_section"));
	CU_ASSERT(short_error(calle(&t, "update_section", "name", "A",
				    "section", huge, "content", "x", NULL),
			      "update_section"));
	_cleanup_free_ char *bang = repeat('!', big);
	CU_ASSERT(short_error(
		calle(&t, "add_tag", "name", "A", "tag", bang, NULL),
		"add_tag"));
	CU_ASSERT(short_error(calle(&t, "list_notes", "folder", huge, NULL),
			      "list_notes folder"));
	CU_ASSERT(short_error(calle(&t, "recent_notes", "since", huge, NULL),
			      "recent_notes since"));
	CU_ASSERT(short_error(
		calle(&t, "read_note", "name", "A", huge, "x", NULL),
		"unknown argument"));
	struct tool_result r;
	tools_call(t.v, huge, NULL, "test", &r);
	CU_ASSERT(r.is_error);
	CU_ASSERT(short_error(TAKE_PTR(r.text), "unknown tool"));
	tool_result_clear(&r);

	/* The cut keeps whole characters: 'é' is two bytes. */
	struct sbuf u = {0};
	for (int i = 0; i < 100; i++)
		sb_puts(&u, "\xc3\xa9");
	const char *q = QUOTE(u.s);
	CU_ASSERT(u8_valid(q, strlen(q)));
	ASSERT_CONTAINS(q, "\xc3\xa9…' (200 bytes)");
	CU_ASSERT(strlen(q) < QUOTE_BUF);
	CU_ASSERT_STRING_EQUAL(QUOTE("short"), "'short'");
	_cleanup_free_ char *x81 = repeat('x', QUOTE_MAX + 1);
	ASSERT_CONTAINS(QUOTE(x81), "…' (81 bytes)");
	/* One byte over: the cut moves back to the start of 'é'. */
	_cleanup_free_ char *odd =
		xasprintf("%.*s\xc3\xa9yy", QUOTE_MAX - 1, x81);
	q = QUOTE(odd);
	CU_ASSERT(u8_valid(q, strlen(q)));
	ASSERT_NOT_CONTAINS(q, "\xc3\xa9");
	sb_free(&u);

	/* A refusal with a long tag names it short. */
	_cleanup_free_ char *tag = repeat('t', 100000);
	_cleanup_free_ char *content = xasprintf("x #%s\n", tag);
	_cleanup_free_ char *pe =
		calle(&t, "create_note", "name", "B", "content", content, NULL);
	CU_ASSERT_PTR_NOT_NULL(pe);
	CU_ASSERT(pe && strlen(pe) < 1024);
	ASSERT_CONTAINS(pe, "(100000 bytes)");
	tv_close(&t);
}

/* No error says more than a few KiB, even one made of many short parts. */
static void test_bounded_long_message(void)
{
	struct tvault t;
	tv_init(&t);
	struct sbuf b = {0};
	for (int i = 0; i < 2000; i++)
		sb_printf(&b, "#existing-tag-number-%d\n", i);
	tv_write(&t, "Tags.md", b.s);
	sb_free(&b);
	tv_open(&t);
	_cleanup_free_ char *e = calle(&t, "create_note", "name", "New",
				       "content", "#brand-new", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	ASSERT_CONTAINS(e, "Tags not in allowed list: ['brand-new']");
	CU_ASSERT(strlen(e) <= 4096);
	ASSERT_CONTAINS(e, "[message cut: ");
	CU_ASSERT(u8_valid(e, strlen(e)));
	CU_ASSERT(!tv_exists(&t, "New.md"));
	tv_close(&t);
}

/* Read a list tool page by page: every item once, to the end. */
static void test_paging_lists(void)
{
	struct tvault t;
	tv_init(&t);
	/* 300 notes with 10 broken links each: 3000 broken links; no note
	 * links to another, so all 300 are orphans. */
	for (int i = 0; i < 300; i++) {
		struct sbuf b = {0};
		for (int k = 0; k < 10; k++)
			sb_printf(&b, "[[missing %03d-%d]] #tag%03d\n", i, k,
				  i);
		_cleanup_free_ char *rel = xasprintf("n%03d.md", i);
		tv_write(&t, rel, b.s);
		sb_free(&b);
	}
	tv_open(&t);

	/* Without arguments: the first 1000, the total and where on. */
	_cleanup_json_ cJSON *d = callj(&t, "find_broken_links", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(jitem(d, "result")), 1000);
	CU_ASSERT_EQUAL(jnum(d, "total"), 3000);
	CU_ASSERT_EQUAL(jnum(d, "next_offset"), 1000);

	struct {
		const char *tool, *list, *key;
		int total;
	} lists[] = {
		{"find_broken_links", "result", "target", 3000},
		{"get_orphans", "orphans", "name", 300},
		{"list_tags", "tags", "tag", 300},
	};
	for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
		_cleanup_(strv_freep) char **seen =
			xcalloc(lists[l].total + 1, sizeof(char *));
		int n = 0, pages = 0;
		double off = 0;
		while (off >= 0 && pages < 1000) {
			_cleanup_free_ char *o = xasprintf("%.0f", off);
			_cleanup_json_ cJSON *r =
				callj(&t, lists[l].tool, "=limit", "97",
				      "=offset", o, NULL);
			CU_ASSERT_PTR_NOT_NULL_FATAL(r);
			CU_ASSERT_EQUAL(jnum(r, "total"), lists[l].total);
			const cJSON *it;
			cJSON_ArrayForEach(it, jitem(r, lists[l].list))
			{
				const char *v = jstr(it, lists[l].key);
				bool dup = false;
				for (int j = 0; j < n && !dup; j++)
					dup = !strcmp(seen[j], v);
				CU_ASSERT(!dup);
				if (!dup && n < lists[l].total)
					seen[n++] = xstrdup(v);
			}
			if (!strcmp(lists[l].tool, "get_orphans"))
				CU_ASSERT_EQUAL(jnum(r, "count"),
						cJSON_GetArraySize(
							jitem(r, "orphans")));
			off = jnum(r, "next_offset");
			pages++;
		}
		if (n != lists[l].total)
			fprintf(stderr, "  %s: %d of %d in %d pages\n",
				lists[l].tool, n, lists[l].total, pages);
		CU_ASSERT_EQUAL(n, lists[l].total);
		CU_ASSERT_EQUAL(pages, (lists[l].total + 96) / 97);
	}
	/* Past the end: nothing, and no next page. */
	_cleanup_json_ cJSON *e =
		callj(&t, "list_tags", "=offset", "5000", NULL);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(jitem(e, "tags")), 0);
	CU_ASSERT_PTR_NULL(jitem(e, "next_offset"));
	/* A count is 1 or more though the schema leaves "minimum": 1
	 * unsaid; an offset is 0 or more. */
	_cleanup_free_ char *neg =
		calle(&t, "list_tags", "=offset", "-1", NULL);
	ASSERT_STR_EQ(neg, "Invalid argument 'offset' for list_tags: must be "
			   "0 or more");
	_cleanup_free_ char *none = calle(&t, "list_tags", "=limit", "0", NULL);
	ASSERT_STR_EQ(none, "Invalid argument 'limit' for list_tags: must be "
			    "between 1 and 10000");
	_cleanup_free_ char *big =
		calle(&t, "list_tags", "=limit", "10001", NULL);
	ASSERT_STR_EQ(big, "Invalid argument 'limit' for list_tags: must be "
			   "between 1 and 10000");
	_cleanup_free_ char *len =
		calle(&t, "read_note", "name", "n000", "=length", "0", NULL);
	ASSERT_STR_EQ(len, "Invalid argument 'length' for read_note: must be "
			   "1 or more");
	tv_close(&t);
}

/* read_note in parts: the parts make the note again, byte for byte. */
static void test_read_note_parts(void)
{
	struct tvault t;
	tv_init(&t);
	struct sbuf b = {0};
	for (int i = 0; i < 3000; i++)
		sb_printf(&b,
			  "line %d: caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac "
			  "\xf0\x9f\x98\x80\n",
			  i);
	tv_write(&t, "Big.md", b.s);
	tv_open(&t);

	/* Whole, as ever: no word about parts, only the version. */
	struct tool_result r;
	tv_call(&t, "read_note", "{\"name\": \"Big\"}", &r);
	CU_ASSERT(!r.is_error);
	ASSERT_STR_EQ(r.text, b.s);
	char ver[TEXT_VERSION_LEN + 1];
	text_version(b.s, b.len, ver);
	_cleanup_free_ char *vinfo = xasprintf("Version %s.", ver);
	ASSERT_STR_EQ(r.info, vinfo);
	tool_result_clear(&r);

	static const long lengths[] = {1, 2, 3, 7, 1000, 4096};
	for (size_t k = 0; k < ARRAY_SIZE(lengths); k++) {
		struct sbuf got = {0};
		long off = 0;
		int parts = 0;
		for (;;) {
			_cleanup_free_ char *a = xasprintf(
				"{\"name\": \"Big\", \"offset\": %ld, "
				"\"length\": %ld}",
				off, lengths[k]);
			tv_call(&t, "read_note", a, &r);
			CU_ASSERT_FATAL(!r.is_error);
			CU_ASSERT(u8_valid(r.text, strlen(r.text)));
			CU_ASSERT(strlen(r.text) > 0);
			CU_ASSERT(strlen(r.text) <= (size_t)lengths[k] ||
				  strlen(r.text) <= 4);
			sb_puts(&got, r.text);
			_cleanup_free_ char *size = xasprintf(" of %zu", b.len);
			ASSERT_CONTAINS(r.info, size);
			const char *next =
				r.info ? strstr(r.info, "offset=") : NULL;
			parts++;
			if (!next) {
				ASSERT_CONTAINS(r.info, "the end of the note");
				tool_result_clear(&r);
				break;
			}
			long n = strtol(next + 7, NULL, 10);
			CU_ASSERT_FATAL(n > off);
			CU_ASSERT_EQUAL((size_t)n, got.len);
			off = n;
			tool_result_clear(&r);
		}
		CU_ASSERT(got.len == b.len && !memcmp(got.s, b.s, b.len));
		CU_ASSERT(parts > 1);
		sb_free(&got);
	}
	/* An offset inside a character starts at the character. */
	_cleanup_free_ char *mid = callt(&t, "read_note", "name", "Big",
					 "=offset", "12", "=length", "2", NULL);
	ASSERT_STR_EQ(mid, "\xc3\xa9");
	/* Past the end: nothing, and it says so. */
	tv_call(&t, "read_note", "{\"name\": \"Big\", \"offset\": 100000000}",
		&r);
	CU_ASSERT(!r.is_error);
	ASSERT_STR_EQ(r.text, "");
	ASSERT_CONTAINS(r.info, "the end of the note");
	tool_result_clear(&r);
	sb_free(&b);
	tv_close(&t);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"browse", test_browse},
		{"list_tags", test_list_tags},
		{"backlinks_lines", test_backlinks_lines},
		{"orphans_broken_links", test_orphans_broken},
		{"recent_notes", test_recent_notes},
		{"write_tools_basic", test_write_tools_basic},
		{"update_frontmatter", test_update_frontmatter},
		{"invalid_yaml", test_invalid_yaml},
		{"alias_bomb_vault", test_alias_bomb_vault},
		{"frontmatter_over_budget_refused",
		 test_frontmatter_over_budget_refused},
		{"not_utf8_read", test_not_utf8_read},
		{"not_utf8_edits", test_not_utf8_edits},
		{"note_metadata", test_note_metadata},
		{"link_forms", test_link_forms},
		{"duplicate_names", test_duplicate_names},
		{"rename", test_rename},
		{"rename_shared_names", test_rename_shared_names},
		{"rename_many_referrers", test_rename_many_referrers},
		{"rename_referrer_unwritable", test_rename_referrer_unwritable},
		{"rename_referrer_immutable", test_rename_referrer_immutable},
		{"obsidian_reading", test_obsidian_reading},
		{"legacy_properties", test_legacy_properties},
		{"delete", test_delete},
		{"unicode_names", test_unicode_names},
		{"path_safety", test_path_safety},
		{"policy_reject", test_policy_reject},
		{"policy_warn", test_policy_warn},
		{"policy_malformed", test_policy_malformed},
		{"search_modes", test_search_modes},
		{"search_paging", test_search_paging},
		{"concurrent_appends", test_concurrent_appends},
		{"forget_unreadable_source", test_forget_unreadable_source},
		{"planted_symlinks", test_planted_symlinks},
		{"sync_failing_read", test_sync_failing_read},
		{"sync_same_tick_rewrite", test_sync_same_tick_rewrite},
		{"policy_reload_under_writes", test_policy_reload_under_writes},
		{"bounded_errors", test_bounded_errors},
		{"bounded_long_message", test_bounded_long_message},
		{"paging_lists", test_paging_lists},
		{"read_note_parts", test_read_note_parts},
	};
	return run_tests("tools_more", tests, ARRAY_SIZE(tests));
}
