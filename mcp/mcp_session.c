/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"
#include "mcp_session.h"
#include "json.h"
#include "context.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#define SERVER_NAME "vault-mcp"
#define SERVER_TITLE "vaultd: guarded Obsidian vault"
#define MODERN_VERSION "2026-07-28"
#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_SERVER "io.modelcontextprotocol/serverInfo"
#define META_SUBID "io.modelcontextprotocol/subscriptionId"
#define META_LOGLEVEL "io.modelcontextprotocol/logLevel"
#define URI_PREFIX "vault:///"
#define URI_SCHEME "vault://"
#define MULTI_TEMPLATE URI_SCHEME "{vault}/{+path}"
#define CONTEXT_MAX 24576    /* bytes of the auto-context of all vaults */
#define CONTEXT_WAIT_MS 2000 /* several vaults: the longest wait for it */
#define LIST_WAIT_MS 1000    /* list_vaults: the longest wait for a vault */
#define RESOURCE_PAGE 100
#define LIST_TTL_MS 60000

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

enum pkind {
	P_TOOL,
	P_READ,
	P_LIST,
	P_COMPLETE,
	P_SUBSCRIBE,
	P_CONTEXT,
	P_INTERNAL,
	P_JOB, /* one step of a tool answered here (struct job) */
};

struct job;

struct pending {
	struct pending *next;
	size_t vault; /* whose vaultd answers */
	long did;     /* vaultd request id */
	struct job *job;
	int step;
	enum pkind kind;
	cJSON *id; /* the client's request id */
	bool modern;
	int version; /* legacy version rank (index into LEGACY) */
	bool cancelled;
	cJSON *progress_token;
	uint64_t started, last_progress;
	double progress_sent; /* the last progress value sent */
	bool daemon_progress; /* vaultd reports this call's progress */
	char *name;	      /* tool name or resource uri */
	long offset;	      /* list page, or a tool call's offset */
	cJSON *held;	      /* a tool result waiting for the context block */
};

struct listen {
	struct listen *next;
	cJSON *id;
	bool tools, resources;
	cJSON *uris; /* resourceSubscriptions */
};

struct mcp_session {
	struct mcp_config cfg;
	struct mcp_io io;
	bool initialized; /* legacy: initialize answered */
	int version;	  /* legacy: negotiated, index into LEGACY */
	int log_level;	  /* -1: no log notifications */
	bool shutting_down;
	bool multi; /* several vaults: names in URIs, results, context */
	/* auto-context: one block per vault */
	struct vctx {
		char *block;
		bool asked, ready;
	} * ctx;
	size_t nctx;
	uint64_t held_since; /* a result waits for the context */
	bool context_injected;
	struct pending *pending;
	cJSON *subscribed; /* legacy resources/subscribe: uri strings */
	struct listen *listens;
	/* JSON-RPC batches (a 2025-03-26 session): their answers are
	 * gathered and sent as one array once all are in. */
	struct batch *batches;
	struct batch *cur_batch; /* being read: takes id-less errors */
	/* This session's id: vaultd records it with every change made
	 * here, for list_changes and undo_changes. */
	char id[17];
	char *instructions;
};

struct batch {
	cJSON *ids;	/* the requests still unanswered */
	cJSON *replies; /* the answers so far */
	struct batch *next;
};

/* ---- output helpers
 * ---------------------------------------------------------- */

static bool uri_in(const cJSON *list, const char *uri);
static cJSON *supported_versions(void);
static void list_changed(struct mcp_session *s);
static void job_answer(struct mcp_session *s, struct pending *p,
		       const cJSON *res, const char *err);
static void add_vault_tools(struct mcp_session *s);
static void help_add_vault_tools(char **text, cJSON *structured);
static bool hold(struct mcp_session *s, struct pending *p, const cJSON *res);
static void flush_held(struct mcp_session *s);

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

static void out(struct mcp_session *s, char *line)
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

static void reply(struct mcp_session *s, const cJSON *id, cJSON *r, bool modern,
		  bool cacheable)
{
	out(s, rpc_result_line(id, finish_result(s, r, modern, cacheable)));
}

static void reply_error(struct mcp_session *s, const cJSON *id, int code,
			const char *msg, cJSON *data)
{
	out(s, rpc_error_line(id, code, msg, data));
}

static void notify(struct mcp_session *s, const char *method, cJSON *params)
{
	out(s, rpc_notify_line(method, params));
}

/* ---- pending requests
 * ---------------------------------------------------------- */

static struct pending *pending_add(struct mcp_session *s, size_t vault,
				   long did, enum pkind kind, const cJSON *id,
				   bool modern)
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

static void pending_free(struct pending *p)
{
	cJSON_Delete(p->id);
	cJSON_Delete(p->progress_token);
	cJSON_Delete(p->held);
	free(p->name);
	free(p);
}

static struct pending *pending_take(struct mcp_session *s, size_t vault,
				    long did)
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

static long to_daemon(struct mcp_session *s, size_t vault, const char *method,
		      cJSON *params)
{
	return s->io.daemon_send(s->io.ud, vault, method, params);
}

static struct vctx *vctx(struct mcp_session *s, size_t vault)
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
static bool contexts_ready(const struct mcp_session *s)
{
	for (size_t i = 0; i < s->nctx; i++)
		if (s->ctx[i].asked && !s->ctx[i].ready)
			return false;
	return true;
}

static const char *vname(const struct mcp_session *s, size_t vault)
{
	return vset_name(s->cfg.vaults, vault);
}

/* ---- tools
 * ---------------------------------------------------------------------- */

static bool tool_allowed(const struct mcp_session *s, const cJSON *t)
{
	if (!s->cfg.read_only)
		return true;
	const cJSON *an = cJSON_GetObjectItem(t, "annotations");
	return cJSON_IsTrue(cJSON_GetObjectItem(an, "readOnlyHint"));
}

static const cJSON *find_tool(const struct mcp_session *s, const char *name)
{
	const cJSON *t;
	cJSON_ArrayForEach(t, s->cfg.tools)
	{
		const cJSON *n = cJSON_GetObjectItem(t, "name");
		if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
			return t;
	}
	return NULL;
}

/* structuredContent, outputSchema and title exist from 2025-06-18 on. */
static bool has_structured(bool modern, int version)
{
	return modern || version <= 1;
}

static void handle_tools_list(struct mcp_session *s, const cJSON *id,
			      const cJSON *params, bool modern)
{
	const cJSON *cursor = cJSON_GetObjectItem(params, "cursor");
	if (cursor && !(cJSON_IsString(cursor) && !*cursor->valuestring)) {
		/* Every tool fits on one page; no cursor is ever issued. */
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: unknown cursor", NULL);
		return;
	}
	cJSON *arr = cJSON_CreateArray();
	const cJSON *t;
	cJSON_ArrayForEach(t, s->cfg.tools)
	{
		if (!tool_allowed(s, t))
			continue;
		cJSON *c = cJSON_Duplicate(t, 1);
		if (!has_structured(modern, s->version))
			cJSON_DeleteItemFromObject(c, "outputSchema");
		if (!modern && s->version >= 3)
			cJSON_DeleteItemFromObject(c, "annotations");
		cJSON_AddItemToArray(arr, c);
	}
	cJSON *r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "tools", arr);
	reply(s, id, r, modern, true);
}

/* The longest array inside v (depth 2), for cutting a large result. */
static cJSON *largest_array(cJSON *v)
{
	cJSON *best = cJSON_IsArray(v) ? v : NULL;
	cJSON *it;
	cJSON_ArrayForEach(it, v)
	{
		if (cJSON_IsArray(it) &&
		    (!best ||
		     cJSON_GetArraySize(it) > cJSON_GetArraySize(best)))
			best = it;
	}
	return best;
}

/* Does the tool take this argument? (Its input schema in tools/list.) */
static bool tool_takes(const cJSON *tool, const char *arg)
{
	const cJSON *schema = cJSON_GetObjectItem(tool, "inputSchema");
	return cJSON_GetObjectItemCaseSensitive(
		       cJSON_GetObjectItem(schema, "properties"), arg) != NULL;
}

/* How to ask for the rest of a cut list, with the arguments the tool
 * has: items [start, start + shown) were shown. */
static void hint_items(struct sbuf *b, const cJSON *tool, const char *name,
		       long start, int shown)
{
	int fewer = shown > 0 ? shown : 1;
	if (tool_takes(tool, "offset") && tool_takes(tool, "limit"))
		sb_printf(b,
			  "The rest: call %s again with offset=%ld and "
			  "limit=%d.",
			  name, start + shown, fewer);
	else if (tool_takes(tool, "offset"))
		sb_printf(b, "The rest: call %s again with offset=%ld.", name,
			  start + shown);
	else if (tool_takes(tool, "cursor") && tool_takes(tool, "limit"))
		sb_printf(b,
			  "Ask again with limit=%d and page on with "
			  "next_cursor.",
			  fewer);
	else if (tool_takes(tool, "limit"))
		sb_printf(b, "Ask for fewer with limit=%d.", fewer);
	else
		sb_printf(b, "%s has no paging: ask about less.", name);
}

/* How to read the rest of a cut text: keep bytes from start were shown. */
static void hint_text(struct mcp_session *s, struct sbuf *b, const cJSON *tool,
		      const char *name, long start, size_t keep)
{
	bool sections =
		find_tool(s, "get_headings") && find_tool(s, "read_section");
	if (tool_takes(tool, "offset") && tool_takes(tool, "length")) {
		sb_printf(b, "Read on with %s offset=%ld (and length).", name,
			  start + (long)keep);
		if (sections)
			sb_puts(b, " get_headings shows the note's structure, "
				   "read_section reads one section.");
	} else if (tool_takes(tool, "section") && sections) {
		sb_puts(b, "Read a smaller section: get_headings lists the "
			   "note's headings.");
	} else if (tool_takes(tool, "limit")) {
		sb_puts(b, "Ask for fewer with a smaller limit.");
	} else {
		sb_printf(b, "%s has no paging: this is what fits.", name);
	}
}

/*
 * Results are bounded. Text results are cut with a note; JSON results
 * lose items from their longest list (and say so), so what is left still
 * matches the tool's output schema. The note names only arguments the
 * tool has; start is the call's offset argument. Returns true when cut.
 */
