/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One MCP session's lifecycle and dispatch: the output helpers (JSON-RPC
 * batches gathered into one array), the requests waiting for a vaultd,
 * initialize and the modern per-request _meta, the method table, and
 * the session's creation, tick and end. The methods themselves live in
 * the files named in mcp_int.h.
 */
#include "mcp_int.h"
#include <sys/random.h>
#include <unistd.h>

/* Newest first: the answer when a client asks for an unknown version. */
static const char *const LEGACY[] = {"2025-11-25", "2025-06-18", "2025-03-26",
				     "2024-11-05", NULL};

static const char BASE_INSTRUCTIONS[] =
	"This server works on one Obsidian vault: Markdown notes linked with "
	"[[wikilinks]] and tagged with #tags. A note is named by its name, "
	"an alias or its vault path, with or without .md, in any case. "
	"Find notes with search_notes "
	"(mode fulltext ranks notes by words, phrases, title:, tag: and "
	"folder:; name, name_partial, content and tag match exactly), "
	"list_notes or browse; read "
	"them with read_note, read_section or get_note_metadata. Change notes "
	"with the smallest tool that does the job (append_note, replace_text, "
	"insert_text, update_section, set_frontmatter, add_tag) rather than "
	"rewriting whole notes. Use only tags that already exist (list_tags, "
	"get_policy): the vault refuses new ones, so ask the user before "
	"inventing a tag. rename_note and delete_note keep every link intact. "
	"read_note and get_note_metadata give a note's version; pass it as "
	"expected_version to any write so that it is refused if the note "
	"changed meanwhile. "
	"get_help lists every tool.";

static const char MULTI_INSTRUCTIONS[] =
	" This server works on several vaults, each with its own notes, "
	"tags and policy: list_vaults names them, and every tool takes "
	"`vault` (a name; without it, the first vault). Links and "
	"rename_note stay inside one vault; copy_note and move_note carry a "
	"note to another vault. load_vault adds a vault from the folders "
	"the user allowed.";

static const char *const LOG_LEVELS[] = {"debug",   "info",	 "notice",
					 "warning", "error",	 "critical",
					 "alert",   "emergency", NULL};

struct batch {
	cJSON *ids;	/* the requests still unanswered */
	cJSON *replies; /* the answers so far */
	struct batch *next;
};

static cJSON *supported_versions(void);
/* ---- output helpers
 * ---------------------------------------------------------- */

static void batch_free(struct batch *b)
{
	cJSON_Delete(b->ids);
	cJSON_Delete(b->replies);
	free(b);
}

/* A batch all of whose requests are answered goes out as one array
 * (nothing at all for a batch of notifications only). */
static void batch_maybe_send(struct mcp_session *s, struct batch *b)
{
	if (cJSON_GetArraySize(b->ids) || b == s->cur_batch)
		return;
	for (struct batch **pb = &s->batches; *pb; pb = &(*pb)->next)
		if (*pb == b) {
			*pb = b->next;
			break;
		}
	if (cJSON_GetArraySize(b->replies))
		s->io.out(s->io.ud, cJSON_PrintUnformatted(b->replies));
	batch_free(b);
}

/* An answer to a request of a batch: kept for the batch's array. */
static bool batch_take(struct mcp_session *s, char *line)
{
	cJSON *o = cJSON_Parse(line);
	if (!o || cJSON_HasObjectItem(o, "method")) {
		cJSON_Delete(o);
		return false;
	}
	const cJSON *id = cJSON_GetObjectItem(o, "id");
	for (struct batch *b = s->batches; b; b = b->next) {
		bool mine = false;
		if (!id || cJSON_IsNull(id)) {
			mine = b == s->cur_batch;
		} else {
			int i = 0;
			const cJSON *x;
			cJSON_ArrayForEach(x, b->ids)
			{
				if (cJSON_Compare(x, id, true)) {
					cJSON_DeleteItemFromArray(b->ids, i);
					mine = true;
					break;
				}
				i++;
			}
		}
		if (mine) {
			cJSON_AddItemToArray(b->replies, o);
			free(line);
			batch_maybe_send(s, b);
			return true;
		}
	}
	cJSON_Delete(o);
	return false;
}

void mcp_out(struct mcp_session *s, char *line)
{
	if (s->batches && batch_take(s, line))
		return;
	s->io.out(s->io.ud, line);
}

