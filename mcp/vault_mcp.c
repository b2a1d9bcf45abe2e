/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vault-mcp: the stdio MCP server for Claude Desktop (or any MCP client).
 * A thin client of vaultd: it finds the daemon that owns the vault and,
 * when none is running, starts one (without a mount) the way gpg-agent is
 * started on demand.
 *
 *   OBSIDIAN_VAULT_PATH=DIR vault-mcp [--read-only] [--max-result BYTES]
 *   vault-mcp --vault DIR ...
 *
 * A vaultd it starts exits by itself after --idle-exit seconds with no
 * client (default 600). At the end of stdin (or "exit"), what is pending
 * gets EXIT_GRACE_MS to be answered; then vault-mcp leaves, and closing
 * its connection cancels whatever vaultd still runs for it.
 *
 * stdout carries MCP messages only; logs go to stderr.
 */
#include "config.h"
#include "ctl_client.h"
#include "log.h"
#include "mcp_session.h"
#include "runtime.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#define MAX_MESSAGE (32u << 20)
#define EXIT_GRACE_MS 700

struct app {
	const char *vault;
	const char *socket;
	struct ctl_client *daemon;
	struct mcp_session *session;
	bool stdin_open;
	const char *idle_exit;
};

static void usage(FILE *f)
{
	fputs("Usage: vault-mcp [--vault DIR] [--read-only] [--tools WHICH]\n"
	      "                 [--max-result BYTES]\n"
	      "\n"
	      "An MCP server on stdin/stdout for the Obsidian vault DIR (or\n"
	      "$OBSIDIAN_VAULT_PATH), served by vaultd, which is started when\n"
	      "it is not running.\n"
	      "  --read-only       offer only the tools that read\n"
	      "                    (also VAULT_MCP_READ_ONLY=1)\n"
	      "  --max-result N    cut tool results longer than N bytes\n"
	      "                    (default 262144)\n"
	      "  --socket PATH     vaultd's control socket, if not the default\n"
	      "  --idle-exit S     a vaultd started here stops after S seconds\n"
	      "                    without clients (default 600; 0: never;\n"
	      "                    also VAULT_MCP_IDLE_EXIT)\n"
	      "  --tools WHICH     the tools offered: all (the default), core\n"
	      "                    (reading, search, links, the usual edits,\n"
	      "                    tags, frontmatter, rename, delete, help) or\n"
	      "                    a comma list of tool names (also\n"
	      "                    VAULT_MCP_TOOLS)\n",
	      f);
}

/* vaultd next to this program (installed or in the build tree). */
static char *vaultd_path(void)
{
	const char *env = getenv("VAULTD_BIN");
	if (env && *env)
		return xstrdup(env);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			const char *cands[] = {"%s/vaultd", "%s/../fs/vaultd"};
			for (size_t i = 0; i < ARRAY_SIZE(cands); i++) {
				char *p = xasprintf(cands[i], self);
				if (access(p, X_OK) == 0)
					return p;
				free(p);
			}
		}
	}
	return xstrdup("vaultd");
}

/* Start `vaultd --no-mount --vault DIR`; it returns once it listens. */
static int start_daemon(const char *vault, const char *socket,
			const char *idle_exit)
{
	_cleanup_free_ char *bin = vaultd_path();
	log_info("starting %s for %s", bin, vault);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* Never let the daemon touch our stdout (MCP messages). */
		dup2(STDERR_FILENO, STDOUT_FILENO);
		if (socket)
			execlp(bin, bin, "--no-mount", "--idle-exit", idle_exit,
			       "--vault", vault, "--socket", socket,
			       (char *)NULL);
		else
			execlp(bin, bin, "--no-mount", "--idle-exit", idle_exit,
			       "--vault", vault, (char *)NULL);
		fprintf(stderr, "vault-mcp: cannot run %s: %s\n", bin,
			strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int connect_daemon(struct app *a, bool autostart)
{
	_cleanup_free_ char *path = NULL;
	if (a->socket) {
		path = xstrdup(a->socket);
	} else {
		const char *why;
		int r = socket_path_for(a->vault, &path, &why);
		if (r < 0) {
			log_error("%s: %s", why, a->vault);
			return r;
		}
	}
	int r = ctl_connect(path, &a->daemon);
	if (r == 0 || !autostart)
		return r;
	/* Another vault-mcp may be starting it at the same moment, or the
	 * last one may still be on its way out (it holds the vault until it
	 * has closed everything): try again until one answers. */
	for (int i = 0; i < 300; i++) {
		if (i % 20 == 0) {
			int rc =
				start_daemon(a->vault, a->socket, a->idle_exit);
			if (rc != 0)
				log_warn("vaultd exited with %d (another one "
					 "may be starting or stopping)",
					 rc);
		}
		r = ctl_connect(path, &a->daemon);
		if (r == 0)
			return 0;
		usleep(50000);
	}
	log_error("cannot reach vaultd at %s: %s", path, strerror(-r));
	return r;
}

static void write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			/* The client is gone: nothing left to serve. */
			_exit(0);
		}
		s += w;
		n -= (size_t)w;
	}
}

static void out_line(void *ud, char *line)
{
	size_t n = strlen(line);
	line[n] = '\n'; /* the NUL slot; n + 1 bytes are ours */
	write_all(STDOUT_FILENO, line, n + 1);
	free(line);
}

static long daemon_send(void *ud, const char *method, cJSON *params)
{
	struct app *a = ud;
	if (!a->daemon) {
		cJSON_Delete(params);
		return -ENOTCONN;
	}
	return ctl_send(a->daemon, method, params);
}

static void daemon_cancel(void *ud, long id)
{
	struct app *a = ud;
	if (!a->daemon)
		return;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddNumberToObject(p, "id", (double)id);
	ctl_notify(a->daemon, "cancel", p);
}

