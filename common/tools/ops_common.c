/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fileio.h"
#include "json.h"
#include "tools.h"

#include <errno.h>
#include <stdio.h>

const char *arg_str(const struct tool_ctx *c, const char *key, const char *def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, key);
	return cJSON_IsString(v) ? v->valuestring : def;
}

long arg_int(const struct tool_ctx *c, const char *key, long def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, key);
	return cJSON_IsNumber(v) ? (long)v->valuedouble : def;
}

bool arg_bool(const struct tool_ctx *c, const char *key, bool def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, key);
	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

void rlock_release(struct rlock *l)
{
	if (l->v)
		vault_read_unlock(l->v);
}

cJSON *str_array(char *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return a;
}

struct page page_args(const struct tool_ctx *c)
{
	return (struct page){.offset = (size_t)arg_int(c, "offset", 0),
			     .limit = (size_t)arg_int(c, "limit", 1000)};
}

bool op_note_exists(struct tool_ctx *c, const char *path)
{
	READ_LOCKED(c);
	return index_by_path(vault_index(c->v), path) != NULL;
}

bool page_take(struct page *p)
{
	size_t i = p->total++;
	return i >= p->offset && i - p->offset < p->limit;
}

void page_add(cJSON *o, const struct page *p)
{
	cJSON_AddNumberToObject(o, "total", (double)p->total);
	if (p->offset + p->limit < p->total)
		cJSON_AddNumberToObject(o, "next_offset",
					(double)(p->offset + p->limit));
}

int cmp_note_name(const void *a, const void *b)
{
	const struct note *x = *(struct note *const *)a;
	const struct note *y = *(struct note *const *)b;
	int r = strcmp(note_fold_name(x), note_fold_name(y));
	return r ? r : strcmp(note_path(x), note_path(y));
}

int op_cursor_offset(struct tool_ctx *c, const char *scope, uint64_t gen,
		     size_t *ret_offset)
{
	*ret_offset = 0;
	const char *cursor = arg_str(c, "cursor", NULL);
	const char *why;
	if (cursor && *cursor &&
	    cursor_parse(cursor, scope, gen, ret_offset, &why) < 0)
		return op_fail(c, -EINVAL, "Invalid cursor: %s", why);
	return 0;
}

void op_cursor_next(cJSON *o, const char *scope, uint64_t gen, size_t offset,
		    size_t n, size_t total)
{
	cJSON_AddNumberToObject(o, "total", (double)total);
	if (offset + n < total) {
		_cleanup_free_ char *next = cursor_make(scope, gen, offset + n);
		cJSON_AddStringToObject(o, "next_cursor", next);
	}
}

int op_fail(struct tool_ctx *c, int err, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&b, fmt, ap);
	va_end(ap);
	free(c->msg);
	c->msg = sb_steal(&b);
	return err < 0 ? err : -EINVAL;
}

int op_name_len(struct tool_ctx *c, const char *ref)
{
	size_t n = strnlen(ref, PATH_MAX_BYTES + 1);
	if (n <= PATH_MAX_BYTES)
		return 0;
	return op_fail(c, -ENAMETOOLONG,
		       "Invalid note name %s: name too long (%zu bytes; the "
		       "limit is %d)",
		       QUOTE(ref), strlen(ref), PATH_MAX_BYTES);
}

int op_find(struct tool_ctx *c, const char *ref, struct note **ret)
{
	_cleanup_free_ char *norm = NULL;
	const char *why;
	int r = op_name_len(c, ref);
	if (r < 0)
		return r;
	if (path_check(ref, &norm, &why) < 0)
		return op_fail(c, -EINVAL, "Invalid note name %s: %s",
			       QUOTE(ref), why);
	struct ptrvec cands = {0};
	r = index_find(vault_index(c->v), norm, ret, &cands);
	if (r == -ENOENT) {
		pv_free(&cands);
		return op_fail(c, -ENOENT, "Note %s not found", QUOTE(ref));
	}
	if (r == -EEXIST) {
		struct sbuf b = {0};
		for (size_t i = 0; i < cands.n; i++) {
			const struct note *n = cands.v[i];
			sb_printf(&b, "%s%s", i ? ", " : "", note_path(n));
		}
		pv_free(&cands);
		r = op_fail(c, -ENOTUNIQ,
			    "Ambiguous name %s: matches %s. Use the path to "
			    "choose one.",
			    QUOTE(ref), b.s);
		sb_free(&b);
		return r;
	}
	pv_free(&cands);
	return 0;
}
