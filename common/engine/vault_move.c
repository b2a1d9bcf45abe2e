/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Renames: of a note (vault_rename()) and of a folder with everything in
 * it (vault_rename_folder()), each with every link that would lead
 * elsewhere rewritten; and the link rewrites themselves (the linking
 * notes' new texts, made durable beside them, then put in place and in
 * the index), which vault_trash.c's delete uses too. Called with wmu
 * held; takes rw for writing only to swap the index's entries, and
 * polmu for a reference to the policy.
 */
#include "vault_int.h"
#include "history.h"
#include "rewrite.h"

#include <errno.h>
#include <stdio.h>
#include <sys/types.h>

void vault_pending_free(struct pending *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(p[i].text);
		free(p[i].old);
		free(p[i].new_path);
		note_free(p[i].parsed);
	}
	free(p);
}

static int cmp_src(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;
	return strcmp(note_fold_path(x->src), note_fold_path(y->src));
}

/*
 * The new texts of the notes srcs (the vector is freed) for the moves
 * mv, or for the delete of note deleted: those that change, in path
 * order (with their old texts when keep_old), and the number of links
 * changed.
 */
int vault_rewrite_sources(struct vault *v, struct ptrvec *srcs,
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
			*ret_msg = xasprintf("Cannot read '%s': %s",
					     note_path(s), strerror(-r));
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
		const char *to = mv ? index_moves_path(mv, s) : note_path(s);
		p[np++] = (struct pending){
			.src = s,
			.text = nt,
			.len = strlen(nt),
			.links = count,
			.old = keep_old ? TAKE_PTR(text) : NULL,
			.old_len = len,
			.new_path =
				strcmp(to, note_path(s)) ? xstrdup(to) : NULL,
		};
		total += count;
	}
	pv_free(srcs);
	if (r < 0) {
		vault_pending_free(p, np);
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
int vault_moved_done(struct vault_moved *m, struct vault_moved *ret)
{
	if (ret) {
		*ret = *m;
		*m = (struct vault_moved){0};
	}
	return 0;
}

/* The linking notes rewritten, by the name a client knows them by. */
void vault_moved_set_updated(struct vault *v, struct vault_moved *m,
			     const struct pending *p, size_t n)
{
	m->updated = xcalloc(n + 1, sizeof(*m->updated));
	m->nupdated = n;
	for (size_t i = 0; i < n; i++)
		m->updated[i] = index_display_name(v->ix, p[i].src);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct index_moves *, index_moves_free)

/* A file a dry run would touch, with the unified diff of its change (the
 * one diff_note_versions shows after the change); to: where it moves. */
struct vault_change *vault_moved_add_diff(struct vault_moved *m,
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
		vault_moved_add_diff(m, note_path(p[i].src), p[i].new_path,
				     p[i].old ? p[i].old : "", p[i].old_len,
				     p[i].text, p[i].len)
			->links = p[i].links;
}

/* The linking notes a dry run would rewrite, each with its diff. */
int vault_moved_add_source_diffs(struct vault *v, struct vault_moved *m,
				 const struct pending *p, size_t n,
				 char **ret_msg)
{
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *old = NULL;
		size_t len;
		int r = vault_read_text(v, p[i].src, &old, &len);
		if (r < 0) {
			*ret_msg = xasprintf("Cannot read '%s': %s",
					     note_path(p[i].src), strerror(-r));
			return r;
		}
		vault_moved_add_diff(m, note_path(p[i].src), NULL, old, len,
				     p[i].text, p[i].len);
	}
	return 0;
}

struct parse_job {
	struct vault *v;
	struct pending *p;
	size_t n;
};

/* The new texts of the notes that stay where they are, parsed for the
 * index (index_sources()) while the disk syncs them. */
