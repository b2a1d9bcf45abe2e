/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vault itself: finding and opening its folder, closing it, the
 * listeners and the events sent to them, the locks readers and writers
 * take, the policy and its reload, and the history attached to it. The
 * rest of vault.h is implemented beside it (vault_int.h lists the files).
 * Takes wmu (listeners, the history scan), rw for reading (the history
 * scan), polmu (the policy) and vmu (`gone`); vault_free() settles the
 * store's racy entries under wmu and smu.
 */
#include "vault_int.h"
#include "history.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>

int vault_probe(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	_cleanup_free_ char *dot = xasprintf("%s/.obsidian", path);
	if (stat(dot, &st) < 0)
		return errno == ENOENT ? -EMEDIUMTYPE : -errno;
	return S_ISDIR(st.st_mode) ? 0 : -EMEDIUMTYPE;
}

int vault_make_obsidian(const char *path)
{
	_cleanup_free_ char *p = xasprintf("%s/.obsidian", path);
	int r = mkdir_p(p, 0777);
	return r < 0 ? r : vault_probe(path);
}

int vault_open(const char *root, struct vault **ret, char **ret_msg)
{
	char real[PATH_MAX];
	if (!realpath(root, real)) {
		int e = errno;
		*ret_msg = xasprintf("vault folder %s: %s", root, strerror(e));
		return -e;
	}
	int fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		*ret_msg = xasprintf("vault folder %s: %s", real, strerror(e));
		return -e;
	}
	struct policy *pol = NULL;
	int r = policy_load(fd, &pol, ret_msg);
	if (r < 0) {
		close(fd);
		return r;
	}
	struct vault *v = xcalloc(1, sizeof(*v));
	v->root = xstrdup(real);
	const char *b = strrchr(real, '/');
	v->name = xstrdup(b && b[1] ? b + 1 : real);
	v->rootfd = fd;
	v->pol = pol;
	v->ix = index_new();
	pthread_rwlock_init(&v->rw, NULL);
	pthread_mutex_init(&v->wmu, NULL);
	pthread_mutex_init(&v->polmu, NULL);
	pthread_mutex_init(&v->vmu, NULL);
	pthread_mutex_init(&v->smu, NULL);
	v->ft = fulltext_new();
	vault_violations_load(v);
	*ret = v;
	return 0;
}

void vault_set_gone(struct vault *v, const char *why)
{
	pthread_mutex_lock(&v->vmu);
	if (!v->gone)
		v->gone = xstrdup(why);
	pthread_mutex_unlock(&v->vmu);
}

char *vault_gone(struct vault *v)
{
	pthread_mutex_lock(&v->vmu);
	char *r = v->gone ? xstrdup(v->gone) : NULL;
	pthread_mutex_unlock(&v->vmu);
	return r;
}

size_t vault_stale_temps(struct vault *v)
{
	return atomic_exchange(&v->stale_temps, 0);
}

struct vault *vault_free(struct vault *v)
{
	if (!v)
		return NULL;
	vault_preload_drop(v);
	vault_fulltext_close(v);
	file_pool_free(v->pool);
	index_free(v->ix);
	policy_free(v->pol);
	vault_violations_free(v->violations, v->nviolations);
	pthread_rwlock_destroy(&v->rw);
	pthread_mutex_destroy(&v->wmu);
	pthread_mutex_destroy(&v->polmu);
	pthread_mutex_destroy(&v->vmu);
	pthread_mutex_destroy(&v->smu);
	for (size_t i = 0; i < v->touched.n; i++)
		free(v->touched.v[i]);
	pv_free(&v->touched);
	v->ft = fulltext_free(v->ft);
	free(v->gone);
	store_close(v->store);
	if (v->rootfd >= 0)
		close(v->rootfd);
	free(v->listeners);
	free(v->root);
	free(v->name);
	free(v);
	return NULL;
}

