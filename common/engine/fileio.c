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
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
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

/*
 * The folder holding rel, opened so that fsync() takes it (an O_PATH
 * descriptor is refused); *ret_base points into rel. A folder that cannot
 * be read (mode -wx) is opened O_PATH: writes there go without the
 * folder's fsync.
 */
static int open_folder(int rootfd, const char *rel, const char **ret_base)
{
	const char *slash = strrchr(rel, '/');
	*ret_base = slash ? slash + 1 : rel;
	if (!slash) {
		int fd =
			openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 && errno == EACCES)
			fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	_cleanup_free_ char *dir = xstrndup(rel, (size_t)(slash - rel));
	int fd = beneath_open(rootfd, dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd == -EACCES)
		fd = beneath_open(rootfd, dir, O_PATH | O_DIRECTORY, 0);
	return fd;
}

/* fsync() a folder from open_folder(); an O_PATH one is left alone.
 * Whether it is durable now. */
static bool sync_folder(int dfd)
{
	int fl = fcntl(dfd, F_GETFL);
	return fl >= 0 && !(fl & O_PATH) && fsync(dfd) == 0;
}

/*
 * A temp file in dfd beside base (".<base>.vaultd-<pid>-<hex>.tmp", see
 * file_is_stale_temp()) holding data, with the mode and owner of the file
 * it is to replace (old, or NULL for a new file). Not yet synced; the fd
 * is left open in *ret_fd, the name in tmp, its stat in *ret_st. On
 * failure nothing is left behind.
 */
static int temp_write(int dfd, const char *base, const struct stat *old,
		      const char *data, size_t len, char tmp[static 300],
		      int *ret_fd, struct stat *ret_st)
{
	int fd = -1;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		snprintf(tmp, 300, ".%.200s.vaultd-%d-%x.tmp", base,
			 (int)getpid(),
			 (unsigned)(hash_bytes(&attempt, sizeof(attempt)) ^
				    now_ns()) &
				 0xffffff);
		/* Never more open than the note it replaces, even briefly:
		 * the umask can only narrow this; fchmod() below restores. */
		fd = openat(
			dfd, tmp,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			old ? (old->st_mode & 0777) : (0666 & ~create_mask));
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
	struct stat st;
	if (!r && fstat(fd, &st) < 0)
		r = -errno;
	/* Keep the note's permissions and, where allowed, owner (only
	 * what differs: each change is an inode update). */
	if (!r && old && (st.st_mode & 07777) != (old->st_mode & 07777)) {
		if (fchmod(fd, old->st_mode & 07777) < 0)
			r = -errno;
		else
			st.st_mode =
				(st.st_mode & ~07777u) | (old->st_mode & 07777);
	}
	if (!r && old &&
	    (st.st_uid != old->st_uid || st.st_gid != old->st_gid) &&
	    fchown(fd, old->st_uid, old->st_gid) == 0) {
		st.st_uid = old->st_uid;
		st.st_gid = old->st_gid;
	}
	if (r < 0) {
		close(fd);
		unlinkat(dfd, tmp, 0);
		return r;
	}
	*ret_fd = fd;
	*ret_st = st;
	return 0;
}

/* What is there now under base: its stat in *ret_old (0), -ENOENT, or
 * why it cannot be replaced. */
