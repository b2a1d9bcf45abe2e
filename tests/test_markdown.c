/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for common/engine/markdown.h: frontmatter split, headings,
 * sections, tags, wikilinks, markdown links and the code/comment mask. */
#include "testutil.h"
#include "markdown.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

/* ---- helpers ------------------------------------------------------------ */

static void scan(const char *text, struct md_doc *d)
{
	md_scan(text, strlen(text), d);
}

static bool has_tag(const struct md_doc *d, const char *tag)
{
	for (size_t i = 0; i < d->ntags; i++)
		if (strcmp(d->tags[i].tag, tag) == 0)
			return true;
	return false;
}

static const struct md_link *link_to(const struct md_doc *d, const char *target)
{
	for (size_t i = 0; i < d->nlinks; i++)
		if (strcmp(d->links[i].target, target) == 0)
			return &d->links[i];
	return NULL;
}

/* The raw bytes text[tstart, tend) of a link. */
static char *raw_target(const char *text, const struct md_link *l)
{
	return xstrndup(text + l->tstart, l->tend - l->tstart);
}

static double elapsed_s(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) +
	       (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

/* ---- frontmatter split -------------------------------------------------- */

static void test_fm_split_basic(void)
{
	const char *t = "---\ntitle: x\n---\nbody\n";
	size_t fs = 99, fe = 99, bo = 99;
	CU_ASSERT_TRUE(md_split_frontmatter(t, strlen(t), &fs, &fe, &bo));
	CU_ASSERT_EQUAL(fs, 4);
	CU_ASSERT_EQUAL(fe, 13); /* "title: x\n" is [4, 13) */
	CU_ASSERT_EQUAL(bo, 17);
	ASSERT_STR_EQ(t + bo, "body\n");
}

static void test_fm_split_needs_byte0(void)
{
	size_t fs, fe, bo;
	const char *a = " ---\nx: 1\n---\n";
	const char *b = "\n---\nx: 1\n---\n";
	const char *c = "text\n---\nx: 1\n---\n";
	const char *d = "----\nx: 1\n---\n";
	const char *e = "---x\nx: 1\n---\n";
	CU_ASSERT_FALSE(md_split_frontmatter(a, strlen(a), &fs, &fe, &bo));
	CU_ASSERT_FALSE(md_split_frontmatter(b, strlen(b), &fs, &fe, &bo));
	CU_ASSERT_FALSE(md_split_frontmatter(c, strlen(c), &fs, &fe, &bo));
	CU_ASSERT_FALSE(md_split_frontmatter(d, strlen(d), &fs, &fe, &bo));
	CU_ASSERT_FALSE(md_split_frontmatter(e, strlen(e), &fs, &fe, &bo));
}

static void test_fm_split_closing_line(void)
{
	size_t fs, fe, bo;
	/* "----" and "--- x" are not the closing line; "---" is. */
	const char *t = "---\na: ----\nb: --- x\n--- x\n---\nbody";
	CU_ASSERT_TRUE(md_split_frontmatter(t, strlen(t), &fs, &fe, &bo));
	ASSERT_STR_EQ(t + bo, "body");
	CU_ASSERT_EQUAL(fe, (size_t)(strstr(t, "\n---\nbody") - t) + 1);
	/* Closing line at the very end without a newline. */
	const char *u = "---\na: 1\n---";
	CU_ASSERT_TRUE(md_split_frontmatter(u, strlen(u), &fs, &fe, &bo));
	CU_ASSERT_EQUAL(fe, 9);
	CU_ASSERT_EQUAL(bo, strlen(u));
	/* Empty block. */
	const char *v = "---\n---\nbody";
	CU_ASSERT_TRUE(md_split_frontmatter(v, strlen(v), &fs, &fe, &bo));
	CU_ASSERT_EQUAL(fs, 4);
	CU_ASSERT_EQUAL(fe, 4);
	CU_ASSERT_EQUAL(bo, 8);
}

static void test_fm_split_crlf(void)
{
	const char *t = "---\r\na: 1\r\n---\r\nbody\r\n";
	size_t fs, fe, bo;
	CU_ASSERT_TRUE(md_split_frontmatter(t, strlen(t), &fs, &fe, &bo));
	CU_ASSERT_EQUAL(fs, 5);
	CU_ASSERT_EQUAL(fe, 11);
	ASSERT_STR_EQ(t + bo, "body\r\n");
}

static void test_fm_split_unclosed(void)
{
	size_t fs, fe, bo;
	const char *t = "---\ntitle: x\nbody without closing\n";
	CU_ASSERT_FALSE(md_split_frontmatter(t, strlen(t), &fs, &fe, &bo));
	const char *u = "---\n";
	CU_ASSERT_FALSE(md_split_frontmatter(u, strlen(u), &fs, &fe, &bo));
	CU_ASSERT_FALSE(md_split_frontmatter("", 0, &fs, &fe, &bo));

	/* md_scan of an unclosed block: no frontmatter, body from 0. */
	struct md_doc d;
	scan("---\n#tag\n", &d);
	CU_ASSERT_FALSE(d.has_fm);
	CU_ASSERT_EQUAL(d.body_off, 0);
	CU_ASSERT_TRUE(has_tag(&d, "tag"));
	md_doc_clear(&d);
}

static void test_scan_fm_fields(void)
{
	struct md_doc d;
	const char *t = "---\na: 1\nb: '#notatag [[NotALink]]'\n---\nbody #t\n";
	scan(t, &d);
	CU_ASSERT_TRUE(d.has_fm);
	CU_ASSERT_EQUAL(d.fm_start, 4);
	CU_ASSERT_EQUAL(d.fm_line, 2);
	CU_ASSERT_EQUAL(d.body_line, 5);
	ASSERT_STR_EQ(t + d.body_off, "body #t\n");
	/* Frontmatter text is not scanned as markdown. */
	CU_ASSERT_EQUAL(d.nlinks, 0);
	CU_ASSERT_EQUAL(d.ntags, 1);
	CU_ASSERT_TRUE(has_tag(&d, "t"));
	md_doc_clear(&d);
}

/* ---- headings ----------------------------------------------------------- */

static void test_heading_levels(void)
{
	char buf[32];
	for (int lv = 1; lv <= 6; lv++) {
		memset(buf, '#', (size_t)lv);
		strcpy(buf + lv, " Title");
		char *txt = NULL;
		CU_ASSERT_EQUAL(md_heading_at(buf, strlen(buf), 0, &txt), lv);
		ASSERT_STR_EQ(txt, "Title");
		free(txt);
	}
	const char *s7 = "####### x";
	CU_ASSERT_EQUAL(md_heading_at(s7, strlen(s7), 0, NULL), 0);
}

static void test_heading_not_tag(void)
{
	const char *a = "#tag";
	const char *b = "#";
	const char *c = "##   ";
	CU_ASSERT_EQUAL(md_heading_at(a, strlen(a), 0, NULL), 0);
	CU_ASSERT_EQUAL(md_heading_at(b, strlen(b), 0, NULL), 0);
	CU_ASSERT_EQUAL(md_heading_at(c, strlen(c), 0, NULL), 0);

	struct md_doc d;
	scan("#tag line\n# Real\n", &d);
	CU_ASSERT_EQUAL(d.nheadings, 1);
	if (d.nheadings == 1) {
		ASSERT_STR_EQ(d.headings[0].text, "Real");
		CU_ASSERT_EQUAL(d.headings[0].line, 2);
	}
	CU_ASSERT_TRUE(has_tag(&d, "tag"));
	md_doc_clear(&d);
}

static void test_heading_closing_hashes(void)
{
	char *txt = NULL;
	const char *a = "## Title ##";
	CU_ASSERT_EQUAL(md_heading_at(a, strlen(a), 0, &txt), 2);
	ASSERT_STR_EQ(txt, "Title");
	free(txt);
	txt = NULL;
	const char *b = "## Title #####   ";
	CU_ASSERT_EQUAL(md_heading_at(b, strlen(b), 0, &txt), 2);
	ASSERT_STR_EQ(txt, "Title");
	free(txt);
	txt = NULL;
	/* Not a closing sequence: no blank before it. */
	const char *c = "## C#";
	CU_ASSERT_EQUAL(md_heading_at(c, strlen(c), 0, &txt), 2);
	ASSERT_STR_EQ(txt, "C#");
	free(txt);
	txt = NULL;
	const char *e = "# Title\r\n";
	CU_ASSERT_EQUAL(md_heading_at(e, strlen(e), 0, &txt), 1);
	ASSERT_STR_EQ(txt, "Title");
	free(txt);
}

static void test_heading_indent(void)
{
	char *txt = NULL;
	const char *a = "   ### Three";
	CU_ASSERT_EQUAL(md_heading_at(a, strlen(a), 0, &txt), 3);
	ASSERT_STR_EQ(txt, "Three");
	free(txt);
	const char *b = "    # Four spaces is code";
	CU_ASSERT_EQUAL(md_heading_at(b, strlen(b), 0, NULL), 0);
	/* md_heading_at at a later offset. */
	const char *c = "text\n## Second\n";
	txt = NULL;
	CU_ASSERT_EQUAL(md_heading_at(c, strlen(c), 5, &txt), 2);
	ASSERT_STR_EQ(txt, "Second");
	free(txt);
}

static void test_heading_in_fences(void)
{
	struct md_doc d;
	scan("```\n# In backticks\n```\n~~~\n## In tildes\n~~~\n"
	     "````md\n```\n# still inside\n````\n### Real\n",
	     &d);
	CU_ASSERT_EQUAL(d.nheadings, 1);
	if (d.nheadings == 1) {
		ASSERT_STR_EQ(d.headings[0].text, "Real");
		CU_ASSERT_EQUAL(d.headings[0].level, 3);
		CU_ASSERT_EQUAL(d.headings[0].line, 11);
	}
	md_doc_clear(&d);
}

static void test_heading_offsets(void)
{
	struct md_doc d;
	const char *t = "---\na: 1\n---\nintro\n## H2\ntext\n";
	scan(t, &d);
	CU_ASSERT_EQUAL(d.nheadings, 1);
	if (d.nheadings == 1) {
		CU_ASSERT_EQUAL(d.headings[0].line, 5);
		CU_ASSERT_EQUAL(d.headings[0].start,
				(size_t)(strstr(t, "## H2") - t));
		ASSERT_STR_EQ(t + d.headings[0].next_line, "text\n");
	}
	md_doc_clear(&d);
}

/* The scanners skip plain text 16 bytes at a time: what follows it is
 * found wherever it falls, up to the text's last byte. */
static void test_special_at_every_offset(void)
{
	for (size_t k = 0; k < 40; k++) {
		char t[160];
		memset(t, 'a', k);
		snprintf(
			t + k, sizeof(t) - k,
			" [[Target]] `[[Code]]` \\$ <b> x\n#tag abcdefghijklmnopq");
		struct md_doc d;
		scan(t, &d);
		CU_ASSERT_EQUAL(d.nlinks, 1);
		CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Target"));
		CU_ASSERT_PTR_NULL(link_to(&d, "Code"));
		CU_ASSERT_TRUE(has_tag(&d, "tag"));
		md_doc_clear(&d);
		/* A link ending on the text's last byte. */
		memset(t, 'b', k);
		snprintf(t + k, sizeof(t) - k, "\n\n#last [[End]]");
		scan(t, &d);
		CU_ASSERT_PTR_NOT_NULL(link_to(&d, "End"));
		CU_ASSERT_TRUE(has_tag(&d, "last"));
		if (d.nlinks == 1)
			CU_ASSERT_EQUAL(d.links[0].line, 3);
		md_doc_clear(&d);
	}
}

/* ---- sections ----------------------------------------------------------- */

static const char SECT[] = "# Top\n"
			   "intro\n"
			   "## Details\n"
			   "d1\n"
			   "### Sub\n"
			   "s1\n"
			   "#### Deeper\n"
			   "x\n"
			   "## Other\n"
			   "o1\n";

static void test_section_basic(void)
{
	size_t s, b, e;
	CU_ASSERT_EQUAL(
		md_find_section(SECT, strlen(SECT), "Details", &s, &b, &e), 0);
	CU_ASSERT_EQUAL(s, (size_t)(strstr(SECT, "## Details") - SECT));
	CU_ASSERT_EQUAL(b, (size_t)(strstr(SECT, "d1") - SECT));
	CU_ASSERT_EQUAL(e, (size_t)(strstr(SECT, "## Other") - SECT));
}

static void test_section_nested_included(void)
{
	size_t s, b, e;
	CU_ASSERT_EQUAL(md_find_section(SECT, strlen(SECT), "Sub", &s, &b, &e),
			0);
	CU_ASSERT_EQUAL(s, (size_t)(strstr(SECT, "### Sub") - SECT));
	/* "#### Deeper" is inside, "## Other" ends it. */
	CU_ASSERT_EQUAL(e, (size_t)(strstr(SECT, "## Other") - SECT));
	/* The top section runs to the end of the document. */
	CU_ASSERT_EQUAL(md_find_section(SECT, strlen(SECT), "Top", &s, &b, &e),
			0);
	CU_ASSERT_EQUAL(s, 0);
	CU_ASSERT_EQUAL(e, strlen(SECT));
	/* Last section runs to the end. */
	CU_ASSERT_EQUAL(
		md_find_section(SECT, strlen(SECT), "Other", &s, &b, &e), 0);
	CU_ASSERT_EQUAL(e, strlen(SECT));
}

static void test_section_same_level_ends(void)
{
	const char *t = "## A\na\n## B\nb\n# C\nc\n";
	size_t s, b, e;
	CU_ASSERT_EQUAL(md_find_section(t, strlen(t), "B", &s, &b, &e), 0);
	CU_ASSERT_EQUAL(s, (size_t)(strstr(t, "## B") - t));
	/* A higher-level heading ends it too. */
	CU_ASSERT_EQUAL(e, (size_t)(strstr(t, "# C") - t));
}

static void test_section_case_and_hashes(void)
{
	size_t s, b, e, s2, b2, e2;
	CU_ASSERT_EQUAL(
		md_find_section(SECT, strlen(SECT), "Details", &s, &b, &e), 0);
	CU_ASSERT_EQUAL(
		md_find_section(SECT, strlen(SECT), "dEtAiLs", &s2, &b2, &e2),
		0);
	CU_ASSERT_EQUAL(s, s2);
	CU_ASSERT_EQUAL(e, e2);
	CU_ASSERT_EQUAL(md_find_section(SECT, strlen(SECT), "## Details", &s2,
					&b2, &e2),
			0);
	CU_ASSERT_EQUAL(s, s2);
	CU_ASSERT_EQUAL(b, b2);
	CU_ASSERT_EQUAL(e, e2);
	CU_ASSERT_EQUAL(md_find_section(SECT, strlen(SECT), "  Details  ", &s2,
					&b2, &e2),
			0);
	CU_ASSERT_EQUAL(s, s2);
	/* Unicode case folding. */
	const char *u = "# Заметки\nx\n# Другое\n";
	CU_ASSERT_EQUAL(md_find_section(u, strlen(u), "ЗАМЕТКИ", &s, &b, &e),
			0);
	CU_ASSERT_EQUAL(e, (size_t)(strstr(u, "# Другое") - u));
}

static void test_section_missing(void)
{
	size_t s = 7, b = 7, e = 7;
	CU_ASSERT_EQUAL(md_find_section(SECT, strlen(SECT), "Nope", &s, &b, &e),
			-ENOENT);
	CU_ASSERT_EQUAL(md_find_section("", 0, "x", &s, &b, &e), -ENOENT);
	/* Headings inside fences are no sections. */
	const char *t = "```\n## Hidden\n```\n";
	CU_ASSERT_EQUAL(md_find_section(t, strlen(t), "Hidden", &s, &b, &e),
			-ENOENT);
}

static void test_section_fenced_heading_not_end(void)
{
	const char *t = "## A\n```\n## not a heading\n```\nmore\n## B\n";
	size_t s, b, e;
	CU_ASSERT_EQUAL(md_find_section(t, strlen(t), "A", &s, &b, &e), 0);
	CU_ASSERT_EQUAL(e, (size_t)(strstr(t, "## B") - t));
}

/* ---- tags --------------------------------------------------------------- */

static void test_tags_basic(void)
{
	struct md_doc d;
	scan("#tag at start, #second and #nested/child/ and #my-tag_x.\n"
	     "mid#notatag a #123 #1984 #y1984 #-x\n",
	     &d);
	CU_ASSERT_TRUE(has_tag(&d, "tag"));
	CU_ASSERT_TRUE(has_tag(&d, "second"));
	CU_ASSERT_TRUE(has_tag(&d, "nested/child")); /* trailing '/' trimmed */
	CU_ASSERT_TRUE(has_tag(&d, "my-tag_x"));
	CU_ASSERT_TRUE(has_tag(&d, "y1984"));
	CU_ASSERT_FALSE(has_tag(&d, "notatag"));
	CU_ASSERT_FALSE(has_tag(&d, "123"));
	CU_ASSERT_FALSE(has_tag(&d, "1984"));
	for (size_t i = 0; i < d.ntags; i++) {
		CU_ASSERT_NOT_EQUAL(d.tags[i].tag[0], '#');
		if (strcmp(d.tags[i].tag, "y1984") == 0)
			CU_ASSERT_EQUAL(d.tags[i].line, 2);
	}
	md_doc_clear(&d);
}

static void test_tags_unicode(void)
{
	struct md_doc d;
	scan("#проект и #日本語 и #café\n", &d);
	CU_ASSERT_TRUE(has_tag(&d, "проект"));
	CU_ASSERT_TRUE(has_tag(&d, "日本語"));
	CU_ASSERT_TRUE(has_tag(&d, "café"));
	CU_ASSERT_EQUAL(d.ntags, 3);
	md_doc_clear(&d);
}

static void test_tags_boundary(void)
{
	struct md_doc d;
	scan("a#b x#y http://x.org/#frag\n\t#tabbed\n", &d);
	CU_ASSERT_FALSE(has_tag(&d, "b"));
	CU_ASSERT_FALSE(has_tag(&d, "y"));
	CU_ASSERT_FALSE(has_tag(&d, "frag"));
	CU_ASSERT_TRUE(has_tag(&d, "tabbed"));
	CU_ASSERT_EQUAL(d.ntags, 1);
	md_doc_clear(&d);
	/* Punctuation ends a tag. */
	scan("see #done, #next; #last!\n", &d);
	CU_ASSERT_TRUE(has_tag(&d, "done"));
	CU_ASSERT_TRUE(has_tag(&d, "next"));
	CU_ASSERT_TRUE(has_tag(&d, "last"));
	md_doc_clear(&d);
}

static void test_tags_in_headings(void)
{
	struct md_doc d;
	scan("## Heading with #inhead\n", &d);
	CU_ASSERT_TRUE(has_tag(&d, "inhead"));
	CU_ASSERT_EQUAL(d.nheadings, 1);
	md_doc_clear(&d);
}

static void test_tags_links_not_in_fenced_code(void)
{
	struct md_doc d;
	scan("```\n#nope [[NoLink]] [x](no.md)\n```\n"
	     "~~~python\n#nope2 [[NoLink2]]\n~~~\n#yes [[Yes]]\n",
	     &d);
	CU_ASSERT_EQUAL(d.ntags, 1);
	CU_ASSERT_TRUE(has_tag(&d, "yes"));
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Yes"));
	md_doc_clear(&d);
}

static void test_inline_code_single_double(void)
{
	struct md_doc d;
	scan("a `#nope [[NoLink]]` b ``x ` #nope2 [[No2]]`` #yes [[Yes]]\n",
	     &d);
	CU_ASSERT_EQUAL(d.ntags, 1);
	CU_ASSERT_TRUE(has_tag(&d, "yes"));
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Yes"));
	md_doc_clear(&d);
}

static void test_inline_code_across_line_break(void)
{
	struct md_doc d;
	scan("see `code\n#nope [[NoLink]]` after #yes\n", &d);
	CU_ASSERT_EQUAL(d.ntags, 1);
	CU_ASSERT_TRUE(has_tag(&d, "yes"));
	CU_ASSERT_EQUAL(d.nlinks, 0);
	CU_ASSERT_EQUAL(d.nheadings, 0);
	md_doc_clear(&d);
	/* A blank line ends the paragraph: no span across it. */
	scan("see `code\n\n#yes [[Link]] `\n", &d);
	CU_ASSERT_TRUE(has_tag(&d, "yes"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Link"));
	md_doc_clear(&d);
}

static void test_unclosed_backtick(void)
{
	struct md_doc d;
	scan("a ` b [[Same]] #same\n\npara [[Link]] #tag2\n```` x\n", &d);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Same"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Link"));
	CU_ASSERT_TRUE(has_tag(&d, "same"));
	CU_ASSERT_TRUE(has_tag(&d, "tag2"));
	md_doc_clear(&d);
	/* An unmatched run does not pair with a later run of other length. */
	scan("x `` y ` z [[Mid]] ``` end\n", &d);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Mid"));
	md_doc_clear(&d);
}

static void test_percent_comments(void)
{
	struct md_doc d;
	scan("%% #nope [[NoLink]]\nstill comment #nope2 [[No2]] %% #yes\n"
	     "inline %%#nope3%% [[Yes]]\n",
	     &d);
	CU_ASSERT_EQUAL(d.ntags, 1);
	CU_ASSERT_TRUE(has_tag(&d, "yes"));
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Yes"));
	md_doc_clear(&d);
}

static void test_html_comments(void)
{
	struct md_doc d;
	scan("<!-- #nope [[NoLink]]\n# Not heading\n #nope2 [[No2]] --> #yes\n"
	     "[[Yes]] <!--#x-->\n",
	     &d);
	CU_ASSERT_EQUAL(d.ntags, 1);
	CU_ASSERT_TRUE(has_tag(&d, "yes"));
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Yes"));
	CU_ASSERT_EQUAL(d.nheadings, 0);
	md_doc_clear(&d);
}

static void test_code_mask(void)
{
	const char *t = "a `b` c <!--d--> %%e%% f";
	unsigned char *m = md_code_mask(t, strlen(t), 0);
	/* Byte by byte: only code and comments are masked. */
	for (size_t i = 0; i < strlen(t); i++) {
		int exp = 0;
		size_t b1 = 2, e1 = 5; /* `b` */
		size_t b2 = (size_t)(strstr(t, "<!--") - t), e2 = b2 + 8;
		size_t b3 = (size_t)(strstr(t, "%%") - t), e3 = b3 + 5;
		if ((i >= b1 && i < e1) || (i >= b2 && i < e2) ||
		    (i >= b3 && i < e3))
			exp = 1;
		CU_ASSERT_EQUAL(m[i] ? 1 : 0, exp);
	}
	free(m);

	const char *f = "x\n```\ncode\n```\ny";
	m = md_code_mask(f, strlen(f), 0);
	CU_ASSERT_EQUAL(m[0], 0);
	CU_ASSERT_NOT_EQUAL(m[strstr(f, "code") - f], 0);
	CU_ASSERT_EQUAL(m[strlen(f) - 1], 0);
	free(m);
}

/* ---- wikilinks ---------------------------------------------------------- */

static void test_wikilink_parts(void)
{
	const char *t =
		"x [[Note#Head|Alias]] [[Plain]] [[N2#^block]] [[N3|Only alias]]\n";
	struct md_doc d;
	scan(t, &d);
	CU_ASSERT_EQUAL(d.nlinks, 4);
	const struct md_link *l = link_to(&d, "Note");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	ASSERT_STR_EQ(l->subpath, "Head");
	ASSERT_STR_EQ(l->alias, "Alias");
	CU_ASSERT_EQUAL(l->kind, LINK_WIKI);
	CU_ASSERT_EQUAL(l->start, 2);
	CU_ASSERT_EQUAL(l->end, (size_t)(strstr(t, "]]") - t) + 2);
	l = link_to(&d, "Plain");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_PTR_NULL(l->subpath);
	CU_ASSERT_PTR_NULL(l->alias);
	l = link_to(&d, "N2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	ASSERT_STR_EQ(l->subpath, "^block");
	l = link_to(&d, "N3");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	ASSERT_STR_EQ(l->alias, "Only alias");
	CU_ASSERT_PTR_NULL(l->subpath);
	md_doc_clear(&d);
}

static void test_wikilink_escaped_pipe(void)
{
	const char *t = "| col | [[Note\\|Shown]] | [[Other#Sec\\|A]] |\n";
	struct md_doc d;
	scan(t, &d);
	CU_ASSERT_EQUAL(d.nlinks, 2);
	const struct md_link *l = link_to(&d, "Note");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	ASSERT_STR_EQ(l->alias, "Shown");
	char *raw = raw_target(t, l);
	ASSERT_STR_EQ(raw, "Note");
	free(raw);
	l = link_to(&d, "Other");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	ASSERT_STR_EQ(l->subpath, "Sec");
	ASSERT_STR_EQ(l->alias, "A");
	md_doc_clear(&d);
}

static void test_wikilink_embed(void)
{
	const char *t = "![[image.png]] ![[Note#Sec]] [[Normal]]\n";
	struct md_doc d;
	scan(t, &d);
	CU_ASSERT_EQUAL(d.nlinks, 3);
	const struct md_link *l = link_to(&d, "image.png");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->kind, LINK_EMBED);
	CU_ASSERT_EQUAL(l->start, 0); /* the '!' belongs to the link */
	l = link_to(&d, "Note");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->kind, LINK_EMBED);
	ASSERT_STR_EQ(l->subpath, "Sec");
	l = link_to(&d, "Normal");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->kind, LINK_WIKI);
	md_doc_clear(&d);
}

