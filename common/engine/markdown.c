/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading a note's markdown (see markdown.h): where its frontmatter and
 * body are, its headings, wikilinks and markdown links, embeds and tags
 * (md_scan, outside what md_code_mask() marks as code), and sections by
 * heading.
 */
#include "markdown_int.h"
#include "u8.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

bool md_split_frontmatter(const char *text, size_t len, size_t *ret_fm_start,
			  size_t *ret_fm_end, size_t *ret_body_off)
{
	size_t start;
	if (len >= 4 && memcmp(text, "---\n", 4) == 0)
		start = 4;
	else if (len >= 5 && memcmp(text, "---\r\n", 5) == 0)
		start = 5;
	else
		return false;

	/* The closing line is exactly "---" (trailing blanks tolerated). */
	size_t i = start;
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t eol = nl ? (size_t)(nl - text) : len;
		size_t e = eol;
		while (e > i && (text[e - 1] == '\r' || text[e - 1] == ' ' ||
				 text[e - 1] == '\t'))
			e--;
		if (e - i == 3 && memcmp(text + i, "---", 3) == 0) {
			*ret_fm_start = start;
			*ret_fm_end = i;
			*ret_body_off = nl ? eol + 1 : len;
			return true;
		}
		if (!nl)
			break;
		i = eol + 1;
	}
	return false;
}

size_t mdi_line_end(const char *text, size_t len, size_t i)
{
	const char *nl = memchr(text + i, '\n', len - i);
	return nl ? (size_t)(nl - text) : len;
}

/* ---- wikilinks ------------------------------------------------------------
 */

/*
 * The wikilink at text[i] == text[i + 1] == '[' on a line that ends at e:
 * its end, or 0 when there is none. It runs to the first "]]"; an inner
 * "[[" starts the real link instead. Both the code mask and the scanner
 * use this one shape, so they always agree on where a link is.
 */
size_t mdi_wikilink_at(const char *text, size_t e, size_t i,
		       struct wl_parts *ret)
{
	size_t close = 0;
	for (size_t j = i + 2; j + 1 < e; j++) {
		if (text[j] == '[' && text[j + 1] == '[')
			return 0;
		if (text[j] == ']' && text[j + 1] == ']') {
			close = j;
			break;
		}
	}
	if (!close || close == i + 2)
		return 0;
	struct wl_parts p = {.a = i + 2, .bar = close, .close = close};
	const char *bar = memchr(text + p.a, '|', close - p.a);
	if (bar)
		p.bar = (size_t)(bar - text);
	p.tend = p.bar;
	if (p.bar < close && p.bar > p.a && text[p.bar - 1] == '\\')
		p.tend = p.bar - 1; /* "\|" inside tables */
	const char *hash = memchr(text + p.a, '#', p.tend - p.a);
	p.hash = hash ? (size_t)(hash - text) : p.tend;
	p.ta = p.a;
	p.tb = p.hash;
	while (p.ta < p.tb && isspace((unsigned char)text[p.ta]))
		p.ta++;
	while (p.tb > p.ta && isspace((unsigned char)text[p.tb - 1]))
		p.tb--;
	if (p.ta == p.tb && p.hash == p.tend)
		return 0; /* neither a note nor a heading: [[|x]], [[ ]] */
	*ret = p;
	return close + 2;
}

/* Bytes that may start something md_scan() looks at. */
static const struct mdi_special SCAN_SPECIAL = {
	.tab = {['\n'] = true, ['['] = true, ['!'] = true, ['#'] = true},
	.set = {MDI_V16('\n'), MDI_V16('['), MDI_V16('!'), MDI_V16('#')},
	.n = 4,
};

/* The first byte at or after i that the table marks (len: none). Most of
 * a note is plain text: 16 bytes are compared with the listed bytes at
 * once where SSE2 is there (every x86-64). */
size_t mdi_skip_plain(const struct mdi_special *sp, const char *text,
		      size_t len, size_t i)
{
#ifdef __SSE2__
	while (i + 16 <= len) {
		mdi_v16 b;
		memcpy(&b, text + i, 16);
		mdi_v16 hit = b == sp->set[0];
		for (unsigned k = 1; k < sp->n; k++)
			hit |= b == sp->set[k];
		unsigned bits = (unsigned)_mm_movemask_epi8((__m128i)hit);
		if (bits)
			return i + (size_t)__builtin_ctz(bits);
		i += 16;
	}
#endif
	while (i < len && !sp->tab[(unsigned char)text[i]])
		i++;
	return i;
}

