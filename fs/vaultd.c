/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vaultd: the daemon that owns one vault. It indexes the vault, serves
 * the control socket, the guarded FUSE view (--mount) and watches the
 * folder for changes made outside it.
 *
 *   vaultd --vault DIR [--create] [--mount DIR | --no-mount] [-f]
 *
 * DIR must be an Obsidian vault (a folder with .obsidian/ in it) unless
 * --create makes it one: vaultd writes its state into the folder it owns,
 * so a mistyped path must not quietly become a vault. Every refusal at
 * start says what to do instead.
 *
 * Without -f it goes to the background once the socket accepts
 * connections (its parent exits 0 then), logging to
 * <runtime dir>/<vault-id>.log.
 *
 * This file starts and stops it all; the options are read in
 * vaultd_opts.c, the vault folder is watched in rootwatch.c.
 */
#include "config.h"
#include "ctl_server.h"
#include "fileio.h"
#include "fuse_ops.h"
#include "fuseconn.h"
#include "log.h"
#include "runtime.h"
#include "sdnotify.h"
#include "history.h"
#include "store.h"
#include "util.h"
#include "vault.h"
#include "rootwatch.h"
#include "vaultd.h"
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

struct indexer {
	struct vault *v;
	struct ctl_server *srv;
	struct watcher *watch;
	const struct opts *o;
	struct mount *mount;
	bool mounted_once;
	pthread_t th;
	pthread_t hist;
	bool hist_started;
	/* The history repository opens while the index is built. */
	pthread_t hopen;
	bool hopen_started;
	struct history *history;
};

/* Records the notes as they are at start, then commits what writers
 * change, a batch at a time. Writers only queue their changes; the
 * record at start and the commits run at the lowest priority (nice 19),
 * so that on a busy machine git's work takes the CPU time the writers
 * and the first searches leave (the record at start compares every
 * note with the history: 0.66 s at 100,000 notes unchanged, which ran
 * beside the first full-text search, on the same two cores). */
static void *history_thread(void *arg)
{
	struct vault *v = arg;
	struct history *h = vault_history(v);
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), 19) < 0)
		log_warn("history: cannot lower its priority: %s",
			 strerror(errno));
	/* A first search index build comes first (both read every note;
	 * the search index is what clients wait for). Writes meanwhile are
	 * recorded as they come. */
	for (;;) {
		struct vault_store_state st;
		vault_store_state(v, &st);
		if (!st.enabled || st.ready || vault_fulltext_stopped(v))
			break;
		vault_fulltext_wait_ready(v, 1000);
	}
	uint64_t t0 = now_ns();
	int r = vault_history_scan(v);
	if (r == -ECANCELED)
		return NULL; /* stopping */
	size_t versions;
	uint64_t bytes;
	history_stats(h, &versions, &bytes);
	if (r < 0)
		log_warn("history: cannot record the notes as they are: %s",
			 history_error(h));
	else
		log_info("history: %d note%s new or changed since the last "
			 "run, recorded in %.2f s (%zu versions, %.1f MB in "
			 "%s)",
			 r, r == 1 ? "" : "s", (double)(now_ns() - t0) / 1e9,
			 versions, (double)bytes / 1e6, history_path(h));
	for (;;) {
		int p = history_pack_due(h) ? history_pack(h) : 0;
		if (p == -ECANCELED)
			break; /* stopping */
		if (p < 0)
			log_warn("history: %s", history_error(h));
		if (!history_wait_due(h))
			break;
		if (history_commit(h, false) < 0)
			log_warn("history: %s", history_error(h));
	}
	return NULL;
}

static void progress(size_t done, size_t total, void *ud)
{
	sd_notifyf("STATUS=Indexing: %zu of %zu notes", done, total);
}

/* The search index's background work (a first build, files changed
 * while vaultd was not running, writes, a rebuild after damage) did a
 * step: what to log. */