static cJSON *server_info(const struct mcp_session *s, bool with_title)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", SERVER_NAME);
	if (with_title)
		cJSON_AddStringToObject(o, "title", SERVER_TITLE);
	cJSON_AddStringToObject(o, "version", VAULTD_VERSION);
	return o;
}

/* Modern results carry resultType and who answered. */
static cJSON *finish_result(struct mcp_session *s, cJSON *r, bool modern,
			    bool cacheable)
{
	if (!modern)
		return r;
	cJSON_AddStringToObject(r, "resultType", "complete");
	if (cacheable) {
		cJSON_AddNumberToObject(r, "ttlMs", LIST_TTL_MS);
		cJSON_AddStringToObject(r, "cacheScope", "private");
	}
	cJSON *meta = cJSON_GetObjectItem(r, "_meta");
	if (!meta)
		meta = cJSON_AddObjectToObject(r, "_meta");
	cJSON_AddItemToObject(meta, META_SERVER, server_info(s, true));
	return r;
}

void mcp_reply(struct mcp_session *s, const cJSON *id, cJSON *r, bool modern,
	       bool cacheable)
{
	mcp_out(s, rpc_result_line(id, finish_result(s, r, modern, cacheable)));
}

void mcp_reply_error(struct mcp_session *s, const cJSON *id, int code,
		     const char *msg, cJSON *data)
{
	mcp_out(s, rpc_error_line(id, code, msg, data));
}

void mcp_notify(struct mcp_session *s, const char *method, cJSON *params)
{
	mcp_out(s, rpc_notify_line(method, params));
}

/* ---- pending requests
 * ---------------------------------------------------------- */

struct pending *mcp_pending_add(struct mcp_session *s, size_t vault, long did,
				enum pkind kind, const cJSON *id, bool modern)
{
	struct pending *p = xcalloc(1, sizeof(*p));
	p->vault = vault;
	p->did = did;
	p->kind = kind;
	p->id = id ? cJSON_Duplicate(id, 1) : NULL;
	p->modern = modern;
	p->version = s->version;
	p->started = p->last_progress = now_ns();
	p->next = s->pending;
	s->pending = p;
	return p;
}

void mcp_pending_free(struct pending *p)
{
	cJSON_Delete(p->id);
	cJSON_Delete(p->progress_token);
	cJSON_Delete(p->held);
	free(p->name);
	free(p);
}

struct pending *mcp_pending_take(struct mcp_session *s, size_t vault, long did)
{
	for (struct pending **pp = &s->pending; *pp; pp = &(*pp)->next) {
		if ((*pp)->did == did && (*pp)->vault == vault) {
			struct pending *p = *pp;
			*pp = p->next;
			p->next = NULL;
			return p;
		}
	}
	return NULL;
}

size_t mcp_session_pending(const struct mcp_session *s)
{
	size_t n = 0;
	for (const struct pending *p = s->pending; p; p = p->next)
		if (p->id || p->job)
			n++;
	return n;
}

long mcp_to_daemon(struct mcp_session *s, size_t vault, const char *method,
		   cJSON *params)
{
	return s->io.daemon_send(s->io.ud, vault, method, params);
}

struct vctx *mcp_vctx(struct mcp_session *s, size_t vault)
{
	if (vault >= s->nctx) {
		s->ctx = xrealloc(s->ctx, (vault + 1) * sizeof(*s->ctx));
		memset(s->ctx + s->nctx, 0,
		       (vault + 1 - s->nctx) * sizeof(*s->ctx));
		s->nctx = vault + 1;
	}
	return &s->ctx[vault];
}

/* Every context asked for has come (or will not). */
bool mcp_contexts_ready(const struct mcp_session *s)
{
	for (size_t i = 0; i < s->nctx; i++)
		if (s->ctx[i].asked && !s->ctx[i].ready)
			return false;
	return true;
}

const char *mcp_vname(const struct mcp_session *s, size_t vault)
{
	return vset_name(s->cfg.vaults, vault);
}

/* ---- lifecycle
 * ------------------------------------------------------------------------ */

static int version_rank(const char *v)
{
	for (int i = 0; LEGACY[i]; i++)
		if (!strcmp(LEGACY[i], v))
			return i;
	return -1;
}

