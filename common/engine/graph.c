/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "graph.h"
#include "note_int.h"

bool graph_link_counts(const struct link *l)
{
	return *l->target;
}

const struct link *graph_next_link(const struct note *n, size_t *k)
{
	return *k < n->nlinks ? &n->links[(*k)++] : NULL;
}

struct link *const *graph_incoming(const struct note *n, size_t *ret_n)
{
	*ret_n = n->incoming.n;
	return (struct link *const *)n->incoming.v;
}

struct ptrvec graph_backlinks(const struct note *n)
{
	struct ptrvec srcs = {0};
	for (size_t i = 0; i < n->incoming.n; i++) {
		const struct link *l = n->incoming.v[i];
		bool seen = false;
		for (size_t j = 0; j < srcs.n && !seen; j++)
			seen = srcs.v[j] == l->src;
		if (!seen)
			pv_push(&srcs, l->src);
	}
	return srcs;
}

bool graph_is_orphan(const struct note *n)
{
	if (n->incoming.n)
		return false;
	const struct link *l;
	for (size_t k = 0; (l = graph_next_link(n, &k));)
		if (l->to && l->to != n)
			return false;
	return true;
}

const struct link *graph_next_broken(const struct note *n, size_t *k)
{
	const struct link *l;
	while ((l = graph_next_link(n, k)))
		if (graph_link_counts(l) && link_is_broken(l))
			return l;
	return NULL;
}
