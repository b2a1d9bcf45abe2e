/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "vault.h"
#include "fileio.h"
#include "graph.h"
#include "history.h"
#include "rewrite.h"
#include "store.h"
#include "u8.h"
#include "note_int.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>

#define MAX_VIOLATIONS 1000
#define VIOLATIONS_PATH ".vaultd/violations.jsonl"
#define REJECTED_DIR ".vaultd/rejected"

struct listener {
	vault_listener_fn fn;
	void *ud;
};

/*
 * Locks, and the order they nest in (a lock may be taken while holding
 * only locks that come before it in this list):
 *
 *   fwmu    the full-text worker (vault_fulltext_work): one at a time
 *   wmu     the writer lock (vault_write_lock): one writer at a time;
 *           events are sent under it
 *   smu     the store's writer connection
 *   rw      the in-memory index: readers share it (vault_read_lock),
 *           a writer takes it for writing only to swap notes in
 *   fmu     the full-text queue (dirty notes), with fcv
 *   vmu     the violations ring and `gone`
 *   polmu   the policy pointer; innermost, nothing is taken inside it
 *   prep.mu the full-text build's read-ahead (struct prepper); innermost
 *
 * Callers outside (the mount, the control socket) take their own locks
 * before wmu or after releasing it. Listeners run under wmu and may take
 * their own locks there, as long as they never call back into the vault
 * while holding them. ThreadSanitizer's stress test (tests/test_stress.c)
 * checks the order.
 * Fields set once in vault_open() and never changed (root, name, rootfd)
 * need no lock.
 */
struct vault {
	char *root;	  /* constant */
	char *name;	  /* constant */
	int rootfd;	  /* constant */
	struct index *ix; /* rw (replaced under wmu + rw for writing) */
	/* The policy: swapped by a reload under polmu; users take their own
	 * reference (vault_policy_get()), so a reload never frees one in
	 * use. */
	pthread_mutex_t polmu;
	struct policy *pol; /* polmu */
	pthread_rwlock_t rw;
	pthread_mutex_t wmu;
	/* Index builds running, and the paths changed meanwhile (under
	 * wmu): a build's result would not have them. */
	int building;		    /* wmu */
	struct ptrvec touched;	    /* wmu */
	struct listener *listeners; /* wmu */
	size_t nlisteners;	    /* wmu */
	/* Ring of recent violations, oldest first. */
	pthread_mutex_t vmu;
	struct vault_violation *violations; /* vmu */
	size_t nviolations;		    /* vmu */
	atomic_size_t idx_done, idx_total;  /* atomic */
	atomic_bool idx_ready;		    /* atomic */
	size_t idx_cached, idx_parsed;	    /* rw */
	/* The on-disk index (may be NULL): attached before the first index
	 * is built, i.e. before any reader or writer uses it, then only its
	 * own locks (store.c) and smu for its writer connection. dirty holds
	 * the paths whose stored entry or text is out of date (fmu), worked
	 * off by vault_fulltext_work(). */
	struct store *_Atomic store; /* atomic: published to readers */
	/* The history: attached and detached under wmu (or while no writer
	 * runs); used by writers under wmu, by readers through its own
	 * locks (history.c). */
	struct history *_Atomic hist; /* atomic: published to readers */
	pthread_mutex_t fmu;
	/* The full-text thread puts a big note holding smu alone; writers
	 * that find smu busy queue their note instead of waiting. */
	pthread_mutex_t smu;
	/* A build's store transaction spans slices (vault_fulltext_work()):
	 * writers that find it open queue their note as if smu were busy. */
	bool store_txn; /* smu */
	/* One vault_fulltext_work() at a time. */
	pthread_mutex_t fwmu;
	pthread_cond_t fcv;	  /* with fmu */
	struct ptrvec dirty;	  /* fmu; a queue: v[dirty_head .. n) */
	size_t dirty_head;	  /* fmu */
	struct hmap *dirty_set;	  /* fmu */
	bool fts_stop, fts_reset; /* fmu */
	bool fts_taking;     /* fmu: paths taken off the queue, not committed */
	atomic_bool fts_off; /* atomic; set once, never cleared */
	atomic_size_t fts_done, fts_total; /* atomic */
	atomic_bool fts_ready;		   /* atomic */
	char *fts_note;			   /* fmu */
	atomic_size_t stale_temps; /* vaultd's temp files removed by scans */
	/* Racy notes put in the store with no file time (note.h), by path;
	 * settled (read again, their time stored) once their time is old
	 * enough, from settle_due_ns on. */
	struct hmap *unsettled; /* wmu */
	int64_t settle_due_ns;	/* wmu */
	/* Writers waiting in vault_write_lock(): the full-text thread cuts
	 * its batch short for them. */
	atomic_uint writers_waiting;
	/* Spare files for writes (fileio.h), made on the first write. */
	struct file_pool *pool; /* wmu */
	bool pool_tried;	/* wmu */
	size_t pool_fill;	/* wmu: the spares asked of it */
	file_in_use_fn in_use;	/* wmu: files vaultd holds elsewhere */
	void *in_use_ud;	/* wmu */
	char *gone; /* vmu: why the vault folder is no longer served */
};

static void violation_clear(struct vault_violation *o)
{
	free(o->time);
	free(o->source);
	free(o->path);
	free(o->message);
	free(o->action);
	free(o->rejected_text);
}

void vault_violations_free(struct vault_violation *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		violation_clear(&a[i]);
	free(a);
}

/* Append to the ring (vmu held, or before the vault is shared). */
static void violation_push(struct vault *v, const struct vault_violation *o)
{
	if (v->nviolations == MAX_VIOLATIONS) {
		violation_clear(&v->violations[0]);
		memmove(v->violations, v->violations + 1,
			--v->nviolations * sizeof(*v->violations));
	}
	v->violations = xrealloc(v->violations,
				 (v->nviolations + 1) * sizeof(*v->violations));
	v->violations[v->nviolations++] = *o;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static char *member(const cJSON *o, const char *key)
{
	return dup_or_null(cJSON_GetStringValue(cJSON_GetObjectItem(o, key)));
}

/* The file is JSON lines, one object per violation (as written below). */
static void load_violations(struct vault *v)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (file_read(v->rootfd, VIOLATIONS_PATH, 64u << 20, &text, &len,
		      NULL) < 0)
		return;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		if (cJSON_IsObject(o))
			violation_push(v, &(struct vault_violation){
						  member(o, "time"),
						  member(o, "source"),
						  member(o, "path"),
						  member(o, "message"),
						  member(o, "action"),
						  member(o, "rejected_text"),
					  });
		cJSON_Delete(o);
	}
}

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
	pthread_mutex_init(&v->fmu, NULL);
	pthread_mutex_init(&v->smu, NULL);
	pthread_mutex_init(&v->fwmu, NULL);
	pthread_cond_init(&v->fcv, NULL);
	v->dirty_set = hmap_new();
	v->unsettled = hmap_new();
	load_violations(v);
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

static void settle_racy(struct vault *v, bool wait);
struct unsettled;
static void unsettled_free(struct unsettled *u);

static void free_unsettled(struct vault *v)
{
	size_t it = 0;
	void *p;
	while (hmap_next(v->unsettled, &it, NULL, &p))
		unsettled_free(p);
	hmap_free(v->unsettled);
}

struct vault *vault_free(struct vault *v)
{
	if (!v)
		return NULL;
	/* One transaction: a commit per entry would sync once each. */
	if (v->store && v->settle_due_ns) {
		vault_write_lock(v);
		pthread_mutex_lock(&v->smu);
		if (store_begin(v->store) == 0) {
			settle_racy(v, true);
			if (store_commit(v->store) < 0)
				store_rollback(v->store);
		}
		pthread_mutex_unlock(&v->smu);
		vault_write_unlock(v);
	}
	file_pool_free(v->pool);
	index_free(v->ix);
	policy_free(v->pol);
	vault_violations_free(v->violations, v->nviolations);
	pthread_rwlock_destroy(&v->rw);
	pthread_mutex_destroy(&v->wmu);
	pthread_mutex_destroy(&v->polmu);
	pthread_mutex_destroy(&v->vmu);
	pthread_mutex_destroy(&v->fmu);
	pthread_mutex_destroy(&v->smu);
	pthread_mutex_destroy(&v->fwmu);
	pthread_cond_destroy(&v->fcv);
	for (size_t i = v->dirty_head; i < v->dirty.n; i++)
		free(v->dirty.v[i]);
	pv_free(&v->dirty);
	for (size_t i = 0; i < v->touched.n; i++)
		free(v->touched.v[i]);
	pv_free(&v->touched);
	hmap_free(v->dirty_set);
	free_unsettled(v);
	free(v->fts_note);
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

/* A path changed while an index build runs (writer lock held): the build
 * takes it again from the folder when it is put in place. */
static void touched(struct vault *v, const char *path)
{
	if (v->building && path)
		pv_push(&v->touched, xstrdup(path));
}

static void emit(struct vault *v, enum vault_event_type t, const char *path,
		 const char *old_path, const char *source, uint64_t old_ino)
{
	touched(v, path);
	touched(v, old_path);
	struct vault_event ev = {t, path, old_path, source, old_ino};
	for (size_t i = 0; i < v->nlisteners; i++)
		v->listeners[i].fn(&ev, v->listeners[i].ud);
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
	pthread_mutex_unlock(&v->wmu);
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

/* How notes are read now. */
static unsigned note_flags(struct vault *v)
{
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	return policy_note_flags(pol);
}

int vault_read_text(struct vault *v, const struct note *n, char **ret,
		    size_t *ret_len)
{
	return file_read(v->rootfd, n->path, 1u << 30, ret, ret_len, NULL);
}

/* ---- indexing ------------------------------------------------------------ */

/* A note's stat as the folder walk saw it. */
struct walk_stat {
	int64_t mtime_ns, size, btime;
	uint64_t ino;
	bool valid;
};

struct scan {
	struct vault *v;
	struct ptrvec notes; /* char * paths */
	/* With stored entries to compare with: each note's stat, taken by
	 * the walk (one statx in a folder already open), so that a note
	 * whose entry is up to date costs no system call of its own. */
	bool want_stat;
	struct walk_stat *stats; /* notes.n of them */
	size_t stats_cap;
	struct ptrvec files;
	struct note **parsed;
	bool *cached; /* parsed[i] came from the stored entry */
	struct store_entries *stored;
	atomic_size_t next;
	vault_progress_fn progress;
	void *ud;
	struct policy *pol;	    /* the policy when the build started */
	const _Atomic bool *cancel; /* the caller's (cancel_bind) */
	/* Folders and notes that are there but could not be read. */
	pthread_mutex_t emu;
	size_t nerr;
	int err;
	char *err_path;
};

/* A read error other than "not there any more". */
static bool read_failed(int err)
{
	return err < 0 && err != -ENOENT && err != -ENOTDIR && err != -ELOOP &&
	       err != -EISDIR;
}

static void scan_error(struct scan *s, const char *path, int err)
{
	pthread_mutex_lock(&s->emu);
	if (!s->nerr++) {
		s->err = err;
		s->err_path = xstrdup(*path ? path : ".");
	}
	pthread_mutex_unlock(&s->emu);
}

static void walk_stat(struct scan *s, int dfd, const char *name)
{
	if (s->notes.n > s->stats_cap) {
		s->stats_cap = s->stats_cap ? 2 * s->stats_cap : 1024;
		s->stats = xrealloc(s->stats, s->stats_cap * sizeof(*s->stats));
	}
	struct walk_stat *w = &s->stats[s->notes.n - 1];
	struct statx sx;
	memset(w, 0, sizeof(*w));
	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW,
		  STATX_BASIC_STATS | STATX_BTIME, &sx) < 0 ||
	    !S_ISREG(sx.stx_mode))
		return;
	w->mtime_ns = (int64_t)sx.stx_mtime.tv_sec * 1000000000LL +
		      sx.stx_mtime.tv_nsec;
	w->size = (int64_t)sx.stx_size;
	w->ino = sx.stx_ino;
	w->btime = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime.tv_sec : 0;
	w->valid = true;
}