static void test_wikilink_self_heading(void)
{
	struct md_doc d;
	scan("see [[#Heading]] and [[#^blk|b]] but not [[]]\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 2);
	if (d.nlinks >= 1) {
		ASSERT_STR_EQ(d.links[0].target, "");
		ASSERT_STR_EQ(d.links[0].subpath, "Heading");
	}
	if (d.nlinks >= 2) {
		ASSERT_STR_EQ(d.links[1].target, "");
		ASSERT_STR_EQ(d.links[1].subpath, "^blk");
		ASSERT_STR_EQ(d.links[1].alias, "b");
	}
	md_doc_clear(&d);
}

static void test_wikilink_line_numbers(void)
{
	const char *t =
		"---\ntitle: x\ntags: [a]\n---\n\n[[One]]\ntext\n\ntext [[Two]]\n";
	struct md_doc d;
	scan(t, &d);
	const struct md_link *l = link_to(&d, "One");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->line, 6);
	l = link_to(&d, "Two");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->line, 9);
	md_doc_clear(&d);
	/* Without frontmatter, the first line is 1. */
	scan("[[First]]\n[[Second]]", &d);
	CU_ASSERT_EQUAL(d.nlinks, 2);
	if (d.nlinks == 2) {
		CU_ASSERT_EQUAL(d.links[0].line, 1);
		CU_ASSERT_EQUAL(d.links[1].line, 2);
	}
	md_doc_clear(&d);
}

