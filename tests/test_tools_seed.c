/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Seed 000 (name-based Obsidian MCP server with tag policy and
 * auto-context): one test per test case TC1-TC68 (there is no TC13).
 * "raises ValueError(X)" maps to an is_error tool result with text X.
 */
#include "testutil.h"
#include "context.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MISSING_DESCRIPTION                                                  \
	"\xe2\x9a\xa0\xef\xb8\x8f No description. Claude, please add a "     \
	"'description' field to this note's frontmatter explaining when to " \
	"read it."
#define EM_DASH "\xe2\x80\x94"
#define PROHIBITION "NEVER create new tags without explicit user permission."

/* ---- helpers ---------------------------------------------------------- */

/* A call whose JSON result must equal `want` (structurally). */
static void expect_json(struct tvault *t, const char *tool, const char *args,
			const char *want)
{
	cJSON *j = tv_call_json(t, tool, args);
	CU_ASSERT_PTR_NOT_NULL(j);
	CU_ASSERT(json_equal_text(j, want));
	cJSON_Delete(j);
}

/* A call that must fail with exactly `want`. */
static void expect_err(struct tvault *t, const char *tool, const char *args,
		       const char *want)
{
	char *msg = tv_call_err(t, tool, args);
	CU_ASSERT_PTR_NOT_NULL(msg);
	ASSERT_STR_EQ(msg, want);
	free(msg);
}

/* A call that must fail with a text containing `part` (NULL: any). */
static void expect_err_has(struct tvault *t, const char *tool, const char *args,
			   const char *part)
{
	char *msg = tv_call_err(t, tool, args);
	CU_ASSERT_PTR_NOT_NULL(msg);
	if (part) {
		if (msg && !strstr(msg, part))
			fprintf(stderr, "  error '%s' lacks '%s'\n", msg, part);
		ASSERT_CONTAINS(msg, part);
	}
	free(msg);
}

/* A tool's text result (plain or JSON); caller frees. */
static char *call_text(struct tvault *t, const char *tool, const char *args)
{
	struct tool_result r;
	tv_call(t, tool, args, &r);
	CU_ASSERT_FALSE(r.is_error);
	if (r.is_error)
		fprintf(stderr, "  %s(%s) failed: %s\n", tool, args ? args : "",
			r.text);
	char *s = r.text ? strdup(r.text) : NULL;
	tool_result_clear(&r);
	return s;
}

static void expect_file(struct tvault *t, const char *rel, const char *want)
{
	char *s = tv_read(t, rel);
	CU_ASSERT_PTR_NOT_NULL(s);
	ASSERT_STR_EQ(s, want);
	free(s);
}

static void expect_file_has(struct tvault *t, const char *rel, const char *part)
{
	char *s = tv_read(t, rel);
	CU_ASSERT_PTR_NOT_NULL(s);
	ASSERT_CONTAINS(s, part);
	free(s);
}

/* The note's frontmatter (from get_note_metadata) equals `want`. */
static void expect_frontmatter(struct tvault *t, const char *name,
			       const char *want)
{
	char args[256];
	snprintf(args, sizeof(args), "{\"name\": \"%s\"}", name);
	cJSON *j = tv_call_json(t, "get_note_metadata", args);
	CU_ASSERT_PTR_NOT_NULL(j);
	CU_ASSERT(json_equal_text(cJSON_GetObjectItem(j, "frontmatter"), want));
	cJSON_Delete(j);
}

/* Sorted result names of search_notes equal the comma list `want`. */
static void expect_search(struct tvault *t, const char *args, const char *want)
{
	cJSON *j = tv_call_json(t, "search_notes", args);
	CU_ASSERT_PTR_NOT_NULL(j);
	cJSON *res = cJSON_GetObjectItem(j, "results");
	CU_ASSERT(cJSON_IsArray(res));
	char got[512] = "";
	/* Collect names, then sort by a simple insertion into the string. */
	const char *names[32];
	size_t n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, res)
	{
		const cJSON *nm = cJSON_GetObjectItem(it, "name");
		CU_ASSERT(cJSON_IsString(nm));
		if (cJSON_IsString(nm) && n < 32)
			names[n++] = nm->valuestring;
		CU_ASSERT(cJSON_IsString(cJSON_GetObjectItem(it, "path")));
	}
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && strcmp(names[k - 1], names[k]) > 0;
		     k--) {
			const char *x = names[k];
			names[k] = names[k - 1];
			names[k - 1] = x;
		}
	for (size_t i = 0; i < n; i++) {
		if (i)
			strncat(got, ",", sizeof(got) - strlen(got) - 1);
		strncat(got, names[i], sizeof(got) - strlen(got) - 1);
	}
	if (strcmp(got, want))
		fprintf(stderr, "  search %s: got [%s], want [%s]\n", args, got,
			want);
	CU_ASSERT_STRING_EQUAL(got, want);
	cJSON_Delete(j);
}

/*
 * One MCP session: the context block is built once when the vault is
 * opened; each tool result passes through context_inject().
 */
struct session {
	struct tvault *t;
	char *block;
	bool injected;
};

static void session_start(struct session *s, struct tvault *t)
{
	s->t = t;
	s->block = context_block(t->v);
	s->injected = false;
}

static void session_end(struct session *s)
{
	free(s->block);
	s->block = NULL;
}

/* Returns the injected result; *ret_raw (if given) the tool's own text. */
static char *session_call(struct session *s, const char *tool, const char *args,
			  char **ret_raw)
{
	struct tool_result r;
	tv_call(s->t, tool, args, &r);
	CU_ASSERT_FALSE(r.is_error);
	char *out = context_inject(&s->injected, s->block, r.text);
	if (ret_raw)
		*ret_raw = strdup(r.text);
	tool_result_clear(&r);
	return out;
}

/* The "## Allowed tags" section of an injected result (points into it). */
static const char *allowed_section(const char *text)
{
	return text ? strstr(text, "## Allowed tags") : NULL;
}

static bool tag_char(char c)
{
	return isalnum((unsigned char)c) || c == '/' || c == '_' || c == '-' ||
	       (unsigned char)c >= 0x80;
}

/* How often `tag` appears as a whole tag in the allowed-tags section. */
static int tag_count(const char *section, const char *tag)
{
	int n = 0;
	size_t l = strlen(tag);
	if (!section)
		return 0;
	for (const char *p = section; (p = strstr(p, tag)); p += l) {
		bool start = p == section || !tag_char(p[-1]);
		bool end = !tag_char(p[l]);
		n += start && end;
	}
	return n;
}

