/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "mcpconf.h"
#include "fileio.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#define CONFIG_MAX (64u << 20)

static const char *home_dir(void)
{
	const char *h = getenv("HOME");
	return h && *h == '/' ? h : NULL;
}

/* $XDG_CONFIG_HOME, else ~/.config (where Electron apps keep theirs). */
static char *config_home(void)
{
	const char *x = getenv("XDG_CONFIG_HOME");
	if (x && *x == '/')
		return xstrdup(x);
	const char *h = home_dir();
	return h ? xasprintf("%s/.config", h) : NULL;
}

static bool is_dir(const char *p)
{
	struct stat st;
	return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* An app's folder: macOS keeps it in ~/Library/Application Support,
 * Linux in the XDG config folder. */
static char *app_folder(const char *app)
{
	const char *h = home_dir();
	if (!h)
		return NULL;
	_cleanup_free_ char *mac =
		xasprintf("%s/Library/Application Support/%s", h, app);
	if (is_dir(mac))
		return TAKE_PTR(mac);
	_cleanup_free_ char *xdg = config_home();
	return xdg ? xasprintf("%s/%s", xdg, app) : NULL;
}

static char *in_app(const char *app, const char *file)
{
	_cleanup_free_ char *d = app_folder(app);
	return d ? xasprintf("%s/%s", d, file) : NULL;
}

static char *desktop_home(void)
{
	return app_folder("Claude");
}

static char *desktop_path(void)
{
	return in_app("Claude", "claude_desktop_config.json");
}

static char *code_file(void)
{
	const char *h = home_dir();
	return h ? xasprintf("%s/.claude.json", h) : NULL;
}

static char *cursor_home(void)
{
	const char *h = home_dir();
	return h ? xasprintf("%s/.cursor", h) : NULL;
}

static char *cursor_path(void)
{
	const char *h = home_dir();
	return h ? xasprintf("%s/.cursor/mcp.json", h) : NULL;
}

static char *vscode_home(void)
{
	return app_folder("Code/User");
}

static char *vscode_path(void)
{
	return in_app("Code/User", "mcp.json");
}

static char *workspace_home(void)
{
	char cwd[PATH_MAX];
	return getcwd(cwd, sizeof(cwd)) ? xasprintf("%s/.vscode", cwd) : NULL;
}

static char *workspace_path(void)
{
	_cleanup_free_ char *d = workspace_home();
	return d ? xasprintf("%s/mcp.json", d) : NULL;
}

static const struct mcpconf_client CLIENTS[] = {
	{
		.id = "claude-desktop",
		.label = "Claude Desktop",
		.key = "mcpServers",
		.path = desktop_path,
		.home = desktop_home,
	},
	{
		.id = "claude-code",
		.label = "Claude Code (user scope)",
		.key = "mcpServers",
		.typed = true,
		.path = code_file,
		.home = code_file,
	},
	{
		.id = "cursor",
		.label = "Cursor",
		.key = "mcpServers",
		.path = cursor_path,
		.home = cursor_home,
	},
	{
		.id = "vscode",
		.label = "VS Code (user profile)",
		.key = "servers",
		.typed = true,
		.path = vscode_path,
		.home = vscode_home,
	},
	{
		.id = "vscode-workspace",
		.label = "VS Code (this workspace)",
		.key = "servers",
		.typed = true,
		.path = workspace_path,
		.home = workspace_home,
	},
};

const struct mcpconf_client *mcpconf_clients(size_t *ret_n)
{
	*ret_n = ARRAY_SIZE(CLIENTS);
	return CLIENTS;
}

const struct mcpconf_client *mcpconf_client_find(const char *id)
{
	for (size_t i = 0; i < ARRAY_SIZE(CLIENTS); i++)
		if (!strcmp(CLIENTS[i].id, id))
			return &CLIENTS[i];
	return NULL;
}

const char *mcpconf_guess_key(const char *path, const char *text)
{
	_cleanup_free_ char *copy = xstrdup(path);
	const char *base = basename(copy);
	if (!strcmp(base, "mcp.json") &&
	    (strstr(path, "/.vscode/") || strstr(path, "/Code/User/")))
		return "servers";
	cJSON *j = text ? cJSON_Parse(text) : NULL;
	bool servers = cJSON_IsObject(cJSON_GetObjectItem(j, "servers")) &&
		       !cJSON_GetObjectItem(j, "mcpServers");
	cJSON_Delete(j);
	return servers ? "servers" : "mcpServers";
}

static cJSON *entry_json(const struct mcpconf_entry *e)
{
	cJSON *o = cJSON_CreateObject();
	if (e->typed)
		cJSON_AddStringToObject(o, "type", "stdio");
	cJSON_AddStringToObject(o, "command", e->command);
	cJSON_AddItemToObject(o, "args", cJSON_CreateArray());
	cJSON *env = cJSON_AddObjectToObject(o, "env");
	cJSON_AddStringToObject(env, "OBSIDIAN_VAULT_PATH", e->vault);
	return o;
}

/* cJSON_Print indents with tabs and puts one after each colon; config
 * files are written with two spaces. A raw tab only ever comes from the
 * layout (tabs in strings are escaped). */
static char *print_json(const cJSON *j)
{
	_cleanup_free_ char *raw = cJSON_Print(j);
	struct sbuf b = {0};
	bool line_start = true;
	for (const char *p = raw; *p; p++) {
		if (*p == '\t')
			sb_puts(&b, line_start ? "  " : " ");
		else {
			sb_putc(&b, *p);
			line_start = *p == '\n';
		}
	}
	sb_putc(&b, '\n');
	return sb_steal(&b);
}

char *mcpconf_snippet(const char *key, const struct mcpconf_entry *e)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *servers = cJSON_AddObjectToObject(root, key);
	cJSON_AddItemToObject(servers, e->name, entry_json(e));
	char *s = print_json(root);
	cJSON_Delete(root);
	return s;
}

