/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vault's insides, shared by the files that implement vault.h and by
 * no one else: struct vault, and the helpers one part of the vault lends
 * another. vault.c holds the root, open and close, the listeners, the
 * locks, the policy and the history; vault_sync.c the first index build
 * and the sync of a path; vault_write.c the guard and the guarded write;
 * vault_move.c renames of notes and folders (and the rewrite of the links
 * they change, which vault_trash.c's delete uses too); vault_fulltext.c
 * the on-disk index's work queue (struct fulltext); vault_prep.c a first
 * build's read-ahead (struct prepper); vault_violations.c
 * the recorded policy violations.
 *
 * Locks, and the order they nest in (a lock may be taken while holding
 * only locks that come before it in this list):
 *
 *   ft->fwmu  the full-text worker (vault_fulltext_work): one at a time
 *   wmu       the writer lock (vault_write_lock): one writer at a time;
 *             events are sent under it
 *   smu       the store's writer connection
 *   rw        the in-memory index: readers share it (vault_read_lock),
 *             a writer takes it for writing only to swap notes in
 *   ft->fmu   the full-text queue (the set of dirty notes, whether a
 *             round of its work is pending), with ft->fcv (ready)
 *   vmu       the violations ring and `gone`
 *   polmu     the policy pointer; innermost, nothing is taken inside it
 *   prep.popmu the full-text build's read-ahead (struct prepper in
 *             vault_prep.c): its threads take it holding nothing, and
 *             ft->fmu inside it to take a path off the queue
 *   prep.mu   the read-ahead's ring of prepared texts; innermost
 *   ft->q     the full-text work's queue (workq.h; its rounds are pushed
 *             under ft->fmu); innermost. Its worker runs the work
 *             holding none of these; ft->q is stopped and joined holding
 *             none of them either.
 *
 * Callers outside (the mount, the control socket) take their own locks
 * before wmu or after releasing it. Listeners run under wmu and may take
 * their own locks there, as long as they never call back into the vault
 * while holding them. ThreadSanitizer's stress test (tests/test_stress.c)
 * checks the order.
 */
#pragma once

#include "fileio.h"
#include "vault.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

struct listener {
	vault_listener_fn fn;
	void *ud;
};

/* The full-text work queue and the racy notes of the store (opaque:
 * vault_fulltext.c). */
struct fulltext;

struct vault {
	char *root; /* immutable after open */
	char *name; /* immutable after open */
	int rootfd; /* immutable after open */
	/* Read under rw (readers) or wmu (writers); replaced or changed
	 * only with wmu held and rw taken for writing. */
	struct index *ix;
	/* The policy: swapped by a reload under polmu; users take their own
	 * reference (vault_policy_get()), so a reload never frees one in
	 * use. */
	pthread_mutex_t polmu;
	struct policy *pol; /* polmu */
	pthread_rwlock_t rw;
	pthread_mutex_t wmu;
	/* Index builds running, and the paths changed meanwhile: a build's
	 * result would not have them. */
	int building;	       /* wmu */
	struct ptrvec touched; /* wmu */
	/* vault_on_names(), until the next build takes it. */
	vault_names_fn names_fn;    /* wmu */
	void *names_ud;		    /* wmu */
	struct listener *listeners; /* wmu */
	size_t nlisteners;	    /* wmu */
	/* Who makes the changes under the writer lock (vault_set_origin),
	 * cleared at vault_write_unlock. */
	const struct vault_origin *origin; /* wmu */
	/* vault_set_settle() */
	vault_settle_take_fn settle_take; /* wmu */
	vault_settle_run_fn settle_run;	  /* wmu */
	void *settle_ud;		  /* wmu */
	/* Ring of recent violations, oldest first. */
	pthread_mutex_t vmu;
	struct vault_violation *violations; /* vmu */
	size_t nviolations;		    /* vmu */
	char *gone; /* vmu: why the vault folder is no longer served */
	atomic_size_t idx_done, idx_total; /* atomic */
	atomic_bool idx_ready;		   /* atomic */
	size_t idx_cached, idx_parsed;	   /* rw */
	/* The on-disk index (may be NULL): attached before the first index
	 * is built, i.e. before any reader or writer uses it, then only its
	 * own locks (store.c) and smu for its writer connection. */
	struct store *_Atomic store; /* atomic: published to readers */
	pthread_mutex_t smu;
	/* The stored entries being read ahead (vault_preload_entries()),
	 * taken by the next build; only the thread that builds uses it. */
	struct entries_load *preload;
	/* The history: attached and detached under wmu (or while no writer
	 * runs); used by writers under wmu, by readers through its own
	 * locks (history.c). */
	struct history *_Atomic hist; /* atomic: published to readers */
	/* The full-text queue: made in vault_open(), freed in vault_free();
	 * its fields name their own locks. */
	struct fulltext *ft;	   /* immutable after open */
	atomic_size_t stale_temps; /* atomic: vaultd's temp files removed */
	/* Writers waiting in vault_write_lock(): the full-text work cuts
	 * its batch short for them. */
	atomic_uint writers_waiting; /* atomic */
	/* Spare files for writes (fileio.h), made on the first write. */
	struct file_pool *pool; /* wmu */
	bool pool_tried;	/* wmu */
	size_t pool_fill;	/* wmu: the spares asked of it ahead */
	file_in_use_fn in_use;	/* wmu: files vaultd holds elsewhere */
	void *in_use_ud;	/* wmu */
};