/* ---- TC1-TC12: basic tools -------------------------------------------- */

static void tc1_read_note(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "Hello");
	tv_open(&t);
	char *s = call_text(&t, "read_note", "{\"name\": \"test\"}");
	ASSERT_STR_EQ(s, "Hello");
	free(s);
	tv_close(&t);
}

static void tc2_read_note_not_found(void)
{
	struct tvault t;
	tv_init(&t);
	tv_open(&t);
	expect_err(&t, "read_note", "{\"name\": \"nonexistent\"}",
		   "Note 'nonexistent' not found");
	tv_close(&t);
}

static void tc3_create_note_basic(void)
{
	struct tvault t;
	tv_init(&t);
	tv_open(&t);
	cJSON *j = tv_call_json(&t, "create_note",
				"{\"name\": \"test\", \"content\": \"Hello\"}");
	CU_ASSERT_PTR_NOT_NULL(j);
	const cJSON *nm = cJSON_GetObjectItem(j, "name");
	CU_ASSERT(cJSON_IsString(nm));
	ASSERT_STR_EQ(cJSON_GetStringValue(nm), "test");
	CU_ASSERT(cJSON_IsString(cJSON_GetObjectItem(j, "path")));
	cJSON_Delete(j);
	CU_ASSERT(tv_exists(&t, "test.md"));
	expect_file(&t, "test.md", "Hello");
	tv_close(&t);
}

static void tc4_create_note_with_frontmatter(void)
{
	struct tvault t;
	tv_init(&t);
	tv_open(&t);
	cJSON *j = tv_call_json(
		&t, "create_note",
		"{\"name\": \"test\", "
		"\"frontmatter\": \"{\\\"tags\\\": [\\\"vc\\\"]}\"}");
	CU_ASSERT_PTR_NOT_NULL(j);
	ASSERT_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(j, "name")),
		      "test");
	cJSON_Delete(j);
	CU_ASSERT(tv_exists(&t, "test.md"));
	expect_file_has(&t, "test.md", "---\n");
	expect_frontmatter(&t, "test", "{\"tags\": [\"vc\"]}");
	tv_close(&t);
}

static void tc5_append_note(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "Line1");
	tv_open(&t);
	expect_json(&t, "append_note",
		    "{\"name\": \"test\", \"text\": \"Line2\"}",
		    "{\"name\": \"test\", \"status\": \"appended\"}");
	expect_file(&t, "test.md", "Line1\n\nLine2");
	tv_close(&t);
}

static void tc6_update_note(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "---\ntags: [a]\n---\nOld");
	tv_open(&t);
	expect_json(&t, "update_note",
		    "{\"name\": \"test\", \"content\": \"New\"}",
		    "{\"name\": \"test\", \"status\": \"updated\"}");
	/* Frontmatter bytes preserved, body replaced. */
	expect_file(&t, "test.md", "---\ntags: [a]\n---\nNew");
	expect_frontmatter(&t, "test", "{\"tags\": [\"a\"]}");
	tv_close(&t);
}

static void tc7_delete_note(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "See [[B]] here");
	tv_write(&t, "B.md", "I am B");
	tv_open(&t);
	cJSON *j = tv_call_json(&t, "delete_note", "{\"name\": \"B\"}");
	CU_ASSERT_PTR_NOT_NULL(j);
	CU_ASSERT(json_equal_text(cJSON_GetObjectItem(j, "files_updated"),
				  "[\"A\"]"));
	cJSON_Delete(j);
	CU_ASSERT_FALSE(tv_exists(&t, "B.md"));
	CU_ASSERT(tv_exists(&t, ".trash/B.md"));
	expect_file(&t, ".trash/B.md", "I am B");
	expect_file(&t, "A.md", "See [[B (deleted)]] here");
	tv_close(&t);
}

static void tc8_delete_note_dry_run(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "See [[B]] here");
	tv_write(&t, "B.md", "I am B");
	tv_open(&t);
	cJSON *j = tv_call_json(&t, "delete_note",
				"{\"name\": \"B\", \"dry_run\": true}");
	CU_ASSERT_PTR_NOT_NULL(j);
	CU_ASSERT_PTR_NOT_NULL(cJSON_GetObjectItem(j, "plan"));
	cJSON_Delete(j);
	/* Nothing changed on disk. */
	expect_file(&t, "A.md", "See [[B]] here");
	expect_file(&t, "B.md", "I am B");
	CU_ASSERT_FALSE(tv_exists(&t, ".trash"));
	char *s = call_text(&t, "read_note", "{\"name\": \"B\"}");
	ASSERT_STR_EQ(s, "I am B");
	free(s);
	tv_close(&t);
}

static void tc9_rename_note(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "See [[B]] here");
	tv_write(&t, "B.md", "I am B");
	tv_open(&t);
	cJSON *j =
		tv_call_json(&t, "rename_note",
			     "{\"old_name\": \"B\", \"new_name\": \"B_new\"}");
	CU_ASSERT_PTR_NOT_NULL(j);
	CU_ASSERT(cJSON_IsObject(j));
	cJSON_Delete(j);
	CU_ASSERT_FALSE(tv_exists(&t, "B.md"));
	expect_file(&t, "B_new.md", "I am B");
	expect_file_has(&t, "A.md", "[[B_new]]");
	expect_file(&t, "A.md", "See [[B_new]] here");
	tv_close(&t);
}

static void tc10_search_notes(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "alpha.md", "a");
	tv_write(&t, "beta.md", "b");
	tv_open(&t);
	expect_search(&t, "{\"query\": \"alph\"}", "alpha");
	tv_close(&t);
}

static void tc11_search_notes_by_tag(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "---\ntags: [vc/project]\n---\nbody");
	tv_open(&t);
	expect_search(&t, "{\"query\": \"vc\", \"mode\": \"tag\"}", "test");
	tv_close(&t);
}