static void fulltext_step(struct vault *v,
			  const struct vault_fulltext_step *step, void *ud)
{
	(void)ud;
	struct vault_store_state st;
	if (step->read_ahead) {
		log_info("common words read ahead: %zu in %.2f s", step->n,
			 (double)step->ns / 1e9);
		return;
	}
	if (step->substrings) {
		vault_store_state(v, &st);
		if (step->n > 100 && st.substrings_ready)
			log_info("substring index up to date: %zu notes in "
				 "%.2f s, %.1f MB",
				 step->n, (double)step->ns / 1e9,
				 (double)st.bytes / 1e6);
		return;
	}
	_cleanup_free_ char *note = vault_fulltext_note(v);
	if (note)
		log_warn("%s", note);
	vault_store_state(v, &st);
	if (step->n > 100 && st.ready)
		log_info(
			"search index up to date: %zu notes in %.2f s, %.1f MB",
			step->n, (double)step->ns / 1e9,
			(double)st.bytes / 1e6);
}

static void open_search_index(struct vault *v, const char *dir_opt);

/* Set when vaultd stops: the first index, if still being built, stops
 * too (a stop must not wait for 100,000 notes to be read). */
static _Atomic bool stopping;

/* The first index's notes are in place (vault_on_names()): searches by
 * name, tag and text answer while its links are bound. */
static void names_ready(void *ud)
{
	ctl_server_names_ready(ud);
}

static void *index_thread(void *arg)
{
	struct indexer *ix = arg;
	uint64_t t0 = now_ns();
	cancel_bind(&stopping);
	open_search_index(ix->v, ix->o->cache);
	/* The stored entries are read while the watcher is set up. */
	vault_preload_entries(ix->v);
	/* Watching before indexing: nothing changed meanwhile is missed. */
	_cleanup_free_ char *wmsg = NULL;
	if (watch_start(ix->v, &ix->watch, &wmsg) < 0)
		log_warn("changes made outside vaultd will not be seen: %s",
			 wmsg);
	_cleanup_free_ char *ixmsg = NULL;
	vault_on_names(ix->v, names_ready, ix->srv);
	int ixr = vault_index_all(ix->v, progress, NULL, &ixmsg);
	if (ixr == -ECANCELED) {
		if (ix->hopen_started)
			pthread_join(ix->hopen, NULL);
		ix->hopen_started = false;
		log_info("stopped before the index was complete");
		return NULL;
	}
	if (ixr < 0)
		log_error("%s", ixmsg);
	if (ix->hopen_started)
		pthread_join(ix->hopen, NULL);
	vault_read_lock(ix->v);
	size_t n = index_count(vault_index(ix->v));
	vault_read_unlock(ix->v);
	struct vault_store_state st;
	vault_store_state(ix->v, &st);
	if (st.enabled)
		log_info("indexed %zu notes in %.2f s (%zu unchanged since the "
			 "last run, %zu read)",
			 n, (double)(now_ns() - t0) / 1e9, st.cached,
			 st.parsed);
	else
		log_info("indexed %zu notes in %.2f s", n,
			 (double)(now_ns() - t0) / 1e9);
	size_t tmps = vault_stale_temps(ix->v);
	if (tmps)
		log_info("removed %zu temp files a stopped vaultd left in note "
			 "folders",
			 tmps);
	ctl_server_index_ready(ix->srv);
	if (st.enabled && vault_fulltext_start(ix->v, fulltext_step, NULL) < 0)
		log_error("full-text search will not be brought up to date: "
			  "cannot start its thread");
	if (vault_history(ix->v) &&
	    pthread_create(&ix->hist, NULL, history_thread, ix->v) == 0) {
		ix->hist_started = true;
	} else if (vault_history(ix->v)) {
		/* Nothing would ever record what writers change. */
		log_error("history is off: cannot start its thread");
		vault_write_lock(ix->v);
		vault_attach_history(ix->v, NULL);
		vault_write_unlock(ix->v);
	}
	/* The mount comes after the index: the guard judges writes against
	 * what the vault holds, so it must know all of it. */
	if (ix->o->mount) {
		struct mount_config mc = {
			.mountpoint = ix->o->mount,
			.grace_ms = ix->o->grace_ms,
			.allow_other = ix->o->allow_other,
		};
		_cleanup_free_ char *msg = NULL;
		if (mount_start(ix->v, &mc, &ix->mount, &msg) < 0) {
			log_error("%s", msg);
			sd_notifyf("STATUS=Mount failed: %s", msg);
			ctl_server_stop(ix->srv);
			return NULL;
		}
		ix->mounted_once = true;
		ctl_server_set_mount(ix->srv, ix->o->mount);
		log_info("vault mounted at %s", ix->o->mount);
	}
	if (ix->watch)
		watch_ready(ix->watch, ix->mount);
	if (ix->o->mount)
		sd_notifyf("READY=1\nSTATUS=Serving %zu notes, mounted at %s",
			   n, ix->o->mount);
	else
		sd_notifyf("READY=1\nSTATUS=Serving %zu notes", n);
	return NULL;
}

