/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a vault's vaultd sends back: answers routed to the request that
 * waits for them (a tool result held until the auto-context is in),
 * events turned into notifications (resource updates, list changes,
 * log messages), progress, and a vaultd that went away.
 */
#include "mcp_int.h"

/* ---- from the daemon
 * ------------------------------------------------------------------ */

/* A first tool result waits for the context block; true when held (p
 * is kept, in order). */
bool mcp_hold(struct mcp_session *s, struct pending *p, const cJSON *res)
{
	if (mcp_contexts_ready(s) || s->context_injected ||
	    cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")))
		return false;
	p->held = cJSON_Duplicate(res, 1);
	p->next = s->pending;
	s->pending = p;
	if (!s->held_since)
		s->held_since = now_ns();
	return true;
}

void mcp_flush_held(struct mcp_session *s)
{
	s->held_since = 0;
	/* Oldest first: the list is newest first. */
	struct ptrvec held = {0};
	for (struct pending **pp = &s->pending; *pp;) {
		struct pending *p = *pp;
		if (p->held) {
			*pp = p->next;
			pv_push(&held, p);
		} else {
			pp = &p->next;
		}
	}
	for (size_t i = held.n; i-- > 0;) {
		struct pending *p = held.v[i];
		if (!p->cancelled)
			mcp_finish_tool(s, p, p->held);
		mcp_pending_free(p);
	}
	pv_free(&held);
}

static void log_event(struct mcp_session *s, const cJSON *ev)
{
	/* "info" and below are sent once the client asked for a level. */
	if (s->log_level < 0 || s->log_level > 1 || !s->initialized)
		return;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "level", "info");
	cJSON_AddStringToObject(p, "logger", "vaultd");
	cJSON_AddItemToObject(p, "data", cJSON_Duplicate(ev, 1));
	mcp_notify(s, "notifications/message", p);
}

static void resource_updated(struct mcp_session *s, size_t vault,
			     const char *path)
{
	_cleanup_free_ char *uri = mcp_uri_of(s, vault, path);
	if (s->initialized && mcp_uri_in(s->subscribed, uri)) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "uri", uri);
		mcp_notify(s, "notifications/resources/updated", p);
	}
	for (struct listen *l = s->listens; l; l = l->next) {
		if (!mcp_uri_in(l->uris, uri))
			continue;
		cJSON *p = cJSON_CreateObject();
		cJSON *meta = cJSON_AddObjectToObject(p, "_meta");
		cJSON_AddItemToObject(meta, META_SUBID,
				      cJSON_Duplicate(l->id, 1));
		cJSON_AddStringToObject(p, "uri", uri);
		mcp_notify(s, "notifications/resources/updated", p);
	}
}

void mcp_list_changed(struct mcp_session *s)
{
	if (s->initialized)
		mcp_notify(s, "notifications/resources/list_changed", NULL);
	for (struct listen *l = s->listens; l; l = l->next) {
		if (!l->resources)
			continue;
		cJSON *p = cJSON_CreateObject();
		cJSON *meta = cJSON_AddObjectToObject(p, "_meta");
		cJSON_AddItemToObject(meta, META_SUBID,
				      cJSON_Duplicate(l->id, 1));
		mcp_notify(s, "notifications/resources/list_changed", p);
	}
}

static void on_event(struct mcp_session *s, size_t vault, const cJSON *ev)
{
	const char *type =
		cJSON_GetStringValue(cJSON_GetObjectItem(ev, "type"));
	const char *path =
		cJSON_GetStringValue(cJSON_GetObjectItem(ev, "path"));
	const char *old =
		cJSON_GetStringValue(cJSON_GetObjectItem(ev, "old_path"));
	if (!type || !path)
		return;
	log_event(s, ev);
	resource_updated(s, vault, path);
	if (old)
		resource_updated(s, vault, old);
	if (strcmp(type, "changed") != 0)
		mcp_list_changed(s);
}

void mcp_send_progress(struct mcp_session *s, struct pending *p,
		       double progress, double total, const char *msg)
{
	p->last_progress = now_ns();
	cJSON *n = cJSON_CreateObject();
	cJSON_AddItemToObject(n, "progressToken",
			      cJSON_Duplicate(p->progress_token, 1));
	cJSON_AddNumberToObject(n, "progress", progress);
	if (total > 0)
		cJSON_AddNumberToObject(n, "total", total);
	if (!p->modern && p->version <= 2)
		cJSON_AddStringToObject(n, "message", msg);
	mcp_notify(s, "notifications/progress", n);
}