static int replaceable(int dfd, const char *base, unsigned flags,
		       struct stat *ret_old)
{
	if (fstatat(dfd, base, ret_old, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	if (flags & WRITE_NOREPLACE)
		return -EEXIST;
	if (!S_ISREG(ret_old->st_mode))
		return -EISDIR;
	return 0;
}

/* ---- spare files ---------------------------------------------------------
 */

/*
 * Spare files: files in .vaultd/spare/, one of which becomes the new
 * file of a write. Making a file means finding a free inode, and some file
 * systems make that slow after many files were deleted (ext4 without a
 * journal passes over every inode freed in the last minutes, each looked
 * up: hundreds of microseconds a file where vaultd rewrites notes all the
 * time). So a write swaps its spare with the note (RENAME_EXCHANGE) and
 * the note's old file, once nothing else can see it, becomes the next
 * spare (its text is written over when it is used, see spare_fill()): in
 * steady use no inode is made or freed. A thread makes new spares while
 * fewer than POOL_LOW are left, and ahead of time up to the number the
 * vault asks for (file_pool_set_fill(): so many that a rename's batch
 * finds a spare for each note it rewrites); up to POOL_MAX are kept, and
 * across
 * restarts (a spare is a file of vaultd's, mode 0600). A spare keeps its
 * blocks for the text written over it, so files over SPARE_KEEP_MAX are
 * not kept: the spares never hold more than POOL_MAX * SPARE_KEEP_MAX
 * bytes (64 MiB).
 */
#define POOL_LOW 16
#define POOL_MAX 2048
#define SPARE_KEEP_MAX (32 * 1024)
#define SPARE_NAME 48

struct file_pool {
	int dfd;   /* .vaultd/spare: constant */
	dev_t dev; /* its file system: constant */
	int flags; /* a new spare's inode flags, or -1: constant */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char (*names)[SPARE_NAME]; /* mu: the spares */
	size_t n, cap;		   /* mu */
	size_t fill;		   /* mu: made ahead up to this many */
	bool stop;		   /* mu */
	atomic_bool quit;	   /* stop, for the taking of old spares */
	bool running;		   /* the thread was started */
	file_in_use_fn in_use;	   /* mu */
	void *in_use_ud;	   /* mu */
	pthread_t th;
};

static int inode_flags(int fd)
{
	int f;
	return ioctl(fd, FS_IOC_GETFLAGS, &f) < 0 ? -1 : f;
}

/* Keep name as a spare (mu held); false when the pool is full. */
static bool pool_add_locked(struct file_pool *p, const char *name)
{
	if (p->n == p->cap) {
		if (p->cap == POOL_MAX)
			return false;
		p->cap = p->cap ? 2 * p->cap : POOL_LOW * 2;
		if (p->cap > POOL_MAX)
			p->cap = POOL_MAX;
		p->names = xrealloc(p->names, p->cap * sizeof(*p->names));
	}
	snprintf(p->names[p->n++], SPARE_NAME, "%s", name);
	return true;
}

/* A new empty spare (its name in name), or -errno. */
static int make_spare(struct file_pool *p, char name[static SPARE_NAME])
{
	int fd = -1;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		snprintf(name, SPARE_NAME, "spare-%d-%x", (int)getpid(),
			 (unsigned)(hash_bytes(&attempt, sizeof(attempt)) ^
				    now_ns()) &
				 0xffffff);
		fd = openat(p->dfd, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    0600);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	close(fd);
	return 0;
}

static void pool_recycle(struct file_pool *p, const char *name);

/* The spares an earlier run left (their texts, if any, are written
 * over when they are used): taken by the pool's thread, off the path of
 * the write that made the pool. */
static void adopt_spares(struct file_pool *p)
{
	int fd = dup(p->dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	/* This run's own ("spare-<pid>-...") are in use already. */
	char own[32];
	int ol = snprintf(own, sizeof(own), "spare-%d-", (int)getpid());
	struct dirent *de;
	while (!atomic_load(&p->quit) && (de = readdir(d)))
		if (!strncmp(de->d_name, "spare-", 6) &&
		    strncmp(de->d_name, own, (size_t)ol) != 0 &&
		    strlen(de->d_name) < SPARE_NAME)
			pool_recycle(p, de->d_name);
	closedir(d);
}

static void *pool_main(void *arg)
{
	struct file_pool *p = arg;
	adopt_spares(p);
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		size_t want = p->fill > POOL_LOW ? p->fill : POOL_LOW;
		if (p->n >= want) {
			pthread_cond_wait(&p->cv, &p->mu);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		char name[SPARE_NAME];
		int r = make_spare(p, name);
		pthread_mutex_lock(&p->mu);
		if (r == 0) {
			pool_add_locked(p, name);
		} else if (!p->stop) {
			/* A full disk, a read-only folder: writes make
			 * their own files meanwhile. */
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec++;
			pthread_cond_timedwait(&p->cv, &p->mu, &until);
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void file_pool_set_fill(struct file_pool *p, size_t n)
{
	pthread_mutex_lock(&p->mu);
	p->fill = n < POOL_MAX ? n : POOL_MAX;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Whether the file open as fd may become a spare: one name, at most
 * SPARE_KEEP_MAX bytes, nothing but what a new spare has (no extended
 * attribute, the same inode flags),
 * and no one else holding it: not vaultd (in_use), not another process
 * (a write lease is granted only when no one has it open; taken, the
 * caller releases it). */
static bool recyclable(struct file_pool *p, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    st.st_dev != p->dev || st.st_size > SPARE_KEEP_MAX ||
	    flistxattr(fd, NULL, 0) != 0 || inode_flags(fd) != p->flags)
		return false;
	pthread_mutex_lock(&p->mu);
	file_in_use_fn fn = p->in_use;
	void *ud = p->in_use_ud;
	pthread_mutex_unlock(&p->mu);
	if (fn && fn(ud, st.st_dev, st.st_ino))
		return false;
	return fcntl(fd, F_SETLEASE, F_WRLCK) == 0;
}

/*
 * The file under name in the spare folder: a note's old file swapped out
 * by a write (after its folder was synced: the note no longer needs it),
 * or a spare left by an earlier run. Kept as a spare, readable by vaultd
 * alone, when recyclable(), else removed, as a rename over the note
 * would have. It is not emptied: the write that takes it writes over
 * its blocks (freeing blocks can cost a discard on the device each).
 */
static void pool_recycle(struct file_pool *p, const char *name)
{
	/* O_NONBLOCK: another process's write lease is not waited for. */
	int fd = openat(p->dfd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	bool keep = fd >= 0 && recyclable(p, fd);
	if (keep) {
		keep = fchmod(fd, 0600) == 0;
		fcntl(fd, F_SETLEASE, F_UNLCK);
	}
	if (fd >= 0)
		close(fd);
	if (keep) {
		pthread_mutex_lock(&p->mu);
		keep = pool_add_locked(p, name);
		pthread_mutex_unlock(&p->mu);
	}
	if (!keep)
		unlinkat(p->dfd, name, 0);
}

struct file_pool *file_pool_new(int rootfd)
{
	/* Only in vaultd's own folder: no symlink on the way. */
	_cleanup_close_ int vfd =
		openat(rootfd, ".vaultd",
		       O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (vfd < 0 || (mkdirat(vfd, "spare", 0700) < 0 && errno != EEXIST))
		return NULL;
	int dfd = openat(vfd, "spare",
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dfd < 0)
		return NULL;
	if (fstat(dfd, &st) < 0) {
		close(dfd);
		return NULL;
	}
	struct file_pool *p = xcalloc(1, sizeof(*p));
	p->dfd = dfd;
	p->dev = st.st_dev;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	/* The flags every new file here gets, which a recycled one must
	 * have too. */
	char name[SPARE_NAME];
	p->flags = -1;
	if (make_spare(p, name) == 0) {
		int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		p->flags = fd >= 0 ? inode_flags(fd) : -1;
		if (fd >= 0)
			close(fd);
		unlinkat(dfd, name, 0);
	}
	if (pthread_create(&p->th, NULL, pool_main, p) != 0) {
		file_pool_free(p);
		return NULL;
	}
	p->running = true;
	return p;
}

struct file_pool *file_pool_free(struct file_pool *p)
{
	if (!p)
		return NULL;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	atomic_store(&p->quit, true);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->running)
		pthread_join(p->th, NULL);
	/* The spares stay for the next run: empty files of vaultd's. */
	free(p->names);
	close(p->dfd);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
	return NULL;
}

void file_pool_set_in_use(struct file_pool *p, file_in_use_fn fn, void *ud)
{
	pthread_mutex_lock(&p->mu);
	p->in_use = fn;
	p->in_use_ud = ud;
	pthread_mutex_unlock(&p->mu);
}

/* A spare, open for writing (its name in name, its stat in *ret_st), or
 * -EAGAIN. */
static int pool_take(struct file_pool *p, char name[static SPARE_NAME],
		     struct stat *ret_st)
{
	pthread_mutex_lock(&p->mu);
	bool have = p->n > 0;
	if (have)
		memcpy(name, p->names[--p->n], SPARE_NAME);
	if (p->n < POOL_LOW || p->n < p->fill)
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (!have)
		return -EAGAIN;
	int fd = openat(p->dfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	/* Only a file with no other name, open to vaultd alone. */
	if (fd >= 0 && fstat(fd, ret_st) == 0 && S_ISREG(ret_st->st_mode) &&
	    ret_st->st_nlink == 1 && (ret_st->st_mode & 07077) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -EAGAIN;
}

/*
 * A spare can stand in for a temp file beside base when it is on the same
 * file system and nothing would differ: files made in the folder get
 * nothing from it that a spare would not have (no default ACL).
 */
static bool pool_fits(const struct file_pool *p, int dfd)
{
	struct stat st;
	if (fstat(dfd, &st) < 0 || st.st_dev != p->dev)
		return false;
	return fgetxattr(dfd, "system.posix_acl_default", NULL, 0) < 0 &&
	       (errno == ENODATA || errno == EOPNOTSUPP);
}

/*
 * A spare holding data, with the mode and, where allowed, the owner of
 * old (the file it is to replace). The text goes over what the spare
 * held (a note's old text, in a file of mode 0600), the rest is cut off,
 * and only then is the mode set: neither text is ever in a file more
 * open than its note. Its name in name, its stat in *ret_st; with sync,
 * durable, else on its way to the disk. -EAGAIN: no spare to be had,
 * nothing done.
 */
static int spare_fill(struct file_pool *p, const struct stat *old,
		      const char *data, size_t len, bool sync,
		      char name[static SPARE_NAME], struct stat *ret_st)
{
	struct stat st;
	int fd = pool_take(p, name, &st);
	if (fd < 0)
		return fd;
	int r = 0;
	size_t off = 0;
	while (!r && off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno != EINTR)
			r = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (!r && st.st_size > (off_t)len && ftruncate(fd, (off_t)len) < 0)
		r = -errno;
	if (!r && fchmod(fd, old->st_mode & 07777) < 0)
		r = -errno;
	if (!r && (old->st_uid != st.st_uid || old->st_gid != st.st_gid) &&
	    fchown(fd, old->st_uid, old->st_gid) < 0) {
	}
	if (!r && fstat(fd, &st) < 0)
		r = -errno;
	if (!r && sync && fsync(fd) < 0)
		r = -errno;
	if (!r && !sync)
		sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	if (close(fd) < 0 && !r)
		r = -errno;
	if (r < 0) {
		unlinkat(p->dfd, name, 0);
		return r;
	}
	*ret_st = st;
	return 0;
}

/*
 * The file from (in fdir) put in place of base in dfd; the file it
 * replaces goes to from's name (RENAME_EXCHANGE), for donate() once the
 * folder is synced: returns 1. Where there is nothing to exchange with
 * (the file went meanwhile) or the file system cannot exchange, a plain
 * rename: 0. A folder that took the file's place is swapped back:
 * -EISDIR, what a rename over it says.
 */
static int exchange_in(int fdir, const char *from, int dfd, const char *base)
{
	if (renameat2(fdir, from, dfd, base, RENAME_EXCHANGE) < 0) {
		if (errno != ENOENT && errno != EINVAL)
			return -errno;
		return renameat(fdir, from, dfd, base) < 0 ? -errno : 0;
	}
	struct stat st;
	if (fstatat(fdir, from, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode)) {
		renameat2(fdir, from, dfd, base, RENAME_EXCHANGE);
		return -EISDIR;
	}
	return 1;
}

/*
 * After exchange_in(): the old file, now under name in fdir (the spare
 * folder, or beside the note), becomes a spare once its folder is
 * durable (synced), else it is removed (a crash could otherwise find the
 * note's name on the emptied file).
 */
static void donate(struct file_pool *p, int fdir, const char *name, bool synced)
{
	if (synced && fdir != p->dfd) {
		char spare[SPARE_NAME];
		snprintf(spare, sizeof(spare), "spare-%d-%x", (int)getpid(),
			 (unsigned)now_ns() & 0xffffff);
		if (renameat2(fdir, name, p->dfd, spare, RENAME_NOREPLACE) ==
		    0) {
			pool_recycle(p, spare);
			return;
		}
	}
	if (synced && fdir == p->dfd)
		pool_recycle(p, name);
	else
		unlinkat(fdir, name, 0);
}

/* rel's new text through a spare (the file to replace is old); -EAGAIN:
 * no spare to be had, nothing done. */
static int spare_write(struct file_pool *p, int dfd, const char *base,
		       const struct stat *old, const char *data, size_t len,
		       struct stat *ret_st)
{
	char name[SPARE_NAME];
	struct stat st;
	int r = spare_fill(p, old, data, len, true, name, &st);
	if (r < 0)
		return r;
	r = exchange_in(p->dfd, name, dfd, base);
	if (r < 0) {
		unlinkat(p->dfd, name, 0);
		return r == -EXDEV ? -EAGAIN : r;
	}
	bool synced = sync_folder(dfd);
	if (r == 1)
		donate(p, p->dfd, name, synced);
	*ret_st = st;
	return 0;
}

int file_write_atomic(int rootfd, const char *rel, const char *data, size_t len,
		      unsigned flags, struct stat *ret_st)
{
	return file_write_pooled(NULL, rootfd, rel, data, len, flags, ret_st);
}

int file_write_pooled(struct file_pool *pool, int rootfd, const char *rel,
		      const char *data, size_t len, unsigned flags,
		      struct stat *ret_st)
{
	const char *base;
	_cleanup_close_ int dfd = open_folder(rootfd, rel, &base);
	if (dfd == -ENOENT && (flags & WRITE_MKDIRS) && strchr(rel, '/')) {
		_cleanup_free_ char *dir =
			xstrndup(rel, (size_t)(base - 1 - rel));
		int r = file_mkdirs(rootfd, dir);
		if (r < 0)
			return r;
		dfd = open_folder(rootfd, rel, &base);
	}
	if (dfd < 0)
		return dfd;
	struct stat old;
	int r = replaceable(dfd, base, flags, &old);
	if (r < 0 && r != -ENOENT)
		return r;
	bool exists = r == 0;
	struct stat st;
	/* A note replaced: through a spare when one fits. A new one is made
	 * in its folder, which decides its group and default ACL. */
	if (pool && exists && pool_fits(pool, dfd)) {
		r = spare_write(pool, dfd, base, &old, data, len, &st);
		if (r == 0 && ret_st)
			*ret_st = st;
		if (r != -EAGAIN)
			return r;
	}
	char tmp[300];
	int fd = -1;
	r = temp_write(dfd, base, exists ? &old : NULL, data, len, tmp, &fd,
		       &st);
	if (r < 0)
		return r;
	if (fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	/* With a pool, the file replaced is swapped out to become a
	 * spare. */
	bool swap = pool && exists && !(flags & WRITE_NOREPLACE);
	if (!r) {
		if (flags & WRITE_NOREPLACE) {
			if (renameat2(dfd, tmp, dfd, base, RENAME_NOREPLACE) <
			    0)
				r = -errno;
		} else if (swap) {
			r = exchange_in(dfd, tmp, dfd, base);
		} else if (renameat(dfd, tmp, dfd, base) < 0) {
			r = -errno;
		}
	}
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return r;
	}
	/* Make the rename itself durable. */
	bool synced = sync_folder(dfd);
	if (swap && r == 1)
		donate(pool, dfd, tmp, synced);
	if (ret_st)
		*ret_st = st;
	return 0;
}

/* ---- batches ------------------------------------------------------------ */

struct batch_file {
	char *rel;
	size_t dirlen; /* bytes of rel's folder (0: the root) */
	/* The temp file beside it, or the spare (in the pool's folder);
	 * "" once gone. */
	char tmp[300];
	bool spare;
	bool swapped;	/* its spare name holds the old file (apply) */
	struct stat st; /* the temp file's */
	int err;	/* why it was not replaced (apply) */
};

struct file_batch {
	int rootfd;
	struct file_pool *pool; /* or NULL */
	int fits;		/* spares fit the folder open: -1 unknown */
	struct batch_file *f;
	size_t n, cap;
	struct ptrvec folders; /* more folders to sync (char *) */
	/* The folder used last, kept open for the next file there. */
	char *dir;
	int dfd;
};

struct file_batch *file_batch_new(int rootfd, struct file_pool *pool)
{
	struct file_batch *b = xcalloc(1, sizeof(*b));
	b->rootfd = rootfd;
	b->pool = pool;
	b->dfd = -1;
	b->fits = -1;
	return b;
}

/* The folder of rel (dirlen bytes of it), opened, or the one open. */
static int batch_folder(struct file_batch *b, const char *rel, size_t dirlen)
{
	if (b->dfd >= 0 && strlen(b->dir) == dirlen &&
	    !strncmp(b->dir, rel, dirlen))
		return b->dfd;
	if (b->dfd >= 0)
		close(b->dfd);
	free(b->dir);
	b->fits = -1;
	b->dir = xstrndup(rel, dirlen);
	/* open_folder() wants a path in the folder: any name does. */
	_cleanup_free_ char *probe =
		dirlen ? xasprintf("%s/x", b->dir) : xstrdup("x");
	const char *base;
	b->dfd = open_folder(b->rootfd, probe, &base);
	return b->dfd;
}

int file_batch_add(struct file_batch *b, const char *rel, const char *data,
		   size_t len)
{
	const char *slash = strrchr(rel, '/');
	size_t dirlen = slash ? (size_t)(slash - rel) : 0;
	int dfd = batch_folder(b, rel, dirlen);
	if (dfd < 0)
		return dfd;
	const char *base = slash ? slash + 1 : rel;
	struct stat old;
	int r = replaceable(dfd, base, 0, &old);
	if (r < 0 && r != -ENOENT)
		return r;
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 16;
		b->f = xrealloc(b->f, b->cap * sizeof(*b->f));
	}
	struct batch_file *f = &b->f[b->n];
	memset(f, 0, sizeof(*f));
	bool exists = r == 0;
	if (exists && b->pool && b->fits < 0)
		b->fits = pool_fits(b->pool, dfd);
	/* Under way to the disk while the next ones are written. */
	r = exists && b->pool && b->fits ? spare_fill(b->pool, &old, data, len,
						      false, f->tmp, &f->st)
					 : -EAGAIN;
	f->spare = r == 0;
	if (r == -EAGAIN) {
		int fd;
		r = temp_write(dfd, base, exists ? &old : NULL, data, len,
			       f->tmp, &fd, &f->st);
		if (r < 0)
			return r;
		sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		if (close(fd) < 0) {
			r = -errno;
			unlinkat(dfd, f->tmp, 0);
			return r;
		}
	}
	if (r < 0)
		return r;
	f->rel = xstrdup(rel);
	f->dirlen = dirlen;
	b->n++;
	return 0;
}

void file_batch_sync_folder(struct file_batch *b, const char *rel)
{
	pv_push(&b->folders, xstrdup(rel));
}

static int cmp_folder(const void *x, const void *y)
{
	const struct batch_file *a = *(struct batch_file *const *)x;
	const struct batch_file *c = *(struct batch_file *const *)y;
	size_t n = a->dirlen < c->dirlen ? a->dirlen : c->dirlen;
	int r = strncmp(a->rel, c->rel, n);
	if (r)
		return r;
	return a->dirlen < c->dirlen ? -1 : a->dirlen > c->dirlen;
}

/* The files in folder order (one open and one fsync per folder). */
static struct batch_file **by_folder(struct file_batch *b)
{
	struct batch_file **o = xcalloc(b->n + 1, sizeof(*o));
	for (size_t i = 0; i < b->n; i++)
		o[i] = &b->f[i];
	qsort(o, b->n, sizeof(*o), cmp_folder);
	return o;
}

/*
 * The temp files are synced by a few threads side by side: the device
 * takes their writes and flushes together, where one fsync() after the
 * other waits for each in turn (a thousand files: seconds against tens
 * of milliseconds).
 */
#define SYNC_THREADS 8

struct batch_sync {
	struct file_batch *b;
	atomic_size_t next;
	atomic_int err;	     /* the first failure, or 0 */
	atomic_size_t which; /* its file */
};

static int sync_temp(const struct file_batch *b, const struct batch_file *f)
{
	if (f->spare) {
		_cleanup_close_ int sfd =
			openat(b->pool->dfd, f->tmp,
			       O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0)
			return -errno;
		return fsync(sfd) < 0 ? -errno : 0;
	}
	_cleanup_free_ char *rel =
		f->dirlen ? xasprintf("%.*s/%s", (int)f->dirlen, f->rel, f->tmp)
			  : xstrdup(f->tmp);
	_cleanup_close_ int fd =
		beneath_open(b->rootfd, rel, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	return fsync(fd) < 0 ? -errno : 0;
}

static void *batch_sync_main(void *arg)
{
	struct batch_sync *j = arg;
	size_t i;
	while (!atomic_load(&j->err) &&
	       (i = atomic_fetch_add(&j->next, 1)) < j->b->n) {
		int r = sync_temp(j->b, &j->b->f[i]);
		int none = 0;
		if (r < 0 && atomic_compare_exchange_strong(&j->err, &none, r))
			atomic_store(&j->which, i);
	}
	return NULL;
}

int file_batch_sync(struct file_batch *b, size_t *ret_failed)
{
	struct batch_sync j = {.b = b};
	size_t want = b->n / 8 < SYNC_THREADS ? b->n / 8 : SYNC_THREADS;
	pthread_t th[SYNC_THREADS];
	size_t started = 0;
	for (size_t i = 1; i < want; i++)
		if (pthread_create(&th[started], NULL, batch_sync_main, &j) ==
		    0)
			started++;
	batch_sync_main(&j);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	int r = atomic_load(&j.err);
	if (r < 0)
		*ret_failed = atomic_load(&j.which);
	return r;
}

/* fsync() the folder of rel (a file in it), when it can be opened. */
static void sync_folder_of(int rootfd, const char *rel)
{
	const char *base;
	_cleanup_close_ int dfd = open_folder(rootfd, rel, &base);
	if (dfd >= 0)
		sync_folder(dfd);
}

/* One file of the batch put in place (dfd: its folder, or why it could
 * not be opened). */
static void apply_one(struct file_batch *b, struct batch_file *f, int dfd)
{
	const char *base = f->dirlen ? f->rel + f->dirlen + 1 : f->rel;
	int r = dfd;
	if (dfd >= 0 && f->spare)
		r = exchange_in(b->pool->dfd, f->tmp, dfd, base);
	else if (dfd >= 0 && b->pool)
		r = exchange_in(dfd, f->tmp, dfd, base);
	else if (dfd >= 0)
		r = renameat(dfd, f->tmp, dfd, base) < 0 ? -errno : 0;
	f->swapped = r == 1;
	f->err = r < 0 ? r : 0;
	if (f->err && f->spare)
		unlinkat(b->pool->dfd, f->tmp, 0);
	else if (f->err && dfd >= 0)
		unlinkat(dfd, f->tmp, 0);
	if (!f->swapped)
		f->tmp[0] = 0;
}

int file_batch_apply(struct file_batch *b)
{
	_cleanup_free_ struct batch_file **o = by_folder(b);
	int first = 0;
	size_t from = 0; /* the first file of the folder at hand */
	for (size_t i = 0; i < b->n; i++) {
		struct batch_file *f = o[i];
		int dfd = batch_folder(b, f->rel, f->dirlen);
		apply_one(b, f, dfd);
		if (f->err && !first)
			first = f->err;
		/* The folder's renames are in: make them durable, then
		 * recycle the files they replaced. */
		bool last = i + 1 == b->n || cmp_folder(&o[i], &o[i + 1]) != 0;
		if (!last)
			continue;
		bool synced = dfd >= 0 && sync_folder(dfd);
		for (size_t j = from; j <= i; j++) {
			if (!o[j]->swapped)
				continue;
			donate(b->pool, o[j]->spare ? b->pool->dfd : dfd,
			       o[j]->tmp, synced);
			o[j]->swapped = false;
			o[j]->tmp[0] = 0;
		}
		from = i + 1;
	}
	for (size_t i = 0; i < b->folders.n; i++)
		sync_folder_of(b->rootfd, b->folders.v[i]);
	return first;
}

void file_batch_moved(struct file_batch *b, const char *from, const char *to)
{
	size_t fl = strlen(from);
	for (size_t i = 0; i < b->n; i++) {
		struct batch_file *f = &b->f[i];
		if (strncmp(f->rel, from, fl) || f->rel[fl] != '/')
			continue;
		char *rel = xasprintf("%s%s", to, f->rel + fl);
		f->dirlen = f->dirlen - fl + strlen(to);
		free(f->rel);
		f->rel = rel;
	}
	/* The folder kept open may be one of them, now elsewhere. */
	if (b->dfd >= 0)
		close(b->dfd);
	b->dfd = -1;
	free(b->dir);
	b->dir = NULL;
}

int file_batch_result(const struct file_batch *b, size_t i, struct stat *ret_st)
{
	const struct batch_file *f = &b->f[i];
	if (f->err)
		return f->err;
	if (f->tmp[0])
		return -EAGAIN; /* not applied */
	*ret_st = f->st;
	return 0;
}

struct file_batch *file_batch_free(struct file_batch *b)
{
	if (!b)
		return NULL;
	for (size_t i = 0; i < b->n; i++) {
		struct batch_file *f = &b->f[i];
		if (f->tmp[0] && f->spare) {
			unlinkat(b->pool->dfd, f->tmp, 0);
		} else if (f->tmp[0]) {
			int dfd = batch_folder(b, f->rel, f->dirlen);
			if (dfd >= 0)
				unlinkat(dfd, f->tmp, 0);
		}
		free(f->rel);
	}
	free(b->f);
	for (size_t i = 0; i < b->folders.n; i++)
		free(b->folders.v[i]);
	pv_free(&b->folders);
	if (b->dfd >= 0)
		close(b->dfd);
	free(b->dir);
	free(b);
	return NULL;
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
