/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The on-disk index kept in step with the vault: the set of paths whose
 * stored entry or text is out of date (struct fulltext), the work that
 * puts them in the store in slices (with a read-ahead thread during a
 * first build), the trigram backfill, the racy entries settled once
 * their time is old enough, and a rebuild when the database breaks. In
 * the background (vault_fulltext_start) the work runs on a work queue
 * (workq.h) of one worker as two jobs: the texts, then the substrings
 * after them; the first is pushed when a path is queued and no round is
 * pending, after a moment once search is ready (a burst of writes is put
 * at once). After the first round that leaves search ready, a worker
 * of its own, which runs only on an idle core, reads the commonest
 * words' notes ahead (store_warm_new) on a reader connection, once.
 * Locks: ft->fwmu (one worker), then wmu for each slice, smu for the
 * store's writer connection, rw for writing only around a rebuild or a
 * settled note, ft->fmu around the set; the work queue's and the
 * read-ahead's own mutexes are innermost. Writers reach it through
 * vault_store_queue() (wmu held), which takes ft->fmu alone.
 */
#include "vault_int.h"
#include "store.h"
#include "workq.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

/*
 * The dirty set and its state. The set is v[dirty_head .. n) of dirty,
 * each path once (dirty_set), in the order queued.
 */
struct fulltext {
	pthread_mutex_t fwmu; /* one vault_fulltext_work() at a time */
	pthread_mutex_t fmu;
	pthread_cond_t fcv;	/* with fmu: ready, stopped */
	struct ptrvec dirty;	/* fmu */
	size_t dirty_head;	/* fmu */
	struct hmap *dirty_set; /* fmu */
	bool stop, reset;	/* fmu */
	/* The background work (vault_fulltext_start): its queue, set once;
	 * its two jobs; a round (the texts, then the substrings) queued,
	 * waiting its delay or running. */
	struct workq *q;		      /* fmu */
	struct workq_job texts_job, subs_job; /* the queue's */
	bool pending;			      /* fmu */
	/* The commonest words read ahead once search is ready (once a
	 * process), on a worker of its own that runs when a core is idle. */
	struct workq_job warm_job; /* the queue's */
	bool warm_pushed;	   /* fmu */
	vault_fulltext_fn report;  /* set before the queue */
	void *report_ud;
	bool taking;		   /* fmu: paths taken off, not committed */
	char *note;		   /* fmu: something to log, or NULL */
	atomic_bool off;	   /* atomic; set once, never cleared */
	atomic_size_t done, total; /* atomic: this build's progress */
	atomic_bool ready;	   /* atomic */
	/* A build finished in this process: its segments are merged in the
	 * background (store_fts_merge) before the substrings are filled. */
	atomic_bool merge; /* atomic */
	/* A build's store transaction spans slices (vault_fulltext_work()):
	 * writers that find it open queue their note as if smu were busy. */
	bool store_txn; /* smu */
	/* Racy notes put in the store with no file time (note.h), by path;
	 * settled (read again, their time stored) once their time is old
	 * enough, from settle_due_ns on. */
	struct hmap *unsettled; /* wmu */
	int64_t settle_due_ns;	/* wmu */
};

/* Big notes queued after the first build wait this long, so that a burst
 * of writes to one of them is put once. */
#define FLUSH_DELAY_MS 300

/* Push a round of the background work when there is work and none is
 * pending (fmu held): after FLUSH_DELAY_MS once search is ready, at once
 * during a build or for a rebuild. */
static void schedule_locked(struct vault *v)
{
	struct fulltext *ft = v->ft;
	if (!ft->q || ft->stop || ft->pending ||
	    (ft->dirty_head >= ft->dirty.n && !ft->reset))
		return;
	ft->pending = true;
	if (atomic_load(&ft->ready) && !ft->reset)
		workq_push_after(ft->q, &ft->texts_job, FLUSH_DELAY_MS);
	else
		workq_push(ft->q, &ft->texts_job);
}

