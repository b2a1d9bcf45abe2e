/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Write tools. Each one is a read-modify-write under the vault's writer
 * lock, ending in vault_commit(): the one guarded, atomic write path.
 */
#include "fileio.h"
#include "frontmatter.h"
#include "history.h"
#include "markdown.h"
#include "json.h"
#include "shape.h"
#include "tools.h"
#include "u8.h"
#include "note_int.h"

#include <ctype.h>
#include <errno.h>

struct wlock {
	struct vault *v;
};
static void wlock_release(struct wlock *l)
{
	if (l->v)
		vault_write_unlock(l->v);
}
#define WRITE_LOCKED(c)                                        \
	_cleanup_(wlock_release) struct wlock _wl_ = {(c)->v}; \
	vault_write_lock((c)->v)

/* Characters Obsidian refuses in file names (they break links). */
static const char FORBIDDEN[] = "*\"\\<>:|?#^[]";

/*
 * A path for a new note from a name the client gave: "x", "dir/x" or
 * "dir/x.md". A bare name lands in `default_dir` ("" = vault root).
 */
static int new_note_path(struct tool_ctx *c, const char *given,
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
static int check_expected(struct tool_ctx *c, const struct note *n,
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
		  n->path, QUOTE(want), now);
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
		_cleanup_free_ char *d = text_diff(n->path, old, ol, n->path,
						   text, len, &add, &del);
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
		return op_fail(c, r, "Cannot read note '%s': %s", n->path,
			       strerror(-r));
	return check_expected(c, n, text, len);
}

/*
 * Write a note's new text, or with dry_run only say how it would change:
 * the unified diff (as diff_note_versions shows it after the write).
 */
static int write_or_try(struct tool_ctx *c, const char *path, const char *old,
			size_t old_len, const char *nt, size_t nt_len,
			bool create)
{
	if (arg_bool(c, "dry_run", false)) {
		free(c->dry_diff);
		c->dry_diff = text_diff(path, old ? old : "", old ? old_len : 0,
					path, nt, nt_len, NULL, NULL);
		return 0;
	}
	return commit(c, path, nt, nt_len, create);
}

typedef int (*edit_fn)(struct tool_ctx *c, const char *ref, const char *text,
		       size_t len, char **ret_new);

/* Find, read, edit and commit one note (writer lock held by caller). */
static int edit_note(struct tool_ctx *c, const char *ref, edit_fn fn,
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
		return op_fail(c, r, "Cannot read note '%s': %s", n->path,
			       strerror(-r));
	if ((r = check_expected(c, n, text, len)) < 0)
		return r;
	_cleanup_free_ char *nt = NULL;
	r = fn(c, ref, text, len, &nt);
	if (r < 0)
		return r;
	_cleanup_free_ char *path = xstrdup(n->path);
	if (strlen(nt) != len || memcmp(nt, text, len) != 0 ||
	    arg_bool(c, "dry_run", false)) {
		r = write_or_try(c, path, text, len, nt, strlen(nt), false);
		if (r < 0)
			return r;
	}
	if (ret_note)
		*ret_note = index_by_path(vault_index(c->v), path);
	return 0;
}

static size_t body_offset(const char *text, size_t len)
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
	r = new_note_path(c, name, "", &path);
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
		return op_fail(c, -EIO, "Cannot read note '%s'", old->path);
	}
	r = write_or_try(c, path, was, wl, sb_str(&text), text.len, !old);
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

static int do_append(struct tool_ctx *c, const char *ref, const char *text,
		     size_t len, char **ret)
{
	const char *add = arg_str(c, "text", "");
	size_t bo = body_offset(text, len), e = len;
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
	size_t bo = body_offset(text, len), b = bo;
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
	add_head(&out, text, body_offset(text, len));
	sb_puts(&out, arg_str(c, "content", ""));
	*ret = sb_steal(&out);
	return 0;
}

static int simple_edit(struct tool_ctx *c, edit_fn fn, const char *status)
{
	const char *ref = arg_str(c, "name", "");
	WRITE_LOCKED(c);
	int r = edit_note(c, ref, fn, NULL);
	if (r < 0)
		return r;
	c->json = status_json(ref, status);
	return 0;
}

int op_edit_text(struct tool_ctx *c, const char *ref, op_edit_fn fn)
{
	WRITE_LOCKED(c);
	return edit_note(c, ref, fn, NULL);
}

