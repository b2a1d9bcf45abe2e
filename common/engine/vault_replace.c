/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Renames that put new text under a note's name, as the engine's own
 * operations, so that a front end (the mount) only maps its calls to
 * them: a file renamed over a note (an editor's save through a temporary
 * file), a note renamed over another, two notes exchanged. The text that
 * arrives under a note's name is judged by the guard as a write to that
 * note first (refused: nothing moves, the text is saved as a rejected
 * write); the notes replaced are recorded in history as they were; the
 * index follows both names. And the way back: a note restored to what it
 * was when a later text of it is refused (vault_restore). The caller
 * holds the vault's writer lock (vault_write_lock()), as for
 * vault_commit().
 */
#include "vault.h"
#include "fileio.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int read_judged(struct vault *v, const char *path, char **ret,
		       size_t *ret_len, char **ret_msg)
{
	int r = file_read(vault_rootfd(v), path, VAULT_TEXT_MAX, ret, ret_len,
			  NULL);
	if (r < 0)
		*ret_msg = xasprintf("cannot read %s (%s)", path, strerror(-r));
	return r;
}

/* from's text judged as to's, and when from is a note too and the two
 * are exchanged, to's text as from's; then the rename and the index. */
static int replace(struct vault *v, const char *from, const char *to,
		   unsigned flags, bool from_note, const char *source,
		   char **ret_msg)
{
	bool judge_back = from_note && (flags & RENAME_EXCHANGE);
	char *a = NULL, *b = NULL;
	size_t al = 0, bl = 0;
	int r = read_judged(v, from, &a, &al, ret_msg);
	if (r == 0 && judge_back)
		r = read_judged(v, to, &b, &bl, ret_msg);
	if (r < 0) {
		free(a);
		return r == -ENOENT ? r : -EIO;
	}
	struct write_opts o = {.source = source, .save_rejected = true};
	r = vault_guard(v, to, a, al, &o, NULL, ret_msg);
	if (r == 0 && judge_back)
		r = vault_guard(v, from, b, bl, &o, NULL, ret_msg);
	free(a);
	free(b);
	if (r < 0)
		return r;
	if (from_note)
		vault_keep_original(v, from);
	vault_keep_original(v, to);
	int rootfd = vault_rootfd(v);
	if (renameat2(rootfd, from, rootfd, to, flags) < 0) {
		r = -errno;
		*ret_msg = xasprintf("rename %s -> %s: %s", from, to,
				     strerror(-r));
		return r;
	}
	vault_sync_path(v, to, source, SYNC_NO_GUARD);
	vault_sync_path(v, from, source, SYNC_NO_GUARD);
	return 0;
}

int vault_replace_from(struct vault *v, const char *from, const char *to,
		       unsigned flags, const char *source, char **ret_msg)
{
	return replace(v, from, to, flags, false, source, ret_msg);
}

int vault_replace_note(struct vault *v, const char *from, const char *to,
		       unsigned flags, const char *source, char **ret_msg)
{
	return replace(v, from, to, flags, true, source, ret_msg);
}

/* Whether the note at path still has the text that hashes to hash. */
static bool unchanged_since(struct vault *v, const char *path, uint64_t hash)
{
	char *cur = NULL;
	size_t cl = 0;
	int r = file_read(vault_rootfd(v), path, VAULT_TEXT_MAX, &cur, &cl,
			  NULL);
	bool same = r == 0 && hash_bytes(cur, cl) == hash;
	free(cur);
	return same;
}

int vault_restore(struct vault *v, const char *path,
		  const struct vault_restore *rs, const char *source,
		  bool *ret_untrashed)
{
	if (ret_untrashed)
		*ret_untrashed = false;
	if (rs->only_if && !unchanged_since(v, path, rs->hash))
		return -ESTALE;
	int rootfd = vault_rootfd(v);
	int r;
	if (rs->absent)
		r = file_unlink(rootfd, path);
	else if (rs->text)
		r = file_write_atomic(rootfd, path, rs->text, rs->len,
				      WRITE_MKDIRS, NULL);
	else
		r = -ENODATA;
	if (r < 0 && !rs->absent && rs->trash) {
		r = file_rename(rootfd, rs->trash, path, false, true);
		if (r == 0 && ret_untrashed)
			*ret_untrashed = true;
	}
	if (r == 0 || (rs->absent && r == -ENOENT))
		vault_sync_path(v, path, source, SYNC_NO_GUARD);
	return rs->absent && r == -ENOENT ? 0 : r;
}
