/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Atomic writes: a note's new text goes to a temporary file beside it (or
 * to a spare file, below) that replaces the note by a rename, so a reader
 * sees the old text or the new one, never a part; and the pool of spare
 * files that spares making an inode for each write.
 */
#include "fileio_int.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

int fio_open_parent(int rootfd, const char *rel, const char **ret_base)
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
int fio_open_folder(int rootfd, const char *rel, const char **ret_base)
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

/* fsync() a folder from fio_open_folder(); an O_PATH one is left alone.
 * Whether it is durable now. */
bool fio_sync_folder(int dfd)
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
int fio_temp_write(int dfd, const char *base, const struct stat *old,
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
		fd = openat(dfd, tmp,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    old ? (old->st_mode & 0777)
				: (0666 & ~fio_create_mask));
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	int r = write_full(fd, data, len);
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
int fio_replaceable(int dfd, const char *base, unsigned flags,
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
 * spare (its text is written over when it is used, see fio_spare_fill()): in
 * steady use no inode is made or freed. A thread makes new spares, off
 * the writers' path, only as they are used: when fewer than half of the
 * reserve are left it makes them up to the reserve, which is POOL_LOW at
 * first and grows by one for each spare a writer asked for and did not
 * find (a burst of new notes, a rename's batch: the next one finds
 * them), or up to the number asked for ahead (file_pool_set_fill()).
 * Making files ahead of need would cost the very inodes the pool is
 * there to save (and their removal when too many pile up). Up to
 * POOL_MAX are kept, and across restarts (a spare is a file of vaultd's,
 * mode 0600). A spare keeps its
 * blocks for the text written over it, so files over SPARE_KEEP_MAX are
 * not kept: the spares never hold more than POOL_MAX * SPARE_KEEP_MAX
 * bytes (64 MiB).
 */

static int inode_flags(int fd)
{
	int f;
	return ioctl(fd, FS_IOC_GETFLAGS, &f) < 0 ? -1 : f;
}

/* Keep name as a spare (mu held); false when the pool is full. */
static bool pool_add_locked(struct file_pool *p, const char *name, bool empty)
{
	if (p->n == p->cap) {
		if (p->cap == POOL_MAX)
			return false;
		p->cap = p->cap ? 2 * p->cap : POOL_LOW * 2;
		if (p->cap > POOL_MAX)
			p->cap = POOL_MAX;
		p->spares = xrealloc(p->spares, p->cap * sizeof(*p->spares));
	}
	struct spare *sp = &p->spares[p->n++];
	snprintf(sp->name, SPARE_NAME, "%s", name);
	sp->empty = empty;
	p->nempty += empty;
	return true;
}

/* The thread is to make spares (mu held): fewer than half of the reserve
 * left. */
static bool pool_low_locked(const struct file_pool *p)
{
	size_t want = p->fill > p->want ? p->fill : p->want;
	return p->n < (want + 1) / 2 || p->nempty < (p->want_empty + 1) / 2;
}

/* The thread has made enough (mu held): the reserve is full again. */
static bool pool_full_locked(const struct file_pool *p)
{
	size_t want = p->fill > p->want ? p->fill : p->want;
	return p->n >= POOL_MAX || (p->n >= want && p->nempty >= p->want_empty);
}

/* So few left that the thread makes more at once, writers busy or not
 * (mu held). */
static bool pool_urgent_locked(const struct file_pool *p)
{
	return p->n < POOL_LOW || p->nempty < POOL_LOW / 2;
}

/* Wait on the pool's condition for at most ns (mu held). */
static void pool_wait_locked(struct file_pool *p, uint64_t ns)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(ns / 1000000000u);
	until.tv_nsec += (long)(ns % 1000000000u);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&p->cv, &p->mu, &until);
}

/* A spare asked for and not found (mu held): the reserve grows by one. */
static void pool_missed_locked(struct file_pool *p, bool empty)
{
	p->last_take = now_ns();
	if (empty && p->want_empty < POOL_MAX)
		p->want_empty++;
	else if (!empty && p->want < POOL_MAX)
		p->want++;
	pthread_cond_signal(&p->cv);
}

/* Take a spare out of the pool into name (mu held): the last one of the
 * kind asked for (empty, or any, the ones with a text first, so that
 * empty ones are left for file_pool_place()). False when there is none. */
static bool pool_pop_locked(struct file_pool *p, bool empty,
			    char name[static SPARE_NAME])
{
	size_t i = p->n;
	while (i > 0 && p->spares[i - 1].empty != empty)
		i--;
	if (i == 0 && !empty)
		i = p->n;
	if (i == 0) {
		pool_missed_locked(p, empty);
		return false;
	}
	memcpy(name, p->spares[i - 1].name, SPARE_NAME);
	p->last_take = now_ns();
	p->nempty -= p->spares[i - 1].empty;
	p->spares[i - 1] = p->spares[--p->n];
	if (pool_low_locked(p))
		pthread_cond_signal(&p->cv);
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

static bool pool_recycle(struct file_pool *p, const char *name, bool soon);

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
			pool_recycle(p, de->d_name, false);
	closedir(d);
}

