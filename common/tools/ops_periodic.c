/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Periodic notes and templates as tools: periodic_note and
 * append_periodic_note find (and make) the note for a date where the
 * vault's settings put it, and create_note's template is read and
 * filled here. Every write goes through ops_write.c, so the guard sees
 * it like any other.
 */
#include "frontmatter.h"
#include "history.h"
#include "markdown.h"
#include "periodic.h"
#include "tools.h"
#include "u8.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>

/* The longest text periodic_note returns; read_note pages a longer
 * note. */
#define PERIODIC_TEXT_MAX (256u << 10)

static void periodic_conf_clearp(struct periodic_conf *c)
{
	periodic_conf_clear(c);
}
static void templates_conf_clearp(struct templates_conf *c)
{
	templates_conf_clear(c);
}
#define _cleanup_pconf_ _cleanup_(periodic_conf_clearp)
#define _cleanup_tconf_ _cleanup_(templates_conf_clearp)

/* A setting that cannot be used: the message from periodic.c. */
static int settings_fail(struct tool_ctx *c, int r, char *msg)
{
	int e = op_fail(c, r == -ENOENT ? -ENOENT : -EINVAL, "%s",
			msg ? msg : strerror(-r));
	free(msg);
	return e;
}

/* The period and date arguments, and the settings for them. */
static int periodic_args(struct tool_ctx *c, struct periodic_conf *conf,
			 struct moment_tm *date)
{
	const char *pn = arg_str(c, "period", "day");
	enum period p;
	if (period_from_name(pn, &p) < 0)
		return op_fail(c, -EINVAL,
			       "Invalid period %s: day, week, month, "
			       "quarter or year",
			       QUOTE(pn));
	char *msg = NULL;
	int r = periodic_conf_load(vault_rootfd(c->v), p, conf, &msg);
	if (r < 0)
		return settings_fail(c, r, msg);
	const char *d = arg_str(c, "date", "today");
	if (periodic_date_arg(conf, d, date) < 0)
		return op_fail(c, -EINVAL,
			       "Invalid date %s: give today, yesterday, "
			       "tomorrow, an ISO date (2024-01-05) or a note "
			       "name in the format %s",
			       QUOTE(d), QUOTE(conf->format));
	return 0;
}

/* Refuse Templater: its <% %> is JavaScript, run by the app. */
static int refuse_templater(struct tool_ctx *c, const char *path,
			    const char *text)
{
	if (!template_uses_templater(text))
		return 0;
	return op_fail(c, -EINVAL,
		       "Template '%s' uses Templater syntax (<%% ... %%>), "
		       "which is code that vaultd never runs; use a template "
		       "with the core variables ({{title}}, {{date}}, "
		       "{{time}}, {{date:FORMAT}}) or create the note "
		       "without one",
		       path);
}

/* A template note's text, by vault path (read lock taken here). */
static int read_template_at(struct tool_ctx *c, const char *path,
			    const char *why, char **ret)
{
	READ_LOCKED(c);
	struct note *n = index_by_path(vault_index(c->v), path);
	if (!n)
		return op_fail(c, -ENOENT, "Template %s (%s) not found",
			       QUOTE(path), why);
	size_t len;
	_cleanup_free_ char *text = NULL;
	int r = vault_read_text(c->v, n, &text, &len);
	if (r < 0)
		return op_fail(c, r, "Cannot read template '%s': %s",
			       note_path(n), strerror(-r));
	if ((r = refuse_templater(c, note_path(n), text)) < 0)
		return r;
	*ret = TAKE_PTR(text);
	return 0;
}

/* The note's text from its period's template ("" without one). */
static int periodic_initial(struct tool_ctx *c, const struct periodic_conf *pc,
			    const struct moment_tm *date, char **ret)
{
	if (!*pc->template) {
		*ret = xstrdup("");
		return 0;
	}
	_cleanup_free_ char *why =
		xasprintf("the %s notes' template in %s",
			  period_name(pc->period), pc->source);
	_cleanup_free_ char *tpl = NULL;
	int r = read_template_at(c, pc->template, why, &tpl);
	if (r < 0)
		return r;
	/* {{title}} is the note's name; {{date}} is the date in the
	 * note's format, as in Obsidian, with the time of day now. */
	_cleanup_free_ char *path = periodic_note_path(pc, date);
	_cleanup_free_ char *name = path_note_name(path);
	struct moment_tm now, d = *date;
	moment_now(&now);
	d.hour = now.hour;
	d.min = now.min;
	d.sec = now.sec;
	struct template_vars v = {.title = name,
				  .date = &d,
				  .date_format = pc->format,
				  .time_format = "HH:mm",
				  .loc = &pc->loc,
				  .periodic = true};
	*ret = template_fill(tpl, &v);
	return 0;
}