/* The search index in the cache folder; without it, vaultd still serves
 * everything but full-text search. */
static void open_search_index(struct vault *v, const char *dir_opt)
{
	_cleanup_free_ char *dir = NULL;
	if (dir_opt) {
		if (mkdir(dir_opt, 0700) < 0 && errno != EEXIST) {
			log_warn("full-text search is off: %s: %s", dir_opt,
				 strerror(errno));
			return;
		}
		dir = xstrdup(dir_opt);
	} else {
		const char *why;
		int r = cache_dir_for(vault_root(v), &dir, &why);
		if (r < 0) {
			log_warn(
				"full-text search is off: cache folder: %s: %s",
				why, strerror(-r));
			return;
		}
	}
	struct store *s = NULL;
	_cleanup_free_ char *note = NULL;
	if (store_open(dir, vault_root(v), &s, &note) < 0) {
		log_warn("full-text search is off: %s", note);
		return;
	}
	if (note)
		log_warn("%s", note);
	vault_attach_store(v, s);
}

/* The history repository in the vault's .vaultd/; without it, vaultd
 * serves everything but the history tools. */
static struct history *open_history(struct vault *v)
{
	struct history *h = NULL;
	_cleanup_free_ char *note = NULL;
	if (history_open(vault_rootfd(v), vault_root(v), &h, &note) < 0) {
		log_warn("note history is off: %s", note);
		return NULL;
	}
	if (note)
		log_warn("%s", note);
	vault_attach_history(v, h);
	return h;
}

static void *open_history_thread(void *arg)
{
	struct indexer *ix = arg;
	ix->history = open_history(ix->v);
	return NULL;
}

static bool ctl_mount_ok(const struct indexer *ix)
{
	return ix->mounted_once;
}

/* An exclusive lock on fd (or -errno), else -EBUSY when held elsewhere;
 * the descriptor is closed on failure. */
static int lock_or_close(int fd, int *ret_fd)
{
	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	*ret_fd = fd;
	return 0;
}

/* One daemon per vault: an exclusive lock next to the socket. */
static int take_lock(const char *socket_path, int *ret_fd)
{
	_cleanup_free_ char *p = xasprintf("%s.lock", socket_path);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	return lock_or_close(fd < 0 ? -errno : fd, ret_fd);
}

/*
 * One owner per vault folder, wherever it is reached from (another path,
 * a moved folder, another socket): a lock on a file inside it.
 */
static int take_vault_lock(struct vault *v, int *ret_fd)
{
	int r = file_mkdirs(vault_rootfd(v), ".vaultd");
	if (r < 0)
		return r;
	/* Read-only: the vault's file system can still be remounted
	 * read-only under vaultd. */
	return lock_or_close(beneath_open(vault_rootfd(v), ".vaultd/lock",
					  O_RDONLY | O_CREAT | O_NOFOLLOW,
					  0600),
			     ret_fd);
}

/*
 * The folder must be an Obsidian vault, or --create makes it one. 0, or
 * the exit code after saying what to do.
 */
static int check_vault_folder(const struct opts *o)
{
	int r = vault_probe(o->vault);
	if (r == 0)
		return 0;
	if (o->create && (r == -ENOENT || r == -EMEDIUMTYPE)) {
		int c = vault_make_obsidian(o->vault);
		if (c < 0) {
			log_error("cannot make %s an Obsidian vault: %s",
				  o->vault, strerror(-c));
			return 1;
		}
		log_info("%s is an Obsidian vault now (created %s/.obsidian/)",
			 o->vault, o->vault);
		return 0;
	}
	if (r == -EMEDIUMTYPE)
		log_error("%s is not an Obsidian vault (it has no .obsidian/ "
			  "folder): open it as a vault in Obsidian once, or "
			  "add --create to make it one; check the path if you "
			  "meant another folder",
			  o->vault);
	else if (r == -ENOENT)
		log_error("the vault folder %s does not exist: check the "
			  "path, or add --create to start a new vault there",
			  o->vault);
	else if (r == -ENOTDIR)
		log_error("%s is not a folder: --vault takes the folder you "
			  "open in Obsidian",
			  o->vault);
	else
		log_error("the vault folder %s cannot be used: %s (vaultd "
			  "must be able to read and write it)",
			  o->vault, strerror(-r));
	return 2;
}

