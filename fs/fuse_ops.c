/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FUSE operations table of the mount and the operations that choose
 * between passing through and guarding: creating, opening, writing and
 * closing files, setting attributes, links, deletes and renames. Each
 * maps its request onto the node table (mount_nodes.c), the passthrough
 * (mount_pass.c) or the guard (mount_guard.c, mount_fh.c,
 * mount_rename.c), and replies once.
 */
#include "mount_int.h"
#include "fileio.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* flock() stays with the kernel: a lock goes with the last close()
	 * at once, as on any file system (passed to vaultd, its release
	 * would wait for the asynchronous RELEASE). Locks are then shared
	 * by the users of the mount only, not with the vault folder. */
	conn->want &= ~FUSE_CAP_FLOCK_LOCKS;
	/* Zero copy for reads and writes where the kernel can. Not in a
	 * ThreadSanitizer build: the kernel answers a handle's RELEASE only
	 * after every request made with it has its reply, an order the
	 * sanitizer sees through read() and write() on /dev/fuse but not
	 * through splice(), so it would report each read's handle freed
	 * by the release that follows it. */
#ifdef __SANITIZE_THREAD__
	conn->want &= ~(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_READ);
#else
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_READ)
		conn->want |= FUSE_CAP_SPLICE_READ;
#endif
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

/* The announcer setting a note's times: they are what they are, since
 * the note changed already. */
static void setattr_announced(fuse_req_t req, struct node *n)
{
	struct stat st;
	int afd = node_get(n);
	int aerr =
		fstatat(afd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0
			? errno
			: 0;
	node_put(n);
	if (aerr)
		fuse_reply_err(req, aerr);
	else
		fuse_reply_attr(req, &st, CACHE_TIMEOUT);
}

/* chmod and chown of the node's file: 0 or an errno. */
static int setattr_owner(struct node *n, const struct stat *attr, int valid)
{
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
	return err;
}

/* A new size: through the open handle h (a shadow, if a note's), as a
 * guarded write of the note, or on the file. 0 or an errno. */
static int setattr_size(struct mount *m, fuse_req_t req, struct node *n,
			struct fh *h, off_t size)
{
	int err = 0;
	if (h) {
		pthread_mutex_lock(&h->mu);
		if (ftruncate(h->fd, size) < 0)
			err = errno;
		else if (h->shadow)
			h->dirty = true;
		if (err && h->shadow)
			h->write_err = err;
		pthread_mutex_unlock(&h->mu);
		return err;
	}
	_cleanup_free_ char *path = node_path(m, n);
	if (guarded(m, path))
		return truncate_note(m, req, n, path, size);
	err = refuse_note_link(m, n, "truncated through");
	if (!err) {
		char p[64];
		int fd = node_get(n);
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		if (truncate(p, size) < 0)
			err = errno;
		node_put(n);
	}
	return err;
}

/* Access and change times: through h unless it writes a shadow (the
 * note keeps its own). 0 or an errno. */
static int setattr_times(struct node *n, struct fh *h, const struct stat *attr,
			 int valid)
{
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
	char p[64];
	int err = 0;
	int fd = node_get(n);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	if (h && !fh_shadow(h)) {
		if (futimens(fh_fd(h), tv) < 0)
			err = errno;
	} else if (utimensat(AT_FDCWD, p, tv, 0) < 0) {
		err = errno;
	}
	node_put(n);
	return err;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int valid, struct fuse_file_info *fi)
{
	struct mount *m = mnt(req);
	struct node *n = node_of(m, ino);
	if (announcer(m, req)) {
		setattr_announced(req, n);
		return;
	}
	struct fh *h = file_fh(fi);
	int err = setattr_owner(n, attr, valid);
	if (!err && (valid & FUSE_SET_ATTR_SIZE))
		err = setattr_size(m, req, n, h, attr->st_size);
	if (!err && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)))
		err = setattr_times(n, h, attr, valid);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	op_getattr(req, ino, fi);
}

