/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_index DIR [CACHE]: index build time and peak RSS for the vault in
 * DIR, and the cost of one incremental update of the link graph. With
 * CACHE (a folder with the vault's index.sqlite, made by vaultd's
 * --cache), the build is a warm start: unchanged notes come from it.
 * Prints one figure per line; goals from the engine issue alongside.
 */
#include "index.h"
#include "util.h"
#include "vault.h"
#include "note_int.h" /* white-box: the note's fields */
#include "store.h"

#include <stdio.h>
#include <sys/resource.h>

static long peak_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_index DIR [CACHE]\n");
		return 2;
	}
	struct vault *v;
	char *msg = NULL;
	if (vault_open(argv[1], &v, &msg) < 0) {
		fprintf(stderr, "bench_index: %s\n", msg);
		return 1;
	}
	uint64_t t0 = now_ns();
	if (argc > 2) {
		struct store *st = NULL;
		char *note = NULL;
		if (store_open(argv[2], vault_root(v), &st, &note) < 0) {
			fprintf(stderr, "bench_index: %s\n", note);
			return 1;
		}
		free(note);
		vault_attach_store(v, st);
	}
	vault_index_all(v, NULL, NULL, NULL);
	double secs = (double)(now_ns() - t0) / 1e9;
	long rss = peak_rss_kb();

	struct index *ix = vault_index(v);
	size_t n, it = 0, links = 0, broken = 0;
	uint64_t bytes = 0;
	struct note *nt;
	while (index_next(ix, &it, &nt)) {
		bytes += (uint64_t)nt->size;
		links += nt->nlinks;
		for (size_t k = 0; k < nt->nlinks; k++)
			broken += link_is_broken(&nt->links[k]);
	}
	n = index_count(ix);
	double mb = (double)bytes / (1024.0 * 1024.0);
	double budget = 2.0 * mb + 64.0;
	printf("notes:            %zu (%zu links, %zu broken)\n", n, links,
	       broken);
	printf("markdown:         %.1f MB\n", mb);
	printf("index build:      %.3f s\n", secs);
	if (argc > 2) {
		struct vault_store_state st;
		vault_store_state(v, &st);
		printf("from the cache:   %zu unchanged, %zu read\n", st.cached,
		       st.parsed);
	}
	printf("peak RSS:         %.1f MB (goal <= 2 x markdown + 64 MB = %.1f MB)\n",
	       (double)rss / 1024.0, budget);

	/* Incremental update: re-parse one note and swap it into the graph. */
	size_t samples = n < 200 ? n : 200, got = 0;
	uint64_t *ts = xcalloc(samples + 1, sizeof(uint64_t));
	size_t sorted_n;
	struct note *const *all = index_sorted(ix, &sorted_n);
	char **pick = xcalloc(samples + 1, sizeof(char *));
	for (size_t i = 0; i < samples; i++)
		pick[i] = xstrdup(all[(i * 7919) % sorted_n]->path);
	for (size_t i = 0; i < samples; i++) {
		struct note *cur = index_by_path(ix, pick[i]);
		char *text = NULL;
		size_t len;
		if (!cur || vault_read_text(v, cur, &text, &len) < 0)
			continue;
		uint64_t a = now_ns();
		struct note *fresh =
			note_new(pick[i], text, len, cur->read_flags);
		index_put(ix, fresh);
		ts[got++] = now_ns() - a;
		free(text);
	}
	qsort(ts, got, sizeof(uint64_t), cmp_u64);
	if (got)
		printf("one-note update:  median %.1f us, p95 %.1f us (parse + graph update)\n",
		       (double)ts[got / 2] / 1e3,
		       (double)ts[(got * 95) / 100] / 1e3);
	for (size_t i = 0; i < samples; i++)
		free(pick[i]);
	free(pick);
	free(ts);
	vault_free(v);
	free(msg);
	return 0;
}
