/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Recording changes: a writer's change is queued with the note's text,
 * read at once (history_note_changed/deleted/renamed); the history thread
 * drains the queue into the pending batch, whose texts become blobs in
 * h->idx when the batch is committed. Until the recording at start has
 * run, changes are held and the notes' earlier texts kept
 * (history_keep_original), so the first recording holds every note as it
 * was before vaultd changed it.
 */
#include "history_int.h"
#include "fileio.h"
#include "note.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- recording ---------------------------------------------------------- */

/* A note's entry: a blob with the file's size, mtime and inode (what the
 * start-up scan compares). */
void hist_entry_init(git_index_entry *e, const char *path, int64_t mtime_ns,
		     int64_t size, uint64_t ino)
{
	e->path = path;
	e->mode = GIT_FILEMODE_BLOB;
	e->file_size = (uint32_t)size;
	e->mtime.seconds = (int32_t)(mtime_ns / 1000000000);
	e->mtime.nanoseconds = (uint32_t)(mtime_ns % 1000000000);
	e->ctime = e->mtime;
	e->ino = (uint32_t)ino;
}

/* Put e in h->idx. 1: its text changed, 0: the same text, <0: error. */
int hist_add_entry(struct history *h, const git_index_entry *e)
{
	const git_index_entry *old = git_index_get_bypath(h->idx, e->path, 0);
	bool same = old && git_oid_equal(&old->id, &e->id);
	if (git_index_add(h->idx, e) < 0) {
		hist_set_err(h, "cannot record a note");
		return -EIO;
	}
	h->index_dirty = true;
	if (!same)
		h->idx_tree_valid = false;
	return same ? 0 : 1;
}

struct text {
	char *s;
	size_t len;
};

static void drop_text(struct history *h, const char *path)
{
	struct text *t = hmap_del(h->texts, path);
	if (t) {
		free(t->s);
		free(t);
	}
}

void hist_drop_texts(struct history *h)
{
	size_t it = 0;
	void *val;
	while (hmap_next(h->texts, &it, NULL, &val)) {
		struct text *t = val;
		free(t->s);
		free(t);
	}
	hmap_free(h->texts);
	h->texts = hmap_new();
}

/* Write the batch's blobs (lock held). */
int hist_write_texts(struct history *h)
{
	size_t it = 0;
	void *val;
	int r = 0;
	while (hmap_next(h->texts, &it, NULL, &val)) {
		struct text *t = val;
		git_oid id;
		if (git_blob_create_from_buffer(&id, h->repo, t->s, t->len) <
		    0) {
			hist_set_err(h, "cannot record a note");
			r = -EIO;
			break;
		}
		h->loose++;
	}
	hist_drop_texts(h);
	return r;
}

/* Put a note's text, as read with st, in h->idx; its blob is written at
 * the commit (text is taken). 1: changed, 0: same, <0: error. */
static int put_text(struct history *h, const char *path, char *text, size_t len,
		    const struct stat *st)
{
	git_index_entry e = {0};
	if (git_odb_hash(&e.id, text, len, GIT_OBJECT_BLOB) < 0) {
		free(text);
		hist_set_err(h, "cannot record a note");
		return -EIO;
	}
	hist_entry_init(&e, path,
			(int64_t)st->st_mtim.tv_sec * 1000000000 +
				st->st_mtim.tv_nsec,
			st->st_size, st->st_ino);
	int r = hist_add_entry(h, &e);
	if (r > 0) {
		drop_text(h, path);
		struct text *t = xmalloc(sizeof(*t));
		*t = (struct text){text, len};
		hmap_put(h->texts, path, t);
	} else {
		free(text);
	}
	return r;
}

/* Read path and put its text in h->idx (with defer, its blob is written
 * at the commit). 1: changed, 0: same, <0: error (-ENOENT: gone). */
