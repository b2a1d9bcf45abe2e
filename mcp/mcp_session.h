/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One MCP session over stdio: the protocol (both eras: the initialize
 * handshake of 2024-11-05 .. 2025-11-25 and the stateless 2026-07-28
 * revision), auto-context, result shaping, resources, prompts,
 * completion, logging, progress and cancellation. Every vault question
 * goes to vaultd; there is no vault logic here.
 */
#pragma once

#include "rpc.h"

#include <stdbool.h>
#include <stddef.h>

struct mcp_session;

struct mcp_config {
	bool read_only;	   /* list and allow only read-only tools */
	size_t max_result; /* longest tool result text, bytes */
	cJSON *tools;	   /* the daemon's tools/list (taken) */
	const char *vault; /* shown in instructions */
};

struct mcp_io {
	/* Write one message line to stdout (takes the string). */
	void (*out)(void *ud, char *line);
	/* Send a request to vaultd; returns its id, or < 0. */
	long (*daemon_send)(void *ud, const char *method, cJSON *params);
	/* Tell vaultd to stop working on a request sent earlier. */
	void (*daemon_cancel)(void *ud, long id);
	void *ud;
};

struct mcp_session *mcp_session_new(const struct mcp_config *cfg,
				    const struct mcp_io *io);
struct mcp_session *mcp_session_free(struct mcp_session *s);

/* A line from stdin. */
void mcp_session_input(struct mcp_session *s, const char *line, size_t len);
/* A message from vaultd (response or event). */
void mcp_session_daemon_msg(struct mcp_session *s, const struct rpc_msg *m);
/* vaultd went away: fail what is waiting for it. */
void mcp_session_daemon_lost(struct mcp_session *s);
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
/* Send the startup requests (context, subscribe) to vaultd. */
void mcp_session_start(struct mcp_session *s);
