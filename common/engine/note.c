/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "note_int.h"
#include "frontmatter.h"
#include "hmap.h"
#include "props.h"
#include "tasks.h"
#include "u8.h"

#include <ctype.h>
#include <time.h>
#include <zlib.h>

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
	/* In one buffer: the result is never longer than path. */
	size_t len = 0;
	char *r = xmalloc(strlen(path) + 1);
	for (const char *s = path;;) {
		const char *e = strchr(s, '/');
		size_t l = e ? (size_t)(e - s) : strlen(s);
		if (l == 2 && s[0] == '.' && s[1] == '.') {
			if (!len) {
				free(r);
				return NULL;
			}
			const char *up = memrchr(r, '/', len);
			len = up ? (size_t)(up - r) : 0;
		} else if (l && !(l == 1 && s[0] == '.')) {
			if (len)
				r[len++] = '/';
			memcpy(r + len, s, l);
			len += l;
		}
		if (!e)
			break;
		s = e + 1;
	}
	r[len] = 0;
	return r;
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
	for (size_t i = 0; i < n->ntags; i++)
		if (strcmp(n->fold_tags[i], q) == 0)
			return true;
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

/* A list without repeats, in the order first seen, with each string's
 * folded form (its key, when the list is folded). */
struct uniq {
	struct ptrvec v, folds;
	struct hmap *seen; /* key -> the string kept */
};

/* Keep s (taking it) unless a string with the same key was kept: keys
 * are folded (tags: "AI" and "ai" are one tag) or the strings themselves
 * (aliases are kept as written). A hash set: notes may hold millions. */
static void uniq_add(struct uniq *u, char *s, bool fold)
{
	if (!u->seen)
		u->seen = hmap_new();
	const char *key = s;
	char *f = NULL;
	if (fold)
		key = f = fold_key(s);
	if (hmap_get(u->seen, key)) {
		free(s);
		free(f);
		return;
	}
	hmap_put(u->seen, key, s);
	pv_push(&u->v, s);
	pv_push(&u->folds, f ? f : fold_key(s));
}

/* The strings kept and their folded forms, NULL-terminated, and how
 * many. */
static char **uniq_finish(struct uniq *u, char ***ret_folds, size_t *ret_n)
{
	hmap_free(u->seen);
	*ret_n = u->v.n;
	pv_push(&u->v, NULL);
	pv_push(&u->folds, NULL);
	*ret_folds = (char **)u->folds.v;
	return (char **)u->v.v;
}

/* Folded basename without ".md": the bucket a link is resolved in. */
static char *link_key(const char *target)
{
	const char *b = strrchr(target, '/');
	b = b ? b + 1 : target;
	size_t n = strlen(b);
	if (n > 3 && str_has_suffix_ci(b, ".md"))
		n -= 3;
	/* Most names are ASCII: folding is lower-casing. */
	char *k = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];
		if (c >= 0x80) {
			free(k);
			return fold_key_n(b, n);
		}
		k[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	k[n] = 0;
	return k;
}

/* ---- packing ---------------------------------------------------------- */

