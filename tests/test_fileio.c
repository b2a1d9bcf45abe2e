/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for common/engine/fileio.h, util.h string helpers, json.h and
 * u8.h. */
#include "testutil.h"
#include "fileio.h"
#include "json.h"
#include "u8.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utf8proc.h>

#define NFC_CAFE "Caf\xc3\xa9"
#define NFD_CAFE "Cafe\xcc\x81"

/* ---- helpers ------------------------------------------------------------ */

static int open_root(struct tvault *t)
{
	int fd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	return fd;
}

static int pc(const char *path, char **norm)
{
	const char *msg = NULL;
	*norm = NULL;
	int r = path_check(path, norm, &msg);
	if (r < 0) {
		CU_ASSERT_PTR_NOT_NULL(msg);
		CU_ASSERT_PTR_NULL(*norm);
	}
	return r;
}

static void expect_refused(const char *path)
{
	char *norm;
	int r = pc(path, &norm);
	if (r >= 0)
		fprintf(stderr, "\n    path_check accepted [%s] -> [%s] ", path,
			norm);
	CU_ASSERT_TRUE(r < 0);
	free(norm);
}

static void expect_norm(const char *path, const char *want)
{
	char *norm;
	CU_ASSERT_EQUAL(pc(path, &norm), 0);
	ASSERT_STR_EQ(norm, want);
	free(norm);
}

/* Names in a folder of the vault, sorted, joined by ' '. */
static char *list_dir(struct tvault *t, const char *rel)
{
	char *p = xasprintf("%s/%s", t->dir, rel);
	DIR *d = opendir(p);
	free(p);
	if (!d)
		return NULL;
	struct ptrvec names = {0};
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			pv_push(&names, xstrdup(e->d_name));
	closedir(d);
	for (size_t i = 0; i < names.n; i++)
		for (size_t j = i + 1; j < names.n; j++)
			if (strcmp(names.v[i], names.v[j]) > 0) {
				void *x = names.v[i];
				names.v[i] = names.v[j];
				names.v[j] = x;
			}
	struct sbuf b = {0};
	for (size_t i = 0; i < names.n; i++) {
		if (i)
			sb_putc(&b, ' ');
		sb_puts(&b, names.v[i]);
		free(names.v[i]);
	}
	pv_free(&names);
	return sb_steal(&b);
}

static int wr(int root, const char *rel, const char *text, unsigned flags)
{
	return file_write_atomic(root, rel, text, strlen(text), flags, NULL);
}

/* ---- path_check ------------------------------------------------------------
 */

static void test_path_check_refuses(void)
{
	expect_refused("");
	expect_refused("/abs");
	expect_refused("/");
	expect_refused("~x");
	expect_refused("~/notes/a.md");
	expect_refused("a/../b");
	expect_refused("..");
	expect_refused("../a.md");
	expect_refused("a/..");
	expect_refused("a\\b");
	expect_refused("a\x01"
		       "b");
	expect_refused("a\nb");
	expect_refused("a\tb");
	expect_refused("a\x7f");
	expect_refused("\xff.md");
	expect_refused("a/\xc3");	   /* truncated */
	expect_refused("\xc0\xaf.md");	   /* overlong '/' */
	expect_refused("\xed\xa0\x80.md"); /* surrogate */
	expect_refused(".");
	expect_refused("./");
	expect_refused("//");
	char longc[300];
	memset(longc, 'x', 256);
	strcpy(longc + 256, ".md");
	expect_refused(longc);
	/* Folders nested deeper than anyone uses (a watcher walks them). */
	struct sbuf deep = {0};
	for (int i = 0; i < PATH_MAX_DEPTH; i++)
		sb_puts(&deep, "d/");
	sb_puts(&deep, "n.md");
	expect_refused(deep.s);
	const char *shallower = deep.s + 2; /* one level less: fine */
	char *dn = NULL;
	CU_ASSERT_EQUAL(pc(shallower, &dn), 0);
	free(dn);
	sb_free(&deep);
	char *longp = xmalloc(5000);
	for (int i = 0; i < 4998; i++)
		longp[i] = (i % 10 == 9) ? '/' : 'a';
	longp[4998] = 'b';
	longp[4999] = 0;
	expect_refused(longp);
	free(longp);
	/* 255 bytes is the limit, not over it. */
	char ok[300];
	memset(ok, 'y', 252);
	strcpy(ok + 252, ".md");
	char *norm;
	CU_ASSERT_EQUAL(pc(ok, &norm), 0);
	free(norm);
}

static void test_path_check_normalises(void)
{
	expect_norm("./a//b/", "a/b");
	expect_norm("a/./b.md", "a/b.md");
	expect_norm("a.md", "a.md");
	expect_norm("dir/" NFD_CAFE ".md", "dir/" NFC_CAFE ".md");
	expect_norm("...md", "...md");
	expect_norm("a/..b/c", "a/..b/c");
	expect_norm(".hidden/x", ".hidden/x");
	expect_norm("日本/ノート.md", "日本/ノート.md");
}

/* ---- beneath_open ----------------------------------------------------------
 */

static void test_beneath_open_escapes(void)
{
	struct tvault t;
	tv_init(&t);
	int root = open_root(&t);
	tv_write(&t, "real/f.md", "x");
	CU_ASSERT_EQUAL(symlinkat("/etc", root, "esc"), 0);
	CU_ASSERT_EQUAL(symlinkat("/etc/passwd", root, "pw"), 0);
	CU_ASSERT_EQUAL(symlinkat("..", root, "up"), 0);
	CU_ASSERT_EQUAL(symlinkat("real/../../x", root, "up2"), 0);

	static const char *const bad[] = {
		"esc/passwd",	"pw",	       "up/x", "up2", "../x",
		"real/../../x", "/etc/passwd", "..",   "",    "esc/",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int fd = beneath_open(root, bad[i], O_RDONLY, 0);
		if (fd >= 0) {
			fprintf(stderr, "\n    beneath_open opened [%s] ",
				bad[i]);
			close(fd);
		}
		CU_ASSERT_TRUE(fd < 0);
	}
	/* Creating through an escaping link is refused too. */
	int fd = beneath_open(root, "esc/vaultd-test-should-not-exist",
			      O_WRONLY | O_CREAT, 0644);
	CU_ASSERT_TRUE(fd < 0);
	if (fd >= 0)
		close(fd);
	/* Inside paths open. */
	fd = beneath_open(root, "real/f.md", O_RDONLY, 0);
	CU_ASSERT_TRUE(fd >= 0);
	if (fd >= 0)
		close(fd);
	char *buf = NULL;
	size_t len;
	CU_ASSERT_TRUE(file_read(root, "pw", 1 << 20, &buf, &len, NULL) < 0);
	CU_ASSERT_TRUE(
		file_read(root, "esc/passwd", 1 << 20, &buf, &len, NULL) < 0);
	CU_ASSERT_PTR_NULL(buf);
	close(root);
	tv_close(&t);
}

static void test_write_through_symlink_refused(void)
{
	struct tvault t, out;
	tv_init(&t);
	tv_init(&out);
	tv_write(&out, "target.md", "outside\n");
	int root = open_root(&t);
	CU_ASSERT_EQUAL(symlinkat(out.dir, root, "out"), 0);
	char *lnk = xasprintf("%s/target.md", out.dir);
	CU_ASSERT_EQUAL(symlinkat(lnk, root, "link.md"), 0);
	free(lnk);

	CU_ASSERT_TRUE(wr(root, "out/x.md", "x", 0) < 0);
	CU_ASSERT_TRUE(wr(root, "out/sub/x.md", "x", WRITE_MKDIRS) < 0);
	CU_ASSERT_TRUE(wr(root, "link.md", "replaced", 0) < 0);
	CU_ASSERT_TRUE(file_rename(root, "out/target.md", "stolen.md", false,
				   false) < 0);
	CU_ASSERT_TRUE(file_unlink(root, "out/target.md") < 0);
	char *names = list_dir(&out, ".");
	ASSERT_STR_EQ(names, "target.md");
	free(names);
	char *c = tv_read(&out, "target.md");
	ASSERT_STR_EQ(c, "outside\n");
	free(c);
	close(root);
	tv_close(&t);
	tv_close(&out);
}

/* ---- file_write_atomic / file_read / file_rename ----------------------------
 */

