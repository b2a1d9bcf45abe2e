/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Property queries: typed properties from .obsidian/types.json,
 * query_notes' predicates, the Dataview subset, Obsidian Bases, the
 * compact property form kept in the index, and hostile queries.
 */
#include "testutil.h"
#include "expr.h"
#include "json.h"
#include "props.h"
#include "util.h"
#include "note_int.h" /* white-box: the note's fields */

#include <stdio.h>
#include <string.h>

static void json_deletep(cJSON **p)
{
	cJSON_Delete(*p);
}
#define _cleanup_json_ _cleanup_(json_deletep)

/* Query with JSON arguments; the row names in order, joined by ','. */
static char *names_of(const cJSON *res)
{
	struct sbuf b = {0};
	const cJSON *r;
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(res, "rows"))
	{
		sb_printf(&b, "%s%s", b.len ? "," : "",
			  cJSON_GetObjectItem(r, "name")->valuestring);
	}
	return sb_steal(&b);
}

static char *q_names(struct tvault *t, const char *tool, const char *args)
{
	_cleanup_json_ cJSON *res = tv_call_json(t, tool, args);
	if (!res) {
		_cleanup_free_ char *e = tv_call_err(t, tool, args);
		fprintf(stderr, "  %s(%s) failed: %s\n", tool, args, e);
		return xstrdup("(error)");
	}
	char *n = names_of(res);
	return n ? n : xstrdup("");
}

static void vault_setup(struct tvault *t)
{
	tv_init(t);
	tv_write(t, ".obsidian/types.json",
		 "{\"types\": {\"due\": \"date\", \"priority\": \"number\", "
		 "\"done\": \"checkbox\", \"code\": \"text\", \"people\": "
		 "\"multitext\"}}");
	tv_write(t, "projects/Alpha.md",
		 "---\ntags: [project, work/active]\nstatus: active\n"
		 "due: 2024-1-5\npriority: 3\ndone: false\ncode: 42\n"
		 "people: Ann\nreviewer: \"[[Bob]]\"\n---\n# Alpha\n"
		 "See [[Beta]] and [[Bob]].\n");
	tv_write(t, "projects/Beta.md",
		 "---\ntags: [project]\nstatus: done\ndue: 2024-01-05\n"
		 "priority: \"10\"\ndone: true\npeople: [Ann, Carl]\n---\n"
		 "# Beta\n#work/active\n");
	tv_write(t, "projects/old/Gamma.md",
		 "---\ntags: project\nstatus: active\ndue: 2023-12-31T10:00\n"
		 "priority: 1\n---\nLinks to [[Alpha]].\n");
	tv_write(t, "Bob.md",
		 "---\naliases: [Robert]\nrole: person\n---\n"
		 "Bob's note.\n");
	tv_write(t, "inbox/Loose.md", "No properties, links to [[Alpha]].\n");
	tv_write(t, "Projects.base",
		 "filters:\n  and:\n    - file.hasTag(\"project\")\n"
		 "    - 'status != \"done\"'\nformulas:\n"
		 "  next: 'priority * 2'\n  label: 'file.basename + \" (\" + "
		 "status + \")\"'\nproperties:\n  status:\n    displayName: "
		 "Status\nviews:\n  - type: table\n    name: By priority\n"
		 "    order:\n      - file.name\n      - note.status\n"
		 "      - formula.next\n      - formula.label\n    sort:\n"
		 "      - property: note.priority\n        direction: DESC\n"
		 "  - type: table\n    name: Folder\n    filters:\n"
		 "      not:\n        - file.inFolder(\"projects/old\")\n"
		 "    limit: 1\n    order: [file.path]\n");
	tv_open(t);
}

