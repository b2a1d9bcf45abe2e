/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Changes made directly in the vault folder (sync tools, git pull, an
 * editor outside the mount): seen through inotify, re-indexed, recorded
 * when they break the policy (they cannot be refused), and pushed to the
 * mount's kernel cache. Edits of .vaultd/policy.yaml reload the policy.
 */
#pragma once

#include "fuse_ops.h"
#include "vault.h"

struct watcher;

int watch_start(struct vault *v, struct watcher **ret, char **ret_msg);
/* Events are handled once the index is complete (queued until then). */
void watch_ready(struct watcher *w, struct mount *m);
struct watcher *watch_stop(struct watcher *w);
