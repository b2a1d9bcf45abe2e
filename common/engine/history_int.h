/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The history's private parts, shared by its files (history.c: opening,
 * closing and the in-memory log; history_record.c: the writers' queue
 * and the pending batch; history_commit.c: building and writing commits;
 * history_pack.c: idle-priority work, packing and disk use;
 * history_scan.c: the recording at start; history_read.c: logs, versions
 * and diffs). The struct history below and the locks that guard its
 * fields are described in history.c's prologue and next to each field.
 */
#pragma once

#include "history.h"
#include "hmap.h"
#include "util.h"

#include <git2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define PACK_EVERY 200
#define QUEUE_MAX (16u << 20)
#define PACK_LOOSE 2000
#define INDEX_SAVE_NS (30ull * 1000000000ull)
#define EMAIL "vaultd@localhost"

/* One change of a batch or of a recorded commit. */
struct change {
	char kind; /* 'C' created/changed, 'D' deleted, 'R' renamed to path */
	char *path;
	char *from; /* 'R': the old path */
};

/* A change queued by a writer, with the note's text as it wrote it
 * (read at once, so that every version is the one its writer made). */
struct qitem {
	struct qitem *next;
	char kind; /* 'C', 'D', 'R' as in struct change */
	char *path;
	char *from;
	char *author;
	char *text; /* 'C', 'R': the text at path; NULL: it could not be
		     * read (gone again: its deletion follows) */
	size_t len;
	struct stat st;
	uint64_t ns; /* when it came */
};

/* A change that came before the recording at start, with its writer and,
 * where it could be had then (have_text), the note's text at that time:
 * a later change must not be taken for it (NULL: it could not be read). */
struct held {
	struct change c;
	char *author;
	bool have_text;
	char *text;
	size_t len;
	struct stat st;
};

/* A note as it was before vaultd's first change to it (absent: it did not
 * exist), kept until the recording at start has run. */
struct orig {
	git_oid id;
	int64_t mtime_ns, size;
	uint64_t ino;
	bool absent;
};

struct commit_rec {
	git_oid id;
	char hex[41];
	int64_t time;
	char *author;
	char *session; /* the MCP session ("Session: " line), or NULL */
	char *summary;
};

/* A path's commits, oldest first. */
struct ref {
	uint32_t ci;
	char kind;
	const char *from; /* 'R': borrowed from the path list's owner */
};
struct plog {
	struct ref *v;
	size_t n, cap;
	char *from_owned; /* storage for from strings */
	struct ptrvec froms;
};

struct history {
	pthread_mutex_t mu;
	/*
	 * Changes queued by writers (qmu, taken after mu or alone): a writer
	 * never waits for mu, which a commit holds while git works. The
	 * history thread waits on qcv for the batch to be due. A change to
	 * a note already queued by the same writer (no other writer, rename
	 * or deletion of it between) replaces the queued text, as a batch
	 * keeps only a note's last text. Past QUEUE_MAX bytes of text, the
	 * writer commits the queue itself (a history thread that cannot keep
	 * up slows writers down rather than filling memory).
	 */
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	struct qitem *qhead, **qtail; /* qmu */
	struct hmap *qlast;	      /* qmu: path -> its 'C' item in the run */
	char *qauthor;		      /* qmu: the author of the run */
	size_t qbytes;		      /* qmu: text queued */
	uint64_t pend_ns;	      /* qmu: first_ns while a batch pends */
	bool qstop;		      /* qmu */
	int rootfd;
	char *dir; /* .../history.git */
	git_repository *repo;
	git_index *idx;
	git_oid head;
	bool have_head;
	size_t failed_commits; /* in a row, under mu */
	/* The pending batch. */
	char *author;
	struct change *pend;
	size_t npend, cappend;
	struct hmap *pend_at; /* path -> index+1 in pend */
	/* The batch's new texts (path -> struct text): their blobs are
	 * written when the batch is committed, off the write path, and a
	 * text replaced within the batch is never written at all. */
	struct hmap *texts;
	/* history_prepare()'s blobs: path -> struct prepared. */
	struct hmap *prepared;
	/* Until the recording at start has run (recorded), changes are held
	 * and the notes' texts before them kept (path -> struct orig): the
	 * first recording holds every note as it was before vaultd changed
	 * it, and the changes follow as versions of their own. */
	atomic_bool recorded; /* written under mu */
	struct held *held;
	size_t nheld, capheld;
	size_t heldbytes; /* text held; past QUEUE_MAX, read at replay */
	struct hmap *origs;
	uint64_t first_ns;
	/* The log. */
	struct commit_rec *commits;
	size_t ncommits, capcommits;
	struct hmap *paths; /* path -> struct plog * */
	/* Commits that recorded every note ("Snapshot: "): they touch every
	 * path in their tree, which is looked up when asked, not listed. */
	uint32_t *snaps;
	size_t nsnaps;
	/* h->idx's tree is this one (saved with the index, so that a start
	 * can trust the saved index when it matches HEAD). */
	git_oid idx_tree;
	bool idx_tree_valid;
	size_t since_pack;
	size_t loose; /* objects written since the last pack, about */
	uint64_t index_saved_ns;
	bool index_dirty;
	atomic_bool quit; /* history_stop() was called: long work ends */
	atomic_bool packing;
	/* The thread of hist_run_idle(), while it runs (under idle_mu). */
	pthread_mutex_t idle_mu;
	pthread_t idle_thread;
	bool idle_running;
	uint64_t du_bytes, du_ns; /* history_stats()'s last sum, and when */
	char err[256];
};

/* history.c */
void hist_set_err(struct history *h, const char *what);
struct plog *hist_plog_of(struct history *h, const char *path, bool make);
uint32_t hist_log_commit(struct history *h, const git_oid *id, int64_t t,
			 const char *author, const char *summary);
void hist_log_message(struct history *h, uint32_t ci, const char *msg);
bool hist_read_oid_file(const char *path, git_oid *ret);
int hist_write_oid_file(const char *path, const git_oid *id);
void hist_save_index(struct history *h);

/* history_record.c */
void hist_entry_init(git_index_entry *e, const char *path, int64_t mtime_ns,
		     int64_t size, uint64_t ino);
int hist_add_entry(struct history *h, const git_index_entry *e);
void hist_drop_texts(struct history *h);
int hist_write_texts(struct history *h);
int hist_put_file(struct history *h, const char *path, bool defer);
int hist_drop_file(struct history *h, const char *path);
void hist_pend(struct history *h, char kind, const char *path, const char *from,
	       uint64_t ns);
void hist_drop_held(struct history *h);
void hist_replay_held(struct history *h);
void hist_qitem_free(struct qitem *q);
void hist_publish_pending(struct history *h);
int hist_drain_locked(struct history *h);

/* history_commit.c */
int hist_commit_locked(struct history *h, const char *author,
		       const char *summary, const char *body);
int hist_commit_pending_locked(struct history *h);
void hist_flush_locked(struct history *h);

/* history_pack.c */
int hist_run_idle(int (*fn)(struct history *h, void *arg), struct history *h,
		  void *arg);

/* history_scan.c */
bool hist_stat_matches(const git_index_entry *e, const struct history_file *f);
void hist_drop_prepared(struct history *h);