/* dir/name ("" is the root). */
static char *join_path(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *p = xmalloc(dl + nl + 2);
	if (dl) {
		memcpy(p, dir, dl);
		p[dl++] = '/';
	}
	memcpy(p + dl, name, nl + 1);
	return p;
}

static void walk(struct scan *s, const char *dir)
{
	DIR *d = dir_open_beneath(s->v->rootfd, dir);
	if (!d) {
		if (read_failed(-errno))
			scan_error(s, dir, -errno);
		return;
	}
	struct ptrvec subdirs = {0};
	struct dirent *de;
	while ((de = readdir(d))) {
		/* Left by a vaultd that died mid-write: the note it was
		 * replacing is whole. */
		if (file_is_stale_temp(de->d_name) &&
		    unlinkat(dirfd(d), de->d_name, 0) == 0)
			atomic_fetch_add(&s->v->stale_temps, 1);
		if (de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *p = join_path(dir, de->d_name);
		unsigned char t = de->d_type;
		if (t == DT_UNKNOWN) {
			struct stat st;
			if (fstatat(dirfd(d), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			t = S_ISDIR(st.st_mode)	  ? DT_DIR
			    : S_ISREG(st.st_mode) ? DT_REG
						  : DT_UNKNOWN;
		}
		/* Symlinks are not followed: nothing outside the vault. */
		if (t == DT_DIR) {
			if (!policy_ignored(s->pol, p, true))
				pv_push(&subdirs, TAKE_PTR(p));
		} else if (t == DT_REG) {
			if (policy_ignored(s->pol, p, false))
				continue;
			if (path_is_note(p)) {
				pv_push(&s->notes, TAKE_PTR(p));
				if (s->want_stat)
					walk_stat(s, dirfd(d), de->d_name);
			} else
				pv_push(&s->files, TAKE_PTR(p));
		}
	}
	closedir(d);
	for (size_t i = 0; i < subdirs.n; i++) {
		walk(s, subdirs.v[i]);
		free(subdirs.v[i]);
	}
	pv_free(&subdirs);
}

/* A note file's text and stat, read through one descriptor (the text
 * and the stat belong together). *ret_text is NULL for a note too big to
 * index. */
static int read_note_file(int rootfd, const char *path, char **ret_text,
			  size_t *ret_len, struct stat *ret_st,
			  int64_t *ret_btime)
{
	_cleanup_close_ int fd = beneath_open(rootfd, path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &sx) <
	    0)
		return -errno;
	if (!S_ISREG(sx.stx_mode))
		return -EISDIR;
	memset(ret_st, 0, sizeof(*ret_st));
	ret_st->st_mtim.tv_sec = sx.stx_mtime.tv_sec;
	ret_st->st_mtim.tv_nsec = sx.stx_mtime.tv_nsec;
	ret_st->st_size = (off_t)sx.stx_size;
	ret_st->st_ino = sx.stx_ino;
	*ret_btime = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime.tv_sec : 0;
	*ret_text = NULL;
	*ret_len = 0;
	if (!ret_text || sx.stx_size > NOTE_MAX_INDEXED)
		return 0;
	size_t cap = (size_t)sx.stx_size + 1, len = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		ssize_t r = read(fd, buf + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == cap - 1) {
			if (cap > NOTE_MAX_INDEXED)
				break;
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
	}
	buf[len] = 0;
	*ret_text = buf;
	*ret_len = len;
	return 0;
}

/* Read and parse one note; NULL when it vanished meanwhile. The text is
 * handed back when asked for. */
/* The note at path, read and parsed; NULL when it cannot be read (the
 * error in *ret_err when asked). */
static struct note *load_note(int rootfd, const char *path, unsigned flags,
			      char **ret_text, size_t *ret_len, int *ret_err)
{
	char *text;
	size_t len;
	struct stat st;
	int64_t btime;
	int r = read_note_file(rootfd, path, &text, &len, &st, &btime);
	if (ret_err)
		*ret_err = r;
	if (r < 0)
		return NULL;
	struct note *n = note_new(path, text, len, flags);
	n->too_big = text == NULL;
	note_set_stat(n, &st, btime, text, len);
	if (ret_text) {
		*ret_text = text;
		*ret_len = len;
	} else {
		free(text);
	}
	return n;
}

/* The stored entry, when the file is the one it was made from. */
static struct note *cached_note(const char *path, const struct store_entry *e,
				const struct walk_stat *w)
{
	if (!w->valid || w->mtime_ns != e->mtime_ns || w->size != e->size ||
	    w->ino != e->ino)
		return NULL;
	struct note *n = note_from_blob(path, e->blob, e->len);
	if (!n)
		return NULL;
	n->mtime_ns = w->mtime_ns;
	n->size = w->size;
	n->ino = w->ino;
	n->btime = w->btime ? w->btime : w->mtime_ns / 1000000000LL;
	return n;
}

static void *walk_main(void *arg)
{
	walk(arg, "");
	return NULL;
}

static void *scan_worker(void *arg)
{
	struct scan *s = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&s->next, 1);
		if (i >= s->notes.n || (s->cancel && atomic_load(s->cancel)))
			break;
		const char *path = s->notes.v[i];
		const struct store_entry *e =
			store_entries_get(s->stored, path);
		if (e && s->stats)
			s->parsed[i] = cached_note(path, e, &s->stats[i]);
		/* Read under another policy: read again. */
		if (s->parsed[i] &&
		    s->parsed[i]->read_flags != policy_note_flags(s->pol))
			s->parsed[i] = note_free(s->parsed[i]);
		if (s->parsed[i])
			s->cached[i] = true;
		else {
			int err;
			s->parsed[i] = load_note(s->v->rootfd, path,
						 policy_note_flags(s->pol),
						 NULL, NULL, &err);
			if (read_failed(err))
				scan_error(s, path, err);
		}
		size_t done = atomic_fetch_add(&s->v->idx_done, 1) + 1;
		if (s->progress && (done % 1024 == 0))
			s->progress(done, s->notes.n, s->ud);
	}
	return NULL;
}

#define SCAN_THREADS 8
#define SCAN_THREADS_MAX 16

/* Mark a path's stored entry out of date (fmu held). While a build runs
 * it counts towards its total; once built, searches put what is queued
 * first (vault_fulltext_flush), so the index stays ready. */
static void dirty_add_locked(struct vault *v, const char *path)
{
	if (hmap_get(v->dirty_set, path))
		return;
	char *p = xstrdup(path);
	pv_push(&v->dirty, p);
	hmap_put(v->dirty_set, p, p);
	if (!atomic_load(&v->fts_ready))
		atomic_fetch_add(&v->fts_total, 1);
}

/* Below this many changed notes, the first index waits for the on-disk
 * one to catch up (a fraction of a second), so full-text search is
 * ready as soon as anything is. */
#define SYNC_CATCH_UP 2000

/* A build stopped half way (vaultd stopping): nothing of it is used, the
 * index and the stored entries stay as they were. */
static int index_cancelled(struct vault *v, struct scan *s, char **ret_msg)
{
	for (size_t i = 0; i < s->notes.n; i++) {
		note_free(s->parsed[i]);
		free(s->notes.v[i]);
	}
	for (size_t i = 0; i < s->files.n; i++)
		free(s->files.v[i]);
	free(s->parsed);
	free(s->cached);
	free(s->stats);
	pv_free(&s->notes);
	pv_free(&s->files);
	store_entries_free(s->stored);
	free(s->err_path);
	pthread_mutex_lock(&v->wmu);
	if (--v->building == 0) {
		for (size_t i = 0; i < v->touched.n; i++)
			free(v->touched.v[i]);
		pv_free(&v->touched);
	}
	pthread_mutex_unlock(&v->wmu);
	if (ret_msg)
		*ret_msg = xstrdup("indexing was cancelled");
	return -ECANCELED;
}

static struct file_pool *write_pool(struct vault *v);

