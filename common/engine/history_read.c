/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading the history: a note's versions back through its renames
 * (history_log, history_created), the changes made by a session or writer
 * (history_changes), a note's text at a version (history_get,
 * history_text_of) and diffs between versions or texts (history_diff,
 * text_diff, text_version).
 */
#include "history_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading --------------------------------------------------------------
 */

/* A path's segment of a note's life: the note was at path for commits
 * [lo, hi). */
struct seg {
	const char *path;
	uint32_t lo, hi;
};

/* The note now at path, back through its renames (newest segment first).
 * A path whose last change is a deletion (or a rename away): the note
 * that was there until then, its deletion included. */
static size_t segments(struct history *h, const char *path, struct seg **ret)
{
	struct seg *v = NULL;
	size_t n = 0;
	const char *cur = path;
	uint32_t hi = (uint32_t)h->ncommits, top = hi;
	struct plog *last = hist_plog_of(h, path, false);
	if (last && last->n && last->v[last->n - 1].kind == 'D') {
		hi = last->v[last->n - 1].ci;
		top = hi + 1;
	}
	while (cur && n < 10000) {
		struct plog *l = hist_plog_of(h, cur, false);
		uint32_t lo = 0;
		const char *from = NULL;
		/* The newest rename to cur before hi, and no deletion of
		 * cur between it and hi (the note there then is another). */
		for (size_t i = l ? l->n : 0; i-- > 0;) {
			const struct ref *r = &l->v[i];
			if (r->ci >= hi)
				continue;
			if (r->kind == 'D') {
				lo = r->ci + 1;
				break;
			}
			if (r->kind == 'R') {
				lo = r->ci;
				from = r->from;
				break;
			}
		}
		v = xrealloc(v, (n + 1) * sizeof(*v));
		v[n] = (struct seg){cur, lo, n ? hi : top};
		n++;
		cur = from;
		hi = lo;
	}
	*ret = v;
	return n;
}

/* path in the tree of commit ci (lock held). */
static bool in_commit(struct history *h, uint32_t ci, const char *path)
{
	git_commit *c = NULL;
	git_tree *t = NULL;
	git_tree_entry *e = NULL;
	bool ok = git_commit_lookup(&c, h->repo, &h->commits[ci].id) == 0 &&
		  git_commit_tree(&t, c) == 0 &&
		  git_tree_entry_bypath(&e, t, path) == 0;
	git_tree_entry_free(e);
	git_tree_free(t);
	git_commit_free(c);
	return ok;
}

static int cmp_ref(const void *a, const void *b)
{
	uint32_t x = ((const struct ref *)a)->ci,
		 y = ((const struct ref *)b)->ci;
	return x < y ? -1 : x > y;
}

/* The commits that touched path within [lo, hi), oldest first: its own
 * lines and the snapshots that hold it (lock held). */
static size_t refs_in(struct history *h, const char *path, uint32_t lo,
		      uint32_t hi, struct ref **ret)
{
	struct plog *l = hist_plog_of(h, path, false);
	struct ref *v = NULL;
	size_t n = 0;
	for (size_t i = 0; l && i < l->n; i++)
		if (l->v[i].ci >= lo && l->v[i].ci < hi) {
			v = xrealloc(v, (n + 1) * sizeof(*v));
			v[n++] = l->v[i];
		}
	for (size_t i = 0; i < h->nsnaps; i++) {
		uint32_t ci = h->snaps[i];
		if (ci < lo || ci >= hi || !in_commit(h, ci, path))
			continue;
		bool dup = false;
		for (size_t j = 0; j < n && !dup; j++)
			dup = v[j].ci == ci;
		if (!dup) {
			v = xrealloc(v, (n + 1) * sizeof(*v));
			v[n++] = (struct ref){ci, 'C', NULL};
		}
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_ref);
	*ret = v;
	return n;
}

static void fill_version(struct history *h, uint32_t ci, const char *path,
			 bool deleted, struct history_version *out)
{
	const struct commit_rec *c = &h->commits[ci];
	memcpy(out->id, c->hex, sizeof(out->id));
	memcpy(out->short_id, c->hex, 7);
	out->short_id[7] = 0;
	out->time = c->time;
	out->author = xstrdup(c->author);
	out->message = xstrdup(c->summary);
	out->path = xstrdup(path);
	out->deleted = deleted;
}

