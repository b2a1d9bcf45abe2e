/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vault-mcp: the stdio MCP server for Claude Desktop (or any MCP client).
 * A thin client of vaultd: it finds the daemon that owns the vault and,
 * when none is running, starts one (without a mount) the way gpg-agent is
 * started on demand.
 *
 *   OBSIDIAN_VAULT_PATH=DIR vault-mcp [--read-only] [--max-result BYTES]
 *   vault-mcp --vault DIR ...
 *   vault-mcp --vault DIR --vault DIR2 [--allow-root DIR3] ...
 *
 * Several vaults: each keeps its own vaultd and connection (vault_set.c);
 * the default vault is connected here at once, so what cannot serve it is
 * said at startup; the others connect on their own threads.
 *
 * The vaultd it starts is asked to make DIR a vault only with --create:
 * a folder that is not an Obsidian vault is refused (vaultd says why on
 * stderr, which clients keep in their MCP log) rather than filled with
 * vaultd's state because of a wrong path.
 *
 * A vaultd it starts exits by itself after --idle-exit seconds with no
 * client (default 600). At the end of stdin (or "exit"), what is pending
 * gets EXIT_GRACE_MS to be answered; then vault-mcp leaves, and closing
 * its connection cancels whatever vaultd still runs for it.
 *
 * stdout carries MCP messages only; logs go to stderr.
 */
#include "cli.h"
#include "config.h"
#include "ctl_client.h"
#include "log.h"
#include "mcp_session.h"
#include "obsidian.h"
#include "util.h"
#include "vault_set.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>

#define MAX_MESSAGE (32u << 20)
#define EXIT_GRACE_MS 700

struct app {
	struct vault_set *vaults;
	struct mcp_session *session;
	bool stdin_open;
};

static void usage(FILE *f)
{
	fputs("Usage: vault-mcp [--vault DIR]... [--read-only] [--tools WHICH]\n"
	      "                 [--max-result BYTES] [--allow-root DIR]...\n"
	      "\n"
	      "An MCP server on stdin/stdout for the Obsidian vault DIR (or\n"
	      "$OBSIDIAN_VAULT_PATH), served by vaultd, which is started when\n"
	      "it is not running. Several vaults: each has its own vaultd; the\n"
	      "first is the default and tools take a vault argument.\n"
	      "  --vault DIR       a vault (a folder with .obsidian/ in it);\n"
	      "                    repeat it for several; OBSIDIAN_VAULT_PATH\n"
	      "                    may hold several, separated by ':'\n"
	      "  --read-only-vault DIR  a vault served read-only\n"
	      "  --vaults-from-obsidian  the vaults Obsidian knows (its\n"
	      "                    obsidian.json), after those given\n"
	      "  --allow-root DIR  load_vault may load vaults under DIR\n"
	      "                    (repeatable; also VAULT_MCP_ALLOW_ROOTS,\n"
	      "                    ':'-separated); default: none beyond the\n"
	      "                    configured vaults\n"
	      "  --create          let the vaultd started here make DIR a vault\n"
	      "                    if it is not one (also VAULT_MCP_CREATE=1)\n"
	      "  --read-only       offer only the tools that read\n"
	      "                    (also VAULT_MCP_READ_ONLY=1)\n"
	      "  --max-result N    cut tool results longer than N bytes\n"
	      "                    (default 262144; also VAULT_MCP_MAX_RESULT)\n"
	      "  --socket PATH     vaultd's control socket, if not the default\n"
	      "                    (one vault only)\n"
	      "  --idle-exit S     a vaultd started here stops after S seconds\n"
	      "                    without clients (default 600; 0: never;\n"
	      "                    also VAULT_MCP_IDLE_EXIT)\n"
	      "  --tools WHICH     the tools offered: all (the default), core\n"
	      "                    (reading, search, links, the usual edits,\n"
	      "                    tags, frontmatter, rename, delete, help) or\n"
	      "                    a comma list of tool names (also\n"
	      "                    VAULT_MCP_TOOLS)\n"
	      "  -h, --help        this help\n"
	      "  --version         the version\n",
	      f);
}

