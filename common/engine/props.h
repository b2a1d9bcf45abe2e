/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A note's frontmatter values in a compact byte form, kept with the note
 * in the index so that property queries never re-read files: each
 * top-level key with its value (null, boolean, number, string, list of
 * values, or an object kept as JSON text). Walking it allocates nothing;
 * strings point into it.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum prop_kind {
	PROP_NULL,
	PROP_BOOL,
	PROP_NUM,
	PROP_STR,
	PROP_LIST,
	PROP_OBJ, /* JSON text in str */
};

/* One value read from the bytes: strings borrowed from them. */
struct prop_val {
	enum prop_kind kind;
	bool b;
	double num;
	const char *str; /* PROP_STR, PROP_OBJ: NUL-terminated */
	size_t len;
	uint32_t count;		    /* PROP_LIST: items */
	const unsigned char *items; /* PROP_LIST: the first item */
	const unsigned char *end;   /* the bytes' end, for prop_list_next */
};

/* The bytes for a frontmatter object (malloc'd; NULL with *ret_len 0
 * for an empty one). */
unsigned char *props_encode(const cJSON *obj, size_t *ret_len);
/* Check bytes read back from disk: true when they can be walked. */
bool props_valid(const unsigned char *p, size_t len);

/* Top-level entries in order: start with *pos = 0; false at the end. */
bool props_next(const unsigned char *p, size_t len, size_t *pos,
		const char **ret_key, struct prop_val *ret_val);
/* The value of key (exact, or else case-insensitive ASCII); false when
 * the note has no such key. */
bool props_get(const unsigned char *p, size_t len, const char *key,
	       struct prop_val *ret);
/* The items of a PROP_LIST: *it starts at v->items, one call each. */
bool props_list_next(const struct prop_val *v, const unsigned char **it,
		     struct prop_val *ret);