static void parse_sources(void *ud)
{
	struct parse_job *j = ud;
	unsigned flags = vault_note_flags(j->v);
	for (size_t i = 0; i < j->n; i++) {
		struct pending *q = &j->p[i];
		if (!q->new_path && !q->parsed)
			q->parsed = note_new(note_path(q->src), q->text, q->len,
					     flags);
	}
}

/*
 * The rewritten linking notes, each written to a temp file beside it and
 * all made durable in one pass: nothing visible has changed yet, and a
 * failure (a full disk, a folder that cannot be written) changes nothing.
 */
int vault_prepare_sources(struct vault *v, struct pending *p, size_t n,
			  struct file_batch **ret_b, char **ret_msg)
{
	struct file_batch *b = file_batch_new(v->rootfd, vault_write_pool(v));
	int r = 0;
	size_t bad = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		r = cancel_requested() ? -ECANCELED
				       : file_batch_add(b, note_path(p[i].src),
							p[i].text, p[i].len);
		bad = i;
	}
	struct parse_job job = {.v = v, .p = p, .n = n};
	if (r == 0)
		r = file_batch_sync_during(b, parse_sources, &job, &bad);
	if (r < 0) {
		file_batch_free(b);
		*ret_msg = r == -ECANCELED
				   ? xstrdup("Cancelled")
				   : xasprintf("Cannot update links in '%s': "
					       "%s; nothing was changed",
					       note_path(p[bad].src),
					       strerror(-r));
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
				  note_path(p[i].src), strerror(-r));
			continue;
		}
		nn[i] = p[i].parsed ? TAKE_PTR(p[i].parsed)
				    : note_new(note_path(p[i].src), p[i].text,
					       p[i].len, vault_note_flags(v));
		note_set_stat(nn[i], &st, note_btime(p[i].src), p[i].text,
			      p[i].len);
		old_ino[i] = note_ino(p[i].src);
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
		vault_store_queue(v, note_path(nn[i]));
		vault_emit(v, VEV_CHANGED, note_path(nn[i]), NULL, source,
			   old_ino[i]);
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
int vault_apply_sources(struct vault *v, struct pending *p, size_t n,
			struct file_batch *b, const char *source,
			char **ret_msg)
{
	for (size_t i = 0; i < n; i++)
		vault_keep_original(v, note_path(p[i].src));
	file_batch_apply(b);
	return index_sources(v, p, n, b, 0, source, ret_msg);
}

/* A new path must not be one the policy hides or ignores. */
static int check_seen(const struct policy *pol, const char *path, bool is_dir,
		      char **ret_msg)
{
	if (!policy_ignored(pol, path, is_dir))
		return 0;
	*ret_msg = xasprintf("%s is hidden or ignored by the policy; choose "
			     "another name",
			     QUOTE(path));
	return -EINVAL;
}

/* Whether n may become the note at new_path: another name, free, and
 * seen by the policy. */
static int check_rename(struct vault *v, const struct note *n,
			const char *new_path, const struct policy *pol,
			char **ret_msg)
{
	if (strcmp(note_path(n), new_path) == 0) {
		*ret_msg = xasprintf("Note %s already has that name",
				     QUOTE(note_name(n)));
		return -EINVAL;
	}
	struct note *other = index_by_path(v->ix, new_path);
	struct stat st;
	if ((other && other != n) ||
	    (!other && file_stat(v->rootfd, new_path, &st) == 0)) {
		_cleanup_free_ char *new_name = path_note_name(new_path);
		*ret_msg = xasprintf("Note %s already exists", QUOTE(new_name));
		return -EEXIST;
	}
	return check_seen(pol, new_path, false, ret_msg);
}

/* The guard judges the note under its new name (e.g. Person): the
 * violation is recorded; refused, -EPERM; accepted in warn mode, what
 * was wrong in *ret_warning. */
