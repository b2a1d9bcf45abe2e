/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Entries kept in memory within a byte budget (store_kept.h).
 */
#include "store_kept.h"

#include "util.h"

#include <stdbool.h>
#include <stdlib.h>

void sto_keep_init(struct sto_keep *k, pthread_mutex_t *mu,
		   void (*unref)(struct sto_kept *e))
{
	k->mu = mu;
	k->map = hmap_new();
	k->tick = 0;
	k->bytes = 0;
	k->unref = unref;
}

void sto_keep_clear(struct sto_keep *k)
{
	size_t it = 0;
	const char *key;
	void *v;
	while (hmap_next(k->map, &it, &key, &v))
		k->unref(v);
	hmap_free(k->map);
	k->map = hmap_new();
	k->bytes = 0;
}

void sto_keep_free(struct sto_keep *k)
{
	sto_keep_clear(k);
	hmap_free(k->map);
	k->map = NULL;
}

/* Key's entry out (k->mu held). */
static void drop(struct sto_keep *k, const char *key)
{
	_cleanup_free_ char *dup = xstrdup(key);
	struct sto_kept *e = hmap_del(k->map, dup);
	k->bytes -= e->bytes;
	k->unref(e);
}

/* The least recently used entry out (k->mu held). */
static void evict_one(struct sto_keep *k)
{
	size_t it = 0;
	const char *key, *oldest = NULL;
	void *v;
	uint64_t at = UINT64_MAX;
	while (hmap_next(k->map, &it, &key, &v)) {
		struct sto_kept *e = v;
		if (e->used < at) {
			at = e->used;
			oldest = key;
		}
	}
	if (oldest)
		drop(k, oldest);
}

void sto_keep_drop_old(struct sto_keep *k, uint64_t floor)
{
	bool again = true;
	while (again) {
		size_t it = 0;
		const char *key;
		void *v;
		again = false;
		while (hmap_next(k->map, &it, &key, &v)) {
			if (((struct sto_kept *)v)->gen < floor) {
				drop(k, key);
				again = true;
				break;
			}
		}
	}
}

struct sto_kept *sto_keep_get(struct sto_keep *k, const char *key,
			      const uint64_t *floor, uint64_t *ret_gen)
{
	pthread_mutex_lock(k->mu);
	struct sto_kept *e = hmap_get(k->map, key);
	if (e && e->gen < *floor) {
		drop(k, key);
		e = NULL;
	}
	if (e) {
		e->used = ++k->tick;
		*ret_gen = e->gen;
		atomic_fetch_add(&e->refs, 1);
	}
	pthread_mutex_unlock(k->mu);
	return e;
}

void sto_keep_put(struct sto_keep *k, const char *key, uint64_t gen,
		  struct sto_kept *e, size_t budget)
{
	pthread_mutex_lock(k->mu);
	struct sto_kept *cur = hmap_get(k->map, key);
	if (cur == e || (cur && cur->gen >= gen)) {
		if (cur == e)
			e->gen = gen;
		pthread_mutex_unlock(k->mu);
		return;
	}
	if (cur)
		drop(k, key);
	while (k->bytes + e->bytes > budget && hmap_size(k->map))
		evict_one(k);
	atomic_fetch_add(&e->refs, 1);
	e->used = ++k->tick;
	e->gen = gen;
	hmap_put(k->map, key, e);
	k->bytes += e->bytes;
	pthread_mutex_unlock(k->mu);
}
