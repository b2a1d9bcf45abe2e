/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The history tools (seed 001): get_note_history, get_note_version,
 * diff_note_versions, restore_note_version. Texts as 001 shows them.
 * And the changes of an MCP session (or since a time): list_changes and
 * undo_changes.
 */
#include "fileio.h"
#include "history.h"
#include "hmap.h"
#include "json.h"
#include "note.h"
#include "policy.h"
#include "tools.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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
	*ret_path = xstrdup(note_path(n));
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
	sb_printf(&b, "# %s (version %.7s)\n\n", note_name(old), ver.id);
	sb_printf(&b, "**Path:** %s\n**Tags:** ", shown_path);
	for (size_t i = 0; i < note_ntags(old); i++)
		sb_printf(&b, "%s%s", i ? ", " : "", note_tag(old, i));
	if (!note_ntags(old))
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
	bool exists = op_note_exists(c, path);
	r = exists ? op_write_text(c, path, text)
		   : op_create_text(c, path, text);
	if (r < 0)
		return r;
	c->text = xasprintf("Restored note %s to version %s", QUOTE(ref), id);
	return 0;
}

/* ---- the changes of a session ----------------------------------------------
 */

/* Most changes one undo_changes takes on. */
#define UNDO_MAX 10000

/* How long a call waits for the recording at start. */
#define RECORDED_WAIT_MS 30000

/* The history, once it has recorded the notes as they were at start
 * (changes made meanwhile are held until then). */
static int history_ready(struct tool_ctx *c, struct history **ret)
{
	struct history *h = vault_history(c->v);
	if (!h)
		return op_fail(c, -EIO,
			       "Note history is not available: the history "
			       "repository could not be opened (see the "
			       "vaultd log).");
	for (int ms = 0; !history_recorded(h); ms += 20) {
		if (cancel_requested())
			return op_fail(c, -ECANCELED, "Cancelled");
		if (ms >= RECORDED_WAIT_MS)
			return op_fail(c, -ETIMEDOUT,
				       "vaultd is still recording the notes as "
				       "they were at start; try again in a "
				       "moment");
		nanosleep(&(struct timespec){0, 20000000}, NULL);
	}
	*ret = h;
	return 0;
}

/*
 * Which changes the arguments name: session, since, or both. With
 * neither, list_changes shows the caller's own session (need false) and
 * undo_changes refuses to guess (need true).
 */
static int changes_filter(struct tool_ctx *c, bool need,
			  struct history_filter *f)
{
	const char *session = arg_str(c, "session", NULL);
	const char *since = arg_str(c, "since", "");
	memset(f, 0, sizeof(*f));
	if (session && !session_id_valid(session))
		return op_fail(c, -EINVAL,
			       "Invalid session %s: a session id is 1 to %d "
			       "letters or digits, as list_changes shows it",
			       QUOTE(session), SESSION_ID_MAX);
	if (*since && parse_iso8601(since, &f->since) < 0)
		return op_fail(c, -EINVAL,
			       "Invalid since %s: an ISO 8601 time, e.g. "
			       "2024-01-15T10:00:00Z",
			       QUOTE(since));
	f->session = session;
	if (!session && !f->since) {
		if (need && c->session)
			return op_fail(c, -EINVAL,
				       "Say which changes to undo: session "
				       "(this session is %s) or since",
				       c->session);
		if (need)
			return op_fail(c, -EINVAL,
				       "Say which changes to undo: session "
				       "or since");
		f->session = c->session;
	}
	return 0;
}

static const char *change_word(const struct history_change *x)
{
	switch (x->kind) {
	case 'R':
		return "renamed";
	case 'D':
		return "deleted";
	default:
		return x->before[0] ? "changed" : "created";
	}
}

