/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tool table's parameters (tools_table.c, tools_param.c): the table
 * holds together (defaults in range, enums with their default, writes
 * taking dry_run), and what is made of it — the input schema tools/list
 * shows, the help's parameter line and the argument checks' messages —
 * is what clients and tests have known, byte for byte; every parameter
 * has its doc, and the help shows it. proto/params.c makes the same from
 * any list (vault-mcp's own tools): its own parameters, then its extras.
 */
#include "testutil.h"

#include <errno.h>

static void test_table_consistent(void)
{
	size_t n;
	const struct tool *tools = tools_table(&n);
	CU_ASSERT(n > 40);
	for (const struct tool *t = tools; t < tools + n; t++) {
		CU_ASSERT_PTR_EQUAL(tools_find(t->name), t);
		const struct tool_param *p;
		for (size_t i = 0; (p = tool_param_at(t, i)); i++) {
			/* Each name once, found by its name. */
			CU_ASSERT_PTR_EQUAL(tool_param(t, p->name), p);
			if (p->type == P_INT && p->def) {
				char *end;
				long d = strtol(p->def, &end, 10);
				CU_ASSERT(!*end && d >= p->min);
				CU_ASSERT(!p->max || d <= p->max);
			}
			bool range_ok = p->type == P_INT
						? p->min >= 0 && p->max >= 0
						: !p->min && !p->max;
			CU_ASSERT(range_ok);
			if (p->type == P_ENUM) {
				bool found = false;
				for (size_t k = 0; p->values[k]; k++)
					found |= !strcmp(p->values[k], p->def);
				if (!found)
					fprintf(stderr, "  %s.%s: default %s\n",
						t->name, p->name, p->def);
				CU_ASSERT(found);
			}
		}
		/* Every write can be tried first; only a write can. */
		bool writes = !(t->flags & TOOL_READ_ONLY);
		CU_ASSERT_EQUAL(tool_param(t, "dry_run") != NULL, writes);
		CU_ASSERT_EQUAL(tool_param(t, "expected_version") != NULL,
				writes && (tool_param(t, "name") ||
					   tool_param(t, "old_name")));
	}
	CU_ASSERT_PTR_NULL(tool_param(tools_find("get_help"), "limit"));
	CU_ASSERT_PTR_NULL(tool_param_at(tools_find("get_help"), 0));
}

/* The schema's text as tools/list sends it (compact). */
static char *schema_text(const char *tool)
{
	cJSON *s = tool_input_schema(tools_find(tool));
	char *text = cJSON_PrintUnformatted(s);
	cJSON_Delete(s);
	return text;
}

static void test_input_schemas(void)
{
	static const struct {
		const char *tool, *want;
	} cases[] = {
		{"get_policy", "{\"type\":\"object\",\"properties\":{}}"},
		{"read_note",
		 "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
		 "\"string\"},\"offset\":{\"type\":\"integer\",\"minimum\":0},"
		 "\"length\":{\"type\":\"integer\"}},\"required\":[\"name\"]}"},
		{"list_notes",
		 "{\"type\":\"object\",\"properties\":{\"limit\":{\"type\":"
		 "\"integer\",\"minimum\":0,\"maximum\":1000},\"offset\":{"
		 "\"type\":\"integer\",\"minimum\":0},\"folder\":{\"type\":"
		 "\"string\"}}}"},
		{"get_links",
		 "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
		 "\"string\"},\"direction\":{\"type\":\"string\",\"enum\":["
		 "\"in\",\"out\",\"both\"]}},\"required\":[\"name\"]}"},
		{"update_frontmatter",
		 "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
		 "\"string\"},\"updates\":{\"type\":[\"object\",\"string\"]},"
		 "\"expected_version\":{\"type\":\"string\"},\"dry_run\":{"
		 "\"type\":\"boolean\"}},\"required\":[\"name\",\"updates\"]}"},
		{"undo_changes",
		 "{\"type\":\"object\",\"properties\":{\"session\":{\"type\":"
		 "\"string\"},\"since\":{\"type\":\"string\"},\"dry_run\":{"
		 "\"type\":\"boolean\"}}}"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ char *got = schema_text(cases[i].tool);
		if (strcmp(got, cases[i].want))
			fprintf(stderr, "  %s: %s\n", cases[i].tool, got);
		ASSERT_STR_EQ(got, cases[i].want);
	}
}

static void test_params_text(void)
{
	_cleanup_free_ char *s = tools_params_text(tools_find("search_notes"));
	ASSERT_STR_EQ(s, "query: string, mode: string = \"name_partial\", "
			 "tag_logic: string = \"or\", limit: integer = 50, "
			 "case_sensitive?: boolean, cursor?: string");
	_cleanup_free_ char *c = tools_params_text(tools_find("create_note"));
	ASSERT_STR_EQ(c, "name: string, content?: string, frontmatter?: "
			 "object|string, overwrite?: boolean, template?: "
			 "string, expected_version?: string, dry_run?: "
			 "boolean");
	_cleanup_free_ char *e = tools_params_text(tools_find("get_help"));
	ASSERT_STR_EQ(e, "");
}

/*
 * Every parameter of every tool (those writes take without saying so
 * too) has its doc: one line, no final stop. A tool's help text (what
 * get_help and `vaultctl tools TOOL` show) has each parameter's line, and
 * the line has the doc.
 */
static void test_param_docs(void)
{
	size_t n;
	const struct tool *tools = tools_table(&n);
	cJSON *help = tools_help_json();
	CU_ASSERT_EQUAL((size_t)cJSON_GetArraySize(help), n);
	for (const struct tool *t = tools; t < tools + n; t++) {
		_cleanup_free_ char *text = tools_help_text(t);
		const cJSON *h = cJSON_GetArrayItem(help, (int)(t - tools));
		ASSERT_STR_EQ(cJSON_GetStringValue(
				      cJSON_GetObjectItem(h, "description")),
			      text);
		const struct tool_param *p;
		for (size_t i = 0; (p = tool_param_at(t, i)); i++) {
			size_t len = p->doc ? strlen(p->doc) : 0;
			bool ok = len > 0 && !strchr(p->doc, '\n') &&
				  p->doc[len - 1] != '.';
			if (!ok)
				fprintf(stderr, "  %s.%s: doc %s\n", t->name,
					p->name, p->doc ? p->doc : "(none)");
			CU_ASSERT(ok);
			_cleanup_free_ char *line = param_doc(p);
			CU_ASSERT_PTR_NOT_NULL(
				strstr(line, p->doc ? p->doc : "\n"));
			CU_ASSERT_PTR_NOT_NULL(strstr(text, line));
		}
	}
	cJSON_Delete(help);
}

/* A parameter's help line: its type, range and default from the table,
 * then its doc. */
static void test_param_lines(void)
{
	static const struct {
		const char *tool, *param, *want;
	} cases[] = {
		{"list_notes", "limit",
		 "- limit (integer, 0 to 1000, default 100): how many names "
		 "to give; 0: only the total"},
		{"list_tags", "offset",
		 "- offset (integer, 0 or more): where the page starts"},
		{"get_links", "direction",
		 "- direction (one of in, out, both; default both): which "
		 "links: incoming (in), outgoing (out) or both"},
		{"set_task_status", "line",
		 "- line (integer, required, 1 or more): the task's line "
		 "(list_tasks gives it)"},
		{"update_frontmatter", "updates",
		 "- updates (object, or its JSON text, required): key: value "
		 "pairs to merge; a null value removes its key"},
		{"add_tag", "tag",
		 "- tag (string, required): the tag, with or without #"},
		{"replace_text", "replace_all",
		 "- replace_all (boolean): replace every occurrence, not only "
		 "the first"},
		{"append_note", "dry_run",
		 "- dry_run (boolean): true writes nothing and returns the "
		 "unified diff the call would make (dry_run, diff)"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct tool_param *p =
			tool_param(tools_find(cases[i].tool), cases[i].param);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		_cleanup_free_ char *got = param_doc(p);
		ASSERT_STR_EQ(got, cases[i].want);
	}
	/* The tool's help, then a line a parameter. */
	_cleanup_free_ char *h = tools_help_text(tools_find("get_links"));
	ASSERT_STR_EQ(h, "A note's outgoing and incoming links. Outgoing "
			 "links include missing notes.\n"
			 "- name (string, required): the note: its name, an "
			 "alias or its vault path\n"
			 "- direction (one of in, out, both; default both): "
			 "which links: incoming (in), outgoing (out) or both");
	_cleanup_free_ char *e = tools_help_text(tools_find("get_policy"));
	CU_ASSERT_PTR_NULL(strchr(e, '\n'));
}

/* The check's message for args (JSON text), or NULL when they pass. */
static char *check(const char *tool, const char *args_json)
{
	cJSON *args = cJSON_Parse(args_json);
	char *msg = NULL;
	int r = tool_check_args(tools_find(tool), args, &msg);
	cJSON_Delete(args);
	CU_ASSERT(r == 0 || r == -EINVAL);
	CU_ASSERT_EQUAL(r == 0, msg == NULL);
	return msg;
}

static void test_checks(void)
{
	static const struct {
		const char *tool, *args, *want;
	} cases[] = {
		{"read_note", "{\"name\":\"a\",\"offset\":0,\"length\":5}",
		 NULL},
		{"read_note", "{}",
		 "Missing required argument 'name' for "
		 "read_note"},
		{"read_note", "{\"name\":\"a\",\"zz\":1}",
		 "Unknown argument 'zz' for read_note. Valid: name, offset, "
		 "length"},
		{"get_help", "{\"zz\":1}",
		 "Unknown argument 'zz' for get_help. Valid: (none)"},
		{"read_note", "{\"name\":5}",
		 "Invalid argument 'name' for read_note: must be a string"},
		{"read_note", "{\"name\":\"a\",\"length\":1.5}",
		 "Invalid argument 'length' for read_note: must be an integer"},
		{"read_note", "{\"name\":\"a\",\"length\":0}",
		 "Invalid argument 'length' for read_note: must be 1 or more"},
		{"list_tags", "{\"offset\":-1}",
		 "Invalid argument 'offset' for list_tags: must be 0 or more"},
		{"list_tags", "{\"limit\":10001}",
		 "Invalid argument 'limit' for list_tags: must be between 1 "
		 "and 10000"},
		{"list_notes", "{\"limit\":0}", NULL},
		{"search_notes", "{\"query\":\"q\",\"case_sensitive\":1}",
		 "Invalid argument 'case_sensitive' for search_notes: must be "
		 "a boolean"},
		/* An enum's value is the handler's to judge. */
		{"search_notes", "{\"query\":\"q\",\"mode\":\"x\"}", NULL},
		{"update_frontmatter", "{\"name\":\"a\",\"updates\":\"{}\"}",
		 NULL},
		{"update_frontmatter", "{\"name\":\"a\",\"updates\":[]}",
		 "Invalid argument 'updates' for update_frontmatter: must be "
		 "object or string"},
		{"append_note",
		 "{\"name\":\"a\",\"text\":\"t\",\"expected_version\":\"v\","
		 "\"dry_run\":true}",
		 NULL},
		{"append_note", "{\"name\":\"a\",\"text\":\"t\",\"dry_run\":1}",
		 "Invalid argument 'dry_run' for append_note: must be a "
		 "boolean"},
		{"undo_changes", "{\"expected_version\":\"v\"}",
		 "Unknown argument 'expected_version' for undo_changes. Valid: "
		 "session, since, dry_run"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ char *got = check(cases[i].tool, cases[i].args);
		if (cases[i].want) {
			ASSERT_STR_EQ(got, cases[i].want);
		} else {
			if (got)
				fprintf(stderr, "  %s %s: %s\n", cases[i].tool,
					cases[i].args, got);
			CU_ASSERT_PTR_NULL(got);
		}
	}
}

/* A list that is no table entry's, as vault-mcp's tools have: the same
 * schema, lines and checks, the tool's name in the messages. */
static void test_plain_list(void)
{
	static const struct tool_param own[] = {
		{.name = "path",
		 .type = P_STR,
		 .required = true,
		 .doc = "where it is"},
		{.name = "count", .type = P_INT, .min = 1, .max = 9},
		{0},
	};
	static const struct tool_param flag = {
		.name = "force", .type = P_BOOL, .doc = "even so"};
	static const struct tool_param *const extra[] = {&flag, NULL};
	struct param_list l = {.tool = "demo", .own = own, .extra = extra};
	CU_ASSERT_PTR_EQUAL(params_at(&l, 1), &own[1]);
	CU_ASSERT_PTR_EQUAL(params_at(&l, 2), &flag);
	CU_ASSERT_PTR_NULL(params_at(&l, 3));
	CU_ASSERT_PTR_EQUAL(params_find(&l, "force"), &flag);
	CU_ASSERT_PTR_NULL(params_find(&l, "zz"));
	_cleanup_free_ char *text = params_text(&l);
	ASSERT_STR_EQ(text, "path: string, count?: integer, force?: boolean");
	cJSON *schema = params_schema(&l);
	_cleanup_free_ char *js = cJSON_PrintUnformatted(schema);
	cJSON_Delete(schema);
	ASSERT_STR_EQ(js, "{\"type\":\"object\",\"properties\":{\"path\":{"
			  "\"type\":\"string\"},\"count\":{\"type\":"
			  "\"integer\",\"maximum\":9},\"force\":{\"type\":"
			  "\"boolean\"}},\"required\":[\"path\"]}");
	struct sbuf b = {0};
	params_doc_lines(&b, &l);
	ASSERT_STR_EQ(b.s, "\n- path (string, required): where it is"
			   "\n- count (integer, 1 to 9): "
			   "\n- force (boolean): even so");
	sb_free(&b);
	cJSON *args = cJSON_Parse("{\"path\":\"p\",\"count\":10}");
	_cleanup_free_ char *msg = NULL;
	CU_ASSERT_EQUAL(params_check(&l, args, &msg), -EINVAL);
	ASSERT_STR_EQ(msg, "Invalid argument 'count' for demo: must be "
			   "between 1 and 9");
	cJSON_Delete(args);
	struct param_list none = {.tool = "bare"};
	cJSON *empty = cJSON_CreateObject();
	_cleanup_free_ char *ok = NULL;
	CU_ASSERT_EQUAL(params_check(&none, empty, &ok), 0);
	CU_ASSERT_PTR_NULL(ok);
	cJSON_Delete(empty);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"table_consistent", test_table_consistent},
		{"input_schemas", test_input_schemas},
		{"params_text", test_params_text},
		{"param_docs", test_param_docs},
		{"param_lines", test_param_lines},
		{"checks", test_checks},
		{"plain_list", test_plain_list},
	};
	return run_tests("tools_table", tests, ARRAY_SIZE(tests));
}