int vault_index_all(struct vault *v, vault_progress_fn progress, void *ud,
		    char **ret_msg)
{
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	struct scan s = {.v = v,
			 .progress = progress,
			 .ud = ud,
			 .pol = pol,
			 .cancel = cancel_flag(),
			 .emu = PTHREAD_MUTEX_INITIALIZER};
	pthread_mutex_lock(&v->wmu);
	v->building++;
	pthread_mutex_unlock(&v->wmu);
	atomic_store(&v->idx_ready, false);
	atomic_store(&v->idx_done, 0);
	atomic_store(&v->idx_total, 0);
	/* The folder walk and reading the stored entries, side by side. */
	/* The store's connection is the full-text thread's too (a rebuild
	 * runs while it works): smu around every use. */
	pthread_mutex_lock(&v->smu);
	s.want_stat = v->store && !store_empty(v->store);
	pthread_mutex_unlock(&v->smu);
	pthread_t wt;
	bool walking = pthread_create(&wt, NULL, walk_main, &s) == 0;
	if (v->store) {
		pthread_mutex_lock(&v->smu);
		s.stored = store_load(v->store);
		pthread_mutex_unlock(&v->smu);
	}
	if (walking)
		pthread_join(wt, NULL);
	else
		walk(&s, "");
	atomic_store(&v->idx_total, s.notes.n);
	s.parsed = xcalloc(s.notes.n + 1, sizeof(struct note *));
	s.cached = xcalloc(s.notes.n + 1, sizeof(bool));

	/* More readers than CPUs: with the files not in the page cache,
	 * reading is waiting for the disk, and a disk answers several
	 * requests at once (100,000 notes: 17 s read two at a time, 6.5 s
	 * eight at a time). */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nthreads = ncpu > SCAN_THREADS ? (size_t)ncpu : SCAN_THREADS;
	if (nthreads > SCAN_THREADS_MAX)
		nthreads = SCAN_THREADS_MAX;
	if (nthreads > s.notes.n / 64 + 1)
		nthreads = s.notes.n / 64 + 1;
	pthread_t th[SCAN_THREADS_MAX];
	size_t started = 0;
	for (size_t i = 1; i < nthreads; i++)
		if (pthread_create(&th[started], NULL, scan_worker, &s) == 0)
			started++;
	scan_worker(&s);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (cancel_requested())
		return index_cancelled(v, &s, ret_msg);

	struct index *ix = index_new();
	size_t cached = 0, parsed = 0;
	pthread_mutex_lock(&v->fmu);
	struct note **put = xcalloc(s.notes.n + 1, sizeof(*put));
	size_t nput = 0;
	for (size_t i = 0; i < s.notes.n; i++) {
		if (s.parsed[i]) {
			put[nput++] = s.parsed[i];
			if (s.cached[i])
				cached++;
			else
				parsed++;
		}
		if (v->store && !s.cached[i])
			dirty_add_locked(v, s.notes.v[i]);
		store_entries_use(s.stored, s.notes.v[i]);
		free(s.notes.v[i]);
	}
	/* Stored notes that are gone. */
	size_t it = 0;
	const char *key;
	while (store_entries_next_unused(s.stored, &it, &key))
		dirty_add_locked(v, key);
	if (v->dirty_head >= v->dirty.n)
		atomic_store(&v->fts_ready, v->store != NULL);
	size_t ndirty = v->dirty.n - v->dirty_head;
	pthread_cond_broadcast(&v->fcv);
	pthread_mutex_unlock(&v->fmu);
	index_put_all(ix, put, nput);
	free(put);
	store_entries_free(s.stored);
	for (size_t i = 0; i < s.files.n; i++) {
		index_put_file(ix, s.files.v[i]);
		free(s.files.v[i]);
	}
	index_resolve_all(ix);
	free(s.parsed);
	free(s.cached);
	free(s.stats);
	pv_free(&s.notes);
	pv_free(&s.files);

	/* In place, with what writers changed while it was built taken again
	 * from the folder (their events were sent already). */
	pthread_mutex_lock(&v->wmu);
	pthread_rwlock_wrlock(&v->rw);
	struct index *old = v->ix;
	v->ix = ix;
	v->idx_cached = cached;
	v->idx_parsed = parsed;
	pthread_rwlock_unlock(&v->rw);
	struct ptrvec again = {0};
	if (--v->building == 0) {
		again = v->touched;
		v->touched = (struct ptrvec){0};
	} else {
		for (size_t i = 0; i < v->touched.n; i++)
			pv_push(&again, xstrdup(v->touched.v[i]));
	}
	for (size_t i = 0; i < again.n; i++) {
		vault_sync_path(v, again.v[i], "vaultd", SYNC_NO_GUARD);
		free(again.v[i]);
	}
	pv_free(&again);
	/* The spares, made ahead now rather than at the first write. */
	write_pool(v);
	pthread_mutex_unlock(&v->wmu);
	index_free(old);
	if (v->store && ndirty && ndirty <= SYNC_CATCH_UP) {
		vault_fulltext_work(v);
		vault_substrings_work(v);
	}
	atomic_store(&v->idx_ready, true);
	if (progress)
		progress(atomic_load(&v->idx_done), atomic_load(&v->idx_total),
			 ud);
	if (s.nerr) {
		if (ret_msg)
			*ret_msg = xasprintf(
				"%zu file%s or folder%s could not be read and "
				"%s not in the index (the first: %s: %s)",
				s.nerr, s.nerr == 1 ? "" : "s",
				s.nerr == 1 ? "" : "s",
				s.nerr == 1 ? "is" : "are", s.err_path,
				strerror(-s.err));
		free(s.err_path);
		return s.err;
	}
	return 0;
}

void vault_index_state(struct vault *v, size_t *ret_done, size_t *ret_total,
		       bool *ret_ready)
{
	*ret_done = atomic_load(&v->idx_done);
	*ret_total = atomic_load(&v->idx_total);
	*ret_ready = atomic_load(&v->idx_ready);
}

/* ---- the on-disk index ----------------------------------------------------
 */

static void history_listener(const struct vault_event *ev, void *ud)
{
	struct history *h = ud;
	const char *who = ev->source && *ev->source ? ev->source : "unknown";
	switch (ev->type) {
	case VEV_CREATED:
	case VEV_CHANGED:
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
			xstrdup(all[i]->path),
			all[i]->racy ? 0 : all[i]->mtime_ns, all[i]->size,
			all[i]->ino};
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

void vault_attach_store(struct vault *v, struct store *s)
{
	store_close(v->store);
	v->store = s;
}

struct store *vault_store(struct vault *v)
{
	return v->fts_off ? NULL : v->store;
}

void vault_store_state(struct vault *v, struct vault_store_state *st)
{
	memset(st, 0, sizeof(*st));
	st->enabled = v->store != NULL && !v->fts_off;
	st->ready = st->enabled && atomic_load(&v->fts_ready);
	st->substrings_ready = st->ready && store_sub_ready(v->store);
	st->done = atomic_load(&v->fts_done);
	st->total = atomic_load(&v->fts_total);
	pthread_rwlock_rdlock(&v->rw);
	st->cached = v->idx_cached;
	st->parsed = v->idx_parsed;
	pthread_rwlock_unlock(&v->rw);
	if (v->store) {
		st->path = store_path(v->store);
		st->bytes = store_size(v->store);
	}
}

char *vault_fulltext_note(struct vault *v)
{
	pthread_mutex_lock(&v->fmu);
	char *n = TAKE_PTR(v->fts_note);
	pthread_mutex_unlock(&v->fmu);
	return n;
}

/* Queue a path for the full-text thread. Only an empty queue wakes it:
 * once woken, it waits a moment for more (vault_fulltext_wait_work). */
static void dirty_add(struct vault *v, const char *path)
{
	pthread_mutex_lock(&v->fmu);
	bool idle = v->dirty_head >= v->dirty.n;
	dirty_add_locked(v, path);
	if (idle)
		pthread_cond_broadcast(&v->fcv);
	pthread_mutex_unlock(&v->fmu);
}

/* A write failed (damage, a full disk): start over from the vault. */
static void store_broke(struct vault *v)
{
	pthread_mutex_lock(&v->fmu);
	v->fts_reset = true;
	atomic_store(&v->fts_ready, false);
	pthread_cond_broadcast(&v->fcv);
	pthread_mutex_unlock(&v->fmu);
}

/*
 * Notes over this size are put in a transaction of their own, without
 * the writer lock: they cost tens of milliseconds in tokenising alone.
 */
#define STORE_SYNC_MAX (64 * 1024)

/*
 * The on-disk index follows a note that just changed, was deleted or
 * renamed in the index (writer lock held): its path is queued, and the
 * full-text thread puts what is queued a moment later in one transaction
 * (a burst of writes costs one commit; a burst of writes to one note, one
 * put). Nothing is lost by the wait: every search first puts what is
 * queued (vault_fulltext_flush), and after a crash the next start reads
 * every note whose size, mtime or inode differs from its stored entry,
 * which a note written since always does (a new file renamed in place).
 */
static void store_queue(struct vault *v, const char *path)
{
	if (vault_store(v))
		dirty_add(v, path);
}

void vault_store_damaged(struct vault *v)
{
	if (v->store && store_failed(v->store))
		store_broke(v);
}

/* Start over: a new database, every note dirty (writer lock held). */
static void store_rebuild(struct vault *v)
{
	char *note = NULL;
	int r = store_reset(v->store, &note);
	pthread_mutex_lock(&v->fmu);
	free(v->fts_note);
	v->fts_note = r < 0 ? xasprintf("%s; full-text search is off", note)
			    : xasprintf("index %s was damaged or could not be "
					"written (%s); rebuilt",
					store_path(v->store),
					note ? note : "write failed");
	v->fts_reset = false;
	for (size_t i = v->dirty_head; i < v->dirty.n; i++)
		free(v->dirty.v[i]);
	v->dirty.n = v->dirty_head = 0;
	hmap_free(v->dirty_set);
	v->dirty_set = hmap_new();
	atomic_store(&v->fts_done, 0);
	atomic_store(&v->fts_total, 0);
	if (r == 0) {
		size_t n;
		struct note *const *all = index_sorted(v->ix, &n);
		for (size_t i = 0; i < n; i++)
			dirty_add_locked(v, all[i]->path);
	}
	pthread_mutex_unlock(&v->fmu);
	free(note);
	/* Kept (its path stays valid for status), but no longer used. */
	if (r < 0)
		v->fts_off = true;
}

/* A big note read for the index, to be put without the writer lock. */
struct big_put {
	struct note *n; /* a copy */
	char *text;
	size_t len;
};

/* One dirty path (writer lock and smu held): put what the index has, if
 * the file is still what the index saw; otherwise the change that moved
 * it on is on its way (the watcher) and puts it then. A big note is
 * handed back in *big instead (returns 1). *bytes grows by the text put. */
/* ---- racy notes in the store ------------------------------------------
 * A note read or written within a tick of its file's time is stored with
 * no time (store_put), else a later write leaving the same time and size
 * would go unseen at the next start. Once the tick is over, its file is
 * read again: the stored text with the same time, size and inode proves
 * the entry, whose time is then stored (and the note in the index, if it
 * is that text, is no longer racy). What is unsettled when vaultd stops is
 * read again at the next start.
 */

/* Longest wait for racy notes when the vault is closed. */
#define SETTLE_WAIT_NS (50 * 1000000LL)

/* A stored entry with no time: the file facts and text it was put with. */
struct unsettled {
	char *path;
	int64_t mtime_ns, size, due;
	uint64_t ino;
	uint32_t hash;
};

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void unsettled_free(struct unsettled *u)
{
	if (u) {
		free(u->path);
		free(u);
	}
}

/* The note was put in the store (writer lock held): if racy, with no
 * time, to be settled; else its entry is final. */
static void unsettled_put(struct vault *v, const struct note *n)
{
	if (!n->racy) {
		unsettled_free(hmap_del(v->unsettled, n->path));
		return;
	}
	struct unsettled *u = hmap_get(v->unsettled, n->path);
	if (!u) {
		u = xcalloc(1, sizeof(*u));
		u->path = xstrdup(n->path);
		hmap_put(v->unsettled, u->path, u);
	}
	u->mtime_ns = n->mtime_ns;
	u->size = n->size;
	u->ino = n->ino;
	u->hash = n->text_hash;
	u->due = note_racy_until(n);
	if (!v->settle_due_ns || u->due < v->settle_due_ns)
		v->settle_due_ns = u->due;
}

/* Read an entry's file again now that its time is old enough (writer lock
 * and smu held). */
static void settle_one(struct vault *v, const struct unsettled *u)
{
	char *text;
	size_t len;
	struct stat st;
	int64_t btime;
	if (read_note_file(v->rootfd, u->path, &text, &len, &st, &btime) < 0)
		return;
	uint32_t hash = text ? note_text_hash(text, len) : 0;
	free(text);
	if (st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec !=
		    u->mtime_ns ||
	    st.st_size != u->size || st.st_ino != u->ino || hash != u->hash)
		return; /* changed since: its sync puts it again */
	if (store_set_stat(v->store, u->path, u->mtime_ns, u->size, u->ino) < 0)
		store_broke(v);
	struct note *n = index_by_path(v->ix, u->path);
	if (n && n->racy && n->mtime_ns == u->mtime_ns && n->size == u->size &&
	    n->ino == u->ino && n->text_hash == u->hash) {
		pthread_rwlock_wrlock(&v->rw);
		n->racy = false;
		pthread_rwlock_unlock(&v->rw);
	}
}

/* Settle the entries whose time has come (writer lock and smu held);
 * with wait, those due within SETTLE_WAIT_NS too (closing). */
static void settle_racy(struct vault *v, bool wait)
{
	int64_t now = realtime_ns();
	if (!v->settle_due_ns || (!wait && now < v->settle_due_ns) ||
	    !vault_store(v))
		return;
	size_t it = 0;
	void *p;
	if (wait) {
		int64_t latest = now;
		while (hmap_next(v->unsettled, &it, NULL, &p)) {
			const struct unsettled *u = p;
			if (u->due > latest && u->due - now <= SETTLE_WAIT_NS)
				latest = u->due;
		}
		struct timespec d = {0, (long)(latest - now)};
		nanosleep(&d, NULL);
		now = realtime_ns();
	}
	struct ptrvec done = {0};
	int64_t next = 0;
	it = 0;
	while (hmap_next(v->unsettled, &it, NULL, &p)) {
		struct unsettled *u = p;
		if (u->due > now) {
			if (!next || u->due < next)
				next = u->due;
			continue;
		}
		settle_one(v, u);
		pv_push(&done, u);
	}
	for (size_t i = 0; i < done.n; i++) {
		struct unsettled *u = done.v[i];
		hmap_del(v->unsettled, u->path);
		unsettled_free(u);
	}
	pv_free(&done);
	v->settle_due_ns = next;
}

static int work_one(struct vault *v, const char *path, struct big_put *big,
		    size_t *bytes)
{
	struct note *n = index_by_path(v->ix, path);
	if (!n) {
		store_remove(v->store, path);
		return 0;
	}
	_cleanup_free_ char *text = NULL;
	size_t len;
	struct stat st;
	int64_t btime;
	if (read_note_file(v->rootfd, path, &text, &len, &st, &btime) < 0 ||
	    !note_made_from(n, &st,
			    n->racy && text ? note_text_hash(text, len) : 0))
		return 0;
	*bytes += n->too_big ? 0 : len;
	unsettled_put(v, n);
	if (!n->too_big && len > STORE_SYNC_MAX) {
		/* With its file facts: without them the stored entry
		 * would never match the file again. */
		big->n = note_copy(n);
		if (big->n) {
			big->text = TAKE_PTR(text);
			big->len = len;
			return 1;
		}
	}
	store_put(v->store, n, n->too_big ? NULL : text, len);
	return 0;
}

/* The next dirty path (fmu held), or NULL. */
static char *dirty_pop_locked(struct vault *v)
{
	if (v->dirty_head >= v->dirty.n)
		return NULL;
	char *p = v->dirty.v[v->dirty_head++];
	hmap_del(v->dirty_set, p);
	if (v->dirty_head == v->dirty.n) {
		v->dirty.n = v->dirty_head = 0;
	} else if (v->dirty_head > 4096 && v->dirty_head * 2 > v->dirty.n) {
		memmove(v->dirty.v, v->dirty.v + v->dirty_head,
			(v->dirty.n - v->dirty_head) * sizeof(void *));
		v->dirty.n -= v->dirty_head;
		v->dirty_head = 0;
	}
	return p;
}

/* ---- the build's read-ahead ------------------------------------------- */

/*
 * While full-text search is not ready (a first build), the notes' text
 * is read and prepared (store_text_new(): the body normalised and
 * compressed, half the work) on another CPU, a little ahead of the
 * writer, which then only puts it. The writer checks each text against
 * the index as work_one() does: the stat it was read with must be the
 * index's.
 */
#define PREP_AHEAD 256 /* texts */
#define PREP_AHEAD_BYTES (32u << 20)
#define PREP_MIN_QUEUE 256 /* fewer queued notes: not worth a thread */

struct prep_job {
	char *path;
	struct stat st;
	struct store_text *t; /* NULL: not read (gone, unreadable) */
	uint32_t hash;	      /* note_text_hash() of the text */
	size_t bytes;
};

struct prepper {
	struct vault *v;
	pthread_t th;
	pthread_mutex_t mu; /* innermost */
	pthread_cond_t cv;
	struct prep_job ring[PREP_AHEAD]; /* mu: ring[head .. head + n) */
	size_t head, n, bytes;		  /* mu */
	bool stop, done;		  /* mu */
};

static void *prep_main(void *arg)
{
	struct prepper *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->stop &&
		       (p->n == PREP_AHEAD || p->bytes >= PREP_AHEAD_BYTES))
			pthread_cond_wait(&p->cv, &p->mu);
		bool stop = p->stop;
		pthread_mutex_unlock(&p->mu);
		if (stop)
			break;
		pthread_mutex_lock(&p->v->fmu);
		char *path = dirty_pop_locked(p->v);
		pthread_mutex_unlock(&p->v->fmu);
		if (!path)
			break;
		struct prep_job j = {.path = path};
		char *text;
		size_t len;
		int64_t btime;
		if (read_note_file(p->v->rootfd, path, &text, &len, &j.st,
				   &btime) == 0) {
			j.t = store_text_new(text, len);
			j.hash = text ? note_text_hash(text, len) : 0;
			j.bytes = store_text_size(j.t);
			free(text);
		}
		pthread_mutex_lock(&p->mu);
		p->ring[(p->head + p->n) % PREP_AHEAD] = j;
		p->n++;
		p->bytes += j.bytes;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_lock(&p->mu);
	p->done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static struct prepper *prep_start(struct vault *v)
{
	struct prepper *p = xcalloc(1, sizeof(*p));
	p->v = v;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (pthread_create(&p->th, NULL, prep_main, p) != 0) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		free(p);
		return NULL;
	}
	return p;
}

