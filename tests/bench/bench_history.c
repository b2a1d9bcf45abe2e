/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_history DIR [EDITS]: the cost of note history on the vault in DIR
 * (a copy: it is written to). Prints:
 *   - the first recording of every note (the first start),
 *   - the median and p95 time of a small edit (append_note through the
 *     tool table) without history and with it: the difference is what
 *     history adds to a write (recording the new text),
 *   - the median and p95 time of a commit when every edit is committed on
 *     its own (the worst case; vaultd batches writes for 2 s, in its own
 *     thread, off the write path),
 *   - the history's size on disk after EDITS (10,000) edits, 1,000 of them
 *     to one note,
 *   - the median time of get_note_history on that note (1,000 versions).
 * Goals (history issue): <= 1 ms added to a write, get_note_history
 * <= 20 ms.
 */
#include "history.h"
#include "index.h"
#include "tools.h"
#include "util.h"
#include "vault.h"
#include "note_int.h" /* white-box: the note's fields */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(uint64_t *v, size_t n, double p)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	size_t i = (size_t)(p * (double)(n - 1));
	return (double)v[i] / 1e6;
}

/* One append_note to note; its time in ns. */
static uint64_t edit(struct vault *v, const char *note, size_t i)
{
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "name", note);
	char text[64];
	snprintf(text, sizeof(text), "edit %zu", i);
	cJSON_AddStringToObject(a, "text", text);
	struct tool_result r = {0};
	uint64_t t0 = now_ns();
	tools_call(v, "append_note", a, "mcp", &r);
	uint64_t dt = now_ns() - t0;
	if (r.is_error) {
		fprintf(stderr, "bench_history: append_note %s: %s\n", note,
			r.text);
		exit(1);
	}
	tool_result_clear(&r);
	cJSON_Delete(a);
	return dt;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_history DIR [EDITS]\n");
		return 2;
	}
	size_t edits = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000;
	struct vault *v;
	char *msg = NULL;
	if (vault_open(argv[1], &v, &msg) < 0) {
		fprintf(stderr, "bench_history: %s\n", msg);
		return 1;
	}
	vault_index_all(v, NULL, NULL, NULL);
	size_t nnotes;
	struct note *const *all = index_sorted(vault_index(v), &nnotes);
	char **names = xcalloc(nnotes, sizeof(*names));
	for (size_t i = 0; i < nnotes; i++)
		names[i] = xstrdup(all[i]->path);
	const char *hot = names[nnotes / 2];

	srand(7);
	struct history *h;
	if (history_open(vault_rootfd(v), vault_root(v), &h, &msg) < 0) {
		fprintf(stderr, "bench_history: %s\n", msg);
		return 1;
	}
	vault_attach_history(v, h);
	/* As vault_history_scan() does it: the reading first, then what is
	 * left with writers waiting. */
	struct history_file *files = xcalloc(nnotes, sizeof(*files));
	for (size_t i = 0; i < nnotes; i++)
		files[i] = (struct history_file){all[i]->path, all[i]->mtime_ns,
						 all[i]->size, all[i]->ino};
	uint64_t t0 = now_ns();
	history_prepare(h, files, nnotes);
	double prep_s = (double)(now_ns() - t0) / 1e9;
	t0 = now_ns();
	vault_write_lock(v);
	int changed = history_scan(h, files, nnotes);
	vault_write_unlock(v);
	double first_s = (double)(now_ns() - t0) / 1e9;
	free(files);
	t0 = now_ns();
	history_pack(h);
	double pack_s = (double)(now_ns() - t0) / 1e9;
	size_t versions;
	uint64_t bytes;
	history_stats(h, &versions, &bytes);
	printf("first recording of %zu notes (%d new): read in %.2f s "
	       "(writers go on), committed in %.2f s (writers wait), packed "
	       "in %.2f s (in the background): %.1f MB\n",
	       nnotes, changed, prep_s, first_s, pack_s, (double)bytes / 1e6);

	/* Edits with and without history, interleaved (the same disk, the
	 * same moment); 1 in 10 of those with history goes to one note. */
	uint64_t *base = xcalloc(edits, sizeof(*base));
	size_t base_n = edits;
	uint64_t *with = xcalloc(edits, sizeof(*with));
	uint64_t *commit = xcalloc(edits, sizeof(*commit));
	uint64_t pack_ns = 0;
	size_t packs = 0;
	for (size_t i = 0; i < edits; i++) {
		const char *n =
			i % 10 == 0 ? hot : names[(size_t)rand() % nnotes];
		vault_attach_history(v, NULL);
		base[i] = edit(v, names[(size_t)rand() % nnotes], i);
		vault_attach_history(v, h);
		with[i] = edit(v, n, i);
		uint64_t c0 = now_ns();
		if (history_commit(h, true) < 0) {
			fprintf(stderr, "bench_history: %s\n",
				history_error(h));
			return 1;
		}
		commit[i] = now_ns() - c0;
		/* vaultd packs in its history thread, off the write path. */
		if (history_pack_due(h)) {
			uint64_t p0 = now_ns();
			if (history_pack(h) < 0) {
				fprintf(stderr, "bench_history: %s\n",
					history_error(h));
				return 1;
			}
			pack_ns += now_ns() - p0;
			packs++;
		}
	}
	double b50 = pct(base, base_n, 0.5), b95 = pct(base, base_n, 0.95);
	double w50 = pct(with, edits, 0.5), w95 = pct(with, edits, 0.95);
	printf("small edit without history: median %.3f ms, p95 %.3f ms\n", b50,
	       b95);
	printf("small edit with history:    median %.3f ms, p95 %.3f ms "
	       "(history adds %.3f ms median; goal <= 1 ms)\n",
	       w50, w95, w50 - b50);
	printf("commit, one per edit (worst case): median %.3f ms, p95 %.3f "
	       "ms; %zu packs, %.1f ms each on average\n",
	       pct(commit, edits, 0.5), pct(commit, edits, 0.95), packs,
	       packs ? (double)pack_ns / 1e6 / (double)packs : 0.0);
	history_stats(h, &versions, &bytes);
	printf("after %zu edits: %zu versions, %.1f MB on disk\n", edits,
	       versions, (double)bytes / 1e6);

	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "name", hot);
	uint64_t q[200];
	size_t nver = 0;
	for (size_t i = 0; i < 200; i++) {
		struct tool_result r = {0};
		uint64_t q0 = now_ns();
		tools_call(v, "get_note_history", a, "mcp", &r);
		q[i] = now_ns() - q0;
		if (r.is_error) {
			fprintf(stderr, "bench_history: %s\n", r.text);
			return 1;
		}
		tool_result_clear(&r);
	}
	struct history_version *hv;
	size_t hn, total;
	history_log(h, hot, 1, &hv, &hn, &total);
	history_versions_free(hv, hn);
	nver = total;
	printf("get_note_history on a note with %zu versions: median %.3f "
	       "ms, p95 %.3f ms (goal <= 20 ms)\n",
	       nver, pct(q, 200, 0.5), pct(q, 200, 0.95));
	cJSON_Delete(a);

	history_stop(h);
	vault_attach_history(v, NULL);
	history_free(h);
	vault_free(v);
	for (size_t i = 0; i < nnotes; i++)
		free(names[i]);
	free(names);
	free(base);
	free(with);
	free(commit);
	free(msg);
	return 0;
}
