/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FUSE mount against a plain folder. vaultd mounts a temporary vault;
 * every test runs the same calls in a folder of the mount and in a plain
 * folder, records what each call returned (value, errno, stat fields,
 * contents, listings, xattrs) and compares the two records line by line.
 * Then two random-operation checkers: plain files (several fds at once)
 * and notes (one fd at a time, read back after every close()).
 *
 * Exits 77 only when /dev/fuse is missing or cannot be opened.
 * MOUNT_TRACE=1 prints both records of every test.
 */
#include "testutil.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define FUSE_MAGIC 0x65735546

static char *g_tmp, *g_vault, *g_mnt, *g_native, *g_sock, *g_log;
static pid_t g_pid = -1;
static const char *volatile g_where = "";

/* ---- records ------------------------------------------------------------ */

struct side {
	const char *name; /* "mount" or "native" */
	bool mount;
	char *dir; /* this test's folder in that tree */
	struct ptrvec lines;
};

static void line(struct side *s, const char *fmt, ...) _printf_(2, 3);
static void line(struct side *s, const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;
	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		abort();
	va_end(ap);
	pv_push(&s->lines, p);
}

static const char *ename(int e)
{
	static char buf[8][16];
	static unsigned i;
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	char *b = buf[i++ % 8];
	snprintf(b, 16, "E#%d", e);
	return b;
}

static long rec(struct side *s, const char *what, long r, int e, bool fd)
{
	g_where = "";
	if (r < 0)
		line(s, "%s = -1 %s", what, ename(e));
	else if (fd)
		line(s, "%s = fd", what);
	else
		line(s, "%s = %ld", what, r);
	errno = e;
	return r;
}

/* Record a call: its value (an fd is recorded as "fd"), errno if it
 * failed. errno is kept for the caller. */
#define CALL_(s, isfd, expr)                        \
	({                                          \
		g_where = #expr;                    \
		errno = 0;                          \
		long r_ = (long)(expr);             \
		rec((s), #expr, r_, errno, (isfd)); \
	})
#define R(s, expr) CALL_(s, false, expr)
#define RFD(s, expr) ((int)CALL_(s, true, expr))

static void expect_(struct side *s, bool ok, const char *what, int ln)
{
	if (!ok) {
		fprintf(stderr, "\n    [%s] line %d: expected %s ", s->name, ln,
			what);
		line(s, "EXPECTATION FAILED (line %d): %s", ln, what);
	}
	CU_assertImplementation(ok, (unsigned)ln, what, __FILE__, "", CU_FALSE);
}
#define EXPECT(s, cond) expect_((s), (cond), #cond, __LINE__)

/* A path in the side's folder (rotating buffers). */
static const char *P(struct side *s, const char *rel)
{
	static char buf[16][PATH_MAX];
	static unsigned i;
	char *b = buf[i++ % 16];
	snprintf(b, PATH_MAX, "%s/%s", s->dir, rel);
	return b;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
#define FNV0 0xcbf29ce484222325ull

static void esc(char *out, size_t cap, const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		if (c[i] >= 32 && c[i] < 127 && c[i] != '\\')
			out[o++] = (char)c[i];
		else
			o += (size_t)snprintf(out + o, cap - o, "\\%02x", c[i]);
	}
	out[o] = 0;
}

static void rec_buf(struct side *s, const char *what, const void *p, long n)
{
	if (n < 0) {
		line(s, "%s: (no data)", what);
		return;
	}
	char head[200];
	esc(head, sizeof(head), p, n > 40 ? 40 : (size_t)n);
	line(s, "%s: %ld bytes hash=%016llx [%s]", what, n,
	     (unsigned long long)fnv(FNV0, p, (size_t)n), head);
}

static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct sbuf b = {0};
	char buf[65536];
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		sb_add(&b, buf, (size_t)r);
	int e = errno;
	close(fd);
	if (r < 0) {
		sb_free(&b);
		errno = e;
		return NULL;
	}
	*len = b.len;
	sb_putc(&b, 0);
	return sb_steal(&b);
}

static void rec_file(struct side *s, const char *rel)
{
	size_t len = 0;
	char *t = slurp(P(s, rel), &len);
	char what[PATH_MAX + 16];
	snprintf(what, sizeof(what), "contents of %s", rel);
	if (!t) {
		line(s, "%s = -1 %s", what, ename(errno));
		return;
	}
	rec_buf(s, what, t, (long)len);
	free(t);
}

static void fmt_stat(char *out, size_t cap, const struct stat *st)
{
	int n = snprintf(out, cap,
			 "mode=%06o size=%lld nlink=%lu uid=%u gid=%u",
			 st->st_mode, (long long)st->st_size,
			 (unsigned long)st->st_nlink, st->st_uid, st->st_gid);
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		snprintf(out + n, cap - (size_t)n, " rdev=%u:%u",
			 major(st->st_rdev), minor(st->st_rdev));
}

static void rec_stat(struct side *s, const char *rel, bool follow)
{
	struct stat st;
	int r = follow ? stat(P(s, rel), &st) : lstat(P(s, rel), &st);
	if (r < 0) {
		line(s, "%sstat %s = -1 %s", follow ? "" : "l", rel,
		     ename(errno));
		return;
	}
	char b[200];
	fmt_stat(b, sizeof(b), &st);
	line(s, "%sstat %s: %s", follow ? "" : "l", rel, b);
}

static void rec_fstat(struct side *s, const char *what, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		line(s, "fstat %s = -1 %s", what, ename(errno));
		return;
	}
	char b[200];
	fmt_stat(b, sizeof(b), &st);
	line(s, "fstat %s: %s", what, b);
}

