/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vault's in-memory index (see index.h): every note by folded path,
 * name, alias and tag, the links by the key they resolve by, the
 * attachments, and the notes sorted by path for listings. Putting or
 * removing a note binds or unbinds the links it changes the target of.
 */
#include "index_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct index *index_new(void)
{
	struct index *ix = xcalloc(1, sizeof(*ix));
	ix->by_path = hmap_new();
	ix->by_name = hmap_new();
	ix->by_alias = hmap_new();
	ix->by_tag = hmap_new();
	ix->links_by_key = hmap_new();
	ix->files = hmap_new();
	ix->files_by_name = hmap_new();
	ix->gen = 1;
	pthread_mutex_init(&ix->sort_mu, NULL);
	return ix;
}

void ix_free_vec_map(struct hmap *m)
{
	size_t it = 0;
	void *v;
	while (hmap_next(m, &it, NULL, &v)) {
		pv_free(v);
		free(v);
	}
	hmap_free(m);
}

struct index *index_free(struct index *ix)
{
	if (!ix)
		return NULL;
	size_t it = 0;
	void *v;
	while (hmap_next(ix->by_path, &it, NULL, &v))
		note_free(v);
	it = 0;
	while (hmap_next(ix->files, &it, NULL, &v))
		note_free(v);
	it = 0;
	while (hmap_next(ix->by_tag, &it, NULL, &v)) {
		struct tag_entry *t = v;
		free(t->display);
		free(t->fold);
		pv_free(&t->notes);
		free(t);
	}
	hmap_free(ix->by_path);
	hmap_free(ix->files);
	hmap_free(ix->by_tag);
	ix_free_vec_map(ix->by_name);
	ix_free_vec_map(ix->by_alias);
	ix_free_vec_map(ix->links_by_key);
	ix_free_vec_map(ix->files_by_name);
	free(ix->sorted);
	free(ix->big);
	free(ix->unkeyed);
	pthread_mutex_destroy(&ix->sort_mu);
	free(ix);
	return NULL;
}

/* ---- multimap helpers --------------------------------------------------- */

void ix_mm_add(struct hmap *m, const char *key, void *p)
{
	struct ptrvec *pv = hmap_get(m, key);
	if (!pv) {
		pv = xcalloc(1, sizeof(*pv));
		hmap_put(m, key, pv);
	}
	pv_push(pv, p);
}

/* Order inside buckets does not matter: swap-remove. */
static void mm_del(struct hmap *m, const char *key, const void *p)
{
	struct ptrvec *pv = hmap_get(m, key);
	if (!pv)
		return;
	for (size_t i = 0; i < pv->n; i++) {
		if (pv->v[i] == p) {
			pv->v[i] = pv->v[--pv->n];
			break;
		}
	}
	if (!pv->n) {
		hmap_del(m, key);
		pv_free(pv);
		free(pv);
	}
}

void ix_vec_swap_remove(struct ptrvec *pv, const void *p)
{
	for (size_t i = 0; i < pv->n; i++) {
		if (pv->v[i] == p) {
			pv->v[i] = pv->v[--pv->n];
			return;
		}
	}
}

/* ---- notes ----------------------------------------------------------------
 */

void ix_register_links(struct index *ix, struct note *n)
{
	for (size_t i = 0; i < n->nlinks; i++)
		if (n->links[i].key)
			ix_mm_add(ix->links_by_key, n->links[i].key,
				  &n->links[i]);
}

/* Everything but the links (ix_register_links). */
void ix_register_names(struct index *ix, struct note *n)
{
	hmap_put(ix->by_path, n->fold_path, n);
	ix_register_named(ix, n);
}

