/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One MCP session over stdio: the protocol (both eras: the initialize
 * handshake of 2024-11-05 .. 2025-11-25 and the stateless 2026-07-28
 * revision), auto-context, result shaping, resources, prompts,
 * completion, logging, progress and cancellation. Every vault question
 * goes to vaultd; there is no vault logic here.
 *
 * Several vaults: each request goes to one vault's vaultd (a tool's
 * `vault` argument, taken off before it is sent; a resource URI's
 * authority); list_vaults, load_vault, copy_note and move_note are
 * answered here, from what the vaults' daemons answer.
 */
#pragma once

#include "rpc.h"
#include "vault_set.h"

#include <stdbool.h>
#include <stddef.h>

struct mcp_session;

struct mcp_config {
	bool read_only;		  /* list and allow only read-only tools */
	size_t max_result;	  /* longest tool result text, bytes */
	cJSON *tools;		  /* the daemon's tools/list (taken) */
	struct vault_set *vaults; /* borrowed; 0 is the default */
	const char *only;	  /* --tools as a comma list, or NULL */
};

struct mcp_io {
	/* Write one message line to stdout (takes the string). */
	void (*out)(void *ud, char *line);
	/* Send a request to a vault's vaultd (params taken); returns its
	 * id (unique over every vault), or < 0. */
	long (*daemon_send)(void *ud, size_t vault, const char *method,
			    cJSON *params);
	/* Tell vaultd to stop working on a request sent earlier. */
	void (*daemon_cancel)(void *ud, size_t vault, long id);
	void *ud;
};

struct mcp_session *mcp_session_new(const struct mcp_config *cfg,
				    const struct mcp_io *io);
struct mcp_session *mcp_session_free(struct mcp_session *s);

/* A line from stdin. */
void mcp_session_input(struct mcp_session *s, const char *line, size_t len);
/* A message from a vault's vaultd (response or event). */
void mcp_session_daemon_msg(struct mcp_session *s, size_t vault,
			    const struct rpc_msg *m);
/* A vault's vaultd went away, or could not be reached (why, or NULL):
 * fail what is waiting for it. */
void mcp_session_daemon_lost(struct mcp_session *s, size_t vault,
			     const char *why);
/* Call about every 250 ms: progress notifications. */
void mcp_session_tick(struct mcp_session *s);
/* stdin ended or "exit" arrived. */
void mcp_session_shutdown(struct mcp_session *s);
/* True once stdin ended or "exit" arrived. */
bool mcp_session_shutting_down(const struct mcp_session *s);
/* True once shut down and nothing is left to answer. */
bool mcp_session_done(const struct mcp_session *s);
/* Requests still waiting for vaultd. */
size_t mcp_session_pending(const struct mcp_session *s);
/* Send the startup requests (context, subscribe) to a vault's vaultd. */
void mcp_session_start(struct mcp_session *s, size_t vault);
/* One of the tools answered here rather than by vaultd. */
bool mcp_vault_tool(const char *name);