static void test_wikilink_target_range(void)
{
	const char *t =
		"a [[folder/Note#Sec|Alias]] b [[ Spaced ]] ![[pic.png]]\n";
	struct md_doc d;
	scan(t, &d);
	CU_ASSERT_EQUAL(d.nlinks, 3);
	for (size_t i = 0; i < d.nlinks; i++) {
		char *raw = raw_target(t, &d.links[i]);
		ASSERT_STR_EQ(raw, d.links[i].target);
		free(raw);
	}
	const struct md_link *l = link_to(&d, "folder/Note");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->tstart, (size_t)(strstr(t, "folder") - t));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Spaced"));
	md_doc_clear(&d);
}

static void test_wikilink_inner_open(void)
{
	struct md_doc d;
	scan("[[a [[Real]] and [[Unclosed\nnext]]\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Real"));
	md_doc_clear(&d);
}

/*
 * Inline code inside a wikilink: the link holds it (Obsidian's own help
 * vault links [[Functions|`hasTag`]]); a code span that holds a whole
 * link hides it. Where the two overlap, whichever opens first wins, as
 * a left-to-right inline parser reads them (CommonMark reads code spans
 * the same way: the first backtick run that opens one is closed by the
 * next run of its length, whatever lies between).
 */
static void test_wikilink_code_inside(void)
{
	const char *t = "[[Functions|`hasTag`]] and [[Functions#h|a `b` c]]\n"
			"[[#`move`|move]] [[Other|``x ` y``]]\n";
	struct md_doc d;
	scan(t, &d);
	CU_ASSERT_EQUAL_FATAL(d.nlinks, 4);
	ASSERT_STR_EQ(d.links[0].target, "Functions");
	ASSERT_STR_EQ(d.links[0].alias, "`hasTag`");
	CU_ASSERT_EQUAL(d.links[0].start, 0);
	CU_ASSERT_EQUAL(d.links[0].end, strlen("[[Functions|`hasTag`]]"));
	ASSERT_STR_EQ(d.links[1].target, "Functions");
	ASSERT_STR_EQ(d.links[1].subpath, "h");
	ASSERT_STR_EQ(d.links[1].alias, "a `b` c");
	/* A heading whose text is code: the subpath keeps the backticks. */
	ASSERT_STR_EQ(d.links[2].target, "");
	ASSERT_STR_EQ(d.links[2].subpath, "`move`");
	ASSERT_STR_EQ(d.links[2].alias, "move");
	CU_ASSERT_EQUAL(d.links[2].line, 2);
	ASSERT_STR_EQ(d.links[3].target, "Other");
	md_doc_clear(&d);
	/* Inside a link a backtick is a character: no code span opens
	 * there, so the target is never code (a file name may hold
	 * backticks). */
	scan("[[`x`]]\n", &d);
	CU_ASSERT_EQUAL_FATAL(d.nlinks, 1);
	ASSERT_STR_EQ(d.links[0].target, "`x`");
	md_doc_clear(&d);
	/* What follows the link is scanned as before. */
	scan("[[A|`#nope`]] #yes `[[Hidden]]` [[B]]\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 2);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "A"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "B"));
	CU_ASSERT_EQUAL(d.ntags, 1);
	CU_ASSERT_TRUE(has_tag(&d, "yes"));
	md_doc_clear(&d);
}

static void test_wikilink_code_precedence(void)
{
	struct md_doc d;
	/* Code around a whole link, single or double backticks. */
	scan("`[[X]]` and ``a [[Y]] b`` and `![[Z]]`\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 0);
	md_doc_clear(&d);
	/* The code span opens first and closes inside the link's text: the
	 * "[[" is code, so there is no link. */
	scan("`a [[X|b` c]]\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 0);
	md_doc_clear(&d);
	/* The link opens first: the backtick inside it opens nothing, and
	 * the one after it has no partner. */
	scan("[[X|a `b]] c` [[Y]]\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 2);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "X"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Y"));
	md_doc_clear(&d);
	/* A backtick run inside a link still closes a span opened before
	 * it (the run is a closer, whatever it sits in). */
	scan("`x [[A|`y`]] z\n", &d);
	CU_ASSERT_PTR_NULL(link_to(&d, "A"));
	md_doc_clear(&d);
	/* The mask agrees: nothing inside the link is masked. */
	const char *t = "[[Functions|`hasTag`]] `code`";
	unsigned char *m = md_code_mask(t, strlen(t), 0);
	for (size_t i = 0; i < strlen("[[Functions|`hasTag`]]"); i++)
		CU_ASSERT_EQUAL(m[i], 0);
	CU_ASSERT_NOT_EQUAL(m[strstr(t, " `code`") - t + 1], 0);
	free(m);
}

/* ---- indented code blocks ------------------------------------------------ */

/*
 * "You can also create a code block by indenting the text using Tab or 4
 * blank spaces" (Obsidian, Basic formatting syntax). CommonMark: it
 * cannot interrupt a paragraph (an indented line right after one
 * continues it), and inside a list item it takes 4 columns past the
 * item's content.
 */
static void test_indented_code(void)
{
	struct md_doc d;
	scan("Paragraph.\n\n    [[IndentOnly]] #indentonly\n\n"
	     "Para\n\n\t[[TabCode]] #tabcode\n\nText [[After]] #after\n",
	     &d);
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "After"));
	CU_ASSERT_EQUAL(d.ntags, 1);
	CU_ASSERT_TRUE(has_tag(&d, "after"));
	md_doc_clear(&d);
	/* Blank lines inside the block; "  \t" is 4 columns too; a line
	 * less indented ends it. */
	scan("x\n\n    a\n\n      [[StillCode]]\n  \t[[Tabbed]]\n"
	     "back [[Text]]\n",
	     &d);
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Text"));
	md_doc_clear(&d);
	/* At the start of the body, and after a heading: code. */
	scan("    [[First]]\n# H\n    [[AfterHeading]] #h\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 0);
	CU_ASSERT_EQUAL(d.ntags, 0);
	CU_ASSERT_EQUAL(d.nheadings, 1);
	md_doc_clear(&d);
	scan("---\na: 1\n---\n    [[FmCode]]\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 0);
	md_doc_clear(&d);
	/* After a fence or a thematic break: code. */
	scan("```\nx\n```\n    [[AfterFence]]\n***\n    [[AfterRule]]\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 0);
	md_doc_clear(&d);
}

static void test_indented_not_code(void)
{
	struct md_doc d;
	/* Lazy continuation: no blank line after the paragraph. */
	scan("Paragraph\n    [[Cont]] #cont\n", &d);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Cont"));
	CU_ASSERT_TRUE(has_tag(&d, "cont"));
	md_doc_clear(&d);
	/* A list item's continuation, after a blank line too. */
	scan("- item\n    [[Lazy]]\n\n    [[InItem]] #initem\n"
	     "1. one\n\n   [[Ordered]]\n",
	     &d);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Lazy"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "InItem"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Ordered"));
	CU_ASSERT_TRUE(has_tag(&d, "initem"));
	md_doc_clear(&d);
	/* Nested task lists indented with a tab (Obsidian's own example). */
	scan("- [ ] Task [[T1]]\n\t- [ ] Subtask [[T2]]\n\n\t- [ ] [[T3]]\n"
	     "\t\t- deeper [[T4]]\n",
	     &d);
	CU_ASSERT_EQUAL(d.nlinks, 4);
	md_doc_clear(&d);
	/* Code inside a list item: 4 columns past its content. */
	scan("- item\n\n      [[ItemCode]]\n\n  [[ItemPara]]\n", &d);
	CU_ASSERT_PTR_NULL(link_to(&d, "ItemCode"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "ItemPara"));
	md_doc_clear(&d);
	/* A paragraph after the list ends it: indented code again. */
	scan("- item\n\nPara\n\n    [[CodeAgain]]\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 0);
	md_doc_clear(&d);
	/* "-x" and "*emphasis*" are no list items. */
	scan("-x\n\n    [[C1]]\n*em*\n\n    [[C2]]\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 0);
	md_doc_clear(&d);
}

/* ---- math -----------------------------------------------------------------
 */

/* $$ blocks and $ inline math hold LaTeX (MathJax): nothing in them is a
 * link, a tag or a heading (Obsidian, Advanced formatting syntax). */
static void test_math_blocks(void)
{
	struct md_doc d;
	scan("$$\n[[InMath]] #inmath\n# Not a heading\n$$\n[[After]] #after\n",
	     &d);
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "After"));
	CU_ASSERT_EQUAL(d.ntags, 1);
	CU_ASSERT_EQUAL(d.nheadings, 0);
	md_doc_clear(&d);
	/* On one line, inside a paragraph, and across a blank line. */
	scan("$$x [[One]]$$ text $$[[Two]]$$ [[Three]]\n"
	     "$$\n\\begin{a}\n\n[[Four]]\n\\end{a}\n$$ [[Five]]\n",
	     &d);
	CU_ASSERT_EQUAL(d.nlinks, 2);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Three"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Five"));
	md_doc_clear(&d);
	/* A block never closed runs to the end of the note, like a fence;
	 * "$$" inside a paragraph without a partner is text. */
	scan("a $$ b [[Visible]]\n\n$$\n[[Never]] #never\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Visible"));
	CU_ASSERT_EQUAL(d.ntags, 0);
	md_doc_clear(&d);
}