static bool shape_result(struct mcp_session *s, const char *name, long start,
			 char **text, cJSON *structured)
{
	size_t max = s->cfg.max_result, len = strlen(*text);
	if (len <= max)
		return false;
	const cJSON *tool = find_tool(s, name);
	struct sbuf hint = {0};
	cJSON *arr = structured ? largest_array(structured) : NULL;
	if (arr && cJSON_IsArray(cJSON_GetObjectItem(structured, "result")))
		arr = cJSON_GetObjectItem(structured, "result");
	if (arr) {
		int total = cJSON_GetArraySize(arr);
		int lo = 0, hi = total;
		/* Binary search for how many items fit. */
		cJSON *probe = cJSON_Duplicate(structured, 1);
		while (lo < hi) {
			int mid = (lo + hi + 1) / 2;
			cJSON_Delete(probe);
			probe = cJSON_Duplicate(structured, 1);
			cJSON *pa =
				cJSON_IsArray(
					cJSON_GetObjectItem(probe, "result"))
					? cJSON_GetObjectItem(probe, "result")
					: largest_array(probe);
			while (cJSON_GetArraySize(pa) > mid)
				cJSON_DeleteItemFromArray(
					pa, cJSON_GetArraySize(pa) - 1);
			char *t = json_dumps(
				cJSON_IsArray(
					cJSON_GetObjectItem(probe, "result")) &&
						cJSON_GetArraySize(probe) == 1
					? cJSON_GetObjectItem(probe, "result")
					: probe);
			size_t tl = strlen(t);
			free(t);
			if (tl + 400 <= max)
				lo = mid;
			else
				hi = mid - 1;
		}
		cJSON_Delete(probe);
		while (cJSON_GetArraySize(arr) > lo)
			cJSON_DeleteItemFromArray(arr,
						  cJSON_GetArraySize(arr) - 1);
		bool wrapped = cJSON_GetArraySize(structured) == 1 &&
			       cJSON_IsArray(cJSON_GetObjectItem(structured,
								 "result"));
		/* A paged list: where the rest starts now, and no cursor
		 * past the items cut. */
		if (tool_takes(tool, "offset")) {
			if (wrapped)
				cJSON_AddNumberToObject(structured, "total",
							total);
			cJSON_DeleteItemFromObject(structured, "next_offset");
			cJSON_AddNumberToObject(structured, "next_offset",
						(double)(start + lo));
			wrapped = false;
		}
		cJSON_DeleteItemFromObject(structured, "next_cursor");
		hint_items(&hint, tool, name, start, lo);
		char *t = json_dumps(
			wrapped ? cJSON_GetObjectItem(structured, "result")
				: structured);
		free(*text);
		*text = xasprintf("%s\n\n[Result cut: %d of %d items shown "
				  "(at most %zu bytes). %s]",
				  t, lo, total, max, sb_str(&hint));
		free(t);
		sb_free(&hint);
		return true;
	}
	size_t keep = utf8_cut(*text, max);
	hint_text(s, &hint, tool, name, start, keep);
	char *t = xasprintf("%.*s\n\n[Result cut: %zu of %zu bytes shown. "
			    "%s]",
			    (int)keep, *text, keep, len, sb_str(&hint));
	free(*text);
	*text = t;
	sb_free(&hint);
	return true;
}

/* A vault's block cut at a line to fit max bytes, saying so. */
static void block_cut(struct sbuf *b, const char *block, size_t max)
{
	size_t n = strlen(block);
	if (n <= max) {
		sb_puts(b, block);
		return;
	}
	size_t keep = utf8_cut(block, max);
	while (keep && block[keep - 1] != '\n')
		keep--;
	sb_add(b, block, keep);
	sb_puts(b, "[... cut to fit: search_notes mode tag \"claude\" and "
		   "get_policy in this vault give the rest]\n");
}

/*
 * The auto-context: one vault's block as vaultd wrote it; for several,
 * the vaults by name and each one's block, all within CONTEXT_MAX.
 */
static char *context_text(struct mcp_session *s)
{
	if (!s->multi)
		return s->nctx && s->ctx[0].block ? xstrdup(s->ctx[0].block)
						  : NULL;
	struct vault_set *vs = s->cfg.vaults;
	size_t n = vset_count(vs);
	struct sbuf b = {0};
	sb_printf(&b,
		  "## Vaults\n\nThis server works on %zu vault%s; every tool "
		  "takes `vault` (a name below; without it, %s):\n",
		  n, n == 1 ? "" : "s", vname(s, 0));
	for (size_t i = 0; i < n && b.len < CONTEXT_MAX / 4; i++)
		sb_printf(&b, "- %s%s%s: %s\n", vname(s, i),
			  i ? "" : " (default)",
			  vset_read_only(vs, i) ? " (read-only)" : "",
			  vset_path(vs, i));
	size_t share = (CONTEXT_MAX - b.len) / (n ? n : 1);
	for (size_t i = 0; i < n; i++) {
		const struct vctx *c = i < s->nctx ? &s->ctx[i] : NULL;
		sb_printf(&b, "\n# Vault \"%s\"\n\n", vname(s, i));
		if (c && c->block) {
			block_cut(&b, c->block,
				  share > 200 ? share - 100 : 100);
			sb_putc(&b, '\n');
		} else
			sb_puts(&b, "(Not available yet: its vaultd is still "
				    "starting. get_policy with this vault "
				    "lists its allowed tags.)\n");
	}
	return sb_steal(&b);
}

static void text_block(cJSON *content, const char *text)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	cJSON_AddItemToArray(content, b);
}

static char *uri_of(const struct mcp_session *s, size_t vault,
		    const char *path);

/*
 * The blocks vaultd sends after a tool's text: an image as it is; a link
 * to a file of the vault gets its URI here (the vault's name in it is
 * vault-mcp's). Clients before 2025-06-18 know no resource_link: the
 * text names the file for them.
 */
static void add_blocks(struct mcp_session *s, const struct pending *p,
		       cJSON *content, const cJSON *blocks)
{
	const cJSON *b;
	cJSON_ArrayForEach(b, blocks)
	{
		const char *type =
			cJSON_GetStringValue(cJSON_GetObjectItem(b, "type"));
		const char *path =
			cJSON_GetStringValue(cJSON_GetObjectItem(b, "path"));
		if (type && !strcmp(type, "image")) {
			cJSON_AddItemToArray(content, cJSON_Duplicate(b, 1));
		} else if (type && !strcmp(type, "resource_link") && path &&
			   has_structured(p->modern, p->version)) {
			cJSON *l = cJSON_Duplicate(b, 1);
			cJSON_DeleteItemFromObject(l, "path");
			_cleanup_free_ char *uri = uri_of(s, p->vault, path);
			cJSON_AddStringToObject(l, "uri", uri);
			cJSON_AddItemToArray(content, l);
		}
	}
}

static void finish_tool(struct mcp_session *s, struct pending *p,
			const cJSON *dres)
{
	const cJSON *txt = cJSON_GetObjectItem(dres, "text");
	bool is_error = cJSON_IsTrue(cJSON_GetObjectItem(dres, "isError"));
	char *text = xstrdup(cJSON_IsString(txt) ? txt->valuestring : "");
	cJSON *structured =
		cJSON_Duplicate(cJSON_GetObjectItem(dres, "structured"), 1);
	/* What a text is (a part of a note), apart from it; a text cut
	 * here says where to read on instead. */
	const char *info =
		cJSON_GetStringValue(cJSON_GetObjectItem(dres, "info"));
	if (!is_error && s->multi && !strcmp(p->name, "get_help"))
		help_add_vault_tools(&text, structured);
	if (!is_error) {
		if (shape_result(s, p->name, p->offset, &text, structured))
			info = NULL;
		/* Seed 000: the first tool result of the session carries the
		 * personal notes and the allowed tags. */
		_cleanup_free_ char *ctx =
			s->context_injected ? NULL : context_text(s);
		char *t = context_inject(&s->context_injected, ctx, text);
		free(text);
		text = t;
	}
	cJSON *r = cJSON_CreateObject();
	cJSON *content = cJSON_AddArrayToObject(r, "content");
	text_block(content, text);
	if (info && !is_error) {
		_cleanup_free_ char *i = xasprintf("[%s]", info);
		text_block(content, i);
	}
	/* A text result's warning (a note that is not UTF-8) comes after
	 * the text, apart from it: the text stays the note's text. */
	const char *warn =
		cJSON_GetStringValue(cJSON_GetObjectItem(dres, "warning"));
	if (warn && !is_error) {
		_cleanup_free_ char *w = xasprintf("Warning: %s", warn);
		text_block(content, w);
	}
	if (!is_error)
		add_blocks(s, p, content, cJSON_GetObjectItem(dres, "content"));
	/* Several vaults: which one answered. */
	bool named = s->multi && !mcp_vault_tool(p->name);
	if (named) {
		_cleanup_free_ char *v =
			xasprintf("[Vault: %s]", vname(s, p->vault));
		text_block(content, v);
		if (cJSON_IsObject(structured))
			cJSON_AddStringToObject(structured, "vault",
						vname(s, p->vault));
	}
	if (structured && !is_error && has_structured(p->modern, p->version))
		cJSON_AddItemToObject(r, "structuredContent",
				      TAKE_PTR(structured));
	if (is_error)
		cJSON_AddBoolToObject(r, "isError", true);
	cJSON_Delete(structured);
	free(text);
	reply(s, p->id, r, p->modern, false);
}

/* A tool's failure, as a result. */
static void tool_error(struct mcp_session *s, const cJSON *id, bool modern,
		       const char *msg)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *content = cJSON_AddArrayToObject(r, "content");
	text_block(content, msg);
	cJSON_AddBoolToObject(r, "isError", true);
	reply(s, id, r, modern, false);
}

/*
 * The vault a call names in args[key] (taken out of args), the default
 * without it. False when an error was sent.
 */
static bool pick_vault(struct mcp_session *s, const cJSON *id, bool modern,
		       cJSON *args, const char *key, size_t *ret)
{
	cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(args, key);
	if (!v || cJSON_IsNull(v)) {
		cJSON_Delete(v);
		*ret = 0;
		return true;
	}
	int i = cJSON_IsString(v) ? vset_find(s->cfg.vaults, v->valuestring)
				  : -1;
	if (i < 0) {
		_cleanup_free_ char *names = vset_names(s->cfg.vaults);
		_cleanup_free_ char *m =
			cJSON_IsString(v)
				? xasprintf("Unknown vault %s. The vaults: %s "
					    "(list_vaults tells more).",
					    QUOTE(v->valuestring), names)
				: xasprintf("%s must be a vault's name (a "
					    "string); the vaults: %s.",
					    key, names);
		tool_error(s, id, modern, m);
		cJSON_Delete(v);
		return false;
	}
	cJSON_Delete(v);
	*ret = (size_t)i;
	return true;
}

static void local_tool(struct mcp_session *s, const cJSON *id, bool modern,
		       const char *name, cJSON *args, size_t vault);

