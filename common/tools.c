/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "tools.h"
#include "json.h"
#include "u8.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>

/* ---- schema fragments ------------------------------------------------------
 */

/* clang-format off */

#define OBJ(props, req)                                                        \
	"{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req  \
	"]}"
/* A note by name, alias or path (the server's instructions say so once). */
#define P_NAME "\"name\":{\"type\":\"string\"}"
#define P_TEXT(key, what)                                                      \
	"\"" key "\":{\"type\":\"string\",\"description\":\"" what "\"}"
#define P_BOOL(key, def, what)                                                 \
	"\"" key "\":{\"type\":\"boolean\",\"default\":" def                  \
	",\"description\":\"" what "\"}"
#define P_INT(key, def, min, max, what)                                        \
	"\"" key "\":{\"type\":\"integer\",\"default\":" def                  \
	",\"minimum\":" min ",\"maximum\":" max ",\"description\":\"" what    \
	"\"}"
#define P_SECTION                                                              \
	P_TEXT("section", "Heading text of the section (without #)")
#define P_DRY P_BOOL("dry_run", "false", "Only report what would change")
/* A list read a page at a time: limit and offset. */
#define P_PAGE(what)                                                           \
	P_INT("limit", "1000", "1", "10000", what " per page") ","            \
	P_INT("offset", "0", "0", "1000000000", what " to skip")
/* Where a paged list stands: all there are, and the next page's offset
 * (only while more remain). */
#define O_PAGE O_INT("total") "," O_INT("next_offset")

#define O_STR(k) "\"" k "\":{\"type\":\"string\"}"
#define O_INT(k) "\"" k "\":{\"type\":\"integer\"}"
#define O_BOOL(k) "\"" k "\":{\"type\":\"boolean\"}"
#define O_STRS(k) "\"" k "\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}"
#define O_ANYOBJ(k) "\"" k "\":{\"type\":\"object\"}"
#define OUT(props, req)                                                        \
	"{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req "]}"
/* Array results are wrapped as {"result": [...]} in structured output. */
#define OUT_LIST(item)                                                         \
	"{\"type\":\"object\",\"properties\":{\"result\":{\"type\":\"array\"," \
	"\"items\":" item "}},\"required\":[\"result\"]}"
#define O_BRIEF                                                                \
	"{\"type\":\"object\",\"properties\":{" O_STR("name") "," O_STR("path") \
	"," O_STR("modified") "}}"
#define OUT_STATUS OUT(O_STR("name") "," O_STR("status"), "\"name\",\"status\"")
#define OUT_SECTION                                                            \
	OUT(O_STR("name") "," O_STR("section") "," O_STR("status"),            \
	    "\"name\",\"section\",\"status\"")

/* clang-format on */

/* The schemas are JSON text assembled from the fragments above; the
 * table keeps its hand layout. */