static void test_write_mkdirs(void)
{
	struct tvault t;
	tv_init(&t);
	int root = open_root(&t);
	CU_ASSERT_EQUAL(wr(root, "x/y.md", "no dirs", 0), -ENOENT);
	CU_ASSERT_FALSE(tv_exists(&t, "x"));
	struct stat st;
	CU_ASSERT_EQUAL(file_write_atomic(root, "a/b/c.md", "hello", 5,
					  WRITE_MKDIRS, &st),
			0);
	CU_ASSERT_EQUAL(st.st_size, 5);
	CU_ASSERT_TRUE(S_ISREG(st.st_mode));
	char *c = tv_read(&t, "a/b/c.md");
	ASSERT_STR_EQ(c, "hello");
	free(c);
	/* Existing folders are fine. */
	CU_ASSERT_EQUAL(wr(root, "a/b/d.md", "", WRITE_MKDIRS), 0);
	CU_ASSERT_EQUAL(file_mkdirs(root, "p/q/r"), 0);
	CU_ASSERT_TRUE(tv_exists(&t, "p/q/r"));
	/* A file where a folder should be. */
	CU_ASSERT_TRUE(wr(root, "a/b/c.md/e.md", "x", WRITE_MKDIRS) < 0);
	close(root);
	tv_close(&t);
}

static void test_write_keeps_mode(void)
{
	struct tvault t;
	tv_init(&t);
	int root = open_root(&t);
	mode_t old = umask(022);
	CU_ASSERT_EQUAL(wr(root, "m.md", "one", 0), 0);
	char *p = xasprintf("%s/m.md", t.dir);
	struct stat st;
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0644);
	CU_ASSERT_EQUAL(chmod(p, 0600), 0);
	CU_ASSERT_EQUAL(wr(root, "m.md", "two", 0), 0);
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
	CU_ASSERT_EQUAL(chmod(p, 0640), 0);
	CU_ASSERT_EQUAL(wr(root, "m.md", "three", 0), 0);
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0640);
	char *c = tv_read(&t, "m.md");
	ASSERT_STR_EQ(c, "three");
	free(c);
	umask(old);
	free(p);
	close(root);
	tv_close(&t);
}

static void test_write_noreplace(void)
{
	struct tvault t;
	tv_init(&t);
	int root = open_root(&t);
	CU_ASSERT_EQUAL(wr(root, "n.md", "first", WRITE_NOREPLACE), 0);
	CU_ASSERT_EQUAL(wr(root, "n.md", "second", WRITE_NOREPLACE), -EEXIST);
	char *c = tv_read(&t, "n.md");
	ASSERT_STR_EQ(c, "first");
	free(c);
	/* A folder is never replaced by a file. */
	CU_ASSERT_EQUAL(file_mkdirs(root, "dir"), 0);
	CU_ASSERT_TRUE(wr(root, "dir", "x", 0) < 0);
	close(root);
	tv_close(&t);
}

static void test_write_no_temp_left(void)
{
	struct tvault t;
	tv_init(&t);
	int root = open_root(&t);
	for (int i = 0; i < 20; i++) {
		char *s = xasprintf("version %d\n", i);
		CU_ASSERT_EQUAL(wr(root, "f/note.md", s, WRITE_MKDIRS), 0);
		free(s);
	}
	CU_ASSERT_EQUAL(wr(root, "f/note.md", "x", WRITE_NOREPLACE), -EEXIST);
	CU_ASSERT_EQUAL(wr(root, "f/other.md", "", 0), 0);
	CU_ASSERT_TRUE(wr(root, "f/missing/x.md", "", 0) < 0);
	char *names = list_dir(&t, "f");
	ASSERT_STR_EQ(names, "note.md other.md");
	free(names);
	names = list_dir(&t, ".");
	ASSERT_STR_EQ(names, "f");
	free(names);
	char *c = tv_read(&t, "f/note.md");
	ASSERT_STR_EQ(c, "version 19\n");
	free(c);
	close(root);
	tv_close(&t);
}

/* How many names in a folder of the vault are vaultd temp files. */
static size_t temps_in(struct tvault *t, const char *rel)
{
	char *p = xasprintf("%s/%s", t->dir, rel);
	DIR *d = opendir(p);
	free(p);
	size_t n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += file_is_temp(e->d_name);
	if (d)
		closedir(d);
	return n;
}

static ino_t ino_of(struct tvault *t, const char *rel)
{
	char *p = xasprintf("%s/%s", t->dir, rel);
	struct stat st;
	int r = stat(p, &st);
	free(p);
	return r == 0 ? st.st_ino : 0;
}

static void test_batch(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "a.md", "a0");
	tv_write(&t, "d/b.md", "b0");
	tv_write(&t, "d/c.md", "c0");
	tv_write(&t, "e/f.md", "f0");
	char *bp = xasprintf("%s/d/b.md", t.dir);
	CU_ASSERT_EQUAL(chmod(bp, 0640), 0);
	int root = open_root(&t);

	/* Written and synced beside each file: nothing visible changed. */
	struct file_batch *b = file_batch_new(root, NULL);
	static const char *const rel[] = {"d/c.md", "a.md", "e/f.md", "d/b.md"};
	static const char *const text[] = {"c1", "a1", "f1", "b1"};
	for (size_t i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(file_batch_add(b, rel[i], text[i], 2), 0);
	size_t bad = 99;
	CU_ASSERT_EQUAL(file_batch_sync(b, &bad), 0);
	CU_ASSERT_EQUAL(temps_in(&t, "d"), 2);
	CU_ASSERT_EQUAL(temps_in(&t, "."), 1);
	char *c = tv_read(&t, "d/b.md");
	ASSERT_STR_EQ(c, "b0");
	free(c);
	struct stat st;
	CU_ASSERT_EQUAL(file_batch_result(b, 0, &st), -EAGAIN);

	/* Applied: every file new, its mode kept, nothing else left. */
	CU_ASSERT_EQUAL(file_batch_apply(b), 0);
	for (size_t i = 0; i < 4; i++) {
		c = tv_read(&t, rel[i]);
		ASSERT_STR_EQ(c, text[i]);
		free(c);
		CU_ASSERT_EQUAL(file_batch_result(b, i, &st), 0);
		CU_ASSERT_EQUAL(st.st_ino, ino_of(&t, rel[i]));
		CU_ASSERT_EQUAL(st.st_size, 2);
	}
	struct stat bst;
	CU_ASSERT_EQUAL(stat(bp, &bst), 0);
	CU_ASSERT_EQUAL(bst.st_mode & 07777, 0640);
	file_batch_free(b);
	char *names = list_dir(&t, "d");
	ASSERT_STR_EQ(names, "b.md c.md");
	free(names);
	CU_ASSERT_EQUAL(temps_in(&t, "."), 0);
	CU_ASSERT_EQUAL(temps_in(&t, "e"), 0);

	/* Not applied: the temp files go, the files stay as they were. */
	b = file_batch_new(root, NULL);
	CU_ASSERT_EQUAL(file_batch_add(b, "a.md", "a2", 2), 0);
	CU_ASSERT_EQUAL(file_batch_add(b, "d/b.md", "b2", 2), 0);
	/* A folder that is not there: refused, the others unharmed. */
	CU_ASSERT_EQUAL(file_batch_add(b, "gone/x.md", "x", 1), -ENOENT);
	file_batch_free(b);
	CU_ASSERT_EQUAL(temps_in(&t, "."), 0);
	CU_ASSERT_EQUAL(temps_in(&t, "d"), 0);
	c = tv_read(&t, "a.md");
	ASSERT_STR_EQ(c, "a1");
	free(c);

	/* One file that cannot be replaced (a folder took its name after
	 * it was prepared): the others are, and its temp file goes. */
	b = file_batch_new(root, NULL);
	CU_ASSERT_EQUAL(file_batch_add(b, "d/b.md", "b3", 2), 0);
	CU_ASSERT_EQUAL(file_batch_add(b, "d/c.md", "c3", 2), 0);
	CU_ASSERT_EQUAL(file_batch_add(b, "e/f.md", "f3", 2), 0);
	CU_ASSERT_EQUAL(file_batch_sync(b, &bad), 0);
	char *cp = xasprintf("%s/d/c.md", t.dir);
	CU_ASSERT_EQUAL(unlink(cp), 0);
	CU_ASSERT_EQUAL(mkdir(cp, 0755), 0);
	tv_write(&t, "d/c.md/inside", "keep");
	int r = file_batch_apply(b);
	CU_ASSERT_TRUE(r == -EISDIR || r == -ENOTEMPTY || r == -EEXIST);
	CU_ASSERT_EQUAL(file_batch_result(b, 1, &st), r);
	CU_ASSERT_EQUAL(file_batch_result(b, 0, &st), 0);
	CU_ASSERT_EQUAL(file_batch_result(b, 2, &st), 0);
	file_batch_free(b);
	c = tv_read(&t, "d/b.md");
	ASSERT_STR_EQ(c, "b3");
	free(c);
	c = tv_read(&t, "e/f.md");
	ASSERT_STR_EQ(c, "f3");
	free(c);
	c = tv_read(&t, "d/c.md/inside");
	ASSERT_STR_EQ(c, "keep");
	free(c);
	CU_ASSERT_EQUAL(temps_in(&t, "d"), 0);
	free(cp);
	free(bp);
	close(root);
	tv_close(&t);
}

