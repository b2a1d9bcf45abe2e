/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mount's private interface, shared by the files of fs/ that serve it
 * (fuse_ops.h is its public one). The mount is a passthrough over the
 * vault folder, modelled on libfuse's example/passthrough_ll.c, with a
 * guarding layer for notes. mount_nodes.c keeps the kernel's inodes (one
 * O_PATH descriptor each) and their paths; mount_pass.c holds the
 * operations that only pass through; mount_fh.c the file handles, their
 * shadow copies and the writers a rename meets; mount_guard.c judges a
 * note's text at commit and keeps deleted notes through their grace
 * period; mount_rename.c decides what a rename is; mount_inval.c tells
 * the kernel (and its watchers) of changes made behind it; fuse_ops.c
 * maps the remaining FUSE calls onto these; mount_life.c mounts and
 * unmounts. Every field shared between threads names the lock that
 * guards it; the lock order is given above struct mount.
 */
#pragma once

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)
#endif

#include "fuse_ops.h"
#include "fuseconn.h"
#include "hmap.h"
#include "util.h"
#include "workq.h"

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Attributes and names are cached this long; every change vaultd makes or
 * sees (inotify) is pushed to the kernel, so the cache never goes stale. */
#define CACHE_TIMEOUT 86400.0

/* A descriptor shared by the handles that only read one file. */
struct shared_fd {
	int fd;
	int refs; /* under the table lock */
};

struct node {
	struct node *next; /* another node of the same file (tmu) */
	int fd;		   /* O_PATH, pins the file (not its name); fdlock */
	/* A read-only descriptor of fd's file, opened at the first open for
	 * reading and shared by every such handle: opening a note to read
	 * it costs no system call (the node holds one reference). */
	struct shared_fd *rfd; /* under the table lock */
	ino_t ino;	       /* tmu (and fdlock to write: node_swap()) */
	dev_t dev;	       /* as ino */
	uint64_t nlookup; /* the kernel's references, under the table lock */
	/* The shadow copy being written, if any: stat answers its size,
	 * since the kernel asks without naming the handle. */
	int writer_fd; /* under the table lock; -1: none */
	/* fd may be swapped for the note's new file after a commit; users
	 * of fd hold this for reading. */
	pthread_rwlock_t fdlock;
};

/* The lanes of the mount's work queue (struct mount's q), each with a
 * worker of its own: the kernel cache invalidations and announcements
 * (struct inval), and the ends of deletes' grace periods (mount_guard.c),
 * which wait for the vault's writer lock and so must not hold up the
 * first. */
enum { INVAL_LANE = 0, GRACE_LANE = 1 };

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
	struct workq_job wq; /* first */
	enum inval_kind kind;
	fuse_ino_t ino;
	char *name; /* INVAL_ENTRY: the name; ANNOUNCE_*: the path */
	char *to;
};

