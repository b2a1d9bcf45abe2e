/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A note's stored form (the on-disk index's blob): note_to_blob() writes
 * what parsing found, note_from_blob() reads it back into one block
 * without parsing the text again, refusing a damaged blob; note_copy().
 */
#include "note_int.h"
#include "props.h"
#include "tasks.h"
#include "util.h"
#include "varint.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/* ---- blobs ------------------------------------------------------------------
 */

/*
 * Version 2 keeps the folded forms of what is not ASCII (the path, tags,
 * aliases and link keys), so that a restart does no Unicode folding; an
 * ASCII string's folded form is itself in lower case. Version 5 heads
 * the blob with the room the decoded note takes (struct layout), so a
 * restart decodes each note in one pass. Version 6 writes every number
 * as a varint (7 bits a byte, low first) and a string's length plus 2,
 * 0 standing for none and 1 for a folded form that is the string itself:
 * a link took 17 bytes besides its target, it takes 5 (the blobs were
 * 40 % of the notes table at 10,000 notes).
 */
#define BLOB_VERSION 6

/* Version and flags, then varints: the frontmatter's error line and the
 * layout's seven counts. */
#define BLOB_FIXED 2
/* Items in a blob take a byte at least; a link five. */
#define LINK_MIN 5

/* A varint's encoded length codes. */
#define LEN_NONE 0
#define LEN_SAME 1
#define LEN_BIAS 2

static void blob_layout(const char *path, const unsigned char *body, size_t len,
			uint32_t ret[7]);

static void put_u32(struct sbuf *b, uint32_t v)
{
	unsigned char buf[VARINT_MAX];
	sb_add(b, (const char *)buf, varint_put(buf, v));
}

static void put_strn(struct sbuf *b, const char *s, size_t n)
{
	put_u32(b, (uint32_t)n + LEN_BIAS);
	sb_add(b, s, n);
}

static void put_str(struct sbuf *b, const char *s)
{
	if (!s)
		put_u32(b, LEN_NONE);
	else
		put_strn(b, s, strlen(s));
}

static bool is_ascii(const char *s, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		if (w & 0x8080808080808080ull)
			return false;
	}
	for (; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}

/* The folded form of the n bytes at s, when they are not ASCII. */
static void put_fold(struct sbuf *b, const char *s, size_t n, const char *fold)
{
	if (is_ascii(s, n))
		return;
	/* The string itself (text without case: CJK, lower-case words). */
	if (strlen(fold) == n && !memcmp(fold, s, n))
		put_u32(b, LEN_SAME);
	else
		put_str(b, fold);
}

/* A string and its folded form. */
static void put_folded(struct sbuf *b, const char *s, const char *fold)
{
	put_str(b, s);
	put_fold(b, s, strlen(s), fold);
}

/* The basename a link key is made of (link_key()). */
static void key_source(const char *target, const char **ret, size_t *ret_n)
{
	const char *b = strrchr(target, '/');
	b = b ? b + 1 : target;
	size_t n = strlen(b);
	if (n > 3 && str_has_suffix_ci(b, ".md"))
		n -= 3;
	*ret = b;
	*ret_n = n;
}

/* What follows the head: the path's fold, tags, aliases, frontmatter
 * keys, links, frontmatter values and tasks. */
static void put_body(struct sbuf *b, const struct note *n)
{
	put_fold(b, n->path, strlen(n->path), n->fold_path);
	put_u32(b, (uint32_t)n->ntags);
	for (size_t i = 0; i < n->ntags; i++)
		put_folded(b, n->tags[i], n->fold_tags[i]);
	put_u32(b, (uint32_t)n->naliases);
	for (size_t i = 0; i < n->naliases; i++)
		put_folded(b, n->aliases[i], n->alias_folds[i]);
	size_t nk = strv_len(n->fm_keys);
	put_u32(b, (uint32_t)nk);
	for (size_t i = 0; i < nk; i++)
		put_str(b, n->fm_keys[i]);
	put_u32(b, (uint32_t)n->nlinks);
	for (size_t i = 0; i < n->nlinks; i++) {
		const struct link *l = &n->links[i];
		sb_putc(b, (char)l->kind);
		put_u32(b, (uint32_t)l->line);
		put_str(b, l->target);
		put_str(b, l->subpath);
		put_str(b, l->alias);
		const char *ks;
		size_t kn;
		key_source(l->target, &ks, &kn);
		if (l->key)
			put_fold(b, ks, kn, l->key);
	}
	put_strn(b, (const char *)n->props, n->props_len);
	put_strn(b, (const char *)n->tasks, n->tasks_len);
}