static void tc12_get_links(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "to [[B]]");
	tv_write(&t, "B.md", "b");
	tv_write(&t, "C.md", "to [[A]]");
	tv_open(&t);
	cJSON *j = tv_call_json(&t, "get_links",
				"{\"name\": \"A\", \"direction\": \"both\"}");
	CU_ASSERT_PTR_NOT_NULL(j);
	CU_ASSERT(
		json_equal_text(cJSON_GetObjectItem(j, "outgoing"), "[\"B\"]"));
	CU_ASSERT(
		json_equal_text(cJSON_GetObjectItem(j, "incoming"), "[\"C\"]"));
	cJSON_Delete(j);
	tv_close(&t);
}

/* ---- TC14-TC16a: frontmatter, list_notes ------------------------------- */

static void tc14_set_frontmatter(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "Hello");
	tv_open(&t);
	expect_json(
		&t, "set_frontmatter",
		"{\"name\": \"test\", \"key\": \"status\", \"value\": \"done\"}",
		"{\"name\": \"test\", \"key\": \"status\", \"value\": \"done\"}");
	expect_frontmatter(&t, "test", "{\"status\": \"done\"}");
	expect_file_has(&t, "test.md", "Hello");
	tv_close(&t);
}

static void three_notes(struct tvault *t)
{
	tv_init(t);
	tv_write(t, "alpha.md", "a");
	tv_write(t, "beta.md", "b");
	tv_write(t, "gamma.md", "g");
	tv_open(t);
}

static void tc15_list_notes_paginated(void)
{
	struct tvault t;
	three_notes(&t);
	expect_json(&t, "list_notes", "{\"limit\": 2, \"offset\": 0}",
		    "{\"names\": [\"alpha\", \"beta\"], \"total\": 3, "
		    "\"limit\": 2, \"offset\": 0}");
	tv_close(&t);
}

static void tc16_list_notes_empty_vault(void)
{
	struct tvault t;
	tv_init(&t);
	tv_open(&t);
	expect_json(&t, "list_notes", "{}",
		    "{\"names\": [], \"total\": 0, \"limit\": 100, "
		    "\"offset\": 0}");
	tv_close(&t);
}

static void tc16a_list_notes_offset(void)
{
	struct tvault t;
	three_notes(&t);
	expect_json(&t, "list_notes", "{\"limit\": 2, \"offset\": 2}",
		    "{\"names\": [\"gamma\"], \"total\": 3, \"limit\": 2, "
		    "\"offset\": 2}");
	tv_close(&t);
}

/* ---- TC17-TC28: auto-context and tag policy ---------------------------- */

static void tc17_autocontext_first_result(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "My Rules.md",
		 "---\ntags: [claude]\ndescription: Read before writing text\n"
		 "---\nRules");
	tv_open(&t);
	struct session s;
	session_start(&s, &t);
	char *raw = NULL;
	char *out = session_call(&s, "list_notes", "{}", &raw);
	char *want = NULL;
	if (raw && s.block) {
		size_t n = strlen(raw) + strlen(s.block) + 16;
		want = malloc(n);
		snprintf(want, n, "%s\n\n---\n%s\n---", raw, s.block);
	}
	ASSERT_STR_EQ(out, want ? want : "(want)");
	ASSERT_CONTAINS(out, "\n\n---\n## Your personal notes");
	ASSERT_CONTAINS(out,
			"\"My Rules\" " EM_DASH " Read before writing text");
	CU_ASSERT(out && strlen(out) >= 4 &&
		  strcmp(out + strlen(out) - 4, "\n---") == 0);
	free(want);
	free(raw);
	free(out);
	session_end(&s);
	tv_close(&t);
}

static void tc18_autocontext_not_in_second_result(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "My Rules.md",
		 "---\ntags: [claude]\ndescription: Read before writing text\n"
		 "---\nRules");
	tv_write(&t, "test.md", "Hello");
	tv_open(&t);
	struct session s;
	session_start(&s, &t);
	char *first = session_call(&s, "list_notes", "{}", NULL);
	ASSERT_CONTAINS(first, "## Your personal notes");
	char *raw = NULL;
	char *second =
		session_call(&s, "read_note", "{\"name\": \"test\"}", &raw);
	ASSERT_STR_EQ(second, "Hello");
	ASSERT_STR_EQ(second, raw ? raw : "(raw)");
	ASSERT_NOT_CONTAINS(second, "## Your personal notes");
	free(first);
	free(second);
	free(raw);
	session_end(&s);
	tv_close(&t);
}

static void tc19_autocontext_no_notes_hint(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "x.md", "---\ntags: [vc]\n---\nbody");
	tv_open(&t);
	struct session s;
	session_start(&s, &t);
	char *out = session_call(&s, "list_notes", "{}", NULL);
	ASSERT_CONTAINS(out, "\n\n---\n## Your personal notes");
	ASSERT_CONTAINS(out, "No personal notes found");
	ASSERT_CONTAINS(out, "claude");
	free(out);
	session_end(&s);
	tv_close(&t);
}

static void tc20_autocontext_missing_description(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "No Desc.md", "---\ntags: [claude]\n---\nbody");
	tv_open(&t);
	struct session s;
	session_start(&s, &t);
	char *out = session_call(&s, "list_notes", "{}", NULL);
	ASSERT_CONTAINS(out, "## Your personal notes");
	ASSERT_CONTAINS(out, "\"No Desc\" " EM_DASH " " MISSING_DESCRIPTION);
	free(out);
	session_end(&s);
	tv_close(&t);
}

/* Python: no global _ops. C: two vaults live in one process at once and
 * tools on one never see the other's notes. */
static void tc21_no_global_singleton(void)
{
	struct tvault a, b;
	tv_init(&a);
	tv_init(&b);
	tv_write(&a, "only_a.md", "from A");
	tv_write(&b, "only_b.md", "from B");
	tv_open(&a);
	tv_open(&b);
	expect_json(&a, "list_notes", "{}",
		    "{\"names\": [\"only_a\"], \"total\": 1, \"limit\": 100, "
		    "\"offset\": 0}");
	expect_json(&b, "list_notes", "{}",
		    "{\"names\": [\"only_b\"], \"total\": 1, \"limit\": 100, "
		    "\"offset\": 0}");
	expect_err(&a, "read_note", "{\"name\": \"only_b\"}",
		   "Note 'only_b' not found");
	expect_err(&b, "read_note", "{\"name\": \"only_a\"}",
		   "Note 'only_a' not found");
	/* A write through one vault does not show up in the other. */
	cJSON *j = tv_call_json(&a, "create_note",
				"{\"name\": \"new_a\", \"content\": \"x\"}");
	CU_ASSERT_PTR_NOT_NULL(j);
	cJSON_Delete(j);
	CU_ASSERT(tv_exists(&a, "new_a.md"));
	CU_ASSERT_FALSE(tv_exists(&b, "new_a.md"));
	expect_err(&b, "read_note", "{\"name\": \"new_a\"}",
		   "Note 'new_a' not found");
	tv_close(&a);
	tv_close(&b);
}

