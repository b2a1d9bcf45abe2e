/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tools/list and tools/call: which tools a session shows (read-only,
 * --tools, several vaults), the vault a call goes to, and the shaping of
 * a tool's result: cut to the longest the client takes, with a hint on
 * how to ask for the rest, and the auto-context injected into the first
 * result.
 */
#include "mcp_int.h"
#include "context.h"

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
bool mcp_has_structured(bool modern, int version)
{
	return modern || version <= 1;
}

void mcp_handle_tools_list(struct mcp_session *s, const cJSON *id,
			   const cJSON *params, bool modern)
{
	const cJSON *cursor = cJSON_GetObjectItem(params, "cursor");
	if (cursor && !(cJSON_IsString(cursor) && !*cursor->valuestring)) {
		/* Every tool fits on one page; no cursor is ever issued. */
		mcp_reply_error(s, id, RPC_BAD_PARAMS,
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
		if (!mcp_has_structured(modern, s->version))
			cJSON_DeleteItemFromObject(c, "outputSchema");
		if (!modern && s->version >= 3)
			cJSON_DeleteItemFromObject(c, "annotations");
		cJSON_AddItemToArray(arr, c);
	}
	cJSON *r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "tools", arr);
	mcp_reply(s, id, r, modern, true);
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
void mcp_block_cut(struct sbuf *b, const char *block, size_t max)
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
		  n, n == 1 ? "" : "s", mcp_vname(s, 0));
	for (size_t i = 0; i < n && b.len < CONTEXT_MAX / 4; i++)
		sb_printf(&b, "- %s%s%s: %s\n", mcp_vname(s, i),
			  i ? "" : " (default)",
			  vset_read_only(vs, i) ? " (read-only)" : "",
			  vset_path(vs, i));
	size_t share = (CONTEXT_MAX - b.len) / (n ? n : 1);
	for (size_t i = 0; i < n; i++) {
		const struct vctx *c = i < s->nctx ? &s->ctx[i] : NULL;
		sb_printf(&b, "\n# Vault \"%s\"\n\n", mcp_vname(s, i));
		if (c && c->block) {
			mcp_block_cut(&b, c->block,
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
			   mcp_has_structured(p->modern, p->version)) {
			cJSON *l = cJSON_Duplicate(b, 1);
			cJSON_DeleteItemFromObject(l, "path");
			_cleanup_free_ char *uri =
				mcp_uri_of(s, p->vault, path);
			cJSON_AddStringToObject(l, "uri", uri);
			cJSON_AddItemToArray(content, l);
		}
	}
}

/*
 * The structured result of vaultd's answer dres: its own copy, or (when
 * vaultd sent it as the text alone, text_is_structured) that text parsed
 * when it is to be changed here (cut to size, or named by vault), else
 * left as text in *ret_raw, to be passed on as it is.
 */
static cJSON *structured_of(struct mcp_session *s, const cJSON *dres,
			    const char **ret_raw)
{
	*ret_raw = NULL;
	const cJSON *st = cJSON_GetObjectItem(dres, "structured");
	const cJSON *txt = cJSON_GetObjectItem(dres, "text");
	if (st || !cJSON_IsString(txt) ||
	    !cJSON_IsTrue(cJSON_GetObjectItem(dres, "text_is_structured")))
		return cJSON_Duplicate(st, 1);
	if (s->multi || strlen(txt->valuestring) > s->cfg.max_result)
		return cJSON_Parse(txt->valuestring);
	*ret_raw = txt->valuestring;
	return NULL;
}