int op_append_note(struct tool_ctx *c)
{
	return simple_edit(c, do_append, "appended");
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
	int r = new_note_path(c, path, "", &p);
	if (r < 0)
		return r;
	if (index_by_path(vault_index(c->v), p)) {
		_cleanup_free_ char *nm = path_note_name(p);
		return op_fail(c, -EEXIST, "Note %s already exists", QUOTE(nm));
	}
	return write_or_try(c, p, NULL, 0, text, strlen(text), true);
}

int op_write_text(struct tool_ctx *c, const char *ref, const char *text)
{
	WRITE_LOCKED(c);
	c->replacement = text;
	int r = edit_note(c, ref, do_replace_whole, NULL);
	c->replacement = NULL;
	return r;
}

struct replace_state {
	int count;
};

/* Lowercase ASCII copy (for matching words, whatever their case). */
static char *lower_dup(const char *s, size_t n)
{
	char *r = xstrndup(s, n);
	for (char *p = r; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return r;
}

/*
 * What to say when an anchor (old_text, a pattern) is not in the note:
 * the body lines most like it — one holding it in another case first,
 * then those sharing the most of its words — with their line numbers and
 * a few words of context, so that the caller can correct it.
 */
static void nearest_lines(struct sbuf *m, const char *text, size_t len,
			  const char *needle)
{
	size_t bo = body_offset(text, len);
	size_t nl = strcspn(needle, "\n");
	_cleanup_free_ char *low = lower_dup(needle, nl);
	struct cand {
		int score, line;
		size_t at, n;
	} best[3] = {{0}};
	int line = 1;
	for (size_t i = 0; i < bo; i++)
		line += text[i] == '\n';
	for (size_t i = bo; i < len; line++) {
		const char *e = memchr(text + i, '\n', len - i);
		size_t n = e ? (size_t)(e - (text + i)) : len - i;
		_cleanup_free_ char *l = lower_dup(text + i, n);
		int score = (*low && strstr(l, low)) ? 1000 : 0;
		if (!score) {
			/* Words of the anchor (2 letters or more) in it. */
			_cleanup_free_ char *w = xstrdup(low);
			char *save = NULL;
			for (char *t = strtok_r(w, " \t.,;:!?()[]{}\"'", &save);
			     t; t = strtok_r(NULL, " \t.,;:!?()[]{}\"'", &save))
				if (strlen(t) > 1 && strstr(l, t))
					score++;
		}
		for (int k = 0; k < 3 && score; k++) {
			if (score > best[k].score) {
				memmove(&best[k + 1], &best[k],
					(size_t)(2 - k) * sizeof(best[0]));
				best[k] = (struct cand){score, line, i, n};
				break;
			}
		}
		i += n + 1;
	}
	if (!best[0].score) {
		sb_puts(m, " No line of the note looks like it.");
		return;
	}
	sb_puts(m, " The lines most like it:");
	for (int k = 0; k < 3 && best[k].score; k++) {
		size_t n = best[k].n;
		const char *l = text + best[k].at;
		size_t keep = n > 80 ? 80 : n;
		while (keep < n && keep &&
		       ((unsigned char)l[keep] & 0xc0) == 0x80)
			keep--;
		sb_printf(m, "\n  line %d: %.*s%s", best[k].line, (int)keep, l,
			  keep < n ? "\u2026" : "");
	}
}

static int do_replace(struct tool_ctx *c, const char *ref, const char *text,
		      size_t len, char **ret)
{
	const char *old = arg_str(c, "old_text", "");
	const char *neu = arg_str(c, "new_text", "");
	bool all = arg_bool(c, "replace_all", false);
	size_t ol = strlen(old);
	if (!ol)
		return op_fail(c, -EINVAL, "old_text must not be empty");
	size_t bo = body_offset(text, len);
	struct sbuf out = {0};
	sb_add(&out, text, bo);
	const char *p = text + bo;
	int count = 0;
	for (;;) {
		const char *hit = (all || !count) ? strstr(p, old) : NULL;
		if (!hit)
			break;
		sb_add(&out, p, (size_t)(hit - p));
		sb_puts(&out, neu);
		p = hit + ol;
		count++;
	}
	sb_puts(&out, p);
	if (!count) {
		sb_free(&out);
		struct sbuf m = {0};
		sb_printf(&m, "Text %s not found in note %s.", QUOTE(old),
			  QUOTE(ref));
		nearest_lines(&m, text, len, old);
		int r = op_fail(c, -ENOENT, "%s", sb_str(&m));
		sb_free(&m);
		return r;
	}
	cJSON_AddNumberToObject(c->json, "replaced", count);
	*ret = sb_steal(&out);
	return 0;
}

int op_replace_text(struct tool_ctx *c)
{
	const char *ref = arg_str(c, "name", "");
	c->json = cJSON_CreateObject();
	cJSON_AddStringToObject(c->json, "name", ref);
	WRITE_LOCKED(c);
	int r = edit_note(c, ref, do_replace, NULL);
	if (r < 0) {
		cJSON_Delete(TAKE_PTR(c->json));
		return r;
	}
	return 0;
}

static int do_insert(struct tool_ctx *c, const char *ref, const char *text,
		     size_t len, char **ret)
{
	const char *add = arg_str(c, "text", "");
	const char *before = arg_str(c, "before", "");
	const char *after = arg_str(c, "after", "");
	const char *pat = *before ? before : after;
	size_t bo = body_offset(text, len);
	const char *hit = strstr(text + bo, pat);
	if (!hit) {
		struct sbuf m = {0};
		sb_printf(&m, "Pattern %s not found in note %s.", QUOTE(pat),
			  QUOTE(ref));
		nearest_lines(&m, text, len, pat);
		int r = op_fail(c, -ENOENT, "%s", sb_str(&m));
		sb_free(&m);
		return r;
	}
	size_t ls = (size_t)(hit - text);
	while (ls > bo && text[ls - 1] != '\n')
		ls--;
	const char *nl = strchr(hit, '\n');
	size_t le = nl ? (size_t)(nl - text) + 1 : len;
	if (*before)
		*ret = xasprintf("%.*s%s\n%s", (int)ls, text, add, text + ls);
	else if (nl)
		*ret = xasprintf("%.*s%s\n%s", (int)le, text, add, text + le);
	else
		*ret = xasprintf("%s\n%s", text, add);
	return 0;
}

int op_insert_text(struct tool_ctx *c)
{
	const char *ref = arg_str(c, "name", "");
	const char *before = arg_str(c, "before", "");
	const char *after = arg_str(c, "after", "");
	if (!*before == !*after)
		return op_fail(c, -EINVAL,
			       "Exactly one of 'before' or 'after' must be "
			       "provided");
	WRITE_LOCKED(c);
	int r = edit_note(c, ref, do_insert, NULL);
	if (r < 0)
		return r;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", ref);
	cJSON_AddStringToObject(o, "position", *before ? "before" : "after");
	cJSON_AddStringToObject(o, "pattern", *before ? before : after);
	c->json = o;
	return 0;
}

/* ---- sections
 * ------------------------------------------------------------------ */

enum section_op { SEC_APPEND, SEC_UPDATE, SEC_DELETE };

/* A section that is not there: the error lists the note's headings. */
static int section_missing(struct tool_ctx *c, const char *ref,
			   const char *text, size_t len, const char *sec)
{
	struct sbuf m = {0};
	sb_printf(&m, "Section %s not found in note %s.", QUOTE(sec),
		  QUOTE(ref));
	struct md_doc d;
	md_scan(text, len, &d);
	struct md_heading *h = d.headings;
	size_t nh = d.nheadings;
	if (!nh)
		sb_puts(&m, " The note has no headings.");
	for (size_t i = 0; i < nh && i < 20; i++)
		sb_printf(&m, "%s\n  line %d: %.*s %s",
			  i ? "" : " Its headings:", h[i].line, h[i].level,
			  "######", h[i].text);
	if (nh > 20)
		sb_printf(&m, "\n  (and %zu more; get_headings lists all)",
			  nh - 20);
	md_doc_clear(&d);
	int r = op_fail(c, -ENOENT, "%s", sb_str(&m));
	sb_free(&m);
	return r;
}

static int section_edit(struct tool_ctx *c, const char *ref, const char *text,
			size_t len, char **ret, enum section_op op)
{
	const char *sec = arg_str(c, "section", "");
	size_t s, b, e;
	if (md_find_section(text, len, sec, &s, &b, &e) < 0)
		return section_missing(c, ref, text, len, sec);
	if (op == SEC_DELETE) {
		*ret = xasprintf("%.*s%s", (int)s, text, text + e);
		return 0;
	}
	const char *add = arg_str(c, op == SEC_APPEND ? "text" : "content", "");
	/* The section's content ends at its last non-blank character;
	 * blank lines before the next heading stay as they are. */
	size_t t = e;
	while (t > b && isspace((unsigned char)text[t - 1]))
		t--;
	const char *lead = (b > 0 && text[b - 1] != '\n') ? "\n" : "";
	if (t == b) {
		const char *trail = b < len ? "\n" : "";
		*ret = xasprintf("%.*s%s%s%s%s", (int)b, text, lead, add, trail,
				 text + b);
	} else if (op == SEC_APPEND) {
		*ret = xasprintf("%.*s\n%s%s", (int)t, text, add, text + t);
	} else {
		*ret = xasprintf("%.*s%s%s", (int)b, text, add, text + t);
	}
	return 0;
}

static int do_sec_append(struct tool_ctx *c, const char *ref, const char *t,
			 size_t l, char **ret)
{
	return section_edit(c, ref, t, l, ret, SEC_APPEND);
}

static int do_sec_update(struct tool_ctx *c, const char *ref, const char *t,
			 size_t l, char **ret)
{
	return section_edit(c, ref, t, l, ret, SEC_UPDATE);
}

static int do_sec_delete(struct tool_ctx *c, const char *ref, const char *t,
			 size_t l, char **ret)
{
	return section_edit(c, ref, t, l, ret, SEC_DELETE);
}

static int section_tool(struct tool_ctx *c, edit_fn fn, const char *status)
{
	const char *ref = arg_str(c, "name", "");
	WRITE_LOCKED(c);
	int r = edit_note(c, ref, fn, NULL);
	if (r < 0)
		return r;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", ref);
	cJSON_AddStringToObject(o, "section", arg_str(c, "section", ""));
	cJSON_AddStringToObject(o, "status", status);
	c->json = o;
	return 0;
}

int op_periodic_write(struct tool_ctx *c, const char *path, const char *initial,
		      bool append, bool *ret_created)
{
	edit_fn fn = *arg_str(c, "section", "") ? do_sec_append : do_append;
	*ret_created = false;
	WRITE_LOCKED(c);
	struct note *n = index_by_path(vault_index(c->v), path);
	if (n) {
		/* Made meanwhile (Obsidian opened today's note): kept. */
		_cleanup_free_ char *p = xstrdup(n->path);
		return append ? edit_note(c, p, fn, NULL) : 0;
	}
	_cleanup_free_ char *p = NULL, *nt = NULL;
	int r = new_note_path(c, path, "", &p);
	if (r < 0)
		return r;
	if (append && (r = fn(c, p, initial, strlen(initial), &nt)) < 0)
		return r;
	const char *text = nt ? nt : initial;
	r = write_or_try(c, p, NULL, 0, text, strlen(text), true);
	if (r == 0)
		*ret_created = !arg_bool(c, "dry_run", false);
	return r;
}

int op_append_section(struct tool_ctx *c)
{
	return section_tool(c, do_sec_append, "appended");
}

int op_update_section(struct tool_ctx *c)
{
	return section_tool(c, do_sec_update, "updated");
}

int op_delete_section(struct tool_ctx *c)
{
	return section_tool(c, do_sec_delete, "deleted");
}

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
	int r = edit_note(c, ref, do_set_fm, NULL);
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
	int r = edit_note(c, ref, do_update_fm, &n);
	if (r < 0)
		return r;
	_cleanup_free_ char *text = NULL;
	size_t len;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", ref);
	if (n && vault_read_text(c->v, n, &text, &len) == 0) {
		struct frontmatter fm;
		fm_parse(text, len, &fm);
		cJSON_AddStringToObject(o, "path", n->path);
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
		return op_fail(c, r, "Cannot read note '%s': %s", n->path,
			       strerror(-r));
	if ((r = check_expected(c, n, text, len)) < 0)
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
	_cleanup_free_ char *path = xstrdup(n->path);
	bool change = add ? !present : present;
	if (change) {
		_cleanup_free_ char *nt = NULL;
		fm_set(text, len, key, list, &nt);
		r = write_or_try(c, path, text, len, nt, strlen(nt), false);
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
	_cleanup_free_ char *dir = xstrndup(n->path, n->dirlen);
	_cleanup_free_ char *path = NULL;
	if ((r = new_note_path(c, to, dir, &path)) < 0)
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
		return op_fail(c, r, "Cannot read '%s': %s", n->path,
			       strerror(-r));
	if (nl == len && !memcmp(now, text, len))
		return 0;
	_cleanup_free_ char *path = xstrdup(n->path);
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
