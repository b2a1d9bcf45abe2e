/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A rename on the mount is one of several things to the vault, and this
 * file decides which: a note moved (every link follows), a file renamed
 * over a note (its text judged first, descriptors still open on it then
 * written through the guard), notes swapped or one replacing another
 * (both judged), a folder moved (links follow, or its notes are judged
 * when it comes from where the guard does not look), a note moved out of
 * the notes (a delete, after the grace period), or a plain passthrough.
 */
#include "mount_int.h"
#include "fileio.h"
#include "log.h"
#include "note.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool is_regular(struct mount *m, const char *path)
{
	struct stat st;
	return path && file_stat(vault_rootfd(m->v), path, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

/* Re-index what a directory rename moved. */
static void sync_tree(struct mount *m, fuse_req_t req, const char *from,
		      const char *to)
{
	_cleanup_free_ char *src = source_of(req);
	struct ptrvec gone = {0};
	vault_write_lock(m->v);
	follow_rename(m, from, to);
	vault_read_lock(m->v);
	/* Its notes and attachments went with the folder. */
	index_paths_under(vault_index(m->v), from, &gone);
	vault_read_unlock(m->v);
	size_t fl = strlen(from);
	struct vault_origin o;
	mount_origin(m, &o, from, to);
	for (size_t i = 0; i < gone.n; i++) {
		const char *old = gone.v[i];
		_cleanup_free_ char *neu = xasprintf("%s%s", to, old + fl);
		vault_sync_path(m->v, old, src, SYNC_NO_GUARD);
		vault_sync_path(m->v, neu, src, SYNC_NO_GUARD);
		free(gone.v[i]);
	}
	vault_write_unlock(m->v);
	pv_free(&gone);
}

/* A folder the guard does not look into (hidden, or ignored by the
 * policy). */
static bool folder_unjudged(struct mount *m, const char *path)
{
	_cleanup_policy_ struct policy *pol = vault_policy_get(m->v);
	return policy_ignored(pol, path, true);
}

/*
 * A folder moved from where the guard does not look to where it does:
 * every note it holds is judged under its new path, as if written there.
 * 0, or -EPERM (logged) when one is refused, or the error reading one.
 * Writer lock held.
 */
static int judge_tree(struct mount *m, const char *from, const char *to,
		      const char *src)
{
	int rootfd = vault_rootfd(m->v);
	struct ptrvec stack = {0};
	pv_push(&stack, xstrdup(from));
	int r = 0;
	size_t fl = strlen(from);
	while (stack.n) {
		_cleanup_free_ char *d = stack.v[--stack.n];
		DIR *dp = r == 0 ? dir_open_beneath(rootfd, d) : NULL;
		struct dirent *de;
		while (dp && r == 0 && (de = readdir(dp))) {
			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			char *p = xasprintf("%s/%s", d, de->d_name);
			if (de->d_type == DT_DIR) {
				pv_push(&stack, p);
				continue;
			}
			_cleanup_free_ char *path = p;
			_cleanup_free_ char *neu =
				xasprintf("%s%s", to, path + fl);
			if (de->d_type != DT_REG || !guarded(m, neu))
				continue;
			char *text = NULL;
			size_t len = 0;
			r = file_read(rootfd, path, VAULT_TEXT_MAX, &text, &len,
				      NULL);
			if (r < 0) {
				log_warn(
					"rename %s -> %s refused: cannot read %s "
					"(%s)",
					from, to, path, strerror(-r));
				r = -EIO;
				break;
			}
			struct write_opts o = {.source = src,
					       .save_rejected = true};
			_cleanup_free_ char *msg = NULL;
			r = vault_guard(m->v, neu, text, len, &o, NULL, &msg);
			free(text);
			if (r < 0)
				log_warn("rename %s -> %s refused (%s): %s",
					 from, to, src,
					 msg ? msg : strerror(-r));
		}
		if (dp)
			closedir(dp);
	}
	for (size_t i = 0; i < stack.n; i++)
		free(stack.v[i]);
	pv_free(&stack);
	return r;
}

/* One rename request, as the steps below see it. */
struct rename_req {
	fuse_req_t req;
	fuse_ino_t parent, newparent;
	const char *name, *newname;
	unsigned int flags;
	const char *from, *to; /* vault paths (NULL: outside the vault) */
	const char *src;       /* who renames */
	bool gfrom;	       /* from is a note the index knows */
	bool gto;	       /* to is a guarded note path */
	bool to_exists;	       /* a regular file is at to */
};

/* The rename itself, in the vault folder: 0 or -errno. */
static int rename_at(struct mount *m, const struct rename_req *rq)
{
	struct node *p = node_of(m, rq->parent),
		    *np = node_of(m, rq->newparent);
	int pfd, npfd;
	node_get2(p, np, &pfd, &npfd);
	int r = renameat2(pfd, rq->name, npfd, rq->newname, rq->flags) < 0
			? -errno
			: 0;
	node_put(np);
	node_put(p);
	return r;
}

/* A note renamed or moved: every link to it follows. 1 when from is no
 * longer a note the index knows (the caller goes on as for a file). */
static int rename_note(struct mount *m, const struct rename_req *rq)
{
	vault_write_lock(m->v);
	struct note *n = index_by_path(vault_index(m->v), rq->from);
	if (!n) {
		vault_write_unlock(m->v);
		return 1;
	}
	char *msg = NULL;
	uint64_t ino = note_ino(n);
	struct vault_origin o;
	mount_origin(m, &o, rq->from, rq->to);
	int r = vault_rename(m->v, n, rq->to, rq->src, false, NULL, &msg);
	vault_set_origin(m->v, NULL);
	if (r == 0) {
		follow_rename(m, rq->from, rq->to);
		follow_rewritten(m, ino, rq->to);
	}
	if (r < 0)
		log_warn("rename %s -> %s refused (%s): %s", rq->from, rq->to,
			 rq->src, msg ? msg : strerror(-r));
	free(msg);
	vault_write_unlock(m->v);
	return r < 0 ? r : 0;
}

/*
 * A file saved under another name, then renamed over the note (VS Code,
 * vim backupcopy=no): the engine judges its text before it becomes the
 * note. Descriptors still open on it write through the guard from now
 * on; none writes while the text is judged.
 */
static int rename_onto_note(struct mount *m, const struct rename_req *rq)
{
	struct writers w = {0};
	/* The writers' copies start from the file, read through vaultd's own
	 * descriptor: theirs may be write-only (O_WRONLY, as most saves
	 * open), and one whose release is still on its way is met too. */
	_cleanup_close_ int fd = beneath_open(vault_rootfd(m->v), rq->from,
					      O_RDONLY | O_NOFOLLOW, 0);
	int r = fd < 0 ? fd : writers_take(m, fd, &w);
	if (r < 0) {
		writers_done(m, &w, false, rq->to, rq->req);
		log_warn("rename %s -> %s refused: %s", rq->from, rq->to,
			 strerror(-r));
		return r == -ENOENT ? -ENOENT : -EIO;
	}
	_cleanup_free_ char *msg = NULL;
	vault_write_lock(m->v);
	struct vault_origin o;
	mount_origin(m, &o, rq->from, rq->to);
	r = vault_replace_from(m->v, rq->from, rq->to, rq->flags, rq->src,
			       &msg);
	vault_set_origin(m->v, NULL);
	writers_done(m, &w, r == 0 && !(rq->flags & RENAME_EXCHANGE), rq->to,
		     rq->req);
	/* A note moved away in its grace period is back: saved, not
	 * deleted (the grace job waits for the writer lock). */
	struct pending_delete *pd = r == 0 ? pending_take(m, rq->to) : NULL;
	if (pd)
		pending_done(m, pd);
	vault_write_unlock(m->v);
	if (r < 0)
		log_warn("rename %s -> %s refused (%s): %s", rq->from, rq->to,
			 rq->src, msg ? msg : strerror(-r));
	return r;
}

/* Note over note, or two notes swapped: both texts are judged under
 * their new names. */
static int rename_between_notes(struct mount *m, const struct rename_req *rq)
{
	_cleanup_free_ char *msg = NULL;
	vault_write_lock(m->v);
	struct vault_origin o;
	mount_origin(m, &o, rq->from, rq->to);
	int r = vault_replace_note(m->v, rq->from, rq->to, rq->flags, rq->src,
				   &msg);
	vault_set_origin(m->v, NULL);
	vault_write_unlock(m->v);
	if (r < 0)
		log_warn("rename %s -> %s refused (%s): %s", rq->from, rq->to,
			 rq->src, msg ? msg : strerror(-r));
	return r;
}

/* A folder renamed or moved (Obsidian's folder rename, mv): every link
 * that would lead elsewhere follows. */
static int rename_folder(struct mount *m, const struct rename_req *rq)
{
	char *msg = NULL;
	vault_write_lock(m->v);
	/* Its notes' files, to follow those rewritten. */
	struct ptrvec paths = {0};
	index_paths_under(vault_index(m->v), rq->from, &paths);
	uint64_t *inos = xcalloc(paths.n + 1, sizeof(*inos));
	for (size_t i = 0; i < paths.n; i++) {
		struct note *n = index_by_path(vault_index(m->v), paths.v[i]);
		inos[i] = n ? note_ino(n) : 0;
	}
	struct vault_origin o;
	mount_origin(m, &o, rq->from, rq->to);
	int r = vault_rename_folder(m->v, rq->from, rq->to, rq->src,
				    !(rq->flags & RENAME_NOREPLACE), false,
				    NULL, &msg);
	vault_set_origin(m->v, NULL);
	size_t fl = strlen(rq->from);
	for (size_t i = 0; i < paths.n; i++) {
		_cleanup_free_ char *np =
			xasprintf("%s%s", rq->to, (char *)paths.v[i] + fl);
		if (r == 0 && inos[i])
			follow_rewritten(m, inos[i], np);
		free(paths.v[i]);
	}
	pv_free(&paths);
	free(inos);
	if (r == 0)
		follow_rename(m, rq->from, rq->to);
	else
		log_warn("rename %s -> %s refused (%s): %s", rq->from, rq->to,
			 rq->src, msg ? msg : strerror(-r));
	vault_write_unlock(m->v);
	free(msg);
	return r;
}

/*
 * The rename passes through. A folder brought in from where the guard
 * does not look has its notes judged first, and stays out if one is
 * refused. A note moved away (text: its text, to put it back) is gone
 * unless it comes back within the grace period.
 */
static int rename_through(struct mount *m, const struct rename_req *rq,
			  bool dir, char *text, size_t len)
{
	const char *from = rq->from, *to = rq->to;
	bool exchange = rq->flags & RENAME_EXCHANGE;
	bool judged = dir && from && to && !exchange &&
		      folder_unjudged(m, from) && !folder_unjudged(m, to);
	if (judged) {
		vault_write_lock(m->v);
		int r = judge_tree(m, from, to, rq->src);
		if (r < 0) {
			vault_write_unlock(m->v);
			free(text);
			return r;
		}
	}
	bool away = rq->gfrom && !exchange;
	if (away)
		own(m, from, 1);
	if (rq->gfrom)
		vault_keep_original(m->v, from);
	if (to && guarded(m, to))
		vault_keep_original(m->v, to);
	int r = rename_at(m, rq);
	if (judged)
		vault_write_unlock(m->v);
	if (r < 0) {
		if (away)
			own(m, from, -1);
		free(text);
		return r;
	}
	if (away)
		pending_add(m, from, text, len, NULL, rq->src);
	else
		free(text);
	if (dir && from && to)
		sync_tree(m, rq->req, from, to);
	if (!rq->gfrom)
		sync_path(m, rq->req, from);
	if (to && !guarded(m, to))
		sync_path(m, rq->req, to);
	return 0;
}

/* Anything else: a folder moved, or a rename that passes through. A note
 * moved to a name that is not a note (x.md -> x.md~, or into
 * .Trash-<uid>/ by gio trash) is gone: deleted after the grace period
 * unless it comes back. */
static int rename_other(struct mount *m, const struct rename_req *rq)
{
	int rootfd = vault_rootfd(m->v);
	bool exchange = rq->flags & RENAME_EXCHANGE;
	char *text = NULL;
	size_t len = 0;
	if (rq->gfrom && !exchange) {
		/* Its text puts it back if the save that follows is refused:
		 * no text, no rename. */
		int r = file_read(rootfd, rq->from, VAULT_TEXT_MAX, &text, &len,
				  NULL);
		if (r < 0) {
			log_warn("rename %s -> %s refused: cannot read it (%s)",
				 rq->from, rq->to ? rq->to : "?", strerror(-r));
			return -EIO;
		}
	}
	struct stat st;
	bool dir = rq->from && file_stat(rootfd, rq->from, &st) == 0 &&
		   S_ISDIR(st.st_mode);
	if (dir && rq->to && strcmp(rq->from, rq->to) && !exchange &&
	    !folder_unjudged(m, rq->from) && !folder_unjudged(m, rq->to)) {
		free(text); /* none: a folder is no note */
		return rename_folder(m, rq);
	}
	return rename_through(m, rq, dir, text, len);
}

int rename_judged(struct mount *m, fuse_req_t req, fuse_ino_t parent,
		  const char *name, fuse_ino_t newparent, const char *newname,
		  unsigned int flags)
{
	_cleanup_free_ char *from = child_path(m, parent, name);
	_cleanup_free_ char *to = child_path(m, newparent, newname);
	struct rename_req rq = {.req = req,
				.parent = parent,
				.newparent = newparent,
				.name = name,
				.newname = newname,
				.flags = flags,
				.from = from,
				.to = to};
	rq.gfrom = guarded(m, from) && is_regular(m, from);
	rq.gto = guarded(m, to);
	/* Only a note the index knows can be renamed or go away. */
	if (rq.gfrom) {
		vault_read_lock(m->v);
		rq.gfrom = index_by_path(vault_index(m->v), from) != NULL;
		vault_read_unlock(m->v);
	}
	rq.to_exists = is_regular(m, to);
	_cleanup_free_ char *src = source_of(req);
	rq.src = src;
	bool exchange = flags & RENAME_EXCHANGE;
	if (rq.gfrom && rq.gto && !rq.to_exists && !exchange) {
		int r = rename_note(m, &rq);
		if (r <= 0)
			return r;
	}
	if (rq.gto && !rq.gfrom && is_regular(m, from))
		return rename_onto_note(m, &rq);
	if (rq.gfrom && rq.gto && (rq.to_exists || exchange))
		return rename_between_notes(m, &rq);
	return rename_other(m, &rq);
}
