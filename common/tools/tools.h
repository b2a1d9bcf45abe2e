/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tool table: one static const table (tools_table.c) drives
 * tools/list (MCP), get_help, `vaultctl tools` and `vaultctl call`. Each
 * entry has its parameters, described once in C (the input schema, the
 * help's parameter line, the argument checks and vaultctl's key=value
 * types all come from them), its output schema, annotations and handler.
 */
#pragma once

#include "params.h"
#include "u8.h"
#include "vault.h"

#include <cjson/cJSON.h>

enum {
	TOOL_READ_ONLY = 1 << 0,
	/* Can remove or replace what is there (a key, a tag, text, a
	 * note): clients ask before running it. */
	TOOL_DESTRUCTIVE = 1 << 1,
	TOOL_IDEMPOTENT = 1 << 2,
	TOOL_TEXT = 1 << 3, /* the result is plain text, not JSON */
	/* Answered from memory in bounded time (one note, its links): the
	 * control socket runs it even while slow calls fill its workers. */
	TOOL_QUICK = 1 << 4,
	/* Offered in vault-mcp's "core" profile (--tools core): reading,
	 * search, links, the usual edits, tags, frontmatter, rename,
	 * delete, help. */
	TOOL_CORE = 1 << 5,
	/* Reads a note's path, names, tags and text, never a link: at a
	 * start it answers before the links are bound (vault_on_names()). */
	TOOL_NO_LINKS = 1 << 6,
};

/* Results are valid UTF-8 (JSON needs it): stray bytes in a note are
 * shown as U+FFFD, with a warning saying so. */
#define TOOL_NOT_UTF8_WARNING                                            \
	"the text is not valid UTF-8: bytes that are not are shown as "  \
	"U+FFFD (" U8_REPLACEMENT "); the file itself is unchanged and " \
	"edits keep them as they are"

/* JSON-RPC application error codes (seed 002). */
enum {
	RPC_SERVER_ERROR = -32000,
	RPC_NOT_FOUND = -32003,
	RPC_AMBIGUOUS = -32004,
	RPC_PERMISSION = -32005,
	RPC_TIMEOUT = -32006,
	RPC_INVALID_PARAMS = -32602,
	/* The caller cancelled the request (the code LSP uses). */
	RPC_CANCELLED = -32800,
};

struct tool_ctx {
	struct vault *v;
	const cJSON *args;   /* validated against the input schema */
	const char *source;  /* "mcp:<tool>", "vaultctl", ... */
	const char *session; /* the caller's MCP session, or NULL */
	/* Results: exactly one of text/json on success, msg on failure. */
	char *text;
	cJSON *json;
	char *msg;
	char *warning; /* the policy's warn mode: accepted, but ... */
	char *info;    /* text results: what the text is (a part of a note) */
	/* Set when the caller can pass progress on: a long wait reports
	 * through it instead of failing at once. */
	void (*progress)(void *ud, size_t done, size_t total,
			 const char *message);
	void *progress_ud;
	const char *replacement; /* op_write_text's new text */
	/* dry_run: the unified diff the write would have made (nothing is
	 * written); the result says so and carries it. */
	char *dry_diff;
	/* JSON results without spaces (answers read by the token). */
	bool compact;
	/* MCP content blocks that follow the text (an image, a link to a
	 * file): [{"type": "image", "data", "mimeType"}] or
	 * [{"type": "resource_link", "path", "name", "mimeType", "size"}]
	 * (the MCP front-end makes the path a URI). */
	cJSON *content;
};

struct tool_call {
	const char *source; /* "mcp", "vaultctl", "socket" ... */
	/* The MCP session the call comes from (session_id_valid()), or
	 * NULL: its writes are recorded as "mcp:<tool>@<session>". */
	const char *session;
	void (*progress)(void *ud, size_t done, size_t total,
			 const char *message);
	void *progress_ud;
};

/* A tool's parameters are struct tool_param (proto/params.h). Writes take
 * expected_version and dry_run besides, without saying so in their list
 * (tool_params()). */

struct tool {
	const char *name;
	const char *description; /* one or two sentences (tools/list) */
	/* More for get_help about the tool as a whole (what it does,
	 * syntax, limits; each parameter's meaning is its doc); NULL:
	 * none. */
	const char *help;
	const struct tool_param *params; /* NULL: none */
	const char *output_schema;	 /* JSON text; NULL for text results */
	unsigned flags;
	int (*run)(struct tool_ctx *c);
};

struct tool_result {
	bool is_error;
	int code;	   /* RPC code when is_error */
	char *text;	   /* the text the seeds show (JSON or plain) */
	cJSON *structured; /* JSON result as an object, or NULL */
	bool text_is_json; /* text is structured as compact JSON */
	char *warning;	   /* text results: said apart from the text */
	char *info;	   /* text results: what the text is, said apart */
	cJSON *content;	   /* tool_ctx's content blocks, or NULL */
};
void tool_result_clear(struct tool_result *r);

