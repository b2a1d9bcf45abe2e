/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Resolving a link to a note the way Obsidian does (an exact path, else
 * the note of that name nearest the linking note), also as the vault
 * would be once pending moves are made; and keeping each link bound to
 * the note it resolves to.
 */
#include "index_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- resolution --------------------------------------------------------- */

/* Length of the folder part of a folded path ("a/b/x.md" -> 3). */
static size_t fold_dirlen(const char *fold_path)
{
	const char *s = strrchr(fold_path, '/');
	return s ? (size_t)(s - fold_path) : 0;
}

bool ix_path_has_suffix(const char *fold_path, const char *suffix)
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
		if (suffix && !ix_path_has_suffix(c->fold_path, suffix))
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

/* a (n bytes), then sep (when not 0), then b: the resolver's joins, a
 * few per link, without a printf. */
static char *join3(const char *a, size_t n, char sep, const char *b)
{
	size_t bl = strlen(b), sl = sep ? 1 : 0;
	char *r = xmalloc(n + sl + bl + 1);
	memcpy(r, a, n);
	if (sep)
		r[n] = sep;
	memcpy(r + n + sl, b, bl + 1);
	return r;
}

static char *join_dir(const char *src_path, size_t dirlen, const char *rel)
{
	_cleanup_free_ char *j =
		dirlen ? join3(src_path, dirlen, '/', rel) : xstrdup(rel);
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

struct move *ix_moved(const struct index_moves *mv, const struct note *e)
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
void ix_view_bucket(const struct index *ix, const struct index_moves *mv,
		    bool files, const char *key, struct ptrvec *ret)
{
	const struct ptrvec *pv =
		hmap_get(files ? ix->files_by_name : ix->by_name, key);
	for (size_t i = 0; pv && i < pv->n; i++)
		if (!ix_moved(mv, pv->v[i]))
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
	ix_view_bucket(ix, mv, files, key, &view);
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
	return n && !ix_moved(mv, n) ? n : NULL;
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
	_cleanup_free_ char *fm = join3(f, strlen(f), 0, ".md");
	struct note *n = path_get(ix, mv, false, fm);
	if (n)
		return n;
	struct note *file = path_get(ix, mv, true, f);
	if (file)
		*ret_file = file;
	return NULL;
}

struct note *index_resolve(const struct index *ix, const struct note *src,
			   const char *target, int kind, bool *ret_file)
{
	struct note *file = NULL;
	struct note *r =
		ix_resolve_key(ix, NULL, src, target, kind, NULL, &file);
	*ret_file = file != NULL;
	return r;
}

/*
 * key: the link's folded basename when known (struct link's key). With
 * mv, as the link will resolve once the moves are made (src is then the
 * linking note where it will be).
 */
struct note *ix_resolve_key(const struct index *ix,
			    const struct index_moves *mv,
			    const struct note *src, const char *target,
			    int kind, const char *key, struct note **ret_file)
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
	/* "./" or "../" (tested in place: this runs for every link). */
	bool relative =
		t[0] == '.' && (t[1] == '/' || (t[1] == '.' && t[2] == '/'));
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
					  : join3(ft, strlen(ft), 0, ".md");
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

/*
 * [[dir/Name]] (t, plain, not ending in ".md") with dir in ASCII: the note
 * at that path, if there is one, is the one of names (the notes whose
 * folded name is the link's key) in that folder; no folding, no lookup.
 * NULL: no such note (the general way then looks further).
 */
static struct note *named_in_dir(const struct ptrvec *names, const char *t,
				 const char *key)
{
	const char *slash = strrchr(t, '/');
	size_t dl = (size_t)(slash - t), tl = strlen(t);
	for (size_t i = 0; i < dl; i++)
		if ((unsigned char)t[i] >= 0x80)
			return NULL;
	if ((tl >= 3 && str_has_suffix_ci(t, ".md")) ||
	    str_has_suffix(key, ".md") || !path_plain(t))
		return NULL;
	for (size_t i = 0; names && i < names->n; i++) {
		struct note *c = names->v[i];
		if (c->fold_dirlen != dl)
			continue;
		size_t k = 0;
		for (; k < dl; k++) {
			unsigned char a = (unsigned char)t[k];
			if ((a >= 'A' && a <= 'Z' ? a + 32 : a) !=
			    (unsigned char)c->fold_path[k])
				break;
		}
		if (k == dl)
			return c;
	}
	return NULL;
}

/*
 * ix_resolve_key() for a link of the key whose notes are names (the
 * by_name bucket of l->key, looked up once for all the links with that
 * key): a plain [[Name]], or a [[dir/Name]] found in names, looks nothing
 * up; any other link is resolved the general way.
 */
struct note *ix_resolve_named(const struct index *ix,
			      const struct ptrvec *names, const struct link *l,
			      struct note **ret_file)
{
	const char *t = l->target[0] == '/' ? l->target + 1 : l->target;
	*ret_file = NULL;
	if (l->key && *l->target && l->kind != LINK_MD &&
	    l->kind != LINK_MD_EMBED) {
		if (strchr(t, '/')) {
			struct note *r = named_in_dir(names, t, l->key);
			if (r)
				return r;
		} else {
			struct note *r = pick(
				names, l->src ? l->src->fold_path : NULL, NULL);
			if (r || !has_other_ext(t))
				return r;
		}
	}
	return ix_resolve_key(ix, NULL, l->src, l->target, l->kind, l->key,
			      ret_file);
}

bool link_is_broken(const struct link *l)
{
	return *l->target && !l->to && !l->resolved_file;
}

void ix_link_bind(struct index *ix, struct link *l)
{
	struct note *file;
	l->to = ix_resolve_key(ix, NULL, l->src, l->target, l->kind, l->key,
			       &file);
	l->resolved_file = file != NULL;
	if (l->to && l->to != l->src)
		pv_push(&l->to->incoming, l);
}

void ix_link_unbind(struct link *l)
{
	if (l->to && l->to != l->src)
		ix_vec_swap_remove(&l->to->incoming, l);
	l->to = NULL;
	l->resolved_file = false;
}

void ix_reresolve_key(struct index *ix, const char *key)
{
	struct ptrvec *pv = hmap_get(ix->links_by_key, key);
	for (size_t i = 0; pv && i < pv->n; i++) {
		struct link *l = pv->v[i];
		ix_link_unbind(l);
		ix_link_bind(ix, l);
	}
}