int history_log(struct history *h, const char *path, size_t limit,
		struct history_version **ret, size_t *ret_n, size_t *ret_total)
{
	pthread_mutex_lock(&h->mu);
	hist_flush_locked(h);
	struct seg *sv;
	size_t ns = segments(h, path, &sv);
	struct history_version *out = NULL;
	size_t n = 0, total = 0;
	for (size_t s = 0; s < ns; s++) {
		struct ref *rv;
		size_t nr = refs_in(h, sv[s].path, sv[s].lo, sv[s].hi, &rv);
		for (size_t i = nr; i-- > 0;) {
			const struct ref *r = &rv[i];
			total++;
			if (n < limit) {
				out = xrealloc(out, (n + 1) * sizeof(*out));
				memset(&out[n], 0, sizeof(*out));
				fill_version(h, r->ci, sv[s].path,
					     r->kind == 'D', &out[n]);
				n++;
			}
		}
		free(rv);
	}
	free(sv);
	pthread_mutex_unlock(&h->mu);
	*ret = out;
	*ret_n = n;
	*ret_total = total;
	return 0;
}

/* ---- changes by session -------------------------------------------------
 */

void history_changes_free(struct history_change *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].writer);
		free(v[i].session);
		free(v[i].path);
		free(v[i].from);
	}
	free(v);
}

/* The text version of path in tree t ("" when it is not there). */
static void version_in(git_tree *t, const char *path,
		       char out[TEXT_VERSION_LEN + 1])
{
	git_tree_entry *e = NULL;
	out[0] = 0;
	if (t && git_tree_entry_bypath(&e, t, path) == 0) {
		char hex[GIT_OID_HEXSZ + 1];
		git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(e));
		memcpy(out, hex, TEXT_VERSION_LEN);
		out[TEXT_VERSION_LEN] = 0;
	}
	git_tree_entry_free(e);
}

static bool selected(const struct commit_rec *c, const struct history_filter *f)
{
	if (f->since && c->time < f->since)
		return false;
	if (f->session)
		return c->session && !strcmp(c->session, f->session);
	return str_has_prefix(c->author, "mcp:");
}

/* A commit's change lines, in order ("Changed: a.md", ...). */
static size_t change_lines(const char *msg, struct change **ret)
{
	struct change *v = NULL;
	size_t n = 0, cap = 0;
	_cleanup_free_ char *from = NULL;
	for (const char *p = msg; *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char kind = 0;
		size_t skip = 0;
		if (len > 9 && !strncmp(p, "Changed: ", 9))
			kind = 'C', skip = 9;
		else if (len > 9 && !strncmp(p, "Deleted: ", 9))
			kind = 'D', skip = 9;
		else if (len > 14 && !strncmp(p, "Renamed-From: ", 14)) {
			free(from);
			from = xstrndup(p + 14, len - 14);
		} else if (len > 12 && !strncmp(p, "Renamed-To: ", 12) && from)
			kind = 'R', skip = 12;
		if (kind) {
			if (n == cap) {
				cap = cap ? 2 * cap : 8;
				v = xrealloc(v, cap * sizeof(*v));
			}
			v[n++] = (struct change){
				kind, xstrndup(p + skip, len - skip),
				kind == 'R' ? TAKE_PTR(from) : NULL};
		}
		p = e ? e + 1 : p + len;
	}
	*ret = v;
	return n;
}

/* A change's place: its commit, then its line (newer: larger). */
#define CHANGE_POS(ci, j) (((uint64_t)(ci) << 24) | (uint64_t)(j))
#define CHANGE_LINES_MAX (1u << 24)

