/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Note history with libgit2, in a bare repository of vaultd's own
 * (<vault>/.vaultd/history.git) whose trees hold the vault's notes. A
 * user's own .git is never opened.
 *
 * Changes are recorded as they happen (the note's new text is read at
 * once and queued, so a writer never waits for git) and committed in
 * batches by the history thread: everything one writer changes within
 * HISTORY_BATCH_MS is one commit, authored by that writer ("mcp:<tool>",
 * "mount:<process>", "vaultctl", "external"). A commit's message names
 * the notes in its first line and lists them below, one per line
 * ("Changed: a.md", "Deleted: b.md", "Renamed-From: c.md" followed by
 * "Renamed-To: d.md"); the per-note log is built from those lines, so
 * asking for a note's history never walks trees.
 *
 * Thread-safe: one mutex guards the repository and the pending batch,
 * another the queue; writers take only the second.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define HISTORY_BATCH_MS 2000

struct history;

/* A note file as the vault index knows it (for the start-up scan). */
struct history_file {
	const char *path;
	int64_t mtime_ns;
	int64_t size;
	uint64_t ino;
};

struct history_version {
	char id[41];	  /* full commit id */
	char short_id[8]; /* 7 hex digits */
	int64_t time;	  /* seconds since the epoch (UTC) */
	char *author;	  /* "mcp:append_note", "external", ... */
	char *message;	  /* the commit's first line */
	char *path;	  /* the note's path in that version */
	bool deleted;	  /* the note was deleted in this version */
};
void history_versions_free(struct history_version *v, size_t n);
/* Free one version's strings (the struct itself is the caller's). */
void version_clear(struct history_version *v);

/*
 * Open <root>/.vaultd/history.git, creating it when missing. A repository
 * that cannot be read is moved aside (history.git.damaged-<time>) and a
 * new one made; *ret_note then says so (the caller logs it).
 */
int history_open(int rootfd, const char *root, struct history **ret,
		 char **ret_note);
void history_free(struct history *h);
const char *history_path(const struct history *h);

/*
 * Record the vault's notes as they are now (at start): notes whose size,
 * mtime and inode match the last recorded state are not read. Differences
 * from the last commit are committed at once (the first run: one commit
 * with every note, author "vaultd"; later: author "external"). Returns
 * the number of notes found changed, or a negative errno.
 */
int history_scan(struct history *h, const struct history_file *files, size_t n);

/*
 * Optional, before history_scan() and without blocking anyone: read the
 * notes that differ from the last recorded state and write their blobs,
 * so that the scan (which writers wait for) has little left to do.
 * Returns the number of notes read.
 */
int history_prepare(struct history *h, const struct history_file *files,
		    size_t n);

/* A note was created or changed (its text is read from the vault now),
 * was deleted, or was renamed: the change is queued for the next commit.
 * author: who wrote. Negative errno on failure (the change is then in
 * the next scan). */
int history_note_changed(struct history *h, const char *path,
			 const char *author);
/* history_note_changed() of a note vaultd wrote itself, with the text it
 * wrote and its file's stat: nothing is read (the text is copied). */
int history_note_written(struct history *h, const char *path,
			 const char *author, const char *text, size_t len,
			 const struct stat *st);
int history_note_deleted(struct history *h, const char *path,
			 const char *author);
int history_note_renamed(struct history *h, const char *old_path,
			 const char *new_path, const char *author);

/*
 * vaultd is about to change, rename or delete the note at path: until the
 * recording at start (history_scan()) has run, its text as it is now is
 * kept for that recording (once per note), and changes are held until it
 * has run. Afterwards, nothing to do. Negative errno when the text could
 * not be kept.
 */
int history_keep_original(struct history *h, const char *path);
/* The recording at start has run. */
bool history_recorded(struct history *h);
/* A pack is being written. */
bool history_packing(struct history *h);

/*
 * Take the queued changes into the pending batch and commit it if it is
 * due (or now, with force). Returns the number of commits made (one per
 * writer whose changes were queued one after the other) or a negative
 * errno.
 */
