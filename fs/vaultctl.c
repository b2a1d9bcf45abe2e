/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vaultctl: the command-line tool, a client of vaultd's control socket.
 *
 *   vaultctl [--vault DIR] [--socket PATH] [--json] COMMAND [ARGS]
 *
 *   status                      the daemon: notes, index, clients, uptime
 *   check [--offline]           counts and problems (works without daemon)
 *   tags                        tags with note counts
 *   violations [--limit N]      writes the policy refused or warned about
 *   call TOOL [key=value ...]   call any tool (key:=JSON, key@=FILE)
 *   tools [TOOL ...]            every tool with its parameters; with
 *                               TOOL, its full help (get_help's text)
 *   notes [PREFIX]              note names (what shell completion uses)
 *   changes / undo              changes made through MCP, and their undo
 *   stop                        stop the daemon
 *   init [--write] ...          connect the vault to MCP clients (init.c)
 *
 * Exit codes: 0 ok, 1 tool error or problems found, 2 usage, 3 no daemon.
 */
#include "cli.h"
#include "config.h"
#include "ctl_client.h"
#include "fileio.h"
#include "init.h"
#include "json.h"
#include "runtime.h"
#include "shape.h"
#include "tools.h"
#include "util.h"
#include "vault.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_TOOL = 1, EXIT_USAGE = 2, EXIT_NODAEMON = 3 };

struct opts {
	const char *vault;
	const char *socket;
	bool json;
	bool offline;
	long limit;
	bool limit_set;
	const char *session; /* changes, undo */
	const char *since;
	bool dry_run;
	int argc;
	char **argv; /* the command's own arguments */
};

static void usage(FILE *f)
{
	fputs("Usage: vaultctl [--vault DIR] [--socket PATH] [--json] COMMAND\n"
	      "\n"
	      "Commands:\n"
	      "  status                     the running daemon: notes, index,\n"
	      "                             clients, uptime, mount\n"
	      "  check [--offline]          counts of notes, tags, links, broken\n"
	      "                             links and policy violations (reads\n"
	      "                             the vault itself if no daemon runs)\n"
	      "  tags                       tags with their note counts\n"
	      "  violations [--limit N]     writes the policy refused or warned\n"
	      "                             about, newest first\n"
	      "  call TOOL [ARG ...]        call a tool; ARG is key=text,\n"
	      "                             key:=JSON or key@=FILE\n"
	      "  history NOTE [--limit N]   the note's versions, newest first\n"
	      "  show NOTE@VERSION          the note's text at a version\n"
	      "  changes [--session S] [--since T] [--limit N]\n"
	      "                             changes made through MCP, newest\n"
	      "                             first (S: an MCP session's id)\n"
	      "  undo --session S | --since T [--dry-run]\n"
	      "                             revert them as new versions;\n"
	      "                             notes changed since by another\n"
	      "                             writer are left as conflicts\n"
	      "  tools [TOOL ...]           every tool with its parameters;\n"
	      "                             with TOOL, its full help, each\n"
	      "                             parameter explained\n"
	      "  notes [PREFIX]             names of the notes that start with\n"
	      "                             (then contain) PREFIX, one a line\n"
	      "  stop                       stop the vault's daemon\n"
	      "  init [--write] [--client NAME] [--mount DIR] ...\n"
	      "                             connect the vault to MCP clients\n"
	      "                             (Claude Desktop, Claude Code,\n"
	      "                             Cursor, VS Code): print or patch\n"
	      "                             their configuration; vaultctl\n"
	      "                             init --help for the rest\n"
	      "\n"
	      "Options:\n"
	      "  --vault DIR                the vault (default:\n"
	      "                             $OBSIDIAN_VAULT_PATH)\n"
	      "  --socket PATH              vaultd's control socket, if not\n"
	      "                             the default\n"
	      "  --json                     print JSON\n"
	      "  --offline                  check: read the vault itself\n"
	      "  --limit N                  violations, history, notes,\n"
	      "                             changes: how many\n"
	      "  --session S                changes, undo: the changes of an\n"
	      "                             MCP session\n"
	      "  --since T                  changes, undo: the changes since\n"
	      "                             a time (ISO 8601)\n"
	      "  --dry-run                  undo: show the diffs, change\n"
	      "                             nothing\n"
	      "  -h, --help                 this help\n"
	      "  --version                  the version\n"
	      "\n"
	      "The vault is --vault DIR or $OBSIDIAN_VAULT_PATH.\n"
	      "Exit codes: 0 ok, 1 tool error or problems found, 2 usage,\n"
	      "3 no daemon running for the vault.\n",
	      f);
}

static int need_vault(const struct opts *o)
{
	if ((!o->vault || !*o->vault) && !o->socket) {
		fputs("vaultctl: no vault: use --vault DIR or set "
		      "OBSIDIAN_VAULT_PATH\n",
		      stderr);
		return EXIT_USAGE;
	}
	return 0;
}

/* Connect to the vault's daemon; NULL (and a message) when none runs. */
static struct ctl_client *connect_daemon(const struct opts *o, bool quiet)
{
	_cleanup_free_ char *path = NULL;
	if (o->socket) {
		path = xstrdup(o->socket);
	} else {
		const char *why;
		int r = socket_path_for(o->vault, &path, &why);
		if (r < 0) {
			fprintf(stderr, "vaultctl: %s: %s\n", why, o->vault);
			return NULL;
		}
	}
	struct ctl_client *c = NULL;
	int r = ctl_connect(path, &c);
	if (r < 0 && !quiet && o->vault && access(o->vault, F_OK) < 0)
		fprintf(stderr,
			"vaultctl: the vault folder does not exist: %s\n",
			o->vault);
	else if (r < 0 && !quiet)
		fprintf(stderr,
			"vaultctl: no vaultd is running for this vault (%s: "
			"%s)\nStart it with: vaultd --vault %s\n",
			path, strerror(-r), o->vault ? o->vault : "DIR");
	return r < 0 ? NULL : c;
}

static int daemon_call(const struct opts *o, const char *method, cJSON *params,
		       cJSON **ret)
{
	struct ctl_client *c = connect_daemon(o, false);
	if (!c) {
		cJSON_Delete(params);
		return EXIT_NODAEMON;
	}
	char *msg = NULL;
	int r = ctl_call(c, method, params, NULL, NULL, ret, &msg);
	ctl_close(c);
	if (r == -EPIPE) {
		fputs("vaultctl: vaultd closed the connection\n", stderr);
		return EXIT_NODAEMON;
	}
	if (r) {
		fprintf(stderr, "vaultctl: %s\n", msg ? msg : "error");
		free(msg);
		return EXIT_TOOL;
	}
	return EXIT_OK;
}

static void print_json(const cJSON *v)
{
	_cleanup_free_ char *s = json_dumps(v);
	puts(s);
}

static int cmd_status(const struct opts *o)
{
	cJSON *st = NULL;
	int r = daemon_call(o, "status", NULL, &st);
	if (r)
		return r;
	if (o->json) {
		print_json(st);
	} else {
		const cJSON *ix = cJSON_GetObjectItem(st, "index");
		const cJSON *mnt = cJSON_GetObjectItem(st, "mount");
		printf("vault:    %s\n",
		       cJSON_GetStringValue(cJSON_GetObjectItem(st, "vault")));
		const char *gone =
			cJSON_GetStringValue(cJSON_GetObjectItem(st, "gone"));
		if (gone)
			printf("GONE:     %s\n", gone);
		printf("vaultd:   %s, pid %.0f, up %.0f s\n",
		       cJSON_GetStringValue(cJSON_GetObjectItem(st, "version")),
		       cJSON_GetNumberValue(cJSON_GetObjectItem(st, "pid")),
		       cJSON_GetNumberValue(
			       cJSON_GetObjectItem(st, "uptime_s")));
		printf("notes:    %.0f\n",
		       cJSON_GetNumberValue(cJSON_GetObjectItem(st, "notes")));
		printf("index:    %s (%.0f%%)\n",
		       cJSON_GetStringValue(cJSON_GetObjectItem(ix, "state")),
		       cJSON_GetNumberValue(
			       cJSON_GetObjectItem(ix, "percent")));
		const cJSON *si = cJSON_GetObjectItem(st, "search_index");
		const char *sst =
			cJSON_GetStringValue(cJSON_GetObjectItem(si, "state"));
		if (sst && !strcmp(sst, "off"))
			printf("search:   off (full-text search unavailable; "
			       "see the log)\n");
		else if (sst)
			printf("search:   %s (%.0f%%), %.1f MB in %s\n", sst,
			       cJSON_GetNumberValue(
				       cJSON_GetObjectItem(si, "percent")),
			       cJSON_GetNumberValue(
				       cJSON_GetObjectItem(si, "bytes")) /
				       1e6,
			       cJSON_GetStringValue(
				       cJSON_GetObjectItem(si, "path")));
		const cJSON *hi = cJSON_GetObjectItem(st, "history");
		const char *hst =
			cJSON_GetStringValue(cJSON_GetObjectItem(hi, "state"));
		if (hst && !strcmp(hst, "on"))
			printf("history:  %.0f versions, %.1f MB in %s\n",
			       cJSON_GetNumberValue(
				       cJSON_GetObjectItem(hi, "versions")),
			       cJSON_GetNumberValue(
				       cJSON_GetObjectItem(hi, "bytes")) /
				       1e6,
			       cJSON_GetStringValue(
				       cJSON_GetObjectItem(hi, "path")));
		else if (hst)
			printf("history:  off\n");
		const char *herr =
			cJSON_GetStringValue(cJSON_GetObjectItem(hi, "error"));
		if (herr)
			printf("history:  FAILING: %s\n", herr);
		printf("clients:  %.0f\n",
		       cJSON_GetNumberValue(
			       cJSON_GetObjectItem(st, "clients")));
		printf("mount:    %s\n",
		       cJSON_IsString(mnt) ? mnt->valuestring : "none");
		printf("socket:   %s\n",
		       cJSON_GetStringValue(cJSON_GetObjectItem(st, "socket")));
	}
	cJSON_Delete(st);
	return EXIT_OK;
}

static int report_check(const struct opts *o, cJSON *r)
{
	_cleanup_free_ char *out =
		o->json ? json_dumps(r) : vault_check_text(r);
	fputs(out, stdout);
	if (o->json)
		fputc('\n', stdout);
	bool problems = cJSON_GetArraySize(
				cJSON_GetObjectItem(r, "policy_violations")) ||
			cJSON_GetArraySize(
				cJSON_GetObjectItem(r, "frontmatter_errors"));
	cJSON_Delete(r);
	return problems ? EXIT_TOOL : EXIT_OK;
}

static int cmd_check(const struct opts *o)
{
	if (!o->offline) {
		struct ctl_client *c = connect_daemon(o, true);
		if (c) {
			cJSON *r = NULL;
			char *msg = NULL;
			int rc = ctl_call(c, "check", NULL, NULL, NULL, &r,
					  &msg);
			ctl_close(c);
			if (rc == 0)
				return report_check(o, r);
			free(msg);
			/* Fall back to reading the vault directly. */
		}
	}
	if (!o->vault) {
		fputs("vaultctl: check --offline needs --vault DIR\n", stderr);
		return EXIT_USAGE;
	}
	struct vault *v = NULL;
	_cleanup_free_ char *msg = NULL;
	if (vault_open(o->vault, &v, &msg) < 0) {
		fprintf(stderr, "vaultctl: %s\n", msg);
		return EXIT_TOOL;
	}
	_cleanup_free_ char *ixmsg = NULL;
	if (vault_index_all(v, NULL, NULL, &ixmsg) < 0)
		fprintf(stderr, "vaultctl: warning: %s\n", ixmsg);
	int rc = report_check(o, vault_check_json(v));
	vault_free(v);
	return rc;
}

/* The result of a tools/call from the daemon: print, and exit code. */
static int print_tool_result(const struct opts *o, cJSON *res)
{
	bool err = cJSON_IsTrue(cJSON_GetObjectItem(res, "isError"));
	const char *text =
		cJSON_GetStringValue(cJSON_GetObjectItem(res, "text"));
	if (o->json) {
		print_json(res);
	} else if (err) {
		fprintf(stderr, "vaultctl: %s\n", text ? text : "error");
	} else if (text) {
		fputs(text, stdout);
		if (*text && text[strlen(text) - 1] != '\n')
			fputc('\n', stdout);
	}
	const char *warn =
		cJSON_GetStringValue(cJSON_GetObjectItem(res, "warning"));
	if (!o->json && !err && warn)
		fprintf(stderr, "vaultctl: warning: %s\n", warn);
	/* What the text is (a part of a note): apart from the text. */
	const char *info =
		cJSON_GetStringValue(cJSON_GetObjectItem(res, "info"));
	if (!o->json && !err && info)
		fprintf(stderr, "vaultctl: %s\n", info);
	cJSON_Delete(res);
	return err ? EXIT_TOOL : EXIT_OK;
}

/* Call a tool (args taken) as vaultctl; its result in *ret. */
static int tool_call(const struct opts *o, const char *tool, cJSON *args,
		     cJSON **ret)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "name", tool);
	cJSON_AddItemToObject(p, "arguments", args);
	cJSON_AddStringToObject(p, "source", "vaultctl");
	return daemon_call(o, "tools/call", p, ret);
}

