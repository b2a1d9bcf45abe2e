/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Task tools: list_tasks (the tasks held with every note, filtered with
 * query_notes' expressions; pquery_task.c) and set_task_status (one
 * task's checkbox changed through the guarded write path, with the Tasks
 * plugin's done and cancelled dates when the vault uses its format).
 */
#include "fileio.h"
#include "json.h"
#include "markdown.h"
#include "pquery.h"
#include "tools.h"
#include "u8.h"

#include <errno.h>
#include <time.h>

/* The Tasks plugin's folder: a vault that has it uses its format. */
#define TASKS_PLUGIN_DIR ".obsidian/plugins/obsidian-tasks-plugin"

static void pq_freep(struct pquery **q)
{
	pq_free(*q);
}

static void ptypes_freep(struct ptypes **t)
{
	ptypes_free(*t);
}

/* Text for JSON: bytes that are not UTF-8 shown as U+FFFD. */
static cJSON *text_json(const char *s, size_t n)
{
	if (u8_valid(s, n)) {
		_cleanup_free_ char *t = xstrndup(s, n);
		return cJSON_CreateString(t);
	}
	_cleanup_free_ char *t = u8_repair(s, n);
	return cJSON_CreateString(t);
}

static void add_span(cJSON *o, const char *key, const char *s, size_t off,
		     size_t len)
{
	if (len)
		cJSON_AddItemToObject(o, key, text_json(s + off, len));
}

static void add_dates(cJSON *o, const struct task *t)
{
	for (int d = 0; d < TD_COUNT; d++) {
		if (t->dates[d] == TASK_NO_DATE)
			continue;
		struct qval v = {.t = QV_DATE,
				 .ms = (int64_t)t->dates[d] * 86400000LL};
		char buf[40];
		qv_format_date(&v, buf);
		cJSON_AddStringToObject(o, task_date_name(d), buf);
	}
}

/* What the task has of its description, tags and emoji fields. */
static void add_fields(cJSON *o, const struct task *t)
{
	_cleanup_free_ char *s = xstrndup(t->text, t->text_len);
	struct task_fields f;
	task_parse_fields(s, t->text_len, &f);
	if (f.any) {
		_cleanup_free_ char *d = task_description(s, &f);
		cJSON_AddItemToObject(o, "description",
				      text_json(d, strlen(d)));
	}
	if (t->ntags) {
		cJSON *tags = cJSON_AddArrayToObject(o, "tags");
		const char *p = t->tags;
		for (uint32_t i = 0; i < t->ntags; i++, p += strlen(p) + 1)
			cJSON_AddItemToArray(tags, text_json(p, strlen(p)));
	}
	add_dates(o, t);
	if (t->priority != TP_NORMAL)
		cJSON_AddStringToObject(o, "priority",
					task_priority_name(t->priority));
	add_span(o, "recurrence", s, f.recur_off, f.recur_len);
	add_span(o, "id", s, f.id_off, f.id_len);
	add_span(o, "depends_on", s, f.deps_off, f.deps_len);
	add_span(o, "on_completion", s, f.done_off, f.done_len);
}

/* One task as a row. */
static cJSON *task_json(const struct index *ix, const struct pq_task *pt)
{
	const struct task *t = &pt->t;
	cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *dn = index_display_name(ix, pt->note);
	cJSON_AddStringToObject(o, "name", dn);
	cJSON_AddStringToObject(o, "path", note_path(pt->note));
	cJSON_AddNumberToObject(o, "line", t->line);
	char sym[8];
	task_symbol_utf8(t->symbol, sym);
	cJSON_AddStringToObject(o, "symbol", sym);
	cJSON_AddStringToObject(
		o, "status", task_status_name(task_symbol_status(t->symbol)));
	cJSON_AddItemToObject(o, "text", text_json(t->text, t->text_len));
	cJSON *fields = cJSON_AddObjectToObject(o, "fields");
	add_fields(fields, t);
	return o;
}

int op_tasks_page(struct tool_ctx *c, struct pquery *q, const char *scope,
		  const struct ptypes *types, const struct note *this_note,
		  const char *key, long def_limit, cJSON *o)
{
	int r;
	struct index *ix = vault_index(c->v);
	size_t offset, limit;
	struct pq_env env;
	if ((r = op_pq_page(c, scope, types, this_note, def_limit, &env,
			    &offset, &limit)) < 0)
		return r;
	struct pq_task_page page;
	if ((r = pq_run_tasks(q, &env, offset, limit, &page)) < 0)
		return op_fail(c, r, "Cancelled");
	cJSON *rows = cJSON_AddArrayToObject(o, key);
	for (size_t i = 0; i < page.nrows; i++)
		cJSON_AddItemToArray(rows, task_json(ix, &page.rows[i]));
	op_cursor_next(o, scope, index_generation(ix), offset, page.nrows,
		       page.total);
	return 0;
}

int op_list_tasks(struct tool_ctx *c)
{
	static const char *const PARTS[] = {"where", "from", "sort"};
	_cleanup_(pq_freep) struct pquery *q = NULL;
	_cleanup_free_ char *msg = NULL;
	int r = pq_plain(arg_str(c, "where", NULL), arg_str(c, "from", NULL),
			 arg_str(c, "sort", NULL), NULL, &q, &msg);
	if (r < 0)
		return op_fail(c, r, "Cannot run the query: %s", msg);
	struct sbuf scope = {0};
	sb_puts(&scope, "list_tasks");
	for (size_t i = 0; i < ARRAY_SIZE(PARTS); i++)
		sb_printf(&scope, "\n%s", arg_str(c, PARTS[i], ""));
	_cleanup_(ptypes_freep) struct ptypes *types = NULL;
	_cleanup_free_ char *tmsg = NULL;
	if ((r = ptypes_load(vault_rootfd(c->v), &types, &tmsg)) < 0) {
		sb_free(&scope);
		return op_fail(c, r, "%s", tmsg);
	}
	READ_LOCKED(c);
	cJSON *o = cJSON_CreateObject();
	r = op_tasks_page(c, q, sb_str(&scope), types, NULL, "tasks", 100, o);
	sb_free(&scope);
	if (r < 0) {
		cJSON_Delete(o);
		return r;
	}
	c->json = o;
	return 0;
}

/* ---- set_task_status -------------------------------------------------- */

static const struct {
	const char *name;
	int32_t symbol;
} STATUS_WORDS[] = {
	{"todo", ' '}, {"open", ' '},	   {"in_progress", '/'},
	{"done", 'x'}, {"cancelled", '-'}, {"canceled", '-'},
};

static int status_symbol(struct tool_ctx *c, const char *s, int32_t *ret)
{
	for (size_t i = 0; i < ARRAY_SIZE(STATUS_WORDS); i++) {
		if (!strcasecmp(s, STATUS_WORDS[i].name)) {
			*ret = STATUS_WORDS[i].symbol;
			return 0;
		}
	}
	int32_t cp;
	size_t n = strlen(s);
	int l = u8_decode(s, n, &cp);
	if (l > 0 && (size_t)l == n && cp >= 0x20 && cp != 0x7f && cp != '[' &&
	    cp != ']') {
		*ret = cp;
		return 0;
	}
	return op_fail(c, -EINVAL,
		       "Invalid status %s: give todo, in_progress, done, "
		       "cancelled, or one character for the checkbox (as in "
		       "'[>]')",
		       QUOTE(s));
}

/* Whether the vault writes the Tasks plugin's emoji fields: it has the
 * plugin, or some task has such a field. */
static bool vault_uses_fields(struct tool_ctx *c)
{
	struct stat st;
	if (file_stat(vault_rootfd(c->v), TASKS_PLUGIN_DIR, &st) == 0)
		return true;
	size_t it = 0;
	struct note *n;
	const struct index *ix = vault_index(c->v);
	while (index_next(ix, &it, &n))
		if (tasks_use_fields(note_tasks(n), note_tasks_len(n)))
			return true;
	return false;
}

/* Where line `line` (1-based) is: [*ret_s, *ret_e). */
static bool find_line(const char *text, size_t len, long line, size_t *ret_s,
		      size_t *ret_e)
{
	size_t i = 0;
	for (long l = 1; l < line; l++) {
		const char *nl = memchr(text + i, '\n', len - i);
		if (!nl)
			return false;
		i = (size_t)(nl - text) + 1;
	}
	if (i > len || (i == len && line > 1 && len && text[len - 1] == '\n'))
		return false;
	const char *nl = memchr(text + i, '\n', len - i);
	*ret_s = i;
	*ret_e = nl ? (size_t)(nl - text) : len;
	return true;
}

/* The task's text as list_tasks shows it (U+FFFD for bytes that are not
 * UTF-8). */
static char *shown_text(const char *s, size_t n)
{
	return u8_valid(s, n) ? xstrndup(s, n) : u8_repair(s, n);
}

/* Trailing blanks of what the caller expects do not count. */
static bool text_matches(const char *s, size_t n, const char *want)
{
	_cleanup_free_ char *shown = shown_text(s, n);
	size_t wl = strlen(want);
	while (wl && (want[wl - 1] == ' ' || want[wl - 1] == '\t' ||
		      want[wl - 1] == '\r' || want[wl - 1] == '\n'))
		wl--;
	return strlen(shown) == wl && !memcmp(shown, want, wl);
}

/* The line (1-based) of another task whose text is want, or 0. */
static long find_moved(const char *text, size_t len, size_t body_off,
		       const unsigned char *mask, const char *want)
{
	long line = 1;
	for (size_t i = 0; i < len; line++) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - text) : len;
		struct task_line tl;
		if (i >= body_off && task_line_at(text, i, e, &tl) &&
		    !mask[tl.sym_off] &&
		    text_matches(text + tl.text_off, tl.text_end - tl.text_off,
				 want))
			return line;
		i = e + 1;
	}
	return 0;
}

