/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The index's private parts, shared by its files (index.c: the maps of
 * notes, names, aliases, tags and links, putting and removing notes;
 * index_resolve.c: resolving a link to a note, now or as if pending moves
 * were made; index_moves.c: the pending moves themselves; index_bulk.c:
 * the first build, every note put and every link bound at once).
 */
#pragma once

#include "index.h"
#include "hmap.h"
#include "note_int.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct index {
	struct hmap *by_path;	   /* fold_path -> struct note * */
	struct hmap *by_name;	   /* fold_name -> struct ptrvec * of notes */
	struct hmap *by_alias;	   /* folded alias -> struct ptrvec * */
	struct hmap *by_tag;	   /* folded tag -> struct tag_entry * */
	struct hmap *links_by_key; /* link key -> struct ptrvec * of links */
	struct hmap *files;	   /* fold_path -> struct note * (attachment) */
	struct hmap *files_by_name;
	uint64_t gen;
	struct note **sorted;
	size_t nsorted;
	uint64_t sorted_gen;
	/* The sorted notes too big to have their text indexed. */
	struct note **big;
	size_t nbig;
	/* Readers share the index; the sorted cache is built by one. */
	pthread_mutex_t sort_mu;
	/* index_put_notes(): the notes whose links are not in links_by_key
	 * yet (index_bind_links() puts them), in the order given. */
	struct note **unkeyed;
	size_t nunkeyed;
};

/* ---- moves not made yet ------------------------------------------------ */

/* One entry (note or attachment) and where it will be. */
struct move {
	const struct note *orig;
	struct note *ghost; /* a name-only note at the new path */
	bool file;
};

struct index_moves {
	const struct index *ix;
	struct hmap *by_old; /* orig's fold_path -> struct move */
	struct hmap *by_new; /* ghost's fold_path -> struct move */
	struct hmap *names;  /* ghost fold_name -> ptrvec of notes' ghosts */
	struct hmap *file_names; /* the same for attachments */
	struct hmap *keys;	 /* old and new folded names (no values) */
	struct ptrvec all;	 /* struct move * */
};

/* index.c */
void ix_free_vec_map(struct hmap *m);
void ix_mm_add(struct hmap *m, const char *key, void *p);
void ix_vec_swap_remove(struct ptrvec *pv, const void *p);
/* A note in the maps of paths, names, aliases and tags (not its links). */
void ix_register_names(struct index *ix, struct note *n);
/* The same but the map of paths. */
void ix_register_named(struct index *ix, struct note *n);
/* Its links in links_by_key. */
void ix_register_links(struct index *ix, struct note *n);

/* index_resolve.c */
bool ix_path_has_suffix(const char *fold_path, const char *suffix);
struct move *ix_moved(const struct index_moves *mv, const struct note *e);
void ix_view_bucket(const struct index *ix, const struct index_moves *mv,
		    bool files, const char *key, struct ptrvec *ret);
struct note *ix_resolve_key(const struct index *ix,
			    const struct index_moves *mv,
			    const struct note *src, const char *target,
			    int kind, const char *key, struct note **ret_file);
struct note *ix_resolve_named(const struct index *ix,
			      const struct ptrvec *names, const struct link *l,
			      struct note **ret_file);
void ix_link_bind(struct index *ix, struct link *l);
void ix_link_unbind(struct link *l);
void ix_reresolve_key(struct index *ix, const char *key);
