/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Deletes: a note moved to .trash (vault_delete()), a free name there
 * for it, and a note whose file went away without vaultd
 * (vault_forget_note()); the links to it are marked or kept as the
 * policy says, through vault_move.c's link rewrites. Called with wmu
 * held; takes rw for writing only to drop the index's entry, and polmu
 * for a reference to the policy.
 */
#include "vault_int.h"
#include "graph.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

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

/* The policy keeps links to deleted notes: the warning names the notes
 * whose links are now broken (none: no warning). */
static char *broken_links_warning(struct vault *v, const struct pending *p,
				  size_t np)
{
	if (!np)
		return NULL;
	struct sbuf w = {0};
	sb_printf(&w, "%zu note%s ha%s links that are now broken:", np,
		  np == 1 ? "" : "s", np == 1 ? "s" : "ve");
	for (size_t i = 0; i < np; i++) {
		_cleanup_free_ char *dn = index_display_name(v->ix, p[i].src);
		sb_printf(&w, "%s %s (%d link%s)", i ? "," : "", dn, p[i].links,
			  p[i].links == 1 ? "" : "s");
	}
	sb_puts(&w, ". These links were not modified.");
	return sb_steal(&w);
}

/* A delete's dry run: every file it would touch, the note going to
 * .trash as it is, then each linking note rewritten (unless the links
 * are kept). */
static int delete_diffs(struct vault *v, struct vault_moved *m,
			const struct note *n, const struct pending *p,
			size_t np, char **ret_msg)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = vault_read_text(v, n, &text, &len);
	if (r < 0) {
		*ret_msg = xasprintf("Cannot read '%s': %s", m->old_path,
				     strerror(-r));
		return r;
	}
	vault_moved_add_diff(m, m->old_path, m->new_path, text, len, text, len);
	return m->keep_links
		       ? 0
		       : vault_moved_add_source_diffs(v, m, p, np, ret_msg);
}

/* The delete m describes, made: as for a rename, the linking notes'
 * new texts first (np of them), then the note to .trash, then them. */
static int delete_apply(struct vault *v, const struct vault_moved *m,
			struct note *n, struct pending *p, size_t np,
			const char *source, char **ret_msg)
{
	const char *path = m->old_path, *trash = m->new_path;
	_cleanup_(file_batch_freep) struct file_batch *b = NULL;
	int r = vault_prepare_sources(v, p, np, &b, ret_msg);
	if (r < 0)
		return r;
	vault_keep_original(v, path);
	r = file_rename(v->rootfd, path, trash, true, true);
	if (r < 0) {
		*ret_msg = xasprintf("Cannot move '%s' to the trash: %s", path,
				     strerror(-r));
		return r;
	}
	file_batch_sync_folder(b, path);
	file_batch_sync_folder(b, trash);
	vault_index_drop(v, path, note_ino(n), source);
	_cleanup_free_ char *failed = NULL;
	r = vault_apply_sources(v, p, np, b, source, &failed);
	if (r < 0)
		*ret_msg = xasprintf("Moved '%s' to the trash, but %s; they "
				     "still link to it as before",
				     path, failed);
	return r;
}

int vault_delete(struct vault *v, struct note *n, const char *source,
		 bool dry_run, struct vault_moved *ret, char **ret_msg)
{
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	bool keep = pol->keep_links;
	struct ptrvec srcs = graph_backlinks(n);
	struct pending *p = NULL;
	size_t np = 0;
	int links = 0;
	int r = vault_rewrite_sources(v, &srcs, NULL, n, false, &p, &np, &links,
				      ret_msg);
	if (r < 0)
		return r;
	char *trash = NULL;
	r = vault_trash_path(v, note_path(n), &trash, ret_msg);
	if (r < 0) {
		vault_pending_free(p, np);
		return r;
	}
	_cleanup_(vault_moved_clear) struct vault_moved res = {
		.kind = VAULT_MOVE_TRASH,
		.old_name = index_display_name(v->ix, n),
		.old_path = xstrdup(note_path(n)),
		.new_path = trash,
		.dry_run = dry_run,
		.keep_links = keep,
	};
	if (keep) {
		res.warning = broken_links_warning(v, p, np);
	} else {
		vault_moved_set_updated(v, &res, p, np);
		res.links = links;
	}
	if (dry_run)
		r = delete_diffs(v, &res, n, p, np, ret_msg);
	else
		r = delete_apply(v, &res, n, p, keep ? 0 : np, source, ret_msg);
	vault_pending_free(p, np);
	return r < 0 ? r : vault_moved_done(&res, ret);
}

int vault_forget_note(struct vault *v, const char *path, const char *source)
{
	struct note *n = index_by_path(v->ix, path);
	if (!n)
		return 0;
	_cleanup_free_ char *p_ = xstrdup(note_path(n));
	struct pending *p = NULL;
	size_t np = 0;
	int links = 0;
	char *msg = NULL;
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	if (!pol->keep_links) {
		struct ptrvec srcs = graph_backlinks(n);
		if (vault_rewrite_sources(v, &srcs, NULL, n, false, &p, &np,
					  &links, &msg) < 0) {
			free(msg);
			msg = NULL;
			p = NULL;
			np = 0;
		}
	}
	/* The note is gone already: what can be prepared is applied. */
	_cleanup_(file_batch_freep) struct file_batch *b = NULL;
	size_t ready = np;
	if (vault_prepare_sources(v, p, np, &b, &msg) < 0) {
		free(msg);
		msg = NULL;
		ready = 0;
		b = file_batch_new(v->rootfd, vault_write_pool(v));
	}
	vault_index_drop(v, p_, note_ino(n), source);
	int r = vault_apply_sources(v, p, ready, b, source, &msg);
	vault_pending_free(p, np);
	free(msg);
	return r;
}