void ix_register_named(struct index *ix, struct note *n)
{
	ix_mm_add(ix->by_name, n->fold_name, n);
	for (size_t i = 0; i < n->nfold_aliases; i++)
		ix_mm_add(ix->by_alias, n->fold_aliases[i], n);
	for (size_t i = 0; i < n->ntags; i++) {
		const char *f = n->fold_tags[i];
		struct tag_entry *t = hmap_get(ix->by_tag, f);
		if (!t) {
			t = xcalloc(1, sizeof(*t));
			t->display = xstrdup(n->tags[i]);
			t->fold = xstrdup(f);
			hmap_put(ix->by_tag, f, t);
		}
		pv_push(&t->notes, n);
	}
}

static void register_note(struct index *ix, struct note *n)
{
	ix_register_names(ix, n);
	ix_register_links(ix, n);
}

static void unregister_note(struct index *ix, struct note *n)
{
	hmap_del(ix->by_path, n->fold_path);
	mm_del(ix->by_name, n->fold_name, n);
	for (size_t i = 0; i < n->nfold_aliases; i++)
		mm_del(ix->by_alias, n->fold_aliases[i], n);
	for (size_t i = 0; i < n->ntags; i++) {
		const char *f = n->fold_tags[i];
		struct tag_entry *t = hmap_get(ix->by_tag, f);
		if (!t)
			continue;
		ix_vec_swap_remove(&t->notes, n);
		if (!t->notes.n) {
			hmap_del(ix->by_tag, f);
			free(t->display);
			free(t->fold);
			pv_free(&t->notes);
			free(t);
		}
	}
	for (size_t i = 0; i < n->nlinks; i++) {
		struct link *l = &n->links[i];
		ix_link_unbind(l);
		if (l->key)
			mm_del(ix->links_by_key, l->key, l);
	}
}

void index_put_bulk(struct index *ix, struct note *n)
{
	struct note *old = hmap_get(ix->by_path, n->fold_path);
	if (old) {
		unregister_note(ix, old);
		note_free(old);
	}
	register_note(ix, n);
	ix->gen++;
}

void index_put(struct index *ix, struct note *n)
{
	struct note *old = hmap_get(ix->by_path, n->fold_path);
	if (old) {
		/* Same path, new text: links to it keep pointing here. */
		struct ptrvec in = old->incoming;
		memset(&old->incoming, 0, sizeof(old->incoming));
		unregister_note(ix, old);
		/* Self-links were never in incoming; links from old itself
		 * were unbound above and are freed with it. */
		for (size_t i = 0; i < in.n; i++) {
			struct link *l = in.v[i];
			if (l->src == old)
				continue;
			l->to = n;
			pv_push(&n->incoming, l);
		}
		pv_free(&in);
		note_free(old);
		register_note(ix, n);
		for (size_t i = 0; i < n->nlinks; i++)
			ix_link_bind(ix, &n->links[i]);
		/* Aliases do not take part in link resolution, and the name
		 * is unchanged: no other link can change its target. */
	} else {
		register_note(ix, n);
		for (size_t i = 0; i < n->nlinks; i++)
			ix_link_bind(ix, &n->links[i]);
		/* A new note can capture links written with its name. */
		ix_reresolve_key(ix, n->fold_name);
	}
	ix->gen++;
}

int index_remove(struct index *ix, const char *path)
{
	_cleanup_free_ char *f = fold_key(path);
	struct note *n = hmap_get(ix->by_path, f);
	if (!n)
		return -ENOENT;
	unregister_note(ix, n);
	/* Links that pointed here now point elsewhere or nowhere. */
	for (size_t i = 0; i < n->incoming.n; i++) {
		struct link *l = n->incoming.v[i];
		l->to = NULL;
	}
	_cleanup_free_ char *key = xstrdup(n->fold_name);
	note_free(n);
	ix_reresolve_key(ix, key);
	ix->gen++;
	return 0;
}

void index_put_file(struct index *ix, const char *path)
{
	_cleanup_free_ char *f = fold_key(path);
	if (hmap_get(ix->files, f))
		return;
	struct note *n = note_new(path, NULL, 0, 0);
	hmap_put(ix->files, n->fold_path, n);
	ix_mm_add(ix->files_by_name, n->fold_name, n);
	ix_reresolve_key(ix, n->fold_name);
	ix->gen++;
}

