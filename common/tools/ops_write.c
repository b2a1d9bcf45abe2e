/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Write tools. Each one is a read-modify-write under the vault's writer
 * lock, ending in vault_commit(): the one guarded, atomic write path.
 * This file holds that path (opw_edit_note and the expected_version
 * check), create, the whole-note edits (append, prepend, update), rename,
 * delete and undo.
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

/* Characters Obsidian refuses in file names (they break links). */
static const char FORBIDDEN[] = "*\"\\<>:|?#^[]";

/*
 * A path for a new note from a name the client gave: "x", "dir/x" or
 * "dir/x.md". A bare name lands in `default_dir` ("" = vault root).
 */
int opw_new_note_path(struct tool_ctx *c, const char *given,
		      const char *default_dir, char **ret)
{
	_cleanup_free_ char *norm = NULL;
	const char *why;
	int r = op_name_len(c, given);
	if (r < 0)
		return r;
	if (path_check(given, &norm, &why) < 0)
		return op_fail(c, -EINVAL, "Invalid note name %s: %s",
			       QUOTE(given), why);
	if (str_has_suffix_ci(norm, ".md"))
		norm[strlen(norm) - 3] = 0;
	const char *base = strrchr(norm, '/');
	base = base ? base + 1 : norm;
	if (!*base)
		return op_fail(c, -EINVAL,
			       "Invalid note name %s: it names "
			       "no note",
			       QUOTE(given));
	if (base[0] == '.')
		return op_fail(c, -EINVAL,
			       "Invalid note name %s: names starting with "
			       "'.' are hidden from Obsidian",
			       QUOTE(given));
	if (strpbrk(base, FORBIDDEN))
		return op_fail(c, -EINVAL,
			       "Invalid note name %s: Obsidian does not allow "
			       "any of %s in note names",
			       QUOTE(given), FORBIDDEN);
	char *path = (!strchr(norm, '/') && default_dir && *default_dir)
			     ? xasprintf("%s/%s.md", default_dir, norm)
			     : xasprintf("%s.md", norm);
	_cleanup_policy_ struct policy *pol = vault_policy_get(c->v);
	if (policy_ignored(pol, path, false)) {
		r = op_fail(c, -EINVAL,
			    "Invalid note name %s: %s is hidden or "
			    "ignored by the vault's policy",
			    QUOTE(given), QUOTE(path));
		free(path);
		return r;
	}
	*ret = path;
	return 0;
}

static struct write_opts opts_for(const struct tool_ctx *c, bool create)
{
	return (struct write_opts){
		.source = c->source,
		.create = create,
	};
}

static int commit(struct tool_ctx *c, const char *path, const char *text,
		  size_t len, bool create)
{
	struct write_opts o = opts_for(c, create);
	struct write_outcome out = {0};
	char *msg = NULL;
	int r = vault_commit(c->v, path, text, len, &o, &out, &msg);
	if (r < 0) {
		free(c->msg);
		c->msg = msg;
		write_outcome_clear(&out);
		return r;
	}
	if (out.warning) {
		free(c->warning);
		c->warning = TAKE_PTR(out.warning);
	}
	write_outcome_clear(&out);
	return 0;
}

/* Lines of a diff shown in an error: enough to see what changed. */
#define ERROR_DIFF_LINES 40

/*
 * A conditional write (expected_version): the note must still be the one
 * the caller read. If not, nothing is written and the error names both
 * versions and shows what changed since (when the history has the text
 * of the expected one).
 */
int opw_check_expected(struct tool_ctx *c, const struct note *n,
		       const char *text, size_t len)
{
	const char *want = arg_str(c, "expected_version", "");
	if (!*want)
		return 0;
	char now[TEXT_VERSION_LEN + 1];
	text_version(text, len, now);
	size_t wl = strlen(want);
	if (wl >= 7 && wl <= TEXT_VERSION_LEN && !strncmp(now, want, wl))
		return 0;
	struct sbuf m = {0};
	sb_printf(&m,
		  "Note '%s' changed since version %s: it is now version %s. "
		  "Nothing was written; read the note again and redo the "
		  "change.",
		  note_path(n), QUOTE(want), now);
	char *old = NULL;
	size_t ol = 0;
	struct history *h = vault_history(c->v);
	if (wl < 7 || wl > TEXT_VERSION_LEN) {
		sb_printf(&m,
			  " (a version is %d hex digits, as read_note "
			  "gives it)",
			  TEXT_VERSION_LEN);
	} else if (h && history_text_of(h, want, &old, &ol) == 0) {
		size_t add, del;
		_cleanup_free_ char *d =
			text_diff(note_path(n), old, ol, note_path(n), text,
				  len, &add, &del);
		sb_printf(&m, "\nWhat changed since (+%zu, -%zu lines):\n", add,
			  del);
		const char *p = d;
		for (int i = 0; *p && i < ERROR_DIFF_LINES; i++) {
			const char *e = strchr(p, '\n');
			size_t l = e ? (size_t)(e - p) + 1 : strlen(p);
			sb_add(&m, p, l);
			p += l;
		}
		if (*p)
			sb_puts(&m, "(more; diff_note_versions shows all)\n");
		free(old);
	} else {
		sb_puts(&m, " The history has no text of that version, so what "
			    "changed cannot be shown.");
	}
	int r = op_fail(c, -ESTALE, "%s", sb_str(&m));
	sb_free(&m);
	return r;
}