/* A batch whose files' folder is renamed before it is applied (a folder
 * rename): the temp files moved with it, and the batch follows. */
static void test_batch_folder_moved(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "d/sub/a.md", "a0");
	tv_write(&t, "d/b.md", "b0");
	tv_write(&t, "dx/c.md", "c0");
	tv_write(&t, "out.md", "o0");
	int root = open_root(&t);
	struct file_batch *b = file_batch_new(root, NULL);
	CU_ASSERT_EQUAL(file_batch_add(b, "out.md", "o1", 2), 0);
	CU_ASSERT_EQUAL(file_batch_add(b, "d/sub/a.md", "a1", 2), 0);
	CU_ASSERT_EQUAL(file_batch_add(b, "d/b.md", "b1", 2), 0);
	CU_ASSERT_EQUAL(file_batch_add(b, "dx/c.md", "c1", 2), 0);
	size_t bad;
	CU_ASSERT_EQUAL(file_batch_sync(b, &bad), 0);
	CU_ASSERT_EQUAL(file_rename(root, "d", "n/e", true, true), 0);
	file_batch_moved(b, "d", "n/e");
	CU_ASSERT_EQUAL(file_batch_apply(b), 0);
	struct stat st;
	for (size_t i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(file_batch_result(b, i, &st), 0);
	static const char *const want[][2] = {
		{"out.md", "o1"},
		{"n/e/sub/a.md", "a1"},
		{"n/e/b.md", "b1"},
		{"dx/c.md", "c1"}, /* "d" is no prefix of "dx" */
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		char *c = tv_read(&t, want[i][0]);
		ASSERT_STR_EQ(c, want[i][1]);
		free(c);
	}
	CU_ASSERT(!tv_exists(&t, "d"));
	CU_ASSERT_EQUAL(temps_in(&t, "n/e"), 0);
	CU_ASSERT_EQUAL(temps_in(&t, "n/e/sub"), 0);
	file_batch_free(b);
	close(root);
	tv_close(&t);
}

/* A file over the size limit (RLIMIT_FSIZE) cannot be written: -EFBIG. */
static void test_batch_write_fails(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "a.md", "a0");
	tv_write(&t, "b.md", "b0");
	int root = open_root(&t);
	struct rlimit old;
	CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_FSIZE, &old), 0);
	void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
	struct rlimit lim = {4096, old.rlim_max};
	CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_FSIZE, &lim), 0);
	char big[8192];
	memset(big, 'x', sizeof(big));
	struct file_batch *b = file_batch_new(root, NULL);
	CU_ASSERT_EQUAL(file_batch_add(b, "a.md", "a1", 2), 0);
	CU_ASSERT_EQUAL(file_batch_add(b, "b.md", big, sizeof(big)), -EFBIG);
	/* One write alone fails the same way, and leaves nothing. */
	CU_ASSERT_EQUAL(
		file_write_atomic(root, "b.md", big, sizeof(big), 0, NULL),
		-EFBIG);
	CU_ASSERT_EQUAL(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, oldsig);
	file_batch_free(b);
	CU_ASSERT_EQUAL(temps_in(&t, "."), 0);
	char *c = tv_read(&t, "a.md");
	ASSERT_STR_EQ(c, "a0");
	free(c);
	c = tv_read(&t, "b.md");
	ASSERT_STR_EQ(c, "b0");
	free(c);
	close(root);
	tv_close(&t);
}

/* The spares the pool has made (inode numbers), waiting up to 5 s for
 * at least one. */
static size_t spares(struct tvault *t, ino_t *ret, size_t max)
{
	char *p = xasprintf("%s/.vaultd/spare", t->dir);
	size_t n = 0;
	for (int i = 0; i < 500 && !n; i++) {
		DIR *d = opendir(p);
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (!strncmp(e->d_name, "spare-", 6) && n < max)
				ret[n++] = e->d_ino;
		if (d)
			closedir(d);
		if (!n)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	free(p);
	return n;
}

#define POOL_SCAN 256

static bool has_ino(const ino_t *v, size_t n, ino_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == ino)
			return true;
	return false;
}

/* The stat of the spare whose inode is ino. */
static bool spare_stat(struct tvault *t, ino_t ino, struct stat *ret)
{
	char *p = xasprintf("%s/.vaultd/spare", t->dir);
	DIR *d = opendir(p);
	struct dirent *e;
	bool found = false;
	while (d && !found && (e = readdir(d)))
		found = e->d_ino == ino &&
			fstatat(dirfd(d), e->d_name, ret, 0) == 0;
	if (d)
		closedir(d);
	free(p);
	return found;
}