/* Create a file with these bytes (recorded). */
static void put(struct side *s, const char *rel, const char *text)
{
	int fd =
		open(P(s, rel), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	int e = errno;
	ssize_t w = fd >= 0 ? write(fd, text, strlen(text)) : -1;
	if (fd >= 0)
		e = errno;
	int c = fd >= 0 ? close(fd) : -1;
	if (fd >= 0 && c < 0)
		e = errno;
	if (fd < 0 || w != (ssize_t)strlen(text) || c < 0)
		line(s, "put %s failed: %s", rel, ename(e));
	else
		line(s, "put %s", rel);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int rename2(const char *a, const char *b, unsigned flags)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

static void compare(const char *test, struct side *m, struct side *n)
{
	size_t max = m->lines.n > n->lines.n ? m->lines.n : n->lines.n;
	int shown = 0;
	for (size_t i = 0; i < max; i++) {
		const char *a =
			i < m->lines.n ? m->lines.v[i] : "(nothing more)";
		const char *b =
			i < n->lines.n ? n->lines.v[i] : "(nothing more)";
		if (!strcmp(a, b))
			continue;
		if (!shown)
			fprintf(stderr,
				"\n    %s: mount and native differ:", test);
		if (shown++ < 12)
			fprintf(stderr,
				"\n      #%zu mount : %s\n      #%zu native: %s",
				i, a, i, b);
	}
	if (shown)
		fprintf(stderr, "\n    (%d lines differ) ", shown);
	if (getenv("MOUNT_TRACE")) {
		for (size_t i = 0; i < m->lines.n; i++)
			fprintf(stderr, "\n  M %s", (char *)m->lines.v[i]);
		for (size_t i = 0; i < n->lines.n; i++)
			fprintf(stderr, "\n  N %s", (char *)n->lines.v[i]);
		fputc('\n', stderr);
	}
	CU_assertImplementation(shown == 0, __LINE__,
				"mount and native records are the same",
				__FILE__, "", CU_FALSE);
}

static void side_free(struct side *s)
{
	for (size_t i = 0; i < s->lines.n; i++)
		free(s->lines.v[i]);
	pv_free(&s->lines);
	free(s->dir);
}

/* Run seq in <mnt>/posix/<test> and in <native>/<test>, compare. */
static void run_pair(const char *test, void (*seq)(struct side *))
{
	struct side m = {.name = "mount",
			 .mount = true,
			 .dir = xasprintf("%s/posix/%s", g_mnt, test)};
	struct side n = {.name = "native",
			 .dir = xasprintf("%s/%s", g_native, test)};
	int rm = mkdir(m.dir, 0755), rn = mkdir(n.dir, 0755);
	CU_ASSERT(rm == 0 && rn == 0);
	if (rm == 0 && rn == 0) {
		seq(&m);
		seq(&n);
		compare(test, &m, &n);
	}
	side_free(&m);
	side_free(&n);
}

static bool is_root(void)
{
	return geteuid() == 0;
}

/* ---- POSIX, call by call ------------------------------------------------ */

static void seq_create(struct side *s)
{
	int fd = RFD(s, open(P(s, "f"), O_CREAT | O_EXCL | O_WRONLY, 0640));
	rec_stat(s, "f", false);
	R(s, write(fd, "abc", 3));
	rec_fstat(s, "f", fd);
	R(s, close(fd));
	R(s, open(P(s, "f"), O_CREAT | O_EXCL | O_WRONLY, 0640));
	EXPECT(s, errno == EEXIST);
	/* Exists: O_CREAT opens it, the mode stays. */
	fd = RFD(s, open(P(s, "f"), O_CREAT | O_RDWR, 0600));
	char buf[16] = {0};
	R(s, read(fd, buf, sizeof(buf)));
	rec_buf(s, "read", buf, 3);
	R(s, close(fd));
	rec_stat(s, "f", false);
	fd = RFD(s, open(P(s, "f"), O_CREAT | O_TRUNC | O_WRONLY, 0600));
	R(s, close(fd));
	rec_stat(s, "f", false);
	rec_file(s, "f");
	fd = RFD(s, creat(P(s, "g"), 0755));
	R(s, close(fd));
	rec_stat(s, "g", false);
	R(s, open(P(s, "missing"), O_RDONLY));
	EXPECT(s, errno == ENOENT);
	R(s, open(P(s, "nodir/x"), O_CREAT | O_WRONLY, 0644));
	R(s, open(P(s, "f/x"), O_CREAT | O_WRONLY, 0644));
	R(s, open(P(s, "."), O_WRONLY));
	R(s, open(P(s, "f"), O_RDONLY | O_DIRECTORY));
	R(s, symlink("nowhere", P(s, "dangling")));
	R(s, open(P(s, "dangling"), O_CREAT | O_EXCL | O_WRONLY, 0644));
	fd = RFD(s, open(P(s, "dangling"), O_CREAT | O_WRONLY, 0644));
	R(s, close(fd));
	rec_stat(s, "nowhere", false);
	/* Many creates in a row, each one visible at once. */
	for (int i = 0; i < 50; i++) {
		char name[32];
		snprintf(name, sizeof(name), "many%02d", i);
		fd = open(P(s, name), O_CREAT | O_EXCL | O_RDWR, 0600 + i % 8);
		if (fd >= 0)
			close(fd);
		struct stat st;
		int r = stat(P(s, name), &st);
		line(s, "create+stat %s: fd %s, stat %d mode %o", name,
		     fd >= 0 ? "ok" : ename(errno), r, r ? 0 : st.st_mode);
	}
}

static void seq_umask(struct side *s)
{
	mode_t old = umask(0002);
	int fd = RFD(s, open(P(s, "f"), O_CREAT | O_WRONLY, 0666));
	R(s, close(fd));
	R(s, mkdir(P(s, "d"), 0777));
	R(s, mkfifo(P(s, "p"), 0666));
	umask(0077);
	fd = RFD(s, open(P(s, "g"), O_CREAT | O_WRONLY, 0666));
	R(s, close(fd));
	R(s, mkdir(P(s, "e"), 0777));
	umask(old);
	/* The caller's umask alone applies (umask 002: 0664/0775). */
	rec_stat(s, "f", false);
	rec_stat(s, "d", false);
	rec_stat(s, "p", false);
	rec_stat(s, "g", false);
	rec_stat(s, "e", false);
}

static void seq_rw(struct side *s)
{
	char buf[9000];
	int fd = RFD(s, open(P(s, "f"), O_CREAT | O_RDWR, 0644));
	R(s, write(fd, "hello world\n", 12));
	R(s, lseek(fd, 0, SEEK_CUR));
	R(s, lseek(fd, 0, SEEK_SET));
	long n = R(s, read(fd, buf, sizeof(buf)));
	rec_buf(s, "read", buf, n);
	R(s, read(fd, buf, sizeof(buf)));
	n = R(s, pread(fd, buf, 5, 6));
	rec_buf(s, "pread", buf, n);
	R(s, pwrite(fd, "HELLO", 5, 0));
	R(s, lseek(fd, 0, SEEK_CUR));
	R(s, pwrite(fd, "tail", 4, 8192));
	rec_fstat(s, "f", fd);
	n = R(s, pread(fd, buf, 16, 4000));
	rec_buf(s, "pread hole", buf, n);
	n = R(s, pread(fd, buf, sizeof(buf), 0));
	rec_buf(s, "pread all", buf, n);
	R(s, pread(fd, buf, 10, 9000));
	/* Beyond 4 GiB (sparse), then back. */
	R(s, pwrite(fd, "far", 3, 5LL << 30));
	rec_fstat(s, "f", fd);
	n = R(s, pread(fd, buf, 3, 5LL << 30));
	rec_buf(s, "pread far", buf, n);
	R(s, lseek(fd, 0, SEEK_END));
	R(s, ftruncate(fd, 8196));
	R(s, lseek(fd, 0, SEEK_END));
	R(s, write(fd, "!", 1));
	R(s, lseek(fd, 3, SEEK_SET));
	n = R(s, read(fd, buf, 4));
	rec_buf(s, "read at 3", buf, n);
	R(s, write(fd, "_", 1));
	R(s, lseek(fd, 0, SEEK_CUR));
	R(s, close(fd));
	rec_file(s, "f");
	fd = RFD(s, open(P(s, "f"), O_RDONLY));
	R(s, write(fd, "x", 1));
	EXPECT(s, errno == EBADF);
	R(s, close(fd));
	fd = RFD(s, open(P(s, "f"), O_WRONLY));
	R(s, read(fd, buf, 1));
	EXPECT(s, errno == EBADF);
	R(s, write(fd, "W", 1));
	R(s, close(fd));
	rec_file(s, "f");
	fd = RFD(s, open(P(s, "."), O_RDONLY | O_DIRECTORY));
	R(s, read(fd, buf, 1));
	R(s, close(fd));
	/* Two fds: what one writes the other reads at once. */
	int a = RFD(s, open(P(s, "two"), O_CREAT | O_RDWR, 0644));
	int b = RFD(s, open(P(s, "two"), O_RDWR));
	for (int i = 0; i < 20; i++) {
		char w[64];
		int len = snprintf(w, sizeof(w), "round %d ", i);
		ssize_t r1 = pwrite(i % 2 ? a : b, w, (size_t)len, i * 5);
		ssize_t r2 = pread(i % 2 ? b : a, buf, 200, 0);
		char h[300];
		esc(h, sizeof(h), buf, r2 > 0 ? (size_t)r2 : 0);
		line(s, "round %d: wrote %zd read %zd [%s]", i, r1, r2, h);
	}
	R(s, close(a));
	R(s, close(b));
}

static void seq_append(struct side *s)
{
	char buf[256];
	put(s, "f", "0123456789");
	int a = RFD(s, open(P(s, "f"), O_WRONLY | O_APPEND));
	int w = RFD(s, open(P(s, "f"), O_WRONLY));
	R(s, write(a, "AA", 2));
	R(s, lseek(a, 0, SEEK_CUR));
	R(s, pwrite(w, "xx", 2, 0));
	R(s, write(w, "yyy", 3));
	R(s, write(a, "BB", 2));
	/* Linux: pwrite() on an O_APPEND fd appends. */
	R(s, pwrite(a, "CC", 2, 0));
	R(s, lseek(a, 0, SEEK_CUR));
	rec_fstat(s, "f", a);
	rec_file(s, "f");
	int c = RFD(s, open(P(s, "f"), O_RDWR | O_APPEND));
	long n = R(s, read(c, buf, 4));
	rec_buf(s, "read", buf, n);
	R(s, write(c, "DD", 2));
	n = R(s, read(c, buf, sizeof(buf)));
	R(s, lseek(c, 2, SEEK_SET));
	n = R(s, read(c, buf, 3));
	rec_buf(s, "read at 2", buf, n);
	rec_file(s, "f");
	/* O_APPEND dropped with fcntl: writes go to the file position.
	 * Clearing O_APPEND with fcntl() takes effect through the mount. */
	R(s, fcntl(a, F_SETFL, 0));
	R(s, lseek(a, 1, SEEK_SET));
	R(s, write(a, "EE", 2));
	R(s, lseek(a, 0, SEEK_CUR));
	rec_file(s, "f");
	/* O_APPEND added with fcntl: writes go to the end. */
	R(s, fcntl(w, F_SETFL, O_APPEND));
	R(s, lseek(w, 0, SEEK_SET));
	R(s, write(w, "FF", 2));
	R(s, lseek(w, 0, SEEK_CUR));
	rec_file(s, "f");
	R(s, close(a));
	R(s, close(w));
	R(s, close(c));
	/* O_APPEND with O_CREAT on a new file. */
	int d = RFD(s, open(P(s, "g"), O_CREAT | O_WRONLY | O_APPEND, 0644));
	for (int i = 0; i < 10; i++)
		R(s, write(d, "line\n", 5));
	R(s, close(d));
	rec_file(s, "g");
}

static void seq_truncate(struct side *s)
{
	char buf[64];
	put(s, "f", "hello world");
	R(s, truncate(P(s, "f"), 100));
	rec_stat(s, "f", false);
	rec_file(s, "f");
	R(s, truncate(P(s, "f"), 5));
	rec_stat(s, "f", false);
	rec_file(s, "f");
	int fd = RFD(s, open(P(s, "f"), O_RDWR));
	R(s, ftruncate(fd, 4096 * 3 + 7));
	rec_fstat(s, "f", fd);
	long n = R(s, pread(fd, buf, sizeof(buf), 4096 * 3 - 10));
	rec_buf(s, "pread", buf, n);
	R(s, ftruncate(fd, 2));
	rec_fstat(s, "f", fd);
	n = R(s, pread(fd, buf, sizeof(buf), 0));
	rec_buf(s, "pread", buf, n);
	/* Bytes cut off come back as zeros when it grows again. */
	R(s, pwrite(fd, "abcdef", 6, 0));
	R(s, ftruncate(fd, 1));
	R(s, ftruncate(fd, 10));
	n = R(s, pread(fd, buf, sizeof(buf), 0));
	rec_buf(s, "pread regrown", buf, n);
	R(s, ftruncate(fd, 0));
	rec_fstat(s, "f", fd);
	R(s, ftruncate(fd, -1));
	R(s, close(fd));
	rec_file(s, "f");
	fd = RFD(s, open(P(s, "f"), O_RDONLY));
	R(s, ftruncate(fd, 0));
	R(s, close(fd));
	R(s, truncate(P(s, "missing"), 0));
	EXPECT(s, errno == ENOENT);
	R(s, truncate(P(s, "."), 0));
	R(s, truncate(P(s, "f"), -1));
	/* An O_TRUNC open while another fd reads the file. */
	put(s, "g", "some text here");
	int r = RFD(s, open(P(s, "g"), O_RDONLY));
	n = R(s, read(r, buf, 4));
	int t = RFD(s, open(P(s, "g"), O_WRONLY | O_TRUNC));
	R(s, lseek(r, 0, SEEK_SET));
	R(s, read(r, buf, sizeof(buf)));
	R(s, write(t, "new", 3));
	n = R(s, pread(r, buf, sizeof(buf), 0));
	rec_buf(s, "pread", buf, n);
	R(s, close(t));
	R(s, close(r));
	/* Truncate by path while an fd has cached pages. */
	put(s, "h", "0123456789abcdef");
	r = RFD(s, open(P(s, "h"), O_RDONLY));
	n = R(s, read(r, buf, sizeof(buf)));
	R(s, truncate(P(s, "h"), 4));
	n = R(s, pread(r, buf, sizeof(buf), 0));
	rec_buf(s, "pread after truncate", buf, n);
	R(s, truncate(P(s, "h"), 8));
	n = R(s, pread(r, buf, sizeof(buf), 0));
	rec_buf(s, "pread after grow", buf, n);
	R(s, close(r));
}

static void seq_dirs(struct side *s)
{
	R(s, mkdir(P(s, "d"), 0755));
	R(s, mkdir(P(s, "d"), 0755));
	EXPECT(s, errno == EEXIST);
	R(s, mkdir(P(s, "d/e"), 0700));
	rec_stat(s, "d", false);
	rec_stat(s, "d/e", false);
	put(s, "d/file", "x");
	R(s, rmdir(P(s, "d")));
	EXPECT(s, errno == ENOTEMPTY || errno == EEXIST);
	R(s, rmdir(P(s, "d/e")));
	rec_stat(s, "d", false);
	R(s, rmdir(P(s, "d")));
	R(s, unlink(P(s, "d/file")));
	R(s, rmdir(P(s, "d")));
	R(s, rmdir(P(s, "d")));
	EXPECT(s, errno == ENOENT);
	rec_stat(s, "d", false);
	put(s, "f", "x");
	R(s, rmdir(P(s, "f")));
	R(s, mkdir(P(s, "f"), 0755));
	R(s, mkdir(P(s, "f/x"), 0755));
	R(s, mkdir(P(s, "missing/x"), 0755));
	R(s, mkdir(P(s, "d2"), 0755));
	R(s, rmdir(P(s, "d2/.")));
	R(s, unlink(P(s, "d2")));
	R(s, mkdir(P(s, "d2/a"), 0755));
	R(s, mkdir(P(s, "d2/a/b"), 0755));
	R(s, mkdir(P(s, "d2/a/b/c"), 0755));
	put(s, "d2/a/b/c/deep", "deep");
	rec_file(s, "d2/a/b/c/deep");
	rec_stat(s, "d2/a", false);
	/* Recreated under the same name: a new empty folder. */
	R(s, unlink(P(s, "d2/a/b/c/deep")));
	R(s, rmdir(P(s, "d2/a/b/c")));
	R(s, mkdir(P(s, "d2/a/b/c"), 0711));
	rec_stat(s, "d2/a/b/c", false);
	rec_stat(s, "d2/a/b/c/deep", false);
}

static void seq_rename(struct side *s)
{
	char buf[64];
	put(s, "a", "A");
	put(s, "b", "B");
	put(s, "c", "C");
	R(s, mkdir(P(s, "d"), 0755));
	R(s, mkdir(P(s, "e"), 0755));
	put(s, "e/x", "X");
	R(s, mkdir(P(s, "g"), 0755));
	R(s, rename(P(s, "a"), P(s, "a2")));
	rec_stat(s, "a", false);
	rec_file(s, "a2");
	R(s, rename(P(s, "a2"), P(s, "b")));
	rec_file(s, "b");
	rec_stat(s, "b", false);
	rec_stat(s, "a2", false);
	R(s, rename2(P(s, "c"), P(s, "b"), RENAME_NOREPLACE));
	EXPECT(s, errno == EEXIST);
	rec_file(s, "b");
	rec_file(s, "c");
	R(s, rename2(P(s, "c"), P(s, "c2"), RENAME_NOREPLACE));
	rec_stat(s, "c", false);
	rec_file(s, "c2");
	put(s, "c3", "third");
	R(s, rename2(P(s, "b"), P(s, "c3"), RENAME_EXCHANGE));
	rec_file(s, "b");
	rec_file(s, "c3");
	/* A file and a folder swapped. */
	R(s, rename2(P(s, "c2"), P(s, "d"), RENAME_EXCHANGE));
	rec_stat(s, "c2", false);
	rec_stat(s, "d", false);
	rec_file(s, "d");
	R(s, rename2(P(s, "d"), P(s, "missing"), RENAME_EXCHANGE));
	R(s, rename2(P(s, "d"), P(s, "b"), RENAME_EXCHANGE | RENAME_NOREPLACE));
	/* c2 is the folder now, d the file. */
	R(s, rename(P(s, "c2"), P(s, "c2/sub")));
	R(s, rename(P(s, "d"), P(s, "e")));
	R(s, rename(P(s, "c2"), P(s, "d")));
	R(s, rename(P(s, "c2"), P(s, "e")));
	R(s, rename(P(s, "c2"), P(s, "g")));
	rec_stat(s, "g", false);
	rec_stat(s, "c2", false);
	R(s, rename(P(s, "missing"), P(s, "m2")));
	/* Into and out of folders. */
	R(s, rename(P(s, "d"), P(s, "e/d")));
	rec_file(s, "e/d");
	R(s, rename(P(s, "e/x"), P(s, "x")));
	rec_file(s, "x");
	R(s, rename(P(s, "e"), P(s, "g/e")));
	rec_file(s, "g/e/d");
	/* An open file renamed keeps reading. */
	int fd = RFD(s, open(P(s, "b"), O_RDWR));
	R(s, rename(P(s, "b"), P(s, "b3")));
	long n = R(s, pread(fd, buf, sizeof(buf), 0));
	rec_buf(s, "pread after rename", buf, n);
	R(s, write(fd, "+", 1));
	rec_file(s, "b3");
	rec_fstat(s, "b3", fd);
	R(s, close(fd));
	R(s, rename(P(s, "b3"), P(s, "b3")));
	rec_file(s, "b3");
	/* Two names of one file: rename does nothing. */
	R(s, link(P(s, "b3"), P(s, "b4")));
	R(s, rename(P(s, "b3"), P(s, "b4")));
	rec_stat(s, "b3", false);
	rec_stat(s, "b4", false);
	/* Renamed over, then the old name reused at once. */
	put(s, "p", "first");
	put(s, "q", "second");
	R(s, rename(P(s, "p"), P(s, "q")));
	put(s, "p", "third");
	rec_file(s, "p");
	rec_file(s, "q");
	/* Exchanged twice comes back. */
	R(s, rename2(P(s, "p"), P(s, "q"), RENAME_EXCHANGE));
	R(s, rename2(P(s, "p"), P(s, "q"), RENAME_EXCHANGE));
	rec_file(s, "p");
	rec_file(s, "q");
	R(s, rename2(P(s, "p"), P(s, "q"), 0x80));
}

static void seq_link(struct side *s)
{
	put(s, "f", "data");
	int fd = RFD(s, open(P(s, "f"), O_RDONLY));
	R(s, link(P(s, "f"), P(s, "g")));
	rec_stat(s, "f", false);
	rec_stat(s, "g", false);
	rec_fstat(s, "f", fd);
	struct stat a, b;
	if (stat(P(s, "f"), &a) == 0 && stat(P(s, "g"), &b) == 0) {
		EXPECT(s, a.st_nlink == 2);
		EXPECT(s, a.st_ino == b.st_ino);
	}
	int w = RFD(s, open(P(s, "g"), O_WRONLY | O_APPEND));
	R(s, write(w, "more", 4));
	R(s, close(w));
	rec_file(s, "f");
	rec_file(s, "g");
	R(s, link(P(s, "f"), P(s, "g")));
	EXPECT(s, errno == EEXIST);
	R(s, mkdir(P(s, "d"), 0755));
	R(s, link(P(s, "d"), P(s, "d2")));
	R(s, link(P(s, "missing"), P(s, "m2")));
	R(s, link(P(s, "f"), P(s, "d/h")));
	rec_stat(s, "d/h", false);
	R(s, unlink(P(s, "f")));
	rec_stat(s, "g", false);
	rec_fstat(s, "f", fd);
	R(s, close(fd));
	R(s, unlink(P(s, "d/h")));
	rec_stat(s, "g", false);
	/* A symlink hard-linked is the symlink, not its target. */
	R(s, symlink("g", P(s, "sl")));
	R(s, link(P(s, "sl"), P(s, "sl2")));
	rec_stat(s, "sl2", false);
	rec_stat(s, "g", false);
	char t[64] = {0};
	R(s, readlink(P(s, "sl2"), t, sizeof(t) - 1));
	line(s, "readlink sl2 [%s]", t);
	/* linkat with AT_SYMLINK_FOLLOW links the target. */
	R(s, linkat(AT_FDCWD, P(s, "sl"), AT_FDCWD, P(s, "sl3"),
		    AT_SYMLINK_FOLLOW));
	rec_stat(s, "sl3", false);
	rec_stat(s, "g", false);
}

static void seq_symlink(struct side *s)
{
	char buf[512];
	put(s, "t", "target");
	R(s, symlink("t", P(s, "sl")));
	rec_stat(s, "sl", false);
	rec_stat(s, "sl", true);
	long n = R(s, readlink(P(s, "sl"), buf, sizeof(buf)));
	rec_buf(s, "readlink", buf, n);
	rec_file(s, "sl");
	R(s, symlink("nowhere/x", P(s, "dl")));
	rec_stat(s, "dl", true);
	rec_stat(s, "dl", false);
	n = R(s, readlink(P(s, "dl"), buf, sizeof(buf)));
	rec_buf(s, "readlink", buf, n);
	char longt[301];
	memset(longt, 'z', 300);
	longt[300] = 0;
	for (int i = 50; i < 300; i += 50)
		longt[i] = '/';
	R(s, symlink(longt, P(s, "long")));
	n = R(s, readlink(P(s, "long"), buf, sizeof(buf)));
	rec_buf(s, "readlink long", buf, n);
	rec_stat(s, "long", false);
	R(s, symlink("t", P(s, "sl")));
	EXPECT(s, errno == EEXIST);
	R(s, readlink(P(s, "t"), buf, sizeof(buf)));
	EXPECT(s, errno == EINVAL);
	n = R(s, readlink(P(s, "sl"), buf, 0));
	n = R(s, readlink(P(s, "long"), buf, 3));
	rec_buf(s, "readlink short buffer", buf, n);
	R(s, open(P(s, "sl"), O_RDONLY | O_NOFOLLOW));
	R(s, open(P(s, "dl"), O_CREAT | O_WRONLY, 0644));
	R(s, symlink("loop", P(s, "loop")));
	rec_stat(s, "loop", true);
	R(s, mkdir(P(s, "d"), 0755));
	R(s, symlink("d", P(s, "sd")));
	put(s, "sd/file", "via link");
	rec_file(s, "d/file");
	R(s, symlink("../t", P(s, "d/up")));
	rec_file(s, "d/up");
	R(s, symlink("/", P(s, "abs")));
	rec_stat(s, "abs", true);
	R(s, unlink(P(s, "sl")));
	rec_file(s, "t");
	R(s, rmdir(P(s, "sd")));
	R(s, unlink(P(s, "sd/")));
	R(s, unlink(P(s, "sd")));
	rec_stat(s, "d", false);
}

static void seq_chmod(struct side *s)
{
	put(s, "f", "x");
	static const mode_t modes[] = {0600, 0755, 04755, 02750,
				       0,    0444, 01644, 0644};
	for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++) {
		R(s, chmod(P(s, "f"), modes[i]));
		rec_stat(s, "f", false);
	}
	R(s, chmod(P(s, "f"), 0));
	int fd = RFD(s, open(P(s, "f"), O_RDWR));
	R(s, fchmod(fd, 0640));
	rec_fstat(s, "f", fd);
	R(s, close(fd));
	rec_stat(s, "f", false);
	R(s, mkdir(P(s, "d"), 0755));
	R(s, chmod(P(s, "d"), 01777));
	rec_stat(s, "d", false);
	R(s, chmod(P(s, "d"), 0700));
	rec_stat(s, "d", false);
	R(s, chmod(P(s, "missing"), 0644));
	R(s, symlink("f", P(s, "sl")));
	R(s, chmod(P(s, "sl"), 0604));
	rec_stat(s, "f", false);
	rec_stat(s, "sl", false);
	R(s, fchmodat(AT_FDCWD, P(s, "f"), 0611, 0));
	rec_stat(s, "f", false);
}

static void seq_chown(struct side *s)
{
	put(s, "f", "x");
	R(s, chown(P(s, "f"), getuid(), getgid()));
	rec_stat(s, "f", false);
	R(s, chown(P(s, "f"), (uid_t)-1, (gid_t)-1));
	rec_stat(s, "f", false);
	R(s, symlink("f", P(s, "sl")));
	R(s, mkdir(P(s, "d"), 0755));
	if (is_root()) {
		R(s, chown(P(s, "f"), 65534, 65534));
		rec_stat(s, "f", false);
		int fd = RFD(s, open(P(s, "f"), O_RDWR));
		R(s, fchown(fd, 0, (gid_t)-1));
		rec_fstat(s, "f", fd);
		R(s, fchown(fd, (uid_t)-1, 65534));
		rec_fstat(s, "f", fd);
		R(s, close(fd));
		R(s, lchown(P(s, "sl"), 65534, 65534));
		rec_stat(s, "sl", false);
		rec_stat(s, "f", false);
		R(s, chown(P(s, "d"), 65534, 0));
		rec_stat(s, "d", false);
		/* chown clears set-user-ID. */
		R(s, chmod(P(s, "f"), 06755));
		R(s, chown(P(s, "f"), 0, 0));
		rec_stat(s, "f", false);
	} else {
		R(s, chown(P(s, "f"), 65534, 65534));
		rec_stat(s, "f", false);
	}
	R(s, chown(P(s, "missing"), 0, 0));
}

static bool ts_in(const struct timespec *t, const struct timespec *lo,
		  const struct timespec *hi)
{
	/* Kernels round "now" to the timestamp granularity: 1 s slack. */
	return t->tv_sec >= lo->tv_sec - 1 && t->tv_sec <= hi->tv_sec + 1;
}

static void rec_times(struct side *s, const char *rel, bool follow)
{
	struct stat st;
	int r = follow ? stat(P(s, rel), &st) : lstat(P(s, rel), &st);
	if (r < 0) {
		line(s, "times %s = -1 %s", rel, ename(errno));
		return;
	}
	line(s, "times %s: atime=%lld.%09ld mtime=%lld.%09ld", rel,
	     (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
	     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

static void seq_utimens(struct side *s)
{
	put(s, "f", "x");
	struct timespec ts[2] = {{1000000000, 123456789},
				 {1200000000, 987654321}};
	R(s, utimensat(AT_FDCWD, P(s, "f"), ts, 0));
	rec_times(s, "f", true);
	struct timespec om[2] = {{0, UTIME_OMIT}, {1300000000, 5}};
	R(s, utimensat(AT_FDCWD, P(s, "f"), om, 0));
	rec_times(s, "f", true);
	struct timespec om2[2] = {{1100000000, 7}, {0, UTIME_OMIT}};
	R(s, utimensat(AT_FDCWD, P(s, "f"), om2, 0));
	rec_times(s, "f", true);
	struct timespec lo, hi, now2[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
	clock_gettime(CLOCK_REALTIME, &lo);
	R(s, utimensat(AT_FDCWD, P(s, "f"), now2, 0));
	clock_gettime(CLOCK_REALTIME, &hi);
	struct stat st;
	if (stat(P(s, "f"), &st) == 0) {
		EXPECT(s, ts_in(&st.st_atim, &lo, &hi));
		EXPECT(s, ts_in(&st.st_mtim, &lo, &hi));
	}
	struct timespec mix[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
	R(s, utimensat(AT_FDCWD, P(s, "f"), ts, 0));
	clock_gettime(CLOCK_REALTIME, &lo);
	R(s, utimensat(AT_FDCWD, P(s, "f"), mix, 0));
	clock_gettime(CLOCK_REALTIME, &hi);
	if (stat(P(s, "f"), &st) == 0) {
		EXPECT(s, ts_in(&st.st_atim, &lo, &hi));
		line(s, "mtime kept: %d",
		     st.st_mtim.tv_sec == ts[1].tv_sec &&
			     st.st_mtim.tv_nsec == ts[1].tv_nsec);
	}
	clock_gettime(CLOCK_REALTIME, &lo);
	R(s, utimensat(AT_FDCWD, P(s, "f"), NULL, 0));
	clock_gettime(CLOCK_REALTIME, &hi);
	if (stat(P(s, "f"), &st) == 0)
		EXPECT(s, ts_in(&st.st_mtim, &lo, &hi));
	int fd = RFD(s, open(P(s, "f"), O_RDWR));
	R(s, futimens(fd, ts));
	rec_times(s, "f", true);
	/* A write moves mtime. */
	clock_gettime(CLOCK_REALTIME, &lo);
	R(s, write(fd, "y", 1));
	clock_gettime(CLOCK_REALTIME, &hi);
	if (fstat(fd, &st) == 0)
		EXPECT(s, ts_in(&st.st_mtim, &lo, &hi));
	R(s, close(fd));
	/* The symlink's own times, the target's untouched. */
	R(s, utimensat(AT_FDCWD, P(s, "f"), ts, 0));
	R(s, symlink("f", P(s, "sl")));
	struct timespec lt[2] = {{1400000000, 1}, {1400000001, 2}};
	R(s, utimensat(AT_FDCWD, P(s, "sl"), lt, AT_SYMLINK_NOFOLLOW));
	/* setattr on a symlink node goes through /proc/self/fd/N: the
	 * symlink's times change, not the target's. */
	rec_times(s, "sl", false);
	rec_times(s, "f", true);
	R(s, utimensat(AT_FDCWD, P(s, "missing"), ts, 0));
	R(s, mkdir(P(s, "d"), 0755));
	R(s, utimensat(AT_FDCWD, P(s, "d"), lt, 0));
	/* Only the folder's mtime: vaultd's watcher lists a new folder (to
	 * find notes made in it), and a listing after the utimensat moves
	 * its atime (relatime: atime is older than ctime), as any reader's
	 * would. */
	struct stat dst;
	if (R(s, lstat(P(s, "d"), &dst)) == 0)
		line(s, "times d: mtime=%lld.%09ld",
		     (long long)dst.st_mtim.tv_sec, dst.st_mtim.tv_nsec);
}

static void seq_statfs(struct side *s)
{
	struct statvfs sv;
	if (R(s, statvfs(P(s, "."), &sv)) == 0) {
		EXPECT(s, sv.f_bsize > 0);
		EXPECT(s, sv.f_blocks > 0);
		EXPECT(s, sv.f_bfree <= sv.f_blocks);
		EXPECT(s, sv.f_bavail <= sv.f_bfree);
		EXPECT(s, sv.f_namemax > 0);
		line(s,
		     "statvfs: bsize=%lu frsize=%lu blocks=%llu files=%llu "
		     "namemax=%lu",
		     sv.f_bsize, sv.f_frsize, (unsigned long long)sv.f_blocks,
		     (unsigned long long)sv.f_files, sv.f_namemax);
	}
	struct statfs sf;
	if (R(s, statfs(P(s, "."), &sf)) == 0) {
		if (s->mount)
			EXPECT(s, sf.f_type == FUSE_MAGIC);
		EXPECT(s, sf.f_bsize > 0 && sf.f_blocks > 0);
	}
	put(s, "f", "x");
	int fd = RFD(s, open(P(s, "f"), O_RDONLY));
	struct statvfs fv;
	if (R(s, fstatvfs(fd, &fv)) == 0)
		line(s, "fstatvfs: bsize=%lu blocks=%llu namemax=%lu",
		     fv.f_bsize, (unsigned long long)fv.f_blocks, fv.f_namemax);
	R(s, close(fd));
	R(s, statvfs(P(s, "missing"), &sv));
}

static void rec_xattr(struct side *s, const char *what, const char *path,
		      const char *name, bool nofollow)
{
	char buf[8192];
	ssize_t n = nofollow ? lgetxattr(path, name, buf, sizeof(buf))
			     : getxattr(path, name, buf, sizeof(buf));
	if (n < 0)
		line(s, "%s %s = -1 %s", what, name, ename(errno));
	else
		rec_buf(s, what, buf, n);
}

static void rec_xlist(struct side *s, const char *what, const char *path)
{
	char buf[4096];
	ssize_t n = listxattr(path, buf, sizeof(buf));
	if (n < 0) {
		line(s, "%s = -1 %s", what, ename(errno));
		return;
	}
	/* Sorted, user.* only (security.* depends on the file system). */
	struct ptrvec v = {0};
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		if (!strncmp(buf + i, "user.", 5))
			pv_push(&v, buf + i);
	pv_sort(&v, cmp_str);
	struct sbuf b = {0};
	for (size_t i = 0; i < v.n; i++)
		sb_printf(&b, "%s ", (char *)v.v[i]);
	line(s, "%s: [%s]", what, sb_str(&b));
	sb_free(&b);
	pv_free(&v);
}

static void seq_xattr(struct side *s)
{
	put(s, "f", "x");
	const char *f = P(s, "f");
	R(s, setxattr(f, "user.test", "value1", 6, 0));
	R(s, getxattr(f, "user.test", NULL, 0));
	rec_xattr(s, "get", f, "user.test", false);
	R(s, setxattr(f, "user.test", "v2", 2, XATTR_CREATE));
	EXPECT(s, errno == EEXIST);
	R(s, setxattr(f, "user.test", "v2", 2, XATTR_REPLACE));
	rec_xattr(s, "get", f, "user.test", false);
	R(s, setxattr(f, "user.none", "v", 1, XATTR_REPLACE));
	rec_xattr(s, "get", f, "user.none", false);
	char small[1];
	R(s, getxattr(f, "user.test", small, sizeof(small)));
	R(s, setxattr(f, "user.empty", "", 0, 0));
	rec_xattr(s, "get", f, "user.empty", false);
	char big[4000];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	R(s, setxattr(f, "user.big", big, sizeof(big), 0));
	rec_xattr(s, "get", f, "user.big", false);
	rec_xlist(s, "list", f);
	int fd = RFD(s, open(f, O_RDONLY));
	R(s, fsetxattr(fd, "user.fd", "by fd", 5, 0));
	char buf[64];
	long n = R(s, fgetxattr(fd, "user.fd", buf, sizeof(buf)));
	rec_buf(s, "fgetxattr", buf, n);
	R(s, fremovexattr(fd, "user.fd"));
	R(s, close(fd));
	R(s, removexattr(f, "user.test"));
	R(s, removexattr(f, "user.test"));
	rec_xattr(s, "get", f, "user.test", false);
	rec_xlist(s, "list", f);
	R(s, mkdir(P(s, "d"), 0755));
	R(s, setxattr(P(s, "d"), "user.d", "dir", 3, 0));
	rec_xattr(s, "get dir", P(s, "d"), "user.d", false);
	rec_xlist(s, "list dir", P(s, "d"));
	/* user.* xattrs are refused on symlinks (lsetxattr); the target
	 * must not get one. */
	R(s, symlink("f", P(s, "sl")));
	R(s, lsetxattr(P(s, "sl"), "user.sl", "s", 1, 0));
	rec_xattr(s, "lget sl", P(s, "sl"), "user.sl", true);
	rec_xattr(s, "get f", f, "user.sl", false);
	R(s, lgetxattr(P(s, "sl"), "user.big", buf, sizeof(buf)));
	R(s, llistxattr(P(s, "sl"), buf, sizeof(buf)));
	R(s, getxattr(P(s, "missing"), "user.x", buf, sizeof(buf)));
}

static void seq_fallocate(struct side *s)
{
	char buf[64];
	struct stat st;
	int fd = RFD(s, open(P(s, "f"), O_CREAT | O_RDWR, 0644));
	R(s, fallocate(fd, 0, 0, 1 << 20));
	rec_fstat(s, "f", fd);
	if (fstat(fd, &st) == 0) {
		EXPECT(s, st.st_blocks >= (1 << 20) / 512);
		line(s, "blocks=%lld", (long long)st.st_blocks);
	}
	R(s, fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20));
	rec_fstat(s, "f", fd);
	if (fstat(fd, &st) == 0) {
		EXPECT(s, st.st_blocks >= (2 << 20) / 512);
		line(s, "blocks=%lld", (long long)st.st_blocks);
	}
	R(s, pwrite(fd, "0123456789", 10, 100));
	R(s,
	  fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096));
	long n = R(s, pread(fd, buf, 16, 96));
	rec_buf(s, "pread punched", buf, n);
	R(s, pwrite(fd, "abcdefghij", 10, 5000));
	R(s, fallocate(fd, FALLOC_FL_ZERO_RANGE, 5002, 4));
	n = R(s, pread(fd, buf, 10, 5000));
	rec_buf(s, "pread zeroed", buf, n);
	R(s, fallocate(fd, 0, 3 << 20, 4096));
	rec_fstat(s, "f", fd);
	R(s, fallocate(fd, 0, 0, 0));
	R(s, fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096));
	R(s, close(fd));
	fd = RFD(s, open(P(s, "f"), O_RDONLY));
	R(s, fallocate(fd, 0, 0, 4096));
	R(s, close(fd));
}

static void seq_flock(struct side *s)
{
	put(s, "f", "x");
	int a = RFD(s, open(P(s, "f"), O_RDWR));
	int b = RFD(s, open(P(s, "f"), O_RDWR));
	R(s, flock(a, LOCK_EX | LOCK_NB));
	R(s, flock(b, LOCK_EX | LOCK_NB));
	EXPECT(s, errno == EWOULDBLOCK);
	R(s, flock(b, LOCK_SH | LOCK_NB));
	EXPECT(s, errno == EWOULDBLOCK);
	R(s, flock(a, LOCK_SH));
	R(s, flock(b, LOCK_SH | LOCK_NB));
	R(s, flock(b, LOCK_EX | LOCK_NB));
	R(s, flock(a, LOCK_UN));
	R(s, flock(b, LOCK_EX | LOCK_NB));
	R(s, flock(a, LOCK_SH | LOCK_NB));
	/* A dup shares the lock: unlocking it frees the file. */
	int c = RFD(s, dup(b));
	R(s, flock(c, LOCK_UN));
	R(s, flock(a, LOCK_EX | LOCK_NB));
	/* Closing the last fd of an open file drops its lock. */
	R(s, close(a));
	R(s, flock(b, LOCK_EX | LOCK_NB));
	/* Another process. */
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(P(s, "f"), O_RDONLY);
		int r = flock(fd, LOCK_SH | LOCK_NB);
		_exit(r == 0 ? 0 : errno == EWOULDBLOCK ? 1 : 2);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	line(s, "other process flock: exit %d", WEXITSTATUS(st));
	R(s, flock(b, LOCK_UN));
	pid = fork();
	if (pid == 0) {
		int fd = open(P(s, "f"), O_RDONLY);
		int r = flock(fd, LOCK_EX | LOCK_NB);
		_exit(r == 0 ? 0 : errno == EWOULDBLOCK ? 1 : 2);
	}
	waitpid(pid, &st, 0);
	line(s, "other process flock after unlock: exit %d", WEXITSTATUS(st));
	R(s, flock(b, 12345));
	R(s, close(b));
	R(s, close(c));
}

static void seq_fsync(struct side *s)
{
	int fd = RFD(s, open(P(s, "f"), O_CREAT | O_RDWR, 0644));
	R(s, write(fd, "abc", 3));
	R(s, fsync(fd));
	R(s, fdatasync(fd));
	R(s, syncfs(fd));
	R(s, sync_file_range(fd, 0, 3, SYNC_FILE_RANGE_WRITE));
	R(s, close(fd));
	fd = RFD(s, open(P(s, "f"), O_RDONLY));
	R(s, fsync(fd));
	R(s, fdatasync(fd));
	R(s, close(fd));
	fd = RFD(s, open(P(s, "."), O_RDONLY | O_DIRECTORY));
	R(s, fsync(fd));
	R(s, fdatasync(fd));
	R(s, close(fd));
	rec_file(s, "f");
}

static void seq_seek(struct side *s)
{
	char blk[4096];
	memset(blk, 'd', sizeof(blk));
	int fd = RFD(s, open(P(s, "f"), O_CREAT | O_RDWR, 0644));
	R(s, pwrite(fd, blk, sizeof(blk), 0));
	R(s, pwrite(fd, blk, sizeof(blk), 1 << 20));
	R(s, fsync(fd));
	rec_fstat(s, "f", fd);
	R(s, lseek(fd, 0, SEEK_DATA));
	R(s, lseek(fd, 0, SEEK_HOLE));
	R(s, lseek(fd, 4096, SEEK_DATA));
	R(s, lseek(fd, 100, SEEK_HOLE));
	R(s, lseek(fd, (1 << 20) + 10, SEEK_DATA));
	R(s, lseek(fd, 1 << 20, SEEK_HOLE));
	R(s, lseek(fd, (1 << 20) + 4096, SEEK_DATA));
	R(s, lseek(fd, (1 << 20) + 4096, SEEK_HOLE));
	R(s, lseek(fd, (1 << 20) + 5000, SEEK_HOLE));
	R(s, lseek(fd, -10, SEEK_END));
	R(s, lseek(fd, 5, SEEK_CUR));
	R(s, lseek(fd, -1, SEEK_SET));
	R(s, lseek(fd, 0, 99));
	/* Without fsync: data still in flight. */
	int g = RFD(s, open(P(s, "g"), O_CREAT | O_RDWR, 0644));
	R(s, pwrite(g, blk, sizeof(blk), 8192));
	R(s, lseek(g, 0, SEEK_DATA));
	R(s, lseek(g, 0, SEEK_HOLE));
	R(s, lseek(g, 8192, SEEK_HOLE));
	R(s, close(g));
	R(s, close(fd));
}

static void seq_unlink_open(struct side *s)
{
	char buf[64];
	int fd = RFD(s, open(P(s, "f"), O_CREAT | O_RDWR, 0644));
	R(s, write(fd, "still here", 10));
	R(s, unlink(P(s, "f")));
	rec_stat(s, "f", false);
	rec_fstat(s, "f", fd);
	long n = R(s, pread(fd, buf, sizeof(buf), 0));
	rec_buf(s, "pread unlinked", buf, n);
	R(s, write(fd, " and more", 9));
	rec_fstat(s, "f", fd);
	n = R(s, pread(fd, buf, sizeof(buf), 0));
	rec_buf(s, "pread unlinked", buf, n);
	R(s, ftruncate(fd, 5));
	rec_fstat(s, "f", fd);
	R(s, unlink(P(s, "f")));
	EXPECT(s, errno == ENOENT);
	/* A new file under the old name; the fd keeps the old one. */
	put(s, "f", "new file");
	n = R(s, pread(fd, buf, sizeof(buf), 0));
	rec_buf(s, "pread old", buf, n);
	rec_file(s, "f");
	rec_stat(s, "f", false);
	R(s, close(fd));
	R(s, mkdir(P(s, "d"), 0755));
	R(s, unlink(P(s, "d")));
	R(s, unlink(P(s, "missing")));
	/* Open, unlinked, and the fd mapped. */
	put(s, "g", "mapped and gone");
	fd = RFD(s, open(P(s, "g"), O_RDONLY));
	R(s, unlink(P(s, "g")));
	char *p = mmap(NULL, 15, PROT_READ, MAP_SHARED, fd, 0);
	line(s, "mmap unlinked: %s", p == MAP_FAILED ? ename(errno) : "ok");
	if (p != MAP_FAILED) {
		rec_buf(s, "mapped", p, 15);
		munmap(p, 15);
	}
	R(s, close(fd));
	DIR *d = opendir(s->dir);
	struct dirent *e;
	struct ptrvec v = {0};
	while (d && (e = readdir(d)))
		pv_push(&v, xstrdup(e->d_name));
	if (d)
		closedir(d);
	pv_sort(&v, cmp_str);
	struct sbuf b = {0};
	for (size_t i = 0; i < v.n; i++) {
		sb_printf(&b, "%s ", (char *)v.v[i]);
		free(v.v[i]);
	}
	pv_free(&v);
	line(s, "names: %s", sb_str(&b));
	sb_free(&b);
}

#define NDIRENT 2000

static unsigned char want_type(int i)
{
	return i % 100 == 0   ? DT_DIR
	       : i % 100 == 1 ? DT_LNK
	       : i % 100 == 2 ? DT_FIFO
			      : DT_REG;
}

/* Read the listing; check names against present[] and d_type. */
static void check_listing(struct side *s, const char *what, const bool *present)
{
	DIR *d = opendir(s->dir);
	EXPECT(s, d != NULL);
	if (!d)
		return;
	int seen[NDIRENT] = {0}, dots = 0, other = 0, badtype = 0;
	size_t total = 0;
	uint64_t h = FNV0;
	struct ptrvec names = {0};
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d))) {
		total++;
		pv_push(&names, xstrdup(e->d_name));
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) {
			dots++;
			if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
				badtype++;
			continue;
		}
		int i;
		char c;
		if (sscanf(e->d_name, "e%d%c", &i, &c) != 1 || i < 0 ||
		    i >= NDIRENT) {
			other++;
			continue;
		}
		seen[i]++;
		if (e->d_type != want_type(i) && e->d_type != DT_UNKNOWN)
			badtype++;
	}
	int rerr = errno;
	closedir(d);
	int missing = 0, extra = 0, dup = 0;
	for (int i = 0; i < NDIRENT; i++) {
		if (present[i] && !seen[i])
			missing++;
		if (!present[i] && seen[i])
			extra++;
		if (seen[i] > 1)
			dup++;
	}
	qsort(names.v, names.n, sizeof(void *), cmp_str);
	for (size_t i = 0; i < names.n; i++) {
		h = fnv(h, names.v[i], strlen(names.v[i]) + 1);
		free(names.v[i]);
	}
	pv_free(&names);
	EXPECT(s, rerr == 0);
	EXPECT(s, missing == 0);
	EXPECT(s, extra == 0);
	EXPECT(s, dup == 0);
	EXPECT(s, dots == 2);
	EXPECT(s, other == 0);
	EXPECT(s, badtype == 0);
	line(s,
	     "%s: %zu entries, names hash %016llx, missing %d extra %d "
	     "dup %d bad d_type %d",
	     what, total, (unsigned long long)h, missing, extra, dup, badtype);
}