int op_list_changes(struct tool_ctx *c)
{
	struct history *h;
	struct history_filter f;
	int r = history_ready(c, &h);
	if (r < 0)
		return r;
	r = changes_filter(c, false, &f);
	if (r < 0)
		return r;
	_cleanup_free_ char *scope =
		xasprintf("changes|%s|%lld", f.session ? f.session : "",
			  (long long)f.since);
	const char *cursor = arg_str(c, "cursor", "");
	size_t start = 0;
	if (*cursor) {
		const char *why;
		if (cursor_parse(cursor, scope, 0, &start, &why) < 0)
			return op_fail(c, -EINVAL, "%s", why);
	}
	struct history_change *v = NULL;
	size_t n = 0;
	uint64_t next = 0;
	r = history_changes(h, &f, start, (size_t)arg_int(c, "limit", 50), &v,
			    &n, &next);
	if (r < 0)
		return op_fail(c, r, "Cannot read the history: %s",
			       history_error(h));
	cJSON *o = cJSON_CreateObject();
	if (f.session)
		cJSON_AddStringToObject(o, "session", f.session);
	cJSON *a = cJSON_AddArrayToObject(o, "changes");
	for (size_t i = 0; i < n; i++) {
		cJSON *x = cJSON_CreateObject();
		char ts[32];
		format_iso8601(v[i].time, ts);
		cJSON_AddStringToObject(x, "note", v[i].path);
		if (v[i].from)
			cJSON_AddStringToObject(x, "from", v[i].from);
		cJSON_AddStringToObject(x, "change", change_word(&v[i]));
		cJSON_AddStringToObject(x, "tool",
					str_has_prefix(v[i].writer, "mcp:")
						? v[i].writer + 4
						: v[i].writer);
		if (v[i].session)
			cJSON_AddStringToObject(x, "session", v[i].session);
		cJSON_AddStringToObject(x, "time", ts);
		cJSON_AddStringToObject(x, "before", v[i].before);
		cJSON_AddStringToObject(x, "after", v[i].after);
		cJSON_AddStringToObject(x, "commit", v[i].commit);
		cJSON_AddItemToArray(a, x);
	}
	if (next) {
		_cleanup_free_ char *nc = cursor_make(scope, 0, (size_t)next);
		cJSON_AddStringToObject(o, "next_cursor", nc);
	}
	history_changes_free(v, n);
	c->json = o;
	return 0;
}

/* One note the changes touched, from its state before them to after. */
struct urec {
	char *orig; /* its path before the changes */
	char *cur;  /* its path after them; NULL: deleted */
	char before[TEXT_VERSION_LEN + 1]; /* "": there was no note */
	char after[TEXT_VERSION_LEN + 1];  /* "": deleted */
	size_t last;  /* its newest change (larger: newer) */
	bool between; /* another writer changed it between the changes */
	/* The plan. */
	enum undo_step step;
	enum { U_DO, U_SAME, U_CONFLICT, U_NONE } what;
	const char *why;
	char *diff;
	char *before_text;
	size_t before_len;
};

static void urec_free(struct urec *r)
{
	free(r->orig);
	free(r->cur);
	free(r->diff);
	free(r->before_text);
	free(r);
}

/* Oldest first, one record per note, following renames. */
static size_t undo_records(const struct history_change *v, size_t n,
			   struct urec ***ret)
{
	struct hmap *live = hmap_new();
	/* Notes the changes deleted, by path: a note made there again
	 * (an undo's own, say) is the same note back. */
	struct hmap *deleted = hmap_new();
	struct urec **recs = NULL;
	size_t nr = 0;
	for (size_t i = n; i-- > 0;) {
		const struct history_change *x = &v[i];
		const char *at = x->kind == 'R' ? x->from : x->path;
		struct urec *r = hmap_get(live, at);
		if (!r && x->kind == 'C' && !*x->before)
			r = hmap_get(deleted, at);
		hmap_del(deleted, at);
		if (!r) {
			r = xcalloc(1, sizeof(*r));
			r->orig = xstrdup(at);
			memcpy(r->before, x->before, sizeof(r->before));
			recs = xrealloc(recs, (nr + 1) * sizeof(*recs));
			recs[nr++] = r;
		} else if (strcmp(r->after, x->before) != 0) {
			r->between = true;
		}
		hmap_del(live, at);
		free(r->cur);
		r->cur = NULL;
		memcpy(r->after, x->after, sizeof(r->after));
		r->last = n - i;
		if (x->kind != 'D') {
			/* A note the changes put out of the way there is
			 * gone as far as the others go. */
			struct urec *gone = hmap_get(live, x->path);
			if (gone && gone != r) {
				free(gone->cur);
				gone->cur = NULL;
				gone->after[0] = 0;
			}
			r->cur = xstrdup(x->path);
			hmap_put(live, x->path, r);
		} else {
			hmap_put(deleted, x->path, r);
		}
	}
	hmap_free(live);
	hmap_free(deleted);
	*ret = recs;
	return nr;
}

static int cmp_newest(const void *a, const void *b)
{
	const struct urec *x = *(struct urec *const *)a,
			  *y = *(struct urec *const *)b;
	return x->last < y->last ? 1 : x->last > y->last ? -1 : 0;
}