/* The spares, once there are at least want of them (up to 5 s). */
static size_t spares_at_least(struct tvault *t, ino_t *ret, size_t max,
			      size_t want)
{
	size_t n = 0;
	for (int i = 0; i < 500 && n < want; i++) {
		n = spares(t, ret, max);
		if (n < want)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	return n;
}

/* Whether rel's mode becomes mode (or, mode 0, rel goes) within 5 s:
 * the pool's thread takes the spares an earlier run left. */
static bool becomes(struct tvault *t, const char *rel, mode_t mode)
{
	char *p = xasprintf("%s/%s", t->dir, rel);
	bool ok = false;
	for (int i = 0; i < 500 && !ok; i++) {
		struct stat st;
		int r = stat(p, &st);
		ok = mode ? r == 0 && (st.st_mode & 07777) == mode : r < 0;
		if (!ok)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	free(p);
	return ok;
}

/* Whether the file ino in the spare folder becomes a spare (kept: mode
 * 0600) or goes (!kept) within 5 s: the pool's thread looks at what
 * writes give back. */
static bool spare_settles(struct tvault *t, ino_t ino, bool kept)
{
	for (int i = 0; i < 500; i++) {
		struct stat sp;
		bool there = spare_stat(t, ino, &sp);
		if (kept ? there && (sp.st_mode & 07777) == 0600 : !there)
			return true;
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	return false;
}

static bool in_use_of(void *ud, dev_t dev, ino_t ino)
{
	(void)dev;
	return *(ino_t *)ud == ino;
}

static void test_spare_writes(void)
{
	struct tvault t;
	tv_init(&t);
	int root = open_root(&t);
	/* No .vaultd: no spares, writes as ever. */
	CU_ASSERT_PTR_NULL(file_pool_new(root));
	/* One a killed vaultd left (a text in it) is a spare again, open
	 * to vaultd alone. */
	tv_write(&t, ".vaultd/spare/spare-999999-ab", "left");
	tv_write(&t, "m.md", "zero");
	char *mp = xasprintf("%s/m.md", t.dir);
	CU_ASSERT_EQUAL(chmod(mp, 0640), 0);
	struct file_pool *pool = file_pool_new(root);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	CU_ASSERT_TRUE(becomes(&t, ".vaultd/spare/spare-999999-ab", 0600));
	/* Taken, then new ones made up to the pool's 16: all of them in
	 * the pool, none made after. */
	ino_t made[64];
	size_t n = spares_at_least(&t, made, 64, 16);
	CU_ASSERT_TRUE(n >= 16);

	/* A note replaced through a spare: its text, its mode, the stat
	 * handed back, no temp file beside it. */
	struct stat st, now;
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", "one", 3, 0, &st),
			0);
	char *c = tv_read(&t, "m.md");
	ASSERT_STR_EQ(c, "one");
	free(c);
	CU_ASSERT_EQUAL(stat(mp, &now), 0);
	CU_ASSERT_EQUAL(now.st_mode & 07777, 0640);
	CU_ASSERT_EQUAL(now.st_ino, st.st_ino);
	CU_ASSERT_EQUAL(now.st_size, 3);
	CU_ASSERT_EQUAL(now.st_mtim.tv_sec, st.st_mtim.tv_sec);
	CU_ASSERT_EQUAL(now.st_mtim.tv_nsec, st.st_mtim.tv_nsec);
	bool spare = false;
	for (size_t i = 0; i < n; i++)
		spare |= made[i] == now.st_ino;
	CU_ASSERT_TRUE(spare);
	CU_ASSERT_EQUAL(temps_in(&t, "."), 0);

	/* A new note's empty file is an empty spare put in its place:
	 * made now, 0600 until its maker sets the mode; a name that exists
	 * stays. */
	ino_t were[POOL_SCAN];
	size_t nw = spares(&t, were, POOL_SCAN);
	int pfd = file_pool_place(pool, root, "placed.md");
	CU_ASSERT_TRUE_FATAL(pfd >= 0);
	CU_ASSERT_EQUAL(fstat(pfd, &st), 0);
	close(pfd);
	CU_ASSERT_EQUAL(st.st_size, 0);
	CU_ASSERT_EQUAL(st.st_nlink, 1);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
	CU_ASSERT_TRUE(has_ino(were, nw, st.st_ino));
	CU_ASSERT_EQUAL(ino_of(&t, "placed.md"), st.st_ino);
	CU_ASSERT_TRUE(time(NULL) - st.st_mtim.tv_sec < 5);
	CU_ASSERT_EQUAL(file_pool_place(pool, root, "m.md"), -EEXIST);
	c = tv_read(&t, "m.md");
	ASSERT_STR_EQ(c, "one");
	free(c);
	char *placed = xasprintf("%s/placed.md", t.dir);
	CU_ASSERT_EQUAL(unlink(placed), 0);
	free(placed);

	/* A new note is made in its folder; NOREPLACE still holds. */
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "n/new.md", "new", 3,
					  WRITE_MKDIRS | WRITE_NOREPLACE, NULL),
			0);
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", "x", 1,
					  WRITE_NOREPLACE, NULL),
			-EEXIST);
	for (int i = 0; i < 40; i++) {
		char *s = xasprintf("version %d", i);
		CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", s,
						  strlen(s), 0, NULL),
				0);
		free(s);
	}
	c = tv_read(&t, "m.md");
	ASSERT_STR_EQ(c, "version 39");
	free(c);
	char *names = list_dir(&t, ".");
	ASSERT_STR_EQ(names, ".vaultd m.md n");
	free(names);

	/* The file a write replaced becomes a spare (mode 0600) when
	 * nothing holds it: no inode made or freed. One held open, or in
	 * use by vaultd elsewhere, is removed as a rename over it would. */
	/* A big file is not kept: a spare keeps its blocks. */
	char *big = xmalloc(40000);
	memset(big, 'B', 40000);
	CU_ASSERT_EQUAL(
		file_write_pooled(pool, root, "m.md", big, 40000, 0, NULL), 0);
	free(big);
	ino_t bigino = ino_of(&t, "m.md");
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", "v", 1, 0, NULL),
			0);
	ino_t left[POOL_SCAN];
	CU_ASSERT_TRUE(spare_settles(&t, bigino, false));
	ino_t before = ino_of(&t, "m.md");
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", "v", 1, 0, NULL),
			0);
	CU_ASSERT_TRUE(spare_settles(&t, before, true));
	struct stat sp;
	/* A spare's old text is written over and cut: a long text, then
	 * short ones through the spares it left. */
	char *longtext = xmalloc(5001);
	memset(longtext, 'L', 5000);
	longtext[5000] = 0;
	CU_ASSERT_EQUAL(
		file_write_pooled(pool, root, "m.md", longtext, 5000, 0, NULL),
		0);
	free(longtext);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(
			file_write_pooled(pool, root, "m.md", "s", 1, 0, NULL),
			0);
		c = tv_read(&t, "m.md");
		ASSERT_STR_EQ(c, "s");
		free(c);
		CU_ASSERT_EQUAL(stat(mp, &now), 0);
		CU_ASSERT_EQUAL(now.st_mode & 07777, 0640);
	}
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", "v", 1, 0, NULL),
			0);
	before = ino_of(&t, "m.md");
	int held = open(mp, O_RDONLY);
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", "w", 1, 0, NULL),
			0);
	CU_ASSERT_TRUE(spare_settles(&t, before, false));
	char got[4] = {0};
	CU_ASSERT_EQUAL(pread(held, got, sizeof(got) - 1, 0), 1);
	CU_ASSERT_STRING_EQUAL(got, "v");
	close(held);
	before = ino_of(&t, "m.md");
	file_pool_set_in_use(pool, in_use_of, &before);
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", "x", 1, 0, NULL),
			0);
	CU_ASSERT_TRUE(spare_settles(&t, before, false));
	/* One that vaultd holds when the write is done (a node of the
	 * mount) has no name left once the write returns: the node then
	 * follows the note's new file (a node whose file keeps a name is a
	 * hard link's and stays with it). */
	ino_t held_ino = ino_of(&t, "m.md");
	file_pool_set_in_use(pool, in_use_of, &held_ino);
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", "y", 1, 0, NULL),
			0);
	struct stat hst;
	CU_ASSERT_FALSE(spare_stat(&t, held_ino, &hst));
	file_pool_set_in_use(pool, NULL, NULL);
	CU_ASSERT_TRUE(spare_settles(&t, held_ino, false));
	CU_ASSERT_EQUAL(stat(mp, &hst), 0);
	CU_ASSERT_NOT_EQUAL(hst.st_ino, held_ino);

	/* Freed: the spares stay (0600) for the next run, which takes
	 * them, and those a killed run left (made 0600); one with a
	 * second name goes. */
	file_pool_free(pool);
	n = spares(&t, left, POOL_SCAN);
	CU_ASSERT_TRUE(n > 0);
	for (size_t i = 0; i < n; i++) {
		CU_ASSERT_TRUE(spare_stat(&t, left[i], &sp));
		CU_ASSERT_EQUAL(sp.st_mode & 07777, 0600);
	}
	tv_write(&t, ".vaultd/spare/spare-999998-cd", "text");
	tv_write(&t, "linked.md", "two names");
	char *lp = xasprintf("%s/linked.md", t.dir);
	char *sl = xasprintf("%s/.vaultd/spare/spare-999997-ef", t.dir);
	CU_ASSERT_EQUAL(link(lp, sl), 0);
	pool = file_pool_new(root);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	CU_ASSERT_TRUE(becomes(&t, ".vaultd/spare/spare-999998-cd", 0600));
	CU_ASSERT_TRUE(becomes(&t, ".vaultd/spare/spare-999997-ef", 0));
	c = tv_read(&t, "linked.md");
	ASSERT_STR_EQ(c, "two names");
	free(c);
	free(lp);
	free(sl);
	ino_t kept = left[0];
	n = spares(&t, left, POOL_SCAN);
	CU_ASSERT_TRUE(has_ino(left, n, kept));
	file_pool_free(pool);
	free(mp);
	close(root);
	tv_close(&t);
}

/* How many of the files inos have a name in the spare folder. */
static size_t spares_among(struct tvault *t, const ino_t *inos, size_t n)
{
	ino_t now[POOL_SCAN];
	size_t k = spares(t, now, POOL_SCAN), c = 0;
	for (size_t i = 0; i < n; i++)
		c += has_ino(now, k, inos[i]);
	return c;
}

/* A spare that got a second name while in the pool is not written
 * through: the write makes its own file, and the spare's name goes (the
 * other name keeps the file and its text). */
