/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the files of one MCP session share, and nothing outside mcp/
 * sees: the session's struct, its requests waiting for a vaultd
 * (struct pending), the multi-vault tools' jobs, and the functions one
 * concern calls in another. mcp_session.c holds the lifecycle, output
 * and dispatch; mcp_tools.c tools/list and tools/call; mcp_vaults.c the
 * tools answered here for several vaults; mcp_resources.c resources and
 * subscriptions; mcp_prompts.c prompts and completion; mcp_daemon.c
 * what vaultd sends back (answers, events, progress).
 */
#pragma once

#include "config.h"
#include "mcp_session.h"
#include "json.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVER_NAME "vault-mcp"
#define SERVER_TITLE "vaultd: guarded Obsidian vault"
#define MODERN_VERSION "2026-07-28"
#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_SERVER "io.modelcontextprotocol/serverInfo"
#define META_SUBID "io.modelcontextprotocol/subscriptionId"
#define META_LOGLEVEL "io.modelcontextprotocol/logLevel"
#define URI_PREFIX "vault:///"
#define URI_SCHEME "vault://"
#define MULTI_TEMPLATE URI_SCHEME "{vault}/{+path}"
#define CONTEXT_MAX 24576    /* bytes of the auto-context of all vaults */
#define CONTEXT_WAIT_MS 2000 /* several vaults: the longest wait for it */
#define LIST_WAIT_MS 1000    /* list_vaults: the longest wait for a vault */
#define RESOURCE_PAGE 100
#define LIST_TTL_MS 60000

enum pkind {
	P_TOOL,
	P_READ,
	P_LIST,
	P_COMPLETE,
	P_SUBSCRIBE,
	P_CONTEXT,
	P_INTERNAL,
	P_JOB, /* one step of a tool answered here (struct job) */
};

struct job;

struct pending {
	struct pending *next;
	size_t vault; /* whose vaultd answers */
	long did;     /* vaultd request id */
	struct job *job;
	int step;
	enum pkind kind;
	cJSON *id; /* the client's request id */
	bool modern;
	int version; /* legacy version rank (index into LEGACY) */
	bool cancelled;
	cJSON *progress_token;
	uint64_t started, last_progress;
	double progress_sent; /* the last progress value sent */
	bool daemon_progress; /* vaultd reports this call's progress */
	char *name;	      /* tool name or resource uri */
	long offset;	      /* list page, or a tool call's offset */
	cJSON *held;	      /* a tool result waiting for the context block */
};

struct listen {
	struct listen *next;
	cJSON *id;
	bool tools, resources;
	cJSON *uris; /* resourceSubscriptions */
};

struct mcp_session {
	struct mcp_config cfg;
	struct mcp_io io;
	bool initialized; /* legacy: initialize answered */
	int version;	  /* legacy: negotiated, index into LEGACY */
	int log_level;	  /* -1: no log notifications */
	bool shutting_down;
	bool multi; /* several vaults: names in URIs, results, context */
	/* auto-context: one block per vault */
	struct vctx {
		char *block;
		bool asked, ready;
	} * ctx;
	size_t nctx;
	uint64_t held_since; /* a result waits for the context */
	bool context_injected;
	struct pending *pending;
	cJSON *subscribed; /* legacy resources/subscribe: uri strings */
	struct listen *listens;
	/* JSON-RPC batches (a 2025-03-26 session): their answers are
	 * gathered and sent as one array once all are in. */
	struct batch *batches;
	struct batch *cur_batch; /* being read: takes id-less errors */
	/* This session's id: vaultd records it with every change made
	 * here, for list_changes and undo_changes. */
	char id[17];
	char *instructions;
};

enum jkind { J_LIST, J_LOAD, J_COPY };

enum jstep {
	JS_STATUS,
	JS_COUNT,
	JS_CONTEXT,
	JS_META,
	JS_READ,
	JS_CREATE,
	JS_DELETE,
};

