/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The code mask (md_code_mask): which bytes of a note are code (fenced
 * or indented blocks, code spans), math, comments ("<!-- -->", "%% %%")
 * or inside a wikilink, read left to right the way Obsidian's parser
 * does, with the block structure (lists, quotes, paragraphs) that decides
 * whether an indented line is code.
 */
#include "markdown_int.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* A fence line (from i to its end e): optional blanks and '>' then >= 3
 * '`' or '~'. */
static bool fence_open(const char *text, size_t e, size_t i, char *ret_c,
		       size_t *ret_n)
{
	while (i < e && (text[i] == ' ' || text[i] == '\t' || text[i] == '>'))
		i++;
	if (i >= e || (text[i] != '`' && text[i] != '~'))
		return false;
	char c = text[i];
	size_t n = 0;
	while (i + n < e && text[i + n] == c)
		n++;
	if (n < 3)
		return false;
	/* A backtick fence's info string may not contain backticks. */
	if (c == '`' && memchr(text + i + n, '`', e - i - n))
		return false;
	*ret_c = c;
	*ret_n = n;
	return true;
}

static bool fence_close(const char *text, size_t len, size_t i, char c,
			size_t n)
{
	size_t e = mdi_line_end(text, len, i);
	while (i < e && (text[i] == ' ' || text[i] == '\t' || text[i] == '>'))
		i++;
	size_t k = 0;
	while (i + k < e && text[i + k] == c)
		k++;
	if (k < n)
		return false;
	for (i += k; i < e; i++)
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r')
			return false;
	return true;
}

/* End of the paragraph containing i: the first blank line, or len. */
static size_t para_end(const char *text, size_t len, size_t i)
{
	for (;;) {
		size_t e = mdi_line_end(text, len, i);
		if (e >= len)
			return len;
		size_t j = e + 1;
		size_t k = j;
		while (k < len &&
		       (text[k] == ' ' || text[k] == '\t' || text[k] == '\r'))
			k++;
		if (k >= len || text[k] == '\n')
			return e;
		i = j;
	}
}

static const char *find_str(const char *text, size_t len, size_t from,
			    const char *needle)
{
	size_t nl = strlen(needle);
	if (from >= len)
		return NULL;
	return memmem(text + from, len - from, needle, nl);
}

/* The backtick runs of one paragraph, sorted by length then position,
 * so the closer of a run is a binary search away: a paragraph costs
 * O(n log n) however its runs are arranged. */
struct run {
	size_t pos, len;
};

struct runs {
	struct run *v;
	size_t n, cap;
};

static int cmp_run(const void *a, const void *b)
{
	const struct run *x = a, *y = b;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void index_runs(struct runs *r, const char *text, size_t from, size_t to)
{
	r->n = 0;
	for (size_t i = from; i < to;) {
		if (text[i] != '`') {
			i++;
			continue;
		}
		size_t n = 0;
		while (i + n < to && text[i + n] == '`')
			n++;
		if (r->n == r->cap) {
			r->cap = r->cap ? r->cap * 2 : 16;
			r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
		}
		r->v[r->n++] = (struct run){i, n};
		i += n;
	}
	if (r->n > 1)
		qsort(r->v, r->n, sizeof(*r->v), cmp_run);
}

/* Start of the first run of exactly n backticks at or after `after`. */
static bool find_closer(const struct runs *r, size_t after, size_t n,
			size_t *ret)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct run *m = &r->v[mid];
		if (m->len < n || (m->len == n && m->pos < after))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->n && r->v[lo].len == n) {
		*ret = r->v[lo].pos;
		return true;
	}
	return false;
}

/* ---- the code mask --------------------------------------------------------
 */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The column after the blanks from text[i] on, starting at column col (a
 * tab goes on to the next multiple of 4); *ret_p is the first byte that
 * is no blank. */
static size_t skip_blanks(const char *text, size_t i, size_t e, size_t col,
			  size_t *ret_p)
{
	for (; i < e && (text[i] == ' ' || text[i] == '\t'); i++)
		col = text[i] == '\t' ? (col / 4 + 1) * 4 : col + 1;
	*ret_p = i;
	return col;
}

static bool rest_blank(const char *text, size_t i, size_t e)
{
	for (; i < e; i++)
		if (!is_blank(text[i]))
			return false;
	return true;
}

/* "***", "- - -", "___" (a thematic break), or after a paragraph "==="
 * and "---" (a setext heading's underline): lines that end a paragraph. */
static bool break_line(const char *text, size_t p, size_t e, bool para)
{
	char c = text[p];
	if (c != '-' && c != '*' && c != '_' && !(c == '=' && para))
		return false;
	size_t n = 0;
	bool gaps = false;
	for (size_t i = p; i < e; i++) {
		if (text[i] == c)
			n++;
		else if (is_blank(text[i]))
			gaps = true;
		else
			return false;
	}
	if (para && (c == '=' || c == '-') && !gaps)
		return true; /* a setext underline */
	return c != '=' && n >= 3;
}

