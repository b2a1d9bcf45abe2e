/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "note.h"
#include "frontmatter.h"
#include "u8.h"

#include <ctype.h>

char *fold_key_n(const char *s, size_t n)
{
	char *r = u8_fold_n(s, n);
	if (r)
		return r;
	r = xstrndup(s, n);
	for (char *p = r; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return r;
}

int fold_find_line(const char *text, const char *fq, char **ret_line)
{
	int line = 0;
	for (const char *p = text; *p; line++) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		_cleanup_free_ char *fl = fold_key_n(p, l);
		if (strstr(fl, fq)) {
			size_t keep = l > 200 ? 200 : l;
			while (keep < l && keep > 0 &&
			       ((unsigned char)p[keep] & 0xc0) == 0x80)
				keep--;
			*ret_line = xstrndup(p, keep);
			return line;
		}
		if (!e)
			break;
		p = e + 1;
	}
	return -1;
}

char *fold_key(const char *s)
{
	return fold_key_n(s, strlen(s));
}

bool path_is_note(const char *path)
{
	return str_has_suffix_ci(path, ".md") && strlen(path) > 3;
}

char *path_note_name(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t n = strlen(b);
	if (n > 3 && str_has_suffix_ci(b, ".md"))
		n -= 3;
	return xstrndup(b, n);
}

char *path_normalize(const char *path)
{
	struct ptrvec parts = {0};
	_cleanup_free_ char *copy = xstrdup(path);
	char *save = NULL;
	for (char *t = strtok_r(copy, "/", &save); t;
	     t = strtok_r(NULL, "/", &save)) {
		if (strcmp(t, ".") == 0)
			continue;
		if (strcmp(t, "..") == 0) {
			if (!parts.n) {
				pv_free(&parts);
				return NULL;
			}
			parts.n--;
			continue;
		}
		pv_push(&parts, t);
	}
	struct sbuf b = {0};
	for (size_t i = 0; i < parts.n; i++) {
		if (i)
			sb_putc(&b, '/');
		sb_puts(&b, parts.v[i]);
	}
	pv_free(&parts);
	return sb_steal(&b);
}

bool tag_matches(const char *tag, const char *query)
{
	_cleanup_free_ char *t = fold_key(tag);
	_cleanup_free_ char *q = fold_key(query);
	size_t n = strlen(q);
	return strncmp(t, q, n) == 0 && (t[n] == 0 || t[n] == '/');
}

bool note_has_tag(const struct note *n, const char *tag)
{
	_cleanup_free_ char *q = fold_key(tag);
	for (size_t i = 0; i < n->ntags; i++) {
		_cleanup_free_ char *t = fold_key(n->tags[i]);
		if (strcmp(t, q) == 0)
			return true;
	}
	return false;
}

bool note_has_key(const struct note *n, const char *key)
{
	for (char **k = n->fm_keys; k && *k; k++)
		if (strcmp(*k, key) == 0)
			return true;
	return false;
}

static bool value_nonempty(const cJSON *v)
{
	if (!v || cJSON_IsNull(v))
		return false;
	if (cJSON_IsString(v))
		return v->valuestring[0] != 0;
	if (cJSON_IsArray(v) || cJSON_IsObject(v))
		return cJSON_GetArraySize(v) > 0;
	return true;
}

static void add_unique(struct ptrvec *pv, struct ptrvec *folds, char *s)
{
	char *f = fold_key(s);
	for (size_t i = 0; i < folds->n; i++) {
		if (strcmp(folds->v[i], f) == 0) {
			free(f);
			free(s);
			return;
		}
	}
	pv_push(folds, f);
	pv_push(pv, s);
}

static char **finish_list(struct ptrvec *pv, size_t *ret_n)
{
	*ret_n = pv->n;
	pv_push(pv, NULL);
	return (char **)pv->v;
}

static void clear_folds(struct ptrvec *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i]);
	pv_free(f);
}

/* Folded basename without ".md": the bucket a link is resolved in. */
static char *link_key(const char *target)
{
	const char *b = strrchr(target, '/');
	b = b ? b + 1 : target;
	size_t n = strlen(b);
	if (n > 3 && str_has_suffix_ci(b, ".md"))
		n -= 3;
	return fold_key_n(b, n);
}

