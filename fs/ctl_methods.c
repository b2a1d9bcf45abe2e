/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket's methods: one static table (ctl_method_find) that
 * says for each whether the main thread answers it, a worker runs it
 * (and in which lane) or it is a notification, and the handlers:
 * status, the notes/ reads for listing and completion, tools/call with
 * its progress notifications, context, check and graph.
 */
#include "ctl_server_int.h"
#include "attach.h"
#include "config.h"
#include "history.h"
#include "json.h"
#include "log.h"
#include "shape.h"
#include "tools.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

static cJSON *status_json(struct ctl_server *s)
{
	size_t done, total;
	bool ready;
	vault_index_state(s->v, &done, &total, &ready);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "vault", vault_root(s->v));
	cJSON_AddStringToObject(o, "version", VAULTD_VERSION);
	cJSON_AddNumberToObject(o, "pid", getpid());
	cJSON_AddNumberToObject(o, "uptime_s", (double)(now_s() - s->started));
	size_t running, queued;
	workq_counts(s->q, &running, &queued);
	pthread_mutex_lock(&s->mu);
	cJSON_AddNumberToObject(o, "clients", (double)s->clients.n);
	cJSON_AddNumberToObject(o, "max_clients", (double)s->max_clients);
	cJSON_AddNumberToObject(o, "calls", (double)atomic_load(&s->calls));
	cJSON_AddNumberToObject(o, "calls_running", (double)running);
	cJSON_AddNumberToObject(o, "calls_queued", (double)queued);
	pthread_mutex_unlock(&s->mu);
	vault_read_lock(s->v);
	cJSON_AddNumberToObject(o, "notes",
				(double)index_count(vault_index(s->v)));
	vault_read_unlock(s->v);
	cJSON *ix = cJSON_AddObjectToObject(o, "index");
	cJSON_AddStringToObject(ix, "state", ready ? "ready" : "indexing");
	cJSON_AddNumberToObject(ix, "done", (double)done);
	cJSON_AddNumberToObject(ix, "total", (double)total);
	cJSON_AddNumberToObject(ix, "percent", ctl_index_percent(s));
	struct vault_store_state st;
	vault_store_state(s->v, &st);
	cJSON *si = cJSON_AddObjectToObject(o, "search_index");
	/* Before the index is built, the search index may not be open
	 * yet: it is on its way, not off. */
	cJSON_AddStringToObject(si, "state",
				!st.enabled ? (ready ? "off" : "building")
				: st.ready  ? "ready"
					    : "building");
	if (st.enabled) {
		cJSON_AddNumberToObject(si, "done", (double)st.done);
		cJSON_AddNumberToObject(si, "total", (double)st.total);
		cJSON_AddNumberToObject(
			si, "percent",
			st.ready   ? 100
			: st.total ? (double)(st.done * 100 / st.total)
				   : 0);
		cJSON_AddBoolToObject(si, "substrings_ready",
				      st.substrings_ready);
		cJSON_AddNumberToObject(si, "unchanged_at_start",
					(double)st.cached);
		cJSON_AddNumberToObject(si, "read_at_start", (double)st.parsed);
		cJSON_AddStringToObject(si, "path", st.path);
		cJSON_AddNumberToObject(si, "bytes", (double)st.bytes);
	}
	char *gone = vault_gone(s->v);
	if (gone) {
		cJSON_AddStringToObject(o, "gone", gone);
		free(gone);
	}
	struct history *h = vault_history(s->v);
	cJSON *hi = cJSON_AddObjectToObject(o, "history");
	cJSON_AddStringToObject(hi, "state", h ? "on" : "off");
	if (h) {
		size_t versions;
		uint64_t bytes;
		history_stats(h, &versions, &bytes);
		cJSON_AddNumberToObject(hi, "versions", (double)versions);
		cJSON_AddBoolToObject(hi, "settled", history_settled(h));
		cJSON_AddBoolToObject(hi, "recorded", history_recorded(h));
		cJSON_AddBoolToObject(hi, "packing", history_packing(h));
		char *failing = history_failing(h);
		if (failing) {
			cJSON_AddStringToObject(hi, "error", failing);
			free(failing);
		}
		cJSON_AddStringToObject(hi, "path", history_path(h));
		cJSON_AddNumberToObject(hi, "bytes", (double)bytes);
	}
	cJSON_AddNumberToObject(o, "idle_exit_s", s->cfg.idle_exit_s);
	pthread_mutex_lock(&s->mu);
	if (s->mountpoint)
		cJSON_AddStringToObject(o, "mount", s->mountpoint);
	else
		cJSON_AddNullToObject(o, "mount");
	pthread_mutex_unlock(&s->mu);
	cJSON_AddStringToObject(o, "socket", s->path);
	return o;
}