/* Mark a path's stored entry out of date (fmu held). While a build runs
 * it counts towards its total; once built, searches put what is queued
 * first (vault_fulltext_flush), so the index stays ready. */
static void dirty_add_locked(struct vault *v, const char *path)
{
	if (hmap_get(v->ft->dirty_set, path))
		return;
	char *p = xstrdup(path);
	pv_push(&v->ft->dirty, p);
	hmap_put(v->ft->dirty_set, p, p);
	if (!atomic_load(&v->ft->ready))
		atomic_fetch_add(&v->ft->total, 1);
}

size_t vault_fulltext_queue_scan(struct vault *v, const struct ptrvec *paths,
				 const bool *cached,
				 struct store_entries *stored)
{
	struct fulltext *ft = v->ft;
	pthread_mutex_lock(&ft->fmu);
	for (size_t i = 0; i < paths->n; i++) {
		if (v->store && !cached[i])
			dirty_add_locked(v, paths->v[i]);
		store_entries_use(stored, paths->v[i]);
	}
	/* Stored notes that are gone. */
	size_t it = 0;
	const char *key;
	while (store_entries_next_unused(stored, &it, &key))
		dirty_add_locked(v, key);
	if (ft->dirty_head >= ft->dirty.n)
		atomic_store(&ft->ready, v->store != NULL);
	size_t ndirty = ft->dirty.n - ft->dirty_head;
	pthread_cond_broadcast(&ft->fcv);
	schedule_locked(v);
	pthread_mutex_unlock(&ft->fmu);
	return ndirty;
}
void vault_attach_store(struct vault *v, struct store *s)
{
	store_close(v->store);
	v->store = s;
}

struct store *vault_store(struct vault *v)
{
	return v->ft->off ? NULL : v->store;
}

void vault_store_state(struct vault *v, struct vault_store_state *st)
{
	memset(st, 0, sizeof(*st));
	st->enabled = v->store != NULL && !v->ft->off;
	st->ready = st->enabled && atomic_load(&v->ft->ready);
	st->substrings_ready = st->ready && store_sub_ready(v->store);
	st->done = atomic_load(&v->ft->done);
	st->total = atomic_load(&v->ft->total);
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
	pthread_mutex_lock(&v->ft->fmu);
	char *n = TAKE_PTR(v->ft->note);
	pthread_mutex_unlock(&v->ft->fmu);
	return n;
}

/* Queue a path for the background work. Only a queue with no round
 * pending pushes one; once ready, it waits a moment for more. */
static void dirty_add(struct vault *v, const char *path)
{
	pthread_mutex_lock(&v->ft->fmu);
	dirty_add_locked(v, path);
	schedule_locked(v);
	pthread_mutex_unlock(&v->ft->fmu);
}

/* A write failed (damage, a full disk): start over from the vault, at
 * once (a round waiting its delay is hurried; a running one starts over
 * when it ends). */
static void store_broke(struct vault *v)
{
	pthread_mutex_lock(&v->ft->fmu);
	v->ft->reset = true;
	atomic_store(&v->ft->ready, false);
	if (v->ft->pending)
		workq_hurry(v->ft->q, &v->ft->texts_job);
	else
		schedule_locked(v);
	pthread_mutex_unlock(&v->ft->fmu);
}

/*
 * Notes over this size are put in a transaction of their own, without
 * the writer lock: they cost tens of milliseconds in tokenising alone.
 */
#define STORE_SYNC_MAX (64 * 1024)

/*
 * The on-disk index follows a note that just changed, was deleted or
 * renamed in the index (writer lock held): its path is queued, and the
 * full-text work puts what is queued a moment later in one transaction
 * (a burst of writes costs one commit; a burst of writes to one note, one
 * put). Nothing is lost by the wait: every search first puts what is
 * queued (vault_fulltext_flush), and after a crash the next start reads
 * every note whose size, mtime or inode differs from its stored entry,
 * which a note written since always does (a new file renamed in place).
 */