static void seq_readdir(struct side *s)
{
	bool present[NDIRENT];
	int fails = 0;
	for (int i = 0; i < NDIRENT; i++) {
		char name[16];
		snprintf(name, sizeof(name), "e%04d", i);
		const char *p = P(s, name);
		int r;
		switch (want_type(i)) {
		case DT_DIR:
			r = mkdir(p, 0755);
			break;
		case DT_LNK:
			r = symlink("target", p);
			break;
		case DT_FIFO:
			r = mkfifo(p, 0644);
			break;
		default:
			r = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
			if (r >= 0)
				r = close(r);
		}
		present[i] = r == 0;
		fails += r != 0;
	}
	line(s, "created, %d failed", fails);
	check_listing(s, "listing", present);
	/* Every third gone, then listed again (no stale cache). */
	fails = 0;
	for (int i = 0; i < NDIRENT; i += 3) {
		char name[16];
		snprintf(name, sizeof(name), "e%04d", i);
		int r = want_type(i) == DT_DIR ? rmdir(P(s, name))
					       : unlink(P(s, name));
		if (r == 0)
			present[i] = false;
		else
			fails++;
	}
	line(s, "removed, %d failed", fails);
	check_listing(s, "listing after removals", present);
	/* telldir/seekdir come back to the same place. */
	DIR *d = opendir(s->dir);
	if (!d)
		return;
	for (int i = 0; i < 700 && readdir(d); i++) {
	}
	long pos = telldir(d);
	char first[10][260];
	int got = 0;
	struct dirent *e;
	for (; got < 10 && (e = readdir(d)); got++)
		snprintf(first[got], sizeof(first[got]), "%s", e->d_name);
	seekdir(d, pos);
	int same = 0;
	for (int i = 0; i < got && (e = readdir(d)); i++)
		same += !strcmp(first[i], e->d_name);
	EXPECT(s, same == got && got == 10);
	rewinddir(d);
	size_t n = 0;
	while (readdir(d))
		n++;
	line(s, "seekdir: %d of %d same; after rewinddir %zu entries", same,
	     got, n);
	closedir(d);
}