static const char *pstr(const cJSON *params, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static long pint(const cJSON *params, const char *key, long def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
	return cJSON_IsNumber(v) ? (long)v->valuedouble : def;
}

static cJSON *note_entry(const struct index *ix, const struct note *n)
{
	cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *dn = index_display_name(ix, n);
	char ts[32];
	format_iso8601(note_mtime_ns(n) / 1000000000LL, ts);
	cJSON_AddStringToObject(o, "path", note_path(n));
	cJSON_AddStringToObject(o, "name", dn);
	cJSON_AddNumberToObject(o, "size", (double)note_size(n));
	cJSON_AddStringToObject(o, "modified", ts);
	return o;
}

static cJSON *notes_list(struct ctl_server *s, const cJSON *params)
{
	long off = pint(params, "offset", 0), lim = pint(params, "limit", 100);
	if (off < 0)
		off = 0;
	if (lim < 1 || lim > 1000)
		lim = 100;
	vault_read_lock(s->v);
	struct index *ix = vault_index(s->v);
	size_t n;
	struct note *const *all = index_sorted(ix, &n);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = (size_t)off; i < n && i < (size_t)(off + lim); i++)
		cJSON_AddItemToArray(a, note_entry(ix, all[i]));
	vault_read_unlock(s->v);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "notes", a);
	cJSON_AddNumberToObject(o, "total", (double)n);
	return o;
}

/* An attachment as a resource: its bytes in base64 with its type, up to
 * ATTACH_READ_MAX (read lock held). */
static int attachment_read(struct ctl_server *s, const struct index *ix,
			   const struct note *n, cJSON **ret, char **ret_msg)
{
	_cleanup_free_ char *b64 = NULL;
	size_t size;
	int r = attach_read_base64(vault_rootfd(s->v), note_path(n),
				   ATTACH_READ_MAX, &b64, &size);
	if (r == -EFBIG) {
		*ret_msg = xasprintf(
			"%s is %zu bytes: more than a resource read sends "
			"(%u bytes); read_attachment gives an image made "
			"smaller",
			QUOTE(note_path(n)), size, ATTACH_READ_MAX);
		return RPC_INVALID_PARAMS;
	}
	if (r < 0) {
		*ret_msg = xasprintf("Cannot read %s: %s", QUOTE(note_path(n)),
				     strerror(-r));
		return RPC_NOT_FOUND;
	}
	cJSON *o = note_entry(ix, n);
	cJSON_AddStringToObject(o, "mime", attach_mime(note_path(n)));
	cJSON_AddStringToObject(o, "blob", b64);
	*ret = o;
	return 0;
}

static int notes_read(struct ctl_server *s, const cJSON *params, cJSON **ret,
		      char **ret_msg)
{
	const char *path = pstr(params, "path");
	if (!path) {
		*ret_msg = xstrdup("params.path must be a string");
		return RPC_BAD_PARAMS;
	}
	vault_read_lock(s->v);
	struct index *ix = vault_index(s->v);
	struct note *n = index_by_path(ix, path);
	const struct note *file = n ? NULL : index_file(ix, path);
	bool meta_only = cJSON_IsTrue(cJSON_GetObjectItem(params, "meta_only"));
	int code = 0;
	char *text = NULL;
	size_t len;
	if (file && !path_is_note(note_path(file))) {
		/* An attachment (read as a resource, or subscribed to). */
		if (meta_only)
			*ret = note_entry(ix, file);
		else
			code = attachment_read(s, ix, file, ret, ret_msg);
	} else if (!n) {
		*ret_msg = xasprintf("Note %s not found", QUOTE(path));
		code = RPC_NOT_FOUND;
	} else if (meta_only) {
		*ret = note_entry(ix, n); /* whether it is there, and what */
	} else if (vault_read_text(s->v, n, &text, &len) < 0) {
		*ret_msg = xasprintf("Cannot read %s", QUOTE(path));
		code = RPC_NOT_FOUND;
	} else {
		cJSON *o = note_entry(ix, n);
		cJSON_AddStringToObject(o, "text", text);
		free(text);
		*ret = o;
	}
	vault_read_unlock(s->v);
	return code;
}