static void handle_tools_call(struct mcp_session *s, const cJSON *id,
			      const cJSON *params, bool modern)
{
	const cJSON *name = cJSON_GetObjectItem(params, "name");
	const cJSON *args = cJSON_GetObjectItem(params, "arguments");
	if (!cJSON_IsString(name)) {
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: \"name\" must be the tool's name",
			    NULL);
		return;
	}
	if (args && !cJSON_IsObject(args)) {
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: \"arguments\" must be an object",
			    NULL);
		return;
	}
	const cJSON *t = find_tool(s, name->valuestring);
	if (!t) {
		_cleanup_free_ char *m =
			xasprintf("Unknown tool: %s", QUOTE(name->valuestring));
		reply_error(s, id, RPC_BAD_PARAMS, m, NULL);
		return;
	}
	if (!tool_allowed(s, t)) {
		_cleanup_free_ char *m = xasprintf(
			"Tool %s is not available: vault-mcp runs read-only "
			"(--read-only or VAULT_MCP_READ_ONLY=1), so it only "
			"reads the vault.",
			QUOTE(name->valuestring));
		tool_error(s, id, modern, m);
		return;
	}
	cJSON *fargs = args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
	size_t vault = 0;
	if (s->multi && !pick_vault(s, id, modern, fargs, "vault", &vault)) {
		cJSON_Delete(fargs);
		return;
	}
	if (mcp_vault_tool(name->valuestring)) {
		local_tool(s, id, modern, name->valuestring, fargs, vault);
		cJSON_Delete(fargs);
		return;
	}
	const cJSON *an = cJSON_GetObjectItem(t, "annotations");
	if (vset_read_only(s->cfg.vaults, vault) &&
	    !cJSON_IsTrue(cJSON_GetObjectItem(an, "readOnlyHint"))) {
		_cleanup_free_ char *m = xasprintf(
			"Vault %s is read-only (its folder is not writable, "
			"or vault-mcp serves it with --read-only-vault): %s "
			"changes notes, so it is not run there. Nothing "
			"changed.",
			QUOTE(vname(s, vault)), QUOTE(name->valuestring));
		tool_error(s, id, modern, m);
		cJSON_Delete(fargs);
		return;
	}
	cJSON *dp = cJSON_CreateObject();
	cJSON_AddStringToObject(dp, "name", name->valuestring);
	cJSON_AddItemToObject(dp, "arguments", fargs);
	cJSON_AddStringToObject(dp, "source", "mcp");
	cJSON_AddStringToObject(dp, "session", s->id);
	const cJSON *meta = cJSON_GetObjectItem(params, "_meta");
	const cJSON *tok = cJSON_GetObjectItem(meta, "progressToken");
	bool want_progress = cJSON_IsString(tok) || cJSON_IsNumber(tok);
	/* vaultd then reports a long wait (a search index being built). */
	if (want_progress)
		cJSON_AddBoolToObject(dp, "progress", true);
	long did = to_daemon(s, vault, "tools/call", dp);
	if (did < 0) {
		reply_error(s, id, RPC_INTERNAL,
			    "vaultd is not reachable; try again", NULL);
		return;
	}
	struct pending *p = pending_add(s, vault, did, P_TOOL, id, modern);
	p->name = xstrdup(name->valuestring);
	const cJSON *off = cJSON_GetObjectItemCaseSensitive(args, "offset");
	if (cJSON_IsNumber(off))
		p->offset = (long)off->valuedouble;
	if (want_progress)
		p->progress_token = cJSON_Duplicate(tok, 1);
}

/* ---- several vaults: the tools answered here
 * ---------------------------------------------------- */

/* copy_note's and move_note's schemas; verb: what the note's trip is. */
#define CROSS_VAULT_SCHEMAS(verb)                                                \
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{"                  \
	"\"name\":{\"type\":\"string\",\"description\":\"The note (name or "     \
	"path) in the vault it is in\"},"                                        \
	"\"to_vault\":{\"type\":\"string\",\"description\":\"The vault to " verb \
	" it to (a name from list_vaults)\"},"                                   \
	"\"vault\":{\"type\":\"string\",\"description\":\"The vault the "        \
	"note is in; default: the first\"},"                                     \
	"\"new_name\":{\"type\":\"string\",\"description\":\"Its name or "       \
	"path there; default: the same path\"},"                                 \
	"\"overwrite\":{\"type\":\"boolean\",\"default\":false,"                 \
	"\"description\":\"Replace a note of that name there\"}},"               \
	"\"required\":[\"name\",\"to_vault\"]},"                                 \
	"\"outputSchema\":{\"type\":\"object\",\"properties\":{"                 \
	"\"status\":{\"type\":\"string\"},\"from_vault\":{\"type\":"             \
	"\"string\"},\"to_vault\":{\"type\":\"string\"},\"source\":{"            \
	"\"type\":\"string\"},\"target\":{\"type\":\"string\"},\"moved\":{"      \
	"\"type\":\"boolean\"}},\"required\":[\"status\",\"from_vault\","        \
	"\"to_vault\",\"source\",\"target\",\"moved\"]}"

/* Their tools/list entries; `vault` is added to every other tool. */
static const char *const VAULT_TOOLS[] = {
	"{\"name\":\"list_vaults\","
	"\"description\":\"The vaults this server works on: each one's name "
	"(what the vault argument of every tool takes), folder, number of "
	"notes (while it is indexed: indexing and the notes it is indexing), "
	"whether its vaultd is running and whether it is read-only. "
	"The first is the default.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{}},"
	"\"outputSchema\":{\"type\":\"object\",\"properties\":{\"vaults\":{"
	"\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
	"\"name\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
	"\"default\":{\"type\":\"boolean\"},"
	"\"notes\":{\"type\":[\"integer\",\"null\"]},"
	"\"running\":{\"type\":\"boolean\"},"
	"\"read_only\":{\"type\":\"boolean\"},"
	"\"indexing\":{\"type\":\"boolean\"}}}}},\"required\":[\"vaults\"]},"
	"\"annotations\":{\"readOnlyHint\":true}}",

	"{\"name\":\"load_vault\","
	"\"description\":\"Load the Obsidian vault in a folder (absolute "
	"path, with .obsidian/ in it) and wait until it is indexed; its "
	"name then works as the vault argument of every tool. Only folders "
	"under those the user allowed (vault-mcp --allow-root) can be "
	"loaded. Loading a loaded vault answers the same.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"vault_path\":{\"type\":\"string\",\"description\":\"Absolute path "
	"of the vault's folder\"},"
	"\"name\":{\"type\":\"string\",\"description\":\"Its short name "
	"(letters, digits, _ - .); default: the folder's name\"}},"
	"\"required\":[\"vault_path\"]},"
	"\"outputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"status\":{\"type\":\"string\"},\"note_count\":{\"type\":\"integer\"},"
	"\"vault_path\":{\"type\":\"string\"},\"name\":{\"type\":\"string\"},"
	"\"read_only\":{\"type\":\"boolean\"}},"
	"\"required\":[\"status\",\"note_count\",\"vault_path\",\"name\"]},"
	"\"annotations\":{\"readOnlyHint\":true}}",

	"{\"name\":\"copy_note\","
	"\"description\":\"Copy a note (its whole text, frontmatter included) "
	"into another vault. The other vault's policy judges it like any "
	"new note: a tag it does not allow refuses the copy. Links are "
	"copied as written.\"," CROSS_VAULT_SCHEMAS(
		"copy") ",\"annotations\":{\"destructiveHint\":false}}",

	"{\"name\":\"move_note\","
	"\"description\":\"Move a note into another vault: it is written "
	"there first (the other vault's policy may refuse it; then nothing "
	"changes), then deleted here the way delete_note does (to .trash/, "
	"links to it marked per policy). Links are copied as written.\"," CROSS_VAULT_SCHEMAS(
		"move") "}",
};

/* get_help's words on them: name, params. */
static const char *const VAULT_TOOL_PARAMS[] = {
	"",
	"vault_path: string (required), name: string",
	"name: string (required), to_vault: string (required), vault: "
	"string, new_name: string, overwrite: boolean = false",
	"name: string (required), to_vault: string (required), vault: "
	"string, new_name: string, overwrite: boolean = false",
};

bool mcp_vault_tool(const char *name)
{
	static const char *const names[] = {"list_vaults", "load_vault",
					    "copy_note", "move_note"};
	for (size_t i = 0; name && i < ARRAY_SIZE(names); i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

static bool only_names(const char *only, const char *name)
{
	if (!only)
		return true;
	_cleanup_free_ char *l = xstrdup(only);
	char *save = NULL;
	for (char *n = strtok_r(l, ", ", &save); n;
	     n = strtok_r(NULL, ", ", &save))
		if (!strcmp(n, name))
			return true;
	return false;
}

/* Several vaults: every tool takes `vault`, and the vaults' own tools
 * join the list (those --tools names, when it names some). */
static void add_vault_tools(struct mcp_session *s)
{
	cJSON *t;
	cJSON_ArrayForEach(t, s->cfg.tools)
	{
		cJSON *in = cJSON_GetObjectItem(t, "inputSchema");
		cJSON *props = cJSON_GetObjectItem(in, "properties");
		if (!props)
			props = cJSON_AddObjectToObject(in, "properties");
		if (cJSON_GetObjectItemCaseSensitive(props, "vault"))
			continue;
		cJSON *v = cJSON_AddObjectToObject(props, "vault");
		cJSON_AddStringToObject(v, "type", "string");
		cJSON_AddStringToObject(v, "description",
					"The vault (a name from list_vaults); "
					"default: the first");
	}
	for (size_t i = 0; i < ARRAY_SIZE(VAULT_TOOLS); i++) {
		cJSON *d = cJSON_Parse(VAULT_TOOLS[i]);
		if (!d)
			abort(); /* a literal above */
		if (only_names(s->cfg.only,
			       cJSON_GetStringValue(
				       cJSON_GetObjectItem(d, "name"))))
			cJSON_AddItemToArray(s->cfg.tools, d);
		else
			cJSON_Delete(d);
	}
}

/* get_help names them too (its text is its list as JSON). */
static void help_add_vault_tools(char **text, cJSON *structured)
{
	cJSON *list = cJSON_Parse(*text);
	if (!cJSON_IsArray(list)) {
		cJSON_Delete(list);
		return;
	}
	cJSON *sl = cJSON_GetObjectItem(structured, "result");
	for (size_t i = 0; i < ARRAY_SIZE(VAULT_TOOLS); i++) {
		cJSON *d = cJSON_Parse(VAULT_TOOLS[i]);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(
			o, "name",
			cJSON_Duplicate(cJSON_GetObjectItem(d, "name"), 1));
		cJSON_AddStringToObject(o, "params", VAULT_TOOL_PARAMS[i]);
		cJSON_AddItemToObject(
			o, "description",
			cJSON_Duplicate(cJSON_GetObjectItem(d, "description"),
					1));
		if (cJSON_IsArray(sl))
			cJSON_AddItemToArray(sl, cJSON_Duplicate(o, 1));
		cJSON_AddItemToArray(list, o);
		cJSON_Delete(d);
	}
	free(*text);
	*text = json_dumps(list);
	cJSON_Delete(list);
}

enum jkind { J_LIST, J_LOAD, J_COPY };

enum jstep {
	JS_STATUS,
	JS_COUNT,
	JS_CONTEXT,
	JS_META,
	JS_READ,
	JS_CREATE,
	JS_DELETE,
};

/* A tool answered here, in steps, each a request to some vaultd. */
struct job {
	enum jkind kind;
	char *tool;
	cJSON *id; /* the client's request */
	bool modern;
	int version;
	int out;       /* requests sent, not answered */
	bool finished; /* answered (or cancelled): the rest is dropped */
	cJSON *result; /* what it answers */
	char *extra;   /* text after the result (a vault's context) */
	size_t src, dst;
	bool move, overwrite;
	char *name, *new_name, *path, *version_tag;
};

static void job_free(struct job *j)
{
	cJSON_Delete(j->id);
	cJSON_Delete(j->result);
	free(j->tool);
	free(j->extra);
	free(j->name);
	free(j->new_name);
	free(j->path);
	free(j->version_tag);
	free(j);
}

static bool job_send(struct mcp_session *s, struct job *j, size_t vault,
		     enum jstep step, const char *method, cJSON *params)
{
	long did = to_daemon(s, vault, method, params);
	if (did < 0)
		return false;
	struct pending *p = pending_add(s, vault, did, P_JOB, NULL, j->modern);
	p->job = j;
	p->step = step;
	j->out++;
	return true;
}

/* A tool call of vaultd, for a step. */
static bool job_tool(struct mcp_session *s, struct job *j, size_t vault,
		     enum jstep step, const char *tool, cJSON *args)
{
	cJSON *dp = cJSON_CreateObject();
	cJSON_AddStringToObject(dp, "name", tool);
	cJSON_AddItemToObject(dp, "arguments", args);
	cJSON_AddStringToObject(dp, "source", "mcp");
	return job_send(s, j, vault, step, "tools/call", dp);
}

/* The answer: a tool result like vaultd's, through finish_tool (so the
 * first result of a session carries the context as any other). */
static void job_reply(struct mcp_session *s, struct job *j, const char *err)
{
	j->finished = true;
	if (!j->id)
		return;
	cJSON *dres = cJSON_CreateObject();
	if (err) {
		cJSON_AddStringToObject(dres, "text", err);
		cJSON_AddTrueToObject(dres, "isError");
	} else {
		_cleanup_free_ char *t = json_dumps(j->result);
		_cleanup_free_ char *full =
			j->extra ? xasprintf("%s\n\n---\n%s\n---", t, j->extra)
				 : NULL;
		cJSON_AddStringToObject(dres, "text", full ? full : t);
		cJSON_AddItemToObject(dres, "structured", TAKE_PTR(j->result));
	}
	struct pending *p = pending_add(s, 0, 0, P_TOOL, j->id, j->modern);
	s->pending = p->next; /* not waiting for any vaultd */
	p->next = NULL;
	p->version = j->version;
	p->name = xstrdup(j->tool);
	if (!hold(s, p, dres)) {
		finish_tool(s, p, dres);
		pending_free(p);
	}
	cJSON_Delete(dres);
}

/* vaultd's tool result failed: its text, else NULL. */
static const char *tool_failed(const cJSON *res)
{
	if (!cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")))
		return NULL;
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(res, "text"));
	return t ? t : "failed";
}

static const char *res_path(const cJSON *res)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(
		cJSON_GetObjectItem(res, "structured"), "path"));
}

static void copy_step(struct mcp_session *s, struct job *j, enum jstep step,
		      const cJSON *res, const char *err)
{
	const char *fail = err ? err : tool_failed(res);
	const char *from = vname(s, j->src), *to = vname(s, j->dst);
	_cleanup_free_ char *m = NULL;
	switch (step) {
	case JS_META:
		if (fail || !res_path(res)) {
			m = xasprintf("Vault %s: %s", from,
				      fail ? fail : "no path");
			break;
		}
		j->path = xstrdup(res_path(res));
		cJSON *ra = cJSON_CreateObject();
		cJSON_AddStringToObject(ra, "name", j->path);
		job_tool(s, j, j->src, JS_READ, "read_note", ra);
		return;
	case JS_READ: {
		if (fail) {
			m = xasprintf("Vault %s: %s", from, fail);
			break;
		}
		if (cJSON_GetObjectItem(res, "warning")) {
			m = xasprintf("%s in vault %s is not all UTF-8 text: "
				      "copying it through JSON would change "
				      "it. Nothing changed.",
				      j->path, from);
			break;
		}
		/* "Version V." : the version the delete will expect. */
		const char *info =
			cJSON_GetStringValue(cJSON_GetObjectItem(res, "info"));
		if (info && str_has_prefix(info, "Version ")) {
			const char *v = info + 8;
			j->version_tag = xstrndup(v, strcspn(v, ". "));
		}
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "name",
					j->new_name ? j->new_name : j->path);
		cJSON_AddStringToObject(
			a, "content",
			cJSON_GetStringValue(cJSON_GetObjectItem(res, "text")));
		if (j->overwrite)
			cJSON_AddTrueToObject(a, "overwrite");
		job_tool(s, j, j->dst, JS_CREATE, "create_note", a);
		return;
	}
	case JS_CREATE:
		if (fail) {
			m = xasprintf("Vault %s refused the note: %s\nNothing "
				      "changed: %s stays in vault %s.",
				      to, fail, j->path, from);
			break;
		}
		cJSON_AddStringToObject(j->result, "target",
					res_path(res) ? res_path(res) : "");
		if (!j->move)
			break;
		cJSON *da = cJSON_CreateObject();
		cJSON_AddStringToObject(da, "name", j->path);
		if (j->version_tag)
			cJSON_AddStringToObject(da, "expected_version",
						j->version_tag);
		job_tool(s, j, j->src, JS_DELETE, "delete_note", da);
		return;
	case JS_DELETE:
		if (fail) {
			m = xasprintf("Copied to vault %s as %s, but vault %s "
				      "did not delete %s: %s",
				      to,
				      cJSON_GetStringValue(cJSON_GetObjectItem(
					      j->result, "target")),
				      from, j->path, fail);
			break;
		}
		cJSON_ReplaceItemInObject(j->result, "moved",
					  cJSON_CreateBool(true));
		break;
	default:
		break;
	}
	if (!m)
		cJSON_AddStringToObject(j->result, "source", j->path);
	job_reply(s, j, m);
}

