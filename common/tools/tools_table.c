/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tool table: every tool's name, description, help, parameters (in
 * C, each with a one-line doc: tools_param.c makes the input schema, the
 * help's parameter lines and the argument checks from them; vaultctl its
 * key=value types), output schema, annotations and handler, in the order
 * tools/list and get_help show them.
 */
#include "tools.h"

/* ---- parameters ------------------------------------------------------------
 */

/*
 * tools/list is what a client pays in context before the user says a
 * word, so the schemas say only what a name and a type do not; the
 * longer story of each tool is its help (get_help): the tool's own help,
 * then each parameter's doc (one line, no final stop). A tool's
 * parameters are a compound literal ended by an entry without a name.
 */
/* clang-format off */
#define PARAMS(...) .params = (const struct tool_param[]){__VA_ARGS__, {.name = NULL}}
#define I_STR(key, doc_) {.name = key, .type = P_STR, .doc = doc_}
#define I_REQ(key, doc_) {.name = key, .type = P_STR, .required = true, .doc = doc_}
/* A note by name, alias or path (the server's instructions say so too). */
#define DOC_NOTE "the note: its name, an alias or its vault path"
#define I_NAME I_REQ("name", DOC_NOTE)
/* Booleans are false unless given. */
#define I_BOOL(key, doc_) {.name = key, .type = P_BOOL, .doc = doc_}
/* An object, or its JSON text. */
#define I_OBJECT(key, doc_) {.name = key, .type = P_OBJECT, .doc = doc_}
#define I_OBJECT_REQ(key, doc_) {.name = key, .type = P_OBJECT, .required = true, .doc = doc_}
/* One of the values (the first argument after the doc is the default). */
#define I_ENUM(key, doc_, def_, ...)                                                 \
	{.name = key, .type = P_ENUM, .def = def_, .doc = doc_,                                  \
	 .values = (const char *const[]){__VA_ARGS__, NULL}}
/* How many to give, from 1. */
#define I_LIMIT_AS(def_, max_, doc_) {.name = "limit", .type = P_INT, .def = #def_, .min = 1, .max = max_, .doc = doc_}
#define I_LIMIT(def_, max_) I_LIMIT_AS(def_, max_, "how many to give")
/* A heading's text. */
#define I_SECTION I_REQ("section", "the heading's text, with or without the #s")
/* An ISO 8601 time (a bad one's error shows one); what it bounds. */
#define I_SINCE(what) I_STR("since", "an ISO 8601 time, e.g. 2024-01-15T00:00:00Z: " what)
/* Where a page starts, from 0 (past the end: an empty one). */
#define I_OFFSET {.name = "offset", .type = P_INT, .min = 0, .doc = "where the page starts"}
/* A list read a page at a time: limit and offset. */
#define I_PAGE I_LIMIT(1000, 10000), I_OFFSET
/* A page read with a cursor. */
#define I_CURSOR I_STR("cursor", "next_cursor from the previous page")
/* A tag, as add_tag and remove_tag take it. */
#define I_TAG I_REQ("tag", "the tag, with or without #")
/* A version of a note, as get_note_history lists them. */
#define DOC_VERSION "a version id (get_note_history), short or full"
/* A periodic note's period and date (periodic_note, append_periodic_note). */
#define I_PERIOD I_STR("period", "day (default), week, month, quarter or year")
#define I_DATE I_STR("date", "today (default), yesterday, tomorrow, an ISO date (2024-01-05, 2024-1-5) or a note name in the period's format (2024-W05)")
/* clang-format on */

/* ---- output schemas ---------------------------------------------------------
 */

/* clang-format off */

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