int md_heading_at(const char *text, size_t len, size_t off, char **ret_text)
{
	size_t e = mdi_line_end(text, len, off), i = off, sp = 0;
	while (i < e && text[i] == ' ' && sp < 3) {
		i++;
		sp++;
	}
	int level = 0;
	while (i < e && text[i] == '#' && level < 7) {
		i++;
		level++;
	}
	if (level < 1 || level > 6)
		return 0;
	if (i < e && text[i] != ' ' && text[i] != '\t' && text[i] != '\r')
		return 0;
	size_t a = i, b = e;
	while (a < b && isspace((unsigned char)text[a]))
		a++;
	while (b > a && isspace((unsigned char)text[b - 1]))
		b--;
	/* Optional closing sequence: " ##". */
	size_t c = b;
	while (c > a && text[c - 1] == '#')
		c--;
	if (c < b && (c == a || text[c - 1] == ' ' || text[c - 1] == '\t')) {
		b = c;
		while (b > a && isspace((unsigned char)text[b - 1]))
			b--;
	}
	if (b == a)
		return 0; /* an empty heading names no section */
	if (ret_text)
		*ret_text = xstrndup(text + a, b - a);
	return level;
}

static void *vec_push(void **arr, size_t *n, size_t *cap, size_t sz)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*arr = xrealloc(*arr, *cap * sz);
	}
	void *p = (char *)*arr + (*n)++ * sz;
	memset(p, 0, sz);
	return p;
}

static char *trimdup(const char *s, size_t a, size_t b)
{
	while (a < b && isspace((unsigned char)s[a]))
		a++;
	while (b > a && isspace((unsigned char)s[b - 1]))
		b--;
	return xstrndup(s + a, b - a);
}

size_t md_parse_wikilink(const char *text, size_t e, size_t i,
			 struct md_link *l)
{
	struct wl_parts p;
	size_t end = mdi_wikilink_at(text, e, i, &p);
	if (!end)
		return 0;
	l->target = xstrndup(text + p.ta, p.tb - p.ta);
	l->tstart = p.ta;
	l->tend = p.tb;
	if (p.hash < p.tend)
		l->subpath = trimdup(text, p.hash + 1, p.tend);
	if (p.bar < p.close)
		l->alias = trimdup(text, p.bar + 1, p.close);
	return end;
}

static bool has_scheme(const char *s, size_t n)
{
	if (n >= 2 && s[0] == '/' && s[1] == '/')
		return true;
	if (!n || !isalpha((unsigned char)s[0]))
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];
		if (c == ':')
			return true;
		if (!isalnum((unsigned char)c) && c != '+' && c != '.' &&
		    c != '-')
			return false;
	}
	return false;
}

/*
 * Matching ']' for every '[' of one line, computed once per line so that
 * a line of a million '[' costs O(n), not O(n^2). Escaped and masked
 * (code) brackets do not count.
 */
struct brackets {
	size_t start, end; /* the line */
	int32_t *match;	   /* offset of the matching ']' or -1, per byte */
	int32_t *stack;
	size_t cap;
};

static void brackets_line(struct brackets *br, const char *text, size_t s,
			  size_t e, const unsigned char *mask)
{
	if (br->match && s == br->start)
		return;
	size_t n = e - s;
	if (n + 1 > br->cap) {
		br->cap = n + 1;
		br->match = xrealloc(br->match, br->cap * sizeof(int32_t));
		br->stack = xrealloc(br->stack, br->cap * sizeof(int32_t));
	}
	br->start = s;
	br->end = e;
	size_t top = 0;
	for (size_t k = 0; k < n; k++) {
		br->match[k] = -1;
		char c = text[s + k];
		if (mask[s + k])
			continue;
		if (c == '\\') {
			if (k + 1 < n)
				br->match[++k] = -1;
			continue;
		}
		if (c == '[')
			br->stack[top++] = (int32_t)k;
		else if (c == ']' && top)
			br->match[br->stack[--top]] = (int32_t)k;
	}
}