/* Note names starting with (then containing) a prefix, for completion. */
static cJSON *notes_complete(struct ctl_server *s, const cJSON *params)
{
	const char *prefix = pstr(params, "prefix");
	bool paths = cJSON_IsTrue(cJSON_GetObjectItem(params, "paths"));
	long lim = pint(params, "limit", 100);
	_cleanup_free_ char *fp = fold_key(prefix ? prefix : "");
	vault_read_lock(s->v);
	struct index *ix = vault_index(s->v);
	size_t n, total = 0;
	struct note *const *all = index_sorted(ix, &n);
	cJSON *vals = cJSON_CreateArray();
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			const char *key = paths ? note_fold_path(all[i])
						: note_fold_name(all[i]);
			bool pre = str_has_prefix(key, fp);
			if (pass == 0 ? !pre : (pre || !strstr(key, fp)))
				continue;
			total++;
			if (cJSON_GetArraySize(vals) >= lim)
				continue;
			char *v = paths ? xstrdup(note_path(all[i]))
					: index_display_name(ix, all[i]);
			cJSON_AddItemToArray(vals, cJSON_CreateString(v));
			free(v);
		}
	}
	vault_read_unlock(s->v);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "values", vals);
	cJSON_AddNumberToObject(o, "total", (double)total);
	return o;
}

struct progress_ctx {
	struct ctl_server *s;
	struct client *c;
	const cJSON *id;
};

/* A long call's progress, to a client that asked for it:
 * {"method":"progress","params":{"id","done","total","message"}}. */
static void send_progress(void *ud, size_t done, size_t total,
			  const char *message)
{
	struct progress_ctx *p = ud;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "id", cJSON_Duplicate(p->id, 1));
	cJSON_AddNumberToObject(o, "done", (double)done);
	cJSON_AddNumberToObject(o, "total", (double)total);
	cJSON_AddStringToObject(o, "message", message);
	ctl_client_send(p->s, p->c, rpc_notify_line("progress", o));
}

static cJSON *tool_call(struct ctl_server *s, struct job *j, int *ret_code,
			char **ret_msg)
{
	const cJSON *params = j->params;
	const char *name = pstr(params, "name");
	if (!name) {
		*ret_code = RPC_BAD_PARAMS;
		*ret_msg = xstrdup("params.name must be the tool's name");
		return NULL;
	}
	const cJSON *args =
		cJSON_GetObjectItemCaseSensitive(params, "arguments");
	const char *source = pstr(params, "source");
	const char *session = pstr(params, "session");
	if (session && !session_id_valid(session)) {
		*ret_code = RPC_BAD_PARAMS;
		*ret_msg = xasprintf("params.session must be 1 to %d letters, "
				     "digits, '-' or '_'",
				     SESSION_ID_MAX);
		return NULL;
	}
	struct tool_result r;
	struct progress_ctx pc = {s, j->c, j->id};
	struct tool_call call = {.source = source ? source : "socket",
				 .session = session};
	if (cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(params, "progress"))) {
		call.progress = send_progress;
		call.progress_ud = &pc;
	}
	tools_call_ex(s->v, name, args, &call, &r);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "isError", r.is_error);
	cJSON_AddStringToObject(o, "text", r.text);
	if (r.warning)
		cJSON_AddStringToObject(o, "warning", r.warning);
	if (r.info)
		cJSON_AddStringToObject(o, "info", r.info);
	if (r.is_error)
		cJSON_AddNumberToObject(o, "code", r.code);
	/* A caller that reads the text as the structured result when told
	 * (lean) is not sent the same JSON twice. */
	if (r.structured && r.text_is_json &&
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(params, "lean")))
		cJSON_AddTrueToObject(o, "text_is_structured");
	else if (r.structured)
		cJSON_AddItemToObject(o, "structured", TAKE_PTR(r.structured));
	if (r.content)
		cJSON_AddItemToObject(o, "content", TAKE_PTR(r.content));
	tool_result_clear(&r);
	return o;
}

/* ---- the methods ---- */

static int run_tools_call(struct ctl_server *s, struct job *j, cJSON **ret,
			  char **ret_msg)
{
	int code = 0;
	*ret = tool_call(s, j, &code, ret_msg);
	return code;
}

static int run_context(struct ctl_server *s, struct job *j, cJSON **ret,
		       char **ret_msg)
{
	cJSON *o = cJSON_CreateObject();
	char *b = context_block(s->v);
	cJSON_AddStringToObject(o, "block", b);
	free(b);
	*ret = o;
	return 0;
}

static int run_check(struct ctl_server *s, struct job *j, cJSON **ret,
		     char **ret_msg)
{
	*ret = vault_check_json(s->v);
	return 0;
}

static int run_graph(struct ctl_server *s, struct job *j, cJSON **ret,
		     char **ret_msg)
{
	*ret = vault_graph_json(s->v);
	return 0;
}

static int run_notes_list(struct ctl_server *s, struct job *j, cJSON **ret,
			  char **ret_msg)
{
	*ret = notes_list(s, j->params);
	return 0;
}