static int call_tool(const struct opts *o, const char *tool, cJSON *args)
{
	cJSON *res = NULL;
	int r = tool_call(o, tool, args, &res);
	return r ? r : print_tool_result(o, res);
}

static int cmd_stop(const struct opts *o)
{
	cJSON *res = NULL;
	int r = daemon_call(o, "shutdown", NULL, &res);
	cJSON_Delete(res);
	if (!r && !o->json)
		puts("vaultd stopped");
	return r;
}

static int cmd_tags(const struct opts *o)
{
	if (o->json)
		return call_tool(o, "list_tags", cJSON_CreateObject());
	cJSON *res = NULL;
	int r = tool_call(o, "list_tags", cJSON_CreateObject(), &res);
	if (r)
		return r;
	const cJSON *tags = cJSON_GetObjectItem(
		cJSON_GetObjectItem(res, "structured"), "tags");
	const cJSON *t;
	cJSON_ArrayForEach(t, tags)
		printf("%6.0f  %s\n",
		       cJSON_GetNumberValue(cJSON_GetObjectItem(t, "count")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(t, "tag")));
	if (!cJSON_GetArraySize(tags))
		puts("No tags in use yet.");
	cJSON_Delete(res);
	return EXIT_OK;
}

static int cmd_violations(const struct opts *o)
{
	cJSON *args = cJSON_CreateObject();
	cJSON_AddNumberToObject(args, "limit", (double)o->limit);
	if (o->json)
		return call_tool(o, "list_violations", args);
	cJSON *res = NULL;
	int r = tool_call(o, "list_violations", args, &res);
	if (r)
		return r;
	const cJSON *vs = cJSON_GetObjectItem(
		cJSON_GetObjectItem(res, "structured"), "violations");
	const cJSON *v;
	cJSON_ArrayForEach(v, vs)
	{
		const char *kept = cJSON_GetStringValue(
			cJSON_GetObjectItem(v, "rejected_text"));
		printf("%s  %-7s %s  %s\n  %s\n",
		       cJSON_GetStringValue(cJSON_GetObjectItem(v, "time")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(v, "action")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(v, "path")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(v, "source")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(v, "message")));
		if (kept)
			printf("  refused text kept in %s\n", kept);
	}
	if (!cJSON_GetArraySize(vs))
		puts("No violations recorded.");
	cJSON_Delete(res);
	return EXIT_OK;
}

