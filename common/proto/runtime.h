/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a vault's daemon lives: its id (from the vault's real path), the
 * runtime folder holding sockets (0700, owned by us), the cache
 * folder for indexes, and whether a folder can be its mount point.
 */
#pragma once

#include <stdbool.h>

/* "<folder name>-<16 hex digits of a hash of the real path>". */
char *vault_id(const char *real_path);

/*
 * $XDG_RUNTIME_DIR/vaultd, else /run/user/<uid>/vaultd, else
 * /tmp/vaultd-<uid>; created 0700 and checked to be ours.
 */
int runtime_dir(char **ret, const char **ret_msg);

/* <runtime_dir>/<vault-id>.sock for the vault at path (any spelling). */
int socket_path_for(const char *vault_path, char **ret, const char **ret_msg);

/* $XDG_CACHE_HOME/vaultd/<vault-id> (or ~/.cache/...), created 0700. */
int cache_dir_for(const char *real_path, char **ret, const char **ret_msg);

/*
 * Whether mountpoint can take the vault at vault_root (a real path): an
 * empty folder outside the vault, the vault not inside it. A dead mount
 * there (ENOTCONN, left by a killed vaultd) passes: vaultd removes it
 * when it mounts. On refusal *ret_msg says why and how to fix it.
 */
int mount_point_check(const char *vault_root, const char *mountpoint,
		      char **ret_msg);