static void test_props_roundtrip(void)
{
	cJSON *o = cJSON_Parse("{\"a\": 1.5, \"b\": \"x\", \"c\": [1, \"y\", "
			       "[true, null]], \"d\": {\"k\": 2}, \"e\": "
			       "false}");
	size_t len;
	_cleanup_free_ unsigned char *p = props_encode(o, &len);
	CU_ASSERT(props_valid(p, len));
	struct prop_val v;
	CU_ASSERT(props_get(p, len, "a", &v) && v.kind == PROP_NUM &&
		  v.num == 1.5);
	CU_ASSERT(props_get(p, len, "B", &v) && v.kind == PROP_STR &&
		  !strcmp(v.str, "x"));
	CU_ASSERT(props_get(p, len, "c", &v) && v.kind == PROP_LIST &&
		  v.count == 3);
	const unsigned char *it = v.items;
	struct prop_val x;
	int n = 0;
	while (props_list_next(&v, &it, &x))
		n++;
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT(props_get(p, len, "d", &v) && v.kind == PROP_OBJ &&
		  strstr(v.str, "\"k\""));
	CU_ASSERT(!props_get(p, len, "zz", &v));
	/* Cut bytes are read up to where they hold whole entries, never
	 * past their end; a cut inside an entry is refused. */
	for (size_t cut = 0; cut < len; cut++)
		if (props_valid(p, cut))
			CU_ASSERT(!props_get(p, cut, "e", &v));
	CU_ASSERT(!props_valid(p, len - 1));
	p[0] = 0xff;
	CU_ASSERT(!props_valid(p, len));
	cJSON_Delete(o);
}

static void test_dates_parse(void)
{
	int64_t a, b;
	bool ta, tb;
	CU_ASSERT(qv_parse_date("2024-1-5", 8, &a, &ta));
	CU_ASSERT(qv_parse_date("2024-01-05", 10, &b, &tb));
	CU_ASSERT_EQUAL(a, b);
	CU_ASSERT(!ta && !tb);
	CU_ASSERT(qv_parse_date("2024-01-05T10:30", 16, &a, &ta) && ta);
	CU_ASSERT_EQUAL(a - b, (10 * 60 + 30) * 60000LL);
	CU_ASSERT(!qv_parse_date("2024-02-30", 10, &a, &ta));
	CU_ASSERT(!qv_parse_date("2024-13-01", 10, &a, &ta));
	CU_ASSERT(!qv_parse_date("hello", 5, &a, &ta));
	struct qval d = {.t = QV_DATE, .ms = b};
	char out[40];
	qv_format_date(&d, out);
	CU_ASSERT_STRING_EQUAL(out, "2024-01-05");
}

static void test_plain_predicates(void)
{
	struct tvault t;
	vault_setup(&t);
	struct {
		const char *args, *want;
	} cases[] = {
		{"{\"where\": \"status = \\\"active\\\"\"}", "Alpha,Gamma"},
		/* Typed dates: 2024-1-5 equals 2024-01-05. */
		{"{\"where\": \"due = 2024-01-05\"}", "Alpha,Beta"},
		{"{\"where\": \"due < 2024-01-01\"}", "Gamma"},
		{"{\"where\": \"due >= date(2024-01-05)\"}", "Alpha,Beta"},
		/* Typed number: "10" is 10, so it sorts above 3. */
		{"{\"where\": \"priority > 2\", \"sort\": \"priority desc\"}",
		 "Beta,Alpha"},
		{"{\"where\": \"done = true\"}", "Beta"},
		{"{\"where\": \"done = false\"}", "Alpha"},
		/* Missing values compare false, never as zero. */
		{"{\"where\": \"priority < 100\"}", "Alpha,Beta,Gamma"},
		{"{\"where\": \"priority missing\"}", "Bob,Loose"},
		{"{\"where\": \"reviewer exists\"}", "Alpha"},
		{"{\"where\": \"people contains \\\"Carl\\\"\"}", "Beta"},
		/* multitext: a single value is a list of one. */
		{"{\"where\": \"length(people) = 1\"}", "Alpha"},
		{"{\"where\": \"tags contains \\\"work\\\"\"}", "Alpha"},
		{"{\"where\": \"contains(file.tags, \\\"#work\\\")\"}",
		 "Alpha,Beta"},
		{"{\"where\": \"not (status = \\\"active\\\") and "
		 "file.folder = \\\"projects\\\"\"}",
		 "Beta"},
		{"{\"where\": \"file.name = \\\"Bob\\\" or reviewer = "
		 "[[Bob]]\"}",
		 "Alpha,Bob"},
		{"{\"where\": \"contains(file.inlinks, [[Gamma]])\"}", "Alpha"},
		{"{\"where\": \"contains(file.links, [[Bob]])\"}", "Alpha"},
		{"{\"where\": \"code = \\\"42\\\"\"}", "Alpha"},
		{"{\"from\": \"#project and -\\\"projects/old\\\"\"}",
		 "Alpha,Beta"},
		{"{\"from\": \"[[Alpha]]\"}", "Gamma,Loose"},
		{"{\"from\": \"outgoing([[Alpha]])\"}", "Beta,Bob"},
		{"{\"where\": \"file.size > 0 and file.mtime > "
		 "date(2000-01-01)\", \"from\": \"\\\"inbox\\\"\"}",
		 "Loose"},
		{"{\"where\": \"lower(status) = \\\"active\\\" and "
		 "default(priority, 0) < 2\"}",
		 "Gamma"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ char *got =
			q_names(&t, "query_notes", cases[i].args);
		if (strcmp(got, cases[i].want))
			fprintf(stderr, "  case %zu %s: got %s want %s\n", i,
				cases[i].args, got, cases[i].want);
		ASSERT_STR_EQ(got, cases[i].want);
	}
	/* Fields come back typed; no body. */
	_cleanup_json_ cJSON *r = tv_call_json(
		&t, "query_notes",
		"{\"where\": \"file.name = \\\"Alpha\\\"\", \"fields\": \"due, "
		"priority as p, file.tags, reviewer, due + dur(1 week) as "
		"later\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	const cJSON *f = cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "rows"), 0),
		"fields");
	ASSERT_STR_EQ(cJSON_GetObjectItem(f, "due")->valuestring, "2024-01-05");
	CU_ASSERT_EQUAL(cJSON_GetObjectItem(f, "p")->valuedouble, 3);
	ASSERT_STR_EQ(cJSON_GetObjectItem(f, "reviewer")->valuestring,
		      "[[Bob]]");
	ASSERT_STR_EQ(cJSON_GetObjectItem(f, "later")->valuestring,
		      "2024-01-12");
	CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(f, "file.tags")),
			3);
	tv_close(&t);
}

