/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Write tools on a note's properties: set_frontmatter and
 * update_frontmatter (values typed as the vault's property types say),
 * add_tag and remove_tag (only tags the policy allows). Each goes
 * through opw_edit_note.
 */
#include "fileio.h"
#include "frontmatter.h"
#include "history.h"
#include "markdown.h"
#include "json.h"
#include "shape.h"
#include "ops_write.h"
#include "tools.h"
#include "u8.h"

#include <ctype.h>
#include <errno.h>

/* ---- frontmatter
 * --------------------------------------------------------------- */

static int fm_error(struct tool_ctx *c, const char *ref, const char *text,
		    size_t len)
{
	struct frontmatter fm;
	fm_parse(text, len, &fm);
	int r = op_fail(c, -EBADMSG,
			"Cannot change the frontmatter of note %s: its YAML "
			"cannot be read at line %d (%s). Fix it first; nothing "
			"was changed.",
			QUOTE(ref), fm.err_line, fm.err_msg ? fm.err_msg : "?");
	fm_clear(&fm);
	return r;
}

/* Set keys of the object `updates` (null removes a key). */
static int apply_updates(struct tool_ctx *c, const char *ref, const char *text,
			 size_t len, const cJSON *updates, char **ret)
{
	char *cur = xstrndup(text, len);
	const cJSON *kv;
	cJSON_ArrayForEach(kv, updates)
	{
		if (!*kv->string) {
			free(cur);
			return op_fail(c, -EINVAL,
				       "frontmatter keys must not be empty");
		}
		char *next = NULL;
		int r = fm_set(cur, strlen(cur), kv->string,
			       cJSON_IsNull(kv) ? NULL : kv, &next);
		if (r < 0) {
			r = fm_error(c, ref, cur, strlen(cur));
			free(cur);
			return r;
		}
		free(cur);
		cur = next;
	}
	*ret = cur;
	return 0;
}

/*
 * A frontmatter value given as text: tags/aliases take a JSON list or
 * a comma list; other keys take JSON (numbers, true, lists, objects,
 * "quoted text") and otherwise the text itself.
 */
static cJSON *value_from_text(const char *key, const char *value)
{
	/* The whole text must be JSON: "2024-01-15" is not the number 2024. */
	cJSON *v = cJSON_ParseWithOpts(value, NULL, true);
	bool listkey = !strcmp(key, "tags") || !strcmp(key, "tag") ||
		       !strcmp(key, "aliases") || !strcmp(key, "alias");
	if (listkey) {
		if (cJSON_IsArray(v))
			return v;
		cJSON_Delete(v);
		cJSON tmp = {.type = cJSON_String,
			     .valuestring = (char *)value};
		char **l = fm_string_list(&tmp, false, !strncmp(key, "tag", 3));
		cJSON *a = cJSON_CreateArray();
		for (char **p = l; *p; p++)
			cJSON_AddItemToArray(a, cJSON_CreateString(*p));
		strv_free(l);
		return a;
	}
	if (v)
		return v;
	return cJSON_CreateString(value);
}

static int do_set_fm(struct tool_ctx *c, const char *ref, const char *text,
		     size_t len, char **ret)
{
	const char *key = arg_str(c, "key", "");
	cJSON *upd = cJSON_CreateObject();
	cJSON_AddItemToObject(upd, key,
			      value_from_text(key, arg_str(c, "value", "")));
	int r = apply_updates(c, ref, text, len, upd, ret);
	if (r == 0)
		cJSON_AddItemToObject(
			c->json, "value",
			cJSON_Duplicate(cJSON_GetObjectItem(upd, key), 1));
	cJSON_Delete(upd);
	return r;
}

int op_set_frontmatter(struct tool_ctx *c)
{
	const char *ref = arg_str(c, "name", "");
	const char *key = arg_str(c, "key", "");
	if (!*key)
		return op_fail(c, -EINVAL, "key must not be empty");
	c->json = cJSON_CreateObject();
	cJSON_AddStringToObject(c->json, "name", ref);
	cJSON_AddStringToObject(c->json, "key", key);
	WRITE_LOCKED(c);
	int r = opw_edit_note(c, ref, do_set_fm, NULL);
	if (r < 0)
		cJSON_Delete(TAKE_PTR(c->json));
	return r;
}

static cJSON *updates_arg(struct tool_ctx *c)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(c->args, "updates");
	if (cJSON_IsObject(u))
		return cJSON_Duplicate(u, 1);
	if (cJSON_IsString(u)) {
		cJSON *o = cJSON_ParseWithOpts(u->valuestring, NULL, true);
		if (cJSON_IsObject(o))
			return o;
		cJSON_Delete(o);
	}
	return NULL;
}

static int do_update_fm(struct tool_ctx *c, const char *ref, const char *text,
			size_t len, char **ret)
{
	cJSON *u = updates_arg(c);
	int r = apply_updates(c, ref, text, len, u, ret);
	cJSON_Delete(u);
	return r;
}

