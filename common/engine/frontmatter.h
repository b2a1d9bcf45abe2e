/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * YAML frontmatter: read with libyaml into a cJSON object, edited by
 * splicing only the lines of the keys that change, so every other key
 * keeps its order, comments and exact text. Broken YAML is never
 * rewritten: callers get the line and the problem instead.
 */
#pragma once

#include "markdown.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Limits on what one frontmatter may cost: its YAML text, and the values
 * it makes once aliases are expanded (each alias counts the whole tree
 * it repeats). Over them the frontmatter is reported as an error, like
 * broken YAML, and the note stays readable as text.
 */
#define FM_MAX_BYTES (1 << 20)
#define FM_MAX_NODES 100000

struct fm_key {
	char *key;
	size_t start, end; /* byte range of "key: value" lines in the note */
};

struct frontmatter {
	bool present;	 /* the note starts with a --- block */
	bool valid;	 /* that block is a YAML mapping (or empty) */
	cJSON *data;	 /* object; empty object when absent */
	size_t fm_start; /* YAML text range inside the note */
	size_t fm_end;
	size_t body_off; /* where the body starts */
	int err_line;	 /* 1-based line in the note, when !valid */
	char *err_msg;	 /* the YAML problem, when !valid */
	/* !valid because it is larger or more complex than vaultd reads
	 * (Obsidian may still read it: its tags are unknown here). */
	bool over_budget;
	struct fm_key *keys; /* top-level keys in order */
	size_t nkeys;
	/* Links in properties: text values and list items that are one
	 * [[wikilink]] (LINK_WIKI, lines of the note, quote set). Where a
	 * link's target cannot be rewritten in place (escapes or a line
	 * fold make it up), its tstart == tend. */
	struct md_link *links;
	size_t nlinks;
};

/* Parse the frontmatter of a whole note text. Never fails hard. */
void fm_parse(const char *text, size_t len, struct frontmatter *ret);
void fm_clear(struct frontmatter *fm);

/*
 * New note text with top-level `key` set to `value` (NULL removes it).
 * Returns 0, or -EBADMSG when the existing frontmatter is not valid YAML
 * (nothing is changed then; fm_parse() tells where).
 */
int fm_set(const char *text, size_t len, const char *key, const cJSON *value,
	   char **ret_text);

/* YAML text ("key: value\n" lines) for a whole object, for new notes. */
char *fm_render_object(const cJSON *obj);

/* s as written inside a YAML scalar quoted with quote ('"' or '\''; 0 for
 * a block scalar, written as it is). Caller frees. */
char *fm_quoted(const char *s, char quote);

/* Tags or aliases from a frontmatter value: list, or comma/space string. */
char **fm_string_list(const cJSON *v, bool split_spaces, bool strip_hash);
