/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Several vaults: the tools answered here rather than by one vaultd
 * (list_vaults, load_vault, copy_note, move_note) and how tools/list and
 * get_help name them. Each is a job of steps, every step a request to
 * some vault's vaultd, answered once its last step is in.
 */
#include "mcp_int.h"
#include "params.h"

/* ---- several vaults: the tools answered here
 * ---------------------------------------------------- */

/* One of them: its parameters described as vaultd's tools' are (their
 * input schema, get_help's lines and the argument checks are made from
 * them), its output schema and annotations as JSON text. */
struct vault_tool {
	const char *name;
	const char *description;
	const struct tool_param *params; /* NULL: none */
	const char *output_schema;
	const char *annotations; /* NULL: none */
};

static const struct tool_param LOAD_VAULT_PARAMS[] = {
	{.name = "vault_path",
	 .type = P_STR,
	 .required = true,
	 .doc = "absolute path of the vault's folder (with .obsidian/ in "
		"it), under a folder vault-mcp --allow-root names"},
	{.name = "name",
	 .type = P_STR,
	 .doc = "its short name (letters, digits, _ - .), what the vault "
		"argument then takes (default: the folder's name)"},
	{0},
};

/* copy_note's and move_note's; verb: what the note's trip is. */
#define CROSS_VAULT_PARAMS(verb)                                                    \
	{                                                                           \
		{.name = "name",                                                    \
		 .type = P_STR,                                                     \
		 .required = true,                                                  \
		 .doc = "the note (name or path) in the vault it is in"},           \
			{.name = "to_vault",                                        \
			 .type = P_STR,                                             \
			 .required = true,                                          \
			 .doc = "the vault to " verb " it to (a name from "         \
				"list_vaults)"},                                    \
			{.name = "vault",                                           \
			 .type = P_STR,                                             \
			 .doc = "the vault the note is in (default: the first)"},   \
			{.name = "new_name",                                        \
			 .type = P_STR,                                             \
			 .doc = "its name or path there (default: the same path)"}, \
			{.name = "overwrite",                                       \
			 .type = P_BOOL,                                            \
			 .doc = "true replaces a note of that name there"},         \
			{0},                                                        \
	}
static const struct tool_param COPY_NOTE_PARAMS[] = CROSS_VAULT_PARAMS("copy");
static const struct tool_param MOVE_NOTE_PARAMS[] = CROSS_VAULT_PARAMS("move");

#define CROSS_VAULT_OUTPUT                                                  \
	"{\"type\":\"object\",\"properties\":{"                             \
	"\"status\":{\"type\":\"string\"},\"from_vault\":{\"type\":"        \
	"\"string\"},\"to_vault\":{\"type\":\"string\"},\"source\":{"       \
	"\"type\":\"string\"},\"target\":{\"type\":\"string\"},\"moved\":{" \
	"\"type\":\"boolean\"}},\"required\":[\"status\",\"from_vault\","   \
	"\"to_vault\",\"source\",\"target\",\"moved\"]}"

