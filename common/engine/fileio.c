/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Files beneath the vault's root (see fileio.h): path checks, every open
 * an openat2(RESOLVE_BENEATH) from the root fd, reads, folders made on the
 * way, temporary files left by a crash, mode narrowing, renames, unlinks
 * and stats. Writes are in fileio_write.c, batches in fileio_batch.c.
 */
#include "fileio_int.h"
#include "note.h"
#include "u8.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

mode_t fio_create_mask = 022;

void file_set_umask(mode_t mask)
{
	fio_create_mask = mask & 0777;
}

static long narrow_dir(int dfd, mode_t mask, int depth)
{
	long n = 0;
	struct stat st;
	if (fstat(dfd, &st) == 0 && (st.st_mode & mask)) {
		if (fchmod(dfd, st.st_mode & 07777 & ~mask) == 0)
			n++;
	}
	if (depth > 64)
		return n;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return n;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						 O_CLOEXEC);
			if (sub >= 0) {
				n += narrow_dir(sub, mask, depth + 1);
				close(sub);
			}
		} else if (S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)) {
			if ((st.st_mode & mask) &&
			    fchmodat(dfd, de->d_name,
				     st.st_mode & 07777 & ~mask, 0) == 0)
				n++;
		}
	}
	closedir(d);
	return n;
}

long file_narrow_modes(int rootfd, const char *rel, mode_t mask)
{
	_cleanup_close_ int fd =
		beneath_open(rootfd, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	return narrow_dir(fd, mask & 0777, 0);
}

/* The pid in a temp file name of file_write_atomic(), or 0. */
static long temp_pid(const char *name)
{
	size_t n = strlen(name);
	if (name[0] != '.' || n < 12 || strcmp(name + n - 4, ".tmp"))
		return 0;
	const char *m = strstr(name, ".vaultd-");
	if (!m)
		return 0;
	for (const char *next; (next = strstr(m + 1, ".vaultd-"));)
		m = next; /* the last ".vaultd-" */
	const char *p = m + 8;
	char *end;
	long pid = strtol(p, &end, 10);
	if (end == p || *end != '-' || pid <= 0)
		return 0;
	const char *stop = name + n - 4;
	if (end + 1 == stop)
		return 0;
	for (p = end + 1; p < stop; p++)
		if (!isxdigit((unsigned char)*p))
			return 0;
	return pid;
}

bool file_is_temp(const char *name)
{
	return temp_pid(name) != 0;
}

bool file_is_own_temp(const char *name)
{
	return temp_pid(name) == (long)getpid();
}

bool file_is_stale_temp(const char *name)
{
	long pid = temp_pid(name);
	return pid && pid != (long)getpid();
}

long file_remove_temps(int rootfd, const char *rel)
{
	DIR *d = dir_open_beneath(rootfd, rel);
	if (!d)
		return -errno;
	long n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (file_is_stale_temp(de->d_name) &&
		    unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	closedir(d);
	return n;
}

int path_check(const char *path, char **ret_norm, const char **ret_msg)
{
	size_t n = strlen(path);
	if (n == 0) {
		*ret_msg = "path is empty";
		return -EINVAL;
	}
	if (n > PATH_MAX_BYTES) {
		*ret_msg = "path is too long";
		return -ENAMETOOLONG;
	}
	if (!u8_valid(path, n)) {
		*ret_msg = "path is not valid UTF-8";
		return -EINVAL;
	}
	if (path[0] == '/' || path[0] == '~') {
		*ret_msg =
			"absolute paths are not allowed; use a path inside the vault";
		return -EPERM;
	}
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			*ret_msg = "path contains control characters";
			return -EINVAL;
		}
		if (*p == '\\') {
			*ret_msg =
				"path contains '\\'; use '/' between folders";
			return -EINVAL;
		}
	}
	_cleanup_free_ char *copy = xstrdup(path);
	char *save = NULL;
	struct sbuf b = {0};
	size_t depth = 0;
	for (char *t = strtok_r(copy, "/", &save); t;
	     t = strtok_r(NULL, "/", &save)) {
		if (strcmp(t, ".") == 0)
			continue;
		if (++depth > PATH_MAX_DEPTH) {
			sb_free(&b);
			*ret_msg = "folders are nested too deep (at most "
				   "64 levels)";
			return -EINVAL;
		}
		if (strcmp(t, "..") == 0) {
			sb_free(&b);
			*ret_msg = "'..' is not allowed in paths";
			return -EPERM;
		}
		if (b.len)
			sb_putc(&b, '/');
		sb_puts(&b, t);
		if (strlen(t) > 255) {
			sb_free(&b);
			*ret_msg = "a path component is longer than 255 bytes";
			return -ENAMETOOLONG;
		}
	}
	if (!b.len) {
		sb_free(&b);
		*ret_msg = "path names no file";
		return -EINVAL;
	}
	char *nfc = u8_nfc(b.s);
	sb_free(&b);
	*ret_norm = nfc;
	return 0;
}