int hist_put_file(struct history *h, const char *path, bool defer)
{
	char *text = NULL;
	size_t len;
	struct stat st;
	int r = file_read(h->rootfd, path, (size_t)NOTE_MAX_INDEXED * 4, &text,
			  &len, &st);
	if (r < 0)
		return r;
	if (defer)
		return put_text(h, path, text, len, &st);
	git_index_entry e = {0};
	r = git_blob_create_from_buffer(&e.id, h->repo, text, len);
	free(text);
	if (r < 0) {
		hist_set_err(h, "cannot record a note");
		return -EIO;
	}
	h->loose++;
	hist_entry_init(&e, path,
			(int64_t)st.st_mtim.tv_sec * 1000000000 +
				st.st_mtim.tv_nsec,
			st.st_size, st.st_ino);
	return hist_add_entry(h, &e);
}

int hist_drop_file(struct history *h, const char *path)
{
	drop_text(h, path);
	if (!git_index_get_bypath(h->idx, path, 0))
		return 0;
	if (git_index_remove(h->idx, path, 0) < 0) {
		hist_set_err(h, "cannot record a deletion");
		return -EIO;
	}
	h->index_dirty = true;
	h->idx_tree_valid = false;
	return 1;
}

/* A change into the batch; ns: when it was made (the batch is due
 * HISTORY_BATCH_MS after its first change). */
void hist_pend(struct history *h, char kind, const char *path, const char *from,
	       uint64_t ns)
{
	size_t at = (size_t)(uintptr_t)hmap_get(h->pend_at, path);
	if (at && kind != 'R') {
		/* A later change to a path in the batch: the last word. A
		 * note renamed here and then changed stays a rename. */
		struct change *c = &h->pend[at - 1];
		if (c->kind != 'R' || kind == 'D')
			c->kind = kind;
		return;
	}
	if (h->npend == h->cappend) {
		h->cappend = h->cappend ? 2 * h->cappend : 16;
		h->pend = xrealloc(h->pend, h->cappend * sizeof(*h->pend));
	}
	h->pend[h->npend++] = (struct change){kind, xstrdup(path),
					      from ? xstrdup(from) : NULL};
	hmap_put(h->pend_at, path, (void *)(uintptr_t)h->npend);
	if (h->npend == 1)
		h->first_ns = ns;
}

/* Start (or go on with) a batch by author: another author's batch is
 * committed first, so that every commit has one author. Returns the
 * commits made (0 or 1) or a negative errno. */
static int batch_for(struct history *h, const char *author)
{
	int r = 0;
	if (h->npend && h->author && strcmp(h->author, author) != 0)
		r = hist_commit_pending_locked(h);
	if (!h->npend) {
		free(h->author);
		h->author = xstrdup(author);
	}
	return r;
}

/* text: the note's text as its writer left it (taken), or NULL to read
 * it now. */
static int changed_locked(struct history *h, const char *path,
			  const char *author, char *text, size_t len,
			  const struct stat *st, uint64_t ns)
{
	int c = batch_for(h, author);
	int r = text ? put_text(h, path, text, len, st)
		     : hist_put_file(h, path, true);
	/* -ENOENT: gone again, its deletion comes next; another error: the
	 * change is in the next scan. */
	if (r > 0)
		hist_pend(h, 'C', path, NULL, ns);
	return c;
}

static int deleted_locked(struct history *h, const char *path,
			  const char *author, uint64_t ns)
{
	int c = batch_for(h, author);
	if (hist_drop_file(h, path) > 0)
		hist_pend(h, 'D', path, NULL, ns);
	return c;
}

