/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A note as the index keeps it: names, tags, aliases and outgoing links
 * with line numbers. Bodies are not kept in memory; tools read files.
 */
#pragma once

#include "markdown.h"
#include "util.h"

#include <stdint.h>
#include <sys/stat.h>

struct note;

struct link {
	struct note *src;
	char *target;  /* link path as meant, no #subpath ("" = this note) */
	char *subpath; /* heading or ^block, or NULL */
	char *alias;
	char *key; /* folded basename without .md: resolution bucket */
	int line;
	uint8_t kind;	    /* enum link_kind */
	bool resolved_file; /* resolves to an attachment (non-note file) */
	struct note *to;    /* the note it resolves to, or NULL */
};

struct note {
	char *path;	 /* vault-relative, as on disk: "a/b/Note.md" */
	char *name;	 /* "Note" */
	char *fold_path; /* NFC + case fold of path */
	char *fold_name;
	size_t dirlen;	    /* bytes of "a/b" (0 at the root) */
	size_t fold_dirlen; /* the same in fold_path */
	char **tags;	    /* display forms, deduplicated case-insensitively */
	char **fold_tags;   /* the same, folded */
	size_t ntags;
	char **aliases; /* as written: "AI" and "ai" are two aliases */
	size_t naliases;
	char **alias_folds;  /* each alias folded (parallel to aliases) */
	char **fold_aliases; /* the distinct folded aliases, for lookup */
	size_t nfold_aliases;
	char **fm_keys; /* top-level frontmatter keys with a value */
	/* The frontmatter's values (props.h), for property queries. */
	const unsigned char *props;
	uint32_t props_len;
	/* Its task list items (tasks.h), or NULL. */
	const unsigned char *tasks;
	uint32_t tasks_len;
	struct link *links;
	size_t nlinks;
	struct ptrvec incoming; /* struct link * from other notes */
	int64_t mtime_ns;
	int64_t btime; /* creation time (statx), or mtime */
	int64_t size;
	uint64_t ino;
	bool fm_invalid;
	/* The frontmatter is over what vaultd reads (frontmatter.h): its
	 * tags are unknown, so the guard refuses writes that make it so. */
	bool fm_unread;
	int fm_err_line;
	bool too_big;	     /* indexed by name only */
	unsigned read_flags; /* NOTE_READ_* it was read with */
	/*
	 * Racy: the file was read (or written) before its modification time
	 * was NOTE_RACY_NS old, so a later write could have left the same
	 * time, size and inode: its stat proves nothing, its text_hash (a
	 * CRC-32 of the text read, kept for racy notes only) tells. Notes from
	 * the on-disk index are never racy (racy ones are stored with no time).
	 */
	bool racy;
	uint32_t text_hash;
};

/* When (CLOCK_REALTIME, ns) the note's file time is old enough that a
 * read then proves later writes change it: file times are kept to a clock
 * tick (a few ms) by Linux's own file systems; a time in whole seconds
 * (FAT keeps 2 s) gets 2 s. */
int64_t note_racy_until(const struct note *n);

/* Largest note whose contents are indexed (bigger ones by name only;
 * search results name them). Indexing is linear in the note's size. */
#define NOTE_MAX_INDEXED (64u << 20)

/* NFC + case fold; invalid UTF-8 falls back to ASCII lower-casing. */
char *fold_key(const char *s);
char *fold_key_n(const char *s, size_t n);
/*
 * The first line of text whose folded form holds fq (folded): its index
 * (0 for the first line) and, in *ret_line, its text cut to 200 bytes at a
 * character boundary. -1 when no line holds it.
 */
int fold_find_line(const char *text, const char *fq, char **ret_line);

/*
 * How notes are read, as the vault's policy says. Obsidian 1.9 reads no
 * "tag", "alias" and "cssclass" properties (Properties, "Deprecated
 * properties"); a vault still using them keeps them with this flag.
 */
enum {
	NOTE_READ_LEGACY_PROPERTIES = 1 << 0,
};

/*
 * Build a note from its path and text (text may be NULL: name only),
 * read with NOTE_READ_* flags. Its links are those of its properties
 * (frontmatter.h), then those of its body, in the order of the text.
 */
struct note *note_new(const char *path, const char *text, size_t len,
		      unsigned flags);
struct note *note_free(struct note *n);
/* The file facts of the note's file, read (or written) just now, with the
 * text the note was made from (for a racy note's text_hash; NULL: none). */
void note_set_stat(struct note *n, const struct stat *st, int64_t btime,
		   const char *text, size_t len);
/* Whether the file with these facts is the one the note was made from,
 * known from its facts alone (false for a racy note: read it again). */
bool note_same_file(const struct note *n, const struct stat *st);
/* The note's text_hash for a text. */
uint32_t note_text_hash(const char *text, size_t len);
/* Whether a text read from a file with these facts (its note_text_hash)
 * is the one the note was made from. */
bool note_made_from(const struct note *n, const struct stat *st,
		    uint32_t text_hash);

/* Bumped whenever parsing changes what a note's index entry holds: stored
 * entries of another format are not reused. */
#define NOTE_FORMAT 6

/*
 * A note as a compact blob (tags, aliases, frontmatter keys, links, the
 * flags it was read with), so a restart can rebuild the index without
 * reading unchanged files. note_from_blob() returns NULL for a blob it
 * cannot read.
 */
void *note_to_blob(const struct note *n, size_t *ret_len);
struct note *note_from_blob(const char *path, const void *blob, size_t len);
/* A copy of the note as the index keeps it, the stat it was read at
 * included (not its incoming links, which belong to an index). */
struct note *note_copy(const struct note *n);

/* True when the note has frontmatter key `key` with a non-empty value. */
bool note_has_key(const struct note *n, const char *key);
/* True when the note carries tag (case-insensitive, exact, not nested). */
bool note_has_tag(const struct note *n, const char *tag);
/* Tag hierarchy match: "vc" matches "vc" and "vc/project". */
bool tag_matches(const char *tag, const char *query);

/* Path helpers: vault-relative paths with '/' separators. */
bool path_is_note(const char *path); /* ends in .md */
/* "a/b/Note.md" -> "Note" (malloc'd). */
char *path_note_name(const char *path);
/* Normalise "a/./b/../c" -> "a/c"; NULL when it climbs above the root. */
char *path_normalize(const char *path);
