/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File handles of the mount. A handle of a guarded note writes to a
 * shadow copy (see mount_guard.c); every handle that can write is listed,
 * so that a rename of a file onto a note finds the descriptors still open
 * on it and switches them to shadow copies. Also here: telling whether
 * the process closing a handle still holds the file (a shell's dup2), and
 * refusing writes through hard links to notes.
 */
#include "mount_int.h"
#include "fileio.h"
#include "log.h"
#include "note.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* shadow: fd is a shadow copy (its open_ino is the note's, set by the
 * caller). */
struct fh *new_fh(int fd, struct node *n, int flags, bool shadow)
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
void register_fh(struct mount *m, struct fh *h)
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

void free_fh(struct mount *m, struct fh *h)
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

/* What /proc/<pid>/fdinfo/<fd> says of a descriptor: its open flags, the
 * id of the mount it is on and its inode. False when it cannot be read. */
static bool fd_info(pid_t pid, const char *fd, unsigned long *ret_flags,
		    int *ret_mnt, unsigned long *ret_ino)
{
	char p[320];
	snprintf(p, sizeof(p), "/proc/%d/fdinfo/%s", (int)pid, fd);
	FILE *f = fopen(p, "re");
	if (!f)
		return false;
	char line[128];
	*ret_flags = *ret_ino = 0;
	*ret_mnt = -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "flags:", 6))
			*ret_flags = strtoul(line + 6, NULL, 8);
		else if (!strncmp(line, "mnt_id:", 7))
			*ret_mnt = atoi(line + 7);
		else if (!strncmp(line, "ino:", 4))
			*ret_ino = strtoul(line + 4, NULL, 10);
	}
	fclose(f);
	return true;
}

/* What a process's descriptors are matched against (see still_held()). */
struct held_by {
	struct mount *m;
	struct fh *h;
	ino_t cur;	      /* the node's file now */
	const char *full;     /* the note's path on the mount */
	const char *detached; /* its path from the mount's root */
	size_t mpl;	      /* strlen(m->mountpoint) */
};

/* Whether the descriptor fd of pid is one of this note's, open for
 * writing. */
static bool fd_holds(const struct held_by *w, pid_t pid, const char *fd)
{
	char p[320], link[PATH_MAX];
	snprintf(p, sizeof(p), "/proc/%d/fd/%s", (int)pid, fd);
	ssize_t l = readlink(p, link, sizeof(link) - 1);
	if (l <= 0)
		return false;
	link[l] = 0;
	bool named = w->full &&
		     (!strcmp(link, w->full) || !strcmp(link, w->detached));
	bool on_mount = (size_t)l > w->mpl &&
			!strncmp(link, w->m->mountpoint, w->mpl) &&
			link[w->mpl] == '/';
	unsigned long flags, ino;
	int mnt;
	if ((!named && !on_mount) || !fd_info(pid, fd, &flags, &mnt, &ino))
		return false;
	return mnt == w->m->conn.mnt_id && (flags & O_ACCMODE) != O_RDONLY &&
	       ((ino_t)ino == w->h->open_ino || (ino_t)ino == w->cur || named);
}

/* 1: pid holds one of the note's descriptors; 0: it does not; -1: it
 * has none at all (a process that exits closes its descriptors after it
 * let go of their table). */
static int pid_holds(const struct held_by *w, pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int held = -1;
	struct dirent *e;
	while (held < 1 && (e = readdir(d)))
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			held = fd_holds(w, pid, e->d_name);
	closedir(d);
	return held;
}

/* The parent of pid, or 0. */
static pid_t parent_of(pid_t pid)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "pid (comm) state ppid ...": comm may hold anything but its end. */
	char *c = strrchr(buf, ')');
	char state;
	int ppid;
	return c && sscanf(c + 1, " %c %d", &state, &ppid) == 2 ? ppid : 0;
}

/*
 * Whether the process closing a descriptor of this open file (a flush)
 * still holds another one: `echo text > note` in a shell opens the note,
 * dup2()s it onto stdout and closes the first descriptor before any text
 * is written. The truncation and the text are one write, judged when the
 * last descriptor goes. Read from /proc/<pid>/fdinfo, which names the
 * mount and inode of each descriptor (no request to the mount). A process
 * that exits shows none: the descriptor it closes is then taken as still
 * held when its parent holds one (a shell's child, `{ cmd; echo text; } >
 * note`), whose text is not complete either.
 */
bool still_held(struct mount *m, struct fh *h, pid_t pid)
{
	if (pid <= 0 || m->conn.mnt_id <= 0)
		return false;
	/* The kernel's inode number for the file is the one it was given at
	 * its first lookup, and stays so after vaultd replaced the file
	 * under it: the descriptor is also known by its path. On a mount
	 * detached from the namespace (vaultd's stop detaches it before its
	 * last requests are answered; so does `umount -l`) the kernel names
	 * the file from the mount's root. */
	_cleanup_free_ char *rel = fh_path(m, h);
	_cleanup_free_ char *full =
		rel ? xasprintf("%s/%s", m->mountpoint, rel) : NULL;
	_cleanup_free_ char *detached = rel ? xasprintf("/%s", rel) : NULL;
	struct held_by w = {.m = m,
			    .h = h,
			    .full = full,
			    .detached = detached,
			    .mpl = strlen(m->mountpoint)};
	pthread_mutex_lock(&m->tmu);
	w.cur = h->node->ino;
	pthread_mutex_unlock(&m->tmu);
	int held = pid_holds(&w, pid);
	pid_t parent = held < 0 ? parent_of(pid) : 0;
	if (parent > 1)
		held = pid_holds(&w, parent);
	return held > 0;
}

/* The note that shares this file's inode (a hard link made in the vault
 * folder), or NULL. */
char *note_of_inode(struct mount *m, const struct stat *st)
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
		if (note_ino(n) == (uint64_t)st->st_ino)
			found = xstrdup(note_path(n));
	vault_read_unlock(m->v);
	return found;
}

/*
 * Writing a file that is a note under another name would change the note
 * unjudged: EPERM (0 when it is no such file).
 */
int refuse_note_link(struct mount *m, struct node *n, const char *what)
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
int open_shadow(struct mount *m, fuse_req_t req, struct node *n, char *path,
		struct fuse_file_info *fi, bool created, bool claimed)
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

int writers_take(struct mount *m, int text_fd, struct writers *ret)
{
	struct writers w = {0};
	struct stat st;
	if (fstat(text_fd, &st) < 0) {
		*ret = w;
		return -errno;
	}
	ino_t ino = st.st_ino;
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
			err ? -1 : make_shadow(m, text_fd, true, &w.mem[i]);
		if (w.shadow[i] < 0 && !err)
			err = w.shadow[i];
	}
	*ret = w;
	return err;
}

/* After the rename (ok: it happened): switch the handles, or not. A
 * handle already released (its release runs after the rename's lookup of
 * writers) stays as it is: its release decided it was no shadow, and no
 * write comes through it any more. */
void writers_done(struct mount *m, struct writers *w, bool ok, const char *to,
		  fuse_req_t req)
{
	for (size_t i = 0; i < w->n; i++) {
		struct fh *h = w->h[i];
		if (ok && w->shadow[i] >= 0 && !h->closing) {
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
void follow_rename(struct mount *m, const char *from, const char *to)
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