static void test_dql(void)
{
	struct tvault t;
	vault_setup(&t);
	struct {
		const char *query, *want;
	} cases[] = {
		{"TABLE status, due FROM #project WHERE status = \"active\" "
		 "SORT due DESC",
		 "Alpha,Gamma"},
		{"TABLE WITHOUT ID file.name FROM #project SORT file.name DESC "
		 "LIMIT 2",
		 "Gamma,Beta"},
		{"LIST FROM \"projects\" AND -#work", "Gamma"},
		{"LIST FROM #project OR [[Alpha]] WHERE !contains(file.name, "
		 "\"Beta\")",
		 "Alpha,Gamma,Loose"},
		{"table priority from #project where priority >= 3 sort "
		 "priority asc",
		 "Alpha,Beta"},
		/* Dataview's order: null is lowest, so it passes "<". */
		{"LIST WHERE priority < 2", "Bob,Gamma,Loose"},
		{"LIST WHERE due AND due <= date(2024-01-05) + dur(1 day) SORT "
		 "file.name",
		 "Alpha,Beta,Gamma"},
		{"LIST WHERE file.day = null AND length(file.outlinks) > 1",
		 "Alpha"},
		{"LIST WHERE econtains(people, \"Ann\") WHERE done", "Beta"},
		{"LIST WHERE this.role = \"person\" AND file.name = "
		 "\"Bob\"",
		 "Bob"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "query", cases[i].query);
		if (strstr(cases[i].query, "this."))
			cJSON_AddStringToObject(a, "this", "Bob");
		_cleanup_free_ char *args = json_dumps(a);
		cJSON_Delete(a);
		_cleanup_free_ char *got = q_names(&t, "query_notes", args);
		if (strcmp(got, cases[i].want))
			fprintf(stderr, "  case %zu %s: got %s want %s\n", i,
				cases[i].query, got, cases[i].want);
		ASSERT_STR_EQ(got, cases[i].want);
	}
	_cleanup_json_ cJSON *r = tv_call_json(
		&t, "query_notes",
		"{\"query\": \"TABLE status AS \\\"State\\\", "
		"priority * 2 FROM #project SORT file.name LIMIT 1\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	ASSERT_STR_EQ(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "columns"), 0)
			      ->valuestring,
		      "State");
	ASSERT_STR_EQ(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "columns"), 1)
			      ->valuestring,
		      "priority * 2");
	CU_ASSERT_EQUAL(cJSON_GetObjectItem(r, "total")->valueint, 1);
	/* What cannot run is an error naming the part. */
	struct {
		const char *query, *part;
	} bad[] = {
		{"TABLE x FROM #a GROUP BY status", "GROUP BY"},
		{"TABLE x FLATTEN people", "FLATTEN"},
		{"CALENDAR file.day", "CALENDAR"},
		{"TABLE regexreplace(x, \"a\", \"b\")", "regexreplace"},
		{"TABLE x WHERE file.nosuch", "file.nosuch"},
		{"TABLE x FROM 42", "FROM"},
		{"SELECT *", "TABLE, LIST or TASK"},
		{"LIST WHERE this.x", "this"},
		{"TABLE x WHERE (a", "')'"},
		{"TABLE x WHERE \"abc", "unterminated"},
		{"TABLE x WHERE status.lower()", "method"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "query", bad[i].query);
		_cleanup_free_ char *args = json_dumps(a);
		cJSON_Delete(a);
		_cleanup_free_ char *e = tv_call_err(&t, "query_notes", args);
		if (!e || !strstr(e, bad[i].part))
			fprintf(stderr, "  bad %zu: %s\n", i, e ? e : "(ok)");
		ASSERT_CONTAINS(e, bad[i].part);
	}
	tv_close(&t);
}