static cJSON *capabilities(const struct mcp_session *s, bool modern)
{
	cJSON *c = cJSON_CreateObject();
	cJSON *t = cJSON_AddObjectToObject(c, "tools");
	cJSON_AddBoolToObject(t, "listChanged", false);
	cJSON *r = cJSON_AddObjectToObject(c, "resources");
	if (!modern)
		cJSON_AddBoolToObject(r, "subscribe", true);
	cJSON_AddBoolToObject(r, "listChanged", true);
	cJSON *p = cJSON_AddObjectToObject(c, "prompts");
	cJSON_AddBoolToObject(p, "listChanged", false);
	if (!modern)
		cJSON_AddObjectToObject(c, "logging");
	if (modern || s->version <= 2)
		cJSON_AddObjectToObject(c, "completions");
	return c;
}

static void add_instructions(const struct mcp_session *s, cJSON *r)
{
	cJSON_AddStringToObject(r, "instructions", s->instructions);
}

static void handle_initialize(struct mcp_session *s, const cJSON *id,
			      const cJSON *params)
{
	if (s->initialized) {
		mcp_reply_error(s, id, RPC_INVALID_REQUEST,
				"Invalid Request: the session is initialized "
				"already (once per session)",
				NULL);
		return;
	}
	const char *want = cJSON_GetStringValue(
		cJSON_GetObjectItem(params, "protocolVersion"));
	if (!want) {
		mcp_reply_error(s, id, RPC_BAD_PARAMS,
				"Invalid params: protocolVersion is required",
				NULL);
		return;
	}
	int rank = version_rank(want);
	/* Echo a version we speak; otherwise offer our latest. */
	s->version = rank >= 0 ? rank : 0;
	s->initialized = true;
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "protocolVersion", LEGACY[s->version]);
	cJSON_AddItemToObject(r, "capabilities", capabilities(s, false));
	cJSON_AddItemToObject(r, "serverInfo", server_info(s, s->version <= 1));
	add_instructions(s, r);
	mcp_reply(s, id, r, false, false);
}

static void handle_discover(struct mcp_session *s, const cJSON *id)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "supportedVersions", supported_versions());
	cJSON_AddItemToObject(r, "capabilities", capabilities(s, true));
	add_instructions(s, r);
	mcp_reply(s, id, r, true, true);
}

static void handle_set_level(struct mcp_session *s, const cJSON *id,
			     const cJSON *params)
{
	const char *lvl =
		cJSON_GetStringValue(cJSON_GetObjectItem(params, "level"));
	for (int i = 0; lvl && LOG_LEVELS[i]; i++) {
		if (!strcmp(LOG_LEVELS[i], lvl)) {
			s->log_level = i;
			mcp_reply(s, id, cJSON_CreateObject(), false, false);
			return;
		}
	}
	mcp_reply_error(
		s, id, RPC_BAD_PARAMS,
		"Invalid params: level must be one of debug, info, notice, "
		"warning, error, critical, alert, emergency",
		NULL);
}

static void handle_cancelled(struct mcp_session *s, const cJSON *params)
{
	const cJSON *rid = cJSON_GetObjectItem(params, "requestId");
	if (!rid)
		return;
	/* A cancelled request is not answered: its batch goes without. */
	for (struct batch *b = s->batches; b; b = b->next) {
		int i = 0;
		const cJSON *x;
		cJSON_ArrayForEach(x, b->ids)
		{
			if (cJSON_Compare(x, rid, true)) {
				cJSON_DeleteItemFromArray(b->ids, i);
				batch_maybe_send(s, b);
				goto batches_done;
			}
			i++;
		}
	}
batches_done:
	for (struct pending *p = s->pending; p; p = p->next)
		if (((p->id && cJSON_Compare(p->id, rid, true)) ||
		     (p->job && p->job->id &&
		      cJSON_Compare(p->job->id, rid, true))) &&
		    !p->cancelled) {
			p->cancelled = true;
			/* vaultd stops too, and answers at once. */
			if (p->did > 0 && s->io.daemon_cancel)
				s->io.daemon_cancel(s->io.ud, p->vault, p->did);
		}
}