/*
 * A list item's marker at p ("-", "+", "*", or 1-9 digits and "." or
 * ")", then a blank or the line's end), at column col: the column its
 * content starts at, or 0 when the line is no list item.
 */
static size_t list_item(const char *text, size_t p, size_t e, size_t col)
{
	size_t m = p;
	if (text[m] == '-' || text[m] == '+' || text[m] == '*') {
		m++;
	} else {
		while (m < e && m - p < 9 && isdigit((unsigned char)text[m]))
			m++;
		if (m == p || m >= e || (text[m] != '.' && text[m] != ')'))
			return 0;
		m++;
	}
	size_t mcol = col + (m - p);
	if (m < e && text[m] != ' ' && text[m] != '\t' && text[m] != '\r')
		return 0;
	size_t q, ccol = skip_blanks(text, m, e, mcol, &q);
	/* No content, or content that is itself indented code: the item's
	 * content column is just past the marker and one blank. */
	if (q >= e || rest_blank(text, q, e) || ccol - mcol > 4)
		ccol = mcol + 1;
	return ccol;
}

#define MAX_LISTS 64

/*
 * What the mask needs of the block structure, line by line: an indented
 * line is code only after a line that is no paragraph text (CommonMark:
 * an indented code block cannot interrupt a paragraph, and a line that
 * continues one is lazy continuation), and inside a list item only when
 * it is indented 4 columns past the item's content.
 */
struct blocks {
	bool para;		 /* the line before is paragraph text */
	size_t nlists;		 /* open list items, innermost last */
	size_t lists[MAX_LISTS]; /* the column each one's content starts at */
};

enum line_kind { LINE_TEXT, LINE_BLANK, LINE_CODE };

/* Classify the line at i (ending at e) and update the block state;
 * *ret_p is its first non-blank byte. */
static enum line_kind block_line(struct blocks *b, const char *text, size_t len,
				 size_t i, size_t e, size_t *ret_p)
{
	size_t p, col = skip_blanks(text, i, e, 0, &p);
	*ret_p = p;
	if (rest_blank(text, p, e)) {
		b->para = false;
		return LINE_BLANK;
	}
	/* A line that no paragraph continues closes the list items it is
	 * not indented into. */
	if (!b->para)
		while (b->nlists && b->lists[b->nlists - 1] > col)
			b->nlists--;
	size_t base = b->nlists ? b->lists[b->nlists - 1] : 0;
	if (!b->para && col >= base + 4)
		return LINE_CODE;
	size_t w;
	if (break_line(text, p, e, b->para)) {
		b->para = false;
	} else if ((w = list_item(text, p, e, col))) {
		while (b->nlists && b->lists[b->nlists - 1] > col)
			b->nlists--;
		if (b->nlists == MAX_LISTS)
			b->nlists--;
		b->lists[b->nlists++] = w;
		b->para = true;
	} else {
		b->para =
			!(text[p] == '#' && md_heading_at(text, len, i, NULL));
	}
	return LINE_TEXT;
}

/* The first "$$" in text[from, to) that no backslash escapes, or 0. */
static size_t find_dollars(const char *text, size_t from, size_t to)
{
	for (size_t j = from; j + 1 < to; j++) {
		if (text[j] == '\\')
			j++;
		else if (text[j] == '$' && text[j + 1] == '$')
			return j;
	}
	return 0;
}

/*
 * Inline math at text[i] == '$' (one dollar), in a paragraph ending at
 * pe: the end of the math, or 0. Obsidian's rule (as pandoc's and
 * markdown-it's): the opening '$' is followed by a non-blank, the next
 * unescaped '$' closes, and only when it follows a non-blank and no
 * digit follows it; so "$5 and $6" and "$20,000 and $30,000" are text.
 */
static size_t inline_math(const char *text, size_t len, size_t i, size_t pe)
{
	if (i + 1 >= pe || is_blank(text[i + 1]))
		return 0;
	for (size_t j = i + 1; j < pe; j++) {
		if (text[j] == '\\') {
			j++;
			continue;
		}
		if (text[j] != '$')
			continue;
		if (is_blank(text[j - 1]) ||
		    (j + 1 < len && isdigit((unsigned char)text[j + 1])))
			return 0;
		return j + 1;
	}
	return 0;
}

/* Bytes that may start something md_code_mask() looks at. */
static const struct mdi_special MASK_SPECIAL = {
	.tab = {['\n'] = true,
		['\\'] = true,
		['`'] = true,
		['['] = true,
		['<'] = true,
		['%'] = true,
		['$'] = true},
	.set = {MDI_V16('\n'), MDI_V16('\\'), MDI_V16('`'), MDI_V16('['),
		MDI_V16('<'), MDI_V16('%'), MDI_V16('$')},
	.n = 7,
};

/* The end of the fenced block whose opening line ends at e (the note's
 * end when no fence closes it). */
static size_t fence_end(const char *text, size_t len, size_t e, char fc,
			size_t fn)
{
	size_t j = e;
	while (j < len) {
		j++; /* past '\n' */
		if (fence_close(text, len, j, fc, fn))
			return mdi_line_end(text, len, j);
		j = mdi_line_end(text, len, j);
	}
	return len;
}