int history_changes(struct history *h, const struct history_filter *f,
		    uint64_t start, size_t limit, struct history_change **ret,
		    size_t *ret_n, uint64_t *ret_next)
{
	struct history_change *out = NULL;
	size_t n = 0;
	uint64_t next = 0, top = start ? start : UINT64_MAX;
	int r = 0;
	pthread_mutex_lock(&h->mu);
	hist_flush_locked(h);
	for (size_t ci = h->ncommits; ci-- > 0 && !next && r == 0;) {
		const struct commit_rec *c = &h->commits[ci];
		if (CHANGE_POS(ci, 0) >= top || !selected(c, f))
			continue;
		git_commit *gc = NULL, *parent = NULL;
		git_tree *t = NULL, *pt = NULL;
		if (git_commit_lookup(&gc, h->repo, &c->id) < 0 ||
		    git_commit_tree(&t, gc) < 0 ||
		    (git_commit_parentcount(gc) &&
		     (git_commit_parent(&parent, gc, 0) < 0 ||
		      git_commit_tree(&pt, parent) < 0))) {
			hist_set_err(h, "cannot read the history");
			r = -EIO;
		}
		struct change *cv = NULL;
		size_t nc =
			r == 0 ? change_lines(git_commit_message(gc), &cv) : 0;
		for (size_t j = nc < CHANGE_LINES_MAX ? nc : 0; j-- > 0;) {
			uint64_t pos = CHANGE_POS(ci, j);
			if (pos >= top)
				continue;
			struct history_change x = {.time = c->time,
						   .kind = cv[j].kind};
			version_in(pt,
				   cv[j].kind == 'R' ? cv[j].from : cv[j].path,
				   x.before);
			if (cv[j].kind != 'D')
				version_in(t, cv[j].path, x.after);
			/* Made and unmade within one batch: no change. */
			if (cv[j].kind != 'R' && !strcmp(x.before, x.after))
				continue;
			if (n == limit) {
				next = CHANGE_POS(ci, j + 1);
				break;
			}
			memcpy(x.commit, c->hex, 7);
			x.writer = xstrdup(c->author);
			x.session = c->session ? xstrdup(c->session) : NULL;
			x.path = xstrdup(cv[j].path);
			x.from = cv[j].from ? xstrdup(cv[j].from) : NULL;
			out = xrealloc(out, (n + 1) * sizeof(*out));
			out[n++] = x;
		}
		for (size_t j = 0; j < nc; j++) {
			free(cv[j].path);
			free(cv[j].from);
		}
		free(cv);
		git_tree_free(pt);
		git_tree_free(t);
		git_commit_free(parent);
		git_commit_free(gc);
	}
	pthread_mutex_unlock(&h->mu);
	if (r < 0) {
		history_changes_free(out, n);
		return r;
	}
	*ret = out;
	*ret_n = n;
	*ret_next = next;
	return 0;
}

int64_t history_created(struct history *h, const char *path)
{
	pthread_mutex_lock(&h->mu);
	struct seg *sv;
	size_t ns = segments(h, path, &sv);
	int64_t t = 0;
	struct ref *rv;
	size_t nr =
		refs_in(h, sv[ns - 1].path, sv[ns - 1].lo, sv[ns - 1].hi, &rv);
	if (nr)
		t = h->commits[rv[0].ci].time;
	free(rv);
	free(sv);
	pthread_mutex_unlock(&h->mu);
	return t;
}

/* A commit by id prefix (lock held): index, or -ENOENT / -EINVAL. */
static int find_commit(struct history *h, const char *version, uint32_t *ret,
		       char **ret_err)
{
	size_t vl = strlen(version);
	bool hex = vl >= 4 && vl <= 40;
	for (size_t i = 0; hex && i < vl; i++)
		hex = strchr("0123456789abcdefABCDEF", version[i]) != NULL;
	if (!hex) {
		*ret_err = xasprintf("Invalid version %s: a version is "
				     "a commit id of 4 to 40 hex digits, as "
				     "the note's history lists them",
				     QUOTE(version));
		return -EINVAL;
	}
	_cleanup_free_ char *lower = xstrdup(version);
	for (char *p = lower; *p; p++)
		if (*p >= 'A' && *p <= 'F')
			*p = (char)(*p + 32);
	size_t found = 0;
	uint32_t at = 0;
	for (size_t i = 0; i < h->ncommits; i++) {
		if (!strncmp(h->commits[i].hex, lower, vl)) {
			found++;
			at = (uint32_t)i;
		}
	}
	if (!found) {
		*ret_err = xasprintf("Version %s not found", QUOTE(version));
		return -ENOENT;
	}
	if (found > 1) {
		*ret_err = xasprintf("Version %s is ambiguous (%zu versions "
				     "start with it); give more digits",
				     QUOTE(version), found);
		return -EINVAL;
	}
	*ret = at;
	return 0;
}

/* The note's path at commit ci (lock held), or NULL before it existed. */
static const char *path_at(struct history *h, const char *path, uint32_t ci,
			   struct seg **sv)
{
	size_t ns = segments(h, path, sv);
	for (size_t s = 0; s < ns; s++)
		if (ci >= (*sv)[s].lo && ci < (*sv)[s].hi)
			return (*sv)[s].path;
	return NULL;
}

