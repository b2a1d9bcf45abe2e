/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "check.h"

cJSON *vault_check(struct vault *v)
{
	vault_read_lock(v);
	struct index *ix = vault_index(v);
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	size_t n, ntags, links = 0, broken = 0, orphans = 0;
	struct note *const *all = index_sorted(ix, &n);
	free(index_tags(ix, &ntags));
	cJSON *fmerr = cJSON_CreateArray();
	cJSON *viol = cJSON_CreateArray();
	cJSON *bl = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const struct note *nt = all[i];
		bool out = false;
		for (size_t k = 0; k < nt->nlinks; k++) {
			const struct link *l = &nt->links[k];
			if (!*l->target)
				continue;
			links++;
			out |= l->to && l->to != nt;
			if (link_is_broken(l)) {
				broken++;
				cJSON *o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "source", nt->path);
				cJSON_AddStringToObject(o, "target", l->target);
				cJSON_AddNumberToObject(o, "line", l->line);
				cJSON_AddItemToArray(bl, o);
			}
		}
		if (!out && !nt->incoming.n)
			orphans++;
		if (nt->fm_invalid) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "path", nt->path);
			cJSON_AddNumberToObject(o, "line", nt->fm_err_line);
			cJSON_AddItemToArray(fmerr, o);
		}
		struct sbuf m = {0};
		if (policy_note_violations(pol, ix, nt, &m) > 0) {
			char *save = NULL;
			for (char *line = strtok_r(m.s, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save)) {
				cJSON *o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "path", nt->path);
				const char *msg = strstr(line, ": ");
				cJSON_AddStringToObject(o, "message",
							msg ? msg + 2 : line);
				cJSON_AddItemToArray(viol, o);
			}
		}
		sb_free(&m);
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "vault", vault_root(v));
	cJSON_AddStringToObject(o, "policy",
				pol->from_file ? POLICY_PATH : "defaults");
	cJSON_AddNumberToObject(o, "notes", (double)n);
	cJSON_AddNumberToObject(o, "attachments", (double)index_file_count(ix));
	cJSON_AddNumberToObject(o, "tags", (double)ntags);
	cJSON_AddNumberToObject(o, "links", (double)links);
	cJSON_AddNumberToObject(o, "broken_links", (double)broken);
	cJSON_AddNumberToObject(o, "orphans", (double)orphans);
	cJSON_AddItemToObject(o, "frontmatter_errors", fmerr);
	cJSON_AddItemToObject(o, "policy_violations", viol);
	cJSON_AddItemToObject(o, "broken", bl);
	vault_read_unlock(v);
	return o;
}

static int num(const cJSON *o, const char *k)
{
	return (int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, k));
}

char *vault_check_text(const cJSON *r)
{
	struct sbuf b = {0};
	const cJSON *fe = cJSON_GetObjectItem(r, "frontmatter_errors");
	const cJSON *pv = cJSON_GetObjectItem(r, "policy_violations");
	const cJSON *bl = cJSON_GetObjectItem(r, "broken");
	sb_printf(&b, "vault:              %s\n",
		  cJSON_GetStringValue(cJSON_GetObjectItem(r, "vault")));
	sb_printf(&b, "policy:             %s\n",
		  cJSON_GetStringValue(cJSON_GetObjectItem(r, "policy")));
	sb_printf(&b, "notes:              %d\n", num(r, "notes"));
	sb_printf(&b, "attachments:        %d\n", num(r, "attachments"));
	sb_printf(&b, "tags:               %d\n", num(r, "tags"));
	sb_printf(&b, "links:              %d\n", num(r, "links"));
	sb_printf(&b, "broken links:       %d\n", num(r, "broken_links"));
	sb_printf(&b, "orphans:            %d\n", num(r, "orphans"));
	sb_printf(&b, "frontmatter errors: %d\n", cJSON_GetArraySize(fe));
	sb_printf(&b, "policy violations:  %d\n", cJSON_GetArraySize(pv));
	const cJSON *it;
	cJSON_ArrayForEach(it, pv) sb_printf(
		&b, "  violation  %s: %s\n",
		cJSON_GetStringValue(cJSON_GetObjectItem(it, "path")),
		cJSON_GetStringValue(cJSON_GetObjectItem(it, "message")));
	cJSON_ArrayForEach(it, fe)
		sb_printf(&b, "  bad YAML   %s: line %d\n",
			  cJSON_GetStringValue(cJSON_GetObjectItem(it, "path")),
			  num(it, "line"));
	cJSON_ArrayForEach(it, bl) sb_printf(
		&b, "  broken     %s:%d -> %s\n",
		cJSON_GetStringValue(cJSON_GetObjectItem(it, "source")),
		num(it, "line"),
		cJSON_GetStringValue(cJSON_GetObjectItem(it, "target")));
	return sb_steal(&b);
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static cJSON *sorted_strings(struct ptrvec *pv)
{
	pv_sort(pv, cmp_cstr);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < pv->n; i++) {
		cJSON_AddItemToArray(a, cJSON_CreateString(pv->v[i]));
		free(pv->v[i]);
	}
	pv_free(pv);
	return a;
}

cJSON *vault_graph(struct vault *v)
{
	vault_read_lock(v);
	struct index *ix = vault_index(v);
	size_t n;
	struct note *const *all = index_sorted(ix, &n);
	struct note **byp = xmalloc((n + 1) * sizeof(*byp));
	memcpy(byp, all, n * sizeof(*byp));
	cJSON *notes = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const struct note *nt = byp[i];
		struct ptrvec tags = {0}, out = {0};
		for (size_t k = 0; k < nt->ntags; k++)
			pv_push(&tags, fold_key(nt->tags[k]));
		for (size_t k = 0; k < nt->nlinks; k++) {
			const struct link *l = &nt->links[k];
			if (!*l->target)
				continue;
			pv_push(&out, l->to ? xstrdup(l->to->path)
				      : l->resolved_file
					      ? xasprintf("@%s", l->target)
					      : xasprintf("!%s", l->target));
		}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", nt->path);
		cJSON_AddItemToObject(o, "tags", sorted_strings(&tags));
		cJSON_AddItemToObject(o, "out", sorted_strings(&out));
		cJSON_AddNumberToObject(o, "in", (double)nt->incoming.n);
		cJSON_AddItemToArray(notes, o);
	}
	free(byp);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "count", (double)n);
	cJSON_AddItemToObject(o, "notes", notes);
	vault_read_unlock(v);
	return o;
}