static void load_step(struct mcp_session *s, struct job *j, enum jstep step,
		      const cJSON *res, const char *err)
{
	if (step == JS_COUNT) {
		if (err) {
			_cleanup_free_ char *m = xasprintf(
				"Vault %s at %s could not be "
				"loaded: %s",
				vname(s, j->dst),
				vset_path(s->cfg.vaults, j->dst), err);
			job_reply(s, j, m);
			return;
		}
		cJSON_AddNumberToObject(
			j->result, "note_count",
			cJSON_GetNumberValue(
				cJSON_GetObjectItem(res, "total")));
		job_send(s, j, j->dst, JS_CONTEXT, "context", NULL);
		return;
	}
	/* Its personal notes and allowed tags, after the answer. */
	const char *b = cJSON_GetStringValue(cJSON_GetObjectItem(res, "block"));
	if (b) {
		struct sbuf t = {0};
		sb_printf(&t, "# Vault \"%s\"\n\n", vname(s, j->dst));
		block_cut(&t, b, CONTEXT_MAX / 2);
		j->extra = sb_steal(&t);
	}
	job_reply(s, j, NULL);
}

/* One answer (or failure) for a job's request. */
static void job_answer(struct mcp_session *s, struct pending *p,
		       const cJSON *res, const char *err)
{
	struct job *j = p->job;
	size_t vault = p->vault;
	enum jstep step = p->step;
	bool cancelled = p->cancelled;
	pending_free(p);
	j->out--;
	if (cancelled && !j->finished) {
		/* The client gave up: what is written stays written. */
		j->finished = true;
		cJSON_Delete(TAKE_PTR(j->id));
	}
	if (!j->finished) {
		switch (j->kind) {
		case J_LIST: {
			cJSON *v = cJSON_GetArrayItem(
				cJSON_GetObjectItem(j->result, "vaults"),
				(int)vault);
			const cJSON *n = cJSON_GetObjectItem(res, "notes");
			const cJSON *ix = cJSON_GetObjectItem(res, "index");
			const char *st = cJSON_GetStringValue(
				cJSON_GetObjectItem(ix, "state"));
			bool indexing = st && strcmp(st, "ready");
			/* While it indexes: how many it is indexing. */
			if (indexing)
				n = cJSON_GetObjectItem(ix, "total");
			if (!err && cJSON_IsNumber(n)) {
				cJSON_ReplaceItemInObject(
					v, "notes",
					cJSON_CreateNumber(n->valuedouble));
				cJSON_ReplaceItemInObject(
					v, "indexing",
					cJSON_CreateBool(indexing));
			} else
				cJSON_ReplaceItemInObject(v, "running",
							  cJSON_CreateFalse());
			if (!j->out)
				job_reply(s, j, NULL);
			break;
		}
		case J_LOAD:
			load_step(s, j, step, res, err);
			break;
		case J_COPY:
			copy_step(s, j, step, res, err);
			break;
		}
	}
	if (j->finished && !j->out)
		job_free(j);
}

static struct job *job_new(struct mcp_session *s, enum jkind kind,
			   const char *tool, const cJSON *id, bool modern)
{
	struct job *j = xcalloc(1, sizeof(*j));
	j->kind = kind;
	j->tool = xstrdup(tool);
	j->id = cJSON_Duplicate(id, 1);
	j->modern = modern;
	j->version = s->version;
	j->result = cJSON_CreateObject();
	return j;
}

static void list_vaults(struct mcp_session *s, struct job *j)
{
	struct vault_set *vs = s->cfg.vaults;
	cJSON *arr = cJSON_AddArrayToObject(j->result, "vaults");
	for (size_t i = 0; i < vset_count(vs); i++) {
		cJSON *v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "name", vname(s, i));
		cJSON_AddStringToObject(v, "path", vset_path(vs, i));
		cJSON_AddBoolToObject(v, "default", i == 0);
		cJSON_AddNullToObject(v, "notes");
		cJSON_AddBoolToObject(v, "running", vset_connected(vs, i));
		cJSON_AddBoolToObject(v, "read_only", vset_read_only(vs, i));
		cJSON_AddBoolToObject(v, "indexing", false);
		cJSON_AddItemToArray(arr, v);
	}
	for (size_t i = 0; i < vset_count(vs); i++)
		if (vset_connected(vs, i))
			job_send(s, j, i, JS_STATUS, "status", NULL);
	if (!j->out)
		job_reply(s, j, NULL);
}

