/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"
#include "vault_set.h"
#include "log.h"
#include "runtime.h"
#include "u8.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

struct queued {
	long id; /* 0: a notification */
	char *method;
	cJSON *params;
};

struct vrec {
	char *name;
	char *path; /* real path (as given when it cannot be resolved) */
	bool read_only;
	struct ctl_client *c; /* main thread only */
	bool connecting;      /* a thread is at it */
	struct ptrvec queue;  /* struct queued *, sent once connected */
	/* What the thread found, under vs->mu. */
	struct ctl_client *got;
	int got_r;
	char *got_msg;
};

struct vault_set {
	struct vset_config cfg;
	struct ptrvec v;     /* struct vrec *: stable for the threads */
	struct ptrvec roots; /* char *: real paths */
	long next_id;
	int wake[2];	    /* a finished connect writes its index */
	pthread_mutex_t mu; /* the got_* fields */
};

struct vault_set *vset_new(const struct vset_config *cfg)
{
	struct vault_set *vs = xcalloc(1, sizeof(*vs));
	vs->cfg = *cfg;
	if (pipe2(vs->wake, O_CLOEXEC | O_NONBLOCK) < 0)
		abort(); /* out of descriptors at startup */
	pthread_mutex_init(&vs->mu, NULL);
	return vs;
}

static void queued_free(struct queued *q)
{
	free(q->method);
	cJSON_Delete(q->params);
	free(q);
}

static void queue_drop(struct vrec *r)
{
	for (size_t i = 0; i < r->queue.n; i++)
		queued_free(r->queue.v[i]);
	r->queue.n = 0;
}

struct vault_set *vset_free(struct vault_set *vs)
{
	if (!vs)
		return NULL;
	/* A thread still connecting writes to the set when it is done: the
	 * set is then left to the process's end rather than freed under it. */
	for (size_t i = 0; i < vs->v.n; i++)
		if (((struct vrec *)vs->v.v[i])->connecting)
			return NULL;
	for (size_t i = 0; i < vs->v.n; i++) {
		struct vrec *r = vs->v.v[i];
		r->c = ctl_close(r->c);
		queue_drop(r);
		pv_free(&r->queue);
		free(r->name);
		free(r->path);
		free(r->got_msg);
		free(r);
	}
	pv_free(&vs->v);
	for (size_t i = 0; i < vs->roots.n; i++)
		free(vs->roots.v[i]);
	pv_free(&vs->roots);
	close(vs->wake[0]);
	close(vs->wake[1]);
	pthread_mutex_destroy(&vs->mu);
	free(vs);
	return NULL;
}

static struct vrec *rec(const struct vault_set *vs, size_t i)
{
	return i < vs->v.n ? vs->v.v[i] : NULL;
}

size_t vset_count(const struct vault_set *vs)
{
	return vs->v.n;
}

bool vset_multi(const struct vault_set *vs)
{
	return vs->v.n > 1 || vs->roots.n > 0;
}

const char *vset_name(const struct vault_set *vs, size_t i)
{
	return rec(vs, i) ? rec(vs, i)->name : NULL;
}

const char *vset_path(const struct vault_set *vs, size_t i)
{
	return rec(vs, i) ? rec(vs, i)->path : NULL;
}

bool vset_read_only(const struct vault_set *vs, size_t i)
{
	return rec(vs, i) && rec(vs, i)->read_only;
}

bool vset_connected(const struct vault_set *vs, size_t i)
{
	return rec(vs, i) && rec(vs, i)->c;
}

int vset_find(const struct vault_set *vs, const char *name)
{
	for (size_t i = 0; i < vs->v.n; i++) {
		const struct vrec *r = vs->v.v[i];
		if (!strcasecmp(r->name, name) || !strcmp(r->path, name))
			return (int)i;
	}
	return -1;
}

char *vset_names(const struct vault_set *vs)
{
	struct sbuf b = {0};
	for (size_t i = 0; i < vs->v.n; i++) {
		const struct vrec *r = vs->v.v[i];
		sb_printf(&b, "%s%s", i ? ", " : "", r->name);
	}
	return sb_steal(&b);
}

/* ---- names and folders
 * --------------------------------------------------------- */

/* ASCII letters and digits, '_', '-', '.', and any non-ASCII UTF-8
 * (a folder named in another script keeps its name). */
static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
	       (unsigned char)c >= 0x80;
}