/* After a pass-through change, keep the index in step. */
void sync_path(struct mount *m, fuse_req_t req, const char *path)
{
	if (!path)
		return;
	_cleanup_free_ char *src = source_of(req);
	struct vault_origin o;
	vault_write_lock(m->v);
	mount_origin(m, &o, path, NULL);
	vault_sync_path(m->v, path, src, 0);
	vault_write_unlock(m->v);
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
	int fd, pfd;
	node_get2(n, p, &fd, &pfd);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	int r = linkat(AT_FDCWD, src, pfd, newname, AT_SYMLINK_FOLLOW);
	int err = errno;
	node_put(p);
	node_put(n);
	reply_created(req, m, r < 0 ? err : 0, newparent, newname, true);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount *m = mnt(req);
	if (announcer(m, req)) {
		fuse_reply_err(req, 0); /* gone already */
		return;
	}
	_cleanup_free_ char *path = child_path(m, parent, name);
	if (guarded(m, path)) {
		fuse_reply_err(req, -delete_note(m, req, path));
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
	fuse_reply_err(req, -rename_judged(m, req, parent, name, newparent,
					   newname, flags));
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

/* The vault's spare files (asked for once; the writer lock is taken, so
 * never while holding a node's fd). */
static struct file_pool *spare_pool(struct mount *m)
{
	struct file_pool *p = __atomic_load_n(&m->pool, __ATOMIC_ACQUIRE);
	if (p || __atomic_load_n(&m->pool_asked, __ATOMIC_ACQUIRE))
		return p;
	p = vault_spare_pool(m->v);
	__atomic_store_n(&m->pool, p, __ATOMIC_RELEASE);
	__atomic_store_n(&m->pool_asked, true, __ATOMIC_RELEASE);
	return p;
}

/* A new note's empty file: an empty spare of pool put at name when one
 * fits (no inode is made while the writer waits), else made. -1 and
 * errno on failure. */
static int create_note(struct file_pool *pool, int pfd, const char *name,
		       mode_t mode)
{
	int fd = pool ? file_pool_place(pool, pfd, name) : -EAGAIN;
	if (fd == -EAGAIN)
		return openat(pfd, name,
			      O_CREAT | O_EXCL | O_RDONLY | O_CLOEXEC, mode);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	return fd;
}

/*
 * Open name in the folder pfd for op_create, making it if need be (then
 * *ret_created). A note is made empty and read-only (the watcher hears of
 * no write to it): its shadow's text replaces it at commit. -1 and errno
 * on failure.
 */
static int create_open(struct mount *m, int pfd, const char *name,
		       const char *path, struct file_pool *pool, bool note,
		       int fiflags, mode_t mode, bool *ret_created)
{
	int flags = PASS_FLAGS(fiflags | O_CREAT);
	int fd;
	*ret_created = false;
	if (note) {
		fd = create_note(pool, pfd, name, mode);
		if (fd >= 0)
			*ret_created = true;
		else if (errno == EEXIST && !(fiflags & O_EXCL))
			fd = openat(pfd, name, O_RDWR | O_CLOEXEC);
		return fd;
	}
	fd = openat(pfd, name, flags | O_EXCL | O_CLOEXEC, mode);
	if (fd >= 0) {
		*ret_created = true;
		return fd;
	}
	if (errno != EEXIST || (fiflags & O_EXCL))
		return -1;
	/* Not through a hard link to a note (O_TRUNC would change it before
	 * any check). */
	struct stat st;
	_cleanup_free_ char *link = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW)
					    ? NULL
					    : note_of_inode(m, &st);
	if (link) {
		log_warn("%s: refused: opened for writing through a hard link "
			 "to the note %s",
			 path ? path : name, link);
		errno = EPERM;
		return -1;
	}
	return openat(pfd, name, flags | O_CLOEXEC, mode);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct mount *m = mnt(req);
	char *path = child_path(m, parent, name);
	bool note = guarded(m, path);
	struct file_pool *pool = note ? spare_pool(m) : NULL;
	struct node *p = node_of(m, parent);
	int pfd = node_get(p);
	if (note) {
		/* The name exists at once (empty); the text becomes the note
		 * at commit, if the guard agrees. Claimed first: the watcher
		 * must not index the empty placeholder. */
		own(m, path, 1);
	}
	bool created;
	int fd = create_open(m, pfd, name, path, pool, note, fi->flags, mode,
			     &created);
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

const struct fuse_lowlevel_ops mount_oper = {
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