/* Python: one Vault shared by the context block and Operations. C: a note
 * created through tools_call on v appears in context_block(v). */
static void tc22_single_vault_instance(void)
{
	struct tvault t;
	tv_init(&t);
	tv_open(&t);
	cJSON *j = tv_call_json(
		&t, "create_note",
		"{\"name\": \"Rules\", \"content\": \"r\", \"frontmatter\": "
		"\"{\\\"tags\\\": [\\\"claude\\\"], \\\"description\\\": "
		"\\\"Use me first\\\"}\"}");
	CU_ASSERT_PTR_NOT_NULL(j);
	cJSON_Delete(j);
	char *block = context_block(t.v);
	ASSERT_CONTAINS(block, "\"Rules\" " EM_DASH " Use me first");
	CU_ASSERT_EQUAL(tag_count(allowed_section(block), "claude"), 1);
	free(block);
	tv_close(&t);
}

static void tc23_tag_policy_first_result(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "a.md", "---\ntags: [vc]\n---\na");
	tv_write(&t, "b.md", "---\ntags: [vc/project]\n---\nb");
	tv_write(&t, "@Jane.md", "---\ntags: [Person]\n---\nc");
	tv_open(&t);
	struct session s;
	session_start(&s, &t);
	char *out = session_call(&s, "list_notes", "{}", NULL);
	const char *sec = allowed_section(out);
	CU_ASSERT_PTR_NOT_NULL(sec);
	CU_ASSERT_EQUAL(tag_count(sec, "vc"), 1);
	CU_ASSERT_EQUAL(tag_count(sec, "vc/project"), 1);
	CU_ASSERT_EQUAL(tag_count(sec, "Person"), 1);
	ASSERT_CONTAINS(sec, PROHIBITION);
	free(out);
	session_end(&s);
	tv_close(&t);
}

static void tc24_tag_policy_empty_vault(void)
{
	struct tvault t;
	tv_init(&t);
	tv_open(&t);
	struct session s;
	session_start(&s, &t);
	char *out = session_call(&s, "list_notes", "{}", NULL);
	ASSERT_CONTAINS(out, "\n\n---\n");
	ASSERT_CONTAINS(out, "## Your personal notes");
	ASSERT_CONTAINS(out, "No personal notes found");
	const char *sec = allowed_section(out);
	CU_ASSERT_PTR_NOT_NULL(sec);
	ASSERT_CONTAINS(sec, "No tags");
	ASSERT_CONTAINS(sec, PROHIBITION);
	free(out);
	session_end(&s);
	tv_close(&t);
}

static void tc25_tag_policy_dedup(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "one.md", "---\ntags: [vc]\n---\n1");
	tv_write(&t, "two.md", "---\ntags: [vc]\n---\n2");
	tv_open(&t);
	struct session s;
	session_start(&s, &t);
	char *out = session_call(&s, "list_notes", "{}", NULL);
	const char *sec = allowed_section(out);
	CU_ASSERT_PTR_NOT_NULL(sec);
	CU_ASSERT_EQUAL(tag_count(sec, "vc"), 1);
	free(out);
	session_end(&s);
	tv_close(&t);
}

/* Python: instructions are the base text only. C: the context block is
 * built from notes only; a CLAUDE.md file's text never gets into it. */
static void tc26_instructions_base_only(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "My Rules.md",
		 "---\ntags: [claude]\ndescription: Read before writing text\n"
		 "---\nRULES-BODY-TEXT");
	tv_write(&t, "CLAUDE.md", "SECRET-CLAUDE-MD-RULE: always say hi");
	tv_open(&t);
	char *block = context_block(t.v);
	ASSERT_CONTAINS(block,
			"\"My Rules\" " EM_DASH " Read before writing text");
	ASSERT_NOT_CONTAINS(block, "SECRET-CLAUDE-MD-RULE");
	ASSERT_NOT_CONTAINS(block, "RULES-BODY-TEXT");
	free(block);
	tv_close(&t);
}

/* No CLAUDE.md mechanism: CLAUDE.md is an ordinary note named CLAUDE. */
static void tc27_no_claude_md_mechanism(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "CLAUDE.md", "ZZZ-CLAUDE-MD-CONTENT");
	tv_open(&t);
	char *block = context_block(t.v);
	CU_ASSERT_PTR_NOT_NULL(block);
	ASSERT_NOT_CONTAINS(block, "ZZZ-CLAUDE-MD-CONTENT");
	ASSERT_NOT_CONTAINS(block, "\"CLAUDE\"");
	ASSERT_CONTAINS(block, "No personal notes found");
	free(block);
	expect_json(&t, "list_notes", "{}",
		    "{\"names\": [\"CLAUDE\"], \"total\": 1, \"limit\": 100, "
		    "\"offset\": 0}");
	char *s = call_text(&t, "read_note", "{\"name\": \"CLAUDE\"}");
	ASSERT_STR_EQ(s, "ZZZ-CLAUDE-MD-CONTENT");
	free(s);
	tv_close(&t);
}

static void tc28_context_block_empty_vault(void)
{
	struct tvault t;
	tv_init(&t);
	tv_open(&t);
	char *block = context_block(t.v);
	CU_ASSERT(block && *block);
	ASSERT_CONTAINS(block, "## Your personal notes");
	ASSERT_CONTAINS(block, "No personal notes found");
	ASSERT_CONTAINS(block, "## Allowed tags");
	ASSERT_CONTAINS(allowed_section(block), "No tags");
	/* Still injected: the hints are useful. */
	bool injected = false;
	char *out = context_inject(&injected, block, "R");
	CU_ASSERT(injected);
	char *want = NULL;
	if (block) {
		size_t n = strlen(block) + 16;
		want = malloc(n);
		snprintf(want, n, "R\n\n---\n%s\n---", block);
	}
	ASSERT_STR_EQ(out, want ? want : "(want)");
	char *again = context_inject(&injected, block, "R2");
	ASSERT_STR_EQ(again, "R2");
	free(again);
	free(want);
	free(out);
	free(block);
	tv_close(&t);
}

