/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_fulltext VAULT CACHE: the cold full-text build in one process,
 * as vaultd does it at a first start (no cache): the notes index, then
 * the store's texts (vault_fulltext_work, with its read-ahead), then the
 * substrings. CACHE must be an empty folder (the store is made there).
 * Prints the time of each step and the peak RSS; with callgrind, the
 * build's cost without the daemon around it. BENCH_NO_SUBSTRINGS=1
 * stops at full text (what a cold start waits for).
 */
#include "store.h"
#include "util.h"
#include "vault.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_fulltext VAULT CACHE\n");
		return 2;
	}
	struct vault *v;
	char *msg = NULL;
	if (vault_open(argv[1], &v, &msg) < 0) {
		fprintf(stderr, "bench_fulltext: %s\n", msg);
		return 1;
	}
	struct store *st = NULL;
	char *note = NULL;
	uint64_t t0 = now_ns();
	if (store_open(argv[2], vault_root(v), &st, &note) < 0) {
		fprintf(stderr, "bench_fulltext: %s\n", note);
		return 1;
	}
	free(note);
	vault_attach_store(v, st);
	vault_index_all(v, NULL, NULL, NULL);
	uint64_t t1 = now_ns();
	vault_fulltext_work(v);
	uint64_t t2 = now_ns();
	size_t subs =
		getenv("BENCH_NO_SUBSTRINGS") ? 0 : vault_substrings_work(v);
	uint64_t t3 = now_ns();
	struct vault_store_state s;
	vault_store_state(v, &s);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("notes index:  %.3f s\n", (double)(t1 - t0) / 1e9);
	printf("full text:    %.3f s (ready: %s)\n", (double)(t2 - t1) / 1e9,
	       s.ready ? "yes" : "no");
	printf("substrings:   %.3f s (%zu notes)\n", (double)(t3 - t2) / 1e9,
	       subs);
	printf("cache:        %.1f MB\n", (double)s.bytes / 1e6);
	printf("peak RSS:     %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
	vault_free(v);
	free(msg);
	return 0;
}