static void test_paging(void)
{
	struct tvault t;
	tv_init(&t);
	char name[64], text[64];
	for (int i = 0; i < 25; i++) {
		snprintf(name, sizeof(name), "n%02d.md", i);
		snprintf(text, sizeof(text), "---\nrank: %d\n---\n", i);
		tv_write(&t, name, text);
	}
	tv_open(&t);
	struct sbuf all = {0};
	_cleanup_free_ char *cursor = NULL;
	for (int page = 0; page < 5; page++) {
		_cleanup_free_ char *args =
			cursor ? xasprintf(
					 "{\"where\": \"rank >= 5\", \"sort\": "
					 "\"rank desc\", \"limit\": 7, "
					 "\"cursor\": \"%s\"}",
					 cursor)
			       : xstrdup("{\"where\": \"rank >= 5\", \"sort\": "
					 "\"rank desc\", \"limit\": 7}");
		_cleanup_json_ cJSON *r = tv_call_json(&t, "query_notes", args);
		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		CU_ASSERT_EQUAL(cJSON_GetObjectItem(r, "total")->valueint, 20);
		_cleanup_free_ char *n = names_of(r);
		sb_printf(&all, "%s%s", all.len ? "," : "", n);
		free(cursor);
		cursor = NULL;
		const cJSON *nc = cJSON_GetObjectItem(r, "next_cursor");
		if (!nc)
			break;
		cursor = xstrdup(nc->valuestring);
	}
	ASSERT_STR_EQ(all.s, "n24,n23,n22,n21,n20,n19,n18,n17,n16,n15,n14,n13,"
			     "n12,n11,n10,n09,n08,n07,n06,n05");
	/* A cursor of another query is refused. */
	_cleanup_json_ cJSON *r = tv_call_json(
		&t, "query_notes", "{\"where\": \"rank >= 5\", \"limit\": 7}");
	_cleanup_free_ char *args =
		xasprintf("{\"where\": \"rank >= 6\", \"cursor\": \"%s\"}",
			  cJSON_GetObjectItem(r, "next_cursor")->valuestring);
	_cleanup_free_ char *e = tv_call_err(&t, "query_notes", args);
	ASSERT_CONTAINS(e, "cursor");
	sb_free(&all);
	tv_close(&t);
}

/* A sort that keeps only the page's rows (a heap of the best) gives the
 * rows a full sort gives, ties in name order, on every page. */
