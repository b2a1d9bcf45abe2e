/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File access beneath the vault root. Every path is vault-relative and
 * checked; every open goes through the root directory fd with
 * RESOLVE_BENEATH, so neither ".." nor a symlink can lead outside.
 * Writes are atomic: a temp file in the same folder, fsync, rename.
 */
#pragma once

#include "util.h"

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * Check a vault-relative path from a client. Refuses empty, absolute,
 * "..", NUL, control characters, invalid UTF-8 and folders nested over
 * PATH_MAX_DEPTH levels. On success returns 0
 * and the normalised (NFC, "./" removed, no trailing '/') path. The
 * message says what is wrong.
 */
int path_check(const char *path, char **ret_norm, const char **ret_msg);
/* How deep a path path_check() accepts may nest folders. */
#define PATH_MAX_DEPTH 64
/* The longest path path_check() accepts: PATH_MAX_BYTES (util.h). */

/* openat() beneath rootfd (no escape by "..", absolute or symlink). */
int beneath_open(int rootfd, const char *rel, int flags, mode_t mode);

/* A folder beneath rootfd ("" for the root itself) opened for readdir;
 * NULL with errno set. */
DIR *dir_open_beneath(int rootfd, const char *rel);

/* Read a whole file (at most max bytes, else -EFBIG). ret_st (may be
 * NULL): the file's stat, filled also when it is too big. */
int file_read(int rootfd, const char *rel, size_t max, char **ret,
	      size_t *ret_len, struct stat *ret_st);

enum {
	WRITE_NOREPLACE = 1 << 0, /* fail with -EEXIST if it exists */
	WRITE_MKDIRS = 1 << 1,	  /* create missing folders */
	/* The caller points what of vaultd's holds the file replaced (the
	 * mount's node) at the new one once the write returns: held only
	 * until then, it may still become a spare (file_write_pooled()). */
	WRITE_FOLLOWED = 1 << 2,
};

/*
 * Atomically replace (or create) rel with data. The mode of an existing
 * file is kept (new files get 0644 & ~umask). Returns 0 or -errno.
 */
int file_write_atomic(int rootfd, const char *rel, const char *data, size_t len,
		      unsigned flags, struct stat *ret_st);

/*
 * Spare files kept ready in the vault's .vaultd/spare/ (NULL when there
 * is no .vaultd/), so that a write does not wait for the file system to
 * find a free inode: file_write_pooled() replaces an existing file
 * through one when it is on the same file system and its folder has no
 * default ACL, with the guarantees of file_write_atomic(), and so do
 * batches given the pool. The file replaced becomes a spare in turn
 * (emptied) when nothing else can see it: one name, no extended
 * attribute, no one holding it open, and not in use by vaultd itself as
 * in_use says (file_pool_set_in_use()); otherwise it is removed, as a
 * rename over it would. A thread makes new spares when few are left.
 * Spares are kept across runs: file_pool_new() takes the empty ones an
 * earlier run left and removes the others (a crash in a write).
 */
typedef bool (*file_in_use_fn)(void *ud, dev_t dev, ino_t ino);
struct file_pool;
struct file_pool *file_pool_new(int rootfd);
struct file_pool *file_pool_free(struct file_pool *p);
void file_pool_set_in_use(struct file_pool *p, file_in_use_fn fn, void *ud);
/* Make spares ahead of time until there are n (at most 2,048): what a
 * batch of n files takes without making a file. Without it the pool
 * keeps a small reserve that grows with the spares asked of it and not
 * found. */
void file_pool_set_fill(struct file_pool *p, size_t n);
int file_write_pooled(struct file_pool *pool, int rootfd, const char *rel,
		      const char *data, size_t len, unsigned flags,
		      struct stat *ret_st);
/*
 * A new empty file at name in the folder dfd, as openat(O_CREAT |
 * O_EXCL) would make it there (mode 0600 until the caller sets it), from
 * an empty spare: no inode is made while the caller waits. Returns a
 * descriptor of it open for reading, -EEXIST when name exists, or
 * -EAGAIN when no empty spare fits (nothing done: the caller makes it).
 */
int file_pool_place(struct file_pool *p, int dfd, const char *name);

/*
 * Several files replaced together, each one atomically, for the cost of
 * about one write: file_batch_add() writes a file's new text to a temp
 * file beside it, or to a spare of pool (may be NULL) when one fits
 * (nothing visible changes); file_batch_sync() makes every
 * temp file durable in one pass; file_batch_apply() renames each over its
 * file, then syncs each folder once (and those named with
 * file_batch_sync_folder()). A crash at any moment leaves each file whole,
 * old or new; the temp files left behind are removed by the next start
 * (file_is_stale_temp(); spares, file_pool_new()), and file_batch_free()
 * removes those of a batch
 * not applied. Errors: -errno; file_batch_sync() names the file in
 * *ret_failed (its index, in the order added).
 */
struct file_batch;
struct file_batch *file_batch_new(int rootfd, struct file_pool *pool);
int file_batch_add(struct file_batch *b, const char *rel, const char *data,
		   size_t len);
int file_batch_sync(struct file_batch *b, size_t *ret_failed);
/* The same, with fn(ud) run on the caller's thread while other threads
 * sync (work that waits for no file: the disk is busy meanwhile). */
int file_batch_sync_during(struct file_batch *b, void (*fn)(void *ud), void *ud,
			   size_t *ret_failed);
void file_batch_sync_folder(struct file_batch *b, const char *rel);
/* The folder from (holding files of the batch, their temp files beside
 * them) was renamed to to: the batch follows it. */
void file_batch_moved(struct file_batch *b, const char *from, const char *to);
/* Every file it can: one that cannot be replaced keeps its old text.
 * 0, or the first error. */
int file_batch_apply(struct file_batch *b);
/* The i-th file added: 0 and the stat of its new file once replaced, or
 * why not. */
int file_batch_result(const struct file_batch *b, size_t i,
		      struct stat *ret_st);
struct file_batch *file_batch_free(struct file_batch *b);

/*
 * The umask vaultd applies to the notes and folders it creates: the
 * user's, narrowed to the vault folder's own mode. Default 022.
 */
void file_set_umask(mode_t mask);

/*
 * Take the bits in mask away from rel and everything beneath it (never
 * following a symlink). Returns the number of files changed, or -errno
 * when rel cannot be opened (-ENOENT: nothing there).
 */
long file_narrow_modes(int rootfd, const char *rel, mode_t mask);

/*
 * Whether name is a temp file of file_write_atomic()
 * (".<base>.vaultd-<pid>-<hex>.tmp") made by another process than this
 * one: with one vaultd per vault, one left by a vaultd that died.
 */
bool file_is_stale_temp(const char *name);
/* Whether name is a temp file of file_write_atomic(), of any process. */
bool file_is_temp(const char *name);
/* Whether name is a temp file of file_write_atomic() made by this process. */
bool file_is_own_temp(const char *name);
/* Remove the temp files of other processes in the folder rel (not
 * beneath it). Returns how many, or -errno. */
long file_remove_temps(int rootfd, const char *rel);

/* mkdir -p beneath rootfd for the folder part of rel (or rel itself). */
int file_mkdirs(int rootfd, const char *dir);

/* rename beneath rootfd; noreplace uses RENAME_NOREPLACE. */
int file_rename(int rootfd, const char *from, const char *to, bool noreplace,
		bool mkdirs);

int file_unlink(int rootfd, const char *rel);
int file_stat(int rootfd, const char *rel, struct stat *ret_st);
/* Creation time via statx, or 0 when the filesystem does not keep it. */
int64_t file_btime(int rootfd, const char *rel);
