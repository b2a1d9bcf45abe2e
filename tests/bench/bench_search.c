/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_search CACHE_DIR VAULT QUERIES [REPS [DUMP]]: full-text search
 * latency in process, without the MCP and control-socket hops, over the
 * search index vaultd built for VAULT in CACHE_DIR. QUERIES holds one
 * query a line, "kind<TAB>query" (the mixed set of run-search-bench.sh);
 * each runs REPS times (default 5, the page of 10 as search_notes asks
 * it), and the median and p95 per kind and overall are printed. With
 * DUMP, every query's total and page (path, score, snippet) is written
 * there, to compare the answers of two builds. BENCH_SEARCH_EACH set:
 * each query's time is printed too. BENCH_SEARCH_WARM set: the commonest
 * words are read ahead first (store_warm_new, as vaultd does once search
 * is ready), and how long that took is printed. At the end, how many
 * common words' notes are kept in memory, and their bytes.
 */
#include "query.h"
#include "store.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_QUERIES 4096
#define MAX_KINDS 32

struct kind {
	char *name;
	double *t;
	size_t n;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, int p)
{
	qsort(v, n, sizeof(*v), cmp_double);
	size_t i = n * (size_t)p / 100;
	return v[i < n ? i : n - 1];
}

static struct kind *kind_of(struct kind *k, size_t *nk, const char *name)
{
	for (size_t i = 0; i < *nk; i++)
		if (!strcmp(k[i].name, name))
			return &k[i];
	if (*nk == MAX_KINDS)
		return NULL;
	k[*nk] = (struct kind){xstrdup(name),
			       xcalloc(MAX_QUERIES, sizeof(double)), 0};
	return &k[(*nk)++];
}

/* One query, reps times; its best-of-reps time in ms, or < 0. */
static double run(struct store *s, const char *query, int reps, FILE *dump)
{
	double best = -1;
	for (int i = 0; i < reps; i++) {
		struct qnode *q = NULL;
		char *msg = NULL;
		if (query_parse(query, &q, &msg) < 0) {
			fprintf(stderr, "%s: %s\n", query, msg);
			free(msg);
			return -1;
		}
		struct store_hit *h = NULL;
		size_t n = 0, total = 0;
		uint64_t t0 = now_ns();
		int r = store_search(s, q, false, 0, 10, &h, &n, &total, &msg);
		double ms = (double)(now_ns() - t0) / 1e6;
		query_free(q);
		if (r < 0) {
			fprintf(stderr, "%s: %s\n", query, msg);
			free(msg);
			return -1;
		}
		if (best < 0 || ms < best)
			best = ms;
		if (dump && i == 0) {
			fprintf(dump, "## %s (total %zu)\n", query, total);
			for (size_t k = 0; k < n; k++)
				fprintf(dump, "%s\t%.6f\t%s\n", h[k].path,
					h[k].score, h[k].snippet);
		}
		store_hits_free(h, n);
	}
	return best;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: bench_search CACHE_DIR VAULT QUERIES"
				" [REPS [DUMP]]\n");
		return 2;
	}
	bool each = getenv("BENCH_SEARCH_EACH") != NULL;
	int reps = argc > 4 ? atoi(argv[4]) : 5;
	FILE *dump = argc > 5 ? fopen(argv[5], "w") : NULL;
	FILE *in = fopen(argv[3], "r");
	struct store *s = NULL;
	char *note = NULL;
	if (!in || store_open(argv[1], argv[2], &s, &note) < 0) {
		fprintf(stderr, "bench_search: cannot open %s or %s\n", argv[3],
			argv[1]);
		return 1;
	}
	if (note) {
		/* The index was not vaultd's for this vault (and is now
		 * empty): VAULT must be named as vaultd names it. */
		fprintf(stderr, "bench_search: %s\n", note);
		return 1;
	}
	if (getenv("BENCH_SEARCH_WARM")) {
		uint64_t t0 = now_ns();
		struct store_warm *w = store_warm_new(s);
		size_t n = store_warm_words(w);
		while (store_warm_step(s, w) > 0)
			;
		store_warm_free(w);
		printf("read ahead: %zu words in %.1f ms\n", n,
		       (double)(now_ns() - t0) / 1e6);
	}
	struct kind kinds[MAX_KINDS + 1];
	size_t nk = 0;
	struct kind *all = kind_of(kinds, &nk, "all");
	char line[4096];
	while (fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = 0;
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = 0;
		struct kind *k = kind_of(kinds, &nk, line);
		double ms = run(s, tab + 1, reps, dump);
		if (ms < 0 || !k || all->n == MAX_QUERIES)
			return 1;
		if (each)
			printf("%8.3f ms  %s\n", ms, tab + 1);
		k->t[k->n++] = ms;
		all->t[all->n++] = ms;
	}
	for (size_t i = 0; i < nk; i++) {
		printf("%-14s median %7.3f ms  p95 %7.3f ms  max %7.3f ms\n",
		       kinds[i].name, pct(kinds[i].t, kinds[i].n, 50),
		       pct(kinds[i].t, kinds[i].n, 95),
		       pct(kinds[i].t, kinds[i].n, 100));
		free(kinds[i].name);
		free(kinds[i].t);
	}
	size_t kept, bytes;
	store_words_kept(s, &kept, &bytes);
	printf("words kept: %zu in %.1f MiB\n", kept,
	       (double)bytes / (1 << 20));
	if (dump)
		fclose(dump);
	fclose(in);
	store_close(s);
	free(note);
	return 0;
}