/* A version's text from the history ("" for no note). */
static char *text_of(struct history *h, const char *ver, size_t *ret_len)
{
	char *t = NULL;
	*ret_len = 0;
	if (!*ver || history_text_of(h, ver, &t, ret_len) < 0)
		return xstrdup("");
	return t;
}

/* The note now at path: its text and version (false: none there). */
static bool note_now(struct tool_ctx *c, const char *path, char **ret_text,
		     size_t *ret_len, char ver[TEXT_VERSION_LEN + 1])
{
	struct note *n = path ? index_by_path(vault_index(c->v), path) : NULL;
	*ret_text = NULL;
	*ret_len = 0;
	ver[0] = 0;
	if (!n || vault_read_text(c->v, n, ret_text, ret_len) < 0)
		return false;
	text_version(*ret_text, *ret_len, ver);
	return true;
}

static bool path_taken(struct tool_ctx *c, const char *path)
{
	struct stat st;
	return index_by_path(vault_index(c->v), path) ||
	       file_stat(vault_rootfd(c->v), path, &st) == 0;
}

/* What to do with one note (read lock held); conflicts get both diffs
 * in *ret_conflict. */
static void plan_one(struct tool_ctx *c, struct history *h, struct urec *r,
		     struct hmap *vacated, cJSON **ret_conflict)
{
	_cleanup_free_ char *now = NULL;
	size_t nl;
	char nv[TEXT_VERSION_LEN + 1];
	bool there = note_now(c, r->cur, &now, &nl, nv);
	_cleanup_free_ char *orig_now = NULL;
	size_t ol;
	char ov[TEXT_VERSION_LEN + 1];
	bool orig_there = note_now(c, r->orig, &orig_now, &ol, ov);
	*ret_conflict = NULL;
	r->what = U_DO;
	/* Made and deleted by the changes: nothing to undo. */
	if (!*r->before && !*r->after) {
		r->what = U_NONE;
		return;
	}
	/* Already as it was before them (undone, or changed back). */
	bool cur_clear = !r->cur || !strcmp(r->cur, r->orig) || !there;
	if (cur_clear &&
	    (*r->before ? orig_there && !strcmp(ov, r->before) : !orig_there)) {
		r->what = U_SAME;
		return;
	}
	if (r->between)
		r->why = "another writer changed it between these changes";
	else if (r->cur && !there)
		r->why = "it was deleted or moved after these changes";
	else if (r->cur && strcmp(nv, r->after) != 0)
		r->why = "another writer changed it after these changes";
	else if (*r->before && (!r->cur || strcmp(r->cur, r->orig) != 0) &&
		 path_taken(c, r->orig) && !hmap_get(vacated, r->orig))
		r->why = "another note is at its old path now";
	if (r->why) {
		r->what = U_CONFLICT;
		size_t bl, al;
		_cleanup_free_ char *bt = text_of(h, r->before, &bl);
		_cleanup_free_ char *at = text_of(h, r->after, &al);
		const char *cp = r->cur ? r->cur : r->orig;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "note", cp);
		cJSON_AddStringToObject(o, "why", r->why);
		char *d = text_diff(r->orig, bt, bl, cp, at, al, NULL, NULL);
		cJSON_AddStringToObject(o, "changes_diff", d);
		free(d);
		d = text_diff(cp, at, al, cp, there ? now : "", there ? nl : 0,
			      NULL, NULL);
		cJSON_AddStringToObject(o, "later_diff", d);
		free(d);
		*ret_conflict = o;
		return;
	}
	r->before_text = text_of(h, r->before, &r->before_len);
	if (!*r->before) {
		r->step = UNDO_TRASH;
		r->diff = text_diff(r->cur, now, nl, r->cur, "", 0, NULL, NULL);
	} else if (!r->cur) {
		r->step = UNDO_CREATE;
		r->diff = text_diff(r->orig, "", 0, r->orig, r->before_text,
				    r->before_len, NULL, NULL);
	} else {
		r->step = strcmp(r->cur, r->orig) ? UNDO_RENAME : UNDO_TEXT;
		r->diff = text_diff(r->cur, now, nl, r->orig, r->before_text,
				    r->before_len, NULL, NULL);
	}
}

/* What to do with each note (under the read lock): the conflicts and the
 * notes already as they were go to their arrays. */
