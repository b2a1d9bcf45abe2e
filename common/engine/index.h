/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The in-memory index and link graph: notes by path, by folded name, by
 * alias and by tag; outgoing links with line numbers and their resolved
 * targets; incoming links per note. Every update is incremental: adding,
 * replacing or removing one note touches only its own links and the links
 * whose resolution can change because of it.
 *
 * Not thread-safe by itself; the vault serialises writers and lets readers
 * share a read lock.
 */
#pragma once

#include "note.h"

struct index;

struct tag_entry {
	char *display; /* first spelling seen */
	char *fold;
	struct ptrvec notes; /* struct note * */
};

struct index *index_new(void);
struct index *index_free(struct index *ix);

/* Add or replace the note at n->path (takes ownership). */
void index_put(struct index *ix, struct note *n);
/* For the first build: add without resolving, then resolve once. */
void index_put_bulk(struct index *ix, struct note *n);
/* The same for many notes into an empty index (faster: two CPUs); the
 * notes' paths must differ. Then index_resolve_all(). */
void index_put_all(struct index *ix, struct note **notes, size_t n);
void index_resolve_all(struct index *ix);
/* index_put_all() but the links, sooner: they are grouped by key by
 * index_bind_links(), which must come before any other change or read
 * of a link. The index takes the array notes (not a copy). */
void index_put_notes(struct index *ix, struct note **notes, size_t n);
/* index_resolve_all() with no new generation: for an index whose readers
 * have read no link yet. They may go on reading its paths, names and
 * tags meanwhile (it writes only links_by_key, the links' targets and
 * the notes' incoming lists). */
void index_bind_links(struct index *ix);
/* Remove the note at path. Returns 0 or -ENOENT. */
int index_remove(struct index *ix, const char *path);

/* Non-note files (attachments) that links and embeds may point at. */
void index_put_file(struct index *ix, const char *path);
void index_remove_file(struct index *ix, const char *path);
bool index_has_file(const struct index *ix, const char *path);
/* The attachment at path (case-insensitive, NFC), or NULL. */
const struct note *index_file(const struct index *ix, const char *path);
/* Iterate attachments in no particular order: start with *iter = 0. */
bool index_next_file(const struct index *ix, size_t *iter,
		     const struct note **ret);
/* The paths of every note and attachment beneath the folder dir (copies
 * pushed to ret). */
void index_paths_under(const struct index *ix, const char *dir,
		       struct ptrvec *ret);

size_t index_count(const struct index *ix);
size_t index_file_count(const struct index *ix);
/* Bumped by every change; cursors and caches compare it. */
uint64_t index_generation(const struct index *ix);

/* The note at a vault-relative path (case-insensitive, NFC). */
struct note *index_by_path(const struct index *ix, const char *path);
/* Notes whose folded name is fold_name (may be NULL). */
const struct ptrvec *index_by_name(const struct index *ix,
				   const char *fold_name);

/*
 * A tool's note reference: bare name, alias, or vault path with or
 * without ".md". Returns 0 with *ret, -ENOENT, or -EEXIST when several
 * notes match (then the candidates are pushed to ret_candidates).
 */
int index_find(const struct index *ix, const char *ref, struct note **ret,
	       struct ptrvec *ret_candidates);

/*
 * Obsidian's link resolution, for target written in note src
 * (src may be NULL: resolve from the vault root). Returns the note, or
 * NULL; *ret_file is set when the target is an existing non-note file.
 */
struct note *index_resolve(const struct index *ix, const struct note *src,
			   const char *target, int kind, bool *ret_file);

/* All notes sorted by name (then path). Borrowed; valid until a change. */
struct note *const *index_sorted(struct index *ix, size_t *ret_n);
/* The notes too big to have their text searched (over NOTE_MAX_INDEXED),
 * in the same order; borrowed alike. */
struct note *const *index_too_big(struct index *ix, size_t *ret_n);
/* Iterate notes in no particular order: start with *iter = 0. */
bool index_next(const struct index *ix, size_t *iter, struct note **ret);

/*
 * The name to show for a note: its name when no other note shares it,
 * otherwise its path without ".md", so that every name handed out can
 * be given back to a tool unambiguously.
 */
char *index_display_name(const struct index *ix, const struct note *n);

/* Tags, sorted by display name (case-insensitive). Caller frees array. */
struct tag_entry **index_tags(const struct index *ix, size_t *ret_n);
const struct tag_entry *index_tag(const struct index *ix, const char *tag);

/* All links whose target key (folded basename) is fold_key. */
const struct ptrvec *index_links_by_key(const struct index *ix,
					const char *fold_key);

/* True for a link that points at nothing existing. */
bool link_is_broken(const struct link *l);

/*
 * Moves not made yet: notes and attachments of the index, each to a new
 * path. Links resolve through them as they will once the moves are made,
 * so that a rename can rewrite exactly the links it would re-point.
 * Entries are always handed out as the index has them now. Borrows the
 * index, which must not change meanwhile.
 */
struct index_moves;
struct index_moves *index_moves_new(const struct index *ix);
struct index_moves *index_moves_free(struct index_moves *mv);
/* Entry e (a note or an attachment of the index) goes to new_path. */
void index_moves_add(struct index_moves *mv, const struct note *e,
		     const char *new_path);
/* Every entry beneath folder from goes beneath to instead (from's path
 * as the index spells it). Returns how many. */
size_t index_moves_add_folder(struct index_moves *mv, const char *from,
			      const char *to);
size_t index_moves_count(const struct index_moves *mv);
/* The i-th move: the entry and its new path. */
const struct note *index_moves_entry(const struct index_moves *mv, size_t i,
				     const char **ret_new_path);
/* e is an attachment, not a note. */
bool index_moves_is_file(const struct index_moves *mv, const struct note *e);
/* Where e will be (its path now when it does not move). */
const char *index_moves_path(const struct index_moves *mv,
			     const struct note *e);
/* Whether a link to target written in src may resolve otherwise once
 * the moves are made: src moves, or target has a moving entry's old or
 * new name. */
bool index_moves_affect(const struct index_moves *mv, const struct note *src,
			const char *target);
/* Notes whose links may resolve otherwise: the moving notes and every
 * note with a link written with a moving entry's old or new name (each
 * once, in no particular order; pushed to ret). */
void index_moves_sources(const struct index_moves *mv, struct ptrvec *ret);

/*
 * What a link leads to: a note, an attachment (*ret_file), or NULL.
 * With mv (may be NULL), as it will once the moves are made, src then
 * written where src will be.
 */
const struct note *index_resolve_entry(const struct index *ix,
				       const struct index_moves *mv,
				       const struct note *src,
				       const char *target, int kind,
				       bool *ret_file);

/*
 * Obsidian's "shortest path when possible" for a wikilink from src to e
 * (a note, without ".md", or an attachment), once the moves are made
 * (mv may be NULL): the name when no other note or attachment has it,
 * else the shortest end of its path no other has, else its full path;
 * whichever is chosen leads from src to e. NULL when none does.
 */
char *index_shortest_link(const struct index *ix, const struct index_moves *mv,
			  const struct note *src, const struct note *e);