void *note_to_blob(const struct note *n, size_t *ret_len)
{
	_cleanup_sb_ struct sbuf body = {0};
	put_body(&body, n);
	uint32_t lo[7];
	blob_layout(n->path, (const unsigned char *)body.s, body.len, lo);
	struct sbuf b = {0};
	sb_grow(&b, BLOB_FIXED + 8 * 5 + body.len);
	sb_putc(&b, BLOB_VERSION);
	sb_putc(&b,
		(char)((n->fm_invalid ? 1 : 0) | (n->too_big ? 2 : 0) |
		       (n->fm_unread ? 4 : 0) |
		       ((n->read_flags & NOTE_READ_LEGACY_PROPERTIES) ? 8
								      : 0)));
	put_u32(&b, (uint32_t)n->fm_err_line);
	for (int i = 0; i < 7; i++)
		put_u32(&b, lo[i]);
	sb_add(&b, body.s, body.len);
	*ret_len = b.len;
	return sb_steal(&b);
}

struct reader {
	const unsigned char *p, *end;
	bool bad;
};

/* The n bytes at s end in ".md", in any case (the decoder's hot path:
 * no call per link). */
static bool ends_md(const char *s, size_t n)
{
	return n >= 3 && s[n - 3] == '.' && (s[n - 2] | 0x20) == 'm' &&
	       (s[n - 1] | 0x20) == 'd';
}

static uint32_t get_u32(struct reader *r)
{
	uint32_t v;
	if (varint_get(&r->p, r->end, &v))
		return v;
	r->bad = true;
	return 0;
}

/* A count of items of at least a byte each. */
static uint32_t get_count(struct reader *r)
{
	uint32_t n = get_u32(r);
	if (!r->bad && n > (uint32_t)(r->end - r->p))
		r->bad = true;
	return r->bad ? 0 : n;
}

struct span {
	const char *s; /* NULL: none */
	size_t n;
};

static struct span get_span(struct reader *r, bool nullable)
{
	struct span sp = {NULL, 0};
	uint32_t n = get_u32(r);
	if (r->bad)
		return sp;
	if (n < LEN_BIAS) {
		if (!nullable || n != LEN_NONE)
			r->bad = true;
		return sp;
	}
	n -= LEN_BIAS;
	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		return sp;
	}
	sp.s = (const char *)r->p;
	sp.n = n;
	r->p += n;
	return sp;
}

/* The folded form of src (not ASCII): stored, or src itself. */
static struct span get_fold(struct reader *r, struct span src)
{
	if (r->p < r->end && *r->p == LEN_SAME) {
		r->p++;
		return src;
	}
	return get_span(r, false);
}

/*
 * What the note's block needs: counted from the blob (n NULL) when it is
 * written, stored at its head, and checked while it is read back into a
 * block of that size (a damaged blob is dropped, never overrun).
 */
struct layout {
	size_t ntags, naliases, nkeys, nlinks, nprops, ntasks, strs;
};

/* A packed span valid() accepts (the frontmatter values, props.h; the
 * task list items, tasks.h): the layout pass counts its size (*count),
 * the filling pass checks it is that size and copies it to dst. */
static void read_checked(struct reader *r,
			 bool (*valid)(const unsigned char *, size_t),
			 struct pack *p, size_t *count, unsigned char *dst)
{
	struct span sp = get_span(r, false);
	if (r->bad)
		return;
	if (!valid((const unsigned char *)sp.s, sp.n) || (p && sp.n != *count))
		r->bad = true;
	if (!p)
		*count = sp.n;
	if (!p || r->bad)
		return;
	if (sp.n)
		memcpy(dst, sp.s, sp.n);
}

/* A string, then its folded form (its lower case when ASCII). */
static void read_folded(struct reader *r, struct pack *p, char **ret,
			char **ret_fold, struct layout *lo)
{
	struct span a = get_span(r, false);
	bool ascii = a.s && is_ascii(a.s, a.n);
	struct span f = ascii ? a : get_fold(r, a);
	if (r->bad)
		return;
	if (!p) {
		lo->strs += a.n + 1 + f.n + 1;
		return;
	}
	*ret = note_pack_strn(p, a.s, a.n);
	*ret_fold = ascii ? note_pack_lower(p, a.s, a.n)
			  : note_pack_strn(p, f.s, f.n);
}

