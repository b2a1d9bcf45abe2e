/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A client of vaultd's control socket (JSON-RPC lines). */
#pragma once

#include "rpc.h"

struct ctl_client;

/* Connect; -ENOENT/-ECONNREFUSED mean no daemon is listening there. */
int ctl_connect(const char *socket_path, struct ctl_client **ret);
struct ctl_client *ctl_close(struct ctl_client *c);
int ctl_fd(const struct ctl_client *c);

/* Send a request (params taken); returns its id (> 0) or -errno. */
long ctl_send(struct ctl_client *c, const char *method, cJSON *params);
/* The same with the caller's id (> 0), for a caller that keeps one id
 * space over several connections; 0 or -errno. */
int ctl_send_id(struct ctl_client *c, long id, const char *method,
		cJSON *params);
/* Send a notification (no answer), taking params; 0 or -errno. */
int ctl_notify(struct ctl_client *c, const char *method, cJSON *params);

typedef void (*ctl_msg_fn)(struct rpc_msg *m, void *ud);
/* Read what has arrived and hand each message to fn (which must not keep
 * it). Blocks only if `block`. Returns 0, or -EPIPE when the daemon hung
 * up, or -EPROTO on a message that is not JSON-RPC. */
int ctl_pump(struct ctl_client *c, bool block, ctl_msg_fn fn, void *ud);

/*
 * Send and wait for the answer. Notifications arriving meanwhile go to
 * fn (may be NULL). Returns 0 with *ret_result, or the JSON-RPC error
 * code (< 0) with *ret_msg, or -EPIPE.
 */
int ctl_call(struct ctl_client *c, const char *method, cJSON *params,
	     ctl_msg_fn fn, void *ud, cJSON **ret_result, char **ret_msg);