static void test_spare_linked(void)
{
	struct tvault t;
	tv_init(&t);
	int root = open_root(&t);
	tv_write(&t, ".vaultd/keep", "");
	tv_write(&t, "m.md", "zero");
	struct file_pool *pool = file_pool_new(root);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	ino_t made[POOL_SCAN];
	size_t n = spares_at_least(&t, made, POOL_SCAN, 16);
	CU_ASSERT_TRUE_FATAL(n >= 16);
	char *dir = xasprintf("%s/.vaultd/spare", t.dir);
	DIR *d = opendir(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	struct dirent *e;
	size_t linked = 0;
	ino_t inos[POOL_SCAN];
	while ((e = readdir(d)) && linked < POOL_SCAN) {
		if (strncmp(e->d_name, "spare-", 6))
			continue;
		char *to = xasprintf("%s/other-%zu", t.dir, linked);
		if (linkat(dirfd(d), e->d_name, AT_FDCWD, to, 0) == 0)
			inos[linked++] = e->d_ino;
		free(to);
	}
	closedir(d);
	free(dir);
	CU_ASSERT_TRUE_FATAL(linked >= 16);
	CU_ASSERT_EQUAL(spares_among(&t, inos, linked), linked);
	CU_ASSERT_EQUAL(
		file_write_pooled(pool, root, "m.md", "one", 3, 0, NULL), 0);
	char *c = tv_read(&t, "m.md");
	ASSERT_STR_EQ(c, "one");
	free(c);
	CU_ASSERT_FALSE(has_ino(inos, linked, ino_of(&t, "m.md")));
	CU_ASSERT_EQUAL(spares_among(&t, inos, linked), linked - 1);
	for (size_t i = 0; i < linked; i++) {
		char *rel = xasprintf("other-%zu", i);
		struct stat st;
		char *p = xasprintf("%s/%s", t.dir, rel);
		CU_ASSERT_EQUAL(stat(p, &st), 0);
		CU_ASSERT_EQUAL(st.st_ino, inos[i]);
		free(p);
		free(rel);
	}
	file_pool_free(pool);
	close(root);
	tv_close(&t);
}

/* A note's old file that vaultd holds only until the write returns (the
 * mount's node, pointed at the new file by the commit: WRITE_FOLLOWED)
 * still becomes a spare, no inode freed; one still held after that
 * goes, as a rename over it would. */
static void test_spare_followed(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".vaultd/x", "");
	tv_write(&t, "m.md", "zero");
	int root = open_root(&t);
	struct file_pool *pool = file_pool_new(root);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	/* Enough that the two writes below make the pool make none (a new
	 * spare could take the inode number of a file removed). */
	file_pool_set_fill(pool, 40);
	ino_t made[POOL_SCAN];
	size_t have = spares_at_least(&t, made, POOL_SCAN, 40);
	CU_ASSERT_TRUE(have >= 40);
	ino_t held = ino_of(&t, "m.md");
	file_pool_set_in_use(pool, in_use_of, &held);
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", "one", 3,
					  WRITE_FOLLOWED, NULL),
			0);
	/* Let go of, as the commit does right after. */
	file_pool_set_in_use(pool, NULL, NULL);
	CU_ASSERT_TRUE(spare_settles(&t, held, true));
	char *c = tv_read(&t, "m.md");
	ASSERT_STR_EQ(c, "one");
	free(c);

	ino_t kept = ino_of(&t, "m.md");
	file_pool_set_in_use(pool, in_use_of, &kept);
	CU_ASSERT_EQUAL(file_write_pooled(pool, root, "m.md", "two", 3,
					  WRITE_FOLLOWED, NULL),
			0);
	CU_ASSERT_TRUE(spare_settles(&t, kept, false));
	file_pool_set_in_use(pool, NULL, NULL);
	c = tv_read(&t, "m.md");
	ASSERT_STR_EQ(c, "two");
	free(c);
	CU_ASSERT_EQUAL(temps_in(&t, "."), 0);
	file_pool_free(pool);
	close(root);
	tv_close(&t);
}

/* A batch given a pool writes through spares and recycles the files it
 * replaced: each file new, its mode kept, nothing left beside it. */
static void test_batch_pooled(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, ".vaultd/x", "");
	tv_write(&t, "a.md", "a0");
	tv_write(&t, "d/b.md", "b0");
	char *bp = xasprintf("%s/d/b.md", t.dir);
	CU_ASSERT_EQUAL(chmod(bp, 0640), 0);
	int root = open_root(&t);
	struct file_pool *pool = file_pool_new(root);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	ino_t made[POOL_SCAN];
	CU_ASSERT_TRUE(spares(&t, made, POOL_SCAN) > 0);
	/* Asked for more, the pool makes them ahead of time. */
	file_pool_set_fill(pool, 40);
	size_t have = spares_at_least(&t, made, POOL_SCAN, 40);
	CU_ASSERT_TRUE(have >= 40);
	ino_t old_a = ino_of(&t, "a.md"), old_b = ino_of(&t, "d/b.md");
	struct file_batch *b = file_batch_new(root, pool);
	CU_ASSERT_EQUAL(file_batch_add(b, "a.md", "a1", 2), 0);
	CU_ASSERT_EQUAL(file_batch_add(b, "d/b.md", "b1", 2), 0);
	CU_ASSERT_EQUAL(file_batch_add(b, "d/new.md", "n1", 2), 0);
	size_t bad = 99;
	CU_ASSERT_EQUAL(file_batch_sync(b, &bad), 0);
	char *c = tv_read(&t, "a.md");
	ASSERT_STR_EQ(c, "a0");
	free(c);
	CU_ASSERT_EQUAL(file_batch_apply(b), 0);
	static const char *const rel[] = {"a.md", "d/b.md", "d/new.md"};
	static const char *const text[] = {"a1", "b1", "n1"};
	struct stat st;
	for (size_t i = 0; i < 3; i++) {
		c = tv_read(&t, rel[i]);
		ASSERT_STR_EQ(c, text[i]);
		free(c);
		CU_ASSERT_EQUAL(file_batch_result(b, i, &st), 0);
		CU_ASSERT_EQUAL(st.st_ino, ino_of(&t, rel[i]));
	}
	CU_ASSERT_EQUAL(stat(bp, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0640);
	file_batch_free(b);
	CU_ASSERT_EQUAL(temps_in(&t, "."), 0);
	CU_ASSERT_EQUAL(temps_in(&t, "d"), 0);
	size_t n = spares(&t, made, POOL_SCAN);
	CU_ASSERT_TRUE(has_ino(made, n, old_a));
	/* The files replaced are the pool thread's to take, then spares. */
	CU_ASSERT_TRUE(spare_settles(&t, old_a, true));
	CU_ASSERT_TRUE(spare_settles(&t, old_b, true));

	/* Not applied: the spares written go, the files stay. */
	b = file_batch_new(root, pool);
	CU_ASSERT_EQUAL(file_batch_add(b, "a.md", "a2", 2), 0);
	file_batch_free(b);
	c = tv_read(&t, "a.md");
	ASSERT_STR_EQ(c, "a1");
	free(c);
	n = spares(&t, made, POOL_SCAN);
	for (size_t i = 0; i < n; i++) {
		CU_ASSERT_TRUE(spare_stat(&t, made[i], &st));
		CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
	}
	file_pool_free(pool);
	free(bp);
	close(root);
	tv_close(&t);
}

static void test_file_read(void)
{
	struct tvault t;
	tv_init(&t);
	int root = open_root(&t);
	char data[100];
	memset(data, 'z', sizeof(data));
	CU_ASSERT_EQUAL(file_write_atomic(root, "big.md", data, 100, 0, NULL),
			0);
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	CU_ASSERT_EQUAL(file_read(root, "big.md", 99, &buf, &len, NULL),
			-EFBIG);
	CU_ASSERT_PTR_NULL(buf);
	CU_ASSERT_EQUAL(file_read(root, "big.md", 100, &buf, &len, &st), 0);
	CU_ASSERT_EQUAL(len, 100);
	CU_ASSERT_EQUAL(st.st_size, 100);
	CU_ASSERT_TRUE(buf && buf[100] == 0 && memcmp(buf, data, 100) == 0);
	free(buf);
	buf = NULL;
	CU_ASSERT_EQUAL(file_read(root, "missing.md", 10, &buf, &len, NULL),
			-ENOENT);
	CU_ASSERT_EQUAL(file_mkdirs(root, "d"), 0);
	CU_ASSERT_EQUAL(file_read(root, "d", 10, &buf, &len, NULL), -EISDIR);
	/* Empty file. */
	CU_ASSERT_EQUAL(wr(root, "empty.md", "", 0), 0);
	CU_ASSERT_EQUAL(file_read(root, "empty.md", 10, &buf, &len, NULL), 0);
	CU_ASSERT_EQUAL(len, 0);
	ASSERT_STR_EQ(buf, "");
	free(buf);
	close(root);
	tv_close(&t);
}