int op_update_frontmatter(struct tool_ctx *c)
{
	const char *ref = arg_str(c, "name", "");
	cJSON *u = updates_arg(c);
	if (!u)
		return op_fail(c, -EINVAL,
			       "updates must be an object of key: value pairs "
			       "(null removes a key)");
	cJSON_Delete(u);
	WRITE_LOCKED(c);
	struct note *n = NULL;
	int r = opw_edit_note(c, ref, do_update_fm, &n);
	if (r < 0)
		return r;
	_cleanup_free_ char *text = NULL;
	size_t len;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", ref);
	if (n && vault_read_text(c->v, n, &text, &len) == 0) {
		struct frontmatter fm;
		fm_parse(text, len, &fm);
		cJSON_AddStringToObject(o, "path", note_path(n));
		cJSON_AddBoolToObject(o, "updated", true);
		cJSON_AddItemToObject(o, "frontmatter", TAKE_PTR(fm.data));
		fm_clear(&fm);
	}
	c->json = o;
	return 0;
}

/* ---- tags
 * ---------------------------------------------------------------------- */

/* The frontmatter key holding tags: "tags", or "tag" if only that and
 * the policy still reads it (Obsidian 1.9 does not). */
static const char *tags_key(const cJSON *data, unsigned flags)
{
	if ((flags & NOTE_READ_LEGACY_PROPERTIES) &&
	    !cJSON_GetObjectItemCaseSensitive(data, "tags") &&
	    cJSON_GetObjectItemCaseSensitive(data, "tag"))
		return "tag";
	return "tags";
}

static int clean_tag(struct tool_ctx *c, const char *given, char **ret)
{
	const char *t = given;
	while (isspace((unsigned char)*t))
		t++;
	if (*t == '#')
		t++;
	size_t n = strlen(t);
	while (n && isspace((unsigned char)t[n - 1]))
		n--;
	bool nondigit = false, ok = n > 0 && u8_valid(t, n);
	for (size_t i = 0; ok && i < n;) {
		int32_t cp;
		int l = u8_decode(t + i, n - i, &cp);
		if (l < 0 || !u8_is_tag_char(cp)) {
			ok = false;
			break;
		}
		if (!u8_is_digit(cp) && cp != '/' && cp != '-' && cp != '_')
			nondigit = true;
		i += (size_t)l;
	}
	if (!ok || !nondigit)
		return op_fail(c, -EINVAL,
			       "Invalid tag %s: tags may contain letters, "
			       "digits, '_', '-' and '/', and not only digits",
			       QUOTE(given));
	*ret = xstrndup(t, n);
	return 0;
}

static int tag_tool(struct tool_ctx *c, bool add)
{
	const char *ref = arg_str(c, "name", "");
	_cleanup_free_ char *tag = NULL;
	int r = clean_tag(c, arg_str(c, "tag", ""), &tag);
	if (r < 0)
		return r;
	WRITE_LOCKED(c);
	struct note *n;
	if ((r = op_find(c, ref, &n)) < 0)
		return r;
	_cleanup_free_ char *text = NULL;
	size_t len;
	if ((r = vault_read_text(c->v, n, &text, &len)) < 0)
		return op_fail(c, r, "Cannot read note '%s': %s", note_path(n),
			       strerror(-r));
	if ((r = opw_check_expected(c, n, text, len)) < 0)
		return r;
	struct frontmatter fm;
	fm_parse(text, len, &fm);
	if (!fm.valid) {
		fm_clear(&fm);
		return fm_error(c, ref, text, len);
	}
	_cleanup_policy_ struct policy *pol = vault_policy_get(c->v);
	const char *key = tags_key(fm.data, policy_note_flags(pol));
	char **cur = fm_string_list(
		cJSON_GetObjectItemCaseSensitive(fm.data, key), true, true);
	fm_clear(&fm);
	_cleanup_free_ char *ft = fold_key(tag);
	cJSON *list = cJSON_CreateArray();
	bool present = false;
	for (char **p = cur; *p; p++) {
		_cleanup_free_ char *f = fold_key(*p);
		if (strcmp(f, ft) == 0) {
			present = true;
			if (!add)
				continue;
		}
		cJSON_AddItemToArray(list, cJSON_CreateString(*p));
	}
	strv_free(cur);
	if (add && !present)
		cJSON_AddItemToArray(list, cJSON_CreateString(tag));
	_cleanup_free_ char *path = xstrdup(note_path(n));
	bool change = add ? !present : present;
	if (change) {
		_cleanup_free_ char *nt = NULL;
		fm_set(text, len, key, list, &nt);
		r = opw_write_or_try(c, path, text, len, nt, strlen(nt), false);
		if (r < 0) {
			cJSON_Delete(list);
			return r;
		}
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", ref);
	cJSON_AddItemToObject(o, "tags", list);
	if (!add) {
		cJSON_AddBoolToObject(o, "removed", present);
		struct note *after = index_by_path(vault_index(c->v), path);
		if (after && note_has_tag(after, tag))
			cJSON_AddStringToObject(
				o, "note",
				"The tag also appears in the note's text as "
				"#tag; the text was left as it is.");
	}
	c->json = o;
	return 0;
}

int op_add_tag(struct tool_ctx *c)
{
	return tag_tool(c, true);
}

int op_remove_tag(struct tool_ctx *c)
{
	return tag_tool(c, false);
}
