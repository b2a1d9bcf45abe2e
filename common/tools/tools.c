/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Running a tool from the table (tools_table.c): the checks before it
 * runs, the writer history records, the result's shape (text or JSON,
 * repaired to UTF-8, bounded messages, dry runs), and the two lists the
 * table is read as: tools/list for MCP clients and get_help.
 */
#include "tools.h"
#include "json.h"
#include "u8.h"

#include <errno.h>
#include <pthread.h>

/* ---- output schemas
 * ------------------------------------------------------------- */

/* The table's output schemas (JSON text) parsed once, by table index. */
static cJSON **schemas_out;
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;

static void parse_schemas(void)
{
	size_t n;
	const struct tool *tools = tools_table(&n);
	schemas_out = xcalloc(n, sizeof(*schemas_out));
	for (size_t i = 0; i < n; i++) {
		if (!tools[i].output_schema)
			continue;
		schemas_out[i] = cJSON_Parse(tools[i].output_schema);
		/* A broken literal is a build defect: tests catch it. */
		if (!schemas_out[i])
			abort();
	}
}

static const cJSON *output_schema(const struct tool *t)
{
	size_t n;
	pthread_once(&schemas_once, parse_schemas);
	return schemas_out[t - tools_table(&n)];
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
	} else if (tool_check_args(t, args, &msg) < 0) {
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
		ret->text_is_json = c->compact;
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

/* What tools/list leaves unsaid (its hints are read-only and
 * destructive only). */
#define HELP_IDEMPOTENT "Idempotent: the same call again changes nothing more."

char *tools_help_text(const struct tool *t)
{
	struct sbuf d = {0};
	sb_puts(&d, t->description);
	if (t->help)
		sb_printf(&d, " %s", t->help);
	if ((t->flags & (TOOL_READ_ONLY | TOOL_IDEMPOTENT)) == TOOL_IDEMPOTENT)
		sb_puts(&d, " " HELP_IDEMPOTENT);
	struct param_list l = tool_params(t);
	params_doc_lines(&d, &l);
	return sb_steal(&d);
}

cJSON *tool_help_json(const struct tool *t)
{
	cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *params = tools_params_text(t);
	_cleanup_free_ char *help = tools_help_text(t);
	cJSON_AddStringToObject(o, "name", t->name);
	cJSON_AddStringToObject(o, "params", params);
	cJSON_AddStringToObject(o, "description", help);
	return o;
}

cJSON *tools_help_json(void)
{
	size_t n;
	const struct tool *tools = tools_table(&n);
	cJSON *a = cJSON_CreateArray();
	for (const struct tool *t = tools; t < tools + n; t++)
		cJSON_AddItemToArray(a, tool_help_json(t));
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
cJSON *tools_list_json(unsigned need)
{
	size_t n;
	const struct tool *tools = tools_table(&n);
	cJSON *a = cJSON_CreateArray();
	for (const struct tool *t = tools; t < tools + n; t++) {
		if ((t->flags & need) != need)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", t->name);
		cJSON_AddStringToObject(o, "description", t->description);
		cJSON_AddItemToObject(o, "inputSchema", tool_input_schema(t));
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