/* ---- TC29-TC38: text and section edits --------------------------------- */

static void tc29_replace_text(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "foo bar foo");
	tv_open(&t);
	expect_json(&t, "replace_text",
		    "{\"name\": \"test\", \"old_text\": \"foo\", "
		    "\"new_text\": \"baz\"}",
		    "{\"name\": \"test\", \"replaced\": 1}");
	expect_file(&t, "test.md", "baz bar foo");
	tv_close(&t);
}

static void tc30_replace_text_replace_all(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "foo bar foo");
	tv_open(&t);
	expect_json(&t, "replace_text",
		    "{\"name\": \"test\", \"old_text\": \"foo\", "
		    "\"new_text\": \"baz\", \"replace_all\": true}",
		    "{\"name\": \"test\", \"replaced\": 2}");
	expect_file(&t, "test.md", "baz bar baz");
	tv_close(&t);
}

static void tc31_replace_text_not_found(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "hello");
	tv_open(&t);
	expect_err_has(&t, "replace_text",
		       "{\"name\": \"test\", \"old_text\": \"xyz\", "
		       "\"new_text\": \"abc\"}",
		       NULL);
	expect_file(&t, "test.md", "hello");
	tv_close(&t);
}

static void tc32_insert_text_after(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "line1\nline2");
	tv_open(&t);
	expect_json(&t, "insert_text",
		    "{\"name\": \"test\", \"text\": \"inserted\", "
		    "\"after\": \"line1\"}",
		    "{\"name\": \"test\", \"position\": \"after\", "
		    "\"pattern\": \"line1\"}");
	tv_close(&t);
}

static void tc33_insert_text_before(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "line1\nline2");
	tv_open(&t);
	expect_json(&t, "insert_text",
		    "{\"name\": \"test\", \"text\": \"inserted\", "
		    "\"before\": \"line2\"}",
		    "{\"name\": \"test\", \"position\": \"before\", "
		    "\"pattern\": \"line2\"}");
	tv_close(&t);
}

static void tc34_insert_text_both_params(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "a\nb");
	tv_open(&t);
	expect_err(&t, "insert_text",
		   "{\"name\": \"test\", \"text\": \"x\", \"before\": \"a\", "
		   "\"after\": \"b\"}",
		   "Exactly one of 'before' or 'after' must be provided");
	expect_file(&t, "test.md", "a\nb");
	tv_close(&t);
}

static void tc35_insert_text_neither_param(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "a\nb");
	tv_open(&t);
	expect_err(&t, "insert_text", "{\"name\": \"test\", \"text\": \"x\"}",
		   "Exactly one of 'before' or 'after' must be provided");
	expect_file(&t, "test.md", "a\nb");
	tv_close(&t);
}

static void tc36_read_section(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "# Intro\nHello\n# Other\nWorld");
	tv_open(&t);
	char *s = call_text(&t, "read_section",
			    "{\"name\": \"test\", \"section\": \"Intro\"}");
	ASSERT_STR_EQ(s, "Hello");
	/* Plain text, not JSON. */
	cJSON *j = s ? cJSON_Parse(s) : NULL;
	CU_ASSERT_PTR_NULL(j);
	cJSON_Delete(j);
	free(s);
	tv_close(&t);
}

static void tc37_read_section_not_found(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "# Intro\nHello");
	tv_open(&t);
	expect_err_has(&t, "read_section",
		       "{\"name\": \"test\", \"section\": \"Missing\"}", NULL);
	tv_close(&t);
}

static void tc38_append_section(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "# Intro\nHello\n# Other\nWorld");
	tv_open(&t);
	expect_json(&t, "append_section",
		    "{\"name\": \"test\", \"section\": \"Intro\", "
		    "\"text\": \"More\"}",
		    "{\"name\": \"test\", \"section\": \"Intro\", "
		    "\"status\": \"appended\"}");
	tv_close(&t);
}

/* ---- TC39-TC45: tag validation, argument errors ------------------------ */

static void vc_person_vault(struct tvault *t)
{
	tv_init(t);
	tv_write(t, "x.md", "---\ntags: [vc]\n---\nx");
	tv_write(t, "@Jane.md", "---\ntags: [Person]\n---\nj");
}

static void tc39_create_note_invalid_tags(void)
{
	struct tvault t;
	vc_person_vault(&t);
	tv_open(&t);
	char *msg = tv_call_err(
		&t, "create_note",
		"{\"name\": \"new\", \"frontmatter\": "
		"\"{\\\"tags\\\": [\\\"vc\\\", \\\"career\\\"]}\"}");
	CU_ASSERT_PTR_NOT_NULL(msg);
	ASSERT_CONTAINS(msg, "Tags not in allowed list: ['career']");
	ASSERT_CONTAINS(msg, "Allowed: ");
	ASSERT_CONTAINS(msg, "Allowed: ['Person', 'vc']");
	free(msg);
	CU_ASSERT_FALSE(tv_exists(&t, "new.md"));
	tv_close(&t);
}

static void tc40_create_note_valid_tags(void)
{
	struct tvault t;
	vc_person_vault(&t);
	tv_open(&t);
	cJSON *j = tv_call_json(&t, "create_note",
				"{\"name\": \"new\", \"frontmatter\": "
				"\"{\\\"tags\\\": [\\\"vc\\\"]}\"}");
	CU_ASSERT_PTR_NOT_NULL(j);
	ASSERT_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(j, "name")),
		      "new");
	cJSON_Delete(j);
	CU_ASSERT(tv_exists(&t, "new.md"));
	expect_frontmatter(&t, "new", "{\"tags\": [\"vc\"]}");
	tv_close(&t);
}

static void tc41_set_frontmatter_tags_validated(void)
{
	struct tvault t;
	vc_person_vault(&t);
	tv_write(&t, "test.md", "Hello");
	tv_open(&t);
	expect_err_has(&t, "set_frontmatter",
		       "{\"name\": \"test\", \"key\": \"tags\", "
		       "\"value\": \"[\\\"vc\\\", \\\"unknown\\\"]\"}",
		       "Tags not in allowed list: ['unknown']");
	expect_file(&t, "test.md", "Hello");
	tv_close(&t);
}

