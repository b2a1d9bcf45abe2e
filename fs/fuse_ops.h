/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guarded FUSE view of the vault (libfuse 3 low-level API, modelled on
 * libfuse's example/passthrough_ll.c): every file passes through, except
 * that a note opened for writing gets a private shadow copy, which the
 * vault's guard judges when it is flushed, synced or released.
 */
#pragma once

#include "vault.h"

struct mount;

struct mount_config {
	const char *mountpoint;
	unsigned grace_ms; /* a note gone this long is deleted, not saved */
	bool allow_other;  /* -o allow_other (needs user_allow_other) */
	int max_threads;
};

/* Clean up a stale mount (ENOTCONN), then mount. */
int mount_start(struct vault *v, const struct mount_config *cfg,
		struct mount **ret, char **ret_msg);
/* Unmount and wait for the FUSE threads. */
struct mount *mount_stop(struct mount *m);

/* A change made outside vaultd (inotify): drop the kernel's caches of it. */
void mount_external_change(struct mount *m, const char *path);
/* True while the mount itself owns the path (an open shadow copy, or a
 * note waiting out its grace period): the watcher leaves it alone. */
bool mount_owns(struct mount *m, const char *path);
