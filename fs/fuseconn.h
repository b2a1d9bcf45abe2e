/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel side of a FUSE mount, seen from outside the mount: where it
 * is in /proc/self/mountinfo, how to abort its connection and detach it
 * without a single request to the (maybe dead) daemon, and a reaper
 * process that does both when vaultd dies.
 *
 * Why a reaper: a daemon killed while one of its threads waits in the
 * kernel on a lock held by an unanswered request (a cache invalidation
 * waiting for a directory lock held by an in-flight rename) never fully
 * exits, so /dev/fuse is never closed and every process touching the mount
 * hangs. Only an abort of the connection from another process ends that.
 * Nothing here sends a request to the mount (stat() would hang on it).
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct fuseconn {
	int mnt_id;   /* the mount's id (fdinfo's mnt_id) */
	unsigned dev; /* the connection: /sys/fs/fuse/connections/<dev> */
};

/*
 * The topmost mount at mountpoint (a real path) of type fstype ("fuse.x")
 * whose source is source (NULL: any). 0, or -ENOENT when there is none.
 */
int fuseconn_find(const char *mountpoint, const char *fstype,
		  const char *source, struct fuseconn *ret);

/* Abort the connection: every waiting request fails at once. */
int fuseconn_abort(unsigned dev);

/* Detach the topmost mount at mountpoint (lazily, like umount -l). */
int fuseconn_detach(const char *mountpoint);

/*
 * Detach every mount of fstype with this source stacked at mountpoint,
 * aborting its connection first. Only for mounts nobody serves (the
 * caller holds the lock that makes it the vault's one daemon). Returns
 * how many went.
 */
int fuseconn_clean_stale(const char *mountpoint, const char *fstype,
			 const char *source);

/*
 * The reaper: a small process started before any thread that, once
 * vaultd is gone (killed, crashed) while a mount is armed, aborts its
 * connection and detaches it. Disarm before an orderly unmount ends.
 */
int reaper_start(void);
void reaper_arm(unsigned dev, const char *mountpoint);
void reaper_disarm(void);
