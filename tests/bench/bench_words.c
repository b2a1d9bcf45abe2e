/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_words CACHE_DIR VAULT ROUNDS QUERY...: what a write costs the
 * next full-text search of common words, in process, over the search
 * index vaultd built for VAULT in CACHE_DIR. For each query: its first
 * search (after one of a word no note has, which opens a connection),
 * the same again, then ROUNDS times a note that has the query's first
 * word is written (longer by a word, then as it was: the index is left
 * as it was found) and the query searched after each write; the median
 * of those is printed, in ms.
 */
#include "note.h"
#include "query.h"
#include "store.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* query's page of 10, as search_notes asks it: its time in ms (< 0 on
 * error); *ret_path: its first hit's path, when asked. */
static double timed(struct store *s, const char *query, char **ret_path)
{
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
	if (ret_path)
		*ret_path = n ? xstrdup(h[0].path) : NULL;
	store_hits_free(h, n);
	return ms;
}

/* The note at path (in root) written to the index with text. */
static int put(struct store *s, const char *path, const char *text)
{
	struct note *n = note_new(path, text, strlen(text), 0);
	int r = store_begin(s);
	if (r == 0)
		r = store_put(s, n, text, strlen(text));
	if (r == 0)
		r = store_commit(s);
	note_free(n);
	return r;
}

/* The whole file at path (NUL-terminated), or NULL. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct sbuf b = {0};
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_add(&b, buf, n);
	fclose(f);
	sb_puts(&b, "");
	return sb_steal(&b);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One query: first, again, and after writes to the note at path. */
static int one(struct store *s, const char *root, const char *query, int rounds)
{
	_cleanup_free_ char *path = NULL;
	double first = timed(s, query, &path);
	double again = timed(s, query, NULL);
	if (first < 0 || again < 0 || !path)
		return -1;
	_cleanup_free_ char *file = xasprintf("%s/%s", root, path);
	_cleanup_free_ char *text = slurp(file);
	if (!text)
		return -1;
	_cleanup_free_ char *longer = xasprintf("%s\nfiller\n", text);
	double *after = xcalloc((size_t)rounds * 2, sizeof(*after));
	int k = 0, r = 0;
	for (int i = 0; i < rounds && r == 0; i++) {
		for (int j = 0; j < 2 && r == 0; j++) {
			r = put(s, path, j ? text : longer);
			after[k] = r == 0 ? timed(s, query, NULL) : -1;
			r = after[k++] < 0 ? -1 : r;
		}
	}
	if (r == 0) {
		qsort(after, (size_t)k, sizeof(*after), cmp_double);
		printf("%-24s first %8.3f ms  again %7.3f ms  after a write "
		       "%8.3f ms (median of %d)\n",
		       query, first, again, after[k / 2], k);
	}
	free(after);
	return r;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: bench_words CACHE_DIR VAULT ROUNDS"
				" QUERY...\n");
		return 2;
	}
	struct store *s = NULL;
	char *note = NULL;
	if (store_open(argv[1], argv[2], &s, &note) < 0 || note) {
		fprintf(stderr, "bench_words: cannot open %s%s%s\n", argv[1],
			note ? ": " : "", note ? note : "");
		return 1;
	}
	int rounds = atoi(argv[3]), r = 0;
	if (timed(s, "qqzzxw", NULL) < 0)
		r = 1;
	for (int i = 4; i < argc && r == 0; i++)
		r = one(s, argv[2], argv[i], rounds > 0 ? rounds : 1) ? 1 : 0;
	store_close(s);
	return r;
}
