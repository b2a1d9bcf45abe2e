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
/* Remove the note at path. Returns 0 or -ENOENT. */
int index_remove(struct index *ix, const char *path);

/* Non-note files (attachments) that links and embeds may point at. */
void index_put_file(struct index *ix, const char *path);
void index_remove_file(struct index *ix, const char *path);
bool index_has_file(const struct index *ix, const char *path);
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
