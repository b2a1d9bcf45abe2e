/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for common/engine/policy.h and common/engine/glob.h. */
#include "testutil.h"
#include "glob.h"
#include "index.h"
#include "note.h"
#include "policy.h"
#include "shape.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

/* ---- helpers ------------------------------------------------------------ */

static struct note *mknote(const char *path, const char *text)
{
	return note_new(path, text, text ? strlen(text) : 0, 0);
}

static void put(struct index *ix, const char *path, const char *text)
{
	index_put(ix, mknote(path, text));
}

static struct policy *parse_ok(const char *yaml)
{
	struct policy *p = NULL;
	char *msg = NULL;
	int r = policy_parse(yaml, strlen(yaml), &p, &msg);
	if (r < 0)
		fprintf(stderr, "\n    policy_parse: %s ", msg);
	CU_ASSERT_EQUAL(r, 0);
	free(msg);
	return p;
}

/* Returns the message of a refused parse (caller frees) or NULL. */
static char *parse_err(const char *yaml)
{
	struct policy *p = NULL;
	char *msg = NULL;
	int r = policy_parse(yaml, strlen(yaml), &p, &msg);
	CU_ASSERT_EQUAL(r, -EBADMSG);
	CU_ASSERT_PTR_NULL(p);
	policy_free(p);
	CU_ASSERT_PTR_NOT_NULL(msg);
	return msg;
}

static const struct tag_rule *rule(const struct policy *p, const char *tag)
{
	for (size_t i = 0; i < p->nrules; i++)
		if (strcmp(p->rules[i].tag, tag) == 0)
			return &p->rules[i];
	return NULL;
}

/* policy_check of a new note; returns the message or NULL when allowed. */
static char *check(const struct policy *p, const struct index *ix,
		   const char *before_path, const char *before_text,
		   const char *path, const char *text)
{
	struct note *before =
		before_path ? mknote(before_path, before_text) : NULL;
	struct note *after = mknote(path, text);
	char *msg = NULL;
	int r = policy_check(p, ix, before, after, &msg);
	CU_ASSERT_TRUE(r == 0 || r == -EPERM);
	CU_ASSERT_TRUE((r == 0) == (msg == NULL));
	note_free(before);
	note_free(after);
	return msg;
}

/* ---- parsing --------------------------------------------------------------
 */

static void test_defaults(void)
{
	struct policy *p = policy_default();
	CU_ASSERT_EQUAL(p->nrules, 2);
	const struct tag_rule *r = rule(p, "Person");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	ASSERT_STR_EQ(r->name_prefix, "@");
	CU_ASSERT_PTR_NULL(r->requires[0]);
	r = rule(p, "claude");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_PTR_NULL(r->name_prefix);
	ASSERT_STR_EQ(r->requires[0], "description");
	CU_ASSERT_PTR_NULL(r->requires[1]);
	CU_ASSERT_FALSE(p->warn);
	CU_ASSERT_FALSE(p->keep_links);
	CU_ASSERT_FALSE(p->from_file);
	CU_ASSERT_PTR_NULL(p->allowed_tags[0]);
	CU_ASSERT_PTR_NULL(p->ignore[0]);
	policy_free(p);
}

