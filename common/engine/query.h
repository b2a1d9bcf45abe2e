/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The full-text query language of search_notes (seed 001):
 *
 *   mcp                    a word, in the title or the text
 *   "model context"        an exact phrase
 *   proj*                  a word starting with "proj"
 *   title:meeting          in the title only (title:"a phrase" too)
 *   tag:research           tag research or research/... (hierarchical)
 *   folder:projects/wiki   notes under that folder
 *   a AND b                both
 *   a b                    side by side: full-text search finds notes
 *                          with any of them, more of them first (store.h)
 *   a OR b                 either
 *   -term, -tag:x, NOT x   without
 *   ( ... )                grouping
 *
 * Precedence: - / NOT binds tightest, then AND, then OR.
 */
#pragma once

#include <stdbool.h>

enum qkind {
	Q_WORD,	  /* text: a word (prefix when it ends in '*') */
	Q_PHRASE, /* text: an exact phrase */
	Q_TAG,
	Q_FOLDER,
	Q_AND,
	Q_OR,
	Q_NOT,
};

struct qnode {
	enum qkind kind;
	char *text;    /* word/phrase/tag/folder value */
	bool title;    /* title: field */
	bool prefix;   /* word* */
	bool implicit; /* Q_AND: written without AND ("a b") */
	int pos;       /* byte offset in the query */
	struct qnode *a, *b;
};

/* Parse; on error returns -EINVAL and a message that says where. */
int query_parse(const char *s, struct qnode **ret, char **ret_msg);
struct qnode *query_free(struct qnode *q);
/* Canonical S-expression, e.g. (and (word mcp) (tag research)). */
char *query_dump(const struct qnode *q);
/* True when some text term is not negated (the query can be ranked). */
bool query_has_positive_text(const struct qnode *q);
