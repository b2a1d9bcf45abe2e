/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The query language (every construct, precedence, quoting, errors) and
 * search through the on-disk index: ranking, paging, Unicode, snippets,
 * keeping in step with writes, reuse at restart, rebuilding when damaged.
 */
#include "docz.h"
#include "json.h"
#include "query.h"
#include "stem.h"
#include "store.h"
#include "store_int.h"
#include "testutil.h"
#include "tokenizer.h"
#include "u8.h"
#include "util.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>
#include <utime.h>

/* ---- the parser ------------------------------------------------------------
 */

static void parses(const char *q, const char *want)
{
	struct qnode *n = NULL;
	char *msg = NULL;
	int r = query_parse(q, &n, &msg);
	if (r < 0) {
		fprintf(stderr, "  parse(%s) failed: %s\n", q, msg);
		CU_FAIL("parse failed");
		free(msg);
		return;
	}
	char *d = query_dump(n);
	if (strcmp(d, want) != 0)
		fprintf(stderr, "  parse(%s):\n    got:  %s\n    want: %s\n", q,
			d, want);
	ASSERT_STR_EQ(d, want);
	free(d);
	query_free(n);
}

static void fails(const char *q, const char *want)
{
	struct qnode *n = NULL;
	char *msg = NULL;
	int r = query_parse(q, &n, &msg);
	CU_ASSERT_EQUAL(r, -EINVAL);
	CU_ASSERT_PTR_NULL(n);
	if (r == 0)
		query_free(n);
	ASSERT_STR_EQ(msg, want);
	free(msg);
}

static void test_parse_atoms(void)
{
	parses("mcp", "(word mcp)");
	parses("\"model context protocol\"", "(phrase model context protocol)");
	parses("proj*", "(word proj*)");
	parses("title:meeting", "(word title meeting)");
	parses("TITLE:meeting", "(word title meeting)");
	parses("title:\"weekly sync\"", "(phrase title weekly sync)");
	parses("title:meet*", "(word title meet*)");
	parses("tag:research", "(tag research)");
	parses("tag:#research/ai", "(tag research/ai)");
	parses("folder:projects/wiki-ai", "(folder projects/wiki-ai)");
	parses("folder:projects/wiki-ai/", "(folder projects/wiki-ai)");
	parses("folder:\"My Projects\"", "(folder My Projects)");
	/* Unknown fields and lone punctuation are just text. */
	parses("http://x", "(word http://x)");
	parses("a - b", "(and (and (word a) (word -)) (word b))");
	parses("Проект", "(word Проект)");
	parses("知识管理", "(word 知识管理)");
}

static void test_parse_operators(void)
{
	parses("a b", "(and (word a) (word b))");
	parses("a AND b", "(and (word a) (word b))");
	parses("a OR b", "(or (word a) (word b))");
	/* Lower-case words are words, not operators. */
	parses("a or b", "(and (and (word a) (word or)) (word b))");
	parses("-term", "(not (word term))");
	parses("NOT term", "(not (word term))");
	parses("mcp -tag:archived", "(and (word mcp) (not (tag archived)))");
	parses("-\"a b\"", "(not (phrase a b))");
	parses("-(a OR b)", "(not (or (word a) (word b)))");
	parses("(tag:urgent OR tag:priority) folder:projects",
	       "(and (or (tag urgent) (tag priority)) (folder projects))");
	parses("\"model context protocol\" tag:mcp -tag:archived",
	       "(and (and (phrase model context protocol) (tag mcp)) "
	       "(not (tag archived)))");
	parses("((a))", "(word a)");
}

static void test_parse_precedence(void)
{
	/* NOT binds tightest, then AND, then OR; left to right. */
	parses("a OR b c", "(or (word a) (and (word b) (word c)))");
	parses("a b OR c", "(or (and (word a) (word b)) (word c))");
	parses("a OR b OR c", "(or (or (word a) (word b)) (word c))");
	parses("-a b", "(and (not (word a)) (word b))");
	parses("-a OR b", "(or (not (word a)) (word b))");
	parses("a AND (b OR c)", "(and (word a) (or (word b) (word c)))");
	parses("NOT NOT a", "(not (not (word a)))");
}

static void test_parse_errors(void)
{
	fails("", "Invalid query at character 1: the query is empty");
	fails("   ", "Invalid query at character 1: the query is empty");
	fails("(a", "Invalid query at character 1: '(' is not closed");
	fails("a)", "Invalid query at character 2: ')' without '('");
	fails("a \"b c", "Invalid query at character 3: a quote is not closed");
	fails("a OR", "Invalid query at character 3: OR needs a term after it");
	fails("OR a",
	      "Invalid query at character 1: OR needs a term before it");
	fails("a AND",
	      "Invalid query at character 3: AND needs a term after it");
	fails("AND a",
	      "Invalid query at character 1: AND needs a term before it");
	fails("a AND OR b",
	      "Invalid query at character 3: AND needs a term after it");
	fails("tag:", "Invalid query at character 1: 'tag:' needs a value");
	fails("x folder:",
	      "Invalid query at character 3: 'folder:' needs a value");
	fails("()", "Invalid query at character 1: empty parentheses");
	fails("a NOT",
	      "Invalid query at character 3: nothing after '-' or NOT");
	/* Positions count characters, not bytes. */
	fails("проект )", "Invalid query at character 8: ')' without '('");
	fails("(знание", "Invalid query at character 1: '(' is not closed");
}

/* ---- a vault with the search index -----------------------------------------
 */

/* Open t's vault with a search index in a private folder inside it (a
 * dot folder: never a note). */
static void open_indexed(struct tvault *t)
{
	tv_open_with_store(t);
	vault_fulltext_work(t->v);
}

static void reopen_indexed(struct tvault *t)
{
	t->v = vault_free(t->v);
	open_indexed(t);
}

/* search_notes(mode=fulltext) with extra JSON members. */
static cJSON *ft(struct tvault *t, const char *query, const char *extra)
{
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "query", query);
	cJSON_AddStringToObject(a, "mode", "fulltext");
	if (extra) {
		cJSON *e = cJSON_Parse(extra);
		cJSON *it;
		cJSON_ArrayForEach(it, e) cJSON_AddItemToObject(
			a, it->string, cJSON_Duplicate(it, 1));
		cJSON_Delete(e);
	}
	char *args = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	cJSON *r = tv_call_json(t, "search_notes", args);
	free(args);
	return r;
}

static char *ft_err(struct tvault *t, const char *args)
{
	return tv_call_err(t, "search_notes", args);
}

/* The result names, comma-separated, in order. */
static char *names(const cJSON *r)
{
	struct sbuf b = {0};
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "results"))
	{
		if (b.len)
			sb_putc(&b, ',');
		/* Full-text results name a note by its path only. */
		const char *name =
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
		if (!name) {
			const char *p = cJSON_GetStringValue(
				cJSON_GetObjectItem(it, "path"));
			const char *slash = strrchr(p, '/');
			const char *base = slash ? slash + 1 : p;
			size_t l = strlen(base);
			sb_add(&b, base, l > 3 ? l - 3 : l);
			continue;
		}
		sb_puts(&b, name);
	}
	return b.s ? sb_steal(&b) : xstrdup("");
}

static void expect_names(struct tvault *t, const char *query, const char *want)
{
	cJSON *r = ft(t, query, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	char *got = names(r);
	if (strcmp(got, want))
		fprintf(stderr, "  query %s:\n    got:  %s\n    want: %s\n",
			query, got, want);
	ASSERT_STR_EQ(got, want);
	free(got);
	cJSON_Delete(r);
}

/* ---- ranking and the syntax against notes ---------------------------------
 */

static void sample_vault(struct tvault *t)
{
	tv_init(t);
	tv_write(
		t, "projects/wiki-ai/MCP Ideas.md",
		"---\ntags: [mcp, integration]\n---\n# MCP Ideas\n"
		"Discussing the model context protocol options for the wiki.\n");
	tv_write(t, "research/Protocols.md",
		 "---\ntags: [research/protocols]\n---\n"
		 "The Model Context Protocol (MCP) provides a standard.\n"
		 "Also: context, model, protocol in another order.\n");
	tv_write(t, "meetings/Meeting 2024-01-15.md",
		 "#meeting\nDecided to use MCP as the primary interface.\n");
	tv_write(t, "archive/Old MCP.md",
		 "---\ntags: [mcp, archived]\n---\nmodel context protocol, "
		 "the first attempt.\n");
	tv_write(t, "projectsX/Elsewhere.md", "mcp mentioned here too\n");
	tv_write(t, "Notes on meetings.md", "How to run a meeting well.\n");
	open_indexed(t);
}

static void test_syntax_against_notes(void)
{
	struct tvault t;
	sample_vault(&t);
	/* Title hits first (the name weighs ten times the text). */
	cJSON *r = ft(&t, "mcp", NULL);
	CU_ASSERT_EQUAL(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total")),
			5);
	char *n = names(r);
	CU_ASSERT(str_has_prefix(n, "MCP Ideas,Old MCP,") ||
		  str_has_prefix(n, "Old MCP,MCP Ideas,"));
	free(n);
	cJSON_Delete(r);
	/* An exact phrase, not the words in any order. */
	expect_names(&t, "\"model context protocol\"",
		     "Old MCP,MCP Ideas,Protocols");
	expect_names(&t, "\"protocol model\"", "");
	/* tag: hierarchical; -tag: excludes. */
	expect_names(&t, "\"model context protocol\" tag:mcp -tag:archived",
		     "MCP Ideas");
	expect_names(&t, "tag:research", "Protocols");
	expect_names(&t, "tag:res", "");
	/* folder: is a prefix of folders, not of names. */
	expect_names(&t, "mcp folder:projects", "MCP Ideas");
	expect_names(&t, "folder:projects/wiki-ai/", "MCP Ideas");
	/* title: the name only; a word finds its other forms (stems). */
	expect_names(&t, "title:meeting",
		     "Notes on meetings,Meeting 2024-01-15");
	/* Both in the title; the shorter title ranks first (BM25). */
	expect_names(&t, "title:meet*", "Notes on meetings,Meeting 2024-01-15");
	/* Prefix, OR, grouping, NOT. */
	expect_names(&t, "interfac*", "Meeting 2024-01-15");
	expect_names(&t, "(tag:meeting OR tag:integration) mcp",
		     "MCP Ideas,Meeting 2024-01-15");
	expect_names(&t, "mcp -(tag:mcp OR tag:research)",
		     "Elsewhere,Meeting 2024-01-15");
	expect_names(&t, "tag:mcp OR title:meeting",
		     "Notes on meetings,Meeting 2024-01-15,MCP Ideas,Old MCP");
	/* Only negations: every note without the word. */
	expect_names(&t, "-mcp", "Notes on meetings");
	/* Results carry tags, a score and a snippet. */
	r = ft(&t, "standard", NULL);
	const cJSON *first =
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "results"), 0);
	ASSERT_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(first, "path")),
		      "research/Protocols.md");
	CU_ASSERT(json_equal_text(cJSON_GetObjectItem(first, "tags"),
				  "[\"research/protocols\"]"));
	CU_ASSERT(cJSON_GetNumberValue(cJSON_GetObjectItem(first, "score")) >
		  0);
	ASSERT_CONTAINS(
		cJSON_GetStringValue(cJSON_GetObjectItem(first, "snippet")),
		"**standard**");
	cJSON_Delete(r);
	tv_close(&t);
}