static bool same_folder(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	while (la > 1 && a[la - 1] == '/')
		la--;
	while (lb > 1 && b[lb - 1] == '/')
		lb--;
	if (la == lb && !strncmp(a, b, la))
		return true;
	char ra[PATH_MAX], rb[PATH_MAX];
	return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

/* Set o[k] to v (replacing in place keeps the member's position). */
static void set_member(cJSON *o, const char *k, cJSON *v)
{
	if (cJSON_GetObjectItemCaseSensitive(o, k))
		cJSON_ReplaceItemInObjectCaseSensitive(o, k, v);
	else
		cJSON_AddItemToObject(o, k, v);
}

static int refuse_parse(const char *text, const char *err, char **ret_msg)
{
	/* Comments (JSONC, as VS Code allows) parse once stripped; writing
	 * the file back would lose them. */
	_cleanup_free_ char *stripped = xstrdup(text);
	cJSON_Minify(stripped);
	cJSON *j = cJSON_Parse(stripped);
	if (j) {
		cJSON_Delete(j);
		*ret_msg = xstrdup("it has comments, which rewriting it would "
				   "lose: add the entry below by hand");
		return -EBADMSG;
	}
	/* cJSON stops one past the character it could not take. */
	if (err && err > text)
		err--;
	int line = 1, col = 1;
	for (const char *p = text; err && p < err && *p; p++) {
		if (*p == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	*ret_msg = xasprintf("it is not valid JSON (line %d, column %d): "
			     "correct it or move it aside, then run this "
			     "again; it was left as it is",
			     line, col);
	return -EBADMSG;
}

int mcpconf_merge(const char *text, const char *key,
		  const struct mcpconf_entry *e, char **ret_text,
		  bool *ret_changed, char **ret_msg)
{
	/* A byte order mark (some editors add one) is not JSON. */
	if (!strncmp(text, "\xef\xbb\xbf", 3))
		text += 3;
	const char *p = text;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	cJSON *orig;
	if (!*p) {
		orig = cJSON_CreateObject();
	} else {
		const char *end = NULL;
		orig = cJSON_ParseWithOpts(text, &end, true);
		if (!orig)
			return refuse_parse(text, end, ret_msg);
	}
	if (!cJSON_IsObject(orig)) {
		cJSON_Delete(orig);
		*ret_msg = xstrdup("it holds JSON that is not an object: "
				   "correct it or move it aside; it was left "
				   "as it is");
		return -EBADMSG;
	}
	cJSON *root = cJSON_Duplicate(orig, true);
	int r = 0;
	cJSON *servers = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!servers) {
		servers = cJSON_AddObjectToObject(root, key);
	} else if (!cJSON_IsObject(servers)) {
		*ret_msg = xasprintf("its \"%s\" is not an object: correct it; "
				     "it was left as it is",
				     key);
		r = -EBADMSG;
		goto out;
	}
	cJSON *cur = cJSON_GetObjectItemCaseSensitive(servers, e->name);
	if (!cur) {
		cJSON_AddItemToObject(servers, e->name, entry_json(e));
	} else if (!cJSON_IsObject(cur)) {
		*ret_msg = xasprintf("its \"%s\".\"%s\" is not an object: "
				     "correct it, or give --name NAME",
				     key, e->name);
		r = -EBADMSG;
		goto out;
	} else {
		cJSON *env = cJSON_GetObjectItemCaseSensitive(cur, "env");
		const char *other =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
				env, "OBSIDIAN_VAULT_PATH"));
		if (env && !cJSON_IsObject(env)) {
			*ret_msg = xasprintf("the env of its \"%s\" is not an "
					     "object: correct it",
					     e->name);
			r = -EBADMSG;
			goto out;
		}
		if (other && !same_folder(other, e->vault)) {
			*ret_msg = xasprintf(
				"its server \"%s\" serves another vault (%s): "
				"give --name NAME to add this one beside it, "
				"or remove that entry first",
				e->name, other);
			r = -EEXIST;
			goto out;
		}
		/* Ours: command and vault; the rest is the user's. */
		if (e->typed)
			set_member(cur, "type", cJSON_CreateString("stdio"));
		set_member(cur, "command", cJSON_CreateString(e->command));
		if (!cJSON_GetObjectItemCaseSensitive(cur, "args"))
			cJSON_AddItemToObject(cur, "args", cJSON_CreateArray());
		if (!env)
			env = cJSON_AddObjectToObject(cur, "env");
		if (!other)
			set_member(env, "OBSIDIAN_VAULT_PATH",
				   cJSON_CreateString(e->vault));
	}
	*ret_changed = !cJSON_Compare(orig, root, true);
	*ret_text = print_json(root);
out:
	cJSON_Delete(orig);
	cJSON_Delete(root);
	return r;
}

