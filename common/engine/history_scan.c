/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The recording at start: history_prepare() writes the blobs of the notes
 * whose size, mtime or inode differ from the saved index (at idle
 * priority, without the lock), and history_scan() puts them in h->idx with
 * the deletions and the originals kept meanwhile, commits that as one
 * snapshot, then replays the changes held until it ran.
 */
#include "history_int.h"
#include "fileio.h"
#include "note.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the start-up scan -------------------------------------------------- */

bool hist_stat_matches(const git_index_entry *e, const struct history_file *f)
{
	return e->file_size == (uint32_t)f->size &&
	       e->ino == (uint32_t)f->ino &&
	       e->mtime.seconds == (int32_t)(f->mtime_ns / 1000000000) &&
	       e->mtime.nanoseconds == (uint32_t)(f->mtime_ns % 1000000000);
}

struct prepared {
	git_oid id;
	int64_t mtime_ns, size;
	uint64_t ino;
};

void hist_drop_prepared(struct history *h)
{
	size_t it = 0;
	void *val;
	while (h->prepared && hmap_next(h->prepared, &it, NULL, &val))
		free(val);
	h->prepared = hmap_free(h->prepared);
}

struct prepare_args {
	const struct history_file *files;
	size_t n;
};

static int prepare_main(struct history *h, void *arg)
{
	const struct history_file *files = ((struct prepare_args *)arg)->files;
	size_t n = ((struct prepare_args *)arg)->n;
	bool *need = xcalloc(n ? n : 1, sizeof(*need));
	size_t nneed = 0;
	pthread_mutex_lock(&h->mu);
	for (size_t i = 0; i < n; i++) {
		const git_index_entry *e =
			git_index_get_bypath(h->idx, files[i].path, 0);
		need[i] = !(e && hist_stat_matches(e, &files[i]));
		nneed += need[i];
	}
	pthread_mutex_unlock(&h->mu);
	if (!nneed) {
		free(need);
		return 0;
	}
	/* A handle of our own: the recording goes on meanwhile. */
	git_repository *repo = NULL;
	if (git_repository_open_bare(&repo, h->dir) < 0) {
		free(need);
		return -EIO;
	}
	struct hmap *prep = hmap_new();
	size_t written = 0;
	for (size_t i = 0; i < n; i++) {
		if (atomic_load(&h->quit))
			break;
		if (!need[i])
			continue;
		_cleanup_free_ char *text = NULL;
		size_t len;
		struct stat st;
		if (file_read(h->rootfd, files[i].path,
			      (size_t)NOTE_MAX_INDEXED * 4, &text, &len,
			      &st) < 0)
			continue;
		struct prepared *p = xmalloc(sizeof(*p));
		if (git_blob_create_from_buffer(&p->id, repo, text, len) < 0) {
			free(p);
			continue;
		}
		p->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
			      st.st_mtim.tv_nsec;
		p->size = st.st_size;
		p->ino = st.st_ino;
		free(hmap_put(prep, files[i].path, p));
		written++;
	}
	git_repository_free(repo);
	free(need);
	if (atomic_load(&h->quit)) {
		hmap_free_with(prep, free);
		return -ECANCELED;
	}
	pthread_mutex_lock(&h->mu);
	hist_drop_prepared(h);
	h->prepared = prep;
	h->loose += written;
	pthread_mutex_unlock(&h->mu);
	return (int)written;
}

int history_prepare(struct history *h, const struct history_file *files,
		    size_t n)
{
	struct prepare_args a = {files, n};
	return hist_run_idle(prepare_main, h, &a);
}

/* A prepared blob for f, when the file is still what was read. */
static int put_prepared(struct history *h, const struct history_file *f)
{
	struct prepared *p =
		h->prepared ? hmap_get(h->prepared, f->path) : NULL;
	if (!p || p->mtime_ns != f->mtime_ns || p->size != f->size ||
	    p->ino != f->ino)
		return -ENOENT;
	git_index_entry e = {0};
	e.id = p->id;
	hist_entry_init(&e, f->path, f->mtime_ns, f->size, f->ino);
	return hist_add_entry(h, &e);
}