static void test_sort_page_matches_full_sort(void)
{
	struct tvault t;
	tv_init(&t);
	char name[64], text[64];
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "s%03d.md", (i * 7) % 300);
		snprintf(text, sizeof(text), "---\nrank: %d\n---\n", i % 37);
		tv_write(&t, name, text);
	}
	tv_open(&t);
	_cleanup_json_ cJSON *full =
		tv_call_json(&t, "query_notes",
			     "{\"sort\": \"rank desc\", \"limit\": 1000}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(full);
	const cJSON *rows = cJSON_GetObjectItem(full, "rows");
	CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(rows), 300);
	_cleanup_free_ char *cursor = NULL;
	for (int page = 0; page < 3; page++) {
		_cleanup_free_ char *args = xasprintf(
			"{\"sort\": \"rank desc\", \"limit\": 6%s%s%s}",
			cursor ? ", \"cursor\": \"" : "", cursor ? cursor : "",
			cursor ? "\"" : "");
		_cleanup_json_ cJSON *r = tv_call_json(&t, "query_notes", args);
		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		CU_ASSERT_EQUAL(cJSON_GetObjectItem(r, "total")->valueint, 300);
		const cJSON *got = cJSON_GetObjectItem(r, "rows");
		CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(got), 6);
		for (int i = 0; i < 6; i++) {
			const cJSON *a = cJSON_GetArrayItem(got, i);
			const cJSON *b = cJSON_GetArrayItem(rows, page * 6 + i);
			ASSERT_STR_EQ(
				cJSON_GetObjectItem(a, "name")->valuestring,
				cJSON_GetObjectItem(b, "name")->valuestring);
		}
		free(cursor);
		cursor = xstrdup(
			cJSON_GetObjectItem(r, "next_cursor")->valuestring);
	}
	/* DQL: a LIMIT after the SORT bounds what is kept, not the order. */
	_cleanup_free_ char *n =
		q_names(&t, "query_notes",
			"{\"query\": \"LIST SORT rank ASC LIMIT 4\"}");
	/* rank 0: i = 0, 37, 74, 111 … named s000, s259, s218, s177 … */
	ASSERT_STR_EQ(n, "s000,s013,s054,s095");
	tv_close(&t);
}

static void test_bases(void)
{
	struct tvault t;
	vault_setup(&t);
	_cleanup_json_ cJSON *r =
		tv_call_json(&t, "query_base", "{\"path\": \"Projects.base\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	_cleanup_free_ char *n = names_of(r);
	ASSERT_STR_EQ(n, "Alpha,Gamma");
	ASSERT_STR_EQ(cJSON_GetObjectItem(r, "view")->valuestring,
		      "By priority");
	const cJSON *f = cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "rows"), 0),
		"fields");
	ASSERT_STR_EQ(cJSON_GetObjectItem(f, "file.name")->valuestring,
		      "Alpha.md");
	CU_ASSERT_EQUAL(cJSON_GetObjectItem(f, "formula.next")->valuedouble, 6);
	ASSERT_STR_EQ(cJSON_GetObjectItem(f, "formula.label")->valuestring,
		      "Alpha (active)");
	ASSERT_STR_EQ(cJSON_GetObjectItem(f, "note.status")->valuestring,
		      "active");
	_cleanup_free_ char *v2 =
		q_names(&t, "query_base",
			"{\"path\": \"Projects\", \"view\": \"Folder\"}");
	ASSERT_STR_EQ(v2, "Alpha");
	/* Broken bases: clear errors. */
	struct {
		const char *file, *text, *want;
	} bad[] = {
		{"b1.base", "filters: [unclosed\n", "not valid YAML"},
		{"b2.base", "filters:\n  xor: [a]\n", "unknown filter key"},
		{"b3.base", "filters: 'file.hasTag('\n", "filters"},
		{"b4.base", "formulas:\n  x: 'nosuch(1)'\n", "nosuch"},
		{"b5.base", "views:\n  - order: [formula.missing]\n",
		 "no formula"},
		{"b6.base", "filters: 'this.x'\n", "this"},
		{"b7.base", "views: 3\n", "views"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		tv_write(&t, bad[i].file, bad[i].text);
		_cleanup_free_ char *args =
			xasprintf("{\"path\": \"%s\"}", bad[i].file);
		_cleanup_free_ char *e = tv_call_err(&t, "query_base", args);
		if (!e || !strstr(e, bad[i].want))
			fprintf(stderr, "  bad base %zu: %s\n", i,
				e ? e : "(ok)");
		ASSERT_CONTAINS(e, bad[i].want);
	}
	_cleanup_free_ char *e1 =
		tv_call_err(&t, "query_base", "{\"path\": \"../x.base\"}");
	ASSERT_CONTAINS(e1, "Invalid path");
	_cleanup_free_ char *e2 =
		tv_call_err(&t, "query_base", "{\"path\": \"nosuch.base\"}");
	ASSERT_CONTAINS(e2, "not found");
	_cleanup_free_ char *e3 = tv_call_err(
		&t, "query_base", "{\"path\": \"Projects\", \"view\": \"x\"}");
	ASSERT_CONTAINS(e3, "By priority, Folder");
	tv_close(&t);
}