/* The note at path now: exists, and its text and version. */
static void describe_note(struct tool_ctx *c, const char *path, cJSON *o)
{
	READ_LOCKED(c);
	struct note *n = index_by_path(vault_index(c->v), path);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	bool ok = n && vault_read_text(c->v, n, &text, &len) == 0;
	cJSON_AddBoolToObject(o, "exists", n != NULL);
	if (!ok)
		return;
	char ver[TEXT_VERSION_LEN + 1];
	text_version(text, len, ver);
	cJSON_ReplaceItemInObject(o, "path", cJSON_CreateString(note_path(n)));
	cJSON_AddStringToObject(o, "version", ver);
	len = strnlen(text, len);
	if (len > PERIODIC_TEXT_MAX) {
		len = utf8_cut(text, PERIODIC_TEXT_MAX);
		c->warning = xasprintf("Note '%s' is longer than %u bytes: "
				       "its text is cut; read_note reads it "
				       "in parts",
				       note_path(n), PERIODIC_TEXT_MAX);
	}
	_cleanup_free_ char *shown = u8_invalid_at(text, len) < len
					     ? u8_repair(text, len)
					     : xstrndup(text, len);
	cJSON_AddStringToObject(o, "text", shown);
}

static cJSON *periodic_json(const struct periodic_conf *pc,
			    const struct moment_tm *date, const char *path)
{
	cJSON *o = cJSON_CreateObject();
	char iso[16];
	snprintf(iso, sizeof(iso), "%04d-%02d-%02d", date->year, date->month,
		 date->day);
	_cleanup_free_ char *name = path_note_name(path);
	cJSON_AddStringToObject(o, "date", iso);
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "path", path);
	return o;
}

int op_periodic_note(struct tool_ctx *c)
{
	_cleanup_pconf_ struct periodic_conf pc = {0};
	struct moment_tm date;
	int r = periodic_args(c, &pc, &date);
	if (r < 0)
		return r;
	_cleanup_free_ char *path = periodic_note_path(&pc, &date);
	bool exists = op_note_exists(c, path);
	bool created = false;
	if (!exists && arg_bool(c, "create", false)) {
		_cleanup_free_ char *initial = NULL;
		if ((r = periodic_initial(c, &pc, &date, &initial)) < 0 ||
		    (r = op_periodic_write(c, path, initial, false, &created)) <
			    0)
			return r;
	}
	cJSON *o = periodic_json(&pc, &date, path);
	describe_note(c, path, o);
	if (created)
		cJSON_AddTrueToObject(o, "created");
	c->json = o;
	return 0;
}

int op_append_periodic_note(struct tool_ctx *c)
{
	_cleanup_pconf_ struct periodic_conf pc = {0};
	struct moment_tm date;
	int r = periodic_args(c, &pc, &date);
	if (r < 0)
		return r;
	_cleanup_free_ char *path = periodic_note_path(&pc, &date);
	bool exists = op_note_exists(c, path);
	_cleanup_free_ char *initial = NULL;
	if (!exists && (r = periodic_initial(c, &pc, &date, &initial)) < 0)
		return r;
	bool created = false;
	r = op_periodic_write(c, path, initial ? initial : "", true, &created);
	if (r < 0)
		return r;
	cJSON *o = periodic_json(&pc, &date, path);
	cJSON_DeleteItemFromObject(o, "date");
	if (created)
		cJSON_AddTrueToObject(o, "created");
	c->json = o;
	return 0;
}

/* ---- create_note's template ------------------------------------------- */

/* The template create_note names: in the templates folder first, then
 * anywhere in the vault by path or name. */
static int find_template(struct tool_ctx *c, const char *ref,
			 const char *folder, char **ret_text, char **ret_path)
{
	READ_LOCKED(c);
	struct index *ix = vault_index(c->v);
	bool md = str_has_suffix_ci(ref, ".md");
	_cleanup_free_ char *in = xasprintf(
		"%s%s%s%s", folder, *folder ? "/" : "", ref, md ? "" : ".md");
	struct note *n = index_by_path(ix, in);
	int r = 0;
	if (!n && (r = op_find(c, ref, &n)) < 0) {
		if (r == -ENOENT && *folder)
			return op_fail(c, -ENOENT,
				       "Template %s not found in the "
				       "templates folder '%s' or the vault",
				       QUOTE(ref), folder);
		return r;
	}
	size_t len;
	_cleanup_free_ char *text = NULL;
	if ((r = vault_read_text(c->v, n, &text, &len)) < 0)
		return op_fail(c, r, "Cannot read template '%s': %s",
			       note_path(n), strerror(-r));
	if ((r = refuse_templater(c, note_path(n), text)) < 0)
		return r;
	*ret_text = TAKE_PTR(text);
	*ret_path = xstrdup(note_path(n));
	return 0;
}