/* 2026-07-28: subscriptions/listen is a long-lived request. */
static void handle_listen(struct mcp_session *s, const cJSON *id,
			  const cJSON *params)
{
	const cJSON *n = cJSON_GetObjectItem(params, "notifications");
	struct listen *l = xcalloc(1, sizeof(*l));
	l->id = cJSON_Duplicate(id, 1);
	l->tools = false; /* the tool list never changes */
	l->resources =
		cJSON_IsTrue(cJSON_GetObjectItem(n, "resourcesListChanged"));
	const cJSON *subs = cJSON_GetObjectItem(n, "resourceSubscriptions");
	l->uris = cJSON_IsArray(subs) ? cJSON_Duplicate(subs, 1)
				      : cJSON_CreateArray();
	l->next = s->listens;
	s->listens = l;
	cJSON *p = cJSON_CreateObject();
	cJSON *meta = cJSON_AddObjectToObject(p, "_meta");
	cJSON_AddItemToObject(meta, META_SUBID, cJSON_Duplicate(id, 1));
	cJSON *hon = cJSON_AddObjectToObject(p, "notifications");
	if (l->resources)
		cJSON_AddBoolToObject(hon, "resourcesListChanged", true);
	if (cJSON_GetArraySize(l->uris))
		cJSON_AddItemToObject(hon, "resourceSubscriptions",
				      cJSON_Duplicate(l->uris, 1));
	mcp_notify(s, "notifications/subscriptions/acknowledged", p);
}

static bool end_listen(struct mcp_session *s, const cJSON *rid)
{
	for (struct listen **pp = &s->listens; *pp; pp = &(*pp)->next) {
		struct listen *l = *pp;
		if (!cJSON_Compare(l->id, rid, true))
			continue;
		*pp = l->next;
		cJSON *r = cJSON_CreateObject();
		cJSON *meta = cJSON_AddObjectToObject(r, "_meta");
		cJSON_AddItemToObject(meta, META_SUBID,
				      cJSON_Duplicate(l->id, 1));
		mcp_reply(s, l->id, r, true, false);
		cJSON_Delete(l->id);
		cJSON_Delete(l->uris);
		free(l);
		return true;
	}
	return false;
}

/* ---- dispatch
 * ---------------------------------------------------------------------------
 */

/* Every version spoken: this one per request (_meta), the older ones
 * after initialize. server/discover and -32022 say the same. */
static cJSON *supported_versions(void)
{
	cJSON *a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, cJSON_CreateString(MODERN_VERSION));
	for (int i = 0; LEGACY[i]; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(LEGACY[i]));
	return a;
}

/* Modern requests: check the per-request _meta. Returns false when an
 * error was sent. */
static bool check_modern(struct mcp_session *s, const cJSON *id,
			 const cJSON *meta)
{
	const cJSON *v = cJSON_GetObjectItem(meta, META_VERSION);
	if (!cJSON_IsString(v)) {
		mcp_reply_error(s, id, RPC_BAD_PARAMS,
				"Invalid params: _meta." META_VERSION
				" must be a string",
				NULL);
		return false;
	}
	if (strcmp(v->valuestring, MODERN_VERSION) != 0 &&
	    version_rank(v->valuestring) >= 0) {
		_cleanup_free_ char *m = xasprintf(
			"Invalid Request: protocol version %s is spoken in a "
			"session opened with initialize, not per request",
			v->valuestring);
		mcp_reply_error(s, id, RPC_INVALID_REQUEST, m, NULL);
		return false;
	}
	if (strcmp(v->valuestring, MODERN_VERSION) != 0) {
		cJSON *data = cJSON_CreateObject();
		cJSON_AddItemToObject(data, "supported", supported_versions());
		if (strlen(v->valuestring) <= QUOTE_MAX)
			cJSON_AddStringToObject(data, "requested",
						v->valuestring);
		mcp_reply_error(s, id, -32022, "Unsupported protocol version",
				data);
		return false;
	}
	if (!cJSON_IsObject(cJSON_GetObjectItem(meta, META_CAPS))) {
		mcp_reply_error(s, id, RPC_BAD_PARAMS,
				"Invalid params: _meta." META_CAPS
				" is required",
				NULL);
		return false;
	}
	const cJSON *lvl = cJSON_GetObjectItem(meta, META_LOGLEVEL);
	if (lvl) {
		bool ok = false;
		for (int i = 0; cJSON_IsString(lvl) && LOG_LEVELS[i]; i++)
			ok |= !strcmp(LOG_LEVELS[i], lvl->valuestring);
		if (!ok) {
			mcp_reply_error(s, id, RPC_BAD_PARAMS,
					"Invalid params: unknown log level",
					NULL);
			return false;
		}
	}
	return true;
}

/* ---- the method table ----------------------------------------------------
 */

/* Handlers as the table calls them: the request's id and params, and
 * whether the session speaks the modern (2026, _meta) protocol. */