static size_t slen(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/* A note's block: the note, its property bytes (right after it: queries
 * read the two together), its task bytes, nlinks links, the six string arrays
 * (each NULL-ended) and strs bytes of strings; all zero but the strings. */
struct note *note_pack_alloc(size_t nlinks, size_t ntags, size_t naliases,
			     size_t nkeys, size_t nprops, size_t ntasks,
			     size_t strs, struct pack *p)
{
	size_t props_off = sizeof(struct note);
	size_t tasks_off = props_off + nprops;
	size_t links_off = (tasks_off + ntasks + 15) & ~(size_t)15;
	size_t ptrs_off = links_off + nlinks * sizeof(struct link);
	size_t nptrs = 2 * (ntags + 1) + 3 * (naliases + 1) + nkeys + 1;
	size_t strs_off = ptrs_off + nptrs * sizeof(char *);
	char *mem = xmalloc(strs_off + strs);
	memset(mem, 0, strs_off);
	struct note *n = (struct note *)mem;
	n->props = nprops ? (unsigned char *)mem + props_off : NULL;
	n->props_len = (uint32_t)nprops;
	n->tasks = ntasks ? (unsigned char *)mem + tasks_off : NULL;
	n->tasks_len = (uint32_t)ntasks;
	n->links = (struct link *)(mem + links_off);
	char **v = (char **)(mem + ptrs_off);
	n->tags = v;
	n->fold_tags = v += ntags + 1;
	n->aliases = v += ntags + 1;
	n->alias_folds = v += naliases + 1;
	n->fold_aliases = v += naliases + 1;
	n->fm_keys = v += naliases + 1;
	p->s = mem + strs_off;
	p->end = p->s + strs;
	p->over = false;
	return n;
}

char *note_pack_strn(struct pack *p, const char *s, size_t n)
{
	if ((size_t)(p->end - p->s) < n + 1) {
		p->over = true;
		return (char *)s;
	}
	char *r = p->s;
	memcpy(r, s, n);
	r[n] = 0;
	p->s += n + 1;
	return r;
}

static char *pack_str(struct pack *p, const char *s)
{
	return s ? note_pack_strn(p, s, strlen(s)) : NULL;
}

/* The folded form of an ASCII string. */
char *note_pack_lower(struct pack *p, const char *s, size_t n)
{
	if ((size_t)(p->end - p->s) < n + 1) {
		p->over = true;
		return (char *)s;
	}
	char *r = p->s;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		r[i] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
	}
	r[n] = 0;
	p->s += n + 1;
	return r;
}

static void loose_free(struct note *n)
{
	free(n->path);
	free(n->name);
	free(n->fold_path);
	free(n->fold_name);
	strv_free(n->tags);
	strv_free(n->fold_tags);
	strv_free(n->aliases);
	strv_free(n->alias_folds);
	strv_free(n->fm_keys);
	free((void *)n->props);
	free((void *)n->tasks);
	for (size_t i = 0; i < n->nlinks; i++) {
		free(n->links[i].target);
		free(n->links[i].subpath);
		free(n->links[i].alias);
		free(n->links[i].key);
	}
	free(n->links);
	pv_free(&n->incoming);
	free(n);
}

/* n->fold_aliases: the distinct strings of n->alias_folds (pointers to
 * them). */
void note_distinct_folds(struct note *n)
{
	struct hmap *seen = n->naliases > 8 ? hmap_new() : NULL;
	size_t k = 0;
	for (size_t i = 0; i < n->naliases; i++) {
		char *f = n->alias_folds[i];
		bool dup = false;
		if (seen) {
			dup = hmap_get(seen, f) != NULL;
			if (!dup)
				hmap_put(seen, f, f);
		} else {
			for (size_t j = 0; j < k && !dup; j++)
				dup = !strcmp(n->fold_aliases[j], f);
		}
		if (!dup)
			n->fold_aliases[k++] = f;
	}
	n->fold_aliases[k] = NULL;
	n->nfold_aliases = k;
	hmap_free(seen);
}

static void pack_list(struct pack *p, char **to, char *const *from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		to[i] = pack_str(p, from[i]);
}