/* Keys whose lists are joined, not replaced, when content adds to a
 * template's (Obsidian's list properties a template usually seeds). */
static bool list_key(const char *k)
{
	return !strcmp(k, "tags") || !strcmp(k, "aliases") ||
	       !strcmp(k, "cssclasses");
}

/* The template's value of key joined with v (both lists). */
static cJSON *joined(const cJSON *had, const cJSON *v)
{
	cJSON *a = cJSON_Duplicate(had, 1);
	const cJSON *x, *y;
	cJSON_ArrayForEach(x, v)
	{
		bool dup = false;
		cJSON_ArrayForEach(y, had) dup |= cJSON_Compare(x, y, 1);
		if (!dup)
			cJSON_AddItemToArray(a, cJSON_Duplicate(x, 1));
	}
	return a;
}

/* Each key of fm set in text's frontmatter (other keys keep their
 * text); lists of tags, aliases and cssclasses joined. */
static int merge_frontmatter(struct tool_ctx *c, const char *tpath, char **text,
			     const cJSON *fm)
{
	const cJSON *kv;
	cJSON_ArrayForEach(kv, fm)
	{
		struct frontmatter cur;
		fm_parse(*text, strlen(*text), &cur);
		const cJSON *had =
			cJSON_GetObjectItemCaseSensitive(cur.data, kv->string);
		cJSON *val = list_key(kv->string) && cJSON_IsArray(had) &&
					     cJSON_IsArray(kv)
				     ? joined(had, kv)
				     : cJSON_Duplicate(kv, 1);
		fm_clear(&cur);
		char *nt = NULL;
		int r = fm_set(*text, strlen(*text), kv->string, val, &nt);
		cJSON_Delete(val);
		if (r < 0)
			return op_fail(c, -EINVAL,
				       "Template '%s' has frontmatter that is "
				       "not valid YAML: fix it before adding "
				       "properties to it",
				       tpath);
		free(*text);
		*text = nt;
	}
	return 0;
}

/* Content's own frontmatter block, if any, as an object; *body moves
 * past it. */
static int content_frontmatter(struct tool_ctx *c, const char **body,
			       cJSON **ret)
{
	struct frontmatter f;
	fm_parse(*body, strlen(*body), &f);
	*ret = NULL;
	if (!f.present) {
		fm_clear(&f);
		return 0;
	}
	if (!f.valid) {
		int r = op_fail(c, -EINVAL,
				"content's frontmatter is not valid YAML "
				"(line %d: %s)",
				f.err_line, f.err_msg ? f.err_msg : "?");
		fm_clear(&f);
		return r;
	}
	*ret = TAKE_PTR(f.data);
	*body += f.body_off;
	fm_clear(&f);
	return 0;
}

int op_template_apply(struct tool_ctx *c, const char *name, const cJSON *fm,
		      const char *content, char **ret_text, char **ret_template)
{
	char *msg = NULL;
	_cleanup_tconf_ struct templates_conf tc = {0};
	int r = templates_conf_load(vault_rootfd(c->v), &tc, &msg);
	if (r < 0)
		return settings_fail(c, r, msg);
	_cleanup_free_ char *tpl = NULL, *tpath = NULL;
	if ((r = find_template(c, arg_str(c, "template", ""), tc.folder, &tpl,
			       &tpath)) < 0)
		return r;
	_cleanup_free_ char *title = path_note_name(name);
	struct moment_tm now;
	moment_now(&now);
	struct template_vars v = {.title = title,
				  .date = &now,
				  .date_format = tc.date_format,
				  .time_format = tc.time_format,
				  .loc = moment_locale_default()};
	char *text = template_fill(tpl, &v);
	const char *body = content;
	cJSON *cfm = NULL;
	if ((r = content_frontmatter(c, &body, &cfm)) < 0 ||
	    (r = merge_frontmatter(c, tpath, &text, fm)) < 0 ||
	    (r = merge_frontmatter(c, tpath, &text, cfm)) < 0) {
		cJSON_Delete(cfm);
		free(text);
		return r;
	}
	cJSON_Delete(cfm);
	/* The given content goes after the template's body. */
	while (*body == '\n' || *body == '\r')
		body++;
	struct sbuf b = {0};
	size_t tl = strlen(text);
	sb_add(&b, text, tl);
	if (*body) {
		size_t fs, fe, bo;
		bool has = md_split_frontmatter(text, tl, &fs, &fe, &bo);
		size_t end = tl;
		while (end > (has ? bo : 0) &&
		       (text[end - 1] == '\n' || text[end - 1] == '\r'))
			end--;
		b.len = end;
		sb_puts(&b, end > (has ? bo : 0) ? "\n\n" : "");
		sb_puts(&b, body);
	}
	free(text);
	*ret_text = sb_steal(&b);
	*ret_template = TAKE_PTR(tpath);
	return 0;
}