static void test_file_rename(void)
{
	struct tvault t;
	tv_init(&t);
	int root = open_root(&t);
	CU_ASSERT_EQUAL(wr(root, "a.md", "A", 0), 0);
	CU_ASSERT_EQUAL(wr(root, "b.md", "B", 0), 0);
	CU_ASSERT_EQUAL(file_rename(root, "a.md", "b.md", true, false),
			-EEXIST);
	char *c = tv_read(&t, "a.md");
	ASSERT_STR_EQ(c, "A");
	free(c);
	c = tv_read(&t, "b.md");
	ASSERT_STR_EQ(c, "B");
	free(c);
	CU_ASSERT_EQUAL(file_rename(root, "a.md", "new/sub/a.md", true, false),
			-ENOENT);
	CU_ASSERT_EQUAL(file_rename(root, "a.md", "new/sub/a.md", true, true),
			0);
	CU_ASSERT_FALSE(tv_exists(&t, "a.md"));
	c = tv_read(&t, "new/sub/a.md");
	ASSERT_STR_EQ(c, "A");
	free(c);
	/* Without noreplace the target is replaced. */
	CU_ASSERT_EQUAL(file_rename(root, "new/sub/a.md", "b.md", false, false),
			0);
	c = tv_read(&t, "b.md");
	ASSERT_STR_EQ(c, "A");
	free(c);
	CU_ASSERT_EQUAL(file_rename(root, "gone.md", "x.md", false, false),
			-ENOENT);
	struct stat st;
	CU_ASSERT_EQUAL(file_stat(root, "b.md", &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 1);
	CU_ASSERT_EQUAL(file_unlink(root, "b.md"), 0);
	CU_ASSERT_EQUAL(file_stat(root, "b.md", &st), -ENOENT);
	CU_ASSERT_EQUAL(file_unlink(root, "b.md"), -ENOENT);
	close(root);
	tv_close(&t);
}

/* ---- util --------------------------------------------------------------- */

static void dec(const char *in, const char *want)
{
	char *s = url_decode(in, strlen(in));
	ASSERT_STR_EQ(s, want);
	free(s);
}

static void test_url_decode(void)
{
	dec("%20", " ");
	dec("My%20Note.md", "My Note.md");
	dec("%zz", "%zz");
	dec("a%2", "a%2");
	dec("a%", "a%");
	dec("%00", "%00");
	dec("%C3%A9", "\xc3\xa9");
	dec("%c3%a9", "\xc3\xa9");
	dec("100%", "100%");
	dec("%2F", "/");
	dec("a+b", "a+b"); /* not form encoding */
	dec("", "");
	/* Only n bytes are read. */
	char *s = url_decode("ab%20cd", 2);
	ASSERT_STR_EQ(s, "ab");
	free(s);
	s = url_decode("a%20", 3);
	ASSERT_STR_EQ(s, "a%2");
	free(s);
}

static void test_url_encode_path(void)
{
	char *s = url_encode_path("My Note/é (1).md", true);
	ASSERT_STR_EQ(s, "My%20Note/é%20%281%29.md");
	free(s);
	s = url_encode_path("My Note/é.md", false);
	ASSERT_STR_EQ(s, "My%20Note%2F%C3%A9.md");
	free(s);
	s = url_encode_path("a-b_c.d~e", false);
	ASSERT_STR_EQ(s, "a-b_c.d~e");
	free(s);
	s = url_encode_path("100%#?", true);
	ASSERT_STR_EQ(s, "100%25%23%3F");
	free(s);
	/* Round trip through url_decode. */
	const char *orig = "Notes/Über & Co #1/50% off?.md";
	s = url_encode_path(orig, true);
	char *d = url_decode(s, strlen(s));
	ASSERT_STR_EQ(d, orig);
	free(d);
	free(s);
}

static void iso(const char *s, int64_t want)
{
	int64_t t = -1;
	int r = parse_iso8601(s, &t);
	if (r != 0 || t != want)
		fprintf(stderr, "\n    parse_iso8601(%s) = %d, %lld ", s, r,
			(long long)t);
	CU_ASSERT_EQUAL(r, 0);
	CU_ASSERT_EQUAL(t, want);
}

static void iso_bad(const char *s)
{
	int64_t t;
	int r = parse_iso8601(s, &t);
	if (r >= 0)
		fprintf(stderr, "\n    parse_iso8601 accepted [%s] ", s);
	CU_ASSERT_TRUE(r < 0);
}

static void test_parse_iso8601(void)
{
	iso("2024-01-15", 1705276800);
	iso("2024-01-15T10:30:00Z", 1705314600);
	iso("2024-01-15T10:30:00z", 1705314600);
	iso("2024-01-15T10:30:00", 1705314600); /* no zone: UTC */
	iso("2024-01-15 10:30:00Z", 1705314600);
	iso("2024-01-15T10:30Z", 1705314600);
	iso("2024-01-15T10:30:00.123Z", 1705314600);
	iso("2024-01-15T10:30:00.123456+00:00", 1705314600);
	iso("2024-01-15T10:30:00+02:00", 1705307400);
	iso("2024-01-15T10:30:00+0200", 1705307400);
	iso("2024-01-15T10:30:00+02", 1705307400);
	iso("2024-01-15T10:30:00-01:30", 1705320000);
	iso("2024-02-29T23:59:59Z", 1709251199);
	iso("1970-01-01T00:00:00Z", 0);
	iso_bad("");
	iso_bad("garbage");
	iso_bad("2024");
	iso_bad("2024-01");
	iso_bad("2024-1-5");
	iso_bad("20240115");
	iso_bad("2024-13-01");
	iso_bad("2024-00-10");
	iso_bad("2024-01-32");
	iso_bad("2024-01-15T25:00:00Z");
	iso_bad("2024-01-15T10:61:00Z");
	iso_bad("2024-01-15T10");
	iso_bad("2024-01-15T10:30:00Zjunk");
	iso_bad("2024-01-15T10:30:00+");
	iso_bad("2024-01-15T10:30:00+2");
	iso_bad("2024-01-15x");
	iso_bad(" 2024-01-15");
	char out[32];
	format_iso8601(1705314600, out);
	CU_ASSERT_STRING_EQUAL(out, "2024-01-15T10:30:00Z");
}

/* Impossible dates are errors, not silently normalised (Feb 30 -> Mar 1). */
static void test_parse_iso8601_impossible_dates(void)
{
	iso_bad("2024-02-30");
	iso_bad("2023-02-29");
	iso_bad("2024-04-31T00:00:00Z");
}

static void test_pyrepr_and_misc(void)
{
	struct sbuf b = {0};
	sb_add_pyrepr(&b, "abc");
	sb_puts(&b, " ");
	sb_add_pyrepr(&b, "it's");
	sb_puts(&b, " ");
	sb_add_pyrepr(&b, "both ' and \"");
	sb_puts(&b, " ");
	sb_add_pyrepr(&b, "tab\tnl\n\\");
	ASSERT_STR_EQ(sb_str(&b),
		      "'abc' \"it's\" 'both \\' and \"' 'tab\\tnl\\n\\\\'");
	sb_free(&b);
	CU_ASSERT_EQUAL(line_of_offset("a\nb\nc", 0), 1);
	CU_ASSERT_EQUAL(line_of_offset("a\nb\nc", 2), 2);
	CU_ASSERT_EQUAL(line_of_offset("a\nb\nc", 4), 3);
	CU_ASSERT_TRUE(str_has_suffix_ci("x.MD", ".md"));
	CU_ASSERT_FALSE(str_has_suffix("x.MD", ".md"));
	CU_ASSERT_FALSE(str_has_suffix("d", ".md"));
}

/* ---- json -----------------------------------------------------------------
 */

static void dumps(const char *json_in, const char *want)
{
	cJSON *v = cJSON_Parse(json_in);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	char *s = json_dumps(v);
	ASSERT_STR_EQ(s, want);
	free(s);
	cJSON_Delete(v);
}

static void test_json_dumps_format(void)
{
	dumps("{\"a\":1,\"b\":[1,2.5,\"x\"],\"c\":null,\"d\":true,\"e\":{},\"f\":[]}",
	      "{\"a\": 1, \"b\": [1, 2.5, \"x\"], \"c\": null, \"d\": true, "
	      "\"e\": {}, \"f\": []}");
	dumps("[]", "[]");
	dumps("{}", "{}");
	dumps("[[],[{}],{\"k\":[false]}]", "[[], [{}], {\"k\": [false]}]");
	dumps("3", "3");
	dumps("-42", "-42");
	dumps("3.0", "3");
	dumps("-0.5", "-0.5");
	dumps("1e20", "1e+20");
	dumps("\"s\"", "\"s\"");
	dumps("null", "null");
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "n", 1234567);
	cJSON_AddStringToObject(o, "key with \"q\"", "v");
	char *s = json_dumps(o);
	ASSERT_STR_EQ(s, "{\"n\": 1234567, \"key with \\\"q\\\"\": \"v\"}");
	free(s);
	s = json_compact(o);
	ASSERT_STR_EQ(s, "{\"n\":1234567,\"key with \\\"q\\\"\":\"v\"}");
	free(s);
	/* JSON text made elsewhere goes in as it is. */
	cJSON_AddItemToObject(o, "raw", cJSON_CreateRaw("{\"a\":[1,\"x\"]}"));
	s = json_compact(o);
	ASSERT_STR_EQ(s, "{\"n\":1234567,\"key with \\\"q\\\"\":\"v\","
			 "\"raw\":{\"a\":[1,\"x\"]}}");
	free(s);
	cJSON_Delete(o);
}