static void test_math_inline(void)
{
	struct md_doc d;
	scan("$[[M]]$ and $x #t$ and $e^{2i\\pi} = 1$ [[Out]]\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Out"));
	CU_ASSERT_EQUAL(d.ntags, 0);
	md_doc_clear(&d);
	/* Money, not math: a blank after the opening '$', a blank before
	 * the closing one, or a digit after it. */
	scan("$5 and $6 [[Money]] #money\n", &d);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Money"));
	CU_ASSERT_TRUE(has_tag(&d, "money"));
	md_doc_clear(&d);
	scan("$20,000 and $30,000 [[Cash]]\n", &d);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Cash"));
	md_doc_clear(&d);
	scan("it costs 2$ [[A1]] or $ [[A2]] $\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 2);
	md_doc_clear(&d);
	scan("$x [[B1]] $ then $y$5 [[B2]]\n", &d);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "B1"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "B2"));
	md_doc_clear(&d);
	/* An escaped dollar opens nothing and closes nothing. */
	scan("\\$[[E1]]$ and $a \\$ [[E2]] b$ [[E3]]\n", &d);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "E1"));
	CU_ASSERT_PTR_NULL(link_to(&d, "E2"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "E3"));
	md_doc_clear(&d);
	/* Across a line break inside a paragraph, never across a blank
	 * line. */
	scan("$a\n[[Joined]] b$\n\n$c\n\n[[Apart]] d$\n", &d);
	CU_ASSERT_PTR_NULL(link_to(&d, "Joined"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Apart"));
	md_doc_clear(&d);
	/* Whichever opens first: code holds '$', a link holds math. */
	scan("`$` [[C1]] `$` and [[L|$x$]] and $`$ [[C2]]\n", &d);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "C1"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "L"));
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "C2"));
	md_doc_clear(&d);
	/* Math in a code block is code. */
	scan("```\n$$\n```\n[[Free]]\n", &d);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "Free"));
	md_doc_clear(&d);
}

