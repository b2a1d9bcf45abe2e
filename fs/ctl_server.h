/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket: JSON-RPC 2.0, one message per line, for vault-mcp,
 * vaultctl and tests. One thread multiplexes every connection; a pool of
 * workers runs tool calls, so reads run side by side and a slow or dead
 * client never holds anyone else up.
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
/* Extra fields for `status` (e.g. the mount point). */
void ctl_server_set_mount(struct ctl_server *s, const char *mountpoint);