/* name, given back by a write, is for the thread to look at (mu held). */
static void given_add_locked(struct file_pool *p, const char *name, bool soon)
{
	if (p->ngiven == p->capgiven) {
		p->capgiven = p->capgiven ? 2 * p->capgiven : POOL_LOW;
		p->given = xrealloc(p->given, p->capgiven * sizeof(*p->given));
	}
	struct given *g = &p->given[p->ngiven++];
	snprintf(g->name, SPARE_NAME, "%s", name);
	g->soon = soon;
}

/* How long a file vaultd still holds, given back by a write whose caller
 * lets go of it right after (WRITE_FOLLOWED), is waited for before it is
 * looked at again; held then, it is removed. */
#define SOON_NS (5 * 1000000ull)

/* The last file given back, looked at (mu held, dropped meanwhile). */
static void pool_take_given(struct file_pool *p)
{
	struct given g = p->given[--p->ngiven];
	pthread_mutex_unlock(&p->mu);
	bool held = !pool_recycle(p, g.name, g.soon);
	pthread_mutex_lock(&p->mu);
	if (!held)
		return;
	/* Once more, after its holder had the time to let go. */
	given_add_locked(p, g.name, false);
	if (!p->stop)
		pool_wait_locked(p, SOON_NS);
}

/* Files given back first (each one kept is a spare not to be made),
 * then new spares, from when fewer than half of the reserve are left
 * until it is full (pool_low_locked(), pool_full_locked()): while
 * writers take spares, only as long as very few are left
 * (pool_urgent_locked()), the others in the pauses between them. The
 * thread yields the CPU (and, through it, the disk) to the writers it
 * makes spares for: making a file can cost a millisecond of CPU on a
 * file system that has freed many inodes lately. */
