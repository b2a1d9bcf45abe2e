/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "hmap.h"
#include "util.h"

struct slot {
	char *key; /* NULL: empty */
	void *val;
	uint64_t hash;
};

struct hmap {
	struct slot *slots;
	size_t cap; /* power of two */
	size_t n;
};

struct hmap *hmap_new(void)
{
	struct hmap *m = xcalloc(1, sizeof(*m));
	m->cap = 16;
	m->slots = xcalloc(m->cap, sizeof(struct slot));
	return m;
}

struct hmap *hmap_free(struct hmap *m)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].key);
	free(m->slots);
	free(m);
	return NULL;
}

struct hmap *hmap_free_with(struct hmap *m, void (*free_val)(void *))
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key)
			free_val(m->slots[i].val);
	return hmap_free(m);
}

/* Eight bytes at a time (keys are paths and names: tens of bytes),
 * mixed at the end so that the low bits, which pick the slot, depend on
 * every byte. */
static uint64_t hash_key(const char *key)
{
	size_t n = strlen(key);
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	const char *p = key;
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = ((h << 5 | h >> 59) ^ w) * 0x517cc1b727220a95ull;
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, p, n);
		h = ((h << 5 | h >> 59) ^ w) * 0x517cc1b727220a95ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static size_t find(const struct hmap *m, const char *key, uint64_t h)
{
	size_t mask = m->cap - 1, i = h & mask;
	for (;;) {
		const struct slot *s = &m->slots[i];
		if (!s->key || (s->hash == h && strcmp(s->key, key) == 0))
			return i;
		i = (i + 1) & mask;
	}
}

static void resize(struct hmap *m, size_t cap)
{
	struct slot *old = m->slots;
	size_t oldcap = m->cap;
	m->cap = cap;
	m->slots = xcalloc(m->cap, sizeof(struct slot));
	for (size_t i = 0; i < oldcap; i++) {
		if (!old[i].key)
			continue;
		size_t mask = m->cap - 1, j = old[i].hash & mask;
		while (m->slots[j].key)
			j = (j + 1) & mask;
		m->slots[j] = old[i];
	}
	free(old);
}

static void grow(struct hmap *m)
{
	resize(m, m->cap * 2);
}

void hmap_reserve(struct hmap *m, size_t n)
{
	size_t cap = m->cap;
	while ((n + 1) * 4 > cap * 3)
		cap *= 2;
	if (cap != m->cap)
		resize(m, cap);
}

void *hmap_get(const struct hmap *m, const char *key)
{
	uint64_t h = hash_key(key);
	size_t i = find(m, key, h);
	return m->slots[i].key ? m->slots[i].val : NULL;
}

void *hmap_put(struct hmap *m, const char *key, void *val)
{
	if ((m->n + 1) * 4 > m->cap * 3)
		grow(m);
	uint64_t h = hash_key(key);
	size_t i = find(m, key, h);
	struct slot *s = &m->slots[i];
	if (s->key) {
		void *old = s->val;
		s->val = val;
		return old;
	}
	s->key = xstrdup(key);
	s->val = val;
	s->hash = h;
	m->n++;
	return NULL;
}

void *hmap_del(struct hmap *m, const char *key)
{
	uint64_t h = hash_key(key);
	size_t i = find(m, key, h), mask = m->cap - 1;
	if (!m->slots[i].key)
		return NULL;
	void *val = m->slots[i].val;
	free(m->slots[i].key);
	m->slots[i].key = NULL;
	m->n--;
	/* Backward-shift the following cluster so lookups need no tombstones.
	 */
	size_t j = i;
	for (;;) {
		j = (j + 1) & mask;
		struct slot *s = &m->slots[j];
		if (!s->key)
			break;
		size_t home = s->hash & mask;
		bool movable = (i <= j) ? (home <= i || home > j)
					: (home <= i && home > j);
		if (movable) {
			m->slots[i] = *s;
			s->key = NULL;
			i = j;
		}
	}
	return val;
}

size_t hmap_size(const struct hmap *m)
{
	return m->n;
}

bool hmap_next(const struct hmap *m, size_t *iter, const char **ret_key,
	       void **ret_val)
{
	while (*iter < m->cap) {
		const struct slot *s = &m->slots[(*iter)++];
		if (s->key) {
			if (ret_key)
				*ret_key = s->key;
			if (ret_val)
				*ret_val = s->val;
			return true;
		}
	}
	return false;
}