struct pending_delete {
	struct pending_delete *next;
	uint64_t id; /* names it to its grace job (see grace_run()) */
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
 *   tmu, omu, hmu, lmu          leaves: nothing is taken inside them
 *   the inval queue's lock     (workq.h) a leaf too
 *
 * Set before the session starts and constant after: v, mountpoint, root,
 * rootlen, se, shadow_dir, grace_ms, max_threads, loop_started.
 */
struct mount {
	struct vault *v;
	char *mountpoint;
	const char *root; /* vault_root(v) */
	size_t rootlen;
	struct fuse_session *se;
	struct node root_node;
	pthread_mutex_t tmu; /* the inode table */
	struct hmap *nodes;  /* tmu: the inode table (mount_nodes.c) */
	/* Shared read descriptors open, and at most how many: half the
	 * descriptor limit at first, halved whenever descriptors run out
	 * (see shed_shared()). */
	size_t nshared, max_shared; /* tmu */
	int shadow_dir;		    /* .vaultd/shadow, for big shadow copies */
	/* The vault's spare files, for new notes' empty files, once asked
	 * for (spare_pool()); pool_asked: asked, and none (both atomic). */
	struct file_pool *pool;
	bool pool_asked;
	/* kernel cache invalidations (struct inval), sent from their own
	 * thread: a work queue of one worker, with its own lock */
	struct workq *q;
	/* The inval thread's requests to the mount (announcements) are
	 * answered from the vault folder as it is, changing nothing; while
	 * it announces a path as new, that path looks absent to it. */
	_Atomic pid_t inval_tid;
	pthread_mutex_t amu;
	char *announcing;    /* amu */
	bool announce_ghost; /* amu: it looks present, as the ghost file */
	/* Whether the FUSE loop's thread was started. */
	bool loop_started;
	/* deletes waiting out the grace period, each with a delayed job on
	 * q's GRACE_LANE that ends it */
	pthread_mutex_t pmu;
	struct pending_delete *pending; /* pmu */
	uint64_t pending_ids;		/* pmu: the last id given */
	unsigned grace_ms;
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
	pthread_mutex_t lmu;
	pthread_cond_t lcv; /* loop_done was set */
	bool loop_done;	    /* lmu */
	/* Nodes whose files a writer replaced (a note written, the links a
	 * rename rewrote): the kernel's caches of them go as that writer
	 * lets go of the vault (settle_take/settle_run), before it answers.
	 * Vault writer lock; settling: how many writers are dropping theirs
	 * (atomic), waited for by mount_stop(). */
	struct ptrvec replaced;
	int settling;
};

/* An empty file that stands in, for the announcer, for a note already
 * gone from the folder, so that it can unlink its name on the mount. */
#define GHOST ".vaultd/shadow/ghost"

/* fi->fh holds either; the tag tells which (getattr and setattr get the
 * handle of a directory too). */
enum { FH_FILE = 0x46494c45, FH_DIR = 0x44495220 };

struct fh {
	uint32_t tag; /* FH_FILE; constant */
	/* The file, or the shadow copy of a note. Writers and the switch to
	 * a shadow (a written file renamed onto a note) hold mu; readers
	 * may race the switch (fh_fd(), atomic), so the old fd stays open
	 * (orig_fd). */
	int fd;
	int orig_fd;	       /* mu */
	struct shared_fd *rfd; /* fd is this one's (a read-only handle);
				* constant */
	/* A shadow in memory (mu), and the memfd it left when it grew past
	 * SHADOW_SPILL (kept open, as orig_fd, for reads in flight; mu). */
	bool in_memory;
	int spilled_fd;
	bool shadow;   /* written under mu, read atomically (fh_shadow()) */
	bool writable; /* constant */
	bool dirty;    /* mu: written since the last commit */
	bool created;  /* mu: a new note: commit even if nothing was written */
	/* mu: the kernel released it (no write comes any more); a rename
	 * onto a note no longer switches it to a shadow copy. */
	bool closing;
	bool append; /* constant: opened with O_APPEND, writes go to the end */
	/* A write to the shadow failed (a full disk): its text is not what
	 * the writer meant, and is never committed (mu). */
	int write_err;
	struct node *node; /* constant */
	ino_t open_ino;	   /* the file's inode when opened; constant */
	char *path;	   /* vault path of the note (shadow only); hmu */
	char *source;	   /* mu (set once, by the open or a rename) */
	/*
	 * The note as it was before this handle's first commit from a
	 * flush() (another process may still hold the open file: a
	 * subshell's `> note`). If a later text of the same handle is
	 * refused, the note goes back to it, not to a half-written state.
	 * base..last_hash: mu.
	 */
	char *base;
	size_t base_len;
	bool has_base, base_absent;
	uint64_t last_hash;	  /* of the text this handle last committed */
	struct fh *hprev, *hnext; /* mount->fhs, writable handles only (hmu) */
	bool listed;		  /* on that list (hmu) */
	int refs;		  /* renames working on it (hmu) */
	bool released;		  /* the kernel let go meanwhile (hmu) */
	pthread_mutex_t mu;
};

/* The kernel places O_APPEND writes itself (the offset arrives with each
 * write), and its request buffers are not aligned for O_DIRECT: neither
 * flag belongs on vaultd's own descriptor. */
#define PASS_FLAGS(f) ((f) & ~(O_NOFOLLOW | O_APPEND | O_DIRECT))

/*
 * Shadow copies live in memory (a memfd) while they are small, which is
 * what a note is: making one touches no file system. One that grows past
 * SHADOW_SPILL moves to an unnamed file in .vaultd/shadow.
 */
#define SHADOW_SPILL (8u << 20)

/* Why a handle's text is being committed. */
enum commit_kind {
	COMMIT_FLUSH,	/* a close(): more descriptors may follow */
	COMMIT_FSYNC,	/* the writer asked for it to stand */
	COMMIT_RELEASE, /* the last reference went */
	COMMIT_TRUNCATE,
};

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

static inline struct mount *mnt(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline struct node *node_of(struct mount *m, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &m->root_node
				   : (struct node *)(uintptr_t)ino;
}

static inline fuse_ino_t ino_of(struct mount *m, struct node *n)
{
	return n == &m->root_node ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static inline struct fh *fh_of(struct fuse_file_info *fi)
{
	return (struct fh *)(uintptr_t)fi->fh;
}

/* The file handle behind fi, or NULL (none, or a directory's). */
static inline struct fh *file_fh(struct fuse_file_info *fi)
{
	struct fh *h = fi ? fh_of(fi) : NULL;
	return h && h->tag == FH_FILE ? h : NULL;
}

static inline int fh_fd(struct fh *h)
{
	return __atomic_load_n(&h->fd, __ATOMIC_ACQUIRE);
}

static inline bool fh_shadow(struct fh *h)
{
	return __atomic_load_n(&h->shadow, __ATOMIC_ACQUIRE);
}

/* ---- mount_nodes.c: the inode table, paths, shared read descriptors */

/* The empty table, and every node freed at the end. */
void nodes_init(struct mount *m);
void nodes_free(struct mount *m);
struct node *table_find(struct mount *m, ino_t ino, dev_t dev);
bool holds_file(void *ud, dev_t dev, ino_t ino);
int node_get(struct node *n);
/* Two nodes' fds held at once (node_put() each), taken in one order for
 * every caller (the nodes' addresses), so no two hold them crosswise. */
void node_get2(struct node *a, struct node *b, int *ret_a, int *ret_b);
void node_put(struct node *n);
void shared_put(struct mount *m, struct shared_fd *s);
void unref_node(struct mount *m, struct node *n, uint64_t count);
void node_swap(struct mount *m, struct node *n, int newfd);
char *node_path(struct mount *m, struct node *n);
char *child_path(struct mount *m, fuse_ino_t parent, const char *name);
struct node *known_node(struct mount *m, const char *path, bool ref);
int open_node(struct mount *m, struct node *n, int flags);
int do_lookup(struct mount *m, fuse_ino_t parent, const char *name,
	      struct fuse_entry_param *e);
int entry_of(struct mount *m, int fd, struct fuse_entry_param *e);
struct shared_fd *shared_get(struct mount *m, struct node *n, int flags);

/* ---- mount_inval.c: kernel cache invalidation, vault events, the
 * mount's own changes */

void mount_origin(struct mount *m, struct vault_origin *o, const char *a,
		  const char *b);
void own(struct mount *m, const char *path, int delta);
void queue_inval(struct mount *m, bool entry, fuse_ino_t ino, const char *name);
bool announcer(struct mount *m, fuse_req_t req);
int announced(struct mount *m, const char *path);
/* The invalidation queue: made with the mount, its thread started with
 * the session, stopped (after what is queued) and freed with it. */
struct workq *inval_queue_new(struct mount *m);
int inval_start(struct mount *m);
void inval_path(struct mount *m, const char *path);
fuse_ino_t follow_replaced(struct mount *m, uint64_t old_ino, const char *path);
void follow_rewritten(struct mount *m, uint64_t old_ino, const char *path);
void *settle_take(void *ud);
void settle_run(void *taken, void *ud);
void on_vault_event(const struct vault_event *ev, void *ud);

/* ---- mount_guard.c: shadow copies, commits, reverts, the grace period */

bool guarded(struct mount *m, const char *path);
char *source_of(fuse_req_t req);
struct pending_delete *pending_take(struct mount *m, const char *path);
void pending_free(struct pending_delete *p);
void pending_add(struct mount *m, const char *path, char *text, size_t len,
		 const char *trash, const char *source);
void pending_done(struct mount *m, struct pending_delete *p);
/* The job of GRACE_LANE: run, and free when done or never run. */
void grace_run(struct mount *m, struct workq_job *j);
void grace_free(struct workq_job *j);
int delete_note(struct mount *m, fuse_req_t req, const char *path);
int make_shadow(struct mount *m, int from_fd, bool copy, bool *ret_mem);
void shadow_grow(struct mount *m, struct fh *h, off_t end);
void drop_base(struct fh *h);
char *fh_path(struct mount *m, struct fh *h);
int commit(struct mount *m, struct fh *h, enum commit_kind kind);
int truncate_note(struct mount *m, fuse_req_t req, struct node *n,
		  const char *path, off_t size);
int commit_if_needed(struct mount *m, struct fh *h, enum commit_kind kind);

/* ---- mount_fh.c: file handles, the writers a rename meets, hard links */

struct fh *new_fh(int fd, struct node *n, int flags, bool shadow);
void register_fh(struct mount *m, struct fh *h);
void free_fh(struct mount *m, struct fh *h);
bool still_held(struct mount *m, struct fh *h, pid_t pid);
char *note_of_inode(struct mount *m, const struct stat *st);
int refuse_note_link(struct mount *m, struct node *n, const char *what);
int open_shadow(struct mount *m, fuse_req_t req, struct node *n, char *path,
		struct fuse_file_info *fi, bool created, bool claimed);
/* The writers of text_fd's file (vaultd's own read-only descriptor of
 * it), each locked with a copy of its text prepared: 0 or -errno. */
int writers_take(struct mount *m, int text_fd, struct writers *ret);
void writers_done(struct mount *m, struct writers *w, bool ok, const char *to,
		  fuse_req_t req);
void follow_rename(struct mount *m, const char *from, const char *to);

/* ---- mount_rename.c: what a rename is, and doing it */

/* A rename through the mount (not the announcer's): 0 or -errno. */
int rename_judged(struct mount *m, fuse_req_t req, fuse_ino_t parent,
		  const char *name, fuse_ino_t newparent, const char *newname,
		  unsigned int flags);

/* ---- mount_pass.c: operations that pass straight through */

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void op_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets);
void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_readlink(fuse_req_t req, fuse_ino_t ino);
void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi);
void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
		struct fuse_file_info *fi);
void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
		    struct fuse_file_info *fi);
void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi);
void op_statfs(fuse_req_t req, fuse_ino_t ino);
void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
	      struct fuse_file_info *fi);
void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags);
void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* ---- fuse_ops.c: the operations table */

extern const struct fuse_lowlevel_ops mount_oper;

void sync_path(struct mount *m, fuse_req_t req, const char *path);
