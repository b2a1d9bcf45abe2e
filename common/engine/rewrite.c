/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "rewrite.h"
#include "frontmatter.h"

static size_t split(char *s, char **parts, size_t max)
{
	size_t n = 0;
	char *save = NULL;
	for (char *t = strtok_r(s, "/", &save); t && n < max;
	     t = strtok_r(NULL, "/", &save))
		parts[n++] = t;
	return n;
}

char *path_relative(const char *from_dir, const char *to_path)
{
	_cleanup_free_ char *f = xstrdup(from_dir);
	_cleanup_free_ char *t = xstrdup(to_path);
	char *fp[256], *tp[256];
	size_t m = split(f, fp, 256), n = split(t, tp, 256), k = 0;
	/* Common folders; the last part of to_path is the file itself. */
	while (k < m && k + 1 < n && strcmp(fp[k], tp[k]) == 0)
		k++;
	struct sbuf b = {0};
	for (size_t i = k; i < m; i++)
		sb_puts(&b, "../");
	for (size_t i = k; i < n; i++) {
		if (i > k)
			sb_putc(&b, '/');
		sb_puts(&b, tp[i]);
	}
	return sb_steal(&b);
}

static char *dir_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? xstrndup(path, (size_t)(s - path)) : xstrdup("");
}

static char *strip_md(const char *p)
{
	size_t n = strlen(p);
	if (n > 3 && str_has_suffix_ci(p, ".md"))
		n -= 3;
	return xstrndup(p, n);
}

static bool is_md(const struct md_link *l)
{
	return l->kind == LINK_MD || l->kind == LINK_MD_EMBED;
}

/* A rewrite in progress: the text up to pos is in out. */
struct rewriting {
	const struct index *ix;
	const struct note *src;
	const char *text;
	struct sbuf out;
	size_t pos;
	int count;
	/* Moves */
	const struct index_moves *mv;
	char *src_dir; /* the folder src will be in */
	bool src_changes_folder;
	/* Deletes */
	const struct note *target;
};

/* Replace l's target with repl (quoted as a property's value is). */
static void replace(struct rewriting *w, const struct md_link *l,
		    const char *repl)
{
	_cleanup_free_ char *q = l->quote ? fm_quoted(repl, l->quote) : NULL;
	const char *r = q ? q : repl;
	size_t rl = strlen(r);
	if (rl == l->tend - l->tstart && !memcmp(r, w->text + l->tstart, rl))
		return;
	sb_add(&w->out, w->text + w->pos, l->tstart - w->pos);
	sb_puts(&w->out, r);
	w->pos = l->tend;
	w->count++;
}

/* Every link of the text, properties first (in the order of the text). */
static void each_link(struct rewriting *w, size_t len,
		      void (*fn)(struct rewriting *, const struct md_link *))
{
	struct frontmatter fm;
	fm_parse(w->text, len, &fm);
	for (size_t i = 0; i < fm.nlinks; i++)
		if (fm.links[i].tstart < fm.links[i].tend)
			fn(w, &fm.links[i]);
	fm_clear(&fm);
	struct md_doc d;
	md_scan(w->text, len, &d);
	/* [[#heading]] stays inside its note. */
	for (size_t i = 0; i < d.nlinks; i++)
		if (d.links[i].tstart < d.links[i].tend)
			fn(w, &d.links[i]);
	md_doc_clear(&d);
	sb_add(&w->out, w->text + w->pos, len - w->pos);
}

/* ---- moves ------------------------------------------------------------ */

/* Whether p ends with the path parts s (bytes as they are). */
static bool ends_with_parts(const char *p, const char *s)
{
	size_t a = strlen(p), b = strlen(s);
	return a >= b && !memcmp(p + a - b, s, b) &&
	       (a == b || p[a - b - 1] == '/');
}

/*
 * A link that still leads to a moved entry but spells the end of its old
 * path, which changed in case only ("Plan" renamed "plan", a folder
 * "Archive" renamed "archive"): it is written anew, as Obsidian does.
 */
static bool spelled_old(const char *target, const char *from, const char *to)
{
	_cleanup_free_ char *t = strip_md(target);
	_cleanup_free_ char *f = strip_md(from);
	_cleanup_free_ char *n = strip_md(to);
	return ends_with_parts(f, t) && !ends_with_parts(n, t);
}

/* Whether target, read relative to folder dir, is path (a note may be
 * written without ".md"). */
static bool leads_relative(const char *dir, const char *target,
			   const char *path)
{
	_cleanup_free_ char *j =
		*dir ? xasprintf("%s/%s", dir, target) : xstrdup(target);
	_cleanup_free_ char *p = path_normalize(j);
	if (!p)
		return false;
	_cleanup_free_ char *fp = fold_key(p);
	_cleanup_free_ char *fpath = fold_key(path);
	if (!strcmp(fp, fpath))
		return true;
	_cleanup_free_ char *fmd = xasprintf("%s.md", fp);
	return !strcmp(fmd, fpath);
}