static void tc42_set_frontmatter_non_tags_key(void)
{
	struct tvault t;
	vc_person_vault(&t);
	tv_write(&t, "test.md", "Hello");
	tv_open(&t);
	expect_json(
		&t, "set_frontmatter",
		"{\"name\": \"test\", \"key\": \"status\", \"value\": \"done\"}",
		"{\"name\": \"test\", \"key\": \"status\", \"value\": \"done\"}");
	expect_frontmatter(&t, "test", "{\"status\": \"done\"}");
	tv_close(&t);
}

static void tc43_create_note_invalid_json(void)
{
	struct tvault t;
	tv_init(&t);
	tv_open(&t);
	expect_err_has(
		&t, "create_note",
		"{\"name\": \"test\", \"frontmatter\": \"{invalid json}\"}",
		"Invalid frontmatter JSON");
	CU_ASSERT_FALSE(tv_exists(&t, "test.md"));
	tv_close(&t);
}

static void tc44_search_notes_invalid_mode(void)
{
	struct tvault t;
	three_notes(&t);
	expect_err(&t, "search_notes",
		   "{\"query\": \"test\", \"mode\": \"invalid\"}",
		   "Invalid search mode: invalid. Valid: name, name_partial, "
		   "content, tag, fulltext");
	tv_close(&t);
}

static void tc45_get_links_invalid_direction(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "t");
	tv_open(&t);
	expect_err(&t, "get_links",
		   "{\"name\": \"test\", \"direction\": \"invalid\"}",
		   "Invalid direction: invalid. Valid: in, out, both");
	tv_close(&t);
}

/* ---- TC46-TC53: add_tag / remove_tag and tag rules --------------------- */

static void tc46_add_tag_basic(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "---\ntags: [vc]\n---\nbody");
	tv_write(&t, "other.md", "---\ntags: [Person]\n---\nbody");
	tv_open(&t);
	expect_err_has(&t, "add_tag",
		       "{\"name\": \"test\", \"tag\": \"Person\"}",
		       "note name must start with '@'");
	expect_file(&t, "test.md", "---\ntags: [vc]\n---\nbody");
	tv_close(&t);
}

static void tc47_add_tag_person_to_at_note(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "@John.md", "---\ntags: []\n---\nbody");
	tv_write(&t, "other.md", "---\ntags: [Person]\n---\nbody");
	tv_open(&t);
	expect_json(&t, "add_tag", "{\"name\": \"@John\", \"tag\": \"Person\"}",
		    "{\"name\": \"@John\", \"tags\": [\"Person\"]}");
	expect_frontmatter(&t, "@John", "{\"tags\": [\"Person\"]}");
	tv_close(&t);
}

static void tc48_add_tag_claude_without_description(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "body");
	tv_write(&t, "other.md",
		 "---\ntags: [claude]\ndescription: d\n---\nbody");
	tv_open(&t);
	expect_err_has(&t, "add_tag",
		       "{\"name\": \"test\", \"tag\": \"claude\"}",
		       "Requires 'description' field");
	expect_file(&t, "test.md", "body");
	tv_close(&t);
}

static void tc49_add_tag_claude_with_description(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "---\ndescription: My rules\n---\nbody");
	tv_write(&t, "other.md",
		 "---\ntags: [claude]\ndescription: d\n---\nbody");
	tv_open(&t);
	expect_json(&t, "add_tag", "{\"name\": \"test\", \"tag\": \"claude\"}",
		    "{\"name\": \"test\", \"tags\": [\"claude\"]}");
	expect_frontmatter(
		&t, "test",
		"{\"description\": \"My rules\", \"tags\": [\"claude\"]}");
	tv_close(&t);
}

static void tc50_remove_tag_basic(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "---\ntags: [vc, project]\n---\nbody");
	tv_open(&t);
	expect_json(&t, "remove_tag", "{\"name\": \"test\", \"tag\": \"vc\"}",
		    "{\"name\": \"test\", \"tags\": [\"project\"], "
		    "\"removed\": true}");
	expect_frontmatter(&t, "test", "{\"tags\": [\"project\"]}");
	tv_close(&t);
}

static void tc51_remove_tag_not_present(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "---\ntags: [vc]\n---\nbody");
	tv_open(&t);
	expect_json(
		&t, "remove_tag", "{\"name\": \"test\", \"tag\": \"project\"}",
		"{\"name\": \"test\", \"tags\": [\"vc\"], \"removed\": false}");
	expect_file(&t, "test.md", "---\ntags: [vc]\n---\nbody");
	tv_close(&t);
}

static void tc52_create_note_person_non_at(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "other.md", "---\ntags: [Person]\n---\nbody");
	tv_open(&t);
	expect_err_has(&t, "create_note",
		       "{\"name\": \"John\", \"frontmatter\": "
		       "\"{\\\"tags\\\": [\\\"Person\\\"]}\"}",
		       "note name must start with '@'");
	CU_ASSERT_FALSE(tv_exists(&t, "John.md"));
	tv_close(&t);
}

static void tc53_create_note_person_at(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "other.md", "---\ntags: [Person]\n---\nbody");
	tv_open(&t);
	cJSON *j = tv_call_json(&t, "create_note",
				"{\"name\": \"@John\", \"frontmatter\": "
				"\"{\\\"tags\\\": [\\\"Person\\\"]}\"}");
	CU_ASSERT_PTR_NOT_NULL(j);
	ASSERT_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(j, "name")),
		      "@John");
	cJSON_Delete(j);
	CU_ASSERT(tv_exists(&t, "@John.md"));
	expect_frontmatter(&t, "@John", "{\"tags\": [\"Person\"]}");
	tv_close(&t);
}

/* ---- TC54-TC57: multi-tag search -------------------------------------- */

static void abc_vault(struct tvault *t)
{
	tv_init(t);
	tv_write(t, "a.md", "---\ntags: [vc]\n---\na");
	tv_write(t, "b.md", "---\ntags: [project]\n---\nb");
	tv_write(t, "c.md", "---\ntags: [vc, project]\n---\nc");
	tv_open(t);
}

static void tc54_search_multi_tag_or(void)
{
	struct tvault t;
	abc_vault(&t);
	expect_search(&t,
		      "{\"query\": \"vc,project\", \"mode\": \"tag\", "
		      "\"tag_logic\": \"or\"}",
		      "a,b,c");
	tv_close(&t);
}