static void seq_mknod(struct side *s)
{
	R(s, mkfifo(P(s, "p"), 0644));
	rec_stat(s, "p", false);
	R(s, mknod(P(s, "q"), S_IFIFO | 0600, 0));
	rec_stat(s, "q", false);
	R(s, mkfifo(P(s, "p"), 0644));
	EXPECT(s, errno == EEXIST);
	int fd = RFD(s, open(P(s, "p"), O_RDWR | O_NONBLOCK));
	R(s, write(fd, "x", 1));
	char c = 0;
	R(s, read(fd, &c, 1));
	line(s, "fifo gave %c", c);
	R(s, read(fd, &c, 1));
	R(s, close(fd));
	R(s, mknod(P(s, "r"), S_IFREG | 0640, 0));
	rec_stat(s, "r", false);
	R(s, mknod(P(s, "sock"), S_IFSOCK | 0644, 0));
	rec_stat(s, "sock", false);
	if (is_root()) {
		R(s, mknod(P(s, "null"), S_IFCHR | 0666, makedev(1, 3)));
		rec_stat(s, "null", false);
	}
	R(s, unlink(P(s, "p")));
	rec_stat(s, "p", false);
}

static void seq_big(struct side *s)
{
	enum { CHUNK = 1 << 20, NCHUNK = 64 };
	unsigned char *buf = xmalloc(CHUNK);
	uint64_t x = 0x1234567;
	uint64_t hw = FNV0, hr = FNV0;
	int fd = RFD(s, open(P(s, "big"), O_CREAT | O_TRUNC | O_WRONLY, 0644));
	long wrote = 0;
	for (int c = 0; c < NCHUNK && fd >= 0; c++) {
		for (size_t i = 0; i < CHUNK; i += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(buf + i, &x, 8);
		}
		ssize_t w = write(fd, buf, CHUNK);
		if (w != CHUNK)
			break;
		wrote += w;
		hw = fnv(hw, buf, CHUNK);
	}
	R(s, close(fd));
	line(s, "wrote %ld bytes, hash %016llx", wrote, (unsigned long long)hw);
	rec_stat(s, "big", false);
	fd = RFD(s, open(P(s, "big"), O_RDONLY));
	long got = 0;
	ssize_t r;
	while (fd >= 0 && (r = read(fd, buf, 128 * 1024)) > 0) {
		got += r;
		hr = fnv(hr, buf, (size_t)r);
	}
	R(s, close(fd));
	line(s, "read %ld bytes, hash %016llx", got, (unsigned long long)hr);
	EXPECT(s, got == (long)CHUNK * NCHUNK && hr == hw);
	R(s, unlink(P(s, "big")));
	free(buf);
}

static void seq_mmap(struct side *s)
{
	size_t len = 3 * 4096 + 100;
	char *data = xmalloc(len);
	for (size_t i = 0; i < len; i++)
		data[i] = (char)('a' + (i * 31 + i / 7) % 26);
	int fd = RFD(s, open(P(s, "f"), O_CREAT | O_RDWR, 0644));
	R(s, write(fd, data, len));
	R(s, close(fd));
	fd = RFD(s, open(P(s, "f"), O_RDONLY));
	char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	EXPECT(s, p != MAP_FAILED);
	if (p != MAP_FAILED) {
		EXPECT(s, memcmp(p, data, len) == 0);
		rec_buf(s, "mapped", p, (long)len);
		/* A write through another fd shows in the mapping. */
		int w = RFD(s, open(P(s, "f"), O_WRONLY));
		R(s, pwrite(w, "NEW!", 4, 5000));
		R(s, close(w));
		rec_buf(s, "mapped at 5000", p + 5000, 4);
		munmap(p, len);
	}
	char *q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (q != MAP_FAILED) {
		memcpy(q, "PRIV", 4);
		munmap(q, len);
	}
	R(s, close(fd));
	rec_file(s, "f");
	fd = RFD(s, open(P(s, "f"), O_RDWR));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	line(s, "shared writable mmap: %s",
	     p == MAP_FAILED ? ename(errno) : "ok");
	if (p != MAP_FAILED) {
		memcpy(p + 100, "MMAP", 4);
		memcpy(p + len - 4, "END.", 4);
		R(s, msync(p, len, MS_SYNC));
		munmap(p, len);
	}
	R(s, close(fd));
	rec_file(s, "f");
	free(data);
}