void vault_store_queue(struct vault *v, const char *path)
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
	pthread_mutex_lock(&v->ft->fmu);
	free(v->ft->note);
	v->ft->note = r < 0 ? xasprintf("%s; full-text search is off", note)
			    : xasprintf("index %s was damaged or could not be "
					"written (%s); rebuilt",
					store_path(v->store),
					note ? note : "write failed");
	v->ft->reset = false;
	for (size_t i = v->ft->dirty_head; i < v->ft->dirty.n; i++)
		free(v->ft->dirty.v[i]);
	v->ft->dirty.n = v->ft->dirty_head = 0;
	hmap_free(v->ft->dirty_set);
	v->ft->dirty_set = hmap_new();
	atomic_store(&v->ft->done, 0);
	atomic_store(&v->ft->total, 0);
	if (r == 0) {
		size_t n;
		struct note *const *all = index_sorted(v->ix, &n);
		for (size_t i = 0; i < n; i++)
			dirty_add_locked(v, note_path(all[i]));
	}
	pthread_mutex_unlock(&v->ft->fmu);
	free(note);
	/* Kept (its path stays valid for status), but no longer used. */
	if (r < 0)
		v->ft->off = true;
}

/* A big note read for the index, to be put without the writer lock. */
struct big_put {
	struct note *n; /* a copy */
	char *text;
	size_t len;
};

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
	if (!note_racy(n)) {
		unsettled_free(hmap_del(v->ft->unsettled, note_path(n)));
		return;
	}
	struct unsettled *u = hmap_get(v->ft->unsettled, note_path(n));
	if (!u) {
		u = xcalloc(1, sizeof(*u));
		u->path = xstrdup(note_path(n));
		hmap_put(v->ft->unsettled, u->path, u);
	}
	u->mtime_ns = note_mtime_ns(n);
	u->size = note_size(n);
	u->ino = note_ino(n);
	u->hash = note_hash(n);
	u->due = note_racy_until(n);
	if (!v->ft->settle_due_ns || u->due < v->ft->settle_due_ns)
		v->ft->settle_due_ns = u->due;
}

/* Read an entry's file again now that its time is old enough (writer lock
 * and smu held). */
static void settle_one(struct vault *v, const struct unsettled *u)
{
	char *text;
	size_t len;
	struct stat st;
	int64_t btime;
	if (vault_read_note_file(v->rootfd, u->path, &text, &len, &st, &btime) <
	    0)
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
	if (n && note_racy(n) && note_mtime_ns(n) == u->mtime_ns &&
	    note_size(n) == u->size && note_ino(n) == u->ino &&
	    note_hash(n) == u->hash) {
		pthread_rwlock_wrlock(&v->rw);
		note_settle(n);
		pthread_rwlock_unlock(&v->rw);
	}
}

/* Settle the entries whose time has come (writer lock and smu held);
 * with wait, those due within SETTLE_WAIT_NS too (closing). */
