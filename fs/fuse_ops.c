/* SPDX-License-Identifier: GPL-2.0-or-later */
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)

#include "fuse_ops.h"
#include "fileio.h"
#include "fuseconn.h"
#include "hmap.h"
#include "log.h"
#include "note.h"
#include "runtime.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>

/* Attributes and names are cached this long; every change vaultd makes or
 * sees (inotify) is pushed to the kernel, so the cache never goes stale. */
#define CACHE_TIMEOUT 86400.0

/* ---- inode table ------------------------------------------------------------
 */

/* A descriptor shared by the handles that only read one file. */
struct shared_fd {
	int fd;
	int refs; /* under the table lock */
};

struct node {
	struct node *next; /* hash chain */
	int fd;		   /* O_PATH, pins the file (not its name) */
	/* A read-only descriptor of fd's file, opened at the first open for
	 * reading and shared by every such handle: opening a note to read
	 * it costs no system call (the node holds one reference). */
	struct shared_fd *rfd; /* under the table lock */
	ino_t ino;
	dev_t dev;
	uint64_t nlookup; /* the kernel's references, under the table lock */
	/* The shadow copy being written, if any: stat answers its size,
	 * since the kernel asks without naming the handle. */
	int writer_fd; /* under the table lock; -1: none */
	/* fd may be swapped for the note's new file after a commit; users
	 * of fd hold this for reading. */
	pthread_rwlock_t fdlock;
};

/* What the inval thread does: drop a kernel cache entry, or announce a
 * change vaultd made to the vault folder (see announce()). */
enum inval_kind {
	INVAL_INODE,
	INVAL_ENTRY, /* parent ino + name */
	ANNOUNCE_CHANGED,
	ANNOUNCE_CREATED,
	ANNOUNCE_DELETED,
	ANNOUNCE_RENAMED, /* name: the old path, to: the new one */
};

struct inval {
	struct inval *next;
	enum inval_kind kind;
	fuse_ino_t ino;
	char *name; /* INVAL_ENTRY: the name; ANNOUNCE_*: the path */
	char *to;
};

struct pending_delete {
	struct pending_delete *next;
	char *path;
	char *old_text; /* to put the note back if its new text is refused */
	size_t len;
	char *trash; /* where unlink put the file, or NULL */
	char *source;
	uint64_t deadline;
};

/*
 * The mount's shared state and its locks. Order (a lock may be taken
 * while holding only locks before it in this list):
 *
 *   a handle's mu (struct fh)   its fd, shadow, dirty state
 *   the vault's locks           commits and renames take the writer lock
 *                               (vault.c); the vault's listener
 *                               (on_vault_event) runs under it
 *   a node's fdlock             read by users of node->fd, written to
 *                               swap it
 *   pmu                         pending deletes
 *   tmu, omu, hmu, qmu          leaves: nothing is taken inside them
 *
 * Set before the session starts and constant after: v, mountpoint, root,
 * rootlen, se, shadow_dir, grace_ms, max_threads, the *_started flags.
 */
struct mount {
	struct vault *v;
	char *mountpoint;
	const char *root; /* vault_root(v) */
	size_t rootlen;
	struct fuse_session *se;
	struct node root_node;
	pthread_mutex_t tmu;	/* the inode table */
	struct node **buckets;	/* tmu */
	size_t nbuckets, count; /* tmu */
	/* Shared read descriptors open, and at most how many: half the
	 * descriptor limit at first, halved whenever descriptors run out
	 * (see shed_shared()). */
	size_t nshared, max_shared; /* tmu */
	int shadow_dir;		    /* .vaultd/shadow, for big shadow copies */
	/* kernel cache invalidations, sent from their own thread */
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	struct inval *qhead, *qtail; /* qmu */
	bool qstop;		     /* qmu */
	/* The inval thread's requests to the mount (announcements) are
	 * answered from the vault folder as it is, changing nothing; while
	 * it announces a path as new, that path looks absent to it. */
	_Atomic pid_t inval_tid;
	pthread_mutex_t amu;
	char *announcing;    /* amu */
	bool announce_ghost; /* amu: it looks present, as the ghost file */
	pthread_t qthread;
	/* Which of the mount's threads were started. */
	bool qthread_started, timer_started, loop_started;
	/* deletes waiting out the grace period */
	pthread_mutex_t pmu;
	struct pending_delete *pending; /* pmu */
	unsigned grace_ms;
	pthread_t timer;
	bool stop_timer; /* atomic (__atomic_*) */
	/* paths the mount is working on: the watcher leaves them alone */
	pthread_mutex_t omu;
	struct hmap *owned; /* omu */
	/* open file handles that can write, for renames (under hmu; taken
	 * before a handle's mu, never while holding one) */
	pthread_mutex_t hmu;
	struct fh *fhs; /* hmu, and each handle's path */
	pthread_t loop;
	bool mounted;	/* atomic (__atomic_*): read by the inval thread */
	bool listening; /* the thread that mounts and stops */
	int max_threads;
	struct fuseconn conn; /* set once mounted (conn.dev 0: unknown) */
	bool loop_done;	      /* under qmu */
};

/*
 * A thread handling a mount request names the paths (notes, or folders
 * and what is in them) whose nodes it takes care of itself, so that the
 * vault listener leaves those alone. Other notes the request changes as a
 * side effect (links rewritten by a rename) are the listener's, like any
 * change made by vaultd: their kernel cache must go.
 */
static _Thread_local const char *tl_mount_own[2];

static void mount_write_begin(const char *a, const char *b)
{
	tl_mount_own[0] = a;
	tl_mount_own[1] = b;
}

static void mount_write_end(void)
{
	tl_mount_own[0] = tl_mount_own[1] = NULL;
}

static bool mount_owns_event(const char *path)
{
	for (int i = 0; path && i < 2; i++) {
		const char *o = tl_mount_own[i];
		size_t l = o ? strlen(o) : 0;
		if (o && !strncmp(path, o, l) &&
		    (path[l] == 0 || path[l] == '/'))
			return true;
	}
	return false;
}

static size_t node_hash(ino_t ino, dev_t dev, size_t n)
{
	uint64_t k[2] = {(uint64_t)ino, (uint64_t)dev};
	return (size_t)(hash_bytes(k, sizeof(k)) & (n - 1));
}

static struct node *table_find(struct mount *m, ino_t ino, dev_t dev)
{
	for (struct node *n = m->buckets[node_hash(ino, dev, m->nbuckets)]; n;
	     n = n->next)
		if (n->ino == ino && n->dev == dev)
			return n;
	return NULL;
}

/* Whether the kernel knows a node for the file (vault_set_file_in_use():
 * such a file is never recycled, follow_replaced() swaps its node). */
static bool holds_file(void *ud, dev_t dev, ino_t ino)
{
	struct mount *m = ud;
	pthread_mutex_lock(&m->tmu);
	bool held = table_find(m, ino, dev) != NULL;
	pthread_mutex_unlock(&m->tmu);
	return held;
}

static void table_insert(struct mount *m, struct node *n)
{
	if (m->count + 1 > m->nbuckets) {
		size_t nb = m->nbuckets * 2;
		struct node **b = xcalloc(nb, sizeof(*b));
		for (size_t i = 0; i < m->nbuckets; i++) {
			while (m->buckets[i]) {
				struct node *x = m->buckets[i];
				m->buckets[i] = x->next;
				size_t h = node_hash(x->ino, x->dev, nb);
				x->next = b[h];
				b[h] = x;
			}
		}
		free(m->buckets);
		m->buckets = b;
		m->nbuckets = nb;
	}
	size_t h = node_hash(n->ino, n->dev, m->nbuckets);
	n->next = m->buckets[h];
	m->buckets[h] = n;
	m->count++;
}

static void table_remove(struct mount *m, struct node *n)
{
	for (struct node **p =
		     &m->buckets[node_hash(n->ino, n->dev, m->nbuckets)];
	     *p; p = &(*p)->next) {
		if (*p == n) {
			*p = n->next;
			m->count--;
			return;
		}
	}
}