int history_commit(struct history *h, bool force);
/*
 * Objects are written loose; history_pack() packs them (without blocking
 * writers) when history_pack_due() says enough have piled up. Returns 1
 * when it packed, 0 when there was nothing to pack, or a negative errno.
 */
bool history_pack_due(struct history *h);
int history_pack(struct history *h);
/* The notes recorded at start, nothing pending, nothing to pack, no pack
 * running. */
bool history_settled(struct history *h);
/* Block until a batch is due, HISTORY_BATCH_MS after its first change
 * (true), or history_stop() (false). */
bool history_wait_due(struct history *h);
void history_stop(struct history *h);
/* Commits made, and bytes the repository takes on disk. */
void history_stats(struct history *h, size_t *ret_commits, uint64_t *bytes);
/* Commits are failing now (the last one did): why, to free; else NULL.
 * history_settled() is false meanwhile. */
char *history_failing(struct history *h);
/* Why the last failed operation failed (libgit2's words), or "". */
const char *history_error(struct history *h);

/*
 * The versions of the note now at path, newest first, following it back
 * across renames. Commits what is pending first. *ret_total: all of them.
 */
int history_log(struct history *h, const char *path, size_t limit,
		struct history_version **ret, size_t *ret_n, size_t *ret_total);

/*
 * The note now at path, at version (a full or abbreviated commit id, at
 * least 4 hex digits): its text and the version's details. Errors: -ENOENT
 * with *ret_err "unknown version" / "no such note in that version",
 * -EINVAL for a malformed or ambiguous id.
 */
int history_get(struct history *h, const char *path, const char *version,
		struct history_version *ret_ver, char **ret_text,
		size_t *ret_len, char **ret_err);

/*
 * A note's version: a short hash of its bytes (the first hex digits of
 * their git blob id), the same whoever reads the note.
 */
#define TEXT_VERSION_LEN 12
void text_version(const char *text, size_t len, char out[TEXT_VERSION_LEN + 1]);
/* The unified diff from a to b (3 lines of context), with the numbers of
 * added and deleted lines; "" when they are the same. */
char *text_diff(const char *old_path, const char *a, size_t alen,
		const char *new_path, const char *b, size_t blen,
		size_t *ret_add, size_t *ret_del);
/* The text of a version (text_version()) if the history holds it:
 * -ENOENT if not, -EINVAL for what is no version. */
int history_text_of(struct history *h, const char *version, char **ret_text,
		    size_t *ret_len);

/*
 * One change of a note, as recorded: list_changes and undo_changes.
 * before/after are the note's text versions (text_version()) before and
 * after the change; "" where there was no note.
 */
struct history_change {
	char commit[8]; /* 7 hex digits */
	int64_t time;
	char *writer;  /* "mcp:update_note" */
	char *session; /* the MCP session, or NULL */
	char kind;     /* 'C' created or changed, 'D' deleted, 'R' renamed */
	char *path;    /* the note (for a rename: its new path) */
	char *from;    /* 'R': its old path */
	char before[TEXT_VERSION_LEN + 1];
	char after[TEXT_VERSION_LEN + 1];
};
void history_changes_free(struct history_change *v, size_t n);

/* Which changes: made in one MCP session, or by MCP writers at all (no
 * session given), at or after since (0: any time). */
struct history_filter {
	const char *session;
	int64_t since;
};

/*
 * The changes f selects, newest first, at most limit, from position
 * start on (0: the newest; else a *ret_next of an earlier call).
 * *ret_next: where the next page starts, 0 when there is none. Commits
 * what is pending first.
 */
int history_changes(struct history *h, const struct history_filter *f,
		    uint64_t start, size_t limit, struct history_change **ret,
		    size_t *ret_n, uint64_t *ret_next);

/* When the note now at path was first recorded (0: never). */
int64_t history_created(struct history *h, const char *path);

/*
 * A unified diff of the note between two versions (3 lines of context),
 * with its numbers of added and deleted lines.
 */
int history_diff(struct history *h, const char *path, const char *from,
		 const char *to, char **ret_diff, size_t *ret_add,
		 size_t *ret_del, struct history_version *ret_from,
		 struct history_version *ret_to, char **ret_err);