static int run_notes_read(struct ctl_server *s, struct job *j, cJSON **ret,
			  char **ret_msg)
{
	return notes_read(s, j->params, ret, ret_msg);
}

static int run_notes_complete(struct ctl_server *s, struct job *j, cJSON **ret,
			      char **ret_msg)
{
	*ret = notes_complete(s, j->params);
	return 0;
}

/* Quick: answered from memory in bounded time. */
static bool quick_always(const cJSON *params)
{
	return true;
}

static bool quick_tool(const cJSON *params)
{
	const char *name = pstr(params, "name");
	const struct tool *t = name ? tools_find(name) : NULL;
	return t && (t->flags & TOOL_QUICK);
}

/* The auto-context reads notes' names, tags and text: no link. */
static bool names_always(const cJSON *params)
{
	return true;
}

/* A tool that reads no link (TOOL_NO_LINKS). */
static bool names_tool(const cJSON *params)
{
	const char *name = pstr(params, "name");
	const struct tool *t = name ? tools_find(name) : NULL;
	return t && (t->flags & TOOL_NO_LINKS);
}

static void answer_ping(struct ctl_server *s, struct client *c,
			const struct rpc_msg *m)
{
	ctl_client_send(s, c, rpc_result_line(m->id, NULL));
}

static void answer_status(struct ctl_server *s, struct client *c,
			  const struct rpc_msg *m)
{
	ctl_client_send(s, c, rpc_result_line(m->id, status_json(s)));
}

static void answer_tools_list(struct ctl_server *s, struct client *c,
			      const struct rpc_msg *m)
{
	const char *prof =
		cJSON_GetStringValue(cJSON_GetObjectItem(m->params, "profile"));
	if (prof && strcmp(prof, "core") && strcmp(prof, "all")) {
		ctl_send_error(s, c, m->id, RPC_BAD_PARAMS,
			       "Invalid params: profile is core or all");
		return;
	}
	cJSON *o = cJSON_CreateObject();
	unsigned need = 0;
	if (cJSON_IsTrue(cJSON_GetObjectItem(m->params, "read_only")))
		need |= TOOL_READ_ONLY;
	if (prof && !strcmp(prof, "core"))
		need |= TOOL_CORE;
	cJSON_AddItemToObject(o, "tools", tools_list_json(need));
	ctl_client_send(s, c, rpc_result_line(m->id, o));
}

static void answer_shutdown(struct ctl_server *s, struct client *c,
			    const struct rpc_msg *m)
{
	log_info("shutdown requested by client %u", c->id);
	ctl_client_send(s, c, rpc_result_line(m->id, NULL));
	ctl_server_stop(s);
}

static void answer_subscribe(struct ctl_server *s, struct client *c,
			     const struct rpc_msg *m)
{
	pthread_mutex_lock(&c->mu);
	c->subscribed = true;
	pthread_mutex_unlock(&c->mu);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "subscribed", true);
	ctl_client_send(s, c, rpc_result_line(m->id, o));
}

/* {"method":"cancel","params":{"id":ID}}: the caller's request ID. */
static void notify_cancel(struct ctl_server *s, struct client *c,
			  const struct rpc_msg *m)
{
	const cJSON *id = cJSON_GetObjectItem(m->params, "id");
	if (!id)
		return;
	pthread_mutex_lock(&s->mu);
	struct workq_job *dropped = ctl_cancel_jobs(s, c, id);
	pthread_mutex_unlock(&s->mu);
	ctl_drop_jobs(s, dropped);
}

static const struct ctl_method METHODS[] = {
	{.name = "cancel", .notify = notify_cancel},
	{.name = "ping", .answer = answer_ping},
	{.name = "status", .answer = answer_status},
	{.name = "tools/list", .answer = answer_tools_list},
	{.name = "shutdown", .answer = answer_shutdown},
	{.name = "subscribe", .answer = answer_subscribe},
	{.name = "tools/call",
	 .run = run_tools_call,
	 .quick = quick_tool,
	 .gone_ok = true,
	 .names_only = names_tool},
	{.name = "context",
	 .run = run_context,
	 .quick = quick_always,
	 .names_only = names_always},
	{.name = "check", .run = run_check},
	{.name = "graph", .run = run_graph},
	{.name = "notes/list", .run = run_notes_list, .quick = quick_always},
	{.name = "notes/read", .run = run_notes_read, .quick = quick_always},
	{.name = "notes/complete",
	 .run = run_notes_complete,
	 .quick = quick_always},
};

const struct ctl_method *ctl_method_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(METHODS); i++)
		if (!strcmp(METHODS[i].name, name))
			return &METHODS[i];
	return NULL;
}
