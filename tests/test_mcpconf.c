/* SPDX-License-Identifier: GPL-2.0-or-later */
/* MCP client configurations: vault-mcp's entry merged into a client's
 * JSON, and nothing else touched. */
#include "mcpconf.h"
#include "testutil.h"
#include "util.h"

#include <errno.h>

static const struct mcpconf_entry E = {
	.name = "obsidian-vault",
	.command = "/usr/bin/vault-mcp",
	.vault = "/home/u/Notes",
};

static int merge(const char *text, const char *key,
		 const struct mcpconf_entry *e, char **out, bool *changed,
		 char **msg)
{
	*out = NULL;
	*msg = NULL;
	*changed = false;
	return mcpconf_merge(text, key, e, out, changed, msg);
}

static cJSON *parsed(const char *text)
{
	cJSON *j = cJSON_Parse(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	return j;
}

static void test_new_file(void)
{
	_cleanup_free_ char *out = NULL, *msg = NULL;
	bool changed;
	CU_ASSERT_EQUAL(merge(" \n", "mcpServers", &E, &out, &changed, &msg),
			0);
	CU_ASSERT_TRUE(changed);
	cJSON *j = parsed(out);
	const cJSON *s = cJSON_GetObjectItem(
		cJSON_GetObjectItem(j, "mcpServers"), "obsidian-vault");
	CU_ASSERT_STRING_EQUAL(
		cJSON_GetStringValue(cJSON_GetObjectItem(s, "command")),
		"/usr/bin/vault-mcp");
	CU_ASSERT_STRING_EQUAL(
		cJSON_GetStringValue(cJSON_GetObjectItem(
			cJSON_GetObjectItem(s, "env"), "OBSIDIAN_VAULT_PATH")),
		"/home/u/Notes");
	CU_ASSERT_TRUE(cJSON_IsArray(cJSON_GetObjectItem(s, "args")));
	CU_ASSERT_PTR_NULL(cJSON_GetObjectItem(s, "type"));
	cJSON_Delete(j);
	/* Written with two spaces, no tabs, a final newline. */
	CU_ASSERT_PTR_NULL(strchr(out, '\t'));
	ASSERT_CONTAINS(out, "\n  \"mcpServers\": {");
	CU_ASSERT_EQUAL(out[strlen(out) - 1], '\n');
}

/* Other servers, other keys, their order and our entry's other members
 * stay; a second merge changes nothing. */
static void test_keeps_the_rest(void)
{
	const char *in =
		"{\"globalShortcut\": \"Ctrl+Space\",\n"
		" \"mcpServers\": {\"fs\": {\"command\": \"npx\", \"args\": "
		"[\"-y\", \"x\"], \"env\": {\"K\": \"v\\tw\"}},\n"
		"   \"obsidian-vault\": {\"command\": \"/old/vault-mcp\", "
		"\"args\": [\"--read-only\"], \"env\": {\"VAULT_MCP_IDLE_EXIT\": "
		"\"0\"}, \"disabled\": false}},\n"
		" \"zzz\": [1, 2.5, null, true]}\n";
	_cleanup_free_ char *out = NULL, *msg = NULL;
	bool changed;
	CU_ASSERT_EQUAL_FATAL(merge(in, "mcpServers", &E, &out, &changed, &msg),
			      0);
	CU_ASSERT_TRUE(changed);
	cJSON *a = parsed(in), *b = parsed(out);
	/* Same keys in the same order at the top. */
	const cJSON *x = a->child, *y = b->child;
	for (; x && y; x = x->next, y = y->next)
		CU_ASSERT_STRING_EQUAL(x->string, y->string);
	CU_ASSERT_PTR_NULL(x);
	CU_ASSERT_PTR_NULL(y);
	CU_ASSERT_TRUE(cJSON_Compare(cJSON_GetObjectItem(a, "zzz"),
				     cJSON_GetObjectItem(b, "zzz"), true));
	const cJSON *sa = cJSON_GetObjectItem(a, "mcpServers");
	const cJSON *sb = cJSON_GetObjectItem(b, "mcpServers");
	CU_ASSERT_TRUE(cJSON_Compare(cJSON_GetObjectItem(sa, "fs"),
				     cJSON_GetObjectItem(sb, "fs"), true));
	const cJSON *ov = cJSON_GetObjectItem(sb, "obsidian-vault");
	CU_ASSERT_STRING_EQUAL(
		cJSON_GetStringValue(cJSON_GetObjectItem(ov, "command")),
		"/usr/bin/vault-mcp");
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetArrayItem(
				       cJSON_GetObjectItem(ov, "args"), 0)),
			       "--read-only");
	const cJSON *env = cJSON_GetObjectItem(ov, "env");
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItem(
				       env, "VAULT_MCP_IDLE_EXIT")),
			       "0");
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItem(
				       env, "OBSIDIAN_VAULT_PATH")),
			       "/home/u/Notes");
	CU_ASSERT_TRUE(cJSON_IsFalse(cJSON_GetObjectItem(ov, "disabled")));
	cJSON_Delete(a);
	cJSON_Delete(b);
	/* Again: no change, the same text. */
	_cleanup_free_ char *again = NULL, *msg2 = NULL;
	CU_ASSERT_EQUAL(merge(out, "mcpServers", &E, &again, &changed, &msg2),
			0);
	CU_ASSERT_FALSE(changed);
	CU_ASSERT_STRING_EQUAL(again, out);
}