/*
 * A wikilink that only a relative path keeps ("../Note": a note at the
 * root when one of that name sits beside the linking note), or NULL.
 */
static char *relative_wikilink(struct rewriting *w, const struct note *e,
			       const char *to_path, bool note)
{
	_cleanup_free_ char *rel = path_relative(w->src_dir, to_path);
	_cleanup_free_ char *p = note ? strip_md(rel) : xstrdup(rel);
	char *text =
		str_has_prefix(p, "../") ? xstrdup(p) : xasprintf("./%s", p);
	bool file;
	if (index_resolve_entry(w->ix, w->mv, w->src, text, LINK_WIKI, &file) ==
	    e)
		return text;
	free(text);
	return NULL;
}

static void move_one(struct rewriting *w, const struct md_link *l)
{
	if (!index_moves_affect(w->mv, w->src, l->target))
		return;
	bool file, after_file;
	const struct note *before = index_resolve_entry(
		w->ix, NULL, w->src, l->target, l->kind, &file);
	if (!before)
		return; /* broken links stay as written */
	const struct note *after = index_resolve_entry(
		w->ix, w->mv, w->src, l->target, l->kind, &after_file);
	const char *to_path = index_moves_path(w->mv, before);
	bool md = is_md(l);
	bool change = after != before;
	if (!change && strcmp(to_path, note_path(before)))
		change = spelled_old(l->target, note_path(before), to_path);
	if (!change && md && w->src_changes_folder && l->target[0] != '/')
		change = !leads_relative(w->src_dir, l->target, to_path);
	if (!change)
		return;
	_cleanup_free_ char *raw =
		xstrndup(w->text + l->tstart, l->tend - l->tstart);
	bool had_md = str_has_suffix_ci(raw, ".md");
	bool note = !file;
	_cleanup_free_ char *repl = NULL;
	if (md) {
		bool angle = l->tstart > 0 && w->text[l->tstart - 1] == '<';
		_cleanup_free_ char *rel = path_relative(w->src_dir, to_path);
		_cleanup_free_ char *p =
			note && !had_md ? strip_md(rel) : xstrdup(rel);
		repl = angle ? xstrdup(p) : url_encode_path(p, true);
	} else {
		_cleanup_free_ char *s =
			index_shortest_link(w->ix, w->mv, w->src, before);
		if (!s)
			s = relative_wikilink(w, before, to_path, note);
		if (!s)
			return;
		repl = note && had_md ? xasprintf("%s.md", s) : xstrdup(s);
	}
	replace(w, l, repl);
}

char *rewrite_moved(const struct index *ix, const struct index_moves *mv,
		    const struct note *src, const char *text, size_t len,
		    int *ret_count)
{
	const char *np = index_moves_path(mv, src);
	struct rewriting w = {
		.ix = ix,
		.src = src,
		.text = text,
		.mv = mv,
		.src_dir = dir_of(np),
	};
	w.src_changes_folder =
		strlen(w.src_dir) != note_dirlen(src) ||
		strncmp(w.src_dir, note_path(src), note_dirlen(src));
	each_link(&w, len, move_one);
	free(w.src_dir);
	*ret_count = w.count;
	return sb_steal(&w.out);
}

/* ---- deletes ---------------------------------------------------------- */

static void delete_one(struct rewriting *w, const struct md_link *l)
{
	bool file;
	if (index_resolve(w->ix, w->src, l->target, l->kind, &file) !=
	    w->target)
		return;
	_cleanup_free_ char *raw =
		xstrndup(w->text + l->tstart, l->tend - l->tstart);
	bool had_md = str_has_suffix_ci(raw, ".md");
	_cleanup_free_ char *repl = NULL;
	if (!is_md(l)) {
		_cleanup_free_ char *o = strip_md(raw);
		repl = xasprintf("%s (deleted)%s", o, had_md ? ".md" : "");
	} else {
		/* Keep the folder part as written, rename the file part. */
		bool angle = l->tstart > 0 && w->text[l->tstart - 1] == '<';
		const char *slash = strrchr(raw, '/');
		size_t dl = slash ? (size_t)(slash - raw) + 1 : 0;
		_cleanup_free_ char *base =
			url_decode(raw + dl, strlen(raw + dl));
		_cleanup_free_ char *stem = strip_md(base);
		_cleanup_free_ char *nb =
			xasprintf("%s (deleted)%s", stem, had_md ? ".md" : "");
		_cleanup_free_ char *enc =
			angle ? xstrdup(nb) : url_encode_path(nb, true);
		repl = xasprintf("%.*s%s", (int)dl, raw, enc);
	}
	replace(w, l, repl);
}

char *rewrite_deleted(const struct index *ix, const struct note *src,
		      const struct note *target, const char *text, size_t len,
		      int *ret_count)
{
	struct rewriting w = {
		.ix = ix,
		.src = src,
		.text = text,
		.target = target,
	};
	each_link(&w, len, delete_one);
	*ret_count = w.count;
	return sb_steal(&w.out);
}