/* key@=FILE's text, or NULL with the error said. */
static char *read_arg_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "vaultctl: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	struct sbuf b = {0};
	char buf[65536];
	size_t len;
	while ((len = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_add(&b, buf, len);
	fclose(f);
	return sb_steal(&b);
}

/*
 * key=text as the tool's parameter key takes it (the table's type): a
 * number, a boolean (true/yes/1, false/no/0) or text; an object's JSON
 * text goes as text, which the tool parses, and so does a key the tool
 * does not take (the tool names the valid ones). NULL with the error
 * said.
 */
static cJSON *typed_arg(const struct tool *t, const char *key, const char *val)
{
	const struct tool_param *p = tool_param(t, key);
	if (p && p->type == P_INT) {
		char *end;
		double d = strtod(val, &end);
		if (!*val || *end || !isfinite(d)) {
			fprintf(stderr,
				"vaultctl: %s must be a number, got '%s'\n",
				key, val);
			return NULL;
		}
		return cJSON_CreateNumber(d);
	}
	if (p && p->type == P_BOOL) {
		bool b = !strcmp(val, "true") || !strcmp(val, "yes") ||
			 !strcmp(val, "1");
		if (!b && strcmp(val, "false") && strcmp(val, "no") &&
		    strcmp(val, "0")) {
			fprintf(stderr, "vaultctl: %s must be true or false\n",
				key);
			return NULL;
		}
		return cJSON_CreateBool(b);
	}
	return cJSON_CreateString(val);
}

/* key=text, key:=JSON, key@=FILE; text is converted by the tool's
 * parameter types. A key given again replaces the first. */
static int parse_arg(const struct tool *t, const char *arg, cJSON *args)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg) {
		fprintf(stderr, "vaultctl: argument '%s' is not key=value\n",
			arg);
		return EXIT_USAGE;
	}
	size_t kl = (size_t)(eq - arg);
	char mode = 0;
	if (kl > 1 && (arg[kl - 1] == ':' || arg[kl - 1] == '@')) {
		mode = arg[kl - 1];
		kl--;
	}
	_cleanup_free_ char *key = xstrndup(arg, kl);
	const char *val = eq + 1;
	_cleanup_free_ char *file = NULL;
	if (mode == '@' && !(val = file = read_arg_file(val)))
		return EXIT_USAGE;
	cJSON *v;
	if (mode == ':') {
		v = cJSON_ParseWithOpts(val, NULL, true);
		if (!v)
			fprintf(stderr, "vaultctl: %s:= needs JSON, got '%s'\n",
				key, val);
	} else {
		v = typed_arg(t, key, val);
	}
	if (!v)
		return EXIT_USAGE;
	cJSON_DeleteItemFromObject(args, key);
	cJSON_AddItemToObject(args, key, v);
	return 0;
}