typedef void method_fn(struct mcp_session *s, const cJSON *id,
		       const cJSON *params, bool modern);

static void m_templates(struct mcp_session *s, const cJSON *id,
			const cJSON *params, bool modern)
{
	(void)params;
	mcp_handle_templates(s, id, modern);
}

static void m_prompts_list(struct mcp_session *s, const cJSON *id,
			   const cJSON *params, bool modern)
{
	(void)params;
	mcp_handle_prompts_list(s, id, modern);
}

static void m_subscribe(struct mcp_session *s, const cJSON *id,
			const cJSON *params, bool modern)
{
	(void)modern;
	mcp_handle_subscribe(s, id, params, true);
}

static void m_unsubscribe(struct mcp_session *s, const cJSON *id,
			  const cJSON *params, bool modern)
{
	(void)modern;
	mcp_handle_subscribe(s, id, params, false);
}

static void m_discover(struct mcp_session *s, const cJSON *id,
		       const cJSON *params, bool modern)
{
	(void)params, (void)modern;
	handle_discover(s, id);
}

static void m_listen(struct mcp_session *s, const cJSON *id,
		     const cJSON *params, bool modern)
{
	(void)modern;
	handle_listen(s, id, params);
}

static void m_set_level(struct mcp_session *s, const cJSON *id,
			const cJSON *params, bool modern)
{
	(void)modern;
	handle_set_level(s, id, params);
}

static void m_initialize(struct mcp_session *s, const cJSON *id,
			 const cJSON *params, bool modern)
{
	(void)modern;
	handle_initialize(s, id, params);
}

static void m_ping(struct mcp_session *s, const cJSON *id, const cJSON *params,
		   bool modern)
{
	(void)params, (void)modern;
	mcp_reply(s, id, cJSON_CreateObject(), false, false);
}

/* Which sessions a method belongs to: one that began with initialize
 * (before or after it), one whose requests carry _meta (2026 on). */
enum {
	ERA_PREINIT = 1 << 0, /* answered before initialize */
	ERA_SESSION = 1 << 1, /* an initialized session's */
	ERA_MODERN = 1 << 2,  /* a request with _meta's */
};

static const struct mcp_method {
	const char *name;
	method_fn *run;
	uint8_t eras;
} METHODS[] = {
	{"initialize", m_initialize, ERA_PREINIT | ERA_SESSION},
	{"ping", m_ping, ERA_PREINIT | ERA_SESSION},
	{"server/discover", m_discover, ERA_MODERN},
	{"tools/list", mcp_handle_tools_list, ERA_SESSION | ERA_MODERN},
	{"tools/call", mcp_handle_tools_call, ERA_SESSION | ERA_MODERN},
	{"resources/list", mcp_handle_resources_list, ERA_SESSION | ERA_MODERN},
	{"resources/read", mcp_handle_resources_read, ERA_SESSION | ERA_MODERN},
	{"resources/templates/list", m_templates, ERA_SESSION | ERA_MODERN},
	{"resources/subscribe", m_subscribe, ERA_SESSION},
	{"resources/unsubscribe", m_unsubscribe, ERA_SESSION},
	{"prompts/list", m_prompts_list, ERA_SESSION | ERA_MODERN},
	{"prompts/get", mcp_handle_prompts_get, ERA_SESSION | ERA_MODERN},
	{"completion/complete", mcp_handle_complete, ERA_SESSION | ERA_MODERN},
	{"logging/setLevel", m_set_level, ERA_SESSION},
	{"subscriptions/listen", m_listen, ERA_MODERN},
};

static const struct mcp_method *find_method(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(METHODS); i++)
		if (!strcmp(METHODS[i].name, name))
			return &METHODS[i];
	return NULL;
}

/* Notifications: never answered. */
static void notification(struct mcp_session *s, const char *method,
			 const cJSON *params)
{
	if (!strcmp(method, "notifications/cancelled")) {
		const cJSON *rid = cJSON_GetObjectItem(params, "requestId");
		if (!(rid && end_listen(s, rid)))
			handle_cancelled(s, params);
	} else if (!strcmp(method, "exit")) {
		mcp_session_shutdown(s);
	}
	/* notifications/initialized and unknown ones: nothing to do. */
}

