/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "tools.h"
#include "json.h"
#include "u8.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>

/* ---- schema fragments ------------------------------------------------------
 */

/*
 * tools/list is what a client pays in context before the user says a
 * word, so the schemas say only what a name and a type do not: parameters
 * have a description only where their name is not enough, and output
 * schemas keep their shape (every key, every nesting) with no more than
 * that. The longer story of each tool is its help (get_help).
 */

/* clang-format off */

#define OBJ(props, req)                                                        \
	"{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req  \
	"]}"
/* A note by name, alias or path (the server's instructions say so once). */
#define P_NAME P_STR("name")
#define P_STR(key) "\"" key "\":{\"type\":\"string\"}"
/* Booleans are false unless given. */
#define P_BOOL(key) "\"" key "\":{\"type\":\"boolean\"}"
/* Numbers are counts: 1 or more unless "minimum" says less (the
 * validator's floor), so the schemas leave the usual minimum unsaid. */
#define P_INT(key, def, min, max)                                              \
	"\"" key "\":{\"type\":\"integer\",\"default\":" def                  \
	",\"minimum\":" min ",\"maximum\":" max "}"
#define P_LIMIT(def, max)                                                      \
	"\"limit\":{\"type\":\"integer\",\"default\":" def ",\"maximum\":" max "}"
/* A heading's text, with or without its #s (help: HELP_SECTION). */
#define P_SECTION P_STR("section")
#define HELP_SECTION "section: the heading's text, with or without the #."
/* An ISO 8601 time (the help says so; a bad one's error shows one). */
#define P_SINCE P_STR("since")
/* Where a part or a page starts, from 0 (past the end: an empty one). */
#define P_OFFSET "\"offset\":{\"type\":\"integer\",\"minimum\":0}"
/* A list read a page at a time: limit and offset. */
#define P_PAGE                                                                 \
	P_LIMIT("1000", "10000") "," P_OFFSET
/* Where a paged list stands: all there are, and the next page's offset
 * (only while more remain). */
#define O_PAGE O_INT("total") "," O_INT("next_offset")

/* Output keys, by shape: a value (text, number, flag: the key says
 * which), a list, an object. "items" and "properties" keep their "type"
 * beside them: validators in strict mode (Ajv's default) warn without. */
#define O_STR(k) "\"" k "\":{}"
#define O_INT(k) O_STR(k)
#define O_BOOL(k) O_STR(k)
#define O_STRS(k) O_ARR(k)
#define O_ANYOBJ(k) "\"" k "\":{\"type\":\"object\"}"
#define O_ARR(k) "\"" k "\":{\"type\":\"array\"}"
/* An object with these keys. */
#define O_OBJ(k, props)                                                        \
	"\"" k "\":{\"type\":\"object\",\"properties\":{" props "}}"
/* A list of objects with these keys. */
#define O_LIST(k, props)                                                       \
	"\"" k "\":{\"type\":\"array\",\"items\":{\"type\":\"object\","        \
	"\"properties\":{" props "}}}"
#define OUT(props) "{\"type\":\"object\",\"properties\":{" props "}}"
/* Array results are wrapped as {"result": [...]} in structured output. */
#define OUT_LIST(props) OUT(O_LIST("result", props))
#define O_BRIEF_KEYS O_STR("name") "," O_STR("path") "," O_STR("modified")
#define OUT_STATUS OUT(O_STR("name") "," O_STR("status"))
#define OUT_SECTION OUT(O_STR("name") "," O_STR("section") "," O_STR("status"))

/* clang-format on */

/* The schemas are JSON text assembled from the fragments above; the
 * table keeps its hand layout. */