static int guard_rename(struct vault *v, const struct policy *pol,
			const struct note *n, const char *new_path,
			const char *text, size_t len, const char *source,
			char **ret_warning, char **ret_msg)
{
	struct note *probe =
		note_new(new_path, text, len, policy_note_flags(pol));
	_cleanup_free_ char *gmsg = NULL;
	int r = policy_check(pol, v->ix, n, probe, &gmsg);
	note_free(probe);
	if (r < 0) {
		vault_record_violation(v, source, new_path, gmsg, NULL,
				       pol->warn);
		if (!pol->warn) {
			*ret_msg = TAKE_PTR(gmsg);
			return -EPERM;
		}
	}
	*ret_warning = TAKE_PTR(gmsg);
	return 0;
}

/* The note renamed on disk, with its own links rewritten (own_text), put
 * in the index under its new path, and the event sent. */
static int rename_put(struct vault *v, struct note *n, const char *old_path,
		      const char *new_path, const char *own_text, bool own,
		      unsigned flags, const char *source, char **ret_msg)
{
	if (own) {
		int r = file_write_atomic(v->rootfd, new_path, own_text,
					  strlen(own_text), 0, NULL);
		if (r < 0) {
			*ret_msg = xasprintf("Renamed, but cannot update links "
					     "inside %s: %s",
					     QUOTE(new_path), strerror(-r));
			return r;
		}
	}
	int64_t btime = note_btime(n);
	struct note *moved =
		note_new(new_path, own_text, strlen(own_text), flags);
	struct stat st;
	if (file_stat(v->rootfd, new_path, &st) == 0)
		note_set_stat(moved, &st, btime, own_text, strlen(own_text));
	pthread_rwlock_wrlock(&v->rw);
	index_remove(v->ix, old_path);
	index_put(v->ix, moved);
	pthread_rwlock_unlock(&v->rw);
	vault_store_queue(v, old_path);
	vault_store_queue(v, new_path);
	vault_emit(v, VEV_RENAMED, new_path, old_path, source, note_ino(moved));
	return 0;
}

/*
 * The rename m describes, made: the linking notes' new texts first,
 * durable (if they cannot be written, nothing is renamed), then the
 * note, then them.
 */
static int rename_apply(struct vault *v, const struct vault_moved *m,
			struct note *n, const char *own_text, bool own,
			unsigned flags, struct pending *p, size_t np,
			const char *source, char **ret_msg)
{
	_cleanup_(file_batch_freep) struct file_batch *b = NULL;
	int r = vault_prepare_sources(v, p, np, &b, ret_msg);
	if (r < 0)
		return r;
	vault_keep_original(v, m->old_path);
	vault_keep_original(v, m->new_path);
	r = file_rename(v->rootfd, m->old_path, m->new_path, true, true);
	if (r < 0) {
		*ret_msg = xasprintf("Cannot rename %s to %s: %s",
				     QUOTE(m->old_path), QUOTE(m->new_path),
				     strerror(-r));
		return r;
	}
	/* The rename is made durable with the linking notes. */
	file_batch_sync_folder(b, m->old_path);
	file_batch_sync_folder(b, m->new_path);
	r = rename_put(v, n, m->old_path, m->new_path, own_text, own, flags,
		       source, ret_msg);
	if (r < 0)
		return r;
	_cleanup_free_ char *failed = NULL;
	r = vault_apply_sources(v, p, np, b, source, &failed);
	if (r < 0)
		*ret_msg = xasprintf("Renamed %s to %s, but %s; they still "
				     "link to %s",
				     QUOTE(m->old_path), QUOTE(m->new_path),
				     failed, QUOTE(m->old_name));
	return r;
}