void mcp_finish_tool(struct mcp_session *s, struct pending *p,
		     const cJSON *dres)
{
	const cJSON *txt = cJSON_GetObjectItem(dres, "text");
	bool is_error = cJSON_IsTrue(cJSON_GetObjectItem(dres, "isError"));
	char *text = xstrdup(cJSON_IsString(txt) ? txt->valuestring : "");
	const char *raw;
	cJSON *structured = structured_of(s, dres, &raw);
	/* What a text is (a part of a note), apart from it; a text cut
	 * here says where to read on instead. */
	const char *info =
		cJSON_GetStringValue(cJSON_GetObjectItem(dres, "info"));
	if (!is_error && s->multi && !strcmp(p->name, "get_help"))
		mcp_help_add_vault_tools(&text, structured);
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
			xasprintf("[Vault: %s]", mcp_vname(s, p->vault));
		text_block(content, v);
		if (cJSON_IsObject(structured))
			cJSON_AddStringToObject(structured, "vault",
						mcp_vname(s, p->vault));
	}
	if (structured && !is_error &&
	    mcp_has_structured(p->modern, p->version))
		cJSON_AddItemToObject(r, "structuredContent",
				      TAKE_PTR(structured));
	else if (raw && !is_error && mcp_has_structured(p->modern, p->version))
		cJSON_AddItemToObject(r, "structuredContent",
				      cJSON_CreateRaw(raw));
	if (is_error)
		cJSON_AddBoolToObject(r, "isError", true);
	cJSON_Delete(structured);
	free(text);
	mcp_reply(s, p->id, r, p->modern, false);
}

/* A tool's failure, as a result. */
static void tool_error(struct mcp_session *s, const cJSON *id, bool modern,
		       const char *msg)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *content = cJSON_AddArrayToObject(r, "content");
	text_block(content, msg);
	cJSON_AddBoolToObject(r, "isError", true);
	mcp_reply(s, id, r, modern, false);
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

void mcp_handle_tools_call(struct mcp_session *s, const cJSON *id,
			   const cJSON *params, bool modern)
{
	const cJSON *name = cJSON_GetObjectItem(params, "name");
	const cJSON *args = cJSON_GetObjectItem(params, "arguments");
	if (!cJSON_IsString(name)) {
		mcp_reply_error(
			s, id, RPC_BAD_PARAMS,
			"Invalid params: \"name\" must be the tool's name",
			NULL);
		return;
	}
	if (args && !cJSON_IsObject(args)) {
		mcp_reply_error(
			s, id, RPC_BAD_PARAMS,
			"Invalid params: \"arguments\" must be an object",
			NULL);
		return;
	}
	const cJSON *t = find_tool(s, name->valuestring);
	if (!t) {
		_cleanup_free_ char *m =
			xasprintf("Unknown tool: %s", QUOTE(name->valuestring));
		mcp_reply_error(s, id, RPC_BAD_PARAMS, m, NULL);
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
		mcp_local_tool(s, id, modern, name->valuestring, fargs, vault);
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
			QUOTE(mcp_vname(s, vault)), QUOTE(name->valuestring));
		tool_error(s, id, modern, m);
		cJSON_Delete(fargs);
		return;
	}
	cJSON *dp = cJSON_CreateObject();
	cJSON_AddStringToObject(dp, "name", name->valuestring);
	cJSON_AddItemToObject(dp, "arguments", fargs);
	cJSON_AddStringToObject(dp, "source", "mcp");
	cJSON_AddStringToObject(dp, "session", s->id);
	/* A JSON result comes once, as the text (mcp_finish_tool). */
	cJSON_AddTrueToObject(dp, "lean");
	const cJSON *meta = cJSON_GetObjectItem(params, "_meta");
	const cJSON *tok = cJSON_GetObjectItem(meta, "progressToken");
	bool want_progress = cJSON_IsString(tok) || cJSON_IsNumber(tok);
	/* vaultd then reports a long wait (a search index being built). */
	if (want_progress)
		cJSON_AddBoolToObject(dp, "progress", true);
	long did = mcp_to_daemon(s, vault, "tools/call", dp);
	if (did < 0) {
		mcp_reply_error(s, id, RPC_INTERNAL,
				"vaultd is not reachable; try again", NULL);
		return;
	}
	struct pending *p = mcp_pending_add(s, vault, did, P_TOOL, id, modern);
	p->name = xstrdup(name->valuestring);
	const cJSON *off = cJSON_GetObjectItemCaseSensitive(args, "offset");
	if (cJSON_IsNumber(off))
		p->offset = (long)off->valuedouble;
	if (want_progress)
		p->progress_token = cJSON_Duplicate(tok, 1);
}