void index_remove_file(struct index *ix, const char *path)
{
	_cleanup_free_ char *f = fold_key(path);
	struct note *n = hmap_del(ix->files, f);
	if (!n)
		return;
	mm_del(ix->files_by_name, n->fold_name, n);
	_cleanup_free_ char *key = xstrdup(n->fold_name);
	note_free(n);
	ix_reresolve_key(ix, key);
	ix->gen++;
}

bool index_has_file(const struct index *ix, const char *path)
{
	_cleanup_free_ char *f = fold_key(path);
	return hmap_get(ix->files, f) != NULL;
}

const struct note *index_file(const struct index *ix, const char *path)
{
	_cleanup_free_ char *f = fold_key(path);
	return hmap_get(ix->files, f);
}

bool index_next_file(const struct index *ix, size_t *iter,
		     const struct note **ret)
{
	void *v;
	if (!hmap_next(ix->files, iter, NULL, &v))
		return false;
	*ret = v;
	return true;
}

size_t index_count(const struct index *ix)
{
	return hmap_size(ix->by_path);
}

size_t index_file_count(const struct index *ix)
{
	return hmap_size(ix->files);
}

uint64_t index_generation(const struct index *ix)
{
	return ix->gen;
}

struct note *index_by_path(const struct index *ix, const char *path)
{
	_cleanup_free_ char *f = fold_key(path);
	return hmap_get(ix->by_path, f);
}

const struct ptrvec *index_by_name(const struct index *ix,
				   const char *fold_name)
{
	return hmap_get(ix->by_name, fold_name);
}

static int from_bucket(const struct ptrvec *pv, const char *suffix,
		       struct note **ret, struct ptrvec *ret_candidates)
{
	struct note *found = NULL;
	size_t n = 0;
	for (size_t i = 0; pv && i < pv->n; i++) {
		struct note *c = pv->v[i];
		if (suffix && !ix_path_has_suffix(c->fold_path, suffix))
			continue;
		if (ret_candidates)
			pv_push(ret_candidates, c);
		found = c;
		n++;
	}
	if (n == 1) {
		if (ret_candidates)
			ret_candidates->n = 0;
		*ret = found;
		return 0;
	}
	return n ? -EEXIST : -ENOENT;
}

int index_find(const struct index *ix, const char *ref, struct note **ret,
	       struct ptrvec *ret_candidates)
{
	_cleanup_free_ char *f = fold_key(ref);
	size_t len = strlen(f);
	while (len && f[len - 1] == '/')
		f[--len] = 0;
	if (!len)
		return -ENOENT;
	_cleanup_free_ char *withmd =
		str_has_suffix(f, ".md") ? xstrdup(f) : xasprintf("%s.md", f);
	struct note *n = hmap_get(ix->by_path, withmd);
	if (!n && strcmp(withmd, f) != 0)
		n = hmap_get(ix->by_path, f);
	if (n) {
		*ret = n;
		return 0;
	}
	const char *b = strrchr(withmd, '/');
	const char *base = b ? b + 1 : withmd;
	_cleanup_free_ char *key = xstrndup(base, strlen(base) - 3);
	int r = from_bucket(hmap_get(ix->by_name, key), b ? withmd : NULL, ret,
			    ret_candidates);
	if (r != -ENOENT || b)
		return r;
	/* A name ending in ".md" may be a note literally named so. */
	if (str_has_suffix(f, ".md")) {
		r = from_bucket(hmap_get(ix->by_name, f), NULL, ret,
				ret_candidates);
		if (r != -ENOENT)
			return r;
	}
	return from_bucket(hmap_get(ix->by_alias, f), NULL, ret,
			   ret_candidates);
}

static int cmp_notes(const void *a, const void *b)
{
	const struct note *x = *(struct note *const *)a;
	const struct note *y = *(struct note *const *)b;
	int r = strcmp(x->fold_name, y->fold_name);
	if (r)
		return r;
	r = strcmp(x->name, y->name);
	return r ? r : strcmp(x->path, y->path);
}