/* A name as a client would type it: those characters, not starting
 * with '.'; a URI's authority holds it as is. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > VSET_NAME_MAX || *s == '.' || !u8_valid(s, n))
		return false;
	for (const char *p = s; *p; p++)
		if (!name_char(*p))
			return false;
	return true;
}

/* The folder's name, each run of other characters made one '-'. */
static char *name_from(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	struct sbuf b = {0};
	bool dash = false;
	for (const char *p = base; *p && b.len < VSET_NAME_MAX + 4; p++) {
		if (name_char(*p) && !(b.len == 0 && *p == '.')) {
			if (dash && b.len)
				sb_putc(&b, '-');
			dash = false;
			sb_putc(&b, *p);
		} else {
			dash = true;
		}
	}
	char *n = sb_steal(&b);
	if (n && strlen(n) > VSET_NAME_MAX)
		n[utf8_cut(n, VSET_NAME_MAX)] = 0; /* at a character */
	if (!n || !*n || !u8_valid(n, strlen(n))) {
		free(n);
		return xstrdup("vault");
	}
	return n;
}

/* base, else base-2, base-3, ... */
static char *unique_name(const struct vault_set *vs, const char *base)
{
	char *n = xstrdup(base);
	for (int k = 2; vset_find(vs, n) >= 0; k++) {
		free(n);
		n = xasprintf("%.*s-%d", VSET_NAME_MAX - 4, base, k);
	}
	return n;
}

/* Not writable: by us, or by anyone (root passes access() for all). */
static bool folder_read_only(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return false;
	return access(path, W_OK) < 0 || !(st.st_mode & 0222);
}

static int push(struct vault_set *vs, const char *real, const char *name,
		bool read_only)
{
	struct vrec *r = xcalloc(1, sizeof(*r));
	r->path = xstrdup(real);
	if (name) {
		r->name = xstrdup(name);
	} else {
		_cleanup_free_ char *base = name_from(real);
		r->name = unique_name(vs, base);
	}
	r->read_only = read_only || folder_read_only(real);
	pv_push(&vs->v, r);
	return (int)vs->v.n - 1;
}

int vset_add(struct vault_set *vs, const char *path, bool read_only,
	     char **ret_msg)
{
	if (!*path) {
		*ret_msg = xstrdup("an empty vault path");
		return -EINVAL;
	}
	if (vs->v.n >= VSET_MAX) {
		*ret_msg = xasprintf("at most %d vaults", VSET_MAX);
		return -E2BIG;
	}
	char real[PATH_MAX];
	const char *p = realpath(path, real) ? real : path;
	for (size_t i = 0; i < vs->v.n; i++) {
		struct vrec *r = vs->v.v[i];
		if (!strcmp(r->path, p)) {
			r->read_only |= read_only;
			return (int)i;
		}
	}
	return push(vs, p, NULL, read_only);
}

int vset_add_root(struct vault_set *vs, const char *dir, char **ret_msg)
{
	char real[PATH_MAX];
	struct stat st;
	if (!realpath(dir, real) || stat(real, &st) < 0 ||
	    !S_ISDIR(st.st_mode)) {
		*ret_msg = xasprintf("--allow-root %s: not a folder", dir);
		return -ENOTDIR;
	}
	pv_push(&vs->roots, xstrdup(real));
	return 0;
}

static bool under(const char *root, const char *path)
{
	size_t n = strlen(root);
	if (n == 1 && root[0] == '/')
		return true;
	return !strncmp(root, path, n) && (path[n] == '/' || !path[n]);
}

int vset_load(struct vault_set *vs, const char *path, const char *name,
	      char **ret_msg)
{
	size_t len = strlen(path);
	if (len >= PATH_MAX || !u8_valid(path, len)) {
		*ret_msg = xstrdup("vault_path must be a folder's absolute "
				   "path (UTF-8, shorter than PATH_MAX)");
		return -EINVAL;
	}
	for (const char *c = path; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			*ret_msg = xstrdup("vault_path holds a control "
					   "character");
			return -EINVAL;
		}
	if (*path != '/') {
		*ret_msg =
			xasprintf("vault_path %s is not absolute", QUOTE(path));
		return -EINVAL;
	}
	if (name && !name_ok(name)) {
		*ret_msg = xasprintf(
			"name %s: 1 to %d bytes of letters, digits, '_', '-' "
			"or '.', not starting with '.'",
			QUOTE(name), VSET_NAME_MAX);
		return -EINVAL;
	}
	char real[PATH_MAX];
	if (!realpath(path, real)) {
		int e = errno;
		*ret_msg = xasprintf("vault_path %s: %s", QUOTE(path),
				     strerror(e));
		return -e;
	}
	bool allowed = false;
	for (size_t i = 0; i < vs->roots.n && !allowed; i++)
		allowed = under(vs->roots.v[i], real);
	int have = -1;
	for (size_t i = 0; i < vs->v.n; i++)
		if (!strcmp(((struct vrec *)vs->v.v[i])->path, real))
			have = (int)i;
	if (have < 0 && !allowed) {
		/* The same answer whether or not the folder is there: a
		 * client learns nothing about folders it may not load. */
		_cleanup_free_ char *roots = NULL;
		struct sbuf b = {0};
		for (size_t i = 0; i < vs->roots.n; i++)
			sb_printf(&b, "%s%s", i ? ", " : "",
				  (char *)vs->roots.v[i]);
		roots = sb_steal(&b);
		*ret_msg = xasprintf(
			"vault_path %s is outside the folders vaults may be "
			"loaded from (%s); the user can allow more with "
			"vault-mcp --allow-root DIR",
			QUOTE(path),
			*roots ? roots : "none: only the configured vaults");
		return -EPERM;
	}
	if (have >= 0)
		return have; /* loaded already: the same answer (seed 004) */
	struct stat st;
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		*ret_msg =
			xasprintf("vault_path %s is not a folder", QUOTE(path));
		return -ENOTDIR;
	}
	_cleanup_free_ char *dot = xasprintf("%s/.obsidian", real);
	if (stat(dot, &st) < 0 || !S_ISDIR(st.st_mode)) {
		*ret_msg = xasprintf("%s is not an Obsidian vault (no "
				     ".obsidian/ folder in it)",
				     QUOTE(path));
		return -EINVAL;
	}
	if (vs->v.n >= VSET_MAX) {
		*ret_msg = xasprintf("at most %d vaults are loaded at once",
				     VSET_MAX);
		return -E2BIG;
	}
	if (name && vset_find(vs, name) >= 0) {
		*ret_msg = xasprintf("the name %s is taken by another vault",
				     QUOTE(name));
		return -EEXIST;
	}
	return push(vs, real, name, false);
}