/* A string argument: absent (NULL), or a string of at most max bytes;
 * false with *ret_msg otherwise. */
static bool string_arg(const cJSON *args, const char *key, size_t max,
		       bool required, const char **ret, char **ret_msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
	*ret = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (required)
			*ret_msg = xasprintf("%s is required", key);
		return !required;
	}
	if (!cJSON_IsString(v)) {
		*ret_msg = xasprintf("%s must be a string", key);
		return false;
	}
	if (strlen(v->valuestring) > max) {
		*ret_msg = xasprintf("%s is too long (%zu bytes; the limit is "
				     "%zu)",
				     key, strlen(v->valuestring), max);
		return false;
	}
	*ret = v->valuestring;
	return true;
}

static void load_vault(struct mcp_session *s, struct job *j, const cJSON *args)
{
	const char *path, *name;
	_cleanup_free_ char *m = NULL;
	if (!string_arg(args, "vault_path", PATH_MAX_BYTES * 4, true, &path,
			&m) ||
	    !string_arg(args, "name", 256, false, &name, &m)) {
		job_reply(s, j, m);
		return;
	}
	size_t before = vset_count(s->cfg.vaults);
	int i = vset_load(s->cfg.vaults, path, name, &m);
	if (i < 0) {
		job_reply(s, j, m);
		return;
	}
	j->dst = (size_t)i;
	if ((size_t)i >= before) {
		/* A new vault: its notes are resources now. */
		vctx(s, (size_t)i);
		list_changed(s);
	}
	cJSON_AddStringToObject(j->result, "status", "ok");
	cJSON_AddStringToObject(j->result, "vault_path",
				vset_path(s->cfg.vaults, j->dst));
	cJSON_AddStringToObject(j->result, "name", vname(s, j->dst));
	cJSON_AddBoolToObject(j->result, "read_only",
			      vset_read_only(s->cfg.vaults, j->dst));
	/* notes/list waits for the index: its total is the count. */
	cJSON *dp = cJSON_CreateObject();
	cJSON_AddNumberToObject(dp, "offset", 0);
	cJSON_AddNumberToObject(dp, "limit", 1);
	if (!job_send(s, j, j->dst, JS_COUNT, "notes/list", dp))
		job_reply(s, j, "vaultd is not reachable; try again");
}

static void copy_note(struct mcp_session *s, struct job *j, cJSON *args,
		      size_t src)
{
	const char *name, *to, *new_name;
	_cleanup_free_ char *m = NULL;
	const cJSON *ow = cJSON_GetObjectItemCaseSensitive(args, "overwrite");
	if (!string_arg(args, "name", PATH_MAX_BYTES, true, &name, &m) ||
	    !string_arg(args, "to_vault", 256, true, &to, &m) ||
	    !string_arg(args, "new_name", PATH_MAX_BYTES, false, &new_name,
			&m)) {
		job_reply(s, j, m);
		return;
	}
	if (ow && !cJSON_IsBool(ow)) {
		job_reply(s, j, "overwrite must be true or false");
		return;
	}
	int dst = vset_find(s->cfg.vaults, to);
	if (dst < 0) {
		_cleanup_free_ char *names = vset_names(s->cfg.vaults);
		m = xasprintf("Unknown vault %s. The vaults: %s.", QUOTE(to),
			      names);
		job_reply(s, j, m);
		return;
	}
	j->src = src;
	j->dst = (size_t)dst;
	j->overwrite = cJSON_IsTrue(ow);
	if (j->src == j->dst) {
		m = xasprintf("The note is in vault %s already: %s works "
			      "between vaults (rename_note moves a note "
			      "inside one).",
			      vname(s, j->src), j->tool);
	} else if (vset_read_only(s->cfg.vaults, j->dst)) {
		m = xasprintf("Vault %s is read-only: nothing is written "
			      "there. Nothing changed.",
			      vname(s, j->dst));
	} else if (j->move && vset_read_only(s->cfg.vaults, j->src)) {
		m = xasprintf("Vault %s is read-only: a note cannot leave it "
			      "(copy_note copies it). Nothing changed.",
			      vname(s, j->src));
	}
	if (m) {
		job_reply(s, j, m);
		return;
	}
	j->name = xstrdup(name);
	j->new_name = new_name ? xstrdup(new_name) : NULL;
	cJSON_AddStringToObject(j->result, "status", "ok");
	cJSON_AddStringToObject(j->result, "from_vault", vname(s, j->src));
	cJSON_AddStringToObject(j->result, "to_vault", vname(s, j->dst));
	cJSON_AddBoolToObject(j->result, "moved", false);
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "name", name);
	if (!job_tool(s, j, j->src, JS_META, "get_note_metadata", a))
		job_reply(s, j, "vaultd is not reachable; try again");
}

static void local_tool(struct mcp_session *s, const cJSON *id, bool modern,
		       const char *name, cJSON *args, size_t vault)
{
	struct job *j;
	if (!strcmp(name, "list_vaults")) {
		j = job_new(s, J_LIST, name, id, modern);
		list_vaults(s, j);
	} else if (!strcmp(name, "load_vault")) {
		j = job_new(s, J_LOAD, name, id, modern);
		load_vault(s, j, args);
	} else {
		j = job_new(s, J_COPY, name, id, modern);
		j->move = !strcmp(name, "move_note");
		copy_note(s, j, args, vault);
	}
	if (j->finished && !j->out)
		job_free(j);
}

/* ---- resources
 * ------------------------------------------------------------------ */

/* vault:///<path>; several vaults: vault://<name>/<path>. */
static char *uri_of(const struct mcp_session *s, size_t vault, const char *path)
{
	_cleanup_free_ char *enc = url_encode_path(path, true);
	/* '%' escapes everything a URI cannot hold raw; UTF-8 stays as is. */
	if (s->multi)
		return xasprintf(URI_SCHEME "%s/%s", vname(s, vault), enc);
	return xasprintf(URI_PREFIX "%s", enc);
}

/* The note's path and vault of a URI (vault:///<path> is the default
 * vault's); NULL when it names none. */
static char *path_of(const struct mcp_session *s, const char *uri,
		     size_t *ret_vault)
{
	if (!str_has_prefix(uri, URI_SCHEME))
		return NULL;
	const char *a = uri + strlen(URI_SCHEME);
	const char *slash = strchr(a, '/');
	if (!slash)
		return NULL;
	size_t vault = 0;
	if (slash > a) {
		if (!s->multi || slash - a > VSET_NAME_MAX)
			return NULL;
		_cleanup_free_ char *name = xstrndup(a, (size_t)(slash - a));
		int i = vset_find(s->cfg.vaults, name);
		if (i < 0)
			return NULL;
		vault = (size_t)i;
	}
	*ret_vault = vault;
	return url_decode(slash + 1, strlen(slash + 1));
}

/* Several vaults are listed one after the other: the cursor holds the
 * vault in its high bits. */
#define PAGE_VAULT_SHIFT 40

static char *page_cursor(size_t vault, long offset)
{
	return cursor_make("resources", 0,
			   ((size_t)vault << PAGE_VAULT_SHIFT) |
				   (size_t)offset);
}

static void handle_resources_list(struct mcp_session *s, const cJSON *id,
				  const cJSON *params, bool modern)
{
	const cJSON *cursor = cJSON_GetObjectItem(params, "cursor");
	size_t offset = 0;
	if (cJSON_IsString(cursor) && *cursor->valuestring) {
		const char *why;
		if (cursor_parse(cursor->valuestring, "resources", 0, &offset,
				 &why) < 0) {
			_cleanup_free_ char *m =
				xasprintf("Invalid params: %s", why);
			reply_error(s, id, RPC_BAD_PARAMS, m, NULL);
			return;
		}
	} else if (cursor && !cJSON_IsString(cursor)) {
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: cursor must be a string", NULL);
		return;
	}
	size_t vault = offset >> PAGE_VAULT_SHIFT;
	offset &= ((size_t)1 << PAGE_VAULT_SHIFT) - 1;
	if (vault >= vset_count(s->cfg.vaults)) {
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: unknown cursor", NULL);
		return;
	}
	cJSON *dp = cJSON_CreateObject();
	cJSON_AddNumberToObject(dp, "offset", (double)offset);
	cJSON_AddNumberToObject(dp, "limit", RESOURCE_PAGE);
	long did = to_daemon(s, vault, "notes/list", dp);
	struct pending *p = pending_add(s, vault, did, P_LIST, id, modern);
	p->offset = (long)offset;
}

static void finish_list(struct mcp_session *s, struct pending *p,
			const cJSON *dres)
{
	cJSON *arr = cJSON_CreateArray();
	const cJSON *n;
	cJSON_ArrayForEach(n, cJSON_GetObjectItem(dres, "notes"))
	{
		const char *path =
			cJSON_GetStringValue(cJSON_GetObjectItem(n, "path"));
		cJSON *r = cJSON_CreateObject();
		_cleanup_free_ char *uri = uri_of(s, p->vault, path);
		cJSON_AddStringToObject(r, "uri", uri);
		cJSON_AddStringToObject(
			r, "name",
			cJSON_GetStringValue(cJSON_GetObjectItem(n, "name")));
		if (has_structured(p->modern, p->version) && s->multi) {
			_cleanup_free_ char *t =
				xasprintf("%s: %s", vname(s, p->vault), path);
			cJSON_AddStringToObject(r, "title", t);
		} else if (has_structured(p->modern, p->version)) {
			cJSON_AddStringToObject(r, "title", path);
		}
		cJSON_AddStringToObject(r, "mimeType", "text/markdown");
		cJSON_AddItemToObject(
			r, "size",
			cJSON_Duplicate(cJSON_GetObjectItem(n, "size"), 1));
		cJSON_AddItemToArray(arr, r);
	}
	cJSON *r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "resources", arr);
	double total = cJSON_GetNumberValue(cJSON_GetObjectItem(dres, "total"));
	long next = p->offset + RESOURCE_PAGE;
	if (next < (long)total) {
		_cleanup_free_ char *c = page_cursor(p->vault, next);
		cJSON_AddStringToObject(r, "nextCursor", c);
	} else if (p->vault + 1 < vset_count(s->cfg.vaults)) {
		_cleanup_free_ char *c = page_cursor(p->vault + 1, 0);
		cJSON_AddStringToObject(r, "nextCursor", c);
	}
	reply(s, p->id, r, p->modern, true);
}