/* vaultd's progress on a call: {"id", "done", "total", "message"}. */
static void on_progress(struct mcp_session *s, const cJSON *params)
{
	const cJSON *id = cJSON_GetObjectItem(params, "id");
	if (!cJSON_IsNumber(id))
		return;
	struct pending *p = s->pending;
	while (p && p->did != (long)id->valuedouble)
		p = p->next;
	if (!p || !p->progress_token || p->cancelled || p->held)
		return;
	double done = cJSON_GetNumberValue(cJSON_GetObjectItem(params, "done"));
	double total =
		cJSON_GetNumberValue(cJSON_GetObjectItem(params, "total"));
	const char *msg =
		cJSON_GetStringValue(cJSON_GetObjectItem(params, "message"));
	p->daemon_progress = true;
	/* Progress must grow with every notification. */
	if (isnan(done) || done <= p->progress_sent)
		return;
	p->progress_sent = done;
	mcp_send_progress(s, p, done, isnan(total) ? 0 : total,
			  msg ? msg : "working");
}

void mcp_session_daemon_msg(struct mcp_session *s, size_t vault,
			    const struct rpc_msg *m)
{
	if (m->method) {
		if (!strcmp(m->method, "event"))
			on_event(s, vault, m->params);
		else if (!strcmp(m->method, "progress"))
			on_progress(s, m->params);
		return;
	}
	if (!cJSON_IsNumber(m->id))
		return;
	struct pending *p =
		mcp_pending_take(s, vault, (long)m->id->valuedouble);
	if (!p)
		return;
	if (p->kind == P_CONTEXT) {
		const char *b = cJSON_GetStringValue(
			cJSON_GetObjectItem(m->result, "block"));
		struct vctx *c = mcp_vctx(s, vault);
		free(c->block);
		c->block = b ? xstrdup(b) : NULL;
		c->ready = true;
		mcp_pending_free(p);
		if (mcp_contexts_ready(s))
			mcp_flush_held(s);
		return;
	}
	if (p->kind == P_JOB) {
		const char *msg = cJSON_GetStringValue(
			cJSON_GetObjectItem(m->error, "message"));
		mcp_job_answer(s, p, m->error ? NULL : m->result,
			       m->error ? (msg ? msg : "vaultd error") : NULL);
		return;
	}
	if (p->kind == P_INTERNAL || p->cancelled) {
		mcp_pending_free(p);
		return;
	}
	if (m->error && p->kind != P_READ && p->kind != P_SUBSCRIBE) {
		const char *msg = cJSON_GetStringValue(
			cJSON_GetObjectItem(m->error, "message"));
		mcp_reply_error(s, p->id, RPC_INTERNAL,
				msg ? msg : "vaultd error", NULL);
		mcp_pending_free(p);
		return;
	}
	switch (p->kind) {
	case P_TOOL:
		if (mcp_hold(s, p, m->result))
			return;
		mcp_finish_tool(s, p, m->result);
		break;
	case P_READ:
		mcp_finish_read(s, p, m->result, m->error);
		break;
	case P_LIST:
		mcp_finish_list(s, p, m->result);
		break;
	case P_COMPLETE:
		mcp_finish_complete(s, p, m->result);
		break;
	case P_SUBSCRIBE:
		mcp_finish_subscribe(s, p, m->error);
		break;
	default:
		break;
	}
	mcp_pending_free(p);
}

void mcp_session_daemon_lost(struct mcp_session *s, size_t vault,
			     const char *why)
{
	_cleanup_free_ char *m =
		why ? xasprintf("vault %s: %s; try again", mcp_vname(s, vault),
				why)
		    : xstrdup("vaultd stopped while answering; try again");
	struct ptrvec lost = {0};
	for (struct pending **pp = &s->pending; *pp;) {
		struct pending *p = *pp;
		if (p->vault != vault || p->held) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		p->next = NULL;
		pv_push(&lost, p);
	}
	/* Oldest first, as they were asked. */
	for (size_t i = lost.n; i-- > 0;) {
		struct pending *p = lost.v[i];
		if (p->kind == P_JOB) {
			mcp_job_answer(s, p, NULL, m);
			continue;
		}
		if (p->id && !p->cancelled)
			mcp_reply_error(s, p->id, RPC_INTERNAL, m, NULL);
		if (p->kind == P_CONTEXT)
			mcp_vctx(s, vault)->ready = true; /* go on without it */
		mcp_pending_free(p);
	}
	pv_free(&lost);
	if (mcp_contexts_ready(s))
		mcp_flush_held(s);
}