/* text as for changed_locked(); have_text false: read it now. */
static int renamed_locked(struct history *h, const char *old_path,
			  const char *new_path, const char *author,
			  bool have_text, char *text, size_t len,
			  const struct stat *st, uint64_t ns)
{
	int c = batch_for(h, author);
	int r = hist_drop_file(h, old_path);
	if (r >= 0 && have_text)
		r = text ? put_text(h, new_path, TAKE_PTR(text), len, st)
			 : -ENOENT;
	else if (r >= 0)
		r = hist_put_file(h, new_path, true);
	free(text);
	if (r < 0)
		return c;
	/* A note renamed back and forth within a batch: only the first name
	 * and the last count. */
	size_t at = (size_t)(uintptr_t)hmap_get(h->pend_at, old_path);
	if (at && h->pend[at - 1].kind == 'C') {
		/* Changed, then renamed: the rename says it all. */
		h->pend[at - 1].kind = 'X';
		hmap_del(h->pend_at, old_path);
		hist_pend(h, 'R', new_path, old_path, ns);
	} else if (at && h->pend[at - 1].kind == 'R') {
		struct change *x = &h->pend[at - 1];
		_cleanup_free_ char *from = TAKE_PTR(x->from);
		hmap_del(h->pend_at, old_path);
		x->kind = 'D';
		hist_pend(h, 'R', new_path, from, ns);
	} else {
		hist_pend(h, 'R', new_path, old_path, ns);
	}
	return c;
}

/* Before the recording at start: keep the change for later (true), with
 * its text as in struct held (taken). Lock held. */
static bool hold(struct history *h, char kind, const char *path,
		 const char *from, const char *author, bool have_text,
		 char *text, size_t len, const struct stat *st)
{
	if (atomic_load(&h->recorded))
		return false;
	if (h->nheld == h->capheld) {
		h->capheld = h->capheld ? 2 * h->capheld : 16;
		h->held = xrealloc(h->held, h->capheld * sizeof(*h->held));
	}
	if (text && h->heldbytes + len > QUEUE_MAX) {
		/* Too much held: this one is read again at the replay. */
		free(text);
		text = NULL;
		have_text = false;
	}
	h->heldbytes += text ? len : 0;
	struct held *x = &h->held[h->nheld++];
	*x = (struct held){{kind, xstrdup(path), from ? xstrdup(from) : NULL},
			   xstrdup(author),
			   have_text,
			   text,
			   len,
			   {0}};
	if (text && st)
		x->st = *st;
	return true;
}

void hist_drop_held(struct history *h)
{
	for (size_t i = 0; i < h->nheld; i++) {
		free(h->held[i].c.path);
		free(h->held[i].c.from);
		free(h->held[i].author);
		free(h->held[i].text);
	}
	free(h->held);
	h->held = NULL;
	h->nheld = h->capheld = 0;
	h->heldbytes = 0;
	hmap_free_with(h->origs, free);
	h->origs = hmap_new();
}

/* The recording at start has run: the held changes become versions. */
void hist_replay_held(struct history *h)
{
	atomic_store(&h->recorded, true);
	uint64_t now = now_ns();
	for (size_t i = 0; i < h->nheld; i++) {
		struct held *x = &h->held[i];
		char *text = TAKE_PTR(x->text);
		if (x->c.kind == 'C' && text)
			changed_locked(h, x->c.path, x->author, text, x->len,
				       &x->st, now);
		else if (x->c.kind == 'C' && !x->have_text)
			changed_locked(h, x->c.path, x->author, NULL, 0, NULL,
				       now);
		else if (x->c.kind == 'D')
			deleted_locked(h, x->c.path, x->author, now);
		else if (x->c.kind == 'R')
			renamed_locked(h, x->c.from, x->c.path, x->author,
				       x->have_text, text, x->len, &x->st, now);
	}
	hist_drop_held(h);
}

/* ---- the queue ---------------------------------------------------------- */

void hist_qitem_free(struct qitem *q)
{
	free(q->path);
	free(q->from);
	free(q->author);
	free(q->text);
	free(q);
}

/* Forget the run's items for path (a rename or deletion came between). */
static void qlast_forget(struct history *h, const char *path)
{
	if (path)
		hmap_del(h->qlast, path);
}

