/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "init.h"
#include "fileio.h"
#include "fuseconn.h"
#include "mcpconf.h"
#include "obsidian.h"
#include "runtime.h"
#include "util.h"
#include "vault.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

enum { INIT_OK = 0, INIT_FAILED = 1, INIT_USAGE = 2 };

#define DEFAULT_NAME "obsidian-vault"

struct init {
	const char *vault_arg;
	char *vault; /* absolute, real */
	char *mcp;   /* vault-mcp, absolute */
	const char *name;
	const char *mount;
	bool write;
	bool create;
	int changed;	       /* files written */
	struct ptrvec clients; /* const struct mcpconf_client * */
	struct ptrvec configs; /* --config PATH */
};

static void init_usage(FILE *f)
{
	fputs("Usage: vaultctl init [--vault DIR] [--client NAME]... "
	      "[--config PATH]...\n"
	      "                     [--name NAME] [--mount DIR] [--create] "
	      "[--write]\n"
	      "\n"
	      "Connect a vault to MCP clients: print (or with --write, merge\n"
	      "into) each client's configuration the vault-mcp entry, with\n"
	      "absolute paths. The vault is --vault DIR, else the one open\n"
	      "last in Obsidian (its list of vaults, also Flatpak and Snap).\n"
	      "\n"
	      "  --vault DIR     the vault (a folder with .obsidian/ in it)\n"
	      "  --client NAME   one of the clients below; may be repeated\n"
	      "                  (default: all but vscode-workspace; with\n"
	      "                  --write, those installed here)\n"
	      "  --config PATH   also this config file (any client; the key is\n"
	      "                  \"servers\" for VS Code files, else "
	      "\"mcpServers\")\n"
	      "  --name NAME     the server's name (default " DEFAULT_NAME ")\n"
	      "  --mount DIR     also run vaultd as a systemd user service\n"
	      "                  with the guarded mount at DIR\n"
	      "  --create        make the folder an Obsidian vault if it is "
	      "not\n"
	      "  --write         change the files (a backup of each is kept\n"
	      "                  as FILE.bak-TIME) and enable the service;\n"
	      "                  without it, print what to do\n"
	      "  -h, --help      this help\n"
	      "\n",
	      f);
	size_t n;
	const struct mcpconf_client *c = mcpconf_clients(&n);
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *p = c[i].path();
		fprintf(f, "  %-18s %s: %s\n", c[i].id, c[i].label,
			p ? p : "(no HOME)");
	}
	fputs("Clients:", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s", c[i].id);
	fputc('\n', f);
}

/* vault-mcp beside this vaultctl: installed, or in the build tree. */
static char *find_vault_mcp(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = 0;
	char *dir = dirname(self);
	static const char *const cands[] = {"%s/vault-mcp",
					    "%s/../mcp/vault-mcp"};
	for (size_t i = 0; i < ARRAY_SIZE(cands); i++) {
		_cleanup_free_ char *p = xasprintf(cands[i], dir);
		char real[PATH_MAX];
		if (access(p, X_OK) == 0 && realpath(p, real))
			return xstrdup(real);
	}
	return NULL;
}