static void test_ranking(void)
{
	struct tvault t;
	tv_init(&t);
	/* A title hit outranks body hits. */
	tv_write(&t, "Gardening.md", "Soil, water and light.\n");
	tv_write(&t, "Chores.md",
		 "Weekend: gardening, gardening and more gardening.\n");
	/* Rarer words weigh more: every note has "common"; one of them
	 * also has the rare "zebra", another "common" twice. */
	for (int i = 0; i < 20; i++) {
		char p[64], body[128];
		snprintf(p, sizeof(p), "filler/Filler %02d.md", i);
		snprintf(body, sizeof(body), "common words in filler %d\n", i);
		tv_write(&t, p, body);
	}
	tv_write(&t, "Twice.md", "common and common again, plain\n");
	tv_write(&t, "Rare.md", "common and zebra, plain text\n");
	open_indexed(&t);
	cJSON *r = ft(&t, "gardening", NULL);
	char *n = names(r);
	ASSERT_STR_EQ(n, "Gardening,Chores");
	free(n);
	const cJSON *res = cJSON_GetObjectItem(r, "results");
	double s0 = cJSON_GetNumberValue(
		cJSON_GetObjectItem(cJSON_GetArrayItem(res, 0), "score"));
	double s1 = cJSON_GetNumberValue(
		cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "score"));
	CU_ASSERT(s0 > s1);
	cJSON_Delete(r);
	r = ft(&t, "common OR zebra", "{\"limit\": 3}");
	n = names(r);
	CU_ASSERT(str_has_prefix(n, "Rare,"));
	free(n);
	CU_ASSERT_EQUAL(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total")),
			22);
	cJSON_Delete(r);
	tv_close(&t);
}

/* The snippet of the first result. */
/* Plain queries: any of their words, more of them first, without stop
 * words; other forms of a word (stems) in the notes' languages; a CJK
 * sentence by its character pairs; operators keep their meaning. */
static void test_plain_queries(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(
		&t, "Taxes.md",
		"The Roman state collected taxes through the publicani, "
		"private contractors who bid for the right to collect them.\n");
	tv_write(&t, "Roads.md",
		 "Roman roads were built in layers of stone and gravel.\n");
	tv_write(&t, "Churches.md",
		 "A church of the gothic kind has flying buttresses.\n");
	tv_write(&t, "Налоги.md",
		 "Сбор налогов в империи был делом откупщиков, и это "
		 "было выгодно.\n");
	tv_write(&t, "Steuern.md",
		 "Die Steuererklärung und die Belege für das Finanzamt "
		 "sind in dem Ordner, wie immer.\n");
	tv_write(&t, "Rivers.md", "The river Rhine and the riverbank.\n");
	tv_write(&t, "Riverside.md", "A riverside walk, riverside café.\n");
	tv_write(&t, "中国.md", "罗马帝国通过包税人征收税款。\n");
	tv_write(&t, "Other.md", "Nothing about any of this at all.\n");
	open_indexed(&t);
	/* Every word need not match: the note with more of them first. */
	expect_names(&t, "how did the Roman empire collect taxes",
		     "Taxes,Roads");
	/* Explicit AND: every word. */
	expect_names(&t, "roman AND taxes", "Taxes");
	expect_names(&t, "roman AND empire", "");
	/* Phrases and exclusions keep their meaning. */
	expect_names(&t, "\"roman roads\" taxes", "Taxes,Roads");
	expect_names(&t, "roman -taxes", "Roads");
	/* Stop words neither match nor are marked. */
	expect_names(&t, "the of", "Churches,Rivers,Taxes,Other,Roads");
	char *snip = tv_first_snippet(&t, "the publicani");
	ASSERT_CONTAINS(snip, "**publicani**");
	CU_ASSERT_PTR_NULL(strstr(snip, "**The**"));
	CU_ASSERT_PTR_NULL(strstr(snip, "**the**"));
	free(snip);
	/* Stems: English, Russian, German. */
	expect_names(&t, "churches", "Churches");
	expect_names(&t, "налоги", "Налоги");
	expect_names(&t, "Steuererklärungen", "Steuern");
	/* A prefix: the word itself ranks above the words it begins. */
	expect_names(&t, "river*", "Rivers,Riverside");
	/* A CJK sentence: by its character pairs. */
	expect_names(&t, "罗马帝国如何征税", "中国");
	/* A word no note has: the words one edit away. */
	expect_names(&t, "gravle", "Roads");
	expect_names(&t, "publicanni", "Taxes");
	expect_names(&t, "roman gravle", "Roads,Taxes");
	expect_names(&t, "zzyzzyqq", "");
	/* Not under a NOT: "-gravle" excludes nothing. */
	expect_names(&t, "-gravle",
		     "Churches,Other,Rivers,Riverside,Roads,"
		     "Steuern,Taxes,Налоги,中国");
	/* A query of stop words only still searches them. */
	expect_names(&t, "nothing", "Other");
	tv_close(&t);
}

/* A word no note has, among many words close to it in the index: the
 * three most frequent words one edit away, whichever look-ups find them
 * (the words between the candidates are skipped, not every candidate
 * looked up). */
static void test_typo_neighbours(void)
{
	struct tvault t;
	tv_init(&t);
	/* One edit from "gravle": grave (4 notes), graple (3), gravel (2),
	 * gravlet (1: the fourth, left out); the others are two or more. */
	static const char *const words[][2] = {
		{"grave", "4"},	  {"graple", "3"},  {"gravel", "2"},
		{"gravlet", "1"}, {"gravity", "5"}, {"gravy", "5"},
		{"gravlax", "5"}, {"grapple", "5"}, {"gr", "5"},
		{"grbvle", "0"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
		int n = atoi(words[i][1]);
		for (int k = 0; k < (n ? n : 1); k++) {
			char p[64], body[64];
			snprintf(p, sizeof(p), "g/%s %d.md", words[i][0], k);
			snprintf(body, sizeof(body), "%s\n",
				 n ? words[i][0] : "unrelated");
			tv_write(&t, p, body);
		}
	}
	open_indexed(&t);
	CU_ASSERT_EQUAL(tv_search_total(&t, "gravle", "fulltext"), 9);
	CU_ASSERT_EQUAL(tv_search_total(&t, "gravlet", "fulltext"), 1);
	/* Past the last word of the index, and before the first. */
	CU_ASSERT_EQUAL(tv_search_total(&t, "zzyzzyqq", "fulltext"), 0);
	CU_ASSERT_EQUAL(tv_search_total(&t, "aaaab", "fulltext"), 0);
	tv_close(&t);
}

/* Every page of a full-text query, limit results a page, each to page
 * (its answer), up to max_pages pages. The pages. */
typedef void page_fn(const cJSON *r, void *ud);
static size_t each_page(struct tvault *t, const char *query, int limit,
			size_t max_pages, page_fn *page, void *ud)
{
	size_t pages = 0;
	char *cursor = NULL;
	do {
		char *extra = cursor ? xasprintf("{\"limit\": %d, \"cursor\": "
						 "\"%s\"}",
						 limit, cursor)
				     : xasprintf("{\"limit\": %d}", limit);
		cJSON *r = ft(t, query, extra);
		free(extra);
		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		page(r, ud);
		free(cursor);
		const char *next = cJSON_GetStringValue(
			cJSON_GetObjectItem(r, "next_cursor"));
		cursor = next ? xstrdup(next) : NULL;
		pages++;
		cJSON_Delete(r);
	} while (cursor && pages < max_pages);
	free(cursor);
	return pages;
}

/* Every page of a full-text query, limit results a page: each note comes
 * once and every page gives the total; check (may be NULL) sees each
 * result in order. The number of results; *ret_pages the pages. */
typedef void page_check_fn(const char *path, double score, size_t i, void *ud);
struct page_all {
	int total;
	page_check_fn *check;
	void *ud;
	struct hmap *seen;
	size_t count;
};

static void page_all_page(const cJSON *r, void *ud)
{
	struct page_all *a = ud;
	CU_ASSERT_EQUAL(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total")),
			a->total);
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "results"))
	{
		const char *p =
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
		if (a->check)
			a->check(p,
				 cJSON_GetNumberValue(
					 cJSON_GetObjectItem(it, "score")),
				 a->count, a->ud);
		CU_ASSERT_PTR_NULL(hmap_get(a->seen, p)); /* once */
		hmap_put(a->seen, p, (void *)1);
		a->count++;
	}
}

static size_t page_all(struct tvault *t, const char *query, int limit,
		       int total, page_check_fn *check, void *ud,
		       size_t *ret_pages)
{
	struct page_all a = {total, check, ud, hmap_new(), 0};
	*ret_pages = each_page(t, query, limit, 100, page_all_page, &a);
	CU_ASSERT_EQUAL(hmap_size(a.seen), a.count);
	hmap_free(a.seen);
	return a.count;
}

static void test_paging(void)
{
	struct tvault t;
	tv_init(&t);
	for (int i = 0; i < 37; i++) {
		char p[64], body[160];
		snprintf(p, sizeof(p), "p/Page %02d.md", i);
		/* Different lengths and counts: different scores, some
		 * equal. */
		snprintf(body, sizeof(body), "pagetest %s %s\n",
			 i % 3 ? "pagetest" : "", i % 5 ? "words words" : "");
		tv_write(&t, p, body);
	}
	open_indexed(&t);
	size_t pages;
	CU_ASSERT_EQUAL(page_all(&t, "pagetest", 10, 37, NULL, NULL, &pages),
			37);
	CU_ASSERT_EQUAL(pages, 4);

	/* A cursor for another query, a forged one, a stale one. */
	cJSON *r = ft(&t, "pagetest", "{\"limit\": 10}");
	char *c1 = xstrdup(
		cJSON_GetStringValue(cJSON_GetObjectItem(r, "next_cursor")));
	cJSON_Delete(r);
	char *args = xasprintf("{\"query\": \"words\", \"mode\": \"fulltext\","
			       " \"cursor\": \"%s\"}",
			       c1);
	char *e = ft_err(&t, args);
	ASSERT_CONTAINS(e, "different query");
	free(e);
	free(args);
	e = ft_err(&t, "{\"query\": \"pagetest\", \"mode\": \"fulltext\", "
		       "\"cursor\": \"eyJvZmZzZXQiOjEwfQ\"}");
	ASSERT_CONTAINS(e, "Invalid cursor");
	free(e);
	e = ft_err(&t, "{\"query\": \"pagetest\", \"mode\": \"fulltext\", "
		       "\"cursor\": \"%%%\\u00ff garbage\"}");
	ASSERT_CONTAINS(e, "Invalid cursor");
	free(e);
	cJSON_Delete(tv_call_json(&t, "append_note",
				  "{\"name\": \"Page 01\", \"text\": "
				  "\"more\"}"));
	args = xasprintf("{\"query\": \"pagetest\", \"mode\": \"fulltext\","
			 " \"cursor\": \"%s\"}",
			 c1);
	e = ft_err(&t, args);
	ASSERT_CONTAINS(e, "Stale cursor");
	free(e);
	free(args);
	free(c1);
	tv_close(&t);
}

/* A note with many tags lists ten of them in a result, and how many
 * more (full text and tag mode); ten or fewer are listed whole. */
static void check_tags(const cJSON *res)
{
	int seen = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, res)
	{
		const char *p =
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
		const cJSON *tags = cJSON_GetObjectItem(it, "tags");
		const cJSON *more = cJSON_GetObjectItem(it, "more_tags");
		bool many = p && !strcmp(p, "Many.md");
		CU_ASSERT_EQUAL(cJSON_GetArraySize(tags), many ? 10 : 2);
		CU_ASSERT(many ? more && more->valueint == 5 : !more);
		seen++;
	}
	CU_ASSERT_EQUAL(seen, 2);
}