static struct mount *mnt(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct node *node_of(struct mount *m, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &m->root_node
				   : (struct node *)(uintptr_t)ino;
}

static fuse_ino_t ino_of(struct mount *m, struct node *n)
{
	return n == &m->root_node ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

/* The node's fd, held for reading until node_put(). */
static int node_get(struct node *n)
{
	pthread_rwlock_rdlock(&n->fdlock);
	return n->fd;
}

static void node_put(struct node *n)
{
	pthread_rwlock_unlock(&n->fdlock);
}

static void shared_put(struct mount *m, struct shared_fd *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&m->tmu);
	bool last = --s->refs == 0;
	if (last)
		m->nshared--;
	pthread_mutex_unlock(&m->tmu);
	if (last) {
		close(s->fd);
		free(s);
	}
}

/*
 * Descriptors ran out (EMFILE): close the shared read descriptors no
 * handle uses (their nodes open them again when read) and keep fewer
 * from now on. Returns how many were closed: when none, trying again is
 * no use.
 */
static size_t shed_shared(struct mount *m)
{
	struct shared_fd **v = NULL;
	size_t n = 0;
	pthread_mutex_lock(&m->tmu);
	v = xcalloc(m->nshared + 1, sizeof(*v));
	for (size_t b = 0; b < m->nbuckets; b++)
		for (struct node *x = m->buckets[b]; x; x = x->next)
			if (x->rfd && x->rfd->refs == 1 && n < m->nshared) {
				v[n++] = x->rfd;
				x->rfd = NULL;
			}
	m->max_shared = m->nshared / 2;
	m->nshared -= n;
	pthread_mutex_unlock(&m->tmu);
	for (size_t i = 0; i < n; i++) {
		close(v[i]->fd);
		free(v[i]);
	}
	free(v);
	return n;
}

static void unref_node(struct mount *m, struct node *n, uint64_t count)
{
	if (n == &m->root_node)
		return;
	pthread_mutex_lock(&m->tmu);
	n->nlookup -= count < n->nlookup ? count : n->nlookup;
	bool gone = n->nlookup == 0;
	if (gone)
		table_remove(m, n);
	pthread_mutex_unlock(&m->tmu);
	if (gone) {
		shared_put(m, n->rfd);
		close(n->fd);
		pthread_rwlock_destroy(&n->fdlock);
		free(n);
	}
}

/* Point a node at another file (a note's new version after a commit). */
static void node_swap(struct mount *m, struct node *n, int newfd)
{
	struct stat st;
	if (fstatat(newfd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		close(newfd);
		return;
	}
	pthread_rwlock_wrlock(&n->fdlock);
	int old = n->fd;
	n->fd = newfd;
	pthread_mutex_lock(&m->tmu);
	table_remove(m, n);
	n->ino = st.st_ino;
	n->dev = st.st_dev;
	table_insert(m, n);
	/* Readers from now on read the new file; those reading keep the
	 * old one. */
	struct shared_fd *rfd = n->rfd;
	n->rfd = NULL;
	pthread_mutex_unlock(&m->tmu);
	pthread_rwlock_unlock(&n->fdlock);
	shared_put(m, rfd);
	close(old);
}

/* ---- paths
 * -------------------------------------------------------------------- */

/* The vault-relative path of a node's file ("" for the root), or NULL when
 * the file is gone or outside the vault. */
static char *node_path(struct mount *m, struct node *n)
{
	if (n == &m->root_node)
		return xstrdup("");
	char link[64], buf[PATH_MAX + 1];
	int fd = node_get(n);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t l = readlink(link, buf, sizeof(buf) - 1);
	node_put(n);
	if (l <= 0 || (size_t)l >= sizeof(buf) - 1)
		return NULL;
	buf[l] = 0;
	if (str_has_suffix(buf, " (deleted)"))
		return NULL;
	if (strncmp(buf, m->root, m->rootlen) != 0 || buf[m->rootlen] != '/')
		return NULL;
	return xstrdup(buf + m->rootlen + 1);
}

static char *child_path(struct mount *m, fuse_ino_t parent, const char *name)
{
	_cleanup_free_ char *dir = node_path(m, node_of(m, parent));
	if (!dir)
		return NULL;
	return *dir ? xasprintf("%s/%s", dir, name) : xstrdup(name);
}

/* A note the guard judges: *.md, not hidden, not ignored. */
static bool guarded(struct mount *m, const char *path)
{
	if (!path || !path_is_note(path))
		return false;
	struct vault *v = m->v;
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	return !policy_ignored(pol, path, false);
}

/* "mount:<process name>" for the request's process. */
static char *source_of(fuse_req_t req)
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

static void own(struct mount *m, const char *path, int delta)
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

/* ---- kernel cache invalidation
 * ---------------------------------------------------- */

static void queue_push(struct mount *m, struct inval *q)
{
	pthread_mutex_lock(&m->qmu);
	if (m->qtail)
		m->qtail->next = q;
	else
		m->qhead = q;
	m->qtail = q;
	pthread_cond_broadcast(&m->qcv);
	pthread_mutex_unlock(&m->qmu);
}

static void queue_inval(struct mount *m, bool entry, fuse_ino_t ino,
			const char *name)
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
static bool announcer(struct mount *m, fuse_req_t req)
{
	pid_t tid = atomic_load(&m->inval_tid);
	return tid && fuse_req_ctx(req)->pid == tid;
}

/* How path looks to the announcer now: 0 as it is, -1 absent, 1 present
 * (as the ghost file: a note that is gone from the folder). */
static int announced(struct mount *m, const char *path)
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

/* An empty file that stands in, for the announcer, for a note already
 * gone from the folder, so that it can unlink its name on the mount. */
#define GHOST ".vaultd/shadow/ghost"

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

/* Never from a request handler (libfuse's rule): from this thread. */
static void *inval_thread(void *arg)
{
	struct mount *m = arg;
	atomic_store(&m->inval_tid, gettid());
	for (;;) {
		pthread_mutex_lock(&m->qmu);
		while (!m->qhead && !m->qstop)
			pthread_cond_wait(&m->qcv, &m->qmu);
		struct inval *q = m->qhead;
		if (!q) {
			pthread_mutex_unlock(&m->qmu);
			return NULL;
		}
		m->qhead = q->next;
		if (!m->qhead)
			m->qtail = NULL;
		pthread_mutex_unlock(&m->qmu);
		if (__atomic_load_n(&m->mounted, __ATOMIC_ACQUIRE)) {
			if (q->kind == INVAL_ENTRY)
				fuse_lowlevel_notify_inval_entry(
					m->se, q->ino, q->name,
					strlen(q->name));
			else if (q->kind == INVAL_INODE)
				fuse_lowlevel_notify_inval_inode(m->se, q->ino,
								 0, 0);
			else
				announce(m, q);
		}
		free(q->name);
		free(q->to);
		free(q);
	}
}

/* The node the kernel knows for a vault path, if any (no new lookup). */
static struct node *known_node(struct mount *m, const char *path, bool ref)
{
	if (!*path)
		return &m->root_node;
	_cleanup_close_ int fd =
		beneath_open(vault_rootfd(m->v), path, O_PATH | O_NOFOLLOW, 0);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	pthread_mutex_lock(&m->tmu);
	struct node *n = table_find(m, st.st_ino, st.st_dev);
	if (n && ref)
		n->nlookup++;
	pthread_mutex_unlock(&m->tmu);
	return n;
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
static void inval_path(struct mount *m, const char *path)
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
static fuse_ino_t follow_replaced(struct mount *m, uint64_t old_ino,
				  const char *path)
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
 * there (a new file): its node follows; its number goes to *inos. */
static void follow_rewritten(struct mount *m, uint64_t old_ino,
			     const char *path, struct ptrvec *inos)
{
	struct stat st;
	fuse_ino_t k = 0;
	if (file_stat(vault_rootfd(m->v), path, &st) == 0 &&
	    (uint64_t)st.st_ino != old_ino)
		k = follow_replaced(m, old_ino, path);
	if (k)
		pv_push(inos, (void *)(uintptr_t)k);
}

/*
 * Drop what the kernel caches of the nodes inos (freed) before the rename
 * that replaced their files is answered: a read right after it must not
 * get the old size. Called with no vault lock held. The kernel's rename
 * holds the folders' locks, not these files' attributes or pages, and
 * there is no writeback cache: nothing here waits on another request.
 */
static void inval_now(struct mount *m, struct ptrvec *inos)
{
	for (size_t i = 0; i < inos->n; i++)
		if (__atomic_load_n(&m->mounted, __ATOMIC_ACQUIRE))
			fuse_lowlevel_notify_inval_inode(
				m->se, (fuse_ino_t)(uintptr_t)inos->v[i], 0, 0);
	pv_free(inos);
}

/* The vault changed a note (MCP tools, link rewrites, inotify). */
static void on_vault_event(const struct vault_event *ev, void *ud)
{
	struct mount *m = ud;
	if (mount_owns_event(ev->path) || mount_owns_event(ev->old_path))
		return; /* the mount handles its own nodes */
	bool external = ev->source && !strcmp(ev->source, "external");
	if (ev->type == VEV_CHANGED && ev->old_ino && !external) {
		fuse_ino_t k = follow_replaced(m, ev->old_ino, ev->path);
		if (k)
			queue_inval(m, false, k, NULL);
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

/* ---- grace period
 * ---------------------------------------------------------------- */

static struct pending_delete *pending_take(struct mount *m, const char *path)
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
	return found;
}

static void pending_free(struct pending_delete *p)
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
static void pending_add(struct mount *m, const char *path, char *text,
			size_t len, const char *trash, const char *source)
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
	p->next = m->pending;
	m->pending = p;
	pthread_mutex_unlock(&m->pmu);
}

/* The note came back within the grace period: it was saved, not deleted. */
static void pending_done(struct mount *m, struct pending_delete *p)
{
	if (p->trash)
		file_unlink(vault_rootfd(m->v), p->trash);
	own(m, p->path, -1);
	pending_free(p);
}

/* Grace over and the note is still gone: it is deleted. */
static void *timer_thread(void *arg)
{
	struct mount *m = arg;
	while (!__atomic_load_n(&m->stop_timer, __ATOMIC_ACQUIRE)) {
		usleep(100000);
		uint64_t now = now_ns();
		pthread_mutex_lock(&m->pmu);
		struct pending_delete *due = NULL;
		for (struct pending_delete **p = &m->pending; *p;) {
			struct pending_delete *x = *p;
			/* Still open for writing: wait for it. */
			pthread_mutex_lock(&m->omu);
			intptr_t users = (intptr_t)hmap_get(m->owned, x->path);
			pthread_mutex_unlock(&m->omu);
			if (x->deadline <= now && users <= 1) {
				*p = x->next;
				x->next = due;
				due = x;
			} else {
				p = &x->next;
			}
		}
		pthread_mutex_unlock(&m->pmu);
		while (due) {
			struct pending_delete *x = due;
			due = x->next;
			struct stat st;
			vault_write_lock(m->v);
			if (file_stat(vault_rootfd(m->v), x->path, &st) < 0) {
				vault_forget_note(m->v, x->path, x->source);
				log_info(
					"%s: deleted through the mount (%s)%s%s",
					x->path, x->source,
					x->trash ? ", kept in " : "",
					x->trash ? x->trash : "");
			} else {
				/* Back without a guarded write (e.g. a hard
				 * link): judge it like an outside change. */
				vault_sync_path(m->v, x->path, x->source, 0);
			}
			vault_write_unlock(m->v);
			own(m, x->path, -1);
			pending_free(x);
		}
	}
	return NULL;
}

/* ---- file handles
 * --------------------------------------------------------------- */

/* fi->fh holds either; the tag tells which (getattr and setattr get the
 * handle of a directory too). */
enum { FH_FILE = 0x46494c45, FH_DIR = 0x44495220 };

struct fh {
	uint32_t tag; /* FH_FILE */
	/* The file, or the shadow copy of a note. Writers and the switch to
	 * a shadow (a written file renamed onto a note) hold mu; readers
	 * may race the switch, so the old fd stays open (orig_fd). */
	int fd;
	int orig_fd;
	struct shared_fd *rfd; /* fd is this one's (a read-only handle) */
	/* A shadow in memory (mu), and the memfd it left when it grew past
	 * SHADOW_SPILL (kept open, as orig_fd, for reads in flight). */
	bool in_memory;
	int spilled_fd;
	bool shadow;
	bool writable;
	bool dirty;   /* written since the last commit */
	bool created; /* a new note: commit even if nothing was written */
	bool append;  /* opened with O_APPEND: writes go to the end */
	/* A write to the shadow failed (a full disk): its text is not what
	 * the writer meant, and is never committed. */
	int write_err;
	struct node *node;
	ino_t open_ino; /* the file's inode when opened */
	char *path;	/* vault path of the note (shadow only) */
	char *source;
	/*
	 * The note as it was before this handle's first commit from a
	 * flush() (another process may still hold the open file: a
	 * subshell's `> note`). If a later text of the same handle is
	 * refused, the note goes back to it, not to a half-written state.
	 */
	char *base;
	size_t base_len;
	bool has_base, base_absent;
	uint64_t last_hash;	  /* of the text this handle last committed */
	struct fh *hprev, *hnext; /* mount->fhs, writable handles only */
	bool listed;		  /* on that list (hmu) */
	int refs;		  /* renames working on it (hmu) */
	bool released;		  /* the kernel let go meanwhile (hmu) */
	pthread_mutex_t mu;
};

static struct fh *fh_of(struct fuse_file_info *fi)
{
	return (struct fh *)(uintptr_t)fi->fh;
}

/* The file handle behind fi, or NULL (none, or a directory's). */
static struct fh *file_fh(struct fuse_file_info *fi)
{
	struct fh *h = fi ? fh_of(fi) : NULL;
	return h && h->tag == FH_FILE ? h : NULL;
}

/* The kernel places O_APPEND writes itself (the offset arrives with each
 * write), and its request buffers are not aligned for O_DIRECT: neither
 * flag belongs on vaultd's own descriptor. */
#define PASS_FLAGS(f) ((f) & ~(O_NOFOLLOW | O_APPEND | O_DIRECT))

static size_t shed_shared(struct mount *m);

static int open_node(struct mount *m, struct node *n, int flags)
{
	char p[64];
	int fd = node_get(n);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	int r = open(p, PASS_FLAGS(flags) | O_CLOEXEC);
	if (r < 0 && errno == EMFILE && shed_shared(m))
		r = open(p, PASS_FLAGS(flags) | O_CLOEXEC);
	int e = errno;
	node_put(n);
	errno = e;
	return r;
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

/*
 * Shadow copies live in memory (a memfd) while they are small, which is
 * what a note is: making one touches no file system. One that grows past
 * SHADOW_SPILL moves to an unnamed file in .vaultd/shadow.
 */
#define SHADOW_SPILL (8u << 20)

static int disk_shadow(struct mount *m)
{
	return m->shadow_dir >= 0 ? openat(m->shadow_dir, ".",
					   O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)
				  : -1;
}

/* A private copy of a note to write into (with copy: from_fd's text).
 * *ret_mem: it is in memory. */
static int make_shadow(struct mount *m, int from_fd, bool copy, bool *ret_mem)
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
static void shadow_grow(struct mount *m, struct fh *h, off_t end)
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

/* Largest text a commit reads into memory to judge. */
#define COMMIT_MAX (1u << 30)

static int read_fd(int fd, char **ret, size_t *ret_len)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size > COMMIT_MAX)
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

/* Why a handle's text is being committed. */
enum commit_kind {
	COMMIT_FLUSH,	/* a close(): more descriptors may follow */
	COMMIT_FSYNC,	/* the writer asked for it to stand */
	COMMIT_RELEASE, /* the last reference went */
	COMMIT_TRUNCATE,
};

static void drop_base(struct fh *h)
{
	free(h->base);
	h->base = NULL;
	h->base_len = 0;
	h->has_base = h->base_absent = false;
}

/* The note's path for this handle (it follows renames; under hmu). */
static char *fh_path(struct mount *m, struct fh *h)
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
	int rootfd = vault_rootfd(m->v);
	char *cur = NULL;
	size_t cl = 0;
	int e = file_read(rootfd, path, COMMIT_MAX, &cur, &cl, NULL);
	bool ours = e == 0 && hash_bytes(cur, cl) == h->last_hash;
	free(cur);
	if (ours) {
		int r = h->base_absent ? file_unlink(rootfd, path)
				       : file_write_atomic(rootfd, path,
							   h->base, h->base_len,
							   WRITE_MKDIRS, NULL);
		if (r < 0)
			log_error("%s: cannot put back the text it had before "
				  "this write: %s",
				  path, strerror(-r));
		else
			vault_sync_path(m->v, path, h->source, SYNC_NO_GUARD);
	}
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
	int rootfd = vault_rootfd(m->v);
	int r = p->old_text ? file_write_atomic(rootfd, path, p->old_text,
						p->len, WRITE_MKDIRS, NULL)
			    : -ENODATA;
	if (r < 0 && p->trash) {
		r = file_rename(rootfd, p->trash, path, false, true);
		if (r == 0) { /* it is the note again */
			free(p->trash);
			p->trash = NULL;
		}
	}
	if (r < 0) {
		log_error("%s: cannot put the old text back (%s)%s%s", path,
			  strerror(-r), p->trash ? "; it is kept in " : "",
			  p->trash ? p->trash : "");
		return false;
	}
	vault_sync_path(m->v, path, source, SYNC_NO_GUARD);
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

/*
 * The guard at commit: the shadow's text becomes the note, or is refused
 * (-EPERM) and the note keeps its old text; refused text is kept under
 * .vaultd/rejected/. A note renamed away or deleted moments before (an
 * editor's save) comes back either way. Called with h->mu held.
 */
static int commit(struct mount *m, struct fh *h, enum commit_kind kind)
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
	struct write_opts o = {.source = h->source, .save_rejected = true};
	struct write_outcome out = {0};
	_cleanup_free_ char *msg = NULL;
	vault_write_lock(v);
	/* Renames wait for the writer lock: under it the path is current. */
	free(path);
	path = fh_path(m, h);
	mount_write_begin(path, NULL);
	/* What the note was, kept if this commit is taken (see fh). */
	_cleanup_free_ char *old = NULL;
	size_t ol = 0;
	int old_err = -1;
	if (kind == COMMIT_FLUSH && !h->has_base)
		old_err = h->created ? -ENOENT /* it was not there */
				     : file_read(vault_rootfd(v), path,
						 COMMIT_MAX, &old, &ol, NULL);
	struct pending_delete *p = pending_take(m, path);
	bool keep_pending = false, gone = false;
	r = vault_commit(v, path, text, len, &o, &out, &msg);
	if (r == 0) {
		h->last_hash = hash_bytes(text, len);
		if (kind == COMMIT_FSYNC) {
			drop_base(h);
		} else if (old_err == 0 || old_err == -ENOENT) {
			h->base = TAKE_PTR(old);
			h->base_len = ol;
			h->has_base = true;
			h->base_absent = old_err == -ENOENT || h->created;
		}
		if (out.warning)
			log_warn("%s: accepted with a warning (%s): %s", path,
				 h->source, out.warning);
	} else {
		log_warn("%s: write refused (%s): %s", path, h->source,
			 msg ? msg : strerror(-r));
		if (p) {
			keep_pending = !restore_pending(m, p, path, h->source);
		} else if (h->has_base) {
			gone = h->base_absent;
			revert_to_base(m, h, path);
		} else if (h->created) {
			/* A refused new note does not come into being. */
			gone = true;
			file_unlink(vault_rootfd(v), path);
		}
	}
	vault_write_unlock(v);
	mount_write_end();
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

/* shadow: fd is a shadow copy (its open_ino is the note's, set by the
 * caller). */
static struct fh *new_fh(int fd, struct node *n, int flags, bool shadow)
{
	struct fh *h = xcalloc(1, sizeof(*h));
	h->tag = FH_FILE;
	h->fd = fd;
	h->orig_fd = -1;
	h->spilled_fd = -1;
	h->node = n;
	h->writable = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
	h->append = (flags & O_APPEND) != 0;
	/* Only writers are looked for by inode (renames, still_held()). */
	struct stat st;
	if (h->writable && !shadow)
		h->open_ino = fstat(fd, &st) == 0 ? st.st_ino : 0;
	pthread_mutex_init(&h->mu, NULL);
	return h;
}

/* Handles that can write are listed, for renames (see convert_writers). */
static void register_fh(struct mount *m, struct fh *h)
{
	pthread_mutex_lock(&m->hmu);
	h->hprev = NULL;
	h->hnext = m->fhs;
	if (m->fhs)
		m->fhs->hprev = h;
	m->fhs = h;
	h->listed = true;
	pthread_mutex_unlock(&m->hmu);
}

static void destroy_fh(struct mount *m, struct fh *h)
{
	if (h->shadow && h->path)
		own(m, h->path, -1);
	if (h->shadow) {
		pthread_mutex_lock(&m->tmu);
		if (h->node->writer_fd == h->fd)
			h->node->writer_fd = -1;
		pthread_mutex_unlock(&m->tmu);
	}
	if (h->rfd)
		shared_put(m, h->rfd);
	else
		close(h->fd);
	if (h->orig_fd >= 0)
		close(h->orig_fd);
	if (h->spilled_fd >= 0)
		close(h->spilled_fd);
	free(h->path);
	free(h->source);
	drop_base(h);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

static void free_fh(struct mount *m, struct fh *h)
{
	pthread_mutex_lock(&m->hmu);
	if (h->listed) {
		if (h->hprev)
			h->hprev->hnext = h->hnext;
		else
			m->fhs = h->hnext;
		if (h->hnext)
			h->hnext->hprev = h->hprev;
		h->listed = false;
	}
	/* A rename working on it frees it when done. */
	bool later = h->refs > 0;
	h->released = later;
	pthread_mutex_unlock(&m->hmu);
	if (!later)
		destroy_fh(m, h);
}

static void put_fh(struct mount *m, struct fh *h)
{
	pthread_mutex_lock(&m->hmu);
	bool gone = --h->refs == 0 && h->released;
	pthread_mutex_unlock(&m->hmu);
	if (gone)
		destroy_fh(m, h);
}

static int fh_fd(struct fh *h)
{
	return __atomic_load_n(&h->fd, __ATOMIC_ACQUIRE);
}

static bool fh_shadow(struct fh *h)
{
	return __atomic_load_n(&h->shadow, __ATOMIC_ACQUIRE);
}

/* ---- who holds what
 * -------------------------------------------------------------- */

/*
 * Whether the process closing a descriptor of this open file (a flush)
 * still holds another one: `echo text > note` in a shell opens the note,
 * dup2()s it onto stdout and closes the first descriptor before any text
 * is written. The truncation and the text are one write, judged when the
 * last descriptor goes. Read from /proc/<pid>/fdinfo, which names the
 * mount and inode of each descriptor (no request to the mount).
 */
static bool still_held(struct mount *m, struct fh *h, pid_t pid)
{
	if (pid <= 0 || m->conn.mnt_id <= 0)
		return false;
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return false;
	pthread_mutex_lock(&m->tmu);
	ino_t cur = h->node->ino;
	pthread_mutex_unlock(&m->tmu);
	/* The kernel's inode number for the file is the one it was given at
	 * its first lookup, and stays so after vaultd replaced the file
	 * under it: the descriptor is also known by its path. */
	_cleanup_free_ char *rel = fh_path(m, h);
	_cleanup_free_ char *full =
		rel ? xasprintf("%s/%s", m->mountpoint, rel) : NULL;
	size_t mpl = strlen(m->mountpoint);
	bool held = false;
	struct dirent *e;
	while (!held && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char p[320], link[PATH_MAX];
		snprintf(p, sizeof(p), "/proc/%d/fd/%s", (int)pid, e->d_name);
		ssize_t l = readlink(p, link, sizeof(link) - 1);
		if (l <= (ssize_t)mpl || strncmp(link, m->mountpoint, mpl) ||
		    link[mpl] != '/')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/fdinfo/%s", (int)pid,
			 e->d_name);
		FILE *f = fopen(p, "re");
		if (!f)
			continue;
		char line[128];
		unsigned long flags = 0, ino = 0;
		int mnt = -1;
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "flags:", 6))
				flags = strtoul(line + 6, NULL, 8);
			else if (!strncmp(line, "mnt_id:", 7))
				mnt = atoi(line + 7);
			else if (!strncmp(line, "ino:", 4))
				ino = strtoul(line + 4, NULL, 10);
		}
		fclose(f);
		link[l] = 0;
		held = mnt == m->conn.mnt_id &&
		       (flags & O_ACCMODE) != O_RDONLY &&
		       ((ino_t)ino == h->open_ino || (ino_t)ino == cur ||
			(full && !strcmp(link, full)));
	}
	closedir(d);
	return held;
}