/* `vault` is added to every other tool (mcp_add_vault_tools). */
static const struct vault_tool VAULT_TOOLS[] = {
	{
		.name = "list_vaults",
		.description =
			"The vaults this server works on: each one's name "
			"(what the vault argument of every tool takes), "
			"folder, number of notes (while it is indexed: "
			"indexing and the notes it is indexing), whether its "
			"vaultd is running and whether it is read-only. The "
			"first is the default.",
		.output_schema =
			"{\"type\":\"object\",\"properties\":{\"vaults\":{"
			"\"type\":\"array\",\"items\":{\"type\":\"object\","
			"\"properties\":{"
			"\"name\":{\"type\":\"string\"},\"path\":{\"type\":"
			"\"string\"},\"default\":{\"type\":\"boolean\"},"
			"\"notes\":{\"type\":[\"integer\",\"null\"]},"
			"\"running\":{\"type\":\"boolean\"},"
			"\"read_only\":{\"type\":\"boolean\"},"
			"\"indexing\":{\"type\":\"boolean\"}}}}},"
			"\"required\":[\"vaults\"]}",
		.annotations = "{\"readOnlyHint\":true}",
	},
	{
		.name = "load_vault",
		.description =
			"Load the Obsidian vault in a folder (absolute path, "
			"with .obsidian/ in it) and wait until it is indexed; "
			"its name then works as the vault argument of every "
			"tool. Only folders under those the user allowed "
			"(vault-mcp --allow-root) can be loaded. Loading a "
			"loaded vault answers the same.",
		.params = LOAD_VAULT_PARAMS,
		.output_schema =
			"{\"type\":\"object\",\"properties\":{"
			"\"status\":{\"type\":\"string\"},\"note_count\":{"
			"\"type\":\"integer\"},\"vault_path\":{\"type\":"
			"\"string\"},\"name\":{\"type\":\"string\"},"
			"\"read_only\":{\"type\":\"boolean\"}},"
			"\"required\":[\"status\",\"note_count\","
			"\"vault_path\",\"name\"]}",
		.annotations = "{\"readOnlyHint\":true}",
	},
	{
		.name = "copy_note",
		.description =
			"Copy a note (its whole text, frontmatter included) "
			"into another vault. The other vault's policy judges "
			"it like any new note: a tag it does not allow "
			"refuses the copy. Links are copied as written.",
		.params = COPY_NOTE_PARAMS,
		.output_schema = CROSS_VAULT_OUTPUT,
		.annotations = "{\"destructiveHint\":false}",
	},
	{
		.name = "move_note",
		.description =
			"Move a note into another vault: it is written there "
			"first (the other vault's policy may refuse it; then "
			"nothing changes), then deleted here the way "
			"delete_note does (to .trash/, links to it marked per "
			"policy). Links are copied as written.",
		.params = MOVE_NOTE_PARAMS,
		.output_schema = CROSS_VAULT_OUTPUT,
	},
};

static struct param_list vault_tool_params(const struct vault_tool *t)
{
	return (struct param_list){.tool = t->name, .own = t->params};
}

static const struct vault_tool *find_vault_tool(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(VAULT_TOOLS); i++)
		if (!strcmp(VAULT_TOOLS[i].name, name))
			return &VAULT_TOOLS[i];
	return NULL;
}

static cJSON *parse_literal(const char *text)
{
	cJSON *o = cJSON_Parse(text);
	if (!o)
		abort(); /* a literal above */
	return o;
}

/* Its tools/list entry. */
static cJSON *vault_tool_json(const struct vault_tool *t)
{
	struct param_list l = vault_tool_params(t);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", t->name);
	cJSON_AddStringToObject(o, "description", t->description);
	cJSON_AddItemToObject(o, "inputSchema", params_schema(&l));
	cJSON_AddItemToObject(o, "outputSchema",
			      parse_literal(t->output_schema));
	if (t->annotations)
		cJSON_AddItemToObject(o, "annotations",
				      parse_literal(t->annotations));
	return o;
}

/* Its get_help entry, as vaultd's are: name, params, and the description
 * with a line a parameter. */
static cJSON *vault_tool_help(const struct vault_tool *t)
{
	struct param_list l = vault_tool_params(t);
	_cleanup_free_ char *params = params_text(&l);
	struct sbuf d = {0};
	sb_puts(&d, t->description);
	params_doc_lines(&d, &l);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", t->name);
	cJSON_AddStringToObject(o, "params", params);
	cJSON_AddStringToObject(o, "description", d.s);
	sb_free(&d);
	return o;
}

bool mcp_vault_tool(const char *name)
{
	return find_vault_tool(name) != NULL;
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
void mcp_add_vault_tools(struct mcp_session *s)
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
	for (size_t i = 0; i < ARRAY_SIZE(VAULT_TOOLS); i++)
		if (only_names(s->cfg.only, VAULT_TOOLS[i].name))
			cJSON_AddItemToArray(s->cfg.tools,
					     vault_tool_json(&VAULT_TOOLS[i]));
}

/* get_help names them too (its text is its list as JSON). */
void mcp_help_add_vault_tools(char **text, cJSON *structured)
{
	cJSON *list = cJSON_Parse(*text);
	if (!cJSON_IsArray(list)) {
		cJSON_Delete(list);
		return;
	}
	cJSON *sl = cJSON_GetObjectItem(structured, "result");
	for (size_t i = 0; i < ARRAY_SIZE(VAULT_TOOLS); i++) {
		cJSON *o = vault_tool_help(&VAULT_TOOLS[i]);
		if (cJSON_IsArray(sl))
			cJSON_AddItemToArray(sl, cJSON_Duplicate(o, 1));
		cJSON_AddItemToArray(list, o);
	}
	free(*text);
	*text = json_dumps(list);
	cJSON_Delete(list);
}