static void test_many_tags(void)
{
	struct tvault t;
	tv_init(&t);
	struct sbuf b = {0};
	sb_puts(&b, "---\ntags:\n");
	for (int i = 0; i < 15; i++)
		sb_printf(&b, "  - t%02d\n", i);
	sb_puts(&b, "---\nkestrel\n");
	tv_write(&t, "Many.md", b.s);
	free(b.s);
	tv_write(&t, "Few.md", "---\ntags: [t03, solo]\n---\nkestrel\n");
	open_indexed(&t);

	cJSON *r = ft(&t, "kestrel", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	check_tags(cJSON_GetObjectItem(r, "results"));
	cJSON_Delete(r);
	cJSON *tm = tv_call_json(&t, "search_notes",
				 "{\"query\":\"t03\",\"mode\":\"tag\"}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(tm);
	check_tags(cJSON_GetObjectItem(tm, "results"));
	cJSON_Delete(tm);
	tv_close(&t);
}

static void test_unicode(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "ru/Планы.md", "Наш проект растёт.\nВторая строка.\n");
	tv_write(&t, "fr/Café.md", "Un café et un résumé, s'il vous plaît.\n");
	tv_write(&t, "zh/知识.md", "我们正在研究知识管理系统的设计。\n");
	tv_write(&t, "ja/旅行.md", "昨日は東京タワーに行きました。\n");
	tv_write(&t, "ko/서울.md", "오늘은 서울도서관에 갔습니다.\n");
	tv_write(&t, "en/Plain.md", "Nothing special, ascii only.\n");
	open_indexed(&t);
	/* Cyrillic case folding, both ways. */
	expect_names(&t, "Проект", "Планы");
	expect_names(&t, "ПРОЕКТ", "Планы");
	expect_names(&t, "title:планы", "Планы");
	/* Diacritics fold for alphabetic scripts. */
	expect_names(&t, "cafe", "Café");
	expect_names(&t, "resume", "Café");
	expect_names(&t, "RÉSUMÉ", "Café");
	expect_names(&t, "title:cafe", "Café");
	/* CJK substrings, long and short, in text and titles. */
	expect_names(&t, "知识管理", "知识");
	expect_names(&t, "管理", "知识");
	expect_names(&t, "知识", "知识");
	expect_names(&t, "タワー", "旅行");
	expect_names(&t, "\"東京タワー\"", "旅行");
	expect_names(&t, "title:旅行", "旅行");
	/* Ranked like words: the title hit first. */
	expect_names(&t, "知识 OR タワー", "知识,旅行");
	/* A single character, and one amid other text: substrings. */
	expect_names(&t, "研", "知识");
	expect_names(&t, "title:知", "知识");
	expect_names(&t, "東 OR 识", "旅行,知识");
	/* Korean too. */
	expect_names(&t, "도서관", "서울");
	expect_names(&t, "研究 -管理", "");
	cJSON *r = ft(&t, "管理系", NULL);
	const cJSON *first =
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "results"), 0);
	ASSERT_CONTAINS(
		cJSON_GetStringValue(cJSON_GetObjectItem(first, "snippet")),
		"**管理系**");
	cJSON_Delete(r);
	/* Content mode: substrings, case-insensitive in any script. */
	r = tv_call_json(&t, "search_notes",
			 "{\"query\": \"НАШ ПРОЕКТ\", \"mode\": \"content\"}");
	CU_ASSERT(json_equal_text(
		cJSON_GetObjectItem(r, "results"),
		"[{\"name\": \"Планы\", \"path\": \"ru/Планы.md\", \"line\": 1,"
		" \"text\": \"Наш проект растёт.\"}]"));
	cJSON_Delete(r);
	r = tv_call_json(&t, "search_notes",
			 "{\"query\": \"理系\", \"mode\": \"content\"}");
	CU_ASSERT_EQUAL(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total")),
			1);
	cJSON_Delete(r);
	r = tv_call_json(&t, "search_notes",
			 "{\"query\": \"ECIA\", \"mode\": \"content\"}");
	CU_ASSERT(json_equal_text(
		cJSON_GetObjectItem(r, "results"),
		"[{\"name\": \"Plain\", \"path\": \"en/Plain.md\", \"line\": 1,"
		" \"text\": \"Nothing special, ascii only.\"}]"));
	cJSON_Delete(r);
	tv_close(&t);
}

/* Snippets of a note with bytes that are not UTF-8: valid UTF-8 (JSON),
 * U+FFFD in their place, and a warning saying so. */
static void test_not_utf8_snippets(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Bad.md",
		 "Some words \xff\xfe around the keyword here.\n");
	open_indexed(&t);
	struct tool_result r;
	tv_call(&t, "search_notes",
		"{\"query\":\"keyword\",\"mode\":\"fulltext\"}", &r);
	CU_ASSERT_FALSE(r.is_error);
	CU_ASSERT_EQUAL(u8_invalid_at(r.text, strlen(r.text)), strlen(r.text));
	ASSERT_CONTAINS(r.text, "\"Bad.md\"");
	ASSERT_CONTAINS(r.text, "\xef\xbf\xbd");
	ASSERT_CONTAINS(r.text, "not valid UTF-8");
	_cleanup_free_ char *d = r.structured ? json_dumps(r.structured) : NULL;
	CU_ASSERT(d && u8_invalid_at(d, strlen(d)) == strlen(d));
	tool_result_clear(&r);
	tv_close(&t);
}

static void test_case_sensitive(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Upper.md", "We use MCP daily.\n");
	tv_write(&t, "Lower.md", "the mcp server\n");
	open_indexed(&t);
	cJSON *r = ft(&t, "MCP", "{\"case_sensitive\": true}");
	char *n = names(r);
	ASSERT_STR_EQ(n, "Upper");
	free(n);
	cJSON_Delete(r);
	r = ft(&t, "mcp", "{\"case_sensitive\": true}");
	n = names(r);
	ASSERT_STR_EQ(n, "Lower");
	free(n);
	cJSON_Delete(r);
	r = ft(&t, "-MCP", "{\"case_sensitive\": true}");
	n = names(r);
	ASSERT_STR_EQ(n, "Lower");
	free(n);
	cJSON_Delete(r);
	tv_close(&t);
}

static void test_query_errors(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "alpha\n");
	open_indexed(&t);
	char *e = ft_err(&t, "{\"query\": \"alpha (beta\", \"mode\": "
			     "\"fulltext\"}");
	ASSERT_STR_EQ(e, "Invalid query at character 7: '(' is not closed");
	free(e);
	e = ft_err(&t, "{\"query\": \"- & ;\", \"mode\": \"fulltext\"}");
	ASSERT_STR_EQ(e, "The query has no words to search for");
	free(e);
	e = ft_err(&t, "{\"query\": \"alpha\", \"mode\": \"fulltext\", "
		       "\"limit\": 101}");
	ASSERT_STR_EQ(e, "Invalid argument 'limit' for search_notes: must be "
			 "between 1 and 100");
	free(e);
	/* FTS5 syntax in a query is text, never an FTS5 expression. */
	cJSON *r = ft(&t, "alpha\" OR \"x NEAR(a b) ^c {title}: *", NULL);
	CU_ASSERT_PTR_NOT_NULL(r);
	cJSON_Delete(r);
	r = ft(&t, "\"alpha\" NEAR col:x {a b}", NULL);
	CU_ASSERT_PTR_NOT_NULL(r);
	cJSON_Delete(r);
	/* Huge queries get a clear answer, fast. */
	struct sbuf big = {0};
	for (int i = 0; i < 256; i++)
		sb_puts(&big, "alpha ");
	r = ft(&t, big.s, NULL);
	CU_ASSERT_PTR_NOT_NULL(r);
	cJSON_Delete(r);
	for (int i = 0; i < 20000; i++)
		sb_puts(&big, "alpha ");
	char *args =
		xasprintf("{\"query\": \"%s\", \"mode\": \"fulltext\"}", big.s);
	e = ft_err(&t, args);
	ASSERT_STR_EQ(e, "Invalid query at character 1537: too many terms (at "
			 "most 256)");
	free(e);
	free(args);
	sb_free(&big);
	for (int i = 0; i < 5000; i++)
		sb_puts(&big, "(-");
	args = xasprintf("{\"query\": \"%s\", \"mode\": \"fulltext\"}", big.s);
	e = ft_err(&t, args);
	ASSERT_STR_EQ(e, "Invalid query at character 33: nested too deeply");
	free(e);
	free(args);
	sb_free(&big);
	/* Content mode: a long text to find (180 KB). */
	for (int i = 0; i < 30000; i++)
		sb_puts(&big, "alpha ");
	args = xasprintf("{\"query\": \"%s\", \"mode\": \"content\"}", big.s);
	r = tv_call_json(&t, "search_notes", args);
	CU_ASSERT_EQUAL(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total")),
			0);
	cJSON_Delete(r);
	free(args);
	sb_free(&big);
	tv_close(&t);
}

/* ---- in step with writes
 * ----------------------------------------------------- */

static void test_follows_writes(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Home.md", "Start here: [[Draft]]\n");
	open_indexed(&t);
	CU_ASSERT_EQUAL(tv_search_total(&t, "xylophone", "fulltext"), 0);
	cJSON_Delete(tv_call_json(&t, "create_note",
				  "{\"name\": \"Draft\", \"content\": \"a "
				  "xylophone concert\"}"));
	CU_ASSERT_EQUAL(tv_search_total(&t, "xylophone", "fulltext"), 1);
	CU_ASSERT_EQUAL(tv_search_total(&t, "ylophon", "content"), 1);
	cJSON_Delete(tv_call_json(&t, "update_note",
				  "{\"name\": \"Draft\", \"content\": \"a "
				  "marimba concert\"}"));
	CU_ASSERT_EQUAL(tv_search_total(&t, "xylophone", "fulltext"), 0);
	CU_ASSERT_EQUAL(tv_search_total(&t, "xylophone", "content"), 0);
	CU_ASSERT_EQUAL(tv_search_total(&t, "marimba", "fulltext"), 1);
	cJSON_Delete(
		tv_call_json(&t, "replace_text",
			     "{\"name\": \"Draft\", \"old_text\": \"marimba\", "
			     "\"new_text\": \"vibraphone\"}"));
	CU_ASSERT_EQUAL(tv_search_total(&t, "marimba", "fulltext"), 0);
	CU_ASSERT_EQUAL(tv_search_total(&t, "vibraphone", "fulltext"), 1);
	/* A rename moves the note and rewrites the link in Home. */
	cJSON_Delete(tv_call_json(&t, "rename_note",
				  "{\"old_name\": \"Draft\", \"new_name\": "
				  "\"Concerts\"}"));
	cJSON *r = ft(&t, "vibraphone", NULL);
	CU_ASSERT(json_equal_text(
		cJSON_GetObjectItem(
			cJSON_GetArrayItem(cJSON_GetObjectItem(r, "results"),
					   0),
			"path"),
		"\"Concerts.md\""));
	cJSON_Delete(r);
	CU_ASSERT_EQUAL(tv_search_total(&t, "title:concerts", "fulltext"), 1);
	CU_ASSERT_EQUAL(tv_search_total(&t, "title:draft", "fulltext"), 0);
	CU_ASSERT_EQUAL(
		tv_search_total(&t, "Start here: [[Concerts]]", "content"), 1);
	/* Tags added by a tool count at once. */
	cJSON_Delete(tv_call_json(
		&t, "add_tag", "{\"name\": \"Concerts\", \"tag\": \"music\"}"));
	CU_ASSERT_EQUAL(tv_search_total(&t, "tag:music", "fulltext"), 1);
	/* Deleted: gone from both modes. */
	cJSON_Delete(
		tv_call_json(&t, "delete_note", "{\"name\": \"Concerts\"}"));
	CU_ASSERT_EQUAL(tv_search_total(&t, "vibraphone", "fulltext"), 0);
	CU_ASSERT_EQUAL(tv_search_total(&t, "vibraphone", "content"), 0);
	/* Outside changes arrive through vault_sync_path. */
	tv_write(&t, "Outside.md", "written by another program: oboe\n");
	vault_write_lock(t.v);
	vault_sync_path(t.v, "Outside.md", "external", 0);
	vault_write_unlock(t.v);
	CU_ASSERT_EQUAL(tv_search_total(&t, "oboe", "fulltext"), 1);
	char *p = xasprintf("%s/Outside.md", t.dir);
	unlink(p);
	free(p);
	vault_write_lock(t.v);
	vault_sync_path(t.v, "Outside.md", "external", 0);
	vault_write_unlock(t.v);
	CU_ASSERT_EQUAL(tv_search_total(&t, "oboe", "fulltext"), 0);
	tv_close(&t);
}