int mcpconf_patch(const char *path, const char *key,
		  const struct mcpconf_entry *e, bool *ret_changed,
		  char **ret_backup, char **ret_msg)
{
	/* A symlinked config (dotfiles) is changed where it lives. */
	char real[PATH_MAX];
	_cleanup_free_ char *target =
		xstrdup(realpath(path, real) ? real : path);
	_cleanup_free_ char *d = xstrdup(target);
	_cleanup_free_ char *b = xstrdup(target);
	const char *dir = dirname(d), *base = basename(b);
	_cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT) {
		int r = mkdir_p(dir, 0700);
		if (r < 0) {
			*ret_msg = xasprintf("cannot create %s: %s", dir,
					     strerror(-r));
			return r;
		}
		dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (dfd < 0) {
		int e2 = errno;
		*ret_msg = xasprintf("%s: %s", dir, strerror(e2));
		return -e2;
	}
	_cleanup_free_ char *old = NULL;
	size_t len = 0;
	int r = file_read(dfd, base, CONFIG_MAX, &old, &len, NULL);
	bool existed = r == 0;
	if (r == -ENOENT) {
		old = xstrdup("");
	} else if (r < 0) {
		*ret_msg = xasprintf("cannot read it: %s", strerror(-r));
		return r;
	} else if (strlen(old) != len) {
		*ret_msg = xstrdup("it holds NUL bytes, so it is not JSON: it "
				   "was left as it is");
		return -EBADMSG;
	}
	_cleanup_free_ char *text = NULL;
	bool changed = false;
	r = mcpconf_merge(old, key, e, &text, &changed, ret_msg);
	if (r < 0)
		return r;
	*ret_changed = changed;
	*ret_backup = NULL;
	if (!changed)
		return 0;
	_cleanup_free_ char *bak = NULL;
	if (existed) {
		char stamp[32];
		time_t t = time(NULL);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&t));
		bak = xasprintf("%s.bak-%s", base, stamp);
		r = file_write_atomic(dfd, bak, old, len, 0, NULL);
		if (r < 0) {
			*ret_msg =
				xasprintf("cannot keep a backup (%s/%s): %s; "
					  "nothing was changed",
					  dir, bak, strerror(-r));
			return r;
		}
	}
	r = file_write_atomic(dfd, base, text, strlen(text), 0, NULL);
	if (r < 0) {
		*ret_msg = xasprintf("cannot write it: %s", strerror(-r));
		return r;
	}
	if (bak)
		*ret_backup = xasprintf("%s/%s", dir, bak);
	return 0;
}