const struct tool *tools_table(size_t *ret_n);
const struct tool *tools_find(const char *name);

/* The parameters t takes: those of its table entry, then for a write
 * expected_version (when it names one note: name or old_name) and
 * dry_run. */
struct param_list tool_params(const struct tool *t);
/* The i-th of them (from 0), NULL past the last. */
const struct tool_param *tool_param_at(const struct tool *t, size_t i);
/* t's parameter key, or NULL when t takes none of that name. */
const struct tool_param *tool_param(const struct tool *t, const char *key);
/* The input schema tools/list shows (no defaults: get_help has them). */
cJSON *tool_input_schema(const struct tool *t);
/* args checked against t's parameters: 0, or -EINVAL with the message
 * the caller sees. */
int tool_check_args(const struct tool *t, const cJSON *args, char **ret_msg);

/*
 * Validate args against the tool's input schema and run it. Never fails
 * hard: errors come back as is_error results with the message text.
 */
void tools_call(struct vault *v, const char *name, const cJSON *args,
		const char *source, struct tool_result *ret);
void tools_call_ex(struct vault *v, const char *name, const cJSON *args,
		   const struct tool_call *call, struct tool_result *ret);

/* MCP tool descriptions (name, title, description, inputSchema,
 * outputSchema, annotations), read-only tools only if asked. */
cJSON *tools_list_json(unsigned need);
/* get_help's entry for t: {"name", "params", "description"}, the
 * description being tools_help_text(). */
cJSON *tool_help_json(const struct tool *t);
/* get_help's list: every tool's entry. */
cJSON *tools_help_json(void);
/* "name: string, limit: integer = 100" from a tool's parameters. */
char *tools_params_text(const struct tool *t);
/* A tool's full help: its description and help, then one line a
 * parameter (param_doc()); what get_help and `vaultctl tools
 * TOOL` show. */
char *tools_help_text(const struct tool *t);

/* The auto-context block (seed 000): personal notes + allowed tags;
 * vault-mcp adds it with context_inject() (proto/context.h). */
char *context_block(struct vault *v);

/* Tool handlers (ops_read.c, ops_write.c). */
int op_read_note(struct tool_ctx *c);
int op_get_note_metadata(struct tool_ctx *c);
int op_list_notes(struct tool_ctx *c);
int op_browse(struct tool_ctx *c);
int op_search_notes(struct tool_ctx *c);
int op_get_links(struct tool_ctx *c);
int op_get_backlinks(struct tool_ctx *c);
int op_find_broken_links(struct tool_ctx *c);
int op_get_orphans(struct tool_ctx *c);
int op_list_tags(struct tool_ctx *c);
int op_get_headings(struct tool_ctx *c);
int op_read_section(struct tool_ctx *c);
int op_recent_notes(struct tool_ctx *c);
int op_get_policy(struct tool_ctx *c);
int op_list_violations(struct tool_ctx *c);
int op_get_help(struct tool_ctx *c);
int op_create_note(struct tool_ctx *c);
int op_append_note(struct tool_ctx *c);
int op_prepend_note(struct tool_ctx *c);
int op_update_note(struct tool_ctx *c);
int op_replace_text(struct tool_ctx *c);
int op_insert_text(struct tool_ctx *c);
int op_append_section(struct tool_ctx *c);
int op_update_section(struct tool_ctx *c);
int op_delete_section(struct tool_ctx *c);
int op_set_frontmatter(struct tool_ctx *c);
int op_update_frontmatter(struct tool_ctx *c);
int op_add_tag(struct tool_ctx *c);
int op_remove_tag(struct tool_ctx *c);
int op_rename_note(struct tool_ctx *c);
int op_rename_folder(struct tool_ctx *c);
int op_delete_note(struct tool_ctx *c);
int op_get_note_history(struct tool_ctx *c);
int op_get_note_version(struct tool_ctx *c);
int op_diff_note_versions(struct tool_ctx *c);
int op_restore_note_version(struct tool_ctx *c);
int op_list_changes(struct tool_ctx *c);
int op_undo_changes(struct tool_ctx *c);
/* Attachments (ops_attach.c). */
int op_read_attachment(struct tool_ctx *c);
int op_list_attachments(struct tool_ctx *c);
/* Property queries (ops_query.c). */
int op_query_notes(struct tool_ctx *c);
int op_query_base(struct tool_ctx *c);
/* Periodic notes (ops_periodic.c). */
int op_periodic_note(struct tool_ctx *c);
int op_append_periodic_note(struct tool_ctx *c);
/*
 * create_note's template (the "template" argument): found in the
 * templates folder (.obsidian/templates.json) or the vault, refused if it
 * uses Templater, filled for the note `name`; fm (may be NULL) and
 * content's own frontmatter are merged into the template's, content goes
 * after its body. ret_template: the template's path.
 */
int op_template_apply(struct tool_ctx *c, const char *name, const cJSON *fm,
		      const char *content, char **ret_text,
		      char **ret_template);
