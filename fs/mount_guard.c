/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The note-guarding layer: a note written through the mount is written to
 * a shadow copy, and its text becomes the note only when the vault's
 * guard accepts it at commit (a close, fsync or the last release). A
 * refused text leaves the note as it was, which may mean putting back a
 * text taken at an earlier flush of the same handle, or a note an editor
 * deleted or renamed away just before saving. Deletes wait out a grace
 * period (editors save by delete and recreate) before the vault forgets
 * the note.
 */
#include "mount_int.h"
#include "fileio.h"
#include "log.h"
#include "note.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A note the guard judges: *.md, not hidden, not ignored. */
bool guarded(struct mount *m, const char *path)
{
	if (!path || !path_is_note(path))
		return false;
	struct vault *v = m->v;
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	return !policy_ignored(pol, path, false);
}

/* "mount:<process name>" for the request's process. */
char *source_of(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char p[64], comm[64] = "unknown";
	snprintf(p, sizeof(p), "/proc/%d/comm", ctx ? (int)ctx->pid : 0);
	int fd = ctx && ctx->pid ? open(p, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		ssize_t n = read(fd, comm, sizeof(comm) - 1);
		if (n > 0) {
			comm[n] = 0;
			comm[strcspn(comm, "\n")] = 0;
		}
		close(fd);
	}
	return xasprintf("mount:%s", comm);
}

/*
 * The job that ends a delete's grace period, on the mount queue's
 * GRACE_LANE. It names its delete by number: a save that brings the note
 * back takes the delete (and frees it) while the job waits or runs.
 */
struct grace_job {
	struct workq_job wq; /* first */
	uint64_t id;
};

static void grace_push(struct mount *m, uint64_t id, unsigned delay_ms)
{
	struct grace_job *g = xcalloc(1, sizeof(*g));
	g->wq.lane = GRACE_LANE;
	g->id = id;
	workq_push_after(m->q, &g->wq, delay_ms);
}

static bool grace_of(const struct workq_job *j, void *arg)
{
	return j->lane == GRACE_LANE &&
	       ((const struct grace_job *)j)->id == *(const uint64_t *)arg;
}

void grace_free(struct workq_job *j)
{
	free(j);
}

struct pending_delete *pending_take(struct mount *m, const char *path)
{
	pthread_mutex_lock(&m->pmu);
	struct pending_delete *found = NULL;
	for (struct pending_delete **p = &m->pending; *p; p = &(*p)->next) {
		if (!strcmp((*p)->path, path)) {
			found = *p;
			*p = found->next;
			break;
		}
	}
	pthread_mutex_unlock(&m->pmu);
	/* Its job no longer waits (one running finds nothing to do). */
	struct workq_job *j =
		found ? workq_remove(m->q, grace_of, &found->id) : NULL;
	while (j) {
		struct workq_job *next = j->next;
		grace_free(j);
		j = next;
	}
	return found;
}

void pending_free(struct pending_delete *p)
{
	free(p->path);
	free(p->old_text);
	free(p->trash);
	free(p->source);
	free(p);
}

/* The caller has claimed path (own()) before touching the vault folder,
 * so the watcher never takes the mount's own change for an outside one;
 * that claim now belongs to the pending delete. */
void pending_add(struct mount *m, const char *path, char *text, size_t len,
		 const char *trash, const char *source)
{
	struct pending_delete *old = pending_take(m, path);
	if (old) {
		own(m, old->path, -1);
		pending_free(old);
	}
	struct pending_delete *p = xcalloc(1, sizeof(*p));
	p->path = xstrdup(path);
	p->old_text = text;
	p->len = len;
	p->trash = trash ? xstrdup(trash) : NULL;
	p->source = xstrdup(source);
	p->deadline = now_ns() + (uint64_t)m->grace_ms * 1000000ull;
	pthread_mutex_lock(&m->pmu);
	p->id = ++m->pending_ids;
	p->next = m->pending;
	m->pending = p;
	uint64_t id = p->id;
	pthread_mutex_unlock(&m->pmu);
	grace_push(m, id, m->grace_ms);
}

/* The note came back within the grace period: it was saved, not deleted. */
void pending_done(struct mount *m, struct pending_delete *p)
{
	if (p->trash)
		file_unlink(vault_rootfd(m->v), p->trash);
	own(m, p->path, -1);
	pending_free(p);
}

/*
 * Unlink of a note: it goes to .trash/, and is deleted for good (links
 * marked per policy) unless it comes back within the grace period. 0 or
 * -errno.
 */
