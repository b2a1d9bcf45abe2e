/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Batches of writes (file_batch_*): every file's new text is written to a
 * temporary or spare file first, all of them synced together (by a few
 * threads), then each put in place by a rename, so a batch of notes costs
 * about one sync, not one per note.
 */
#include "fileio_int.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	/* fio_open_folder() wants a path in the folder: any name does. */
	_cleanup_free_ char *probe =
		dirlen ? xasprintf("%s/x", b->dir) : xstrdup("x");
	const char *base;
	b->dfd = fio_open_folder(b->rootfd, probe, &base);
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
	int r = fio_replaceable(dfd, base, 0, &old);
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
		b->fits = fio_pool_fits(b->pool, dfd);
	/* Under way to the disk while the next ones are written. */
	r = exists && b->pool && b->fits
		    ? fio_spare_fill(b->pool, &old, data, len, false, f->tmp,
				     &f->st)
		    : -EAGAIN;
	f->spare = r == 0;
	if (r == -EAGAIN) {
		int fd;
		r = fio_temp_write(dfd, base, exists ? &old : NULL, data, len,
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
	return file_batch_sync_during(b, NULL, NULL, ret_failed);
}

int file_batch_sync_during(struct file_batch *b, void (*fn)(void *ud), void *ud,
			   size_t *ret_failed)
{
	struct batch_sync j = {.b = b};
	size_t want = b->n / 8 < SYNC_THREADS ? b->n / 8 : SYNC_THREADS;
	pthread_t th[SYNC_THREADS];
	size_t started = 0;
	/* The caller's thread is one of them, once fn is done. */
	for (size_t i = fn ? 0 : 1; i < want; i++)
		if (pthread_create(&th[started], NULL, batch_sync_main, &j) ==
		    0)
			started++;
	if (fn)
		fn(ud);
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
	_cleanup_close_ int dfd = fio_open_folder(rootfd, rel, &base);
	if (dfd >= 0)
		fio_sync_folder(dfd);
}

/* One file of the batch put in place (dfd: its folder, or why it could
 * not be opened). */
static void apply_one(struct file_batch *b, struct batch_file *f, int dfd)
{
	const char *base = f->dirlen ? f->rel + f->dirlen + 1 : f->rel;
	int r = dfd;
	if (dfd >= 0 && f->spare)
		r = fio_exchange_in(b->pool->dfd, f->tmp, dfd, base);
	else if (dfd >= 0 && b->pool)
		r = fio_exchange_in(dfd, f->tmp, dfd, base);
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
		bool synced = dfd >= 0 && fio_sync_folder(dfd);
		for (size_t j = from; j <= i; j++) {
			if (!o[j]->swapped)
				continue;
			fio_donate(b->pool, o[j]->spare ? b->pool->dfd : dfd,
				   o[j]->tmp, synced, false);
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