void vault_add_listener(struct vault *v, vault_listener_fn fn, void *ud)
{
	/* Events are sent under the writer lock. */
	pthread_mutex_lock(&v->wmu);
	v->listeners = xrealloc(v->listeners,
				(v->nlisteners + 1) * sizeof(*v->listeners));
	v->listeners[v->nlisteners++] = (struct listener){fn, ud};
	pthread_mutex_unlock(&v->wmu);
}

void vault_remove_listener(struct vault *v, vault_listener_fn fn, void *ud)
{
	pthread_mutex_lock(&v->wmu);
	for (size_t i = 0; i < v->nlisteners; i++) {
		if (v->listeners[i].fn == fn && v->listeners[i].ud == ud) {
			memmove(&v->listeners[i], &v->listeners[i + 1],
				(v->nlisteners - i - 1) *
					sizeof(*v->listeners));
			v->nlisteners--;
			break;
		}
	}
	pthread_mutex_unlock(&v->wmu);
}

void vault_touched(struct vault *v, const char *path)
{
	if (v->building && path)
		pv_push(&v->touched, xstrdup(path));
}

/* path is one of the origin's paths or under one of them. */
static bool origin_has(const struct vault_origin *o, const char *path)
{
	for (size_t i = 0; o && path && i < ARRAY_SIZE(o->paths); i++) {
		const char *p = o->paths[i];
		size_t l = p ? strlen(p) : 0;
		if (p && !strncmp(path, p, l) &&
		    (path[l] == 0 || path[l] == '/'))
			return true;
	}
	return false;
}

static void emit(struct vault *v, struct vault_event *ev)
{
	vault_touched(v, ev->path);
	vault_touched(v, ev->old_path);
	const struct vault_origin *o = v->origin;
	if (origin_has(o, ev->path) || origin_has(o, ev->old_path))
		ev->origin = o->token;
	for (size_t i = 0; i < v->nlisteners; i++)
		v->listeners[i].fn(ev, v->listeners[i].ud);
}

void vault_emit(struct vault *v, enum vault_event_type t, const char *path,
		const char *old_path, const char *source, uint64_t old_ino)
{
	struct vault_event ev = {.type = t,
				 .path = path,
				 .old_path = old_path,
				 .source = source,
				 .old_ino = old_ino};
	emit(v, &ev);
}

void vault_emit_written(struct vault *v, const char *path, bool created,
			const char *source, uint64_t old_ino, const char *text,
			size_t len, const struct stat *st)
{
	struct vault_event ev = {.type = created ? VEV_CREATED : VEV_CHANGED,
				 .path = path,
				 .source = source,
				 .old_ino = old_ino,
				 .text = text,
				 .len = len,
				 .st = st};
	emit(v, &ev);
}

const char *vault_root(const struct vault *v)
{
	return v->root;
}

const char *vault_name(const struct vault *v)
{
	return v->name;
}

int vault_rootfd(const struct vault *v)
{
	return v->rootfd;
}

void vault_read_lock(struct vault *v)
{
	pthread_rwlock_rdlock(&v->rw);
}

void vault_read_unlock(struct vault *v)
{
	pthread_rwlock_unlock(&v->rw);
}

void vault_write_lock(struct vault *v)
{
	atomic_fetch_add(&v->writers_waiting, 1);
	pthread_mutex_lock(&v->wmu);
	atomic_fetch_sub(&v->writers_waiting, 1);
}

void vault_write_unlock(struct vault *v)
{
	v->origin = NULL;
	void *taken = v->settle_take ? v->settle_take(v->settle_ud) : NULL;
	vault_settle_run_fn run = v->settle_run;
	void *ud = v->settle_ud;
	pthread_mutex_unlock(&v->wmu);
	if (taken)
		run(taken, ud);
}

void vault_set_settle(struct vault *v, vault_settle_take_fn take,
		      vault_settle_run_fn run, void *ud)
{
	pthread_mutex_lock(&v->wmu);
	v->settle_take = take;
	v->settle_run = run;
	v->settle_ud = ud;
	pthread_mutex_unlock(&v->wmu);
}