/* The links: kind, line, target, subpath, alias, and the key's folded
 * form when it is not ASCII. */
static void read_links(struct reader *r, struct note *n, struct pack *p,
		       struct layout *lo)
{
	uint32_t nl = get_u32(r);
	if (r->bad || nl > (uint32_t)(r->end - r->p) / LINK_MIN ||
	    (p && nl != lo->nlinks)) {
		r->bad = true;
		return;
	}
	if (!p)
		lo->nlinks = nl;
	else
		n->nlinks = nl;
	for (uint32_t i = 0; i < nl && !r->bad; i++) {
		if (r->p >= r->end) {
			r->bad = true;
			break;
		}
		uint8_t kind = *r->p++;
		int line = (int)get_u32(r);
		struct span t = get_span(r, false);
		struct span sub = get_span(r, true);
		struct span al = get_span(r, true);
		if (r->bad)
			break;
		/* The key: the target's basename without ".md", folded. */
		struct span k = {NULL, 0};
		bool kascii = true;
		if (t.n) {
			const char *kb = memrchr(t.s, '/', t.n);
			kb = kb ? kb + 1 : t.s;
			k.s = kb;
			k.n = t.n - (size_t)(kb - t.s);
			if (k.n > 3 && ends_md(kb, k.n))
				k.n -= 3;
			kascii = is_ascii(k.s, k.n);
			if (!kascii)
				k = get_fold(r, k);
			if (r->bad)
				break;
		}
		if (!p) {
			lo->strs += t.n + 1 + (sub.s ? sub.n + 1 : 0) +
				    (al.s ? al.n + 1 : 0) + (k.s ? k.n + 1 : 0);
			continue;
		}
		struct link *l = &n->links[i];
		l->src = n;
		l->kind = kind;
		l->line = line;
		l->target = note_pack_strn(p, t.s, t.n);
		l->subpath = sub.s ? note_pack_strn(p, sub.s, sub.n) : NULL;
		l->alias = al.s ? note_pack_strn(p, al.s, al.n) : NULL;
		l->key = !k.s	  ? NULL
			 : kascii ? note_pack_lower(p, k.s, k.n)
				  : note_pack_strn(p, k.s, k.n);
	}
}

/* A count: recorded in *field when counting (p NULL), else checked
 * against it (0 and r->bad when it differs). */
static uint32_t layout_count(struct reader *r, const struct pack *p,
			     size_t *field)
{
	uint32_t n = get_count(r);
	if (!p)
		*field = n;
	else if (n != *field)
		r->bad = true;
	return r->bad ? 0 : n;
}

static void read_blob(struct reader *r, const char *path, struct note *n,
		      struct pack *p, struct layout *lo)
{
	size_t pl = strlen(path);
	struct span fp = {path, pl};
	bool ascii = is_ascii(path, pl);
	if (!ascii)
		fp = get_fold(r, fp);
	/* The name and the folded name: the basenames without ".md". */
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t bn = strlen(b);
	size_t nn = bn > 3 && ends_md(b, bn) ? bn - 3 : bn;
	const char *fb = fp.s ? memrchr(fp.s, '/', fp.n) : NULL;
	fb = fb ? fb + 1 : fp.s;
	size_t fbn = fp.s ? fp.n - (size_t)(fb - fp.s) : 0;
	size_t fnn = fbn > 3 && !memcmp(fb + fbn - 3, ".md", 3) ? fbn - 3 : fbn;
	uint32_t nt = layout_count(r, p, &lo->ntags);
	if (r->bad)
		return;
	if (!p) {
		lo->strs += pl + 1 + nn + 1 + fp.n + 1 + fnn + 1;
	} else {
		n->path = note_pack_strn(p, path, pl);
		n->name = note_pack_strn(p, b, nn);
		n->fold_path = ascii ? note_pack_lower(p, path, pl)
				     : note_pack_strn(p, fp.s, fp.n);
		n->fold_name =
			note_pack_strn(p, n->fold_path + (fb - fp.s), fnn);
		const char *slash = strrchr(path, '/');
		n->dirlen = slash ? (size_t)(slash - path) : 0;
		/* From fp: the fold is not terminated if p ran out. */
		n->fold_dirlen = fb > fp.s ? (size_t)(fb - 1 - fp.s) : 0;
		n->ntags = nt;
	}
	for (uint32_t i = 0; i < nt && !r->bad; i++)
		read_folded(r, p, p ? &n->tags[i] : NULL,
			    p ? &n->fold_tags[i] : NULL, lo);
	uint32_t na = layout_count(r, p, &lo->naliases);
	if (p)
		n->naliases = na;
	for (uint32_t i = 0; i < na && !r->bad; i++)
		read_folded(r, p, p ? &n->aliases[i] : NULL,
			    p ? &n->alias_folds[i] : NULL, lo);
	uint32_t nk = layout_count(r, p, &lo->nkeys);
	for (uint32_t i = 0; i < nk && !r->bad; i++) {
		struct span k = get_span(r, false);
		if (r->bad)
			break;
		if (!p)
			lo->strs += k.n + 1;
		else
			n->fm_keys[i] = note_pack_strn(p, k.s, k.n);
	}
	read_links(r, n, p, lo);
	if (!r->bad)
		read_checked(r, props_valid, p, &lo->nprops,
			     p ? (unsigned char *)n->props : NULL);
	if (!r->bad)
		read_checked(r, tasks_valid, p, &lo->ntasks,
			     p ? (unsigned char *)n->tasks : NULL);
}