/* The task at the line the caller names, as the caller expects it. */
static int locate_task(struct tool_ctx *c, const char *ref, const char *text,
		       size_t len, struct task_line *ret)
{
	long line = arg_int(c, "line", 0);
	const char *want = arg_str(c, "expected_text", "");
	size_t fs, fe, bo = 0, ls, le;
	if (!md_split_frontmatter(text, len, &fs, &fe, &bo))
		bo = 0;
	_cleanup_free_ unsigned char *mask = md_code_mask(text, len, bo);
	bool there = find_line(text, len, line, &ls, &le);
	bool task = there && ls >= bo && task_line_at(text, ls, le, ret) &&
		    !mask[ret->sym_off - 1] && !mask[ret->sym_off];
	if (task && text_matches(text + ret->text_off,
				 ret->text_end - ret->text_off, want))
		return 0;
	struct sbuf m = {0};
	if (!there) {
		sb_printf(&m, "Note %s has no line %ld.", QUOTE(ref), line);
	} else {
		_cleanup_free_ char *now = shown_text(text + ls, le - ls);
		sb_printf(&m,
			  "Line %ld of note %s is not the task %s (the line "
			  "moved, or the task changed): it now reads %s.",
			  line, QUOTE(ref), QUOTE(want), QUOTE(now));
	}
	long moved = find_moved(text, len, bo, mask, want);
	if (moved)
		sb_printf(&m, " That task is now at line %ld.", moved);
	sb_puts(&m, " Nothing was written; list the tasks again "
		    "(list_tasks) and retry.");
	int r = op_fail(c, -ESTALE, "%s", sb_str(&m));
	sb_free(&m);
	return r;
}