static void test_hostile(void)
{
	struct tvault t;
	vault_setup(&t);
	/* Deep nesting: bounded, an error, no stack overflow. */
	struct sbuf b = {0};
	sb_puts(&b, "{\"where\": \"");
	for (int i = 0; i < 5000; i++)
		sb_putc(&b, '(');
	sb_puts(&b, "x");
	for (int i = 0; i < 5000; i++)
		sb_putc(&b, ')');
	sb_puts(&b, "\"}");
	_cleanup_free_ char *e = tv_call_err(&t, "query_notes", b.s);
	ASSERT_CONTAINS(e, "nested too deeply");
	sb_free(&b);
	sb_puts(&b, "{\"where\": \"");
	for (int i = 0; i < 5000; i++)
		sb_puts(&b, "not ");
	sb_puts(&b, "x\"}");
	_cleanup_free_ char *e2 = tv_call_err(&t, "query_notes", b.s);
	ASSERT_CONTAINS(e2, "nested too deeply");
	sb_free(&b);
	/* A huge query: refused by size. */
	sb_puts(&b, "{\"where\": \"");
	for (int i = 0; i < 40000; i++)
		sb_puts(&b, "a or ");
	sb_puts(&b, "b\"}");
	_cleanup_free_ char *e3 = tv_call_err(&t, "query_notes", b.s);
	ASSERT_CONTAINS(e3, "too long");
	sb_free(&b);
	/* Long flat chains are fine under the limits. */
	sb_puts(&b, "{\"where\": \"");
	for (int i = 0; i < 2000; i++)
		sb_puts(&b, "x = 1 or ");
	sb_puts(&b, "status = \\\"done\\\"\"}");
	_cleanup_free_ char *ok = q_names(&t, "query_notes", b.s);
	ASSERT_STR_EQ(ok, "Beta");
	sb_free(&b);
	/* Deeply nested base filters. */
	sb_puts(&b, "filters:\n");
	for (int i = 0; i < 200; i++) {
		for (int k = 0; k < i + 1; k++)
			sb_puts(&b, "  ");
		sb_puts(&b, "not:\n");
		for (int k = 0; k < i + 1; k++)
			sb_puts(&b, "  ");
		sb_puts(&b, "-\n");
	}
	tv_write(&t, "deep.base", b.s);
	sb_free(&b);
	_cleanup_free_ char *e4 =
		tv_call_err(&t, "query_base", "{\"path\": \"deep.base\"}");
	CU_ASSERT_PTR_NOT_NULL(e4);
	/* Invalid UTF-8 and control bytes in a query. */
	_cleanup_free_ char *e5 = tv_call_err(
		&t, "query_notes", "{\"where\": \"status = \\u0001\"}");
	CU_ASSERT_PTR_NOT_NULL(e5);
	/* A broken types.json is named. */
	tv_write(&t, ".obsidian/types.json", "{not json");
	_cleanup_free_ char *e6 =
		tv_call_err(&t, "query_notes", "{\"where\": \"x\"}");
	ASSERT_CONTAINS(e6, "types.json");
	tv_close(&t);
}

/* Property values survive the stored-index round trip (warm start). */
static void test_note_blob_props(void)
{
	const char *text = "---\nstatus: active\nn: [1, 2]\n---\nbody\n";
	struct note *n = note_new("a/N.md", text, strlen(text), 0);
	size_t len;
	_cleanup_free_ void *blob = note_to_blob(n, &len);
	struct note *c = note_from_blob("a/N.md", blob, len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(c->props_len, n->props_len);
	CU_ASSERT(!memcmp(c->props, n->props, n->props_len));
	struct prop_val v;
	CU_ASSERT(props_get(c->props, c->props_len, "status", &v) &&
		  !strcmp(v.str, "active"));
	/* A blob cut anywhere is refused, not read past its end. */
	for (size_t cut = 0; cut < len; cut++) {
		struct note *x = note_from_blob("a/N.md", blob, cut);
		CU_ASSERT_PTR_NULL(x);
		note_free(x);
	}
	note_free(c);
	note_free(n);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"props_roundtrip", test_props_roundtrip},
		{"dates_parse", test_dates_parse},
		{"plain_predicates", test_plain_predicates},
		{"dql", test_dql},
		{"paging", test_paging},
		{"sort_page_matches_full_sort",
		 test_sort_page_matches_full_sort},
		{"bases", test_bases},
		{"hostile", test_hostile},
		{"note_blob_props", test_note_blob_props},
	};
	return run_tests("query", tests, ARRAY_SIZE(tests));
}