static void tc55_search_multi_tag_and(void)
{
	struct tvault t;
	abc_vault(&t);
	expect_search(&t,
		      "{\"query\": \"vc,project\", \"mode\": \"tag\", "
		      "\"tag_logic\": \"and\"}",
		      "c");
	tv_close(&t);
}

static void tc56_search_invalid_tag_logic(void)
{
	struct tvault t;
	abc_vault(&t);
	expect_err(&t, "search_notes",
		   "{\"query\": \"vc\", \"mode\": \"tag\", "
		   "\"tag_logic\": \"invalid\"}",
		   "Invalid tag_logic: invalid. Valid: and, or");
	tv_close(&t);
}

static void tc57_search_multi_tag_hierarchical(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "a.md", "---\ntags: [vc/project]\n---\na");
	tv_write(&t, "b.md", "---\ntags: [vc/idea]\n---\nb");
	tv_open(&t);
	expect_search(&t, "{\"query\": \"vc\", \"mode\": \"tag\"}", "a,b");
	tv_close(&t);
}

/* ---- TC58-TC68: metadata, headings, sections, links, help ------------- */

static void tc58_get_note_metadata(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "---\ntags: [vc]\n---\nSee [[B]]");
	tv_write(&t, "C.md", "Back to [[A]]");
	tv_open(&t);
	cJSON *j = tv_call_json(&t, "get_note_metadata", "{\"name\": \"A\"}");
	CU_ASSERT_PTR_NOT_NULL(j);
	CU_ASSERT(json_equal_text(cJSON_GetObjectItem(j, "name"), "\"A\""));
	CU_ASSERT(json_equal_text(cJSON_GetObjectItem(j, "frontmatter"),
				  "{\"tags\": [\"vc\"]}"));
	CU_ASSERT(
		json_equal_text(cJSON_GetObjectItem(j, "outgoing"), "[\"B\"]"));
	CU_ASSERT(
		json_equal_text(cJSON_GetObjectItem(j, "incoming"), "[\"C\"]"));
	/* No body. */
	char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
	ASSERT_NOT_CONTAINS(txt, "See [[B]]");
	free(txt);
	cJSON_Delete(j);
	tv_close(&t);
}

static void tc59_get_note_metadata_not_found(void)
{
	struct tvault t;
	tv_init(&t);
	tv_open(&t);
	expect_err(&t, "get_note_metadata", "{\"name\": \"nonexistent\"}",
		   "Note 'nonexistent' not found");
	tv_close(&t);
}

static void tc60_get_headings_basic(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "# Intro\nText\n## Details\nMore\n### Sub");
	tv_open(&t);
	expect_json(&t, "get_headings", "{\"name\": \"test\"}",
		    "[{\"level\": 1, \"text\": \"Intro\"}, "
		    "{\"level\": 2, \"text\": \"Details\"}, "
		    "{\"level\": 3, \"text\": \"Sub\"}]");
	tv_close(&t);
}

static void tc61_get_headings_none(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "Just plain text");
	tv_open(&t);
	expect_json(&t, "get_headings", "{\"name\": \"test\"}", "[]");
	tv_close(&t);
}

static void tc62_update_section_basic(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "# Intro\nOld content\n# Other\nKeep");
	tv_open(&t);
	expect_json(&t, "update_section",
		    "{\"name\": \"test\", \"section\": \"Intro\", "
		    "\"content\": \"New content\"}",
		    "{\"name\": \"test\", \"section\": \"Intro\", "
		    "\"status\": \"updated\"}");
	expect_file(&t, "test.md", "# Intro\nNew content\n# Other\nKeep");
	tv_close(&t);
}

static void tc63_update_section_not_found(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "# Intro\nHello");
	tv_open(&t);
	expect_err_has(&t, "update_section",
		       "{\"name\": \"test\", \"section\": \"Missing\", "
		       "\"content\": \"x\"}",
		       NULL);
	expect_file(&t, "test.md", "# Intro\nHello");
	tv_close(&t);
}

static void tc64_delete_section_basic(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "# Intro\nContent\n# Other\nKeep");
	tv_open(&t);
	expect_json(&t, "delete_section",
		    "{\"name\": \"test\", \"section\": \"Intro\"}",
		    "{\"name\": \"test\", \"section\": \"Intro\", "
		    "\"status\": \"deleted\"}");
	expect_file(&t, "test.md", "# Other\nKeep");
	tv_close(&t);
}

static void tc65_delete_section_not_found(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "test.md", "# Intro\nHello");
	tv_open(&t);
	expect_err_has(&t, "delete_section",
		       "{\"name\": \"test\", \"section\": \"Missing\"}", NULL);
	expect_file(&t, "test.md", "# Intro\nHello");
	tv_close(&t);
}

static void tc66_find_broken_links(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "[[B]] and [[Missing]]");
	tv_write(&t, "B.md", "b");
	tv_open(&t);
	expect_json(&t, "find_broken_links", "{}",
		    "[{\"source\": \"A\", \"target\": \"Missing\"}]");
	tv_close(&t);
}

static void tc67_find_broken_links_none(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "[[B]]");
	tv_write(&t, "B.md", "b");
	tv_open(&t);
	expect_json(&t, "find_broken_links", "{}", "[]");
	tv_close(&t);
}