static void seq_direct(struct side *s)
{
	enum { SZ = 3 * 4096 };
	char *buf = aligned_alloc(4096, SZ), *back = aligned_alloc(4096, SZ);
	for (int i = 0; i < SZ; i++)
		buf[i] = (char)('A' + i % 23);
	int fd = RFD(s, open(P(s, "f"), O_CREAT | O_RDWR | O_DIRECT, 0644));
	/* O_DIRECT writes work (the daemon's own fd is not O_DIRECT). */
	R(s, pwrite(fd, buf, SZ, 0));
	R(s, pwrite(fd, buf, 4096, 8192));
	memset(back, 0, SZ);
	long n = R(s, pread(fd, back, SZ, 0));
	rec_buf(s, "pread O_DIRECT", back, n);
	R(s, write(fd, buf, 4096));
	R(s, close(fd));
	rec_file(s, "f");
	rec_stat(s, "f", false);
	/* Buffered and direct on one file. */
	int b = RFD(s, open(P(s, "f"), O_RDWR));
	fd = RFD(s, open(P(s, "f"), O_RDWR | O_DIRECT));
	R(s, pwrite(b, "buffered", 8, 0));
	n = R(s, pread(fd, back, 4096, 0));
	rec_buf(s, "direct sees", back, n > 16 ? 16 : n);
	memcpy(buf, "direct!!", 8);
	R(s, pwrite(fd, buf, 4096, 4096));
	char small[16];
	n = R(s, pread(b, small, 8, 4096));
	rec_buf(s, "buffered sees", small, n);
	R(s, close(fd));
	R(s, close(b));
	free(buf);
	free(back);
}

static void seq_copy_range(struct side *s)
{
	char data[20000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i % 251);
	int in = RFD(s, open(P(s, "in"), O_CREAT | O_RDWR, 0644));
	R(s, write(in, data, sizeof(data)));
	int out = RFD(s, open(P(s, "out"), O_CREAT | O_RDWR, 0644));
	loff_t a = 100, b = 0;
	R(s, copy_file_range(in, &a, out, &b, 10000, 0));
	line(s, "offsets %lld %lld", (long long)a, (long long)b);
	R(s, lseek(in, 0, SEEK_SET));
	R(s, copy_file_range(in, NULL, out, NULL, 50000, 0));
	R(s, lseek(out, 0, SEEK_CUR));
	R(s, close(in));
	R(s, close(out));
	rec_file(s, "out");
	rec_stat(s, "out", false);
}

/* ---- notes through the mount -------------------------------------------- */

static void test_note_read(void)
{
	char *p = xasprintf("%s/a.md", g_mnt);
	size_t len = 0;
	char *t = slurp(p, &len);
	ASSERT_STR_EQ(t, "hello\n");
	free(t);
	free(p);
}

/* Write a note through the mount, then read it at once through the mount
 * and in the vault folder. */
static void test_note_readback(void)
{
	char *m = xasprintf("%s/a.md", g_mnt);
	char *v = xasprintf("%s/a.md", g_vault);
	int bad = 0;
	for (int i = 0; i < 60 && bad < 5; i++) {
		/* Read first: the kernel caches the old text. */
		size_t len = 0;
		free(slurp(m, &len));
		struct sbuf want = {0};
		int words = (i * 37) % 50 + (i % 3 ? 1 : 0);
		for (int k = 0; k < words; k++)
			sb_printf(&want, "word%d round %d%s", k, i,
				  k % 5 == 4 ? "\n" : " ");
		sb_puts(&want, "end\n");
		int fd = open(m, i % 2 ? O_WRONLY | O_TRUNC : O_RDWR | O_TRUNC);
		ssize_t w = fd >= 0 ? write(fd, want.s, want.len) : -1;
		int c = fd >= 0 ? close(fd) : -1;
		CU_ASSERT(fd >= 0 && w == (ssize_t)want.len && c == 0);
		size_t ml = 0, vl = 0;
		char *mt = slurp(m, &ml), *vt = slurp(v, &vl);
		struct stat st;
		int sr = stat(m, &st);
		bool ok = mt && vt && ml == want.len && vl == want.len &&
			  !memcmp(mt, want.s, ml) && !memcmp(vt, want.s, vl) &&
			  sr == 0 && st.st_size == (off_t)want.len;
		if (!ok) {
			bad++;
			fprintf(stderr,
				"\n    round %d: wrote %zu bytes; mount read %zu "
				"(%s), stat %lld, vault has %zu (%s)",
				i, want.len, ml,
				mt && ml == want.len && !memcmp(mt, want.s, ml)
					? "same"
					: "DIFFERENT",
				sr ? -1LL : (long long)st.st_size, vl,
				vt && vl == want.len && !memcmp(vt, want.s, vl)
					? "same"
					: "DIFFERENT");
		}
		CU_ASSERT(ok);
		free(mt);
		free(vt);
		sb_free(&want);
	}
	/* Put a.md back. */
	int fd = open(m, O_WRONLY | O_TRUNC);
	if (fd >= 0) {
		if (write(fd, "hello\n", 6) != 6) {
		}
		close(fd);
	}
	free(m);
	free(v);
}

static void note_put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CU_ASSERT(fd >= 0);
	if (fd < 0)
		return;
	CU_ASSERT_EQUAL(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	CU_ASSERT_EQUAL(close(fd), 0);
}

static void note_expect(const char *path, const char *want, const char *step)
{
	size_t len = 0;
	char *t = slurp(path, &len);
	bool ok = t && len == strlen(want) && !memcmp(t, want, len);
	if (!ok) {
		char got[200], w[200];
		esc(got, sizeof(got), t ? t : "", t ? len : 0);
		esc(w, sizeof(w), want, strlen(want));
		fprintf(stderr, "\n    %s: got %zu bytes [%s], want [%s]", step,
			len, got, w);
	}
	CU_ASSERT(ok);
	free(t);
}

/* The size of a note being written, seen by fstat() and stat(), and the
 * O_APPEND writes that depend on it. */
static void test_note_size(void)
{
	char *m = xasprintf("%s/size.md", g_mnt);
	struct stat st;
	note_put(m, "0123456789\n");
	note_expect(m, "0123456789\n", "created");

	/* O_APPEND with nothing else: appends. */
	int fd = open(m, O_WRONLY | O_APPEND);
	CU_ASSERT_EQUAL(write(fd, "ab", 2), 2);
	CU_ASSERT_EQUAL(write(fd, "cd", 2), 2);
	CU_ASSERT_EQUAL(close(fd), 0);
	note_expect(m, "0123456789\nabcd", "two appends");

	/* fstat() on the writing fd shows what was written.
	 * fstat/stat of a note being written show the size being written,
	 * not the committed file's. */
	fd = open(m, O_WRONLY | O_APPEND);
	CU_ASSERT_EQUAL(write(fd, "ef", 2), 2);
	CU_ASSERT(fstat(fd, &st) == 0 && st.st_size == 17);
	if (st.st_size != 17)
		fprintf(stderr, "\n    fstat while writing: size %lld, want 17",
			(long long)st.st_size);
	/* The next O_APPEND write lands at the end (the kernel appends at
	 * the size it has). */
	CU_ASSERT_EQUAL(write(fd, "gh", 2), 2);
	CU_ASSERT_EQUAL(close(fd), 0);
	note_expect(m, "0123456789\nabcdefgh", "append after fstat");

	/* Another process looking (ls -l) does the same. */
	note_put(m, "0123456789\n");
	fd = open(m, O_WRONLY | O_APPEND);
	CU_ASSERT_EQUAL(write(fd, "ij", 2), 2);
	CU_ASSERT(stat(m, &st) == 0);
	CU_ASSERT_EQUAL(write(fd, "kl", 2), 2);
	CU_ASSERT_EQUAL(close(fd), 0);
	note_expect(m, "0123456789\nijkl", "append after stat");

	/* O_TRUNC|O_APPEND, then a stat: the text must not start with the
	 * old length in NUL bytes. */
	note_put(m, "0123456789\n");
	fd = open(m, O_WRONLY | O_TRUNC | O_APPEND);
	CU_ASSERT(stat(m, &st) == 0);
	CU_ASSERT_EQUAL(write(fd, "new\n", 4), 4);
	CU_ASSERT_EQUAL(close(fd), 0);
	note_expect(m, "new\n", "O_TRUNC|O_APPEND after stat");
	free(m);
}

/* A note written past the size at which its shadow copy leaves memory
 * for a file: what was written before stays, reads through the writing
 * descriptor see it, and the note is whole, through the mount and in the
 * vault folder. */