static void test_parse_fields(void)
{
	struct policy *p =
		parse_ok("allowed_tags: [inbox, '#todo']\n"
			 "on_violation: warn\n"
			 "delete_links: keep\n"
			 "ignore: [\"templates/\", \"*.excalidraw.md\"]\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_TRUE(p->from_file);
	ASSERT_STR_EQ(p->allowed_tags[0], "inbox");
	ASSERT_STR_EQ(p->allowed_tags[1], "todo");
	CU_ASSERT_PTR_NULL(p->allowed_tags[2]);
	CU_ASSERT_TRUE(p->warn);
	CU_ASSERT_TRUE(p->keep_links);
	ASSERT_STR_EQ(p->ignore[0], "templates/");
	ASSERT_STR_EQ(p->ignore[1], "*.excalidraw.md");
	CU_ASSERT_PTR_NULL(p->ignore[2]);
	/* No tag_rules key: the defaults stay. */
	CU_ASSERT_EQUAL(p->nrules, 2);
	CU_ASSERT_PTR_NOT_NULL(rule(p, "Person"));
	policy_free(p);

	p = parse_ok("on_violation: reject\ndelete_links: mark\n");
	CU_ASSERT_FALSE(p->warn);
	CU_ASSERT_FALSE(p->keep_links);
	/* Obsidian 1.9 by default: no tag/alias properties. */
	CU_ASSERT_FALSE(p->legacy_properties);
	CU_ASSERT_EQUAL(policy_note_flags(p), 0);
	policy_free(p);

	p = parse_ok("legacy_properties: true\n");
	CU_ASSERT_TRUE(p->legacy_properties);
	CU_ASSERT_EQUAL(policy_note_flags(p), NOTE_READ_LEGACY_PROPERTIES);
	policy_free(p);
	p = parse_ok("legacy_properties: false\n");
	CU_ASSERT_EQUAL(policy_note_flags(p), 0);
	policy_free(p);
	CU_ASSERT_EQUAL(policy_note_flags(NULL), 0);

	/* Empty file: defaults. */
	p = parse_ok("");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->nrules, 2);
	policy_free(p);
	p = parse_ok("# just a comment\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->nrules, 2);
	policy_free(p);
}

static void test_parse_tag_rules_replace(void)
{
	struct policy *p = parse_ok("tag_rules:\n"
				    "  project:\n"
				    "    requires: [status, owner]\n"
				    "  meeting:\n"
				    "    name_prefix: \"Meeting \"\n"
				    "    message: Custom text.\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->nrules, 2);
	CU_ASSERT_PTR_NULL(rule(p, "Person"));
	CU_ASSERT_PTR_NULL(rule(p, "claude"));
	const struct tag_rule *r = rule(p, "project");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	ASSERT_STR_EQ(r->requires[0], "status");
	ASSERT_STR_EQ(r->requires[1], "owner");
	CU_ASSERT_PTR_NOT_NULL(r->message);
	ASSERT_CONTAINS(r->message, "status");
	r = rule(p, "meeting");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	ASSERT_STR_EQ(r->name_prefix, "Meeting ");
	ASSERT_STR_EQ(r->message, "Custom text.");
	policy_free(p);

	/* An empty mapping switches every rule off. */
	p = parse_ok("tag_rules: {}\n");
	CU_ASSERT_EQUAL(p->nrules, 0);
	policy_free(p);
}

static void test_parse_rule_null_off(void)
{
	struct policy *p = parse_ok("tag_rules:\n"
				    "  Person: null\n"
				    "  claude:\n"
				    "    requires: [description]\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->nrules, 1);
	CU_ASSERT_PTR_NULL(rule(p, "Person"));
	CU_ASSERT_PTR_NOT_NULL(rule(p, "claude"));
	policy_free(p);
}

static void test_parse_errors(void)
{
	char *m = parse_err("colour: red\n");
	ASSERT_CONTAINS(m, "colour");
	free(m);
	m = parse_err("on_violation: maybe\n");
	ASSERT_CONTAINS(m, "on_violation");
	free(m);
	m = parse_err("on_violation: [warn]\n");
	ASSERT_CONTAINS(m, "on_violation");
	free(m);
	m = parse_err("legacy_properties: yes-please\n");
	ASSERT_CONTAINS(m, "legacy_properties must be true or false");
	free(m);
	m = parse_err("delete_links: drop\n");
	ASSERT_CONTAINS(m, "delete_links");
	free(m);
	m = parse_err("tag_rules: [a, b]\n");
	ASSERT_CONTAINS(m, "tag_rules");
	free(m);
	m = parse_err("tag_rules:\n  Person: yes-please\n");
	ASSERT_CONTAINS(m, "Person");
	free(m);
	m = parse_err("tag_rules:\n  Person:\n    prefix: \"@\"\n");
	ASSERT_CONTAINS(m, "prefix");
	free(m);
	m = parse_err("tag_rules:\n  Person:\n    name_prefix: [a]\n");
	ASSERT_CONTAINS(m, "name_prefix");
	free(m);
	/* Broken YAML: the message names the line of the policy file. */
	m = parse_err("allowed_tags: [a]\nignore: x\n  bad: 1\n");
	ASSERT_CONTAINS(m, "line 3");
	free(m);
	m = parse_err("- a\n- b\n");
	free(m);
	m = parse_err("a: 1\na: 2\n");
	free(m);
}

/* ---- policy_check ---------------------------------------------------------
 */

static struct index *vault_with_tags(void)
{
	struct index *ix = index_new();
	put(ix, "people/@John.md", "---\ntags: [Person]\n---\n");
	put(ix, "Fund.md", "#vc\n");
	put(ix, "Plain.md", "no tags\n");
	return ix;
}

static void test_check_unknown_tag_message(void)
{
	struct policy *p = policy_default();
	struct index *ix = vault_with_tags();
	char *m = check(p, ix, NULL, NULL, "New.md",
			"---\ntags: [career]\n---\nbody\n");
	ASSERT_STR_EQ(m,
		      "Tags not in allowed list: ['career']. Allowed: "
		      "['Person', 'vc']. Ask user before creating new tags.");
	free(m);
	/* Inline tags count too; several bad tags are listed in order. */
	m = check(p, ix, NULL, NULL, "New.md", "#zeta and #alpha #vc\n");
	ASSERT_STR_EQ(m, "Tags not in allowed list: ['zeta', 'alpha']. "
			 "Allowed: ['Person', 'vc']. Ask user before creating "
			 "new tags.");
	free(m);
	/* Python repr of a tag with a quote. */
	m = check(p, ix, NULL, NULL, "New.md", "---\ntags: [\"it's\"]\n---\n");
	ASSERT_CONTAINS(m, "[\"it's\"]");
	free(m);
	policy_free(p);
	index_free(ix);
}

static void test_check_allowed_list_in_message(void)
{
	struct policy *p = parse_ok("allowed_tags: [inbox, VC]\n");
	struct index *ix = vault_with_tags();
	char *m = check(p, ix, NULL, NULL, "New.md", "#career\n");
	ASSERT_STR_EQ(m, "Tags not in allowed list: ['career']. Allowed: "
			 "['Person', 'inbox', 'vc']. Ask user before creating "
			 "new tags.");
	free(m);
	m = check(p, ix, NULL, NULL, "New.md", "#Inbox\n");
	CU_ASSERT_PTR_NULL(m);
	free(m);
	char **a = policy_allowed_tags(p, ix);
	ASSERT_STR_EQ(a[0], "Person");
	ASSERT_STR_EQ(a[1], "inbox");
	ASSERT_STR_EQ(a[2], "vc");
	CU_ASSERT_PTR_NULL(a[3]);
	strv_free(a);
	policy_free(p);
	index_free(ix);
}

static void test_check_case_insensitive(void)
{
	struct policy *p = policy_default();
	struct index *ix = vault_with_tags();
	char *m = check(p, ix, NULL, NULL, "New.md", "#VC and #Vc\n");
	CU_ASSERT_PTR_NULL(m);
	free(m);
	m = check(p, ix, NULL, NULL, "@Ann.md", "---\ntags: [person]\n---\n");
	CU_ASSERT_PTR_NULL(m);
	free(m);
	/* Hierarchy does not make a new tag known: vc/new is new. */
	m = check(p, ix, NULL, NULL, "New.md", "#vc/new\n");
	ASSERT_CONTAINS(m, "'vc/new'");
	free(m);
	policy_free(p);
	index_free(ix);
}

static void test_check_first_tags_free(void)
{
	struct policy *p = policy_default();
	struct index *ix = index_new();
	put(ix, "Plain.md", "no tags here\n");
	char *m = check(p, ix, NULL, NULL, "New.md", "#anything #else\n");
	CU_ASSERT_PTR_NULL(m);
	free(m);
	policy_free(p);
	/* Unless an allow list exists. */
	p = parse_ok("allowed_tags: [inbox]\n");
	m = check(p, ix, NULL, NULL, "New.md", "#other\n");
	ASSERT_STR_EQ(m, "Tags not in allowed list: ['other']. Allowed: "
			 "['inbox']. Ask user before creating new tags.");
	free(m);
	m = check(p, ix, NULL, NULL, "New.md", "#inbox\n");
	CU_ASSERT_PTR_NULL(m);
	free(m);
	policy_free(p);
	index_free(ix);
}

static void test_check_rules(void)
{
	struct policy *p = policy_default();
	struct index *ix = vault_with_tags();
	put(ix, "Howto.md", "---\ntags: [claude]\ndescription: when\n---\n");
	char *m = check(p, ix, NULL, NULL, "Bob.md", "#Person\n");
	ASSERT_STR_EQ(m, "Tag 'Person' is for people notes only: the note name "
			 "must start with '@' (e.g. '@John Doe').");
	free(m);
	m = check(p, ix, NULL, NULL, "@Bob.md", "#Person\n");
	CU_ASSERT_PTR_NULL(m);
	free(m);
	m = check(p, ix, NULL, NULL, "Rules.md", "#claude\n");
	ASSERT_CONTAINS(m, "'description'");
	free(m);
	m = check(p, ix, NULL, NULL, "Rules.md",
		  "---\ndescription: \"\"\n---\n#claude\n");
	ASSERT_CONTAINS(m, "'description'"); /* an empty value is no value */
	free(m);
	m = check(p, ix, NULL, NULL, "Rules.md",
		  "---\ndescription: read when coding\n---\n#claude\n");
	CU_ASSERT_PTR_NULL(m);
	free(m);
	policy_free(p);

	/* A rule switched off no longer applies. */
	p = parse_ok("tag_rules:\n  Person: null\n");
	m = check(p, ix, NULL, NULL, "Bob.md", "#Person\n");
	CU_ASSERT_PTR_NULL(m);
	free(m);
	policy_free(p);
	index_free(ix);
}

static void test_check_preexisting_violations(void)
{
	struct policy *p = policy_default();
	struct index *ix = vault_with_tags();
	/* "before" already broke the Person rule and used a tag that the
	 * vault does not have: an edit keeping both is allowed. */
	const char *old = "---\ntags: [Person, legacy]\n---\nold\n";
	char *m = check(p, ix, "Bob.md", old, "Bob.md",
			"---\ntags: [Person, legacy]\n---\nnew text\n");
	CU_ASSERT_PTR_NULL(m);
	free(m);
	/* A new violation is still refused. */
	m = check(p, ix, "Bob.md", old, "Bob.md",
		  "---\ntags: [Person, legacy, career]\n---\n");
	ASSERT_STR_EQ(m,
		      "Tags not in allowed list: ['career']. Allowed: "
		      "['Person', 'vc']. Ask user before creating new tags.");
	free(m);
	/* Adding a rule violation that before did not have. */
	m = check(p, ix, "Bob.md", "plain\n", "Bob.md", "#Person\n");
	ASSERT_CONTAINS(m, "Tag 'Person'");
	free(m);
	policy_free(p);
	index_free(ix);
}

static void test_policy_to_json(void)
{
	struct policy *p = policy_default();
	struct index *ix = vault_with_tags();
	cJSON *j = policy_to_json(p, ix);
	CU_ASSERT_TRUE(json_equal_text(cJSON_GetObjectItem(j, "allowed_tags"),
				       "[\"Person\", \"vc\"]"));
	ASSERT_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(j, "source")),
		      "defaults");
	cJSON_Delete(j);
	policy_free(p);
	index_free(ix);
}

/* ---- ignore ---------------------------------------------------------------
 */

static void test_ignored_hidden(void)
{
	struct policy *p = policy_default();
	CU_ASSERT_TRUE(policy_ignored(p, ".obsidian/x.md", false));
	CU_ASSERT_TRUE(policy_ignored(p, ".obsidian", true));
	CU_ASSERT_TRUE(policy_ignored(p, "a/.hidden.md", false));
	CU_ASSERT_TRUE(policy_ignored(p, "a/.git/b/c.md", false));
	CU_ASSERT_TRUE(policy_ignored(p, ".trash/old.md", false));
	CU_ASSERT_FALSE(policy_ignored(p, "a/b.md", false));
	CU_ASSERT_FALSE(policy_ignored(p, "a.b/c.md", false));
	CU_ASSERT_FALSE(policy_ignored(NULL, "a/b.md", false));
	policy_free(p);
}

static void test_ignored_globs(void)
{
	struct policy *p = parse_ok("ignore:\n"
				    "  - templates/\n"
				    "  - \"*.excalidraw.md\"\n"
				    "  - \"**/drafts/*.md\"\n"
				    "  - /root-only.md\n"
				    "  - \"[ab]x.md\"\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* Folder-only pattern. */
	CU_ASSERT_TRUE(policy_ignored(p, "templates/T.md", false));
	CU_ASSERT_TRUE(policy_ignored(p, "templates", true));
	CU_ASSERT_TRUE(policy_ignored(p, "x/templates/deep/T.md", false));
	CU_ASSERT_FALSE(policy_ignored(p, "templates", false));
	CU_ASSERT_FALSE(policy_ignored(p, "notes/templates.md", false));
	CU_ASSERT_FALSE(policy_ignored(p, "mytemplates/T.md", false));
	/* Basename pattern, any folder. */
	CU_ASSERT_TRUE(policy_ignored(p, "Drawing.excalidraw.md", false));
	CU_ASSERT_TRUE(policy_ignored(p, "d/e/Drawing.excalidraw.md", false));
	CU_ASSERT_FALSE(policy_ignored(p, "Drawing.md", false));
	/* "**" crosses folders, including none. */
	CU_ASSERT_TRUE(policy_ignored(p, "drafts/a.md", false));
	CU_ASSERT_TRUE(policy_ignored(p, "x/y/drafts/a.md", false));
	CU_ASSERT_FALSE(policy_ignored(p, "drafts.md", false));
	CU_ASSERT_FALSE(policy_ignored(p, "x/mydrafts/a.md", false));
	/* Anchored. */
	CU_ASSERT_TRUE(policy_ignored(p, "root-only.md", false));
	CU_ASSERT_FALSE(policy_ignored(p, "a/root-only.md", false));
	/* Classes. */
	CU_ASSERT_TRUE(policy_ignored(p, "ax.md", false));
	CU_ASSERT_TRUE(policy_ignored(p, "bx.md", false));
	CU_ASSERT_TRUE(policy_ignored(p, "sub/ax.md", false));
	CU_ASSERT_FALSE(policy_ignored(p, "cx.md", false));
	CU_ASSERT_FALSE(policy_ignored(p, "abx.md", false));
	policy_free(p);
}

static void test_glob_match(void)
{
	CU_ASSERT_TRUE(glob_match("*.md", "a.md", false));
	CU_ASSERT_TRUE(glob_match("*.md", "dir/a.md", false));
	CU_ASSERT_FALSE(glob_match("*.md", "a.mdx", false));
	CU_ASSERT_TRUE(glob_match("?.md", "a.md", false));
	CU_ASSERT_FALSE(glob_match("?.md", "ab.md", false));
	CU_ASSERT_TRUE(glob_match("a/*.md", "a/b.md", false));
	CU_ASSERT_FALSE(glob_match("a/*.md", "a/b/c.md", false));
	CU_ASSERT_FALSE(glob_match("a/?/c.md", "a//c.md", false));
	CU_ASSERT_TRUE(glob_match("a/**", "a/b/c.md", false));
	CU_ASSERT_TRUE(glob_match("a/**/c.md", "a/c.md", false));
	CU_ASSERT_TRUE(glob_match("a/**/c.md", "a/x/y/c.md", false));
	CU_ASSERT_TRUE(glob_match("[!a]x.md", "bx.md", false));
	CU_ASSERT_FALSE(glob_match("[!a]x.md", "ax.md", false));
	CU_ASSERT_TRUE(glob_match("[a-c]x.md", "bx.md", false));
	CU_ASSERT_FALSE(glob_match("[a-c]x.md", "dx.md", false));
	CU_ASSERT_TRUE(glob_match("[]]x", "]x", false));
	CU_ASSERT_TRUE(glob_match("[abc", "[abc", false)); /* literal '[' */
	CU_ASSERT_TRUE(glob_match("\\*.md", "*.md", false));
	CU_ASSERT_FALSE(glob_match("\\*.md", "a.md", false));
	CU_ASSERT_TRUE(glob_match("dir/", "dir", true));
	CU_ASSERT_FALSE(glob_match("dir/", "dir", false));
	CU_ASSERT_TRUE(glob_match("/top.md", "top.md", false));
	CU_ASSERT_FALSE(glob_match("/top.md", "x/top.md", false));
	CU_ASSERT_FALSE(glob_match("", "x", false));
	CU_ASSERT_TRUE(glob_match_any_level("build", "build/x/y.md", false));
	CU_ASSERT_FALSE(glob_match_any_level("build", "builds/y.md", false));
}

/* Run glob_match in a child killed after 5 s. */
static bool glob_returns_quickly(const char *pat, const char *path)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		alarm(5);
		glob_match(pat, path, false);
		glob_match_any_level(pat, path, false);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/*
 * A pattern with many stars must not backtrack exponentially: one
 * ignore pattern could otherwise stall indexing.
 */
static void test_glob_pathological(void)
{
	char path[101];
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = 0;
	CU_ASSERT_TRUE(glob_returns_quickly("*a*a*a*a*a*a*b", path));
	CU_ASSERT_TRUE(glob_returns_quickly("**a**a**a**a**a**a**b", path));
}

int main(void)
{
	static const struct test_case tests[] = {
		{"defaults", test_defaults},
		{"parse_fields", test_parse_fields},
		{"parse_tag_rules_replace", test_parse_tag_rules_replace},
		{"parse_rule_null_off", test_parse_rule_null_off},
		{"parse_errors", test_parse_errors},
		{"check_unknown_tag_message", test_check_unknown_tag_message},
		{"check_allowed_list_in_message",
		 test_check_allowed_list_in_message},
		{"check_case_insensitive", test_check_case_insensitive},
		{"check_first_tags_free", test_check_first_tags_free},
		{"check_rules", test_check_rules},
		{"check_preexisting_violations",
		 test_check_preexisting_violations},
		{"policy_to_json", test_policy_to_json},
		{"ignored_hidden", test_ignored_hidden},
		{"ignored_globs", test_ignored_globs},
		{"glob_match", test_glob_match},
		{"glob_pathological", test_glob_pathological},
	};
	return run_tests("policy", tests, ARRAY_SIZE(tests));
}
