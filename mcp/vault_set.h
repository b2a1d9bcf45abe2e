/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vaults one vault-mcp serves. Each has a short unique name (its
 * folder's, made unique), its folder, whether it is read-only, and its
 * own connection to its own vaultd. The first is the default.
 *
 * Connecting (and starting a vaultd when none runs) happens on a thread
 * per vault, so a vault whose daemon is slow to come never holds up
 * another; what is sent to it meanwhile waits in its queue. Request ids
 * are unique across vaults.
 *
 * A vault joins the set from the configuration or, through load_vault,
 * only from under a folder the user allowed (--allow-root): never from
 * an arbitrary path a client typed.
 */
#pragma once

#include "ctl_client.h"

#include <stdbool.h>
#include <stddef.h>

#define VSET_MAX 64	 /* vaults in one set */
#define VSET_NAME_MAX 32 /* bytes of a vault's name */

struct vault_set;

struct vset_config {
	const char *socket;    /* a single vault's socket, if not the default */
	const char *idle_exit; /* --idle-exit of the vaultds started */
	bool create;	       /* let them make a folder a vault */
};

struct vault_set *vset_new(const struct vset_config *cfg);
struct vault_set *vset_free(struct vault_set *vs);

/*
 * A configured vault (a folder that is missing is kept as given: its
 * vaultd says what is wrong). Returns its index (the existing one for a
 * folder already there), or -errno with *ret_msg.
 */
int vset_add(struct vault_set *vs, const char *path, bool read_only,
	     char **ret_msg);
/* A folder under which load_vault may load vaults. */
int vset_add_root(struct vault_set *vs, const char *dir, char **ret_msg);
/*
 * load_vault: path must be absolute, a folder with .obsidian/ in it,
 * under an allowed root (or a configured vault). Named name if given
 * (checked), else after its folder. Returns its index (the existing one
 * when it is loaded already), or -errno with *ret_msg.
 */
int vset_load(struct vault_set *vs, const char *path, const char *name,
	      char **ret_msg);

size_t vset_count(const struct vault_set *vs);
/* Several vaults, or vaults that may be loaded: tools take `vault`. */
bool vset_multi(const struct vault_set *vs);
const char *vset_name(const struct vault_set *vs, size_t i);
const char *vset_path(const struct vault_set *vs, size_t i);
bool vset_read_only(const struct vault_set *vs, size_t i);
bool vset_connected(const struct vault_set *vs, size_t i);
/* A vault by name (any case) or by folder; -1 when none. */
int vset_find(const struct vault_set *vs, const char *name);
/* "a, b, c": every name, for messages (bounded). */
char *vset_names(const struct vault_set *vs);

/* Vault i's connection (NULL when not connected), for a call made
 * before the session starts. */
struct ctl_client *vset_client(const struct vault_set *vs, size_t i);
/* Connect now, waiting; starts vaultd when autostart. */
int vset_connect(struct vault_set *vs, size_t i, bool autostart);
/* Start connecting on a thread unless connected or connecting. */
void vset_start(struct vault_set *vs, size_t i);
/* Send a request (params taken): its id (> 0), or -errno. A vault not
 * connected keeps it until it is, and starts connecting. */
long vset_send(struct vault_set *vs, size_t i, const char *method,
	       cJSON *params);
/* The same for a notification (no answer). */
void vset_notify(struct vault_set *vs, size_t i, const char *method,
		 cJSON *params);

/* Readable when a connect finished: then call vset_collect(). */
int vset_wake_fd(const struct vault_set *vs);
/* Vault i's connection, or -1. */
int vset_fd(const struct vault_set *vs, size_t i);
/* Read vault i's messages; < 0: the connection is lost (and closed). */
int vset_pump(struct vault_set *vs, size_t i, ctl_msg_fn fn, void *ud);

/* fn(ud, i, r, msg) for each connect that finished: r == 0, connected
 * (its queue is sent after fn); r < 0, failed (its queue is dropped). */
typedef void (*vset_done_fn)(void *ud, size_t i, int r, const char *msg);
void vset_collect(struct vault_set *vs, vset_done_fn fn, void *ud);