/* Stop it; the texts it prepared and not handed out are dropped (their
 * notes are queued again by whatever stopped it: a rebuild). */
static struct prepper *prep_stop(struct prepper *p)
{
	if (!p)
		return NULL;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->th, NULL);
	for (size_t i = 0; i < p->n; i++) {
		struct prep_job *j = &p->ring[(p->head + i) % PREP_AHEAD];
		free(j->path);
		store_text_free(j->t);
	}
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
	return NULL;
}

/* The next prepared text: 1, 0 when none is ready yet, -1 when there will
 * be none (the queue was empty). */
static int prep_take(struct prepper *p, struct prep_job *ret)
{
	pthread_mutex_lock(&p->mu);
	int r = p->n ? 1 : p->done ? -1 : 0;
	if (r > 0) {
		*ret = p->ring[p->head];
		p->head = (p->head + 1) % PREP_AHEAD;
		p->n--;
		p->bytes -= ret->bytes;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return r;
}

/* Wait (holding no vault lock) until a text is ready or none will be. */
static void prep_wait(struct prepper *p)
{
	pthread_mutex_lock(&p->mu);
	while (!p->n && !p->done)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

/* work_one() for a prepared text (writer lock and smu held). */
static void put_prepared(struct vault *v, struct prep_job *j, size_t *bytes)
{
	struct note *n = index_by_path(v->ix, j->path);
	if (!n) {
		store_remove(v->store, j->path);
		store_text_free(j->t);
	} else if (!j->t || !note_made_from(n, &j->st, j->hash)) {
		store_text_free(j->t);
	} else {
		*bytes += n->too_big ? 0 : store_text_size(j->t);
		unsettled_put(v, n);
		store_put_text(v->store, n,
			       n->too_big ? store_text_new(NULL, 0) : j->t);
		if (n->too_big)
			store_text_free(j->t);
	}
	free(j->path);
}

/* ---- the worker ------------------------------------------------------- */

/* Batches hold the writer lock this long at most; this long when a
 * writer waits. */
#define WORK_SLICE_NS 15000000ull
#define WORK_YIELD_NS 2000000ull

/*
 * While full-text search is not ready (a first build, a rebuild), one
 * store transaction spans many slices, up to this long or this much
 * text: FTS5 writes what a transaction holds as one new segment and
 * merges segments again and again, so a commit per slice made the
 * build several times slower. Writers meanwhile queue what they change
 * (store_txn); searches wait for the build anyway.
 */
#define BUILD_COMMIT_NS 2000000000ull
#define BUILD_COMMIT_BYTES (32u << 20)

/* vault_fulltext_work()'s store transaction (smu held while it works;
 * open across slices with store_txn set). */
struct work_txn {
	bool open, ok;
	uint64_t since;
	size_t bytes;
};

/* Commit (or, after a failure, roll back) the open transaction (smu
 * held). */
static void txn_end(struct vault *v, struct work_txn *t)
{
	if (!t->open)
		return;
	if (!t->ok || store_commit(v->store) < 0) {
		store_rollback(v->store);
		store_broke(v);
	}
	v->store_txn = false;
	t->open = false;
}

void vault_fulltext_work(struct vault *v)
{
	pthread_mutex_lock(&v->fwmu);
	struct work_txn t = {0};
	struct prepper *prep = NULL;
	for (;;) {
		vault_write_lock(v);
		pthread_mutex_lock(&v->fmu);
		bool reset = v->fts_reset;
		size_t queued = v->dirty.n - v->dirty_head;
		pthread_mutex_unlock(&v->fmu);
		if (vault_store(v) && (reset || store_failed(v->store))) {
			/* What is in the open transaction is lost with the
			 * database; no reader may hold a connection. */
			prep = prep_stop(prep);
			pthread_mutex_lock(&v->smu);
			t.ok = false;
			txn_end(v, &t);
			pthread_rwlock_wrlock(&v->rw);
			store_rebuild(v);
			pthread_rwlock_unlock(&v->rw);
			pthread_mutex_unlock(&v->smu);
		}
		if (!vault_store(v) || vault_fulltext_stopped(v)) {
			prep = prep_stop(prep);
			pthread_mutex_lock(&v->smu);
			txn_end(v, &t);
			pthread_mutex_unlock(&v->smu);
			vault_write_unlock(v);
			break;
		}
		bool building = !atomic_load(&v->fts_ready);
		if (building && !prep && queued >= PREP_MIN_QUEUE)
			prep = prep_start(v);
		pthread_mutex_lock(&v->smu);
		if (!t.open) {
			t = (struct work_txn){.open = true,
					      .ok = store_begin(v->store) == 0,
					      .since = now_ns()};
			v->store_txn = building;
		}
		if (t.ok)
			settle_racy(v, false);
		size_t done = 0;
		bool starved = false; /* the read-ahead has nothing yet */
		struct big_put big = {0};
		uint64_t t0 = now_ns(), el;
		while (t.ok && (el = now_ns() - t0) < WORK_SLICE_NS &&
		       !(el >= WORK_YIELD_NS &&
			 atomic_load(&v->writers_waiting))) {
			if (prep) {
				struct prep_job j;
				int r = prep_take(prep, &j);
				if (r > 0) {
					put_prepared(v, &j, &t.bytes);
					done++;
					continue;
				}
				if (r == 0) {
					starved = true;
					break;
				}
				/* It has seen the queue empty: what writers
				 * queued since is put directly. */
				prep = prep_stop(prep);
			}
			pthread_mutex_lock(&v->fmu);
			char *p = dirty_pop_locked(v);
			v->fts_taking |= p != NULL;
			pthread_mutex_unlock(&v->fmu);
			if (!p)
				break;
			int r = work_one(v, p, &big, &t.bytes);
			free(p);
			done++;
			if (r > 0)
				break;
		}
		if (big.n) {
			/* Writers go on meanwhile (they queue what they
			 * change, smu being taken). */
			vault_write_unlock(v);
			if (t.ok &&
			    store_put(v->store, big.n, big.text, big.len) < 0)
				t.ok = false;
			note_free(big.n);
			free(big.text);
		} else {
			vault_write_unlock(v);
		}
		/* Committed without the writer lock: writers go on (a
		 * build's commit tokenises megabytes of text). */
		pthread_mutex_lock(&v->fmu);
		bool empty = v->dirty_head >= v->dirty.n;
		pthread_mutex_unlock(&v->fmu);
		if (!building || (empty && !prep) || !t.ok ||
		    now_ns() - t.since >= BUILD_COMMIT_NS ||
		    t.bytes >= BUILD_COMMIT_BYTES)
			txn_end(v, &t);
		pthread_mutex_unlock(&v->smu);
		pthread_mutex_lock(&v->fmu);
		v->fts_taking = false;
		atomic_fetch_add(&v->fts_done, done);
		bool finished = !t.open && !prep &&
				v->dirty_head >= v->dirty.n && !v->fts_reset &&
				!store_failed(v->store);
		if (finished) {
			atomic_store(&v->fts_ready, true);
			atomic_store(&v->fts_done, 0);
			atomic_store(&v->fts_total, 0);
		}
		pthread_cond_broadcast(&v->fcv);
		pthread_mutex_unlock(&v->fmu);
		if (finished)
			break;
		if (starved)
			prep_wait(prep);
	}
	pthread_mutex_unlock(&v->fwmu);
}

/* Trigram slices hold the store this long. */
#define SUB_SLICE_NS 200000000ull

size_t vault_substrings_work(struct vault *v)
{
	size_t total = 0;
	for (;;) {
		if (!vault_store(v) || vault_fulltext_stopped(v) ||
		    !atomic_load(&v->fts_ready))
			break;
		size_t done = 0;
		pthread_mutex_lock(&v->smu);
		int r = store_sub_ready(v->store) || v->store_txn
				? 0
				: store_sub_backfill(v->store, SUB_SLICE_NS,
						     &done);
		pthread_mutex_unlock(&v->smu);
		total += done;
		if (r < 0) {
			store_broke(v);
			break;
		}
		if (r == 0)
			break;
		/* Writes that found the store busy were queued. */
		vault_fulltext_flush(v);
	}
	return total;
}

/* Big notes queued after the first build wait this long, so that a burst
 * of writes to one of them is put once. */
#define FLUSH_DELAY_MS 300

bool vault_fulltext_wait_work(struct vault *v)
{
	pthread_mutex_lock(&v->fmu);
	while (!v->fts_stop && v->dirty_head >= v->dirty.n && !v->fts_reset)
		pthread_cond_wait(&v->fcv, &v->fmu);
	if (!v->fts_stop && !v->fts_reset && atomic_load(&v->fts_ready)) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += FLUSH_DELAY_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!v->fts_stop && !v->fts_reset &&
		       pthread_cond_timedwait(&v->fcv, &v->fmu, &until) == 0)
			;
	}
	bool go = !v->fts_stop;
	pthread_mutex_unlock(&v->fmu);
	return go;
}