/* ---- markdown links ----------------------------------------------------- */

static void test_mdlink_decode(void)
{
	const char *t =
		"[My note](My%20Note.md) [sec](folder/x.md#Some%20Sec)\n";
	struct md_doc d;
	scan(t, &d);
	CU_ASSERT_EQUAL(d.nlinks, 2);
	const struct md_link *l = link_to(&d, "My Note.md");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->kind, LINK_MD);
	ASSERT_STR_EQ(l->alias, "My note");
	char *raw = raw_target(t, l);
	ASSERT_STR_EQ(raw, "My%20Note.md");
	free(raw);
	CU_ASSERT_EQUAL(l->start, 0);
	CU_ASSERT_EQUAL(l->end, (size_t)(strchr(t, ')') - t) + 1);
	l = link_to(&d, "folder/x.md");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	ASSERT_STR_EQ(l->subpath, "Some Sec");
	raw = raw_target(t, l);
	ASSERT_STR_EQ(raw, "folder/x.md");
	free(raw);
	md_doc_clear(&d);
}

static void test_mdlink_angle_and_title(void)
{
	const char *t = "[a](<My Note.md>) [b](other.md \"Title here\") "
			"[c](third.md 'single')\n";
	struct md_doc d;
	scan(t, &d);
	CU_ASSERT_EQUAL(d.nlinks, 3);
	const struct md_link *l = link_to(&d, "My Note.md");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	char *raw = raw_target(t, l);
	ASSERT_STR_EQ(raw, "My Note.md");
	free(raw);
	l = link_to(&d, "other.md");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->end, (size_t)(strstr(t, "\") ") - t) + 2);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "third.md"));
	md_doc_clear(&d);
}