/* A URI that names no note of this vault. */
static void not_a_note_uri(struct mcp_session *s, const cJSON *id, int code,
			   const char *uri)
{
	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "uri", uri);
	reply_error(s, id, code,
		    s->multi
			    ? "Resource not found: vault-mcp serves "
			      "vault://<vault>/<path> URIs (list_vaults "
			      "names the vaults)"
			    : "Resource not found: vault-mcp serves " URI_PREFIX
			      "<path> URIs",
		    data);
}

/* The longest URI: a note's path percent-encoded (each byte at most 3),
 * after a vault's name when there are several. */
static size_t uri_max(const struct mcp_session *s)
{
	return strlen(URI_PREFIX) + 3 * PATH_MAX_BYTES +
	       (s->multi ? VSET_NAME_MAX : 0);
}

/* Ask vaultd for the note at path (only whether it is there, with
 * meta_only); the answer finishes the request of that kind. */
static void read_from_daemon(struct mcp_session *s, const cJSON *id,
			     enum pkind kind, bool modern, size_t vault,
			     const char *path, const char *uri, bool meta_only)
{
	cJSON *dp = cJSON_CreateObject();
	cJSON_AddStringToObject(dp, "path", path);
	if (meta_only)
		cJSON_AddTrueToObject(dp, "meta_only");
	long did = to_daemon(s, vault, "notes/read", dp);
	struct pending *p = pending_add(s, vault, did, kind, id, modern);
	p->name = xstrdup(uri);
}

static void handle_resources_read(struct mcp_session *s, const cJSON *id,
				  const cJSON *params, bool modern)
{
	const cJSON *uri = cJSON_GetObjectItem(params, "uri");
	if (!cJSON_IsString(uri)) {
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: \"uri\" must be a string", NULL);
		return;
	}
	/* A note's path, percent-encoded (each byte at most 3). */
	size_t ul = strlen(uri->valuestring);
	if (ul > uri_max(s)) {
		_cleanup_free_ char *m = xasprintf(
			"Invalid params: uri too long (%zu bytes; the limit "
			"is %zu)",
			ul, uri_max(s));
		reply_error(s, id, RPC_BAD_PARAMS, m, NULL);
		return;
	}
	size_t vault = 0;
	_cleanup_free_ char *path = path_of(s, uri->valuestring, &vault);
	if (!path) {
		not_a_note_uri(s, id, modern ? RPC_BAD_PARAMS : -32002,
			       uri->valuestring);
		return;
	}
	read_from_daemon(s, id, P_READ, modern, vault, path, uri->valuestring,
			 false);
}

static void finish_subscribe(struct mcp_session *s, struct pending *p,
			     const cJSON *derr)
{
	if (derr) {
		cJSON *data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "uri", p->name);
		reply_error(s, p->id, -32002, "Resource not found", data);
		return;
	}
	if (!uri_in(s->subscribed, p->name))
		cJSON_AddItemToArray(s->subscribed,
				     cJSON_CreateString(p->name));
	reply(s, p->id, cJSON_CreateObject(), false, false);
}

static void finish_read(struct mcp_session *s, struct pending *p,
			const cJSON *dres, const cJSON *derr)
{
	if (derr) {
		cJSON *data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "uri", p->name);
		/* An attachment too big to send says so; else not found. */
		const cJSON *dc = cJSON_GetObjectItem(derr, "code");
		const char *dm = cJSON_GetStringValue(
			cJSON_GetObjectItem(derr, "message"));
		bool too_big = cJSON_IsNumber(dc) &&
			       dc->valueint == RPC_BAD_PARAMS && dm;
		reply_error(s, p->id,
			    too_big || p->modern ? RPC_BAD_PARAMS : -32002,
			    too_big ? dm : "Resource not found", data);
		return;
	}
	const char *blob =
		cJSON_GetStringValue(cJSON_GetObjectItem(dres, "blob"));
	if (blob) {
		/* An attachment: its bytes (the daemon bounds them). */
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "uri", p->name);
		cJSON_AddStringToObject(
			c, "mimeType",
			cJSON_GetStringValue(
				cJSON_GetObjectItem(dres, "mime")));
		cJSON_AddStringToObject(c, "blob", blob);
		cJSON *r = cJSON_CreateObject();
		cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "contents"), c);
		reply(s, p->id, r, p->modern, true);
		return;
	}
	/* Bounded like tool results; read_note reads the rest in parts. */
	const char *text =
		cJSON_GetStringValue(cJSON_GetObjectItem(dres, "text"));
	const char *path =
		cJSON_GetStringValue(cJSON_GetObjectItem(dres, "path"));
	size_t len = text ? strlen(text) : 0, max = s->cfg.max_result;
	_cleanup_free_ char *cut = NULL;
	if (len > max) {
		size_t keep = utf8_cut(text, max);
		cut = xasprintf("%.*s\n\n[Resource cut: %zu of %zu bytes shown "
				"(at most %zu bytes). Read the rest with "
				"read_note: name \"%s\", offset=%zu and "
				"length.]",
				(int)keep, text, keep, len, max,
				path ? path : "", keep);
	}
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "uri", p->name);
	cJSON_AddStringToObject(c, "mimeType", "text/markdown");
	cJSON_AddStringToObject(c, "text", cut ? cut : text);
	cJSON *r = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(r, "contents");
	cJSON_AddItemToArray(arr, c);
	reply(s, p->id, r, p->modern, true);
}

static void handle_templates(struct mcp_session *s, const cJSON *id,
			     bool modern)
{
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "uriTemplate", URI_PREFIX "{+path}");
	cJSON_AddStringToObject(t, "name", "note");
	cJSON_AddStringToObject(t, "title", "Note by vault path");
	cJSON_AddStringToObject(
		t, "description",
		"A note of the vault by its path, e.g. " URI_PREFIX
		"projects/Ideas.md");
	cJSON_AddStringToObject(t, "mimeType", "text/markdown");
	cJSON *r = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(r, "resourceTemplates");
	cJSON_AddItemToArray(arr, t);
	if (s->multi) {
		t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "uriTemplate", MULTI_TEMPLATE);
		cJSON_AddStringToObject(t, "name", "vault_note");
		cJSON_AddStringToObject(t, "title", "Note by vault and path");
		cJSON_AddStringToObject(
			t, "description",
			"A note of one of the vaults (list_vaults names "
			"them) by its path, e.g. " URI_SCHEME
			"work/projects/Ideas.md; " URI_PREFIX
			"<path> is the default vault's");
		cJSON_AddStringToObject(t, "mimeType", "text/markdown");
		cJSON_AddItemToArray(arr, t);
	}
	reply(s, id, r, modern, true);
}

static bool uri_in(const cJSON *list, const char *uri)
{
	const cJSON *it;
	cJSON_ArrayForEach(it,
			   list) if (cJSON_IsString(it) &&
				     !strcmp(it->valuestring, uri)) return true;
	return false;
}

static void handle_subscribe(struct mcp_session *s, const cJSON *id,
			     const cJSON *params, bool sub)
{
	const cJSON *uri = cJSON_GetObjectItem(params, "uri");
	if (!cJSON_IsString(uri)) {
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: \"uri\" must be a string", NULL);
		return;
	}
	if (sub) {
		/* Only to a note that is there (vaultd says). */
		size_t vault = 0;
		_cleanup_free_ char *path =
			strlen(uri->valuestring) > uri_max(s)
				? NULL
				: path_of(s, uri->valuestring, &vault);
		if (!path) {
			not_a_note_uri(s, id, -32002, QUOTE(uri->valuestring));
			return;
		}
		read_from_daemon(s, id, P_SUBSCRIBE, false, vault, path,
				 uri->valuestring, true);
		return;
	} else {
		int i = 0;
		const cJSON *it;
		cJSON_ArrayForEach(it, s->subscribed)
		{
			if (!strcmp(it->valuestring, uri->valuestring))
				break;
			i++;
		}
		if (i < cJSON_GetArraySize(s->subscribed))
			cJSON_DeleteItemFromArray(s->subscribed, i);
	}
	reply(s, id, cJSON_CreateObject(), false, false);
}

/* ---- prompts and completion
 * -------------------------------------------------------- */

struct prompt {
	const char *name, *title, *description;
	bool needs_note;
	const char *text; /* %s: the note */
};

static const struct prompt PROMPTS[] = {
	{"summarize_note", "Summarize a note",
	 "Read one note and summarize it, with the notes it links to.", true,
	 "Read the note '%s' with read_note, look at its links with get_links, "
	 "and summarize it in a few sentences. Mention the linked notes that "
	 "matter."},
	{"suggest_links", "Suggest links for a note",
	 "Find notes related to one note and suggest links to add.", true,
	 "Read the note '%s'. Use search_notes (content and tag modes) and "
	 "get_backlinks to find related notes that it does not link to yet, "
	 "and suggest [[links]] to add, with one line each on why. Do not "
	 "change any note until the user agrees."},
	{"vault_overview", "Vault overview",
	 "Describe what is in the vault: folders, tags and the main notes.",
	 false,
	 "Give an overview of this vault: use browse for the folders, "
	 "list_tags for the tags and recent_notes for what changed lately. "
	 "Point out broken links (find_broken_links) and orphan notes "
	 "(get_orphans) worth a look.%s"},
};

static void handle_prompts_list(struct mcp_session *s, const cJSON *id,
				bool modern)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < ARRAY_SIZE(PROMPTS); i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "name", PROMPTS[i].name);
		if (has_structured(modern, s->version))
			cJSON_AddStringToObject(p, "title", PROMPTS[i].title);
		cJSON_AddStringToObject(p, "description",
					PROMPTS[i].description);
		if (PROMPTS[i].needs_note) {
			cJSON *args = cJSON_AddArrayToObject(p, "arguments");
			cJSON *a = cJSON_CreateObject();
			cJSON_AddStringToObject(a, "name", "name");
			cJSON_AddStringToObject(a, "description",
						"The note (name or path)");
			cJSON_AddBoolToObject(a, "required", true);
			cJSON_AddItemToArray(args, a);
		}
		cJSON_AddItemToArray(arr, p);
	}
	cJSON *r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "prompts", arr);
	reply(s, id, r, modern, true);
}