static void test_note_big(void)
{
	enum { CHUNK = 1 << 20, NCHUNK = 12 };
	char *m = xasprintf("%s/big note.md", g_mnt);
	char *v = xasprintf("%s/big note.md", g_vault);
	char *buf = xmalloc(CHUNK + 1), *back = xmalloc(CHUNK);
	uint64_t hw = FNV0;
	int fd = open(m, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	bool ok = true;
	for (int c = 0; c < NCHUNK && ok; c++) {
		for (size_t i = 0; i < CHUNK; i += 32)
			snprintf(buf + i, 33, "chunk %2d line %8zu ........\n",
				 c, i / 32);
		ok = write(fd, buf, CHUNK) == CHUNK;
		hw = fnv(hw, buf, CHUNK);
		struct stat st;
		ok = ok && fstat(fd, &st) == 0 &&
		     st.st_size == (off_t)(c + 1) * CHUNK;
		/* The first chunk, read back through the same descriptor. */
		ok = ok && pread(fd, back, 32, 0) == 32 &&
		     !memcmp(back, "chunk  0 line        0 ........\n", 32);
		if (!ok)
			fprintf(stderr, "\n    big note: chunk %d", c);
	}
	CU_ASSERT(ok);
	CU_ASSERT_EQUAL(close(fd), 0);
	const char *sides[2] = {m, v};
	for (int k = 0; k < 2; k++) {
		size_t len = 0;
		char *t = slurp(sides[k], &len);
		CU_ASSERT(t && len == (size_t)CHUNK * NCHUNK &&
			  fnv(FNV0, t, len) == hw);
		free(t);
	}
	CU_ASSERT_EQUAL(unlink(m), 0);
	free(buf);
	free(back);
	free(m);
	free(v);
}

/* ---- random operations ----------------------------------------------------
 */

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *g)
{
	uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(struct rng *g, uint64_t n)
{
	return n ? rnd(g) % n : 0;
}

#define NRFILES 8
#define NRFDS 4
#define RMAXLEN 65536

enum rop {
	OP_OPEN,
	OP_CLOSE,
	OP_PWRITE,
	OP_WRITE,
	OP_PREAD,
	OP_READ,
	OP_FTRUNCATE,
	OP_TRUNCATE,
	OP_RENAME,
	OP_UNLINK,
	OP_FSTAT,
	OP_STAT,
	OP_LSEEK,
	OP_FSYNC,
	OP_FALLOCATE,
};

struct rop_args {
	enum rop op;
	int slot, fi, fj, flags, whence;
	off_t off;
	size_t len;
};

struct rtree {
	const char *name;
	char *dir;
	int fd[NRFDS];
	unsigned char *buf;
	struct stat st;
};

static const char *rname(struct rtree *t, int i)
{
	static char buf[4][PATH_MAX];
	static unsigned k;
	char *b = buf[k++ % 4];
	snprintf(b, PATH_MAX, "%s/r%d.bin", t->dir, i);
	return b;
}

static long run_rop(struct rtree *t, const struct rop_args *a,
		    const unsigned char *data, int *err)
{
	long r = 0;
	int fd = t->fd[a->slot];
	errno = 0;
	switch (a->op) {
	case OP_OPEN:
		r = open(rname(t, a->fi), a->flags | O_CLOEXEC, 0644);
		if (r >= 0) {
			t->fd[a->slot] = (int)r;
			r = 0;
		}
		break;
	case OP_CLOSE:
		r = close(fd);
		t->fd[a->slot] = -1;
		break;
	case OP_PWRITE:
		r = pwrite(fd, data, a->len, a->off);
		break;
	case OP_WRITE:
		r = write(fd, data, a->len);
		break;
	case OP_PREAD:
		r = pread(fd, t->buf, a->len, a->off);
		break;
	case OP_READ:
		r = read(fd, t->buf, a->len);
		break;
	case OP_FTRUNCATE:
		r = ftruncate(fd, a->off);
		break;
	case OP_TRUNCATE:
		r = truncate(rname(t, a->fi), a->off);
		break;
	case OP_RENAME:
		r = rename(rname(t, a->fi), rname(t, a->fj));
		break;
	case OP_UNLINK:
		r = unlink(rname(t, a->fi));
		break;
	case OP_FSTAT:
		r = fstat(fd, &t->st);
		break;
	case OP_STAT:
		r = stat(rname(t, a->fi), &t->st);
		break;
	case OP_LSEEK:
		r = lseek(fd, a->off, a->whence);
		break;
	case OP_FSYNC:
		r = a->flags ? fdatasync(fd) : fsync(fd);
		break;
	case OP_FALLOCATE:
		r = fallocate(fd, a->flags, a->off, (off_t)a->len);
		break;
	}
	*err = r < 0 ? errno : 0;
	return r;
}

static void describe(char *out, size_t cap, const struct rop_args *a)
{
	static const char *names[] = {
		"open",	 "close",  "pwrite", "write",  "pread",
		"read",	 "ftrunc", "trunc",  "rename", "unlink",
		"fstat", "stat",   "lseek",  "fsync",  "fallocate",
	};
	char fl[64] = "";
	if (a->op == OP_OPEN)
		snprintf(fl, sizeof(fl), "%s%s%s%s%s",
			 (a->flags & O_ACCMODE) == O_RDONLY   ? "RDONLY"
			 : (a->flags & O_ACCMODE) == O_WRONLY ? "WRONLY"
							      : "RDWR",
			 a->flags & O_CREAT ? "|CREAT" : "",
			 a->flags & O_EXCL ? "|EXCL" : "",
			 a->flags & O_TRUNC ? "|TRUNC" : "",
			 a->flags & O_APPEND ? "|APPEND" : "");
	snprintf(out, cap,
		 "%s slot=%d f=%d->%d %s off=%lld len=%zu wh=%d fl=%x",
		 names[a->op], a->slot, a->fi, a->fj, fl, (long long)a->off,
		 a->len, a->whence, a->op == OP_OPEN ? 0 : a->flags);
}

static void rtree_init(struct rtree *t, const char *name, char *dir)
{
	t->name = name;
	t->dir = dir;
	for (int i = 0; i < NRFDS; i++)
		t->fd[i] = -1;
	t->buf = xmalloc(RMAXLEN);
}

static void test_random_plain(void)
{
	struct rtree t[2];
	rtree_init(&t[0], "mount", xasprintf("%s/posix/random", g_mnt));
	rtree_init(&t[1], "native", xasprintf("%s/random", g_native));
	CU_ASSERT_FATAL(mkdir(t[0].dir, 0755) == 0 &&
			mkdir(t[1].dir, 0755) == 0);
	const char *seed = getenv("MOUNT_SEED");
	struct rng g = {seed ? strtoull(seed, NULL, 10) : 12345};
	unsigned char *data = xmalloc(RMAXLEN);
	char hist[16][200];
	int mismatches = 0, nops = 5000;
	for (int op = 0; op < nops && mismatches < 5; op++) {
		struct rop_args a = {0};
		unsigned k = (unsigned)below(&g, 100);
		a.slot = (int)below(&g, NRFDS);
		a.fi = (int)below(&g, NRFILES);
		a.fj = (int)below(&g, NRFILES);
		bool open_slot = t[1].fd[a.slot] >= 0;
		a.op = k < 12	? OP_OPEN
		       : k < 20 ? OP_CLOSE
		       : k < 38 ? OP_PWRITE
		       : k < 44 ? OP_WRITE
		       : k < 58 ? OP_PREAD
		       : k < 63 ? OP_READ
		       : k < 68 ? OP_FTRUNCATE
		       : k < 71 ? OP_TRUNCATE
		       : k < 76 ? OP_RENAME
		       : k < 80 ? OP_UNLINK
		       : k < 85 ? OP_FSTAT
		       : k < 88 ? OP_STAT
		       : k < 93 ? OP_LSEEK
		       : k < 95 ? OP_FSYNC
				: OP_FALLOCATE;
		bool needs_fd = a.op != OP_OPEN && a.op != OP_TRUNCATE &&
				a.op != OP_RENAME && a.op != OP_UNLINK &&
				a.op != OP_STAT;
		if (needs_fd && !open_slot)
			a.op = OP_OPEN;
		else if (a.op == OP_OPEN && open_slot)
			a.op = OP_CLOSE;
		switch (a.op) {
		case OP_OPEN: {
			static const int acc[] = {O_RDONLY, O_WRONLY, O_RDWR};
			a.flags = acc[below(&g, 3)];
			if (below(&g, 100) < 65)
				a.flags |= O_CREAT;
			if (below(&g, 100) < 12)
				a.flags |= O_TRUNC;
			if (below(&g, 100) < 20)
				a.flags |= O_APPEND;
			if ((a.flags & O_CREAT) && below(&g, 100) < 10)
				a.flags |= O_EXCL;
			break;
		}
		case OP_PWRITE:
		case OP_WRITE:
			a.len = (size_t)below(&g, RMAXLEN + 1);
			a.off = (off_t)below(&g,
					     below(&g, 4) ? 262144 : 1048576);
			for (size_t i = 0; i < a.len; i++)
				data[i] = (unsigned char)rnd(&g);
			break;
		case OP_PREAD:
		case OP_READ:
			a.len = (size_t)below(&g, RMAXLEN + 1);
			a.off = (off_t)below(&g, 400000);
			break;
		case OP_FTRUNCATE:
		case OP_TRUNCATE:
			a.off = (off_t)below(&g, 400000);
			break;
		case OP_LSEEK: {
			/* No SEEK_DATA/SEEK_HOLE here: in ranges fallocate()
			 * left unwritten, ext4 answers by what its page cache
			 * holds, which differs behind a mount (reads stop at
			 * the mount's cache). test "seek" covers them. */
			static const int wh[] = {SEEK_SET, SEEK_CUR, SEEK_END};
			a.whence = wh[below(&g, 3)];
			a.off = (off_t)below(&g, 300000);
			if (a.whence == SEEK_CUR || a.whence == SEEK_END)
				a.off -= 150000;
			break;
		}
		case OP_FSYNC:
			a.flags = (int)below(&g, 2);
			break;
		case OP_FALLOCATE: {
			static const int fm[] = {0, FALLOC_FL_KEEP_SIZE,
						 FALLOC_FL_PUNCH_HOLE |
							 FALLOC_FL_KEEP_SIZE};
			a.flags = fm[below(&g, 3)];
			a.off = (off_t)below(&g, 300000);
			a.len = 1 + (size_t)below(&g, 100000);
			break;
		}
		default:
			break;
		}
		describe(hist[op % 16], sizeof(hist[0]), &a);
		long r[2];
		int e[2];
		for (int s = 0; s < 2; s++) {
			g_where = hist[op % 16];
			r[s] = run_rop(&t[s], &a, data, &e[s]);
		}
		g_where = "";
		char why[300] = "";
		if (r[0] != r[1] || e[0] != e[1])
			snprintf(why, sizeof(why),
				 "mount %ld %s, native %ld %s", r[0],
				 r[0] < 0 ? ename(e[0]) : "", r[1],
				 r[1] < 0 ? ename(e[1]) : "");
		else if ((a.op == OP_PREAD || a.op == OP_READ) && r[0] > 0 &&
			 memcmp(t[0].buf, t[1].buf, (size_t)r[0])) {
			long at = 0;
			while (t[0].buf[at] == t[1].buf[at])
				at++;
			snprintf(why, sizeof(why),
				 "read %ld bytes, first difference at %ld "
				 "(mount %02x, native %02x)",
				 r[0], at, t[0].buf[at], t[1].buf[at]);
		} else if ((a.op == OP_FSTAT || a.op == OP_STAT) && r[0] == 0 &&
			   (t[0].st.st_size != t[1].st.st_size ||
			    t[0].st.st_nlink != t[1].st.st_nlink ||
			    t[0].st.st_mode != t[1].st.st_mode))
			snprintf(why, sizeof(why),
				 "stat: mount size %lld nlink %lu mode %o, "
				 "native size %lld nlink %lu mode %o",
				 (long long)t[0].st.st_size,
				 (unsigned long)t[0].st.st_nlink,
				 t[0].st.st_mode, (long long)t[1].st.st_size,
				 (unsigned long)t[1].st.st_nlink,
				 t[1].st.st_mode);
		if (*why) {
			mismatches++;
			fprintf(stderr,
				"\n    op %d: %s: %s\n      last ops:", op,
				hist[op % 16], why);
			for (int i = op > 8 ? op - 8 : 0; i <= op; i++)
				fprintf(stderr, "\n        %d %s", i,
					hist[i % 16]);
			/* Back in step: the same fds open on both sides. */
			for (int i = 0; i < NRFDS; i++) {
				if ((t[0].fd[i] >= 0) != (t[1].fd[i] >= 0)) {
					for (int s = 0; s < 2; s++) {
						if (t[s].fd[i] >= 0)
							close(t[s].fd[i]);
						t[s].fd[i] = -1;
					}
				}
			}
		}
	}
	for (int i = 0; i < NRFDS; i++) {
		int c[2];
		for (int s = 0; s < 2; s++)
			c[s] = t[s].fd[i] >= 0 ? close(t[s].fd[i]) : 0;
		if (c[0] != c[1]) {
			mismatches++;
			fprintf(stderr,
				"\n    final close of slot %d: %d vs %d", i,
				c[0], c[1]);
		}
	}
	for (int i = 0; i < NRFILES; i++) {
		size_t l0 = 0, l1 = 0;
		char *a0 = slurp(rname(&t[0], i), &l0);
		char *a1 = slurp(rname(&t[1], i), &l1);
		if (!a0 != !a1 || (a0 && (l0 != l1 || memcmp(a0, a1, l0)))) {
			mismatches++;
			fprintf(stderr,
				"\n    r%d.bin at the end: mount %s %zu bytes, "
				"native %s %zu bytes",
				i, a0 ? "has" : "missing", l0,
				a1 ? "has" : "missing", l1);
		}
		free(a0);
		free(a1);
	}
	CU_ASSERT_EQUAL(mismatches, 0);
	for (int s = 0; s < 2; s++) {
		free(t[s].dir);
		free(t[s].buf);
	}
	free(data);
}

static size_t gen_text(struct rng *g, char *buf, size_t max)
{
	static const char *const words[] = {
		"alpha", "bravo", "charlie", "delta",  "echo",	"foxtrot",
		"golf",	 "hotel", "india",   "juliet", "kilo",	"lima",
		"mike",	 "note",  "vault",   "text",   "plain", "words",
	};
	size_t want = 1 + (size_t)below(g, max), n = 0;
	while (n < want) {
		const char *w = words[below(g, sizeof(words) / sizeof(*words))];
		for (; *w && n < want; w++)
			buf[n++] = *w;
		if (n < want) {
			unsigned k = (unsigned)below(g, 10);
			buf[n++] = k == 0 ? '\n' : k == 1 ? '.' : ' ';
		}
	}
	return n;
}

static const char *npath(const char *dir, int i)
{
	static char buf[6][PATH_MAX];
	static unsigned k;
	char *b = buf[k++ % 6];
	snprintf(b, PATH_MAX, "%s/notes/n%d.md", dir, i);
	return b;
}

/* The note in the mount, the plain folder and the vault folder. */
static bool notes_same(int i, char *why, size_t cap)
{
	size_t l[3] = {0};
	char *t[3] = {slurp(npath(g_mnt, i), &l[0]),
		      slurp(npath(g_native, i), &l[1]),
		      slurp(npath(g_vault, i), &l[2])};
	int e0 = t[0] ? 0 : errno;
	bool ok = true;
	if (!t[0] != !t[1] ||
	    (t[0] && (l[0] != l[1] || memcmp(t[0], t[1], l[0])))) {
		ok = false;
		snprintf(why, cap,
			 "n%d.md: mount %s %zu bytes, native %s %zu bytes", i,
			 t[0] ? "reads" : ename(e0), l[0],
			 t[1] ? "reads" : "missing", l[1]);
	} else if (!t[0] != !t[2] ||
		   (t[0] && (l[0] != l[2] || memcmp(t[0], t[2], l[0])))) {
		ok = false;
		snprintf(why, cap,
			 "n%d.md: mount %s %zu bytes, vault folder %s %zu "
			 "bytes",
			 i, t[0] ? "reads" : "missing", l[0],
			 t[2] ? "has" : "missing", l[2]);
	}
	struct stat s0, s1;
	int r0 = stat(npath(g_mnt, i), &s0), r1 = stat(npath(g_native, i), &s1);
	if (ok && (r0 != r1 || (r0 == 0 && s0.st_size != s1.st_size))) {
		ok = false;
		snprintf(why, cap, "n%d.md: stat size mount %lld native %lld",
			 i, r0 ? -1LL : (long long)s0.st_size,
			 r1 ? -1LL : (long long)s1.st_size);
	}
	for (int k = 0; k < 3; k++)
		free(t[k]);
	return ok;
}

/* After a mismatch: the plain folder takes what the mount shows, so the
 * checker goes on looking for new differences. */
static void note_resync(int i)
{
	size_t len = 0;
	char *t = slurp(npath(g_mnt, i), &len);
	const char *n = npath(g_native, i);
	if (!t) {
		unlink(n);
		return;
	}
	int fd = open(n, O_WRONLY | O_TRUNC | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, t, len) != (ssize_t)len) {
		}
		close(fd);
	}
	free(t);
}

static void test_random_notes(void)
{
	char *md = xasprintf("%s/notes", g_mnt);
	char *nd = xasprintf("%s/notes", g_native);
	CU_ASSERT_FATAL(mkdir(md, 0755) == 0 && mkdir(nd, 0755) == 0);
	const char *seed = getenv("MOUNT_SEED");
	struct rng g = {seed ? strtoull(seed, NULL, 10) : 12345};
	char *text = xmalloc(4096), *b0 = xmalloc(8192), *b1 = xmalloc(8192);
	char hist[16][160];
	int fd[2] = {-1, -1}, cur = -1, mismatches = 0;
	char kinds[16][32] = {{0}};
	int per_kind[16] = {0};
	for (int op = 0; op < 1000; op++) {
		unsigned k = (unsigned)below(&g, 100);
		long r[2] = {0, 0};
		int e[2] = {0, 0};
		char why[400] = "";
		bool check_data = false, readback = false;
		size_t len = 0;
		off_t off = 0;
		if (fd[1] < 0) {
			int i = (int)below(&g, 4);
			if (k < 60) {
				static const int acc[] = {O_WRONLY, O_RDWR,
							  O_WRONLY, O_RDWR,
							  O_RDONLY};
				int fl = acc[below(&g, 5)];
				if (below(&g, 100) < 70)
					fl |= O_CREAT;
				if (below(&g, 100) < 25)
					fl |= O_TRUNC;
				if (below(&g, 100) < 20)
					fl |= O_APPEND;
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "open n%d.md flags %o", i, fl);
				for (int s = 0; s < 2; s++) {
					errno = 0;
					fd[s] = open(
						npath(s ? g_native : g_mnt, i),
						fl | O_CLOEXEC, 0644);
					r[s] = fd[s] >= 0 ? 0 : -1;
					e[s] = fd[s] >= 0 ? 0 : errno;
				}
				cur = i;
			} else if (k < 90) {
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "read back n%d.md", i);
				cur = i;
				readback = true;
			} else {
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "unlink n%d.md", i);
				for (int s = 0; s < 2; s++) {
					errno = 0;
					r[s] = unlink(
						npath(s ? g_native : g_mnt, i));
					e[s] = r[s] < 0 ? errno : 0;
				}
				cur = i;
				readback = true;
			}
		} else {
			struct stat st;
			off_t size = fstat(fd[1], &st) == 0 ? st.st_size : 0;
			if (k < 28) {
				len = gen_text(&g, text, 3000);
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "write %zu", len);
				for (int s = 0; s < 2; s++) {
					errno = 0;
					r[s] = write(fd[s], text, len);
					e[s] = r[s] < 0 ? errno : 0;
				}
			} else if (k < 48) {
				len = gen_text(&g, text, 3000);
				off = (off_t)below(&g, (uint64_t)size + 1);
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "pwrite %zu at %lld", len,
					 (long long)off);
				for (int s = 0; s < 2; s++) {
					errno = 0;
					r[s] = pwrite(fd[s], text, len, off);
					e[s] = r[s] < 0 ? errno : 0;
				}
			} else if (k < 58) {
				len = 1 + (size_t)below(&g, 8000);
				off = (off_t)below(&g, (uint64_t)size + 100);
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "pread %zu at %lld", len,
					 (long long)off);
				for (int s = 0; s < 2; s++) {
					errno = 0;
					r[s] = pread(fd[s], s ? b1 : b0, len,
						     off);
					e[s] = r[s] < 0 ? errno : 0;
				}
				check_data = true;
			} else if (k < 62) {
				len = 1 + (size_t)below(&g, 8000);
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "read %zu", len);
				for (int s = 0; s < 2; s++) {
					errno = 0;
					r[s] = read(fd[s], s ? b1 : b0, len);
					e[s] = r[s] < 0 ? errno : 0;
				}
				check_data = true;
			} else if (k < 67) {
				off = (off_t)below(&g, (uint64_t)size + 1);
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "ftruncate %lld", (long long)off);
				for (int s = 0; s < 2; s++) {
					errno = 0;
					r[s] = ftruncate(fd[s], off);
					e[s] = r[s] < 0 ? errno : 0;
				}
			} else if (k < 72) {
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "fstat");
				struct stat s0, s1;
				r[0] = fstat(fd[0], &s0);
				r[1] = fstat(fd[1], &s1);
				/* fstat of a note being written shows the
				 * size being written (see note_size). */
				if (!r[0] && !r[1] && s0.st_size != s1.st_size)
					snprintf(why, sizeof(why),
						 "fstat size mount %lld native "
						 "%lld",
						 (long long)s0.st_size,
						 (long long)s1.st_size);
			} else if (k < 76) {
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "fsync");
				for (int s = 0; s < 2; s++) {
					errno = 0;
					r[s] = fsync(fd[s]);
					e[s] = r[s] < 0 ? errno : 0;
				}
			} else {
				snprintf(hist[op % 16], sizeof(hist[0]),
					 "close");
				for (int s = 0; s < 2; s++) {
					errno = 0;
					r[s] = close(fd[s]);
					e[s] = r[s] < 0 ? errno : 0;
					fd[s] = -1;
				}
				readback = true;
			}
		}
		if (!*why && (r[0] != r[1] || e[0] != e[1]))
			snprintf(why, sizeof(why),
				 "mount %ld %s, native %ld %s", r[0],
				 r[0] < 0 ? ename(e[0]) : "", r[1],
				 r[1] < 0 ? ename(e[1]) : "");
		if (!*why && check_data && r[0] > 0 &&
		    memcmp(b0, b1, (size_t)r[0])) {
			long at = 0;
			while (b0[at] == b1[at])
				at++;
			snprintf(why, sizeof(why),
				 "read %ld bytes, first difference at %ld",
				 r[0], at);
		}
		if (!*why && readback && !notes_same(cur, why, sizeof(why)))
			note_resync(cur);
		if (*why) {
			/* Go on after a mismatch; show the first few of each
			 * kind of operation. */
			mismatches++;
			size_t kl = strcspn(hist[op % 16], " 0123456789");
			int kind = 0;
			while (kind < 15 && kinds[kind][0] &&
			       strncmp(kinds[kind], hist[op % 16], kl))
				kind++;
			snprintf(kinds[kind], sizeof(kinds[0]), "%.*s", (int)kl,
				 hist[op % 16]);
			if (per_kind[kind]++ < 3) {
				fprintf(stderr,
					"\n    note op %d: %s: %s\n      last "
					"ops:",
					op, hist[op % 16], why);
				for (int i = op > 14 ? op - 14 : 0; i <= op;
				     i++)
					fprintf(stderr, "\n        %d %s", i,
						hist[i % 16]);
			}
			if ((fd[0] >= 0) != (fd[1] >= 0)) {
				for (int s = 0; s < 2; s++) {
					if (fd[s] >= 0)
						close(fd[s]);
					fd[s] = -1;
				}
			}
		}
	}
	for (int s = 0; s < 2; s++)
		if (fd[s] >= 0)
			close(fd[s]);
	for (int i = 0; i < 4; i++) {
		char why[400] = "";
		if (!notes_same(i, why, sizeof(why))) {
			mismatches++;
			fprintf(stderr, "\n    at the end: %s", why);
		}
	}
	for (int k = 0; k < 16 && kinds[k][0]; k++)
		fprintf(stderr, "\n    %d mismatches after '%s'", per_kind[k],
			kinds[k]);
	CU_ASSERT_EQUAL(mismatches, 0);
	free(text);
	free(b0);
	free(b1);
	free(md);
	free(nd);
}

