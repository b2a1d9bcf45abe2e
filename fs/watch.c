/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "watch.h"
#include "fileio.h"
#include "hmap.h"
#include "log.h"
#include "note.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#define MASK                                                        \
	(IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | \
	 IN_DELETE | IN_ATTRIB | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_ONLYDIR)

struct watcher {
	struct vault *v;
	struct mount *m;
	int ifd, stopfd;
	struct hmap *dirs; /* "wd" -> char * folder path ("" = root) */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool ready;
	bool started;
};

/* vaultd's own scratch folders and git's are of no interest. */
static bool skip_dir(const char *path)
{
	static const char *const skip[] = {".git",
					   ".trash",
					   ".vaultd/shadow",
					   ".vaultd/spare",
					   ".vaultd/rejected",
					   ".vaultd/history.git",
					   NULL};
	for (const char *const *s = skip; *s; s++) {
		size_t n = strlen(*s);
		if (!strncmp(path, *s, n) && (!path[n] || path[n] == '/'))
			return true;
	}
	const char *b = strrchr(path, '/');
	return b && !strcmp(b + 1, ".git");
}

/* Watch one folder (unless it is skipped) and list its subfolders in
 * *sub; mu (if not NULL) guards w->dirs. */
static void watch_dir(struct watcher *w, const char *dir, struct ptrvec *sub,
		      pthread_mutex_t *mu)
{
	if (skip_dir(dir))
		return;
	_cleanup_free_ char *abs =
		*dir ? xasprintf("%s/%s", vault_root(w->v), dir)
		     : xstrdup(vault_root(w->v));
	int wd = inotify_add_watch(w->ifd, abs, MASK);
	if (wd < 0) {
		if (errno == ENOSPC)
			log_warn("inotify watch limit reached at %s; raise "
				 "fs.inotify.max_user_watches",
				 dir);
		else if (errno != ENOENT && errno != ENOTDIR)
			log_warn("cannot watch %s (%s): changes made there "
				 "outside the mount are not seen until the "
				 "next start",
				 *dir ? dir : "the vault folder",
				 strerror(errno));
		return;
	}
	char key[16];
	snprintf(key, sizeof(key), "%d", wd);
	if (mu)
		pthread_mutex_lock(mu);
	free(hmap_put(w->dirs, key, xstrdup(dir)));
	if (mu)
		pthread_mutex_unlock(mu);
	DIR *d = dir_open_beneath(vault_rootfd(w->v), dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_DIR)
			pv_push(sub, *dir ? xasprintf("%s/%s", dir, de->d_name)
					  : xstrdup(de->d_name));
	}
	closedir(d);
}

static void add_tree(struct watcher *w, const char *dir)
{
	struct ptrvec sub = {0};
	watch_dir(w, dir, &sub, NULL);
	for (size_t i = 0; i < sub.n; i++) {
		add_tree(w, sub.v[i]);
		free(sub.v[i]);
	}
	pv_free(&sub);
}

/*
 * The whole tree watched at start by several threads, each taking the
 * next folder found: with the page cache cold, each folder is a read
 * from the disk, which answers several at once (2,500 folders: 0.31 s
 * one at a time). Every folder is watched before its notes are indexed
 * all the same: the index's walk starts once this returns.
 */
#define TREE_THREADS 8

struct tree_walk {
	struct watcher *w;
	pthread_mutex_t mu; /* todo, busy, and w->dirs */
	pthread_cond_t cv;
	struct ptrvec todo; /* char * folders not watched yet */
	size_t busy;	    /* folders being watched */
};

