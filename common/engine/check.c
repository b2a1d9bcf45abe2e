/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "check.h"
#include "graph.h"

#define PUSH(arr, n, ...)                                            \
	do {                                                         \
		(arr) = xrealloc((arr), ((n) + 1) * sizeof(*(arr))); \
		(arr)[(n)++] = (__typeof__(*(arr))){__VA_ARGS__};    \
	} while (0)

/* Each line of policy_note_violations()'s "name: message" text. */
static void add_violations(struct vault_report *r, const struct note *nt,
			   char *text)
{
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *msg = strstr(line, ": ");
		PUSH(r->violations, r->nviolations, xstrdup(note_path(nt)),
		     xstrdup(msg ? msg + 2 : line));
	}
}

/* A note's links (graph.h says which count), its broken ones listed. */
static void check_links(struct vault_report *r, const struct note *nt)
{
	const struct link *l;
	for (size_t k = 0; (l = graph_next_link(nt, &k));)
		r->links += graph_link_counts(l);
	for (size_t k = 0; (l = graph_next_broken(nt, &k));)
		PUSH(r->broken, r->nbroken, xstrdup(note_path(nt)),
		     xstrdup(l->target), l->line);
}

void vault_check(struct vault *v, struct vault_report *ret)
{
	struct vault_report r = {0};
	vault_read_lock(v);
	struct index *ix = vault_index(v);
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	size_t n;
	struct note *const *all = index_sorted(ix, &n);
	free(index_tags(ix, &r.tags));
	for (size_t i = 0; i < n; i++) {
		const struct note *nt = all[i];
		check_links(&r, nt);
		r.orphans += graph_is_orphan(nt);
		if (note_fm_invalid(nt))
			PUSH(r.fm_errors, r.nfm_errors, xstrdup(note_path(nt)),
			     note_fm_error_line(nt));
		struct sbuf m = {0};
		if (policy_note_violations(pol, ix, nt, &m) > 0)
			add_violations(&r, nt, m.s);
		sb_free(&m);
	}
	r.vault = xstrdup(vault_root(v));
	r.policy = pol->from_file ? POLICY_PATH : "defaults";
	r.notes = n;
	r.attachments = index_file_count(ix);
	vault_read_unlock(v);
	*ret = r;
}

void vault_report_clear(struct vault_report *r)
{
	for (size_t i = 0; i < r->nbroken; i++) {
		free(r->broken[i].source);
		free(r->broken[i].target);
	}
	for (size_t i = 0; i < r->nfm_errors; i++)
		free(r->fm_errors[i].path);
	for (size_t i = 0; i < r->nviolations; i++) {
		free(r->violations[i].path);
		free(r->violations[i].message);
	}
	free(r->broken);
	free(r->fm_errors);
	free(r->violations);
	free(r->vault);
	*r = (struct vault_report){0};
}