/* clang-format off */
static const struct tool TOOLS[] = {
	{
		.name = "read_note",
		.title = "Read note",
		.description =
			"A note's full text. A long note is read in parts with offset and length (bytes); each part says where the next starts.",
		.input_schema = OBJ(
			P_NAME "," P_INT("offset", "0", "0", "1000000000000", "First byte to read") ",\"length\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000000000000,\"description\":\"Most bytes to read from offset (default: to the end)\"}",
			"\"name\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT | TOOL_QUICK | TOOL_CORE,
		.run = op_read_note,
	},
	{
		.name = "get_note_metadata",
		.title = "Note metadata",
		.description =
			"A note's frontmatter, tags, aliases, links in and out, headings, size, times and obsidian:// URI, without its body.",
		.input_schema = OBJ(P_NAME, "\"name\""),
		.output_schema = OUT(
			O_STR("name") "," O_ANYOBJ("frontmatter") "," O_STRS(
				"outgoing") "," O_STRS("incoming") "," O_STR("path") "," O_STRS("tags") "," O_STRS("aliases") ",\"headings\":{\"type\":\"array\"}," O_INT("size") "," O_STR("created") "," O_STR("modified") "," O_STR("uri") "," O_STR("version"),
			"\"name\",\"frontmatter\",\"outgoing\",\"incoming\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_note_metadata,
	},
	{
		.name = "list_notes",
		.title = "List notes",
		.description =
			"Note names, sorted, a page at a time.",
		.input_schema = OBJ(P_INT("limit", "100", "0", "1000",
					  "Names per page") "," P_INT("offset", "0", "0", "1000000000", "Names to skip") "," P_TEXT("folder", "Only notes under this folder"),
				    ""),
		.output_schema = OUT(O_STRS("names") "," O_INT(
					     "total") "," O_INT("limit") "," O_INT("offset"),
				     "\"names\",\"total\",\"limit\",\"offset\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_list_notes,
	},
	{
		.name = "browse",
		.title = "Browse folders",
		.description =
			"The subfolders (with note counts) and notes at one folder level.",
		.input_schema = OBJ(P_TEXT("path", "Folder path; empty for the "
						   "vault root"),
				    ""),
		.output_schema = OUT(
			O_STR("path") ",\"note\":" O_BRIEF
				      ",\"folders\":{\"type\":\"array\"},\"notes\":{\"type\":\"array\",\"items\":" O_BRIEF "}",
			"\"path\",\"folders\",\"notes\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_browse,
	},
	{
		.name = "search_notes",
		.title = "Search notes",
		.description =
			"Search notes. mode: name, name_partial (default), content (text), tag (comma list; tag_logic and|or) or fulltext (ranked, with snippets: plain words find the notes with any of them or their other forms, those with more first; \"phrase\", prefix*, title:, tag:, folder:, AND, OR, -term). Page with next_cursor.",
		.input_schema = OBJ(
			P_TEXT("query", "What to look for") ",\"mode\":{\"type\":\"string\",\"enum\":[\"name\",\"name_partial\",\"content\",\"tag\",\"fulltext\"],\"default\":\"name_partial\"},\"tag_logic\":{\"type\":\"string\",\"enum\":[\"or\",\"and\"],\"default\":\"or\"}," P_INT("limit", "50", "1", "100", "Results per page (fulltext: default 10)") "," P_BOOL("case_sensitive", "false", "fulltext: match the words' case exactly") "," P_TEXT("cursor", "next_cursor from the previous page"),
			"\"query\""),
		.output_schema = OUT(
			"\"results\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" O_STR("name") "," O_STR("path") "," O_STRS("tags") ",\"score\":{\"type\":\"number\"}," O_STR("snippet") "," O_INT("line") "," O_STR("text") "}}}," O_INT("total") "," O_STR("next_cursor") ",\"not_searched\":{\"type\":\"object\",\"properties\":{" O_STRS("notes") "," O_INT("total") "," O_STR("why") "}}",
			"\"results\",\"total\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_search_notes,
	},
	{
		.name = "get_links",
		.title = "Links of a note",
		.description =
			"Names a note links to (outgoing, missing ones too) and that link to it (incoming).",
		.input_schema = OBJ(
			P_NAME ",\"direction\":{\"type\":\"string\",\"enum\":[\"in\",\"out\",\"both\"],\"default\":\"both\"}",
			"\"name\""),
		.output_schema = OUT(O_STR("name") "," O_STRS("outgoing") "," O_STRS("incoming"),
				     "\"name\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK | TOOL_CORE,
		.run = op_get_links,
	},
	{
		.name = "get_backlinks",
		.title = "Backlinks",
		.description =
			"Notes linking to a note, with line numbers; works for a missing note too.",
		.input_schema = OBJ(P_NAME, "\"name\""),
		.output_schema = OUT(
			O_STR("target") "," O_BOOL("exists") ",\"backlinks\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" O_STR("name") "," O_STR("path") "," O_INT("count") ",\"lines\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}}}}," O_INT("notes") "," O_INT("links"),
			"\"target\",\"exists\",\"backlinks\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK | TOOL_CORE,
		.run = op_get_backlinks,
	},
	{
		.name = "find_broken_links",
		.title = "Broken links",
		.description =
			"Links to no existing note or file: [{source, target}], paged.",
		.input_schema = OBJ(P_PAGE("Links"), ""),
		.output_schema = OUT(
			"\"result\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" O_STR("source") "," O_STR("target") "}}}," O_PAGE,
			"\"result\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_find_broken_links,
	},
	{
		.name = "get_orphans",
		.title = "Orphan notes",
		.description =
			"Notes with no links in or out, paged.",
		.input_schema = OBJ(P_PAGE("Notes"), ""),
		.output_schema = OUT(O_INT("count") ",\"orphans\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" O_STR("name") "," O_STR("path") "}}}," O_PAGE,
				     "\"count\",\"orphans\",\"total\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_get_orphans,
	},
	{
		.name = "list_tags",
		.title = "List tags",
		.description =
			"Tags in use with their note counts, most used first, paged.",
		.input_schema = OBJ(P_PAGE("Tags"), ""),
		.output_schema = OUT(
			"\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" O_STR("tag") "," O_INT("count") "}}}," O_PAGE,
			"\"tags\",\"total\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_list_tags,
	},
	{
		.name = "get_headings",
		.title = "Headings",
		.description =
			"A note's headings in order: [{level, text}].",
		.input_schema = OBJ(P_NAME, "\"name\""),
		.output_schema = OUT_LIST(
			"{\"type\":\"object\",\"properties\":{" O_INT(
				"level") "," O_STR("text") "}}"),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_headings,
	},
	{
		.name = "read_section",
		.title = "Read section",
		.description =
			"The text of one section, without its heading line.",
		.input_schema = OBJ(P_NAME "," P_SECTION, "\"name\",\"section\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT | TOOL_QUICK,
		.run = op_read_section,
	},
	{
		.name = "recent_notes",
		.title = "Recent notes",
		.description =
			"Most recently modified notes first, optionally only those after a time.",
		.input_schema = OBJ(P_INT("limit", "10", "1", "1000",
					  "How many notes") "," P_TEXT("since", "ISO 8601 time, e.g. 2024-01-15T00:00:00Z"),
				    ""),
		.output_schema = OUT("\"notes\":{\"type\":\"array\",\"items\":" O_BRIEF
				     "}," O_INT("total") "," O_STR("since"),
				     "\"notes\",\"total\""),
		.flags = TOOL_READ_ONLY,
		.run = op_recent_notes,
	},
	{
		.name = "create_note",
		.title = "Create note",
		.description =
			"Create a note (name may include folders). Its tags must exist in the vault or be allowed; overwrite=true replaces a note.",
		.input_schema = OBJ(
			P_TEXT("name", "Note name or vault path, e.g. 'Ideas' or 'projects/Ideas'") "," P_TEXT("content", "Markdown text") ",\"frontmatter\":{\"type\":[\"string\",\"object\"],\"description\":\"Frontmatter as a JSON object, e.g. {\\\"tags\\\": [\\\"vc\\\"]}\"}," P_BOOL("overwrite", "false", "Replace the note if it exists"),
			"\"name\""),
		.output_schema = OUT(O_STR("name") "," O_STR("path") "," O_BOOL("overwritten"),
				     "\"name\",\"path\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_create_note,
	},
	{
		.name = "append_note",
		.title = "Append to note",
		.description =
			"Add text at the end of a note.",
		.input_schema = OBJ(P_NAME "," P_TEXT("text", "Text to add"),
				    "\"name\",\"text\""),
		.output_schema = OUT_STATUS,
		.flags = TOOL_CORE,
		.run = op_append_note,
	},
	{
		.name = "prepend_note",
		.title = "Prepend to note",
		.description =
			"Add text at the start of a note's body, after its frontmatter.",
		.input_schema = OBJ(P_NAME "," P_TEXT("text", "Text to add"),
				    "\"name\",\"text\""),
		.output_schema = OUT_STATUS,
		.flags = 0,
		.run = op_prepend_note,
	},
	{
		.name = "update_note",
		.title = "Replace note body",
		.description =
			"Replace a note's body; its frontmatter is kept.",
		.input_schema = OBJ(P_NAME "," P_TEXT("content", "The new body"),
				    "\"name\",\"content\""),
		.output_schema = OUT_STATUS,
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_update_note,
	},
	{
		.name = "replace_text",
		.title = "Replace text",
		.description =
			"Replace text in a note's body (first occurrence, or all); fails when it is not found.",
		.input_schema = OBJ(P_NAME "," P_TEXT(
			"old_text", "Exact text to find") "," P_TEXT("new_text", "Replacement") "," P_BOOL("replace_all", "false", "Replace every occurrence"),
				    "\"name\",\"old_text\",\"new_text\""),
		.output_schema = OUT(O_STR("name") "," O_INT("replaced"),
				     "\"name\",\"replaced\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_replace_text,
	},
	{
		.name = "insert_text",
		.title = "Insert text",
		.description =
			"Insert a line before or after the first line containing a pattern (give before or after).",
		.input_schema = OBJ(P_NAME "," P_TEXT(
			"text", "Text to insert") "," P_TEXT("before", "Insert before the line containing this") "," P_TEXT("after", "Insert after the line containing this"),
				    "\"name\",\"text\""),
		.output_schema = OUT(O_STR("name") "," O_STR("position") "," O_STR("pattern"),
				     "\"name\",\"position\",\"pattern\""),
		.flags = 0,
		.run = op_insert_text,
	},
	{
		.name = "append_section",
		.title = "Append to section",
		.description =
			"Add text at the end of a section.",
		.input_schema = OBJ(P_NAME "," P_SECTION "," P_TEXT("text", "Text to add"),
				    "\"name\",\"section\",\"text\""),
		.output_schema = OUT_SECTION,
		.flags = TOOL_CORE,
		.run = op_append_section,
	},
	{
		.name = "update_section",
		.title = "Replace section",
		.description =
			"Replace a section's content; its heading stays.",
		.input_schema = OBJ(P_NAME "," P_SECTION "," P_TEXT("content", "The new content"),
				    "\"name\",\"section\",\"content\""),
		.output_schema = OUT_SECTION,
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_update_section,
	},
	{
		.name = "delete_section",
		.title = "Delete section",
		.description =
			"Delete a section: its heading and content.",
		.input_schema = OBJ(P_NAME "," P_SECTION, "\"name\",\"section\""),
		.output_schema = OUT_SECTION,
		.flags = TOOL_DESTRUCTIVE,
		.run = op_delete_section,
	},
	{
		.name = "set_frontmatter",
		.title = "Set frontmatter key",
		.description =
			"Set one frontmatter key; other keys keep their text. value: JSON (numbers, true, lists, objects) or text; tags are checked against the policy.",
		.input_schema = OBJ(P_NAME "," P_TEXT("key", "Frontmatter key") "," P_TEXT("value", "New value"),
				    "\"name\",\"key\",\"value\""),
		.output_schema = OUT(O_STR("name") "," O_STR("key") ",\"value\":{}",
				     "\"name\",\"key\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT,
		.run = op_set_frontmatter,
	},
	{
		.name = "update_frontmatter",
		.title = "Update frontmatter",
		.description =
			"Merge keys into a note's frontmatter (null removes a key).",
		.input_schema = OBJ(
			P_NAME ",\"updates\":{\"type\":[\"object\",\"string\"],\"description\":\"Object of key: value pairs\"}",
			"\"name\",\"updates\""),
		.output_schema = OUT(O_STR("name") "," O_STR("path") "," O_BOOL(
					     "updated") "," O_ANYOBJ("frontmatter"),
				     "\"name\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_update_frontmatter,
	},
	{
		.name = "add_tag",
		.title = "Add tag",
		.description =
			"Add a tag to a note; it must exist in the vault or be allowed by the policy.",
		.input_schema = OBJ(P_NAME "," P_TEXT("tag", "Tag, with or without #"),
				    "\"name\",\"tag\""),
		.output_schema = OUT(O_STR("name") "," O_STRS("tags"),
				     "\"name\",\"tags\""),
		.flags = TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_add_tag,
	},
	{
		.name = "remove_tag",
		.title = "Remove tag",
		.description =
			"Remove a tag from a note.",
		.input_schema = OBJ(P_NAME "," P_TEXT("tag", "Tag, with or without #"),
				    "\"name\",\"tag\""),
		.output_schema = OUT(O_STR("name") "," O_STRS("tags") "," O_BOOL("removed"),
				     "\"name\",\"tags\",\"removed\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_remove_tag,
	},
	{
		.name = "rename_note",
		.title = "Rename or move note",
		.description =
			"Rename or move a note and rewrite every link to it.",
		.input_schema = OBJ(
			P_TEXT("old_name", "The note to rename") "," P_TEXT("new_name", "New name or vault path") "," P_DRY,
			"\"old_name\",\"new_name\""),
		.output_schema = OUT(
			O_STR("old_name") "," O_STR("new_name") "," O_STR("old_path") "," O_STR("new_path") "," O_STRS("files_updated") "," O_INT("links_updated") "," O_BOOL("dry_run"),
			"\"old_name\",\"new_name\",\"files_updated\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_rename_note,
	},
	{
		.name = "delete_note",
		.title = "Delete note",
		.description =
			"Move a note to .trash/; links to it are marked or kept per policy.",
		.input_schema = OBJ(P_NAME "," P_DRY, "\"name\""),
		.output_schema = OUT(
			O_STR("name") "," O_STR("path") "," O_STR("trash_path") "," O_STRS("files_updated") "," O_INT("links_updated") "," O_BOOL("dry_run") ",\"plan\":{\"type\":\"object\"}",
			"\"name\",\"path\",\"files_updated\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_delete_note,
	},
	{
		.name = "get_policy",
		.title = "Vault policy",
		.description =
			"The vault's write policy: allowed tags, tag rules, what refusals and deletes do.",
		.input_schema = OBJ("", ""),
		.output_schema = OUT(O_STRS("allowed_tags") ",\"tag_rules\":{\"type\":\"array\"}," O_STR("on_violation") "," O_STR("delete_links"),
				     "\"allowed_tags\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_policy,
	},
	{
		.name = "list_violations",
		.title = "Policy violations",
		.description =
			"Writes the policy refused or warned about, newest first.",
		.input_schema = OBJ(P_INT("limit", "20", "1", "1000",
					  "How many"),
				    ""),
		.output_schema = OUT(O_INT("count") ",\"violations\":{\"type\":\"array\"}",
				     "\"count\",\"violations\""),
		.flags = TOOL_READ_ONLY,
		.run = op_list_violations,
	},
	{
		.name = "get_note_history",
		.title = "Note history",
		.description =
			"A note's versions, newest first, with time, writer and change; follows renames and finds gone notes by their old name.",
		.input_schema = OBJ(P_NAME "," P_INT("limit", "50", "1", "100",
					     "Most versions to list"),
				    "\"name\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_get_note_history,
	},
	{
		.name = "get_note_version",
		.title = "Read an old version",
		.description =
			"A note's text at one version from get_note_history.",
		.input_schema = OBJ(P_NAME "," P_TEXT("version",
					     "Version id (short or full)"),
				    "\"name\",\"version\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_get_note_version,
	},
	{
		.name = "diff_note_versions",
		.title = "Compare versions",
		.description =
			"Unified diff of a note between two versions (older first).",
		.input_schema = OBJ(P_NAME "," P_TEXT("from_version",
					     "The older version id") "," P_TEXT("to_version", "The newer version id"),
				    "\"name\",\"from_version\",\"to_version\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_diff_note_versions,
	},
	{
		.name = "restore_note_version",
		.title = "Restore a version",
		.description =
			"Write an old version's text back as a new change, through the policy.",
		.input_schema = OBJ(P_NAME "," P_TEXT("version",
					     "Version id to restore"),
				    "\"name\",\"version\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_restore_note_version,
	},
	{
		.name = "get_help",
		.title = "Help",
		.description =
			"Every tool with its parameters and description.",
		.input_schema = OBJ("", ""),
		.output_schema = OUT_LIST(
			"{\"type\":\"object\",\"properties\":{" O_STR(
				"name") "," O_STR("params") "," O_STR("description") "}}"),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK | TOOL_CORE,
		.run = op_get_help,
	},
};
/* clang-format on */

/* ---- table access
 * ------------------------------------------------------------- */

static cJSON *schemas_in[ARRAY_SIZE(TOOLS)];
static cJSON *schemas_out[ARRAY_SIZE(TOOLS)];
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;

static void parse_schemas(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(TOOLS); i++) {
		schemas_in[i] = cJSON_Parse(TOOLS[i].input_schema);
		if (TOOLS[i].output_schema)
			schemas_out[i] = cJSON_Parse(TOOLS[i].output_schema);
		/* A broken literal is a build defect: tests catch it. */
		if (!schemas_in[i])
			abort();
		/* Every write can be made conditional on the version the
		 * caller read (read_note, get_note_metadata), and tried
		 * first (dry_run: the diff it would make). */
		if (!(TOOLS[i].flags & TOOL_READ_ONLY)) {
			cJSON *props = cJSON_GetObjectItem(schemas_in[i],
							   "properties");
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "type", "string");
			cJSON_AddItemToObject(props, "expected_version", e);
			if (!cJSON_HasObjectItem(props, "dry_run")) {
				cJSON *d = cJSON_CreateObject();
				cJSON_AddStringToObject(d, "type", "boolean");
				cJSON_AddItemToObject(props, "dry_run", d);
			}
			cJSON *op = cJSON_GetObjectItem(schemas_out[i],
							"properties");
			if (op && !cJSON_HasObjectItem(op, "dry_run")) {
				cJSON *d = cJSON_CreateObject();
				cJSON_AddStringToObject(d, "type", "boolean");
				cJSON_AddItemToObject(op, "dry_run", d);
			}
			if (op) {
				cJSON *d = cJSON_CreateObject();
				cJSON_AddStringToObject(d, "type", "string");
				cJSON_AddItemToObject(op, "diff", d);
			}
		}
	}
}

static const cJSON *input_schema(const struct tool *t)
{
	pthread_once(&schemas_once, parse_schemas);
	return schemas_in[t - TOOLS];
}

static const cJSON *output_schema(const struct tool *t)
{
	pthread_once(&schemas_once, parse_schemas);
	return schemas_out[t - TOOLS];
}

const struct tool *tools_table(size_t *ret_n)
{
	*ret_n = ARRAY_SIZE(TOOLS);
	return TOOLS;
}

const struct tool *tools_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(TOOLS); i++)
		if (strcmp(TOOLS[i].name, name) == 0)
			return &TOOLS[i];
	return NULL;
}

void tool_result_clear(struct tool_result *r)
{
	free(r->text);
	free(r->warning);
	free(r->info);
	cJSON_Delete(r->structured);
	memset(r, 0, sizeof(*r));
}

/* ---- argument validation ----------------------------------------------------
 */

static bool type_ok(const char *type, const cJSON *v)
{
	if (!strcmp(type, "string"))
		return cJSON_IsString(v);
	if (!strcmp(type, "boolean"))
		return cJSON_IsBool(v);
	if (!strcmp(type, "object"))
		return cJSON_IsObject(v);
	if (!strcmp(type, "array"))
		return cJSON_IsArray(v);
	if (!strcmp(type, "number"))
		return cJSON_IsNumber(v);
	if (!strcmp(type, "integer"))
		return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
		       v->valuedouble == floor(v->valuedouble) &&
		       fabs(v->valuedouble) < 9e15;
	return true;
}

static const char *article(const char *type)
{
	return (type[0] == 'a' || type[0] == 'i' || type[0] == 'o') ? "an"
								    : "a";
}

static int validate(const struct tool *t, const cJSON *args, char **ret_msg)
{
	const cJSON *schema = input_schema(t);
	const cJSON *props = cJSON_GetObjectItem(schema, "properties");
	const cJSON *a;
	cJSON_ArrayForEach(a, args)
	{
		const cJSON *p =
			cJSON_GetObjectItemCaseSensitive(props, a->string);
		if (!p) {
			struct sbuf b = {0};
			const cJSON *q;
			cJSON_ArrayForEach(q, props) sb_printf(
				&b, "%s%s", b.len ? ", " : "", q->string);
			*ret_msg = xasprintf("Unknown argument %s for %s. "
					     "Valid: %s",
					     QUOTE(a->string), t->name,
					     b.len ? b.s : "(none)");
			sb_free(&b);
			return -EINVAL;
		}
		const cJSON *ty = cJSON_GetObjectItem(p, "type");
		bool ok = false;
		struct sbuf want = {0};
		if (cJSON_IsArray(ty)) {
			const cJSON *x;
			cJSON_ArrayForEach(x, ty)
			{
				ok |= type_ok(x->valuestring, a);
				sb_printf(&want, "%s%s", want.len ? " or " : "",
					  x->valuestring);
			}
		} else {
			ok = type_ok(ty->valuestring, a);
			sb_printf(&want, "%s %s", article(ty->valuestring),
				  ty->valuestring);
		}
		if (!ok) {
			*ret_msg = xasprintf("Invalid argument '%s' for %s: "
					     "must be %s",
					     a->string, t->name, want.s);
			sb_free(&want);
			return -EINVAL;
		}
		sb_free(&want);
		const cJSON *mn = cJSON_GetObjectItem(p, "minimum");
		const cJSON *mx = cJSON_GetObjectItem(p, "maximum");
		if ((mn && a->valuedouble < mn->valuedouble) ||
		    (mx && a->valuedouble > mx->valuedouble)) {
			*ret_msg = xasprintf("Invalid argument '%s' for %s: "
					     "must be between %.0f and %.0f",
					     a->string, t->name,
					     mn ? mn->valuedouble : 0,
					     mx ? mx->valuedouble : 0);
			return -EINVAL;
		}
	}
	const cJSON *req;
	cJSON_ArrayForEach(req, cJSON_GetObjectItem(schema, "required"))
	{
		if (!cJSON_GetObjectItemCaseSensitive(args, req->valuestring)) {
			*ret_msg = xasprintf("Missing required argument '%s' "
					     "for %s",
					     req->valuestring, t->name);
			return -EINVAL;
		}
	}
	return 0;
}

static int code_of(int err)
{
	switch (err) {
	case -ENOENT:
		return RPC_NOT_FOUND;
	case -ENOTUNIQ:
		return RPC_AMBIGUOUS;
	case -EACCES:
		return RPC_PERMISSION;
	case -ETIMEDOUT:
		return RPC_TIMEOUT;
	case -EINVAL:
	case -ENAMETOOLONG:
		return RPC_INVALID_PARAMS;
	case -ECANCELED:
		return RPC_CANCELLED;
	default:
		return RPC_SERVER_ERROR;
	}
}

/*
 * The last bound on what a tool says besides its result: an error or a
 * warning longer than TOOL_MESSAGE_MAX bytes is cut, and says so. (The
 * messages quote arguments short already; this is for long lists.)
 */
#define TOOL_MESSAGE_MAX 4096

static char *bounded(char *s)
{
	size_t len = strlen(s);
	if (len <= TOOL_MESSAGE_MAX)
		return s;
	size_t keep = utf8_cut(s, TOOL_MESSAGE_MAX - 64);
	char *t = xasprintf("%.*s… [message cut: %zu of %zu bytes shown]",
			    (int)keep, s, keep, len);
	free(s);
	return t;
}

void tools_call(struct vault *v, const char *name, const cJSON *args,
		const char *source, struct tool_result *ret)
{
	struct tool_call call = {.source = source};
	tools_call_ex(v, name, args, &call, ret);
}

void tools_call_ex(struct vault *v, const char *name, const cJSON *args,
		   const struct tool_call *call, struct tool_result *ret)
{
	const char *source = call->source;
	memset(ret, 0, sizeof(*ret));
	const struct tool *t = tools_find(name);
	if (!t) {
		ret->is_error = true;
		ret->code = RPC_INVALID_PARAMS;
		ret->text = xasprintf("Unknown tool %s. Use get_help for "
				      "the list of tools.",
				      QUOTE(name));
		return;
	}
	cJSON *empty = NULL;
	if (!args || cJSON_IsNull(args))
		args = empty = cJSON_CreateObject();
	char *msg = NULL;
	if (!cJSON_IsObject(args)) {
		ret->is_error = true;
		ret->code = RPC_INVALID_PARAMS;
		ret->text =
			xasprintf("Arguments for %s must be an object", name);
		cJSON_Delete(empty);
		return;
	}
	if (validate(t, args, &msg) < 0) {
		ret->is_error = true;
		ret->code = RPC_INVALID_PARAMS;
		ret->text = msg;
		cJSON_Delete(empty);
		return;
	}
	char *gone = vault_gone(v);
	if (gone) {
		ret->is_error = true;
		ret->code = code_of(-ENOENT);
		ret->text = gone;
		cJSON_Delete(empty);
		return;
	}
	_cleanup_free_ char *src =
		(source && !strcmp(source, "mcp"))
			? xasprintf("mcp:%s", name)
			: xstrdup(source ? source : "unknown");
	struct tool_ctx c = {.v = v,
			     .args = args,
			     .source = src,
			     .progress = call->progress,
			     .progress_ud = call->progress_ud};
	int r = cancel_requested() ? op_fail(&c, -ECANCELED, "Cancelled")
				   : t->run(&c);
	if (r >= 0 && cancel_requested() && (t->flags & TOOL_READ_ONLY))
		r = op_fail(&c, -ECANCELED, "Cancelled");
	cJSON_Delete(empty);
	if (r >= 0 && c.dry_diff) {
		/* A dry run: what the write would do, nothing written. */
		if (t->flags & TOOL_TEXT) {
			free(c.text);
			c.text = xasprintf("Dry run: nothing was written. The "
					   "change would be:\n%s",
					   *c.dry_diff ? c.dry_diff
						       : "(none)\n");
		} else {
			if (!c.json)
				c.json = cJSON_CreateObject();
			cJSON_DeleteItemFromObject(c.json, "dry_run");
			cJSON_AddTrueToObject(c.json, "dry_run");
			cJSON_AddStringToObject(c.json, "diff", c.dry_diff);
		}
	}
	free(c.dry_diff);
	if (r < 0) {
		ret->is_error = true;
		ret->code = code_of(r);
		ret->text = c.msg ? TAKE_PTR(c.msg) : xstrdup(strerror(-r));
		size_t len = strlen(ret->text);
		if (u8_invalid_at(ret->text, len) < len) {
			char *fixed = u8_repair(ret->text, len);
			free(ret->text);
			ret->text = fixed;
		}
		ret->text = bounded(ret->text);
		free(c.text);
		cJSON_Delete(c.json);
		free(c.warning);
		free(c.info);
		return;
	}
	free(c.msg);
	if (c.warning)
		c.warning = bounded(c.warning);
	if (t->flags & TOOL_TEXT) {
		ret->text = c.text ? TAKE_PTR(c.text) : xstrdup("");
		cJSON_Delete(c.json);
		size_t len = strlen(ret->text);
		if (u8_invalid_at(ret->text, len) < len) {
			char *fixed = u8_repair(ret->text, len);
			free(ret->text);
			ret->text = fixed;
			if (!c.warning)
				c.warning =
					xstrdup("The " TOOL_NOT_UTF8_WARNING);
		}
		ret->warning = TAKE_PTR(c.warning);
		ret->info = TAKE_PTR(c.info);
	} else {
		if (!c.json)
			c.json = cJSON_CreateObject();
		if (json_repair_utf8(c.json) && !c.warning)
			c.warning = xstrdup("Some " TOOL_NOT_UTF8_WARNING);
		if (c.warning && cJSON_IsObject(c.json))
			cJSON_AddStringToObject(c.json, "warning", c.warning);
		ret->text =
			c.compact ? json_compact(c.json) : json_dumps(c.json);
		if (cJSON_IsObject(c.json)) {
			ret->structured = c.json;
		} else {
			ret->structured = cJSON_CreateObject();
			cJSON_AddItemToObject(ret->structured, "result",
					      c.json);
		}
	}
	free(c.warning);
	free(c.info);
}

/* ---- descriptions
 * --------------------------------------------------------------- */

char *tools_params_text(const struct tool *t)
{
	const cJSON *schema = input_schema(t);
	const cJSON *req = cJSON_GetObjectItem(schema, "required");
	struct sbuf b = {0};
	const cJSON *p;
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(schema, "properties"))
	{
		bool required = false;
		const cJSON *r;
		cJSON_ArrayForEach(r, req) required |=
			!strcmp(r->valuestring, p->string);
		const cJSON *ty = cJSON_GetObjectItem(p, "type");
		const cJSON *def = cJSON_GetObjectItem(p, "default");
		_cleanup_free_ char *tys = NULL;
		if (cJSON_IsArray(ty)) {
			struct sbuf tb = {0};
			const cJSON *x;
			cJSON_ArrayForEach(x, ty) sb_printf(
				&tb, "%s%s", tb.len ? "|" : "", x->valuestring);
			tys = sb_steal(&tb);
		} else {
			tys = xstrdup(ty->valuestring);
		}
		sb_printf(&b, "%s%s%s: %s", b.len ? ", " : "", p->string,
			  required || def ? "" : "?", tys);
		if (def) {
			_cleanup_free_ char *d = json_dumps(def);
			sb_printf(&b, " = %s", d);
		}
	}
	return sb_steal(&b);
}

cJSON *tools_help_json(void)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < ARRAY_SIZE(TOOLS); i++) {
		cJSON *o = cJSON_CreateObject();
		_cleanup_free_ char *params = tools_params_text(&TOOLS[i]);
		cJSON_AddStringToObject(o, "name", TOOLS[i].name);
		cJSON_AddStringToObject(o, "params", params);
		cJSON_AddStringToObject(o, "description", TOOLS[i].description);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

cJSON *tools_list_json(unsigned need)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < ARRAY_SIZE(TOOLS); i++) {
		const struct tool *t = &TOOLS[i];
		if ((t->flags & need) != need)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", t->name);
		cJSON_AddStringToObject(o, "title", t->title);
		cJSON_AddStringToObject(o, "description", t->description);
		cJSON *in = cJSON_Duplicate(input_schema(t), 1);
		if (!cJSON_GetArraySize(cJSON_GetObjectItem(in, "required")))
			cJSON_DeleteItemFromObject(in, "required");
		cJSON_AddItemToObject(o, "inputSchema", in);
		if (output_schema(t))
			cJSON_AddItemToObject(
				o, "outputSchema",
				cJSON_Duplicate(output_schema(t), 1));
		/* Only what differs from the defaults (not read-only,
		 * destructive, not idempotent, open world). The title is
		 * the tool's own (vault-mcp copies it here for clients of
		 * protocol versions without one). */
		cJSON *an = cJSON_AddObjectToObject(o, "annotations");
		if (t->flags & TOOL_READ_ONLY) {
			cJSON_AddTrueToObject(an, "readOnlyHint");
		} else {
			cJSON_AddBoolToObject(an, "destructiveHint",
					      t->flags & TOOL_DESTRUCTIVE);
			if (t->flags & TOOL_IDEMPOTENT)
				cJSON_AddTrueToObject(an, "idempotentHint");
		}
		cJSON_AddBoolToObject(an, "openWorldHint", false);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}