void mcp_job_free(struct job *j)
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
	long did = mcp_to_daemon(s, vault, method, params);
	if (did < 0)
		return false;
	struct pending *p =
		mcp_pending_add(s, vault, did, P_JOB, NULL, j->modern);
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

/* The answer: a tool result like vaultd's, through mcp_finish_tool (so the
 * first result of a session carries the context as any other). */
void mcp_job_reply(struct mcp_session *s, struct job *j, const char *err)
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
	struct pending *p = mcp_pending_add(s, 0, 0, P_TOOL, j->id, j->modern);
	s->pending = p->next; /* not waiting for any vaultd */
	p->next = NULL;
	p->version = j->version;
	p->name = xstrdup(j->tool);
	if (!mcp_hold(s, p, dres)) {
		mcp_finish_tool(s, p, dres);
		mcp_pending_free(p);
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
	const char *from = mcp_vname(s, j->src), *to = mcp_vname(s, j->dst);
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
	mcp_job_reply(s, j, m);
}

static void load_step(struct mcp_session *s, struct job *j, enum jstep step,
		      const cJSON *res, const char *err)
{
	if (step == JS_COUNT) {
		if (err) {
			_cleanup_free_ char *m = xasprintf(
				"Vault %s at %s could not be "
				"loaded: %s",
				mcp_vname(s, j->dst),
				vset_path(s->cfg.vaults, j->dst), err);
			mcp_job_reply(s, j, m);
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
		sb_printf(&t, "# Vault \"%s\"\n\n", mcp_vname(s, j->dst));
		mcp_block_cut(&t, b, CONTEXT_MAX / 2);
		j->extra = sb_steal(&t);
	}
	mcp_job_reply(s, j, NULL);
}

/* One answer (or failure) for a job's request. */
void mcp_job_answer(struct mcp_session *s, struct pending *p, const cJSON *res,
		    const char *err)
{
	struct job *j = p->job;
	size_t vault = p->vault;
	enum jstep step = p->step;
	bool cancelled = p->cancelled;
	mcp_pending_free(p);
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
				mcp_job_reply(s, j, NULL);
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
		mcp_job_free(j);
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

void mcp_list_vaults(struct mcp_session *s, struct job *j)
{
	struct vault_set *vs = s->cfg.vaults;
	cJSON *arr = cJSON_AddArrayToObject(j->result, "vaults");
	for (size_t i = 0; i < vset_count(vs); i++) {
		cJSON *v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "name", mcp_vname(s, i));
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
		mcp_job_reply(s, j, NULL);
}

/* A string argument (its type checked already): absent (NULL), or at
 * most max bytes; false with *ret_msg when it is longer. */
static bool string_arg(const cJSON *args, const char *key, size_t max,
		       const char **ret, char **ret_msg)
{
	*ret = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(args, key));
	if (!*ret || strlen(*ret) <= max)
		return true;
	*ret_msg = xasprintf("%s is too long (%zu bytes; the limit is %zu)",
			     key, strlen(*ret), max);
	return false;
}

static void load_vault(struct mcp_session *s, struct job *j, const cJSON *args)
{
	const char *path, *name;
	_cleanup_free_ char *m = NULL;
	if (!string_arg(args, "vault_path", PATH_MAX_BYTES * 4, &path, &m) ||
	    !string_arg(args, "name", 256, &name, &m)) {
		mcp_job_reply(s, j, m);
		return;
	}
	size_t before = vset_count(s->cfg.vaults);
	int i = vset_load(s->cfg.vaults, path, name, &m);
	if (i < 0) {
		mcp_job_reply(s, j, m);
		return;
	}
	j->dst = (size_t)i;
	if ((size_t)i >= before) {
		/* A new vault: its notes are resources now. */
		mcp_vctx(s, (size_t)i);
		mcp_list_changed(s);
	}
	cJSON_AddStringToObject(j->result, "status", "ok");
	cJSON_AddStringToObject(j->result, "vault_path",
				vset_path(s->cfg.vaults, j->dst));
	cJSON_AddStringToObject(j->result, "name", mcp_vname(s, j->dst));
	cJSON_AddBoolToObject(j->result, "read_only",
			      vset_read_only(s->cfg.vaults, j->dst));
	/* notes/list waits for the index: its total is the count. */
	cJSON *dp = cJSON_CreateObject();
	cJSON_AddNumberToObject(dp, "offset", 0);
	cJSON_AddNumberToObject(dp, "limit", 1);
	if (!job_send(s, j, j->dst, JS_COUNT, "notes/list", dp))
		mcp_job_reply(s, j, "vaultd is not reachable; try again");
}

static void copy_note(struct mcp_session *s, struct job *j, cJSON *args,
		      size_t src)
{
	const char *name, *to, *new_name;
	_cleanup_free_ char *m = NULL;
	const cJSON *ow = cJSON_GetObjectItemCaseSensitive(args, "overwrite");
	if (!string_arg(args, "name", PATH_MAX_BYTES, &name, &m) ||
	    !string_arg(args, "to_vault", 256, &to, &m) ||
	    !string_arg(args, "new_name", PATH_MAX_BYTES, &new_name, &m)) {
		mcp_job_reply(s, j, m);
		return;
	}
	int dst = vset_find(s->cfg.vaults, to);
	if (dst < 0) {
		_cleanup_free_ char *names = vset_names(s->cfg.vaults);
		m = xasprintf("Unknown vault %s. The vaults: %s.", QUOTE(to),
			      names);
		mcp_job_reply(s, j, m);
		return;
	}
	j->src = src;
	j->dst = (size_t)dst;
	j->overwrite = cJSON_IsTrue(ow);
	if (j->src == j->dst) {
		m = xasprintf("The note is in vault %s already: %s works "
			      "between vaults (rename_note moves a note "
			      "inside one).",
			      mcp_vname(s, j->src), j->tool);
	} else if (vset_read_only(s->cfg.vaults, j->dst)) {
		m = xasprintf("Vault %s is read-only: nothing is written "
			      "there. Nothing changed.",
			      mcp_vname(s, j->dst));
	} else if (j->move && vset_read_only(s->cfg.vaults, j->src)) {
		m = xasprintf("Vault %s is read-only: a note cannot leave it "
			      "(copy_note copies it). Nothing changed.",
			      mcp_vname(s, j->src));
	}
	if (m) {
		mcp_job_reply(s, j, m);
		return;
	}
	j->name = xstrdup(name);
	j->new_name = new_name ? xstrdup(new_name) : NULL;
	cJSON_AddStringToObject(j->result, "status", "ok");
	cJSON_AddStringToObject(j->result, "from_vault", mcp_vname(s, j->src));
	cJSON_AddStringToObject(j->result, "to_vault", mcp_vname(s, j->dst));
	cJSON_AddBoolToObject(j->result, "moved", false);
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "name", name);
	if (!job_tool(s, j, j->src, JS_META, "get_note_metadata", a))
		mcp_job_reply(s, j, "vaultd is not reachable; try again");
}

void mcp_local_tool(struct mcp_session *s, const cJSON *id, bool modern,
		    const char *name, cJSON *args, size_t vault)
{
	struct job *j;
	struct param_list l = vault_tool_params(find_vault_tool(name));
	_cleanup_free_ char *m = NULL;
	if (params_check(&l, args, &m) < 0) {
		/* The arguments its parameters do not take: the message
		 * vaultd's tools give. */
		j = job_new(s, J_LIST, name, id, modern);
		mcp_job_reply(s, j, m);
	} else if (!strcmp(name, "list_vaults")) {
		j = job_new(s, J_LIST, name, id, modern);
		mcp_list_vaults(s, j);
	} else if (!strcmp(name, "load_vault")) {
		j = job_new(s, J_LOAD, name, id, modern);
		load_vault(s, j, args);
	} else {
		j = job_new(s, J_COPY, name, id, modern);
		j->move = !strcmp(name, "move_note");
		copy_note(s, j, args, vault);
	}
	if (j->finished && !j->out)
		mcp_job_free(j);
}
