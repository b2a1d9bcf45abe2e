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
/* Bytes that may start something a scanner looks at: the table, and the
 * same bytes each repeated 16 times (MDI_V16; at most MDI_SPECIAL_MAX)
 * for the 16-bytes-at-once search. */
#define MDI_SPECIAL_MAX 8
typedef unsigned char mdi_v16 __attribute__((vector_size(16)));
#define MDI_V16(c)                                             \
	{                                                      \
		c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c \
	}
struct mdi_special {
	bool tab[256];
	mdi_v16 set[MDI_SPECIAL_MAX];
	unsigned n;
};
size_t mdi_skip_plain(const struct mdi_special *sp, const char *text,
		      size_t len, size_t i);