static void dispatch(struct mcp_session *s, const char *method, const cJSON *id,
		     const cJSON *params)
{
	const cJSON *meta = cJSON_GetObjectItem(params, "_meta");
	bool modern = cJSON_GetObjectItem(meta, META_VERSION) != NULL;
	if (!id) {
		notification(s, method, params);
		return;
	}
	const struct mcp_method *m = find_method(method);
	if (modern || !strcmp(method, "server/discover")) {
		if (!check_modern(s, id, meta))
			return;
		if (m && (m->eras & ERA_MODERN)) {
			m->run(s, id, params, true);
		} else {
			_cleanup_free_ char *msg = xasprintf(
				"Method not found: %s (not part of protocol "
				"version " MODERN_VERSION ")",
				QUOTE(method));
			mcp_reply_error(s, id, RPC_METHOD_NOT_FOUND, msg, NULL);
		}
		return;
	}
	if (m && (m->eras & ERA_PREINIT)) {
		m->run(s, id, params, false);
		return;
	}
	if (!s->initialized) {
		mcp_reply_error(
			s, id, RPC_INVALID_REQUEST,
			"Invalid Request: not initialized; send initialize "
			"first (or use protocol version " MODERN_VERSION
			" with _meta)",
			NULL);
		return;
	}
	if (m && (m->eras & ERA_SESSION)) {
		m->run(s, id, params, false);
	} else {
		_cleanup_free_ char *msg =
			xasprintf("Method not found: %s", QUOTE(method));
		mcp_reply_error(s, id, RPC_METHOD_NOT_FOUND, msg, NULL);
	}
}

static void input_one(struct mcp_session *s, const char *line, size_t len,
		      bool in_batch);

/* A JSON-RPC batch: 2025-03-26 requires servers to take them; the other
 * versions have none. */
static void input_batch(struct mcp_session *s, const cJSON *arr)
{
	if (!s->initialized || strcmp(LEGACY[s->version], "2025-03-26") != 0) {
		mcp_reply_error(s, NULL, RPC_INVALID_REQUEST,
				"Invalid Request: batches are taken only in a "
				"session of protocol version 2025-03-26",
				NULL);
		return;
	}
	if (!cJSON_GetArraySize(arr)) {
		mcp_reply_error(s, NULL, RPC_INVALID_REQUEST,
				"Invalid Request: empty batch", NULL);
		return;
	}
	struct batch *b = xcalloc(1, sizeof(*b));
	b->ids = cJSON_CreateArray();
	b->replies = cJSON_CreateArray();
	b->next = s->batches;
	s->batches = b;
	s->cur_batch = b;
	const cJSON *el;
	cJSON_ArrayForEach(el, arr)
	{
		const cJSON *id = cJSON_GetObjectItem(el, "id");
		if (cJSON_IsString(id) || cJSON_IsNumber(id))
			cJSON_AddItemToArray(b->ids, cJSON_Duplicate(id, 1));
		_cleanup_free_ char *one = cJSON_PrintUnformatted(el);
		input_one(s, one, strlen(one), true);
	}
	s->cur_batch = NULL;
	batch_maybe_send(s, b);
}

void mcp_session_input(struct mcp_session *s, const char *line, size_t len)
{
	input_one(s, line, len, false);
}

static void input_one(struct mcp_session *s, const char *line, size_t len,
		      bool in_batch)
{
	struct rpc_msg m;
	const char *why;
	int code = rpc_parse(line, len, &m, &why);
	if (code && !in_batch && cJSON_IsArray(m.root)) {
		input_batch(s, m.root);
	} else if (in_batch && m.method && !strcmp(m.method, "initialize")) {
		mcp_reply_error(
			s, m.id, RPC_INVALID_REQUEST,
			"Invalid Request: initialize cannot be part of a "
			"batch",
			NULL);
	} else if (code) {
		mcp_reply_error(s, m.id, code, why, NULL);
	} else if (m.method) {
		if (m.params && !cJSON_IsObject(m.params))
			mcp_reply_error(
				s, m.id, RPC_BAD_PARAMS,
				"Invalid params: params must be an object",
				NULL);
		else if (s->shutting_down && m.id)
			mcp_reply_error(s, m.id, RPC_INVALID_REQUEST,
					"Invalid Request: shutting down", NULL);
		else
			dispatch(s, m.method, m.id, m.params);
	}
	/* Responses from the client are not expected: vault-mcp sends no
	 * requests. They are ignored. */
	rpc_msg_clear(&m);
}

