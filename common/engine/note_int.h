/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The note's fields, private to the note parser (note.c, note_access.c)
 * and the index that links notes together (index.c). Everyone else reads
 * a note through note.h's accessors and the graph module (graph.h).
 */
#pragma once

#include "note.h"

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

/* A note's block being filled (note.c packs a parsed note into one,
 * note_blob.c a stored one). */
struct pack {
	char *s, *end; /* the strings' area, filled from s */
	/* A stored note said it needed less room than it does (damage):
	 * the strings since are the source's bytes, the note is dropped. */
	bool over;
};

/* One block for a note with these counts and strs bytes of strings;
 * *p is where its strings go. */
struct note *note_pack_alloc(size_t nlinks, size_t ntags, size_t naliases,
			     size_t nkeys, size_t nprops, size_t ntasks,
			     size_t strs, struct pack *p);
/* n bytes of s (or their ASCII lower case) copied into the block; when
 * the block has no room, p->over and s itself. */
char *note_pack_strn(struct pack *p, const char *s, size_t n);
char *note_pack_lower(struct pack *p, const char *s, size_t n);
/* n->fold_aliases from n->alias_folds. */
void note_distinct_folds(struct note *n);