void vault_fulltext_flush(struct vault *v)
{
	if (!atomic_load(&v->fts_ready) || !vault_store(v))
		return;
	pthread_mutex_lock(&v->fmu);
	bool queued = v->dirty_head < v->dirty.n;
	bool taking = v->fts_taking;
	pthread_mutex_unlock(&v->fmu);
	if (queued) {
		vault_fulltext_work(v);
		return;
	}
	/* Paths taken off the queue are put and committed with smu held:
	 * once it is ours, none is on its way any more. */
	if (taking) {
		pthread_mutex_lock(&v->smu);
		pthread_mutex_unlock(&v->smu);
	}
}

bool vault_fulltext_stopped(struct vault *v)
{
	pthread_mutex_lock(&v->fmu);
	bool stop = v->fts_stop;
	pthread_mutex_unlock(&v->fmu);
	return stop;
}

void vault_fulltext_stop(struct vault *v)
{
	pthread_mutex_lock(&v->fmu);
	v->fts_stop = true;
	pthread_cond_broadcast(&v->fcv);
	pthread_mutex_unlock(&v->fmu);
}

bool vault_fulltext_wait_ready(struct vault *v, int timeout_ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&v->fmu);
	while (!atomic_load(&v->fts_ready) && !v->fts_stop && vault_store(v))
		if (pthread_cond_timedwait(&v->fcv, &v->fmu, &until))
			break;
	bool ready = atomic_load(&v->fts_ready);
	pthread_mutex_unlock(&v->fmu);
	return ready;
}

/* ---- violations ------------------------------------------------------- */

void vault_record_violation(struct vault *v, const char *source,
			    const char *path, const char *message,
			    const char *rejected_path, bool accepted)
{
	char ts[32];
	format_iso8601(now_s(), ts);
	struct vault_violation r = {
		xstrdup(ts),
		xstrdup(source ? source : "unknown"),
		xstrdup(path),
		xstrdup(message),
		xstrdup(accepted ? "warned" : "refused"),
		rejected_path ? xstrdup(rejected_path) : NULL,
	};
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "time", r.time);
	cJSON_AddStringToObject(o, "source", r.source);
	cJSON_AddStringToObject(o, "path", r.path);
	cJSON_AddStringToObject(o, "message", r.message);
	cJSON_AddStringToObject(o, "action", r.action);
	if (r.rejected_text)
		cJSON_AddStringToObject(o, "rejected_text", r.rejected_text);
	char *line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	pthread_mutex_lock(&v->vmu);
	violation_push(v, &r);
	/* Appended as one write: lines never interleave. */
	if (file_mkdirs(v->rootfd, ".vaultd") == 0) {
		_cleanup_close_ int fd =
			beneath_open(v->rootfd, VIOLATIONS_PATH,
				     O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			_cleanup_free_ char *l = xasprintf("%s\n", line);
			if (write(fd, l, strlen(l)) < 0) {
			}
		}
	}
	pthread_mutex_unlock(&v->vmu);
	cJSON_free(line);
}

struct vault_violation *vault_violations(struct vault *v, int limit,
					 size_t *ret_n)
{
	pthread_mutex_lock(&v->vmu);
	size_t n = v->nviolations;
	if (limit > 0 && (size_t)limit < n)
		n = (size_t)limit;
	struct vault_violation *out = xcalloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		const struct vault_violation *o =
			&v->violations[v->nviolations - 1 - i];
		out[i] = (struct vault_violation){
			dup_or_null(o->time),	dup_or_null(o->source),
			dup_or_null(o->path),	dup_or_null(o->message),
			dup_or_null(o->action), dup_or_null(o->rejected_text),
		};
	}
	pthread_mutex_unlock(&v->vmu);
	*ret_n = n;
	return out;
}

static char *save_rejected_in(struct vault *v, const char *dir, const char *ts,
			      const char *flat, const char *text, size_t len,
			      int *ret_err)
{
	for (int i = 1; i < 1000; i++) {
		char *rel = i == 1 ? xasprintf("%s%s-%s", dir, ts, flat)
				   : xasprintf("%s%s-%d-%s", dir, ts, i, flat);
		int r = file_write_atomic(v->rootfd, rel, text, len,
					  WRITE_NOREPLACE | WRITE_MKDIRS, NULL);
		if (r == 0)
			return rel;
		free(rel);
		*ret_err = r;
		if (r != -EEXIST)
			break;
	}
	return NULL;
}

/*
 * Keep refused text: .vaultd/rejected/<time>-<path with / as __>. When
 * that folder cannot be used (a symlink planted there, a full disk),
 * directly in .vaultd/ as rejected-<time>-<path>, and *ret_why says why.
 * NULL: the text could not be kept anywhere (*ret_why says why).
 */
static char *save_rejected(struct vault *v, const char *path, const char *text,
			   size_t len, char **ret_why)
{
	char ts[32];
	format_iso8601(now_s(), ts);
	for (char *p = ts; *p; p++)
		if (*p == '-' || *p == ':')
			memmove(p, p + 1, strlen(p));
	struct sbuf flat = {0};
	for (const char *p = path; *p; p++) {
		if (*p == '/')
			sb_puts(&flat, "__");
		else
			sb_putc(&flat, *p);
	}
	int err = 0, err2 = 0;
	char *rel = save_rejected_in(v, REJECTED_DIR "/", ts, flat.s, text, len,
				     &err);
	if (!rel) {
		rel = save_rejected_in(v, ".vaultd/rejected-", ts, flat.s, text,
				       len, &err2);
		*ret_why = rel ? xasprintf(".vaultd/rejected cannot be used "
					   "(%s)",
					   strerror(-err))
			       : xasprintf("it could not be saved: %s",
					   strerror(-err2));
	}
	sb_free(&flat);
	return rel;
}

/* ---- writes ------------------------------------------------------------ */

void write_outcome_clear(struct write_outcome *o)
{
	free(o->warning);
	free(o->rejected_path);
	memset(o, 0, sizeof(*o));
}

static void index_swap_in(struct vault *v, struct note *n)
{
	pthread_rwlock_wrlock(&v->rw);
	index_put(v->ix, n);
	pthread_rwlock_unlock(&v->rw);
}

static int64_t keep_btime(struct vault *v, const struct note *old,
			  const char *path)
{
	if (old)
		return old->btime;
	return file_btime(v->rootfd, path);
}

/* vault_guard() of the note the text makes, parsed already. */
static int guard_note(struct vault *v, const char *path, const char *text,
		      size_t len, const struct note *after,
		      const struct write_opts *o, struct write_outcome *out,
		      char **ret_msg)
{
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	struct note *old = index_by_path(v->ix, path);
	_cleanup_free_ char *msg = NULL;
	int r = policy_check(pol, v->ix, old, after, &msg);
	if (r == 0)
		return 0;
	_cleanup_free_ char *why = NULL;
	_cleanup_free_ char *saved =
		o->save_rejected && !pol->warn
			? save_rejected(v, path, text, len, &why)
			: NULL;
	vault_record_violation(v, o->source, path, msg, saved, pol->warn);
	if (pol->warn) {
		if (out)
			out->warning = TAKE_PTR(msg);
		return 0;
	}
	if (saved && why)
		*ret_msg = xasprintf("%s (The refused text was saved as %s: "
				     "%s.)",
				     msg, saved, why);
	else if (saved)
		*ret_msg = xasprintf("%s (The refused text was saved as %s.)",
				     msg, saved);
	else if (why)
		*ret_msg = xasprintf("%s (The refused text was not kept: %s.)",
				     msg, why);
	else
		*ret_msg = TAKE_PTR(msg);
	if (out)
		out->rejected_path = TAKE_PTR(saved);
	return -EPERM;
}

int vault_guard(struct vault *v, const char *path, const char *text, size_t len,
		const struct write_opts *o, struct write_outcome *out,
		char **ret_msg)
{
	struct note *after = note_new(path, text, len, note_flags(v));
	int r = guard_note(v, path, text, len, after, o, out, ret_msg);
	note_free(after);
	return r;
}

/* The spare files for a write (writer lock held), or NULL. As many are
 * made ahead as there are notes: a rename whose every other note links
 * to the note renamed finds a spare for each. */
static struct file_pool *write_pool(struct vault *v)
{
	if (!v->pool_tried) {
		v->pool_tried = true;
		v->pool = file_pool_new(v->rootfd);
		if (v->pool)
			file_pool_set_in_use(v->pool, v->in_use, v->in_use_ud);
	}
	size_t n = index_count(v->ix);
	if (v->pool && n != v->pool_fill) {
		v->pool_fill = n;
		file_pool_set_fill(v->pool, n);
	}
	return v->pool;
}