/* Content mode: the same answers from the index as from the files. */
static void test_content_same_as_files(void)
{
	static const char *const queries[] = {
		"the",	    "Line two", "ß",	      "é",	 "x",
		"tag",	    "#",	"ÉTÉ",	      "STRASSE", "straße",
		"grosse s", "two has",	"frontmatter"};
	struct tvault a, b;
	tv_init(&a);
	tv_init(&b);
	static const char *const files[][2] = {
		{"One.md", "---\ntitle: the frontmatter\n---\nLine one\nLine "
			   "two has the word\n"},
		{"sub/Two.md", "the start\n\n#tag here\nGroße Straße\n"},
		{"Three.md", "Été, été, ÉTÉ.\nno x here? yes x\n"},
		{"Empty.md", ""},
	};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		tv_write(&a, files[i][0], files[i][1]);
		tv_write(&b, files[i][0], files[i][1]);
	}
	tv_open(&a);
	open_indexed(&b);
	for (size_t i = 0; i < ARRAY_SIZE(queries); i++) {
		char *args = xasprintf("{\"query\": \"%s\", \"mode\": "
				       "\"content\"}",
				       queries[i]);
		cJSON *ra = tv_call_json(&a, "search_notes", args);
		cJSON *rb = tv_call_json(&b, "search_notes", args);
		char *ja = cJSON_PrintUnformatted(ra);
		char *jb = cJSON_PrintUnformatted(rb);
		if (strcmp(ja, jb))
			fprintf(stderr, "  %s:\n    files: %s\n    index: %s\n",
				queries[i], ja, jb);
		ASSERT_STR_EQ(jb, ja);
		free(ja);
		free(jb);
		cJSON_Delete(ra);
		cJSON_Delete(rb);
		free(args);
	}
	tv_close(&a);
	tv_close(&b);
}

/* ---- restart, damage
 * --------------------------------------------------------- */

static void test_restart_reuses_index(void)
{
	struct tvault t;
	tv_init(&t);
	for (int i = 0; i < 50; i++) {
		char p[64], body[96];
		snprintf(p, sizeof(p), "n/Note %02d.md", i);
		snprintf(body, sizeof(body),
			 "---\ntags: [t%d]\n---\nbody %d [[Note %02d]] keep\n",
			 i % 4, i, (i + 1) % 50);
		tv_write(&t, p, body);
	}
	open_indexed(&t);
	struct vault_store_state st;
	vault_store_state(t.v, &st);
	CU_ASSERT_EQUAL(st.parsed, 50);
	CU_ASSERT_EQUAL(st.cached, 0);
	cJSON *before = tv_call_json(&t, "get_backlinks",
				     "{\"name\": \"Note "
				     "07\"}");
	cJSON *tags_before = tv_call_json(&t, "list_tags", NULL);

	/* Nothing changed: nothing is read again. */
	reopen_indexed(&t);
	vault_store_state(t.v, &st);
	CU_ASSERT_EQUAL(st.parsed, 0);
	CU_ASSERT_EQUAL(st.cached, 50);
	CU_ASSERT(st.ready);
	cJSON *after = tv_call_json(&t, "get_backlinks",
				    "{\"name\": \"Note "
				    "07\"}");
	CU_ASSERT(cJSON_Compare(before, after, true));
	cJSON *tags_after = tv_call_json(&t, "list_tags", NULL);
	CU_ASSERT(cJSON_Compare(tags_before, tags_after, true));
	cJSON_Delete(before);
	cJSON_Delete(after);
	cJSON_Delete(tags_before);
	cJSON_Delete(tags_after);
	CU_ASSERT_EQUAL(tv_search_total(&t, "keep", "fulltext"), 50);

	/* One file changed, one gone, one new while "vaultd was down". */
	tv_write(&t, "n/Note 03.md", "---\ntags: [t3]\n---\nchanged piccolo\n");
	char *gone = xasprintf("%s/n/Note 04.md", t.dir);
	unlink(gone);
	free(gone);
	tv_write(&t, "n/New.md", "fresh piccolo\n");
	reopen_indexed(&t);
	vault_store_state(t.v, &st);
	CU_ASSERT_EQUAL(st.parsed, 2);
	CU_ASSERT_EQUAL(st.cached, 48);
	CU_ASSERT_EQUAL(tv_search_total(&t, "piccolo", "fulltext"), 2);
	CU_ASSERT_EQUAL(tv_search_total(&t, "keep", "fulltext"), 48);
	CU_ASSERT_EQUAL(tv_search_total(&t, "body 4 [[", "content"), 0);
	CU_ASSERT_EQUAL(tv_search_total(&t, "body 5 [[", "content"), 1);
	tv_close(&t);
}

/* Bytes of the on-disk index, its WAL included. */
static off_t index_bytes(struct tvault *t)
{
	off_t total = 0;
	static const char *const sfx[] = {"", "-wal"};
	for (size_t i = 0; i < ARRAY_SIZE(sfx); i++) {
		char *p = xasprintf("%s/.cache/index.sqlite%s", t->dir, sfx[i]);
		struct stat st;
		if (stat(p, &st) == 0)
			total += st.st_size;
		free(p);
	}
	return total;
}

/* A big note: n lines naming word, one of them a link and a tag. */
static void write_big(struct tvault *t, const char *path, const char *word,
		      int n)
{
	struct sbuf b = {0};
	sb_puts(&b, "---\ntags: [big]\n---\n[[Note 01]] #bulky\n");
	for (int i = 0; i < n; i++)
		sb_printf(&b, "line %d of the %s note, some filler text\n", i,
			  word);
	tv_write(t, path, b.s);
	sb_free(&b);
}

/* Notes over the size put before a write returns (64 KiB) are stored
 * like the others, with the stat they were read at: a restart of an
 * unchanged vault reads none of them again, and the index does not grow
 * from one restart to the next. */
static void test_restart_big_notes(void)
{
	struct tvault t;
	tv_init(&t);
	for (int i = 0; i < 20; i++) {
		char p[64], body[96];
		snprintf(p, sizeof(p), "n/Note %02d.md", i);
		snprintf(body, sizeof(body), "small %d [[Note %02d]]\n", i,
			 (i + 1) % 20);
		tv_write(&t, p, body);
	}
	write_big(&t, "big/Tuba.md", "tuba", 3000);	  /* ~140 KB */
	write_big(&t, "big/Oboe.md", "oboe", 20000);	  /* ~900 KB */
	write_big(&t, "big/Ближе.md", "balalaika", 5000); /* not ASCII */
	open_indexed(&t);
	struct vault_store_state st;
	vault_store_state(t.v, &st);
	CU_ASSERT_EQUAL(st.parsed, 23);
	/* Changed through vaultd while it runs: put by the full-text
	 * worker (queued, being big), with its new stat. */
	cJSON *ap = tv_call_json(
		&t, "append_note",
		"{\"name\": \"Tuba\", \"text\": \"trombone coda\"}");
	CU_ASSERT_PTR_NOT_NULL(ap);
	cJSON_Delete(ap);
	vault_fulltext_flush(t.v);
	off_t sizes[4];
	for (int round = 0; round < 4; round++) {
		t.v = vault_free(t.v); /* the index closed: WAL folded in */
		sizes[round] = index_bytes(&t);
		open_indexed(&t);
		vault_store_state(t.v, &st);
		CU_ASSERT_EQUAL(st.parsed, 0);
		CU_ASSERT_EQUAL(st.cached, 23);
		CU_ASSERT(st.ready);
		CU_ASSERT_EQUAL(tv_search_total(&t, "trombone", "fulltext"), 1);
		CU_ASSERT_EQUAL(tv_search_total(&t, "balalaika", "fulltext"),
				1);
		CU_ASSERT_EQUAL(tv_search_total(&t, "oboe", "fulltext"), 1);
		CU_ASSERT_EQUAL(tv_search_total(&t, "bulky", "tag"), 3);
		if (round > 0)
			CU_ASSERT_EQUAL(sizes[round], sizes[round - 1]);
	}
	cJSON *bl =
		tv_call_json(&t, "get_backlinks", "{\"name\": \"Note 01\"}");
	CU_ASSERT_EQUAL(
		cJSON_GetArraySize(cJSON_GetObjectItem(bl, "backlinks")), 4);
	cJSON_Delete(bl);
	tv_close(&t);
}

/* Notes over 64 KiB go into the index apart from the rest (without the
 * writer lock): they too are taken from it at the next start, and an
 * unchanged vault never makes the index file grow. */
static void test_restart_reuses_big_notes(void)
{
	struct tvault t;
	tv_init(&t);
	struct sbuf big = {0};
	sb_puts(&big, "---\ntags: [long]\n---\n# Log\n\n[[Small 1]] ");
	for (int i = 0; big.len < 300 * 1024; i++)
		sb_printf(&big, "entry %d of the trombone journal. ", i);
	sb_puts(&big, "\n");
	for (int i = 0; i < 3; i++) {
		char p[64];
		snprintf(p, sizeof(p), "Big %d.md", i);
		tv_write(&t, p, big.s);
		snprintf(p, sizeof(p), "Small %d.md", i);
		tv_write(&t, p, "small trombone note\n");
	}
	sb_free(&big);
	open_indexed(&t);
	struct vault_store_state st;
	vault_store_state(t.v, &st);
	CU_ASSERT_EQUAL(st.parsed, 6);
	int64_t first = 0;
	for (int round = 0; round < 3; round++) {
		reopen_indexed(&t);
		vault_store_state(t.v, &st);
		CU_ASSERT_EQUAL(st.parsed, 0);
		CU_ASSERT_EQUAL(st.cached, 6);
		CU_ASSERT(st.ready);
		CU_ASSERT_EQUAL(tv_search_total(&t, "trombone", "fulltext"), 6);
		CU_ASSERT_EQUAL(tv_search_total(&t, "journal", "fulltext"), 3);
		if (round == 0)
			first = st.bytes;
		else
			CU_ASSERT_EQUAL(st.bytes, first);
	}
	/* The text is kept compressed: the index is smaller than the
	 * notes. */
	CU_ASSERT(first < 3 * 300 * 1024);
	tv_close(&t);
}

static void corrupt(const char *path, off_t at, size_t len)
{
	int fd = open(path, O_WRONLY);
	CU_ASSERT_FATAL(fd >= 0);
	char *junk = xmalloc(len);
	for (size_t i = 0; i < len; i++)
		junk[i] = (char)(i * 7 + 13);
	CU_ASSERT(pwrite(fd, junk, len, at) == (ssize_t)len);
	free(junk);
	close(fd);
}

static void test_damaged_index_rebuilt(void)
{
	struct tvault t;
	tv_init(&t);
	for (int i = 0; i < 30; i++) {
		char p[64], body[64];
		snprintf(p, sizeof(p), "Note %02d.md", i);
		snprintf(body, sizeof(body), "violin %d\n", i);
		tv_write(&t, p, body);
	}
	open_indexed(&t);
	t.v = vault_free(t.v);
	char *db = xasprintf("%s/.cache/index.sqlite", t.dir);
	char *wal = xasprintf("%s-wal", db);
	unlink(wal);

	/* The header: not a database any more. */
	corrupt(db, 0, 100);
	CU_ASSERT(tv_store_rebuilt(&t));
	char *dir = xasprintf("%s/.cache", t.dir);
	struct store *s = NULL;
	char *note = NULL;
	reopen_indexed(&t);
	CU_ASSERT_EQUAL(tv_search_total(&t, "violin", "fulltext"), 30);
	t.v = vault_free(t.v);

	/* Pages in the middle: found when used, then rebuilt. */
	unlink(wal);
	struct stat st;
	CU_ASSERT_FATAL(stat(db, &st) == 0);
	corrupt(db, 4096, (size_t)st.st_size - 4096);
	char *msg = NULL;
	CU_ASSERT_FATAL(vault_open(t.dir, &t.v, &msg) == 0);
	note = NULL;
	int r = store_open(dir, vault_root(t.v), &s, &note);
	free(note);
	if (r == 0) {
		vault_attach_store(t.v, s);
		vault_index_all(t.v, NULL, NULL, NULL);
		/* A search may find the damage; either way the index is
		 * rebuilt by the next round of work. */
		char *e = NULL;
		struct tool_result res;
		tv_call(&t, "search_notes",
			"{\"query\": \"violin\", \"mode\": \"fulltext\"}",
			&res);
		if (res.is_error)
			e = xstrdup(res.text);
		tool_result_clear(&res);
		if (e)
			ASSERT_CONTAINS(e, "rebuilt");
		free(e);
		vault_fulltext_work(t.v);
		char *n2 = vault_fulltext_note(t.v);
		free(n2);
	}
	CU_ASSERT_EQUAL(tv_search_total(&t, "violin", "fulltext"), 30);
	CU_ASSERT_EQUAL(tv_search_total(&t, "violin 2", "content"), 11);
	free(dir);
	free(db);
	free(wal);
	tv_close(&t);
}