/* VS Code: "servers", "type": "stdio", the inputs left alone. */
static void test_vscode(void)
{
	struct mcpconf_entry e = E;
	e.typed = true;
	const char *in = "{\"inputs\": [{\"id\": \"k\", \"type\": "
			 "\"promptString\"}], \"servers\": {}}";
	_cleanup_free_ char *out = NULL, *msg = NULL;
	bool changed;
	CU_ASSERT_EQUAL(merge(in, "servers", &e, &out, &changed, &msg), 0);
	cJSON *j = parsed(out);
	CU_ASSERT_PTR_NULL(cJSON_GetObjectItem(j, "mcpServers"));
	CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(j, "inputs")),
			1);
	const cJSON *s = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "servers"),
					     "obsidian-vault");
	CU_ASSERT_STRING_EQUAL(
		cJSON_GetStringValue(cJSON_GetObjectItem(s, "type")), "stdio");
	cJSON_Delete(j);
	CU_ASSERT_STRING_EQUAL(mcpconf_guess_key("/p/.vscode/mcp.json", "{}"),
			       "servers");
	CU_ASSERT_STRING_EQUAL(
		mcpconf_guess_key("/h/.config/Code/User/mcp.json", NULL),
		"servers");
	CU_ASSERT_STRING_EQUAL(
		mcpconf_guess_key("/x/client.json", "{\"servers\": {}}"),
		"servers");
	CU_ASSERT_STRING_EQUAL(mcpconf_guess_key("/x/client.json", "{}"),
			       "mcpServers");
	CU_ASSERT_STRING_EQUAL(mcpconf_client_find("vscode")->key, "servers");
	CU_ASSERT_STRING_EQUAL(mcpconf_client_find("cursor")->key,
			       "mcpServers");
	CU_ASSERT_PTR_NULL(mcpconf_client_find("notepad"));
}

/* What cannot be merged is refused with the reason, never rewritten. */
static void test_refusals(void)
{
	static const struct {
		const char *text, *says;
		int r;
	} cases[] = {
		{"{\"mcpServers\": {\n  \"a\": 1,\n}", "line 3, column 1",
		 -EBADMSG},
		{"{\"mcpServers\": {", "not valid JSON", -EBADMSG},
		{"// mine\n{\"servers\": {}}", "comments", -EBADMSG},
		{"[1, 2]", "not an object", -EBADMSG},
		{"{\"mcpServers\": []}", "\"mcpServers\" is not an object",
		 -EBADMSG},
		{"{\"mcpServers\": {\"obsidian-vault\": \"x\"}}", "--name NAME",
		 -EBADMSG},
		{"{\"mcpServers\": {\"obsidian-vault\": {\"command\": \"v\", "
		 "\"env\": {\"OBSIDIAN_VAULT_PATH\": \"/home/u/Work\"}}}}",
		 "serves another vault (/home/u/Work)", -EEXIST},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ char *out = NULL, *msg = NULL;
		bool changed;
		CU_ASSERT_EQUAL(merge(cases[i].text, "mcpServers", &E, &out,
				      &changed, &msg),
				cases[i].r);
		CU_ASSERT_PTR_NULL(out);
		ASSERT_CONTAINS(msg, cases[i].says);
	}
	/* The same vault spelled with a trailing slash is the same vault. */
	_cleanup_free_ char *out = NULL, *msg = NULL;
	bool changed;
	CU_ASSERT_EQUAL(
		merge("\xef\xbb\xbf{\"mcpServers\": {\"obsidian-vault\":"
		      " {\"command\": \"/usr/bin/vault-mcp\", \"args\":"
		      " [], \"env\": {\"OBSIDIAN_VAULT_PATH\": "
		      "\"/home/u/Notes/\"}}}}",
		      "mcpServers", &E, &out, &changed, &msg),
		0);
	CU_ASSERT_FALSE(changed);
}

static void test_snippet(void)
{
	_cleanup_free_ char *s = mcpconf_snippet("mcpServers", &E);
	cJSON *j = parsed(s);
	_cleanup_free_ char *out = NULL, *msg = NULL;
	bool changed;
	/* The snippet is exactly what a merge into nothing makes. */
	CU_ASSERT_EQUAL(merge("", "mcpServers", &E, &out, &changed, &msg), 0);
	CU_ASSERT_STRING_EQUAL(s, out);
	cJSON_Delete(j);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"new_file", test_new_file},
		{"keeps_the_rest", test_keeps_the_rest},
		{"vscode", test_vscode},
		{"refusals", test_refusals},
		{"snippet", test_snippet},
	};
	return run_tests("mcpconf", tests, ARRAY_SIZE(tests));
}
