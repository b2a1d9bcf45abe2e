/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the kernel caches must follow changes it did not see: those made
 * by vaultd itself (MCP tools, link rewrites, the trash) and those made
 * in the vault folder directly (inotify). This file drops the kernel's
 * entries and attributes from its own thread (libfuse forbids it from a
 * request handler) and announces each change through the mount, so the
 * watchers of the mount (Obsidian, editors) hear of it. It also keeps the
 * two records by which the mount recognises its own changes: the paths a
 * request thread is changing now (the vault listener leaves those alone)
 * and the paths held across requests by a shadow copy or a pending
 * delete (the inotify watcher leaves those alone).
 */
#include "mount_int.h"
#include "fileio.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

/*
 * A thread handling a mount request names the paths (notes, or folders
 * and what is in them) whose nodes it takes care of itself: the vault's
 * events for them carry the mount as their origin, and the vault
 * listener leaves those alone. Other notes the request changes as a side
 * effect (links rewritten by a rename) are the listener's, like any
 * change made by vaultd: their kernel cache must go. Writer lock held;
 * o lives until the lock is released.
 */
void mount_origin(struct mount *m, struct vault_origin *o, const char *a,
		  const char *b)
{
	*o = (struct vault_origin){.token = m, .paths = {a, b}};
	vault_set_origin(m->v, o);
}

/*
 * The paths the mount holds across requests (a shadow copy open, a delete
 * in its grace period), counted: the inotify watcher, which hears of the
 * mount's changes to the folder later and on another thread, leaves them
 * alone. Not the question above: while a note is open in a shadow copy,
 * an MCP tool may still change it, and the listener must handle that.
 */
void own(struct mount *m, const char *path, int delta)
{
	pthread_mutex_lock(&m->omu);
	intptr_t n = (intptr_t)hmap_get(m->owned, path) + delta;
	if (n > 0)
		hmap_put(m->owned, path, (void *)n);
	else
		hmap_del(m->owned, path);
	pthread_mutex_unlock(&m->omu);
}

bool mount_owns(struct mount *m, const char *path)
{
	pthread_mutex_lock(&m->omu);
	bool r = hmap_get(m->owned, path) != NULL;
	pthread_mutex_unlock(&m->omu);
	return r;
}

static void queue_push(struct mount *m, struct inval *q)
{
	workq_push(m->q, &q->wq);
}

void queue_inval(struct mount *m, bool entry, fuse_ino_t ino, const char *name)
{
	struct inval *q = xcalloc(1, sizeof(*q));
	q->kind = entry ? INVAL_ENTRY : INVAL_INODE;
	q->ino = ino;
	q->name = name ? xstrdup(name) : NULL;
	queue_push(m, q);
}

static void queue_announce(struct mount *m, enum inval_kind kind,
			   const char *path, const char *to)
{
	if (!m->mountpoint)
		return;
	struct inval *q = xcalloc(1, sizeof(*q));
	q->kind = kind;
	q->name = xstrdup(path);
	q->to = to ? xstrdup(to) : NULL;
	queue_push(m, q);
}

/* Is this request the inval thread announcing a change? */
bool announcer(struct mount *m, fuse_req_t req)
{
	pid_t tid = atomic_load(&m->inval_tid);
	return tid && fuse_req_ctx(req)->pid == tid;
}

/* How path looks to the announcer now: 0 as it is, -1 absent, 1 present
 * (as the ghost file: a note that is gone from the folder). */
int announced(struct mount *m, const char *path)
{
	pthread_mutex_lock(&m->amu);
	int r = path && m->announcing && !strcmp(m->announcing, path)
			? (m->announce_ghost ? 1 : -1)
			: 0;
	pthread_mutex_unlock(&m->amu);
	return r;
}

static void set_announcing(struct mount *m, const char *path, bool ghost)
{
	char *copy = path ? xstrdup(path) : NULL;
	pthread_mutex_lock(&m->amu);
	char *old = m->announcing;
	m->announcing = copy;
	m->announce_ghost = ghost;
	pthread_mutex_unlock(&m->amu);
	free(old);
}

/*
 * The kernel tells inotify (Obsidian's, an editor's) only about changes
 * that pass through the mount; a FUSE server's own changes to its
 * backing folder make no event. So a change vaultd made some other way
 * (MCP, vaultctl, link rewrites, the trash, outside changes it saw) is
 * made again through the mount by this thread, as the operation that
 * matches it: a time set (IN_ATTRIB) for a changed note, mknod or mkdir
 * (IN_CREATE) for a new one, unlink or rmdir (IN_DELETE) for one that is
 * gone, rename (IN_MOVED_FROM/TO) for a move. The mount answers these
 * requests from the folder as it is and changes nothing. This thread
 * holds no lock while it waits on the mount.
 */