/* The table keeps its hand layout. */
/* clang-format off */
static const struct tool TOOLS[] = {
	{
		.name = "read_note",
		.description = "A note's text and version; long notes come in parts.",
		.help = "A long note is read in parts; each part says where the next starts. The version it gives is what expected_version takes.",
		PARAMS(I_NAME, {.name = "offset", .type = P_INT, .min = 0, .doc = "where the part starts, in bytes"}, {.name = "length", .type = P_INT, .min = 1, .doc = "the part's length in bytes; without it, the rest"}),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT | TOOL_QUICK | TOOL_CORE,
		.run = op_read_note,
	},
	{
		.name = "get_note_metadata",
		.description = "A note's metadata (all but its body) and version.",
		.help = "Everything about a note but its body: frontmatter, tags, aliases, outgoing and incoming links, headings, size, created and modified times, its obsidian:// URI and its version; embeds: what it embeds (![[x]], ![](x)); attachments: the files that are not notes it links to or embeds (target as written, path: the file, null when missing).",
		PARAMS(I_NAME),
		.output_schema = OUT(
			O_STR("name") "," O_ANYOBJ("frontmatter") "," O_STRS("outgoing") "," O_STRS("incoming") "," O_STR("path") "," O_STRS("tags") "," O_STRS("aliases") "," O_ARR("headings") "," O_INT("size") "," O_STR("created") "," O_STR("modified") "," O_STR("uri") "," O_STR("version") "," O_STRS("embeds") "," O_LIST("attachments", O_STR("target") "," O_STR("path"))),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_note_metadata,
	},
	{
		.name = "list_notes",
		.description = "Note names, sorted, a page at a time.",
		PARAMS({.name = "limit", .type = P_INT, .def = "100", .min = 0, .max = 1000, .doc = "how many names to give; 0: only the total"}, I_OFFSET, I_STR("folder", "only notes under this folder")),
		.output_schema = OUT(O_STRS("names") "," O_INT("total") "," O_INT("limit") "," O_INT("offset")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_list_notes,
	},
	{
		.name = "browse",
		.description = "A folder's subfolders and notes.",
		.help = "Subfolders come with their note counts. A folder note (a note named like its folder) comes as note.",
		PARAMS(I_STR("path", "the folder; empty for the vault root")),
		.output_schema = OUT(
			O_STR("path") "," O_OBJ("note", O_BRIEF_KEYS) "," O_ARR("folders") "," O_LIST("notes", O_BRIEF_KEYS)),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_browse,
	},
	{
		.name = "search_notes",
		.description = "Find notes by name, text, tag or ranked full text (mode).",
		.help = "Full text (mode fulltext) is ranked, with snippets: plain words find the notes with any of them or their other forms, those with more first; \"phrase\", prefix*, title:, tag:, folder:, AND, OR, -term. A result lists 10 of a note's tags at most (more_tags: how many more; read_note has them all).",
		PARAMS(I_REQ("query", "what to find, read as mode says"), I_ENUM("mode", "what query is matched against: a note's name (name), part of its name (name_partial), its text (content), its tags (tag: a comma list) or ranked full text (fulltext)", "name_partial", "name", "name_partial", "content", "tag", "fulltext"), I_ENUM("tag_logic", "mode tag: whether a note needs all the tags (and) or any (or)", "or", "or", "and"), I_LIMIT_AS(50, 100, "how many to give; fulltext: 10 unless given"), I_BOOL("case_sensitive", "fulltext only: match the words' case exactly"), I_CURSOR),
		.output_schema = OUT(
			O_LIST("results", O_STR("name") "," O_STR("path") "," O_STRS("tags") "," O_INT("more_tags") "," O_STR("score") "," O_STR("snippet") "," O_INT("line") "," O_STR("text")) "," O_INT("total") "," O_STR("next_cursor") "," O_OBJ("not_searched", O_STRS("notes") "," O_INT("total") "," O_STR("why"))),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_CORE |
			 TOOL_NO_LINKS,
		.run = op_search_notes,
	},
	{
		.name = "get_links",
		.description = "A note's outgoing and incoming links.",
		.help = "Outgoing links include missing notes.",
		PARAMS(I_NAME, I_ENUM("direction", "which links: incoming (in), outgoing (out) or both", "both", "in", "out", "both")),
		.output_schema = OUT(O_STR("name") "," O_STRS("outgoing") "," O_STRS("incoming")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK | TOOL_CORE,
		.run = op_get_links,
	},
	{
		.name = "get_backlinks",
		.description = "Notes linking to a note, with line numbers.",
		.help = "Works for a note that does not exist yet (links to a missing note).",
		PARAMS(I_NAME),
		.output_schema = OUT(
			O_STR("target") "," O_BOOL("exists") "," O_LIST("backlinks", O_STR("name") "," O_STR("path") "," O_INT("count") "," O_ARR("lines")) "," O_INT("notes") "," O_INT("links")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_backlinks,
	},
	{
		.name = "find_broken_links",
		.description = "Links to no existing note or file.",
		PARAMS(I_PAGE),
		.output_schema = OUT(O_LIST("result", O_STR("source") "," O_STR("target")) "," O_PAGE),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_find_broken_links,
	},
	{
		.name = "get_orphans",
		.description = "Notes with no links in or out.",
		PARAMS(I_PAGE),
		.output_schema = OUT(O_INT("count") "," O_LIST("orphans", O_STR("name") "," O_STR("path")) "," O_PAGE),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_get_orphans,
	},
	{
		.name = "read_attachment",
		.description = "An attachment: images as image content, other files as a link.",
		.help = "PNG, JPEG, GIF and WebP come as an image, made smaller when over 8000 pixels a side or 5 MB; SVG as its text; other files as a resource link with type and size. Images over 150 megapixels are refused.",
		PARAMS(I_REQ("path", "the file's vault path or, as in a link, its name (looked for in the attachment folder .obsidian/app.json names, then anywhere: the shortest path)")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_read_attachment,
	},
	{
		.name = "list_attachments",
		.description = "Files that are not notes, with type and size.",
		PARAMS(I_STR("folder", "only files under this folder"), I_BOOL("unused", "only files no note links to or embeds"), I_PAGE),
		.output_schema = OUT(O_LIST("attachments", O_STR("path") "," O_STR("type") "," O_INT("size")) "," O_PAGE),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_list_attachments,
	},
	{
		.name = "list_tags",
		.description = "Tags in use, with note counts.",
		.help = "Most used first.",
		PARAMS(I_PAGE),
		.output_schema = OUT(O_LIST("tags", O_STR("tag") "," O_INT("count")) "," O_PAGE),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_list_tags,
	},
	{
		.name = "get_headings",
		.description = "A note's headings in order.",
		PARAMS(I_NAME),
		.output_schema = OUT_LIST(O_INT("level") "," O_STR("text")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_headings,
	},
	{
		.name = "read_section",
		.description = "The text under one heading.",
		.help = "The note's version comes with it.",
		PARAMS(I_NAME, I_SECTION),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT | TOOL_QUICK,
		.run = op_read_section,
	},
	{
		.name = "recent_notes",
		.description = "Recently modified notes.",
		.help = "Newest first.",
		PARAMS(I_LIMIT(10, 1000), I_SINCE("only notes modified after it")),
		.output_schema = OUT(O_LIST("notes", O_BRIEF_KEYS) "," O_INT("total") "," O_STR("since")),
		.flags = TOOL_READ_ONLY,
		.run = op_recent_notes,
	},
	{
		.name = "create_note",
		.description = "Create a note; the name may include folders.",
		.help = "Its tags must exist in the vault or be allowed by the policy. A template is filled with {{title}}, {{date}}, {{time}}, {{date:FORMAT}}, {{time:FORMAT}} (Moment formats; dateFormat and timeFormat from templates.json); its frontmatter is kept, frontmatter and content's own frontmatter are merged into it (tags, aliases and cssclasses lists joined) and content follows its body. A template with Templater syntax (<% %>) is refused: vaultd never runs code from notes.",
		PARAMS(I_REQ("name", "a note name or vault path, e.g. 'Ideas' or 'projects/Ideas'"), I_STR("content", "the note's text, in Markdown"), I_OBJECT("frontmatter", "its frontmatter, e.g. {\"tags\": [\"vc\"]}"), I_BOOL("overwrite", "replace the note if it exists"), I_STR("template", "a template note to start from (name or path, looked for in the templates folder of .obsidian/templates.json first)")),
		.output_schema = OUT(O_STR("name") "," O_STR("path") "," O_BOOL("overwritten") "," O_STR("template")),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_create_note,
	},
	{
		.name = "append_note",
		.description = "Add text at the end of a note.",
		PARAMS(I_NAME, I_REQ("text", "the text to add, in Markdown")),
		.output_schema = OUT_STATUS,
		.flags = TOOL_CORE,
		.run = op_append_note,
	},
	{
		.name = "prepend_note",
		.description = "Add text at the start of a note's body.",
		PARAMS(I_NAME, I_REQ("text", "the text to add after the frontmatter, in Markdown")),
		.output_schema = OUT_STATUS,
		.flags = 0,
		.run = op_prepend_note,
	},
	{
		.name = "update_note",
		.description = "Replace a note's body, keeping its frontmatter.",
		PARAMS(I_NAME, I_REQ("content", "the new body, in Markdown")),
		.output_schema = OUT_STATUS,
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_update_note,
	},
	{
		.name = "replace_text",
		.description = "Replace exact text in a note.",
		PARAMS(I_NAME, I_REQ("old_text", "the text to replace, exactly as the note has it; if it is not there, the error shows the nearest lines"), I_REQ("new_text", "the text that replaces it"), I_BOOL("replace_all", "replace every occurrence, not only the first")),
		.output_schema = OUT(O_STR("name") "," O_INT("replaced")),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_replace_text,
	},
	{
		.name = "insert_text",
		.description = "Insert text before or after a matching line.",
		.help = "Give before or after. If no line has that text, the error shows the nearest lines.",
		PARAMS(I_NAME, I_REQ("text", "the text to insert"), I_STR("before", "insert before the line with this text"), I_STR("after", "insert after the line with this text")),
		.output_schema = OUT(O_STR("name") "," O_STR("position") "," O_STR("pattern")),
		.flags = 0,
		.run = op_insert_text,
	},
	{
		.name = "append_section",
		.description = "Add text at the end of a section.",
		PARAMS(I_NAME, I_SECTION, I_REQ("text", "the text to add at the section's end, in Markdown")),
		.output_schema = OUT_SECTION,
		.flags = TOOL_CORE,
		.run = op_append_section,
	},
	{
		.name = "update_section",
		.description = "Replace a section's content; its heading stays.",
		PARAMS(I_NAME, I_SECTION, I_REQ("content", "the section's new content, in Markdown")),
		.output_schema = OUT_SECTION,
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_update_section,
	},
	{
		.name = "delete_section",
		.description = "Delete a heading and its section.",
		PARAMS(I_NAME, I_SECTION),
		.output_schema = OUT_SECTION,
		.flags = TOOL_DESTRUCTIVE,
		.run = op_delete_section,
	},
	{
		.name = "set_frontmatter",
		.description = "Set one frontmatter key (value: JSON or text).",
		.help = "Other keys keep their text; tags are checked against the policy.",
		PARAMS(I_NAME, I_REQ("key", "the frontmatter key"), I_REQ("value", "its value: JSON (numbers, true, lists, objects) or plain text")),
		.output_schema = OUT(O_STR("name") "," O_STR("key") ",\"value\":{}"),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT,
		.run = op_set_frontmatter,
	},
	{
		.name = "update_frontmatter",
		.description = "Merge keys into the frontmatter; null removes one.",
		PARAMS(I_NAME, I_OBJECT_REQ("updates", "key: value pairs to merge; a null value removes its key")),
		.output_schema = OUT(O_STR("name") "," O_STR("path") "," O_BOOL("updated") "," O_ANYOBJ("frontmatter")),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_update_frontmatter,
	},
	{
		.name = "add_tag",
		.description = "Tag a note with a tag the vault has or allows.",
		.help = "A new tag is refused unless the policy allows it (get_policy).",
		PARAMS(I_NAME, I_TAG),
		.output_schema = OUT(O_STR("name") "," O_STRS("tags")),
		.flags = TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_add_tag,
	},
	{
		.name = "remove_tag",
		.description = "Remove a tag from a note.",
		PARAMS(I_NAME, I_TAG),
		.output_schema = OUT(O_STR("name") "," O_STRS("tags") "," O_BOOL("removed")),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_CORE,
		.run = op_remove_tag,
	},
	{
		.name = "rename_note",
		.description = "Rename or move a note; links to it follow.",
		.help = "Links to it, its own relative links and links its new name would capture are rewritten in the shortest form that keeps where they lead; nothing else changes. A dry run lists every file it would touch (files: path, to, diff).",
		PARAMS(I_REQ("old_name", DOC_NOTE), I_REQ("new_name", "a new name (same folder) or a vault path")),
		.output_schema = OUT(
			O_STR("old_name") "," O_STR("new_name") "," O_STR("old_path") "," O_STR("new_path") "," O_STRS("files_updated") "," O_INT("links_updated")),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_rename_note,
	},
	{
		.name = "rename_folder",
		.description = "Rename or move a folder; links follow.",
		.help = "Links to its notes and attachments, and their own relative links, are rewritten in the shortest form that keeps where they lead; nothing else changes. One operation: a crash leaves each note whole. A dry run lists every note that would change (files: path, to, diff).",
		PARAMS(I_REQ("old_path", "the folder's vault path"), I_REQ("new_path", "its new vault path")),
		.output_schema = OUT(
			O_STR("old_path") "," O_STR("new_path") "," O_INT("notes_moved") "," O_INT("files_moved") "," O_STRS("files_updated") "," O_INT("links_updated")),
		.flags = TOOL_DESTRUCTIVE,
		.run = op_rename_folder,
	},
	{
		.name = "delete_note",
		.description = "Move a note to .trash.",
		.help = "Links to it are marked or kept as the policy says (delete_links). A dry run lists every file it would touch (files: path, to, diff).",
		PARAMS(I_NAME),
		.output_schema = OUT(
			O_STR("name") "," O_STR("path") "," O_STR("trash_path") "," O_STRS("files_updated") "," O_INT("links_updated")),
		.flags = TOOL_DESTRUCTIVE | TOOL_CORE,
		.run = op_delete_note,
	},
	{
		.name = "get_policy",
		.description = "Allowed tags and the vault's write rules.",
		.help = "Allowed tags, tag rules, what a refused write does (on_violation) and what deleting a note does to links to it (delete_links).",
		.output_schema = OUT(O_STRS("allowed_tags") "," O_ARR("tag_rules") "," O_STR("on_violation") "," O_STR("delete_links")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK,
		.run = op_get_policy,
	},
	{
		.name = "list_violations",
		.description = "Writes the policy refused or warned about.",
		.help = "Newest first.",
		PARAMS(I_LIMIT(20, 1000)),
		.output_schema = OUT(O_INT("count") "," O_ARR("violations")),
		.flags = TOOL_READ_ONLY,
		.run = op_list_violations,
	},
	{
		.name = "get_note_history",
		.description = "A note's versions with time and writer.",
		.help = "Newest first, each version with its writer and what changed. Follows the note across renames; a deleted or renamed note is found by its old name.",
		PARAMS(I_NAME, I_LIMIT(50, 100)),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_get_note_history,
	},
	{
		.name = "get_note_version",
		.description = "A note's text at one version.",
		PARAMS(I_NAME, I_REQ("version", DOC_VERSION)),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_get_note_version,
	},
	{
		.name = "diff_note_versions",
		.description = "Unified diff of a note between two versions.",
		PARAMS(I_NAME, I_REQ("from_version", "the older version: " DOC_VERSION), I_REQ("to_version", "the newer version: " DOC_VERSION)),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_diff_note_versions,
	},
	{
		.name = "restore_note_version",
		.description = "Write an old version back as a new change.",
		.help = "Through the policy, like any write; a deleted note comes back at its old path.",
		PARAMS(I_NAME, I_REQ("version", "the version to write back: " DOC_VERSION)),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT | TOOL_TEXT,
		.run = op_restore_note_version,
	},
	{
		.name = "list_changes",
		.description = "Changes made through MCP (default: this session's).",
		.help = "Newest first. Each change: the note, the change (created, changed, renamed, deleted), the tool, the session, the time and the note's versions before and after.",
		PARAMS(I_STR("session", "another session's id"), I_SINCE("every session's changes since then"), I_LIMIT(50, 500), I_CURSOR),
		.output_schema = OUT(
			O_STR("session") "," O_LIST("changes", O_STR("note") "," O_STR("from") "," O_STR("change") "," O_STR("tool") "," O_STR("session") "," O_STR("time") "," O_STR("before") "," O_STR("after") "," O_STR("commit")) "," O_STR("next_cursor")),
		.flags = TOOL_READ_ONLY,
		.run = op_list_changes,
	},
	{
		.name = "undo_changes",
		.description = "Revert a session's changes, leaving notes others changed since.",
		.help = "Give session or since, or both. Newest first, through the policy: texts come back, renamed notes go back to their old names with their links, deleted notes come back, created notes go to .trash. A note another writer (Obsidian, another session) changed after these changes is not touched: it is listed under conflicts with both diffs. A dry run shows every diff.",
		PARAMS(I_STR("session", "a session's id, as list_changes shows it"), I_SINCE("every MCP session's changes since then")),
		.output_schema = OUT(
			O_STR("session") "," O_LIST("undone", O_STR("note") "," O_STR("from") "," O_STR("action") "," O_STR("diff")) "," O_STRS("unchanged") "," O_LIST("conflicts", O_STR("note") "," O_STR("why") "," O_STR("changes_diff") "," O_STR("later_diff")) "," O_ARR("failed")),
		.flags = TOOL_DESTRUCTIVE,
		.run = op_undo_changes,
	},
	{
		.name = "get_help",
		.description = "Every tool's parameters and full help.",
		.output_schema = OUT_LIST(O_STR("name") "," O_STR("params") "," O_STR("description")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_QUICK | TOOL_CORE,
		.run = op_get_help,
	},
	{
		.name = "query_notes",
		.description = "Notes by property predicates or a Dataview query.",
		.help = "Either where, from, sort and fields, or query (a Dataview query). Property types come from .obsidian/types.json.",
		PARAMS(I_STR("where", "property predicates, e.g. 'status = \"active\" and due < 2024-06-01 and tags contains \"x\"' (=, !=, <, <=, >, >=, contains, exists, missing, and/or/not; file.name, file.folder, file.path, file.ctime, file.mtime, file.size, file.tags, file.links, file.inlinks)"), I_STR("from", "the notes to look at, e.g. '#tag and \"folder\"' (also [[note]]: notes linking to it, outgoing([[note]]); and, or, -)"), I_STR("sort", "e.g. 'due desc'"), I_STR("fields", "the columns, e.g. 'due, priority as p'"), I_STR("query", "a Dataview query: TABLE f1, f2 AS \"x\" FROM #tag WHERE ... SORT f DESC LIMIT n, LIST, or TASK (rows are tasks as list_tasks gives them; WHERE, then SORT, then LIMIT)"), I_STR("this", "the note 'this' stands for"), I_LIMIT(50, 1000), I_CURSOR),
		.output_schema = OUT(
			O_STR("kind") "," O_STRS("columns") "," O_LIST("rows", O_STR("name") "," O_STR("path") "," O_ANYOBJ("fields")) "," O_INT("total") "," O_STR("next_cursor")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_query_notes,
	},
	{
		.name = "query_base",
		.description = "Rows of one view of an Obsidian .base file.",
		.help = "Evaluates the base's filters (and/or/not), formulas and the view's filters, order, sort, groupBy and limit. Rows are files with the view's properties; not_evaluated names what could not be.",
		PARAMS(I_REQ("path", "the .base file's vault path"), I_STR("view", "the view's name (default: the first)"), I_LIMIT(50, 1000), I_CURSOR),
		.output_schema = OUT(
			O_STR("base") "," O_STR("view") "," O_STRS("columns") "," O_LIST("rows", O_STR("name") "," O_STR("path") "," O_ANYOBJ("fields")) "," O_INT("total") "," O_STR("next_cursor") "," O_STRS("not_evaluated")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_query_base,
	},
	{
		.name = "periodic_note",
		.description = "The daily (weekly, ...) note for a date.",
		.help = "As the vault's settings name it: days follow the Periodic Notes plugin (.obsidian/plugins/periodic-notes/data.json) or .obsidian/daily-notes.json (folder, Moment format, template); week, month, quarter and year need the plugin. Gives the note's path, whether it exists and, if it does, its text and version.",
		PARAMS(I_PERIOD, I_DATE, I_BOOL("create", "make a missing note from the period's template ({{title}}, {{date}}, {{time}}, {{date:FORMAT}}, {{date+1d:FORMAT}}, {{yesterday}}, {{tomorrow}}, {{monday:FORMAT}} ... filled; a Templater template is refused), through the policy")),
		.output_schema = OUT(
			O_STR("date") "," O_STR("name") "," O_STR("path") "," O_BOOL("exists") "," O_BOOL("created") "," O_STR("version") "," O_STR("text")),
		.flags = 0,
		.run = op_periodic_note,
	},
	{
		.name = "append_periodic_note",
		.description = "Append to the note for a date, made if missing.",
		.help = "A missing note is first made from the period's template.",
		PARAMS(I_REQ("text", "the text to append, in Markdown"), I_PERIOD, I_DATE, I_STR("section", "append at the end of this heading's section (as append_section) rather than the note's end")),
		.output_schema = OUT(O_STR("name") "," O_STR("path") "," O_BOOL("created")),
		.flags = 0,
		.run = op_append_periodic_note,
	},
	{
		.name = "list_tasks",
		.description = "Tasks (- [ ] items) across the vault.",
		.help = "Every checkbox item of every note (nested, numbered, in quotes; never in code, math, comments or frontmatter), in note name then line order. fields has what the task has of: description (the text without the fields below), tags (without #), and the Tasks plugin's emoji fields: due 📅, scheduled ⏳, start 🛫, done ✅, created ➕, cancelled ❌, recurrence 🔁, priority (🔺 highest, ⏫ high, 🔼 medium, 🔽 low, ⏬ lowest), id 🆔, depends_on ⛔, on_completion 🏁. status: todo ([ ] and unknown symbols), in_progress ([/]), done ([x], [X]), cancelled ([-]); symbol: the checkbox character.",
		PARAMS(I_STR("where", "query_notes' expressions over the task's fields (status, symbol, text, description, tags (without #; contains also matches parts, econtains(tags, \"x\") does not), due, scheduled, start, done, created, cancelled, priority, recurrence, line, completed, checked), then the note's properties and file.*, e.g. where='status != \"done\" and due <= date(today) and tags contains \"work\"', where='text contains \"invoice\"'"), I_STR("from", "notes by #tag, \"folder\", [[note]] (and, or, -)"), I_STR("sort", "e.g. 'due asc, priority desc' (missing values last)"), I_LIMIT(100, 1000), I_CURSOR),
		.output_schema = OUT(
			O_LIST("tasks", O_STR("name") "," O_STR("path") "," O_INT("line") "," O_STR("symbol") "," O_STR("status") "," O_STR("text") "," O_ANYOBJ("fields")) "," O_INT("total") "," O_STR("next_cursor")),
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.run = op_list_tasks,
	},
	{
		.name = "set_task_status",
		.description = "Set one task's checkbox status.",
		.help = "When the vault uses the Tasks plugin's format (the plugin is installed, or some task has its emoji fields), done adds ✅ and today's date and leaving done removes it; cancelled and ❌ alike. A recurring task (🔁) is not completed: its next occurrence is not computed, so this is refused.",
		PARAMS(I_NAME, {.name = "line", .type = P_INT, .required = true, .min = 1, .doc = "the task's line (list_tasks gives it)"}, I_REQ("status", "todo (or open), in_progress, done, cancelled, or one character for the checkbox ([>], [?])"), I_REQ("expected_text", "the task's text as list_tasks gave it: if the line no longer holds that task, nothing is written and the error says where it went")),
		.output_schema = OUT(O_STR("name") "," O_INT("line") "," O_STR("symbol") "," O_STR("status") "," O_STR("text")),
		.flags = TOOL_DESTRUCTIVE | TOOL_IDEMPOTENT,
		.run = op_set_task_status,
	},
};
/* clang-format on */

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
