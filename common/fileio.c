/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fileio.h"
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

static mode_t create_mask = 022;

void file_set_umask(mode_t mask)
{
	create_mask = mask & 0777;
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

bool file_is_stale_temp(const char *name)
{
	size_t n = strlen(name);
	if (name[0] != '.' || n < 12 || strcmp(name + n - 4, ".tmp"))
		return false;
	const char *m = strstr(name, ".vaultd-");
	if (!m)
		return false;
	for (const char *next; (next = strstr(m + 1, ".vaultd-"));)
		m = next; /* the last ".vaultd-" */
	const char *p = m + 8;
	char *end;
	long pid = strtol(p, &end, 10);
	if (end == p || *end != '-' || pid <= 0 || pid == (long)getpid())
		return false;
	const char *stop = name + n - 4;
	if (end + 1 == stop)
		return false;
	for (p = end + 1; p < stop; p++)
		if (!isxdigit((unsigned char)*p))
			return false;
	return true;
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
	if (ret_st)
		*ret_st = st;
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
						    0777 & ~create_mask) < 0 &&
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
static int open_parent(int rootfd, const char *rel, const char **ret_base)
{
	const char *slash = strrchr(rel, '/');
	if (!slash) {
		*ret_base = rel;
		int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	_cleanup_free_ char *dir = xstrndup(rel, (size_t)(slash - rel));
	*ret_base = slash + 1;
	return beneath_open(rootfd, dir, O_PATH | O_DIRECTORY, 0);
}

int file_write_atomic(int rootfd, const char *rel, const char *data, size_t len,
		      unsigned flags, struct stat *ret_st)
{
	if (flags & WRITE_MKDIRS) {
		const char *slash = strrchr(rel, '/');
		if (slash) {
			_cleanup_free_ char *dir =
				xstrndup(rel, (size_t)(slash - rel));
			int r = file_mkdirs(rootfd, dir);
			if (r < 0)
				return r;
		}
	}
	const char *base;
	_cleanup_close_ int dfd = open_parent(rootfd, rel, &base);
	if (dfd < 0)
		return dfd;
	struct stat old;
	bool exists = fstatat(dfd, base, &old, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && (flags & WRITE_NOREPLACE))
		return -EEXIST;
	if (exists && !S_ISREG(old.st_mode))
		return -EISDIR;

	char tmp[300];
	int fd = -1;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		snprintf(tmp, sizeof(tmp), ".%.200s.vaultd-%d-%x.tmp", base,
			 (int)getpid(),
			 (unsigned)(hash_bytes(&attempt, sizeof(attempt)) ^
				    now_ns()) &
				 0xffffff);
		/* Never more open than the note it replaces, even briefly:
		 * the umask can only narrow this; fchmod() below restores. */
		fd = openat(
			dfd, tmp,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			exists ? (old.st_mode & 0777) : (0666 & ~create_mask));
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	int r = 0;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		off += (size_t)w;
	}
	if (!r && exists) {
		/* Keep the note's permissions and, where allowed, owner. */
		if (fchmod(fd, old.st_mode & 07777) < 0)
			r = -errno;
		if (fchown(fd, old.st_uid, old.st_gid) < 0) {
		}
	}
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r) {
		if (flags & WRITE_NOREPLACE) {
			if (renameat2(dfd, tmp, dfd, base, RENAME_NOREPLACE) <
			    0)
				r = -errno;
		} else if (renameat(dfd, tmp, dfd, base) < 0) {
			r = -errno;
		}
	}
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return r;
	}
	/* Make the rename itself durable. dfd may be an O_PATH fd, which
	 * fsync() refuses: open the folder for it. */
	_cleanup_close_ int sfd =
		openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd >= 0)
		fsync(sfd);
	if (ret_st && fstatat(dfd, base, ret_st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

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
	_cleanup_close_ int fd1 = open_parent(rootfd, from, &fb);
	if (fd1 < 0)
		return fd1;
	_cleanup_close_ int fd2 = open_parent(rootfd, to, &tb);
	if (fd2 < 0)
		return fd2;
	if (renameat2(fd1, fb, fd2, tb, noreplace ? RENAME_NOREPLACE : 0) < 0)
		return -errno;
	return 0;
}

int file_unlink(int rootfd, const char *rel)
{
	const char *b;
	_cleanup_close_ int dfd = open_parent(rootfd, rel, &b);
	if (dfd < 0)
		return dfd;
	return unlinkat(dfd, b, 0) < 0 ? -errno : 0;
}

int file_stat(int rootfd, const char *rel, struct stat *ret_st)
{
	const char *b;
	_cleanup_close_ int dfd = open_parent(rootfd, rel, &b);
	if (dfd < 0)
		return dfd;
	return fstatat(dfd, b, ret_st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

int64_t file_btime(int rootfd, const char *rel)
{
	const char *b;
	_cleanup_close_ int dfd = open_parent(rootfd, rel, &b);
	if (dfd < 0)
		return 0;
	struct statx sx;
	if (statx(dfd, b, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) < 0 ||
	    !(sx.stx_mask & STATX_BTIME))
		return 0;
	return sx.stx_btime.tv_sec;
}