/* What a killed vaultd may have left: its temp files, and (from older
 * versions) state others could write. */
static void repair_leftovers(struct vault *v, mode_t mask)
{
	static const char *const own[] = {".vaultd", ".trash"};
	for (size_t i = 0; i < ARRAY_SIZE(own); i++) {
		long n = file_narrow_modes(vault_rootfd(v), own[i], mask);
		if (n > 0)
			log_warn("%s/%s: took write access for others away "
				 "from %ld files",
				 vault_root(v), own[i], n);
	}
	static const char *const tmps[] = {".vaultd", ".vaultd/rejected"};
	for (size_t i = 0; i < ARRAY_SIZE(tmps); i++) {
		long n = file_remove_temps(vault_rootfd(v), tmps[i]);
		if (n > 0)
			log_info("removed %ld temp files a stopped vaultd left "
				 "in %s",
				 n, tmps[i]);
	}
}

/* The lock file names the daemon's pid (after going to the background). */
static void write_pid(int lockfd)
{
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(lockfd, 0) < 0 || pwrite(lockfd, pid, (size_t)n, 0) < 0) {
	}
}

/* Fork; the parent waits until the child says the socket is up. */
static int daemonize(const char *logpath, int *ret_notify_fd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		char c = 0;
		ssize_t r = read(p[0], &c, 1);
		_exit(r == 1 && c == 'R' ? 0 : 1);
	}
	close(p[0]);
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int log =
		open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
	}
	if (log >= 0)
		dup2(log, STDERR_FILENO);
	if (null > 2)
		close(null);
	if (log > 2)
		close(log);
	*ret_notify_fd = p[1];
	return 0;
}

/*
 * What vaultd creates is never wider than the user's umask and the
 * vault folder's own mode allow; its own state (history, cache,
 * sockets) is never writable by others. The mount applies each caller's
 * mode exactly and does not depend on this. Returns the files' mask.
 */
static mode_t set_masks(const char *vault)
{
	mode_t vmask = umask(022);
	struct stat vst;
	if (stat(vault, &vst) == 0)
		vmask |= 0777 & ~vst.st_mode;
	file_set_umask(vmask);
	umask(vmask | 022);
	return vmask;
}

/* Open the vault and check the mount point: 0, or the exit code. */
static int open_vault(const struct opts *o, struct vault **ret)
{
	_cleanup_free_ char *msg = NULL;
	int r = vault_open(o->vault, ret, &msg);
	if (r == -EBADMSG) {
		log_error("%s: correct it (vaultd-policy(5) lists every key); "
			  "a vault whose policy cannot be read is not served",
			  msg);
		return 1;
	}
	if (r < 0) {
		log_error("%s (vaultd must be able to read and write the "
			  "vault folder)",
			  msg);
		return 1;
	}
	if (!o->mount)
		return 0;
	free(msg);
	msg = NULL;
	if (mount_point_check(vault_root(*ret), o->mount, &msg) < 0) {
		log_error("%s", msg);
		return 2;
	}
	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		log_error("no FUSE here (/dev/fuse: %s): install fuse3 and "
			  "load the fuse module (modprobe fuse), or run with "
			  "--no-mount",
			  strerror(errno));
		return 2;
	}
	return 0;
}

/* The locks that make this the vault's one vaultd. */
struct locks {
	char *sock;
	int sockfd;  /* SOCKET.lock: holds vaultd's pid */
	int vaultfd; /* VAULT/.vaultd/lock */
};

