/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "shape.h"
#include "graph.h"

static cJSON *strings_json(char *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return a;
}

/* A dry run's files: {"path", "to"?, "diff", "links_updated"?}. */
static void add_changes(cJSON *o, const struct vault_moved *m)
{
	cJSON *files = cJSON_AddArrayToObject(o, "files");
	for (size_t i = 0; i < m->nchanges; i++) {
		const struct vault_change *c = &m->changes[i];
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "path", c->path);
		if (c->to)
			cJSON_AddStringToObject(f, "to", c->to);
		cJSON_AddStringToObject(f, "diff", c->diff);
		if (c->links >= 0)
			cJSON_AddNumberToObject(f, "links_updated", c->links);
		cJSON_AddItemToArray(files, f);
	}
}

/* delete_note: the note, where it went, the links; a dry run's plan. */
static cJSON *trashed_json(const struct vault_moved *m)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", m->old_name);
	cJSON_AddStringToObject(o, "path", m->old_path);
	cJSON_AddStringToObject(o, "trash_path", m->new_path);
	cJSON_AddStringToObject(o, "delete_links",
				m->keep_links ? "keep" : "mark");
	cJSON_AddItemToObject(o, "files_updated",
			      strings_json(m->updated, m->nupdated));
	cJSON_AddNumberToObject(o, "links_updated", m->links);
	if (m->warning)
		cJSON_AddStringToObject(o, "warning", m->warning);
	cJSON_AddBoolToObject(o, "dry_run", m->dry_run);
	if (!m->dry_run)
		return o;
	cJSON *plan = cJSON_AddObjectToObject(o, "plan");
	cJSON_AddStringToObject(plan, "move", m->old_path);
	cJSON_AddStringToObject(plan, "to", m->new_path);
	cJSON_AddItemToObject(plan, "files_to_update",
			      strings_json(m->updated, m->nupdated));
	cJSON_AddNumberToObject(plan, "links_to_update", m->links);
	add_changes(o, m);
	return o;
}

cJSON *moved_json(const struct vault_moved *m)
{
	if (m->kind == VAULT_MOVE_TRASH)
		return trashed_json(m);
	cJSON *o = cJSON_CreateObject();
	if (m->kind == VAULT_MOVE_NOTE) {
		cJSON_AddStringToObject(o, "old_name", m->old_name);
		cJSON_AddStringToObject(o, "new_name", m->new_name);
	}
	cJSON_AddStringToObject(o, "old_path", m->old_path);
	cJSON_AddStringToObject(o, "new_path", m->new_path);
	if (m->kind == VAULT_MOVE_FOLDER) {
		cJSON_AddNumberToObject(o, "notes_moved",
					(double)m->notes_moved);
		cJSON_AddNumberToObject(o, "files_moved",
					(double)m->files_moved);
	}
	cJSON_AddItemToObject(o, "files_updated",
			      strings_json(m->updated, m->nupdated));
	cJSON_AddNumberToObject(o, "links_updated", m->links);
	cJSON_AddBoolToObject(o, "dry_run", m->dry_run);
	if (m->warning)
		cJSON_AddStringToObject(o, "warning", m->warning);
	if (m->dry_run)
		add_changes(o, m);
	return o;
}

cJSON *violations_json(const struct vault_violation *a, size_t n)
{
	cJSON *out = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const struct vault_violation *r = &a[i];
		const char *keys[] = {"time",	 "source", "path",
				      "message", "action", "rejected_text"};
		const char *vals[] = {r->time,	  r->source, r->path,
				      r->message, r->action, r->rejected_text};
		cJSON *o = cJSON_CreateObject();
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
			if (vals[k])
				cJSON_AddStringToObject(o, keys[k], vals[k]);
		cJSON_AddItemToArray(out, o);
	}
	return out;
}

