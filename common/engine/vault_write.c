/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guarded write path: the guard (the policy's judgement of a note's
 * new text, with the violation recorded and refused text kept), the spare
 * files writes use, and vault_commit(), which every write of a note's
 * text goes through. Callers hold wmu; the note is swapped into the index
 * under rw for writing, and the policy reference is taken under polmu.
 */
#include "vault_int.h"

#include <errno.h>

void write_outcome_clear(struct write_outcome *o)
{
	free(o->warning);
	free(o->rejected_path);
	memset(o, 0, sizeof(*o));
}

void vault_index_swap_in(struct vault *v, struct note *n)
{
	pthread_rwlock_wrlock(&v->rw);
	index_put(v->ix, n);
	pthread_rwlock_unlock(&v->rw);
}

void vault_index_drop(struct vault *v, const char *path, uint64_t old_ino,
		      const char *source)
{
	pthread_rwlock_wrlock(&v->rw);
	index_remove(v->ix, path);
	pthread_rwlock_unlock(&v->rw);
	vault_store_queue(v, path);
	vault_emit(v, VEV_DELETED, path, NULL, source, old_ino);
}

static int64_t keep_btime(struct vault *v, const struct note *old,
			  const char *path)
{
	if (old)
		return note_btime(old);
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
			? vault_save_rejected(v, path, text, len, &why)
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
	struct note *after = note_new(path, text, len, vault_note_flags(v));
	int r = guard_note(v, path, text, len, after, o, out, ret_msg);
	note_free(after);
	return r;
}

/* The spare files for a write (writer lock held), or NULL. As many are
 * made ahead as there were notes (up to the pool's 2,048), so that a
 * rename whose every other note links to the note renamed finds a spare
 * for each; asked again only when the notes doubled (the index still
 * loading at the first write), not at each new note: the pool makes
 * them when it runs low, in the pauses between writes, and each new
 * note made would otherwise ask for one more. */
struct file_pool *vault_write_pool(struct vault *v)
{
	if (!v->pool_tried) {
		v->pool_tried = true;
		v->pool = file_pool_new(v->rootfd);
		if (v->pool)
			file_pool_set_in_use(v->pool, v->in_use, v->in_use_ud);
	}
	size_t n = index_count(v->ix);
	if (v->pool && n > 2 * v->pool_fill) {
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

struct file_pool *vault_spare_pool(struct vault *v)
{
	vault_write_lock(v);
	struct file_pool *p = vault_write_pool(v);
	vault_write_unlock(v);
	return p;
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
	struct note *after = note_new(path, text, len, vault_note_flags(v));
	int r = o->skip_guard ? 0
			      : guard_note(v, path, text, len, after, o, out,
					   ret_msg);
	if (r < 0) {
		note_free(after);
		return r;
	}
	vault_keep_original(v, path);
	struct stat st;
	r = file_write_pooled(vault_write_pool(v), v->rootfd, path, text, len,
			      WRITE_MKDIRS | (o->create ? WRITE_NOREPLACE : 0) |
				      (o->followed ? WRITE_FOLLOWED : 0),
			      &st);
	if (r < 0) {
		note_free(after);
		*ret_msg = xasprintf("Cannot write %s: %s", QUOTE(path),
				     strerror(-r));
		return r;
	}
	note_set_stat(after, &st, keep_btime(v, old, path), text, len);
	uint64_t old_ino = old ? note_ino(old) : 0;
	vault_index_swap_in(v, after);
	vault_store_queue(v, path);
	vault_emit_written(v, path, !old, o->source, old_ino, text, len, &st);
	return 0;
}