/* clang-format off */
static const struct tool TOOLS[] = {
	{
		.name = "read_note",
		.description = "A note's text and version; long notes come in parts.",
		.help = "A long note is read in parts with offset and length (bytes); each part says where the next starts. The version it gives is what expected_version takes.",
		.input_schema = OBJ(
			P_NAME "," P_OFFSET ",\"length\":{\"type\":\"integer\"}",
			"\"name\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT | TOOL_QUICK | TOOL_CORE,
		.run = op_read_note,
	},
	{
		.name = "get_note_metadata",
		.description = "A note's metadata (all but its body) and version.",
		.help = "Everything about a note but its body: frontmatter, tags, aliases, outgoing and incoming links, headings, size, created and modified times, its obsidian:// URI and its version; embeds: what it embeds (![[x]], ![](x)); attachments: the files that are not notes it links to or embeds (target as written, path: the file, null when missing).",
		.input_schema = OBJ(P_NAME, "\"name\""),
		.output_schema = OUT(
			O_STR("name") "," O_ANYOBJ("frontmatter") "," O_STRS("outgoing") "," O_STRS("incoming") "," O_STR("path") "," O_STRS("tags") "," O_STRS("aliases") "," O_ARR("headings") "," O_INT("size") "," O_STR("created") "," O_STR("modified") "," O_STR("uri") "," O_STR("version") "," O_STRS("embeds") "," O_LIST("attachments", O_STR("target") "," O_STR("path"))),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_note_metadata,
	},
	{
		.name = "list_notes",
		.description = "Note names, sorted, a page at a time.",
		.help = "folder: only notes under this folder. limit 0: only the total.",
		.input_schema = OBJ(P_INT("limit", "100", "0", "1000") "," P_OFFSET "," P_STR("folder"),
				    ""),
		.output_schema = OUT(O_STRS("names") "," O_INT("total") "," O_INT("limit") "," O_INT("offset")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_list_notes,
	},
	{
		.name = "browse",
		.description = "A folder's subfolders and notes.",
		.help = "Subfolders come with their note counts. path: the folder; empty for the vault root. A folder note (a note named like its folder) comes as note.",
		.input_schema = OBJ(P_STR("path"), ""),
		.output_schema = OUT(
			O_STR("path") "," O_OBJ("note", O_BRIEF_KEYS) "," O_ARR("folders") "," O_LIST("notes", O_BRIEF_KEYS)),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_browse,
	},
	{
		.name = "search_notes",
		.description = "Find notes by name, text, tag or ranked full text (mode).",
		.help = "mode: name, name_partial (default), content (text), tag (a comma list; tag_logic and|or) or fulltext (ranked, with snippets: plain words find the notes with any of them or their other forms, those with more first; \"phrase\", prefix*, title:, tag:, folder:, AND, OR, -term; limit defaults to 10). case_sensitive: fulltext only, match the words' case exactly. cursor: next_cursor from the previous page.",
		.input_schema = OBJ(
			P_STR("query") ",\"mode\":{\"type\":\"string\",\"enum\":[\"name\",\"name_partial\",\"content\",\"tag\",\"fulltext\"],\"default\":\"name_partial\"},\"tag_logic\":{\"type\":\"string\",\"enum\":[\"or\",\"and\"],\"default\":\"or\"}," P_LIMIT("50", "100") "," P_BOOL("case_sensitive") "," P_STR("cursor"),
			"\"query\""),
		.output_schema = OUT(
			O_LIST("results", O_STR("name") "," O_STR("path") "," O_STRS("tags") "," O_STR("score") "," O_STR("snippet") "," O_INT("line") "," O_STR("text")) "," O_INT("total") "," O_STR("next_cursor") "," O_OBJ("not_searched", O_STRS("notes") "," O_INT("total") "," O_STR("why"))),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_search_notes,
	},
	{
		.name = "get_links",
		.description = "A note's outgoing and incoming links.",
		.help = "Outgoing links include missing notes. direction: in, out or both.",
		.input_schema = OBJ(
			P_NAME ",\"direction\":{\"type\":\"string\",\"enum\":[\"in\",\"out\",\"both\"],\"default\":\"both\"}",
			"\"name\""),
		.output_schema = OUT(O_STR("name") "," O_STRS("outgoing") "," O_STRS("incoming")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK | TOOL_CORE,
		.run = op_get_links,
	},
	{
		.name = "get_backlinks",
		.description = "Notes linking to a note, with line numbers.",
		.help = "Works for a note that does not exist yet (links to a missing note).",
		.input_schema = OBJ(P_NAME, "\"name\""),
		.output_schema = OUT(
			O_STR("target") "," O_BOOL("exists") "," O_LIST("backlinks", O_STR("name") "," O_STR("path") "," O_INT("count") "," O_ARR("lines")) "," O_INT("notes") "," O_INT("links")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_backlinks,
	},
	{
		.name = "find_broken_links",
		.description = "Links to no existing note or file.",
		.input_schema = OBJ(P_PAGE, ""),
		.output_schema = OUT(O_LIST("result", O_STR("source") "," O_STR("target")) "," O_PAGE),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_find_broken_links,
	},
	{
		.name = "get_orphans",
		.description = "Notes with no links in or out.",
		.input_schema = OBJ(P_PAGE, ""),
		.output_schema = OUT(O_INT("count") "," O_LIST("orphans", O_STR("name") "," O_STR("path")) "," O_PAGE),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_get_orphans,
	},
	{
		.name = "read_attachment",
		.description = "An attachment: images as image content, other files as a link.",
		.help = "path: the file's vault path or, as in a link, its name (looked for in the attachment folder .obsidian/app.json names, then anywhere: the shortest path). PNG, JPEG, GIF and WebP come as an image, made smaller when over 8000 pixels a side or 5 MB; SVG as its text; other files as a resource link with type and size. Images over 150 megapixels are refused.",
		.input_schema = OBJ(P_STR("path"), "\"path\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_read_attachment,
	},
	{
		.name = "list_attachments",
		.description = "Files that are not notes, with type and size.",
		.help = "folder: only those under it. unused: only those no note links to or embeds.",
		.input_schema = OBJ(P_STR("folder") "," P_BOOL("unused") "," P_PAGE, ""),
		.output_schema = OUT(O_LIST("attachments", O_STR("path") "," O_STR("type") "," O_INT("size")) "," O_PAGE),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_list_attachments,
	},
	{
		.name = "list_tags",
		.description = "Tags in use, with note counts.",
		.help = "Most used first.",
		.input_schema = OBJ(P_PAGE, ""),
		.output_schema = OUT(O_LIST("tags", O_STR("tag") "," O_INT("count")) "," O_PAGE),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_list_tags,
	},
	{
		.name = "get_headings",
		.description = "A note's headings in order.",
		.input_schema = OBJ(P_NAME, "\"name\""),
		.output_schema = OUT_LIST(O_INT("level") "," O_STR("text")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_headings,
	},
	{
		.name = "read_section",
		.description = "The text under one heading.",
		.help = HELP_SECTION " The note's version comes with it.",
		.input_schema = OBJ(P_NAME "," P_SECTION, "\"name\",\"section\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT | TOOL_QUICK,
		.run = op_read_section,
	},
	{
		.name = "recent_notes",
		.description = "Recently modified notes.",
		.help = "Newest first. since: an ISO 8601 time, e.g. 2024-01-15T00:00:00Z: only notes modified after it.",
		.input_schema = OBJ(P_LIMIT("10", "1000") "," P_SINCE,
				    ""),
		.output_schema = OUT(O_LIST("notes", O_BRIEF_KEYS) "," O_INT("total") "," O_STR("since")),
		.flags = TOOL_READ_ONLY,
		.run = op_recent_notes,
	},
	{
		.name = "create_note",
		.description = "Create a note; the name may include folders.",
		.help = "Its tags must exist in the vault or be allowed by the policy. name: a note name or vault path, e.g. 'Ideas' or 'projects/Ideas'. content: Markdown. frontmatter: a JSON object, e.g. {\"tags\": [\"vc\"]}. overwrite: replace the note if it exists. template: a template note (name or path, looked for in the templates folder of .obsidian/templates.json first) filled with {{title}}, {{date}}, {{time}}, {{date:FORMAT}}, {{time:FORMAT}} (Moment formats; dateFormat and timeFormat from templates.json); its frontmatter is kept, frontmatter and content's own frontmatter are merged into it (tags, aliases and cssclasses lists joined) and content follows its body. A template with Templater syntax (<% %>) is refused: vaultd never runs code from notes.",
		.input_schema = OBJ(
			P_NAME "," P_STR("content") ",\"frontmatter\":{\"type\":[\"string\",\"object\"]}," P_BOOL("overwrite") "," P_STR("template"),
			"\"name\""),
		.output_schema = OUT(O_STR("name") "," O_STR("path") "," O_BOOL("overwritten") "," O_STR("template")),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_create_note,
	},
	{
		.name = "append_note",
		.description = "Add text at the end of a note.",
		.input_schema = OBJ(P_NAME "," P_STR("text"), "\"name\",\"text\""),
		.output_schema = OUT_STATUS,
		.flags = TOOL_CORE,
		.run = op_append_note,
	},
	{
		.name = "prepend_note",
		.description = "Add text at the start of a note's body.",
		.input_schema = OBJ(P_NAME "," P_STR("text"), "\"name\",\"text\""),
		.output_schema = OUT_STATUS,
		.flags = 0,
		.run = op_prepend_note,
	},
	{
		.name = "update_note",
		.description = "Replace a note's body, keeping its frontmatter.",
		.input_schema = OBJ(P_NAME "," P_STR("content"), "\"name\",\"content\""),
		.output_schema = OUT_STATUS,
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_update_note,
	},
	{
		.name = "replace_text",
		.description = "Replace exact text in a note.",
		.help = "old_text must be found exactly; if not, the error shows the nearest lines. The first occurrence is replaced; replace_all: every one.",
		.input_schema = OBJ(P_NAME "," P_STR("old_text") "," P_STR("new_text") "," P_BOOL("replace_all"),
				    "\"name\",\"old_text\",\"new_text\""),
		.output_schema = OUT(O_STR("name") "," O_INT("replaced")),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_replace_text,
	},
	{
		.name = "insert_text",
		.description = "Insert text before or after a matching line.",
		.help = "Give before or after: the text of the line to insert at. If no line has it, the error shows the nearest lines.",
		.input_schema = OBJ(P_NAME "," P_STR("text") "," P_STR("before") "," P_STR("after"),
				    "\"name\",\"text\""),
		.output_schema = OUT(O_STR("name") "," O_STR("position") "," O_STR("pattern")),
		.flags = 0,
		.run = op_insert_text,
	},
	{
		.name = "append_section",
		.description = "Add text at the end of a section.",
		.help = HELP_SECTION,
		.input_schema = OBJ(P_NAME "," P_SECTION "," P_STR("text"),
				    "\"name\",\"section\",\"text\""),
		.output_schema = OUT_SECTION,
		.flags = TOOL_CORE,
		.run = op_append_section,
	},
	{
		.name = "update_section",
		.description = "Replace a section's content; its heading stays.",
		.help = HELP_SECTION,
		.input_schema = OBJ(P_NAME "," P_SECTION "," P_STR("content"),
				    "\"name\",\"section\",\"content\""),
		.output_schema = OUT_SECTION,
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_update_section,
	},
	{
		.name = "delete_section",
		.description = "Delete a heading and its section.",
		.help = HELP_SECTION,
		.input_schema = OBJ(P_NAME "," P_SECTION, "\"name\",\"section\""),
		.output_schema = OUT_SECTION,
		.flags = TOOL_DESTRUCTIVE,
		.run = op_delete_section,
	},
	{
		.name = "set_frontmatter",
		.description = "Set one frontmatter key (value: JSON or text).",
		.help = "Other keys keep their text. value: JSON (numbers, true, lists, objects) or plain text; tags are checked against the policy.",
		.input_schema = OBJ(P_NAME "," P_STR("key") "," P_STR("value"),
				    "\"name\",\"key\",\"value\""),
		.output_schema = OUT(O_STR("name") "," O_STR("key") ",\"value\":{}"),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT,
		.run = op_set_frontmatter,
	},
	{
		.name = "update_frontmatter",
		.description = "Merge keys into the frontmatter; null removes one.",
		.help = "updates: an object of key: value pairs (or its JSON text).",
		.input_schema = OBJ(
			P_NAME ",\"updates\":{\"type\":[\"object\",\"string\"]}",
			"\"name\",\"updates\""),
		.output_schema = OUT(O_STR("name") "," O_STR("path") "," O_BOOL("updated") "," O_ANYOBJ("frontmatter")),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_update_frontmatter,
	},
	{
		.name = "add_tag",
		.description = "Tag a note with a tag the vault has or allows.",
		.help = "tag: with or without #. A new tag is refused unless the policy allows it (get_policy).",
		.input_schema = OBJ(P_NAME "," P_STR("tag"), "\"name\",\"tag\""),
		.output_schema = OUT(O_STR("name") "," O_STRS("tags")),
		.flags = TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_add_tag,
	},
	{
		.name = "remove_tag",
		.description = "Remove a tag from a note.",
		.help = "tag: with or without #.",
		.input_schema = OBJ(P_NAME "," P_STR("tag"), "\"name\",\"tag\""),
		.output_schema = OUT(O_STR("name") "," O_STRS("tags") "," O_BOOL("removed")),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_remove_tag,
	},
	{
		.name = "rename_note",
		.description = "Rename or move a note; links to it follow.",
		.help = "Links to it, its own relative links and links its new name would capture are rewritten in the shortest form that keeps where they lead; nothing else changes. new_name: a new name (same folder) or a vault path. A dry run lists every file it would touch (files: path, to, diff).",
		.input_schema = OBJ(P_STR("old_name") "," P_STR("new_name"),
				    "\"old_name\",\"new_name\""),
		.output_schema = OUT(
			O_STR("old_name") "," O_STR("new_name") "," O_STR("old_path") "," O_STR("new_path") "," O_STRS("files_updated") "," O_INT("links_updated")),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_rename_note,
	},
	{
		.name = "rename_folder",
		.description = "Rename or move a folder; links follow.",
		.help = "Links to its notes and attachments, and their own relative links, are rewritten in the shortest form that keeps where they lead; nothing else changes. One operation: a crash leaves each note whole. old_path, new_path: vault paths. A dry run lists every note that would change (files: path, to, diff).",
		.input_schema = OBJ(P_STR("old_path") "," P_STR("new_path"),
				    "\"old_path\",\"new_path\""),
		.output_schema = OUT(
			O_STR("old_path") "," O_STR("new_path") "," O_INT("notes_moved") "," O_INT("files_moved") "," O_STRS("files_updated") "," O_INT("links_updated")),
		.flags = TOOL_DESTRUCTIVE,
		.run = op_rename_folder,
	},
	{
		.name = "delete_note",
		.description = "Move a note to .trash.",
		.help = "Links to it are marked or kept as the policy says (delete_links). A dry run lists every file it would touch (files: path, to, diff).",
		.input_schema = OBJ(P_NAME, "\"name\""),
		.output_schema = OUT(
			O_STR("name") "," O_STR("path") "," O_STR("trash_path") "," O_STRS("files_updated") "," O_INT("links_updated")),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_delete_note,
	},
	{
		.name = "get_policy",
		.description = "Allowed tags and the vault's write rules.",
		.help = "Allowed tags, tag rules, what a refused write does (on_violation) and what deleting a note does to links to it (delete_links).",
		.input_schema = OBJ("", ""),
		.output_schema = OUT(O_STRS("allowed_tags") "," O_ARR("tag_rules") "," O_STR("on_violation") "," O_STR("delete_links")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_policy,
	},
	{
		.name = "list_violations",
		.description = "Writes the policy refused or warned about.",
		.help = "Newest first.",
		.input_schema = OBJ(P_LIMIT("20", "1000"), ""),
		.output_schema = OUT(O_INT("count") "," O_ARR("violations")),
		.flags = TOOL_READ_ONLY,
		.run = op_list_violations,
	},
	{
		.name = "get_note_history",
		.description = "A note's versions with time and writer.",
		.help = "Newest first, each version with its writer and what changed. Follows the note across renames; a deleted or renamed note is found by its old name.",
		.input_schema = OBJ(P_NAME "," P_LIMIT("50", "100"), "\"name\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_get_note_history,
	},
	{
		.name = "get_note_version",
		.description = "A note's text at one version.",
		.help = "version: a version id, short or full.",
		.input_schema = OBJ(P_NAME "," P_STR("version"), "\"name\",\"version\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_get_note_version,
	},
	{
		.name = "diff_note_versions",
		.description = "Unified diff of a note between two versions.",
		.help = "from_version: the older, to_version: the newer.",
		.input_schema = OBJ(P_NAME "," P_STR("from_version") "," P_STR("to_version"),
				    "\"name\",\"from_version\",\"to_version\""),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_diff_note_versions,
	},
	{
		.name = "restore_note_version",
		.description = "Write an old version back as a new change.",
		.help = "Through the policy, like any write; a deleted note comes back at its old path.",
		.input_schema = OBJ(P_NAME "," P_STR("version"), "\"name\",\"version\""),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_restore_note_version,
	},
	{
		.name = "list_changes",
		.description = "Changes made through MCP (default: this session's).",
		.help = "Newest first. Each change: the note, the change (created, changed, renamed, deleted), the tool, the session, the time and the note's versions before and after. session: another session's id; since: an ISO 8601 time (all sessions' changes since then). cursor: next_cursor from the previous page.",
		.input_schema = OBJ(P_STR("session") "," P_SINCE "," P_LIMIT("50", "500") "," P_STR("cursor"),
				    ""),
		.output_schema = OUT(
			O_STR("session") "," O_LIST("changes", O_STR("note") "," O_STR("from") "," O_STR("change") "," O_STR("tool") "," O_STR("session") "," O_STR("time") "," O_STR("before") "," O_STR("after") "," O_STR("commit")) "," O_STR("next_cursor")),
		.flags = TOOL_READ_ONLY,
		.run = op_list_changes,
	},
	{
		.name = "undo_changes",
		.description = "Revert a session's changes, leaving notes others changed since.",
		.help = "Give session (a session's id, as list_changes shows it) or since (an ISO 8601 time: every MCP session's changes since then), or both. Newest first, through the policy: texts come back, renamed notes go back to their old names with their links, deleted notes come back, created notes go to .trash. A note another writer (Obsidian, another session) changed after these changes is not touched: it is listed under conflicts with both diffs. dry_run: every diff, nothing written.",
		.input_schema = OBJ(P_STR("session") "," P_SINCE, ""),
		.output_schema = OUT(
			O_STR("session") "," O_LIST("undone", O_STR("note") "," O_STR("from") "," O_STR("action") "," O_STR("diff")) "," O_STRS("unchanged") "," O_LIST("conflicts", O_STR("note") "," O_STR("why") "," O_STR("changes_diff") "," O_STR("later_diff")) "," O_ARR("failed")),
		.flags = TOOL_DESTRUCTIVE,
		.run = op_undo_changes,
	},
	{
		.name = "get_help",
		.description = "Every tool's parameters and full help.",
		.input_schema = OBJ("", ""),
		.output_schema = OUT_LIST(O_STR("name") "," O_STR("params") "," O_STR("description")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK | TOOL_CORE,
		.run = op_get_help,
	},
	{
		.name = "query_notes",
		.description = "Notes by property predicates or a Dataview query.",
		.help = "Either where/from/sort/fields, e.g. where='status = \"active\" and due < 2024-06-01 and tags contains \"x\"' (=, !=, <, <=, >, >=, contains, exists, missing, and/or/not; file.name, file.folder, file.path, file.ctime, file.mtime, file.size, file.tags, file.links, file.inlinks), from='#tag and \"folder\"' (also [[note]]: notes linking to it, outgoing([[note]]); and, or, -), sort='due desc', fields='due, priority as p'; or query, a Dataview query: TABLE f1, f2 AS \"x\" FROM #tag WHERE ... SORT f DESC LIMIT n, LIST, or TASK (rows are tasks as list_tasks gives them; WHERE, then SORT, then LIMIT). this: the note 'this' stands for. Property types come from .obsidian/types.json. Page with cursor (next_cursor).",
		.input_schema = OBJ(
			P_STR("where") "," P_STR("from") "," P_STR("sort") "," P_STR("fields") "," P_STR("query") "," P_STR("this") "," P_LIMIT("50", "1000") "," P_STR("cursor"),
			""),
		.output_schema = OUT(
			O_STR("kind") "," O_STRS("columns") "," O_LIST("rows", O_STR("name") "," O_STR("path") "," O_ANYOBJ("fields")) "," O_INT("total") "," O_STR("next_cursor")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_query_notes,
	},
	{
		.name = "query_base",
		.description = "Rows of one view of an Obsidian .base file.",
		.help = "Evaluates the base's filters (and/or/not), formulas and the view's filters, order, sort, groupBy and limit. path: the .base file's vault path; view: its name (default: the first). Rows are files with the view's properties; not_evaluated names what could not be. Page with cursor (next_cursor).",
		.input_schema = OBJ(
			P_STR("path") "," P_STR("view") "," P_LIMIT("50", "1000") "," P_STR("cursor"),
			"\"path\""),
		.output_schema = OUT(
			O_STR("base") "," O_STR("view") "," O_STRS("columns") "," O_LIST("rows", O_STR("name") "," O_STR("path") "," O_ANYOBJ("fields")) "," O_INT("total") "," O_STR("next_cursor") "," O_STRS("not_evaluated")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_query_base,
	},
	{
		.name = "periodic_note",
		.description = "The daily (weekly, ...) note for a date.",
		.help = "As the vault's settings name it: days follow the Periodic Notes plugin (.obsidian/plugins/periodic-notes/data.json) or .obsidian/daily-notes.json (folder, Moment format, template); week, month, quarter and year need the plugin. period: day (default), week, month, quarter or year. date: today (default), yesterday, tomorrow, an ISO date (2024-01-05, 2024-1-5) or a note name in the period's format (2024-W05). Gives the note's path, whether it exists and, if it does, its text and version. create: make a missing note from the period's template ({{title}}, {{date}}, {{time}}, {{date:FORMAT}}, {{date+1d:FORMAT}}, {{yesterday}}, {{tomorrow}}, {{monday:FORMAT}} ... filled; a Templater template is refused), through the policy.",
		.input_schema = OBJ(P_STR("period") "," P_STR("date") "," P_BOOL("create"), ""),
		.output_schema = OUT(
			O_STR("date") "," O_STR("name") "," O_STR("path") "," O_BOOL("exists") "," O_BOOL("created") "," O_STR("version") "," O_STR("text")),
		.flags = 0,
		.run = op_periodic_note,
	},
	{
		.name = "append_periodic_note",
		.description = "Append to the note for a date, made if missing.",
		.help = "period and date as periodic_note. section: append at the end of this heading's section (as append_section) rather than the note's end. A missing note is first made from the period's template.",
		.input_schema = OBJ(P_STR("text") "," P_STR("period") "," P_STR("date") "," P_SECTION, "\"text\""),
		.output_schema = OUT(O_STR("name") "," O_STR("path") "," O_BOOL("created")),
		.flags = 0,
		.run = op_append_periodic_note,
	},
	{
		.name = "list_tasks",
		.description = "Tasks (- [ ] items) across the vault.",
		.help = "Every checkbox item of every note (nested, numbered, in quotes; never in code, math, comments or frontmatter), in note name then line order. fields has what the task has of: description (the text without the fields below), tags (without #), and the Tasks plugin's emoji fields: due 📅, scheduled ⏳, start 🛫, done ✅, created ➕, cancelled ❌, recurrence 🔁, priority (🔺 highest, ⏫ high, 🔼 medium, 🔽 low, ⏬ lowest), id 🆔, depends_on ⛔, on_completion 🏁. status: todo ([ ] and unknown symbols), in_progress ([/]), done ([x], [X]), cancelled ([-]); symbol: the checkbox character. where: query_notes' expressions over the task's fields (status, symbol, text, description, tags (without #; contains also matches parts, econtains(tags, \"x\") does not), due, scheduled, start, done, created, cancelled, priority, recurrence, line, completed, checked), then the note's properties and file.*, e.g. where='status != \"done\" and due <= date(today) and tags contains \"work\"', where='text contains \"invoice\"'. from: notes by #tag, \"folder\", [[note]] (and, or, -). sort: 'due asc, priority desc' (missing values last). Page with cursor (next_cursor).",
		.input_schema = OBJ(
			P_STR("where") "," P_STR("from") "," P_STR("sort") "," P_LIMIT("100", "1000") "," P_STR("cursor"),
			""),
		.output_schema = OUT(
			O_LIST("tasks", O_STR("name") "," O_STR("path") "," O_INT("line") "," O_STR("symbol") "," O_STR("status") "," O_STR("text") "," O_ANYOBJ("fields")) "," O_INT("total") "," O_STR("next_cursor")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_list_tasks,
	},
	{
		.name = "set_task_status",
		.description = "Set one task's checkbox status.",
		.help = "line: the task's line (list_tasks gives it); expected_text: its text as list_tasks gave it: if the line no longer holds that task, nothing is written and the error says where it went. status: todo (or open), in_progress, done, cancelled, or one character for the checkbox ([>], [?]). When the vault uses the Tasks plugin's format (the plugin is installed, or some task has its emoji fields), done adds ✅ and today's date and leaving done removes it; cancelled and ❌ alike. A recurring task (🔁) is not completed: its next occurrence is not computed, so this is refused.",
		.input_schema = OBJ(P_NAME ",\"line\":{\"type\":\"integer\"}," P_STR("status") "," P_STR("expected_text"),
				    "\"name\",\"line\",\"status\",\"expected_text\""),
		.output_schema = OUT(O_STR("name") "," O_INT("line") "," O_STR("symbol") "," O_STR("status") "," O_STR("text")),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT,
		.run = op_set_task_status,
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
		 * first (dry_run: the diff it would make; the result then
		 * carries dry_run and diff). */
		if (!(TOOLS[i].flags & TOOL_READ_ONLY)) {
			cJSON *props = cJSON_GetObjectItem(schemas_in[i],
							   "properties");
			/* Only a write to one named note has a version to
			 * expect (not undo_changes, say). */
			if (cJSON_HasObjectItem(props, "name") ||
			    cJSON_HasObjectItem(props, "old_name")) {
				cJSON *e = cJSON_CreateObject();
				cJSON_AddStringToObject(e, "type", "string");
				cJSON_AddItemToObject(props, "expected_version",
						      e);
			}
			if (!cJSON_HasObjectItem(props, "dry_run")) {
				cJSON *d = cJSON_CreateObject();
				cJSON_AddStringToObject(d, "type", "boolean");
				cJSON_AddItemToObject(props, "dry_run", d);
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
	cJSON_Delete(r->content);
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
		if (!cJSON_IsNumber(a))
			continue;
		/* Every number a tool takes is a count (1 or more) unless
		 * its schema says a lower minimum (offsets: 0). */
		const cJSON *mn = cJSON_GetObjectItem(p, "minimum");
		const cJSON *mx = cJSON_GetObjectItem(p, "maximum");
		double lo = mn ? mn->valuedouble : 1;
		if (a->valuedouble < lo ||
		    (mx && a->valuedouble > mx->valuedouble)) {
			*ret_msg = mx ? xasprintf("Invalid argument '%s' for "
						  "%s: must be between %.0f "
						  "and %.0f",
						  a->string, t->name, lo,
						  mx->valuedouble)
				      : xasprintf("Invalid argument '%s' for "
						  "%s: must be %.0f or more",
						  a->string, t->name, lo);
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

/* An error result: code and text (taken). */
static void call_error(struct tool_result *ret, int code, char *text)
{
	ret->is_error = true;
	ret->code = code;
	ret->text = text;
}

/* The checks before a tool runs: it exists, its arguments fit its
 * schema, the vault is still there. false with ret filled. */
static bool call_allowed(struct vault *v, const struct tool *t,
			 const char *name, const cJSON *args,
			 struct tool_result *ret)
{
	char *msg = NULL;
	if (!t) {
		call_error(ret, RPC_INVALID_PARAMS,
			   xasprintf("Unknown tool %s. Use get_help for the "
				     "list of tools.",
				     QUOTE(name)));
	} else if (!cJSON_IsObject(args)) {
		call_error(
			ret, RPC_INVALID_PARAMS,
			xasprintf("Arguments for %s must be an object", name));
	} else if (validate(t, args, &msg) < 0) {
		call_error(ret, RPC_INVALID_PARAMS, msg);
	} else if ((msg = vault_gone(v))) {
		call_error(ret, code_of(-ENOENT), msg);
	} else {
		return true;
	}
	return false;
}

/* Who writes, as history records it: mcp:TOOL@SESSION for MCP. */
static char *writer_of(const char *name, const struct tool_call *call,
		       const char **ret_session)
{
	const char *source = call->source;
	bool mcp = source && !strcmp(source, "mcp");
	const char *session =
		session_id_valid(call->session) ? call->session : NULL;
	*ret_session = session;
	return mcp && session ? xasprintf("mcp:%s@%s", name, session)
	       : mcp	      ? xasprintf("mcp:%s", name)
			      : xstrdup(source ? source : "unknown");
}

/* A dry run's result: what the write would do, nothing written. */
static void dry_run_result(const struct tool *t, struct tool_ctx *c)
{
	if (t->flags & TOOL_TEXT) {
		free(c->text);
		c->text = xasprintf("Dry run: nothing was written. The change "
				    "would be:\n%s",
				    *c->dry_diff ? c->dry_diff : "(none)\n");
	} else {
		if (!c->json)
			c->json = cJSON_CreateObject();
		cJSON_DeleteItemFromObject(c->json, "dry_run");
		cJSON_AddTrueToObject(c->json, "dry_run");
		cJSON_AddStringToObject(c->json, "diff", c->dry_diff);
	}
}

/* Text that is not UTF-8 repaired in place: whether it had to be. */
static bool repair_text(char **text)
{
	size_t len = strlen(*text);
	if (u8_invalid_at(*text, len) >= len)
		return false;
	char *fixed = u8_repair(*text, len);
	free(*text);
	*text = fixed;
	return true;
}

static void failed_result(struct tool_ctx *c, int r, struct tool_result *ret)
{
	call_error(ret, code_of(r),
		   c->msg ? TAKE_PTR(c->msg) : xstrdup(strerror(-r)));
	repair_text(&ret->text);
	ret->text = bounded(ret->text);
	free(c->text);
	cJSON_Delete(c->json);
	cJSON_Delete(c->content);
}

static void text_result(struct tool_ctx *c, struct tool_result *ret)
{
	ret->text = c->text ? TAKE_PTR(c->text) : xstrdup("");
	cJSON_Delete(c->json);
	if (repair_text(&ret->text) && !c->warning)
		c->warning = xstrdup("The " TOOL_NOT_UTF8_WARNING);
	ret->warning = TAKE_PTR(c->warning);
	ret->info = TAKE_PTR(c->info);
}

static void json_result(struct tool_ctx *c, struct tool_result *ret)
{
	if (!c->json)
		c->json = cJSON_CreateObject();
	if (json_repair_utf8(c->json) && !c->warning)
		c->warning = xstrdup("Some " TOOL_NOT_UTF8_WARNING);
	if (c->warning && cJSON_IsObject(c->json))
		cJSON_AddStringToObject(c->json, "warning", c->warning);
	ret->text = c->compact ? json_compact(c->json) : json_dumps(c->json);
	if (cJSON_IsObject(c->json)) {
		ret->structured = c->json;
	} else {
		ret->structured = cJSON_CreateObject();
		cJSON_AddItemToObject(ret->structured, "result", c->json);
	}
}

void tools_call_ex(struct vault *v, const char *name, const cJSON *args,
		   const struct tool_call *call, struct tool_result *ret)
{
	memset(ret, 0, sizeof(*ret));
	const struct tool *t = tools_find(name);
	cJSON *empty = NULL;
	if (!args || cJSON_IsNull(args))
		args = empty = cJSON_CreateObject();
	if (!call_allowed(v, t, name, args, ret)) {
		cJSON_Delete(empty);
		return;
	}
	const char *session;
	_cleanup_free_ char *src = writer_of(name, call, &session);
	struct tool_ctx c = {.v = v,
			     .args = args,
			     .source = src,
			     .session = session,
			     .progress = call->progress,
			     .progress_ud = call->progress_ud};
	int r = cancel_requested() ? op_fail(&c, -ECANCELED, "Cancelled")
				   : t->run(&c);
	if (r >= 0 && cancel_requested() && (t->flags & TOOL_READ_ONLY))
		r = op_fail(&c, -ECANCELED, "Cancelled");
	cJSON_Delete(empty);
	if (r >= 0 && c.dry_diff)
		dry_run_result(t, &c);
	free(c.dry_diff);
	if (r < 0) {
		failed_result(&c, r, ret);
	} else {
		free(c.msg);
		ret->content = TAKE_PTR(c.content);
		if (c.warning)
			c.warning = bounded(c.warning);
		if (t->flags & TOOL_TEXT)
			text_result(&c, ret);
		else
			json_result(&c, ret);
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

/* What every write takes, said once here rather than in every schema. */
#define HELP_EXPECTED                                                        \
	"expected_version: the note's version as read_note gave it; if the " \
	"note changed since, nothing is written and the error shows what "   \
	"changed."
#define HELP_DRY_RUN                                                          \
	"dry_run: true writes nothing and returns the unified diff the call " \
	"would make (dry_run, diff)."
/* What tools/list leaves unsaid (its hints are read-only and
 * destructive only). */
#define HELP_IDEMPOTENT "Idempotent: the same call again changes nothing more."

cJSON *tools_help_json(void)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < ARRAY_SIZE(TOOLS); i++) {
		cJSON *o = cJSON_CreateObject();
		_cleanup_free_ char *params = tools_params_text(&TOOLS[i]);
		cJSON_AddStringToObject(o, "name", TOOLS[i].name);
		cJSON_AddStringToObject(o, "params", params);
		const cJSON *props = cJSON_GetObjectItem(
			input_schema(&TOOLS[i]), "properties");
		struct sbuf d = {0};
		sb_puts(&d, TOOLS[i].description);
		if (TOOLS[i].help)
			sb_printf(&d, " %s", TOOLS[i].help);
		if (cJSON_HasObjectItem(props, "expected_version"))
			sb_puts(&d, " " HELP_EXPECTED);
		if (!(TOOLS[i].flags & TOOL_READ_ONLY))
			sb_puts(&d, " " HELP_DRY_RUN);
		if ((TOOLS[i].flags & (TOOL_READ_ONLY | TOOL_IDEMPOTENT)) ==
		    TOOL_IDEMPOTENT)
			sb_puts(&d, " " HELP_IDEMPOTENT);
		cJSON_AddStringToObject(o, "description", d.s);
		sb_free(&d);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/*
 * A tool's tools/list entry says what a model needs to call it and a
 * client needs to judge it, each once: the name, a sentence, the input
 * schema without defaults ("default" checks nothing; get_help shows
 * them), the output's shape, and the hints a client needs to judge it:
 * read-only, or a write that only adds (destructiveHint: false; unsaid,
 * a write is destructive). No title: clients show the name, which says
 * as much. The other hints keep their defaults, the cautious readings:
 * idempotentHint false (get_help says which writes are idempotent) and
 * openWorldHint true although the tools touch only the vault. Saying
 * those would cost 20 bytes a tool, and --tools all has to stay under
 * 16 KB.
 */
static void drop_defaults(cJSON *schema)
{
	cJSON *p;
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(schema, "properties"))
		cJSON_DeleteItemFromObject(p, "default");
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
		cJSON_AddStringToObject(o, "description", t->description);
		cJSON *in = cJSON_Duplicate(input_schema(t), 1);
		if (!cJSON_GetArraySize(cJSON_GetObjectItem(in, "required")))
			cJSON_DeleteItemFromObject(in, "required");
		drop_defaults(in);
		cJSON_AddItemToObject(o, "inputSchema", in);
		if (output_schema(t))
			cJSON_AddItemToObject(
				o, "outputSchema",
				cJSON_Duplicate(output_schema(t), 1));
		cJSON *an = cJSON_CreateObject();
		if (t->flags & TOOL_READ_ONLY)
			cJSON_AddTrueToObject(an, "readOnlyHint");
		else if (!(t->flags & TOOL_DESTRUCTIVE))
			cJSON_AddFalseToObject(an, "destructiveHint");
		/* All defaults (a destructive write): nothing to say. */
		if (cJSON_GetArraySize(an))
			cJSON_AddItemToObject(o, "annotations", an);
		else
			cJSON_Delete(an);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}