/* A kept original in h->idx (as it was before vaultd changed it). */
static int put_orig(struct history *h, const char *path, const struct orig *o)
{
	git_index_entry e = {0};
	e.id = o->id;
	hist_entry_init(&e, path, o->mtime_ns, o->size, o->ino);
	return hist_add_entry(h, &e);
}

int history_scan(struct history *h, const struct history_file *files, size_t n)
{
	if (atomic_load(&h->quit))
		return -ECANCELED;
	pthread_mutex_lock(&h->mu);
	/* Changes vaultd made since it started are held (they follow as
	 * versions of their own); the notes they changed are recorded as
	 * they were before. */
	bool first = !h->have_head;
	if (!first)
		hist_commit_pending_locked(h);
	struct hmap *seen = hmap_new();
	struct sbuf body = {0};
	size_t changed = 0;
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		const struct history_file *f = &files[i];
		hmap_put(seen, f->path, (void *)1);
		const struct orig *o = hmap_get(h->origs, f->path);
		const git_index_entry *e =
			git_index_get_bypath(h->idx, f->path, 0);
		int p;
		if (o && o->absent)
			continue; /* made since: not part of this state */
		else if (o)
			p = put_orig(h, f->path, o);
		else if (e && hist_stat_matches(e, f))
			continue;
		else if ((p = put_prepared(h, f)) == -ENOENT)
			p = hist_put_file(h, f->path, false);
		if (p == -ENOENT)
			continue; /* gone meanwhile: its event follows */
		if (p < 0) {
			r = p;
			break;
		}
		if (p > 0) {
			changed++;
			if (!first)
				sb_printf(&body, "Changed: %s\n", f->path);
		}
	}
	/* Notes vaultd renamed or deleted since it started: as they were. */
	size_t it = 0;
	const char *key;
	void *val;
	while (r == 0 && hmap_next(h->origs, &it, &key, &val)) {
		const struct orig *o = val;
		if (o->absent || hmap_get(seen, key))
			continue;
		hmap_put(seen, key, (void *)1);
		int p = put_orig(h, key, o);
		if (p < 0)
			r = p;
		else if (p > 0 && ++changed && !first)
			sb_printf(&body, "Changed: %s\n", key);
	}
	/* Recorded notes that are gone. */
	struct ptrvec gone = {0};
	size_t cnt = git_index_entrycount(h->idx);
	for (size_t i = 0; r == 0 && i < cnt; i++) {
		const git_index_entry *e = git_index_get_byindex(h->idx, i);
		if (e && !hmap_get(seen, e->path))
			pv_push(&gone, xstrdup(e->path));
	}
	for (size_t i = 0; i < gone.n; i++) {
		if (hist_drop_file(h, gone.v[i]) > 0) {
			changed++;
			sb_printf(&body, "Deleted: %s\n", (char *)gone.v[i]);
		}
		free(gone.v[i]);
	}
	pv_free(&gone);
	hmap_free(seen);
	if (r == 0 && first) {
		size_t notes = git_index_entrycount(h->idx);
		_cleanup_free_ char *sum =
			xasprintf("Initial state: %zu note%s", notes,
				  notes == 1 ? "" : "s");
		_cleanup_free_ char *b =
			xasprintf("Snapshot: %zu notes\n", notes);
		r = hist_write_texts(h);
		if (r == 0)
			r = hist_commit_locked(h, "vaultd", sum, b);
	} else if (r == 0 && changed) {
		_cleanup_free_ char *sum = xasprintf(
			"Changes made while vaultd was not running: %zu "
			"note%s",
			changed, changed == 1 ? "" : "s");
		r = hist_commit_locked(h, "external", sum, body.s);
	}

	sb_free(&body);
	hist_drop_prepared(h);
	/* Whatever happened, changes are recorded as they come from now. */
	hist_replay_held(h);
	hist_publish_pending(h);
	hist_save_index(h);
	pthread_mutex_unlock(&h->mu);
	return r < 0 ? r : (int)changed;
}