static int cmd_call(const struct opts *o)
{
	if (o->argc < 1) {
		fputs("vaultctl: call needs a tool name (see vaultctl tools)\n",
		      stderr);
		return EXIT_USAGE;
	}
	const struct tool *t = tools_find(o->argv[0]);
	if (!t) {
		fprintf(stderr,
			"vaultctl: unknown tool '%s' (see vaultctl tools)\n",
			o->argv[0]);
		return EXIT_USAGE;
	}
	cJSON *args = cJSON_CreateObject();
	for (int i = 1; i < o->argc; i++) {
		int r = parse_arg(t, o->argv[i], args);
		if (r) {
			cJSON_Delete(args);
			return r;
		}
	}
	return call_tool(o, t->name, args);
}

static int cmd_history(const struct opts *o)
{
	if (o->argc != 1) {
		fputs("vaultctl: history needs one note name\n", stderr);
		return EXIT_USAGE;
	}
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "name", o->argv[0]);
	if (o->limit > 0)
		cJSON_AddNumberToObject(args, "limit", (double)o->limit);
	return call_tool(o, "get_note_history", args);
}

/* NOTE@VERSION: the version is after the last '@' (names may hold one). */
static int cmd_show(const struct opts *o)
{
	const char *at = o->argc == 1 ? strrchr(o->argv[0], '@') : NULL;
	if (!at || at == o->argv[0] || !at[1]) {
		fputs("vaultctl: show needs NOTE@VERSION (versions as "
		      "vaultctl history shows them)\n",
		      stderr);
		return EXIT_USAGE;
	}
	cJSON *args = cJSON_CreateObject();
	_cleanup_free_ char *name =
		xstrndup(o->argv[0], (size_t)(at - o->argv[0]));
	cJSON_AddStringToObject(args, "name", name);
	cJSON_AddStringToObject(args, "version", at + 1);
	return call_tool(o, "get_note_version", args);
}

