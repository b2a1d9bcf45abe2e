/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Policy violations: the ring of recent ones in memory, the JSON lines
 * of .vaultd/violations.jsonl that keep them across restarts (read at
 * open, appended to as they happen), and the refused texts kept under
 * .vaultd/rejected. Takes vmu only (the ring and the append, so that
 * lines never interleave).
 */
#include "vault_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>

#define MAX_VIOLATIONS 1000
#define VIOLATIONS_PATH ".vaultd/violations.jsonl"
#define REJECTED_DIR ".vaultd/rejected"

static void violation_clear(struct vault_violation *o)
{
	free(o->time);
	free(o->source);
	free(o->path);
	free(o->message);
	free(o->action);
	free(o->rejected_text);
}

void vault_violations_free(struct vault_violation *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		violation_clear(&a[i]);
	free(a);
}

/* Append to the ring (vmu held, or before the vault is shared). */
static void violation_push(struct vault *v, const struct vault_violation *o)
{
	if (v->nviolations == MAX_VIOLATIONS) {
		violation_clear(&v->violations[0]);
		memmove(v->violations, v->violations + 1,
			--v->nviolations * sizeof(*v->violations));
	}
	v->violations = xrealloc(v->violations,
				 (v->nviolations + 1) * sizeof(*v->violations));
	v->violations[v->nviolations++] = *o;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static char *member(const cJSON *o, const char *key)
{
	return dup_or_null(cJSON_GetStringValue(cJSON_GetObjectItem(o, key)));
}

/* The file is JSON lines, one object per violation (as written below). */
void vault_violations_load(struct vault *v)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (file_read(v->rootfd, VIOLATIONS_PATH, 64u << 20, &text, &len,
		      NULL) < 0)
		return;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		if (cJSON_IsObject(o))
			violation_push(v, &(struct vault_violation){
						  member(o, "time"),
						  member(o, "source"),
						  member(o, "path"),
						  member(o, "message"),
						  member(o, "action"),
						  member(o, "rejected_text"),
					  });
		cJSON_Delete(o);
	}
}
void vault_record_violation(struct vault *v, const char *source,
			    const char *path, const char *message,
			    const char *rejected_path, bool accepted)
{
	char ts[32];
	format_iso8601(now_s(), ts);
	struct vault_violation r = {
		xstrdup(ts),
		xstrdup(source ? source : "unknown"),
		xstrdup(path),
		xstrdup(message),
		xstrdup(accepted ? "warned" : "refused"),
		rejected_path ? xstrdup(rejected_path) : NULL,
	};
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "time", r.time);
	cJSON_AddStringToObject(o, "source", r.source);
	cJSON_AddStringToObject(o, "path", r.path);
	cJSON_AddStringToObject(o, "message", r.message);
	cJSON_AddStringToObject(o, "action", r.action);
	if (r.rejected_text)
		cJSON_AddStringToObject(o, "rejected_text", r.rejected_text);
	char *line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	pthread_mutex_lock(&v->vmu);
	violation_push(v, &r);
	/* Appended as one write: lines never interleave. */
	if (file_mkdirs(v->rootfd, ".vaultd") == 0) {
		_cleanup_close_ int fd =
			beneath_open(v->rootfd, VIOLATIONS_PATH,
				     O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			_cleanup_free_ char *l = xasprintf("%s\n", line);
			if (write(fd, l, strlen(l)) < 0) {
			}
		}
	}
	pthread_mutex_unlock(&v->vmu);
	cJSON_free(line);
}

struct vault_violation *vault_violations(struct vault *v, int limit,
					 size_t *ret_n)
{
	pthread_mutex_lock(&v->vmu);
	size_t n = v->nviolations;
	if (limit > 0 && (size_t)limit < n)
		n = (size_t)limit;
	struct vault_violation *out = xcalloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		const struct vault_violation *o =
			&v->violations[v->nviolations - 1 - i];
		out[i] = (struct vault_violation){
			dup_or_null(o->time),	dup_or_null(o->source),
			dup_or_null(o->path),	dup_or_null(o->message),
			dup_or_null(o->action), dup_or_null(o->rejected_text),
		};
	}
	pthread_mutex_unlock(&v->vmu);
	*ret_n = n;
	return out;
}

static char *save_rejected_in(struct vault *v, const char *dir, const char *ts,
			      const char *flat, const char *text, size_t len,
			      int *ret_err)
{
	for (int i = 1; i < 1000; i++) {
		char *rel = i == 1 ? xasprintf("%s%s-%s", dir, ts, flat)
				   : xasprintf("%s%s-%d-%s", dir, ts, i, flat);
		int r = file_write_atomic(v->rootfd, rel, text, len,
					  WRITE_NOREPLACE | WRITE_MKDIRS, NULL);
		if (r == 0)
			return rel;
		free(rel);
		*ret_err = r;
		if (r != -EEXIST)
			break;
	}
	return NULL;
}

/*
 * Keep refused text: .vaultd/rejected/<time>-<path with / as __>. When
 * that folder cannot be used (a symlink planted there, a full disk),
 * directly in .vaultd/ as rejected-<time>-<path>, and *ret_why says why.
 * NULL: the text could not be kept anywhere (*ret_why says why).
 */
char *vault_save_rejected(struct vault *v, const char *path, const char *text,
			  size_t len, char **ret_why)
{
	char ts[32];
	format_iso8601(now_s(), ts);
	for (char *p = ts; *p; p++)
		if (*p == '-' || *p == ':')
			memmove(p, p + 1, strlen(p));
	struct sbuf flat = {0};
	for (const char *p = path; *p; p++) {
		if (*p == '/')
			sb_puts(&flat, "__");
		else
			sb_putc(&flat, *p);
	}
	int err = 0, err2 = 0;
	char *rel = save_rejected_in(v, REJECTED_DIR "/", ts, flat.s, text, len,
				     &err);
	if (!rel) {
		rel = save_rejected_in(v, ".vaultd/rejected-", ts, flat.s, text,
				       len, &err2);
		*ret_why = rel ? xasprintf(".vaultd/rejected cannot be used "
					   "(%s)",
					   strerror(-err))
			       : xasprintf("it could not be saved: %s",
					   strerror(-err2));
	}
	sb_free(&flat);
	return rel;
}

/* ---- writes ------------------------------------------------------------ */