static void out_line(void *ud, char *line)
{
	size_t n = strlen(line);
	line[n] = '\n'; /* the NUL slot; n + 1 bytes are ours */
	/* The client is gone: nothing left to serve. */
	if (write_full(STDOUT_FILENO, line, n + 1) < 0)
		_exit(0);
	free(line);
}

static long daemon_send(void *ud, size_t vault, const char *method,
			cJSON *params)
{
	struct app *a = ud;
	return vset_send(a->vaults, vault, method, params);
}

static void daemon_cancel(void *ud, size_t vault, long id)
{
	struct app *a = ud;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddNumberToObject(p, "id", (double)id);
	vset_notify(a->vaults, vault, "cancel", p);
}

struct from_daemon {
	struct app *a;
	size_t vault;
};

static void on_daemon(struct rpc_msg *m, void *ud)
{
	struct from_daemon *f = ud;
	mcp_session_daemon_msg(f->a->session, f->vault, m);
}

/* A connect made on a thread finished. */
static void on_connected(void *ud, size_t vault, int r, const char *msg)
{
	struct app *a = ud;
	if (r < 0)
		mcp_session_daemon_lost(a->session, vault, msg);
	else
		mcp_session_start(a->session, vault);
}

/* Each folder of a ':'-separated list. */
static int add_list(struct vault_set *vs, const char *list, bool roots)
{
	_cleanup_free_ char *copy = xstrdup(list);
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		_cleanup_free_ char *msg = NULL;
		int r = roots ? vset_add_root(vs, d, &msg)
			      : vset_add(vs, d, false, &msg);
		if (r < 0) {
			fprintf(stderr, "vault-mcp: %s\n", msg);
			return r;
		}
	}
	return 0;
}

/* The vaults of Obsidian's own list whose folders are there. */
static int add_obsidian(struct vault_set *vs)
{
	struct obsidian_vault *ov = NULL;
	size_t n = 0;
	_cleanup_free_ char *msg = NULL;
	obsidian_vaults(&ov, &n, &msg);
	if (msg)
		log_warn("%s", msg);
	size_t added = 0;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *dot =
			xasprintf("%s/.obsidian", ov[i].path);
		if (access(dot, F_OK) < 0) {
			log_warn("Obsidian's vault %s is not there; skipped",
				 ov[i].path);
			continue;
		}
		_cleanup_free_ char *m = NULL;
		if (vset_add(vs, ov[i].path, false, &m) >= 0)
			added++;
		else
			log_warn("%s", m);
	}
	obsidian_vaults_free(ov, n);
	if (!added) {
		char **regs = obsidian_registries();
		struct sbuf b = {0};
		for (char **r = regs; *r; r++) {
			sb_printf(&b, "%s%s", r == regs ? "" : ", ", *r);
			free(*r);
		}
		free(regs);
		fprintf(stderr,
			"vault-mcp: --vaults-from-obsidian: Obsidian lists "
			"no vault that is there (looked in %s)\n",
			sb_str(&b));
		sb_free(&b);
		return -ENOENT;
	}
	return 0;
}

/* The tools offered: a profile ("all", "core") or a comma list of tool
 * names. A name vaultd does not have is an error (exit 2). */
