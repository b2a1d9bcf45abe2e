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

/*
 * A note's fields are read through these accessors (the struct is
 * private to the index and the note parser, note_int.h). Strings and
 * arrays belong to the note: valid while it is, under the index's lock.
 */
const char *note_path(const struct note *n);	  /* "a/b/Note.md" */
const char *note_name(const struct note *n);	  /* "Note" */
const char *note_fold_path(const struct note *n); /* NFC + case fold */
const char *note_fold_name(const struct note *n);
size_t note_dirlen(const struct note *n); /* bytes of "a/b"; 0 at root */
/* Tags in display form, deduplicated case-insensitively, note_ntags()
 * of them (the array may be NULL when there are none). */
char *const *note_tags(const struct note *n);
size_t note_ntags(const struct note *n);
const char *note_tag(const struct note *n, size_t i);
char *const *note_fold_tags(const struct note *n); /* parallel to tags */
/* Aliases as written ("AI" and "ai" are two). */
char *const *note_aliases(const struct note *n);
size_t note_naliases(const struct note *n);
/* Frontmatter keys with a value, NULL-terminated (NULL: none). */
char *const *note_fm_keys(const struct note *n);
/* The note's outgoing links in order of appearance. */
const struct link *note_links(const struct note *n);
size_t note_nlinks(const struct note *n);
const struct link *note_link(const struct note *n, size_t i);
/* Property values (props.h) and task items (tasks.h) as packed bytes. */
const unsigned char *note_props(const struct note *n);
uint32_t note_props_len(const struct note *n);
const unsigned char *note_tasks(const struct note *n);
uint32_t note_tasks_len(const struct note *n);
/* The file facts it was read at. */
int64_t note_mtime_ns(const struct note *n);
int64_t note_btime(const struct note *n); /* creation time, or mtime */
int64_t note_size(const struct note *n);
uint64_t note_ino(const struct note *n);
/* Indexed by name only (over NOTE_MAX_INDEXED). */
bool note_too_big(const struct note *n);
/* The frontmatter's YAML is broken, and the line of the error (1-based;
 * 0: unknown). */
bool note_fm_invalid(const struct note *n);
int note_fm_error_line(const struct note *n);
/* The frontmatter is over what vaultd reads: its tags are unknown. */
bool note_fm_unread(const struct note *n);
unsigned note_read_flags(const struct note *n); /* NOTE_READ_* */
/* A racy note (note_racy_until()): its stat proves nothing; its
 * text_hash tells whether a text read again is the one it was made from. */
bool note_racy(const struct note *n);
uint32_t note_hash(const struct note *n);
/* The note's file was read again once its time was old enough and held
 * the same text: it is no longer racy. */
void note_settle(struct note *n);
/* The file facts of a note taken from the stored index (the file was
 * found unchanged), its creation time, or that it is indexed by name only
 * (over NOTE_MAX_INDEXED). */
void note_set_file(struct note *n, int64_t mtime_ns, int64_t size, uint64_t ino,
		   int64_t btime);
void note_set_btime(struct note *n, int64_t btime);
void note_mark_too_big(struct note *n);
/* The distinct folded aliases, for lookup. */
char *const *note_fold_aliases(const struct note *n);
size_t note_nfold_aliases(const struct note *n);
/* Ask the CPU for the note and its properties ahead of a scan. */
void note_prefetch(const struct note *n);

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

/* Bumped whenever parsing changes what a note's index entry holds, or
 * how it is stored (7: the blob's head gives its layout; 8: varints): a
 * database of another format is made anew, once. */
#define NOTE_FORMAT 8

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