static int openat2_beneath(int rootfd, const char *rel, int flags, mode_t mode)
{
	static int have_openat2 = 1;
	if (have_openat2) {
		struct open_how how = {
			.flags = (uint64_t)flags | O_CLOEXEC,
			.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
		};
		long fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != ENOSYS)
			return -errno;
		have_openat2 = 0;
	}
	/* Old kernels: walk the components without following symlinks. */
	_cleanup_free_ char *copy = xstrdup(rel);
	char *last = strrchr(copy, '/');
	int dfd = rootfd;
	_cleanup_close_ int owned = -1;
	if (last) {
		*last = 0;
		char *save = NULL;
		for (char *t = strtok_r(copy, "/", &save); t;
		     t = strtok_r(NULL, "/", &save)) {
			if (strcmp(t, "..") == 0)
				return -EXDEV;
			int nfd = openat(dfd, t,
					 O_PATH | O_DIRECTORY | O_NOFOLLOW |
						 O_CLOEXEC);
			if (nfd < 0)
				return -errno;
			if (owned >= 0)
				close(owned);
			owned = dfd = nfd;
		}
	}
	const char *base = last ? last + 1 : copy;
	if (strcmp(base, "..") == 0)
		return -EXDEV;
	int fd = openat(dfd, base, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	return fd < 0 ? -errno : fd;
}

int beneath_open(int rootfd, const char *rel, int flags, mode_t mode)
{
	if (!rel || !*rel || rel[0] == '/')
		return -EXDEV;
	return openat2_beneath(rootfd, rel, flags, mode);
}

DIR *dir_open_beneath(int rootfd, const char *rel)
{
	int fd = *rel ? beneath_open(rootfd, rel, O_RDONLY | O_DIRECTORY, 0)
		      : openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

int file_read(int rootfd, const char *rel, size_t max, char **ret,
	      size_t *ret_len, struct stat *ret_st)
{
	_cleanup_close_ int fd =
		beneath_open(rootfd, rel, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EISDIR;
	if (ret_st)
		*ret_st = st;
	if ((size_t)st.st_size > max)
		return -EFBIG;
	size_t cap = (size_t)st.st_size + 1, len = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (len + 1 >= cap) {
			if (cap > max + 1) {
				free(buf);
				return -EFBIG;
			}
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			free(buf);
			return e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > max) {
		free(buf);
		return -EFBIG;
	}
	buf[len] = 0;
	*ret = buf;
	*ret_len = len;
	return 0;
}

int file_mkdirs(int rootfd, const char *dir)
{
	_cleanup_free_ char *p = xstrdup(dir);
	for (char *s = p;; s++) {
		if (*s == '/' || *s == 0) {
			char c = *s;
			*s = 0;
			if (*p) {
				_cleanup_close_ int fd = beneath_open(
					rootfd, p, O_PATH | O_DIRECTORY, 0);
				if (fd == -ENOENT) {
					/* mkdirat on the parent, beneath root.
					 */
					char *slash = strrchr(p, '/');
					_cleanup_close_ int pfd = -1;
					int dfd = rootfd;
					const char *base = p;
					if (slash) {
						*slash = 0;
						pfd = beneath_open(
							rootfd, p,
							O_PATH | O_DIRECTORY,
							0);
						*slash = '/';
						if (pfd < 0)
							return pfd;
						dfd = pfd;
						base = slash + 1;
					}
					if (mkdirat(dfd, base,
						    0777 & ~fio_create_mask) <
						    0 &&
					    errno != EEXIST)
						return -errno;
				} else if (fd < 0) {
					return fd;
				}
			}
			if (!c)
				break;
			*s = c;
		}
	}
	return 0;
}

/* Open the folder holding rel; *ret_base points into rel. */

int file_rename(int rootfd, const char *from, const char *to, bool noreplace,
		bool mkdirs)
{
	if (mkdirs) {
		const char *slash = strrchr(to, '/');
		if (slash) {
			_cleanup_free_ char *dir =
				xstrndup(to, (size_t)(slash - to));
			int r = file_mkdirs(rootfd, dir);
			if (r < 0)
				return r;
		}
	}
	const char *fb, *tb;
	_cleanup_close_ int fd1 = fio_open_parent(rootfd, from, &fb);
	if (fd1 < 0)
		return fd1;
	_cleanup_close_ int fd2 = fio_open_parent(rootfd, to, &tb);
	if (fd2 < 0)
		return fd2;
	if (renameat2(fd1, fb, fd2, tb, noreplace ? RENAME_NOREPLACE : 0) < 0)
		return -errno;
	return 0;
}

int file_unlink(int rootfd, const char *rel)
{
	const char *b;
	_cleanup_close_ int dfd = fio_open_parent(rootfd, rel, &b);
	if (dfd < 0)
		return dfd;
	return unlinkat(dfd, b, 0) < 0 ? -errno : 0;
}

int file_stat(int rootfd, const char *rel, struct stat *ret_st)
{
	const char *b;
	_cleanup_close_ int dfd = fio_open_parent(rootfd, rel, &b);
	if (dfd < 0)
		return dfd;
	return fstatat(dfd, b, ret_st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

int64_t file_btime(int rootfd, const char *rel)
{
	const char *b;
	_cleanup_close_ int dfd = fio_open_parent(rootfd, rel, &b);
	if (dfd < 0)
		return 0;
	struct statx sx;
	if (statx(dfd, b, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) < 0 ||
	    !(sx.stx_mask & STATX_BTIME))
		return 0;
	return sx.stx_btime.tv_sec;
}