/* The socket's path and both locks: 0, or the exit code. */
static int take_locks(struct vault *v, const struct opts *o, struct locks *l)
{
	const char *root = vault_root(v);
	*l = (struct locks){.sockfd = -1, .vaultfd = -1};
	if (o->socket) {
		l->sock = xstrdup(o->socket);
	} else {
		const char *why;
		int r = socket_path_for(root, &l->sock, &why);
		if (r < 0) {
			log_error("%s: %s (set XDG_RUNTIME_DIR to a private "
				  "folder of yours, or give --socket PATH)",
				  why, strerror(-r));
			return 1;
		}
	}
	int r = take_lock(l->sock, &l->sockfd);
	if (r == -EBUSY) {
		log_error("vaultd is already running for %s (socket %s): use "
			  "it (vaultctl --vault %s status), or stop it first "
			  "(vaultctl --vault %s stop)",
			  root, l->sock, root, root);
		return 1;
	}
	if (r < 0) {
		log_error("cannot lock %s.lock: %s (give --socket PATH in a "
			  "folder of yours)",
			  l->sock, strerror(-r));
		return 1;
	}
	r = take_vault_lock(v, &l->vaultfd);
	if (r == -EBUSY)
		log_error("another vaultd owns %s (its .vaultd/lock is held): "
			  "stop it first (vaultctl --vault %s stop, or "
			  "systemctl --user stop the vaultd@ unit that runs "
			  "it)",
			  root, root);
	else if (r < 0)
		log_error("cannot lock %s/.vaultd/lock: %s (vaultd keeps its "
			  "state in the vault: it needs to write in "
			  "%s/.vaultd)",
			  root, strerror(-r), root);
	return r < 0 ? 1 : 0;
}

static void release_locks(struct locks *l)
{
	if (l->sockfd >= 0) {
		_cleanup_free_ char *lockpath = xasprintf("%s.lock", l->sock);
		unlink(lockpath);
		close(l->sockfd);
	}
	if (l->vaultfd >= 0)
		close(l->vaultfd);
	free(l->sock);
}

/* Into the background unless -f, with the pid written and, with a
 * mount, the reaper that detaches it if vaultd is killed (before any
 * thread starts). 0, or the exit code; *ret_notify_fd: where to say
 * "listening". */