static void test_mdlink_external_ignored(void)
{
	struct md_doc d;
	scan("[w](http://example.com/a.md) [s](https://x.org) "
	     "[m](mailto:me@example.com) [o](obsidian://open?vault=x) "
	     "[p](//cdn.example.com/x.md) [anchor](#section) [local](real.md)\n",
	     &d);
	CU_ASSERT_EQUAL(d.nlinks, 1);
	CU_ASSERT_PTR_NOT_NULL(link_to(&d, "real.md"));
	md_doc_clear(&d);
}

static void test_mdlink_image_embed(void)
{
	struct md_doc d;
	scan("![alt](img/x.png) ![](y.png) ![remote](https://x/y.png)\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 2);
	const struct md_link *l = link_to(&d, "img/x.png");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->kind, LINK_MD_EMBED);
	CU_ASSERT_EQUAL(l->start, 0);
	l = link_to(&d, "y.png");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->kind, LINK_MD_EMBED);
	md_doc_clear(&d);
}

static void test_mdlink_not_links(void)
{
	struct md_doc d;
	/* No '(' after ']', or no ')' on the line. */
	scan("[just brackets] and [x] (y.md) and [z](w.md\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 0);
	md_doc_clear(&d);
	/* In inline code. */
	scan("`[a](b.md)`\n", &d);
	CU_ASSERT_EQUAL(d.nlinks, 0);
	md_doc_clear(&d);
}

/* ---- robustness --------------------------------------------------------- */

/*
 * Scan a big input in a child process that is killed after LIMIT_S
 * seconds, so that a quadratic scanner fails the test instead of
 * hanging the suite.
 */
#define LIMIT_S 30
static void run_big(const char *what, char *buf, size_t n)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fflush(NULL);
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		alarm(LIMIT_S);
		struct md_doc d;
		md_scan(buf, n, &d);
		md_doc_clear(&d);
		unsigned char *m = md_code_mask(buf, n, 0);
		free(m);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	double s = elapsed_s(&t0);
	bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (!ok)
		fprintf(stderr, "\n    %s: %s after %.1f s ", what,
			WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? "not done"
								   : "crashed",
			s);
	CU_ASSERT_TRUE(ok);
}