/* The changes list_changes and undo_changes take. */
static cJSON *changes_args(const struct opts *o)
{
	cJSON *args = cJSON_CreateObject();
	if (o->session)
		cJSON_AddStringToObject(args, "session", o->session);
	if (o->since)
		cJSON_AddStringToObject(args, "since", o->since);
	return args;
}

static cJSON *structured_of(cJSON *res)
{
	return cJSON_GetObjectItem(res, "structured");
}

static int cmd_changes(const struct opts *o)
{
	cJSON *args = changes_args(o);
	cJSON_AddNumberToObject(args, "limit",
				(double)(o->limit_set ? o->limit : 50));
	if (o->json)
		return call_tool(o, "list_changes", args);
	cJSON *res = NULL;
	int r = tool_call(o, "list_changes", args, &res);
	if (r)
		return r;
	if (cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")))
		return print_tool_result(o, res);
	const cJSON *x;
	const cJSON *ch = cJSON_GetObjectItem(structured_of(res), "changes");
	cJSON_ArrayForEach(x, ch)
	{
		const char *from =
			cJSON_GetStringValue(cJSON_GetObjectItem(x, "from"));
		const char *sess =
			cJSON_GetStringValue(cJSON_GetObjectItem(x, "session"));
		printf("%s  %-8s  %s%s%s  by %s%s%s\n",
		       cJSON_GetStringValue(cJSON_GetObjectItem(x, "time")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(x, "change")),
		       from ? from : "", from ? " -> " : "",
		       cJSON_GetStringValue(cJSON_GetObjectItem(x, "note")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(x, "tool")),
		       sess ? " in session " : "", sess ? sess : "");
	}
	if (!cJSON_GetArraySize(ch))
		puts("No changes.");
	else if (cJSON_GetObjectItem(structured_of(res), "next_cursor"))
		puts("(more: a higher --limit shows them)");
	cJSON_Delete(res);
	return EXIT_OK;
}

/* Exit 1 when some note was left alone (a conflict) or failed. */
static int cmd_undo(const struct opts *o)
{
	if (!o->session && !o->since) {
		fputs("vaultctl: undo needs --session S or --since T (vaultctl "
		      "changes shows the sessions)\n",
		      stderr);
		return EXIT_USAGE;
	}
	cJSON *args = changes_args(o);
	if (o->dry_run)
		cJSON_AddTrueToObject(args, "dry_run");
	cJSON *res = NULL;
	int r = tool_call(o, "undo_changes", args, &res);
	if (r)
		return r;
	if (cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")))
		return print_tool_result(o, res);
	const cJSON *st = structured_of(res);
	const cJSON *undone = cJSON_GetObjectItem(st, "undone");
	const cJSON *conflicts = cJSON_GetObjectItem(st, "conflicts");
	const cJSON *failed = cJSON_GetObjectItem(st, "failed");
	bool problems =
		cJSON_GetArraySize(conflicts) || cJSON_GetArraySize(failed);
	if (o->json) {
		print_json(st);
		cJSON_Delete(res);
		return problems ? EXIT_TOOL : EXIT_OK;
	}
	const cJSON *x;
	cJSON_ArrayForEach(x, undone)
	{
		const char *from =
			cJSON_GetStringValue(cJSON_GetObjectItem(x, "from"));
		printf("%s%s: %s%s%s\n", o->dry_run ? "would be " : "",
		       cJSON_GetStringValue(cJSON_GetObjectItem(x, "action")),
		       from ? from : "", from ? " -> " : "",
		       cJSON_GetStringValue(cJSON_GetObjectItem(x, "note")));
		if (o->dry_run)
			fputs(cJSON_GetStringValue(
				      cJSON_GetObjectItem(x, "diff")),
			      stdout);
	}
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(st, "unchanged"))
		printf("already as before: %s\n", cJSON_GetStringValue(x));
	cJSON_ArrayForEach(x, conflicts)
	{
		printf("conflict, left alone: %s: %s\n",
		       cJSON_GetStringValue(cJSON_GetObjectItem(x, "note")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(x, "why")));
		printf("  its changes:\n%s  changed since:\n%s",
		       cJSON_GetStringValue(
			       cJSON_GetObjectItem(x, "changes_diff")),
		       cJSON_GetStringValue(
			       cJSON_GetObjectItem(x, "later_diff")));
	}
	cJSON_ArrayForEach(x, failed)
		printf("failed: %s: %s\n",
		       cJSON_GetStringValue(cJSON_GetObjectItem(x, "note")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(x, "error")));
	if (!cJSON_GetArraySize(undone) && !problems)
		puts("Nothing to undo.");
	cJSON_Delete(res);
	return problems ? EXIT_TOOL : EXIT_OK;
}

/* Note names for a prefix; quiet when no daemon runs (for completion). */
static int cmd_notes(const struct opts *o)
{
	if (o->argc > 1) {
		fputs("vaultctl: notes takes one prefix\n", stderr);
		return EXIT_USAGE;
	}
	struct ctl_client *c = connect_daemon(o, true);
	if (!c)
		return EXIT_NODAEMON;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "prefix", o->argc ? o->argv[0] : "");
	cJSON_AddNumberToObject(p, "limit",
				(double)(o->limit_set ? o->limit : 1000));
	cJSON *res = NULL;
	char *msg = NULL;
	int r = ctl_call(c, "notes/complete", p, NULL, NULL, &res, &msg);
	ctl_close(c);
	if (r) {
		fprintf(stderr, "vaultctl: %s\n", msg ? msg : strerror(-r));
		free(msg);
		return r == -EPIPE ? EXIT_NODAEMON : EXIT_TOOL;
	}
	if (o->json) {
		print_json(res);
	} else {
		const cJSON *v;
		cJSON_ArrayForEach(v, cJSON_GetObjectItem(res, "values"))
			puts(cJSON_GetStringValue(v));
	}
	cJSON_Delete(res);
	return EXIT_OK;
}