void vault_set_file_in_use(struct vault *v, file_in_use_fn fn, void *ud)
{
	vault_write_lock(v);
	v->in_use = fn;
	v->in_use_ud = ud;
	if (v->pool)
		file_pool_set_in_use(v->pool, fn, ud);
	vault_write_unlock(v);
}

int vault_commit(struct vault *v, const char *path, const char *text,
		 size_t len, const struct write_opts *o,
		 struct write_outcome *out, char **ret_msg)
{
	struct note *old = index_by_path(v->ix, path);
	if (o->create) {
		struct stat st;
		if (old || file_stat(v->rootfd, path, &st) == 0) {
			_cleanup_free_ char *name = path_note_name(path);
			*ret_msg = xasprintf("Note %s already exists",
					     QUOTE(name));
			return -EEXIST;
		}
	}
	/* Parsed once, for the guard and the index. */
	struct note *after = note_new(path, text, len, note_flags(v));
	int r = o->skip_guard ? 0
			      : guard_note(v, path, text, len, after, o, out,
					   ret_msg);
	if (r < 0) {
		note_free(after);
		return r;
	}
	vault_keep_original(v, path);
	struct stat st;
	r = file_write_pooled(write_pool(v), v->rootfd, path, text, len,
			      WRITE_MKDIRS | (o->create ? WRITE_NOREPLACE : 0),
			      &st);
	if (r < 0) {
		note_free(after);
		*ret_msg = xasprintf("Cannot write %s: %s", QUOTE(path),
				     strerror(-r));
		return r;
	}
	note_set_stat(after, &st, keep_btime(v, old, path), text, len);
	uint64_t old_ino = old ? old->ino : 0;
	index_swap_in(v, after);
	store_queue(v, path);
	emit(v, old ? VEV_CHANGED : VEV_CREATED, path, NULL, o->source,
	     old_ino);
	return 0;
}

int vault_sync_path(struct vault *v, const char *path, const char *source,
		    unsigned flags)
{
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	if (policy_ignored(pol, path, false))
		return 0;
	if (!path_is_note(path)) {
		struct stat st;
		touched(v, path);
		pthread_rwlock_wrlock(&v->rw);
		if (file_stat(v->rootfd, path, &st) == 0 && S_ISREG(st.st_mode))
			index_put_file(v->ix, path);
		else
			index_remove_file(v->ix, path);
		pthread_rwlock_unlock(&v->rw);
		return 0;
	}
	struct note *old = index_by_path(v->ix, path);
	uint64_t old_ino = old ? old->ino : 0;
	/* The file the index has (vaultd's own writes come back this way
	 * from the watcher): nothing to read. */
	struct stat cur;
	if (old && file_stat(v->rootfd, path, &cur) == 0 &&
	    note_same_file(old, &cur))
		return 0;
	int err;
	/* A racy note's text tells whether it changed (note.h). */
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	bool racy = old && old->racy;
	struct note *n =
		load_note(v->rootfd, path, policy_note_flags(pol),
			  racy ? &text : NULL, racy ? &len : NULL, &err);
	/* A file that is there but cannot be read now (EIO, EMFILE, ...)
	 * is not a deleted note: the index keeps what it had. */
	if (!n && err != -ENOENT && err != -ENOTDIR && err != -ELOOP &&
	    err != -EISDIR)
		return err;
	if (!n) {
		if (!old)
			return 0;
		pthread_rwlock_wrlock(&v->rw);
		index_remove(v->ix, path);
		pthread_rwlock_unlock(&v->rw);
		store_queue(v, path);
		emit(v, VEV_DELETED, path, NULL, source, old_ino);
		return 0;
	}
	if (old && old->mtime_ns == n->mtime_ns && old->size == n->size &&
	    old->ino == n->ino &&
	    (!racy ||
	     old->text_hash == (text ? note_text_hash(text, len) : 0))) {
		/* The same text: a racy note read again is known now. */
		if (old->racy && !n->racy) {
			pthread_rwlock_wrlock(&v->rw);
			old->racy = false;
			pthread_rwlock_unlock(&v->rw);
		}
		note_free(n);
		return 0;
	}
	/* Cannot be refused, but the guard's findings are recorded. */
	_cleanup_free_ char *msg = NULL;
	if (!(flags & SYNC_NO_GUARD) &&
	    policy_check(pol, v->ix, old, n, &msg) < 0)
		vault_record_violation(v, source, path, msg, NULL, true);
	bool existed = old != NULL;
	index_swap_in(v, n);
	store_queue(v, path);
	emit(v, existed ? VEV_CHANGED : VEV_CREATED, path, NULL, source,
	     old_ino);
	return 0;
}

/* ---- rename and delete --------------------------------------------------- */

struct pending {
	struct note *src;
	char *text; /* the new text */
	size_t len;
	int links;
	char *old; /* the text it was rewritten from (dry runs) */
	size_t old_len;
	char *new_path; /* where a moving note goes, or NULL */
};

static void pending_free(struct pending *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(p[i].text);
		free(p[i].old);
		free(p[i].new_path);
	}
	free(p);
}

static int cmp_src(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;
	return strcmp(x->src->fold_path, y->src->fold_path);
}

/*
 * The new texts of the notes srcs (the vector is freed) for the moves
 * mv, or for the delete of note deleted: those that change, in path
 * order (with their old texts when keep_old), and the number of links
 * changed.
 */
static int rewrite_sources(struct vault *v, struct ptrvec *srcs,
			   const struct index_moves *mv,
			   const struct note *deleted, bool keep_old,
			   struct pending **ret, size_t *ret_n, int *ret_links,
			   char **ret_msg)
{
	struct pending *p = xcalloc(srcs->n + 1, sizeof(*p));
	size_t np = 0;
	int total = 0;
	int r = 0;
	for (size_t i = 0; i < srcs->n; i++) {
		struct note *s = srcs->v[i];
		_cleanup_free_ char *text = NULL;
		size_t len;
		/* Nothing is written yet: a cancelled rename stops here. */
		r = cancel_requested() ? -ECANCELED
				       : vault_read_text(v, s, &text, &len);
		if (r == -ECANCELED) {
			*ret_msg = xstrdup("Cancelled");
			break;
		}
		if (r < 0) {
			*ret_msg = xasprintf("Cannot read '%s': %s", s->path,
					     strerror(-r));
			break;
		}
		int count = 0;
		char *nt = mv ? rewrite_moved(v->ix, mv, s, text, len, &count)
			      : rewrite_deleted(v->ix, s, deleted, text, len,
						&count);
		if (!count) {
			free(nt);
			continue;
		}
		const char *to = mv ? index_moves_path(mv, s) : s->path;
		p[np++] = (struct pending){
			.src = s,
			.text = nt,
			.len = strlen(nt),
			.links = count,
			.old = keep_old ? TAKE_PTR(text) : NULL,
			.old_len = len,
			.new_path = strcmp(to, s->path) ? xstrdup(to) : NULL,
		};
		total += count;
	}
	pv_free(srcs);
	if (r < 0) {
		pending_free(p, np);
		return r;
	}
	qsort(p, np, sizeof(*p), cmp_src);
	*ret = p;
	*ret_n = np;
	*ret_links = total;
	return 0;
}

void vault_moved_clear(struct vault_moved *m)
{
	free(m->old_name);
	free(m->new_name);
	free(m->old_path);
	free(m->new_path);
	for (size_t i = 0; i < m->nupdated; i++)
		free(m->updated[i]);
	free(m->updated);
	free(m->warning);
	for (size_t i = 0; i < m->nchanges; i++) {
		free(m->changes[i].path);
		free(m->changes[i].to);
		free(m->changes[i].diff);
	}
	free(m->changes);
	*m = (struct vault_moved){0};
}

/* The report to the caller who asked for it (ret may be NULL); m is
 * left empty for its cleanup. */
static int moved_done(struct vault_moved *m, struct vault_moved *ret)
{
	if (ret) {
		*ret = *m;
		*m = (struct vault_moved){0};
	}
	return 0;
}

/* The linking notes rewritten, by the name a client knows them by. */
static void set_updated(struct vault *v, struct vault_moved *m,
			const struct pending *p, size_t n)
{
	m->updated = xcalloc(n + 1, sizeof(*m->updated));
	m->nupdated = n;
	for (size_t i = 0; i < n; i++)
		m->updated[i] = index_display_name(v->ix, p[i].src);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct file_batch *, file_batch_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct index_moves *, index_moves_free)

/* A file a dry run would touch, with the unified diff of its change (the
 * one diff_note_versions shows after the change); to: where it moves. */
static struct vault_change *add_file_diff(struct vault_moved *m,
					  const char *path, const char *to,
					  const char *a, size_t alen,
					  const char *b, size_t blen)
{
	m->changes =
		xrealloc(m->changes, (m->nchanges + 1) * sizeof(*m->changes));
	struct vault_change *c = &m->changes[m->nchanges++];
	*c = (struct vault_change){
		.path = xstrdup(path),
		.to = to ? xstrdup(to) : NULL,
		.diff = text_diff(path, a, alen, to ? to : path, b, blen, NULL,
				  NULL),
		.links = -1,
	};
	return c;
}

/* A folder rename's dry run: each note rewritten, where it goes, its
 * diff and how many of its links change. */
static void add_changes(struct vault_moved *m, const struct pending *p,
			size_t n)
{
	for (size_t i = 0; i < n; i++)
		add_file_diff(m, p[i].src->path, p[i].new_path,
			      p[i].old ? p[i].old : "", p[i].old_len, p[i].text,
			      p[i].len)
			->links = p[i].links;
}

/* The linking notes a dry run would rewrite, each with its diff. */
static int add_source_diffs(struct vault *v, struct vault_moved *m,
			    const struct pending *p, size_t n, char **ret_msg)
{
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *old = NULL;
		size_t len;
		int r = vault_read_text(v, p[i].src, &old, &len);
		if (r < 0) {
			*ret_msg = xasprintf("Cannot read '%s': %s",
					     p[i].src->path, strerror(-r));
			return r;
		}
		add_file_diff(m, p[i].src->path, NULL, old, len, p[i].text,
			      p[i].len);
	}
	return 0;
}

/*
 * The rewritten linking notes, each written to a temp file beside it and
 * all made durable in one pass: nothing visible has changed yet, and a
 * failure (a full disk, a folder that cannot be written) changes nothing.
 */
static int prepare_sources(struct vault *v, const struct pending *p, size_t n,
			   struct file_batch **ret_b, char **ret_msg)
{
	struct file_batch *b = file_batch_new(v->rootfd, write_pool(v));
	int r = 0;
	size_t bad = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		r = cancel_requested() ? -ECANCELED
				       : file_batch_add(b, p[i].src->path,
							p[i].text, p[i].len);
		bad = i;
	}
	if (r == 0)
		r = file_batch_sync(b, &bad);
	if (r < 0) {
		file_batch_free(b);
		*ret_msg = r == -ECANCELED
				   ? xstrdup("Cancelled")
				   : xasprintf("Cannot update links in '%s': "
					       "%s; nothing was changed",
					       p[bad].src->path, strerror(-r));
		return r;
	}
	*ret_b = b;
	return 0;
}

/*
 * The linking notes put in place by file_batch_apply() (the i-th of p is
 * the batch's first + i-th file), into the index. A note that could not
 * be replaced keeps its old text; the others are updated all the same.
 * On such a failure, *ret_msg lists them.
 */