static void blob_layout(const char *path, const unsigned char *body, size_t len,
			uint32_t ret[7])
{
	struct layout lo = {0};
	struct reader r = {body, body + len, false};
	read_blob(&r, path, NULL, NULL, &lo);
	size_t v[7] = {lo.ntags,  lo.naliases, lo.nkeys, lo.nlinks,
		       lo.nprops, lo.ntasks,   lo.strs};
	for (int i = 0; i < 7; i++)
		ret[i] = r.bad || v[i] > UINT32_MAX ? UINT32_MAX
						    : (uint32_t)v[i];
}

/* The frontmatter's error line and the layout at a blob's head (r past
 * its fixed bytes, left at the body), within what the body can hold (the
 * strings: each byte at most twice, and the four forms of the path). */
static bool blob_head(struct reader *r, size_t pl, uint32_t *ret_err_line,
		      struct layout *lo)
{
	*ret_err_line = get_u32(r);
	uint32_t h[7];
	for (int i = 0; i < 7; i++)
		h[i] = get_u32(r);
	if (r->bad)
		return false;
	size_t body = (size_t)(r->end - r->p);
	*lo = (struct layout){.ntags = h[0],
			      .naliases = h[1],
			      .nkeys = h[2],
			      .nlinks = h[3],
			      .nprops = h[4],
			      .ntasks = h[5],
			      .strs = h[6]};
	return lo->ntags <= body && lo->naliases <= body && lo->nkeys <= body &&
	       lo->nlinks <= body / LINK_MIN && lo->nprops <= body &&
	       lo->ntasks <= body && lo->strs <= 3 * body + 4 * (pl + 1);
}

struct note *note_from_blob(const char *path, const void *blob, size_t len)
{
	const unsigned char *b = blob;
	if (len < BLOB_FIXED || b[0] != BLOB_VERSION)
		return NULL;
	unsigned flags = b[1];
	struct reader r = {b + BLOB_FIXED, b + len, false};
	uint32_t err_line;
	struct layout lo;
	if (!blob_head(&r, strlen(path), &err_line, &lo))
		return NULL;
	struct pack p;
	struct note *n =
		note_pack_alloc(lo.nlinks, lo.ntags, lo.naliases, lo.nkeys,
				lo.nprops, lo.ntasks, lo.strs, &p);
	read_blob(&r, path, n, &p, &lo);
	/* All of it read, into exactly the room it said it takes. */
	if (r.bad || r.p != r.end || p.over || p.s != p.end) {
		free(n);
		return NULL;
	}
	n->fm_invalid = flags & 1;
	n->fm_unread = flags & 4;
	n->too_big = (flags & 2) != 0;
	n->fm_err_line = (int)err_line;
	n->read_flags = (flags & 8) ? NOTE_READ_LEGACY_PROPERTIES : 0;
	note_distinct_folds(n);
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
	c->racy = n->racy;
	c->text_hash = n->text_hash;
	return c;
}