/* The note that shares this file's inode (a hard link made in the vault
 * folder), or NULL. */
static char *note_of_inode(struct mount *m, const struct stat *st)
{
	struct stat rs;
	if (!S_ISREG(st->st_mode) || st->st_nlink < 2 ||
	    fstat(vault_rootfd(m->v), &rs) < 0 || rs.st_dev != st->st_dev)
		return NULL;
	char *found = NULL;
	vault_read_lock(m->v);
	size_t it = 0;
	struct note *n;
	while (!found && index_next(vault_index(m->v), &it, &n))
		if (n->ino == (uint64_t)st->st_ino)
			found = xstrdup(n->path);
	vault_read_unlock(m->v);
	return found;
}

/*
 * Writing a file that is a note under another name would change the note
 * unjudged: EPERM (0 when it is no such file).
 */
static int refuse_note_link(struct mount *m, struct node *n, const char *what)
{
	struct stat st;
	int fd = node_get(n);
	int r = fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
	node_put(n);
	if (r < 0 || !S_ISREG(st.st_mode) || st.st_nlink < 2)
		return 0;
	_cleanup_free_ char *note = note_of_inode(m, &st);
	if (!note)
		return 0;
	_cleanup_free_ char *path = node_path(m, n);
	log_warn("%s: refused: %s a hard link to the note %s (write the note "
		 "itself)",
		 path ? path : "?", what, note);
	return EPERM;
}