int delete_note(struct mount *m, fuse_req_t req, const char *path)
{
	int rootfd = vault_rootfd(m->v);
	char *text = NULL;
	size_t len = 0;
	struct stat st;
	if (file_stat(rootfd, path, &st) == 0 && S_ISREG(st.st_mode)) {
		/* Its text puts it back if a save that follows is refused: no
		 * text, no delete. */
		int e = file_read(rootfd, path, VAULT_TEXT_MAX, &text, &len,
				  NULL);
		if (e < 0) {
			log_warn("%s: delete refused: cannot read it (%s)",
				 path, strerror(-e));
			return e == -EFBIG ? -EFBIG : -EIO;
		}
	}
	_cleanup_free_ char *trash = NULL, *why = NULL;
	if (vault_trash_path(m->v, path, &trash, &why) < 0)
		log_warn("%s: delete refused: %s", path, why);
	own(m, path, 1);
	if (trash)
		vault_keep_original(m->v, path);
	int r = trash ? file_rename(rootfd, path, trash, true, true) : -EPERM;
	if (r < 0) {
		own(m, path, -1);
		free(text);
		return r;
	}
	_cleanup_free_ char *src = source_of(req);
	pending_add(m, path, text, len, trash, src);
	return 0;
}

/* While a delete waits on a writer of its note, how often the grace job
 * looks again. */
#define GRACE_RECHECK_MS 100

/* The delete the job names, taken out of the list when its grace period
 * is over and no one has the note open for writing; NULL otherwise (its
 * job is pushed again while it waits on a writer). */
static struct pending_delete *grace_due(struct mount *m, uint64_t id)
{
	uint64_t now = now_ns(), wait_ns = 0;
	pthread_mutex_lock(&m->pmu);
	struct pending_delete **p = &m->pending;
	while (*p && (*p)->id != id)
		p = &(*p)->next;
	struct pending_delete *x = *p;
	if (x) {
		/* Still open for writing: wait for it. */
		pthread_mutex_lock(&m->omu);
		intptr_t users = (intptr_t)hmap_get(m->owned, x->path);
		pthread_mutex_unlock(&m->omu);
		if (x->deadline > now)
			wait_ns = x->deadline - now;
		else if (users > 1)
			wait_ns = GRACE_RECHECK_MS * 1000000ull;
		else
			*p = x->next;
	}
	pthread_mutex_unlock(&m->pmu);
	if (x && wait_ns) {
		grace_push(m, id, (unsigned)((wait_ns + 999999) / 1000000));
		return NULL;
	}
	return x;
}

/* Grace over and the note is still gone: it is deleted. At a stop the
 * deletes left are mount_stop()'s. */
void grace_run(struct mount *m, struct workq_job *j)
{
	if (!__atomic_load_n(&m->mounted, __ATOMIC_ACQUIRE))
		return;
	struct pending_delete *x = grace_due(m, ((struct grace_job *)j)->id);
	if (!x)
		return;
	struct stat st;
	vault_write_lock(m->v);
	if (file_stat(vault_rootfd(m->v), x->path, &st) < 0) {
		vault_forget_note(m->v, x->path, x->source);
		log_info("%s: deleted through the mount (%s)%s%s", x->path,
			 x->source, x->trash ? ", kept in " : "",
			 x->trash ? x->trash : "");
	} else {
		/* Back without a guarded write (e.g. a hard link): judge it
		 * like an outside change. */
		vault_sync_path(m->v, x->path, x->source, 0);
	}
	vault_write_unlock(m->v);
	own(m, x->path, -1);
	pending_free(x);
}