/* Queue a change (text taken). */
static void enqueue(struct history *h, char kind, const char *path,
		    const char *from, const char *author, char *text,
		    size_t len, const struct stat *st)
{
	uint64_t ns = now_ns();
	pthread_mutex_lock(&h->qmu);
	if (!h->qauthor || strcmp(h->qauthor, author) != 0) {
		/* Another writer: its changes are versions of their own. */
		free(h->qauthor);
		h->qauthor = xstrdup(author);
		hmap_free(h->qlast);
		h->qlast = hmap_new();
	}
	struct qitem *last = kind == 'C' ? hmap_get(h->qlast, path) : NULL;
	if (last && text) {
		/* The same writer again: its newer text replaces the one
		 * queued (a batch keeps a note's last text only). */
		h->qbytes = h->qbytes - last->len + len;
		free(last->text);
		last->text = text;
		last->len = len;
		last->st = *st;
		pthread_mutex_unlock(&h->qmu);
		return;
	}
	struct qitem *q = xcalloc(1, sizeof(*q));
	q->kind = kind;
	q->path = xstrdup(path);
	q->from = from ? xstrdup(from) : NULL;
	q->author = xstrdup(author);
	q->text = text;
	q->len = len;
	if (st)
		q->st = *st;
	q->ns = ns;
	qlast_forget(h, path);
	qlast_forget(h, from);
	if (kind == 'C' && text)
		hmap_put(h->qlast, path, q);
	bool was_empty = !h->qhead;
	*h->qtail = q;
	h->qtail = &q->next;
	h->qbytes += len;
	bool full = h->qbytes > QUEUE_MAX;
	/* The history thread waits for the first change of a batch. */
	if (was_empty)
		pthread_cond_broadcast(&h->qcv);
	pthread_mutex_unlock(&h->qmu);
	if (full)
		history_commit(h, true);
}

/* Tell the history thread when the pending batch is due (mu held). */
void hist_publish_pending(struct history *h)
{
	pthread_mutex_lock(&h->qmu);
	h->pend_ns = h->npend ? h->first_ns : 0;
	pthread_mutex_unlock(&h->qmu);
}

/* Take the queued changes into the batch, in order (mu held). Returns
 * the commits made meanwhile (one per change of writer) or a negative
 * errno (the last failure). */
int hist_drain_locked(struct history *h)
{
	pthread_mutex_lock(&h->qmu);
	struct qitem *q = h->qhead;
	h->qhead = NULL;
	h->qtail = &h->qhead;
	h->qbytes = 0;
	hmap_free(h->qlast);
	h->qlast = hmap_new();
	free(h->qauthor);
	h->qauthor = NULL;
	pthread_mutex_unlock(&h->qmu);
	int made = 0, err = 0;
	while (q) {
		struct qitem *next = q->next;
		int r;
		if (q->kind == 'C') {
			r = changed_locked(h, q->path, q->author,
					   TAKE_PTR(q->text), q->len, &q->st,
					   q->ns);
		} else if (q->kind == 'D') {
			r = deleted_locked(h, q->path, q->author, q->ns);
		} else {
			r = renamed_locked(h, q->from, q->path, q->author, true,
					   TAKE_PTR(q->text), q->len, &q->st,
					   q->ns);
		}
		if (r < 0)
			err = r;
		else
			made += r;
		hist_qitem_free(q);
		q = next;
	}
	return err < 0 ? err : made;
}

/* The note's text as its writer left it, or NULL when it cannot be read
 * (gone again: its deletion follows; else the next scan has it). */
static char *read_text(struct history *h, const char *path, size_t *ret_len,
		       struct stat *ret_st)
{
	char *text = NULL;
	if (file_read(h->rootfd, path, (size_t)NOTE_MAX_INDEXED * 4, &text,
		      ret_len, ret_st) < 0)
		return NULL;
	return text;
}

/* Before the recording at start, changes are held (under mu, which the
 * scan holds), with their text (taken; have_text as in struct held);
 * after it, they are queued without waiting for anyone: false, the text
 * left to the caller. */
