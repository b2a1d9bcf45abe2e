/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mount's life cycle: it cleans up a stale mount of the vault, mounts,
 * starts the FUSE loop and the work queue's threads (invalidations, the
 * ends of grace periods), and on stop unmounts without ever hanging on a
 * request in flight, lets deletes in their grace period stand and frees the
 * node table.
 */
#include "mount_int.h"
#include "fileio.h"
#include "log.h"
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void *loop_thread(void *arg)
{
	struct mount *m = arg;
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(cfg, (unsigned)m->max_threads);
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	int r = fuse_session_loop_mt(m->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	if (r)
		log_warn("FUSE loop ended: %s", strerror(r < 0 ? -r : r));
	pthread_mutex_lock(&m->lmu);
	m->loop_done = true;
	pthread_cond_broadcast(&m->lcv);
	pthread_mutex_unlock(&m->lmu);
	return NULL;
}

/* Mounts of this vault left by a daemon that died (the caller holds the
 * vault's lock: nobody serves them) are unmounted. A dead mount point
 * cannot be resolved itself (ENOTCONN): its folder is. */
static void clean_stale(const char *mountpoint, const char *fsname)
{
	int stale = 0;
	_cleanup_free_ char *dir = xstrdup(mountpoint);
	_cleanup_free_ char *base = xstrdup(mountpoint);
	char *rdir = realpath(dirname(dir), NULL);
	if (rdir) {
		_cleanup_free_ char *abs = xasprintf(
			"%s/%s", strcmp(rdir, "/") ? rdir : "", basename(base));
		stale = fuseconn_clean_stale(abs, "fuse.vaultd", fsname);
		free(rdir);
	}
	if (stale)
		log_warn("%s: %d stale mount%s from an earlier run unmounted",
			 mountpoint, stale, stale > 1 ? "s" : "");
}

/* The mount's state, before any thread or session: its locks, the node
 * table, the shadow folder and the ghost file. */
static struct mount *mount_new(struct vault *v, const struct mount_config *cfg,
			       const char *real)
{
	struct mount *m = xcalloc(1, sizeof(*m));
	m->v = v;
	m->mountpoint = xstrdup(real);
	m->root = vault_root(v);
	m->rootlen = strlen(m->root);
	m->grace_ms = cfg->grace_ms ? cfg->grace_ms : 2000;
	m->max_threads = cfg->max_threads > 0 ? cfg->max_threads : 16;
	nodes_init(m);
	struct rlimit lim;
	m->max_shared = getrlimit(RLIMIT_NOFILE, &lim) == 0 &&
					lim.rlim_cur != RLIM_INFINITY
				? (size_t)lim.rlim_cur / 2
				: 1u << 17;
	m->owned = hmap_new();
	pthread_mutex_init(&m->tmu, NULL);
	pthread_mutex_init(&m->lmu, NULL);
	m->q = inval_queue_new(m);
	pthread_mutex_init(&m->amu, NULL);
	pthread_cond_init(&m->lcv, NULL);
	pthread_mutex_init(&m->pmu, NULL);
	pthread_mutex_init(&m->omu, NULL);
	pthread_mutex_init(&m->hmu, NULL);
	m->root_node.fd = open(m->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	m->root_node.nlookup = 2;
	m->root_node.writer_fd = -1;
	pthread_rwlock_init(&m->root_node.fdlock, NULL);
	file_mkdirs(vault_rootfd(v), ".vaultd/shadow");
	m->shadow_dir = beneath_open(vault_rootfd(v), ".vaultd/shadow",
				     O_RDONLY | O_DIRECTORY, 0);
	if (m->shadow_dir >= 0) {
		int g = openat(m->shadow_dir, "ghost",
			       O_CREAT | O_RDONLY | O_NOFOLLOW | O_CLOEXEC,
			       0600);
		if (g >= 0)
			close(g);
	}
	return m;
}

/* The FUSE session, mounted. -EIO (and *ret_msg) when that fails. */
static int session_mount(struct mount *m, const struct mount_config *cfg,
			 const char *fsname, char **ret_msg)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	_cleanup_free_ char *opts =
		xasprintf("default_permissions,fsname=%s,subtype=vaultd%s",
			  fsname, cfg->allow_other ? ",allow_other" : "");
	fuse_opt_add_arg(&args, "vaultd");
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, opts);
	m->se = fuse_session_new(&args, &mount_oper, sizeof(mount_oper), m);
	fuse_opt_free_args(&args);
	if (!m->se || fuse_session_mount(m->se, m->mountpoint) != 0) {
		*ret_msg = xasprintf("cannot mount the vault at %s (is "
				     "/dev/fuse usable, fuse3 installed?)",
				     m->mountpoint);
		if (m->se)
			fuse_session_destroy(m->se);
		m->se = NULL;
		return -EIO;
	}
	m->mounted = true;
	/* Its connection, for the reaper and an abort at stop, and its
	 * mount id, to tell descriptors on it (still_held). */
	if (fuseconn_find(m->mountpoint, "fuse.vaultd", fsname, &m->conn) < 0)
		log_warn("%s: not found in /proc/self/mountinfo",
			 m->mountpoint);
	else if (m->conn.dev)
		reaper_arm(m->conn.dev, m->mountpoint);
	return 0;
}

/* The work queue's threads (invalidations, grace periods) and the FUSE
 * loop. */