static void test_json_dumps_strings(void)
{
	cJSON *v = cJSON_CreateString("é日本🎉 \x01\x1f\n\t\r\b\f\"\\/");
	char *s = json_dumps(v);
	ASSERT_STR_EQ(s, "\"é日本🎉 \\u0001\\u001f\\n\\t\\r\\b\\f\\\"\\\\/\"");
	free(s);
	cJSON_Delete(v);
	/* U+2028 stays raw with ensure_ascii=False. */
	v = cJSON_CreateString("a\xe2\x80\xa8"
			       "b");
	s = json_dumps(v);
	ASSERT_STR_EQ(s, "\"a\xe2\x80\xa8"
			 "b\"");
	free(s);
	cJSON_Delete(v);
}

/* Like Python's json.dumps(ensure_ascii=False), DEL (0x7f) stays raw. */
static void test_json_dumps_del(void)
{
	cJSON *v = cJSON_CreateString("a\x7f"
				      "b");
	char *s = json_dumps(v);
	ASSERT_STR_EQ(s, "\"a\x7f"
			 "b\"");
	free(s);
	cJSON_Delete(v);
}

/* Non-integers print as their shortest repr (0.1, not 0.1000...01). */
static void test_json_dumps_float_repr(void)
{
	dumps("[0.1, 1.1, 4.7, 0.3]", "[0.1, 1.1, 4.7, 0.3]");
}

/* ---- cursors --------------------------------------------------------------
 */

static void test_cursor_roundtrip(void)
{
	char *c = cursor_make("search:q=foo", 42, 100);
	CU_ASSERT_EQUAL(strlen(c), 43);
	size_t off = 0;
	const char *msg = NULL;
	CU_ASSERT_EQUAL(cursor_parse(c, "search:q=foo", 42, &off, &msg), 0);
	CU_ASSERT_EQUAL(off, 100);
	for (const char *p = c; *p; p++)
		CU_ASSERT_TRUE(isalnum((unsigned char)*p) || *p == '-' ||
			       *p == '_');
	free(c);
	c = cursor_make("", 0, 0);
	CU_ASSERT_EQUAL(cursor_parse(c, "", 0, &off, &msg), 0);
	CU_ASSERT_EQUAL(off, 0);
	free(c);
	c = cursor_make("s", UINT64_MAX, SIZE_MAX);
	CU_ASSERT_EQUAL(cursor_parse(c, "s", UINT64_MAX, &off, &msg), 0);
	CU_ASSERT_EQUAL(off, SIZE_MAX);
	free(c);
}