/* The loose note l in one block (l is freed). */
static struct note *pack(struct note *l)
{
	size_t nk = strv_len(l->fm_keys);
	size_t strs = slen(l->path) + slen(l->name) + slen(l->fold_path) +
		      slen(l->fold_name);
	for (size_t i = 0; i < l->ntags; i++)
		strs += slen(l->tags[i]) + slen(l->fold_tags[i]);
	for (size_t i = 0; i < l->naliases; i++)
		strs += slen(l->aliases[i]) + slen(l->alias_folds[i]);
	for (size_t i = 0; i < nk; i++)
		strs += slen(l->fm_keys[i]);
	for (size_t i = 0; i < l->nlinks; i++)
		strs += slen(l->links[i].target) + slen(l->links[i].subpath) +
			slen(l->links[i].alias) + slen(l->links[i].key);
	struct pack p;
	struct note *n = note_pack_alloc(l->nlinks, l->ntags, l->naliases, nk,
					 l->props_len, l->tasks_len, strs, &p);
	const unsigned char *props = n->props, *tasks = n->tasks;
	struct link *links = n->links;
	char **lists[6] = {n->tags,	   n->fold_tags,    n->aliases,
			   n->alias_folds, n->fold_aliases, n->fm_keys};
	*n = *l;
	n->incoming = (struct ptrvec){0};
	n->links = links;
	n->path = pack_str(&p, l->path);
	n->name = pack_str(&p, l->name);
	n->fold_path = pack_str(&p, l->fold_path);
	n->fold_name = pack_str(&p, l->fold_name);
	n->tags = lists[0];
	n->fold_tags = lists[1];
	n->aliases = lists[2];
	n->alias_folds = lists[3];
	n->fold_aliases = lists[4];
	n->fm_keys = lists[5];
	pack_list(&p, n->tags, l->tags, l->ntags);
	pack_list(&p, n->fold_tags, l->fold_tags, l->ntags);
	pack_list(&p, n->aliases, l->aliases, l->naliases);
	pack_list(&p, n->alias_folds, l->alias_folds, l->naliases);
	pack_list(&p, n->fm_keys, l->fm_keys, nk);
	n->props = props;
	if (l->props_len)
		memcpy((unsigned char *)props, l->props, l->props_len);
	n->tasks = tasks;
	if (l->tasks_len)
		memcpy((unsigned char *)tasks, l->tasks, l->tasks_len);
	note_distinct_folds(n);
	for (size_t i = 0; i < l->nlinks; i++) {
		const struct link *a = &l->links[i];
		struct link *b = &n->links[i];
		*b = *a;
		b->src = n;
		b->target = pack_str(&p, a->target);
		b->subpath = pack_str(&p, a->subpath);
		b->alias = pack_str(&p, a->alias);
		b->key = pack_str(&p, a->key);
	}
	loose_free(l);
	return n;
}

/*
 * A note is built "loose" (each string allocated on its own) and then
 * packed: the note, its links, its string arrays and every string in one
 * allocation (pack()). 100,000 notes hold millions of strings; one block
 * each saves the allocator's overhead per string and makes loading and
 * freeing them cheap.
 */

/* A loose note with its path and names, nothing else yet. */
static struct note *loose_alloc(const char *path)
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
	return n;
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
	struct note *n = loose_alloc(path);
	n->read_flags = flags;
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
		size_t plen;
		n->props = props_encode(fm.data, &plen);
		n->props_len = (uint32_t)plen;
		read_list(fm.data, TAG_KEYS, ARRAY_SIZE(TAG_KEYS), flags, true,
			  &tags);
		read_list(fm.data, ALIAS_KEYS, ARRAY_SIZE(ALIAS_KEYS), flags,
			  false, &aliases);

		struct md_doc d;
		md_scan(text, len, &d);
		n->tasks = tasks_scan(text, len, &d, &n->tasks_len);
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
	n->tags = uniq_finish(&tags, &n->fold_tags, &n->ntags);
	n->aliases = uniq_finish(&aliases, &n->alias_folds, &n->naliases);
	pv_push(&keys, NULL);
	n->fm_keys = (char **)keys.v;
	return pack(n);
}

void note_set_stat(struct note *n, const struct stat *st, int64_t btime,
		   const char *text, size_t len)
{
	n->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL +
		      st->st_mtim.tv_nsec;
	n->size = st->st_size;
	n->ino = st->st_ino;
	n->btime = btime ? btime : st->st_mtim.tv_sec;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	n->racy = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec <
		  note_racy_until(n);
	n->text_hash = n->racy && text ? note_text_hash(text, len) : 0;
}

int64_t note_racy_until(const struct note *n)
{
	bool whole_seconds = n->mtime_ns % 1000000000LL == 0;
	return n->mtime_ns + (whole_seconds ? 2000000000LL : 20000000LL);
}

static bool same_stat(const struct note *n, const struct stat *st)
{
	return n->mtime_ns == (int64_t)st->st_mtim.tv_sec * 1000000000LL +
				      st->st_mtim.tv_nsec &&
	       n->size == st->st_size && n->ino == st->st_ino;
}

bool note_same_file(const struct note *n, const struct stat *st)
{
	return !n->racy && same_stat(n, st);
}

uint32_t note_text_hash(const char *text, size_t len)
{
	return (uint32_t)crc32_z(0, (const Bytef *)text, len);
}

bool note_made_from(const struct note *n, const struct stat *st,
		    uint32_t text_hash)
{
	return same_stat(n, st) && (!n->racy || n->text_hash == text_hash);
}

struct note *note_free(struct note *n)
{
	if (!n)
		return NULL;
	pv_free(&n->incoming);
	free(n); /* the block */
	return NULL;
}