/* [text](dest "title") starting at text[i] == '['; returns end or 0. */
static size_t parse_mdlink(const char *text, size_t ls, size_t le, size_t i,
			   const unsigned char *mask, struct brackets *br,
			   struct md_link *l)
{
	brackets_line(br, text, ls, le, mask);
	size_t e = br->end;
	int32_t m = br->match[i - br->start];
	if (m < 0)
		return 0;
	size_t j = br->start + (size_t)m;
	if (j >= e || j + 1 >= e || text[j + 1] != '(')
		return 0;
	size_t close_br = j;
	size_t d = j + 2;
	while (d < e && (text[d] == ' ' || text[d] == '\t'))
		d++;
	/* Destinations and titles longer than this are not links: the
	 * bound keeps a pathological line linear. */
	const size_t max_part = 2048;
	size_t lim = e - d > max_part ? d + max_part : e;
	size_t da, db, end;
	if (d < e && text[d] == '<') {
		da = d + 1;
		db = da;
		while (db < lim && text[db] != '>')
			db++;
		if (db >= lim || text[db] != '>')
			return 0;
		end = db + 1;
	} else {
		da = d;
		db = d;
		int par = 0;
		while (db < lim && text[db] != ' ' && text[db] != '\t') {
			if (text[db] == '(')
				par++;
			else if (text[db] == ')' && par-- == 0)
				break;
			db++;
		}
		if (db >= lim && lim < e)
			return 0;
		end = db;
	}
	/* An optional "title" or 'title' or (title), then ')'. */
	while (end < e && (text[end] == ' ' || text[end] == '\t'))
		end++;
	if (end < e &&
	    (text[end] == '"' || text[end] == '\'' || text[end] == '(')) {
		char q = text[end] == '(' ? ')' : text[end];
		size_t tl = e - end > max_part ? end + max_part : e;
		end++;
		while (end < tl && text[end] != q)
			end++;
		if (end >= tl)
			return 0;
		end++;
		while (end < e && (text[end] == ' ' || text[end] == '\t'))
			end++;
	}
	if (end >= e || text[end] != ')')
		return 0;
	end++; /* past ')' */
	if (db == da || has_scheme(text + da, db - da) || text[da] == '#')
		return end; /* external URL or in-page anchor: not a note link
			     */
	size_t hash = db;
	for (size_t k = da; k < db; k++) {
		if (text[k] == '#') {
			hash = k;
			break;
		}
	}
	l->target = url_decode(text + da, hash - da);
	l->tstart = da;
	l->tend = hash;
	if (hash < db)
		l->subpath = url_decode(text + hash + 1, db - hash - 1);
	if (close_br > i + 1)
		l->alias = xstrndup(text + i + 1, close_br - i - 1);
	return end;
}

static bool is_tag_boundary(const char *text, size_t i, size_t body_off)
{
	if (i == body_off)
		return true;
	char p = text[i - 1];
	return p == ' ' || p == '\t' || p == '\n' || p == '\r';
}

/* #tag at text[i] == '#'; returns the end or 0. */
static size_t parse_tag(const char *text, size_t len, size_t i,
			const unsigned char *mask, char **ret_tag)
{
	size_t j = i + 1;
	bool nondigit = false;
	while (j < len && !mask[j]) {
		int32_t cp;
		int l = u8_decode(text + j, len - j, &cp);
		if (l < 0 || !u8_is_tag_char(cp))
			break;
		if (!u8_is_digit(cp) && cp != '/' && cp != '-' && cp != '_')
			nondigit = true;
		j += (size_t)l;
	}
	size_t e = j;
	while (e > i + 1 && text[e - 1] == '/')
		e--;
	if (e == i + 1 || !nondigit)
		return 0;
	*ret_tag = xstrndup(text + i + 1, e - i - 1);
	return j;
}

/* Where d's frontmatter and body are. */
static void scan_frontmatter(const char *text, size_t len, struct md_doc *d)
{
	size_t fs, fe, bo;
	if (md_split_frontmatter(text, len, &fs, &fe, &bo)) {
		d->has_fm = true;
		d->fm_start = fs;
		d->fm_end = fe;
		d->fm_line = 2;
		d->body_off = bo;
		d->body_line = line_of_offset(text, bo);
	} else {
		d->body_off = 0;
		d->body_line = 1;
	}
}

/* The heading that the line at i (line) may be, added to d. */
static void scan_heading(const char *text, size_t len, size_t i, int line,
			 struct md_doc *d, size_t *hcap)
{
	char *ht = NULL;
	int lv = md_heading_at(text, len, i, &ht);
	if (!lv)
		return;
	struct md_heading *h = vec_push((void **)&d->headings, &d->nheadings,
					hcap, sizeof(*h));
	h->level = lv;
	h->text = ht;
	h->line = line;
	h->start = i;
	size_t e = mdi_line_end(text, len, i);
	h->next_line = e < len ? e + 1 : len;
}