/* The blob of path in commit ci (lock held). */
static int blob_at(struct history *h, uint32_t ci, const char *path,
		   git_blob **ret)
{
	git_commit *c = NULL;
	git_tree *t = NULL;
	git_tree_entry *e = NULL;
	int r = git_commit_lookup(&c, h->repo, &h->commits[ci].id);
	if (r == 0)
		r = git_commit_tree(&t, c);
	if (r == 0)
		r = git_tree_entry_bypath(&e, t, path);
	if (r == 0)
		r = git_blob_lookup(ret, h->repo, git_tree_entry_id(e));
	git_tree_entry_free(e);
	git_tree_free(t);
	git_commit_free(c);
	return r == 0 ? 0 : r == GIT_ENOTFOUND ? -ENOENT : -EIO;
}

/* The version of the note at commit ci: the newest commit at or before
 * ci that touched it (lock held). */
static uint32_t touched_at(struct history *h, const char *path, uint32_t ci)
{
	struct ref *rv;
	size_t nr = refs_in(h, path, 0, ci + 1, &rv);
	uint32_t best = nr ? rv[nr - 1].ci : ci;
	free(rv);
	return best;
}

static int resolve(struct history *h, const char *path, const char *version,
		   git_blob **ret_blob, struct history_version *ret_ver,
		   char **ret_err)
{
	uint32_t ci;
	int r = find_commit(h, version, &ci, ret_err);
	if (r < 0)
		return r;
	struct seg *sv = NULL;
	const char *p = path_at(h, path, ci, &sv);
	if (p)
		r = blob_at(h, ci, p, ret_blob);
	if (!p || r == -ENOENT) {
		*ret_err = xasprintf("Note %s did not exist in version %s",
				     QUOTE(path), version);
		free(sv);
		return -ENOENT;
	}
	if (r < 0) {
		hist_set_err(h, "cannot read a version");
		*ret_err = xasprintf("Cannot read version %s: %s", version,
				     h->err);
		free(sv);
		return r;
	}
	memset(ret_ver, 0, sizeof(*ret_ver));
	fill_version(h, touched_at(h, p, ci), p, false, ret_ver);
	free(sv);
	return 0;
}

int history_get(struct history *h, const char *path, const char *version,
		struct history_version *ret_ver, char **ret_text,
		size_t *ret_len, char **ret_err)
{
	pthread_mutex_lock(&h->mu);
	hist_flush_locked(h);
	git_blob *b = NULL;
	int r = resolve(h, path, version, &b, ret_ver, ret_err);
	if (r == 0) {
		size_t n = (size_t)git_blob_rawsize(b);
		*ret_text = xstrndup(git_blob_rawcontent(b), n);
		*ret_len = n;
		git_blob_free(b);
	}
	pthread_mutex_unlock(&h->mu);
	return r;
}

struct diff_out {
	struct sbuf *b;
};

static int hunk_cb(const git_diff_delta *d, const git_diff_hunk *hk,
		   const git_diff_line *l, void *ud)
{
	(void)d;
	(void)hk;
	struct diff_out *o = ud;
	switch (l->origin) {
	case GIT_DIFF_LINE_CONTEXT:
	case GIT_DIFF_LINE_ADDITION:
	case GIT_DIFF_LINE_DELETION:
		sb_putc(o->b, l->origin);
		sb_add(o->b, l->content, l->content_len);
		if (!l->content_len || l->content[l->content_len - 1] != '\n')
			sb_putc(o->b, '\n');
		break;
	case GIT_DIFF_LINE_CONTEXT_EOFNL:
	case GIT_DIFF_LINE_ADD_EOFNL:
	case GIT_DIFF_LINE_DEL_EOFNL:
		sb_puts(o->b, "\\ No newline at end of file\n");
		break;
	case GIT_DIFF_LINE_HUNK_HDR:
		sb_add(o->b, l->content, l->content_len);
		break;
	default:
		break;
	}
	return 0;
}

/* A patch as unified diff text, its hunks only (no file header). */
static void render_hunks(git_patch *patch, struct sbuf *s)
{
	struct diff_out o = {s};
	size_t nh = git_patch_num_hunks(patch);
	for (size_t i = 0; i < nh; i++) {
		const git_diff_hunk *hk;
		size_t nl;
		if (git_patch_get_hunk(&hk, &nl, patch, i) < 0)
			continue;
		sb_add(s, hk->header, hk->header_len);
		if (!hk->header_len || hk->header[hk->header_len - 1] != '\n')
			sb_putc(s, '\n');
		for (size_t j = 0; j < nl; j++) {
			const git_diff_line *l;
			if (git_patch_get_line_in_hunk(&l, patch, i, j) == 0)
				hunk_cb(NULL, hk, l, &o);
		}
	}
}

