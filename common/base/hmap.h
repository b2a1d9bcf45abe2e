/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * String-keyed hash map (open addressing, linear probing, backward-shift
 * deletion). Keys are copied; values are borrowed pointers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct hmap;

struct hmap *hmap_new(void);
/* Frees the map and its key copies, not the values. */
struct hmap *hmap_free(struct hmap *m);
/* hmap_free(), each value given to free_val first. */
struct hmap *hmap_free_with(struct hmap *m, void (*free_val)(void *));
void *hmap_get(const struct hmap *m, const char *key);
/* Inserts or replaces; returns the previous value or NULL. */
void *hmap_put(struct hmap *m, const char *key, void *val);
/* Room for n keys in all without growing again (a bulk load). */
void hmap_reserve(struct hmap *m, size_t n);
/* Removes; returns the removed value or NULL. */
void *hmap_del(struct hmap *m, const char *key);
size_t hmap_size(const struct hmap *m);
/* Iteration: start with *iter = 0; returns false at the end. */
bool hmap_next(const struct hmap *m, size_t *iter, const char **ret_key,
	       void **ret_val);