void md_scan(const char *text, size_t len, struct md_doc *d)
{
	memset(d, 0, sizeof(*d));
	scan_frontmatter(text, len, d);
	unsigned char *mask = d->mask = md_code_mask(text, len, d->body_off);
	size_t lcap = 0, hcap = 0, tcap = 0;
	struct brackets br = {0};
	int line = d->body_line;
	bool bol = true;
	size_t i = d->body_off;
	size_t ls = i, le = mdi_line_end(text, len, i); /* the current line */
	while (i < len) {
		if (bol) {
			ls = i;
			le = mdi_line_end(text, len, i);
		}
		if (bol && !mask[i])
			scan_heading(text, len, i, line, d, &hcap);
		if (!bol) {
			i = mdi_skip_plain(&SCAN_SPECIAL, text, len, i);
			if (i >= len)
				break;
		}
		char c = text[i];
		bol = false;
		if (c == '\n') {
			line++;
			bol = true;
			i++;
			continue;
		}
		if (mask[i]) {
			i++;
			continue;
		}
		if (c == '[' ||
		    (c == '!' && i + 1 < len && text[i + 1] == '[')) {
			bool embed = c == '!';
			size_t s = embed ? i + 1 : i;
			struct md_link l = {0};
			size_t end = 0;
			if (s + 1 < len && text[s + 1] == '[') {
				end = md_parse_wikilink(text, le, s, &l);
				l.kind = embed ? LINK_EMBED : LINK_WIKI;
			}
			if (!end && !(s + 1 < len && text[s + 1] == '[')) {
				end = parse_mdlink(text, ls, le, s, mask, &br,
						   &l);
				l.kind = embed ? LINK_MD_EMBED : LINK_MD;
			}
			if (end) {
				if (l.target) {
					l.line = line;
					l.start = i;
					l.end = end;
					struct md_link *p = vec_push(
						(void **)&d->links, &d->nlinks,
						&lcap, sizeof(*p));
					*p = l;
				}
				i = end;
				continue;
			}
			i++;
			continue;
		}
		if (c == '#' && is_tag_boundary(text, i, d->body_off)) {
			char *tag = NULL;
			size_t end = parse_tag(text, len, i, mask, &tag);
			if (end) {
				struct md_tag *t =
					vec_push((void **)&d->tags, &d->ntags,
						 &tcap, sizeof(*t));
				t->tag = tag;
				t->line = line;
				i = end;
				continue;
			}
		}
		i++;
	}
	free(br.match);
	free(br.stack);
}

void md_link_clear(struct md_link *l)
{
	free(l->target);
	free(l->subpath);
	free(l->alias);
	memset(l, 0, sizeof(*l));
}

void md_doc_clear(struct md_doc *d)
{
	for (size_t i = 0; i < d->nlinks; i++)
		md_link_clear(&d->links[i]);
	for (size_t i = 0; i < d->nheadings; i++)
		free(d->headings[i].text);
	for (size_t i = 0; i < d->ntags; i++)
		free(d->tags[i].tag);
	free(d->links);
	free(d->headings);
	free(d->tags);
	free(d->mask);
	memset(d, 0, sizeof(*d));
}

static char *section_key(const char *name)
{
	while (*name == '#')
		name++;
	size_t a = 0, b = strlen(name);
	while (a < b && isspace((unsigned char)name[a]))
		a++;
	while (b > a && isspace((unsigned char)name[b - 1]))
		b--;
	_cleanup_free_ char *t = xstrndup(name + a, b - a);
	return u8_fold(t);
}

int md_find_section(const char *text, size_t len, const char *name,
		    size_t *ret_start, size_t *ret_body, size_t *ret_end)
{
	struct md_doc d;
	md_scan(text, len, &d);
	_cleanup_free_ char *key = section_key(name);
	int r = -ENOENT;
	for (size_t i = 0; key && i < d.nheadings; i++) {
		_cleanup_free_ char *hk = u8_fold(d.headings[i].text);
		if (!hk || strcmp(hk, key) != 0)
			continue;
		size_t end = len;
		for (size_t j = i + 1; j < d.nheadings; j++) {
			if (d.headings[j].level <= d.headings[i].level) {
				end = d.headings[j].start;
				break;
			}
		}
		*ret_start = d.headings[i].start;
		*ret_body = d.headings[i].next_line;
		*ret_end = end;
		r = 0;
		break;
	}
	md_doc_clear(&d);
	return r;
}
