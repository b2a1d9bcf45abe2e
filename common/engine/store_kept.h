/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Entries kept in memory by key within a byte budget, the least recently
 * used out first, each of the generation it was read for: the common
 * words' notes (store_words.c) and the words' positions
 * (store_phrase.c). An entry embeds a struct sto_kept; the cache holds a
 * reference to each entry it keeps and is guarded by its owner's lock.
 */
#pragma once

#include "hmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* An entry's part the cache uses: its size, its last use, the generation
 * it is of (used and gen under the cache's lock), counted references. */
struct sto_kept {
	size_t bytes;
	uint64_t used, gen;
	atomic_int refs;
};

/* The entry of type that has kept k as member. */
#define sto_kept_of(k, type, member) \
	((type *)(void *)((char *)(k)-offsetof(type, member)))

/* The entries by key (struct sto_kept), bytes in all; tick orders their
 * uses; mu: the owner's lock, which guards them; unref drops a reference
 * to an entry. */
struct sto_keep {
	pthread_mutex_t *mu;
	struct hmap *map;
	uint64_t tick;
	size_t bytes;
	void (*unref)(struct sto_kept *e);
};

void sto_keep_init(struct sto_keep *k, pthread_mutex_t *mu,
		   void (*unref)(struct sto_kept *e));
/* Every entry out (k->mu held, or no other user left). */
void sto_keep_clear(struct sto_keep *k);
void sto_keep_free(struct sto_keep *k);
/* The entries of a generation older than floor out (k->mu held). */
void sto_keep_drop_old(struct sto_keep *k, uint64_t floor);
/* The entry of key (a reference; *ret_gen: the generation it is of), or
 * NULL; older than *floor (read under the lock): dropped. Takes k->mu. */
struct sto_kept *sto_keep_get(struct sto_keep *k, const char *key,
			      const uint64_t *floor, uint64_t *ret_gen);
/* e kept as key's for generation gen, in place of an entry of an older
 * one, the least recently used out until all fit in budget. Takes
 * k->mu. */
void sto_keep_put(struct sto_keep *k, const char *key, uint64_t gen,
		  struct sto_kept *e, size_t budget);