static int fetch_tools(struct ctl_client *daemon, const char *which,
		       cJSON **ret)
{
	cJSON *res = NULL;
	char *msg = NULL;
	bool list = strcmp(which, "all") && strcmp(which, "core");
	cJSON *params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "profile", list ? "all" : which);
	/* ctl_call takes params. */
	int r = ctl_call(daemon, "tools/list", params, NULL, NULL, &res, &msg);
	if (r) {
		log_error("vaultd tools/list: %s", msg ? msg : strerror(-r));
		free(msg);
		return r < 0 ? r : -EPROTO;
	}
	*ret = cJSON_DetachItemFromObject(res, "tools");
	cJSON_Delete(res);
	if (!*ret)
		return -EPROTO;
	if (!list)
		return 0;
	cJSON *keep = cJSON_CreateArray();
	_cleanup_free_ char *names = xstrdup(which);
	char *save = NULL;
	for (char *n = strtok_r(names, ", ", &save); n;
	     n = strtok_r(NULL, ", ", &save)) {
		cJSON *t, *found = NULL;
		cJSON_ArrayForEach(t, *ret)
		{
			if (!strcmp(cJSON_GetStringValue(
					    cJSON_GetObjectItem(t, "name")),
				    n))
				found = t;
		}
		if (!found && mcp_vault_tool(n))
			continue; /* vault-mcp's own */
		if (!found) {
			struct sbuf b = {0};
			cJSON_ArrayForEach(t, *ret) sb_printf(
				&b, "%s%s", b.len ? ", " : "",
				cJSON_GetStringValue(
					cJSON_GetObjectItem(t, "name")));
			fprintf(stderr,
				"vault-mcp: --tools: no tool named %s; "
				"give core, all or a comma list of: %s\n",
				QUOTE(n), b.s);
			sb_free(&b);
			cJSON_Delete(keep);
			cJSON_Delete(*ret);
			*ret = NULL;
			return -EINVAL;
		}
		bool dup = false;
		cJSON_ArrayForEach(t, keep) dup |= !strcmp(
			cJSON_GetStringValue(cJSON_GetObjectItem(t, "name")),
			n);
		if (!dup)
			cJSON_AddItemToArray(keep, cJSON_Duplicate(found, 1));
	}
	cJSON_Delete(*ret);
	*ret = keep;
	return 0;
}

/* What the command line and the environment ask for. */
struct args {
	struct vset_config vc;
	struct mcp_config cfg;
	const char *tools;
	struct ptrvec given; /* "w" or "r" + a vault's folder, in order */
	struct ptrvec roots; /* --allow-root folders */
	bool from_obsidian;
};

static void args_free(struct args *g)
{
	for (size_t i = 0; i < g->given.n; i++)
		free(g->given.v[i]);
	pv_free(&g->given);
	pv_free(&g->roots);
}

/* --max-result or VAULT_MCP_MAX_RESULT (what, for the message). */
static bool max_result_arg(const char *what, const char *arg, size_t *ret)
{
	unsigned long x;
	_cleanup_free_ char *msg = NULL;
	if (cli_number(what, arg, 0, 1ul << 30, &x, &msg) < 0) {
		fprintf(stderr, "vault-mcp: %s\n", msg);
		return false;
	}
	/* Shorter cuts would leave no room for the hint that follows. */
	*ret = x < 4096 ? 4096 : x;
	return true;
}

/* Defaults, then the environment's settings. */
static bool args_from_env(struct args *g)
{
	*g = (struct args){
		.vc = {.idle_exit = "600"},
		.cfg = {.max_result = 262144},
		.tools = "all",
	};
	const char *v;
	if ((v = cli_env("VAULT_MCP_IDLE_EXIT")))
		g->vc.idle_exit = v;
	if ((v = cli_env("VAULT_MCP_TOOLS")))
		g->tools = v;
	g->cfg.read_only = cli_env_flag("VAULT_MCP_READ_ONLY", false);
	g->vc.create = cli_env_flag("VAULT_MCP_CREATE", false);
	if ((v = cli_env("VAULT_MCP_MAX_RESULT")) &&
	    !max_result_arg("VAULT_MCP_MAX_RESULT", v, &g->cfg.max_result))
		return false;
	return true;
}

/* The command line over the environment: -1 to go on, or the exit
 * code. */
