/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket: JSON-RPC 2.0, one message per line, for vault-mcp,
 * vaultctl and tests. One thread multiplexes every connection and
 * answers ping, status and tools/list itself; a pool of workers runs the
 * rest, so reads run side by side and a slow or dead client never holds
 * anyone else up:
 *  - two lanes: quick calls (reads of a note, the session context, tools
 *    flagged TOOL_QUICK) may use every worker, slow ones (searches,
 *    writes, renames, history, check) all but QUICK_RESERVE of them, so a
 *    new session is answered whatever runs;
 *  - the notification {"method":"cancel","params":{"id":ID}} cancels the
 *    caller's request ID (queued: answered at once with code -32800;
 *    running: it stops at its next check, before it writes anything);
 *    a client that disconnects cancels its requests, and so does a stop;
 *  - connections are capped per peer process and in total, below the
 *    descriptor limit, so that the mount always has descriptors left.
 *
 * Methods: ping, status, tools/list, tools/call, context, check, graph,
 * notes/list, notes/read, notes/complete, shutdown, subscribe (then
 * "event" notifications for every note created/changed/renamed/deleted).
 */
#pragma once

#include "vault.h"

struct ctl_server;

struct ctl_config {
	const char *socket_path;
	size_t max_line;  /* longest accepted message, bytes */
	size_t max_queue; /* output buffered per client before dropping it */
	int workers;
	unsigned max_clients;  /* connections in total (0: the default) */
	unsigned max_per_peer; /* connections of one process (0: default) */
	/* Stop after this many seconds with no client and no call
	 * (0: never). */
	unsigned idle_exit_s;
};

/* Bind and listen (the socket is usable when this returns). */
int ctl_server_new(struct vault *v, const struct ctl_config *cfg,
		   struct ctl_server **ret, char **ret_msg);
/* Serve until ctl_server_stop() or SIGTERM/SIGINT. */
int ctl_server_run(struct ctl_server *s);
void ctl_server_stop(struct ctl_server *s);
struct ctl_server *ctl_server_free(struct ctl_server *s);

/* The index is complete: tool calls waiting for it may go on. */
void ctl_server_index_ready(struct ctl_server *s);
/* Its notes are in place, not yet its links (vault_on_names()): calls
 * that read no link may go on. */
void ctl_server_names_ready(struct ctl_server *s);
/* Extra fields for `status` (e.g. the mount point). */
void ctl_server_set_mount(struct ctl_server *s, const char *mountpoint);