static void handle_prompts_get(struct mcp_session *s, const cJSON *id,
			       const cJSON *params, bool modern)
{
	const char *name =
		cJSON_GetStringValue(cJSON_GetObjectItem(params, "name"));
	const struct prompt *pr = NULL;
	for (size_t i = 0; name && i < ARRAY_SIZE(PROMPTS); i++)
		if (!strcmp(PROMPTS[i].name, name))
			pr = &PROMPTS[i];
	if (!pr) {
		_cleanup_free_ char *m =
			xasprintf("Invalid params: unknown prompt %s",
				  QUOTE(name ? name : ""));
		reply_error(s, id, RPC_BAD_PARAMS, m, NULL);
		return;
	}
	const cJSON *args = cJSON_GetObjectItem(params, "arguments");
	const char *note =
		cJSON_GetStringValue(cJSON_GetObjectItem(args, "name"));
	if (pr->needs_note && (!note || !*note)) {
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: argument 'name' is required",
			    NULL);
		return;
	}
	if (pr->needs_note && strlen(note) > PATH_MAX_BYTES) {
		_cleanup_free_ char *m = xasprintf(
			"Invalid params: argument 'name' is too long (%zu "
			"bytes; the limit is %d)",
			strlen(note), PATH_MAX_BYTES);
		reply_error(s, id, RPC_BAD_PARAMS, m, NULL);
		return;
	}
	_cleanup_free_ char *text =
		xasprintf(pr->text, pr->needs_note ? note : "");
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "description", pr->description);
	cJSON *msgs = cJSON_AddArrayToObject(r, "messages");
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "user");
	cJSON *c = cJSON_AddObjectToObject(m, "content");
	cJSON_AddStringToObject(c, "type", "text");
	cJSON_AddStringToObject(c, "text", text);
	cJSON_AddItemToArray(msgs, m);
	reply(s, id, r, modern, false);
}

/* The vault names starting with prefix (any case). */
static void complete_vaults(struct mcp_session *s, const cJSON *id, bool modern,
			    const char *prefix)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *c = cJSON_AddObjectToObject(r, "completion");
	cJSON *vals = cJSON_AddArrayToObject(c, "values");
	for (size_t i = 0; i < vset_count(s->cfg.vaults); i++)
		if (!strncasecmp(vname(s, i), prefix, strlen(prefix)))
			cJSON_AddItemToArray(vals,
					     cJSON_CreateString(vname(s, i)));
	cJSON_AddNumberToObject(c, "total", cJSON_GetArraySize(vals));
	cJSON_AddBoolToObject(c, "hasMore", false);
	reply(s, id, r, modern, false);
}

static void handle_complete(struct mcp_session *s, const cJSON *id,
			    const cJSON *params, bool modern)
{
	const cJSON *ref = cJSON_GetObjectItem(params, "ref");
	const cJSON *arg = cJSON_GetObjectItem(params, "argument");
	const char *type =
		cJSON_GetStringValue(cJSON_GetObjectItem(ref, "type"));
	const char *aname =
		cJSON_GetStringValue(cJSON_GetObjectItem(arg, "name"));
	const char *value =
		cJSON_GetStringValue(cJSON_GetObjectItem(arg, "value"));
	if (!type || !aname || !value) {
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: ref.type, argument.name and "
			    "argument.value are required",
			    NULL);
		return;
	}
	bool known = false;
	if (!strcmp(type, "ref/prompt")) {
		const char *pn =
			cJSON_GetStringValue(cJSON_GetObjectItem(ref, "name"));
		for (size_t i = 0; pn && i < ARRAY_SIZE(PROMPTS); i++)
			known |= !strcmp(PROMPTS[i].name, pn);
	} else if (!strcmp(type, "ref/resource")) {
		const char *u =
			cJSON_GetStringValue(cJSON_GetObjectItem(ref, "uri"));
		known = u && (!strcmp(u, URI_PREFIX "{+path}") ||
			      (s->multi && !strcmp(u, MULTI_TEMPLATE)));
	}
	if (!known) {
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: no such prompt or resource "
			    "template (ref)",
			    NULL);
		return;
	}
	bool paths = !strcmp(type, "ref/resource");
	if (paths && s->multi && !strcmp(aname, "vault")) {
		complete_vaults(s, id, modern, value);
		return;
	}
	/* A path is completed in the vault the client chose already. */
	size_t vault = 0;
	const cJSON *ctxa = cJSON_GetObjectItem(
		cJSON_GetObjectItem(params, "context"), "arguments");
	const char *vn =
		cJSON_GetStringValue(cJSON_GetObjectItem(ctxa, "vault"));
	if (s->multi && vn && vset_find(s->cfg.vaults, vn) >= 0)
		vault = (size_t)vset_find(s->cfg.vaults, vn);
	bool note_arg =
		(!strcmp(type, "ref/prompt") && !strcmp(aname, "name")) ||
		(paths && !strcmp(aname, "path"));
	if (!note_arg) {
		cJSON *r = cJSON_CreateObject();
		cJSON *c = cJSON_AddObjectToObject(r, "completion");
		cJSON_AddArrayToObject(c, "values");
		cJSON_AddNumberToObject(c, "total", 0);
		cJSON_AddBoolToObject(c, "hasMore", false);
		reply(s, id, r, modern, false);
		return;
	}
	cJSON *dp = cJSON_CreateObject();
	cJSON_AddStringToObject(dp, "prefix", value);
	cJSON_AddBoolToObject(dp, "paths", paths);
	cJSON_AddNumberToObject(dp, "limit", 100);
	long did = to_daemon(s, vault, "notes/complete", dp);
	pending_add(s, vault, did, P_COMPLETE, id, modern);
}

static void finish_complete(struct mcp_session *s, struct pending *p,
			    const cJSON *dres)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *c = cJSON_AddObjectToObject(r, "completion");
	cJSON *vals = cJSON_Duplicate(cJSON_GetObjectItem(dres, "values"), 1);
	double total = cJSON_GetNumberValue(cJSON_GetObjectItem(dres, "total"));
	cJSON_AddItemToObject(c, "values", vals ? vals : cJSON_CreateArray());
	cJSON_AddNumberToObject(c, "total", total);
	cJSON_AddBoolToObject(c, "hasMore", total > cJSON_GetArraySize(vals));
	reply(s, p->id, r, p->modern, false);
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
		reply_error(s, id, RPC_INVALID_REQUEST,
			    "Invalid Request: the session is initialized "
			    "already (once per session)",
			    NULL);
		return;
	}
	const char *want = cJSON_GetStringValue(
		cJSON_GetObjectItem(params, "protocolVersion"));
	if (!want) {
		reply_error(s, id, RPC_BAD_PARAMS,
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
	reply(s, id, r, false, false);
}

static void handle_discover(struct mcp_session *s, const cJSON *id)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "supportedVersions", supported_versions());
	cJSON_AddItemToObject(r, "capabilities", capabilities(s, true));
	add_instructions(s, r);
	reply(s, id, r, true, true);
}

