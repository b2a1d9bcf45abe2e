/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Prompts and completion: the prompts this server offers, prompts/get,
 * and completion/complete of prompt arguments and resource templates
 * (note names from vaultd, vault names from the vault set).
 */
#include "mcp_int.h"

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

void mcp_handle_prompts_list(struct mcp_session *s, const cJSON *id,
			     bool modern)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < ARRAY_SIZE(PROMPTS); i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "name", PROMPTS[i].name);
		if (mcp_has_structured(modern, s->version))
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
	mcp_reply(s, id, r, modern, true);
}

void mcp_handle_prompts_get(struct mcp_session *s, const cJSON *id,
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
		mcp_reply_error(s, id, RPC_BAD_PARAMS, m, NULL);
		return;
	}
	const cJSON *args = cJSON_GetObjectItem(params, "arguments");
	const char *note =
		cJSON_GetStringValue(cJSON_GetObjectItem(args, "name"));
	if (pr->needs_note && (!note || !*note)) {
		mcp_reply_error(s, id, RPC_BAD_PARAMS,
				"Invalid params: argument 'name' is required",
				NULL);
		return;
	}
	if (pr->needs_note && strlen(note) > PATH_MAX_BYTES) {
		_cleanup_free_ char *m = xasprintf(
			"Invalid params: argument 'name' is too long (%zu "
			"bytes; the limit is %d)",
			strlen(note), PATH_MAX_BYTES);
		mcp_reply_error(s, id, RPC_BAD_PARAMS, m, NULL);
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
	mcp_reply(s, id, r, modern, false);
}

/* The vault names starting with prefix (any case). */
static void complete_vaults(struct mcp_session *s, const cJSON *id, bool modern,
			    const char *prefix)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *c = cJSON_AddObjectToObject(r, "completion");
	cJSON *vals = cJSON_AddArrayToObject(c, "values");
	for (size_t i = 0; i < vset_count(s->cfg.vaults); i++)
		if (!strncasecmp(mcp_vname(s, i), prefix, strlen(prefix)))
			cJSON_AddItemToArray(
				vals, cJSON_CreateString(mcp_vname(s, i)));
	cJSON_AddNumberToObject(c, "total", cJSON_GetArraySize(vals));
	cJSON_AddBoolToObject(c, "hasMore", false);
	mcp_reply(s, id, r, modern, false);
}

void mcp_handle_complete(struct mcp_session *s, const cJSON *id,
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
		mcp_reply_error(s, id, RPC_BAD_PARAMS,
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
		mcp_reply_error(s, id, RPC_BAD_PARAMS,
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
		mcp_reply(s, id, r, modern, false);
		return;
	}
	cJSON *dp = cJSON_CreateObject();
	cJSON_AddStringToObject(dp, "prefix", value);
	cJSON_AddBoolToObject(dp, "paths", paths);
	cJSON_AddNumberToObject(dp, "limit", 100);
	long did = mcp_to_daemon(s, vault, "notes/complete", dp);
	mcp_pending_add(s, vault, did, P_COMPLETE, id, modern);
}

void mcp_finish_complete(struct mcp_session *s, struct pending *p,
			 const cJSON *dres)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *c = cJSON_AddObjectToObject(r, "completion");
	cJSON *vals = cJSON_Duplicate(cJSON_GetObjectItem(dres, "values"), 1);
	double total = cJSON_GetNumberValue(cJSON_GetObjectItem(dres, "total"));
	cJSON_AddItemToObject(c, "values", vals ? vals : cJSON_CreateArray());
	cJSON_AddNumberToObject(c, "total", total);
	cJSON_AddBoolToObject(c, "hasMore", total > cJSON_GetArraySize(vals));
	mcp_reply(s, p->id, r, p->modern, false);
}