int vault_rename(struct vault *v, struct note *n, const char *new_path,
		 const char *source, bool dry_run, struct vault_moved *ret,
		 char **ret_msg)
{
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	int r = check_rename(v, n, new_path, pol, ret_msg);
	if (r < 0)
		return r;
	_cleanup_free_ char *text = NULL;
	size_t len;
	r = vault_read_text(v, n, &text, &len);
	if (r < 0) {
		*ret_msg = xasprintf("Cannot read '%s': %s", note_path(n),
				     strerror(-r));
		return r;
	}
	_cleanup_free_ char *warning = NULL;
	r = guard_rename(v, pol, n, new_path, text, len, source, &warning,
			 ret_msg);
	if (r < 0)
		return r;

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
	r = vault_rewrite_sources(v, &srcs, mv, NULL, dry_run, &p, &np, &links,
				  ret_msg);
	if (r < 0)
		return r;
	int own = 0;
	_cleanup_free_ char *own_text =
		rewrite_moved(v->ix, mv, n, text, len, &own);

	_cleanup_(vault_moved_clear) struct vault_moved res = {
		.kind = VAULT_MOVE_NOTE,
		.old_name = xstrdup(note_name(n)),
		.new_name = path_note_name(new_path),
		.old_path = xstrdup(note_path(n)),
		.new_path = xstrdup(new_path),
		.links = links + own,
		.dry_run = dry_run,
		.warning = TAKE_PTR(warning),
	};
	vault_moved_set_updated(v, &res, p, np);
	if (dry_run) {
		/* Every file it would touch: the note (moved, its own links
		 * rewritten), then each linking note. */
		vault_moved_add_diff(&res, res.old_path, new_path, text, len,
				     own_text, strlen(own_text));
		r = vault_moved_add_source_diffs(v, &res, p, np, ret_msg);
	} else {
		r = rename_apply(v, &res, n, own_text, own,
				 policy_note_flags(pol), p, np, source,
				 ret_msg);
	}
	vault_pending_free(p, np);
	return r < 0 ? r : vault_moved_done(&res, ret);
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
	return check_seen(pol, to, true, ret_msg);
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

/* Every moving entry's new path free (but for case) and, for a note,
 * seen by the policy; *ret_nnotes: how many of them are notes. */
static int check_folder_targets(struct vault *v, const struct index_moves *mv,
				size_t nmoves, const struct policy *pol,
				size_t *ret_nnotes, char **ret_msg)
{
	size_t nnotes = 0;
	for (size_t i = 0; i < nmoves; i++) {
		const char *np;
		const struct note *e = index_moves_entry(mv, i, &np);
		/* Paths differing in case only are one file to Obsidian
		 * (a folder renamed in case only lands on itself). */
		_cleanup_free_ char *fnp = fold_key(np);
		if (strcmp(fnp, note_fold_path(e)) &&
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
	*ret_nnotes = nnotes;
	return 0;
}

/* What moves, copied: the index entries go during the update. The
 * moving notes rewritten are p[nout .. np). */
static struct moving *moving_new(const struct index_moves *mv, size_t nmoves,
				 const struct pending *p, size_t nout,
				 size_t np)
{
	struct moving *m = xcalloc(nmoves + 1, sizeof(*m));
	for (size_t i = 0; i < nmoves; i++) {
		const char *npath;
		const struct note *e = index_moves_entry(mv, i, &npath);
		m[i] = (struct moving){xstrdup(note_path(e)),
				       xstrdup(npath),
				       index_moves_is_file(mv, e),
				       note_ino(e),
				       note_btime(e),
				       -1};
		for (size_t j = nout; j < np; j++)
			if (p[j].src == e)
				m[i].pending = (ssize_t)j;
	}
	return m;
}

static void moving_free(struct moving *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].from);
		free(m[i].to);
	}
	free(m);
}

/*
 * Every rewritten note's new text first, durable (those in the folder
 * beside their old path: they move with it); then the folder, in one
 * rename; then the notes are put in place. A crash leaves each note
 * whole, with its old or its new text. The notes outside are p[0 ..
 * nout); *ret_b is the batch, put in place.
 */