struct note *note_new(const char *path, const char *text, size_t len)
{
	struct note *n = xcalloc(1, sizeof(*n));
	n->path = xstrdup(path);
	n->name = path_note_name(path);
	n->fold_path = fold_key(path);
	const char *slash = strrchr(path, '/');
	n->dirlen = slash ? (size_t)(slash - path) : 0;
	const char *fslash = strrchr(n->fold_path, '/');
	n->fold_dirlen = fslash ? (size_t)(fslash - n->fold_path) : 0;
	/* Folding goes character by character and nothing composes with
	 * '/' or ".md": the folded name is part of the folded path. */
	const char *fb = fslash ? fslash + 1 : n->fold_path;
	size_t fl = strlen(fb);
	if (fl > 3 && !strcmp(fb + fl - 3, ".md"))
		n->fold_name = xstrndup(fb, fl - 3);
	else
		n->fold_name = fold_key(n->name);

	struct ptrvec tags = {0}, tfold = {0}, aliases = {0}, afold = {0},
		      keys = {0};
	if (text) {
		struct frontmatter fm;
		fm_parse(text, len, &fm);
		if (!fm.valid) {
			n->fm_invalid = true;
			n->fm_unread = fm.over_budget;
			n->fm_err_line = fm.err_line;
		}
		const cJSON *kv;
		cJSON_ArrayForEach(kv, fm.data)
		{
			if (value_nonempty(kv))
				pv_push(&keys, xstrdup(kv->string));
		}
		static const char *const tag_keys[] = {"tags", "tag", "Tags",
						       NULL};
		for (const char *const *k = tag_keys; *k; k++) {
			char **l = fm_string_list(
				cJSON_GetObjectItemCaseSensitive(fm.data, *k),
				true, true);
			for (char **p = l; *p; p++)
				add_unique(&tags, &tfold, TAKE_PTR(*p));
			free(l);
		}
		static const char *const alias_keys[] = {"aliases", "alias",
							 NULL};
		for (const char *const *k = alias_keys; *k; k++) {
			char **l = fm_string_list(
				cJSON_GetObjectItemCaseSensitive(fm.data, *k),
				false, false);
			for (char **p = l; *p; p++)
				add_unique(&aliases, &afold, TAKE_PTR(*p));
			free(l);
		}
		fm_clear(&fm);

		struct md_doc d;
		md_scan(text, len, &d);
		for (size_t i = 0; i < d.ntags; i++)
			add_unique(&tags, &tfold, TAKE_PTR(d.tags[i].tag));
		n->links = xcalloc(d.nlinks, sizeof(struct link));
		for (size_t i = 0; i < d.nlinks; i++) {
			struct md_link *ml = &d.links[i];
			struct link *l = &n->links[n->nlinks++];
			l->src = n;
			l->target = TAKE_PTR(ml->target);
			l->subpath = TAKE_PTR(ml->subpath);
			l->alias = TAKE_PTR(ml->alias);
			l->key = *l->target ? link_key(l->target) : NULL;
			l->line = ml->line;
			l->kind = (uint8_t)ml->kind;
		}
		md_doc_clear(&d);
	}
	clear_folds(&tfold);
	size_t nfa;
	n->fold_aliases = finish_list(&afold, &nfa);
	n->tags = finish_list(&tags, &n->ntags);
	n->aliases = finish_list(&aliases, &n->naliases);
	size_t nk;
	n->fm_keys = finish_list(&keys, &nk);
	return n;
}

void note_set_stat(struct note *n, const struct stat *st, int64_t btime)
{
	n->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL +
		      st->st_mtim.tv_nsec;
	n->size = st->st_size;
	n->ino = st->st_ino;
	n->btime = btime ? btime : st->st_mtim.tv_sec;
}

struct note *note_free(struct note *n)
{
	if (!n)
		return NULL;
	free(n->path);
	free(n->name);
	free(n->fold_path);
	free(n->fold_name);
	strv_free(n->tags);
	strv_free(n->aliases);
	strv_free(n->fold_aliases);
	strv_free(n->fm_keys);
	for (size_t i = 0; i < n->nlinks; i++) {
		free(n->links[i].target);
		free(n->links[i].subpath);
		free(n->links[i].alias);
		free(n->links[i].key);
	}
	free(n->links);
	pv_free(&n->incoming);
	free(n);
	return NULL;
}

/* ---- blobs ------------------------------------------------------------------
 */

#define BLOB_VERSION 1

static void put_u32(struct sbuf *b, uint32_t v)
{
	sb_add(b, (const char *)&v, sizeof(v));
}

static void put_str(struct sbuf *b, const char *s)
{
	if (!s) {
		put_u32(b, UINT32_MAX);
		return;
	}
	uint32_t n = (uint32_t)strlen(s);
	put_u32(b, n);
	sb_add(b, s, n);
}

static void put_strv(struct sbuf *b, char **v, size_t n)
{
	put_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		put_str(b, v[i]);
}

