/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The file layer's private parts, shared by its files (fileio.c: paths,
 * opening beneath the root, reads, folders, renames and stats;
 * fileio_write.c: atomic writes and the pool of spare files;
 * fileio_batch.c: batches of writes made durable together): the spare
 * pool's struct, the helpers one file lends another, and the mode mask
 * of new files.
 */
#pragma once

#include "fileio.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Taken out of new files' modes (file_set_umask). */
extern mode_t fio_create_mask;

/* The reserve of new spares the pool keeps at first; it grows with the
 * spares writers asked for and did not find, up to POOL_MAX kept. */
#define POOL_LOW 16
#define POOL_MAX 2048
#define SPARE_KEEP_MAX (32 * 1024)
#define SPARE_NAME 48
/* Beyond the first POOL_LOW, spares are made once writers have taken
 * none for this long (see pool_main()). */
#define POOL_IDLE_NS (50 * 1000000ull)
/* The nice value of the pool's thread (see pool_main()). */
#define POOL_NICE 10

/* A spare: its name in the spare folder, and whether it is empty (made
 * so, or a note's placeholder given back: file_pool_place() takes only
 * those). */
struct spare {
	char name[SPARE_NAME];
	bool empty;
};

/* A file given back by a write, for the pool's thread; soon: vaultd
 * holds it, but lets go of it once the write is done (see
 * fio_donate()). */
struct given {
	char name[SPARE_NAME];
	bool soon;
};

struct file_pool {
	int dfd;   /* .vaultd/spare: constant */
	dev_t dev; /* its file system: constant */
	int flags; /* a new spare's inode flags, or -1: constant */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct spare *spares; /* mu */
	size_t n, cap;	      /* mu */
	size_t fill;	      /* mu: made ahead up to this many (asked) */
	/* mu: the reserve wanted (spares of any kind, and empty ones), at
	 * least fill: the thread makes new spares when fewer than half are
	 * left, up to it; each spare asked for and not found grows it by
	 * one */
	size_t want, want_empty;
	size_t nempty;	    /* mu: spares in the pool that are empty */
	uint64_t last_take; /* mu: when a writer last took one (now_ns()) */
	/* mu: the names in the spare folder of files given back by writes,
	 * for the thread to look at (pool_recycle()), off the writers' path */
	struct given *given;
	size_t ngiven, capgiven;
	bool stop;	       /* mu */
	atomic_bool quit;      /* stop, for the taking of old spares */
	bool running;	       /* the thread was started */
	file_in_use_fn in_use; /* mu */
	void *in_use_ud;       /* mu */
	pthread_t th;
};

/* fileio_write.c */
int fio_open_parent(int rootfd, const char *rel, const char **ret_base);
int fio_open_folder(int rootfd, const char *rel, const char **ret_base);
bool fio_sync_folder(int dfd);
int fio_temp_write(int dfd, const char *base, const struct stat *old,
		   const char *data, size_t len, char tmp[static 300],
		   int *ret_fd, struct stat *ret_st);
int fio_replaceable(int dfd, const char *base, unsigned flags,
		    struct stat *ret_old);
bool fio_pool_fits(const struct file_pool *p, int dfd);
int fio_spare_fill(struct file_pool *p, const struct stat *old,
		   const char *data, size_t len, bool sync,
		   char name[static SPARE_NAME], struct stat *ret_st);
int fio_exchange_in(int fdir, const char *from, int dfd, const char *base);
void fio_donate(struct file_pool *p, int fdir, const char *name, bool synced,
		bool soon);