static void *tree_worker(void *arg)
{
	struct tree_walk *t = arg;
	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (!t->todo.n && t->busy)
			pthread_cond_wait(&t->cv, &t->mu);
		if (!t->todo.n)
			break; /* none left, none being read */
		char *dir = t->todo.v[--t->todo.n];
		t->busy++;
		pthread_mutex_unlock(&t->mu);
		struct ptrvec sub = {0};
		watch_dir(t->w, dir, &sub, &t->mu);
		free(dir);
		pthread_mutex_lock(&t->mu);
		for (size_t i = 0; i < sub.n; i++)
			pv_push(&t->todo, sub.v[i]);
		pv_free(&sub);
		t->busy--;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static void add_tree_all(struct watcher *w)
{
	struct tree_walk t = {.w = w,
			      .mu = PTHREAD_MUTEX_INITIALIZER,
			      .cv = PTHREAD_COND_INITIALIZER};
	pv_push(&t.todo, xstrdup(""));
	pthread_t th[TREE_THREADS];
	size_t started = 0;
	for (size_t i = 1; i < TREE_THREADS; i++)
		if (pthread_create(&th[started], NULL, tree_worker, &t) == 0)
			started++;
	tree_worker(&t);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pv_free(&t.todo);
	pthread_cond_destroy(&t.cv);
	pthread_mutex_destroy(&t.mu);
}

static void sync_one(struct watcher *w, const char *path)
{
	if (w->m && mount_owns(w->m, path))
		return;
	if (!strcmp(path, ".vaultd/policy.yaml")) {
		_cleanup_free_ char *msg = NULL;
		int r = vault_reload_policy(w->v, &msg);
		if (r < 0) {
			log_error("policy not reloaded, the old one stays: %s",
				  msg);
		} else if (r > 0) {
			log_info("policy reloaded; it reads notes otherwise: "
				 "indexing again");
			if (vault_index_all(w->v, NULL, NULL, &msg) < 0)
				log_error("indexing again: %s", msg);
		} else {
			log_info("policy reloaded");
		}
		return;
	}
	vault_write_lock(w->v);
	int r = vault_sync_path(w->v, path, "external", 0);
	if (r < 0)
		log_warn("%s changed but cannot be read (%s): the index keeps "
			 "what it had until it can",
			 path, strerror(-r));
	/* A hard link to a note (made in the folder): a write through it
	 * is an outside change to every note sharing the file. */
	struct ptrvec same = {0};
	struct stat st;
	if (file_stat(vault_rootfd(w->v), path, &st) == 0 &&
	    S_ISREG(st.st_mode) && st.st_nlink > 1) {
		vault_read_lock(w->v);
		size_t it = 0;
		struct note *n;
		while (index_next(vault_index(w->v), &it, &n))
			if (note_ino(n) == (uint64_t)st.st_ino &&
			    strcmp(note_path(n), path))
				pv_push(&same, xstrdup(note_path(n)));
		vault_read_unlock(w->v);
		for (size_t i = 0; i < same.n; i++)
			if (vault_sync_path(w->v, same.v[i], "external", 0) < 0)
				log_warn("%s changed (a hard link to %s) but "
					 "cannot be read",
					 (char *)same.v[i], path);
	}
	vault_write_unlock(w->v);
	if (w->m) {
		mount_external_change(w->m, path);
		for (size_t i = 0; i < same.n; i++)
			mount_external_change(w->m, same.v[i]);
	}
	for (size_t i = 0; i < same.n; i++)
		free(same.v[i]);
	pv_free(&same);
}

/* A folder appeared or went away: everything under it changed. */
static void sync_folder(struct watcher *w, const char *dir, bool appeared)
{
	struct ptrvec paths = {0};
	vault_read_lock(w->v);
	index_paths_under(vault_index(w->v), dir, &paths);
	vault_read_unlock(w->v);
	for (size_t i = 0; i < paths.n; i++) {
		sync_one(w, paths.v[i]);
		free(paths.v[i]);
	}
	pv_free(&paths);
	if (!appeared)
		return;
	add_tree(w, dir);
	/* Files that arrived with the folder. */
	struct ptrvec stack = {0};
	pv_push(&stack, xstrdup(dir));
	while (stack.n) {
		char *d = stack.v[--stack.n];
		_cleanup_close_ int fd = beneath_open(
			vault_rootfd(w->v), d, O_RDONLY | O_DIRECTORY, 0);
		DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
		if (dp) {
			fd = -1;
			struct dirent *de;
			while ((de = readdir(dp))) {
				if (de->d_name[0] == '.')
					continue;
				char *p = xasprintf("%s/%s", d, de->d_name);
				if (de->d_type == DT_DIR)
					pv_push(&stack, p);
				else {
					sync_one(w, p);
					free(p);
				}
			}
			closedir(dp);
		}
		free(d);
	}
	pv_free(&stack);
}

/* A file renamed onto path that the index has as it is (same inode, size
 * and time): vaultd's own write, indexed and announced by vaultd. */
static bool indexed_as_is(struct watcher *w, const char *path)
{
	struct stat st;
	if (file_stat(vault_rootfd(w->v), path, &st) < 0 ||
	    !S_ISREG(st.st_mode))
		return false;
	vault_read_lock(w->v);
	const struct note *n = index_by_path(vault_index(w->v), path);
	bool same =
		n && note_ino(n) == (uint64_t)st.st_ino &&
		note_size(n) == (int64_t)st.st_size &&
		note_mtime_ns(n) == (int64_t)st.st_mtim.tv_sec * 1000000000 +
					    st.st_mtim.tv_nsec;
	vault_read_unlock(w->v);
	return same;
}

static void handle(struct watcher *w, const struct inotify_event *e)
{
	char key[16];
	snprintf(key, sizeof(key), "%d", e->wd);
	if (e->mask & IN_IGNORED) {
		free(hmap_del(w->dirs, key));
		return;
	}
	const char *dir = hmap_get(w->dirs, key);
	if (!dir || !e->len)
		return;
	/* A temp file of this vaultd's own atomic writes: the write shows
	 * as the rename onto the note, which vaultd has indexed already. */
	if (!(e->mask & IN_ISDIR) && file_is_own_temp(e->name))
		return;
	_cleanup_free_ char *path =
		*dir ? xasprintf("%s/%s", dir, e->name) : xstrdup(e->name);
	if (e->mask & IN_ISDIR) {
		if (e->mask & (IN_CREATE | IN_MOVED_TO))
			sync_folder(w, path, true);
		else if (e->mask & (IN_DELETE | IN_MOVED_FROM))
			sync_folder(w, path, false);
		if (w->m)
			mount_external_change(w->m, path);
		return;
	}
	if (file_is_temp(e->name)) {
		/* Another vaultd's, on its way to a note's name: the note is
		 * synced when it gets there. */
		if (w->m)
			mount_external_change(w->m, path);
		return;
	}
	if ((e->mask & IN_MOVED_TO) && indexed_as_is(w, path))
		return;
	if (e->mask & IN_CREATE) {
		/* Wait for IN_CLOSE_WRITE, except for links and the like. */
		struct stat st;
		if (file_stat(vault_rootfd(w->v), path, &st) == 0 &&
		    S_ISREG(st.st_mode) && st.st_size == 0)
			return;
	}
	sync_one(w, path);
}

static void *watch_thread(void *arg)
{
	struct watcher *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->ready)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	char buf[65536]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		struct pollfd p[2] = {{.fd = w->ifd, .events = POLLIN},
				      {.fd = w->stopfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		ssize_t n = read(w->ifd, buf, sizeof(buf));
		if (n <= 0)
			continue;
		for (char *q = buf; q < buf + n;) {
			const struct inotify_event *e = (void *)q;
			if (e->mask & IN_Q_OVERFLOW) {
				log_warn(
					"too many changes at once in the vault "
					"folder: indexing it again");
				/* Folders made meanwhile are watched too. */
				add_tree(w, "");
				_cleanup_free_ char *msg = NULL;
				if (vault_index_all(w->v, NULL, NULL, &msg) < 0)
					log_error("indexing again: %s", msg);
			} else {
				handle(w, e);
			}
			q += sizeof(*e) + e->len;
		}
	}
	return NULL;
}

int watch_start(struct vault *v, struct watcher **ret, char **ret_msg)
{
	struct watcher *w = xcalloc(1, sizeof(*w));
	w->v = v;
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	w->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->ifd < 0 || w->stopfd < 0) {
		int e = errno;
		*ret_msg = xasprintf("inotify: %s", strerror(e));
		if (w->ifd >= 0)
			close(w->ifd);
		if (w->stopfd >= 0)
			close(w->stopfd);
		free(w);
		return -e;
	}
	w->dirs = hmap_new();
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	add_tree_all(w);
	int r = pthread_create(&w->th, NULL, watch_thread, w);
	if (r != 0) {
		*ret_msg =
			xasprintf("cannot start the watcher: %s", strerror(r));
		watch_stop(w);
		return -r;
	}
	w->started = true;
	*ret = w;
	return 0;
}

void watch_ready(struct watcher *w, struct mount *m)
{
	pthread_mutex_lock(&w->mu);
	w->m = m;
	w->ready = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

struct watcher *watch_stop(struct watcher *w)
{
	if (!w)
		return NULL;
	uint64_t one = 1;
	if (write(w->stopfd, &one, sizeof(one)) < 0) {
	}
	/* A thread still waiting for the index goes on, to stop. */
	pthread_mutex_lock(&w->mu);
	w->ready = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (w->started)
		pthread_join(w->th, NULL);
	hmap_free_with(w->dirs, free);
	close(w->ifd);
	close(w->stopfd);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
	return NULL;
}