static void today(char out[11])
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(out, 11, "%Y-%m-%d", &tm);
}

static int do_set_status(struct tool_ctx *c, const char *ref, const char *text,
			 size_t len, char **ret)
{
	int32_t sym = 0;
	int r = status_symbol(c, arg_str(c, "status", ""), &sym);
	if (r < 0)
		return r;
	struct task_line tl;
	if ((r = locate_task(c, ref, text, len, &tl)) < 0)
		return r;
	const char *s = text + tl.text_off;
	size_t n = tl.text_end - tl.text_off;
	struct task_fields f;
	task_parse_fields(s, n, &f);
	if (f.recur_len && task_symbol_status(sym) == TASK_DONE &&
	    task_symbol_status(tl.symbol) != TASK_DONE)
		return op_fail(c, -EOPNOTSUPP,
			       "The task recurs (🔁 %.*s): completing it "
			       "would need its next occurrence, which vaultd "
			       "does not compute. Nothing was written; "
			       "complete it in Obsidian with the Tasks plugin.",
			       (int)f.recur_len, s + f.recur_off);
	char day[11];
	today(day);
	_cleanup_free_ char *nt =
		task_restamp(s, n, tl.symbol, sym, vault_uses_fields(c), day);
	char sb[8];
	task_symbol_utf8(sym, sb);
	struct sbuf out = {0};
	sb_add(&out, text, tl.sym_off);
	sb_puts(&out, sb);
	sb_add(&out, text + tl.sym_off + tl.sym_len,
	       tl.text_off - tl.sym_off - tl.sym_len);
	sb_puts(&out, nt);
	sb_add(&out, text + tl.text_end, len - tl.text_end);
	*ret = sb_steal(&out);
	cJSON_AddStringToObject(c->json, "symbol", sb);
	cJSON_AddStringToObject(c->json, "status",
				task_status_name(task_symbol_status(sym)));
	cJSON_AddItemToObject(c->json, "text", text_json(nt, strlen(nt)));
	return 0;
}

int op_set_task_status(struct tool_ctx *c)
{
	const char *ref = arg_str(c, "name", "");
	c->json = cJSON_CreateObject();
	cJSON_AddStringToObject(c->json, "name", ref);
	cJSON_AddNumberToObject(c->json, "line", (double)arg_int(c, "line", 0));
	int r = op_edit_text(c, ref, do_set_status);
	if (r < 0)
		cJSON_Delete(TAKE_PTR(c->json));
	return r;
}
