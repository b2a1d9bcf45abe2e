/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The operations that pass straight through to the vault folder, the
 * same on a note as on any file: attributes, links read, reads, folder
 * listings, file system statistics, seeks and extended attributes. Each
 * works on the node's descriptor (passthrough_ll.c's way), held against a
 * swap for the time of the call.
 */
#include "mount_int.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	unref_node(mnt(req), node_of(mnt(req), ino), nlookup);
	fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		unref_node(mnt(req), node_of(mnt(req), forgets[i].ino),
			   forgets[i].nlookup);
	fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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

void op_readlink(fuse_req_t req, fuse_ino_t ino)
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

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = fh_fd(fh_of(fi));
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

struct dirp {
	uint32_t tag; /* FH_DIR */
	DIR *dp;
	struct dirent *entry;
	off_t offset;
};

void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
		struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, offset, fi, false);
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
		    struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, offset, fi, true);
}

void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirp *d = (struct dirp *)(uintptr_t)fi->fh;
	closedir(d->dp);
	free(d);
	fuse_reply_err(req, 0);
}

void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi)
{
	struct dirp *d = (struct dirp *)(uintptr_t)fi->fh;
	int fd = dirfd(d->dp);
	int r = datasync ? fdatasync(fd) : fsync(fd);
	fuse_reply_err(req, r < 0 ? errno : 0);
}

void op_statfs(fuse_req_t req, fuse_ino_t ino)
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

void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
	      struct fuse_file_info *fi)
{
	off_t r = lseek(fh_fd(fh_of(fi)), off, whence);
	if (r < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, r);
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
void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
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

void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
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

void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
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

void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
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