static void test_cursor_scope_and_gen(void)
{
	char *c = cursor_make("scope-a", 7, 50);
	size_t off = 999;
	const char *msg = NULL;
	CU_ASSERT_EQUAL(cursor_parse(c, "scope-b", 7, &off, &msg), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(msg);
	CU_ASSERT_EQUAL(off, 999);
	msg = NULL;
	CU_ASSERT_EQUAL(cursor_parse(c, "scope-a", 8, &off, &msg), -ESTALE);
	CU_ASSERT_PTR_NOT_NULL(msg);
	CU_ASSERT_EQUAL(off, 999);
	free(c);
}

static void test_cursor_forged(void)
{
	char *c = cursor_make("scope", 3, 20);
	size_t off = 0;
	const char *msg;
	static const char *const junk[] = {
		"",
		"abc",
		"====",
		"not a cursor at all, definitely not",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"___________________________________________",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\xff",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	};
	for (size_t i = 0; i < ARRAY_SIZE(junk); i++) {
		msg = NULL;
		CU_ASSERT_TRUE(cursor_parse(junk[i], "scope", 3, &off, &msg) <
			       0);
		CU_ASSERT_PTR_NOT_NULL(msg);
	}
	/* Changing any of the first 42 characters breaks the MAC. */
	for (size_t i = 0; i < 42; i++) {
		char *f = xstrdup(c);
		f[i] = f[i] == 'A' ? 'B' : 'A';
		CU_ASSERT_TRUE(cursor_parse(f, "scope", 3, &off, &msg) < 0);
		free(f);
	}
	/* Longer or shorter by one. */
	char *l = xasprintf("%sA", c);
	CU_ASSERT_TRUE(cursor_parse(l, "scope", 3, &off, &msg) < 0);
	l[41] = 0;
	CU_ASSERT_TRUE(cursor_parse(l, "scope", 3, &off, &msg) < 0);
	free(l);
	free(c);
}

/* ---- u8 ---------------------------------------------------------------------
 */

static bool valid(const char *s)
{
	return u8_valid(s, strlen(s));
}

static void test_u8_valid(void)
{
	CU_ASSERT_TRUE(valid(""));
	CU_ASSERT_TRUE(valid("ascii"));
	CU_ASSERT_TRUE(valid("é€😀日本"));
	CU_ASSERT_TRUE(valid("\xf4\x8f\xbf\xbf")); /* U+10FFFF */
	CU_ASSERT_FALSE(valid("\xc0\xaf"));	   /* overlong '/' */
	CU_ASSERT_FALSE(valid("\xc1\xbf"));
	CU_ASSERT_FALSE(valid("\xe0\x80\xaf"));	    /* overlong 3-byte */
	CU_ASSERT_FALSE(valid("\xf0\x80\x80\xaf")); /* overlong 4-byte */
	CU_ASSERT_FALSE(valid("\xe2\x82"));	    /* truncated */
	CU_ASSERT_FALSE(valid("a\xc3"));
	CU_ASSERT_FALSE(valid("\xf0\x9f\x98"));
	CU_ASSERT_FALSE(valid("\x80"));		    /* lone continuation */
	CU_ASSERT_FALSE(valid("\xed\xa0\x80"));	    /* surrogate */
	CU_ASSERT_FALSE(valid("\xf4\x90\x80\x80")); /* > U+10FFFF */
	CU_ASSERT_FALSE(valid("\xf8\x88\x80\x80\x80"));
	CU_ASSERT_FALSE(valid("\xff"));
	CU_ASSERT_FALSE(u8_valid("a\0b", 3)); /* NUL */
	/* Truncated by n, not by the string. */
	CU_ASSERT_FALSE(u8_valid("\xc3\xa9", 1));
	CU_ASSERT_TRUE(u8_valid("\xc3\xa9", 2));
}

/* NFC as utf8proc makes it of the whole text: what u8_nfc must give. */
static char *nfc_whole(const char *s)
{
	utf8proc_uint8_t *out = NULL;
	if (utf8proc_map((const utf8proc_uint8_t *)s, 0, &out,
			 UTF8PROC_NULLTERM | UTF8PROC_STABLE |
				 UTF8PROC_COMPOSE) < 0)
		return NULL;
	return (char *)out;
}

static void check_nfc(const char *s)
{
	char *got = u8_nfc(s), *want = nfc_whole(s);
	CU_ASSERT_TRUE(got && want && !strcmp(got, want));
	if (!got || !want || strcmp(got, want))
		fprintf(stderr, "u8_nfc differs on \"%s\"\n", s);
	free(got);
	free(want);
}

/*
 * u8_nfc copies the stretches whose characters NFC keeps as they are,
 * and maps the others: the same as utf8proc's NFC of the whole text,
 * for every character of the BMP after bases it could combine with or
 * before marks that combine with it, and for random mixes of
 * characters that compose, decompose or are kept.
 */
static void test_u8_nfc_quick(void)
{
	static const char *const before[] = {"",
					     "e",
					     "\xd0\xb8",
					     "\xea\xb0\x80",
					     "\xe1\x84\x80",
					     "\xe0\xa4\x95"};
	static const char *const after[] = {"", "\xcc\x81", "\xcc\x86",
					    "\xe1\x85\xa1", "\xe1\x86\xa8"};
	char buf[64];
	for (int32_t c = 0x80; c < 0x10000; c++) {
		if (c >= 0xd800 && c < 0xe000)
			continue;
		utf8proc_uint8_t e[4];
		utf8proc_ssize_t l = utf8proc_encode_char(c, e);
		for (size_t b = 0; b < sizeof(before) / sizeof(*before); b++)
			for (size_t a = 0; a < sizeof(after) / sizeof(*after);
			     a++) {
				snprintf(buf, sizeof(buf), "x%s%.*s%sy",
					 before[b], (int)l, (const char *)e,
					 after[a]);
				check_nfc(buf);
			}
	}
	/* Every character's canonical decomposition, whose parts compose
	 * again (the second part of a pair may be a starter). */
	for (int32_t c = 0x80; c < 0x30000; c++) {
		utf8proc_int32_t d[8];
		int last = 0;
		utf8proc_ssize_t nd = utf8proc_decompose_char(
			c, d, 8, UTF8PROC_DECOMPOSE, &last);
		if (nd < 2 || nd > 8)
			continue;
		struct sbuf sb = {0};
		sb_putc(&sb, 'x');
		for (utf8proc_ssize_t k = 0; k < nd; k++) {
			utf8proc_uint8_t e[4];
			utf8proc_ssize_t l = utf8proc_encode_char(d[k], e);
			sb_add(&sb, (const char *)e, (size_t)l);
		}
		sb_putc(&sb, 'y');
		check_nfc(sb.s);
		sb_free(&sb);
	}
	static const char *const pool[] = {"a",
					   " ",
					   "e",
					   "\xcc\x81",
					   "\xc3\xa9",
					   "\xd0\xb8",
					   "\xcc\x86",
					   "\xd0\xb9",
					   "\xe1\x84\x80",
					   "\xe1\x85\xa1",
					   "\xe1\x86\xa8",
					   "\xea\xb0\x80",
					   "\xe2\x84\xab",
					   "\xef\xa4\x80",
					   "\xe6\x97\xa5",
					   "\xf0\x9f\x98\x80",
					   "\xce\x86",
					   "\xe2\x80\x94",
					   "\xcd\x82",
					   "\xf0\x9d\x85\x9e",
					   "\xe0\xa4\xbc",
					   "\xe0\xa4\x95",
					   "Ab",
					   "\xc3\x89",
					   "\xd0\x99",
					   "Stra\xc3\x9f"
					   "e",
					   "XY z"};
	unsigned seed = 34;
	for (int i = 0; i < 20000; i++) {
		struct sbuf sb = {0};
		int n = 1 + (int)(rand_r(&seed) % 12);
		for (int k = 0; k < n; k++)
			sb_puts(&sb, pool[rand_r(&seed) %
					  (sizeof(pool) / sizeof(*pool))]);
		check_nfc(sb.s);
		/* u8_fold cuts the text the same way. */
		utf8proc_uint8_t *want = NULL;
		utf8proc_map((const utf8proc_uint8_t *)sb.s, 0, &want,
			     UTF8PROC_NULLTERM | UTF8PROC_STABLE |
				     UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD);
		char *got = u8_fold(sb.s);
		CU_ASSERT_TRUE(got && want && !strcmp(got, (char *)want));
		free(got);
		free(want);
		sb_free(&sb);
	}
	CU_ASSERT_PTR_NULL(u8_nfc("caf\xc3\xa9 \xed\xa0\x80"));
}

static void test_u8_helpers(void)
{
	char *s = u8_nfc(NFD_CAFE);
	ASSERT_STR_EQ(s, NFC_CAFE);
	free(s);
	CU_ASSERT_PTR_NULL(u8_nfc("\xff"));
	s = u8_fold("ÀÉÎ Straße ПРОЕКТ ABC");
	char *w = u8_fold("àéî strasse проект abc");
	ASSERT_STR_EQ(s, w);
	free(s);
	free(w);
	CU_ASSERT_PTR_NULL(u8_fold("\xc3"));
	s = u8_fold_n("ABCdef", 3);
	ASSERT_STR_EQ(s, "abc");
	free(s);
	/* Empty input; ASCII runs around non-ASCII stretches; a base letter
	 * right before a combining mark composes with it. */
	s = u8_fold_n("", 0);
	ASSERT_STR_EQ(s, "");
	free(s);
	s = u8_nfc("");
	ASSERT_STR_EQ(s, "");
	free(s);
	s = u8_fold("Big " NFD_CAFE " Ünd ÉÉ X");
	ASSERT_STR_EQ(s, "big caf\xc3\xa9 ünd éé x");
	free(s);
	s = u8_nfc("AB" NFD_CAFE "CD");
	ASSERT_STR_EQ(s, "AB" NFC_CAFE "CD");
	free(s);
	int32_t cp = 0;
	CU_ASSERT_EQUAL(u8_decode("\xe2\x82\xac", 3, &cp), 3);
	CU_ASSERT_EQUAL(cp, 0x20ac);
	CU_ASSERT_EQUAL(u8_decode("\xe2\x82", 2, &cp), -1);
	CU_ASSERT_EQUAL(u8_decode("\xe2\x82\xac", 2, &cp), -1);
	CU_ASSERT_EQUAL(u8_decode("\xc0\xaf", 2, &cp), -1);
	CU_ASSERT_TRUE(u8_is_tag_char('a'));
	CU_ASSERT_TRUE(u8_is_tag_char('/'));
	CU_ASSERT_TRUE(u8_is_tag_char(0x0436)); /* ж */
	CU_ASSERT_TRUE(u8_is_tag_char(0x65e5)); /* 日 */
	CU_ASSERT_FALSE(u8_is_tag_char(' '));
	CU_ASSERT_FALSE(u8_is_tag_char('#'));
	CU_ASSERT_FALSE(u8_is_tag_char('.'));
	CU_ASSERT_FALSE(u8_is_tag_char(0x3000)); /* ideographic space */
	CU_ASSERT_TRUE(u8_is_digit('7'));
	CU_ASSERT_FALSE(u8_is_digit('a'));
}

int main(void)
{
	static const struct test_case tests[] = {
		{"path_check_refuses", test_path_check_refuses},
		{"path_check_normalises", test_path_check_normalises},
		{"beneath_open_escapes", test_beneath_open_escapes},
		{"write_through_symlink_refused",
		 test_write_through_symlink_refused},
		{"write_mkdirs", test_write_mkdirs},
		{"write_keeps_mode", test_write_keeps_mode},
		{"write_noreplace", test_write_noreplace},
		{"write_no_temp_left", test_write_no_temp_left},
		{"batch", test_batch},
		{"batch_folder_moved", test_batch_folder_moved},
		{"batch_write_fails", test_batch_write_fails},
		{"spare_writes", test_spare_writes},
		{"batch_pooled", test_batch_pooled},
		{"spare_followed", test_spare_followed},
		{"spare_linked", test_spare_linked},
		{"file_read", test_file_read},
		{"file_rename", test_file_rename},
		{"url_decode", test_url_decode},
		{"url_encode_path", test_url_encode_path},
		{"parse_iso8601", test_parse_iso8601},
		{"parse_iso8601_impossible_dates",
		 test_parse_iso8601_impossible_dates},
		{"pyrepr_and_misc", test_pyrepr_and_misc},
		{"json_dumps_format", test_json_dumps_format},
		{"json_dumps_strings", test_json_dumps_strings},
		{"json_dumps_del", test_json_dumps_del},
		{"json_dumps_float_repr", test_json_dumps_float_repr},
		{"cursor_roundtrip", test_cursor_roundtrip},
		{"cursor_scope_and_gen", test_cursor_scope_and_gen},
		{"cursor_forged", test_cursor_forged},
		{"u8_valid", test_u8_valid},
		{"u8_helpers", test_u8_helpers},
		{"u8_nfc_quick", test_u8_nfc_quick},
	};
	return run_tests("fileio", tests, ARRAY_SIZE(tests));
}