/* For writes that do not edit the text (rename, delete): the version
 * check on the note as it is. */
static int check_expected_note(struct tool_ctx *c, const struct note *n)
{
	if (!*arg_str(c, "expected_version", ""))
		return 0;
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = vault_read_text(c->v, n, &text, &len);
	if (r < 0)
		return op_fail(c, r, "Cannot read note '%s': %s", note_path(n),
			       strerror(-r));
	return opw_check_expected(c, n, text, len);
}

/*
 * Write a note's new text, or with dry_run only say how it would change:
 * the unified diff (as diff_note_versions shows it after the write).
 */
int opw_write_or_try(struct tool_ctx *c, const char *path, const char *old,
		     size_t old_len, const char *nt, size_t nt_len, bool create)
{
	if (arg_bool(c, "dry_run", false)) {
		free(c->dry_diff);
		c->dry_diff = text_diff(path, old ? old : "", old ? old_len : 0,
					path, nt, nt_len, NULL, NULL);
		return 0;
	}
	return commit(c, path, nt, nt_len, create);
}

/* Find, read, edit and commit one note (writer lock held by caller). */
int opw_edit_note(struct tool_ctx *c, const char *ref, edit_fn fn,
		  struct note **ret_note)
{
	struct note *n;
	int r = op_find(c, ref, &n);
	if (r < 0)
		return r;
	_cleanup_free_ char *text = NULL;
	size_t len;
	r = vault_read_text(c->v, n, &text, &len);
	if (r < 0)
		return op_fail(c, r, "Cannot read note '%s': %s", note_path(n),
			       strerror(-r));
	if ((r = opw_check_expected(c, n, text, len)) < 0)
		return r;
	_cleanup_free_ char *nt = NULL;
	r = fn(c, ref, text, len, &nt);
	if (r < 0)
		return r;
	_cleanup_free_ char *path = xstrdup(note_path(n));
	if (strlen(nt) != len || memcmp(nt, text, len) != 0 ||
	    arg_bool(c, "dry_run", false)) {
		r = opw_write_or_try(c, path, text, len, nt, strlen(nt), false);
		if (r < 0)
			return r;
	}
	if (ret_note)
		*ret_note = index_by_path(vault_index(c->v), path);
	return 0;
}

size_t opw_body_offset(const char *text, size_t len)
{
	size_t fs, fe, bo;
	return md_split_frontmatter(text, len, &fs, &fe, &bo) ? bo : 0;
}

static cJSON *status_json(const char *name, const char *status)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "status", status);
	return o;
}

/* ---- create ----------------------------------------------------------------
 */

static int parse_fm_arg(struct tool_ctx *c, cJSON **ret)
{
	const cJSON *fm =
		cJSON_GetObjectItemCaseSensitive(c->args, "frontmatter");
	*ret = NULL;
	if (!fm || cJSON_IsNull(fm))
		return 0;
	if (cJSON_IsObject(fm)) {
		*ret = cJSON_Duplicate(fm, 1);
		return 0;
	}
	const char *s = fm->valuestring;
	while (*s && isspace((unsigned char)*s))
		s++;
	if (!*s)
		return 0;
	const char *end = NULL;
	cJSON *o = cJSON_ParseWithOpts(s, &end, true);
	if (!o) {
		size_t off = end ? (size_t)(end - s) : 0;
		return op_fail(c, -EINVAL,
			       "Invalid frontmatter JSON: syntax error at "
			       "character %zu: %.20s",
			       off + 1, s + off);
	}
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return op_fail(c, -EINVAL,
			       "Invalid frontmatter JSON: expected "
			       "an object like {\"key\": \"value\"}");
	}
	*ret = o;
	return 0;
}