/* tools TOOL ...: each one's full help, as get_help gives it (its
 * entries, with --json). */
static int tools_help(const struct opts *o)
{
	for (int i = 0; i < o->argc; i++) {
		if (!tools_find(o->argv[i])) {
			fprintf(stderr,
				"vaultctl: unknown tool '%s' (see vaultctl "
				"tools)\n",
				o->argv[i]);
			return EXIT_USAGE;
		}
	}
	cJSON *l = cJSON_CreateArray();
	for (int i = 0; i < o->argc; i++) {
		const struct tool *t = tools_find(o->argv[i]);
		if (o->json) {
			cJSON_AddItemToArray(l, tool_help_json(t));
			continue;
		}
		_cleanup_free_ char *p = tools_params_text(t);
		_cleanup_free_ char *h = tools_help_text(t);
		printf("%s%s(%s)%s\n%s\n", i ? "\n" : "", t->name, p,
		       (t->flags & TOOL_READ_ONLY) ? "" : "  [writes]", h);
	}
	if (o->json)
		print_json(l);
	cJSON_Delete(l);
	return EXIT_OK;
}

static int cmd_tools(const struct opts *o)
{
	/* The same table vaultd serves; no daemon needed to describe it. */
	if (o->argc)
		return tools_help(o);
	if (o->json) {
		cJSON *l = tools_list_json(0);
		print_json(l);
		cJSON_Delete(l);
		return EXIT_OK;
	}
	size_t n;
	const struct tool *t = tools_table(&n);
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *p = tools_params_text(&t[i]);
		printf("%s(%s)%s\n    %s\n", t[i].name, p,
		       (t[i].flags & TOOL_READ_ONLY) ? "" : "  [writes]",
		       t[i].description);
	}
	return EXIT_OK;
}