/* The end of the code span that the run of n backticks at i opens (0:
 * none). Every run in one paragraph shares its end (*cur_pe, runs
 * indexed in runs); code spans do not cross a blank line. */
static size_t span_end(struct runs *runs, size_t *cur_pe, const char *text,
		       size_t len, size_t i, size_t n)
{
	if (i >= *cur_pe) {
		*cur_pe = para_end(text, len, i);
		index_runs(runs, text, i, *cur_pe);
	}
	size_t close;
	return find_closer(runs, i + n, n, &close) ? close + n : 0;
}

/* The end of the comment ("<!-- -->" or "%% %%") that opens at i (0:
 * none; the note's end when it is not closed). */
static size_t comment_end(const char *text, size_t len, size_t i)
{
	const char *e;
	if (text[i] == '<' && i + 4 <= len &&
	    memcmp(text + i, "<!--", 4) == 0) {
		e = find_str(text, len, i + 4, "-->");
		return e ? (size_t)(e - text) + 3 : len;
	}
	if (text[i] == '%' && i + 1 < len && text[i + 1] == '%') {
		e = find_str(text, len, i + 2, "%%");
		return e ? (size_t)(e - text) + 2 : len;
	}
	return 0;
}

/* The end of the math that the '$' at i opens (0: none, and *ret_next is
 * where to go on). lp: the line's first non-blank byte; pe: the end of
 * the paragraph inline math may span. */
static size_t math_end(const char *text, size_t len, size_t i, size_t lp,
		       size_t pe, size_t *ret_next)
{
	if (i + 1 < len && text[i + 1] == '$') {
		/* "$$" opening a line starts a block that runs to the next
		 * "$$" (the end of the note when there is none); inside a
		 * paragraph it stays in the paragraph. */
		bool block = i == lp;
		size_t close = find_dollars(text, i + 2, block ? len : pe);
		*ret_next = i + 2;
		return close ? close + 2 : block ? len : 0;
	}
	*ret_next = i + 1;
	return inline_math(text, len, i, pe);
}

/*
 * Whichever construct opens first wins, as a left-to-right inline
 * parser reads: `[[X]]` in a code span is code, while `[[X|`code`]]` is
 * a link whose display text holds code, and `$[[X]]$` is math.
 */
unsigned char *md_code_mask(const char *text, size_t len, size_t from)
{
	unsigned char *mask = xcalloc(len + 1, 1);
	size_t cur_pe = 0;    /* end of the paragraph whose runs are indexed */
	size_t math_pe = 0;   /* end of the paragraph inline math may span */
	size_t le = 0;	      /* end of the line of the last wikilink tried */
	size_t lp = SIZE_MAX; /* first non-blank byte of the current line */
	struct runs runs = {0};
	struct blocks blk = {0};
	bool bol = from == 0 || text[from - 1] == '\n';
	size_t i = from;
	while (i < len) {
		if (bol) {
			bol = false;
			size_t e = mdi_line_end(text, len, i);
			enum line_kind k =
				block_line(&blk, text, len, i, e, &lp);
			if (k == LINE_CODE)
				memset(mask + i, 1, e - i);
			if (k != LINE_TEXT) {
				i = e;
				continue;
			}
			char fc;
			size_t fn;
			if (fence_open(text, e, i, &fc, &fn)) {
				size_t end = fence_end(text, len, e, fc, fn);
				memset(mask + i, 1, end - i);
				i = end;
				blk.para = false;
				continue;
			}
		}
		i = mdi_skip_plain(&MASK_SPECIAL, text, len, i);
		if (i >= len)
			break;
		char c = text[i];
		if (c == '\n') {
			bol = true;
			i++;
			continue;
		}
		if (c == '\\' && i + 1 < len && text[i + 1] == '$') {
			i += 2; /* an escaped dollar opens nothing */
			continue;
		}
		if (c == '`') {
			size_t n = 0;
			while (i + n < len && text[i + n] == '`')
				n++;
			size_t end = span_end(&runs, &cur_pe, text, len, i, n);
			if (end)
				memset(mask + i, 1, end - i);
			i = end ? end : i + n;
			continue;
		}
		if (c == '[' && i + 1 < len && text[i + 1] == '[') {
			if (i >= le)
				le = mdi_line_end(text, len, i);
			struct wl_parts wp;
			size_t end = mdi_wikilink_at(text, le, i, &wp);
			/* Nothing inside a link opens code, math or a
			 * comment. */
			i = end ? end : i + 1;
			continue;
		}
		size_t end = comment_end(text, len, i);
		if (end) {
			memset(mask + i, 1, end - i);
			i = end;
			continue;
		}
		if (c == '$') {
			if (i >= math_pe)
				math_pe = para_end(text, len, i);
			size_t next;
			end = math_end(text, len, i, lp, math_pe, &next);
			if (end)
				memset(mask + i, 1, end - i);
			i = end ? end : next;
			continue;
		}
		i++;
	}
	free(runs.v);
	return mask;
}