static int index_sources(struct vault *v, struct pending *p, size_t n,
			 const struct file_batch *b, size_t first_file,
			 const char *source, char **ret_msg)
{
	/* Parsed before the index is locked for writing. */
	struct note **nn = xcalloc(n + 1, sizeof(*nn));
	uint64_t *old_ino = xcalloc(n + 1, sizeof(*old_ino));
	struct sbuf failed = {0};
	size_t nfailed = 0;
	int first = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		int r = file_batch_result(b, first_file + i, &st);
		if (r < 0) {
			if (!first)
				first = r;
			sb_printf(&failed, "%s'%s' (%s)", nfailed++ ? ", " : "",
				  p[i].src->path, strerror(-r));
			continue;
		}
		nn[i] = note_new(p[i].src->path, p[i].text, p[i].len,
				 note_flags(v));
		note_set_stat(nn[i], &st, p[i].src->btime, p[i].text, p[i].len);
		old_ino[i] = p[i].src->ino;
	}
	pthread_rwlock_wrlock(&v->rw);
	for (size_t i = 0; i < n; i++)
		if (nn[i])
			index_put(v->ix, nn[i]);
	pthread_rwlock_unlock(&v->rw);
	for (size_t i = 0; i < n; i++) {
		if (!nn[i])
			continue;
		p[i].src = nn[i];
		store_queue(v, nn[i]->path);
		emit(v, VEV_CHANGED, nn[i]->path, NULL, source, old_ino[i]);
	}
	free(nn);
	free(old_ino);
	if (first)
		*ret_msg =
			xasprintf("%zu note%s could not be updated: %s",
				  nfailed, nfailed == 1 ? "" : "s", failed.s);
	sb_free(&failed);
	return first;
}

/* Put the prepared linking notes in place, then in the index. */
static int apply_sources(struct vault *v, struct pending *p, size_t n,
			 struct file_batch *b, const char *source,
			 char **ret_msg)
{
	for (size_t i = 0; i < n; i++)
		vault_keep_original(v, p[i].src->path);
	file_batch_apply(b);
	return index_sources(v, p, n, b, 0, source, ret_msg);
}

int vault_rename(struct vault *v, struct note *n, const char *new_path,
		 const char *source, bool dry_run, struct vault_moved *ret,
		 char **ret_msg)
{
	_cleanup_free_ char *old_path = xstrdup(n->path);
	_cleanup_free_ char *old_name = xstrdup(n->name);
	_cleanup_free_ char *new_name = path_note_name(new_path);
	if (strcmp(old_path, new_path) == 0) {
		*ret_msg = xasprintf("Note %s already has that name",
				     QUOTE(old_name));
		return -EINVAL;
	}
	struct note *other = index_by_path(v->ix, new_path);
	struct stat st;
	if ((other && other != n) ||
	    (!other && file_stat(v->rootfd, new_path, &st) == 0)) {
		*ret_msg = xasprintf("Note %s already exists", QUOTE(new_name));
		return -EEXIST;
	}
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	if (policy_ignored(pol, new_path, false)) {
		*ret_msg = xasprintf("%s is hidden or ignored by the policy; "
				     "choose another name",
				     QUOTE(new_path));
		return -EINVAL;
	}
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = vault_read_text(v, n, &text, &len);
	if (r < 0) {
		*ret_msg = xasprintf("Cannot read '%s': %s", old_path,
				     strerror(-r));
		return r;
	}
	/* The guard judges the note under its new name (e.g. Person). */
	struct note *probe =
		note_new(new_path, text, len, policy_note_flags(pol));
	_cleanup_free_ char *gmsg = NULL;
	r = policy_check(pol, v->ix, n, probe, &gmsg);
	note_free(probe);
	if (r < 0) {
		vault_record_violation(v, source, new_path, gmsg, NULL,
				       pol->warn);
		if (!pol->warn) {
			*ret_msg = TAKE_PTR(gmsg);
			return -EPERM;
		}
	}

	/* Every link that would lead elsewhere once the note is moved:
	 * those to it, those its new name would capture, its own. */
	_cleanup_(index_moves_freep) struct index_moves *mv =
		index_moves_new(v->ix);
	index_moves_add(mv, n, new_path);
	struct ptrvec srcs = {0};
	index_moves_sources(mv, &srcs);
	pv_remove(&srcs, n);
	struct pending *p = NULL;
	size_t np = 0;
	int links = 0;
	r = rewrite_sources(v, &srcs, mv, NULL, dry_run, &p, &np, &links,
			    ret_msg);
	if (r < 0)
		return r;
	int own = 0;
	_cleanup_free_ char *own_text =
		rewrite_moved(v->ix, mv, n, text, len, &own);

	_cleanup_(vault_moved_clear) struct vault_moved res = {
		.kind = VAULT_MOVE_NOTE,
		.old_name = xstrdup(old_name),
		.new_name = xstrdup(new_name),
		.old_path = xstrdup(old_path),
		.new_path = xstrdup(new_path),
		.links = links + own,
		.dry_run = dry_run,
		.warning = TAKE_PTR(gmsg),
	};
	set_updated(v, &res, p, np);
	if (dry_run) {
		/* Every file it would touch: the note (moved, its own links
		 * rewritten), then each linking note. */
		add_file_diff(&res, old_path, new_path, text, len, own_text,
			      strlen(own_text));
		r = add_source_diffs(v, &res, p, np, ret_msg);
		pending_free(p, np);
		return r < 0 ? r : moved_done(&res, ret);
	}

	/* The linking notes' new texts first, durable: if they cannot be
	 * written, nothing is renamed. Then the note, then them. */
	_cleanup_(file_batch_freep) struct file_batch *b = NULL;
	r = prepare_sources(v, p, np, &b, ret_msg);
	if (r < 0) {
		pending_free(p, np);
		return r;
	}
	vault_keep_original(v, old_path);
	vault_keep_original(v, new_path);
	r = file_rename(v->rootfd, old_path, new_path, true, true);
	if (r < 0) {
		pending_free(p, np);
		*ret_msg =
			xasprintf("Cannot rename %s to %s: %s", QUOTE(old_path),
				  QUOTE(new_path), strerror(-r));
		return r;
	}
	/* The rename is made durable with the linking notes. */
	file_batch_sync_folder(b, old_path);
	file_batch_sync_folder(b, new_path);
	if (own) {
		r = file_write_atomic(v->rootfd, new_path, own_text,
				      strlen(own_text), 0, NULL);
		if (r < 0) {
			pending_free(p, np);
			*ret_msg = xasprintf("Renamed, but cannot update links "
					     "inside %s: %s",
					     QUOTE(new_path), strerror(-r));
			return r;
		}
	}
	int64_t btime = n->btime;
	struct note *moved = note_new(new_path, own_text, strlen(own_text),
				      policy_note_flags(pol));
	if (file_stat(v->rootfd, new_path, &st) == 0)
		note_set_stat(moved, &st, btime, own_text, strlen(own_text));
	pthread_rwlock_wrlock(&v->rw);
	index_remove(v->ix, old_path);
	index_put(v->ix, moved);
	pthread_rwlock_unlock(&v->rw);
	store_queue(v, old_path);
	store_queue(v, new_path);
	emit(v, VEV_RENAMED, new_path, old_path, source, moved->ino);
	_cleanup_free_ char *failed = NULL;
	r = apply_sources(v, p, np, b, source, &failed);
	pending_free(p, np);
	if (r < 0) {
		*ret_msg = xasprintf("Renamed %s to %s, but %s; they still "
				     "link to %s",
				     QUOTE(old_path), QUOTE(new_path), failed,
				     QUOTE(old_name));
		return r;
	}
	return moved_done(&res, ret);
}

/* A moving entry, copied out before the index changes. */
struct moving {
	char *from, *to;
	bool file;
	uint64_t ino;
	int64_t btime;
	ssize_t pending; /* its rewritten text in the batch, or -1 */
};

static int check_folder_move(struct vault *v, const char *from, const char *to,
			     bool replace, char **ret_msg)
{
	size_t fl = strlen(from);
	if (!strcmp(from, to)) {
		*ret_msg = xasprintf("Folder %s already has that name",
				     QUOTE(from));
		return -EINVAL;
	}
	if (!strncmp(to, from, fl) && to[fl] == '/') {
		*ret_msg = xasprintf("Cannot move folder %s into itself",
				     QUOTE(from));
		return -EINVAL;
	}
	struct stat st;
	int r = file_stat(v->rootfd, from, &st);
	if (r == -ENOENT || r == -ENOTDIR) {
		*ret_msg = xasprintf("No folder %s in the vault", QUOTE(from));
		return -ENOENT;
	}
	if (r < 0) {
		*ret_msg = xasprintf("Cannot use folder %s: %s", QUOTE(from),
				     strerror(-r));
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		*ret_msg = xasprintf("%s is not a folder", QUOTE(from));
		return -ENOTDIR;
	}
	if (!replace && file_stat(v->rootfd, to, &st) == 0) {
		*ret_msg = xasprintf("%s already exists", QUOTE(to));
		return -EEXIST;
	}
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	if (policy_ignored(pol, from, true)) {
		*ret_msg = xasprintf("Folder %s is hidden or ignored by the "
				     "policy",
				     QUOTE(from));
		return -EINVAL;
	}
	if (policy_ignored(pol, to, true)) {
		*ret_msg = xasprintf("%s is hidden or ignored by the policy; "
				     "choose another name",
				     QUOTE(to));
		return -EINVAL;
	}
	return 0;
}

/* Outside notes first, then the moving ones (the batch's order). */
static size_t partition_pending(struct pending *p, size_t n)
{
	struct pending *o = xcalloc(n + 1, sizeof(*o));
	size_t k = 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			if ((p[i].new_path != NULL) == (pass == 1))
				o[k++] = p[i];
	size_t nout = 0;
	while (nout < n && !o[nout].new_path)
		nout++;
	memcpy(p, o, n * sizeof(*p));
	free(o);
	return nout;
}

int vault_rename_folder(struct vault *v, const char *from, const char *to,
			const char *source, bool replace, bool dry_run,
			struct vault_moved *ret, char **ret_msg)
{
	int r = check_folder_move(v, from, to, replace, ret_msg);
	if (r < 0)
		return r;
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	_cleanup_(index_moves_freep) struct index_moves *mv =
		index_moves_new(v->ix);
	size_t nmoves = index_moves_add_folder(mv, from, to);
	size_t nnotes = 0;
	for (size_t i = 0; i < nmoves; i++) {
		const char *np;
		const struct note *e = index_moves_entry(mv, i, &np);
		/* Paths differing in case only are one file to Obsidian
		 * (a folder renamed in case only lands on itself). */
		_cleanup_free_ char *fnp = fold_key(np);
		if (strcmp(fnp, e->fold_path) &&
		    (index_by_path(v->ix, np) || index_has_file(v->ix, np))) {
			*ret_msg = xasprintf("%s already exists", QUOTE(np));
			return -EEXIST;
		}
		if (index_moves_is_file(mv, e))
			continue;
		nnotes++;
		if (policy_ignored(pol, np, false)) {
			*ret_msg = xasprintf("%s would be hidden or ignored by "
					     "the policy; choose another name",
					     QUOTE(np));
			return -EINVAL;
		}
	}
	/* Every link that would lead elsewhere once the folder is moved. */
	struct ptrvec srcs = {0};
	index_moves_sources(mv, &srcs);
	struct pending *p = NULL;
	size_t np = 0;
	int links = 0;
	r = rewrite_sources(v, &srcs, mv, NULL, dry_run, &p, &np, &links,
			    ret_msg);
	if (r < 0)
		return r;
	size_t nout = partition_pending(p, np);