static bool held_now(struct history *h, char kind, const char *path,
		     const char *from, const char *author, bool have_text,
		     char *text, size_t len, const struct stat *st)
{
	if (atomic_load(&h->recorded))
		return false;
	pthread_mutex_lock(&h->mu);
	bool held = hold(h, kind, path, from, author, have_text, text, len, st);
	pthread_mutex_unlock(&h->mu);
	return held;
}

int history_note_changed(struct history *h, const char *path,
			 const char *author)
{
	size_t len = 0;
	struct stat st;
	char *text = read_text(h, path, &len, &st);
	if (held_now(h, 'C', path, NULL, author, text != NULL, text, len, &st))
		return 0;
	if (!text)
		return 0; /* gone again, or in the next scan */
	enqueue(h, 'C', path, NULL, author, text, len, &st);
	return 0;
}

int history_note_written(struct history *h, const char *path,
			 const char *author, const char *text, size_t len,
			 const struct stat *st)
{
	/* What read_text() would not read either: the next scan has it. */
	bool fits = len <= (size_t)NOTE_MAX_INDEXED * 4;
	char *copy = NULL;
	if (fits) {
		copy = xmalloc(len + 1);
		memcpy(copy, text, len);
		copy[len] = '\0';
	}
	if (held_now(h, 'C', path, NULL, author, fits, copy, len, st))
		return 0;
	if (copy)
		enqueue(h, 'C', path, NULL, author, copy, len, st);
	return 0;
}

int history_note_deleted(struct history *h, const char *path,
			 const char *author)
{
	if (held_now(h, 'D', path, NULL, author, false, NULL, 0, NULL))
		return 0;
	enqueue(h, 'D', path, NULL, author, NULL, 0, NULL);
	return 0;
}

int history_note_renamed(struct history *h, const char *old_path,
			 const char *new_path, const char *author)
{
	size_t len = 0;
	struct stat st;
	char *text = read_text(h, new_path, &len, &st);
	if (held_now(h, 'R', new_path, old_path, author, true, text, len, &st))
		return 0;
	enqueue(h, 'R', new_path, old_path, author, text, len,
		text ? &st : NULL);
	return 0;
}

bool history_recorded(struct history *h)
{
	return atomic_load(&h->recorded);
}

bool history_packing(struct history *h)
{
	return atomic_load(&h->packing);
}

int history_keep_original(struct history *h, const char *path)
{
	/* After the recording at start (every write but the first few),
	 * nothing to do and nobody to wait for. */
	if (atomic_load(&h->recorded))
		return 0;
	pthread_mutex_lock(&h->mu);
	if (atomic_load(&h->recorded) || hmap_get(h->origs, path)) {
		pthread_mutex_unlock(&h->mu);
		return 0;
	}
	struct orig *o = xcalloc(1, sizeof(*o));
	struct stat st;
	int r = file_stat(h->rootfd, path, &st);
	if (r == -ENOENT) {
		o->absent = true;
		r = 0;
	} else if (r == 0) {
		struct history_file f = {path,
					 (int64_t)st.st_mtim.tv_sec *
							 1000000000 +
						 st.st_mtim.tv_nsec,
					 st.st_size, st.st_ino};
		o->mtime_ns = f.mtime_ns;
		o->size = f.size;
		o->ino = f.ino;
		const git_index_entry *e =
			git_index_get_bypath(h->idx, path, 0);
		if (e && hist_stat_matches(e, &f)) {
			o->id = e->id; /* recorded as it is */
		} else {
			_cleanup_free_ char *text = NULL;
			size_t len;
			r = file_read(h->rootfd, path,
				      (size_t)NOTE_MAX_INDEXED * 4, &text, &len,
				      NULL);
			if (r == 0 && git_blob_create_from_buffer(
					      &o->id, h->repo, text, len) < 0) {
				hist_set_err(h, "cannot record a note");
				r = -EIO;
			}
			if (r == 0)
				h->loose++;
		}
	}
	if (r == 0)
		hmap_put(h->origs, path, o);
	else
		free(o);
	pthread_mutex_unlock(&h->mu);
	return r;
}