/* The vault: given, or the one Obsidian had open last. */
static int pick_vault(struct init *in)
{
	const char *v = in->vault_arg;
	_cleanup_free_ char *from_list = NULL;
	if (!v || !*v) {
		struct obsidian_vault *vs = NULL;
		size_t n = 0;
		_cleanup_free_ char *msg = NULL;
		obsidian_vaults(&vs, &n, &msg);
		if (msg)
			fprintf(stderr, "vaultctl: %s\n", msg);
		if (!n) {
			char **regs = obsidian_registries();
			fputs("vaultctl: no vault given, and Obsidian lists none "
			      "(looked in:\n",
			      stderr);
			for (char **r = regs; *r; r++)
				fprintf(stderr, "  %s\n", *r);
			fputs(")\nGive the vault's folder: vaultctl init "
			      "--vault DIR\n",
			      stderr);
			strv_free(regs);
			obsidian_vaults_free(vs, n);
			return INIT_USAGE;
		}
		from_list = xstrdup(vs[0].path);
		printf("Vault: %s (%s in Obsidian)\n", from_list,
		       vs[0].open ? "open" : "opened last");
		for (size_t i = 1; i < n; i++)
			printf("  also known to Obsidian: %s (--vault to "
			       "choose it)\n",
			       vs[i].path);
		obsidian_vaults_free(vs, n);
		v = from_list;
	}
	int r = vault_probe(v);
	if (r < 0 && in->create && (r == -ENOENT || r == -EMEDIUMTYPE)) {
		r = vault_make_obsidian(v);
		if (r == 0)
			printf("Made %s an Obsidian vault (created .obsidian/)"
			       "\n",
			       v);
	}
	if (r == -EMEDIUMTYPE) {
		fprintf(stderr,
			"vaultctl: %s is not an Obsidian vault (no .obsidian/ "
			"folder): open it as a vault in Obsidian once, or add "
			"--create to make it one\n",
			v);
		return INIT_USAGE;
	}
	if (r < 0) {
		fprintf(stderr, "vaultctl: the vault folder %s: %s%s\n", v,
			strerror(-r),
			r == -ENOENT ? " (check the path, or add --create to "
				       "start a new vault there)"
				     : "");
		return INIT_USAGE;
	}
	char real[PATH_MAX];
	if (!realpath(v, real)) {
		fprintf(stderr, "vaultctl: %s: %s\n", v, strerror(errno));
		return INIT_USAGE;
	}
	in->vault = xstrdup(real);
	return INIT_OK;
}

/* 'text' for a shell, quoted only when it needs to be. */
static void shell_word(struct sbuf *b, const char *s)
{
	bool plain = *s != 0;
	for (const char *p = s; *p && plain; p++)
		plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
			       "WXYZ0123456789/._-=+:,@%",
			       *p) != NULL;
	if (plain) {
		sb_puts(b, s);
		return;
	}
	sb_putc(b, '\'');
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			sb_puts(b, "'\\''");
		else
			sb_putc(b, *p);
	}
	sb_putc(b, '\'');
}

/* Claude Code's own way to add it. */
static char *claude_mcp_add(const struct mcpconf_entry *e)
{
	struct sbuf b = {0};
	sb_puts(&b, "claude mcp add --scope user --transport stdio --env ");
	_cleanup_free_ char *env =
		xasprintf("OBSIDIAN_VAULT_PATH=%s", e->vault);
	shell_word(&b, env);
	sb_putc(&b, ' ');
	shell_word(&b, e->name);
	sb_puts(&b, " -- ");
	shell_word(&b, e->command);
	return sb_steal(&b);
}

static bool exists(const char *p)
{
	struct stat st;
	return p && lstat(p, &st) == 0;
}

/* One client's file: printed, or patched. 0 or 1 (failed). */
static int one_config(struct init *in, const char *label, const char *path,
		      const char *key, bool typed, bool is_claude_code)
{
	struct mcpconf_entry e = {
		.name = in->name,
		.command = in->mcp,
		.vault = in->vault,
		.typed = typed,
	};
	printf("\n== %s: %s\n", label, path);
	if (in->write) {
		bool changed = false;
		_cleanup_free_ char *backup = NULL, *msg = NULL;
		int r = mcpconf_patch(path, key, &e, &changed, &backup, &msg);
		if (r < 0) {
			fprintf(stderr, "vaultctl: %s: %s\n", path, msg);
			if (r == -EBADMSG || r == -EEXIST) {
				_cleanup_free_ char *s =
					mcpconf_snippet(key, &e);
				printf("The entry to add:\n%s", s);
			}
			return INIT_FAILED;
		}
		in->changed += changed;
		if (!changed)
			printf("Already set up: nothing changed.\n");
		else if (backup)
			printf("Added \"%s\" (the old file is kept as %s).\n",
			       in->name, backup);
		else
			printf("Created it with \"%s\".\n", in->name);
		return INIT_OK;
	}
	/* Say how it stands, without changing anything. */
	FILE *f = fopen(path, "re");
	if (f) {
		struct sbuf b = {0};
		char buf[65536];
		size_t n;
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			sb_add(&b, buf, n);
		fclose(f);
		sb_putc(&b, 0);
		_cleanup_free_ char *text = NULL, *msg = NULL;
		bool changed = false;
		int r = mcpconf_merge(b.s, key, &e, &text, &changed, &msg);
		sb_free(&b);
		if (r < 0)
			printf("(cannot be merged as it is: %s)\n", msg);
		else if (!changed)
			printf("(already set up)\n");
	}
	_cleanup_free_ char *s = mcpconf_snippet(key, &e);
	printf("Merge into it (vaultctl init --write does):\n%s", s);
	if (is_claude_code) {
		_cleanup_free_ char *cmd = claude_mcp_add(&e);
		printf("or run:\n  %s\n", cmd);
	}
	return INIT_OK;
}