/* A tool answered here, in steps, each a request to some vaultd. */
struct job {
	enum jkind kind;
	char *tool;
	cJSON *id; /* the client's request */
	bool modern;
	int version;
	int out;       /* requests sent, not answered */
	bool finished; /* answered (or cancelled): the rest is dropped */
	cJSON *result; /* what it answers */
	char *extra;   /* text after the result (a vault's context) */
	size_t src, dst;
	bool move, overwrite;
	char *name, *new_name, *path, *version_tag;
};

/* mcp_session.c */
void mcp_out(struct mcp_session *s, char *line);
void mcp_reply(struct mcp_session *s, const cJSON *id, cJSON *r, bool modern,
	       bool cacheable);
void mcp_reply_error(struct mcp_session *s, const cJSON *id, int code,
		     const char *msg, cJSON *data);
void mcp_notify(struct mcp_session *s, const char *method, cJSON *params);
struct pending *mcp_pending_add(struct mcp_session *s, size_t vault, long did,
				enum pkind kind, const cJSON *id, bool modern);
void mcp_pending_free(struct pending *p);
struct pending *mcp_pending_take(struct mcp_session *s, size_t vault, long did);
long mcp_to_daemon(struct mcp_session *s, size_t vault, const char *method,
		   cJSON *params);
struct vctx *mcp_vctx(struct mcp_session *s, size_t vault);
bool mcp_contexts_ready(const struct mcp_session *s);
const char *mcp_vname(const struct mcp_session *s, size_t vault);

/* mcp_tools.c */
bool mcp_has_structured(bool modern, int version);
void mcp_handle_tools_list(struct mcp_session *s, const cJSON *id,
			   const cJSON *params, bool modern);
void mcp_block_cut(struct sbuf *b, const char *block, size_t max);
void mcp_finish_tool(struct mcp_session *s, struct pending *p,
		     const cJSON *dres);
void mcp_handle_tools_call(struct mcp_session *s, const cJSON *id,
			   const cJSON *params, bool modern);

/* mcp_vaults.c */
void mcp_add_vault_tools(struct mcp_session *s);
void mcp_help_add_vault_tools(char **text, cJSON *structured);
void mcp_job_free(struct job *j);
void mcp_job_reply(struct mcp_session *s, struct job *j, const char *err);
void mcp_job_answer(struct mcp_session *s, struct pending *p, const cJSON *res,
		    const char *err);
void mcp_list_vaults(struct mcp_session *s, struct job *j);
void mcp_local_tool(struct mcp_session *s, const cJSON *id, bool modern,
		    const char *name, cJSON *args, size_t vault);

/* mcp_resources.c */
char *mcp_uri_of(const struct mcp_session *s, size_t vault, const char *path);
void mcp_handle_resources_list(struct mcp_session *s, const cJSON *id,
			       const cJSON *params, bool modern);
void mcp_finish_list(struct mcp_session *s, struct pending *p,
		     const cJSON *dres);
void mcp_handle_resources_read(struct mcp_session *s, const cJSON *id,
			       const cJSON *params, bool modern);
void mcp_finish_subscribe(struct mcp_session *s, struct pending *p,
			  const cJSON *derr);
void mcp_finish_read(struct mcp_session *s, struct pending *p,
		     const cJSON *dres, const cJSON *derr);
void mcp_handle_templates(struct mcp_session *s, const cJSON *id, bool modern);
bool mcp_uri_in(const cJSON *list, const char *uri);
void mcp_handle_subscribe(struct mcp_session *s, const cJSON *id,
			  const cJSON *params, bool sub);

/* mcp_prompts.c */
void mcp_handle_prompts_list(struct mcp_session *s, const cJSON *id,
			     bool modern);
void mcp_handle_prompts_get(struct mcp_session *s, const cJSON *id,
			    const cJSON *params, bool modern);
void mcp_handle_complete(struct mcp_session *s, const cJSON *id,
			 const cJSON *params, bool modern);
void mcp_finish_complete(struct mcp_session *s, struct pending *p,
			 const cJSON *dres);

/* mcp_daemon.c */
bool mcp_hold(struct mcp_session *s, struct pending *p, const cJSON *res);
void mcp_flush_held(struct mcp_session *s);
void mcp_list_changed(struct mcp_session *s);
void mcp_send_progress(struct mcp_session *s, struct pending *p,
		       double progress, double total, const char *msg);