/* ---- a first build in the background ----------------------------------------
 */

struct prog {
	int calls;
	size_t last_done, last_total;
};

static void on_progress(void *ud, size_t done, size_t total, const char *m)
{
	struct prog *p = ud;
	p->calls++;
	p->last_done = done;
	p->last_total = total;
	CU_ASSERT_PTR_NOT_NULL(strstr(m, "Indexing note text"));
}

static void *worker(void *arg)
{
	vault_fulltext_work(arg);
	return NULL;
}

struct quiet_call {
	struct vault *v;
	struct tool_result res;
};

static void *quiet_search(void *arg)
{
	struct quiet_call *q = arg;
	cJSON *args = cJSON_Parse("{\"query\": \"bassoon\", \"mode\": "
				  "\"fulltext\"}");
	tools_call(q->v, "search_notes", args, "test", &q->res);
	cJSON_Delete(args);
	return NULL;
}

static void test_first_build(void)
{
	struct tvault t;
	tv_init(&t);
	/* More than vault_index_all() catches up with by itself. */
	for (int i = 0; i < 2600; i++) {
		char p[64], body[64];
		snprintf(p, sizeof(p), "f%d/N%04d.md", i % 10, i);
		snprintf(body, sizeof(body), "bassoon %d\n", i);
		tv_write(&t, p, body);
	}
	char *msg = NULL;
	CU_ASSERT_FATAL(vault_open(t.dir, &t.v, &msg) == 0);
	char *dir = xasprintf("%s/.cache", t.dir);
	mkdir(dir, 0700);
	struct store *s = NULL;
	char *note = NULL;
	CU_ASSERT_FATAL(store_open(dir, vault_root(t.v), &s, &note) == 0);
	free(dir);
	vault_attach_store(t.v, s);
	vault_index_all(t.v, NULL, NULL, NULL);
	struct vault_store_state st;
	vault_store_state(t.v, &st);
	CU_ASSERT(!st.ready);
	CU_ASSERT_EQUAL(st.total, 2600);
	/* Name tools work; full-text waits (10 s), then says how far it
	 * is; content still answers (from the files). */
	cJSON *r = tv_call_json(&t, "search_notes", "{\"query\": \"N0042\"}");
	CU_ASSERT_EQUAL(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total")),
			1);
	cJSON_Delete(r);
	char *e =
		ft_err(&t, "{\"query\": \"bassoon\", \"mode\": \"fulltext\"}");
	ASSERT_CONTAINS(e, "being built (0%, 0 of 2600 notes)");
	free(e);
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon 42", "content"), 11);
	/* A caller that can show progress waits for the build, and so
	 * does one that cannot (while the build takes under 10 s). */
	pthread_t th, quiet;
	struct quiet_call qc = {.v = t.v};
	pthread_create(&quiet, NULL, quiet_search, &qc);
	pthread_create(&th, NULL, worker, t.v);
	struct prog p = {0};
	struct tool_call call = {
		.source = "test", .progress = on_progress, .progress_ud = &p};
	cJSON *args = cJSON_Parse("{\"query\": \"bassoon\", \"mode\": "
				  "\"fulltext\"}");
	struct tool_result res;
	tools_call_ex(t.v, "search_notes", args, &call, &res);
	cJSON_Delete(args);
	pthread_join(th, NULL);
	pthread_join(quiet, NULL);
	CU_ASSERT(!res.is_error);
	ASSERT_CONTAINS(res.text, "\"total\":2600");
	tool_result_clear(&res);
	CU_ASSERT(!qc.res.is_error);
	ASSERT_CONTAINS(qc.res.text, "\"total\":2600");
	tool_result_clear(&qc.res);
	CU_ASSERT(p.calls >= 1);
	CU_ASSERT_EQUAL(p.last_total, 2600);
	vault_store_state(t.v, &st);
	CU_ASSERT(st.ready);
	/* The substring index comes after: meanwhile substrings are found
	 * in the stored text, with the same answers, writes included. */
	CU_ASSERT(!st.substrings_ready);
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon 42", "content"), 11);
	cJSON_Delete(tv_call_json(
		&t, "create_note",
		"{\"name\": \"late\", \"content\": \"bassoon 42x\"}"));
	cJSON_Delete(
		tv_call_json(&t, "update_note",
			     "{\"name\": \"N0042\", \"content\": \"oboe\"}"));
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon 42", "content"), 11);
	/* Filling the substring index changes no answer: a cursor taken
	 * before it still pages on after it. */
	r = tv_call_json(&t, "search_notes",
			 "{\"query\": \"bassoon\", \"mode\": \"fulltext\", "
			 "\"limit\": 7}");
	char *cur = xstrdup(
		cJSON_GetStringValue(cJSON_GetObjectItem(r, "next_cursor")));
	cJSON_Delete(r);
	CU_ASSERT(vault_substrings_work(t.v) >= 2600);
	char *more =
		xasprintf("{\"query\": \"bassoon\", \"mode\": "
			  "\"fulltext\", \"limit\": 7, \"cursor\": \"%s\"}",
			  cur);
	r = tv_call_json(&t, "search_notes", more);
	CU_ASSERT_EQUAL(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total")),
			2600);
	cJSON_Delete(r);
	free(more);
	free(cur);
	vault_store_state(t.v, &st);
	CU_ASSERT(st.substrings_ready);
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon 42", "content"), 11);
	CU_ASSERT_EQUAL(tv_search_total(&t, "oboe", "content"), 1);
	cJSON_Delete(tv_call_json(
		&t, "update_note",
		"{\"name\": \"N0043\", \"content\": \"oboe too\"}"));
	CU_ASSERT_EQUAL(tv_search_total(&t, "oboe", "content"), 2);
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon 4", "content"), 110);
	tv_close(&t);
}
/* Writes made while a first build runs (which holds its transaction
 * open across many notes and reads ahead on another thread) all reach
 * the index: changed, new, deleted and big notes. */
static void test_writes_during_first_build(void)
{
	struct tvault t;
	tv_init(&t);
	/* Enough text that the build outlasts some of the writes. */
	struct sbuf fill = {0};
	for (int k = 0; k < 200; k++)
		sb_printf(&fill, "filler words number %d for the build\n", k);
	for (int i = 0; i < 3000; i++) {
		char p[64];
		snprintf(p, sizeof(p), "g%d/W%04d.md", i % 10, i);
		char *body = xasprintf("cornet %d\n%s", i, fill.s);
		tv_write(&t, p, body);
		free(body);
	}
	sb_free(&fill);
	write_big(&t, "Long.md", "sackbut", 3000);
	char *msg = NULL;
	CU_ASSERT_FATAL(vault_open(t.dir, &t.v, &msg) == 0);
	char *dir = xasprintf("%s/.cache", t.dir);
	mkdir(dir, 0700);
	struct store *s = NULL;
	char *note = NULL;
	CU_ASSERT_FATAL(store_open(dir, vault_root(t.v), &s, &note) == 0);
	free(dir);
	vault_attach_store(t.v, s);
	vault_index_all(t.v, NULL, NULL, NULL);
	struct vault_store_state st;
	vault_store_state(t.v, &st);
	CU_ASSERT(!st.ready);
	pthread_t th;
	pthread_create(&th, NULL, worker, t.v);
	for (int i = 0; i < 60; i++) {
		char *a = xasprintf("{\"name\": \"W%04d\", \"content\": "
				    "\"crumhorn %d\"}",
				    i * 37, i);
		cJSON_Delete(tv_call_json(&t, "update_note", a));
		free(a);
		a = xasprintf("{\"name\": \"New %d\", \"content\": \"crumhorn "
			      "new\"}",
			      i);
		cJSON_Delete(tv_call_json(&t, "create_note", a));
		free(a);
		if (i % 6 == 0) {
			a = xasprintf("{\"name\": \"W%04d\"}", i * 37 + 1);
			cJSON_Delete(tv_call_json(&t, "delete_note", a));
			free(a);
		}
	}
	cJSON *ap = tv_call_json(
		&t, "append_note",
		"{\"name\": \"Long\", \"text\": \"crumhorn coda\"}");
	CU_ASSERT_PTR_NOT_NULL(ap);
	cJSON_Delete(ap);
	pthread_join(th, NULL);
	vault_store_state(t.v, &st);
	CU_ASSERT(st.ready);
	CU_ASSERT_EQUAL(tv_search_total(&t, "crumhorn", "fulltext"), 121);
	CU_ASSERT_EQUAL(tv_search_total(&t, "cornet", "fulltext"),
			3000 - 60 - 10);
	CU_ASSERT_EQUAL(tv_search_total(&t, "sackbut", "fulltext"), 1);
	CU_ASSERT_EQUAL(tv_search_total(&t, "crumhorn", "content"), 121);
	/* And the next start takes every note from the index. */
	reopen_indexed(&t);
	vault_store_state(t.v, &st);
	CU_ASSERT_EQUAL(st.parsed, 0);
	CU_ASSERT_EQUAL(st.cached, 3000 - 10 + 60 + 1);
	tv_close(&t);
}

/* Words OR'ed where one is common and others rare: the pages rank only
 * the notes with the words that can score the most (MaxScore), yet they
 * are the pages of ranking every hit: scores never rise from one result
 * to the next, across pages, and every note comes once. */
/* Scores never rise from one result to the next, and the notes with the
 * rare words come first. */
static void rare_first(const char *p, double sc, size_t i, void *ud)
{
	double *last = ud;
	CU_ASSERT(sc <= *last);
	*last = sc;
	if (i < 5)
		CU_ASSERT(!strcmp(p, "q/Note 00.md") ||
			  !strcmp(p, "q/Note 09.md") ||
			  !strcmp(p, "q/Note 13.md") ||
			  !strcmp(p, "q/Note 18.md") ||
			  !strcmp(p, "q/Note 26.md") ||
			  !strcmp(p, "q/Note 27.md") ||
			  !strcmp(p, "q/Note 36.md") ||
			  !strcmp(p, "q/Note 39.md"));
}

static void test_pruned_pages(void)
{
	struct tvault t;
	tv_init(&t);
	for (int i = 0; i < 40; i++) {
		char p[64], body[200];
		snprintf(p, sizeof(p), "q/Note %02d.md", i);
		snprintf(body, sizeof(body), "common %s %s %s\n",
			 i % 4 ? "common filler" : "",
			 i % 9 == 0 ? "zebrine" : "",
			 i % 13 == 0 ? "okapine zebrine okapine" : "");
		tv_write(&t, p, body);
	}
	tv_write(&t, "q/Other.md", "nothing of the kind\n");
	open_indexed(&t);
	double last = 1e9;
	size_t pages;
	CU_ASSERT_EQUAL(page_all(&t, "common zebrine okapine", 3, 40,
				 rare_first, &last, &pages),
			40);
	char *snip = tv_first_snippet(&t, "common okapine");
	ASSERT_CONTAINS(snip, "**okapine**");
	free(snip);
	tv_close(&t);
}

/* A word in every note, with a rare one: the notes with the rare word
 * are ranked, and the total (every note) is known without counting. */