/* Copy from's bytes to the start of to. */
static int copy_fd(int from, int to)
{
	char buf[65536];
	off_t off = 0;
	for (;;) {
		ssize_t r = pread(from, buf, sizeof(buf), off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		for (ssize_t done = 0; done < r;) {
			ssize_t w = pwrite(to, buf + done, (size_t)(r - done),
					   off + done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			done += w;
		}
		off += r;
	}
}

static int disk_shadow(struct mount *m)
{
	return m->shadow_dir >= 0 ? openat(m->shadow_dir, ".",
					   O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)
				  : -1;
}

/* A private copy of a note to write into (with copy: from_fd's text).
 * *ret_mem: it is in memory. */
int make_shadow(struct mount *m, int from_fd, bool copy, bool *ret_mem)
{
	struct stat st;
	bool big = copy && from_fd >= 0 && fstat(from_fd, &st) == 0 &&
		   st.st_size > (off_t)SHADOW_SPILL;
	int fd = big ? disk_shadow(m) : -1;
	bool mem = fd < 0;
	if (mem)
		fd = memfd_create("vaultd-shadow", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = copy && from_fd >= 0 ? copy_fd(from_fd, fd) : 0;
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_mem = mem;
	return fd;
}

/*
 * A shadow in memory is about to reach end: past SHADOW_SPILL, its text
 * moves to a file in .vaultd/shadow (where that fails it stays in
 * memory). h->mu held.
 */
void shadow_grow(struct mount *m, struct fh *h, off_t end)
{
	if (!h->shadow || !h->in_memory || end <= (off_t)SHADOW_SPILL)
		return;
	int fd = disk_shadow(m);
	if (fd < 0)
		return;
	if (copy_fd(h->fd, fd) < 0) {
		close(fd);
		return;
	}
	pthread_mutex_lock(&m->tmu);
	if (h->node->writer_fd == h->fd)
		h->node->writer_fd = fd;
	pthread_mutex_unlock(&m->tmu);
	if (h->spilled_fd >= 0)
		close(h->spilled_fd);
	h->spilled_fd = h->fd;
	h->in_memory = false;
	__atomic_store_n(&h->fd, fd, __ATOMIC_RELEASE);
}

static int read_fd(int fd, char **ret, size_t *ret_len)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size > VAULT_TEXT_MAX)
		return -EFBIG;
	size_t len = (size_t)st.st_size, got = 0;
	char *buf = xmalloc(len + 1);
	while (got < len) {
		ssize_t r = pread(fd, buf + got, len - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			/* Never judge (and commit) half a text. */
			int e = -errno;
			free(buf);
			return e;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = 0;
	*ret = buf;
	*ret_len = got;
	return 0;
}

void drop_base(struct fh *h)
{
	free(h->base);
	h->base = NULL;
	h->base_len = 0;
	h->has_base = h->base_absent = false;
}

/* The note's path for this handle (it follows renames; under hmu). */
char *fh_path(struct mount *m, struct fh *h)
{
	pthread_mutex_lock(&m->hmu);
	char *p = xstrdup(h->path);
	pthread_mutex_unlock(&m->hmu);
	return p;
}

/*
 * A later text of the handle was refused after an earlier one was taken
 * at a flush: the note goes back to what it was before the handle's first
 * commit, unless someone else has changed it since. Writer lock held.
 */
static void revert_to_base(struct mount *m, struct fh *h, const char *path)
{
	struct vault_restore rs = {.text = h->base,
				   .len = h->base_len,
				   .absent = h->base_absent,
				   .only_if = true,
				   .hash = h->last_hash};
	int r = vault_restore(m->v, path, &rs, h->source, NULL);
	if (r < 0 && r != -ESTALE)
		log_error("%s: cannot put back the text it had before "
			  "this write: %s",
			  path, strerror(-r));
	drop_base(h);
}

/*
 * The note renamed away or deleted moments before (an editor's save) had
 * its new text refused: put the old one back. Writer lock held. False
 * when that failed too (the copy in .trash/ then stays).
 */
static bool restore_pending(struct mount *m, struct pending_delete *p,
			    const char *path, const char *source)
{
	struct vault_restore rs = {
		.text = p->old_text, .len = p->len, .trash = p->trash};
	bool untrashed;
	int r = vault_restore(m->v, path, &rs, source, &untrashed);
	if (untrashed) { /* it is the note again */
		free(p->trash);
		p->trash = NULL;
	}
	if (r < 0) {
		log_error("%s: cannot put the old text back (%s)%s%s", path,
			  strerror(-r), p->trash ? "; it is kept in " : "",
			  p->trash ? p->trash : "");
		return false;
	}
	return true;
}

/* The errors a writer can act on pass; any other failure is EIO. */
static int commit_errno(int r)
{
	switch (r) {
	case 0:
	case -EPERM:
	case -ENOSPC:
	case -EDQUOT:
	case -EROFS:
	case -EFBIG:
		return r;
	default:
		return -EIO;
	}
}

/* A commit was taken: the handle remembers its text, and (at a flush)
 * the note's text before (old, old_err: how reading it went). */
static void commit_taken(struct fh *h, enum commit_kind kind, const char *text,
			 size_t len, char **old, size_t ol, int old_err)
{
	h->last_hash = hash_bytes(text, len);
	if (kind == COMMIT_FSYNC) {
		drop_base(h);
	} else if (old_err == 0 || old_err == -ENOENT) {
		h->base = *old;
		*old = NULL;
		h->base_len = ol;
		h->has_base = true;
		h->base_absent = old_err == -ENOENT || h->created;
	}
}

/*
 * A commit was refused: the note keeps (or gets back) the text it had,
 * the one a delete moments before took (p), or goes if it is new. Writer
 * lock held. *ret_keep: p could not be put back (its trash copy stays);
 * *ret_gone: the note is no longer there.
 */
static void commit_refused(struct mount *m, struct fh *h,
			   struct pending_delete *p, const char *path,
			   bool *ret_keep, bool *ret_gone)
{
	if (p) {
		*ret_keep = !restore_pending(m, p, path, h->source);
	} else if (h->has_base) {
		*ret_gone = h->base_absent;
		revert_to_base(m, h, path);
	} else if (h->created) {
		/* A refused new note does not come into being. */
		struct vault_restore rs = {.absent = true};
		*ret_gone = true;
		vault_restore(m->v, path, &rs, h->source, NULL);
	}
}

/*
 * The guard at commit: the shadow's text becomes the note, or is refused
 * (-EPERM) and the note keeps its old text; refused text is kept under
 * .vaultd/rejected/. A note renamed away or deleted moments before (an
 * editor's save) comes back either way. Called with h->mu held.
 */
int commit(struct mount *m, struct fh *h, enum commit_kind kind)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	_cleanup_free_ char *path = fh_path(m, h);
	if (h->write_err) {
		log_warn("%s: not committed: a write to it failed (%s); the "
			 "note keeps its text",
			 path, strerror(h->write_err));
		return commit_errno(-h->write_err);
	}
	int r = read_fd(h->fd, &text, &len);
	if (r < 0) {
		log_warn("%s: not committed: cannot read what was written "
			 "(%s)",
			 path, strerror(-r));
		return commit_errno(r);
	}
	struct vault *v = m->v;
	/* The node follows the new file below (node_swap()). */
	struct write_opts o = {
		.source = h->source, .save_rejected = true, .followed = true};
	struct write_outcome out = {0};
	_cleanup_free_ char *msg = NULL;
	vault_write_lock(v);
	/* Renames wait for the writer lock: under it the path is current. */
	free(path);
	path = fh_path(m, h);
	struct vault_origin org;
	mount_origin(m, &org, path, NULL);
	/* What the note was, kept if this commit is taken (see fh). */
	_cleanup_free_ char *old = NULL;
	size_t ol = 0;
	int old_err = -1;
	if (kind == COMMIT_FLUSH && !h->has_base)
		old_err = h->created
				  ? -ENOENT /* it was not there */
				  : file_read(vault_rootfd(v), path,
					      VAULT_TEXT_MAX, &old, &ol, NULL);
	struct pending_delete *p = pending_take(m, path);
	bool keep_pending = false, gone = false;
	r = vault_commit(v, path, text, len, &o, &out, &msg);
	if (r == 0) {
		commit_taken(h, kind, text, len, &old, ol, old_err);
		if (out.warning)
			log_warn("%s: accepted with a warning (%s): %s", path,
				 h->source, out.warning);
	} else {
		log_warn("%s: write refused (%s): %s", path, h->source,
			 msg ? msg : strerror(-r));
		commit_refused(m, h, p, path, &keep_pending, &gone);
	}
	vault_write_unlock(v);
	if (p && keep_pending) {
		own(m, p->path, -1);
		pending_free(p);
	} else if (p) {
		pending_done(m, p);
	}
	/* The node now names the note's current file (or none). */
	int fd = beneath_open(vault_rootfd(v), path, O_PATH | O_NOFOLLOW, 0);
	if (fd >= 0)
		node_swap(m, h->node, fd);
	queue_inval(m, false, ino_of(m, h->node), NULL);
	if (gone)
		inval_path(m, path);
	write_outcome_clear(&out);
	h->dirty = h->created = false;
	return commit_errno(r);
}

/* Truncate a note by path (no open handle): a guarded write. */
int truncate_note(struct mount *m, fuse_req_t req, struct node *n,
		  const char *path, off_t size)
{
	int rfd = open_node(m, n, O_RDONLY);
	if (rfd < 0)
		return errno;
	struct fh h = {.tag = FH_FILE,
		       .orig_fd = -1,
		       .node = n,
		       .path = (char *)path,
		       .source = source_of(req)};
	bool mem;
	int shadow = make_shadow(m, rfd, true, &mem);
	close(rfd);
	if (shadow < 0) {
		free(h.source);
		return -shadow;
	}
	h.fd = shadow;
	int r = ftruncate(shadow, size) < 0 ? -errno
					    : commit(m, &h, COMMIT_TRUNCATE);
	close(shadow);
	free(h.source);
	return -r;
}

/* The commit point of a note: close() gets EPERM when the guard refuses. */
int commit_if_needed(struct mount *m, struct fh *h, enum commit_kind kind)
{
	pthread_mutex_lock(&h->mu);
	int r = (h->shadow && (h->dirty || h->created)) ? commit(m, h, kind)
							: 0;
	if (kind == COMMIT_RELEASE) {
		drop_base(h);
		h->closing = true;
	}
	pthread_mutex_unlock(&h->mu);
	return r;
}
