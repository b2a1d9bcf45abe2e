/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Markdown scanning with Obsidian's rules: frontmatter split, headings,
 * inline tags, wikilinks/embeds and markdown links. Nothing inside fenced
 * or indented code, inline code, $$ math $$ or $inline math$,
 * %% comments %% or <!-- HTML comments --> counts. (Links in the
 * frontmatter's properties are read with the YAML: frontmatter.h.)
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum link_kind {
	LINK_WIKI,     /* [[target#sub|alias]] */
	LINK_EMBED,    /* ![[target]] */
	LINK_MD,       /* [text](target.md) */
	LINK_MD_EMBED, /* ![alt](image.png) */
};

struct md_link {
	enum link_kind kind;
	char *target;	   /* link path as meant (url-decoded), no #subpath */
	char *subpath;	   /* text after '#', or NULL */
	char *alias;	   /* display text after '|' or inside [..], or NULL */
	int line;	   /* 1-based line in the whole file */
	size_t start, end; /* the whole link, byte offsets into the text */
	size_t tstart, tend; /* the target path as written (raw) */
	/* A link in a property (frontmatter.h): how its YAML value is
	 * quoted, '"' or '\'' (0: a body link, or a block scalar). */
	char quote;
};

struct md_heading {
	int level;
	char *text;
	int line;
	size_t start;	  /* offset of the heading line */
	size_t next_line; /* offset just after the heading line */
};

struct md_tag {
	char *tag; /* without '#' */
	int line;
};

struct md_doc {
	bool has_fm;
	size_t fm_start, fm_end; /* YAML text between the --- lines */
	int fm_line;		 /* line of the first YAML line */
	size_t body_off;	 /* where the body starts */
	int body_line;
	struct md_link *links;
	size_t nlinks;
	struct md_heading *headings;
	size_t nheadings;
	struct md_tag *tags;
	size_t ntags;
	/* md_code_mask() of the body, for the caller's other scans of the
	 * same text (tasks_scan); md_doc_clear() frees it. */
	unsigned char *mask;
};

/*
 * Split off frontmatter: a first line "---" and a later line "---".
 * Returns true and the offsets when there is a frontmatter block.
 */
bool md_split_frontmatter(const char *text, size_t len, size_t *ret_fm_start,
			  size_t *ret_fm_end, size_t *ret_body_off);

/*
 * The wikilink [[target#sub|alias]] at text[i] == text[i + 1] == '[' that
 * ends before e (the end of its line): returns its end and fills *ret
 * (target, subpath, alias, tstart, tend), or returns 0 when there is none.
 */
size_t md_parse_wikilink(const char *text, size_t e, size_t i,
			 struct md_link *ret);
void md_link_clear(struct md_link *l);

/* Scan text (the whole file). Never fails; malformed markup is just text. */
void md_scan(const char *text, size_t len, struct md_doc *ret);
void md_doc_clear(struct md_doc *d);

/*
 * Byte mask of text[0..len): 1 where content is code, math or a comment.
 * Used by scanners and by link rewriting. Caller frees.
 */
unsigned char *md_code_mask(const char *text, size_t len, size_t from);

/* Parse one heading line at text[off]; returns level or 0. */
int md_heading_at(const char *text, size_t len, size_t off, char **ret_text);

/*
 * Section of the heading named `name` (case-insensitive, leading #'s
 * ignored): [*ret_start, *ret_end) covers the heading line and the
 * content up to the next heading of the same or higher level.
 * *ret_body is where the content after the heading line starts.
 * Returns 0 or -ENOENT.
 */
int md_find_section(const char *text, size_t len, const char *name,
		    size_t *ret_start, size_t *ret_body, size_t *ret_end);