int op_create_note(struct tool_ctx *c)
{
	const char *name = arg_str(c, "name", "");
	const char *content = arg_str(c, "content", "");
	bool overwrite = arg_bool(c, "overwrite", false);
	cJSON *fm = NULL;
	int r = parse_fm_arg(c, &fm);
	if (r < 0)
		return r;
	struct sbuf text = {0};
	_cleanup_free_ char *tpath = NULL;
	if (*arg_str(c, "template", "")) {
		char *t = NULL;
		r = op_template_apply(c, name, fm, content, &t, &tpath);
		cJSON_Delete(fm);
		if (r < 0)
			return r;
		sb_puts(&text, t);
		free(t);
	} else if (fm && cJSON_GetArraySize(fm) > 0) {
		size_t a, b, d;
		if (md_split_frontmatter(content, strlen(content), &a, &b,
					 &d)) {
			cJSON_Delete(fm);
			return op_fail(c, -EINVAL,
				       "content already starts with a "
				       "frontmatter block; give frontmatter in "
				       "one place only");
		}
		_cleanup_free_ char *y = fm_render_object(fm);
		sb_printf(&text, "---\n%s---\n", y);
	}
	if (!tpath) {
		cJSON_Delete(fm);
		sb_puts(&text, content);
	}

	WRITE_LOCKED(c);
	_cleanup_free_ char *path = NULL;
	r = opw_new_note_path(c, name, "", &path);
	if (r < 0) {
		sb_free(&text);
		return r;
	}
	struct note *old = index_by_path(vault_index(c->v), path);
	if (old && !overwrite) {
		sb_free(&text);
		_cleanup_free_ char *nm = path_note_name(path);
		return op_fail(c, -EEXIST,
			       "Note %s already exists (use overwrite=true "
			       "to replace it)",
			       QUOTE(nm));
	}
	if (old && (r = check_expected_note(c, old)) < 0) {
		sb_free(&text);
		return r;
	}
	_cleanup_free_ char *was = NULL;
	size_t wl = 0;
	if (old && arg_bool(c, "dry_run", false) &&
	    vault_read_text(c->v, old, &was, &wl) < 0) {
		sb_free(&text);
		return op_fail(c, -EIO, "Cannot read note '%s'",
			       note_path(old));
	}
	r = opw_write_or_try(c, path, was, wl, sb_str(&text), text.len, !old);
	sb_free(&text);
	if (r < 0)
		return r;
	_cleanup_free_ char *nm = path_note_name(path);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", nm);
	cJSON_AddStringToObject(o, "path", path);
	if (old)
		cJSON_AddBoolToObject(o, "overwritten", true);
	if (tpath)
		cJSON_AddStringToObject(o, "template", tpath);
	c->json = o;
	return 0;
}

/* ---- whole-note edits
 * -------------------------------------------------------- */

/* The frontmatter block of a note, ending in a newline even when the
 * file's closing "---" has none. */
static void add_head(struct sbuf *b, const char *text, size_t bo)
{
	sb_add(b, text, bo);
	if (bo && text[bo - 1] != '\n')
		sb_putc(b, '\n');
}

int opw_do_append(struct tool_ctx *c, const char *ref, const char *text,
		  size_t len, char **ret)
{
	const char *add = arg_str(c, "text", "");
	size_t bo = opw_body_offset(text, len), e = len;
	while (e > bo && (text[e - 1] == '\n' || text[e - 1] == '\r'))
		e--;
	struct sbuf b = {0};
	if (e == bo) {
		add_head(&b, text, bo);
	} else {
		sb_add(&b, text, e);
		sb_puts(&b, "\n\n");
	}
	sb_puts(&b, add);
	*ret = sb_steal(&b);
	return 0;
}

static int do_prepend(struct tool_ctx *c, const char *ref, const char *text,
		      size_t len, char **ret)
{
	const char *add = arg_str(c, "text", "");
	size_t bo = opw_body_offset(text, len), b = bo;
	while (b < len && (text[b] == '\n' || text[b] == '\r'))
		b++;
	struct sbuf out = {0};
	add_head(&out, text, bo);
	sb_puts(&out, add);
	if (b < len) {
		sb_puts(&out, "\n\n");
		sb_add(&out, text + b, len - b);
	}
	*ret = sb_steal(&out);
	return 0;
}

static int do_update(struct tool_ctx *c, const char *ref, const char *text,
		     size_t len, char **ret)
{
	struct sbuf out = {0};
	add_head(&out, text, opw_body_offset(text, len));
	sb_puts(&out, arg_str(c, "content", ""));
	*ret = sb_steal(&out);
	return 0;
}