static int start_threads(struct mount *m)
{
	int tr = inval_start(m);
	if (tr == 0) {
		tr = pthread_create(&m->loop, NULL, loop_thread, m);
		m->loop_started = tr == 0;
	}
	return tr;
}

int mount_start(struct vault *v, const struct mount_config *cfg,
		struct mount **ret, char **ret_msg)
{
	char real[PATH_MAX];
	_cleanup_free_ char *fsname = xasprintf("vaultd:%s", vault_name(v));
	clean_stale(cfg->mountpoint, fsname);
	int cr = mount_point_check(vault_root(v), cfg->mountpoint, ret_msg);
	if (cr < 0)
		return cr;
	if (!realpath(cfg->mountpoint, real)) {
		*ret_msg = xasprintf("mount point %s: %s", cfg->mountpoint,
				     strerror(errno));
		return -errno;
	}
	struct mount *m = mount_new(v, cfg, real);
	int r = session_mount(m, cfg, fsname, ret_msg);
	if (r < 0) {
		mount_stop(m);
		return r;
	}
	vault_add_listener(v, on_vault_event, m);
	vault_set_settle(v, settle_take, settle_run, m);
	vault_set_file_in_use(v, holds_file, m);
	/* The spare files from now, not from the first write: their thread
	 * takes back those an earlier run left before a write (a rename's
	 * batch, right after the start) looks for them. */
	__atomic_store_n(&m->pool, vault_spare_pool(v), __ATOMIC_RELEASE);
	__atomic_store_n(&m->pool_asked, true, __ATOMIC_RELEASE);
	m->listening = true;
	if (start_threads(m) != 0) {
		*ret_msg = xasprintf("cannot serve the mount at %s: out of "
				     "threads",
				     m->mountpoint);
		m->loop_done = true;
		mount_stop(m);
		return -EAGAIN;
	}
	*ret = m;
	return 0;
}

/* Writers still dropping kernel caches (settle_run()) are done, by until
 * (NULL: no limit); -1 when not. */
static int settle_wait(struct mount *m, const struct timespec *until)
{
	struct timespec now;
	while (__atomic_load_n(&m->settling, __ATOMIC_ACQUIRE)) {
		clock_gettime(CLOCK_REALTIME, &now);
		if (until && (now.tv_sec > until->tv_sec ||
			      (now.tv_sec == until->tv_sec &&
			       now.tv_nsec >= until->tv_nsec)))
			return -1;
		usleep(1000);
	}
	return 0;
}

/*
 * No new requests are read; the mount leaves the namespace (nothing new
 * is opened); requests in flight finish. What is still waiting after a
 * moment (a writer holding a file open, an invalidation waiting for a
 * lock) is ended by an abort of the connection, so stop never hangs.
 */
static void session_stop(struct mount *m)
{
	fuse_session_exit(m->se);
	if (fuseconn_detach(m->mountpoint) < 0)
		log_warn("%s: cannot unmount", m->mountpoint);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&m->lmu);
	while (!m->loop_done &&
	       pthread_cond_timedwait(&m->lcv, &m->lmu, &until) == 0)
		;
	bool done = m->loop_done;
	pthread_mutex_unlock(&m->lmu);
	if (!done && m->conn.dev && fuseconn_abort(m->conn.dev) < 0)
		log_warn("%s: cannot abort the FUSE connection", m->mountpoint);
	if (m->loop_started)
		pthread_join(m->loop, NULL);
	__atomic_store_n(&m->mounted, false, __ATOMIC_RELEASE);
	/* What is queued still goes (with nothing to tell: unmounted; the
	 * grace periods left are ended below). */
	workq_stop(m->q, true);
	/* An invalidation can wait for a folder lock that a request no one
	 * will read any more holds (a rename queued in the kernel): the
	 * abort ends that request, and the wait. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 500 * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (workq_join(m->q, &until) < 0 || settle_wait(m, &until) < 0) {
		if (!m->conn.dev || fuseconn_abort(m->conn.dev) < 0)
			log_warn("%s: cannot abort the FUSE connection",
				 m->mountpoint);
		workq_join(m->q, NULL);
		settle_wait(m, NULL);
	}
	fuse_session_unmount(m->se);
	fuse_session_destroy(m->se);
	reaper_disarm();
}

struct mount *mount_stop(struct mount *m)
{
	if (!m)
		return NULL;
	if (m->listening) {
		vault_set_file_in_use(m->v, NULL, NULL);
		vault_remove_listener(m->v, on_vault_event, m);
		vault_set_settle(m->v, NULL, NULL, NULL);
	}
	if (m->se)
		session_stop(m);
	/* Deletes still in their grace period stand. */
	while (m->pending) {
		struct pending_delete *p = m->pending;
		m->pending = p->next;
		vault_write_lock(m->v);
		vault_forget_note(m->v, p->path, p->source);
		vault_write_unlock(m->v);
		pending_free(p);
	}
	/* Handles whose release never came (the last closes on a mount
	 * detached under its writers): nothing of them is committed. */
	while (m->fhs)
		free_fh(m, m->fhs);
	nodes_free(m);
	pv_free(&m->replaced);
	/* Invalidations that never ran (the thread did not start). */
	m->q = workq_free(m->q);
	if (m->root_node.fd >= 0)
		close(m->root_node.fd);
	if (m->shadow_dir >= 0)
		close(m->shadow_dir);
	hmap_free(m->owned);
	free(m->announcing);
	free(m->mountpoint);
	free(m);
	return NULL;
}