static void plan_all(struct tool_ctx *c, struct history *h, struct urec **recs,
		     size_t nr, cJSON *conflicts, cJSON *same)
{
	READ_LOCKED(c);
	/* Paths the undo moves notes away from. */
	struct hmap *vacated = hmap_new();
	for (size_t i = 0; i < nr; i++)
		if (recs[i]->cur &&
		    (!*recs[i]->before || strcmp(recs[i]->cur, recs[i]->orig)))
			hmap_put(vacated, recs[i]->cur, recs[i]);
	for (size_t i = 0; i < nr; i++) {
		cJSON *conflict;
		plan_one(c, h, recs[i], vacated, &conflict);
		if (conflict)
			cJSON_AddItemToArray(conflicts, conflict);
		else if (recs[i]->what == U_SAME)
			cJSON_AddItemToArray(same,
					     cJSON_CreateString(recs[i]->orig));
	}
	hmap_free(vacated);
}

/* Undo what was planned (only the diffs when dry): undone, failed, and
 * every diff appended to all. */
static void apply_all(struct tool_ctx *c, struct urec **recs, size_t nr,
		      bool dry, cJSON *undone, cJSON *failed, struct sbuf *all)
{
	/* Texts first (a renamed note's links in other notes come back
	 * with them), then what leaves, what moves back, what returns. */
	static const enum undo_step order[] = {UNDO_TEXT, UNDO_TRASH,
					       UNDO_RENAME, UNDO_CREATE};
	static const char *const words[] = {
		[UNDO_TEXT] = "restored",
		[UNDO_TRASH] = "moved to .trash",
		[UNDO_RENAME] = "renamed back",
		[UNDO_CREATE] = "recreated",
	};
	for (size_t k = 0; k < ARRAY_SIZE(order); k++) {
		for (size_t i = 0; i < nr; i++) {
			struct urec *u = recs[i];
			if (u->what != U_DO || u->step != order[k])
				continue;
			const char *path = u->cur ? u->cur : u->orig;
			if (!dry) {
				int r = op_undo_step(c, u->step, path, u->after,
						     u->orig, u->before_text,
						     u->before_len);
				if (r < 0) {
					cJSON *x = cJSON_CreateObject();
					cJSON_AddStringToObject(x, "note",
								path);
					cJSON_AddStringToObject(
						x, "error",
						c->msg ? c->msg : strerror(-r));
					cJSON_AddItemToArray(failed, x);
					free(c->msg);
					c->msg = NULL;
					continue;
				}
			}
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "note", u->orig);
			if (u->cur && strcmp(u->cur, u->orig))
				cJSON_AddStringToObject(x, "from", u->cur);
			cJSON_AddStringToObject(x, "action", words[u->step]);
			cJSON_AddStringToObject(x, "diff", u->diff);
			cJSON_AddItemToArray(undone, x);
			sb_puts(all, u->diff);
		}
	}
}

int op_undo_changes(struct tool_ctx *c)
{
	struct history *h;
	struct history_filter f;
	int r = history_ready(c, &h);
	if (r < 0)
		return r;
	r = changes_filter(c, true, &f);
	if (r < 0)
		return r;
	bool dry = arg_bool(c, "dry_run", false);
	struct history_change *v = NULL;
	size_t n = 0;
	uint64_t next = 0;
	r = history_changes(h, &f, 0, UNDO_MAX, &v, &n, &next);
	if (r < 0)
		return op_fail(c, r, "Cannot read the history: %s",
			       history_error(h));
	if (next) {
		history_changes_free(v, n);
		return op_fail(c, -E2BIG,
			       "More than %d changes are selected; undo "
			       "fewer at a time (a later since)",
			       UNDO_MAX);
	}
	struct urec **recs = NULL;
	size_t nr = undo_records(v, n, &recs);
	history_changes_free(v, n);
	if (nr > 1)
		qsort(recs, nr, sizeof(*recs), cmp_newest);

	cJSON *o = cJSON_CreateObject();
	if (f.session)
		cJSON_AddStringToObject(o, "session", f.session);
	cJSON *undone = cJSON_AddArrayToObject(o, "undone");
	cJSON *same = cJSON_AddArrayToObject(o, "unchanged");
	cJSON *conflicts = cJSON_AddArrayToObject(o, "conflicts");
	cJSON *failed = cJSON_AddArrayToObject(o, "failed");
	plan_all(c, h, recs, nr, conflicts, same);
	struct sbuf all = {0};
	apply_all(c, recs, nr, dry, undone, failed, &all);
	for (size_t i = 0; i < nr; i++)
		urec_free(recs[i]);
	free(recs);
	if (dry)
		c->dry_diff = all.s ? sb_steal(&all) : xstrdup("");
	sb_free(&all);
	c->json = o;
	return 0;
}