static int detach(const struct opts *o, const struct locks *l,
		  int *ret_notify_fd)
{
	*ret_notify_fd = -1;
	if (!o->foreground) {
		_cleanup_free_ char *logpath = xasprintf(
			"%.*s.log", (int)(strlen(l->sock) - 5), l->sock);
		if (daemonize(logpath, ret_notify_fd) < 0) {
			log_error("cannot go to the background: %s (run it "
				  "in the foreground with -f)",
				  strerror(errno));
			return 1;
		}
		/* The lock belongs to this process now (flock locks follow
		 * the open file, which the child shares). */
	}
	write_pid(l->sockfd);
	if (o->mount) {
		int rr = reaper_start();
		if (rr < 0)
			log_warn("a killed vaultd would leave its mount "
				 "behind: %s",
				 strerror(-rr));
	}
	/* Signals are read from a signalfd by the server loop. */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* The control socket, listening: NULL when it cannot be. */
static struct ctl_server *start_server(struct vault *v, const struct opts *o,
				       const char *sock)
{
	struct ctl_config cfg = {
		.socket_path = sock,
		.max_line = o->max_line,
		.max_queue = 256u << 20,
		.workers = o->workers,
		/* With a mount, editors use vaultd without any client. */
		.idle_exit_s = o->mount ? 0 : o->idle_exit_s,
		.max_clients = o->max_clients,
		.max_per_peer = o->max_per_peer,
	};
	if (o->mount && o->idle_exit_s)
		log_warn("--idle-exit is ignored with a mount");
	struct ctl_server *srv = NULL;
	_cleanup_free_ char *msg = NULL;
	if (ctl_server_new(v, &cfg, &srv, &msg) < 0) {
		log_error("%s (give --socket PATH: a short path in a folder "
			  "of yours)",
			  msg);
		return NULL;
	}
	return srv;
}

/* Stop what runs behind the socket, in order, and close the vault:
 * whether the mount failed. */
static bool stop_all(struct indexer *ixr, struct rootwatch *rw,
		     struct ctl_server *srv, struct vault *v)
{
	atomic_store(&stopping, true);
	rootwatch_stop(rw);
	sd_notifyf("STOPPING=1\nSTATUS=Stopping");
	log_info("stopping");
	pthread_join(ixr->th, NULL);
	vault_fulltext_stop(v);
	ixr->watch = watch_stop(ixr->watch);
	if (ixr->mount) {
		ixr->mount = mount_stop(ixr->mount);
		log_info("unmounted %s", ixr->o->mount);
	}
	ctl_server_free(srv);
	/* No writer is left: commit what is pending. */
	struct history *hist = ixr->history;
	if (hist) {
		history_stop(hist);
		if (ixr->hist_started)
			pthread_join(ixr->hist, NULL);
		vault_attach_history(v, NULL);
	}
	vault_free(v);
	if (hist)
		history_free(hist);
	return ixr->o->mount && !ctl_mount_ok(ixr);
}

/* The vault folder was replaced: start over on the new one (everything
 * is closed or close-on-exec by now). Returns only on failure. */
static int start_over(int argc, char **argv, const struct opts *o)
{
	char **nargv = xcalloc((size_t)argc + 3, sizeof(*nargv));
	int na = 0;
	for (int i = 0; i < argc; i++)
		nargv[na++] = argv[i];
	if (!o->foreground)
		nargv[na++] = (char *)"--foreground";
	/* The folder at the vault's path is the vault restored (a clone
	 * may lack .obsidian/, which is often not committed). */
	nargv[na++] = (char *)"--create";
	execv("/proc/self/exe", nargv);
	log_error("cannot start over on the new vault folder: %s",
		  strerror(errno));
	free(nargv);
	return 1;
}

/*
 * Blocks from 256 KiB are mapped and unmapped on their own, always. By
 * default glibc raises that threshold to the size of each mapped block
 * freed (up to 32 MiB), after which the texts of big notes, read by the
 * first build's 16 readers and the full-text work, come from the
 * threads' arenas and stay there when freed: at 100,000 notes the peak
 * RSS was 546 MB with it, 433 MB with a fixed one.
 */
#define MMAP_THRESHOLD (256 << 10)

int main(int argc, char **argv)
{
	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
	struct opts o = {.max_line = 32u << 20};
	int r = vaultd_parse_args(argc, argv, &o);
	if (r >= 0)
		return r;
	log_init("vaultd");
	r = check_vault_folder(&o);
	if (r)
		return r;
	mode_t vmask = set_masks(o.vault);
	struct vault *v = NULL;
	r = open_vault(&o, &v);
	struct locks l = {.sockfd = -1, .vaultfd = -1};
	if (!r)
		r = take_locks(v, &o, &l);
	if (r) {
		vault_free(v);
		release_locks(&l);
		return r;
	}
	repair_leftovers(v, vmask | 022);
	int notify_fd;
	if (detach(&o, &l, &notify_fd))
		return 1;
	struct ctl_server *srv = start_server(v, &o, l.sock);
	if (!srv) {
		vault_free(v);
		return 1;
	}
	log_info("vault %s, socket %s", vault_root(v), l.sock);
	/* Listening: whoever started us may connect now. */
	if (notify_fd >= 0) {
		if (write(notify_fd, "R", 1) < 0) {
		}
		close(notify_fd);
	}
	sd_notifyf("STATUS=Indexing %s", vault_root(v));
	/* The socket answers at once; the search index, the watcher, the
	 * history and the index come up behind it. */
	struct indexer ixr = {.v = v, .srv = srv, .o = &o};
	if (!o.no_history &&
	    pthread_create(&ixr.hopen, NULL, open_history_thread, &ixr) == 0)
		ixr.hopen_started = true;
	else if (!o.no_history)
		log_error("history is off: cannot start a thread to open it");
	if (pthread_create(&ixr.th, NULL, index_thread, &ixr) != 0) {
		log_error("cannot start indexing: out of threads");
		return EXIT_FAILURE;
	}
	struct rootwatch rw = {.v = v, .srv = srv};
	rootwatch_start(&rw);
	r = ctl_server_run(srv);
	bool mount_failed = stop_all(&ixr, &rw, srv, v);
	release_locks(&l);
	if (rw.replaced)
		return start_over(argc, argv, &o);
	return r < 0 || mount_failed || rw.gone ? 1 : 0;
}