static int parse_args(int argc, char **argv, struct args *g)
{
	static const struct option longopts[] = {
		{"vault", required_argument, NULL, 'v'},
		{"read-only-vault", required_argument, NULL, 'R'},
		{"vaults-from-obsidian", no_argument, NULL, 'O'},
		{"allow-root", required_argument, NULL, 'A'},
		{"socket", required_argument, NULL, 's'},
		{"read-only", no_argument, NULL, 'r'},
		{"max-result", required_argument, NULL, 'm'},
		{"idle-exit", required_argument, NULL, 'i'},
		{"tools", required_argument, NULL, 't'},
		{"create", no_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{},
	};
	if (!args_from_env(g))
		return 2;
	int c;
	while ((c = getopt_long(argc, argv, "v:rh", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
		case 'R':
			pv_push(&g->given,
				xasprintf("%c%s", c == 'v' ? 'w' : 'r',
					  optarg));
			break;
		case 'O':
			g->from_obsidian = true;
			break;
		case 'A':
			pv_push(&g->roots, optarg);
			break;
		case 's':
			g->vc.socket = optarg;
			break;
		case 'r':
			g->cfg.read_only = true;
			break;
		case 'm':
			if (!max_result_arg("--max-result", optarg,
					    &g->cfg.max_result))
				return 2;
			break;
		case 'i':
			g->vc.idle_exit = optarg;
			break;
		case 't':
			g->tools = optarg;
			break;
		case 'c':
			g->vc.create = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			puts("vault-mcp " VAULTD_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	unsigned long idle;
	_cleanup_free_ char *msg = NULL;
	if (cli_number("--idle-exit", g->vc.idle_exit, 0, 86400 * 365, &idle,
		       &msg) < 0) {
		fprintf(stderr, "vault-mcp: %s (seconds)\n", msg);
		return 2;
	}
	return -1;
}

/* The vaults given, from the environment, from Obsidian, and the roots
 * load_vault may load from: 0, or the exit code. */
static int add_vaults(struct vault_set *vs, const struct args *g)
{
	for (size_t i = 0; i < g->given.n; i++) {
		const char *w = g->given.v[i];
		_cleanup_free_ char *msg = NULL;
		if (vset_add(vs, w + 1, *w == 'r', &msg) < 0) {
			fprintf(stderr, "vault-mcp: %s\n", msg);
			return 2;
		}
	}
	const char *env = cli_env_vault();
	if (!g->given.n && env && add_list(vs, env, false))
		return 2;
	if (g->from_obsidian && add_obsidian(vs) < 0)
		return 1;
	const char *er = cli_env("VAULT_MCP_ALLOW_ROOTS");
	if (er && add_list(vs, er, true))
		return 2;
	for (size_t i = 0; i < g->roots.n; i++) {
		_cleanup_free_ char *msg = NULL;
		if (vset_add_root(vs, g->roots.v[i], &msg) < 0) {
			fprintf(stderr, "vault-mcp: %s\n", msg);
			return 2;
		}
	}
	if (!vset_count(vs)) {
		fputs("vault-mcp: OBSIDIAN_VAULT_PATH not set: put the vault's "
		      "folder in the server's env (or pass --vault DIR, or "
		      "--vaults-from-obsidian); vaultctl init writes this for "
		      "each MCP client\n",
		      stderr);
		return 1;
	}
	if (g->vc.socket && vset_count(vs) > 1) {
		fputs("vault-mcp: --socket names one vault's daemon; it "
		      "cannot serve several vaults\n",
		      stderr);
		return 2;
	}
	return 0;
}

/* Lines read from stdin into the session; false at its end. */
static bool read_stdin(struct app *a, struct linebuf *in)
{
	char buf[65536];
	ssize_t r = read(STDIN_FILENO, buf, sizeof(buf));
	if (r < 0 && errno == EINTR)
		return true;
	if (r <= 0) {
		/* EOF: answer what is pending, then exit. */
		a->stdin_open = false;
		mcp_session_shutdown(a->session);
		return false;
	}
	lb_append(in, buf, (size_t)r);
	size_t len;
	char *line;
	while ((line = lb_next(in, &len)))
		if (len)
			mcp_session_input(a->session, line, len);
	if (in->too_long) {
		/* Say so once, drop the rest of that line and go on with
		 * the next one. */
		out_line(NULL, rpc_error_line(NULL, RPC_INVALID_REQUEST,
					      "Invalid Request: message too "
					      "long (limit 32 MiB)",
					      NULL));
		lb_skip_line(in);
	}
	return true;
}

/* A daemon's messages; a lost one reconnected: false when the only
 * vault's daemon cannot be had again. */
static bool pump_daemon(struct app *a, size_t i)
{
	struct from_daemon f = {.a = a, .vault = i};
	if (vset_pump(a->vaults, i, on_daemon, &f) >= 0)
		return true;
	log_warn("lost the connection to vaultd of %s; reconnecting",
		 vset_path(a->vaults, i));
	mcp_session_daemon_lost(a->session, i, NULL);
	if (vset_multi(a->vaults)) {
		/* On its thread; calls meanwhile wait. */
		vset_start(a->vaults, i);
		return true;
	}
	if (vset_connect(a->vaults, i, true) < 0)
		return false;
	mcp_session_start(a->session, i);
	return true;
}

/* stdin and the daemons until the session is done. */
static void serve(struct app *a)
{
	struct linebuf in;
	lb_init(&in, MAX_MESSAGE);
	uint64_t leaving = 0; /* when stdin ended or "exit" came */
	while (!mcp_session_done(a->session)) {
		if (mcp_session_shutting_down(a->session)) {
			uint64_t now = now_ns();
			if (!leaving)
				leaving = now;
			else if (now - leaving >= EXIT_GRACE_MS * 1000000ull)
				break; /* the rest is cancelled by closing */
		}
		struct pollfd pfd[VSET_MAX + 2];
		size_t nv = vset_count(a->vaults);
		pfd[0] =
			(struct pollfd){.fd = a->stdin_open ? STDIN_FILENO : -1,
					.events = POLLIN};
		pfd[1] = (struct pollfd){.fd = vset_wake_fd(a->vaults),
					 .events = POLLIN};
		for (size_t i = 0; i < nv; i++)
			pfd[i + 2] = (struct pollfd){
				.fd = vset_fd(a->vaults, i), .events = POLLIN};
		int n = poll(pfd, nv + 2, leaving ? 50 : 250);
		if (n < 0 && errno != EINTR)
			break;
		bool gone = false;
		for (size_t i = 0; i < nv && n > 0 && !gone; i++)
			gone = pfd[i + 2].revents && !pump_daemon(a, i);
		if (gone)
			break;
		if (pfd[1].revents)
			vset_collect(a->vaults, on_connected, a);
		if (pfd[0].revents)
			read_stdin(a, &in);
		mcp_session_tick(a->session);
	}
	lb_free(&in);
}

int main(int argc, char **argv)
{
	struct args g;
	int rc = parse_args(argc, argv, &g);
	if (rc >= 0) {
		args_free(&g);
		return rc;
	}
	log_init("vault-mcp");
	signal(SIGPIPE, SIG_IGN);
	struct app a = {.stdin_open = true, .vaults = vset_new(&g.vc)};
	rc = add_vaults(a.vaults, &g);
	args_free(&g);
	/* The default vault at once: what cannot serve it is said here. */
	if (!rc && vset_connect(a.vaults, 0, true) < 0)
		rc = 1;
	int tr = rc ? 0
		    : fetch_tools(vset_client(a.vaults, 0), g.tools,
				  &g.cfg.tools);
	if (tr < 0)
		rc = tr == -EINVAL ? 2 : 1;
	if (rc) {
		vset_free(a.vaults);
		return rc;
	}
	g.cfg.vaults = a.vaults;
	if (strcmp(g.tools, "all") && strcmp(g.tools, "core"))
		g.cfg.only = g.tools;
	struct mcp_io io = {.out = out_line,
			    .daemon_send = daemon_send,
			    .daemon_cancel = daemon_cancel,
			    .ud = &a};
	a.session = mcp_session_new(&g.cfg, &io);
	mcp_session_start(a.session, 0);
	/* The others come on their own threads. */
	for (size_t i = 1; i < vset_count(a.vaults); i++)
		vset_start(a.vaults, i);
	serve(&a);
	mcp_session_free(a.session);
	vset_free(a.vaults);
	return 0;
}