static void tc68_get_help(void)
{
	static const char *const seed_tools[] = {
		"read_note",	   "create_note",    "append_note",
		"update_note",	   "delete_note",    "rename_note",
		"search_notes",	   "get_links",	     "get_note_metadata",
		"set_frontmatter", "add_tag",	     "remove_tag",
		"list_notes",	   "replace_text",   "insert_text",
		"read_section",	   "append_section", "get_headings",
		"update_section",  "delete_section", "find_broken_links",
		"get_help",
	};
	struct tvault t;
	tv_init(&t);
	tv_open(&t);
	cJSON *j = tv_call_json(&t, "get_help", "{}");
	CU_ASSERT(cJSON_IsArray(j));
	const cJSON *it;
	cJSON_ArrayForEach(it, j)
	{
		CU_ASSERT(cJSON_IsString(cJSON_GetObjectItem(it, "name")));
		CU_ASSERT(cJSON_IsString(cJSON_GetObjectItem(it, "params")));
		CU_ASSERT(
			cJSON_IsString(cJSON_GetObjectItem(it, "description")));
		/* get_frontmatter was removed (use get_note_metadata). */
		const char *nm =
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
		CU_ASSERT(!nm || strcmp(nm, "get_frontmatter") != 0);
	}
	for (size_t i = 0; i < sizeof(seed_tools) / sizeof(*seed_tools); i++) {
		bool found = false;
		cJSON_ArrayForEach(it, j)
		{
			const char *nm = cJSON_GetStringValue(
				cJSON_GetObjectItem(it, "name"));
			if (nm && strcmp(nm, seed_tools[i]) == 0)
				found = true;
		}
		if (!found)
			fprintf(stderr, "  get_help lacks %s\n", seed_tools[i]);
		CU_ASSERT(found);
	}
	/* Every tool of the table is listed. */
	size_t n = 0;
	tools_table(&n);
	CU_ASSERT_EQUAL((size_t)cJSON_GetArraySize(j), n);
	cJSON_Delete(j);
	tv_close(&t);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"TC1_read_note", tc1_read_note},
		{"TC2_read_note_not_found", tc2_read_note_not_found},
		{"TC3_create_note_basic", tc3_create_note_basic},
		{"TC4_create_note_with_frontmatter",
		 tc4_create_note_with_frontmatter},
		{"TC5_append_note", tc5_append_note},
		{"TC6_update_note", tc6_update_note},
		{"TC7_delete_note", tc7_delete_note},
		{"TC8_delete_note_dry_run", tc8_delete_note_dry_run},
		{"TC9_rename_note", tc9_rename_note},
		{"TC10_search_notes", tc10_search_notes},
		{"TC11_search_notes_by_tag", tc11_search_notes_by_tag},
		{"TC12_get_links", tc12_get_links},
		{"TC14_set_frontmatter", tc14_set_frontmatter},
		{"TC15_list_notes_paginated", tc15_list_notes_paginated},
		{"TC16_list_notes_empty_vault", tc16_list_notes_empty_vault},
		{"TC16a_list_notes_offset", tc16a_list_notes_offset},
		{"TC17_autocontext_first_result",
		 tc17_autocontext_first_result},
		{"TC18_autocontext_not_in_second_result",
		 tc18_autocontext_not_in_second_result},
		{"TC19_autocontext_no_notes_hint",
		 tc19_autocontext_no_notes_hint},
		{"TC20_autocontext_missing_description",
		 tc20_autocontext_missing_description},
		{"TC21_no_global_singleton", tc21_no_global_singleton},
		{"TC22_single_vault_instance", tc22_single_vault_instance},
		{"TC23_tag_policy_first_result", tc23_tag_policy_first_result},
		{"TC24_tag_policy_empty_vault", tc24_tag_policy_empty_vault},
		{"TC25_tag_policy_dedup", tc25_tag_policy_dedup},
		{"TC26_instructions_base_only", tc26_instructions_base_only},
		{"TC27_no_claude_md_mechanism", tc27_no_claude_md_mechanism},
		{"TC28_context_block_empty_vault",
		 tc28_context_block_empty_vault},
		{"TC29_replace_text", tc29_replace_text},
		{"TC30_replace_text_replace_all",
		 tc30_replace_text_replace_all},
		{"TC31_replace_text_not_found", tc31_replace_text_not_found},
		{"TC32_insert_text_after", tc32_insert_text_after},
		{"TC33_insert_text_before", tc33_insert_text_before},
		{"TC34_insert_text_both_params", tc34_insert_text_both_params},
		{"TC35_insert_text_neither_param",
		 tc35_insert_text_neither_param},
		{"TC36_read_section", tc36_read_section},
		{"TC37_read_section_not_found", tc37_read_section_not_found},
		{"TC38_append_section", tc38_append_section},
		{"TC39_create_note_invalid_tags",
		 tc39_create_note_invalid_tags},
		{"TC40_create_note_valid_tags", tc40_create_note_valid_tags},
		{"TC41_set_frontmatter_tags_validated",
		 tc41_set_frontmatter_tags_validated},
		{"TC42_set_frontmatter_non_tags_key",
		 tc42_set_frontmatter_non_tags_key},
		{"TC43_create_note_invalid_json",
		 tc43_create_note_invalid_json},
		{"TC44_search_notes_invalid_mode",
		 tc44_search_notes_invalid_mode},
		{"TC45_get_links_invalid_direction",
		 tc45_get_links_invalid_direction},
		{"TC46_add_tag_basic", tc46_add_tag_basic},
		{"TC47_add_tag_person_to_at_note",
		 tc47_add_tag_person_to_at_note},
		{"TC48_add_tag_claude_without_description",
		 tc48_add_tag_claude_without_description},
		{"TC49_add_tag_claude_with_description",
		 tc49_add_tag_claude_with_description},
		{"TC50_remove_tag_basic", tc50_remove_tag_basic},
		{"TC51_remove_tag_not_present", tc51_remove_tag_not_present},
		{"TC52_create_note_person_non_at",
		 tc52_create_note_person_non_at},
		{"TC53_create_note_person_at", tc53_create_note_person_at},
		{"TC54_search_multi_tag_or", tc54_search_multi_tag_or},
		{"TC55_search_multi_tag_and", tc55_search_multi_tag_and},
		{"TC56_search_invalid_tag_logic",
		 tc56_search_invalid_tag_logic},
		{"TC57_search_multi_tag_hierarchical",
		 tc57_search_multi_tag_hierarchical},
		{"TC58_get_note_metadata", tc58_get_note_metadata},
		{"TC59_get_note_metadata_not_found",
		 tc59_get_note_metadata_not_found},
		{"TC60_get_headings_basic", tc60_get_headings_basic},
		{"TC61_get_headings_none", tc61_get_headings_none},
		{"TC62_update_section_basic", tc62_update_section_basic},
		{"TC63_update_section_not_found",
		 tc63_update_section_not_found},
		{"TC64_delete_section_basic", tc64_delete_section_basic},
		{"TC65_delete_section_not_found",
		 tc65_delete_section_not_found},
		{"TC66_find_broken_links", tc66_find_broken_links},
		{"TC67_find_broken_links_none", tc67_find_broken_links_none},
		{"TC68_get_help", tc68_get_help},
	};
	return run_tests("tools_seed", tests, sizeof(tests) / sizeof(*tests));
}
