/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The history tools (seed 001): get_note_history, get_note_version,
 * diff_note_versions, restore_note_version. Texts as 001 shows them.
 */
#include "history.h"
#include "note.h"
#include "policy.h"
#include "tools.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * A note that is no longer there (deleted, or renamed away): its former
 * path, when the history has versions of it. ref may be the former path
 * (".md" optional), a former name at the top of the vault, or the note's
 * path in .trash/.
 */
static char *former_path(struct history *h, const char *ref)
{
	const char *p = ref;
	if (str_has_prefix(p, ".trash/"))
		p += strlen(".trash/");
	while (*p == '/')
		p++;
	if (!*p)
		return NULL;
	char *cand = str_has_suffix_ci(p, ".md") ? xstrdup(p)
						 : xasprintf("%s.md", p);
	struct history_version *v = NULL;
	size_t n = 0, total = 0;
	history_log(h, cand, 1, &v, &n, &total);
	history_versions_free(v, n);
	if (!total) {
		free(cand);
		return NULL;
	}
	return cand;
}

/*
 * What every history tool starts with: the history, and the current path
 * of the note the "name" argument names, or the former path of a note
 * that is gone (the vault's words when neither is found).
 */
static int history_note(struct tool_ctx *c, struct history **ret_h,
			char **ret_path)
{
	*ret_h = vault_history(c->v);
	if (!*ret_h)
		return op_fail(c, -EIO,
			       "Note history is not available: the history "
			       "repository could not be opened (see the "
			       "vaultd log). Notes themselves are not "
			       "affected.");
	READ_LOCKED(c);
	struct note *n;
	int r = op_find(c, arg_str(c, "name", ""), &n);
	if (r == -ENOENT) {
		char *fp = former_path(*ret_h, arg_str(c, "name", ""));
		if (fp) {
			free(c->msg);
			c->msg = NULL;
			*ret_path = fp;
			return 0;
		}
	}
	if (r < 0)
		return r;
	*ret_path = xstrdup(n->path);
	return 0;
}

/* "projects/ideas.md" -> "projects/ideas" (as 001 names notes). */
static char *shown(const char *path)
{
	size_t n = strlen(path);
	if (n > 3 && !strcmp(path + n - 3, ".md"))
		n -= 3;
	return xstrndup(path, n);
}

int op_get_note_history(struct tool_ctx *c)
{
	struct history *h;
	_cleanup_free_ char *path = NULL;
	int r = history_note(c, &h, &path);
	if (r < 0)
		return r;
	long limit = arg_int(c, "limit", 50);
	struct history_version *v = NULL;
	size_t n = 0, total = 0;
	history_log(h, path, (size_t)limit, &v, &n, &total);
	_cleanup_free_ char *name = shown(path);
	struct sbuf b = {0};
	_cleanup_free_ char *failing = n ? NULL : history_failing(h);
	if (!n && failing) {
		sb_printf(&b,
			  "No version history available for %s: recording "
			  "history is failing (%s). The note itself is not "
			  "affected; see `vaultctl status` and the vaultd "
			  "log.",
			  name, failing);
	} else if (!n && !history_recorded(h)) {
		sb_printf(&b,
			  "No version history available for %s yet: vaultd "
			  "has just started and is recording the notes as "
			  "they are; ask again in a moment.",
			  name);
	} else if (!n) {
		sb_printf(&b, "No version history available for %s", name);
	} else {
		sb_printf(&b, "Version history for %s:\n", name);
		for (size_t i = 0; i < n; i++) {
			char ts[32];
			format_iso8601(v[i].time, ts);
			sb_printf(&b, "\n- %s (%s) by %s\n  %s\n",
				  v[i].short_id, ts, v[i].author, v[i].message);
		}
		if (total > n)
			sb_printf(&b,
				  "\n(%zu of %zu versions shown; ask with a "
				  "higher limit, at most 100, for more)\n",
				  n, total);
	}
	history_versions_free(v, n);
	c->text = sb_steal(&b);
	return 0;
}