/* ---- the tests ------------------------------------------------------------
 */

#define PAIR(name)                           \
	static void test_##name(void)        \
	{                                    \
		run_pair(#name, seq_##name); \
	}
PAIR(create)
PAIR(umask)
PAIR(rw)
PAIR(append)
PAIR(truncate)
PAIR(dirs)
PAIR(rename)
PAIR(link)
PAIR(symlink)
PAIR(chmod)
PAIR(chown)
PAIR(utimens)
PAIR(statfs)
PAIR(fallocate)
PAIR(flock)
PAIR(fsync)
PAIR(seek)
PAIR(unlink_open)
PAIR(readdir)
PAIR(mknod)
PAIR(big)
PAIR(mmap)
PAIR(copy_range)
PAIR(direct)

/* ---- the guard against hostile writers ----------------------------------- */

static void write_file(const char *path, const char *text);

/* A command run by sh with M and V set to the mount and the vault; its
 * exit status. */
static int shell(const char *cmd)
{
	setenv("M", g_mnt, 1);
	setenv("V", g_vault, 1);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *vpath(const char *rel)
{
	return xasprintf("%s/%s", g_vault, rel);
}

/* Put a note's text in the vault folder itself. */
static void vault_put(const char *rel, const char *text)
{
	_cleanup_free_ char *p = vpath(rel);
	write_file(p, text);
}

static void vault_expect(const char *rel, const char *want, const char *step)
{
	_cleanup_free_ char *p = vpath(rel);
	note_expect(p, want, step);
}

/*
 * A shell's `> note` opens with O_TRUNC, dup2()s onto stdout and closes
 * the first descriptor before a byte is written: the truncation and the
 * text are one write, judged once; refused, the note stays as it was.
 */
static void test_redirect(void)
{
	vault_put("Keep.md", "precious\n");
	shell("bash -c \"echo 'new #unknowntag' > $M/Keep.md\"");
	vault_expect("Keep.md", "precious\n", "bash echo > (refused)");
	shell("sh -c \"echo 'new #unknowntag' > $M/Keep.md\"");
	vault_expect("Keep.md", "precious\n", "sh echo > (refused)");
	shell("bash -c \"printf 'a\\n' > $M/Keep.md; exec 3>$M/Keep.md; "
	      "echo '#unknowntag' >&3; exec 3>&-\"");
	vault_expect("Keep.md", "a\n", "exec 3> (refused)");
	/* A child process closes its copy first, the refused rest comes
	 * after: the note stays as it was. */
	vault_put("Keep.md", "precious\n");
	shell("bash -c \"(echo ok; /bin/true; echo '#unknowntag') > "
	      "$M/Keep.md\"");
	vault_expect("Keep.md", "precious\n", "subshell (refused)");
	shell("bash -c \"(echo ok; /bin/echo '#unknowntag') > $M/Keep.md\" "
	      "2>/dev/null");
	vault_expect("Keep.md", "precious\n", "child writes (refused)");
	/* A child that exits while the shell holds the note is not the end
	 * of the text either: the note keeps its text until the shell's
	 * close (the child's exit emptied it). */
	_cleanup_free_ char *seen = xasprintf("%s/seen", g_tmp);
	_cleanup_free_ char *cmd = xasprintf(
		"bash -c 'exec 3>$M/Keep.md; /bin/true; cat $V/Keep.md >%s; "
		"echo fine >&3; exec 3>&-'",
		seen);
	CU_ASSERT_EQUAL(shell(cmd), 0);
	note_expect(seen, "precious\n", "a child's exit, the note held");
	vault_expect("Keep.md", "fine\n", "the shell's close");
	CU_ASSERT_EQUAL(shell("echo 'fine #known' > $M/Keep.md"), 0);
	vault_expect("Keep.md", "fine #known\n", "echo > (accepted)");
	shell("echo '#unknowntag' >> $M/Keep.md");
	vault_expect("Keep.md", "fine #known\n", ">> (refused)");
	CU_ASSERT_EQUAL(shell("echo more >> $M/Keep.md"), 0);
	vault_expect("Keep.md", "fine #known\nmore\n", ">> (accepted)");
	vault_put("src.txt", "copied #known\n");
	CU_ASSERT_EQUAL(shell("cat $V/src.txt > $M/Keep.md"), 0);
	vault_expect("Keep.md", "copied #known\n", "cat > (accepted)");
	shell("echo 'x #unknowntag' | tee $M/Keep.md >/dev/null 2>&1");
	vault_expect("Keep.md", "copied #known\n", "tee (refused)");
	CU_ASSERT_NOT_EQUAL(shell("sed -i 's/copied/#unknowntag/' $M/Keep.md "
				  "2>/dev/null"),
			    0);
	vault_expect("Keep.md", "copied #known\n", "sed -i (refused)");
	CU_ASSERT_EQUAL(shell("sed -i 's/copied/edited/' $M/Keep.md"), 0);
	vault_expect("Keep.md", "edited #known\n", "sed -i (accepted)");
	shell("printf '#unknowntag' | dd of=$M/Keep.md conv=notrunc "
	      "status=none 2>/dev/null");
	vault_expect("Keep.md", "edited #known\n", "dd (refused)");
	CU_ASSERT_EQUAL(shell("cp $V/src.txt $M/Keep.md"), 0);
	vault_expect("Keep.md", "copied #known\n", "cp (accepted)");
	/* A new note refused does not come into being. */
	shell("bash -c \"echo '#unknowntag' > $M/Fresh.md\"");
	_cleanup_free_ char *fresh = vpath("Fresh.md");
	CU_ASSERT(access(fresh, F_OK) < 0 && errno == ENOENT);
}

/*
 * A file opened for writing under a temporary name, renamed over a note
 * (accepted), then written again through the descriptor kept open: the
 * later bytes are judged like any write to the note.
 */
static void test_rename_open_fd(void)
{
	_cleanup_free_ char *tmp = xasprintf("%s/x.tmp", g_mnt);
	_cleanup_free_ char *note = xasprintf("%s/Renamed.md", g_mnt);
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "harmless\n", 9), 9);
	CU_ASSERT_EQUAL(rename(tmp, note), 0);
	vault_expect("Renamed.md", "harmless\n", "renamed over");
	CU_ASSERT_EQUAL(write(fd, "#forbiddentag\n", 14), 14);
	errno = 0;
	CU_ASSERT_EQUAL(close(fd), -1);
	CU_ASSERT_EQUAL(errno, EPERM);
	vault_expect("Renamed.md", "harmless\n", "write after the rename");
	/* An accepted write through it lands in the note. */
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "one\n", 4), 4);
	CU_ASSERT_EQUAL(rename(tmp, note), 0);
	CU_ASSERT_EQUAL(write(fd, "two #known\n", 11), 11);
	CU_ASSERT_EQUAL(close(fd), 0);
	vault_expect("Renamed.md", "one\ntwo #known\n", "accepted through it");
	/* A note open for writing follows its folder's rename. */
	_cleanup_free_ char *d1 = xasprintf("%s/fold1", g_mnt);
	_cleanup_free_ char *d2 = xasprintf("%s/fold2", g_mnt);
	_cleanup_free_ char *n1 = xasprintf("%s/fold1/In.md", g_mnt);
	CU_ASSERT_EQUAL(mkdir(d1, 0755), 0);
	fd = open(n1, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "inside\n", 7), 7);
	CU_ASSERT_EQUAL(fsync(fd), 0);
	CU_ASSERT_EQUAL(rename(d1, d2), 0);
	CU_ASSERT_EQUAL(write(fd, "later\n", 6), 6);
	CU_ASSERT_EQUAL(close(fd), 0);
	vault_expect("fold2/In.md", "inside\nlater\n", "after folder rename");
	_cleanup_free_ char *old = vpath("fold1");
	CU_ASSERT(access(old, F_OK) < 0);
}

/* Whether a text refused by the guard, holding token, was kept under
 * .vaultd/rejected/. */
static bool rejected_kept(const char *token)
{
	_cleanup_free_ char *dir = vpath(".vaultd/rejected");
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;
	while (d && !found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, e->d_name);
		size_t len = 0;
		_cleanup_free_ char *text = slurp(p, &len);
		found = text && strstr(text, token);
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * The same with a write-only descriptor (O_WRONLY, as node's
 * writeFileSync, python's open(..., "w") and most saves open): vaultd
 * cannot read the file through the writer's own descriptor. The
 * descriptor kept open is also what a save that closed it looks like when
 * the kernel's release of its handle (sent after close() returned) has
 * not been taken yet as the rename arrives: a refused rename answered EIO
 * then, and the refused text was not kept.
 */
static void test_rename_wronly_fd(void)
{
	_cleanup_free_ char *tmp = xasprintf("%s/.Wronly.md.tmp", g_mnt);
	_cleanup_free_ char *note = xasprintf("%s/Wronly.md", g_mnt);
	vault_put("Wronly.md", "kept #known\n");
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "bad #wronlybrandnew\n", 20), 20);
	errno = 0;
	CU_ASSERT_EQUAL(rename(tmp, note), -1);
	CU_ASSERT_EQUAL(errno, EPERM);
	vault_expect("Wronly.md", "kept #known\n", "refused rename");
	CU_ASSERT(rejected_kept("#wronlybrandnew"));
	CU_ASSERT_EQUAL(access(tmp, F_OK), 0);
	CU_ASSERT_EQUAL(close(fd), 0);
	/* Accepted: the descriptor writes through the guard from then on. */
	fd = open(tmp, O_WRONLY | O_TRUNC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "one\n", 4), 4);
	CU_ASSERT_EQUAL(rename(tmp, note), 0);
	vault_expect("Wronly.md", "one\n", "renamed over");
	CU_ASSERT_EQUAL(write(fd, "#forbiddentag\n", 14), 14);
	errno = 0;
	CU_ASSERT_EQUAL(close(fd), -1);
	CU_ASSERT_EQUAL(errno, EPERM);
	vault_expect("Wronly.md", "one\n", "write after the rename");
	/* Closed before the rename, many times over (the release races
	 * the rename): always EPERM, the note kept. */
	int eperm = 0;
	for (int i = 0; i < 50; i++) {
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_EQUAL(write(fd, "bad #wronlybrandnew\n", 20), 20);
		CU_ASSERT_EQUAL(close(fd), 0);
		errno = 0;
		eperm += rename(tmp, note) == -1 && errno == EPERM;
	}
	CU_ASSERT_EQUAL(eperm, 50);
	vault_expect("Wronly.md", "one\n", "refused renames");
	unlink(tmp);
}

/* path through the mount, read whole, is the vault folder's text:
 * never the old size over the new text (zeros past its end, or cut). */
static bool mount_shows(const char *rel, const char *step, int i)
{
	_cleanup_free_ char *mp = xasprintf("%s/%s", g_mnt, rel);
	_cleanup_free_ char *vp = vpath(rel);
	size_t ml = 0, vl = 0;
	_cleanup_free_ char *mt = slurp(mp, &ml);
	_cleanup_free_ char *vt = slurp(vp, &vl);
	bool ok = mt && vt && ml == vl && !memcmp(mt, vt, ml);
	if (!ok)
		fprintf(stderr,
			"%s, round %d: the mount read %zu bytes of %s, "
			"the folder has %zu\n",
			step, i, ml, rel, vl);
	return ok;
}

/*
 * The files vaultd replaces under a writer's request (the links a folder
 * rename rewrites elsewhere, a note an MCP tool appends to) are read
 * whole through the mount as soon as that request is answered, with
 * the kernel holding their old sizes from just before.
 */
