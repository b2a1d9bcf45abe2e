/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "index.h"
#include "note_int.h"
#include "hmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

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
};

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

static void free_vec_map(struct hmap *m)
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
	free_vec_map(ix->by_name);
	free_vec_map(ix->by_alias);
	free_vec_map(ix->links_by_key);
	free_vec_map(ix->files_by_name);
	free(ix->sorted);
	free(ix->big);
	pthread_mutex_destroy(&ix->sort_mu);
	free(ix);
	return NULL;
}

/* ---- multimap helpers --------------------------------------------------- */

static void mm_add(struct hmap *m, const char *key, void *p)
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

static void vec_swap_remove(struct ptrvec *pv, const void *p)
{
	for (size_t i = 0; i < pv->n; i++) {
		if (pv->v[i] == p) {
			pv->v[i] = pv->v[--pv->n];
			return;
		}
	}
}

/* ---- resolution --------------------------------------------------------- */

/* Length of the folder part of a folded path ("a/b/x.md" -> 3). */
static size_t fold_dirlen(const char *fold_path)
{
	const char *s = strrchr(fold_path, '/');
	return s ? (size_t)(s - fold_path) : 0;
}

static bool path_has_suffix(const char *fold_path, const char *suffix)
{
	size_t a = strlen(fold_path), b = strlen(suffix);
	if (a < b || memcmp(fold_path + a - b, suffix, b) != 0)
		return false;
	return a == b || fold_path[a - b - 1] == '/';
}

/*
 * Obsidian's rule for a name that several notes share: a note in the
 * linking note's own folder wins; otherwise the one with the shortest
 * path; equal lengths are ordered by path so the choice is stable.
 * `suffix` (folded, may be NULL) keeps only paths ending in it, which
 * is how "[[folder/Note]]" matches "a/folder/Note.md".
 */
static struct note *pick(const struct ptrvec *cands, const char *src_fold,
			 const char *suffix)
{
	/* The common case: a name no other note has. */
	if (cands && cands->n == 1 && !suffix)
		return cands->v[0];
	struct note *best = NULL;
	bool best_same = false;
	size_t sl = src_fold ? fold_dirlen(src_fold) : 0;
	for (size_t i = 0; cands && i < cands->n; i++) {
		struct note *c = cands->v[i];
		if (suffix && !path_has_suffix(c->fold_path, suffix))
			continue;
		bool same = src_fold && c->fold_dirlen == sl &&
			    memcmp(src_fold, c->fold_path, sl) == 0;
		if (!best) {
			best = c;
			best_same = same;
			continue;
		}
		if (same != best_same) {
			if (same) {
				best = c;
				best_same = true;
			}
			continue;
		}
		size_t lc = strlen(c->path), lb = strlen(best->path);
		if (lc < lb ||
		    (lc == lb && strcmp(c->fold_path, best->fold_path) < 0))
			best = c;
	}
	return best;
}