void text_version(const char *text, size_t len, char out[TEXT_VERSION_LEN + 1])
{
	git_oid id;
	if (git_odb_hash(&id, text, len, GIT_OBJECT_BLOB) < 0)
		memset(&id, 0, sizeof(id));
	char hex[GIT_OID_HEXSZ + 1];
	git_oid_tostr(hex, sizeof(hex), &id);
	memcpy(out, hex, TEXT_VERSION_LEN);
	out[TEXT_VERSION_LEN] = 0;
}

static void git_init_once(void)
{
	git_libgit2_init();
}

char *text_diff(const char *old_path, const char *a, size_t alen,
		const char *new_path, const char *b, size_t blen,
		size_t *ret_add, size_t *ret_del)
{
	/* Dry runs diff without a history (vaultd --no-history, tests). */
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, git_init_once);
	git_patch *patch = NULL;
	git_diff_options o;
	git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
	o.context_lines = 3;
	struct sbuf s = {0};
	size_t ctx = 0, add = 0, del = 0;
	if (git_patch_from_buffers(&patch, a, alen, old_path, b, blen, new_path,
				   &o) == 0) {
		git_patch_line_stats(&ctx, &add, &del, patch);
		sb_printf(&s, "--- a/%s\n+++ b/%s\n", old_path, new_path);
		render_hunks(patch, &s);
	}
	git_patch_free(patch);
	if (ret_add)
		*ret_add = add;
	if (ret_del)
		*ret_del = del;
	return sb_steal(&s);
}

int history_text_of(struct history *h, const char *version, char **ret_text,
		    size_t *ret_len)
{
	git_oid id;
	size_t n = strlen(version);
	if (n < 4 || n > GIT_OID_HEXSZ ||
	    strspn(version, "0123456789abcdef") != n ||
	    git_oid_fromstrn(&id, version, n) < 0)
		return -EINVAL;
	pthread_mutex_lock(&h->mu);
	git_odb *odb = NULL;
	git_odb_object *obj = NULL;
	int r = -ENOENT;
	if (git_repository_odb(&odb, h->repo) == 0 &&
	    git_odb_read_prefix(&obj, odb, &id, n) == 0 &&
	    git_odb_object_type(obj) == GIT_OBJECT_BLOB) {
		*ret_len = git_odb_object_size(obj);
		*ret_text = xmalloc(*ret_len + 1);
		memcpy(*ret_text, git_odb_object_data(obj), *ret_len);
		(*ret_text)[*ret_len] = 0;
		r = 0;
	}
	git_odb_object_free(obj);
	git_odb_free(odb);
	pthread_mutex_unlock(&h->mu);
	return r;
}

int history_diff(struct history *h, const char *path, const char *from,
		 const char *to, char **ret_diff, size_t *ret_add,
		 size_t *ret_del, struct history_version *ret_from,
		 struct history_version *ret_to, char **ret_err)
{
	pthread_mutex_lock(&h->mu);
	hist_flush_locked(h);
	git_blob *a = NULL, *b = NULL;
	git_patch *patch = NULL;
	memset(ret_from, 0, sizeof(*ret_from));
	memset(ret_to, 0, sizeof(*ret_to));
	int r = resolve(h, path, from, &a, ret_from, ret_err);
	if (r == 0)
		r = resolve(h, path, to, &b, ret_to, ret_err);
	if (r == 0) {
		git_diff_options o;
		git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
		o.context_lines = 3;
		if (git_patch_from_blobs(&patch, a, ret_from->path, b,
					 ret_to->path, &o) < 0) {
			hist_set_err(h, "cannot compare the versions");
			*ret_err = xasprintf("%s", h->err);
			r = -EIO;
		}
	}
	if (r == 0) {
		size_t ctx = 0;
		git_patch_line_stats(&ctx, ret_add, ret_del, patch);
		struct sbuf s = {0};
		sb_printf(&s, "--- a/%s\n+++ b/%s\n", ret_from->path,
			  ret_to->path);
		render_hunks(patch, &s);
		*ret_diff = sb_steal(&s);
	} else {
		version_clear(ret_to);
		version_clear(ret_from);
	}
	git_patch_free(patch);
	git_blob_free(a);
	git_blob_free(b);
	pthread_mutex_unlock(&h->mu);
	return r;
}
