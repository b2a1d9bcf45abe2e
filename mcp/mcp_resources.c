/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Resources: a note as vault:///<path> (vault://<name>/<path> with several
 * vaults), the paged resources/list over every vault, resources/read,
 * the URI templates, and the legacy resources/subscribe.
 */
#include "mcp_int.h"

/* ---- resources
 * ------------------------------------------------------------------ */

/* vault:///<path>; several vaults: vault://<name>/<path>. */
char *mcp_uri_of(const struct mcp_session *s, size_t vault, const char *path)
{
	_cleanup_free_ char *enc = url_encode_path(path, true);
	/* '%' escapes everything a URI cannot hold raw; UTF-8 stays as is. */
	if (s->multi)
		return xasprintf(URI_SCHEME "%s/%s", mcp_vname(s, vault), enc);
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

void mcp_handle_resources_list(struct mcp_session *s, const cJSON *id,
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
			mcp_reply_error(s, id, RPC_BAD_PARAMS, m, NULL);
			return;
		}
	} else if (cursor && !cJSON_IsString(cursor)) {
		mcp_reply_error(s, id, RPC_BAD_PARAMS,
				"Invalid params: cursor must be a string",
				NULL);
		return;
	}
	size_t vault = offset >> PAGE_VAULT_SHIFT;
	offset &= ((size_t)1 << PAGE_VAULT_SHIFT) - 1;
	if (vault >= vset_count(s->cfg.vaults)) {
		mcp_reply_error(s, id, RPC_BAD_PARAMS,
				"Invalid params: unknown cursor", NULL);
		return;
	}
	cJSON *dp = cJSON_CreateObject();
	cJSON_AddNumberToObject(dp, "offset", (double)offset);
	cJSON_AddNumberToObject(dp, "limit", RESOURCE_PAGE);
	long did = mcp_to_daemon(s, vault, "notes/list", dp);
	struct pending *p = mcp_pending_add(s, vault, did, P_LIST, id, modern);
	p->offset = (long)offset;
}

void mcp_finish_list(struct mcp_session *s, struct pending *p,
		     const cJSON *dres)
{
	cJSON *arr = cJSON_CreateArray();
	const cJSON *n;
	cJSON_ArrayForEach(n, cJSON_GetObjectItem(dres, "notes"))
	{
		const char *path =
			cJSON_GetStringValue(cJSON_GetObjectItem(n, "path"));
		cJSON *r = cJSON_CreateObject();
		_cleanup_free_ char *uri = mcp_uri_of(s, p->vault, path);
		cJSON_AddStringToObject(r, "uri", uri);
		cJSON_AddStringToObject(
			r, "name",
			cJSON_GetStringValue(cJSON_GetObjectItem(n, "name")));
		if (mcp_has_structured(p->modern, p->version) && s->multi) {
			_cleanup_free_ char *t = xasprintf(
				"%s: %s", mcp_vname(s, p->vault), path);
			cJSON_AddStringToObject(r, "title", t);
		} else if (mcp_has_structured(p->modern, p->version)) {
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
	mcp_reply(s, p->id, r, p->modern, true);
}

/* A URI that names no note of this vault. */
static void not_a_note_uri(struct mcp_session *s, const cJSON *id, int code,
			   const char *uri)
{
	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "uri", uri);
	mcp_reply_error(
		s, id, code,
		s->multi ? "Resource not found: vault-mcp serves "
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
	long did = mcp_to_daemon(s, vault, "notes/read", dp);
	struct pending *p = mcp_pending_add(s, vault, did, kind, id, modern);
	p->name = xstrdup(uri);
}

/* The request's "uri", or NULL when it is not a string (answered). */
static const cJSON *uri_param(struct mcp_session *s, const cJSON *id,
			      const cJSON *params)
{
	const cJSON *uri = cJSON_GetObjectItem(params, "uri");
	if (cJSON_IsString(uri))
		return uri;
	mcp_reply_error(s, id, RPC_BAD_PARAMS,
			"Invalid params: \"uri\" must be a string", NULL);
	return NULL;
}

void mcp_handle_resources_read(struct mcp_session *s, const cJSON *id,
			       const cJSON *params, bool modern)
{
	const cJSON *uri = uri_param(s, id, params);
	if (!uri)
		return;
	/* A note's path, percent-encoded (each byte at most 3). */
	size_t ul = strlen(uri->valuestring);
	if (ul > uri_max(s)) {
		_cleanup_free_ char *m = xasprintf(
			"Invalid params: uri too long (%zu bytes; the limit "
			"is %zu)",
			ul, uri_max(s));
		mcp_reply_error(s, id, RPC_BAD_PARAMS, m, NULL);
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

void mcp_finish_subscribe(struct mcp_session *s, struct pending *p,
			  const cJSON *derr)
{
	if (derr) {
		cJSON *data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "uri", p->name);
		mcp_reply_error(s, p->id, -32002, "Resource not found", data);
		return;
	}
	if (!mcp_uri_in(s->subscribed, p->name))
		cJSON_AddItemToArray(s->subscribed,
				     cJSON_CreateString(p->name));
	mcp_reply(s, p->id, cJSON_CreateObject(), false, false);
}

void mcp_finish_read(struct mcp_session *s, struct pending *p,
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
		mcp_reply_error(s, p->id,
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
		mcp_reply(s, p->id, r, p->modern, true);
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
	mcp_reply(s, p->id, r, p->modern, true);
}

void mcp_handle_templates(struct mcp_session *s, const cJSON *id, bool modern)
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
	mcp_reply(s, id, r, modern, true);
}

bool mcp_uri_in(const cJSON *list, const char *uri)
{
	const cJSON *it;
	cJSON_ArrayForEach(it,
			   list) if (cJSON_IsString(it) &&
				     !strcmp(it->valuestring, uri)) return true;
	return false;
}

void mcp_handle_subscribe(struct mcp_session *s, const cJSON *id,
			  const cJSON *params, bool sub)
{
	const cJSON *uri = uri_param(s, id, params);
	if (!uri)
		return;
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
	mcp_reply(s, id, cJSON_CreateObject(), false, false);
}