static int run_clients(struct init *in)
{
	int rc = INIT_OK;
	for (size_t i = 0; i < in->clients.n; i++) {
		const struct mcpconf_client *c = in->clients.v[i];
		_cleanup_free_ char *path = c->path();
		if (!path) {
			fprintf(stderr,
				"vaultctl: %s: cannot tell where its "
				"configuration is (is HOME set?)\n",
				c->label);
			rc = INIT_FAILED;
			continue;
		}
		if (one_config(in, c->label, path, c->key, c->typed,
			       !strcmp(c->id, "claude-code")))
			rc = INIT_FAILED;
	}
	for (size_t i = 0; i < in->configs.n; i++) {
		const char *path = in->configs.v[i];
		FILE *f = fopen(path, "re");
		struct sbuf b = {0};
		if (f) {
			char buf[65536];
			size_t n;
			while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
				sb_add(&b, buf, n);
			fclose(f);
		}
		sb_putc(&b, 0);
		const char *key = mcpconf_guess_key(path, b.s);
		sb_free(&b);
		if (one_config(in, "MCP client", path, key,
			       !strcmp(key, "servers"), false))
			rc = INIT_FAILED;
	}
	return rc;
}

/* Run argv (found in PATH); stdout into *ret_out when asked. Exit code,
 * or -errno when it cannot run. */
