/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Write tools that edit part of a note's text: replace_text (with the
 * nearest lines shown when the text is not found), insert_text, and the
 * section tools (append_section, update_section, delete_section), which
 * the periodic notes' writes also use. Each goes through opw_edit_note.
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
	size_t bo = opw_body_offset(text, len);
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
	size_t bo = opw_body_offset(text, len);
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
	int r = opw_edit_note(c, ref, do_replace, NULL);
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
	size_t bo = opw_body_offset(text, len);
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
	int r = opw_edit_note(c, ref, do_insert, NULL);
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
	int r = opw_edit_note(c, ref, fn, NULL);
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
	edit_fn fn = *arg_str(c, "section", "") ? do_sec_append : opw_do_append;
	*ret_created = false;
	WRITE_LOCKED(c);
	struct note *n = index_by_path(vault_index(c->v), path);
	if (n) {
		/* Made meanwhile (Obsidian opened today's note): kept. */
		_cleanup_free_ char *p = xstrdup(note_path(n));
		return append ? opw_edit_note(c, p, fn, NULL) : 0;
	}
	_cleanup_free_ char *p = NULL, *nt = NULL;
	int r = opw_new_note_path(c, path, "", &p);
	if (r < 0)
		return r;
	if (append && (r = fn(c, p, initial, strlen(initial), &nt)) < 0)
		return r;
	const char *text = nt ? nt : initial;
	r = opw_write_or_try(c, p, NULL, 0, text, strlen(text), true);
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
