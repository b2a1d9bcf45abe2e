/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vault's notes as the folder has them: the first index build (a
 * walk of the folder, the notes read by several threads or taken from
 * the on-disk index's entries, which may be read ahead on a thread of
 * their own, the new index swapped in) and the sync of one path changed
 * outside vaultd. The build reads without the vault's locks, takes smu
 * to read the stored entries and wmu then rw for writing to put the new
 * index in place; vault_sync_path() is called with wmu held and takes rw
 * for writing around its index change.
 */
#include "vault_int.h"
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

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
	/* Without stored entries: the notes' inode numbers (readdir's),
	 * and the order they are read in, by inode (scan_order). */
	uint64_t *inos;
	size_t inos_cap;
	size_t *order;
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
	size_t ncached, nparsed; /* notes taken from the store, or read */
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

static void walk_ino(struct scan *s, uint64_t ino)
{
	if (s->notes.n > s->inos_cap) {
		s->inos_cap = s->inos_cap ? 2 * s->inos_cap : 1024;
		s->inos = xrealloc(s->inos, s->inos_cap * sizeof(*s->inos));
	}
	s->inos[s->notes.n - 1] = ino;
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
				else
					walk_ino(s, de->d_ino);
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

int vault_read_note_file(int rootfd, const char *path, char **ret_text,
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

struct note *vault_load_note(int rootfd, const char *path, unsigned flags,
			     char **ret_text, size_t *ret_len, int *ret_err)
{
	char *text;
	size_t len;
	struct stat st;
	int64_t btime;
	int r = vault_read_note_file(rootfd, path, &text, &len, &st, &btime);
	if (ret_err)
		*ret_err = r;
	if (r < 0)
		return NULL;
	struct note *n = note_new(path, text, len, flags);
	if (!text)
		note_mark_too_big(n);
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
	note_set_file(n, w->mtime_ns, w->size, w->ino,
		      w->btime ? w->btime : w->mtime_ns / 1000000000LL);
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
		size_t k = atomic_fetch_add(&s->next, 1);
		if (k >= s->notes.n || (s->cancel && atomic_load(s->cancel)))
			break;
		size_t i = s->order ? s->order[k] : k;
		const char *path = s->notes.v[i];
		const struct store_entry *e =
			store_entries_get(s->stored, path);
		if (e && s->stats)
			s->parsed[i] = cached_note(path, e, &s->stats[i]);
		/* Read under another policy: read again. */
		if (s->parsed[i] &&
		    note_read_flags(s->parsed[i]) != policy_note_flags(s->pol))
			s->parsed[i] = note_free(s->parsed[i]);
		if (s->parsed[i])
			s->cached[i] = true;
		else {
			int err;
			s->parsed[i] = vault_load_note(
				s->v->rootfd, path, policy_note_flags(s->pol),
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

/* The priority links are bound at while searches answer (bind_quietly). */
#define BIND_NICE 19

#define SCAN_THREADS 16
#define SCAN_THREADS_MAX 32

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
	free(s->inos);
	free(s->order);
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

/* The stored entries read ahead of a build (vault_preload_entries). */
struct entries_load {
	struct vault *v;
	pthread_t th;
	bool want_stat; /* the store has entries */
	struct store_entries *es;
};

/* The store's connection is the full-text work's too (a rebuild runs
 * while it works): smu around every use. */
static struct store_entries *load_entries(struct vault *v)
{
	pthread_mutex_lock(&v->smu);
	struct store_entries *es = store_load(v->store);
	pthread_mutex_unlock(&v->smu);
	return es;
}

static bool store_has_entries(struct vault *v)
{
	pthread_mutex_lock(&v->smu);
	bool r = v->store && !store_empty(v->store);
	pthread_mutex_unlock(&v->smu);
	return r;
}

static void *preload_main(void *arg)
{
	struct entries_load *l = arg;
	l->es = load_entries(l->v);
	return NULL;
}

void vault_preload_entries(struct vault *v)
{
	if (!v->store || v->preload)
		return;
	struct entries_load *l = xcalloc(1, sizeof(*l));
	l->v = v;
	l->want_stat = store_has_entries(v);
	if (pthread_create(&l->th, NULL, preload_main, l) != 0) {
		free(l); /* the build reads them itself */
		return;
	}
	v->preload = l;
}

/* The entries read ahead, once read (NULL if none were). */
static struct entries_load *preload_take(struct vault *v)
{
	struct entries_load *l = TAKE_PTR(v->preload);
	if (l)
		pthread_join(l->th, NULL);
	return l;
}

void vault_preload_drop(struct vault *v)
{
	struct entries_load *l = preload_take(v);
	if (l) {
		store_entries_free(l->es);
		free(l);
	}
}

/* The folder walked and the stored entries read, side by side (or read
 * ahead already). */
static void scan_walk(struct vault *v, struct scan *s)
{
	struct entries_load *pre = v->preload;
	s->want_stat = pre ? pre->want_stat : store_has_entries(v);
	pthread_t wt;
	bool walking = pthread_create(&wt, NULL, walk_main, s) == 0;
	if (pre) {
		pre = preload_take(v);
		s->stored = pre->es;
		free(pre);
	} else if (v->store) {
		s->stored = load_entries(v);
	}
	if (walking)
		pthread_join(wt, NULL);
	else
		walk(s, "");
	atomic_store(&v->idx_total, s->notes.n);
	s->parsed = xcalloc(s->notes.n + 1, sizeof(struct note *));
	s->cached = xcalloc(s->notes.n + 1, sizeof(bool));
}

struct ino_at {
	uint64_t ino;
	size_t i;
};

static int cmp_ino(const void *a, const void *b)
{
	uint64_t x = ((const struct ino_at *)a)->ino;
	uint64_t y = ((const struct ino_at *)b)->ino;
	return x < y ? -1 : x > y;
}

/*
 * With no stored entries (every note is read), the notes are read in
 * the order of their inode numbers, not the walk's: a folder lists its
 * names in the order of their hash, and a file's inode and blocks are
 * near those of the files made before and after it, so that read cold,
 * the disk is read in fewer, longer runs.
 */
static void scan_order(struct scan *s)
{
	if (s->want_stat || !s->inos || s->notes.n < 2)
		return;
	struct ino_at *v = xmalloc(s->notes.n * sizeof(*v));
	for (size_t i = 0; i < s->notes.n; i++)
		v[i] = (struct ino_at){s->inos[i], i};
	qsort(v, s->notes.n, sizeof(*v), cmp_ino);
	s->order = xmalloc(s->notes.n * sizeof(*s->order));
	for (size_t i = 0; i < s->notes.n; i++)
		s->order[i] = v[i].i;
	free(v);
}

/* Every note the walk found read, or taken from its stored entry. */
static void scan_read(struct scan *s)
{
	scan_order(s);
	/* More readers than CPUs: with the files not in the page cache,
	 * reading is waiting for the disk, and a disk answers several
	 * requests at once (100,000 notes: 17 s read two at a time, 6.5 s
	 * eight at a time; on 2 cores with the page cache dropped, 8.0-8.2 s
	 * with 8 readers, 6.0-6.4 s with 16, 6.5-6.7 s with 32). */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nthreads = ncpu > SCAN_THREADS ? (size_t)ncpu : SCAN_THREADS;
	if (nthreads > SCAN_THREADS_MAX)
		nthreads = SCAN_THREADS_MAX;
	if (nthreads > s->notes.n / 64 + 1)
		nthreads = s->notes.n / 64 + 1;
	pthread_t th[SCAN_THREADS_MAX];
	size_t started = 0;
	for (size_t i = 1; i < nthreads; i++)
		if (pthread_create(&th[started], NULL, scan_worker, s) == 0)
			started++;
	scan_worker(s);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

/* vault_on_names(): who is told that the notes are in place. */
struct names_hook {
	vault_names_fn fn; /* NULL: bind the links before */
	void *ud;
};

/* The index the scan makes, the texts out of date queued for the on-disk
 * index (*ret_ndirty of them); its links bound unless the hook is to
 * be called first. The scan's notes and files are handed over: only its
 * counts and errors are left. */
static struct index *scan_index(struct vault *v, struct scan *s,
				const struct names_hook *hook,
				size_t *ret_ndirty)
{
	struct index *ix = index_new();
	struct note **put = xcalloc(s->notes.n + 1, sizeof(*put));
	size_t nput = 0;
	for (size_t i = 0; i < s->notes.n; i++) {
		if (!s->parsed[i])
			continue;
		put[nput++] = s->parsed[i];
		if (s->cached[i])
			s->ncached++;
		else
			s->nparsed++;
	}
	*ret_ndirty =
		vault_fulltext_queue_scan(v, &s->notes, s->cached, s->stored);
	/* The notes have their own copies: the entries' blocks go before
	 * the maps are made (the start's peak of memory). */
	s->stored = store_entries_free(s->stored);
	for (size_t i = 0; i < s->notes.n; i++)
		free(s->notes.v[i]);
	if (hook->fn) {
		/* The links are grouped as they are bound (index_install). */
		index_put_notes(ix, put, nput);
	} else {
		index_put_all(ix, put, nput);
		free(put);
	}
	for (size_t i = 0; i < s->files.n; i++) {
		index_put_file(ix, s->files.v[i]);
		free(s->files.v[i]);
	}
	if (!hook->fn)
		index_resolve_all(ix);
	free(s->parsed);
	free(s->cached);
	free(s->stats);
	free(s->inos);
	free(s->order);
	pv_free(&s->notes);
	pv_free(&s->files);
	return ix;
}

/* The links bound on a thread of their own at the lowest CPU priority
 * (a thread's own: it cannot be raised back), their workers too: the
 * searches answered meanwhile, which run at nice 5, come first. */
static void *bind_main(void *arg)
{
	(void)setpriority(PRIO_PROCESS, (id_t)gettid(), BIND_NICE);
	index_bind_links(arg);
	return NULL;
}

static void bind_quietly(struct index *ix)
{
	pthread_t th;
	if (pthread_create(&th, NULL, bind_main, ix) != 0) {
		index_bind_links(ix);
		return;
	}
	pthread_join(th, NULL);
}

/* The new index in place (its links bound after the hook is called,
 * when there is one), with what writers changed while it was built
 * taken again from the folder (their events were sent already). */
static void index_install(struct vault *v, struct index *ix,
			  const struct scan *s, const struct names_hook *hook)
{
	pthread_mutex_lock(&v->wmu);
	pthread_rwlock_wrlock(&v->rw);
	struct index *old = v->ix;
	v->ix = ix;
	v->idx_cached = s->ncached;
	v->idx_parsed = s->nparsed;
	pthread_rwlock_unlock(&v->rw);
	if (hook->fn) {
		/* Readers of names, tags and text go on meanwhile; writers
		 * (wmu) and readers of links (told by the caller) wait. */
		hook->fn(hook->ud);
		bind_quietly(ix);
	}
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
	vault_write_pool(v);
	vault_write_unlock(v);
	index_free(old);
}

/* The build's answer: 0, or the first read error, with *ret_msg saying
 * which file or folder and how many could not be read. */
static int scan_result(struct scan *s, char **ret_msg)
{
	if (!s->nerr)
		return 0;
	if (ret_msg)
		*ret_msg = xasprintf("%zu file%s or folder%s could not be read "
				     "and %s not in the index (the first: %s: "
				     "%s)",
				     s->nerr, s->nerr == 1 ? "" : "s",
				     s->nerr == 1 ? "" : "s",
				     s->nerr == 1 ? "is" : "are", s->err_path,
				     strerror(-s->err));
	free(s->err_path);
	return s->err;
}

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
	struct names_hook hook = {v->names_fn, v->names_ud};
	v->names_fn = NULL;
	pthread_mutex_unlock(&v->wmu);
	atomic_store(&v->idx_ready, false);
	atomic_store(&v->idx_done, 0);
	atomic_store(&v->idx_total, 0);
	scan_walk(v, &s);
	scan_read(&s);
	if (cancel_requested())
		return index_cancelled(v, &s, ret_msg);
	size_t ndirty;
	index_install(v, scan_index(v, &s, &hook, &ndirty), &s, &hook);
	if (v->store && ndirty && ndirty <= SYNC_CATCH_UP) {
		vault_fulltext_work(v);
		vault_substrings_work(v);
	}
	atomic_store(&v->idx_ready, true);
	if (progress)
		progress(atomic_load(&v->idx_done), atomic_load(&v->idx_total),
			 ud);
	return scan_result(&s, ret_msg);
}

void vault_on_names(struct vault *v, vault_names_fn fn, void *ud)
{
	pthread_mutex_lock(&v->wmu);
	v->names_fn = fn;
	v->names_ud = ud;
	pthread_mutex_unlock(&v->wmu);
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
int vault_sync_path(struct vault *v, const char *path, const char *source,
		    unsigned flags)
{
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	if (policy_ignored(pol, path, false))
		return 0;
	if (!path_is_note(path)) {
		struct stat st;
		vault_touched(v, path);
		pthread_rwlock_wrlock(&v->rw);
		if (file_stat(v->rootfd, path, &st) == 0 && S_ISREG(st.st_mode))
			index_put_file(v->ix, path);
		else
			index_remove_file(v->ix, path);
		pthread_rwlock_unlock(&v->rw);
		return 0;
	}
	struct note *old = index_by_path(v->ix, path);
	uint64_t old_ino = old ? note_ino(old) : 0;
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
	bool racy = old && note_racy(old);
	struct note *n =
		vault_load_note(v->rootfd, path, policy_note_flags(pol),
				racy ? &text : NULL, racy ? &len : NULL, &err);
	/* A file that is there but cannot be read now (EIO, EMFILE, ...)
	 * is not a deleted note: the index keeps what it had. */
	if (!n && err != -ENOENT && err != -ENOTDIR && err != -ELOOP &&
	    err != -EISDIR)
		return err;
	if (!n) {
		if (!old)
			return 0;
		vault_index_drop(v, path, old_ino, source);
		return 0;
	}
	if (old && note_mtime_ns(old) == note_mtime_ns(n) &&
	    note_size(old) == note_size(n) && note_ino(old) == note_ino(n) &&
	    (!racy ||
	     note_hash(old) == (text ? note_text_hash(text, len) : 0))) {
		/* The same text: a racy note read again is known now. */
		if (note_racy(old) && !note_racy(n)) {
			pthread_rwlock_wrlock(&v->rw);
			note_settle(old);
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
	vault_index_swap_in(v, n);
	vault_store_queue(v, path);
	vault_emit(v, existed ? VEV_CHANGED : VEV_CREATED, path, NULL, source,
		   old_ino);
	return 0;
}