static int folder_move(struct vault *v, const char *from, const char *to,
		       bool replace, const struct moving *m, size_t nmoves,
		       struct pending *p, size_t np, size_t nout,
		       struct file_batch **ret_b, char **ret_msg)
{
	struct file_batch *b = NULL;
	int r = vault_prepare_sources(v, p, np, &b, ret_msg);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nmoves; i++)
		if (!m[i].file)
			vault_keep_original(v, m[i].from);
	for (size_t i = 0; i < nout; i++)
		vault_keep_original(v, note_path(p[i].src));
	r = file_rename(v->rootfd, from, to, !replace, true);
	if (r < 0) {
		*ret_msg = xasprintf("Cannot rename %s to %s: %s", QUOTE(from),
				     QUOTE(to), strerror(-r));
		file_batch_free(b);
		return r;
	}
	file_batch_moved(b, from, to);
	file_batch_sync_folder(b, from);
	file_batch_sync_folder(b, to);
	file_batch_apply(b);
	*ret_b = b;
	return 0;
}

/* The moved entries in the index under their new paths, the notes read
 * (or rewritten) where they are now, and their events sent. */
static void folder_reindex(struct vault *v, const struct moving *m,
			   size_t nmoves, const struct pending *p,
			   const struct file_batch *b, unsigned flags,
			   const char *source)
{
	struct note **nn = xcalloc(nmoves + 1, sizeof(*nn));
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
			nn[i] = vault_load_note(v->rootfd, m[i].to, flags, NULL,
						NULL, NULL);
			if (nn[i])
				note_set_btime(nn[i], m[i].btime);
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
			vault_touched(v, m[i].from);
			vault_touched(v, m[i].to);
		} else {
			vault_store_queue(v, m[i].from);
			vault_store_queue(v, m[i].to);
			vault_emit(v, nn[i] ? VEV_RENAMED : VEV_DELETED,
				   nn[i] ? m[i].to : m[i].from,
				   nn[i] ? m[i].from : NULL, source, m[i].ino);
		}
	}
	free(nn);
}

/* The folder moved as mv says and the linking notes p rewritten (see
 * vault_rename_folder()). */
static int folder_apply(struct vault *v, const char *from, const char *to,
			bool replace, struct index_moves *mv, size_t nmoves,
			struct pending *p, size_t np, size_t nout,
			unsigned flags, const char *source, char **ret_msg)
{
	struct moving *m = moving_new(mv, nmoves, p, nout, np);
	index_moves_free(mv);
	_cleanup_(file_batch_freep) struct file_batch *b = NULL;
	int r = folder_move(v, from, to, replace, m, nmoves, p, np, nout, &b,
			    ret_msg);
	if (r < 0) {
		moving_free(m, nmoves);
		return r;
	}
	folder_reindex(v, m, nmoves, p, b, flags, source);
	moving_free(m, nmoves);
	_cleanup_free_ char *failed = NULL;
	r = index_sources(v, p, nout, b, 0, source, &failed);
	if (r < 0)
		*ret_msg = xasprintf("Renamed %s to %s, but %s; they still "
				     "link to the old folder",
				     QUOTE(from), QUOTE(to), failed);
	return r;
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
	r = check_folder_targets(v, mv, nmoves, pol, &nnotes, ret_msg);
	if (r < 0)
		return r;
	/* Every link that would lead elsewhere once the folder is moved. */
	struct ptrvec srcs = {0};
	index_moves_sources(mv, &srcs);
	struct pending *p = NULL;
	size_t np = 0;
	int links = 0;
	r = vault_rewrite_sources(v, &srcs, mv, NULL, dry_run, &p, &np, &links,
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
		res.updated[i] = xstrdup(p[i].new_path ? p[i].new_path
						       : note_path(p[i].src));
	if (dry_run)
		add_changes(&res, p, np);
	else
		r = folder_apply(v, from, to, replace, TAKE_PTR(mv), nmoves, p,
				 np, nout, policy_note_flags(pol), source,
				 ret_msg);
	vault_pending_free(p, np);
	return r < 0 ? r : vault_moved_done(&res, ret);
}