static void handle_set_level(struct mcp_session *s, const cJSON *id,
			     const cJSON *params)
{
	const char *lvl =
		cJSON_GetStringValue(cJSON_GetObjectItem(params, "level"));
	for (int i = 0; lvl && LOG_LEVELS[i]; i++) {
		if (!strcmp(LOG_LEVELS[i], lvl)) {
			s->log_level = i;
			reply(s, id, cJSON_CreateObject(), false, false);
			return;
		}
	}
	reply_error(s, id, RPC_BAD_PARAMS,
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
	notify(s, "notifications/subscriptions/acknowledged", p);
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
		reply(s, l->id, r, true, false);
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
		reply_error(s, id, RPC_BAD_PARAMS,
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
		reply_error(s, id, RPC_INVALID_REQUEST, m, NULL);
		return false;
	}
	if (strcmp(v->valuestring, MODERN_VERSION) != 0) {
		cJSON *data = cJSON_CreateObject();
		cJSON_AddItemToObject(data, "supported", supported_versions());
		if (strlen(v->valuestring) <= QUOTE_MAX)
			cJSON_AddStringToObject(data, "requested",
						v->valuestring);
		reply_error(s, id, -32022, "Unsupported protocol version",
			    data);
		return false;
	}
	if (!cJSON_IsObject(cJSON_GetObjectItem(meta, META_CAPS))) {
		reply_error(s, id, RPC_BAD_PARAMS,
			    "Invalid params: _meta." META_CAPS " is required",
			    NULL);
		return false;
	}
	const cJSON *lvl = cJSON_GetObjectItem(meta, META_LOGLEVEL);
	if (lvl) {
		bool ok = false;
		for (int i = 0; cJSON_IsString(lvl) && LOG_LEVELS[i]; i++)
			ok |= !strcmp(LOG_LEVELS[i], lvl->valuestring);
		if (!ok) {
			reply_error(s, id, RPC_BAD_PARAMS,
				    "Invalid params: unknown log level", NULL);
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
	handle_templates(s, id, modern);
}

static void m_prompts_list(struct mcp_session *s, const cJSON *id,
			   const cJSON *params, bool modern)
{
	(void)params;
	handle_prompts_list(s, id, modern);
}

static void m_subscribe(struct mcp_session *s, const cJSON *id,
			const cJSON *params, bool modern)
{
	(void)modern;
	handle_subscribe(s, id, params, true);
}

static void m_unsubscribe(struct mcp_session *s, const cJSON *id,
			  const cJSON *params, bool modern)
{
	(void)modern;
	handle_subscribe(s, id, params, false);
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
	reply(s, id, cJSON_CreateObject(), false, false);
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
	{"tools/list", handle_tools_list, ERA_SESSION | ERA_MODERN},
	{"tools/call", handle_tools_call, ERA_SESSION | ERA_MODERN},
	{"resources/list", handle_resources_list, ERA_SESSION | ERA_MODERN},
	{"resources/read", handle_resources_read, ERA_SESSION | ERA_MODERN},
	{"resources/templates/list", m_templates, ERA_SESSION | ERA_MODERN},
	{"resources/subscribe", m_subscribe, ERA_SESSION},
	{"resources/unsubscribe", m_unsubscribe, ERA_SESSION},
	{"prompts/list", m_prompts_list, ERA_SESSION | ERA_MODERN},
	{"prompts/get", handle_prompts_get, ERA_SESSION | ERA_MODERN},
	{"completion/complete", handle_complete, ERA_SESSION | ERA_MODERN},
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
			reply_error(s, id, RPC_METHOD_NOT_FOUND, msg, NULL);
		}
		return;
	}
	if (m && (m->eras & ERA_PREINIT)) {
		m->run(s, id, params, false);
		return;
	}
	if (!s->initialized) {
		reply_error(s, id, RPC_INVALID_REQUEST,
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
		reply_error(s, id, RPC_METHOD_NOT_FOUND, msg, NULL);
	}
}

static void input_one(struct mcp_session *s, const char *line, size_t len,
		      bool in_batch);

/* A JSON-RPC batch: 2025-03-26 requires servers to take them; the other
 * versions have none. */
static void input_batch(struct mcp_session *s, const cJSON *arr)
{
	if (!s->initialized || strcmp(LEGACY[s->version], "2025-03-26") != 0) {
		reply_error(s, NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: batches are taken only in a "
			    "session of protocol version 2025-03-26",
			    NULL);
		return;
	}
	if (!cJSON_GetArraySize(arr)) {
		reply_error(s, NULL, RPC_INVALID_REQUEST,
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
		reply_error(s, m.id, RPC_INVALID_REQUEST,
			    "Invalid Request: initialize cannot be part of a "
			    "batch",
			    NULL);
	} else if (code) {
		reply_error(s, m.id, code, why, NULL);
	} else if (m.method) {
		if (m.params && !cJSON_IsObject(m.params))
			reply_error(s, m.id, RPC_BAD_PARAMS,
				    "Invalid params: params must be an object",
				    NULL);
		else if (s->shutting_down && m.id)
			reply_error(s, m.id, RPC_INVALID_REQUEST,
				    "Invalid Request: shutting down", NULL);
		else
			dispatch(s, m.method, m.id, m.params);
	}
	/* Responses from the client are not expected: vault-mcp sends no
	 * requests. They are ignored. */
	rpc_msg_clear(&m);
}

/* ---- from the daemon
 * ------------------------------------------------------------------ */

/* A first tool result waits for the context block; true when held (p
 * is kept, in order). */
static bool hold(struct mcp_session *s, struct pending *p, const cJSON *res)
{
	if (contexts_ready(s) || s->context_injected ||
	    cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")))
		return false;
	p->held = cJSON_Duplicate(res, 1);
	p->next = s->pending;
	s->pending = p;
	if (!s->held_since)
		s->held_since = now_ns();
	return true;
}

static void flush_held(struct mcp_session *s)
{
	s->held_since = 0;
	/* Oldest first: the list is newest first. */
	struct ptrvec held = {0};
	for (struct pending **pp = &s->pending; *pp;) {
		struct pending *p = *pp;
		if (p->held) {
			*pp = p->next;
			pv_push(&held, p);
		} else {
			pp = &p->next;
		}
	}
	for (size_t i = held.n; i-- > 0;) {
		struct pending *p = held.v[i];
		if (!p->cancelled)
			finish_tool(s, p, p->held);
		pending_free(p);
	}
	pv_free(&held);
}

static void log_event(struct mcp_session *s, const cJSON *ev)
{
	/* "info" and below are sent once the client asked for a level. */
	if (s->log_level < 0 || s->log_level > 1 || !s->initialized)
		return;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "level", "info");
	cJSON_AddStringToObject(p, "logger", "vaultd");
	cJSON_AddItemToObject(p, "data", cJSON_Duplicate(ev, 1));
	notify(s, "notifications/message", p);
}

static void resource_updated(struct mcp_session *s, size_t vault,
			     const char *path)
{
	_cleanup_free_ char *uri = uri_of(s, vault, path);
	if (s->initialized && uri_in(s->subscribed, uri)) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "uri", uri);
		notify(s, "notifications/resources/updated", p);
	}
	for (struct listen *l = s->listens; l; l = l->next) {
		if (!uri_in(l->uris, uri))
			continue;
		cJSON *p = cJSON_CreateObject();
		cJSON *meta = cJSON_AddObjectToObject(p, "_meta");
		cJSON_AddItemToObject(meta, META_SUBID,
				      cJSON_Duplicate(l->id, 1));
		cJSON_AddStringToObject(p, "uri", uri);
		notify(s, "notifications/resources/updated", p);
	}
}

static void list_changed(struct mcp_session *s)
{
	if (s->initialized)
		notify(s, "notifications/resources/list_changed", NULL);
	for (struct listen *l = s->listens; l; l = l->next) {
		if (!l->resources)
			continue;
		cJSON *p = cJSON_CreateObject();
		cJSON *meta = cJSON_AddObjectToObject(p, "_meta");
		cJSON_AddItemToObject(meta, META_SUBID,
				      cJSON_Duplicate(l->id, 1));
		notify(s, "notifications/resources/list_changed", p);
	}
}

static void on_event(struct mcp_session *s, size_t vault, const cJSON *ev)
{
	const char *type =
		cJSON_GetStringValue(cJSON_GetObjectItem(ev, "type"));
	const char *path =
		cJSON_GetStringValue(cJSON_GetObjectItem(ev, "path"));
	const char *old =
		cJSON_GetStringValue(cJSON_GetObjectItem(ev, "old_path"));
	if (!type || !path)
		return;
	log_event(s, ev);
	resource_updated(s, vault, path);
	if (old)
		resource_updated(s, vault, old);
	if (strcmp(type, "changed") != 0)
		list_changed(s);
}

static void send_progress(struct mcp_session *s, struct pending *p,
			  double progress, double total, const char *msg)
{
	p->last_progress = now_ns();
	cJSON *n = cJSON_CreateObject();
	cJSON_AddItemToObject(n, "progressToken",
			      cJSON_Duplicate(p->progress_token, 1));
	cJSON_AddNumberToObject(n, "progress", progress);
	if (total > 0)
		cJSON_AddNumberToObject(n, "total", total);
	if (!p->modern && p->version <= 2)
		cJSON_AddStringToObject(n, "message", msg);
	notify(s, "notifications/progress", n);
}

/* vaultd's progress on a call: {"id", "done", "total", "message"}. */
static void on_progress(struct mcp_session *s, const cJSON *params)
{
	const cJSON *id = cJSON_GetObjectItem(params, "id");
	if (!cJSON_IsNumber(id))
		return;
	struct pending *p = s->pending;
	while (p && p->did != (long)id->valuedouble)
		p = p->next;
	if (!p || !p->progress_token || p->cancelled || p->held)
		return;
	double done = cJSON_GetNumberValue(cJSON_GetObjectItem(params, "done"));
	double total =
		cJSON_GetNumberValue(cJSON_GetObjectItem(params, "total"));
	const char *msg =
		cJSON_GetStringValue(cJSON_GetObjectItem(params, "message"));
	p->daemon_progress = true;
	/* Progress must grow with every notification. */
	if (isnan(done) || done <= p->progress_sent)
		return;
	p->progress_sent = done;
	send_progress(s, p, done, isnan(total) ? 0 : total,
		      msg ? msg : "working");
}

void mcp_session_daemon_msg(struct mcp_session *s, size_t vault,
			    const struct rpc_msg *m)
{
	if (m->method) {
		if (!strcmp(m->method, "event"))
			on_event(s, vault, m->params);
		else if (!strcmp(m->method, "progress"))
			on_progress(s, m->params);
		return;
	}
	if (!cJSON_IsNumber(m->id))
		return;
	struct pending *p = pending_take(s, vault, (long)m->id->valuedouble);
	if (!p)
		return;
	if (p->kind == P_CONTEXT) {
		const char *b = cJSON_GetStringValue(
			cJSON_GetObjectItem(m->result, "block"));
		struct vctx *c = vctx(s, vault);
		free(c->block);
		c->block = b ? xstrdup(b) : NULL;
		c->ready = true;
		pending_free(p);
		if (contexts_ready(s))
			flush_held(s);
		return;
	}
	if (p->kind == P_JOB) {
		const char *msg = cJSON_GetStringValue(
			cJSON_GetObjectItem(m->error, "message"));
		job_answer(s, p, m->error ? NULL : m->result,
			   m->error ? (msg ? msg : "vaultd error") : NULL);
		return;
	}
	if (p->kind == P_INTERNAL || p->cancelled) {
		pending_free(p);
		return;
	}
	if (m->error && p->kind != P_READ && p->kind != P_SUBSCRIBE) {
		const char *msg = cJSON_GetStringValue(
			cJSON_GetObjectItem(m->error, "message"));
		reply_error(s, p->id, RPC_INTERNAL, msg ? msg : "vaultd error",
			    NULL);
		pending_free(p);
		return;
	}
	switch (p->kind) {
	case P_TOOL:
		if (hold(s, p, m->result))
			return;
		finish_tool(s, p, m->result);
		break;
	case P_READ:
		finish_read(s, p, m->result, m->error);
		break;
	case P_LIST:
		finish_list(s, p, m->result);
		break;
	case P_COMPLETE:
		finish_complete(s, p, m->result);
		break;
	case P_SUBSCRIBE:
		finish_subscribe(s, p, m->error);
		break;
	default:
		break;
	}
	pending_free(p);
}

void mcp_session_daemon_lost(struct mcp_session *s, size_t vault,
			     const char *why)
{
	_cleanup_free_ char *m =
		why ? xasprintf("vault %s: %s; try again", vname(s, vault), why)
		    : xstrdup("vaultd stopped while answering; try again");
	struct ptrvec lost = {0};
	for (struct pending **pp = &s->pending; *pp;) {
		struct pending *p = *pp;
		if (p->vault != vault || p->held) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		p->next = NULL;
		pv_push(&lost, p);
	}
	/* Oldest first, as they were asked. */
	for (size_t i = lost.n; i-- > 0;) {
		struct pending *p = lost.v[i];
		if (p->kind == P_JOB) {
			job_answer(s, p, NULL, m);
			continue;
		}
		if (p->id && !p->cancelled)
			reply_error(s, p->id, RPC_INTERNAL, m, NULL);
		if (p->kind == P_CONTEXT)
			vctx(s, vault)->ready = true; /* go on without it */
		pending_free(p);
	}
	pv_free(&lost);
	if (contexts_ready(s))
		flush_held(s);
}

void mcp_session_tick(struct mcp_session *s)
{
	uint64_t now = now_ns();
	/* list_vaults answers without a vaultd that does not answer. */
	for (struct pending *p = s->pending; p; p = p->next)
		if (p->kind == P_JOB && p->job->kind == J_LIST &&
		    !p->job->finished &&
		    now - p->started >= LIST_WAIT_MS * 1000000ull)
			job_reply(s, p->job, NULL);
	/* Several vaults: a slow one does not hold the first result. */
	if (s->multi && s->held_since &&
	    now - s->held_since >= CONTEXT_WAIT_MS * 1000000ull) {
		for (size_t i = 0; i < s->nctx; i++)
			s->ctx[i].ready = true;
		flush_held(s);
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
		send_progress(s, p, p->progress_sent, 0, msg);
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
	struct vctx *c = vctx(s, vault);
	long did = to_daemon(s, vault, "context", NULL);
	if (did >= 0) {
		pending_add(s, vault, did, P_CONTEXT, NULL, false);
		c->asked = true;
		c->ready = false;
	}
	did = to_daemon(s, vault, "subscribe", NULL);
	if (did >= 0)
		pending_add(s, vault, did, P_INTERNAL, NULL, false);
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
		vctx(s, i)->asked = true;
	if (s->multi)
		add_vault_tools(s);
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
			job_free(p->job);
		pending_free(p);
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
