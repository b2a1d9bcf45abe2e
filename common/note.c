/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "note.h"
#include "frontmatter.h"
#include "hmap.h"
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

/* A list without repeats, in the order first seen. */
struct uniq {
	struct ptrvec v;
	struct hmap *seen; /* key -> the string kept */
};

/* Keep s (taking it) unless a string with the same key was kept: keys
 * are folded (tags: "AI" and "ai" are one tag) or the strings themselves
 * (aliases are kept as written). A hash set: notes may hold millions. */
static void uniq_add(struct uniq *u, char *s, bool fold)
{
	if (!u->seen)
		u->seen = hmap_new();
	_cleanup_free_ char *f = fold ? fold_key(s) : NULL;
	const char *key = f ? f : s;
	if (hmap_get(u->seen, key)) {
		free(s);
		return;
	}
	hmap_put(u->seen, key, s);
	pv_push(&u->v, s);
}

/* The strings kept, NULL-terminated, and how many. */
static char **uniq_finish(struct uniq *u, size_t *ret_n)
{
	hmap_free(u->seen);
	*ret_n = u->v.n;
	pv_push(&u->v, NULL);
	return (char **)u->v.v;
}

/* The distinct folded forms of n aliases. */
static char **fold_all(char *const *aliases, size_t n, size_t *ret_n)
{
	struct uniq u = {0};
	for (size_t i = 0; i < n; i++)
		uniq_add(&u, fold_key(aliases[i] ? aliases[i] : ""), false);
	return uniq_finish(&u, ret_n);
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

/* Where tags and aliases are read from; the legacy keys only with
 * NOTE_READ_LEGACY_PROPERTIES. */
static const struct list_key {
	const char *key;
	bool legacy;
} TAG_KEYS[] = {{"tags", false}, {"tag", true}, {"Tags", false}},
  ALIAS_KEYS[] = {{"aliases", false}, {"alias", true}};

static void read_list(const cJSON *data, const struct list_key *keys,
		      size_t nkeys, unsigned flags, bool is_tags,
		      struct uniq *out)
{
	for (size_t i = 0; i < nkeys; i++) {
		if (keys[i].legacy && !(flags & NOTE_READ_LEGACY_PROPERTIES))
			continue;
		char **l = fm_string_list(
			cJSON_GetObjectItemCaseSensitive(data, keys[i].key),
			is_tags, is_tags);
		for (char **p = l; *p; p++)
			uniq_add(out, TAKE_PTR(*p), is_tags);
		free(l);
	}
}

static void take_link(struct note *n, struct md_link *ml)
{
	struct link *l = &n->links[n->nlinks++];
	l->src = n;
	l->target = TAKE_PTR(ml->target);
	l->subpath = TAKE_PTR(ml->subpath);
	l->alias = TAKE_PTR(ml->alias);
	l->key = *l->target ? link_key(l->target) : NULL;
	l->line = ml->line;
	l->kind = (uint8_t)ml->kind;
}

struct note *note_new(const char *path, const char *text, size_t len,
		      unsigned flags)
{
	struct note *n = xcalloc(1, sizeof(*n));
	n->path = xstrdup(path);
	n->name = path_note_name(path);
	n->fold_path = fold_key(path);
	n->read_flags = flags;
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

	struct uniq tags = {0}, aliases = {0};
	struct ptrvec keys = {0};
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
		read_list(fm.data, TAG_KEYS, ARRAY_SIZE(TAG_KEYS), flags, true,
			  &tags);
		read_list(fm.data, ALIAS_KEYS, ARRAY_SIZE(ALIAS_KEYS), flags,
			  false, &aliases);

		struct md_doc d;
		md_scan(text, len, &d);
		for (size_t i = 0; i < d.ntags; i++)
			uniq_add(&tags, TAKE_PTR(d.tags[i].tag), true);
		n->links =
			xcalloc(fm.nlinks + d.nlinks + 1, sizeof(struct link));
		for (size_t i = 0; i < fm.nlinks; i++)
			take_link(n, &fm.links[i]);
		for (size_t i = 0; i < d.nlinks; i++)
			take_link(n, &d.links[i]);
		md_doc_clear(&d);
		fm_clear(&fm);
	}
	n->tags = uniq_finish(&tags, &n->ntags);
	n->aliases = uniq_finish(&aliases, &n->naliases);
	n->fold_aliases = fold_all(n->aliases, n->naliases, &n->nfold_aliases);
	pv_push(&keys, NULL);
	n->fm_keys = (char **)keys.v;
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
	sb_putc(&b,
		(char)((n->fm_invalid ? 1 : 0) | (n->too_big ? 2 : 0) |
		       (n->fm_unread ? 4 : 0) |
		       ((n->read_flags & NOTE_READ_LEGACY_PROPERTIES) ? 8
								      : 0)));
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
	struct note *n = note_new(
		path, NULL, 0, (flags & 8) ? NOTE_READ_LEGACY_PROPERTIES : 0);
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
	if (!r.bad)
		n->fold_aliases =
			fold_all(n->aliases, n->naliases, &n->nfold_aliases);
	else
		n->fold_aliases = xcalloc(1, sizeof(char *));
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