static void on_daemon(struct rpc_msg *m, void *ud)
{
	struct app *a = ud;
	mcp_session_daemon_msg(a->session, m);
}

/* The tools offered: a profile ("all", "core") or a comma list of tool
 * names. A name vaultd does not have is an error (exit 2). */
static int fetch_tools(struct app *a, const char *which, cJSON **ret)
{
	cJSON *res = NULL;
	char *msg = NULL;
	bool list = strcmp(which, "all") && strcmp(which, "core");
	cJSON *params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "profile", list ? "all" : which);
	/* ctl_call takes params. */
	int r = ctl_call(a->daemon, "tools/list", params, NULL, NULL, &res,
			 &msg);
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

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"vault", required_argument, NULL, 'v'},
		{"socket", required_argument, NULL, 's'},
		{"read-only", no_argument, NULL, 'r'},
		{"max-result", required_argument, NULL, 'm'},
		{"idle-exit", required_argument, NULL, 'i'},
		{"tools", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{},
	};
	struct app a = {.stdin_open = true, .idle_exit = "600"};
	const char *ie = getenv("VAULT_MCP_IDLE_EXIT");
	if (ie && *ie)
		a.idle_exit = ie;
	struct mcp_config cfg = {.max_result = 262144};
	const char *tools = getenv("VAULT_MCP_TOOLS");
	if (!tools || !*tools)
		tools = "all";
	const char *ro = getenv("VAULT_MCP_READ_ONLY");
	cfg.read_only = ro && *ro && strcmp(ro, "0") != 0;
	const char *mr = getenv("VAULT_MCP_MAX_RESULT");
	if (mr && *mr)
		cfg.max_result = strtoul(mr, NULL, 10);
	int c;
	while ((c = getopt_long(argc, argv, "v:rh", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			a.vault = optarg;
			break;
		case 's':
			a.socket = optarg;
			break;
		case 'r':
			cfg.read_only = true;
			break;
		case 'm':
			cfg.max_result = strtoul(optarg, NULL, 10);
			break;
		case 'i':
			a.idle_exit = optarg;
			break;
		case 't':
			tools = optarg;
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
	char *end;
	errno = 0;
	unsigned long idle = strtoul(a.idle_exit, &end, 10);
	if (errno || *end || end == a.idle_exit || idle > 86400 * 365) {
		fprintf(stderr,
			"vault-mcp: --idle-exit wants seconds, not '%s'\n",
			a.idle_exit);
		return 2;
	}
	if (cfg.max_result < 4096)
		cfg.max_result = 4096;
	if (!a.vault)
		a.vault = getenv("OBSIDIAN_VAULT_PATH");
	if (!a.vault || !*a.vault) {
		fputs("OBSIDIAN_VAULT_PATH not set\n", stderr);
		return 1;
	}
	log_init("vault-mcp");
	signal(SIGPIPE, SIG_IGN);
	if (connect_daemon(&a, true) < 0)
		return 1;
	int tr = fetch_tools(&a, tools, &cfg.tools);
	if (tr < 0)
		return tr == -EINVAL ? 2 : 1;
	cfg.vault = a.vault;
	struct mcp_io io = {.out = out_line,
			    .daemon_send = daemon_send,
			    .daemon_cancel = daemon_cancel,
			    .ud = &a};
	a.session = mcp_session_new(&cfg, &io);
	mcp_session_start(a.session);

	struct linebuf in;
	lb_init(&in, MAX_MESSAGE);
	char buf[65536];
	uint64_t leaving = 0; /* when stdin ended or "exit" came */
	while (!mcp_session_done(a.session)) {
		if (mcp_session_shutting_down(a.session)) {
			uint64_t now = now_ns();
			if (!leaving)
				leaving = now;
			else if (now - leaving >= EXIT_GRACE_MS * 1000000ull)
				break; /* the rest is cancelled by closing */
		}
		struct pollfd pfd[2] = {
			{.fd = a.stdin_open ? STDIN_FILENO : -1,
			 .events = POLLIN},
			{.fd = a.daemon ? ctl_fd(a.daemon) : -1,
			 .events = POLLIN},
		};
		int n = poll(pfd, 2, leaving ? 50 : 250);
		if (n < 0 && errno != EINTR)
			break;
		if (pfd[1].revents) {
			if (ctl_pump(a.daemon, false, on_daemon, &a) < 0) {
				log_warn("lost the connection to vaultd; "
					 "reconnecting");
				a.daemon = ctl_close(a.daemon);
				mcp_session_daemon_lost(a.session);
				if (connect_daemon(&a, true) < 0)
					break;
				mcp_session_start(a.session);
			}
		}
		if (pfd[0].revents) {
			ssize_t r = read(STDIN_FILENO, buf, sizeof(buf));
			if (r <= 0) {
				if (r < 0 && errno == EINTR)
					continue;
				/* EOF: answer what is pending, then exit. */
				a.stdin_open = false;
				mcp_session_shutdown(a.session);
			} else {
				lb_append(&in, buf, (size_t)r);
				size_t len;
				char *line;
				while ((line = lb_next(&in, &len)))
					if (len)
						mcp_session_input(a.session,
								  line, len);
				if (in.too_long) {
					/* Say so once, drop the rest of that
					 * line and go on with the next one. */
					out_line(
						NULL,
						rpc_error_line(
							NULL,
							RPC_INVALID_REQUEST,
							"Invalid Request: message too long (limit 32 MiB)",
							NULL));
					lb_skip_line(&in);
				}
			}
		}
		mcp_session_tick(a.session);
	}
	lb_free(&in);
	mcp_session_free(a.session);
	ctl_close(a.daemon);
	return 0;
}