void *note_to_blob(const struct note *n, size_t *ret_len)
{
	struct sbuf b = {0};
	sb_putc(&b, BLOB_VERSION);
	sb_putc(&b, (char)((n->fm_invalid ? 1 : 0) | (n->too_big ? 2 : 0) |
			   (n->fm_unread ? 4 : 0)));
	put_u32(&b, (uint32_t)n->fm_err_line);
	put_strv(&b, n->tags, n->ntags);
	put_strv(&b, n->aliases, n->naliases);
	put_strv(&b, n->fm_keys, strv_len(n->fm_keys));
	put_u32(&b, (uint32_t)n->nlinks);
	for (size_t i = 0; i < n->nlinks; i++) {
		const struct link *l = &n->links[i];
		sb_putc(&b, (char)l->kind);
		put_u32(&b, (uint32_t)l->line);
		put_str(&b, l->target);
		put_str(&b, l->subpath);
		put_str(&b, l->alias);
	}
	*ret_len = b.len;
	return sb_steal(&b);
}

struct reader {
	const unsigned char *p, *end;
	bool bad;
};

static uint32_t get_u32(struct reader *r)
{
	uint32_t v = 0;
	if (r->end - r->p < 4) {
		r->bad = true;
		return 0;
	}
	memcpy(&v, r->p, 4);
	r->p += 4;
	return v;
}

static char *get_str(struct reader *r, bool nullable)
{
	uint32_t n = get_u32(r);
	if (r->bad)
		return NULL;
	if (n == UINT32_MAX) {
		if (!nullable)
			r->bad = true;
		return NULL;
	}
	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		return NULL;
	}
	char *s = xstrndup((const char *)r->p, n);
	r->p += n;
	return s;
}

static char **get_strv(struct reader *r, size_t *ret_n)
{
	uint32_t n = get_u32(r);
	if (r->bad || n > (uint32_t)(r->end - r->p) / 4) {
		r->bad = true;
		*ret_n = 0;
		return xcalloc(1, sizeof(char *));
	}
	char **v = xcalloc(n + 1, sizeof(char *));
	for (uint32_t i = 0; i < n && !r->bad; i++)
		v[i] = get_str(r, false);
	*ret_n = n;
	return v;
}

struct note *note_from_blob(const char *path, const void *blob, size_t len)
{
	struct reader r = {blob, (const unsigned char *)blob + len, false};
	if (len < 2 || r.p[0] != BLOB_VERSION)
		return NULL;
	unsigned flags = r.p[1];
	r.p += 2;
	struct note *n = note_new(path, NULL, 0);
	n->fm_invalid = flags & 1;
	n->fm_unread = flags & 4;
	n->too_big = (flags & 2) != 0;
	n->fm_err_line = (int)get_u32(&r);
	strv_free(n->tags);
	strv_free(n->aliases);
	strv_free(n->fold_aliases);
	strv_free(n->fm_keys);
	n->tags = get_strv(&r, &n->ntags);
	n->aliases = get_strv(&r, &n->naliases);
	n->fold_aliases = xcalloc(n->naliases + 1, sizeof(char *));
	for (size_t i = 0; i < n->naliases && !r.bad; i++)
		n->fold_aliases[i] =
			fold_key(n->aliases[i] ? n->aliases[i] : "");
	size_t nk;
	n->fm_keys = get_strv(&r, &nk);
	uint32_t nl = get_u32(&r);
	if (!r.bad && nl <= (uint32_t)(r.end - r.p) / 17) {
		n->links = xcalloc(nl + 1, sizeof(struct link));
		for (uint32_t i = 0; i < nl && !r.bad; i++) {
			struct link *l = &n->links[n->nlinks++];
			if (r.p >= r.end) {
				r.bad = true;
				break;
			}
			l->src = n;
			l->kind = *r.p++;
			l->line = (int)get_u32(&r);
			l->target = get_str(&r, false);
			l->subpath = get_str(&r, true);
			l->alias = get_str(&r, true);
			if (!l->target) {
				l->target = xstrdup("");
				r.bad = true;
			}
			l->key = *l->target ? link_key(l->target) : NULL;
		}
	} else {
		r.bad = true;
	}
	if (r.bad || r.p != r.end)
		return note_free(n);
	return n;
}

struct note *note_copy(const struct note *n)
{
	size_t len;
	_cleanup_free_ void *blob = note_to_blob(n, &len);
	struct note *c = note_from_blob(n->path, blob, len);
	if (!c)
		return NULL;
	c->mtime_ns = n->mtime_ns;
	c->btime = n->btime;
	c->size = n->size;
	c->ino = n->ino;
	return c;
}