/* ---- vault.c ---- */

/* A path changed while an index build runs (wmu held): the build takes it
 * again from the folder when it is put in place. */
void vault_touched(struct vault *v, const char *path);
/* Send an event to the listeners (wmu held). */
/* vault_emit() of a note vaultd created or changed itself with text (its
 * file's stat st): listeners are handed the text (struct vault_event). */
void vault_emit_written(struct vault *v, const char *path, bool created,
			const char *source, uint64_t old_ino, const char *text,
			size_t len, const struct stat *st);
void vault_emit(struct vault *v, enum vault_event_type t, const char *path,
		const char *old_path, const char *source, uint64_t old_ino);
/* How notes are read now (the policy's note flags). */
unsigned vault_note_flags(struct vault *v);

/* ---- vault_sync.c ---- */
/* A read ahead of the stored entries that no build took (closing). */
void vault_preload_drop(struct vault *v);

/* A note file's text and stat, read through one descriptor (the text
 * and the stat belong together). *ret_text is NULL for a note too big to
 * index. No vault lock needed. */
int vault_read_note_file(int rootfd, const char *path, char **ret_text,
			 size_t *ret_len, struct stat *ret_st,
			 int64_t *ret_btime);
/* The note at path, read and parsed; NULL when it cannot be read (the
 * error in *ret_err when asked). The text is handed back when asked for. */
struct note *vault_load_note(int rootfd, const char *path, unsigned flags,
			     char **ret_text, size_t *ret_len, int *ret_err);

/* ---- vault_write.c ---- */

/* The spare files for a write (wmu held), or NULL. */
struct file_pool *vault_write_pool(struct vault *v);
/* Put n in the index in place of the note at its path (wmu held; takes
 * rw for writing). */
void vault_index_swap_in(struct vault *v, struct note *n);
/* Drop the note at path (a copy: the note is freed) from the index, queue
 * it for the store and send VEV_DELETED (wmu held; takes rw for
 * writing). old_ino: its file's inode. */
void vault_index_drop(struct vault *v, const char *path, uint64_t old_ino,
		      const char *source);

/* ---- vault_fulltext.c ---- */

struct fulltext *fulltext_new(void);
struct fulltext *fulltext_free(struct fulltext *ft);
/* Stop the background work, then settle the racy stored entries before
 * closing (takes wmu and smu). */
void vault_fulltext_close(struct vault *v);
/* The on-disk index follows a note that changed, was deleted or renamed
 * (wmu held): its path is queued for the full-text work. */
void vault_store_queue(struct vault *v, const char *path);
/*
 * After a build read the folder (no vault lock held): the notes not taken
 * from their stored entry (cached[i] false) and the stored entries of
 * notes that are gone are queued; full-text search is ready when nothing
 * is. Returns how many paths are queued.
 */
