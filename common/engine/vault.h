/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vault: its root folder (held as one directory fd), the index, the
 * policy, and the single guarded path through which every write goes.
 *
 * Locking: readers take the read lock around index access. Writers take
 * the writer lock (one writer at a time, so a read-modify-write of a note
 * can never lose another writer's update) and the vault takes the index
 * write lock only for the moment it swaps notes in the index.
 */
#pragma once

#include "fileio.h"
#include "index.h"
#include "policy.h"

struct vault;

enum vault_event_type {
	VEV_CREATED,
	VEV_CHANGED,
	VEV_RENAMED,
	VEV_DELETED,
};

struct vault_event {
	enum vault_event_type type;
	const char *path;     /* the note (new path for a rename) */
	const char *old_path; /* renames only */
	const char *source;   /* "mcp:create_note", "mount:vim", "external" */
	uint64_t old_ino;     /* the file the note was before (0: none) */
	/* The token of the front end that changed this path itself (see
	 * vault_set_origin()), or NULL: vaultd's own side effects (links
	 * rewritten elsewhere), other writers, changes from outside. */
	const void *origin;
	/* Created or changed by vaultd itself: the text it wrote and the
	 * stat of the file that holds it, so that listeners need not read
	 * the note back (text NULL: read it if need be). */
	const char *text;
	size_t len;
	const struct stat *st;
};

typedef void (*vault_listener_fn)(const struct vault_event *ev, void *ud);

/*
 * Whether path is an Obsidian vault: a folder with a .obsidian/ folder in
 * it (Obsidian makes one in every folder it opens as a vault). 0: it is;
 * -EMEDIUMTYPE: a folder, but not a vault; another -errno: no such folder
 * (-ENOENT), not a folder (-ENOTDIR), cannot be read.
 */
int vault_probe(const char *path);
/* Make path an Obsidian vault: create the folder (and its parents) and
 * its .obsidian/ as needed. */
int vault_make_obsidian(const char *path);

/* Open the vault folder and load its policy; does not index yet. */
int vault_open(const char *root, struct vault **ret, char **ret_msg);
/*
 * The vault folder was moved or deleted under vaultd: from now on every
 * answer is this error, never an empty vault. vault_gone(): the reason
 * (to free), or NULL while the folder is there.
 */
void vault_set_gone(struct vault *v, const char *why);
char *vault_gone(struct vault *v);
/* How many of vaultd's own temp files (left by a crash) the scans since
 * the last call removed. */
size_t vault_stale_temps(struct vault *v);
struct vault *vault_free(struct vault *v);

/* Index every note; readers see the old (empty) index until it is done.
 * Notes and folders that are there but cannot be read are left out: then
 * the first error is returned (negative errno) and *ret_msg, when asked,
 * says which and how many. */
typedef void (*vault_progress_fn)(size_t done, size_t total, void *ud);
int vault_index_all(struct vault *v, vault_progress_fn progress, void *ud,
		    char **ret_msg);
/* Progress of the running or last build. */
void vault_index_state(struct vault *v, size_t *ret_done, size_t *ret_total,
		       bool *ret_ready);
/*
 * For a start, whose first index nobody has read yet: the next
 * vault_index_all() puts its index in place before binding its links
 * (a third of its work at 100,000 notes), calls fn, then binds them and
 * returns, holding the writer lock throughout. From fn until that
 * return, readers may use the notes' paths, names, tags and text but no
 * link (a link's target, a note's incoming links); writers wait. Taken
 * by that one build.
 */
typedef void (*vault_names_fn)(void *ud);
void vault_on_names(struct vault *v, vault_names_fn fn, void *ud);

/*
 * The on-disk index (store.h): attach it before vault_index_all(), which
 * then reuses the entries of unchanged files. The vault owns it and keeps
 * it in step with every change, before the change's call returns. Text
 * that is out of date there (a first build, changed files) is worked off
 * by vault_fulltext_work(); full-text search is ready when that is done.
 */
struct history;
/*
 * Note history (history.h): every change the vault makes or sees is
 * recorded with its source as the author. The vault does not own h.
 */
void vault_attach_history(struct vault *v, struct history *h);
struct history *vault_history(struct vault *v);
/* The note at path is about to be changed, renamed or deleted by vaultd
 * (writer lock held): before the first recording, its text now is kept
 * for it (history_keep_original()). */
void vault_keep_original(struct vault *v, const char *path);
/* Record the notes as they are now (after the index is built; blocks
 * writers meanwhile). Returns the number of notes found changed. */
int vault_history_scan(struct vault *v);

struct store;
void vault_attach_store(struct vault *v, struct store *s);
/* Start reading the stored entries on a thread of their own (after
 * vault_attach_store(), from the thread that then calls
 * vault_index_all(), which takes them): the read overlaps what that
 * thread does meanwhile, such as setting up a watcher. */
void vault_preload_entries(struct vault *v);
/* NULL when there is none (or it could not be rebuilt). Valid under the
 * read lock. */
struct store *vault_store(struct vault *v);
struct vault_store_state {
	bool enabled, ready;
	bool substrings_ready; /* the trigram index is complete too */
	size_t done, total;    /* texts indexed / to index in this build */
	size_t cached, parsed; /* at the last vault_index_all() */
	const char *path;
	int64_t bytes;
};
void vault_store_state(struct vault *v, struct vault_store_state *st);
/* Put every out-of-date text in the on-disk index, in slices that hold
 * the writer lock briefly (call without it). Rebuilds a damaged index. */
void vault_fulltext_work(struct vault *v);
/* After a first build: fill the substring (trigram) index, in slices,
 * putting queued writes in between. Returns the notes added. */
size_t vault_substrings_work(struct vault *v);
/* One step of the background work, for the caller's log: the texts put
 * (n: the texts to put when it began) or, after them, the substring
 * backfill (n: the notes it added). */
struct vault_fulltext_step {
	bool substrings;
	bool read_ahead; /* the commonest words read ahead: n of them */
	size_t n;
	uint64_t ns; /* how long it took */
};
typedef void (*vault_fulltext_fn)(struct vault *v,
				  const struct vault_fulltext_step *step,
				  void *ud);
/*
 * From now on keep the on-disk index up to date in the background (a
 * worker of its own; call once, after vault_index_all()): what is out of
 * date now (a first build, files changed while vaultd was not running),
 * then whatever writers queue (a moment later, so that a burst is put
 * once), a rebuild after damage, each followed by the substring
 * backfill. step (optional) is called from the worker after each step,
 * and from the read-ahead's worker once it is done (store_warm_new).
 * 0, or -EAGAIN when the worker cannot start.
 */
int vault_fulltext_start(struct vault *v, vault_fulltext_fn step, void *ud);
/* Stop the background work (the step running ends at its next slice)
 * and wait for it. */
void vault_fulltext_stop(struct vault *v);
bool vault_fulltext_stopped(struct vault *v);
/* Once the first build is done: put the notes still queued (big notes
 * written a moment ago), so that a search that follows sees them. Call
 * without the vault's locks. */
void vault_fulltext_flush(struct vault *v);
/* Wait until full-text search is ready; false on timeout. */
bool vault_fulltext_wait_ready(struct vault *v, int timeout_ms);
/* After a failed search: when the database turned out damaged, have it
 * rebuilt (by vault_fulltext_work()). */
void vault_store_damaged(struct vault *v);
/* Something to log about the on-disk index (rebuilt, ...), or NULL. */
char *vault_fulltext_note(struct vault *v);

void vault_add_listener(struct vault *v, vault_listener_fn fn, void *ud);
void vault_remove_listener(struct vault *v, vault_listener_fn fn, void *ud);

const char *vault_root(const struct vault *v); /* real path */
const char *vault_name(const struct vault *v); /* its folder name */
int vault_rootfd(const struct vault *v);

void vault_read_lock(struct vault *v);
void vault_read_unlock(struct vault *v);
void vault_write_lock(struct vault *v);
void vault_write_unlock(struct vault *v);
/* A file a write replaces is kept as a spare (fileio.h) only when fn
 * says vaultd holds it nowhere else (the mount's nodes); fn takes no
 * vault lock. NULL: none. Takes the writer lock. */
void vault_set_file_in_use(struct vault *v, file_in_use_fn fn, void *ud);
/* The spare files of the vault's writes (fileio.h), for a new note's
 * empty file (file_pool_place()), or NULL; valid until the vault is
 * freed. Takes the writer lock. */
struct file_pool *vault_spare_pool(struct vault *v);
/* Valid under the read lock or the writer lock. */
struct index *vault_index(struct vault *v);
/* The policy now, as a reference of the caller's own (policy_free() it;
 * _cleanup_policy_): a reload while it is used never frees it. */
struct policy *vault_policy_get(struct vault *v);
/*
 * Re-read .vaultd/policy.yaml; on error the old policy stays. Returns 1
 * when the new policy reads notes otherwise (legacy_properties): the
 * caller indexes the vault again (vault_index_all()).
 */
int vault_reload_policy(struct vault *v, char **ret_msg);

/* Read a note's text (the file as it is now). */
int vault_read_text(struct vault *v, const struct note *n, char **ret,
		    size_t *ret_len);

/*
 * Who makes the changes made under the writer lock. A front end that
 * keeps its own caches of some paths (the mount: its kernel entries)
 * and updates them itself names them and its token: the events for those
 * paths, and for what is under them when they are folders, carry the
 * token until vault_write_unlock(); the events of other paths (the links
 * a rename rewrites elsewhere) carry none, so its listener handles those
 * like any change. o must stay valid until the unlock.
 */
struct vault_origin {
	const void *token;
	const char *paths[2]; /* notes or folders; NULL: none */
};
void vault_set_origin(struct vault *v, const struct vault_origin *o);

/*
 * What a listener queued under the writer lock and must finish before
 * the writer answers anyone (the mount: dropping the kernel's caches of
 * the files a write replaced). take() runs as a writer lets go of the
 * lock, still under it, and hands over what was queued (NULL: nothing);
 * run() gets it right after, on the writer's thread, no lock held. One
 * at a time; set with take NULL to remove (a run() may still be going:
 * the caller waits for it its own way).
 */
typedef void *(*vault_settle_take_fn)(void *ud);
typedef void (*vault_settle_run_fn)(void *taken, void *ud);
void vault_set_settle(struct vault *v, vault_settle_take_fn take,
		      vault_settle_run_fn run, void *ud);

struct write_opts {
	const char *source; /* who writes, for events and violations */
	bool create;	    /* the note must not exist yet */
	bool skip_guard;    /* vaultd's own link rewrites */
	bool save_rejected; /* keep refused text under .vaultd/rejected */
	/* The writer points its own hold on the note's file (the mount's
	 * node) at the new file once the commit returns (WRITE_FOLLOWED). */
	bool followed;
};

struct write_outcome {
	char *warning;	     /* policy warn mode: what was wrong */
	char *rejected_path; /* where refused text was saved */
};
void write_outcome_clear(struct write_outcome *o);

/*
 * The guarded write (call with the writer lock held): checks the new text
 * against the policy, writes it atomically, updates the index and sends
 * the event. Refused: -EPERM and the policy's message; the note keeps its
 * old text. Returns 0 or -errno with *ret_msg.
 */
int vault_commit(struct vault *v, const char *path, const char *text,
		 size_t len, const struct write_opts *o,
		 struct write_outcome *out, char **ret_msg);

/*
 * The guard alone (writer lock held): judge text as the new content of
 * the note at path, without writing it. Refused: the violation is
 * recorded (the text saved when o->save_rejected) and -EPERM returned
 * with the policy's message. Warn mode: recorded, 0, out->warning.
 */
int vault_guard(struct vault *v, const char *path, const char *text, size_t len,
		const struct write_opts *o, struct write_outcome *out,
		char **ret_msg);

/*
 * Renames that put text under a note's name (vault_replace.c; writer lock
 * held; flags as renameat2's): vault_replace_from() renames a file that
 * is not a note (an editor's temporary file) over the note at to, and
 * vault_replace_note() a note over another note, or exchanges the two
 * (RENAME_EXCHANGE). The text arriving under a note's name is judged as a
 * write to it first: refused, nothing moves and -EPERM with the policy's
 * message. Unreadable text: -ENOENT or -EIO; nothing moves. The notes
 * replaced are kept in history; the index follows both paths.
 */
int vault_replace_from(struct vault *v, const char *from, const char *to,
		       unsigned flags, const char *source, char **ret_msg);
int vault_replace_note(struct vault *v, const char *from, const char *to,
		       unsigned flags, const char *source, char **ret_msg);

/*
 * What vault_restore() puts back under a note's name: a text it had
 * (text, len), or its absence (absent: the note was new and goes), or the
 * file a delete moved to .trash/ (trash: renamed back, when there is no
 * text or writing it fails). With only_if, nothing is done unless the
 * note's text now hashes (hash_bytes()) to hash: no one else changed it.
 */
struct vault_restore {
	const char *text;
	size_t len;
	bool absent;
	const char *trash;
	bool only_if;
	uint64_t hash;
};

/*
 * Put a note back as it was after a later text of it was refused (the
 * mount's revert of an editor's save; writer lock held). What comes back
 * was judged when it was written, so it is not judged again; the index
 * and history follow with source as the writer. Returns 0 (with
 * *ret_untrashed when the trash file came back, if given), -ESTALE when
 * only_if does not hold (nothing done), or the error of the write or
 * rename (nothing changed).
 */
int vault_restore(struct vault *v, const char *path,
		  const struct vault_restore *r, const char *source,
		  bool *ret_untrashed);

/* A file a dry run would change: its path, where it moves (NULL: it
 * stays), the unified diff of its text, and for a folder move how many
 * of its links change (-1 otherwise). */
struct vault_change {
	char *path, *to, *diff;
	int links;
};

enum vault_move_kind {
	VAULT_MOVE_NOTE,   /* vault_rename() */
	VAULT_MOVE_FOLDER, /* vault_rename_folder() */
	VAULT_MOVE_TRASH,  /* vault_delete() */
};

/*
 * What a rename, a folder rename or a delete did (or, dry run, would
 * do). NOTE: the note's old and new name and path. FOLDER: the folder's
 * old and new path, the notes and other files moved. TRASH: the note's
 * name (old_name), path (old_path) and place in .trash (new_path);
 * keep_links when the policy leaves links to it as they are (warning
 * names the notes). updated: the notes whose links were rewritten (names
 * as a client writes them; for a folder, paths after the move), links:
 * how many links. changes: dry run only, every file it would touch.
 */
struct vault_moved {
	enum vault_move_kind kind;
	char *old_name, *new_name, *old_path, *new_path;
	size_t notes_moved, files_moved;
	char **updated;
	size_t nupdated;
	int links;
	bool dry_run, keep_links;
	char *warning; /* accepted in the policy's warn mode, or keep_links */
	struct vault_change *changes;
	size_t nchanges;
};
void vault_moved_clear(struct vault_moved *m);

/*
 * Rename/move a note and rewrite every link to it (writer lock held).
 * new_path is a checked vault path ending in ".md". On success *ret (if
 * not NULL) says what was done, or would be when dry_run.
 */
int vault_rename(struct vault *v, struct note *n, const char *new_path,
		 const char *source, bool dry_run, struct vault_moved *ret,
		 char **ret_msg);

/*
 * Rename or move the folder from (and everything in it) to to, both
 * checked vault paths, and rewrite every link that would lead elsewhere
 * (writer lock held): one rename of the folder, the rewritten notes put
 * in place around it as one batch (fileio.h), so that a crash leaves
 * each note whole. replace: an empty folder at to may be replaced, as
 * rename(2) does. On success *ret (if not NULL) says what was done (with
 * every change and its diff when dry_run).
 */
int vault_rename_folder(struct vault *v, const char *from, const char *to,
			const char *source, bool replace, bool dry_run,
			struct vault_moved *ret, char **ret_msg);

/* Move a note to .trash/ and mark or keep links per policy; *ret as for
 * vault_rename(). */
int vault_delete(struct vault *v, struct note *n, const char *source,
		 bool dry_run, struct vault_moved *ret, char **ret_msg);

/* The largest note text the vault reads whole: to judge it (a write, a
 * rename over a note), to restore or show it. */
#define VAULT_TEXT_MAX (1u << 30)

enum {
	SYNC_NO_GUARD = 1 << 0, /* the change was judged already */
};

/*
 * Reflect a change made outside vaultd (inotify, the mount's pass-through
 * paths): re-read the file and update the index; violations are recorded,
 * never refused. Writer lock held. A note that is there but cannot be read
 * (EIO, EMFILE, ...) keeps its entry: the error is returned.
 */
int vault_sync_path(struct vault *v, const char *path, const char *source,
		    unsigned flags);

/*
 * A note whose file is gone (deleted through the mount, after the grace
 * period): drop it from the index and mark or keep the links to it per
 * policy. Writer lock held.
 */
/*
 * A free name in .trash for the note at path (*ret, to free). Errors
 * (with *ret_msg): .trash is a symlink or a file, or cannot be used.
 */
int vault_trash_path(struct vault *v, const char *path, char **ret,
		     char **ret_msg);

int vault_forget_note(struct vault *v, const char *path, const char *source);

/* A recorded policy violation, as .vaultd/violations.jsonl holds it;
 * action: "warned" or "refused"; rejected_text may be NULL. A line
 * written by an older vaultd may lack a member: it is NULL then. */
struct vault_violation {
	char *time, *source, *path, *message, *action, *rejected_text;
};
/* Recorded policy violations, newest first, at most limit (<= 0: all),
 * *ret_n of them; free with vault_violations_free(). */
struct vault_violation *vault_violations(struct vault *v, int limit,
					 size_t *ret_n);
void vault_violations_free(struct vault_violation *a, size_t n);
void vault_record_violation(struct vault *v, const char *source,
			    const char *path, const char *message,
			    const char *rejected_path, bool accepted);
