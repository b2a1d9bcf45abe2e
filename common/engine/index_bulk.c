/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The index's first build (index.h: index_put_all, index_put_notes,
 * index_resolve_all, index_bind_links): every note put into an empty
 * index at once, the links grouped by key in one pass (links_by_key: one
 * bucket per distinct key, each allocated at its size, its links in the
 * order the notes were given; with index_put_notes, when they are bound,
 * the paths and names put meanwhile on two CPUs), then every link bound
 * key by key on all CPUs, the notes of a name looked up once for all the
 * links written with it.
 */
#include "index_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- links grouped by key ------------------------------------------------ */

/* A link, and its key's hash (the high 32 bits) with its place among
 * the links given (the low 32): sorted by it, the links of a key are
 * side by side, in the order they were given. */
struct keyed {
	uint64_t hk;
	struct link *l;
};

static uint64_t key_hash(const char *s, uint32_t at)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (h & 0xffffffff00000000ull) | at;
}

static int cmp_keyed(const void *a, const void *b)
{
	uint64_t x = ((const struct keyed *)a)->hk;
	uint64_t y = ((const struct keyed *)b)->hk;
	return x < y ? -1 : x > y;
}

/* Sorted by hk: a counting sort on the top 18 bits, then each part. */
static struct keyed *sort_keyed(const struct keyed *a, size_t n)
{
	enum { BITS = 18 };
	size_t *at = xcalloc((1u << BITS) + 1, sizeof(size_t));
	for (size_t i = 0; i < n; i++)
		at[(a[i].hk >> (64 - BITS)) + 1]++;
	for (size_t b = 1; b <= (1u << BITS); b++)
		at[b] += at[b - 1];
	struct keyed *s = xmalloc((n + 1) * sizeof(*s));
	for (size_t i = 0; i < n; i++)
		s[at[a[i].hk >> (64 - BITS)]++] = a[i];
	/* at[b] is now where part b + 1 starts. */
	for (size_t b = 0, from = 0; b < (1u << BITS); from = at[b++]) {
		size_t len = at[b] - from, i = from + 1;
		if (len < 2)
			continue;
		/* Most parts hold the links of one key: in order already. */
		while (i < at[b] && s[i - 1].hk < s[i].hk)
			i++;
		if (i == at[b])
			continue;
		if (len > 32) {
			qsort(s + from, len, sizeof(*s), cmp_keyed);
			continue;
		}
		/* A few links: in place. */
		for (; i < at[b]; i++) {
			struct keyed x = s[i];
			size_t k = i;
			for (; k > from && s[k - 1].hk > x.hk; k--)
				s[k] = s[k - 1];
			s[k] = x;
		}
	}
	free(at);
	return s;
}

/* The links of s[from..to) (one hash) in links_by_key: one bucket at its
 * size when they share the key, one by one otherwise (a collision). */
static void add_run(struct hmap *m, const struct keyed *s, size_t from,
		    size_t to)
{
	const char *key = s[from].l->key;
	bool same = true;
	for (size_t i = from + 1; i < to && same; i++)
		same = strcmp(s[i].l->key, key) == 0;
	if (!same || hmap_get(m, key)) {
		for (size_t i = from; i < to; i++)
			ix_mm_add(m, s[i].l->key, s[i].l);
		return;
	}
	struct ptrvec *pv = xcalloc(1, sizeof(*pv));
	pv->cap = to - from;
	pv->v = xmalloc(pv->cap * sizeof(void *));
	for (size_t i = from; i < to; i++)
		pv->v[pv->n++] = s[i].l;
	hmap_put(m, key, pv);
}

struct links_job {
	struct index *ix;
	struct note **notes;
	size_t n;
};

/* Every note's links in links_by_key: one map entry per distinct key
 * rather than a lookup per link. */