static void test_word_in_every_note(void)
{
	struct tvault t;
	tv_init(&t);
	for (int i = 0; i < 12; i++) {
		char p[64], body[96];
		snprintf(p, sizeof(p), "e/Note %02d.md", i);
		snprintf(body, sizeof(body), "everywhere %s\n",
			 i % 5 ? "plain text" : "quokkas here");
		tv_write(&t, p, body);
	}
	open_indexed(&t);
	double last = 1e9;
	size_t pages;
	CU_ASSERT_EQUAL(
		page_all(&t, "everywhere quokkas", 2, 12, NULL, NULL, &pages),
		12);
	CU_ASSERT_EQUAL(pages, 6);
	cJSON *r = ft(&t, "quokkas everywhere", "{\"limit\": 3}");
	CU_ASSERT_EQUAL(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total")),
			12);
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "results"))
	{
		/* Note 00, 05 and 10 have the rare word: they come first. */
		const char *p =
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
		CU_ASSERT(!strcmp(p, "e/Note 00.md") ||
			  !strcmp(p, "e/Note 05.md") ||
			  !strcmp(p, "e/Note 10.md"));
		double sc =
			cJSON_GetNumberValue(cJSON_GetObjectItem(it, "score"));
		CU_ASSERT(sc <= last);
		last = sc;
	}
	cJSON_Delete(r);
	tv_close(&t);
}

/* A word or a phrase alone is ranked in one pass with weight 1 and its
 * page scored with the count that pass made: its pages and scores are
 * those of the same query ranked with its rarity counted first (a NOT
 * that excludes nothing makes it another query), page after page. */
static void same_as(const char *p, double sc, size_t i, void *ud)
{
	const cJSON *want = cJSON_GetArrayItem(ud, (int)i);
	CU_ASSERT_PTR_NOT_NULL_FATAL(want);
	CU_ASSERT_STRING_EQUAL(
		p, cJSON_GetStringValue(cJSON_GetObjectItem(want, "path")));
	CU_ASSERT_DOUBLE_EQUAL(
		sc, cJSON_GetNumberValue(cJSON_GetObjectItem(want, "score")),
		1e-9);
}

static void test_one_pass(void)
{
	struct tvault t;
	tv_init(&t);
	for (int i = 0; i < 30; i++) {
		char p[64];
		struct sbuf b = {0};
		for (int k = 0; k <= i % 6; k++)
			sb_puts(&b, i % 4 ? "the sea lark sings\n"
					  : "a lark over the sea\n");
		/* Every note of its own length: no two score the same
		 * (notes that do are in no set order across pages). */
		for (int k = 0; k < i; k++)
			sb_puts(&b, "filler ");
		snprintf(p, sizeof(p), "o/Note %02d.md", i);
		tv_write(&t, p, b.s);
		sb_free(&b);
	}
	tv_write(&t, "o/Sea Lark.md", "named after it\n");
	tv_write(&t, "o/Other.md", "nothing of the kind\n");
	open_indexed(&t);
	static const char *const q[][2] = {
		{"lark", "lark -qqzzx"},
		{"\"sea lark\"", "\"sea lark\" -qqzzx"},
		/* A prefix alone: its page's snippets in one query. */
		{"lar*", "lar* -qqzzx"},
	};
	static const int totals[] = {31, 23, 31};
	for (size_t i = 0; i < ARRAY_SIZE(q); i++) {
		cJSON *want = ft(&t, q[i][1], "{\"limit\": 100}");
		CU_ASSERT_PTR_NOT_NULL_FATAL(want);
		CU_ASSERT_EQUAL(cJSON_GetNumberValue(
					cJSON_GetObjectItem(want, "total")),
				totals[i]);
		size_t pages;
		CU_ASSERT_EQUAL(page_all(&t, q[i][0], 4, totals[i], same_as,
					 cJSON_GetObjectItem(want, "results"),
					 &pages),
				(size_t)totals[i]);
		CU_ASSERT_EQUAL(pages, (size_t)(totals[i] + 3) / 4);
		cJSON_Delete(want);
	}
	/* The prefix's snippets (made in one query for the page) mark the
	 * word of each note. */
	cJSON *r = ft(&t, "lar*", "{\"limit\": 7}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	const cJSON *it;
	int marked = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "results"))
	{
		const char *sn = cJSON_GetStringValue(
			cJSON_GetObjectItem(it, "snippet"));
		marked += sn && strstr(sn, "**lark**") != NULL;
	}
	CU_ASSERT_EQUAL(marked, 6);
	cJSON_Delete(r);
	tv_close(&t);
}

/* Every page of query (limit 7) against the one page of the same query
 * ranked otherwise (other): the same notes, scores and total. */