/* The sorted cache, and the big notes among them, up to date (sort_mu
 * held). */
static void refresh_sorted(struct index *ix)
{
	if (ix->sorted_gen != ix->gen || !ix->sorted) {
		size_t n = hmap_size(ix->by_path), i = 0, it = 0;
		void *v;
		ix->sorted = xrealloc(ix->sorted, (n ? n : 1) * sizeof(void *));
		while (hmap_next(ix->by_path, &it, NULL, &v))
			ix->sorted[i++] = v;
		qsort(ix->sorted, n, sizeof(void *), cmp_notes);
		ix->nsorted = n;
		ix->nbig = 0;
		for (i = 0; i < n; i++) {
			if ((uint64_t)ix->sorted[i]->size <= NOTE_MAX_INDEXED)
				continue;
			ix->big = xrealloc(ix->big,
					   (ix->nbig + 1) * sizeof(void *));
			ix->big[ix->nbig++] = ix->sorted[i];
		}
		ix->sorted_gen = ix->gen;
	}
}

struct note *const *index_sorted(struct index *ix, size_t *ret_n)
{
	pthread_mutex_lock(&ix->sort_mu);
	refresh_sorted(ix);
	*ret_n = ix->nsorted;
	pthread_mutex_unlock(&ix->sort_mu);
	return ix->sorted;
}

struct note *const *index_too_big(struct index *ix, size_t *ret_n)
{
	pthread_mutex_lock(&ix->sort_mu);
	refresh_sorted(ix);
	*ret_n = ix->nbig;
	pthread_mutex_unlock(&ix->sort_mu);
	return ix->big;
}

bool index_next(const struct index *ix, size_t *iter, struct note **ret)
{
	void *v;
	if (!hmap_next(ix->by_path, iter, NULL, &v))
		return false;
	*ret = v;
	return true;
}

static void push_under(struct hmap *m, const char *dir, size_t dl,
		       struct ptrvec *ret)
{
	size_t it = 0;
	void *v;
	while (hmap_next(m, &it, NULL, &v)) {
		const struct note *n = v;
		if (!strncmp(n->path, dir, dl) && n->path[dl] == '/')
			pv_push(ret, xstrdup(n->path));
	}
}

void index_paths_under(const struct index *ix, const char *dir,
		       struct ptrvec *ret)
{
	size_t dl = strlen(dir);
	push_under(ix->by_path, dir, dl, ret);
	push_under(ix->files, dir, dl, ret);
}

char *index_display_name(const struct index *ix, const struct note *n)
{
	const struct ptrvec *pv = hmap_get(ix->by_name, n->fold_name);
	if (!pv || pv->n <= 1)
		return xstrdup(n->name);
	size_t l = strlen(n->path);
	return xstrndup(n->path, l > 3 ? l - 3 : l);
}

static int cmp_tags(const void *a, const void *b)
{
	const struct tag_entry *x = *(struct tag_entry *const *)a;
	const struct tag_entry *y = *(struct tag_entry *const *)b;
	int r = strcmp(x->fold, y->fold);
	return r ? r : strcmp(x->display, y->display);
}

struct tag_entry **index_tags(const struct index *ix, size_t *ret_n)
{
	size_t n = hmap_size(ix->by_tag), i = 0, it = 0;
	void *v;
	struct tag_entry **arr = xmalloc((n ? n : 1) * sizeof(*arr));
	while (hmap_next(ix->by_tag, &it, NULL, &v))
		arr[i++] = v;
	qsort(arr, n, sizeof(*arr), cmp_tags);
	*ret_n = n;
	return arr;
}

const struct tag_entry *index_tag(const struct index *ix, const char *tag)
{
	_cleanup_free_ char *f = fold_key(tag);
	return hmap_get(ix->by_tag, f);
}

const struct ptrvec *index_links_by_key(const struct index *ix,
					const char *fold_key_)
{
	return hmap_get(ix->links_by_key, fold_key_);
}