/* No empty, "." or ".." part: path_normalize() would return it as is. */
static bool path_plain(const char *p)
{
	for (const char *s = p;;) {
		const char *e = strchr(s, '/');
		size_t l = e ? (size_t)(e - s) : strlen(s);
		if (l == 0 || (l == 1 && s[0] == '.') ||
		    (l == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (!e)
			return true;
		s = e + 1;
	}
}

static char *join_dir(const char *src_path, size_t dirlen, const char *rel)
{
	_cleanup_free_ char *j =
		dirlen ? xasprintf("%.*s/%s", (int)dirlen, src_path, rel)
		       : xstrdup(rel);
	return path_normalize(j);
}

/* Last path component has an extension other than .md. */
static bool has_other_ext(const char *p)
{
	const char *b = strrchr(p, '/');
	b = b ? b + 1 : p;
	const char *dot = strrchr(b, '.');
	return dot && dot != b && dot[1] && !str_has_suffix_ci(b, ".md");
}

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

static struct move *moved(const struct index_moves *mv, const struct note *e)
{
	struct move *m = mv ? hmap_get(mv->by_old, e->fold_path) : NULL;
	return m && m->orig == e ? m : NULL;
}

/* A ghost back to the entry it stands for. */
static struct note *unghost(const struct index_moves *mv, struct note *e)
{
	struct move *m = mv && e ? hmap_get(mv->by_new, e->fold_path) : NULL;
	return m && m->ghost == e ? (struct note *)m->orig : e;
}

/* The entries named key once the moves are made (ghosts for moved ones). */
static void view_bucket(const struct index *ix, const struct index_moves *mv,
			bool files, const char *key, struct ptrvec *ret)
{
	const struct ptrvec *pv =
		hmap_get(files ? ix->files_by_name : ix->by_name, key);
	for (size_t i = 0; pv && i < pv->n; i++)
		if (!moved(mv, pv->v[i]))
			pv_push(ret, pv->v[i]);
	const struct ptrvec *g =
		hmap_get(files ? mv->file_names : mv->names, key);
	for (size_t i = 0; g && i < g->n; i++)
		pv_push(ret, g->v[i]);
}

/* pick() in the bucket key of by_name (or files_by_name), as it will be
 * once the moves are made when mv is given. */
static struct note *pick_in(const struct index *ix,
			    const struct index_moves *mv, bool files,
			    const char *key, const char *src_fold,
			    const char *suffix)
{
	if (!mv)
		return pick(
			hmap_get(files ? ix->files_by_name : ix->by_name, key),
			src_fold, suffix);
	struct ptrvec view = {0};
	view_bucket(ix, mv, files, key, &view);
	struct note *r = pick(&view, src_fold, suffix);
	pv_free(&view);
	return unghost(mv, r);
}

/* The note (or attachment) at folded path f, as it will be. */
static struct note *path_get(const struct index *ix,
			     const struct index_moves *mv, bool files,
			     const char *f)
{
	if (mv) {
		struct move *m = hmap_get(mv->by_new, f);
		if (m && m->file == files)
			return (struct note *)m->orig;
	}
	struct note *n = hmap_get(files ? ix->files : ix->by_path, f);
	return n && !moved(mv, n) ? n : NULL;
}

/* lookup_exact() without allocating, for a plain ASCII path: 1 with the
 * answer, 0 when the path needs the general way. */
static int lookup_ascii(const struct index *ix, const char *path,
			struct note **ret, struct note **ret_file)
{
	char f[512];
	size_t n = 0;
	for (const char *p = path; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c >= 0x80 || n + 4 >= sizeof(f))
			return 0;
		f[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	f[n] = 0;
	*ret = NULL;
	if (n >= 3 && !memcmp(f + n - 3, ".md", 3)) {
		*ret = hmap_get(ix->by_path, f);
		if (*ret)
			return 1;
	}
	memcpy(f + n, ".md", 4);
	*ret = hmap_get(ix->by_path, f);
	if (!*ret) {
		f[n] = 0;
		*ret_file = hmap_get(ix->files, f);
	}
	return 1;
}

/* The note at path (with or without ".md"), or NULL and the attachment
 * at path in *ret_file (when there is one). */
static struct note *lookup_exact(const struct index *ix,
				 const struct index_moves *mv, const char *path,
				 struct note **ret_file)
{
	if (!path || !*path)
		return NULL;
	struct note *r;
	if (!mv && lookup_ascii(ix, path, &r, ret_file))
		return r;
	_cleanup_free_ char *f = fold_key(path);
	if (str_has_suffix(f, ".md")) {
		struct note *n = path_get(ix, mv, false, f);
		if (n)
			return n;
	}
	_cleanup_free_ char *fm = xasprintf("%s.md", f);
	struct note *n = path_get(ix, mv, false, fm);
	if (n)
		return n;
	struct note *file = path_get(ix, mv, true, f);
	if (file)
		*ret_file = file;
	return NULL;
}

static struct note *resolve_key(const struct index *ix,
				const struct index_moves *mv,
				const struct note *src, const char *target,
				int kind, const char *key,
				struct note **ret_file);

struct note *index_resolve(const struct index *ix, const struct note *src,
			   const char *target, int kind, bool *ret_file)
{
	struct note *file = NULL;
	struct note *r = resolve_key(ix, NULL, src, target, kind, NULL, &file);
	*ret_file = file != NULL;
	return r;
}

/*
 * key: the link's folded basename when known (struct link's key). With
 * mv, as the link will resolve once the moves are made (src is then the
 * linking note where it will be).
 */
static struct note *resolve_key(const struct index *ix,
				const struct index_moves *mv,
				const struct note *src, const char *target,
				int kind, const char *key,
				struct note **ret_file)
{
	struct note *file = NULL;
	struct note *r = NULL;
	const char *sfold = src ? src->fold_path : NULL;
	*ret_file = NULL;
	if (!target || !*target)
		return NULL;

	if (kind == LINK_MD || kind == LINK_MD_EMBED) {
		/* Markdown links are paths: relative to the note, then to
		 * the vault root. */
		const char *t = target[0] == '/' ? target + 1 : target;
		if (src && target[0] != '/') {
			_cleanup_free_ char *p =
				join_dir(src->path, src->dirlen, t);
			r = lookup_exact(ix, mv, p, &file);
		}
		if (!r && !file) {
			_cleanup_free_ char *p = path_normalize(t);
			r = lookup_exact(ix, mv, p, &file);
		}
		*ret_file = r ? NULL : file;
		return r;
	}

	/* Wikilinks and embeds. */
	const char *t = target[0] == '/' ? target + 1 : target;
	bool relative = str_has_prefix(t, "./") || str_has_prefix(t, "../");
	if (relative && src) {
		_cleanup_free_ char *p = join_dir(src->path, src->dirlen, t);
		r = lookup_exact(ix, mv, p, &file);
		*ret_file = r ? NULL : file;
		return r;
	}
	if (strchr(t, '/')) {
		bool plain = path_plain(t);
		_cleanup_free_ char *p = plain ? NULL : path_normalize(t);
		r = lookup_exact(ix, mv, plain ? t : p, &file);
		if (r || file) {
			*ret_file = r ? NULL : file;
			return r;
		}
	} else if (key) {
		/* The common case, with nothing to allocate: [[Name]]. */
		r = pick_in(ix, mv, false, key, sfold, NULL);
		if (r || !has_other_ext(t))
			return r;
	}
	_cleanup_free_ char *ft = fold_key(t);
	_cleanup_free_ char *tn = str_has_suffix(ft, ".md")
					  ? xstrdup(ft)
					  : xasprintf("%s.md", ft);
	const char *b = strrchr(tn, '/');
	_cleanup_free_ char *bkey =
		xstrndup(b ? b + 1 : tn, strlen(b ? b + 1 : tn) - 3);
	bool has_dir = strchr(t, '/') != NULL;
	r = pick_in(ix, mv, false, bkey, sfold, has_dir ? tn : NULL);
	if (r)
		return r;
	/* Attachments: ![[image.png]], [[doc.pdf]]. */
	if (has_other_ext(t) || has_dir) {
		const char *fb = strrchr(ft, '/');
		fb = fb ? fb + 1 : ft;
		*ret_file =
			pick_in(ix, mv, true, fb, sfold, has_dir ? ft : NULL);
	}
	return NULL;
}

bool link_is_broken(const struct link *l)
{
	return *l->target && !l->to && !l->resolved_file;
}

static void link_bind(struct index *ix, struct link *l)
{
	struct note *file;
	l->to = resolve_key(ix, NULL, l->src, l->target, l->kind, l->key,
			    &file);
	l->resolved_file = file != NULL;
	if (l->to && l->to != l->src)
		pv_push(&l->to->incoming, l);
}

static void link_unbind(struct link *l)
{
	if (l->to && l->to != l->src)
		vec_swap_remove(&l->to->incoming, l);
	l->to = NULL;
	l->resolved_file = false;
}

static void reresolve_key(struct index *ix, const char *key)
{
	struct ptrvec *pv = hmap_get(ix->links_by_key, key);
	for (size_t i = 0; pv && i < pv->n; i++) {
		struct link *l = pv->v[i];
		link_unbind(l);
		link_bind(ix, l);
	}
}

/* ---- notes ----------------------------------------------------------------
 */

static void register_links(struct index *ix, struct note *n)
{
	for (size_t i = 0; i < n->nlinks; i++)
		if (n->links[i].key)
			mm_add(ix->links_by_key, n->links[i].key, &n->links[i]);
}

/* Everything but the links (register_links). */
static void register_names(struct index *ix, struct note *n)
{
	hmap_put(ix->by_path, n->fold_path, n);
	mm_add(ix->by_name, n->fold_name, n);
	for (size_t i = 0; i < n->nfold_aliases; i++)
		mm_add(ix->by_alias, n->fold_aliases[i], n);
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
	register_names(ix, n);
	register_links(ix, n);
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
		vec_swap_remove(&t->notes, n);
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
		link_unbind(l);
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

struct links_job {
	struct index *ix;
	struct note **notes;
	size_t n;
};

static void *links_worker(void *arg)
{
	struct links_job *j = arg;
	for (size_t i = 0; i < j->n; i++)
		register_links(j->ix, j->notes[i]);
	return NULL;
}

void index_put_all(struct index *ix, struct note **notes, size_t n)
{
	if (hmap_size(ix->by_path)) {
		for (size_t i = 0; i < n; i++)
			index_put_bulk(ix, notes[i]);
		return;
	}
	/* The link buckets fill on another CPU meanwhile (other maps). */
	struct links_job j = {ix, notes, n};
	pthread_t th;
	bool threaded =
		n > 1000 && pthread_create(&th, NULL, links_worker, &j) == 0;
	for (size_t i = 0; i < n; i++)
		register_names(ix, notes[i]);
	if (threaded)
		pthread_join(th, NULL);
	else
		links_worker(&j);
	ix->gen++;
}

struct resolve_job {
	const struct index *ix;
	struct link **links;
	size_t n;
	atomic_size_t next;
};

/* Targets only: lookups in maps nobody changes meanwhile. */
static void *resolve_worker(void *arg)
{
	struct resolve_job *j = arg;
	for (;;) {
		size_t from = atomic_fetch_add(&j->next, 4096);
		if (from >= j->n)
			break;
		size_t to = from + 4096 < j->n ? from + 4096 : j->n;
		for (size_t i = from; i < to; i++) {
			struct link *l = j->links[i];
			struct note *file;
			l->to = resolve_key(j->ix, NULL, l->src, l->target,
					    l->kind, l->key, &file);
			l->resolved_file = file != NULL;
		}
	}
	return NULL;
}

/*
 * Every link bound afresh. The lookups (most of the work) run on all CPUs;
 * the incoming lists are then filled in one pass, in the same order as
 * binding one link after another would.
 */
void index_resolve_all(struct index *ix)
{
	struct ptrvec all = {0};
	size_t it = 0;
	void *v;
	while (hmap_next(ix->by_path, &it, NULL, &v)) {
		struct note *n = v;
		pv_free(&n->incoming);
		for (size_t i = 0; i < n->nlinks; i++)
			pv_push(&all, &n->links[i]);
	}
	struct resolve_job job = {
		.ix = ix, .links = (struct link **)all.v, .n = all.n};
	atomic_init(&job.next, 0);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nth = all.n < 20000 ? 0 : ncpu > 8 ? 7 : ncpu > 1 ? ncpu - 1 : 0;
	pthread_t th[8];
	size_t started = 0;
	for (size_t i = 0; i < nth; i++)
		if (pthread_create(&th[started], NULL, resolve_worker, &job) ==
		    0)
			started++;
	resolve_worker(&job);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	/* Each incoming list allocated once, at its size. */
	for (size_t i = 0; i < all.n; i++) {
		struct link *l = all.v[i];
		if (l->to && l->to != l->src)
			l->to->incoming.cap++;
	}
	it = 0;
	while (hmap_next(ix->by_path, &it, NULL, &v)) {
		struct note *n = v;
		if (n->incoming.cap > 0)
			n->incoming.v =
				xrealloc(n->incoming.v,
					 n->incoming.cap * sizeof(void *));
	}
	for (size_t i = 0; i < all.n; i++) {
		struct link *l = all.v[i];
		if (l->to && l->to != l->src)
			l->to->incoming.v[l->to->incoming.n++] = l;
	}
	pv_free(&all);
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
			link_bind(ix, &n->links[i]);
		/* Aliases do not take part in link resolution, and the name
		 * is unchanged: no other link can change its target. */
	} else {
		register_note(ix, n);
		for (size_t i = 0; i < n->nlinks; i++)
			link_bind(ix, &n->links[i]);
		/* A new note can capture links written with its name. */
		reresolve_key(ix, n->fold_name);
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
	reresolve_key(ix, key);
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
	mm_add(ix->files_by_name, n->fold_name, n);
	reresolve_key(ix, n->fold_name);
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
	reresolve_key(ix, key);
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
		if (suffix && !path_has_suffix(c->fold_path, suffix))
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
	free_vec_map(mv->names);
	free_vec_map(mv->file_names);
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
	mm_add(m->file ? mv->file_names : mv->names, m->ghost->fold_name,
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
	struct move *m = moved(mv, e);
	return m ? m->ghost->path : e->path;
}

bool index_moves_affect(const struct index_moves *mv, const struct note *src,
			const char *target)
{
	if (moved(mv, src))
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
	struct move *m = src ? moved(mv, src) : NULL;
	struct note *file = NULL;
	struct note *r = resolve_key(ix, mv, m ? m->ghost : src, target, kind,
				     NULL, &file);
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
		view_bucket(ix, mv, files, key, &view);
	else {
		const struct ptrvec *pv =
			hmap_get(files ? ix->files_by_name : ix->by_name, key);
		for (size_t i = 0; pv && i < pv->n; i++)
			pv_push(&view, pv->v[i]);
	}
	size_t n = 0;
	for (size_t i = 0; i < view.n; i++)
		n += path_has_suffix(((struct note *)view.v[i])->fold_path,
				     suffix);
	pv_free(&view);
	return n;
}

char *index_shortest_link(const struct index *ix, const struct index_moves *mv,
			  const struct note *src, const struct note *e)
{
	bool files = is_attachment(ix, e);
	struct move *m = moved(mv, e);
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
