/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The inode table of the mount, as in libfuse's passthrough_ll.c: every
 * file the kernel has looked up is a node holding an O_PATH descriptor of
 * it, found by (inode, device) and counted by the kernel's lookups. A
 * node's path is read back from its descriptor, so renames behind the
 * kernel's back never leave it stale. Files opened only for reading share
 * one read descriptor per node, within a budget that shrinks when the
 * process runs out of descriptors.
 */
#include "mount_int.h"
#include "fileio.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * The table maps a file, by inode and device (as text: the common hash
 * map is keyed by strings), to its node. Normally one node has a file,
 * but a swap (node_swap()) can point a node at a file that another got
 * meanwhile (a lookup of the note's new file before the swap): the nodes
 * of one file are chained through next, the newest first.
 */
#define NODE_KEY_MAX 36

static const char *node_key(char *buf, ino_t ino, dev_t dev)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t v[2] = {(uint64_t)ino, (uint64_t)dev};
	char *p = buf;
	for (int k = 0; k < 2; k++) {
		uint64_t x = v[k];
		do {
			*p++ = hex[x & 15];
			x >>= 4;
		} while (x);
		*p++ = k ? 0 : ':';
	}
	return buf;
}

struct node *table_find(struct mount *m, ino_t ino, dev_t dev)
{
	char k[NODE_KEY_MAX];
	return hmap_get(m->nodes, node_key(k, ino, dev));
}

static void table_insert(struct mount *m, struct node *n)
{
	char k[NODE_KEY_MAX];
	node_key(k, n->ino, n->dev);
	n->next = hmap_get(m->nodes, k);
	hmap_put(m->nodes, k, n);
}

static void table_remove(struct mount *m, struct node *n)
{
	char k[NODE_KEY_MAX];
	node_key(k, n->ino, n->dev);
	struct node *head = hmap_get(m->nodes, k);
	if (head == n) {
		if (n->next)
			hmap_put(m->nodes, k, n->next);
		else
			hmap_del(m->nodes, k);
		return;
	}
	for (struct node *x = head; x; x = x->next) {
		if (x->next == n) {
			x->next = n->next;
			return;
		}
	}
}

void nodes_init(struct mount *m)
{
	m->nodes = hmap_new();
}

/* Every node (the kernel has let go of the mount). */
void nodes_free(struct mount *m)
{
	size_t it = 0;
	const char *key;
	void *val;
	while (hmap_next(m->nodes, &it, &key, &val)) {
		for (struct node *n = val, *next; n; n = next) {
			next = n->next;
			shared_put(m, n->rfd);
			close(n->fd);
			pthread_rwlock_destroy(&n->fdlock);
			free(n);
		}
	}
	m->nodes = hmap_free(m->nodes);
}

/* Whether the kernel knows a node for the file (vault_set_file_in_use():
 * such a file is never recycled, follow_replaced() swaps its node). */
bool holds_file(void *ud, dev_t dev, ino_t ino)
{
	struct mount *m = ud;
	pthread_mutex_lock(&m->tmu);
	bool held = table_find(m, ino, dev) != NULL;
	pthread_mutex_unlock(&m->tmu);
	return held;
}

/* The node's fd, held for reading until node_put(). */
int node_get(struct node *n)
{
	pthread_rwlock_rdlock(&n->fdlock);
	return n->fd;
}

void node_get2(struct node *a, struct node *b, int *ret_a, int *ret_b)
{
	if ((uintptr_t)a <= (uintptr_t)b) {
		*ret_a = node_get(a);
		*ret_b = node_get(b);
	} else {
		*ret_b = node_get(b);
		*ret_a = node_get(a);
	}
}

void node_put(struct node *n)
{
	pthread_rwlock_unlock(&n->fdlock);
}

void shared_put(struct mount *m, struct shared_fd *s)
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
	size_t it = 0;
	const char *key;
	void *val;
	while (hmap_next(m->nodes, &it, &key, &val))
		for (struct node *x = val; x; x = x->next)
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

void unref_node(struct mount *m, struct node *n, uint64_t count)
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
void node_swap(struct mount *m, struct node *n, int newfd)
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

/* The vault-relative path of a node's file ("" for the root), or NULL when
 * the file is gone or outside the vault. */
char *node_path(struct mount *m, struct node *n)
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

char *child_path(struct mount *m, fuse_ino_t parent, const char *name)
{
	_cleanup_free_ char *dir = node_path(m, node_of(m, parent));
	if (!dir)
		return NULL;
	return *dir ? xasprintf("%s/%s", dir, name) : xstrdup(name);
}

/* The node the kernel knows for a vault path, if any (no new lookup). */
struct node *known_node(struct mount *m, const char *path, bool ref)
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

int open_node(struct mount *m, struct node *n, int flags)
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

int do_lookup(struct mount *m, fuse_ino_t parent, const char *name,
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
int entry_of(struct mount *m, int fd, struct fuse_entry_param *e)
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

/*
 * The node's shared read-only descriptor, referenced; NULL when this open
 * needs its own (not a regular file; errno set when the file cannot be
 * opened at all). No other open flag changes what a read at an offset
 * returns (O_DIRECT is never passed on, see PASS_FLAGS).
 */
struct shared_fd *shared_get(struct mount *m, struct node *n, int flags)
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