/*
 * A periodic note's write (ops_write.c), under one writer lock: the note
 * at path is made with `initial` if it is missing; with append, the
 * "text" argument is then added at its end, or to the end of the
 * "section" argument's section, as append_note / append_section do.
 * *ret_created: the note was made.
 */
int op_periodic_write(struct tool_ctx *c, const char *path, const char *initial,
		      bool append, bool *ret_created);
/* Tasks (ops_tasks.c). */
int op_list_tasks(struct tool_ctx *c);
/* A page of a task query's tasks (read lock held) as o[key], with total
 * and next_cursor; types: the vault's property types; this_note: DQL's
 * `this` (may be NULL); def_limit: the page's size when the call gives
 * no limit. */
struct pquery;
struct ptypes;
int op_tasks_page(struct tool_ctx *c, struct pquery *q, const char *scope,
		  const struct ptypes *types, const struct note *this_note,
		  const char *key, long def_limit, cJSON *o);
/* Where a page of a property or task query starts: the cursor's offset
 * (0 or -errno for a stale or foreign cursor), the call's limit (or
 * def_limit) and the query's environment. Read lock held. */
struct pq_env;
int op_pq_page(struct tool_ctx *c, const char *scope,
	       const struct ptypes *types, const struct note *this_note,
	       long def_limit, struct pq_env *env, size_t *ret_offset,
	       size_t *ret_limit);
int op_set_task_status(struct tool_ctx *c);
/*
 * Edit one note through the guarded write path (ops_write.c): under the
 * writer lock, fn makes the new text (*ret_new) from the note's text;
 * expected_version and dry_run are honoured, an unchanged text is not
 * written.
 */
typedef int (*op_edit_fn)(struct tool_ctx *c, const char *ref, const char *text,
			  size_t len, char **ret_new);
int op_edit_text(struct tool_ctx *c, const char *ref, op_edit_fn fn);
/* Replace a note's whole text through the guard (ops_write.c). */
/* A new note at path with text, through the guard. */
int op_create_text(struct tool_ctx *c, const char *path, const char *text);
int op_write_text(struct tool_ctx *c, const char *ref, const char *text);

/*
 * One step of undo_changes (ops_write.c), under the writer lock: the note
 * at path must still be at version expect (else -ESTALE, nothing done).
 * UNDO_TEXT: its text becomes text. UNDO_TRASH: it goes to .trash.
 * UNDO_RENAME: it is renamed to `to` (links to it follow), then its text
 * becomes text. UNDO_CREATE: a note is made at path with text (path must
 * be free; expect is not used).
 */
enum undo_step { UNDO_TEXT, UNDO_TRASH, UNDO_RENAME, UNDO_CREATE };
int op_undo_step(struct tool_ctx *c, enum undo_step step, const char *path,
		 const char *expect, const char *to, const char *text,
		 size_t len);

/* Shared by handlers (ops_common.c). */
const char *arg_str(const struct tool_ctx *c, const char *key, const char *def);
long arg_int(const struct tool_ctx *c, const char *key, long def);
bool arg_bool(const struct tool_ctx *c, const char *key, bool def);
int op_fail(struct tool_ctx *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Handlers that read hold the read lock for their whole run. */
struct rlock {
	struct vault *v;
};
void rlock_release(struct rlock *l);
#define READ_LOCKED(c)                                         \
	_cleanup_(rlock_release) struct rlock _rl_ = {(c)->v}; \
	vault_read_lock((c)->v)
cJSON *str_array(char *const *v, size_t n);
/* Whether the index has a note at path now (takes the read lock). */
bool op_note_exists(struct tool_ctx *c, const char *path);
/* A paged list: its offset and limit (ranges checked by the schema). */
struct page {
	size_t offset, limit;
	size_t total; /* items counted so far */
};
struct page page_args(const struct tool_ctx *c);
/* Count an item; true when it is on the page. */
bool page_take(struct page *p);
/* All there are, and where the next page starts while more remain. */
void page_add(cJSON *o, const struct page *p);

/*
 * A page read with a cursor: the "cursor" argument's offset for this
 * query (scope) and index generation, 0 without one; a cursor of
 * another query or generation is an error result.
 */
int op_cursor_offset(struct tool_ctx *c, const char *scope, uint64_t gen,
		     size_t *ret_offset);
/* total, and next_cursor while rows remain after [offset, offset+n). */
void op_cursor_next(cJSON *o, const char *scope, uint64_t gen, size_t offset,
		    size_t n, size_t total);
/* struct note * by folded name, then path. */
int cmp_note_name(const void *a, const void *b);
/* A note name over PATH_MAX_BYTES: fails with "name too long". */
int op_name_len(struct tool_ctx *c, const char *ref);
/* Look up a note reference (lock held); fails with the seeds' texts. */
int op_find(struct tool_ctx *c, const char *ref, struct note **ret);