static void announce(struct mount *m, struct inval *q)
{
	_cleanup_free_ char *at = xasprintf("%s/%s", m->mountpoint, q->name);
	struct stat st;
	int rootfd = vault_rootfd(m->v);
	switch (q->kind) {
	case ANNOUNCE_CHANGED:
		if (fstatat(rootfd, q->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
						 st.st_mtim};
			if (utimensat(AT_FDCWD, at, ts, AT_SYMLINK_NOFOLLOW)) {
			}
		}
		break;
	case ANNOUNCE_CREATED:
		if (fstatat(rootfd, q->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			break;
		set_announcing(m, q->name, false);
		if (S_ISDIR(st.st_mode)
			    ? mkdir(at, st.st_mode & 07777)
			    : mknod(at, S_IFREG | (st.st_mode & 07777), 0)) {
		}
		set_announcing(m, NULL, false);
		break;
	case ANNOUNCE_DELETED:
		/* A name the kernel still has goes; one it forgot is looked
		 * up as the ghost, then goes. */
		set_announcing(m, q->name, true);
		if (unlink(at) < 0 && errno == EISDIR && rmdir(at)) {
		}
		set_announcing(m, NULL, false);
		break;
	case ANNOUNCE_RENAMED: {
		_cleanup_free_ char *to =
			xasprintf("%s/%s", m->mountpoint, q->to);
		set_announcing(m, q->to, false);
		int r = rename(at, to);
		set_announcing(m, NULL, false);
		if (r < 0) {
			/* The kernel did not know the old name: the new one
			 * is simply new. */
			struct inval c = {.kind = ANNOUNCE_CREATED,
					  .name = q->to};
			announce(m, &c);
		}
		break;
	}
	default:
		break;
	}
}

static void inval_thread_start(unsigned lanes, void *ud)
{
	struct mount *m = ud;
	if (lanes == 1u << INVAL_LANE)
		atomic_store(&m->inval_tid, gettid());
}

/* Never from a request handler (libfuse's rule): from the queue's one
 * thread, in the order queued. */
static void inval_run(struct workq_job *j, void *ud)
{
	struct mount *m = ud;
	struct inval *q = (struct inval *)j;
	if (j->lane == GRACE_LANE) {
		grace_run(m, j);
		return;
	}
	if (!__atomic_load_n(&m->mounted, __ATOMIC_ACQUIRE))
		return;
	if (q->kind == INVAL_ENTRY)
		fuse_lowlevel_notify_inval_entry(m->se, q->ino, q->name,
						 strlen(q->name));
	else if (q->kind == INVAL_INODE)
		fuse_lowlevel_notify_inval_inode(m->se, q->ino, 0, 0);
	else
		announce(m, q);
}

static void inval_free(struct workq_job *j, void *ud)
{
	struct inval *q = (struct inval *)j;
	(void)ud;
	if (j->lane == GRACE_LANE) {
		grace_free(j);
		return;
	}
	free(q->name);
	free(q->to);
	free(q);
}

struct workq *inval_queue_new(struct mount *m)
{
	const struct workq_ops ops = {
		.run = inval_run,
		.done = inval_free,
		.drop = inval_free,
		.thread_start = inval_thread_start,
		.ud = m,
	};
	return workq_new(&ops);
}

/* The inval thread, and the thread that ends grace periods. */
int inval_start(struct mount *m)
{
	return workq_start(m->q, 1, 1u << INVAL_LANE) == 1 &&
			       workq_start(m->q, 1, 1u << GRACE_LANE) == 1
		       ? 0
		       : EAGAIN;
}

/* Drop the listing of path's folder. */
static void inval_listing(struct mount *m, const char *path)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *dir =
		slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup("");
	struct node *parent = known_node(m, dir, false);
	if (parent)
		queue_inval(m, false, ino_of(m, parent), NULL);
}

/* Drop the kernel's entry for path and its folder's listing. */
void inval_path(struct mount *m, const char *path)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *dir =
		slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup("");
	struct node *parent = known_node(m, dir, false);
	if (!parent)
		return;
	queue_inval(m, true, ino_of(m, parent), slash ? slash + 1 : path);
	queue_inval(m, false, ino_of(m, parent), NULL);
}

void mount_external_change(struct mount *m, const char *path)
{
	struct node *n = known_node(m, path, false);
	if (n)
		queue_inval(m, false, ino_of(m, n), NULL);
	inval_path(m, path);
}

/*
 * vaultd replaced the file old_ino (temp + rename), now at path: the node
 * the kernel has for the old file shows the new one. Returns that node's
 * number, whose cached attributes and pages the caller drops; 0 when no
 * node held it.
 */