static void *links_worker(void *arg)
{
	struct links_job *j = arg;
	size_t n = 0;
	for (size_t i = 0; i < j->n; i++)
		n += j->notes[i]->nlinks;
	/* Places are 32 bits. */
	if (n >= UINT32_MAX) {
		for (size_t i = 0; i < j->n; i++)
			ix_register_links(j->ix, j->notes[i]);
		return NULL;
	}
	struct keyed *a = xmalloc((n + 1) * sizeof(*a));
	size_t k = 0;
	for (size_t i = 0; i < j->n; i++) {
		struct note *nt = j->notes[i];
		for (size_t l = 0; l < nt->nlinks; l++) {
			struct link *ln = &nt->links[l];
			if (!ln->key)
				continue;
			a[k].hk = key_hash(ln->key, (uint32_t)k);
			a[k++].l = ln;
		}
	}
	struct keyed *s = sort_keyed(a, k);
	free(a);
	/* One bucket per distinct hash: the map sized once. */
	size_t runs = 0;
	for (size_t i = 0; i < k; i++)
		runs += !i || (s[i].hk >> 32) != (s[i - 1].hk >> 32);
	hmap_reserve(j->ix->links_by_key,
		     hmap_size(j->ix->links_by_key) + runs);
	for (size_t i = 0; i < k;) {
		size_t e = i + 1;
		while (e < k && (s[e].hk >> 32) == (s[i].hk >> 32))
			e++;
		add_run(j->ix->links_by_key, s, i, e);
		i = e;
	}
	free(s);
	return NULL;
}

void index_put_all(struct index *ix, struct note **notes, size_t n)
{
	if (hmap_size(ix->by_path) || hmap_size(ix->links_by_key)) {
		for (size_t i = 0; i < n; i++)
			index_put_bulk(ix, notes[i]);
		return;
	}
	hmap_reserve(ix->by_path, n);
	hmap_reserve(ix->by_name, n);
	/* The link buckets fill on another CPU meanwhile (other maps). */
	struct links_job j = {ix, notes, n};
	pthread_t th;
	bool threaded =
		n > 1000 && pthread_create(&th, NULL, links_worker, &j) == 0;
	for (size_t i = 0; i < n; i++)
		ix_register_names(ix, notes[i]);
	if (threaded)
		pthread_join(th, NULL);
	else
		links_worker(&j);
	ix->gen++;
}

/* The paths, on another CPU than the names (other maps). */
static void *paths_worker(void *arg)
{
	struct links_job *j = arg;
	for (size_t i = 0; i < j->n; i++)
		hmap_put(j->ix->by_path, j->notes[i]->fold_path, j->notes[i]);
	return NULL;
}

void index_put_notes(struct index *ix, struct note **notes, size_t n)
{
	if (hmap_size(ix->by_path) || hmap_size(ix->links_by_key) ||
	    ix->unkeyed) {
		index_put_all(ix, notes, n);
		free(notes);
		return;
	}
	hmap_reserve(ix->by_path, n);
	hmap_reserve(ix->by_name, n);
	struct links_job j = {ix, notes, n};
	pthread_t th;
	bool threaded =
		n > 1000 && pthread_create(&th, NULL, paths_worker, &j) == 0;
	if (!threaded)
		paths_worker(&j);
	for (size_t i = 0; i < n; i++)
		ix_register_named(ix, notes[i]);
	if (threaded)
		pthread_join(th, NULL);
	ix->unkeyed = notes;
	ix->nunkeyed = n;
	ix->gen++;
}

/* ---- binding ------------------------------------------------------------- */

/* The links of one key, and the notes of that name. */
struct key_links {
	const char *key;
	const struct ptrvec *links;
};

struct resolve_job {
	const struct index *ix;
	struct key_links *keys;
	size_t n;
	atomic_size_t next;
};

/* Targets only: lookups in maps nobody changes meanwhile. The notes of
 * a name are looked up once for all the links written with it. */