static int simple_edit(struct tool_ctx *c, edit_fn fn, const char *status)
{
	const char *ref = arg_str(c, "name", "");
	WRITE_LOCKED(c);
	int r = opw_edit_note(c, ref, fn, NULL);
	if (r < 0)
		return r;
	c->json = status_json(ref, status);
	return 0;
}

int op_edit_text(struct tool_ctx *c, const char *ref, op_edit_fn fn)
{
	WRITE_LOCKED(c);
	return opw_edit_note(c, ref, fn, NULL);
}

int op_append_note(struct tool_ctx *c)
{
	return simple_edit(c, opw_do_append, "appended");
}

int op_prepend_note(struct tool_ctx *c)
{
	return simple_edit(c, do_prepend, "prepended");
}

int op_update_note(struct tool_ctx *c)
{
	return simple_edit(c, do_update, "updated");
}

static int do_replace_whole(struct tool_ctx *c, const char *ref,
			    const char *text, size_t len, char **ret)
{
	(void)ref;
	(void)text;
	(void)len;
	*ret = xstrdup(c->replacement);
	return 0;
}

int op_create_text(struct tool_ctx *c, const char *path, const char *text)
{
	WRITE_LOCKED(c);
	_cleanup_free_ char *p = NULL;
	int r = opw_new_note_path(c, path, "", &p);
	if (r < 0)
		return r;
	if (index_by_path(vault_index(c->v), p)) {
		_cleanup_free_ char *nm = path_note_name(p);
		return op_fail(c, -EEXIST, "Note %s already exists", QUOTE(nm));
	}
	return opw_write_or_try(c, p, NULL, 0, text, strlen(text), true);
}

int op_write_text(struct tool_ctx *c, const char *ref, const char *text)
{
	WRITE_LOCKED(c);
	c->replacement = text;
	int r = opw_edit_note(c, ref, do_replace_whole, NULL);
	c->replacement = NULL;
	return r;
}

/* ---- rename and delete
 * ----------------------------------------------------------- */

/* A rename's or delete's dry run: the diff is every file's, in turn. */
/*
 * A rename or delete's answer: its report as JSON; with with_diff, a dry
 * run's diffs one after the other for the callers that show them.
 */
static int moved_result(struct tool_ctx *c, int r, struct vault_moved *m,
			char *msg, bool with_diff)
{
	if (r < 0) {
		free(c->msg);
		c->msg = msg;
		return r;
	}
	c->json = moved_json(m);
	if (m->dry_run && with_diff) {
		struct sbuf b = {0};
		for (size_t i = 0; i < m->nchanges; i++)
			sb_puts(&b, m->changes[i].diff);
		free(c->dry_diff);
		c->dry_diff = b.s ? sb_steal(&b) : xstrdup("");
	}
	vault_moved_clear(m);
	return 0;
}

int op_rename_note(struct tool_ctx *c)
{
	const char *from = arg_str(c, "old_name", "");
	const char *to = arg_str(c, "new_name", "");
	bool dry = arg_bool(c, "dry_run", false);
	WRITE_LOCKED(c);
	struct note *n;
	int r = op_find(c, from, &n);
	if (r < 0 || (r = check_expected_note(c, n)) < 0)
		return r;
	_cleanup_free_ char *dir = xstrndup(note_path(n), note_dirlen(n));
	_cleanup_free_ char *path = NULL;
	if ((r = opw_new_note_path(c, to, dir, &path)) < 0)
		return r;
	char *msg = NULL;
	struct vault_moved m;
	r = vault_rename(c->v, n, path, c->source, dry, &m, &msg);
	return moved_result(c, r, &m, msg, true);
}

/* A folder path the client gave (old or new). */
static int folder_arg(struct tool_ctx *c, const char *what, const char *given,
		      bool is_new, char **ret)
{
	_cleanup_free_ char *norm = NULL;
	const char *why;
	if (strnlen(given, PATH_MAX_BYTES + 1) > PATH_MAX_BYTES)
		return op_fail(c, -ENAMETOOLONG,
			       "Invalid %s %s: path too long (%zu bytes; the "
			       "limit is %d)",
			       what, QUOTE(given), strlen(given),
			       PATH_MAX_BYTES);
	if (path_check(given, &norm, &why) < 0)
		return op_fail(c, -EINVAL, "Invalid %s %s: %s", what,
			       QUOTE(given), why);
	/* The new folder's name must make links that work. */
	for (char *s = norm; is_new && s;) {
		char *e = strchr(s, '/');
		size_t l = e ? (size_t)(e - s) : strlen(s);
		if (s[0] == '.')
			return op_fail(c, -EINVAL,
				       "Invalid %s %s: names starting with "
				       "'.' are hidden from Obsidian",
				       what, QUOTE(given));
		if (strcspn(s, FORBIDDEN) < l)
			return op_fail(c, -EINVAL,
				       "Invalid %s %s: Obsidian does not allow "
				       "any of %s in names",
				       what, QUOTE(given), FORBIDDEN);
		s = e ? e + 1 : NULL;
	}
	*ret = TAKE_PTR(norm);
	return 0;
}