struct store_entries;
size_t vault_fulltext_queue_scan(struct vault *v, const struct ptrvec *paths,
				 const bool *cached,
				 struct store_entries *stored);

/* ---- vault_prep.c: a first build's read-ahead ---- */

/* A queued note read and prepared for the store. */
struct prep_job {
	char *path;
	struct stat st;
	struct store_text *t; /* NULL: not read (gone, unreadable) */
	uint32_t hash;	      /* note_text_hash() of the text */
	size_t bytes;
};

/* The next queued path to prepare (taken off the queue; the caller frees
 * it), or NULL when the queue is empty. */
typedef char *(*prep_next_fn)(struct vault *v);
struct prepper;
/* Threads that read and prepare what next hands out; NULL if none could
 * be started. */
struct prepper *prep_start(struct vault *v, prep_next_fn next);
/* Stop it; the texts it prepared and not handed out are dropped (their
 * notes are queued again by whatever stopped it: a rebuild). */
struct prepper *prep_stop(struct prepper *p);
/* The next prepared text, in the order next handed the paths out: 1, 0
 * when it is not ready yet, -1 when there will be none (the queue was
 * seen empty). */
int prep_take(struct prepper *p, struct prep_job *ret);
/* Wait (holding no vault lock) until a text is ready or none will be. */
void prep_wait(struct prepper *p);

/* ---- vault_violations.c ---- */

/* Read .vaultd/violations.jsonl into the ring (before the vault is
 * shared). */
void vault_violations_load(struct vault *v);
/* Keep refused text under .vaultd (the path, to free), or NULL; *ret_why
 * says why it is not where it should be. */
char *vault_save_rejected(struct vault *v, const char *path, const char *text,
			  size_t len, char **ret_why);

/* ---- vault_move.c: link rewrites shared with vault_trash.c ---- */

/* A linking note to rewrite, with its new text. */
struct pending {
	struct note *src;
	char *text; /* the new text */
	size_t len;
	int links;
	char *old; /* the text it was rewritten from (dry runs) */
	size_t old_len;
	char *new_path; /* where a moving note goes, or NULL */
	/* text parsed, for the index, while the batch is synced
	 * (vault_prepare_sources(); a note staying where it is), or NULL */
	struct note *parsed;
};

void vault_pending_free(struct pending *p, size_t n);
/*
 * The new texts of the notes srcs (the vector is freed) for the moves
 * mv, or for the delete of note deleted: those that change, in path
 * order (with their old texts when keep_old), and the number of links
 * changed.
 */
struct index_moves;
int vault_rewrite_sources(struct vault *v, struct ptrvec *srcs,
			  const struct index_moves *mv,
			  const struct note *deleted, bool keep_old,
			  struct pending **ret, size_t *ret_n, int *ret_links,
			  char **ret_msg);
/* The rewritten linking notes written beside them and made durable, not
 * yet in place (wmu held); a failure changes nothing. */
int vault_prepare_sources(struct vault *v, struct pending *p, size_t n,
			  struct file_batch **ret_b, char **ret_msg);
/* Put the prepared linking notes in place, then in the index. */
int vault_apply_sources(struct vault *v, struct pending *p, size_t n,
			struct file_batch *b, const char *source,
			char **ret_msg);
/* The linking notes rewritten, by the name a client knows them by. */
void vault_moved_set_updated(struct vault *v, struct vault_moved *m,
			     const struct pending *p, size_t n);
/* A file a dry run would touch, with the diff of its change. */
struct vault_change *vault_moved_add_diff(struct vault_moved *m,
					  const char *path, const char *to,
					  const char *a, size_t alen,
					  const char *b, size_t blen);
/* The linking notes a dry run would rewrite, each with its diff. */
int vault_moved_add_source_diffs(struct vault *v, struct vault_moved *m,
				 const struct pending *p, size_t n,
				 char **ret_msg);
/* The report to the caller who asked for it (ret may be NULL); m is
 * left empty for its cleanup. Returns 0. */
int vault_moved_done(struct vault_moved *m, struct vault_moved *ret);

DEFINE_TRIVIAL_CLEANUP_FUNC(struct file_batch *, file_batch_free)