/* ---- daemons
 * ------------------------------------------------------------------- */

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

/* Start `vaultd --no-mount --vault DIR`; it returns once it listens.
 * Runs on a connect thread: the child only execs. */
static int start_daemon(const struct vset_config *cfg, const char *vault)
{
	_cleanup_free_ char *bin = vaultd_path();
	log_info("starting %s for %s", bin, vault);
	const char *args[12];
	size_t n = 0;
	args[n++] = bin;
	args[n++] = "--no-mount";
	args[n++] = "--idle-exit";
	args[n++] = cfg->idle_exit;
	args[n++] = "--vault";
	args[n++] = vault;
	if (cfg->socket) {
		args[n++] = "--socket";
		args[n++] = cfg->socket;
	}
	if (cfg->create)
		args[n++] = "--create";
	args[n] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* Never let the daemon touch our stdout (MCP messages). */
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execvp(bin, (char *const *)args);
		static const char m[] = "vault-mcp: cannot run vaultd\n";
		ssize_t w = write(STDERR_FILENO, m, sizeof(m) - 1);
		(void)w;
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int connect_daemon(const struct vset_config *cfg, const char *vault,
			  bool autostart, struct ctl_client **ret,
			  char **ret_msg)
{
	_cleanup_free_ char *path = NULL;
	if (cfg->socket) {
		path = xstrdup(cfg->socket);
	} else {
		const char *why;
		int r = socket_path_for(vault, &path, &why);
		if (r < 0) {
			*ret_msg = xasprintf("%s: %s", why, vault);
			return r;
		}
	}
	int r = ctl_connect(path, ret);
	if (r == 0 || !autostart) {
		if (r < 0)
			*ret_msg = xasprintf("no vaultd runs for %s", vault);
		return r;
	}
	/* Another vault-mcp may be starting it at the same moment, or the
	 * last one may still be on its way out (it holds the vault until it
	 * has closed everything): try again until one answers. */
	for (int i = 0; i < 300; i++) {
		if (i % 20 == 0) {
			int rc = start_daemon(cfg, vault);
			if (rc == 2) {
				/* Not a vault, or the like: vaultd said why
				 * (on our stderr, the client's log). Asking
				 * again would not change its answer. */
				*ret_msg = xasprintf(
					"vaultd cannot serve %s (its reason is "
					"in this server's log)",
					vault);
				return -EINVAL;
			}
			if (rc != 0)
				log_warn("vaultd exited with %d (another one "
					 "may be starting or stopping)",
					 rc);
		}
		r = ctl_connect(path, ret);
		if (r == 0)
			return 0;
		usleep(50000);
	}
	*ret_msg =
		xasprintf("cannot reach vaultd at %s: %s", path, strerror(-r));
	return r;
}

struct ctl_client *vset_client(const struct vault_set *vs, size_t i)
{
	return rec(vs, i) ? rec(vs, i)->c : NULL;
}

int vset_connect(struct vault_set *vs, size_t i, bool autostart)
{
	struct vrec *r = rec(vs, i);
	if (!r)
		return -ENOENT;
	if (r->c)
		return 0;
	_cleanup_free_ char *msg = NULL;
	int e = connect_daemon(&vs->cfg, r->path, autostart, &r->c, &msg);
	if (e < 0 && autostart)
		log_error("%s", msg);
	return e;
}

struct job {
	struct vault_set *vs;
	struct vrec *r;
	size_t i;
	struct vset_config cfg;
	char *path;
};

static void *connect_thread(void *arg)
{
	struct job *j = arg;
	struct ctl_client *c = NULL;
	char *msg = NULL;
	int e = connect_daemon(&j->cfg, j->path, true, &c, &msg);
	pthread_mutex_lock(&j->vs->mu);
	j->r->got = c;
	j->r->got_r = e;
	j->r->got_msg = msg;
	pthread_mutex_unlock(&j->vs->mu);
	uint32_t idx = (uint32_t)j->i;
	/* The pipe holds thousands of these; vaults are at most VSET_MAX. */
	ssize_t w = write(j->vs->wake[1], &idx, sizeof(idx));
	(void)w;
	free(j->path);
	free(j);
	return NULL;
}

void vset_start(struct vault_set *vs, size_t i)
{
	struct vrec *r = rec(vs, i);
	if (!r || r->c || r->connecting)
		return;
	struct job *j = xcalloc(1, sizeof(*j));
	*j = (struct job){.vs = vs, .r = r, .i = i, .cfg = vs->cfg};
	j->path = xstrdup(r->path);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	r->connecting = true;
	if (pthread_create(&t, &at, connect_thread, j) != 0) {
		/* No thread: connect here, the old way. */
		r->connecting = false;
		free(j->path);
		free(j);
		vset_connect(vs, i, true);
	}
	pthread_attr_destroy(&at);
}

static void enqueue(struct vrec *r, long id, const char *method, cJSON *params)
{
	struct queued *q = xcalloc(1, sizeof(*q));
	q->id = id;
	q->method = xstrdup(method);
	q->params = params;
	pv_push(&r->queue, q);
}

long vset_send(struct vault_set *vs, size_t i, const char *method,
	       cJSON *params)
{
	struct vrec *r = rec(vs, i);
	if (!r) {
		cJSON_Delete(params);
		return -ENOENT;
	}
	long id = ++vs->next_id;
	if (r->c) {
		int e = ctl_send_id(r->c, id, method, params);
		/* A daemon that just died: its answer is "lost" at the
		 * next pump, which fails this request with the others. */
		return e < 0 && e != -EPIPE && e != -ECONNRESET ? e : id;
	}
	enqueue(r, id, method, params);
	vset_start(vs, i);
	return id;
}

void vset_notify(struct vault_set *vs, size_t i, const char *method,
		 cJSON *params)
{
	struct vrec *r = rec(vs, i);
	if (!r) {
		cJSON_Delete(params);
		return;
	}
	if (r->c)
		ctl_notify(r->c, method, params);
	else if (r->connecting)
		enqueue(r, 0, method, params);
	else
		cJSON_Delete(params);
}

int vset_wake_fd(const struct vault_set *vs)
{
	return vs->wake[0];
}

int vset_fd(const struct vault_set *vs, size_t i)
{
	const struct vrec *r = rec(vs, i);
	return r && r->c ? ctl_fd(r->c) : -1;
}

int vset_pump(struct vault_set *vs, size_t i, ctl_msg_fn fn, void *ud)
{
	struct vrec *r = rec(vs, i);
	if (!r || !r->c)
		return -ENOTCONN;
	int e = ctl_pump(r->c, false, fn, ud);
	if (e < 0)
		r->c = ctl_close(r->c);
	return e;
}

void vset_collect(struct vault_set *vs, vset_done_fn fn, void *ud)
{
	uint32_t idx;
	while (read(vs->wake[0], &idx, sizeof(idx)) == sizeof(idx)) {
		struct vrec *r = rec(vs, idx);
		if (!r)
			continue;
		pthread_mutex_lock(&vs->mu);
		struct ctl_client *c = TAKE_PTR(r->got);
		int e = r->got_r;
		_cleanup_free_ char *msg = TAKE_PTR(r->got_msg);
		pthread_mutex_unlock(&vs->mu);
		r->connecting = false;
		if (e < 0) {
			log_error("vault %s: %s", r->name, msg ? msg : "");
			queue_drop(r);
			fn(ud, idx, e, msg);
			continue;
		}
		r->c = c;
		fn(ud, idx, 0, NULL);
		/* In order; one that fails is answered as lost at the next
		 * pump. */
		for (size_t k = 0; k < r->queue.n; k++) {
			struct queued *q = r->queue.v[k];
			if (!r->c)
				break;
			if (q->id)
				ctl_send_id(r->c, q->id, q->method,
					    TAKE_PTR(q->params));
			else
				ctl_notify(r->c, q->method,
					   TAKE_PTR(q->params));
		}
		queue_drop(r);
	}
}