static void *resolve_worker(void *arg)
{
	struct resolve_job *j = arg;
	for (;;) {
		size_t from = atomic_fetch_add(&j->next, 256);
		if (from >= j->n)
			break;
		size_t to = from + 256 < j->n ? from + 256 : j->n;
		for (size_t i = from; i < to; i++) {
			const struct ptrvec *names =
				hmap_get(j->ix->by_name, j->keys[i].key);
			const struct ptrvec *pv = j->keys[i].links;
			for (size_t k = 0; k < pv->n; k++) {
				struct link *l = pv->v[k];
				struct note *file;
				l->to = ix_resolve_named(j->ix, names, l,
							 &file);
				l->resolved_file = file != NULL;
			}
		}
	}
	return NULL;
}

/* Every link bound by the resolve workers, key by key. */
static void resolve_keys(struct index *ix)
{
	size_t nk = hmap_size(ix->links_by_key), i = 0, it = 0;
	struct key_links *keys = xmalloc((nk + 1) * sizeof(*keys));
	const char *k;
	void *v;
	while (hmap_next(ix->links_by_key, &it, &k, &v))
		keys[i++] = (struct key_links){k, v};
	struct resolve_job job = {.ix = ix, .keys = keys, .n = nk};
	atomic_init(&job.next, 0);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nth = nk < 2000 ? 0 : ncpu > 8 ? 7 : ncpu > 1 ? ncpu - 1 : 0;
	pthread_t th[8];
	size_t started = 0;
	for (size_t t = 0; t < nth; t++)
		if (pthread_create(&th[started], NULL, resolve_worker, &job) ==
		    0)
			started++;
	resolve_worker(&job);
	for (size_t t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	free(keys);
}

/*
 * Every link bound afresh. The lookups (most of the work) run on all CPUs;
 * the incoming lists are then filled in one pass, in the same order as
 * binding one link after another would.
 */
void index_bind_links(struct index *ix)
{
	if (ix->unkeyed) {
		struct links_job j = {ix, ix->unkeyed, ix->nunkeyed};
		links_worker(&j);
		free(ix->unkeyed);
		ix->unkeyed = NULL;
		ix->nunkeyed = 0;
	}
	/* Every link's slot allocated at once (1,000,000 and more). */
	size_t nlinks = 0, it = 0;
	void *v;
	while (hmap_next(ix->by_path, &it, NULL, &v))
		nlinks += ((struct note *)v)->nlinks;
	struct ptrvec all = {.v = xmalloc((nlinks + 1) * sizeof(void *)),
			     .cap = nlinks + 1};
	it = 0;
	while (hmap_next(ix->by_path, &it, NULL, &v)) {
		struct note *n = v;
		pv_free(&n->incoming);
		for (size_t i = 0; i < n->nlinks; i++)
			pv_push(&all, &n->links[i]);
	}
	/* The links with a key are in links_by_key; the others link to
	 * their own note ("[[#Heading]]"). */
	resolve_keys(ix);
	/* Each incoming list allocated once, at its size. */
	for (size_t i = 0; i < all.n; i++) {
		struct link *l = all.v[i];
		if (!l->key) {
			struct note *file;
			l->to = ix_resolve_key(ix, NULL, l->src, l->target,
					       l->kind, NULL, &file);
			l->resolved_file = file != NULL;
		}
		if (l->to && l->to != l->src)
			l->to->incoming.cap++;
	}
	it = 0;
	while (hmap_next(ix->by_path, &it, NULL, &v)) {
		struct note *n = v;
		if (n->incoming.cap > 0)
			n->incoming.v =
				xrealloc(n->incoming.v,
					 n->incoming.cap * sizeof(void *));
	}
	for (size_t i = 0; i < all.n; i++) {
		struct link *l = all.v[i];
		if (l->to && l->to != l->src)
			l->to->incoming.v[l->to->incoming.n++] = l;
	}
	pv_free(&all);
}

void index_resolve_all(struct index *ix)
{
	index_bind_links(ix);
	ix->gen++;
}