/* A guarded note opened for writing: its shadow copy. */
static int open_shadow(struct mount *m, fuse_req_t req, struct node *n,
		       char *path, struct fuse_file_info *fi, bool created,
		       bool claimed)
{
	/* A note just made (empty) or truncated: nothing to copy. */
	int rfd = (fi->flags & O_TRUNC) || created ? -1
						   : open_node(m, n, O_RDONLY);
	bool mem;
	int fd = make_shadow(m, rfd, rfd >= 0, &mem);
	if (rfd >= 0)
		close(rfd);
	if (fd < 0) {
		if (claimed)
			own(m, path, -1);
		free(path);
		return -fd;
	}
	struct fh *h = new_fh(fd, n, fi->flags, true);
	h->shadow = true;
	h->in_memory = mem;
	h->writable = true;
	h->path = path;
	h->source = source_of(req);
	h->created = created;
	/* An O_TRUNC open is a write, even if nothing follows. */
	h->dirty = (fi->flags & O_TRUNC) != 0;
	if (!claimed)
		own(m, path, 1);
	pthread_mutex_lock(&m->tmu);
	n->nlookup++; /* the handle keeps its node */
	n->writer_fd = fd;
	h->open_ino = n->ino;
	pthread_mutex_unlock(&m->tmu);
	register_fh(m, h);
	fi->fh = (uint64_t)(uintptr_t)h;
	/* Uncommitted bytes stay out of the shared page cache. */
	fi->direct_io = 1;
	return 0;
}

/*
 * A file open for writing is being renamed onto a note (written under a
 * temporary name, renamed over the note, then written again through the
 * descriptor kept open): from the rename on, its handles write to shadow
 * copies that the guard judges like any other write to the note. The
 * handles are found and locked (no write in flight) before the rename.
 */
struct writers {
	struct fh **h;
	int *shadow; /* prepared copies */
	bool *mem;   /* each in memory */
	size_t n;
};

static int writers_take(struct mount *m, ino_t ino, struct writers *ret)
{
	struct writers w = {0};
	pthread_mutex_lock(&m->hmu);
	for (struct fh *h = m->fhs; h; h = h->hnext)
		if (!h->shadow && h->writable && h->open_ino == ino)
			w.n++;
	w.h = xcalloc(w.n + 1, sizeof(*w.h));
	w.shadow = xcalloc(w.n + 1, sizeof(*w.shadow));
	w.mem = xcalloc(w.n + 1, sizeof(*w.mem));
	size_t i = 0;
	for (struct fh *h = m->fhs; h && i < w.n; h = h->hnext)
		if (!h->shadow && h->writable && h->open_ino == ino) {
			h->refs++;
			w.h[i++] = h;
		}
	w.n = i;
	pthread_mutex_unlock(&m->hmu);
	int err = 0;
	for (i = 0; i < w.n; i++) {
		pthread_mutex_lock(&w.h[i]->mu);
		w.shadow[i] =
			err ? -1 : make_shadow(m, w.h[i]->fd, true, &w.mem[i]);
		if (w.shadow[i] < 0 && !err)
			err = w.shadow[i];
	}
	*ret = w;
	return err;
}

/* After the rename (ok: it happened): switch the handles, or not. */
static void writers_done(struct mount *m, struct writers *w, bool ok,
			 const char *to, fuse_req_t req)
{
	for (size_t i = 0; i < w->n; i++) {
		struct fh *h = w->h[i];
		if (ok && w->shadow[i] >= 0) {
			if (!h->source)
				h->source = source_of(req);
			pthread_mutex_lock(&m->hmu);
			h->path = xstrdup(to);
			pthread_mutex_unlock(&m->hmu);
			own(m, to, 1);
			pthread_mutex_lock(&m->tmu);
			h->node->nlookup++;
			h->node->writer_fd = w->shadow[i];
			pthread_mutex_unlock(&m->tmu);
			h->orig_fd = h->fd;
			h->in_memory = w->mem[i];
			h->dirty = false;
			__atomic_store_n(&h->fd, w->shadow[i],
					 __ATOMIC_RELEASE);
			__atomic_store_n(&h->shadow, true, __ATOMIC_RELEASE);
			log_info("%s: a descriptor open across the rename now "
				 "writes through the guard",
				 to);
		} else if (w->shadow[i] >= 0) {
			close(w->shadow[i]);
		}
		pthread_mutex_unlock(&h->mu);
		put_fh(m, h);
	}
	free(w->h);
	free(w->shadow);
	free(w->mem);
	memset(w, 0, sizeof(*w));
}

/*
 * Shadow copies follow their note when it or a folder above it is
 * renamed, so a commit never recreates the old name. Writer lock held
 * (commits read the path under it).
 */
static void follow_rename(struct mount *m, const char *from, const char *to)
{
	size_t fl = strlen(from);
	pthread_mutex_lock(&m->hmu);
	for (struct fh *h = m->fhs; h; h = h->hnext) {
		if (!h->shadow || !h->path || strncmp(h->path, from, fl) ||
		    (h->path[fl] && h->path[fl] != '/'))
			continue;
		char *np = xasprintf("%s%s", to, h->path + fl);
		own(m, h->path, -1);
		own(m, np, 1);
		free(h->path);
		h->path = np;
	}
	pthread_mutex_unlock(&m->hmu);
}

/* ---- operations
 * --------------------------------------------------------------------- */

static int entry_of(struct mount *m, int fd, struct fuse_entry_param *e);

static int do_lookup(struct mount *m, fuse_ino_t parent, const char *name,
		     struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->attr_timeout = e->entry_timeout = CACHE_TIMEOUT;
	struct node *p = node_of(m, parent);
	int pfd = node_get(p);
	int fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EMFILE && shed_shared(m))
		fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int err = errno;
	node_put(p);
	if (fd < 0)
		return err;
	return entry_of(m, fd, e);
}

