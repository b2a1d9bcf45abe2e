/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The markdown parser's private parts, shared by its files (markdown.c:
 * frontmatter, headings, links, tags, sections; markdown_mask.c: the code
 * mask, which says which bytes are code, math or comments): the line and
 * wikilink helpers both use, so that they agree on where a link is.
 */
#pragma once

#include "markdown.h"

#include <stdbool.h>
#include <stddef.h>

/* Where the parts of [[target#sub|alias]] are. */
struct wl_parts {
	size_t a;	   /* just after "[[" */
	size_t ta, tb;	   /* the target, blanks trimmed */
	size_t hash, tend; /* '#' (tend when none), end of target#sub */
	size_t bar, close; /* '|' (close when none), the closing "]]" */
};

/* markdown.c */
size_t mdi_line_end(const char *text, size_t len, size_t i);
size_t mdi_wikilink_at(const char *text, size_t e, size_t i,
		       struct wl_parts *ret);
size_t mdi_skip_plain(const bool *special, const char *text, size_t len,
		      size_t i);