/* The commands: what each runs, whether it needs a vault, whether it
 * takes arguments after its options. (init is its own program: fs/init.c.) */
static const struct command {
	const char *name;
	int (*run)(const struct opts *o);
	bool needs_vault;
	bool takes_args;
} COMMANDS[] = {
	{"tools", cmd_tools, false, true},
	{"status", cmd_status, true, false},
	{"check", cmd_check, true, false},
	{"tags", cmd_tags, true, false},
	{"violations", cmd_violations, true, false},
	{"call", cmd_call, true, true},
	{"stop", cmd_stop, true, false},
	{"history", cmd_history, true, true},
	{"show", cmd_show, true, true},
	{"notes", cmd_notes, true, true},
	{"changes", cmd_changes, true, false},
	{"undo", cmd_undo, true, false},
};

static const struct option LONGOPTS[] = {
	{"vault", required_argument, NULL, 'v'},
	{"socket", required_argument, NULL, 's'},
	{"json", no_argument, NULL, 'j'},
	{"offline", no_argument, NULL, 'o'},
	{"limit", required_argument, NULL, 'l'},
	{"session", required_argument, NULL, 'S'},
	{"since", required_argument, NULL, 'T'},
	{"dry-run", no_argument, NULL, 'n'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{},
};

/* One option into o: false when it is not one of vaultctl's (or its
 * value is bad, said on stderr). */
static bool take_option(int c, struct opts *o)
{
	switch (c) {
	case 'v':
		o->vault = optarg;
		return true;
	case 's':
		o->socket = optarg;
		return true;
	case 'j':
		o->json = true;
		return true;
	case 'o':
		o->offline = true;
		return true;
	case 'l': {
		unsigned long x;
		_cleanup_free_ char *msg = NULL;
		if (cli_number("--limit", optarg, 0, 1000000, &x, &msg) < 0) {
			fprintf(stderr, "vaultctl: %s\n", msg);
			return false;
		}
		o->limit = (long)x;
		o->limit_set = true;
		return true;
	}
	case 'S':
		o->session = optarg;
		return true;
	case 'T':
		o->since = optarg;
		return true;
	case 'n':
		o->dry_run = true;
		return true;
	default:
		return false;
	}
}

/* The options before the command: -1 to go on, or the exit code. */
static int global_options(int argc, char **argv, struct opts *o)
{
	int c;
	/* "+": stop at the command. */
	while ((c = getopt_long(argc, argv, "+v:s:jh", LONGOPTS, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return EXIT_OK;
		}
		if (c == 'V') {
			puts("vaultctl " VAULTD_VERSION);
			return EXIT_OK;
		}
		if (!take_option(c, o)) {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	return -1;
}

/* The command's options and arguments (in order) after its name: false
 * on a bad one. */
static bool command_options(int argc, char **argv, struct opts *o,
			    struct ptrvec *rest)
{
	int c;
	optind = 0;
	/* "-" first: keep non-options (key=value) in order. */
	while ((c = getopt_long(argc, argv, "-v:s:jh", LONGOPTS, NULL)) != -1) {
		if (c == 1)
			pv_push(rest, optarg);
		else if (c == 'h' || c == 'V' || !take_option(c, o))
			return false;
	}
	for (int i = optind; i < argc; i++)
		pv_push(rest, argv[i]);
	o->argc = (int)rest->n;
	o->argv = (char **)rest->v;
	return true;
}

int main(int argc, char **argv)
{
	struct opts o = {.vault = cli_env_vault(), .limit = 20};
	int r = global_options(argc, argv, &o);
	if (r >= 0)
		return r;
	const char *name = argv[optind];
	int sargc = argc - optind;
	char **sargv = argv + optind;
	if (!strcmp(name, "init"))
		return init_main(sargc, sargv, o.vault);
	const struct command *cmd = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(COMMANDS) && !cmd; i++)
		if (!strcmp(COMMANDS[i].name, name))
			cmd = &COMMANDS[i];
	if (!cmd) {
		fprintf(stderr, "vaultctl: unknown command '%s'\n", name);
		usage(stderr);
		return EXIT_USAGE;
	}
	struct ptrvec rest = {0};
	if (!command_options(sargc, sargv, &o, &rest)) {
		pv_free(&rest);
		usage(stderr);
		return EXIT_USAGE;
	}
	/* need_vault prints its usage error itself. */
	r = cmd->needs_vault ? need_vault(&o) : 0;
	if (!r)
		r = cmd->run(&o);
	if (!r && o.argc && !cmd->takes_args) {
		fprintf(stderr, "vaultctl: unexpected argument '%s'\n",
			o.argv[0]);
		r = EXIT_USAGE;
	}
	pv_free(&rest);
	return r;
}