void mcp_session_tick(struct mcp_session *s)
{
	uint64_t now = now_ns();
	/* list_vaults answers without a vaultd that does not answer. */
	for (struct pending *p = s->pending; p; p = p->next)
		if (p->kind == P_JOB && p->job->kind == J_LIST &&
		    !p->job->finished &&
		    now - p->started >= LIST_WAIT_MS * 1000000ull)
			mcp_job_reply(s, p->job, NULL);
	/* Several vaults: a slow one does not hold the first result. */
	if (s->multi && s->held_since &&
	    now - s->held_since >= CONTEXT_WAIT_MS * 1000000ull) {
		for (size_t i = 0; i < s->nctx; i++)
			s->ctx[i].ready = true;
		mcp_flush_held(s);
	}
	for (struct pending *p = s->pending; p; p = p->next) {
		if (!p->progress_token || p->cancelled || p->held ||
		    p->daemon_progress)
			continue;
		/* The first after half a second, then one a second. */
		if (p->progress_sent > 0
			    ? now - p->last_progress < 1000000000ull
			    : now - p->started < 500000000ull)
			continue;
		_cleanup_free_ char *msg =
			xasprintf("%s: still working (%.0f s)",
				  p->name ? p->name : "call",
				  (double)(now - p->started) / 1e9);
		p->progress_sent += 1;
		mcp_send_progress(s, p, p->progress_sent, 0, msg);
	}
}

void mcp_session_shutdown(struct mcp_session *s)
{
	s->shutting_down = true;
}

bool mcp_session_shutting_down(const struct mcp_session *s)
{
	return s->shutting_down;
}

bool mcp_session_done(const struct mcp_session *s)
{
	return s->shutting_down && mcp_session_pending(s) == 0;
}

void mcp_session_start(struct mcp_session *s, size_t vault)
{
	struct vctx *c = mcp_vctx(s, vault);
	long did = mcp_to_daemon(s, vault, "context", NULL);
	if (did >= 0) {
		mcp_pending_add(s, vault, did, P_CONTEXT, NULL, false);
		c->asked = true;
		c->ready = false;
	}
	did = mcp_to_daemon(s, vault, "subscribe", NULL);
	if (did >= 0)
		mcp_pending_add(s, vault, did, P_INTERNAL, NULL, false);
}

struct mcp_session *mcp_session_new(const struct mcp_config *cfg,
				    const struct mcp_io *io)
{
	struct mcp_session *s = xcalloc(1, sizeof(*s));
	s->cfg = *cfg;
	s->io = *io;
	s->log_level = -1;
	s->subscribed = cJSON_CreateArray();
	s->multi = vset_multi(cfg->vaults);
	/* The configured vaults are all being started: the first result
	 * waits (a while) for each one's context. */
	for (size_t i = 0; i < vset_count(cfg->vaults); i++)
		mcp_vctx(s, i)->asked = true;
	if (s->multi)
		mcp_add_vault_tools(s);
	uint8_t rnd[4];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		uint64_t t = now_ns() ^ ((uint64_t)getpid() << 32);
		memcpy(rnd, &t, sizeof(rnd));
	}
	snprintf(s->id, sizeof(s->id), "%02x%02x%02x%02x", rnd[0], rnd[1],
		 rnd[2], rnd[3]);
	s->instructions = xasprintf(
		"%s%s This is session %s: list_changes shows what it changed, "
		"undo_changes reverts it.",
		BASE_INSTRUCTIONS, s->multi ? MULTI_INSTRUCTIONS : "", s->id);
	return s;
}

struct mcp_session *mcp_session_free(struct mcp_session *s)
{
	if (!s)
		return NULL;
	while (s->pending) {
		struct pending *p = s->pending;
		s->pending = p->next;
		/* A job goes with its last request. */
		if (p->job && !--p->job->out)
			mcp_job_free(p->job);
		mcp_pending_free(p);
	}
	while (s->listens) {
		struct listen *l = s->listens;
		s->listens = l->next;
		cJSON_Delete(l->id);
		cJSON_Delete(l->uris);
		free(l);
	}
	while (s->batches) {
		struct batch *b = s->batches;
		s->batches = b->next;
		batch_free(b);
	}
	cJSON_Delete(s->subscribed);
	cJSON_Delete(s->cfg.tools);
	for (size_t i = 0; i < s->nctx; i++)
		free(s->ctx[i].block);
	free(s->ctx);
	free(s->instructions);
	free(s);
	return NULL;
}