static void test_pathological_backticks(void)
{
	size_t n = 1 << 20;
	char *buf = xmalloc(n + 1);
	memset(buf, '`', n);
	buf[n] = 0;
	run_big("1M backticks", buf, n);
	run_big("100k backticks", buf, 100000);
	/* Single backticks separated by letters. */
	for (size_t i = 0; i < n; i++)
		buf[i] = (i % 2) ? 'a' : '`';
	run_big("`a`a", buf, n);
	/* Backtick runs of growing length: none closes. */
	size_t o = 0;
	for (size_t k = 1; o + k + 1 < n; k++) {
		memset(buf + o, '`', k);
		o += k;
		buf[o++] = ' ';
	}
	run_big("growing runs", buf, o);
	free(buf);
}

static void fill(char *buf, size_t n, const char *pat)
{
	size_t k = strlen(pat);
	for (size_t i = 0; i < n; i++)
		buf[i] = pat[i % k];
	buf[n] = 0;
}

static void test_pathological_100k_open_wikilinks(void)
{
	/* 100k "[[" on one line (200 KB). */
	size_t n = 200000;
	char *buf = xmalloc(n + 1);
	fill(buf, n, "[[");
	run_big("100k [[", buf, n);
	fill(buf, n, "[[\n");
	run_big("[[ lines", buf, n);
	free(buf);
}

/* One long line full of '[' must stay linear (each '[' may not rescan
 * the rest of the line). */
static void test_pathological_1mb_open_brackets(void)
{
	size_t n = 1 << 20;
	char *buf = xmalloc(n + 1);
	fill(buf, n, "[");
	run_big("1 MB of [", buf, n);
	free(buf);
}

static void test_pathological_1mb_wikilink_opens(void)
{
	size_t n = 1 << 20;
	char *buf = xmalloc(n + 1);
	fill(buf, n, "[[x");
	run_big("[[x", buf, n);
	fill(buf, n, "![[a|");
	run_big("![[a|", buf, n);
	free(buf);
}

static void test_pathological_1mb_mdlink_opens(void)
{
	size_t n = 1 << 20;
	char *buf = xmalloc(n + 1);
	fill(buf, n, "[x");
	run_big("[x", buf, n);
	fill(buf, n, "[a](<");
	run_big("[a](<", buf, n);
	free(buf);
}

/*
 * Many backtick runs in one paragraph ("`a`a`a...") must scan in linear
 * time: notes up to NOTE_MAX_INDEXED (16 MB) are scanned.
 */
static void test_pathological_4mb_backtick_spans(void)
{
	size_t n = 4u << 20;
	char *buf = xmalloc(n + 1);
	fill(buf, n, "`a");
	run_big("4 MB of `a", buf, n);
	fill(buf, n, "[`");
	run_big("4 MB of [`", buf, n);
	free(buf);
}

static void test_pathological_misc(void)
{
	size_t n = 1 << 20;
	char *buf = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		buf[i] = "<!-%#"[i % 5];
	run_big("comment starts", buf, n);
	for (size_t i = 0; i < n; i++)
		buf[i] = (i % 4 == 3) ? '\n' : "```"[i % 4];
	run_big("fence lines", buf, n);
	for (size_t i = 0; i < n; i++)
		buf[i] = " #a"[i % 3];
	run_big("tags", buf, n);
	free(buf);
}