static void test_replaced_read(void)
{
	static const char *names[] = {"RF", "RFolderLonger"};
	_cleanup_free_ char *d0 = xasprintf("%s/%s", g_mnt, names[0]);
	CU_ASSERT_EQUAL_FATAL(mkdir(d0, 0755), 0);
	_cleanup_free_ char *n0 = xasprintf("%s/N.md", d0);
	note_put(n0, "n\n");
	_cleanup_free_ char *ref = xasprintf("%s/Ref.md", g_mnt);
	note_put(ref, "[x](RF/N.md) [[RF/N]]\n");
	int bad = 0;
	for (int i = 0; i < 200 && bad < 3; i++) {
		struct stat st;
		CU_ASSERT_EQUAL(stat(ref, &st), 0); /* the kernel holds it */
		_cleanup_free_ char *a =
			xasprintf("%s/%s", g_mnt, names[i % 2]);
		_cleanup_free_ char *b =
			xasprintf("%s/%s", g_mnt, names[(i + 1) % 2]);
		CU_ASSERT_EQUAL_FATAL(rename(a, b), 0);
		bad += !mount_shows("Ref.md", "folder rename", i);
	}
	CU_ASSERT_EQUAL(bad, 0);
	const char *ctl = getenv("VAULTCTL_BIN");
	if (!ctl || access(ctl, X_OK) < 0)
		return;
	_cleanup_free_ char *ap = xasprintf("%s/Appended.md", g_mnt);
	note_put(ap, "start\n");
	bad = 0;
	for (int i = 0; i < 40 && bad < 3; i++) {
		CU_ASSERT(mount_shows("Appended.md", "before", i));
		_cleanup_free_ char *cmd = xasprintf(
			"%s --socket %s call append_note name=Appended "
			"'text=line %d' >/dev/null",
			ctl, g_sock, i);
		CU_ASSERT_EQUAL(shell(cmd), 0);
		bad += !mount_shows("Appended.md", "MCP append", i);
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/* A second name for a note is a way around the guard: refused. */
static void test_hard_links(void)
{
	_cleanup_free_ char *mn = xasprintf("%s/Linked.md", g_mnt);
	note_put(mn, "linked #known\n"); /* indexed when close() returns */
	_cleanup_free_ char *ml = xasprintf("%s/linked.txt", g_mnt);
	_cleanup_free_ char *ml2 = xasprintf("%s/Linked2.md", g_mnt);
	errno = 0;
	CU_ASSERT_EQUAL(link(mn, ml), -1);
	CU_ASSERT_EQUAL(errno, EPERM);
	errno = 0;
	CU_ASSERT_EQUAL(link(mn, ml2), -1);
	CU_ASSERT_EQUAL(errno, EPERM);
	/* Made in the vault folder: not written through the mount. */
	_cleanup_free_ char *vn = vpath("Linked.md");
	_cleanup_free_ char *vl = vpath("back.txt");
	CU_ASSERT_EQUAL(link(vn, vl), 0);
	_cleanup_free_ char *mb = xasprintf("%s/back.txt", g_mnt);
	/* Refused at open, or judged as a write to the note. */
	static const int modes[] = {O_WRONLY | O_APPEND, O_WRONLY | O_TRUNC,
				    O_RDWR};
	for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++) {
		errno = 0;
		int fd = open(mb, modes[i]);
		if (fd >= 0) {
			CU_ASSERT_EQUAL(write(fd, "#forbiddentag\n", 14), 14);
			errno = 0;
			CU_ASSERT_EQUAL(close(fd), -1);
		}
		CU_ASSERT_EQUAL(errno, EPERM);
	}
	size_t len = 0;
	char *t = slurp(mb, &len); /* reading is fine */
	ASSERT_STR_EQ(t, "linked #known\n");
	free(t);
	vault_expect("Linked.md", "linked #known\n", "after the attempts");
	/* A write through the hard link in the folder is an outside change
	 * to the note: the mount shows the note's new text. */
	FILE *f = fopen(vl, "a");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("more\n", f);
	fclose(f);
	bool seen = false;
	for (int i = 0; i < 150 && !seen; i++) {
		t = slurp(mn, &len);
		seen = t && !strcmp(t, "linked #known\nmore\n");
		free(t);
		if (!seen)
			usleep(20000);
	}
	CU_ASSERT(seen);
	unlink(vl);
}

/* Mounts of fuse.vaultd at the test's mount point, per mountinfo. */
static int vaultd_mounts(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -1;
	char line[8192];
	int n = 0;
	_cleanup_free_ char *pat = xasprintf(" %s ", g_mnt);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, pat) && strstr(line, " fuse.vaultd "))
			n++;
	fclose(f);
	return n;
}

static bool wait_mounts(int want)
{
	for (int i = 0; i < 250; i++) {
		if (vaultd_mounts() == want)
			return true;
		usleep(20000);
	}
	return false;
}

static pid_t reaper_of(pid_t daemon)
{
	DIR *d = opendir("/proc");
	pid_t found = -1;
	struct dirent *e;
	while (d && (e = readdir(d)) && found < 0) {
		char p[300], buf[512];
		snprintf(p, sizeof(p), "/proc/%s/stat", e->d_name);
		FILE *f = fopen(p, "re");
		if (!f)
			continue;
		int pid = 0, ppid = 0;
		char comm[64] = "";
		if (fgets(buf, sizeof(buf), f) &&
		    sscanf(buf, "%d (%63[^)]) %*c %d", &pid, comm, &ppid) ==
			    3 &&
		    ppid == daemon && !strcmp(comm, "vaultd-reaper"))
			found = pid;
		fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

static int start_daemon(void);
static int stop_daemon(void);

/*
 * A killed daemon leaves no mount behind (its reaper aborts and detaches
 * it); a mount left anyway (the reaper killed too) is found in mountinfo
 * and cleaned at the next start, never stacked.
 */
static void test_crash_mounts(void)
{
	CU_ASSERT_EQUAL(vaultd_mounts(), 1);
	kill(g_pid, SIGKILL);
	waitpid(g_pid, NULL, 0);
	g_pid = -1;
	CU_ASSERT(wait_mounts(0));
	CU_ASSERT_FATAL(start_daemon() == 0);
	CU_ASSERT_EQUAL(vaultd_mounts(), 1);
	pid_t r = reaper_of(g_pid);
	CU_ASSERT(r > 0);
	if (r > 0)
		kill(r, SIGKILL);
	usleep(50000);
	kill(g_pid, SIGKILL);
	waitpid(g_pid, NULL, 0);
	g_pid = -1;
	CU_ASSERT_EQUAL(vaultd_mounts(), 1); /* stale: nobody serves it */
	CU_ASSERT_FATAL(start_daemon() == 0);
	CU_ASSERT_EQUAL(vaultd_mounts(), 1);
	vault_expect("Keep.md", "copied #known\n", "after the restarts");
}

/*
 * A shell's `> note` on a mount detached under it (vaultd's stop detaches
 * the mount before its last requests are answered; so does `umount -l`):
 * the descriptor closed after the dup2() is not the end of the text, as
 * on a mounted one, though the kernel now names the file from the mount's
 * root. The note keeps its text until the last descriptor goes; it was
 * emptied by that first close.
 */
static void test_detached_writer(void)
{
	_cleanup_free_ char *p = xasprintf("%s/Detach.md", g_mnt);
	note_put(p, "kept\n");
	int fd = open(p, O_WRONLY | O_TRUNC);
	CU_ASSERT_FATAL(fd >= 0);
	int held = dup(fd);
	CU_ASSERT_FATAL(held >= 0);
	CU_ASSERT_FATAL(umount2(g_mnt, MNT_DETACH) == 0);
	CU_ASSERT_EQUAL(close(fd), 0);
	vault_expect("Detach.md", "kept\n", "a close with a descriptor left");
	CU_ASSERT_EQUAL(write(held, "new\n", 4), 4);
	CU_ASSERT_EQUAL(close(held), 0);
	vault_expect("Detach.md", "new\n", "the last close");
	/* The detached mount stopped; vaultd serves a new one. */
	CU_ASSERT_EQUAL(stop_daemon(), 0);
	CU_ASSERT_FATAL(start_daemon() == 0);
}

static void test_xattr(void)
{
	/* Skipped when the backing file system has no user xattrs. */
	char *f = xasprintf("%s/xattr-probe", g_native);
	int fd = open(f, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	int r = setxattr(f, "user.probe", "x", 1, 0);
	int e = errno;
	unlink(f);
	free(f);
	if (r < 0 && (e == ENOTSUP || e == EOPNOTSUPP)) {
		fprintf(stderr, "\n    no user xattrs here: skipped ");
		return;
	}
	run_pair("xattr", seq_xattr);
}

static void test_still_mounted(void)
{
	int st;
	CU_ASSERT_EQUAL(waitpid(g_pid, &st, WNOHANG), 0);
	struct statfs sf;
	CU_ASSERT(statfs(g_mnt, &sf) == 0 && sf.f_type == FUSE_MAGIC);
}

/* ---- the daemon -----------------------------------------------------------
 */

static void print_log(void)
{
	size_t len = 0;
	char *t = slurp(g_log, &len);
	if (!t)
		return;
	const char *from = len > 6000 ? t + len - 6000 : t;
	fprintf(stderr, "---- vaultd log (%s) ----\n%s\n----\n", g_log, from);
	free(t);
}

static bool fuse_mounted(const char *path)
{
	struct statfs sf;
	if (statfs(path, &sf) == 0)
		return sf.f_type == FUSE_MAGIC;
	return errno == ENOTCONN;
}

static int start_daemon(void)
{
	const char *bin = getenv("VAULTD_BIN");
	_cleanup_free_ char *fallback = NULL;
	if (!bin || !*bin) {
		char exe[PATH_MAX];
		ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (l < 0)
			return -1;
		exe[l] = 0;
		fallback = xasprintf("%s/../fs/vaultd", dirname(exe));
		bin = fallback;
	}
	if (access(bin, X_OK) < 0) {
		fprintf(stderr, "vaultd binary %s: %s\n", bin, strerror(errno));
		return -1;
	}
	g_pid = fork();
	if (g_pid < 0)
		return -1;
	if (g_pid == 0) {
		setenv("XDG_RUNTIME_DIR", g_tmp, 1);
		setenv("HOME", g_tmp, 1);
		int log = open(g_log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (log >= 0) {
			dup2(log, STDOUT_FILENO);
			dup2(log, STDERR_FILENO);
		}
		execl(bin, "vaultd", "--vault", g_vault, "--mount", g_mnt, "-f",
		      "--socket", g_sock, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1500; i++) {
		int st;
		if (waitpid(g_pid, &st, WNOHANG) == g_pid) {
			fprintf(stderr, "vaultd exited before mounting (%d)\n",
				WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			g_pid = -1;
			return -1;
		}
		struct statfs sf;
		if (statfs(g_mnt, &sf) == 0 && sf.f_type == FUSE_MAGIC)
			return 0;
		usleep(20000);
	}
	fprintf(stderr, "vaultd did not mount within 30 s\n");
	return -1;
}

static int stop_daemon(void)
{
	int rc = 0;
	if (g_pid > 0) {
		kill(g_pid, SIGTERM);
		int st = 0, i;
		for (i = 0; i < 1000; i++) {
			if (waitpid(g_pid, &st, WNOHANG) == g_pid)
				break;
			usleep(20000);
		}
		if (i == 1000) {
			fprintf(stderr, "vaultd did not stop on SIGTERM\n");
			kill(g_pid, SIGKILL);
			waitpid(g_pid, &st, 0);
			rc = -1;
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "vaultd ended with status %d%s\n",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
				WIFEXITED(st) ? "" : " (signal)");
			rc = -1;
		}
		g_pid = -1;
	}
	if (fuse_mounted(g_mnt)) {
		fprintf(stderr, "%s still mounted: detaching it\n", g_mnt);
		rc = -1;
		if (umount2(g_mnt, MNT_DETACH) < 0) {
			pid_t p = fork();
			if (p == 0) {
				execlp("fusermount3", "fusermount3", "-u", "-z",
				       g_mnt, (char *)NULL);
				_exit(127);
			}
			if (p > 0)
				waitpid(p, NULL, 0);
		}
	}
	return rc;
}

static void on_alarm(int sig)
{
	static const char m[] = "\ntest_mount: timed out in: ";
	if (write(STDERR_FILENO, m, sizeof(m) - 1) < 0 ||
	    write(STDERR_FILENO, g_where, strlen(g_where)) < 0 ||
	    write(STDERR_FILENO, "\n", 1) < 0) {
	}
	if (g_pid > 0)
		kill(g_pid, SIGKILL);
	umount2(g_mnt, MNT_DETACH);
	_exit(1);
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		abort();
	}
	fputs(text, f);
	fclose(f);
}

int main(void)
{
	if (access("/dev/fuse", F_OK) < 0) {
		fprintf(stderr, "no /dev/fuse: skipped\n");
		return 77;
	}
	int fusefd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fusefd < 0) {
		fprintf(stderr, "/dev/fuse: %s: skipped\n", strerror(errno));
		return 77;
	}
	close(fusefd);

	const char *tmp = getenv("TMPDIR");
	g_tmp = xasprintf("%s/vaultd-mount-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(g_tmp)) {
		perror("mkdtemp");
		return 1;
	}
	g_vault = xasprintf("%s/vault", g_tmp);
	g_mnt = xasprintf("%s/mnt", g_tmp);
	g_native = xasprintf("%s/native", g_tmp);
	g_sock = xasprintf("%s/s.sock", g_tmp);
	g_log = xasprintf("%s/vaultd.log", g_tmp);
	mkdir(g_vault, 0755);
	_cleanup_free_ char *dot = xasprintf("%s/.obsidian", g_vault);
	mkdir(dot, 0755);
	mkdir(g_mnt, 0755);
	mkdir(g_native, 0755);
	char *p = xasprintf("%s/a.md", g_vault);
	write_file(p, "hello\n");
	free(p);
	p = xasprintf("%s/b.md", g_vault);
	write_file(p, "world\n\nSee [[a]].\n");
	free(p);
	/* A vault with a tag: unknown tags are refused. */
	p = xasprintf("%s/tagged.md", g_vault);
	write_file(p, "#known\n");
	free(p);

	int rc = 1;
	if (start_daemon() < 0) {
		print_log();
		stop_daemon();
		goto out;
	}
	p = xasprintf("%s/posix", g_mnt);
	if (mkdir(p, 0755) < 0) {
		perror(p);
		free(p);
		stop_daemon();
		print_log();
		goto out;
	}
	free(p);

	static const struct test_case tests[] = {
		{"note_read", test_note_read},
		{"create", test_create},
		{"umask", test_umask},
		{"rw", test_rw},
		{"append", test_append},
		{"truncate", test_truncate},
		{"dirs", test_dirs},
		{"rename", test_rename},
		{"link", test_link},
		{"symlink", test_symlink},
		{"chmod", test_chmod},
		{"chown", test_chown},
		{"utimens", test_utimens},
		{"statfs", test_statfs},
		{"xattr", test_xattr},
		{"fallocate", test_fallocate},
		{"flock", test_flock},
		{"fsync", test_fsync},
		{"seek", test_seek},
		{"unlink_open", test_unlink_open},
		{"readdir", test_readdir},
		{"mknod", test_mknod},
		{"big", test_big},
		{"mmap", test_mmap},
		{"copy_range", test_copy_range},
		{"direct", test_direct},
		{"random_plain", test_random_plain},
		{"note_readback", test_note_readback},
		{"note_size", test_note_size},
		{"note_big", test_note_big},
		{"random_notes", test_random_notes},
		{"redirect", test_redirect},
		{"rename_open_fd", test_rename_open_fd},
		{"rename_wronly_fd", test_rename_wronly_fd},
		{"hard_links", test_hard_links},
		{"replaced_read", test_replaced_read},
		{"still_mounted", test_still_mounted},
		{"crash_mounts", test_crash_mounts},
		{"detached_writer", test_detached_writer},
		{"still_mounted_after", test_still_mounted},
	};
	signal(SIGALRM, on_alarm);
	alarm(540);
	rc = run_tests("mount", tests, sizeof(tests) / sizeof(*tests));
	alarm(0);
	if (stop_daemon() < 0)
		rc = 1;
	if (rc)
		print_log();
out:
	if (!getenv("KEEP_TEST_VAULTS") && !fuse_mounted(g_mnt))
		nftw(g_tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	else
		fprintf(stderr, "kept %s\n", g_tmp);
	return rc;
}