static void settle_racy(struct vault *v, bool wait)
{
	int64_t now = realtime_ns();
	if (!v->ft->settle_due_ns || (!wait && now < v->ft->settle_due_ns) ||
	    !vault_store(v))
		return;
	size_t it = 0;
	void *p;
	if (wait) {
		int64_t latest = now;
		while (hmap_next(v->ft->unsettled, &it, NULL, &p)) {
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
	while (hmap_next(v->ft->unsettled, &it, NULL, &p)) {
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
		hmap_del(v->ft->unsettled, u->path);
		unsettled_free(u);
	}
	pv_free(&done);
	v->ft->settle_due_ns = next;
}

struct fulltext *fulltext_new(void)
{
	struct fulltext *ft = xcalloc(1, sizeof(*ft));
	pthread_mutex_init(&ft->fwmu, NULL);
	pthread_mutex_init(&ft->fmu, NULL);
	pthread_cond_init(&ft->fcv, NULL);
	ft->dirty_set = hmap_new();
	ft->unsettled = hmap_new();
	return ft;
}

struct fulltext *fulltext_free(struct fulltext *ft)
{
	if (!ft)
		return NULL;
	ft->q = workq_free(ft->q);
	pthread_mutex_destroy(&ft->fwmu);
	pthread_mutex_destroy(&ft->fmu);
	pthread_cond_destroy(&ft->fcv);
	for (size_t i = ft->dirty_head; i < ft->dirty.n; i++)
		free(ft->dirty.v[i]);
	pv_free(&ft->dirty);
	hmap_free(ft->dirty_set);
	size_t it = 0;
	void *p;
	while (hmap_next(ft->unsettled, &it, NULL, &p))
		unsettled_free(p);
	hmap_free(ft->unsettled);
	free(ft->note);
	free(ft);
	return NULL;
}

void vault_fulltext_close(struct vault *v)
{
	vault_fulltext_stop(v);
	/* One transaction: a commit per entry would sync once each. */
	if (!v->store || !v->ft->settle_due_ns)
		return;
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

/* One dirty path (writer lock and smu held): put what the index has, if
 * the file is still what the index saw; otherwise the change that moved
 * it on is on its way (the watcher) and puts it then. A big note is
 * handed back in *big instead (returns 1). *bytes grows by the text put. */
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
	if (vault_read_note_file(v->rootfd, path, &text, &len, &st, &btime) <
		    0 ||
	    !note_made_from(n, &st,
			    note_racy(n) && text ? note_text_hash(text, len)
						 : 0))
		return 0;
	*bytes += note_too_big(n) ? 0 : len;
	unsettled_put(v, n);
	if (!note_too_big(n) && len > STORE_SYNC_MAX) {
		/* With its file facts: without them the stored entry
		 * would never match the file again. */
		big->n = note_copy(n);
		if (big->n) {
			big->text = TAKE_PTR(text);
			big->len = len;
			return 1;
		}
	}
	store_put(v->store, n, note_too_big(n) ? NULL : text, len);
	return 0;
}

/* The next dirty path (fmu held), or NULL. */
static char *dirty_pop_locked(struct vault *v)
{
	if (v->ft->dirty_head >= v->ft->dirty.n)
		return NULL;
	char *p = v->ft->dirty.v[v->ft->dirty_head++];
	hmap_del(v->ft->dirty_set, p);
	if (v->ft->dirty_head == v->ft->dirty.n) {
		v->ft->dirty.n = v->ft->dirty_head = 0;
	} else if (v->ft->dirty_head > 4096 &&
		   v->ft->dirty_head * 2 > v->ft->dirty.n) {
		memmove(v->ft->dirty.v, v->ft->dirty.v + v->ft->dirty_head,
			(v->ft->dirty.n - v->ft->dirty_head) * sizeof(void *));
		v->ft->dirty.n -= v->ft->dirty_head;
		v->ft->dirty_head = 0;
	}
	return p;
}

/* ---- the build's read-ahead (vault_prep.c) ---------------------------- */

#define PREP_MIN_QUEUE 256 /* fewer queued notes: not worth the threads */

/* The read-ahead's next path. */
static char *dirty_pop(struct vault *v)
{
	pthread_mutex_lock(&v->ft->fmu);
	char *path = dirty_pop_locked(v);
	pthread_mutex_unlock(&v->ft->fmu);
	return path;
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
		*bytes += note_too_big(n) ? 0 : store_text_size(j->t);
		unsettled_put(v, n);
		store_put_text(v->store, n,
			       note_too_big(n)
				       ? store_text_new(v->store, NULL, 0)
				       : j->t);
		if (note_too_big(n))
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
	v->ft->store_txn = false;
	t->open = false;
}

/*
 * A slice's start: takes the writer lock and smu, rebuilds the database
 * when it broke, starts the read-ahead for a build and opens the store
 * transaction. false: there is nothing to do (no store, stopped); the
 * transaction is ended and no lock is held.
 */
static bool work_begin(struct vault *v, struct work_txn *t,
		       struct prepper **prep, bool *ret_building)
{
	vault_write_lock(v);
	pthread_mutex_lock(&v->ft->fmu);
	bool reset = v->ft->reset;
	size_t queued = v->ft->dirty.n - v->ft->dirty_head;
	pthread_mutex_unlock(&v->ft->fmu);
	if (vault_store(v) && (reset || store_failed(v->store))) {
		/* What is in the open transaction is lost with the
		 * database; no reader may hold a connection. */
		*prep = prep_stop(*prep);
		pthread_mutex_lock(&v->smu);
		t->ok = false;
		txn_end(v, t);
		pthread_rwlock_wrlock(&v->rw);
		store_rebuild(v);
		pthread_rwlock_unlock(&v->rw);
		pthread_mutex_unlock(&v->smu);
	}
	if (!vault_store(v) || vault_fulltext_stopped(v)) {
		*prep = prep_stop(*prep);
		pthread_mutex_lock(&v->smu);
		txn_end(v, t);
		pthread_mutex_unlock(&v->smu);
		vault_write_unlock(v);
		return false;
	}
	bool building = !atomic_load(&v->ft->ready);
	if (building && !*prep && queued >= PREP_MIN_QUEUE)
		*prep = prep_start(v, dirty_pop);
	pthread_mutex_lock(&v->smu);
	if (!t->open) {
		*t = (struct work_txn){.open = true,
				       .ok = store_begin(v->store) == 0,
				       .since = now_ns()};
		v->ft->store_txn = building;
	}
	if (t->ok)
		settle_racy(v, false);
	*ret_building = building;
	return true;
}

/*
 * One slice of queued paths put (writer lock and smu held), until the
 * slice is over or a writer waits: from the read-ahead while it runs
 * (*ret_starved when it has nothing ready yet), else read here. A big
 * note ends the slice and is handed back in *big. Returns how many
 * paths were taken.
 */
static size_t work_slice(struct vault *v, struct work_txn *t,
			 struct prepper **prep, struct big_put *big,
			 bool *ret_starved)
{
	size_t done = 0;
	uint64_t t0 = now_ns(), el;
	while (t->ok && (el = now_ns() - t0) < WORK_SLICE_NS &&
	       !(el >= WORK_YIELD_NS && atomic_load(&v->writers_waiting))) {
		if (*prep) {
			struct prep_job j;
			int r = prep_take(*prep, &j);
			if (r > 0) {
				put_prepared(v, &j, &t->bytes);
				done++;
				continue;
			}
			if (r == 0) {
				*ret_starved = true;
				break;
			}
			/* It has seen the queue empty: what writers
			 * queued since is put directly. */
			*prep = prep_stop(*prep);
		}
		pthread_mutex_lock(&v->ft->fmu);
		char *p = dirty_pop_locked(v);
		v->ft->taking |= p != NULL;
		pthread_mutex_unlock(&v->ft->fmu);
		if (!p)
			break;
		int r = work_one(v, p, big, &t->bytes);
		free(p);
		done++;
		if (r > 0)
			break;
	}
	return done;
}

/* Release the writer lock, then put the slice's big note, if any (smu
 * held): writers go on meanwhile (they queue what they change, smu being
 * taken). */
static void work_put_big(struct vault *v, struct work_txn *t,
			 struct big_put *big)
{
	vault_write_unlock(v);
	if (!big->n)
		return;
	if (t->ok && store_put(v->store, big->n, big->text, big->len) < 0)
		t->ok = false;
	note_free(big->n);
	free(big->text);
}

/*
 * A slice's end (smu held, released here): the transaction committed
 * when the build's is big or old enough, or at once outside a build.
 * Returns true when the queue is worked off and search is ready.
 */
static bool work_end(struct vault *v, struct work_txn *t,
		     const struct prepper *prep, bool building, size_t done)
{
	/* Committed without the writer lock: writers go on (a build's
	 * commit tokenises megabytes of text). */
	pthread_mutex_lock(&v->ft->fmu);
	bool empty = v->ft->dirty_head >= v->ft->dirty.n;
	pthread_mutex_unlock(&v->ft->fmu);
	if (!building || (empty && !prep) || !t->ok ||
	    now_ns() - t->since >= BUILD_COMMIT_NS ||
	    t->bytes >= BUILD_COMMIT_BYTES)
		txn_end(v, t);
	pthread_mutex_unlock(&v->smu);
	pthread_mutex_lock(&v->ft->fmu);
	v->ft->taking = false;
	atomic_fetch_add(&v->ft->done, done);
	bool finished = !t->open && !prep &&
			v->ft->dirty_head >= v->ft->dirty.n && !v->ft->reset &&
			!store_failed(v->store);
	if (finished) {
		if (building)
			atomic_store(&v->ft->merge, true);
		atomic_store(&v->ft->ready, true);
		atomic_store(&v->ft->done, 0);
		atomic_store(&v->ft->total, 0);
	}
	pthread_cond_broadcast(&v->ft->fcv);
	pthread_mutex_unlock(&v->ft->fmu);
	return finished;
}

void vault_fulltext_work(struct vault *v)
{
	pthread_mutex_lock(&v->ft->fwmu);
	struct work_txn t = {0};
	struct prepper *prep = NULL;
	bool building;
	while (work_begin(v, &t, &prep, &building)) {
		bool starved = false; /* the read-ahead has nothing yet */
		struct big_put big = {0};
		size_t done = work_slice(v, &t, &prep, &big, &starved);
		work_put_big(v, &t, &big);
		if (work_end(v, &t, prep, building, done))
			break;
		if (starved)
			prep_wait(prep);
	}
	pthread_mutex_unlock(&v->ft->fwmu);
}

/* Trigram slices hold the store this long. */
#define SUB_SLICE_NS 200000000ull

size_t vault_substrings_work(struct vault *v)
{
	size_t total = 0;
	for (;;) {
		if (!vault_store(v) || vault_fulltext_stopped(v) ||
		    !atomic_load(&v->ft->ready))
			break;
		size_t done = 0;
		pthread_mutex_lock(&v->smu);
		bool txn = v->ft->store_txn;
		bool merge = !txn && atomic_load(&v->ft->merge);
		int r = txn	? 0
			: merge ? store_fts_merge(v->store, SUB_SLICE_NS)
			: store_sub_ready(v->store)
				? 0
				: store_sub_backfill(v->store, SUB_SLICE_NS,
						     &done);
		pthread_mutex_unlock(&v->smu);
		if (merge && r == 0) {
			atomic_store(&v->ft->merge, false);
			r = 1; /* on to the substrings */
		}
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

/* ---- in the background ------------------------------------------------ */

/* The lane of the read-ahead's worker. */
#define WARM_LANE 1

/* The commonest words read ahead (store_warm_new), one a step, until they
 * are all read, the store is rebuilt or the work stops. */
static void warm_run(struct vault *v)
{
	uint64_t t0 = now_ns();
	struct store *s = vault_store(v);
	struct store_warm *w = s ? store_warm_new(s) : NULL;
	struct vault_fulltext_step step = {.read_ahead = true,
					   .n = store_warm_words(w)};
	bool any = w != NULL;
	while (w && atomic_load(&v->ft->ready) && !vault_fulltext_stopped(v) &&
	       store_warm_step(s, w) > 0)
		;
	store_warm_free(w);
	step.ns = now_ns() - t0;
	if (any && v->ft->report)
		v->ft->report(v, &step, v->ft->report_ud);
}

/* The read-ahead pushed, once, when search is ready (fmu held). */
static void warm_locked(struct vault *v)
{
	struct fulltext *ft = v->ft;
	if (ft->warm_pushed || ft->stop || !atomic_load(&ft->ready) ||
	    !vault_store(v))
		return;
	ft->warm_pushed = true;
	ft->warm_job.lane = WARM_LANE;
	workq_push(ft->q, &ft->warm_job);
}

/* The read-ahead's worker runs only when a core is idle (SCHED_IDLE):
 * it never takes a core from a search or a write. */
static void bg_thread_start(unsigned lanes, void *ud)
{
	(void)ud;
	struct sched_param sp = {0};
	if (lanes == 1u << WARM_LANE)
		pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
}

/* A round's jobs: the texts, then the substrings; when the round ends,
 * the next is pushed if paths were queued meanwhile (or the store broke),
 * else none is pending until one is. The read-ahead's job runs on its
 * own worker. */
static void bg_run(struct workq_job *j, void *ud)
{
	struct vault *v = ud;
	struct fulltext *ft = v->ft;
	if (j == &ft->warm_job) {
		warm_run(v);
		return;
	}
	bool texts = j == &ft->texts_job;
	struct vault_fulltext_step step = {.substrings = !texts};
	uint64_t t0 = now_ns();
	if (texts) {
		struct vault_store_state st;
		vault_store_state(v, &st);
		step.n = st.total - st.done;
		vault_fulltext_work(v);
	} else {
		step.n = vault_substrings_work(v);
	}
	step.ns = now_ns() - t0;
	if (ft->report)
		ft->report(v, &step, ft->report_ud);
	if (texts) {
		workq_push(ft->q, &ft->subs_job);
		return;
	}
	pthread_mutex_lock(&ft->fmu);
	ft->pending = false;
	warm_locked(v);
	schedule_locked(v);
	pthread_mutex_unlock(&ft->fmu);
}

int vault_fulltext_start(struct vault *v, vault_fulltext_fn report, void *ud)
{
	struct fulltext *ft = v->ft;
	const struct workq_ops ops = {
		.run = bg_run, .thread_start = bg_thread_start, .ud = v};
	struct workq *q = workq_new(&ops);
	if (workq_start(q, 1, 1u << 0) != 1 ||
	    workq_start(q, 1, 1u << WARM_LANE) != 1) {
		workq_free(q);
		return -EAGAIN;
	}
	pthread_mutex_lock(&ft->fmu);
	ft->report = report;
	ft->report_ud = ud;
	ft->q = q;
	/* The first round: a build, what changed while stopped, or only
	 * the substrings. */
	if (!ft->stop) {
		ft->pending = true;
		workq_push(q, &ft->texts_job);
	}
	pthread_mutex_unlock(&ft->fmu);
	return 0;
}

void vault_fulltext_flush(struct vault *v)
{
	if (!atomic_load(&v->ft->ready) || !vault_store(v))
		return;
	pthread_mutex_lock(&v->ft->fmu);
	bool queued = v->ft->dirty_head < v->ft->dirty.n;
	bool taking = v->ft->taking;
	pthread_mutex_unlock(&v->ft->fmu);
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
	pthread_mutex_lock(&v->ft->fmu);
	bool stop = v->ft->stop;
	pthread_mutex_unlock(&v->ft->fmu);
	return stop;
}

void vault_fulltext_stop(struct vault *v)
{
	pthread_mutex_lock(&v->ft->fmu);
	v->ft->stop = true;
	pthread_cond_broadcast(&v->ft->fcv);
	struct workq *q = v->ft->q;
	pthread_mutex_unlock(&v->ft->fmu);
	/* The round running ends at its next slice; what is queued is
	 * read again at the next start. */
	if (q) {
		workq_stop(q, false);
		workq_join(q, NULL);
	}
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
	pthread_mutex_lock(&v->ft->fmu);
	while (!atomic_load(&v->ft->ready) && !v->ft->stop && vault_store(v))
		if (pthread_cond_timedwait(&v->ft->fcv, &v->ft->fmu, &until))
			break;
	bool ready = atomic_load(&v->ft->ready);
	pthread_mutex_unlock(&v->ft->fmu);
	return ready;
}