int op_rename_folder(struct tool_ctx *c)
{
	bool dry = arg_bool(c, "dry_run", false);
	/* Every write tool takes it; a folder has no version. */
	if (*arg_str(c, "expected_version", ""))
		return op_fail(c, -EINVAL,
			       "expected_version is a note's version; a "
			       "folder has none (rename_folder takes no "
			       "expected_version)");
	_cleanup_free_ char *from = NULL, *to = NULL;
	int r = folder_arg(c, "folder", arg_str(c, "old_path", ""), false,
			   &from);
	if (r < 0 ||
	    (r = folder_arg(c, "new folder", arg_str(c, "new_path", ""), true,
			    &to)) < 0)
		return r;
	WRITE_LOCKED(c);
	char *msg = NULL;
	struct vault_moved m;
	r = vault_rename_folder(c->v, from, to, c->source, false, dry, &m,
				&msg);
	return moved_result(c, r, &m, msg, false);
}

int op_delete_note(struct tool_ctx *c)
{
	const char *ref = arg_str(c, "name", "");
	bool dry = arg_bool(c, "dry_run", false);
	WRITE_LOCKED(c);
	struct note *n;
	int r = op_find(c, ref, &n);
	if (r < 0 || (r = check_expected_note(c, n)) < 0)
		return r;
	char *msg = NULL;
	struct vault_moved m;
	r = vault_delete(c->v, n, c->source, dry, &m, &msg);
	return moved_result(c, r, &m, msg, true);
}

/* ---- undo ------------------------------------------------------------------
 */

static int vault_fail(struct tool_ctx *c, int r, char *msg)
{
	free(c->msg);
	c->msg = msg ? msg : xstrdup(strerror(-r));
	return r;
}

/* Its text becomes text, unless it is that already. */
static int set_text(struct tool_ctx *c, const struct note *n, const char *text,
		    size_t len)
{
	_cleanup_free_ char *now = NULL;
	size_t nl;
	int r = vault_read_text(c->v, n, &now, &nl);
	if (r < 0)
		return op_fail(c, r, "Cannot read '%s': %s", note_path(n),
			       strerror(-r));
	if (nl == len && !memcmp(now, text, len))
		return 0;
	_cleanup_free_ char *path = xstrdup(note_path(n));
	return commit(c, path, text, len, false);
}

int op_undo_step(struct tool_ctx *c, enum undo_step step, const char *path,
		 const char *expect, const char *to, const char *text,
		 size_t len)
{
	WRITE_LOCKED(c);
	struct note *n = index_by_path(vault_index(c->v), path);
	if (step == UNDO_CREATE) {
		struct stat st;
		if (n || file_stat(vault_rootfd(c->v), path, &st) == 0)
			return op_fail(c, -ESTALE, "'%s' exists again", path);
		return commit(c, path, text, len, true);
	}
	if (!n)
		return op_fail(c, -ESTALE, "'%s' is gone", path);
	_cleanup_free_ char *now = NULL;
	size_t nl;
	int r = vault_read_text(c->v, n, &now, &nl);
	if (r < 0)
		return op_fail(c, r, "Cannot read '%s': %s", path,
			       strerror(-r));
	char ver[TEXT_VERSION_LEN + 1];
	text_version(now, nl, ver);
	if (strcmp(ver, expect) != 0)
		return op_fail(c, -ESTALE,
			       "'%s' changed meanwhile: it is now version %s",
			       path, ver);
	char *msg = NULL;
	switch (step) {
	case UNDO_TEXT:
		return set_text(c, n, text, len);
	case UNDO_TRASH:
		r = vault_delete(c->v, n, c->source, false, NULL, &msg);
		return r < 0 ? vault_fail(c, r, msg) : 0;
	case UNDO_RENAME:
		r = vault_rename(c->v, n, to, c->source, false, NULL, &msg);
		if (r < 0)
			return vault_fail(c, r, msg);
		n = index_by_path(vault_index(c->v), to);
		if (!n)
			return op_fail(c, -ENOENT, "'%s' is gone", to);
		return set_text(c, n, text, len);
	case UNDO_CREATE:
		break;
	}
	return 0;
}