static void same_pages(struct tvault *t, const char *query, const char *other,
		       int total)
{
	cJSON *want = ft(t, other, "{\"limit\": 100}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(want);
	CU_ASSERT_EQUAL(
		cJSON_GetNumberValue(cJSON_GetObjectItem(want, "total")),
		total);
	size_t pages;
	CU_ASSERT_EQUAL(page_all(t, query, 7, total, same_as,
				 cJSON_GetObjectItem(want, "results"), &pages),
			(size_t)total);
	cJSON_Delete(want);
}

/* Words that most notes have are ranked from their notes held in memory:
 * the same pages and scores as the same query ranked by FTS5 (the NOT
 * that excludes nothing), the first time and from memory, and after a
 * write (the notes held are of the generation before it). */
static void test_common_words(void)
{
	struct tvault t;
	tv_init(&t);
	int both = 0, alpha = 0, beta = 0;
	for (int i = 0; i < 200; i++) {
		char p[64];
		struct sbuf b = {0};
		/* A third of the notes each, 100 with either. */
		bool has_beta = i % 6 == 0 || i % 6 == 2;
		for (int k = 0; i % 3 == 0 && k <= i % 4; k++)
			sb_puts(&b, "alpha ");
		for (int k = 0; has_beta && k <= i % 7; k++)
			sb_puts(&b, "beta ");
		alpha += i % 3 == 0;
		beta += has_beta;
		both += i % 3 == 0 || has_beta;
		/* Every note of its own length: no two score the same. */
		for (int k = 0; k < i; k++)
			sb_puts(&b, "filler ");
		snprintf(p, sizeof(p), "c/Note %03d.md", i);
		tv_write(&t, p, b.s);
		sb_free(&b);
	}
	open_indexed(&t);
	for (int round = 0; round < 2; round++) {
		same_pages(&t, "alpha beta", "alpha beta -qqzzx", both);
		same_pages(&t, "beta", "beta -qqzzx", beta);
	}
	cJSON_Delete(tv_call_json(&t, "create_note",
				  "{\"name\": \"Beta\", \"content\": \"beta "
				  "alpha beta filler\"}"));
	CU_ASSERT_EQUAL(tv_search_total(&t, "alpha beta", "fulltext"),
			both + 1);
	same_pages(&t, "alpha", "alpha -qqzzx", alpha + 1);
	same_pages(&t, "beta", "beta -qqzzx", beta + 1);
	tv_close(&t);
}

/* Word w's FTS5 expression as a query of stem languages langs plans it. */
static char *word_expr(const char *w, unsigned langs)
{
	struct qnode q = {.kind = Q_WORD, .text = (char *)w};
	unsigned saved = sto_query_langs;
	sto_query_langs = langs;
	struct sbuf b = {0};
	sto_fts_atom(&b, &q);
	sto_query_langs = saved;
	return sb_steal(&b);
}

static bool word_kept(struct tvault *t, const char *w, unsigned langs)
{
	_cleanup_free_ char *e = word_expr(w, langs);
	return sto_word_cached(vault_store(t->v), e);
}

/* The commonest words read ahead (store_warm_new): the words of a good
 * part of the sampled notes, as a plain query's and as an English
 * question's, not the rarer ones; the pages and scores of searches of
 * them (words, a question, a phrase) are then those FTS5 ranks, and
 * after a write too. */
static void test_read_ahead(void)
{
	struct tvault t;
	tv_init(&t);
	int beta = 0, either = 0;
	for (int i = 0; i < 80; i++) {
		char p[64];
		struct sbuf b = {0};
		sb_puts(&b, "the notes of alpha ");
		if (i % 2 == 0)
			sb_puts(&b, "beta is here ");
		if (i % 3 == 0)
			sb_puts(&b, "gamma ");
		if (i % 10 == 0)
			sb_puts(&b, "zeta ");
		/* Every note of its own length: no two score the same. */
		for (int k = 0; k < 6 * i; k++)
			sb_puts(&b, k % 5 ? "filler " : "alpha ");
		beta += i % 2 == 0;
		either += i % 3 == 0 || i % 10 == 0;
		snprintf(p, sizeof(p), "w/Note %02d.md", i);
		tv_write(&t, p, b.s);
		sb_free(&b);
	}
	open_indexed(&t);
	struct store *s = vault_store(t.v);
	CU_ASSERT_PTR_NULL(store_warm_new(s)); /* too few notes */
	int64_t min = sto_warm_min_notes;
	sto_warm_min_notes = 0;
	struct store_warm *w = store_warm_new(s);
	sto_warm_min_notes = min;
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT(store_warm_words(w) >= 6);
	int r;
	while ((r = store_warm_step(s, w)) > 0)
		;
	CU_ASSERT_EQUAL(r, 0);
	store_warm_free(w);
	unsigned en = 1u << LANG_EN | 1u << LANG_RU;
	CU_ASSERT(word_kept(&t, "alpha", LANG_ALL));
	CU_ASSERT(word_kept(&t, "alpha", en));
	CU_ASSERT(word_kept(&t, "gamma", LANG_ALL));
	CU_ASSERT(word_kept(&t, "gamma", en));
	CU_ASSERT(!word_kept(&t, "zeta", LANG_ALL));
	CU_ASSERT(!word_kept(&t, "the", LANG_ALL));
	/* Their positions too: a phrase of them is found from memory, not
	 * left to FTS5. */
	sqlite3 *db = sto_acquire(s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	_cleanup_free_ char *ab = word_expr("alpha beta", LANG_ALL);
	char *msg = NULL;
	struct sto_word *found =
		sto_phrase_get(s, db, ab, store_generation(s), &r, &msg);
	CU_ASSERT_PTR_NOT_NULL(found);
	CU_ASSERT_EQUAL(found ? found->n : 0, (size_t)beta);
	sto_word_put(found);
	free(msg);
	sto_release(s, db);
	for (int round = 0; round < 2; round++) {
		same_pages(&t, "alpha beta", "alpha beta -qqzzx", 80 + round);
		same_pages(&t, "what is the gamma of zeta",
			   "what is the gamma of zeta -qqzzx", either + round);
		same_pages(&t, "\"alpha beta\"", "\"alpha beta\" -qqzzx",
			   beta + round);
		same_pages(&t, "beta", "beta -qqzzx", beta + round);
		if (round)
			break;
		cJSON_Delete(tv_call_json(
			&t, "create_note",
			"{\"name\": \"More\", \"content\": \"alpha beta "
			"gamma zeta\"}"));
	}
	tv_close(&t);
}

/* A prefix alone is ranked from its two phrases' notes in memory (the
 * word itself, the words it begins): the pages and scores FTS5 gives
 * it (a NOT that excludes nothing leaves it to FTS5), with the word in
 * the name, in some notes as it is, in none; and after a write. */
static void test_prefix_in_memory(void)
{
	static const char *const forms[] = {"alph", "alpha", "alphabet",
					    "alphorn"};
	struct tvault t;
	tv_init(&t);
	int any = 0, alpha = 0;
	for (int i = 0; i < 60; i++) {
		char p[64];
		struct sbuf b = {0};
		sb_puts(&b, "note ");
		for (int k = 0; k < 4; k++)
			for (int c = 0; (i >> k) % 3 && c <= i % (k + 2); c++)
				sb_printf(&b, "%s ", forms[k]);
		any += (i % 3) || (i >> 1) % 3 || (i >> 2) % 3 ||
		       (i >> 3) % 3 || i % 7 == 0;
		alpha += (i >> 1) % 3 || (i >> 2) % 3;
		/* Every note of its own length: no two score the same. */
		for (int k = 0; k < 7 * i; k++)
			sb_puts(&b, "filler ");
		snprintf(p, sizeof(p), "x/%s %02d.md",
			 i % 7 ? "Note" : "Alphorn", i);
		tv_write(&t, p, b.s);
		sb_free(&b);
	}
	open_indexed(&t);
	for (int round = 0; round < 2; round++) {
		same_pages(&t, "alph*", "alph* -qqzzx", any + round);
		same_pages(&t, "alpha*", "alpha* -qqzzx", alpha + round);
		same_pages(&t, "title:alph*", "title:alph* -qqzzx", 9 + round);
		same_pages(&t, "qqzz*", "qqzz* -qqzzx", 0);
		if (round)
			break;
		cJSON_Delete(tv_call_json(
			&t, "create_note",
			"{\"name\": \"Alphabet\", \"content\": \"alphabet "
			"alph\"}"));
	}
	tv_close(&t);
}

/* FTS5's own bm25() of the note at path for the one word w (weights as
 * vaultd's: the name ten times the text), read from the store's
 * database; 0 when the note does not have the word. */
static double fts5_bm25(sqlite3 *db, const char *w, const char *path)
{
	sqlite3_stmt *st;
	double sc = 0;
	CU_ASSERT_FATAL(
		sqlite3_prepare_v2(db,
				   "SELECT bm25(fts, 10.0, 1.0) FROM fts WHERE"
				   " fts MATCH ?1 AND rowid = (SELECT id FROM"
				   " notes WHERE path = ?2)",
				   -1, &st, NULL) == SQLITE_OK);
	sqlite3_bind_text(st, 1, w, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		sc = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return sc;
}

static bool close_to(double a, double b)
{
	return fabs(a - b) <= 1e-12 * (fabs(a) > 1 ? fabs(a) : 1);
}

/* query, ranked from the notes in memory, has the page (paths, scores,
 * total) of other, the same query ranked by FTS5. */
static void same_store_page(struct tvault *t, const char *query,
			    const char *other)
{
	size_t n, m, total, total_other;
	struct store_hit *a = tv_store_page(t, query, &n, &total);
	struct store_hit *b = tv_store_page(t, other, &m, &total_other);
	CU_ASSERT(n > 0);
	CU_ASSERT_EQUAL(n, m);
	CU_ASSERT_EQUAL(total, total_other);
	for (size_t i = 0; i < n && i < m; i++) {
		CU_ASSERT_STRING_EQUAL(a[i].path, b[i].path);
		CU_ASSERT(close_to(a[i].score, b[i].score));
	}
	store_hits_free(a, n);
	store_hits_free(b, m);
}

/* A vault of n notes in folder dir, indexed, with two common words
 * (alpha, beta) in graded amounts, and with rare, two rare ones (gamma,
 * delta); every note of its own length, so that no two score the same.
 * Returns the index opened read-only, with the tokenizer. */
static sqlite3 *graded_vault(struct tvault *t, int n, const char *dir,
			     bool rare)
{
	tv_init(t);
	for (int i = 0; i < n; i++) {
		char p[64];
		struct sbuf b = {0};
		for (int k = 0; i % 3 == 0 && k <= i % 4; k++)
			sb_puts(&b, "alpha ");
		for (int k = 0; (i % 6 == 0 || i % 6 == 2) && k <= i % 7; k++)
			sb_puts(&b, "beta ");
		if (rare && i % 25 == 0)
			sb_puts(&b, "gamma ");
		if (rare && i % 30 == 1)
			sb_puts(&b, "delta ");
		for (int k = 0; k < i; k++)
			sb_puts(&b, "filler ");
		snprintf(p, sizeof(p), "%s/Note %03d.md", dir, i);
		tv_write(t, p, b.s);
		sb_free(&b);
	}
	open_indexed(t);
	sqlite3 *db;
	CU_ASSERT_FATAL(sqlite3_open_v2(store_path(vault_store(t->v)), &db,
					SQLITE_OPEN_READONLY,
					NULL) == SQLITE_OK);
	CU_ASSERT_FATAL(tokenizer_register(db) == SQLITE_OK);
	return db;
}

/* The checks of test_lengths_change: a rare word (its notes' lengths
 * looked up one by one), two common ones (every length read in one
 * scan, kept), another rare one (from the lengths kept). */
static void lengths_check(struct tvault *t, sqlite3 *db)
{
	same_store_page(t, "gamma", "gamma -qqzzx");
	same_store_page(t, "alpha beta", "alpha beta -qqzzx");
	size_t n, total;
	struct store_hit *h = tv_store_page(t, "alpha beta", &n, &total);
	for (size_t i = 0; i < n; i++) {
		double want = -(fts5_bm25(db, "alpha", h[i].path) +
				fts5_bm25(db, "beta", h[i].path));
		CU_ASSERT(fabs(h[i].score - want) <= 1e-9 * fabs(want));
	}
	store_hits_free(h, n);
	same_store_page(t, "delta", "delta -qqzzx");
}

/* The notes' lengths that the ranking of common words reads itself
 * (fts_docsize) follow writes that change them: scores stay those of
 * FTS5's bm25() and of FTS5's own pass, before and after. */
static void test_lengths_change(void)
{
	struct tvault t;
	sqlite3 *db = graded_vault(&t, 200, "l", true);
	lengths_check(&t, db);
	/* Longer, shorter, gone, new: lengths and the average change. */
	struct sbuf b = {0};
	sb_puts(&b, "{\"name\": \"Note 003\", \"content\": \"alpha gamma");
	for (int k = 0; k < 400; k++)
		sb_puts(&b, " filler");
	sb_puts(&b, "\"}");
	cJSON_Delete(tv_call_json(&t, "update_note", b.s));
	sb_free(&b);
	cJSON_Delete(tv_call_json(&t, "update_note",
				  "{\"name\": \"Note 198\", \"content\": "
				  "\"beta delta alpha\"}"));
	cJSON_Delete(tv_call_json(&t, "append_note",
				  "{\"name\": \"Note 002\", \"text\": \"beta "
				  "filler filler filler\"}"));
	cJSON_Delete(
		tv_call_json(&t, "delete_note", "{\"name\": \"Note 150\"}"));
	cJSON_Delete(tv_call_json(&t, "create_note",
				  "{\"name\": \"Fresh\", \"content\": \"alpha "
				  "beta gamma delta\"}"));
	lengths_check(&t, db);
	/* Each write on its own, searched in between. */
	cJSON_Delete(tv_call_json(&t, "update_note",
				  "{\"name\": \"Note 000\", \"content\": "
				  "\"alpha\"}"));
	lengths_check(&t, db);
	cJSON_Delete(
		tv_call_json(&t, "delete_note", "{\"name\": \"Note 006\"}"));
	lengths_check(&t, db);
	sqlite3_close(db);
	tv_close(&t);
}

/* query, ranked from the notes in memory, has the page of other, the
 * same query ranked by FTS5: the same paths, total and doubles. */
static void exact_store_page(struct tvault *t, const char *query,
			     const char *other)
{
	size_t n, m, total, total_other;
	struct store_hit *a = tv_store_page(t, query, &n, &total);
	struct store_hit *b = tv_store_page(t, other, &m, &total_other);
	CU_ASSERT(n > 0);
	CU_ASSERT_EQUAL(n, m);
	CU_ASSERT_EQUAL(total, total_other);
	for (size_t i = 0; i < n && i < m; i++) {
		CU_ASSERT_STRING_EQUAL(a[i].path, b[i].path);
		CU_ASSERT(a[i].score == b[i].score);
	}
	store_hits_free(a, n);
	store_hits_free(b, m);
}

/* The checks of test_words_follow_writes: a common pair (its counts
 * those of its notes in memory), each word alone, and bm25()'s scores. */
static void words_check(struct tvault *t, sqlite3 *db)
{
	exact_store_page(t, "alpha beta", "alpha beta -qqzzx");
	exact_store_page(t, "alpha", "alpha -qqzzx");
	exact_store_page(t, "beta", "beta -qqzzx");
	size_t n, total;
	struct store_hit *h = tv_store_page(t, "beta alpha", &n, &total);
	for (size_t i = 0; i < n; i++) {
		double want = -(fts5_bm25(db, "alpha", h[i].path) +
				fts5_bm25(db, "beta", h[i].path));
		CU_ASSERT(fabs(h[i].score - want) <= 1e-9 * fabs(want));
	}
	store_hits_free(h, n);
}

static const char filler_words[] =
	"filler filler filler filler filler filler filler filler filler";

/* Writes that change a common word's notes, made through the tools. */
static const char *const word_writes[][2] = {
	/* The word added, taken out; a note gone, a new one. */
	{"update_note", "{\"name\": \"Note 001\", \"content\": \"alpha "
			"filler\"}"},
	{"update_note", "{\"name\": \"Note 003\", \"content\": \"filler "
			"filler beta\"}"},
	{"delete_note", "{\"name\": \"Note 006\"}"},
	{"create_note", "{\"name\": \"New\", \"content\": \"beta alpha "
			"alpha\"}"},
	/* Longer, shorter. */
	{"append_note", "{\"name\": \"Note 009\", \"text\": \"filler "
			"filler filler filler filler filler\"}"},
	{"update_note", "{\"name\": \"Note 012\", \"content\": \"alpha\"}"},
	{"update_note", "{\"name\": \"Note 000\", \"content\": \"beta "
			"beta\"}"},
	{"delete_note", "{\"name\": \"Note 018\"}"},
};

/* The common words' notes are kept across writes and brought up to date
 * with the notes each write changed (store_words.c): after each kind of
 * write, one at a time and several between two searches, and after more
 * writes than the log of changed notes holds, the pages and scores are
 * those of FTS5's own pass and of bm25(). */
static void test_words_follow_writes(void)
{
	struct tvault t;
	sqlite3 *db = graded_vault(&t, 240, "w", false);
	words_check(&t, db);
	for (size_t i = 0; i < ARRAY_SIZE(word_writes); i++) {
		cJSON_Delete(
			tv_call_json(&t, word_writes[i][0], word_writes[i][1]));
		words_check(&t, db);
	}
	/* Several writes between two searches: a few (the notes held are
	 * brought up to date), more (read afresh). */
	for (int i = 30; i < 39; i++) {
		char *a = xasprintf("{\"name\": \"Note %03d\", \"content\":"
				    " \"%s filler\"}",
				    i, i % 2 ? "alpha beta" : "filler");
		cJSON_Delete(tv_call_json(&t, "update_note", a));
		free(a);
		if (i == 32)
			words_check(&t, db);
	}
	words_check(&t, db);
	/* More writes than the log holds (its oldest go: what is older is
	 * read afresh), straight to the store: each committed alone, then
	 * in one commit; then one more. */
	struct store *st = vault_store(t.v);
	for (int round = 0; round < 2; round++) {
		if (round)
			CU_ASSERT(store_begin(st) == 0);
		for (int i = 0; i < 1100; i++) {
			char *p = xasprintf("w/Note %03d.md", 40 + i % 3);
			char *text =
				xasprintf("alpha %.*s", i % 50, filler_words);
			struct note *n = note_new(p, text, strlen(text), 0);
			CU_ASSERT(round || store_begin(st) == 0);
			CU_ASSERT(store_put(st, n, text, strlen(text)) == 0);
			CU_ASSERT(round || store_commit(st) == 0);
			note_free(n);
			free(text);
			free(p);
		}
		if (round)
			CU_ASSERT(store_commit(st) == 0);
		words_check(&t, db);
	}
	cJSON_Delete(tv_call_json(&t, "append_note",
				  "{\"name\": \"Note 045\", \"text\": "
				  "\"alpha\"}"));
	words_check(&t, db);
	sqlite3_close(db);
	tv_close(&t);
}

/* A snippet whose words are in two chunks of the stored text (about
 * DOCZ_CHUNK bytes each, cut at a space): both are read, the window is
 * whole; one inside a chunk reads that chunk alone, the same way. */
static void test_snippet_across_chunks(void)
{
	struct tvault t;
	tv_init(&t);
	struct sbuf b = {0};
	for (int i = 0; i < DOCZ_CHUNK / 3 - 1; i++)
		sb_puts(&b, "aa ");
	sb_puts(&b, "bb cc zebra ee ff gg hh\n");
	for (int i = 0; i < 1500; i++)
		sb_puts(&b, "jj ");
	sb_puts(&b, "kk okapi ll mm\n");
	tv_write(&t, "Long.md", b.s);
	sb_free(&b);
	open_indexed(&t);
	char *snip = tv_first_snippet(&t, "zebra");
	ASSERT_STR_EQ(snip, "\xe2\x80\xa6"
			    "aa bb cc **zebra** ee ff gg hh jj jj jj jj jj jj "
			    "jj jj jj jj jj jj");
	free(snip);
	snip = tv_first_snippet(&t, "okapi");
	ASSERT_STR_EQ(snip, "\xe2\x80\xa6"
			    "jj jj kk **okapi** ll mm");
	free(snip);
	tv_close(&t);
}

/* A window after ASCII text counted ahead of the tokenizer, and after
 * text it leaves to the tokenizer: a letter beyond ASCII in a word, a
 * separator beyond ASCII glued to words. */
static void test_snippet_after_ascii(void)
{
	struct tvault t;
	tv_init(&t);
	static const char *const lead[] = {"", "na\xc3\xafve ", "\xe2\x80\x94"};
	static const char *const want[] = {
		"\xe2\x80\xa6"
		"aa bb cc **zebra** dd",
		"\xe2\x80\xa6"
		"aa bb cc **zebra** dd",
		"\xe2\x80\xa6"
		"aa\xe2\x80\x94"
		"bb cc **zebra** dd",
	};
	for (size_t i = 0; i < ARRAY_SIZE(lead); i++) {
		struct sbuf b = {0};
		sb_puts(&b, i == 1 ? lead[1] : "");
		for (int k = 0; k < 300; k++)
			sb_printf(&b, "aa%s", i == 2 ? lead[2] : " ");
		sb_puts(&b, "bb cc zebra dd\n");
		char p[32];
		snprintf(p, sizeof(p), "A%zu.md", i);
		tv_write(&t, p, b.s);
		sb_free(&b);
	}
	open_indexed(&t);
	for (size_t i = 0; i < ARRAY_SIZE(lead); i++) {
		char q[32];
		snprintf(q, sizeof(q), "zebra title:A%zu", i);
		char *snip = tv_first_snippet(&t, q);
		ASSERT_STR_EQ(snip, want[i]);
		free(snip);
	}
	tv_close(&t);
}

/* One result's snippet into m (want NULL), or checked against want's
 * for the same path. */
static void snippet_of(const char *query, const cJSON *it, struct hmap *m,
		       struct hmap *want)
{
	const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
	const char *sn =
		cJSON_GetStringValue(cJSON_GetObjectItem(it, "snippet"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	sn = sn ? sn : "";
	if (!want) {
		hmap_put(m, p, xstrdup(sn));
		return;
	}
	const char *w = hmap_get(want, p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	if (strcmp(w, sn))
		fprintf(stderr, "  %s: %s\n    got:  %s\n    want: %s\n", query,
			p, sn, w);
	ASSERT_STR_EQ(sn, w);
}

/* The snippets of query's results, every page of limit, by path; or
 * each checked against want's (then NULL). */
struct snippets {
	const char *query;
	struct hmap *m, *want;
	size_t n;
};

static void snippets_page(const cJSON *r, void *ud)
{
	struct snippets *a = ud;
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "results"))
	{
		snippet_of(a->query, it, a->m, a->want);
		a->n++;
	}
}

static struct hmap *snippets_by_path(struct tvault *t, const char *query,
				     int limit, struct hmap *want)
{
	struct snippets a = {query, want ? NULL : hmap_new(), want, 0};
	each_page(t, query, limit, 200, snippets_page, &a);
	CU_ASSERT(a.n > 0);
	return a.m;
}

static void snippets_free(struct hmap *m)
{
	hmap_free_with(m, free);
}

/* A page's snippets made in one query over its notes' range of ids (a
 * rare word's; a filtered search's, the rest one by one past the notes
 * it reads at most) are those made one query per hit (pages of one
 * result; for a word alone, with a NOT that excludes nothing): a word
 * late in a note, in the title alone (the note's start), in a phrase,
 * among many of another. */
static void test_snippets_in_one_query(void)
{
	struct tvault t;
	tv_init(&t);
	for (int i = 0; i < 90; i++) {
		char p[64];
		struct sbuf b = {0};
		for (int k = 0; k < (i * 37) % 300; k++)
			sb_puts(&b, k % 2 ? "filler " : "reed ");
		if (i % 10)
			sb_printf(&b, "a grey heron%s stands\n",
				  i % 3 ? "" : " and an egret");
		else
			sb_puts(&b, "no bird here\n");
		snprintf(p, sizeof(p), "r/Heron %02d.md", i);
		tv_write(&t, p, b.s);
		sb_free(&b);
	}
	open_indexed(&t);
	static const char *const q[][2] = {
		{"heron folder:r", NULL},
		{"egret folder:r", NULL},
		{"grey heron folder:r", NULL},
		{"\"grey heron\" folder:r", NULL},
		{"egret reed folder:r", NULL},
		{"egret OR reed folder:r", NULL},
		{"egret", "egret -qqzzx"},
		{"heron", "heron -qqzzx"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(q); i++) {
		struct hmap *want =
			snippets_by_path(&t, q[i][1] ? q[i][1] : q[i][0],
					 q[i][1] ? 100 : 1, NULL);
		snippets_by_path(&t, q[i][0], 100, want);
		snippets_by_path(&t, q[i][0], 7, want);
		snippets_free(want);
	}
	tv_close(&t);
}

/* Big notes with a word on every line: ranking and snippets do bounded
 * work per note (FTS5's snippet() took minutes on 5 MB), the snippet is
 * the first hit's window wherever it is. */
static void test_big_notes(void)
{
	struct tvault t;
	tv_init(&t);
	struct sbuf b = {0};
	for (int i = 0; i < 100000; i++)
		sb_puts(&b, "the orchard grows plums in the orchard\n");
	tv_write(&t, "Big.md", b.s);
	b.len = 0;
	for (int i = 0; i < 50000; i++)
		sb_puts(&b, "nothing to see here, only filler words\n");
	sb_puts(&b, "and at the very end a lonely orchard appears.\n");
	tv_write(&t, "Late.md", b.s);
	sb_free(&b);
	/* A hit between CJK pairs and folded letters, chunks after the
	 * start of the stored text: the chunk's first position is right. */
	for (int i = 0; i < 3000; i++)
		sb_puts(&b, "研究知识管理 Ünïcode café, words-and-more\n");
	sb_puts(&b, "the hidden zebra stands here\n");
	for (int i = 0; i < 3000; i++)
		sb_puts(&b, "东京会议 naïve text\n");
	tv_write(&t, "Mixed.md", b.s);
	sb_free(&b);
	/* A window across the first cut between chunks (a space at or
	 * after DOCZ_CHUNK bytes). */
	for (int i = 0; i < DOCZ_CHUNK / 2 - 3; i++)
		sb_puts(&b, "x ");
	sb_puts(&b, "one two three four five six seven eight\n");
	tv_write(&t, "Across.md", b.s);
	sb_free(&b);
	tv_write(&t, "Orchard.md", "A short note.\n");
	tv_write(&t, "CJK.md", "我们正在研究知识管理系统的设计。\n");
	open_indexed(&t);
	expect_names(&t, "orchard", "Big,Orchard,Late");
	/* Side by side: any of the words, the notes with more first. */
	expect_names(&t, "orchard plums", "Big,Orchard,Late");
	expect_names(&t, "orchard AND plums", "Big");
	cJSON *r = ft(&t, "orchard plums", NULL);
	const char *snip = cJSON_GetStringValue(cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "results"), 0),
		"snippet"));
	/* About 64 characters; each word marked once. */
	CU_ASSERT_STRING_EQUAL(snip, "the **orchard** grows **plums** in the "
				     "orchard the orchard grows plums");
	cJSON_Delete(r);
	r = ft(&t, "lonely", NULL);
	snip = cJSON_GetStringValue(cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "results"), 0),
		"snippet"));
	CU_ASSERT_STRING_EQUAL(snip, "\xe2\x80\xa6"
				     "very end a "
				     "**lonely** orchard appears.");
	cJSON_Delete(r);
	char *mixed = tv_first_snippet(&t, "zebra");
	ASSERT_CONTAINS(mixed, "the hidden **zebra** stands here");
	free(mixed);
	char *across = tv_first_snippet(&t, "one");
	ASSERT_CONTAINS(across, "x x **one** two three four five six seven");
	free(across);
	/* A note over NOTE_MAX_INDEXED (sparse: no disk used) is named in
	 * the results of text searches, never silently left out. */
	char *huge = xasprintf("%s/Huge.md", t.dir);
	int fd = open(huge, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(ftruncate(fd, (off_t)NOTE_MAX_INDEXED + 1) == 0);
	close(fd);
	free(huge);
	vault_index_all(t.v, NULL, NULL, NULL);
	vault_fulltext_work(t.v);
	r = ft(&t, "orchard", NULL);
	const cJSON *ns = cJSON_GetObjectItem(r, "not_searched");
	CU_ASSERT(json_equal_text(cJSON_GetObjectItem(ns, "notes"),
				  "[\"Huge.md\"]"));
	ASSERT_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(ns, "why")),
			"64 MiB");
	cJSON_Delete(r);
	/* Overlapping CJK pairs: the whole word is marked once. */
	r = ft(&t, "管理系", NULL);
	snip = cJSON_GetStringValue(cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "results"), 0),
		"snippet"));
	ASSERT_CONTAINS(snip, "知识**管理系**统");
	cJSON_Delete(r);
	tv_close(&t);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"parse: atoms", test_parse_atoms},
		{"parse: operators", test_parse_operators},
		{"parse: precedence", test_parse_precedence},
		{"parse: errors say where", test_parse_errors},
		{"syntax against notes", test_syntax_against_notes},
		{"ranking: title, rare words", test_ranking},
		{"plain queries: any word, stems, stop words, CJK",
		 test_plain_queries},
		{"paging: every result once; bad cursors", test_paging},
		{"many tags: ten listed, the rest counted", test_many_tags},
		{"pruned ranking: the pages of ranking every hit",
		 test_pruned_pages},
		{"one word or phrase: ranked in one pass, scored by its count",
		 test_one_pass},
		{"common words ranked in memory", test_common_words},
		{"common words: notes' lengths follow writes",
		 test_lengths_change},
		{"common words: kept across writes, brought up to date",
		 test_words_follow_writes},
		{"common words read ahead: the same pages", test_read_ahead},
		{"a prefix alone ranked in memory: the same pages",
		 test_prefix_in_memory},
		{"typos among close words", test_typo_neighbours},
		{"a snippet across two chunks", test_snippet_across_chunks},
		{"a snippet after ASCII text and other",
		 test_snippet_after_ascii},
		{"snippets in one query: those of a query per hit",
		 test_snippets_in_one_query},
		{"a word in every note: the total without a count",
		 test_word_in_every_note},
		{"unicode: Cyrillic, diacritics, CJK", test_unicode},
		{"not_utf8_snippets", test_not_utf8_snippets},
		{"case_sensitive", test_case_sensitive},
		{"query errors and odd input", test_query_errors},
		{"index follows every write", test_follows_writes},
		{"content mode: index equals files",
		 test_content_same_as_files},
		{"restart reuses the index", test_restart_reuses_index},
		{"restart: big notes read once, index does not grow",
		 test_restart_big_notes},
		{"restart reuses big notes", test_restart_reuses_big_notes},
		{"damaged index is rebuilt", test_damaged_index_rebuilt},
		{"first build in the background", test_first_build},
		{"writes during a first build", test_writes_during_first_build},
		{"big notes: bounded rank and snippet", test_big_notes},
	};
	return run_tests("search", tests, ARRAY_SIZE(tests));
}