static void *pool_main(void *arg)
{
	struct file_pool *p = arg;
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), POOL_NICE) < 0) {
		/* Not allowed: it runs as the writers do. */
	}
	adopt_spares(p);
	pthread_mutex_lock(&p->mu);
	bool filling = false;
	while (!p->stop) {
		if (p->ngiven) {
			pool_take_given(p);
			continue;
		}
		filling = filling ? !pool_full_locked(p) : pool_low_locked(p);
		if (!filling) {
			pthread_cond_wait(&p->cv, &p->mu);
			continue;
		}
		uint64_t since = now_ns() - p->last_take;
		if (!pool_urgent_locked(p) && since < POOL_IDLE_NS) {
			pool_wait_locked(p, POOL_IDLE_NS - since);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		char name[SPARE_NAME];
		int r = make_spare(p, name);
		pthread_mutex_lock(&p->mu);
		if (r == 0) {
			pool_add_locked(p, name, true);
		} else if (!p->stop) {
			/* A full disk, a read-only folder: writes make
			 * their own files meanwhile. */
			pool_wait_locked(p, 1000000000u);
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

/* Whether vaultd holds the file dev/ino (a node of the mount). */
static bool held_by_vaultd(struct file_pool *p, dev_t dev, ino_t ino)
{
	pthread_mutex_lock(&p->mu);
	file_in_use_fn fn = p->in_use;
	void *ud = p->in_use_ud;
	pthread_mutex_unlock(&p->mu);
	return fn && fn(ud, dev, ino);
}

/* Whether the file open as fd may become a spare: one name, at most
 * SPARE_KEEP_MAX bytes, nothing but what a new spare has (no extended
 * attribute, the same inode flags), and no one else holding it: not
 * vaultd (in_use; then *ret_held), not another process (a write lease
 * is granted only when no one has it open; taken, the caller releases
 * it). *ret_empty: it holds no text. */
static bool recyclable(struct file_pool *p, int fd, bool *ret_empty,
		       bool *ret_held)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    st.st_dev != p->dev || st.st_size > SPARE_KEEP_MAX ||
	    flistxattr(fd, NULL, 0) != 0 || inode_flags(fd) != p->flags)
		return false;
	*ret_empty = st.st_size == 0;
	if (held_by_vaultd(p, st.st_dev, st.st_ino)) {
		*ret_held = true;
		return false;
	}
	return fcntl(fd, F_SETLEASE, F_WRLCK) == 0;
}

/*
 * The file under name in the spare folder: a note's old file swapped out
 * by a write (after its folder was synced: the note no longer needs it),
 * or a spare left by an earlier run. Kept as a spare, readable by vaultd
 * alone, when recyclable(), else removed, as a rename over the note
 * would have. It is not emptied: the write that takes it writes over
 * its blocks (freeing blocks can cost a discard on the device each).
 * One that vaultd holds and is to let go of soon is left as it is:
 * false.
 */
static bool pool_recycle(struct file_pool *p, const char *name, bool soon)
{
	/* O_NONBLOCK: another process's write lease is not waited for. */
	int fd = openat(p->dfd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	bool empty = false, held = false;
	bool keep = fd >= 0 && recyclable(p, fd, &empty, &held);
	if (held && soon) {
		close(fd);
		return false;
	}
	if (keep) {
		keep = fchmod(fd, 0600) == 0;
		fcntl(fd, F_SETLEASE, F_UNLCK);
	}
	if (fd >= 0)
		close(fd);
	if (keep) {
		pthread_mutex_lock(&p->mu);
		keep = pool_add_locked(p, name, empty);
		pthread_mutex_unlock(&p->mu);
	}
	if (!keep)
		unlinkat(p->dfd, name, 0);
	return true;
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
	p->want = p->want_empty = POOL_LOW;
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
	/* The spares stay for the next run: empty files of vaultd's; so do
	 * the files given back and not yet looked at (the next run's
	 * adopt_spares() does). */
	free(p->spares);
	free(p->given);
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

/* A spare taken that cannot be used goes back to the pool (keep; empty:
 * known to be empty), or, not being what a spare is, away. */
static void spare_undo(struct file_pool *p, const char *spare, int fd,
		       bool keep, bool empty)
{
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&p->mu);
	keep = keep && pool_add_locked(p, spare, empty);
	pthread_mutex_unlock(&p->mu);
	if (!keep)
		unlinkat(p->dfd, spare, 0);
}

/* A spare, open for writing (its name in name, its stat in *ret_st), or
 * -EAGAIN. */
static int pool_take(struct file_pool *p, char name[static SPARE_NAME],
		     struct stat *ret_st)
{
	pthread_mutex_lock(&p->mu);
	bool have = pool_pop_locked(p, false, name);
	pthread_mutex_unlock(&p->mu);
	if (!have)
		return -EAGAIN;
	int fd = openat(p->dfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	/* Only a file with no other name, open to vaultd alone. */
	if (fd >= 0 && fstat(fd, ret_st) == 0 && S_ISREG(ret_st->st_mode) &&
	    ret_st->st_nlink == 1 && (ret_st->st_mode & 07077) == 0)
		return fd;
	/* Out of descriptors: still a spare. */
	spare_undo(p, name, fd, fd < 0 && (errno == EMFILE || errno == ENFILE),
		   false);
	return -EAGAIN;
}

/*
 * A spare can stand in for a temp file beside base when it is on the same
 * file system and nothing would differ: files made in the folder get
 * nothing from it that a spare would not have (no default ACL).
 */
bool fio_pool_fits(const struct file_pool *p, int dfd)
{
	struct stat st;
	if (fstat(dfd, &st) < 0 || st.st_dev != p->dev)
		return false;
	ssize_t r = fgetxattr(dfd, "system.posix_acl_default", NULL, 0);
	if (r < 0 && errno == EBADF) { /* an O_PATH descriptor */
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dfd);
		r = getxattr(proc, "system.posix_acl_default", NULL, 0);
	}
	return r < 0 && (errno == ENODATA || errno == EOPNOTSUPP);
}

int file_pool_place(struct file_pool *p, int dfd, const char *name)
{
	struct stat dst, st;
	if (!fio_pool_fits(p, dfd) || fstat(dfd, &dst) < 0)
		return -EAGAIN;
	/* The group a file made in the folder gets. */
	gid_t gid = (dst.st_mode & S_ISGID) ? dst.st_gid : getegid();
	char spare[SPARE_NAME];
	pthread_mutex_lock(&p->mu);
	bool have = pool_pop_locked(p, true, spare);
	pthread_mutex_unlock(&p->mu);
	if (!have)
		return -EAGAIN;
	int fd = openat(p->dfd, spare, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	/* Only an empty file with no other name, open to vaultd alone. */
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_nlink != 1 || st.st_size != 0 || (st.st_mode & 07077) != 0) {
		spare_undo(p, spare, fd, false, true);
		return -EAGAIN;
	}
	if (st.st_uid != geteuid() || st.st_gid != gid) {
		spare_undo(p, spare, fd, true, true);
		return -EAGAIN;
	}
	/* Made now, as far as anyone can tell. */
	if (futimens(fd, NULL) < 0 ||
	    renameat2(p->dfd, spare, dfd, name, RENAME_NOREPLACE) < 0) {
		int e = errno;
		spare_undo(p, spare, fd, true, true);
		return e == EEXIST ? -EEXIST : -EAGAIN;
	}
	return fd;
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
int fio_spare_fill(struct file_pool *p, const struct stat *old,
		   const char *data, size_t len, bool sync,
		   char name[static SPARE_NAME], struct stat *ret_st)
{
	struct stat st;
	int fd = pool_take(p, name, &st);
	if (fd < 0)
		return fd;
	int r = write_full(fd, data, len);
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
 * replaces goes to from's name (RENAME_EXCHANGE), for fio_donate() once the
 * folder is synced: returns 1. Where there is nothing to exchange with
 * (the file went meanwhile) or the file system cannot exchange, a plain
 * rename: 0. A folder that took the file's place is swapped back:
 * -EISDIR, what a rename over it says.
 */
int fio_exchange_in(int fdir, const char *from, int dfd, const char *base)
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
 * After fio_exchange_in(): the old file, now under name in fdir (the spare
 * folder, or beside the note), becomes a spare once its folder is
 * durable (synced), else it is removed (a crash could otherwise find the
 * note's name on the emptied file). Whether it can be a spare is the
 * pool's thread's to find out, off the writer's path. One that vaultd
 * holds (a node of the mount) is removed at once, before the write is
 * told to anyone: the node follows the note's new file only when its old
 * one has no name left (a name it keeps is a hard link's, whose node
 * stays with it). Unless soon: the writer points its node at the new
 * file itself once the write returns (WRITE_FOLLOWED), and the thread
 * looks at the file after that.
 */
void fio_donate(struct file_pool *p, int fdir, const char *name, bool synced,
		bool soon)
{
	char spare[SPARE_NAME];
	if (synced && fdir != p->dfd) {
		snprintf(spare, sizeof(spare), "spare-%d-%x", (int)getpid(),
			 (unsigned)now_ns() & 0xffffff);
		if (renameat2(fdir, name, p->dfd, spare, RENAME_NOREPLACE) < 0)
			synced = false;
	} else if (snprintf(spare, sizeof(spare), "%s", name) >=
		   (int)sizeof(spare)) {
		synced = false;
	}
	if (!synced) {
		unlinkat(fdir, name, 0);
		return;
	}
	struct stat st;
	if (!soon && fstatat(p->dfd, spare, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    held_by_vaultd(p, st.st_dev, st.st_ino)) {
		unlinkat(p->dfd, spare, 0);
		return;
	}
	pthread_mutex_lock(&p->mu);
	given_add_locked(p, spare, soon);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* rel's new text through a spare (the file to replace is old); -EAGAIN:
 * no spare to be had, nothing done. */
static int spare_write(struct file_pool *p, int dfd, const char *base,
		       const struct stat *old, const char *data, size_t len,
		       unsigned flags, struct stat *ret_st)
{
	char name[SPARE_NAME];
	struct stat st;
	int r = fio_spare_fill(p, old, data, len, true, name, &st);
	if (r < 0)
		return r;
	r = fio_exchange_in(p->dfd, name, dfd, base);
	if (r < 0) {
		unlinkat(p->dfd, name, 0);
		return r == -EXDEV ? -EAGAIN : r;
	}
	bool synced = fio_sync_folder(dfd);
	if (r == 1)
		fio_donate(p, p->dfd, name, synced, flags & WRITE_FOLLOWED);
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
	_cleanup_close_ int dfd = fio_open_folder(rootfd, rel, &base);
	if (dfd == -ENOENT && (flags & WRITE_MKDIRS) && strchr(rel, '/')) {
		_cleanup_free_ char *dir =
			xstrndup(rel, (size_t)(base - 1 - rel));
		int r = file_mkdirs(rootfd, dir);
		if (r < 0)
			return r;
		dfd = fio_open_folder(rootfd, rel, &base);
	}
	if (dfd < 0)
		return dfd;
	struct stat old;
	int r = fio_replaceable(dfd, base, flags, &old);
	if (r < 0 && r != -ENOENT)
		return r;
	bool exists = r == 0;
	struct stat st;
	/* A note replaced: through a spare when one fits. A new one is made
	 * in its folder, which decides its group and default ACL. */
	if (pool && exists && fio_pool_fits(pool, dfd)) {
		r = spare_write(pool, dfd, base, &old, data, len, flags, &st);
		if (r == 0 && ret_st)
			*ret_st = st;
		if (r != -EAGAIN)
			return r;
	}
	char tmp[300];
	int fd = -1;
	r = fio_temp_write(dfd, base, exists ? &old : NULL, data, len, tmp, &fd,
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
			r = fio_exchange_in(dfd, tmp, dfd, base);
		} else if (renameat(dfd, tmp, dfd, base) < 0) {
			r = -errno;
		}
	}
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return r;
	}
	/* Make the rename itself durable. */
	bool synced = fio_sync_folder(dfd);
	if (swap && r == 1)
		fio_donate(pool, dfd, tmp, synced, flags & WRITE_FOLLOWED);
	if (ret_st)
		*ret_st = st;
	return 0;
}
