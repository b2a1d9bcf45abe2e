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
	"],\"additionalProperties\":false}"
#define P_NAME                                                                 \
	"\"name\":{\"type\":\"string\",\"description\":\"Note name, alias or " \
	"vault path, with or without .md (case-insensitive)\"}"
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
			"Read a note's full text: frontmatter and body. A "
			"long note can be read in parts: offset and length "
			"in bytes (cut at characters); each part says the "
			"note's size and the offset of the next part.",
		.input_schema = OBJ(
			P_NAME "," P_INT("offset", "0", "0", "1000000000000", "First byte to read") ",\"length\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000000000000,\"description\":\"Most bytes to read from offset (default: to the end)\"}",
			"\"name\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT | TOOL_QUICK,
		.run = op_read_note,
	},
	{
		.name = "get_note_metadata",
		.title = "Note metadata",
		.description =
			"A note's metadata without its body: frontmatter, tags, "
			"aliases, outgoing and incoming links, headings, size, "
			"created/modified times and its obsidian:// URI.",
		.input_schema = OBJ(P_NAME, "\"name\""),
		.output_schema = OUT(
			O_STR("name") "," O_ANYOBJ("frontmatter") "," O_STRS(
				"outgoing") "," O_STRS("incoming") "," O_STR("path") "," O_STRS("tags") "," O_STRS("aliases") ",\"headings\":{\"type\":\"array\"}," O_INT("size") "," O_STR("created") "," O_STR("modified") "," O_STR("uri"),
			"\"name\",\"frontmatter\",\"outgoing\",\"incoming\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_note_metadata,
	},
	{
		.name = "list_notes",
		.title = "List notes",
		.description =
			"List note names (no paths), sorted, a page at a time. "
			"To find a particular note use search_notes.",
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
			"List the subfolders (with note counts) and the notes at "
			"one folder level; also the note at that path, if any.",
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
			"Search notes. mode: name (exact name or alias), "
			"name_partial (part of a name, the default), content "
			"(text in the body, case-insensitive), tag (a comma "
			"list of tags; 'vc' also matches 'vc/project'; "
			"tag_logic and|or) or fulltext (ranked, best first, "
			"with snippets; query syntax: words, \"exact phrase\", "
			"prefix*, title:word, tag:x, folder:path, AND, OR, "
			"-term, -tag:x, ( ... )). Pages with limit (default "
			"50; fulltext 10) and the next_cursor of the previous "
			"page. Notes over 64 MiB are searched by name and tag "
			"only; not_searched names them.",
		.input_schema = OBJ(
			P_TEXT("query", "What to look for") ",\"mode\":{\"type\":\"string\",\"enum\":[\"name\",\"name_partial\",\"content\",\"tag\",\"fulltext\"],\"default\":\"name_partial\"},\"tag_logic\":{\"type\":\"string\",\"enum\":[\"or\",\"and\"],\"default\":\"or\"}," P_INT("limit", "50", "1", "100", "Results per page (fulltext: default 10)") "," P_BOOL("case_sensitive", "false", "fulltext: match the words' case exactly") "," P_TEXT("cursor", "next_cursor from the previous page"),
			"\"query\""),
		.output_schema = OUT(
			O_STR("query") "," O_STR("mode") ",\"results\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" O_STR("name") "," O_STR("path") "," O_STRS("tags") ",\"score\":{\"type\":\"number\"}," O_STR("snippet") "," O_INT("line") "," O_STR("text") "}}}," O_INT("total") "," O_STR("next_cursor") ",\"not_searched\":{\"type\":\"object\",\"description\":\"Notes too big for their text to be searched (content, fulltext)\",\"properties\":{" O_STRS("notes") "," O_INT("total") "," O_STR("why") "}}",
			"\"results\",\"total\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_search_notes,
	},
	{
		.name = "get_links",
		.title = "Links of a note",
		.description = "Names of the notes a note links to (outgoing, "
			       "including links to missing notes) and of the "
			       "notes linking to it (incoming).",
		.input_schema = OBJ(
			P_NAME ",\"direction\":{\"type\":\"string\",\"enum\":[\"in\",\"out\",\"both\"],\"default\":\"both\"}",
			"\"name\""),
		.output_schema = OUT(O_STR("name") "," O_STRS("outgoing") "," O_STRS("incoming"),
				     "\"name\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_links,
	},
	{
		.name = "get_backlinks",
		.title = "Backlinks",
		.description =
			"The notes linking to a note, with the number of links "
			"and their line numbers. Works for a note that does not "
			"exist (to find the links that name it).",
		.input_schema = OBJ(P_NAME, "\"name\""),
		.output_schema = OUT(
			O_STR("target") "," O_BOOL("exists") ",\"backlinks\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" O_STR("name") "," O_STR("path") "," O_INT("count") ",\"lines\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}}}}," O_INT("notes") "," O_INT("links"),
			"\"target\",\"exists\",\"backlinks\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_backlinks,
	},
	{
		.name = "find_broken_links",
		.title = "Broken links",
		.description =
			"Every link that points to no existing note or file: "
			"[{source, target}]. A list longer than limit comes a "
			"page at a time as {result, total, next_offset}; ask "
			"for the next page with offset=next_offset.",
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
			"Notes with no links in or out (no other note links to "
			"them and they link to no other note), a page at a "
			"time: count (on this page), total and, while more "
			"remain, next_offset.",
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
			"Every tag in use, with the number of notes carrying "
			"it, most used first, a page at a time: total and, "
			"while more remain, next_offset.",
		.input_schema = OBJ(P_PAGE("Tags"), ""),
		.output_schema = OUT(
			"\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" O_STR("tag") "," O_INT("count") "}}}," O_PAGE,
			"\"tags\",\"total\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_list_tags,
	},
	{
		.name = "get_headings",
		.title = "Headings",
		.description = "A note's headings in order: [{level, text}].",
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
		.description = "The text of one section (without its heading "
			       "line), up to the next heading of the same or "
			       "a higher level.",
		.input_schema = OBJ(P_NAME "," P_SECTION, "\"name\",\"section\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT | TOOL_QUICK,
		.run = op_read_section,
	},
	{
		.name = "recent_notes",
		.title = "Recent notes",
		.description = "Most recently modified notes first; optionally "
			       "only those modified after an ISO 8601 time.",
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
			"Create a note. name may include folders (created as "
			"needed). frontmatter is a JSON object (or its text); "
			"its tags must already exist in the vault or be "
			"allowed by the policy. overwrite=true replaces an "
			"existing note.",
		.input_schema = OBJ(
			P_TEXT("name", "Note name or vault path, e.g. 'Ideas' or 'projects/Ideas'") "," P_TEXT("content", "Markdown text") ",\"frontmatter\":{\"type\":[\"string\",\"object\"],\"description\":\"Frontmatter as a JSON object, e.g. {\\\"tags\\\": [\\\"vc\\\"]}\"}," P_BOOL("overwrite", "false", "Replace the note if it exists"),
			"\"name\""),
		.output_schema = OUT(O_STR("name") "," O_STR("path") "," O_BOOL("overwritten"),
				     "\"name\",\"path\""),
		.flags = TOOL_DESTRUCTIVE,
		.run = op_create_note,
	},
	{
		.name = "append_note",
		.title = "Append to note",
		.description = "Add text at the end of a note, after a blank "
			       "line.",
		.input_schema = OBJ(P_NAME "," P_TEXT("text", "Text to add"),
				    "\"name\",\"text\""),
		.output_schema = OUT_STATUS,
		.flags = 0,
		.run = op_append_note,
	},
	{
		.name = "prepend_note",
		.title = "Prepend to note",
		.description = "Add text at the start of a note's body (after "
			       "its frontmatter), followed by a blank line.",
		.input_schema = OBJ(P_NAME "," P_TEXT("text", "Text to add"),
				    "\"name\",\"text\""),
		.output_schema = OUT_STATUS,
		.flags = 0,
		.run = op_prepend_note,
	},
	{
		.name = "update_note",
		.title = "Replace note body",
		.description = "Replace a note's body; its frontmatter is kept "
			       "exactly as it is.",
		.input_schema = OBJ(P_NAME "," P_TEXT("content", "The new body"),
				    "\"name\",\"content\""),
		.output_schema = OUT_STATUS,
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT,
		.run = op_update_note,
	},
	{
		.name = "replace_text",
		.title = "Replace text",
		.description = "Replace text in a note's body (the first "
			       "occurrence, or all with replace_all). Returns "
			       "how many were replaced; fails when the text is "
			       "not found.",
		.input_schema = OBJ(P_NAME "," P_TEXT(
			"old_text", "Exact text to find") "," P_TEXT("new_text", "Replacement") "," P_BOOL("replace_all", "false", "Replace every occurrence"),
				    "\"name\",\"old_text\",\"new_text\""),
		.output_schema = OUT(O_STR("name") "," O_INT("replaced"),
				     "\"name\",\"replaced\""),
		.flags = TOOL_DESTRUCTIVE,
		.run = op_replace_text,
	},
	{
		.name = "insert_text",
		.title = "Insert text",
		.description = "Insert text as a new line before or after the "
			       "first line containing a pattern. Give exactly "
			       "one of before/after.",
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
		.description = "Add text at the end of a section.",
		.input_schema = OBJ(P_NAME "," P_SECTION "," P_TEXT("text", "Text to add"),
				    "\"name\",\"section\",\"text\""),
		.output_schema = OUT_SECTION,
		.flags = 0,
		.run = op_append_section,
	},
	{
		.name = "update_section",
		.title = "Replace section",
		.description = "Replace a section's content; its heading stays.",
		.input_schema = OBJ(P_NAME "," P_SECTION "," P_TEXT("content", "The new content"),
				    "\"name\",\"section\",\"content\""),
		.output_schema = OUT_SECTION,
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT,
		.run = op_update_section,
	},
	{
		.name = "delete_section",
		.title = "Delete section",
		.description = "Delete a section: its heading and content up to "
			       "the next heading of the same or a higher level.",
		.input_schema = OBJ(P_NAME "," P_SECTION, "\"name\",\"section\""),
		.output_schema = OUT_SECTION,
		.flags = TOOL_DESTRUCTIVE,
		.run = op_delete_section,
	},
	{
		.name = "set_frontmatter",
		.title = "Set frontmatter key",
		.description =
			"Set one top-level frontmatter key; other keys keep "
			"their order and text. value is text: JSON (numbers, "
			"true, [lists], {objects}) is stored as such, anything "
			"else as text. For tags: a JSON list or 'a, b'; tags "
			"are checked against the allowed list.",
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
		.description = "Merge key/value pairs into a note's frontmatter "
			       "(null removes a key); other keys keep their "
			       "order and text.",
		.input_schema = OBJ(
			P_NAME ",\"updates\":{\"type\":[\"object\",\"string\"],\"description\":\"Object of key: value pairs\"}",
			"\"name\",\"updates\""),
		.output_schema = OUT(O_STR("name") "," O_STR("path") "," O_BOOL(
					     "updated") "," O_ANYOBJ("frontmatter"),
				     "\"name\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT,
		.run = op_update_frontmatter,
	},
	{
		.name = "add_tag",
		.title = "Add tag",
		.description = "Add a tag to a note's frontmatter. The tag must "
			       "already exist in the vault (or be allowed by the "
			       "policy) and meet its rules (e.g. 'Person' only "
			       "on notes named '@...').",
		.input_schema = OBJ(P_NAME "," P_TEXT("tag", "Tag, with or without #"),
				    "\"name\",\"tag\""),
		.output_schema = OUT(O_STR("name") "," O_STRS("tags"),
				     "\"name\",\"tags\""),
		.flags = TOOL_IDEMPOTENT,
		.run = op_add_tag,
	},
	{
		.name = "remove_tag",
		.title = "Remove tag",
		.description = "Remove a tag from a note's frontmatter.",
		.input_schema = OBJ(P_NAME "," P_TEXT("tag", "Tag, with or without #"),
				    "\"name\",\"tag\""),
		.output_schema = OUT(O_STR("name") "," O_STRS("tags") "," O_BOOL("removed"),
				     "\"name\",\"tags\",\"removed\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT,
		.run = op_remove_tag,
	},
	{
		.name = "rename_note",
		.title = "Rename or move note",
		.description =
			"Rename a note or move it (new_name may include a "
			"folder) and rewrite every link pointing at it in the "
			"other notes: [[x]], [[x|alias]], [[x#heading]], "
			"![[x]], [[folder/x]] and [text](x.md).",
		.input_schema = OBJ(
			P_TEXT("old_name", "The note to rename") "," P_TEXT("new_name", "New name or vault path") "," P_DRY,
			"\"old_name\",\"new_name\""),
		.output_schema = OUT(
			O_STR("old_name") "," O_STR("new_name") "," O_STR("old_path") "," O_STR("new_path") "," O_STRS("files_updated") "," O_INT("links_updated") "," O_BOOL("dry_run"),
			"\"old_name\",\"new_name\",\"files_updated\""),
		.flags = TOOL_DESTRUCTIVE,
		.run = op_rename_note,
	},
	{
		.name = "delete_note",
		.title = "Delete note",
		.description =
			"Move a note to the vault's .trash/ folder. Links to it "
			"become [[name (deleted)]] (or are kept, per policy). "
			"dry_run shows the plan.",
		.input_schema = OBJ(P_NAME "," P_DRY, "\"name\""),
		.output_schema = OUT(
			O_STR("name") "," O_STR("path") "," O_STR("trash_path") "," O_STRS("files_updated") "," O_INT("links_updated") "," O_BOOL("dry_run") ",\"plan\":{\"type\":\"object\"}",
			"\"name\",\"path\",\"files_updated\""),
		.flags = TOOL_DESTRUCTIVE,
		.run = op_delete_note,
	},
	{
		.name = "get_policy",
		.title = "Vault policy",
		.description = "The vault's effective write policy: allowed "
			       "tags, tag rules, what a refused write does, what "
			       "deleting does to links, ignored paths.",
		.input_schema = OBJ("", ""),
		.output_schema = OUT(O_STRS("allowed_tags") ",\"tag_rules\":{\"type\":\"array\"}," O_STR("on_violation") "," O_STR("delete_links"),
				     "\"allowed_tags\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_policy,
	},
	{
		.name = "list_violations",
		.title = "Policy violations",
		.description = "Writes the policy refused (or warned about), "
			       "newest first, with who wrote and where refused "
			       "text was kept.",
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
		.description = "Versions of a note, newest first: short id, "
			       "time (UTC), who wrote it (mcp:<tool>, "
			       "mount:<program>, vaultctl, external) and what "
			       "changed. Follows the note across renames. "
			       "Every write is recorded, from any writer.",
		.input_schema = OBJ(P_NAME "," P_INT("limit", "50", "1", "100",
					     "Most versions to list"),
				    "\"name\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_get_note_history,
	},
	{
		.name = "get_note_version",
		.title = "Read an old version",
		.description = "A note's text at one version (a short or full "
			       "id from get_note_history), with its path, "
			       "tags and times.",
		.input_schema = OBJ(P_NAME "," P_TEXT("version",
					     "Version id (short or full)"),
				    "\"name\",\"version\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_get_note_version,
	},
	{
		.name = "diff_note_versions",
		.title = "Compare versions",
		.description = "Unified diff of a note between two versions "
			       "(older first), with the numbers of added and "
			       "deleted lines.",
		.input_schema = OBJ(P_NAME "," P_TEXT("from_version",
					     "The older version id") "," P_TEXT("to_version", "The newer version id"),
				    "\"name\",\"from_version\",\"to_version\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_diff_note_versions,
	},
	{
		.name = "restore_note_version",
		.title = "Restore a version",
		.description = "Write a note's text from an old version back "
			       "as a new change (checked by the policy like "
			       "any write). History is never rewritten: the "
			       "restore is a new version.",
		.input_schema = OBJ(P_NAME "," P_TEXT("version",
					     "Version id to restore"),
				    "\"name\",\"version\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_restore_note_version,
	},
	{
		.name = "get_help",
		.title = "Help",
		.description = "Every tool with its parameters and description.",
		.input_schema = OBJ("", ""),
		.output_schema = OUT_LIST(
			"{\"type\":\"object\",\"properties\":{" O_STR(
				"name") "," O_STR("params") "," O_STR("description") "}}"),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
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
		ret->text = json_dumps(c.json);
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

cJSON *tools_list_json(bool read_only)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < ARRAY_SIZE(TOOLS); i++) {
		const struct tool *t = &TOOLS[i];
		if (read_only && !(t->flags & TOOL_READ_ONLY))
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", t->name);
		cJSON_AddStringToObject(o, "title", t->title);
		cJSON_AddStringToObject(o, "description", t->description);
		cJSON_AddItemToObject(o, "inputSchema",
				      cJSON_Duplicate(input_schema(t), 1));
		if (output_schema(t))
			cJSON_AddItemToObject(
				o, "outputSchema",
				cJSON_Duplicate(output_schema(t), 1));
		cJSON *an = cJSON_AddObjectToObject(o, "annotations");
		cJSON_AddStringToObject(an, "title", t->title);
		cJSON_AddBoolToObject(an, "readOnlyHint",
				      t->flags & TOOL_READ_ONLY);
		if (!(t->flags & TOOL_READ_ONLY)) {
			cJSON_AddBoolToObject(an, "destructiveHint",
					      t->flags & TOOL_DESTRUCTIVE);
			cJSON_AddBoolToObject(an, "idempotentHint",
					      t->flags & TOOL_IDEMPOTENT);
		} else {
			cJSON_AddBoolToObject(an, "idempotentHint",
					      t->flags & TOOL_IDEMPOTENT);
		}
		cJSON_AddBoolToObject(an, "openWorldHint", false);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}