fuse_ino_t follow_replaced(struct mount *m, uint64_t old_ino, const char *path)
{
	struct stat st;
	pthread_mutex_lock(&m->tmu);
	struct node *n = NULL;
	if (fstat(vault_rootfd(m->v), &st) == 0) {
		n = table_find(m, (ino_t)old_ino, st.st_dev);
		if (n)
			n->nlookup++;
	}
	pthread_mutex_unlock(&m->tmu);
	/* Only the old file itself (replaced, so no longer linked
	 * anywhere). When no node held it, its inode number may already
	 * be another file's: that node stays as it is. */
	bool replaced = false;
	if (n) {
		struct stat nst;
		int nfd = node_get(n);
		replaced = fstatat(nfd, "", &nst,
				   AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0 &&
			   nst.st_nlink == 0;
		node_put(n);
	}
	fuse_ino_t k = 0;
	if (n && replaced) {
		int fd = beneath_open(vault_rootfd(m->v), path,
				      O_PATH | O_NOFOLLOW, 0);
		if (fd >= 0)
			node_swap(m, n, fd);
		k = ino_of(m, n);
	}
	if (n)
		unref_node(m, n, 1);
	return k;
}

/* A note renamed by vaultd, now at path, whose links were rewritten
 * there (a new file): its node follows, and loses its kernel caches as
 * the writer lets go of the vault (writer lock held). */
void follow_rewritten(struct mount *m, uint64_t old_ino, const char *path)
{
	struct stat st;
	fuse_ino_t k = 0;
	if (file_stat(vault_rootfd(m->v), path, &st) == 0 &&
	    (uint64_t)st.st_ino != old_ino)
		k = follow_replaced(m, old_ino, path);
	if (k)
		pv_push(&m->replaced, (void *)(uintptr_t)k);
}

/*
 * The writer lets go of the vault (writer lock held): the nodes whose
 * files it replaced are handed to settle_run().
 */
void *settle_take(void *ud)
{
	struct mount *m = ud;
	if (!m->replaced.n)
		return NULL;
	struct ptrvec *inos = xmalloc(sizeof(*inos));
	*inos = m->replaced;
	m->replaced = (struct ptrvec){0};
	__atomic_add_fetch(&m->settling, 1, __ATOMIC_ACQ_REL);
	return inos;
}

/*
 * Drop what the kernel caches of the nodes whose files a writer replaced,
 * before that writer answers (a rename through the mount, an MCP tool):
 * a read after the answer gets the new text and size. Left to the inval
 * thread, the drop could land while such a read is in flight: the kernel
 * then keeps the old size over the new text (zeros past its end, or the
 * text cut short). On the writer's thread with no vault lock held; for a
 * mount request, libfuse's rule against notifying from a handler is
 * about locks the kernel holds for it: a rename holds its folders',
 * not these files' attributes or pages, and there is no writeback cache.
 */
void settle_run(void *taken, void *ud)
{
	struct mount *m = ud;
	struct ptrvec *inos = taken;
	for (size_t i = 0; i < inos->n; i++)
		if (__atomic_load_n(&m->mounted, __ATOMIC_ACQUIRE))
			fuse_lowlevel_notify_inval_inode(
				m->se, (fuse_ino_t)(uintptr_t)inos->v[i], 0, 0);
	pv_free(inos);
	free(inos);
	__atomic_sub_fetch(&m->settling, 1, __ATOMIC_ACQ_REL);
}

/* The vault changed a note (MCP tools, link rewrites, inotify). */
void on_vault_event(const struct vault_event *ev, void *ud)
{
	struct mount *m = ud;
	if (ev->origin == m)
		return; /* the mount handles its own nodes */
	bool external = ev->source && !strcmp(ev->source, "external");
	if (ev->type == VEV_CHANGED && ev->old_ino && !external) {
		fuse_ino_t k = follow_replaced(m, ev->old_ino, ev->path);
		if (k)
			pv_push(&m->replaced, (void *)(uintptr_t)k);
		else
			inval_path(m, ev->path);
	}
	/* A name that goes away keeps its kernel entry until the
	 * announcement takes it (unlink, rename), so that watchers hear of
	 * it; its folder's listing goes now. */
	if (ev->type == VEV_DELETED)
		inval_listing(m, ev->path);
	else if (ev->type != VEV_CHANGED || external)
		inval_path(m, ev->path);
	if (ev->old_path)
		inval_listing(m, ev->old_path);
	switch (ev->type) {
	case VEV_CHANGED:
		queue_announce(m, ANNOUNCE_CHANGED, ev->path, NULL);
		break;
	case VEV_CREATED:
		queue_announce(m, ANNOUNCE_CREATED, ev->path, NULL);
		break;
	case VEV_DELETED:
		queue_announce(m, ANNOUNCE_DELETED, ev->path, NULL);
		break;
	case VEV_RENAMED:
		queue_announce(m, ANNOUNCE_RENAMED, ev->old_path, ev->path);
		break;
	}
}