static int run(char *const argv[], char **ret_out)
{
	int p[2] = {-1, -1};
	if (ret_out && pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (ret_out)
			dup2(p[1], STDOUT_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (ret_out) {
		close(p[1]);
		struct sbuf b = {0};
		char buf[4096];
		ssize_t n;
		while ((n = read(p[0], buf, sizeof(buf))) > 0 ||
		       (n < 0 && errno == EINTR))
			if (n > 0)
				sb_add(&b, buf, (size_t)n);
		close(p[0]);
		sb_putc(&b, 0);
		*ret_out = sb_steal(&b);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A value in a systemd EnvironmentFile: double quotes, \ and " escaped. */
static void env_value(struct sbuf *b, const char *s)
{
	sb_putc(b, '"');
	for (const char *p = s; *p; p++) {
		if (*p == '"' || *p == '\\')
			sb_putc(b, '\\');
		sb_putc(b, *p);
	}
	sb_putc(b, '"');
}

/* The env file with VAULTD_MOUNT set; its other lines are kept. */
static char *env_file_text(const char *old, const char *mount)
{
	struct sbuf b = {0};
	bool set = false;
	for (const char *p = old; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len >= 13 && !strncmp(p, "VAULTD_MOUNT=", 13)) {
			if (!set) {
				sb_puts(&b, "VAULTD_MOUNT=");
				env_value(&b, mount);
				sb_putc(&b, '\n');
				set = true;
			}
		} else {
			sb_add(&b, p, len);
			sb_putc(&b, '\n');
		}
		p += len + (nl ? 1 : 0);
	}
	if (!set) {
		sb_puts(&b, "VAULTD_MOUNT=");
		env_value(&b, mount);
		sb_putc(&b, '\n');
	}
	return sb_steal(&b);
}

static char *absolute(const char *p)
{
	char cwd[PATH_MAX];
	if (*p == '/' || !getcwd(cwd, sizeof(cwd)))
		return xstrdup(p);
	return xasprintf("%s/%s", cwd, p);
}

/* The user's configuration folder for vaultd, or NULL. */
static char *config_dir(void)
{
	const char *x = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	return x && *x == '/'  ? xasprintf("%s/vaultd", x)
	       : home && *home ? xasprintf("%s/.config/vaultd", home)
			       : NULL;
}

/* What --mount sets up: the unit's instance, its env file, the mount. */
struct mount_plan {
	char *mount; /* absolute */
	char *inst;  /* systemd-escape'd vault path */
	char *cfg;   /* the configuration folder */
	char *envfile, *unit;
	char *text; /* the env file's text */
	bool same;  /* the env file already says so */
};

static void mount_plan_free(struct mount_plan *p)
{
	free(p->mount);
	free(p->inst);
	free(p->cfg);
	free(p->envfile);
	free(p->unit);
	free(p->text);
}

static int mount_plan(struct init *in, struct mount_plan *p)
{
	p->mount = absolute(in->mount);
	char *esc_argv[] = {"systemd-escape", "--path", in->vault, NULL};
	int r = run(esc_argv, &p->inst);
	if (r != 0) {
		fprintf(stderr,
			"vaultctl: systemd-escape is needed to name the "
			"service (%s): install systemd, or run vaultd "
			"--vault %s --mount %s yourself\n",
			r < 0 ? strerror(-r) : "it failed", in->vault,
			p->mount);
		return INIT_FAILED;
	}
	p->inst[strcspn(p->inst, "\n")] = 0;
	p->cfg = config_dir();
	if (!p->cfg) {
		fputs("vaultctl: neither XDG_CONFIG_HOME nor HOME is set\n",
		      stderr);
		return INIT_FAILED;
	}
	p->envfile = xasprintf("%s/%s.env", p->cfg, p->inst);
	p->unit = xasprintf("vaultd@%s", p->inst);
	_cleanup_free_ char *old = NULL;
	_cleanup_close_ int d = open(p->cfg, O_PATH | O_DIRECTORY | O_CLOEXEC);
	size_t len;
	_cleanup_free_ char *base = xasprintf("%s.env", p->inst);
	if (d >= 0 && file_read(d, base, 1 << 20, &old, &len, NULL) < 0)
		old = NULL;
	p->text = env_file_text(old, p->mount);
	p->same = old && !strcmp(old, p->text);
	return INIT_OK;
}

/* The mount point made if missing, refused if it cannot be one (unless
 * it already is this vault's mount). */
static int mount_point_ready(struct init *in, const char *mount)
{
	int r = mkdir_p(mount, 0777);
	if (r < 0) {
		fprintf(stderr,
			"vaultctl: cannot create the mount point %s: %s\n",
			mount, strerror(-r));
		return INIT_FAILED;
	}
	char real[PATH_MAX];
	struct fuseconn fc;
	bool mounted = realpath(mount, real) &&
		       fuseconn_find(real, "fuse.vaultd", NULL, &fc) == 0;
	_cleanup_free_ char *msg = NULL;
	if (!mounted && mount_point_check(in->vault, mount, &msg) < 0) {
		fprintf(stderr, "vaultctl: %s\n", msg);
		return INIT_FAILED;
	}
	return INIT_OK;
}

static int write_env_file(struct init *in, const struct mount_plan *p)
{
	if (p->same) {
		printf("%s is already so.\n", p->envfile);
		return INIT_OK;
	}
	_cleanup_free_ char *base = xasprintf("%s.env", p->inst);
	int r = mkdir_p(p->cfg, 0700);
	_cleanup_close_ int d =
		r < 0 ? -1 : open(p->cfg, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r == 0 && d < 0)
		r = -errno;
	if (r == 0)
		r = file_write_atomic(d, base, p->text, strlen(p->text), 0,
				      NULL);
	if (r < 0) {
		fprintf(stderr, "vaultctl: cannot write %s: %s\n", p->envfile,
			strerror(-r));
		return INIT_FAILED;
	}
	printf("Wrote %s\n", p->envfile);
	in->changed++;
	return INIT_OK;
}

/* --mount: the env file the unit reads, and the unit enabled. */
static int setup_mount(struct init *in)
{
	struct mount_plan p = {0};
	int rc = mount_plan(in, &p);
	if (rc)
		goto out;
	printf("\n== The guarded mount: systemd user service %s\n", p.unit);
	if (!in->write) {
		printf("%s%s:\n%s", p.envfile,
		       p.same ? " (already so)"
			      : " (vaultctl init --write writes it)",
		       p.text);
		printf("then:\n  mkdir -p %s\n  systemctl --user enable --now "
		       "%s\n",
		       p.mount, p.unit);
		printf("and open %s in Obsidian (Open folder as vault) "
		       "instead of %s.\n",
		       p.mount, in->vault);
		goto out;
	}
	rc = mount_point_ready(in, p.mount);
	if (!rc)
		rc = write_env_file(in, &p);
	if (rc)
		goto out;
	char *en_argv[] = {"systemctl", "--user", "enable",
			   "--now",	p.unit,	  NULL};
	int r = run(en_argv, NULL);
	if (r != 0) {
		fprintf(stderr,
			"vaultctl: systemctl --user enable --now %s %s; with "
			"no user session manager, run vaultd --vault %s "
			"--mount %s yourself\n",
			p.unit, r < 0 ? "cannot run" : "failed", in->vault,
			p.mount);
		rc = INIT_FAILED;
		goto out;
	}
	printf("Enabled and started %s (systemctl --user status %s).\n"
	       "Open %s in Obsidian (Open folder as vault) instead of %s.\n",
	       p.unit, p.unit, p.mount, in->vault);
out:
	mount_plan_free(&p);
	return rc;
}

/* --client NAME: false (said) when no client has that name. */
static bool add_client(struct init *in, const char *id)
{
	const struct mcpconf_client *cl = mcpconf_client_find(id);
	if (cl) {
		pv_push(&in->clients, (void *)cl);
		return true;
	}
	size_t n;
	const struct mcpconf_client *all = mcpconf_clients(&n);
	fprintf(stderr, "vaultctl: unknown client '%s' (known:", id);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %s", all[i].id);
	fputs("; or --config PATH)\n", stderr);
	return false;
}

/* init's options: -1 to go on, or the exit code. */
static int init_options(int argc, char **argv, struct init *in)
{
	static const struct option longopts[] = {
		{"vault", required_argument, NULL, 'v'},
		{"client", required_argument, NULL, 'c'},
		{"config", required_argument, NULL, 'C'},
		{"name", required_argument, NULL, 'n'},
		{"mount", required_argument, NULL, 'm'},
		{"create", no_argument, NULL, 'k'},
		{"write", no_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "v:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			in->vault_arg = optarg;
			break;
		case 'c':
			if (!add_client(in, optarg))
				return INIT_USAGE;
			break;
		case 'C':
			pv_push(&in->configs, optarg);
			break;
		case 'n':
			in->name = optarg;
			break;
		case 'm':
			in->mount = optarg;
			break;
		case 'k':
			in->create = true;
			break;
		case 'w':
			in->write = true;
			break;
		case 'h':
			init_usage(stdout);
			return INIT_OK;
		default:
			init_usage(stderr);
			return INIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vaultctl: init: unexpected argument '%s'\n",
			argv[optind]);
		return INIT_USAGE;
	}
	if (!*in->name) {
		fputs("vaultctl: --name needs a name\n", stderr);
		return INIT_USAGE;
	}
	return -1;
}

/* No client named: every one installed here (with --write), or every
 * one (to show what would be written). */
static void default_clients(struct init *in)
{
	size_t n;
	const struct mcpconf_client *all = mcpconf_clients(&n);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(all[i].id, "vscode-workspace"))
			continue;
		_cleanup_free_ char *h = all[i].home();
		if (in->write && !exists(h)) {
			printf("\n== %s: not installed here (no %s): skipped "
			       "(--client %s to write it anyway)\n",
			       all[i].label, h ? h : "HOME", all[i].id);
			continue;
		}
		pv_push(&in->clients, (void *)&all[i]);
	}
}

int init_main(int argc, char **argv, const char *vault)
{
	struct init in = {.vault_arg = vault, .name = DEFAULT_NAME};
	int rc = init_options(argc, argv, &in);
	if (rc >= 0)
		goto out;
	in.mcp = find_vault_mcp();
	if (!in.mcp) {
		fputs("vaultctl: vault-mcp is not beside vaultctl: install "
		      "vaultd (its package, or meson install) and run the "
		      "installed vaultctl\n",
		      stderr);
		rc = INIT_FAILED;
		goto out;
	}
	rc = pick_vault(&in);
	if (rc)
		goto out;
	/* Files are the user's: what is created is private. */
	file_set_umask(077);
	printf("vault-mcp: %s\n", in.mcp);
	if (!in.clients.n && !in.configs.n)
		default_clients(&in);
	rc = run_clients(&in);
	if (in.mount && setup_mount(&in))
		rc = INIT_FAILED;
	if (!in.write)
		printf("\nNothing was changed: add --write to do it.\n");
	else if (in.changed)
		printf("\nRestart the clients to load the changes.\n");
out:
	free(in.vault);
	free(in.mcp);
	pv_free(&in.clients);
	pv_free(&in.configs);
	return rc;
}