/* The entry for an O_PATH descriptor (taken), its node referenced. */
static int entry_of(struct mount *m, int fd, struct fuse_entry_param *e)
{
	int err;
	if (fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) <
	    0) {
		err = errno;
		close(fd);
		return err;
	}
	pthread_mutex_lock(&m->tmu);
	struct node *n = table_find(m, e->attr.st_ino, e->attr.st_dev);
	if (n) {
		n->nlookup++;
		close(fd);
	} else {
		n = xcalloc(1, sizeof(*n));
		n->fd = fd;
		n->ino = e->attr.st_ino;
		n->dev = e->attr.st_dev;
		n->nlookup = 1;
		n->writer_fd = -1;
		pthread_rwlock_init(&n->fdlock, NULL);
		table_insert(m, n);
	}
	pthread_mutex_unlock(&m->tmu);
	e->ino = ino_of(m, n);
	return 0;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* flock() stays with the kernel: a lock goes with the last close()
	 * at once, as on any file system (passed to vaultd, its release
	 * would wait for the asynchronous RELEASE). Locks are then shared
	 * by the users of the mount only, not with the vault folder. */
	conn->want &= ~FUSE_CAP_FLOCK_LOCKS;
	/* Zero copy for reads and writes where the kernel can. */
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_READ)
		conn->want |= FUSE_CAP_SPLICE_READ;
	/* Writeback caching stays off: a note's bytes must reach its shadow
	 * copy before close() returns, so the guard can answer close(). */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount *m = mnt(req);
	if (announcer(m, req)) {
		_cleanup_free_ char *path = child_path(m, parent, name);
		int how = announced(m, path);
		if (how < 0) {
			fuse_reply_err(req, ENOENT);
			return;
		}
		if (how > 0) {
			struct fuse_entry_param ge;
			memset(&ge, 0, sizeof(ge));
			/* Never cached: the ghost is nobody's file. */
			int fd = beneath_open(vault_rootfd(m->v), GHOST,
					      O_PATH | O_NOFOLLOW, 0);
			int err = fd < 0 ? -fd : entry_of(m, fd, &ge);
			ge.attr_timeout = ge.entry_timeout = 0;
			if (err)
				fuse_reply_err(req, err);
			else
				fuse_reply_entry(req, &ge);
			return;
		}
	}
	struct fuse_entry_param e;
	int err = do_lookup(m, parent, name, &e);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	unref_node(mnt(req), node_of(mnt(req), ino), nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		unref_node(mnt(req), node_of(mnt(req), forgets[i].ino),
			   forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct node *n = node_of(mnt(req), ino);
	struct stat st;
	int fd = node_get(n);
	int r = fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
	int err = errno;
	node_put(n);
	if (r < 0) {
		fuse_reply_err(req, err);
		return;
	}
	/* A note being written: its size is the shadow's. */
	struct fh *h = file_fh(fi);
	struct mount *m = mnt(req);
	pthread_mutex_lock(&m->tmu);
	int wfd = h && fh_shadow(h) ? fh_fd(h) : n->writer_fd;
	struct stat sh;
	bool have = wfd >= 0 && fstat(wfd, &sh) == 0;
	pthread_mutex_unlock(&m->tmu);
	if (have) {
		st.st_size = sh.st_size;
		st.st_blocks = sh.st_blocks;
		st.st_mtim = sh.st_mtim;
	}
	fuse_reply_attr(req, &st, CACHE_TIMEOUT);
}

/* Truncate a note by path (no open handle): a guarded write. */
static int truncate_note(struct mount *m, fuse_req_t req, struct node *n,
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

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int valid, struct fuse_file_info *fi)
{
	struct mount *m = mnt(req);
	struct node *n = node_of(m, ino);
	if (announcer(m, req)) {
		/* Times set to what they are: the note changed already. */
		struct stat st;
		int afd = node_get(n);
		int aerr = fstatat(afd, "", &st,
				   AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0
				   ? errno
				   : 0;
		node_put(n);
		if (aerr)
			fuse_reply_err(req, aerr);
		else
			fuse_reply_attr(req, &st, CACHE_TIMEOUT);
		return;
	}
	struct fh *h = file_fh(fi);
	char p[64];
	int err = 0;
	int fd = node_get(n);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	if (valid & FUSE_SET_ATTR_MODE) {
		if (chmod(p, attr->st_mode & 07777) < 0)
			err = errno;
	}
	if (!err && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
		uid_t uid =
			(valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid_t gid =
			(valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
		if (fchownat(fd, "", uid, gid,
			     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			err = errno;
	}
	node_put(n);
	if (!err && (valid & FUSE_SET_ATTR_SIZE)) {
		if (h) {
			pthread_mutex_lock(&h->mu);
			if (ftruncate(h->fd, attr->st_size) < 0)
				err = errno;
			else if (h->shadow)
				h->dirty = true;
			if (err && h->shadow)
				h->write_err = err;
			pthread_mutex_unlock(&h->mu);
		} else {
			_cleanup_free_ char *path = node_path(m, n);
			if (guarded(m, path))
				err = truncate_note(m, req, n, path,
						    attr->st_size);
			else if (!(err = refuse_note_link(m, n,
							  "truncated "
							  "through"))) {
				fd = node_get(n);
				snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
				if (truncate(p, attr->st_size) < 0)
					err = errno;
				node_put(n);
			}
		}
	}
	if (!err && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec tv[2] = {{.tv_nsec = UTIME_OMIT},
					 {.tv_nsec = UTIME_OMIT}};
		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		fd = node_get(n);
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		if (h && !fh_shadow(h)) {
			if (futimens(fh_fd(h), tv) < 0)
				err = errno;
		} else if (utimensat(AT_FDCWD, p, tv, 0) < 0) {
			err = errno;
		}
		node_put(n);
	}
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	op_getattr(req, ino, fi);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct node *n = node_of(mnt(req), ino);
	char buf[PATH_MAX + 1];
	int fd = node_get(n);
	ssize_t r = readlinkat(fd, "", buf, sizeof(buf));
	int err = errno;
	node_put(n);
	if (r < 0) {
		fuse_reply_err(req, err);
		return;
	}
	if ((size_t)r == sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	buf[r] = 0;
	fuse_reply_readlink(req, buf);
}

/* After a pass-through change, keep the index in step. */
static void sync_path(struct mount *m, fuse_req_t req, const char *path)
{
	if (!path)
		return;
	_cleanup_free_ char *src = source_of(req);
	mount_write_begin(path, NULL);
	vault_write_lock(m->v);
	vault_sync_path(m->v, path, src, 0);
	vault_write_unlock(m->v);
	mount_write_end();
}

/* After creating name in parent (err: how that went): look it up and
 * reply with its entry; a new file is synced with the index first (it may
 * be a note). */
static void reply_created(fuse_req_t req, struct mount *m, int err,
			  fuse_ino_t parent, const char *name, bool file)
{
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	struct fuse_entry_param e;
	err = do_lookup(m, parent, name, &e);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	if (file) {
		_cleanup_free_ char *path = child_path(m, parent, name);
		sync_path(m, req, path);
	}
	fuse_reply_entry(req, &e);
}

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev, const char *link)
{
	struct mount *m = mnt(req);
	if (announcer(m, req)) {
		/* A note or folder vaultd made: it is there already. */
		struct fuse_entry_param e;
		int err = do_lookup(m, parent, name, &e);
		if (err)
			fuse_reply_err(req, err);
		else
			fuse_reply_entry(req, &e);
		return;
	}
	struct node *p = node_of(m, parent);
	int pfd = node_get(p);
	int r;
	if (S_ISDIR(mode))
		r = mkdirat(pfd, name, mode & 07777);
	else if (S_ISLNK(mode))
		r = symlinkat(link, pfd, name);
	else if (S_ISREG(mode)) {
		r = openat(pfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
			   mode & 07777);
		if (r >= 0)
			close(r);
	} else if (S_ISFIFO(mode))
		r = mkfifoat(pfd, name, mode & 07777);
	else
		r = mknodat(pfd, name, mode, rdev);
	int err = errno;
	/* The kernel applied the caller's umask to mode already; vaultd's
	 * own umask must not narrow it further. */
	if (r >= 0 && !S_ISLNK(mode) &&
	    fchmodat(pfd, name, mode & 07777, AT_SYMLINK_NOFOLLOW) < 0 &&
	    errno != EOPNOTSUPP) {
		err = errno;
		r = -1;
	}
	node_put(p);
	reply_created(req, m, r < 0 ? err : 0, parent, name, S_ISREG(mode));
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	make_node(req, parent, name, mode, rdev, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | mode, 0, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	make_node(req, parent, name, S_IFLNK, 0, link);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct mount *m = mnt(req);
	struct node *n = node_of(m, ino), *p = node_of(m, newparent);
	/* A second name for a note would be a way around the guard (and
	 * the index): hard links to notes are refused. */
	{
		_cleanup_free_ char *from = node_path(m, n);
		_cleanup_free_ char *to = child_path(m, newparent, newname);
		int err = guarded(m, from) || guarded(m, to)
				  ? EPERM
				  : refuse_note_link(m, n, "linked to");
		if (err) {
			if (guarded(m, from) || guarded(m, to))
				log_warn("hard link %s -> %s refused: notes "
					 "have one name",
					 from ? from : "?", to ? to : "?");
			fuse_reply_err(req, err);
			return;
		}
	}
	char src[64];
	int fd = node_get(n);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	int pfd = node_get(p);
	int r = linkat(AT_FDCWD, src, pfd, newname, AT_SYMLINK_FOLLOW);
	int err = errno;
	node_put(p);
	node_put(n);
	reply_created(req, m, r < 0 ? err : 0, newparent, newname, true);
}

/* Unlink of a note: it goes to .trash/, and is deleted for good (links
 * marked per policy) unless it comes back within the grace period. */
static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount *m = mnt(req);
	if (announcer(m, req)) {
		fuse_reply_err(req, 0); /* gone already */
		return;
	}
	_cleanup_free_ char *path = child_path(m, parent, name);
	if (guarded(m, path)) {
		int rootfd = vault_rootfd(m->v);
		char *text = NULL;
		size_t len = 0;
		struct stat st;
		if (file_stat(rootfd, path, &st) == 0 && S_ISREG(st.st_mode)) {
			/* Its text puts it back if a save that follows is
			 * refused: no text, no delete. */
			int e = file_read(rootfd, path, COMMIT_MAX, &text, &len,
					  NULL);
			if (e < 0) {
				log_warn("%s: delete refused: cannot read it "
					 "(%s)",
					 path, strerror(-e));
				fuse_reply_err(req, e == -EFBIG ? EFBIG : EIO);
				return;
			}
		}
		_cleanup_free_ char *trash = NULL, *why = NULL;
		if (vault_trash_path(m->v, path, &trash, &why) < 0)
			log_warn("%s: delete refused: %s", path, why);
		own(m, path, 1);
		if (trash)
			vault_keep_original(m->v, path);
		int r = trash ? file_rename(rootfd, path, trash, true, true)
			      : -EPERM;
		if (r < 0) {
			own(m, path, -1);
			free(text);
			fuse_reply_err(req, -r);
			return;
		}
		_cleanup_free_ char *src = source_of(req);
		pending_add(m, path, text, len, trash, src);
		fuse_reply_err(req, 0);
		return;
	}
	struct node *p = node_of(m, parent);
	int pfd = node_get(p);
	int r = unlinkat(pfd, name, 0);
	int err = errno;
	node_put(p);
	if (r == 0)
		sync_path(m, req, path);
	fuse_reply_err(req, r < 0 ? err : 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (announcer(mnt(req), req)) {
		fuse_reply_err(req, 0); /* gone already */
		return;
	}
	struct node *p = node_of(mnt(req), parent);
	int pfd = node_get(p);
	int r = unlinkat(pfd, name, AT_REMOVEDIR);
	int err = errno;
	node_put(p);
	fuse_reply_err(req, r < 0 ? err : 0);
}

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
	mount_write_begin(from, to);
	for (size_t i = 0; i < gone.n; i++) {
		const char *old = gone.v[i];
		_cleanup_free_ char *neu = xasprintf("%s%s", to, old + fl);
		vault_sync_path(m->v, old, src, SYNC_NO_GUARD);
		vault_sync_path(m->v, neu, src, SYNC_NO_GUARD);
		free(gone.v[i]);
	}
	mount_write_end();
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
			r = file_read(rootfd, path, COMMIT_MAX, &text, &len,
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

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct mount *m = mnt(req);
	if (announcer(m, req)) {
		fuse_reply_err(req, 0); /* moved already */
		return;
	}
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	_cleanup_free_ char *from = child_path(m, parent, name);
	_cleanup_free_ char *to = child_path(m, newparent, newname);
	int rootfd = vault_rootfd(m->v);
	bool gfrom = guarded(m, from) && is_regular(m, from);
	bool gto = guarded(m, to);
	/* Only a note the index knows can be renamed or go away. */
	if (gfrom) {
		vault_read_lock(m->v);
		gfrom = index_by_path(vault_index(m->v), from) != NULL;
		vault_read_unlock(m->v);
	}
	bool to_exists = is_regular(m, to);
	_cleanup_free_ char *src = source_of(req);
	int r = 0;

	if (gfrom && gto && !to_exists && !(flags & RENAME_EXCHANGE)) {
		/* A note renamed or moved: every link to it follows. */
		vault_write_lock(m->v);
		struct note *n = index_by_path(vault_index(m->v), from);
		if (n) {
			char *msg = NULL;
			uint64_t ino = n->ino;
			mount_write_begin(from, to);
			r = vault_rename(m->v, n, to, src, false, NULL, &msg);
			mount_write_end();
			struct ptrvec replaced = {0};
			if (r == 0) {
				follow_rename(m, from, to);
				follow_rewritten(m, ino, to, &replaced);
			}
			if (r < 0)
				log_warn("rename %s -> %s refused (%s): %s",
					 from, to, src,
					 msg ? msg : strerror(-r));
			free(msg);
			vault_write_unlock(m->v);
			inval_now(m, &replaced);
			fuse_reply_err(req, r < 0 ? -r : 0);
			return;
		}
		vault_write_unlock(m->v);
	}
	if (gto && !gfrom && is_regular(m, from)) {
		/* A file saved under another name, then renamed over the
		 * note (VS Code, vim backupcopy=no): the guard judges its
		 * text before it becomes the note. */
		/* Descriptors still open on it write through the guard from
		 * now on; none writes while the text is judged. */
		struct stat fst;
		struct writers w = {0};
		r = file_stat(rootfd, from, &fst);
		if (r == 0)
			r = writers_take(m, fst.st_ino, &w);
		char *text = NULL;
		size_t len = 0;
		if (r == 0)
			r = file_read(rootfd, from, COMMIT_MAX, &text, &len,
				      NULL);
		if (r < 0) {
			writers_done(m, &w, false, to, req);
			log_warn("rename %s -> %s refused: cannot read it (%s)",
				 from, to, strerror(-r));
			fuse_reply_err(req, r == -ENOENT ? ENOENT : EIO);
			return;
		}
		struct write_opts o = {.source = src, .save_rejected = true};
		_cleanup_free_ char *msg = NULL;
		vault_write_lock(m->v);
		r = vault_guard(m->v, to, text, len, &o, NULL, &msg);
		free(text);
		if (r < 0) {
			vault_write_unlock(m->v);
			writers_done(m, &w, false, to, req);
			log_warn("%s: write refused (%s): %s", to, src,
				 msg ? msg : strerror(-r));
			fuse_reply_err(req, EPERM);
			return;
		}
		vault_keep_original(m->v, to);
		struct node *p = node_of(m, parent),
			    *np = node_of(m, newparent);
		int pfd = node_get(p), npfd = node_get(np);
		r = renameat2(pfd, name, npfd, newname, flags) < 0 ? -errno : 0;
		node_put(np);
		node_put(p);
		writers_done(m, &w, r == 0 && !(flags & RENAME_EXCHANGE), to,
			     req);
		if (r == 0) {
			struct pending_delete *pd = pending_take(m, to);
			mount_write_begin(from, to);
			vault_sync_path(m->v, to, src, SYNC_NO_GUARD);
			vault_sync_path(m->v, from, src, SYNC_NO_GUARD);
			mount_write_end();
			if (pd)
				pending_done(m, pd);
		}
		vault_write_unlock(m->v);
		fuse_reply_err(req, -r);
		return;
	}
	if (gfrom && gto && (to_exists || (flags & RENAME_EXCHANGE))) {
		/* Note over note, or two notes swapped: both texts are
		 * judged under their new names. */
		char *a = NULL, *b = NULL;
		size_t al = 0, bl = 0;
		/* A text that cannot be read is not judged: no rename. */
		r = file_read(rootfd, from, COMMIT_MAX, &a, &al, NULL);
		if (!r && (flags & RENAME_EXCHANGE))
			r = file_read(rootfd, to, COMMIT_MAX, &b, &bl, NULL);
		if (r < 0) {
			free(a);
			log_warn("rename %s -> %s refused: cannot read it (%s)",
				 from, to, strerror(-r));
			fuse_reply_err(req, EIO);
			return;
		}
		struct write_opts o = {.source = src, .save_rejected = true};
		_cleanup_free_ char *msg = NULL;
		vault_write_lock(m->v);
		r = vault_guard(m->v, to, a, al, &o, NULL, &msg);
		if (!r && b)
			r = vault_guard(m->v, from, b, bl, &o, NULL, &msg);
		free(a);
		free(b);
		if (!r) {
			vault_keep_original(m->v, from);
			vault_keep_original(m->v, to);
			struct node *p = node_of(m, parent),
				    *np = node_of(m, newparent);
			int pfd = node_get(p), npfd = node_get(np);
			r = renameat2(pfd, name, npfd, newname, flags) < 0
				    ? -errno
				    : 0;
			node_put(np);
			node_put(p);
			if (!r) {
				mount_write_begin(from, to);
				vault_sync_path(m->v, from, src, SYNC_NO_GUARD);
				vault_sync_path(m->v, to, src, SYNC_NO_GUARD);
				mount_write_end();
			}
		}
		vault_write_unlock(m->v);
		fuse_reply_err(req, -r);
		return;
	}
	/* Anything else passes through. A note moved to a name that is
	 * not a note (x.md -> x.md~, or into .Trash-<uid>/ by gio trash) is
	 * gone: deleted after the grace period unless it comes back. */
	char *text = NULL;
	size_t len = 0;
	if (gfrom && !(flags & RENAME_EXCHANGE)) {
		/* Its text puts it back if the save that follows is refused:
		 * no text, no rename. */
		r = file_read(rootfd, from, COMMIT_MAX, &text, &len, NULL);
		if (r < 0) {
			log_warn("rename %s -> %s refused: cannot read it (%s)",
				 from, to ? to : "?", strerror(-r));
			fuse_reply_err(req, EIO);
			return;
		}
	}
	struct stat st;
	bool dir = from && file_stat(rootfd, from, &st) == 0 &&
		   S_ISDIR(st.st_mode);
	if (dir && to && strcmp(from, to) && !(flags & RENAME_EXCHANGE) &&
	    !folder_unjudged(m, from) && !folder_unjudged(m, to)) {
		/* A folder renamed or moved (Obsidian's folder rename, mv):
		 * every link that would lead elsewhere follows. */
		char *msg = NULL;
		vault_write_lock(m->v);
		/* Its notes' files, to follow those rewritten. */
		struct ptrvec paths = {0};
		index_paths_under(vault_index(m->v), from, &paths);
		uint64_t *inos = xcalloc(paths.n + 1, sizeof(*inos));
		for (size_t i = 0; i < paths.n; i++) {
			struct note *n =
				index_by_path(vault_index(m->v), paths.v[i]);
			inos[i] = n ? n->ino : 0;
		}
		mount_write_begin(from, to);
		r = vault_rename_folder(m->v, from, to, src,
					!(flags & RENAME_NOREPLACE), false,
					NULL, &msg);
		mount_write_end();
		size_t fl = strlen(from);
		struct ptrvec replaced = {0};
		for (size_t i = 0; i < paths.n; i++) {
			_cleanup_free_ char *np =
				xasprintf("%s%s", to, (char *)paths.v[i] + fl);
			if (r == 0 && inos[i])
				follow_rewritten(m, inos[i], np, &replaced);
			free(paths.v[i]);
		}
		pv_free(&paths);
		free(inos);
		if (r == 0)
			follow_rename(m, from, to);
		else
			log_warn("rename %s -> %s refused (%s): %s", from, to,
				 src, msg ? msg : strerror(-r));
		vault_write_unlock(m->v);
		inval_now(m, &replaced);
		free(msg);
		fuse_reply_err(req, -r);
		return;
	}
	/* A folder brought in from where the guard does not look: its notes
	 * are judged first, and stay out if one is refused. */
	bool judged = dir && from && to && !(flags & RENAME_EXCHANGE) &&
		      folder_unjudged(m, from) && !folder_unjudged(m, to);
	if (judged) {
		vault_write_lock(m->v);
		r = judge_tree(m, from, to, src);
		if (r < 0) {
			vault_write_unlock(m->v);
			free(text);
			fuse_reply_err(req, -r);
			return;
		}
	}
	bool away = gfrom && !(flags & RENAME_EXCHANGE);
	if (away)
		own(m, from, 1);
	if (gfrom)
		vault_keep_original(m->v, from);
	if (to && guarded(m, to))
		vault_keep_original(m->v, to);
	struct node *p = node_of(m, parent), *np = node_of(m, newparent);
	int pfd = node_get(p), npfd = node_get(np);
	r = renameat2(pfd, name, npfd, newname, flags) < 0 ? -errno : 0;
	node_put(np);
	node_put(p);
	if (judged)
		vault_write_unlock(m->v);
	if (r < 0) {
		if (away)
			own(m, from, -1);
		free(text);
		fuse_reply_err(req, -r);
		return;
	}
	if (away)
		pending_add(m, from, text, len, NULL, src);
	else
		free(text);
	if (dir && from && to)
		sync_tree(m, req, from, to);
	if (!gfrom)
		sync_path(m, req, from);
	if (to && !guarded(m, to))
		sync_path(m, req, to);
	fuse_reply_err(req, 0);
}

/*
 * The node's shared read-only descriptor, referenced; NULL when this open
 * needs its own (not a regular file; errno set when the file cannot be
 * opened at all). No other open flag changes what a read at an offset
 * returns (O_DIRECT is never passed on, see PASS_FLAGS).
 */
static struct shared_fd *shared_get(struct mount *m, struct node *n, int flags)
{
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
		return NULL;
	pthread_mutex_lock(&m->tmu);
	struct shared_fd *s = n->rfd;
	if (s)
		s->refs++;
	bool room = m->nshared < m->max_shared;
	pthread_mutex_unlock(&m->tmu);
	if (s || !room)
		return s;
	/* The descriptor is opened from the node's fd under its fdlock:
	 * a swap (the note replaced) waits, and drops it after. */
	char p[64];
	int nfd = node_get(n);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", nfd);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == EMFILE && shed_shared(m))
		fd = open(p, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		node_put(n);
		close(fd);
		return NULL; /* opened again, with its own flags */
	}
	if (fd < 0) {
		int e = errno;
		node_put(n);
		errno = e;
		return NULL;
	}
	pthread_mutex_lock(&m->tmu);
	if (n->rfd || m->nshared >= m->max_shared) {
		/* Another reader was quicker (or took the last room). */
		s = n->rfd;
		if (s)
			s->refs++;
		pthread_mutex_unlock(&m->tmu);
		node_put(n);
		if (s) {
			close(fd);
			return s;
		}
		/* This open's own descriptor, then. */
		struct shared_fd *own_fd = xmalloc(sizeof(*own_fd));
		*own_fd = (struct shared_fd){fd, 1};
		pthread_mutex_lock(&m->tmu);
		m->nshared++;
		pthread_mutex_unlock(&m->tmu);
		return own_fd;
	}
	s = xmalloc(sizeof(*s));
	s->fd = fd;
	s->refs = 2; /* the node's and this handle's */
	n->rfd = s;
	m->nshared++;
	pthread_mutex_unlock(&m->tmu);
	node_put(n);
	return s;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mount *m = mnt(req);
	struct node *n = node_of(m, ino);
	/* O_TRUNC changes a note even when opened read-only. */
	bool writing = fi->flags & (O_WRONLY | O_RDWR | O_TRUNC);
	if (writing) {
		char *path = node_path(m, n);
		if (guarded(m, path)) {
			int err =
				open_shadow(m, req, n, path, fi, false, false);
			if (err)
				fuse_reply_err(req, err);
			else
				fuse_reply_open(req, fi);
			return;
		}
		free(path);
		int err = refuse_note_link(m, n, "opened for writing through");
		if (err) {
			fuse_reply_err(req, err);
			return;
		}
	}
	struct shared_fd *rfd = writing ? NULL : shared_get(m, n, fi->flags);
	int fd = rfd ? rfd->fd : open_node(m, n, fi->flags);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	struct fh *h = new_fh(fd, n, fi->flags, false);
	h->rfd = rfd;
	fi->fh = (uint64_t)(uintptr_t)h;
	if (h->writable)
		register_fh(m, h);
	fi->keep_cache = 1;
	/* Closing a file opened for reading has nothing to report. */
	if ((fi->flags & O_ACCMODE) == O_RDONLY)
		fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct mount *m = mnt(req);
	char *path = child_path(m, parent, name);
	bool note = guarded(m, path);
	struct node *p = node_of(m, parent);
	int pfd = node_get(p);
	int flags = PASS_FLAGS(fi->flags | O_CREAT);
	int fd;
	bool created = false;
	if (note) {
		/* The name exists at once (empty); the text becomes the note
		 * at commit, if the guard agrees. Claimed first: the watcher
		 * must not index the empty placeholder. */
		own(m, path, 1);
		/* Read-only: the watcher hears of no write to it. */
		fd = openat(pfd, name, O_CREAT | O_EXCL | O_RDONLY | O_CLOEXEC,
			    mode);
		if (fd >= 0)
			created = true;
		else if (errno == EEXIST && !(fi->flags & O_EXCL))
			fd = openat(pfd, name, O_RDWR | O_CLOEXEC);
	} else {
		fd = openat(pfd, name, flags | O_EXCL | O_CLOEXEC, mode);
		if (fd >= 0) {
			created = true;
		} else if (errno == EEXIST && !(fi->flags & O_EXCL)) {
			/* Not through a hard link to a note (O_TRUNC would
			 * change it before any check). */
			struct stat st;
			_cleanup_free_ char *link =
				fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW)
					? NULL
					: note_of_inode(m, &st);
			if (link) {
				log_warn("%s: refused: opened for writing "
					 "through a hard link to the note %s",
					 path ? path : name, link);
				errno = EPERM;
			} else {
				fd = openat(pfd, name, flags | O_CLOEXEC, mode);
			}
		}
	}
	int err = errno;
	/* The kernel applied the caller's umask to mode already; vaultd's
	 * own umask must not narrow it further. */
	if (created && fchmod(fd, mode & 07777) < 0)
		err = errno;
	node_put(p);
	if (fd < 0) {
		if (note)
			own(m, path, -1);
		free(path);
		fuse_reply_err(req, err);
		return;
	}
	struct fuse_entry_param e;
	err = do_lookup(m, parent, name, &e);
	struct node *n = err ? NULL : node_of(m, e.ino);
	if (err) {
		if (note)
			own(m, path, -1);
		if (n)
			unref_node(m, n, 1);
		close(fd);
		free(path);
		fuse_reply_err(req, err);
		return;
	}
	if (note) {
		close(fd);
		err = open_shadow(m, req, n, path, fi, created, true);
		if (err) {
			unref_node(m, n, 1);
			fuse_reply_err(req, err);
			return;
		}
	} else {
		struct fh *h = new_fh(fd, n, fi->flags, false);
		fi->fh = (uint64_t)(uintptr_t)h;
		if (h->writable)
			register_fh(m, h);
		sync_path(m, req, path);
		free(path);
	}
	fuse_reply_create(req, &e, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = fh_fd(fh_of(fi));
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in,
			 off_t off, struct fuse_file_info *fi)
{
	struct fh *h = fh_of(fi);
	pthread_mutex_lock(&h->mu);
	/* The kernel places an O_APPEND write at the size it knows, which
	 * lags when the note was just replaced (a refused write put back,
	 * the invalidation still on its way): the shadow's end is where the
	 * text goes. */
	struct stat st;
	if (h->shadow && h->append && fstat(h->fd, &st) == 0)
		off = st.st_size;
	shadow_grow(mnt(req), h, off + (off_t)fuse_buf_size(in));
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = h->fd;
	out.buf[0].pos = off;
	ssize_t r = fuse_buf_copy(&out, in, 0);
	if (r >= 0 && h->shadow)
		h->dirty = true;
	else if (h->shadow)
		h->write_err = (int)-r;
	pthread_mutex_unlock(&h->mu);
	if (r < 0)
		fuse_reply_err(req, (int)-r);
	else
		fuse_reply_write(req, (size_t)r);
}

/* The commit point of a note: close() gets EPERM when the guard refuses. */
static int commit_if_needed(struct mount *m, struct fh *h,
			    enum commit_kind kind)
{
	pthread_mutex_lock(&h->mu);
	int r = (h->shadow && (h->dirty || h->created)) ? commit(m, h, kind)
							: 0;
	if (kind == COMMIT_RELEASE)
		drop_base(h);
	pthread_mutex_unlock(&h->mu);
	return r;
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mount *m = mnt(req);
	struct fh *h = fh_of(fi);
	if (fh_shadow(h)) {
		/* Another descriptor of the open file is still there: the
		 * text is not complete yet. */
		const struct fuse_ctx *ctx = fuse_req_ctx(req);
		int r = still_held(m, h, ctx ? ctx->pid : 0)
				? 0
				: commit_if_needed(m, h, COMMIT_FLUSH);
		fuse_reply_err(req, -r);
		return;
	}
	int r = close(dup(fh_fd(h)));
	fuse_reply_err(req, r < 0 ? errno : 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct mount *m = mnt(req);
	struct fh *h = fh_of(fi);
	/* Writes after the last flush (or none came): the guard still
	 * judges them; a refusal is logged and recorded. */
	commit_if_needed(m, h, COMMIT_RELEASE);
	struct node *n = fh_shadow(h) ? h->node : NULL;
	free_fh(m, h);
	if (n)
		unref_node(m, n, 1);
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct fh *h = fh_of(fi);
	if (fh_shadow(h)) {
		fuse_reply_err(req,
			       -commit_if_needed(mnt(req), h, COMMIT_FSYNC));
		return;
	}
	int fd = fh_fd(h);
	int r = datasync ? fdatasync(fd) : fsync(fd);
	fuse_reply_err(req, r < 0 ? errno : 0);
}

struct dirp {
	uint32_t tag; /* FH_DIR */
	DIR *dp;
	struct dirent *entry;
	off_t offset;
};

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct node *n = node_of(mnt(req), ino);
	int nfd = node_get(n);
	int fd = openat(nfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err = errno;
	node_put(n);
	if (fd < 0) {
		fuse_reply_err(req, err);
		return;
	}
	struct dirp *d = xcalloc(1, sizeof(*d));
	d->tag = FH_DIR;
	d->dp = fdopendir(fd);
	if (!d->dp) {
		err = errno;
		close(fd);
		free(d);
		fuse_reply_err(req, err);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	fuse_reply_open(req, fi);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t offset, struct fuse_file_info *fi, bool plus)
{
	struct mount *m = mnt(req);
	struct dirp *d = (struct dirp *)(uintptr_t)fi->fh;
	char *buf = xcalloc(1, size);
	char *p = buf;
	size_t rem = size;
	int err = 0;
	if (offset != d->offset) {
		seekdir(d->dp, offset);
		d->entry = NULL;
		d->offset = offset;
	}
	for (;;) {
		if (!d->entry) {
			errno = 0;
			d->entry = readdir(d->dp);
			if (!d->entry) {
				err = errno;
				break;
			}
		}
		off_t next = d->entry->d_off;
		const char *name = d->entry->d_name;
		size_t used;
		fuse_ino_t entry_ino = 0;
		if (plus) {
			struct fuse_entry_param e = {0};
			if (!strcmp(name, ".") || !strcmp(name, "..")) {
				e.attr.st_ino = d->entry->d_ino;
				e.attr.st_mode = (mode_t)d->entry->d_type << 12;
			} else {
				err = do_lookup(m, ino, name, &e);
				if (err)
					break;
				entry_ino = e.ino;
			}
			used = fuse_add_direntry_plus(req, p, rem, name, &e,
						      next);
		} else {
			struct stat st = {.st_ino = d->entry->d_ino,
					  .st_mode = (mode_t)d->entry->d_type
						     << 12};
			used = fuse_add_direntry(req, p, rem, name, &st, next);
		}
		if (used > rem) {
			/* No room: undo the lookup, keep the entry. */
			if (entry_ino)
				unref_node(m, node_of(m, entry_ino), 1);
			break;
		}
		p += used;
		rem -= used;
		d->entry = NULL;
		d->offset = next;
	}
	/* Entries already counted must reach the kernel even after an
	 * error, or their lookup counts would be wrong. */
	if (err && rem == size)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, size - rem);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t offset, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, offset, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t offset, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, offset, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct dirp *d = (struct dirp *)(uintptr_t)fi->fh;
	closedir(d->dp);
	free(d);
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	struct dirp *d = (struct dirp *)(uintptr_t)fi->fh;
	int fd = dirfd(d->dp);
	int r = datasync ? fdatasync(fd) : fsync(fd);
	fuse_reply_err(req, r < 0 ? errno : 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct node *n = node_of(mnt(req), ino);
	struct statvfs sv;
	int fd = node_get(n);
	int r = fstatvfs(fd, &sv);
	int err = errno;
	node_put(n);
	if (r < 0)
		fuse_reply_err(req, err);
	else
		fuse_reply_statfs(req, &sv);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			 off_t len, struct fuse_file_info *fi)
{
	struct fh *h = fh_of(fi);
	pthread_mutex_lock(&h->mu);
	if (!(mode & FALLOC_FL_KEEP_SIZE))
		shadow_grow(mnt(req), h, off + len);
	int r = fallocate(h->fd, mode, off, len);
	int err = errno;
	if (r == 0 && h->shadow)
		h->dirty = true;
	else if (h->shadow && err != EOPNOTSUPP)
		h->write_err = err;
	pthread_mutex_unlock(&h->mu);
	fuse_reply_err(req, r < 0 ? err : 0);
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	off_t r = lseek(fh_fd(fh_of(fi)), off, whence);
	if (r < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, r);
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			       off_t off_out, struct fuse_file_info *fi_out,
			       size_t len, int flags)
{
	struct fh *out = fh_of(fi_out);
	pthread_mutex_lock(&out->mu);
	shadow_grow(mnt(req), out,
		    len > SHADOW_SPILL ? (off_t)SHADOW_SPILL + 1
				       : off_out + (off_t)len);
	ssize_t r = copy_file_range(fh_fd(fh_of(fi_in)), &off_in, out->fd,
				    &off_out, len, (unsigned)flags);
	int err = errno;
	if (r >= 0 && out->shadow)
		out->dirty = true;
	else if (out->shadow && err != EXDEV && err != EOPNOTSUPP &&
		 err != EINVAL)
		out->write_err = err;
	pthread_mutex_unlock(&out->mu);
	if (r < 0)
		fuse_reply_err(req, err);
	else
		fuse_reply_write(req, (size_t)r);
}

/* The reply to getxattr/listxattr: the size asked for (size 0) or the
 * value; buf is freed. */
static void reply_xattr(fuse_req_t req, ssize_t r, int err, char *buf,
			size_t size)
{
	if (r < 0)
		fuse_reply_err(req, err);
	else if (!size)
		fuse_reply_xattr(req, (size_t)r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
	free(buf);
}

/* Extended attributes go to the file itself (xattr calls refuse O_PATH
 * fds, hence the /proc path, as in passthrough_ll). */
static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	struct node *n = node_of(mnt(req), ino);
	char p[64];
	int fd = node_get(n);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	char *buf = size ? xmalloc(size) : NULL;
	ssize_t r = getxattr(p, name, buf, size);
	int err = errno;
	node_put(n);
	reply_xattr(req, r, err, buf, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct node *n = node_of(mnt(req), ino);
	char p[64];
	int fd = node_get(n);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	char *buf = size ? xmalloc(size) : NULL;
	ssize_t r = listxattr(p, buf, size);
	int err = errno;
	node_put(n);
	reply_xattr(req, r, err, buf, size);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	struct node *n = node_of(mnt(req), ino);
	char p[64];
	int fd = node_get(n);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	int r = setxattr(p, name, value, size, flags);
	int err = errno;
	node_put(n);
	fuse_reply_err(req, r < 0 ? err : 0);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct node *n = node_of(mnt(req), ino);
	char p[64];
	int fd = node_get(n);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	int r = removexattr(p, name);
	int err = errno;
	node_put(n);
	fuse_reply_err(req, r < 0 ? err : 0);
}

static const struct fuse_lowlevel_ops OPS = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.link = op_link,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write_buf = op_write_buf,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
	.copy_file_range = op_copy_file_range,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
};

/* ---- life cycle
 * ----------------------------------------------------------------- */

static void *loop_thread(void *arg)
{
	struct mount *m = arg;
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(cfg, (unsigned)m->max_threads);
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	int r = fuse_session_loop_mt(m->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	if (r)
		log_warn("FUSE loop ended: %s", strerror(r < 0 ? -r : r));
	pthread_mutex_lock(&m->qmu);
	m->loop_done = true;
	pthread_cond_broadcast(&m->qcv);
	pthread_mutex_unlock(&m->qmu);
	return NULL;
}

int mount_start(struct vault *v, const struct mount_config *cfg,
		struct mount **ret, char **ret_msg)
{
	char real[PATH_MAX];
	_cleanup_free_ char *fsname = xasprintf("vaultd:%s", vault_name(v));
	/* Mounts of this vault left by a daemon that died (the caller holds
	 * the vault's lock: nobody serves them). A dead mount point cannot
	 * be resolved itself (ENOTCONN): its folder is. */
	int stale = 0;
	{
		_cleanup_free_ char *dir = xstrdup(cfg->mountpoint);
		_cleanup_free_ char *base = xstrdup(cfg->mountpoint);
		char *rdir = realpath(dirname(dir), NULL);
		if (rdir) {
			_cleanup_free_ char *abs = xasprintf(
				"%s/%s", strcmp(rdir, "/") ? rdir : "",
				basename(base));
			stale = fuseconn_clean_stale(abs, "fuse.vaultd",
						     fsname);
			free(rdir);
		}
	}
	if (stale)
		log_warn("%s: %d stale mount%s from an earlier run unmounted",
			 cfg->mountpoint, stale, stale > 1 ? "s" : "");
	int cr = mount_point_check(vault_root(v), cfg->mountpoint, ret_msg);
	if (cr < 0)
		return cr;
	if (!realpath(cfg->mountpoint, real)) {
		*ret_msg = xasprintf("mount point %s: %s", cfg->mountpoint,
				     strerror(errno));
		return -errno;
	}
	struct mount *m = xcalloc(1, sizeof(*m));
	m->v = v;
	m->mountpoint = xstrdup(real);
	m->root = vault_root(v);
	m->rootlen = strlen(m->root);
	m->grace_ms = cfg->grace_ms ? cfg->grace_ms : 2000;
	m->max_threads = cfg->max_threads > 0 ? cfg->max_threads : 16;
	m->nbuckets = 1024;
	m->buckets = xcalloc(m->nbuckets, sizeof(*m->buckets));
	struct rlimit lim;
	m->max_shared = getrlimit(RLIMIT_NOFILE, &lim) == 0 &&
					lim.rlim_cur != RLIM_INFINITY
				? (size_t)lim.rlim_cur / 2
				: 1u << 17;
	m->owned = hmap_new();
	pthread_mutex_init(&m->tmu, NULL);
	pthread_mutex_init(&m->qmu, NULL);
	pthread_mutex_init(&m->amu, NULL);
	pthread_cond_init(&m->qcv, NULL);
	pthread_mutex_init(&m->pmu, NULL);
	pthread_mutex_init(&m->omu, NULL);
	pthread_mutex_init(&m->hmu, NULL);
	m->root_node.fd = open(m->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	m->root_node.nlookup = 2;
	m->root_node.writer_fd = -1;
	pthread_rwlock_init(&m->root_node.fdlock, NULL);
	file_mkdirs(vault_rootfd(v), ".vaultd/shadow");
	m->shadow_dir = beneath_open(vault_rootfd(v), ".vaultd/shadow",
				     O_RDONLY | O_DIRECTORY, 0);
	if (m->shadow_dir >= 0) {
		int g = openat(m->shadow_dir, "ghost",
			       O_CREAT | O_RDONLY | O_NOFOLLOW | O_CLOEXEC,
			       0600);
		if (g >= 0)
			close(g);
	}

	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	_cleanup_free_ char *opts =
		xasprintf("default_permissions,fsname=%s,subtype=vaultd%s",
			  fsname, cfg->allow_other ? ",allow_other" : "");
	fuse_opt_add_arg(&args, "vaultd");
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, opts);
	m->se = fuse_session_new(&args, &OPS, sizeof(OPS), m);
	fuse_opt_free_args(&args);
	if (!m->se || fuse_session_mount(m->se, m->mountpoint) != 0) {
		*ret_msg = xasprintf("cannot mount the vault at %s (is "
				     "/dev/fuse usable, fuse3 installed?)",
				     m->mountpoint);
		if (m->se)
			fuse_session_destroy(m->se);
		m->se = NULL;
		mount_stop(m);
		return -EIO;
	}
	m->mounted = true;
	/* Its connection, for the reaper and an abort at stop, and its
	 * mount id, to tell descriptors on it (still_held). */
	if (fuseconn_find(m->mountpoint, "fuse.vaultd", fsname, &m->conn) < 0)
		log_warn("%s: not found in /proc/self/mountinfo",
			 m->mountpoint);
	else if (m->conn.dev)
		reaper_arm(m->conn.dev, m->mountpoint);
	vault_add_listener(v, on_vault_event, m);
	vault_set_file_in_use(v, holds_file, m);
	m->listening = true;
	int tr = pthread_create(&m->qthread, NULL, inval_thread, m);
	m->qthread_started = tr == 0;
	if (tr == 0) {
		tr = pthread_create(&m->timer, NULL, timer_thread, m);
		m->timer_started = tr == 0;
	}
	if (tr == 0) {
		tr = pthread_create(&m->loop, NULL, loop_thread, m);
		m->loop_started = tr == 0;
	}
	if (tr != 0) {
		*ret_msg = xasprintf("cannot serve the mount at %s: out of "
				     "threads",
				     m->mountpoint);
		m->loop_done = true;
		mount_stop(m);
		return -EAGAIN;
	}
	*ret = m;
	return 0;
}

struct mount *mount_stop(struct mount *m)
{
	if (!m)
		return NULL;
	if (m->listening) {
		vault_set_file_in_use(m->v, NULL, NULL);
		vault_remove_listener(m->v, on_vault_event, m);
	}
	if (m->se) {
		/* No new requests are read; the mount leaves the namespace
		 * (nothing new is opened); requests in flight finish. What
		 * is still waiting after a moment (a writer holding a file
		 * open, an invalidation waiting for a lock) is ended by an
		 * abort of the connection, so stop never hangs. */
		fuse_session_exit(m->se);
		if (fuseconn_detach(m->mountpoint) < 0)
			log_warn("%s: cannot unmount", m->mountpoint);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 2;
		pthread_mutex_lock(&m->qmu);
		while (!m->loop_done &&
		       pthread_cond_timedwait(&m->qcv, &m->qmu, &until) == 0)
			;
		bool done = m->loop_done;
		pthread_mutex_unlock(&m->qmu);
		if (!done && m->conn.dev && fuseconn_abort(m->conn.dev) < 0)
			log_warn("%s: cannot abort the FUSE connection",
				 m->mountpoint);
		if (m->loop_started)
			pthread_join(m->loop, NULL);
		__atomic_store_n(&m->mounted, false, __ATOMIC_RELEASE);
		__atomic_store_n(&m->stop_timer, true, __ATOMIC_RELEASE);
		if (m->timer_started)
			pthread_join(m->timer, NULL);
		pthread_mutex_lock(&m->qmu);
		m->qstop = true;
		pthread_cond_signal(&m->qcv);
		pthread_mutex_unlock(&m->qmu);
		/* An invalidation can wait for a folder lock that a request
		 * no one will read any more holds (a rename queued in the
		 * kernel): the abort ends that request, and the wait. */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 500 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (m->qthread_started &&
		    pthread_timedjoin_np(m->qthread, NULL, &until) != 0) {
			if (!m->conn.dev || fuseconn_abort(m->conn.dev) < 0)
				log_warn("%s: cannot abort the FUSE connection",
					 m->mountpoint);
			pthread_join(m->qthread, NULL);
		}
		fuse_session_unmount(m->se);
		fuse_session_destroy(m->se);
		reaper_disarm();
	}
	/* Deletes still in their grace period stand. */
	while (m->pending) {
		struct pending_delete *p = m->pending;
		m->pending = p->next;
		vault_write_lock(m->v);
		vault_forget_note(m->v, p->path, p->source);
		vault_write_unlock(m->v);
		pending_free(p);
	}
	for (size_t i = 0; i < m->nbuckets; i++) {
		while (m->buckets[i]) {
			struct node *n = m->buckets[i];
			m->buckets[i] = n->next;
			shared_put(m, n->rfd);
			close(n->fd);
			pthread_rwlock_destroy(&n->fdlock);
			free(n);
		}
	}
	free(m->buckets);
	while (m->qhead) {
		struct inval *q = m->qhead;
		m->qhead = q->next;
		free(q->name);
		free(q->to);
		free(q);
	}
	if (m->root_node.fd >= 0)
		close(m->root_node.fd);
	if (m->shadow_dir >= 0)
		close(m->shadow_dir);
	hmap_free(m->owned);
	free(m->announcing);
	free(m->mountpoint);
	free(m);
	return NULL;
}
