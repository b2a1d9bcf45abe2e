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

/* New text of a wikilink/embed target. */
static char *wiki_target(const char *orig, const struct rewrite_req *req)
{
	bool had_md = str_has_suffix_ci(orig, ".md");
	bool had_dir = strchr(orig, '/') != NULL;
	struct sbuf b = {0};
	if (req->mode == REWRITE_DELETED) {
		_cleanup_free_ char *o = strip_md(orig);
		sb_printf(&b, "%s (deleted)", o);
	} else if (had_dir || req->new_name_ambiguous) {
		_cleanup_free_ char *p = strip_md(req->new_path);
		sb_puts(&b, p);
	} else {
		_cleanup_free_ char *name = path_note_name(req->new_path);
		sb_puts(&b, name);
	}
	if (had_md)
		sb_puts(&b, ".md");
	return sb_steal(&b);
}

/* New text of a markdown link target, relative to the linking note. */
static char *md_target(const char *raw, bool angle, const char *src_dir,
		       const struct rewrite_req *req)
{
	bool had_md = str_has_suffix_ci(raw, ".md");
	_cleanup_free_ char *path = NULL;
	if (req->mode == REWRITE_DELETED) {
		/* Keep the folder part as written, rename the file part. */
		const char *slash = strrchr(raw, '/');
		size_t dl = slash ? (size_t)(slash - raw) + 1 : 0;
		_cleanup_free_ char *base =
			url_decode(raw + dl, strlen(raw + dl));
		_cleanup_free_ char *stem = strip_md(base);
		_cleanup_free_ char *nb =
			xasprintf("%s (deleted)%s", stem, had_md ? ".md" : "");
		_cleanup_free_ char *enc =
			angle ? xstrdup(nb) : url_encode_path(nb, true);
		return xasprintf("%.*s%s", (int)dl, raw, enc);
	}
	_cleanup_free_ char *rel = path_relative(src_dir, req->new_path);
	path = had_md ? xstrdup(rel) : strip_md(rel);
	return angle ? xstrdup(path) : url_encode_path(path, true);
}

/* A rewrite in progress: the text up to pos is in out. */
struct rewriting {
	const struct index *ix;
	const struct note *src;
	const char *text;
	const struct rewrite_req *req;
	const char *src_dir;
	bool moving;
	struct sbuf out;
	size_t pos;
	int count;
};

static void rewrite_one(struct rewriting *w, const struct md_link *l)
{
	const char *text = w->text;
	const struct rewrite_req *req = w->req;
	if (l->tstart == l->tend)
		return; /* [[#heading]] stays inside its note */
	bool file;
	struct note *to =
		index_resolve(w->ix, w->src, l->target, l->kind, &file);
	bool md = l->kind == LINK_MD || l->kind == LINK_MD_EMBED;
	_cleanup_free_ char *raw =
		xstrndup(text + l->tstart, l->tend - l->tstart);
	bool angle = l->tstart > 0 && text[l->tstart - 1] == '<';
	_cleanup_free_ char *repl = NULL;
	if (to == req->target) {
		repl = md ? md_target(raw, angle, w->src_dir, req)
			  : wiki_target(raw, req);
	} else if (md && w->moving && (to || file) && raw[0] != '/') {
		/* The linking note moves: its relative links to other files
		 * must still reach them. */
		_cleanup_free_ char *tp = to ? xstrdup(to->path) : NULL;
		if (!tp) {
			/* An attachment: where the old link led. */
			_cleanup_free_ char *od = dir_of(w->src->path);
			_cleanup_free_ char *j =
				*od ? xasprintf("%s/%s", od, l->target)
				    : xstrdup(l->target);
			tp = path_normalize(j);
		}
		if (tp) {
			bool had_md = str_has_suffix_ci(raw, ".md") || !to;
			_cleanup_free_ char *rel =
				path_relative(w->src_dir, tp);
			_cleanup_free_ char *p =
				had_md ? xstrdup(rel)
				       : xstrndup(rel, strlen(rel) - 3);
			repl = angle ? xstrdup(p) : url_encode_path(p, true);
		}
	}
	if (repl && l->quote) {
		/* A property: the new target quoted as its value is. */
		char *q = fm_quoted(repl, l->quote);
		free(repl);
		repl = q;
	}
	if (!repl || strcmp(repl, raw) == 0)
		return;
	sb_add(&w->out, text + w->pos, l->tstart - w->pos);
	sb_puts(&w->out, repl);
	w->pos = l->tend;
	w->count++;
}

char *rewrite_links(const struct index *ix, const struct note *src,
		    const char *text, size_t len, const struct rewrite_req *req,
		    int *ret_count)
{
	_cleanup_free_ char *src_dir =
		dir_of(req->src_new_path ? req->src_new_path : src->path);
	struct rewriting w = {
		.ix = ix,
		.src = src,
		.text = text,
		.req = req,
		.src_dir = src_dir,
		.moving = req->src_new_path &&
			  strcmp(req->src_new_path, src->path) != 0,
	};
	/* The properties' links come first in the text, then the body's. */
	struct frontmatter fm;
	fm_parse(text, len, &fm);
	for (size_t i = 0; i < fm.nlinks; i++)
		rewrite_one(&w, &fm.links[i]);
	fm_clear(&fm);
	struct md_doc d;
	md_scan(text, len, &d);
	for (size_t i = 0; i < d.nlinks; i++)
		rewrite_one(&w, &d.links[i]);
	md_doc_clear(&d);
	sb_add(&w.out, text + w.pos, len - w.pos);
	*ret_count = w.count;
	return sb_steal(&w.out);
}