cJSON *policy_to_json(const struct policy *p, const struct index *ix)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "source",
				p->from_file ? POLICY_PATH : "defaults");
	_cleanup_strv_free_ char **allowed = policy_allowed_tags(p, ix);
	cJSON *a = cJSON_AddArrayToObject(o, "allowed_tags");
	for (char **t = allowed; *t; t++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*t));
	cJSON *e = cJSON_AddArrayToObject(o, "explicit_allowed_tags");
	for (char **t = p->allowed_tags; t && *t; t++)
		cJSON_AddItemToArray(e, cJSON_CreateString(*t));
	cJSON *rules = cJSON_AddArrayToObject(o, "tag_rules");
	for (size_t i = 0; i < p->nrules; i++) {
		const struct tag_rule *r = &p->rules[i];
		cJSON *ro = cJSON_CreateObject();
		cJSON_AddStringToObject(ro, "tag", r->tag);
		if (r->name_prefix)
			cJSON_AddStringToObject(ro, "name_prefix",
						r->name_prefix);
		cJSON *req = cJSON_AddArrayToObject(ro, "requires");
		for (char **k = r->requires; k && *k; k++)
			cJSON_AddItemToArray(req, cJSON_CreateString(*k));
		cJSON_AddStringToObject(ro, "message", r->message);
		cJSON_AddItemToArray(rules, ro);
	}
	cJSON_AddStringToObject(o, "on_violation", p->warn ? "warn" : "reject");
	cJSON_AddStringToObject(o, "delete_links",
				p->keep_links ? "keep" : "mark");
	cJSON_AddBoolToObject(o, "legacy_properties", p->legacy_properties);
	cJSON *ig = cJSON_AddArrayToObject(o, "ignore");
	for (char **g = p->ignore; g && *g; g++)
		cJSON_AddItemToArray(ig, cJSON_CreateString(*g));
	cJSON_AddStringToObject(
		o, "new_tags",
		"Tags must already exist in the vault or be listed in "
		"allowed_tags; a vault with no tags at all accepts its first "
		"tags.");
	return o;
}

cJSON *vault_check_json(struct vault *v)
{
	struct vault_report r;
	vault_check(v, &r);
	cJSON *fmerr = cJSON_CreateArray();
	cJSON *viol = cJSON_CreateArray();
	cJSON *bl = cJSON_CreateArray();
	for (size_t i = 0; i < r.nbroken; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "source", r.broken[i].source);
		cJSON_AddStringToObject(o, "target", r.broken[i].target);
		cJSON_AddNumberToObject(o, "line", r.broken[i].line);
		cJSON_AddItemToArray(bl, o);
	}
	for (size_t i = 0; i < r.nfm_errors; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", r.fm_errors[i].path);
		cJSON_AddNumberToObject(o, "line", r.fm_errors[i].line);
		cJSON_AddItemToArray(fmerr, o);
	}
	for (size_t i = 0; i < r.nviolations; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", r.violations[i].path);
		cJSON_AddStringToObject(o, "message", r.violations[i].message);
		cJSON_AddItemToArray(viol, o);
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "vault", r.vault);
	cJSON_AddStringToObject(o, "policy", r.policy);
	cJSON_AddNumberToObject(o, "notes", (double)r.notes);
	cJSON_AddNumberToObject(o, "attachments", (double)r.attachments);
	cJSON_AddNumberToObject(o, "tags", (double)r.tags);
	cJSON_AddNumberToObject(o, "links", (double)r.links);
	cJSON_AddNumberToObject(o, "broken_links", (double)r.nbroken);
	cJSON_AddNumberToObject(o, "orphans", (double)r.orphans);
	cJSON_AddItemToObject(o, "frontmatter_errors", fmerr);
	cJSON_AddItemToObject(o, "policy_violations", viol);
	cJSON_AddItemToObject(o, "broken", bl);
	vault_report_clear(&r);
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

cJSON *vault_graph_json(struct vault *v)
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
		for (size_t k = 0; k < note_ntags(nt); k++)
			pv_push(&tags, fold_key(note_tag(nt, k)));
		const struct link *l;
		for (size_t k = 0; (l = graph_next_link(nt, &k));) {
			if (!graph_link_counts(l))
				continue;
			pv_push(&out, l->to ? xstrdup(note_path(l->to))
				      : l->resolved_file
					      ? xasprintf("@%s", l->target)
					      : xasprintf("!%s", l->target));
		}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", note_path(nt));
		cJSON_AddItemToObject(o, "tags", sorted_strings(&tags));
		cJSON_AddItemToObject(o, "out", sorted_strings(&out));
		size_t nin;
		graph_incoming(nt, &nin);
		cJSON_AddNumberToObject(o, "in", (double)nin);
		cJSON_AddItemToArray(notes, o);
	}
	free(byp);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "count", (double)n);
	cJSON_AddItemToObject(o, "notes", notes);
	vault_read_unlock(v);
	return o;
}