void vault_set_origin(struct vault *v, const struct vault_origin *o)
{
	v->origin = o;
}

struct index *vault_index(struct vault *v)
{
	return v->ix;
}

struct policy *vault_policy_get(struct vault *v)
{
	pthread_mutex_lock(&v->polmu);
	struct policy *p = policy_ref(v->pol);
	pthread_mutex_unlock(&v->polmu);
	return p;
}

int vault_reload_policy(struct vault *v, char **ret_msg)
{
	struct policy *p = NULL;
	int r = policy_load(v->rootfd, &p, ret_msg);
	if (r < 0)
		return r;
	pthread_mutex_lock(&v->polmu);
	struct policy *old = v->pol;
	v->pol = p;
	pthread_mutex_unlock(&v->polmu);
	bool reread = policy_note_flags(old) != policy_note_flags(p);
	policy_free(old); /* freed when the last write using it is done */
	return reread ? 1 : 0;
}

unsigned vault_note_flags(struct vault *v)
{
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	return policy_note_flags(pol);
}

int vault_read_text(struct vault *v, const struct note *n, char **ret,
		    size_t *ret_len)
{
	return file_read(v->rootfd, note_path(n), VAULT_TEXT_MAX, ret, ret_len,
			 NULL);
}

static void history_listener(const struct vault_event *ev, void *ud)
{
	struct history *h = ud;
	const char *who = ev->source && *ev->source ? ev->source : "unknown";
	switch (ev->type) {
	case VEV_CREATED:
	case VEV_CHANGED:
		if (ev->text)
			history_note_written(h, ev->path, who, ev->text,
					     ev->len, ev->st);
		else
			history_note_changed(h, ev->path, who);
		break;
	case VEV_DELETED:
		history_note_deleted(h, ev->path, who);
		break;
	case VEV_RENAMED:
		history_note_renamed(h, ev->old_path, ev->path, who);
		break;
	}
}

void vault_attach_history(struct vault *v, struct history *h)
{
	if (v->hist)
		vault_remove_listener(v, history_listener, v->hist);
	v->hist = h;
	if (h)
		vault_add_listener(v, history_listener, h);
}

void vault_keep_original(struct vault *v, const char *path)
{
	if (v->hist)
		history_keep_original(v->hist, path);
}

struct history *vault_history(struct vault *v)
{
	return v->hist;
}

/* The notes as the index has them (read lock held): paths copied. */
static struct history_file *note_files(struct vault *v, size_t *ret_n)
{
	size_t n;
	struct note *const *all = index_sorted(v->ix, &n);
	struct history_file *files = xcalloc(n ? n : 1, sizeof(*files));
	for (size_t i = 0; i < n; i++)
		/* A racy note's time proves nothing: history reads it. */
		files[i] = (struct history_file){
			xstrdup(note_path(all[i])),
			note_racy(all[i]) ? 0 : note_mtime_ns(all[i]),
			note_size(all[i]), note_ino(all[i])};
	*ret_n = n;
	return files;
}

static void free_files(struct history_file *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)f[i].path);
	free(f);
}

int vault_history_scan(struct vault *v)
{
	if (!v->hist)
		return 0;
	/* The slow part (reading what changed) while writers go on. */
	size_t n;
	pthread_rwlock_rdlock(&v->rw);
	struct history_file *files = note_files(v, &n);
	pthread_rwlock_unlock(&v->rw);
	int r = history_prepare(v->hist, files, n);
	free_files(files, n);
	if (r == -ECANCELED)
		return r;
	/* Then, with writers held, what is left. */
	vault_write_lock(v);
	pthread_rwlock_rdlock(&v->rw);
	files = note_files(v, &n);
	pthread_rwlock_unlock(&v->rw);
	r = history_scan(v->hist, files, n);
	free_files(files, n);
	vault_write_unlock(v);
	return r;
}