	_cleanup_(vault_moved_clear) struct vault_moved res = {
		.kind = VAULT_MOVE_FOLDER,
		.old_path = xstrdup(from),
		.new_path = xstrdup(to),
		.notes_moved = nnotes,
		.files_moved = nmoves - nnotes,
		.updated = xcalloc(np + 1, sizeof(char *)),
		.nupdated = np,
		.links = links,
		.dry_run = dry_run,
	};
	for (size_t i = 0; i < np; i++)
		res.updated[i] =
			xstrdup(p[i].new_path ? p[i].new_path : p[i].src->path);
	if (dry_run) {
		add_changes(&res, p, np);
		pending_free(p, np);
		return moved_done(&res, ret);
	}

	/* What moves, copied: the index entries go during the update. */
	struct moving *m = xcalloc(nmoves + 1, sizeof(*m));
	for (size_t i = 0; i < nmoves; i++) {
		const char *npath;
		const struct note *e = index_moves_entry(mv, i, &npath);
		m[i] = (struct moving){xstrdup(e->path),
				       xstrdup(npath),
				       index_moves_is_file(mv, e),
				       e->ino,
				       e->btime,
				       -1};
		for (size_t j = nout; j < np; j++)
			if (p[j].src == e)
				m[i].pending = (ssize_t)j;
	}
	mv = index_moves_free(mv);

	/* Every rewritten note's new text first, durable (those in the
	 * folder beside their old path: they move with it); then the
	 * folder, in one rename; then the notes are put in place. A crash
	 * leaves each note whole, with its old or its new text. */
	_cleanup_(file_batch_freep) struct file_batch *b = NULL;
	r = prepare_sources(v, p, np, &b, ret_msg);
	for (size_t i = 0; r == 0 && i < nmoves; i++)
		if (!m[i].file)
			vault_keep_original(v, m[i].from);
	for (size_t i = 0; r == 0 && i < nout; i++)
		vault_keep_original(v, p[i].src->path);
	if (r == 0) {
		r = file_rename(v->rootfd, from, to, !replace, true);
		if (r < 0)
			*ret_msg =
				xasprintf("Cannot rename %s to %s: %s",
					  QUOTE(from), QUOTE(to), strerror(-r));
	}
	if (r < 0) {
		for (size_t i = 0; i < nmoves; i++) {
			free(m[i].from);
			free(m[i].to);
		}
		free(m);
		pending_free(p, np);
		return r;
	}
	file_batch_moved(b, from, to);
	file_batch_sync_folder(b, from);
	file_batch_sync_folder(b, to);
	file_batch_apply(b);

	/* The moved notes, read (or rewritten) where they are now. */
	struct note **nn = xcalloc(nmoves + 1, sizeof(*nn));
	unsigned flags = policy_note_flags(pol);
	for (size_t i = 0; i < nmoves; i++) {
		if (m[i].file)
			continue;
		struct stat st;
		ssize_t j = m[i].pending;
		if (j >= 0 && file_batch_result(b, (size_t)j, &st) == 0) {
			nn[i] = note_new(m[i].to, p[j].text, p[j].len, flags);
			note_set_stat(nn[i], &st, m[i].btime, p[j].text,
				      p[j].len);
		} else {
			nn[i] = load_note(v->rootfd, m[i].to, flags, NULL, NULL,
					  NULL);
			if (nn[i])
				nn[i]->btime = m[i].btime;
		}
	}
	pthread_rwlock_wrlock(&v->rw);
	for (size_t i = 0; i < nmoves; i++) {
		if (m[i].file) {
			index_remove_file(v->ix, m[i].from);
			index_put_file(v->ix, m[i].to);
		} else {
			index_remove(v->ix, m[i].from);
		}
	}
	for (size_t i = 0; i < nmoves; i++)
		if (nn[i])
			index_put(v->ix, nn[i]);
	pthread_rwlock_unlock(&v->rw);
	for (size_t i = 0; i < nmoves; i++) {
		if (m[i].file) {
			touched(v, m[i].from);
			touched(v, m[i].to);
		} else {
			store_queue(v, m[i].from);
			store_queue(v, m[i].to);
			emit(v, nn[i] ? VEV_RENAMED : VEV_DELETED,
			     nn[i] ? m[i].to : m[i].from,
			     nn[i] ? m[i].from : NULL, source, m[i].ino);
		}
		free(m[i].from);
		free(m[i].to);
	}
	free(m);
	free(nn);
	_cleanup_free_ char *failed = NULL;
	r = index_sources(v, p, nout, b, 0, source, &failed);
	pending_free(p, np);
	if (r < 0) {
		*ret_msg = xasprintf("Renamed %s to %s, but %s; they still "
				     "link to the old folder",
				     QUOTE(from), QUOTE(to), failed);
		return r;
	}
	return moved_done(&res, ret);
}

int vault_trash_path(struct vault *v, const char *path, char **ret,
		     char **ret_msg)
{
	*ret = NULL;
	struct stat st;
	if (fstatat(v->rootfd, ".trash", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISDIR(st.st_mode)) {
		*ret_msg = xasprintf(
			"'.trash' in the vault is %s, not a folder: vaultd keeps "
			"deleted notes only in a real .trash folder (move it "
			"away); '%s' was not deleted",
			S_ISLNK(st.st_mode) ? "a symlink" : "a file", path);
		return -ENOTDIR;
	}
	_cleanup_free_ char *stem = xstrndup(path, strlen(path) - 3);
	for (int i = 1; i < 10000; i++) {
		char *t = i == 1 ? xasprintf(".trash/%s", path)
				 : xasprintf(".trash/%s %d.md", stem, i);
		int r = file_stat(v->rootfd, t, &st);
		if (r == -ENOENT) {
			*ret = t;
			return 0;
		}
		free(t);
		if (r < 0 && r != -EEXIST) {
			*ret_msg = xasprintf("Cannot use .trash for '%s': %s "
					     "(a symlink in .trash?)",
					     path, strerror(-r));
			return r;
		}
	}
	*ret_msg = xasprintf("No free name in .trash for '%s'", path);
	return -EEXIST;
}

int vault_delete(struct vault *v, struct note *n, const char *source,
		 bool dry_run, struct vault_moved *ret, char **ret_msg)
{
	_cleanup_free_ char *path = xstrdup(n->path);
	_cleanup_free_ char *name = index_display_name(v->ix, n);
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	bool keep = pol->keep_links;
	struct ptrvec srcs = graph_backlinks(n);
	struct pending *p = NULL;
	size_t np = 0;
	int links = 0;
	int r = rewrite_sources(v, &srcs, NULL, n, false, &p, &np, &links,
				ret_msg);
	if (r < 0)
		return r;
	_cleanup_free_ char *trash = NULL;
	r = vault_trash_path(v, path, &trash, ret_msg);
	if (r < 0) {
		pending_free(p, np);
		return r;
	}
	_cleanup_(vault_moved_clear) struct vault_moved res = {
		.kind = VAULT_MOVE_TRASH,
		.old_name = xstrdup(name),
		.old_path = xstrdup(path),
		.new_path = xstrdup(trash),
		.dry_run = dry_run,
		.keep_links = keep,
	};
	if (keep) {
		if (np) {
			struct sbuf w = {0};
			sb_printf(&w,
				  "%zu note%s ha%s links that are now broken:",
				  np, np == 1 ? "" : "s", np == 1 ? "s" : "ve");
			for (size_t i = 0; i < np; i++) {
				_cleanup_free_ char *dn =
					index_display_name(v->ix, p[i].src);
				sb_printf(&w, "%s %s (%d link%s)", i ? "," : "",
					  dn, p[i].links,
					  p[i].links == 1 ? "" : "s");
			}
			sb_puts(&w, ". These links were not modified.");
			res.warning = sb_steal(&w);
		}
	} else {
		set_updated(v, &res, p, np);
		res.links = links;
	}
	if (dry_run) {
		/* Every file it would touch: the note going to .trash as it
		 * is, then each linking note rewritten. */
		_cleanup_free_ char *text = NULL;
		size_t len;
		r = vault_read_text(v, n, &text, &len);
		if (r < 0)
			*ret_msg = xasprintf("Cannot read '%s': %s", path,
					     strerror(-r));
		else
			add_file_diff(&res, path, trash, text, len, text, len);
		if (r == 0 && !keep)
			r = add_source_diffs(v, &res, p, np, ret_msg);
		pending_free(p, np);
		return r < 0 ? r : moved_done(&res, ret);
	}
	/* As for a rename: the linking notes' new texts first. */
	_cleanup_(file_batch_freep) struct file_batch *b = NULL;
	r = prepare_sources(v, p, keep ? 0 : np, &b, ret_msg);
	if (r < 0) {
		pending_free(p, np);
		return r;
	}
	vault_keep_original(v, path);
	r = file_rename(v->rootfd, path, trash, true, true);
	if (r < 0) {
		pending_free(p, np);
		*ret_msg = xasprintf("Cannot move '%s' to the trash: %s", path,
				     strerror(-r));
		return r;
	}
	file_batch_sync_folder(b, path);
	file_batch_sync_folder(b, trash);
	uint64_t ino = n->ino;
	pthread_rwlock_wrlock(&v->rw);
	index_remove(v->ix, path);
	pthread_rwlock_unlock(&v->rw);
	store_queue(v, path);
	emit(v, VEV_DELETED, path, NULL, source, ino);
	_cleanup_free_ char *failed = NULL;
	r = apply_sources(v, p, keep ? 0 : np, b, source, &failed);
	pending_free(p, np);
	if (r < 0) {
		*ret_msg = xasprintf("Moved '%s' to the trash, but %s; they "
				     "still link to it as before",
				     path, failed);
		return r;
	}
	return moved_done(&res, ret);
}

int vault_forget_note(struct vault *v, const char *path, const char *source)
{
	struct note *n = index_by_path(v->ix, path);
	if (!n)
		return 0;
	_cleanup_free_ char *p_ = xstrdup(n->path);
	struct pending *p = NULL;
	size_t np = 0;
	int links = 0;
	char *msg = NULL;
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	if (!pol->keep_links) {
		struct ptrvec srcs = graph_backlinks(n);
		if (rewrite_sources(v, &srcs, NULL, n, false, &p, &np, &links,
				    &msg) < 0) {
			free(msg);
			msg = NULL;
			p = NULL;
			np = 0;
		}
	}
	/* The note is gone already: what can be prepared is applied. */
	_cleanup_(file_batch_freep) struct file_batch *b = NULL;
	size_t ready = np;
	if (prepare_sources(v, p, np, &b, &msg) < 0) {
		free(msg);
		msg = NULL;
		ready = 0;
		b = file_batch_new(v->rootfd, write_pool(v));
	}
	uint64_t ino = n->ino;
	pthread_rwlock_wrlock(&v->rw);
	index_remove(v->ix, p_);
	pthread_rwlock_unlock(&v->rw);
	store_queue(v, p_);
	emit(v, VEV_DELETED, p_, NULL, source, ino);
	int r = apply_sources(v, p, ready, b, source, &msg);
	pending_free(p, np);
	free(msg);
	return r;
}