/*
 * Math, indented code, list items and links mixed adversarially: dollars
 * that never close (or close only far away), "$$" openers, escapes,
 * backticks and "[[" inside one another, list items nested thousands
 * deep, indented lines after blank lines. Each must stay linear.
 */
static void test_pathological_math_code_links(void)
{
	size_t n = 4u << 20;
	char *buf = xmalloc(n + 1);
	static const char *const pats[] = {
		"$a ",	      "$",	 "$$ ",	 "x $$ a ",   "\\$",
		"\\\\$a$",    "[[`",	 "`[[",	 "[[a|$",     "$[[",
		"$`",	      "[[a|`$`", "$$\n", "    $\n\n", "- $\n\n    [[",
		"`$$`[[x]]$",
	};
	for (size_t k = 0; k < ARRAY_SIZE(pats); k++) {
		fill(buf, n / 4, pats[k]);
		run_big(pats[k], buf, n / 4);
	}
	/* List items nested ever deeper, each with indented lines after a
	 * blank line. */
	size_t o = 0;
	for (size_t k = 0; o + 2 * k + 32 < n; k++) {
		memset(buf + o, ' ', k);
		o += k;
		memcpy(buf + o, "- x $a\n\n", 8);
		o += 8;
		memset(buf + o, '\t', k / 4 + 1);
		o += k / 4 + 1;
		memcpy(buf + o, "[[y|`]]\n", 8);
		o += 8;
	}
	buf[o] = 0;
	run_big("nested lists", buf, o);
	/* Random bytes from the characters that open or close something. */
	static const char alpha[] = "$$``[[]]|#\\ \n\n\t-*>%<!a1";
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = alpha[(x >> 16) % (sizeof(alpha) - 1)];
	}
	buf[n] = 0;
	run_big("random markup", buf, n);
	free(buf);
}

static void test_scan_never_crashes(void)
{
	static const char *const inputs[] = {
		"",	    "[",
		"[[",	    "]]",
		"![",	    "![[",
		"[[|]]",    "[[#]]",
		"[[\\|]]",  "[](",
		"[a](",	    "[a](<",
		"[a](<x>",  "`",
		"``",	    "```",
		"~~~",	    "<!--",
		"%%",	    "#",
		"# ",	    "---",
		"---\n",    "---\n---",
		"\xff\xfe", "#\xff",
		"[[\xff]]", "[a](%",
		"[a](%2",   "[a](x.md \"unterminated",
		"\r\n\r\n", "> ```\n> #x\n",
		"[[a]]]",   "[[[a]]",
	};
	for (size_t i = 0; i < ARRAY_SIZE(inputs); i++) {
		struct md_doc d;
		scan(inputs[i], &d);
		md_doc_clear(&d);
		size_t s, b, e;
		md_find_section(inputs[i], strlen(inputs[i]), "x", &s, &b, &e);
	}
	CU_PASS("no crash");
}

int main(void)
{
	static const struct test_case tests[] = {
		{"fm_split_basic", test_fm_split_basic},
		{"fm_split_needs_byte0", test_fm_split_needs_byte0},
		{"fm_split_closing_line", test_fm_split_closing_line},
		{"fm_split_crlf", test_fm_split_crlf},
		{"fm_split_unclosed", test_fm_split_unclosed},
		{"scan_fm_fields", test_scan_fm_fields},
		{"heading_levels", test_heading_levels},
		{"heading_not_tag", test_heading_not_tag},
		{"heading_closing_hashes", test_heading_closing_hashes},
		{"heading_indent", test_heading_indent},
		{"heading_in_fences", test_heading_in_fences},
		{"heading_offsets", test_heading_offsets},
		{"section_basic", test_section_basic},
		{"section_nested_included", test_section_nested_included},
		{"section_same_level_ends", test_section_same_level_ends},
		{"section_case_and_hashes", test_section_case_and_hashes},
		{"section_missing", test_section_missing},
		{"section_fenced_heading_not_end",
		 test_section_fenced_heading_not_end},
		{"tags_basic", test_tags_basic},
		{"tags_unicode", test_tags_unicode},
		{"tags_boundary", test_tags_boundary},
		{"tags_in_headings", test_tags_in_headings},
		{"tags_links_not_in_fenced_code",
		 test_tags_links_not_in_fenced_code},
		{"inline_code_single_double", test_inline_code_single_double},
		{"inline_code_across_line_break",
		 test_inline_code_across_line_break},
		{"unclosed_backtick", test_unclosed_backtick},
		{"percent_comments", test_percent_comments},
		{"html_comments", test_html_comments},
		{"code_mask", test_code_mask},
		{"special_at_every_offset", test_special_at_every_offset},
		{"wikilink_parts", test_wikilink_parts},
		{"wikilink_escaped_pipe", test_wikilink_escaped_pipe},
		{"wikilink_embed", test_wikilink_embed},
		{"wikilink_self_heading", test_wikilink_self_heading},
		{"wikilink_line_numbers", test_wikilink_line_numbers},
		{"wikilink_target_range", test_wikilink_target_range},
		{"wikilink_inner_open", test_wikilink_inner_open},
		{"wikilink_code_inside", test_wikilink_code_inside},
		{"wikilink_code_precedence", test_wikilink_code_precedence},
		{"indented_code", test_indented_code},
		{"indented_not_code", test_indented_not_code},
		{"math_blocks", test_math_blocks},
		{"math_inline", test_math_inline},
		{"mdlink_decode", test_mdlink_decode},
		{"mdlink_angle_and_title", test_mdlink_angle_and_title},
		{"mdlink_external_ignored", test_mdlink_external_ignored},
		{"mdlink_image_embed", test_mdlink_image_embed},
		{"mdlink_not_links", test_mdlink_not_links},
		{"pathological_backticks", test_pathological_backticks},
		{"pathological_100k_open_wikilinks",
		 test_pathological_100k_open_wikilinks},
		{"pathological_1mb_open_brackets",
		 test_pathological_1mb_open_brackets},
		{"pathological_1mb_wikilink_opens",
		 test_pathological_1mb_wikilink_opens},
		{"pathological_1mb_mdlink_opens",
		 test_pathological_1mb_mdlink_opens},
		{"pathological_4mb_backtick_spans",
		 test_pathological_4mb_backtick_spans},
		{"pathological_misc", test_pathological_misc},
		{"pathological_math_code_links",
		 test_pathological_math_code_links},
		{"scan_never_crashes", test_scan_never_crashes},
	};
	return run_tests("markdown", tests, ARRAY_SIZE(tests));
}
