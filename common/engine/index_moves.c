/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Moves not made yet (index_moves_*): the notes and attachments a rename
 * will move, each with a name-only ghost at its new path, so that links
 * can be resolved and shortest links chosen as the vault will be after
 * the move, before any file is touched.
 */
#include "index_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- moves not made yet: the API ------------------------------------------
 */

struct index_moves *index_moves_new(const struct index *ix)
{
	struct index_moves *mv = xcalloc(1, sizeof(*mv));
	mv->ix = ix;
	mv->by_old = hmap_new();
	mv->by_new = hmap_new();
	mv->names = hmap_new();
	mv->file_names = hmap_new();
	mv->keys = hmap_new();
	return mv;
}

struct index_moves *index_moves_free(struct index_moves *mv)
{
	if (!mv)
		return NULL;
	for (size_t i = 0; i < mv->all.n; i++) {
		struct move *m = mv->all.v[i];
		note_free(m->ghost);
		free(m);
	}
	pv_free(&mv->all);
	hmap_free(mv->by_old);
	hmap_free(mv->by_new);
	ix_free_vec_map(mv->names);
	ix_free_vec_map(mv->file_names);
	hmap_free(mv->keys);
	free(mv);
	return NULL;
}

static bool is_attachment(const struct index *ix, const struct note *e)
{
	return hmap_get(ix->files, e->fold_path) == e;
}

void index_moves_add(struct index_moves *mv, const struct note *e,
		     const char *new_path)
{
	struct move *m = xcalloc(1, sizeof(*m));
	m->orig = e;
	m->file = is_attachment(mv->ix, e);
	m->ghost = note_new(new_path, NULL, 0, 0);
	pv_push(&mv->all, m);
	hmap_put(mv->by_old, e->fold_path, m);
	hmap_put(mv->by_new, m->ghost->fold_path, m);
	ix_mm_add(m->file ? mv->file_names : mv->names, m->ghost->fold_name,
		  m->ghost);
	/* Links written with either name may resolve anew. */
	hmap_put(mv->keys, e->fold_name, mv);
	hmap_put(mv->keys, m->ghost->fold_name, mv);
}

size_t index_moves_count(const struct index_moves *mv)
{
	return mv->all.n;
}

const char *index_moves_path(const struct index_moves *mv, const struct note *e)
{
	struct move *m = ix_moved(mv, e);
	return m ? m->ghost->path : e->path;
}

bool index_moves_affect(const struct index_moves *mv, const struct note *src,
			const char *target)
{
	if (ix_moved(mv, src))
		return true;
	const char *b = strrchr(target, '/');
	b = b ? b + 1 : target;
	size_t n = strlen(b);
	if (n > 3 && str_has_suffix_ci(b, ".md"))
		n -= 3;
	_cleanup_free_ char *k = fold_key_n(b, n);
	return hmap_get(mv->keys, k) != NULL;
}

void index_moves_sources(const struct index_moves *mv, struct ptrvec *ret)
{
	const struct index *ix = mv->ix;
	struct hmap *seen = hmap_new();
	for (size_t i = 0; i < mv->all.n; i++) {
		const struct move *m = mv->all.v[i];
		if (!m->file && !hmap_get(seen, m->orig->fold_path)) {
			hmap_put(seen, m->orig->fold_path, (void *)m->orig);
			pv_push(ret, (void *)m->orig);
		}
	}
	size_t it = 0;
	const char *key;
	while (hmap_next(mv->keys, &it, &key, NULL)) {
		const struct ptrvec *pv = hmap_get(ix->links_by_key, key);
		for (size_t i = 0; pv && i < pv->n; i++) {
			const struct link *l = pv->v[i];
			if (hmap_get(seen, l->src->fold_path))
				continue;
			hmap_put(seen, l->src->fold_path, l->src);
			pv_push(ret, l->src);
		}
	}
	hmap_free(seen);
}

const struct note *index_resolve_entry(const struct index *ix,
				       const struct index_moves *mv,
				       const struct note *src,
				       const char *target, int kind,
				       bool *ret_file)
{
	struct move *m = src ? ix_moved(mv, src) : NULL;
	struct note *file = NULL;
	struct note *r = ix_resolve_key(ix, mv, m ? m->ghost : src, target,
					kind, NULL, &file);
	*ret_file = !r && file;
	return r ? r : file;
}

/* Entries named like e (once the moves are made) whose path ends in the
 * folded suffix. */
static size_t count_suffix(const struct index *ix, const struct index_moves *mv,
			   bool files, const char *key, const char *suffix)
{
	struct ptrvec view = {0};
	if (mv)
		ix_view_bucket(ix, mv, files, key, &view);
	else {
		const struct ptrvec *pv =
			hmap_get(files ? ix->files_by_name : ix->by_name, key);
		for (size_t i = 0; pv && i < pv->n; i++)
			pv_push(&view, pv->v[i]);
	}
	size_t n = 0;
	for (size_t i = 0; i < view.n; i++)
		n += ix_path_has_suffix(((struct note *)view.v[i])->fold_path,
					suffix);
	pv_free(&view);
	return n;
}

char *index_shortest_link(const struct index *ix, const struct index_moves *mv,
			  const struct note *src, const struct note *e)
{
	bool files = is_attachment(ix, e);
	struct move *m = ix_moved(mv, e);
	const struct note *at = m ? m->ghost : e;
	/* Notes are linked to without ".md"; attachments with their
	 * extension. */
	size_t len = strlen(at->path) - (files ? 0 : 3);
	/* From the name alone to the whole path, a folder at a time. */
	for (size_t s = len;;) {
		while (s > 0 && at->path[s - 1] != '/')
			s--;
		_cleanup_free_ char *text = xstrndup(at->path + s, len - s);
		bool unique = true;
		if (s > 0) {
			_cleanup_free_ char *f = fold_key(text);
			_cleanup_free_ char *suffix =
				files ? xstrdup(f) : xasprintf("%s.md", f);
			unique = count_suffix(ix, mv, files, at->fold_name,
					      suffix) == 1;
		}
		bool file;
		if (unique && index_resolve_entry(ix, mv, src, text, LINK_WIKI,
						  &file) == e)
			return TAKE_PTR(text);
		if (s == 0)
			return NULL;
		s--;
	}
}

static size_t add_under(struct index_moves *mv, struct hmap *m,
			const char *from, const char *to)
{
	size_t fl = strlen(from), n = 0, it = 0;
	void *v;
	while (hmap_next(m, &it, NULL, &v)) {
		const struct note *e = v;
		if (strncmp(e->path, from, fl) || e->path[fl] != '/')
			continue;
		_cleanup_free_ char *np = xasprintf("%s%s", to, e->path + fl);
		index_moves_add(mv, e, np);
		n++;
	}
	return n;
}

size_t index_moves_add_folder(struct index_moves *mv, const char *from,
			      const char *to)
{
	return add_under(mv, mv->ix->by_path, from, to) +
	       add_under(mv, mv->ix->files, from, to);
}

bool index_moves_is_file(const struct index_moves *mv, const struct note *e)
{
	return is_attachment(mv->ix, e);
}

const struct note *index_moves_entry(const struct index_moves *mv, size_t i,
				     const char **ret_new_path)
{
	const struct move *m = mv->all.v[i];
	*ret_new_path = m->ghost->path;
	return m->orig;
}