static int history_fail(struct tool_ctx *c, int r, char *err)
{
	r = op_fail(c, r, "%s", err ? err : "History error");
	free(err);
	return r;
}

int op_get_note_version(struct tool_ctx *c)
{
	struct history *h;
	_cleanup_free_ char *path = NULL;
	int r = history_note(c, &h, &path);
	if (r < 0)
		return r;
	const char *version = arg_str(c, "version", "");
	struct history_version ver = {0};
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	char *err = NULL;
	r = history_get(h, path, version, &ver, &text, &len, &err);
	if (r < 0)
		return history_fail(c, r, err);
	_cleanup_policy_ struct policy *pol = vault_policy_get(c->v);
	struct note *old =
		note_new(ver.path, text, len, policy_note_flags(pol));
	_cleanup_free_ char *shown_path = shown(ver.path);
	char created[32], updated[32];
	int64_t ct = history_created(h, path);
	format_iso8601(ct ? ct : ver.time, created);
	format_iso8601(ver.time, updated);
	struct sbuf b = {0};
	sb_printf(&b, "# %s (version %.7s)\n\n", old->name, ver.id);
	sb_printf(&b, "**Path:** %s\n**Tags:** ", shown_path);
	for (size_t i = 0; i < old->ntags; i++)
		sb_printf(&b, "%s%s", i ? ", " : "", old->tags[i]);
	if (!old->ntags)
		sb_puts(&b, "(none)");
	sb_printf(&b,
		  "\n**Version:** %.7s\n**Created:** %s\n**Updated:** "
		  "%s\n\n---\n\n",
		  ver.id, created, updated);
	sb_add(&b, text, len);
	note_free(old);
	version_clear(&ver);
	c->text = sb_steal(&b);
	return 0;
}

int op_diff_note_versions(struct tool_ctx *c)
{
	struct history *h;
	_cleanup_free_ char *path = NULL;
	int r = history_note(c, &h, &path);
	if (r < 0)
		return r;
	struct history_version a, b;
	_cleanup_free_ char *diff = NULL;
	size_t add = 0, del = 0;
	char *err = NULL;
	r = history_diff(h, path, arg_str(c, "from_version", ""),
			 arg_str(c, "to_version", ""), &diff, &add, &del, &a,
			 &b, &err);
	if (r < 0)
		return history_fail(c, r, err);
	_cleanup_free_ char *name = shown(path);
	struct sbuf s = {0};
	sb_printf(&s, "Diff for %s (%.7s \xe2\x86\x92 %.7s):\n\n", name, a.id,
		  b.id);
	sb_printf(&s, "+%zu additions, -%zu deletions\n\n", add, del);
	if (add || del)
		sb_puts(&s, diff);
	else
		sb_puts(&s, "(the two versions have the same text)\n");
	version_clear(&a);
	version_clear(&b);
	c->text = sb_steal(&s);
	return 0;
}

int op_restore_note_version(struct tool_ctx *c)
{
	const char *ref = arg_str(c, "name", "");
	struct history *h;
	_cleanup_free_ char *path = NULL;
	int r = history_note(c, &h, &path);
	if (r < 0)
		return r;
	struct history_version ver = {0};
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	char *err = NULL;
	r = history_get(h, path, arg_str(c, "version", ""), &ver, &text, &len,
			&err);
	if (r < 0)
		return history_fail(c, r, err);
	_cleanup_free_ char *id = xstrndup(ver.id, 7);
	version_clear(&ver);
	if (strlen(text) != len)
		return op_fail(c, -EINVAL,
			       "Version %s of %s holds a NUL byte and "
			       "cannot be restored as a note",
			       id, QUOTE(ref));
	/* A deleted note comes back at its old path, through the guard. */
	bool exists;
	{
		READ_LOCKED(c);
		exists = index_by_path(vault_index(c->v), path) != NULL;
	}
	r = exists ? op_write_text(c, path, text)
		   : op_create_text(c, path, text);
	if (r < 0)
		return r;
	c->text = xasprintf("Restored note %s to version %s", QUOTE(ref), id);
	return 0;
}
